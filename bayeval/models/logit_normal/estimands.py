"""Expectations of a rate's metric over a logit-normal spread, for the estimands.

:func:`normal_expectation`: ``E f(expit(location + scale Z))`` by a trapezoid grid.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

from bayeval.estimators import success_threshold
from bayeval.models.kernels.moments import grid_expectations

#: Sizes of the trapezoid grids over [-8, 8] for population expectations over a standard
#: normal (:func:`normal_expectation`): each expectation takes the smallest whose step is at
#: most ``min(0.4, 0.45 / scale)``
_GRID_SIZES = np.array([33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049])


@functools.cache
def _normal_grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``size`` nodes of a trapezoid grid over [-8, 8].

    With their weights under the standard normal density.
    """
    z = np.linspace(-8.0, 8.0, size)
    return z, np.exp(-0.5 * z**2) / np.sqrt(2 * np.pi) * (z[1] - z[0])


def normal_expectation(location, scale, metric, ks, tau=None):
    """``E f(expit(location + scale Z))`` for Z standard normal.

    By a trapezoid grid sized to the scale.

    The integrand is analytic in the strip ``|Im z| < pi / scale`` (the logistic's poles at
    ``y = +-i pi``), where the trapezoid rule's error falls as ``exp(-2 pi d / h)`` in the
    strip's half-width ``d`` over the step ``h``, times a factor that grows with the poles'
    order k; a step of ``min(0.4, 0.45 / scale)`` keeps it below 1e-12 for k up to 16 and
    below 1e-10 up to 256 at every scale, with the grid's ends at +-8 (the normal's mass
    beyond is 1e-15). A fixed grid cost more and erred more at wide scales
    (``models/logit_normal.md``, sampling settings, ``normal_expectation``). pass@k and pass^k are
    summed by a compiled kernel a location at a time
    (:func:`bayeval.models.kernels.moments.grid_expectations`: memory stays bounded at any
    number of draws, systems and clusters), through
    ``log(1 - p) = -softplus(y)`` (``log p = -softplus(-y)`` for pass^k): one exponential per k
    instead of a power. G-pass@k, the binomial tail ``I_p(m, k - m + 1)`` at ``m = ceil(tau k)``,
    and consistency ``(2p - 1)^2 = tanh(y / 2)^2`` are summed in chunks of locations. Returns
    ``location.shape + (len(ks),)``.

    Examples
    --------
    >>> from bayeval.models.logit_normal import normal_expectation
    >>> round(float(normal_expectation(0.0, 2.0, "pass@k", [1])[0]), 12)  # symmetric: 1/2
    0.5
    """
    location, scale = np.broadcast_arrays(np.asarray(location, float), np.asarray(scale, float))
    lead = location.shape
    loc, sc = location.reshape(-1), scale.reshape(-1)
    ks = np.asarray(ks, float)
    out = np.empty((loc.size, ks.size))
    with np.errstate(divide="ignore"):
        need = 16.0 / np.minimum(0.4, 0.45 / np.abs(sc)) + 1.0
    sizes = _GRID_SIZES[np.minimum(np.searchsorted(_GRID_SIZES, need), _GRID_SIZES.size - 1)]
    for size in np.unique(sizes):
        z, weight = _normal_grid(int(size))
        rows = np.flatnonzero(sizes == size)
        if metric in ("pass@k", "pass^k"):  # 1 - E (1 - p)^k, E p^k: compiled, threaded
            part = np.empty((rows.size, ks.size))
            grid_expectations(
                np.ascontiguousarray(loc[rows]),
                np.ascontiguousarray(sc[rows]),
                z,
                weight,
                ks,
                metric == "pass^k",
                part,
            )
            out[rows] = 1.0 - part if metric == "pass@k" else part
            continue
        chunk = max(1, 2_000_000 // z.size)
        for first in range(0, rows.size, chunk):
            at = rows[first : first + chunk]
            out[at] = _other_expectation(loc[at, None] + sc[at, None] * z, metric, ks, tau, weight)
    return out.reshape(lead + (ks.size,))


def _other_expectation(y, metric, ks, tau, weight):
    """Grid expectations of G-pass@k and consistency at logits ``y (locations, grid)``.

    ``weight`` holds the grid's normal weights.
    """
    if metric == "consistency":
        return (np.tanh(0.5 * y) ** 2 @ weight)[:, None] * np.ones(ks.size)
    p = special.expit(y)
    needed = success_threshold(ks.astype(np.int64), tau)
    return np.stack(
        [special.betainc(m, k - m + 1, p) @ weight for k, m in zip(ks, needed, strict=True)], axis=1
    )
