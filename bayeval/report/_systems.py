"""The report's sections about the data and each system.

What was read, the estimand in words, each system's metrics beside their bootstrap twins, the task
split and the fit's diagnostics.
"""

from __future__ import annotations

import json

import numpy as np

from bayeval import bootstrap
from bayeval.analyses.crosscheck import bootstrap_twin, crosscheck, interval_widths
from bayeval.data import EvalData
from bayeval.data.clusters import estimand_words
from bayeval.estimators import METRICS, design_effect, measured_order, trial_counts
from bayeval.inference import GATES, gate_attrs
from bayeval.planning import selection_bias
from bayeval.posterior import credible_interval as posterior_interval
from bayeval.report._values import _at, _bounds, _label, _num
from bayeval.results import Results

#: What a trial-bootstrap row says where its system has one trial per task.
_ONE_TRIAL_NOTE = "one trial per task, which the trial bootstrap resamples onto itself"


def _estimand_words(estimand: str, n_tasks: int, n_clusters: int | None, population: dict) -> str:
    """The estimand in the words every output uses, then what it means.

    ``population`` holds the population's ``clusters`` and ``weighting`` as the fit resolves
    them (empty for a model without cluster effects).
    """
    words = estimand_words(
        estimand,
        clusters=population.get("clusters"),
        weighting=population.get("weighting", "task"),
        n_tasks=n_tasks,
        n_clusters=n_clusters or 0,
    )
    if estimand == "tasks":
        return (
            f"{words}: the mean over exactly these tasks. The tasks are fixed; only the "
            "sampling of episodes (trials) is random. It says how the systems did on this "
            "benchmark, not how they would do on other tasks."
        )
    if not n_clusters:
        return (
            f"{words}: the expected value on a new task drawn from the same population as "
            "these tasks. Tasks are the random units; it says how the systems would do on "
            "tasks like these."
        )
    if "clusters" not in population:
        return (
            f"{words}: the expected value on a new task drawn from the same population as "
            "these tasks. Tasks are the random units. The model does not use the task "
            "clusters: its new task comes from clusters like the observed ones; the cluster "
            "bootstrap, shown next to it, asks about new clusters."
        )
    if population["clusters"] == "new":
        return (
            f"{words}: the expected value on a new task from a new cluster, drawn like these "
            f"{n_tasks} tasks in {n_clusters} clusters. Clusters and tasks are the random "
            "units; it says how the systems would do on tasks like these from groups "
            "(repositories, families) not seen here."
        )
    weights = (
        "in their proportions: the population whose mean the benchmark's own score (the "
        "mean over its tasks) estimates"
        if population["weighting"] == "task"
        else "every cluster counting the same whatever its size"
    )
    return (
        f"{words}: the expected value on such a task. Tasks are the random units; the "
        f"clusters are the ones observed, {weights}. It says nothing of clusters not seen "
        "here."
    )


def _one_bound(data, bound):
    """The data at one missing-outcome bound (``bound=None``: the data itself)."""
    if bound is None:
        return data
    ds = data.dataset.copy(deep=True)
    ds["successes"] = ds["successes"].sel(missing_bound=bound, drop=True)
    return EvalData(ds.drop_vars("missing_bound", errors="ignore"))


