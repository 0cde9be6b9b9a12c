"""Coverage of the p50 and p95 attempt-latency intervals (bayeval.analyses.latency).

Run:  python benchmarks/latency_coverage.py [--n-sim 150] [--n-boot 1000] [--out PATH]

Simulated benchmarks with a known latency distribution, each with 4 systems of the same
design (their coverage indicators are pooled). Task t of a system has a slowness u_t, and
attempt j on it lasts y_tj seconds:

* ``lognormal 80x5`` and ``lognormal 20x3``: log y_tj = 5.8 + u_t + e_tj with
  u_t ~ N(0, 0.6^2) and e_tj ~ N(0, 0.5^2), on 80 tasks x 5 attempts (Terminal-Bench's
  shape) and on 20 tasks x 3; the log-normal model is true.
* ``capped 80x5``: the same with u_t ~ N(0, 0.7^2), then every attempt longer than a
  1000 s time limit is killed at 1000 s plus U(0, 30) s (a timeout): a point mass in the
  tail, about 10% of attempts (so the p95 lies in it), which the log-normal does not have.
* ``two modes 80x5``: 70% of tasks quick (log scale 5.5), 30% slow (6.8), u_t ~ N(0, 0.3^2)
  within each kind, e_tj ~ N(0, 0.4^2): a bimodal mixture.

The truth is the population quantile of one attempt on a new task from the same
population: exp(5.8 + z_q sqrt(0.6^2 + 0.5^2)) for the log-normal designs, the quantile of
4 million simulated (task, attempt) draws for the others. Methods: bayeval.bootstrap.latency
(tasks resampled with their attempts), bayeval.analyses.latency.posterior_latency with
model='lognormal' (task effects per system, grid posterior) and model='bayesian_bootstrap'
(Dirichlet weights over tasks). Reported: coverage of the nominal 95% intervals, and the
median interval width over the truth; and the log-normal's check (``_lognormal_misfit``,
what ``latency_table`` reports: the log-normal and the bootstrap disagree, or the task means
are not normal on the log scale): how often it flags a system, and the coverage of the rule
"the log-normal's interval unless flagged, else the bootstrap's" (``checked``).
"""

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import ndtri

import bayeval as be
from bayeval.analyses.latency import posterior_latency
from bayeval.models.latency import _lognormal_misfit

OUT = Path(__file__).resolve().parent / "results" / "latency_coverage.txt"
QS = np.array([0.5, 0.95])
N_SYS = 4
CAP = 1000.0


def draw(design, rng, n_task, n_trial):
    """Durations (n_task, n_trial) of one system under ``design``."""
    if design == "lognormal":
        u = rng.normal(0, 0.6, (n_task, 1))
        return np.exp(5.8 + u + rng.normal(0, 0.5, (n_task, n_trial)))
    if design == "capped":
        u = rng.normal(0, 0.7, (n_task, 1))
        y = np.exp(5.8 + u + rng.normal(0, 0.5, (n_task, n_trial)))
        return np.where(y > CAP, CAP + rng.uniform(0, 30, y.shape), y)
    if design == "two modes":
        slow = rng.random((n_task, 1)) < 0.3
        u = np.where(slow, 6.8, 5.5) + rng.normal(0, 0.3, (n_task, 1))
        return np.exp(u + rng.normal(0, 0.4, (n_task, n_trial)))
    raise ValueError(design)


def truth(design, rng):
    if design == "lognormal":
        return np.exp(5.8 + ndtri(QS) * np.hypot(0.6, 0.5))
    return np.quantile(draw(design, rng, 4_000_000, 1).ravel(), QS)


def frame(design, rng, n_task, n_trial):
    rows = []
    for s in range(N_SYS):
        y = draw(design, rng, n_task, n_trial)
        rows.append(
            pd.DataFrame(
                {
                    "system": f"S{s}",
                    "task": np.repeat(np.arange(n_task), n_trial),
                    "success": 1,
                    "seconds": y.ravel(),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


DESIGNS = (
    ("lognormal 80x5", "lognormal", 80, 5),
    ("lognormal 20x3", "lognormal", 20, 3),
    ("capped 80x5", "capped", 80, 5),
    ("two modes 80x5", "two modes", 80, 5),
)
METHODS = ("bootstrap", "lognormal", "bayesian_bootstrap", "checked")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sim", type=int, default=150)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.time()
    table = []
    for label, design, n_task, n_trial in DESIGNS:
        true = truth(design, rng)
        hits = {m: [] for m in METHODS}
        width = {m: [] for m in METHODS}
        flags = []
        for i in range(args.n_sim):
            data = be.from_frame(frame(design, rng, n_task, n_trial), latency="seconds")
            outs = {"bootstrap": be.bootstrap.latency(data, q=QS, n_boot=args.n_boot, seed=i)}
            for model in ("lognormal", "bayesian_bootstrap"):
                outs[model] = posterior_latency(
                    data, q=QS, n_draws=args.n_boot, seed=i, model=model
                )
            flagged = _lognormal_misfit(outs["lognormal"], outs["bootstrap"])
            flags.append(flagged)
            bounds = {
                m: (
                    out["latency_interval"].sel(ci_bound="lower").values,  # (system, q)
                    out["latency_interval"].sel(ci_bound="upper").values,
                )
                for m, out in outs.items()
            }
            bounds["checked"] = tuple(
                np.where(flagged[:, None], b, ln)
                for b, ln in zip(bounds["bootstrap"], bounds["lognormal"], strict=True)
            )
            for m, (lo, hi) in bounds.items():
                hits[m].append((lo <= true) & (true <= hi))
                width[m].append((hi - lo) / true)
        for m in METHODS:
            h, w = np.concatenate(hits[m]), np.concatenate(width[m])
            table.append((label, m, h.mean(axis=0), np.median(w, axis=0), len(h)))
        print(
            f"{label}: truth p50 {true[0]:.0f} s, p95 {true[1]:.0f} s "
            f"({time.time() - start:.0f} s)",
            flush=True,
        )
        table.append((label, "truth", true, np.concatenate(flags).mean(), None))
    n_int = args.n_sim * N_SYS
    se = np.sqrt(0.95 * 0.05 / n_int)
    lines = [
        f"{args.n_sim} simulated benchmarks x {N_SYS} systems per design; n_boot = n_draws "
        f"= {args.n_boot}; {time.time() - start:.0f} s",
        "",
        f"Coverage of nominal 95% intervals ({n_int} intervals per cell; Monte Carlo se "
        f"near 0.95: {se:.3f}) and median width / truth",
        "",
        f"{'design':16s} {'method':20s} {'p50 cover':>9s} {'p95 cover':>9s} "
        f"{'p50 width':>9s} {'p95 width':>9s}",
        "-" * 76,
    ]
    for label, m, cover, w, _n in table:
        if m == "truth":
            lines.append(f"{label:16s} {'(truth, seconds)':20s} {cover[0]:9.0f} {cover[1]:9.0f}")
            lines.append(f"{label:16s} the log-normal check flags {w:.3f} of the systems")
            lines.append("")
            continue
        lines.append(f"{label:16s} {m:20s} {cover[0]:9.3f} {cover[1]:9.3f} {w[0]:9.3f} {w[1]:9.3f}")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
