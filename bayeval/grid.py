"""Deterministic quadrature over two hyperparameters: the ``"grid"`` engine.

A model whose sampler-facing parameters are two per population (after the task rates are
integrated out) has a posterior that a fine grid represents exactly up to discretisation.
:func:`adaptive_grid` zooms from a wide box onto the region holding all but ``exp(-tail)`` of the
density, then evaluates a fine grid there; :func:`GridPosterior.sample` draws grid cells by
their probability and places each draw uniformly inside its cell, so draws fill ``chain`` and
``draw`` like any sampler's. The cost is a few hundred thousand log-density evaluations per
population, whatever the number of tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GridPosterior:
    """A normalised density on a regular grid of cell centres ``x`` by ``y``."""

    x: np.ndarray  # cell centres along the first parameter
    y: np.ndarray  # cell centres along the second parameter
    prob: np.ndarray  # (x, y) cell probabilities, summing to one

    @property
    def steps(self) -> tuple[float, float]:
        """The cell widths along ``x`` and along ``y``."""
        return float(self.x[1] - self.x[0]), float(self.y[1] - self.y[0])

    def sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draws of both parameters: a cell by its probability, then uniform within it."""
        flat = rng.choice(self.prob.size, size=size, p=self.prob.ravel())
        ix, iy = np.unravel_index(flat, self.prob.shape)
        dx, dy = self.steps
        jitter = rng.uniform(-0.5, 0.5, size=(2, size))
        return self.x[ix] + jitter[0] * dx, self.y[iy] + jitter[1] * dy

    def expect(self, func) -> np.ndarray:
        """Posterior expectation of ``func(x, y)`` (vectorised over the grid) by quadrature."""
        X, Y = np.meshgrid(self.x, self.y, indexing="ij")
        values = np.asarray(func(X.ravel(), Y.ravel()))
        prob = self.prob.ravel()
        return np.tensordot(prob, values, axes=([0], [0]))


def _centres(lo: float, hi: float, n: int) -> np.ndarray:
    step = (hi - lo) / n
    return lo + step * (np.arange(n) + 0.5)


def _evaluate(logdensity, x, y):
    X, Y = np.meshgrid(x, y, indexing="ij")
    lp = np.asarray(logdensity(X.ravel(), Y.ravel()), dtype=float).reshape(X.shape)
    return np.where(np.isfinite(lp), lp, -np.inf)


def adaptive_grid(
    logdensity, box, n_grid: int = 200, n_coarse: int = 48, tail: float = 25.0, max_zoom: int = 12
) -> GridPosterior:
    """Grid posterior of a two-parameter log density.

    Parameters
    ----------
    logdensity : callable
        ``logdensity(x, y)`` for 1-d arrays of equal length; returns the unnormalised log
        density (``-inf`` allowed).
    box : ((x_lo, x_hi), (y_lo, y_hi))
        Outer box; the density outside it is taken as negligible.
    n_grid : int
        Cells per side of the final grid.
    n_coarse : int
        Cells per side while zooming.
    tail : float
        Keep every cell whose log density is within ``tail`` of the maximum.
    max_zoom : int
        Most zoom steps.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.grid import adaptive_grid
    >>> post = adaptive_grid(lambda x, y: -0.5 * ((x - 1) ** 2 + (y / 0.01) ** 2),
    ...                      ((-20, 20), (-20, 20)))
    >>> np.round(post.expect(lambda x, y: np.stack([x, y**2], -1)), 5).tolist()
    [1.0, 0.0001]
    """
    (x_lo, x_hi), (y_lo, y_hi) = box
    outer = np.array([x_lo, x_hi, y_lo, y_hi], dtype=float)
    current = outer.copy()
    for _ in range(max_zoom):
        x = _centres(current[0], current[1], n_coarse)
        y = _centres(current[2], current[3], n_coarse)
        lp = _evaluate(logdensity, x, y)
        if not np.isfinite(lp.max()):
            raise FloatingPointError("the log density is -inf everywhere on the grid")
        keep = lp > lp.max() - tail
        ix, iy = np.nonzero(keep.any(axis=1))[0], np.nonzero(keep.any(axis=0))[0]
        dx, dy = x[1] - x[0], y[1] - y[0]
        new = np.array(
            [
                max(x[ix.min()] - 2.5 * dx, outer[0]),
                min(x[ix.max()] + 2.5 * dx, outer[1]),
                max(y[iy.min()] - 2.5 * dy, outer[2]),
                min(y[iy.max()] + 2.5 * dy, outer[3]),
            ]
        )
        shrink = min(
            (new[1] - new[0]) / (current[1] - current[0]),
            (new[3] - new[2]) / (current[3] - current[2]),
        )
        current = new
        if shrink > 0.5:
            break
    x = _centres(current[0], current[1], n_grid)
    y = _centres(current[2], current[3], n_grid)
    lp = _evaluate(logdensity, x, y)
    prob = np.exp(lp - lp.max())
    return GridPosterior(x, y, prob / prob.sum())
