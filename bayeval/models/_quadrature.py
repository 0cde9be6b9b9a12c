"""Nested adaptive Gauss-Hermite quadrature of a task's logit-normal random effects.

For one task, systems s = 1..S with ``c_s`` successes of ``n_s`` trials and linear predictors
``eta_s`` (everything but the task-level effects), the marginal likelihood is::

    L = int N(e; 0, sigma_e)
          prod_s [ int N(v; 0, sigma_v) Bin(c_s | n_s, expit(eta_s + e + v)) dv ] de

with ``e`` the task effect shared by the systems (what makes comparisons paired) and ``v_s`` the
task-by-system effect (absent with one system). Gauss-Hermite nodes placed on the prior miss
the likelihood's peak when a task has many trials and tasks spread widely, and bias the result.
Here every pattern's integral is centred and scaled at its own mode, as mixed-model software
does:

1. Newton's method finds the joint mode ``(e*, v*)``. The negative Hessian is an arrowhead
   matrix (``A_s = 1/sigma_v^2 + w_s`` on the v-diagonal, ``w_s = n_s p_s (1 - p_s)`` coupling e
   and v_s), so a step costs O(S). The outer nodes are ``e* + sqrt(2) s_e x_k`` with ``s_e`` the
   Laplace standard deviation of e (one over the root of the Schur complement).
2. At each outer node, the inner integral over v_s is centred at its conditional mode (Newton
   steps from the Laplace prediction ``v*_s - (w_s / A_s)(e_k - e*)``) and scaled by the
   curvature there.

The gradient uses Fisher's identity: the derivative of ``log L`` is the conditional expectation
of the derivative of the complete-data log density, taken with the same nodes and weights
(``c_s - n_s p`` for ``eta_s``; ``(e^2 / sigma_e^2 - 1) / sigma_e`` for ``sigma_e``; likewise for
``sigma_v``). The kernels are compiled with numba (cached on disk);
:mod:`bayeval.models._collapsed` wraps them into the log density that PyMC and nutpie sample.
Binomial coefficients are left out (constant in the parameters).

In the likelihood kernel (:func:`loglik_and_grad`) the inner integral, which depends on a
system and an outer node only through ``y = eta_s + e`` and the counts, is tabulated once per
counts on a grid in ``y`` and interpolated, and the outer rule is centred at the mode of the
task effect's marginal (see :func:`_loglik`); the exact task draws read the same tables, the
conditional moments keep the nested rule above. The two agree to about 1e-5 per pattern.
"""

from __future__ import annotations

import hashlib
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numba
import numpy as np
from numba.extending import intrinsic

from bayeval.estimators import success_threshold

NEWTON_STEPS = 8
INNER_STEPS = 3
MAX_STEP = 4.0
N_NODES = 9
LOW_TRIALS = 2  # patterns whose systems have at most this many trials use the fixed grid
GRID_NODES = 61
GRID_HALF_WIDTH = 6.5
# the trapezoid's error on a logistic factor is ~exp(-2 pi^2 / (sigma_e h)) for a node spacing of
# h in z: the grid is refined so that sigma_e h stays below this many logits (error < 1e-8)
GRID_MAX_LOGIT_STEP = 1.0
# ... and below GRID_INFO_STEP / sqrt(N) logits for N trials in a pattern: the task effect's
# conditional has an sd of at least 2 / sqrt(N) logits (each trial's information is at most
# 1/4), and a trapezoid's error on a normal of sd s with step h is ~2 exp(-2 pi^2 s^2 / h^2),
# 7e-6 at h = 1.25 s and far less for the usual, wider conditionals (with 50 systems' single
# trials and sigma_task = 3 the fixed 61 nodes erred by 1e-2 per task, now by under 1e-6)
GRID_INFO_STEP = 2.5
GRID_MAX_NODES = 2001  # the refinement stops here (sigma_task ~ 150 logits, far past any prior)
_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def hermite(n_nodes: int):
    """Gauss-Hermite nodes and log weights, with the ``exp(x^2)`` factor folded in."""
    x, w = np.polynomial.hermite.hermgauss(n_nodes)
    return x, np.log(w) + x**2


@numba.njit(cache=True)
def _sigmoid(y):
    if y >= 0.0:
        return 1.0 / (1.0 + math.exp(-y))
    z = math.exp(y)
    return z / (1.0 + z)


@numba.njit(cache=True)
def _sigmoid_of(y, small):
    """:func:`_sigmoid` from ``small = exp(-|y|)``, when a caller has it already."""
    return 1.0 / (1.0 + small) if y >= 0.0 else small / (1.0 + small)


@numba.njit(cache=True)
def _softplus(y):
    return max(y, 0.0) + math.log1p(math.exp(-abs(y)))


@numba.njit(cache=True, parallel=True)
def grid_expectations(location, scale, z, weight, ks, of_p, out):
    """``out[i, q] = sum_m weight[m] f(y)^ks[q]`` at ``y = location[i] + scale[i] z[m]``, with
    ``f = p`` (``of_p``) or ``1 - p``, ``p = expit(y)``: the trapezoid sums of the paired
    model's population expectations (pass^k, and pass@k through ``1 - p``), a location per
    thread, without the ``(locations, nodes)`` arrays NumPy would hold. ``f^k`` is ``exp(-k
    softplus(-+y))``; at k = 1 one exponential."""
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


@numba.njit(cache=True)
def _clip(step):
    return min(max(step, -MAX_STEP), MAX_STEP)


@numba.njit(cache=True)
def _logsumexp(values):
    top = -np.inf
    for value in values:
        top = max(top, value)
    if not np.isfinite(top):
        return top
    total = 0.0
    for value in values:
        total += math.exp(value - top)
    return top + math.log(total)


@numba.njit(cache=True)
def _joint_log_density(eta, c, n, e, v, prec_e, prec_v):
    total = -0.5 * prec_e * e * e
    for s in range(eta.shape[0]):
        y = eta[s] + e + v[s]
        total += c[s] * y - n[s] * _softplus(y) - 0.5 * prec_v * v[s] * v[s]
    return total


@numba.njit(cache=True)
def _conditional_log_density(eta_e, c, n, v, prec_v):
    y = eta_e + v
    return c * y - n * _softplus(y) - 0.5 * prec_v * v * v


@numba.njit(cache=True)
def _inner_mode(eta_e, c, n, v, prec_v):
    """Mode of v given the outer node (damped Newton on a concave function)."""
    current = _conditional_log_density(eta_e, c, n, v, prec_v)
    for _ in range(INNER_STEPS):
        p = _sigmoid(eta_e + v)
        step = _clip((c - n * p - v * prec_v) / (prec_v + n * p * (1.0 - p)))
        for _ in range(30):
            candidate = _conditional_log_density(eta_e, c, n, v + step, prec_v)
            if candidate >= current:
                v += step
                current = candidate
                break
            step *= 0.5
    return v


@numba.njit(cache=True)
def _joint_mode(eta, c, n, prec_e, prec_v, paired, v, weight):
    """Joint mode of one pattern's task effects by damped Newton steps: returns the task
    effect's mode and its Laplace standard deviation, and fills ``v (S,)`` with the
    task-by-system modes and ``weight (S,)`` with ``n p (1 - p)`` there."""
    S = eta.shape[0]
    e = 0.0
    v[:] = 0.0
    step_v = np.zeros(S)
    grad = np.zeros(S)
    current = _joint_log_density(eta, c, n, e, v, prec_e, prec_v)
    for _ in range(NEWTON_STEPS):
        for s in range(S):
            p = _sigmoid(eta[s] + e + v[s])
            grad[s] = c[s] - n[s] * p
            weight[s] = n[s] * p * (1.0 - p)
        if paired:
            schur, numer = prec_e, -e * prec_e
            for s in range(S):
                a = prec_v + weight[s]
                schur += weight[s] - weight[s] ** 2 / a
                numer += grad[s] - weight[s] / a * (grad[s] - v[s] * prec_v)
            step_e = numer / schur
            for s in range(S):
                step_v[s] = (grad[s] - v[s] * prec_v - weight[s] * step_e) / (prec_v + weight[s])
        else:
            numer, curv = -e * prec_e, prec_e
            for s in range(S):
                numer += grad[s]
                curv += weight[s]
            step_e = numer / curv
        # damped Newton: the log density is concave, halve the step until it improves
        scale = 1.0
        largest = abs(step_e)
        for s in range(S):
            largest = max(largest, abs(step_v[s]))
        if largest > MAX_STEP:
            scale = MAX_STEP / largest
        for _ in range(30):
            candidate = _joint_log_density(
                eta, c, n, e + scale * step_e, v + scale * step_v, prec_e, prec_v
            )
            if candidate >= current:
                e += scale * step_e
                for s in range(S):
                    v[s] += scale * step_v[s]
                current = candidate
                break
            scale *= 0.5
    schur = prec_e
    for s in range(S):
        p = _sigmoid(eta[s] + e + v[s])
        weight[s] = n[s] * p * (1.0 - p)
        schur += weight[s] - (weight[s] ** 2 / (prec_v + weight[s]) if paired else 0.0)
    s_e = 1.0 / math.sqrt(schur)
    return e, s_e


@numba.njit(cache=True)
def _pattern(eta, c, n, sigma_e, sigma_v, paired, x, logw, e_k, v_kl, log_t, log_g, log_f):
    """Nodes and log integrand terms of one pattern; returns its log marginal likelihood.

    Fills ``e_k (K,)``, ``v_kl (K, S, L)``, ``log_t (K, S, L)`` (inner terms), ``log_g (K, S)``
    (inner integrals) and ``log_f (K,)`` (outer terms). Without ``paired`` the inner axis is
    unused and ``log_g`` holds the likelihood at the outer node.
    """
    S = eta.shape[0]
    K = x.shape[0]
    prec_e = 1.0 / sigma_e**2
    prec_v = 1.0 / sigma_v**2 if paired else 0.0
    v = np.zeros(S)
    weight = np.zeros(S)
    e, s_e = _joint_mode(eta, c, n, prec_e, prec_v, paired, v, weight)
    outer_offset = math.log(_SQRT2 * s_e) - math.log(sigma_e) - _LOG_SQRT_2PI
    log_sigma_v = math.log(sigma_v)
    for k in range(K):
        ek = e + _SQRT2 * s_e * x[k]
        e_k[k] = ek
        lf = logw[k] + outer_offset - 0.5 * prec_e * ek * ek
        for s in range(S):
            if not paired:
                y = eta[s] + ek
                log_g[k, s] = c[s] * y - n[s] * _softplus(y)
            else:
                a = prec_v + weight[s]
                vc = _inner_mode(eta[s] + ek, c[s], n[s], v[s] - weight[s] / a * (ek - e), prec_v)
                p = _sigmoid(eta[s] + ek + vc)
                s_v = 1.0 / math.sqrt(prec_v + n[s] * p * (1.0 - p))
                offset = math.log(_SQRT2 * s_v) - log_sigma_v - _LOG_SQRT_2PI
                for m in range(K):
                    vl = vc + _SQRT2 * s_v * x[m]
                    y = eta[s] + ek + vl
                    v_kl[k, s, m] = vl
                    log_t[k, s, m] = (
                        logw[m] + offset - 0.5 * prec_v * vl * vl + c[s] * y - n[s] * _softplus(y)
                    )
                log_g[k, s] = _logsumexp(log_t[k, s, :K])
            lf += log_g[k, s]
        log_f[k] = lf
    return _logsumexp(log_f[:K])


@numba.njit(cache=True)
def _factors(sigma_e, sigma_v, paired, z, u):
    """Per-node exponentials of the grid rule and how far the nodes reach on the logit scale.

    ``exp(-y)`` at ``y = eta_s + sigma_e z_k + sigma_v u_m`` is ``exp(-eta_s) ez[k] eu[m]``, so
    a system's rates at all K L nodes cost one exponential; ``p = 1 / (1 + E)`` and ``1 - p = E
    p`` keep full relative precision in both tails. Where ``|eta_s| + reach`` could push the
    product past the floating-point range the rates are computed node by node.
    """
    K = z.shape[0]
    L = u.shape[0] if paired else 1
    reach = sigma_e * max(abs(z[0]), abs(z[K - 1]))
    ez = np.empty(K)
    for k in range(K):
        ez[k] = math.exp(-sigma_e * z[k])
    eu = np.ones(L)
    if paired:
        largest = 0.0
        for m in range(L):
            eu[m] = math.exp(-sigma_v * u[m])
            largest = max(largest, abs(u[m]))
        reach += sigma_v * largest
    return ez, eu, reach


@numba.njit(cache=True)
def _direct_rate(y):
    """``(expit(y), 1 - expit(y))`` without overflow."""
    small = math.exp(-abs(y))
    big = 1.0 / (1.0 + small)
    return (big, small * big) if y >= 0 else (small * big, big)


@numba.njit(cache=True)
def _system_table(eta_s, s, sigma_e, sigma_v, paired, z, u, ez, eu, reach, prob, comp):
    """Rates of system s at every grid node, into ``prob[:, s, :]`` and ``comp[:, s, :]``."""
    K, L = z.shape[0], (u.shape[0] if paired else 1)
    if abs(eta_s) + reach < 700.0:
        es = math.exp(-eta_s)
        for k in range(K):
            a = es * ez[k]
            for m in range(L):
                big = a * eu[m]
                pk = 1.0 / (1.0 + big)
                prob[k, s, m] = pk
                comp[k, s, m] = big * pk
        return
    for k in range(K):
        for m in range(L):
            y = eta_s + sigma_e * z[k] + (sigma_v * u[m] if paired else 0.0)
            prob[k, s, m], comp[k, s, m] = _direct_rate(y)


@numba.njit(cache=True)
def _grid_table(eta, sigma_e, sigma_v, paired, z, u, prob, comp):
    """Rates at the fixed grid nodes, shared by every pattern of one cluster and stratum."""
    ez, eu, reach = _factors(sigma_e, sigma_v, paired, z, u)
    for s in range(eta.shape[0]):
        _system_table(eta[s], s, sigma_e, sigma_v, paired, z, u, ez, eu, reach, prob, comp)


@numba.njit(cache=True)
def _same(row, last):
    for s in range(row.shape[0]):
        if row[s] != last[s]:
            return False
    return True


@numba.njit(cache=True)
def _refresh_table(eta_row, sigma_e, sigma_v, paired, z, u, tab_p, tab_q, last):
    """Recompute the grid rates unless ``last`` already holds this predictor; True if redone.

    Patterns of one cluster and stratum share the predictor and are contiguous, so the table
    is computed once per cluster and stratum.
    """
    if _same(eta_row, last):
        return False
    _grid_table(eta_row, sigma_e, sigma_v, paired, z, u, tab_p, tab_q)
    last[:] = eta_row
    return True


@numba.njit(cache=True)
def _single_terms(
    eta_s,
    sigma_e,
    sigma_v,
    paired,
    z,
    u,
    lam,
    ez,
    eu,
    reach,
    g_lin,
    score_e,
    score_v,
    failure,
    success,
):
    """Grid terms of both one-attempt counts of a system, straight from its predictor: a success
    has inner integral ``E p`` and score mean ``E[p q] / E p``, a failure ``E q`` and
    ``-E[p q] / E q`` (likewise with the node ``u``); writes rows ``failure`` and ``success``.

    The sums over the inner nodes run node by node over the whole outer grid (for every outer
    node in the same order as one node at a time would), in rows that hold the running sums
    until the last step: a loop without a reduction, which the compiler can vectorise."""
    K, L = z.shape[0], (u.shape[0] if paired else 1)
    p_sum, q_sum = g_lin[success], g_lin[failure]
    pq, upq, base = score_e[success], score_v[success], score_e[failure]
    p_sum[:K] = 0.0
    q_sum[:K] = 0.0
    pq[:K] = 0.0
    upq[:K] = 0.0
    direct = abs(eta_s) + reach >= 700.0
    es = 1.0 if direct else math.exp(-eta_s)
    for k in range(K):
        base[k] = es * ez[k]
    for m in range(L):
        weight = lam[m] if paired else 1.0
        node = u[m] if paired else 0.0
        e_m = eu[m]
        if direct:
            for k in range(K):
                pk, qk = _direct_rate(eta_s + sigma_e * z[k] + sigma_v * node)
                wp = weight * pk
                p_sum[k] += wp
                q_sum[k] += weight * qk
                pq[k] += wp * qk
                upq[k] += wp * qk * node
            continue
        for k in range(K):
            big = base[k] * e_m
            pk = 1.0 / (1.0 + big)
            qk = big * pk
            wp = weight * pk
            p_sum[k] += wp
            q_sum[k] += weight * qk
            pq[k] += wp * qk
            upq[k] += wp * qk * node
    for k in range(K):
        both, both_u = pq[k], upq[k]
        score_e[success, k] = both / p_sum[k] if p_sum[k] > 0.0 else 0.0
        score_v[success, k] = both_u / p_sum[k] if p_sum[k] > 0.0 else 0.0
        score_e[failure, k] = -both / q_sum[k] if q_sum[k] > 0.0 else 0.0
        score_v[failure, k] = -both_u / q_sum[k] if q_sum[k] > 0.0 else 0.0


@numba.njit(cache=True)
def _grid_step(n):
    """The largest node spacing (logits) the grid may have for the grid patterns among ``n``:
    :data:`GRID_MAX_LOGIT_STEP`, or :data:`GRID_INFO_STEP` over the square root of the most
    trials in one of them, whichever is smaller."""
    most = 0.0
    for p in range(n.shape[0]):
        if not _is_low(n[p]):
            continue
        total = 0.0
        for s in range(n.shape[1]):
            total += n[p, s]
        most = max(most, total)
    if most <= 0.0:
        return GRID_MAX_LOGIT_STEP
    return min(GRID_MAX_LOGIT_STEP, GRID_INFO_STEP / math.sqrt(most))


@numba.njit(cache=True)
def _grid_for(sigma_e, z, log_omega, n):
    """The grid nodes and log weights to use at ``sigma_e`` for patterns with trials ``n (P, S)``:
    the given ones while their spacing is at most :func:`_grid_step` logits, else a finer grid
    over the same range (at most :data:`GRID_MAX_NODES` nodes: the sampler may propose absurd
    spreads while it adapts)."""
    K = z.shape[0]
    width = z[K - 1] - z[0]
    max_step = _grid_step(n)
    if sigma_e * width / (K - 1) <= max_step or not np.isfinite(sigma_e):
        return z, log_omega
    needed = sigma_e * width / max_step  # compared as a float: no integer overflow
    K = GRID_MAX_NODES if needed >= GRID_MAX_NODES - 1 else int(math.ceil(needed)) + 1
    step = width / (K - 1)
    fine = np.empty(K)
    log_fine = np.empty(K)
    for k in range(K):
        fine[k] = z[0] + k * step
        log_fine[k] = math.log(step) - 0.5 * fine[k] ** 2 - _LOG_SQRT_2PI
    return fine, log_fine


@numba.njit(cache=True)
def _pattern_grid(c, n, paired, z, log_omega, u, lam, prob, comp, r, score, log_g, log_f):
    """One low-information pattern (every n <= 2) on the fixed grid; returns log L.

    The outer rule is the trapezoid on the standardised task effect ``z`` (so ``e = sigma_e z``)
    and the inner rule Gauss-Hermite on the standardised task-by-system effect ``u``: with
    little information per task the integrand is the prior times smooth factors, and fixed
    standardised nodes make the gradient the exact derivative of the rule. Fills the normalised
    inner weights ``r (K, S, L)``, the scores ``c - n p`` at the nodes, ``log_g`` and ``log_f``.
    """
    S = c.shape[0]
    K = z.shape[0]
    L = u.shape[0] if paired else 1
    for k in range(K):
        lf = log_omega[k]
        for s in range(S):
            cs, fs = int(c[s]), int(n[s] - c[s])
            total = 0.0
            for m in range(L):
                pk, qk = prob[k, s, m], comp[k, s, m]
                like = lam[m] if paired else 1.0
                for _ in range(cs):
                    like *= pk
                for _ in range(fs):
                    like *= qk
                r[k, s, m] = like
                score[k, s, m] = c[s] - n[s] * pk
                total += like
            for m in range(L):
                r[k, s, m] /= total
            log_g[k, s] = math.log(total)
            lf += log_g[k, s]
        log_f[k] = lf
    return _logsumexp(log_f[:K])


@numba.njit(cache=True)
def _aghq_node_terms(
    eta, c, n, sigma_e, sigma_v, paired, x, e_k, v_kl, log_t, log_g, r, score, prob
):
    """Normalised inner weights, scores and rates at the AGHQ nodes of one pattern."""
    S = eta.shape[0]
    K = x.shape[0]
    L = K if paired else 1
    for k in range(K):
        for s in range(S):
            for m in range(L):
                y = eta[s] + e_k[k] + (v_kl[k, s, m] if paired else 0.0)
                p = _sigmoid(y)
                prob[k, s, m] = p
                score[k, s, m] = c[s] - n[s] * p
                r[k, s, m] = math.exp(log_t[k, s, m] - log_g[k, s]) if paired else 1.0


class Rules:
    """Node sets of both quadrature rules (plain arrays, passed to the kernels)."""

    def __init__(self, n_nodes: int = N_NODES):
        self.x, self.logw = hermite(n_nodes)
        self.z = np.linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, GRID_NODES)
        step = self.z[1] - self.z[0]
        self.log_omega = np.log(step) - 0.5 * self.z**2 - _LOG_SQRT_2PI
        gx, gw = np.polynomial.hermite.hermgauss(n_nodes)
        self.u = _SQRT2 * gx
        self.lam = gw / math.sqrt(math.pi)

    def arrays(self):
        return self.x, self.logw, self.z, self.log_omega, self.u, self.lam


@numba.njit(cache=True)
def _is_low(n):
    for value in n:
        if value > LOW_TRIALS:
            return False
    return True


@numba.njit(cache=True)
def _evaluate(p, eta, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam, buf):
    """Evaluate pattern ``p`` with its rule; returns ``(log L, K, L)``.

    ``buf`` holds work arrays: e_k, log_f, v_kl, log_t, r, score, prob, log_g, the grid rate
    tables and the predictor they were computed for (a cache shared by the patterns of one
    cluster and stratum, which are contiguous).
    """
    e_k, log_f, v_kl, log_t, r, score, prob, log_g, tab_p, tab_q, last = buf
    if _is_low(n[p]):
        _refresh_table(eta[p], sigma_e, sigma_v, paired, z, u, tab_p, tab_q, last)
        log_l = _pattern_grid(
            c[p], n[p], paired, z, log_omega, u, lam, tab_p, tab_q, r, score, log_g, log_f
        )
        L = u.shape[0] if paired else 1
        prob[: z.shape[0], :, :L] = tab_p[:, :, :L]
        return log_l, z.shape[0], L
    log_l = _pattern(
        eta[p], c[p], n[p], sigma_e, sigma_v, paired, x, logw, e_k, v_kl, log_t, log_g, log_f
    )
    _aghq_node_terms(
        eta[p], c[p], n[p], sigma_e, sigma_v, paired, x, e_k, v_kl, log_t, log_g, r, score, prob
    )
    return log_l, x.shape[0], (x.shape[0] if paired else 1)


@numba.njit(cache=True)
def _buffers(S, n_x, n_z, n_u):
    K, L = max(n_x, n_z), max(n_x, n_u)
    return (
        np.empty(K),
        np.empty(K),
        np.zeros((K, S, L)),
        np.zeros((K, S, L)),
        np.zeros((K, S, L)),
        np.zeros((K, S, L)),
        np.zeros((K, S, L)),
        np.empty((K, S)),
        np.zeros((n_z, S, L)),
        np.zeros((n_z, S, L)),
        np.full(S, np.nan),
    )


