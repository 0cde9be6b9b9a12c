"""Peeking: a gate evaluated after every checkpoint, under the null.

1,000 runs of 50 checkpoints. Each checkpoint brings 20 new tasks drawn from a U-shaped
population (task rates Beta(0.5, 0.5)); candidate and baseline share each task's rate (no
improvement) and run 4 trials per task. After every checkpoint:

* the monitored gate (``bayeval.monitor``: betting confidence sequence on the per-task rate
  differences, one-sided, alpha = 0.05) fires when the sequence excludes 0 from below;
* the fixed-sample gate fires when the 95% interval of the mean difference over all tasks so
  far (mean +- 1.96 sd / sqrt(n)) excludes 0 from below (and, counted apart, on either side).

A second panel does the same for one system's success rate (one episode per task, null rate
0.5): the Beta-binomial mixture sequence against the Wilson interval. A last panel shows the
price: how often each gate fires within 50 checkpoints under a gain of 0.03 per task.

Run: ``python benchmarks/peeking.py``; writes ``benchmarks/results/peeking.txt``.
"""

from __future__ import annotations

import os
import time

import numpy as np

from bayeval.estimators import wilson_interval
from bayeval.monitor import betting_capital, rate_cs

RUNS, CHECKPOINTS, TASKS, TRIALS, ALPHA = 1000, 50, 20, 4, 0.05


def paired_differences(rng, gain=0.0):
    p = rng.beta(0.5, 0.5, (RUNS, CHECKPOINTS * TASKS))
    p_new = np.clip(p + gain, 0, 1)
    return (rng.binomial(TRIALS, p_new) - rng.binomial(TRIALS, p)) / TRIALS


def paired_gates(x):
    ends = np.arange(TASKS - 1, CHECKPOINTS * TASKS, TASKS)
    capital = betting_capital(x, 0.0, ci_prob=1 - ALPHA, bounds=(-1, 1), alternative="greater")[
        :, ends
    ]
    monitored = (capital >= 1 / ALPHA).any(axis=1)
    n = ends + 1
    mean = np.cumsum(x, axis=1)[:, ends] / n
    var = (np.cumsum(x**2, axis=1)[:, ends] - n * mean**2) / (n - 1)
    half = 1.96 * np.sqrt(var / n)
    above = (mean - half > 0).any(axis=1)
    either = ((mean - half > 0) | (mean + half < 0)).any(axis=1)
    last_only = mean[:, -1] - half[:, -1] > 0
    return monitored, above, either, last_only


def main():
    rng = np.random.default_rng(20240)
    start = time.perf_counter()
    out = [
        f"{RUNS} runs x {CHECKPOINTS} checkpoints x {TASKS} new tasks, {TRIALS} trials per "
        f"task; gates looked at after every checkpoint; alpha = {ALPHA}",
        "",
    ]
    se = np.sqrt(ALPHA * (1 - ALPHA) / RUNS)
    monitored, above, either, last_only = paired_gates(paired_differences(rng))
    out += [
        "paired difference, null (candidate = baseline on every task):",
        f"  monitored gate (betting CS, one-sided)           fires in {monitored.mean():.3f}"
        f" of runs (nominal <= {ALPHA}; Monte Carlo se {se:.3f})",
        f"  fixed-sample 95% interval, excludes 0 from below  fires in {above.mean():.3f}"
        f" (nominal 0.025 for one look)",
        f"  fixed-sample 95% interval, excludes 0 either side fires in {either.mean():.3f}"
        f" (nominal 0.05 for one look)",
        f"  fixed-sample interval at the last checkpoint only fires in {last_only.mean():.3f}",
        "",
    ]
    c = rng.binomial(1, rng.beta(0.5, 0.5, (RUNS, CHECKPOINTS * TASKS)))
    c = c.reshape(RUNS, CHECKPOINTS, TASKS).sum(axis=2)
    n = np.full_like(c, TASKS)
    lower, upper = rate_cs(c, n, ci_prob=1 - ALPHA)
    s, t = np.cumsum(c, axis=1), np.cumsum(n, axis=1)
    wl, wu = wilson_interval(s, t, ci_prob=1 - ALPHA)
    mixture = ((lower > 0.5) | (upper < 0.5)).any(axis=1).mean()
    wilson = ((np.asarray(wl) > 0.5) | (np.asarray(wu) < 0.5)).any(axis=1).mean()
    out += [
        "success rate, null p = 0.5 (one episode per task, tasks drawn at random):",
        f"  Beta-binomial mixture CS excludes 0.5 (either side)   in {mixture:.3f} of runs",
        f"  Wilson 95% interval excludes 0.5 (either side)        in {wilson:.3f}",
        "",
    ]
    monitored, above, _, last_only = paired_gates(paired_differences(rng, gain=0.03))
    out += [
        "price of validity, candidate task rates +0.03 (clipped at 1), power in 50 checkpoints:",
        f"  monitored gate fires in {monitored.mean():.3f}; fixed-sample interval at the "
        f"last checkpoint only (a single planned look) in {last_only.mean():.3f}",
        "",
        f"({time.perf_counter() - start:.1f} s)",
    ]
    text = "\n".join(out)
    print(text)
    with open(os.path.join(os.path.dirname(__file__), "results", "peeking.txt"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
