"""Summaries shared by the cost and latency analyses.

Intervals and means over draws that keep infinities, and the JSON-ready numbers of their report
tables.
"""

from __future__ import annotations

import warnings

import numpy as np


def percentiles(replicates: np.ndarray, ci_prob: float) -> np.ndarray:
    """Percentile interval over axis 0, on ``ci_bound`` last; an infinite bound stays infinite.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses._tables import percentiles
    >>> percentiles(np.array([[1.0, 1.0], [2.0, np.inf], [3.0, np.inf]]), 0.5).tolist()
    [[1.5, 2.5], [inf, inf]]
    """
    alpha = 1 - ci_prob
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.quantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    q = np.where(np.isnan(q) & np.isinf(replicates).any(axis=0), np.inf, q)
    return np.moveaxis(q, 0, -1)


def draw_mean(draws: np.ndarray) -> np.ndarray:
    """Mean over axis 0; infinite where any draw is."""
    with np.errstate(invalid="ignore"):
        return draws.mean(axis=0)


def json_number(value):
    """A JSON-ready number: None for NaN and infinities (a bool stays a bool)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    value = float(value)
    return value if np.isfinite(value) else None


def triple(ds, name, prefix, **sel) -> dict:
    """``name``'s point and interval bounds in ``ds`` (selected by ``sel``) as JSON numbers.

    They go under ``<prefix>_mean`` (``prefix="bayes"``) or ``<prefix>_estimate``,
    ``<prefix>_lower`` and ``<prefix>_upper``.
    """
    est = ds[name].sel(sel) if sel else ds[name]
    low, high = (ds[f"{name}_interval"].sel(sel) if sel else ds[f"{name}_interval"]).values
    key = "mean" if prefix == "bayes" else "estimate"
    return {
        f"{prefix}_{key}": json_number(est),
        f"{prefix}_lower": json_number(low),
        f"{prefix}_upper": json_number(high),
    }