def _data_section(results: Results) -> dict:
    data = results.data
    ds = data.dataset
    systems = results.systems
    attempts = ds["status_counts"].sum("status").values
    status = data.status_counts
    coverage = data.coverage
    clusters = None
    if data.has_clusters:
        sizes = ds["cluster"].to_series().value_counts()
        clusters = {
            "count": len(sizes),
            "sizes": [{"cluster": str(_label(c)), "tasks": int(n)} for c, n in sizes.items()],
        }
    strata = None
    if data.has_strata:
        strata = [{"stratum": str(k), "weight": _num(v)} for k, v in data.stratum_weights.items()]
    deff_rows = []
    # the design effect is one of 0/1 outcomes: for scores it would describe full credit only
    for bound in [] if data.has_scores else _bounds(ds["successes"]):
        deff = design_effect(_one_bound(data, bound))
        for system in systems:
            part = deff.sel(system=system)
            deff_rows.append(
                {
                    "system": system,
                    "missing_bound": bound,
                    **{
                        name: _num(part[name])
                        for name in ("icc", "design_effect", "mean_trials", "effective_trials")
                    },
                }
            )
    counts = trial_counts(data)
    return {
        "n_systems": len(systems),
        "systems": list(systems),
        "n_tasks": int(ds.sizes["task"]),
        "clusters": clusters,
        "strata": strata,
        "trials_per_task": {
            "min": _num(counts["min_trials"].item()),
            "median": _num(counts["median_trials"].item()),
            "max": _num(counts["max_trials"].item()),
            "used": "valid trials"
            if data.missing in (None, "exclude")
            else "planned trials (missing outcomes included per the policy)",
        },
        "planned_attempts": int(attempts.sum()),
        "missing_policy": data.missing or "none",
        "excluded_cells": len(data.excluded) if data.missing == "exclude" else 0,
        # records, one per system (a system label is a value, not a key)
        "status_counts": [
            {
                "system": str(s),
                **{str(k): int(v) for k, v in row.items()},
                "coverage": _num(coverage[s]),
            }
            for s, row in status.iterrows()
        ],
        "status_totals": {str(k): int(v) for k, v in status.sum().items()},
        "design_effect": deff_rows,
        "harness": (
            None
            if data.harness is None
            else [{"system": str(s), "digest": d} for s, d in data.harness.items()]
        ),
        **({"scores": _scores_summary(data)} if data.has_scores else {}),
    }


def _scores_summary(data) -> dict:
    """Valid attempts of partial-credit data scored 0, strictly between 0 and 1, and 1."""
    ds = data.dataset
    return {
        "at_0": int(ds["score_n0"].sum()),
        "between": int(ds["score_nmid"].sum()),
        "at_1": int(ds["score_n1"].sum()),
    }


def _split_section(results: Results) -> dict | None:
    """The task split these results were fitted on, with the systems scored on it.

    The split is :func:`bayeval.split_tasks`'s; ``None`` for data that are not a split part.

    The split guards against the winner's curse only if the systems are chosen on one part
    and one chosen system is scored on the other: every system scored on a held-out part is
    a choice that part can no longer make honestly, so the section counts them and, when more
    than one system was scored on a part other than the first (where the choice is made),
    puts the optimism of reporting the best of them in numbers (:func:`bayeval.selection_bias`
    at these tasks and trials, equally good systems at their mean observed pass@1).
    """
    record = results.data.dataset.attrs.get("split")
    if record is None:
        return None
    record = json.loads(record)
    systems = [str(s) for s in results.systems]
    chooser = record["parts"][0]
    held_out = record["name"] != chooser
    out = {
        **{
            key: record.get(key)
            for key in (
                "name",
                "parts",
                "by",
                "seed",
                "fractions",
                "fraction",
                "n_tasks",
                "n_tasks_total",
                "n_clusters",
                "n_clusters_total",
            )
        },
        "held_out": held_out,
        "n_systems_evaluated": len(systems),
        "systems_evaluated": systems,
        "optimism_of_best": None,
        "note": None,
    }
    if held_out and len(systems) > 1:
        ds = results.data.dataset
        trials = ds["trials"].values
        rate = float(ds["successes"].values.sum() / max(trials.sum(), 1))
        rate = min(max(rate, 0.01), 0.99)
        optimism = selection_bias(
            len(systems),
            n_tasks=int(ds.sizes["task"]),
            trials=max(int(round(float(np.median(trials[trials > 0])))), 1)
            if (trials > 0).any()
            else 1,
            p=rate,
            n_sim=4000,
            seed=0,
        )["optimism"].item()
        out["optimism_of_best"] = _num(optimism)
        out["note"] = (
            f"{len(systems)} systems were scored on the held-out part {record['name']!r}: "
            f"picking the best of them here brings back the selection bias the split is for "
            f"(about +{optimism:.3f} in pass@1 for equally good systems at these tasks "
            f"and trials). Choose on {chooser!r} and score only the chosen system here, or "
            "read the best one's value from Results.winner."
        )
    elif held_out:
        out["note"] = (
            f"one system scored on the held-out part {record['name']!r}, as the "
            f"protocol asks (chosen on {chooser!r})."
        )
    return out


