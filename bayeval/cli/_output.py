"""What the commands print and write: the tables of a report on the terminal, JSON, the card."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd

from bayeval._io import check_writable, write_text
from bayeval.cli._group import report, report_format, resampling, status


def wide_tables():
    """The pandas display settings of the printed tables: every column and row, cells to 60."""
    return pd.option_context(
        "display.width",
        250,
        "display.max_columns",
        None,
        "display.max_colwidth",
        60,
        "display.max_rows",
        None,
    )


# -- files -------------------------------------------------------------------------------------
def check_outputs(json_path=None, report_path=None):
    """Refuse unusable output paths before any work is done (exit code 2, naming the option).

    A path whose folder is missing or does not take new files, or that is a folder, would
    otherwise fail only after the fit.
    """
    if report_path is not None:
        suffix = Path(report_path).suffix.lower()
        allowed = [s for suffixes in report.FORMATS.values() for s in suffixes]
        if suffix not in allowed:
            raise click.BadParameter(
                f"the report is written as HTML or Markdown: end the path "
                f"in one of {', '.join(allowed)}; got {report_path!r}",
                param_hint="--report",
            )
    checks = []
    if json_path is not None and json_path != "-":
        checks.append(("--json", json_path, check_writable))
    if report_path is not None:
        checks.append(("--report", report_path, report.check_report_path))
    for option, path, check in checks:
        try:
            check(path)
        except OSError as exc:
            raise click.BadParameter(str(exc), param_hint=option) from None


def write_json(payload: dict, path: str):
    """Write ``payload`` as JSON to ``path`` (``-``: stdout)."""
    text = json.dumps(payload, indent=2, allow_nan=False, default=str)
    if path == "-":
        click.echo(text)
    else:
        write_text(path, text + "\n")
        click.echo(f"wrote {path}", err=True)


def report_data(res, **options):
    """:func:`bayeval.report.report_data`, after a status line.

    The readouts and bootstrap twins take a while at leaderboard size.
    """
    status(
        f"summarising: posterior readouts and bootstrap twins "
        f"({options.get('n_boot', 2000)} resamples) ..."
    )
    return report.report_data(res, **options)


def write_report(res, path, data, compare_results=None):
    """Write the report card of ``data`` (a report_data dict) to ``path``."""
    status(f"writing the report card and its figures to {path} ...")
    written = report.write_report(res, path, data=data, compare_results=compare_results)
    click.echo(f"wrote {written}", err=True)


# -- the report's tables -----------------------------------------------------------------------
def interval_text(lower, upper) -> str:
    """``[lower, upper]`` to three decimals, ``[n/a]`` where either is undefined."""
    if lower is None or upper is None:
        return "[n/a]"
    return f"[{lower:.3f}, {upper:.3f}]"


def _value(row, prefix):
    mean = row[f"{prefix}_mean" if prefix == "bayes" else f"{prefix}_estimate"]
    text = "n/a" if mean is None else f"{mean:.3f}"
    return f"{text} {interval_text(row[f'{prefix}_lower'], row[f'{prefix}_upper'])}"


def _metric_table(data: dict, estimands, metric: str) -> tuple[pd.DataFrame, list[str], dict]:
    """One row per system (and bound), two columns (posterior, bootstrap) per k and estimand.

    And the trial-bootstrap columns left out: those of zero width in every row (one trial per
    task), which say nothing but that; and the cells a system's trials do not allow (``n/a``),
    as ``{(metric name, why): systems}``.
    """
    ks = data["settings"]["report"]["k"]
    rows: dict = {}
    flat: dict = {}  # trial-bootstrap column -> whether every interval so far has zero width
    marked: dict = {}
    for row in data["metrics"]:
        wanted = row["metric"] == metric or (
            metric == "pass^k" and row["k"] == 1 and row["metric"] == "pass@k"
        )
        if not wanted or row["estimand"] not in estimands or row["k"] not in ks:
            continue
        name = report_format._metric_name(metric, row["k"])
        key = (row["system"], row["missing_bound"] or "")
        label = "" if len(estimands) == 1 else f"{row['estimand']} "
        cells = rows.setdefault(key, {})
        unit = row["bootstrap_unit"] or "none: no trial bootstrap of scores"
        column = f"{label}{name} bootstrap ({unit})"
        if row.get("unavailable"):  # a k beyond the system's trials: no number, say why
            cells[f"{label}{name} posterior"] = cells[column] = "n/a"
            systems = marked.setdefault((name, row["unavailable"]), [])
            if row["system"] not in systems:
                systems.append(row["system"])
            continue
        cells[f"{label}{name} posterior"] = _value(row, "bayes")
        cells[column] = _value(row, "bootstrap")
        if unit == "trial":
            # the card gives a one-trial row no interval and says why (bootstrap_note)
            zero = "bootstrap_note" in row or (
                row["bootstrap_lower"] is not None
                and row["bootstrap_lower"] == row["bootstrap_upper"]
            )
            flat[column] = flat.get(column, True) and zero
        cells.setdefault("_order", row["bayes_mean"] if row["k"] == ks[0] else None)
    table = pd.DataFrame.from_dict(rows, orient="index")
    dropped = [column for column, zero in flat.items() if zero]
    table = table.drop(columns=dropped)
    order = table["_order"].astype(float).groupby(level=0).mean().sort_values(ascending=False)
    table = table.drop(columns="_order").loc[order.index.tolist()]
    table.index.names = ["system", "bound"]
    if not any(table.index.get_level_values("bound")):
        table = table.droplevel("bound")
    return table, dropped, marked


def notes_shown(notes, estimands) -> list[str]:
    """The notes that concern what a command prints of ``estimands``.

    The trial bootstrap's zero width at one trial per task concerns the tasks estimand's
    twin only: a command that prints the population estimand alone leaves it out (the JSON
    and the report card, which show every estimand, keep it).
    """
    if "tasks" in estimands:
        return list(notes)
    return [note for note in notes if note != resampling.ZERO_WIDTH_NOTE]


def gate_lines(data: dict) -> list[str]:
    """A line per fit of the card that failed its MCMC gates: what failed and what to do."""
    fits = [("the fit", data["diagnostics"])]
    if data.get("comparison_fit"):
        fits.append(("the comparisons' fit", data["comparison_fit"]["diagnostics"]))
    return [
        f"FLAGGED: {name} failed its MCMC gates: {diag['gates_note']}. Every posterior number "
        "read off it is unreliable and every posterior decision is undecided; the bootstrap "
        "does not depend on it."
        for name, diag in fits
        if diag.get("gates_failed")
    ]


def echo_table(data: dict, estimands, metric, ci_prob):
    """Each system's metric: posterior beside its bootstrap twin, per estimand."""
    table, dropped, marked = _metric_table(data, estimands, metric)
    words = data["estimand"].get("words", {})
    named = "; ".join(f"{name}: {words[name]}" if name in words else name for name in estimands)
    for line in gate_lines(data):
        click.echo(f"\n{line}")
    if data["diagnostics"].get("gates_failed"):  # the posterior columns are the fit's
        table.columns = [f"{c} (FLAGGED)" if c.endswith(" posterior") else c for c in table.columns]
    with wide_tables():
        title = report_format._metric_name(metric, 1) if metric == "mean" else metric
        click.echo(
            f"\n{title}: posterior mean [{ci_prob:.0%} interval] and its bootstrap twin "
            f"({'estimands' if len(estimands) > 1 else 'estimand'} {named})"
        )
        click.echo(table.to_string())
    if dropped:
        click.echo(
            f"(left out: {', '.join(dropped)}: with one trial per task the trial bootstrap "
            "resamples each task's single outcome onto itself and has zero width)"
        )
    for (name, why), systems in marked.items():
        click.echo(f"(n/a: {name} of {', '.join(map(str, systems))}: {why})")


