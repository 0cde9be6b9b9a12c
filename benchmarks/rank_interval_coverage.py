"""Coverage of the posterior rank intervals of ``Results.ranks`` in simulations with a known order.

Run:  python benchmarks/rank_interval_coverage.py [--n-sim 60] [--draws 500] [--out PATH]
          [--scenario TEXT ...]

Each simulation draws a benchmark from the paired logit-normal model itself
(:func:`bayeval.simulate.simulate_benchmark`: shared task difficulties, a task-by-system spread,
systems shifted on the logit scale), fits the default model (``fit(data)``: ``logit_normal``
with the system level, as ``bayeval rank`` does) and reads ``ranks`` under both estimands. The
truth of ``estimand="tasks"`` is the order of the systems' mean true rates over the simulated
tasks; of ``estimand="population"`` the order of their expected rates on a new task. A system's
95% rank interval covers when its true rank lies inside it (marginal); the joint column is the
share of simulations in which every system's does, which a set of each system's own intervals
does not promise and the simultaneous intervals (``rank_interval_simultaneous``, all systems'
ranks at once with posterior probability 0.95) aim at, as the bootstrap's simultaneous rank
sets do (``benchmarks/rank_coverage.py``).

Writes the table to ``benchmarks/results/rank_interval_coverage.txt`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np

import bayeval as be
from bayeval.simulate import simulate_benchmark

OUT = Path(__file__).resolve().parent / "results" / "rank_interval_coverage.txt"

SCENARIOS = {
    "8 systems, spaced 0.15 logits; 120 tasks x 1 trial": dict(
        shifts=np.linspace(0.0, 1.05, 8), n_tasks=120, n_trials=1
    ),
    "8 systems, spaced 0.15 logits; 60 tasks x 4 trials": dict(
        shifts=np.linspace(0.0, 1.05, 8), n_tasks=60, n_trials=4
    ),
    "8 systems, two tied pairs; 120 tasks x 1 trial": dict(
        shifts=np.array([0.0, 0.0, 0.3, 0.45, 0.6, 0.6, 0.9, 1.05]), n_tasks=120, n_trials=1
    ),
}


def true_ranks(values):
    """Rank 1 = best; ties share the best of their ranks (as ``Results.ranks`` does)."""
    values = np.asarray(values)
    return np.array([1 + int(np.sum(values > v + 1e-12)) for v in values])


def one_run(seed, shifts, n_tasks, n_trials, draws):
    sim = simulate_benchmark(
        n_tasks=n_tasks,
        n_trials=n_trials,
        n_systems=len(shifts),
        rates=("logit_normal", -0.5, 1.5),
        effect=list(shifts),
        task_system_sd=0.3,
        seed=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # gates are counted below
        res = be.fit(sim.data, draws=draws, chains=2, seed=seed, progress=False)
    out = {"divergences": res.diagnostics["divergences"], "model": res.model}
    for estimand in ("tasks", "population"):
        ranks = res.ranks(k=1, estimand=estimand)
        truth = true_ranks(sim.truth(estimand=estimand))
        for kind, name in (("own", "rank_interval"), ("at once", "rank_interval_simultaneous")):
            interval = ranks[name].transpose("system", "ci_bound").values
            inside = (interval[:, 0] <= truth) & (truth <= interval[:, 1])
            out[estimand, kind] = (inside, interval[:, 1] - interval[:, 0] + 1)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sim", type=int, default=60)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--scenario", action="append", help="run only the scenarios whose label holds this"
    )
    args = parser.parse_args()
    chosen = {
        label: spec
        for label, spec in SCENARIOS.items()
        if not args.scenario or any(part in label for part in args.scenario)
    }
    lines = [
        f"# python benchmarks/rank_interval_coverage.py --n-sim {args.n_sim} --draws "
        f"{args.draws}{''.join(f' --scenario {part!r}' for part in args.scenario or [])}"
        f"   ({time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores)",
        "Coverage of the 95% posterior rank intervals (Results.ranks, the default fit, "
        "2 chains); Monte Carlo se of a coverage near 0.95 over n simulations: "
        "sqrt(0.95 * 0.05 / n)",
        "",
        f"{'scenario':<52} {'estimand':<11} {'intervals':<9} {'marginal':>8} {'min..max':>11} "
        f"{'joint':>6} {'width':>6}",
    ]
    print("\n".join(lines), flush=True)
    for label, spec in chosen.items():
        start = time.perf_counter()
        runs = [
            one_run(seed, spec["shifts"], spec["n_tasks"], spec["n_trials"], args.draws)
            for seed in range(args.n_sim)
        ]
        elapsed = time.perf_counter() - start
        for estimand in ("tasks", "population"):
            for kind in ("own", "at once"):
                inside = np.array([r[estimand, kind][0] for r in runs])  # (sim, system)
                width = np.array([r[estimand, kind][1] for r in runs])
                per_system = inside.mean(axis=0)
                line = (
                    f"{label:<52} {estimand:<11} {kind:<9} {inside.mean():8.3f} "
                    f"{per_system.min():5.3f}..{per_system.max():5.3f} "
                    f"{inside.all(axis=1).mean():6.3f} {width.mean():6.2f}"
                )
                print(line, flush=True)
                lines.append(line)
        divergent = sum(r["divergences"] > 0 for r in runs)
        note = (
            f"{'':<52} ({args.n_sim} fits of {runs[0]['model']} in {elapsed:.0f} s; "
            f"{divergent} with divergent transitions)"
        )
        print(note, flush=True)
        lines.append(note)
    lines += [
        "",
        "intervals: each system's own (rank_interval) or all systems at once "
        "(rank_interval_simultaneous, which bayeval rank prints); "
        "marginal: share of (simulation, system) with the true rank in the interval; "
        "min..max over systems; joint: share of simulations with every system's true rank "
        "in its interval; width: mean number of ranks in an interval.",
    ]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
