"""Coverage and speed of the bootstrap rank confidence sets (bayeval.bootstrap.rank_sets).

Run:  python benchmarks/rank_coverage.py [--n-sim 200] [--n-boot 1000] [--out PATH]

Coverage: simulated benchmarks with a known order. Systems have spaced abilities on the logit
scale; tasks (and clusters) have shared difficulties, so the systems' scores are paired, as on
a real benchmark. The truth is the population value E[expit(ability + difficulty)] (a new task
from a new cluster), which ``unit="task"`` (no clusters) and ``unit="cluster"`` estimate. A
simultaneous set covers when every system's true rank lies in its set; a marginal set when its
own system's does. Ties in the truth (equal abilities) share the best of their ranks. With
all systems tied, a simultaneous set misses exactly when some pair is declared different, so
its coverage is one minus the family-wise error of the pairwise tests (the least favourable
case); with spaced systems the sets are conservative.

Speed: rank_sets on the bundled SWE-bench Verified (25 systems x 500 tasks x 1 trial) and
LiveCodeBench (45 systems x 400 tasks x 10 samples, difficulty strata) files, best of three.
Writes the tables to benchmarks/results/rank_coverage.txt (or --out).
"""

import argparse
import time
from pathlib import Path

import numpy as np

import bayeval as be
from bayeval.analyses.ranks import rank_sets

OUT = Path(__file__).resolve().parent / "results" / "rank_coverage.txt"

SCENARIOS = {
    "10 systems, spaced; 200 tasks x 4 trials; unit=task": dict(
        ability=np.linspace(-0.6, 0.6, 10),
        n_clusters=None,
        n_tasks=200,
        trials=4,
        sd_task=1.5,
        sd_cluster=0.0,
        unit="task",
    ),
    "10 systems, spaced; 200 tasks x 1 trial; unit=task": dict(
        ability=np.linspace(-0.9, 0.9, 10),
        n_clusters=None,
        n_tasks=200,
        trials=1,
        sd_task=1.5,
        sd_cluster=0.0,
        unit="task",
    ),
    "10 systems, two tied pairs; 200 tasks x 4 trials; unit=task": dict(
        ability=np.array([-0.6, -0.6, -0.3, 0.0, 0.1, 0.2, 0.2, 0.4, 0.5, 0.7]),
        n_clusters=None,
        n_tasks=200,
        trials=4,
        sd_task=1.5,
        sd_cluster=0.0,
        unit="task",
    ),
    "10 systems, all tied (least favourable); 200 tasks x 4 trials; unit=task": dict(
        ability=np.zeros(10),
        n_clusters=None,
        n_tasks=200,
        trials=4,
        sd_task=1.5,
        sd_cluster=0.0,
        unit="task",
    ),
    "10 systems, spaced; 30 clusters x 8 tasks x 2 trials; unit=cluster": dict(
        ability=np.linspace(-0.6, 0.6, 10),
        n_clusters=30,
        n_tasks=240,
        trials=2,
        sd_task=1.2,
        sd_cluster=0.8,
        unit="cluster",
    ),
}


def true_values(ability, sd):
    """E[expit(a + e)], e ~ N(0, sd^2), on a fine grid (exact to ~1e-10)."""
    z = np.linspace(-10, 10, 4001)
    w = np.exp(-(z**2) / 2)
    w /= w.sum()
    return (1 / (1 + np.exp(-(ability[:, None] + sd * z[None])))) @ w


def true_ranks(values):
    return 1 + (values[None, :] > values[:, None] + 1e-12).sum(axis=1)


