"""Per-attempt covariates (cost, tokens) summarised per ``(system, task, status)`` cell.

Each covariate is kept as sufficient statistics (count, sum, sum of squares, and over the
positive values the sums of logs and squared logs), so that the cost of a timed-out or failed
attempt stays under its status.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values
from bayeval.data.columns import _check_columns
from bayeval.data.values import _column_values, _real_values, _refuse_non_numbers

_COVARIATE_VARS = (
    "covariate_count",
    "covariate_sum",
    "covariate_sumsq",
    "covariate_positive",
    "covariate_logsum",
    "covariate_logsumsq",
)


def _covariate_names(df: pd.DataFrame, covariates, count_rows: bool) -> list:
    """The covariate column names, checked: a list of distinct existing columns."""
    if covariates is None:
        return []
    if isinstance(covariates, str):
        covariates = [covariates]
    if not isinstance(covariates, (list, tuple)):
        raise TypeError(
            f"covariates= must be a list of column names (str); got {type(covariates).__name__}"
        )
    covariates = list(covariates)
    if count_rows and covariates:
        raise TypeError(
            "covariates= applies to outcome rows (success=), one row per attempt; "
            "count rows (successes=, trials=) carry no per-attempt values"
        )
    duplicated = sorted({c for c in covariates if covariates.count(c) > 1}, key=str)
    if duplicated:
        raise ValueError(f"covariates= names {describe_values(duplicated)} more than once")
    _check_columns(df, {f"covariates[{i}]": c for i, c in enumerate(covariates)})
    return covariates


def _covariate_stats(df: pd.DataFrame, covariates: list, slot: np.ndarray, shape) -> dict:
    """Per ``(covariate, system, task, status)`` sufficient statistics of each covariate.

    ``slot`` is each row's flat ``(system, task, status)`` index. Values must be finite,
    non-negative, recorded numbers; nothing is coerced.
    """
    size = int(np.prod(shape))
    out = {name: np.zeros((len(covariates),) + tuple(shape)) for name in _COVARIATE_VARS}
    for i, column in enumerate(covariates):
        series = df[column]
        raw = _column_values(series)
        if raw.dtype.kind not in "biufO":
            raw = series.to_numpy(dtype=object)
        values, wrong, is_bool = _real_values(raw)
        where = f"covariate column {column!r}"
        allowed = "finite, non-negative numbers, one per attempt (row)"
        _refuse_non_numbers(
            where,
            series,
            raw,
            wrong,
            is_bool,
            df.index,
            allowed,
            " (give 0/1 as numbers if that is meant)",
        )
        missing = np.isnan(values)
        if missing.any():
            raise ValueError(
                f"{where} has empty cells in {describe_rows(df.index[missing])}; "
                f"it must hold {allowed}: an unrecorded value is not a zero, so "
                "fill it explicitly or drop those rows"
            )
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            raise ValueError(
                f"{where} must hold {allowed}; found "
                f"{describe_values(values[bad])} in {describe_rows(df.index[bad])}"
            )
        positive = values > 0
        logs = np.log(np.where(positive, values, 1.0))
        for name, weights in (
            ("covariate_count", np.ones_like(values)),
            ("covariate_sum", values),
            ("covariate_sumsq", values**2),
            ("covariate_positive", positive.astype(float)),
            ("covariate_logsum", logs),
            ("covariate_logsumsq", logs**2),
        ):
            out[name][i] = np.bincount(slot, weights=weights, minlength=size).reshape(shape)
    for name in ("covariate_count", "covariate_positive"):
        out[name] = np.rint(out[name]).astype(np.int64)
    dims = ("covariate", "system", "task", "status")
    return {name: (dims, values) for name, values in out.items()}
