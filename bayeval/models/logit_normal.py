r"""Logit-normal random effects for clustered tasks and paired systems: ``logit_normal``.

Model (system s, task j in cluster g = g(j) and stratum h = h(j))::

    logit p[s, j] = alpha[s, h] + u[g] + w[s, g] + e[j] + v[s, j]
    c[s, j]      ~ Binomial(n[s, j], p[s, j])

    alpha[s, h] ~ Normal(mu[h], sigma_system)   system (by stratum) intercepts, 3+ systems
    mu[h]       ~ Normal(0, 2.5)                    (two or fewer: alpha[s, h] ~ Normal(0, 2.5))
    u[g]        ~ Normal(0, sigma_cluster)            cluster effect, shared by the systems
    w[s, g]     ~ Normal(0, sigma_cluster_system)     a system's advantage may differ by cluster
    e[j]        ~ Normal(0, sigma_task)               task effect, shared: comparisons are paired
    v[s, j]     ~ Normal(0, sigma_task_system)        task-by-system effect
    sigma_task ~ HalfNormal(3), sigma_task_system ~ HalfNormal(1.5),
    sigma_cluster ~ HalfNormal(1.5), sigma_cluster_system ~ HalfNormal(1),
    sigma_system ~ HalfNormal(1.5)

The system level treats three or more systems as draws from a population of systems (the
checkpoints of one run, a leaderboard's entries: exchangeable before the data), so the
intercepts are partially pooled. That is what makes the winner's curse correctable: the
observed best of m equally good checkpoints is shrunk back towards the others
(:meth:`bayeval.Results.winner`). ``mu`` is integrated out in closed form; the contrasts
between systems are sampled centred when the data tell the systems apart and non-centred when
they do not (:func:`system_parametrisation`). With two systems the level is left out: two
draws say next to nothing about a spread, and the prior on each intercept stays Normal(0, 2.5).

``u`` and ``w`` are non-centred (``u = sigma_cluster * z``). One system drops ``w`` and ``v``;
data without clusters drop ``u`` and ``w``. The task-level spreads get wide priors because
evaluation task sets are often U-shaped: on the logit scale their task effects spread by 3 or
more (Beta(0.4, 0.3) rates have a logit standard deviation near 4).

Collapsed inference. The task-level effects ``e[j]`` and ``v[s, j]`` are integrated out task by
task with nested adaptive Gauss-Hermite quadrature (:mod:`bayeval.models.kernels`), centred
and scaled at each pattern's mode; tasks of the same cluster and stratum with identical counts
for every system share one integral (two single-attempt systems have at most four patterns
per cluster). The sampler sees only the intercepts, the cluster-level effects and the four
spreads. ``marginal=False`` builds the full-latent form: written with PyMC distributions it
verifies the collapsed one; as one compiled log density (``kernel=True``,
:func:`sample_kernel`) ``fit`` samples it instead for several systems where most tasks have
several trials (:func:`sampling_form`), since nearly every such task is a pattern of its own
and a nested integral per task per gradient costs more than sampling its effects. Many
systems with one or two trials a task take a third, task-latent form: the task effects are
sampled and each system-task cell's effect ``v[s, j]`` is integrated out alone (the grid's
inner rule, tabulated in the linear predictor), which costs one table read per cell where
the collapsed form multiplies every system's terms at every node of every pattern. Both
latent fits keep their task effects' draws, from which the tasks estimand is read.

Estimands (f is the metric of a rate: pass@k, pass^k, G-pass@k or consistency):

* ``population`` with ``clusters="new"``: a new task from a new cluster,
  ``E f(expit(alpha + s Z))`` with ``s^2`` the sum of the four variances;
* ``population`` with ``clusters="observed"``: a new task in one of the observed clusters,
  ``E f(expit(alpha + u[g] + w[s, g] + sqrt(sigma_task^2 + sigma_task_system^2) Z))``,
  averaged over clusters by their task counts (``weighting="task"``) or equally
  (``weighting="cluster"``);
* ``tasks``: the mean of f(p[s, j]) over these tasks. Given the cluster-level parameters,
  tasks are independent. Per draw, each task's rates in all systems are drawn jointly from
  their conditional: the shared task effect from its marginal (log-concave; read from the
  likelihood kernel's tables of inner integrals, drawn by adaptive rejection sampling), then
  each system's task-by-system effect given it (exactly: rejection from its prior tilted by
  the log-likelihood's tangent, which keeps nearly every proposal for single trials, or from
  the likelihood itself where it is narrow against the spread, else adaptive rejection
  sampling), so the pairing between systems is kept
  and no normal approximation enters, however few the tasks. Tasks
  with identical counts (a pattern) of more than ``EXACT_TASKS`` (100) are summed through the
  normal of their conditional moments from the quadrature instead (the sum of many independent
  bounded terms), as the Beta models do. A full-latent fit has sampled the task effects with
  the parameters: each task's effect is read from those draws and only the task-by-system
  effects are drawn, exactly, given it.

Paired comparisons: systems share ``u`` and ``e``, so the posterior of ``alpha[B] - alpha[A]``
is informed by within-task differences, and the tasks-estimand effect uses the cross-system
covariances.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import sys
import threading
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special

from bayeval._validate import merge_priors
from bayeval.estimators import clip_probability, success_threshold
from bayeval.models import base
from bayeval.models._beta_family import BetaRates, Populations, counts_by_bound, task_weights
from bayeval.models.kernels.cells import CELL_TABLE_NODES, CELL_TABLE_TRIALS, cell_tables
from bayeval.models.kernels.collapsed import (
    CollapsedLogp,
    Coordinates,
    block_rotation,
    cluster_pair_map,
    cluster_system_guide,
    reflect,
    task_cluster_fold,
    task_reflections,
)
from bayeval.models.kernels.exact import (
    EXACT_TASKS,
    exact_task_rates,
    exact_task_sums,
    latent_task_draws,
)
from bayeval.models.kernels.moments import grid_expectations, task_sums
from bayeval.models.kernels.quadrature import LOW_TRIALS, N_NODES, Rules

__all__ = ["build_logit_normal_model", "DEFAULT_PRIORS"]

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
#: The fewest systems for which the model treats systems as draws from a population of systems.
SYSTEM_LEVEL_MIN = 3
#: Sizes of the trapezoid grids over [-8, 8] for population expectations over a standard
#: normal (:func:`normal_expectation`): each expectation takes the smallest whose step is at
#: most ``min(0.4, 0.45 / scale)``
_GRID_SIZES = np.array([33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049])


@functools.cache
def _normal_grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``size`` nodes of a trapezoid grid over [-8, 8].

    With their weights under the standard normal density.
    """
    z = np.linspace(-8.0, 8.0, size)
    return z, np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi) * (z[1] - z[0])


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
    standard error (averaged over the missing-outcome bounds, so every bound gets one form):
    centred above :data:`SYSTEM_CENTRED_RATIO` times it. With few systems ``sigma_system``
    keeps posterior mass near zero even where the data tell the systems apart, and there the
    centred form is a funnel: Multi-SWE-bench Java (5 systems, ratio 2.5) diverged 10-91 times
    in three fits centred and never non-centred (4 chains x 1000 draws; divergent draws at
    ``sigma_system`` 0.22 against a median of 1.23). The first 5 and 8 SWE-bench systems
    (ratios 3.4, 3.8) diverged 0-2 times centred and never non-centred; LangChain (9 systems,
    7.2) and the leaderboards (Terminal-Bench 38, SWE-bench 81, LiveCodeBench 160) stay
    centred: ``benchmarks/results/fit_speed_logit_normal.txt``.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import system_parametrisation
    >>> system_parametrisation(be.datasets.load("swebench_verified").dataset)
    1
    >>> system_parametrisation(be.datasets.load("swebench_java", missing="fail").dataset)
    2
    """
    S = ds.sizes["system"]
    recipes = recipe_codes(ds)
    if recipes is None and S < SYSTEM_LEVEL_MIN:
        return 0
    if recipes is not None and np.bincount(recipes).max() < 2:
        return 0  # no recipe has two runs: no run spread to learn
    c, n, _ = counts_by_bound(ds)
    c, n = c.mean(axis=0).sum(axis=-1), n.mean(axis=0).sum(axis=-1)  # (S,)
    rate = (c + 0.5) / (n + 1.0)
    logit = np.log(rate / (1 - rate))
    se2 = 1.0 / ((n + 1.0) * rate * (1 - rate))
    if recipes is None:
        spread = logit.var(ddof=1)
    else:  # the runs' spread within their recipes, pooled
        groups = np.bincount(recipes)
        means = np.bincount(recipes, logit) / groups
        spread = ((logit - means[recipes]) ** 2).sum() / (S - len(groups))
    return 1 if spread > SYSTEM_CENTRED_RATIO * se2.mean() else 2


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
#: ``LOW_TRIALS`` trials a task (:func:`sampling_form`). Measured on the first S SWE-bench
#: systems (4 chains x 1000 draws, 2 cores, seeds 1-2): at 8 the collapsed form took 23.6 s
#: (bulk ESS 1045) against 26 s (653-769) at target acceptance 0.8; at 12 it took 60 s (598)
#: against 37-41 s (757-807) at 0.9; at 16, 56 s with 39 divergences against 37 s (all
#: before the table reads were written out in one loop, which took a third off a gradient).
TASK_LATENT_SYSTEMS = 12

#: With clusters, the fewest tasks a cluster holds on average for which ``fit`` samples the
#: task-latent form (:func:`sampling_form`), whose cluster effects are centred. Simulated
#: (12 systems, one trial a task, cluster sd 0.7, 2 chains x 500 draws;
#: ``benchmarks/results/task_latent_coverage.txt``): before the form's coordinates were guided
#: (:func:`bayeval.models.kernels.guide._unguide`), with 10 tasks a cluster 19 of 60 fits
#: diverged, one with a chain stuck at ``sigma_cluster`` 0.03 (bulk ESS 3), and with 40 a
#: cluster 8 of 40 (one stuck); guided, none of 40 diverged in either (smallest bulk ESS 105
#: and 110 at worst), and fits of 12 x 100 in 10 clusters took 2.0-2.7 s against the
#: collapsed form's 9.3-9.8 s (4 chains x 1000 draws). Fewer tasks a cluster were not
#: simulated at that scale (2 a cluster, two fits: 8.2-8.5 s against 36-38 s, no
#: divergences). ``fit`` still samples the collapsed form when a task-latent fit diverges
#: (:data:`REFIT_DIVERGENT_TASK_LATENT`). SWE-bench has 42.
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
    the full-latent form is one compiled log density (:func:`sample_kernel`). Measured
    (4 chains x 1000 draws, 2 cores, ``benchmarks/results/sampling_form.txt``): Terminal-Bench
    (13 x 80 x 5) full-latent 14 s against collapsed 245 s; a three-system clustered toy
    (3 x 48 x 4) 4-5 s against 76-85 s, with 7-12x less time per effective draw; two systems
    x 50 tasks x 4 trials 3-4 s against 26-30 s; two systems x 10 tasks x 32 trials 1 s
    against 7-8 s; two systems x 5 tasks x 8 trials 2 s against 12-16 s, with fewer
    divergences. So the full-latent form is sampled for several systems when at least half of
    the tasks have more than two trials for some system and those tasks hold at least
    :data:`LATENT_CELLS` system-task cells (smaller data were not measured); one system and
    data with one or two trials per task keep the collapsed form, whose integrals also remove
    the funnel of few tasks, unless there are at least :data:`TASK_LATENT_SYSTEMS` systems
    and, with clusters, at least :data:`TASK_LATENT_CLUSTER_TASKS` tasks a cluster on average:
    then each pattern's integral multiplies every system's terms at every grid node, and the
    task-latent form (task effects sampled, centred; each cell's task-by-system effect
    integrated out by the grid's inner rule; the intercepts, cluster effects and task
    effects held over ``kappa = sqrt(1 + (pi / 8) sigma_task_system^2)`` as the collapsed
    form holds them) costs one table read per cell. On the 25 SWE-bench systems
    (``benchmarks/results/fit_speed_logit_normal.txt``) a fit took 21.3 s against 55.3 s in
    one run, with no divergences against 2 and a smallest bulk ESS of 575 against 533.
    Both forms are the same posterior (``benchmarks/logit_normal_agreement.py``) and ``fit``
    keeps the same quantities of both.

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
        return self.cluster_labels is not None

    @property
    def n_clusters(self) -> int:
        """The number of clusters (one without clusters)."""
        return len(self.cluster_labels) if self.cluster_labels is not None else 1

    @property
    def paired(self) -> bool:
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
    return Patterns(
        uniq[:, 0],
        uniq[:, 1],
        uniq[:, 2 : 2 + S].astype(float),
        uniq[:, 2 + S :].astype(float),
        mult,
        inverse.ravel(),
        first,
    )


def build_logit_normal_model(
    data,
    priors=None,
    marginal: bool = True,
    missing_bound=None,
    n_nodes: int = N_NODES,
    kernel: bool = False,
) -> pm.Model:
    """Build the logit-normal random-effects model as a PyMC model.

    Parameters
    ----------
    data : EvalData
    priors : dict, optional
        ``{"alpha": (mean, sd), "sigma_task": scale, ...}``; see :data:`DEFAULT_PRIORS`.
    marginal : bool, default True
        Integrate the task-level effects out by adaptive quadrature (the form the fit
        samples): the model is then one flat vector ``theta`` and one potential, and
        :func:`collapsed_posterior` turns draws of ``theta`` into the named quantities.
        ``False`` keeps the task effects as latent variables (``task_effect_z``,
        ``task_system_effect_z``) and writes the model with PyMC distributions.
    kernel : bool, default False
        With ``marginal=False``: write the full-latent form as one compiled log density
        instead, the density ``fit`` samples (:func:`sample_kernel`): ``theta`` holds the
        collapsed model's coordinates followed by the standardised task and task-by-system
        effects.
    missing_bound : {"lower", "upper"}, optional
        Which extreme to model when the data use ``missing="bounds"``.
    n_nodes : int, default 9
        Gauss-Hermite nodes per dimension.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models import build_logit_normal_model
    >>> data = be.from_counts([[1, 0, 1, 1], [1, 1, 0, 1]], trials=1, systems=["A", "B"],
    ...                       clusters=["x", "x", "y", "y"])
    >>> model = build_logit_normal_model(data)
    >>> model.initial_point()["theta"].size  # 4 spreads, 6 cluster effects, 2 intercepts
    12
    >>> latent = build_logit_normal_model(data, marginal=False)
    >>> sorted(latent.named_vars_to_dims["cluster_system_effect"])
    ['cluster', 'system']
    """
    priors = validate_priors(priors)
    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    index = 0
    if bounds is not None:
        if missing_bound not in bounds:
            raise ValueError(f"data use missing='bounds': choose missing_bound= in {bounds}")
        index = bounds.index(missing_bound)
    c, n = c[index], n[index]
    layout = Layout.from_dataset(ds)
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    alpha_dims: tuple[str, ...] = ("system",)
    if layout.pops.strata is not None:
        coords["stratum"] = layout.pops.strata
        alpha_dims = ("system", "stratum")
    if layout.has_clusters:
        coords["cluster"] = layout.cluster_labels
    if marginal:
        return _collapsed_model(c, n, layout, priors, coords, n_nodes)
    if kernel:
        return _latent_kernel_model(c, n, layout, priors, coords, n_nodes)
    S = layout.n_systems
    with pm.Model(coords=coords) as model:
        sigma_task = pm.HalfNormal("sigma_task", priors["sigma_task"])
        sigma_v = (
            pm.HalfNormal("sigma_task_system", priors["sigma_task_system"])
            if layout.paired
            else None
        )
        identified, zero_sum = _intercepts_and_cluster_effects(priors, layout, alpha_dims, S)
        logit_p = identified[:, layout.pops.code] + zero_sum[:, layout.cluster]  # (S, J)
        z_e = pm.Normal("task_effect_z", 0.0, 1.0, dims="task")
        logit_p = logit_p + (sigma_task * z_e)[None, :]
        if layout.paired:
            z_v = pm.Normal("task_system_effect_z", 0.0, 1.0, dims=("system", "task"))
            logit_p = logit_p + sigma_v * z_v
        pm.Binomial("y", n=n, logit_p=logit_p, observed=c, dims=("system", "task"))
    return model


#: Whether the collapsed form holds its intercepts, cluster effects and their spreads on the
#: scale of the task-level effects' attenuation ``kappa = sqrt(1 + (pi / 8)(sigma_task^2 +
#: sigma_task_system^2))`` (:func:`bayeval.models.kernels.coordinates._attenuation`): the data pin
#: each system's rate near ``expit(alpha / kappa)``, so held plainly the intercepts move with
#: the spreads along a curved ridge. On the 25 SWE-bench systems (4 chains x 1000 draws,
#: seeds 0-2) the intercepts' smallest bulk ESS went from 788-1869 to 2474-3203,
#: sigma_task's from 287-844 to 1232-1433 and the divergences from 16, 1, 27 to 3, 2, 1
#: (benchmarks/results/fit_speed_logit_normal.txt). The full-latent form, whose task
#: effects are sampled, keeps them plain.
ATTENUATED_INTERCEPTS = True


#: Whether the collapsed form shifts its intercepts by the cluster effects' zero-sum parts'
#: means weighted by the clusters' tasks, the level the data see
#: (:func:`bayeval.models.kernels.coordinates._level_weights`; recorded in
#: ``attrs["intercept_level"]``). Clusters of equal size need no shift; the full-latent form
#: keeps the level unweighted.
WEIGHTED_LEVEL = True


#: Whether the full-latent form samples each cluster's pairs rotated onto the sums the data
#: see (:func:`bayeval.models.kernels.pairs._unpair`: the cluster effect with its tasks' mean
#: effect, the sum centred where the task effects are; each system's cluster-by-system effect
#: with its task-by-system effects' mean, standardised) and the spreads of each pair in polar
#: coordinates (:func:`bayeval.models.kernels.pairs._from_polar`), where its cluster effects are
#: not centred (few tasks a cluster) and, with centred task effects, no stratum spans two
#: clusters. Terminal-Bench (70 families of 80 tasks; be.fit defaults): its 13 systems (seeds
#: 1-8) smallest bulk ESS 523-619 and largest r-hat 1.006-1.012, against 82-135 and
#: 1.023-1.048 (seeds 1-2) without, in 24-28 s against 21-22 s; its first two systems (seeds
#: 0-3) 441-797 and 1.005-1.014, against 91-121 and 1.026-1.049 (seeds 0-1), 12-14 s either
#: way (``benchmarks/results/fit_speed_logit_normal.txt``).
ROTATED_CLUSTER_PAIRS = True

#: Cells from which the full-latent form integrates them over their task-by-system effects
#: (bicubic tables in ``y`` and ``log sigma_v`` per pair of counts ``(c, n)``, the mirrored
#: ``(n - c, n)`` read at ``-y``: :func:`bayeval.models.kernels.cells.cell_tables`) instead of
#: sampling those effects; the cells of counts without a table (beyond the
#: :data:`CELL_TABLES` most common) keep theirs. Not with the cluster pairs rotated
#: (:data:`ROTATED_CLUSTER_PAIRS`), whose map reads every cell's effect. LiveCodeBench (45 x
#: 400 x 10 samples, 18,000 cells; 15,813 with no success or all): with its one-sided cells
#: integrated a fit took 157-160 leapfrog steps a draw; with every cell integrated (seven
#: tables), 31 (``benchmarks/results/fit_speed_logit_normal.txt``).
TABLED_CELLS = 2000
#: At most this many tables (one per pair of counts, the most common first): each is 12.5
#: MB and 0.2-0.5 s to build on two cores (LiveCodeBench's seven: 2.2 s), then kept for later
#: fits (:data:`TABLE_CACHE`).
CELL_TABLES = 12
#: Tables kept in this process for later fits (by counts).
TABLE_CACHE = 16
_tables: collections.OrderedDict = collections.OrderedDict()
_tables_lock = threading.Lock()  # fits in several threads share the kept tables


def coordinates(layout: Layout, latent_tasks: int = 0) -> Coordinates:
    """The collapsed model's parameter coordinates for a layout.

    With ``latent_tasks`` = J, those of the compiled full-latent form, or with
    ``layout.cells_integrated`` of the task-latent form: attenuated and task-weighted like the
    collapsed form, the task effects centred, the cluster-by-system effects non-centred.
    """
    G = layout.n_clusters
    blocks = () if layout.recipes is None else tuple(layout.recipes.tolist())
    integrated = layout.cells_integrated and latent_tasks > 0 and layout.paired
    like_collapsed = latent_tasks == 0 or integrated
    weights = ()
    share = np.bincount(layout.cluster, minlength=G) / len(layout.cluster)
    if WEIGHTED_LEVEL and like_collapsed and np.ptp(share) > 0:  # equal shares: no shift
        weights = tuple(share.tolist())
    task_centred = layout.task_centred and latent_tasks > 0
    rank = 0
    if task_centred:
        rank = int(task_reflections(layout.cluster, layout.pops.code)[0])
    fold = folds_clusters(layout) and latent_tasks > 0
    pairs = (
        ROTATED_CLUSTER_PAIRS
        and latent_tasks > 0
        and layout.has_clusters
        and not fold
        and not integrated
        and not layout.cluster_centred
        and (rank == G or not task_centred)
    )
    return Coordinates(
        layout.n_systems,
        layout.pops.n,
        G,
        layout.has_clusters,
        layout.paired,
        layout.system_level,
        blocks,
        latent_tasks,
        layout.cluster_centred,
        not integrated,
        task_centred,
        fold,
        ATTENUATED_INTERCEPTS and like_collapsed,
        weights,
        integrated,
        rank,
        pairs,
    )


def folds_clusters(layout: Layout) -> bool:
    """Whether the full-latent form folds the task effects' cluster components into clusters.

    Into the cluster coordinates: where both are centred, with two or more clusters
    (:func:`bayeval.models.kernels.collapsed.task_cluster_fold`).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import Layout, folds_clusters
    >>> data = be.from_counts([[30, 5] * 20, [12, 24] * 20], trials=40,
    ...                       clusters=["a", "b"] * 20)
    >>> folds_clusters(Layout.from_dataset(data.dataset))  # 800 trials a cluster, 80 a task
    True
    """
    return bool(layout.task_centred and layout.cluster_centred and layout.n_clusters > 1)


def _task_constants(layout: Layout, fold: bool) -> tuple[np.ndarray, np.ndarray]:
    """The centred task effects' reflections (:func:`task_reflections`) and the fold map.

    With ``fold``, the map of their cluster components into the cluster coordinates
    (:func:`task_cluster_fold`); an empty ``(0, 0)`` array without.
    """
    reflections = task_reflections(layout.cluster, layout.pops.code)
    fold_map = (
        task_cluster_fold(layout.cluster, layout.pops.code, reflections)
        if fold
        else np.zeros((0, 0))
    )
    return reflections, fold_map


#: The names of the compiled kernel's data (``pm.Data`` in a PyMC model of either form).
COLLAPSED_DATA = ("spec", "const", "index", "c", "n", "mult")


def _collapsed_inputs(c, n, layout: Layout, priors: dict, n_nodes: int) -> tuple[Coordinates, dict]:
    """The collapsed form's coordinates and data (:data:`COLLAPSED_DATA`).

    The layout of ``theta``, the priors and the count patterns.
    """
    coord = coordinates(layout)
    rules = Rules(n_nodes)
    pat = task_patterns(c, n, layout)
    index = np.ascontiguousarray(np.stack([pat.cluster, pat.stratum]).astype(np.int64))
    values = (
        coord.spec(rules),
        coord.constants(priors, rules),
        index,
        np.ascontiguousarray(pat.c),
        np.ascontiguousarray(pat.n),
        pat.mult.astype(float),
    )
    return coord, dict(zip(COLLAPSED_DATA, values, strict=True))


def _latent_inputs(c, n, layout: Layout, priors: dict, n_nodes: int) -> tuple[Coordinates, dict]:
    """The compiled full-latent form's coordinates and data (:data:`COLLAPSED_DATA`).

    The collapsed model's kernel with the tasks as its patterns, one each in task order, and their
    effects at the end of ``theta`` (:func:`bayeval.models.kernels.cells._latent_cells`).
    """
    S, J = c.shape
    coord = coordinates(layout, latent_tasks=J)
    if coord.cells_integrated and np.max(n) > LOW_TRIALS:  # its tables hold low counts only
        raise ValueError(
            f"the task-latent form takes at most {LOW_TRIALS} trials a cell; "
            f"these data have up to {int(np.max(n))}"
        )
    rules = Rules(n_nodes)
    index = np.ascontiguousarray(np.stack([layout.cluster, layout.pops.code]).astype(np.int64))
    extra = np.zeros(0)
    fold_map = np.zeros((0, 0))
    if coord.task_centred:
        reflections, fold_map = _task_constants(layout, coord.task_fold)
        extra = np.concatenate([reflections, fold_map.ravel()])
        if coord.cluster_pairs:  # chosen only where the reflections span the clusters
            pair_map = cluster_pair_map(layout.cluster, reflections)
            if pair_map is None:
                raise RuntimeError(
                    "cluster pairs need task reflections that span the clusters alone"
                )
            extra = np.concatenate([extra, pair_map.ravel()])
    guided = 0
    if guides_task_means(coord):  # the eigenbasis of F'F, F the fold map
        eigenvalues, eigenvectors = np.linalg.eigh(fold_map.T @ fold_map)
        extra = np.concatenate([extra, eigenvectors.ravel(), np.maximum(eigenvalues, 0.0)])
        guided += 2
    if guides_cluster_system(coord):
        extra = np.concatenate(
            [
                extra,
                cluster_system_guide(c, n, layout.cluster, layout.pops.code, coord.level_weights),
            ]
        )
        guided += 1
    coord = dataclasses.replace(coord, guided=guided)
    tabled = _tabled_cells(c, n, coord)
    if tabled is not None:
        cells, counts = tabled
        coord = dataclasses.replace(
            coord,
            cell_tables=tuple(map(tuple, counts.tolist())),
            sampled_cells=int(((n > 0) & ~cells).sum()),
        )
        tables = _cell_table_stack(counts)
        extra = np.concatenate([extra, tables.ravel(), counts.ravel(), [len(counts)]])
    const = coord.constants(priors, rules, extra)
    values = (
        coord.spec(rules),
        const,
        index,
        np.ascontiguousarray(c.T, dtype=float),
        np.ascontiguousarray(n.T, dtype=float),
        np.ones(J),
    )
    return coord, dict(zip(COLLAPSED_DATA, values, strict=True))


#: Whether the task-latent form samples its cluster-by-system coordinates guided by the
#: data's score and information at zero effects (:func:`bayeval.models.kernels.guide._unguide`,
#: :func:`bayeval.models.kernels.collapsed.cluster_system_guide`).
GUIDED_CLUSTER_SYSTEM = True


def guides_cluster_system(coord) -> bool:
    """Whether the form of ``coord`` holds its cluster-by-system coordinates guided.

    See :data:`GUIDED_CLUSTER_SYSTEM`: the task-latent form, with clusters and several systems.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import Layout, coordinates, guides_cluster_system
    >>> ds = be.datasets.load("swebench_verified").dataset
    >>> guides_cluster_system(coordinates(Layout.from_dataset(ds, "task-latent"), 500))
    True
    >>> guides_cluster_system(coordinates(Layout.from_dataset(ds)))  # the collapsed form
    False
    """
    return bool(
        GUIDED_CLUSTER_SYSTEM
        and coord.cells_integrated
        and coord.clusters
        and coord.paired
        and coord.G > 1
        and not coord.w_centred
    )


#: Whether the task-latent form samples its task effects' cluster means guided by their
#: conditional given the folded cluster coordinates and the spreads
#: (:func:`bayeval.models.kernels.guide._unguide`).
GUIDED_TASK_MEANS = True


def guides_task_means(coord) -> bool:
    """Whether the form of ``coord`` holds its task effects' cluster means guided.

    See :data:`GUIDED_TASK_MEANS`: the task-latent form, its cluster components folded.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import Layout, coordinates, guides_task_means
    >>> ds = be.datasets.load("swebench_verified").dataset
    >>> guides_task_means(coordinates(Layout.from_dataset(ds, "task-latent"), 500))
    True
    """
    return bool(GUIDED_TASK_MEANS and coord.cells_integrated and coord.task_fold and coord.G > 1)


def _tabled_cells(c, n, coord) -> tuple[np.ndarray, np.ndarray] | None:
    """The cells ``(S, J)`` the full-latent form integrates, and their tables' counts ``(T, 2)``.

    The cells are integrated over their task-by-system effects; the tables' rows are ``(c, n)`` with
    ``c <= n - c`` (the :data:`CELL_TABLES` most common of at most ``CELL_TABLE_TRIALS`` trials,
    ties to the fewer trials; at least :data:`TABLED_CELLS` cells), or None where it samples every
    cell's.
    """
    if not coord.paired or coord.cells_integrated or coord.cluster_pairs:
        return None
    run = (n > 0) & (n <= CELL_TABLE_TRIALS)
    low = np.minimum(c, n - c)
    pairs, size = np.unique(np.stack([low[run], n[run]], axis=1), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -size))[:CELL_TABLES]
    counts = pairs[np.sort(order)].astype(float)
    base = np.max(n) + 1  # a pair's code: c base + n
    cells = run & np.isin(low * base + n, counts[:, 0] * base + counts[:, 1])
    if cells.sum() < TABLED_CELLS:
        return None
    return cells, counts


def _cell_table_stack(counts) -> np.ndarray:
    """The tables of ``counts (T, 2)``, those built earlier in this process taken from a cache.

    Built by :func:`bayeval.models.kernels.cells.cell_tables`, by the rule of ``CELL_TABLE_NODES``;
    those built for an earlier fit in this process are taken from :data:`TABLE_CACHE`.
    """
    keys = [(float(cq), float(nq)) for cq, nq in counts]
    with _tables_lock:
        missing = [i for i, key in enumerate(keys) if key not in _tables]
        if missing:
            rule = Rules(CELL_TABLE_NODES)
            built = cell_tables(np.ascontiguousarray(counts[missing]), rule.x, rule.logw)
            for i, table in zip(missing, built, strict=True):
                _tables[keys[i]] = table
        stack = np.stack([_tables[key] for key in keys])
        for key in keys:
            _tables.move_to_end(key)
        while len(_tables) > max(TABLE_CACHE, len(keys)):
            _tables.popitem(last=False)
    return stack


def integrates_cells(ds: xr.Dataset) -> bool:
    """Whether the full-latent form integrates cells of ``ds`` over their task-by-system effects.

    Cells of either missing-outcome bound (:data:`TABLED_CELLS`).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.logit_normal import integrates_cells
    >>> integrates_cells(be.datasets.load("livecodebench").dataset)  # 18,000 cells
    True
    >>> integrates_cells(be.datasets.load("terminal_bench", missing="fail").dataset)
    False
    """
    c, n, _ = counts_by_bound(ds)
    coord = coordinates(Layout.from_dataset(ds), latent_tasks=ds.sizes["task"])
    return any(_tabled_cells(cb, nb, coord) is not None for cb, nb in zip(c, n, strict=True))


def _kernel_model(coord, values: dict, coords: dict):
    """A PyMC model of one flat vector ``theta`` and one potential, the compiled kernel.

    The kernel is that of :mod:`bayeval.models.kernels.collapsed`, with the kernel's data as
    ``pm.Data``: for its log density, checks and PyMC's own samplers (``fit`` samples it with
    :func:`sample_kernel`).
    """
    with pm.Model(coords=coords) as model:
        inputs = [pm.Data(name, value) for name, value in values.items()]
        theta = pm.Flat("theta", shape=coord.size)
        logp = CollapsedLogp().make_node(theta, *inputs).outputs[0]  # the log density
        pm.Potential("log_density", logp)
    return model


def _collapsed_model(c, n, layout: Layout, priors: dict, coords: dict, n_nodes: int):
    """The collapsed form as a PyMC model (:func:`_kernel_model`)."""
    return _kernel_model(*_collapsed_inputs(c, n, layout, priors, n_nodes), coords)


def _latent_kernel_model(c, n, layout: Layout, priors: dict, coords: dict, n_nodes: int):
    """The compiled full-latent form as a PyMC model (:func:`_kernel_model`)."""
    return _kernel_model(*_latent_inputs(c, n, layout, priors, n_nodes), coords)


#: The forms whose fits sample the task effects (and keep them per draw).
LATENT_FORMS = ("full-latent", "task-latent")
#: What a full-latent fit keeps per draw (not its task-by-system effects).
LATENT_KEPT = ("hyper", "task_effect")
#: NUTS target acceptance where the variance components' funnels make divergences: the
#: full-latent form, and the collapsed form on fewer than :data:`FEW_TASKS` tasks. At
#: nutpie's default 0.8, two systems x 10 tasks x 2 trials in 3 clusters (collapsed) diverged
#: in 3 of 6 seeds and Terminal-Bench (full-latent) in one chain of one of 4 seeds (94), none
#: at 0.9, in about the same time (4 chains x 1000 draws, 2 cores: Terminal-Bench 13.6-14.9 s
#: against 14.1-17.7, min bulk ESS 52-98 against 14-43; LiveCodeBench 111 s against 107 on
#: one seed). On the SWE-bench pair (collapsed, 500 tasks, no divergences either way) 0.9
#: cost a third of the ESS (429-1058 against 678-1304 over six seeds): larger data keep 0.8.
#: The task-latent form takes 0.9 too: at 0.8 the first 12 SWE-bench systems diverged 48
#: times (seed 1, bulk ESS 168); at 0.9 none on two seeds (757-807), and all 25 systems
#: none (515-549, against 0 and 308 at 0.8 in 45 s instead of 59-65 s; measured before the
#: table reads were written out in one loop).
TARGET_ACCEPT = 0.9
#: Below this many tasks the collapsed form is sampled at :data:`TARGET_ACCEPT` (a cut
#: between the sizes measured, 10 and 500 tasks; a fit this small takes seconds).
FEW_TASKS = 50


def target_accept(form: str, n_tasks: int) -> float:
    """NUTS target acceptance for a fit of ``form`` on ``n_tasks`` tasks.

    :data:`TARGET_ACCEPT`, else nutpie's default 0.8.

    Examples
    --------
    >>> from bayeval.models.logit_normal import target_accept
    >>> target_accept("collapsed", 500), target_accept("collapsed", 10)
    (0.8, 0.9)
    >>> target_accept("full-latent", 400)
    0.9
    """
    return TARGET_ACCEPT if form in LATENT_FORMS or n_tasks < FEW_TASKS else 0.8


def sample_kernel(
    data,
    priors: dict,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    progress: bool,
    cores: int,
    form: str = "collapsed",
    missing_bound=None,
    n_nodes: int = N_NODES,
):
    """NUTS (nutpie) on the compiled log density of ``form``; returns nutpie's DataTree.

    Its posterior holds ``theta`` (collapsed) or ``hyper`` (the coordinates
    :func:`collapsed_posterior` reads) and ``task_effect (chain, draw, task)`` (full-latent).

    The kernel is numba's, compiled once per machine (cached on disk), and nutpie calls it as
    a C function from its threads (:mod:`bayeval.models.kernels.nutpie_model`): nothing is built or
    compiled per fit or per process, the chains run on every core, and only
    :data:`LATENT_KEPT` is kept per draw of the full-latent form, whose vector has a
    coordinate per system and task (a PyMC model would keep them all: 1.2 GB over a default
    fit of LiveCodeBench's 45 x 400 x 10). The start is the flat prior's support point, zero,
    jittered by U(-1, 1) per coordinate, as nutpie does for PyMC models.
    """
    import nutpie  # its import takes seconds: loaded when a fit samples with it

    from bayeval.models.kernels import nutpie_model  # deferred with nutpie, which it imports

    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    index = 0 if bounds is None else bounds.index(missing_bound)
    layout = Layout.from_dataset(ds, form)
    latent = form in LATENT_FORMS
    inputs = _latent_inputs if latent else _collapsed_inputs
    coord, values = inputs(c[index], n[index], layout, priors, n_nodes)
    kept = coord.hyper_size if latent else coord.size
    args = (values, coord.size, kept, c.shape[2] if latent else 0, coord.offsets["sigma_task"][0])
    model = (
        nutpie_model.KernelModel.build(*args)
        if nutpie_model.available()
        else nutpie_model.python_model(*args)
    )
    return nutpie.sample(
        model,
        draws=draws,
        tune=max(tune, 1),
        chains=chains,
        cores=cores,
        seed=seed,
        progress_bar=progress,
        save_warmup=False,
        target_accept=target_accept(form, ds.sizes["task"]),
    )


def collapsed_posterior(
    theta: xr.DataArray,
    data,
    priors=None,
    task_effect: xr.DataArray | None = None,
    form: str | None = None,
) -> xr.Dataset:
    """The named quantities (:data:`POSTERIOR_VARS`) from draws of the collapsed ``theta``.

    ``theta`` has dims ``(chain, draw, <parameter>)``; a full-latent fit gives the leading
    coordinates of its vector and its ``task_effect (chain, draw, task)``, from which the
    cluster components its cluster coordinates hold are taken off where they were folded in.
    """
    ds = data.dataset
    layout = Layout.from_dataset(ds, form)
    fold = None
    # the full-latent form's coordinates (its intercepts are not attenuated, its cluster
    # coordinates may hold folded task effects), else the collapsed form's
    coord = coordinates(layout, latent_tasks=0 if task_effect is None else ds.sizes["task"])
    if task_effect is not None and folds_clusters(layout):
        reflections, fold_map = _task_constants(layout, True)
        r = int(reflections[0])
        effects = task_effect.transpose("chain", "draw", ...).values
        # sigma_task z: the first r coordinates of H' e
        fold = reflect(reflections, effects, transpose=True)[..., :r] @ fold_map.T
    values = coord.unpack(
        theta.transpose("chain", "draw", ...).values, validate_priors(priors), fold
    )
    lead = ("chain", "draw")
    out: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
        "alpha": ((*lead, "system", "stratum"), values["alpha"])
    }
    out.update({name: (lead, values[name]) for name in SIGMAS if coord.offsets[name][1]})
    if coord.offsets["sigma_system"][1]:
        out[layout.level_name] = (lead, values["sigma_system"])
    coords = {"system": ds["system"].values}
    if layout.has_clusters:
        coords["cluster"] = np.asarray(layout.cluster_labels, dtype=object)
        out["cluster_effect"] = ((*lead, "cluster"), values["cluster_effect"])
        if layout.paired:
            out["cluster_system_effect"] = (
                (*lead, "system", "cluster"),
                values["cluster_system_effect"],
            )
    post = xr.Dataset(out, coords=coords)
    if layout.pops.strata is None:
        return post.assign(alpha=post["alpha"].isel(stratum=0, drop=True))
    return post.assign_coords(stratum=np.asarray(layout.pops.strata, dtype=object))


def _intercepts_and_cluster_effects(priors, layout: Layout, alpha_dims, S):
    """Intercepts and cluster effects, parametrised for the sampler with the prior unchanged.

    The model's prior is ``alpha ~ N(m, sd)`` per system (and stratum), ``u = sigma_u z_u`` and
    ``w = sigma_w z_w`` with standard normal ``z``. Sampled as is, the mean of the cluster
    effects is confounded with the intercepts, and the systems' intercepts are strongly
    correlated (they share every task effect), which forces NUTS into small steps. So the
    sampler sees the same distribution in other coordinates: each ``z`` splits into its mean
    over clusters and a zero-sum part (a standard normal vector is the sum of these two
    independent pieces); the intercepts are shifted by the cluster-effect means, which the data
    identify directly; and the shifted intercepts are rotated onto the mean-over-systems and
    contrast directions (an orthonormal rotation of an isotropic normal is the same normal).
    ``alpha``, ``cluster_effect`` and ``cluster_system_effect`` are recorded in the original
    coordinates. Returns the identified intercepts ``(S, H)`` and the zero-sum cluster effects
    ``(S, G)`` whose sum with them is every task's linear predictor.
    """
    mean, sd = priors["alpha"]
    H = layout.pops.n
    shift = pt.zeros((S, 1))
    zero_sum = pt.zeros((S, layout.cluster.max() + 1))
    if layout.has_clusters:
        G = layout.n_clusters
        sigma_u = pm.HalfNormal("sigma_cluster", priors["sigma_cluster"])
        m_u = pm.Normal("cluster_effect_mean_z", 0.0, 1.0 / np.sqrt(G))
        d_u = (
            pm.ZeroSumNormal("cluster_effect_zerosum_z", sigma=1.0, dims="cluster")
            if G > 1
            else pt.zeros(1)
        )
        pm.Deterministic("cluster_effect", sigma_u * (m_u + d_u), dims="cluster")
        shift = shift + sigma_u * m_u
        zero_sum = zero_sum + sigma_u * d_u[None, :]
        if layout.paired:
            sigma_w = pm.HalfNormal("sigma_cluster_system", priors["sigma_cluster_system"])
            m_w = pm.Normal("cluster_system_effect_mean_z", 0.0, 1.0 / np.sqrt(G), dims="system")
            d_w = (
                pm.ZeroSumNormal(
                    "cluster_system_effect_zerosum_z", sigma=1.0, dims=("system", "cluster")
                )
                if G > 1
                else pt.zeros((S, 1))
            )
            pm.Deterministic(
                "cluster_system_effect", sigma_w * (m_w[:, None] + d_w), dims=("system", "cluster")
            )
            shift = shift + (sigma_w * m_w)[:, None]
            zero_sum = zero_sum + sigma_w * d_w
    # alpha + cluster-effect means, the intercept the data identify, in rotated coordinates:
    # z ~ N(R' shift, sd) makes alpha = mean + R z - shift ~ N(mean, sd) whatever the shift
    rotation, size = block_rotation(
        np.zeros(S, np.int64) if layout.recipes is None else layout.recipes
    )
    shift = pt.broadcast_to(shift, (S, H))
    sd_rotated = sd
    if layout.system_level:
        # alpha[s] = mu + sigma_system eps[s], mu ~ N(mean, sd) integrated out: the rotated
        # coordinates are independent, the mean direction with variance sigma_system^2 + S sd^2
        # (per recipe, with runs: m_b runs and sigma_run)
        name = layout.level_name
        level = pm.HalfNormal(name, priors[name])
        sd_rotated = pt.where(size > 0, pt.sqrt(level**2 + size * sd**2), level)[:, None]
    z_alpha = pm.Normal("alpha_rotated_z", pt.dot(rotation.T, shift), sd_rotated, shape=(S, H))
    identified = mean + pt.dot(rotation, z_alpha)  # (S, H)
    alpha = identified - shift
    pm.Deterministic("alpha", alpha if "stratum" in alpha_dims else alpha[:, 0], dims=alpha_dims)
    return identified, zero_sum


POSTERIOR_VARS = (
    ("alpha",) + SIGMAS + ("sigma_system", "sigma_run", "cluster_effect", "cluster_system_effect")
)


# -- estimands ---------------------------------------------------------------------------------
def normal_expectation(location, scale, metric, ks, tau=None):
    """``E f(expit(location + scale Z))`` for Z standard normal.

    By a trapezoid grid sized to the scale.

    The integrand is analytic in the strip ``|Im z| < pi / scale`` (the logistic's poles at
    ``y = +-i pi``), where the trapezoid rule's error falls as ``exp(-2 pi d / h)`` in the
    strip's half-width ``d`` over the step ``h``, times a factor that grows with the poles'
    order k; a step of ``min(0.4, 0.45 / scale)`` keeps it below 1e-12 for k up to 16 and
    below 1e-10 up to 256 at every scale, with the grid's ends at +-8 (the normal's mass
    beyond is 1e-15). A fixed grid of 401 nodes took 2-4 times the work at the task spreads
    of the bundled files and erred by 1e-10 at scales near 18. pass@k and pass^k are summed
    by a compiled kernel a location at a time (:func:`bayeval.models.kernels.moments.
    grid_expectations`: memory stays bounded at any number of draws, systems and clusters),
    through ``log(1 - p) = -softplus(y)`` (``log p = -softplus(-y)`` for pass^k): one
    exponential per k instead of a power. G-pass@k, the binomial tail ``I_p(m, k - m + 1)``
    at ``m = ceil(tau k)``, and consistency ``(2p - 1)^2 = tanh(y / 2)^2`` are summed in
    chunks of locations. Returns ``location.shape + (len(ks),)``.

    Examples
    --------
    >>> from bayeval.models.logit_normal import normal_expectation
    >>> round(float(normal_expectation(0.0, 2.0, "pass@k", [1])[0]), 12)  # symmetric: 1/2
    0.5
    """
    location, scale = np.broadcast_arrays(np.asarray(location, float), np.asarray(scale, float))
    lead = location.shape
    loc, sc = location.reshape(-1), scale.reshape(-1)
    ks = np.asarray(ks, float)
    out = np.empty((loc.size, ks.size))
    with np.errstate(divide="ignore"):
        need = 16.0 / np.minimum(0.4, 0.45 / np.abs(sc)) + 1.0
    sizes = _GRID_SIZES[np.minimum(np.searchsorted(_GRID_SIZES, need), _GRID_SIZES.size - 1)]
    for size in np.unique(sizes):
        z, weight = _normal_grid(int(size))
        rows = np.flatnonzero(sizes == size)
        if metric in ("pass@k", "pass^k"):  # 1 - E (1 - p)^k, E p^k: compiled, threaded
            part = np.empty((rows.size, ks.size))
            grid_expectations(
                np.ascontiguousarray(loc[rows]),
                np.ascontiguousarray(sc[rows]),
                z,
                weight,
                ks,
                metric == "pass^k",
                part,
            )
            out[rows] = 1.0 - part if metric == "pass@k" else part
            continue
        chunk = max(1, 2_000_000 // z.size)
        for first in range(0, rows.size, chunk):
            at = rows[first : first + chunk]
            out[at] = _other_expectation(loc[at, None] + sc[at, None] * z, metric, ks, tau, weight)
    return out.reshape(lead + (ks.size,))


def _other_expectation(y, metric, ks, tau, weight):
    """Grid expectations of G-pass@k and consistency at logits ``y (locations, grid)``.

    ``weight`` holds the grid's normal weights.
    """
    if metric == "consistency":
        return (np.tanh(0.5 * y) ** 2 @ weight)[:, None] * np.ones(ks.size)
    p = special.expit(y)
    needed = success_threshold(ks.astype(np.int64), tau)
    return np.stack(
        [special.betainc(m, k - m + 1, p) @ weight for k, m in zip(ks, needed, strict=True)], axis=1
    )


#: Whether a task-latent fit that diverged is replaced by the collapsed form's fit of the same
#: data (the same posterior, its cluster effects held as the data suggest rather than centred).
REFIT_DIVERGENT_TASK_LATENT = True

#: NUTS warm-up draws per chain when ``tune`` is not given and the form sampled integrates the
#: latent effects out (``collapsed``, ``task-latent``): nutpie's own default, which settles the
#: step size and mass matrix of a few hundred well-scaled coordinates (measured in the model
#: card); the full-latent form takes :data:`bayeval.models.base.DEFAULT_TUNE`.
INTEGRATED_TUNE = 300


def fit_attrs(ds: xr.Dataset, engine: str, form: str, form_choice: str) -> dict:
    """What a fit of ``form`` with ``engine`` records of how it was sampled.

    The form and why, the target acceptance and each effect's parametrisation.
    """
    attrs = {
        "form": form,
        "form_choice": form_choice,
        "target_accept": target_accept(form, ds.sizes["task"]),
    }
    if "cluster" in ds.coords:
        attrs["cluster_effects"] = "centred" if cluster_parametrisation(ds) else "non-centred"
    if form == "full-latent" and engine == "nutpie":
        attrs["task_effects"] = "centred" if task_parametrisation(ds) else "non-centred"
        layout = Layout.from_dataset(ds)
        if layout.paired:
            attrs["task_system_effects"] = (
                "integrated (tables of the most common counts), sampled elsewhere"
                if integrates_cells(ds)
                else "sampled"
            )
        if coordinates(layout, latent_tasks=ds.sizes["task"]).cluster_pairs:
            sums = "centred" if layout.task_centred else "standardised"
            attrs["cluster_effects"] = (
                f"rotated with their tasks' mean effects: the sums {sums}, the spreads polar"
            )
    if form == "task-latent":
        attrs["task_effects"] = "centred"
        if "cluster" in ds.coords:
            attrs["cluster_effects"] = "centred (cluster-by-system non-centred)"
    if form in ("collapsed", "task-latent"):
        attrs["intercepts"] = "attenuated" if ATTENUATED_INTERCEPTS else "plain"
        if coordinates(Layout.from_dataset(ds)).level_weights:
            attrs["intercept_level"] = "task-weighted"
    return attrs


def _check_jax():
    try:  # JAX and NumPyro: the optional bayeval[jax] dependencies
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "sampler='numpyro' needs JAX and NumPyro: pip install 'bayeval[jax]'"
        ) from err


class LogitNormalRates(base.Model):
    """The logit-normal model: sampled by NUTS in the form :func:`sampling_form` picks.

    Its estimands are read from the fitted DataTree.
    """

    name = "logit_normal"
    estimands = ("tasks", "population")
    engines = {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc", "numpyro": "numpyro"}
    paired = True
    #: :meth:`population` and :meth:`tasks` take ``systems``: a system's draws are the same
    #: whichever systems are read beside it, so a reader may ask for a few and add the rest
    subsets = True
    posterior_vars = POSTERIOR_VARS
    task_draws_auto = False  # drawn exactly a task at a time: on demand

    # -- fitting -------------------------------------------------------------------------------
    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def build(self, data, priors=None, **options) -> pm.Model:
        """:func:`build_logit_normal_model` (default: the collapsed form)."""
        return build_logit_normal_model(data, priors, **options)

    def default_tune(self, form: str | None = None) -> int:
        """The default warm-up of a fit of ``form``.

        :data:`INTEGRATED_TUNE` for the forms that integrate the latent effects out
        (``"collapsed"``, ``"task-latent"``), :data:`~bayeval.models.base.DEFAULT_TUNE` for the
        full-latent form.
        """
        if form in ("collapsed", "task-latent"):
            return INTEGRATED_TUNE
        return base.DEFAULT_TUNE

    def single_trial_warning(self, data) -> str:
        """Several systems: what is identified only through the other systems."""
        if len(data.systems) < 2:
            return super().single_trial_warning(data)
        return (
            "with one trial per task a system's own task-to-task spread is identified "
            "only through the other systems: the task-by-system spread and pass@k, pass^k "
            "for k > 1 lean on their priors, and intervals over these tasks "
            "(estimand='tasks') covered 0.90-0.92 at 95% in simulations of 12 systems "
            "(models/logit_normal.md)"
        )

    def sample(
        self,
        data,
        *,
        sampler="auto",
        draws=1000,
        chains=4,
        tune=None,
        seed=0,
        priors=None,
        progress=False,
    ) -> xr.DataTree:
        """NUTS on the form :func:`sampling_form` picks.

        The full-latent form for ``sampler="numpyro"``; a task-latent fit that diverges is sampled
        again collapsed (:data:`REFIT_DIVERGENT_TASK_LATENT`). Latent fits keep their task effects
        in a ``task_effects`` group.
        """
        engine = self.engine(sampler)
        priors = validate_priors(priors)
        ds = data.dataset
        _, _, bounds = counts_by_bound(ds)
        form, form_choice = (  # the collapsed kernel is numba code: JAX takes the latent form
            ("full-latent", "sampler='numpyro': the full-latent form, which JAX compiles")
            if engine == "numpyro"
            else sampling_form(ds)
        )
        if tune is None:
            tune = self.default_tune(form)
        posterior, sample_stats = base.nuts(
            data, self, priors, draws, chains, tune, seed, engine, progress, bounds, form
        )
        diverged = int(sample_stats["diverging"].sum())
        if form == "task-latent" and diverged and REFIT_DIVERGENT_TASK_LATENT:
            # its cluster effects are centred: where the clusters' spread is small against
            # what their tasks say of it, a funnel; the collapsed form, the same posterior,
            # holds them as the data suggest
            form, form_choice = (
                "collapsed",
                (
                    f"{form_choice}; its fit diverged {diverged} times, so the collapsed form "
                    "(task effects integrated out) was sampled instead"
                ),
            )
            if progress:
                print(
                    f"the task-latent fit diverged {diverged} times: sampling the collapsed "
                    "form instead",
                    file=sys.stderr,
                )
            posterior, sample_stats = base.nuts(
                data, self, priors, draws, chains, tune, seed, engine, progress, bounds, form
            )
        posterior = base.finish_bounds(posterior, bounds)
        effects = None
        if "task_effect" in posterior:
            # a latent fit's task effects, per task: a group of their own keeps summaries small
            effects = posterior[["task_effect"]]
            posterior = posterior.drop_vars(["task_effect", "task"])
        groups = {"posterior": posterior, "sample_stats": sample_stats, "task_effects": effects}
        return base.sampled(groups, {"tune": tune, **fit_attrs(ds, engine, form, form_choice)})

    def sample_bound(
        self,
        data,
        priors,
        *,
        draws,
        tune,
        chains,
        seed,
        engine,
        progress,
        cores,
        missing_bound=None,
        form=None,
    ):
        """One NUTS run (:func:`bayeval.models.base.nuts`): the named posterior and the trace."""
        collapsed = form == "collapsed"
        # nutpie samples every form as one compiled log density
        compiled = engine == "nutpie"
        if engine == "numpyro":
            _check_jax()
        if compiled:
            trace = sample_kernel(
                data,
                priors,
                draws,
                tune,
                chains,
                seed,
                progress,
                cores,
                form=form,
                missing_bound=missing_bound,
            )
        else:
            trace = base.pymc_nuts(
                build_logit_normal_model(
                    data, priors, missing_bound=missing_bound, marginal=collapsed
                ),
                engine=engine,
                draws=draws,
                tune=tune,
                chains=chains,
                seed=seed,
                progress=progress,
                cores=cores,
                target_accept=target_accept(form, data.dataset.sizes["task"]),
            )
        post = trace["posterior"].to_dataset()
        if compiled:
            effect = None
            if not collapsed:
                effect = post["task_effect"]
                effect = effect.rename({effect.dims[-1]: "task"})
            post = collapsed_posterior(
                post["theta" if collapsed else "hyper"], data, priors, task_effect=effect, form=form
            )
            if not collapsed:  # the latent forms' task effects: the tasks estimand's
                post["task_effect"] = effect.drop_vars(
                    [name for name in effect.coords if name not in ("chain", "draw")]
                )
        names = [v for v in (*POSTERIOR_VARS, "task_effect") if v in post.data_vars]
        return post[names], trace

    # -- estimands -----------------------------------------------------------------------------

    @staticmethod
    def _params(tree, bound):
        """Posterior arrays for one bound, flattened over (chain, draw)."""
        post = tree["posterior"].to_dataset()
        if "missing_bound" in post.dims:
            post = post.isel(missing_bound=bound)
        obs = tree["observed_data"].to_dataset()
        layout = Layout.from_dataset(obs)
        draws = post.sizes["chain"] * post.sizes["draw"]
        alpha = post["alpha"]
        if "stratum" not in alpha.dims:
            alpha = alpha.expand_dims("stratum", axis=-1)
        alpha = alpha.transpose("chain", "draw", "system", "stratum").values.reshape(
            draws, layout.n_systems, -1
        )

        def get(name, shape):
            if name in post:
                return post[name].values.reshape((draws,) + shape)
            return np.zeros((draws,) + shape)

        n_cluster = layout.n_clusters
        params = {
            "alpha": alpha,
            "u": get("cluster_effect", (n_cluster,)),
            "w": (
                post["cluster_system_effect"]
                .transpose("chain", "draw", "system", "cluster")
                .values.reshape(draws, layout.n_systems, n_cluster)
                if "cluster_system_effect" in post
                else np.zeros((draws, layout.n_systems, n_cluster))
            ),
            **{name: get(name, ()) for name in SIGMAS},
        }
        return params, layout, post.sizes["chain"], post.sizes["draw"]

    @staticmethod
    def _bounds(tree):
        obs = tree["observed_data"].to_dataset()
        return counts_by_bound(obs)

    def _wrap(self, values, tree, bounds, ks, n_chain, n_draw, index=None):
        """Per-bound ``(draws, system, k)`` values of every system as a DataArray.

        With ``index``, of those systems only, in that order.
        """
        values = np.stack(values, axis=0)  # (bound, draws, system, k)
        values = values.reshape((len(values), n_chain, n_draw) + values.shape[2:])
        labels = tree["observed_data"]["system"].values
        if index is not None:
            values, labels = values[:, :, :, index], labels[index]
        return BetaRates._wrap(np.moveaxis(values, 0, 2), tree, bounds, ks, "", labels)

    @staticmethod
    def _system_index(tree, systems):
        """Positions of ``systems`` (labels) among the fit's systems; None for all."""
        if systems is None:
            return None
        labels = tree["observed_data"]["system"].values.tolist()
        return np.asarray([labels.index(label) for label in systems], dtype=np.int64)

    def population(
        self, tree, metric, ks, clusters="new", weighting="task", tau=None, systems=None
    ):
        """Draws of ``metric`` for a new task, ``(chain, draw, system[, missing_bound], k)``.

        Of the ``systems`` (labels) asked for, default all.
        """
        c, n, bounds = self._bounds(tree)
        index = self._system_index(tree, systems)
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            chosen = slice(None) if index is None else index
            # a system's value reads only its own parameters
            prm_chosen = {**prm, "alpha": prm["alpha"][:, chosen], "w": prm["w"][:, chosen]}
            if clusters == "observed":
                value = self._observed_clusters(prm_chosen, layout, metric, ks, weighting, tau)
            else:
                spread = np.sqrt(sum(prm[name] ** 2 for name in SIGMAS))
                value = normal_expectation(
                    prm_chosen["alpha"],
                    spread[:, None, None] * np.ones_like(prm_chosen["alpha"]),
                    metric,
                    ks,
                    tau,
                )  # (draw, system, stratum, k)
                value = clip_probability(np.einsum("dshk,h->dsk", value, layout.pops.weight))
            full = np.zeros((value.shape[0], prm["alpha"].shape[1], value.shape[2]))
            full[:, chosen] = value
            out.append(full)
        return self._wrap(out, tree, bounds, ks, n_chain, n_draw, index)

    def _recipe_means(self, tree):
        """Per bound: each recipe's mean intercept ``beta (draw, recipe, H)``, and what it rests on.

        ``beta`` is drawn from its conditional given the runs' intercepts (prior ``N(mean, sd)``,
        runs ``~ N(beta, sigma_run)``: precision ``1/sd^2 + m/sigma_run^2``); with it ``sigma_run``,
        the new task's spread, the layout and the recipe labels.
        """
        obs = tree["observed_data"].to_dataset()
        recipes = recipe_codes(obs)
        labels = list(dict.fromkeys(obs["recipe"].values.tolist()))
        c, _, bounds = self._bounds(tree)
        mean, sd = validate_priors(json.loads(tree.attrs.get("priors", "null")) or None)["alpha"]
        post = tree["posterior"].to_dataset()
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            level = post["sigma_run"]
            if "missing_bound" in level.dims:
                level = level.isel(missing_bound=b)
            sigma = level.values.reshape(-1)
            rng = np.random.default_rng([int(tree.attrs["seed"]), 7, b])
            beta = []
            for r in range(len(labels)):
                runs = prm["alpha"][:, recipes == r]  # (draw, m, H)
                precision = 1 / sd**2 + runs.shape[1] / sigma**2
                centre = (mean / sd**2 + runs.sum(1) / sigma[:, None] ** 2) / precision[:, None]
                beta.append(
                    centre + rng.standard_normal(centre.shape) / np.sqrt(precision)[:, None]
                )
            spread = np.sqrt(sum(prm[name] ** 2 for name in SIGMAS))
            out.append((np.stack(beta, axis=1), sigma, spread, layout))
        return out, labels, bounds, (post["chain"].values, post["draw"].values)

    def new_run_population(self, tree, metric, ks, tau=None):
        """Per recipe: ``metric`` of a new task (new cluster) for a new training run.

        The recipe's mean intercept (:meth:`_recipe_means`) with ``sigma_run^2`` added to the new
        task's spread (a new run is a new checkpoint with a new cluster-by-run effect too). Returns
        ``(chain, draw, system=recipe, k)`` (``missing_bound`` last under bounds).
        """
        parts, labels, bounds, (chains, draws) = self._recipe_means(tree)
        out = []
        for beta, sigma, spread, layout in parts:
            scale = np.sqrt(spread**2 + sigma**2)[:, None, None] * np.ones_like(beta)
            value = normal_expectation(beta, scale, metric, ks, tau)  # (draw, recipe, H, k)
            out.append(clip_probability(np.einsum("drhk,h->drk", value, layout.pops.weight)))
        return self._recipe_array(
            out, labels, bounds, chains, draws, {"k": np.asarray(ks, dtype=np.int64)}, metric
        )

    def run_variance(self, tree):
        """Per recipe: the variance over new training runs of a checkpoint's population pass@1.

        That is its score on a new task set, ``Var_z g(beta + sigma_run z)`` with ``g`` the pass@1
        of a new task at that intercept; Gauss-Hermite over z (24 nodes).
        ``(chain, draw, system=recipe)``.
        """
        parts, labels, bounds, (chains, draws) = self._recipe_means(tree)
        x, w = np.polynomial.hermite_e.hermegauss(24)
        w = w / w.sum()
        out = []
        for beta, sigma, spread, layout in parts:
            loc = beta[..., None] + sigma[:, None, None, None] * x  # (draw, recipe, H, node)
            g = normal_expectation(
                loc,
                np.broadcast_to(spread[:, None, None, None], loc.shape),
                "pass@k",
                np.array([1]),
            )[..., 0]
            g = np.einsum("drhq,h->drq", g, layout.pops.weight)
            first = g @ w
            out.append(np.maximum((g**2) @ w - first**2, 0.0))
        return self._recipe_array(out, labels, bounds, chains, draws, {}, "run_variance")

    @staticmethod
    def _recipe_array(out, labels, bounds, chains, draws, extra: dict, name) -> xr.DataArray:
        values = np.stack(out, axis=0)  # (bound, draw, recipe, ...)
        values = values.reshape((len(out), len(chains), len(draws)) + values.shape[2:])
        dims = ("chain", "draw", "system", *extra, "missing_bound")
        da = xr.DataArray(
            np.moveaxis(values, 0, -1),
            dims=dims,
            name=name,
            coords={
                "chain": chains,
                "draw": draws,
                "system": np.asarray(labels, dtype=object),
                **extra,
            },
        )
        return (
            da.isel(missing_bound=0, drop=True)
            if bounds is None
            else da.assign_coords(missing_bound=bounds)
        )

    @staticmethod
    def _observed_clusters(prm, layout, metric, ks, weighting, tau=None):
        spread = np.sqrt(prm["sigma_task"] ** 2 + prm["sigma_task_system"] ** 2)
        total = 0.0
        for h, stratum_weight in enumerate(layout.pops.weight):
            in_h = layout.pops.code == h
            labels, sizes = np.unique(layout.cluster[in_h], return_counts=True)
            shares = (
                sizes / sizes.sum()
                if weighting == "task"
                else np.full(len(labels), 1 / len(labels))
            )
            location = (
                prm["alpha"][:, :, h, None] + prm["u"][:, None, labels] + prm["w"][:, :, labels]
            )  # (draw, system, cluster)
            scale = np.broadcast_to(spread[:, None, None], location.shape)
            value = normal_expectation(location, scale, metric, ks, tau)  # (draw, sys, cl, k)
            total = total + stratum_weight * np.einsum("dsgk,g->dsk", value, shares)
        return clip_probability(total)

    @staticmethod
    def _rows(prm, layout, c, n):
        """The linear predictors once per (cluster, stratum) ``(draw, G H, S)``, and the patterns.

        With each pattern's row of them ``(P,)``, ``sigma_v`` and the patterns: the patterns' own
        ``(draw, P, S)`` would hold draws x patterns x systems numbers (334 MB on the 25-system
        SWE-bench fit).
        """
        pat = task_patterns(c, n, layout)
        base = (
            prm["alpha"][:, None, :, :]
            + prm["u"][:, :, None, None]
            + prm["w"].transpose(0, 2, 1)[..., None]
        ).transpose(0, 1, 3, 2)  # (D, G, H, S)
        D, G, H, S = base.shape
        rows = pat.cluster * H + pat.stratum
        sigma_v = prm["sigma_task_system"] if layout.paired else np.ones(D)
        return np.ascontiguousarray(base).reshape(D, G * H, S), rows, sigma_v, pat

    @staticmethod
    def _task_effects(tree, bound):
        """A full-latent fit's task-effect draws ``(draws, J)`` for one bound, or None.

        None for a collapsed fit, or a tree without them.
        """
        if "task_effects" not in tree.children:
            return None
        effect = tree["task_effects"]["task_effect"]
        if "missing_bound" in effect.dims:
            effect = effect.isel(missing_bound=bound)
        values = effect.transpose("chain", "draw", "task").values
        return values.reshape(-1, values.shape[-1])

    @staticmethod
    def _latent(prm, layout, effects, c, n, rng, **kwargs):
        """:func:`bayeval.models.kernels.exact.latent_task_draws` for one bound."""
        sigma_v = prm["sigma_task_system"] if layout.paired else np.ones(len(effects))
        return latent_task_draws(
            prm["alpha"],
            prm["u"],
            prm["w"],
            effects,
            sigma_v,
            layout.cluster,
            layout.pops.code,
            c,
            n,
            layout.paired,
            rng,
            **kwargs,
        )

    def tasks(self, tree, metric, ks, shared=None, tau=None, systems=None):
        """Draws of ``metric`` over these tasks, ``(chain, draw, system[, missing_bound], k)``.

        Of the ``systems`` (labels) asked for where the fit sampled its task effects (each system's
        task-by-system effects are then drawn alone), else of every system (the collapsed form draws
        a task's effects in all systems jointly).
        """
        c, n, bounds = self._bounds(tree)
        weight_n = n if shared is None else n * np.asarray(shared, dtype=n.dtype)
        seed = int(tree.attrs["seed"])
        index = self._system_index(tree, systems) if "task_effects" in tree.children else None
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            weights = task_weights(weight_n[b], layout.pops)  # (S, J)
            rng = np.random.default_rng([seed, 1, b])
            effects = self._task_effects(tree, b)
            if effects is not None:  # a full-latent fit: its task effects, sampled
                draws = self._latent(
                    prm,
                    layout,
                    effects,
                    c[b],
                    n[b],
                    rng,
                    ks=ks.astype(float),
                    metric=metric,
                    weight=weights.T,
                    tau=tau,
                    systems=index,
                )
                out.append(np.clip(draws, 0.0, 1.0))
                continue
            base, rows, sigma_v, pat = self._rows(prm, layout, c[b], n[b])
            # patterns of at most EXACT_TASKS tasks: each task's rates drawn from their joint
            # conditional; the sum over a larger pattern's tasks from its normal
            one_by_one = pat.mult[pat.inverse] <= EXACT_TASKS  # (J,)
            draws = exact_task_sums(
                base,
                pat.c,
                pat.n,
                prm["sigma_task"],
                sigma_v,
                layout.paired,
                ks.astype(float),
                metric,
                weights.T[one_by_one],
                pat.inverse[one_by_one],
                rng,
                tau=tau,
                rows=rows,
            )
            large = np.flatnonzero(pat.mult > EXACT_TASKS)
            if large.size:
                w_p = weights[:, pat.first[large]].T  # (large patterns, S)
                centre, cov = task_sums(
                    np.take(base, rows[large], axis=1),
                    pat.c[large],
                    pat.n[large],
                    prm["sigma_task"],
                    sigma_v,
                    layout.paired,
                    ks.astype(float),
                    metric,
                    w_p,
                    pat.mult[large],
                    tau=tau,
                )
                z = rng.standard_normal(centre.shape[:2])  # (draw, system): shared across k
                jitter = 1e-12 * np.eye(cov.shape[-1])
                chol = np.linalg.cholesky(_nearest_psd(cov) + jitter)  # (draw, k, S, S)
                draws = draws + centre + np.einsum("dkst,dt->dsk", chol, z)
            out.append(np.clip(draws, 0.0, 1.0))
        return self._wrap(out, tree, bounds, ks, n_chain, n_draw, index)

    def task_rates(self, tree, systems=None):
        """Per-task rate draws, joint over systems.

        Per posterior draw, each task's rates in the chosen systems drawn exactly from their joint
        conditional, as the tasks estimand draws them
        (:func:`bayeval.models.kernels.exact.exact_task_rates`: the shared task effect from its
        marginal, then each system's task-by-system effect given it, which keeps the rates'
        dependence across systems); NaN where a system did not run a task. A full-latent fit draws
        the task-by-system effects given its sampled task effects.
        """
        obs = tree["observed_data"].to_dataset()
        c, n, bounds = counts_by_bound(obs)
        all_systems = obs["system"].values.tolist()
        chosen = all_systems if systems is None else list(systems)
        index = [all_systems.index(s) for s in chosen]
        seed = int(tree.attrs["seed"])
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            rng = np.random.default_rng([seed, 2, b])
            effects = self._task_effects(tree, b)
            if effects is not None:  # a full-latent fit: exact, given its sampled task effects
                # (given them, the systems' rates are independent: a subset is drawn alone,
                # each system from its own streams)
                out.append(
                    self._latent(prm, layout, effects, c[b], n[b], rng, systems=index)[:, index]
                )
                continue
            base, rows, sigma_v, pat = self._rows(prm, layout, c[b], n[b])
            keep = np.zeros(n[b].shape[::-1], dtype=bool)  # (J, S)
            keep[:, index] = n[b][index].T > 0
            p = exact_task_rates(
                base,
                pat.c,
                pat.n,
                prm["sigma_task"],
                sigma_v,
                layout.paired,
                keep,
                pat.inverse,
                rng,
                rows=rows,
            )
            out.append(p[:, index])  # (draw, S', J)
        values = np.stack(out).reshape((len(out), n_chain, n_draw, len(chosen), -1))
        post = tree["posterior"]
        da = xr.DataArray(
            np.moveaxis(values, 0, -1),
            dims=("chain", "draw", "system", "task", "missing_bound"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": np.asarray(chosen, dtype=object),
                "task": obs["task"].values,
            },
            name="p",
        )
        return (
            da.isel(missing_bound=0, drop=True)
            if bounds is None
            else da.assign_coords(missing_bound=bounds)
        )

    def predictive(self, tree, max_draws: int = 1000) -> xr.Dataset:
        """Success-count histograms of new tasks in the observed clusters (thinned draws)."""
        obs = tree["observed_data"].to_dataset()
        c, n, bounds = counts_by_bound(obs)
        seed = int(tree.attrs["seed"])
        max_n = int(n.max())
        hists, shares = [], []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            thin = max(1, int(np.ceil(n_draw / max(max_draws // n_chain, 1))))
            keep = (np.arange(n_chain)[:, None] * n_draw + np.arange(0, n_draw, thin)).ravel()
            rng = np.random.default_rng([seed, 3, b])
            D, (S, J) = len(keep), n[b].shape
            hist = np.zeros((D, S, max_n + 1))
            share = np.empty((D, S))
            valid = n[b][None] > 0
            multi = valid & (n[b][None] >= 2)
            # a block of draws at a time: memory stays bounded at any number of systems
            block = max(1, 2_000_000 // max(S * J, 1))
            for start in range(0, D, block):
                part = keep[start : start + block]
                d = len(part)
                eta = (
                    prm["alpha"][part][:, :, layout.pops.code]
                    + prm["u"][part][:, layout.cluster][:, None, :]
                    + prm["w"][part][:, :, layout.cluster]
                )  # (d, S, J)
                e = rng.standard_normal((d, 1, J)) * prm["sigma_task"][part, None, None]
                v = rng.standard_normal(eta.shape) * prm["sigma_task_system"][part, None, None]
                counts = rng.binomial(n[b][None], special.expit(eta + e + v))
                for s in range(S):
                    cols = counts[:, s, valid[0, s]]
                    offsets = cols + (np.arange(d) * (max_n + 1))[:, None]
                    hist[start : start + d, s] = np.bincount(
                        offsets.ravel(), minlength=d * (max_n + 1)
                    ).reshape(d, max_n + 1)
                extreme = ((counts == 0) | (counts == n[b][None])) & multi
                with np.errstate(invalid="ignore", divide="ignore"):
                    share[start : start + d] = extreme.sum(-1) / multi.sum(-1)
            hists.append(hist.reshape(n_chain, -1, layout.n_systems, max_n + 1))
            shares.append(share.reshape(n_chain, -1, layout.n_systems))
        draws = tree["posterior"]["draw"].values[::thin]
        out = xr.Dataset(
            {
                "count_histogram": (
                    ("missing_bound", "chain", "draw", "system", "count"),
                    np.stack(hists),
                ),
                "extreme_share": (("missing_bound", "chain", "draw", "system"), np.stack(shares)),
            },
            coords={
                "chain": tree["posterior"]["chain"].values,
                "draw": draws,
                "system": obs["system"].values,
                "count": np.arange(max_n + 1),
            },
        ).transpose("chain", "draw", "system", "missing_bound", ...)
        return (
            out.isel(missing_bound=0, drop=True)
            if bounds is None
            else out.assign_coords(missing_bound=bounds)
        )


def _nearest_psd(cov):
    """Symmetrise and clip negative eigenvalues from rounding."""
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    vals, vecs = np.linalg.eigh(cov)
    return (vecs * np.maximum(vals, 0.0)[..., None, :]) @ np.swapaxes(vecs, -1, -2)
