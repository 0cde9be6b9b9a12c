"""Report card: one auditable page (HTML or Markdown) from a fitted :class:`~bayeval.Results`.

:func:`report_data` computes every number of the report into a JSON-ready ``dict``: the
estimand in words, the units and their counts, status counts and coverage, each system's
pass@1 / pass@k / pass^k with its Bayesian interval next to its bootstrap twin
(:func:`bayeval.crosscheck`), each comparison with its effect, interval, P(effect > 0), margin and
non-inferiority decision (:func:`bayeval.noninferiority`) next to the paired bootstrap
(:func:`bayeval.bootstrap.compare`), the power for the smallest practical effect
(:func:`bayeval.required_units`), the multiplicity family with Holm-adjusted p-values
(:func:`bayeval.adjust_pvalues`), fit diagnostics, the systematic uncertainties no interval
covers, and the settings that reproduce it. :func:`build_report` renders that ``dict`` with
the Jinja2 templates of ``bayeval/templates``, plots inline; :func:`write_report` writes it to
a file. The ``bayeval``
command's ``--json`` writes the same ``dict``, so the JSON and the report show the same numbers.

Statistical caveats raised while the numbers are computed (:class:`bayeval.BayevalWarning`) are
collected into the report's *Notes* (``notes`` in the ``dict``) instead of being emitted as
warnings.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import math
import platform
import warnings
from dataclasses import asdict
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import jinja2
import markupsafe
import numpy as np

from bayeval import bootstrap
from bayeval._validate import (
    BayevalWarning,
    describe_values,
    validate_choice,
    validate_k,
    validate_margin,
    validate_positive_int,
    validate_prob,
    validate_seed,
)
from bayeval.analyses.crosscheck import bootstrap_twin, crosscheck
from bayeval.analyses.ranks import rank_summary
from bayeval.estimators import METRICS, design_effect, pass_at_k, pass_hat_k
from bayeval.planning import adjust_pvalues, noninferiority, required_units
from bayeval.results import Results

__all__ = ["FORMATS", "build_report", "paired_spread", "rank_data", "report_data", "write_report"]

#: Report formats and the file suffixes :func:`write_report` maps onto them.

#: Version of the JSON layout of :func:`report_data` (``bayeval/schemas/report.schema.json``):
#: raised when a key is renamed, removed or changes type.
SCHEMA_VERSION = "3"
FORMATS = {"html": (".html", ".htm"), "markdown": (".md", ".markdown")}
ADJUST_METHODS = ("bonferroni", "holm", "bh")
DEFAULT_POWER_EFFECTS = (0.01, 0.02, 0.05)
_PPC_PANELS = 6  # systems drawn in the posterior predictive plot when none are compared
_CLUSTERS_SHOWN = 12  # largest clusters listed by name in the rendered report
PLOTS_HINT = "plots need matplotlib: pip install 'bayeval[plots]'"

_SYSTEMATIC = [
    (
        "Contamination",
        (
            "Tasks (or their solutions) may have been seen in training. Contamination inflates the "
            "rates of the systems that saw them and can make an effect look larger than it is on "
            "unseen tasks; no interval here covers it. Compare on tasks created after the systems' "
            "training cut-off, or on a held-out split, to check."
        ),
    ),
    (
        "Harness and environment drift",
        (
            "The numbers hold for this harness, scaffold, prompt, container image and grader version. "
            "Systems evaluated at different times or with different harness versions differ by more "
            "than their sampling noise; re-run the baseline with the candidate's harness before "
            "trusting a small effect."
        ),
    ),
    (
        "Judge and grader bias",
        (
            "Outcomes are taken as scored. Unit tests that accept wrong patches, tests that reject "
            "right ones, or a model judge that favours one system's style shift the rates; the "
            "intervals treat every verdict as correct."
        ),
    ),
    (
        "Task selection",
        (
            "The population estimand generalises to new tasks drawn like these, not to other task "
            "types, languages, repositories or difficulty mixes. A benchmark curated to be hard for "
            "some systems (or filtered with one of them) is not a random sample of anything."
        ),
    ),
]


# -- small helpers -----------------------------------------------------------------------------
def _num(value):
    """A JSON-ready number: Python int/float, ``None`` for NaN, infinities and missing values."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None


def _label(value):
    return value.item() if isinstance(value, np.generic) else value


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _bounds(obj) -> list:
    """The ``missing_bound`` labels of a DataArray/Dataset, or ``[None]`` without bounds."""
    if "missing_bound" in obj.dims:
        return obj["missing_bound"].values.tolist()
    return [None]


def _at(obj, bound, **indexers):
    if bound is not None:
        indexers["missing_bound"] = bound
    return obj.sel(indexers)


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


def _estimand_words(estimand: str, model: str, n_tasks: int, n_clusters: int | None) -> str:
    if estimand == "tasks":
        return (
            f"the mean over exactly these {n_tasks} tasks. The tasks are fixed; only the "
            "sampling of episodes (trials) is random. It says how the systems did on this "
            "benchmark, not how they would do on other tasks."
        )
    if model in ("logit_normal", "zoib") and n_clusters:
        return (
            f"the expected value on a new task from a new cluster, drawn like these "
            f"{n_tasks} tasks in {n_clusters} clusters. Clusters and tasks are the random "
            "units; it says how the systems would do on tasks like these from groups "
            "(repositories, families) not seen here."
        )
    clusters = (
        f" The model does not use the {n_clusters} task clusters: its new task comes "
        "from clusters like the observed ones; the cluster bootstrap, shown next to it, "
        "asks about new clusters."
        if n_clusters
        else ""
    )
    return (
        f"the expected value on a new task drawn from the same population as these "
        f"{n_tasks} tasks. Tasks are the random units; it says how the systems would do on "
        f"tasks like these.{clusters}"
    )


def _unit_words(options: dict) -> str:
    unit = options["unit"]
    if unit == "cluster":
        each = (
            "each weighing the same"
            if options.get("weighting") == "cluster"
            else "keeping their sizes"
        )
        return f"clusters resampled, {each} (a new task from a new cluster)"
    if unit == "task" and options.get("clusters") == "observed":
        return "tasks resampled within their clusters (a new task from the observed clusters)"
    return {
        "trial": "trials resampled within fixed tasks (these tasks)",
        "task": "tasks resampled (a new task like these)",
    }[unit]


