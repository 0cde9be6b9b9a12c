"""Ranks of many systems, from the posterior and as bootstrap rank confidence sets.

Posterior ranks, groups, the winner's curse and a one-call summary, beside the bootstrap's
simultaneous rank confidence sets (their frequentist twin).

The rank sets use the ``max-|t|`` construction of Mogstad, Romano, Shaikh and Wilhelm (2024,
"Inference for Ranks with Applications to Mobility across Neighbourhoods and Academic
Achievement across Countries", Review of Economic Studies). With estimated scores ``theta_j``
of ``p`` systems (each a weighted mean of per-task unbiased pass@k or pass^k, as in
:mod:`bayeval.resampling`) and bootstrap replicates ``theta*_j`` from resampling the *same*
tasks (or clusters) for all systems, so that every difference is paired:

* ``se_jk`` is the bootstrap standard deviation of ``theta*_j - theta*_k``;
* ``t*_jk = ((theta*_j - theta*_k) - (theta_j - theta_k)) / se_jk`` per replicate;
* the critical value ``c`` is the ``ci_prob`` quantile of ``max |t*_jk|``: over all pairs
  (``kind="simultaneous"``), or over the pairs that involve system j (``kind="marginal"``,
  one ``c_j`` per system);
* ``theta_k - theta_j`` lies in ``diff_kj -/+ c_j se_kj`` for all k at once, so system j's
  rank (1 = best) lies in ``[1 + #{k: lower bound of theta_k - theta_j > 0},
  p - #{k: upper bound of theta_k - theta_j < 0}]``.

The simultaneous sets hold all true ranks at once with probability ``ci_prob`` (in large
samples); a marginal set holds its own system's rank with that probability. The same
all-pairs critical value gives pairwise decisions that control the family-wise error over the
``p (p - 1) / 2`` pairs; Holm-adjusted Wald p-values (bootstrap standard errors) are given
next to them, and ``p_value`` can take any other correction of ``bayeval.adjust_pvalues``. A
pair whose difference is the same in every replicate (identical systems, or a difference that
no resampling changes) has ``se = 0``: it is left out of the maximum and its difference is
taken as known. Nothing loops over replicates or pairs in Python: the maxima are taken over
``(replicate, system, system)`` blocks of bounded size.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from bayeval._validate import BayevalWarning, validate_choice, validate_k, validate_prob
from bayeval.analyses import arrays
from bayeval.analyses._draws import (
    SAMPLE_DIMS,
    observed_counts,
    observed_scores,
    over_samples,
    pairing,
    settings_of,
    thinned,
)
from bayeval.inference import gate_attrs
from bayeval.models._beta_family import Populations, metric_of_rate, task_weights
from bayeval.resampling import ESTIMAND_OF_UNIT, _run, _status_vars, _validate_common

__all__ = ["ranks", "rank_groups", "winner", "rank_sets", "rank_summary"]

#: How the winner is chosen among systems tied on the observed score.
TIE_RULE = "among systems tied on the observed score, the first in the data's order"
GROUP_RULE = (
    "best remaining system leads a group; a system joins it unless P(leader > system) >= prob; "
    "groups are not tiers: a system in a lower group may be as good as a member of a higher "
    "group other than its leader"
)


# -- posterior ranks ---------------------------------------------------------------------------
def ranks(
    posterior,
    *,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    ci_prob: float = 0.95,
    top: int = 3,
    tau=None,
    clusters=None,
    weighting: str = "task",
) -> xr.Dataset:
    """Posterior of each system's rank (1 = best) by a metric.

    Ties within a draw share the best of their ranks (they are rare with continuous
    draws). The frequentist twin is :func:`rank_sets`.

    Parameters
    ----------
    posterior : Posterior
    metric, k, estimand, ci_prob, tau, clusters, weighting
        As in :func:`bayeval.analyses.compare.compare` (one k).
    top : int, default 3
        ``prob_top`` is P(rank <= top).

    Returns
    -------
    xarray.Dataset
        ``rank`` (draws over ``chain``, ``draw``, ``system``), ``rank_interval`` (each
        system's own, in whole ranks, on ``ci_bound``), ``rank_interval_simultaneous`` (all
        systems' ranks at once with probability ``ci_prob``:
        :func:`bayeval.analyses.arrays.rank_intervals`), ``rank_mean``, ``prob_best`` (sums
        to 1 over the systems but for ties) and ``prob_top``; settings in attrs, with the
        MCMC gates the fit failed (``gates_failed``, ``gates_note``:
        :func:`bayeval.inference.gate_attrs`).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.ranks import ranks
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> out = ranks(res)
    >>> float(out["prob_best"].sum())
    1.0
    >>> out["rank_mean"].sel(system="B").item() < out["rank_mean"].sel(system="A").item()
    True
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a positive int; got {top!r}")
    values = posterior.draws(metric, k, estimand, clusters, weighting, tau=tau)
    if "k" in values.dims:
        raise ValueError("ranks take one k; got a list")
    rank = xr.apply_ufunc(
        arrays.rank_draws,
        values,
        input_core_dims=[["system"]],
        output_core_dims=[["system"]],
        kwargs={"system_axis": -1},
        keep_attrs=False,
    ).transpose(*values.dims)
    summary = over_samples(
        arrays.summarize_ranks,
        rank,
        outputs={"rank_mean": (), "rank_interval": ("ci_bound",), "prob_best": (), "prob_top": ()},
        ci_prob=ci_prob,
        top=top,
    )
    joint = over_samples(
        arrays.rank_intervals,
        rank,
        outputs={"rank_interval_simultaneous": ("system", "ci_bound")},
        core={"system_axis": "system"},
        ci_prob=ci_prob,
    )
    out = xr.Dataset({"rank": rank, **summary.data_vars, **joint.data_vars})
    out.attrs = {
        "metric": metric,
        "estimand": estimand,
        "top": top,
        "ci_prob": ci_prob,
        "model": posterior.model,
        **pairing(posterior),
        **settings_of(values),
        **gate_attrs(posterior),
    }
    return out


