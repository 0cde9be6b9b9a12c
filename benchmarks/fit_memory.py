"""Peak memory of the default fit at 10^4, 10^5 and 10^6 tasks, and of an earlier version.

The default fit of one system is the hierarchical model on the grid engine; two systems are fitted
with ``model="hierarchical"`` too (the grid: the default for them, the paired ``logit_normal``,
runs NUTS and is measured by ``benchmarks/scale.py``). Each task has 1 to 10 trials (uniform) and
a rate from ``logit p = a[s] + e[j]``, ``e ~ Normal(0, 1.5)``.

Each run is a fresh process (its peak resident memory, ``ru_maxrss``, is its own): it builds the
data with ``from_counts``, runs ``fit(data, seed=0)`` (4 chains x 1,000 draws) and, where the
version has it, ``log_likelihood(by="pattern")`` on demand. A watchdog reads the process's
resident memory every 0.1 s and stops it above ``--cap-gib``; ``--timeout`` bounds its time.

``--before PATH`` runs the same script against another source tree of bayeval (put first on
``PYTHONPATH``) for a before/after table; sizes above ``--before-max-tasks`` are not run there
and the table gives what its ``log_likelihood`` array alone would take (chain x draw x task
float64 numbers).

``--replicates`` measures instead the step that draws the replicated task totals (the
``posterior_predictive`` group) of the default model's fit at real sizes: SWE-bench Verified
(25 x 500), LiveCodeBench (45 x 400, 10 samples) and a 41 x 1,136 shape, on fake posteriors
(``bayeval.testing.fake_results``, no sampler) of 4 chains x 1,000 draws; a fresh process each,
the replicates left out of the fake fit and then drawn alone: its seconds, the peak of the
memory it allocates (``tracemalloc``, a second run) and the process's peak resident memory.

Run: ``python benchmarks/fit_memory.py [--before PATH] [--replicates]``; writes
``benchmarks/results/fit_memory.md`` (``fit_memory_replicates.md`` with ``--replicates``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAINS, DRAWS = 4, 1000

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
import bayeval as be

tasks, systems = int(float(sys.argv[1])), int(sys.argv[2])
rng = np.random.default_rng(0)
n = rng.integers(1, 11, size=(systems, tasks))
e = rng.normal(0.0, 1.5, size=tasks)
a = np.linspace(-0.25, 0.25, systems)[:, None]
c = rng.binomial(n, 1.0 / (1.0 + np.exp(-(a + e))))
data = be.from_counts(c, trials=n)
del n, e, c


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux: KiB)


out = {"data_mib": peak()}
options = {} if systems == 1 else {"model": "hierarchical"}
t = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    res = be.fit(data, seed=0, **options)
out["fit_s"] = time.perf_counter() - t
out["fit_mib"] = peak()
out["model"], out["sampler"] = res.tree.attrs["model"], res.tree.attrs["sampler"]
out["groups"] = sorted(res.tree.children)
largest = max(
    (
        (var.nbytes, f"{node.path}/{name} {tuple(var.dims)}")
        for node in res.tree.subtree
        for name, var in node.to_dataset(inherit=False).variables.items()
    ),
    key=lambda pair: pair[0],
)
out["largest_mib"], out["largest"] = largest[0] / 2**20, largest[1]
if hasattr(res, "log_likelihood"):
    t = time.perf_counter()
    by_pattern = res.log_likelihood(by="pattern")
    out["pattern_s"] = time.perf_counter() - t
    out["patterns"] = by_pattern.sizes["pattern"]
    out["pattern_mib"] = peak()
print(json.dumps(out))
"""


REPLICATES = r"""
import json, resource, sys, time, tracemalloc, warnings
import numpy as np
import bayeval as be
from bayeval.inference import choose_model
from bayeval.models import _groups
from bayeval.testing import fake_results

name, chains, draws = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if name.startswith("shape:"):  # systems x tasks, one trial a cell
    S, J = (int(x) for x in name[6:].split("x"))
    data = be.from_counts(np.random.default_rng(0).binomial(1, 0.4, size=(S, J)), trials=1)
else:
    data = be.datasets.load(name)
model = choose_model(data)[0]


def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux: KiB)


_groups.REPLICATE_LIMIT = 0  # the fake fit without them: the step is measured alone
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    tree = fake_results(data, model=model, draws=draws, chains=chains, log_likelihood=False).tree
_groups.REPLICATE_LIMIT = 10**12  # whatever the version's limit
out = {"model": model, "cells": draws * chains * data.dataset.sizes["system"]
       * data.dataset.sizes["task"], "fake_mib": peak()}
t = time.perf_counter()
totals = _groups.replicated(tree, 0)
out["replicate_s"] = time.perf_counter() - t
out["replicate_mib"] = peak()
out["stored_mib"] = totals["task_total"].nbytes / 2**20
del totals
tracemalloc.start()
_groups.replicated(tree, 0)
out["traced_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
print(json.dumps(out))
"""
SHAPES = ("swebench_verified", "livecodebench", "shape:41x1136")


