"""Recipes and their training runs: a recipe's metric over its observed runs or a new one.

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

from bayeval._validate import describe_values, validate_choice

RUNS = ("new", "observed")


def recipes_of(results) -> np.ndarray:
    """Each system's recipe, or a clear refusal for data without runs."""
    obs = results.tree["observed_data"]
    if "recipe" not in obs.coords:
        raise ValueError("runs= compares recipes: read the data with from_frame(..., run=...) "
                         "so that each system is a (recipe, run) checkpoint")
    return np.asarray(obs["recipe"].values, dtype=object)


def check_recipes(results, candidate, baseline) -> list:
    """The checkpoints of the two recipes (for the harness check and shared tasks)."""
    recipes = recipes_of(results)
    known = list(dict.fromkeys(recipes.tolist()))
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in known:
            raise ValueError(f"{role} {label!r} is not a recipe of these results; recipes: "
                             f"{describe_values(known)}")
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different recipes")
    systems = np.asarray(results.systems, dtype=object)
    return systems[np.isin(recipes, [candidate, baseline])].tolist()


def recipe_values(results, metric, k, estimand, clusters, weighting, runs, shared=None,
                  tau=None) -> xr.DataArray:
    """Draws of each recipe's metric, over a ``system`` dim holding the recipes."""
    validate_choice("runs", runs, RUNS)
    recipes = recipes_of(results)
    if runs == "observed":
        values = results._metric(metric, k, estimand, clusters, weighting, shared=shared,
                                 tau=tau)
        grouped = values.assign_coords(recipe=("system", recipes)).groupby("recipe").mean(
            "system")
        order = list(dict.fromkeys(recipes.tolist()))
        out = grouped.sel(recipe=order).rename(recipe="system")
        out.attrs = values.attrs
        return out
    if results.model != "logit_normal" or "sigma_run" not in results.tree["posterior"]:
        raise ValueError("runs='new' needs the logit_normal model with a run level (a recipe "
                         "with two or more runs): it is about new training seeds, whose "
                         "spread only that level estimates; runs='observed' compares these "
                         "checkpoints under any model")
    if estimand != "population" or clusters not in (None, "new"):
        raise ValueError("runs='new' takes estimand='population' with new clusters: a new "
                         "run is a new checkpoint, with no per-task posterior of its own")
    from bayeval.estimators import metric_ks

    ks, scalar = metric_ks(metric, k)
    values = results._model.new_run_population(results.tree, metric, ks, tau=tau)
    values.attrs = {"metric": metric, "estimand": estimand, "model": results.model,
                    "clusters": "new", "runs": "new"}
    return values.isel(k=0) if scalar else values
