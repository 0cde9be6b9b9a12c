"""The zoib model's log density and its gradient, compiled, as a model nutpie samples.

The density is :func:`bayeval.models.zoib.build_zoib_model`'s (every effect latent and
non-centred, the same priors), written out by hand with its gradient in numba: nutpie's
PyTensor route evaluates it through dozens of array operations a gradient (timed in
``models/zoib.md``), this one loop over the cells does it in a fraction of that,
and nutpie calls it as a C function from its threads (:mod:`bayeval.models.kernels.nutpie_model`),
so a fit builds and compiles no model.

The unconstrained vector ``x`` holds, in order: ``alpha``, ``delta``, ``gamma``, ``log phi``
(one per system each); the logs of the spreads ``sigma_task``, ``sigma_task_system`` (paired),
``sigma_cluster`` (clusters), ``sigma_cluster_system`` (both) and ``sigma_zoi``; then the
standard normals of the task effects (J), the task-by-system effects (S x J, paired), the
cluster effects (G, clusters), the cluster-by-system effects (S x G, both) and the grading
tendencies (J); from :data:`LEVEL_TASKS` tasks on, the first S are the systems' levels and the
task and cluster blocks are rotated (below). Normalising constants are left out.

From :data:`LEVEL_TASKS` tasks on (``spec`` field ``level``) the first S coordinates are
each system's level on these tasks, not ``alpha`` itself:
``alpha[s] = x[s] - level``, with ``level`` the mean over the tasks of the shared effects
(``sigma_task e[j] + sigma_cluster u[g(j)]``). The map has Jacobian one, so the density is the
model's; it takes away the ridge along which every system's ``alpha`` and every shared effect
trade a common shift, which NUTS with a diagonal mass matrix crosses slowly when many systems
share the tasks (``models/zoib.md``). With few tasks
the level is itself uncertain and ties ``alpha`` to ``sigma_task``'s funnel; no gain was
measured there and simulated benchmarks of ten tasks had more divergences with it, so
``alpha`` stays the coordinate below :data:`LEVEL_TASKS` tasks.

With the levels, the likelihood sees the task and cluster effects only through their
deviations from the level: a common shift of every ``e`` (or every ``u``) moves nothing but the
prior and, through ``alpha = x[:S] - level``, every ``alpha``. The shift is a diagonal direction
in their standard normals, which the data do not pin while they pin each contrast tightly, so
a diagonal mass matrix has to take steps sized for the contrasts to cross it. Those standard
normals are therefore ``H' y`` for the coordinates ``y``, ``H`` the orthonormal Helmert matrix
(:func:`helmert_to`; ``scipy.linalg.helmert(n, full=True)``), whose first row is the common
shift: a rotation (Jacobian one) that makes the shift a coordinate of its own, which mixes
better in the same time (``models/zoib.md``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from bayeval.models.kernels.abi import (
    _as_f64_pointer,
    _as_i64_pointer,
    nutpie_cfuncs,
    nutpie_status,
)
from bayeval.models.kernels.numerics import _sigmoid, finite, helmert_add, helmert_to

#: The kernel's integer constants: systems, tasks, clusters (1 without), paired, clustered,
#: the number of cells with an interior score, and whether the first S coordinates are the
#: systems' levels (module docstring) rather than ``alpha``.
SPEC = ("S", "J", "G", "paired", "clusters", "I", "level")
#: The prior constants, in order (Normal mean and sd, then the HalfNormal scales).
PRIOR_CONSTANTS = (
    "alpha",
    "delta",
    "gamma",
    "log_phi",
    "sigma_task",
    "sigma_task_system",
    "sigma_cluster",
    "sigma_cluster_system",
    "sigma_zoi",
)
#: Their number: four (mean, sd) pairs and five scales.
N_CONST = 2 * 4 + 5
#: The user data of the C functions: sizes, then the addresses of the data arrays.
FIELDS = (
    "dim",
    "n_kept",
    "S",
    "J",
    "G",
    "paired",
    "clusters",
    "I",
    "level",
    "const",
    "cluster",
    "n0",
    "n1",
    "nmid",
    "interior",
    "sumlog",
    "sumlog1m",
)
_EULER_TERMS = (1 / 12, 1 / 120, 1 / 252, 1 / 240, 1 / 132)
#: From this many tasks the kernel samples the systems' levels (module docstring).
LEVEL_TASKS = 50


@numba.njit(cache=True)
def digamma(x):
    """The digamma function for ``x > 0``.

    By recurrence to ``x >= 6``, then the asymptotic series to ``x^-10``: error below 1e-11, against
    SciPy.
    """
    out = 0.0
    while x < 6.0:
        out -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    tail = f * (
        _EULER_TERMS[0]
        - f
        * (_EULER_TERMS[1] - f * (_EULER_TERMS[2] - f * (_EULER_TERMS[3] - f * _EULER_TERMS[4])))
    )
    return out + math.log(x) - 0.5 / x - tail


@numba.njit(cache=True)
def offsets(S, J, G, paired, clusters):
    """Where each block of ``x`` starts, and the dimension, as an int64 array of 11.

    The five log spreads (-1 where absent), the task, task-by-system, cluster, cluster-by-system and
    grading effects (-1 where absent), and the dimension.
    """
    out = np.full(11, -1, dtype=np.int64)
    i = 4 * S
    present = (True, paired, clusters, paired and clusters, True)
    for q in range(5):
        if present[q]:
            out[q] = i
            i += 1
    sizes = (
        J,
        S * J if paired else 0,
        G if clusters else 0,
        S * G if (paired and clusters) else 0,
        J,
    )
    for q in range(5):
        if sizes[q] > 0:
            out[5 + q] = i
            i += sizes[q]
    out[10] = i
    return out


@numba.njit(cache=True)
def kept_size(S, J, G, paired, clusters):
    """Values kept per draw (:func:`expand`): 4 S parameters, 5 spreads, the effects."""
    return (
        4 * S
        + 5
        + 2 * J
        + (S * J if paired else 0)
        + (G if clusters else 0)
        + (S * G if (paired and clusters) else 0)
    )


@numba.njit(cache=True, nogil=True)
def task_and_cluster_normals(x, off, J, G, level):
    """The standard normals of the task and cluster effects.

    The coordinates themselves, or, where the systems' levels are sampled (``level``), their images
    under ``H'`` (:func:`helmert_to`) so that the coordinates' first is their common shift.
    """
    e = x[off[5] : off[5] + J].copy()
    u = x[off[7] : off[7] + G].copy() if off[7] >= 0 else np.zeros(G)
    if level:
        helmert_to(x[off[5] : off[5] + J], e)
        if off[7] >= 0:
            helmert_to(x[off[7] : off[7] + G], u)
    return e, u


@numba.njit(cache=True, nogil=True)
def shared_effects(e, u, sig, cluster, clusters):
    """Each task's effect that the systems share, ``sigma_task e[j] + sigma_cluster u[g(j)]``.

    ``e``, ``u`` are the standard normals, ``sig`` the five spreads.
    """
    J = cluster.shape[0]
    out = np.empty(J)
    for j in range(J):
        out[j] = sig[0] * e[j] + (sig[2] * u[cluster[j]] if clusters else 0.0)
    return out


@numba.njit(cache=True, nogil=True)
def logp_and_grad(x, spec, const, cluster, n0, n1, nmid, interior, sumlog, sumlog1m):
    """The log density at ``x`` (normalising constants omitted) and its gradient.

    ``n0``, ``n1``, ``nmid`` are the (S x J, flat) counts at 0, at 1 and between;
    ``interior`` the flat index of the cells with an interior score and ``sumlog``,
    ``sumlog1m`` their sums of ``log y`` and ``log(1 - y)``.
    """
    grad = np.empty(x.shape[0])
    logp = logp_into(x, spec, const, cluster, n0, n1, nmid, interior, sumlog, sumlog1m, grad)
    return logp, grad


@numba.njit(cache=True, nogil=True, error_model="numpy")
def logp_into(x, spec, const, cluster, n0, n1, nmid, interior, sumlog, sumlog1m, grad):
    """:func:`logp_and_grad` with the gradient written into ``grad``; the log density."""
    S, J, G = spec[0], spec[1], spec[2]
    paired, clusters = spec[3] != 0, spec[4] != 0
    off = offsets(S, J, G, paired, clusters)
    D = off[10]
    grad[:] = 0.0
    logp = 0.0
    sig = np.zeros(5)
    for q in range(5):  # the spreads: HalfNormal(scale) on the log scale, with the Jacobian
        i = off[q]
        if i >= 0:
            sig[q] = math.exp(x[i])
            r = sig[q] / const[8 + q]
            logp += x[i] - 0.5 * r * r
            grad[i] = 1.0 - r * r
    e0, v0, u0, w0, b0 = off[5], off[6], off[7], off[8], off[9]
    levels = spec[6] != 0  # alpha = x[:S] - level, rotated task and cluster blocks (docstring)
    ze, zu = task_and_cluster_normals(x, off, J, G, levels)
    shared = shared_effects(ze, zu, sig, cluster, clusters)
    level = shared.mean() if levels else 0.0
    for k in range(4):  # alpha, delta, gamma, log phi ~ Normal(mean, sd)
        mean, sd = const[2 * k], const[2 * k + 1]
        for s in range(S):
            z = (x[k * S + s] - (level if k == 0 else 0.0) - mean) / sd
            logp -= 0.5 * z * z
            grad[k * S + s] = -z / sd
    for i in range(off[5], D):  # the effects' standard normals
        logp -= 0.5 * x[i] * x[i]
        grad[i] = -x[i]
    phi = np.empty(S)
    lg_phi = np.empty(S)
    psi_phi = np.empty(S)
    for s in range(S):
        phi[s] = math.exp(x[3 * S + s])
        lg_phi[s] = math.lgamma(phi[s])
        psi_phi[s] = digamma(phi[s])
    g_task = np.zeros(J)  # the log density's derivative in each task's eta and zeta, summed
    g_zoi = np.zeros(J)
    g_v = 0.0  # ... and in the task-by-system and cluster-by-system spreads
    g_w = 0.0
    n_interior = interior.shape[0]
    i = 0  # the next interior cell (their flat indices ascend)
    for s in range(S):
        g_alpha = 0.0
        g_gamma = 0.0
        for j in range(J):
            k = s * J + j
            g = cluster[j]
            eta = x[s] - level + shared[j]
            if paired:
                eta += sig[1] * x[v0 + k]
                if clusters:
                    eta += sig[3] * x[w0 + s * G + g]
            zeta = x[2 * S + s] + sig[4] * x[b0 + j]
            # the 0/1 grades and the share of interior ones
            a0, a1, am = n0[k], n1[k], nmid[k]
            t = math.exp(-abs(eta))
            lt = math.log1p(t)
            p = 0.5 + math.copysign(0.5 * (1.0 - t) / (1.0 + t), eta)  # expit(eta)
            r = math.exp(-abs(zeta))
            q = 0.5 + math.copysign(0.5 * (1.0 - r) / (1.0 + r), zeta)  # expit(zeta)
            lr = math.log1p(r)
            log_zoi = -(max(-zeta, 0.0) + lr)
            log_1m_zoi = -(max(zeta, 0.0) + lr)
            logp += (
                a0 * (log_zoi - max(eta, 0.0) - lt)
                + a1 * (log_zoi - max(-eta, 0.0) - lt)
                + am * log_1m_zoi
            )
            ge = a1 - (a0 + a1) * p
            gz = (a0 + a1) * (1.0 - q) - am * q
            if i < n_interior and interior[i] == k:  # the Beta density of its interior scores
                m, sl, sl1 = nmid[k], sumlog[i], sumlog1m[i]
                mu = _sigmoid(eta + x[S + s])
                clipped = mu < 1e-12 or mu > 1.0 - 1e-12
                mu = min(max(mu, 1e-12), 1.0 - 1e-12)
                a = mu * phi[s]
                b = phi[s] - a
                logp += (
                    (a - 1.0) * sl
                    + (b - 1.0) * sl1
                    - m * (math.lgamma(a) + math.lgamma(b) - lg_phi[s])
                )
                psi_a, psi_b = digamma(a), digamma(b)
                if not clipped:
                    g_x = phi[s] * (sl - sl1 - m * (psi_a - psi_b)) * mu * (1.0 - mu)
                    ge += g_x
                    grad[S + s] += g_x
                grad[3 * S + s] += phi[s] * (
                    mu * sl + (1.0 - mu) * sl1 - m * (mu * psi_a + (1.0 - mu) * psi_b - psi_phi[s])
                )
                i += 1
            # the chain rule back to the coordinates
            g_alpha += ge
            g_gamma += gz
            g_task[j] += ge
            g_zoi[j] += gz
            if paired:
                grad[v0 + k] += sig[1] * ge
                g_v += ge * x[v0 + k]
                if clusters:
                    grad[w0 + s * G + g] += sig[3] * ge
                    g_w += ge * x[w0 + s * G + g]
        grad[s] += g_alpha
        grad[2 * S + s] += g_gamma
    if paired:
        grad[off[1]] += sig[1] * g_v
        if clusters:
            grad[off[3]] += sig[3] * g_w
    g_e = 0.0
    g_u = 0.0
    g_b = 0.0
    # alpha = x[:S] - level: the derivative in the level (minus that in every alpha) goes back
    # to the shared effects, of which it is the mean
    if levels:
        g_level = 0.0
        for s in range(S):
            g_level -= grad[s]
        for j in range(J):
            g_task[j] += g_level / J
    # the derivatives in the task and cluster effects' standard normals: into the gradient,
    # or (with the levels) first into g_ze, g_zu and then back through H' (helmert_add)
    g_ze = np.zeros(J) if levels else grad[e0 : e0 + J]
    g_zu = np.zeros(G) if levels or not clusters else grad[u0 : u0 + G]
    for j in range(J):
        g_ze[j] += sig[0] * g_task[j]
        g_e += g_task[j] * ze[j]
        grad[b0 + j] += sig[4] * g_zoi[j]
        g_b += g_zoi[j] * x[b0 + j]
        if clusters:
            g_zu[cluster[j]] += sig[2] * g_task[j]
            g_u += g_task[j] * zu[cluster[j]]
    if levels:
        helmert_add(g_ze, grad[e0 : e0 + J])
        if clusters:
            helmert_add(g_zu, grad[u0 : u0 + G])
    grad[off[0]] += sig[0] * g_e
    grad[off[4]] += sig[4] * g_b
    if clusters:
        grad[off[2]] += sig[2] * g_u
    return logp


@numba.njit(cache=True)
def expand(x, spec, cluster, out):
    """The values kept per draw of ``x``, into ``out`` (:func:`kept_size`).

    ``cluster`` holds the tasks' cluster codes, for ``alpha``'s level. The values: ``alpha``,
    ``delta``, ``gamma``, ``phi`` per system, the five spreads (0 where absent), then the task,
    task-by-system, cluster, cluster-by-system and grading effects that are present.
    """
    S, J, G = spec[0], spec[1], spec[2]
    paired, clusters = spec[3] != 0, spec[4] != 0
    off = offsets(S, J, G, paired, clusters)
    sig = np.zeros(5)
    for q in range(5):
        if off[q] >= 0:
            sig[q] = math.exp(x[off[q]])
        out[4 * S + q] = sig[q]
    levels = spec[6] != 0
    ze, zu = task_and_cluster_normals(x, off, J, G, levels)
    level = shared_effects(ze, zu, sig, cluster, clusters).mean() if levels else 0.0
    for i in range(3 * S):
        out[i] = x[i] - (level if i < S else 0.0)
    for s in range(S):
        out[3 * S + s] = math.exp(x[3 * S + s])
    i = 4 * S + 5
    sizes = (J, S * J, G, S * G, J)
    for q in range(5):
        start = off[5 + q]
        if start >= 0:
            for t in range(sizes[q]):
                z = ze[t] if q == 0 else (zu[t] if q == 2 else x[start + t])
                out[i + t] = sig[q] * z
            i += sizes[q]


# -- nutpie's C functions -----------------------------------------------------------------------
def _nutpie_logp(dim, x_p, grad_p, logp_p, meta_p):
    meta = numba.carray(meta_p, (len(FIELDS),))
    D, S, J, I = meta[0], meta[2], meta[3], meta[7]  # noqa: E741 (I as in SPEC)
    if dim != D:
        return -1
    x = numba.carray(x_p, (D,))
    if not finite(x):  # a diverged trajectory: no density there
        return 4
    spec = meta[2:9]
    out = numba.carray(grad_p, (D,))
    try:  # as nutpie's own C functions: an error is code 1, a point the sampler rejects
        logp = logp_into(
            x,
            spec,
            numba.carray(_as_f64_pointer(meta[9]), (N_CONST,)),
            numba.carray(_as_i64_pointer(meta[10]), (J,)),
            numba.carray(_as_f64_pointer(meta[11]), (S * J,)),
            numba.carray(_as_f64_pointer(meta[12]), (S * J,)),
            numba.carray(_as_f64_pointer(meta[13]), (S * J,)),
            numba.carray(_as_i64_pointer(meta[14]), (I,)),
            numba.carray(_as_f64_pointer(meta[15]), (I,)),
            numba.carray(_as_f64_pointer(meta[16]), (I,)),
            out,
        )
    except Exception:  # noqa: BLE001
        return 1
    numba.carray(logp_p, (1,))[0] = logp
    return nutpie_status(logp, out)


def _nutpie_expand(dim, n_expanded, x_p, out_p, meta_p):
    meta = numba.carray(meta_p, (len(FIELDS),))
    D, kept = meta[0], meta[1]
    if dim != D or n_expanded != kept:
        return -1
    expand(
        numba.carray(x_p, (D,)),
        meta[2:9],
        numba.carray(_as_i64_pointer(meta[10]), (meta[3],)),
        numba.carray(out_p, (kept,)),
    )
    return 0


def nutpie_functions():
    """The compiled C log density and expansion (:func:`.abi.nutpie_cfuncs`)."""
    return nutpie_cfuncs(_nutpie_logp, _nutpie_expand)
