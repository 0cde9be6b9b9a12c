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

The model lives in six modules: :mod:`~bayeval.models.logit_normal.layout` (priors, the
data's layout, the choice of form), :mod:`~bayeval.models.logit_normal.kernel` (the compiled
log densities and their sampling), :mod:`~bayeval.models.logit_normal.pymc_model` (the PyMC
model), :mod:`~bayeval.models.logit_normal.estimands` (expectations over a normal spread),
:mod:`~bayeval.models.logit_normal.likelihood` (each task's log-likelihood per draw, for LOO)
and :mod:`~bayeval.models.logit_normal.model` (:class:`LogitNormalRates`); their names are
re-exported here. A module-level setting (``TARGET_ACCEPT``, ``LATENT_CELLS``, ...) is read
in the module that defines it and in any that imports it by name: set it there, not here.
"""

from __future__ import annotations

from bayeval.models.logit_normal.estimands import normal_expectation
from bayeval.models.logit_normal.kernel import (
    ATTENUATED_INTERCEPTS,
    CELL_TABLES,
    COLLAPSED_DATA,
    FEW_TASKS,
    GUIDED_CLUSTER_SYSTEM,
    GUIDED_TASK_MEANS,
    LATENT_FORMS,
    LATENT_KEPT,
    POSTERIOR_VARS,
    ROTATED_CLUSTER_PAIRS,
    TABLE_CACHE,
    TABLED_CELLS,
    TARGET_ACCEPT,
    WEIGHTED_LEVEL,
    collapsed_posterior,
    coordinates,
    folds_clusters,
    guides_cluster_system,
    guides_task_means,
    integrates_cells,
    sample_kernel,
    target_accept,
)
from bayeval.models.logit_normal.kernel import _cell_table_stack as _cell_table_stack
from bayeval.models.logit_normal.kernel import _collapsed_inputs as _collapsed_inputs
from bayeval.models.logit_normal.kernel import _latent_inputs as _latent_inputs
from bayeval.models.logit_normal.kernel import _tabled_cells as _tabled_cells
from bayeval.models.logit_normal.kernel import _tables as _tables
from bayeval.models.logit_normal.layout import (
    CENTRED_CLUSTER_TRIALS,
    CENTRED_TASK_TRIALS,
    DEFAULT_PRIORS,
    LATENT_CELLS,
    ONE_TRIAL_SIGMA_TASK_SYSTEM,
    SIGMAS,
    SYSTEM_CENTRED_RATIO,
    SYSTEM_LEVEL_MIN,
    TASK_LATENT_CLUSTER_TASKS,
    TASK_LATENT_SYSTEMS,
    Layout,
    Patterns,
    cluster_codes,
    cluster_parametrisation,
    one_trial,
    recipe_codes,
    sampling_form,
    system_parametrisation,
    task_parametrisation,
    task_patterns,
    validate_priors,
)
from bayeval.models.logit_normal.model import (
    FULL_LATENT_DRAWS,
    INTEGRATED_TUNE,
    REFIT_DIVERGENT_TASK_LATENT,
    LogitNormalRates,
    fit_attrs,
)
from bayeval.models.logit_normal.pymc_model import (
    _intercepts_and_cluster_effects as _intercepts_and_cluster_effects,
)
from bayeval.models.logit_normal.pymc_model import build_logit_normal_model

__all__ = [
    "DEFAULT_PRIORS",
    "SIGMAS",
    "SYSTEM_LEVEL_MIN",
    "validate_priors",
    "SYSTEM_CENTRED_RATIO",
    "system_parametrisation",
    "CENTRED_CLUSTER_TRIALS",
    "cluster_parametrisation",
    "CENTRED_TASK_TRIALS",
    "task_parametrisation",
    "TASK_LATENT_SYSTEMS",
    "TASK_LATENT_CLUSTER_TASKS",
    "LATENT_CELLS",
    "sampling_form",
    "cluster_codes",
    "recipe_codes",
    "Layout",
    "Patterns",
    "task_patterns",
    "ATTENUATED_INTERCEPTS",
    "WEIGHTED_LEVEL",
    "ROTATED_CLUSTER_PAIRS",
    "TABLED_CELLS",
    "CELL_TABLES",
    "TABLE_CACHE",
    "coordinates",
    "folds_clusters",
    "COLLAPSED_DATA",
    "GUIDED_CLUSTER_SYSTEM",
    "guides_cluster_system",
    "GUIDED_TASK_MEANS",
    "guides_task_means",
    "integrates_cells",
    "LATENT_FORMS",
    "LATENT_KEPT",
    "TARGET_ACCEPT",
    "ONE_TRIAL_SIGMA_TASK_SYSTEM",
    "one_trial",
    "FEW_TASKS",
    "target_accept",
    "sample_kernel",
    "collapsed_posterior",
    "POSTERIOR_VARS",
    "normal_expectation",
    "build_logit_normal_model",
    "REFIT_DIVERGENT_TASK_LATENT",
    "FULL_LATENT_DRAWS",
    "INTEGRATED_TUNE",
    "fit_attrs",
    "LogitNormalRates",
]
