"""Per-attempt durations (``from_frame(..., latency=)``): seconds or timestamp pairs, per attempt.

A duration is a column of seconds (or timedeltas) or the difference of two timestamp columns;
an empty cell is an unrecorded duration, kept as missing and never as zero.
"""

from __future__ import annotations

import datetime
import warnings

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values
from bayeval.data.columns import _check_columns
from bayeval.data.values import _column_values, _real_values, _refuse_non_numbers

__all__ = ["LATENCY_VARS"]


#: Per-attempt durations (``latency=``): seconds and status code over ``(system, task, attempt)``,
#: NaN and -1 where a cell has fewer attempts than the longest cell (or no duration recorded).
LATENCY_VARS = ("latency", "latency_status")


_LATENCY_HELP = (
    "latency= takes a column of seconds (str) or a pair of timestamp columns (start, end)"
)


def _latency_names(df: pd.DataFrame, latency, count_rows: bool):
    """The latency column(s), checked: ``None``, ``(seconds,)`` or ``(start, end)``."""
    if latency is None:
        return None
    if isinstance(latency, str):
        columns: tuple = (latency,)
    elif isinstance(latency, (list, tuple)) and len(latency) == 2:
        columns = tuple(latency)
        if columns[0] == columns[1]:
            raise ValueError(f"latency= names column {columns[0]!r} as both start and end")
    else:
        raise TypeError(f"{_LATENCY_HELP}; got {latency!r}")
    if count_rows:
        raise TypeError(
            "latency= applies to outcome rows (success=), one row per attempt; "
            "count rows (successes=, trials=) carry no per-attempt durations"
        )
    roles = (
        {"latency": columns[0]}
        if len(columns) == 1
        else {"latency[0] (start)": columns[0], "latency[1] (end)": columns[1]}
    )
    _check_columns(df, roles)
    return columns


def _latency_seconds(df: pd.DataFrame, columns: tuple) -> np.ndarray:
    """Each row's duration in seconds, NaN where none was recorded; refusals name the rows."""
    if len(columns) == 1:
        return _seconds_column(df, columns[0])
    (start, start_aware), (end, end_aware) = (_timestamps(df, c) for c in columns)
    start_missing, end_missing = start == _NO_TIME, end == _NO_TIME
    half = start_missing != end_missing
    if half.any():
        raise ValueError(
            f"latency columns {columns[0]!r} and {columns[1]!r}: {describe_rows(df.index[half])} "
            "record one timestamp without the other; a duration needs both (empty both when "
            "none was recorded)"
        )
    both = ~start_missing & ~end_missing
    clash = both & (start_aware != end_aware)
    if clash.any():
        raise ValueError(
            f"latency columns {columns[0]!r} and {columns[1]!r}: in "
            f"{describe_rows(df.index[clash])} "
            "one timestamp has a UTC offset and the other has none, so their difference is "
            "undefined; give both with an offset (or both without)"
        )
    seconds = np.full(len(df), np.nan)
    seconds[both] = (end[both] - start[both]) / 1e9
    early = both & (seconds < 0)
    if early.any():
        raise ValueError(
            f"latency: {describe_rows(df.index[early])} end before they start (column "
            f"{columns[1]!r} earlier than {columns[0]!r} by "
            f"{describe_values(-seconds[early])} s)"
        )
    return seconds


_NO_TIME = np.iinfo(np.int64).min  # NaT's integer value


_OFFSET = r"(?:[zZ]|[+-]\d{2}(?::?\d{2})?)\s*$"


