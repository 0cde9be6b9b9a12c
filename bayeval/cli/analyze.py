"""``bayeval analyze``: fit, crosscheck with the bootstrap, compare, write JSON and a report."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import click
import pandas as pd

from bayeval._io import check_text_head
from bayeval.cli._fit import (
    check_harness,
    check_k_before_fit,
    check_k_for_any,
    check_pairs,
    fit,
)
from bayeval.cli._group import (
    EXIT_USAGE,
    InputError,
    Notes,
    command_line,
    echo_notes,
    many,
    models,
    report,
)
from bayeval.cli._input import load, read_roles
from bayeval.cli._options import (
    K_LIST,
    PROBABILITY,
    FitOptions,
    Outputs,
    ReadOptions,
    SummaryOptions,
    column_options,
    gather,
    model_options,
    output_options,
)
from bayeval.cli._output import (
    check_outputs,
    echo_comparisons,
    echo_contamination,
    echo_cost,
    echo_curves,
    echo_fit,
    echo_judge,
    echo_latency,
    echo_recipes,
    echo_table,
    header,
    notes_shown,
    report_data,
    write_json,
    write_report,
)
from bayeval.data.clusters import estimand_words
from bayeval.readers import detect_format
from bayeval.readers.table import load_table


@dataclass(frozen=True)
class CompareOptions:
    """The paired comparisons and their decisions.

    ``--compare``, ``--compare-k``, ``--margin``, ``--prob``, ``--superior``.
    """

    pairs: tuple[tuple[str, str], ...] = ()
    k: int | None = None
    margin: float = 0.0
    prob: float = 0.95
    superior: bool = False


@dataclass(frozen=True)
class GroupOptions:
    """One analysis per group of a table: ``--by`` and ``--scheduler``."""

    by: tuple[str, ...] = ()
    scheduler: str | None = None


@dataclass(frozen=True)
class CostOptions:
    """The cost table: ``--cost``, ``--cost-reference``, ``--cost-model``."""

    column: str | None = None
    reference: str | None = None
    model: str = "bayesian_bootstrap"


@dataclass(frozen=True)
class LatencyOptions:
    """The latency table: ``--latency`` and ``--latency-model``."""

    columns: str | None = None
    model: str = "lognormal"


@click.command(context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--k",
    "k",
    type=K_LIST,
    default="1",
    show_default=True,
    help="k values of pass@k and pass^k, comma-separated.",
)
@click.option(
    "--compare",
    "pairs",
    type=(str, str),
    multiple=True,
    metavar="CANDIDATE BASELINE",
    help="A paired comparison; repeat for several (they form the multiplicity family).",
)
@click.option(
    "--compare-k", type=click.IntRange(min=1), help="k of the comparisons [default: the first --k]."
)
@click.option(
    "--margin",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Practical margin (absolute, e.g. 0.02 for 2 points).",
)
@click.option(
    "--prob",
    type=PROBABILITY,
    default=0.95,
    show_default=True,
    help="Probability a decision needs.",
)
@click.option(
    "--superior", is_flag=True, help="Decide superiority by the margin instead of non-inferiority."
)
@click.option(
    "--by",
    "by",
    metavar="COLUMN",
    multiple=True,
    help="One analysis per value of this table column (repeat for several); prints "
    "one row per group and system.",
)
@click.option(
    "--flagged",
    "flagged_path",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Task ids flagged by a contamination check (one per line, "
    "or the JSON of bayeval overlap): the score on clean versus flagged tasks, each "
    "subset fitted alone, in the output and the report.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS|local",
    help="With --by: run the groups on a Dask cluster (a scheduler address, or "
    "'local' for local worker processes); needs bayeval[dask].",
)
@click.option(
    "--allow-harness-change",
    is_flag=True,
    help="Compare systems evaluated "
    "under different harness digests (refused otherwise); outputs say what changed.",
)
@click.option(
    "--cost",
    "cost_column",
    metavar="COLUMN",
    help="Column of each attempt's cost "
    "(outcome-row tables): cost per attempt and per success, pass@1 per attempt, "
    "the paired effect against --cost-reference, timeout and error rates, the "
    "cost-success frontier with P(A dominates B) and, for each --k, the cost of a "
    "first success retrying up to k times; posterior beside bootstrap, in the "
    "output, the JSON and the report.",
)
@click.option(
    "--cost-reference",
    metavar="SYSTEM",
    help="Reference system of the cost "
    "table's paired effects [default: the first --compare baseline, else the "
    "system with the highest posterior pass@1].",
)
@click.option(
    "--cost-model",
    type=click.Choice(["bayesian_bootstrap", "lognormal"]),
    default="bayesian_bootstrap",
    show_default=True,
    help="The posterior's cost side in the cost table: the Bayesian bootstrap over "
    "tasks (no shape assumed) or a hurdle log-normal with task and cluster "
    "effects shared by the systems (paired; models/cost.md has the coverage of "
    "both).",
)
@click.option(
    "--latency",
    "latency_columns",
    metavar="COLUMN|START,END",
    help="Each attempt's duration (outcome-row tables): a column of seconds, or "
    "start and end timestamp columns (ISO 8601). Per system the p50 and p95 "
    "latency with intervals (bootstrap over tasks beside the Bayesian bootstrap) "
    "and the timeout and error rates, in the output, the JSON and the report.",
)
@click.option(
    "--latency-model",
    type=click.Choice(["lognormal", "bayesian_bootstrap"]),
    default="lognormal",
    show_default=True,
    help="Posterior of the latency "
    "quantiles: a log-normal with task effects per system (checked against the "
    "data), or the Bayesian bootstrap over tasks (no shape assumed).",
)
@click.option(
    "--runs",
    "runs",
    type=click.Choice(["observed", "new"]),
    help="Compare recipes across training runs: each --compare names two recipes "
    "of data read with --reader-option run=COLUMN (each system a recipe/run "
    "checkpoint). observed: the mean over each recipe's checkpoints (these "
    "checkpoints); new: a new training run of each recipe (the logit_normal run "
    "level, population estimand). Posterior beside a paired task bootstrap "
    "(runs resampled too for new), in the output and the JSON.",
)
@click.option(
    "--score",
    "score_column",
    metavar="COLUMN",
    help="Column of partial-credit scores in [0, 1], one per attempt (row), instead "
    "of 0/1 outcomes [detected: score, when no success column is named or present]: "
    "each system's mean score from the paired logit-normal model with the "
    "fractional-binomial likelihood (fractional; scores that are all 0 or 1 get the "
    "binomial models) beside "
    "the task bootstrap, and with --compare the paired effect on the mean score "
    "beside the paired task bootstrap. Not with --success/--successes, --k or "
    "--compare-k other than 1, --metric pass^k, --cost, --runs, --by or --flagged.",
)
@column_options("--trials")
@model_options
@output_options
@gather(
    "compare",
    CompareOptions,
    {
        "pairs": "pairs",
        "k": "compare_k",
        "margin": "margin",
        "prob": "prob",
        "superior": "superior",
    },
)
@gather("groups", GroupOptions, ("by", "scheduler"))
@gather(
    "cost",
    CostOptions,
    {"column": "cost_column", "reference": "cost_reference", "model": "cost_model"},
)
@gather("latency", LatencyOptions, {"columns": "latency_columns", "model": "latency_model"})
def analyze(
    files,
    k,
    compare: CompareOptions,
    groups: GroupOptions,
    flagged_path,
    allow_harness_change,
    cost: CostOptions,
    latency: LatencyOptions,
    runs,
    score_column,
    read: ReadOptions,
    fitting: FitOptions,
    summary: SummaryOptions,
    out: Outputs,
):
    """Fit a model to evaluation results and crosscheck it with the bootstrap.

    FILE is a long table (.csv, .parquet, .jsonl, .json records) with one row per trial
    (system, task, success[, trial, cluster, stratum, status]) or per (system, task) with
    successes and trials; or a harness output bayeval reads (SWE-bench report, HumanEval or
    lm-eval samples, Inspect logs). Conventional column names are detected. A table of
    partial-credit scores in [0, 1] (--score COLUMN, or a detected score column) gives the
    mean score instead of pass@k. A judge's verdicts beside a sample of trusted labels
    (--judge COLUMN --success LABELS --label-design random) give the true outcome's pass@k,
    the judge's error per system integrated out (the judge-aware model).

    Prints each system's metric with its Bayesian interval beside its bootstrap twin, and
    each comparison's effect, interval, P(effect > 0) and decision. With several --k, each
    comparison is also drawn over k: pointwise intervals and a band over all k, where the
    curves cross and the tasks behind a reversal, beside the paired bootstrap's curve.

    \b
    Examples:
      bayeval analyze runs.csv --k 1,5 --report card.html
      bayeval analyze runs.csv --missing bounds --compare new old --margin 0.02
      bayeval analyze counts.csv --successes n_correct --trials-column n_samples --json out.json
      bayeval analyze runs.csv --cost cost_usd --k 1,3 --report card.html
      bayeval analyze counts.csv --k 1,2,5,10 --compare new old --estimand tasks
      bayeval analyze runs.csv --latency started_at,ended_at --json out.json
      bayeval analyze ckpts.csv --reader-option run=seed --compare rl sft --runs new
      bayeval analyze graded.csv --score score --compare new old --json out.json
      bayeval analyze judged.csv --judge verdict --success human --label-design random
    """  # noqa: D301 - click's no-rewrap mark "\b" is a backspace; r""" would break it
    read = replace(read, cost=cost.column, latency=latency.columns, score=score_column, scores=True)
    metric, by = summary.metric, groups.by
    if score_column is not None:  # refused before the file is read; a detected column below
        _check_score_options(
            k, compare.k, metric, cost.column, runs, by, flagged_path, fitting.model
        )
    _check_options(groups, cost, latency, out)
    if flagged_path is not None:  # a binary file is refused now, not after the fit
        check_text_head(flagged_path, reader="--flagged", expected="a list of task ids")
    if by:
        return _analyze_by(files, read, groups, fitting, summary.ci_prob, out, compare.pairs)
    if runs is not None and (by or not compare.pairs):
        raise click.UsageError(
            "--runs compares recipes: give --compare RECIPE_A RECIPE_B (and no --by)"
        )
    notes = Notes()
    with notes:
        data, lines = load(files, read)
    scores = data.has_scores
    if scores:
        _check_score_options(
            k, compare.k, metric, cost.column, runs, by, flagged_path, fitting.model, data
        )
        metric = "mean"
    given, recipe_pairs = compare.pairs, []
    if runs is not None:
        recipe_pairs = _check_recipe_pairs(data, given, runs, summary.estimand, metric)
        given = ()
    pairs = check_pairs(given, data.systems)
    checkpoints = [
        (s,)
        for s in data.systems
        if recipe_pairs
        and data.dataset["recipe"].sel(system=s).item()
        in {r for pair in recipe_pairs for r in pair}
    ]
    if not scores and (pairs or checkpoints):
        # the comparisons (and their curves over k) need every k of the compared systems
        check_k_before_fit(data, pairs or checkpoints, [*k, compare.k or k[0]], metric)
    elif not scores:  # the table gives each system the k its trials allow, marks the rest
        check_k_for_any(data, k, metric)
    check_harness(data, pairs or [tuple(s for (s,) in checkpoints)], allow_harness_change)
    if cost.reference is not None and cost.reference not in data.systems:
        raise click.BadParameter(
            f"no system {cost.reference!r}; systems: {', '.join(map(str, data.systems[:30]))}",
            param_hint="--cost-reference",
        )
    if cost.column is not None and data.missing == "bounds":
        raise click.UsageError(
            "--cost needs one success count per attempt; under --missing "
            "bounds the successes have two extremes: use fail or exclude"
        )
    to_stdout = out.json_path == "-"
    header(data, lines, err=to_stdout)  # what was read, before the fit's status line
    echo_notes(notes.items)
    read_notes = len(notes.items)
    res = fit(data, fitting, notes, pairs=pairs or checkpoints)
    echo_fit(res, err=to_stdout)
    echo_notes(notes.items, read_notes)
    card = report_data(
        res,
        comparisons=pairs,
        k=k,
        metric=metric,
        estimand=summary.estimand,
        margin=compare.margin,
        prob=compare.prob,
        superior=compare.superior,
        n_boot=summary.n_boot,
        seed=fitting.seed,
        ci_prob=summary.ci_prob,
        compare_k=compare.k,
        notes=notes.items,
        command=command_line(),
        allow_harness_change=allow_harness_change,
        cost=cost.column,
        cost_reference=cost.reference,
        cost_model=cost.model,
        latency=latency.model if latency.columns is not None else False,
        clusters=summary.clusters,
        weighting=summary.weighting,
    )
    # the table shows one estimand: notes about the other's bootstrap are the card's alone
    echo_notes(notes_shown(card["notes"][len(notes.items) :], [card["estimand"]["name"]]))
    card["input"] = {"files": [str(f) for f in files], "lines": lines}
    if recipe_pairs:
        card["recipes"] = report.recipes_section(
            res,
            recipe_pairs,
            runs=runs,
            k=compare.k or k[0],
            estimand=card["estimand"]["name"],
            margin=compare.margin,
            ci_prob=summary.ci_prob,
            n_boot=summary.n_boot,
            seed=fitting.seed,
            allow_harness_change=allow_harness_change,
        )
    curve_pairs = pairs if len(k) > 1 and metric in ("pass@k", "pass^k") else ()
    if curve_pairs:
        card["curves"] = report.curves_section(
            res,
            curve_pairs,
            k=k,
            metric=metric,
            estimand=card["estimand"]["name"],
            ci_prob=summary.ci_prob,
            n_boot=summary.n_boot,
            seed=fitting.seed,
            clusters=summary.clusters,
            weighting=summary.weighting,
        )
    if flagged_path:
        card["contamination"] = _contamination(
            res, data, flagged_path, metric, k[0], summary.ci_prob, fitting, notes
        )
    if not to_stdout:
        _echo_card(card, metric, summary.ci_prob)
    if out.json_path:
        write_json(card, out.json_path)
    if out.report_path:
        write_report(res, out.report_path, card)


