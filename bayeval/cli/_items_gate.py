"""``bayeval gate --items``: the gate on a subset of the items of an IRT calibration.

A new system runs a subset of the items an item response theory fit (``model="irt"``) was
calibrated on; its predicted pass@1 over all calibrated items (``be.irt.score``) is compared
with the baseline's (``be.irt.compare``, paired on the calibration's draws) and the one
decision rule of bayeval (:func:`bayeval.planning.decide`) turns the effect's draws into the
verdict. Nothing is fitted: the calibration's draws are read and the new system's ability is
computed on them, so the sampler's options and the bootstrap do not apply.
"""

from __future__ import annotations

import os

import click
import numpy as np

import bayeval as be
from bayeval.cli._fit import check_harness
from bayeval.cli._group import (
    EXIT_PASS,
    EXIT_UNDECIDED,
    EXIT_WORSE,
    InputError,
    LazyModule,
    Notes,
    command_line,
    echo_notes,
    fitting,
    status,
)
from bayeval.cli._input import load
from bayeval.cli._options import FitOptions, Outputs, ReadOptions, SummaryOptions
from bayeval.cli._output import check_outputs, interval_text, write_json

# SciPy and PyMC come with these: loaded when a subset gate runs, not at the command's start
irt = LazyModule("bayeval.irt")
planning = LazyModule("bayeval.planning")
posterior = LazyModule("bayeval.posterior")

#: Options of the fitted gate that a gate on calibrated items does not read: it fits nothing,
#: resamples nothing and writes no report card.
NOT_WITH_ITEMS = {
    "canary_pair": "--canary",
    "canary_margin": "--canary-margin",
    "report_path": "--report",
    "model": "--model",
    "sampler": "--sampler",
    "draws": "--draws",
    "chains": "--chains",
    "tune": "--tune",
    "n_boot": "--n-boot",
    "clusters": "--clusters",
    "weighting": "--weighting",
}


def refuse_unused_options() -> None:
    """A usage error naming the first option given that the subset gate does not read."""
    ctx = click.get_current_context()
    for param, flag in NOT_WITH_ITEMS.items():
        source = ctx.get_parameter_source(param)
        if source is not None and source.name != "DEFAULT":
            raise click.UsageError(
                f"{flag} does not apply with --items: the gate reads the calibration's "
                "draws (no fit, no bootstrap, no report card; --json records every number)"
            )


def read_calibration(path):
    """The saved fit at ``path``, refused unless it is an item response theory fit."""
    try:
        calibration = be.load(path)
    except (ValueError, OSError, KeyError) as exc:
        raise click.BadParameter(
            f"{path} cannot be read as a saved bayeval fit ({' '.join(str(exc).split())}); "
            "save the calibration with be.fit(data, model='irt').to_netcdf(path)",
            param_hint="--items",
        ) from None
    if calibration.model != "irt":
        raise click.BadParameter(
            f"{path} is a fit of model {calibration.model!r}; --items takes an item response "
            "theory calibration: be.fit(data, model='irt') on many systems and all items, "
            "saved with .to_netcdf(path)",
            param_hint="--items",
        )
    return calibration


def _listed(values, limit: int = 20) -> str:
    values = [str(v) for v in values]
    return ", ".join(values[:limit]) + (
        f" ... ({len(values)} in all)" if len(values) > limit else ""
    )


