"""Exact draws of a task-by-system effect from its one-dimensional log-concave conditional."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.numerics import (
    _binomial_cell,
    _log1p_small,
    _neg_abs_exp,
    _sigmoid,
    _sigmoid_of,
    _softplus,
)
from bayeval.models.kernels.quadrature import _clip, _conditional_log_density, _conditional_mode

HULL_POINTS = 40  # abscissae an adaptive rejection sampler keeps (it stops adding after that)
TANGENT_TRIES = 8  # tangent-normal proposals before a task-by-system draw turns to the hull


@numba.njit(cache=True)
def _hull_insert(hx, hh, hd, k, x, h, d):
    """Insert abscissa ``x`` (log density ``h``, slope ``d``) into the sorted hull of ``k`` points.

    Returns the new count (unchanged when the hull is full).
    """
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
    """Draw from the piecewise-exponential upper hull of a log-concave density.

    The hull is the tangents at the ``k`` abscissae; the first slope must be positive and the last
    negative. Returns the point and the hull's log density there.
    """
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
    target = np.random.random() * total  # noqa: NPY002 (numba's per-thread stream)
    i = 0
    acc = math.exp(log_mass[0] - top)
    while acc < target and i < k - 1:
        i += 1
        acc += math.exp(log_mass[i] - top)
    r = np.random.random()  # noqa: NPY002 (numba's per-thread stream)
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
#: LiveCodeBench's conditionals peak up to 7 logits from 0) need several; each further step
#: leaves fewer cells with a poor tangent (``models/logit_normal.md``, sampling settings).
TANGENT_NEWTON = 4
NEWTON_ENOUGH = 0.25  # a Newton step this short ends the search for the tangent point


@numba.njit(cache=True)
def _likelihood_route(eta_e, c, n, prec_v):
    """Whether a cell's task-by-system effect is better drawn from its likelihood.

    The alternative is the tangent-tilted prior. With ``0 < c < n``,
    ``expit(x)^c (1 - expit(x))^(n - c)`` is the density of ``x = log G_c - log G_(n - c)`` (``G_a``
    a Gamma(a) variable: the logit of a Beta(c, n - c)), so a proposal ``x`` kept with probability
    ``N(x - eta_e; 0, sigma_v) / N(0; 0, sigma_v)`` is an exact draw of ``eta_e + v``. It keeps
    about ``sqrt(I s2 / (1 + I s2)) exp(-(x^ - eta_e)^2 / (2 (s2 + 1 / I)))`` of its proposals
    (``I = n p^ (1 - p^)`` the likelihood's curvature at its mode ``x^ = logit(p^)``,
    ``p^ = c / n``, ``s2 = sigma_v^2``), the tangent about ``1 / sqrt(1 + I s2)``: the route whose
    share is larger.
    """
    if c <= 0.0 or c >= n:
        return False
    share = c / n
    info = n * share * (1.0 - share)
    spread = info / prec_v  # I sigma_v^2
    gap = math.log(share / (1.0 - share)) - eta_e
    return spread * math.exp(-gap * gap * info / (spread + 1.0)) > 1.0


@numba.njit(cache=True)
def _v_draw_from(rng, eta_e, c, n, prec_v, sigma_v):
    """One exact draw of v from ``N(v; 0, sigma_v) Bin(c | n, expit(eta_e + v))``, and its rate.

    The rate is ``expit(eta_e + v)``.

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
    hull, rarely reached (``models/logit_normal.md``), draws from
    the legacy generator with its own buffers, so that a call passes scalars only.

    A cell with successes and failures whose likelihood is narrow against the prior (the
    tangent keeps few of its proposals there: ``models/logit_normal.md``) is
    drawn from the likelihood instead, where that route keeps more: up to
    ``LIKELIHOOD_TRIES`` proposals, then the tangent (:func:`_likelihood_route`).
    """
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
    """Up to ``LIKELIHOOD_TRIES`` proposals from a cell's likelihood (:func:`_likelihood_route`).

    Returns ``(kept, v, expit(eta_e + v))``.
    """
    for _ in range(LIKELIHOOD_TRIES):
        x = math.log(rng.gamma(c)) - math.log(rng.gamma(n - c))
        step = x - eta_e
        if rng.standard_exponential() >= 0.5 * prec_v * step * step:
            return True, step, _sigmoid(x)
    return False, 0.0, 0.0


@numba.njit(cache=True)
def _newton_steps(eta_e, c, n, prec_v, v0, step, steps):
    """Up to ``steps`` more Newton steps from ``v0`` towards the mode: the tangent point.

    The mode is that of :func:`_v_draw_from`'s conditional; each step is clipped to ``MAX_STEP``,
    until one (``step``: the last taken) is shorter than ``NEWTON_ENOUGH``.
    """
    for _ in range(steps):
        if abs(step) <= NEWTON_ENOUGH:
            break
        p0 = _sigmoid(eta_e + v0)
        step = _clip((c - n * p0 - prec_v * v0) / (prec_v + n * p0 * (1.0 - p0)))
        v0 += step
    return v0


@numba.njit(cache=True)
def _tangent_keeps(gap, c, n, y, small, l0, b, step):
    """The full test of a tangent proposal at ``y`` (``small = exp(-|y|)``).

    The proposal lies ``step`` from the tangent point, whose ``l(v0)`` is ``l0`` and slope ``b``:
    whether ``gap``, an exponential draw's negative, is within ``l(v) - l(v0) - b (v - v0)``.
    """
    return gap <= _binomial_cell(c, n, y, small, math.log1p(small))[0] - l0 - b * step


@numba.njit(cache=True)
def _v_tangent_tries(rng, eta_e, c, n, prec_v, sigma_v, v0, b, l0, tries):
    """:func:`_v_draw_from`'s tangent proposals at ``v0``, up to ``tries`` of them, then the hull.

    The tangent has slope ``b``, and ``l0 = l(v0)`` or NaN until needed. Returns
    ``(v, expit(eta_e + v))``.
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
    """Adaptive rejection sampling of :func:`_v_draw_from`'s log-concave density.

    The hull starts from its mode and a curvature scale on either side.
    """
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
        if math.log(max(np.random.random(), 1e-300)) <= h - upper:  # noqa: NPY002 (numba's stream)
            return point
        k = _hull_insert(hx, hh, hd, k, point, h, d)


@numba.njit(cache=True)
def _v_rates(rng, y, c, n, sigma_v, rate, work, bits):
    """:func:`_v_draw_from`'s rates for a row of cells at once.

    ``rate[i] = expit(y[i] + v[i])``, each ``v[i]`` an exact draw from its cell's conditional given
    ``y[i]`` (``c``, ``n`` the cells' counts). The first tangent proposal of every cell is made and
    judged in straight-line arithmetic over the row, which the compiler vectorises (the exponentials
    by :func:`numerics._neg_abs_exp`), where one cell's chain of scalar exponentials and divisions
    costs its latency; the proposals' normal and exponential draws come from ``rng`` cell by cell. A
    squeeze keeps most proposals of single trials untested; where it leaves many undecided the full
    test runs over the row too (the softplus by :func:`numerics._log1p_small`). A cell whose
    proposal is refused gets more proposals at its tangent, then the hull (given a refusal, any
    exact draw keeps the mixture exact). Cells better drawn from their likelihood
    (:func:`_likelihood_route`) are drawn from it, and join the row's tangent proposals only if none
    of those proposals is kept. ``work (7, m)`` and ``bits (m,)`` are buffers of the row's length.
    """
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
