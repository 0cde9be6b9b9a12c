"""Inner integrals tabulated on a grid in ``y``, and the outer rule at the task marginal's mode."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.numerics import _LOG_SQRT_2PI, _SQRT2, _logsumexp, _sigmoid, _softplus
from bayeval.models.kernels.quadrature import _clip, _conditional_mode, _is_low

#: Tabulated inner integrals of the adaptive rule: ``log g_{c,n}(y) = log int N(v; 0, sigma_v)
#: Bin(c | n, expit(y + v)) dv`` depends on the system and pattern only through ``y`` and the
#: counts, so within one evaluation of the likelihood it is computed once per counts on a grid
#: in ``y`` (cells on first use) and read by cubic Hermite interpolation.
TABLE_LOW = -60.0
TABLE_STEP = 0.1
#: Fractional counts (sums of partial-credit scores) enter the likelihood on this grid, in steps
#: of ``1 / COUNT_GRID`` (rounded at random, without bias: ``models/fractional.md``), so that
#: the cells of one value share their inner integrals
COUNT_GRID = 10
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
    """The integral over one system's task-by-system effect at ``y = eta_s + e``, with derivatives.

    ``log g = log int N(v; 0, sigma_v) p^c (1 - p)^(n - c) dv`` with ``p = expit(y + v)``, and its
    derivatives ``(log g, d/dy, d/dsigma_v, d2/(dy dsigma_v))`` (Fisher's identity over the same
    nodes). ``vc`` is the conditional mode of ``v``; ``terms (2, INNER_NODES)`` holds the log terms
    and the nodes.

    Two-sided counts take Gauss-Hermite nodes at the mode. One-sided counts
    (:func:`_one_sided`) take a trapezoid out to ``TABLE_TAIL`` below the peak, in steps of at
    most ``INNER_STEP``: their integrand is a Gaussian cut by a sigmoid, which the nodes
    misjudge by up to 1e-2 (in logs) under a wide ``sigma_v``. That error wiggles in ``y``,
    and where the likelihood is nearly flat it made the task effect's marginal non-concave:
    its mode jumped between local maxima and the log density was rough (LiveCodeBench reached
    NUTS's maximum tree depth). The trapezoid errs by less than 1e-7 (the integrand's nearest
    singularities lie pi off the real line).
    """
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
    """Fill cell ``i`` of table ``q``: the inner integral at ``y_i`` and its derivatives.

    Its derivatives in ``y`` and in ``sigma_v`` (:func:`_inner_integral`).
    """
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
    """``(log g, d/dy, d2/dy2, d/dsigma_v)`` at ``y`` for counts ``(cq, nq)`` from slot ``q``.

    The slot is :func:`_table_slots`'s: a slot ``q < 0`` is table ``-1 - q`` of the mirrored counts
    ``(nq - cq, nq)`` read at ``-y``, since ``v`` is symmetric about zero and
    ``g(y; c, n) = g(-y; n - c, n)`` (the table's grid is symmetric about zero, so the read is the
    same interpolant; only the slope changes sign).
    """
    if q >= 0:
        return _table_at(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    value, slope, curve, dv = _table_at(
        -y, -1 - q, nq - cq, nq, prec_v, log_sigma_v, x, logw, tab, terms
    )
    return value, -slope, curve, dv


@numba.njit(cache=True)
def _table_locate(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms):
    """The cells of table ``q`` around ``y``, computed if not yet.

    Returns ``(i, t)``, ``y`` at ``t`` of the way from cell ``i`` to ``i + 1``, or beyond the grid
    ``(edge cell, -1)``.
    """
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
    """``log g`` at ``y`` from table ``q``, as :func:`_table_at` reads it.

    Without the derivatives.
    """
    i, t = _table_locate(y, q, cq, nq, prec_v, log_sigma_v, x, logw, tab, terms)
    return _cell_value(y, q, i, t, tab)


@numba.njit(cache=True)
def _cell_value(y, q, i, t, tab):
    """``log g`` at ``y`` located at ``(i, t)`` (:func:`_table_locate`) in table ``q``.

    The cubic Hermite interpolant, or beyond the grid the tangent at its end.
    """
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
    """``(log g, d/dy, d2/dy2, d/dsigma_v)`` at ``y`` from table ``q``.

    The cubic Hermite interpolant through the two cells around ``y`` (computed if not yet), its
    derivatives, and the ``sigma_v`` derivative by its own Hermite interpolant; beyond the grid, the
    tangent at its end.
    """
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
    """The task effect's log marginal density (up to a constant) and its first two derivatives.

    From the tables (one system: the binomial log-likelihood itself).
    """
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
    """The mode of the task effect's log marginal (:func:`_marginal_e`) by damped Newton steps.

    The marginal is log-concave; the steps start from 0 and stop once a step is below ``tol``.
    Returns ``(mode, log density there, Laplace sd)``.
    """
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
    """Trapezoid nodes over the marginal's whole extent.

    Outwards from the mode ``e`` in steps of ``s_e / 2`` until the log density lies ``TABLE_TAIL``
    below its peak (the step doubles while a side would need more than half the nodes). Fills
    ``e_k`` and ``log_f`` (log weights: step, the prior's normalising constant and the density);
    returns their number.
    """
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
    """One adaptive-rule pattern from the tables.

    The outer Gauss-Hermite rule is centred and scaled at the mode of the task effect's marginal;
    adds ``m`` times its gradient in ``eta`` to ``g_eta[p]`` and returns
    ``(log L, d/dsigma_e, d/dsigma_v)`` (times ``m``); with ``g_eta`` empty, only
    ``(m log L, 0, 0)``.
    """
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
    # one-sided under a wide task spread and Gauss-Hermite misjudges it (models/logit_normal.md), so
    # it takes a trapezoid over its whole extent. The choice depends on the counts only, so the log
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
def _count_grid(c):
    """The grid of the counts ``c``: 1 where all are whole, else :data:`COUNT_GRID`.

    A ValueError where some count lies off that grid: the cells of one count share their
    integrals by its place on the grid.
    """
    grid = 1
    for value in c.ravel():
        if value != math.floor(value):
            grid = COUNT_GRID
            scaled = value * COUNT_GRID
            if abs(scaled - round(scaled)) > 1e-6:
                raise ValueError("fractional counts must lie on the grid of 1 / COUNT_GRID")
    return grid


@numba.njit(cache=True)
def _table_slots(c, n, every):
    """Each adaptive-rule cell's table, one per distinct counts ``(c, n)`` up to mirroring.

    Returns ``slot (P, S)`` (``-1 - q`` where the cell reads table ``q`` of ``(n - c, n)`` mirrored,
    :func:`_table_read`) and the counts of each table (with ``every``, the fixed grid's patterns'
    cells too). Binary cells need one table instead of two. Fractional counts (sums of
    partial-credit scores) must lie on the grid of :data:`COUNT_GRID`: each value on it gets a
    table of its own.
    """
    P, S = c.shape
    grid = _count_grid(c)
    top_n = 0
    for p in range(P):
        if _is_low(n[p]) and not every:
            continue
        for s in range(S):
            top_n = max(top_n, int(n[p, s]))
    width = top_n * grid // 2 + 1  # the mirrored counts on the grid: 0 to half of n
    index = np.full((top_n + 1) * width, -1, dtype=np.int64)
    slot = np.zeros((P, S), dtype=np.int64)
    counts = np.zeros((P * S + 1, 2))
    Q = 0
    for p in range(P):
        if _is_low(n[p]) and not every:
            continue
        for s in range(S):
            nn = int(n[p, s])
            cc = int(round(c[p, s] * grid))
            mirrored = cc > nn * grid - cc
            if mirrored:
                cc = nn * grid - cc
            key = nn * width + cc
            if index[key] < 0:
                index[key] = Q
                counts[Q, 0], counts[Q, 1] = cc / grid, nn
                Q += 1
            slot[p, s] = -1 - index[key] if mirrored else index[key]
    return slot, counts[:Q], Q
