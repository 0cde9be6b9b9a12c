"""What an attempt and a success cost, and how often attempts time out or fail.

Both versions work on the per-``(system, task, status)`` sums of a covariate kept by
``from_frame(..., covariates=[...])``: every attempt's cost counts, whatever its status (a
timed-out attempt costs what it cost and succeeds never). Per system:

* ``cost_per_attempt``: total cost over attempts of every status (``not_run`` excluded);
* ``cost_per_success``: total cost over successes, a ratio of two task totals;
* ``timeout_rate``, ``error_rate``, ``invalid_rate``: the share of attempts with that status;
* ``pass_at_1``: ``ok`` successes over attempts of every status (a timed-out attempt is a
  failed try that was paid for).

With ``k=[...]`` the budget curve too (dim ``k``), from each task's mean attempt cost
``cbar_t`` and success rate per attempt ``p_t`` (attempts independent and alike within a task):

* ``pass_at_k``: the mean over tasks of ``1 - (1 - p_t)^k``;
* ``cost_of_k``: the mean over tasks of ``k cbar_t``, what k attempts per task cost;
* ``expected_spend``: the mean over tasks of ``cbar_t sum_{j<k} (1 - p_t)^j``, the expected
  cost per task when a task is retried until its first success, at most k attempts;
* ``cost_per_success_at_k``: ``sum_t cbar_t sum_{j<k} (1 - p_t)^j / sum_t (1 - (1 - p_t)^k)``,
  the expected cost of a first success under that policy: the ratio of the task totals (what
  the retries cost over how many tasks they solve), as ``cost_per_success`` is at k = 1.

:func:`bayeval.analyses.tradeoff.frontier` gives the cost-success Pareto frontier and, for
every pair, the probability that one system dominates the other, over the joint draws or
replicates of either version.

:func:`cost` (re-exported as ``bayeval.bootstrap.cost``) resamples tasks (or clusters) within
strata, the same units for every system, and recomputes each ratio from the resampled totals:
a ratio estimator resampled as a ratio. :func:`posterior_cost` (``Results.cost``) is its
posterior twin: the Bayesian bootstrap over tasks (Rubin 1981) for the cost, with the fitted
model's task rates for the successes, coupled through the same task weights; with
``model="lognormal"`` each task's cost is instead drawn from a crossed hurdle log-normal
(:mod:`bayeval.models.cost`: task and cluster effects shared by the systems, a Beta posterior
for each system's share of zero costs), fitted from the stored sums of logs and squared logs,
under the same task weights.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import (
    describe_values,
    validate_choice,
    validate_k,
    validate_positive_int,
    validate_prob,
    validate_seed,
)
from bayeval.analyses._draws import thinned
from bayeval.analyses._tables import draw_mean, percentiles
from bayeval.data import EvalData
from bayeval.models import cost as cost_models
from bayeval.posterior import Posterior
from bayeval.resampling import _layout, _refuse_scores

__all__ = [
    "COST_MODELS",
    "K_STATISTICS",
    "RATE_STATUSES",
    "STATISTICS",
    "cost",
    "posterior_cost",
]

#: The cost models of :func:`posterior_cost` by name (:mod:`bayeval.models.cost`).
COST_MODELS = tuple(cost_models.MODELS)

RATE_STATUSES = ("timeout", "error", "invalid")
STATISTICS = (
    ("cost_per_attempt", "cost_per_success")
    + tuple(f"{s}_rate" for s in RATE_STATUSES)
    + ("pass_at_1",)
)
#: Statistics on the ``k`` dim (``k=[...]``): the budget curve.
K_STATISTICS = ("pass_at_k", "cost_of_k", "expected_spend", "cost_per_success_at_k")


def _check_column(data, column) -> None:
    """Refuse anything but success data (an ``EvalData``) with covariate ``column``."""
    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData (from be.from_frame); got {type(data).__name__}")
    _refuse_scores(data, "cost per success")
    if column not in data.covariates:
        have = (
            f"this data has {describe_values(data.covariates)}"
            if data.covariates
            else "this data has none"
        )
        raise ValueError(
            f"no covariate {column!r}: pass covariates=[{column!r}] to be.from_frame ({have})"
        )


def _task_totals(data, column) -> tuple[np.ndarray, list]:
    """Per task and system: cost, attempts, successes and the rate statuses.

    Shape ``(task, system, 3 + len(RATE_STATUSES))``.
    """
    ds = data.dataset
    counts = ds["status_counts"].transpose("system", "task", "status")
    attempts = counts.drop_sel(status="not_run").sum("status").values
    total = ds["covariate_sum"].sel(covariate=column).sum("status").transpose("system", "task")
    successes = data.ok_successes().transpose("system", "task").values
    parts = [total.values, attempts, successes]
    parts += [counts.sel(status=s).values for s in RATE_STATUSES]
    return np.stack(parts, axis=-1).transpose(1, 0, 2).astype(float), data.systems


def _ratios(totals: np.ndarray) -> np.ndarray:
    """Statistics from summed totals ``(..., system, quantity)`` -> ``(..., system, stat)``."""
    cost, attempts, successes = totals[..., 0], totals[..., 1], totals[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        per_success = np.where(successes > 0, cost / np.where(successes > 0, successes, 1), np.inf)
        out = [cost / attempts, per_success]
        out += [totals[..., 3 + i] / attempts for i in range(len(RATE_STATUSES))]
        out.append(successes / attempts)
    return np.stack(out, axis=-1)


def _check_ks(k):
    """``k`` of the budget curve: None, or a sorted 1-d integer array."""
    if k is None:
        return None
    ks, _ = validate_k(k)
    return np.sort(ks)


def _mean_attempt_cost(per_task) -> tuple[np.ndarray, np.ndarray]:
    """Each (task, system)'s mean attempt cost and whether it made any attempt.

    Both ``(task, system)``; the mean cost is 0 where it made no attempt.
    """
    attempts = per_task[..., 1]
    ran = attempts > 0
    cbar = np.where(ran, per_task[..., 0] / np.where(ran, attempts, 1), 0.0)
    return cbar, ran.astype(float)


def _fail_powers(attempts, successes, kmax) -> np.ndarray:
    """Unbiased estimates of ``(1 - p)^j`` for j = 0..kmax from c successes in n attempts.

    ``C(n - c, j) / C(n, j)`` as a product; last axis j. NaN where j > n.
    """
    n, c = attempts[..., None], successes[..., None]
    j = np.arange(kmax + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        factors = (n - c - j[:-1]) / (n - j[:-1])
    out = np.concatenate([np.ones(n.shape), np.cumprod(factors, axis=-1)], axis=-1)
    return np.where(j <= n, out, np.nan)


def _k_columns(parts: dict, ks) -> np.ndarray:
    """Per-task totals of the budget curve, ``(..., 1 + 3 len(ks))``.

    Tasks run, then for each k its pass@k, its expected spend and the cost of k attempts.
    """
    cols = [parts["ran"]]
    for i in range(len(ks)):
        cols += [parts["pass"][..., i], parts["spend"][..., i], parts["budget"][..., i]]
    return np.stack(cols, axis=-1)


def _k_ratios(totals: np.ndarray, n_k: int) -> np.ndarray:
    """Budget-curve statistics from summed :func:`_k_columns`.

    ``(..., system, 1 + 3K)`` -> ``(..., system, k, stat)`` in the order of ``K_STATISTICS``.
    """
    ran = totals[..., 0]
    out = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(n_k):
            solved, spend, budget = (totals[..., 1 + 3 * i + q] for q in range(3))
            per_success = np.where(solved > 0, spend / np.where(solved > 0, solved, 1), np.inf)
            out.append(np.stack([solved / ran, budget / ran, spend / ran, per_success], -1))
    return np.stack(out, axis=-2)


def _observed_k_parts(per_task, ks, systems, tasks) -> dict:
    """Each task's unbiased pass@k, expected spend to a first success and cost of k attempts.

    Each from the task's own attempts; refuses a k above some task's attempts.
    """
    attempts, successes = per_task[..., 1], per_task[..., 2]
    ran = attempts > 0
    short = ran & (attempts < ks.max())
    if short.any():
        t_idx, s_idx = np.nonzero(short)
        names = sorted({str(tasks[t]) for t in t_idx})
        fewest = int(attempts[short].min())
        raise ValueError(
            f"k={int(ks.max())} needs at least that many attempts per task; {len(names)} "
            f"task(s) have fewer for some system (as few as {fewest}): "
            f"{describe_values(names, 5)} (systems "
            f"{describe_values(sorted({str(systems[s]) for s in s_idx}), 5)}); the bootstrap "
            f"uses each task's own attempts: give k <= {fewest}"
        )
    cbar, ran_f = _mean_attempt_cost(per_task)
    powers = _fail_powers(np.where(ran, attempts, 0), successes, int(ks.max()))
    powers = np.where(ran[..., None], powers, 0.0)
    cum = np.cumsum(powers, axis=-1)  # sum_{j<=i} (1-p)^j
    return {
        "ran": ran_f,
        "pass": np.stack([ran_f - powers[..., k] * ran_f for k in ks], -1),
        "spend": np.stack([cbar * cum[..., k - 1] for k in ks], -1),
        "budget": np.stack([k * cbar for k in ks], -1),
    }


def _dataset(estimate, draws, interval, systems, sample_dims, attrs, k_parts=None) -> xr.Dataset:
    out = {}
    for i, name in enumerate(STATISTICS):
        out[name] = xr.DataArray(estimate[:, i], dims=("system",))
        out[f"{name}_interval"] = xr.DataArray(interval[:, i], dims=("system", "ci_bound"))
        out[f"{name}_draws"] = xr.DataArray(draws[..., i], dims=sample_dims + ("system",))
    coords = {"system": np.asarray(systems, dtype=object), "ci_bound": ["lower", "upper"]}
    if k_parts is not None:
        ks, k_estimate, k_draws, k_interval = k_parts
        coords["k"] = np.asarray(ks, dtype=np.int64)
        for i, name in enumerate(K_STATISTICS):
            out[name] = xr.DataArray(k_estimate[..., i], dims=("system", "k"))
            out[f"{name}_interval"] = xr.DataArray(
                k_interval[..., i, :], dims=("system", "k", "ci_bound")
            )
            out[f"{name}_draws"] = xr.DataArray(k_draws[..., i], dims=sample_dims + ("system", "k"))
    ds = xr.Dataset(out, coords=coords)
    ds.attrs = attrs
    return ds


def cost(
    data: EvalData,
    column: str,
    *,
    k=None,
    unit: str = "task",
    ci_prob: float = 0.95,
    n_boot: int = 10_000,
    seed=0,
) -> xr.Dataset:
    """Bootstrap cost per attempt, cost per success, the status rates and the budget curve.

    Per system, from the per-``(system, task, status)`` sums of covariate ``column``:
    ``cost_per_attempt`` is the total cost of the attempts of every status over their number,
    ``cost_per_success`` the total cost over the total successes (``ok`` successes: the
    missing-outcome policy does not change it), and ``<status>_rate`` the share of attempts
    with status ``timeout``, ``error`` or ``invalid``, ``pass_at_1`` the ``ok`` successes over
    the attempts. Planned attempts that never ran (``not_run``) carry no cost and are not
    attempts.

    With ``k``, the budget curve and the cost of a first success with retries (see the module
    notes): ``pass_at_k``, ``cost_of_k``, ``expected_spend`` and ``cost_per_success_at_k`` on a
    ``k`` dim. Each task contributes its mean attempt cost times the unbiased estimates
    ``C(n - c, j) / C(n, j)`` of ``(1 - p)^j`` from its own n attempts and c successes (so
    ``pass_at_k`` is the unbiased pass@k of every attempt, timeouts and errors counted as
    failed tries), and k may not exceed any task's attempts.

    Tasks (or whole clusters) are resampled with replacement within strata, the same units for
    every system (so differences between systems are paired), and each ratio is recomputed
    from the resampled totals: the ratio estimator, resampled as a ratio. A replicate with no
    success has an infinite cost per success (an infinite upper bound when that is common).

    Parameters
    ----------
    data : EvalData
        Built with ``from_frame(..., covariates=[column])``.
    column : str
        The covariate holding each attempt's cost.
    k : int or list of int, optional
        Attempts per task of the budget curve (each at most every task's attempts).
    unit : {"task", "cluster"}, default "task"
        The resampling unit (``"cluster"`` needs task clusters).
    ci_prob : float, default 0.95
        Coverage of the percentile intervals (on ``ci_bound``).
    n_boot : int, default 10000
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        For each statistic: the estimate (``system``), ``<stat>_interval``
        (``system, ci_bound``) and ``<stat>_draws`` (the replicates, ``replicate, system``);
        the budget-curve statistics add a ``k`` dim after ``system``.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t2", "t3", "t4"],
    ...                    "success": [1, 0, 1, 1], "cost": [1.0, 2.0, 1.0, 4.0]})
    >>> data = be.from_frame(df, covariates=["cost"])
    >>> out = be.bootstrap.cost(data, "cost", n_boot=200)
    >>> float(out["cost_per_attempt"].item()), float(out["cost_per_success"].item())
    (2.0, 2.6666666666666665)
    >>> out["cost_per_success_interval"].dims
    ('system', 'ci_bound')

    Two attempts per task, retried until the first success (at most twice):

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2", "t2"],
    ...                    "success": [1, 0, 0, 0], "cost": [1.0, 3.0, 2.0, 2.0]})
    >>> out = be.bootstrap.cost(be.from_frame(df, covariates=["cost"]), "cost", k=[1, 2],
    ...                         n_boot=200)
    >>> out["pass_at_k"].values.tolist(), out["expected_spend"].values.tolist()
    ([[0.25, 0.5]], [[2.0, 3.5]])
    >>> out["cost_per_success_at_k"].values.tolist()  # (2 + 2) / 0.5, then (3 + 4) / 1
    [[8.0, 7.0]]
    """
    _check_column(data, column)
    validate_choice("unit", unit, ("task", "cluster"))
    if unit == "cluster" and not data.has_clusters:
        raise ValueError(
            "unit='cluster' needs task clusters; this data has none (pass "
            "cluster= when building it)"
        )
    ci_prob = validate_prob("ci_prob", ci_prob)
    n_boot = validate_positive_int("n_boot", n_boot, 2)
    seed = validate_seed(seed)
    ks = _check_ks(k)
    per_task, systems = _task_totals(data, column)
    n_q = per_task.shape[-1]
    if ks is not None:
        parts = _observed_k_parts(per_task, ks, systems, data.tasks)
        per_task = np.concatenate([per_task, _k_columns(parts, ks)], axis=-1)
    layout = _layout(data, unit, "task", None)
    n_unit = int(layout.unit.max()) + 1
    per_unit = np.zeros((n_unit,) + per_task.shape[1:])
    np.add.at(per_unit, layout.unit, per_task)
    unit_group = np.empty(n_unit, dtype=np.int64)
    unit_group[layout.unit] = layout.group
    rng = np.random.default_rng(seed)
    totals = np.zeros((n_boot,) + per_task.shape[1:])
    flat = per_unit.reshape(n_unit, -1)
    for g in range(len(layout.weight)):
        members = np.flatnonzero(unit_group == g)
        m = len(members)
        counts = rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot).astype(float)
        totals += (counts @ flat[members]).reshape(totals.shape)
    estimate = _ratios(per_task.sum(0)[..., :n_q])
    replicates = _ratios(totals[..., :n_q])
    k_parts = None
    if ks is not None:
        k_reps = _k_ratios(totals[..., n_q:], len(ks))
        k_parts = (
            ks,
            _k_ratios(per_task.sum(0)[..., n_q:], len(ks)),
            k_reps,
            percentiles(k_reps, ci_prob),
        )
    attrs = {
        "method": "bootstrap",
        "unit": unit,
        "column": column,
        "n_boot": n_boot,
        "ci_prob": ci_prob,
        "seed": seed,
        "missing_policy": data.missing or "none",
    }
    return _dataset(
        estimate,
        replicates,
        percentiles(replicates, ci_prob),
        systems,
        ("replicate",),
        attrs,
        k_parts,
    )


def posterior_cost(
    posterior: Posterior,
    column: str,
    *,
    k=None,
    model: str = "bayesian_bootstrap",
    ci_prob: float = 0.95,
    n_draws: int = 1000,
    seed=0,
) -> xr.Dataset:
    """Posterior cost per attempt, cost per success, status rates and budget curve.

    As ``Results.cost``.

    The cost side is the Bayesian bootstrap over tasks (Rubin 1981): tasks are exchangeable
    draws from a population whose distribution of per-task values (total cost, attempts,
    statuses) is given Dirichlet(1, ..., 1) weights on the observed tasks, the posterior of a
    Dirichlet-process model as its concentration goes to zero. It assumes nothing about the
    shape of the cost (skew and zeros are fine) but gives no mass to tasks unlike the observed
    ones. The success side is the fitted model: in each posterior draw, task j's expected
    successes are its trials (those the missing-outcome policy uses) times its posterior
    rate, and

        cost_per_success = sum_j w_j cost_j / sum_j w_j trials_j p_j,

    with the same weights w for cost and successes and for every system (paired), so the
    population pass@1 and the cost are coupled through the tasks. ``cost_per_attempt`` is
    ``sum_j w_j cost_j / sum_j w_j attempts_j``, the rates likewise. Every attempt's cost
    counts under its status; ``not_run`` attempts cost nothing and are not attempts. The
    twin is :func:`cost` (``bayeval.bootstrap.cost``).

    Task j's success rate per attempt is its posterior rate times its policy trials over its
    attempts (the rate itself when every attempt is ``ok``); with ``k`` the budget curve
    takes ``(1 - p_j)^i`` from that rate in each draw, so k may exceed the attempts made
    (the model extrapolates), and weighs the tasks with the same Dirichlet weights as the
    cost.

    ``model="lognormal"`` models the cost side instead (:mod:`bayeval.models.cost`): an
    attempt of system s costs 0 with probability pi_s (a hurdle, Beta(1, 1) prior, so the
    posterior is Beta(1 + zeros, 1 + positives)), and otherwise, on task t of cluster c,

        log cost = mu_s + lambda_s (g_c + u_t) + w_st + e,

    with ``g_c ~ N(0, sigma_cluster^2)`` and ``u_t ~ N(0, 1)`` shared by the systems that
    ran the task (the costs are paired, as the successes are), a loading ``lambda_s`` per
    system, a task-by-system effect ``w_st ~ N(0, omega_s^2)`` and attempt noise
    ``e ~ N(0, sigma_s^2)``; flat prior on mu, half-Cauchy(0, 1) on the loadings and
    spreads (log units). It is fitted from the stored per-cell counts, sums of logs and
    squared logs of the positive costs, the effects and mu integrated out in closed form
    (NUTS on the loadings and spreads; ``attrs["cost_divergences"]`` counts divergent
    transitions), and each observed task's expected attempt cost ``(1 - pi_s)
    exp(mu_s + lambda_s (g_c + u_t) + w_st + sigma_s^2 / 2)`` is drawn from its
    posterior. These task costs take the place of the observed ones under the same
    Dirichlet task weights, so cost and success stay coupled task by task (the budget
    curve included: a hard task that also costs more counts as both). Each system
    needs at least 2 positive costs on at least 2 tasks. The first fit for a number of
    systems compiles its sampler (seconds), later ones in the process reuse it.
    ``models/cost.md`` has the coverage of both models.

    Parameters
    ----------
    posterior : Posterior
        A fit whose data has covariate ``column`` (one success count per attempt: not under
        ``missing="bounds"``).
    column : str
        A covariate given to ``from_frame(..., covariates=[...])``.
    k : int or list of int, optional
        The budget curve (``pass_at_k``, ``cost_of_k``, ``expected_spend``,
        ``cost_per_success_at_k`` on a ``k`` dim).
    model : {"bayesian_bootstrap", "lognormal"}, default "bayesian_bootstrap"
        The cost side: the Bayesian bootstrap over tasks (no shape assumed) or the
        crossed hurdle log-normal (task and cluster effects shared by the systems).
    ci_prob : float, default 0.95
        Coverage of the equal-tailed intervals (on ``ci_bound``).
    n_draws : int, default 1000
        Posterior draws used (about that many, taken evenly from each chain; per-task
        readouts cost in proportion), one weight vector each.
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        For each statistic: the posterior mean (``system``), ``<stat>_interval``
        (``system, ci_bound``) and ``<stat>_draws`` (``draw, system``); the budget-curve
        statistics add a ``k`` dim after ``system``. The same variables under either
        model, which ``attrs["cost_model"]`` names.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval.analyses.cost import posterior_cost
    >>> df = pd.DataFrame({"system": "A", "task": [f"t{i // 2}" for i in range(8)],
    ...                    "success": [1, 0, 1, 1, 0, 1, 1, 0], "cost": [1.0, 2.0] * 4})
    >>> data = be.from_frame(df, covariates=["cost"])
    >>> res = be.fit(data, model="beta_binomial", draws=200, chains=2, seed=0)
    >>> out = posterior_cost(res, "cost", n_draws=200)
    >>> float(out["cost_per_attempt"].item()) > 1.2
    True
    >>> out["cost_per_success_interval"].dims
    ('system', 'ci_bound')
    >>> posterior_cost(res, "cost", n_draws=200, k=[1, 4])["cost_per_success_at_k"].dims
    ('system', 'k')

    The crossed hurdle log-normal for the cost side:

    >>> df = pd.DataFrame({"system": "A", "task": [f"t{i // 2}" for i in range(40)],
    ...                    "success": [1, 0, 1, 1, 0, 1, 1, 0] * 5, "cost": [1.0, 2.0] * 20})
    >>> res = be.fit(be.from_frame(df, covariates=["cost"]), model="beta_binomial",
    ...              draws=200, chains=2, seed=0)
    >>> out = posterior_cost(res, "cost", n_draws=200, model="lognormal")
    >>> out.attrs["cost_model"], 1.0 < float(out["cost_per_attempt"].item()) < 2.5
    ('lognormal', True)
    """
    data = posterior.data
    _check_column(data, column)
    cost_model = cost_models.MODELS[validate_choice("model", model, COST_MODELS)]
    ci_prob = validate_prob("ci_prob", ci_prob)
    n_draws = validate_positive_int("n_draws", n_draws, 2)
    seed = validate_seed(seed)
    ks = _check_ks(k)
    if data.missing == "bounds":
        raise ValueError(
            "Results.cost needs one success count per attempt; under "
            "missing='bounds' the successes have two extremes: refit with "
            "missing='fail' or 'exclude'"
        )
    cost_model.refuse(data, column)  # before the per-task readouts
    per_task, systems = _task_totals(data, column)  # (task, system, quantity)
    # per-task readouts cost in proportion to the draws: read only the draws used, taken
    # evenly from each chain
    thin = thinned(posterior, n_draws)
    rates = thin._model.task_rates(thin.tree).stack(sample=("chain", "draw"))
    rates = rates.transpose("sample", "system", "task").values
    rng = np.random.default_rng(seed)
    n_draws = rates.shape[0]
    trials = data.dataset["trials"].transpose("system", "task").values.astype(float)
    weights = rng.dirichlet(np.ones(per_task.shape[0]), size=n_draws)  # (draw, task)
    totals = np.einsum("dt,tsq->dsq", weights, per_task)
    # expected successes of task j under the fit: its policy trials times its rate
    totals[..., 2] = np.einsum("dt,dst->ds", weights, trials[None] * rates)
    cbar, ran = _mean_attempt_cost(per_task)  # (task, system)
    cbar = np.broadcast_to(cbar.T[None], (n_draws,) + cbar.T.shape)  # (draw, system, task)
    task_cost, extra = cost_model.task_costs(data, column, n_draws, rng, seed)
    if task_cost is not None:
        # each task's expected attempt cost in the draw, weighted like its successes
        totals[..., 0] = np.einsum("dt,dst->ds", weights, per_task[..., 1].T[None] * task_cost)
        cbar = task_cost * ran.T[None]
    draws = _ratios(totals)
    interval = percentiles(draws, ci_prob)
    estimate = draw_mean(draws)
    k_parts = None
    if ks is not None:
        attempts = per_task[..., 1].T
        with np.errstate(invalid="ignore", divide="ignore"):
            per_attempt = np.where(attempts > 0, trials / np.where(attempts > 0, attempts, 1), 0.0)
        fail = 1.0 - np.clip(rates * per_attempt[None], 0.0, 1.0)  # (draw, system, task)
        k_totals = np.zeros((n_draws, len(systems), 1 + 3 * len(ks)))
        k_totals[..., 0] = weights @ ran
        power, spend, i = np.ones_like(fail), np.zeros_like(fail), 0
        for step in range(1, int(ks.max()) + 1):
            spend += power  # sum_{j < step} (1 - p)^j
            power *= fail
            if step == ks[i]:
                k_totals[..., 1 + 3 * i] = np.einsum("dt,dst->ds", weights, ran.T * (1 - power))
                k_totals[..., 2 + 3 * i] = np.einsum("dt,dst->ds", weights, cbar * spend)
                k_totals[..., 3 + 3 * i] = step * np.einsum("dt,dst->ds", weights, cbar)
                i += 1
        k_draws = _k_ratios(k_totals, len(ks))
        k_parts = (ks, draw_mean(k_draws), k_draws, percentiles(k_draws, ci_prob))
    attrs = {
        "method": cost_model.method,
        "model": posterior.model,
        "cost_model": cost_model.name,
        "column": column,
        "n_draws": n_draws,
        "ci_prob": ci_prob,
        "seed": seed,
        "missing_policy": data.missing or "none",
        **extra,
    }
    return _dataset(estimate, draws, interval, systems, ("draw",), attrs, k_parts)
