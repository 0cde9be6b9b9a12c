"""Where the paired model stops: the collapsed ``logit_normal`` fit against data size.

Run:  python benchmarks/scale_paired.py [--tune 100] [--draws 100] [--only NAME ...]

Each case runs in a fresh process (so its peak memory is its own): the bundled SWE-bench
Verified table (1 trial per task) at 2, 5, 10 and 25 systems, larger generated single-trial
leaderboards (50 x 1,000 and 100 x 2,000, 20 clusters), Terminal-Bench (13 x 80 x 5 trials) and
LiveCodeBench (45 x 400 x 10 samples, and its first 5 systems). Per case: the log-density
gradient's cost (ms, median of repeated calls of the compiled kernel at a posterior-like
point), a short fit (2 chains, ``--tune`` + ``--draws`` iterations, in parallel on the two
cores) for the leapfrog steps per iteration, the time of a fit of 5 + 5 iterations first in the
process (imports and kernel caches included) and again (the setup every fit pays: model build
and compile), and the projection of the default fit (4 chains x (1,000 + 1,000)
iterations on 2 cores: two chains at a time) from the short fit's time per iteration. The
projection assumes the default fit takes as many steps per iteration as the short one
(warm-up steps are usually more, so it is a lower bound). Results go to
``benchmarks/results/scale_paired.txt``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    "swe_2",
    "swe_5",
    "swe_10",
    "swe_25",
    "gen_50x1000",
    "gen_100x2000",
    "tb_13",
    "lcb_5",
    "lcb_45",
]


def _data(name):
    import bayeval as be

    if name.startswith("swe_"):
        data = be.datasets.load("swebench_verified")
        return data.sel(system=data.systems[: int(name.split("_")[1])])
    if name.startswith("gen_"):
        S, J = (int(v) for v in name.split("_")[1].split("x"))
        rng = np.random.default_rng(S * J)
        cluster = np.repeat(np.arange(20), J // 20)
        logit = (
            rng.normal(0, 1.2, S)[:, None]
            + rng.normal(0, 0.8, 20)[None, cluster]
            + rng.normal(0, 2.0, J)[None, :]
            + rng.normal(0, 0.5, (S, J))
        )
        counts = rng.binomial(1, 1 / (1 + np.exp(-logit)))
        return be.from_counts(
            counts,
            trials=1,
            clusters=[f"c{g}" for g in cluster],
            systems=[f"system_{s}" for s in range(S)],
        )
    if name == "tb_13":
        return be.datasets.load("terminal_bench", missing="fail")
    data = be.datasets.load("livecodebench")
    return data.sel(system=data.systems[: int(name.split("_")[1])])


def _gradient_ms(res_setup_data):
    """Median time of one log density and gradient call of the compiled collapsed kernel."""
    from bayeval.models import build_logit_normal_model

    model = build_logit_normal_model(res_setup_data)
    point = model.initial_point()
    fn = model.logp_dlogp_function(ravel_inputs=True)
    fn.set_extra_values({})
    x = np.concatenate([np.ravel(point[v.name]) for v in fn._grad_vars])
    fn(x)
    times = []
    for _ in range(15):
        start = time.perf_counter()
        fn(x + 0.01 * np.random.default_rng(len(times)).standard_normal(len(x)))
        times.append(time.perf_counter() - start)
    return 1000 * float(np.median(times))


def run_case(name, tune, draws):
    import bayeval as be
    from bayeval.models import logit_normal

    warnings.simplefilter("ignore")
    # the collapsed form throughout (fit samples multi-trial data of this size full-latent)
    logit_normal.layout.LATENT_CELLS = 10**12
    data = _data(name)
    ds = data.dataset
    sizes = (
        ds.sizes["system"],
        ds.sizes["task"],
        int(ds["trials"].max()) if "trials" in ds else None,
    )
    timings = []
    for _ in range(2):  # the first in the process (imports, kernel caches), then warm
        start = time.perf_counter()
        be.fit(
            data,
            model="logit_normal",
            draws=5,
            tune=5,
            chains=2,
            seed=0,
            progress=False,
            log_likelihood=False,
        )
        timings.append(time.perf_counter() - start)
    cold, setup = timings
    try:
        grad_ms = _gradient_ms(data)
    except Exception as exc:  # noqa: BLE001 - the timing is a nicety; report why it is absent
        grad_ms = f"n/a ({type(exc).__name__})"
    start = time.perf_counter()
    res = be.fit(
        data,
        model="logit_normal",
        draws=draws,
        tune=tune,
        chains=2,
        seed=1,
        progress=False,
        log_likelihood=False,
    )
    wall = time.perf_counter() - start
    per_iter = max(wall - setup, 1e-9) / (tune + draws)
    steps = float(res.tree["sample_stats"]["n_steps"].mean())
    return {
        "case": name,
        "systems": sizes[0],
        "tasks": sizes[1],
        "cells": int((ds["attempts"] > 0).sum()) if "attempts" in ds else None,
        "first_s": round(cold, 1),
        "setup_s": round(setup, 1),
        "grad_ms": grad_ms if isinstance(grad_ms, str) else round(grad_ms, 2),
        "short_fit_s": round(wall, 1),
        "steps_per_draw": round(steps, 1),
        "divergences": int(res.diagnostics["divergences"]),
        "projected_default_s": round(setup + 2 * 2000 * per_iter, 0),
        "peak_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--only", nargs="*", choices=CASES)
    parser.add_argument(
        "--case-timeout",
        type=int,
        default=600,
        help="seconds a case may take before it is reported as not finishing",
    )
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: one case, JSON out
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.tune, args.draws)))
        return
    lines = [
        f"# python benchmarks/scale_paired.py --tune {args.tune} --draws {args.draws}   "
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, 2 cores)",
        "case            S x J        first s  setup s  ms/grad  steps/draw  short fit s  "
        "divergences  projected default fit s  peak GiB",
    ]
    print("\n".join(lines), flush=True)
    for name in args.only or CASES:
        try:
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--case",
                    name,
                    "--tune",
                    str(args.tune),
                    "--draws",
                    str(args.draws),
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=args.case_timeout,
            )
        except subprocess.TimeoutExpired:
            line = (
                f"{name:<15} did not finish within {args.case_timeout} s (the short fit "
                "alone: past what 2 cores do here)"
            )
            lines.append(line)
            print(line, flush=True)
            continue
        if out.returncode != 0:
            line = f"{name:<15} failed: {out.stderr.strip().splitlines()[-1]}"
        else:
            r = json.loads(out.stdout.strip().splitlines()[-1])
            line = (
                f"{name:<15} {r['systems']:>3} x {r['tasks']:<6} {r['first_s']:>8} "
                f"{r['setup_s']:>8} "
                f"{r['grad_ms']!s:>8} {r['steps_per_draw']:>11} {r['short_fit_s']:>12} "
                f"{r['divergences']:>12} {r['projected_default_s']:>24} "
                f"{r['peak_gib']:>9}"
            )
        lines.append(line)
        print(line, flush=True)
    out_path = ROOT / "benchmarks" / "results" / "scale_paired.txt"
    if not args.only:
        out_path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
