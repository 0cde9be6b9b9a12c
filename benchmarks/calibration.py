"""Calibration study: coverage and width of bayeval's intervals on benchmarks with known truth.

Run (from the repository root)::

    PYTHONPATH=. python benchmarks/calibration.py                      # default study
    PYTHONPATH=. python benchmarks/calibration.py --quick              # smoke run, ~1 min
    PYTHONPATH=. python benchmarks/calibration.py --n-sims 200 --headline-sims 1000 --jobs 8

Every simulated benchmark comes from :func:`bayeval.simulate.simulate_benchmark`; the
simulation of cell ``(scenario, N, n)`` number ``i`` is the ``i``-th simulation that
:func:`bayeval.simulate.simulate_many` draws from the cell's seed, so a cell with more
simulations extends one with fewer. Every nominal 95% interval is checked against two truths:

* ``tasks``: the mean of the metric over the drawn tasks' true rates
  (``Simulation.truth(..., estimand="tasks")``);
* ``population``: the expectation of the metric over the generating task distribution
  (``Simulation.truth(..., estimand="population")``).

Each method is designed for one of them (its *twin*): the hierarchical and logit-normal
``population`` posteriors, the task and cluster bootstraps and the cluster-robust t interval
for ``population``; the ``tasks`` posteriors, the conjugate ``beta_binomial`` posterior and the
trial bootstrap for ``tasks``. Wald and Wilson on pooled trials (every episode an independent
coin) are shown against both, since they are used for both.

Studies written to ``--out`` (Markdown and CSV):

1. ``coverage``: five scenarios (U-shaped ``Beta(0.4, 0.3)``, ``Beta(2, 5)``, uniform
   ``Beta(1, 1)``, a logit-normal population with task clusters, two systems with correlated
   task difficulty and a known effect) x N in {5, 10, 20, 50, 200} tasks x n in {1, 4, 32}
   trials; pass@1, pass@5 and the paired effect;
2. ``missing``: difficulty-dependent missingness (timeouts on hard tasks) under the
   ``exclude``, ``fail`` and ``bounds`` policies;
3. ``priors``: the hierarchical model's coverage under several concentration priors;

and the model cards ``models/*.md`` are regenerated from ``benchmarks/_cards/`` with these
tables (and the latest ``sbc.csv`` of ``benchmarks/sbc.py``, when present).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayeval as be  # noqa: E402
from bayeval.simulate import simulate_benchmark  # noqa: E402

CI_PROB = 0.95
N_VALUES = (5, 10, 20, 50, 200)
TRIAL_VALUES = (1, 4, 32)
K_AT = 5  # the k of pass@k besides pass@1

#: Scenarios: simulate_benchmark arguments (clusters as a function of N) and a description.
SCENARIOS = {
    "u_shaped": {"kwargs": {"rates": "u_shaped"}, "label": "U-shaped task rates, Beta(0.4, 0.3)"},
    "beta_2_5": {"kwargs": {"rates": "beta_2_5"}, "label": "mostly hard tasks, Beta(2, 5)"},
    "uniform": {"kwargs": {"rates": "uniform"}, "label": "uniform task rates, Beta(1, 1)"},
    "clustered": {
        "kwargs": {"rates": ("logit_normal", 0.0, 1.5), "cluster_sd": 1.0},
        "label": "logit-normal tasks (logit sd 1.5) in clusters of about 5 "
        "(cluster sd 1.0; max(2, N // 5) clusters)",
    },
    "paired": {
        "kwargs": {
            "rates": ("logit_normal", -0.5, 2.0),
            "n_systems": 2,
            "effect": 0.5,
            "task_system_sd": 0.5,
        },
        "label": "two systems on shared tasks: logit-normal difficulty (mean -0.5, "
        "sd 2.0) shared, system effect +0.5 logit, task-by-system sd 0.5",
    },
}
SCENARIO_INDEX = {name: i for i, name in enumerate(SCENARIOS)}
HEADLINE = {("u_shaped", 10, 32), ("u_shaped", 50, 32), ("beta_2_5", 10, 32), ("beta_2_5", 50, 32)}
#: Cells where the logit-normal model (NUTS) is fitted, and the share of --ln-sims they get.
LN_CELLS = {
    ("paired", 10, 32): 1.0,
    ("paired", 50, 4): 0.375,
    ("u_shaped", 10, 32): 0.25,
    ("clustered", 50, 4): 0.25,
}
#: Concentration priors of the sensitivity study: name -> (mean, sd) of log kappa.
#: Concentration priors compared in the headline cells, each fitted by name (the default is
#: data-dependent: ``HierarchicalRates.data_priors`` picks N(0, 3) for at most 10 tasks with a
#: median of at least 2 trials, else N(1, 1.5); the coverage rows are under that default).
PRIORS = {
    "N(1, 1.5)": (1.0, 1.5),
    "wide N(0, 3)": (0.0, 3.0),
    "kappa>1 N(3, 1)": (3.0, 1.0),
    "kappa<1 N(-1, 1)": (-1.0, 1.0),
}
#: Missing-outcome cells: (scenario, N, n) with difficulty-dependent missingness.
MISSING_CELLS = (("u_shaped", 50, 1), ("beta_2_5", 50, 4), ("u_shaped", 50, 32))
MISSING = {"rate": 0.2, "mechanism": "hard", "status": "timeout"}

DESIGNED = {  # method -> the estimand its interval is built for ("both": naive)
    "hierarchical pop": "population",
    "hierarchical tasks": "tasks",
    "logit_normal pop": "population",
    "logit_normal tasks": "tasks",
    "beta_binomial tasks": "tasks",
    "boot trial perc": "tasks",
    "boot trial bca": "tasks",
    "boot task perc": "population",
    "boot task bca": "population",
    "boot cluster perc": "population",
    "boot cluster bca": "population",
    "cluster-robust t": "population",
    "wald": "both",
    "wilson": "both",
    "paired boot task perc": "population",
    "paired boot task bca": "population",
    "paired boot trial perc": "tasks",
    "unpaired boot task perc": "population",
    "paired cluster-robust t": "population",
    "unpaired wald": "both",
}
METHOD_ORDER = list(DESIGNED)


# -- seeds and simulation ----------------------------------------------------------------------
def cell_seed(seed: int, scenario: str, n_tasks: int, n_trials: int, study: str = "coverage"):
    """Base seed of one cell: a hash of the run seed and the cell's coordinates.

    Parameters
    ----------
    seed : int
        The run's ``--seed``.
    scenario : str
        Key of :data:`SCENARIOS`.
    n_tasks, n_trials : int
        Cell size.
    study : str
        ``"coverage"`` or ``"missing"``: the studies draw independent benchmarks.

    Returns
    -------
    int
    """
    salt = {"coverage": 0, "missing": 1}[study]
    ss = np.random.SeedSequence([seed, salt, SCENARIO_INDEX[scenario], n_tasks, n_trials])
    return int(ss.generate_state(1)[0])


def sim_seed(base: int, index: int) -> int:
    """Seed of simulation ``index`` of a cell: the one :func:`simulate_many` would use.

    ``simulate_many`` spawns ``SeedSequence(base).spawn(n_sims)``; child ``i`` equals
    ``SeedSequence(base, spawn_key=(i,))``, whatever ``n_sims``.
    """
    child = np.random.SeedSequence(base, spawn_key=(index,))
    return int(child.generate_state(1)[0])


def scenario_kwargs(scenario: str, n_tasks: int, n_trials: int) -> dict:
    """``simulate_benchmark`` arguments of a cell (without the seed)."""
    kwargs = dict(SCENARIOS[scenario]["kwargs"], n_tasks=n_tasks, n_trials=n_trials)
    if scenario == "clustered":
        kwargs["clusters"] = max(2, n_tasks // 5)
    return kwargs


# -- interval helpers (NumPy) ------------------------------------------------------------------
def cluster_robust_t(values: np.ndarray, ci_prob: float = CI_PROB):
    """Mean of per-task values with a t interval: ``mean +- t_{N-1} sd / sqrt(N)``.

    With per-task success rates ``c_j / n`` and equal trials per task this is the OLS
    regression of the trial outcomes on an intercept with the cluster-robust (CR1, task
    clusters) standard error and ``N - 1`` degrees of freedom, as statsmodels'
    ``OLS(...).fit(cov_type="cluster", use_t=True)`` computes it: the CR0 sandwich is
    ``sum_j (r_j - rbar)^2 / N^2``, and the CR1 factor ``N / (N - 1)`` (times
    ``(Nn - 1) / (Nn - 1)`` for one regressor) turns it into ``s^2 / N``.

    Parameters
    ----------
    values : numpy.ndarray, shape (task,) or (task, k)
        One value per task (a rate, an unbiased pass@k estimate, or a paired difference).
    ci_prob : float
        Interval probability.

    Returns
    -------
    estimate, lower, upper : numpy.ndarray
    """
    values = np.asarray(values, dtype=float)
    n_tasks = values.shape[0]
    mean = values.mean(axis=0)
    if n_tasks < 2:
        return mean, np.full_like(mean, np.nan), np.full_like(mean, np.nan)
    half = (
        stats.t.ppf(0.5 + ci_prob / 2, n_tasks - 1) * values.std(axis=0, ddof=1) / np.sqrt(n_tasks)
    )
    return mean, mean - half, mean + half


def pooled_counts(data, system: int = 0):
    """Successes and valid trials of one system, summed over tasks."""
    ds = data.dataset
    c = ds["successes"].transpose("system", "task").values[system]
    n = ds["trials"].transpose("system", "task").values[system]
    return c, n


def _eti(draws: np.ndarray, ci_prob: float = CI_PROB):
    """Mean and equal-tailed interval over the first axis."""
    alpha = 1 - ci_prob
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0)
    return draws.mean(axis=0), lo, hi


def _flat(da):
    """Posterior DataArray (chain, draw, ...) as an array (sample, ...)."""
    values = da.values
    return values.reshape((-1,) + values.shape[2:])


# -- one simulated benchmark -------------------------------------------------------------------
class _Recorder:
    """Collects interval records of one simulation."""

    def __init__(self, base: dict):
        self.base = base
        self.rows = []

    def add(
        self,
        method,
        metric,
        estimate,
        lower,
        upper,
        truth_tasks,
        truth_population,
        seconds=np.nan,
        **extra,
    ):
        self.rows.append(
            dict(
                self.base,
                method=method,
                metric=metric,
                estimate=float(estimate),
                lower=float(lower),
                upper=float(upper),
                truth_tasks=float(truth_tasks),
                truth_population=float(truth_population),
                seconds=float(seconds),
                **extra,
            )
        )


def _metrics_for(n_trials: int, exact: bool) -> list[int]:
    """The k values a method computes: exact (unbiased-estimator) methods need n >= k."""
    return [1, K_AT] if (n_trials >= K_AT or not exact) else [1]


def _timed(func, *args, **kwargs):
    start = time.perf_counter()
    out = func(*args, **kwargs)
    return out, time.perf_counter() - start


def _hierarchical(rec, sim, seed, opts, ks, truths, priors=None, label="hierarchical", extra=None):
    extra = extra or {}
    res, seconds = _timed(
        be.fit,
        sim.data,
        model="hierarchical",
        sampler="grid",
        draws=opts["draws"],
        chains=opts["chains"],
        seed=seed,
        task_draws=False,
        priors=priors,
    )
    for estimand, short in (("population", "pop"), ("tasks", "tasks")):
        draws = _flat(res.pass_at_k(k=ks, estimand=estimand))[:, 0, :]
        est, lo, hi = _eti(draws)
        for i, k in enumerate(ks):
            rec.add(
                f"{label} {short}", f"pass@{k}", est[i], lo[i], hi[i], *truths[k], seconds, **extra
            )


def _bootstraps(rec, sim, seed, opts, n_trials, truths, units):
    ks = _metrics_for(n_trials, exact=True)
    for unit in units:
        for method, short in (("percentile", "perc"), ("bca", "bca")):
            out, seconds = _timed(
                be.bootstrap.pass_at_k,
                sim.data,
                k=ks,
                unit=unit,
                n_boot=opts["n_boot"],
                seed=seed,
                method=method,
            )
            est = out["estimate"].values[0]
            interval = out["interval"].values[0]
            for i, k in enumerate(ks):
                rec.add(
                    f"boot {unit} {short}",
                    f"pass@{k}",
                    est[i],
                    interval[i, 0],
                    interval[i, 1],
                    *truths[k],
                    seconds,
                )


def evaluate_single(scenario, n_tasks, n_trials, index, seed, opts):
    """Intervals of every method on one single-system benchmark.

    Parameters
    ----------
    scenario : str
    n_tasks, n_trials : int
    index : int
        Simulation number within the cell.
    seed : int
        The simulation's seed (also used for every fit and bootstrap).
    opts : dict
        ``draws``, ``chains``, ``n_boot``, ``ln`` (fit the logit-normal model),
        ``ln_draws``, ``ln_tune``, ``priors`` (prior-sensitivity fits).

    Returns
    -------
    list of dict
        One record per (method, metric).
    """
    sim = simulate_benchmark(**scenario_kwargs(scenario, n_tasks, n_trials), seed=seed)
    rec = _Recorder(
        dict(study="coverage", scenario=scenario, N=n_tasks, n=n_trials, sim=index, prior="")
    )
    truths = {
        k: (sim.truth(k=k, estimand="tasks")[0], sim.truth(k=k, estimand="population")[0])
        for k in (1, K_AT)
    }
    ks_model = _metrics_for(n_trials, exact=False)
    _hierarchical(rec, sim, seed, opts, ks_model, truths)
    res, seconds = _timed(
        be.fit,
        sim.data,
        model="beta_binomial",
        draws=opts["draws"],
        chains=opts["chains"],
        seed=seed,
        task_draws=False,
    )
    draws = _flat(res.pass_at_k(k=ks_model, estimand="tasks"))[:, 0, :]
    est, lo, hi = _eti(draws)
    for i, k in enumerate(ks_model):
        rec.add("beta_binomial tasks", f"pass@{k}", est[i], lo[i], hi[i], *truths[k], seconds)
    units = ("trial", "task", "cluster") if scenario == "clustered" else ("trial", "task")
    _bootstraps(rec, sim, seed, opts, n_trials, truths, units)

    c, n = pooled_counts(sim.data)
    for name, func in (("wald", be.estimators.wald_interval), ("wilson", be.wilson_interval)):
        lo, hi = func(c.sum(), n.sum(), ci_prob=CI_PROB)
        rec.add(name, "pass@1", c.sum() / n.sum(), lo, hi, *truths[1])
    for k in _metrics_for(n_trials, exact=True):
        est, lo, hi = cluster_robust_t(be.pass_at_k(n, c, k))
        rec.add("cluster-robust t", f"pass@{k}", est, lo, hi, *truths[k])

    if opts.get("ln"):
        res, seconds = _timed(
            be.fit,
            sim.data,
            model="logit_normal",
            draws=opts["ln_draws"],
            tune=opts["ln_tune"],
            chains=opts["chains"],
            seed=seed,
        )
        diag = res.diagnostics
        for estimand, short in (("population", "pop"), ("tasks", "tasks")):
            draws = _flat(res.pass_at_k(k=ks_model, estimand=estimand))[:, 0, :]
            est, lo, hi = _eti(draws)
            for i, k in enumerate(ks_model):
                rec.add(
                    f"logit_normal {short}",
                    f"pass@{k}",
                    est[i],
                    lo[i],
                    hi[i],
                    *truths[k],
                    seconds,
                    divergences=diag.get("divergences", 0),
                    max_rhat=diag.get("max_rhat", np.nan),
                )
    for name, (mean, sd) in (opts.get("priors") or {}).items():
        prior_rec = _Recorder(dict(rec.base, study="priors", prior=name))
        _hierarchical(prior_rec, sim, seed, opts, [1], truths, priors={"log_kappa": (mean, sd)})
        rec.rows.extend(prior_rec.rows)
    return rec.rows


def evaluate_paired(scenario, n_tasks, n_trials, index, seed, opts):
    """Intervals for the effect of system_1 over system_0 on one two-system benchmark.

    Parameters are those of :func:`evaluate_single`.

    Returns
    -------
    list of dict
    """
    sim = simulate_benchmark(**scenario_kwargs(scenario, n_tasks, n_trials), seed=seed)
    rec = _Recorder(
        dict(study="coverage", scenario=scenario, N=n_tasks, n=n_trials, sim=index, prior="")
    )
    truths = {
        k: (sim.effect_truth(k=k, estimand="tasks"), sim.effect_truth(k=k, estimand="population"))
        for k in (1, K_AT)
    }
    cand, base = "system_1", "system_0"
    ks_model = _metrics_for(n_trials, exact=False)
    ks_exact = _metrics_for(n_trials, exact=True)

    def model_effects(model, **fit_kwargs):
        res, seconds = _timed(
            be.fit,
            sim.data,
            model=model,
            draws=opts["draws"] if model == "hierarchical" else opts["ln_draws"],
            chains=opts["chains"],
            seed=seed,
            **fit_kwargs,
        )
        extra = {}
        if model == "logit_normal":
            diag = res.diagnostics
            extra = dict(
                divergences=diag.get("divergences", 0), max_rhat=diag.get("max_rhat", np.nan)
            )
        for estimand, short in (("population", "pop"), ("tasks", "tasks")):
            out = res.compare(cand, base, k=ks_model, estimand=estimand, ci_prob=CI_PROB)
            est = out["effect_mean"].values
            interval = out["effect_interval"].values
            for i, k in enumerate(ks_model):
                rec.add(
                    f"{model} {short}",
                    f"effect@{k}",
                    est[i],
                    interval[i, 0],
                    interval[i, 1],
                    *truths[k],
                    seconds,
                    **extra,
                )

    model_effects("hierarchical", sampler="grid", task_draws=False)
    if opts.get("ln"):
        model_effects("logit_normal", tune=opts["ln_tune"])
    for unit, method, name in (
        ("task", "percentile", "paired boot task perc"),
        ("task", "bca", "paired boot task bca"),
        ("trial", "percentile", "paired boot trial perc"),
    ):
        out, seconds = _timed(
            be.bootstrap.compare,
            sim.data,
            cand,
            base,
            k=ks_exact,
            unit=unit,
            n_boot=opts["n_boot"],
            seed=seed,
            method=method,
        )
        est, interval = out["effect_mean"].values, out["effect_interval"].values
        for i, k in enumerate(ks_exact):
            rec.add(
                name, f"effect@{k}", est[i], interval[i, 0], interval[i, 1], *truths[k], seconds
            )
    reps, ests = [], []
    for offset, system in enumerate((base, cand)):
        out = be.bootstrap.pass_at_k(
            sim.data.sel(system=[system]),
            k=ks_exact,
            unit="task",
            n_boot=opts["n_boot"],
            seed=seed + 1 + offset,
        )
        reps.append(out["replicates"].values[:, 0])
        ests.append(out["estimate"].values[0])
    diff = reps[1] - reps[0]
    lo, hi = np.nanquantile(diff, [(1 - CI_PROB) / 2, (1 + CI_PROB) / 2], axis=0)
    for i, k in enumerate(ks_exact):
        rec.add(
            "unpaired boot task perc",
            f"effect@{k}",
            ests[1][i] - ests[0][i],
            lo[i],
            hi[i],
            *truths[k],
        )
    (c0, n0), (c1, n1) = pooled_counts(sim.data, 0), pooled_counts(sim.data, 1)
    for k in ks_exact:
        d = be.pass_at_k(n1, c1, k) - be.pass_at_k(n0, c0, k)
        est, lo, hi = cluster_robust_t(d)
        rec.add("paired cluster-robust t", f"effect@{k}", est, lo, hi, *truths[k])
    p0, p1 = c0.sum() / n0.sum(), c1.sum() / n1.sum()
    half = stats.norm.ppf(0.5 + CI_PROB / 2) * np.sqrt(
        p0 * (1 - p0) / n0.sum() + p1 * (1 - p1) / n1.sum()
    )
    rec.add("unpaired wald", "effect@1", p1 - p0, p1 - p0 - half, p1 - p0 + half, *truths[1])
    return rec.rows


def evaluate_missing(scenario, n_tasks, n_trials, index, seed, opts):
    """Estimates and intervals under the three missing-outcome policies.

    The benchmark has difficulty-dependent missingness (:data:`MISSING`: a trial on a task of
    true rate ``p`` times out with probability ``clip(0.4 (1 - p), 0, 0.95)``). Under
    ``bounds`` the interval is ``[lower bound's lower end, upper bound's upper end]``.

    Returns
    -------
    list of dict
    """
    sim = simulate_benchmark(
        **scenario_kwargs(scenario, n_tasks, n_trials), missing=MISSING, seed=seed
    )
    truths = (sim.truth(estimand="tasks")[0], sim.truth(estimand="population")[0])
    rows = []
    trials = sim.data.dataset["trials"].values
    attempts = sim.data.dataset["attempts"].values
    missing_share = 1 - trials.sum() / attempts.sum()
    for policy in ("exclude", "fail", "bounds"):
        data = sim.data.with_missing(policy)
        rec = _Recorder(
            dict(
                study="missing",
                scenario=scenario,
                N=n_tasks,
                n=n_trials,
                sim=index,
                prior="",
                policy=policy,
                missing_share=float(missing_share),
            )
        )
        res, seconds = _timed(
            be.fit,
            data,
            model="hierarchical",
            sampler="grid",
            draws=opts["draws"],
            chains=opts["chains"],
            seed=seed,
            task_draws=False,
        )
        for estimand, short in (("population", "pop"), ("tasks", "tasks")):
            draws = res.pass_at_k(k=1, estimand=estimand)
            values = _flat(draws)[:, 0]
            _add_policy(rec, f"hierarchical {short}", values, policy, truths, seconds)
        for unit in ("task", "trial"):
            out = be.bootstrap.pass_at_k(data, k=1, unit=unit, n_boot=opts["n_boot"], seed=seed)
            est = out["estimate"].values[0]
            interval = out["interval"].values[0]
            if policy == "bounds":  # (bound, ...) with bounds lower, upper
                rec.add(
                    f"boot {unit} perc",
                    "pass@1",
                    est.mean(),
                    interval[0, 0],
                    interval[1, 1],
                    *truths,
                    est_lower=est[0],
                    est_upper=est[1],
                )
            else:
                rec.add(f"boot {unit} perc", "pass@1", est, interval[0], interval[1], *truths)
        ds = data.dataset
        c = ds["successes"].transpose(..., "system", "task").values.reshape(-1, len(data.tasks))
        n = ds["trials"].transpose("system", "task").values[0]
        ends = [be.wilson_interval(row.sum(), n.sum(), ci_prob=CI_PROB) for row in c]
        points = [row.sum() / n.sum() for row in c]
        if policy == "bounds":
            rec.add(
                "wilson",
                "pass@1",
                np.mean(points),
                ends[0][0],
                ends[-1][1],
                *truths,
                est_lower=points[0],
                est_upper=points[-1],
            )
        else:
            rec.add("wilson", "pass@1", points[0], *ends[0], *truths)
        rows.extend(rec.rows)
    return rows


def _add_policy(rec, method, values, policy, truths, seconds):
    if policy == "bounds":  # values (sample, bound): lower bound, upper bound
        means = values.mean(axis=0)
        lo = np.quantile(values[:, 0], (1 - CI_PROB) / 2)
        hi = np.quantile(values[:, 1], (1 + CI_PROB) / 2)
        rec.add(
            method,
            "pass@1",
            means.mean(),
            lo,
            hi,
            *truths,
            seconds,
            est_lower=means[0],
            est_upper=means[1],
        )
    else:
        est, lo, hi = _eti(values)
        rec.add(method, "pass@1", est, lo, hi, *truths, seconds)


# -- the plan and the worker -------------------------------------------------------------------
def build_plan(args) -> list[dict]:
    """Work units: (study, cell, simulation range, options), expensive ones first."""
    base_opts = dict(
        draws=args.draws,
        chains=args.chains,
        n_boot=args.n_boot,
        ln_draws=args.ln_draws,
        ln_tune=args.ln_tune,
    )
    units = []
    scenarios = args.scenarios or list(SCENARIOS)
    n_values = args.n_tasks or list(N_VALUES)
    trial_values = args.n_trials or list(TRIAL_VALUES)
    chunk = args.chunk
    for scenario in scenarios:
        for n_tasks in n_values:
            for n_trials in trial_values:
                cell = (scenario, n_tasks, n_trials)
                sims = args.headline_sims if cell in HEADLINE else args.n_sims
                ln_sims = min(sims, round(args.ln_sims * LN_CELLS.get(cell, 0.0)))
                prior_sims = args.prior_sims if cell in HEADLINE else 0
                base = cell_seed(args.seed, *cell)
                for start in range(0, sims, chunk):
                    stop = min(start + chunk, sims)
                    units.append(
                        dict(
                            study="coverage",
                            cell=cell,
                            start=start,
                            stop=stop,
                            base=base,
                            sims=sims,
                            ln_sims=ln_sims,
                            prior_sims=prior_sims,
                            opts=base_opts,
                        )
                    )
    if not args.skip_missing:
        for cell in MISSING_CELLS:
            base = cell_seed(args.seed, *cell, study="missing")
            for start in range(0, args.missing_sims, chunk):
                units.append(
                    dict(
                        study="missing",
                        cell=cell,
                        start=start,
                        stop=min(start + chunk, args.missing_sims),
                        base=base,
                        opts=base_opts,
                    )
                )
    units.sort(key=_cost, reverse=True)
    return units


def _cost(unit) -> float:
    """Rough cost of a unit in seconds (for ordering: expensive first)."""
    scenario, n_tasks, n_trials = unit["cell"]
    count = unit["stop"] - unit["start"]
    if unit["study"] == "missing":
        return count * 1.5
    per_sim = 0.15 + 0.004 * min(n_tasks, 60) * (1 + (n_trials > 4))
    if scenario == "paired":
        per_sim *= 2.5
    ln = max(0, min(unit["stop"], unit["ln_sims"]) - unit["start"])
    return count * per_sim + ln * 12.0


def run_unit(unit) -> tuple[list[dict], float]:
    """Run one work unit in a worker; returns its records and wall time."""
    warnings.simplefilter("ignore")
    start_time = time.perf_counter()
    scenario, n_tasks, n_trials = unit["cell"]
    rows = []
    for index in range(unit["start"], unit["stop"]):
        seed = sim_seed(unit["base"], index)
        opts = dict(unit["opts"])
        if unit["study"] == "missing":
            rows.extend(evaluate_missing(scenario, n_tasks, n_trials, index, seed, opts))
            continue
        opts["ln"] = index < unit["ln_sims"]
        opts["priors"] = PRIORS if index < unit["prior_sims"] else None
        evaluate = evaluate_paired if scenario == "paired" else evaluate_single
        rows.extend(evaluate(scenario, n_tasks, n_trials, index, seed, opts))
    return rows, time.perf_counter() - start_time


def _init_worker():
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    warnings.simplefilter("ignore")


def run_plan(units, jobs: int, log=print) -> pd.DataFrame:
    """Run the work units on ``jobs`` processes (``spawn``); returns all records."""
    rows = []
    start = time.perf_counter()
    if jobs <= 1:
        results = map(run_unit, units)
        pool = None
    else:
        pool = mp.get_context("spawn").Pool(jobs, initializer=_init_worker)
        results = pool.imap_unordered(run_unit, units)
    try:
        for i, (unit_rows, _) in enumerate(results):
            rows.extend(unit_rows)
            if log and (i % 10 == 0 or i == len(units) - 1):
                log(f"  {i + 1}/{len(units)} units, {time.perf_counter() - start:.0f} s")
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    return pd.DataFrame(rows)


def with_ln_subset(records: pd.DataFrame, ln_sims: int) -> pd.DataFrame:
    """Append copies (``study="ln_subset"``) of the other methods on the logit-normal subset.

    The copies are of the other methods' records on the simulations where the logit-normal
    model was fitted, so that they compare on the same benchmarks.
    """
    parts = [records]
    for cell, share in LN_CELLS.items():
        count = round(ln_sims * share)
        sel = (
            (records["study"] == "coverage")
            & (records["scenario"] == cell[0])
            & (records["N"] == cell[1])
            & (records["n"] == cell[2])
            & (records["sim"] < count)
            & ~records["method"].str.startswith("logit_normal")
        )
        if sel.any():
            parts.append(records[sel].assign(study="ln_subset"))
    return pd.concat(parts, ignore_index=True)


# -- summaries ---------------------------------------------------------------------------------
def summarise(
    records: pd.DataFrame,
    keys=("study", "scenario", "N", "n", "method", "metric", "prior", "policy"),
) -> pd.DataFrame:
    """Coverage (against both truths), Monte Carlo standard errors and widths per cell.

    Parameters
    ----------
    records : pandas.DataFrame
        One row per (simulation, method, metric) with ``lower``, ``upper``, ``estimate``,
        ``truth_tasks`` and ``truth_population``.
    keys : sequence of str
        Grouping columns.

    Returns
    -------
    pandas.DataFrame
        ``sims``, ``failed`` (intervals that are not finite), ``cov_tasks``, ``se_tasks``,
        ``cov_population``, ``se_population``, ``width`` (mean), ``width_median``,
        ``bias_tasks``, ``bias_population`` (mean estimate minus truth), ``seconds``
        (mean per fit or call), ``designed`` (the method's twin estimand).
    """
    df = records.copy()
    finite = np.isfinite(df["lower"]) & np.isfinite(df["upper"])
    df["finite"] = finite
    # a tiny tolerance: intervals are quantiles of draws and truths are closed forms
    tol = 1e-12
    df["in_tasks"] = (
        finite & (df["lower"] - tol <= df["truth_tasks"]) & (df["truth_tasks"] <= df["upper"] + tol)
    )
    df["in_population"] = (
        finite
        & (df["lower"] - tol <= df["truth_population"])
        & (df["truth_population"] <= df["upper"] + tol)
    )
    df["width"] = np.where(finite, df["upper"] - df["lower"], np.nan)
    df["err_tasks"] = df["estimate"] - df["truth_tasks"]
    df["err_population"] = df["estimate"] - df["truth_population"]
    keys = [k for k in keys if k in df.columns]
    df[keys] = df[keys].fillna("")
    grouped = df.groupby(keys, sort=False)
    out = grouped.agg(
        sims=("finite", "size"),
        failed=("finite", lambda x: int((~x).sum())),
        cov_tasks=("in_tasks", "mean"),
        cov_population=("in_population", "mean"),
        width=("width", "mean"),
        width_median=("width", "median"),
        bias_tasks=("err_tasks", "mean"),
        bias_population=("err_population", "mean"),
        seconds=("seconds", "mean"),
    ).reset_index()
    for name in ("tasks", "population"):
        c = out[f"cov_{name}"]
        out[f"se_{name}"] = np.sqrt(c * (1 - c) / out["sims"])
    for extra in ("divergences", "est_lower", "est_upper", "missing_share"):
        if extra in df.columns:
            if extra.startswith("est_"):
                values = df[extra] - df["truth_population"]
                out[f"bias_{extra[4:]}_population"] = (
                    values.groupby([df[k] for k in keys], sort=False).mean().values
                )
                values = df[extra] - df["truth_tasks"]
                out[f"bias_{extra[4:]}_tasks"] = (
                    values.groupby([df[k] for k in keys], sort=False).mean().values
                )
            else:
                out[extra] = df.groupby(keys, sort=False)[extra].mean().values
    out["designed"] = out["method"].map(DESIGNED).fillna("")
    return out


def fmt_cov(c, se) -> str:
    """``0.946 ± 0.010``; empty when missing."""
    if not np.isfinite(c):
        return ""
    return f"{c:.3f} ± {se:.3f}"


def _fmt(x, digits=3) -> str:
    return "" if not np.isfinite(x) else f"{x:.{digits}f}"


def markdown_table(frame: pd.DataFrame, columns: dict) -> str:
    """A Markdown table of ``frame`` with ``columns`` (header -> function of a row)."""
    header = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    lines = [header, rule]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(str(f(row)) for f in columns.values()) + " |")
    return "\n".join(lines)


def _mark(row, which):
    """Coverage against one truth; the method's own estimand in bold."""
    text = fmt_cov(row[f"cov_{which}"], row[f"se_{which}"])
    if text and row["designed"] in (which, "both"):
        return f"**{text}**"
    return text


COVERAGE_COLUMNS = {
    "N": lambda r: r["N"],
    "n": lambda r: r["n"],
    "method": lambda r: r["method"],
    "sims": lambda r: r["sims"],
    "coverage (tasks)": lambda r: _mark(r, "tasks"),
    "coverage (population)": lambda r: _mark(r, "population"),
    "mean width": lambda r: _fmt(r["width"]),
}


def _method_rank(frame):
    return frame["method"].map({m: i for i, m in enumerate(METHOD_ORDER)}).fillna(99)


def coverage_markdown(summary: pd.DataFrame, settings: dict) -> str:
    """The full coverage tables, one per scenario and metric."""
    cov = summary[summary["study"] == "coverage"].copy()
    cov["rank"] = _method_rank(cov)
    parts = [
        "# Calibration study: coverage of nominal 95% intervals",
        "",
        _settings_text(settings),
        "",
        (
            "Coverage is the share of simulations whose interval contains the truth, ± its Monte "
            "Carlo standard error sqrt(c (1 - c) / sims). Each method is checked against both "
            "truths; **bold** marks the estimand the method is designed for (both for the naive "
            "Wald and Wilson intervals on pooled trials). A method that needs n >= k (the unbiased "
            f"pass@{K_AT} estimator: bootstraps, cluster-robust t) has no pass@{K_AT} row at n < "
            f"{K_AT}; Wald and Wilson are for pass@1 only; the Bayesian models extrapolate "
            f"pass@{K_AT} from fewer trials (at n = 1 it rests on the concentration prior)."
        ),
    ]
    for scenario in SCENARIOS:
        sub = cov[cov["scenario"] == scenario]
        if sub.empty:
            continue
        parts += ["", f"## {scenario}: {SCENARIOS[scenario]['label']}"]
        for metric in sorted(sub["metric"].unique()):
            table = sub[sub["metric"] == metric].sort_values(["N", "n", "rank"])
            parts += ["", f"### {metric}", "", markdown_table(table, COVERAGE_COLUMNS)]
    return "\n".join(parts) + "\n"


def _settings_text(settings: dict) -> str:
    cpu = ""
    if settings.get("cpu_minutes"):
        cpu = f", {settings['cpu_minutes']:.1f} CPU-minutes in all"
    return (
        f"Command: `{settings['command']}`. Seed {settings['seed']}; "
        f"{settings['n_sims']} simulations per ordinary cell, {settings['headline_sims']} in the "
        f"headline cells (N = 10 and 50, n = 32, U-shaped and Beta(2, 5)); the logit-normal "
        f"model (NUTS, nutpie, {settings['chains']} chains x {settings['ln_draws']} draws after "
        f"{settings['ln_tune']} tuning) in a subset of cells with the simulations stated per row. "
        f"Hierarchical (grid engine) and conjugate posteriors: {settings['chains']} chains x "
        f"{settings['draws']} draws; equal-tailed 95% intervals. Bootstraps: "
        f"{settings['n_boot']} replicates (percentile and BCa). Wall time "
        f"{settings['wall_minutes']:.1f} min on {settings['jobs']} processes "
        f"({settings['machine']}){cpu}."
    )


# -- model cards -------------------------------------------------------------------------------
def _model_table(
    summary, methods, metrics=("pass@1", f"pass@{K_AT}"), scenarios=None, study="coverage", prior=""
):
    rows = summary[
        (summary["study"] == study)
        & summary["method"].isin(methods)
        & summary["metric"].isin(metrics)
        & (summary["prior"] == prior)
    ]
    if scenarios is not None:
        rows = rows[rows["scenario"].isin(scenarios)]
    return rows


def card_coverage_table(summary, columns, scenarios=None) -> str:
    """Rows (scenario, N, n, metric); one column per ``(label, method, estimand[, study])``.

    A cell reads ``coverage ± MC se (mean width)``; ``sims`` is the simulation count of the
    first column's method (others that differ say theirs). Rows without the first column's
    method are left out.
    """
    columns = [tuple(c) + (("coverage",) if len(c) == 3 else ()) for c in columns]
    if not columns:
        return "_(no results)_"
    parts = []
    for study in dict.fromkeys(c[3] for c in columns):
        methods = [m for _, m, _, st in columns if st == study]
        part = _model_table(
            summary,
            methods,
            metrics=("pass@1", f"pass@{K_AT}", "effect@1", f"effect@{K_AT}"),
            scenarios=scenarios,
            study=study,
        )
        parts.append(part)
    rows = pd.concat(parts)
    if rows.empty:
        return "_(no results)_"
    have = set(zip(rows["method"], rows["study"], strict=True))
    present = [c for c in columns if (c[1], c[3]) in have]
    first = columns[0]
    header = ["scenario", "N", "n", "metric", "sims"] + [c[0] for c in present]
    keyed = []
    for (scenario, n_tasks, n_trials, metric), group in rows.groupby(
        ["scenario", "N", "n", "metric"], sort=False
    ):
        lead = group[(group["method"] == first[1]) & (group["study"] == first[3])]
        if lead.empty:
            continue
        sims = int(lead["sims"].iloc[0])
        cells = [scenario, str(n_tasks), str(n_trials), metric, str(sims)]
        for _, m, estimand, study in present:
            r = group[(group["method"] == m) & (group["study"] == study)]
            if r.empty:
                cells.append("")
                continue
            r = r.iloc[0]
            text = f"{fmt_cov(r[f'cov_{estimand}'], r[f'se_{estimand}'])} ({_fmt(r['width'])})"
            if r["sims"] != sims:
                text += f" [{r['sims']} sims]"
            cells.append(text)
        keyed.append(((SCENARIO_INDEX[scenario], n_tasks, n_trials, metric), cells))
    keyed.sort(key=lambda item: item[0])
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for _, cells in keyed]
    return "\n".join(lines)


