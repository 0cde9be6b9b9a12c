"""Coverage of the PPI++ twin for a paired difference when the judge favours one system.

Code: bayeval.analyses.ppi (``bayeval.bootstrap.ppi``).

Run:  python benchmarks/ppi_coverage.py [--n-sim 500] [--seed 0] [--out PATH]

Two systems on 80 shared tasks x 3 attempts. Task j has a difficulty z_j ~ N(0, 1) shared by
the systems (paired); system s succeeds with p_sj = expit(a_s + z_j), a_B = 0.7, a_A = 0.4.
The judge's verdict is right with sensitivity 0.95 on both systems but specificity 0.55 on B
and 0.90 on A: it passes B's failures far more often (the differential error a judge that
favours one system's style makes). 20% of the attempts are labelled at random. The truth is
the population difference E[p_B] - E[p_A] over z (a 20001-point grid).

Three 95% intervals per simulated data set, all with tasks as the unit:
``ppi++`` (judge and labels, tuned weight), ``labelled`` (labels only, lam = 0, the same
machinery) and ``judge`` (the judge's verdicts on every attempt, as if they were the truth).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import bayeval as be
from bayeval._io import write_text

SYSTEMS = {"B": (0.7, 0.95, 0.55), "A": (0.4, 0.95, 0.90)}
N_TASK, TRIALS, SHARE = 80, 3, 0.2


def truth() -> float:
    z = np.linspace(-8, 8, 20001)
    w = np.exp(-(z**2) / 2)
    w /= w.sum()
    rate = {s: float(w @ (1 / (1 + np.exp(-(a + z))))) for s, (a, _, _) in SYSTEMS.items()}
    return rate["B"] - rate["A"]


def simulate(rng) -> pd.DataFrame:
    z = rng.normal(0, 1, N_TASK)
    frames = []
    for name, (a, se, sp) in SYSTEMS.items():
        p = 1 / (1 + np.exp(-(a + z)))
        y = rng.random((N_TASK, TRIALS)) < p[:, None]
        j = np.where(y, rng.random(y.shape) < se, rng.random(y.shape) < 1 - sp)
        lab = rng.random(y.shape) < SHARE
        frames.append(
            pd.DataFrame(
                {
                    "system": name,
                    "task": np.repeat(np.arange(N_TASK), TRIALS),
                    "judge": j.ravel().astype(int),
                    "human": np.where(lab, y, np.nan).ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sim", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    target = truth()
    z = 1.959963984540054
    rows = {"ppi++": [], "labelled": [], "judge": []}
    for _ in range(args.n_sim):
        df = simulate(rng)
        data = be.from_frame(df, judge="judge", success="human", label_design="random")
        out = be.bootstrap.ppi(data, "B", "A")
        lo, hi = out["effect_interval"].values
        rows["ppi++"].append((out["effect_mean"].item(), lo, hi))
        zero = be.bootstrap.ppi(data, "B", "A", lam=0)
        lo, hi = zero["effect_interval"].values
        rows["labelled"].append((zero["effect_mean"].item(), lo, hi))
        # the judge's verdicts as the truth: task means of the verdicts, paired over tasks
        verdict = df.groupby(["system", "task"])["judge"].mean().unstack("system")
        diff = verdict["B"] - verdict["A"]
        se = diff.std(ddof=0) / np.sqrt(len(diff))
        rows["judge"].append((diff.mean(), diff.mean() - z * se, diff.mean() + z * se))
    lines = [
        "PPI++ coverage, paired difference B - A, judge favouring B (spec 0.55 vs 0.90)",
        f"{N_TASK} shared tasks x {TRIALS} attempts, {SHARE:.0%} labelled at random; "
        f"{args.n_sim} simulations, seed {args.seed}; truth {target:.4f}",
        "",
        f"{'interval':<10} {'coverage':>9} {'mc_se':>7} {'mean_width':>11} {'bias':>8}",
    ]
    for name, values in rows.items():
        v = np.array(values)
        cover = np.mean((v[:, 1] <= target) & (target <= v[:, 2]))
        mc = np.sqrt(cover * (1 - cover) / len(v))
        width = np.mean(v[:, 2] - v[:, 1])
        bias = np.mean(v[:, 0]) - target
        lines.append(f"{name:<10} {cover:>9.3f} {mc:>7.3f} {width:>11.4f} {bias:>+8.4f}")
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        write_text(args.out, text)
    return text


if __name__ == "__main__":
    sys.stdout.write(main())
