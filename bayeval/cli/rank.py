"""``bayeval rank``: rank intervals, groups that cannot be told apart, P(best), the winner."""

from __future__ import annotations

import click
import pandas as pd

from bayeval.cli._fit import check_k_before_fit, fit
from bayeval.cli._group import Notes, command_line, echo_notes, report, report_format
from bayeval.cli._input import load
from bayeval.cli._options import (
    PROBABILITY,
    FitOptions,
    Outputs,
    ReadOptions,
    SummaryOptions,
    column_options,
    model_options,
    output_options,
)
from bayeval.cli._output import (
    check_outputs,
    echo_fit,
    header,
    interval_text,
    report_data,
    wide_tables,
    write_json,
    write_report,
)
from bayeval.data.clusters import estimand_words
from bayeval.data.digests import check_comparable


@click.command(context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="k of the metric."
)
@click.option(
    "--prob",
    type=PROBABILITY,
    default=0.95,
    show_default=True,
    help="Probability that separates two groups (see the group rule printed).",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="P(in the top N) is printed for this N.",
)
@click.option(
    "--unit",
    type=click.Choice(["task", "cluster"]),
    default="task",
    show_default=True,
    help="What the bootstrap rank sets resample.",
)
@click.option(
    "--allow-harness-change",
    is_flag=True,
    help="Compare systems evaluated "
    "under different harness digests (refused otherwise); outputs say what changed.",
)
@column_options("--trials")
@model_options
@output_options
def rank(
    files,
    k,
    prob,
    top,
    unit,
    allow_harness_change,
    read: ReadOptions,
    fitting: FitOptions,
    summary: SummaryOptions,
    out: Outputs,
):
    """Rank systems: rank intervals, groups that cannot be told apart, P(best), the winner.

    Fits every system (paired, with systems as draws from a population of systems, when they
    share tasks) and prints, best first: the posterior mean, the rank interval, P(best),
    P(in the top N), the group, and beside it the bootstrap's simultaneous rank set (paired
    resampling of tasks or clusters, max-|t| construction). Then the winner's curse: the
    system the observed score picks, its naive score, its posterior and the optimism.

    \b
    Examples:
      bayeval rank runs.csv
      bayeval rank runs.csv --k 1 --prob 0.9 --json ranks.json
    """  # noqa: D301 - click's no-rewrap mark "\b" is a backspace; r""" would break it
    metric, ci_prob, n_boot, seed = summary.metric, summary.ci_prob, summary.n_boot, fitting.seed
    estimand = summary.estimand or "population"
    if summary.clusters is not None or summary.weighting != "task":
        raise click.UsageError(
            "--clusters and --weighting choose the population of analyze and gate; rank "
            "reads the fit's default population, which its header names"
        )
    check_outputs(out.json_path, out.report_path)
    notes = Notes()
    with notes:
        data, lines = load(files, read)
    if len(data.systems) < 2:
        raise click.UsageError(
            f"ranking needs two or more systems; the data have {len(data.systems)}"
        )
    check_k_before_fit(data, [], [k], metric)
    harness = check_comparable(data, data.systems, allow_harness_change)
    to_stdout = out.json_path == "-"
    header(data, lines, err=to_stdout)  # what was read, before the fit's status line
    echo_notes(notes.items)
    read_notes = len(notes.items)
    res = fit(data, fitting, notes)
    echo_fit(res, err=to_stdout)
    click.echo(
        "ranking: posterior ranks, groups and the winner's optimism; bootstrap rank "
        f"sets ({n_boot} resamples) ...",
        err=True,
    )
    with notes:
        ranks = report.rank_data(
            res,
            data,
            metric=metric,
            k=k,
            estimand=estimand,
            prob=prob,
            top=top,
            unit=unit,
            n_boot=n_boot,
            ci_prob=ci_prob,
            seed=seed,
        )
    echo_notes(notes.items, read_notes)
    ranks["estimand_words"] = _estimand_words(res, data, metric, k, estimand)
    ranks["notes"] = notes.items + ([harness.note] if harness.note else [])
    ranks["harness"] = {"status": harness.status, "note": harness.note or None}
    if harness.note:
        click.echo(f"note: {harness.note}", err=True)
    ranks["command"] = command_line()
    if not to_stdout:
        _echo_ranks(ranks, ci_prob, top)
    if out.json_path:
        write_json(ranks, out.json_path)
    if out.report_path:
        card = report_data(
            res,
            k=[k],
            metric=metric,
            estimand=estimand,
            n_boot=n_boot,
            seed=seed,
            ci_prob=ci_prob,
            notes=ranks["notes"],
            command=command_line(),
        )
        card["ranks"] = ranks
        write_report(res, out.report_path, card)


