"""The ``bayeval`` command."""

from __future__ import annotations

import warnings

import click
import pandas as pd

import bayeval as be


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Statistical caveats read as notes on the terminal, not as Python tracebacks."""
    prefix = "note" if issubclass(category, be.BayevalWarning) else "warning"
    click.echo(f"{prefix}: {message}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(be.__version__, prog_name="bayeval")
def main():
    """Honest uncertainty for AI evaluation results: pass@k, pass^k and paired comparisons."""
    warnings.showwarning = _show_warning


def _interval_text(lower, upper) -> str:
    return f"[{lower:.3f}, {upper:.3f}]"


@main.command()
@click.option("--n-boot", default=10_000, show_default=True, help="Bootstrap replicates.")
@click.option("--seed", default=0, show_default=True, help="Random seed of fit and bootstrap.")
def demo(n_boot: int, seed: int):
    """Analyse the bundled SWE-bench Verified results (25 systems x 500 tasks, 12 repositories).

    Fits the hierarchical model, prints each system's pass@1 for both estimands next to its
    bootstrap twin, and compares the two leading systems.
    """
    data = be.datasets.load("swebench_verified")
    click.echo(repr(data))
    res = be.fit(data, model="hierarchical", seed=seed)
    check = be.crosscheck(res, k=1, n_boot=n_boot, seed=seed)
    rows = {}
    for system in res.systems:
        row = {}
        for estimand, label in (("population", "tasks like these"), ("tasks", "these tasks")):
            part = check.sel(estimand=estimand, system=system)
            row[f"{label}: posterior"] = (f"{float(part['bayes_mean']):.3f} " + _interval_text(
                *part["bayes_interval"].values))
            row[f"{label}: bootstrap"] = (f"{float(part['bootstrap_estimate']):.3f} "
                                          + _interval_text(*part["bootstrap_interval"].values))
        rows[system] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    order = check["bayes_mean"].sel(estimand="population").to_series().sort_values(
        ascending=False).index
    pd.set_option("display.width", 250)
    click.echo("\npass@1, mean [95% interval]: hierarchical posterior and its bootstrap twin "
               "(task bootstrap for tasks like these, trial bootstrap for these tasks; with one "
               "trial per task the trial bootstrap has no width)")
    click.echo(table.loc[order].to_string())
    best, second = order[:2]
    cmp = res.compare(best, second, k=1, estimand="population")
    boot = be.bootstrap.compare(data, best, second, unit="cluster", n_boot=n_boot, seed=seed)
    click.echo(f"\n{best} - {second}, pass@1:")
    click.echo(f"  posterior (tasks like these, systems independent): "
               f"{float(cmp['effect_mean']):+.3f} {_interval_text(*cmp['effect_interval'].values)}"
               f", P(effect > 0) = {float(cmp['prob_positive']):.2f}")
    click.echo(f"  paired cluster bootstrap (new repositories): "
               f"{float(boot['effect_estimate']):+.3f} "
               f"{_interval_text(*boot['effect_interval'].values)}, share of replicates > 0 = "
               f"{float(boot['prob_positive']):.2f}")
