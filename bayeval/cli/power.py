"""``bayeval power``: tasks and trials needed to detect an effect in a paired comparison."""

from __future__ import annotations

import click
import numpy as np
import pandas as pd

import bayeval as be
from bayeval.cli._fit import check_pairs
from bayeval.cli._group import InputError, Notes, echo_notes, report_values
from bayeval.cli._input import load
from bayeval.cli._options import (
    EFFECT_LIST,
    PROBABILITY,
    TRIALS_LIST,
    ReadOptions,
    column_options,
)
from bayeval.cli._output import check_outputs, write_json

DEFAULT_TRIALS_GRID = (1, 2, 4, 8, 16)


@click.command(context_settings={"max_content_width": 100})
@click.option(
    "--effect",
    type=EFFECT_LIST,
    required=True,
    help="Smallest effects worth detecting (absolute), comma-separated.",
)
@click.option(
    "--sd",
    type=click.FloatRange(min=0.0, min_open=True),
    help="Sd of a task's paired difference (candidate - baseline). Without --icc "
    "it is taken as measured at the trials you run; with --icc it is the sd "
    "at one trial per task.",
)
@click.option(
    "--icc",
    type=click.FloatRange(0.0, 1.0),
    help="Intra-task correlation of the paired difference: the between-task share "
    "of a one-trial difference's variance. Scales the sd to each --trials: "
    "sd * sqrt(icc + (1 - icc) / trials).",
)
@click.option(
    "--trials",
    "trials_grid",
    type=TRIALS_LIST,
    help="Trials per task to plan for, comma-separated [default with an icc: "
    "1,2,4,8,16 and the pilot's].",
)
@click.option(
    "--pilot",
    "pilot",
    type=click.Path(exists=True),
    multiple=True,
    help="Pilot results (read like `bayeval analyze FILE`) to estimate the sd and "
    "the icc from; needs --compare.",
)
@click.option(
    "--compare",
    "pair",
    type=(str, str),
    metavar="CANDIDATE BASELINE",
    help="The pilot's candidate and baseline.",
)
@click.option(
    "--alpha", type=PROBABILITY, default=0.05, show_default=True, help="Type I error rate."
)
@click.option(
    "--power", "power_level", type=PROBABILITY, default=0.8, show_default=True, help="Power."
)
@click.option(
    "--alternative",
    type=click.Choice(["two-sided", "larger"]),
    default="two-sided",
    show_default=True,
    help="Two-sided test, or one-sided (candidate larger).",
)
@column_options("--trials-column")
@click.option("--json", "json_path", metavar="PATH", help="Write the table as JSON ('-': stdout).")
def power(
    effect,
    sd,
    icc,
    trials_grid,
    pilot,
    pair,
    alpha,
    power_level,
    alternative,
    json_path,
    read: ReadOptions,
):
    """Tasks (and trials per task) needed to detect an effect in a paired comparison.

    Uses a paired t-test on per-task differences (bayeval.required_units). Give the spread
    directly (--sd, optionally --icc and --trials), or a pilot run (--pilot FILE --compare
    CANDIDATE BASELINE): the sd of its paired per-task pass@1 differences and their
    intra-task correlation are estimated from it. Tasks are taken as independent: with
    clustered tasks, plan for more.

    \b
    Examples:
      bayeval power --effect 0.02,0.05 --sd 0.25
      bayeval power --effect 0.03 --sd 0.45 --icc 0.6 --trials 1,3,10
      bayeval power --effect 0.02 --pilot pilot.csv --compare new old
    """  # noqa: D301 - click's no-rewrap mark "\b" is a backspace; r""" would break it
    check_outputs(json_path)
    say = click.echo if json_path != "-" else (lambda text: click.echo(text, err=True))
    payload = {
        "effects": effect,
        "alpha": alpha,
        "power": power_level,
        "alternative": alternative,
        "test": "paired t-test on per-task differences",
    }
    if pilot:
        if pair is None:
            raise click.UsageError("--pilot needs --compare CANDIDATE BASELINE")
        if sd is not None:
            raise click.UsageError("give either --sd or --pilot, not both")
        notes = Notes()
        with notes:
            data, lines = load(pilot, read, trials_flag="--trials-column")
        (pair,) = check_pairs([pair], data.systems)
        with notes:
            table = be.paired_spread(data, *pair)
            deff = be.design_effect(data.sel(system=list(pair)))
        spread = {name: report_values._num(table[name].item()) for name in table.data_vars}
        spread["bound"] = table.attrs.get("missing_bound")
        for line in lines:
            say(line)
        echo_notes(notes.items)
        base_trials = spread["median_trials"]
        sd_at = spread["sd"]
        if not sd_at:
            raise InputError(
                f"the pilot's paired per-task differences of {pair[0]} and "
                f"{pair[1]} have no spread (sd = {sd_at}, on {spread['n_tasks']} "
                "shared task(s)); give --sd instead"
            )
        est_icc = spread["icc"]
        say(
            f"pilot: {spread['n_tasks']} shared task(s), median {base_trials:g} "
            f"trial(s) per task; sd of the paired per-task pass@1 differences "
            f"{sd_at:.4f}"
            + (f" ({spread['bound']} bound: the larger)" if spread.get("bound") else "")
        )
        icc_values = deff["icc"].values.ravel()
        # one trial per task leaves a system's correlation undefined (NaN): say why, not nan
        cells = [
            f"{s} {v:.3f}" if np.isfinite(v) else f"{s} not identified"
            for s, v in zip(pair, icc_values[:2], strict=False)
        ]
        why = (
            ""
            if np.isfinite(icc_values[:2]).all()
            else " (with one trial per task, trial noise and task spread cannot be told apart)"
        )
        say(
            "  intra-task correlation of each system (bayeval.design_effect): "
            + ", ".join(cells)
            + why
        )
        if icc is None:
            icc = est_icc
            if icc is not None:
                say(
                    f"  intra-task correlation of the paired difference: {icc:.3f} "
                    "(between-task share of a one-trial difference's variance)"
                )
            else:
                say(
                    "  the pilot has one trial per task: trial noise and task spread "
                    "cannot be separated, so the sd holds at its trials only (give "
                    "--icc to plan other trial counts)"
                )
        sd_one = None if icc is None else sd_at / np.sqrt(icc + (1 - icc) / base_trials)
        payload["pilot"] = {
            "files": list(pilot),
            "candidate": pair[0],
            "baseline": pair[1],
            **spread,
            "icc_used": icc,
            "system_icc": dict(zip(pair, map(report_values._num, icc_values[:2]), strict=False)),
        }
        pilot_trials = round(base_trials)
        default_grid = (
            sorted({*DEFAULT_TRIALS_GRID, pilot_trials}) if icc is not None else [pilot_trials]
        )
    else:
        if sd is None:
            raise click.UsageError(
                "give --sd (the spread of per-task differences) or "
                "--pilot FILE --compare CANDIDATE BASELINE"
            )
        if pair is not None:
            raise click.UsageError("--compare applies with --pilot")
        if trials_grid is not None and icc is None:
            raise click.UsageError(
                "--trials needs --icc to scale the sd to each number of "
                "trials (without it, --sd is taken at the trials you run)"
            )
        sd_one = sd if icc is not None else None
        sd_at, pilot_trials = sd, None
        default_grid = list(DEFAULT_TRIALS_GRID) if icc is not None else [None]
    grid = trials_grid if trials_grid is not None else default_grid
    if trials_grid is not None and sd_one is None and list(trials_grid) != [pilot_trials]:
        raise click.UsageError(
            "the sd cannot be scaled to other trial counts without an "
            "intra-task correlation; give --icc"
        )
    rows = []
    for m in grid:
        task_sd = (
            sd_at if m is None or sd_one is None else float(sd_one * np.sqrt(icc + (1 - icc) / m))
        )
        for e in effect:
            n_tasks = be.required_units(
                task_sd, e, alpha=alpha, power=power_level, paired=True, alternative=alternative
            )
            rows.append(
                {
                    "effect": e,
                    "trials_per_task": m,
                    "sd": task_sd,
                    "tasks_needed": n_tasks,
                    "episodes_needed": None if m is None else int(2 * n_tasks * m),
                }
            )
    payload.update({"sd_input": sd, "icc": icc, "sd_one_trial": sd_one, "rows": rows})
    table = pd.DataFrame(rows)
    if grid == [None]:
        table = table.drop(columns=["trials_per_task", "episodes_needed"])
    table = table.rename(
        columns={
            "trials_per_task": "trials/task",
            "sd": "sd of task diff",
            "tasks_needed": "tasks needed",
            "episodes_needed": "episodes (2 systems)",
        }
    )
    if json_path != "-":
        click.echo(f"\npaired t-test, alpha {alpha:g} ({alternative}), power {power_level:g}:")
        click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if json_path:
        write_json(payload, json_path)
