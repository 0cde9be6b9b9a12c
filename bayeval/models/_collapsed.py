"""The collapsed logit-normal model as one compiled log density.

The sampler's parameters form one unconstrained vector ``theta``; a single numba kernel maps
it to the model's quantities, adds their log prior (with the log-Jacobians of the
transforms) and the quadrature log-likelihood of :mod:`bayeval.models._quadrature`, and
returns the gradient by the chain rule. PyMC sees one ``Flat`` vector and one ``Potential``,
so building a model compiles a handful of graph nodes instead of the ~90 that the same model
written with PyMC distributions needs (that compilation cost ~10 s per fit, longer than
sampling). The kernel is reached through a C symbol (see :func:`kernel_symbol`) so that the
model's compiled function only holds a call to it.

Coordinates of ``theta`` (present when the data have clusters / several systems)::

    log sigma_task, log sigma_task_system, log sigma_cluster, log sigma_cluster_system,
    m_u, f_u (G - 1), m_w (S), f_w (S, G - 1), z_alpha (S, H)

with ``u = sigma_cluster (m_u + B f_u)`` and ``w[s] = sigma_cluster_system (m_w[s] + B f_w[s])``
(``B`` an orthonormal basis of the vectors summing to zero over clusters, ``m ~ N(0, 1/G)``,
``f ~ N(0, I)``, so that ``u / sigma_cluster ~ N(0, I_G)``), and ``alpha = mean + R z_alpha -
shift`` with ``shift[s] = sigma_cluster m_u + sigma_cluster_system m_w[s]``, ``R`` orthonormal
(the mean-over-systems and contrast directions) and ``z_alpha ~ N(R' shift, sd)``, which makes
``alpha ~ N(mean, sd)`` whatever the shift. Why these coordinates: see
:func:`bayeval.models.logit_normal._intercepts_and_cluster_effects`.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph import Apply, Op

from bayeval.models._quadrature import Rules, loglik_and_grad

_HERE = Path(__file__).parent
#: Hash of the kernels' source: part of every compiled-code cache key below.
KERNEL_HASH = hashlib.sha256(
    (_HERE / "_quadrature.py").read_bytes() + (_HERE / "_collapsed.py").read_bytes()
).hexdigest()[:16]


def zero_sum_basis(G: int) -> np.ndarray:
    """Orthonormal basis ``(G, G - 1)`` of the vectors of length G that sum to zero."""
    q = np.linalg.qr(np.column_stack([np.ones(G), np.eye(G)[:, : G - 1]]))[0]
    return np.ascontiguousarray(q[:, 1:])


def contrast_rotation(S: int) -> np.ndarray:
    """Orthonormal ``(S, S)``: first column the mean over systems, the rest contrasts."""
    rotation = np.linalg.qr(np.column_stack([np.ones(S), np.eye(S)[:, : S - 1]]))[0]
    return rotation * np.sign(rotation[0, 0])


@dataclass(frozen=True)
class Coordinates:
    """Where each parameter sits in ``theta``, and the constants the kernel needs."""

    S: int
    H: int
    G: int  # clusters (1 without clusters)
    clusters: bool
    paired: bool

    @property
    def offsets(self) -> dict:
        S, H, G = self.S, self.H, self.G
        sizes = [("sigma_task", 1), ("sigma_task_system", int(self.paired)),
                 ("sigma_cluster", int(self.clusters)),
                 ("sigma_cluster_system", int(self.clusters and self.paired)),
                 ("m_u", int(self.clusters)), ("f_u", (G - 1) * self.clusters),
                 ("m_w", S * (self.clusters and self.paired)),
                 ("f_w", S * (G - 1) * (self.clusters and self.paired)), ("z_alpha", S * H)]
        out, start = {}, 0
        for name, size in sizes:
            out[name] = (start, size)
            start += size
        out["size"] = (start, 0)
        return out

    @property
    def size(self) -> int:
        return self.offsets["size"][0]

    def spec(self, rules: Rules) -> np.ndarray:
        """Integer constants of the kernel (int64)."""
        return np.array([self.S, self.H, self.G, self.clusters, self.paired, rules.x.size,
                         rules.z.size, rules.u.size], dtype=np.int64)

    def constants(self, priors: dict, rules: Rules) -> np.ndarray:
        """Float constants of the kernel: priors, rotation, zero-sum basis, quadrature rules."""
        mean, sd = priors["alpha"]
        head = [mean, sd, priors["sigma_task"], priors["sigma_task_system"],
                priors["sigma_cluster"], priors["sigma_cluster_system"]]
        return np.ascontiguousarray(np.concatenate(
            [np.asarray(head, float), contrast_rotation(self.S).ravel(),
             zero_sum_basis(self.G).ravel(), *rules.arrays()]))

    def unpack(self, theta: np.ndarray, priors: dict) -> dict:
        """The model's quantities from draws of ``theta (..., size)``.

        Returns ``alpha (..., S, H)``, the four spreads ``(...)`` (ones where absent: they
        multiply nothing), ``cluster_effect (..., G)`` and ``cluster_system_effect (..., S, G)``
        (zeros where absent).
        """
        theta = np.asarray(theta, dtype=float)
        lead = theta.shape[:-1]
        off = self.offsets
        S, H, G = self.S, self.H, self.G

        def take(name, shape):
            start, size = off[name]
            return theta[..., start:start + size].reshape(lead + shape)

        out = {name: (np.exp(take(name, ())) if off[name][1] else np.ones(lead))
               for name in ("sigma_task", "sigma_task_system", "sigma_cluster",
                            "sigma_cluster_system")}
        basis = zero_sum_basis(G)
        u = np.zeros(lead + (G,))
        w = np.zeros(lead + (S, G))
        shift = np.zeros(lead + (S,))
        if self.clusters:
            m_u = take("m_u", ())
            u = out["sigma_cluster"][..., None] * (m_u[..., None] + take("f_u", (G - 1,))
                                                   @ basis.T)
            shift = shift + (out["sigma_cluster"] * m_u)[..., None]
            if self.paired:
                m_w = take("m_w", (S,))
                w = out["sigma_cluster_system"][..., None, None] * (
                    m_w[..., None] + take("f_w", (S, G - 1)) @ basis.T)
                shift = shift + out["sigma_cluster_system"][..., None] * m_w
        z_alpha = take("z_alpha", (S, H))
        alpha = (priors["alpha"][0] + np.einsum("st,...th->...sh", contrast_rotation(S), z_alpha)
                 - shift[..., None])
        return {"alpha": alpha, **out, "cluster_effect": u, "cluster_system_effect": w}


@numba.njit(cache=True)
def logp_and_grad(theta, spec, const, p_cluster, p_stratum, c, n, mult):
    """Log density of ``theta`` (prior, log-Jacobians, collapsed likelihood) and its gradient.

    ``spec`` and ``const`` come from :class:`Coordinates`; ``p_cluster``/``p_stratum`` give each
    count pattern's cluster and stratum; ``c``, ``n`` ``(P, S)`` and ``mult (P,)`` the patterns.
    """
    S, H, G = spec[0], spec[1], spec[2]
    clusters, paired = spec[3] != 0, spec[4] != 0
    nx, nz, nu = spec[5], spec[6], spec[7]
    Gm = G - 1
    mean, sd = const[0], const[1]
    scale = const[2:6]
    k = 6
    rot = const[k:k + S * S].reshape((S, S))
    k += S * S
    basis = const[k:k + G * Gm].reshape((G, Gm))
    k += G * Gm
    x, logw = const[k:k + nx], const[k + nx:k + 2 * nx]
    k += 2 * nx
    z, log_omega = const[k:k + nz], const[k + nz:k + 2 * nz]
    k += 2 * nz
    u, lam = const[k:k + nu], const[k + nu:k + 2 * nu]
    # offsets, in the order of Coordinates.offsets
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
    i_za = i_fw + (S * Gm if clusters and paired else 0)
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
    m_u = theta[i_mu] if clusters else 0.0
    d_u = np.zeros(G)
    d_w = np.zeros((S, G))
    shift = np.full(S, sig_u * m_u)
    if clusters:
        logp += -0.5 * G * m_u * m_u
        grad[i_mu] += -G * m_u
        for j in range(Gm):
            f = theta[i_fu + j]
            logp += -0.5 * f * f
            grad[i_fu + j] += -f
            for g in range(G):
                d_u[g] += basis[g, j] * f
        if paired:
            for s in range(S):
                m_w = theta[i_mw + s]
                shift[s] += sig_w * m_w
                logp += -0.5 * G * m_w * m_w
                grad[i_mw + s] += -G * m_w
                for j in range(Gm):
                    f = theta[i_fw + s * Gm + j]
                    logp += -0.5 * f * f
                    grad[i_fw + s * Gm + j] += -f
                    for g in range(G):
                        d_w[s, g] += basis[g, j] * f
    # intercepts: z_alpha ~ N(R' shift, sd), identified = mean + R z_alpha
    identified = np.full((S, H), mean)
    d_shift = np.zeros(S)
    for t in range(S):
        for h in range(H):
            za = theta[i_za + t * H + h]
            centre = 0.0
            for s in range(S):
                centre += rot[s, t] * shift[s]
                identified[s, h] += rot[s, t] * za
            resid = (za - centre) / sd
            logp += -0.5 * resid * resid
            grad[i_za + t * H + h] += -resid / sd
            for s in range(S):
                d_shift[s] += rot[s, t] * resid / sd
    P = c.shape[0]
    eta = np.empty((P, S))
    for p in range(P):
        g, h = p_cluster[p], p_stratum[p]
        for s in range(S):
            eta[p, s] = identified[s, h] + sig_u * d_u[g] + sig_w * d_w[s, g]
    total, g_eta, g_se, g_sv = loglik_and_grad(eta, c, n, mult, sig[0], sig[1], paired, x, logw,
                                               z, log_omega, u, lam)
    logp += total
    grad[i_sig[0]] += sig[0] * g_se
    if paired:
        grad[i_sig[1]] += sig[1] * g_sv
    g_u = np.zeros(G)
    g_w = np.zeros((S, G))
    for p in range(P):
        g, h = p_cluster[p], p_stratum[p]
        for s in range(S):
            g_u[g] += g_eta[p, s]
            g_w[s, g] += g_eta[p, s]
            for t in range(S):
                grad[i_za + t * H + h] += rot[s, t] * g_eta[p, s]
    if clusters:
        total_shift = 0.0
        for s in range(S):
            total_shift += d_shift[s]
        d_sig_u = m_u * total_shift
        for g in range(G):
            d_sig_u += g_u[g] * d_u[g]
        grad[i_mu] += sig_u * total_shift
        for j in range(Gm):
            acc = 0.0
            for g in range(G):
                acc += basis[g, j] * g_u[g]
            grad[i_fu + j] += sig_u * acc
        grad[i_sig[2]] += sig_u * d_sig_u
        if paired:
            d_sig_w = 0.0
            for s in range(S):
                d_sig_w += theta[i_mw + s] * d_shift[s]
                grad[i_mw + s] += sig_w * d_shift[s]
                for g in range(G):
                    d_sig_w += g_w[s, g] * d_w[s, g]
                for j in range(Gm):
                    acc = 0.0
                    for g in range(G):
                        acc += basis[g, j] * g_w[s, g]
                    grad[i_fw + s * Gm + j] += sig_w * acc
            grad[i_sig[3]] += sig_w * d_sig_w
    return logp, grad


# -- the kernel behind a C symbol -----------------------------------------------------------
# PyMC's numba backend and nutpie link every kernel a model calls into the model's compiled
# function and optimise the whole module again, for every model built. Called through a C
# symbol instead, the kernel is compiled once (cached on disk) and the model's function only
# holds a call to it.
_F64 = numba.types.CPointer(numba.types.float64)
_I64 = numba.types.CPointer(numba.types.int64)
_C_SIG = numba.types.void(
    _F64, numba.types.int64,  # theta, its length
    _I64, _F64, numba.types.int64,  # spec (8,), constants, their length
    _I64, numba.types.int64,  # cluster and stratum of each pattern (2, P), P
    _F64, _F64, _F64,  # c, n (P, S), mult (P,)
    _F64, _F64,  # out: log density, gradient
)
_SYMBOL = f"bayeval_collapsed_logp_{KERNEL_HASH}"
_symbol_ready = False


def _c_kernel(theta_p, D, spec_p, const_p, n_const, index_p, P, c_p, n_p, mult_p, out_p,
              grad_p):
    spec = numba.carray(spec_p, (8,))
    S = spec[0]
    index = numba.carray(index_p, (2, P))
    logp, grad = logp_and_grad(numba.carray(theta_p, (D,)), spec,
                               numba.carray(const_p, (n_const,)), index[0], index[1],
                               numba.carray(c_p, (P, S)), numba.carray(n_p, (P, S)),
                               numba.carray(mult_p, (P,)))
    numba.carray(out_p, (1,))[0] = logp
    numba.carray(grad_p, (D,))[:] = grad


def kernel_symbol() -> str:
    """Compile (or load from the disk cache) the C kernel and register its symbol; its name."""
    global _symbol_ready
    if not _symbol_ready:
        from llvmlite import binding

        compiled = numba.cfunc(_C_SIG, cache=True)(_c_kernel)
        binding.add_symbol(_SYMBOL, compiled.address)
        _symbol_ready = True
    return _SYMBOL


class CollapsedLogp(Op):
    """PyTensor Op: the log density of ``theta`` and its gradient (see :func:`logp_and_grad`).

    Inputs other than ``theta`` are constants of the model (spec, constants, pattern index,
    counts, multiplicities). The Op's ``pullback`` uses the gradient output.
    """

    # PyTensor caches compiled numba code on disk under a key made of these props, not of the
    # kernels' source: ``kernel`` keeps an old compiled kernel from being reused after a change.
    __props__ = ("kernel",)

    def __init__(self):
        self.kernel = KERNEL_HASH

    def make_node(self, theta, spec, const, index, c, n, mult):
        dtypes = ("float64", "int64", "float64", "int64", "float64", "float64", "float64")
        # casts, not conversions: PyMC stores integer data as int32
        inputs = [pt.cast(pt.as_tensor_variable(value), dtype)
                  for value, dtype in zip((theta, spec, const, index, c, n, mult), dtypes)]
        return Apply(self, inputs, [pt.dscalar(), pt.dvector()])

    def perform(self, node, inputs, outputs):
        theta, spec, const, index, c, n, mult = (np.ascontiguousarray(a) for a in inputs)
        logp, grad = logp_and_grad(theta, spec, const, index[0], index[1], c, n, mult)
        outputs[0][0] = np.asarray(logp, dtype="float64")
        outputs[1][0] = grad

    def connection_pattern(self, node):
        return [[True, False]] + [[False, False]] * 6

    def pullback(self, inputs, outputs, cotangents):
        return [cotangents[0] * outputs[1]] + [DisconnectedType()() for _ in range(6)]


def _register_numba():
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    @register_funcify_default_op_cache_key(CollapsedLogp)
    def numba_funcify_collapsed(op, node=None, **kwargs):
        kernel = numba.types.ExternalFunction(kernel_symbol(), _C_SIG)

        @numba_njit
        def collapsed_logp(theta, spec, const, index, c, n, mult):
            theta, spec = np.ascontiguousarray(theta), np.ascontiguousarray(spec)
            const, index = np.ascontiguousarray(const), np.ascontiguousarray(index)
            c, n, mult = np.ascontiguousarray(c), np.ascontiguousarray(n), np.ascontiguousarray(
                mult)
            out = np.empty(1)
            grad = np.empty(theta.shape[0])
            kernel(theta.ctypes, theta.shape[0], spec.ctypes, const.ctypes, const.shape[0],
                   index.ctypes, index.shape[1], c.ctypes, n.ctypes, mult.ctypes, out.ctypes,
                   grad.ctypes)
            return np.asarray(out[0]), grad

        return collapsed_logp


_register_numba()
