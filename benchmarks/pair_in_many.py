"""A pair's effect fitted alone and inside the fit of every system (SWE-bench Verified).

Run:  python benchmarks/pair_in_many.py [--draws 1000] [--seeds 0 1] [--out PATH]

The paired model shares one task-by-system spread (and one cluster-by-system spread) among the
systems it is fitted on. A new task's effect between two systems is drawn with that spread, so
the population estimand of a pair can move when other systems join the fit; the tasks estimand
reads the pair's own task latents and should not. This prints, for the leading system of
SWE-bench Verified against each of the next two, the effect under each estimand and
population from the pair's own fit and from the 25-system fit, with Monte Carlo standard
errors, and the spreads each fit learned.

Writes ``benchmarks/results/pair_in_many.txt`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import bayeval as be

OUT = Path(__file__).resolve().parent / "results" / "pair_in_many.txt"
READINGS = (
    ("tasks", {}),
    ("population", {"clusters": "observed", "weighting": "task"}),
    ("population", {"clusters": "new"}),
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    data = be.datasets.load("swebench_verified")
    first = data.systems[0]
    pairs = [(first, other) for other in data.systems[1:3]]  # the two closest to the leader
    lines = [
        f"# python benchmarks/pair_in_many.py --draws {args.draws} --seeds "
        f"{' '.join(map(str, args.seeds))}   ({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores)",
        "effect of the first system minus the second; mean (Monte Carlo se) [95% interval]",
        "",
        f"{'pair':<34} {'fit':<10} {'seed':>4} {'estimand':<36} {'effect':>16} "
        f"{'interval':>18} {'sigma_ts':>8} {'gates':>6} {'s':>5}",
    ]
    print("\n".join(lines), flush=True)
    fits = [("all 25", list(data.systems), pairs)] + [
        ("pair alone", list(pair), [pair]) for pair in pairs
    ]
    for label, systems, readings in fits:
        for seed in args.seeds:
            start = time.perf_counter()
            res = be.fit(
                data.sel(system=systems), draws=args.draws, chains=2, seed=seed, progress=False
            )
            elapsed = time.perf_counter() - start
            spread = float(res.tree["posterior"]["sigma_task_system"].mean())
            for a, b in readings:
                gates = "failed" if res.compare(a, b).attrs["gates_failed"] else "passed"
                short = f"{a.split('_')[-1][:16]} - {b.split('_')[-1][:15]}"
                for estimand, population in READINGS:
                    out = res.compare(a, b, estimand=estimand, **population)
                    lo, hi = out["effect_interval"].values
                    name = estimand + (
                        f" ({population['clusters']}, {population.get('weighting', 'cluster')})"
                        if population
                        else ""
                    )
                    line = (
                        f"{short:<34} {label:<10} {seed:>4} {name:<36} "
                        f"{float(out['effect_mean']):+8.4f} ({float(out['effect_mcse']):.4f}) "
                        f"[{lo:+.3f}, {hi:+.3f}] {spread:8.3f} {gates:>6} {elapsed:5.0f}"
                    )
                    print(line, flush=True)
                    lines.append(line)
    lines += [
        "",
        "s: seconds for the fit. sigma_ts: posterior mean of the task-by-system spread the fit "
        "shares among its systems (logit scale).",
    ]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