def _resampled_clusters(data) -> tuple[int, str | None]:
    """Clusters the cluster bootstrap can resample (0 when it cannot), and why not."""
    if not data.has_clusters:
        return 0, None
    ds = data.dataset
    n_clusters = len(np.unique(ds["cluster"].values.astype(str)))
    if n_clusters < 2:
        return 0, None
    if data.has_strata:
        pairs = {
            (str(c), str(s))
            for c, s in zip(ds["cluster"].values, ds["stratum"].values, strict=True)
        }
        if len(pairs) != n_clusters:
            return 0, (
                "the cluster bootstrap is left out: clusters cross strata (it resamples "
                "whole clusters within strata)"
            )
    return n_clusters, None


def _score_twin(results, estimand: str, population=None) -> dict | None:
    """Bootstrap settings of the twin of a mean-score estimand (a model of scores), or None.

    The population estimand pairs with the task bootstrap, or with clusters the cluster
    bootstrap weighted equally (a new task from a new cluster, as for ``logit_normal``); the
    tasks estimand has no twin: a trial bootstrap needs each attempt's score, which the data
    keep only as per-task sums.
    """
    if estimand == "tasks":
        return None
    return dict(bootstrap_twin(results, estimand, **(population or {})).attrs)


def _score_metrics_section(
    results, n_boot, seed, ci_prob, estimand, population, order
) -> list[dict]:
    """Each system's posterior mean score (every estimand) beside its bootstrap twin.

    The twin is :func:`bayeval.bootstrap.mean_score`; ``None`` where the estimand has none.
    """
    data = results.data
    boots = {}
    rows = []
    for name in results.estimands:
        options = population if name == "population" else {}
        draws = results.mean_score(estimand=name, **options)
        mean = draws.mean(["chain", "draw"])
        interval = posterior_interval(draws, ci_prob, ["chain", "draw"])
        twin = _score_twin(results, name, options)
        boot = None
        if twin is not None:
            key = tuple(sorted(twin.items()))
            if key not in boots:
                boots[key] = bootstrap.mean_score(
                    data, n_boot=n_boot, ci_prob=ci_prob, seed=seed, **twin
                )
            boot = boots[key]
            ratio = interval_widths(interval, boot["interval"])["width_ratio"]
        for system in results.systems:
            for bound in _bounds(mean):
                row = {
                    "system": system,
                    "metric": "mean",
                    "k": 1,
                    "estimand": name,
                    "missing_bound": bound,
                    "bayes_mean": _num(_at(mean, bound, system=system)),
                    "bayes_lower": _num(_at(interval, bound, system=system).sel(ci_bound="lower")),
                    "bayes_upper": _num(_at(interval, bound, system=system).sel(ci_bound="upper")),
                    "bootstrap_unit": None if twin is None else twin["unit"],
                    "bootstrap_estimate": None,
                    "bootstrap_lower": None,
                    "bootstrap_upper": None,
                    "width_ratio": None,
                }
                if boot is not None:
                    cell = _at(boot, bound, system=system)
                    row.update(
                        bootstrap_estimate=_num(cell["estimate"]),
                        bootstrap_lower=_num(cell["interval"].sel(ci_bound="lower")),
                        bootstrap_upper=_num(cell["interval"].sel(ci_bound="upper")),
                        width_ratio=_num(_at(ratio, bound, system=system)),
                    )
                rows.append(row)
    position = {system: i for i, system in enumerate(order)}
    rows.sort(
        key=lambda r: (
            r["estimand"] != estimand,
            position[str(r["system"])],
            r["missing_bound"] or "",
        )
    )
    return rows


def _fewest_trials(data) -> dict:
    """System -> its fewest valid trials in a task it ran (the k its pass@k can take)."""
    trials = data.dataset["trials"].transpose("system", "task").values
    return {
        system: int(row[row > 0].min()) if (row > 0).any() else 0
        for system, row in zip(data.systems, trials, strict=True)
    }


