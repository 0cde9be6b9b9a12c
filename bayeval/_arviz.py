"""The package's one gateway to ArviZ, every probability and option explicit.

Every call into ArviZ goes through here, so a change of ArviZ defaults touches one file.
"""

from __future__ import annotations

import arviz_stats
import numpy as np
import xarray as xr


def _finite(ds: xr.Dataset) -> np.ndarray:
    """Every finite value of a Dataset (r-hat of a single chain, for one, is all NaN)."""
    arrays = [np.ravel(v.values) for v in ds.data_vars.values()]
    values = np.concatenate(arrays) if arrays else np.empty(0)
    return values[np.isfinite(values)]


def _max(ds: xr.Dataset) -> float:
    values = _finite(ds)
    return float(values.max()) if values.size else float("nan")


def _min(ds: xr.Dataset) -> float:
    values = _finite(ds)
    return float(values.min()) if values.size else float("nan")


def _where(ds: xr.Dataset, value: float) -> str | None:
    """The first parameter of ``ds`` (``name`` or ``name[label, ...]``) at ``value``."""
    for name, array in ds.data_vars.items():
        hits = np.argwhere(np.asarray(array.values) == value)
        if len(hits):
            labels = [
                str(array[dim].values[i]) if dim in array.coords else str(i)
                for dim, i in zip(array.dims, hits[0], strict=True)
            ]
            return f"{name}[{', '.join(labels)}]" if labels else str(name)
    return None


def convergence(posterior: xr.Dataset, sample_stats: xr.Dataset | None) -> dict:
    """Worst r-hat, bulk and tail ESS over all variables, divergences and the lowest BFMI.

    Each worst r-hat and ESS comes with the parameter that has it, as ``*_parameter``.
    """
    rhat = arviz_stats.rhat(posterior, sample_dims=["chain", "draw"], method="rank")
    ess = {
        kind: arviz_stats.ess(posterior, sample_dims=["chain", "draw"], method=kind)
        for kind in ("bulk", "tail")
    }
    worst = {
        "max_rhat": _max(rhat),
        "min_ess_bulk": _min(ess["bulk"]),
        "min_ess_tail": _min(ess["tail"]),
    }
    out: dict[str, float | int | str] = dict(worst)
    for key, ds in (
        ("max_rhat", rhat),
        ("min_ess_bulk", ess["bulk"]),
        ("min_ess_tail", ess["tail"]),
    ):
        where = _where(ds, worst[key])
        if where is not None:
            out[f"{key}_parameter"] = where
    if sample_stats is not None and "diverging" in sample_stats:
        out["divergences"] = int(sample_stats["diverging"].sum())
    if sample_stats is not None and "energy" in sample_stats:
        bfmi = arviz_stats.bfmi(sample_stats[["energy"]], sample_dims=["chain", "draw"])
        out["min_bfmi"] = _min(bfmi)
    return out


def mcse_and_ess(values: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray]:
    """Monte Carlo standard error of the mean and bulk ESS of derived draws over ``(chain, draw)``.

    The derived draws are e.g. pass@k or an effect; computed by ``arviz_stats``; NaN where the draws
    do not vary.
    """
    ds = values.rename("value").to_dataset()
    with np.errstate(invalid="ignore", divide="ignore"):
        mcse = arviz_stats.mcse(ds, sample_dims=["chain", "draw"], method="mean")["value"]
        ess = arviz_stats.ess(ds, sample_dims=["chain", "draw"], method="bulk")["value"]
    return mcse, ess