def echo_comparisons(data: dict):
    """Each comparison: the posterior effect and decision, then each paired bootstrap's."""
    pvalue = report_format._pvalue
    for entry in data["comparisons"]:
        name = report_format._metric_name(entry["metric"], entry["k"])
        words = f" ({entry['estimand_words']})" if entry.get("estimand_words") else ""
        click.echo(
            f"\n{entry['candidate']} - {entry['baseline']}: {name}, {entry['estimand']} "
            f"estimand{words}, margin {entry['margin']:g}, {entry['test']} at prob "
            f"{entry['prob']:g}"
        )
        paired = entry["bayes"]["paired"]
        flag = " FLAGGED (the fit failed its MCMC gates)" if entry["bayes"]["gates_failed"] else ""
        click.echo(
            "  posterior"
            + (" (paired)" if paired.startswith("yes") else f" ({paired.removeprefix('no: ')})")
            + f"{flag}:"
        )
        for row in entry["bayes"]["rows"]:
            bound = f" [{row['missing_bound']}]" if row["missing_bound"] else ""
            click.echo(
                f"    effect{bound} {row['effect']:+.3f} "
                f"{interval_text(row['lower'], row['upper'])} (two-sided), P(effect > 0) = "
                f"{row['prob_positive']:.3f}, P(effect > -margin) = "
                f"{row['prob_noninferior']:.3f}"
            )
        click.echo(f"    decision: {entry['bayes']['decision']['statement']}")
        for boot in entry["bootstrap"]:
            twin = ", the posterior's twin" if boot["twin"] else ""
            click.echo(f"  paired bootstrap by {boot['unit']}{twin}: {boot['meaning']}")
            for row in boot["rows"]:
                bound = f" [{row['missing_bound']}]" if row["missing_bound"] else ""
                click.echo(
                    f"    effect{bound} {row['effect']:+.3f} "
                    f"{interval_text(row['lower'], row['upper'])} (two-sided), share > 0 = "
                    f"{row['prob_positive']:.3f}, p = {pvalue(row['p_value'])} (two-sided, "
                    "no effect)"
                )
            click.echo(f"    decision: {boot['decision']['statement']}")  # with any refusal
    family = data["multiplicity"]
    if family and family["size"] > 1:
        click.echo(
            f"\nmultiplicity: {family['size']} comparisons, {family['method']}-adjusted "
            "bootstrap p-values:"
        )
        for label, p, adj in zip(
            family["family"], family["p_values"], family["adjusted"], strict=True
        ):
            click.echo(f"  {label}: p = {pvalue(p)}, adjusted {pvalue(adj)}")


