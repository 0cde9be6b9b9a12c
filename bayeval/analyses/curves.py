"""Effects as curves over k, from the posterior and from the paired bootstrap.

The posterior curve with its simultaneous band, where it crosses zero and the tasks behind a
reversal, beside the paired bootstrap curve (its twin).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import validate_k, validate_prob
from bayeval.analyses import arrays
from bayeval.analyses._draws import (
    SAMPLE_DIMS,
    observed_counts,
    observed_scores,
    over_samples,
    thinned,
)
from bayeval.analyses.arrays import crossing_points
from bayeval.analyses.compare import compare
from bayeval.models._beta_family import metric_of_rate
from bayeval.resampling import _refuse_scores

__all__ = ["compare_curve", "curve_bootstrap", "reversal_tasks"]

CONTRIBUTION_DRAWS = 400  # draws behind each task's posterior contribution to a curve


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

    Returns
    -------
    xarray.Dataset
        Over ``k``: ``effect_mean``, ``effect_interval`` (pointwise), ``effect_band``
        (simultaneous over the ks: a sup-t band, mean +- q sd with q the ``ci_prob``
        quantile of the largest standardised deviation over k), ``prob_positive``;
        ``prob_cross`` (posterior probability that the effect changes sign within the
        ks), ``crossing_k`` (per draw, over ``chain, draw``, the interpolated k of the first
        sign change; NaN without one) and ``crossing_interval``; per ``(task, k)``,
        ``task_contribution`` (the posterior mean of the task's share of the
        tasks-estimand effect) and ``task_contribution_observed`` (the same share from the
        unbiased estimator of its counts), so a reversal is traced to the tasks behind
        it (see :func:`reversal_tasks`). The twin is :func:`curve_bootstrap`.

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
    )
    if "missing_bound" in cmp["effect"].dims:
        raise ValueError("compare_curve takes data without missing bounds")
    effect = cmp["effect"]
    band = over_samples(
        arrays.sup_t_band,
        effect,
        core={"grid_axis": "k"},
        keep_attrs=False,
        outputs={"effect_band": ("k", "ci_bound"), "band_critical_value": ()},
        ci_prob=ci_prob,
    )
    crossing_k = xr.apply_ufunc(
        crossing_points,
        effect,
        input_core_dims=[["k"]],
        kwargs={"grid": ks},
        keep_attrs=False,
    ).transpose(*SAMPLE_DIMS)
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
            "prob_positive": cmp["prob_positive"],
            "prob_cross": crossings["prob_cross"],
            "crossing_k": crossing_k,
            "crossing_interval": crossings["crossing_interval"],
        },
        coords={"k": ks, "ci_bound": ["lower", "upper"]},
    ).drop_vars(SAMPLE_DIMS)
    for name in out.data_vars:  # the curve's variables are labelled by k alone
        out[name].attrs = {}
    out = out.merge(task_contributions(posterior, candidate, baseline, ks=ks, metric=metric))
    out.attrs = {
        **cmp.attrs,
        "k": ks.tolist(),
        "band": "sup-t (max over k of |z|)",
        "band_critical_value": float(band["band_critical_value"]),
    }
    out.attrs.pop("margin", None)
    return out


def task_contributions(posterior, candidate, baseline, *, ks, metric) -> xr.Dataset:
    """Each task's share of the tasks-estimand effect at each k.

    The posterior mean of ``(f_k(p_candidate) - f_k(p_baseline)) / J`` over the tasks valid
    for both (from :data:`CONTRIBUTION_DRAWS` evenly thinned draws), beside the same share
    from the unbiased estimator of the observed counts (NaN where k > trials).
    """
    c, n = observed_counts(posterior)
    systems = posterior.systems
    i, j = systems.index(candidate), systems.index(baseline)
    both = (n[i] > 0) & (n[j] > 0)
    J = int(both.sum())
    # posterior means: 400 evenly thinned draws suffice, and per-task readouts of a large
    # paired fit cost in proportion to the draws
    rates = (
        thinned(posterior, CONTRIBUTION_DRAWS)
        .task_rates([candidate, baseline])
        .transpose("chain", "draw", "system", "task")
        .values
    )
    rates = rates.reshape(-1, 2, rates.shape[-1])
    contribution, observed = [], []
    for k in ks:
        f = metric_of_rate(rates, metric, np.array([k]))[..., 0]
        contribution.append(np.where(both, (f[:, 0] - f[:, 1]).mean(axis=0), np.nan) / J)
        _, per = observed_scores(c[[i, j]], n[[i, j]], int(k), metric)
        observed.append(np.where(both, per[0] - per[1], np.nan) / J)
    tasks = posterior._group("constant_data")["task"].values
    return xr.Dataset(
        {
            "task_contribution": (("task", "k"), np.array(contribution).T),
            "task_contribution_observed": (("task", "k"), np.array(observed).T),
        },
        coords={"task": tasks},
    )


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
    ci_prob=0.95,
    n_boot=2000,
    seed=0,
) -> xr.Dataset:
    """Paired bootstrap of the effect curve over k.

    Gives pointwise percentile intervals and a simultaneous sup-t band, resampling tasks (or
    whole clusters with ``unit="cluster"``).

    The twin of :func:`compare_curve`, reached as
    ``bayeval.bootstrap.compare_curve``. The effect at each k is the mean over the tasks with
    at least ``max(k)`` trials for both systems of the difference of unbiased estimators.

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k"}
    k : list of int
    unit : {"task", "cluster"}
    ci_prob : float, default 0.95
    n_boot : int, default 2000
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        ``effect``, ``effect_interval`` (pointwise) and ``effect_band`` (simultaneous) over k.

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
    _refuse_scores(data, metric)
    ds = data.dataset
    if "missing_bound" in ds["successes"].dims:
        raise ValueError("the curve bootstrap takes data without missing bounds")
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in data.systems:
            raise ValueError(f"{role} {label!r} is not a system of the data")
    pair = ds.sel(system=[candidate, baseline])
    c = pair["successes"].transpose("system", "task").values
    n = pair["trials"].transpose("system", "task").values
    keep = (n >= ks.max()).all(axis=0)
    if not keep.any():
        raise ValueError(f"no task has at least k={int(ks.max())} trials for both systems")
    diff = np.stack(
        [np.subtract(*observed_scores(c[:, keep], n[:, keep], int(k), metric)[1]) for k in ks],
        axis=1,
    )  # (J, K)
    if unit == "cluster":
        if "cluster" not in ds.coords:
            raise ValueError("unit='cluster' needs task clusters")
        codes = pd.factorize(np.asarray(ds["cluster"].values[keep], dtype=object))[0]
    else:
        codes = np.arange(diff.shape[0])
    G = codes.max() + 1
    sums = np.zeros((G, len(ks)))
    np.add.at(sums, codes, diff)
    sizes = np.bincount(codes, minlength=G).astype(float)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot).astype(float)
    boot = (weights @ sums) / (weights @ sizes)[:, None]
    estimate = diff.mean(axis=0)
    band, q = arrays.sup_t_band(boot, ci_prob=ci_prob, axis=0, grid_axis=-1)
    shift = estimate - boot.mean(axis=0)  # centre the band on the estimate
    alpha = 1 - ci_prob
    out = xr.Dataset(
        {
            "effect": (("k",), estimate),
            "effect_interval": (
                ("k", "ci_bound"),
                np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0).T,
            ),
            "effect_band": (("k", "ci_bound"), band + shift[:, None]),
        },
        coords={"k": ks, "ci_bound": ["lower", "upper"]},
    )
    out.attrs = {
        "candidate": candidate,
        "baseline": baseline,
        "metric": metric,
        "unit": unit,
        "n_boot": n_boot,
        "ci_prob": ci_prob,
        "seed": seed,
        "n_tasks": int(keep.sum()),
        "band": "sup-t (max over k of |z|)",
        "band_critical_value": float(q),
        "paired": True,
        "paired_note": "both systems resampled together on their shared tasks",
    }
    return out
