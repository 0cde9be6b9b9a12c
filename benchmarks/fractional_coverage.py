"""Coverage and width of the fractional model's mean-score intervals, beside the task bootstrap.

Simulated LiveBench-shaped scores with known truth (``livebench_shape.py``: 18 categories,
eight of them graded on [0, 1] where 70% of scores are interior Beta(6 mu, 6 (1 - mu)) draws,
one attempt per system and question; the systems' intercepts evenly spaced over [-1.5, 1.5]),
``--systems`` systems x ``--tasks`` questions, ``--sims`` data sets each. Each data set is fitted
by ``be.fit(data, model="fractional")`` at 2 chains x 500 draws (the model cards' setting) and
bootstrapped over tasks (``be.bootstrap.mean_score`` and ``be.bootstrap.compare(metric="mean")``,
2,000 replicates). Truth:

* ``tasks``: the mean over the simulated questions of each cell's expected score;
* ``population``: a new question's expected score (from a new category: the model's default
  with 18 categories), by Gauss-Hermite quadrature over the generator's normal effects;
* the paired effect over these tasks for the pairs of neighbouring systems (the first and last
  with 2 systems; three pairs with more).

For each quantity: the coverage of the 95% equal-tailed interval with its Monte Carlo standard
error (over the intervals; with several systems per data set they are not independent), the
mean half-width, and the ratio of the interval's implied sd (half-width / 1.96) to the actual
root mean square error of the point estimate (posterior mean; the bootstrap's observed mean).
A ratio above 1 is an interval wider than its error.

    python benchmarks/fractional_coverage.py --systems 2 --tasks 100 --sims 150
    python benchmarks/fractional_coverage.py --systems 25 --tasks 100 --sims 40
    python benchmarks/fractional_coverage.py --systems 2 --tasks 100 --sims 60 --interior

A study split over runs: ``--first N`` starts at data set N (its seed ``--seed + N``),
``--rows FILE`` keeps each interval as a CSV row, and ``--merge FILE [FILE ...]`` tabulates
the rows of several runs as one study.

``--interior`` is the case the likelihood's variance bound fits worst: every category graded on
[0, 1], no score graded 0/1 (every score an interior Beta(20 mu, 20 (1 - mu)) draw, a
twenty-first of a coin's variance), where the intervals over these tasks lean furthest to the
wide side.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

import bayeval as be
from bayeval._io import atomic_path

sys.path.insert(0, str(Path(__file__).parent))
import livebench_shape as shape  # noqa: E402

FIT = {"draws": 500, "chains": 2}
N_BOOT = 2000


def population_truth(n_systems: int) -> np.ndarray:
    """Each system's expected score on a new question from a new category."""
    x, w = np.polynomial.hermite_e.hermegauss(201)
    w = w / w.sum()
    sd = np.sqrt(shape.SIGMA_CLUSTER**2 + shape.SIGMA_TASK**2 + shape.SIGMA_TS**2)
    eta = shape.intercepts(n_systems)[:, None] + sd * x[None, :]
    q, mu = special.expit(eta), special.expit(eta + shape.DELTA)
    partial = shape.ZOI_PARTIAL * q + (1 - shape.ZOI_PARTIAL) * mu
    share = shape.N_PARTIAL / shape.N_CLUSTERS
    return (share * partial + (1 - share) * q) @ w


def one(n_systems, n_tasks, seed, pairs):
    df, truth = shape.livebench_shaped(n_systems, seed, n_tasks=n_tasks)
    data = be.from_frame(df, score="score", cluster="category")
    systems = data.systems
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = be.fit(data, model="fractional", seed=seed, log_likelihood=False, **FIT)
    seconds = time.perf_counter() - start
    out = {"seconds": seconds, "divergences": int(res.tree["sample_stats"]["diverging"].sum())}
    for estimand in ("tasks", "population"):
        draws = res.mean_score(estimand=estimand)
        lo, hi = draws.quantile([0.025, 0.975], dim=("chain", "draw")).values
        out[("fractional", estimand, "system")] = (draws.mean(("chain", "draw")).values, lo, hi)
    effects = []
    for a, b in pairs:
        eff = res.compare(systems[b], systems[a], metric="mean", estimand="tasks")
        lo, hi = eff["effect_interval"].values
        effects.append((float(eff["effect_mean"]), lo, hi))
    out[("fractional", "tasks", "effect")] = tuple(np.array(v) for v in zip(*effects, strict=True))
    boot = be.bootstrap.mean_score(data, n_boot=N_BOOT, seed=seed)
    observed = df.groupby("system", sort=False)["score"].mean().loc[systems].values
    lo, hi = (
        boot["interval"].sel(ci_bound="lower").values,
        boot["interval"].sel(ci_bound="upper").values,
    )
    out[("bootstrap", "tasks", "system")] = (observed, lo, hi)
    effects = []
    for a, b in pairs:
        diff = be.bootstrap.compare(
            data, systems[b], systems[a], metric="mean", n_boot=N_BOOT, seed=seed
        )
        lo, hi = diff["effect_interval"].values
        effects.append((observed[b] - observed[a], lo, hi))
    out[("bootstrap", "tasks", "effect")] = tuple(np.array(v) for v in zip(*effects, strict=True))
    truths = {
        ("tasks", "system"): truth.values,
        ("population", "system"): population_truth(n_systems),
        ("tasks", "effect"): np.array([truth.values[b] - truth.values[a] for a, b in pairs]),
    }
    return out, truths


