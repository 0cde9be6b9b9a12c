"""``bayeval gate``: exit 0 / 1 / 3 on a non-inferiority (or superiority) decision."""

from __future__ import annotations

import click

from bayeval.cli._fit import check_harness, check_k_before_fit, check_pairs, fit
from bayeval.cli._group import (
    EXIT_PASS,
    EXIT_UNDECIDED,
    EXIT_WORSE,
    Notes,
    command_line,
    echo_notes,
    report,
    report_format,
)
from bayeval.cli._input import load
from bayeval.cli._items_gate import items_gate
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
    gate_lines,
    interval_text,
    notes_shown,
    report_data,
    write_json,
    write_report,
)

EPILOG = """\b
Exit codes:
  0  the candidate passes: P(effect > -margin) >= prob
     (with --superior: P(effect > margin) >= prob)
  1  the candidate is worse: P(effect < -margin) >= prob
     (with --superior: P(effect <= margin) >= prob)
  2  bad usage or input (the message says what to change)
  3  undecided: the data cannot decide (neither probability reaches prob), or the
     fit failed its MCMC gates (divergences, r-hat, ESS, BFMI: see the note; rerun
     with more --draws and --tune, or --sampler grid where the model allows)
  4  an unexpected error (one line; bayeval --traceback shows it in full)
"""


