"""The full-latent form's cluster pairs, rotated onto what the data see, spreads in polar form."""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.coordinates import (
    _kernel_layout,
    _reflections_at,
    _zero_sum,
    _zero_sum_adjoint,
)


@numba.njit(cache=True)
def _pairs(spec):
    """Whether the full-latent form holds its cluster pairs rotated (:func:`_unpair`).

    ``spec[11]`` 3: task effects centred, 4: standardised.
    """
    return spec.shape[0] >= 12 and (spec[11] == 3 or spec[11] == 4)


@numba.njit(cache=True)
def _pair_matrix(spec, const):
    """``Q (G, G)`` where the full-latent form rotates its cluster pairs, else ``(0, 0)``.

    It rotates them with centred task effects (``spec[11] == 3``, :func:`_unpair`). ``Q z`` are the
    task effects' standardised cluster components (cluster g's mean effect is
    ``sigma_task (Q z)[g] / sqrt(n_g)``) for the first ``r = G`` task coordinates ``z``, stored
    after the task reflections (:func:`bayeval.models.kernels.collapsed.cluster_pair_map`).
    """
    if spec.shape[0] < 12 or spec[11] != 3:
        return np.zeros((0, 0))
    G, J = spec[2], spec[9]
    k, r = _reflections_at(spec, const)
    k += 1 + r * J
    return const[k : k + G * r].reshape((G, r))


@numba.njit(cache=True)
def _pair_parts(theta, i_small, i_large, inv_root):
    """Each cluster's rotation ``(cos, sin)`` of a pair, onto the sum the data see.

    The pair is the cluster-level effect (spread ``exp(theta[i_large])``) and its tasks'
    standardised mean (``exp(theta[i_small]) / sqrt(n_g)``, ``inv_root`` the ``1 / sqrt(n_g)``).
    """
    small, large = math.exp(theta[i_small]), math.exp(theta[i_large])
    G = inv_root.shape[0]
    cos, sin = np.empty(G), np.empty(G)
    for g in range(G):
        b = small * inv_root[g]
        scale = 1.0 / math.sqrt(large * large + b * b)
        cos[g], sin[g] = large * scale, b * scale
    return cos, sin


