"""Column checks of a tidy frame: each role names one column, present and unique, and its rows.

The labels in those columns are checked by :mod:`bayeval.data.labels`.
"""

from __future__ import annotations

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
