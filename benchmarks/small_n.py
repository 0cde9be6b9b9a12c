"""Small task counts: coverage of the hierarchical model's intervals with few tasks, by prior.

Run (from the repository root)::

    PYTHONPATH=. python benchmarks/small_n.py                 # the study, ~30 min on 2 cores
    PYTHONPATH=. python benchmarks/small_n.py --quick         # smoke run, results in <out>/quick
    PYTHONPATH=. python benchmarks/small_n.py --from-raw benchmarks/results/small_n_raw.csv

The calibration study (``benchmarks/calibration.py``) runs 50 simulations in most cells, too few
to see a shortfall of 0.05 (its Monte Carlo standard error is 0.03 there). This study refits the
hierarchical model (grid engine) in the small-N cells with enough simulations to resolve one
(400 per cell: a standard error of 0.011 at coverage 0.95), under several concentration priors
on the *same* simulations, and checks the priors in a few large-N cells too, so that a prior
that helps with few tasks is not bought with many.

Cells, simulations and evaluation are the calibration study's: the simulation of cell
``(scenario, N, n)`` number ``i`` is the one :func:`benchmarks.calibration.sim_seed` gives from
:func:`benchmarks.calibration.cell_seed` (so the first 50 simulations of a cell shared with the
calibration study are that study's). Every fit is the grid engine's, with the draws
``bayeval.fit(..., sampler="grid", task_draws=False)`` gives and the estimands its results
compute from them (:func:`grid_intervals` calls the same functions and a test checks that it
reproduces :func:`benchmarks.calibration._hierarchical` exactly), without the posterior
predictive check and the result object that make ``fit`` several times slower at small N:
``draws`` x ``chains``, equal-tailed 95% intervals for pass@1 and, from n >= 5 trials, pass@5,
for both estimands. Population intervals are checked against the population truth, tasks
intervals against the drawn tasks' mean.

Writes ``small_n.md`` (the full table, the cells that undercover, and between the markers
:data:`benchmarks.calibration.SMALL_N_MARKERS` the section of the model card), ``small_n.csv``
(the summary) and ``small_n.json`` (settings) to ``--out``, and replaces that section of the
generated card ``models/hierarchical.md`` ("Small task counts"; ``benchmarks/calibration.py``
writes the same section from ``small_n.md`` when it regenerates the cards).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayeval as be  # noqa: E402
from bayeval.models import hierarchical  # noqa: E402
from bayeval.models._beta_family import (  # noqa: E402
    Populations,
    counts_by_bound,
    population_value,
    tasks_draws,
)
from bayeval.simulate import simulate_benchmark  # noqa: E402
from benchmarks import calibration as cal  # noqa: E402

SCENARIOS = ("u_shaped", "beta_2_5", "uniform")
SMALL_N = (3, 5, 10, 20)
LARGE_N = (50, 200)
TRIAL_VALUES = cal.TRIAL_VALUES
#: Concentration priors compared: label -> ``priors=`` of :func:`bayeval.fit`.
PRIORS = {
    "default N(1, 1.5)": None,
    "BDA3 (a+b)^-5/2": {"log_kappa": "bda3"},
    "wide N(0, 3)": {"log_kappa": (0.0, 3.0)},
    "kappa<1 N(-1, 1)": {"log_kappa": (-1.0, 1.0)},
}
DEFAULT = next(iter(PRIORS))
#: The cell of the reported shortfall, run with more simulations.
FOCUS = ("u_shaped", 5, 32)
CARD_START, CARD_END = cal.SMALL_N_MARKERS
METHODS = ("hierarchical pop", "hierarchical tasks")


def sims_for(cell, args) -> int:
    """Simulations in a cell.

    ``--focus-sims`` in :data:`FOCUS`, ``--sims`` for N <= 10, ``--n20-sims`` for N = 20,
    ``--large-sims`` for the large-N checks.
    """
    if cell == FOCUS:
        return args.focus_sims
    n_tasks = cell[1]
    if n_tasks <= 10:
        return args.sims
    if n_tasks <= 20:
        return args.n20_sims
    return args.large_sims


def build_plan(args) -> list[dict]:
    """Work units of ``--chunk`` simulations."""
    units = []
    for scenario in args.scenarios:
        for n_tasks in args.n_tasks:
            for n_trials in args.n_trials:
                cell = (scenario, n_tasks, n_trials)
                sims = sims_for(cell, args)
                base = cal.cell_seed(args.seed, *cell)
                for start in range(0, sims, args.chunk):
                    units.append(
                        dict(
                            cell=cell,
                            base=base,
                            start=start,
                            stop=min(start + args.chunk, sims),
                            priors=args.priors,
                            opts=dict(draws=args.draws, chains=args.chains),
                        )
                    )
    # the small-N cells first (an interrupted run still has them), the costlier first within
    units.sort(
        key=lambda u: (
            u["cell"][1] > 10,
            u["cell"][1],
            -(u["stop"] - u["start"]) * (1 + u["cell"][1] / 20 * (1 + (u["cell"][2] > 4))),
        )
    )
    return units


def evaluate(scenario, n_tasks, n_trials, index, seed, opts, priors) -> list[dict]:
    """Hierarchical intervals of one simulated benchmark under each prior in ``priors``.

    Parameters
    ----------
    scenario : str
        A key of :data:`benchmarks.calibration.SCENARIOS`.
    n_tasks, n_trials : int
        Cell size.
    index : int
        Simulation number within the cell.
    seed : int
        The simulation's seed (also the fits').
    opts : dict
        ``draws`` and ``chains`` of the fits.
    priors : sequence of str
        Labels of :data:`PRIORS`.

    Returns
    -------
    list of dict
        One record per (prior, estimand, metric).
    """
    sim = simulate_benchmark(**cal.scenario_kwargs(scenario, n_tasks, n_trials), seed=seed)
    truths = {
        k: (sim.truth(k=k, estimand="tasks")[0], sim.truth(k=k, estimand="population")[0])
        for k in (1, cal.K_AT)
    }
    ks = cal._metrics_for(n_trials, exact=True)  # pass@5 only where n >= 5
    rows = []
    for label in priors:
        rec = cal._Recorder(
            dict(study="small_n", scenario=scenario, N=n_tasks, n=n_trials, sim=index, prior=label)
        )
        grid_intervals(rec, sim, seed, opts, ks, truths, priors=PRIORS[label])
        rows.extend(rec.rows)
    return rows


def grid_intervals(rec, sim, seed, opts, ks, truths, priors=None, label="hierarchical"):
    """The records :func:`benchmarks.calibration._hierarchical` adds for a one-system benchmark.

    They come from the grid engine's draws and the estimand functions ``bayeval.fit``'s
    results use (same seeds, so the same draws).
    """
    start = time.perf_counter()
    mu, kappa, _ = hierarchical.fit_grid(sim.data, priors, opts["draws"], opts["chains"], seed)
    ds = sim.data.dataset
    c, n, _ = counts_by_bound(ds)
    pops = Populations.from_dataset(ds)
    alpha = (mu * kappa)[:, :, 0, 0].reshape(-1, pops.n)
    beta = ((1 - mu) * kappa)[:, :, 0, 0].reshape(-1, pops.n)
    ks = np.asarray(ks)
    values = {
        "pop": population_value(alpha, beta, pops, "pass@k", ks),
        "tasks": tasks_draws(alpha, beta, c[0, 0], n[0, 0], pops, "pass@k", ks, seed, [0, 0]),
    }
    seconds = time.perf_counter() - start
    for short in ("pop", "tasks"):
        est, lo, hi = cal._eti(values[short])
        for i, k in enumerate(ks):
            rec.add(f"{label} {short}", f"pass@{k}", est[i], lo[i], hi[i], *truths[k], seconds)


def run_unit(unit) -> list[dict]:
    """All simulations of one work unit."""
    warnings.simplefilter("ignore")
    rows = []
    for index in range(unit["start"], unit["stop"]):
        seed = cal.sim_seed(unit["base"], index)
        rows.extend(evaluate(*unit["cell"], index, seed, unit["opts"], unit["priors"]))
    return rows


def run_plan(units, jobs: int, raw: Path | None = None) -> pd.DataFrame:
    """Run the units on ``jobs`` processes; returns all records.

    The records are appended to ``raw``, a CSV, as each unit finishes, so that an interrupted
    run can be summarised with --from-raw.
    """
    rows, start = [], time.perf_counter()
    if raw is not None and raw.exists():
        raw.unlink()
    pool = None
    if jobs <= 1:
        results = map(run_unit, units)
    else:
        pool = mp.get_context("spawn").Pool(jobs, initializer=cal._init_worker)
        results = pool.imap_unordered(run_unit, units)
    try:
        for i, unit_rows in enumerate(results):
            rows.extend(unit_rows)
            if raw is not None:
                pd.DataFrame(unit_rows).to_csv(
                    raw, mode="a", header=not raw.exists(), index=False, float_format="%.10g"
                )
            if i % 10 == 0 or i == len(units) - 1:
                print(
                    f"  {i + 1}/{len(units)} units, {time.perf_counter() - start:.0f} s", flush=True
                )
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return pd.DataFrame(rows)


# -- summaries ---------------------------------------------------------------------------------
def summarise(records: pd.DataFrame) -> pd.DataFrame:
    """:func:`benchmarks.calibration.summarise` per (scenario, N, n, method, metric, prior).

    Adds the coverage, Monte Carlo se and shortfall of each method's own estimand.
    """
    out = cal.summarise(records, keys=("study", "scenario", "N", "n", "method", "metric", "prior"))
    own = np.where(out["designed"] == "population", "population", "tasks")
    out["estimand"] = own
    out["coverage"] = np.where(own == "population", out["cov_population"], out["cov_tasks"])
    out["se"] = np.where(own == "population", out["se_population"], out["se_tasks"])
    out["undercovers"] = out["coverage"] + 2 * out["se"] < cal.CI_PROB
    order = {name: i for i, name in enumerate(PRIORS)}
    out["_order"] = list(
        zip(
            out["scenario"].map(cal.SCENARIO_INDEX),
            out["N"],
            out["n"],
            out["metric"],
            out["method"].map({m: i for i, m in enumerate(METHODS)}),
            out["prior"].map(order),
            strict=True,
        )
    )
    return out.sort_values("_order").drop(columns="_order").reset_index(drop=True)


def _cov(row) -> str:
    return cal.fmt_cov(row["coverage"], row["se"])


def full_table(summary: pd.DataFrame) -> str:
    """One row per (scenario, N, n, metric, estimand, prior)."""
    lines = [
        "| scenario | N | n | metric | estimand | prior | sims | coverage ± MC se | mean width |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        mark = " **below**" if r["undercovers"] else ""
        lines.append(
            f"| {r['scenario']} | {r['N']} | {r['n']} | {r['metric']} | "
            f"{r['estimand']} | {r['prior']} | {r['sims']} | {_cov(r)}{mark} | "
            f"{cal._fmt(r['width'])} |"
        )
    return "\n".join(lines)


def compact_table(summary: pd.DataFrame, method: str) -> str:
    """Rows (scenario, N, n, metric); one column per prior: ``coverage ± se (width)``."""
    rows = summary[summary["method"] == method]
    priors = [p for p in PRIORS if p in set(rows["prior"])]
    header = ["scenario", "N", "n", "metric", "sims"] + priors
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for (scenario, n_tasks, n_trials, metric), group in rows.groupby(
        ["scenario", "N", "n", "metric"], sort=False
    ):
        cells = [scenario, str(n_tasks), str(n_trials), metric, str(int(group["sims"].max()))]
        for prior in priors:
            r = group[group["prior"] == prior]
            if r.empty:
                cells.append("")
                continue
            r = r.iloc[0]
            text = f"{_cov(r)} ({cal._fmt(r['width'])})"
            cells.append(f"**{text}**" if r["undercovers"] else text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def undercovering(summary: pd.DataFrame, prior: str | None = None) -> str:
    """Sentences for every cell more than two MC se below 0.95 (one prior, or all)."""
    rows = summary[summary["undercovers"]]
    if prior is not None:
        rows = rows[rows["prior"] == prior]
    if rows.empty:
        return "None."
    return "\n".join(
        f"- {r['method']} ({r['estimand']}), {r['scenario']}, N = {r['N']}, n = {r['n']}, "
        f"{r['metric']}, prior {r['prior']}: {_cov(r)} ({r['sims']} sims), mean width "
        f"{cal._fmt(r['width'])}."
        for _, r in rows.iterrows()
    )


def prior_totals(summary: pd.DataFrame) -> str:
    """Per prior and estimand: cells below, worst and mean coverage, width ratio to default.

    The width ratio is to the default prior's; over the small-N and the large-N cells.
    """
    lines = [
        "| task counts | estimand | prior | cells | below 0.95 by > 2 se | lowest coverage | "
        "mean coverage | mean width / default's |",
        "|---|---|---|---|---|---|---|---|",
    ]
    base = summary[summary["prior"] == DEFAULT].set_index(
        ["scenario", "N", "n", "method", "metric"]
    )["width"]
    for label, sel in (("N <= 20", summary["N"] <= 20), ("N >= 50", summary["N"] >= 50)):
        for method in METHODS:
            for prior in PRIORS:
                r = summary[sel & (summary["method"] == method) & (summary["prior"] == prior)]
                if r.empty:
                    continue
                keys = pd.MultiIndex.from_frame(r[["scenario", "N", "n", "method", "metric"]])
                ratio = np.nanmean(r["width"].values / base.reindex(keys).values)
                lines.append(
                    f"| {label} | {r['estimand'].iloc[0]} | {prior} | {len(r)} | "
                    f"{int(r['undercovers'].sum())} | {r['coverage'].min():.3f} | "
                    f"{r['coverage'].mean():.3f} | {ratio:.3f} |"
                )
    return "\n".join(lines)


def warns(scenario, n_tasks, n_trials, index, seed) -> bool:
    """Whether :func:`bayeval.models.hierarchical.warn_few_tasks` warns on this benchmark.

    The benchmark is the simulated one of the cell and seed given.
    """
    sim = simulate_benchmark(**cal.scenario_kwargs(scenario, n_tasks, n_trials), seed=seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hierarchical.warn_few_tasks(sim.data)
    return any(issubclass(w.category, be.BayevalWarning) for w in caught)


def warning_table(records: pd.DataFrame, seed: int) -> str:
    """Coverage of the default prior's population intervals (N <= 20, n >= 4), by warning.

    Split by whether :func:`warns` on the simulated benchmark; the benchmarks are drawn again
    from their seeds.
    """
    rows = records[
        (records["prior"] == DEFAULT)
        & (records["method"] == "hierarchical pop")
        & (records["N"] <= 20)
        & (records["n"] > 1)
    ].copy()
    if rows.empty:
        return "_(no cells with N <= 20 and n > 1)_"
    fired = {}
    for scenario, n_tasks, n_trials, index in set(
        zip(rows["scenario"], rows["N"], rows["n"], rows["sim"], strict=True)
    ):
        base = cal.cell_seed(seed, scenario, n_tasks, n_trials)
        fired[(scenario, n_tasks, n_trials, index)] = warns(
            scenario, n_tasks, n_trials, index, cal.sim_seed(base, index)
        )
    rows["warns"] = [
        fired[key] for key in zip(rows["scenario"], rows["N"], rows["n"], rows["sim"], strict=True)
    ]
    rows["hit"] = (rows["lower"] - 1e-12 <= rows["truth_population"]) & (
        rows["truth_population"] <= rows["upper"] + 1e-12
    )
    lines = [
        "| scenario | N | n | metric | share warned | coverage when warned | coverage otherwise |",
        "|---|---|---|---|---|---|---|",
    ]

    def cov(sel):
        if len(sel) == 0:
            return ""
        c = sel["hit"].mean()
        return f"{cal.fmt_cov(c, np.sqrt(c * (1 - c) / len(sel)))} ({len(sel)})"

    groups = [("all", "", "", "pass@1", rows[rows["metric"] == "pass@1"])]
    for (scenario, n_tasks, n_trials, metric), g in rows.groupby(
        ["scenario", "N", "n", "metric"], sort=False
    ):
        groups.append((scenario, n_tasks, n_trials, metric, g))
    for scenario, n_tasks, n_trials, metric, g in groups:
        lines.append(
            f"| {scenario} | {n_tasks} | {n_trials} | {metric} | "
            f"{g['warns'].mean():.2f} | {cov(g[g['warns']])} | "
            f"{cov(g[~g['warns']])} |"
        )
    return "\n".join(lines)


def settings_text(settings: dict) -> str:
    wall = (
        "The run was interrupted; rows show the simulations done."
        if settings.get("wall_minutes") is None
        else f"Wall time {settings['wall_minutes']:.1f} min on {settings['jobs']} processes "
        f"({settings['machine']})."
    )
    return (
        f"Command: `{settings['command']}`. Seed {settings['seed']} (the calibration "
        f"study's cell seeds); {settings['sims']} simulations per cell with N <= 10, "
        f"{settings['focus_sims']} in U-shaped N = 5, n = 32, {settings['n20_sims']} with "
        f"N = 20 and {settings['large_sims']} in the large-N checks (N = 50, 200); every "
        f"prior fitted to the same simulations. Grid engine, {settings['chains']} chains x "
        f"{settings['draws']} draws, equal-tailed 95% intervals. {wall}"
    )


def card_section(summary: pd.DataFrame, settings: dict, warned: str = "") -> str:
    """The model card's section (without its heading)."""
    parts = [
        settings_text(settings),
        "",
        "Population intervals (population truth), `coverage ± MC se (mean width)`; bold: "
        "more than two Monte Carlo standard errors below 0.95:",
        "",
        compact_table(summary, "hierarchical pop"),
        "",
        "Tasks intervals (the drawn tasks' mean):",
        "",
        compact_table(summary, "hierarchical tasks"),
        "",
        "Over the cells, per prior:",
        "",
        prior_totals(summary),
        "",
        f"Cells below 0.95 by more than two MC se under the default prior ({DEFAULT}):",
        "",
        undercovering(summary, DEFAULT),
    ]
    if warned:
        parts += [
            "",
            "`bayeval.models.hierarchical.warn_few_tasks` warns for a population of "
            f"at most {hierarchical.FEW_TASKS} tasks, more than half of them solved on all "
            f"or none of at least {hierarchical.FEW_TASKS_MIN_TRIALS} trials. Default "
            "prior's population coverage (`coverage ± MC se (simulations)`) of the "
            "simulations where it warns and of the others, N <= 20, n > 1 (the first row "
            "pools the pass@1 rows of all three scenarios):",
            "",
            warned,
        ]
    return "\n".join(parts)


