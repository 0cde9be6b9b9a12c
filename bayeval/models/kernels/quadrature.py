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
:mod:`bayeval.models.kernels.collapsed` wraps them into the log density that PyMC and nutpie sample.
Binomial coefficients are left out (constant in the parameters).

In the likelihood kernel (:func:`likelihood.loglik_and_grad`) the inner integral, which depends on a
system and an outer node only through ``y = eta_s + e`` and the counts, is tabulated once per
counts on a grid in ``y`` and interpolated, and the outer rule is centred at the mode of the
task effect's marginal (see :func:`likelihood._loglik`); the exact task draws read the same tables,
the conditional moments keep the nested rule above. The two agree to about 1e-5 per pattern.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.numerics import (
    _LOG_SQRT_2PI,
    _SQRT2,
    _likelihood_power,
    _logsumexp,
    _power,
    _sigmoid,
    _softplus,
)

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
# 7e-6 at h = 1.25 s and far less for the usual, wider conditionals (the fixed grid's error
# this replaced: ``models/logit_normal.md``, sampling settings)
GRID_INFO_STEP = 2.5
GRID_MAX_NODES = 2001  # the refinement stops here (sigma_task ~ 150 logits, far past any prior)


def hermite(n_nodes: int):
    """Gauss-Hermite nodes and log weights, with the ``exp(x^2)`` factor folded in."""
    x, w = np.polynomial.hermite.hermgauss(n_nodes)
    return x, np.log(w) + x**2


@numba.njit(cache=True)
def _clip(step):
    return min(max(step, -MAX_STEP), MAX_STEP)


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
    """Joint mode of one pattern's task effects by damped Newton steps.

    Returns the task effect's mode and its Laplace standard deviation, and fills ``v (S,)`` with the
    task-by-system modes and ``weight (S,)`` with ``n p (1 - p)`` there.
    """
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
    """Grid terms of both one-attempt counts of a system, straight from its predictor.

    A success has inner integral ``E p`` and score mean ``E[p q] / E p``, a failure ``E q`` and
    ``-E[p q] / E q`` (likewise with the node ``u``); writes rows ``failure`` and ``success``.

    The sums over the inner nodes run node by node over the whole outer grid (for every outer
    node in the same order as one node at a time would), in rows that hold the running sums
    until the last step: a loop without a reduction, which the compiler can vectorise.
    """
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
    """The largest node spacing (logits) the grid may have for the grid patterns among ``n``.

    :data:`GRID_MAX_LOGIT_STEP`, or :data:`GRID_INFO_STEP` over the square root of the most trials
    in one of them, whichever is smaller.
    """
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
    """The grid nodes and log weights to use at ``sigma_e`` for patterns with trials ``n (P, S)``.

    The given ones while their spacing is at most :func:`_grid_step` logits, else a finer grid over
    the same range (at most :data:`GRID_MAX_NODES` nodes: the sampler may propose absurd spreads
    while it adapts).
    """
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
            total = 0.0
            for m in range(L):
                pk, qk = prob[k, s, m], comp[k, s, m]
                like = (lam[m] if paired else 1.0) * _likelihood_power(pk, qk, c[s], n[s])
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
        """The node arrays in the kernels' argument order."""
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
def _combo(s, cs, ns, paired, u, lam, tab_p, tab_q, g_lin, score_e, score_v):
    """Grid terms of one system's counts ``(cs, ns)`` at every outer node.

    The inner integral ``g_lin (K,)`` and the inner means of the score ``c - n p`` (times 1 and
    times the node ``u``). One-attempt counts, the common case, get straight-line loops.
    """
    L = u.shape[0] if paired else 1
    a_pow, b_pow = int(cs), int(ns - cs)
    whole = a_pow == cs  # a fractional count: a sum of partial-credit scores
    for k in range(tab_p.shape[0]):
        total, a, b = 0.0, 0.0, 0.0
        for m in range(L):
            pk, qk = tab_p[k, s, m], tab_q[k, s, m]
            if not whole:
                like = _likelihood_power(pk, qk, cs, ns)
            elif a_pow + b_pow == 1:
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


