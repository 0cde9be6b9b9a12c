"""Posterior predictive checks of a fit: whether the fitted population takes the data's shape."""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import validate_prob
from bayeval.data.groups import dataset_of
from bayeval.models._beta_family import counts_by_bound, observed_histogram
from bayeval.models._groups import PREDICTIVE_STATS
from bayeval.posterior import Posterior, credible_interval

__all__ = ["ppc"]


def ppc(posterior: Posterior, ci_prob: float = 0.95) -> xr.Dataset:
    """Posterior predictive check of the per-task success-count histogram.

    New tasks drawn from each fitted population (with the observed trial counts) give a
    predictive histogram of success counts; the U-shape statistic is the share of tasks
    (with two or more trials) that are always or never solved. ``p_value`` is the
    two-sided posterior predictive p-value of the observed share; ``flagged`` marks
    ``p_value < 0.01``.

    Parameters
    ----------
    posterior : Posterior
        A fit with a ``posterior_predictive_stats`` group (a model with a population).
    ci_prob : float, default 0.95
        Probability of the predicted histogram's interval.

    Returns
    -------
    xarray.Dataset

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.checks import ppc
    >>> res = be.fit(be.from_counts([[4, 0, 4, 2, 1, 4, 0, 3]], trials=4), draws=300,
    ...              chains=2, seed=0)
    >>> check = ppc(res)
    >>> check["observed_extreme_share"].item(), bool(check["flagged"].item())
    (0.625, False)
    """
    tree = posterior.tree
    if PREDICTIVE_STATS not in tree.children:
        raise ValueError(f"model {posterior.model!r} has no population to check")
    ci_prob = validate_prob("ci_prob", ci_prob)
    pred = tree[PREDICTIVE_STATS].to_dataset()
    c, n, bounds = counts_by_bound(dataset_of(tree))
    max_n = pred.sizes["count"] - 1
    hist = np.zeros(c.shape[:2] + (max_n + 1,))
    share = np.zeros(c.shape[:2])
    for b in range(c.shape[0]):
        for s in range(c.shape[1]):
            hist[b, s], share[b, s] = observed_histogram(c[b, s], n[b, s], max_n)
    dims = ("missing_bound", "system")
    observed_share = xr.DataArray(share, dims=dims)
    observed_hist = xr.DataArray(hist, dims=dims + ("count",))
    if bounds is None:
        observed_share = observed_share.isel(missing_bound=0, drop=True)
        observed_hist = observed_hist.isel(missing_bound=0, drop=True)
    sample = ["chain", "draw"]
    rep = pred["extreme_share"]
    above = (rep >= observed_share).mean(sample)
    below = (rep <= observed_share).mean(sample)
    p_value = np.minimum(1.0, 2 * np.minimum(above, below)).where(observed_share.notnull())
    out = xr.Dataset(
        {
            "observed_histogram": observed_hist,
            "predicted_histogram": pred["count_histogram"].mean(sample),
            "predicted_histogram_interval": credible_interval(
                pred["count_histogram"], ci_prob, sample
            ),
            "observed_extreme_share": observed_share,
            "predicted_extreme_share": rep.mean(sample),
            "p_value": p_value,
            "flagged": p_value < 0.01,
        }
    )
    out.attrs = {
        "statistic": "share of tasks with 0 or n successes (n >= 2)",
        "ci_prob": ci_prob,
    }
    return out
