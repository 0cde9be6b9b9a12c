"""The task-latent form's cluster-level coordinates, guided by the data's score and information."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.coordinates import _kernel_layout, _task_rotation


@numba.njit(cache=True)
def _guided(spec):
    """Whether the sampler holds some cluster-level coordinates guided (``spec[16]``).

    ``spec[16]`` is 1 for the cluster-by-system ones, 2 the task effects' cluster means, 3 both; see
    :func:`_unguide`.
    """
    return spec.shape[0] >= 17 and spec[16] != 0


@numba.njit(cache=True)
def _guide_block(spec, const, r):
    """The guides' constants, stored before the level weights.

    For the cluster-by-system coordinates (``spec[16] & 1``;
    :func:`bayeval.models.kernels.collapsed.cluster_system_guide`) per system the eigenvectors
    ``(S, G - 1, G - 1)`` (columns) of the data's information about its zero-sum cluster-by-system
    coordinates, their eigenvalues ``(S, G - 1)`` and the data's score in that basis ``(S, G - 1)``;
    before them, for the task effects' ``r`` cluster means (``spec[16] & 2``), the eigenvectors
    ``(r, r)`` and eigenvalues ``(r,)`` of ``F'F``, ``F`` the fold map
    (:func:`bayeval.models.kernels.collapsed.task_cluster_fold`).
    """
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
    """What :func:`_unguide` and :func:`_guide_adjoint` read.

    The task rotation's rank and fold map, the guides' constants (:func:`_guide_block`), the sizes
    and the offsets.
    """
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
    """The sampler's guided coordinates ``x`` mapped to the kernel's, and the map's log-Jacobian.

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
    into the centred cluster coordinates ``c`` (:func:`logp.logp_and_grad`), the data pin ``c``,
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
    the conditional of ``z`` is the same).
    """
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
    """Turn ``grad`` at :func:`_unguide`'s image of ``x`` into the gradient in ``x``, in place.

    The log-Jacobian's gradient is included.
    """
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