def rank_groups(
    posterior,
    *,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    prob: float = 0.95,
    tau=None,
    clusters=None,
    weighting: str = "task",
) -> pd.DataFrame:
    """Groups of systems that cannot be told apart at probability ``prob``.

    The rule, applied from the top: the best remaining system by posterior mean leads a new
    group, and every remaining system ``S`` for which ``P(metric(leader) > metric(S)) <
    prob`` joins it. So a system is placed below a group only when the group's leader is
    better than it with at least that probability; groups are numbered from 1 (best).

    Parameters
    ----------
    posterior : Posterior
    metric, k, estimand, tau, clusters, weighting
        As in :func:`ranks`.
    prob : float, default 0.95

    Returns
    -------
    pandas.DataFrame
        One row per system, best first: ``system``, ``group``, ``mean``, the group's
        ``leader`` and ``prob_leader_better`` (P(leader > system); NaN for the leader).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.ranks import rank_groups
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [8, 9, 8, 9]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=500, chains=2, seed=0)
    >>> rank_groups(res, prob=0.95)["group"].tolist()
    [1, 1, 2]
    """
    prob = validate_prob("prob", prob)
    values = posterior._single_metric("rank_groups", metric, k, estimand, clusters, weighting, tau)
    systems = posterior.systems
    draws = values.transpose("system", *SAMPLE_DIMS).values
    groups = arrays.group_systems(draws, prob=prob, axis=(-2, -1), system_axis=0)
    table = pd.DataFrame(
        {
            "system": [systems[s] for s in groups["system"]],
            "group": groups["group"].tolist(),
            "mean": groups["mean"].tolist(),
            "leader": [systems[s] for s in groups["leader"]],
            "prob_leader_better": groups["prob_leader_better"].tolist(),
        }
    )
    table.attrs = {
        "prob": prob,
        "metric": metric,
        "estimand": estimand,
        "model": posterior.model,
        **({} if tau is None else {"tau": tau}),
        "rule": GROUP_RULE,
    }
    return table


