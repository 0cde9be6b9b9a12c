"""Nested adaptive Gauss-Hermite quadrature of a task's logit-normal random effects.

For one task, systems s = 1..S with ``c_s`` successes of ``n_s`` trials and linear predictors
``eta_s`` (everything but the task-level effects), the marginal likelihood is::

    L = int N(e; 0, sigma_e) prod_s [ int N(v; 0, sigma_v) Bin(c_s | n_s, expit(eta_s + e + v)) dv ] de

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
"""

from __future__ import annotations

import math

import numba
import numpy as np

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
def _softplus(y):
    return max(y, 0.0) + math.log1p(math.exp(-abs(y)))


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
    e = 0.0
    v = np.zeros(S)
    step_v = np.zeros(S)
    weight = np.zeros(S)
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
            candidate = _joint_log_density(eta, c, n, e + scale * step_e, v + scale * step_v,
                                           prec_e, prec_v)
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
                    log_t[k, s, m] = (logw[m] + offset - 0.5 * prec_v * vl * vl
                                      + c[s] * y - n[s] * _softplus(y))
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
def _single_terms(eta_s, sigma_e, sigma_v, paired, z, u, lam, ez, eu, reach, g_lin, score_e,
                  score_v, failure, success):
    """Grid terms of both one-attempt counts of a system, straight from its predictor: a success
    has inner integral ``E p`` and score mean ``E[p q] / E p``, a failure ``E q`` and
    ``-E[p q] / E q`` (likewise with the node ``u``); writes rows ``failure`` and ``success``."""
    K, L = z.shape[0], (u.shape[0] if paired else 1)
    direct = abs(eta_s) + reach >= 700.0
    es = 1.0 if direct else math.exp(-eta_s)
    for k in range(K):
        p_sum, q_sum, pq, upq = 0.0, 0.0, 0.0, 0.0
        a = es * ez[k]
        for m in range(L):
            if direct:
                pk, qk = _direct_rate(eta_s + sigma_e * z[k] + (sigma_v * u[m] if paired else 0.0))
            else:
                big = a * eu[m]
                pk = 1.0 / (1.0 + big)
                qk = big * pk
            weight = lam[m] if paired else 1.0
            wp = weight * pk
            p_sum += wp
            q_sum += weight * qk
            pq += wp * qk
            upq += wp * qk * (u[m] if paired else 0.0)
        g_lin[success, k] = p_sum
        g_lin[failure, k] = q_sum
        score_e[success, k] = pq / p_sum if p_sum > 0.0 else 0.0
        score_v[success, k] = upq / p_sum if p_sum > 0.0 else 0.0
        score_e[failure, k] = -pq / q_sum if q_sum > 0.0 else 0.0
        score_v[failure, k] = -upq / q_sum if q_sum > 0.0 else 0.0


@numba.njit(cache=True)
def _grid_for(sigma_e, z, log_omega):
    """The grid nodes and log weights to use at ``sigma_e``: the given ones while their spacing
    is at most :data:`GRID_MAX_LOGIT_STEP` logits, else a finer grid over the same range."""
    K = z.shape[0]
    width = z[K - 1] - z[0]
    if sigma_e * width / (K - 1) <= GRID_MAX_LOGIT_STEP:
        return z, log_omega
    K = int(math.ceil(sigma_e * width / GRID_MAX_LOGIT_STEP)) + 1
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
                like = (lam[m] if paired else 1.0)
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
def _aghq_node_terms(eta, c, n, sigma_e, sigma_v, paired, x, e_k, v_kl, log_t, log_g, r,
                     score, prob):
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
    S = eta.shape[1]
    if _is_low(n[p]):
        _refresh_table(eta[p], sigma_e, sigma_v, paired, z, u, tab_p, tab_q, last)
        log_l = _pattern_grid(c[p], n[p], paired, z, log_omega, u, lam, tab_p, tab_q, r,
                              score, log_g, log_f)
        L = u.shape[0] if paired else 1
        prob[: z.shape[0], :, :L] = tab_p[:, :, :L]
        return log_l, z.shape[0], L
    log_l = _pattern(eta[p], c[p], n[p], sigma_e, sigma_v, paired, x, logw, e_k, v_kl, log_t,
                     log_g, log_f)
    _aghq_node_terms(eta[p], c[p], n[p], sigma_e, sigma_v, paired, x, e_k, v_kl, log_t, log_g,
                     r, score, prob)
    return log_l, x.shape[0], (x.shape[0] if paired else 1)


@numba.njit(cache=True)
def _buffers(S, n_x, n_z, n_u):
    K, L = max(n_x, n_z), max(n_x, n_u)
    return (np.empty(K), np.empty(K), np.zeros((K, S, L)), np.zeros((K, S, L)),
            np.zeros((K, S, L)), np.zeros((K, S, L)), np.zeros((K, S, L)), np.empty((K, S)),
            np.zeros((n_z, S, L)), np.zeros((n_z, S, L)), np.full(S, np.nan))


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


