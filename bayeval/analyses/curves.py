"""Effects as curves over k, from the posterior and from the paired bootstrap.

The posterior curve with its simultaneous band, where it crosses zero and the tasks behind a
reversal, beside the paired bootstrap curve (its twin).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import validate_k, validate_prob
from bayeval.analyses import arrays
from bayeval.analyses._draws import (
    SAMPLE_DIMS,
    observed_scores,
    over_samples,
    thinned,
)
from bayeval.analyses.arrays import crossing_points
from bayeval.analyses.compare import _crossed_fits, compare
from bayeval.models import get_model
from bayeval.models._beta_family import metric_of_rate
from bayeval.resampling import _layout, _refuse_scores, _resample_values

__all__ = ["compare_curve", "curve_bootstrap", "reversal_tasks"]

CONTRIBUTION_DRAWS = 400  # draws behind each task's posterior contribution to a curve
#: How both curves' simultaneous bands are built (:func:`bayeval.analyses.arrays.quantile_band`).
BAND = (
    "simultaneous over k: the pointwise equal-tailed intervals widened until they hold "
    "the share ci_prob of the draws at every k at once (so the band contains each "
    "pointwise interval)"
)


def _bootstrap_words(unit: str, weighting: str, clusters=None, *, short: bool = False) -> str:
    """The curve bootstrap's design in words: its unit, groups and weighting.

    ``short``: the legend's form (``"cluster bootstrap (clusters alike)"``).
    """
    alike = weighting == "cluster"
    if clusters == "observed":
        if short:
            return "task bootstrap (within clusters" + (" alike)" if alike else ")")
        each = "each cluster weighing the same" if alike else "clusters weighted by their tasks"
        return f"task bootstrap within the observed clusters, {each}"
    if short:
        return f"{unit} bootstrap" + (" (clusters alike)" if alike else "")
    return f"{unit} bootstrap" + (", each cluster weighing the same" if alike else "")


def sup_t_band(draws: np.ndarray, ci_prob: float):
    """Simultaneous (sup-t) band of draws ``(draw, k)`` over k, and its critical value.

    :func:`bayeval.analyses.arrays.sup_t_band` with the draws on the first axis: the band is
    mean +- q sd, q the ci_prob quantile of the max over k of |standardised draw|.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.curves import sup_t_band
    >>> band, q = sup_t_band(np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]), 0.5)
    >>> q, band.tolist()
    (1.0, [[0.0, 2.0], [1.0, 1.0]])
    """
    band, q = arrays.sup_t_band(draws, ci_prob=ci_prob, axis=0, grid_axis=-1)
    return band, float(q)


def compare_curve(
    posterior,
    candidate,
    baseline,
    *,
    metric: str = "pass@k",
    k,
    estimand: str = "population",
    ci_prob: float = 0.95,
    clusters=None,
    weighting: str = "task",
) -> xr.Dataset:
    """The effect ``metric(candidate) - metric(baseline)`` as a curve over k.

    Parameters
    ----------
    posterior : Posterior
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k"}
    k : list of int
        At least two increasing ks.
    estimand : {"population", "tasks"}, default "population"
    ci_prob : float, default 0.95
    clusters, weighting
        The population estimand asked for, as in :func:`bayeval.analyses.compare.compare`
        (default: what the clusters support, :func:`bayeval.data.clusters.default_clusters`).

    Returns
    -------
    xarray.Dataset
        Over ``k``: ``effect_mean``, ``effect_interval`` (pointwise), ``effect_band``
        (simultaneous over the ks: the pointwise intervals at the level ``band_level``,
        the smallest at which a share ``ci_prob`` of the draws lies inside at every k;
        :func:`bayeval.analyses.arrays.quantile_band`), ``prob_positive``;
        ``prob_cross`` (posterior probability that the effect changes sign within the
        ks), ``crossing_k`` (per draw, over ``chain, draw``, the interpolated k of the first
        sign change; NaN without one) and ``crossing_interval``; per ``(task, k)``,
        ``task_contribution`` (the posterior mean of the task's share of the
        tasks-estimand effect) and ``task_contribution_observed`` (the same share from the
        unbiased estimator of its counts), so a reversal is traced to the tasks behind
        it (see :func:`reversal_tasks`). Under ``missing="bounds"`` each has a
        ``missing_bound`` dim, the bounds crossed as in :func:`bayeval.analyses.compare.compare`
        (``lower``: the candidate's missing outcomes as failures, the baseline's as
        successes). The twin is :func:`curve_bootstrap`.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.curves import compare_curve
    >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> curve = compare_curve(res, "A", "B", k=[1, 2, 4, 8])
    >>> curve["effect_band"].dims, curve["crossing_k"].dims
    (('k', 'ci_bound'), ('chain', 'draw'))
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    ks, scalar = validate_k(k)
    if scalar or len(ks) < 2:
        raise ValueError(f"compare_curve needs a list of at least two ks; got {k!r}")
    if np.any(np.diff(ks) <= 0):
        raise ValueError(f"compare_curve needs increasing ks; got {ks.tolist()}")
    cmp = compare(
        posterior,
        candidate,
        baseline,
        metric=metric,
        k=ks.tolist(),
        estimand=estimand,
        ci_prob=ci_prob,
        clusters=clusters,
        weighting=weighting,
    )
    effect = cmp["effect"]
    band = over_samples(
        arrays.quantile_band,
        effect,
        core={"grid_axis": "k"},
        keep_attrs=False,
        outputs={"effect_band": ("k", "ci_bound"), "band_level": ()},
        ci_prob=ci_prob,
    )
    crossing_k = xr.apply_ufunc(
        crossing_points,
        effect,
        input_core_dims=[["k"]],
        kwargs={"grid": ks},
        keep_attrs=False,
    ).transpose(*SAMPLE_DIMS, ...)
    crossings = over_samples(
        arrays.summarize_crossings,
        crossing_k,
        outputs={"prob_cross": (), "crossing_interval": ("ci_bound",)},
        ci_prob=ci_prob,
    )
    out = xr.Dataset(
        {
            **{name: cmp[name] for name in ("effect_mean", "effect_interval")},
            "effect_band": band["effect_band"],
            "band_level": band["band_level"],
            "prob_positive": cmp["prob_positive"],
            "prob_cross": crossings["prob_cross"],
            "crossing_k": crossing_k,
            "crossing_interval": crossings["crossing_interval"],
        },
        coords={"k": ks, "ci_bound": ["lower", "upper"]},
    ).drop_vars(SAMPLE_DIMS, errors="ignore")
    for name in out.data_vars:  # the curve's variables are labelled by k alone
        out[name].attrs = {}
    out = out.merge(task_contributions(posterior, candidate, baseline, ks=ks, metric=metric))
    out.attrs = {**cmp.attrs, "k": ks.tolist(), "band": BAND}
    out.attrs.pop("margin", None)
    return out


