r"""The judged cells with their task-by-system effect integrated out, and its exact draws.

A judged cell (system s, task j) holds labelled attempts counted by (verdict, label),
``n11, n10, n01, n00``, and unlabelled ones by verdict, ``u1, u0``. Given the cell's true rate
``p = expit(eta + v)``, the judge's sensitivity ``se`` and specificity ``sp``, its likelihood is
``se^n11 (1 - se)^n01 (1 - sp)^n10 sp^n00 f(p)`` with::

    f(p) = p^A (1 - p)^B q^u1 (1 - q)^u0,   A = n11 + n01,  B = n10 + n00,
    q = se p + (1 - sp)(1 - p)                 P(verdict 1), the true outcome summed out

The task-by-system effect ``v ~ N(0, sigma^2)`` enters one cell only, so it is integrated out
here, cell by cell: ``L = E f(expit(eta + sigma Z))``. The sampler then sees no ``(system,
task)`` latent array, which was most of the judge-aware model's dimensions and the slowest part
of its mixing (``models/judge.md``). Written by hand because no library integrates a PyMC
model's latent variable out into a log density with its gradient.

How: ``f`` is a polynomial of degree ``n`` (the cell's attempts) in ``p``; in the Bernstein
basis ``p^k (1 - p)^(n - k)`` its coefficients are all positive (:func:`_coefficients`), so the
integral is a sum without cancellation, and a quadrature node costs a division and a few
products: ``exp(-(eta + sigma z)) = exp(-eta) exp(-sigma z)``, the second factor shared by
every cell. A one-attempt cell (``f`` linear) needs ``E p`` alone. The rule is a trapezoid in
``z`` (:func:`node_step`), whose error decays exponentially for these analytic integrands;
measured against SciPy's adaptive quadrature, a cell's log-likelihood is within 1e-6 for cells
of up to 10 attempts and ``sigma`` up to 3, and within 3e-6 at 20 attempts, wherever the cell's
mass lies within 5 prior sds (``tests/models/test_judge_kernel.py``). The rule stops at
:data:`HALF_WIDTH` prior sds: a cell whose likelihood sits further out (30 successes at a rate
the rest of the model puts near 0) is underestimated, a region a fit does not visit. Cells of
more than :data:`MAX_ATTEMPTS` attempts keep the full-latent model.

The draws (:func:`draw_effects`) are exact: a proposal from the prior ``N(0, sigma^2)`` is kept
with probability ``f(p) / max f``, the maximum found on ``[0, 1]`` by bisection of the concave
``log f``'s slope. Where the kept share is small (a cell whose likelihood sits in the prior's
tail) the draw falls back to inversion of the conditional's CDF on a fine grid.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph import Apply, Op

from bayeval.models.kernels.disk_cache import KERNEL_HASH
from bayeval.models.kernels.numerics import _LOG_SQRT_2PI

#: The most judged attempts a cell may hold for the collapsed form (beyond: full latent).
MAX_ATTEMPTS = 30
#: The rule (:func:`node_step`): nodes ``z = i h`` for ``|z| <= HALF_WIDTH``, the step ``h`` at
#: most ``MAX_STEP``, ``MAX_LOGIT_STEP / sigma`` and ``INFO_STEP / (sigma sqrt(n))``.
HALF_WIDTH = 8.0
MAX_NODES = 4001
MAX_STEP = 0.8
MAX_LOGIT_STEP = 0.6
INFO_STEP = 1.5
#: Proposals from the prior before a draw turns to the grid.
PROPOSALS = 200
#: The grid's points and half-width (in prior sds) when a draw inverts the CDF.
GRID_POINTS = 4001
GRID_HALF_WIDTH = 12.0


@numba.njit(cache=True)
def node_step(sigma, attempts):
    """The trapezoid rule's spacing in ``z`` (``v = sigma z``) for a cell of ``attempts``.

    A trapezoid rule's error on an analytic integrand decays like ``exp(-2 pi d / h)`` for
    singularities at distance ``d`` from the real line. ``f``'s are where ``p`` or ``q`` vanish,
    at imaginary ``y`` distance ``pi``, so ``d = pi / sigma`` in ``z``: :data:`MAX_LOGIT_STEP`
    bounds ``sigma h`` (poles of order ``n`` raise the error's constant, so the bound is
    tighter than ``exp(-2 pi d / h)`` alone asks). A cell of ``n`` attempts is also as peaked
    as a normal of sd at least ``2 / sqrt(n)`` logits, whose error at step ``h`` is ``~2
    exp(-2 pi^2 s^2 / h^2)``: :data:`INFO_STEP` bounds ``sigma h sqrt(n)``. :data:`MAX_STEP`
    bounds ``h`` for the normal weight itself. The constants were tightened until the error
    measured against SciPy met the module's bounds.
    """
    h = MAX_STEP
    if sigma > 0.0:
        h = min(h, MAX_LOGIT_STEP / sigma, INFO_STEP / (sigma * math.sqrt(max(attempts, 1))))
    # at most MAX_NODES nodes: reached only at spreads of hundreds of logits, far past any prior
    return max(h, 2.0 * HALF_WIDTH / (MAX_NODES - 1))


@numba.njit(cache=True, inline="always")
def _log_sigmoids(y):
    """``(log p, log(1 - p))`` for ``p = expit(y)``, stable for any ``y``."""
    soft = math.log1p(math.exp(-abs(y)))
    if y >= 0.0:
        return -soft, -y - soft
    return y - soft, -soft


@numba.njit(cache=True, inline="always")
def _logaddexp(a, b):
    top = max(a, b)
    if top == -np.inf:
        return top
    return top + math.log1p(math.exp(-abs(a - b)))


@numba.njit(cache=True)
def _multiply(c, d_se, d_sp, top, alpha, beta, d_alpha_se, d_beta_se, d_alpha_sp, d_beta_sp):
    """Multiply the Bernstein coefficients ``c[:top + 1]`` by ``alpha p + beta (1 - p)``.

    ``d_se``, ``d_sp`` carry the coefficients' derivatives by the logits of ``se`` and ``sp``
    (the product rule, with the factor's own derivatives). Returns the new degree.
    """
    for k in range(top + 1, -1, -1):
        keep = c[k] if k <= top else 0.0
        shift = c[k - 1] if k >= 1 else 0.0
        keep_se = d_se[k] if k <= top else 0.0
        shift_se = d_se[k - 1] if k >= 1 else 0.0
        keep_sp = d_sp[k] if k <= top else 0.0
        shift_sp = d_sp[k - 1] if k >= 1 else 0.0
        c[k] = alpha * shift + beta * keep
        d_se[k] = alpha * shift_se + beta * keep_se + d_alpha_se * shift + d_beta_se * keep
        d_sp[k] = alpha * shift_sp + beta * keep_sp + d_alpha_sp * shift + d_beta_sp * keep
    return top + 1


@numba.njit(cache=True)
def _coefficients(a, b, u1, u0, se, sp, c, d_se, d_sp):
    """``f(p) = sum_k c[k] p^k (1 - p)^(n - k)``, with ``c``'s derivatives by the logits.

    ``f = p^a (1 - p)^b q^u1 (1 - q)^u0`` with ``q = se p + (1 - sp)(1 - p)`` and ``1 - q =
    (1 - se) p + sp (1 - p)``: the labelled factor puts all its weight on ``k = a``, then each
    unlabelled attempt multiplies by its (linear) factor. Every coefficient is positive, so the
    sum has no cancellation.
    """
    n = a + b + u1 + u0
    for k in range(n + 1):
        c[k], d_se[k], d_sp[k] = 0.0, 0.0, 0.0
    c[a] = 1.0
    top = a + b
    nse, nsp = 1.0 - se, 1.0 - sp
    dse, dsp = se * nse, sp * nsp  # d se / d logit(se), d sp / d logit(sp)
    for _ in range(u1):  # q: alpha = se, beta = 1 - sp
        top = _multiply(c, d_se, d_sp, top, se, nsp, dse, 0.0, 0.0, -dsp)
    for _ in range(u0):  # 1 - q: alpha = 1 - se, beta = sp
        top = _multiply(c, d_se, d_sp, top, nse, sp, -dse, 0.0, 0.0, dsp)
    return n


@numba.njit(cache=True)
def _sigmoid_pair(lo):
    """``(se, 1 - se)`` from a logit, each to full relative precision."""
    if lo >= 0.0:
        e = math.exp(-lo)
        return 1.0 / (1.0 + e), e / (1.0 + e)
    e = math.exp(lo)
    return e / (1.0 + e), 1.0 / (1.0 + e)


#: A cell's likelihood factors are multiplied together and their logarithm taken once the
#: product falls below :data:`PRODUCT_FLOOR`; a factor below :data:`FACTOR_FLOOR` is taken
#: by its logarithm at once, so the product never leaves the normal range of doubles.
PRODUCT_FLOOR = 1e-200
FACTOR_FLOOR = 1e-100


@numba.njit(cache=True)
def _one_attempt_moments(scale, node_e, node_w, node_z, row, k):
    """``E p``, ``E p (1 - p)``, ``E z p (1 - p)`` by the rule, in one-attempt row ``row``.

    ``p = 1 / (1 + scale exp(-sigma z))`` at each node. Summed in four lanes, each node's
    into lane ``i mod 4``, and the lanes added at the end: the four divisions of a round are
    independent, which the compiler may issue as one vector division, while the order of every
    addition is written out, not left to the compiler (fast-math would let it reorder the sum
    differently on machines of different vector widths, and a fit's draws with it). The rule's
    rows are read in place, not as a view a cell (each of which would be reference-counted).
    """
    m0 = m1 = m2 = m3 = 0.0
    e0 = e1 = e2 = e3 = 0.0
    s0 = s1 = s2 = s3 = 0.0
    i = 0
    while i + 4 <= k:
        p0 = 1.0 / (1.0 + scale * node_e[row, i])
        p1 = 1.0 / (1.0 + scale * node_e[row, i + 1])
        p2 = 1.0 / (1.0 + scale * node_e[row, i + 2])
        p3 = 1.0 / (1.0 + scale * node_e[row, i + 3])
        m0 += node_w[row, i] * p0
        m1 += node_w[row, i + 1] * p1
        m2 += node_w[row, i + 2] * p2
        m3 += node_w[row, i + 3] * p3
        t0 = node_w[row, i] * p0 * (1.0 - p0)
        t1 = node_w[row, i + 1] * p1 * (1.0 - p1)
        t2 = node_w[row, i + 2] * p2 * (1.0 - p2)
        t3 = node_w[row, i + 3] * p3 * (1.0 - p3)
        e0 += t0
        e1 += t1
        e2 += t2
        e3 += t3
        s0 += t0 * node_z[row, i]
        s1 += t1 * node_z[row, i + 1]
        s2 += t2 * node_z[row, i + 2]
        s3 += t3 * node_z[row, i + 3]
        i += 4
    while i < k:
        p = 1.0 / (1.0 + scale * node_e[row, i])
        m0 += node_w[row, i] * p
        t = node_w[row, i] * p * (1.0 - p)
        e0 += t
        s0 += t * node_z[row, i]
        i += 1
    return (m0 + m1) + (m2 + m3), (e0 + e1) + (e2 + e3), (s0 + s1) + (s2 + s3)


@numba.njit(cache=True, inline="always")
def _times(total, product, factor):
    """``(total, product)`` after multiplying ``factor`` in: see :data:`PRODUCT_FLOOR`."""
    if factor < FACTOR_FLOOR:
        return total + math.log(factor), product
    product *= factor
    if product < PRODUCT_FLOOR:
        return total + math.log(product), 1.0
    return total, product


@numba.njit(cache=True)
def cells_logp(eta, sigma, lse, lsp, counts, g_eta, g_lse, g_lsp):
    """The judged cells' log-likelihood, ``v`` integrated out, with its gradient.

    ``eta``, ``lse``, ``lsp`` are ``(S, J)`` logits (of the rate without ``v``, of the
    sensitivity and the specificity), ``counts`` is ``(6, S, J)`` (``n11, n10, n01, n00, u1,
    u0``). Fills ``g_eta``, ``g_lse``, ``g_lsp`` ``(S, J)`` with the gradient and returns
    ``(log-likelihood, d / d sigma)``.

    ``f`` is written in the Bernstein basis (:func:`_coefficients`), so a node costs one
    division and a few products, no logarithm or exponential: the nodes of one cell size share
    ``exp(-sigma z)``, and ``exp(-(eta + sigma z)) = exp(-eta) exp(-sigma z)``. The rule is
    :func:`node_step`'s trapezoid; its node count changes with ``sigma`` in steps, at which the
    value moves by less than the rule's error.

    A cell of one attempt (most data sets' cells) takes a shorter route: its ``f`` is ``c0 (1 -
    p) + c1 p``, so it needs ``E p`` and its derivatives alone, summed in four lanes
    (:func:`_one_attempt_moments`), and its sensitivity or specificity only where its data
    read them. The cells' likelihoods are multiplied together and their logarithm taken
    now and then (:data:`PRODUCT_FLOOR`), not a logarithm a cell. On 6 x 300 one-attempt cells
    (``benchmarks/judge_speed.py``'s job) a call takes about 105 microseconds against about 147
    before this route (both timed in one process).
    """
    S, J = eta.shape
    largest = 1
    for s in range(S):
        for j in range(J):
            cell = 0
            for i in range(6):
                cell += counts[i, s, j]
            largest = max(largest, cell)
    # the nodes of each cell size: z, weight h phi(z), exp(-sigma z)
    width = 2 * int(HALF_WIDTH / node_step(sigma, largest)) + 1
    node_z = np.zeros((largest + 1, width))
    node_w = np.zeros((largest + 1, width))
    node_e = np.zeros((largest + 1, width))
    node_k = np.zeros(largest + 1, np.int64)
    c = np.empty(largest + 1)
    d_se = np.empty(largest + 1)
    d_sp = np.empty(largest + 1)
    p_pow = np.empty(largest + 1)
    q_pow = np.empty(largest + 1)
    total, g_sigma, product = 0.0, 0.0, 1.0
    for s in range(S):
        for j in range(J):
            n11, n10, n01, n00 = counts[0, s, j], counts[1, s, j], counts[2, s, j], counts[3, s, j]
            u1, u0 = counts[4, s, j], counts[5, s, j]
            g_eta[s, j], g_lse[s, j], g_lsp[s, j] = 0.0, 0.0, 0.0
            n = n11 + n10 + n01 + n00 + u1 + u0
            if n == 0:
                continue
            if node_k[n] == 0:
                h = node_step(sigma, n)
                half = int(HALF_WIDTH / h)
                node_k[n] = 2 * half + 1
                for k in range(2 * half + 1):
                    z = (k - half) * h
                    node_z[n, k] = z
                    node_w[n, k] = h * math.exp(-0.5 * z * z - _LOG_SQRT_2PI)
                    node_e[n, k] = math.exp(-sigma * z)
            if n == 1:  # most cells: f = c0 (1 - p) + c1 p needs E p and its derivatives only
                scale = math.exp(-min(max(eta[s, j], -700.0), 700.0))
                m, m_eta, m_sigma = _one_attempt_moments(
                    scale, node_e, node_w, node_z, 1, node_k[1]
                )
                # (c0, c1) = P(the cell's data | true 0), (| true 1); a labelled attempt's
                # verdict factor is outside the integral
                if n11 or n01:  # labelled success
                    se, nse = _sigmoid_pair(lse[s, j])
                    total, product = _times(total, product, se if n11 else nse)
                    g_lse[s, j] = nse if n11 else -se
                    mass, slope_m = m, 1.0
                elif n10 or n00:  # labelled failure
                    sp, nsp = _sigmoid_pair(lsp[s, j])
                    total, product = _times(total, product, sp if n00 else nsp)
                    g_lsp[s, j] = nsp if n00 else -sp
                    mass, slope_m = 1.0 - m, -1.0
                else:  # an unlabelled verdict: its true outcome summed out
                    se, nse = _sigmoid_pair(lse[s, j])
                    sp, nsp = _sigmoid_pair(lsp[s, j])
                    if u1:  # c0 = 1 - sp, c1 = se
                        c0, c1, d_c1, d_c0 = nsp, se, se * nse, -sp * nsp
                    else:  # c0 = sp, c1 = 1 - se
                        c0, c1, d_c1, d_c0 = sp, nse, -se * nse, sp * nsp
                    mass, slope_m = c0 + (c1 - c0) * m, c1 - c0
                    if mass > 0.0:
                        g_lse[s, j] = d_c1 * m / mass
                        g_lsp[s, j] = d_c0 * (1.0 - m) / mass
                if mass <= 0.0:
                    return -np.inf, 0.0
                total, product = _times(total, product, mass)
                inv = slope_m / mass
                g_eta[s, j] = m_eta * inv
                g_sigma += m_sigma * inv
                continue
            se, nse = _sigmoid_pair(lse[s, j])
            sp, nsp = _sigmoid_pair(lsp[s, j])
            a, b = n11 + n01, n10 + n00
            # the labelled attempts' verdicts given their labels: outside the integral
            if a + b > 0:  # most cells are unlabelled: no logarithm for them
                total += (
                    (n11 * math.log(se) if n11 else 0.0)
                    + (n01 * math.log(nse) if n01 else 0.0)
                    + (n10 * math.log(nsp) if n10 else 0.0)
                    + (n00 * math.log(sp) if n00 else 0.0)
                )
            g_lse[s, j] = n11 * nse - n01 * se
            g_lsp[s, j] = n00 * nsp - n10 * sp
            _coefficients(a, b, u1, u0, se, sp, c, d_se, d_sp)
            scale = math.exp(-min(max(eta[s, j], -700.0), 700.0))
            mass, m_eta, m_sigma, m_se, m_sp = 0.0, 0.0, 0.0, 0.0, 0.0
            for k in range(node_k[n]):
                e = scale * node_e[n, k]  # exp(-y) at the node
                p = 1.0 / (1.0 + e)
                q = e * p if e <= 1.0 else 1.0 - p  # 1 - p, to full relative precision
                p_pow[0], q_pow[0] = 1.0, 1.0
                for i in range(1, n + 1):
                    p_pow[i] = p_pow[i - 1] * p
                    q_pow[i] = q_pow[i - 1] * q
                value, first, v_se, v_sp = 0.0, 0.0, 0.0, 0.0
                for i in range(n + 1):
                    t = p_pow[i] * q_pow[n - i]
                    value += c[i] * t
                    first += i * c[i] * t
                    v_se += d_se[i] * t
                    v_sp += d_sp[i] * t
                w = node_w[n, k]
                d_y = first - n * p * value  # d f / d y: d t_i / d y = t_i (i - n p)
                mass += w * value
                m_eta += w * d_y
                m_sigma += w * d_y * node_z[n, k]
                m_se += w * v_se
                m_sp += w * v_sp
            if mass <= 0.0:
                return -np.inf, 0.0
            total += math.log(mass)
            g_eta[s, j] = m_eta / mass
            g_sigma += m_sigma / mass
            g_lse[s, j] += m_se / mass
            g_lsp[s, j] += m_sp / mass
    return total + math.log(product), g_sigma


@numba.njit(cache=True)
def _log_f(p_log, np_log, a, b, u1, u0, log_se, log_nse, log_sp, log_nsp):
    """``log f`` from ``log p``, ``log(1 - p)``; a factor of zero count is 1 (at p = 0 or 1)."""
    out = 0.0
    if a > 0:
        out += a * p_log
    if b > 0:
        out += b * np_log
    if u1 > 0:
        out += u1 * _logaddexp(log_se + p_log, log_nsp + np_log)
    if u0 > 0:
        out += u0 * _logaddexp(log_nse + p_log, log_sp + np_log)
    return out


@numba.njit(cache=True)
def _slope(p, a, b, u1, u0, se, nse, sp, nsp):
    """``d log f / d p``: decreasing in ``p``, ``log f`` being concave."""
    q = se * p + nsp * (1.0 - p)
    nq = nse * p + sp * (1.0 - p)
    out = (se - nsp) * (u1 / q - u0 / nq)
    if a > 0:
        out += a / p
    if b > 0:
        out -= b / (1.0 - p)
    return out


@numba.njit(cache=True)
def _max_log_f(a, b, u1, u0, log_se, log_nse, log_sp, log_nsp):
    """``max log f`` over ``p`` in ``[0, 1]``: bisection of the concave ``log f``'s slope."""
    se, nse, sp, nsp = math.exp(log_se), math.exp(log_nse), math.exp(log_sp), math.exp(log_nsp)
    lo, hi = 0.0, 1.0
    if b == 0 and _slope(1.0 - 1e-15, a, b, u1, u0, se, nse, sp, nsp) >= 0.0:
        lo = 1.0
    elif a == 0 and _slope(1e-15, a, b, u1, u0, se, nse, sp, nsp) <= 0.0:
        hi = 0.0
    else:
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if _slope(mid, a, b, u1, u0, se, nse, sp, nsp) > 0.0:
                lo = mid
            else:
                hi = mid
    best = -np.inf
    for p in (lo, hi):
        p_log = math.log(p) if p > 0.0 else -np.inf
        np_log = math.log1p(-p) if p < 1.0 else -np.inf
        if (p_log == -np.inf and a > 0) or (np_log == -np.inf and b > 0):
            continue
        value = _log_f(p_log, np_log, a, b, u1, u0, log_se, log_nse, log_sp, log_nsp)
        best = max(best, value)
    return best


@numba.njit(cache=True)
def _grid_draw(rng, eta, sigma, a, b, u1, u0, log_se, log_nse, log_sp, log_nsp, log_dens):
    """One draw of ``v`` by inverting its conditional CDF on a grid (piecewise constant)."""
    n = log_dens.shape[0]
    step = 2.0 * GRID_HALF_WIDTH / (n - 1)
    top = -np.inf
    for i in range(n):
        z = -GRID_HALF_WIDTH + i * step
        p_log, np_log = _log_sigmoids(eta + sigma * z)
        log_dens[i] = -0.5 * z * z + _log_f(
            p_log, np_log, a, b, u1, u0, log_se, log_nse, log_sp, log_nsp
        )
        top = max(top, log_dens[i])
    mass = 0.0
    for i in range(n):
        log_dens[i] = math.exp(log_dens[i] - top)
        mass += log_dens[i]
    target = rng.random() * mass
    cumulative = 0.0
    for i in range(n):
        cumulative += log_dens[i]
        if cumulative >= target:
            return sigma * (-GRID_HALF_WIDTH + (i + rng.random() - 0.5) * step)
    return sigma * GRID_HALF_WIDTH


@numba.njit(cache=True)
def _one_attempt_draw(rng, eta, sigma, a, b, u1, lse, lsp):
    """One draw of a one-attempt cell's ``v``, or NaN where no proposal was kept.

    ``f = c0 (1 - p) + c1 p`` is linear in ``p``: proposals from the prior are kept with
    probability ``f / max(c0, c1)``, in linear terms (a third of the log-space path's
    exponentials and logarithms, on the cells most data sets are made of).
    """
    se, nse = _sigmoid_pair(lse)
    sp, nsp = _sigmoid_pair(lsp)
    if a:
        c0, c1 = 0.0, 1.0
    elif b:
        c0, c1 = 1.0, 0.0
    elif u1:
        c0, c1 = nsp, se
    else:
        c0, c1 = sp, nse
    top = max(c0, c1)
    for _ in range(PROPOSALS):
        v = sigma * rng.standard_normal()
        p, q = _sigmoid_pair(eta + v)
        if rng.random() * top <= c0 * q + c1 * p:
            return v
    return np.nan


@numba.njit(cache=True, nogil=True)
def draw_effects(rng, eta, sigma, lse, lsp, counts):
    """Draws of each cell's ``v`` from its conditional given the rest, ``(D, S, J)``.

    ``eta``, ``lse``, ``lsp`` are ``(D, S, J)`` per draw, ``sigma`` is ``(D,)``. The conditional
    is ``N(v; 0, sigma^2) f(expit(eta + v))``; cells without attempts draw from the prior.
    Returns the draws and how many cells fell back to the grid.
    """
    D, S, J = eta.shape
    out = np.empty((D, S, J))
    log_dens = np.empty(GRID_POINTS)
    fallbacks = 0
    for s in range(S):
        for j in range(J):
            n11, n10, n01, n00 = counts[0, s, j], counts[1, s, j], counts[2, s, j], counts[3, s, j]
            u1, u0 = counts[4, s, j], counts[5, s, j]
            a, b = n11 + n01, n10 + n00
            for d in range(D):
                sd = sigma[d]
                if a + b + u1 + u0 == 0:
                    out[d, s, j] = sd * rng.standard_normal()
                    continue
                if a + b + u1 + u0 == 1:
                    v = _one_attempt_draw(
                        rng, eta[d, s, j], sd, a, b, u1, lse[d, s, j], lsp[d, s, j]
                    )
                    if not math.isnan(v):
                        out[d, s, j] = v
                        continue
                log_se, log_nse = _log_sigmoids(lse[d, s, j])
                log_sp, log_nsp = _log_sigmoids(lsp[d, s, j])
                top = _max_log_f(a, b, u1, u0, log_se, log_nse, log_sp, log_nsp)
                kept = False
                for _ in range(PROPOSALS):
                    v = sd * rng.standard_normal()
                    p_log, np_log = _log_sigmoids(eta[d, s, j] + v)
                    value = _log_f(p_log, np_log, a, b, u1, u0, log_se, log_nse, log_sp, log_nsp)
                    if math.log(rng.random()) <= value - top:
                        out[d, s, j] = v
                        kept = True
                        break
                if not kept:
                    fallbacks += 1
                    out[d, s, j] = _grid_draw(
                        rng,
                        eta[d, s, j],
                        sd,
                        a,
                        b,
                        u1,
                        u0,
                        log_se,
                        log_nse,
                        log_sp,
                        log_nsp,
                        log_dens,
                    )
    return out, fallbacks


class JudgedCells(Op):
    """PyTensor Op: :func:`cells_logp`'s log-likelihood of the judged cells, ``v`` summed out.

    Inputs ``eta, sigma, lse, lsp, counts``; outputs the log-likelihood and its gradient by
    ``eta``, ``sigma``, ``lse`` and ``lsp``, which the Op's ``pullback`` uses.

    Examples
    --------
    >>> import numpy as np, pytensor.tensor as pt
    >>> from bayeval.models.kernels.judge import JudgedCells
    >>> eta, lse, lsp = pt.dmatrix(), pt.dmatrix(), pt.dmatrix()
    >>> logp = JudgedCells()(eta, pt.dscalar(), lse, lsp, pt.ltensor3())[0]
    >>> logp.ndim
    0
    """

    # PyTensor caches compiled numba code on disk under a key made of these props, not of the
    # kernel's source: ``kernel`` keeps an old compiled kernel from being reused after a change.
    __props__ = ("kernel",)

    def __init__(self):
        self.kernel = KERNEL_HASH

    def make_node(self, eta, sigma, lse, lsp, counts):
        """The graph node: inputs cast to the kernel's dtypes (PyMC keeps counts as int32)."""
        dtypes = ("float64", "float64", "float64", "float64", "int64")
        inputs = [
            pt.cast(pt.as_tensor_variable(value), dtype)
            for value, dtype in zip((eta, sigma, lse, lsp, counts), dtypes, strict=True)
        ]
        outputs = [pt.dscalar(), pt.dmatrix(), pt.dscalar(), pt.dmatrix(), pt.dmatrix()]
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, outputs):
        """Evaluate with the compiled kernel."""
        eta, sigma, lse, lsp, counts = (np.ascontiguousarray(a) for a in inputs)
        g_eta, g_lse, g_lsp = np.empty(eta.shape), np.empty(eta.shape), np.empty(eta.shape)
        logp, g_sigma = cells_logp(eta, float(sigma), lse, lsp, counts, g_eta, g_lse, g_lsp)
        outputs[0][0] = np.asarray(logp, dtype="float64")
        outputs[1][0] = g_eta
        outputs[2][0] = np.asarray(g_sigma, dtype="float64")
        outputs[3][0] = g_lse
        outputs[4][0] = g_lsp

    def connection_pattern(self, node):
        """The log-likelihood depends on the four parameter inputs; nothing on the counts."""
        return [[True, False, False, False, False]] * 4 + [[False] * 5]

    def pullback(self, inputs, outputs, cotangents):
        """The gradient by the parameters from the gradient outputs; none for the counts."""
        grad = cotangents[0]
        return [grad * outputs[1], grad * outputs[2], grad * outputs[3], grad * outputs[4]] + [
            DisconnectedType()()
        ]


def _register_numba():
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    @register_funcify_default_op_cache_key(JudgedCells)
    def numba_funcify_judged_cells(op, node=None, **kwargs):
        @numba_njit
        def judged_cells(eta, sigma, lse, lsp, counts):
            eta, lse, lsp = (
                np.ascontiguousarray(eta),
                np.ascontiguousarray(lse),
                np.ascontiguousarray(lsp),
            )
            g_eta, g_lse, g_lsp = np.empty(eta.shape), np.empty(eta.shape), np.empty(eta.shape)
            logp, g_sigma = cells_logp(
                eta, sigma.item(), lse, lsp, np.ascontiguousarray(counts), g_eta, g_lse, g_lsp
            )
            return np.asarray(logp), g_eta, np.asarray(g_sigma), g_lse, g_lsp

        return judged_cells


_register_numba()