def _bootstrap_designs(results, estimand: str) -> list[dict]:
    """Bootstrap settings of the comparisons: the estimand's twin first, then the others.

    The twin is the one :func:`bayeval.crosscheck` pairs with the estimand; under the
    population estimand the task bootstrap and (with two or more clusters nested in the
    strata) the cluster bootstrap are shown beside it. The mean score of a ``zoib`` fit has
    its population twin (tasks, or clusters) under either estimand: under ``"tasks"`` no
    design is the twin (``twin=False``).
    """
    if results.data.has_scores:  # the mean score: no trial bootstrap (see _score_twin)
        twin = _score_twin(results, "population")
        designs = [dict(twin, twin=estimand == "population")]
        if twin["unit"] != "task":
            designs.append({"unit": "task", "twin": False})
        return designs
    twin = bootstrap_twin(results, estimand)
    designs = [dict(twin)]
    if estimand == "population":
        n_clusters, _ = _resampled_clusters(results.data)
        if twin["unit"] != "task":
            designs.append({"unit": "task"})
        if twin["unit"] != "cluster" and n_clusters >= 2:
            designs.append({"unit": "cluster"})
    return designs


# -- the numbers -------------------------------------------------------------------------------
def _one_bound(data, bound):
    """The data at one missing-outcome bound (``bound=None``: the data itself)."""
    if bound is None:
        return data
    from bayeval.data import EvalData

    ds = data.dataset.copy(deep=True)
    ds["successes"] = ds["successes"].sel(missing_bound=bound, drop=True)
    return EvalData(ds.drop_vars("missing_bound", errors="ignore"))