# -- the winner's curse ------------------------------------------------------------------------
def winner(
    posterior,
    *,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    ci_prob: float = 0.95,
    n_replicates: int = 200,
    seed=None,
    clusters=None,
    weighting: str = "task",
) -> xr.Dataset:
    """The system the observed score picks, and what that pick is worth (the winner's curse).

    The pick is the system with the best observed score (the mean over its valid tasks of
    the unbiased estimator, each stratum weighted by its declared share as in the tasks
    estimand); among systems tied on it, the first in the data's order. Its
    naive score overstates it when the systems are close: the best of many noisy scores is
    selected for luck. The posterior of its value, from a model that treats the systems as
    draws from a population of systems (``logit_normal`` with three or more systems has that
    level, ``sigma_system``), is shrunk back by what the data say about how far apart the
    systems are.

    The naive score estimates the pick's mean over these tasks, so ``optimism`` is taken
    against the posterior of that same quantity (``tasks_value_*``, the tasks estimand over
    the tasks the naive score averages), never against another estimand; ``value_*`` is the
    pick's posterior in ``estimand``, shown beside it.

    Parameters
    ----------
    posterior : Posterior
    metric, k, estimand, ci_prob, clusters, weighting
        As in :func:`ranks` (one k).
    n_replicates : int, default 200
        Posterior draws (taken evenly) used to replicate the benchmark on these tasks and
        pick by its observed score again (``expected_optimism``). Per-task readouts cost in
        proportion to the draws.
    seed : int, optional
        Seed of the replicates (default: the fit's).

    Returns
    -------
    xarray.Dataset
        ``naive_score``; ``value`` (posterior draws of the pick's metric in ``estimand``, over
        ``chain, draw``), ``value_mean``, ``value_interval``; ``tasks_value_mean`` and
        ``tasks_value_interval`` (the pick's metric over the tasks its naive score averages,
        from every draw); ``optimism`` (``naive_score - tasks_value_mean``);
        ``prob_pick_is_best`` (posterior probability, in ``estimand``, that no system is
        better than the pick: a system tied for best counts as best, as in :func:`ranks`);
        ``expected_optimism`` with its sd ``expected_optimism_sd`` and Monte Carlo standard
        error ``expected_optimism_se``, and ``replicate_prob_best_picked`` (picking by observed
        score on replicate benchmarks); per system ``observed_score``, ``posterior_mean`` and
        ``tasks_mean`` (the mean over the replicate draws of its mean over these tasks).
        ``attrs["pick"]`` names the pick, ``tied_with`` the systems tied with it and
        ``tie_rule`` how the pick was chosen among them; the ``*_note`` attrs say what the
        optimisms measure.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.ranks import winner
    >>> data = be.from_counts([[6, 7, 5, 8], [7, 6, 7, 8], [6, 6, 6, 7]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> out = winner(res, n_replicates=100)
    >>> out.attrs["pick"], round(float(out["naive_score"]), 3), out["value"].dims
    ('B', 0.7, ('chain', 'draw'))
    >>> bool(out["optimism"] == out["naive_score"] - out["tasks_value_mean"])
    True
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, int) or n_replicates < 1:
        raise ValueError(f"n_replicates must be a positive int; got {n_replicates!r}")
    ks, scalar = validate_k(k)
    if not scalar:
        raise ValueError(f"winner takes one k; got {k!r}")
    k = int(ks[0])
    c, n = observed_counts(posterior)
    systems = posterior.systems
    _, per_task = observed_scores(c, n, k, metric, systems)
    weights = _score_weights(posterior, n >= k)
    scores = _weighted_mean(per_task, weights)
    pick = int(np.argmax(scores))  # the first of the tied systems, as tie_rule says
    # equal scores summed in a different order can differ in the last bits
    tied = [
        systems[s]
        for s in np.flatnonzero(np.isclose(scores, scores[pick], rtol=0, atol=1e-12))
        if s != pick
    ]
    values = posterior._single_metric("winner", metric, k, estimand, clusters, weighting)
    values = values.transpose(*SAMPLE_DIMS, "system")
    draws = values.values.reshape(-1, len(systems))
    value = values.isel(system=pick, drop=True)
    # the naive score's own target: the pick's metric over the tasks it averages
    valid = n[pick] >= k
    own = posterior.draws(
        metric, k, "tasks", shared=None if valid.all() else valid, systems=[systems[pick]]
    )
    own = own.transpose(*SAMPLE_DIMS, "system").values.reshape(-1)
    # ties count as best, as in ranks (arrays.rank_draws): P(no system is better)
    best = arrays.rank_draws(draws, system_axis=-1)[:, pick] == 1
    out = xr.Dataset(
        {
            "naive_score": scores[pick],
            "value": value.drop_vars([c for c in value.coords if c not in SAMPLE_DIMS]),
            "value_mean": draws[:, pick].mean(),
            "value_interval": (("ci_bound",), arrays.eti(draws[:, pick], ci_prob=ci_prob)),
            "tasks_value_mean": own.mean(),
            "tasks_value_interval": (("ci_bound",), arrays.eti(own, ci_prob=ci_prob)),
            "prob_pick_is_best": float(best.mean()),
            "observed_score": (("system",), scores),
            "posterior_mean": (("system",), draws.mean(axis=0)),
        },
        coords={"system": np.asarray(systems, dtype=object), "ci_bound": ["lower", "upper"]},
    )
    rep = _replicate_selection(posterior, metric, k, n_replicates, seed, weights)
    out["tasks_mean"] = (("system",), rep["tasks_mean"])
    out["optimism"] = scores[pick] - own.mean()
    out["expected_optimism"] = rep["optimism"].mean()
    out["expected_optimism_sd"] = rep["optimism"].std(ddof=1)
    out["expected_optimism_se"] = out["expected_optimism_sd"] / np.sqrt(len(rep["optimism"]))
    out["replicate_prob_best_picked"] = rep["best_picked"].mean()
    out.attrs = {
        "pick": systems[pick],
        "tied_with": tied,
        "tie_rule": TIE_RULE,
        "metric": metric,
        "k": k,
        "estimand": estimand,
        "ci_prob": ci_prob,
        "model": posterior.model,
        "n_replicates": n_replicates,
        "optimism_note": (
            "naive score of the pick minus the posterior mean of its mean over the tasks "
            "the naive score averages (the naive score's own target, the tasks estimand)"
        ),
        "expected_optimism_note": (
            "replicate benchmarks on these tasks drawn from the posterior (task rates "
            "per draw, binomial trials as observed), each picking by observed score (ties: "
            "the first in the data's order): the mean of the picked system's naive score "
            "minus its true mean over these tasks"
        ),
        **gate_attrs(posterior),
    }
    return out


def _score_weights(posterior, valid: np.ndarray) -> np.ndarray | None:
    """Each valid task's weight in a system's observed score, ``(system, task)``.

    The tasks estimand's weights (:func:`~bayeval.models._beta_family.task_weights`): each
    stratum's declared share spread over its valid tasks, so that the naive score and the
    posterior it is held against average the same way. ``None`` without strata: the plain
    mean over the valid tasks.
    """
    pops = Populations.from_dataset(posterior._group("constant_data"))
    if pops.strata is None:
        return None
    weights = task_weights(valid.astype(np.int64), pops)
    return weights / weights.sum(axis=1, keepdims=True)


def _weighted_mean(per_task: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Per system, the mean of per-task values (NaN: not valid) under ``weights``."""
    if weights is None:
        return np.nanmean(per_task, axis=1)
    return np.where(weights > 0, per_task * weights, 0.0).sum(axis=1)