def _unavailable_row(system, metric, k, estimand, bound, unit, fewest) -> dict:
    """A row of a k beyond a system's trials: no number, and why not."""
    row: dict = {
        "system": system,
        "metric": metric,
        "k": int(k),
        "estimand": estimand,
        "missing_bound": bound,
        **dict.fromkeys(("bayes_mean", "bayes_lower", "bayes_upper")),
        "bootstrap_unit": unit,
        **dict.fromkeys(("bootstrap_estimate", "bootstrap_lower", "bootstrap_upper")),
        "width_ratio": None,
    }
    row["unavailable"] = (
        f"{fewest} trial(s) in some task: {metric} at k={k} needs {k} in every task"
    )
    return row


def _metrics_section(
    results, ks, n_boot, seed, ci_prob, estimand, order, population=None
) -> list[dict]:
    """Each system's metrics beside their twins, in ``order``.

    ``population`` holds the population's clusters and weighting.

    A k beyond a system's trials in some task (as for a system of one sample per task beside
    systems of ten) gets a row without numbers that says so (``unavailable``); the others
    are computed for the systems whose trials allow them.
    """
    population = population or {}
    if results.data.has_scores:
        return _score_metrics_section(results, n_boot, seed, ci_prob, estimand, population, order)
    data = results.data
    n_clusters, _ = _resampled_clusters(data)
    fewest = _fewest_trials(data)
    rows = []
    for metric in METRICS:
        metric_ks = [k for k in ks if metric == "pass@k" or k > 1]
        if not metric_ks:
            continue
        groups: dict = {}  # the ks each system's trials allow -> those systems
        for system in results.systems:
            allowed = tuple(k for k in metric_ks if k <= fewest[system])
            groups.setdefault(allowed, []).append(system)
        for allowed, systems in groups.items():
            if allowed:
                every = len(groups) == 1
                rows += _metric_rows(
                    results,
                    metric,
                    list(allowed),
                    None if every else systems,
                    n_boot,
                    seed,
                    ci_prob,
                    population,
                    n_clusters,
                )
            missing = [k for k in metric_ks if k not in allowed]
            for name in results.estimands if missing else ():
                unit = bootstrap_twin(
                    results, name, **(population if name == "population" else {})
                ).attrs["unit"]
                for system in systems:
                    for bound in _bounds(data.dataset["successes"]):
                        rows += [
                            _unavailable_row(system, metric, k, name, bound, unit, fewest[system])
                            for k in missing
                        ]
    position = {system: i for i, system in enumerate(order)}
    rows.sort(
        key=lambda r: (
            r["estimand"] != estimand,
            position[str(r["system"])],
            METRICS.index(r["metric"]),
            r["k"],
            r["missing_bound"] or "",
        )
    )
    return rows


def _system_order(results, metric: str, k: int, estimand: str, population=None) -> list[str]:
    """The systems best first: the one order of every table and figure of the report.

    By the posterior mean of the report's headline quantity (``metric`` at ``k``, the
    ``estimand``; the midpoint of the two missing-outcome bounds), what the forest and the
    ranks are ordered by; ties, and systems without a mean, follow the measured pass@1
    (:func:`_measured_order`). ``population`` holds the population's clusters and
    weighting, as the table has them.
    """
    options = (population or {}) if estimand == "population" else {}
    if metric == "mean":
        draws = results.mean_score(estimand=estimand, **options)
    else:
        compute = results.pass_at_k if metric == "pass@k" else results.pass_hat_k
        draws = compute(k=k, estimand=estimand, **options)
    mean = draws.mean(["chain", "draw"])
    if "missing_bound" in mean.dims:
        mean = mean.mean("missing_bound")
    values = dict(zip(results.systems, mean.sel(system=results.systems).values, strict=True))
    measured = _measured_order(results)
    order = sorted(
        results.systems,
        key=lambda s: (-np.nan_to_num(values[s], nan=-np.inf), measured[s]),
    )
    return [str(s) for s in order]


