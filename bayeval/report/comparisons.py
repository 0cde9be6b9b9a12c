"""The report's comparisons: each pair's effect, decision and power beside the paired bootstraps.

And the multiplicity family. The power section plans from the spread of the paired per-task
differences, :func:`bayeval.planning.paired_task_sd`.
"""

from __future__ import annotations

import numpy as np

from bayeval import bootstrap
from bayeval._validate import describe_values
from bayeval.analyses.crosscheck import bootstrap_twin
from bayeval.data.clusters import estimand_words
from bayeval.planning import adjust_pvalues, noninferiority, paired_task_sd, required_units
from bayeval.report._systems import _resampled_clusters, _score_twin
from bayeval.report._values import _at, _bounds, _num

__all__ = ["DEFAULT_POWER_EFFECTS"]

#: Effects of the power analysis when no margin or effects are declared.
DEFAULT_POWER_EFFECTS = (0.01, 0.02, 0.05)


def _check_comparisons(comparisons, systems) -> list[tuple]:
    if isinstance(comparisons, (str, bytes)) or not hasattr(comparisons, "__iter__"):
        raise TypeError(
            f"comparisons must be a sequence of (candidate, baseline) pairs; got {comparisons!r}"
        )
    pairs = []
    for item in comparisons:
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
            raise ValueError(f"each comparison must be a (candidate, baseline) pair; got {item!r}")
        candidate, baseline = item
        for role, label in (("candidate", candidate), ("baseline", baseline)):
            if label not in systems:
                raise ValueError(
                    f"comparison {tuple(item)!r}: {role} {label!r} is not a "
                    f"system of these results; systems: {describe_values(systems)}"
                )
        if candidate == baseline:
            raise ValueError(
                f"comparison {tuple(item)!r}: candidate and baseline must be different systems"
            )
        pairs.append((candidate, baseline))
    if len(set(pairs)) != len(pairs):
        raise ValueError(f"comparisons repeat a pair: {pairs}")
    return pairs


def _unit_words(options: dict, data) -> str:
    """What a bootstrap resamples, then the estimand it is the twin of, in the shared words."""
    unit = options["unit"]
    ds = data.dataset
    n_tasks = int(ds.sizes["task"])
    n_clusters = len(np.unique(ds["cluster"].values.astype(str))) if data.has_clusters else 0
    weighting = options.get("weighting", "task")
    if unit == "trial":
        how, estimand, clusters = "trials resampled within fixed tasks", "tasks", None
    elif unit == "cluster":
        each = "each weighing the same" if weighting == "cluster" else "keeping their sizes"
        how, estimand, clusters = f"clusters resampled, {each}", "population", "new"
    elif options.get("clusters") == "observed":
        how, estimand, clusters = "tasks resampled within their clusters", "population", "observed"
    else:
        how, estimand, clusters, n_clusters = "tasks resampled", "population", None, 0
    words = estimand_words(
        estimand, clusters=clusters, weighting=weighting, n_tasks=n_tasks, n_clusters=n_clusters
    )
    return f"{how} ({words})"


def _bootstrap_designs(results, estimand: str, population=None) -> list[dict]:
    """Bootstrap settings of the comparisons: the estimand's twin first, then the others.

    The twin is the one :func:`bayeval.crosscheck` pairs with the estimand (and
    ``population``, its clusters and weighting); under the population estimand the task
    bootstrap and (with two or more clusters nested in the strata) the cluster bootstrap are
    shown beside it. The mean score of a fit of scores has its population twin (tasks, or
    clusters) under either estimand: under ``"tasks"`` no design is the twin (``twin=False``).
    """
    population = population or {}
    if results.data.has_scores:  # the mean score: no trial bootstrap (see _score_twin)
        twin = _score_twin(results, "population", population)
        assert twin is not None  # only the tasks estimand has no twin
        designs = [dict(twin, twin=estimand == "population")]
        if twin["unit"] != "task":
            designs.append({"unit": "task", "twin": False})
        return designs
    twin = bootstrap_twin(
        results, estimand, **(population if estimand == "population" else {})
    ).attrs
    designs = [dict(twin)]
    if estimand == "population":
        n_clusters, _ = _resampled_clusters(results.data)
        if twin["unit"] != "task":
            designs.append({"unit": "task"})
        if twin["unit"] != "cluster" and n_clusters >= 2:
            designs.append({"unit": "cluster"})
    return designs