def header(data, lines, res=None, err=False, compare_res=None):
    """What was read, the data, and the fit's model, engine and layout (:func:`echo_fit`).

    A command prints it before its fit, without ``res``, so that a log reads in the order
    things happened: what was read, the fit's status line, then :func:`echo_fit`.
    """
    for line in lines:
        click.echo(line, err=err)
    click.echo(repr(data), err=err)
    echo_fit(res, err=err, compare_res=compare_res)


def echo_fit(res, err=False, compare_res=None):
    """The fit's model, engine and layout.

    With ``compare_res`` (the comparisons' fit, beside the per-system table's) one line for each.
    """
    fits = (
        [("fit", res)]
        if compare_res is None
        else [("fit (per-system table)", res), ("fit (comparisons)", compare_res)]
    )
    for label, fitted in fits:
        if fitted is None:
            continue
        attrs = fitted.tree.attrs
        systems = "" if compare_res is None else f", {len(fitted.systems)} system(s)"
        click.echo(
            f"{label}: model {attrs['model']}, sampler {attrs['sampler']}, "
            f"{attrs['chains']} chain(s) x {attrs['draws']} draws, seed {attrs['seed']}"
            f"{systems}",
            err=err,
        )


# -- optional sections -------------------------------------------------------------------------
def echo_curves(section: dict, ci_prob: float):
    """Print each pair's effect over k, posterior beside the paired bootstrap's.

    The posterior comes with its pointwise interval and simultaneous band; then where the curves
    cross and the tasks behind it.
    """
    name = report_format._metric_name(section["metric"], "k")
    click.echo(
        f"\neffect over k ({name}, {section['estimand']} estimand): posterior mean "
        f"[{ci_prob:.0%} pointwise] {{band over all k}} beside the "
        f"{section['bootstrap']}"
    )
    for row in section["rows"]:
        bound = row.get("missing_bound")
        click.echo(
            f"  {row['candidate']} - {row['baseline']}" + (f" ({bound} bound)" if bound else "")
        )
        for pt in row["points"]:
            click.echo(
                f"    k={pt['k']:<3} {pt['bayes_mean']:+.3f} "
                f"{interval_text(pt['bayes_lower'], pt['bayes_upper'])} "
                f"{{{pt['band_lower']:.3f}, {pt['band_upper']:.3f}}}, "
                f"P(> 0) {pt['prob_positive']:.3f}; bootstrap "
                f"{pt['bootstrap_estimate']:+.3f} "
                f"{interval_text(pt['bootstrap_lower'], pt['bootstrap_upper'])} "
                f"{{{pt['bootstrap_band_lower']:.3f}, "
                f"{pt['bootstrap_band_upper']:.3f}}}"
            )
        where = (
            ""
            if row["crossing_lower"] is None
            else f", crossing k {interval_text(row['crossing_lower'], row['crossing_upper'])}"
        )
        tasks = ", ".join(f"{t['task']} ({t['change']:+.4f})" for t in row["reversal_tasks"])
        click.echo(
            f"    P(the curves cross within k = {section['k'][0]}..{section['k'][-1]}) "
            f"{row['prob_cross']:.3f}{where}; tasks that move the effect most from the "
            f"first k to the last: {tasks}"
        )


