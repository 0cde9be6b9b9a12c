"""The report's optional sections.

Cost and latency tables, recipe comparisons across training runs, effects over k, clean versus
flagged tasks and a harness canary.

Each is read from the fit (or its data) by the functions that compute it, as plain data; the
``bayeval`` command adds a section where its options ask for it.
"""

from __future__ import annotations

import json

from bayeval import bootstrap
from bayeval.analyses.cost import K_STATISTICS, RATE_STATUSES
from bayeval.analyses.crosscheck import bootstrap_twin
from bayeval.analyses.curves import reversal_tasks
from bayeval.analyses.latency import LATENCY_RATES, latency_table
from bayeval.analyses.runs import bootstrap_recipe_effect, run_spread
from bayeval.analyses.tradeoff import evidence
from bayeval.harness import canary
from bayeval.report._format import _metric_name
from bayeval.report._values import _num

__all__ = [
    "canary_section",
    "contamination_section",
    "curves_section",
    "evidence_record",
    "latency_record",
    "recipes_section",
]


def _cost_section(
    results, column, reference, pairs, ks, n_boot, seed, ci_prob, model="bayesian_bootstrap"
):
    """The cost-success evidence table, or None without a cost column."""
    if column is None:
        return None
    if results.data.missing == "bounds":
        raise ValueError(
            "the cost table needs one success count per attempt; under "
            "missing='bounds' the successes have two extremes: use missing='fail' "
            "or 'exclude'"
        )
    if reference is None and pairs:
        reference = pairs[0][1]
    table = evidence(
        results,
        column,
        k=ks,
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        reference=reference,
        model=model,
    )
    section = evidence_record(table)
    order = sorted(
        range(len(section["rows"])),
        key=lambda i: -(section["rows"][i]["pass_at_1_bayes_mean"] or 0.0),
    )
    section["rows"] = [section["rows"][i] for i in order]
    return section


def evidence_record(table) -> dict:
    """The cost-success evidence table of :func:`bayeval.analyses.tradeoff.evidence` as plain data.

    Parameters
    ----------
    table : xarray.Dataset
        The output of :func:`~bayeval.analyses.tradeoff.evidence`.

    Returns
    -------
    dict
        ``column``, ``cost_model``, ``reference``, ``k``, ``pass_k``, ``bootstrap_k``,
        ``unit``, ``n_draws``, ``cost_misfit`` (the flagged systems), ``frontier`` (its axes
        and each side's systems), ``rows`` (one per system, in the table's order: each
        quantity's posterior mean and interval and bootstrap estimate and interval, the
        table's pass@k at ``pass_k`` where it is above 1, the frontier, the status rates and
        the likeliest dominating system), ``dominance`` (every ordered pair) and ``budget``
        (per system and k).
    """
    systems = table["system"].values.tolist()
    pass_k = int(table.attrs["pass_k"])
    rows = []
    for system in systems:
        part = table.sel(system=system)
        row: dict[str, object] = {"system": str(system)}
        for prefix in ("bayes", "bootstrap"):
            for name in ("pass_at_1", "cost_per_attempt", "cost_per_success"):
                row.update({f"{name}_{key}": v for key, v in _pair(part, name, prefix).items()})
            if pass_k > 1:
                pass_at_k = _pair(part.sel(k=pass_k), "pass_at_k", prefix)
            else:
                pass_at_k = dict.fromkeys(_pair(part, "pass_at_1", prefix), None)
            row.update({f"pass_at_k_{key}": v for key, v in pass_at_k.items()})
            effect = _pair(part, "effect", prefix)
            effect[f"{prefix}_prob_positive"] = _num(part[f"effect_{prefix}_prob_positive"])
            row.update({f"effect_{key}": v for key, v in effect.items()})
            row[f"on_frontier_{prefix}"] = bool(part[f"on_frontier_{prefix}"])
            row[f"prob_on_frontier_{prefix}"] = _num(part[f"prob_on_frontier_{prefix}"])
        for status in RATE_STATUSES:
            row[f"{status}_rate"] = _num(part[f"{status}_rate"])
        other = part["dominated_by"].item()
        row["dominated_by"] = None if other is None else str(other)
        row["prob_dominated_bayes"] = _num(part["prob_dominated_bayes"])
        row["prob_dominated_bootstrap"] = _num(part["prob_dominated_bootstrap"])
        rows.append(row)
    dominance = [
        {
            "candidate": str(a),
            "baseline": str(b),
            **{
                prefix: _num(table[f"prob_dominates_{prefix}"].sel(candidate=a, baseline=b))
                for prefix in ("bayes", "bootstrap")
            },
        }
        for a in systems
        for b in systems
        if a != b
    ]
    budget = []
    for system in systems:
        for kk in table["k"].values:
            part = table.sel(system=system, k=kk)
            entry: dict[str, object] = {"system": str(system), "k": int(kk)}
            for name in K_STATISTICS:
                for prefix in ("bayes", "bootstrap"):
                    entry.update(
                        {f"{name}_{key}": v for key, v in _pair(part, name, prefix).items()}
                    )
            budget.append(entry)
    attrs = table.attrs
    misfit = table["cost_misfit"].values
    return {
        "column": attrs["column"],
        "cost_model": attrs["cost_model"],
        "reference": attrs["reference"],
        "k": [int(v) for v in table["k"].values],
        "pass_k": pass_k,
        "bootstrap_k": [int(v) for v in attrs["bootstrap_k"]],
        "unit": attrs["unit"],
        "n_draws": int(attrs["n_draws"]),
        "cost_misfit": [str(s) for s, bad in zip(systems, misfit, strict=True) if bad],
        "frontier": {
            "cost": attrs["frontier_cost"],
            "success": attrs["frontier_success"],
            "bayes": list(attrs["frontier_bayes"]),
            "bootstrap": list(attrs["frontier_bootstrap"]),
        },
        "rows": rows,
        "dominance": dominance,
        "budget": budget,
    }


