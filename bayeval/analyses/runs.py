"""Recipes and their training runs: a recipe's metric and its bootstrap twin.

A recipe's metric is taken over its observed runs or over a new one.

Data read with ``from_frame(..., run=...)`` hold one system per ``(recipe, run)`` pair, with a
``recipe`` coordinate on ``system``. A recipe's value is

* ``runs="observed"``: the mean over its runs of each checkpoint's metric (any model, either
  estimand): about these checkpoints;
* ``runs="new"``: the metric of a new training run of the recipe (``logit_normal`` with a run
  level, population estimand with new clusters): about the recipe, whose seeds vary by
  ``sigma_run``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import describe_values, validate_choice, validate_prob
from bayeval.estimators import metric_ks, pass_at_k

RUNS = ("new", "observed")


def recipes_of(posterior) -> np.ndarray:
    """Each system's recipe, or a clear refusal for data without runs."""
    obs = posterior._group("constant_data")
    if "recipe" not in obs.coords:
        raise ValueError(
            "runs= compares recipes: read the data with from_frame(..., run=...) "
            "so that each system is a (recipe, run) checkpoint"
        )
    return np.asarray(obs["recipe"].values, dtype=object)


def check_recipes(posterior, candidate, baseline) -> list:
    """The checkpoints of the two recipes (for the harness check and shared tasks)."""
    recipes = recipes_of(posterior)
    known = list(dict.fromkeys(recipes.tolist()))
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in known:
            raise ValueError(
                f"{role} {label!r} is not a recipe of these results; recipes: "
                f"{describe_values(known)}"
            )
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different recipes")
    systems = np.asarray(posterior.systems, dtype=object)
    return systems[np.isin(recipes, [candidate, baseline])].tolist()


def recipe_values(
    posterior,
    *,
    metric="pass@k",
    k=1,
    estimand="population",
    runs="observed",
    clusters=None,
    weighting="task",
    shared=None,
    tau=None,
) -> xr.DataArray:
    """Draws of each recipe's metric, over a ``system`` dim holding the recipes.

    ``runs="observed"``: the mean over each recipe's runs of its checkpoints' draws
    (:meth:`~bayeval.posterior.Posterior.draws` with these settings); ``runs="new"``: the
    metric of a new run of each recipe (``logit_normal`` with a run level, population
    estimand, new clusters).
    """
    validate_choice("runs", runs, RUNS)
    recipes = recipes_of(posterior)
    if runs == "observed":
        values = posterior.draws(metric, k, estimand, clusters, weighting, shared=shared, tau=tau)
        grouped = values.assign_coords(recipe=("system", recipes)).groupby("recipe").mean("system")
        order = list(dict.fromkeys(recipes.tolist()))
        out = grouped.sel(recipe=order).rename(recipe="system")
        out.attrs = values.attrs
        return out
    if "sigma_run" not in posterior._group("posterior"):  # only logit_normal has a run level
        raise ValueError(
            "runs='new' needs the logit_normal model with a run level (a recipe "
            "with two or more runs): it is about new training seeds, whose "
            "spread only that level estimates; runs='observed' compares these "
            "checkpoints under any model"
        )
    if estimand != "population" or clusters not in (None, "new"):
        raise ValueError(
            "runs='new' takes estimand='population' with new clusters: a new "
            "run is a new checkpoint, with no per-task posterior of its own"
        )
    ks, scalar = metric_ks(metric, k)
    # the model reads the tree, as Posterior.draws lets it
    values = posterior._model.new_run_population(posterior._tree, metric, ks, tau=tau)
    values.attrs = {
        "metric": metric,
        "estimand": estimand,
        "model": posterior.model,
        "clusters": "new",
        "runs": "new",
    }
    return values.isel(k=0) if scalar else values


