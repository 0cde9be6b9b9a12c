"""Every call into ArviZ goes through here, with every probability and option explicit, so a
change of ArviZ defaults touches one file."""

from __future__ import annotations

import arviz_stats
import numpy as np
import xarray as xr


def _max(ds: xr.Dataset) -> float:
    values = [np.nanmax(v.values) for v in ds.data_vars.values() if v.size]
    return float(max(values)) if values else float("nan")


def _min(ds: xr.Dataset) -> float:
    values = [np.nanmin(v.values) for v in ds.data_vars.values() if v.size]
    return float(min(values)) if values else float("nan")


def convergence(posterior: xr.Dataset, sample_stats: xr.Dataset | None) -> dict:
    """Worst r-hat, bulk and tail ESS over all variables, divergences and the lowest BFMI."""
    out = {
        "max_rhat": _max(arviz_stats.rhat(posterior, sample_dims=["chain", "draw"],
                                          method="rank")),
        "min_ess_bulk": _min(arviz_stats.ess(posterior, sample_dims=["chain", "draw"],
                                             method="bulk")),
        "min_ess_tail": _min(arviz_stats.ess(posterior, sample_dims=["chain", "draw"],
                                             method="tail")),
    }
    if sample_stats is not None and "diverging" in sample_stats:
        out["divergences"] = int(sample_stats["diverging"].sum())
    if sample_stats is not None and "energy" in sample_stats:
        bfmi = arviz_stats.bfmi(sample_stats[["energy"]], sample_dims=["chain", "draw"])
        out["min_bfmi"] = _min(bfmi)
    return out
