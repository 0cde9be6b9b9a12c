"""Coverage and timing of the zoib mean-score model, with the task bootstrap beside it.

Measured: the coverage of the zoib mean-score intervals and of the task bootstrap;
LiveBench-like timing; binary data through zoib against the binomial logit_normal model.

    python benchmarks/score_coverage.py [--sims 100] [--seed 20261203]
                                        [--out benchmarks/results/score_coverage.txt]

Four parts, one run:

1. Coverage. Two systems on N = 10 and N = 50 tasks, two attempts per (system, task), from
   two generators with known truth:

   * ``zoib``: task difficulty e ~ N(0, 1.5), task-by-system v ~ N(0, 0.5); half the tasks
     are graded 0/1 (Bernoulli(expit(alpha + e + v))), the other half give partial credit:
     with probability 0.7 a Beta(6 mu, 6 (1 - mu)) score with mu = expit(alpha + e + v +
     0.3), else a 0/1 grade as above. The share graded 0/1 is bimodal across tasks (1 or
     0.3), which the model's logit-normal task tendency only approximates.
   * ``grid`` (mis-specified): half the tasks 0/1 as above, the other half a four-item
     rubric, score = Binomial(4, q) / 4 on {0, .25, .5, .75, 1} with q = expit(alpha + e +
     v): a discrete interior, and the chance of a 0/1 grade depends on the difficulty.

   System A has alpha = -0.2, system B alpha = 0.3. Truth: ``tasks``, the mean over the
   simulated tasks of each task's expected score; ``population``, its expectation over the
   task distribution (Monte Carlo over 2,000,000 tasks, standard error below 3e-4). Each
   benchmark is fitted with ``be.fit`` (zoib, nutpie, 2 chains x 500 draws after 500
   tuning) and bootstrapped (``bootstrap.mean_score`` and ``bootstrap.compare(metric=
   "mean")``, unit="task", 2,000 replicates); coverage of the 95% equal-tailed intervals of
   A's mean score and of the paired effect B - A, with its Monte Carlo standard error.

2. Timing on LiveBench-like data: 18 clusters (task categories) of 20 tasks, 8 of them
   graded on [0, 1], 2 systems x 360 tasks x 1 attempt, fitted with the default settings (4
   chains x 1000 draws after 1000 tuning) by zoib and, thresholded at full credit, by the
   paired logit_normal model, twice each (the first fit compiles); wall-clock seconds, the
   ratios, diagnostics and the effective sample size of the effect.

3. Many systems: the same LiveBench-like design with 25 systems, three data seeds, zoib
   beside the paired model on the data thresholded at full credit: seconds, diagnostics and
   the bulk ESS of the mean score's estimands and of the slowest parameters.

4. Binary agreement: binary data (2 systems x 40 tasks x 4 attempts, 4 clusters) through
   zoib and logit_normal, eight fits of each (4 chains x 1000 draws each): posterior means of
   the mean score / pass@1 and of the effect, for both estimands, averaged over the fits, and
   their difference in units of the standard error from the spread between the fits (a
   fit's own MCSE relies on its ESS, which is optimistic where the variance components mix
   slowly, as zoib's do on four clusters).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

import bayeval as be
from bayeval._arviz import mcse_and_ess
from bayeval.models.kernels import nutpie_model

ALPHA = {"A": -0.2, "B": 0.3}
SIGMA_TASK, SIGMA_TS, DELTA, PHI, ZOI_PARTIAL, PARTIAL_SHARE = 1.5, 0.5, 0.3, 6.0, 0.3, 0.5
ATTEMPTS = 2
FIT = {"draws": 500, "chains": 2, "tune": 500}
N_BOOT = 2000


def task_means(generator, eta, partial):
    """Expected score of each (system, task) given its latent eta and grading type."""
    q = special.expit(eta)
    if generator == "grid":
        return q
    mu = special.expit(eta + DELTA)
    inner = ZOI_PARTIAL * q + (1 - ZOI_PARTIAL) * mu
    return np.where(partial, inner, q)


def draw_scores(generator, eta, partial, rng):
    """One score per (system, task) cell of ``eta``."""
    q = special.expit(eta)
    binary = (rng.random(eta.shape) < q).astype(float)
    if generator == "grid":
        rubric = rng.binomial(4, q) / 4
        return np.where(partial, rubric, binary)
    mu = special.expit(eta + DELTA)
    beta = rng.beta(PHI * mu, PHI * (1 - mu))
    interior = partial & (rng.random(eta.shape) >= ZOI_PARTIAL)
    return np.where(interior, beta, binary)


def latent(n_tasks, rng):
    e = rng.normal(0, SIGMA_TASK, n_tasks)
    v = rng.normal(0, SIGMA_TS, (2, n_tasks))
    eta = np.array([ALPHA["A"], ALPHA["B"]])[:, None] + e[None] + v
    partial = np.broadcast_to(rng.random(n_tasks) < PARTIAL_SHARE, eta.shape)
    return eta, partial


def population_truth(generator, seed, size=2_000_000):
    rng = np.random.default_rng([seed, 99])
    eta, partial = latent(size, rng)
    m = task_means(generator, eta, partial).mean(axis=1)
    return {"A": m[0], "B - A": m[1] - m[0]}


def simulate(generator, n_tasks, rng):
    eta, partial = latent(n_tasks, rng)
    m = task_means(generator, eta, partial)
    rows = []
    for a in range(ATTEMPTS):
        y = draw_scores(generator, eta, partial, rng)
        for s, system in enumerate(("A", "B")):
            rows.append(
                pd.DataFrame(
                    {
                        "system": system,
                        "task": [f"t{j}" for j in range(n_tasks)],
                        "trial": a,
                        "score": y[s],
                    }
                )
            )
    truth = {"A": m[0].mean(), "B - A": (m[1] - m[0]).mean()}
    return pd.concat(rows, ignore_index=True), truth


def one_benchmark(generator, n_tasks, rng, seed):
    df, tasks_truth = simulate(generator, n_tasks, rng)
    data = be.from_frame(df, score="score", trial="trial")
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = be.fit(data, model="zoib", seed=seed, **FIT)
    seconds = time.perf_counter() - start
    gate = any("gates" in str(w.message) for w in caught)
    out = {
        "seconds": seconds,
        "divergences": res.diagnostics.get("divergences", 0),
        "gate_failed": gate,
    }
    for estimand in ("tasks", "population"):
        summary = res.summary(metrics=("mean",), estimands=(estimand,))
        row = summary[summary["system"] == "A"].iloc[0]
        out[("zoib", estimand, "A")] = (row["lower"], row["upper"])
        effect = res.compare("B", "A", metric="mean", estimand=estimand)["effect_interval"]
        out[("zoib", estimand, "B - A")] = tuple(effect.values.tolist())
    boot = be.bootstrap.mean_score(data, n_boot=N_BOOT, seed=seed)
    out[("bootstrap", "population", "A")] = tuple(boot["interval"].sel(system="A").values)
    diff = be.bootstrap.compare(data, "B", "A", metric="mean", n_boot=N_BOOT, seed=seed)
    out[("bootstrap", "population", "B - A")] = tuple(diff["effect_interval"].values)
    return out, tasks_truth


def coverage(sims, seed, lines):
    header = (
        "| generator | N | sims | method | estimand | quantity | coverage ± MC se | mean width |"
    )
    lines += [
        "## Coverage of nominal 95% intervals",
        "",
        header,
        "|---|---|---|---|---|---|---|---|",
    ]
    timing = []
    for g, generator in enumerate(("zoib", "grid")):
        pop = population_truth(generator, seed)
        for n_tasks in (10, 50):
            rng = np.random.default_rng([seed, g, n_tasks])
            records = []
            for i in range(sims):
                records.append(one_benchmark(generator, n_tasks, rng, seed + i))
                if (i + 1) % 20 == 0:
                    print(
                        f"  {generator} N={n_tasks}: {i + 1}/{sims} benchmarks",
                        file=sys.stderr,
                        flush=True,
                    )
            fits = [r for r, _ in records]
            keys = [k for k in fits[0] if isinstance(k, tuple)]
            for method, estimand, quantity in keys:
                hit, width = [], []
                for r, tasks_truth in records:
                    lo, hi = r[(method, estimand, quantity)]
                    truth = tasks_truth[quantity] if estimand == "tasks" else pop[quantity]
                    hit.append(lo <= truth <= hi)
                    width.append(hi - lo)
                cov = float(np.mean(hit))
                se = np.sqrt(max(cov * (1 - cov), 1e-12) / len(hit))
                lines.append(
                    f"| {generator} | {n_tasks} | {sims} | {method} | {estimand} | "
                    f"{quantity} | {cov:.3f} ± {se:.3f} | {np.mean(width):.3f} |"
                )
            timing.append(
                (
                    generator,
                    n_tasks,
                    np.mean([r["seconds"] for r in fits]),
                    sum(r["divergences"] for r in fits),
                    sum(r["gate_failed"] for r in fits),
                    sims,
                )
            )
            print("\n".join(lines[-len(keys) :]), flush=True)
    lines += [
        "",
        "Per-fit cost and diagnostics in the coverage cells (compiling is shared "
        "by same-shaped fits):",
        "",
        "| generator | N | mean seconds per fit | divergences (all fits) | fits failing a "
        "gate | sims |",
        "|---|---|---|---|---|---|",
    ]
    for generator, n_tasks, secs, div, gates, n in timing:
        lines.append(f"| {generator} | {n_tasks} | {secs:.2f} | {div} | {gates} | {n} |")
    print("\n".join(lines[-len(timing) - 2 :]), flush=True)


def livebench_like(seed, alphas=(("A", -0.1), ("B", 0.2))):
    """LiveBench-like scores of the systems ``alphas`` (label, intercept), one attempt each."""
    rng = np.random.default_rng([seed, 7])
    n_clusters, per_cluster = 18, 20
    cluster = np.repeat(np.arange(n_clusters), per_cluster)
    partial_cluster = np.arange(n_clusters) < 8
    u = rng.normal(0, 0.8, n_clusters)
    e = rng.normal(0, 1.2, len(cluster))
    rows = []
    for system, alpha in alphas:
        eta = alpha + u[cluster] + e + rng.normal(0, 0.4, len(cluster))
        partial = partial_cluster[cluster]
        y = draw_scores("zoib", eta[None], partial[None], rng)[0]
        rows.append(
            pd.DataFrame(
                {
                    "system": system,
                    "task": [f"q{j}" for j in range(len(cluster))],
                    "category": [f"c{g}" for g in cluster],
                    "score": y,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def timing(seed, lines):
    df = livebench_like(seed)
    scores = be.from_frame(df, score="score", cluster="category")
    binary = be.from_frame(df.assign(success=(df["score"] == 1).astype(int)), cluster="category")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, data, model, metric in (
            ("zoib (scores)", scores, "zoib", "mean"),
            ("zoib, PyMC model (scores)", scores, "zoib", "mean"),
            ("logit_normal (thresholded at 1)", binary, "logit_normal", "pass@k"),
        ):
            # the PyMC model compiled by nutpie: the route taken where nutpie lacks the
            # compiled kernel's (the same density, sampled at the same settings)
            route = nutpie_model.available
            if "PyMC" in name:
                nutpie_model.available = lambda: False
            try:
                for run, fit_seed in (("first", seed), ("second", seed + 1)):
                    start = time.perf_counter()
                    res = be.fit(data, model=model, seed=fit_seed)
                    secs = time.perf_counter() - start
                    ess = float(res.compare("B", "A", metric=metric)["effect_ess"])
                    steps = float(res.tree["sample_stats"]["n_steps"].mean())
                    out[(name, run)] = (secs, res.diagnostics, ess, steps)
            finally:
                nutpie_model.available = route
    n_mid = int(scores.dataset["score_nmid"].sum())
    lines += [
        "",
        "## LiveBench-like timing",
        "",
        f"18 clusters x 20 tasks (8 clusters graded on [0, 1]), 2 systems x 360 tasks x 1 "
        f"attempt ({n_mid} of 720 scores strictly between 0 and 1); default fit settings "
        "(4 chains x 1000 draws after 1000 tuning), wall clock of each fit in one process: "
        "the first fit of a model builds and compiles it, the second (another seed) "
        "reuses its compiled model (its data swapped in). "
        "Effect ESS: bulk ESS of the population effect B - A.",
        "",
        "| fit | run | seconds | steps a draw | divergences | min bulk ESS (parameters) | "
        "max r-hat | min BFMI | effect ESS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, run), (secs, diag, ess, steps) in out.items():
        lines.append(
            f"| {name} | {run} | {secs:.1f} | {steps:.0f} | "
            f"{diag.get('divergences', 0)} | "
            f"{diag.get('min_ess_bulk', float('nan')):.0f} | "
            f"{diag.get('max_rhat', float('nan')):.3f} | "
            f"{diag.get('min_bfmi', float('nan')):.2f} | {ess:.0f} |"
        )
    for run in ("first", "second"):
        zoib_secs = out[("zoib (scores)", run)][0]
        ratio = zoib_secs / out[("logit_normal (thresholded at 1)", run)][0]
        lines.append(f"\nzoib / logit_normal wall-clock ratio, {run} fit: {ratio:.2f}")
        ratio = out[("zoib, PyMC model (scores)", run)][0] / zoib_secs
        lines.append(f"\nzoib's PyMC model / its compiled kernel, {run} fit: {ratio:.2f}")
    print("\n".join(lines[-len(out) - 10 :]), flush=True)


MANY_SYSTEMS, MANY_SEEDS = 25, 3


def many_systems(seed, lines):
    """Zoib at leaderboard width: LiveBench-like data of 25 systems, default settings.

    The intercepts run evenly from -1.5 to 1.5; the paired model runs on the same data
    thresholded, for comparison.
    """
    alphas = [(f"s{s:02d}", a) for s, a in enumerate(np.linspace(-1.5, 1.5, MANY_SYSTEMS))]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for data_seed in range(seed, seed + MANY_SEEDS):
            df = livebench_like(data_seed, alphas)
            scores = be.from_frame(df, score="score", cluster="category")
            binary = be.from_frame(
                df.assign(success=(df["score"] == 1).astype(int)), cluster="category"
            )
            for name, data, metric in (
                ("zoib (scores)", scores, "mean"),
                ("logit_normal (thresholded at 1)", binary, "pass@k"),
            ):
                start = time.perf_counter()
                res = be.fit(data, seed=data_seed)
                secs = time.perf_counter() - start
                table = res.summary(metrics=(metric,))
                ess = table.groupby("estimand")["ess_bulk"].min()
                post = res.tree["posterior"]
                names = [v for v in ("alpha", "sigma_task_system", "phi") if v in post]
                slowest = {v: float(mcse_and_ess(post[v])[1].min()) for v in names}
                steps = float(res.tree["sample_stats"]["n_steps"].mean())
                rows.append(
                    (
                        data_seed,
                        name,
                        res.model,
                        secs,
                        steps,
                        res.diagnostics,
                        ess["population"],
                        ess["tasks"],
                        slowest,
                        int(scores.dataset["score_nmid"].sum()),
                    )
                )
    lines += [
        "",
        "## Many systems",
        "",
        f"LiveBench-like data as above with {MANY_SYSTEMS} systems (intercepts evenly from "
        "-1.5 to 1.5), 360 tasks, 1 attempt; default settings (4 chains x 1000 draws), "
        "one fit each, data seeds in a row. ESS: bulk ESS; 'population' and 'tasks' the "
        "smallest over the systems of their mean score (pass@1 thresholded).",
        "",
        "| data seed | fit | model | interior scores | seconds | steps a draw | "
        "divergences | max r-hat | min bulk ESS (parameters) | min BFMI | population ESS | "
        "tasks ESS | ESS alpha / sigma_task_system / phi |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for seed_, name, model, secs, steps, diag, pop, tasks, slowest, n_mid in rows:
        parts = " / ".join(
            f"{slowest[v]:.0f}" if v in slowest else "-"
            for v in ("alpha", "sigma_task_system", "phi")
        )
        lines.append(
            f"| {seed_} | {name} | {model} | {n_mid} | {secs:.1f} | {steps:.0f} | "
            f"{diag.get('divergences', 0)} | {diag.get('max_rhat', float('nan')):.3f} "
            f"| {diag.get('min_ess_bulk', float('nan')):.0f} | "
            f"{diag.get('min_bfmi', float('nan')):.2f} | {pop:.0f} | {tasks:.0f} | "
            f"{parts} |"
        )
    print("\n".join(lines[-len(rows) - 2 :]), flush=True)


AGREEMENT_SEEDS = 8


def agreement(seed, lines):
    rng = np.random.default_rng([seed, 11])
    n_tasks, cluster = 40, np.repeat(np.arange(4), 10)
    e = rng.normal(0, 1.5, n_tasks) + rng.normal(0, 0.5, 4)[cluster]
    c = np.stack(
        [rng.binomial(4, special.expit(a + e + rng.normal(0, 0.5, n_tasks))) for a in (-0.2, 0.3)]
    )
    data = be.from_counts(c, trials=4, systems=["A", "B"], clusters=[f"g{g}" for g in cluster])
    # each fit's posterior mean, per model, estimand and quantity; and its reported MCSE
    means, mcses = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model in ("zoib", "logit_normal"):
            for fit_seed in range(seed, seed + AGREEMENT_SEEDS):
                res = be.fit(data, model=model, seed=fit_seed)
                for estimand in ("tasks", "population"):
                    table = res.summary(estimands=(estimand,)).set_index("system")
                    out = res.compare("B", "A", metric="pass@k", estimand=estimand)
                    for quantity, (m, se) in {
                        "A": (table.loc["A", "mean"], table.loc["A", "mcse_mean"]),
                        "B": (table.loc["B", "mean"], table.loc["B", "mcse_mean"]),
                        "B - A": (float(out["effect_mean"]), float(out["effect_mcse"])),
                    }.items():
                        means.setdefault((model, estimand, quantity), []).append(m)
                        mcses.setdefault((model, estimand, quantity), []).append(se)
    lines += [
        "",
        "## Binary data: zoib against logit_normal",
        "",
        f"2 systems x 40 tasks x 4 attempts in 4 clusters, {AGREEMENT_SEEDS} fits of each "
        "model (seeds in a row, 4 chains x 1000 draws each): the mean over the fits of "
        "each fit's posterior mean of pass@1 / the mean score (the standard error of that "
        "mean from the spread between the fits; in brackets the mean of the MCSEs the fits "
        "report); z is the difference over the combined standard error from the spread.",
        "",
        "| estimand | quantity | zoib | logit_normal | z |",
        "|---|---|---|---|---|",
    ]
    for estimand in ("tasks", "population"):
        for quantity in ("A", "B", "B - A"):
            row = []
            for model in ("zoib", "logit_normal"):
                values = np.array(means[(model, estimand, quantity)])
                row.append(
                    (
                        values.mean(),
                        values.std(ddof=1) / np.sqrt(len(values)),
                        np.mean(mcses[(model, estimand, quantity)]),
                    )
                )
            (m1, s1, r1), (m2, s2, r2) = row
            z = (m1 - m2) / np.hypot(s1, s2)
            lines.append(
                f"| {estimand} | {quantity} | {m1:.4f} ± {s1:.4f} ({r1:.4f}) | "
                f"{m2:.4f} ± {s2:.4f} ({r2:.4f}) | {z:+.2f} |"
            )
    print("\n".join(lines[-8:]), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--out", default="benchmarks/results/score_coverage.txt")
    parser.add_argument("--parts", default="coverage,timing,many,agreement")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    lines = [
        f"# python benchmarks/score_coverage.py --sims {args.sims} --seed {args.seed}   "
        f"({date.today().isoformat()}, {platform.machine()}, bayeval zoib)",
        "",
    ]
    parts = args.parts.split(",")
    if "coverage" in parts:
        coverage(args.sims, args.seed, lines)
    if "timing" in parts:
        timing(args.seed, lines)
    if "many" in parts:
        many_systems(args.seed, lines)
    if "agreement" in parts:
        agreement(args.seed, lines)
    lines += ["", f"Wall time {(time.perf_counter() - start) / 60:.1f} min."]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