def results_markdown(summary: pd.DataFrame, settings: dict, warned: str = "") -> str:
    return "\n".join(
        [
            "# Hierarchical model with few tasks: coverage by concentration prior",
            "",
            ("Every cell below 0.95 by more than two Monte Carlo standard errors (any prior):"),
            "",
            undercovering(summary),
            "",
            "## Model card section",
            "",
            CARD_START,
            card_section(summary, settings, warned),
            CARD_END,
            "",
            "## All cells",
            "",
            full_table(summary),
            "",
        ]
    )


def card_block(path: Path) -> str | None:
    """The card section stored in a ``small_n.md``, or None when absent."""
    if not path.exists():
        return None
    match = re.search(
        re.escape(CARD_START) + r"\n(.*?)\n" + re.escape(CARD_END), path.read_text(), flags=re.S
    )
    return match.group(1) if match else None


def update_card(card: Path, block: str) -> bool:
    """Replace the text between the small-N markers of a generated card."""
    if not card.exists():
        return False
    text = card.read_text()
    pattern = re.escape(CARD_START) + r"\n.*?\n" + re.escape(CARD_END)
    if not re.search(pattern, text, flags=re.S):
        return False
    card.write_text(
        re.sub(pattern, lambda _: f"{CARD_START}\n{block}\n{CARD_END}", text, flags=re.S)
    )
    return True


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=400, help="simulations per cell, N <= 10")
    parser.add_argument(
        "--focus-sims", type=int, default=800, help="simulations in U-shaped N = 5, n = 32"
    )
    parser.add_argument("--n20-sims", type=int, default=200, help="simulations per N = 20 cell")
    parser.add_argument(
        "--large-sims",
        type=int,
        default=100,
        help="simulations per large-N check cell (N = 50, 200)",
    )
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=25)
    parser.add_argument(
        "--scenarios", nargs="+", default=list(SCENARIOS), choices=list(cal.SCENARIOS)
    )
    parser.add_argument("--n-tasks", type=int, nargs="+", default=list(SMALL_N + LARGE_N))
    parser.add_argument("--n-trials", type=int, nargs="+", default=list(TRIAL_VALUES))
    parser.add_argument("--priors", nargs="+", default=list(PRIORS), choices=list(PRIORS))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--card", type=Path, default=ROOT / "models" / "hierarchical.md")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: few simulations, results in <out>/quick, no card",
    )
    parser.add_argument(
        "--save-raw",
        action="store_true",
        help="also write every interval (small_n_raw.csv, as it goes)",
    )
    parser.add_argument(
        "--from-raw",
        type=Path,
        help="summarise a saved small_n_raw.csv instead of simulating (an "
        "endpoint that ties a truth to its stored digits may count "
        "differently than in the run)",
    )
    args = parser.parse_args(argv)
    words = list(argv if argv is not None else sys.argv[1:])
    kept, skip = [], False
    for word in words:  # options that do not change the results are left out of the record
        if skip:
            skip = False
            continue
        if word in ("--from-raw", "--jobs", "--out", "--card"):
            skip = True
            continue
        if word == "--save-raw" or word.startswith(("--from-raw=", "--jobs=", "--out=", "--card=")):
            continue
        kept.append(word)
    args.command = " ".join(["python benchmarks/small_n.py"] + kept)
    if args.quick:
        args.sims = args.focus_sims = args.n20_sims = args.large_sims = 4
        args.n_tasks = [3, 5]
        args.chunk = 4
        args.out = args.out / "quick"
        args.card = None
    return args


