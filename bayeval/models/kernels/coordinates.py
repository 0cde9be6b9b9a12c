"""The kernel's coordinates: theta's layout, zero-sum basis, reflections, attenuation, levels."""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _zero_sum(f, out):
    """``out (G,) = B f`` for ``f (G - 1,)``, ``B`` the zero-sum basis, in O(G).

    ``B`` is the basis of :func:`bayeval.models.kernels.collapsed.zero_sum_basis`: the first
    ``G - 1`` columns of the reflection ``I - 2 v v' / v'v``, ``v = e_G - 1 / sqrt(G)``, which maps
    the last axis onto the mean direction, so its other columns are orthonormal and sum to zero. The
    dense basis cost O(G^2) (Terminal-Bench's 70 clusters: most of a gradient).
    """
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


@numba.njit(cache=True)
def _task_rotation(spec, const):
    """Whether the full-latent form samples its task effects centred (``spec[11]``), and how.

    If so, the rank ``r`` of the subspace the data do not see apart from the intercepts and cluster
    effects and the ``r`` Householder vectors ``(r, J)`` whose reflections' product ``H`` has that
    subspace as its first ``r`` columns (stored after the quadrature rules); with ``spec[11] == 2``
    the task effects' cluster components are folded into the centred cluster coordinates, through
    the map ``(G - 1, r)`` stored next (:func:`bayeval.models.kernels.collapsed.task_cluster_fold`);
    with ``spec[11] == 3`` they are paired with the cluster effects instead (:func:`pairs._unpair`;
    4: the same, the task effects standardised).
    """
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
    """Where the centred task effects' constants start in ``const``, and their rank ``r``.

    The constants are their rank ``r``, then the reflections and what follows them.
    """
    S = spec[0]
    k = 7 + S * S + S + 2 * (spec[5] + spec[6] + spec[7])
    return k, int(const[k])


@numba.njit(cache=True)
def _reflect(vectors, x, transpose):
    """``x <- H x`` in place with ``H = H_1 ... H_r``, or ``x <- H' x`` with ``transpose``.

    ``H_i = I - 2 v_i v_i'``, with unit ``v_i`` the rows of ``vectors``.
    """
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
    is orthogonal, so ``e ~ N(0, sigma_e^2 I)`` either way.
    """
    e = np.empty(J)
    for j in range(J):
        e[j] = sigma_e * tail[j] if (not centred or j < r) else tail[j]
    if centred:
        _reflect(vectors, e, False)
    return e


@numba.njit(cache=True)
def _task_prior(tail, g_e, J, sigma_e, centred, r, vectors, g_tail):
    """The log prior of the task-effect coordinates (:func:`_task_effects`, log-Jacobian included).

    Adds to ``g_tail`` their gradient and that of the likelihood, given in the effects as
    ``g_e (J,)``. Returns the log prior and the derivative of both in ``sigma_e``.
    """
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
def _kernel_layout(spec, const):
    """The kernel's sizes, flags, constants and offsets into ``theta``.

    In the order of :class:`bayeval.models.kernels.collapsed.Coordinates`.
    """
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
    """The attenuation factor ``kappa = sqrt(1 + (pi / 8)(sigma_e^2 + sigma_v^2))``, or one.

    The collapsed form's task-level effects, integrated out, shrink the rest of the linear
    predictor's effect on the rates by kappa; it applies where the sampler sees that rest divided by
    it (``spec[12]``), and is one elsewhere.

    Integrating the task and task-by-system effects out leaves each system's rate over the
    tasks near ``expit(alpha / kappa)``: the data pin ``alpha / kappa`` (and the cluster
    effects over kappa), and held plainly every intercept, cluster effect and their spreads
    move with the task-level spreads along a curved ridge (on the 25 SWE-bench systems half
    of each intercept's posterior variance, and the divergent draws at its far end). On that
    scale the ridge is nearly straight.
    """
    if spec.shape[0] < 13 or spec[12] == 0:
        return 1.0
    # the task-latent form samples its task effects: only the integrated ones attenuate
    total = 0.0 if spec[9] != 0 else math.exp(2.0 * theta[i_sig[0]])
    if paired:
        total += math.exp(2.0 * theta[i_sig[1]])
    return math.sqrt(1.0 + ATTENUATION * total)


@numba.njit(cache=True)
def _attenuated_parts(spec, const):
    """Which coordinates of ``theta`` the attenuated form holds scaled and which shifted.

    As index arrays: those it holds divided by kappa (``scaled``: the intercepts' rotated
    coordinates but the non-centred contrasts, and centred cluster coordinates' zero-sum parts) and
    the log spreads it holds less ``log kappa`` (``shifted``: the cluster, cluster-by-system and
    system spreads).
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
    """The plain coordinates of attenuated ``theta``.

    ``scaled`` ones times kappa, ``shifted`` log spreads plus ``log kappa``.
    """
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
    """Turn ``grad`` in the plain coordinates into that in the attenuated ``theta``.

    The plain coordinates are those of :func:`_plain_theta`. Returns the log-Jacobian,
    ``len(scaled) log kappa`` (the shifted log spreads' map has a unit Jacobian: it is triangular in
    the log spreads). kappa depends on the spreads from ``i_sig[first]`` on (1: the task-latent
    form's).
    """
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
    """The clusters' shares of the tasks ``(G,)``, stored last in ``const``, or empty.

    Stored where the sampler sees the intercepts at the level the data weigh them by (``spec[13]``);
    else empty.

    The cluster effects' zero-sum part is zero-sum with equal weights, but the data see the
    clusters in proportion to their tasks (SWE-bench's django: 231 of 500 tasks), so the
    intercepts' level traded against the zero-sum coordinates (on the 25 SWE-bench systems a
    correlation of -0.58, the sampler's narrowest direction). Shifting the intercepts by the
    zero-sum part's task-weighted mean, and taking it off every cluster's, removes that; the
    prior is unchanged (the intercepts' coordinates are normal about their shift whatever it
    is).
    """
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
    """The gradient in a zero-sum part ``d`` from that in ``d - pi . d`` and in ``pi . d``.

    The gradient in ``d - pi . d`` is ``g_d`` (in place), that in the shift ``pi . d`` is
    ``d_level``.
    """
    if pi.shape[0] == 0:
        return
    total = 0.0
    for g in range(g_d.shape[0]):
        total += g_d[g]
    for g in range(g_d.shape[0]):
        g_d[g] += pi[g] * (d_level - total)
