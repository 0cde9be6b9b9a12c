"""Helpers the kernels share: logistic, softplus, log-sum-exp, binomial cells, Helmert maps."""

from __future__ import annotations

import math

import numba
import numpy as np

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(cache=True)
def _sigmoid(y):
    if y >= 0.0:
        return 1.0 / (1.0 + math.exp(-y))
    z = math.exp(y)
    return z / (1.0 + z)


@numba.njit(cache=True)
def _sigmoid_of(y, small):
    """:func:`_sigmoid` from ``small = exp(-|y|)``, when a caller has it already."""
    return 1.0 / (1.0 + small) if y >= 0.0 else small / (1.0 + small)


@numba.njit(cache=True)
def _softplus(y):
    return max(y, 0.0) + math.log1p(math.exp(-abs(y)))


@numba.njit(cache=True)
def _logsumexp(values):
    top = -np.inf
    for value in values:
        top = max(top, value)
    if not np.isfinite(top):
        return top
    total = 0.0
    for value in values:
        total += math.exp(value - top)
    return top + math.log(total)


@numba.njit(cache=True)
def _likelihood_power(p, q, c, n):
    """``p**c * q**(n - c)`` for counts ``c`` of ``n`` trials, whole or fractional.

    Whole counts take :func:`_power`'s products; a fractional count (a sum of partial-credit
    scores, the fractional-binomial likelihood) its logarithms. ``0 < c < n`` there, so no
    ``0 * log 0`` arises.
    """
    a = int(c)
    if a == c:
        return _power(p, q, a, int(n) - a)
    if p <= 0.0 or q <= 0.0:
        return 0.0
    return math.exp(c * math.log(p) + (n - c) * math.log(q))


@numba.njit(cache=True)
def _power(p, q, a, b):
    """``p**a * q**b`` for small non-negative integers (no pow calls)."""
    out = 1.0
    for _ in range(a):
        out *= p
    for _ in range(b):
        out *= q
    return out


_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (Cody and Waite): k ln 2 is exact
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00


@numba.njit(cache=True, fastmath={"contract"})
def _neg_abs_exp(x, out, bits):
    """``out = exp(-|x|)`` for a vector ``x``, in straight-line arithmetic.

    The compiler vectorises it (:func:`_softplus_parts` says how); ``bits`` is an int64 buffer of
    the same length.
    """
    m = x.shape[0]
    for i in range(m):
        z = max(-abs(x[i]), -700.0)
        k = math.floor(z * _INV_LN2 + 0.5)
        r = z - k * _LN2_HI - k * _LN2_LO
        p = 1.0 / 479001600.0
        p = 1.0 / 39916800.0 + r * p
        p = 1.0 / 3628800.0 + r * p
        p = 1.0 / 362880.0 + r * p
        p = 1.0 / 40320.0 + r * p
        p = 1.0 / 5040.0 + r * p
        p = 1.0 / 720.0 + r * p
        p = 1.0 / 120.0 + r * p
        p = 1.0 / 24.0 + r * p
        p = 1.0 / 6.0 + r * p
        p = 0.5 + r * p
        p = 1.0 + r * p
        out[i] = 1.0 + r * p
        bits[i] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for i in range(m):
        out[i] *= scale[i]


@numba.njit(cache=True, fastmath={"contract"}, inline="always")
def _log1p_small(small, out):
    """``out = log1p(small)`` for a vector ``small`` in [0, 1], in straight-line arithmetic.

    ``out`` may be ``small`` itself; the compiler vectorises it (:func:`_softplus_parts` says how).
    Inlined where it is called, so that the nutpie C functions and the kernel compile the same
    arithmetic into :func:`_softplus_parts`.
    """
    for i in range(small.shape[0]):
        e = small[i]
        t = e / (2.0 + e)
        z = t * t
        q = 1.0 / 35.0
        for odd in range(33, 1, -2):
            q = 1.0 / odd + z * q
        out[i] = 2.0 * t * (1.0 + z * q)


@numba.njit(cache=True, fastmath={"contract"})
def _softplus_parts(y):
    """``small = exp(-|y|)`` and ``log1p(small)`` for every element of ``y (J, S)``, vectorised.

    In straight-line arithmetic that the compiler vectorises, where each scalar call to the math
    library costs 6-7 ns (most of a full-latent gradient at 18,000 cells): the exponential by
    Cody-Waite reduction ``x = k ln 2 + r``, ``|r| <= ln 2 / 2``, a degree-12 Taylor polynomial in
    ``r`` (remainder below 1e-16) and the exponent ``k`` written into the bits of ``2^k``;
    ``log1p(e) = 2 atanh(s)`` with ``s = e / (2 + e) <= 1/3`` by its series to ``s^35`` (remainder
    below 1e-17). Both agree with the math library to a few units in the last place (tested); below
    ``exp(-700)`` the exponential is taken as ``exp(-700)``, whose contribution to a log density is
    nil.
    """
    flat = y.ravel()
    m = flat.shape[0]
    small = np.empty(m)
    log_term = np.empty(m)
    _neg_abs_exp(flat, small, np.empty(m, dtype=np.int64))
    _log1p_small(small, log_term)
    return small.reshape(y.shape), log_term.reshape(y.shape)


@numba.njit(cache=True, fastmath={"reassoc", "contract"})
def _binomial_cell(cc, nn, yy, small, log_term):
    """A cell's ``c y - n softplus(y)`` and its derivative in ``y``.

    ``small = exp(-|y|)`` and ``log_term = log1p(small)`` are given (:func:`_softplus_parts`).
    """
    rate = (1.0 if yy >= 0.0 else small) / (1.0 + small)
    return cc * yy - nn * (max(yy, 0.0) + log_term), cc - nn * rate


@numba.njit(cache=True)
def finite(x):
    """Whether every value of ``x`` is finite."""
    for value in x:
        if not math.isfinite(value):
            return False
    return True


@numba.njit(cache=True, nogil=True)
def helmert_to(y, z):
    """``z = H' y`` for the orthonormal Helmert matrix ``H``, in O(n).

    ``H`` is that of ``scipy.linalg.helmert(n, full=True)``: first row constant, row k the k-th
    contrast.
    """
    n = y.shape[0]
    tail = 0.0  # sum over k > i of y[k] / sqrt(k (k + 1))
    for i in range(n - 1, -1, -1):
        z[i] = y[0] / math.sqrt(n) + tail
        if i >= 1:
            r = 1.0 / math.sqrt(i * (i + 1.0))
            z[i] -= i * r * y[i]
            tail += r * y[i]


@numba.njit(cache=True, nogil=True)
def helmert_add(g, out):
    """``out += H g`` (:func:`helmert_to`'s transpose: a gradient in ``z`` to one in ``y``)."""
    n = g.shape[0]
    head = 0.0  # sum over i < k of g[i]
    for k in range(n):
        if k >= 1:
            out[k] += (head - k * g[k]) / math.sqrt(k * (k + 1.0))
        head += g[k]
    out[0] += head / math.sqrt(n)