@numba.njit(cache=True)
def _power(p, q, a, b):
    """``p**a * q**b`` for small non-negative integers (no pow calls)."""
    out = 1.0
    for _ in range(a):
        out *= p
    for _ in range(b):
        out *= q
    return out


@numba.njit(cache=True)
def _combo(s, cs, ns, paired, u, lam, tab_p, tab_q, g_lin, score_e, score_v):
    """Grid terms of one system's counts ``(cs, ns)`` at every outer node: the inner integral
    ``g_lin (K,)`` and the inner means of the score ``c - n p`` (times 1 and times the node
    ``u``). One-attempt counts, the common case, get straight-line loops."""
    L = u.shape[0] if paired else 1
    a_pow, b_pow = int(cs), int(ns - cs)
    for k in range(tab_p.shape[0]):
        total, a, b = 0.0, 0.0, 0.0
        for m in range(L):
            pk, qk = tab_p[k, s, m], tab_q[k, s, m]
            if a_pow + b_pow == 1:
                like = pk if a_pow == 1 else qk
            else:
                like = _power(pk, qk, a_pow, b_pow)
            like *= lam[m] if paired else 1.0
            sc = like * (cs - ns * pk)
            total += like
            a += sc
            b += sc * (u[m] if paired else 0.0)
        g_lin[k] = total
        score_e[k] = a / total if total > 0.0 else 0.0
        score_v[k] = b / total if total > 0.0 else 0.0


@numba.njit(cache=True)
def _grid_node_weights(rows, omega, log_omega, g_lin, f_k, log_f):
    """Outer-node terms of one grid pattern whose systems' inner integrals are the rows
    ``g_lin[rows[s]]``: fills ``f_k`` with the normalised node weights and returns the
    pattern's log L. Products are taken in linear space (no exponentials); only if they
    underflow at every node are they redone in logs."""
    K = omega.shape[0]
    f_k[:K] = omega
    for s in range(rows.shape[0]):
        row = g_lin[rows[s]]
        for k in range(K):
            f_k[k] *= row[k]
    total = 0.0
    for k in range(K):
        total += f_k[k]
    if total > 1e-280:
        inv = 1.0 / total
        for k in range(K):
            f_k[k] *= inv
        return math.log(total)
    log_f[:K] = log_omega
    for s in range(rows.shape[0]):
        row = g_lin[rows[s]]
        for k in range(K):
            log_f[k] += math.log(row[k]) if row[k] > 0.0 else -np.inf
    log_l = _logsumexp(log_f[:K])
    for k in range(K):
        f_k[k] = math.exp(log_f[k] - log_l) if np.isfinite(log_l) else 0.0
    return log_l


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _grid_gradient(rows, f_k, f_z, z, g_e, g_v, m, g_eta_p):
    """Gradient of ``m log L`` of one grid pattern from its normalised node weights ``f_k``:
    adds to ``g_eta_p (S,)`` and returns the parts for ``sigma_e`` and ``sigma_v``. Sums may be
    reassociated (vectorised); nothing here can be infinite."""
    K = z.shape[0]
    for k in range(K):
        f_z[k] = f_k[k] * z[k]
    d_se, d_sv = 0.0, 0.0
    for s in range(rows.shape[0]):
        re, rv = g_e[rows[s]], g_v[rows[s]]
        a, b, d = 0.0, 0.0, 0.0
        for k in range(K):
            a += f_k[k] * re[k]
            b += f_z[k] * re[k]
            d += f_k[k] * rv[k]
        g_eta_p[s] += m * a
        d_se += m * b
        d_sv += m * d
    return d_se, d_sv


#: Tabulated inner integrals of the adaptive rule: ``log g_{c,n}(y) = log int N(v; 0, sigma_v)
#: Bin(c | n, expit(y + v)) dv`` depends on the system and pattern only through ``y`` and the
#: counts, so within one evaluation of the likelihood it is computed once per counts on a grid
#: in ``y`` (cells on first use) and read by cubic Hermite interpolation.
TABLE_LOW = -60.0
TABLE_STEP = 0.1
TABLE_SIZE = 1201  # y from -60 to 60; linear beyond (the integral is asymptotically linear)
TABLE_NEWTON = 30  # the outer mode's damped Newton steps (the marginal in e is log-concave)
TABLE_TAIL = 40.0  # the trapezoid's ends lie this far (in logs) below the peak
TRAPEZOID_NODES = 401  # at most this many trapezoid nodes (the step doubles to fit)
INNER_NODES = 401  # the same for the inner integral's trapezoid
INNER_STEP = 0.75  # the inner trapezoid's largest step (its error falls as exp(-2 pi^2 / step))
INNER_TAIL = 30.0  # its ends lie this far (in logs) below the peak


@numba.njit(cache=True)
def _one_sided(cq, nq):
    """Counts whose likelihood barely turns: at most one success or at most one failure."""
    return min(cq, nq - cq) <= 1.0


@numba.njit(cache=True)
def _inner_integral(y, cq, nq, prec_v, log_sigma_v, vc, x, logw, terms):
    """The integral over one system's task-by-system effect at ``y = eta_s + e``,
    ``log g = log int N(v; 0, sigma_v) p^c (1 - p)^(n - c) dv`` with ``p = expit(y + v)``, and
    its derivatives ``(log g, d/dy, d/dsigma_v, d2/(dy dsigma_v))`` (Fisher's identity over
    the same nodes). ``vc`` is the conditional mode of ``v``; ``terms (2, INNER_NODES)`` holds
    the log terms and the nodes.

    Two-sided counts take Gauss-Hermite nodes at the mode. One-sided counts
    (:func:`_one_sided`) take a trapezoid out to ``TABLE_TAIL`` below the peak, in steps of at
    most ``INNER_STEP``: their integrand is a Gaussian cut by a sigmoid, which the nodes
    misjudge by up to 1e-2 (in logs) under a wide ``sigma_v``. That error wiggles in ``y``,
    and where the likelihood is nearly flat it made the task effect's marginal non-concave:
    its mode jumped between local maxima and the log density was rough (LiveCodeBench reached
    NUTS's maximum tree depth). The trapezoid errs by less than 1e-7 (the integrand's nearest
    singularities lie pi off the real line)."""
    p = _sigmoid(y + vc)
    s_v = 1.0 / math.sqrt(prec_v + nq * p * (1.0 - p))
    count = 0
    if _one_sided(cq, nq):
        step = min(0.5 * s_v, INNER_STEP)
        half = (terms.shape[1] - 1) // 2
        peak = -0.5 * prec_v * vc * vc + cq * (y + vc) - nq * _softplus(y + vc)
        while True:
            terms[0, 0] = peak
            terms[1, 0] = vc
            count = 1
            fits = True
            for side in (-1.0, 1.0):
                j = 1
                while True:
                    if j > half:
                        fits = False
                        break
                    vl = vc + side * j * step
                    level = -0.5 * prec_v * vl * vl + cq * (y + vl) - nq * _softplus(y + vl)
                    terms[0, count] = level
                    terms[1, count] = vl
                    count += 1
                    if level < peak - INNER_TAIL:
                        break
                    j += 1
                if not fits:
                    break
            if fits:
                break
            step *= 2.0
        offset = math.log(step) - log_sigma_v - _LOG_SQRT_2PI
        for m in range(count):
            terms[0, m] += offset
    else:
        offset = math.log(_SQRT2 * s_v) - log_sigma_v - _LOG_SQRT_2PI
        count = x.shape[0]
        for m in range(count):
            vl = vc + _SQRT2 * s_v * x[m]
            yy = y + vl
            terms[0, m] = logw[m] + offset - 0.5 * prec_v * vl * vl + cq * yy - nq * _softplus(yy)
            terms[1, m] = vl
    log_g = _logsumexp(terms[0, :count])
    d_y, d_v, d_vy = 0.0, 0.0, 0.0
    sigma_v = 1.0 / math.sqrt(prec_v)
    for m in range(count):
        r = math.exp(terms[0, m] - log_g)
        vl = terms[1, m]
        score_y = cq - nq * _sigmoid(y + vl)
        score_v = ((vl / sigma_v) ** 2 - 1.0) / sigma_v
        d_y += r * score_y
        d_v += r * score_v
        d_vy += r * score_v * score_y
    return log_g, d_y, d_v, d_vy


