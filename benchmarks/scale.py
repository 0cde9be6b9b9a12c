"""Many analyses at once: 1,000 checkpoint groups, serial vs a local Dask cluster.

Each group has 500 tasks x 8 trials; the cluster has 2 worker processes (``fit_many``). Also
measured: what the first and the second group cost on a fresh worker (imports and compiled
kernels are paid once per worker process).

Run: ``python benchmarks/scale.py [--groups 1000]``; writes ``benchmarks/results/scale.txt``.
The fits use the hierarchical model's grid engine (deterministic quadrature, no MCMC), so the
comparison measures the scale-out layer, not a sampler.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
import pandas as pd

from bayeval.many import _fit_group, fit_many, group_seed

OPTIONS = {
    "success": None,
    "successes": "successes",
    "trials": "trials",
    "model": "hierarchical",
    "sampler": "grid",
    "draws": 200,
    "chains": 2,
    "task_draws": False,
    "log_likelihood": False,
}


def frame(groups: int, tasks: int = 500, trials: int = 8, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0.2, 0.8, groups)  # each checkpoint its own U-shaped task population
    p = rng.beta(np.repeat(mu * 0.8, tasks), np.repeat((1 - mu) * 0.8, tasks))
    return pd.DataFrame(
        {
            "checkpoint": np.repeat([f"ckpt-{g:04d}" for g in range(groups)], tasks),
            "system": "model",
            "task": np.tile(np.arange(tasks), groups),
            "successes": rng.binomial(trials, p),
            "trials": trials,
        }
    )


def same(a, b) -> bool:
    return all(
        np.array_equal(a.dataset[v].values, b.dataset[v].values, equal_nan=True)
        for v in ("pass_at_1_mean", "pass_at_1_interval", "seed")
    )


def per_worker_costs(client, df) -> list[str]:
    """Wall time of consecutive groups on one fresh worker, timed on the worker."""

    def timed(key, sub, seed):
        start = time.perf_counter()
        record = _fit_group(
            key,
            sub,
            {k: OPTIONS[k] for k in ("success", "successes", "trials")},
            {k: v for k, v in OPTIONS.items() if k not in ("success", "successes", "trials")}
            | {"progress": False},
            seed,
            0.95,
            "summary",
        )
        assert "error" not in record, record.get("error")
        return time.perf_counter() - start, os.getpid()

    worker = sorted(client.scheduler_info()["workers"])[0]
    lines = []
    for i, key in enumerate(sorted(df["checkpoint"].unique())[:3]):
        sub = df[df["checkpoint"] == key].drop(columns="checkpoint")
        seconds, pid = client.submit(
            timed, key, sub, group_seed(0, key), workers=[worker], pure=False
        ).result()
        lines.append(f"  group {i + 1} on worker pid {pid}: {seconds:.3f} s")
    return lines


def main():
    import distributed

    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    args = parser.parse_args()
    df = frame(args.groups)
    out = [
        f"fit_many: {args.groups} groups x 500 tasks x 8 trials, one system each; "
        f"model=hierarchical, sampler=grid, 2 chains x 200 draws, keep='summary'",
        f"machine: {os.cpu_count()} cores, {platform.platform()}",
        "",
    ]

    start = time.perf_counter()
    serial = fit_many(df, by="checkpoint", keep="summary", **OPTIONS)
    t_serial = time.perf_counter() - start
    out.append(
        f"serial:           {t_serial:8.1f} s  ({t_serial / args.groups * 1e3:.0f} ms per group)"
    )

    start = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        t_start = time.perf_counter() - start
        parallel = fit_many(df, by="checkpoint", client=client, keep="summary", **OPTIONS)
        t_dask = time.perf_counter() - start
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        costs = per_worker_costs(client, df)
    out.append(f"dask, 2 workers:  {t_dask:8.1f} s  (cluster start {t_start:.1f} s included)")
    out.append(f"ratio serial / dask: {t_serial / t_dask:.2f}")
    load = os.getloadavg()
    busy = (
        (
            ": above the core count, other work shared the cores and the ratio understates "
            "what two free cores give"
        )
        if load[1] > (os.cpu_count() or 1)
        else ""
    )
    out.append(
        f"load average at the end (1, 5, 15 min): {load[0]:.1f}, {load[1]:.1f}, "
        f"{load[2]:.1f} on {os.cpu_count()} cores{busy}"
    )
    out.append(
        f"same answers (pass@1 mean, intervals, seeds bit for bit): {same(serial, parallel)}"
    )
    out.append("")
    out.append(
        "cost of consecutive groups on one fresh worker process (the first pays the "
        "imports and loads the cached numba kernels):"
    )
    out.extend(costs)
    text = "\n".join(out)
    print(text)
    path = os.path.join(os.path.dirname(__file__), "results", "scale.txt")
    with open(path, "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