def run_spread(posterior, *, ci_prob: float = 0.95) -> xr.Dataset:
    """Posterior mean and equal-tailed interval of ``sigma_run``, the spread of training seeds.

    ``sigma_run`` is the sd, on the logit scale, of a recipe's runs around the recipe (the
    run level of ``logit_normal``); it is what makes ``runs="new"`` wider than
    ``runs="observed"``.

    Parameters
    ----------
    posterior : Posterior
        A ``logit_normal`` fit with a run level (data read with ``from_frame(..., run=...)``,
        a recipe with two or more runs).
    ci_prob : float, default 0.95

    Returns
    -------
    xarray.Dataset
        ``sigma_run_mean`` (a scalar) and ``sigma_run_interval`` (on ``ci_bound``), over all
        chains and draws; settings in attrs.

    Examples
    --------
    >>> from bayeval.testing import fake_data, fake_results
    >>> from bayeval.analyses.runs import run_spread
    >>> res = fake_results(fake_data(runs=2), model="logit_normal", draws=100, chains=2)
    >>> out = run_spread(res, ci_prob=0.9)
    >>> out["sigma_run_interval"].dims, bool(out["sigma_run_mean"] > 0)
    (('ci_bound',), True)
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    post = posterior._group("posterior")
    if "sigma_run" not in post:  # only logit_normal has a run level
        raise ValueError(
            "sigma_run is estimated only by the logit_normal model with a run level (data "
            "read with from_frame(..., run=...), a recipe with two or more runs); these "
            f"results are of model={posterior.model!r}"
        )
    draws = post["sigma_run"].values.ravel()
    tail = (1 - ci_prob) / 2
    return xr.Dataset(
        {
            "sigma_run_mean": float(draws.mean()),
            "sigma_run_interval": (
                "ci_bound",
                [float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))],
            ),
        },
        coords={"ci_bound": ["lower", "upper"]},
        attrs={"ci_prob": ci_prob, "ci_kind": "eti", "scale": "logit", "model": posterior.model},
    )


def bootstrap_recipe_effect(
    data,
    candidate,
    baseline,
    *,
    k=1,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    runs="observed",
) -> xr.Dataset:
    """Bootstrap twin of ``Results.compare(candidate, baseline, runs=...)`` for pass@k.

    Each checkpoint's per-task value is the unbiased pass@k of its counts (:func:`bayeval.
    pass_at_k`), on the tasks valid for every checkpoint of both recipes; a recipe's value is
    the mean over its checkpoints of their means over tasks. ``runs="observed"`` resamples
    tasks (or clusters, ``unit="cluster"``), keeping each task's values in every checkpoint
    together (paired); ``runs="new"`` also resamples each recipe's runs with replacement (a
    two-stage bootstrap: with m runs it understates the run variance by about (m - 1) / m).

    Parameters
    ----------
    data : EvalData
        Read with ``from_frame(..., run=...)``.
    candidate, baseline : recipe labels
    k : int, default 1
    unit : {"task", "cluster"}, default "task"
    ci_prob, n_boot, seed
        As in :func:`bayeval.bootstrap.pass_at_k`.
    runs : {"observed", "new"}, default "observed"

    Returns
    -------
    xarray.Dataset
        ``effect`` (the replicates, on ``replicate``), ``effect_mean`` (the effect on the
        data, named as the posterior's), ``effect_interval`` (percentile, on ``ci_bound``),
        ``prob_positive`` (the share of replicates above 0), ``n_tasks`` (the tasks used) and
        ``n_runs`` over ``recipe`` (candidate, baseline); settings in attrs.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayeval as be
    >>> from bayeval.analyses.runs import bootstrap_recipe_effect
    >>> df = pd.DataFrame({"system": ["a"] * 8 + ["b"] * 8,
    ...                    "seed": (["s1"] * 4 + ["s2"] * 4) * 2,
    ...                    "task": ["t1", "t2", "t3", "t4"] * 4,
    ...                    "success": [0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1]})
    >>> data = be.from_frame(df, run="seed")
    >>> out = bootstrap_recipe_effect(data, "b", "a", n_boot=200)
    >>> round(out["effect_mean"].item(), 3)  # (0.75 + 1) / 2 - (0.5 + 0.75) / 2
    0.25
    """
    validate_choice("runs", runs, RUNS)
    validate_choice("unit", unit, ("task", "cluster"))
    ds = data.dataset
    if "recipe" not in ds.coords:
        raise ValueError("a recipe comparison needs data read with from_frame(..., run=...)")
    recipes = np.asarray(ds["recipe"].values, dtype=object)
    members = {r: np.flatnonzero(recipes == r) for r in (candidate, baseline)}
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if not len(members[label]):
            raise ValueError(
                f"{role} {label!r} is not a recipe of the data; recipes: "
                f"{describe_values(list(dict.fromkeys(recipes.tolist())))}"
            )
    c = ds["successes"].values
    n = ds["trials"].values
    if c.ndim == 3:
        raise ValueError(
            "the recipe bootstrap takes one success count per cell; under "
            "missing='bounds' compare each bound's data"
        )
    rows = np.concatenate([members[candidate], members[baseline]])
    valid = (n[rows] >= k).all(axis=0)
    if not valid.any():
        raise ValueError(
            f"no task has at least k={k} valid trials in every checkpoint of "
            f"{candidate!r} and {baseline!r}"
        )
    # the compared checkpoints' per-task values, (checkpoint, task); members as their rows
    values = np.asarray(pass_at_k(n[rows][:, valid], c[rows][:, valid], k), dtype=float)
    n_cand = len(members[candidate])
    members = {candidate: np.arange(n_cand), baseline: np.arange(n_cand, len(rows))}
    if unit == "cluster":
        if not data.has_clusters:
            raise ValueError("unit='cluster' needs task clusters")
        codes = np.unique(ds["cluster"].values[valid].astype(str), return_inverse=True)[1]
    else:
        codes = np.arange(int(valid.sum()))
    groups = [np.flatnonzero(codes == g) for g in range(codes.max() + 1)]
    rng = np.random.default_rng(seed)

    def effect(task_index, run_pick):
        means = values[:, task_index].mean(axis=1)  # each checkpoint's mean over the tasks
        return means[run_pick[candidate]].mean() - means[run_pick[baseline]].mean()

    estimate = effect(np.arange(values.shape[1]), members)
    reps = np.empty(n_boot)
    for b in range(n_boot):
        picked = rng.integers(len(groups), size=len(groups))
        task_index = np.concatenate([groups[g] for g in picked])
        pick = (
            members
            if runs == "observed"
            else {r: rng.choice(members[r], size=len(members[r]), replace=True) for r in members}
        )
        reps[b] = effect(task_index, pick)
    tail = (1 - ci_prob) / 2
    lower, upper = np.quantile(reps, [tail, 1 - tail])
    return xr.Dataset(
        {
            "effect": ("replicate", reps),
            "effect_mean": float(estimate),
            "effect_interval": ("ci_bound", [float(lower), float(upper)]),
            "prob_positive": float((reps > 0).mean()),
            "n_tasks": int(valid.sum()),
            "n_runs": ("recipe", [int(len(members[r])) for r in members]),
        },
        coords={
            "ci_bound": ["lower", "upper"],
            "recipe": np.asarray([str(r) for r in members], dtype=object),
        },
        attrs={
            "candidate": str(candidate),
            "baseline": str(baseline),
            "metric": "pass@k",
            "k": k,
            "runs": runs,
            "unit": unit,
            "n_boot": int(n_boot),
            "ci_prob": ci_prob,
        },
    )
