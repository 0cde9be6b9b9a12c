"""Speed of the judge-aware fit against the plain paired fit of the same attempts.

Code: bayeval.models.judge (``fit(data)`` on judged data), bayeval.models.logit_normal.

Run:  python benchmarks/judge_speed.py [--systems 6] [--tasks 300] [--share 0.1] [--seeds 0 1]

Six systems on 300 shared tasks x 1 attempt (task difficulty z_j ~ N(0, 1.5), system logits
spread over [-1, 1]); a judge with sensitivity 0.85-0.95 and specificity 0.75-0.95 differing by
system; ``--share`` of the attempts labelled at random. Each seed fits, at the defaults
(4 chains x 1000 draws), in the same process:

- ``judged``: the judge-aware model on the judged data (``from_frame(..., judge=, success=)``);
- ``paired``: the paired logit-normal model on the same attempts' true outcomes
  (``from_frame(..., success=)``, every attempt's label): the fit a user would run if every
  attempt were labelled, the baseline the judge-aware fit is held to (within 2x).

``--judges N`` adds N - 1 further judges on every attempt (:func:`more_judges`), fitted
jointly. Both fits are timed after one warm-up fit of each (compilation is not counted, as the other
speed benchmarks do), and their gates are printed beside the times, with the mean leapfrog
steps a kept draw: a fit's time is its steps times the cost of one (``benchmarks/judge_steps.py``
asks where the judge-aware fit's steps come from).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from scipy.special import expit

import bayeval as be
from bayeval.errors import BayevalWarning
from bayeval.inference import gate_failures


def simulate(n_systems: int, n_tasks: int, share: float, seed: int) -> pd.DataFrame:
    """One judged data set: true outcome, the judge's verdict, the label where labelled."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.5, n_tasks)
    alpha = np.linspace(-1.0, 1.0, n_systems)
    sens = np.linspace(0.85, 0.95, n_systems)
    spec = np.linspace(0.95, 0.75, n_systems)
    rows = []
    for s in range(n_systems):
        truth = rng.random(n_tasks) < expit(alpha[s] + z)
        verdict = np.where(truth, rng.random(n_tasks) < sens[s], rng.random(n_tasks) > spec[s])
        label = np.where(rng.random(n_tasks) < share, truth.astype(float), np.nan)
        rows.append(
            pd.DataFrame(
                {
                    "system": f"S{s}",
                    "task": np.arange(n_tasks),
                    "truth": truth.astype(int),
                    "verdict": verdict.astype(int),
                    "human": label,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def more_judges(df: pd.DataFrame, n_judges: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    """``df`` with ``n_judges - 1`` further judges' verdicts (``verdict2``, ...) on each attempt.

    Judge m has sensitivity 0.80 + 0.05 m and specificity 0.90 - 0.05 m on every system, each
    erring on its own; drawn from a stream apart from :func:`simulate`'s, so the first judge's
    data are the one-judge benchmark's.
    """
    rng = np.random.default_rng([seed, 1])
    out, names = df.copy(), ["verdict"]
    for m in range(2, n_judges + 1):
        truth = out["truth"].to_numpy() == 1
        sens, spec = 0.80 + 0.05 * m, 0.90 - 0.05 * m
        verdict = np.where(truth, rng.random(len(out)) < sens, rng.random(len(out)) > spec)
        out[f"verdict{m}"] = verdict.astype(int)
        names.append(f"verdict{m}")
    return out, names


def timed(data, seed: int):
    """Fit ``data`` at the defaults; (seconds, gates failed, model)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # gates: tabulated
        res = be.fit(data, seed=seed, progress=False)
    elapsed = time.perf_counter() - start
    failed = gate_failures(res.diagnostics, int(res.tree.attrs["chains"]))
    return elapsed, failed, res


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=6)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--judges", type=int, default=1, help="judges on every attempt")
    args = parser.parse_args()
    print(
        f"# python benchmarks/judge_speed.py --systems {args.systems} --tasks {args.tasks} "
        f"--share {args.share} --seeds {' '.join(map(str, args.seeds))} --judges {args.judges}"
    )

    def judged_data(df, seed):
        df, names = more_judges(df, args.judges, seed)
        judge = names[0] if len(names) == 1 else names
        return be.from_frame(df, judge=judge, success="human", label_design="random")

    warm = simulate(args.systems, args.tasks, args.share, 10_000)
    timed(be.from_frame(warm, success="truth"), 0)  # compile both before timing
    timed(judged_data(warm, 10_000), 0)
    print(
        "| seed | fit | model | s | ratio | leapfrog steps a draw | divergences | max r-hat "
        "| min bulk ESS | gates failed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        df = simulate(args.systems, args.tasks, args.share, seed)
        base_s, base_failed, base = timed(be.from_frame(df, success="truth"), seed)
        judge_s, judge_failed, res = timed(judged_data(df, seed), seed)
        for name, s, failed, r in (
            ("paired", base_s, base_failed, base),
            ("judged", judge_s, judge_failed, res),
        ):
            d = r.diagnostics
            steps = float(r.tree["sample_stats"]["n_steps"].mean())
            print(
                f"| {seed} | {name} | {r.model} | {s:.1f} | {s / base_s:.2f} | {steps:.1f} | "
                f"{d.get('divergences', '-')} | {d.get('max_rhat', float('nan')):.3f} | "
                f"{d.get('min_ess_bulk', float('nan')):.0f} | {', '.join(failed) or 'none'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
