"""EvalData from count arrays (``from_counts``): successes out of trials, every outcome valid."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set

import numpy as np
import pandas as pd

from bayeval._validate import describe_values
from bayeval.data.evaldata import EvalData
from bayeval.data.labels import _cells, _check_labels, _native
from bayeval.data.statuses import _OK, STATUSES, _assemble
from bayeval.data.strata import _stratum_weights
from bayeval.data.values import _whole_numbers

__all__ = ["from_counts"]


def from_counts(
    successes, trials, tasks=None, systems=None, clusters=None, strata=None, stratum_weights=None
) -> EvalData:
    """Build :class:`EvalData` from count arrays (all outcomes valid).

    Every count is a valid outcome: there are no missing counts here, so a masked array with
    masked cells is refused (give per-attempt rows with statuses to :func:`from_frame` for
    missing outcomes).

    Parameters
    ----------
    successes : array_like of int, shape ``(task,)`` or ``(system, task)``
    trials : int or array_like of int
        Trials per cell, broadcast against ``successes``.
    tasks, systems : sequence, optional
        Labels (default ``0..J-1`` and ``system_0..``; a single system is ``"system"``), in
        order: a list, tuple, array or pandas Series/Index, not a string (``systems="AB"``
        is refused rather than split into ``"A"`` and ``"B"``), a set or a mapping. As in
        :func:`from_frame`, labels are ``str`` (without NUL characters), ``int`` (64-bit)
        or ``float`` (not NaN), one type per argument, so that a results file reads them
        back exactly.
    clusters, strata : sequence, optional
        One label per task, under the same rules.
    stratum_weights : mapping, optional
        Stratum -> declared weight (default: observed task shares).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([7, 10, 0], trials=10)
    >>> data.dataset["trials"].values
    array([[10, 10, 10]])
    """
    c = _rectangular("successes", successes)
    if c.ndim not in (1, 2) or c.size == 0:
        raise ValueError(
            f"successes must be a non-empty array of shape (task,) or (system, task); "
            f"got shape {c.shape}"
        )
    if c.ndim == 1:
        c = c[None, :]
        default_systems = ["system"]
    else:
        default_systems = [f"system_{i}" for i in range(c.shape[0])]
    n = _rectangular("trials", trials)
    try:
        n = np.broadcast_to(n, c.shape)
    except ValueError:
        raise ValueError(
            f"trials (shape {n.shape}) does not broadcast to successes (shape {c.shape})"
        ) from None
    c = _whole_numbers("successes", c)
    n = _whole_numbers("trials", n)
    if (n < 1).any():
        raise ValueError(f"trials must be >= 1 in every cell; got {int(n.min())}")
    bad = (c < 0) | (c > n)
    if bad.any():
        where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)]
        raise ValueError(
            f"successes must lie in 0..trials; cells (system, task) {where[:5]} do not"
        )
    systems = default_systems if systems is None else _label_list("systems", systems)
    task_labels = list(range(c.shape[1])) if tasks is None else _label_list("tasks", tasks)
    for name, labels, size in (
        ("systems", systems, c.shape[0]),
        ("tasks", task_labels, c.shape[1]),
    ):
        if len(labels) != size or len(set(labels)) != size:
            raise ValueError(
                f"{name} must hold {size} distinct labels; got {len(labels)} "
                f"({len(set(labels))} distinct)"
            )
    task_coords = {}
    for name, plural, values in (("cluster", "clusters", clusters), ("stratum", "strata", strata)):
        if values is not None:
            if _is_sequence(values) and not isinstance(values, str | bytes):
                _rectangular(plural, values)  # a ragged nested list: say so as for counts
            labels = _label_list(plural, values)
            if len(labels) != c.shape[1]:
                raise ValueError(
                    f"{plural}= must hold one label per task ({c.shape[1]}); got {len(labels)}"
                )
            task_coords[name] = _label_array(labels, values)
    status_counts = np.zeros(c.shape + (len(STATUSES),), dtype=np.int64)
    status_counts[..., _OK] = n
    attrs = {"stratum_weights": _stratum_weights(task_coords.get("stratum"), stratum_weights)}
    ds = _assemble(
        c.astype(np.int64),
        status_counts,
        None,
        np.asarray(systems, dtype=object),
        _label_array(task_labels, tasks),
        task_coords,
        attrs,
    )
    return EvalData(ds)


def _label_list(name: str, given) -> list:
    """The labels of an argument (``systems=``, ``tasks=``, ...) as given, checked.

    An ordered collection (list, tuple, array, pandas Series/Index) of one label per position:
    a string (which would be split into its characters), a set (unordered), a mapping or a
    scalar is refused, and so is a masked array with masked cells. The labels come back as
    Python scalars.
    """
    if isinstance(given, str | bytes) or not _is_sequence(given):
        shown = f"the string {given!r}" if isinstance(given, str) else type(given).__name__
        hint = f" (for one label, give [{given!r}])" if isinstance(given, str | bytes) else ""
        raise TypeError(
            f"{name}= must be a sequence of labels (a list, tuple, array or pandas "
            f"Series/Index, in order); got {shown}{hint}"
        )
    values = _unmasked(name, given)
    if isinstance(values, np.ndarray | pd.Series | pd.Index):
        if values.ndim != 1:
            raise ValueError(f"{name}= must be 1-d (one label each); got shape {values.shape}")
        cells = values  # typed: a datetime64 array must not become ticks
    else:
        values = list(values)
        cells = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):  # one by one: tuples must stay one cell each
            cells[i] = v
    noun = {"systems": "system", "tasks": "task", "clusters": "cluster"}.get(name, "stratum")
    _check_labels(cells, f"{name}=", pd.RangeIndex(len(cells)), noun=noun)
    return [_native(v) for v in _cells(cells).tolist()]


def _is_sequence(given) -> bool:
    """Ordered labels: not a set (unordered), a mapping or a scalar."""
    return isinstance(given, Iterable) and not isinstance(given, Set | Mapping)


def _label_array(labels: list, given) -> np.ndarray:
    """The checked labels as a coordinate: a typed array where the labels allow one."""
    if isinstance(given, np.ndarray) and given.dtype.kind in "iufU":
        return np.array(np.ma.getdata(given))  # a copy: the caller's array stays theirs
    kinds = {type(v) for v in labels}
    if kinds <= {str}:
        return np.array(labels, dtype=str)  # no NUL, so NumPy keeps every character
    if kinds <= {int}:
        return np.array(labels, dtype=np.int64)
    if kinds <= {float}:
        return np.array(labels, dtype=np.float64)
    return np.array(labels, dtype=object)


def _unmasked(name: str, given):
    """A masked array's data, refused where a cell is masked: counts have no missing cells."""
    if not np.ma.isMaskedArray(given):
        return given
    mask = np.ma.getmaskarray(given)
    if mask.any():
        where = [
            tuple(int(i) for i in ix) if len(ix) > 1 else int(ix[0]) for ix in np.argwhere(mask)
        ]
        more = f" and {len(where) - 5} more" if len(where) > 5 else ""
        raise ValueError(
            f"{name}= is a masked array with {len(where)} masked "
            f"cell{'s' if len(where) > 1 else ''} ({where[:5]}{more}); from_counts has "
            "no missing counts (every trial it is given is a valid outcome): fill or drop "
            "those cells, or give one row per attempt to from_frame, where an attempt "
            "without an outcome has a status and a missing= policy"
        )
    return np.ma.getdata(given)


def _rectangular(name: str, value) -> np.ndarray:
    """``np.asarray`` with a readable refusal of ragged nested sequences."""
    value = _unmasked(name, value)
    try:
        return np.asarray(value)
    except (ValueError, TypeError):
        lengths: list = []
        for row in value:
            try:
                lengths.append(len(row))
            except TypeError:
                lengths.append("scalar")
        raise ValueError(
            f"{name} must be a rectangular array (every row the same length); "
            f"its rows have lengths {describe_values(lengths)}"
        ) from None
