"""Every number of the report card as a JSON-ready ``dict``: :func:`report_data`.

The sections are read from the fit by the functions that compute them: each system's metrics
beside its bootstrap twin (:func:`bayeval.crosscheck`), each comparison's effect and decision
beside the paired bootstraps, the power, the multiplicity family, the fit's diagnostics, the
cost and latency tables where asked for; then the systematic uncertainties no interval covers,
the notes and the settings that reproduce it. Statistical caveats raised on the way
(:class:`bayeval.BayevalWarning`) become the report's *Notes* instead of warnings.
"""

from __future__ import annotations

import json
import math
import platform
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import cast

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
from bayeval.analyses.cost import _check_column
from bayeval.analyses.latency import LATENCY_MODELS
from bayeval.data.clusters import default_clusters, estimand_words
from bayeval.estimators import METRICS
from bayeval.report._format import _metric_name
from bayeval.report._systems import (
    _data_section,
    _diagnostics_section,
    _estimand_words,
    _metrics_section,
    _resampled_clusters,
    _split_section,
    _system_order,
)
from bayeval.report._values import _collect, _num, _version
from bayeval.report.comparisons import (
    _check_comparisons,
    _comparisons_section,
    _multiplicity_section,
)
from bayeval.report.judge import judge_section
from bayeval.report.sections import _cost_section, _latency_section
from bayeval.results import Results

__all__ = ["ADJUST_METHODS", "SCHEMA_VERSION", "ReportOptions", "in_order", "report_data"]

#: Version of the JSON layout of :func:`report_data` (``schemas/report.schema.json`` beside this
#: module): raised when a key is renamed, removed or changes type.
SCHEMA_VERSION = "3"
ADJUST_METHODS = ("bonferroni", "holm", "bh")
_NO_PAIRS = ()  # report_data's default comparisons: told apart from pairs given with options=

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
            "The numbers hold for this harness, scaffold, prompt, container image and grader "
            "version. Systems evaluated at different times or with different harness versions "
            "differ by more than their sampling noise; re-run the baseline with the candidate's "
            "harness before trusting a small effect."
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
            "The population estimand generalises to new tasks drawn like these, not to other "
            "task types, languages, repositories or difficulty mixes. A benchmark curated to be "
            "hard for some systems (or filtered with one of them) is not a random sample of "
            "anything."
        ),
    ),
]


def in_order(rows: list[dict], order: Sequence[str], key: str = "system") -> list[dict]:
    """Rows of a report section in the report's order of systems (``report["order"]``).

    A stable sort on each row's ``key``: rows of one system keep their own order (bounds, k),
    and rows of a system the order does not name go last.

    Examples
    --------
    >>> from bayeval.report.assemble import in_order
    >>> rows = [{"system": "A", "k": 1}, {"system": "B", "k": 1}, {"system": "A", "k": 5}]
    >>> [(r["system"], r["k"]) for r in in_order(rows, ["B", "A"])]
    [('B', 1), ('A', 1), ('A', 5)]
    """
    position = {str(system): i for i, system in enumerate(order)}
    return sorted(rows, key=lambda row: position.get(str(row[key]), len(position)))


def _systematic_section(data_section, judged=None) -> list[dict]:
    items = [{"name": name, "text": text} for name, text in _SYSTEMATIC]
    if judged is not None:  # the judge's error is inside the intervals: say what is left
        items[2]["text"] = (
            f"The verdicts of {judged['judge']!r} are corrected by the labelled attempts "
            f"(label design '{judged['label_design']}'; the Judge section): the intervals "
            "of the true outcome carry the judge's error, per system, as far as the labels "
            "are a sample of that design. The labels themselves are taken as correct, and "
            "a judge whose errors differ between labelled and unlabelled attempts is not "
            "corrected."
        )
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