def task_contributions(posterior, candidate, baseline, *, ks, metric) -> xr.Dataset:
    """Each task's share of the tasks-estimand effect at each k.

    The posterior mean of ``(f_k(p_candidate) - f_k(p_baseline)) / J`` over the tasks valid
    for both (from :data:`CONTRIBUTION_DRAWS` evenly thinned draws), beside the same share
    from the unbiased estimator of the observed counts (NaN where k > trials). Under
    missing bounds, per crossed bound (``lower``: the candidate's missing outcomes as
    failures, the baseline's as successes), from the joint fit of the crossed counts where
    the model pairs the systems (as :func:`bayeval.analyses.compare.compare` has it).
    """
    obs = posterior._group("constant_data")
    pair = obs.sel(system=[candidate, baseline])
    n = pair["trials"].transpose("system", "task").values
    both = (n[0] > 0) & (n[1] > 0)
    J = int(both.sum())
    successes = pair["successes"]
    bounds = (
        successes["missing_bound"].values.tolist() if "missing_bound" in successes.dims else [None]
    )
    # a paired model's crossed bound is a joint fit of the crossed counts (as compare has it)
    refit = bounds != [None] and get_model(posterior.model).crossed_bounds_refit
    fits = _crossed_fits(posterior, candidate, baseline) if refit else {}
    # posterior means: 400 evenly thinned draws suffice, and per-task readouts of a large
    # paired fit cost in proportion to the draws
    pair_systems = [candidate, baseline]
    rates = None if refit else thinned(posterior, CONTRIBUTION_DRAWS).task_rates(pair_systems)

    def at(values, system, bound):
        values = values.sel(system=system)
        return values if bound is None else values.sel(missing_bound=bound)

    parts = []
    for bound in bounds:
        crossed = bound if bound is None else {"lower": "upper", "upper": "lower"}[bound]
        sides = ((candidate, bound), (baseline, crossed))
        if refit:
            joint = thinned(fits[bound], CONTRIBUTION_DRAWS).task_rates([candidate, baseline])
            picked = [joint.sel(system=s) for s, _ in sides]
        else:
            picked = [at(rates, s, b) for s, b in sides]
        r = np.stack(
            [x.transpose("chain", "draw", "task").values for x in picked], axis=2
        )  # (chain, draw, system, task)
        r = r.reshape(-1, 2, r.shape[-1])
        c = np.stack([at(successes, s, b).transpose("task").values for s, b in sides])
        contribution, observed = [], []
        for k in ks:
            f = metric_of_rate(r, metric, np.array([k]))[..., 0]
            contribution.append(np.where(both, (f[:, 0] - f[:, 1]).mean(axis=0), np.nan) / J)
            _, per = observed_scores(c, n, int(k), metric)
            observed.append(np.where(both, per[0] - per[1], np.nan) / J)
        parts.append(
            xr.Dataset(
                {
                    "task_contribution": (("task", "k"), np.array(contribution).T),
                    "task_contribution_observed": (("task", "k"), np.array(observed).T),
                },
                coords={"task": obs["task"].values},
            )
        )
    if bounds == [None]:
        return parts[0]
    return xr.concat(parts, dim=xr.DataArray(bounds, dims="missing_bound"))


