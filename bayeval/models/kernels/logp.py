"""The collapsed logit-normal model's log density and its gradient, in one compiled kernel."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.cells import _integrated_cells, _sampled_cells
from bayeval.models.kernels.coordinates import (
    _attenuated_parts,
    _attenuation,
    _attenuation_adjoint,
    _kernel_layout,
    _level_adjoint,
    _level_weights,
    _plain_theta,
    _task_effects,
    _task_prior,
    _task_rotation,
    _weighted_level,
    _zero_sum,
    _zero_sum_adjoint,
)
from bayeval.models.kernels.guide import _guide_adjoint, _guided, _unguide
from bayeval.models.kernels.likelihood import loglik_and_grad
from bayeval.models.kernels.pairs import (
    _from_polar,
    _pair_matrix,
    _pairs,
    _polar_adjoint,
    _unpair,
    _unpair_adjoint,
)


@numba.njit(cache=True)
def _cluster_prior(theta, i_m, i_f, Gm, G, sigma, centred, i_sigma, grad, centre, g_centre):
    """The log prior of one set of cluster coordinates, adding its gradient to ``grad``.

    The coordinates are its mean ``theta[i_m]`` (standard normal over G: the effects' mean is
    ``sigma`` times it) and zero-sum part ``theta[i_f:i_f + Gm]``; the gradient goes in the log
    spread at ``i_sigma`` too when centred. The zero-sum part is standard normal (non-centred) or,
    centred, the effects' own zero-sum coordinates, normal with sd ``sigma``. The mean stays
    non-centred either way: the data do not see it apart from the intercepts, so it follows its
    prior, which its standardised form keeps independent of the spread. The zero-sum coordinates are
    normal about ``centre (Gm,)`` (zeros, or the task effects' cluster components folded in:
    :func:`logp_and_grad`), whose gradient adds to ``g_centre``.
    """
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
    """The log prior of ``theta`` with its gradient, and every pattern's linear predictor.

    Log-Jacobians are included; the predictors are ``eta (P, S)`` (none with ``P`` negative: read
    ``base`` instead). Returns those and the state :func:`_backward` needs:
    ``(logp, grad, eta, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys, base)``, ``base (G, H, S)`` the
    predictors of each (cluster, stratum). The cluster effects' zero-sum coordinates are normal
    about ``centre_u``, whose gradient adds to ``g_centre_u``.
    """
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
    """Add to ``grad`` the likelihood's gradient, by the chain rule through :func:`_forward`.

    The likelihood's gradient is given in the linear predictors ``g_eta (P, S)`` and the task-level
    spreads (``g_se``, ``g_sv``); the chain rule runs through the transforms of :func:`_forward`.
    """
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
    """:func:`_backward` from the likelihood's gradient summed per (cluster, stratum).

    That gradient is ``by_gh (G, H, S)``.
    """
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


@numba.njit(cache=True)
def logp_and_grad(attenuated, spec, const, p_cluster, p_stratum, c, n, mult):
    """Log density of ``theta`` (prior, log-Jacobians, collapsed likelihood) and its gradient.

    ``spec`` and ``const`` come from :class:`Coordinates`; ``p_cluster``/``p_stratum`` give each
    count pattern's cluster and stratum; ``c``, ``n`` ``(P, S)`` and ``mult (P,)`` the patterns.
    In the full-latent form (``spec[9]``, the number of tasks) the patterns are the tasks, one
    each in task order, and ``theta`` ends with their effects' coordinates
    (:func:`coordinates._task_effects`, :func:`cells._latent_cells`) in place of the quadrature.
    With ``spec[12]`` the collapsed form's ``theta`` is attenuated
    (:func:`coordinates._attenuation`): the density is computed at its plain coordinates
    (:func:`coordinates._plain_theta`) and the gradient taken back, the log-Jacobian added. With
    ``spec[11]`` 3 or 4 the full-latent form's ``theta`` holds its task and cluster spreads in polar
    coordinates (:func:`pairs._from_polar`) and its cluster pairs rotated (:func:`pairs._unpair`):
    the density is that of the plain coordinates plus the map's log-Jacobian. With ``spec[16]`` the
    task-latent form's ``theta`` holds some cluster-level coordinates guided
    (:func:`guide._unguide`), likewise.
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
    """:func:`logp_and_grad` in the unrotated coordinates (see :func:`pairs._unpair`).

    The collapsed form is :func:`collapsed_logp_and_grad`'s; this adds the latent forms.
    """
    if spec[9] == 0:  # no task effects in theta (coordinates._kernel_layout's ``latent``)
        return collapsed_logp_and_grad(attenuated, spec, const, p_cluster, p_stratum, c, n, mult)
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
    integrated = paired and spec.shape[0] > 14 and spec[14] != 0
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
    # the patterns are the tasks, their effects the tail of theta
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
def collapsed_logp_and_grad(attenuated, spec, const, p_cluster, p_stratum, c, n, mult):
    """:func:`logp_and_grad` of the collapsed form only: its task effects integrated out.

    The same arithmetic as :func:`_logp_and_grad` where ``spec`` is not latent (nothing guided,
    no pairs, no fold), without the latent forms' code: compiled, it is a fraction of
    :func:`logp_and_grad`, which a collapsed fit on a fresh install would otherwise compile
    whole. ``spec`` must be the collapsed form's (:func:`coordinates._kernel_layout`'s
    ``latent`` false).
    """
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
    if latent:
        raise ValueError("collapsed_logp_and_grad: spec is a latent form's")
    kappa = _attenuation(spec, attenuated, i_sig, paired)
    scaled = shifted = np.zeros(0, dtype=np.int64)
    if kappa != 1.0:
        scaled, shifted = _attenuated_parts(spec, const)
    theta = _plain_theta(attenuated, kappa, scaled, shifted)
    centre_u = np.zeros(max(Gm, 0))
    g_centre_u = np.zeros(max(Gm, 0))
    logp, grad, eta, sig, d_u, d_w, d_shift, sig_sys, d_sig_sys, base = _forward(
        theta, spec, const, p_cluster, p_stratum, c.shape[0], centre_u, g_centre_u
    )
    total, g_eta, g_se, g_sv = loglik_and_grad(
        eta, c, n, mult, sig[0], sig[1], paired, x, logw, z, log_omega, u, lam
    )
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
        logp += _attenuation_adjoint(attenuated, grad, kappa, scaled, shifted, i_sig, paired, 0)
    return logp + total, grad