def _echo_ranks(ranks: dict, ci_prob: float, top: int):
    """The ranking table, the group rule, and the winner's curse."""
    settings = ranks["settings"]
    name = report_format._metric_name(settings["metric"], settings["k"])
    table = pd.DataFrame(
        [
            {
                "system": row["system"],
                name: f"{row['mean']:.3f}",
                "observed": f"{row['observed']:.3f}",
                "rank": f"{row['rank_mean']:.1f} [{row['rank_lower']}, {row['rank_upper']}]",
                "P(best)": f"{row['prob_best']:.3f}",
                f"P(top {top})": f"{row['prob_top']:.3f}",
                "group": row["group"],
                f"bootstrap rank set ({settings['unit']})": (
                    f"[{row['bootstrap_rank_lower']}, {row['bootstrap_rank_upper']}]"
                ),
            }
            for row in ranks["systems"]
        ]
    ).set_index("system")
    paired = "paired" if settings["paired"].startswith("yes") else "unpaired"
    click.echo(
        f"\n{name}, {settings['estimand']} estimand ({ranks['estimand_words']}), "
        f"{settings['model']} ({paired}): "
        f"posterior mean, rank mean [{ci_prob:.0%} interval]; groups at prob "
        f"{settings['prob']:g}"
    )
    if ranks.get("gates_failed"):
        click.echo(
            f"FLAGGED: the fit failed its MCMC gates: {ranks['gates_note']}. Every posterior "
            "number below is unreliable; the bootstrap rank sets do not depend on it."
        )
    with wide_tables():
        click.echo(table.to_string())
    click.echo(f"groups: {ranks['group_rule']}")
    click.echo("")
    for line in winner_lines(ranks):
        click.echo(line)


def winner_lines(ranks: dict) -> list[str]:
    """The winner's curse in words: each number beside the estimand it belongs to."""
    win, signed = ranks["winner"], report_format._signed
    tied = (
        f" (tied with {', '.join(map(str, win['tied_with']))}: {win['tie_rule']})"
        if win["tied_with"]
        else ""
    )
    flag = " FLAGGED (the fit failed its MCMC gates)" if ranks.get("gates_failed") else ""
    lines = [
        f"winner by observed score: {win['pick']}{tied}{flag}",
        f"  over these tasks: naive {win['naive_score']:.3f}, posterior "
        f"{win['tasks_value_mean']:.3f} "
        f"{interval_text(win['tasks_value_lower'], win['tasks_value_upper'])}, optimism "
        f"{signed(win['optimism'])} (naive minus posterior)",
    ]
    if win["estimand"] != "tasks":
        lines.append(
            f"  {win['estimand']} estimand: posterior {win['value_mean']:.3f} "
            f"{interval_text(win['value_lower'], win['value_upper'])}, P(it is the best) = "
            f"{win['prob_pick_is_best']:.3f} (ties count as best)"
        )
    else:
        lines[-1] += f", P(it is the best) = {win['prob_pick_is_best']:.3f} (ties count as best)"
    lines.append(
        "  replicate benchmarks from the posterior, picking by observed score: the pick's "
        "naive score minus its true mean over these tasks is "
        f"{signed(win['expected_optimism'])} on average (Monte Carlo error "
        f"{win['expected_optimism_se']:.3f}); the pick is the truly best in "
        f"{win['replicate_prob_best_picked']:.0%} of them"
    )
    return lines


def _estimand_words(res, data, metric, k, estimand) -> str:
    """The estimand the ranks read, with its clusters and weighting, in the shared words."""
    attrs = res.draws(metric, k, estimand).attrs  # cached: the ranks read these draws
    ds = data.dataset
    n_clusters = len(set(map(str, ds["cluster"].values))) if data.has_clusters else 0
    return estimand_words(
        estimand,
        clusters=attrs.get("clusters"),
        weighting=attrs.get("weighting", "task"),
        n_tasks=int(ds.sizes["task"]),
        n_clusters=n_clusters,
    )
