"""Bootstrap intervals of each system's benchmark metric: the twins of the posterior readouts.

:meth:`bayeval.Results.pass_at_k` and its siblings read the posterior draws of a metric
(:meth:`bayeval.posterior.Posterior.draws`); the functions here resample the data instead
(:mod:`bayeval.resampling`): ``unit="trial"`` is the twin of ``estimand="tasks"``, ``"task"``
and ``"cluster"`` of ``estimand="population"``. They are reached as ``bayeval.bootstrap.<name>``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval.resampling import (
    _intervals,
    _mean_run,
    _metric_dataset,
    _reshape,
    _settings,
    _status_vars,
    _validate_common,
    _warn_fallback,
    _warn_nan,
)

__all__ = ["pass_at_k", "pass_hat_k", "g_pass_at_k", "consistency", "mean_score"]


def mean_score(
    data,
    *,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark mean score (scores in [0, 1]).

    A task's value is the mean of its valid attempts' scores (under ``missing="fail"`` a
    non-ok attempt scores 0; under ``"bounds"`` 0 for the lower bound and 1 for the upper);
    the benchmark value is their mean over tasks (by strata and clusters as for
    :func:`pass_at_k`), and tasks or whole clusters are resampled: the twin of
    :meth:`bayeval.Results.mean_score` with ``estimand="population"``. Binary outcomes give
    the bootstrap of pass@1. The paired effect of two systems is
    ``compare(data, candidate, baseline, metric="mean")``.

    Parameters
    ----------
    data : EvalData
    unit : {"task", "cluster"}, default "task"
    ci_prob, n_boot, seed, method, weighting, clusters
        As in :func:`pass_at_k`.

    Returns
    -------
    xarray.Dataset
        ``estimate`` (system[, missing_bound]), ``replicates`` (on ``replicate``),
        ``interval`` (on ``ci_bound``), ``interval_valid``/``interval_reason`` (always valid
        here), ``status_counts``, ``coverage``; settings in attrs (``metric="mean"``).

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2", "t3"],
    ...                    "score": [0.5, 1.0, 0.25, 0.0]})
    >>> res = be.bootstrap.mean_score(be.from_frame(df, score="score"), n_boot=1000)
    >>> round(float(res["estimate"].item()), 3)
    0.333
    >>> res["interval"].dims
    ('system', 'ci_bound')
    """
    ci_prob, n_boot, seed = _validate_common(
        data, unit, weighting, clusters, method, ci_prob, n_boot, seed, "pass@k"
    )
    systems = data.systems
    res, shape, bounds = _mean_run(data, systems, unit, weighting, clusters, n_boot, seed)
    est = _reshape(res.estimate, (), shape, 1)
    reps = _reshape(res.replicates, (n_boot,), shape, 1)
    jdev = _reshape(res.jack_dev, (len(res.jack_mult),), shape, 1)
    interval, fallback = _intervals(est, reps, jdev, res.jack_mult, method, ci_prob)
    _warn_nan(reps, "the mean score")
    _warn_fallback(fallback, method)

    def da(values, lead_dims, trail_dims=()):
        out = xr.DataArray(
            values[..., 0, :] if trail_dims else values[..., 0],
            dims=lead_dims + ("missing_bound", "system") + trail_dims,
        )
        return out if bounds else out.isel(missing_bound=0, drop=True)

    ds = xr.Dataset(
        {
            "estimate": da(est, ()),
            "replicates": da(reps, ("replicate",)),
            "interval": da(interval, (), ("ci_bound",)),
        }
    )
    if method == "bca":
        ds["bca_fallback"] = da(fallback, ())
    ds["interval_valid"] = xr.ones_like(ds["estimate"], dtype=bool)
    ds["interval_reason"] = xr.full_like(ds["estimate"], "", dtype=object)
    coords = {"system": np.asarray(systems, dtype=object), "ci_bound": ["lower", "upper"]}
    if bounds:
        coords["missing_bound"] = bounds
    ds = ds.assign_coords(coords).transpose("replicate", "system", ...)
    ds = ds.assign(_status_vars(data, systems))
    ds.attrs = _settings(unit, method, ci_prob, n_boot, seed, weighting, clusters, "mean", data)
    return ds


