"""Coverage of the paired model's intervals where it samples its task-latent form.

That form is taken for many systems with one or two trials a task
(:func:`bayeval.models.logit_normal.sampling_form`).

Run:  python benchmarks/task_latent_coverage.py [--n-sim 40] [--draws 500] [--out PATH]

Each simulation draws a clustered benchmark from the paired logit-normal model itself
(:func:`bayeval.simulate.simulate_benchmark`: logit-normal task difficulties shared by the
systems, cluster effects, a task-by-system spread of 0.5, systems shifted on the logit scale),
fits ``logit_normal`` as ``fit`` does by default (2 chains), checks that the fit took the
task-latent form (or, in the comparison scenario, the collapsed form forced on the same
simulations), and reads the 95% equal-tailed intervals of every system's pass@1 and of
three paired effects (neighbours in the middle of the field, the extremes, and the two
lowest), under both estimands: these tasks (truth: the mean of the simulated true rates) and
a new task from a new cluster (truth: the simulated population's expectation). Coverage is
the share of intervals holding their truth; its Monte Carlo standard error is taken over
simulations (the intervals of one simulation share its data).

Appends the table to ``benchmarks/results/task_latent_coverage.txt`` (or ``--out``).
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
from bayeval.models import logit_normal
from bayeval.simulate import simulate_benchmark

OUT = Path(__file__).resolve().parent / "results" / "task_latent_coverage.txt"

#: label -> (simulation settings, the form fitted: ``fit``'s own choice, which must be
#: task-latent, or the collapsed form forced, on the same simulations)
SCENARIOS = {
    "12 systems x 200 tasks x 1 trial, 5 clusters": (
        dict(n_systems=12, n_tasks=200, n_trials=1, clusters=5),
        "task-latent",
    ),
    "the same simulations, the collapsed form forced": (
        dict(n_systems=12, n_tasks=200, n_trials=1, clusters=5),
        "collapsed",
    ),
    "16 systems x 160 tasks x 2 trials, 4 clusters": (
        dict(n_systems=16, n_tasks=160, n_trials=2, clusters=4),
        "task-latent",
    ),
}
#: (candidate, baseline) positions of the effects read
PAIRS = ((6, 5), (-1, 0), (1, 0))


def one_run(seed, n_systems, n_tasks, n_trials, clusters, draws, form):
    shifts = np.linspace(0.0, 1.1, n_systems)
    sim = simulate_benchmark(
        n_tasks=n_tasks,
        n_trials=n_trials,
        n_systems=n_systems,
        rates=("logit_normal", -0.3, 1.5),
        clusters=clusters,
        cluster_sd=0.7,
        effect=list(shifts),
        task_system_sd=0.5,
        seed=seed,
    )
    cap = logit_normal.layout.TASK_LATENT_SYSTEMS
    if form == "collapsed":
        logit_normal.layout.TASK_LATENT_SYSTEMS = 10**9
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)  # gates are counted below
            res = be.fit(
                sim.data, model="logit_normal", draws=draws, chains=2, seed=seed, progress=False
            )
    finally:
        logit_normal.layout.TASK_LATENT_SYSTEMS = cap
    if res.tree.attrs["form"] != form:
        raise RuntimeError(f"the fit took the {res.tree.attrs['form']} form, not {form}")
    systems = sim.data.systems
    post = res.tree["posterior"]
    out = {
        "divergences": res.diagnostics["divergences"],
        "min_ess_bulk": res.diagnostics["min_ess_bulk"],
        "sigma_task_system": float(post["sigma_task_system"].mean()),
    }
    for estimand in ("tasks", "population"):
        truth = sim.truth(estimand=estimand)
        # the truth is a new task from a new cluster: ask for that estimand by name, since
        # with fewer than ten clusters the default reads the observed clusters instead
        new = {"clusters": "new"} if estimand == "population" else {}
        draws_ = res.pass_at_k(k=1, estimand=estimand, **new).transpose("system", ...).values
        flat = draws_.reshape(len(systems), -1)
        lo, hi = np.quantile(flat, [0.025, 0.975], axis=1)
        out[estimand, "systems"] = ((lo <= truth) & (truth <= hi), hi - lo)
        inside, width = [], []
        for cand, base in PAIRS:
            cmp = res.compare(systems[cand], systems[base], estimand=estimand, **new)
            low, high = cmp["effect_interval"].values
            true = truth[cand] - truth[base]
            inside.append(low <= true <= high)
            width.append(high - low)
        out[estimand, "effects"] = (np.array(inside), np.array(width))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sim", type=int, default=40)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    start = time.perf_counter()
    lines = [
        f"# python benchmarks/task_latent_coverage.py --n-sim {args.n_sim} --draws "
        f"{args.draws}   ({time.strftime('%Y-%m-%d')}, {platform.machine()}, "
        f"{os.cpu_count()} cores; seeds {args.seed} + i)",
        "nominal 0.95, equal-tailed; coverage +- Monte Carlo se over simulations (mean width)",
    ]
    for label, (scenario, form) in SCENARIOS.items():
        runs = [
            one_run(args.seed + i, draws=args.draws, form=form, **scenario)
            for i in range(args.n_sim)
        ]
        divergent = sum(run["divergences"] > 0 for run in runs)
        ess = np.array([run["min_ess_bulk"] for run in runs])
        spread = np.array([run["sigma_task_system"] for run in runs])
        lines.append(
            f"\n{label} ({form}): {args.n_sim} simulations, {divergent} with "
            f"divergences, smallest bulk ESS median {np.median(ess):.0f} (min "
            f"{ess.min():.0f}); posterior mean sigma_task_system median "
            f"{np.median(spread):.2f} (truth 0.5)"
        )
        lines.append(f"{'estimand':<12} {'quantity':<44} {'coverage':>16} {'width':>8}")
        for estimand in ("tasks", "population"):
            for kind, name in (
                ("systems", f"pass@1 of each of {scenario['n_systems']} systems"),
                (
                    "effects",
                    "paired effects "
                    + ", ".join(f"{c % scenario['n_systems']}-{b}" for c, b in PAIRS),
                ),
            ):
                per_sim = np.array([run[estimand, kind][0].mean() for run in runs])
                width = np.mean([run[estimand, kind][1].mean() for run in runs])
                se = per_sim.std(ddof=1) / np.sqrt(len(per_sim))
                lines.append(
                    f"{estimand:<12} {name:<44} {per_sim.mean():8.3f} +- {se:.3f} {width:8.3f}"
                )
        print("\n".join(lines[-6:]), flush=True)
    lines.append(f"\nwall time {time.perf_counter() - start:.0f} s")
    with args.out.open("a") as out:  # the file keeps earlier runs with their readings
        out.write("\n" + "\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
