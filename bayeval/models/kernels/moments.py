"""Conditional moments of the per-task metrics, and population expectations over a grid."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.estimators import success_threshold
from bayeval.models.kernels.numerics import _sigmoid, _softplus
from bayeval.models.kernels.quadrature import Rules, _buffers, _evaluate, _grid_for


@numba.njit(cache=True, parallel=True)
def grid_expectations(location, scale, z, weight, ks, of_p, out):
    """``out[i, q] = sum_m weight[m] f(y)^ks[q]`` at ``y = location[i] + scale[i] z[m]``.

    With ``f = p`` (``of_p``) or ``1 - p``, ``p = expit(y)``: the trapezoid sums of the paired
    model's population expectations (pass^k, and pass@k through ``1 - p``), a location per thread,
    without the ``(locations, nodes)`` arrays NumPy would hold. ``f^k`` is
    ``exp(-k softplus(-+y))``; at k = 1 one exponential.
    """
    sign = 1.0 if of_p else -1.0
    for i in numba.prange(location.shape[0]):
        for q in range(ks.shape[0]):
            out[i, q] = 0.0
        for m in range(z.shape[0]):
            y = sign * (location[i] + scale[i] * z[m])
            if ks.shape[0] == 1 and ks[0] == 1.0:
                out[i, 0] += weight[m] * _sigmoid(y)
                continue
            log_f = -_softplus(-y)
            for q in range(ks.shape[0]):
                out[i, q] += weight[m] * math.exp(ks[q] * log_f)


#: Kernel codes of the metrics f whose conditional moments the kernels compute.
METRIC_CODES = {"pass@k": 0, "pass^k": 1, "g-pass@k": 2, "consistency": 3}


def metric_arguments(metric: str, ks, tau=None) -> tuple[int, np.ndarray]:
    """The kernels' metric arguments: its code and, per k, the successes it needs.

    The successes are G-pass@k's ``ceil(tau k)``; unused by the other metrics.
    """
    ks = np.asarray(ks, dtype=float)
    needed = (
        success_threshold(ks.astype(np.int64), tau).astype(float)
        if metric == "g-pass@k"
        else np.ones(len(ks))
    )
    return METRIC_CODES[metric], needed


@numba.njit(cache=True)
def _binomial_tail(p, k, m):
    """``P(Bin(k, p) >= m)`` for whole ``1 <= m <= k``: the shorter side's terms, in logs."""
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    K, M = int(k), int(m)
    lp, lq = math.log(p), math.log1p(-p)
    lk = math.lgamma(K + 1.0)
    upper = K - M + 1 <= M
    lo, hi = (M, K + 1) if upper else (0, M)
    total = 0.0
    for j in range(lo, hi):
        total += math.exp(
            lk - math.lgamma(j + 1.0) - math.lgamma(K - j + 1.0) + j * lp + (K - j) * lq
        )
    value = total if upper else 1.0 - total
    return min(max(value, 0.0), 1.0)


@numba.njit(cache=True)
def _f(p, k, code, m):
    """The metric of rate p (codes of :data:`METRIC_CODES`).

    pass@k, pass^k, G-pass@k with m successes needed, consistency ``(2p - 1)^2``.
    """
    if k == 1.0 and code < 2:  # pass@1 and pass^1: no power
        return p
    if code == 0:
        return 1.0 - (1.0 - p) ** k
    if code == 1:
        return p**k
    if code == 3:
        d = 2.0 * p - 1.0
        return d * d
    return _binomial_tail(p, k, m)


