"""What reading a fitted paired model costs, on the 25-system SWE-bench Verified file.

The readouts: every estimand's comparison, the summary, the bootstrap cross-check and one
effect plot.

Run:  python benchmarks/readout.py [--draws 1000] [--chains 4]

Fits ``logit_normal`` once (the default for several systems on shared tasks), reads every
readout once untimed (numba's compiled functions load from their disk cache), then times each
readout twice on a fresh ``Results`` of the fitted tree, nothing cached (the first call computes
what it needs, the second finds it cached), and prints the seconds beside the fit's own, so the
ratios are of the same run and load. A comparison computes only its two systems' draws where
the fit sampled its task effects; a summary computes every system's. Writes
``benchmarks/results/readout.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import bayeval as be  # noqa: E402
from bayeval import plots  # noqa: E402

PAIR = (
    "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    "20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
)


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    function(*args, **kwargs)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "readout.txt"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    data = be.datasets.load("swebench_verified")
    start = time.perf_counter()
    res = be.fit(data, draws=args.draws, chains=args.chains, seed=1, progress=False)
    fit_s = time.perf_counter() - start
    candidate, baseline = PAIR
    readouts = [
        (
            "compare, population, new clusters",
            lambda r: r.compare(candidate, baseline, estimand="population", clusters="new"),
        ),
        (
            "compare, population, observed clusters",
            lambda r: r.compare(candidate, baseline, estimand="population", clusters="observed"),
        ),
        ("compare, tasks", lambda r: r.compare(candidate, baseline, estimand="tasks")),
        ("summary (every system and estimand)", lambda r: r.summary()),
        ("crosscheck (every system, bootstrap twin)", lambda r: be.crosscheck(r)),
        (
            "plot_effect, tasks",
            lambda r: plots.plot_effect(r, candidate, baseline, estimand="tasks"),
        ),
    ]
    lines = [
        f"# python benchmarks/readout.py --draws {args.draws} --chains {args.chains}   "
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f})",
        f"fit: model {res.model}, {data.dataset.sizes['system']} systems x "
        f"{data.dataset.sizes['task']} tasks, {fit_s:.1f} s, "
        f"{res.diagnostics['divergences']} divergences, min bulk ESS "
        f"{res.diagnostics['min_ess_bulk']:.0f}",
        f"{'readout':<42} {'first s':>8} {'again s':>8} {'first / fit':>12}",
    ]
    print("\n".join(lines))
    warm = be.Results(res.tree)
    for _, call in readouts:
        call(warm)
    for label, call in readouts:
        fresh = be.Results(res.tree)
        first = _timed(call, fresh)
        again = _timed(call, fresh)
        line = f"{label:<42} {first:8.2f} {again:8.2f} {first / fit_s:12.3f}"
        print(line)
        lines.append(line)
    with args.out.open("a") as out:  # the file keeps earlier runs with their readings
        out.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
