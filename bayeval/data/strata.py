"""Task-level labels: one cluster or stratum per task, and the strata's declared weights."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd

from bayeval.data.columns import _check_not_missing


def _task_attribute(df, column, task, task_codes, n_task) -> np.ndarray:
    _check_not_missing(df, column)
    pairs = pd.DataFrame({"code": task_codes, "value": df[column].to_numpy()})
    distinct = pairs.drop_duplicates()
    if len(distinct) != n_task:
        clash = distinct["code"].duplicated(keep=False).to_numpy()
        example = distinct[clash].groupby("code")["value"].apply(list).head(3)
        labels = pd.factorize(df[task], sort=False)[1]
        listed = "; ".join(f"{labels[code]!r}: {vals}" for code, vals in example.items())
        raise ValueError(
            f"column {column!r} must give each task one value, but "
            f"{distinct.loc[clash, 'code'].nunique()} task(s) have several ({listed})"
        )
    values = np.empty(n_task, dtype=object)
    values[distinct["code"].to_numpy()] = distinct["value"].to_numpy()
    return values


def _stratum_weights(strata, declared) -> str:
    """Normalised stratum weights as JSON (netCDF attributes hold strings, not dicts)."""
    if strata is None:
        if declared is not None:
            raise TypeError("stratum_weights= needs a stratum column (stratum=/strata=)")
        return "null"
    sizes = pd.Series(strata).value_counts(sort=False)
    labels = [lab.item() if isinstance(lab, np.generic) else lab for lab in sizes.index]
    sizes = sizes.to_numpy(dtype=float)
    if declared is None:
        weights = dict(zip(labels, sizes / sizes.sum(), strict=True))
    else:
        if not isinstance(declared, Mapping):
            raise TypeError("stratum_weights must be a mapping of stratum -> weight")
        missing = [s for s in labels if s not in declared]
        extra = [s for s in declared if s not in labels]
        if missing or extra:
            raise ValueError(
                f"stratum_weights must give a weight to each stratum {labels}; "
                f"missing {missing}, unknown {extra}"
            )
        values = np.array([declared[s] for s in labels], dtype=float)
        if (values <= 0).any() or not np.isfinite(values).all():
            raise ValueError(f"stratum_weights must be positive; got {dict(declared)}")
        weights = dict(zip(labels, values / values.sum(), strict=True))
    return json.dumps([[k, float(w)] for k, w in weights.items()])
