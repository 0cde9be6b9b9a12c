"""Coverage of the ``irt`` model's 95% intervals on simulated 2PL data with known parameters.

Each replication draws a 2PL benchmark (20 systems x 200 items, ``trials`` attempts per cell):
``theta ~ Normal(0, 1)``, ``b ~ Normal(0, 1.2)``, ``log a ~ Normal(0, 0.3)``. 16 systems
calibrate the items (``be.fit(model="irt")``); the coverage of their abilities and of the items'
``a`` and ``b`` is read off that fit. The other 4 systems are held out and scored on a 10%
subset (20 items) chosen at random or by Fisher information (``be.irt.select``), with
``be.irt.score``: the coverage of their full-benchmark pass@1 (the mean over all 200 items of
their true rates), beside the plain task bootstrap of the subset's mean outcome (percentile,
2000 replicates). Monte Carlo standard errors are the spread of the per-replication coverage
over the replications (items and systems of one replication share its calibration).

The abilities' origin and unit are set by their prior alone (``theta ~ Normal(0, 1)``), so a
replication whose 16 true abilities have an unusual mean or spread is read on the prior's
scale, and every ability and discrimination of it can miss together. ``rank_mean`` and
``rank_sd`` are where the true mean and sd of the 16 abilities fall among their posterior
draws: uniform over replications (mean 0.5, Kolmogorov-Smirnov p-value printed) when the
posterior of the scale is calibrated.

Run:  python benchmarks/irt_recovery.py [--reps 40] [--trials 4 1] [--draws 1000] [--tune 1000]
      [--chains 4] [--out benchmarks/results/irt_recovery.txt]
"""

import argparse
import os
import time
import warnings

import numpy as np
from scipy import special, stats

import bayeval as be

N_SYSTEMS, N_ITEMS, N_HELD, SUBSET = 20, 200, 4, 20


def simulate(seed, trials):
    rng = np.random.default_rng([seed, trials])
    theta = rng.normal(size=N_SYSTEMS)
    b = rng.normal(0.0, 1.2, N_ITEMS)
    a = np.exp(rng.normal(0.0, 0.3, N_ITEMS))
    p = special.expit(a * (theta[:, None] - b))
    c = rng.binomial(trials, p)
    return theta, a, b, p, c


def inside(draws, truth):
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    return (lo <= truth) & (truth <= hi)


def bootstrap_covers(c, n, truth, rng, reps=2000):
    rates = c / n
    idx = rng.integers(0, len(rates), size=(reps, len(rates)))
    lo, hi = np.quantile(rates[idx].mean(axis=1), [0.025, 0.975])
    return lo <= truth <= hi, hi - lo


def replication(seed, trials, args):
    theta, a, b, p, c = simulate(seed, trials)
    items = [f"i{j}" for j in range(N_ITEMS)]
    names = [f"s{i}" for i in range(N_SYSTEMS)]
    calib = N_SYSTEMS - N_HELD
    data = be.from_counts(c[:calib], trials=trials, systems=names[:calib], tasks=items)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = be.fit(
            data, model="irt", draws=args.draws, tune=args.tune, chains=args.chains, seed=seed
        )
    failed = any("gates" in str(w.message) for w in caught)
    post = res.tree["posterior"]
    flat = {v: post[v].transpose("chain", "draw", ...).values for v in ("theta", "a", "b")}
    flat = {v: x.reshape(-1, x.shape[-1]) for v, x in flat.items()}
    # the scale: where the calibration systems' true mean and spread of abilities fall in
    # their posterior (uniform over replications when the fit is calibrated: under the model
    # they are independent of what the data identify, so their posterior is the prior's)
    truth = theta[:calib]
    out = {
        "theta": inside(flat["theta"], truth).mean(),
        "a": inside(flat["a"], a).mean(),
        "b": inside(flat["b"], b).mean(),
        "gates_failed": failed,
        "rank_mean": float(np.mean(flat["theta"].mean(axis=1) < truth.mean())),
        "rank_sd": float(np.mean(flat["theta"].std(axis=1) < truth.std())),
    }
    full = p[calib:].mean(axis=1)
    rng = np.random.default_rng([seed, 99])
    for method in ("random", "fisher"):
        chosen = be.irt.select(res, SUBSET, method=method, seed=seed)["item"].values.tolist()
        cols = [items.index(t) for t in chosen]
        new = be.from_counts(c[calib:, cols], trials=trials, systems=names[calib:], tasks=chosen)
        sub = be.irt.score(new, items=res, seed=seed)
        draws = sub["full_pass_at_1"].transpose("chain", "draw", "system").values
        draws = draws.reshape(-1, N_HELD)
        lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
        out[f"irt_{method}"] = inside(draws, full).mean()
        out[f"irt_{method}_width"] = float(np.mean(hi - lo))
        boots = [bootstrap_covers(c[calib + s, cols], trials, full[s], rng) for s in range(N_HELD)]
        out[f"boot_{method}"] = np.mean([cov for cov, _ in boots])
        out[f"boot_{method}_width"] = float(np.mean([w for _, w in boots]))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--trials", type=int, nargs="+", default=[4, 1])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--out", default="benchmarks/results/irt_recovery.txt")
    args = parser.parse_args()
    lines = [
        f"irt recovery: {N_SYSTEMS} systems x {N_ITEMS} items ({N_SYSTEMS - N_HELD} calibrate, "
        f"{N_HELD} held out, scored on {SUBSET} items); {args.reps} replications per trial "
        f"count; {args.chains} chains x {args.draws} draws, tune {args.tune}",
        "coverage of 95% intervals (mean over replications +- Monte Carlo se); widths: mean",
    ]
    for trials in args.trials:
        start = time.perf_counter()
        rows = [replication(seed, trials, args) for seed in range(args.reps)]
        seconds = time.perf_counter() - start
        lines.append(f"\ntrials={trials} ({seconds:.0f} s)")
        for key in rows[0]:
            values = np.array([r[key] for r in rows], dtype=float)
            se = values.std(ddof=1) / np.sqrt(len(values))
            line = f"  {key:18s} {values.mean():.3f} +- {se:.3f}"
            if key.startswith("rank_"):  # uniform when calibrated: mean 0.5, KS against U(0, 1)
                line += f"  (KS p = {stats.kstest(values, 'uniform').pvalue:.3f})"
            lines.append(line)
        print("\n".join(lines), flush=True)
        with open(args.out + ".tmp", "w") as handle:  # each trial count's rows as they come
            handle.write("\n".join(lines) + "\n")
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
