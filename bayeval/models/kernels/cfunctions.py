"""The logit-normal kernel as C functions: PyTensor's symbol, nutpie's density and expansion."""

from __future__ import annotations

import numba

from bayeval.models.kernels.abi import (
    _F64,
    _I64,
    _as_f64_pointer,
    _as_i64_pointer,
    nutpie_cfuncs,
    nutpie_status,
)
from bayeval.models.kernels.disk_cache import KERNEL_HASH, is_cached
from bayeval.models.kernels.logp import (
    collapsed_logp_and_grad,
    latent_task_effects,
    logp_and_grad,
    unmapped,
)
from bayeval.models.kernels.numerics import finite

# -- the collapsed model's kernel behind a C symbol ------------------------------------------
# PyMC's numba backend and nutpie link every kernel a model calls into the model's compiled
# function and optimise the whole module again, for every model built. Called through a C
# symbol instead, the kernel is compiled once (cached on disk) and the model's function only
# holds a call to it.
_C_SIG = numba.types.void(
    _F64,
    numba.types.int64,  # theta, its length
    _I64,
    _F64,
    numba.types.int64,  # spec (SPEC_SIZE,), constants, their length
    _I64,
    numba.types.int64,  # cluster and stratum of each pattern (2, P), P
    _F64,
    _F64,
    _F64,  # c, n (P, S), mult (P,)
    _F64,
    _F64,  # out: log density, gradient
)
_SYMBOL = f"bayeval_collapsed_logp_{KERNEL_HASH}"
#: The kernel's integer constants (:meth:`bayeval.models.kernels.collapsed.Coordinates.spec`).
SPEC_SIZE = 16
_symbol_ready = False


def _c_kernel(theta_p, D, spec_p, const_p, n_const, index_p, P, c_p, n_p, mult_p, out_p, grad_p):
    spec = numba.carray(spec_p, (SPEC_SIZE,))
    S = spec[0]
    index = numba.carray(index_p, (2, P))
    logp, grad = logp_and_grad(
        numba.carray(theta_p, (D,)),
        spec,
        numba.carray(const_p, (n_const,)),
        index[0],
        index[1],
        numba.carray(c_p, (P, S)),
        numba.carray(n_p, (P, S)),
        numba.carray(mult_p, (P,)),
    )
    numba.carray(out_p, (1,))[0] = logp
    numba.carray(grad_p, (D,))[:] = grad


def c_signature():
    """The C signature of the kernel behind :func:`kernel_symbol`."""
    return _C_SIG


def kernel_symbol() -> str:
    """Compile (or load from the disk cache) the C kernel and register its symbol; its name."""
    global _symbol_ready
    if not _symbol_ready:
        from llvmlite import binding

        compiled = numba.cfunc(_C_SIG, cache=True)(_c_kernel)
        binding.add_symbol(_SYMBOL, compiled.address)
        _symbol_ready = True
    return _SYMBOL


# -- the kernel as nutpie's C log density ----------------------------------------------------
# nutpie samples a PyMC model through two C functions of its own signature, (dimension, point,
# gradient out, log density out, user data) and (dimension, expanded size, point, values out,
# user data), which it calls from its threads without Python. These are the kernel behind that
# signature, compiled once per machine (cached on disk): a fit builds no PyMC model and
# compiles nothing, and keeps per draw only what the expansion writes. The user data is an
# int64 array of sizes and the addresses of the kernel's data arrays (NUTPIE_FIELDS).
NUTPIE_FIELDS = (
    "dim",
    "P",
    "S",
    "n_spec",
    "n_const",
    "spec",
    "const",
    "index",
    "c",
    "n",
    "mult",
    "n_kept",
    "J",
    "log_sigma_task",
)


def _nutpie_logp(dim, x_p, grad_p, logp_p, meta_p):
    meta = numba.carray(meta_p, (len(NUTPIE_FIELDS),))
    D, P, S = meta[0], meta[1], meta[2]
    if dim != D:
        return -1
    x = numba.carray(x_p, (D,))
    if not finite(x):  # a diverged trajectory: no density there (as code 4)
        return 4
    spec = numba.carray(_as_i64_pointer(meta[5]), (meta[3],))
    const = numba.carray(_as_f64_pointer(meta[6]), (meta[4],))
    index = numba.carray(_as_i64_pointer(meta[7]), (2, P))
    try:  # as nutpie's own C functions: an error is code 1, a point the sampler rejects
        logp, grad = logp_and_grad(
            x,
            spec,
            const,
            index[0],
            index[1],
            numba.carray(_as_f64_pointer(meta[8]), (P, S)),
            numba.carray(_as_f64_pointer(meta[9]), (P, S)),
            numba.carray(_as_f64_pointer(meta[10]), (P,)),
        )
    except Exception:  # noqa: BLE001
        return 1
    out = numba.carray(grad_p, (D,))
    out[:] = grad
    numba.carray(logp_p, (1,))[0] = logp
    return nutpie_status(logp, out)


