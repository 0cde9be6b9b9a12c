"""The latent forms' cells: task-by-system effects sampled, or integrated through cell tables."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.numerics import (
    _binomial_cell,
    _likelihood_power,
    _neg_abs_exp,
    _power,
    _softplus_parts,
)
from bayeval.models.kernels.tables import (
    COUNT_GRID,
    INNER_NODES,
    TABLE_LOW,
    TABLE_SIZE,
    TABLE_STEP,
    _table_cell,
)


@numba.njit(cache=True)
def _latent_y(e, tail, eta, sigma_v, paired):
    """The full-latent form's logits ``y = eta + e + sigma_v z_v`` ``(J, S)``.

    ``e`` holds the task effects (:func:`coordinates._task_effects` of the tail's first ``J``
    coordinates); with several systems the tail continues with the task-by-system effects
    ``z_v`` (task-major, ``j S + s``), non-centred, each ``z`` standard normal.
    """
    J, S = eta.shape
    y = np.empty((J, S))
    for j in range(J):
        for s in range(S):
            y[j, s] = eta[j, s] + e[j] + (sigma_v * tail[J + j * S + s] if paired else 0.0)
    return y


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _latent_cells(tail, y, small, log_term, c, n, sigma_v, paired, g_tail):
    """The full-latent form's log density of the task-by-system effects and of the counts.

    The counts are given the logits: each cell adds ``c y - n softplus(y)`` (binomial coefficients
    left out), with ``small = exp(-|y|)`` and ``log_term = log1p(small)`` given
    (``softplus(y) = max(y, 0) + log_term``: :func:`numerics._softplus_parts`). Returns the sum (the
    standard normal log densities of ``z_v`` included), the gradient in the predictors ``(J, S)``,
    in the task effects ``(J,)`` and the part for ``sigma_v``; adds the gradient in ``z_v`` (see
    :func:`_latent_y`) to ``g_tail``.
    """
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
#: columns), ``y`` on :data:`tables.TABLE_LOW`'s grid: the interpolant's error falls as the
#: step's fourth power and this step keeps it far below the sampler's noise
#: (``models/logit_normal.md``, sampling settings).
CELL_TABLE_LOW = math.log(0.03)
CELL_TABLE_STEP = 0.02
CELL_TABLE_SIZE = 326
#: The Gauss-Hermite nodes about the mode with which :func:`cell_tables` integrates counts of
#: at least two successes and two failures (more than the fits' nine, which erred there:
#: ``models/logit_normal.md``, sampling settings). Fewer successes or failures take the trapezoid.
CELL_TABLE_NODES = 31
#: The most trials a cell table is built for (cells with more keep their sampled effects).
CELL_TABLE_TRIALS = 255


@numba.njit(cache=True, parallel=True)
def cell_tables(counts, x, logw):
    """Tables of a cell's integral over its task-by-system effect, per counts.

    ``(T, CELL_TABLE_SIZE, TABLE_SIZE, 4)``: for ``c`` successes in ``n`` trials
    (``counts[q] = (c, n)``, ``c <= n - c``),
    ``log g = log int N(v; 0, sigma_v) expit(y + v)^c (1 - expit(y + v))^(n - c) dv`` on a grid of
    ``(log sigma_v, y)``, with its derivatives in ``y``, in ``log sigma_v`` and in both (the
    adaptive rule, :func:`tables._table_cell`: within 1e-7): the corners of a bicubic Hermite
    interpolant (:func:`_cell_table_slice`). The mirrored counts ``(n - c, n)`` read the same table
    at ``-y``, since ``v`` is symmetric about zero.
    """
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
    """One node of a cell table: ``log g`` and its derivatives, into ``out (4,)``.

    At row ``i`` of :data:`tables.TABLE_LOW`'s grid, ``cq`` successes in ``nq`` trials, ``log g``
    and its derivatives in ``y``, in ``log sigma_v`` and in both, from the adaptive rule's cell
    (:func:`tables._table_cell`, whose ``sigma_v`` derivatives are per unit of ``sigma_v``).
    """
    sigma = math.exp(log_sigma)
    _table_cell(i, 0, cq, nq, 1.0 / (sigma * sigma), log_sigma, x, logw, tab, terms)
    out[0] = tab[0, i, 0]
    out[1] = tab[0, i, 1]
    out[2] = sigma * tab[0, i, 2]
    out[3] = sigma * tab[0, i, 4]


@numba.njit(cache=True)
def _hermite_basis(t, h):
    """The cubic Hermite basis on a step of length ``h`` at ``t`` in [0, 1].

    Values ``(h00, h10, h01, h11)`` and their derivatives along the step ``(d00, d10, d01, d11)``:
    ``f = h00 f0 + h10 f0' + h01 f1 + h11 f1'`` (the slopes' factor ``h`` included).
    """
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
    """The cell tables ``(T, CELL_TABLE_SIZE, TABLE_SIZE, 4)`` and their counts ``(T, 2)``.

    As :func:`cell_tables` makes them, stored last in ``const`` (then ``T``) where the full-latent
    form integrates cells over their task-by-system effects (``spec[15]``), else empty.
    """
    if spec.shape[0] < 16 or spec[15] == 0:
        return np.zeros((0, CELL_TABLE_SIZE, TABLE_SIZE, 4)), np.zeros((0, 2))
    end = const.shape[0] - 1
    T = int(const[end])
    size = T * CELL_TABLE_SIZE * TABLE_SIZE * 4
    block = const[end - 2 * T - size : end - 2 * T].reshape((T, CELL_TABLE_SIZE, TABLE_SIZE, 4))
    return block, const[end - 2 * T : end].reshape((T, 2))


@numba.njit(cache=True)
def _cell_table_slice(block, q, sigma_v, lo, hi, out):
    """Rows ``lo..hi`` of cell table ``q`` at ``sigma_v``, into ``out[q, :rows]``.

    The value and its slope in ``y``, and their derivatives in ``log sigma_v``. Within the tabulated
    spreads, the cubic Hermite interpolant between two columns; beyond, the tangent in
    ``log sigma_v`` at the nearest column (below 0.03 the integral hardly moves with ``sigma_v``;
    above 20 the prior leaves no mass: computing the integrals there instead cost a warm-up
    trajectory that strayed out tens of milliseconds a gradient).
    """
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
    """``(log g, d/dy, d/dlog sigma_v)`` at ``y`` from table ``q``'s slice.

    The slice's first row is ``first`` of :data:`tables.TABLE_LOW`'s grid
    (:func:`_cell_table_slice`, and :func:`_hermite_coefficients` of its rows): the cubic Hermite
    interpolant in ``y`` by Horner's rule, and beyond the grid (or at a NaN) the tangent at its end,
    with that tangent's derivative in ``log sigma_v``. The slice must hold the rows around ``y``.
    """
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
    """The full-latent form's cells where those with a table are integrated over their effects.

    The effects are the task-by-system ones, the tables those of the cells' counts
    (``counts (T, 2)``, :func:`cell_tables`): such a cell reads its table at ``y = eta + e`` (more
    successes than failures: the mirrored counts' table at ``-y``); the other cells add
    ``c y - n softplus(y)`` at ``y = eta + e + sigma_v z`` as in :func:`_latent_cells`, their ``z``
    the tail's coordinates after the ``J`` task effects, in task-major order of those cells. The
    tables are sliced at ``sigma_v`` over the rows of the largest ``|y|`` read, and each read is a
    Horner evaluation (:func:`_cell_table_at`). Returns what :func:`_latent_cells` returns, and adds
    to ``g_tail`` likewise.
    """
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
    """Fill cells ``first`` to ``top`` of table ``q`` by the collapsed form's fixed inner rule.

    The cells go at rows 0, 1, ... of ``tab``, for the low-trial counts ``(cq, nq)``, by the fixed
    inner rule of the collapsed form's grid: ``g = sum_m lam_m p_m^c (1 - p_m)^(n - c)``,
    ``p_m = expit(y_i + sigma_v u_m)`` (Gauss-Hermite on the standardised task-by-system effect),
    with ``log g``, its derivatives in ``y`` and ``sigma_v`` and their cross derivative, those of
    the rule itself (the layout of :func:`tables._table_cell`, without its ready flag:
    :func:`_integrated_cells` fills every cell it reads first). Each node's ``p`` and ``1 - p`` come
    from one exponential, ``exp(-|y|)``, taken over every row and node at once
    (:func:`numerics._neg_abs_exp`).
    """
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
    whole = a_pow == cq  # a fractional count (partial credit) takes its logarithms
    for r in range(rows):
        g, gy, gs, gys = 0.0, 0.0, 0.0, 0.0
        for m in range(M):
            k = r * M + m
            inv = 1.0 / (1.0 + small[k])
            p, q_m = (inv, small[k] * inv) if ys[k] >= 0.0 else (small[k] * inv, inv)
            power = _power(p, q_m, a_pow, b_pow) if whole else _likelihood_power(p, q_m, cq, nq)
            like = lam[m] * power
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
    """The cubic Hermite interpolants of table ``q`` as polynomials, for Horner's rule.

    Between its rows ``first`` and ``last``, as polynomials in ``t`` in [0, 1] on each step:
    ``coef[q, i, :4]`` those of ``log g`` (from its values and slopes in ``y``, columns 0 and 1),
    ``coef[q, i, 4:]`` those of its derivative in ``sigma_v`` (from its values, column 2, and its
    cross derivative, column ``cross``).
    """
    h = TABLE_STEP
    for i in range(first, last):
        for value, slope, at in ((0, 1, 0), (2, cross, 4)):
            f0, s0 = tab[q, i, value], h * tab[q, i, slope]
            f1, s1 = tab[q, i + 1, value], h * tab[q, i + 1, slope]
            coef[q, i, at] = f0
            coef[q, i, at + 1] = s0
            coef[q, i, at + 2] = 3.0 * (f1 - f0) - 2.0 * s0 - s1
            coef[q, i, at + 3] = 2.0 * (f0 - f1) + s0 + s1


#: The task-latent form's tables' counts, on the grid of :data:`tables.COUNT_GRID` (sums of
#: partial-credit scores; whole counts are on it): ``(c, 1)`` for c = 0.5, 0.6, ..., 1 and
#: ``(c, 2)`` for c = 1, 1.1, ..., 2. Counts with fewer successes than failures read their
#: mirror ``(n - c, n)``. Whole counts read (1, 1), (1, 2) and (2, 2).
_LOW_COUNTS = np.array(
    [[0.5 + k / COUNT_GRID, 1.0] for k in range(COUNT_GRID // 2 + 1)]
    + [[1.0 + k / COUNT_GRID, 2.0] for k in range(COUNT_GRID + 1)]
)


@numba.njit(cache=True)
def _low_table(cc, nn):
    """The task-latent table of a cell's counts (a row of :data:`_LOW_COUNTS`; 0 where not run)."""
    if nn <= 0.0:
        return 0
    mirrored = max(cc, nn - cc)
    if nn == 1.0:
        return int(round((mirrored - 0.5) * COUNT_GRID))
    return COUNT_GRID // 2 + 1 + int(round((mirrored - 1.0) * COUNT_GRID))


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _integrated_cells(base, cluster, stratum, e, c, n, sigma_v, u, lam):
    """The task-latent form's log likelihood of the counts, each cell's effect integrated out.

    The counts are given the logits ``y[j, s] = base[cluster[j], stratum[j], s] + e[j]``
    (``base (G, H, S)`` from :func:`logp._forward`, ``e (J,)`` the task effects the likelihood
    sees), each cell's task-by-system effect integrated out (every cell has at most
    :data:`quadrature.LOW_TRIALS` trials): ``log g_{c,n}(y; sigma_v)`` by the fixed inner rule of
    the collapsed form's grid (:func:`_fixed_rows`), tabulated per counts over the range of ``|y|``
    and read by the cubic Hermite interpolant of :func:`tables._table_at` (counts with fewer
    successes than failures read their mirror at ``-y``, since the effect is symmetric; beyond the
    grid, the tangent at its end). Returns the sum, the gradient in ``base`` (summed over each row's
    tasks: what :func:`logp._backward_rows` takes), in the task effects ``(J,)`` and in ``sigma_v``:
    those of the interpolant, whose cells are exact functions of ``sigma_v``. Binomial coefficients
    are left out, as in :func:`_latent_cells`. The reads are written out in one loop (a call per
    cell cost three times as much), each a Horner evaluation of the step's polynomial
    (:func:`_hermite_coefficients`: 0.7 of the time of weighting the Hermite basis), and the logits
    are formed as the cells are read, never held whole.
    """
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
            used |= np.int64(n[j, s] > 0.0) << _low_table(c[j, s], n[j, s])
    top = min(int((reach - TABLE_LOW) / TABLE_STEP) + 1, TABLE_SIZE - 1)
    first = TABLE_SIZE - 1 - top  # the cells read, from first to top, held from row 0
    rows = top - first + 1
    # only the tables read are filled, each at its slot (0/1 outcomes read at most three)
    slot = np.full(_LOW_COUNTS.shape[0], -1, dtype=np.int64)
    held = 0
    for q in range(_LOW_COUNTS.shape[0]):
        if used & (np.int64(1) << q):
            slot[q] = held
            held += 1
    tab = np.empty((held, rows, 5))
    coef = np.empty((held, rows, 8))
    for q in range(_LOW_COUNTS.shape[0]):
        if slot[q] >= 0:
            k = slot[q]
            _fixed_rows(first, top, k, _LOW_COUNTS[q, 0], _LOW_COUNTS[q, 1], sigma_v, u, lam, tab)
            _hermite_coefficients(tab, k, 0, rows - 1, coef)
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
            q = slot[_low_table(cc, nn)]
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
def _sampled_cells(spec, const, tail, eta, e, c, n, sigma_v, paired, g_tail):
    """The full-latent form's cells, their task-by-system effects sampled or integrated.

    Every cell's task-by-system effect sampled (:func:`_latent_cells`), or the cells with a table
    integrated (:func:`_hybrid_cells`).
    """
    block, counts = _cell_table_block(spec, const)
    if counts.shape[0] > 0:
        return _hybrid_cells(tail, eta, e, c, n, sigma_v, block, counts, g_tail)
    y = _latent_y(e, tail, eta, sigma_v, paired)
    small, log_term = _softplus_parts(y)
    return _latent_cells(tail, y, small, log_term, c, n, sigma_v, paired, g_tail)
