"""Which form of the paired model to sample on small multi-trial data: collapsed or full-latent.

Run:  python benchmarks/sampling_form.py [--seeds 1 2] [--draws 1000] [--chains 4]

``fit(model="logit_normal")`` samples the collapsed form (task effects integrated out by
quadrature) or the full-latent form (every task and task-by-system effect sampled, one
compiled log density); :func:`bayeval.models.logit_normal.sampling_form` picks one from the
data's shape. This script fits both forms on simulated data of the shapes where the choice is
close (one or two systems, few tasks, several trials; the three-system clustered toy of
``benchmarks/logit_normal_agreement.py``), warm (after a short fit of the same shapes), and
prints the wall time, divergences, the smallest bulk ESS of the kept quantities and the time
per effective draw, with the form the rule picks. Writes
``benchmarks/results/sampling_form.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import bayeval as be
from bayeval.models import logit_normal
from bayeval.simulate import simulate_benchmark

LOGIT = ("logit_normal", 0.0, 1.5)
CASES = {
    "1 x 10 x 32, U-shaped": dict(n_tasks=10, n_trials=32, rates="u_shaped"),
    "2 x 5 x 8": dict(
        n_tasks=5, n_trials=8, n_systems=2, rates=LOGIT, effect=[0.3], task_system_sd=0.5
    ),
    "2 x 10 x 32": dict(
        n_tasks=10, n_trials=32, n_systems=2, rates=LOGIT, effect=[0.3], task_system_sd=0.5
    ),
    "1 x 50 x 4, 10 clusters": dict(
        n_tasks=50, n_trials=4, clusters=10, rates=LOGIT, cluster_sd=0.8
    ),
    "2 x 50 x 4": dict(
        n_tasks=50, n_trials=4, n_systems=2, rates=LOGIT, effect=[0.3], task_system_sd=0.5
    ),
    "3 x 48 x 4, 8 clusters (toy)": dict(
        n_tasks=48,
        n_trials=4,
        n_systems=3,
        clusters=8,
        rates=LOGIT,
        cluster_sd=0.8,
        effect=[0.5, -0.4],
        task_system_sd=0.5,
    ),
}


def _fit(data, form, draws, chains):
    """A warm fit of ``form``: a short fit of the same shapes first (compiled once)."""
    cap = logit_normal.layout.LATENT_CELLS
    logit_normal.layout.LATENT_CELLS = 1 if form == "full-latent" else 10**12
    try:
        be.fit(data, model="logit_normal", draws=20, tune=20, chains=1, seed=0)
        start = time.perf_counter()
        res = be.fit(data, model="logit_normal", draws=draws, chains=chains, seed=1)
        return res, time.perf_counter() - start
    finally:
        logit_normal.layout.LATENT_CELLS = cap


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "sampling_form.txt"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    lines = [
        f"# python benchmarks/sampling_form.py --seeds {' '.join(map(str, args.seeds))} "
        f"--draws {args.draws} --chains {args.chains}   ({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})",
        f"{'data':<30} {'seed':>4} {'form':<12} {'s':>7} {'divergences':>12} "
        f"{'min bulk ESS':>13} {'ms / ESS':>9}  rule",
    ]
    print(*lines, sep="\n")
    for label, spec in CASES.items():
        for seed in args.seeds:
            data = simulate_benchmark(seed=seed, **spec).data
            chosen = logit_normal.sampling_form(data.dataset)[0]
            for form in ("collapsed", "full-latent"):
                if form == "full-latent" and data.dataset.sizes["system"] == 1:
                    line = f"{label:<30} {seed:>4} {form:<12}    (one system: always collapsed)"
                    print(line)
                    lines.append(line)
                    continue
                res, seconds = _fit(data, form, args.draws, args.chains)
                assert res.tree.attrs["form"] == form
                diag = res.diagnostics
                line = (
                    f"{label:<30} {seed:>4} {form:<12} {seconds:7.1f} "
                    f"{diag['divergences']:>12} {diag['min_ess_bulk']:13.0f} "
                    f"{1000 * seconds / diag['min_ess_bulk']:9.1f}  "
                    f"{'<- fit' if form == chosen else ''}"
                )
                print(line, flush=True)
                lines.append(line)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