@click.command(epilog=EPILOG, context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--compare",
    "pair",
    type=(str, str),
    required=True,
    metavar="CANDIDATE BASELINE",
    help="The candidate and the baseline it must not fall behind.",
)
@click.option(
    "--margin",
    type=click.FloatRange(min=0.0),
    required=True,
    help="Non-inferiority margin (absolute): how far behind the candidate may be.",
)
@click.option(
    "--prob",
    type=PROBABILITY,
    default=0.95,
    show_default=True,
    help="Posterior probability a verdict needs.",
)
@click.option("--superior", is_flag=True, help="Require superiority by the margin instead.")
@click.option(
    "--k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="k of the metric."
)
@click.option(
    "--allow-harness-change",
    is_flag=True,
    help="Compare systems evaluated "
    "under different harness digests (refused otherwise); outputs say what changed.",
)
@click.option(
    "--canary",
    "canary_pair",
    type=(str, str),
    metavar="OLD NEW",
    help="A fixed reference policy's runs under the old and the new harness (two "
    "system labels of the data): the gate also requires its score not to have moved "
    "by more than --canary-margin.",
)
@click.option(
    "--canary-margin",
    type=click.FloatRange(min=0.0, min_open=True),
    help="Largest canary change (absolute) that counts as not moved.",
)
@click.option(
    "--items",
    "items_path",
    type=click.Path(exists=True, dir_okay=False),
    metavar="CALIBRATION.nc",
    help="An item response theory calibration (be.fit(data, model='irt') on many systems "
    "and all items, saved with .to_netcdf): FILES hold CANDIDATE's outcomes on a subset of "
    "its items, and the gate decides on the predicted pass@1 over all calibrated items. "
    "BASELINE is scored from FILES where they hold it, else read from the calibration.",
)
@column_options("--trials")
@model_options
@output_options
def gate(
    files,
    items_path,
    pair,
    margin,
    prob,
    superior,
    k,
    allow_harness_change,
    canary_pair,
    canary_margin,
    read: ReadOptions,
    fitting: FitOptions,
    summary: SummaryOptions,
    out: Outputs,
):
    """Decide whether CANDIDATE is non-inferior to BASELINE (for CI pipelines).

    The decision uses the posterior of the effect metric(candidate) - metric(baseline): the
    candidate passes when P(effect > -margin) >= prob (the one-sided prob lower bound of the
    effect is above -margin), fails when P(effect <= -margin) >= prob, and otherwise the data
    cannot decide. Under --missing bounds a verdict must hold at both bounds. A fit that
    fails its MCMC gates decides nothing (exit 3). The paired bootstrap is printed for
    reference; it does not change the exit code.

    With --items the candidate ran a subset of the items of a saved item response theory
    calibration: its ability is scored on the calibration's draws (nothing is fitted) and the
    effect is on pass@1 over all calibrated items (--estimand tasks, the default here) or on
    a new item of the calibrated population (--estimand population), paired on the
    calibration's draws. The same rule decides; a calibration that failed its MCMC gates
    decides nothing (exit 3).

    \b
    Examples:
      bayeval gate runs.csv --compare new old --margin 0.02
      bayeval gate runs.csv --compare new old --margin 0.01 --superior --prob 0.9
      bayeval gate subset.csv --items calibration.nc --compare new old --margin 0.02
    """  # noqa: D301 - click's no-rewrap mark "\b" is a backspace; r""" would break it
    metric, ci_prob = summary.metric, summary.ci_prob
    if items_path is not None:
        code = items_gate(
            files,
            items_path,
            pair,
            margin=margin,
            prob=prob,
            superior=superior,
            k=k,
            allow_harness_change=allow_harness_change,
            read=read,
            fitting_options=fitting,
            summary=summary,
            out=out,
        )
        if code:
            click.get_current_context().exit(code)
        return
    check_outputs(out.json_path, out.report_path)
    notes = Notes()
    with notes:
        data, _ = load(files, read)
    (pair,) = check_pairs([pair], data.systems)
    check_k_before_fit(data, [pair], [k], metric)
    check_harness(data, [pair], allow_harness_change)
    if (canary_pair is None) != (canary_margin is None):
        raise click.UsageError("--canary OLD NEW and --canary-margin go together")
    if canary_pair is not None:
        check_pairs([canary_pair], data.systems)
    res = fit(data, fitting, notes, pairs=[pair])
    card = report_data(
        res,
        comparisons=[pair],
        k=k,
        metric=metric,
        estimand=summary.estimand,
        margin=margin,
        prob=prob,
        superior=superior,
        n_boot=summary.n_boot,
        seed=fitting.seed,
        ci_prob=ci_prob,
        notes=notes.items,
        command=command_line(),
        allow_harness_change=allow_harness_change,
        clusters=summary.clusters,
        weighting=summary.weighting,
    )
    echo_notes(notes_shown(card["notes"], [card["estimand"]["name"]]))
    entry = card["comparisons"][0]
    decision = entry["bayes"]["decision"]
    # undecided: neither verdict reached, or the fit failed its gates
    code = (
        EXIT_PASS if decision["passed"] else EXIT_WORSE if decision["decided"] else EXIT_UNDECIDED
    )
    name = report_format._metric_name(metric, k)
    threshold = margin if superior else -margin
    click.echo(
        f"gate: {pair[0]} (candidate) vs {pair[1]} (baseline), {name}, "
        f"{entry['estimand']} estimand ({entry['estimand_words']}), {entry['test']} "
        f"margin {margin:g}, prob {prob:g}"
    )
    for line in gate_lines(card):
        click.echo(f"  {line}")
    flag = " (FLAGGED)" if entry["bayes"]["gates_failed"] else ""
    for row in entry["bayes"]["rows"]:
        bound = f" [{row['missing_bound']}]" if row["missing_bound"] else ""
        p_pass = row["prob_above_margin"] if superior else row["prob_noninferior"]
        click.echo(
            f"  posterior effect{bound}{flag} {row['effect']:+.4f}, two-sided {ci_prob:.0%} "
            f"interval {interval_text(row['lower'], row['upper'])}, P(effect > {threshold:g}) = "
            f"{p_pass:.4f}"
        )
    if not entry["bayes"]["paired"].startswith("yes"):
        click.echo(f"  ({entry['bayes']['paired']}; --model logit_normal pairs the systems)")
    for boot in entry["bootstrap"]:
        row = boot["rows"][0] if len(boot["rows"]) == 1 else None
        effect = (
            f"{row['effect']:+.4f} {interval_text(row['lower'], row['upper'])}"
            if row
            else "see --json"
        )
        unit = boot["unit"]
        if unit == "cluster":  # the two weightings answer different questions: say which
            unit += (
                ", clusters weighed equally"
                if boot["weighting"] == "cluster"
                else ", clusters keep their sizes"
            )
        click.echo(
            f"  for reference, paired bootstrap ({unit}): {effect} (two-sided), "
            f"decision {boot['decision']['statement']}"
        )
    reason = decision["statement"]
    if canary_pair is not None:
        canary = _canary(data, canary_pair, canary_margin, metric, k, ci_prob, fitting, notes)
        card["canary"] = canary
        if canary["verdict"] == "moved":
            code, reason = EXIT_WORSE, f"the canary moved ({reason} otherwise)"
        elif canary["verdict"] == "inconclusive" and code == EXIT_PASS:
            code, reason = EXIT_UNDECIDED, f"{reason}, but the canary's change is inconclusive"
    verdict = {EXIT_PASS: "PASS", EXIT_WORSE: "FAIL", EXIT_UNDECIDED: "UNDECIDED"}[code]
    click.echo(f"{verdict}: {reason}; exit {code}")
    card["gate"] = {
        "decision": decision["decision"],
        "exit_code": code,
        "verdict": verdict,
        "statement": reason,
        # machine-readable: the fit's gates, which decide nothing when they fail
        "gates_passed": not decision["gates_failed"],
        "gates_failed": decision["gates_failed"],
    }
    # the report first and the JSON last: a failure after the JSON is written would exit with
    # another code than the one it records
    if out.report_path:
        write_report(res, out.report_path, card)
    if out.json_path:
        write_json(card, out.json_path)
    if code:
        click.get_current_context().exit(code)


def _canary(data, canary_pair, margin, metric, k, ci_prob, fitting: FitOptions, notes) -> dict:
    """The canary's change between its two harness runs (the report's canary section), printed."""
    old, new = canary_pair
    click.echo(f"canary: fitting {old} -> {new} ...", err=True)
    with notes:
        section = report.canary_section(
            data,
            old,
            new,
            margin=margin,
            metric=metric,
            k=k,
            ci_prob=ci_prob,
            **fitting.refit_options(),
        )
    click.echo(
        f"  canary {old} -> {new}: change {section['change']:+.4f}, {ci_prob:.0%} interval "
        f"{interval_text(section['lower'], section['upper'])}, margin {margin:g}: "
        f"{section['verdict']}"
    )
    return section
