"""The bootstrap engine: resampling trials, tasks or clusters as count-pattern histograms.

The public bootstrap functions (:mod:`bayeval.bootstrap`) are built on these.

Every statistic is a weighted mean of per-task unbiased estimates (:mod:`bayeval.estimators`):

    theta = sum_G W_G * (sum of task values in G) / (number of valid tasks in G)

where the groups G are the declared strata (and, under ``clusters="observed"`` or
``weighting="cluster"``, the clusters within them) and W_G their fixed weights. The resampling
unit says which estimand the interval is for:

* ``unit="trial"`` resamples trials within each fixed task: the twin of ``estimand="tasks"``;
* ``unit="task"`` resamples tasks within groups: the twin of ``estimand="population"``
  (a new task; with ``clusters="observed"``, a new task from one of the observed clusters);
* ``unit="cluster"`` resamples whole clusters within strata: the twin of
  ``estimand="population"`` with a new task from a new cluster. With ``weighting="task"``
  clusters keep their sizes (a ratio estimator); with ``weighting="cluster"`` each resampled
  cluster counts equally.

Nothing loops over replicates or episodes. Units within a group are exchangeable, so each group
is reduced to the histogram of its distinct unit patterns (the joint values over the systems
involved) and a replicate is one multinomial draw of pattern counts; trials within a task are
exchangeable too, so the trial bootstrap draws, per distinct ``(n, c)`` pattern, how many of its
tasks land on each possible count (recentred at the estimate and scaled to the estimator's
unbiased variance; rows with ``k > n/2`` have no such variance and are marked
``interval_valid=False``). 100,000 tasks never need a replicates x tasks index array.

The reliability metrics go through the same machinery: every metric is a polynomial in a task's
rate (:mod:`bayeval.estimators`), so its unbiased estimator, and the unbiased estimate of that
estimator's variance (from an unbiased estimate of ``f(p)^2``, twice the degree), exist for the
trial bootstrap as they do for pass^k. Consistency has degree 2: its trial bootstrap needs four
trials per task and is marked ``interval_valid=False`` below that.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from bayeval._validate import (
    BayevalWarning,
    describe_values,
    validate_choice,
    validate_positive_int,
    validate_prob,
    validate_seed,
)
from bayeval.data import EvalData, require_valid_outcomes
from bayeval.data.clusters import MIN_CLUSTERS
from bayeval.estimators import (
    ALL_METRICS,
    _unbiased,
    clip_metric,
    metric_ks,
    unbiased_square_table,
    unbiased_table,
    validate_metric,
)

UNITS = ("trial", "task", "cluster")
METHODS = ("percentile", "basic", "bca")
WEIGHTINGS = ("task", "cluster")
ESTIMAND_OF_UNIT = {"trial": "tasks", "task": "population", "cluster": "population"}
_MAX_CELLS = 4_000_000  # elements of one replicate-chunk x pattern matrix
#: The caveat of a trial bootstrap of data with one trial per task (what a reader of the
#: tasks estimand's twin needs to know; one text, so outputs that do not show it can leave it).
ZERO_WIDTH_NOTE = (
    "with one trial per task the trial bootstrap has zero width: it resamples each "
    "task's single outcome onto itself. Use unit='task' (tasks like these) or a Bayesian "
    "fit for honest uncertainty."
)


# -- layout: groups, units and weights ---------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    group: np.ndarray  # group index of each task
    weight: np.ndarray  # W_G of each group (sums to one)
    unit: np.ndarray  # unit index of each task (the task itself, or its cluster)
    cluster_mean: bool  # a cluster unit's value is its mean (weighting="cluster")


def _codes(values) -> np.ndarray:
    return pd.factorize(np.asarray(values, dtype=object), sort=False)[0]


def _layout(data, unit: str, weighting: str, clusters) -> _Layout:
    ds = data.dataset
    n_task = ds.sizes["task"]
    if "stratum" in ds.coords:
        stratum = _codes(ds["stratum"].values)
        labels = list(dict.fromkeys(ds["stratum"].values.tolist()))
        stratum_weight = np.array([data.stratum_weights[s] for s in labels])
    else:
        stratum, stratum_weight = np.zeros(n_task, dtype=np.int64), np.ones(1)

    by_cluster = weighting == "cluster" or clusters == "observed"
    if unit != "cluster" and not by_cluster:
        return _Layout(stratum, stratum_weight, np.arange(n_task), False)
    # these options need task clusters, which the callers require of the data
    cluster = _codes(ds["cluster"].values)
    if unit == "cluster":
        pairs = np.unique(np.stack([cluster, stratum], 1), axis=0)
        if len(np.unique(pairs[:, 0])) != len(pairs):
            raise ValueError("unit='cluster' with strata needs every cluster inside one stratum")
        return _Layout(stratum, stratum_weight, cluster, weighting == "cluster")
    group = _codes([f"{s}\x1f{c}" for s, c in zip(stratum, cluster, strict=True)])
    weight = np.zeros(group.max() + 1)
    for g in range(len(weight)):
        members = group == g
        h = stratum[members][0]
        in_stratum = stratum == h
        if weighting == "cluster":
            share = 1.0 / len(np.unique(cluster[in_stratum]))
        else:
            share = members.sum() / in_stratum.sum()
        weight[g] = stratum_weight[h] * share
    return _Layout(group, weight, np.arange(n_task), False)


def cluster_refusal(data, unit: str) -> str | None:
    """Why a bootstrap over ``unit`` does not decide, or None where it may.

    A bootstrap that resamples fewer than :data:`~bayeval.data.clusters.MIN_CLUSTERS`
    clusters (in the stratum with fewest) has only a few distinct resamples (multisets of
    its clusters: 10 of 3 clusters, 92,378 of 10): its replicate shares and p-value are
    coarse steps, not tail probabilities, so it never decides.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.resampling import cluster_refusal
    >>> data = be.datasets.load("swebench_java", missing="fail")  # 6 repositories
    >>> cluster_refusal(data, "cluster").split(",")[0]
    'the cluster bootstrap resamples 6 clusters: 462 distinct resamples'
    >>> cluster_refusal(data, "task") is None
    True
    """
    if unit != "cluster" or not data.has_clusters:
        return None
    ds = data.dataset
    cluster = np.asarray(ds["cluster"].values, dtype=object).astype(str)
    stratum = (
        np.asarray(ds["stratum"].values, dtype=object).astype(str)
        if "stratum" in ds.coords
        else np.zeros(len(cluster), dtype=str)
    )
    per_stratum = [len(np.unique(cluster[stratum == h])) for h in np.unique(stratum)]
    fewest = min(per_stratum)
    if fewest >= MIN_CLUSTERS:
        return None
    distinct = int(np.prod([math.comb(2 * g - 1, g) for g in per_stratum]))
    where = "" if len(per_stratum) == 1 else " in its smallest stratum"
    return (
        f"the cluster bootstrap resamples {fewest} clusters{where}: {distinct:,} distinct "
        f"resamples, too few for a tail probability (it takes {MIN_CLUSTERS} or more "
        "clusters), so it does not decide and gives no p-value"
    )


# -- the resampling engines --------------------------------------------------------------------
@dataclass
class _Resampled:
    estimate: np.ndarray  # (col, k)
    replicates: np.ndarray  # (replicate, col, k)
    jack_dev: np.ndarray  # (event, col, k): jackknife value minus estimate
    jack_mult: np.ndarray  # (event,): how many units each event stands for
    valid: np.ndarray | None = None  # (col, k): whether the interval construction holds
    reason: np.ndarray | None = None  # (col, k): why not, "" where it holds


def _task_values(c, n, ks, metric, tau=None):
    """Per-task estimates (col, task, k), zero where the cell has no valid trial."""
    values = _unbiased(n[..., None], c[..., None], ks, metric, tau)
    return np.where((n > 0)[..., None], values, 0.0)


def _chunks(n_boot: int, width: int):
    step = max(1, _MAX_CELLS // max(width, 1))
    for start in range(0, n_boot, step):
        yield slice(start, min(start + step, n_boot))


def _resample_units(c, n, ks, metric, layout: _Layout, n_boot, rng, tau=None) -> _Resampled:
    values = _task_values(c, n, ks, metric, tau)  # (col, task, k)
    return _resample_values(values, n > 0, metric, layout, n_boot, rng)


def _resample_values(values, valid, metric, layout: _Layout, n_boot, rng) -> _Resampled:
    """Resample units of per-task values (col, task, k), valid where ``valid`` (col, task)."""
    valid = np.asarray(valid).astype(float)
    n_col, n_task, n_k = values.shape
    order = np.argsort(layout.unit, kind="stable")
    unit_sorted = layout.unit[order]
    starts = np.r_[0, np.flatnonzero(np.diff(unit_sorted)) + 1]
    unit_ids = unit_sorted[starts]
    V = np.add.reduceat(values[:, order], starts, axis=1).transpose(1, 0, 2)  # (unit, col, k)
    S = np.add.reduceat(valid[:, order], starts, axis=1).T  # (unit, col)
    if layout.cluster_mean:
        with np.errstate(invalid="ignore", divide="ignore"):
            V = np.where(S[..., None] > 0, V / S[..., None], 0.0)
        S = (S > 0).astype(float)
    unit_group = np.empty(unit_ids.max() + 1, dtype=np.int64)
    unit_group[layout.unit] = layout.group
    group_of_unit = unit_group[unit_ids]

    rows = np.concatenate([V.reshape(len(V), -1), S], axis=1)
    estimate = np.zeros((n_col, n_k))
    replicates = np.zeros((n_boot, n_col, n_k))
    jack_dev, jack_mult = [], []
    group_parts = []
    for g, w in enumerate(layout.weight):
        patterns, mult = np.unique(rows[group_of_unit == g], axis=0, return_counts=True)
        pV = patterns[:, : n_col * n_k].reshape(-1, n_col, n_k)
        pS = patterns[:, n_col * n_k :]
        tot_V, tot_S = mult @ pV.reshape(len(pV), -1), mult @ pS
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = tot_V.reshape(n_col, n_k) / tot_S[:, None]
        estimate += w * ratio
        group_parts.append((w, ratio, pV, pS, mult, tot_V.reshape(n_col, n_k), tot_S))
        m_total = int(mult.sum())
        if len(mult) == 1:
            replicates += w * ratio
            continue
        p = mult / m_total
        for sl in _chunks(n_boot, len(mult)):
            counts = rng.multinomial(m_total, p, size=sl.stop - sl.start).astype(float)
            num = (counts @ pV.reshape(len(pV), -1)).reshape(-1, n_col, n_k)
            den = counts @ pS
            with np.errstate(invalid="ignore", divide="ignore"):
                replicates[sl] += w * num / den[..., None]
    for w, ratio, pV, pS, mult, tot_V, tot_S in group_parts:
        with np.errstate(invalid="ignore", divide="ignore"):
            left_out = (tot_V[None] - pV) / (tot_S[None, :, None] - pS[..., None])
        jack_dev.append(w * (left_out - ratio[None]))
        jack_mult.append(mult)
    return _Resampled(
        clip_metric(estimate, metric),
        clip_metric(replicates, metric),
        np.concatenate(jack_dev),
        np.concatenate(jack_mult),
    )


def _trial_weights(n, layout: _Layout) -> np.ndarray:
    """Fixed weight of each task in each column: W_G / (valid tasks of G in that column)."""
    valid = (n > 0).astype(float)
    per_group = np.zeros((n.shape[0], len(layout.weight)))
    np.add.at(per_group.T, layout.group, valid.T)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(valid > 0, layout.weight[layout.group] / per_group[:, layout.group], 0.0)


def _resample_trials(c, n, ks, metric, layout: _Layout, n_boot, rng, tau=None) -> _Resampled:
    """Trial bootstrap, recentred at the estimate and rescaled to its unbiased variance.

    A resampled task's count is ``c* ~ Binomial(n, c/n)``, so a replicate of the unbiased
    estimator g has bootstrap mean ``f(c/n)``, the plug-in value (``1 - (1 - c/n)**k`` for
    pass@k), not ``g(c)``: for k well above 1 the raw replicates sit below the estimate, and at
    k near n the estimate falls outside its own percentile interval. Both bootstrap moments
    are exact sums over the n + 1 outcomes, so each system's replicates are shifted to centre
    on the estimate and scaled to the unbiased estimate of the estimator's variance,
    ``sum_j w_j**2 (g_k(c_j)**2 - g_2k(c_j))`` for pass^k (with ``1 - g`` for pass@k; for the
    other metrics ``g_2k`` is the unbiased estimate of ``f(p)^2``). That variance estimate
    exists only where ``2k <= n`` in every task (k = 2 for consistency); elsewhere the
    replicates are only recentred and the row is marked (``valid``/``reason``): the bootstrap
    then under-covers.
    """
    weights = _trial_weights(n, layout)
    n_col, n_k = c.shape[0], len(ks)
    estimate = np.zeros((n_col, n_k))
    replicates = np.zeros((n_boot, n_col, n_k))
    boot_mean = np.zeros((n_col, n_k))
    boot_var = np.zeros((n_col, n_k))
    unbiased_var = np.zeros((n_col, n_k))
    valid = np.ones((n_col, n_k), dtype=bool)
    reason = np.full((n_col, n_k), "", dtype=object)
    jack_dev, jack_mult = [], []
    tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for col in range(n_col):
        used = n[col] > 0
        keys = np.stack([n[col, used], c[col, used], weights[col, used]], axis=1)
        patterns, mult = np.unique(keys, axis=0, return_counts=True)
        too_few = 2 * ks > int(n[col, used].min(initial=2 * ks.max()))
        for (nn, cc, w), m in zip(patterns, mult, strict=True):
            nn, cc = int(nn), int(cc)
            if nn not in tables:
                tables[nn] = (
                    unbiased_table(nn, ks, metric, tau),
                    unbiased_square_table(nn, ks, metric, tau),
                )
            table, square = tables[nn]
            estimate[col] += m * w * table[cc]
            g, h2 = table[cc], square[cc]
            h = 1 - g if metric == "pass@k" else g
            unbiased_var[col] += m * w**2 * np.where(too_few, 0.0, h**2 - h2)
            if 0 < cc < nn:
                prob = stats.binom.pmf(np.arange(nn + 1), nn, cc / nn)
                mean = prob @ table
                boot_mean[col] += m * w * mean
                boot_var[col] += m * w**2 * np.maximum(prob @ table**2 - mean**2, 0.0)
                for sl in _chunks(n_boot, min(m, nn + 1)):
                    size = sl.stop - sl.start
                    if m < nn + 1:
                        draws = rng.binomial(nn, cc / nn, size=(size, m))
                        replicates[sl, col] += w * table[draws].sum(axis=1)
                    else:
                        counts = rng.multinomial(m, prob, size=size).astype(float)
                        replicates[sl, col] += w * counts @ table
            else:
                boot_mean[col] += m * w * table[cc]
                replicates[:, col] += m * w * table[cc]
            # leave one trial out: a success (cc of them) or a failure (nn - cc of them)
            for left, times in ((cc - 1, cc), (cc, nn - cc)):
                if times == 0:
                    continue
                dev = np.zeros((n_col, n_k))
                if nn - 1 >= 1:
                    dev[col] = w * (_unbiased(nn - 1, left, ks, metric, tau) - table[cc])
                else:
                    dev[col] = np.nan
                jack_dev.append(dev)
                jack_mult.append(m * times)
        negative = ~too_few & (unbiased_var[col] < 0)
        valid[col] = ~too_few & ~negative
        n_min = int(n[col, used].min()) if used.any() else 0
        for i in np.flatnonzero(too_few):
            what = (
                "consistency compares two attempts, and 2 is"
                if metric == "consistency"
                else f"k={int(ks[i])} is"
            )
            advice = "n >= 4 trials per task" if metric == "consistency" else "k <= n/2"
            reason[col, i] = (
                f"{what} more than half the fewest trials of a task (n={n_min}): "
                f"the variance of the unbiased {metric} estimator cannot be estimated from the "
                "trials, so the interval is the trial bootstrap recentred at the estimate and "
                f"under-covers (use {advice}, unit='task', or a Bayesian fit)"
            )
        for i in np.flatnonzero(negative):
            reason[col, i] = (
                "the unbiased variance estimate is negative (too few tasks with "
                "mixed outcomes); the interval is the trial bootstrap recentred at "
                "the estimate"
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.where(
                valid[col] & (boot_var[col] > 0),
                np.sqrt(np.maximum(unbiased_var[col], 0.0) / boot_var[col]),
                1.0,
            )
        replicates[:, col] = estimate[col] + (replicates[:, col] - boot_mean[col]) * scale
    if not jack_dev:
        jack_dev, jack_mult = [np.full((n_col, n_k), np.nan)], [1]
    return _Resampled(
        clip_metric(estimate, metric),
        clip_metric(replicates, metric),
        np.stack(jack_dev),
        np.asarray(jack_mult),
        valid,
        reason,
    )


# -- intervals ---------------------------------------------------------------------------------
def _intervals(estimate, replicates, jack_dev, jack_mult, method, ci_prob):
    """Interval (..., 2) for each statistic; ``fallback`` marks BCa cells done by percentile."""
    alpha = 1 - ci_prob
    probs = np.array([alpha / 2, 1 - alpha / 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        quant = np.moveaxis(np.nanquantile(replicates, probs, axis=0), 0, -1)
    fallback = np.zeros(estimate.shape, dtype=bool)
    if method == "percentile":
        return quant, fallback
    if method == "basic":
        return 2 * estimate[..., None] - quant[..., ::-1], fallback
    n_valid = np.sum(~np.isnan(replicates), axis=0)
    below = np.sum(replicates < estimate, axis=0) + 0.5 * np.sum(replicates == estimate, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z0 = stats.norm.ppf(below / n_valid)
        mult = jack_mult.reshape((-1,) + (1,) * estimate.ndim)
        mean_dev = (mult * jack_dev).sum(0) / mult.sum()
        d = mean_dev - jack_dev
        accel = (mult * d**3).sum(0) / (6 * ((mult * d**2).sum(0)) ** 1.5)
        z = stats.norm.ppf(probs)
        zz = z0[..., None] + z
        adjusted = stats.norm.cdf(z0[..., None] + zz / (1 - accel[..., None] * zz))
    fallback = ~(np.isfinite(adjusted).all(-1) & np.isfinite(z0))
    bca = np.empty(estimate.shape + (2,))
    flat_reps = replicates.reshape(len(replicates), -1)
    flat_adj = np.where(fallback[..., None], probs, adjusted).reshape(-1, 2)
    for i in range(flat_reps.shape[1]):
        column = flat_reps[:, i]
        bca.reshape(-1, 2)[i] = np.quantile(column[~np.isnan(column)], flat_adj[i])
    return bca, fallback


ALTERNATIVES = ("two-sided", "greater", "less")


def bootstrap_p_value(replicates, *, null=0.0, alternative="two-sided", axis=-1):
    """Percentile-bootstrap p-value of a null value, from the replicates of an estimate.

    With ``B`` defined (non-NaN) replicates ``T*`` along ``axis``:

    * ``"greater"`` (H0: effect <= null): ``(1 + #{T* <= null}) / (B + 1)``;
    * ``"less"`` (H0: effect >= null): ``(1 + #{T* >= null}) / (B + 1)``;
    * ``"two-sided"``: twice the smaller of the two, at most 1.

    A replicate equal to ``null`` counts for the null (a tie lies inside H0), so a p-value
    below ``alpha`` goes with a ``1 - alpha`` percentile interval that excludes ``null``
    (``1 - 2 alpha`` one-sided) and is never below ``1 / (B + 1)`` (``2 / (B + 1)``
    two-sided): the add-one form of a Monte Carlo p-value (Davison & Hinkley 1997, eq. 4.11),
    which B replicates cannot resolve below. NaN where no replicate is defined.

    Parameters
    ----------
    replicates : array_like
    null : float, default 0.0
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
    axis : int, default -1
        The replicate axis, reduced.

    Returns
    -------
    numpy.ndarray or float
        The p-values over the other axes (a float for one-dimensional replicates).

    Examples
    --------
    >>> from bayeval.resampling import bootstrap_p_value
    >>> bootstrap_p_value([0.3, -0.1, 0.0, 0.2], alternative="greater")  # (1 + 2) / 5
    0.6
    >>> bootstrap_p_value([0.3, 0.1, 0.2, 0.4])  # 2 (1 + 0) / 5
    0.4
    """
    validate_choice("alternative", alternative, ALTERNATIVES)
    values = np.moveaxis(np.asarray(replicates, dtype=float), axis, -1)
    defined = ~np.isnan(values)
    n = defined.sum(axis=-1)
    at_or_below = (defined & (values <= null)).sum(axis=-1)
    at_or_above = (defined & (values >= null)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        greater = (1 + at_or_below) / (n + 1)
        less = (1 + at_or_above) / (n + 1)
    if alternative == "greater":
        p = greater
    elif alternative == "less":
        p = less
    else:
        p = np.minimum(1.0, 2 * np.minimum(greater, less))
    p = np.where(n > 0, p, np.nan)
    return float(p) if p.ndim == 0 else p


# -- public API --------------------------------------------------------------------------------
def _validate_common(
    data, unit, weighting, clusters, method, ci_prob, n_boot, seed, metric, tau=None
):
    if not isinstance(data, EvalData):
        raise TypeError(
            f"data must be an EvalData (from be.from_frame / be.from_counts); "
            f"got {type(data).__name__}"
        )
    validate_choice("unit", unit, UNITS)
    validate_choice("weighting", weighting, WEIGHTINGS)
    validate_choice("method", method, METHODS)
    validate_metric(metric, tau, ALL_METRICS)
    if clusters not in (None, "observed"):
        raise ValueError(f"clusters must be None or 'observed'; got {clusters!r}")
    needs_clusters = unit == "cluster" or clusters == "observed" or weighting == "cluster"
    if needs_clusters and not data.has_clusters:
        raise ValueError(
            f"unit={unit!r}, clusters={clusters!r}, weighting={weighting!r} needs task clusters; "
            "this data has none (pass cluster= when building it)"
        )
    if unit == "task" and weighting == "cluster" and clusters != "observed":
        raise ValueError(
            "weighting='cluster' with unit='task' needs clusters='observed' "
            "(tasks resampled within their clusters); or use unit='cluster'"
        )
    if clusters == "observed" and unit != "task":
        raise ValueError(f"clusters='observed' applies to unit='task'; got unit={unit!r}")
    return (
        validate_prob("ci_prob", ci_prob),
        validate_positive_int("n_boot", n_boot, 2),
        validate_seed(seed),
    )


def _arrays(data, systems):
    """Counts as (bound, system, task) arrays (a single bound when there are no bounds)."""
    ds = data.dataset.sel(system=systems)
    c = ds["successes"]
    bounds = c["missing_bound"].values.tolist() if "missing_bound" in c.dims else None
    c = c.transpose(*(("missing_bound",) if bounds else ()), "system", "task").values
    n = ds["trials"].transpose("system", "task").values
    if bounds is None:
        c = c[None]
    n = np.broadcast_to(n, c.shape)
    return c, n, bounds


def _check_k(data, systems, c, n, ks, metric):
    needed = 2 if metric == "consistency" else int(ks.max())
    too_few = (n > 0) & (n < needed)
    if not too_few.any():
        return
    _, s, j = np.nonzero(too_few)
    tasks = data.dataset["task"].values
    system = systems[s[0]]
    offenders = tasks[j[s == s[0]]]
    if metric == "consistency":
        raise ValueError(
            "consistency compares two attempts and needs at least 2 valid trials in every "
            f"task; system {system!r} has fewer in tasks {describe_values(offenders, limit=6)}"
        )
    raise ValueError(
        f"{metric} at k={int(ks.max())} needs at least {int(ks.max())} valid trials in every "
        f"task; system {system!r} has fewer in tasks {describe_values(offenders, limit=6)} "
        f"(smallest: {int(n[too_few].min())}); use k <= {int(n[n > 0].min())}"
    )


def _refuse_scores(data, metric):
    if data.has_partial_credit:
        raise ValueError(
            f"{metric} is a metric of 0/1 outcomes, but this data holds "
            f"{int(data.dataset['score_nmid'].sum())} score(s) strictly between "
            "0 and 1: bootstrap the mean score (bayeval.bootstrap.mean_score, "
            "compare(..., metric='mean')), or threshold the scores into a "
            "success= column first if full credit is what counts"
        )


def _mean_run(data, systems, unit, weighting, clusters, n_boot, seed):
    """Resampled mean scores: per-task means under the policy (bounds: 0 and 1 for missing)."""
    if unit == "trial":
        raise ValueError(
            "the mean score is bootstrapped over tasks or clusters (unit='task' "
            "or 'cluster', twins of estimand='population'); a trial bootstrap "
            "needs each attempt's score, which the data keep only as sums"
        )
    require_valid_outcomes(data, systems)
    stats = data.sel(system=systems).score_statistics()
    bounds = stats["missing_bound"].values.tolist() if "missing_bound" in stats.dims else None
    if bounds is None:
        stats = stats.expand_dims(missing_bound=1)
    total = stats["sum"].transpose("missing_bound", "system", "task").values
    trials = stats["trials"].transpose("missing_bound", "system", "task").values
    shape = total.shape[:2]
    total, trials = total.reshape(-1, total.shape[-1]), trials.reshape(-1, trials.shape[-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(trials > 0, total / trials, 0.0)[..., None]  # (col, task, 1)
    layout = _layout(data, unit, weighting, clusters)
    res = _resample_values(
        values, trials > 0, "pass@k", layout, n_boot, np.random.default_rng(seed)
    )
    return res, shape, bounds


def _run(data, systems, ks, metric, unit, weighting, clusters, n_boot, seed, tau=None):
    require_valid_outcomes(data, systems)
    _refuse_scores(data, metric)
    c, n, bounds = _arrays(data, systems)
    _check_k(data, systems, c, n, ks, metric)
    layout = _layout(data, unit, weighting, clusters)
    rng = np.random.default_rng(seed)
    shape = c.shape[:2]
    c2, n2 = c.reshape(-1, c.shape[-1]), n.reshape(-1, n.shape[-1])
    engine = _resample_trials if unit == "trial" else _resample_units
    res = engine(c2, n2, ks, metric, layout, n_boot, rng, tau)
    if unit == "trial" and (n2[n2 > 0] == 1).all():
        warnings.warn(ZERO_WIDTH_NOTE, BayevalWarning, stacklevel=3)
    return res, shape, bounds


def _validity(res: _Resampled, shape, n_k):
    """``interval_valid`` and ``interval_reason`` as (bound, system, k) arrays."""
    if res.valid is None or res.reason is None:  # set together, by the unit engine only
        return np.ones(shape + (n_k,), dtype=bool), np.full(shape + (n_k,), "", dtype=object)
    return res.valid.reshape(shape + (n_k,)), res.reason.reshape(shape + (n_k,))


def _reshape(array, lead, shape, n_k):
    return array.reshape(lead + shape + (n_k,))


def _status_vars(data, systems):
    counts = data.dataset["status_counts"].sel(system=systems).sum("task")
    return {"status_counts": counts, "coverage": counts.sel(status="ok") / counts.sum("status")}


def _settings(unit, method, ci_prob, n_boot, seed, weighting, clusters, metric, data, tau=None):
    out = {
        "unit": unit,
        "estimand": ESTIMAND_OF_UNIT[unit],
        "clusters": {"cluster": "new", "task": clusters or "ignored"}.get(unit, "fixed tasks"),
        "weighting": weighting,
        "method": method,
        "ci_prob": ci_prob,
        "n_boot": n_boot,
        "seed": seed,
        "metric": metric,
        "missing_policy": data.missing or "none",
    }
    if tau is not None:
        out["tau"] = tau
    return out


def _warn_nan(replicates, what):
    n_nan = int(np.isnan(replicates).any(axis=tuple(range(1, replicates.ndim))).sum())
    if n_nan:
        warnings.warn(
            f"{n_nan} of {len(replicates)} bootstrap replicates of {what} are "
            "undefined (a resampled group had no valid task) and were left out of the "
            "interval",
            BayevalWarning,
            stacklevel=4,
        )


def _warn_fallback(fallback, method):
    if method == "bca" and fallback.any():
        warnings.warn(
            f"BCa is undefined for {int(fallback.sum())} of {fallback.size} statistics (no "
            "spread in the jackknife or all replicates on one side, as with all-0 or all-1 "
            "data); the percentile interval was used there (see variable 'bca_fallback')",
            BayevalWarning,
            stacklevel=4,
        )


def _metric_dataset(
    data, k, metric, unit, n_boot, ci_prob, seed, method, weighting, clusters, tau=None
):
    ci_prob, n_boot, seed = _validate_common(
        data, unit, weighting, clusters, method, ci_prob, n_boot, seed, metric, tau
    )
    _, tau = validate_metric(metric, tau)
    ks, scalar_k = metric_ks(metric, k)
    systems = data.systems
    res, shape, bounds = _run(
        data, systems, ks, metric, unit, weighting, clusters, n_boot, seed, tau
    )
    n_k = len(ks)
    est = _reshape(res.estimate, (), shape, n_k)
    reps = _reshape(res.replicates, (n_boot,), shape, n_k)
    jdev = _reshape(res.jack_dev, (len(res.jack_mult),), shape, n_k)
    interval, fallback = _intervals(est, reps, jdev, res.jack_mult, method, ci_prob)
    _warn_nan(reps, metric)
    _warn_fallback(fallback, method)

    def da(values, lead_dims, trail_dims=()):
        dims = lead_dims + ("missing_bound", "system", "k") + trail_dims
        out = xr.DataArray(values, dims=dims)
        return out if bounds else out.isel(missing_bound=0, drop=True)

    ds = xr.Dataset(
        {
            "estimate": da(est, ()),
            "replicates": da(reps, ("replicate",)),
            "interval": da(interval, (), ("ci_bound",)),
        }
    )
    if method == "bca":
        ds["bca_fallback"] = da(fallback, ())
    valid, reason = _validity(res, shape, n_k)
    ds["interval_valid"] = da(valid, ())
    ds["interval_reason"] = da(reason, ())
    coords = {"system": np.asarray(systems, dtype=object), "k": ks, "ci_bound": ["lower", "upper"]}
    if bounds:
        coords["missing_bound"] = bounds
    ds = ds.assign_coords(coords)
    if scalar_k:
        ds = ds.isel(k=0)
    ds = ds.transpose("replicate", "system", ...)
    ds = ds.assign(_status_vars(data, systems))
    ds.attrs = _settings(
        unit, method, ci_prob, n_boot, seed, weighting, clusters, metric, data, tau
    )
    return ds