def _check_options(groups: GroupOptions, cost: CostOptions, latency: LatencyOptions, out):
    """Refuse, before the file is read, options that go with others left out."""
    by = groups.by
    if latency.columns is not None and by:
        raise click.UsageError("--latency applies to one analysis; --by prints one row per group")
    check_outputs(out.json_path, out.report_path)
    if cost.reference is not None and cost.column is None:
        raise click.UsageError("--cost-reference applies to the cost table: give --cost COLUMN")
    if cost.model != "bayesian_bootstrap" and cost.column is None:
        raise click.UsageError("--cost-model applies to the cost table: give --cost COLUMN")
    if cost.column is not None and by:
        raise click.UsageError("--cost applies to one analysis; --by prints one row per group")
    if groups.scheduler and not by:
        raise click.UsageError("--scheduler runs the groups of --by COLUMN; give --by")


def _contamination(res, data, path, metric, k, ci_prob, fitting: FitOptions, notes) -> dict:
    """The report's clean-versus-flagged section of the tasks ``path`` flags."""
    flagged = _flagged_tasks(path, data.tasks)
    click.echo(
        f"contamination: fitting the {len(flagged)} flagged and the "
        f"{len(data.tasks) - len(flagged)} clean task(s) apart ...",
        err=True,
    )
    with notes:
        return report.contamination_section(
            res,
            flagged,
            file=path,
            metric=metric,
            k=k,
            ci_prob=ci_prob,
            **fitting.refit_options(),
        )


