"""Simulation-based calibration (SBC) of bayeval's Bayesian models.

Run (from the repository root)::

    PYTHONPATH=. python benchmarks/sbc.py                        # all three models
    PYTHONPATH=. python benchmarks/sbc.py --models hierarchical --replicates 1000

For each replicate: draw the parameters from the model's ``DEFAULT_PRIORS``, simulate counts
from the model, fit it with bayeval, and rank each true quantity among ``L`` roughly independent
posterior draws (the grid and conjugate engines draw independently; NUTS draws are thinned).
If the fit is right, every rank is uniform on ``0..L`` (Talts et al., 2018). The ranks go to
``B`` bins (equal width) and are tested with a chi-square test of equal bin counts; a
Kolmogorov-Smirnov test on the randomised normalised ranks ``(rank + U) / (L + 1)`` is reported
beside it.

Quantities ranked:

* ``beta_binomial``: the rate of the first task, and the tasks-estimand pass@1 (mean rate);
* ``hierarchical``: ``mu``, ``log kappa``, the population pass@5 (a function of both) and the
  tasks-estimand pass@1;
* ``logit_normal`` (one system, no clusters): ``alpha``, ``sigma_task`` and the population
  pass@1.

Writes ``sbc.csv`` (one row per model and quantity), ``sbc_ranks.csv``, ``sbc.md`` and
``sbc.json`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayeval as be  # noqa: E402
from bayeval.models import beta_binomial, hierarchical, logit_normal  # noqa: E402

MODELS = ("beta_binomial", "hierarchical", "logit_normal")
MODEL_INDEX = {m: i for i, m in enumerate(MODELS)}
K_POP = 5


def draw_prior(model: str, n_tasks: int, rng: np.random.Generator) -> tuple[dict, np.ndarray]:
    """Parameters from the model's default priors, and the task rates they imply.

    Parameters
    ----------
    model : {"beta_binomial", "hierarchical", "logit_normal"}
    n_tasks : int
    rng : numpy.random.Generator

    Returns
    -------
    truth : dict
        True values of the ranked quantities (the tasks-estimand pass@1 included).
    rates : numpy.ndarray, shape (n_tasks,)
    """
    if model == "beta_binomial":
        a, b = beta_binomial.DEFAULT_PRIORS["p"]
        p = rng.beta(a, b, n_tasks)
        return {"p[task 0]": p[0], "tasks pass@1": p.mean()}, p
    if model == "hierarchical":
        a_mu, b_mu = hierarchical.DEFAULT_PRIORS["mu"]
        m_k, s_k = hierarchical.DEFAULT_PRIORS["log_kappa"]
        mu = rng.beta(a_mu, b_mu)
        log_kappa = rng.normal(m_k, s_k)
        kappa = np.exp(log_kappa)
        a, b = mu * kappa, (1 - mu) * kappa
        p = rng.beta(a, b, n_tasks)
        pop = -np.expm1(special.betaln(a, b + K_POP) - special.betaln(a, b))
        return {
            "mu": mu,
            "log kappa": log_kappa,
            f"population pass@{K_POP}": pop,
            "tasks pass@1": p.mean(),
        }, p
    priors = logit_normal.DEFAULT_PRIORS
    alpha = rng.normal(*priors["alpha"])
    sigma = abs(rng.normal(0.0, priors["sigma_task"]))
    p = special.expit(alpha + sigma * rng.standard_normal(n_tasks))
    pop = float(
        logit_normal.normal_expectation(
            np.array([alpha]), np.array([sigma]), "pass@k", np.array([1])
        )[0, 0]
    )
    return {"alpha": alpha, "sigma_task": sigma, "population pass@1": pop}, p


def posterior_draws(model: str, data, seed: int, opts: dict) -> dict:
    """Posterior draws of the ranked quantities, thinned to about ``opts["draws"]``.

    Returns
    -------
    dict
        Quantity -> 1-d array of draws (the same keys as :func:`draw_prior`'s truth).
    """
    n_draws = opts["draws"]
    if model == "beta_binomial":
        res = be.fit(data, model="beta_binomial", draws=n_draws, chains=1, seed=seed)
        return {
            "p[task 0]": res.task_rates().values[0, :, 0, 0],
            "tasks pass@1": res.pass_at_k(k=1, estimand="tasks").values[0, :, 0],
        }
    if model == "hierarchical":
        res = be.fit(
            data,
            model="hierarchical",
            sampler="grid",
            draws=n_draws,
            chains=1,
            seed=seed,
            task_draws=False,
        )
        post = res.tree["posterior"]
        return {
            "mu": post["mu"].values[0, :, 0],
            "log kappa": np.log(post["kappa"].values[0, :, 0]),
            f"population pass@{K_POP}": res.pass_at_k(k=K_POP, estimand="population").values[
                0, :, 0
            ],
            "tasks pass@1": res.pass_at_k(k=1, estimand="tasks").values[0, :, 0],
        }
    chains = opts["ln_chains"]
    per_chain = opts["ln_draws"]
    res = be.fit(
        data, model="logit_normal", draws=per_chain, tune=opts["ln_tune"], chains=chains, seed=seed
    )
    thin = max(1, (chains * per_chain) // n_draws)

    def flat(values):
        return values.reshape(-1)[::thin][:n_draws]

    post = res.tree["posterior"]
    return {
        "alpha": flat(post["alpha"].values[..., 0]),
        "sigma_task": flat(post["sigma_task"].values),
        "population pass@1": flat(res.pass_at_k(k=1, estimand="population").values[..., 0]),
    }


def replicate(model: str, index: int, seed: int, opts: dict) -> list[dict]:
    """One SBC replicate: prior draw, simulation, fit, ranks.

    Parameters
    ----------
    model : str
    index : int
        Replicate number (recorded).
    seed : int
        Seed of the prior draw, the simulated counts and the fit.
    opts : dict
        ``n_tasks``, ``n_trials``, ``draws`` (posterior draws ranked against) and the NUTS
        settings ``ln_chains``, ``ln_draws``, ``ln_tune``.

    Returns
    -------
    list of dict
        One row per quantity: ``rank`` (number of draws below the truth), ``draws`` (L).
    """
    rng = np.random.default_rng(seed)
    truth, p = draw_prior(model, opts["n_tasks"], rng)
    counts = rng.binomial(opts["n_trials"], p)
    data = be.from_counts(counts, opts["n_trials"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draws = posterior_draws(model, data, seed, opts)
    rows = []
    for name, value in truth.items():
        d = np.asarray(draws[name])
        rows.append(
            dict(
                model=model,
                replicate=index,
                quantity=name,
                truth=float(value),
                rank=int((d < value).sum()),
                draws=len(d),
                ties=int((d == value).sum()),
            )
        )
    return rows


def _seed(base: int, model: str, index: int) -> int:
    ss = np.random.SeedSequence([base, MODEL_INDEX[model]], spawn_key=(index,))
    return int(ss.generate_state(1)[0])


def _run_chunk(job):
    model, start, stop, base, opts = job
    warnings.simplefilter("ignore")
    rows = []
    for index in range(start, stop):
        rows.extend(replicate(model, index, _seed(base, model, index), opts))
    return rows


def _init_worker():
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    warnings.simplefilter("ignore")


def run_sbc(
    model: str, replicates: int, seed: int, opts: dict, jobs: int = 1, chunk: int = 20
) -> pd.DataFrame:
    """Ranks of every quantity over ``replicates`` replicates of one model.

    Returns
    -------
    pandas.DataFrame
        One row per (replicate, quantity).
    """
    jobs_list = [
        (model, s, min(s + chunk, replicates), seed, opts) for s in range(0, replicates, chunk)
    ]
    if jobs <= 1:
        parts = [_run_chunk(j) for j in jobs_list]
    else:
        with mp.get_context("spawn").Pool(jobs, initializer=_init_worker) as pool:
            parts = pool.map(_run_chunk, jobs_list, chunksize=1)
    return pd.DataFrame([row for part in parts for row in part])


def uniformity(ranks: pd.DataFrame, bins: int, seed: int = 0) -> pd.DataFrame:
    """Chi-square and KS tests of uniform ranks per (model, quantity).

    Parameters
    ----------
    ranks : pandas.DataFrame
        Output of :func:`run_sbc` (columns ``model``, ``quantity``, ``rank``, ``draws``).
    bins : int
        Equal-width bins over ``0..L`` (``L + 1`` must be divisible by ``bins`` for exactly
        equal expected counts; otherwise the expected counts follow the bin sizes).
    seed : int
        Seed of the randomisation of the normalised ranks for the KS test.

    Returns
    -------
    pandas.DataFrame
        ``replicates``, ``draws`` (L), ``bins``, ``chi2``, ``p_chi2``, ``p_ks``, ``counts``.
    """
    rng = np.random.default_rng(seed)
    out = []
    for (model, quantity), group in ranks.groupby(["model", "quantity"], sort=False):
        L = int(group["draws"].iloc[0])
        r = group["rank"].to_numpy()
        edges = np.linspace(0, L + 1, bins + 1)
        counts, _ = np.histogram(r, bins=edges)
        sizes = np.diff(np.floor(edges))
        expected = len(r) * sizes / sizes.sum()
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        p_chi2 = float(stats.chi2.sf(chi2, bins - 1))
        u = (r + rng.uniform(size=len(r))) / (L + 1)
        p_ks = float(stats.kstest(u, "uniform").pvalue)
        out.append(
            dict(
                model=model,
                quantity=quantity,
                replicates=len(r),
                draws=L,
                bins=bins,
                chi2=chi2,
                p_chi2=p_chi2,
                p_ks=p_ks,
                counts=" ".join(str(int(c)) for c in counts),
            )
        )
    return pd.DataFrame(out)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument(
        "--replicates",
        type=int,
        default=500,
        help="replicates for the grid and conjugate models (default 500)",
    )
    parser.add_argument(
        "--ln-replicates",
        type=int,
        default=100,
        help="replicates for the logit-normal model (NUTS; default 100)",
    )
    parser.add_argument("--n-tasks", type=int, default=20)
    parser.add_argument("--n-trials", type=int, default=8)
    parser.add_argument(
        "--draws",
        type=int,
        default=99,
        help="posterior draws each truth is ranked among (L; default 99)",
    )
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--ln-bins", type=int, default=10)
    parser.add_argument("--ln-chains", type=int, default=2)
    parser.add_argument(
        "--ln-draws", type=int, default=500, help="NUTS draws per chain (thinned to --draws)"
    )
    parser.add_argument("--ln-tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.command = (
        "python benchmarks/sbc.py"
        + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip()
    )
    return args


def main(argv=None):
    """Run SBC for the chosen models and write the tables."""
    args = parse_args(argv)
    opts = dict(
        n_tasks=args.n_tasks,
        n_trials=args.n_trials,
        draws=args.draws,
        ln_chains=args.ln_chains,
        ln_draws=args.ln_draws,
        ln_tune=args.ln_tune,
    )
    all_ranks, tables, seconds = [], [], {}
    for model in args.models:
        start = time.perf_counter()
        count = args.ln_replicates if model == "logit_normal" else args.replicates
        ranks = run_sbc(
            model,
            count,
            args.seed,
            opts,
            jobs=args.jobs,
            chunk=4 if model == "logit_normal" else 50,
        )
        seconds[model] = time.perf_counter() - start
        bins = args.ln_bins if model == "logit_normal" else args.bins
        tables.append(uniformity(ranks, bins, seed=args.seed))
        all_ranks.append(ranks)
        print(f"{model}: {count} replicates in {seconds[model]:.0f} s", flush=True)
    table = pd.concat(tables, ignore_index=True)
    ranks = pd.concat(all_ranks, ignore_index=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "sbc.csv"
    if path.exists():  # keep other models' earlier results
        old = pd.read_csv(path)
        table = pd.concat([old[~old["model"].isin(args.models)], table], ignore_index=True)
    table["order"] = table["model"].map(MODEL_INDEX)
    table = table.sort_values("order", kind="stable").drop(columns="order")
    table.to_csv(path, index=False, float_format="%.6g")
    ranks_path = args.out / "sbc_ranks.csv"
    if ranks_path.exists():
        old = pd.read_csv(ranks_path)
        ranks = pd.concat([old[~old["model"].isin(args.models)], ranks], ignore_index=True)
    ranks.to_csv(ranks_path, index=False, float_format="%.6g")
    info = dict(
        commands={m: args.command for m in args.models},
        seed=args.seed,
        n_tasks=args.n_tasks,
        n_trials=args.n_trials,
        draws=args.draws,
        seconds=seconds,
        logit_normal_nuts=dict(chains=args.ln_chains, draws=args.ln_draws, tune=args.ln_tune),
    )
    meta = args.out / "sbc.json"
    if meta.exists():  # keep the other models' records
        old = json.loads(meta.read_text())
        info["seconds"] = {**old.get("seconds", {}), **seconds}
        info["commands"] = {**old.get("commands", {}), **info["commands"]}
    meta.write_text(json.dumps(info, indent=2))
    lines = [
        "# Simulation-based calibration",
        "",
        (
            f"Commands: {', '.join(f'`{c}`' for c in dict.fromkeys(info['commands'].values()))}"
            f". {args.n_tasks} tasks x {args.n_trials} trials per "
            f"replicate; each truth ranked among L = {args.draws} posterior draws (NUTS: "
            f"{args.ln_chains} chains x {args.ln_draws} draws after {args.ln_tune} tuning, "
            "thinned). Uniform ranks are what a calibrated fit gives: small p-values flag a "
            "miscalibrated posterior."
        ),
        "",
        (
            "| model | quantity | replicates | L | bins | bin counts | chi-square | p-value "
            "| KS p-value |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['model']} | {r['quantity']} | {r['replicates']} | {r['draws']} | "
            f"{r['bins']} | {r['counts']} | {r['chi2']:.1f} | {r['p_chi2']:.3f} | "
            f"{r['p_ks']:.3f} |"
        )
    (args.out / "sbc.md").write_text("\n".join(lines) + "\n")
    print(table.to_string(index=False), flush=True)
    return table


if __name__ == "__main__":
    main()