def echo_recipes(section: dict, ci_prob: float):
    """The recipe comparisons: posterior beside the bootstrap twin."""
    about = (
        "these checkpoints (the mean over each recipe's runs)"
        if section["runs"] == "observed"
        else "a new training run of each recipe"
    )
    click.echo(
        f"\nrecipes ({about}; pass@{section['k']}, {section['estimand']}): posterior "
        f"mean [{ci_prob:.0%} interval] beside the {section['bootstrap']}"
    )
    for row in section["rows"]:
        runs = ", ".join(f"{r}: {m} run(s)" for r, m in row["runs_per_recipe"].items())
        click.echo(
            f"  {row['candidate']} - {row['baseline']} ({runs}): "
            f"{row['bayes_mean']:+.3f} "
            f"{interval_text(row['bayes_lower'], row['bayes_upper'])}, "
            f"P(> 0) {row['prob_positive']:.3f}; bootstrap "
            f"{row['bootstrap_estimate']:+.3f} "
            f"{interval_text(row['bootstrap_lower'], row['bootstrap_upper'])}"
        )
    if section["sigma_run"] is not None:
        s = section["sigma_run"]
        click.echo(
            f"  seed spread sigma_run (logit scale): {s['mean']:.3f} "
            f"{interval_text(s['lower'], s['upper'])}"
        )


