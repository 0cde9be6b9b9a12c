"""The ``bayeval`` command."""

from __future__ import annotations

import click
import pandas as pd

import bayeval as be


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(be.__version__, prog_name="bayeval")
def main():
    """Honest uncertainty for AI evaluation results: pass@k, pass^k and paired comparisons."""


@main.command()
@click.option("--n-boot", default=10_000, show_default=True, help="Bootstrap replicates.")
@click.option("--seed", default=0, show_default=True, help="Random seed.")
def demo(n_boot: int, seed: int):
    """Analyse the bundled SWE-bench Verified results (25 systems x 500 tasks, 12 repositories)."""
    data = be.datasets.load("swebench_verified")
    click.echo(repr(data))
    intervals = {}
    for unit in ("task", "cluster"):
        res = be.bootstrap.pass_at_k(data, k=1, unit=unit, n_boot=n_boot, seed=seed)
        intervals[unit] = res["interval"].to_pandas()
    table = pd.DataFrame({"pass@1": res["estimate"].to_pandas()})
    for unit, frame in intervals.items():
        table[f"{unit} 95% lower"] = frame["lower"]
        table[f"{unit} 95% upper"] = frame["upper"]
    table = table.sort_values("pass@1", ascending=False)
    click.echo("\npass@1 with 95% bootstrap intervals (task: tasks like these; cluster: new "
               "repositories)")
    click.echo(table.round(3).to_string())
    best, second = table.index[:2]
    cmp = be.bootstrap.compare(data, best, second, unit="cluster", n_boot=n_boot, seed=seed)
    lo, hi = cmp["effect_interval"].values
    click.echo(f"\n{best} - {second}: {float(cmp['effect_estimate']):+.3f} "
               f"[{lo:+.3f}, {hi:+.3f}], share of replicates > 0: "
               f"{float(cmp['prob_positive']):.2f} (paired cluster bootstrap)")
