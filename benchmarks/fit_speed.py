"""Wall time of the hierarchical fit by engine, against the full-latent model and bootstrap.

The benchmarks are simulated and U-shaped, with 16 trials per task; the full-latent model is
the naive one.

Run:  python benchmarks/fit_speed.py [--sizes 10 1000 100000] [--draws 1000] [--chains 4]

For each task count it times, cold (first call in the process: compilation included) and warm
(second call on new data of the same size):

* ``grid``      the grid engine (tasks grouped by count pattern);
* ``nutpie``    NUTS (nutpie) on the marginal model, one term per count pattern;
* ``latent``    NUTS (nutpie) on the naive full-latent model, a rate per task (<= 1,000 tasks);
* ``bootstrap`` 10,000 task-bootstrap replicates;

and prints the ratios to the grid engine, with the divergences of each NUTS run.

Then the logit-normal model (``--logit-normal-only`` skips the above) on the SWE-bench Verified
pair (claude-opus-4-5 vs gpt-5.1, 500 tasks, 12 repositories), all 25 systems x 500 tasks,
Terminal-Bench (13 x 80 x 5 trials; ``--logit-normal-data tb``) and LiveCodeBench (45 x 400 x
10 samples; ``lcb``): the default fit, in the form it picks
(:func:`bayeval.models.logit_normal.sampling_form`: collapsed, task effects integrated out by
quadrature; full-latent, a latent effect per task and per system-task; or task-latent, a latent
effect per task with each system-task effect integrated out), against the collapsed form (or,
for a collapsed fit, the full-latent one), both warm (after a first fit of the same shapes: the
numba caches are warm, and the collapsed form reuses its compiled model with the data swapped
in, as any fit whose parameter vector has the same size does; the full-latent form builds and
compiles its model in each fit), with the paired cluster bootstrap as the baseline. The lowest
bulk ESS of the quantities ``fit`` keeps (intercepts, spreads, cluster effects) gives the time
per effective draw. ``--latent-cap`` skips the full-latent comparison above that many latent
effects, and the collapsed comparison is skipped above ``COLLAPSED_CAP`` cells. Where ``fit``
samples the full-latent form (one compiled log density sampled without PyMC, keeping only the
parameters and the task effects per draw), the row ``PyMC graph`` times the same form written
with PyMC distributions and sampled through PyMC (compiled anew in each fit, as ``fit`` did
before), in the same run.
"""

import argparse
import time
import warnings

import numpy as np
import pymc as pm

import bayeval as be
from bayeval._arviz import convergence
from bayeval.models import build_hierarchical_model, build_logit_normal_model
from bayeval.models import logit_normal as logit_normal_module
from bayeval.models.logit_normal import POSTERIOR_VARS

LATENT_CAP = 1_000


def simulate(n_tasks: int, seed: int):
    rng = np.random.default_rng(seed)
    return be.from_counts(rng.binomial(16, rng.beta(0.4, 0.3, size=n_tasks)), 16)


def run_latent(data, draws, chains, seed):
    with build_hierarchical_model(data, marginal=False):
        trace = pm.sample(
            draws=draws,
            tune=1000,
            chains=chains,
            random_seed=seed,
            nuts_sampler="nutpie",
            progressbar=False,
            quiet=True,
            compute_convergence_checks=False,
        )
    return int(trace["sample_stats"]["diverging"].sum())


SWE_PAIR = (
    "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    "20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
)


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


def _latent_logit_normal(data, draws, chains, seed):
    """Full-latent fit: divergences and the lowest bulk ESS of the quantities ``fit`` keeps."""
    with build_logit_normal_model(data, marginal=False):
        trace = pm.sample(
            draws=draws,
            tune=1000,
            chains=chains,
            random_seed=seed,
            nuts_sampler="nutpie",
            progressbar=False,
            quiet=True,
            compute_convergence_checks=False,
        )
    post = trace["posterior"].to_dataset()
    kept = post[[name for name in POSTERIOR_VARS if name in post]]
    return (int(trace["sample_stats"]["diverging"].sum()), convergence(kept, None)["min_ess_bulk"])


