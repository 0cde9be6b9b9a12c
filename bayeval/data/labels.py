"""Labels checked once, at the boundary: they group as written and a results file holds them.

A system, task, cluster, stratum or run label is stored in the results file and must come back
from :func:`bayeval.load` exactly. So a label is a ``str`` (valid Unicode, without NUL
characters: HDF5 ends a string at the first NUL, and NumPy drops trailing ones), an ``int``
(within 64 bits) or a ``float`` (not NaN), NumPy scalars of these kinds included, and the
labels of one column share one type. Labels that differ but compare equal (``True``, ``1`` and
``1.0``; ``0.0`` and ``-0.0``) are refused, since grouping would merge them. Trial ids are
grouped but never stored: they need only be hashable, present and distinct as written.

:func:`_check_labels` applies these rules to a column or an argument; :func:`_native_labels`
gives the labels as Python scalars, as a results file reads them back.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values

#: What a stored label may be, for error messages.
_ALLOWED_LABELS = (
    "allowed: str (valid Unicode, without NUL characters), int (64-bit) or float (not NaN), "
    "one type per column, as a results file stores them"
)

_INT64 = (-(2**63), 2**63 - 1)
_FLOATS = (float, np.float16, np.float32, np.float64)
#: ``infer_dtype`` kinds of object arrays whose cells are all hashable scalars (or missing).
_SCALARS = ("string", "bytes", "integer", "floating", "boolean", "mixed-integer-float", "empty")


def _check_labels(labels, what: str, index, *, noun: str, stored: bool = True) -> None:
    """Refuse labels that would not group as written or (``stored``) not round-trip.

    ``labels`` is a column (:class:`pandas.Series`) or a 1-d array of the labels as given;
    ``what`` names it in messages (``"column 'task'"``, ``"tasks="``), ``index`` gives the row
    of each label and ``noun`` what every row needs (``"task"``).
    """
    if isinstance(labels, pd.Series | pd.Index) and isinstance(labels.dtype, pd.StringDtype):
        # text or missing only: checked on the distinct values, without a copy per row
        _refuse_missing(labels.isna().to_numpy(dtype=bool), what, index, noun)
        if stored:
            _check_values(labels, what, index, distinct=labels.unique().tolist())
        return
    values = _cells(labels)
    _check_hashable(values, what, index)
    _refuse_missing(np.asarray(pd.isna(values), dtype=bool), what, index, noun)
    _check_merges(values, what, index)
    _check_one_type(values, what, index)
    if stored:
        _check_types(values, what, index)
        _check_values(values, what, index)


def _refuse_missing(missing: np.ndarray, what: str, index, noun: str) -> None:
    if missing.any():
        raise ValueError(
            f"{what} has missing values in {describe_rows(index[missing])}; "
            f"every row needs a {noun}"
        )


def _cells(labels) -> np.ndarray:
    """The labels as a 1-d NumPy array of the values given (a categorical: its values)."""
    if isinstance(labels, pd.Series | pd.Index):
        if isinstance(labels.dtype, pd.CategoricalDtype) or pd.api.types.is_extension_array_dtype(
            labels.dtype
        ):
            return labels.to_numpy(dtype=object)
        return labels.to_numpy()
    return np.asarray(labels)


def _check_hashable(values, what: str, index) -> None:
    """Labels must be hashable to be grouped; say which rows are not (lists, dicts, arrays)."""
    values = np.asarray(values)
    if values.dtype != object or pd.api.types.infer_dtype(values, skipna=True) in _SCALARS:
        return  # typed arrays, and object arrays of scalars of one kind, are hashable
    bad = np.zeros(len(values), dtype=bool)
    for i, v in enumerate(values):
        try:
            hash(v)
        except TypeError:
            bad[i] = True
    if bad.any():
        found = values[bad]
        types = sorted({type(v).__name__ for v in found})
        raise TypeError(
            f"{what} must hold hashable labels (str, int, float, ...); "
            f"found {describe_values(found)} in {describe_rows(index[bad])} "
            f"(type {', '.join(types)})"
        )


def _label_key(v) -> str:
    """What a label looks like to a reader: distinct keys for True, 1 and 1.0 (and -0.0)."""
    if isinstance(v, np.generic):
        v = v.item()
    return f"{type(v).__name__}:{v!r}"


def _check_merges(values: np.ndarray, what: str, index) -> None:
    """Refuse distinct labels that compare equal: grouping would merge them into one.

    Grouping uses equality, under which ``True == 1 == 1.0``, ``0.0 == -0.0`` and
    ``Fraction(1, 2) == 0.5``.
    """
    kind = values.dtype.kind
    inferred = pd.api.types.infer_dtype(values, skipna=True) if kind == "O" else None
    if kind == "f" or inferred == "floating":  # only 0.0 and -0.0 can merge
        floats = values.astype(float)
        signs = np.signbit(floats[floats == 0])
        if signs.all() or not signs.any():
            return
    elif kind != "O" or inferred in ("string", "bytes", "integer"):
        return
    codes = pd.factorize(values, sort=False)[0]
    keys = pd.factorize(
        np.fromiter((_label_key(v) for v in values), dtype=object, count=len(values)), sort=False
    )[0]
    if keys.max() == codes.max():
        return
    pairs = pd.DataFrame({"code": codes, "key": keys}).drop_duplicates()
    merged = pairs["code"][pairs["code"].duplicated()].unique()
    groups = []
    for code in merged[:3]:
        rows = np.flatnonzero(codes == code)
        firsts = pd.Series(keys[rows]).drop_duplicates().index
        groups.append(
            f"{' == '.join(repr(_native(values[rows[i]])) for i in firsts)} "
            f"({describe_rows(index[rows])})"
        )
    raise ValueError(
        f"{what} holds labels that differ but compare equal, so they would merge "
        f"into one: {'; '.join(groups)}; make the labels distinct (for example as "
        "strings) or make them identical"
    )


def _label_type(v) -> str:
    """A label's type as a results file stores it: one type per column can be saved."""
    if isinstance(v, bool | np.bool_):
        return "bool"
    if isinstance(v, numbers.Integral):
        return "int"
    if isinstance(v, _FLOATS):
        return "float"
    if isinstance(v, str):
        return "str"
    return type(v).__name__