@numba.njit(cache=True, nogil=True)
def kernel_logp(theta, spec, const, index, c, n, mult):
    """:func:`logp_and_grad` in one compiled call that releases the GIL.

    The patterns' cluster and stratum come as ``index (2, P)``.
    """
    return logp_and_grad(theta, spec, const, index[0], index[1], c, n, mult)


@numba.njit(cache=True)
def unmapped(x, spec, const, cluster):
    """``x`` in the kernel's coordinates.

    :func:`guide._unguide` where the form guides its cluster-by-system coordinates,
    :func:`pairs._unpair` where it rotates its cluster pairs, else ``x`` itself.
    """
    if _guided(spec):
        return _unguide(x, spec, const)[0]
    if not _pairs(spec):
        return x
    return _unpair(_from_polar(x, spec, const), spec, const, cluster, _pair_matrix(spec, const))[0]


@numba.njit(cache=True)
def latent_task_effects(x, spec, const, kept, J, log_sigma_task):
    """The task effects ``(J,)`` of a full-latent ``theta`` (:func:`coordinates._task_effects`).

    Its tail starts at ``kept`` and its log task spread is at ``log_sigma_task``.
    """
    centred, r, vectors, _, _ = _task_rotation(spec, const)
    i_sig = np.array([log_sigma_task, log_sigma_task + 1])
    kappa = _attenuation(spec, x, i_sig, spec[4] != 0)
    if kappa != 1.0:  # the task-latent form's attenuated coordinates, made plain
        scaled, shifted = _attenuated_parts(spec, const)
        x = _plain_theta(x, kappa, scaled, shifted)
    return _task_effects(x[kept : kept + J], J, math.exp(x[log_sigma_task]), centred, r, vectors)