def simulate(rng, ability, n_clusters, n_tasks, trials, sd_task, sd_cluster, unit):
    effect = sd_task * rng.standard_normal(n_tasks)
    clusters = None
    if n_clusters:
        clusters = np.repeat(np.arange(n_clusters), n_tasks // n_clusters)
        effect = effect + sd_cluster * rng.standard_normal(n_clusters)[clusters]
    rates = 1 / (1 + np.exp(-(ability[:, None] + effect[None])))
    successes = rng.binomial(trials, rates)
    return be.from_counts(successes, trials=trials, clusters=clusters)


def coverage(n_sim, n_boot, seed=0):
    lines = [
        f"Coverage at ci_prob 0.95, {n_sim} simulations per row, n_boot={n_boot} "
        "(Monte Carlo se of a coverage near 0.95: "
        f"{np.sqrt(0.95 * 0.05 / n_sim):.3f})",
        "",
    ]
    header = (
        f"{'scenario':<74} {'kind':<13} {'joint':>6} {'marginal min..max':>18} {'mean width':>10}"
    )
    lines += [header, "-" * len(header)]
    rng = np.random.default_rng(seed)
    for name, spec in SCENARIOS.items():
        sd = np.hypot(spec["sd_task"], spec["sd_cluster"])
        truth = true_ranks(true_values(spec["ability"], sd))
        hits = {"simultaneous": [], "marginal": []}
        widths = {"simultaneous": [], "marginal": []}
        start = time.perf_counter()
        for i in range(n_sim):
            data = simulate(rng, **spec)
            for kind in hits:
                out = rank_sets(data, unit=spec["unit"], n_boot=n_boot, seed=i, kind=kind)
                lo, hi = out["rank_lower"].values, out["rank_upper"].values
                hits[kind].append((lo <= truth) & (truth <= hi))
                widths[kind].append(float((hi - lo + 1).mean()))
        elapsed = time.perf_counter() - start
        for kind in hits:
            h = np.array(hits[kind])
            joint = h.all(axis=1).mean()
            marg = h.mean(axis=0)
            lines.append(
                f"{name:<74} {kind:<13} {joint:6.3f} "
                f"{marg.min():8.3f}..{marg.max():.3f} {np.mean(widths[kind]):10.2f}"
            )
        lines.append(f"{'':<74} ({elapsed:.1f} s for {2 * n_sim} calls)")
    lines += [
        "",
        "joint: share of simulations with every true rank in its set; marginal: per system,",
        "share with its own rank in its set (min..max over systems); width: mean number of",
        "ranks in a set (1 = a single rank, 10 = uninformative). A marginal set claims only",
        "its own system's rank: its joint column shows what it does not promise.",
    ]
    return lines


def timing():
    cases = {
        "SWE-bench Verified, 25 x 500 x 1": be.datasets.load("swebench_verified"),
        "LiveCodeBench, 45 x 400 x 10 (strata)": be.datasets.load("livecodebench"),
    }
    lines = ["", "Timing of rank_sets (best of 3, n_boot=10000)", ""]
    header = f"{'data':<40} {'unit':<8} {'kind':<13} {'seconds':>8} {'critical value':>15}"
    lines += [header, "-" * len(header)]
    for name, data in cases.items():
        for unit in ("task", "cluster"):
            for kind in ("simultaneous", "marginal"):
                best = np.inf
                try:
                    for _ in range(3):
                        start = time.perf_counter()
                        out = rank_sets(data, unit=unit, kind=kind, n_boot=10_000, seed=0)
                        best = min(best, time.perf_counter() - start)
                except ValueError as error:  # LiveCodeBench's platforms cross its strata
                    lines.append(f"{name:<40} {unit:<8} {kind:<13} n/a: {error}")
                    continue
                c = out.attrs["critical_value"]
                lines.append(f"{name:<40} {unit:<8} {kind:<13} {best:8.3f} {c:15.3f}")
    data = cases["SWE-bench Verified, 25 x 500 x 1"]
    out = rank_sets(data, n_boot=10_000, seed=0)
    totals = data.dataset["successes"].sum("task").to_series()
    lines += ["", "SWE-bench Verified, the close pair (unit=task, simultaneous, n_boot=10000):"]
    for system in totals[totals.isin([371, 372])].index:
        row = out.sel(system=system)
        lines.append(
            f"  {system}: {int(totals[system])}/500 resolved, observed rank "
            f"{int(row['rank_observed'])}, rank set [{int(row['rank_lower'])}, "
            f"{int(row['rank_upper'])}]"
        )
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sim", type=int, default=200)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    lines = coverage(args.n_sim, args.n_boot) + timing()
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