def _timestamps(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """A column of timestamps as UTC nanoseconds, and whether each carried a UTC offset.

    ``_NO_TIME`` where empty; datetimes or ISO 8601 strings, nothing else.
    """
    series = df[column]
    where = f"latency timestamp column {column!r}"
    allowed = (
        "datetimes or ISO 8601 strings (for example 2025-07-11T20:35:11+00:00), with "
        "empty cells where no duration was recorded"
    )
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        values = series.dt.tz_convert("UTC").dt.tz_localize(None)
        return values.to_numpy(dtype="datetime64[ns]").view(np.int64), np.ones(len(df), bool)
    if series.dtype.kind == "M":
        return (series.to_numpy(dtype="datetime64[ns]").view(np.int64), np.zeros(len(df), bool))
    if series.dtype.kind != "O" and not pd.api.types.is_string_dtype(series.dtype):
        raise TypeError(
            f"{where} must hold {allowed}; it holds {series.dtype} values (for "
            "durations in seconds give one column: latency='seconds')"
        )
    raw = series.to_numpy(dtype=object)
    missing = pd.isna(series).to_numpy()
    is_text = np.array([isinstance(v, str) for v in raw])
    is_time = np.array([isinstance(v, (datetime.datetime, np.datetime64)) for v in raw])
    wrong = ~missing & ~is_text & ~is_time
    if wrong.any():
        types = sorted({type(v).__name__ for v in raw[wrong]})
        raise TypeError(
            f"{where} must hold {allowed}; found {describe_values(raw[wrong])} "
            f"in {describe_rows(df.index[wrong])} (type {', '.join(types)}; for "
            "durations in seconds give one column: latency='seconds')"
        )
    blank = is_text & np.array([isinstance(v, str) and not v.strip() for v in raw])
    if blank.any():
        raise ValueError(
            f"{where} has blank text in {describe_rows(df.index[blank])}; leave "
            "the cell empty (missing) when no timestamp was recorded"
        )
    out = np.full(len(df), _NO_TIME, dtype=np.int64)
    aware = np.zeros(len(df), bool)
    if is_text.any():
        text = pd.Series(raw[is_text], dtype=object)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        bad = parsed.isna().to_numpy()
        if bad.any():
            rows = df.index[np.flatnonzero(is_text)[bad]]
            raise ValueError(
                f"{where} holds text that is not an ISO 8601 timestamp: "
                f"{describe_values(text[bad].tolist())} in {describe_rows(rows)}; "
                f"it must hold {allowed}"
            )
        out[is_text] = parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)
        aware[is_text] = text.str.contains(_OFFSET, regex=True).to_numpy()
    for i in np.flatnonzero(is_time):
        stamp = pd.Timestamp(raw[i])
        aware[i] = stamp.tzinfo is not None
        out[i] = (stamp.tz_convert("UTC").tz_localize(None) if aware[i] else stamp).value
    mixed = ~missing
    if aware[mixed].any() and not aware[mixed].all():
        rows_with, rows_without = df.index[mixed & aware], df.index[mixed & ~aware]
        raise ValueError(
            f"{where} mixes timestamps with a UTC offset "
            f"({describe_rows(rows_with)}) and without one "
            f"({describe_rows(rows_without)}); give every timestamp an offset "
            "(or none)"
        )
    return out, aware


def _seconds_column(df: pd.DataFrame, column: str) -> np.ndarray:
    """A column of durations: seconds (numbers) or timedeltas, NaN where empty."""
    series = df[column]
    where = f"latency column {column!r}"
    allowed = (
        "durations: finite, non-negative seconds (numbers) or timedeltas, with empty "
        "cells where none was recorded"
    )
    if series.dtype.kind == "m":
        values = series.dt.total_seconds().to_numpy(dtype=float)
    else:
        raw = _column_values(series)
        if raw.dtype.kind not in "biufO":
            raw = series.to_numpy(dtype=object)
        if raw.dtype.kind == "O":
            deltas = np.array(
                [
                    isinstance(v, (datetime.timedelta, np.timedelta64)) and not pd.isna(v)
                    for v in raw
                ]
            )
            if deltas.any():
                raw = raw.copy()
                raw[deltas] = [pd.Timedelta(v).total_seconds() for v in raw[deltas]]
        values, wrong, is_bool = _real_values(raw)
        _refuse_non_numbers(where, series, raw, wrong, is_bool, df.index, allowed)
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ~(np.isfinite(values) & (values >= 0))
    if bad.any():
        raise ValueError(
            f"{where} must hold {allowed}; found {describe_values(values[bad])} "
            f"in {describe_rows(df.index[bad])}"
        )
    return values


def _latency_arrays(seconds: np.ndarray, codes: np.ndarray, cell: np.ndarray, shape) -> dict:
    """Per-attempt durations and statuses padded to ``(system, task, attempt)``.

    In row order within each cell.
    """
    position = pd.Series(cell).groupby(cell).cumcount().to_numpy()
    width = int(position.max()) + 1 if len(position) else 1
    values = np.full(tuple(shape) + (width,), np.nan)
    status = np.full(tuple(shape) + (width,), -1, dtype=np.int8)
    s_idx, t_idx = np.divmod(cell, shape[1])
    values[s_idx, t_idx, position] = seconds
    status[s_idx, t_idx, position] = codes
    dims = ("system", "task", "attempt")
    return {"latency": (dims, values), "latency_status": (dims, status)}
