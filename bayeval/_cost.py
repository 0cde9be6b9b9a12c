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

:func:`frontier` gives the cost-success Pareto frontier and, for every pair, the probability
that one system dominates the other (succeeds at least as often, costs at most as much), over
the joint draws or replicates of either version.

:func:`cost` (re-exported as ``bayeval.bootstrap.cost``) resamples tasks (or clusters) within
strata, the same units for every system, and recomputes each ratio from the resampled totals:
a ratio estimator resampled as a ratio. :func:`posterior_cost` (``Results.cost``) is its
posterior twin: the Bayesian bootstrap over tasks (Rubin 1981) for the cost, with the fitted
model's task rates for the successes, coupled through the same task weights; with
``model="lognormal"`` each task's cost is instead drawn from a crossed hurdle log-normal
(:mod:`bayeval.models._cost_lognormal`: task and cluster effects shared by the systems, a
Beta posterior for each system's share of zero costs), fitted from the stored sums of logs
and squared logs, under the same task weights.
"""

from __future__ import annotations

import json
import warnings

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

__all__ = [
    "cost",
    "evidence",
    "frontier",
    "latency",
    "latency_table",
    "posterior_cost",
    "posterior_latency",
]

RATE_STATUSES = ("timeout", "error", "invalid")
STATISTICS = (
    ("cost_per_attempt", "cost_per_success")
    + tuple(f"{s}_rate" for s in RATE_STATUSES)
    + ("pass_at_1",)
)
#: Statistics on the ``k`` dim (``k=[...]``): the budget curve.
K_STATISTICS = ("pass_at_k", "cost_of_k", "expected_spend", "cost_per_success_at_k")


def _check_column(data, column) -> None:
    from bayeval.data import EvalData
    from bayeval.resampling import _refuse_scores

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
    """Per task and system: cost, attempts, successes and the rate statuses, shape
    ``(task, system, 3 + len(RATE_STATUSES))``."""
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
    """Each (task, system)'s mean attempt cost (0 where it made no attempt) and whether it
    made any, both ``(task, system)``."""
    attempts = per_task[..., 1]
    ran = attempts > 0
    cbar = np.where(ran, per_task[..., 0] / np.where(ran, attempts, 1), 0.0)
    return cbar, ran.astype(float)


def _fail_powers(attempts, successes, kmax) -> np.ndarray:
    """Unbiased estimates of ``(1 - p)^j`` for j = 0..kmax from c successes in n attempts,
    ``C(n - c, j) / C(n, j)`` as a product; last axis j. NaN where j > n."""
    n, c = attempts[..., None], successes[..., None]
    j = np.arange(kmax + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        factors = (n - c - j[:-1]) / (n - j[:-1])
    out = np.concatenate([np.ones(n.shape), np.cumprod(factors, axis=-1)], axis=-1)
    return np.where(j <= n, out, np.nan)


def _k_columns(parts: dict, ks) -> np.ndarray:
    """Per-task totals of the budget curve, ``(..., 1 + 3 len(ks))``: tasks run, then for each
    k its pass@k, its expected spend and the cost of k attempts."""
    cols = [parts["ran"]]
    for i in range(len(ks)):
        cols += [parts["pass"][..., i], parts["spend"][..., i], parts["budget"][..., i]]
    return np.stack(cols, axis=-1)


def _k_ratios(totals: np.ndarray, n_k: int) -> np.ndarray:
    """Budget-curve statistics from summed :func:`_k_columns` ``(..., system, 1 + 3K)`` ->
    ``(..., system, k, stat)`` in the order of ``K_STATISTICS``."""
    ran = totals[..., 0]
    out = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for i in range(n_k):
            solved, spend, budget = (totals[..., 1 + 3 * i + q] for q in range(3))
            per_success = np.where(solved > 0, spend / np.where(solved > 0, solved, 1), np.inf)
            out.append(np.stack([solved / ran, budget / ran, spend / ran, per_success], -1))
    return np.stack(out, axis=-2)


def _observed_k_parts(per_task, ks, systems, tasks) -> dict:
    """Each task's unbiased pass@k, expected spend to a first success and cost of k attempts
    from its own attempts; refuses a k above some task's attempts."""
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


def _percentiles(replicates: np.ndarray, ci_prob: float) -> np.ndarray:
    """Percentile interval over axis 0, on ``ci_bound`` last; an infinite bound stays infinite."""
    alpha = 1 - ci_prob
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.quantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    q = np.where(np.isnan(q) & np.isinf(replicates).any(axis=0), np.inf, q)
    return np.moveaxis(q, 0, -1)


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


def cost(data, column, unit="task", n_boot=10_000, ci_prob=0.95, seed=0, k=None) -> xr.Dataset:
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
    unit : {"task", "cluster"}, default "task"
        The resampling unit (``"cluster"`` needs task clusters).
    n_boot : int, default 10000
    ci_prob : float, default 0.95
        Coverage of the percentile intervals (on ``ci_bound``).
    seed : int, default 0
    k : int or list of int, optional
        Attempts per task of the budget curve (each at most every task's attempts).

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
    from bayeval.resampling import _layout

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
            _percentiles(k_reps, ci_prob),
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
        _percentiles(replicates, ci_prob),
        systems,
        ("replicate",),
        attrs,
        k_parts,
    )


#: Models of the cost side of :func:`posterior_cost` (``Results.cost``).
COST_MODELS = ("bayesian_bootstrap", "lognormal")


def _positive_cost_stats(data, column) -> dict:
    """Per ``(system, task)``, over the attempted statuses (``not_run`` left out): the count of
    positive costs, the mean and within-task sum of squares of their logs (from the stored
    sums of logs and squared logs), and per system the attempts with a zero cost."""
    ds = data.dataset.sel(covariate=column).drop_sel(status="not_run")

    def summed(name):
        return ds[name].sum("status").transpose("system", "task").values.astype(float)

    n_pos, logsum, logsumsq = (
        summed(v) for v in ("covariate_positive", "covariate_logsum", "covariate_logsumsq")
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar = np.where(n_pos > 0, logsum / np.where(n_pos > 0, n_pos, 1), 0.0)
    within = np.clip(logsumsq - n_pos * ybar**2, 0.0, None)
    zeros = (summed("covariate_count") - n_pos).sum(axis=1)
    return {
        "n": n_pos,
        "ybar": ybar,
        "within": within,
        "logsum": logsum,
        "logsumsq": logsumsq,
        "zeros": zeros,
    }


def _check_lognormal_cost(data, column, stats) -> None:
    """Refuse a system with fewer than 2 positive costs or positive costs on fewer than 2
    tasks: the log-normal's spreads would rest on the prior alone."""
    few = [
        (str(system), int(stats["n"][s].sum()), int((stats["n"][s] > 0).sum()))
        for s, system in enumerate(data.systems)
        if stats["n"][s].sum() < 2 or (stats["n"][s] > 0).sum() < 2
    ]
    if few:
        listed = "; ".join(f"{name}: {n} positive cost(s) on {t} task(s)" for name, n, t in few)
        raise ValueError(
            f"the log-normal cost model of covariate {column!r} needs at least 2 positive "
            f"costs on at least 2 tasks per system (its log-scale spread and task spread are "
            f"estimated from them); system(s) {listed}: use model='bayesian_bootstrap' (no "
            "shape assumed) or drop those systems"
        )


def _lognormal_cost_draws(data, column, n_draws, rng, seed=0):
    """Posterior draws ``(n_draws, system, task)`` of each task's expected attempt cost under
    the crossed hurdle log-normal (:mod:`bayeval.models._cost_lognormal`),
    ``(1 - pi_s) exp(mu_s + lambda_s (g_c + u_t) + w_st + sigma_s^2 / 2)``, and a dict of the
    draws of its parameters (``mu``, ``loading``, ``omega``, ``sigma`` and ``zero_share`` per
    system, ``sigma_cluster``), the expected cost of an attempt on a new task of a new cluster
    (``new_task``, ``(n_draws, system)``) and the sampler's ``divergences``."""
    from bayeval.models import _cost_lognormal

    stats = _positive_cost_stats(data, column)
    _check_lognormal_cost(data, column, stats)
    arr = _cost_lognormal.cell_arrays(
        stats, data.dataset["cluster"].values if data.has_clusters else None
    )
    params = _cost_lognormal.sample(arr, data.has_clusters, n_draws, seed)
    effects = _cost_lognormal.effect_draws(arr, params, rng)
    positives = stats["n"].sum(axis=1)
    params["zero_share"] = rng.beta(
        1.0 + stats["zeros"], 1.0 + positives, size=(n_draws, len(positives))
    )
    keep = 1.0 - params["zero_share"]
    half_var = 0.5 * params["sigma"] ** 2
    spread = (
        params["loading"] ** 2 * (1.0 + params["sigma_cluster"] ** 2)[:, None]
        + params["omega"] ** 2
    )
    with np.errstate(over="ignore"):
        params["new_task"] = keep * np.exp(params["mu"] + half_var + 0.5 * spread)
        per_task = keep[..., None] * np.exp((params["mu"] + half_var)[..., None] + effects)
    return per_task, params


def posterior_cost(
    results, column, ci_prob=0.95, n_draws=1000, seed=0, k=None, model="bayesian_bootstrap"
) -> xr.Dataset:
    """Posterior cost per attempt, cost per success, status rates and budget curve; see
    :meth:`bayeval.Results.cost`.

    Task j's success rate per attempt is its posterior rate times its policy trials over its
    attempts (the rate itself when every attempt is ``ok``); with ``k`` the budget curve
    takes ``(1 - p_j)^i`` from that rate in each draw, so k may exceed the attempts made
    (the model extrapolates), and weighs the tasks with the same Dirichlet weights as the
    cost. ``model="lognormal"`` replaces each task's observed cost by its expected attempt
    cost drawn from the crossed hurdle log-normal of :meth:`bayeval.Results.cost`.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": "A", "task": [f"t{i // 2}" for i in range(8)],
    ...                    "success": [1, 0, 1, 1, 0, 1, 1, 0], "cost": [1.0, 2.0] * 4})
    >>> data = be.from_frame(df, covariates=["cost"])
    >>> res = be.fit(data, model="beta_binomial", draws=200, chains=2, seed=0)
    >>> out = posterior_cost(res, "cost", n_draws=200)
    >>> float(out["cost_per_attempt"].item()) > 1.2
    True
    >>> posterior_cost(res, "cost", n_draws=200, k=[1, 4])["cost_per_success_at_k"].dims
    ('system', 'k')
    >>> posterior_cost(res, "cost", n_draws=200, model="lognormal").attrs["cost_model"]
    'lognormal'
    """
    data = results.data
    _check_column(data, column)
    validate_choice("model", model, COST_MODELS)
    ci_prob = validate_prob("ci_prob", ci_prob)
    from bayeval.analyses._draws import thinned

    n_draws = validate_positive_int("n_draws", n_draws, 2)
    seed = validate_seed(seed)
    ks = _check_ks(k)
    if data.missing == "bounds":
        raise ValueError(
            "Results.cost needs one success count per attempt; under "
            "missing='bounds' the successes have two extremes: refit with "
            "missing='fail' or 'exclude'"
        )
    if model == "lognormal":  # refuse before the per-task readouts
        _check_lognormal_cost(data, column, _positive_cost_stats(data, column))
    per_task, systems = _task_totals(data, column)  # (task, system, quantity)
    # per-task readouts cost in proportion to the draws (3 ms a draw for the 25-system
    # SWE-bench paired fit): read only the draws used, taken evenly from each chain
    rates = thinned(results, n_draws).task_rates().stack(sample=("chain", "draw"))
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
    extra = {}
    if model == "lognormal":
        # each task's expected attempt cost in the draw, weighted like its successes
        task_cost, params = _lognormal_cost_draws(data, column, n_draws, rng, seed)
        totals[..., 0] = np.einsum("dt,dst->ds", weights, per_task[..., 1].T[None] * task_cost)
        cbar = task_cost * ran.T[None]
        extra = {"cost_divergences": params["divergences"]}
    draws = _ratios(totals)
    interval = _percentiles(draws, ci_prob)
    estimate = _mean(draws)
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
        k_parts = (ks, _mean(k_draws), k_draws, _percentiles(k_draws, ci_prob))
    if model == "lognormal":
        method = (
            "posterior (crossed hurdle log-normal cost with task effects shared by the "
            "systems, model task rates, both under Bayesian bootstrap task weights)"
        )
    else:
        method = "posterior (Bayesian bootstrap over tasks, model task rates)"
    attrs = {
        "method": method,
        "model": results.model,
        "cost_model": model,
        "column": column,
        "n_draws": n_draws,
        "ci_prob": ci_prob,
        "seed": seed,
        "missing_policy": data.missing or "none",
        **extra,
    }
    return _dataset(estimate, draws, interval, systems, ("draw",), attrs, k_parts)


def _mean(draws: np.ndarray) -> np.ndarray:
    """Mean over axis 0; infinite where any draw is."""
    with np.errstate(invalid="ignore"):
        return draws.mean(axis=0)


COST_AXES = (
    "cost_per_attempt",
    "cost_per_success",
    "cost_of_k",
    "expected_spend",
    "cost_per_success_at_k",
)
SUCCESS_AXES = ("pass_at_1", "pass_at_k")


def _dominates(success: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """``out[..., a, b]``: a succeeds at least as often as b and costs at most as much
    (systems on the last axis of both inputs)."""
    return (success[..., :, None] >= success[..., None, :]) & (
        cost[..., :, None] <= cost[..., None, :]
    )


def _undominated(success: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Systems no other system dominates strictly (at least as good on both axes, better on
    one), on the last axis."""
    weak = _dominates(success, cost)
    strict = weak & (
        (success[..., :, None] > success[..., None, :]) | (cost[..., :, None] < cost[..., None, :])
    )
    return ~strict.any(axis=-2)


def frontier(
    result: xr.Dataset, cost: str = "cost_per_attempt", success: str = "pass_at_1", k=None
) -> xr.Dataset:
    """Cost-success Pareto frontier and the probability that one system dominates another.

    System A dominates B when it succeeds at least as often and costs at most as much. The
    frontier is the systems no other system dominates with at least one strict inequality,
    on the point estimates; ``prob_dominates`` is the share of joint draws (posterior, from
    :meth:`bayeval.Results.cost`) or joint replicates (bootstrap, from
    :func:`bayeval.bootstrap.cost`) in which the candidate's success is at least the
    baseline's and its cost at most the baseline's. The draws are joint because every
    system shares each draw's task weights (resampled tasks), so the probability carries the
    pairing of systems on shared tasks.

    Parameters
    ----------
    result : xarray.Dataset
        The output of :func:`bayeval.bootstrap.cost` or :meth:`bayeval.Results.cost`.
    cost : str, default "cost_per_attempt"
        The cost axis: ``cost_per_attempt`` or ``cost_per_success``, or with ``k`` one of
        ``cost_of_k``, ``expected_spend`` and ``cost_per_success_at_k``. Cost per attempt
        keeps the two axes apart (cost per success already divides by the success rate).
    success : {"pass_at_1", "pass_at_k"}, default "pass_at_1"
    k : int, optional
        The k of a budget-curve axis (the result must have been computed with it).

    Returns
    -------
    xarray.Dataset
        ``on_frontier`` (``system``, bool), ``prob_on_frontier`` (``system``: the share of
        draws in which no system strictly dominates it), ``prob_dominates``
        (``candidate, baseline``; the diagonal is NaN), the two axes' point estimates
        ``success`` and ``cost`` (``system``), and ``frontier`` (the frontier systems by
        increasing cost) in the attributes.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval import frontier
    >>> df = pd.DataFrame({"system": ["A"] * 4 + ["B"] * 4 + ["C"] * 4,
    ...                    "task": ["t1", "t2", "t3", "t4"] * 3,
    ...                    "success": [1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1],
    ...                    "cost": [1.0] * 4 + [2.0] * 4 + [3.0] * 4})
    >>> out = frontier(be.bootstrap.cost(be.from_frame(df, covariates=["cost"]), "cost",
    ...                                  n_boot=500))
    >>> out.attrs["frontier"]
    ['A', 'C']
    >>> float(out["prob_dominates"].sel(candidate="A", baseline="B"))
    1.0
    """
    if not isinstance(result, xr.Dataset) or "cost_per_attempt_draws" not in result:
        raise TypeError("result must be the Dataset of bayeval.bootstrap.cost or Results.cost")
    validate_choice("cost", cost, COST_AXES)
    validate_choice("success", success, SUCCESS_AXES)
    needs_k = cost in K_STATISTICS or success in K_STATISTICS
    if needs_k and k is None:
        raise ValueError(
            f"cost={cost!r} with success={success!r} is on the budget curve: "
            "give k (one of the result's k)"
        )
    if needs_k:
        if "k" not in result.coords:
            raise ValueError("this result has no budget curve: compute it with k=[...]")
        have = [int(v) for v in result["k"].values]
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) not in have:
            raise ValueError(f"k must be one of the result's k {have}; got {k!r}")
    elif k is not None:
        raise ValueError(
            f"k applies to the budget-curve axes (pass_at_k, "
            f"{', '.join(K_STATISTICS[1:])}); got k={k!r} with cost={cost!r} "
            f"and success={success!r}"
        )

    def pick(name):
        est, draws = result[name], result[f"{name}_draws"]
        if "k" in est.dims:
            est, draws = est.sel(k=int(k)), draws.sel(k=int(k))
        return est.values.astype(float), draws.transpose(..., "system").values.astype(float)

    s_est, s_draws = pick(success)
    c_est, c_draws = pick(cost)
    systems = [str(s) for s in result["system"].values]
    prob = _dominates(s_draws, c_draws).mean(axis=0).astype(float)
    np.fill_diagonal(prob, np.nan)
    on = _undominated(s_est, c_est)
    prob_on = _undominated(s_draws, c_draws).mean(axis=0)
    order = sorted((i for i in range(len(systems)) if on[i]), key=lambda i: (c_est[i], -s_est[i]))
    label = np.asarray(result["system"].values, dtype=object)
    out = xr.Dataset(
        {
            "on_frontier": ("system", on),
            "prob_on_frontier": ("system", prob_on),
            "prob_dominates": (("candidate", "baseline"), prob),
            "success": ("system", s_est),
            "cost": ("system", c_est),
        },
        coords={"system": label, "candidate": label, "baseline": label},
    )
    out.attrs = {
        "cost": cost,
        "success": success,
        "k": None if k is None else int(k),
        "frontier": [systems[i] for i in order],
        "method": result.attrs.get("method"),
        "column": result.attrs.get("column"),
    }
    return out


def _json(value):
    """A JSON-ready number: None for NaN and infinities."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    value = float(value)
    return value if np.isfinite(value) else None


def _triple(ds, name, prefix, **sel) -> dict:
    est = ds[name].sel(sel) if sel else ds[name]
    low, high = (ds[f"{name}_interval"].sel(sel) if sel else ds[f"{name}_interval"]).values
    key = "mean" if prefix == "bayes" else "estimate"
    return {
        f"{prefix}_{key}": _json(est),
        f"{prefix}_lower": _json(low),
        f"{prefix}_upper": _json(high),
    }


def _paired_effect(ds, name, system, reference, prefix, ci_prob, point, **sel) -> dict:
    """``name`` of ``system`` minus the reference's over the joint draws (paired through the
    shared task weights); the point is the difference of the two estimates."""
    draws = ds[f"{name}_draws"].sel(sel) if sel else ds[f"{name}_draws"]
    diff = (draws.sel(system=system) - draws.sel(system=reference)).values
    low, high = _percentiles(diff[:, None], ci_prob)[0]
    key = "mean" if prefix == "bayes" else "estimate"
    return {
        f"{prefix}_{key}": _json(point),
        f"{prefix}_lower": _json(low),
        f"{prefix}_upper": _json(high),
        f"{prefix}_prob_positive": _json(np.mean(diff > 0)),
    }


def _apart(post: xr.Dataset, boot: xr.Dataset, name: str) -> np.ndarray:
    """Where the posterior and the bootstrap disagree on ``name``: either's point outside the
    other's interval (bool, the variable's dims less ``ci_bound``)."""
    p_lo, p_hi = (post[f"{name}_interval"].sel(ci_bound=b).values for b in ("lower", "upper"))
    b_lo, b_hi = (boot[f"{name}_interval"].sel(ci_bound=b).values for b in ("lower", "upper"))
    p_est, b_est = post[name].values, boot[name].values
    with np.errstate(invalid="ignore"):
        return (p_est < b_lo) | (p_est > b_hi) | (b_est < p_lo) | (b_est > p_hi)


def _cost_misfit(post: xr.Dataset, boot: xr.Dataset) -> np.ndarray:
    """Per system: whether the log-normal's cost per attempt and the bootstrap's disagree
    (:func:`_apart`), ``(system,)`` bool. The log-normal's mean ``exp(sigma^2 / 2)`` factor
    rests on the shape of the log costs: a skewed one (on the bundled SWE-bench file, a system
    with log-cost skewness -1.1) moves it by tens of percent while the task-resampled mean
    stays where the data put it."""
    return _apart(post, boot, "cost_per_attempt")


def evidence(
    results,
    column,
    k=1,
    n_boot=2000,
    seed=0,
    ci_prob=0.95,
    reference=None,
    unit="task",
    n_draws=1000,
    model="bayesian_bootstrap",
) -> dict:
    """The cost-success evidence table of the report card, as a JSON-ready ``dict``.

    Per system, posterior (:meth:`bayeval.Results.cost`) next to bootstrap
    (:func:`bayeval.bootstrap.cost`): pass@1 and pass@k per attempt (every attempt counts; a
    timed-out or errored attempt is a failed try), the paired pass@1 effect against the
    reference system (candidate minus reference over the joint draws, which share their task
    weights), cost per attempt and per success, the timeout, error and invalid rates, whether
    the system is on the cost-per-attempt / pass@1 frontier and the system most likely to
    dominate it. Then every ordered pair's P(candidate dominates baseline), the budget
    curve for each k (the bootstrap only where k is at most every task's attempts), and
    under ``model="lognormal"`` the systems whose log-normal and bootstrap costs per attempt
    disagree (``cost_misfit``: either's point outside the other's interval; empty otherwise).

    Parameters
    ----------
    results : Results
        A fit whose data has covariate ``column``.
    column : str
    k : int or list of int, default 1
        The budget curve's k (1 is always included); the table's pass@k is the largest.
    n_boot, seed, ci_prob, unit, n_draws, model
        As in :func:`cost` and :func:`posterior_cost` (``model``: the posterior's cost side,
        ``"bayesian_bootstrap"`` or ``"lognormal"``).
    reference : str, optional
        The system the paired effects are taken against; default the one with the highest
        posterior pass@1.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval._cost import evidence
    >>> df = pd.DataFrame({"system": ["A"] * 6 + ["B"] * 6, "task": [0, 0, 1, 1, 2, 2] * 2,
    ...                    "success": [1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0],
    ...                    "cost": [1.0] * 6 + [0.5] * 6})
    >>> res = be.fit(be.from_frame(df, covariates=["cost"]), model="beta_binomial",
    ...              draws=200, chains=2, seed=0)
    >>> out = evidence(res, "cost", n_boot=500, n_draws=400)
    >>> out["reference"], [row["system"] for row in out["rows"]]
    ('A', ['A', 'B'])
    >>> out["rows"][1]["cost_per_success_bootstrap_estimate"]  # 3.0 / 2 successes
    1.5
    """
    data = results.data
    _check_column(data, column)
    ks = sorted({1, *_check_ks(k).tolist()})
    per_task, systems = _task_totals(data, column)
    attempts = per_task[..., 1]
    fewest = int(attempts[attempts > 0].min()) if (attempts > 0).any() else 0
    boot_ks = [v for v in ks if v <= fewest]
    post = posterior_cost(
        results, column, ci_prob=ci_prob, n_draws=n_draws, seed=seed, k=ks, model=model
    )
    boot = cost(data, column, unit=unit, n_boot=n_boot, ci_prob=ci_prob, seed=seed, k=boot_ks)
    labels = [str(s) for s in systems]
    if reference is None:
        reference = systems[int(np.nanargmax(post["pass_at_1"].values))]
    elif reference not in list(systems):
        raise ValueError(
            f"reference must be one of the systems {describe_values(labels)}; got {reference!r}"
        )
    fronts = {"bayes": frontier(post), "bootstrap": frontier(boot)}
    misfit = (
        _cost_misfit(post, boot) if model == "lognormal" else np.zeros(len(systems), dtype=bool)
    )
    k_top = ks[-1]
    rows = []
    for system in systems:
        row = {"system": str(system)}
        for prefix, ds in (("bayes", post), ("bootstrap", boot)):
            for name, out_name in (
                ("pass_at_1", "pass_at_1"),
                ("cost_per_attempt", "cost_per_attempt"),
                ("cost_per_success", "cost_per_success"),
            ):
                part = _triple(ds.sel(system=system), name, prefix)
                row.update({f"{out_name}_{key}": v for key, v in part.items()})
            if k_top > 1 and k_top in ds.coords.get("k", xr.DataArray([])).values:
                part = _triple(ds.sel(system=system), "pass_at_k", prefix, k=k_top)
            else:
                part = dict.fromkeys(_triple(ds.sel(system=system), "pass_at_1", prefix), None)
            row.update({f"pass_at_k_{key}": v for key, v in part.items()})
            point = float(
                ds["pass_at_1"].sel(system=system) - ds["pass_at_1"].sel(system=reference)
            )
            part = _paired_effect(ds, "pass_at_1", system, reference, prefix, ci_prob, point)
            if system == reference:
                part = dict.fromkeys(part, None)
            row.update({f"effect_{key}": v for key, v in part.items()})
            front = fronts[prefix]
            row[f"on_frontier_{prefix}"] = bool(front["on_frontier"].sel(system=system))
            row[f"prob_on_frontier_{prefix}"] = _json(front["prob_on_frontier"].sel(system=system))
        for status in RATE_STATUSES:
            row[f"{status}_rate"] = _json(boot[f"{status}_rate"].sel(system=system))
        against = fronts["bayes"]["prob_dominates"].sel(baseline=system)
        if len(systems) > 1:
            best = int(np.nanargmax(against.values))
            other = systems[best]
            row["dominated_by"] = str(other)
            row["prob_dominated_bayes"] = _json(against.values[best])
            row["prob_dominated_bootstrap"] = _json(
                fronts["bootstrap"]["prob_dominates"].sel(candidate=other, baseline=system)
            )
        else:
            row["dominated_by"] = row["prob_dominated_bayes"] = None
            row["prob_dominated_bootstrap"] = None
        rows.append(row)
    dominance = [
        {
            "candidate": str(a),
            "baseline": str(b),
            "bayes": _json(fronts["bayes"]["prob_dominates"].sel(candidate=a, baseline=b)),
            "bootstrap": _json(fronts["bootstrap"]["prob_dominates"].sel(candidate=a, baseline=b)),
        }
        for a in systems
        for b in systems
        if a != b
    ]
    budget = []
    for system in systems:
        for kk in ks:
            entry = {"system": str(system), "k": int(kk)}
            for name in K_STATISTICS:
                entry.update(
                    {
                        f"{name}_{key}": v
                        for key, v in _triple(post.sel(system=system), name, "bayes", k=kk).items()
                    }
                )
                if kk in boot_ks:
                    part = _triple(boot.sel(system=system), name, "bootstrap", k=kk)
                else:
                    part = dict.fromkeys(
                        ("bootstrap_estimate", "bootstrap_lower", "bootstrap_upper"), None
                    )
                entry.update({f"{name}_{key}": v for key, v in part.items()})
            budget.append(entry)
    return {
        "column": column,
        "cost_model": post.attrs["cost_model"],
        "reference": str(reference),
        "k": [int(v) for v in ks],
        "pass_k": int(k_top),
        "bootstrap_k": [int(v) for v in boot_ks],
        "unit": unit,
        "n_draws": int(post.attrs["n_draws"]),
        "cost_misfit": [str(s) for s, bad in zip(systems, misfit) if bad],
        "frontier": {
            "cost": "cost_per_attempt",
            "success": "pass_at_1",
            "bayes": fronts["bayes"].attrs["frontier"],
            "bootstrap": fronts["bootstrap"].attrs["frontier"],
        },
        "rows": rows,
        "dominance": dominance,
        "budget": budget,
    }


# -- latency -----------------------------------------------------------------------------------
#: Status rates read with the latency: timeouts and infrastructure (environment) errors.
LATENCY_RATES = ("timeout", "error")


def _check_quantiles(q) -> np.ndarray:
    """``q``: a probability or a list of distinct probabilities in [0, 1], sorted."""
    values = [q] if np.ndim(q) == 0 else list(np.ravel(q))
    if not values:
        raise ValueError("q must give at least one quantile level")
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(
            v, (int, float, np.integer, np.floating)
        ):
            raise TypeError(f"q must hold quantile levels in [0, 1] (numbers); got {v!r}")
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"q must hold quantile levels in [0, 1]; got {v!r}")
    out = np.array(sorted({float(v) for v in values}))
    if len(out) != len(values):
        raise ValueError(f"q holds a level more than once: {values!r}")
    return out


def _latency_inputs(data, statuses):
    """Per system: the included durations, sorted, with each one's task; and the per-task
    status totals ``(task, system, 1 + len(LATENCY_RATES))`` (attempts, then the rates)."""
    from bayeval.data import STATUSES, EvalData

    if not isinstance(data, EvalData):
        raise TypeError(
            f"data must be an EvalData (from be.from_frame) or Results; got {type(data).__name__}"
        )
    if not data.has_latency:
        raise ValueError(
            "this data has no per-attempt durations: pass latency='seconds' or "
            "latency=('start', 'end') to be.from_frame"
        )
    attempted = [s for s in STATUSES if s != "not_run"]
    if statuses is None:
        statuses = attempted
    else:
        statuses = [statuses] if isinstance(statuses, str) else list(statuses)
        for s in statuses:
            validate_choice("statuses", s, attempted)
    codes = [STATUSES.index(s) for s in statuses]
    ds = data.dataset
    seconds = ds["latency"].transpose("system", "task", "attempt").values
    status = ds["latency_status"].transpose("system", "task", "attempt").values
    keep = ~np.isnan(seconds) & np.isin(status, codes)
    per_system = []
    for s in range(seconds.shape[0]):
        t_idx, a_idx = np.nonzero(keep[s])
        values = seconds[s, t_idx, a_idx]
        order = np.argsort(values, kind="stable")
        per_system.append((values[order], t_idx[order]))
    counts = ds["status_counts"].transpose("task", "system", "status")
    parts = [counts.drop_sel(status="not_run").sum("status").values]
    parts += [counts.sel(status=s).values for s in LATENCY_RATES]
    return per_system, np.stack(parts, axis=-1).astype(float), statuses


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Quantiles of sorted ``values`` (n,) under each row of ``weights`` (B, n) -> (B, Q).

    Each value stands for ``weight`` copies; the quantile is NumPy's default (linear) one on
    that sample, ``x[r] + (h - r) (x[r + 1] - x[r])`` at ``h = q (N - 1)``, ``r = floor(h)``,
    with ``N`` the total weight and ``x[r]`` the value at (0-based) rank r. With whole-number
    weights it is ``np.quantile`` of the repeated values; a row of zero weight gives NaN.
    """
    n_rep = weights.shape[0]
    out = np.full((n_rep, len(qs)), np.nan)
    if values.size == 0:
        return out
    cum = np.cumsum(weights, axis=1)
    total = cum[:, -1]
    big = float(total.max()) + 2.0
    offset = np.arange(n_rep)[:, None] * big
    flat = (cum + offset).ravel()
    h = np.clip(qs[None, :] * (total[:, None] - 1.0), 0.0, None)
    low = np.floor(h)
    frac = h - low

    def at(rank):
        idx = np.searchsorted(flat, (rank + offset).ravel(), side="right").reshape(rank.shape)
        idx = np.clip(idx - np.arange(n_rep)[:, None] * values.size, 0, values.size - 1)
        return values[idx]

    lo, hi = at(low), at(low + 1.0)
    with np.errstate(invalid="ignore"):
        q = lo + frac * (hi - lo)
    q = np.where(frac == 0, lo, q)
    return np.where((total > 0)[:, None], q, np.nan)


def _latency_unit_weights(data, unit, n_rep, rng, kind) -> tuple[np.ndarray, np.ndarray]:
    """Each replicate's weight of each resampling unit ``(rep, unit)`` and each task's unit:
    multinomial counts (``kind="bootstrap"``) or Dirichlet weights scaled to the same total
    (``"bayes"``), within strata."""
    from bayeval.resampling import _layout

    layout = _layout(data, unit, "task", None)
    n_unit = int(layout.unit.max()) + 1
    unit_group = np.empty(n_unit, dtype=np.int64)
    unit_group[layout.unit] = layout.group
    out = np.zeros((n_rep, n_unit))
    for g in range(len(layout.weight)):
        members = np.flatnonzero(unit_group == g)
        m = len(members)
        if kind == "bootstrap":
            out[:, members] = rng.multinomial(m, np.full(m, 1.0 / m), size=n_rep)
        else:
            out[:, members] = m * rng.dirichlet(np.ones(m), size=n_rep)
    return out, layout.unit


_LATENCY_CELLS = 4_000_000  # replicates x durations handled at once


def _latency_replicates(per_system, totals, unit_weights, task_unit, qs):
    """Quantile replicates ``(rep, system, Q)`` and rate replicates ``(rep, system, R)``."""
    n_rep, n_sys = unit_weights.shape[0], len(per_system)
    quant = np.full((n_rep, n_sys, len(qs)), np.nan)
    for s, (values, tasks) in enumerate(per_system):
        step = max(1, _LATENCY_CELLS // max(values.size, 1))
        units = task_unit[tasks]
        for start in range(0, n_rep, step):
            rows = slice(start, min(start + step, n_rep))
            quant[rows, s] = _weighted_quantiles(values, unit_weights[rows][:, units], qs)
    n_unit = unit_weights.shape[1]
    per_unit = np.zeros((n_unit,) + totals.shape[1:])
    np.add.at(per_unit, task_unit, totals)
    summed = np.einsum("ru,usq->rsq", unit_weights, per_unit)
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = summed[..., 1:] / summed[..., :1]
    return quant, rates


def _latency_dataset(
    estimate,
    draws,
    qs,
    rate_est,
    rate_draws,
    ci_prob,
    systems,
    n_used,
    sample_dim,
    attrs,
    check=None,
) -> xr.Dataset:
    out = {
        "latency": (("system", "quantile"), estimate),
        "latency_interval": (("system", "quantile", "ci_bound"), _percentiles(draws, ci_prob)),
        "latency_draws": ((sample_dim, "system", "quantile"), draws),
        "n_latency": (("system",), np.asarray(n_used, dtype=np.int64)),
    }
    rate_interval = _percentiles(rate_draws, ci_prob)
    for i, status in enumerate(LATENCY_RATES):
        out[f"{status}_rate"] = (("system",), rate_est[:, i])
        out[f"{status}_rate_interval"] = (("system", "ci_bound"), rate_interval[:, i])
        out[f"{status}_rate_draws"] = ((sample_dim, "system"), rate_draws[..., i])
    if check is not None:
        out["lognormal_check"] = (("system",), check)
    ds = xr.Dataset(
        out,
        coords={
            "system": np.asarray(systems, dtype=object),
            "quantile": qs,
            "ci_bound": ["lower", "upper"],
        },
    )
    ds.attrs = attrs
    return ds


def _latency_setup(data, q, unit, ci_prob, seed, statuses, n, n_name):
    from bayeval.results import Results

    if isinstance(data, Results):
        data = data.data
    qs = _check_quantiles(q)
    validate_choice("unit", unit, ("task", "cluster"))
    per_system, totals, used = _latency_inputs(data, statuses)
    if unit == "cluster" and not data.has_clusters:
        raise ValueError(
            "unit='cluster' needs task clusters; this data has none (pass "
            "cluster= when building it)"
        )
    return (
        data,
        qs,
        validate_prob("ci_prob", ci_prob),
        validate_seed(seed),
        per_system,
        totals,
        used,
        validate_positive_int(n_name, n, 2),
    )


def latency(
    data, q=(0.5, 0.95), unit="task", n_boot=10_000, ci_prob=0.95, seed=0, statuses=None
) -> xr.Dataset:
    """Bootstrap quantiles of attempt latency per system, with the timeout and error rates.

    Per system, the ``q`` quantiles of the durations of its attempts, pooled over tasks
    (every recorded attempt weighs alike, NumPy's default linear quantile), from
    ``from_frame(..., latency=...)``. Tasks (or whole clusters) are resampled with
    replacement within strata, the same units for every system, and a resampled task brings
    all its attempts: the interval carries the spread between tasks, which dominates when
    some tasks are slow for every attempt. ``timeout_rate`` and ``error_rate`` are the
    shares of attempts (every status but ``not_run``) that timed out or failed on the
    infrastructure, resampled with the same units.

    Attempts without a recorded duration are left out of the quantiles (``n_latency`` counts
    those used); a system with none has NaN quantiles. The posterior-side twin is
    :func:`bayeval._cost.posterior_latency`.

    Parameters
    ----------
    data : EvalData or Results
        Built with ``from_frame(..., latency=...)``.
    q : float or list of float, default (0.5, 0.95)
        Quantile levels in [0, 1] (the ``quantile`` coordinate).
    unit : {"task", "cluster"}, default "task"
        The resampling unit (``"cluster"`` needs task clusters).
    n_boot : int, default 10000
    ci_prob : float, default 0.95
        Coverage of the percentile intervals (on ``ci_bound``).
    seed : int, default 0
    statuses : str or list of str, optional
        The statuses whose durations count (default every status but ``not_run``: a
        timed-out attempt took the time it took).

    Returns
    -------
    xarray.Dataset
        ``latency`` (``system, quantile``: seconds), ``latency_interval``
        (``system, quantile, ci_bound``), ``latency_draws`` (``replicate, system,
        quantile``), ``n_latency`` (``system``), and for ``timeout`` and ``error`` the
        ``<status>_rate`` estimate, interval and replicates.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2", "t2", "t3", "t3"],
    ...                    "success": [1, 0, 1, 1, 0, 1],
    ...                    "seconds": [10.0, 12.0, 30.0, 34.0, 20.0, 22.0]})
    >>> out = be.bootstrap.latency(be.from_frame(df, latency="seconds"), n_boot=500)
    >>> out["latency"].sel(quantile=0.5).values.tolist()  # np.quantile of the six
    [21.0]
    >>> out["latency_interval"].dims
    ('system', 'quantile', 'ci_bound')
    """
    data, qs, ci_prob, seed, per_system, totals, used, n_boot = _latency_setup(
        data, q, unit, ci_prob, seed, statuses, n_boot, "n_boot"
    )
    rng = np.random.default_rng(seed)
    weights, task_unit = _latency_unit_weights(data, unit, n_boot, rng, "bootstrap")
    draws, rate_draws = _latency_replicates(per_system, totals, weights, task_unit, qs)
    estimate = np.array(
        [np.quantile(v, qs) if v.size else np.full(len(qs), np.nan) for v, _ in per_system]
    ).reshape(len(per_system), len(qs))
    summed = totals.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate_est = summed[:, 1:] / summed[:, :1]
    attrs = {
        "method": "bootstrap",
        "unit": unit,
        "n_boot": n_boot,
        "ci_prob": ci_prob,
        "seed": seed,
        "statuses": list(used),
        "units": "seconds",
        "latency_columns": data.dataset.attrs.get("latency_columns", "null"),
    }
    return _latency_dataset(
        estimate,
        draws,
        qs,
        rate_est,
        rate_draws,
        ci_prob,
        data.systems,
        [v.size for v, _ in per_system],
        "replicate",
        attrs,
    )


#: Posterior models of the latency quantiles (:func:`posterior_latency`).
LATENCY_MODELS = ("lognormal", "bayesian_bootstrap")
_LN_GRID = 120  # grid points per axis of (log sigma, log tau)
_LN_PRIOR_SCALE = 1.0  # half-Cauchy scale of tau and sigma, in log seconds
_LN_CELLS = 2_000_000  # grid points x tasks evaluated at once


def _lognormal_log_posterior(log_s, log_t, n, ybar, within, df_within):
    """Log posterior of (log sigma, log tau) on a grid (mu integrated out under a flat prior),
    ``(len(log_s) * len(log_t),)``, sigma varying slowest."""
    sigma = np.repeat(np.exp(log_s), len(log_t))
    tau = np.tile(np.exp(log_t), len(log_s))
    out = np.empty(sigma.size)
    step = max(1, _LN_CELLS // max(len(n), 1))
    for a in range(0, sigma.size, step):
        s2, t2 = sigma[a : a + step] ** 2, tau[a : a + step] ** 2
        prec = 1.0 / (t2[:, None] + s2[:, None] / n[None, :])  # 1 / var of a task's mean
        total = prec.sum(axis=1)
        centre = (prec * ybar).sum(axis=1) / total
        out[a : a + step] = (
            -0.5 * df_within * np.log(s2)
            - within / (2 * s2)
            + 0.5 * np.log(prec).sum(axis=1)
            - 0.5 * np.log(total)
            - 0.5 * (prec * (ybar[None, :] - centre[:, None]) ** 2).sum(axis=1)
        )
    for x in (sigma, tau):  # half-Cauchy priors, and the Jacobian of the log scale
        out += -np.log1p((x / _LN_PRIOR_SCALE) ** 2) + np.log(x)
    return out


def _lognormal_draws(values, tasks, qs, n_draws, rng) -> np.ndarray:
    """Posterior draws ``(n_draws, Q)`` of ``exp(mu + z_q sqrt(tau^2 + sigma^2))`` under
    ``log y_tj = mu + u_t + e_tj``, ``u_t ~ N(0, tau^2)``, ``e_tj ~ N(0, sigma^2)``: a grid
    over (log sigma, log tau) that widens until the edges hold no mass, mu exactly."""
    from scipy.special import ndtri

    y = np.log(values)
    _, task = np.unique(tasks, return_inverse=True)
    n = np.bincount(task).astype(float)
    ybar = np.bincount(task, weights=y) / n
    within = float(np.sum((y - ybar[task]) ** 2))
    spread = float(np.std(y)) if y.size > 1 and np.std(y) > 0 else 1.0
    mu, tau, sigma = _lognormal_grid(n, ybar, within, spread, n_draws, rng)
    quantiles = np.exp(mu[:, None] + ndtri(qs)[None, :] * np.hypot(tau, sigma)[:, None])
    return quantiles, (mu, tau, sigma, task, n, ybar)


def _lognormal_grid(n, ybar, within, spread, n_draws, rng):
    """Posterior draws of ``(mu, tau, sigma)``, each ``(n_draws,)``, from the sufficient
    statistics of ``log y_tj = mu + u_t + e_tj``: per task the count ``n`` and mean ``ybar`` of
    the logs, the within-task sum of squares ``within`` summed over tasks, and the sd of all
    logs ``spread`` (which places the grid). Flat prior on mu, half-Cauchy(0, 1) on tau and
    sigma; a grid over (log sigma, log tau) widened until its edges hold no mass, mu drawn
    exactly given them."""
    df_within = float((n - 1).sum())
    if df_within >= 2 and within > 0:
        centre, half = 0.5 * np.log(within / df_within), max(5 / np.sqrt(2 * df_within), 0.3)
        bounds_s = [centre - half, centre + half]
    else:
        bounds_s = [np.log(spread) - 7, np.log(spread) + 3]
    bounds_t = [np.log(spread) - 8, np.log(spread) + 3]
    for _ in range(8):
        grid_s, grid_t = np.linspace(*bounds_s, _LN_GRID), np.linspace(*bounds_t, _LN_GRID)
        logp = _lognormal_log_posterior(grid_s, grid_t, n, ybar, within, df_within)
        prob = np.exp(logp - logp.max()).reshape(_LN_GRID, _LN_GRID)
        prob /= prob.sum()
        width_s, width_t = np.diff(bounds_s)[0], np.diff(bounds_t)[0]
        grown = False
        for mass, bounds, side, width in (
            (prob[0].sum(), bounds_s, 0, width_s),
            (prob[-1].sum(), bounds_s, 1, width_s),
            (prob[:, -1].sum(), bounds_t, 1, width_t),
        ):
            if mass > 1e-4:
                bounds[side] += width / 2 if side else -width / 2
                grown = True
        # tau -> 0 is a proper limit (no task spread): widen towards it only while it holds mass
        if prob[:, 0].sum() > 1e-3 and bounds_t[0] > np.log(spread) - 30:
            bounds_t[0] -= width_t / 2
            grown = True
        if not grown:
            break
    cell = rng.choice(prob.size, size=n_draws, p=prob.ravel())
    i, k = np.divmod(cell, _LN_GRID)
    sigma = np.exp(grid_s[i] + (rng.random(n_draws) - 0.5) * (grid_s[1] - grid_s[0]))
    tau = np.exp(grid_t[k] + (rng.random(n_draws) - 0.5) * (grid_t[1] - grid_t[0]))
    prec = 1.0 / (tau[:, None] ** 2 + sigma[:, None] ** 2 / n[None, :])
    total = prec.sum(axis=1)
    mu = (prec * ybar).sum(axis=1) / total + rng.standard_normal(n_draws) / np.sqrt(total)
    return mu, tau, sigma


def _lognormal_check(params) -> float:
    """Shapiro-Wilk p-value of the standardised task means of log duration (the model makes
    them normal): small when the tasks fall into groups (a second mode) or their spread is
    skewed. NaN with fewer than 3 tasks."""
    from scipy.stats import shapiro

    mu, tau, sigma, task, n, ybar = params
    if len(n) < 3:
        return float("nan")
    z = (ybar - mu.mean()) / np.sqrt(np.mean(tau**2) + np.mean(sigma**2) / n)
    if np.ptp(z) == 0:
        return float("nan")
    return float(shapiro(z).pvalue)


def _lognormal_misfit(post: xr.Dataset, boot: xr.Dataset) -> np.ndarray:
    """Per system: whether the log-normal posterior is suspect, ``(system,)`` bool. It is
    when, at some quantile, its mean lies outside the bootstrap's interval or the
    bootstrap's estimate outside its interval, or when its task check is below 0.01
    (measured in ``benchmarks/latency_coverage.py``: a time limit shows as the first, a
    second mode of tasks as both)."""
    with np.errstate(invalid="ignore"):
        return _apart(post, boot, "latency").any(axis=1) | (post["lognormal_check"].values < 0.01)


def posterior_latency(
    data,
    q=(0.5, 0.95),
    unit="task",
    n_draws=4000,
    ci_prob=0.95,
    seed=0,
    statuses=None,
    model="lognormal",
) -> xr.Dataset:
    """Posterior of the attempt-latency quantiles per system, with the timeout and error
    rates: the twin of :func:`bayeval.bootstrap.latency`.

    ``model="lognormal"`` (default) fits, for each system on its own, log durations with
    task effects, ``log y_tj = mu + u_t + e_tj``, ``u_t ~ N(0, tau^2)`` (some tasks are slow
    for every attempt), ``e_tj ~ N(0, sigma^2)`` (attempt to attempt), with a flat prior on
    ``mu`` and half-Cauchy(0, 1) priors on ``tau`` and ``sigma`` (log seconds). The quantile
    of a new attempt on a new task from the same population is
    ``exp(mu + z_q sqrt(tau^2 + sigma^2))``, the quantity whose empirical version the
    bootstrap resamples. Why a model: a quantile of a skewed positive amount from a few
    dozen tasks is noisy, and the p95 of a bootstrap can only take observed values; the
    log-normal borrows its tail shape from the bulk. Its risk is the reverse: a tail that is
    not log-normal (durations capped at a time limit, a second mode) is smoothed over, so
    compare with the bootstrap, and see ``models/cost.md`` for the coverage measured with
    and without a log-normal truth. The posterior is computed on a grid over
    ``(log sigma, log tau)`` (widened until its edges hold no mass), ``mu`` exactly given
    them. Durations must be positive; ``unit="cluster"`` is not modelled (use the Bayesian
    bootstrap).

    ``model="bayesian_bootstrap"`` is not a parametric model: each draw gives the tasks (or
    clusters) Dirichlet(1, ..., 1) weights within strata (Rubin 1981), scaled to the number
    of units and the same for every system; a task's attempts share its weight and the
    draw's quantile is the weighted version of the bootstrap's (linear, on the weighted
    sample). It assumes no shape, so it keeps a capped or multimodal tail, but it puts no
    mass on durations never observed.

    The log-normal's fit is checked per system: ``lognormal_check`` is the Shapiro-Wilk
    p-value of the standardised task means of log duration, which the model makes normal
    (below 0.01: the tasks fall into groups, or their spread is skewed). It cannot see a
    time limit that caps the tail; comparing with the bootstrap can (a log-normal mean
    outside the bootstrap interval, or the reverse), and :func:`latency_table` flags a
    system by both.

    The timeout and error rates are the Bayesian bootstrap's under either model (the share
    of attempts under Dirichlet task weights). The estimate is the posterior mean; the
    intervals are equal-tailed. Attempts without a recorded duration are left out.

    Parameters
    ----------
    data : EvalData or Results
        Built with ``from_frame(..., latency=...)`` (a fit's data is used as it is).
    q, unit, ci_prob, seed, statuses
        As in :func:`bayeval.bootstrap.latency` (the log-normal needs levels strictly
        between 0 and 1).
    n_draws : int, default 4000
    model : {"lognormal", "bayesian_bootstrap"}, default "lognormal"

    Returns
    -------
    xarray.Dataset
        As :func:`bayeval.bootstrap.latency`, with a ``draw`` dim in place of ``replicate``;
        the log-normal adds ``lognormal_check`` (``system``).

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval._cost import posterior_latency
    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2", "t2", "t3", "t3"],
    ...                    "success": [1, 0, 1, 1, 0, 1],
    ...                    "seconds": [10.0, 12.0, 30.0, 34.0, 20.0, 22.0]})
    >>> data = be.from_frame(df, latency="seconds")
    >>> out = posterior_latency(data, n_draws=500)
    >>> 10.0 < float(out["latency"].sel(quantile=0.5).item()) < 34.0
    True
    >>> posterior_latency(data, n_draws=500, model="bayesian_bootstrap").attrs["model"]
    'bayesian_bootstrap'
    """
    validate_choice("model", model, LATENCY_MODELS)
    data, qs, ci_prob, seed, per_system, totals, used, n_draws = _latency_setup(
        data, q, unit, ci_prob, seed, statuses, n_draws, "n_draws"
    )
    if model == "lognormal":
        if unit != "task":
            raise ValueError(
                "the log-normal latency model has task effects, not cluster "
                "effects: use unit='task', or model='bayesian_bootstrap' for "
                "unit='cluster'"
            )
        if ((qs <= 0) | (qs >= 1)).any():
            raise ValueError(
                f"the log-normal latency model needs quantile levels strictly "
                f"between 0 and 1 (its 0 and 1 quantiles are 0 and infinity); "
                f"got q={qs.tolist()}"
            )
        zero = [
            str(system) for system, (v, _) in zip(data.systems, per_system) if v.size and v[0] <= 0
        ]
        if zero:
            raise ValueError(
                f"the log-normal latency model needs positive durations; "
                f"system(s) {describe_values(zero)} have durations of 0 s: use "
                "model='bayesian_bootstrap', or record the durations finer"
            )
    rng = np.random.default_rng(seed)
    weights, task_unit = _latency_unit_weights(data, unit, n_draws, rng, "bayes")
    draws, rate_draws = _latency_replicates(per_system, totals, weights, task_unit, qs)
    check = None
    if model == "lognormal":
        draws = np.full_like(draws, np.nan)
        check = np.full(len(per_system), np.nan)
        for s, (values, tasks) in enumerate(per_system):
            if values.size:
                draws[:, s], params = _lognormal_draws(values, tasks, qs, n_draws, rng)
                check[s] = _lognormal_check(params)
        method = (
            "posterior (log-normal with task effects per system; rates by the Bayesian "
            "bootstrap over tasks)"
        )
    else:
        method = "posterior (Bayesian bootstrap over tasks; not a parametric model)"
    attrs = {
        "method": method,
        "model": model,
        "unit": unit,
        "n_draws": n_draws,
        "ci_prob": ci_prob,
        "seed": seed,
        "statuses": list(used),
        "units": "seconds",
        "latency_columns": data.dataset.attrs.get("latency_columns", "null"),
    }
    return _latency_dataset(
        _mean(draws),
        draws,
        qs,
        _mean(rate_draws),
        rate_draws,
        ci_prob,
        data.systems,
        [v.size for v, _ in per_system],
        "draw",
        attrs,
        check,
    )


def latency_table(
    data,
    q=(0.5, 0.95),
    n_boot=2000,
    seed=0,
    ci_prob=0.95,
    unit="task",
    n_draws=4000,
    statuses=None,
    model="lognormal",
) -> dict:
    """The latency table of the report card, as a JSON-ready ``dict``.

    Per system, each quantile of attempt latency (seconds) from :func:`posterior_latency`
    (``model``: mean and equal-tailed interval) next to
    :func:`bayeval.bootstrap.latency` (estimate and percentile interval), the durations used
    and the attempts made, and the timeout and error rates (posterior and bootstrap). Under
    the log-normal, each system's ``lognormal_check`` holds ``task_means_p`` (see
    :func:`posterior_latency`) and ``misfit``: the log-normal and the bootstrap disagree (a
    mean outside the other's interval at some quantile) or ``task_means_p < 0.01``; read
    the bootstrap for a misfit system. ``None`` under the Bayesian bootstrap.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval._cost import latency_table
    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2", "t2", "t3", "t3"],
    ...                    "success": [1, 0, 1, 1, 0, 1],
    ...                    "seconds": [10.0, 12.0, 30.0, 34.0, 20.0, 22.0]})
    >>> out = latency_table(be.from_frame(df, latency="seconds"), n_boot=200, n_draws=200)
    >>> row = out["rows"][0]
    >>> row["system"], row["quantiles"][0]["q"], row["quantiles"][0]["bootstrap_estimate"]
    ('A', 0.5, 21.0)
    """
    from bayeval.results import Results

    if isinstance(data, Results):
        data = data.data
    boot = latency(
        data, q=q, unit=unit, n_boot=n_boot, ci_prob=ci_prob, seed=seed, statuses=statuses
    )
    post = posterior_latency(
        data,
        q=q,
        unit=unit,
        n_draws=n_draws,
        ci_prob=ci_prob,
        seed=seed,
        statuses=statuses,
        model=model,
    )
    attempts = data.dataset["status_counts"].drop_sel(status="not_run").sum(("task", "status"))
    misfit = _lognormal_misfit(post, boot) if model == "lognormal" else None
    rows = []
    for system in data.systems:
        b, p = boot.sel(system=system), post.sel(system=system)
        quantiles = []
        for level in boot["quantile"].values:
            bl, bh = b["latency_interval"].sel(quantile=level).values
            pl, ph = p["latency_interval"].sel(quantile=level).values
            quantiles.append(
                {
                    "q": float(level),
                    "bayes_mean": _json(p["latency"].sel(quantile=level)),
                    "bayes_lower": _json(pl),
                    "bayes_upper": _json(ph),
                    "bootstrap_estimate": _json(b["latency"].sel(quantile=level)),
                    "bootstrap_lower": _json(bl),
                    "bootstrap_upper": _json(bh),
                }
            )
        row = {
            "system": str(system),
            "n_latency": int(b["n_latency"]),
            "n_attempts": int(attempts.sel(system=system)),
            "quantiles": quantiles,
            "lognormal_check": None,
        }
        if model == "lognormal" and row["n_latency"]:
            row["lognormal_check"] = {
                "task_means_p": _json(p["lognormal_check"]),
                "misfit": bool(misfit[data.systems.index(system)]),
            }
        for status in LATENCY_RATES:
            name = f"{status}_rate"
            row[name] = {**_triple(p, name, "bayes"), **_triple(b, name, "bootstrap")}
        rows.append(row)
    return {
        "columns": json.loads(data.dataset.attrs.get("latency_columns", "null")),
        "units": "seconds",
        "q": [float(v) for v in boot["quantile"].values],
        "unit": unit,
        "statuses": list(boot.attrs["statuses"]),
        "n_boot": int(n_boot),
        "n_draws": int(post.attrs["n_draws"]),
        "ci_prob": float(boot.attrs["ci_prob"]),
        "bayes_model": model,
        "bayes_method": post.attrs["method"],
        "rows": rows,
    }