KEYS = [
    ("fractional", "tasks", "system"),
    ("bootstrap", "tasks", "system"),
    ("fractional", "population", "system"),
    ("fractional", "tasks", "effect"),
    ("bootstrap", "tasks", "effect"),
]


def interval_rows(records, first: int) -> pd.DataFrame:
    """One row per interval: data set, method, estimand, quantity, estimate, bounds, truth."""
    rows = []
    for i, (out, truths) in enumerate(records):
        for method, estimand, quantity in KEYS:
            est, lo, hi = out[(method, estimand, quantity)]
            for e, a, b, t in zip(est, lo, hi, truths[(estimand, quantity)], strict=True):
                rows.append(
                    (
                        first + i,
                        out["seconds"],
                        out["divergences"],
                        method,
                        estimand,
                        quantity,
                        e,
                        a,
                        b,
                        t,
                    )
                )
    return pd.DataFrame(
        rows,
        columns=[
            "sim",
            "seconds",
            "divergences",
            "method",
            "estimand",
            "quantity",
            "estimate",
            "lower",
            "upper",
            "truth",
        ],
    )


def table(rows: pd.DataFrame) -> list[str]:
    """The coverage table of the interval rows (:func:`interval_rows`)."""
    lines = [
        "| method | estimand | quantity | intervals | coverage ± MC se | mean half-width | "
        "sd / RMSE |",
        "|---|---|---|---|---|---|---|",
    ]
    for method, estimand, quantity in KEYS:
        part = rows[
            (rows["method"] == method)
            & (rows["estimand"] == estimand)
            & (rows["quantity"] == quantity)
        ]
        lo, hi, truth = part["lower"].values, part["upper"].values, part["truth"].values
        covered = (lo <= truth) & (truth <= hi)
        cov, se = covered.mean(), np.sqrt(covered.mean() * (1 - covered.mean()) / covered.size)
        half = (hi - lo) / 2
        ratio = np.mean(half / 1.96) / np.sqrt(np.mean((part["estimate"].values - truth) ** 2))
        lines.append(
            f"| {method} | {estimand} | {quantity} | {covered.size} | {cov:.3f} ± {se:.3f} | "
            f"{half.mean():.4f} | {ratio:.2f} |"
        )
    return lines


def report(header: str, rows: pd.DataFrame, out: Path | None) -> None:
    """Print the study's header, fit summary and table (:func:`table`); write it to ``out``."""
    per_sim = rows.drop_duplicates("sim")
    lines = [
        header,
        f"mean fit seconds {per_sim['seconds'].mean():.1f}; "
        f"fits with divergences {(per_sim['divergences'] > 0).sum()}",
        *table(rows),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if out is not None:
        with atomic_path(out) as path:
            path.write_text(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--first", type=int, default=0, help="the first data set (its seed offset)")
    parser.add_argument("--interior", action="store_true", help="every score interior")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--rows", type=Path, default=None, help="write each interval as a CSV row")
    parser.add_argument(
        "--merge", type=Path, nargs="+", default=None, help="tabulate --rows files of several runs"
    )
    args = parser.parse_args(argv)
    if args.merge:
        rows = pd.concat([pd.read_csv(path) for path in args.merge], ignore_index=True)
        header = f"# fractional_coverage.py --merge {' '.join(str(p) for p in args.merge)}"
        report(f"{header}: {rows['sim'].nunique()} data sets", rows, args.out)
        return
    if args.interior:
        shape.N_PARTIAL, shape.ZOI_PARTIAL, shape.PHI = shape.N_CLUSTERS, 0.0, 20.0
    S = args.systems
    pairs = [(0, S - 1)] if S == 2 else [(0, 1), (S // 2 - 1, S // 2), (S - 2, S - 1)]
    records = []
    for i in range(args.first, args.first + args.sims):
        out, truths = one(S, args.tasks, args.seed + i, pairs)
        records.append((out, truths))
        print(f"sim {i}: {out['seconds']:.1f} s, {out['divergences']} divergences", flush=True)
    rows = interval_rows(records, args.first)
    if args.rows is not None:
        rows.to_csv(args.rows, index=False)
    header = (
        f"# fractional_coverage.py --systems {S} --tasks {args.tasks} --sims {args.sims} "
        f"--seed {args.seed}{f' --first {args.first}' if args.first else ''}"
        f"{' --interior' if args.interior else ''}; "
        f"fits {FIT['chains']} chains x {FIT['draws']} draws; {os.cpu_count()} cores"
    )
    report(header, rows, args.out)


if __name__ == "__main__":
    main()