@numba.njit(cache=True)
def _pair_layout(spec, const, cluster):
    """What :func:`_unpair` reads.

    The systems and clusters, whether paired, one over the root of each cluster's tasks, the log
    spreads' indices ``(task, task-by-system, cluster, cluster-by-system)`` and the cluster and task
    coordinates' starts.
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
    size = np.zeros(G)
    for j in range(cluster.shape[0]):
        size[cluster[j]] += 1.0
    inv_root = np.empty(G)
    for g in range(G):
        inv_root[g] = 1.0 / math.sqrt(size[g])
    return S, G, paired, inv_root, i_sig, i_mu, i_fu, i_mw, i_fw, i_tail


@numba.njit(cache=True)
def _unpair(theta, spec, const, cluster, Q):
    """The full-latent form's coordinates (and the map's log-Jacobian) from the sampler's.

    The sampler's hold each cluster's pairs rotated onto the sums the data see.

    The likelihood sees a cluster's effect ``u[g] = sigma_cluster z_u[g]`` only through its
    sum with its tasks' mean effect, ``sigma_task zeta[g] / sqrt(n_g)`` (``zeta = Q z``, the
    task effects' standardised cluster components), and a system's ``w[s, g] =
    sigma_cluster_system z_w[s, g]`` only with its task-by-system effects' mean,
    ``sigma_task_system xi[s, g] / sqrt(n_g)`` (``xi[s, g]`` the sum of ``z_v[j, s]`` over the
    cluster's tasks over ``sqrt(n_g)``). With many one-task clusters the split of each sum
    between the two spreads is barely identified, and sampled as they are the pairs must
    turn with every move of the split, and mix slowly (``models/logit_normal.md``). So the sampler
    holds each pair rotated by the angle ``atan2(sigma_small / sqrt(n_g), sigma_large)``: the first
    coordinate is the pair's standardised sum, the second the direction the data do not see,
    standard normal. The rotation is orthonormal at every value of the spreads: the prior is
    unchanged and its Jacobian is one. The cluster sums, each pinned by its tasks' trials, are held
    centred (``A[g] = rho[g] a[g]``, ``rho[g]^2 = sigma_cluster^2 + sigma_task^2 / n_g``;
    log-Jacobian ``-sum log rho``), their standard normal values zero-sum and mean coordinates as
    the cluster effects' (:func:`coordinates._zero_sum`), where the task effects are centred (each
    pinned by its trials), else standardised like the task effects (:func:`_turn_sums`, the partner
    in the tasks' own coordinates); the cluster-by-system sums, each seen through a few trials, stay
    standardised. The spreads of each pair are held in polar coordinates (:func:`_from_polar`), the
    map applied before this one.
    """
    S, G, paired, inv_root, i_sig, i_mu, i_fu, i_mw, i_fw, i_tail = _pair_layout(
        spec, const, cluster
    )
    out = theta.copy()
    J = cluster.shape[0]
    # the cluster effects and the task effects' cluster components
    cos, sin = _pair_parts(theta, i_sig[0], i_sig[2], inv_root)
    log_jacobian = 0.0
    if Q.shape[0] == 0:  # task effects standardised: the sums too
        _turn_sums(theta, out, i_mu, i_fu, i_tail, 1, cos, sin, inv_root, cluster)
    else:
        a = np.empty(G)
        zs = np.empty(G)
        _zero_sum(theta[i_fu : i_fu + G - 1], a)
        inv_large = math.exp(-theta[i_sig[2]])
        for g in range(G):  # a = A / rho, 1 / rho = cos / sigma_cluster
            a[g] = (a[g] + theta[i_mu]) * cos[g] * inv_large
            log_jacobian += math.log(cos[g] * inv_large)
        b = _times(Q, theta[i_tail : i_tail + G], False)
        for g in range(G):
            zs[g] = cos[g] * a[g] - sin[g] * b[g]
            b[g] = sin[g] * a[g] + cos[g] * b[g]
        out[i_tail : i_tail + G] = _times(Q, b, True)
        _from_cluster_vector(zs, out, i_mu, i_fu, True)
    if not paired:
        return out, log_jacobian
    cos, sin = _pair_parts(theta, i_sig[1], i_sig[3], inv_root)
    for s in range(S):
        _turn_sums(
            theta, out, i_mw + s, i_fw + s * (G - 1), i_tail + J + s, S, cos, sin, inv_root, cluster
        )
    return out, log_jacobian


@numba.njit(cache=True)
def _turn_sums(theta, out, i_m, i_f, first, stride, cos, sin, inv_root, cluster):
    """One set of standardised pairs turned back (:func:`_unpair`), written into ``out``.

    The cluster-level coordinates at ``i_m`` (mean) and ``i_f`` (zero-sum part) hold the sums, and
    the task-level coordinates ``theta[first + j * stride]`` hold, in their clusters' mean
    directions, the partners.
    """
    G = inv_root.shape[0]
    a, b, zs = np.empty(G), np.zeros(G), np.empty(G)
    _zero_sum(theta[i_f : i_f + G - 1], a)
    for j in range(cluster.shape[0]):
        b[cluster[j]] += theta[first + j * stride]
    for g in range(G):
        a[g] += theta[i_m]
        b[g] *= inv_root[g]
        zs[g] = cos[g] * a[g] - sin[g] * b[g]
        a[g] = (sin[g] * a[g] + cos[g] * b[g] - b[g]) * inv_root[g]  # the change
    for j in range(cluster.shape[0]):
        out[first + j * stride] += a[cluster[j]]
    _from_cluster_vector(zs, out, i_m, i_f, True)


@numba.njit(cache=True)
def _turn_sums_adjoint(theta, grad, i_m, i_f, first, stride, cos, sin, inv_root, cluster):
    """The gradient through :func:`_turn_sums`, in place.

    Returns its part in the pair's angle.
    """
    G = inv_root.shape[0]
    a, b = np.empty(G), np.zeros(G)
    g_z, g_xi, g_a = np.empty(G), np.zeros(G), np.empty(G)
    _zero_sum(theta[i_f : i_f + G - 1], a)
    _zero_sum(grad[i_f : i_f + G - 1], g_z)
    for j in range(cluster.shape[0]):
        b[cluster[j]] += theta[first + j * stride]
        g_xi[cluster[j]] += grad[first + j * stride]
    turn = 0.0
    for g in range(G):
        a[g] += theta[i_m]
        g_z[g] += grad[i_m] / G
        b[g] *= inv_root[g]
        g_xi[g] *= inv_root[g]
        z_g = cos[g] * a[g] - sin[g] * b[g]
        xi_g = sin[g] * a[g] + cos[g] * b[g]
        turn += cos[g] * sin[g] * (g_xi[g] * z_g - g_z[g] * xi_g)
        g_a[g] = cos[g] * g_z[g] + sin[g] * g_xi[g]
        g_xi[g] = (-sin[g] * g_z[g] + cos[g] * g_xi[g] - g_xi[g]) * inv_root[g]  # the change
    for j in range(cluster.shape[0]):
        grad[first + j * stride] += g_xi[cluster[j]]
    _from_cluster_vector(g_a, grad, i_m, i_f, False)
    return turn


@numba.njit(cache=True)
def _from_cluster_vector(z, out, i_m, i_f, mean):
    """The coordinates ``m, f`` of a cluster vector ``z = m + B f``, or the gradient in them.

    ``out[i_m] = mean(z)`` (with ``mean``, else ``sum(z)``) and ``out[i_f:i_f + G - 1] = B' z``
    (:func:`coordinates._zero_sum`); without ``mean``, the gradient in the coordinates from that in
    ``z``.
    """
    G = z.shape[0]
    total = 0.0
    for g in range(G):
        total += z[g]
    out[i_m] = total / G if mean else total
    for k in range(G - 1):
        out[i_f + k] = 0.0
    _zero_sum_adjoint(z, 1.0, out[i_f : i_f + G - 1])


@numba.njit(cache=True)
def _unpair_adjoint(theta, spec, const, cluster, Q, grad):
    """The gradient in the sampler's coordinates (:func:`_unpair`) from ``grad``.

    ``grad`` is the gradient in the unrotated ones (overwritten); the log-Jacobian's is included.
    """
    S, G, paired, inv_root, i_sig, i_mu, i_fu, i_mw, i_fw, i_tail = _pair_layout(
        spec, const, cluster
    )
    J = cluster.shape[0]
    cos, sin = _pair_parts(theta, i_sig[0], i_sig[2], inv_root)
    if Q.shape[0] == 0:  # task effects standardised: the sums too
        turn = _turn_sums_adjoint(theta, grad, i_mu, i_fu, i_tail, 1, cos, sin, inv_root, cluster)
        grad[i_sig[0]] += turn
        grad[i_sig[2]] -= turn
    else:
        a = np.empty(G)
        g_z, g_a = np.empty(G), np.empty(G)
        _zero_sum(theta[i_fu : i_fu + G - 1], a)
        inv_large = math.exp(-theta[i_sig[2]])
        for g in range(G):
            a[g] = (a[g] + theta[i_mu]) * cos[g] * inv_large
        b = _times(Q, theta[i_tail : i_tail + G], False)
        _zero_sum(grad[i_fu : i_fu + G - 1], g_z)
        for g in range(G):
            g_z[g] += grad[i_mu] / G
        g_zeta = _times(Q, grad[i_tail : i_tail + G], False)
        turn = d_small = d_large = 0.0
        for g in range(G):
            z_g = cos[g] * a[g] - sin[g] * b[g]
            zeta_g = sin[g] * a[g] + cos[g] * b[g]
            turn += cos[g] * sin[g] * (g_zeta[g] * z_g - g_z[g] * zeta_g)
            g_a[g] = cos[g] * g_z[g] + sin[g] * g_zeta[g]
            g_zeta[g] = -sin[g] * g_z[g] + cos[g] * g_zeta[g]  # now the rotated partner's
            # through a = A / rho and the log-Jacobian, -sum log rho
            d_small -= (g_a[g] * a[g] + 1.0) * sin[g] * sin[g]
            d_large -= (g_a[g] * a[g] + 1.0) * cos[g] * cos[g]
            g_a[g] *= cos[g] * inv_large
        grad[i_tail : i_tail + G] = _times(Q, g_zeta, True)
        _from_cluster_vector(g_a, grad, i_mu, i_fu, False)
        grad[i_sig[0]] += turn + d_small
        grad[i_sig[2]] += d_large - turn
    if not paired:
        return grad
    cos, sin = _pair_parts(theta, i_sig[1], i_sig[3], inv_root)
    turn = 0.0
    for s in range(S):
        turn += _turn_sums_adjoint(
            theta,
            grad,
            i_mw + s,
            i_fw + s * (G - 1),
            i_tail + J + s,
            S,
            cos,
            sin,
            inv_root,
            cluster,
        )
    grad[i_sig[1]] += turn
    grad[i_sig[3]] -= turn
    return grad


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _times(Q, x, transpose):
    """``Q x`` (or ``Q' x``) for square ``Q``, along its rows either way."""
    G = Q.shape[0]
    out = np.zeros(G)
    if transpose:
        for i in range(G):
            xi = x[i]
            for k in range(G):
                out[k] += Q[i, k] * xi
        return out
    for i in range(G):
        acc = 0.0
        for k in range(G):
            acc += Q[i, k] * x[k]
        out[i] = acc
    return out


@numba.njit(cache=True)
def _spread_pairs(spec, const):
    """The indices ``(small, large)`` of the log spreads held in polar coordinates.

    The task and cluster spreads, and with several systems the task-by-system and cluster-by-system
    ones.
    """
    i_sig = _kernel_layout(spec, const)[22]
    if i_sig[1] >= 0 and i_sig[3] >= 0:
        return np.array([[i_sig[0], i_sig[2]], [i_sig[1], i_sig[3]]])
    return np.array([[i_sig[0], i_sig[2]]])


@numba.njit(cache=True)
def _from_polar(x, spec, const):
    """The log spreads from the polar coordinates the sampler holds with the cluster pairs.

    See :func:`_unpair`. Of each pair of spreads (task and cluster, task-by-system and
    cluster-by-system), ``log rho = log sqrt(sigma_small^2 + sigma_large^2)`` and
    ``phi = log(sigma_small / sigma_large)``. The data pin the total better than the split: in the
    log spreads themselves that is a curved ridge. The map's Jacobian is one in absolute value.
    """
    out = x.copy()
    pairs = _spread_pairs(spec, const)
    for k in range(pairs.shape[0]):
        i_s, i_l = pairs[k, 0], pairs[k, 1]
        ell, phi = x[i_s], x[i_l]
        out[i_s] = ell - 0.5 * math.log1p(math.exp(-2.0 * phi)) if phi > -20.0 else ell + phi
        out[i_l] = ell - 0.5 * math.log1p(math.exp(2.0 * phi)) if phi < 20.0 else ell - phi
    return out


@numba.njit(cache=True)
def _polar_adjoint(x, spec, const, grad):
    """The gradient in the polar coordinates (:func:`_from_polar`) from that in the log spreads.

    In place.
    """
    pairs = _spread_pairs(spec, const)
    for k in range(pairs.shape[0]):
        i_s, i_l = pairs[k, 0], pairs[k, 1]
        sin2 = 1.0 / (1.0 + math.exp(-2.0 * x[i_l]))
        g_s, g_l = grad[i_s], grad[i_l]
        grad[i_s] = g_s + g_l
        grad[i_l] = (1.0 - sin2) * g_s - sin2 * g_l
