"""One huge fit on the exact engines, at 10^6, 10^7 and 10^8 count cells.

The engines are the grid (hierarchical) and conjugate (beta_binomial) paths; a cell is one
``(system, task)`` count.

Each size runs in a fresh process (so its peak memory is its own): generated counts (systems x
tasks, ``--trials`` per cell, U-shaped task rates) go through ``from_counts``, ``fit`` (2 chains
x 200 draws, no stored task draws) and the population and tasks pass@1 of every system (the
conjugate model has the tasks estimand only). It
prints the wall time of each step and the process's peak resident memory, and where a size
does not finish, why.

Run: ``python benchmarks/scale_grid.py [--cells 1e6 1e7 1e8]``; writes
``benchmarks/results/scale_grid.txt``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
import bayeval as be

cells, systems = int(float(sys.argv[1])), int(sys.argv[2])
trials, model = int(sys.argv[3]), sys.argv[4]
tasks = cells // systems
rng = np.random.default_rng(0)
times = {}
t = time.perf_counter()
p = rng.beta(0.5, 0.4, size=(systems, tasks)).astype(np.float32)
c = rng.binomial(trials, p).astype(np.int32)
del p
times["generate"] = time.perf_counter() - t
t = time.perf_counter()
data = be.from_counts(c, trials=trials)
del c
times["from_counts"] = time.perf_counter() - t
t = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", be.BayevalWarning)
    res = be.fit(data, model=model, draws=200, chains=2, seed=0, task_draws=False,
                 log_likelihood=False)
times["fit"] = time.perf_counter() - t
for estimand in (("population", "tasks") if model == "hierarchical" else ("tasks",)):
    t = time.perf_counter()
    value = res.pass_at_k(k=1, estimand=estimand).mean(("chain", "draw")).values
    times[estimand] = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2  # GiB (Linux: KiB)
print(json.dumps({"times": times, "peak_gib": peak, "tasks": tasks,
                  "first_pass1": float(value[0])}))
"""


def run(cells: float, systems: int, trials: int, model: str, timeout: int) -> str:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(cells), str(systems), str(trials), model],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return f"{cells:.0e} cells, {model}: did not finish within {timeout} s"
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        killed = done.returncode in (-9, 137)
        return (
            f"{cells:.0e} cells, {model}: failed (exit {done.returncode}"
            f"{', killed: out of memory' if killed else ''}): {tail[:200]}"
        )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in out["times"].items())
    return (
        f"{cells:.0e} cells ({systems} systems x {out['tasks']} tasks x {trials} trials), "
        f"{model}: {wall:.0f} s in all ({steps}); peak memory {out['peak_gib']:.2f} GiB"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args()
    lines = [
        f"exact engines at scale; machine: {platform.platform()}, "
        f"python {platform.python_version()}"
    ]
    for cells in args.cells:
        for model in ("hierarchical", "beta_binomial"):
            line = run(cells, args.systems, args.trials, model, args.timeout)
            print(line, flush=True)
            lines.append(line)
    out = Path(__file__).parent / "results" / "scale_grid.txt"
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
