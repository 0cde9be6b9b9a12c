"""Coverage of the judge-aware model's effects beside PPI++, the judge alone and the labels alone.

Code: bayeval.models.judge (``fit(data)`` on judged data), bayeval.analyses.ppi.

Run:  python benchmarks/judge_coverage.py [--n-sim 100] [--seed 0] [--draws 500]
                                           [--part sim|real|both] [--scenario NAME]
                                           [--out-dir DIR]

Simulation (``--part sim``), one scenario of :data:`SCENARIOS` at a time. Task j has a
difficulty z_j ~ N(0, 1) shared by the systems (paired); system s succeeds with
p_sj = expit(a_s + z_j). The judge's sensitivity and specificity are per system (and, in the
misspecified ``difficulty`` scenario, move with z_j). A share of the attempts is labelled at
random. The first two systems are compared (first minus second). Two truths: the population
effect E[p_1 - p_2] over z (a 20001-point grid) and the tasks effect, the mean of
p_1j - p_2j over the simulated tasks. Scenarios: ``lenient`` (2 systems x 100 tasks x 3
attempts, 20% labelled, the judge's specificity 0.6 on B and 0.9 on A: it passes B's failures
far more often), ``six`` (6 x 300 x 1, 10%, sensitivities and specificities 0.70-0.95 by
system; the two extremes compared), ``six-drawn`` (as ``six``, with each system's sensitivity
and specificity drawn uniformly on 0.70-0.95 afresh per data set: a typical pair compared),
``correlated`` (3 x 200 x 1, 10%, three judges: two LLM judges fooled together by the same
failures, far more often on B, and a lexical one; fitted jointly and the first alone),
``sparse`` (4 x 200 x 1, 5%) and ``difficulty`` (2 x 200 x 1, 10%, the judge's logits moving
by 0.8 z_j: more errors on hard tasks, which the model does not describe).

95% intervals per simulated data set: the judge-aware model's ``compare`` (estimand "tasks"
against the tasks truth, "population" against the population truth; 2 chains x ``--draws``
draws after as many warm-up draws), ``ppi++`` (``be.bootstrap.ppi``, tasks as the unit),
``labelled`` (the labels alone: PPI++ with lam = 0) and ``judge`` (the verdicts as if they were
the truth: a paired t-interval of the task means of the verdicts); the last three against
both truths.

Real data (``--part real``): the bundled ``judging_the_judges`` (9 systems x 395 TriviaQA
questions, a human label on every answer). 80% of the labels are masked at random, the
judge-aware model is fitted with each of two judges (GPT-4 Turbo; the lexical "contains"
match, a poor judge) and with all three judges jointly (GPT-4 Turbo, Llama-3 70B and
"contains"), and each system's pass@1 interval (estimand "tasks") is compared with its
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

Z = 1.959963984540054

#: The bundled data's three judges, fitted jointly in the real-data part.
JOINT = ["judge_gpt4", "judge_llama3_70b", "judge_contains"]

#: The simulated scenarios: systems ``name -> (a, se, sp)`` (the first two compared, first
#: minus second), tasks, attempts a cell, the labelled share, and ``slope``: the judge's
#: sensitivity and specificity logits move by ``slope * z_j`` with the task's difficulty (a
#: judge that errs more on hard tasks, which the model does not describe) when non-zero.
SCENARIOS = {
    "lenient": dict(
        systems={"B": (0.7, 0.9, 0.6), "A": (0.4, 0.9, 0.9)},
        tasks=100,
        trials=3,
        share=0.2,
        slope=0.0,
    ),
    "six": dict(
        systems={
            "S5": (0.6, 0.70, 0.95),
            "S0": (0.3, 0.95, 0.70),
            "S1": (-0.6, 0.90, 0.75),
            "S2": (0.0, 0.85, 0.80),
            "S3": (0.9, 0.80, 0.85),
            "S4": (-0.3, 0.75, 0.90),
        },
        tasks=300,
        trials=1,
        share=0.1,
        slope=0.0,
    ),
    # the six systems' judge errors drawn afresh per data set, so the compared pair is a
    # typical one rather than the two extremes
    "six-drawn": dict(
        systems={
            "S0": (0.3, None, None),
            "S1": (-0.6, None, None),
            "S2": (0.0, None, None),
            "S3": (0.9, None, None),
            "S4": (-0.3, None, None),
            "S5": (0.6, None, None),
        },
        tasks=300,
        trials=1,
        share=0.1,
        slope=0.0,
        drawn=(0.70, 0.95),
    ),
    # three judges on every attempt: "judge" and "judge2" (two LLM judges) are fooled together
    # by a plausible wrong answer of a true failure, with the share ``fooled`` per system, and
    # err independently otherwise; "lexical" errs on its own (se 0.75, sp 0.97)
    "correlated": dict(
        systems={"B": (0.3, 0.9, 0.9), "A": (0.3, 0.9, 0.9), "C": (0.0, 0.9, 0.9)},
        tasks=200,
        trials=1,
        share=0.1,
        slope=0.0,
        fooled={"B": 0.3, "A": 0.05, "C": 0.05},
    ),
    "sparse": dict(
        systems={
            "B": (0.2, 0.80, 0.90),
            "A": (0.2, 0.95, 0.75),
            "C": (-0.5, 0.85, 0.85),
            "D": (0.5, 0.90, 0.80),
        },
        tasks=200,
        trials=1,
        share=0.05,
        slope=0.0,
    ),
    "difficulty": dict(
        systems={"B": (0.5, 0.9, 0.8), "A": (0.2, 0.9, 0.9)},
        tasks=200,
        trials=1,
        share=0.1,
        slope=0.8,
    ),
}


def population_truth(spec) -> float:
    z = np.linspace(-8, 8, 20001)
    w = np.exp(-(z**2) / 2)
    w /= w.sum()
    first, second = list(spec["systems"])[:2]
    rate = {s: float(w @ (1 / (1 + np.exp(-(a + z))))) for s, (a, _, _) in spec["systems"].items()}
    return rate[first] - rate[second]


def simulate(rng, spec) -> tuple[pd.DataFrame, float]:
    """One judged data set and its tasks truth (the mean of the first two systems' gap)."""
    n_task, trials, share = spec["tasks"], spec["trials"], spec["share"]
    z = rng.normal(0, 1, n_task)
    frames, rates = [], {}
    for name, (a, se, sp) in spec["systems"].items():
        if "drawn" in spec:  # each system's sensitivity and specificity drawn independently
            se, sp = rng.uniform(*spec["drawn"], size=2)
        p = 1 / (1 + np.exp(-(a + z)))
        rates[name] = p
        # the judge errs more on hard tasks (small z) when slope > 0
        se_j = 1 / (1 + np.exp(-(np.log(se / (1 - se)) + spec["slope"] * z)))[:, None]
        sp_j = 1 / (1 + np.exp(-(np.log(sp / (1 - sp)) + spec["slope"] * z)))[:, None]
        y = rng.random((n_task, trials)) < p[:, None]
        j = np.where(y, rng.random(y.shape) < se_j, rng.random(y.shape) < 1 - sp_j)
        lab = rng.random(y.shape) < share
        columns = {
            "system": name,
            "task": np.repeat(np.arange(n_task), trials),
            "judge": j.ravel().astype(int),
            "human": np.where(lab, y, np.nan).ravel(),
        }
        if "fooled" in spec:  # both LLM judges pass the same fooling failures
            fooled = ~y & (rng.random(y.shape) < spec["fooled"][name])
            second = np.where(y, rng.random(y.shape) < se_j, rng.random(y.shape) < 1 - sp_j)
            lexical = np.where(y, rng.random(y.shape) < 0.75, rng.random(y.shape) < 0.03)
            columns["judge"] = (j | fooled).ravel().astype(int)
            columns["judge2"] = (second | fooled).ravel().astype(int)
            columns["lexical"] = lexical.ravel().astype(int)
        frames.append(pd.DataFrame(columns))
    first, second = list(spec["systems"])[:2]
    return pd.concat(frames, ignore_index=True), float(np.mean(rates[first] - rates[second]))


def _interval(ds) -> tuple[float, float, float]:
    lo, hi = ds["effect_interval"].values
    return float(ds["effect_mean"]), float(lo), float(hi)


def simulation(n_sim: int, seed: int, draws: int, scenario: str = "lenient") -> str:
    spec = SCENARIOS[scenario]
    first, second = list(spec["systems"])[:2]
    rng = np.random.default_rng(seed)
    pop = population_truth(spec)
    rows: dict[str, list] = {k: [] for k in ("model_tasks", "model_population")}
    rows.update({k: [] for k in ("ppi++", "labelled", "judge")})
    tasks_truths, gated, seconds = [], 0, []
    for i in range(n_sim):
        df, tasks_truth = simulate(rng, spec)
        tasks_truths.append(tasks_truth)
        columns = ["judge", "judge2", "lexical"] if "fooled" in spec else "judge"
        data = be.from_frame(df, judge=columns, success="human", label_design="random")
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BayevalWarning)
            res = be.fit(data, draws=draws, tune=draws, chains=2, seed=seed + i, progress=False)
        seconds.append(time.perf_counter() - start)
        gated += any("gates" in str(w.message) for w in caught)
        rows["model_tasks"].append(_interval(res.compare(first, second, estimand="tasks")))
        rows["model_population"].append(
            _interval(res.compare(first, second, estimand="population"))
        )
        if "fooled" in spec:  # the first judge alone, beside the three jointly
            alone = be.from_frame(
                df.drop(columns=["judge2", "lexical"]),
                judge="judge",
                success="human",
                label_design="random",
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BayevalWarning)
                one = be.fit(alone, draws=draws, tune=draws, chains=2, seed=seed + i)
            rows.setdefault("model_one_judge", []).append(
                _interval(one.compare(first, second, estimand="tasks"))
            )
        rows["ppi++"].append(_interval(be.bootstrap.ppi(data, first, second, judge="judge")))
        rows["labelled"].append(
            _interval(be.bootstrap.ppi(data, first, second, judge="judge", lam=0))
        )
        verdict = df.groupby(["system", "task"])["judge"].mean().unstack("system")
        diff = verdict[first] - verdict[second]
        se = diff.std(ddof=0) / np.sqrt(len(diff))
        rows["judge"].append((diff.mean(), diff.mean() - Z * se, diff.mean() + Z * se))
    tasks_truths_arr = np.array(tasks_truths)
    if "drawn" in spec:
        low, high = spec["drawn"]
        judges = f"each system's se and sp drawn uniformly on [{low:.2f}, {high:.2f}] per data set"
    else:
        judges = ", ".join(f"{k} se {v[1]:.2f} sp {v[2]:.2f}" for k, v in spec["systems"].items())
    if "fooled" in spec:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in spec["fooled"].items())
        judges += (
            f"; judge2 alike; both pass the same fooling failures (share of true failures: "
            f"{shares}); lexical se 0.75 sp 0.97 on its own. model_*: the three judges "
            "jointly; model_one_judge: 'judge' alone; ppi++, labelled, judge: 'judge'"
        )
    lines = [
        f"Judge-aware model, scenario {scenario}: coverage of the effect {first} - {second}",
        f"judge per system: {judges}"
        + (f"; its logits move by {spec['slope']} x task difficulty z" if spec["slope"] else ""),
        f"{len(spec['systems'])} systems on {spec['tasks']} shared tasks x {spec['trials']} "
        f"attempts, {spec['share']:.0%} labelled at random; "
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
        truths = {
            "model_tasks": ["tasks"],
            "model_population": ["population"],
            "model_one_judge": ["tasks"],
        }.get(name, ["tasks", "population"])
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
    for judges in (["judge_gpt4"], ["judge_contains"], JOINT):
        judge = judges[0] if len(judges) == 1 else judges
        cols = ["system", "task", *judges, "human"]
        data = be.from_frame(masked[cols], judge=judge, success="human", label_design="random")
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", BayevalWarning)
            res = be.fit(data, draws=draws, tune=draws, chains=2, seed=seed, progress=False)
        took = time.perf_counter() - start
        gates = [str(w.message)[:120] for w in caught if "gates" in str(w.message)]
        summ = res.summary(estimands=["tasks"]).set_index("system")
        named = (
            f"judge {judge}"
            if len(judges) == 1
            else f"judges {', '.join(judges)} jointly (judge and PPI++ columns: {judges[0]})"
        )
        lines += [
            "",
            f"{named}: fit {took:.0f} s; gates: {gates[0] if gates else 'passed'}",
            f"{'system':<17} {'truth':>6} {'judge':>6} {'labels':>6} {'model':>6} "
            f"{'model 95%':>15} {'cover':>5} {'ppi++ 95%':>15} {'cover':>5}",
        ]
        judged = res.judge()
        covered, ppi_covered = 0, 0
        for system in res.systems:
            row = summ.loc[system]
            lo, hi = float(row["lower"]), float(row["upper"])
            ppi = be.bootstrap.ppi(data, system, judge=judges[0])
            plo, phi = (float(x) for x in ppi["estimate_interval"].values.ravel()[:2])
            t = float(truth[system])
            hit, phit = lo <= t <= hi, plo <= t <= phi
            covered += hit
            ppi_covered += phit
            lines.append(
                f"{system:<17} {t:>6.3f} "
                f"{float(judged['judge_rate'].sel(judge=judges[0], system=system)):>6.3f} "
                f"{float(judged['labelled_rate'].sel(judge=judges[0], system=system)):>6.3f} "
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
    parser.add_argument("--scenario", choices=tuple(SCENARIOS), default="lenient")
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    text = ""
    if args.part in ("sim", "both"):
        part = simulation(args.n_sim, args.seed, args.draws, args.scenario)
        if args.out_dir is not None:
            name = "" if args.scenario == "lenient" else f"_{args.scenario.replace('-', '_')}"
            write_text(args.out_dir / f"judge_coverage{name}.txt", part)
        text += part
    if args.part in ("real", "both"):
        part = real(args.seed, args.draws)
        if args.out_dir is not None:
            write_text(args.out_dir / "judge_real_data.txt", part)
        text += part
    return text


if __name__ == "__main__":
    sys.stdout.write(main())