@numba.njit(cache=True, fastmath={"contract"})
def _fractional_terms(
    eta_s, cs, ns, sigma_e, sigma_v, paired, z, u, lam, ez, eu, reach, rates, out, work
):
    """:func:`_combo`'s grid terms of a fractional count ``cs`` of ``ns`` (partial credit).

    ``rates (2, L, K)`` holds the system's rates ``p`` and ``1 - p`` at the grid nodes, inner node
    first (:func:`_inner_major`), so that the loops over the outer nodes run over contiguous
    memory without a reduction, which the compiler vectorises. ``p^c q^(n - c) = q^n exp(c y)``
    and ``exp(c y) = exp(c eta_s) ez[k]^-c eu[m]^-c`` (:func:`_factors`): one power per outer and
    per inner node. Where ``c y`` could leave the floating-point range each node takes its
    log rates from its logit instead. ``out`` holds the rows ``g_lin``, ``score_e``,
    ``score_v``; ``work`` at least ``K`` numbers.
    """
    g_lin, score_e, score_v = out
    L, K = rates.shape[1], rates.shape[2]
    direct = cs * (abs(eta_s) + reach) >= 600.0
    if not direct:
        ec = math.exp(cs * eta_s)
        for k in range(K):
            work[k] = ec * ez[k] ** (-cs)
    nn = int(ns)
    g_lin[:K] = 0.0
    score_e[:K] = 0.0
    score_v[:K] = 0.0
    for m in range(L):
        weight = lam[m] if paired else 1.0
        node = u[m] if paired else 0.0
        p_m, q_m = rates[0, m], rates[1, m]
        f_m = weight * (1.0 if direct else eu[m] ** (-cs))
        for k in range(K):
            if direct:  # each node's log rates from its logit: nothing leaves the range
                y = eta_s + sigma_e * z[k] + node * sigma_v
                like = weight * math.exp(-cs * _softplus(-y) - (ns - cs) * _softplus(y))
            else:
                q = q_m[k] if nn == 1 else _power(1.0, q_m[k], 0, nn)
                like = work[k] * f_m * q
            sc = like * (cs - ns * p_m[k])
            g_lin[k] += like
            score_e[k] += sc
            score_v[k] += sc * node
    for k in range(K):
        total = g_lin[k]
        score_e[k] = score_e[k] / total if total > 0.0 else 0.0
        score_v[k] = score_v[k] / total if total > 0.0 else 0.0


@numba.njit(cache=True)
def _inner_major(s, tab_p, tab_q, rates):
    """System ``s``'s grid rates ``(K, S, L)`` copied inner node first into ``rates (2, L, K)``."""
    K, L = tab_p.shape[0], rates.shape[1]
    for m in range(L):
        for k in range(K):
            rates[0, m, k] = tab_p[k, s, m]
            rates[1, m, k] = tab_q[k, s, m]


@numba.njit(cache=True)
def _grid_node_weights(rows, omega, log_omega, g_lin, f_k, log_f):
    """Outer-node terms of one grid pattern; returns the pattern's log L.

    The pattern's systems' inner integrals are the rows ``g_lin[rows[s]]``; fills ``f_k`` with the
    normalised node weights. Products are taken in linear space (no exponentials); only if they
    underflow at every node are they redone in logs.
    """
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
    """Gradient of ``m log L`` of one grid pattern from its normalised node weights ``f_k``.

    Adds to ``g_eta_p (S,)`` and returns the parts for ``sigma_e`` and ``sigma_v``. Sums may be
    reassociated (vectorised); nothing here can be infinite.
    """
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


@numba.njit(cache=True)
def _conditional_mode(eta_e, c, n, v, prec_v):
    """Mode of v given the task effect, Newton to convergence.

    ``_inner_mode`` takes a few steps from a good start; these conditionals start from anywhere.
    """
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