def reversal_tasks(curve: xr.Dataset, *, top: int = 10, by: str = "posterior") -> pd.DataFrame:
    """The tasks that move the effect most between the first and the last k of a curve.

    Gives the change of each task's contribution, largest in size first.

    ``by="posterior"`` ranks by the posterior contributions (a task never solved still grows
    at large k under the model's shrinkage), ``by="observed"`` by the unbiased estimator of
    the counts (what the counts alone say; tasks with equal counts tie).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.curves import reversal_tasks
    >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> curve = res.compare_curve("A", "B", k=[1, 8], estimand="tasks")
    >>> sorted(reversal_tasks(curve, top=2)["task"])
    [0, 3]
    """
    if by not in ("posterior", "observed"):
        raise ValueError(f"by must be 'posterior' or 'observed'; got {by!r}")
    if "missing_bound" in curve["task_contribution"].dims:
        raise ValueError(
            "the curve has missing bounds: select one, reversal_tasks(curve.sel("
            "missing_bound='lower'))"
        )
    first, last = curve["task_contribution"].isel(k=0), curve["task_contribution"].isel(k=-1)
    change = (last - first).to_series().dropna()
    obs = (
        curve["task_contribution_observed"].isel(k=-1)
        - curve["task_contribution_observed"].isel(k=0)
    ).to_series()
    key = change if by == "posterior" else obs.reindex(change.index)
    order = key.abs().sort_values(ascending=False, kind="stable").index[:top]
    return pd.DataFrame(
        {
            "task": order,
            "change": change[order].to_numpy(),
            "change_observed": obs.reindex(order).to_numpy(),
        }
    )


