"""nutpie's C calling convention: int64 addresses as pointers, return codes, user data arrays."""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import intrinsic

from bayeval.models.kernels.numerics import finite

_F64 = numba.types.CPointer(numba.types.float64)
_I64 = numba.types.CPointer(numba.types.int64)


def _pointer_intrinsic(dtype, doc):
    """An intrinsic that reads an int64 address as a pointer to ``dtype``."""

    def as_pointer(typingctx, address):
        sig = numba.types.CPointer(dtype)(numba.types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    as_pointer.__doc__ = doc
    return intrinsic(as_pointer)


_as_f64_pointer = _pointer_intrinsic(numba.types.float64, "The int64 address as a float64 *.")
_as_i64_pointer = _pointer_intrinsic(numba.types.int64, "The int64 address as an int64 *.")


#: nutpie's C log density: (dim, x, grad, logp, user data) -> return code.
NUTPIE_LOGP_SIG = numba.types.int64(numba.types.uint64, _F64, _F64, _F64, _I64)
#: nutpie's C expansion of a draw: (dim, kept, x, out, user data) -> return code.
NUTPIE_EXPAND_SIG = numba.types.int64(numba.types.uint64, numba.types.uint64, _F64, _F64, _I64)
_compiled: dict = {}


def nutpie_cfuncs(logp, expand) -> tuple:
    """``logp`` and ``expand`` compiled as nutpie's C functions, once per process.

    Loaded from numba's disk cache after the first compilation on a machine.
    """
    key = (logp.__module__, logp.__qualname__, expand.__qualname__)
    if key not in _compiled:
        _compiled[key] = (
            numba.cfunc(NUTPIE_LOGP_SIG, cache=True)(logp),
            numba.cfunc(NUTPIE_EXPAND_SIG, cache=True)(expand),
        )
    return _compiled[key]


@numba.njit(cache=True)
def nutpie_status(logp, grad):
    """Nutpie's return code for a log density and its gradient.

    0, or 3 for a gradient that is not finite, 4 for a log density that is not (a point the sampler
    rejects).
    """
    if not finite(grad):
        return 3
    if not math.isfinite(logp):
        return 4
    return 0


def meta_array(names, sizes: dict, arrays: dict) -> np.ndarray:
    """The user data of a kernel's C functions.

    For each of ``names`` in order, its integer from ``sizes`` or else the address of its array in
    ``arrays`` (kept alive by the caller).
    """
    return np.array(
        [sizes[name] if name in sizes else arrays[name].ctypes.data for name in names],
        dtype=np.int64,
    )


def kernel_data(values: dict, integers=("spec", "index")) -> dict:
    """The kernel's data as the C functions read them.

    C-contiguous, int64 (the arrays named in ``integers``) or float64, and read-only (their
    addresses are handed to nutpie).
    """
    out = {}
    for name, value in values.items():
        dtype = np.int64 if name in integers else np.float64
        array = np.array(value, dtype=dtype, order="C", copy=True)
        array.flags.writeable = False
        out[name] = array
    return out
