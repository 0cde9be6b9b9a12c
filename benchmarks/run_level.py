"""Training seeds as a level, with known truth: two recipes, several runs each.

Each replicate draws two recipes' mean logits, ``n_runs`` training runs per recipe with run
effects ``N(0, sigma_run)``, task effects shared by every run, a task-by-run effect and binomial
trials; fits ``logit_normal`` (its run level, ``sigma_run``) and reports over the replicates:

* coverage of the central 90% interval of ``sigma_run``;
* coverage of the 95% interval of the recipe effect with ``runs="new"`` (the true difference
  of the recipes' pass@1 for a new run on a new task) and with ``runs="observed"`` (the true
  difference of the mean over each recipe's runs of their checkpoints' pass@1 on a new task),
  and the ratio of their widths;
* the noise decomposition's run component (posterior and method of moments) when the true
  run spread is zero (on five times the tasks, four trials each).

Usage::

    python benchmarks/run_level.py --replicates 40

Writes ``benchmarks/results/run_level.txt``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

import bayeval as be

SIGMA_TASK, SIGMA_TASK_RUN = 1.0, 0.3
_Z = np.random.default_rng(99).standard_normal(400_000)


def pass1(location, extra_sd) -> float:
    """E expit(location + s Z), by Monte Carlo with a fixed normal sample.

    Here s^2 is the task spreads plus ``extra_sd^2``.
    """
    s = np.sqrt(SIGMA_TASK**2 + SIGMA_TASK_RUN**2 + extra_sd**2)
    return float(special.expit(location + s * _Z).mean())


def simulate(seed, sigma_run, n_runs, n_tasks, trials):
    rng = np.random.default_rng([seed, 21])
    recipe = {"A": rng.normal(-0.2, 0.5), "B": rng.normal(0.2, 0.5)}
    e = rng.normal(0, SIGMA_TASK, n_tasks)
    rows, truth_observed = [], {}
    for name, a in recipe.items():
        values = []
        for run in range(n_runs):
            a_run = a + rng.normal(0, sigma_run)
            values.append(pass1(a_run, 0.0))
            p = special.expit(a_run + e + rng.normal(0, SIGMA_TASK_RUN, n_tasks))
            c = rng.binomial(trials, p)
            for j in range(n_tasks):
                rows += [
                    {"recipe": name, "seed": run, "task": f"t{j}", "success": int(i < c[j])}
                    for i in range(trials)
                ]
        truth_observed[name] = float(np.mean(values))
    truth_new = {name: pass1(a, sigma_run) for name, a in recipe.items()}
    data = be.from_frame(pd.DataFrame(rows), system="recipe", run="seed")
    return data, truth_new["B"] - truth_new["A"], truth_observed["B"] - truth_observed["A"]


def one(seed, sigma_run, args, tasks=None, trials=None) -> dict:
    data, new_truth, observed_truth = simulate(
        seed, sigma_run, args.runs, tasks or args.tasks, trials or args.trials
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        res = be.fit(
            data,
            model="logit_normal",
            draws=args.draws,
            tune=args.draws,
            chains=2,
            seed=seed,
            progress=False,
        )
    post = res.tree["posterior"]["sigma_run"].values.ravel()
    lo, hi = np.quantile(post, [0.05, 0.95])
    out = {
        "sigma_covered": lo <= sigma_run <= hi if sigma_run > 0 else None,
        "divergences": int(res.diagnostics.get("divergences", 0)),
    }
    for runs, truth in (("new", new_truth), ("observed", observed_truth)):
        interval = res.compare("B", "A", runs=runs)["effect_interval"].values
        out[f"{runs}_covered"] = interval[0] <= truth <= interval[1]
        out[f"{runs}_width"] = float(interval[1] - interval[0])
    if sigma_run == 0:
        out["run_var_posterior"] = float(res.noise(n_draws=200)["run_var"].mean())
        out["run_var_moments"] = float(be.bootstrap.noise(data, n_boot=200)["run_var"].mean())
    return out


def rate(values) -> str:
    values = np.asarray(values, float)
    p = values.mean()
    return f"{p:.3f} ± {np.sqrt(p * (1 - p) / len(values)):.3f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=40)
    parser.add_argument("--sigma-run", type=float, default=0.3)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--draws", type=int, default=500)
    args = parser.parse_args()
    start = time.time()
    rows = [one(seed, args.sigma_run, args) for seed in range(args.replicates)]
    # the zero-spread check on a larger benchmark per checkpoint (5x the tasks, 4 trials): with
    # 40 tasks x 2 trials a checkpoint's logit has a standard error near 0.25, which hides a
    # seed spread of 0.3 or of 0 alike
    zero = [
        one(1000 + seed, 0.0, args, tasks=5 * args.tasks, trials=4)
        for seed in range(max(5, args.replicates // 8))
    ]
    elapsed = time.time() - start
    df = pd.DataFrame(rows)
    run_effects = np.random.default_rng(1).normal(0, args.sigma_run, 2000)
    run_spread = np.var([pass1(a, 0) for a in run_effects])
    lines = [
        f"run level: 2 recipes x {args.runs} runs x {args.tasks} tasks x {args.trials} trials, "
        f"sigma_run = {args.sigma_run}, sigma_task = {SIGMA_TASK}, task-by-run sd "
        f"{SIGMA_TASK_RUN}; {args.replicates} replicates, 2 x {args.draws} draws "
        f"({elapsed:.0f} s)",
        f"sigma_run 90% interval covers:           {rate(df['sigma_covered'])}",
        f"recipe effect, runs='new', 95% covers:    {rate(df['new_covered'])}",
        f"recipe effect, runs='observed', covers:   {rate(df['observed_covered'])}",
        f"width ratio new / observed (median):      "
        f"{np.median(df['new_width'] / df['observed_width']):.2f}",
        f"fits with divergences:                    {(df['divergences'] > 0).mean():.2f}",
        f"zero run spread ({len(zero)} replicates, {5 * args.tasks} tasks x 4 trials): "
        f"run_var posterior mean "
        f"{np.mean([z['run_var_posterior'] for z in zero]):.5f}, method of moments "
        f"{np.mean([z['run_var_moments'] for z in zero]):.5f} (score scale; with "
        f"sigma_run = {args.sigma_run} a run adds about "
        f"{run_spread:.5f})",
    ]
    text = "\n".join(lines)
    print(text)
    out = Path(__file__).parent / "results" / "run_level.txt"
    out.write_text(text + "\n")


if __name__ == "__main__":
    main()
