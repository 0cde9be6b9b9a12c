"""Frequentist estimators on count arrays.

Unbiased per-task estimators (Chen et al., 2021, for pass@k; Yao et al., 2024, for pass^k):

* pass@k: ``1 - C(n - c, k) / C(n, k)``, the chance that at least one of k trials drawn without
  replacement from the n observed ones succeeds;
* pass^k: ``C(c, k) / C(n, k)``, the chance that all k succeed.

Both ratios of binomial coefficients are computed as products of at most ``min(k, ...)``
factors in ``(0, 1]``, so they stay finite and accurate for n in the thousands. They are NaN
where ``n < k`` (HumanEval reports a k only when every task has ``n >= k``).

Score intervals for one binomial proportion (Wilson, Clopper-Pearson, Jeffreys, Wald) and the
intra-task correlation / design effect complete the module. Functions here take arrays and
broadcast; :func:`task_metric` is the xarray wrapper that appends a ``k`` dim.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from statsmodels.stats.proportion import proportion_confint

from bayeval._validate import validate_choice, validate_k, validate_prob

__all__ = [
    "pass_at_k",
    "pass_hat_k",
    "wilson_interval",
    "clopper_pearson_interval",
    "jeffreys_interval",
    "wald_interval",
    "design_effect",
    "task_metric",
]

METRICS = ("pass@k", "pass^k")
_CHUNK = 4096


def _counts(n, c, k) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n, c, k = (np.asarray(x) for x in (n, c, k))
    for name, x in (("n", n), ("c", c), ("k", k)):
        if x.dtype == bool or not np.issubdtype(x.dtype, np.number):
            raise TypeError(f"{name} must be integer counts; got dtype {x.dtype}")
        if np.any(x != np.round(x)) or np.any(~np.isfinite(x)):
            raise ValueError(f"{name} must hold whole numbers")
    n, c, k = np.broadcast_arrays(n.astype(np.int64), c.astype(np.int64), k.astype(np.int64))
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("c (successes) must lie in 0..n for every element")
    if np.any(k < 1):
        raise ValueError("k must be >= 1")
    return n, c, k


def _falling_ratio(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``prod_{i<m} (a - i) / (b - i)`` elementwise, for ``0 <= a <= b`` and ``m <= b``.

    Every factor lies in [0, 1], so the product cannot overflow; a zero factor (``a < m``)
    makes the product exactly zero.
    """
    out = np.empty(a.shape, dtype=float)
    for start in range(0, a.size, _CHUNK):
        sl = slice(start, start + _CHUNK)
        ai, bi, mi = a[sl, None], b[sl, None], m[sl, None]
        i = np.arange(max(int(m[sl].max(initial=0)), 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = np.where(i < mi, (ai - i) / (bi - i), 1.0)
        out[sl] = np.clip(terms, 0.0, 1.0).prod(axis=1)
    return out


def _unbiased(n, c, k, metric: str) -> np.ndarray:
    n, c, k = _counts(n, c, k)
    shape = n.shape
    triples, inverse = np.unique(
        np.stack([n.ravel(), c.ravel(), k.ravel()], axis=1), axis=0, return_inverse=True
    )
    un, uc, uk = triples.T
    defined = uk <= un
    values = np.full(len(triples), np.nan)
    un, uc, uk = un[defined], uc[defined], uk[defined]
    if metric == "pass@k":
        # C(n-c, k)/C(n, k) = prod_{i<k} (n-c-i)/(n-i) = prod_{i<c} (n-k-i)/(n-i)
        short = uk <= uc
        a = np.where(short, un - uc, un - uk)
        m = np.where(short, uk, uc)
        values[defined] = 1.0 - _falling_ratio(a, un, m)
    else:
        # C(c, k)/C(n, k) = prod_{i<k} (c-i)/(n-i) = prod_{i<n-c} (n-k-i)/(n-i)
        short = uk <= un - uc
        a = np.where(short, uc, un - uk)
        m = np.where(short, uk, un - uc)
        values[defined] = _falling_ratio(a, un, m)
    out = clip_probability(values[inverse.ravel()].reshape(shape))
    return out if out.ndim else float(out)


def clip_probability(values):
    """Clip computed probabilities (sums, products, closed forms) to [0, 1].

    Rounding can push a weighted mean of values in [0, 1] a few ulps outside it (a benchmark
    pass@k of 1.0000000000000002); NaN stays NaN.

    Examples
    --------
    >>> from bayeval.estimators import clip_probability
    >>> float(clip_probability(0.1 + 0.2 + 0.7))
    1.0
    """
    return np.clip(values, 0.0, 1.0)


def unbiased_table(n: int, ks, metric: str) -> np.ndarray:
    """The unbiased estimator at every success count: shape ``(n + 1, len(ks))``.

    Row ``c`` holds pass@k (or pass^k) of a task with ``c`` successes in ``n`` trials, for each
    k; NaN where ``k > n``. One cumulative product per k, ``prod_{i<m} (n - k - i) / (n - i)``
    over m = 0..n, gives ``C(n - c, k) / C(n, k)`` at ``m = c`` and ``C(c, k) / C(n, k)`` at
    ``m = n - c``: the cost is O(n) per k, however large k is.

    Examples
    --------
    >>> from bayeval.estimators import unbiased_table
    >>> unbiased_table(4, [1, 2], "pass@k").round(4).tolist()
    [[0.0, 0.0], [0.25, 0.5], [0.5, 0.8333], [0.75, 1.0], [1.0, 1.0]]
    """
    ks = np.asarray(ks, dtype=np.int64)
    i = np.arange(n, dtype=float)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        factors = np.clip((n - ks[None, :] - i) / (n - i), 0.0, 1.0)
    ratio = np.vstack([np.ones((1, len(ks))), np.cumprod(factors, axis=0)])  # m = 0..n
    table = 1.0 - ratio if metric == "pass@k" else ratio[::-1]
    table = np.clip(table, 0.0, 1.0)
    table[:, ks > n] = np.nan
    return table


def pass_at_k(n, c, k):
    """Unbiased pass@k: the chance that at least one of k sampled trials succeeds.

    Parameters
    ----------
    n : int or array_like of int
        Trials per task.
    c : int or array_like of int
        Successes per task, ``0 <= c <= n``.
    k : int or array_like of int
        Attempts allowed; broadcast against ``n`` and ``c``.

    Returns
    -------
    float or numpy.ndarray
        ``1 - C(n - c, k) / C(n, k)``; NaN where ``n < k``.

    Examples
    --------
    >>> import bayeval as be
    >>> round(be.pass_at_k(10, 3, 2), 6)
    0.533333
    >>> be.pass_at_k([10, 1], [3, 1], 5)
    array([0.91666667,        nan])
    """
    return _unbiased(n, c, k, "pass@k")


def pass_hat_k(n, c, k):
    """Unbiased pass^k: the chance that all of k sampled trials succeed.

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials, successes and k, as in :func:`pass_at_k`.

    Returns
    -------
    float or numpy.ndarray
        ``C(c, k) / C(n, k)``; NaN where ``n < k``.

    Examples
    --------
    >>> import bayeval as be
    >>> round(be.pass_hat_k(4, 3, 2), 6)
    0.5
    """
    return _unbiased(n, c, k, "pass^k")


def task_metric(successes: xr.DataArray, trials: xr.DataArray, k, metric: str = "pass@k"):
    """Per-task unbiased estimates with a ``k`` dim appended at the end.

    Examples
    --------
    >>> import xarray as xr, bayeval.estimators as est
    >>> c = xr.DataArray([[3, 10]], dims=("system", "task"))
    >>> est.task_metric(c, c * 0 + 10, [1, 2]).dims
    ('system', 'task', 'k')
    """
    validate_choice("metric", metric, METRICS)
    ks, _ = validate_k(k)
    func = pass_at_k if metric == "pass@k" else pass_hat_k
    return xr.apply_ufunc(
        lambda n, c: func(n[..., None], c[..., None], ks),
        trials,
        successes,
        output_core_dims=[["k"]],
    ).assign_coords(k=ks)


def _proportion_args(successes, n):
    c = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("successes must lie in 0..n")
    return np.broadcast_arrays(c, n)


def _confint(successes, n, ci_prob, method: str):
    """``statsmodels.stats.proportion.proportion_confint``, elementwise; NaN where n == 0."""
    # 1 - 0.95 is 0.050000000000000044: round so that ci_prob=0.95 means alpha=0.05 exactly
    alpha = round(1.0 - validate_prob("ci_prob", ci_prob), 12)
    c, n = (np.array(x) for x in _proportion_args(successes, n))  # statsmodels writes to them
    empty = n == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        lower, upper = proportion_confint(c, np.where(empty, 1.0, n), alpha=alpha, method=method)
    lower = np.where(empty, np.nan, np.asarray(lower, dtype=float))
    upper = np.where(empty, np.nan, np.asarray(upper, dtype=float))
    return _pair(lower, upper)


def wilson_interval(successes, n, ci_prob: float = 0.95):
    """Wilson score interval for a binomial proportion.

    The values are those of ``statsmodels.stats.proportion.proportion_confint(successes, n,
    alpha=1 - ci_prob, method="wilson")``, elementwise over broadcast arrays.

    Parameters
    ----------
    successes, n : int or array_like
        Successes and trials (statsmodels' ``count, nobs`` order).
    ci_prob : float, default 0.95
        Interval probability.

    Returns
    -------
    (lower, upper) : tuple of float or numpy.ndarray
        NaN where ``n == 0``.

    Examples
    --------
    >>> import bayeval as be
    >>> [round(x, 4) for x in be.wilson_interval(7, 10)]
    [0.3968, 0.8922]
    """
    return _confint(successes, n, ci_prob, "wilson")


def wald_interval(successes, n, ci_prob: float = 0.95):
    """Wald (normal approximation) interval, clipped to [0, 1]; shown for comparison only.

    statsmodels' ``method="normal"``; parameters and returns as in :func:`wilson_interval`.

    Examples
    --------
    >>> import bayeval as be
    >>> [round(x, 4) for x in be.estimators.wald_interval(7, 10)]
    [0.416, 0.984]
    """
    return _confint(successes, n, ci_prob, "normal")


def clopper_pearson_interval(successes, n, ci_prob: float = 0.95):
    """Clopper-Pearson ("exact") interval from Beta quantiles; 0 or 1 at the boundaries.

    statsmodels' ``method="beta"``; parameters and returns as in :func:`wilson_interval`.

    Examples
    --------
    >>> import bayeval as be
    >>> [round(x, 4) for x in be.estimators.clopper_pearson_interval(7, 10)]
    [0.3475, 0.9333]
    """
    return _confint(successes, n, ci_prob, "beta")


def jeffreys_interval(successes, n, ci_prob: float = 0.95):
    """Jeffreys interval: equal-tailed quantiles of ``Beta(c + 1/2, n - c + 1/2)``.

    statsmodels' ``method="jeffreys"`` (0 or 1 at the boundaries); parameters and returns as
    in :func:`wilson_interval`.

    Examples
    --------
    >>> import bayeval as be
    >>> [round(x, 4) for x in be.estimators.jeffreys_interval(7, 10)]
    [0.3942, 0.9073]
    """
    return _confint(successes, n, ci_prob, "jeffreys")


def _pair(lower, upper):
    if np.ndim(lower) == 0:
        return float(lower), float(upper)
    return lower, upper


def icc_anova(successes, trials, axis: int = -1):
    """Intra-task correlation by one-way ANOVA (method of moments), unequal trial counts.

    Tasks with no trials are ignored. Returns ``(icc, mean_trials)`` with ``axis`` reduced.
    ``icc`` is NaN when it is not identified (one trial per task, or fewer than two tasks).

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.estimators import icc_anova
    >>> icc, m = icc_anova(np.array([0, 10, 0, 10]), np.array([10, 10, 10, 10]))
    >>> float(icc), float(m)
    (1.0, 10.0)
    """
    c = np.moveaxis(np.asarray(successes, dtype=float), axis, -1)
    n = np.moveaxis(np.asarray(trials, dtype=float), axis, -1)
    used = n > 0
    n_tasks = used.sum(-1)
    total = n.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_task = np.where(used, c / np.where(used, n, 1), 0.0)
        p_all = c.sum(-1) / total
        ss_between = (n * (p_task - p_all[..., None]) ** 2).sum(-1)
        ss_within = (n * p_task * (1 - p_task)).sum(-1)
        ms_between = ss_between / (n_tasks - 1)
        ms_within = ss_within / (total - n_tasks)
        n0 = (total - (n**2).sum(-1) / total) / (n_tasks - 1)
        icc = (ms_between - ms_within) / (ms_between + (n0 - 1) * ms_within)
        mean_trials = total / n_tasks
    icc = np.where((n_tasks < 2) | (total <= n_tasks), np.nan, icc)
    return icc, mean_trials


def design_effect(data) -> xr.Dataset:
    """Intra-task correlation and design effect of the trials, per system.

    The intra-task correlation ``icc`` is the one-way ANOVA (method-of-moments) estimate with
    tasks as groups; the design effect is ``1 + (m - 1) * icc`` with ``m`` the mean trials per
    task, and ``effective_trials`` the total trials divided by it: how many independent coins
    the trials are worth when estimating the mean over a population of tasks.

    Parameters
    ----------
    data : EvalData

    Returns
    -------
    xarray.Dataset
        ``icc``, ``design_effect``, ``mean_trials``, ``effective_trials`` over ``system``
        (and ``missing_bound`` under the ``bounds`` policy).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[0, 10, 0, 10, 5]], trials=10)
    >>> round(float(be.design_effect(data)["design_effect"].item()), 2)
    8.33
    """
    ds = data.dataset
    icc, mean_trials = xr.apply_ufunc(
        icc_anova, ds["successes"], ds["trials"],
        input_core_dims=[["task"], ["task"]], output_core_dims=[[], []], vectorize=True,
    )
    deff = 1 + (mean_trials - 1) * icc
    total = ds["trials"].sum("task")
    out = xr.Dataset(
        {"icc": icc, "design_effect": deff, "mean_trials": mean_trials,
         "effective_trials": total / deff}
    )
    out.attrs["method"] = "one-way ANOVA (method of moments), tasks as groups"
    return out