def main(argv=None):
    """Run the study, write the tables and update the card's section."""
    args = parse_args(argv)
    warnings.simplefilter("ignore")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_raw:
        records = pd.read_csv(args.from_raw, keep_default_na=False, na_values=["", "nan", "NaN"])
        settings = json.loads((args.out / "small_n.json").read_text())
    else:
        start = time.perf_counter()
        settings = dict(
            command=args.command,
            seed=args.seed,
            sims=args.sims,
            focus_sims=args.focus_sims,
            n20_sims=args.n20_sims,
            large_sims=args.large_sims,
            draws=args.draws,
            chains=args.chains,
            jobs=args.jobs,
            wall_minutes=None,
            machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
        )
        (args.out / "small_n.json").write_text(json.dumps(settings, indent=2))
        units = build_plan(args)
        print(f"{len(units)} work units on {args.jobs} process(es)", flush=True)
        raw = args.out / "small_n_raw.csv" if args.save_raw else None
        records = run_plan(units, args.jobs, raw)
        wall = time.perf_counter() - start
        settings["wall_minutes"] = wall / 60
        (args.out / "small_n.json").write_text(json.dumps(settings, indent=2))
    summary = summarise(records)
    summary.to_csv(args.out / "small_n.csv", index=False, float_format="%.6g")
    warned = warning_table(records, settings["seed"])
    (args.out / "small_n.md").write_text(results_markdown(summary, settings, warned))
    if args.card is not None and update_card(args.card, card_section(summary, settings, warned)):
        print(f"updated {args.card}", flush=True)
    print(prior_totals(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