def _clusters_nest(data) -> bool:
    """Whether every cluster lies inside one stratum (what a cluster bootstrap needs)."""
    ds = data.dataset
    if "stratum" not in ds.coords:
        return True
    pairs = set(zip(ds["cluster"].values.tolist(), ds["stratum"].values.tolist(), strict=True))
    return len(pairs) == len(set(ds["cluster"].values.tolist()))


#: Above this many system-task cells the collapsed comparison of a full-latent fit is skipped
#: (LiveCodeBench's 18,000 cells: tens of minutes on 2 cores).
COLLAPSED_CAP = 5000


def _row(label, engine, seconds, boot, divergences, steps, ess, fitted=None, fitted_ess=None):
    """One line of the logit-normal table; with ``fitted``, the default fit's speed-up."""
    steps_text = "" if steps is None else f"{steps:.1f}"
    line = (
        f"{label:<18} {engine:<12} {seconds:8.1f} {seconds / boot:11.0f}x "
        f"{divergences:>12} {steps_text:>16} {ess:13.0f} {1000 * seconds / ess:9.1f}"
    )
    if fitted is not None:
        line += (
            f"   the fit is {seconds / fitted:.1f}x faster, "
            f"{(seconds / ess) / (fitted / fitted_ess):.1f}x per effective draw"
        )
    print(line)


