"""The collapsed logit-normal model against the full-latent model it integrates.

Run:  python benchmarks/logit_normal_agreement.py [--draws 1000] [--chains 4]
      [--only toy swebench terminal swebench25] [--form collapsed|full-latent|task-latent]

``fit(model="logit_normal")`` integrates every task's effects out by quadrature and samples only
the cluster-level effects and the hyperparameters. The full-latent model samples every task and
system-task effect with NUTS instead. Both are the same posterior, so every quantity must agree
within Monte Carlo error. The script fits both on

* a three-system clustered toy (simulated: 8 clusters x 6 tasks, 4 trials, known effects),
* the SWE-bench Verified pair (claude-opus-4-5 vs gpt-5.1, 500 tasks, 12 repositories),
* with ``--only swebench25``, all 25 SWE-bench systems (three paired effects: systems 1-3
  against system 0),
* with ``--only terminal``, Terminal-Bench (13 systems x 80 tasks x 5 trials, non-ok attempts
  as failures), where most counts are 0 or 5 of 5 and the inner integrals are one-sided;

and prints, per quantity, the posterior mean and sd under each, the difference of means in
units of its Monte Carlo standard error (``z``; from the bulk ESS of both runs), and the
divergences. Quantities: the variance components; pass@1 of a new task from a new cluster
per system (computed from the hyperparameters in the same way for both runs); the paired
effect for a new task; and the paired effect over these tasks, where the full-latent value is
the mean over tasks of the sampled task rates while the collapsed value comes from the
exact draws of the integrated effects (``Results.compare(..., estimand="tasks")``).

``--form full-latent`` checks the other form ``fit`` samples (on Terminal-Bench, LiveCodeBench
and other multi-trial data of several systems): the full-latent form as one compiled log
density, sampled without PyMC, whose tasks estimand is read from its kept task effects and
the task-by-system effects drawn exactly given them, against the same model written with
PyMC distributions: two implementations of one posterior. ``--form task-latent`` checks the
form ``fit`` samples for many systems with one or two trials a task (all 25 SWE-bench
systems): task effects sampled, each cell's task-by-system effect integrated out.
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz_stats
import numpy as np
import pymc as pm
from scipy import special

import bayeval as be
from bayeval.models import build_logit_normal_model, logit_normal
from bayeval.models.logit_normal import normal_expectation
from bayeval.simulate import simulate_benchmark

SWE_PAIR = [
    "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    "20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
]
SETS = ["toy", "swebench", "terminal", "swebench25"]
COMPONENTS = ["sigma_task", "sigma_task_system", "sigma_cluster", "sigma_cluster_system"]


def _flat(da):
    return da.stack(sample=("chain", "draw")).transpose("sample", ...).values


def _new_cluster_pass1(post):
    """pass@1 of a new task from a new cluster, per draw and system: E expit(alpha + N(0, s2))."""
    total = sum(_flat(post[name]) ** 2 for name in COMPONENTS if name in post)
    return normal_expectation(
        _flat(post["alpha"]), np.sqrt(total)[:, None], "pass@k", np.array([1])
    )[..., 0]


def _latent_task_rates(post, data):
    """Sampled task rates of the full-latent model, (sample, system, task)."""
    obs = data.dataset
    clusters = list(post["cluster_effect"]["cluster"].values)
    code = np.array([clusters.index(g) for g in obs["cluster"].values])
    eta = (
        _flat(post["alpha"])[:, :, None]
        + _flat(post["cluster_effect"])[:, None, code]
        + _flat(post["cluster_system_effect"])[:, :, code]
    )
    eta = eta + (
        _flat(post["sigma_task"])[:, None, None] * _flat(post["task_effect_z"])[:, None, :]
    )
    if "task_system_effect_z" in post:
        eta = eta + (
            _flat(post["sigma_task_system"])[:, None, None] * _flat(post["task_system_effect_z"])
        )
    return special.expit(eta)


def _row(name, ours, ref, ess_ours, ess_ref):
    error = np.sqrt(ours.var() / ess_ours + ref.var() / ess_ref)
    z = (ours.mean() - ref.mean()) / error
    print(
        f"  {name:<40} {ours.mean():9.4f} {ours.std():8.4f}   {ref.mean():9.4f} "
        f"{ref.std():8.4f}   {z:+6.2f}"
    )
    return z


def compare(label, data, draws, chains, seed, form="collapsed", effects=None):
    """``fit`` in ``form`` against the full-latent model written with PyMC distributions."""
    systems = data.systems
    start = time.perf_counter()
    caps = logit_normal.layout.LATENT_CELLS, logit_normal.layout.TASK_LATENT_SYSTEMS
    # the form asked for, whichever fit would pick
    logit_normal.layout.LATENT_CELLS = 1 if form == "full-latent" else 10**12
    logit_normal.layout.TASK_LATENT_SYSTEMS = 2 if form == "task-latent" else 10**12
    try:
        res = be.fit(data, model="logit_normal", draws=draws, chains=chains, seed=seed)
    finally:
        logit_normal.layout.LATENT_CELLS, logit_normal.layout.TASK_LATENT_SYSTEMS = caps
    assert res.tree.attrs["form"] == form
    t_collapsed = time.perf_counter() - start
    start = time.perf_counter()
    with build_logit_normal_model(data, marginal=False):
        trace = pm.sample(
            draws=draws,
            tune=1000,
            chains=chains,
            random_seed=seed + 1,
            nuts_sampler="nutpie",
            progressbar=False,
            quiet=True,
            compute_convergence_checks=False,
        )
    t_latent = time.perf_counter() - start
    post_c = res.tree["posterior"].to_dataset()
    post_l = trace["posterior"].to_dataset()
    ess_c = res.diagnostics["min_ess_bulk"]
    ess_l = float(
        np.nanmin(
            arviz_stats.ess(
                post_l[["alpha"] + [c for c in COMPONENTS if c in post_l]],
                sample_dims=["chain", "draw"],
                method="bulk",
            )
            .to_array()
            .values
        )
    )
    print(
        f"\n{label}: {data.dataset.sizes['system']} systems x {data.dataset.sizes['task']} "
        f"tasks; fit ({form}) {t_collapsed:.0f} s ({res.diagnostics['divergences']} "
        f"divergences), PyMC full-latent {t_latent:.0f} s "
        f"({int(trace['sample_stats']['diverging'].sum())} "
        f"divergences); Monte Carlo errors from the smaller bulk ESS of each run "
        f"({ess_c:.0f} and {ess_l:.0f})"
    )
    print(f"  {'quantity':<40} {'fit':>9} {'sd':>8}   {'PyMC':>9} {'sd':>8}   {'z':>6}")
    zs = []
    for name in COMPONENTS:
        if name in post_c:
            zs.append(_row(name, _flat(post_c[name]), _flat(post_l[name]), ess_c, ess_l))
    new_c, new_l = _new_cluster_pass1(post_c), _new_cluster_pass1(post_l)
    for i, system in enumerate(systems):
        zs.append(
            _row(f"pass@1 new cluster: {system[-24:]}", new_c[:, i], new_l[:, i], ess_c, ess_l)
        )
    rates = _latent_task_rates(post_l, data).mean(axis=-1)  # (sample, system)
    for i in range(1, len(systems) if effects is None else effects + 1):
        zs.append(
            _row(
                f"effect new cluster: {i} - 0",
                new_c[:, i] - new_c[:, 0],
                new_l[:, i] - new_l[:, 0],
                ess_c,
                ess_l,
            )
        )
        ours = _flat(res.compare(systems[i], systems[0], estimand="tasks")["effect"])
        zs.append(
            _row(f"effect these tasks: {i} - 0", ours, rates[:, i] - rates[:, 0], ess_c, ess_l)
        )
    worst = np.max(np.abs(zs))
    print(
        f"  largest |z| over {len(zs)} quantities: {worst:.2f} (|z| < 3 expected for each "
        f"under agreement)"
    )
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--only", nargs="+", choices=SETS, default=["toy", "swebench"])
    parser.add_argument(
        "--form",
        choices=["collapsed", "full-latent", "task-latent"],
        default="collapsed",
        help="the form fit samples (forced), against the PyMC full-latent model",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    if "toy" in args.only:
        sim = simulate_benchmark(
            n_tasks=48,
            n_trials=4,
            n_systems=3,
            clusters=8,
            rates=("logit_normal", 0.0, 1.5),
            cluster_sd=0.8,
            effect=[0.5, -0.4],
            task_system_sd=0.5,
            seed=11,
        )
        compare(
            "three-system clustered toy", sim.data, args.draws, args.chains, seed=1, form=args.form
        )
    if "swebench" in args.only:
        data = be.datasets.load("swebench_verified").sel(system=SWE_PAIR)
        compare("SWE-bench Verified pair", data, args.draws, args.chains, seed=1, form=args.form)
    if "terminal" in args.only:
        data = be.datasets.load("terminal_bench", missing="fail")
        compare(
            "Terminal-Bench (5 trials per task)",
            data,
            args.draws,
            args.chains,
            seed=1,
            form=args.form,
        )
    if "swebench25" in args.only:
        data = be.datasets.load("swebench_verified")
        compare(
            "SWE-bench Verified, all systems",
            data,
            args.draws,
            args.chains,
            seed=1,
            form=args.form,
            effects=3,
        )


if __name__ == "__main__":
    main()