def _replicate_selection(
    posterior,
    metric: str,
    k: int,
    n_replicates: int,
    seed=None,
    weights: np.ndarray | None = None,
) -> dict:
    """Pick-by-observed-score on replicate data from the posterior, with the truth known.

    For each of ``n_replicates`` posterior draws (taken evenly): the task rates of that draw
    are the truth; binomial counts with the observed trials are a replicate benchmark; the
    replicate's observed scores pick a system. Returns arrays ``optimism`` (the pick's naive
    score minus its true mean over these tasks), ``best_picked`` (whether the pick is the
    truly best system of that draw) and ``tasks_mean`` (per system, the posterior mean of its
    metric's mean over these tasks, from the same draws).
    """
    c, n = observed_counts(posterior)
    rates = (
        thinned(posterior, n_replicates)
        .task_rates()
        .transpose("chain", "draw", "system", "task")
        .values
    )
    rates = rates.reshape(-1, *rates.shape[2:])  # (draw, S, J)
    take = np.unique(np.linspace(0, len(rates) - 1, min(n_replicates, len(rates))).astype(int))
    seed = int(posterior.tree.attrs["seed"]) if seed is None else seed
    rng = np.random.default_rng([seed, 13])
    valid = n >= k
    optimism = np.empty(len(take))
    best_picked = np.empty(len(take), dtype=bool)
    truths = np.empty((len(take), len(c)))
    ks = np.array([k])
    for i, d in enumerate(take):
        p = np.nan_to_num(rates[d], nan=0.0)
        rep = rng.binomial(n, p)
        scores = _weighted_mean(observed_scores(rep, n, k, metric)[1], weights)
        truth = np.where(valid, metric_of_rate(p, metric, ks)[..., 0], np.nan)
        truth = truths[i] = _weighted_mean(truth, weights)
        pick = int(np.argmax(scores))
        optimism[i] = scores[pick] - truth[pick]
        best_picked[i] = truth[pick] >= truth.max()
    return {"optimism": optimism, "best_picked": best_picked, "tasks_mean": truths.mean(axis=0)}


