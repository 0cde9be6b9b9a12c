"""Wall time of the hierarchical fit by engine, against the naive full-latent model and the
bootstrap, on simulated U-shaped benchmarks with 16 trials per task.

Run:  python benchmarks/fit_speed.py [--sizes 10 1000 100000] [--draws 1000] [--chains 4]

For each task count it times, cold (first call in the process: compilation included) and warm
(second call on new data of the same size):

* ``grid``      the grid engine (tasks grouped by count pattern);
* ``nutpie``    NUTS (nutpie) on the marginal model, one term per count pattern;
* ``latent``    NUTS (nutpie) on the naive full-latent model, a rate per task (<= 1,000 tasks);
* ``bootstrap`` 10,000 task-bootstrap replicates;

and prints the ratios to the grid engine, with the divergences of each NUTS run.
"""

import argparse
import time
import warnings

import numpy as np
import pymc as pm

import bayeval as be
from bayeval.models import build_hierarchical_model

LATENT_CAP = 1_000


def simulate(n_tasks: int, seed: int):
    rng = np.random.default_rng(seed)
    return be.from_counts(rng.binomial(16, rng.beta(0.4, 0.3, size=n_tasks)), 16)


def run_latent(data, draws, chains, seed):
    with build_hierarchical_model(data, marginal=False):
        trace = pm.sample(draws=draws, tune=1000, chains=chains, random_seed=seed,
                          nuts_sampler="nutpie", progressbar=False, quiet=True,
                          compute_convergence_checks=False)
    return int(trace["sample_stats"]["diverging"].sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1_000, 100_000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    rows = []
    for size in args.sizes:
        times, divergences = {}, {}
        for phase, seed in (("cold", 1), ("warm", 2)):
            data = simulate(size, seed)
            start = time.perf_counter()
            be.fit(data, draws=args.draws, chains=args.chains, seed=seed, sampler="grid",
                   task_draws=False)
            times["grid", phase] = time.perf_counter() - start
            start = time.perf_counter()
            res = be.fit(data, draws=args.draws, chains=args.chains, seed=seed,
                         sampler="nutpie", task_draws=False)
            times["nutpie", phase] = time.perf_counter() - start
            divergences["nutpie"] = res.diagnostics["divergences"]
            if size <= LATENT_CAP:
                start = time.perf_counter()
                divergences["latent"] = run_latent(data, args.draws, args.chains, seed)
                times["latent", phase] = time.perf_counter() - start
            start = time.perf_counter()
            be.bootstrap.pass_at_k(data, unit="task", n_boot=10_000, seed=seed)
            times["bootstrap", phase] = time.perf_counter() - start
        rows.append((size, times, divergences))

    print(f"hierarchical fit, 16 trials per task, {args.chains} chains x {args.draws} draws")
    print(f"{'tasks':>8} {'engine':<10} {'cold s':>8} {'warm s':>8} {'warm / grid':>12} "
          f"{'divergences':>12}")
    for size, times, divergences in rows:
        for engine in ("grid", "nutpie", "latent", "bootstrap"):
            if (engine, "warm") not in times:
                print(f"{size:>8} {engine:<10} {'skipped (more than 1,000 tasks)':>42}")
                continue
            warm = times[engine, "warm"]
            print(f"{size:>8} {engine:<10} {times[engine, 'cold']:8.3f} {warm:8.3f} "
                  f"{warm / times['grid', 'warm']:11.1f}x {divergences.get(engine, ''):>12}")


if __name__ == "__main__":
    main()