def _nutpie_expand(dim, n_expanded, x_p, out_p, meta_p):
    """The kept values of a draw: ``theta``, or its leading coordinates and the task effects.

    ``theta`` itself (collapsed), or its first ``n_kept`` coordinates and the ``J`` task effects
    (full-latent, :func:`logp.latent_task_effects`).
    """
    meta = numba.carray(meta_p, (len(NUTPIE_FIELDS),))
    D, kept, J = meta[0], meta[11], meta[12]
    if dim != D or n_expanded != kept + J:
        return -1
    x = numba.carray(x_p, (D,))
    out = numba.carray(out_p, (kept + J,))
    if J > 0:  # in the kernel's coordinates (:func:`logp.unmapped`)
        spec = numba.carray(_as_i64_pointer(meta[5]), (meta[3],))
        const = numba.carray(_as_f64_pointer(meta[6]), (meta[4],))
        x = unmapped(x, spec, const, numba.carray(_as_i64_pointer(meta[7]), (2, meta[1]))[0])
        out[kept:] = latent_task_effects(x, spec, const, kept, J, meta[13])
    for i in range(kept):
        out[i] = x[i]
    return 0


def _nutpie_collapsed_logp(dim, x_p, grad_p, logp_p, meta_p):
    """:func:`_nutpie_logp` of the collapsed form (:func:`logp.collapsed_logp_and_grad`)."""
    meta = numba.carray(meta_p, (len(NUTPIE_FIELDS),))
    D, P, S = meta[0], meta[1], meta[2]
    if dim != D or meta[12] != 0:  # a latent form's data (J task effects): not this kernel's
        return -1
    x = numba.carray(x_p, (D,))
    if not finite(x):  # a diverged trajectory: no density there (as code 4)
        return 4
    spec = numba.carray(_as_i64_pointer(meta[5]), (meta[3],))
    const = numba.carray(_as_f64_pointer(meta[6]), (meta[4],))
    index = numba.carray(_as_i64_pointer(meta[7]), (2, P))
    try:  # as nutpie's own C functions: an error is code 1, a point the sampler rejects
        logp, grad = collapsed_logp_and_grad(
            x,
            spec,
            const,
            index[0],
            index[1],
            numba.carray(_as_f64_pointer(meta[8]), (P, S)),
            numba.carray(_as_f64_pointer(meta[9]), (P, S)),
            numba.carray(_as_f64_pointer(meta[10]), (P,)),
        )
    except Exception:  # noqa: BLE001
        return 1
    out = numba.carray(grad_p, (D,))
    out[:] = grad
    numba.carray(logp_p, (1,))[0] = logp
    return nutpie_status(logp, out)


def _nutpie_collapsed_expand(dim, n_expanded, x_p, out_p, meta_p):
    """:func:`_nutpie_expand` of the collapsed form: ``theta`` itself."""
    meta = numba.carray(meta_p, (len(NUTPIE_FIELDS),))
    D = meta[0]
    if dim != D or n_expanded != meta[11] or meta[12] != 0 or meta[11] != D:
        return -1
    x = numba.carray(x_p, (D,))
    out = numba.carray(out_p, (D,))
    for i in range(D):
        out[i] = x[i]
    return 0


#: The C functions by form: the collapsed form's alone, or those of every form (``latent``).
_FUNCTIONS = {
    False: (_nutpie_collapsed_logp, _nutpie_collapsed_expand),
    True: (_nutpie_logp, _nutpie_expand),
}
_nutpie_cfuncs: dict = {}


def nutpie_functions(latent: bool = True):
    """The compiled C log density and expansion (:func:`_nutpie_logp`, :func:`_nutpie_expand`).

    With ``latent`` false, those of the collapsed form alone (:func:`_nutpie_collapsed_logp`,
    :func:`_nutpie_collapsed_expand`): the same values on its data, and a fraction of the
    compilation. Loaded from numba's disk cache after the first compilation on a machine.
    """
    latent = bool(latent)
    if latent not in _nutpie_cfuncs:
        _nutpie_cfuncs[latent] = nutpie_cfuncs(*_FUNCTIONS[latent])
    return _nutpie_cfuncs[latent]


def nutpie_functions_cached(latent: bool = True) -> bool:
    """Whether numba's disk cache holds :func:`nutpie_functions` of ``latent`` for this source.

    False where a fit would compile them first (a fresh install, or the kernels changed).
    """
    if bool(latent) in _nutpie_cfuncs:
        return True
    return all(is_cached(function) for function in _FUNCTIONS[bool(latent)])