# -- rank confidence sets: the bootstrap twin --------------------------------------------------
KINDS = ("simultaneous", "marginal")
_MAX_CELLS = 4_000_000  # elements of one replicate-chunk x system x system block


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values, as ``bayeval.adjust_pvalues(p, "holm")``.

    Computed without the garbage collection statsmodels runs on every call, which dominated
    its cost (timed in ``benchmarks/results/rank_timing.txt``).
    """
    order = np.argsort(p, kind="stable")
    m = len(p)
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted


def _critical_values(deviation, se, ci_prob):
    """All-pairs and per-system critical values of the max-|t| statistic.

    ``deviation`` is ``(replicate, system)`` (replicate minus estimate), ``se`` the
    ``(system, system)`` standard errors, zero (left out of the maxima) on the diagonal and for
    pairs without spread. Returns ``c`` (float), ``c_j`` (system,) and the sorted all-pairs
    replicate maxima (for the max-t adjusted p-values); all zero when no pair has spread.
    """
    n_boot, n_sys = deviation.shape
    usable = se > 0
    inv = np.where(usable, 1.0 / np.where(usable, se, 1.0), 0.0)
    max_all = np.empty(n_boot)
    max_row = np.empty((n_boot, n_sys))
    step = max(1, _MAX_CELLS // max(n_sys * n_sys, 1))
    for start in range(0, n_boot, step):
        d = deviation[start : start + step]
        t = np.abs(d[:, :, None] - d[:, None, :]) * inv[None]
        max_row[start : start + step] = t.max(axis=2)
        max_all[start : start + step] = max_row[start : start + step].max(axis=1)
    # the inverted-CDF quantile: the smallest value whose bootstrap CDF reaches ci_prob
    c_all = float(np.quantile(max_all, ci_prob, method="inverted_cdf"))
    c_sys = np.quantile(max_row, ci_prob, axis=0, method="inverted_cdf")
    return c_all, c_sys, np.sort(max_all)


def _rank_set_arrays(estimate, replicates, ci_prob, kind):
    """Rank sets and pairwise decisions from estimates and bootstrap replicates.

    Estimates are ``(system,)`` and replicates ``(replicate, system)``; the results are arrays
    over ``(system,)`` and ``(candidate, baseline)``.
    """
    n_boot, n_sys = replicates.shape
    deviation = replicates - estimate[None]
    cov = np.cov(deviation, rowvar=False, ddof=1).reshape(n_sys, n_sys)
    diag = np.diag(cov)
    var = np.clip(diag[:, None] + diag[None, :] - 2 * cov, 0.0, None)
    scale = diag[:, None] + diag[None, :]
    se = np.sqrt(np.where(var > 64 * np.finfo(float).eps * scale, var, 0.0))
    np.fill_diagonal(se, 0.0)
    diff = estimate[:, None] - estimate[None, :]  # candidate - baseline
    tol = 1e-12
    known = (se == 0) & ~np.eye(n_sys, dtype=bool)
    c_all, c_sys, sorted_max = _critical_values(deviation, se, ci_prob)

    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, diff / se, np.where(np.abs(diff) > tol, np.sign(diff) * np.inf, 0.0))
    np.fill_diagonal(t, np.nan)
    off = ~np.eye(n_sys, dtype=bool)
    reject = off & np.where(known, np.abs(diff) > tol, np.abs(t) > c_all)
    lower_diff = np.where(off, diff - c_all * se, np.nan)
    upper_diff = np.where(off, diff + c_all * se, np.nan)

    # rank set of system j from the bounds on theta_k - theta_j with j's critical value
    c_col = (c_all * np.ones(n_sys)) if kind == "simultaneous" else c_sys
    low_kj = diff - c_col[None, :] * se  # [k, j]: lower bound of theta_k - theta_j
    up_kj = diff + c_col[None, :] * se
    better = off & np.where(known, diff > tol, low_kj > 0)
    worse = off & np.where(known, diff < -tol, up_kj < 0)
    rank_lower = 1 + better.sum(axis=0)
    rank_upper = n_sys - worse.sum(axis=0)

    abs_t = np.abs(t)
    p_wald = np.where(off, 2 * stats.norm.sf(abs_t), np.nan)
    iu = np.triu_indices(n_sys, 1)
    p_holm = np.full((n_sys, n_sys), np.nan)
    if len(iu[0]):
        upper = _holm(p_wald[iu])
        p_holm[iu] = upper
        p_holm[iu[::-1]] = upper
    # single-step max-|t| adjusted p-value: the share of replicate maxima at or above |t|
    exceed = n_boot - np.searchsorted(sorted_max, np.where(off, abs_t, 0.0), side="left")
    p_maxt = np.where(
        off, np.where(known, np.where(np.abs(diff) > tol, 0.0, 1.0), exceed / n_boot), np.nan
    )
    rank_observed = 1 + (estimate[None, :] > estimate[:, None]).sum(axis=1)
    return {
        "estimate": estimate,
        "rank_observed": rank_observed,
        "rank_lower": rank_lower,
        "rank_upper": rank_upper,
        "critical_value": c_col,
        "diff": np.where(off, diff, np.nan),
        "se": np.where(off, se, np.nan),
        "t": t,
        "diff_interval": np.stack([lower_diff, upper_diff], axis=-1),
        "reject": reject,
        "p_value": p_wald,
        "p_value_holm": p_holm,
        "p_value_maxt": p_maxt,
    }, c_all


def rank_sets(
    data,
    *,
    metric="pass@k",
    k=1,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    kind="simultaneous",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Rank confidence sets for every system, with multiplicity-adjusted pairwise tests.

    The ``max-|t|`` construction of Mogstad, Romano, Shaikh & Wilhelm (2024) on the paired
    bootstrap: all systems are resampled on the same tasks (or whole clusters), the
    ``ci_prob`` quantile of the largest studentised deviation of a pairwise difference gives
    simultaneous intervals for all differences, and system j's rank set is
    ``[1 + #{k surely better}, p - #{k surely worse}]`` (rank 1 = best). Only tasks valid for
    every system are used (under ``missing="exclude"`` the others are listed in attrs).

    The frequentist twin of :func:`ranks`, reached as ``bayeval.bootstrap.rank_sets``.

    Parameters
    ----------
    data : EvalData
        Two or more systems; not under ``missing="bounds"`` (choose a bound with
        ``data.with_missing("fail")`` or ``"exclude"``).
    metric : {"pass@k", "pass^k"}, default "pass@k"
    k : int, default 1
        One k.
    unit : {"task", "cluster", "trial"}, default "task"
        What is resampled, as in :func:`bayeval.bootstrap.pass_at_k`: ``"task"`` and
        ``"cluster"`` are the twins of ``estimand="population"``, ``"trial"`` of
        ``estimand="tasks"``.
    ci_prob : float, default 0.95
        Coverage of the sets: of all true ranks at once (``kind="simultaneous"``) or of each
        system's own rank (``kind="marginal"``).
    n_boot : int, default 10000
    seed : int or None, default 0
        ``None`` draws a seed and records it.
    kind : {"simultaneous", "marginal"}, default "simultaneous"
        Simultaneous: one critical value over all pairs. Marginal: system j's set uses the
        maximum over the pairs that involve j only (narrower; one statement per system).
    weighting, clusters
        As in :func:`bayeval.bootstrap.pass_at_k`.

    Returns
    -------
    xarray.Dataset
        Over ``system``: ``estimate``, ``rank_observed`` (1 + systems with a strictly higher
        estimate), ``rank_lower``, ``rank_upper`` and ``critical_value`` (the one used for
        that system's set). Over ``(candidate, baseline)``: ``diff`` (candidate minus
        baseline), ``se`` (bootstrap), ``t``, ``diff_interval`` (on ``ci_bound``,
        simultaneous over all pairs), ``reject`` (``|t|`` above the all-pairs critical value:
        family-wise error at most ``1 - ci_prob``), ``p_value`` (two-sided Wald),
        ``p_value_holm`` (Holm over the pairs) and ``p_value_maxt`` (share of replicate maxima
        at or above ``|t|``); the diagonal is NaN (``reject`` False). A pair with no bootstrap
        spread has ``se = 0``, ``t = +/-inf`` (or 0 for a zero difference) and its difference is
        taken as known. Status counts per system; settings and the all-pairs
        ``critical_value`` in attrs.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.ranks import rank_sets
    >>> data = be.from_counts([[2, 3, 1, 2, 3, 2], [8, 9, 7, 9, 8, 9], [8, 8, 9, 9, 8, 9]],
    ...                       trials=10, systems=["A", "B", "C"])
    >>> out = rank_sets(data, n_boot=2000, seed=0)
    >>> out["rank_lower"].values.tolist(), out["rank_upper"].values.tolist()
    ([3, 1, 1], [3, 2, 2])
    >>> bool(out["reject"].sel(candidate="B", baseline="A"))
    True
    """
    ci_prob, n_boot, seed = _validate_common(
        data, unit, weighting, clusters, "percentile", ci_prob, n_boot, seed, metric
    )
    validate_choice("kind", kind, KINDS)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be one positive integer (rank sets take one k); got {k!r}")
    if data.missing == "bounds":
        raise ValueError(
            "rank_sets needs one count per cell; this data has missing='bounds'. "
            "Choose a policy first: data.with_missing('fail') or "
            "data.with_missing('exclude') (or compute the sets under each)"
        )
    systems = data.systems
    if len(systems) < 2:
        raise ValueError(f"rank_sets needs at least two systems; got {len(systems)}")
    shared = (data.dataset["trials"].values > 0).all(axis=0)
    if not shared.any():
        raise ValueError(
            "no task has valid trials for every system; rank sets compare all "
            "systems on shared tasks"
        )
    subset = data if shared.all() else data.sel(task=data.tasks[shared].tolist())
    ks = np.array([int(k)], dtype=np.int64)
    res, _, _ = _run(subset, systems, ks, metric, unit, weighting, clusters, n_boot, seed)
    # with one trial everywhere the trial bootstrap has already warned that it has zero width
    one_trial = (subset.dataset["trials"].values == 1).all()
    if res.valid is not None and not res.valid.all() and not one_trial:
        reason = next(r for r in res.reason.ravel() if r)
        warnings.warn(
            f"the rank sets rest on a trial bootstrap that does not hold here: {reason}",
            BayevalWarning,
            stacklevel=2,
        )
    estimate = res.estimate[:, 0]
    replicates = res.replicates[:, :, 0]
    finite = np.isfinite(replicates).all(axis=1)
    if not finite.all():
        warnings.warn(
            f"{int((~finite).sum())} of {n_boot} bootstrap replicates are undefined "
            "(a resampled group had no valid task) and were left out",
            BayevalWarning,
            stacklevel=2,
        )
        replicates = replicates[finite]
    arrays, c_all = _rank_set_arrays(estimate, replicates, ci_prob, kind)

    pair = ("candidate", "baseline")
    ds = xr.Dataset(
        {
            name: (("system",), arrays[name])
            for name in ("estimate", "rank_observed", "rank_lower", "rank_upper", "critical_value")
        }
        | {
            name: (pair, arrays[name])
            for name in ("diff", "se", "t", "reject", "p_value", "p_value_holm", "p_value_maxt")
        }
        | {"diff_interval": (pair + ("ci_bound",), arrays["diff_interval"])},
        coords={
            "system": np.asarray(systems, dtype=object),
            "candidate": np.asarray(systems, dtype=object),
            "baseline": np.asarray(systems, dtype=object),
            "ci_bound": ["lower", "upper"],
        },
    )
    ds = ds.assign(_status_vars(data, systems))
    ds.attrs = {
        "metric": metric,
        "k": int(k),
        "unit": unit,
        "estimand": ESTIMAND_OF_UNIT[unit],
        "weighting": weighting,
        "clusters": clusters or "none",
        "kind": kind,
        "ci_prob": ci_prob,
        "n_boot": n_boot,
        "n_boot_used": int(finite.sum()),
        "seed": seed,
        "critical_value": c_all,
        "n_tasks": int(shared.sum()),
        "n_unshared_tasks": int((~shared).sum()),
        "missing_policy": data.missing or "none",
        "paired": True,
        "paired_note": "every system resampled on the same tasks",
        "construction": "max-|t| over pairwise differences (Mogstad, Romano, Shaikh & "
        "Wilhelm 2024); rank 1 = best; rank set = [1 + #surely better, "
        "p - #surely worse]",
    }
    return ds


