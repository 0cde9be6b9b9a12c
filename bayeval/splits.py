"""Task splits for a validation / test protocol that keeps clusters whole.

Picking a checkpoint (or a prompt, or a threshold) on the same tasks that report its score
makes the score optimistic (the winner's curse, :func:`bayeval.planning.selection_bias`). The
remedy is to choose on one part of the tasks and report on another. Tasks of one cluster (a
repository, a task family) share more than tasks of different clusters, so a split that puts
some of a repository's tasks on each side leaks: ``by="cluster"`` keeps every cluster whole.

How the fractions are honoured: the units (clusters, or tasks with ``by="task"``) are sorted by
label, shuffled with the seed, and taken in that order; each goes to the part furthest below
its target number of tasks (``fraction * total``; ties broken at random from the same seed).
A part never goes more than one unit over its target, and because the shortfalls and
overshoots sum to zero, no part ends more than one unit under: every part's number of tasks is
within the largest cluster's size of its target (within one task with ``by="task"``). The
split depends only on the task and cluster labels and the seed, not on row order or systems.
"""

from __future__ import annotations

import json
import math
import numbers

import numpy as np

from bayeval._validate import describe_values, validate_seed
from bayeval.data import EvalData

__all__ = ["split_tasks"]

BY = ("cluster", "task", None)


def _check_fractions(fractions) -> np.ndarray:
    if isinstance(fractions, (str, bytes)) or not hasattr(fractions, "__iter__"):
        raise TypeError(f"fractions must be a sequence of numbers summing to 1; got {fractions!r}")
    values = list(fractions)
    if len(values) < 2:
        raise ValueError(f"fractions must hold at least two parts; got {values!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"fractions must be positive numbers; got {values!r}")
    if not math.isclose(math.fsum(values), 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError(f"fractions must sum to 1; got {values!r} (sum {math.fsum(values)!r})")
    return np.asarray(values, dtype=float)


def _check_names(names, n_parts: int) -> list[str]:
    if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise TypeError(f"names must be a sequence of {n_parts} strings; got {names!r}")
    names = list(names)
    if (
        len(names) != n_parts
        or not all(isinstance(n, str) and n for n in names)
        or len(set(names)) != n_parts
    ):
        raise ValueError(
            f"names must be {n_parts} distinct non-empty strings, one per fraction; got {names!r}"
        )
    return names


def _sort_key(label):
    return (type(label).__name__, str(label))


def _assign(sizes: np.ndarray, fractions: np.ndarray, rng) -> np.ndarray:
    """Part of each unit, units taken in the given order (see the module docstring)."""
    target = fractions * sizes.sum()
    filled = np.zeros(len(fractions))
    part = np.empty(len(sizes), dtype=np.int64)
    for u, size in enumerate(sizes):
        deficit = target - filled
        best = np.flatnonzero(deficit >= deficit.max() - 1e-9)
        part[u] = best[rng.integers(len(best))] if len(best) > 1 else best[0]
        filled[part[u]] += size
    return part


def split_tasks(
    data, fractions=(0.5, 0.5), by="cluster", seed=0, names=("validation", "test")
) -> dict:
    """Split the tasks into parts of the given fractions, keeping clusters whole.

    Parameters
    ----------
    data : EvalData
    fractions : sequence of float, default (0.5, 0.5)
        Target share of the tasks in each part: positive, summing to 1.
    by : {"cluster", "task", None}, default "cluster"
        ``"cluster"`` keeps every cluster in one part (the data needs clusters); ``"task"``
        (or ``None``) splits tasks individually.
    seed : int or None, default 0
        The same data, fractions and seed give the same split; ``None`` draws a seed and
        records it.
    names : sequence of str, default ("validation", "test")
        One name per part.

    Returns
    -------
    dict of str to EvalData
        Each part, with a JSON attribute ``split`` in its dataset's attrs recording the part's
        name, the parts' names, ``by``, ``seed``, the target ``fractions``, the realised
        ``fraction``, and the part's ``n_tasks`` and ``n_clusters`` (of ``n_tasks_total`` and
        ``n_clusters_total``). The realised fraction is within the largest cluster's share
        of the target (see the module docstring for how).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.splits import split_tasks
    >>> data = be.from_counts([[1, 0, 1, 1, 0, 1, 1, 0]], trials=1,
    ...                       clusters=["a", "a", "b", "b", "c", "c", "d", "d"])
    >>> parts = split_tasks(data, fractions=(0.5, 0.5), seed=0)
    >>> [len(part.tasks) for part in parts.values()]
    [4, 4]
    >>> import json
    >>> json.loads(parts["test"].dataset.attrs["split"])["n_clusters"]
    2
    """
    if not isinstance(data, EvalData):
        raise TypeError(
            f"data must be an EvalData (from be.from_frame / be.from_counts); "
            f"got {type(data).__name__}"
        )
    fractions = _check_fractions(fractions)
    names = _check_names(names, len(fractions))
    if by not in BY:
        raise ValueError(f"by must be one of {list(BY)}; got {by!r}")
    by = by or "task"
    seed = validate_seed(seed)
    ds = data.dataset
    tasks = ds["task"].values
    if by == "cluster":
        if not data.has_clusters:
            raise ValueError(
                "by='cluster' needs task clusters; this data has none (pass "
                "cluster= when building it, or split with by='task')"
            )
        unit_of_task = ds["cluster"].values
    else:
        unit_of_task = tasks
    labels = sorted(dict.fromkeys(unit_of_task.tolist()), key=_sort_key)
    if len(labels) < len(fractions):
        noun = "clusters" if by == "cluster" else "tasks"
        raise ValueError(
            f"{len(fractions)} parts need at least {len(fractions)} {noun}; this "
            f"data has {len(labels)}: {describe_values(labels)}"
        )
    index = {label: i for i, label in enumerate(labels)}
    codes = np.array([index[v] for v in unit_of_task.tolist()])
    sizes = np.bincount(codes, minlength=len(labels))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(labels))
    part_of_unit = np.empty(len(labels), dtype=np.int64)
    part_of_unit[order] = _assign(sizes[order], fractions, rng)
    part_of_task = part_of_unit[codes]
    empty = [names[i] for i in range(len(fractions)) if not (part_of_task == i).any()]
    if empty:
        raise ValueError(
            f"part(s) {empty} got no task: {len(labels)} {by}s of sizes "
            f"{sorted(sizes.tolist(), reverse=True)} cannot be split into fractions "
            f"{fractions.tolist()} with every {by} whole; use larger fractions, fewer parts or "
            "by='task'"
        )
    n_clusters_total = len(np.unique(ds["cluster"].values)) if data.has_clusters else None
    parts = {}
    for i, name in enumerate(names):
        mask = part_of_task == i
        part = data.sel(task=tasks[mask].tolist())
        record = {
            "name": name,
            "parts": names,
            "by": by,
            "seed": seed,
            "fractions": fractions.tolist(),
            "fraction": float(mask.mean()),
            "n_tasks": int(mask.sum()),
            "n_tasks_total": len(tasks),
            "n_clusters": (
                int(len(np.unique(ds["cluster"].values[mask]))) if data.has_clusters else None
            ),
            "n_clusters_total": n_clusters_total,
        }
        part_ds = part.dataset.copy()
        part_ds.attrs = {**part_ds.attrs, "split": json.dumps(record)}
        parts[name] = EvalData(part_ds)
    return parts