def _latency_section(results, wanted, n_boot, seed, ci_prob):
    """The latency table (p50 and p95 per system), or None when not asked for."""
    if not wanted:
        return None
    table = latency_table(
        results.data,
        q=(0.5, 0.95),
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        model="lognormal" if wanted is True else wanted,
    )
    return latency_record(table)


def _pair(ds, name, prefix) -> dict:
    """``<prefix>_mean`` (``bayes``) or ``<prefix>_estimate``, ``_lower``, ``_upper`` of a cell.

    From ``<name>_<prefix>_<mean|estimate>`` and ``<name>_<prefix>_interval`` in ``ds``.
    """
    key = "mean" if prefix == "bayes" else "estimate"
    low, high = ds[f"{name}_{prefix}_interval"].values
    return {
        f"{prefix}_{key}": _num(ds[f"{name}_{prefix}_{key}"]),
        f"{prefix}_lower": _num(low),
        f"{prefix}_upper": _num(high),
    }


def latency_record(table) -> dict:
    """The latency table of :func:`bayeval.analyses.latency.latency_table` as plain data.

    Parameters
    ----------
    table : xarray.Dataset
        The output of :func:`~bayeval.analyses.latency.latency_table`.

    Returns
    -------
    dict
        ``columns``, ``units``, ``q``, ``unit``, ``statuses``, ``n_boot``, ``n_draws``,
        ``ci_prob``, ``bayes_model``, ``bayes_method`` and ``rows``: per system
        ``n_latency``, ``n_attempts``, ``quantiles`` (each ``q`` with the posterior's mean and
        interval and the bootstrap's estimate and interval), ``lognormal_check``
        (``task_means_p`` and ``misfit``; None where the model has no check or the system no
        duration) and the ``timeout_rate`` and ``error_rate`` the same way.
    """
    rows = []
    for system in table["system"].values:
        part = table.sel(system=system)
        quantiles = []
        for level in table["quantile"].values:
            cell = part.sel(quantile=level)
            quantiles.append(
                {
                    "q": float(level),
                    **_pair(cell, "latency", "bayes"),
                    **_pair(cell, "latency", "bootstrap"),
                }
            )
        row = {
            "system": str(system),
            "n_latency": int(part["n_latency"]),
            "n_attempts": int(part["n_attempts"]),
            "quantiles": quantiles,
            "lognormal_check": None,
        }
        if "misfit" in table and row["n_latency"]:
            row["lognormal_check"] = {
                "task_means_p": _num(part["task_means_p"]),
                "misfit": bool(part["misfit"]),
            }
        for status in LATENCY_RATES:
            name = f"{status}_rate"
            row[name] = {**_pair(part, name, "bayes"), **_pair(part, name, "bootstrap")}
        rows.append(row)
    attrs = table.attrs
    return {
        "columns": json.loads(attrs["latency_columns"]),
        "units": attrs["units"],
        "q": [float(v) for v in table["quantile"].values],
        "unit": attrs["unit"],
        "statuses": list(attrs["statuses"]),
        "n_boot": int(attrs["n_boot"]),
        "n_draws": int(attrs["n_draws"]),
        "ci_prob": float(attrs["ci_prob"]),
        "bayes_model": attrs["bayes_model"],
        "bayes_method": attrs["bayes_method"],
        "rows": rows,
    }


