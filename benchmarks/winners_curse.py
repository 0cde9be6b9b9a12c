"""The winner's curse with known truth: m equally good checkpoints, pick the best observed.

Each run draws ``m`` checkpoints with the same true pass@1 on the same tasks (one episode per
task, as a training run's checkpoint evaluation), fits the paired ``logit_normal`` model (which
treats three or more systems as draws from a population of systems, ``sigma_system``) and
reads :meth:`bayeval.Results.winner`. Over the runs it reports the naive score's bias, the
posterior mean's bias and the coverage of the posterior interval of the picked checkpoint's
value over these tasks, each with its Monte Carlo standard error.

Usage::

    python benchmarks/winners_curse.py --runs 500 [--m 8 --tasks 160 --p 0.85]

Writes ``benchmarks/results/winners_curse.txt``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

import bayeval as be


def one_run(seed: int, m: int, tasks: int, p: float, draws: int, priors=None) -> dict:
    rng = np.random.default_rng([seed, 11])
    successes = (rng.random((m, tasks)) < p).astype(int)
    data = be.from_counts(successes.tolist(), trials=1, systems=[f"ck{i}" for i in range(m)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # one trial per task: said above
        res = be.fit(
            data,
            model="logit_normal",
            draws=draws,
            chains=2,
            seed=seed,
            progress=False,
            priors=priors,
        )
        win = res.winner(estimand="population", n_replicates=100)
    value = win["value"].values
    lower, upper = np.quantile(value, [0.025, 0.975])
    return {
        "naive": float(win["naive_score"]),
        "posterior": float(value.mean()),
        "covered": bool(lower <= p <= upper),
        "divergences": res.diagnostics["divergences"],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--m", type=int, default=8)
    parser.add_argument("--tasks", type=int, default=160)
    parser.add_argument("--p", type=float, default=0.85)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "winners_curse.txt")
    )
    parser.add_argument(
        "--sigma-system",
        type=float,
        default=None,
        help="HalfNormal scale of the prior on sigma_system (default: the model's)",
    )
    args = parser.parse_args()
    priors = None if args.sigma_system is None else {"sigma_system": args.sigma_system}
    start = time.time()
    rows = [
        one_run(seed, args.m, args.tasks, args.p, args.draws, priors) for seed in range(args.runs)
    ]
    naive = np.array([r["naive"] for r in rows]) - args.p
    post = np.array([r["posterior"] for r in rows]) - args.p
    covered = np.array([r["covered"] for r in rows])
    se = lambda x: x.std(ddof=1) / np.sqrt(len(x))  # noqa: E731
    lines = [
        f"winner's curse: {args.m} equally good checkpoints, true pass@1 {args.p}, "
        f"{args.tasks} episodes each, {args.runs} runs ({time.time() - start:.0f} s), "
        f"sigma_system ~ HalfNormal({args.sigma_system or 'default'})",
        f"naive score of the pick minus truth:     {naive.mean():+.4f} (MC se {se(naive):.4f})",
        f"posterior mean of the pick minus truth:  {post.mean():+.4f} (MC se {se(post):.4f})",
        f"95% interval of the pick covers truth:   {covered.mean():.3f} "
        f"(MC se {np.sqrt(covered.mean() * (1 - covered.mean()) / len(covered)):.3f})",
        f"runs with divergences: {sum(r['divergences'] > 0 for r in rows)}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
