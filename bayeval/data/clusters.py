"""Which population a task set's clusters support by default, and each estimand in words.

With task clusters (repositories, families, platforms), ``estimand="population"`` of a model
with cluster effects asks about a new task from a new cluster (``clusters="new"``: every
cluster weighs the same, as a new one is drawn from the clusters' distribution), or about a new
task from the observed clusters (``clusters="observed"``), averaged over them by their task
counts (``weighting="task"``) or equally (``weighting="cluster"``).

A new cluster is learnt from the clusters seen. With few of them (fewer than
:data:`MIN_CLUSTERS`) the spread between clusters, and so the answer, rests on the prior; with
a cluster much smaller than an equal share of the tasks (under :data:`SMALL_CLUSTER_SHARE` of
it) weighing clusters equally lets a handful of tasks carry a large part of the answer. Then
the data support only the observed clusters, and :func:`default_clusters` makes the default
``clusters="observed", weighting="task"``: a new task from these clusters in their proportions,
the population whose mean the benchmark's own headline number (the mean over its tasks)
estimates. A new cluster is there when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

__all__ = [
    "MIN_CLUSTERS",
    "SMALL_CLUSTER_SHARE",
    "ClusterDefault",
    "default_clusters",
    "estimand_words",
]

#: Fewer clusters than this do not support a new cluster by default, and a bootstrap that
#: resamples them does not decide (:func:`bayeval.bootstrap.compare`).
MIN_CLUSTERS = 10
#: A cluster with fewer tasks than this share of an equal share (``n_tasks / n_clusters``)
#: is too small to weigh as much as the others by default.
SMALL_CLUSTER_SHARE = 0.25


@dataclass(frozen=True)
class ClusterDefault:
    """The default population of a task set (:func:`default_clusters`), and why."""

    clusters: str  # "new" or "observed"
    weighting: str  # "task" or "cluster"
    n_clusters: int  # 0 without clusters
    n_tasks: int
    smallest: str | None  # the smallest cluster's label
    smallest_tasks: int  # its tasks (0 without clusters)
    note: str  # the reason, in words


def _labels(data) -> np.ndarray | None:
    ds = data if isinstance(data, xr.Dataset) else data.dataset
    if "cluster" not in ds.coords:
        return None
    return np.asarray(ds["cluster"].values, dtype=object)


def default_clusters(data) -> ClusterDefault:
    """The population ``estimand="population"`` asks about when ``clusters=`` is not given.

    A new task from a new cluster (``clusters="new"``) where there are at least
    :data:`MIN_CLUSTERS` clusters and every cluster holds at least
    :data:`SMALL_CLUSTER_SHARE` of an equal share of the tasks; otherwise a new task from
    these clusters weighted by their tasks (``clusters="observed", weighting="task"``). Data
    without clusters get ``"observed"`` (there is one population of tasks).

    Parameters
    ----------
    data : EvalData or xarray.Dataset
        The data, or a dataset with the ``cluster`` task coordinate (a fit's observed data).

    Returns
    -------
    ClusterDefault

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.data.clusters import default_clusters
    >>> choice = default_clusters(be.datasets.load("swebench_verified"))
    >>> choice.clusters, choice.weighting, choice.n_clusters, choice.smallest_tasks
    ('observed', 'task', 12, 1)
    """
    labels = _labels(data)
    if labels is None:
        ds = data if isinstance(data, xr.Dataset) else data.dataset
        n = int(ds.sizes["task"])
        return ClusterDefault("observed", "task", 0, n, None, 0, "no task clusters")
    sizes = pd.Series(labels.astype(str)).value_counts()
    n_tasks, n_clusters = int(sizes.sum()), len(sizes)
    smallest, smallest_tasks = str(sizes.index[-1]), int(sizes.iloc[-1])
    equal = n_tasks / n_clusters
    observed = "the default is a new task from these clusters, weighted by their tasks"
    ask = "ask for clusters='new' (--clusters new) for a new cluster"
    if n_clusters < MIN_CLUSTERS:
        note = (
            f"{n_clusters} clusters are too few to learn a new cluster from (fewer than "
            f"{MIN_CLUSTERS}): {observed}; {ask}"
        )
        return ClusterDefault(
            "observed", "task", n_clusters, n_tasks, smallest, smallest_tasks, note
        )
    if smallest_tasks < SMALL_CLUSTER_SHARE * equal:
        small = int((sizes < SMALL_CLUSTER_SHARE * equal).sum())
        note = (
            f"{small} of the {n_clusters} clusters hold fewer than "
            f"{SMALL_CLUSTER_SHARE:.0%} of an equal share of the {n_tasks} tasks "
            f"({smallest!r} holds {smallest_tasks}): weighing clusters equally would let a "
            f"handful of tasks carry a large part of a new cluster's answer; {observed}; {ask}"
        )
        return ClusterDefault(
            "observed", "task", n_clusters, n_tasks, smallest, smallest_tasks, note
        )
    note = (
        f"{n_clusters} clusters, the smallest holding {smallest_tasks} of {n_tasks} tasks: "
        "the default is a new task from a new cluster; clusters='observed' "
        "(--clusters observed) asks about these clusters"
    )
    return ClusterDefault("new", "cluster", n_clusters, n_tasks, smallest, smallest_tasks, note)


def estimand_words(
    estimand: str,
    *,
    clusters: str | None = None,
    weighting: str = "task",
    n_tasks: int,
    n_clusters: int = 0,
) -> str:
    """The estimand, its clusters and its weighting, in the words every output uses.

    Parameters
    ----------
    estimand : {"tasks", "population"}
    clusters : {"new", "observed"}, optional
        The population of a model with cluster effects; ``None`` for a population that does
        not use the clusters (the hierarchical model, the plain task bootstrap).
    weighting : {"task", "cluster"}, default "task"
        How ``clusters="observed"`` averages the clusters.
    n_tasks, n_clusters : int
        The task set's tasks and clusters (0: none).

    Returns
    -------
    str

    Examples
    --------
    >>> from bayeval.data.clusters import estimand_words
    >>> estimand_words("population", clusters="observed", n_tasks=400, n_clusters=3)
    'a new task from these 3 clusters, weighted by their tasks'
    >>> estimand_words("tasks", n_tasks=400)
    'these 400 tasks'
    """
    if estimand == "tasks":
        return f"these {n_tasks} tasks"
    if not n_clusters:
        return f"a new task like these {n_tasks}"
    if clusters is None:
        return f"a new task like these {n_tasks} (the {n_clusters} clusters not modelled)"
    if clusters == "new":
        if weighting == "cluster":
            return "a new task from a new cluster, each cluster weighing the same"
        return "a new task from a new cluster, clusters weighted by their tasks"
    each = "weighted by their tasks" if weighting == "task" else "each weighing the same"
    return f"a new task from these {n_clusters} clusters, {each}"
