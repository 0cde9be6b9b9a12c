"""Frequentist estimators on count arrays.

Unbiased per-task estimators (Chen et al., 2021, for pass@k; Yao et al., 2024, for pass^k):

* pass@k: ``1 - C(n - c, k) / C(n, k)``, the chance that at least one of k trials drawn without
  replacement from the n observed ones succeeds;
* pass^k: ``C(c, k) / C(n, k)``, the chance that all k succeed.

Both ratios of binomial coefficients are computed as products of at most ``min(k, ...)``
factors in ``(0, 1]``, so they stay finite and accurate for n in the thousands. They are NaN
where ``n < k`` (HumanEval reports a k only when every task has ``n >= k``).

Reliability metrics (Liu et al., 2024, "Are Your LLMs Capable of Stable Reasoning?", for
G-pass@k):

* G-pass@k at threshold tau: the chance that at least ``ceil(tau * k)`` of k trials succeed,
  estimated by the hypergeometric tail ``sum_{j >= ceil(tau k)} C(c, j) C(n - c, k - j) /
  C(n, k)``. tau lies in (0, 1]: tau = 1 is pass^k and any tau <= 1/k is pass@k;
* consistency ``(2p - 1)^2 = 1 - 4 p (1 - p)``: 1 for a task that always or never succeeds, 0
  at p = 1/2, estimated without bias by ``1 - 4 c (n - c) / (n (n - 1))`` from n >= 2 trials.

Every metric here is a polynomial in the rate p, written in the Bernstein basis as ``f(p) =
sum_j b_j C(d, j) p^j (1 - p)^(d - j)``: pass@k has degree k with ``b_0 = 0`` and ``b_j = 1``
else, pass^k ``b_k = 1`` only, G-pass@k ``b_j = 1[j >= ceil(tau k)]``, consistency degree 2 with
``b = (1, -1, 1)``. Its unbiased estimator from ``(n, c)`` is ``sum_j b_j Hypergeom(j; n, c,
d)`` (:func:`bernstein_coefficients`; the bootstrap uses the same view for the variance of an
estimator, an unbiased estimate of ``f(p)^2``).

Score intervals for one binomial proportion (Wilson, Clopper-Pearson, Jeffreys, Wald), the
intra-task correlation / design effect and the measured order of systems complete the module.
Functions here take arrays and broadcast; :func:`task_metric` is the xarray wrapper that appends
a ``k`` dim.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import xarray as xr
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from bayeval._validate import validate_choice, validate_k, validate_prob

__all__ = [
    "pass_at_k",
    "pass_hat_k",
    "g_pass_at_k",
    "consistency",
    "wilson_interval",
    "clopper_pearson_interval",
    "jeffreys_interval",
    "wald_interval",
    "design_effect",
    "trial_counts",
    "measured_order",
    "task_metric",
]

#: The metrics of k attempts every reader of a fit supports (reports, plots, crosschecks).
METRICS = ("pass@k", "pass^k")
#: The reliability metrics, read through ``Results`` and :mod:`bayeval.bootstrap`.
RELIABILITY_METRICS = ("g-pass@k", "consistency")
ALL_METRICS = METRICS + RELIABILITY_METRICS
#: ``tau * k`` within this of a whole number counts as that number (0.3 * 10 is 3, not 4).
TAU_TOLERANCE = 1e-9
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


def _unbiased(n, c, k, metric: str, tau=None) -> np.ndarray | float:
    if metric == "consistency":
        return _consistency(n, c)
    if metric == "g-pass@k":
        return _g_pass(n, c, k, tau)
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


def validate_tau(tau) -> float:
    """Tau as a float in (0, 1]: the share of the k attempts that must succeed."""
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real):
        raise TypeError(
            "tau must be a number in (0, 1] (the share of the k attempts that must "
            f"succeed); got {tau!r}"
        )
    tau = float(tau)
    if not 0.0 < tau <= 1.0:
        raise ValueError(
            "tau must lie in (0, 1] (the share of the k attempts that must "
            f"succeed; tau = 1 is pass^k); got {tau}"
        )
    return tau


def _taus(tau) -> np.ndarray:
    """An array of tau values, each in (0, 1]."""
    values = np.asarray(tau)
    if values.dtype == bool or not np.issubdtype(values.dtype, np.number):
        raise TypeError(
            "tau must be a number in (0, 1] (the share of the k attempts that must "
            f"succeed) or an array of them; got {tau!r}"
        )
    values = values.astype(float)
    bad = ~((values > 0.0) & (values <= 1.0))
    if bad.any():
        raise ValueError(
            "tau must lie in (0, 1] (the share of the k attempts that must "
            f"succeed; tau = 1 is pass^k); got {values[bad].ravel()[0]}"
        )
    return values


def validate_metric(metric, tau=None, allowed=ALL_METRICS) -> tuple[str, float | None]:
    """``(metric, tau)`` checked together: tau is needed by G-pass@k and refused elsewhere.

    Examples
    --------
    >>> from bayeval.estimators import validate_metric
    >>> validate_metric("g-pass@k", 0.5)
    ('g-pass@k', 0.5)
    """
    validate_choice("metric", metric, allowed)
    if metric == "g-pass@k":
        if tau is None:
            raise ValueError(
                "metric='g-pass@k' needs tau, the share of the k attempts that "
                "must succeed, in (0, 1]; got none"
            )
        return metric, validate_tau(tau)
    if tau is not None:
        raise ValueError(
            f"tau applies to metric='g-pass@k' only; got tau={tau!r} with metric={metric!r}"
        )
    return metric, None


def metric_ks(metric: str, k) -> tuple[np.ndarray, bool]:
    """``validate_k`` for a metric.

    Consistency compares two attempts and has no k of its own: it takes k = 2 (or the callers'
    default k = 1) and is read at k = 2; ``[2]`` keeps a ``k`` dim.

    Examples
    --------
    >>> from bayeval.estimators import metric_ks
    >>> metric_ks("consistency", 1)
    (array([2]), True)
    """
    if metric != "consistency":
        return validate_k(k)
    if isinstance(k, numbers.Integral) and not isinstance(k, bool) and k in (1, 2):
        return np.array([2], dtype=np.int64), True
    if isinstance(k, (list, tuple, np.ndarray)) and np.array_equal(np.asarray(k), [2]):
        return np.array([2], dtype=np.int64), False
    raise ValueError(
        "metric='consistency' has no k of its own (it compares two attempts: "
        f"E[(2p - 1)^2]); leave k at its default; got k={k!r}"
    )


def success_threshold(k, tau) -> np.ndarray:
    """Successes G-pass@k needs among k attempts: ``ceil(tau * k)``, at least one.

    ``tau * k`` within :data:`TAU_TOLERANCE` of a whole number counts as that number, so
    floating-point products such as ``0.3 * 10 = 3.0000000000000004`` need 3 successes, not 4.

    Examples
    --------
    >>> from bayeval.estimators import success_threshold
    >>> success_threshold([1, 4, 10], 0.3).tolist()
    [1, 2, 3]
    """
    k = np.asarray(k)
    return np.clip(np.ceil(k * np.asarray(tau, float) - TAU_TOLERANCE), 1, k).astype(np.int64)


def bernstein_coefficients(metric: str, k: int, tau=None) -> np.ndarray:
    """Coefficients ``b_j`` of a metric in the Bernstein basis of degree k (``(k + 1,)``).

    ``f(p) = sum_j b_j C(k, j) p^j (1 - p)^(k - j)``; the unbiased estimator from ``(n, c)`` is
    ``sum_j b_j Hypergeom(j; n, c, k)`` and the expectation under ``Beta(a, b)`` is ``sum_j
    b_j BetaBinomial(j; k, a, b)``. Consistency has degree 2.

    Examples
    --------
    >>> from bayeval.estimators import bernstein_coefficients
    >>> bernstein_coefficients("g-pass@k", 4, 0.5).tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0]
    >>> bernstein_coefficients("consistency", 2).tolist()
    [1.0, -1.0, 1.0]
    """
    j = np.arange(k + 1)
    if metric == "consistency":
        if k != 2:
            raise ValueError(f"consistency has degree 2; got k={k}")
        return np.array([1.0, -1.0, 1.0])
    if metric == "pass@k":
        return (j >= 1).astype(float)
    if metric == "pass^k":
        return (j == k).astype(float)
    return (j >= success_threshold(k, tau)).astype(float)


def square_coefficients(b: np.ndarray) -> np.ndarray:
    """Bernstein coefficients of ``f(p)^2`` (degree 2d) from those of f (degree d).

    ``C(d, i) C(d, m - i) / C(2d, m)`` is the hypergeometric pmf at i of m draws from 2d items
    with d marked, so ``f^2`` has ``c_m = sum_i b_i b_(m - i) Hypergeom(i; 2d, d, m)``.

    Examples
    --------
    >>> from bayeval.estimators import square_coefficients
    >>> square_coefficients([0.0, 1.0]).tolist()  # p^2 from p
    [0.0, 0.0, 1.0]
    """
    b = np.asarray(b, dtype=float)
    d = len(b) - 1
    i = np.arange(d + 1)[:, None]
    m = np.arange(2 * d + 1)[None, :]
    j = m - i
    inside = (j >= 0) & (j <= d)
    weight = stats.hypergeom.pmf(i, 2 * d, d, m)
    return np.where(inside, b[:, None] * b[np.clip(j, 0, d)] * weight, 0.0).sum(axis=0)


def _g_pass(n, c, k, tau) -> np.ndarray | float:
    """Unbiased G-pass@k: the hypergeometric tail at ``ceil(tau k)`` successes.

    A threshold of k is pass^k and one of 1 is pass@k: those rows use their products (so tau
    = 1 gives pass^k exactly); the others SciPy's hypergeometric survival function (Boost).
    """
    n, c, k = _counts(n, c, k)
    n, c, k, tau = np.broadcast_arrays(n, c, k, np.asarray(tau, dtype=float))
    m = success_threshold(k, tau)
    shape = n.shape
    keys, inverse = np.unique(
        np.stack([n.ravel(), c.ravel(), k.ravel(), m.ravel()], axis=1), axis=0, return_inverse=True
    )
    un, uc, uk, um = keys.T
    values = np.full(len(keys), np.nan)
    every = um == uk
    one = (um == 1) & ~every
    middle = ~every & ~one & (uk <= un)
    for rows, metric in ((every, "pass^k"), (one, "pass@k")):
        if rows.any():
            values[rows] = _unbiased(un[rows], uc[rows], uk[rows], metric)
    if middle.any():
        values[middle] = stats.hypergeom.sf(um[middle] - 1, un[middle], uc[middle], uk[middle])
    out = clip_probability(values[inverse.ravel()].reshape(shape))
    return out if out.ndim else float(out)


def _consistency(n, c) -> np.ndarray | float:
    """``1 - 4 c (n - c) / (n (n - 1))``; NaN where ``n < 2``."""
    n, c, _ = _counts(n, c, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = 1.0 - 4.0 * (c * (n - c)) / (n * (n - 1.0))
    out = np.where(n >= 2, values, np.nan)
    return out if out.ndim else float(out)


def metric_range(metric: str) -> tuple[float, float]:
    """Where a metric's unbiased estimates lie: [0, 1], and [-1, 1] for consistency.

    For consistency, one task with two trials and one success has estimate -1.
    """
    return (-1.0, 1.0) if metric == "consistency" else (0.0, 1.0)


def clip_metric(values, metric: str):
    """Clip sums of unbiased estimates to the range of the metric's estimator."""
    return np.clip(values, *metric_range(metric))


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