# -- everything ``bayeval rank`` shows ---------------------------------------------------------
def rank_summary(
    posterior,
    data,
    *,
    metric="pass@k",
    k=1,
    estimand="population",
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    prob=0.95,
    top=3,
    n_replicates=200,
    clusters=None,
    weighting="task",
) -> xr.Dataset:
    """Posterior ranks, groups, the bootstrap's rank sets and the winner's curse in one place.

    Per system, best first by posterior mean: the posterior rank (mean and simultaneous
    interval: all systems' ranks at once with probability ``ci_prob``),
    P(best), P(in the top ``top``), the group of :func:`rank_groups` at ``prob``, the
    bootstrap twin's simultaneous rank set (:func:`rank_sets` by ``unit``, on ``data``), the
    posterior mean and the observed score; and the winner's curse (:func:`winner`). The
    report layer turns it into the record ``bayeval rank`` prints.

    Parameters
    ----------
    posterior : Posterior
    data : EvalData
        The data of the posterior (its systems are used, in its order).
    metric, k, estimand, ci_prob
        As in :func:`ranks` (one k).
    unit, n_boot, seed
        The bootstrap's (:func:`rank_sets`); ``seed`` seeds the winner's replicates too.
    prob : float, default 0.95
        Of :func:`rank_groups`.
    top : int, default 3
    n_replicates : int, default 200
        Of :func:`winner`.
    clusters, weighting
        The population of ``estimand="population"``, as in :func:`ranks` (default: the fit's,
        :func:`bayeval.data.clusters.default_clusters`); the same for the ranks, groups and
        the winner. The bootstrap's population is its ``unit``'s.

    Returns
    -------
    xarray.Dataset
        Over ``system`` (best first): ``mean``, ``observed``, ``rank_mean``, ``rank_lower``,
        ``rank_upper``, ``prob_best``, ``prob_top``, ``group``, ``bootstrap_rank_lower``,
        ``bootstrap_rank_upper``; the winner's ``naive_score``, ``value_mean``,
        ``value_interval``, ``tasks_value_mean``, ``tasks_value_interval``, ``optimism``,
        ``prob_pick_is_best``, ``expected_optimism``, ``expected_optimism_se`` and
        ``replicate_prob_best_picked``; settings, ``pick``, ``tied_with``, ``tie_rule``,
        ``group_rule``, the fit's ``gates_failed`` and ``gates_note``, the bootstrap's
        ``bootstrap_construction`` and ``bootstrap_critical_value`` in attrs.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.ranks import rank_summary
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [8, 9, 8, 9]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=300, chains=2, seed=0)
    >>> out = rank_summary(res, data, n_boot=500, n_replicates=100)
    >>> out["system"].values.tolist(), out.attrs["pick"]
    (['C', 'B', 'A'], 'C')
    """
    population = {"clusters": clusters, "weighting": weighting}
    settings = {"metric": metric, "k": k, "estimand": estimand, **population}
    rank = ranks(posterior, **settings, ci_prob=ci_prob, top=top)
    groups = rank_groups(posterior, **settings, prob=prob)
    sets = rank_sets(
        data.sel(system=posterior.systems),
        metric=metric,
        k=k,
        unit=unit,
        ci_prob=ci_prob,
        n_boot=n_boot,
        seed=seed,
    )
    win = winner(posterior, **settings, ci_prob=ci_prob, n_replicates=n_replicates, seed=seed)
    order = groups["system"].tolist()
    table = groups.set_index("system")
    interval = rank["rank_interval_simultaneous"].sel(system=order)
    out = xr.Dataset(
        {
            "mean": ("system", table["mean"].to_numpy(float)),
            "observed": win["observed_score"].sel(system=order),
            "rank_mean": rank["rank_mean"].sel(system=order),
            "rank_lower": interval.sel(ci_bound="lower", drop=True).astype(int),
            "rank_upper": interval.sel(ci_bound="upper", drop=True).astype(int),
            "prob_best": rank["prob_best"].sel(system=order),
            "prob_top": rank["prob_top"].sel(system=order),
            "group": ("system", table["group"].to_numpy(int)),
            "bootstrap_rank_lower": sets["rank_lower"].sel(system=order),
            "bootstrap_rank_upper": sets["rank_upper"].sel(system=order),
            **{
                name: win[name]
                for name in (
                    "naive_score",
                    "value_mean",
                    "value_interval",
                    "tasks_value_mean",
                    "tasks_value_interval",
                    "optimism",
                    "prob_pick_is_best",
                    "expected_optimism",
                    "expected_optimism_se",
                    "replicate_prob_best_picked",
                )
            },
        },
        coords={"system": np.asarray(order, dtype=object)},
    )
    out.attrs = {
        "metric": metric,
        "k": int(k),
        "estimand": estimand,
        "prob": prob,
        "top": top,
        "ci_prob": ci_prob,
        "unit": unit,
        "n_boot": n_boot,
        "seed": seed,
        "model": posterior.model,
        **pairing(posterior),
        **settings_of(posterior.draws(metric, k, estimand, clusters, weighting)),
        "pick": win.attrs["pick"],
        "tied_with": list(win.attrs["tied_with"]),
        "tie_rule": win.attrs["tie_rule"],
        "gates_failed": list(win.attrs["gates_failed"]),
        "gates_note": win.attrs["gates_note"],
        "group_rule": groups.attrs["rule"],
        "rank_intervals": "simultaneous",
        "bootstrap_construction": sets.attrs.get("construction"),
        "bootstrap_critical_value": float(sets.attrs["critical_value"]),
    }
    return out