def recipes_section(
    results, pairs, *, runs, k, estimand, margin, ci_prob, n_boot, seed, allow_harness_change
) -> dict:
    """Each recipe comparison across training runs, posterior beside bootstrap.

    The posterior is ``Results.compare(..., runs=)``; beside it the paired task bootstrap of
    :func:`bayeval.analyses.runs.bootstrap_recipe_effect`.

    Parameters
    ----------
    results : Results
        A fit of data read with a run column (each system a recipe's checkpoint).
    pairs : sequence of (candidate, baseline)
        Recipes.
    runs : {"observed", "new"}
        These checkpoints, or a new training run of each recipe.
    k, estimand, margin, ci_prob, n_boot, seed, allow_harness_change
        As in :meth:`bayeval.Results.compare` and the bootstrap.

    Returns
    -------
    dict
        ``runs``, ``k``, ``estimand``, ``margin``, ``model``, ``sigma_run`` (the run spread's
        posterior mean and interval, where the model has it), ``rows`` (one per pair),
        ``bootstrap`` (its design in words) and ``n_boot``.
    """
    rows = []
    for candidate, baseline in pairs:
        out = results.compare(
            candidate,
            baseline,
            k=k,
            estimand=estimand,
            margin=margin,
            ci_prob=ci_prob,
            runs=runs,
            allow_harness_change=allow_harness_change,
        )
        boot = bootstrap_recipe_effect(
            results.data,
            candidate,
            baseline,
            runs=runs,
            k=k,
            n_boot=n_boot,
            seed=seed,
            ci_prob=ci_prob,
        )
        lower, upper = out["effect_interval"].values.tolist()
        boot_lower, boot_upper = boot["effect_interval"].values.tolist()
        rows.append(
            {
                "candidate": str(candidate),
                "baseline": str(baseline),
                "checkpoints": [str(s) for s in out.attrs["checkpoints"]],
                "runs_per_recipe": dict(
                    zip(boot["recipe"].values.tolist(), boot["n_runs"].values.tolist(), strict=True)
                ),
                "bayes_mean": _num(out["effect_mean"]),
                "bayes_lower": _num(lower),
                "bayes_upper": _num(upper),
                "prob_positive": _num(out["prob_positive"]),
                "prob_above_margin": _num(out["prob_above_margin"]),
                "bootstrap_estimate": boot["effect_mean"].item(),
                "bootstrap_lower": boot_lower,
                "bootstrap_upper": boot_upper,
                "bootstrap_n_tasks": boot["n_tasks"].item(),
            }
        )
    sigma_run = None
    if "sigma_run" in results.tree["posterior"]:  # only logit_normal has a run level
        spread = run_spread(results, ci_prob=ci_prob)
        sigma_run = {
            "mean": spread["sigma_run_mean"].item(),
            "lower": spread["sigma_run_interval"].sel(ci_bound="lower").item(),
            "upper": spread["sigma_run_interval"].sel(ci_bound="upper").item(),
        }
    return {
        "runs": runs,
        "k": int(k),
        "estimand": estimand,
        "margin": float(margin),
        "model": results.model,
        "sigma_run": sigma_run,
        "rows": rows,
        "bootstrap": (
            "paired task bootstrap"
            if runs == "observed"
            else "paired task bootstrap with each recipe's runs resampled"
        ),
        "n_boot": int(n_boot),
    }