@dataclass(frozen=True, kw_only=True)
class ReportOptions:
    """What :func:`report_data` reports, and how: every setting but the results.

    Parameters
    ----------
    comparisons : sequence of (candidate, baseline)
        Paired comparisons; together they form the multiplicity family.
    k : int or list of int, default 1
        The k of the per-system table (pass@1 is always included; pass^k for each k > 1).
    metric : {"pass@k", "pass^k", "mean"}, default "pass@k"
        Metric of the comparisons. A fit of scores (data built with ``score=``: ``fractional``,
        ``zoib``, or a binomial model where every score is 0 or 1) reports the mean
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
        Replicates (default 2000) and seed (default 0) of every bootstrap (each bootstrap
        starts from ``seed``).
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
        section, the evidence table of cost and success
        (:func:`bayeval.analyses.tradeoff.evidence`): per system pass@1 and pass@k per attempt,
        the paired effect against the reference, cost per success, the timeout and error rates,
        the cost-success frontier, every pair's P(dominates) and the budget curve, posterior next
        to bootstrap.
    cost_reference : str, optional
        The reference system of the cost table's paired effects; default the first
        comparison's baseline, else the system with the highest posterior pass@1.
    latency : bool or {"lognormal", "bayesian_bootstrap"}, default False
        Add the ``latency`` section (the data needs ``from_frame(..., latency=...)``): per
        system the p50 and p95 of attempt latency, posterior next to bootstrap, with the
        timeout and error rates (:func:`bayeval.analyses.latency.latency_table`). ``True`` takes the
        log-normal posterior with its check; a model name chooses the posterior.
    cost_model : {"bayesian_bootstrap", "lognormal"}, default "bayesian_bootstrap"
        The posterior's cost side in the cost table (:meth:`bayeval.Results.cost`).
    clusters : {"new", "observed"}, optional
        The population estimand of a fit with cluster effects (the paired models):
        a new task from a new cluster, or from the observed clusters; default what the
        clusters support (:func:`bayeval.data.clusters.default_clusters`), said in a note.
        Read by the comparisons' fit, and by the per-system table's where it has clusters.
    weighting : {"task", "cluster"}, default "task"
        How ``clusters="observed"`` averages the clusters: by their tasks, or equally.
    """

    comparisons: Sequence = ()
    k: int | Sequence[int] = 1
    metric: str = "pass@k"
    estimand: str | None = None
    margin: float = 0.0
    prob: float = 0.95
    superior: bool = False
    n_boot: int = 2000
    seed: int = 0
    ci_prob: float = 0.95
    compare_k: int | None = None
    power_effects: Sequence[float] | None = None
    alpha: float = 0.05
    power: float = 0.8
    adjust: str = "holm"
    notes: Sequence[str] = ()
    command: str | None = None
    title: str | None = None
    compare_results: Results | None = None
    allow_harness_change: bool = False
    cost: str | None = None
    cost_reference: str | None = None
    latency: bool | str = False
    cost_model: str = "bayesian_bootstrap"
    clusters: str | None = None
    weighting: str = "task"


