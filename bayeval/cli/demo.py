"""``bayeval demo``: the whole analysis on the bundled SWE-bench Verified results."""

from __future__ import annotations

import click

import bayeval as be
from bayeval.cli._fit import fit
from bayeval.cli._group import Notes, command_line, echo_notes
from bayeval.cli._options import FitOptions
from bayeval.cli._output import (
    check_outputs,
    echo_comparisons,
    echo_fit,
    echo_table,
    header,
    report_data,
    write_json,
    write_report,
)


@click.command(context_settings={"max_content_width": 100})
@click.option(
    "--report",
    "report_path",
    default="bayeval-demo-report.html",
    show_default=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Where to write the report card (.html or .md).",
)
@click.option("--no-report", is_flag=True, help="Print the tables only.")
@click.option("--json", "json_path", metavar="PATH", help="Also write every number as JSON.")
@click.option(
    "--n-boot",
    default=10_000,
    show_default=True,
    type=click.IntRange(min=2),
    help="Bootstrap replicates.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Random seed of fit and bootstrap.",
)
def demo(report_path, no_report, json_path, n_boot: int, seed: int):
    """Analyse the bundled SWE-bench Verified results (25 systems x 500 tasks, 12 repositories).

    Fits the hierarchical model to every system (exact grid engine), prints each system's
    pass@1 for both estimands next to its bootstrap twin, compares the two leading systems
    with the paired logit_normal model (repository and task effects shared) next to the
    paired bootstraps and writes a report card. The estimands are ``bayeval analyze``'s
    defaults: the 12 repositories, four of them with under ten tasks, support new tasks from
    these repositories in their proportions, not a new repository.
    """
    check_outputs(json_path, None if no_report else report_path)
    notes = Notes()
    data = be.datasets.load("swebench_verified")
    header(data, [f"bundled dataset swebench_verified ({be.datasets.path('swebench_verified')})"])
    res = fit(data, FitOptions(model="hierarchical", seed=seed), notes)
    with notes:
        population = res.pass_at_k(k=1, estimand="population").mean(["chain", "draw"])
    order = population.to_series().sort_values(ascending=False).index.tolist()
    best, second = order[:2]
    paired = fit(data, FitOptions(model="logit_normal", seed=seed), notes, pairs=[(best, second)])
    echo_fit(res, compare_res=paired)  # after both fits: the fit of each table
    card = report_data(
        res,
        comparisons=[(best, second)],
        k=1,
        n_boot=n_boot,
        seed=seed,
        notes=notes.items,
        command=command_line(),
        title="bayeval demo: SWE-bench Verified (mini-SWE-agent)",
        compare_results=paired,
    )
    echo_notes(card["notes"])
    echo_table(card, ["population", "tasks"], "pass@k", 0.95)
    echo_comparisons(card)
    if json_path:
        write_json(card, json_path)
    if not no_report:
        write_report(res, report_path, card, compare_results=paired)