def curves_section(results, pairs, *, k, metric, estimand, ci_prob, n_boot, seed) -> dict:
    """Each compared pair's effect over k values, posterior beside the paired bootstrap.

    The posterior (:meth:`bayeval.Results.compare_curve`) gives pointwise intervals and a
    simultaneous band, the posterior of the k where the curves cross and the tasks behind a
    reversal; beside it the paired bootstrap of the curve (``bootstrap.compare_curve``) over
    the estimand's twin unit (tasks where the twin is the trial bootstrap, which has no curve).

    Parameters
    ----------
    results : Results
    pairs : sequence of (candidate, baseline)
    k : sequence of int
        The k values, in any order (a curve runs from the smallest).
    metric, estimand, ci_prob, n_boot, seed
        As in :meth:`bayeval.Results.compare_curve` and the bootstrap.

    Returns
    -------
    dict
        ``metric``, ``estimand``, ``k``, ``model``, ``band``, ``bootstrap`` (its design in
        words), ``n_boot`` and ``rows`` (one per pair, each with its ``points`` over k).
    """
    twin = bootstrap_twin(results, estimand).attrs["unit"]
    unit = twin if twin in ("task", "cluster") else "task"
    num = _num
    k = sorted(k)
    rows = []
    for candidate, baseline in pairs:
        curve = results.compare_curve(
            candidate, baseline, k=list(k), metric=metric, estimand=estimand, ci_prob=ci_prob
        )
        boot = bootstrap.compare_curve(
            results.data,
            candidate,
            baseline,
            k=list(k),
            metric=metric,
            unit=unit,
            n_boot=n_boot,
            ci_prob=ci_prob,
            seed=seed,
        )
        points = []
        for i, kk in enumerate(curve["k"].values):
            interval, band = curve["effect_interval"].values[i], curve["effect_band"].values[i]
            b_interval, b_band = boot["effect_interval"].values[i], boot["effect_band"].values[i]
            points.append(
                {
                    "k": int(kk),
                    "bayes_mean": num(curve["effect_mean"].values[i]),
                    "bayes_lower": num(interval[0]),
                    "bayes_upper": num(interval[1]),
                    "band_lower": num(band[0]),
                    "band_upper": num(band[1]),
                    "prob_positive": num(curve["prob_positive"].values[i]),
                    "bootstrap_estimate": num(boot["effect"].values[i]),
                    "bootstrap_lower": num(b_interval[0]),
                    "bootstrap_upper": num(b_interval[1]),
                    "bootstrap_band_lower": num(b_band[0]),
                    "bootstrap_band_upper": num(b_band[1]),
                }
            )
        crossing = curve["crossing_interval"].values
        tasks = reversal_tasks(curve, top=5)
        rows.append(
            {
                "candidate": str(candidate),
                "baseline": str(baseline),
                "points": points,
                "prob_cross": num(curve["prob_cross"]),
                "crossing_lower": num(crossing[0]),
                "crossing_upper": num(crossing[1]),
                "reversal_tasks": [
                    {"task": str(t), "change": num(c)}
                    for t, c in zip(tasks["task"], tasks["change"], strict=True)
                ],
            }
        )
    return {
        "metric": metric,
        "estimand": estimand,
        "k": [int(v) for v in k],
        "model": results.model,
        "band": "simultaneous over k (sup-t)",
        "bootstrap": f"paired {unit} bootstrap"
        + ("" if twin == unit else f" (the {twin} bootstrap, this estimand's twin, has no curve)"),
        "n_boot": int(n_boot),
        "rows": rows,
    }