def _echo_card(card: dict, metric: str, ci_prob: float):
    """The metric table, the comparisons and each optional section the card has."""
    echo_table(card, [card["estimand"]["name"]], metric, ci_prob)
    echo_comparisons(card)
    if "cost" in card:  # tasks resampled, whatever the clusters: say which population
        clusters = card["data"]["clusters"]
        words = estimand_words(
            "population",
            n_tasks=card["data"]["n_tasks"],
            n_clusters=clusters["count"] if clusters else 0,
        )
        echo_cost(card["cost"], ci_prob, words)
    for name, echo in (
        ("latency", echo_latency),
        ("recipes", echo_recipes),
        ("curves", echo_curves),
    ):
        if name in card:
            echo(card[name], ci_prob)
    if "judge" in card:
        echo_judge(card["judge"], flagged=bool(card["diagnostics"].get("gates_failed")))
    if "contamination" in card:
        echo_contamination(card["contamination"])


def _check_score_options(
    k, compare_k, metric, cost_column, runs, by, flagged_path, model, data=None
):
    """Refuse, before any fit, the options of ``analyze`` that do not apply to scores.

    Parameters
    ----------
    k, compare_k, metric, cost_column, runs, by, flagged_path, model
        The options as given.
    data : EvalData, optional
        The data read (partial-credit scores); its interior scores decide ``--model``.

    Raises
    ------
    click.UsageError
        Naming the option, what it needs and what to do instead.
    """
    what = "partial-credit scores give the mean score, which"
    if tuple(k) != (1,) or compare_k not in (None, 1):
        flag = "--k" if tuple(k) != (1,) else "--compare-k"
        raise click.UsageError(
            f"{flag}: {what} has no k (pass@k and pass^k are metrics of 0/1 "
            "outcomes); leave --k and --compare-k at 1, or threshold the "
            "scores into a 0/1 column and give it as --success"
        )
    if metric != "pass@k":
        raise click.UsageError(
            f"--metric {metric}: {what} is the one metric reported (the "
            "table and the comparisons); leave out --metric"
        )
    for flag, value, why in (
        ("--cost", cost_column, "the cost table prices successes (cost per success)"),
        ("--runs", runs, "the recipe comparisons are of pass@k"),
        ("--by", by, "the per-group analyses are of 0/1 outcomes"),
        ("--flagged", flagged_path, "the clean-versus-flagged split is of 0/1 outcomes"),
    ):
        if value:
            raise click.UsageError(
                f"{flag} does not apply to partial-credit scores: {why}; "
                "leave it out (in Python: be.fit(be.from_frame(df, "
                "score=COLUMN)) and the Results methods)"
            )
    fits_scores = model == "auto" or models.get_model(model).scores
    if not fits_scores and (data is None or data.has_partial_credit):
        raise click.UsageError(
            f"--model {model} fits 0/1 outcomes; partial-credit scores are "
            "fitted by --model fractional (the default: leave --model at auto) "
            "or zoib"
        )


