"""Power of the monitored paired gate: each betting strategy against one fixed test at the end.

2,000 simulated runs per row of 20 looks (checkpoints) of 20 new tasks each, 400 tasks in
all. Task rates are drawn from a U-shaped population, u ~ Beta(0.5, 0.5); the baseline
solves a task with probability (1 - d) u and the candidate with (1 - d) u + d, so the true
mean per-task difference is exactly d. Each system runs 1 or 4 trials per task; a task's
observation is its rate difference in [-1, 1]. One-sided, margin 0, alpha = 0.05.

On the same simulated data, per row:

* ``monitor_paired``'s capital (``betting_capital``, task by task) read after every look,
  firing the first time it reaches 1/alpha, for each ``bets``: ``mixture`` (the default),
  ``horizon`` tuned to 400 tasks, ``agrapa`` (plug-in Kelly) and ``prpl-eb`` (earlier
  versions' default);
* ``monitor_planned``, the group sequential gate for a planned 400 tasks, at the same 20
  looks: Lan-DeMets alpha spending of O'Brien-Fleming and of Pocock type (valid for any looks
  up to the planned tasks, not anytime-valid). It is computed here on the whole matrix of
  runs at once, and checked against ``monitor_planned`` itself on the first runs of each row;
* one fixed test at the end only: the mean difference over 400 tasks minus 1.645 standard
  errors exceeds 0 (a single planned look, not anytime-valid).

d = 0 measures the type-I error (nominal <= 0.05). Monte Carlo standard errors are binomial.

Run: ``python benchmarks/monitor_power.py``; writes ``benchmarks/results/monitor_power.txt``.
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy import stats

import bayeval as be
from bayeval.monitor import betting_capital, monitor_planned, spending_bounds

RUNS, LOOKS, TASKS, ALPHA = 2000, 20, 20, 0.05
EFFECTS = (0.0, 0.02, 0.037, 0.06, 0.1)
STRATEGIES = (
    ("mixture (default)", {"bets": "mixture"}),
    ("horizon = 400", {"bets": "horizon", "horizon": LOOKS * TASKS}),
    ("agrapa", {"bets": "agrapa"}),
    ("prpl-eb (before)", {"bets": "prpl-eb"}),
)


def differences(rng, effect, trials):
    u = rng.beta(0.5, 0.5, (RUNS, LOOKS * TASKS))
    p_old = (1 - effect) * u
    return (rng.binomial(trials, p_old + effect) - rng.binomial(trials, p_old)) / trials


def planned_test(x, ends, spending):
    """monitor_planned's decision on every run at once (one-sided, margin 0)."""
    n = ends + 1
    z = spending_bounds(n / n[-1], ALPHA, spending)
    crit = stats.t.isf(stats.norm.sf(z), n - 1)
    sums, squares = np.cumsum(x, axis=1)[:, ends], np.cumsum(x * x, axis=1)[:, ends]
    mean = sums / n
    se = np.sqrt((squares - n * mean**2) / (n - 1) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (mean / se >= crit).any(axis=1)


def check_planned(x, ends, spending, fired, runs=5):
    """The vectorised decision equals monitor_planned on the first runs."""
    for run in range(runs):
        stream = [
            (
                k,
                be.from_counts(
                    [np.where(x[run, a : b + 1] > 0, 1, 0), np.where(x[run, a : b + 1] < 0, 1, 0)],
                    trials=1,
                    systems=["new", "old"],
                    tasks=range(a, b + 1),
                ),
            )
            for k, (a, b) in enumerate(zip(ends - TASKS + 1, ends, strict=True))
        ]
        table = monitor_planned(stream, "new", "old", LOOKS * TASKS, spending=spending)
        assert bool(table["fired"].iloc[-1]) == bool(fired[run]), (spending, run)


def fixed_test(x):
    n = x.shape[1]
    return x.mean(axis=1) - 1.645 * x.std(axis=1, ddof=1) / np.sqrt(n) > 0


def main():
    rng = np.random.default_rng(20261205)
    start = time.perf_counter()
    ends = np.arange(TASKS - 1, LOOKS * TASKS, TASKS)
    names = [name for name, _ in STRATEGIES] + [
        "planned, O'Brien-Fleming",
        "planned, Pocock",
        "fixed test at the end",
    ]
    out = [
        f"{RUNS} runs per row; {LOOKS} looks x {TASKS} new tasks (400 tasks); task rates "
        "Beta(0.5, 0.5); true mean difference d; one-sided, margin 0, alpha = 0.05",
        "share of runs that fire within 20 looks (Monte Carlo se in brackets); "
        "'ratio' = monitored / fixed",
        "",
        f"{'trials':>6} {'d':>6}  " + "  ".join(f"{n:>22}" for n in names),
    ]
    for trials in (1, 4):
        for effect in EFFECTS:
            x = differences(rng, effect, trials)
            shares = []
            for _, how in STRATEGIES:
                capital = betting_capital(
                    x, 0.0, ci_prob=1 - ALPHA, bounds=(-1, 1), alternative="greater", **how
                )
                shares.append((capital[:, ends] >= 1 / ALPHA).any(axis=1).mean())
            for spending in ("obrien-fleming", "pocock"):
                fired = planned_test(x, ends, spending)
                if trials == 1:  # a difference in {-1, 0, 1} is two 0/1 outcomes exactly
                    check_planned(x, ends, spending, fired)
                shares.append(fired.mean())
            shares.append(fixed_test(x).mean())
            cells = []
            for share in shares:
                se = np.sqrt(share * (1 - share) / RUNS)
                ratio = f" r{share / shares[-1]:.2f}" if effect > 0 else "      "
                cells.append(f"{share:.3f} ({se:.3f}){ratio}")
            out.append(f"{trials:>6} {effect:>6.3f}  " + "  ".join(f"{c:>22}" for c in cells))
    # the type-I error of the gates cheap enough to run 20,000 times (10 x the runs above)
    out += [
        "",
        f"type-I error (d = 0) over {10 * RUNS} runs, same design (Monte Carlo se in brackets)",
        f"{'trials':>6}  " + "  ".join(f"{n:>24}" for n in names[len(STRATEGIES) :]),
    ]
    for trials in (1, 4):
        fired = {"obrien-fleming": [], "pocock": [], "fixed": []}
        for _ in range(10):
            x = differences(rng, 0.0, trials)
            for spending in ("obrien-fleming", "pocock"):
                fired[spending].append(planned_test(x, ends, spending))
            fired["fixed"].append(fixed_test(x))
        cells = []
        for rows in fired.values():
            share = np.concatenate(rows).mean()
            cells.append(f"{share:.4f} ({np.sqrt(share * (1 - share) / (10 * RUNS)):.4f})")
        out.append(f"{trials:>6}  " + "  ".join(f"{c:>24}" for c in cells))
    out += ["", f"({time.perf_counter() - start:.1f} s)"]
    text = "\n".join(out)
    print(text)
    with open(os.path.join(os.path.dirname(__file__), "results", "monitor_power.txt"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
