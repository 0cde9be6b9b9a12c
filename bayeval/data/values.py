"""Numeric cells read exactly: 0/1 outcomes and whole counts, refusing what is not a number.

Ints, floats, bools, fractions and decimals (NumPy and pandas types included) are numbers;
complex numbers, dates, durations and text are refused with the column and rows, never coerced.
A fraction or decimal is judged by its exact value, not by the float nearest to it:
``Decimal("0.99999999999999999999")`` is not a success, nor a whole count.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import numbers

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values

_MAX_COUNT = 1e12


_ALLOWED_NUMBERS = (
    "int, float, bool, fractions.Fraction or decimal.Decimal (NumPy and pandas "
    "numeric types included)"
)


def _real_values(values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact numeric cells as floats: ``(value, wrong_type, is_bool)``, NaN where missing.

    Accepted: ints, floats, bools, :class:`fractions.Fraction`, :class:`decimal.Decimal` and
    their NumPy/pandas counterparts; ``None``, ``pd.NA`` and NaN are missing. Everything else
    is a wrong type, never coerced: complex numbers (whose imaginary part would be dropped),
    dates and durations (whose ticks would be read as numbers), strings, containers.
    """
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind in "iuf":
        with np.errstate(over="ignore"):
            out = values.astype(float)
        return out, np.zeros(values.shape, bool), np.zeros(values.shape, bool)
    if kind == "b":
        return values.astype(float), np.zeros(values.shape, bool), np.ones(values.shape, bool)
    if kind != "O":
        return (
            np.full(values.shape, np.nan),
            np.ones(values.shape, bool),
            np.zeros(values.shape, bool),
        )
    flat = values.ravel()
    out = np.full(flat.shape, np.nan)
    wrong = np.zeros(flat.shape, bool)
    is_bool = np.zeros(flat.shape, bool)
    for i, v in enumerate(flat):
        value, kind_of = _real_cell(v)
        if kind_of == "wrong":
            wrong[i] = True
        else:
            out[i] = value
            is_bool[i] = kind_of == "bool"
    return out.reshape(values.shape), wrong.reshape(values.shape), is_bool.reshape(values.shape)


def _real_cell(v) -> tuple[float, str]:
    if v is None or v is pd.NA:
        return np.nan, "missing"
    if (
        isinstance(
            v, (np.datetime64, np.timedelta64, datetime.date, datetime.time, datetime.timedelta)
        )
        or v is pd.NaT
    ):
        return np.nan, "wrong"
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return float(v), "bool"
    if isinstance(v, decimal.Decimal):
        return (np.nan, "missing") if v.is_nan() else (_to_float(v), "number")
    if isinstance(v, numbers.Real):
        value = _to_float(v)
        return (value, "missing") if isinstance(v, float) and np.isnan(value) else (value, "number")
    return np.nan, "wrong"


def _to_float(v) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _inexact(values) -> np.ndarray:
    """Where an exact number (Decimal, Fraction) is not the float that stands for it.

    Such a cell lies strictly between two floats: never 0, 1 or a whole count, whatever float
    it rounds to.
    """
    values = np.asarray(values)
    out = np.zeros(values.shape, dtype=bool)
    if values.dtype != object or pd.api.types.infer_dtype(values.ravel(), skipna=True) in (
        "integer",
        "floating",
        "boolean",
        "mixed-integer-float",
        "string",
    ):
        return out
    flat = out.ravel()
    for i, v in enumerate(values.ravel()):
        if isinstance(v, fractions.Fraction) or (isinstance(v, decimal.Decimal) and v.is_finite()):
            rounded = _to_float(v)
            flat[i] = not np.isfinite(rounded) or fractions.Fraction(v) != fractions.Fraction(
                rounded
            )
    return flat.reshape(values.shape)


def _shown(values, exact, inexact: np.ndarray) -> np.ndarray:
    """Values for a message: the float where it is exact, the cell as given where it is not."""
    return np.where(inexact, np.asarray(exact, dtype=object), np.asarray(values, dtype=object))


