"""The partial-credit fit beside the binary fit of the same data, at leaderboard scale.

LiveBench-shaped scores (``livebench_shape.py``: 1,136 questions in 18 categories, eight of
them graded on [0, 1], one attempt per system and question) of 2, 13, 25 and 41 systems. Each
row fits, in the same run and one after the other, with the defaults (4 chains, nutpie):

* ``fractional``: ``be.fit(data, model="fractional")`` on the scores;
* ``zoib`` (``--zoib``, up to 2 systems by default): the zero-one-inflated Beta model;
* ``binary``: ``be.fit(data, model="logit_normal")`` on the same attempts graded 0/1 at full
  credit (the binary paired fit the issue measures against).

Each fit is warm (a small fit of each model first compiles and caches the kernels). Printed:
wall seconds, the ratio to the binary fit, divergences, the largest r-hat and the smallest
bulk and tail ESS of the gated parameters, the gates failed, the load average at the start,
and the tasks estimand's error against the truth (the mean over the questions of each cell's
expected score) with the share of systems whose 95% interval covers it.

``--fit-seeds`` refits the fractional model at further sampler seeds on the same data (the
gates in k of 5 seeds); the binary fit runs at the first only.

    python benchmarks/fractional_speed.py [--systems 2 13 25 41] [--seed 0] [--fit-seeds 0 1 2]
                                          [--out benchmarks/results/fractional_speed.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np

import bayeval as be
from bayeval.inference import gate_failures

sys.path.insert(0, str(Path(__file__).parent))
from livebench_shape import livebench_shaped  # noqa: E402


def fit_row(label, data, model, truth, seed):
    load = os.getloadavg()[0]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = be.fit(data, model=model, seed=seed, log_likelihood=False)
    seconds = time.perf_counter() - start
    diag = json.loads(res.tree.attrs["diagnostics"])
    divergences = int(res.tree["sample_stats"]["diverging"].sum())
    draws = (
        res.pass_at_k(estimand="tasks")
        if model == "logit_normal"
        else res.mean_score(estimand="tasks")
    )
    mean = draws.mean(("chain", "draw")).values
    lo, hi = draws.quantile([0.025, 0.975], dim=("chain", "draw")).values
    row = {
        "fit": label,
        "seconds": seconds,
        "load": load,
        "divergences": divergences,
        "max_rhat": diag["max_rhat"],
        "min_ess_bulk": diag["min_ess_bulk"],
        "min_ess_tail": diag["min_ess_tail"],
        "gates_failed": ", ".join(gate_failures(diag, chains=4)),
    }
    if truth is not None:
        row["max_error"] = float(np.max(np.abs(mean - truth)))
        row["covered"] = float(np.mean((lo <= truth) & (truth <= hi)))
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, nargs="+", default=[2, 13, 25, 41])
    parser.add_argument("--zoib", type=int, default=2, help="fit zoib up to this many systems")
    parser.add_argument("--seed", type=int, default=0, help="the data's seed")
    parser.add_argument(
        "--fit-seeds", type=int, nargs="+", default=None, help="sampler seeds (default: --seed)"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    lines = [
        f"# fractional_speed.py, {date.today()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores; LiveBench-shaped, 1,136 questions x 1 attempt, 4 chains, "
        "default draws, warm",
        "systems | fit | seconds | x binary | load | divergences | max r-hat | min bulk ESS | "
        "min tail ESS | gates failed | tasks: max error | tasks: covered",
    ]
    print(lines[0], flush=True)
    fit_seeds = args.fit_seeds or [args.seed]
    # 12 systems x 10 questions a category compile the task-latent form, 2 the collapsed one
    many, _ = livebench_shaped(12, seed=10**6, n_tasks=180)
    warm, _ = livebench_shaped(2, seed=10**6, n_tasks=60)
    warm["ok"] = warm.score == 1
    warmups = [
        (many, {"score": "score"}, "fractional"),
        (warm, {"score": "score"}, "fractional"),
        (warm, {"score": "score"}, "zoib"),
        (warm, {"success": "ok"}, "logit_normal"),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for frame, column, model in warmups:
            data = be.from_frame(frame, cluster="category", **column)
            be.fit(data, model=model, draws=50, tune=50, chains=1, seed=0)
    for n_systems in args.systems:
        df, truth = livebench_shaped(n_systems, args.seed)
        df["ok"] = df.score == 1
        scores = be.from_frame(df, score="score", cluster="category")
        binary = be.from_frame(df, success="ok", cluster="category")
        truth_binary = None  # the 0/1 grades' truth is not the mean score's
        fits = [
            (
                f"fractional (seed {k})" if len(fit_seeds) > 1 else "fractional",
                scores,
                "fractional",
                truth.values,
                k,
            )
            for k in fit_seeds
        ]
        if n_systems <= args.zoib:
            fits.append(("zoib", scores, "zoib", truth.values, fit_seeds[0]))
        fits.append(("binary", binary, "logit_normal", truth_binary, fit_seeds[0]))
        rows = [fit_row(label, data, model, t, k) for label, data, model, t, k in fits]
        base = rows[-1]["seconds"]
        for row in rows:
            text = (
                f"{n_systems} | {row['fit']} | {row['seconds']:.1f} | "
                f"{row['seconds'] / base:.2f} | {row['load']:.1f} | {row['divergences']} | "
                f"{row['max_rhat']:.3f} | {row['min_ess_bulk']:.0f} | {row['min_ess_tail']:.0f} | "
                f"{row['gates_failed'] or 'none'} | "
                + (
                    f"{row['max_error']:.4f} | {row['covered']:.2f}"
                    if "covered" in row
                    else "- | -"
                )
            )
            lines.append(text)
            print(text, flush=True)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