def _metric_rows(
    results, metric, metric_ks, systems, n_boot, seed, ci_prob, population, n_clusters
) -> list[dict]:
    """The rows of ``systems`` (None: all) at ``metric_ks``, every estimand."""
    data = results.data if systems is None else results.data.sel(system=systems)
    check = crosscheck(
        results,
        k=metric_ks,
        metric=metric,
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        systems=systems,
        **population,
    )
    cluster_boot = None
    twin_unit = (
        str(check["bootstrap_unit"].sel(estimand="population").values)
        if "population" in check["estimand"].values
        else None
    )
    if n_clusters >= 2 and twin_unit not in (None, "cluster"):
        func = bootstrap.pass_at_k if metric == "pass@k" else bootstrap.pass_hat_k
        cluster_boot = func(
            data, k=metric_ks, unit="cluster", n_boot=n_boot, ci_prob=ci_prob, seed=seed
        )
    trials = data.dataset["trials"]
    most_trials = dict(zip(data.systems, trials.max("task").values.tolist(), strict=True))
    rows = []
    for name in check["estimand"].values.tolist():
        part = check.sel(estimand=name)
        unit = str(part["bootstrap_unit"].values)
        for system in data.systems:
            for bound in _bounds(part["bayes_mean"]):
                for k in metric_ks:
                    cell = _at(part, bound, system=system, k=k)
                    row = {
                        "system": system,
                        "metric": metric,
                        "k": int(k),
                        "estimand": name,
                        "missing_bound": bound,
                        "bayes_mean": _num(cell["bayes_mean"]),
                        "bayes_lower": _num(cell["bayes_interval"].sel(ci_bound="lower")),
                        "bayes_upper": _num(cell["bayes_interval"].sel(ci_bound="upper")),
                        "bootstrap_unit": unit,
                        "bootstrap_estimate": _num(cell["bootstrap_estimate"]),
                        "bootstrap_lower": _num(cell["bootstrap_interval"].sel(ci_bound="lower")),
                        "bootstrap_upper": _num(cell["bootstrap_interval"].sel(ci_bound="upper")),
                        "width_ratio": _num(cell["width_ratio"]),
                    }
                    if unit == "trial" and most_trials[system] <= 1:
                        # one outcome per task resampled onto itself: no interval at all
                        row.update(
                            bootstrap_lower=None,
                            bootstrap_upper=None,
                            width_ratio=None,
                            bootstrap_note=_ONE_TRIAL_NOTE,
                        )
                    if cluster_boot is not None and name == "population":
                        extra = _at(cluster_boot, bound, system=system, k=k)
                        row["cluster_bootstrap_estimate"] = _num(extra["estimate"])
                        row["cluster_bootstrap_lower"] = _num(
                            extra["interval"].sel(ci_bound="lower")
                        )
                        row["cluster_bootstrap_upper"] = _num(
                            extra["interval"].sel(ci_bound="upper")
                        )
                    rows.append(row)
    return rows


def _measured_order(results) -> dict:
    """System -> position by measured pass@1, best first.

    From :func:`bayeval.estimators.measured_order`.
    """
    order = measured_order(results.data)
    return dict(zip(results.systems, order["position"].values.tolist(), strict=True))


def _gates(results) -> dict:
    """``gates_passed``, ``gates_failed`` and ``gates_note`` (None when passed) of a fit."""
    found = gate_attrs(results)
    return {
        "gates_passed": not found["gates_failed"],
        "gates_failed": found["gates_failed"],
        "gates_note": found["gates_note"] or None,
    }


def _diagnostics_section(results) -> dict:
    attrs = results.tree.attrs
    diag = results.diagnostics
    out = {
        "engine": attrs["sampler"],
        "mcmc": {k: _num(v) for k, v in diag.items() if not k.endswith("_parameter")},
        # the parameter that has each worst value
        "parameter": {
            k.removesuffix("_parameter"): v for k, v in diag.items() if k.endswith("_parameter")
        },
        "gates": dict(GATES),
        # whether the fit passed them: a failed gate makes every posterior decision undecided
        **_gates(results),
        "ppc": [],
    }
    if "posterior_predictive_stats" in results.tree.children:
        ppc = results.ppc()
        for system in results.systems:
            for bound in _bounds(ppc["p_value"]):
                cell = _at(ppc, bound, system=system)
                out["ppc"].append(
                    {
                        "system": system,
                        "missing_bound": bound,
                        "observed_extreme_share": _num(cell["observed_extreme_share"]),
                        "predicted_extreme_share": _num(cell["predicted_extreme_share"]),
                        "p_value": _num(cell["p_value"]),
                        "flagged": bool(cell["flagged"]),
                    }
                )
        out["ppc_statistic"] = ppc.attrs["statistic"]
    return out