def check_subset(data, calibration, pair, files, items_path) -> list:
    """The systems of the file to score; every check names the system, task or option."""
    candidate, baseline = pair
    if candidate == baseline:
        raise click.BadParameter("candidate and baseline must differ", param_hint="--compare")
    if candidate not in data.systems:
        raise click.BadParameter(
            f"candidate {candidate!r} is not a system of {_listed(files)}; the candidate must "
            f"be scored from the file's outcomes; its systems: {_listed(data.systems)}",
            param_hint="--compare",
        )
    if baseline not in data.systems and baseline not in calibration.systems:
        raise click.BadParameter(
            f"baseline {baseline!r} is a system of neither {_listed(files)} (systems: "
            f"{_listed(data.systems)}) nor the calibration {items_path} (systems: "
            f"{_listed(calibration.systems)})",
            param_hint="--compare",
        )
    scored = [s for s in pair if s in data.systems]
    calibrated = set(calibration._group("posterior")["task"].values.tolist())
    sub = data.sel(system=scored)
    trials = sub.dataset["trials"]
    if "missing_bound" in trials.dims:
        raise click.BadParameter(
            "bounds is not available with --items (a system is scored on one outcome per "
            "attempt): choose fail or exclude",
            param_hint="--missing",
        )
    if data.has_partial_credit:
        raise InputError(
            "--items scores 0/1 outcomes (pass@1); the file holds partial-credit scores"
        )
    tasks = sub.dataset["task"].values.tolist()
    unknown = [t for t in tasks if t not in calibrated]
    if unknown:
        raise InputError(
            f"{len(unknown)} task(s) of {_listed(files)} are not items of the calibration "
            f"{items_path} ({len(calibrated)} items): {_listed(unknown, 10)}; a system is "
            "scored on calibrated items only (be.irt.select chooses them)"
        )
    ran = (trials.transpose("system", "task").values > 0).any(axis=1)
    idle = [s for s, r in zip(scored, ran, strict=True) if not r]
    if idle:
        raise InputError(
            f"system(s) {_listed(idle)} of {_listed(files)} have no valid outcome on any item"
        )
    return scored


def estimand_words(estimand: str, n_items: int) -> str:
    """What the compared number is, in words (printed and recorded in the JSON)."""
    if estimand == "tasks":
        return (
            f"pass@1 averaged over all {n_items} calibrated items, each system's rates "
            "predicted from its ability"
        )
    return "pass@1 on a new item drawn from the calibrated item population"