def _check_recipe_pairs(data, pairs, runs, estimand, metric) -> list[tuple]:
    """``--compare`` pairs of recipes under ``--runs``, checked before any fit."""
    ds = data.dataset
    if "recipe" not in ds.coords:
        raise click.UsageError(
            "--runs compares recipes: read the data with --reader-option "
            "run=COLUMN (the training run or seed of each checkpoint)"
        )
    if metric != "pass@k":
        raise click.UsageError("--runs compares pass@k of recipes (give --metric pass@k)")
    if runs == "new" and estimand == "tasks":
        raise click.UsageError(
            "--runs new is about new training runs on new tasks: it takes "
            "the population estimand, not --estimand tasks"
        )
    recipes = list(dict.fromkeys(ds["recipe"].values.tolist()))
    for candidate, baseline in pairs:
        for role, label in (("candidate", candidate), ("baseline", baseline)):
            if label not in recipes:
                raise click.BadParameter(
                    f"{role} {label!r} is not a recipe of the data; "
                    f"recipes: {', '.join(map(str, recipes[:20]))}",
                    param_hint="--compare",
                )
        if candidate == baseline:
            raise click.BadParameter("candidate and baseline must differ", param_hint="--compare")
    return [tuple(p) for p in pairs]


def _flagged_tasks(path: str, tasks) -> list:
    """Task ids from a file: one per line, or the JSON of ``bayeval overlap``.

    From the JSON, the items labelled confirmed or suspected. Ids are matched to the data's tasks as
    text.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        record = None
    if isinstance(record, dict) and "items" in record:
        wanted = [str(r["item"]) for r in record["items"] if r.get("label") != "none"]
    else:
        wanted = [line.strip() for line in text.splitlines() if line.strip()]
    by_text = {str(t): t for t in tasks}
    unknown = [w for w in wanted if w not in by_text]
    if unknown:
        raise InputError(
            f"{path}: task id(s) {unknown[:5]}{' ...' if len(unknown) > 5 else ''}"
            f" are not tasks of the data"
        )
    if not wanted:
        raise InputError(f"{path} flags no task")
    return [by_text[w] for w in wanted]


def _analyze_by(files, read, groups, fitting, ci_prob, out, pairs):
    """``analyze --by``: one analysis per group of a table (bayeval.fit_many)."""
    by, scheduler = list(groups.by), groups.scheduler
    if read.systems:
        raise click.UsageError(
            "--systems selects the systems of one analysis; with --by, select the "
            "table's rows first"
        )
    if pairs or out.report_path:
        raise click.UsageError(
            "--by prints one row per group and system; --compare and "
            "--report apply to one analysis (select a group's rows first)"
        )
    fmt = read.fmt if read.fmt != "auto" else detect_format(files[0])
    if fmt != "table" or len(files) != 1:
        raise click.UsageError("--by splits one table file by its columns")
    frame = load_table(files[0], reader="bayeval")
    unknown = [c for c in by if c not in frame.columns]
    if unknown:
        raise click.BadParameter(
            f"no column {unknown} in {files[0]}; columns: {', '.join(map(str, frame.columns))}",
            param_hint="--by",
        )
    roles, lines = read_roles(frame.drop(columns=by), read, source=files[0])
    if "score" in roles:
        _check_score_options((1,), None, "pass@k", None, None, by, None, "auto")
    for line in lines:
        click.echo(line, err=True)
    click.echo(
        f"fitting one analysis per {', '.join(by)} value"
        f"{' on ' + scheduler if scheduler else ''} ...",
        err=True,
    )
    notes = Notes()
    try:
        with notes:
            outcome = many.fit_many(
                frame,
                by=by,
                client=scheduler,
                seed=fitting.seed,
                keep="summary",
                ci_prob=ci_prob,
                missing=read.missing,
                model=fitting.model,
                sampler=fitting.sampler,
                draws=fitting.draws,
                chains=fitting.chains,
                tune=fitting.tune,
                **roles,
            )
    except many.FitManyError as err:
        echo_notes(notes.items)
        click.echo(f"Error: {err}", err=True)
        if err.partial is not None:
            click.echo(err.partial.to_frame().to_string(index=False))
        click.get_current_context().exit(EXIT_USAGE)
    echo_notes(notes.items)
    table = outcome.to_frame()
    if out.json_path != "-":
        with pd.option_context(
            "display.width", 250, "display.max_columns", None, "display.max_rows", None
        ):
            click.echo(table.to_string(index=False))
    if out.json_path:
        write_json(
            {
                "by": by,
                "rows": json.loads(table.to_json(orient="records")),
                "command": command_line(),
            },
            out.json_path,
        )