def logit_normal(draws, chains, latent_cap, sets=("pair", "all")):
    """Collapsed vs full-latent logit-normal on four data sets.

    The data sets: the SWE-bench pair, all 25 SWE-bench systems, Terminal-Bench (5 trials per
    task) and LiveCodeBench (10 samples per task).
    """
    full = be.datasets.load("swebench_verified")
    pair = full.sel(system=list(SWE_PAIR))
    chosen = {
        "pair": ("pair (2 x 500)", pair),
        "all": ("all (25 x 500)", full),
        "tb": ("TB (13 x 80 x 5)", be.datasets.load("terminal_bench", missing="fail")),
        "lcb": ("LCB (45 x 400 x 10)", be.datasets.load("livecodebench")),
    }
    print(
        f"\nlogit-normal (SWE-bench Verified, Terminal-Bench, LiveCodeBench), {chains} chains x "
        f"{draws} draws (warm)"
    )
    print(
        f"{'data':<18} {'engine':<12} {'s':>8} {'/ bootstrap':>12} {'divergences':>12} "
        f"{'grad evals/draw':>16} {'min bulk ESS':>13} {'ms / ESS':>9}"
    )
    for label, data in (chosen[name] for name in sets):
        systems = data.systems
        # clusters resampled whole, or tasks where clusters cross strata (LiveCodeBench)
        unit = "cluster" if _clusters_nest(data) else "task"
        _, boot = _timed(
            be.bootstrap.compare, data, systems[0], systems[1], unit=unit, n_boot=10_000, seed=0
        )
        _, first = _timed(be.fit, data, model="logit_normal", draws=50, chains=1, tune=50, seed=0)
        print(
            f"{label:<18} {'(first call':<12} {first:8.1f}   in the process: 1 chain x 50 draws, "
            f"loading and compiling included)"
        )
        res, fitted = _timed(
            be.fit, data, model="logit_normal", draws=draws, chains=chains, seed=1, task_draws=False
        )
        form = res.tree.attrs["form"]
        _row(
            label,
            f"fit: {form}",
            fitted,
            boot,
            res.diagnostics["divergences"],
            float(res.tree["sample_stats"]["n_steps"].mean()),
            res.diagnostics["min_ess_bulk"],
        )
        n_latent = data.dataset.sizes["task"] * (1 + len(systems))
        cells = data.dataset.sizes["task"] * len(systems)
        if form == "full-latent":  # the same form written with PyMC distributions (before)
            (divergences, latent_ess), latent = _timed(_latent_logit_normal, data, draws, chains, 1)
            _row(
                label,
                "PyMC graph",
                latent,
                boot,
                divergences,
                None,
                latent_ess,
                fitted,
                res.diagnostics["min_ess_bulk"],
            )
        if form == "full-latent" and cells > COLLAPSED_CAP:
            print(
                f"{label:<18} {'collapsed':<12} skipped ({cells} cells > {COLLAPSED_CAP}: "
                "see benchmarks/scale_paired.py for its gradient cost)"
            )
        elif form in ("full-latent", "task-latent"):  # the collapsed form, for the ratio
            name = "LATENT_CELLS" if form == "full-latent" else "TASK_LATENT_SYSTEMS"
            cap = getattr(logit_normal_module.layout, name)
            setattr(logit_normal_module.layout, name, 10**12)
            try:
                other, other_s = _timed(
                    be.fit,
                    data,
                    model="logit_normal",
                    draws=draws,
                    chains=chains,
                    seed=1,
                    task_draws=False,
                )
            finally:
                setattr(logit_normal_module.layout, name, cap)
            _row(
                label,
                "collapsed",
                other_s,
                boot,
                other.diagnostics["divergences"],
                float(other.tree["sample_stats"]["n_steps"].mean()),
                other.diagnostics["min_ess_bulk"],
                fitted,
                res.diagnostics["min_ess_bulk"],
            )
        elif n_latent > latent_cap:
            print(
                f"{label:<18} {'full-latent':<12} skipped ({n_latent} latent effects > "
                f"--latent-cap {latent_cap})"
            )
        else:
            _latent_logit_normal(data, 50, 1, 0)  # compile
            (divergences, latent_ess), latent = _timed(_latent_logit_normal, data, draws, chains, 1)
            _row(
                label,
                "full-latent",
                latent,
                boot,
                divergences,
                None,
                latent_ess,
                fitted,
                res.diagnostics["min_ess_bulk"],
            )
        print(f"{label:<18} {'bootstrap':<12} {boot:8.2f} {1:11.0f}x   (paired {unit}, 10,000)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1_000, 100_000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--logit-normal-only", action="store_true")
    parser.add_argument("--latent-cap", type=int, default=20_000)
    parser.add_argument(
        "--logit-normal-data",
        nargs="+",
        choices=["pair", "all", "tb", "lcb"],
        default=["pair", "all"],
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    if args.logit_normal_only:
        logit_normal(args.draws, args.chains, args.latent_cap, args.logit_normal_data)
        return
    rows = []
    for size in args.sizes:
        times, divergences = {}, {}
        for phase, seed in (("cold", 1), ("warm", 2)):
            data = simulate(size, seed)
            start = time.perf_counter()
            be.fit(
                data,
                draws=args.draws,
                chains=args.chains,
                seed=seed,
                sampler="grid",
                task_draws=False,
            )
            times["grid", phase] = time.perf_counter() - start
            start = time.perf_counter()
            res = be.fit(
                data,
                draws=args.draws,
                chains=args.chains,
                seed=seed,
                sampler="nutpie",
                task_draws=False,
            )
            times["nutpie", phase] = time.perf_counter() - start
            divergences["nutpie"] = res.diagnostics["divergences"]
            if size <= LATENT_CAP:
                start = time.perf_counter()
                divergences["latent"] = run_latent(data, args.draws, args.chains, seed)
                times["latent", phase] = time.perf_counter() - start
            start = time.perf_counter()
            be.bootstrap.pass_at_k(data, unit="task", n_boot=10_000, seed=seed)
            times["bootstrap", phase] = time.perf_counter() - start
        rows.append((size, times, divergences))

    print(f"hierarchical fit, 16 trials per task, {args.chains} chains x {args.draws} draws")
    print(
        f"{'tasks':>8} {'engine':<10} {'cold s':>8} {'warm s':>8} {'warm / grid':>12} "
        f"{'divergences':>12}"
    )
    for size, times, divergences in rows:
        for engine in ("grid", "nutpie", "latent", "bootstrap"):
            if (engine, "warm") not in times:
                print(f"{size:>8} {engine:<10} {'skipped (more than 1,000 tasks)':>42}")
                continue
            warm = times[engine, "warm"]
            print(
                f"{size:>8} {engine:<10} {times[engine, 'cold']:8.3f} {warm:8.3f} "
                f"{warm / times['grid', 'warm']:11.1f}x {divergences.get(engine, ''):>12}"
            )
    logit_normal(args.draws, args.chains, args.latent_cap, args.logit_normal_data)


if __name__ == "__main__":
    main()