def pass_at_k(
    data,
    *,
    k=1,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark pass@k.

    Parameters
    ----------
    data : EvalData
    k : int or list of int, default 1
        A list adds a ``k`` dim.
    unit : {"trial", "task", "cluster"}, default "task"
        What is resampled; ``"trial"`` is the twin of ``estimand="tasks"``, ``"task"`` and
        ``"cluster"`` of ``estimand="population"``.
    ci_prob : float, default 0.95
    n_boot : int, default 10000
    seed : int or None, default 0
    method : {"percentile", "basic", "bca"}, default "percentile"
        BCa falls back to percentile, with a warning, where it is undefined.
    weighting : {"task", "cluster"}, default "task"
        With clusters: observed cluster sizes, or each cluster equally.
    clusters : {None, "observed"}
        With ``unit="task"``: ``"observed"`` resamples tasks within their clusters.

    Returns
    -------
    xarray.Dataset
        ``estimate`` (system[, missing_bound][, k]), ``replicates`` (on ``replicate``),
        ``interval`` (on ``ci_bound``), ``interval_valid`` and ``interval_reason`` (whether
        the interval's construction holds, and why not: the trial bootstrap has none for
        ``k > n/2``), ``status_counts``, ``coverage``; settings in attrs.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3]], trials=10)
    >>> res = be.bootstrap.pass_at_k(data, k=1, n_boot=2000, seed=1)
    >>> round(float(res["estimate"].item()), 3)
    0.5
    >>> res["interval"].dims
    ('system', 'ci_bound')
    """
    return _metric_dataset(
        data, k, "pass@k", unit, n_boot, ci_prob, seed, method, weighting, clusters
    )


def pass_hat_k(
    data,
    *,
    k=1,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark pass^k (all k trials succeed).

    Parameters are those of :func:`pass_at_k`.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[4, 2, 0, 3]], trials=4)
    >>> res = be.bootstrap.pass_hat_k(data, k=[1, 2], n_boot=500, unit="trial")
    >>> res["estimate"].values.round(3).tolist()
    [[0.562, 0.417]]
    """
    return _metric_dataset(
        data, k, "pass^k", unit, n_boot, ci_prob, seed, method, weighting, clusters
    )


def g_pass_at_k(
    data,
    *,
    k,
    tau,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark G-pass@k.

    G-pass@k is the chance that at least ``ceil(tau k)`` of k trials succeed
    (:func:`bayeval.estimators.g_pass_at_k`).

    Parameters are those of :func:`pass_at_k`, with ``tau`` the share of the k attempts that
    must succeed, in (0, 1]; ``tau`` is recorded in attrs.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[4, 2, 0, 3]], trials=4)
    >>> res = be.bootstrap.g_pass_at_k(data, k=[2, 4], tau=0.5, n_boot=500, unit="trial")
    >>> res["estimate"].values.round(3).tolist()
    [[0.708, 0.75]]
    """
    return _metric_dataset(
        data, k, "g-pass@k", unit, n_boot, ci_prob, seed, method, weighting, clusters, tau
    )


def consistency(
    data,
    *,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark outcome consistency.

    Consistency is the mean over tasks of ``(2p - 1)^2`` (:func:`bayeval.estimators.consistency`;
    no ``k`` dim).

    Parameters are those of :func:`pass_at_k`. Every task needs two valid trials; the trial
    bootstrap needs four for an interval that holds (``interval_valid``).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[4, 2, 0, 3]], trials=4)
    >>> res = be.bootstrap.consistency(data, n_boot=500)
    >>> round(float(res["estimate"].item()), 3)
    0.417
    """
    return _metric_dataset(
        data, 2, "consistency", unit, n_boot, ci_prob, seed, method, weighting, clusters
    )