def _data_section(results: Results) -> dict:
    data = results.data
    ds = data.dataset
    systems = results.systems
    trials = ds["trials"].values
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
    valid = trials[trials > 0]
    return {
        "n_systems": len(systems),
        "systems": list(systems),
        "n_tasks": int(ds.sizes["task"]),
        "clusters": clusters,
        "strata": strata,
        "trials_per_task": {
            "min": _num(valid.min()) if valid.size else None,
            "median": _num(np.median(valid)) if valid.size else None,
            "max": _num(valid.max()) if valid.size else None,
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
    """The task split these results were fitted on (:func:`bayeval.split_tasks`), with the
    systems scored on it; ``None`` for data that are not a split part.

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
        from bayeval.planning import selection_bias

        ds = results.data.dataset
        trials = ds["trials"].values
        rate = float(ds["successes"].values.sum() / max(trials.sum(), 1))
        rate = min(max(rate, 0.01), 0.99)
        bias = selection_bias(
            len(systems),
            n_tasks=int(ds.sizes["task"]),
            trials=max(int(round(float(np.median(trials[trials > 0])))), 1)
            if (trials > 0).any()
            else 1,
            p=rate,
            n_sim=4000,
            seed=0,
        )
        out["optimism_of_best"] = _num(bias.optimism)
        out["note"] = (
            f"{len(systems)} systems were scored on the held-out part {record['name']!r}: "
            f"picking the best of them here brings back the selection bias the split is for "
            f"(about +{bias.optimism:.3f} in pass@1 for equally good systems at these tasks "
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
        pairs = {(str(c), str(s)) for c, s in zip(ds["cluster"].values, ds["stratum"].values)}
        if len(pairs) != n_clusters:
            return 0, (
                "the cluster bootstrap is left out: clusters cross strata (it resamples "
                "whole clusters within strata)"
            )
    return n_clusters, None


def _score_twin(results, estimand: str) -> dict | None:
    """Bootstrap settings of the twin of a mean-score estimand (``model="zoib"``), or None.

    The population estimand pairs with the task bootstrap, or with clusters the cluster
    bootstrap weighted equally (a new task from a new cluster, as for ``logit_normal``); the
    tasks estimand has no twin: a trial bootstrap needs each attempt's score, which the data
    keep only as per-task sums.
    """
    return None if estimand == "tasks" else bootstrap_twin(results, estimand)


def _score_metrics_section(results, n_boot, seed, ci_prob, estimand) -> list[dict]:
    """Each system's posterior mean score (every estimand) beside its bootstrap twin
    (:func:`bayeval.bootstrap.mean_score`; ``None`` where the estimand has none)."""
    from bayeval.results import _interval as posterior_interval

    data = results.data
    boots = {}
    rows = []
    for name in results.estimands:
        draws = results.mean_score(estimand=name)
        mean = draws.mean(["chain", "draw"])
        interval = posterior_interval(draws, ci_prob, ["chain", "draw"])
        twin = _score_twin(results, name)
        boot = None
        if twin is not None:
            key = tuple(sorted(twin.items()))
            if key not in boots:
                boots[key] = bootstrap.mean_score(
                    data, n_boot=n_boot, ci_prob=ci_prob, seed=seed, **twin
                )
            boot = boots[key]
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
                    lower = _num(cell["interval"].sel(ci_bound="lower"))
                    upper = _num(cell["interval"].sel(ci_bound="upper"))
                    width = (
                        None
                        if None in (lower, upper, row["bayes_lower"], row["bayes_upper"])
                        or upper == lower
                        else (row["bayes_upper"] - row["bayes_lower"]) / (upper - lower)
                    )
                    row.update(
                        bootstrap_estimate=_num(cell["estimate"]),
                        bootstrap_lower=lower,
                        bootstrap_upper=upper,
                        width_ratio=_num(width),
                    )
                rows.append(row)
    position = _measured_order(results)
    rows.sort(
        key=lambda r: (r["estimand"] != estimand, position[r["system"]], r["missing_bound"] or "")
    )
    return rows


def _metrics_section(results, ks, n_boot, seed, ci_prob, estimand) -> list[dict]:
    if results.data.has_scores:
        return _score_metrics_section(results, n_boot, seed, ci_prob, estimand)
    data = results.data
    n_clusters, _ = _resampled_clusters(data)
    rows = []
    for metric in METRICS:
        metric_ks = [k for k in ks if metric == "pass@k" or k > 1]
        if not metric_ks:
            continue
        check = crosscheck(
            results, k=metric_ks, metric=metric, n_boot=n_boot, seed=seed, ci_prob=ci_prob
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
        for name in check["estimand"].values.tolist():
            part = check.sel(estimand=name)
            unit = str(part["bootstrap_unit"].values)
            for system in results.systems:
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
                            "bootstrap_lower": _num(
                                cell["bootstrap_interval"].sel(ci_bound="lower")
                            ),
                            "bootstrap_upper": _num(
                                cell["bootstrap_interval"].sel(ci_bound="upper")
                            ),
                            "width_ratio": _num(cell["width_ratio"]),
                        }
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
    position = _measured_order(results)
    rows.sort(
        key=lambda r: (
            r["estimand"] != estimand,
            position[r["system"]],
            METRICS.index(r["metric"]),
            r["k"],
            r["missing_bound"] or "",
        )
    )
    return rows


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
    out = asdict(decision)
    out["passed"] = decision.passed
    return {key: _num(v) if isinstance(v, float) else v for key, v in out.items()}


def _task_values(data, system, metric, k):
    """Per-task unbiased estimates over ``(bound, task)`` and each task's trials (the task's
    mean score for ``metric="mean"``)."""
    ds = data.dataset
    n = ds["trials"].sel(system=system).values
    if metric == "mean":
        total = data.score_statistics()["sum"].sel(system=system)
        total = (
            total.transpose("missing_bound", "task").values
            if "missing_bound" in total.dims
            else total.values[None]
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.where(n > 0, n, 1), np.nan), n
    c = ds["successes"].sel(system=system)
    if "missing_bound" in c.dims:
        c = c.transpose("missing_bound", "task").values
    else:
        c = c.values[None]
    func = pass_at_k if metric == "pass@k" else pass_hat_k
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(n > 0, func(np.maximum(n, 1), c, k), np.nan)
    return values, n


def _spread(c_a, n_a, c_b, n_b) -> dict:
    shared = (n_a > 0) & (n_b > 0)
    n_tasks = int(shared.sum())
    c_a, n_a, c_b, n_b = (np.asarray(x, dtype=float)[shared] for x in (c_a, n_a, c_b, n_b))
    diff = c_b / n_b - c_a / n_a if n_tasks else np.zeros(0)
    sd = float(np.std(diff, ddof=1)) if n_tasks > 1 else float("nan")
    out = {
        "n_tasks": n_tasks,
        "median_trials": _num(np.median(np.r_[n_a, n_b])) if n_tasks else None,
        "mean_difference": _num(diff.mean()) if n_tasks else None,
        "sd": _num(sd),
        "sd_between": None,
        "trial_variance": None,
        "icc": None,
    }
    if n_tasks > 1 and (n_a >= 2).all() and (n_b >= 2).all():
        s2_a = c_a * (n_a - c_a) / (n_a * (n_a - 1))  # unbiased p (1 - p) per task
        s2_b = c_b * (n_b - c_b) / (n_b * (n_b - 1))
        between = max(0.0, sd**2 - float(np.mean(s2_a / n_a + s2_b / n_b)))
        trial_variance = float(np.mean(s2_a + s2_b))
        total = between + trial_variance
        out.update(
            sd_between=_num(np.sqrt(between)),
            trial_variance=_num(trial_variance),
            icc=_num(between / total) if total > 0 else None,
        )
    return out


def _measured_order(results) -> dict:
    """System -> position by measured pass@1 (the mean over valid tasks of each task's rate;
    the mean score for partial-credit scores; under bounds, the lower bound's), best first;
    ties keep the data's order. The order a table shows is the data's own, not a column the
    input happened to be sorted by."""
    obs = results.tree["observed_data"]
    c = obs["successes"]
    if results.data.has_scores:  # partial credit: the task's score sum over its attempts
        c = results.data.score_statistics()["sum"]
    if "missing_bound" in c.dims:
        c = c.sel(missing_bound="lower")
    n = obs["trials"].transpose(*c.dims).values
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, c.values / np.where(n > 0, n, 1), 0.0)
        score = rate.sum(-1) / (n > 0).sum(-1)  # (system,); NaN without a valid task
    order = sorted(range(len(score)), key=lambda i: (-np.nan_to_num(score[i], nan=-1.0), i))
    systems = results.systems
    return {systems[i]: rank for rank, i in enumerate(order)}


def paired_spread(data, candidate, baseline) -> dict:
    """Spread of the paired per-task pass@1 differences, split into task spread and trial noise.

    On the tasks both systems have valid trials, ``d_j = c_Bj / n_Bj - c_Aj / n_Aj`` (candidate
    B, baseline A). ``sd`` is their standard deviation at the trials run. With two or more
    trials in every task, the method of moments splits ``sd**2`` into the variance of the
    true per-task differences, ``sd_between**2 = max(0, sd**2 - mean(s2_A / n_A + s2_B /
    n_B))``, and trial noise, with ``s2 = c (n - c) / (n (n - 1))`` the unbiased per-task
    Bernoulli variance; ``trial_variance = mean(s2_A + s2_B)`` is the noise of a one-trial
    difference and ``icc = sd_between**2 / (sd_between**2 + trial_variance)`` the intra-task
    correlation of the difference. The sd at ``m`` trials per task is then
    ``sqrt(sd_between**2 + trial_variance / m)``. Under ``missing="bounds"`` the bounds cross
    as in a comparison and the crossing with the larger ``sd`` is returned (``bound``).

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels

    Returns
    -------
    dict
        ``n_tasks``, ``median_trials``, ``mean_difference``, ``sd``, ``sd_between``,
        ``trial_variance``, ``icc`` (``None`` where not identified, as with one trial per
        task) and ``bound``.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.report import paired_spread
    >>> data = be.from_counts([[2, 8, 5, 0], [4, 9, 5, 3]], trials=10, systems=["A", "B"])
    >>> out = paired_spread(data, "B", "A")
    >>> out["n_tasks"], round(out["mean_difference"], 3), round(out["sd"], 4)
    (4, 0.15, 0.1291)
    >>> 0 <= out["icc"] <= 1
    True
    """
    from bayeval.data import EvalData

    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData; got {type(data).__name__}")
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in data.systems:
            raise ValueError(
                f"{role} {label!r} is not a system of this data; systems: "
                f"{describe_values(data.systems)}"
            )
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different systems")
    ds = data.dataset
    n_a = ds["trials"].sel(system=baseline).values
    n_b = ds["trials"].sel(system=candidate).values
    c = ds["successes"]
    if "missing_bound" not in c.dims:
        out = _spread(c.sel(system=baseline).values, n_a, c.sel(system=candidate).values, n_b)
        out["bound"] = None
        return out
    best = None
    for bound, other in (("lower", "upper"), ("upper", "lower")):
        out = _spread(
            c.sel(system=baseline, missing_bound=other).values,
            n_a,
            c.sel(system=candidate, missing_bound=bound).values,
            n_b,
        )
        out["bound"] = bound
        if best is None or (out["sd"] or 0) > (best["sd"] or 0):
            best = out
    return best


def _power_section(
    data, candidate, baseline, metric, k, margin, effects, alpha, power, family_size
) -> dict:
    cand, n_cand = _task_values(data, candidate, metric, k)
    base, n_base = _task_values(data, baseline, metric, k)
    shared = (n_cand > 0) & (n_base > 0)
    # bounds cross as in the comparison: lower = candidate lower - baseline upper
    diff = cand - base[::-1]
    sds = [float(np.std(row[shared], ddof=1)) if shared.sum() > 1 else float("nan") for row in diff]
    sd = max(sds) if sds else float("nan")
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
    return {
        "sd": _num(sd),
        "sd_by_bound": [_num(s) for s in sds] if len(sds) > 1 else None,
        "shared_tasks": int(shared.sum()),
        "mean_trials": [
            {"system": str(name), "mean_trials": _num(n[shared].mean()) if shared.any() else None}
            for name, n in ((candidate, n_cand), (baseline, n_base))
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
) -> list[dict]:
    data = results.data
    designs = _bootstrap_designs(results, estimand)
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
        )
        entry = {
            "label": f"{candidate} - {baseline}",
            "candidate": candidate,
            "baseline": baseline,
            "metric": metric,
            "k": int(k),
            "estimand": estimand,
            "margin": _num(margin),
            "prob": _num(prob),
            "test": "superiority" if superior else "non-inferiority",
            "bayes": {
                "paired": "yes" if cmp.attrs["paired"] else f"no: {cmp.attrs['paired_note']}",
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
                **design,
            )
            rows = _effect_rows(boot, "effect_estimate", bayesian=False)
            entry["bootstrap"].append(
                {
                    "unit": design["unit"],
                    "weighting": design.get("weighting", "task"),
                    "clusters": design.get("clusters"),
                    "twin": is_twin,
                    "meaning": _unit_words(design),
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


def _diagnostics_section(results) -> dict:
    from bayeval.fit import GATES

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
        "ppc": [],
    }
    if "posterior_predictive" in results.tree.children:
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


def _systematic_section(data_section) -> list[dict]:
    items = [{"name": name, "text": text} for name, text in _SYSTEMATIC]
    policy = data_section["missing_policy"]
    non_ok = sum(v for s, v in data_section["status_totals"].items() if s != "ok")
    if non_ok:
        text = {
            "fail": "Missing outcomes count as failures (the end-to-end rate). That is "
            "conservative for one system's rate, not for an effect when the systems "
            "miss outcomes at different rates.",
            "exclude": "Missing outcomes are left out (the rate given a verdict). If outcomes "
            "go missing more often on hard tasks, the rates are biased upwards.",
            "bounds": "Results are given at both extremes (missing as failures, missing as "
            "successes); the truth lies between them only if the missing outcomes "
            "are outcomes the harness could have recorded.",
        }[policy]
        items.append(
            {"name": f"Missing outcomes ({non_ok} attempts, policy '{policy}')", "text": text}
        )
    return items


def _settings_section(results, settings, command) -> dict:
    attrs = results.tree.attrs
    libraries = json.loads(attrs.get("library_versions", "{}"))
    report_libs = {
        pkg: _version(pkg)
        for pkg in (
            "bayeval",
            "numpy",
            "scipy",
            "pandas",
            "xarray",
            "statsmodels",
            "jinja2",
            "click",
            "matplotlib",
        )
    }
    return {
        "fit": {
            "model": attrs["model"],
            "sampler": attrs["sampler"],
            "sampler_requested": attrs.get("sampler_requested"),
            "seed": _num(attrs["seed"]),
            "draws": _num(attrs["draws"]),
            "chains": _num(attrs["chains"]),
            "tune": _num(attrs.get("tune")),
            "priors": json.loads(attrs["priors"]),
            "missing_policy": attrs["missing_policy"],
            "input_hash": attrs["input_hash"],
            "created_at": attrs.get("created_at"),
            "library_versions": libraries,
        },
        "report": dict(settings),
        "report_created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "library_versions": report_libs,
        "python": platform.python_version(),
        "command": command,
    }


def report_data(
    results,
    comparisons=(),
    k=1,
    metric: str = "pass@k",
    estimand=None,
    margin: float = 0.0,
    prob: float = 0.95,
    superior: bool = False,
    n_boot: int = 2000,
    seed=0,
    ci_prob: float = 0.95,
    compare_k=None,
    power_effects=None,
    alpha: float = 0.05,
    power: float = 0.8,
    adjust: str = "holm",
    notes=(),
    command=None,
    title=None,
    compare_results=None,
    allow_harness_change: bool = False,
    cost=None,
    cost_reference=None,
    latency=False,
    cost_model: str = "bayesian_bootstrap",
) -> dict:
    """Every number of the report card, as a JSON-ready ``dict``.

    Parameters
    ----------
    results : Results
        A fit from :func:`bayeval.fit`.
    comparisons : sequence of (candidate, baseline)
        Paired comparisons; together they form the multiplicity family.
    k : int or list of int, default 1
        The k of the per-system table (pass@1 is always included; pass^k for each k > 1).
    metric : {"pass@k", "pass^k", "mean"}, default "pass@k"
        Metric of the comparisons. A fit of scores (data built with ``score=``: ``zoib``, or
        a binomial model where every score is 0 or 1) reports the mean
        score (``"mean"``; ``"pass@k"`` reads the same) in the per-system table and the
        comparisons, at k = 1 only, beside :func:`bayeval.bootstrap.mean_score` and the
        paired ``bootstrap.compare(..., metric="mean")``; its tasks estimand has no bootstrap
        twin (``bootstrap_unit`` is ``None``).
    estimand : {"population", "tasks"}, optional
        Estimand of the comparisons and decisions; default ``"population"`` where the model
        has it, else ``"tasks"``. The per-system table shows every estimand of the model.
    margin : float, default 0.0
        Practical margin (absolute) of the comparisons and the smallest practical effect of
        the power analysis.
    prob : float, default 0.95
        Probability a decision needs (see :func:`bayeval.noninferiority`).
    superior : bool, default False
        Decide superiority by ``margin`` instead of non-inferiority.
    n_boot, seed : int
        Replicates and seed of every bootstrap (each bootstrap starts from ``seed``).
    ci_prob : float, default 0.95
        Probability of every interval (equal-tailed posterior, percentile bootstrap).
    compare_k : int, optional
        k of the comparisons; default: the first ``k``.
    power_effects : sequence of float, optional
        Effects for the power analysis; default ``(margin,)`` when ``margin > 0``, else
        ``(0.01, 0.02, 0.05)``.
    alpha, power : float, default 0.05 and 0.8
        Type I error rate and power of the power analysis.
    adjust : {"holm", "bonferroni", "bh"}, default "holm"
        Multiplicity adjustment of the comparisons' bootstrap p-values.
    notes : sequence of str
        Caveats to list (e.g. warnings raised while reading and fitting).
    command : str, optional
        The command line that produced the results, recorded for reproduction.
    title : str, optional
    compare_results : Results, optional
        The fit the comparisons are read from (e.g. the paired ``logit_normal`` model of just
        the compared systems, while ``results`` gives the per-system table); default
        ``results``. Both must come from the same data.
    allow_harness_change : bool, default False
        Compare systems evaluated under different harness digests (refused otherwise); each
        comparison's ``harness`` entry then says what changed, and so does a note.
    cost : str, optional
        A per-attempt covariate (``from_frame(..., covariates=[cost])``): adds the ``cost``
        section, the evidence table of cost and success (:func:`bayeval._cost.evidence`):
        per system pass@1 and pass@k per attempt, the paired effect against the reference,
        cost per success, the timeout and error rates, the cost-success frontier, every
        pair's P(dominates) and the budget curve, posterior next to bootstrap.
    cost_reference : str, optional
        The reference system of the cost table's paired effects; default the first
        comparison's baseline, else the system with the highest posterior pass@1.
    cost_model : {"bayesian_bootstrap", "lognormal"}, default "bayesian_bootstrap"
        The posterior's cost side in the cost table (:meth:`bayeval.Results.cost`).
    latency : bool or {"lognormal", "bayesian_bootstrap"}, default False
        Add the ``latency`` section (the data needs ``from_frame(..., latency=...)``): per
        system the p50 and p95 of attempt latency, posterior next to bootstrap, with the
        timeout and error rates (:func:`bayeval._cost.latency_table`). ``True`` takes the
        log-normal posterior with its check; a model name chooses the posterior.

    Returns
    -------
    dict
        Sections ``estimand``, ``data``, ``metrics``, ``comparisons``, ``multiplicity``,
        ``diagnostics``, ``systematic``, ``split`` (the task split the data are a part of,
        from :func:`bayeval.split_tasks`, and how many systems were scored on it; ``None``
        otherwise), ``notes`` and ``settings``; numbers are Python
        floats/ints, ``None`` where undefined.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.report import report_data
    >>> data = be.from_counts([[3, 5, 1, 8, 6], [6, 9, 2, 9, 7]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, model="hierarchical")
    >>> out = report_data(res, comparisons=[("B", "A")], margin=0.02, n_boot=500)
    >>> out["comparisons"][0]["bayes"]["decision"]["test"]
    'non-inferiority'
    >>> sorted({row["estimand"] for row in out["metrics"]})
    ['population', 'tasks']
    """
    if not isinstance(results, Results):
        raise TypeError(f"results must be a bayeval Results; got {type(results).__name__}")
    ks, _ = validate_k(k)
    ks = sorted({1, *ks.tolist()})
    if results.data.has_scores:  # scores (score=): the mean score, at k = 1 only
        if ks != [1] or (compare_k is not None and compare_k != 1):
            raise ValueError(
                f"a fit of scores (data built with score=) reports the mean "
                f"score, which has no k: leave k and compare_k at 1; got k={k!r}"
                + ("" if compare_k is None else f", compare_k={compare_k!r}")
            )
        if metric not in ("mean", "pass@k"):
            raise ValueError(
                f"a fit of scores (data built with score=) reports metric='mean' "
                f"(the mean score); {metric!r} is a metric of 0/1 outcomes"
            )
        if cost is not None:
            raise ValueError(
                "the cost table is one of 0/1 outcomes (cost per success); the "
                "report of scores (data built with score=) is of the mean score: "
                "give the outcomes as success= to price successes"
            )
        metric = "mean"
    elif metric == "mean":
        raise ValueError(
            f"metric='mean' is the mean of partial-credit scores, reported for "
            f"model='zoib' (data built with score=); this fit is "
            f"{results.model!r}: use metric='pass@k'"
        )
    else:
        validate_choice("metric", metric, METRICS)
    if estimand is None:
        estimand = "population" if "population" in results.estimands else "tasks"
    validate_choice("estimand", estimand, ("population", "tasks"))
    if estimand not in results.estimands:
        raise ValueError(
            f"model {results.model!r} supports estimand in "
            f"{list(results.estimands)}; got {estimand!r}"
        )
    margin = validate_margin(margin)
    prob = validate_prob("prob", prob)
    ci_prob = validate_prob("ci_prob", ci_prob)
    alpha = validate_prob("alpha", alpha)
    power = validate_prob("power", power)
    n_boot = validate_positive_int("n_boot", n_boot, 2)
    seed = validate_seed(seed)
    validate_choice("adjust", adjust, ADJUST_METHODS)
    if compare_k is None:
        compare_k = int(validate_k(k)[0][0])
    compare_k = validate_positive_int("compare_k", compare_k)
    if power_effects is not None:
        power_effects = tuple(power_effects)
        bad = [
            e
            for e in power_effects
            if isinstance(e, bool)
            or not isinstance(e, (int, float))
            or not math.isfinite(e)
            or e <= 0
        ]
        if bad or not power_effects:
            raise ValueError(f"power_effects must be positive numbers; got {power_effects!r}")
    compare_results = results if compare_results is None else compare_results
    if not isinstance(compare_results, Results):
        raise TypeError(
            f"compare_results must be a bayeval Results; got {type(compare_results).__name__}"
        )
    if compare_results is not results and estimand not in compare_results.estimands:
        raise ValueError(
            f"compare_results (model {compare_results.model!r}) has no {estimand!r} estimand"
        )
    pairs = _check_comparisons(comparisons, compare_results.systems)
    if cost is not None:
        from bayeval._cost import _check_column

        _check_column(results.data, cost)
        if cost_reference is not None and cost_reference not in results.systems:
            raise ValueError(
                f"cost_reference must be one of the systems "
                f"{describe_values([str(x) for x in results.systems])}; got "
                f"{cost_reference!r}"
            )
    if latency is not False and latency is not True:
        from bayeval._cost import LATENCY_MODELS

        validate_choice("latency", latency, LATENCY_MODELS)
    if latency and not results.data.has_latency:
        raise ValueError(
            "latency=True needs per-attempt durations: build the data with "
            "from_frame(..., latency='seconds') or latency=('start', 'end')"
        )
    if isinstance(notes, str):
        notes = [notes]

    settings = {
        "k": ks,
        "metric": metric,
        "estimand": estimand,
        "margin": float(margin),
        "prob": prob,
        "superior": bool(superior),
        "n_boot": n_boot,
        "seed": seed,
        "ci_prob": ci_prob,
        "ci_kind": "equal-tailed (posterior), percentile (bootstrap)",
        "compare_k": compare_k,
        "power_effects": list(power_effects or []) or None,
        "alpha": alpha,
        "power": power,
        "adjust": adjust,
        "comparisons": [list(p) for p in pairs],
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayevalWarning)
        data_section = _data_section(results)
        metrics = _metrics_section(results, ks, n_boot, seed, ci_prob, estimand)
        comparisons_out = _comparisons_section(
            compare_results,
            pairs,
            metric,
            compare_k,
            estimand,
            float(margin),
            prob,
            superior,
            n_boot,
            seed,
            ci_prob,
            power_effects,
            alpha,
            power,
            allow_harness_change,
        )
        diagnostics = _diagnostics_section(results)
        cost_section = _cost_section(
            results, cost, cost_reference, pairs, ks, n_boot, seed, ci_prob, cost_model
        )
        latency_section = _latency_section(results, latency, n_boot, seed, ci_prob)
    skipped = _resampled_clusters(results.data)[1]
    harness_notes = [
        f"{entry['label']}: {entry['harness']['note']}"
        for entry in comparisons_out
        if entry["harness"]["note"]
    ]
    split = _split_section(results)
    split_notes = [split["note"]] if split and split["optimism_of_best"] is not None else []
    all_notes = list(
        dict.fromkeys(
            [str(n) for n in notes]
            + _collect(caught)
            + ([skipped] if skipped else [])
            + harness_notes
            + split_notes
        )
    )
    n_clusters = data_section["clusters"]["count"] if data_section["clusters"] else None
    return {
        "schema_version": SCHEMA_VERSION,
        "title": title
        or (
            f"bayeval report: {data_section['n_systems']} system(s) x "
            f"{data_section['n_tasks']} task(s)"
        ),
        "estimand": {
            "name": estimand,
            "description": _estimand_words(
                estimand, results.model, data_section["n_tasks"], n_clusters
            ),
            "other": {
                e: _estimand_words(e, results.model, data_section["n_tasks"], n_clusters)
                for e in results.estimands
                if e != estimand
            },
            "model": results.model,
        },
        "data": data_section,
        "metrics": metrics,
        "comparisons": comparisons_out,
        "multiplicity": _multiplicity_section(comparisons_out, adjust),
        "diagnostics": diagnostics,
        "comparison_fit": (
            None
            if compare_results is results
            else {
                "model": compare_results.model,
                "systems": [str(s) for s in compare_results.systems],
                "sampler": compare_results.tree.attrs.get("sampler"),
                "diagnostics": _diagnostics_section(compare_results),
            }
        ),
        "systematic": _systematic_section(data_section),
        "split": split,
        **({"cost": cost_section} if cost_section else {}),
        **({"latency": latency_section} if latency_section else {}),
        "notes": all_notes,
        "settings": _settings_section(results, settings, command),
    }


def rank_data(
    results,
    data,
    *,
    metric="pass@k",
    k=1,
    estimand="population",
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    prob=0.95,
    top=3,
    n_replicates=200,
) -> dict:
    """Everything ``bayeval rank`` prints, as plain data (JSON-ready): the record of
    :func:`bayeval.analyses.ranks.rank_summary` (same arguments), stamped with
    :data:`SCHEMA_VERSION`.

    One record per system, best first by posterior mean: the posterior rank (mean and
    interval), P(best), P(in the top ``top``), the group at ``prob``, the bootstrap twin's
    simultaneous rank set, and the winner's curse.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.report import rank_data
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [8, 9, 8, 9]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=300, chains=2, seed=0)
    >>> out = rank_data(res, data, n_boot=500, n_replicates=100)
    >>> [row["system"] for row in out["systems"]], out["winner"]["pick"]
    (['C', 'B', 'A'], 'C')
    """
    summary = rank_summary(
        results,
        data,
        metric=metric,
        k=k,
        estimand=estimand,
        unit=unit,
        ci_prob=ci_prob,
        n_boot=n_boot,
        seed=seed,
        prob=prob,
        top=top,
        n_replicates=n_replicates,
    )
    attrs = summary.attrs
    integers = ("rank_lower", "rank_upper", "group", "bootstrap_rank_lower", "bootstrap_rank_upper")
    names = ("mean", "observed", "rank_mean", "rank_lower", "rank_upper", "prob_best")
    names += ("prob_top", "group", "bootstrap_rank_lower", "bootstrap_rank_upper")
    rows = [
        {
            "system": system,
            **{
                name: (int if name in integers else float)(summary[name].sel(system=system))
                for name in names
            },
        }
        for system in summary["system"].values.tolist()
    ]
    lower, upper = (float(v) for v in summary["value_interval"].values)
    winner = {
        "pick": attrs["pick"],
        "tied_with": list(attrs["tied_with"]),
        "naive_score": float(summary["naive_score"]),
        "value_mean": float(summary["value_mean"]),
        "value_lower": lower,
        "value_upper": upper,
        "optimism": float(summary["optimism"]),
        "prob_pick_is_best": float(summary["prob_pick_is_best"]),
        "expected_optimism": float(summary["expected_optimism"]),
        "replicate_prob_best_picked": float(summary["replicate_prob_best_picked"]),
    }
    paired = "yes" if attrs["paired"] else f"no: {attrs['paired_note']}"
    return {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            **{name: attrs[name] for name in ("metric", "k", "estimand", "prob", "top")},
            **{name: attrs[name] for name in ("ci_prob", "unit", "n_boot", "seed", "model")},
            "paired": paired,
        },
        "group_rule": attrs["group_rule"],
        "bootstrap": {
            "construction": attrs["bootstrap_construction"],
            "critical_value": attrs["bootstrap_critical_value"],
            "unit": unit,
        },
        "systems": rows,
        "winner": winner,
    }


def _cost_section(
    results, column, reference, pairs, ks, n_boot, seed, ci_prob, model="bayesian_bootstrap"
):
    """The cost-success evidence table, or None without a cost column."""
    if column is None:
        return None
    from bayeval._cost import evidence

    if results.data.missing == "bounds":
        raise ValueError(
            "the cost table needs one success count per attempt; under "
            "missing='bounds' the successes have two extremes: use missing='fail' "
            "or 'exclude'"
        )
    if reference is None and pairs:
        reference = pairs[0][1]
    section = evidence(
        results,
        column,
        k=ks,
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        reference=reference,
        model=model,
    )
    order = sorted(
        range(len(section["rows"])),
        key=lambda i: -(section["rows"][i]["pass_at_1_bayes_mean"] or 0.0),
    )
    section["rows"] = [section["rows"][i] for i in order]
    return section


def _latency_section(results, wanted, n_boot, seed, ci_prob):
    """The latency table (p50 and p95 per system), or None when not asked for."""
    if not wanted:
        return None
    from bayeval._cost import latency_table

    return latency_table(
        results.data,
        q=(0.5, 0.95),
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        model="lognormal" if wanted is True else wanted,
    )


def _collect(caught) -> list[str]:
    """Messages of caught bayeval warnings; other warnings are issued again."""
    notes = []
    for item in caught:
        if issubclass(item.category, BayevalWarning):
            notes.append(str(item.message))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    return notes


# -- plots -------------------------------------------------------------------------------------
def _plot_specs(results, report: dict, compare_results=None) -> list[tuple]:
    """(name, title, caption, callable) for each figure of the report; the comparisons' figures
    come from ``compare_results`` where the comparisons were read from it."""
    from bayeval import plots

    paired = results if compare_results is None else compare_results
    s = report["settings"]["report"]
    estimand = s["estimand"]
    k0 = s["compare_k"]
    specs = [
        (
            "forest",
            f"{s['metric'].replace('k', str(k0))} by system",
            (
                f"Posterior mean and {s['ci_prob']:.0%} interval ({estimand} estimand) next to "
                "the bootstrap twin."
            ),
            lambda: plots.plot_forest(
                results,
                k=k0,
                metric=s["metric"],
                estimand=estimand,
                bootstrap=True,
                n_boot=s["n_boot"],
                seed=s["seed"],
                ci_prob=s["ci_prob"],
            ),
        )
    ]
    scores = s["metric"] == "mean"  # the forest and pass@k plots draw 0/1 metrics only
    if scores:
        specs = []
    trials = report["data"]["trials_per_task"]["min"]
    if trials is not None and trials > 1 and not scores:
        top = int(min(10, trials))
        specs.append(
            (
                "pass_at_k",
                "pass@k against k",
                (
                    f"pass@k for k = 1..{top} ({estimand} estimand) with "
                    f"{s['ci_prob']:.0%} intervals."
                ),
                lambda: plots.plot_pass_at_k(
                    results, k=range(1, top + 1), estimand=estimand, ci_prob=s["ci_prob"]
                ),
            )
        )
    for i, entry in enumerate(report["comparisons"]):
        cand, base = entry["candidate"], entry["baseline"]
        specs.append(
            (
                f"effect_{i}",
                f"Effect: {entry['label']}",
                (
                    f"Posterior of {_metric_name(s['metric'], 1) if scores else s['metric']}"
                    f" ({estimand}{'' if scores else f', k={k0}'}) of {cand} minus "
                    f"{base}, margin {s['margin']:g}."
                ),
                lambda c=cand, b=base: plots.plot_effect(
                    paired,
                    c,
                    b,
                    metric=s["metric"],
                    k=k0,
                    estimand=estimand,
                    margin=s["margin"],
                    ci_prob=s["ci_prob"],
                ),
            )
        )
        specs.append(
            (
                f"task_rates_{i}",
                f"Task rates: {entry['label']}",
                f"Per-task posterior rates of {cand} against {base}.",
                lambda c=cand, b=base: plots.plot_task_rates(paired, c, b, ci_prob=s["ci_prob"]),
            )
        )
    curves = report.get("curves")
    for i, row in enumerate(curves["rows"] if curves else []):
        cand, base = row["candidate"], row["baseline"]
        specs.append(
            (
                f"curve_{i}",
                f"Effect over k: {cand} - {base}",
                (
                    f"{curves['metric']} of {cand} minus {base} at k = "
                    f"{', '.join(map(str, curves['k']))} ({curves['estimand']} estimand): "
                    f"posterior mean, pointwise {s['ci_prob']:.0%} intervals and the band "
                    "over all k, beside the paired task bootstrap's band."
                ),
                lambda c=cand, b=base: plots.plot_compare_curve(
                    paired,
                    c,
                    b,
                    k=curves["k"],
                    metric=curves["metric"],
                    estimand=curves["estimand"],
                    ci_prob=s["ci_prob"],
                    data=paired.data,
                    n_boot=curves["n_boot"],
                    seed=s["seed"],
                ),
            )
        )
    if report["diagnostics"]["ppc"]:
        chosen = list(
            dict.fromkeys(
                label
                for entry in report["comparisons"]
                for label in (entry["candidate"], entry["baseline"])
            )
        )
        why = "the compared systems"
        if not chosen:
            worst = sorted(
                report["diagnostics"]["ppc"],
                key=lambda row: row["p_value"] if row["p_value"] is not None else 2.0,
            )
            chosen = list(dict.fromkeys(row["system"] for row in worst))[:_PPC_PANELS]
            why = (
                "every system"
                if len(chosen) == len(results.systems)
                else f"the {len(chosen)} systems with the smallest p-values"
            )
        specs.append(
            (
                "ppc",
                "Posterior predictive check",
                (
                    "Observed per-task success-count histogram against the fitted "
                    f"population, for {why}; the table above lists every system."
                ),
                lambda: plots.plot_ppc(results, system=chosen),
            )
        )
    if report.get("cost"):
        from bayeval._plot_cost import plot_cost_success

        c = report["cost"]
        specs.append(
            (
                "cost_success",
                "Success against cost",
                (
                    f"pass@1 per attempt against the mean cost of an attempt "
                    f"({c['column']}) with {s['ci_prob']:.0%} posterior intervals; the line "
                    "joins the systems on the cost-success frontier (no other system "
                    "succeeds as often for less)."
                ),
                lambda: plot_cost_success(
                    results.cost(
                        c["column"],
                        ci_prob=s["ci_prob"],
                        n_draws=c["n_draws"],
                        seed=s["seed"],
                        model=c["cost_model"],
                    )
                ),
            )
        )
    totals = report["data"]["status_totals"]
    if any(v for st, v in totals.items() if st != "ok"):
        specs.append(
            (
                "status",
                "Outcome statuses",
                "Attempts by status and system.",
                lambda: plots.plot_status(results.data),
            )
        )
    return specs


def _matplotlib_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _figures(results, report: dict, compare_results=None) -> tuple[list[dict], list[str]]:
    """Render the plots to PNG bytes; returns the figures and notes about plots left out."""
    if not _matplotlib_available():
        return [], [PLOTS_HINT]
    try:
        import matplotlib.pyplot as plt

        specs = _plot_specs(results, report, compare_results)
    except ImportError as exc:
        return [], [f"plots are unavailable ({exc}); {PLOTS_HINT}"]
    figures, notes = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayevalWarning)
        for name, title, caption, draw in specs:
            try:
                fig, _ = draw()
            except Exception as exc:  # noqa: BLE001 - one broken figure must not cost the report
                notes.append(f"the {title!r} plot could not be drawn: {type(exc).__name__}: {exc}")
                continue
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
            plt.close(fig)
            figures.append(
                {"name": name, "title": title, "caption": caption, "png": buffer.getvalue()}
            )
    notes += [n for n in _collect(caught) if n not in report["notes"]]
    return figures, list(dict.fromkeys(notes))


# -- rendering ---------------------------------------------------------------------------------
def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _amount(value) -> str:
    """A cost with three significant digits (no exponent), ``n/a`` when undefined."""
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def _amounts(lower, upper) -> str:
    if lower is None and upper is None:
        return "n/a"
    return f"[{_amount(lower)}, {'inf' if upper is None else _amount(upper)}]"


def _signed(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def _interval(lower, upper, digits: int = 3) -> str:
    if lower is None or upper is None:
        return "n/a"
    return f"[{lower:.{digits}f}, {upper:.{digits}f}]"


def _pvalue(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def _percent(value) -> str:
    if value is None:
        return "n/a"
    share = 100 * value
    return f"{share:.0f}%" if abs(share - round(share)) < 1e-9 else f"{share:.1f}%"


def _md(value) -> str:
    """A label as Markdown code, safe inside a table cell."""
    text = str(value).replace("`", "'").replace("|", "\\|")
    return f"`{text}`"


def _md_text(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _metric_name(metric: str, k) -> str:
    if metric == "mean":
        return "mean score"
    return metric.replace("k", str(k), 1) if metric == "pass@k" else f"pass^{k}"


_ENV_OPTIONS = {
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
    "undefined": jinja2.StrictUndefined,
}


#: Template of each format, in the package folder ``bayeval/templates``.
TEMPLATES = {"html": "report.html.j2", "markdown": "report.md.j2"}


def _environment(fmt: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bayeval", "templates"),
        autoescape=(fmt == "html"),
        **_ENV_OPTIONS,
    )
    env.filters.update(
        num=_fmt,
        signed=_signed,
        pvalue=_pvalue,
        md=_md,
        mdtext=_md_text,
        metric_name=_metric_name,
        pct=_percent,
    )
    env.globals.update(interval=_interval, amounts=_amounts)
    env.filters.update(amount=_amount)
    return env


def _render(report: dict, figures: list[dict], fmt: str, image_src, plot_notes) -> str:
    env = _environment(fmt)
    by_name = {f["name"]: f for f in figures}

    def fig(name):
        figure = by_name.get(name)
        if figure is None:
            return ""
        src = image_src(figure)
        if fmt == "html":
            return markupsafe.Markup(
                '<figure><img src="{}" alt="{}"><figcaption>{}</figcaption></figure>\n'
            ).format(src, figure["title"], figure["caption"])
        return f"\n![{_md_text(figure['title'])}]({src})\n\n*{_md_text(figure['caption'])}*\n"

    notes = list(report["notes"]) + [n for n in plot_notes if n not in report["notes"]]
    has_bounds = any(row["missing_bound"] for row in report["metrics"])
    has_cluster_boot = any("cluster_bootstrap_estimate" in row for row in report["metrics"])
    template = env.get_template(TEMPLATES[fmt])
    return template.render(
        r=report,
        fig=fig,
        notes=notes,
        has_bounds=has_bounds,
        has_cluster_boot=has_cluster_boot,
        clusters_shown=_CLUSTERS_SHOWN,
        plots_missing=next((n for n in plot_notes if PLOTS_HINT in n), None),
    )


def _data_uri(figure) -> str:
    return "data:image/png;base64," + base64.b64encode(figure["png"]).decode("ascii")


def _resolve(results, data, settings) -> dict:
    if not isinstance(results, Results):
        raise TypeError(f"results must be a bayeval Results; got {type(results).__name__}")
    if data is None:
        return report_data(results, **settings)
    if settings:
        raise TypeError(
            "give either data= (a report_data dict) or report settings, not both; "
            f"got settings {sorted(settings)}"
        )
    if not isinstance(data, dict) or "settings" not in data or "metrics" not in data:
        raise TypeError("data must be the dict returned by report_data")
    if data["settings"]["fit"]["input_hash"] != results.tree.attrs["input_hash"]:
        raise ValueError("data was computed from other results (their input hashes differ)")
    return data


def build_report(results, fmt: str = "html", plots: bool = True, data=None, **settings) -> str:
    """The report card as an HTML or Markdown string, plots inline.

    Parameters
    ----------
    results : Results
    fmt : {"html", "markdown"}, default "html"
        HTML is one self-contained page; both formats embed the plots as base64 PNG
        (``data:`` URIs). :func:`write_report` writes Markdown plots as files instead.
    plots : bool, default True
        Draw the plots (they need matplotlib, ``pip install 'bayeval[plots]'``; without it
        the report says so and keeps every number).
    data : dict, optional
        A :func:`report_data` result to render instead of computing one.
    **settings
        Arguments of :func:`report_data` (``comparisons=``, ``k=``, ``margin=``, ...);
        ``compare_results=`` (the fit the comparisons were read from) also draws the
        comparisons' figures from it, with ``data=`` too.

    Returns
    -------
    str

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.report import build_report
    >>> data = be.from_counts([[3, 5, 1, 8, 6], [6, 9, 2, 9, 7]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, model="hierarchical")
    >>> text = build_report(res, fmt="markdown", plots=False, comparisons=[("B", "A")],
    ...                     n_boot=500)
    >>> text.splitlines()[0]
    '# bayeval report: 2 system(s) x 5 task(s)'
    >>> "## Power for the smallest practical effect" in text
    True
    """
    validate_choice("fmt", fmt, tuple(FORMATS))
    compare_results = settings.pop("compare_results", None)
    if data is None and compare_results is not None:
        settings["compare_results"] = compare_results
    report = _resolve(results, data, settings)
    figures, plot_notes = _figures(results, report, compare_results) if plots else ([], [])
    return _render(report, figures, fmt, _data_uri, plot_notes)


def write_report(results, path, plots: bool = True, data=None, **settings) -> Path:
    """Write the report card to ``path``: ``.html`` (self-contained) or ``.md``.

    A Markdown report gets its plots as PNG files in a folder ``<stem>_files/`` beside it,
    linked relatively; an HTML report embeds them.

    Parameters
    ----------
    results : Results
    path : str or os.PathLike
        Ends in ``.html``/``.htm`` or ``.md``/``.markdown``.
    plots, data, **settings
        As in :func:`build_report`.

    Returns
    -------
    pathlib.Path
        The report's path.

    Examples
    --------
    >>> import os, tempfile, bayeval as be
    >>> from bayeval.report import write_report
    >>> res = be.fit(be.from_counts([[3, 5, 1, 8, 6]], trials=10), draws=200, chains=2,
    ...              seed=0)
    >>> path = write_report(res, os.path.join(tempfile.mkdtemp(), "card.md"), plots=False,
    ...                     n_boot=500)
    >>> path.read_text().startswith("# bayeval report")
    True
    """
    path = Path(path)
    suffix = path.suffix.lower()
    fmt = next((name for name, suffixes in FORMATS.items() if suffix in suffixes), None)
    if fmt is None:
        allowed = [s for suffixes in FORMATS.values() for s in suffixes]
        raise ValueError(f"the report path must end in one of {allowed}; got {str(path)!r}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"the folder of the report path does not exist: '{path.parent}'")
    compare_results = settings.pop("compare_results", None)
    if data is None and compare_results is not None:
        settings["compare_results"] = compare_results
    report = _resolve(results, data, settings)
    figures, plot_notes = _figures(results, report, compare_results) if plots else ([], [])
    if fmt == "html" or not figures:
        text = _render(report, figures, fmt, _data_uri, plot_notes)
    else:
        folder = path.with_name(f"{path.stem}_files")
        folder.mkdir(exist_ok=True)
        for figure in figures:
            (folder / f"{figure['name']}.png").write_bytes(figure["png"])
        text = _render(report, figures, fmt, lambda f: f"{folder.name}/{f['name']}.png", plot_notes)
    path.write_text(text, encoding="utf-8")
    return path
