"""Partial-credit scores (``from_frame(..., score=)``): the column checked, per-cell statistics."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values
from bayeval.data.values import _column_values, _inexact, _real_values, _wrong_type

__all__ = ["SCORE_VARS"]


#: Per ``(system, task)`` sufficient statistics of the ``ok`` attempts' scores (``score=``).
SCORE_VARS = (
    "score_n0",
    "score_n1",
    "score_nmid",
    "score_sum",
    "score_sumsq",
    "score_sumlog",
    "score_sumlog1m",
)


def _score_column(df: pd.DataFrame, column: str) -> np.ndarray:
    """Scores in [0, 1] as floats, NaN where no score was recorded; nothing coerced."""
    series = df[column]
    raw = _column_values(series)
    if raw.dtype.kind not in "biufO":
        raw = series.to_numpy(dtype=object)
    allowed = "scores in [0, 1] (real numbers), with empty cells for missing scores"
    values, wrong, is_bool = _real_values(raw)
    if wrong.any():
        raise _wrong_type(
            f"score column {column!r}",
            series.to_numpy(dtype=object),
            wrong,
            df.index[wrong],
            allowed,
        )
    if is_bool.any():
        raise TypeError(
            f"score column {column!r} must hold {allowed}, not True/False; found "
            f"booleans in {describe_rows(df.index[is_bool])} (give pass/fail "
            "outcomes with success=, or the scores as numbers)"
        )
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ~((values >= 0) & (values <= 1))
    shown = values.astype(object)
    for i in np.flatnonzero(_inexact(raw)):  # judged exactly, not by the float it rounds to
        exact = Fraction(raw[i])
        if not 0 < exact < 1:
            bad[i], shown[i] = True, raw[i]
        elif values[i] in (0.0, 1.0):  # strictly between 0 and 1: not full (or no) credit
            values[i] = np.nextafter(values[i], 0.5)
    if bad.any():
        raise ValueError(
            f"score column {column!r} must hold {allowed}; found "
            f"{describe_values(shown[bad])} in {describe_rows(df.index[bad])}"
        )
    return values


def _score_stats(y: np.ndarray, cell: np.ndarray, shape) -> dict:
    """Per-cell sufficient statistics (:data:`SCORE_VARS`) of the scores ``y`` of ok rows."""
    size = int(np.prod(shape))
    mid = (y > 0) & (y < 1)
    inner = np.where(mid, y, 0.5)
    weights = {
        "score_n0": y == 0,
        "score_n1": y == 1,
        "score_nmid": mid,
        "score_sum": y,
        "score_sumsq": y**2,
        "score_sumlog": np.where(mid, np.log(inner), 0.0),
        "score_sumlog1m": np.where(mid, np.log1p(-inner), 0.0),
    }
    out = {}
    for name, w in weights.items():
        total = np.bincount(cell, weights=w.astype(float), minlength=size).reshape(shape)
        out[name] = (
            ("system", "task"),
            np.rint(total).astype(np.int64)
            if name in ("score_n0", "score_n1", "score_nmid")
            else total,
        )
    return out