def _undercovered_cells(summary, methods, keep) -> list[str]:
    """Sentences, in table order, for cells more than two MC se below 0.95.

    Only the cells whose coverage passes ``keep`` are included.
    """
    rows = _model_table(
        summary, methods, metrics=("pass@1", f"pass@{K_AT}", "effect@1", f"effect@{K_AT}")
    )
    items = []
    for _, r in rows.iterrows():
        designed = r["designed"]
        for which in ("tasks", "population") if designed == "both" else (designed,):
            c, se = r[f"cov_{which}"], r[f"se_{which}"]
            if np.isfinite(c) and c + 2 * se < 0.95 and keep(c):
                items.append(
                    (
                        SCENARIO_INDEX[r["scenario"]],
                        r["N"],
                        r["n"],
                        r["metric"],
                        METHOD_ORDER.index(r["method"]),
                        (
                            f"- {r['method']} ({which}), {r['scenario']}, N = {r['N']}, "
                            f"n = {r['n']}, {r['metric']}: coverage {fmt_cov(c, se)} "
                            f"({r['sims']} sims), mean width {_fmt(r['width'])}."
                        ),
                    )
                )
    items.sort()
    return [item[-1] for item in items]


def undercoverage_list(summary, methods, threshold=0.90) -> str:
    """Plain sentences for every cell where a method covers below ``threshold``."""
    items = _undercovered_cells(summary, methods, lambda c: c < threshold)
    if not items:
        return f"No cell has coverage below {threshold:.2f} (with coverage + 2 MC se below 0.95)."
    return "\n".join(items)