def contamination_section(results, flagged, *, file, metric, k, ci_prob, **fit) -> dict:
    """Clean versus flagged tasks (:meth:`bayeval.Results.compare_subsets`), as plain data.

    Parameters
    ----------
    results : Results
    flagged : sequence
        Task labels flagged by a contamination check.
    file : str or os.PathLike
        The file the flags were read from, recorded.
    metric, k, ci_prob
        The metric compared on each subset.
    **fit
        Fitting options of each subset's fit (``draws=``, ``chains=``, ``seed=``, ...).

    Returns
    -------
    dict
        ``file``, ``n_flagged``, ``n_clean``, ``estimand``, ``reading``, ``metric`` (its
        name), ``subsets`` and ``rows`` (one per system: each subset's score, the flagged -
        clean difference and the inflation of the score on all tasks).
    """
    out = results.compare_subsets(
        flagged, metric=metric, k=k, estimand="tasks", ci_prob=ci_prob, **fit
    )
    rows = []
    for system in out["system"].values:
        part = out.sel(system=system)
        row: dict[str, str | float] = {"system": str(system)}
        for subset in out["subset"].values:
            row[f"{subset}_mean"] = float(part["score_mean"].sel(subset=subset))
            low, high = part["score_interval"].sel(subset=subset).values
            row[f"{subset}_lower"], row[f"{subset}_upper"] = float(low), float(high)
        row["difference_mean"] = float(part["difference_mean"])
        row["difference_lower"], row["difference_upper"] = (
            float(v) for v in part["difference_interval"].values
        )
        row["inflation_mean"] = float(part["inflation_mean"])
        rows.append(row)
    return {
        "file": str(file),
        "n_flagged": int(out.attrs["n_flagged"]),
        "n_clean": int(out.attrs["n_clean"]),
        "estimand": out.attrs["estimand"],
        "reading": out.attrs["reading_note"],
        "metric": _metric_name(metric, k),
        "subsets": [str(s) for s in out["subset"].values],
        "rows": rows,
    }


def canary_section(data, old, new, *, margin, metric, k, ci_prob, **fit) -> dict:
    """A fixed reference policy's change between its runs under two harnesses, as plain data.

    Parameters
    ----------
    data : EvalData
        Data holding the canary's two runs as systems ``old`` and ``new``.
    old, new : system labels
        The canary under the old and the new harness.
    margin : float
        Largest change (absolute) that counts as not moved.
    metric, k, ci_prob
        As in :func:`bayeval.harness.canary`.
    **fit
        Fitting options of the canary's fit (``draws=``, ``chains=``, ``seed=``, ...).

    Returns
    -------
    dict
        ``old``, ``new``, ``margin``, ``change`` (posterior mean) with its ``lower`` and
        ``upper`` bounds, ``verdict``, ``rule`` and ``prob_within_margin``.
    """
    out = canary(
        data.sel(system=[old, new]),
        canary=f"{old} -> {new}",
        baseline=old,
        candidate=new,
        margin=margin,
        metric=metric,
        k=k,
        ci_prob=ci_prob,
        **fit,
    )
    lower, upper = (float(v) for v in out["effect_interval"].values)
    return {
        "old": old,
        "new": new,
        "margin": margin,
        "change": float(out["effect_mean"]),
        "lower": lower,
        "upper": upper,
        "verdict": out.attrs["verdict"],
        "rule": out.attrs.get("verdict_rule"),
        "prob_within_margin": float(out["prob_within_margin"]),
    }
