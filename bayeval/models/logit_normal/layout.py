"""The logit-normal model's priors, its data's layout and the choice of sampling form.

Priors and their checks, the rules that choose each effect's parametrisation and the form
NUTS samples (:func:`sampling_form`), and the dataset's systems, clusters, strata and
count patterns as integer codes (:class:`Layout`, :func:`task_patterns`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import merge_priors
from bayeval.models._beta_family import Populations, counts_by_bound
from bayeval.models.kernels.quadrature import LOW_TRIALS

DEFAULT_PRIORS = {
    "alpha": (0.0, 2.5),
    "sigma_task": 3.0,
    "sigma_task_system": 1.5,
    "sigma_cluster": 1.5,
    "sigma_cluster_system": 1.0,
    "sigma_system": 1.5,
    "sigma_run": 1.0,
}
SIGMAS = ("sigma_task", "sigma_task_system", "sigma_cluster", "sigma_cluster_system")
#: The default HalfNormal scale of ``sigma_task_system`` where two or more systems have one
#: trial per cell (:func:`one_trial`). There a cell's outcome cannot tell its own deviation
#: from Bernoulli noise, so the overall scale of the task-level spreads is not identified
#: (only the systems' agreement is), and the interval over these tasks narrows as that scale
#: grows: under the former 1.5 two systems' paired tasks effect covered 0.86 where the
#: truth's spread was 0.5 (100 simulations; 0.915 in an independent 434). At 0.5 it covered
#: 0.94-0.98 for true spreads of 0.25 to 1.5 (100 each), and 0.932-0.940 in 400 at 0.5
#: (``benchmarks/results/one_trial_paired*.md``).
ONE_TRIAL_SIGMA_TASK_SYSTEM = 0.5
#: The fewest systems for which the model treats systems as draws from a population of systems.
SYSTEM_LEVEL_MIN = 3


def one_trial(ds: xr.Dataset) -> bool:
    """Whether two or more systems have a median of at most one valid trial per cell.

    Cells without a valid trial do not count.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal.layout import one_trial
    >>> one_trial(be.from_counts([[1, 0, 1], [0, 0, 1]], trials=1).dataset)
    True
    >>> one_trial(be.from_counts([[2, 0, 1], [0, 0, 1]], trials=2).dataset)
    False
    """
    if ds.sizes["system"] < 2:
        return False
    _, n, _ = counts_by_bound(ds)
    valid = n[0][n[0] > 0]
    return bool(valid.size) and float(np.median(valid)) <= 1


def validate_priors(priors) -> dict:
    """Fill defaults and check the priors (a Normal for alpha, HalfNormal scales)."""
    merged = merge_priors(priors, DEFAULT_PRIORS, "logit_normal")
    mean, sd = merged["alpha"]
    if not (np.isfinite(mean) and np.isfinite(sd) and sd > 0):
        raise ValueError(f"prior alpha needs a finite mean and a positive sd; got {(mean, sd)}")
    for name in (*SIGMAS, "sigma_system", "sigma_run"):
        if not (np.isfinite(merged[name]) and merged[name] > 0):
            raise ValueError(f"prior {name} is a HalfNormal scale > 0; got {merged[name]!r}")
    return {
        "alpha": (float(mean), float(sd)),
        **{k: float(merged[k]) for k in (*SIGMAS, "sigma_system", "sigma_run")},
    }


#: How many times their mean squared standard error the spread of the systems' pooled logits
#: must be for the system level to be sampled centred (:func:`system_parametrisation`).
SYSTEM_CENTRED_RATIO = 5.0


def system_parametrisation(ds: xr.Dataset) -> int:
    """How the sampler sees the system level: 0 none, 1 centred, 2 non-centred.

    None with fewer than three systems.

    Centred contrasts suit systems the data tell apart (a leaderboard: the spread of the
    systems' logits is well above each one's standard error); non-centred ones suit systems
    the data cannot tell apart (checkpoints of one run), where the centred form is a funnel.
    The rule compares the spread of the systems' pooled logits with their mean squared
    standard error under each missing-outcome bound: centred where every bound's spread is
    above :data:`SYSTEM_CENTRED_RATIO` times it (every bound gets one form, and the bound
    that tells the systems apart least decides). With few systems ``sigma_system``
    keeps posterior mass near zero even where the data tell the systems apart, and there the
    centred form is a funnel: below the ratio the centred fits diverged and the non-centred
    ones did not (``models/logit_normal.md``, sampling settings).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import system_parametrisation
    >>> system_parametrisation(be.datasets.load("swebench_verified").dataset)
    1
    >>> system_parametrisation(be.datasets.load("swebench_java", missing="fail").dataset)
    2
    >>> system_parametrisation(be.datasets.load("swebench_java", missing="bounds").dataset)
    2
    """
    S = ds.sizes["system"]
    recipes = recipe_codes(ds)
    if recipes is None and S < SYSTEM_LEVEL_MIN:
        return 0
    if recipes is not None and np.bincount(recipes).max() < 2:
        return 0  # no recipe has two runs: no run spread to learn
    c, n, _ = counts_by_bound(ds)
    c, n = c.sum(axis=-1), n.sum(axis=-1)  # (bound, S)
    rate = (c + 0.5) / (n + 1.0)
    logit = np.log(rate / (1 - rate))
    se2 = 1.0 / ((n + 1.0) * rate * (1 - rate))
    if recipes is None:
        spread = logit.var(axis=-1, ddof=1)
    else:  # the runs' spread within their recipes, pooled
        groups = np.bincount(recipes)
        means = np.stack([np.bincount(recipes, row) / groups for row in logit])
        spread = ((logit - means[:, recipes]) ** 2).sum(axis=-1) / (S - len(groups))
    # the bound that tells the systems apart least decides: a bound whose systems sit close
    # together is a funnel when centred (Multi-SWE-bench Java's lower bound, at 2.5 times
    # the squared standard error, diverged 6-35 times a fit while its upper bound sat at 21)
    return 1 if (spread / se2.mean(axis=-1)).min() > SYSTEM_CENTRED_RATIO else 2


#: Trials a cluster holds, per system, on average over the clusters, from which ``fit``
#: samples the cluster effects centred (:func:`cluster_parametrisation`).
CENTRED_CLUSTER_TRIALS = 200


def cluster_parametrisation(ds: xr.Dataset) -> bool:
    """Whether the sampler sees the cluster effects centred rather than non-centred.

    Centred: the effects themselves; non-centred: standard normals times their spread.

    Non-centred suits clusters the data say little about each (a few tasks each: Terminal-
    Bench's 70 families of 80 tasks); centred suits clusters each pinned by many trials, where
    the non-centred coordinates must rescale against a spread that few clusters leave loose
    (LiveCodeBench's 3 platforms, about 1,300 trials of each system apiece). The rule: centred
    when the clusters hold at least :data:`CENTRED_CLUSTER_TRIALS` trials per system on
    average.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import cluster_parametrisation
    >>> few = be.from_counts([[3, 5, 2, 7]], trials=10, clusters=["a", "a", "b", "b"])
    >>> cluster_parametrisation(few.dataset)
    False
    >>> many = be.from_counts([[3, 5] * 20], trials=10, clusters=["a", "b"] * 20)
    >>> cluster_parametrisation(many.dataset)
    True
    """
    _, labels = cluster_codes(ds)
    if labels is None:
        return False
    _, n, _ = counts_by_bound(ds)
    per_system = n.mean(axis=0).sum(axis=-1).mean()  # trials per system, over the tasks
    return bool(per_system / len(labels) >= CENTRED_CLUSTER_TRIALS)


#: Trials a task holds over the systems, on average over the tasks, from which the
#: full-latent form samples the task effects centred (:func:`task_parametrisation`).
CENTRED_TASK_TRIALS = 40


def task_parametrisation(ds: xr.Dataset) -> bool:
    """Whether the full-latent form samples the task effects centred rather than non-centred.

    Centred: the effects' own coordinates, normal with sd ``sigma_task``; non-centred: standard
    normals times ``sigma_task``.

    Non-centred suits task effects the data say little about each, where the centred form is
    a funnel in ``sigma_task``; centred suits effects pinned by many trials (LiveCodeBench's
    432 a task, Terminal-Bench's 65), where the non-centred coordinates must rescale against
    ``sigma_task`` at every move and it mixes slowly. Centred or not, the effects' means over
    each cluster and stratum stay non-centred: the data see them only with the intercepts and
    cluster effects (:func:`bayeval.models.kernels.collapsed.task_reflections`). The rule: centred
    when the tasks hold at least :data:`CENTRED_TASK_TRIALS` trials over the systems on
    average.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import task_parametrisation
    >>> task_parametrisation(be.from_counts([[3, 4], [2, 1]], trials=4).dataset)
    False
    >>> task_parametrisation(be.from_counts([[30, 5], [12, 24]], trials=40).dataset)
    True
    """
    _, n, _ = counts_by_bound(ds)
    per_task = n.mean(axis=0).sum(axis=0).mean()  # trials over the systems, per task
    return bool(per_task >= CENTRED_TASK_TRIALS)


#: The fewest systems for which ``fit`` samples the task-latent form of data with at most
#: ``LOW_TRIALS`` trials a task (:func:`sampling_form`): from about this many systems it is
#: faster than the collapsed form and mixes as well or better (``models/logit_normal.md``, sampling
#: settings).
TASK_LATENT_SYSTEMS = 12

#: With clusters, the fewest tasks a cluster holds on average for which ``fit`` samples the
#: task-latent form (:func:`sampling_form`), whose cluster effects are centred: guided, it
#: did not diverge at this size in simulation and was several times faster than the
#: collapsed form (``models/logit_normal.md``, sampling settings). ``fit`` still samples the
#: collapsed form when a task-latent fit diverges (:data:`REFIT_DIVERGENT_TASK_LATENT`). SWE-bench
#: has 42.
TASK_LATENT_CLUSTER_TASKS = 10


#: The fewest system-task cells in tasks with more than two trials (the adaptive rule's
#: patterns) for which ``fit`` samples the full-latent form of several systems
#: (:func:`sampling_form`).
LATENT_CELLS = 10


def sampling_form(ds: xr.Dataset) -> tuple[str, str]:
    """Which form of the model NUTS samples, and why.

    The form is ``"collapsed"``, ``"full-latent"`` or ``"task-latent"``.

    The collapsed form integrates every task's effects out by quadrature: one integral per
    pattern of counts. With one or two trials per task the patterns repeat (SWE-bench's 25
    systems x 500 tasks), the integrals are cheap and the full-latent form mixes badly (its
    binary outcomes barely inform each latent effect): the collapsed form is 2-3x faster and
    16x faster per effective draw. One system's tasks need no inner integral, and tasks with
    equal counts share one: the collapsed form stays cheap however many trials. Several
    systems with more trials make nearly every task a pattern of its own, which costs a
    nested integral at every gradient, while each latent effect is informed by its trials;
    the full-latent form is one compiled log density (:func:`sample_kernel`), several times
    faster there at every size measured (``models/logit_normal.md``, sampling settings,
    ``sampling_form``). So the full-latent form is sampled for several systems when at least half of
    the tasks have more than two trials for some system and those tasks hold at least
    :data:`LATENT_CELLS` system-task cells (smaller data were not measured); one system and data
    with one or two trials per task keep the collapsed form, whose integrals also remove the funnel
    of few tasks, unless there are at least :data:`TASK_LATENT_SYSTEMS` systems and, with clusters,
    at least :data:`TASK_LATENT_CLUSTER_TASKS` tasks a cluster on average: then each pattern's
    integral multiplies every system's terms at every grid node, and the task-latent form (task
    effects sampled, centred; each cell's task-by-system effect integrated out by the grid's inner
    rule; the intercepts, cluster effects and task effects held over ``kappa = sqrt(1 + (pi / 8)
    sigma_task_system^2)`` as the collapsed form holds them) costs one table read per cell: on the
    25 SWE-bench systems it was faster and diverged less (``models/logit_normal.md``, sampling
    settings, ``sampling_form``). Both forms are the same posterior
    (``benchmarks/logit_normal_agreement.py``) and ``fit`` keeps the same quantities of both.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import sampling_form
    >>> sampling_form(be.datasets.load("swebench_verified").dataset)[0]
    'task-latent'
    >>> swe = be.datasets.load("swebench_verified")
    >>> sampling_form(swe.sel(system=swe.systems[:2]).dataset)[0]
    'collapsed'
    >>> sampling_form(be.datasets.load("terminal_bench", missing="fail").dataset)[0]
    'full-latent'
    """
    _, n, _ = counts_by_bound(ds)
    n = n.max(axis=0)  # (S, J): the most trials over missing-outcome bounds
    multi = (n > LOW_TRIALS).any(axis=0)
    cells = int((n[:, multi] > 0).sum())
    paired = n.shape[0] > 1
    if paired and multi.mean() >= 0.5 and cells >= LATENT_CELLS:
        return "full-latent", (
            f"{int(multi.sum())} of {n.shape[1]} tasks have more than "
            f"{LOW_TRIALS} trials ({cells} system-task cells): the full-latent "
            "form, cheaper than a quadrature per task"
        )
    _, labels = cluster_codes(ds)
    per_cluster = n.shape[1] / (1 if labels is None else len(labels))
    if (
        not multi.any()
        and n.shape[0] >= TASK_LATENT_SYSTEMS
        and per_cluster >= TASK_LATENT_CLUSTER_TASKS
    ):
        return "task-latent", (
            f"{n.shape[0]} systems with at most {LOW_TRIALS} trials a task: "
            "the task-latent form (task effects sampled, each cell's "
            "task-by-system effect integrated out), cheaper than a "
            "quadrature over every system"
        )
    if not multi.any() and n.shape[0] >= TASK_LATENT_SYSTEMS:
        why = (
            f"{per_cluster:.0f} tasks a cluster, under {TASK_LATENT_CLUSTER_TASKS} (fewer "
            "than the task-latent form was simulated with)"
        )
    elif not multi.any():
        why = f"every task has at most {LOW_TRIALS} trials"
    elif not paired:
        why = "one system (no integral over task-by-system effects)"
    else:
        why = (
            f"{int(multi.sum())} of {n.shape[1]} tasks with more than {LOW_TRIALS} trials "
            f"({cells} system-task cells)"
        )
    return "collapsed", f"{why}: the collapsed form (task effects integrated out)"


def cluster_codes(ds: xr.Dataset) -> tuple[np.ndarray, list | None]:
    """Each task's cluster code and the cluster labels.

    The codes are int64, in order of first appearance; zeros and None for data without clusters.
    """
    if "cluster" not in ds.coords:
        return np.zeros(ds.sizes["task"], dtype=np.int64), None
    codes, labels = pd.factorize(np.asarray(ds["cluster"].values, dtype=object))
    return codes.astype(np.int64), labels.tolist()


def recipe_codes(ds: xr.Dataset) -> np.ndarray | None:
    """Each system's recipe code when the systems are training runs, else None.

    Training runs carry a ``recipe`` coordinate on ``system``.
    """
    if "recipe" not in ds.coords:
        return None
    return pd.factorize(np.asarray(ds["recipe"].values, dtype=object))[0].astype(np.int64)


@dataclass(frozen=True)
class Layout:
    """Systems, clusters and strata of a dataset, as integer codes."""

    n_systems: int
    cluster_labels: list | None
    cluster: np.ndarray  # cluster code per task (zeros without clusters)
    pops: Populations
    system_level: int = 0  # 0: no system level; 1 / 2: centred / non-centred contrasts
    recipes: np.ndarray | None = None  # each system's recipe code when systems are runs
    cluster_centred: bool = False  # the sampler sees the cluster effects themselves
    task_centred: bool = False  # full-latent form: the task effects themselves
    cells_integrated: bool = False  # the task-latent form (see sampling_form)

    @property
    def has_clusters(self) -> bool:
        """Whether the tasks are grouped in clusters."""
        return self.cluster_labels is not None

    @property
    def n_clusters(self) -> int:
        """The number of clusters (one without clusters)."""
        return len(self.cluster_labels) if self.cluster_labels is not None else 1

    @property
    def paired(self) -> bool:
        """Whether there are several systems, paired through shared task effects."""
        return self.n_systems > 1

    @classmethod
    def from_dataset(cls, ds: xr.Dataset, form: str | None = None) -> Layout:
        """The layout of ``ds``.

        For the task-latent ``form``, with that form's parametrisation (:func:`coordinates`) instead
        of the data-driven rules.
        """
        codes, labels = cluster_codes(ds)
        if form == "task-latent":  # task effects centred, the cluster effects folded into
            # theirs (the cluster-by-system effects stay non-centred: see coordinates)
            centring = (labels is not None, True, True)
        else:
            centring = (cluster_parametrisation(ds), task_parametrisation(ds), False)
        return cls(
            ds.sizes["system"],
            labels,
            codes,
            Populations.from_dataset(ds),
            system_parametrisation(ds),
            recipe_codes(ds),
            *centring,
        )

    @property
    def level_name(self) -> str:
        """The name of the intercepts' spread.

        ``sigma_run`` between runs of a recipe, ``sigma_system`` between systems.
        """
        return "sigma_run" if self.recipes is not None else "sigma_system"


@dataclass(frozen=True)
class Patterns:
    """Tasks grouped by (cluster, stratum, every system's counts)."""

    cluster: np.ndarray  # (P,)
    stratum: np.ndarray  # (P,)
    c: np.ndarray  # (P, S)
    n: np.ndarray  # (P, S)
    mult: np.ndarray  # (P,) tasks per pattern
    inverse: np.ndarray  # (J,) pattern of each task
    first: np.ndarray  # (P,) one task of each pattern


def task_patterns(c: np.ndarray, n: np.ndarray, layout: Layout) -> Patterns:
    """Group the tasks of ``c``/``n`` (system, task) into patterns sharing one integral."""
    keys = np.concatenate([layout.cluster[:, None], layout.pops.code[:, None], c.T, n.T], 1)
    uniq, first, inverse, mult = np.unique(
        keys, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    S = c.shape[0]
    return Patterns(  # the keys are floats where the counts are (sums of partial-credit scores)
        uniq[:, 0].astype(np.int64),
        uniq[:, 1].astype(np.int64),
        uniq[:, 2 : 2 + S].astype(float),
        uniq[:, 2 + S :].astype(float),
        mult,
        inverse.ravel(),
        first,
    )