def echo_cost(section: dict, ci_prob: float, population: str | None = None):
    """The cost table: one row per system, posterior beside bootstrap.

    ``population`` names the population of its pass@1 (tasks resampled, clusters not used).
    """
    money, amounts, percent = (
        report_format._amount,
        report_format._amounts,
        report_format._percent,
    )
    ref = section["reference"]
    rows: dict = {}
    for row in section["rows"]:
        cells = {
            "pass@1 posterior": _value(
                {
                    "bayes_mean": row["pass_at_1_bayes_mean"],
                    "bayes_lower": row["pass_at_1_bayes_lower"],
                    "bayes_upper": row["pass_at_1_bayes_upper"],
                },
                "bayes",
            )
        }
        if row["system"] == ref:
            cells["effect vs reference"] = "reference"
        else:
            cells["effect vs reference"] = (
                f"{row['effect_bayes_mean']:+.3f} "
                f"{interval_text(row['effect_bayes_lower'], row['effect_bayes_upper'])}"
            )
        for prefix, key, label in (
            ("bayes", "mean", "posterior"),
            ("bootstrap", "estimate", "bootstrap"),
        ):
            lower = row[f"cost_per_success_{prefix}_lower"]
            upper = row[f"cost_per_success_{prefix}_upper"]
            cells[f"cost/success {label}"] = (
                f"{money(row[f'cost_per_success_{prefix}_{key}'])} {amounts(lower, upper)}"
            )
        cells["cost/attempt"] = money(row["cost_per_attempt_bootstrap_estimate"])
        cells["timeout"] = percent(row["timeout_rate"])
        cells["error"] = percent(row["error_rate"])
        cells["frontier"] = "yes" if row["on_frontier_bayes"] else ""
        rows[row["system"]] = cells
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "system"
    with wide_tables():
        model = section["cost_model"].replace("_", " ")
        click.echo(
            f"\ncost ({section['column']}): posterior mean ({model} cost model) "
            f"[{ci_prob:.0%} interval] and bootstrap twin; pass@1 per attempt"
            f"{'' if population is None else f' on {population}'}, effect against {ref}"
        )
        click.echo(table.to_string())
    if section.get("cost_misfit"):
        click.echo(
            "log-normal cost check: the log-normal and the bootstrap disagree on the cost "
            "per attempt of " + ", ".join(section["cost_misfit"]) + " (the log costs' "
            "shape is not normal there); read the bootstrap rows for them"
        )
    click.echo(
        f"frontier (cost per attempt vs pass@1): posterior "
        f"{', '.join(section['frontier']['bayes'])}; bootstrap "
        f"{', '.join(section['frontier']['bootstrap'])}"
    )
    if len(section["k"]) > 1:
        click.echo(
            "cost of a first success retrying up to k times, posterior [interval] / bootstrap:"
        )
        for b in section["budget"]:
            boot = b["cost_per_success_at_k_bootstrap_estimate"]
            interval = amounts(
                b["cost_per_success_at_k_bayes_lower"], b["cost_per_success_at_k_bayes_upper"]
            )
            click.echo(
                f"  {b['system']} k={b['k']}: "
                f"{money(b['cost_per_success_at_k_bayes_mean'])} {interval}"
                f" / {'n/a' if boot is None else money(boot)}"
            )


def _latency_check(row: dict) -> str:
    """The log-normal's check of one system: ``ok``, ``misfit`` or ``n/a``."""
    check = row["lognormal_check"]
    if check is None:
        return "n/a"
    return "misfit" if check["misfit"] else "ok"


