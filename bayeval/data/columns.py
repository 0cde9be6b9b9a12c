"""Column checks of a tidy frame: each role names one column, and its labels group as written.

A system, task, trial, cluster or stratum label must be hashable, present, and distinct from
every other label it does not equal as written (``True``, ``1`` and ``1.0`` would otherwise
merge into one); a column holds labels of one type, so that results files can save them.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values


def _check_columns(df: pd.DataFrame, names: dict) -> None:
    for role, column in names.items():
        if not isinstance(column, str):
            raise TypeError(f"{role}= must be a column name (str); got {column!r}")
    absent = {role: col for role, col in names.items() if col not in df.columns}
    if not absent:
        for role, column in names.items():
            where = df.columns.get_loc(column)
            if not isinstance(where, (int, np.integer)):
                count = int(np.sum(df.columns == column)) if df.columns.nlevels == 1 else None
                how = f"appears {count} times" if count and count > 1 else "names several columns"
                raise ValueError(
                    f"column name {column!r} ({role}=) {how} in the frame; "
                    "each column used must be unique (rename the duplicates)"
                )
    if absent:
        listed = ", ".join(f"{role}={col!r}" for role, col in absent.items())
        raise ValueError(
            f"column(s) not found: {listed}; the frame has columns "
            f"{describe_values(df.columns, limit=20)}"
        )


def _check_not_missing(df: pd.DataFrame, column: str) -> None:
    missing = df[column].isna().to_numpy()
    if missing.any():
        raise ValueError(
            f"column {column!r} has missing values in "
            f"{describe_rows(df.index[missing])}; every row needs a {column}"
        )


def _check_hashable(series: pd.Series, column: str, index, what: str | None = None) -> None:
    """Labels must be hashable to be grouped; say which rows are not (lists, dicts, arrays)."""
    if series.dtype != object:
        return
    bad = np.zeros(len(series), dtype=bool)
    for i, v in enumerate(series.to_numpy()):
        try:
            hash(v)
        except TypeError:
            bad[i] = True
    if bad.any():
        found = series.to_numpy()[bad]
        types = sorted({type(v).__name__ for v in found})
        raise TypeError(
            f"{what or f'column {column!r}'} must hold hashable labels "
            "(str, int, float, bool, tuple, ...); "
            f"found {describe_values(found)} in {describe_rows(index[bad])} "
            f"(type {', '.join(types)})"
        )


def _label_key(v) -> str:
    """What a label looks like to a reader: distinct keys for True, 1 and 1.0."""
    if isinstance(v, np.generic):
        v = v.item()
    return f"{type(v).__name__}:{v!r}"


def _check_labels(series: pd.Series, column: str, index, what: str | None = None) -> None:
    """Hashable, non-missing labels whose distinct values stay distinct when grouped.

    Grouping uses Python equality, under which ``True == 1 == 1.0`` (and ``0.0 == -0.0``,
    ``Fraction(1, 2) == 0.5``): such labels would silently merge into one system or task.
    """
    _check_hashable(series, column, index, what)
    what = what or f"column {column!r}"
    if series.isna().any():
        missing = series.isna().to_numpy()
        raise ValueError(
            f"{what} has missing values in "
            f"{describe_rows(index[missing])}; every row needs a {column}"
        )
    if series.dtype != object or pd.api.types.infer_dtype(series, skipna=True) in (
        "string",
        "bytes",
        "integer",
    ):
        return
    values = series.to_numpy()
    codes = pd.factorize(values, sort=False)[0]
    keys = pd.factorize(
        np.fromiter((_label_key(v) for v in values), dtype=object, count=len(values)), sort=False
    )[0]
    if keys.max() == codes.max():
        _check_one_label_type(values, what, index)
        return
    pairs = pd.DataFrame({"code": codes, "key": keys}).drop_duplicates()
    merged = pairs["code"][pairs["code"].duplicated()].unique()
    groups = []
    for code in merged[:3]:
        rows = np.flatnonzero(codes == code)
        firsts = pd.Series(keys[rows]).drop_duplicates().index
        groups.append(
            f"{' == '.join(repr(values[rows[i]]) for i in firsts)} ({describe_rows(index[rows])})"
        )
    raise ValueError(
        f"{what} holds labels that differ but compare equal, so they would merge "
        f"into one: {'; '.join(groups)}; make the labels distinct (for example as "
        "strings) or make them identical"
    )


def _label_type(v) -> str:
    """The kind of a label as results files store it: one kind per column can be saved."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (numbers.Integral, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "str"
    return type(v).__name__


def _check_one_label_type(values: np.ndarray, what: str, index) -> None:
    """Refuse a column that mixes label types (``1`` and ``"x"``).

    Such labels cannot be written to a results file, and ``1`` and ``"1"`` read alike in every
    table.
    """
    kinds = np.fromiter((_label_type(v) for v in values), dtype=object, count=len(values))
    names = pd.unique(kinds)
    if len(names) < 2:
        return
    parts = []
    for name in names:
        rows = np.flatnonzero(kinds == name)
        parts.append(
            f"{name}: {describe_values(pd.unique(values[rows]))} ({describe_rows(index[rows])})"
        )
    raise TypeError(
        f"{what} mixes label types ({'; '.join(parts)}); the labels of one column must "
        "share one type, so that they stay distinct and can be saved: convert the column, "
        "for example with .astype(str)"
    )


def _labels(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    _check_not_missing(df, column)
    codes, uniques = pd.factorize(df[column], sort=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _check_unique(df: pd.DataFrame, columns: list, what: str) -> None:
    dup = df.duplicated(subset=columns, keep=False).to_numpy()
    if dup.any():
        raise ValueError(
            f"duplicate {what}: columns {columns} must identify one row, but "
            f"{describe_rows(df.index[dup])} share a combination "
            f"(first: {tuple(df.loc[dup, columns].iloc[0])})"
        )