def unbiased_table(n: int, ks, metric: str, tau=None) -> np.ndarray:
    """The unbiased estimator at every success count: shape ``(n + 1, len(ks))``.

    Row ``c`` holds the metric of a task with ``c`` successes in ``n`` trials, for each k; NaN
    where ``k > n`` (consistency: ``ks`` is ``[2]``). For pass@k and pass^k one cumulative
    product per k, ``prod_{i<m} (n - k - i) / (n - i)`` over m = 0..n, gives ``C(n - c, k) /
    C(n, k)`` at ``m = c`` and ``C(c, k) / C(n, k)`` at ``m = n - c``: the cost is O(n) per k,
    however large k is.

    Examples
    --------
    >>> from bayeval.estimators import unbiased_table
    >>> unbiased_table(4, [1, 2], "pass@k").round(4).tolist()
    [[0.0, 0.0], [0.25, 0.5], [0.5, 0.8333], [0.75, 1.0], [1.0, 1.0]]
    """
    ks = np.asarray(ks, dtype=np.int64)
    if metric in RELIABILITY_METRICS:
        c = np.arange(n + 1)[:, None]
        return np.asarray(
            _unbiased(np.full_like(c, n), c, ks[None, :], metric, tau), dtype=float
        ).reshape(n + 1, -1) * np.ones((1, len(ks)))
    i = np.arange(n, dtype=float)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        factors = np.clip((n - ks[None, :] - i) / (n - i), 0.0, 1.0)
    ratio = np.vstack([np.ones((1, len(ks))), np.cumprod(factors, axis=0)])  # m = 0..n
    table = 1.0 - ratio if metric == "pass@k" else ratio[::-1]
    table = np.clip(table, 0.0, 1.0)
    table[:, ks > n] = np.nan
    return table


