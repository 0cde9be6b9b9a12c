"""The frequentist baseline: bootstrap intervals for pass@k, pass^k, G-pass@k, consistency and
paired effects.

Every statistic is a weighted mean of per-task unbiased estimates (:mod:`bayeval.estimators`):

    theta = sum_G W_G * (sum of task values in G) / (number of valid tasks in G)

where the groups G are the declared strata (and, under ``clusters="observed"`` or
``weighting="cluster"``, the clusters within them) and W_G their fixed weights. The resampling
unit says which estimand the interval is for:

* ``unit="trial"`` resamples trials within each fixed task: the twin of ``estimand="tasks"``;
* ``unit="task"`` resamples tasks within groups: the twin of ``estimand="population"``
  (a new task; with ``clusters="observed"``, a new task from one of the observed clusters);
* ``unit="cluster"`` resamples whole clusters within strata: the twin of
  ``estimand="population"`` with a new task from a new cluster. With ``weighting="task"``
  clusters keep their sizes (a ratio estimator); with ``weighting="cluster"`` each resampled
  cluster counts equally.

Nothing loops over replicates or episodes. Units within a group are exchangeable, so each group
is reduced to the histogram of its distinct unit patterns (the joint values over the systems
involved) and a replicate is one multinomial draw of pattern counts; trials within a task are
exchangeable too, so the trial bootstrap draws, per distinct ``(n, c)`` pattern, how many of its
tasks land on each possible count (recentred at the estimate and scaled to the estimator's
unbiased variance; rows with ``k > n/2`` have no such variance and are marked
``interval_valid=False``). 100,000 tasks never need a replicates x tasks index array.

The reliability metrics go through the same machinery: every metric is a polynomial in a task's
rate (:mod:`bayeval.estimators`), so its unbiased estimator, and the unbiased estimate of that
estimator's variance (from an unbiased estimate of ``f(p)^2``, twice the degree), exist for the
trial bootstrap as they do for pass^k. Consistency has degree 2: its trial bootstrap needs four
trials per task and is marked ``interval_valid=False`` below that.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import (
    describe_values,
    validate_margin,
)
from bayeval.estimators import (
    metric_ks,
    validate_metric,
)

__all__ = ["pass_at_k", "pass_hat_k", "g_pass_at_k", "consistency", "mean_score", "compare"]

from bayeval.resampling import (
    _intervals,
    _mean_run,
    _metric_dataset,
    _reshape,
    _run,
    _settings,
    _status_vars,
    _validate_common,
    _validity,
    _warn_fallback,
    _warn_nan,
    bootstrap_p_value,
)


def mean_score(
    data,
    unit="task",
    n_boot=10_000,
    ci_prob=0.95,
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
    n_boot, ci_prob, seed, method, weighting, clusters
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
    k=1,
    unit="task",
    n_boot=10_000,
    ci_prob=0.95,
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
    n_boot : int, default 10000
    ci_prob : float, default 0.95
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
    k=1,
    unit="task",
    n_boot=10_000,
    ci_prob=0.95,
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
    k,
    tau,
    unit="task",
    n_boot=10_000,
    ci_prob=0.95,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark G-pass@k (at least ``ceil(tau k)`` of k
    trials succeed; :func:`bayeval.estimators.g_pass_at_k`).

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
    unit="task",
    n_boot=10_000,
    ci_prob=0.95,
    seed=0,
    method="percentile",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Bootstrap interval for each system's benchmark outcome consistency, the mean over tasks
    of ``(2p - 1)^2`` (:func:`bayeval.estimators.consistency`; no ``k`` dim).

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


def compare(
    data,
    candidate,
    baseline,
    k=1,
    unit="task",
    n_boot=10_000,
    seed=0,
    metric="pass@k",
    margin=0.0,
    ci_prob=0.95,
    method="percentile",
    weighting="task",
    clusters=None,
    tau=None,
) -> xr.Dataset:
    """Paired bootstrap of the effect ``metric(candidate) - metric(baseline)``.

    Both systems are resampled together on their shared tasks (and clusters), so the interval
    carries the pairing. Under ``missing="exclude"`` only tasks valid for both systems are used;
    under ``missing="bounds"`` the bounds cross: the lower bound takes the candidate's missing
    outcomes as failures and the baseline's as successes, the upper bound the reverse.

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels
    k, unit, n_boot, seed, ci_prob, method, weighting, clusters
        As in :func:`pass_at_k`.
    metric : {"pass@k", "pass^k", "g-pass@k", "consistency", "mean"}
        ``"mean"``: the mean score of scores in [0, 1] (see :func:`mean_score`; no k, and
        units ``"task"`` or ``"cluster"``).
    margin : float, default 0.0
        Practical margin (absolute).
    tau : float, optional
        With ``metric="g-pass@k"``: the share of the k attempts that must succeed, in (0, 1].

    Returns
    -------
    xarray.Dataset
        ``effect`` (replicates on ``replicate``), ``effect_estimate``, ``effect_interval``
        (``ci_bound``), ``prob_positive``, ``prob_above_margin`` and ``prob_noninferior``
        (shares of replicates above 0, ``margin`` and ``-margin``), ``p_value`` (two-sided
        percentile-bootstrap test of no effect, :func:`bayeval.resampling.bootstrap_p_value`),
        per-system ``estimate``,
        ``interval_valid``/``interval_reason`` (as in :func:`pass_at_k`, for the effect),
        status counts.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[1, 0, 1, 1, 0, 1], [1, 1, 1, 1, 0, 1]], trials=1,
    ...                       systems=["A", "B"])
    >>> out = be.bootstrap.compare(data, "B", "A", n_boot=2000, seed=3)
    >>> round(float(out["effect_estimate"]), 3)
    0.167
    """
    is_mean = metric == "mean"
    if is_mean and (tau is not None or k != 1):
        raise ValueError(f"metric='mean' has no k or tau; got k={k!r}, tau={tau!r}")
    ci_prob, n_boot, seed = _validate_common(
        data,
        unit,
        weighting,
        clusters,
        method,
        ci_prob,
        n_boot,
        seed,
        "pass@k" if is_mean else metric,
        tau,
    )
    _, tau = validate_metric("pass@k" if is_mean else metric, tau)
    ks, scalar_k = metric_ks("pass@k" if is_mean else metric, k)
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in data.systems:
            raise ValueError(
                f"{role} {label!r} is not a system of this data; systems: "
                f"{describe_values(data.systems)}"
            )
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different systems")
    margin = validate_margin(margin)
    pair = [baseline, candidate]
    subset = data.sel(system=pair)
    trials = subset.dataset["trials"].values
    shared = (trials > 0).all(axis=0)
    if not shared.any():
        raise ValueError(
            f"{candidate!r} and {baseline!r} share no task with valid trials; "
            "a paired comparison needs shared tasks"
        )
    if not shared.all():
        subset = subset.sel(task=subset.tasks[shared].tolist())
    if is_mean:
        res, shape, bounds = _mean_run(subset, pair, unit, weighting, clusters, n_boot, seed)
    else:
        res, shape, bounds = _run(
            subset, pair, ks, metric, unit, weighting, clusters, n_boot, seed, tau
        )
    n_k = len(ks)
    est = _reshape(res.estimate, (), shape, n_k)  # (bound, system, k)
    reps = _reshape(res.replicates, (n_boot,), shape, n_k)
    jdev = _reshape(res.jack_dev, (len(res.jack_mult),), shape, n_k)
    # crossing: lower = B(lower) - A(upper), upper = B(upper) - A(lower)
    cand_bound = np.arange(shape[0])
    base_bound = cand_bound[::-1]

    def effect(x):
        return x[..., cand_bound, 1, :] - x[..., base_bound, 0, :]

    eff_est, eff_reps, eff_jdev = effect(est), effect(reps), effect(jdev)
    interval, fallback = _intervals(eff_est, eff_reps, eff_jdev, res.jack_mult, method, ci_prob)
    _warn_nan(eff_reps, "the effect")
    _warn_fallback(fallback, method)
    valid = ~np.isnan(eff_reps)
    n_valid = valid.sum(0)
    share = {
        name: np.where(valid, eff_reps > thr, False).sum(0) / n_valid
        for name, thr in (("pos", 0.0), ("margin", margin), ("noninf", -margin))
    }
    p_value = bootstrap_p_value(eff_reps, alternative="two-sided", axis=0)

    def da(values, lead=(), trail=()):
        out = xr.DataArray(values, dims=lead + ("missing_bound", "k") + trail)
        return out if bounds else out.isel(missing_bound=0, drop=True)

    ds = xr.Dataset(
        {
            "effect": da(eff_reps, ("replicate",)),
            "effect_estimate": da(eff_est),
            "effect_interval": da(interval, (), ("ci_bound",)),
            "prob_positive": da(share["pos"]),
            "prob_above_margin": da(share["margin"]),
            "prob_noninferior": da(share["noninf"]),
            "p_value": da(p_value),
            "estimate": xr.DataArray(est, dims=("missing_bound", "system", "k")).pipe(
                lambda x: x if bounds else x.isel(missing_bound=0, drop=True)
            ),
        }
    )
    if method == "bca":
        ds["bca_fallback"] = da(fallback)
    valid, reason = _validity(res, shape, n_k)  # (bound, system, k): an effect needs both
    eff_valid = valid[cand_bound, 1] & valid[base_bound, 0]
    eff_reason = np.where(valid[cand_bound, 1], reason[base_bound, 0], reason[cand_bound, 1])
    ds["interval_valid"] = da(eff_valid)
    ds["interval_reason"] = da(eff_reason.astype(object))
    coords = {"system": np.asarray(pair, dtype=object), "k": ks, "ci_bound": ["lower", "upper"]}
    if bounds:
        coords["missing_bound"] = bounds
    ds = ds.assign_coords(coords)
    if scalar_k:
        ds = ds.isel(k=0)
    ds = ds.assign(_status_vars(data, pair))
    ds.attrs = {
        **_settings(unit, method, ci_prob, n_boot, seed, weighting, clusters, metric, data, tau),
        "candidate": candidate,
        "baseline": baseline,
        "margin": float(margin),
        "n_shared_tasks": int(shared.sum()),
        "n_unshared_tasks": int((~shared).sum()),
        "paired": "yes",
    }
    return ds


# twins of Results.ranks and Results.compare_curve, defined with the decision tools
from bayeval._decisions import curve_bootstrap as compare_curve  # noqa: E402
from bayeval._rank_sets import rank_sets  # noqa: E402

__all__ += ["rank_sets", "compare_curve"]
from bayeval._cost import (
    cost,  # noqa: E402,F401  (twin of Results.cost)
    latency,  # noqa: E402,F401  (twin of bayeval._cost.posterior_latency)
)
from bayeval.noise import noise  # noqa: E402,F401  (twin of Results.noise)
