"""The irt model's log density and its gradient, compiled, as a model nutpie samples.

The density is :func:`bayeval.models.irt.build_irt_model`'s (unlinked fits: the item-anchored
coordinates, the same priors and Jacobians), written out by hand with its gradient in numba.
nutpie's PyTensor route evaluates it through a dozen dense (system, item) array operations a
gradient and calls them from Python; this kernel makes one pass over the cells that have
trials, and nutpie calls it as a C function from its threads
(:mod:`bayeval.models.kernels.nutpie_model`), so a fit builds and compiles no model (timed in
``models/irt.md``).

The unconstrained vector ``x`` holds the PyMC model's value variables, in this order, two of
them moved (below): ``mu_log_a`` (m); ``phi`` (S, the logit at a typical item); ``theta_bar``;
``log_beta``; the items' standard normals ``b_z`` (J); with clusters ``log_gamma``,
``cluster_mean`` and the G - 1 coordinates ``y`` of the zero-sum ``cluster_deviation``
(PyMC's ``zerosum`` transform, an isometry: ``deviation = E y`` for the G x (G - 1) matrix
``E`` of :func:`zero_sum_matrix`); with the 2PL form ``log sigma_log_a`` and the items' ``a_z``
(J). Normalising constants are left out: the
density differs from PyMC's by a constant (tested).

The likelihood reads ``phi[s] - beta b_z[j]``, unchanged when every ``phi`` and every
``beta b_z`` shift together; only the items' prior pins that common shift (``mean(b_z) ~
Normal(0, 1/J)``). In PyMC's coordinates it is a diagonal direction through all S + J of them,
which NUTS with a diagonal mass matrix crosses in steps sized for the contrasts the data pin
(``mu_b``, which reads ``mean(phi)``, mixed slowest: bulk ESS 270 of 8,000 draws on
LiveCodeBench). The kernel samples it as one coordinate: ``b_z = H' y`` for the orthonormal
Helmert matrix ``H`` (first row constant, so ``y[0] = sqrt(J) mean(b_z)``), and ``x[1:S + 1] =
phi - beta mean(b_z)``, the logits against the items' own mean. A rotation and a shear: the
Jacobian is one.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import xarray as xr

from bayeval.models.kernels.abi import (
    _as_f64_pointer,
    _as_i64_pointer,
    kernel_data,
    nutpie_cfuncs,
    nutpie_status,
)
from bayeval.models.kernels.numerics import (
    _binomial_cell,
    _softplus_parts,
    finite,
    helmert_add,
    helmert_to,
)

#: The kernel's integer constants: systems, items, clusters (1 without), whether the data
#: have clusters, whether the form is the 2PL, and the number of cells with trials.
SPEC = ("S", "J", "G", "clusters", "two_pl", "P")
#: The prior constants, in order: ``mu_b`` (mean, sd), the HalfNormal scales of ``sigma_b``
#: and ``sigma_cluster``, ``mu_log_a`` (mean, sd), the HalfNormal scale of ``sigma_log_a``.
PRIOR_CONSTANTS = ("mu_b", "sigma_b", "sigma_cluster", "mu_log_a", "sigma_log_a")
N_CONST = 7
#: The user data of the C functions: sizes, then the addresses of the data arrays.
FIELDS = (
    "dim",
    "n_kept",
    "S",
    "J",
    "G",
    "clusters",
    "two_pl",
    "P",
    "const",
    "zero_sum",
    "cluster",
    "system_index",
    "task_index",
    "c",
    "n",
)


def zero_sum_matrix(G: int) -> np.ndarray:
    """PyMC's ``zerosum`` backward transform as a ``(G, G - 1)`` matrix.

    ``extend_axis``: ``y -> concat(y, fill) - norm`` with ``norm = sum(y) / (sqrt(G) + G)`` and
    ``fill = norm - sum(y) / sqrt(G)``; its columns are orthonormal and sum to zero.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.kernels.irt import zero_sum_matrix
    >>> E = zero_sum_matrix(4)
    >>> bool(np.allclose(E.T @ E, np.eye(3))), bool(np.allclose(E.sum(axis=0), 0.0))
    (True, True)
    """
    if G < 2:
        return np.zeros((max(G, 1), 0))
    root = math.sqrt(G)
    y = np.eye(G - 1)
    total = y.sum(axis=0, keepdims=True)  # one column per unit vector
    norm = total / (root + G)
    fill = norm - total / root
    return np.vstack([y, fill]) - norm


@numba.njit(cache=True)
def offsets(S, J, G, clusters, two_pl):
    """Where each block of ``x`` starts, and the dimension, as an int64 array of 7.

    ``psi``, ``b_z``, ``log_gamma`` (-1 without clusters), the zero-sum coordinates (-1
    without clusters), ``log sigma_log_a`` and ``a_z`` (-1 in the 1PL form), the dimension.
    """
    out = np.full(7, -1, dtype=np.int64)
    out[0] = 1
    out[1] = S + 3
    i = S + 3 + J
    if clusters:
        out[2] = i
        out[3] = i + 2
        i += 2 + G - 1
    if two_pl:
        out[4] = i
        out[5] = i + 1
        i += 1 + J
    out[6] = i
    return out


@numba.njit(cache=True)
def anchored_coordinates(x, S, J, start, beta):
    """``psi`` (S), the items' standard normals ``z_b`` (J) and their mean, from ``x``.

    ``z_b = H' y`` for the coordinates ``y = x[start:start + J]`` and the orthonormal Helmert
    matrix ``H`` (:func:`~bayeval.models.kernels.numerics.helmert_to`), so ``y[0] = sqrt(J)
    mean(z_b)``; ``psi = x[1:S + 1] + beta mean(z_b)``. Both maps have Jacobian one (module
    docstring).
    """
    z_b = np.empty(J)
    helmert_to(x[start : start + J], z_b)
    z_mean = x[start] / math.sqrt(J)
    psi = np.empty(S)
    for s in range(S):
        psi[s] = x[1 + s] + beta * z_mean
    return psi, z_b, z_mean


@numba.njit(cache=True)
def kept_size(S, J, G, clusters, two_pl):
    """The values a draw keeps: theta, a, b, mu_b, sigma_b, mu_log_a, and the optional ones.

    ``sigma_cluster`` and ``cluster_effect`` (G) with clusters, ``sigma_log_a`` in the 2PL.
    """
    size = S + 2 * J + 3
    if clusters:
        size += 1 + G
    if two_pl:
        size += 1
    return size


@numba.njit(cache=True)
def logp_into(x, spec, const, zero_sum, cluster, s_index, j_index, c, n, grad):
    """The log density at ``x`` (module docstring); its gradient written into ``grad``."""
    S, J, G, clusters, two_pl, P = spec[0], spec[1], spec[2], spec[3], spec[4], spec[5]
    off = offsets(S, J, G, clusters, two_pl)
    for i in range(grad.shape[0]):
        grad[i] = 0.0
    m = x[0]
    scale = math.exp(-m)
    theta_bar = x[S + 1]
    log_beta = x[S + 2]
    beta = math.exp(log_beta)
    psi, z_b, z_mean = anchored_coordinates(x, S, J, off[1], beta)
    g_psi = np.zeros(S)  # the gradient in psi and in z_b, carried to x at the end
    g_z = np.zeros(J)
    psi_bar = 0.0
    for s in range(S):
        psi_bar += psi[s]
    psi_bar /= S

    # the items' anchored difficulty A[j] = beta z_b[j] (+ the cluster's deviation) and their
    # discrimination relative to exp(m), r[j] = exp(sigma_log_a z_a[j])
    anchored = np.empty(J)
    for j in range(J):
        anchored[j] = beta * z_b[j]
    deviation = np.zeros(G)
    if clusters:
        y = x[off[3] : off[3] + G - 1]
        for g in range(G):
            total = 0.0
            for k in range(G - 1):
                total += zero_sum[g * (G - 1) + k] * y[k]
            deviation[g] = total
        for j in range(J):
            anchored[j] += deviation[cluster[j]]
    relative = np.ones(J)
    sigma_a = 0.0
    if two_pl:
        sigma_a = math.exp(x[off[4]])
        for j in range(J):
            relative[j] = math.exp(sigma_a * x[off[5] + j])

    # the likelihood, c eta - n softplus(eta) a cell, in one vectorised pass
    eta = np.empty(P)
    for i in range(P):
        j = j_index[i]
        eta[i] = relative[j] * (psi[s_index[i]] - anchored[j])
    small, log_term = _softplus_parts(eta)
    logp = 0.0
    g_anchored = np.zeros(J)
    g_relative = np.zeros(J)
    for i in range(P):
        s, j = s_index[i], j_index[i]
        value, slope = _binomial_cell(c[i], n[i], eta[i], small[i], log_term[i])
        logp += value
        g_psi[s] += slope * relative[j]
        g_anchored[j] -= slope * relative[j]
        g_relative[j] += slope * (psi[s] - anchored[j])

    # back through the items' maps
    for j in range(J):
        g_z[j] += g_anchored[j] * beta
        grad[S + 2] += g_anchored[j] * beta * z_b[j]
    if clusters:
        g_deviation = np.zeros(G)
        for j in range(J):
            g_deviation[cluster[j]] += g_anchored[j]
        for k in range(G - 1):
            total = 0.0
            for g in range(G):
                total += zero_sum[g * (G - 1) + k] * g_deviation[g]
            grad[off[3] + k] += total
    if two_pl:
        for j in range(J):
            g_r = g_relative[j] * relative[j]  # d/d(sigma_a z_a[j])
            grad[off[5] + j] += g_r * sigma_a
            grad[off[4]] += g_r * x[off[5] + j] * sigma_a

    # the prior: abilities theta = (psi - mean psi) exp(-m) + theta_bar ~ Normal(0, 1), with the
    # Jacobian -S m of psi -> theta (the other coordinates' Jacobians as in the PyMC model)
    theta_sum = 0.0
    for s in range(S):
        theta = (psi[s] - psi_bar) * scale + theta_bar
        logp -= 0.5 * theta * theta
        theta_sum += theta
        grad[0] += theta * (psi[s] - psi_bar) * scale
        g_psi[s] -= theta * scale
    for s in range(S):
        g_psi[s] += theta_sum * scale / S
    grad[S + 1] -= theta_sum
    logp -= S * m
    grad[0] -= S
    # sigma_b = beta exp(-m) ~ HalfNormal, with log sigma_b (the Jacobian of log_beta)
    sigma_b = beta * scale
    ratio = sigma_b * sigma_b / (const[2] * const[2])
    logp += -0.5 * ratio + log_beta - m
    grad[S + 2] += 1.0 - ratio
    grad[0] += ratio - 1.0
    # mu_b = theta_bar - mean(psi) exp(-m) [- cluster_mean gamma exp(-m) / sqrt(G)]
    mu_b = theta_bar - psi_bar * scale
    if clusters:
        log_gamma = x[off[2]]
        gamma = math.exp(log_gamma)
        sigma_u = gamma * scale
        ratio = sigma_u * sigma_u / (const[3] * const[3])
        logp += -0.5 * ratio + log_gamma - m
        grad[off[2]] += 1.0 - ratio
        grad[0] += ratio - 1.0
        mean_z = x[off[2] + 1]
        shift = mean_z * sigma_u / math.sqrt(G)
        mu_b -= shift
        logp -= 0.5 * mean_z * mean_z
        grad[off[2] + 1] -= mean_z
        # the zero-sum deviations ~ Normal(0, gamma), G - 1 degrees of freedom
        y = x[off[3] : off[3] + G - 1]
        squares = 0.0
        for k in range(G - 1):
            squares += y[k] * y[k]
            grad[off[3] + k] -= y[k] / (gamma * gamma)
        logp += -0.5 * squares / (gamma * gamma) - (G - 1) * log_gamma
        grad[off[2]] += squares / (gamma * gamma) - (G - 1)
    g_mu = -(mu_b - const[0]) / (const[1] * const[1])
    logp -= 0.5 * (mu_b - const[0]) ** 2 / (const[1] * const[1])
    grad[S + 1] += g_mu
    for s in range(S):
        g_psi[s] -= g_mu * scale / S
    grad[0] += g_mu * psi_bar * scale
    if clusters:
        grad[0] += g_mu * shift
        grad[off[2] + 1] -= g_mu * sigma_u / math.sqrt(G)
        grad[off[2]] -= g_mu * shift
    # mu_log_a ~ Normal, the items' standard normals
    logp -= 0.5 * (m - const[4]) ** 2 / (const[5] * const[5])
    grad[0] -= (m - const[4]) / (const[5] * const[5])
    for j in range(J):
        logp -= 0.5 * z_b[j] * z_b[j]
        g_z[j] -= z_b[j]
    if two_pl:
        # sigma_log_a ~ HalfNormal, sampled on its log (Jacobian log sigma_log_a)
        ratio = sigma_a * sigma_a / (const[6] * const[6])
        logp += -0.5 * ratio + x[off[4]]
        grad[off[4]] += 1.0 - ratio
        for j in range(J):
            z = x[off[5] + j]
            logp -= 0.5 * z * z
            grad[off[5] + j] -= z
    # back through psi = x[1:S+1] + beta * mean(z_b) and z_b = H' y (anchored_coordinates)
    total = 0.0
    for s in range(S):
        grad[1 + s] += g_psi[s]
        total += g_psi[s]
    helmert_add(g_z, grad[off[1] : off[1] + J])
    grad[off[1]] += total * beta / math.sqrt(J)
    grad[S + 2] += total * beta * z_mean
    return logp


@numba.njit(cache=True)
def logp_and_grad(x, spec, const, zero_sum, cluster, s_index, j_index, c, n):
    """:func:`logp_into` returning the log density and a new gradient array."""
    grad = np.empty(x.shape[0])
    logp = logp_into(x, spec, const, zero_sum, cluster, s_index, j_index, c, n, grad)
    return logp, grad


@numba.njit(cache=True)
def expand(x, spec, zero_sum, cluster, out):
    """The kept values of a draw, written into ``out`` (:func:`kept_size`'s order).

    theta (S), a (J), b (J), mu_b, sigma_b, mu_log_a, then sigma_cluster and cluster_effect
    (G) with clusters, then sigma_log_a in the 2PL form.
    """
    S, J, G, clusters, two_pl = spec[0], spec[1], spec[2], spec[3], spec[4]
    off = offsets(S, J, G, clusters, two_pl)
    m = x[0]
    scale = math.exp(-m)
    psi, z_b, _ = anchored_coordinates(x, S, J, off[1], math.exp(x[S + 2]))
    psi_bar = 0.0
    for s in range(S):
        psi_bar += psi[s]
    psi_bar /= S
    theta_bar = x[S + 1]
    for s in range(S):
        out[s] = (psi[s] - psi_bar) * scale + theta_bar
    sigma_b = math.exp(x[S + 2]) * scale
    mu_b = theta_bar - psi_bar * scale
    effect = np.zeros(G)
    sigma_u = 0.0
    if clusters:
        sigma_u = math.exp(x[off[2]]) * scale
        mean_u = x[off[2] + 1] * sigma_u / math.sqrt(G)  # on the ability scale
        mu_b -= mean_u
        for g in range(G):
            total = 0.0
            for k in range(G - 1):
                total += zero_sum[g * (G - 1) + k] * x[off[3] + k]
            effect[g] = mean_u + total * scale
    sigma_a = math.exp(x[off[4]]) if two_pl else 0.0
    for j in range(J):
        log_a = m + (sigma_a * x[off[5] + j] if two_pl else 0.0)
        out[S + j] = math.exp(log_a)
        out[S + J + j] = mu_b + effect[cluster[j]] + sigma_b * z_b[j]
    i = S + 2 * J
    out[i] = mu_b
    out[i + 1] = sigma_b
    out[i + 2] = m
    i += 3
    if clusters:
        out[i] = sigma_u
        for g in range(G):
            out[i + 1 + g] = effect[g]
        i += 1 + G
    if two_pl:
        out[i] = sigma_a


# -- the kernel as a model nutpie samples ---------------------------------------------------------
def kernel_inputs(layout, priors: dict) -> dict:
    """The kernel's data, by its :data:`FIELDS` names, for a :class:`~bayeval.models.irt.Layout`.

    ``spec``, the prior constants (``priors`` filled in and checked), the zero-sum matrix and
    the cells with trials, C-contiguous, int64 or float64 and read-only (nutpie is handed their
    addresses).
    """
    G = layout.n_clusters
    clusters = layout.cluster_labels is not None
    values = {
        "spec": [
            layout.n_systems,
            layout.n_tasks,
            G,
            clusters,
            priors["form"] == "2pl",
            layout.successes.size,
        ],
        "const": [
            *priors["mu_b"],
            priors["sigma_b"],
            priors["sigma_cluster"],
            *priors["mu_log_a"],
            priors["sigma_log_a"],
        ],
        "zero_sum": zero_sum_matrix(G).ravel() if clusters else np.zeros(0),
        "cluster": layout.cluster,
        "system_index": layout.system_index,
        "task_index": layout.task_index,
        "c": layout.successes,
        "n": layout.trials,
    }
    return kernel_data(values, integers=("spec", "cluster", "system_index", "task_index"))


def kernel_model(inputs: dict):
    """:func:`kernel_inputs` as a model ``nutpie.sample`` takes.

    The compiled kernel is called as C functions from nutpie's threads; each draw keeps
    ``values`` (:func:`split_values`).
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

    shape = tuple(int(v) for v in inputs["spec"][:5])
    dim = int(offsets(*shape)[6])
    kept = int(kept_size(*shape))
    sizes = {
        "dim": dim,
        "n_kept": kept,
        **dict(zip(SPEC, inputs["spec"].tolist(), strict=True)),
    }
    return nutpie_model.values_model(inputs, FIELDS, dim, kept, sizes, nutpie_functions)


def split_values(values: np.ndarray, layout, form: str) -> xr.Dataset:
    """The named posterior from the kernel's kept values ``(chain, draw, kept)``.

    The variables of the PyMC model's trace: :data:`bayeval.models.irt.POSTERIOR_VARS` that the
    form and data have, and ``cluster_effect`` with clusters (:func:`expand`'s order).
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

    S, J, G = layout.n_systems, layout.n_tasks, layout.n_clusters
    blocks: list[nutpie_model.Block] = [
        ("theta", ("system",), (S,)),
        ("a", ("task",), (J,)),
        ("b", ("task",), (J,)),
    ]
    blocks += [(name, (), ()) for name in ("mu_b", "sigma_b", "mu_log_a")]
    if layout.cluster_labels is not None:
        blocks += [("sigma_cluster", (), ()), ("cluster_effect", ("cluster",), (G,))]
    if form == "2pl":
        blocks.append(("sigma_log_a", (), ()))
    return nutpie_model.split_kept(values, blocks)


# -- nutpie's C functions -----------------------------------------------------------------------
def _nutpie_logp(dim, x_p, grad_p, logp_p, meta_p):
    meta = numba.carray(meta_p, (len(FIELDS),))
    D, J, G, P = meta[0], meta[3], meta[4], meta[7]
    if dim != D:
        return -1
    x = numba.carray(x_p, (D,))
    if not finite(x):  # a diverged trajectory: no density there
        return 4
    out = numba.carray(grad_p, (D,))
    try:  # as nutpie's own C functions: an error is code 1, a point the sampler rejects
        logp = logp_into(
            x,
            meta[2:8],
            numba.carray(_as_f64_pointer(meta[8]), (N_CONST,)),
            numba.carray(_as_f64_pointer(meta[9]), (G * (G - 1),)),
            numba.carray(_as_i64_pointer(meta[10]), (J,)),
            numba.carray(_as_i64_pointer(meta[11]), (P,)),
            numba.carray(_as_i64_pointer(meta[12]), (P,)),
            numba.carray(_as_f64_pointer(meta[13]), (P,)),
            numba.carray(_as_f64_pointer(meta[14]), (P,)),
            out,
        )
    except Exception:  # noqa: BLE001
        return 1
    numba.carray(logp_p, (1,))[0] = logp
    return nutpie_status(logp, out)


def _nutpie_expand(dim, n_expanded, x_p, out_p, meta_p):
    meta = numba.carray(meta_p, (len(FIELDS),))
    D, kept, J, G = meta[0], meta[1], meta[3], meta[4]
    if dim != D or n_expanded != kept:
        return -1
    expand(
        numba.carray(x_p, (D,)),
        meta[2:8],
        numba.carray(_as_f64_pointer(meta[9]), (G * (G - 1),)),
        numba.carray(_as_i64_pointer(meta[10]), (J,)),
        numba.carray(out_p, (kept,)),
    )
    return 0


def nutpie_functions():
    """The compiled C log density and expansion (:func:`.abi.nutpie_cfuncs`)."""
    return nutpie_cfuncs(_nutpie_logp, _nutpie_expand)