@numba.njit(cache=True)
def loglik_and_grad(eta, c, n, mult, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam):
    """``sum_p mult_p log L_p`` and its gradient in ``eta (P, S)``, ``sigma_e``, ``sigma_v``.

    Grid patterns (every n <= 2) share, within a cluster and stratum, the rates at the nodes and
    the inner integrals of each system's counts; their gradient is the exact derivative of the
    rule. AGHQ patterns use Fisher's identity with the same nodes.
    """
    P, S = eta.shape
    z, log_omega = _grid_for(sigma_e, z, log_omega)
    Kx, Kz = x.shape[0], z.shape[0]
    Lx = Kx if paired else 1
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
    # work arrays of the adaptive rule, allocated at the first pattern that needs it
    e_k = np.empty(Kx)
    v_kl = np.zeros((0, S, Lx))
    log_t, r, score, prob = v_kl, v_kl, v_kl, v_kl
    log_g = np.zeros((Kx, S))
    total, g_se, g_sv = 0.0, 0.0, 0.0
    g_eta = np.zeros((P, S))
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
                    _single_terms(eta[p, s], sigma_e, sigma_v, paired, z, u, lam, ez, eu, reach,
                                  g_lin, g_e, g_v, row - cs, row - cs + 1)
                    ready[row - cs:row - cs + 2] = True
                else:
                    if not table_ready[s]:
                        _system_table(eta[p, s], s, sigma_e, sigma_v, paired, z, u, ez, eu,
                                      reach, tab_p, tab_q)
                        table_ready[s] = True
                    _combo(s, c[p, s], n[p, s], paired, u, lam, tab_p, tab_q, g_lin[row],
                           g_e[row], g_v[row])
                    ready[row] = True
            total += m * _grid_node_weights(rows, omega, log_omega, g_lin, f_k, log_f)
            d_se, d_sv = _grid_gradient(rows, f_k, f_z, z, g_e, g_v, m, g_eta[p])
            g_se += d_se
            g_sv += d_sv
            continue
        if v_kl.shape[0] == 0:
            v_kl = np.zeros((Kx, S, Lx))
            log_t, r = np.zeros_like(v_kl), np.zeros_like(v_kl)
            score, prob = np.zeros_like(v_kl), np.zeros_like(v_kl)
        log_l = _pattern(eta[p], c[p], n[p], sigma_e, sigma_v, paired, x, logw, e_k, v_kl,
                         log_t, log_g, log_f)
        _aghq_node_terms(eta[p], c[p], n[p], sigma_e, sigma_v, paired, x, e_k, v_kl, log_t,
                         log_g, r, score, prob)
        total += m * log_l
        for k in range(Kx):
            pi = m * math.exp(log_f[k] - log_l)
            if pi == 0.0:
                continue
            g_se += pi * ((e_k[k] / sigma_e) ** 2 - 1.0) / sigma_e
            for s in range(S):
                for q in range(Lx):
                    g_eta[p, s] += pi * r[k, s, q] * score[k, s, q]
                    if paired:
                        vl = v_kl[k, s, q]
                        g_sv += pi * r[k, s, q] * ((vl / sigma_v) ** 2 - 1.0) / sigma_v
    return total, g_eta, g_se, g_sv


@numba.njit(cache=True)
def _f(p, k, pass_at):
    return 1.0 - (1.0 - p) ** k if pass_at else p**k


@numba.njit(cache=True)
def _moments(eta, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega, u, lam, ks, pass_at,
             mean, cross):
    """Conditional moments of f(p_s) per pattern for one draw (see :func:`moments`)."""
    z, log_omega = _grid_for(sigma_e, z, log_omega)
    P, S = eta.shape
    Q = ks.shape[0]
    buf = _buffers(S, x.shape[0], z.shape[0], u.shape[0])
    _, log_f, _, _, r, _, prob, _, _, _, _ = buf
    h1 = np.empty((log_f.shape[0], S, Q))
    h2 = np.empty((log_f.shape[0], S, Q))
    for p in range(P):
        log_l, K, L = _evaluate(p, eta, c, n, sigma_e, sigma_v, paired, x, logw, z, log_omega,
                                u, lam, buf)
        h1[:] = 0.0
        h2[:] = 0.0
        for k in range(K):
            for s in range(S):
                for q in range(L):
                    for j in range(Q):
                        f = _f(prob[k, s, q], ks[j], pass_at)
                        h1[k, s, j] += r[k, s, q] * f
                        h2[k, s, j] += r[k, s, q] * f * f
        for k in range(K):
            pi = math.exp(log_f[k] - log_l)
            for s in range(S):
                for j in range(Q):
                    mean[p, s, j] += pi * h1[k, s, j]
                    cross[p, s, s, j] += pi * h2[k, s, j]
                    for t in range(S):
                        if t != s:
                            cross[p, s, t, j] += pi * h1[k, s, j] * h1[k, t, j]


def moments(eta, c, n, sigma_e, sigma_v, paired, ks, pass_at, rules=None):
    """Conditional moments of f(p_s) per draw and pattern, given the parameters.

    ``eta (D, P, S)``, ``sigma_e``/``sigma_v`` ``(D,)``. Returns ``mean (D, P, S, k)`` and
    ``cross (D, P, S, S, k)``: E[f_s f_t], with E[f_s^2] on the diagonal.
    """
    rules = rules or Rules()
    D, P, S = eta.shape
    mean = np.zeros((D, P, S, len(ks)))
    cross = np.zeros((D, P, S, S, len(ks)))
    c, n = np.ascontiguousarray(c, dtype=float), np.ascontiguousarray(n, dtype=float)
    for d in range(D):
        _moments(np.ascontiguousarray(eta[d]), c, n, float(sigma_e[d]), float(sigma_v[d]),
                 paired, *rules.arrays(), np.asarray(ks, float), pass_at, mean[d], cross[d])
    return mean, cross


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
        out[p] = loglik_and_grad(eta[p:p + 1], c[p:p + 1], n[p:p + 1], np.ones(1),
                                 float(sigma_e), 1.0 if sigma_v is None else float(sigma_v),
                                 sigma_v is not None, *arrays)[0]
    return out