def _rss_mib(pid: int) -> float:
    """Resident memory of a running process (Linux ``/proc``; 0 where unreadable)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run(source: Path, tasks, systems, cap_gib: float, timeout: float, child=CHILD) -> dict:
    """One fit in a fresh process on the bayeval of ``source``: its JSON, or why it stopped."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(tasks), str(systems)]
        + ([str(DRAWS)] if child is REPLICATES else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=source,  # ``python -c`` puts the working folder first on the path
    )
    stopped = None
    while proc.poll() is None:
        if _rss_mib(proc.pid) > cap_gib * 1024:
            stopped = f"stopped above {cap_gib:g} GiB"
        elif time.perf_counter() - start > timeout:
            stopped = f"stopped after {timeout:.0f} s"
        if stopped:
            proc.kill()
            break
        time.sleep(0.1)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    if stopped:
        return {"failed": stopped, "wall_s": wall}
    if proc.returncode != 0:
        tail = (stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"failed": f"exit {proc.returncode}: {tail[:160]}", "wall_s": wall}
    return {**json.loads(stdout.strip().splitlines()[-1]), "wall_s": wall}


def _commit(source: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or source.name  # not a git checkout: the folder's name


def _row(label: str, tasks: float, systems: int, out: dict) -> str:
    size = f"{int(tasks):,} | {systems}"
    if "failed" in out or "skipped" in out:
        why = out.get("failed") or out["skipped"]
        return f"| {label} | {size} | - | - | - | {why} | - |"
    pattern = (
        f"{out['patterns']} patterns, {out['pattern_s']:.1f} s, peak {out['pattern_mib']:.0f}"
        if "patterns" in out
        else "(not in this version)"
    )
    groups = ", ".join(g for g in out["groups"] if g not in ("observed_data", "constant_data"))
    return (
        f"| {label} | {size} | {out['data_mib']:.0f} | **{out['fit_mib']:.0f}** | "
        f"{out['fit_s']:.1f} | {groups}; largest {out['largest']} {out['largest_mib']:.0f} MiB | "
        f"{pattern} |"
    )


def replicates(versions, cap_gib: float, timeout: float) -> None:
    """The replicate step's table (``--replicates``)."""
    lines = [
        "# Peak memory of the replicated task totals (posterior_predictive)",
        "",
        f"`python benchmarks/fit_memory.py --replicates`: {platform.platform()}, python "
        f"{platform.python_version()}, {os.cpu_count()} cores; fake posteriors of the default "
        f"model, {CHAINS} chains x {DRAWS} draws. "
        + "; ".join(f"{label}: bayeval at {_commit(path)}" for label, path in versions)
        + ".",
        "",
        "The step alone (`_groups.replicated`, the fake fit built without it): its seconds, "
        "the peak of what it allocates (tracemalloc, a second run), the process's peak "
        "resident memory before and after it (MiB), and the stored totals "
        "(chain x draw x task).",
        "",
        "| version | data | model | cells drawn | seconds | traced peak | peak before "
        "| peak after | stored |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in SHAPES:
        for label, source in versions:
            out = run(source, name, CHAINS, cap_gib, timeout, child=REPLICATES)
            if "failed" in out:
                line = f"| {label} | {name} | - | - | - | - | - | - | {out['failed']} |"
            else:
                line = (
                    f"| {label} | {name} | {out['model']} | {out['cells']:,} | "
                    f"{out['replicate_s']:.1f} | **{out['traced_mib']:.0f}** | "
                    f"{out['fake_mib']:.0f} | {out['replicate_mib']:.0f} | "
                    f"{out['stored_mib']:.0f} |"
                )
            print(line, flush=True)
            lines.append(line)
    path = ROOT / "benchmarks" / "results" / "fit_memory_replicates.md"
    path.write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=float, nargs="+", default=[1e4, 1e5, 1e6])
    parser.add_argument("--systems", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--before", type=Path, help="source tree of an earlier bayeval")
    parser.add_argument("--before-max-tasks", type=float, default=1e5)
    parser.add_argument("--cap-gib", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--replicates", action="store_true", help="the replicate step's table")
    args = parser.parse_args()
    versions = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    if args.replicates:
        replicates(versions, args.cap_gib, args.timeout)
        return
    lines = [
        "# Peak memory of the default fit",
        "",
        f"`python benchmarks/fit_memory.py`: {platform.platform()}, python "
        f"{platform.python_version()}, {os.cpu_count()} cores; fit(data, seed=0): "
        f"{CHAINS} chains x {DRAWS} draws; 1 to 10 trials a task. "
        + "; ".join(f"{label}: bayeval at {_commit(path)}" for label, path in versions)
        + ".",
        "",
        "Peak resident memory (MiB) of a fresh process: after building the data, after `fit`, "
        "and after `log_likelihood(by='pattern')` on demand. Two systems are fitted with "
        "model='hierarchical' (the grid engine). Goal: 10^6 tasks within 2 GB.",
        "",
        "| version | tasks | systems | peak after data | peak after fit | fit s "
        "| groups stored (besides the data) | log-likelihood on demand by pattern |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for tasks in args.tasks:
        for systems in args.systems:
            for label, source in versions:
                if label == "before" and tasks > args.before_max_tasks:
                    asked = CHAINS * DRAWS * tasks * 8 / 2**30
                    out = {
                        "skipped": f"not run: its log_likelihood array alone is chain x draw x "
                        f"task float64 = {asked:.1f} GiB"
                    }
                else:
                    out = run(source, tasks, systems, args.cap_gib, args.timeout)
                line = _row(label, tasks, systems, out)
                print(line, flush=True)
                lines.append(line)
    path = ROOT / "benchmarks" / "results" / "fit_memory.md"
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
