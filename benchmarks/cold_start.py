"""Cold start: the first fit on a fresh install against the same fit once its caches are warm.

A fresh install is simulated by a copy of the package in a temporary folder (no bytecode, no
numba cache beside its kernels) and an empty PyTensor compile folder; ``NUMBA_CACHE_DIR`` is
unset so numba caches where an installed package would. Each run is a fresh Python process that
times ``import bayeval``, the default fit of the SWE-bench Verified pair (its first two systems)
and then ``compare(..., estimand="tasks")``. The first run is cold (everything compiled), the
second warm (everything loaded from the caches the first wrote). Beside every time it prints the
load average, the numba cache entries each step wrote: index files (``.nbi``, one per compiled
function) and data files (``.nbc``, one per compiled signature), and a digest of the fit's
posterior draws and of the comparison (equal digests: bit-identical results).

Run:  python benchmarks/cold_start.py [--source DIR] [--runs 2]

``--source`` is the folder holding the ``bayeval`` package to copy (default: this checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in the child: times and cache counts after each step, as one JSON line.
CHILD = r"""
import hashlib, json, os, sys, time
from pathlib import Path
import numpy as np

cache = Path(sys.argv[1])

def counts():
    return {"nbi": len(list(cache.glob("*.nbi"))), "nbc": len(list(cache.glob("*.nbc")))}

steps = []
def mark(name, start):
    steps.append({"step": name, "seconds": time.perf_counter() - start,
                  "load": os.getloadavg()[0], **counts()})

start = time.perf_counter()
import bayeval
mark("import", start)
d = bayeval.datasets.load("swebench_verified")
pair = d.sel(system=d.systems[:2])
start = time.perf_counter()
res = bayeval.fit(pair, seed=0, progress=False)
mark("fit", start)
start = time.perf_counter()
effect = res.compare(d.systems[1], d.systems[0], estimand="tasks")
mark("compare tasks", start)

def digest(ds):
    h = hashlib.sha256()
    for name in sorted(ds.data_vars):
        h.update(name.encode())
        h.update(np.ascontiguousarray(ds[name].values).tobytes())
    return h.hexdigest()[:16]

steps[1]["digest"] = digest(res.tree["posterior"].to_dataset())
steps[2]["digest"] = digest(effect)
print(json.dumps(steps))
"""


def run_once(src: Path, env: dict) -> list[dict]:
    """One fresh process: its steps' times and the cache counts after each."""
    cache = src / "bayeval" / "models" / "kernels" / "__pycache__"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(cache)],
        env=env,
        cwd=src,
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Copy the package, run it cold then warm, print the times and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT)
    parser.add_argument("--runs", type=int, default=2, help="runs in all; the first is cold")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bayeval-cold-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(
            args.source / "bayeval",
            src / "bayeval",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"),
        )
        if (args.source / "data").is_dir():  # a source checkout keeps the datasets beside it
            shutil.copytree(args.source / "data", src / "data")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
        env["PYTHONPATH"] = str(src)
        env["PYTENSOR_FLAGS"] = f"compiledir={Path(tmp) / 'pytensor'}"
        env["PYTHONDONTWRITEBYTECODE"] = "0"
        runs = [run_once(src, env) for _ in range(args.runs)]
    source = "this checkout" if args.source == ROOT else args.source
    print(f"source: {source}  python: {sys.version.split()[0]}  cores: {os.cpu_count()}")
    header = f"{'run':<6} {'step':<14} {'seconds':>8} {'load':>6} {'functions':>9}"
    print(f"{header} {'signatures':>10} draws' digest")
    before = {"nbi": 0, "nbc": 0}
    for i, steps in enumerate(runs):
        label = "cold" if i == 0 else f"warm{i}"
        for row in steps:
            print(
                f"{label:<6} {row['step']:<14} {row['seconds']:8.1f} {row['load']:6.1f} "
                f"{row['nbi'] - before['nbi']:9d} {row['nbc'] - before['nbc']:10d} "
                f"{row.get('digest', '')}"
            )
            before = row
    cold, warm = runs[0], runs[-1]
    for step in ("fit", "compare tasks"):
        c = next(r["seconds"] for r in cold if r["step"] == step)
        w = next(r["seconds"] for r in warm if r["step"] == step)
        print(f"first {step}: cold {c:.1f} s, warm {w:.1f} s, ratio {c / w:.2f}")
    total = lambda steps: sum(r["seconds"] for r in steps)  # noqa: E731
    print(
        f"import + fit + compare: cold {total(cold):.1f} s, warm {total(warm):.1f} s, "
        f"ratio {total(cold) / total(warm):.2f}; cache entries compiled: "
        f"{cold[-1]['nbi']} functions, {cold[-1]['nbc']} signatures"
    )


if __name__ == "__main__":
    main()