def items_gate(
    files,
    items_path,
    pair,
    *,
    margin: float,
    prob: float,
    superior: bool,
    k: int,
    allow_harness_change: bool,
    read: ReadOptions,
    fitting_options: FitOptions,
    summary: SummaryOptions,
    out: Outputs,
) -> int:
    """Run the subset gate, print it, write the JSON; returns the exit code."""
    refuse_unused_options()
    check_outputs(out.json_path)
    if k != 1:
        raise click.BadParameter(
            f"--items decides on pass@1 over the calibrated items: k must be 1; got {k}",
            param_hint="--k",
        )
    estimand = summary.estimand or "tasks"
    ci_prob, seed = summary.ci_prob, fitting_options.seed
    notes = Notes()
    with notes:
        calibration = read_calibration(items_path)
        data, _ = load(files, read)
    files = [os.fspath(f) for f in files]
    scored_systems = check_subset(data, calibration, pair, files, items_path)
    candidate, baseline = pair
    if baseline in scored_systems:
        check_harness(data, [pair], allow_harness_change)
    n_items = int(calibration._group("posterior").sizes["task"])
    status(f"scoring {', '.join(map(str, scored_systems))} on the calibration {items_path} ...")
    with notes:
        scored = irt.score(
            data.sel(system=scored_systems), items=calibration, ci_prob=ci_prob, seed=seed
        )
        cmp = irt.compare(
            scored, calibration, candidate, baseline, estimand=estimand, ci_prob=ci_prob
        )
    gates = fitting.gate_attrs(calibration)
    decision = planning.decide(
        cmp["effect"].values.ravel(),
        margin=margin,
        superior=superior,
        prob=prob,
        gates_failed=gates["gates_failed"],
        gates_note=gates["gates_note"],
    )
    name = "full_pass_at_1" if estimand == "tasks" else "full_pass_at_1_population"
    new_draws = scored[name].sel(system=candidate, drop=True)
    base_draws = new_draws - cmp["effect"]  # the baseline's draws, whichever its source
    sample_dims = ["chain", "draw"]
    n_run = {s: int(scored["n_items"].sel(system=s)) for s in scored_systems}
    systems = []
    for role, label, draws in (
        ("candidate", candidate, new_draws),
        ("baseline", baseline, base_draws),
    ):
        interval = posterior.credible_interval(draws, ci_prob, sample_dims).values
        systems.append(
            {
                "system": str(label),
                "role": role,
                "source": "scored" if label in n_run else "calibration",
                "items_run": n_run.get(label),
                "pass_at_1": float(draws.mean()),
                "lower": float(interval[0]),
                "upper": float(interval[1]),
            }
        )
    interval = cmp["effect_interval"].values
    statement = str(decision.attrs["statement"])
    passed, decided = bool(decision["passed"]), bool(decision["decided"])
    code = EXIT_PASS if passed else EXIT_WORSE if decided else EXIT_UNDECIDED
    verdict = {EXIT_PASS: "PASS", EXIT_WORSE: "FAIL", EXIT_UNDECIDED: "UNDECIDED"}[code]
    test = str(decision.attrs["test"])
    threshold = float(decision.attrs["threshold"])
    words = estimand_words(estimand, n_items)
    echo_notes(notes.items)
    click.echo(
        f"gate: {candidate} (candidate) vs {baseline} (baseline), pass@1, {estimand} estimand "
        f"({words}), {test} margin {margin:g}, prob {prob:g}"
    )
    form = calibration.tree.attrs.get("form", "")
    click.echo(
        f"  calibration {items_path}: item response theory ({form}), "
        f"{len(calibration.systems)} systems, {n_items} items"
    )
    if gates["gates_failed"]:
        click.echo(
            f"  FLAGGED: the calibration failed its MCMC gates: {gates['gates_note']}. Every "
            "number read off it is unreliable and the decision is undecided."
        )
    for row in systems:
        source = (
            f"scored on the {row['items_run']} item(s) it ran"
            if row["source"] == "scored"
            else "read from the calibration"
        )
        click.echo(
            f"  {row['system']} ({row['role']}, {source}): pass@1 {row['pass_at_1']:.4f}, "
            f"{ci_prob:.0%} interval {interval_text(row['lower'], row['upper'])}"
        )
    flag = " (FLAGGED)" if gates["gates_failed"] else ""
    click.echo(
        f"  posterior effect{flag} {float(cmp['effect_mean']):+.4f}, two-sided {ci_prob:.0%} "
        f"interval {interval_text(float(interval[0]), float(interval[1]))}, "
        f"P(effect > {threshold:g}) = {float(decision['prob_pass']):.4f} "
        "(paired on the calibration's draws)"
    )
    click.echo(f"{verdict}: {statement}; exit {code}")
    if out.json_path:
        card = {
            "command": command_line(),
            "calibration": {
                "path": os.fspath(items_path),
                "model": "irt",
                "form": str(form),
                "systems": len(calibration.systems),
                "items": n_items,
                "input_hash": str(calibration.tree.attrs.get("input_hash", "")),
                "gates_passed": not gates["gates_failed"],
                "gates_failed": list(gates["gates_failed"]),
                "gates_note": gates["gates_note"] or None,
            },
            "estimand": {"name": estimand, "words": words},
            "metric": "pass@1",
            "ci_prob": ci_prob,
            "seed": seed,
            "systems": systems,
            "comparison": {
                "candidate": str(candidate),
                "baseline": str(baseline),
                "effect": float(cmp["effect_mean"]),
                "lower": float(interval[0]),
                "upper": float(interval[1]),
                "prob_positive": float(cmp["prob_positive"]),
                "paired": str(cmp.attrs["paired_note"]),
                "decision": _decision_record(decision),
            },
            "notes": list(notes.items),
            "gate": {
                "decision": str(decision.attrs["decision"]),
                "exit_code": code,
                "verdict": verdict,
                "statement": statement,
                "gates_passed": not gates["gates_failed"],
                "gates_failed": list(gates["gates_failed"]),
            },
        }
        write_json(card, out.json_path)
    return code


def _decision_record(decision) -> dict:
    """The decision's numbers and settings, as the fitted gate's JSON records them."""
    number = {
        key: None if not np.isfinite(v := float(decision[key])) else v
        for key in ("prob_pass", "prob_fail", "lower", "upper", "p_value", "p_value_fail")
    }
    return {
        "decision": str(decision.attrs["decision"]),
        **number,
        "margin": float(decision.attrs["margin"]),
        "prob": float(decision.attrs["prob"]),
        "test": str(decision.attrs["test"]),
        "threshold": float(decision.attrs["threshold"]),
        "sided": str(decision.attrs["sided"]),
        "passed": bool(decision["passed"]),
        "decided": bool(decision["decided"]),
        "statement": str(decision.attrs["statement"]),
    }
