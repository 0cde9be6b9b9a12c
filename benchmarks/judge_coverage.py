"""Coverage of the judge-aware model's effects beside PPI++, the judge alone and the labels alone.

Code: bayeval.models.judge (``fit(data)`` on judged data), bayeval.analyses.ppi.

Run:  python benchmarks/judge_coverage.py [--n-sim 100] [--seed 0] [--draws 500]
                                           [--part sim|real|both] [--out-dir DIR]

Simulation (``--part sim``). Two systems on 100 shared tasks x 3 attempts. Task j has a
difficulty z_j ~ N(0, 1) shared by the systems (paired); system s succeeds with
p_sj = expit(a_s + z_j), a_B = 0.7, a_A = 0.4. The judge's sensitivity is 0.9 on both systems,
its specificity 0.6 on B and 0.9 on A: it passes B's failures far more often. 20% of the
attempts are labelled at random. Two truths: the population effect E[p_B - p_A] over z
(a 20001-point grid) and the tasks effect, the mean of p_Bj - p_Aj over the simulated tasks.

95% intervals per simulated data set: the judge-aware model's ``compare`` (estimand "tasks"
against the tasks truth, "population" against the population truth; 2 chains x ``--draws``
draws after as many warm-up draws), ``ppi++`` (``be.bootstrap.ppi``, tasks as the unit),
``labelled`` (the labels alone: PPI++ with lam = 0) and ``judge`` (the verdicts as if they were
the truth: a paired t-interval of the task means of the verdicts); the last three against
both truths.

Real data (``--part real``): the bundled ``judging_the_judges`` (9 systems x 395 TriviaQA
questions, a human label on every answer). 80% of the labels are masked at random, the
judge-aware model is fitted with each of two judges (GPT-4 Turbo; the lexical "contains"
match, a poor judge), and each system's pass@1 interval (estimand "tasks") is compared with its
all-labels rate, the truth; PPI++ beside it.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bayeval as be
from bayeval._io import write_text
from bayeval.errors import BayevalWarning

SYSTEMS = {"B": (0.7, 0.9, 0.6), "A": (0.4, 0.9, 0.9)}
N_TASK, TRIALS, SHARE = 100, 3, 0.2
Z = 1.959963984540054


def population_truth() -> float:
    z = np.linspace(-8, 8, 20001)
    w = np.exp(-(z**2) / 2)
    w /= w.sum()
    rate = {s: float(w @ (1 / (1 + np.exp(-(a + z))))) for s, (a, _, _) in SYSTEMS.items()}
    return rate["B"] - rate["A"]


def simulate(rng) -> tuple[pd.DataFrame, float]:
    """One judged data set and its tasks truth (the mean of p_B - p_A over its tasks)."""
    z = rng.normal(0, 1, N_TASK)
    frames, rates = [], {}
    for name, (a, se, sp) in SYSTEMS.items():
        p = 1 / (1 + np.exp(-(a + z)))
        rates[name] = p
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
    return pd.concat(frames, ignore_index=True), float(np.mean(rates["B"] - rates["A"]))


def _interval(ds) -> tuple[float, float, float]:
    lo, hi = ds["effect_interval"].values
    return float(ds["effect_mean"]), float(lo), float(hi)


def simulation(n_sim: int, seed: int, draws: int) -> str:
    rng = np.random.default_rng(seed)
    pop = population_truth()
    rows: dict[str, list] = {k: [] for k in ("model_tasks", "model_population")}
    rows.update({k: [] for k in ("ppi++", "labelled", "judge")})
    tasks_truths, gated, seconds = [], 0, []
    for i in range(n_sim):
        df, tasks_truth = simulate(rng)
        tasks_truths.append(tasks_truth)
        data = be.from_frame(df, judge="judge", success="human", label_design="random")
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BayevalWarning)
            res = be.fit(data, draws=draws, tune=draws, chains=2, seed=seed + i, progress=False)
        seconds.append(time.perf_counter() - start)
        gated += any("gates" in str(w.message) for w in caught)
        rows["model_tasks"].append(_interval(res.compare("B", "A", estimand="tasks")))
        rows["model_population"].append(_interval(res.compare("B", "A", estimand="population")))
        rows["ppi++"].append(_interval(be.bootstrap.ppi(data, "B", "A")))
        rows["labelled"].append(_interval(be.bootstrap.ppi(data, "B", "A", lam=0)))
        verdict = df.groupby(["system", "task"])["judge"].mean().unstack("system")
        diff = verdict["B"] - verdict["A"]
        se = diff.std(ddof=0) / np.sqrt(len(diff))
        rows["judge"].append((diff.mean(), diff.mean() - Z * se, diff.mean() + Z * se))
    tasks_truths_arr = np.array(tasks_truths)
    lines = [
        "Judge-aware model: coverage of the effect B - A, judge favouring B (spec 0.6 vs 0.9)",
        f"{N_TASK} shared tasks x {TRIALS} attempts, {SHARE:.0%} labelled at random; "
        f"{n_sim} simulations, seed {seed}; fits of 2 chains x {draws} draws ({draws} warm-up), "
        f"median {np.median(seconds):.1f} s a fit; {gated} of {n_sim} fits failed a "
        "convergence gate",
        f"population truth {pop:.4f}; tasks truth varies by data set (mean "
        f"{tasks_truths_arr.mean():.4f})",
        "",
        f"{'interval':<17} {'truth':<11} {'coverage':>9} {'mc_se':>7} {'mean_width':>11} "
        f"{'bias':>8}",
    ]
    for name, values in rows.items():
        v = np.array(values)
        truths = {"model_tasks": ["tasks"], "model_population": ["population"]}.get(
            name, ["tasks", "population"]
        )
        for which in truths:
            target = tasks_truths_arr if which == "tasks" else np.full(len(v), pop)
            cover = np.mean((v[:, 1] <= target) & (target <= v[:, 2]))
            mc = np.sqrt(cover * (1 - cover) / len(v))
            width = np.mean(v[:, 2] - v[:, 1])
            bias = np.mean(v[:, 0] - target)
            lines.append(
                f"{name:<17} {which:<11} {cover:>9.3f} {mc:>7.3f} {width:>11.4f} {bias:>+8.4f}"
            )
    return "\n".join(lines) + "\n"


def real(seed: int, draws: int) -> str:
    df = pd.read_csv(be.datasets.path("judging_the_judges"))
    truth = df.groupby("system")["human"].mean()
    rng = np.random.default_rng(seed)
    masked = df.assign(human=np.where(rng.random(len(df)) < 0.2, df["human"], np.nan))
    lines = [
        "Judge-aware model on judging_the_judges (TriviaQA, 9 systems x 395 questions x 1 answer)",
        f"80% of the human labels masked at random (seed {seed}): "
        f"{int(masked['human'].notna().sum())} labelled of {len(df)}; fits of 2 chains x "
        f"{draws} draws ({draws} warm-up); truth = each system's all-labels rate",
    ]
    for judge in ("judge_gpt4", "judge_contains"):
        cols = ["system", "task", judge, "human"]
        data = be.from_frame(masked[cols], judge=judge, success="human", label_design="random")
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BayevalWarning)
            res = be.fit(data, draws=draws, tune=draws, chains=2, seed=seed, progress=False)
        took = time.perf_counter() - start
        gates = [str(w.message)[:120] for w in caught if "gates" in str(w.message)]
        summ = res.summary(estimands=["tasks"]).set_index("system")
        lines += [
            "",
            f"judge {judge}: fit {took:.0f} s; gates: {gates[0] if gates else 'passed'}",
            f"{'system':<17} {'truth':>6} {'judge':>6} {'labels':>6} {'model':>6} "
            f"{'model 95%':>15} {'cover':>5} {'ppi++ 95%':>15} {'cover':>5}",
        ]
        judged = res.judge()
        covered, ppi_covered = 0, 0
        for system in res.systems:
            row = summ.loc[system]
            lo, hi = float(row["lower"]), float(row["upper"])
            ppi = be.bootstrap.ppi(data, system)
            plo, phi = (float(x) for x in ppi["estimate_interval"].values.ravel()[:2])
            t = float(truth[system])
            hit, phit = lo <= t <= hi, plo <= t <= phi
            covered += hit
            ppi_covered += phit
            lines.append(
                f"{system:<17} {t:>6.3f} "
                f"{float(judged['judge_rate'].sel(system=system).item()):>6.3f} "
                f"{float(judged['labelled_rate'].sel(system=system).item()):>6.3f} "
                f"{float(row['mean']):>6.3f} [{lo:.3f}, {hi:.3f}] {'yes' if hit else 'NO':>5} "
                f"[{plo:.3f}, {phi:.3f}] {'yes' if phit else 'NO':>5}"
            )
        lines.append(
            f"covered: model {covered} of {len(res.systems)}, ppi++ {ppi_covered} of "
            f"{len(res.systems)}"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sim", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--part", choices=("sim", "real", "both"), default="both")
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    text = ""
    if args.part in ("sim", "both"):
        part = simulation(args.n_sim, args.seed, args.draws)
        if args.out_dir is not None:
            write_text(args.out_dir / "judge_coverage.txt", part)
        text += part
    if args.part in ("real", "both"):
        part = real(args.seed, args.draws)
        if args.out_dir is not None:
            write_text(args.out_dir / "judge_real_data.txt", part)
        text += part
    return text


if __name__ == "__main__":
    sys.stdout.write(main())