def _effect_rows(comparison, estimate_name: str, bayesian: bool) -> list[dict]:
    rows = []
    for bound in _bounds(comparison[estimate_name]):
        cell = _at(comparison, bound)
        row = {
            "missing_bound": bound,
            "effect": _num(cell[estimate_name]),
            "lower": _num(cell["effect_interval"].sel(ci_bound="lower")),
            "upper": _num(cell["effect_interval"].sel(ci_bound="upper")),
            "prob_positive": _num(cell["prob_positive"]),
            "prob_above_margin": _num(cell["prob_above_margin"]),
            "prob_noninferior": _num(cell["prob_noninferior"]),
        }
        if not bayesian:
            row["p_value"] = _num(cell["p_value"])  # resampling.bootstrap_p_value
        rows.append(row)
    return rows


def _decision(decision) -> dict:
    """The record of a :func:`bayeval.planning.decide` result, in the order the JSON keeps."""
    attrs = decision.attrs
    out: dict = {"decision": attrs["decision"]}
    out["prob_pass"] = _num(decision["prob_pass"])
    out["prob_fail"] = _num(decision["prob_fail"])
    for key in ("margin", "prob"):
        out[key] = _num(attrs[key])
    out["test"] = attrs["test"]
    out["threshold"] = _num(attrs["threshold"])
    out["sided"] = attrs["sided"]
    for key in ("lower", "upper", "p_value", "p_value_fail"):
        out[key] = _num(decision[key])
    out["source"] = attrs["source"]
    out["gates_failed"] = list(attrs["gates_failed"])
    out["gates_note"] = attrs["gates_note"] or None
    out["passed"] = bool(decision["passed"])
    out["decided"] = bool(decision["decided"])
    out["statement"] = attrs["statement"]
    return out


def _power_section(
    data, candidate, baseline, metric, k, margin, effects, alpha, power, family_size
) -> dict:
    spread = paired_task_sd(data, candidate, baseline, metric=metric, k=k)
    sd = float(spread["sd"])
    declared = margin > 0
    effects = (
        (margin,)
        if declared and effects is None
        else (tuple(DEFAULT_POWER_EFFECTS) if effects is None else tuple(effects))
    )
    alphas = [alpha] + ([alpha / family_size] if family_size > 1 else [])
    rows = []
    for effect in effects:
        for level in alphas:
            needed, reason = None, None
            if not (np.isfinite(sd) and sd > 0):
                reason = "the paired per-task differences have no spread"
            else:
                needed = required_units(sd, float(effect), alpha=level, power=power, paired=True)
            rows.append(
                {
                    "effect": _num(effect),
                    "alpha": _num(level),
                    "tasks_needed": needed,
                    "reason": reason,
                }
            )
    by_bound = spread.get("sd_by_bound")
    return {
        "sd": _num(sd),
        "sd_by_bound": None if by_bound is None else [_num(s) for s in by_bound.values],
        "shared_tasks": int(spread["n_shared_tasks"]),
        "mean_trials": [
            {"system": str(name), "mean_trials": _num(spread["mean_trials"].sel(system=name))}
            for name in (candidate, baseline)
        ],
        "effects_from": "margin" if declared and effects == (margin,) else "declared effects",
        "power": _num(power),
        "alpha": _num(alpha),
        "test": "paired t-test (two-sided)",
        "rows": rows,
    }