def unbiased_square_table(n: int, ks, metric: str, tau=None) -> np.ndarray:
    """The unbiased estimator of ``h(p)^2`` at every success count, ``(n + 1, len(ks))``.

    ``h`` is the metric f, or ``1 - f`` for pass@k (its complement keeps the digits of values
    near 1); ``h(c)^2`` minus this table is the unbiased estimate of the variance of the
    metric's estimator from one task. It needs twice the metric's degree in trials: NaN where
    ``2 k > n``.

    Examples
    --------
    >>> from bayeval.estimators import unbiased_square_table
    >>> unbiased_square_table(4, [1], "pass^k")[:, 0].round(4).tolist()  # p^2
    [0.0, 0.0, 0.1667, 0.5, 1.0]
    """
    ks = np.asarray(ks, dtype=np.int64)
    if metric == "pass@k":
        return 1.0 - unbiased_table(n, 2 * ks, metric)
    if metric == "pass^k":
        return unbiased_table(n, 2 * ks, metric)
    c = np.arange(n + 1)[:, None]
    table = np.full((n + 1, len(ks)), np.nan)
    for i, k in enumerate(ks.tolist()):
        if 2 * k > n:
            continue
        square = square_coefficients(bernstein_coefficients(metric, k, tau))
        table[:, i] = stats.hypergeom.pmf(np.arange(2 * k + 1)[None, :], n, c, 2 * k) @ square
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


