"""The report's figures: which plots a report draws, with titles and captions, rendered to PNG."""

from __future__ import annotations

import importlib.util
import io
import warnings
from collections.abc import Callable
from typing import Any

from bayeval import plots
from bayeval._validate import BayevalWarning
from bayeval.report._format import _metric_name
from bayeval.report._values import _collect

__all__ = ["PLOTS_HINT"]

#: What a report without plots says, where matplotlib is missing.
PLOTS_HINT = "plots need matplotlib: pip install 'bayeval[plots]'"
_PPC_PANELS = 6  # systems drawn in the posterior predictive plot when none are compared


def _one_trial(data, systems) -> bool:
    """Whether some of ``systems`` has at most one trial on every task."""
    most = data.dataset["trials"].sel(system=list(systems)).max("task").values
    return bool((most <= 1).any())


def _plot_specs(results, report: dict, compare_results=None) -> tuple[list[tuple], dict]:
    """(name, title, caption, callable) for each figure of the report, and the figures left out.

    The comparisons' figures come from ``compare_results`` where the comparisons were read from
    it. A figure that would say nothing is left out, with the sentence that says why in its
    place (``{name: reason}``).
    """
    paired = results if compare_results is None else compare_results
    label_of = {str(x): x for x in results.systems}  # the report's labels are strings
    order = report.get("order", {}).get("systems")
    ordered = [label_of[x] for x in order] if order else None
    paired_label = {str(x): x for x in paired.systems}
    skipped: dict[str, str] = {}
    s = report["settings"]["report"]
    estimand = s["estimand"]
    k0 = s["compare_k"]
    specs: list[tuple[str, str, str, Callable[..., Any]]] = [
        (
            "forest",
            f"{s['metric'].replace('k', str(k0))} by system",
            (
                f"Posterior mean and {s['ci_prob']:.0%} interval ({estimand} estimand) next to "
                "the bootstrap twin."
            ),
            lambda: plots.plot_forest(
                results,
                order=ordered,
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
                    results,
                    k=range(1, top + 1),
                    estimand=estimand,
                    ci_prob=s["ci_prob"],
                    systems=ordered,
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
        if _one_trial(paired.data, (cand, base)):
            skipped[f"task_rates_{i}"] = (
                "No per-task figure: with one trial per task no single task can tell the "
                "two systems apart, so every task would be drawn as neither gained nor lost."
            )
            continue
        specs.append(
            (
                f"task_rates_{i}",
                f"Task rates: {entry['label']}",
                f"Per-task posterior rates of {cand} against {base}.",
                lambda c=cand, b=base: plots.plot_task_rates(paired, c, b, ci_prob=s["ci_prob"]),
            )
        )
    curves = report.get("curves") or {"rows": []}
    curve_pairs = dict.fromkeys((row["candidate"], row["baseline"]) for row in curves["rows"])
    for i, (cand, base) in enumerate(curve_pairs):  # one figure per pair, both bounds in it
        specs.append(
            (
                f"curve_{i}",
                f"Effect over k: {cand} - {base}",
                (
                    f"{curves['metric']} of {cand} minus {base} at k = "
                    f"{', '.join(map(str, curves['k']))} ({curves['estimand']} estimand): "
                    f"posterior mean, pointwise {s['ci_prob']:.0%} intervals and the band "
                    f"over all k, beside the {curves['bootstrap']}."
                ),
                lambda c=paired_label[cand], b=paired_label[base]: plots.plot_compare_curve(
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
                    unit=curves.get("unit", "task"),
                    weighting=curves.get("weighting", "task"),
                    clusters=curves.get("clusters"),
                ),
            )
        )
    checked = [row for row in report["diagnostics"]["ppc"] if row["p_value"] is not None]
    if checked:  # without a p-value (one trial per task) the check has nothing to draw
        by_system = {str(row["system"]): row for row in checked}
        compared = [
            label
            for entry in report["comparisons"]
            for label in (entry["candidate"], entry["baseline"])
            if str(label) in by_system
        ]
        flagged = [str(row["system"]) for row in checked if row["flagged"]]
        if compared:
            chosen, why = list(dict.fromkeys(compared)), "the compared systems"
        elif flagged:
            chosen, why = list(dict.fromkeys(flagged)), "the flagged systems"
        else:
            smallest = sorted(checked, key=lambda row: row["p_value"])
            chosen = list(dict.fromkeys(str(row["system"]) for row in smallest))[:_PPC_PANELS]
            why = (
                "every system"
                if len(chosen) == len(results.systems)
                else f"the {len(chosen)} systems with the smallest p-values"
            )
        if order:  # panels in the report's order of systems
            chosen = [x for x in order if x in chosen] + [x for x in chosen if x not in order]
        chosen = [label_of[x] for x in chosen]
        specs.append(
            (
                "ppc",
                "Posterior predictive check",
                (
                    "Observed per-task success-count histogram against the fitted "
                    f"population, for {why}; the table above lists every system checked."
                ),
                lambda: plots.plot_ppc(results, system=chosen),
            )
        )
    ranks = report.get("ranks")
    if ranks:
        r = ranks["settings"]
        specs.append(
            (
                "ranks",
                "Ranks",
                (
                    f"Each system's posterior rank: mean and {r['ci_prob']:.0%} interval, "
                    "P(best) beside the name; best at the top, in the order of the table."
                ),
                lambda: plots.plot_ranks(
                    results,
                    metric=r["metric"],
                    k=r["k"],
                    estimand=r["estimand"],
                    ci_prob=r["ci_prob"],
                    top=r["top"],
                    order=ordered or [row["system"] for row in ranks["systems"]],
                ),
            )
        )
    if report.get("cost"):
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
                lambda: plots.plot_cost_success(
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
    # the systems missing an outcome, as the status table lists them
    missing = [
        label_of[str(row["system"])]
        for row in report["data"]["status_counts"]
        if row["coverage"] is None or row["coverage"] < 1
    ]
    if any(v for st, v in totals.items() if st != "ok"):
        specs.append(
            (
                "status",
                "Outcome statuses",
                "Attempts by status, for the systems missing an outcome.",
                lambda: plots.plot_status(results.data, systems=missing),
            )
        )
    return specs, skipped


def _matplotlib_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _figures(results, report: dict, compare_results=None) -> tuple[list[dict], list[str]]:
    """Render the plots to PNG bytes; returns the figures and notes about plots left out.

    A figure left out because it would say nothing is a figure without ``png``, whose
    ``caption`` says why.
    """
    if not _matplotlib_available():
        return [], [PLOTS_HINT]
    try:
        import matplotlib.pyplot as plt  # deferred: matplotlib is optional (bayeval[plots])

        specs, skipped = _plot_specs(results, report, compare_results)
    except ImportError as exc:
        return [], [f"plots are unavailable ({exc}); {PLOTS_HINT}"]
    figures: list[dict] = [
        {"name": name, "title": None, "caption": reason, "png": None}
        for name, reason in skipped.items()
    ]
    notes = []
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