def _comparisons_section(
    results,
    pairs,
    metric,
    k,
    estimand,
    margin,
    prob,
    superior,
    n_boot,
    seed,
    ci_prob,
    power_effects,
    alpha,
    power,
    allow_harness_change=False,
    population=None,
) -> list[dict]:
    data = results.data
    population = population or {}
    designs = _bootstrap_designs(results, estimand, population)
    options = population if estimand == "population" else {}
    ds = data.dataset
    n_clusters = len(np.unique(ds["cluster"].values.astype(str))) if data.has_clusters else 0
    words = estimand_words(
        estimand,
        clusters=options.get("clusters"),
        weighting=options.get("weighting", "task"),
        n_tasks=int(ds.sizes["task"]),
        n_clusters=n_clusters,
    )
    out = []
    for candidate, baseline in pairs:
        cmp = results.compare(
            candidate,
            baseline,
            metric=metric,
            k=k,
            estimand=estimand,
            margin=margin,
            ci_prob=ci_prob,
            allow_harness_change=allow_harness_change,
            **options,
        )
        entry = {
            "label": f"{candidate} - {baseline}",
            "candidate": candidate,
            "baseline": baseline,
            "metric": metric,
            "k": int(k),
            "estimand": estimand,
            "estimand_words": words,
            "clusters": options.get("clusters"),
            "weighting": options.get("weighting"),
            "margin": _num(margin),
            "prob": _num(prob),
            "test": "superiority" if superior else "non-inferiority",
            "bayes": {
                "paired": "yes" if cmp.attrs["paired"] else f"no: {cmp.attrs['paired_note']}",
                # the MCMC gates the comparison's fit failed: its rows are flagged
                "gates_failed": list(cmp.attrs["gates_failed"]),
                "rows": _effect_rows(cmp, "effect_mean", bayesian=True),
                "decision": _decision(
                    noninferiority(cmp, margin=margin, prob=prob, superior=superior)
                ),
            },
            "bootstrap": [],
            "primary_unit": designs[0]["unit"],
            "harness": {
                "status": cmp.attrs["harness_status"],
                "note": cmp.attrs["harness_note"] or None,
            },
        }
        for i, design in enumerate(designs):
            design = dict(design)
            is_twin = design.pop("twin", i == 0)
            boot = bootstrap.compare(
                data,
                candidate,
                baseline,
                k=k,
                n_boot=n_boot,
                seed=seed,
                metric=metric,
                margin=margin,
                ci_prob=ci_prob,
                allow_harness_change=allow_harness_change,
                **design,
            )
            rows = _effect_rows(boot, "effect_mean", bayesian=False)
            entry["bootstrap"].append(
                {
                    "unit": design["unit"],
                    "weighting": design.get("weighting", "task"),
                    "clusters": design.get("clusters"),
                    "twin": is_twin,
                    "meaning": _unit_words(design, data),
                    "note": boot.attrs.get("decision_note"),
                    "n_shared_tasks": int(boot.attrs["n_shared_tasks"]),
                    "n_unshared_tasks": int(boot.attrs["n_unshared_tasks"]),
                    "rows": rows,
                    "p_value": (
                        None
                        if any(r["p_value"] is None for r in rows)
                        else max(r["p_value"] for r in rows)
                    ),
                    "decision": _decision(
                        noninferiority(boot, margin=margin, prob=prob, superior=superior)
                    ),
                }
            )
        out.append(entry)
    for entry in out:
        entry["power"] = _power_section(
            data,
            entry["candidate"],
            entry["baseline"],
            metric,
            k,
            margin,
            power_effects,
            alpha,
            power,
            len(out),
        )
    return out


def _multiplicity_section(comparisons, method) -> dict | None:
    if not comparisons:
        return None
    p_values = []
    for entry in comparisons:
        primary = next((b for b in entry["bootstrap"] if b["twin"]), entry["bootstrap"][0])
        p_values.append(primary["p_value"])
    finite = [p for p in p_values if p is not None]
    adjusted = [None] * len(p_values)
    if len(finite) == len(p_values):
        adjusted = [_num(p) for p in adjust_pvalues(p_values, method=method)]
    return {
        "family": [entry["label"] for entry in comparisons],
        "size": len(comparisons),
        "method": method,
        "units": [entry["primary_unit"] for entry in comparisons],
        "p_value_source": (
            "two-sided percentile-bootstrap p-value of no effect from the paired bootstrap "
            "that is the twin of the estimand (the first one shown where none is, as for the "
            "mean score's tasks estimand): 2 (1 + min(replicates at or below 0, replicates "
            "at or above 0)) / (B + 1), a replicate at exactly 0 counting for the null on "
            "both sides; under missing='bounds' the larger of the two bounds' p-values"
        ),
        "p_values": [_num(p) for p in p_values],
        "adjusted": adjusted,
    }
