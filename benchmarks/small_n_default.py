"""Coverage of the hierarchical model's default concentration prior, chosen from the data.

Run:  python benchmarks/small_n_default.py [--summary benchmarks/results/small_n.csv]

The default ``log_kappa`` prior depends on what the data can identify
(:meth:`bayeval.models.hierarchical.HierarchicalRates.data_priors`): with at most
``FEW_TASKS`` tasks and a median of at least ``FEW_TASKS_PRIOR_TRIALS`` trials per task it is
``FEW_TASKS_LOG_KAPPA``, otherwise ``DEFAULT_PRIORS["log_kappa"]``. ``benchmarks/small_n.py``
fitted both priors to the same simulations of every cell (same seeds, same draws), so the
default's coverage in a cell is the row of the prior it chooses there: this script reads those
rows from the study's summary and tabulates them, refitting nothing. Every cell of the study
has one number of tasks and one number of trials, so the rule picks one prior per cell.

Writes ``benchmarks/results/small_n_default.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from bayeval.models.hierarchical import (
    DEFAULT_PRIORS,
    FEW_TASKS,
    FEW_TASKS_LOG_KAPPA,
    FEW_TASKS_PRIOR_TRIALS,
)

RESULTS = Path(__file__).resolve().parent / "results"
LABELS = {  # small_n.py's labels of the two priors the rule chooses between
    tuple(DEFAULT_PRIORS["log_kappa"]): "default N(1, 1.5)",
    tuple(FEW_TASKS_LOG_KAPPA): "wide N(0, 3)",
}


def chosen(n_tasks: int, n_trials: int) -> str:
    """The study's label of the prior the default rule picks for a cell."""
    few = n_tasks <= FEW_TASKS and n_trials >= FEW_TASKS_PRIOR_TRIALS
    return LABELS[tuple(FEW_TASKS_LOG_KAPPA if few else DEFAULT_PRIORS["log_kappa"])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--summary", type=Path, default=RESULTS / "small_n.csv")
    parser.add_argument("--out", type=Path, default=RESULTS / "small_n_default.md")
    args = parser.parse_args()
    summary = pd.read_csv(args.summary)
    picks = summary.apply(lambda r: chosen(int(r["N"]), int(r["n"])), axis=1)
    rows = summary[summary["prior"] == picks].copy()
    old = summary[summary["prior"] == LABELS[tuple(DEFAULT_PRIORS["log_kappa"])]]
    lines = [
        "# Hierarchical model: the default concentration prior, chosen from the data",
        "",
        f"Command: `python benchmarks/small_n_default.py` on `{args.summary.name}` (the "
        "simulations and fits of `benchmarks/small_n.py`). Rule: log_kappa ~ Normal"
        f"{tuple(FEW_TASKS_LOG_KAPPA)} with at most {FEW_TASKS} tasks and a median of at least "
        f"{FEW_TASKS_PRIOR_TRIALS} trials per task, Normal{tuple(DEFAULT_PRIORS['log_kappa'])} "
        "otherwise.",
        "",
        "| task counts | estimand | cells | below 0.95 by > 2 se (chosen / fixed N(1, 1.5)) | "
        "lowest coverage (chosen / fixed) | mean coverage (chosen / fixed) |",
        "|---|---|---|---|---|---|",
    ]
    for label, small in (("N <= 20", True), ("N >= 50", False)):
        for estimand in ("population", "tasks"):
            a = rows[((rows["N"] <= 20) == small) & (rows["estimand"] == estimand)]
            b = old[((old["N"] <= 20) == small) & (old["estimand"] == estimand)]
            lines.append(
                f"| {label} | {estimand} | {len(a)} | {int(a['undercovers'].sum())} / "
                f"{int(b['undercovers'].sum())} | {a['coverage'].min():.3f} / "
                f"{b['coverage'].min():.3f} | {a['coverage'].mean():.3f} / "
                f"{b['coverage'].mean():.3f} |"
            )
    lines += [
        "",
        "Every cell, the chosen prior's row (coverage ± Monte Carlo se, mean width):",
        "",
        "| scenario | N | n | metric | estimand | prior chosen | sims | coverage | width |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in rows.iterrows():
        mark = " **below**" if r["undercovers"] else ""
        lines.append(
            f"| {r['scenario']} | {r['N']} | {r['n']} | {r['metric']} | {r['estimand']} | "
            f"{r['prior']} | {r['sims']} | {r['coverage']:.3f} ± {r['se']:.3f}{mark} | "
            f"{r['width']:.3f} |"
        )
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:12]))


if __name__ == "__main__":
    main()
