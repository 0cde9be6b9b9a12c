"""The tasks estimand and task rates from exact draws of the task and task-by-system effects."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from bayeval.models.kernels.disk_cache import is_cached
from bayeval.models.kernels.draws import (
    HULL_POINTS,
    _hull_draw,
    _hull_insert,
    _v_draw_from,
    _v_rates,
)
from bayeval.models.kernels.moments import _f, metric_arguments
from bayeval.models.kernels.numerics import _sigmoid, _softplus
from bayeval.models.kernels.quadrature import Rules
from bayeval.models.kernels.tables import (
    INNER_NODES,
    TABLE_SIZE,
    _marginal_e,
    _marginal_mode,
    _table_slots,
)


def exact_draws_cached() -> bool:
    """Whether numba's disk cache holds the exact task draws' kernels for this source.

    False where the first readout over these tasks compiles them (half a minute or more on a
    fresh install).
    """
    return all(is_cached(function) for function in (_exact_block, _exact_setup))


#: tasks drawn one by one in the tasks estimand when there are at most this many (as the Beta
#: models do); above it the mean over tasks is drawn from the normal of its conditional moments
EXACT_TASKS = 100


@numba.njit(cache=True)
def _count_peaks(c, n):
    """Each cell's largest binomial log-likelihood (coefficient omitted), at ``p = c / n``.

    That is ``c log(c / n) + (n - c) log(1 - c / n)``; zero where every trial succeeded, or every
    one failed, or none was run.
    """
    out = np.zeros(c.shape)
    for p in range(c.shape[0]):
        for s in range(c.shape[1]):
            cq, nq = c[p, s], n[p, s]
            if 0.0 < cq < nq:
                out[p, s] = cq * math.log(cq / nq) + (nq - cq) * math.log(1.0 - cq / nq)
    return out


@numba.njit(cache=True)
def _prior_try(rng, eta_p, c_p, n_p, peak_p, sigma_e, sigma_v, paired, v):
    """One proposal of a task's effects from their prior, kept with probability ``L / L_max``.

    ``L / L_max`` is the binomial likelihood of the task's counts over its largest value, per cell
    at ``p = c / n``: a kept proposal is an exact draw of the task's effects from their conditional.
    Returns whether it was kept and the task effect; the task-by-system effects are written to
    ``v (S,)``. ``rng`` is a NumPy Generator (ziggurat normals and exponentials).
    """
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
    """Each pattern's share of kept prior proposals (:func:`_prior_try`) over ``trials`` tries.

    Under one set of parameters: which patterns :func:`_exact_task_sums` draws from their prior
    first.
    """
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
#: draw (below that the hull is cheaper; how much the prior keeps: ``models/logit_normal.md``,
#: sampling settings)
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
    """The first points of a pattern's hull over the task effect's marginal.

    Written into ``ex``, ``eh``, ``ed``; returns their number. The hull needs points either side of
    the mode, not the mode: from the guess ``(mode, scale)``, each side steps out (doubling) until
    its slope points back at it.
    """
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
    """For one draw: every task's rates drawn from their joint conditional, summed over tasks.

    ``out (S, Q) += weight[j, s] f(p[s, j])`` summed over the tasks.

    Tasks of patterns marked in ``prior (P,)`` first try up to ``PRIOR_TRIES`` proposals of
    all their effects from the prior (:func:`_prior_try`, ``peak`` from
    :func:`_count_peaks`): with few systems and few trials most are kept, and neither the
    hull nor the tables below are needed. Otherwise (or if none is kept) the task effect
    comes from its marginal (log-concave: the integral of a log-concave function), then each
    system's task-by-system effect from its conditional given it (:func:`draws._v_draw_from`). The
    marginal is read from the likelihood kernel's tables of inner integrals
    (:func:`tables._marginal_e`; ``slot (P, S)`` names each cell's of ``n_tables``), filled for this
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
    """Each pattern's task-effect mode and Laplace sd ``(P, 2)`` under one set of parameters.

    By :func:`tables._marginal_mode`: where :func:`_exact_task_sums` starts its hulls in every draw.
    """
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
    """What every draw of :func:`_exact_block` shares, from the reference draw.

    From the reference draw's predictors ``eta_ref (P, S)`` and spreads: each cell's table slot, the
    number of tables, the hulls' starting guesses, which patterns try their prior first (those whose
    prior keeps at least ``prior_keep`` of its proposals there) and each cell's peak likelihood.
    """
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
    """:func:`_exact_task_sums` for draws ``first`` to ``last``.

    One stream: ``rng``, and the legacy generator seeded with ``seed`` for the hulls. Pattern
    ``p``'s predictors in draw ``d`` are ``eta[d, rows[p]]``; a non-empty ``rates (D, S, J)`` takes
    the rates themselves. Releases the GIL: blocks run on threads.
    """
    np.random.seed(seed)  # noqa: NPY002 (numba's per-thread stream, not NumPy's)
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
    """System ``s``'s draws ``first`` to ``last`` of every task's rate, given its task effect.

    One stream: ``rng``, and the legacy generator seeded with ``seed`` for the hull. Every task's
    rate given the draw's sampled task effect, the task-by-system effects drawn exactly from their
    one-dimensional conditionals a row of tasks at a time (:func:`draws._v_rates`);
    ``out (D, S, Q) += weight[j, s] f(p[s, j])``, or with a non-empty ``rates (D, S, J)``, the rates
    themselves (NaN where the system did not run the task).
    """
    np.random.seed(seed)  # noqa: NPY002 (numba's per-thread stream, not NumPy's)
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
    """The tasks estimand drawn task by task, as ``(D, S, k)``.

    Per posterior draw, every task's rates in all systems drawn jointly from their conditional (no
    normal approximation of the mean over tasks), ``sum_j weight[j, s] f(p[s, j])``.

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
    """Every task's rates, per posterior draw drawn jointly over the systems: ``(D, S, J)``.

    Drawn from their conditional exactly as :func:`exact_task_sums` draws them; NaN where
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
    """:func:`_exact_block` from NumPy arrays, over blocks of draws on numba's threads.

    Blocks of :data:`LATENT_BLOCK` draws, each block with its own seeds (so the draws do not depend
    on how many threads run them); the hulls start from the modes of the reference draw, the one
    with the median task spread.
    """
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