def g_pass_at_k(n, c, k, tau):
    """Unbiased G-pass@k: the chance that at least ``ceil(tau * k)`` of k sampled trials succeed.

    G-pass@k at threshold tau (Liu et al., 2024, "Are Your LLMs Capable of Stable
    Reasoning?") asks for at least a share tau of the k attempts, rounded up as in the paper:
    ``ceil(tau * k)`` successes, so tau = 1 is pass^k and any tau <= 1/k is pass@k. A product
    ``tau * k`` within 1e-9 of a whole number counts as that number (``0.3 * 10`` needs 3).

    Parameters
    ----------
    n, c, k : int or array_like of int
        Trials, successes and k, as in :func:`pass_at_k`.
    tau : float or array_like of float
        The share of the k attempts that must succeed, in (0, 1]; broadcast against the others.

    Returns
    -------
    float or numpy.ndarray
        ``sum_{j >= ceil(tau k)} C(c, j) C(n - c, k - j) / C(n, k)``; NaN where ``n < k``.

    Examples
    --------
    >>> import bayeval as be
    >>> round(be.estimators.g_pass_at_k(10, 6, 4, 0.5), 6)  # at least 2 of 4
    0.880952
    >>> be.estimators.g_pass_at_k(10, 6, 4, 1.0) == be.pass_hat_k(10, 6, 4)
    True
    """
    return _unbiased(n, c, k, "g-pass@k", _taus(tau))


def consistency(n, c):
    """Unbiased outcome consistency ``(2p - 1)^2`` of a task from n >= 2 trials.

    ``(2p - 1)^2 = 1 - 4 p (1 - p)`` is 1 for a task that always or never succeeds and 0 at
    p = 1/2 (the chance that two attempts agree minus the chance that they differ). With
    ``c(n - c) / (n (n - 1))`` unbiased for ``p (1 - p)`` the estimator is ``1 - 4 c (n - c) /
    (n (n - 1))``. Being unbiased it can fall below 0 for one task (two trials, one success:
    -1); means over tasks are what to read.

    Parameters
    ----------
    n, c : int or array_like of int
        Trials and successes per task.

    Returns
    -------
    float or numpy.ndarray
        NaN where ``n < 2``.

    Examples
    --------
    >>> import bayeval as be
    >>> be.estimators.consistency([10, 10, 4, 1], [10, 5, 1, 1]).round(4).tolist()
    [1.0, -0.1111, 0.0, nan]
    """
    return _unbiased(n, c, 2, "consistency")