def report_data(
    results, comparisons=_NO_PAIRS, *, options: ReportOptions | None = None, **settings
) -> dict:
    """Every number of the report card, as a JSON-ready ``dict``.

    Parameters
    ----------
    results : Results
        A fit from :func:`bayeval.fit`.
    comparisons : sequence of (candidate, baseline)
        Paired comparisons; together they form the multiplicity family.
    options : ReportOptions, optional
        Every other setting (:class:`ReportOptions`, which documents them); or give them as
        keywords, ``k=``, ``margin=``, ``n_boot=``, ... (not both).
    **settings
        The fields of :class:`ReportOptions`, as keywords.

    Returns
    -------
    dict
        Sections ``estimand``, ``data``, ``metrics``, ``comparisons``, ``multiplicity``,
        ``diagnostics``, ``systematic``, ``split`` (the task split the data are a part of,
        from :func:`bayeval.split_tasks`, and how many systems were scored on it; ``None``
        otherwise), ``notes`` and ``settings``; ``judge`` for a fit of the judge-aware model
        (:func:`bayeval.report.judge.judge_section`: the judge's error per system and each
        comparison's pass@1 effect on the true outcome beside the judge-only, labelled-only
        and PPI++ effects); ``cost`` and ``latency`` where asked for. Numbers are Python
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
    if options is None:
        options = ReportOptions(comparisons=comparisons, **settings)
    elif settings or comparisons is not _NO_PAIRS:
        given = sorted(settings) + ([] if comparisons is _NO_PAIRS else ["comparisons"])
        raise TypeError(
            f"give the settings either as options= or as keywords, not both; got {given}"
        )
    elif not isinstance(options, ReportOptions):
        raise TypeError(f"options must be a ReportOptions; got {type(options).__name__}")
    return _assemble(results, _checked(results, options))


def _checked(results, o: ReportOptions) -> ReportOptions:
    """The options checked against the results, with their defaults resolved.

    ``k`` the sorted k values with 1, ``metric``, ``estimand``, ``compare_k``, ``compare_results``
    and the ``comparisons`` as pairs.
    """
    if not isinstance(results, Results):
        raise TypeError(f"results must be a bayeval Results; got {type(results).__name__}")
    k, metric, compare_k, margin = o.k, o.metric, o.compare_k, o.margin
    ks = sorted({1, *validate_k(k)[0].tolist()})
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
        if o.cost is not None:
            raise ValueError(
                "the cost table is one of 0/1 outcomes (cost per success); the "
                "report of scores (data built with score=) is of the mean score: "
                "give the outcomes as success= to price successes"
            )
        metric = "mean"
    elif metric == "mean":
        raise ValueError(
            f"metric='mean' is the mean of partial-credit scores, reported for "
            f"model='fractional' or 'zoib' (data built with score=); this fit is "
            f"{results.model!r}: use metric='pass@k'"
        )
    else:
        validate_choice("metric", metric, METRICS)
    estimand = o.estimand
    if estimand is None:
        estimand = "population" if "population" in results.estimands else "tasks"
    validate_choice("estimand", estimand, ("population", "tasks"))
    if estimand not in results.estimands:
        raise ValueError(
            f"model {results.model!r} supports estimand in "
            f"{list(results.estimands)}; got {estimand!r}"
        )
    margin = validate_margin(margin)
    prob = validate_prob("prob", o.prob)
    ci_prob = validate_prob("ci_prob", o.ci_prob)
    alpha = validate_prob("alpha", o.alpha)
    power = validate_prob("power", o.power)
    n_boot = validate_positive_int("n_boot", o.n_boot, 2)
    seed = validate_seed(o.seed)
    validate_choice("adjust", o.adjust, ADJUST_METHODS)
    if compare_k is None:
        compare_k = int(validate_k(k)[0][0])
    compare_k = validate_positive_int("compare_k", compare_k)
    power_effects = o.power_effects
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
    compare_results = results if o.compare_results is None else o.compare_results
    if not isinstance(compare_results, Results):
        raise TypeError(
            f"compare_results must be a bayeval Results; got {type(compare_results).__name__}"
        )
    if compare_results is not results and estimand not in compare_results.estimands:
        raise ValueError(
            f"compare_results (model {compare_results.model!r}) has no {estimand!r} estimand"
        )
    pairs = _check_comparisons(o.comparisons, compare_results.systems)
    if o.clusters is not None:
        validate_choice("clusters", o.clusters, ("new", "observed"))
    # a fit without cluster effects refuses clusters= and weighting= here, not mid-report
    _population(compare_results, o.clusters, o.weighting, strict=True)
    if o.cost is not None:
        _check_column(results.data, o.cost)
        if o.cost_reference is not None and o.cost_reference not in results.systems:
            raise ValueError(
                f"cost_reference must be one of the systems "
                f"{describe_values([str(x) for x in results.systems])}; got "
                f"{o.cost_reference!r}"
            )
    if o.latency is not False and o.latency is not True:
        validate_choice("latency", o.latency, LATENCY_MODELS)
    if o.latency and not results.data.has_latency:
        raise ValueError(
            "latency=True needs per-attempt durations: build the data with "
            "from_frame(..., latency='seconds') or latency=('start', 'end')"
        )
    return replace(
        o,
        comparisons=pairs,
        k=ks,
        metric=metric,
        estimand=estimand,
        prob=prob,
        ci_prob=ci_prob,
        alpha=alpha,
        power=power,
        n_boot=n_boot,
        seed=seed,
        compare_k=compare_k,
        power_effects=power_effects,
        compare_results=compare_results,
        notes=[o.notes] if isinstance(o.notes, str) else o.notes,
    )


def _population(results, clusters, weighting, strict=False) -> dict:
    """The population estimand's ``clusters`` and ``weighting`` as ``results`` resolves them.

    Empty for a fit without cluster effects (``strict``: refuse clusters= and weighting=
    there).
    """
    if not results._paired and not strict:
        return {}
    return results._cluster_options("population", clusters, weighting)


def _assemble(results, o: ReportOptions) -> dict:
    """The report's sections from checked options (:func:`_checked`)."""
    # _checked resolved the defaults: these are set
    compare_results, estimand = cast(Results, o.compare_results), cast(str, o.estimand)
    compare_k = cast(int, o.compare_k)
    pairs, ks = o.comparisons, o.k
    table_population = _population(results, o.clusters, o.weighting)
    compare_population = _population(compare_results, o.clusters, o.weighting)
    settings = {
        "k": ks,
        "metric": o.metric,
        "estimand": estimand,
        "margin": float(o.margin),
        "prob": o.prob,
        "superior": bool(o.superior),
        "n_boot": o.n_boot,
        "seed": o.seed,
        "ci_prob": o.ci_prob,
        "ci_kind": "equal-tailed (posterior), percentile (bootstrap)",
        "compare_k": o.compare_k,
        "power_effects": list(o.power_effects or []) or None,
        "alpha": o.alpha,
        "power": o.power,
        "adjust": o.adjust,
        "comparisons": [list(p) for p in pairs],
        "clusters": o.clusters,
        "weighting": o.weighting,
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayevalWarning)
        order = _system_order(results, o.metric, compare_k, estimand, table_population)
        data_section = _data_section(results)
        metrics = _metrics_section(
            results, ks, o.n_boot, o.seed, o.ci_prob, estimand, order, table_population
        )
        comparisons_out = _comparisons_section(
            compare_results,
            pairs,
            o.metric,
            o.compare_k,
            estimand,
            float(o.margin),
            o.prob,
            o.superior,
            o.n_boot,
            o.seed,
            o.ci_prob,
            o.power_effects,
            o.alpha,
            o.power,
            o.allow_harness_change,
            compare_population,
        )
        diagnostics = _diagnostics_section(results)
        cost_section = _cost_section(
            results,
            o.cost,
            o.cost_reference,
            pairs,
            ks,
            o.n_boot,
            o.seed,
            o.ci_prob,
            o.cost_model,
        )
        latency_section = _latency_section(results, o.latency, o.n_boot, o.seed, o.ci_prob)
        judged = judge_section(
            results,
            pairs,
            estimand=estimand,
            ci_prob=o.ci_prob,
            clusters=o.clusters,
            weighting=o.weighting,
        )
    for rows in (
        data_section["status_counts"],
        data_section["design_effect"],
        diagnostics["ppc"],
        *([cost_section["rows"], cost_section["budget"]] if cost_section else []),
        *([latency_section["rows"]] if latency_section else []),
        *([judged["rows"]] if judged else []),
    ):
        rows[:] = in_order(rows, order)
    skipped = _resampled_clusters(results.data)[1]
    harness_notes = [
        f"{entry['label']}: {entry['harness']['note']}"
        for entry in comparisons_out
        if entry["harness"]["note"]
    ]
    split = _split_section(results)
    split_notes = [split["note"]] if split and split["optimism_of_best"] is not None else []
    n_clusters = data_section["clusters"]["count"] if data_section["clusters"] else None
    # the default population of a fit with clusters, and why: said once, in the notes
    default_note = None
    if o.clusters is None and n_clusters and (table_population or compare_population):
        default_note = default_clusters(results.data).note
    all_notes = list(
        dict.fromkeys(
            [str(n) for n in o.notes]
            + ([f"population estimand: {default_note}"] if default_note else [])
            + _collect(caught)
            + ([skipped] if skipped else [])
            + harness_notes
            + split_notes
        )
    )
    population = {
        name: table_population if name == "population" else {} for name in results.estimands
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "title": o.title
        or (
            f"bayeval report: {data_section['n_systems']} system(s) x "
            f"{data_section['n_tasks']} task(s)"
        ),
        "estimand": {
            "name": estimand,
            "description": _estimand_words(
                estimand, data_section["n_tasks"], n_clusters, population[estimand]
            ),
            "other": {
                e: _estimand_words(e, data_section["n_tasks"], n_clusters, population[e])
                for e in results.estimands
                if e != estimand
            },
            "model": results.model,
            # the per-system table's estimands in the words every output uses
            "words": {
                e: estimand_words(
                    e,
                    clusters=population[e].get("clusters"),
                    weighting=population[e].get("weighting", "task"),
                    n_tasks=data_section["n_tasks"],
                    n_clusters=n_clusters or 0,
                )
                for e in results.estimands
            },
            "clusters": table_population.get("clusters"),
            "weighting": table_population.get("weighting"),
            "clusters_note": default_note,
        },
        "order": {
            "systems": order,
            "by": (
                f"posterior mean of {_metric_name(o.metric, compare_k)} ({estimand} "
                "estimand), best first"
            ),
        },
        "data": data_section,
        "metrics": metrics,
        "comparisons": comparisons_out,
        "multiplicity": _multiplicity_section(comparisons_out, o.adjust),
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
        "systematic": _systematic_section(data_section, judged),
        "split": split,
        **({"cost": cost_section} if cost_section else {}),
        **({"latency": latency_section} if latency_section else {}),
        **({"judge": judged} if judged else {}),
        "notes": all_notes,
        "settings": _settings_section(results, settings, o.command),
    }
