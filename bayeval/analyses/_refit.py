"""Fits of other data with a posterior's settings, for the analyses that need them (the crossed
missing-outcome bounds of a paired comparison, task subsets fitted alone)."""

from __future__ import annotations


def fit_data(data, **options):
    """Fit ``data`` with ``options`` (those of :func:`bayeval.fit`) and return its posterior."""
    # the fit layer sits above the analyses: replaced by bayeval.inference.infer at merge
    from bayeval.fit import fit

    return fit(data, **options)
