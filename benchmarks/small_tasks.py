"""The logit-normal tasks estimand at very few tasks: exact task draws against full-latent NUTS.

Run:  python benchmarks/small_tasks.py [--draws 5000] [--chains 4] [--reps 3]

The tasks estimand is the mean of f(p[s, j]) over the benchmark's own tasks. The collapsed model
integrates each task's effects out, so the estimand's draws must be rebuilt from each task's
conditional given the cluster-level parameters. Two ways:

* ``exact`` (the default): per posterior draw, every task's rates drawn jointly from their
  conditional (adaptive rejection sampling; ``bayeval.models.kernels.exact.exact_task_sums``);
* ``normal`` (the former default at every task count): the mean over tasks drawn from the
  normal with its exact conditional mean and covariance.

The full-latent model samples every task's effects with NUTS, so the mean of its sampled rates
is a draw of the estimand from the same posterior. Both methods are applied to the full-latent
run's own hyperparameter draws (not the collapsed fit's), so the comparison isolates how each
task's effects are drawn given them. The script simulates 2 systems x 6 tasks x 2
trials (``--reps`` data sets), fits both models, and prints the 2.5%, 50% and 97.5% quantiles
of each system's pass@1 over these tasks and of the paired effect under each method, with the
difference from the full-latent quantile in units of its Monte Carlo standard error (quantile
MCSE of both runs, from ``arviz_stats.mcse``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz_stats
import numpy as np
import pymc as pm
import xarray as xr
from scipy import special

import bayeval as be
from bayeval.models import build_logit_normal_model
from bayeval.models import logit_normal as ln
from bayeval.simulate import simulate_benchmark

QUANTILES = (0.025, 0.5, 0.975)


def _as_draws(values, chains):
    """(sample,) values as a (chain, draw) DataArray for arviz_stats."""
    return xr.DataArray(np.asarray(values).reshape(chains, -1), dims=("chain", "draw"))


def _quantile_z(ours, ref, chains):
    """Per quantile: ours, the reference, and their difference over its Monte Carlo error."""
    rows = []
    for q in QUANTILES:
        a, b = _as_draws(ours, chains), _as_draws(ref, chains)
        error = np.hypot(
            float(arviz_stats.mcse(a, method="quantile", prob=q)),
            float(arviz_stats.mcse(b, method="quantile", prob=q)),
        )
        qa, qb = float(np.quantile(ours, q)), float(np.quantile(ref, q))
        rows.append((q, qa, qb, (qa - qb) / error))
    return rows


def _latent_rates(trace, data):
    post = trace["posterior"]
    flat = lambda name: post[name].stack(sample=("chain", "draw")).transpose("sample", ...).values  # noqa: E731
    eta = flat("alpha")[:, :, None] + (
        flat("sigma_task")[:, None, None] * flat("task_effect_z")[:, None, :]
    )
    eta = eta + flat("sigma_task_system")[:, None, None] * flat("task_system_effect_z")
    return special.expit(eta).mean(axis=-1)  # (sample, system)


def _tasks_draws(res, tree, exact: bool):
    """pass@1 over these tasks, (sample, system), by one method.

    Computed from the hyperparameter draws in ``tree``'s posterior.
    """
    saved = ln.model.EXACT_TASKS
    ln.model.EXACT_TASKS = saved if exact else 0
    try:
        values = res._model.tasks(tree, "pass@k", np.array([1]))
    finally:
        ln.model.EXACT_TASKS = saved
    return values.isel(k=0).stack(sample=("chain", "draw")).transpose("sample", ...).values


def run(rep, draws, chains):
    sim = simulate_benchmark(
        n_tasks=6,
        n_trials=2,
        n_systems=2,
        rates=("logit_normal", 0.3, 1.5),
        effect=[0.6],
        task_system_sd=0.5,
        seed=100 + rep,
    )
    data = sim.data
    start = time.perf_counter()
    res = be.fit(data, model="logit_normal", draws=draws, chains=chains, seed=rep)
    t_fit = time.perf_counter() - start
    with build_logit_normal_model(data, marginal=False):
        trace = pm.sample(
            draws=draws,
            tune=2000,
            chains=chains,
            random_seed=rep + 1,
            nuts_sampler="nutpie",
            progressbar=False,
            quiet=True,
            compute_convergence_checks=False,
            target_accept=0.95,
        )
    ref = _latent_rates(trace, data)
    # the estimand rebuilt from the full-latent run's own hyperparameter draws: the reference
    # and both methods then share every draw of the parameters the task effects depend on,
    # so what differs is only how each task's effects are drawn given them
    tree = res.tree.copy()
    tree["posterior"] = xr.DataTree(
        trace["posterior"].to_dataset()[["alpha", "sigma_task", "sigma_task_system"]]
    )
    timings = {}
    methods = {}
    for name, exact in (("exact", True), ("normal", False)):
        start = time.perf_counter()
        methods[name] = _tasks_draws(res, tree, exact)
        timings[name] = time.perf_counter() - start
    print(
        f"\ndata set {rep}: 2 systems x 6 tasks x 2 trials; collapsed fit {t_fit:.0f} s "
        f"({res.diagnostics['divergences']} divergences), full-latent "
        f"{int(trace['sample_stats']['diverging'].sum())} divergences; readout: exact "
        f"{timings['exact']:.2f} s, normal {timings['normal']:.2f} s"
    )
    print(f"  {'quantity':<22} {'q':>6} {'latent':>8} {'exact':>8} {'z':>6} {'normal':>8} {'z':>6}")
    worst = {"exact": 0.0, "normal": 0.0}
    quantities = [
        ("pass@1 system_0", lambda a: a[:, 0]),
        ("pass@1 system_1", lambda a: a[:, 1]),
        ("effect 1 - 0", lambda a: a[:, 1] - a[:, 0]),
    ]
    for label, pick in quantities:
        rows = {
            name: _quantile_z(pick(values), pick(ref), chains) for name, values in methods.items()
        }
        for i, q in enumerate(QUANTILES):
            _, qe, qr, ze = rows["exact"][i]
            _, qn, _, zn = rows["normal"][i]
            worst["exact"] = max(worst["exact"], abs(ze))
            worst["normal"] = max(worst["normal"], abs(zn))
            print(f"  {label:<22} {q:6.3f} {qr:8.4f} {qe:8.4f} {ze:+6.2f} {qn:8.4f} {zn:+6.2f}")
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    worst = [run(rep, args.draws, args.chains) for rep in range(args.reps)]
    print(
        f"\nlargest |z| per data set (9 quantiles each; |z| < 3 expected under agreement): "
        f"exact {[round(float(w['exact']), 2) for w in worst]}, "
        f"normal {[round(float(w['normal']), 2) for w in worst]}"
    )


if __name__ == "__main__":
    main()