def _check_types(values: np.ndarray, what: str, index) -> None:
    """Refuse labels that are not str, int or float (dates, bools, tuples, decimals, ...)."""
    kind = values.dtype.kind
    if kind in "iuU" or (kind == "f" and values.dtype.itemsize <= 8):
        return
    if kind == "O":
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        if inferred in ("string", "integer"):
            return
        kinds = np.fromiter((_label_type(v) for v in values), dtype=object, count=len(values))
        bad = ~np.isin(kinds, ["str", "int", "float"])
        types = list(pd.unique(kinds[bad]))
    else:  # a typed column of another kind: bool, datetime64, complex, bytes
        bad = np.ones(len(values), dtype=bool)
        types = [values.dtype.name]
    if bad.any():
        raise TypeError(
            f"{what} must hold labels of one allowed type; found "
            f"{describe_values(values[bad])} ({', '.join(types)}) in "
            f"{describe_rows(index[bad])}; {_ALLOWED_LABELS}: convert the labels, for "
            "example with .astype(str)"
        )


def _check_one_type(values: np.ndarray, what: str, index) -> None:
    """Refuse a column that mixes label types (``1`` and ``"x"``).

    Such labels cannot be written to a results file, and ``1`` and ``"1"`` read alike in every
    table.
    """
    if values.dtype != object or pd.api.types.infer_dtype(values, skipna=True) in (
        "string",
        "integer",
        "floating",
    ):
        return
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


def _check_values(values, what: str, index, distinct: list | None = None) -> None:
    """Refuse text a results file cannot hold (NUL, invalid Unicode) and ints beyond 64 bits.

    Checked on the ``distinct`` labels (default: those of ``values``); the rows are found
    only for a refusal.
    """
    if distinct is not None:  # the distinct cells of a pandas text column
        wrong = _bad_text(distinct)
    elif values.dtype.kind in "if":
        return
    elif values.dtype.kind == "U" or pd.api.types.infer_dtype(values) == "string":
        wrong = _bad_text(values.ravel().tolist())  # one pass: cheaper than finding distinct
    else:
        distinct = pd.unique(values.ravel()).tolist()
        wrong = _bad_text([v for v in distinct if isinstance(v, str)])
        if not wrong:
            wrong = {
                v: "integers outside 64 bits"
                for v in distinct
                if isinstance(v, int | np.integer) and not _INT64[0] <= int(v) <= _INT64[1]
            }
    if not wrong:
        return
    problem = next(iter(wrong.values()))
    shown = {v for v, p in wrong.items() if p == problem}
    cells = np.asarray(values, dtype=object)
    bad = np.fromiter((v in shown for v in cells), dtype=bool, count=len(cells))
    raise ValueError(
        f"{what} holds {problem}: {describe_values(cells[bad])} in "
        f"{describe_rows(index[bad])}; {_ALLOWED_LABELS}"
    )


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _bad_text(text: list) -> dict:
    """Label -> what is wrong with it, for the labels a results file cannot hold as text."""
    joined = "\x01".join(text)  # one pass over all the text where nothing is wrong
    if "\x00" not in joined and _encodes(joined):
        return {}
    bad = {}
    for v in text:
        if "\x00" in v:
            bad[v] = (
                "text with NUL characters ('\\x00'), which a results file cuts short "
                "(and NumPy drops at the end, so 'a' and 'a\\x00' become one label)"
            )
        elif not _encodes(v):
            bad[v] = "text that is not valid Unicode (lone surrogates), which UTF-8 cannot encode"
    return bad


def _native(v):
    """A label as a results file reads it back: a Python str, int or float."""
    return v if type(v) in (str, int, float) or not isinstance(v, np.generic) else v.item()


def _native_labels(values: np.ndarray) -> np.ndarray:
    """An object array's labels as Python scalars (a NumPy scalar's repr differs)."""
    if values.dtype != object or not any(isinstance(v, np.generic) for v in values.flat):
        return values
    out = np.empty(values.shape, dtype=object)
    for i, v in enumerate(values.flat):
        out.flat[i] = _native(v)
    return out
