"""EvalData from count arrays (``from_counts``): successes out of trials, every outcome valid."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeval._validate import describe_values
from bayeval.data.columns import _check_labels
from bayeval.data.evaldata import EvalData
from bayeval.data.statuses import _OK, STATUSES, _assemble
from bayeval.data.strata import _stratum_weights
from bayeval.data.values import _whole_numbers

__all__ = ["from_counts"]


def from_counts(
    successes, trials, tasks=None, systems=None, clusters=None, strata=None, stratum_weights=None
) -> EvalData:
    """Build :class:`EvalData` from count arrays (all outcomes valid).

    Parameters
    ----------
    successes : array_like of int, shape ``(task,)`` or ``(system, task)``
    trials : int or array_like of int
        Trials per cell, broadcast against ``successes``.
    tasks, systems : sequence, optional
        Labels (default ``0..J-1`` and ``system_0..``; a single system is ``"system"``).
    clusters, strata : sequence, optional
        One label per task.
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
    systems = default_systems if systems is None else list(systems)
    tasks = list(range(c.shape[1])) if tasks is None else list(tasks)
    for name, labels, size in (("systems", systems, c.shape[0]), ("tasks", tasks, c.shape[1])):
        _check_labels(
            pd.Series(labels, dtype=object), name, pd.RangeIndex(len(labels)), what=f"{name}="
        )
        if len(labels) != size or len(set(labels)) != size:
            raise ValueError(
                f"{name} must hold {size} distinct labels; got {len(labels)} "
                f"({len(set(labels))} distinct)"
            )
    task_coords = {}
    for name, plural, values in (("cluster", "clusters", clusters), ("stratum", "strata", strata)):
        if values is not None:
            # check the labels as given: NumPy would turn [1, True] into [1, 1] silently
            given = values
            values = _rectangular(plural, values)
            if values.shape != (c.shape[1],) or pd.isna(values).any():
                raise ValueError(
                    f"{plural} must hold one label per task ({c.shape[1]}), "
                    f"none missing; got shape {values.shape}"
                )
            labels = pd.Series(list(given), dtype=object)
            _check_labels(labels, plural, pd.RangeIndex(len(labels)), what=f"{plural}=")
            task_coords[name] = values
    status_counts = np.zeros(c.shape + (len(STATUSES),), dtype=np.int64)
    status_counts[..., _OK] = n
    attrs = {"stratum_weights": _stratum_weights(task_coords.get("stratum"), stratum_weights)}
    ds = _assemble(
        c.astype(np.int64),
        status_counts,
        None,
        np.asarray(systems, dtype=object),
        np.asarray(tasks),
        task_coords,
        attrs,
    )
    return EvalData(ds)


def _rectangular(name: str, value) -> np.ndarray:
    """``np.asarray`` with a readable refusal of ragged nested sequences."""
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
