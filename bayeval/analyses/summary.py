"""The summary table of a posterior: each system's metrics with mean, sd, interval, MCSE, ESS."""

from __future__ import annotations

import pandas as pd
import xarray as xr

from bayeval._arviz import mcse_and_ess
from bayeval._validate import validate_k, validate_prob
from bayeval.posterior import Posterior, credible_interval

__all__ = ["summary"]


def summary(
    posterior: Posterior,
    *,
    metrics=("pass@k",),
    k=1,
    estimands=None,
    ci_prob: float = 0.95,
    tau=None,
) -> pd.DataFrame:
    """Posterior mean, sd and equal-tailed interval of each system's metrics.

    Parameters
    ----------
    posterior : Posterior
        A fit (:class:`~bayeval.Results` or :class:`~bayeval.posterior.Posterior`).
    metrics : sequence of {"pass@k", "pass^k", "g-pass@k", "consistency", "mean"}
        Consistency, a two-attempt metric, has one row per system and estimand, at k = 2.
        ``"mean"`` (the mean score) is what a ``zoib`` fit estimates, at k = 1.
    k : int or list of int, default 1
    estimands : sequence, optional
        Default: every estimand the model supports.
    ci_prob : float, default 0.95
    tau : float, optional
        Needed with ``"g-pass@k"`` among the metrics: the share of the k attempts that must
        succeed, in (0, 1]; recorded in ``attrs``.

    Returns
    -------
    pandas.DataFrame
        One row per system, estimand, metric and k (and missing bound): mean, sd, interval,
        the Monte Carlo standard error of the mean and the bulk ESS (``arviz_stats``);
        ``attrs`` hold the settings.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.summary import summary
    >>> res = be.fit(be.from_counts([[9, 1, 10, 0]], trials=10), draws=200, chains=2,
    ...              seed=0)
    >>> summary(res, k=[1, 3])["estimand"].unique().tolist()
    ['tasks', 'population']
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    ks, _ = validate_k(k)
    if isinstance(metrics, str):
        raise TypeError(
            f"metrics must be a sequence of metric names; got {metrics!r} (write "
            f"metrics=[{metrics!r}])"
        )
    if tau is not None and "g-pass@k" not in metrics:
        raise ValueError(
            f"tau applies to metric 'g-pass@k', which metrics={list(metrics)} does not hold"
        )
    estimands = posterior.estimands if estimands is None else tuple(estimands)
    frames = []
    for estimand in estimands:
        for metric in metrics:
            values = posterior.draws(
                metric,
                [2] if metric == "consistency" else ks.tolist(),
                estimand,
                tau=tau if metric == "g-pass@k" else None,
            )
            interval = credible_interval(values, ci_prob, ["chain", "draw"])
            mcse, ess = mcse_and_ess(values)
            table = (
                xr.Dataset(
                    {
                        "mean": values.mean(["chain", "draw"]),
                        "sd": values.std(["chain", "draw"]),
                        "lower": interval.sel(ci_bound="lower", drop=True),
                        "upper": interval.sel(ci_bound="upper", drop=True),
                        "mcse_mean": mcse,
                        "ess_bulk": ess,
                    }
                )
                .to_dataframe()
                .reset_index()
            )
            table.insert(1, "estimand", estimand)
            table.insert(2, "metric", metric)
            frames.append(table)
    out = pd.concat(frames, ignore_index=True)
    first = ["system", "estimand", "metric", "k"]
    out = out[first + [c for c in out.columns if c not in first]]
    out.attrs = {
        "ci_prob": ci_prob,
        "ci_kind": "eti",
        "model": posterior.model,
        **({} if tau is None else {"tau": float(tau)}),
    }
    return out