def echo_judge(section: dict, flagged: bool = False):
    """The judge section: its error per system (and judge), then each pair's pass@1 effects.

    In the report's words (``section["columns"]``, each row's ``label`` and estimand) and its
    number formats, so the terminal shows what the JSON and the report show; ``flagged``
    marks the posterior numbers of a fit that failed its MCMC gates.
    """
    num, signed, interval = report_format._fmt, report_format._signed, report_format._interval
    columns = section["columns"]
    several = len(section["judges"]) > 1
    rows = {}
    for row in section["rows"]:
        rows[(row["system"], row["judge"]) if several else row["system"]] = {
            "labelled / judged": f"{row['n_labelled']} / {row['n_judged']}",
            **{
                columns[name]["header"]: f"{num(row[f'{name}_mean'])} "
                f"{interval(row[f'{name}_lower'], row[f'{name}_upper'])}"
                for name in ("sensitivity", "specificity")
            },
            **{
                columns[name]["header"]: num(row[name])
                for name in ("agreement", "judge_rate", "labelled_rate")
            },
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    if several:
        table.index = pd.MultiIndex.from_tuples(table.index, names=["system", "judge"])
    else:
        table.index.name = "system"
    click.echo(
        ("\njudges " if several else "\njudge ")
        + f"{section['judge']!r}"
        + (
            " (fitted jointly from the patterns of their verdicts on each attempt)"
            if several
            else ""
        )
        + " beside trusted labels (label design "
        f"{section['label_design']!r}), {section['model']} model: posterior mean "
        f"[{report_format._percent(section['ci_prob'])} interval]"
        + (" FLAGGED (the fit failed its MCMC gates)" if flagged else "")
    )
    with wide_tables():
        click.echo(table.to_string())
    for column in columns.values():
        click.echo(f"  {column['header']}: {column['words']}")
    for pair in section["pairs"]:
        click.echo(
            f"\n{pair['candidate']} minus {pair['baseline']}: {section['metric']}, "
            + (
                "the true outcome beside each judge's verdicts and the labels "
                if several
                else "four ways "
            )
            + f"[{report_format._percent(section['ci_prob'])} interval]"
        )
        for row in pair["rows"]:
            click.echo(
                f"  {row['label']}, {section['estimand']}: {row['estimand_words']}: "
                f"{signed(row['estimate'])} {interval(row['lower'], row['upper'])}, "
                f"P(effect > 0) = {num(row['prob_positive'])}"
            )
        if pair["lam"]:
            weights = ", ".join(f"{s} {num(v, 2)}" for s, v in pair["lam"].items())
            click.echo(f"  PPI++ weight of the judge (lam): {weights}")
    if section["ppi_note"]:
        click.echo(f"({section['ppi_note']})")


def echo_latency(section: dict, ci_prob: float):
    """The latency table: one row per system, p50 and p95 posterior beside bootstrap."""
    money, amounts, percent = (
        report_format._amount,
        report_format._amounts,
        report_format._percent,
    )
    rows: dict = {}
    for row in section["rows"]:
        cells = {"durations": f"{row['n_latency']}/{row['n_attempts']}"}
        for x in row["quantiles"]:
            name = f"p{round(100 * x['q']):d}"
            for label, key, prefix in (
                ("posterior", "mean", "bayes"),
                ("bootstrap", "estimate", "bootstrap"),
            ):
                point = x[f"{prefix}_{key}"]
                cells[f"{name} {label}"] = (
                    "n/a"
                    if point is None
                    else f"{money(point)} {amounts(x[f'{prefix}_lower'], x[f'{prefix}_upper'])}"
                )
        cells["timeout"] = percent(row["timeout_rate"]["bootstrap_estimate"])
        cells["error"] = percent(row["error_rate"]["bootstrap_estimate"])
        if section["bayes_model"] == "lognormal":
            cells["log-normal check"] = _latency_check(row)
        rows[row["system"]] = cells
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "system"
    with wide_tables():
        model = (
            "log-normal with task effects"
            if section["bayes_model"] == "lognormal"
            else "Bayesian bootstrap over tasks"
        )
        click.echo(
            f"\nlatency (seconds per attempt): posterior mean ({model}) "
            f"[{ci_prob:.0%} interval] and bootstrap twin"
        )
        click.echo(table.to_string())
    if any(_latency_check(r).startswith("misfit") for r in section["rows"]):
        click.echo(
            "log-normal check: misfit where the log-normal and the bootstrap disagree "
            "(a mean outside the other's interval) or the task means are not normal on "
            "the log scale; read the bootstrap for those systems"
        )
    missing = [r["system"] for r in section["rows"] if r["n_latency"] < r["n_attempts"]]
    if missing:
        click.echo(
            f"attempts without a recorded duration are left out ({len(missing)} "
            f"system(s): {', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})"
        )


def echo_contamination(section: dict):
    """Clean versus flagged tasks, per system."""
    click.echo(
        f"\ncontamination: {section['n_flagged']} flagged vs {section['n_clean']} clean "
        f"task(s), {section['metric']}, {section['estimand']} estimand "
        f"({section['reading']})"
    )
    for row in section["rows"]:
        click.echo(
            f"  {row['system']}: clean {row['clean_mean']:.3f} "
            f"{interval_text(row['clean_lower'], row['clean_upper'])}, flagged "
            f"{row['flagged_mean']:.3f} "
            f"{interval_text(row['flagged_lower'], row['flagged_upper'])}, flagged - "
            f"clean {row['difference_mean']:+.3f} "
            f"{interval_text(row['difference_lower'], row['difference_upper'])}, "
            f"all - clean {row['inflation_mean']:+.3f}"
        )