def task_metric(successes: xr.DataArray, trials: xr.DataArray, k, metric: str = "pass@k", tau=None):
    """Per-task unbiased estimates with a ``k`` dim appended at the end.

    ``metric`` is one of :data:`ALL_METRICS`; ``tau`` goes with ``"g-pass@k"``, and
    ``"consistency"`` is read at ``k = 2``.

    Examples
    --------
    >>> import xarray as xr, bayeval.estimators as est
    >>> c = xr.DataArray([[3, 10]], dims=("system", "task"))
    >>> est.task_metric(c, c * 0 + 10, [1, 2]).dims
    ('system', 'task', 'k')
    >>> est.task_metric(c, c * 0 + 10, [2, 4], "g-pass@k", tau=0.5).values.round(3).tolist()
    [[[0.533, 0.333], [1.0, 1.0]]]
    """
    metric, tau = validate_metric(metric, tau)
    ks = metric_ks(metric, k)[0] if metric == "consistency" else validate_k(k)[0]
    return xr.apply_ufunc(
        lambda n, c: _unbiased(n[..., None], c[..., None], ks, metric, tau),
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
        icc_anova,
        ds["successes"],
        ds["trials"],
        input_core_dims=[["task"], ["task"]],
        output_core_dims=[[], []],
        vectorize=True,
    )
    deff = 1 + (mean_trials - 1) * icc
    total = ds["trials"].sum("task")
    out = xr.Dataset(
        {
            "icc": icc,
            "design_effect": deff,
            "mean_trials": mean_trials,
            "effective_trials": total / deff,
        }
    )
    out.attrs["method"] = "one-way ANOVA (method of moments), tasks as groups"
    return out


def trial_counts(data) -> xr.Dataset:
    """The fewest, median and most trials of a ``(system, task)`` cell, over cells with any.

    The trials are the data's ``trials``: the valid ones, or under ``missing="fail"`` and
    ``"bounds"`` the planned ones. A cell without trials (a task a system never ran) is left
    out.

    Parameters
    ----------
    data : EvalData

    Returns
    -------
    xarray.Dataset
        Scalars ``min_trials``, ``median_trials`` and ``max_trials`` (integers but the
        median; NaN where no cell has a trial).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[1, 2, 0], [3, 1, 4]], trials=[[2, 4, 6], [4, 4, 8]])
    >>> out = trial_counts(data)
    >>> out["min_trials"].item(), out["median_trials"].item(), out["max_trials"].item()
    (2, 4.0, 8)
    """
    trials = data.dataset["trials"].values
    used = trials[trials > 0]
    if not used.size:
        return xr.Dataset(
            {name: math.nan for name in ("min_trials", "median_trials", "max_trials")}
        )
    return xr.Dataset(
        {
            "min_trials": used.min(),
            "median_trials": np.median(used),
            "max_trials": used.max(),
        }
    )


def measured_order(data) -> xr.Dataset:
    """Each system's measured pass@1 and its position among the systems, best first.

    Measured pass@1 is the mean over the system's valid tasks of each task's observed rate
    ``c / n``; the mean score for partial-credit scores (each task's score sum over its
    trials); under ``missing="bounds"``, the lower bound's. Ties keep the data's order, and a
    system without a valid task comes last: the order a table shows is the data's own, not
    the one the input happened to be sorted in.

    Parameters
    ----------
    data : EvalData

    Returns
    -------
    xarray.Dataset
        ``score`` (NaN without a valid task) and ``position`` (0 for the best) over
        ``system``.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.estimators import measured_order
    >>> data = be.from_counts([[2, 3], [9, 8], [5, 6]], trials=10, systems=["lo", "hi", "mid"])
    >>> measured_order(data)["position"].values.tolist()
    [2, 0, 1]
    """
    ds = data.dataset
    c = ds["successes"]
    if data.has_scores:  # partial credit: the task's score sum over its attempts
        c = data.score_statistics()["sum"]
    if "missing_bound" in c.dims:
        c = c.sel(missing_bound="lower")
    c = c.transpose("system", "task")
    n = ds["trials"].transpose(*c.dims).values
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, c.values / np.where(n > 0, n, 1), 0.0)
        score = rate.sum(-1) / (n > 0).sum(-1)  # (system,); NaN without a valid task
    order = sorted(range(len(score)), key=lambda i: (-np.nan_to_num(score[i], nan=-1.0), i))
    position = np.empty(len(score), dtype=np.int64)
    position[order] = np.arange(len(score))
    return xr.Dataset(
        {"score": ("system", score), "position": ("system", position)},
        coords={"system": ds["system"].values},
        attrs={"metric": "mean score" if data.has_scores else "pass@1"},
    )