@numba.njit(cache=True)
def _pattern_moments(
    p,
    eta,
    c,
    n,
    sigma_e,
    sigma_v,
    paired,
    x,
    logw,
    z,
    log_omega,
    u,
    lam,
    ks,
    code,
    needed,
    buf,
    h1,
    h2,
    mean_p,
    cross_p,
    full,
):
    """Conditional moments of f(p_s) of pattern ``p`` into ``mean_p`` and ``cross_p``.

    ``mean_p (S, Q)`` and ``cross_p (S, S, Q)`` (only its diagonal unless ``full``).
    """
    S = eta.shape[1]
    Q = ks.shape[0]
    _, log_f, _, _, r, _, prob, _, _, _, _ = buf
    log_l, K, L = _evaluate(
        p, eta, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam, buf
    )
    h1[:] = 0.0
    h2[:] = 0.0
    mean_p[:] = 0.0
    cross_p[:] = 0.0
    for k in range(K):
        for s in range(S):
            for q in range(L):
                for j in range(Q):
                    f = _f(prob[k, s, q], ks[j], code, needed[j])
                    h1[k, s, j] += r[k, s, q] * f
                    h2[k, s, j] += r[k, s, q] * f * f
    for k in range(K):
        pi = math.exp(log_f[k] - log_l)
        for s in range(S):
            for j in range(Q):
                mean_p[s, j] += pi * h1[k, s, j]
                cross_p[s, s, j] += pi * h2[k, s, j]
                if full:
                    for t in range(S):
                        if t != s:
                            cross_p[s, t, j] += pi * h1[k, s, j] * h1[k, t, j]


@numba.njit(cache=True)
def _moment_work(S, Q, x, z, u):
    """Work arrays of :func:`_pattern_moments`.

    The rule buffers, per-node moments, and one pattern's cross moments.
    """
    buf = _buffers(S, x.shape[0], z.shape[0], u.shape[0])
    size = buf[1].shape[0]
    return buf, np.empty((size, S, Q)), np.empty((size, S, Q)), np.empty((S, S, Q))


@numba.njit(cache=True)
def _task_sums(
    eta,
    c,
    n,
    sigma_e,
    sigma_v,
    paired,
    x,
    logw,
    z,
    log_omega,
    u,
    lam,
    ks,
    code,
    needed,
    weight,
    mult,
    centre,
    cov,
):
    """Weighted sums over the patterns of one draw: the mean over tasks' centre and covariance.

    ``centre (S, Q)`` of the conditional means and ``cov (Q, S, S)`` of the conditional covariances
    of the mean over tasks (tasks are independent given the draw), without a per-pattern system x
    system array.
    """
    z, log_omega = _grid_for(sigma_e, z, log_omega, n)
    P, S = eta.shape
    Q = ks.shape[0]
    buf, h1, h2, cross_p = _moment_work(S, Q, x, z, u)
    mean_p = np.empty((S, Q))
    for p in range(P):
        _pattern_moments(
            p,
            eta,
            c,
            n,
            sigma_e,
            sigma_v,
            paired,
            x,
            logw,
            z,
            log_omega,
            u,
            lam,
            ks,
            code,
            needed,
            buf,
            h1,
            h2,
            mean_p,
            cross_p,
            True,
        )
        m = mult[p]
        for s in range(S):
            ws = weight[p, s]
            if ws == 0.0:
                continue
            for j in range(Q):
                centre[s, j] += m * ws * mean_p[s, j]
                for t in range(S):
                    wt = weight[p, t]
                    if wt != 0.0:
                        cov[j, s, t] += (
                            m * ws * wt * (cross_p[s, t, j] - mean_p[s, j] * mean_p[t, j])
                        )


def task_sums(eta, c, n, sigma_e, sigma_v, paired, ks, metric, weight, mult, rules=None, tau=None):
    """Per draw, the mean over tasks' conditional centre ``(D, S, k)`` and covariance.

    The covariance is ``(D, k, S, S)``: ``sum_p mult_p w_ps E[f_s]`` and
    ``sum_p mult_p w_ps w_pt Cov(f_s, f_t)`` (memory O(D S^2 k), not O(D P S^2 k)); f is ``metric``
    (one of :data:`METRIC_CODES`, with ``tau`` for G-pass@k).
    """
    rules = rules or Rules()
    code, needed = metric_arguments(metric, ks, tau)
    D, P, S = eta.shape
    Q = len(ks)
    centre = np.zeros((D, S, Q))
    cov = np.zeros((D, Q, S, S))
    c, n = np.ascontiguousarray(c, dtype=float), np.ascontiguousarray(n, dtype=float)
    weight = np.ascontiguousarray(weight, dtype=float)
    mult = np.ascontiguousarray(mult, dtype=float)
    for d in range(D):
        _task_sums(
            np.ascontiguousarray(eta[d]),
            c,
            n,
            float(sigma_e[d]),
            float(sigma_v[d]),
            paired,
            *rules.arrays(),
            np.asarray(ks, float),
            code,
            needed,
            weight,
            mult,
            centre[d],
            cov[d],
        )
    return centre, cov