def _column_values(series: pd.Series) -> np.ndarray:
    """A column's cells as a NumPy array (nullable pandas dtypes: NaN/None where missing)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.astype(object).to_numpy()
    if pd.api.types.is_extension_array_dtype(series.dtype):
        kind = getattr(series.dtype, "kind", "O")
        if kind in "iufb":
            return series.to_numpy(dtype=object, na_value=None)
        return series.to_numpy(dtype=object)
    return series.to_numpy()


def _wrong_type(column: str, series_values, wrong: np.ndarray, rows, what: str) -> TypeError:
    array = np.asarray(series_values)
    found = list(array.astype(object).ravel()[wrong.ravel()])
    types = (
        [array.dtype.name] if array.dtype != object else sorted({type(v).__name__ for v in found})
    )
    return TypeError(
        f"{column} must hold {what}; found {describe_values(found)} in {describe_rows(rows)} "
        f"(type {', '.join(types)}); allowed types: {_ALLOWED_NUMBERS}, "
        "never complex numbers, dates, durations or text"
    )


def _refuse_non_numbers(
    where: str, series, raw, wrong, is_bool, index, allowed: str, hint: str = ""
):
    """Refuse a per-attempt numeric column's non-numbers and booleans, naming the rows."""
    if wrong.any():
        raise _wrong_type(where, series.to_numpy(dtype=object), wrong, index[wrong], allowed)
    if is_bool.any() or raw.dtype.kind == "b":
        rows = index[is_bool] if is_bool.any() else index
        raise TypeError(
            f"{where} must hold {allowed}, not True/False; found booleans in "
            f"{describe_rows(rows)}{hint}"
        )


def _outcome_column(df: pd.DataFrame, column: str) -> np.ndarray:
    """0/1 outcomes as floats, NaN where no outcome was recorded."""
    series = df[column]
    raw = _column_values(series)
    if raw.dtype.kind not in "biufO":  # typed columns of the wrong kind: say so by dtype
        raw = series.to_numpy(dtype=object)
    outcome, wrong, _ = _real_values(raw)
    if wrong.any():
        raise _wrong_type(
            f"column {column!r}",
            series.to_numpy(dtype=object),
            wrong,
            df.index[wrong],
            "0/1 (or True/False) outcomes, with empty cells for missing outcomes",
        )
    inexact = _inexact(raw)
    bad = (~np.isnan(outcome) & (outcome != 0) & (outcome != 1)) | inexact
    if bad.any():
        shown = _shown(outcome, raw, inexact)
        raise ValueError(
            f"column {column!r} must hold 0 or 1 (empty for a missing outcome); "
            f"found {describe_values(shown[bad])} in {describe_rows(df.index[bad])}"
        )
    return outcome


def _whole_numbers(column: str, values, index=None, original=None) -> np.ndarray:
    """Whole, finite counts as int64; ``column`` names the input in messages."""
    values = np.asarray(values)
    real, wrong, is_bool = _real_values(values)

    def rows(mask):  # frame rows, or array cells (system, task) for from_counts
        if index is not None:
            return index[mask]
        return [
            tuple(int(i) for i in ix) if len(ix) > 1 else int(ix[0]) for ix in np.argwhere(mask)
        ]

    if wrong.any():
        shown = values if original is None else original
        raise _wrong_type(column, shown, wrong, rows(wrong), "integer counts")
    if is_bool.any():
        raise TypeError(
            f"{column} must hold integer counts, not True/False; found booleans in "
            f"{describe_rows(rows(is_bool))}"
        )
    inexact = _inexact(values)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(real) | (real != np.round(real)) | (np.abs(real) > _MAX_COUNT)
    bad |= inexact
    if bad.any():
        shown = _shown(real, values, inexact)
        raise ValueError(
            f"{column} must hold whole, non-missing counts below {_MAX_COUNT:.0e}; "
            f"found {describe_values(shown[bad])} in {describe_rows(rows(bad))}"
        )
    return real.astype(np.int64)


def _count_columns(df: pd.DataFrame, successes: str, trials: str):
    index = df.index
    c = _whole_numbers(
        f"column {successes!r}",
        _column_values(df[successes]),
        index,
        df[successes].to_numpy(dtype=object),
    )
    n = _whole_numbers(
        f"column {trials!r}", _column_values(df[trials]), index, df[trials].to_numpy(dtype=object)
    )
    if (n < 1).any():
        raise ValueError(
            f"column {trials!r} must be >= 1; found {describe_values(n[n < 1])} in "
            f"{describe_rows(index[n < 1])}"
        )
    bad = (c < 0) | (c > n)
    if bad.any():
        raise ValueError(
            f"column {successes!r} must lie in 0..{trials}; {describe_rows(index[bad])} are outside"
        )
    return c, n