def curve_bootstrap(
    data,
    candidate,
    baseline,
    *,
    metric="pass@k",
    k,
    unit="task",
    weighting="task",
    clusters=None,
    ci_prob=0.95,
    n_boot=2000,
    seed=0,
) -> xr.Dataset:
    """Paired bootstrap of the effect curve over k.

    Gives pointwise percentile intervals and a simultaneous band, resampling tasks (within
    the observed clusters with ``clusters="observed"``) or whole clusters
    (``unit="cluster"``), the same units in every replicate at every k.

    The twin of :func:`compare_curve`, reached as ``bayeval.bootstrap.compare_curve``, with
    the units, groups and weights of :func:`bayeval.bootstrap.compare` (strata, clusters):
    pass it the comparison twin's settings (:func:`bayeval.analyses.crosscheck.bootstrap_twin`,
    ``**twin.attrs``). The effect at each k is the weighted mean, over the tasks with at
    least k trials for both systems, of the difference of unbiased estimators: each task
    alike (``weighting="task"``) or each cluster alike (``"cluster"``: each cluster's mean,
    then their mean). At a k every shared task has, the point is the paired bootstrap's
    effect of that k. Under ``missing="bounds"`` the bounds cross as there (``lower``: the
    candidate's missing outcomes as failures, the baseline's as successes).

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k"}
    k : list of int
    unit : {"task", "cluster"}
    weighting : {"task", "cluster"}, default "task"
    clusters : {None, "observed"}
        ``"observed"``: tasks resampled within their clusters (``unit="task"``).
    ci_prob : float, default 0.95
    n_boot : int, default 2000
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        ``effect``, ``effect_interval`` (pointwise), ``effect_band`` (simultaneous, the
        pointwise intervals at the level ``band_level``: see
        :func:`bayeval.analyses.arrays.quantile_band`, so the band contains each pointwise
        interval) and ``n_tasks`` (the tasks behind each point) over k; NaN at a k where a
        group the bootstrap resamples within (a stratum, or a cluster under
        ``clusters="observed"``) has no task with k trials.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
    >>> out = be.bootstrap.compare_curve(data, "A", "B", k=[1, 5], n_boot=500)
    >>> out["effect"].round(3).values.tolist()
    [-0.125, -0.372]
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    ks, scalar = validate_k(k)
    if scalar or len(ks) < 2:
        raise ValueError(f"the curve needs a list of at least two ks; got {k!r}")
    if unit not in ("task", "cluster"):
        raise ValueError(f"unit must be 'task' or 'cluster'; got {unit!r}")
    if weighting not in ("task", "cluster"):
        raise ValueError(f"weighting must be 'task' or 'cluster'; got {weighting!r}")
    if clusters not in (None, "observed"):
        raise ValueError(f"clusters must be None or 'observed'; got {clusters!r}")
    if clusters == "observed" and unit != "task":
        raise ValueError(f"clusters='observed' resamples tasks: use unit='task'; got {unit!r}")
    if weighting == "cluster" and unit != "cluster" and clusters != "observed":
        raise ValueError(
            "weighting='cluster' resamples whole clusters: use unit='cluster' (or "
            "clusters='observed', tasks resampled within their clusters)"
        )
    _refuse_scores(data, metric)
    ds = data.dataset
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in data.systems:
            raise ValueError(f"{role} {label!r} is not a system of the data")
    if (unit == "cluster" or clusters == "observed") and "cluster" not in ds.coords:
        raise ValueError(f"unit={unit!r}, clusters={clusters!r} needs task clusters")
    pair = data.sel(system=[candidate, baseline])
    n = pair.dataset["trials"].transpose("system", "task").values
    shared = (n > 0).all(axis=0)
    if not (n[:, shared] >= ks.min()).all(axis=0).any():
        raise ValueError(f"no task has at least k={int(ks.min())} trials for both systems")
    if not shared.all():
        pair = pair.sel(task=pair.tasks[shared].tolist())
    n = n[:, shared]
    successes = pair.dataset["successes"]
    bounds = (
        successes["missing_bound"].values.tolist() if "missing_bound" in successes.dims else [None]
    )
    valid = np.stack([(n >= kk).all(axis=0) for kk in ks], axis=1)  # (J, K)
    # the comparison bootstrap's units, groups (strata, observed clusters) and their weights
    layout = _layout(pair, unit, weighting, clusters)
    crossed = {None: None, "lower": "upper", "upper": "lower"}
    # one column per (bound, system, k), so every replicate draws the same units for all
    values, masks = [], []
    for bound in bounds:
        c = np.stack(
            [
                (successes if b is None else successes.sel(missing_bound=b))
                .sel(system=s)
                .transpose("task")
                .values
                for s, b in ((candidate, bound), (baseline, crossed[bound]))
            ]
        )
        for side in range(2):
            for i, kk in enumerate(ks):
                per = observed_scores(c, n, int(kk), metric)[1][side]
                values.append(np.where(valid[:, i], per, 0.0))
                masks.append(valid[:, i])
    res = _resample_values(
        np.array(values)[..., None],
        np.array(masks),
        metric,
        layout,
        n_boot,
        np.random.default_rng(seed),
    )
    shape = (len(bounds), 2, len(ks))
    estimate = res.estimate[..., 0].reshape(shape)
    replicates = res.replicates[..., 0].reshape((n_boot, *shape))
    parts = []
    for b in range(len(bounds)):
        boot = replicates[:, b, 0] - replicates[:, b, 1]  # (replicate, k)
        alpha = 1 - ci_prob
        with warnings.catch_warnings():  # a k no replicate reaches is NaN, as the point is
            warnings.simplefilter("ignore", RuntimeWarning)
            interval = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0).T
        band, level = arrays.quantile_band(boot, ci_prob=ci_prob, axis=0, grid_axis=-1)
        parts.append(
            xr.Dataset(
                {
                    "effect": (("k",), estimate[b, 0] - estimate[b, 1]),
                    "effect_interval": (("k", "ci_bound"), interval),
                    "effect_band": (("k", "ci_bound"), band),
                    "band_level": level,
                },
            )
        )
    out = (
        parts[0]
        if bounds == [None]
        else xr.concat(parts, dim=xr.DataArray(bounds, dims="missing_bound"))
    )
    out["n_tasks"] = (("k",), valid.sum(axis=0))
    out = out.assign_coords(k=ks, ci_bound=["lower", "upper"])
    out.attrs = {
        "candidate": candidate,
        "baseline": baseline,
        "metric": metric,
        "unit": unit,
        "weighting": weighting,
        **({} if clusters is None else {"clusters": clusters}),
        "n_boot": n_boot,
        "ci_prob": ci_prob,
        "seed": seed,
        "n_tasks": int(shared.sum()),
        "band": BAND,
        "paired": True,
        "paired_note": "both systems resampled together on their shared tasks",
    }
    return out