@numba.njit(cache=True)
def _table_cell(i, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """Fill cell ``i`` of table ``q``: the inner integral at ``y_i``, its derivative in ``y``
    and in ``sigma_v`` (:func:`_inner_integral`)."""
    y = TABLE_LOW + i * TABLE_STEP
    vc = _conditional_mode(y, cq, nq, 0.0, prec_v)
    log_g, d_y, d_v, d_vy = _inner_integral(y, cq, nq, prec_v, log_sigma_v, vc, x, logw, terms)
    tab[q, i, 0] = log_g
    tab[q, i, 1] = d_y
    tab[q, i, 2] = d_v
    # the sigma_v derivative's slope in y: the covariance of the two scores given y
    tab[q, i, 4] = d_vy - d_v * d_y
    tab[q, i, 3] = 1.0  # ready


@numba.njit(cache=True)
def _table_read(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """``(log g, d/dy, d2/dy2, d/dsigma_v)`` at ``y`` for counts ``(cq, nq)`` from the table
    of slot ``q`` (:func:`_table_slots`): a slot ``q < 0`` is table ``-1 - q`` of the
    mirrored counts ``(nq - cq, nq)`` read at ``-y``, since ``v`` is symmetric about zero
    and ``g(y; c, n) = g(-y; n - c, n)`` (the table's grid is symmetric about zero, so the
    read is the same interpolant; only the slope changes sign)."""
    if q >= 0:
        return _table_at(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    value, slope, curve, dv = _table_at(
        -y, -1 - q, nq - cq, nq, prec_v, log_sigma_v, x, logw, tab, terms
    )
    return value, -slope, curve, dv


@numba.njit(cache=True)
def _table_locate(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """The cells of table ``q`` around ``y``, computed if not yet: ``(i, t)``, ``y`` at ``t``
    of the way from cell ``i`` to ``i + 1``, or beyond the grid ``(edge cell, -1)``."""
    top = TABLE_LOW + (TABLE_SIZE - 1) * TABLE_STEP
    if y <= TABLE_LOW or y >= top:
        i = 0 if y <= TABLE_LOW else TABLE_SIZE - 1
        if tab[q, i, 3] == 0.0:
            _table_cell(i, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
        return i, -1.0
    t = (y - TABLE_LOW) / TABLE_STEP
    i = min(int(t), TABLE_SIZE - 2)
    t -= i
    for j in (i, i + 1):
        if tab[q, j, 3] == 0.0:
            _table_cell(j, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    return i, t


@numba.njit(cache=True)
def _table_value(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """``log g`` at ``y`` from table ``q``, as :func:`_table_at` reads it, without the
    derivatives."""
    i, t = _table_locate(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    return _cell_value(y, q, i, t, tab)


@numba.njit(cache=True)
def _cell_value(y, q, i, t, tab):
    """``log g`` at ``y`` located at ``(i, t)`` (:func:`_table_locate`) in table ``q``: the
    cubic Hermite interpolant, or beyond the grid the tangent at its end."""
    if t < 0.0:
        return tab[q, i, 0] + tab[q, i, 1] * (y - (TABLE_LOW + i * TABLE_STEP))
    h = TABLE_STEP
    f0, d0, f1, d1 = tab[q, i, 0], tab[q, i, 1], tab[q, i + 1, 0], tab[q, i + 1, 1]
    t2, t3 = t * t, t * t * t
    return (
        (2 * t3 - 3 * t2 + 1) * f0
        + (t3 - 2 * t2 + t) * h * d0
        + (-2 * t3 + 3 * t2) * f1
        + (t3 - t2) * h * d1
    )


@numba.njit(cache=True)
def _table_read_value(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """``log g`` as :func:`_table_read` reads it, without the derivatives."""
    if q >= 0:
        return _table_value(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    return _table_value(-y, -1 - q, nq - cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)


@numba.njit(cache=True)
def _table_at(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """``(log g, d/dy, d2/dy2, d/dsigma_v)`` at ``y`` from table ``q``: the cubic Hermite
    interpolant through the two cells around ``y`` (computed if not yet), its derivatives,
    and the ``sigma_v`` derivative by its own Hermite interpolant; beyond the grid, the
    tangent at its end."""
    i, t = _table_locate(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    value = _cell_value(y, q, i, t, tab)
    if t < 0.0:
        return value, tab[q, i, 1], 0.0, tab[q, i, 2]
    h = TABLE_STEP
    f0, d0, f1, d1 = tab[q, i, 0], tab[q, i, 1], tab[q, i + 1, 0], tab[q, i + 1, 1]
    t2 = t * t
    t3 = t2 * t
    slope = (
        (6 * t2 - 6 * t) / h * f0
        + (3 * t2 - 4 * t + 1) * d0
        + (-6 * t2 + 6 * t) / h * f1
        + (3 * t2 - 2 * t) * d1
    )
    curve = (
        (12 * t - 6) / (h * h) * f0
        + (6 * t - 4) / h * d0
        + (-12 * t + 6) / (h * h) * f1
        + (6 * t - 2) / h * d1
    )
    dv = (
        (2 * t3 - 3 * t2 + 1) * tab[q, i, 2]
        + (t3 - 2 * t2 + t) * h * tab[q, i, 4]
        + (-2 * t3 + 3 * t2) * tab[q, i + 1, 2]
        + (t3 - t2) * h * tab[q, i + 1, 4]
    )
    return value, slope, curve, dv


@numba.njit(cache=True)
def _marginal_e(
    e, eta_p, slot_p, c_p, n_p, prec_e, prec_v, log_sigma_v, paired, x, logw, tab, terms
):
    """The task effect's log marginal density (up to a constant) and its first two
    derivatives, from the tables (one system: the binomial log-likelihood itself)."""
    value = -0.5 * prec_e * e * e
    slope = -prec_e * e
    curve = -prec_e
    for s in range(eta_p.shape[0]):
        if n_p[s] == 0.0:
            continue
        y = eta_p[s] + e
        if paired:
            f, d1, d2, _ = _table_read(
                y, slot_p[s], c_p[s], n_p[s], prec_v, log_sigma_v, x, logw, tab, terms
            )
        else:
            pr = _sigmoid(y)
            f, d1, d2 = (
                c_p[s] * y - n_p[s] * _softplus(y),
                c_p[s] - n_p[s] * pr,
                -n_p[s] * pr * (1.0 - pr),
            )
        value += f
        slope += d1
        curve += d2
    return value, slope, curve


@numba.njit(cache=True)
def _marginal_value(
    e, eta_p, slot_p, c_p, n_p, prec_e, prec_v, log_sigma_v, paired, x, logw, tab, terms
):
    """The log marginal density of :func:`_marginal_e`, without its derivatives."""
    value = -0.5 * prec_e * e * e
    for s in range(eta_p.shape[0]):
        if n_p[s] == 0.0:
            continue
        y = eta_p[s] + e
        if paired:
            value += _table_read_value(
                y, slot_p[s], c_p[s], n_p[s], prec_v, log_sigma_v, x, logw, tab, terms
            )
        else:
            value += c_p[s] * y - n_p[s] * _softplus(y)
    return value


@numba.njit(cache=True)
def _marginal_mode(
    eta_p, slot_p, c_p, n_p, prec_e, prec_v, log_sigma_v, paired, x, logw, tab, terms, tol
):
    """The mode of the task effect's log marginal (:func:`_marginal_e`; log-concave) by
    damped Newton steps from 0 until a step is below ``tol``: ``(mode, log density there,
    Laplace sd)``."""
    e = 0.0
    value, slope, curve = _marginal_e(
        e, eta_p, slot_p, c_p, n_p, prec_e, prec_v, log_sigma_v, paired, x, logw, tab, terms
    )
    for _ in range(TABLE_NEWTON):
        step = _clip(-slope / min(curve, -prec_e))
        moved = False
        for _ in range(30):
            cand = _marginal_e(
                e + step,
                eta_p,
                slot_p,
                c_p,
                n_p,
                prec_e,
                prec_v,
                log_sigma_v,
                paired,
                x,
                logw,
                tab,
                terms,
            )
            if cand[0] >= value:
                e += step
                value, slope, curve = cand
                moved = True
                break
            step *= 0.5
        if not moved or abs(step) < tol:
            break
    return e, value, 1.0 / math.sqrt(max(-curve, prec_e))


@numba.njit(cache=True)
def _trapezoid_nodes(
    e,
    value,
    s_e,
    sigma_e,
    eta_p,
    slot_p,
    c_p,
    n_p,
    prec_e,
    prec_v,
    log_sigma_v,
    paired,
    x,
    logw,
    tab,
    terms,
    e_k,
    log_f,
):
    """Trapezoid nodes over the marginal's whole extent: outwards from the mode ``e`` in
    steps of ``s_e / 2`` until the log density lies ``TABLE_TAIL`` below its peak (the step
    doubles while a side would need more than half the nodes). Fills ``e_k`` and ``log_f``
    (log weights: step, the prior's normalising constant and the density); returns their
    number."""
    half = (e_k.shape[0] - 1) // 2
    step = 0.5 * s_e
    while True:
        count = 1
        e_k[0] = e
        log_f[0] = value
        fits = True
        for side in (-1.0, 1.0):
            j = 1
            while True:
                if j > half:
                    fits = False
                    break
                point = e + side * j * step
                level = _marginal_value(
                    point,
                    eta_p,
                    slot_p,
                    c_p,
                    n_p,
                    prec_e,
                    prec_v,
                    log_sigma_v,
                    paired,
                    x,
                    logw,
                    tab,
                    terms,
                )
                e_k[count] = point
                log_f[count] = level
                count += 1
                if level < value - TABLE_TAIL:
                    break
                j += 1
            if not fits:
                break
        if fits:
            break
        step *= 2.0
    offset = math.log(step) - math.log(sigma_e) - _LOG_SQRT_2PI
    for k in range(count):
        log_f[k] += offset
    return count


@numba.njit(cache=True)
def _tabled_pattern(
    p, eta, c, n, slot, m, sigma_e, sigma_v, paired, x, logw, tab, terms, e_k, log_f, g_eta
):
    """One adaptive-rule pattern from the tables: the outer Gauss-Hermite rule centred and
    scaled at the mode of the task effect's marginal; adds ``m`` times its gradient in
    ``eta`` to ``g_eta[p]`` and returns ``(log L, d/dsigma_e, d/dsigma_v)`` (times ``m``);
    with ``g_eta`` empty, only ``(m log L, 0, 0)``."""
    S = eta.shape[1]
    K = x.shape[0]
    prec_e = 1.0 / sigma_e**2
    prec_v = 1.0 / sigma_v**2 if paired else 0.0
    log_sigma_v = math.log(sigma_v) if paired else 0.0
    e, value, s_e = _marginal_mode(
        eta[p], slot[p], c[p], n[p], prec_e, prec_v, log_sigma_v, paired, x, logw, tab, terms, 1e-9
    )
    # Gauss-Hermite at the mode, except for a pattern with at most one success or at most
    # one failure over all its trials: its likelihood barely turns in e, the marginal is
    # one-sided under a wide task spread and 9 nodes misjudge it by up to 1e-2, so it takes a
    # trapezoid over its whole extent. The choice depends on the counts only, so the log
    # density stays smooth in the parameters.
    successes, trials = 0.0, 0.0
    for s in range(S):
        successes += c[p, s]
        trials += n[p, s]
    if min(successes, trials - successes) > 1.0:
        Kn = K
        offset = math.log(_SQRT2 * s_e) - math.log(sigma_e) - _LOG_SQRT_2PI
        for k in range(K):
            e_k[k] = e + _SQRT2 * s_e * x[k]
            log_f[k] = (
                logw[k]
                + offset
                + _marginal_value(
                    e_k[k],
                    eta[p],
                    slot[p],
                    c[p],
                    n[p],
                    prec_e,
                    prec_v,
                    log_sigma_v,
                    paired,
                    x,
                    logw,
                    tab,
                    terms,
                )
            )
    else:
        Kn = _trapezoid_nodes(
            e,
            value,
            s_e,
            sigma_e,
            eta[p],
            slot[p],
            c[p],
            n[p],
            prec_e,
            prec_v,
            log_sigma_v,
            paired,
            x,
            logw,
            tab,
            terms,
            e_k,
            log_f,
        )
    log_l = _logsumexp(log_f[:Kn])
    d_se, d_sv = 0.0, 0.0
    if g_eta.shape[0] == 0:  # the value only (pattern_logliks)
        return m * log_l, d_se, d_sv
    for k in range(Kn):
        if log_f[k] < log_l - 45.0:  # below 1e-19 of the total
            continue
        pi = m * math.exp(log_f[k] - log_l)
        d_se += pi * ((e_k[k] / sigma_e) ** 2 - 1.0) / sigma_e
        for s in range(S):
            if n[p, s] == 0.0:
                continue
            y = eta[p, s] + e_k[k]
            if paired:
                _, d1, _, dv = _table_read(
                    y, slot[p, s], c[p, s], n[p, s], prec_v, log_sigma_v, x, logw, tab, terms
                )
                d_sv += pi * dv
            else:
                d1 = c[p, s] - n[p, s] * _sigmoid(y)
            g_eta[p, s] += pi * d1
    return m * log_l, d_se, d_sv


@numba.njit(cache=True)
def _table_slots(c, n, every):
    """Each adaptive-rule cell's table, one per distinct counts ``(c, n)`` up to mirroring:
    ``slot (P, S)`` (``-1 - q`` where the cell reads table ``q`` of ``(n - c, n)`` mirrored,
    :func:`_table_read`) and the counts of each table (with ``every``, the fixed grid's
    patterns' cells too). Binary cells need one table instead of two."""
    P, S = c.shape
    top = 0
    for p in range(P):
        if _is_low(n[p]) and not every:
            continue
        for s in range(S):
            nn = int(n[p, s])
            top = max(top, nn * (nn + 1) // 2 + nn)
    index = np.full(top + 1, -1, dtype=np.int64)
    slot = np.zeros((P, S), dtype=np.int64)
    counts = np.zeros((P * S + 1, 2))
    Q = 0
    for p in range(P):
        if _is_low(n[p]) and not every:
            continue
        for s in range(S):
            nn, cc = int(n[p, s]), int(c[p, s])
            mirrored = cc > nn - cc
            if mirrored:
                cc = nn - cc
            key = nn * (nn + 1) // 2 + cc
            if index[key] < 0:
                index[key] = Q
                counts[Q, 0], counts[Q, 1] = cc, nn
                Q += 1
            slot[p, s] = -1 - index[key] if mirrored else index[key]
    return slot, counts[:Q], Q


@numba.njit(cache=True)
def loglik_and_grad(eta, c, n, mult, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam):
    """``sum_p mult_p log L_p`` and its gradient (see :func:`_loglik`)."""
    return _loglik(
        eta, c, n, mult, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam, np.empty(0)
    )


@numba.njit(cache=True)
def _loglik(eta, c, n, mult, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam, per_pattern):
    """``sum_p mult_p log L_p`` and its gradient in ``eta (P, S)``, ``sigma_e``, ``sigma_v``;
    with a ``(P,)`` array ``per_pattern``, instead each pattern's ``log L_p`` (the gradient
    then left out: the grid's node sums and the adaptive rule's second pass over its
    nodes).

    Grid patterns (every n <= 2) share, within a cluster and stratum, the rates at the nodes and
    the inner integrals of each system's counts; their gradient is the exact derivative of the
    rule. The other patterns use the adaptive rule on tables: the inner integral over a
    system's task-by-system effect is a function of ``y = eta_s + e`` and the counts only, so
    it is computed once per counts on a grid in ``y`` (each cell by :func:`_inner_integral` at
    its own conditional mode) and interpolated (cubic Hermite, in ``y`` and in its ``sigma_v``
    derivative); the outer rule is centred and scaled at the mode of the task effect's
    marginal. Their gradient is Fisher's identity with the same nodes. At 45 systems x 400
    tasks x 10 trials this is about six times faster than nesting a rule at every outer node.
    """
    P, S = eta.shape
    z, log_omega = _grid_for(sigma_e, z, log_omega, n)
    Kx, Kz = x.shape[0], z.shape[0]
    omega = np.exp(log_omega)
    # grid terms per (system, counts) row, k innermost; row s * n_slots + slot
    n_slots = (LOW_TRIALS + 1) * (LOW_TRIALS + 2) // 2
    g_lin = np.empty((S * n_slots, Kz))
    g_e = np.empty((S * n_slots, Kz))
    g_v = np.empty((S * n_slots, Kz))
    ready = np.zeros(S * n_slots, dtype=np.bool_)
    rows = np.zeros(S, dtype=np.int64)
    tab_p = np.empty((Kz, S, u.shape[0] if paired else 1))
    tab_q = np.empty_like(tab_p)
    table_ready = np.zeros(S, dtype=np.bool_)
    last = np.full(S, np.nan)
    ez, eu, reach = _factors(sigma_e, sigma_v, paired, z, u)
    f_z = np.empty(Kz)
    f_k = np.empty(max(Kz, Kx))
    log_f = np.empty(max(Kz, Kx))
    # the adaptive rule's tables of inner integrals, allocated at the first pattern that
    # needs them
    e_k = np.empty(max(Kx, TRAPEZOID_NODES))
    trap_f = np.empty(max(Kx, TRAPEZOID_NODES))
    terms = np.empty((2, max(Kx, INNER_NODES)))
    tab = np.zeros((0, 1, 5))
    slot = np.zeros((0, S), dtype=np.int64)
    total, g_se, g_sv = 0.0, 0.0, 0.0
    g_eta = np.zeros((P, S))
    no_gradient = np.zeros((0, S))
    for p in range(P):
        m = mult[p]
        if _is_low(n[p]):
            if not _same(eta[p], last):  # a new cluster and stratum (contiguous patterns)
                last[:] = eta[p]
                ready[:] = False
                table_ready[:] = False
            for s in range(S):
                ns, cs = int(n[p, s]), int(c[p, s])
                row = s * n_slots + ns * (ns + 1) // 2 + cs
                rows[s] = row
                if ready[row]:
                    continue
                if ns == 0:
                    g_lin[row, :] = 1.0
                    g_e[row, :] = 0.0
                    g_v[row, :] = 0.0
                    ready[row] = True
                elif ns == 1:
                    _single_terms(
                        eta[p, s],
                        sigma_e,
                        sigma_v,
                        paired,
                        z,
                        u,
                        lam,
                        ez,
                        eu,
                        reach,
                        g_lin,
                        g_e,
                        g_v,
                        row - cs,
                        row - cs + 1,
                    )
                    ready[row - cs : row - cs + 2] = True
                else:
                    if not table_ready[s]:
                        _system_table(
                            eta[p, s],
                            s,
                            sigma_e,
                            sigma_v,
                            paired,
                            z,
                            u,
                            ez,
                            eu,
                            reach,
                            tab_p,
                            tab_q,
                        )
                        table_ready[s] = True
                    _combo(
                        s,
                        c[p, s],
                        n[p, s],
                        paired,
                        u,
                        lam,
                        tab_p,
                        tab_q,
                        g_lin[row],
                        g_e[row],
                        g_v[row],
                    )
                    ready[row] = True
            log_l = _grid_node_weights(rows, omega, log_omega, g_lin, f_k, log_f)
            total += m * log_l
            if per_pattern.shape[0]:  # the value only (pattern_logliks)
                per_pattern[p] = log_l
                continue
            d_se, d_sv = _grid_gradient(rows, f_k, f_z, z, g_e, g_v, m, g_eta[p])
            g_se += d_se
            g_sv += d_sv
            continue
        if tab.shape[0] == 0:  # the first adaptive-rule pattern: the tables, empty
            slot, _, n_tables = _table_slots(c, n, False)
            tab = np.zeros((max(n_tables, 1), TABLE_SIZE, 5)) if paired else np.zeros((1, 1, 5))
        log_l, d_se, d_sv = _tabled_pattern(
            p,
            eta,
            c,
            n,
            slot,
            m,
            sigma_e,
            sigma_v,
            paired,
            x,
            logw,
            tab,
            terms,
            e_k,
            trap_f,
            no_gradient if per_pattern.shape[0] else g_eta,
        )
        total += log_l
        if per_pattern.shape[0]:
            per_pattern[p] = log_l / m
        g_se += d_se
        g_sv += d_sv
    return total, g_eta, g_se, g_sv


#: Kernel codes of the metrics f whose conditional moments the kernels compute.
METRIC_CODES = {"pass@k": 0, "pass^k": 1, "g-pass@k": 2, "consistency": 3}


def metric_arguments(metric: str, ks, tau=None) -> tuple[int, np.ndarray]:
    """The kernels' metric arguments: its code and, per k, the successes it needs (G-pass@k's
    ``ceil(tau k)``; unused by the other metrics)."""
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
    """The metric of rate p (codes of :data:`METRIC_CODES`): pass@k, pass^k, G-pass@k with m
    successes needed, consistency ``(2p - 1)^2``."""
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
    """Conditional moments of f(p_s) of pattern ``p`` into ``mean_p (S, Q)`` and ``cross_p
    (S, S, Q)`` (only its diagonal unless ``full``)."""
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
    """Work arrays of :func:`_pattern_moments`: the rule buffers, per-node moments, and one
    pattern's cross moments."""
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
    """Weighted sums over the patterns of one draw: ``centre (S, Q)`` of the conditional means
    and ``cov (Q, S, S)`` of the conditional covariances of the mean over tasks (tasks are
    independent given the draw), without a per-pattern system x system array."""
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
    """Per draw, the mean over tasks' conditional centre ``(D, S, k)`` and covariance
    ``(D, k, S, S)``: ``sum_p mult_p w_ps E[f_s]`` and ``sum_p mult_p w_ps w_pt Cov(f_s, f_t)``
    (memory O(D S^2 k), not O(D P S^2 k)); f is ``metric`` (one of :data:`METRIC_CODES`,
    with ``tau`` for G-pass@k)."""
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


#: tasks drawn one by one in the tasks estimand when there are at most this many (as the Beta
#: models do); above it the mean over tasks is drawn from the normal of its conditional moments
EXACT_TASKS = 100
HULL_POINTS = 40  # abscissae an adaptive rejection sampler keeps (it stops adding after that)
TANGENT_TRIES = 8  # tangent-normal proposals before a task-by-system draw turns to the hull


@numba.njit(cache=True)
def _conditional_mode(eta_e, c, n, v, prec_v):
    """Mode of v given the task effect, Newton to convergence (``_inner_mode`` takes a few
    steps from a good start; these conditionals start from anywhere)."""
    current = _conditional_log_density(eta_e, c, n, v, prec_v)
    for _ in range(50):
        p = _sigmoid(eta_e + v)
        step = _clip((c - n * p - v * prec_v) / (prec_v + n * p * (1.0 - p)))
        moved = False
        for _ in range(30):
            candidate = _conditional_log_density(eta_e, c, n, v + step, prec_v)
            if candidate >= current:
                v += step
                current = candidate
                moved = True
                break
            step *= 0.5
        if not moved or abs(step) < 1e-9:
            break
    return v


@numba.njit(cache=True)
def _hull_insert(hx, hh, hd, k, x, h, d):
    """Insert abscissa ``x`` (log density ``h``, slope ``d``) into the sorted hull of ``k``
    points; returns the new count (unchanged when the hull is full)."""
    if k >= hx.shape[0]:
        return k
    i = k
    while i > 0 and hx[i - 1] > x:
        hx[i], hh[i], hd[i] = hx[i - 1], hh[i - 1], hd[i - 1]
        i -= 1
    hx[i], hh[i], hd[i] = x, h, d
    return k + 1


@numba.njit(cache=True)
def _hull_draw(hx, hh, hd, k, z, log_mass):
    """Draw from the piecewise-exponential upper hull of a log-concave density (the tangents
    at the ``k`` abscissae; the first slope must be positive and the last negative). Returns
    the point and the hull's log density there."""
    for i in range(k - 1):  # where tangents i and i + 1 cross
        if abs(hd[i] - hd[i + 1]) > 1e-12:
            z[i] = (hh[i + 1] - hh[i] - hx[i + 1] * hd[i + 1] + hx[i] * hd[i]) / (hd[i] - hd[i + 1])
            z[i] = min(max(z[i], hx[i]), hx[i + 1])
        else:
            z[i] = 0.5 * (hx[i] + hx[i + 1])
    top = -np.inf
    for i in range(k):
        lo = z[i - 1] if i > 0 else -np.inf
        hi = z[i] if i < k - 1 else np.inf
        slope = hd[i]
        if i == 0:  # (-inf, hi]: slope > 0
            log_mass[i] = hh[i] + slope * (hi - hx[i]) - math.log(slope)
        elif i == k - 1:  # [lo, inf): slope < 0
            log_mass[i] = hh[i] + slope * (lo - hx[i]) - math.log(-slope)
        else:
            width = hi - lo
            t = slope * width
            start = hh[i] + slope * (lo - hx[i])
            if abs(t) < 1e-10:
                log_mass[i] = start + math.log(max(width, 1e-300))
            elif t > 0:
                log_mass[i] = start + t + math.log(-math.expm1(-t) / slope)
            else:
                log_mass[i] = start + math.log(math.expm1(t) / slope)
        top = max(top, log_mass[i])
    total = 0.0
    for i in range(k):
        total += math.exp(log_mass[i] - top)
    target = np.random.random() * total
    i = 0
    acc = math.exp(log_mass[0] - top)
    while acc < target and i < k - 1:
        i += 1
        acc += math.exp(log_mass[i] - top)
    r = np.random.random()
    slope = hd[i]
    if i == 0:
        point = z[0] + math.log(max(r, 1e-300)) / slope if k > 1 else hx[0]
    elif i == k - 1:
        point = z[k - 2] + math.log(max(1.0 - r, 1e-300)) / slope
    else:
        lo, width = z[i - 1], z[i] - z[i - 1]
        t = slope * width
        if abs(t) < 1e-10:
            point = lo + r * width
        else:
            point = lo + math.log1p(r * math.expm1(t)) / slope
        point = min(max(point, lo), z[i])
    return point, hh[i] + slope * (point - hx[i])


@numba.njit(cache=True)
def _v_log_density(v, eta_e, c, n, prec_v):
    y = eta_e + v
    return c * y - n * _softplus(y) - 0.5 * prec_v * v * v, c - n * _sigmoid(y) - prec_v * v


#: Proposals from the likelihood (:func:`_v_draw_from`) before a cell turns to the tangent
LIKELIHOOD_TRIES = 8
#: Newton steps from 0 to the tangent point of :func:`_v_draw_from`, each clipped to
#: ``MAX_STEP``: one-sided cells far from their predictor (a wall against a wide spread:
#: LiveCodeBench's conditionals peak up to 7 logits from 0) need several; on LiveCodeBench's
#: fit the tangent kept under a fifth of the proposals in 9% of the one-sided cells after one
#: step, 4% after two, 0.9% after three, 0.07% after four
TANGENT_NEWTON = 4
NEWTON_ENOUGH = 0.25  # a Newton step this short ends the search for the tangent point


@numba.njit(cache=True)
def _likelihood_route(eta_e, c, n, prec_v):
    """Whether a cell's task-by-system effect is better drawn from its likelihood than from
    the tangent-tilted prior: with ``0 < c < n``, ``expit(x)^c (1 - expit(x))^(n - c)`` is
    the density of ``x = log G_c - log G_(n - c)`` (``G_a`` a Gamma(a) variable: the logit of
    a Beta(c, n - c)), so a proposal ``x`` kept with probability ``N(x - eta_e; 0,
    sigma_v) / N(0; 0, sigma_v)`` is an exact draw of ``eta_e + v``. It keeps about
    ``sqrt(I s2 / (1 + I s2)) exp(-(x^ - eta_e)^2 / (2 (s2 + 1 / I)))`` of its proposals
    (``I = n p^ (1 - p^)`` the likelihood's curvature at its mode ``x^ = logit(p^)``, ``p^ =
    c / n``, ``s2 = sigma_v^2``), the tangent about ``1 / sqrt(1 + I s2)``: the route
    whose share is larger."""
    if c <= 0.0 or c >= n:
        return False
    share = c / n
    info = n * share * (1.0 - share)
    spread = info / prec_v  # I sigma_v^2
    gap = math.log(share / (1.0 - share)) - eta_e
    return spread * math.exp(-gap * gap * info / (spread + 1.0)) > 1.0


@numba.njit(cache=True)
def _v_draw_from(rng, eta_e, c, n, prec_v, sigma_v):
    """One exact draw of v from ``N(v; 0, sigma_v) Bin(c | n, expit(eta_e + v))``, and its rate
    ``expit(eta_e + v)``.

    First up to ``TANGENT_TRIES`` proposals from the prior tilted by the tangent of the
    log-likelihood ``l(v)`` at ``v0`` (up to ``TANGENT_NEWTON`` Newton steps from 0 towards
    the conditional's mode, until one is shorter than ``NEWTON_ENOUGH``): ``l`` is concave, so
    ``l(v) <= l(v0) + b (v - v0)`` and ``N(v; 0, sigma_v) exp(b v)``, the normal
    ``N(sigma_v^2 b, sigma_v^2)``, is an envelope; a proposal is kept with probability
    ``exp(l(v) - l(v0) - b (v - v0))`` (rejection sampling: a kept proposal is an exact
    draw). Near the mode the proposal is centred where the conditional is, and it keeps
    about ``1 / sqrt(1 + n p (1 - p) sigma_v^2)`` of its proposals: nearly all for single
    trials. A squeeze decides most proposals without ``l(v)``: ``l'' = -n p (1 - p) >= -n /
    4``, so the log-probability of keeping is at least ``-n (v - v0)^2 / 8``, and a proposal
    whose exponential draw clears that is kept (the same decision as the full test, which
    runs only where the squeeze does not decide). One exponential ``exp(-|y|)`` serves a
    point's logistic and softplus alike. If no proposal is kept, adaptive rejection sampling
    of the log-concave density (:func:`_v_hull`). Either way the draw is exact: the first
    route changes the cost only. The proposals come from ``rng``, a NumPy Generator
    (ziggurat normals and exponentials: a third of the cost of numba's legacy normals); the
    hull, rarely reached (under 1% of the cells of the 25-system SWE-bench fit), draws from
    the legacy generator with its own buffers, so that a call passes scalars only.

    A cell with successes and failures whose likelihood is narrow against the prior (a
    spread of 4.7 on LiveCodeBench, where the tangent keeps 4% of its proposals there) is
    drawn from the likelihood instead, where that route keeps more: up to
    ``LIKELIHOOD_TRIES`` proposals, then the tangent (:func:`_likelihood_route`)."""
    if _likelihood_route(eta_e, c, n, prec_v):
        found, v, rate = _v_from_likelihood(rng, eta_e, c, n, prec_v)
        if found:
            return v, rate
    v0 = _newton_steps(eta_e, c, n, prec_v, 0.0, math.inf, TANGENT_NEWTON)
    y0 = eta_e + v0
    small0 = math.exp(-abs(y0))
    b = c - n * _sigmoid_of(y0, small0)
    return _v_tangent_tries(rng, eta_e, c, n, prec_v, sigma_v, v0, b, math.nan, TANGENT_TRIES)


@numba.njit(cache=True)
def _v_from_likelihood(rng, eta_e, c, n, prec_v):
    """Up to ``LIKELIHOOD_TRIES`` proposals from a cell's likelihood
    (:func:`_likelihood_route`): ``(kept, v, expit(eta_e + v))``."""
    for _ in range(LIKELIHOOD_TRIES):
        x = math.log(rng.gamma(c)) - math.log(rng.gamma(n - c))
        step = x - eta_e
        if rng.standard_exponential() >= 0.5 * prec_v * step * step:
            return True, step, _sigmoid(x)
    return False, 0.0, 0.0


@numba.njit(cache=True)
def _newton_steps(eta_e, c, n, prec_v, v0, step, steps):
    """Up to ``steps`` more Newton steps from ``v0`` towards the mode of :func:`_v_draw_from`'s
    conditional, each clipped to ``MAX_STEP``, until one (``step``: the last taken) is
    shorter than ``NEWTON_ENOUGH``: the tangent point."""
    for _ in range(steps):
        if abs(step) <= NEWTON_ENOUGH:
            break
        p0 = _sigmoid(eta_e + v0)
        step = _clip((c - n * p0 - prec_v * v0) / (prec_v + n * p0 * (1.0 - p0)))
        v0 += step
    return v0


@numba.njit(cache=True)
def _tangent_keeps(gap, c, n, y, small, l0, b, step):
    """The full test of a tangent proposal at ``y`` (``small = exp(-|y|)``), ``step`` from
    the tangent point, whose ``l(v0)`` is ``l0`` and slope ``b``: whether ``gap``, an
    exponential draw's negative, is within ``l(v) - l(v0) - b (v - v0)``."""
    return gap <= _binomial_cell(c, n, y, small, math.log1p(small))[0] - l0 - b * step


@numba.njit(cache=True)
def _v_tangent_tries(rng, eta_e, c, n, prec_v, sigma_v, v0, b, l0, tries):
    """:func:`_v_draw_from`'s tangent proposals at ``v0`` (slope ``b``, and ``l0 = l(v0)``
    or NaN until needed), up to ``tries`` of them, then the hull: ``(v, expit(eta_e + v))``.
    """
    squeeze = 0.125 * n
    centre = b / prec_v
    for _ in range(tries):
        v = centre + sigma_v * rng.standard_normal()
        gap = -rng.standard_exponential()
        y = eta_e + v
        small = math.exp(-abs(y))
        step = v - v0
        if gap > -squeeze * step * step:
            if math.isnan(l0):
                l0 = _conditional_log_density(eta_e, c, n, v0, 0.0)
            if not _tangent_keeps(gap, c, n, y, small, l0, b, step):
                continue
        return v, _sigmoid_of(y, small)
    M = HULL_POINTS
    v = _v_hull(
        eta_e, c, n, prec_v, np.empty(M), np.empty(M), np.empty(M), np.empty(M), np.empty(M)
    )
    return v, _sigmoid(eta_e + v)


@numba.njit(cache=True)
def _v_hull(eta_e, c, n, prec_v, hx, hh, hd, z, log_mass):
    """Adaptive rejection sampling of :func:`_v_draw_from`'s log-concave density, from its mode
    and a curvature scale on either side."""
    mode = _conditional_mode(eta_e, c, n, 0.0, prec_v)
    p = _sigmoid(eta_e + mode)
    scale = 1.0 / math.sqrt(prec_v + n * p * (1.0 - p))
    k = 0
    for side in (-1.0, 1.0):
        point = mode + side * scale
        h, d = _v_log_density(point, eta_e, c, n, prec_v)
        k = _hull_insert(hx, hh, hd, k, point, h, d)
    while True:
        point, upper = _hull_draw(hx, hh, hd, k, z, log_mass)
        h, d = _v_log_density(point, eta_e, c, n, prec_v)
        if math.log(max(np.random.random(), 1e-300)) <= h - upper:
            return point
        k = _hull_insert(hx, hh, hd, k, point, h, d)


@numba.njit(cache=True)
def _count_peaks(c, n):
    """Each cell's largest binomial log-likelihood (coefficient omitted), at ``p = c / n``:
    ``c log(c / n) + (n - c) log(1 - c / n)``; zero where every trial succeeded, or every one
    failed, or none was run."""
    out = np.zeros(c.shape)
    for p in range(c.shape[0]):
        for s in range(c.shape[1]):
            cq, nq = c[p, s], n[p, s]
            if 0.0 < cq < nq:
                out[p, s] = cq * math.log(cq / nq) + (nq - cq) * math.log(1.0 - cq / nq)
    return out


@numba.njit(cache=True)
def _prior_try(rng, eta_p, c_p, n_p, peak_p, sigma_e, sigma_v, paired, v):
    """One proposal of a task's effects from their prior, kept with probability ``L / L_max``
    (the binomial likelihood of the task's counts over its largest value, per cell at ``p = c
    / n``): a kept proposal is an exact draw of the task's effects from their conditional.
    Returns whether it was kept and the task effect; the task-by-system effects are written
    to ``v (S,)``. ``rng`` is a NumPy Generator (ziggurat normals and exponentials)."""
    e = sigma_e * rng.standard_normal()
    log_keep = 0.0
    for s in range(eta_p.shape[0]):
        v[s] = sigma_v * rng.standard_normal() if paired else 0.0
        if n_p[s] == 0.0:
            continue
        y = eta_p[s] + e + v[s]
        log_keep += c_p[s] * y - n_p[s] * _softplus(y) - peak_p[s]
    return -rng.standard_exponential() <= log_keep, e


@numba.njit(cache=True)
def _prior_rates(rng, eta, c, n, peak, sigma_e, sigma_v, paired, trials):
    """Each pattern's share of kept prior proposals (:func:`_prior_try`) over ``trials``
    tries under one set of parameters: which patterns :func:`_exact_task_sums` draws from
    their prior first."""
    P, S = eta.shape
    v = np.empty(S)
    out = np.zeros(P)
    for p in range(P):
        kept = 0
        for _ in range(trials):
            ok, _ = _prior_try(rng, eta[p], c[p], n[p], peak[p], sigma_e, sigma_v, paired, v)
            kept += ok
        out[p] = kept / trials
    return out


#: Prior proposals a task gets (:func:`_prior_try`) before it turns to the task effect's
#: hull, where its pattern's prior keeps at least ``PRIOR_KEEP`` of them at the reference
#: draw (below that the hull is cheaper: on the SWE-bench pair's 40 patterns the prior keeps
#: 0.02-0.84 of them, median 0.18; on a pattern of 25 systems next to none)
PRIOR_TRIES = 32
PRIOR_KEEP = 0.1


@numba.njit(cache=True)
def _start_hull(
    guess_p,
    eta_p,
    slot_p,
    c_p,
    n_p,
    prec_e,
    prec_v,
    log_sigma_v,
    paired,
    x,
    logw,
    tab,
    terms,
    ex,
    eh,
    ed,
):
    """The first points of a pattern's hull over the task effect's marginal (into ``ex``,
    ``eh``, ``ed``; returns their number). The hull needs points either side of the mode,
    not the mode: from the guess ``(mode, scale)``, each side steps out (doubling) until its
    slope points back at it."""
    k = 0
    for side in (-1.0, 1.0):
        reach = guess_p[1]
        while True:
            point = guess_p[0] + side * reach
            h, d, _ = _marginal_e(
                point,
                eta_p,
                slot_p,
                c_p,
                n_p,
                prec_e,
                prec_v,
                log_sigma_v,
                paired,
                x,
                logw,
                tab,
                terms,
            )
            k = _hull_insert(ex, eh, ed, k, point, h, d)
            if side * d < 0.0 or k >= ex.shape[0]:
                break
            reach *= 2.0
    return k


@numba.njit(cache=True)
def _exact_task_sums(
    rng,
    eta,
    c,
    n,
    slot,
    n_tables,
    sigma_e,
    sigma_v,
    paired,
    x,
    logw,
    ks,
    code,
    needed,
    weight,
    order,
    start,
    guess,
    prior,
    peak,
    out,
    rates,
):
    """For one draw: every task's rates drawn from their joint conditional, and
    ``out (S, Q) += weight[j, s] f(p[s, j])`` summed over the tasks.

    Tasks of patterns marked in ``prior (P,)`` first try up to ``PRIOR_TRIES`` proposals of
    all their effects from the prior (:func:`_prior_try`, ``peak`` from
    :func:`_count_peaks`): with few systems and few trials most are kept, and neither the
    hull nor the tables below are needed. Otherwise (or if none is kept) the task effect
    comes from its marginal (log-concave: the integral of a log-concave function), then each
    system's task-by-system effect from its conditional given it (:func:`_v_draw_from`). The
    marginal is read from the likelihood kernel's tables of inner integrals
    (:func:`_marginal_e`; ``slot (P, S)`` names each cell's of ``n_tables``), filled for this
    draw's ``sigma_v`` as the draws reach them, and drawn by adaptive rejection sampling
    (Gilks and Wild 1992) with a hull built once per pattern (when first needed) and shared
    by the pattern's tasks, started either side of ``guess[p]`` (a mode and a scale; any
    guess gives the same distribution, a good one fewer evaluations). Either route gives
    exact draws, so which one a task takes changes the cost only. ``weight (J, S)``; tasks of
    pattern ``p`` are ``order[start[p]:start[p + 1]]``. The proposals and acceptances draw
    from ``rng``, a NumPy Generator; the hulls' own draws from the legacy generator, seeded
    by the caller. With a non-empty ``rates (S, J)`` the rates themselves are written there
    (where ``weight`` is not zero) instead of the sums.
    """
    P, S = eta.shape
    Q = ks.shape[0]
    M = HULL_POINTS
    prec_e = 1.0 / sigma_e**2
    prec_v = 1.0 / sigma_v**2 if paired else 0.0
    log_sigma_v = math.log(sigma_v) if paired else 0.0
    terms = np.empty((2, max(x.shape[0], INNER_NODES)))
    tab = np.empty((max(n_tables, 1), TABLE_SIZE if paired else 1, 5))
    tab[:, :, 3] = 0.0  # no cell ready: this draw's sigma_v
    ex, eh, ed = np.empty(M), np.empty(M), np.empty(M)
    z, log_mass = np.empty(M), np.empty(M)
    v = np.zeros(S)
    for p in range(P):
        if start[p + 1] == start[p]:
            continue
        k = -1  # no hull yet
        for i in range(start[p], start[p + 1]):
            j = order[i]
            kept = False
            e = 0.0
            if prior[p]:
                for _ in range(PRIOR_TRIES):
                    kept, e = _prior_try(
                        rng, eta[p], c[p], n[p], peak[p], sigma_e, sigma_v, paired, v
                    )
                    if kept:
                        break
            if not kept:
                if k < 0:
                    k = _start_hull(
                        guess[p],
                        eta[p],
                        slot[p],
                        c[p],
                        n[p],
                        prec_e,
                        prec_v,
                        log_sigma_v,
                        paired,
                        x,
                        logw,
                        tab,
                        terms,
                        ex,
                        eh,
                        ed,
                    )
                while True:
                    e, upper = _hull_draw(ex, eh, ed, k, z, log_mass)
                    h, d, _ = _marginal_e(
                        e,
                        eta[p],
                        slot[p],
                        c[p],
                        n[p],
                        prec_e,
                        prec_v,
                        log_sigma_v,
                        paired,
                        x,
                        logw,
                        tab,
                        terms,
                    )
                    if -rng.standard_exponential() <= h - upper:
                        break
                    k = _hull_insert(ex, eh, ed, k, e, h, d)
                for s in range(S):
                    if weight[j, s] != 0.0 and paired:
                        v[s], _ = _v_draw_from(
                            rng, eta[p, s] + e, c[p, s], n[p, s], prec_v, sigma_v
                        )
            for s in range(S):
                ws = weight[j, s]
                if ws == 0.0:
                    continue
                rate = _sigmoid(eta[p, s] + e + (v[s] if paired else 0.0))
                if rates.shape[0]:
                    rates[s, j] = rate
                    continue
                for q in range(Q):
                    out[s, q] += ws * _f(rate, ks[q], code, needed[q])


@numba.njit(cache=True)
def _marginal_guesses(eta, c, n, slot, n_tables, sigma_e, sigma_v, paired, x, logw):
    """Each pattern's task-effect mode and Laplace sd ``(P, 2)`` under one set of parameters
    (:func:`_marginal_mode`): where :func:`_exact_task_sums` starts its hulls in every draw."""
    P = eta.shape[0]
    prec_e = 1.0 / sigma_e**2
    prec_v = 1.0 / sigma_v**2 if paired else 0.0
    log_sigma_v = math.log(sigma_v) if paired else 0.0
    terms = np.empty((2, max(x.shape[0], INNER_NODES)))
    tab = np.empty((max(n_tables, 1), TABLE_SIZE if paired else 1, 5))
    tab[:, :, 3] = 0.0
    guess = np.empty((P, 2))
    for p in range(P):
        e, _, s_e = _marginal_mode(
            eta[p],
            slot[p],
            c[p],
            n[p],
            prec_e,
            prec_v,
            log_sigma_v,
            paired,
            x,
            logw,
            tab,
            terms,
            0.05,
        )
        guess[p, 0], guess[p, 1] = e, s_e
    return guess


@numba.njit(cache=True)
def _exact_setup(rng, eta_ref, c, n, sigma_e, sigma_v, paired, x, logw, prior_keep):
    """What every draw of :func:`_exact_block` shares, from the reference draw's predictors
    ``eta_ref (P, S)`` and spreads: each cell's table slot, the number of tables, the hulls'
    starting guesses, which patterns try their prior first (those whose prior keeps at least
    ``prior_keep`` of its proposals there) and each cell's peak likelihood."""
    slot, _, n_tables = _table_slots(c, n, True)
    guess = _marginal_guesses(eta_ref, c, n, slot, n_tables, sigma_e, sigma_v, paired, x, logw)
    peak = _count_peaks(c, n)
    prior = _prior_rates(rng, eta_ref, c, n, peak, sigma_e, sigma_v, paired, 64) >= prior_keep
    return slot, n_tables, guess, prior, peak


@numba.njit(cache=True, nogil=True)
def _exact_block(
    rng,
    seed,
    first,
    last,
    eta,
    rows,
    c,
    n,
    slot,
    n_tables,
    guess,
    prior,
    peak,
    sigma_e,
    sigma_v,
    paired,
    x,
    logw,
    ks,
    code,
    needed,
    weight,
    order,
    start,
    out,
    rates,
):
    """:func:`_exact_task_sums` for draws ``first`` to ``last`` (one stream: ``rng``, and the
    legacy generator seeded with ``seed`` for the hulls). Pattern ``p``'s predictors in draw
    ``d`` are ``eta[d, rows[p]]``; a non-empty ``rates (D, S, J)`` takes the rates
    themselves. Releases the GIL: blocks run on threads."""
    np.random.seed(seed)
    none = np.empty((0, 0))
    for d in range(first, last):
        _exact_task_sums(
            rng,
            eta[d][rows],
            c,
            n,
            slot,
            n_tables,
            sigma_e[d],
            sigma_v[d],
            paired,
            x,
            logw,
            ks,
            code,
            needed,
            weight,
            order,
            start,
            guess,
            prior,
            peak,
            out[d],
            rates[d] if rates.shape[0] else none,
        )


#: Posterior draws per random stream of the per-system draws given sampled task effects: each
#: (system, block of draws) has its own seed, so a system's draws do not depend on which other
#: systems are drawn with it (a comparison of two systems reads the same draws as a summary of
#: all), and the blocks spread over threads.
LATENT_BLOCK = 250


@numba.njit(cache=True)
def _v_rates(rng, y, c, n, sigma_v, rate, work, bits):
    """:func:`_v_draw_from`'s rates for a row of cells at once: ``rate[i] = expit(y[i] +
    v[i])``, each ``v[i]`` an exact draw from its cell's conditional given ``y[i]`` (``c``,
    ``n`` the cells' counts). The first tangent proposal of every cell is made and judged in
    straight-line arithmetic over the row, which the compiler vectorises (the exponentials by
    :func:`_neg_abs_exp`), where one cell's chain of scalar exponentials and divisions costs
    its latency; the proposals' normal and exponential draws come from ``rng`` cell by cell.
    A squeeze keeps most proposals of single trials untested; where it leaves many undecided
    the full test runs over the row too (the softplus by :func:`_log1p_small`). A cell
    whose proposal is refused gets more proposals at its tangent, then the hull (given a
    refusal, any exact draw keeps the mixture exact). Cells better drawn from their
    likelihood (:func:`_likelihood_route`) are drawn from it, and join the row's tangent
    proposals only if none of those proposals is kept. ``work (7, m)`` and ``bits (m,)``
    are buffers of the row's length."""
    m = y.shape[0]
    prec_v = 1.0 / sigma_v**2
    small, v0, b, z, gap, y1, route = (
        work[0],
        work[1],
        work[2],
        work[3],
        work[4],
        work[5],
        work[6],
    )
    _neg_abs_exp(y, small, bits)
    for i in range(m):  # the first Newton step, over the row
        p0 = _sigmoid_of(y[i], small[i])
        v0[i] = _clip((c[i] - n[i] * p0) / (prec_v + n[i] * p0 * (1.0 - p0)))
    for i in range(m):  # the few cells whose first step was long take more, one by one
        v0[i] = _newton_steps(y[i], c[i], n[i], prec_v, v0[i], v0[i], TANGENT_NEWTON - 1)
        y1[i] = y[i] + v0[i]  # y1: the tangent points y + v0, for now
    _neg_abs_exp(y1, small, bits)
    for i in range(m):
        b[i] = c[i] - n[i] * _sigmoid_of(y1[i], small[i])
    for i in range(m):
        route[i] = False
        if _likelihood_route(y[i], c[i], n[i], prec_v):
            route[i], _, rate[i] = _v_from_likelihood(rng, y[i], c[i], n[i], prec_v)
        if route[i]:
            z[i], gap[i] = 0.0, 0.0
            continue
        z[i] = rng.standard_normal()
        gap[i] = -rng.standard_exponential()
    for i in range(m):
        v = b[i] / prec_v + sigma_v * z[i]
        z[i] = v - v0[i]  # z: the step from the tangent point
        y1[i] = y[i] + v  # y1: the proposals
    _neg_abs_exp(y1, small, bits)
    for i in range(m):
        if not route[i]:
            rate[i] = _sigmoid_of(y1[i], small[i])
    undecided = 0  # proposals the squeeze does not keep: l'' >= -n / 4
    for i in range(m):
        undecided += not route[i] and gap[i] > -0.125 * n[i] * z[i] * z[i]
    if 4 * undecided <= m:  # few (single trials): the full test cell by cell
        for i in range(m):
            if route[i] or gap[i] <= -0.125 * n[i] * z[i] * z[i]:
                continue
            l0 = _conditional_log_density(y[i], c[i], n[i], v0[i], 0.0)
            if not _tangent_keeps(gap[i], c[i], n[i], y1[i], small[i], l0, b[i], z[i]):
                _, rate[i] = _v_tangent_tries(
                    rng, y[i], c[i], n[i], prec_v, sigma_v, v0[i], b[i], l0, TANGENT_TRIES - 1
                )
        return
    # many (several trials, a wide spread): the full test over the row, l(v) - l(v0) - b (v -
    # v0) with l(v) = c y - n softplus(y)
    _log1p_small(small, small)  # small: log1p(exp(-|y1|))
    for i in range(m):
        gap[i] -= c[i] * y1[i] - n[i] * (max(y1[i], 0.0) + small[i]) - b[i] * z[i]
        y1[i] = y[i] + v0[i]  # y1: the tangent points again
    _neg_abs_exp(y1, small, bits)
    _log1p_small(small, small)
    for i in range(m):
        # gap: the exponential draw's negative less l(v) - b (v - v0); kept if gap <= -l(v0)
        l0 = c[i] * y1[i] - n[i] * (max(y1[i], 0.0) + small[i])
        if not route[i] and gap[i] > -l0:  # refused: more tangent proposals, then the hull
            _, rate[i] = _v_tangent_tries(
                rng, y[i], c[i], n[i], prec_v, sigma_v, v0[i], b[i], l0, TANGENT_TRIES - 1
            )


@numba.njit(cache=True, nogil=True)
def _latent_block(
    rng,
    seed,
    s,
    first,
    last,
    alpha,
    u,
    w,
    e,
    sigma_v,
    cluster,
    stratum,
    c,
    n,
    paired,
    ks,
    code,
    needed,
    weight,
    out,
    rates,
):
    """System ``s``'s draws ``first`` to ``last`` (one stream: ``rng``, and the legacy
    generator seeded with ``seed`` for the hull): every task's rate given the draw's sampled
    task effect, the task-by-system effects drawn exactly from their one-dimensional
    conditionals a row of tasks at a time (:func:`_v_rates`); ``out (D, S, Q) += weight[j, s]
    f(p[s, j])``, or with a non-empty ``rates (D, S, J)``, the rates themselves (NaN where
    the system did not run the task)."""
    np.random.seed(seed)
    J = c.shape[0]
    keep = np.zeros(J, dtype=np.bool_)
    for j in range(J):
        keep[j] = n[j, s] > 0.0 and (weight[j, s] != 0.0 or rates.shape[0] > 0)
    cells = np.flatnonzero(keep)
    m = cells.shape[0]
    cs, ns, ws = np.empty(m), np.empty(m), np.empty(m)
    for i in range(m):
        cs[i], ns[i], ws[i] = c[cells[i], s], n[cells[i], s], weight[cells[i], s]
    groups, strata = cluster[cells], stratum[cells]
    y, rate = np.empty(m), np.empty(m)
    work, bits = np.empty((7, m)), np.empty(m, dtype=np.int64)
    for d in range(first, last):
        for i in range(m):
            g = groups[i]
            y[i] = alpha[d, s, strata[i]] + u[d, g] + w[d, s, g] + e[d, cells[i]]
        if paired:
            _v_rates(rng, y, cs, ns, sigma_v[d], rate, work, bits)
        else:
            for i in range(m):
                rate[i] = _sigmoid(y[i])
        if rates.shape[0]:
            for i in range(m):
                rates[d, s, cells[i]] = rate[i]
            continue
        for q in range(ks.shape[0]):
            total = 0.0
            for i in range(m):
                total += ws[i] * _f(rate[i], ks[q], code, needed[q])
            out[d, s, q] += total


def latent_task_draws(
    alpha,
    u,
    w,
    e,
    sigma_v,
    cluster,
    stratum,
    c,
    n,
    paired,
    rng,
    ks=None,
    metric="pass@k",
    weight=None,
    tau=None,
    systems=None,
):
    """The tasks estimand (or the task rates) from a full-latent fit's task effects.

    A full-latent fit samples every task's effect jointly with the parameters, so its draws
    ``e (D, J)`` are exact posterior draws; given them, each system's task-by-system effect
    has a one-dimensional log-concave conditional, drawn exactly, which needs no quadrature.
    ``alpha (D, S, H)``, ``u (D, G)``, ``w (D, S, G)``, ``sigma_v (D,)``, ``cluster`` and
    ``stratum (J,)`` codes, ``c``, ``n (S, J)``. With ``weight (J, S)`` returns ``sum_j
    weight[j, s] f(p[s, j])`` as ``(D, S, k)``; without, the rates ``(D, S, J)``. Only the
    systems whose indices ``systems`` lists (default: all) are drawn, the others left zero
    (NaN for rates); each system's draws come from its own streams (:data:`LATENT_BLOCK`),
    so they are the same whichever systems are drawn beside it. The streams run on numba's
    threads (:func:`_latent_block` releases the GIL).
    """
    D = alpha.shape[0]
    S, J = c.shape
    as_float = lambda a: np.ascontiguousarray(a, dtype=float)  # noqa: E731
    seeds = rng.integers(0, 2**31 - 1, size=(S, -(-D // LATENT_BLOCK)))
    systems = range(S) if systems is None else np.asarray(systems).tolist()
    if weight is None:
        code, needed, ks = 0, np.zeros(0), np.zeros(0)
        out, rates, weight = np.zeros((0, 0, 0)), np.full((D, S, J), np.nan), np.zeros((J, S))
    else:
        code, needed = metric_arguments(metric, ks, tau)
        out, rates = np.zeros((D, S, len(ks))), np.zeros((0, 0, 0))
    shared = (
        as_float(alpha),
        as_float(u),
        as_float(w),
        as_float(e),
        as_float(sigma_v),
        np.ascontiguousarray(cluster, dtype=np.int64),
        np.ascontiguousarray(stratum, dtype=np.int64),
        as_float(c.T),
        as_float(n.T),
        paired,
        as_float(ks),
        code,
        needed,
        as_float(weight),
        out,
        rates,
    )

    def block(item):
        s, b = item
        seed = int(seeds[s, b])
        _latent_block(
            np.random.Generator(np.random.PCG64(seed)),
            seed,
            s,
            b * LATENT_BLOCK,
            min(D, (b + 1) * LATENT_BLOCK),
            *shared,
        )

    items = [(s, b) for s in systems for b in range(seeds.shape[1])]
    with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        list(pool.map(block, items))
    return rates if rates.shape[0] else out


def exact_task_sums(
    eta,
    c,
    n,
    sigma_e,
    sigma_v,
    paired,
    ks,
    metric,
    weight,
    inverse,
    rng,
    rules=None,
    tau=None,
    rows=None,
    prior_keep=PRIOR_KEEP,
):
    """The tasks estimand drawn task by task: per posterior draw, every task's rates in all
    systems drawn jointly from their conditional (no normal approximation of the mean over
    tasks), ``sum_j weight[j, s] f(p[s, j])`` as ``(D, S, k)``.

    ``eta (D, P, S)``, or with ``rows (P,)`` the distinct predictors ``(D, R, S)`` and each
    pattern's row of them (memory in the rows, not the patterns); ``weight (J, S)`` each
    task's weight in each system's value, ``inverse (J,)`` the pattern of each task. The
    draws are exact up to the interpolation of the inner integrals (over the task-by-system
    effects) inside the task effect's marginal: the likelihood kernel's tables. Patterns
    whose prior keeps at least ``prior_keep`` of its proposals at the reference draw try
    those first (:func:`_prior_try`); the draws are exact either way.
    """
    code, needed = metric_arguments(metric, ks, tau)
    out = np.zeros((eta.shape[0], eta.shape[2], len(ks)))
    _exact(
        eta,
        c,
        n,
        sigma_e,
        sigma_v,
        paired,
        np.asarray(ks, float),
        code,
        needed,
        weight,
        inverse,
        rng,
        rules,
        rows,
        out,
        np.empty((0, 0, 0)),
        prior_keep,
    )
    return out


def exact_task_rates(
    eta,
    c,
    n,
    sigma_e,
    sigma_v,
    paired,
    keep,
    inverse,
    rng,
    rules=None,
    rows=None,
    prior_keep=PRIOR_KEEP,
):
    """Every task's rates, per posterior draw drawn jointly over the systems from their
    conditional, exactly as :func:`exact_task_sums` draws them: ``(D, S, J)``, NaN where
    ``keep (J, S)`` is false (a system not asked for, or one that did not run the task).

    ``eta``, ``rows``, ``inverse`` and ``prior_keep`` as in :func:`exact_task_sums`.
    """
    D, S, J = eta.shape[0], eta.shape[2], len(inverse)
    rates = np.full((D, S, J), np.nan)
    _exact(
        eta,
        c,
        n,
        sigma_e,
        sigma_v,
        paired,
        np.ones(1),
        0,
        np.ones(1),
        np.asarray(keep, dtype=float),
        inverse,
        rng,
        rules,
        rows,
        np.zeros((D, S, 1)),
        rates,
        prior_keep,
    )
    return rates


def _exact(
    eta,
    c,
    n,
    sigma_e,
    sigma_v,
    paired,
    ks,
    code,
    needed,
    weight,
    inverse,
    rng,
    rules,
    rows,
    out,
    rates,
    prior_keep,
):
    """:func:`_exact_block` from NumPy arrays, over blocks of :data:`LATENT_BLOCK` draws on
    numba's threads, each block with its own seeds (so the draws do not depend on how many
    threads run them); the hulls start from the modes of the reference draw, the one with
    the median task spread."""
    rules = rules or Rules()
    D = eta.shape[0]
    P = c.shape[0]
    rows = np.arange(P, dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
    order = np.argsort(inverse, kind="stable").astype(np.int64)
    start = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=P))]).astype(np.int64)
    c, n = np.ascontiguousarray(c, dtype=float), np.ascontiguousarray(n, dtype=float)
    eta = np.ascontiguousarray(eta, dtype=float)
    sigma_e = np.ascontiguousarray(sigma_e, dtype=float)
    sigma_v = np.ascontiguousarray(sigma_v, dtype=float)
    blocks = -(-D // LATENT_BLOCK)
    seeds = rng.integers(0, 2**31 - 1, size=blocks + 1)
    reference = int(np.argsort(sigma_e, kind="stable")[D // 2])
    slot, n_tables, guess, prior, peak = _exact_setup(
        np.random.Generator(np.random.PCG64(int(seeds[-1]))),
        eta[reference][rows],
        c,
        n,
        sigma_e[reference],
        sigma_v[reference],
        paired,
        rules.x,
        rules.logw,
        float(prior_keep),
    )
    shared = (
        eta,
        rows,
        c,
        n,
        slot,
        n_tables,
        guess,
        prior,
        peak,
        sigma_e,
        sigma_v,
        paired,
        rules.x,
        rules.logw,
        ks,
        code,
        needed,
        np.ascontiguousarray(weight, dtype=float),
        order,
        start,
        out,
        rates,
    )

    def block(b):
        seed = int(seeds[b])
        _exact_block(
            np.random.Generator(np.random.PCG64(seed)),
            seed,
            b * LATENT_BLOCK,
            min(D, (b + 1) * LATENT_BLOCK),
            *shared,
        )

    with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        list(pool.map(block, range(blocks)))


def log_marginal(eta, c, n, sigma_e, sigma_v=None, n_nodes: int = N_NODES) -> np.ndarray:
    """Log marginal likelihood of each pattern (binomial coefficients omitted).

    ``eta``, ``c``, ``n`` of shape ``(P, S)``; ``sigma_v=None`` means no task-by-system effect.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models._quadrature import log_marginal
    >>> round(float(log_marginal(np.zeros((1, 1)), np.ones((1, 1)), np.ones((1, 1)), 1e-8)[0]), 8)
    -0.69314718
    """
    arrays = Rules(n_nodes).arrays()
    eta = np.atleast_2d(np.asarray(eta, dtype=float))
    c, n = np.atleast_2d(np.asarray(c, float)), np.atleast_2d(np.asarray(n, float))
    out = np.empty(eta.shape[0])
    for p in range(eta.shape[0]):
        out[p] = loglik_and_grad(
            eta[p : p + 1],
            c[p : p + 1],
            n[p : p + 1],
            np.ones(1),
            float(sigma_e),
            1.0 if sigma_v is None else float(sigma_v),
            sigma_v is not None,
            *arrays,
        )[0]
    return out


#: Hash of this module's source: part of every compiled-code cache key outside numba's.
KERNEL_HASH = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


@numba.njit(cache=True)
def _zero_sum(f, out):
    """``out (G,) = B f`` for ``f (G - 1,)``, with ``B`` the zero-sum basis of
    :func:`bayeval.models._collapsed.zero_sum_basis`: the first ``G - 1`` columns of the
    reflection ``I - 2 v v' / v'v``, ``v = e_G - 1 / sqrt(G)``, which maps the last axis onto the
    mean direction, so its other columns are orthonormal and sum to zero. O(G), where the
    dense basis cost O(G^2) (Terminal-Bench's 70 clusters: most of a gradient)."""
    G = out.shape[0]
    if G == 1:  # one cluster: no zero-sum part
        out[0] = 0.0
        return
    r = 1.0 / math.sqrt(G)
    total = 0.0
    for j in range(G - 1):
        total += f[j]
    coef = -2.0 * r * total / (2.0 - 2.0 * r)  # 2 v'[f; 0] / v'v
    for j in range(G - 1):
        out[j] = f[j] + coef * r
    out[G - 1] = -coef * (1.0 - r)


@numba.njit(cache=True)
def _zero_sum_adjoint(g, scale, out):
    """``out (G - 1,) += scale B' g`` for ``g (G,)`` (see :func:`_zero_sum`)."""
    G = g.shape[0]
    if G == 1:
        return
    r = 1.0 / math.sqrt(G)
    vg = (1.0 - r) * g[G - 1]
    for j in range(G - 1):
        vg -= r * g[j]
    coef = 2.0 * vg / (2.0 - 2.0 * r)
    for j in range(G - 1):
        out[j] += scale * (g[j] + coef * r)


_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (Cody and Waite): k ln 2 is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00


@numba.njit(cache=True, fastmath={"contract"})
def _neg_abs_exp(x, out, bits):
    """``out = exp(-|x|)`` for a vector ``x``, in straight-line arithmetic that the compiler
    vectorises (:func:`_softplus_parts` says how); ``bits`` is an int64 buffer of the same
    length."""
    m = x.shape[0]
    for i in range(m):
        z = max(-abs(x[i]), -700.0)
        k = math.floor(z * _INV_LN2 + 0.5)
        r = z - k * _LN2_HI - k * _LN2_LO
        p = 1.0 / 479001600.0
        p = 1.0 / 39916800.0 + r * p
        p = 1.0 / 3628800.0 + r * p
        p = 1.0 / 362880.0 + r * p
        p = 1.0 / 40320.0 + r * p
        p = 1.0 / 5040.0 + r * p
        p = 1.0 / 720.0 + r * p
        p = 1.0 / 120.0 + r * p
        p = 1.0 / 24.0 + r * p
        p = 1.0 / 6.0 + r * p
        p = 0.5 + r * p
        p = 1.0 + r * p
        out[i] = 1.0 + r * p
        bits[i] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for i in range(m):
        out[i] *= scale[i]


@numba.njit(cache=True, fastmath={"contract"}, inline="always")
def _log1p_small(small, out):
    """``out = log1p(small)`` for a vector ``small`` in [0, 1] (it may be ``small`` itself),
    in straight-line arithmetic that the compiler vectorises (:func:`_softplus_parts` says
    how). Inlined where it is called, so that the nutpie C functions and the kernel compile
    the same arithmetic into :func:`_softplus_parts`."""
    for i in range(small.shape[0]):
        e = small[i]
        t = e / (2.0 + e)
        z = t * t
        q = 1.0 / 35.0
        for odd in range(33, 1, -2):
            q = 1.0 / odd + z * q
        out[i] = 2.0 * t * (1.0 + z * q)


@numba.njit(cache=True, fastmath={"contract"})
def _softplus_parts(y):
    """``small = exp(-|y|)`` and ``log1p(small)`` for every element of ``y (J, S)``, in
    straight-line arithmetic that the compiler vectorises, where each scalar call to the math
    library costs 6-7 ns (most of a full-latent gradient at 18,000 cells): the exponential by
    Cody-Waite reduction ``x = k ln 2 + r``, ``|r| <= ln 2 / 2``, a degree-12 Taylor polynomial
    in ``r`` (remainder below 1e-16) and the exponent ``k`` written into the bits of ``2^k``;
    ``log1p(e) = 2 atanh(s)`` with ``s = e / (2 + e) <= 1/3`` by its series to ``s^35``
    (remainder below 1e-17). Both agree with the math library to a few units in the last
    place (tested); below ``exp(-700)`` the exponential is taken as ``exp(-700)``, whose
    contribution to a log density is nil."""
    flat = y.ravel()
    m = flat.shape[0]
    small = np.empty(m)
    log_term = np.empty(m)
    _neg_abs_exp(flat, small, np.empty(m, dtype=np.int64))
    _log1p_small(small, log_term)
    return small.reshape(y.shape), log_term.reshape(y.shape)


@numba.njit(cache=True)
def _task_rotation(spec, const):
    """Whether the full-latent form samples its task effects centred (``spec[11]``), and then
    the rank ``r`` of the subspace the data do not see apart from the intercepts and cluster
    effects and the ``r`` Householder vectors ``(r, J)`` whose reflections' product ``H`` has
    that subspace as its first ``r`` columns (stored after the quadrature rules); with
    ``spec[11] == 2`` the task effects' cluster components are folded into the centred
    cluster coordinates, through the map ``(G - 1, r)`` stored next
    (:func:`bayeval.models._collapsed.task_cluster_fold`); with ``spec[11] == 3`` they are
    paired with the cluster effects instead (:func:`_unpair`; 4: the same, the task effects
    standardised)."""
    J = spec[9]
    if spec.shape[0] < 12 or spec[11] == 0 or spec[11] == 4 or J == 0:
        return False, 0, np.zeros((0, max(J, 1))), False, np.zeros((0, 0))
    k, r = _reflections_at(spec, const)
    vectors = const[k + 1 : k + 1 + r * J].reshape((r, J))
    if spec[11] != 2:
        return True, r, vectors, False, np.zeros((0, 0))
    k += 1 + r * J
    return True, r, vectors, True, const[k : k + (spec[2] - 1) * r].reshape((spec[2] - 1, r))


@numba.njit(cache=True)
def _reflections_at(spec, const):
    """Where the centred task effects' constants start in ``const`` (their rank ``r``, then
    the reflections and what follows them), and ``r``."""
    S = spec[0]
    k = 7 + S * S + S + 2 * (spec[5] + spec[6] + spec[7])
    return k, int(const[k])


@numba.njit(cache=True)
def _reflect(vectors, x, transpose):
    """``x <- H x`` in place with ``H = H_1 ... H_r``, ``H_i = I - 2 v_i v_i'`` (unit ``v_i``,
    the rows of ``vectors``), or ``x <- H' x`` with ``transpose``."""
    r = vectors.shape[0]
    for step in range(r):
        i = step if transpose else r - 1 - step
        dot = 0.0
        for j in range(x.shape[0]):
            dot += vectors[i, j] * x[j]
        for j in range(x.shape[0]):
            x[j] -= 2.0 * dot * vectors[i, j]


@numba.njit(cache=True)
def _task_effects(tail, J, sigma_e, centred, r, vectors):
    """The task effects ``e (J,)`` from the first ``J`` coordinates of the full-latent tail.

    Non-centred, ``e = sigma_e z``, ``z`` standard normal. Centred, ``e = H (sigma_e z_r,
    y)``: the first ``r`` coordinates, standard normal, span the directions the data do not
    see apart from the intercepts and cluster effects (the task effects' means over each
    cluster and stratum), which follow their prior; the other ``J - r`` are the effects' own
    coordinates in the rest of the space, normal with sd ``sigma_e``, pinned by the data. ``H``
    is orthogonal, so ``e ~ N(0, sigma_e^2 I)`` either way."""
    e = np.empty(J)
    for j in range(J):
        e[j] = sigma_e * tail[j] if (not centred or j < r) else tail[j]
    if centred:
        _reflect(vectors, e, False)
    return e


@numba.njit(cache=True)
def _task_prior(tail, g_e, J, sigma_e, centred, r, vectors, g_tail):
    """The log prior of the task-effect coordinates (:func:`_task_effects`, log-Jacobian
    included); adds to ``g_tail`` their gradient and that of the likelihood, given in the
    effects as ``g_e (J,)``. Returns the log prior and the derivative of both in ``sigma_e``."""
    g = g_e.copy()
    if centred:
        _reflect(vectors, g, True)
    logp, g_se = 0.0, 0.0
    for j in range(J):
        t = tail[j]
        if not centred or j < r:
            logp -= 0.5 * t * t
            g_tail[j] += sigma_e * g[j] - t
            g_se += t * g[j]
        else:
            f = t / sigma_e
            logp -= 0.5 * f * f
            g_tail[j] += g[j] - f / sigma_e
            g_se += f * f / sigma_e
    if centred:
        logp -= (J - r) * math.log(sigma_e)
        g_se -= (J - r) / sigma_e
    return logp, g_se


@numba.njit(cache=True)
def _latent_y(e, tail, eta, sigma_v, paired):
    """The full-latent form's logits ``y = eta + e + sigma_v z_v`` ``(J, S)``.

    ``e`` holds the task effects (:func:`_task_effects` of the tail's first ``J``
    coordinates); with several systems the tail continues with the task-by-system effects
    ``z_v`` (task-major, ``j S + s``), non-centred, each ``z`` standard normal."""
    J, S = eta.shape
    y = np.empty((J, S))
    for j in range(J):
        for s in range(S):
            y[j, s] = eta[j, s] + e[j] + (sigma_v * tail[J + j * S + s] if paired else 0.0)
    return y


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _binomial_cell(cc, nn, yy, small, log_term):
    """A cell's ``c y - n softplus(y)`` and its derivative in ``y``, ``small = exp(-|y|)``
    and ``log_term = log1p(small)`` given (:func:`_softplus_parts`)."""
    rate = (1.0 if yy >= 0.0 else small) / (1.0 + small)
    return cc * yy - nn * (max(yy, 0.0) + log_term), cc - nn * rate


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _latent_cells(tail, y, small, log_term, c, n, sigma_v, paired, g_tail):
    """The full-latent form's log density of the task-by-system effects and of the counts
    given the logits: each cell adds ``c y - n softplus(y)`` (binomial coefficients left out),
    with ``small = exp(-|y|)`` and ``log_term = log1p(small)`` given (``softplus(y) = max(y, 0)
    + log_term``: :func:`_softplus_parts`). Returns the sum (the standard normal log densities
    of ``z_v`` included), the gradient in the predictors ``(J, S)``, in the task effects
    ``(J,)`` and the part for ``sigma_v``; adds the gradient in ``z_v`` (see
    :func:`_latent_y`) to ``g_tail``."""
    J, S = y.shape
    total, g_sv = 0.0, 0.0
    g_eta = np.zeros((J, S))
    g_e = np.zeros(J)
    for j in range(J):
        acc = 0.0
        for s in range(S):  # no branch on n: a cell not run has c = n = 0 and adds nothing
            zv = tail[J + j * S + s] if paired else 0.0
            value, d = _binomial_cell(c[j, s], n[j, s], y[j, s], small[j, s], log_term[j, s])
            total += value
            g_eta[j, s] = d
            acc += d
            if paired:
                total -= 0.5 * zv * zv
                g_tail[J + j * S + s] += sigma_v * d - zv
                g_sv += zv * d
        g_e[j] = acc
    return total, g_eta, g_e, g_sv


#: The full-latent form's cell tables (:func:`cell_tables`): ``log
#: sigma_v`` from ``log 0.03`` in steps of 0.02 to ``log 20`` (:data:`CELL_TABLE_SIZE`
#: columns), ``y`` on :data:`TABLE_LOW`'s grid. In steps of 0.1 the interpolant in ``log
#: sigma_v`` erred by up to 1e-4 where ``log g > -30`` (``y`` up to 12 at ``sigma_v`` near
#: one: ``log g`` falls as ``-y^2 / (2 sigma_v^2)`` there); the error falls as the step's
#: fourth power.
CELL_TABLE_LOW = math.log(0.03)
CELL_TABLE_STEP = 0.02
CELL_TABLE_SIZE = 326
#: The Gauss-Hermite nodes about the mode with which :func:`cell_tables` integrates counts of
#: at least two successes and two failures (the fits' nine nodes erred by up to 1.2e-4 in
#: ``log g`` at 3 of 10; 31 by under 1e-8). Fewer successes or failures take the trapezoid.
CELL_TABLE_NODES = 31
#: The most trials a cell table is built for (cells with more keep their sampled effects).
CELL_TABLE_TRIALS = 255


@numba.njit(cache=True, parallel=True)
def cell_tables(counts, x, logw):
    """``(T, CELL_TABLE_SIZE, TABLE_SIZE, 4)``: for ``c`` successes in ``n`` trials (``counts[q]
    = (c, n)``, ``c <= n - c``), ``log g = log int N(v; 0, sigma_v) expit(y + v)^c (1 - expit(y
    + v))^(n - c) dv`` on a grid of ``(log sigma_v, y)``, with its derivatives in ``y``, in
    ``log sigma_v`` and in both (the adaptive rule, :func:`_table_cell`: within 1e-7): the
    corners of a bicubic Hermite interpolant (:func:`_cell_table_slice`). The mirrored counts
    ``(n - c, n)`` read the same table at ``-y``, since ``v`` is symmetric about zero."""
    T = counts.shape[0]
    out = np.empty((T, CELL_TABLE_SIZE, TABLE_SIZE, 4))
    for m in numba.prange(T * CELL_TABLE_SIZE):  # a column of a table per thread at a time
        q, k = m // CELL_TABLE_SIZE, m % CELL_TABLE_SIZE
        tab = np.zeros((1, TABLE_SIZE, 5))
        terms = np.zeros((2, INNER_NODES))
        for i in range(TABLE_SIZE):
            _cell_table_node(
                i,
                counts[q, 0],
                counts[q, 1],
                CELL_TABLE_LOW + k * CELL_TABLE_STEP,
                x,
                logw,
                tab,
                terms,
                out[q, k, i],
            )
    return out


@numba.njit(cache=True)
def _cell_table_node(i, cq, nq, log_sigma, x, logw, tab, terms, out):
    """``out (4,)``: at row ``i`` of :data:`TABLE_LOW`'s grid, ``cq`` successes in ``nq``
    trials, ``log g`` and its derivatives in ``y``, in ``log sigma_v`` and in both, from the
    adaptive rule's cell (:func:`_table_cell`, whose ``sigma_v`` derivatives are per unit
    of ``sigma_v``)."""
    sigma = math.exp(log_sigma)
    _table_cell(i, 0, cq, nq, 1.0 / (sigma * sigma), log_sigma, x, logw, tab, terms)
    out[0] = tab[0, i, 0]
    out[1] = tab[0, i, 1]
    out[2] = sigma * tab[0, i, 2]
    out[3] = sigma * tab[0, i, 4]


@numba.njit(cache=True)
def _hermite_basis(t, h):
    """The cubic Hermite basis on a step of length ``h`` at ``t`` in [0, 1], for values
    ``(h00, h10, h01, h11)`` and their derivatives along the step ``(d00, d10, d01, d11)``:
    ``f = h00 f0 + h10 f0' + h01 f1 + h11 f1'`` (the slopes' factor ``h`` included)."""
    t2 = t * t
    t3 = t2 * t
    h01 = 3.0 * t2 - 2.0 * t3
    return (
        1.0 - h01,
        (t3 - 2.0 * t2 + t) * h,
        h01,
        (t3 - t2) * h,
        (6.0 * t2 - 6.0 * t) / h,
        3.0 * t2 - 4.0 * t + 1.0,
        (6.0 * t - 6.0 * t2) / h,
        3.0 * t2 - 2.0 * t,
    )


@numba.njit(cache=True)
def _cell_table_block(spec, const):
    """The cell tables ``(T, CELL_TABLE_SIZE, TABLE_SIZE, 4)`` and their counts ``(T, 2)``
    (:func:`cell_tables`), stored last in ``const`` (then ``T``) where the full-latent form
    integrates cells over their task-by-system effects (``spec[15]``), else empty."""
    if spec.shape[0] < 16 or spec[15] == 0:
        return np.zeros((0, CELL_TABLE_SIZE, TABLE_SIZE, 4)), np.zeros((0, 2))
    end = const.shape[0] - 1
    T = int(const[end])
    size = T * CELL_TABLE_SIZE * TABLE_SIZE * 4
    block = const[end - 2 * T - size : end - 2 * T].reshape((T, CELL_TABLE_SIZE, TABLE_SIZE, 4))
    return block, const[end - 2 * T : end].reshape((T, 2))


@numba.njit(cache=True)
def _cell_table_slice(block, q, sigma_v, lo, hi, out):
    """Rows ``lo..hi`` of cell table ``q`` at ``sigma_v``, into ``out[q, :rows]``: the
    value and its slope in ``y``, and their derivatives in ``log sigma_v``. Within the
    tabulated spreads, the cubic Hermite interpolant between two columns; beyond, the
    tangent in ``log sigma_v`` at the nearest column (below 0.03 the integral hardly moves
    with ``sigma_v``; above 20 the prior leaves no mass: computing the integrals there
    instead cost a warm-up trajectory that strayed out tens of milliseconds a gradient)."""
    log_sigma = math.log(sigma_v)
    t = (log_sigma - CELL_TABLE_LOW) / CELL_TABLE_STEP
    k = int(math.floor(t)) if t == t else 0  # NaN (a diverging trajectory): the first column
    if k < 0 or k >= CELL_TABLE_SIZE - 1:
        edge = 0 if k < 0 else CELL_TABLE_SIZE - 1
        dl = log_sigma - (CELL_TABLE_LOW + edge * CELL_TABLE_STEP)
        for i in range(lo, hi + 1):
            out[q, i - lo, 0] = block[q, edge, i, 0] + block[q, edge, i, 2] * dl
            out[q, i - lo, 1] = block[q, edge, i, 1] + block[q, edge, i, 3] * dl
            out[q, i - lo, 2] = block[q, edge, i, 2]
            out[q, i - lo, 3] = block[q, edge, i, 3]
        return
    h00, h10, h01, h11, d00, d10, d01, d11 = _hermite_basis(t - k, CELL_TABLE_STEP)
    for i in range(lo, hi + 1):
        a0, a1, a2, a3 = block[q, k, i, 0], block[q, k, i, 1], block[q, k, i, 2], block[q, k, i, 3]
        b0, b1, b2, b3 = (
            block[q, k + 1, i, 0],
            block[q, k + 1, i, 1],
            block[q, k + 1, i, 2],
            block[q, k + 1, i, 3],
        )
        out[q, i - lo, 0] = h00 * a0 + h10 * a2 + h01 * b0 + h11 * b2
        out[q, i - lo, 1] = h00 * a1 + h10 * a3 + h01 * b1 + h11 * b3
        out[q, i - lo, 2] = d00 * a0 + d10 * a2 + d01 * b0 + d11 * b2
        out[q, i - lo, 3] = d00 * a1 + d10 * a3 + d01 * b1 + d11 * b3


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _cell_table_at(y, q, first, rows, coef):
    """``(log g, d/dy, d/dlog sigma_v)`` at ``y`` from table ``q``'s slice, its first row
    ``first`` of :data:`TABLE_LOW`'s grid (:func:`_cell_table_slice`, and
    :func:`_hermite_coefficients` of its rows): the cubic Hermite interpolant in ``y`` by Horner's
    rule, and beyond the grid (or at a NaN) the tangent at its end, with that tangent's
    derivative in ``log sigma_v``. The slice must hold the rows around ``y``."""
    t = (y - TABLE_LOW) * (1.0 / TABLE_STEP)
    if not 0.0 < t < TABLE_SIZE - 1:
        i = 0 if t <= 0.0 else TABLE_SIZE - 1
        r = i - first
        dy = y - (TABLE_LOW + i * TABLE_STEP)
        return (
            rows[q, r, 0] + rows[q, r, 1] * dy,
            rows[q, r, 1],
            rows[q, r, 2] + rows[q, r, 3] * dy,
        )
    i = min(int(t), TABLE_SIZE - 2)
    t -= i
    k = coef[q, i - first]
    return (
        k[0] + t * (k[1] + t * (k[2] + t * k[3])),
        (k[1] + t * (2.0 * k[2] + 3.0 * t * k[3])) * (1.0 / TABLE_STEP),
        k[4] + t * (k[5] + t * (k[6] + t * k[7])),
    )


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _hybrid_cells(tail, eta, e, c, n, sigma_v, block, counts, g_tail):
    """The full-latent form's cells where those whose counts have a table (``counts (T,
    2)``, :func:`cell_tables`) are integrated over their task-by-system effects: such a
    cell reads its table at ``y = eta + e`` (more successes than failures: the mirrored
    counts' table at ``-y``); the other cells add ``c y - n softplus(y)`` at ``y = eta + e +
    sigma_v z`` as in :func:`_latent_cells`, their ``z`` the tail's coordinates after the
    ``J`` task effects, in task-major order of those cells. The tables are sliced at
    ``sigma_v`` over the rows of the largest ``|y|`` read, and each read is a Horner
    evaluation (:func:`_cell_table_at`). Returns what :func:`_latent_cells` returns, and
    adds to ``g_tail`` likewise."""
    J, S = eta.shape
    K = tail.shape[0] - J
    T = counts.shape[0]
    # each pair of counts' table (-1 none), looked up at c + (most + 1) n (the tables' trials
    # are at most CELL_TABLE_TRIALS, so the lookup stays small)
    most = 0
    for q in range(T):
        most = max(most, int(counts[q, 1]))
    lut = np.full((most + 1) * (most + 1), -1, dtype=np.int64)
    for q in range(T):
        lut[int(counts[q, 0]) + (most + 1) * int(counts[q, 1])] = q
    kind = np.empty(J * S, dtype=np.int64)  # -2 not run, -1 sampled, else its table
    ys = np.empty(K)
    reach = 0.0  # the largest |y| read
    k = 0
    for j in range(J):
        for s in range(S):
            nn, cc = n[j, s], c[j, s]
            q = -2
            if nn > 0.0:
                low = min(cc, nn - cc)
                q = lut[int(low) + (most + 1) * int(nn)] if nn <= most else -1
                if q == -1:
                    ys[k] = eta[j, s] + e[j] + sigma_v * tail[J + k]
                    k += 1
                else:
                    reach = max(reach, abs(eta[j, s] + e[j]))
            kind[j * S + s] = q
    if not reach <= -TABLE_LOW:  # beyond the grid, or not a number (a diverging trajectory)
        reach = -TABLE_LOW
    last = min(int((reach - TABLE_LOW) / TABLE_STEP) + 1, TABLE_SIZE - 1)
    first = TABLE_SIZE - 1 - last
    count = last - first + 1
    rows = np.empty((T, count, 4))
    coef = np.empty((T, count, 8))
    for q in range(T):
        _cell_table_slice(block, q, sigma_v, first, last, rows)
        _hermite_coefficients(rows, q, 0, count - 1, coef, 3)
    small, log_term = _softplus_parts(ys)
    total, g_log = 0.0, 0.0
    g_sv = 0.0
    g_eta = np.zeros((J, S))
    g_e = np.zeros(J)
    k = 0
    for j in range(J):
        acc = 0.0
        for s in range(S):
            q = kind[j * S + s]
            if q == -2:
                continue
            if q == -1:
                zv = tail[J + k]
                value, d = _binomial_cell(c[j, s], n[j, s], ys[k], small[k], log_term[k])
                total += value - 0.5 * zv * zv
                g_tail[J + k] += sigma_v * d - zv
                g_sv += zv * d
                k += 1
            else:  # more successes than failures: the mirrored counts' table at -y
                sg = -1.0 if c[j, s] > n[j, s] - c[j, s] else 1.0
                value, d, d_log = _cell_table_at(sg * (eta[j, s] + e[j]), q, first, rows, coef)
                d *= sg
                total += value
                g_log += d_log
            g_eta[j, s] = d
            acc += d
        g_e[j] = acc
    return total, g_eta, g_e, g_sv + g_log / sigma_v


@numba.njit(cache=True, fastmath={"contract"})
def _fixed_rows(first, top, q, cq, nq, sigma_v, u, lam, tab):
    """Fill cells ``first`` to ``top`` (at rows 0, 1, ... of ``tab``) of table ``q`` for the
    low-trial counts ``(cq, nq)`` by the fixed inner rule of the collapsed form's grid: ``g =
    sum_m lam_m p_m^c (1 - p_m)^(n - c)``, ``p_m = expit(y_i + sigma_v u_m)`` (Gauss-Hermite
    on the standardised task-by-system effect), with ``log g``, its derivatives in ``y`` and
    ``sigma_v`` and their cross derivative, those of the rule itself (the layout of
    :func:`_table_cell`, without its ready flag: :func:`_integrated_cells` fills every cell
    it reads first). Each node's ``p`` and ``1 - p`` come from one exponential,
    ``exp(-|y|)``, taken over every row and node at once (:func:`_neg_abs_exp`)."""
    M = u.shape[0]
    rows = top - first + 1
    ys = np.empty(rows * M)
    small = np.empty(rows * M)
    for r in range(rows):
        y = TABLE_LOW + (first + r) * TABLE_STEP
        for m in range(M):
            ys[r * M + m] = y + sigma_v * u[m]
    _neg_abs_exp(ys, small, np.empty(rows * M, dtype=np.int64))
    a_pow, b_pow = int(cq), int(nq - cq)
    for r in range(rows):
        g, gy, gs, gys = 0.0, 0.0, 0.0, 0.0
        for m in range(M):
            k = r * M + m
            inv = 1.0 / (1.0 + small[k])
            p, q_m = (inv, small[k] * inv) if ys[k] >= 0.0 else (small[k] * inv, inv)
            like = lam[m] * _power(p, q_m, a_pow, b_pow)
            sc = cq - nq * p
            g += like
            gy += like * sc
            gs += like * sc * u[m]
            gys += like * (sc * sc - nq * p * q_m) * u[m]
        d_y, d_v = gy / g, gs / g
        tab[q, r, 0] = math.log(g)
        tab[q, r, 1] = d_y
        tab[q, r, 2] = d_v
        tab[q, r, 4] = gys / g - d_y * d_v


@numba.njit(cache=True)
def _hermite_coefficients(tab, q, first, last, coef, cross=4):
    """The cubic Hermite interpolants of table ``q`` between its rows ``first`` and
    ``last`` as polynomials in ``t`` in [0, 1] on each step, for Horner's rule: ``coef[q,
    i, :4]`` those of ``log g`` (from its values and slopes in ``y``, columns 0 and 1),
    ``coef[q, i, 4:]`` those of its derivative in ``sigma_v`` (from its values, column 2,
    and its cross derivative, column ``cross``)."""
    h = TABLE_STEP
    for i in range(first, last):
        for value, slope, at in ((0, 1, 0), (2, cross, 4)):
            f0, s0 = tab[q, i, value], h * tab[q, i, slope]
            f1, s1 = tab[q, i + 1, value], h * tab[q, i + 1, slope]
            coef[q, i, at] = f0
            coef[q, i, at + 1] = s0
            coef[q, i, at + 2] = 3.0 * (f1 - f0) - 2.0 * s0 - s1
            coef[q, i, at + 3] = 2.0 * (f0 - f1) + s0 + s1


#: The task-latent form's tables' counts: (1, 1), (1, 2) and (2, 2); counts with fewer
#: successes than failures read their mirror ``(n - c, n)``.
_LOW_COUNTS = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 2.0]])


@numba.njit(cache=True)
def _low_table(cc, nn):
    """The task-latent table of a cell's counts (:data:`_LOW_COUNTS`; 0 where not run)."""
    return (nn == 2.0) * (1 + (cc != 1.0))


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _integrated_cells(base, cluster, stratum, e, c, n, sigma_v, u, lam):
    """The task-latent form's log likelihood of the counts given the logits ``y[j, s] =
    base[cluster[j], stratum[j], s] + e[j]`` (``base (G, H, S)`` from :func:`_forward`, ``e
    (J,)`` the task effects the likelihood sees), each cell's task-by-system effect
    integrated out (every cell has at most :data:`LOW_TRIALS` trials): ``log g_{c,n}(y;
    sigma_v)`` by the fixed inner rule of the collapsed form's grid (:func:`_fixed_rows`),
    tabulated per counts over the range of ``|y|`` and read by the cubic Hermite interpolant
    of :func:`_table_at` (counts with fewer successes than failures read their mirror at
    ``-y``, since the effect is symmetric; beyond the grid, the tangent at its end). Returns
    the sum, the gradient in ``base`` (summed over each row's tasks: what
    :func:`_backward_rows` takes), in the task effects ``(J,)`` and in ``sigma_v``: those of
    the interpolant, whose cells are exact functions of ``sigma_v``. Binomial coefficients
    are left out, as in :func:`_latent_cells`. The reads are written out in one loop (a call
    per cell cost three times as much), each a Horner evaluation of the step's polynomial
    (:func:`_hermite_coefficients`: 0.7 of the time of weighting the Hermite basis), and
    the logits are formed as the cells are read, never held whole."""
    J, S = c.shape
    reach = 0.0  # the largest |y| read, in a loop the compiler vectorises
    for j in range(J):
        row = base[cluster[j], stratum[j]]
        ej = e[j]
        for s in range(S):
            reach = max(reach, abs(row[s] + ej) if n[j, s] > 0.0 else 0.0)
    if not reach <= -TABLE_LOW:  # beyond the grid, or not a number (a diverging trajectory)
        reach = -TABLE_LOW
    used = 0  # the tables read, as bits
    for j in range(J):
        for s in range(S):
            used |= (n[j, s] > 0.0) << _low_table(c[j, s], n[j, s])
    top = min(int((reach - TABLE_LOW) / TABLE_STEP) + 1, TABLE_SIZE - 1)
    first = TABLE_SIZE - 1 - top  # the cells read, from first to top, held from row 0
    rows = top - first + 1
    tab = np.empty((3, rows, 5))
    coef = np.empty((3, rows, 8))
    for q in range(3):
        if used & (1 << q):
            _fixed_rows(first, top, q, _LOW_COUNTS[q, 0], _LOW_COUNTS[q, 1], sigma_v, u, lam, tab)
            _hermite_coefficients(tab, q, 0, rows - 1, coef)
    h = TABLE_STEP
    inv_h = 1.0 / TABLE_STEP
    total, g_sv = 0.0, 0.0
    g_base = np.zeros(base.shape)
    g_e = np.zeros(J)
    for j in range(J):
        acc = 0.0
        row = base[cluster[j], stratum[j]]
        g_row = g_base[cluster[j], stratum[j]]
        for s in range(S):
            nn = n[j, s]
            if nn == 0.0:  # not run
                continue
            cc = c[j, s]
            # fewer successes than failures: the mirror's table, at -y
            sg = 1.0 if cc >= nn - cc else -1.0
            q = _low_table(cc, nn)
            yy = sg * (row[s] + e[j])
            t = (yy - TABLE_LOW) * inv_h
            if not 0.0 < t < TABLE_SIZE - 1:  # beyond the grid (or NaN): the tangent at its end
                i = 0 if t <= 0.0 else TABLE_SIZE - 1
                f = tab[q, i - first, 0] + tab[q, i - first, 1] * (yy - (TABLE_LOW + i * h))
                d1, dv = tab[q, i - first, 1], tab[q, i - first, 2]
            else:
                i = min(int(t), TABLE_SIZE - 2)
                t -= i
                k = coef[q, i - first]
                f = k[0] + t * (k[1] + t * (k[2] + t * k[3]))
                d1 = (k[1] + t * (2.0 * k[2] + 3.0 * t * k[3])) * inv_h
                dv = k[4] + t * (k[5] + t * (k[6] + t * k[7]))
            d1 *= sg
            total += f
            g_row[s] += d1
            acc += d1
            g_sv += dv
        g_e[j] = acc
    return total, g_base, g_e, g_sv


@numba.njit(cache=True)
def _kernel_layout(spec, const):
    """The kernel's sizes, flags, constants and offsets into ``theta`` (the order of
    :class:`bayeval.models._collapsed.Coordinates`)."""
    S, H, G = spec[0], spec[1], spec[2]
    clusters, paired = spec[3] != 0, spec[4] != 0
    nx, nz, nu = spec[5], spec[6], spec[7]
    system_level = spec[8] != 0
    noncentred = spec[8] == 2  # the contrasts as sigma_system times standard normals
    latent = spec[9] != 0  # the full-latent form: task effects in theta (_latent_cells)
    # the cluster coordinates hold the effects themselves (centred), not their standardised
    # values times the spread (non-centred)
    centred = spec[10] != 0
    Gm = G - 1
    mean, sd = const[0], const[1]
    scale = const[2:6]
    scale_sys = const[6]
    k = 7
    rot = const[k : k + S * S].reshape((S, S))
    k += S * S
    msize = const[k : k + S]  # per rotated coordinate: its block's size (a mean), 0 (a contrast)
    k += S
    x, logw = const[k : k + nx], const[k + nx : k + 2 * nx]
    k += 2 * nx
    z, log_omega = const[k : k + nz], const[k + nz : k + 2 * nz]
    k += 2 * nz
    u, lam = const[k : k + nu], const[k + nu : k + 2 * nu]
    present = np.array([True, paired, clusters, clusters and paired])
    i_sig = np.full(4, -1)
    i = 0
    for j in range(4):
        if present[j]:
            i_sig[j] = i
            i += 1
    i_mu = i
    i_fu = i_mu + (1 if clusters else 0)
    i_mw = i_fu + (Gm if clusters else 0)
    i_fw = i_mw + (S if clusters and paired else 0)
    i_ss = i_fw + (S * Gm if clusters and paired else 0)
    i_za = i_ss + (1 if system_level else 0)
    i_tail = i_za + S * H
    return (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    )


#: The probit approximation's constant: ``E expit(a + s Z) ~ expit(a / sqrt(1 + ATTENUATION
#: s^2))`` for Z standard normal (``expit(x) ~ Phi(x sqrt(pi / 8))``).
ATTENUATION = math.pi / 8.0


@numba.njit(cache=True)
def _attenuation(spec, theta, i_sig, paired):
    """The factor ``kappa = sqrt(1 + (pi / 8)(sigma_e^2 + sigma_v^2))`` by which the collapsed
    form's task-level effects, integrated out, shrink the rest of the linear predictor's
    effect on the rates, where the sampler sees that rest divided by it (``spec[12]``); else
    one.

    Integrating the task and task-by-system effects out leaves each system's rate over the
    tasks near ``expit(alpha / kappa)``: the data pin ``alpha / kappa`` (and the cluster
    effects over kappa), and held plainly every intercept, cluster effect and their spreads
    move with the task-level spreads along a curved ridge (on the 25 SWE-bench systems half
    of each intercept's posterior variance, and the divergent draws at its far end). On that
    scale the ridge is nearly straight."""
    if spec.shape[0] < 13 or spec[12] == 0:
        return 1.0
    # the task-latent form samples its task effects: only the integrated ones attenuate
    total = 0.0 if spec[9] != 0 else math.exp(2.0 * theta[i_sig[0]])
    if paired:
        total += math.exp(2.0 * theta[i_sig[1]])
    return math.sqrt(1.0 + ATTENUATION * total)


@numba.njit(cache=True)
def _attenuated_parts(spec, const):
    """Which coordinates of ``theta`` the attenuated form holds divided by kappa (``scaled``:
    the intercepts' rotated coordinates but the non-centred contrasts, and centred cluster
    coordinates' zero-sum parts) and which log spreads it holds less ``log kappa``
    (``shifted``: the cluster, cluster-by-system and system spreads); index arrays."""
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    scaled = []
    for t in range(S):
        if not (noncentred and msize[t] == 0):
            for h in range(H):
                scaled.append(i_za + t * H + h)
    if clusters and centred:
        for j in range(Gm):
            scaled.append(i_fu + j)
        if paired and spec[10] == 1:
            for j in range(S * Gm):
                scaled.append(i_fw + j)
    shifted = []
    if latent:  # the task-latent form: its centred task coordinates and their spread
        r = _task_rotation(spec, const)[1]
        for j in range(r, spec[9]):
            scaled.append(i_tail + j)
        shifted.append(i_sig[0])
    for j in (2, 3):
        if present[j]:
            shifted.append(i_sig[j])
    if system_level:
        shifted.append(i_ss)
    return np.array(scaled, dtype=np.int64), np.array(shifted, dtype=np.int64)


@numba.njit(cache=True)
def _plain_theta(theta, kappa, scaled, shifted):
    """The plain coordinates of attenuated ``theta``: ``scaled`` ones times kappa, ``shifted``
    log spreads plus ``log kappa``."""
    if kappa == 1.0:
        return theta
    plain = theta.copy()
    for i in scaled:
        plain[i] *= kappa
    log_kappa = math.log(kappa)
    for i in shifted:
        plain[i] += log_kappa
    return plain


@numba.njit(cache=True)
def _attenuation_adjoint(theta, grad, kappa, scaled, shifted, i_sig, paired, first):
    """Turns ``grad``, the gradient in the plain coordinates (:func:`_plain_theta`), into that
    in the attenuated ``theta``; returns the log-Jacobian, ``len(scaled) log kappa`` (the
    shifted log spreads' map has a unit Jacobian: it is triangular in the log spreads).
    kappa depends on the spreads from ``i_sig[first]`` on (1: the task-latent form's)."""
    if kappa == 1.0:
        return 0.0
    d_log_kappa = float(scaled.shape[0])  # the log-Jacobian's own derivative
    for i in scaled:
        d_log_kappa += theta[i] * kappa * grad[i]  # d plain / d log kappa = plain
        grad[i] *= kappa
    for i in shifted:
        d_log_kappa += grad[i]
    # d log kappa / d log sigma = (pi / 8) sigma^2 / kappa^2
    for j in range(first, 2 if paired else 1):
        grad[i_sig[j]] += (
            d_log_kappa * ATTENUATION * math.exp(2.0 * theta[i_sig[j]]) / (kappa * kappa)
        )
    return scaled.shape[0] * math.log(kappa)


@numba.njit(cache=True)
def _level_weights(spec, const):
    """The clusters' shares of the tasks ``(G,)``, stored last in ``const``, where the sampler
    sees the intercepts at the level the data weigh them by (``spec[13]``); else empty.

    The cluster effects' zero-sum part is zero-sum with equal weights, but the data see the
    clusters in proportion to their tasks (SWE-bench's django: 231 of 500 tasks), so the
    intercepts' level traded against the zero-sum coordinates (on the 25 SWE-bench systems a
    correlation of -0.58, the sampler's narrowest direction). Shifting the intercepts by the
    zero-sum part's task-weighted mean, and taking it off every cluster's, removes that; the
    prior is unchanged (the intercepts' coordinates are normal about their shift whatever it
    is)."""
    if spec.shape[0] < 14 or spec[13] == 0:
        return np.zeros(0)
    G = spec[2]
    return const[const.shape[0] - G :]


@numba.njit(cache=True)
def _weighted_level(pi, d):
    """``pi . d``, zero without weights."""
    total = 0.0
    for g in range(pi.shape[0]):
        total += pi[g] * d[g]
    return total


@numba.njit(cache=True)
def _level_adjoint(pi, g_d, d_level):
    """The gradient in a zero-sum part ``d`` from that in ``d - pi . d`` (``g_d``, in place)
    and in the shift ``pi . d`` (``d_level``)."""
    if pi.shape[0] == 0:
        return
    total = 0.0
    for g in range(g_d.shape[0]):
        total += g_d[g]
    for g in range(g_d.shape[0]):
        g_d[g] += pi[g] * (d_level - total)


@numba.njit(cache=True)
def _cluster_prior(theta, i_m, i_f, Gm, G, sigma, centred, i_sigma, grad, centre, g_centre):
    """The log prior of one set of cluster coordinates, its mean ``theta[i_m]`` (standard
    normal over G: the effects' mean is ``sigma`` times it) and zero-sum part
    ``theta[i_f:i_f + Gm]``, adding its gradient to ``grad`` (in the log spread at
    ``i_sigma`` too when centred). The zero-sum part is standard normal (non-centred) or,
    centred, the effects' own zero-sum coordinates, normal with sd ``sigma``. The mean stays
    non-centred either way: the data do not see it apart from the intercepts, so it follows
    its prior, which its standardised form keeps independent of the spread. The zero-sum
    coordinates are normal about ``centre (Gm,)`` (zeros, or the task effects' cluster
    components folded in: :func:`logp_and_grad`), whose gradient adds to ``g_centre``."""
    m = theta[i_m]
    logp = -0.5 * G * m * m
    grad[i_m] += -G * m
    scale = sigma if centred else 1.0
    spread = 0.0
    for j in range(Gm):
        f = (theta[i_f + j] - centre[j]) / scale
        logp += -0.5 * f * f
        grad[i_f + j] += -f / scale
        g_centre[j] += f / scale
        spread += f * f
    if centred:
        logp -= Gm * math.log(sigma)
        grad[i_sigma] += spread - Gm
    return logp


@numba.njit(cache=True)
def _forward(theta, spec, const, p_cluster, p_stratum, P, centre_u, g_centre_u):
    """The log prior of ``theta`` (log-Jacobians included) with its gradient, and every
    pattern's linear predictor ``eta (P, S)`` (none with ``P`` negative: read ``base``
    instead); returns those and the state :func:`_backward` needs: ``(logp, grad, eta, sig,
    d_u, d_w, d_shift, sig_sys, d_sig_sys, base)``, ``base (G, H, S)`` the predictors of
    each (cluster, stratum). The cluster
    effects' zero-sum coordinates are normal about ``centre_u``, whose gradient adds to
    ``g_centre_u``."""
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    grad = np.zeros(theta.shape[0])
    logp = 0.0
    sig = np.ones(4)
    for j in range(4):
        if present[j]:
            sig[j] = math.exp(theta[i_sig[j]])
            ratio = sig[j] / scale[j]
            logp += -0.5 * ratio * ratio + theta[i_sig[j]]  # HalfNormal and log-Jacobian
            grad[i_sig[j]] += 1.0 - ratio * ratio
    sig_u = sig[2] if clusters else 0.0
    sig_w = sig[3] if clusters and paired else 0.0
    # what multiplies the zero-sum cluster coordinates: the spread (non-centred) or one
    # (centred: the coordinates are the effects' own, N(0, spread^2) each)
    centred_w = centred and spec[10] == 1  # spec[10] == 2: the cluster effects only
    a_u = 1.0 if centred else sig_u
    a_w = 1.0 if centred_w else sig_w
    m_u = theta[i_mu] if clusters else 0.0
    d_u = np.zeros(G)
    d_w = np.zeros((S, G))
    shift = np.full(S, sig_u * m_u)
    # with level weights the zero-sum parts enter less their task-weighted means, which
    # shift the intercepts instead (_level_weights)
    pi = _level_weights(spec, const)
    level_u = 0.0
    level_w = np.zeros(S)
    if clusters:
        logp += _cluster_prior(
            theta, i_mu, i_fu, Gm, G, sig_u, centred, i_sig[2], grad, centre_u, g_centre_u
        )
        _zero_sum(theta[i_fu : i_fu + Gm], d_u)
        level_u = _weighted_level(pi, d_u)
        shift += a_u * level_u
        if paired:
            no_centre, scratch = np.zeros(Gm), np.zeros(Gm)
            for s in range(S):
                shift[s] += sig_w * theta[i_mw + s]
                logp += _cluster_prior(
                    theta,
                    i_mw + s,
                    i_fw + s * Gm,
                    Gm,
                    G,
                    sig_w,
                    centred_w,
                    i_sig[3],
                    grad,
                    no_centre,
                    scratch,
                )
                _zero_sum(theta[i_fw + s * Gm : i_fw + (s + 1) * Gm], d_w[s])
                level_w[s] = _weighted_level(pi, d_w[s])
                shift[s] += a_w * level_w[s]
    # intercepts: z_alpha ~ N(R' shift, sd_t), identified = mean + R z_alpha. Without a system
    # level sd_t = sd (alpha ~ N(mean, sd) independently); with one, alpha[s] = mu + sigma_system
    # eps[s] and mu ~ N(mean, sd) integrated out: alpha ~ N(mean, sigma_system^2 I + sd^2 11'),
    # whose rotated coordinates are independent with sd_0^2 = sigma_system^2 + S sd^2 (the mean
    # direction) and sd_t = sigma_system (the contrasts). Non-centred, theta holds the contrasts'
    # standardised values zeta (z_t = centre_t + sigma_system zeta_t, zeta_t ~ N(0, 1)). With
    # runs the systems form blocks (the runs of one recipe), R is block-diagonal, each block
    # with its own mean direction (sd^2 m_b + sigma^2 for a block of m_b runs) and contrasts:
    # the same algebra per block, with the run spread as sigma.
    sig_sys = 1.0
    d_sig_sys = 0.0
    if system_level:
        sig_sys = math.exp(theta[i_ss])
        ratio = sig_sys / scale_sys
        logp += -0.5 * ratio * ratio + theta[i_ss]  # HalfNormal and log-Jacobian
        grad[i_ss] += 1.0 - ratio * ratio
    identified = np.full((S, H), mean)
    d_shift = np.zeros(S)
    for t in range(S):
        sd_t = sd
        dsd = 0.0  # d sd_t / d sigma_system
        is_mean = msize[t] > 0
        if system_level:
            if is_mean:
                sd_t = math.sqrt(sig_sys * sig_sys + msize[t] * sd * sd)
                dsd = sig_sys / sd_t
            else:
                sd_t = sig_sys
                dsd = 1.0
        for h in range(H):
            za = theta[i_za + t * H + h]
            centre = 0.0
            for s in range(S):
                centre += rot[s, t] * shift[s]
            if noncentred and not is_mean:
                logp += -0.5 * za * za
                grad[i_za + t * H + h] += -za
                za = centre + sig_sys * za
                for s in range(S):
                    identified[s, h] += rot[s, t] * za
                continue
            for s in range(S):
                identified[s, h] += rot[s, t] * za
            resid = (za - centre) / sd_t
            logp += -0.5 * resid * resid
            grad[i_za + t * H + h] += -resid / sd_t
            for s in range(S):
                d_shift[s] += rot[s, t] * resid / sd_t
            if system_level:
                logp -= math.log(sd_t)
                d_sig_sys += (resid * resid - 1.0) / sd_t * dsd
    # each (cluster, stratum)'s predictors once, then copied row by row (contiguous)
    base = np.empty((G, H, S))
    for g in range(G):
        for h in range(H):
            for s in range(S):
                base[g, h, s] = (
                    identified[s, h] + a_u * (d_u[g] - level_u) + a_w * (d_w[s, g] - level_w[s])
                )
    eta = np.empty((max(P, 0), S))
    for p in range(P):
        eta[p] = base[p_cluster[p], p_stratum[p]]
    return logp, grad, eta, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys, base


@numba.njit(cache=True)
def _backward(
    theta,
    spec,
    const,
    p_cluster,
    p_stratum,
    g_eta,
    g_se,
    g_sv,
    grad,
    sig,
    d_u,
    d_w,
    d_shift,
    sig_sys,
    d_sig_sys,
):
    """Adds to ``grad`` the likelihood's gradient, given in the linear predictors ``g_eta (P,
    S)`` and the task-level spreads (``g_se``, ``g_sv``), by the chain rule through the
    transforms of :func:`_forward`."""
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    P = g_eta.shape[0]
    # the patterns' gradients summed per (cluster, stratum) row by row (contiguous)
    by_gh = np.zeros((G, H, S))
    for p in range(P):
        by_gh[p_cluster[p], p_stratum[p]] += g_eta[p]
    _backward_rows(
        theta, spec, const, by_gh, g_se, g_sv, grad, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys
    )


@numba.njit(cache=True)
def _backward_rows(
    theta, spec, const, by_gh, g_se, g_sv, grad, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys
):
    """:func:`_backward` from the likelihood's gradient summed per (cluster, stratum),
    ``by_gh (G, H, S)``."""
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    sig_u = sig[2] if clusters else 0.0
    sig_w = sig[3] if clusters and paired else 0.0
    centred_w = centred and spec[10] == 1
    a_u = 1.0 if centred else sig_u
    a_w = 1.0 if centred_w else sig_w
    m_u = theta[i_mu] if clusters else 0.0
    grad[i_sig[0]] += sig[0] * g_se
    if paired:
        grad[i_sig[1]] += sig[1] * g_sv
    # split into the cluster effects', the cluster-by-system effects' and the intercepts'
    g_u = np.zeros(G)
    g_w = np.zeros((S, G))
    g_id = np.zeros((S, H))  # gradient in the identified intercepts, rotated once below
    for g in range(G):
        for h in range(H):
            for s in range(S):
                value = by_gh[g, h, s]
                g_u[g] += value
                g_w[s, g] += value
                g_id[s, h] += value
    for t in range(S):
        for h in range(H):
            g_t = 0.0  # the likelihood's gradient in z_alpha[t, h]
            for s in range(S):
                g_t += rot[s, t] * g_id[s, h]
            if noncentred and msize[t] == 0:
                grad[i_za + t * H + h] += sig_sys * g_t
                d_sig_sys += theta[i_za + t * H + h] * g_t
                for s in range(S):
                    d_shift[s] += rot[s, t] * g_t
            else:
                grad[i_za + t * H + h] += g_t
    if system_level:
        grad[i_ss] += sig_sys * d_sig_sys
    if clusters:
        total_shift = 0.0
        for s in range(S):
            total_shift += d_shift[s]
        # the zero-sum parts enter less their weighted means and shift the intercepts by them
        pi = _level_weights(spec, const)
        _level_adjoint(pi, g_u, total_shift)
        if paired:
            for s in range(S):
                _level_adjoint(pi, g_w[s], d_shift[s])
        d_sig_u = m_u * total_shift
        if not centred:  # centred, the zero-sum part does not carry the spread
            for g in range(G):
                d_sig_u += g_u[g] * d_u[g]
        grad[i_mu] += sig_u * total_shift
        _zero_sum_adjoint(g_u, a_u, grad[i_fu : i_fu + Gm])
        grad[i_sig[2]] += sig_u * d_sig_u
        if paired:
            d_sig_w = 0.0
            for s in range(S):
                d_sig_w += theta[i_mw + s] * d_shift[s]
                grad[i_mw + s] += sig_w * d_shift[s]
                if not centred_w:
                    for g in range(G):
                        d_sig_w += g_w[s, g] * d_w[s, g]
                _zero_sum_adjoint(g_w[s], a_w, grad[i_fw + s * Gm : i_fw + (s + 1) * Gm])
            grad[i_sig[3]] += sig_w * d_sig_w


# -- the task-latent form's cluster-level coordinates, guided -------------------------------
@numba.njit(cache=True)
def _guided(spec):
    """Whether the sampler holds some cluster-level coordinates guided (``spec[16]``: 1 the
    cluster-by-system ones, 2 the task effects' cluster means, 3 both; :func:`_unguide`)."""
    return spec.shape[0] >= 17 and spec[16] != 0


@numba.njit(cache=True)
def _guide_block(spec, const, r):
    """The guides' constants, stored before the level weights: for the cluster-by-system
    coordinates (``spec[16] & 1``; :func:`bayeval.models._collapsed.cluster_system_guide`)
    per system the eigenvectors ``(S, G - 1, G - 1)`` (columns) of the data's information
    about its zero-sum cluster-by-system coordinates, their eigenvalues ``(S, G - 1)`` and the
    data's score in that basis ``(S, G - 1)``; before them, for the task effects' ``r``
    cluster means (``spec[16] & 2``), the eigenvectors ``(r, r)`` and eigenvalues ``(r,)`` of
    ``F'F``, ``F`` the fold map (:func:`bayeval.models._collapsed.task_cluster_fold`)."""
    S, G = spec[0], spec[2]
    Gm = G - 1
    end = const.shape[0] - (G if spec[13] != 0 else 0)
    n_w = S * Gm * (Gm + 2) if spec[16] & 1 else 0
    first = end - n_w
    vectors = (
        const[first : first + S * Gm * Gm].reshape((S, Gm, Gm)) if n_w else np.zeros((0, 0, 0))
    )
    k = first + S * Gm * Gm
    values = const[k : k + S * Gm].reshape((S, Gm)) if n_w else np.zeros((0, 0))
    score = const[k + S * Gm : end].reshape((S, Gm)) if n_w else np.zeros((0, 0))
    n_u = r * (r + 1) if spec[16] & 2 else 0
    first_u = first - n_u
    u_vectors = const[first_u : first_u + r * r].reshape((r, r)) if n_u else np.zeros((0, 0))
    u_values = const[first_u + r * r : first] if n_u else np.zeros(0)
    return vectors, values, score, u_vectors, u_values


@numba.njit(cache=True)
def _guide_setup(spec, const):
    """What :func:`_unguide` and :func:`_guide_adjoint` read: the task rotation's rank and
    fold map, the guides' constants (:func:`_guide_block`), the sizes and the offsets."""
    rotation = _task_rotation(spec, const)
    r, fold_map = rotation[1], rotation[4]
    vectors, values, score, u_vectors, u_values = _guide_block(spec, const, r)
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    return (
        r,
        fold_map,
        vectors,
        values,
        score,
        u_vectors,
        u_values,
        S,
        Gm,
        i_sig,
        i_fu,
        i_fw,
        i_tail,
    )


@numba.njit(cache=True)
def _unguide(x, spec, const):
    """The sampler's guided coordinates ``x`` mapped to the kernel's, and the map's
    log-Jacobian.

    The cluster-by-system coordinates (``spec[16] & 1``). Non-centred, each system's
    zero-sum cluster-by-system coordinates ``f`` are standard normal a priori and the data
    see ``sigma f`` (``sigma`` the cluster-by-system spread). One by one the data say little
    of them, but summed over 25 systems and 12 clusters they pin ``sigma`` given ``f``: the
    posterior mean of ``f`` moves with ``sigma`` (on the 25 SWE-bench systems the projection
    of ``f`` on that mean correlated 0.80 with ``log sigma``), a ridge the sampler's diagonal
    metric cannot follow. With the data's log likelihood near ``sigma b'f - sigma^2 f'If /
    2`` (score ``b`` and information ``I`` at zero effects, estimated before the fit), ``f``
    given ``sigma`` is normal with mean ``(1 + sigma^2 I)^-1 sigma b`` and covariance ``(1 +
    sigma^2 I)^-1``; in the eigenbasis ``V`` of ``I`` (eigenvalues ``l``, ``q = 1 + sigma^2
    l``) the sampler holds ``eps`` with ``V'f = (sigma V'b + sqrt(q) eps) / q``, standard
    normal and independent of ``sigma`` where that holds.

    The task effects' cluster means (``spec[16] & 2``). With the cluster components folded
    into the centred cluster coordinates ``c`` (:func:`logp_and_grad`), the data pin ``c``,
    and the cluster effects are ``c - sigma_task F z`` with ``z`` the ``r`` standard normal
    coordinates of the task effects' cluster and stratum means: a priori ``c ~ N(sigma_task
    F z, sigma_cluster^2)``, so where ``sigma_cluster`` is small ``z`` is pinned to ``c`` (a
    funnel). Given ``c`` and the spreads, ``z`` is normal with precision ``1 + a^2 F'F`` (``a
    = sigma_task / sigma_cluster``) and mean ``(sigma_task / sigma_cluster^2)`` over it times
    ``F'c``; in the eigenbasis ``W`` of ``F'F`` (eigenvalues ``d``, ``p = 1 + a^2 d``) the
    sampler holds ``eps`` with ``W'z = (sigma_task / sigma_cluster^2) W'F'c / p + eps /
    sqrt(p)``. Without strata the likelihood sees ``z`` only along ``F``'s null space, where
    the map is the identity, so this is the exact conditional; with strata it sees their
    stratum components too, and the map is a near guess.

    Any constants give the same posterior (a smooth bijection with its Jacobian, ``-sum
    log(q) / 2 - sum log(p) / 2``); good ones give straight coordinates. The coordinates are
    the kernel's own (attenuated: held over kappa, log spreads less ``log kappa``, in which
    the conditional of ``z`` is the same)."""
    if not _guided(spec):
        return x, 0.0
    (r, fold_map, vectors, values, score, u_vectors, u_values, S, Gm, i_sig, i_fu, i_fw, i_tail) = (
        _guide_setup(spec, const)
    )
    theta = x.copy()
    log_jacobian = 0.0
    if vectors.shape[0]:
        sigma = math.exp(x[i_sig[3]])
        g = np.empty(Gm)
        for s in range(S):
            first = i_fw + s * Gm
            for k in range(Gm):
                q = 1.0 + sigma * sigma * values[s, k]
                g[k] = (sigma * score[s, k] + math.sqrt(q) * x[first + k]) / q
                log_jacobian -= 0.5 * math.log(q)
            for i in range(Gm):
                acc = 0.0
                for k in range(Gm):
                    acc += vectors[s, i, k] * g[k]
                theta[first + i] = acc
    if u_values.shape[0]:
        s_t, s_c = math.exp(x[i_sig[0]]), math.exp(x[i_sig[2]])
        a2 = (s_t / s_c) ** 2
        t = _fold_projection(x, fold_map, u_vectors, i_fu, r, Gm)
        for k in range(r):
            p = 1.0 + a2 * u_values[k]
            t[k] = s_t / (s_c * s_c) * t[k] / p + x[i_tail + k] / math.sqrt(p)
            log_jacobian -= 0.5 * math.log(p)
        for i in range(r):
            acc = 0.0
            for k in range(r):
                acc += u_vectors[i, k] * t[k]
            theta[i_tail + i] = acc
    return theta, log_jacobian


@numba.njit(cache=True)
def _fold_projection(x, fold_map, u_vectors, i_fu, r, Gm):
    """``W'F'c (r,)``, ``c`` the cluster coordinates of ``x``."""
    fc = np.zeros(r)
    for a in range(Gm):
        for i in range(r):
            fc[i] += fold_map[a, i] * x[i_fu + a]
    t = np.zeros(r)
    for k in range(r):
        for i in range(r):
            t[k] += u_vectors[i, k] * fc[i]
    return t


@numba.njit(cache=True)
def _guide_adjoint(x, spec, const, grad):
    """Turns ``grad``, the gradient at :func:`_unguide`'s image of ``x``, into that in ``x``
    (the log-Jacobian's gradient included), in place."""
    if not _guided(spec):
        return
    (r, fold_map, vectors, values, score, u_vectors, u_values, S, Gm, i_sig, i_fu, i_fw, i_tail) = (
        _guide_setup(spec, const)
    )
    if vectors.shape[0]:
        sigma = math.exp(x[i_sig[3]])
        s2 = sigma * sigma
        d_log_sigma = 0.0
        g_f = np.empty(Gm)  # the gradient in f, read before it is overwritten
        for s in range(S):
            first = i_fw + s * Gm
            g_f[:] = grad[first : first + Gm]
            for k in range(Gm):
                h = 0.0  # the gradient in the eigenbasis' k-th coordinate
                for i in range(Gm):
                    h += vectors[s, i, k] * g_f[i]
                sl = s2 * values[s, k]
                q = 1.0 + sl
                root = math.sqrt(q)
                # d/d log sigma of the mean sigma b / q, of the scale 1 / sqrt(q), of -log(q)/2
                d_log_sigma += (
                    h
                    * (sigma * score[s, k] * (1.0 - sl) / (q * q) - sl * x[first + k] / (q * root))
                    - sl / q
                )
                grad[first + k] = h / root
        grad[i_sig[3]] += d_log_sigma
    if u_values.shape[0]:
        s_t, s_c = math.exp(x[i_sig[0]]), math.exp(x[i_sig[2]])
        a2 = (s_t / s_c) ** 2
        t = _fold_projection(x, fold_map, u_vectors, i_fu, r, Gm)
        h = np.zeros(r)  # the gradient in W'z
        for k in range(r):
            for i in range(r):
                h[k] += u_vectors[i, k] * grad[i_tail + i]
        d_t = np.zeros(r)  # the gradient in W'F'c
        d_log_t = 0.0
        for k in range(r):
            ad = a2 * u_values[k]
            p = 1.0 + ad
            root = math.sqrt(p)
            mean = s_t / (s_c * s_c) * t[k] / p
            eps = x[i_tail + k]
            d_t[k] = h[k] * s_t / (s_c * s_c * p)
            # d/d log sigma_task (p grows as a^2): the mean, the scale, -log(p) / 2; d/d log
            # sigma_cluster is the same but for the mean's -2
            d_p = h[k] * (-mean * 2.0 * ad / p - eps * ad / (p * root)) - ad / p
            d_log_t += h[k] * mean + d_p
            grad[i_sig[2]] += -2.0 * h[k] * mean - d_p
            grad[i_tail + k] = h[k] / root
        grad[i_sig[0]] += d_log_t
        for i in range(r):  # back to c: F W d_t
            acc = 0.0
            for k in range(r):
                acc += u_vectors[i, k] * d_t[k]
            for a in range(Gm):
                grad[i_fu + a] += fold_map[a, i] * acc


# -- the full-latent form's cluster pairs, rotated onto what the data see -----------------------
@numba.njit(cache=True)
def _pairs(spec):
    """Whether the full-latent form holds its cluster pairs rotated (``spec[11]`` 3: task
    effects centred, 4: standardised; :func:`_unpair`)."""
    return spec.shape[0] >= 12 and (spec[11] == 3 or spec[11] == 4)


@numba.njit(cache=True)
def _pair_matrix(spec, const):
    """``Q (G, G)`` where the full-latent form rotates its cluster pairs with centred task
    effects (``spec[11] == 3``, :func:`_unpair`), else ``(0, 0)``: ``Q z`` are the task
    effects' standardised cluster components (cluster g's mean effect is ``sigma_task (Q
    z)[g] / sqrt(n_g)``) for the first ``r = G`` task coordinates ``z``, stored after the
    task reflections (:func:`bayeval.models._collapsed.cluster_pair_map`)."""
    if spec.shape[0] < 12 or spec[11] != 3:
        return np.zeros((0, 0))
    G, J = spec[2], spec[9]
    k, r = _reflections_at(spec, const)
    k += 1 + r * J
    return const[k : k + G * r].reshape((G, r))


@numba.njit(cache=True)
def _pair_parts(theta, i_small, i_large, inv_root):
    """Each cluster's rotation ``(cos, sin)`` of a pair: the cluster-level effect (spread
    ``exp(theta[i_large])``) and its tasks' standardised mean (``exp(theta[i_small]) /
    sqrt(n_g)``, ``inv_root`` the ``1 / sqrt(n_g)``), the sum the data see."""
    small, large = math.exp(theta[i_small]), math.exp(theta[i_large])
    G = inv_root.shape[0]
    cos, sin = np.empty(G), np.empty(G)
    for g in range(G):
        b = small * inv_root[g]
        scale = 1.0 / math.sqrt(large * large + b * b)
        cos[g], sin[g] = large * scale, b * scale
    return cos, sin


@numba.njit(cache=True)
def _pair_layout(spec, const, cluster):
    """What :func:`_unpair` reads: the systems and clusters, whether paired, one over the
    root of each cluster's tasks, the log spreads' indices ``(task, task-by-system, cluster,
    cluster-by-system)`` and the cluster and task coordinates' starts."""
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    size = np.zeros(G)
    for j in range(cluster.shape[0]):
        size[cluster[j]] += 1.0
    inv_root = np.empty(G)
    for g in range(G):
        inv_root[g] = 1.0 / math.sqrt(size[g])
    return S, G, paired, inv_root, i_sig, i_mu, i_fu, i_mw, i_fw, i_tail


@numba.njit(cache=True)
def _unpair(theta, spec, const, cluster, Q):
    """The full-latent form's coordinates (and the map's log-Jacobian) from the sampler's,
    which hold each cluster's pairs rotated onto the sums the data see.

    The likelihood sees a cluster's effect ``u[g] = sigma_cluster z_u[g]`` only through its
    sum with its tasks' mean effect, ``sigma_task zeta[g] / sqrt(n_g)`` (``zeta = Q z``, the
    task effects' standardised cluster components), and a system's ``w[s, g] =
    sigma_cluster_system z_w[s, g]`` only with its task-by-system effects' mean,
    ``sigma_task_system xi[s, g] / sqrt(n_g)`` (``xi[s, g]`` the sum of ``z_v[j, s]`` over the
    cluster's tasks over ``sqrt(n_g)``). With many one-task clusters the split of each sum
    between the two spreads is barely identified, and sampled as they are the pairs must
    turn with every move of the split (Terminal-Bench's 70 families of 80 tasks: a bulk ESS
    near 100 for the spreads, r-hat 1.04). So the sampler holds each pair rotated by the
    angle ``atan2(sigma_small / sqrt(n_g), sigma_large)``: the first coordinate is the pair's
    standardised sum, the second the direction the data do not see, standard normal. The
    rotation is orthonormal at every value of the spreads: the prior is unchanged and its
    Jacobian is one. The cluster sums, each pinned by its tasks' trials, are held centred
    (``A[g] = rho[g] a[g]``, ``rho[g]^2 = sigma_cluster^2 + sigma_task^2 / n_g``; log-Jacobian
    ``-sum log rho``), their standard normal values zero-sum and mean coordinates as the
    cluster effects' (:func:`_zero_sum`), where the task effects are centred (each pinned by
    its trials), else standardised like the task effects (:func:`_turn_sums`, the partner in
    the tasks' own coordinates); the cluster-by-system sums, each seen through a few trials,
    stay standardised. The spreads of each pair are held in polar coordinates
    (:func:`_from_polar`), the map applied before this one.
    """
    S, G, paired, inv_root, i_sig, i_mu, i_fu, i_mw, i_fw, i_tail = _pair_layout(
        spec, const, cluster
    )
    out = theta.copy()
    J = cluster.shape[0]
    # the cluster effects and the task effects' cluster components
    cos, sin = _pair_parts(theta, i_sig[0], i_sig[2], inv_root)
    log_jacobian = 0.0
    if Q.shape[0] == 0:  # task effects standardised: the sums too
        _turn_sums(theta, out, i_mu, i_fu, i_tail, 1, cos, sin, inv_root, cluster)
    else:
        a = np.empty(G)
        zs = np.empty(G)
        _zero_sum(theta[i_fu : i_fu + G - 1], a)
        inv_large = math.exp(-theta[i_sig[2]])
        for g in range(G):  # a = A / rho, 1 / rho = cos / sigma_cluster
            a[g] = (a[g] + theta[i_mu]) * cos[g] * inv_large
            log_jacobian += math.log(cos[g] * inv_large)
        b = _times(Q, theta[i_tail : i_tail + G], False)
        for g in range(G):
            zs[g] = cos[g] * a[g] - sin[g] * b[g]
            b[g] = sin[g] * a[g] + cos[g] * b[g]
        out[i_tail : i_tail + G] = _times(Q, b, True)
        _from_cluster_vector(zs, out, i_mu, i_fu, True)
    if not paired:
        return out, log_jacobian
    cos, sin = _pair_parts(theta, i_sig[1], i_sig[3], inv_root)
    for s in range(S):
        _turn_sums(
            theta, out, i_mw + s, i_fw + s * (G - 1), i_tail + J + s, S, cos, sin, inv_root, cluster
        )
    return out, log_jacobian


@numba.njit(cache=True)
def _turn_sums(theta, out, i_m, i_f, first, stride, cos, sin, inv_root, cluster):
    """One set of standardised pairs turned back (:func:`_unpair`): the cluster-level
    coordinates at ``i_m`` (mean) and ``i_f`` (zero-sum part) hold the sums, and the
    task-level coordinates ``theta[first + j * stride]`` hold, in their clusters' mean
    directions, the partners; written into ``out``."""
    G = inv_root.shape[0]
    a, b, zs = np.empty(G), np.zeros(G), np.empty(G)
    _zero_sum(theta[i_f : i_f + G - 1], a)
    for j in range(cluster.shape[0]):
        b[cluster[j]] += theta[first + j * stride]
    for g in range(G):
        a[g] += theta[i_m]
        b[g] *= inv_root[g]
        zs[g] = cos[g] * a[g] - sin[g] * b[g]
        a[g] = (sin[g] * a[g] + cos[g] * b[g] - b[g]) * inv_root[g]  # the change
    for j in range(cluster.shape[0]):
        out[first + j * stride] += a[cluster[j]]
    _from_cluster_vector(zs, out, i_m, i_f, True)


@numba.njit(cache=True)
def _turn_sums_adjoint(theta, grad, i_m, i_f, first, stride, cos, sin, inv_root, cluster):
    """The gradient through :func:`_turn_sums`, in place; returns its part in the pair's
    angle."""
    G = inv_root.shape[0]
    a, b = np.empty(G), np.zeros(G)
    g_z, g_xi, g_a = np.empty(G), np.zeros(G), np.empty(G)
    _zero_sum(theta[i_f : i_f + G - 1], a)
    _zero_sum(grad[i_f : i_f + G - 1], g_z)
    for j in range(cluster.shape[0]):
        b[cluster[j]] += theta[first + j * stride]
        g_xi[cluster[j]] += grad[first + j * stride]
    turn = 0.0
    for g in range(G):
        a[g] += theta[i_m]
        g_z[g] += grad[i_m] / G
        b[g] *= inv_root[g]
        g_xi[g] *= inv_root[g]
        z_g = cos[g] * a[g] - sin[g] * b[g]
        xi_g = sin[g] * a[g] + cos[g] * b[g]
        turn += cos[g] * sin[g] * (g_xi[g] * z_g - g_z[g] * xi_g)
        g_a[g] = cos[g] * g_z[g] + sin[g] * g_xi[g]
        g_xi[g] = (-sin[g] * g_z[g] + cos[g] * g_xi[g] - g_xi[g]) * inv_root[g]  # the change
    for j in range(cluster.shape[0]):
        grad[first + j * stride] += g_xi[cluster[j]]
    _from_cluster_vector(g_a, grad, i_m, i_f, False)
    return turn


@numba.njit(cache=True)
def _from_cluster_vector(z, out, i_m, i_f, mean):
    """``out[i_m] = mean(z)`` (with ``mean``, else ``sum(z)``) and ``out[i_f:i_f + G - 1] =
    B' z`` (:func:`_zero_sum`): the coordinates ``m, f`` of a cluster vector ``z = m + B f``,
    or without ``mean`` the gradient in them from that in ``z``."""
    G = z.shape[0]
    total = 0.0
    for g in range(G):
        total += z[g]
    out[i_m] = total / G if mean else total
    for k in range(G - 1):
        out[i_f + k] = 0.0
    _zero_sum_adjoint(z, 1.0, out[i_f : i_f + G - 1])


@numba.njit(cache=True)
def _unpair_adjoint(theta, spec, const, cluster, Q, grad):
    """The gradient in the sampler's coordinates (:func:`_unpair`) from ``grad``, that in
    the unrotated ones (overwritten), the log-Jacobian's included."""
    S, G, paired, inv_root, i_sig, i_mu, i_fu, i_mw, i_fw, i_tail = _pair_layout(
        spec, const, cluster
    )
    J = cluster.shape[0]
    cos, sin = _pair_parts(theta, i_sig[0], i_sig[2], inv_root)
    if Q.shape[0] == 0:  # task effects standardised: the sums too
        turn = _turn_sums_adjoint(theta, grad, i_mu, i_fu, i_tail, 1, cos, sin, inv_root, cluster)
        grad[i_sig[0]] += turn
        grad[i_sig[2]] -= turn
    else:
        a = np.empty(G)
        g_z, g_a = np.empty(G), np.empty(G)
        _zero_sum(theta[i_fu : i_fu + G - 1], a)
        inv_large = math.exp(-theta[i_sig[2]])
        for g in range(G):
            a[g] = (a[g] + theta[i_mu]) * cos[g] * inv_large
        b = _times(Q, theta[i_tail : i_tail + G], False)
        _zero_sum(grad[i_fu : i_fu + G - 1], g_z)
        for g in range(G):
            g_z[g] += grad[i_mu] / G
        g_zeta = _times(Q, grad[i_tail : i_tail + G], False)
        turn = d_small = d_large = 0.0
        for g in range(G):
            z_g = cos[g] * a[g] - sin[g] * b[g]
            zeta_g = sin[g] * a[g] + cos[g] * b[g]
            turn += cos[g] * sin[g] * (g_zeta[g] * z_g - g_z[g] * zeta_g)
            g_a[g] = cos[g] * g_z[g] + sin[g] * g_zeta[g]
            g_zeta[g] = -sin[g] * g_z[g] + cos[g] * g_zeta[g]  # now the rotated partner's
            # through a = A / rho and the log-Jacobian, -sum log rho
            d_small -= (g_a[g] * a[g] + 1.0) * sin[g] * sin[g]
            d_large -= (g_a[g] * a[g] + 1.0) * cos[g] * cos[g]
            g_a[g] *= cos[g] * inv_large
        grad[i_tail : i_tail + G] = _times(Q, g_zeta, True)
        _from_cluster_vector(g_a, grad, i_mu, i_fu, False)
        grad[i_sig[0]] += turn + d_small
        grad[i_sig[2]] += d_large - turn
    if not paired:
        return grad
    cos, sin = _pair_parts(theta, i_sig[1], i_sig[3], inv_root)
    turn = 0.0
    for s in range(S):
        turn += _turn_sums_adjoint(
            theta,
            grad,
            i_mw + s,
            i_fw + s * (G - 1),
            i_tail + J + s,
            S,
            cos,
            sin,
            inv_root,
            cluster,
        )
    grad[i_sig[1]] += turn
    grad[i_sig[3]] -= turn
    return grad


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _times(Q, x, transpose):
    """``Q x`` (or ``Q' x``) for square ``Q``, along its rows either way."""
    G = Q.shape[0]
    out = np.zeros(G)
    if transpose:
        for i in range(G):
            xi = x[i]
            for k in range(G):
                out[k] += Q[i, k] * xi
        return out
    for i in range(G):
        acc = 0.0
        for k in range(G):
            acc += Q[i, k] * x[k]
        out[i] = acc
    return out


@numba.njit(cache=True)
def _spread_pairs(spec, const):
    """The indices ``(small, large)`` of the log spreads held in polar coordinates: the task
    and cluster spreads, and with several systems the task-by-system and cluster-by-system
    ones."""
    i_sig = _kernel_layout(spec, const)[22]
    if i_sig[1] >= 0 and i_sig[3] >= 0:
        return np.array([[i_sig[0], i_sig[2]], [i_sig[1], i_sig[3]]])
    return np.array([[i_sig[0], i_sig[2]]])


@numba.njit(cache=True)
def _from_polar(x, spec, const):
    """The log spreads from the polar coordinates the sampler holds with the cluster pairs
    (:func:`_unpair`): of each pair of spreads (task and cluster, task-by-system and
    cluster-by-system), ``log rho = log sqrt(sigma_small^2 + sigma_large^2)`` and ``phi =
    log(sigma_small / sigma_large)``. The data pin the total better than the split: in the
    log spreads themselves that is a curved ridge. The map's Jacobian is one in absolute
    value."""
    out = x.copy()
    pairs = _spread_pairs(spec, const)
    for k in range(pairs.shape[0]):
        i_s, i_l = pairs[k, 0], pairs[k, 1]
        ell, phi = x[i_s], x[i_l]
        out[i_s] = ell - 0.5 * math.log1p(math.exp(-2.0 * phi)) if phi > -20.0 else ell + phi
        out[i_l] = ell - 0.5 * math.log1p(math.exp(2.0 * phi)) if phi < 20.0 else ell - phi
    return out


@numba.njit(cache=True)
def _polar_adjoint(x, spec, const, grad):
    """The gradient in the polar coordinates (:func:`_from_polar`) from that in the log
    spreads, in place."""
    pairs = _spread_pairs(spec, const)
    for k in range(pairs.shape[0]):
        i_s, i_l = pairs[k, 0], pairs[k, 1]
        sin2 = 1.0 / (1.0 + math.exp(-2.0 * x[i_l]))
        g_s, g_l = grad[i_s], grad[i_l]
        grad[i_s] = g_s + g_l
        grad[i_l] = (1.0 - sin2) * g_s - sin2 * g_l


@numba.njit(cache=True)
def logp_and_grad(attenuated, spec, const, p_cluster, p_stratum, c, n, mult):
    """Log density of ``theta`` (prior, log-Jacobians, collapsed likelihood) and its gradient.

    ``spec`` and ``const`` come from :class:`Coordinates`; ``p_cluster``/``p_stratum`` give each
    count pattern's cluster and stratum; ``c``, ``n`` ``(P, S)`` and ``mult (P,)`` the patterns.
    In the full-latent form (``spec[9]``, the number of tasks) the patterns are the tasks, one
    each in task order, and ``theta`` ends with their effects' coordinates
    (:func:`_task_effects`, :func:`_latent_cells`) in place of the quadrature. With
    ``spec[12]`` the collapsed form's ``theta`` is attenuated (:func:`_attenuation`): the
    density is computed at its plain coordinates (:func:`_plain_theta`) and the gradient
    taken back, the log-Jacobian added. With ``spec[11]`` 3 or 4 the full-latent form's ``theta``
    holds its task and cluster spreads in polar coordinates (:func:`_from_polar`) and its
    cluster pairs rotated (:func:`_unpair`): the density is that of the plain coordinates
    plus the map's log-Jacobian. With ``spec[16]`` the task-latent form's ``theta`` holds
    some cluster-level coordinates guided (:func:`_unguide`), likewise.
    """
    if _guided(spec):
        theta, log_jacobian = _unguide(attenuated, spec, const)
        logp, grad = _logp_and_grad(theta, spec, const, p_cluster, p_stratum, c, n, mult)
        _guide_adjoint(attenuated, spec, const, grad)
        return logp + log_jacobian, grad
    if not _pairs(spec):
        return _logp_and_grad(attenuated, spec, const, p_cluster, p_stratum, c, n, mult)
    Q = _pair_matrix(spec, const)
    x = _from_polar(attenuated, spec, const)
    theta, log_jacobian = _unpair(x, spec, const, p_cluster, Q)
    logp, grad = _logp_and_grad(theta, spec, const, p_cluster, p_stratum, c, n, mult)
    grad = _unpair_adjoint(x, spec, const, p_cluster, Q, grad)
    _polar_adjoint(attenuated, spec, const, grad)
    return logp + log_jacobian, grad


@numba.njit(cache=True)
def _logp_and_grad(attenuated, spec, const, p_cluster, p_stratum, c, n, mult):
    """:func:`logp_and_grad` in the unrotated coordinates (see :func:`_unpair`)."""
    (
        S,
        H,
        G,
        Gm,
        clusters,
        paired,
        system_level,
        noncentred,
        latent,
        mean,
        sd,
        scale,
        scale_sys,
        rot,
        msize,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        present,
        i_sig,
        i_mu,
        i_fu,
        i_mw,
        i_fw,
        i_ss,
        i_za,
        i_tail,
        centred,
    ) = _kernel_layout(spec, const)
    kappa = _attenuation(spec, attenuated, i_sig, paired)
    scaled = shifted = np.zeros(0, dtype=np.int64)
    if kappa != 1.0:
        scaled, shifted = _attenuated_parts(spec, const)
    theta = _plain_theta(attenuated, kappa, scaled, shifted)
    task_centred, r, vectors, fold, fold_map = _task_rotation(spec, const)
    fold = fold and latent
    # folded, the cluster coordinates hold the cluster effects plus the task effects' cluster
    # components (zero-sum; sigma_task fold_map z_r): the data pin that sum, so the sampler
    # does not trade the two along a ridge; the prior is the model's, centred at them
    centre_u = np.zeros(max(Gm, 0))
    g_centre_u = np.zeros(max(Gm, 0))
    if fold:
        s_t = math.exp(theta[i_sig[0]])
        for a in range(Gm):
            acc = 0.0
            for i in range(r):
                acc += fold_map[a, i] * theta[i_tail + i]
            centre_u[a] = s_t * acc
    # the task-latent form integrates each cell's task-by-system effect out, reading the
    # predictors per (cluster, stratum) as it goes
    integrated = latent and paired and spec.shape[0] > 14 and spec[14] != 0
    logp, grad, eta, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys, base = _forward(
        theta,
        spec,
        const,
        p_cluster,
        p_stratum,
        -1 if integrated else c.shape[0],
        centre_u,
        g_centre_u,
    )
    g_base = np.zeros((0, 0, 0))
    g_eta = np.zeros((0, 0))
    if latent:  # the patterns are the tasks, their effects the tail of theta
        J = c.shape[0]
        tail = theta[i_tail:]
        e = _task_effects(tail, J, sig[0], task_centred, r, vectors)
        seen = e
        if fold:  # the likelihood sees the effects less their folded cluster components
            d_fold = np.empty(G)
            _zero_sum(centre_u, d_fold)
            seen = e.copy()
            for j in range(J):
                seen[j] -= d_fold[p_cluster[j]]
        if integrated:
            total, g_base, g_e, g_sv = _integrated_cells(
                base, p_cluster, p_stratum, seen, c, n, sig[1], u, lam
            )
        else:
            total, g_eta, g_e, g_sv = _sampled_cells(
                spec, const, tail, eta, seen, c, n, sig[1], paired, grad[i_tail:]
            )
        prior_e, g_se = _task_prior(tail, g_e, J, sig[0], task_centred, r, vectors, grad[i_tail:])
        total += prior_e
        if fold:  # the centre's gradient, from the cluster prior and the likelihood
            per_cluster = np.zeros(G)
            for j in range(J):
                per_cluster[p_cluster[j]] -= g_e[j]
            _zero_sum_adjoint(per_cluster, 1.0, g_centre_u)
            for i in range(r):
                acc = 0.0
                for a in range(Gm):
                    acc += fold_map[a, i] * g_centre_u[a]
                grad[i_tail + i] += sig[0] * acc
            for a in range(Gm):
                g_se += centre_u[a] * g_centre_u[a] / sig[0]
    else:
        total, g_eta, g_se, g_sv = loglik_and_grad(
            eta, c, n, mult, sig[0], sig[1], paired, x, logw, z, log_omega, u, lam
        )
    if integrated:
        _backward_rows(
            theta, spec, const, g_base, g_se, g_sv, grad, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys
        )
    else:
        _backward(
            theta,
            spec,
            const,
            p_cluster,
            p_stratum,
            g_eta,
            g_se,
            g_sv,
            grad,
            sig,
            d_u,
            d_w,
            d_shift,
            sig_sys,
            d_sig_sys,
        )
    if kappa != 1.0:
        logp += _attenuation_adjoint(
            attenuated, grad, kappa, scaled, shifted, i_sig, paired, 1 if latent else 0
        )
    return logp + total, grad


@numba.njit(cache=True)
def _sampled_cells(spec, const, tail, eta, e, c, n, sigma_v, paired, g_tail):
    """The full-latent form's cells: every cell's task-by-system effect sampled
    (:func:`_latent_cells`), or the cells with a table integrated (:func:`_hybrid_cells`)."""
    block, counts = _cell_table_block(spec, const)
    if counts.shape[0] > 0:
        return _hybrid_cells(tail, eta, e, c, n, sigma_v, block, counts, g_tail)
    y = _latent_y(e, tail, eta, sigma_v, paired)
    small, log_term = _softplus_parts(y)
    return _latent_cells(tail, y, small, log_term, c, n, sigma_v, paired, g_tail)


@numba.njit(cache=True, nogil=True)
def kernel_logp(theta, spec, const, index, c, n, mult):
    """:func:`logp_and_grad` in one compiled call that releases the GIL, with the patterns'
    cluster and stratum as ``index (2, P)``."""
    return logp_and_grad(theta, spec, const, index[0], index[1], c, n, mult)


# -- the collapsed model's kernel behind a C symbol ------------------------------------------
# PyMC's numba backend and nutpie link every kernel a model calls into the model's compiled
# function and optimise the whole module again, for every model built. Called through a C
# symbol instead, the kernel is compiled once (cached on disk) and the model's function only
# holds a call to it. Every compiled function lives in this one file on purpose: numba's disk
# cache is invalidated by a change of the function's own file only, so a kernel calling into
# another file could keep a stale copy of it.
_F64 = numba.types.CPointer(numba.types.float64)
_I64 = numba.types.CPointer(numba.types.int64)
_C_SIG = numba.types.void(
    _F64,
    numba.types.int64,  # theta, its length
    _I64,
    _F64,
    numba.types.int64,  # spec (SPEC_SIZE,), constants, their length
    _I64,
    numba.types.int64,  # cluster and stratum of each pattern (2, P), P
    _F64,
    _F64,
    _F64,  # c, n (P, S), mult (P,)
    _F64,
    _F64,  # out: log density, gradient
)
_SYMBOL = f"bayeval_collapsed_logp_{KERNEL_HASH}"
#: The kernel's integer constants (:meth:`bayeval.models._collapsed.Coordinates.spec`).
SPEC_SIZE = 16
_symbol_ready = False


def _c_kernel(theta_p, D, spec_p, const_p, n_const, index_p, P, c_p, n_p, mult_p, out_p, grad_p):
    spec = numba.carray(spec_p, (SPEC_SIZE,))
    S = spec[0]
    index = numba.carray(index_p, (2, P))
    logp, grad = logp_and_grad(
        numba.carray(theta_p, (D,)),
        spec,
        numba.carray(const_p, (n_const,)),
        index[0],
        index[1],
        numba.carray(c_p, (P, S)),
        numba.carray(n_p, (P, S)),
        numba.carray(mult_p, (P,)),
    )
    numba.carray(out_p, (1,))[0] = logp
    numba.carray(grad_p, (D,))[:] = grad


def c_signature():
    """The C signature of the kernel behind :func:`kernel_symbol`."""
    return _C_SIG


def kernel_symbol() -> str:
    """Compile (or load from the disk cache) the C kernel and register its symbol; its name."""
    global _symbol_ready
    if not _symbol_ready:
        from llvmlite import binding

        compiled = numba.cfunc(_C_SIG, cache=True)(_c_kernel)
        binding.add_symbol(_SYMBOL, compiled.address)
        _symbol_ready = True
    return _SYMBOL


@numba.njit(cache=True, nogil=True)
def _pattern_logliks_block(
    eta_rows, row, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam, first, last, out
):
    """Rows ``first:last`` of :func:`all_pattern_logliks`' ``out``, without the GIL."""
    P, S = c.shape
    eta = np.empty((P, S))
    for d in range(first, last):
        for p in range(P):
            eta[p] = eta_rows[d, row[p]]
        out[d] = pattern_logliks(
            eta, c, n, sigma_e[d], sigma_v[d], paired, x, logw, z, log_omega, u, lam
        )


#: Draws a thread takes at a time in :func:`all_pattern_logliks`.
LOGLIK_BLOCK = 100


def all_pattern_logliks(
    eta_rows, row, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam
):
    """:func:`pattern_logliks` for every draw ``(D, P)``: the linear predictors ``eta_rows
    (D, R, S)`` of each (cluster, stratum) row, pattern ``p`` reading row ``row[p]``, and
    ``sigma_e``, ``sigma_v (D,)``. Blocks of :data:`LOGLIK_BLOCK` draws run on numba's
    number of threads; the kernel releases the GIL, so a caller can compute them beside
    other work (as :func:`bayeval.fit` does beside the convergence diagnostics)."""
    D = eta_rows.shape[0]
    out = np.empty((D, c.shape[0]))

    def block(first):
        _pattern_logliks_block(
            eta_rows,
            row,
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
            first,
            min(D, first + LOGLIK_BLOCK),
            out,
        )

    with ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        list(pool.map(block, range(0, D, LOGLIK_BLOCK)))
    return out


@numba.njit(cache=True)
def pattern_logliks(eta, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam):
    """Log marginal likelihood of every pattern ``(P,)`` at one draw (binomial coefficients
    omitted), by the rule :func:`loglik_and_grad` uses for it."""
    out = np.empty(eta.shape[0])
    _loglik(
        eta,
        c,
        n,
        np.ones(eta.shape[0]),
        sigma_e,
        sigma_v,
        paired,
        x,
        logw,
        z,
        log_omega,
        u,
        lam,
        out,
    )
    return out


# -- the kernel as nutpie's C log density ----------------------------------------------------
# nutpie samples a PyMC model through two C functions of its own signature, (dimension, point,
# gradient out, log density out, user data) and (dimension, expanded size, point, values out,
# user data), which it calls from its threads without Python. These are the kernel behind that
# signature, compiled once per machine (cached on disk): a fit builds no PyMC model and
# compiles nothing, and keeps per draw only what the expansion writes. The user data is an
# int64 array of sizes and the addresses of the kernel's data arrays (NUTPIE_FIELDS).
NUTPIE_FIELDS = (
    "dim",
    "P",
    "S",
    "n_spec",
    "n_const",
    "spec",
    "const",
    "index",
    "c",
    "n",
    "mult",
    "n_kept",
    "J",
    "log_sigma_task",
)


def _pointer_intrinsic(dtype, doc):
    """An intrinsic that reads an int64 address as a pointer to ``dtype``."""

    def as_pointer(typingctx, address):
        sig = numba.types.CPointer(dtype)(numba.types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    as_pointer.__doc__ = doc
    return intrinsic(as_pointer)


_as_f64_pointer = _pointer_intrinsic(numba.types.float64, "The int64 address as a float64 *.")
_as_i64_pointer = _pointer_intrinsic(numba.types.int64, "The int64 address as an int64 *.")


_NUTPIE_LOGP_SIG = numba.types.int64(numba.types.uint64, _F64, _F64, _F64, _I64)
_NUTPIE_EXPAND_SIG = numba.types.int64(numba.types.uint64, numba.types.uint64, _F64, _F64, _I64)


def _nutpie_logp(dim, x_p, grad_p, logp_p, meta_p):
    meta = numba.carray(meta_p, (len(NUTPIE_FIELDS),))
    D, P, S = meta[0], meta[1], meta[2]
    if dim != D:
        return -1
    x = numba.carray(x_p, (D,))
    if not finite(x):  # a diverged trajectory: no density there (as code 4)
        return 4
    spec = numba.carray(_as_i64_pointer(meta[5]), (meta[3],))
    const = numba.carray(_as_f64_pointer(meta[6]), (meta[4],))
    index = numba.carray(_as_i64_pointer(meta[7]), (2, P))
    try:  # as nutpie's own C functions: an error is code 1, a point the sampler rejects
        logp, grad = logp_and_grad(
            x,
            spec,
            const,
            index[0],
            index[1],
            numba.carray(_as_f64_pointer(meta[8]), (P, S)),
            numba.carray(_as_f64_pointer(meta[9]), (P, S)),
            numba.carray(_as_f64_pointer(meta[10]), (P,)),
        )
    except Exception:  # noqa: BLE001
        return 1
    out = numba.carray(grad_p, (D,))
    out[:] = grad
    numba.carray(logp_p, (1,))[0] = logp
    return nutpie_status(logp, out)


@numba.njit(cache=True)
def finite(x):
    """Whether every value of ``x`` is finite."""
    for value in x:
        if not math.isfinite(value):
            return False
    return True


@numba.njit(cache=True)
def nutpie_status(logp, grad):
    """nutpie's return code for a log density and its gradient: 0, or 3 for a gradient that
    is not finite, 4 for a log density that is not (a point the sampler rejects)."""
    if not finite(grad):
        return 3
    if not math.isfinite(logp):
        return 4
    return 0


def _nutpie_expand(dim, n_expanded, x_p, out_p, meta_p):
    """The kept values of a draw: ``theta`` (collapsed), or its first ``n_kept`` coordinates
    and the ``J`` task effects (full-latent, :func:`latent_task_effects`)."""
    meta = numba.carray(meta_p, (len(NUTPIE_FIELDS),))
    D, kept, J = meta[0], meta[11], meta[12]
    if dim != D or n_expanded != kept + J:
        return -1
    x = numba.carray(x_p, (D,))
    out = numba.carray(out_p, (kept + J,))
    if J > 0:  # in the kernel's coordinates (:func:`unmapped`)
        spec = numba.carray(_as_i64_pointer(meta[5]), (meta[3],))
        const = numba.carray(_as_f64_pointer(meta[6]), (meta[4],))
        x = unmapped(x, spec, const, numba.carray(_as_i64_pointer(meta[7]), (2, meta[1]))[0])
        out[kept:] = latent_task_effects(x, spec, const, kept, J, meta[13])
    for i in range(kept):
        out[i] = x[i]
    return 0


@numba.njit(cache=True)
def unmapped(x, spec, const, cluster):
    """``x`` in the kernel's coordinates: :func:`_unguide` where the form guides its
    cluster-by-system coordinates, :func:`_unpair` where it rotates its cluster pairs, else
    ``x`` itself."""
    if _guided(spec):
        return _unguide(x, spec, const)[0]
    if not _pairs(spec):
        return x
    return _unpair(_from_polar(x, spec, const), spec, const, cluster, _pair_matrix(spec, const))[0]


@numba.njit(cache=True)
def latent_task_effects(x, spec, const, kept, J, log_sigma_task):
    """The task effects ``(J,)`` of a full-latent ``theta`` (:func:`_task_effects`), its tail
    starting at ``kept`` and its log task spread at ``log_sigma_task``."""
    centred, r, vectors, _, _ = _task_rotation(spec, const)
    i_sig = np.array([log_sigma_task, log_sigma_task + 1])
    kappa = _attenuation(spec, x, i_sig, spec[4] != 0)
    if kappa != 1.0:  # the task-latent form's attenuated coordinates, made plain
        scaled, shifted = _attenuated_parts(spec, const)
        x = _plain_theta(x, kappa, scaled, shifted)
    return _task_effects(x[kept : kept + J], J, math.exp(x[log_sigma_task]), centred, r, vectors)


def nutpie_functions():
    """The compiled C log density and expansion (:func:`_nutpie_logp`, :func:`_nutpie_expand`),
    loaded from numba's disk cache after the first compilation on a machine."""
    global _nutpie_cfuncs
    if _nutpie_cfuncs is None:
        _nutpie_cfuncs = (
            numba.cfunc(_NUTPIE_LOGP_SIG, cache=True)(_nutpie_logp),
            numba.cfunc(_NUTPIE_EXPAND_SIG, cache=True)(_nutpie_expand),
        )
    return _nutpie_cfuncs


_nutpie_cfuncs = None