def mild_undercoverage_list(summary, methods, threshold=0.90) -> str:
    """Cells with coverage in ``[threshold, 0.95)`` more than two MC se below 0.95."""
    items = _undercovered_cells(summary, methods, lambda c: c >= threshold)
    return "\n".join(items) if items else "None."


def prior_table(summary) -> str:
    rows = summary[
        (summary["study"].isin(["priors", "coverage"]))
        & summary["method"].isin(["hierarchical pop", "hierarchical tasks"])
        & (summary["metric"] == "pass@1")
    ]
    cells = sorted(
        {
            (s, N, n)
            for s, N, n in zip(rows["scenario"], rows["N"], rows["n"], strict=True)
            if (s, N, n) in HEADLINE
        }
    )
    lines = [
        (
            "| scenario | N | n | prior on log kappa | sims | population coverage | "
            "population width | tasks coverage | tasks width |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    priors_in = summary.loc[summary["study"] == "priors", "prior"].unique()
    if len(priors_in) == 0:
        return "_(no prior-sensitivity results)_"
    sims_alt = int(summary.loc[summary["study"] == "priors", "sims"].min())
    for cell in sorted(cells, key=lambda c: (SCENARIO_INDEX[c[0]], c[1], c[2])):
        entries = [
            (name, rows[(rows["study"] == "priors") & (rows["prior"] == name)]) for name in PRIORS
        ]
        entries.insert(0, ("default (data-dependent), all sims", rows[rows["study"] == "coverage"]))
        for name, sel in entries:
            sel = sel[(sel["scenario"] == cell[0]) & (sel["N"] == cell[1]) & (sel["n"] == cell[2])]
            pop = sel[sel["method"] == "hierarchical pop"]
            tsk = sel[sel["method"] == "hierarchical tasks"]
            if pop.empty:
                continue
            p, t = pop.iloc[0], tsk.iloc[0]
            lines.append(
                f"| {cell[0]} | {cell[1]} | {cell[2]} | {name} | {p['sims']} | "
                f"{fmt_cov(p['cov_population'], p['se_population'])} | {_fmt(p['width'])} | "
                f"{fmt_cov(t['cov_tasks'], t['se_tasks'])} | {_fmt(t['width'])} |"
            )
    note = (
        f"\n\nEvery prior is fitted to the same first {sims_alt} simulations of each "
        "headline cell; the first row of each cell is the default, which the data choose "
        "(N(0, 3) with at most 10 tasks and a median of at least 2 trials, else N(1, 1.5)), "
        "over all of the cell's simulations."
    )
    return "\n".join(lines) + note


def missing_table(summary) -> str:
    rows = summary[summary["study"] == "missing"].copy()
    if rows.empty:
        return "_(no missing-outcome results)_"
    lines = [
        (
            "| scenario | N | n | missing share | method | policy | sims | bias (own estimand) "
            "| coverage (own estimand) | mean width |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    policies = {"exclude": 0, "fail": 1, "bounds": 2}
    rows["rank"] = _method_rank(rows) * 10 + rows["policy"].map(policies)
    for _, r in rows.sort_values(["scenario", "N", "n", "rank"]).iterrows():
        which = "population" if r["designed"] == "population" else "tasks"
        if r["policy"] == "bounds":
            bias = (
                f"{r[f'bias_lower_{which}']:+.3f} / {r[f'bias_upper_{which}']:+.3f} "
                "(lower / upper bound)"
            )
        else:
            bias = f"{r[f'bias_{which}']:+.3f}"
        lines.append(
            f"| {r['scenario']} | {r['N']} | {r['n']} | {r['missing_share']:.3f} | "
            f"{r['method']} ({which}) | {r['policy']} | {r['sims']} | {bias} | "
            f"{fmt_cov(r[f'cov_{which}'], r[f'se_{which}'])} | {_fmt(r['width'])} |"
        )
    return "\n".join(lines)


def timing_table(summary, methods) -> str:
    rows = _model_table(summary, methods, metrics=("pass@1", "effect@1"))
    rows = rows[np.isfinite(rows["seconds"])]
    if rows.empty:
        return "_(no timings)_"
    lines = [
        "| method | scenario | N | n | mean seconds per fit or call (NUTS: incl. compiling) |",
        "|---|---|---|---|---|",
    ]
    # cells of the subset run for NUTS; otherwise a few sizes are enough
    keep = [
        cell in LN_CELLS
        if m.startswith("logit_normal")
        else (cell[0] in ("u_shaped", "paired") and cell[2] == 32 and cell[1] in (10, 50, 200))
        for m, cell in zip(
            rows["method"], zip(rows["scenario"], rows["N"], rows["n"], strict=True), strict=True
        )
    ]
    rows = rows[np.array(keep, dtype=bool)]
    rows = rows.assign(rank=_method_rank(rows))
    seen = set()
    for _, r in rows.sort_values(["rank", "scenario", "N", "n"]).iterrows():
        name = r["method"]
        if name.split()[0] in ("hierarchical", "logit_normal"):
            name = name.split()[0]  # one fit gives both estimands
        key = (name, r["scenario"], r["N"], r["n"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"| {key[0]} | {r['scenario']} | {r['N']} | {r['n']} | {r['seconds']:.2f} |")
    return "\n".join(lines)


def sbc_section(out_dir: Path, model: str) -> str:
    path = out_dir / "sbc.csv"
    if not path.exists():
        return "_(no SBC results: run `python benchmarks/sbc.py`)_"
    sbc = pd.read_csv(path)
    sbc = sbc[sbc["model"] == model]
    if sbc.empty:
        return "_(no SBC results for this model)_"
    lines = [
        (
            "| quantity | replicates | posterior draws ranked | bins | chi-square | p-value "
            "| KS p-value |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in sbc.iterrows():
        lines.append(
            f"| {r['quantity']} | {r['replicates']} | {r['draws']} | {r['bins']} | "
            f"{r['chi2']:.1f} | {r['p_chi2']:.3f} | {r['p_ks']:.3f} |"
        )
    meta = out_dir / "sbc.json"
    note = ""
    if meta.exists():
        info = json.loads(meta.read_text())
        command = info.get("commands", {}).get(model, "python benchmarks/sbc.py")
        note = (
            f"\n\nFrom `{command}`: {info['n_tasks']} tasks x {info['n_trials']} trials per "
            f"replicate, seed {info['seed']}."
        )
    return "\n".join(lines) + note


CARD_COLUMNS = {  # model card -> table name -> (column label, method, estimand)
    "hierarchical": {
        "": [
            ("population", "hierarchical pop", "population"),
            ("tasks", "hierarchical tasks", "tasks"),
        ]
    },
    "beta_binomial": {"": [("tasks", "beta_binomial tasks", "tasks")]},
    "logit_normal": {
        "": [
            ("population", "logit_normal pop", "population"),
            ("tasks", "logit_normal tasks", "tasks"),
            ("hierarchical population, same sims", "hierarchical pop", "population", "ln_subset"),
            ("hierarchical tasks, same sims", "hierarchical tasks", "tasks", "ln_subset"),
            (
                "task bootstrap perc (population), same sims",
                "boot task perc",
                "population",
                "ln_subset",
            ),
            (
                "cluster bootstrap perc (population), same sims",
                "boot cluster perc",
                "population",
                "ln_subset",
            ),
            (
                "paired task bootstrap perc (population), same sims",
                "paired boot task perc",
                "population",
                "ln_subset",
            ),
            (
                "unpaired task bootstrap perc (population), same sims",
                "unpaired boot task perc",
                "population",
                "ln_subset",
            ),
        ]
    },
    "bootstrap": {
        "single": [
            ("trial perc (tasks)", "boot trial perc", "tasks"),
            ("trial BCa (tasks)", "boot trial bca", "tasks"),
            ("trial perc (population)", "boot trial perc", "population"),
            ("task perc (population)", "boot task perc", "population"),
            ("task BCa (population)", "boot task bca", "population"),
            ("cluster perc (population)", "boot cluster perc", "population"),
            ("cluster BCa (population)", "boot cluster bca", "population"),
            ("cluster-robust t (population)", "cluster-robust t", "population"),
            ("Wald (tasks)", "wald", "tasks"),
            ("Wald (population)", "wald", "population"),
            ("Wilson (tasks)", "wilson", "tasks"),
            ("Wilson (population)", "wilson", "population"),
        ],
        "paired": [
            ("paired task perc (population)", "paired boot task perc", "population"),
            ("paired task BCa (population)", "paired boot task bca", "population"),
            ("paired trial perc (tasks)", "paired boot trial perc", "tasks"),
            ("paired cluster-robust t (population)", "paired cluster-robust t", "population"),
            ("unpaired task perc (population)", "unpaired boot task perc", "population"),
            ("unpaired Wald (tasks)", "unpaired wald", "tasks"),
            ("unpaired Wald (population)", "unpaired wald", "population"),
        ],
    },
}


def headline_text(summary) -> str:
    """The numbers the cards lead with (N = 10, n = 32, U-shaped; paired effect)."""

    def get(scenario, N, n, method, metric="pass@1"):
        r = summary[
            (summary["study"] == "coverage")
            & (summary["scenario"] == scenario)
            & (summary["N"] == N)
            & (summary["n"] == n)
            & (summary["method"] == method)
            & (summary["metric"] == metric)
        ]
        return None if r.empty else r.iloc[0]

    lines = []
    for N in (10, 50):
        pop = get("u_shaped", N, 32, "hierarchical pop")
        tasks = get("u_shaped", N, 32, "hierarchical tasks")
        trial = get("u_shaped", N, 32, "boot trial perc")
        task = get("u_shaped", N, 32, "boot task perc")
        if pop is None:
            continue
        text = (
            f"- U-shaped, N = {N}, n = 32 ({pop['sims']} sims): hierarchical population "
            f"{fmt_cov(pop['cov_population'], pop['se_population'])} (width "
            f"{_fmt(pop['width'])}); hierarchical tasks "
            f"{fmt_cov(tasks['cov_tasks'], tasks['se_tasks'])} (width {_fmt(tasks['width'])})"
        )
        if trial is not None:
            text += (
                f"; trial bootstrap against the population truth "
                f"{fmt_cov(trial['cov_population'], trial['se_population'])}, against the "
                f"tasks truth {fmt_cov(trial['cov_tasks'], trial['se_tasks'])}"
            )
        if task is not None:
            text += (
                f"; task bootstrap (population) "
                f"{fmt_cov(task['cov_population'], task['se_population'])}"
            )
        lines.append(text + ".")
    for N, n in ((10, 32), (50, 4)):
        ln = get("paired", N, n, "logit_normal pop", "effect@1")
        hier = get("paired", N, n, "hierarchical pop", "effect@1")
        unpaired = get("paired", N, n, "unpaired boot task perc", "effect@1")
        paired = get("paired", N, n, "paired boot task perc", "effect@1")
        if hier is None:
            continue
        text = f"- Paired effect (correlated difficulty), N = {N}, n = {n}:"
        parts = []
        if ln is not None:
            parts.append(
                f"logit-normal paired population effect "
                f"{fmt_cov(ln['cov_population'], ln['se_population'])} "
                f"({ln['sims']} sims, width {_fmt(ln['width'])})"
            )
        parts.append(
            f"hierarchical unpaired {fmt_cov(hier['cov_population'], hier['se_population'])}"
            f" (width {_fmt(hier['width'])})"
        )
        if paired is not None:
            parts.append(
                f"paired task bootstrap "
                f"{fmt_cov(paired['cov_population'], paired['se_population'])} "
                f"(width {_fmt(paired['width'])})"
            )
        if unpaired is not None:
            parts.append(
                f"unpaired task bootstrap "
                f"{fmt_cov(unpaired['cov_population'], unpaired['se_population'])} "
                f"(width {_fmt(unpaired['width'])})"
            )
        lines.append(text + " " + "; ".join(parts) + ".")
    return "\n".join(lines) if lines else "_(headline cells not run)_"


#: Markers around the small-task-count section that ``benchmarks/small_n.py`` writes into
#: ``small_n.md`` and the hierarchical card (``{{small_n}}`` in its template).
SMALL_N_MARKERS = ("<!-- small_n card -->", "<!-- /small_n card -->")


def small_n_section(out_dir: Path) -> str:
    """The card section stored between :data:`SMALL_N_MARKERS` in ``out_dir/small_n.md``.

    The markers are included; a note stands in when ``benchmarks/small_n.py`` has not been run.
    """
    start, end = SMALL_N_MARKERS
    path = out_dir / "small_n.md"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        block = text[text.index(start) + len(start) : text.index(end)].strip("\n")
    else:
        block = "_(no small-N results: run `python benchmarks/small_n.py`)_"
    return f"{start}\n{block}\n{end}"


def write_cards(summary, settings, out_dir: Path, cards_dir: Path, template_dir: Path):
    """Fill each template of ``template_dir`` and write ``cards_dir/<model>.md``."""
    cards_dir.mkdir(parents=True, exist_ok=True)
    header = (
        f"<!-- Generated by `{settings['command']}` (seed {settings['seed']}, "
        f"{settings['n_sims']} sims per ordinary cell, {settings['headline_sims']} in "
        f"headline cells, logit-normal up to {settings['ln_sims']} per cell). Edit the "
        f"template in benchmarks/_cards/ and rerun; do not edit this file. -->"
    )
    for model, tables in CARD_COLUMNS.items():
        template = (template_dir / f"{model}.md").read_text()
        methods = sorted(
            {
                c[1]
                for columns in tables.values()
                for c in columns
                if c[1].split()[0] == model or model == "bootstrap"
            }
        )
        single = [s for s in SCENARIOS if s != "paired"]
        filled = {
            "{{header}}": header,
            "{{settings}}": _settings_text(settings),
            "{{headline}}": headline_text(summary),
            "{{coverage_table}}": card_coverage_table(summary, tables.get("", [])),
            "{{coverage_single}}": card_coverage_table(
                summary, tables.get("single", []), scenarios=single
            ),
            "{{coverage_paired}}": card_coverage_table(
                summary, tables.get("paired", []), scenarios=["paired"]
            ),
            "{{undercoverage}}": undercoverage_list(summary, methods),
            "{{mild_undercoverage}}": mild_undercoverage_list(summary, methods),
            "{{prior_table}}": prior_table(summary),
            "{{missing_table}}": missing_table(summary),
            "{{timing_table}}": timing_table(summary, methods),
            "{{sbc}}": sbc_section(out_dir, model),
            "{{small_n}}": small_n_section(out_dir),
        }
        for key, value in filled.items():
            template = template.replace(key, value)
        (cards_dir / f"{model}.md").write_text(template)


# -- main --------------------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n-sims", type=int, default=50, help="simulations per ordinary cell (default 50)"
    )
    parser.add_argument(
        "--headline-sims",
        type=int,
        default=700,
        help=(
            "simulations per headline cell (default 700: a Monte Carlo standard error of "
            "at most 0.01 down to coverage 0.92)"
        ),
    )
    parser.add_argument(
        "--ln-sims",
        type=int,
        default=40,
        help="logit-normal (NUTS) simulations in its main cell (paired, N = 10, "
        "n = 32); its other cells get a share (default 40)",
    )
    parser.add_argument(
        "--prior-sims",
        type=int,
        default=100,
        help="simulations per headline cell refitted under each alternative "
        "concentration prior (default 100)",
    )
    parser.add_argument(
        "--missing-sims",
        type=int,
        default=100,
        help="simulations per missing-outcome cell (default 100)",
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates")
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (grid, conjugate)")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--ln-draws", type=int, default=500)
    parser.add_argument("--ln-tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--chunk", type=int, default=25, help="simulations per work unit")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument(
        "--cards", type=Path, default=ROOT / "models", help="where the model cards go"
    )
    parser.add_argument("--no-cards", action="store_true", help="do not write model cards")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: few cells and simulations, results in <out>/quick, no cards",
    )
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS))
    parser.add_argument("--n-tasks", type=int, nargs="+")
    parser.add_argument("--n-trials", type=int, nargs="+")
    parser.add_argument("--skip-missing", action="store_true")
    parser.add_argument(
        "--save-raw", action="store_true", help="also write every interval (calibration_raw.csv.gz)"
    )
    parser.add_argument(
        "--from-raw",
        type=Path,
        help="summarise a saved calibration_raw.csv.gz instead of simulating",
    )
    args = parser.parse_args(argv)
    words = list(argv if argv is not None else sys.argv[1:])
    kept, skip = [], False
    for word in words:  # options that do not change the results are left out of the record
        if skip:
            skip = False
            continue
        if word == "--from-raw":
            skip = True
            continue
        if word == "--save-raw" or word.startswith(("--from-raw=", "--jobs")):
            skip = word == "--jobs"
            continue
        kept.append(word)
    args.command = " ".join(["python benchmarks/calibration.py"] + kept)
    if args.quick:
        args.n_sims = min(args.n_sims, 8)
        args.headline_sims = min(args.headline_sims, 16)
        args.ln_sims = min(args.ln_sims, 1)
        args.prior_sims = min(args.prior_sims, 8)
        args.missing_sims = min(args.missing_sims, 8)
        args.n_boot = min(args.n_boot, 400)
        args.n_tasks = args.n_tasks or [10]
        args.n_trials = args.n_trials or [4, 32]
        args.chunk = 6
        args.out = args.out / "quick"
        args.no_cards = True
    return args


def main(argv=None):
    """Run the study and write the tables and model cards."""
    args = parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_raw:  # re-render the tables and cards of an earlier run
        records = pd.read_csv(args.from_raw, keep_default_na=False, na_values=["", "nan", "NaN"])
        settings = json.loads((args.out / "calibration.json").read_text())
        wall = settings["wall_minutes"] * 60
    else:
        units = build_plan(args)
        print(f"{len(units)} work units on {args.jobs} process(es)", flush=True)
        records = run_plan(units, args.jobs, log=lambda s: print(s, flush=True))
        wall = time.perf_counter() - start
        cpu = sum(
            getattr(resource.getrusage(who), field)
            for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
            for field in ("ru_utime", "ru_stime")
        )
        if args.save_raw:
            records.to_csv(args.out / "calibration_raw.csv.gz", index=False, float_format="%.8g")
    if not args.from_raw:
        settings = dict(
            command=args.command,
            seed=args.seed,
            n_sims=args.n_sims,
            headline_sims=args.headline_sims,
            ln_sims=args.ln_sims,
            prior_sims=args.prior_sims,
            missing_sims=args.missing_sims,
            draws=args.draws,
            chains=args.chains,
            ln_draws=args.ln_draws,
            ln_tune=args.ln_tune,
            n_boot=args.n_boot,
            jobs=args.jobs,
            wall_minutes=wall / 60,
            cpu_minutes=cpu / 60,
            machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
        )
    summary = summarise(with_ln_subset(records, settings["ln_sims"]))
    summary.to_csv(args.out / "calibration.csv", index=False, float_format="%.6g")
    (args.out / "calibration.md").write_text(coverage_markdown(summary, settings))
    (args.out / "missing.md").write_text(
        "# Missing outcomes: difficulty-dependent timeouts\n\n"
        + _settings_text(settings)
        + f"\n\nMissingness: {MISSING}; a trial on a task of true rate p goes missing with "
        "probability clip(2 x rate x (1 - p), 0, 0.95). Truth: the complete outcomes' rates.\n\n"
        + missing_table(summary)
        + "\n"
    )
    (args.out / "priors.md").write_text(
        "# Hierarchical model: sensitivity to the concentration prior\n\n"
        + _settings_text(settings)
        + "\n\n"
        + prior_table(summary)
        + "\n"
    )
    (args.out / "calibration.json").write_text(json.dumps(settings, indent=2))
    if not args.no_cards:
        write_cards(summary, settings, args.out, args.cards, ROOT / "benchmarks" / "_cards")
    print(f"done in {wall / 60:.1f} min; tables in {args.out}", flush=True)
    print(headline_text(summary), flush=True)
    return summary


if __name__ == "__main__":
    main()
