"""Paired effects ``metric(candidate) - metric(baseline)`` and their bootstrap twin.

Effects of one pair and of every pair, from the posterior, and the paired bootstrap that is their
twin.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from bayeval._arviz import mcse_and_ess
from bayeval._validate import describe_values, validate_margin, validate_prob
from bayeval.analyses import arrays
from bayeval.analyses._draws import over_samples, pairing, settings_of
from bayeval.analyses.runs import check_recipes, recipe_values
from bayeval.data.digests import check_comparable
from bayeval.estimators import metric_ks, validate_metric
from bayeval.inference import gate_attrs, infer
from bayeval.models import get_model
from bayeval.resampling import (
    _intervals,
    _mean_run,
    _reshape,
    _run,
    _settings,
    _status_vars,
    _validate_common,
    _validity,
    _warn_fallback,
    _warn_nan,
    bootstrap_p_value,
    cluster_refusal,
)

__all__ = ["compare", "compare_all", "bootstrap_compare"]

# the outputs of arrays.summarize_effect and their dims besides the batch dims
EFFECT_OUTPUTS = {
    "effect_mean": (),
    "effect_interval": ("ci_bound",),
    "prob_positive": (),
    "prob_above_margin": (),
    "prob_noninferior": (),
}


def _check_pair(systems, candidate, baseline, what="system", where="these results"):
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in systems:
            raise ValueError(
                f"{role} {label!r} is not a {what} of {where}; {what}s: {describe_values(systems)}"
            )
    if candidate == baseline:
        raise ValueError(f"candidate and baseline must be different {what}s")


def _valid_trials(posterior) -> xr.DataArray:
    """Each cell's trials, the smaller bound's under missing bounds (valid for both).

    Judged data count every judged attempt, labelled or not: the true outcome of each is
    in the estimand (``trials`` holds only the labelled ones).
    """
    data = posterior._group("constant_data")
    trials = data["trials"]
    if "judge_u1" in data.data_vars:
        unlabelled = (data["judge_u1"] + data["judge_u0"]).isel(judge=0).sum("label_stratum")
        trials = trials + unlabelled
    return trials.min("missing_bound") if "missing_bound" in trials.dims else trials


def compare(
    posterior,
    candidate,
    baseline,
    *,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    ci_prob: float = 0.95,
    margin: float = 0.0,
    tau=None,
    clusters=None,
    weighting: str = "task",
    runs=None,
    allow_harness_change: bool = False,
) -> xr.Dataset:
    """Posterior of the effect ``metric(candidate) - metric(baseline)``.

    Under ``missing="bounds"`` the bounds cross: the lower bound takes the candidate's
    missing outcomes as failures and the baseline's as successes, the upper the reverse.
    The paired ``logit_normal`` model fits each crossed bound once, both systems'
    crossed counts jointly (:meth:`bayeval.EvalData.crossed`; two more fits with this
    fit's settings, cached on the posterior): subtracting draws of the two bounds' separate
    fits would lose the pairing. (``zoib`` still subtracts its bounds' draws.)

    Parameters
    ----------
    posterior : Posterior
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k", "g-pass@k", "consistency", "mean"}
        Consistency has no k (leave ``k`` at its default).
    k : int or list of int
    estimand : {"population", "tasks"}, default "population"
    ci_prob : float, default 0.95
    margin : float, default 0.0
        Practical margin (absolute; :func:`bayeval._validate.validate_margin`).
    tau : float, optional
        With ``metric="g-pass@k"``: the share of the k attempts that must succeed, in
        (0, 1].
    clusters, weighting
        As in :meth:`bayeval.Results.pass_at_k` (``logit_normal`` only).
    runs : {"new", "observed"}, optional
        For data with training runs (``from_frame(..., run=...)``): compare recipes
        (``candidate``, ``baseline`` are recipe labels). ``"observed"``: the mean over each
        recipe's runs of its checkpoints' metric (these checkpoints); ``"new"``: the metric
        of a new run of each recipe (new training seeds; ``logit_normal`` with a run
        level, population estimand), wider by the seed spread ``sigma_run``.
    allow_harness_change : bool, default False
        Systems whose data record different harness digests (``from_frame(harness=)``)
        are not compared unless this is True; the output's ``harness_note`` then says
        what changed (:func:`bayeval.harness.check_comparable`).

    Returns
    -------
    xarray.Dataset
        ``effect`` (draws), ``effect_interval`` (``ci_bound``), ``prob_positive``,
        ``prob_above_margin`` (P(effect > margin)), ``prob_noninferior``
        (P(effect > -margin)), ``effect_mean`` and its Monte Carlo standard error
        ``effect_mcse`` and bulk ``effect_ess`` (``arviz_stats``); settings in attrs, with
        ``paired`` (bool) and ``paired_note`` saying how the model treats shared tasks, and
        ``gates_failed`` (the MCMC gates the fit failed, empty when it passed) with
        ``gates_note``: a decision on a fit that failed is ``"undecided"``
        (:func:`bayeval.noninferiority`). Under ``estimand="population"``, ``spreads_from``
        lists the systems whose data informed the spreads a new task is drawn with (every
        system of a paired fit: one task-by-system spread is shared) and ``spreads_note``
        says so where they are more than the pair.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.compare import compare
    >>> data = be.from_counts([[3, 5, 1, 8], [6, 9, 2, 9]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, draws=300, chains=2, seed=0, model="hierarchical")
    >>> out = compare(res, "B", "A", k=1, estimand="tasks", margin=0.02)
    >>> out["effect_interval"].dims, out.attrs["paired"]
    (('ci_bound',), False)
    """
    asked = metric
    metric, tau = posterior._validate_metric(metric, tau, k)
    ci_prob = validate_prob("ci_prob", ci_prob)
    margin = validate_margin(margin)
    if runs is not None:
        members = check_recipes(posterior, candidate, baseline)
    else:
        _check_pair(posterior.systems, candidate, baseline)
        members = [candidate, baseline]
    harness = check_comparable(posterior.data, members, allow_harness_change)
    shared, dropped = None, 0
    if estimand == "tasks":
        # paired: the mean over the tasks valid for both systems (under missing="exclude"
        # a system's valid tasks can differ)
        valid = _valid_trials(posterior).sel(system=members).values > 0
        both = valid.all(axis=0)
        dropped = int((valid.any(axis=0) & ~both).sum())
        if not both.any():
            raise ValueError(
                f"{candidate!r} and {baseline!r} have no task with a valid "
                "outcome for both: a paired comparison of these tasks is "
                "undefined"
            )
        if dropped:
            shared = both
    options = {"clusters": clusters, "weighting": weighting, "shared": shared, "tau": tau}
    if runs is not None:
        values = recipe_values(
            posterior, metric=metric, k=k, estimand=estimand, runs=runs, **options
        )
    else:
        values = posterior.draws(metric, k, estimand, **options, systems=members)
    crossed_fit = (
        "missing_bound" in values.dims
        and get_model(posterior.model).crossed_bounds_refit
        and runs is None
    )
    fits: dict = {}
    if crossed_fit:
        # a paired model shares task effects between the systems: each crossed bound is
        # one joint fit of both systems' crossed counts, not two bounds' draws subtracted
        fits = _crossed_fits(posterior, candidate, baseline)
        parts = []
        for bound in ("lower", "upper"):
            draws = fits[bound].draws(metric, k, estimand, **options)
            parts.append(
                draws.sel(system=candidate, drop=True) - draws.sel(system=baseline, drop=True)
            )
        effect = xr.concat(parts, dim=xr.DataArray(["lower", "upper"], dims="missing_bound"))
    else:
        cand = values.sel(system=candidate, drop=True)
        base = values.sel(system=baseline, drop=True)
        if "missing_bound" in values.dims:  # systems independent: the bounds' draws cross
            base = base.sel(missing_bound=["upper", "lower"]).assign_coords(
                missing_bound=["lower", "upper"]
            )
        effect = cand - base
    out = _effect_summary(effect, ci_prob, margin)
    out.attrs = {
        "candidate": candidate,
        "baseline": baseline,
        "metric": asked,
        "estimand": estimand,
        "margin": margin,
        "ci_prob": ci_prob,
        "ci_kind": "eti",
        "model": posterior.model,
        **pairing(posterior),
        **settings_of(values),
        **harness.attrs,
        **({} if runs is None else {"runs": runs, "checkpoints": members}),
        **gate_attrs(posterior, *fits.values()),
    }
    if crossed_fit:
        out.attrs["crossed_bounds"] = "one joint fit per crossed bound"
    if estimand == "tasks":
        out.attrs["n_shared_tasks"] = int(both.sum())
        out.attrs["n_dropped_tasks"] = dropped
    else:
        out.attrs.update(_spreads(posterior, candidate, baseline))
    return out


def _spreads(posterior, candidate, baseline) -> dict:
    """Which systems informed the spreads a new task's effect is drawn with.

    A paired model has one task-by-system (and cluster-by-system) spread for all the systems it
    was fitted on: a pair's new-task effect inside a many-system fit uses the spread all of them
    show, which is the model's own assumption (systems exchangeable in how they vary by task).
    Fitted alone, the pair would learn it from two systems; the two readings can differ.
    """
    systems = [str(s) for s in posterior.systems]
    if not posterior._paired or len(systems) <= 2:
        return {"spreads_from": [str(candidate), str(baseline)], "spreads_note": ""}
    return {
        "spreads_from": systems,
        "spreads_note": (
            f"a new task's spread between systems is the one shared by the {len(systems)} "
            "systems of the fit; fit the pair alone (data.sel(system=[...])) for the spread "
            "of these two systems only"
        ),
    }


def _effect_summary(effect: xr.DataArray, ci_prob: float, margin: float) -> xr.Dataset:
    """The effect's draws with their mean, interval, MCSE, ESS and tail probabilities."""
    summary = over_samples(
        arrays.summarize_effect,
        effect,
        outputs=EFFECT_OUTPUTS,
        ci_prob=ci_prob,
        margin=margin,
    )
    out = xr.Dataset({"effect": effect, **summary.data_vars})
    out["effect_mcse"], out["effect_ess"] = mcse_and_ess(effect)
    return out


def _crossed_fits(posterior, candidate, baseline) -> dict:
    """One joint fit per crossed missing-outcome bound (:meth:`bayeval.EvalData.crossed`).

    The fits use this posterior's settings and are cached on the posterior.
    """
    key = ("crossed", candidate, baseline)
    fits = posterior._cache.get(key)
    if fits is None:
        attrs = posterior._group("/").attrs
        priors = json.loads(attrs.get("priors", "null")) or None
        if priors is not None and "alpha" in priors:
            priors["alpha"] = tuple(priors["alpha"])
        fits = {
            bound: infer(
                posterior.data.crossed(candidate, baseline, bound),
                model=posterior.model,
                draws=int(attrs["draws"]),
                chains=int(attrs["chains"]),
                seed=int(attrs["seed"]),
                sampler=attrs["sampler"],
                tune=int(attrs["tune"]),
                priors=priors,
                progress=False,
                task_draws=False,
                log_likelihood=False,
            )
            for bound in ("lower", "upper")
        }
        posterior._cache[key] = fits
    return fits


def compare_all(
    posterior,
    *,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    ci_prob: float = 0.95,
    margin: float = 0.0,
    tau=None,
    clusters=None,
    weighting: str = "task",
    allow_harness_change: bool = False,
) -> xr.Dataset:
    """Every pairwise effect ``metric(candidate) - metric(baseline)``.

    Paired as :func:`compare` is for the fitted model. Systems evaluated under different
    harness digests are refused unless ``allow_harness_change`` (see :func:`compare`).

    Parameters
    ----------
    posterior : Posterior
    metric, k, estimand, ci_prob, margin, tau, clusters, weighting, allow_harness_change
        As in :func:`compare` (one k).

    Returns
    -------
    xarray.Dataset
        Over ``(candidate, baseline)``: ``effect_mean``, ``effect_interval`` (on
        ``ci_bound``), ``prob_positive`` and ``prob_above_margin``; the diagonal is NaN.
        Settings in attrs, ``gates_failed`` and ``gates_note`` as in :func:`compare`.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.compare import compare_all
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> out = compare_all(res, estimand="tasks")
    >>> out["prob_positive"].sel(candidate="B", baseline="A").item()
    1.0
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    margin = validate_margin(margin)
    values = posterior._single_metric("compare_all", metric, k, estimand, clusters, weighting, tau)
    tau = values.attrs.get("tau")
    systems = posterior.systems
    harness = check_comparable(posterior.data, systems, allow_harness_change)
    pair_dims = ("candidate", "baseline")
    out = over_samples(
        arrays.summarize_pairwise_effects,
        values.reset_coords(drop=True),
        core={"system_axis": "system"},
        keep_attrs=False,
        outputs={
            name: pair_dims + EFFECT_OUTPUTS[name]
            for name in ("effect_mean", "effect_interval", "prob_positive", "prob_above_margin")
        },
        ci_prob=ci_prob,
        margin=margin,
    )
    labels = np.asarray(systems, dtype=object)
    out = out.assign_coords(candidate=labels, baseline=labels)
    # a pair valid on the same tasks reads its effect off these draws; only a pair whose
    # valid tasks differ (missing="exclude") needs compare's mean over the shared tasks
    valid = (
        _valid_trials(posterior).transpose("system", "task").values > 0
        if estimand == "tasks"
        else None
    )
    for i, cand in enumerate(systems):
        for j, base in enumerate(systems):
            if valid is not None and i != j and not np.array_equal(valid[i], valid[j]):
                one = compare(
                    posterior,
                    cand,
                    base,
                    metric=metric,
                    k=k,
                    estimand=estimand,
                    ci_prob=ci_prob,
                    margin=margin,
                    tau=tau,
                    allow_harness_change=True,
                )
                for name in out.data_vars:
                    out[name].loc[{"candidate": cand, "baseline": base}] = one[name]
    out.attrs = {
        "metric": metric,
        "estimand": estimand,
        "margin": margin,
        "ci_prob": ci_prob,
        "model": posterior.model,
        **pairing(posterior),
        **({} if tau is None else {"tau": tau}),
        **harness.attrs,
        **gate_attrs(posterior),
    }
    return out


def bootstrap_compare(
    data,
    candidate,
    baseline,
    *,
    metric="pass@k",
    k=1,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    margin=0.0,
    tau=None,
    method="percentile",
    weighting="task",
    clusters=None,
    allow_harness_change: bool = False,
) -> xr.Dataset:
    """Paired bootstrap of the effect ``metric(candidate) - metric(baseline)``.

    The twin of :func:`compare`, reached as ``bayeval.bootstrap.compare``. Both systems are
    resampled together on their shared tasks (and clusters), so the interval carries the
    pairing. Under ``missing="exclude"`` only tasks valid for both systems are used; under
    ``missing="bounds"`` the bounds cross: the lower bound takes the candidate's missing
    outcomes as failures and the baseline's as successes, the upper bound the reverse.

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k", "g-pass@k", "consistency", "mean"}
        ``"mean"``: the mean score of scores in [0, 1] (see
        :func:`bayeval.bootstrap.mean_score`; no k, and units ``"task"`` or ``"cluster"``).
    k, unit, ci_prob, n_boot, seed, method, weighting, clusters
        As in :func:`bayeval.bootstrap.pass_at_k`.
    margin : float, default 0.0
        Practical margin (absolute).
    tau : float, optional
        With ``metric="g-pass@k"``: the share of the k attempts that must succeed, in (0, 1].
    allow_harness_change : bool, default False
        As in :func:`compare`: systems whose data record different harness digests are not
        compared unless this is True; the output's ``harness_note`` then says what changed.

    Returns
    -------
    xarray.Dataset
        ``effect`` (replicates on ``replicate``), ``effect_mean`` (the effect estimated on the
        data: the weighted mean over shared tasks of the per-task unbiased differences, named
        as the posterior's ``effect_mean`` so the twins read alike), ``effect_interval``
        (``ci_bound``), ``prob_positive``, ``prob_above_margin`` and ``prob_noninferior``
        (shares of replicates above 0, ``margin`` and ``-margin``), ``p_value`` (two-sided
        percentile-bootstrap test of no effect, :func:`bayeval.resampling.bootstrap_p_value`),
        per-system ``estimate``, ``interval_valid``/``interval_reason`` (as in
        :func:`bayeval.bootstrap.pass_at_k`, for the effect), status counts; settings in
        attrs (``paired`` True, and the harness check's ``harness_status`` and ``harness_note``).
        ``attrs["decides"]`` is False where the bootstrap resamples fewer than ten clusters
        (:func:`bayeval.resampling.cluster_refusal`): its ``p_value`` is then NaN,
        :func:`bayeval.noninferiority` calls it inconclusive and ``decision_note`` says why.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[1, 0, 1, 1, 0, 1], [1, 1, 1, 1, 0, 1]], trials=1,
    ...                       systems=["A", "B"])
    >>> out = be.bootstrap.compare(data, "B", "A", n_boot=2000, seed=3)
    >>> round(float(out["effect_mean"]), 3)
    0.167
    """
    is_mean = metric == "mean"
    if is_mean and (tau is not None or k != 1):
        raise ValueError(f"metric='mean' has no k or tau; got k={k!r}, tau={tau!r}")
    binary = "pass@k" if is_mean else metric
    ci_prob, n_boot, seed = _validate_common(
        data, unit, weighting, clusters, method, ci_prob, n_boot, seed, binary, tau
    )
    _, tau = validate_metric(binary, tau)
    ks, scalar_k = metric_ks(binary, k)
    _check_pair(data.systems, candidate, baseline, where="this data")
    harness = check_comparable(data, [candidate, baseline], allow_harness_change)
    margin = validate_margin(margin)
    pair = [baseline, candidate]
    subset = data.sel(system=pair)
    shared = (subset.dataset["trials"].values > 0).all(axis=0)
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
    refusal = cluster_refusal(subset, unit)
    if refusal is not None:  # a handful of distinct resamples: no tail probability
        p_value = np.full_like(p_value, np.nan)

    def da(values, lead=(), trail=()):
        out = xr.DataArray(values, dims=lead + ("missing_bound", "k") + trail)
        return out if bounds else out.isel(missing_bound=0, drop=True)

    ds = xr.Dataset(
        {
            "effect": da(eff_reps, ("replicate",)),
            "effect_mean": da(eff_est),
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
        "margin": margin,
        "n_shared_tasks": int(shared.sum()),
        "n_unshared_tasks": int((~shared).sum()),
        "paired": True,
        "paired_note": "both systems resampled together on their shared tasks",
        "decides": refusal is None,
        **({} if refusal is None else {"decision_note": refusal}),
        **harness.attrs,
    }
    return ds
