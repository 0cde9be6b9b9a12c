"""What ranking many systems costs: the default fit and the rank readouts at leaderboard size.

Run:  python benchmarks/rank_timing.py [--data swebench livecodebench] [--draws 1000]
      [--estimands population tasks]

For each bundled file (SWE-bench Verified 25 x 500 x 1, LiveCodeBench 45 x 400 x 10) it fits
the default model (``fit(data)``: ``logit_normal``, in the form ``sampling_form`` picks) and
times ``Results.ranks``, ``Results.rank_groups`` and ``Results.compare_all`` for the
population estimand (a new task) and the tasks estimand (these tasks), each first call (which
computes the estimand's draws) and again (cached), beside the fit's own time, and the
bootstrap twin ``bootstrap.rank_sets``. Appends to ``benchmarks/results/rank_timing.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import bayeval as be

FILES = {
    "swebench": ("swebench_verified", {}, "cluster"),
    "livecodebench": ("livecodebench", {}, "task"),
}


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", choices=list(FILES), default=list(FILES))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument(
        "--estimands", nargs="+", choices=["population", "tasks"], default=["population", "tasks"]
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "rank_timing.txt"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore", be.BayevalWarning)
    lines = [
        f"# python benchmarks/rank_timing.py --data {' '.join(args.data)} --draws "
        f"{args.draws} --chains {args.chains} --estimands {' '.join(args.estimands)}   "
        f"({time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})"
    ]
    for name in args.data:
        key, options, unit = FILES[name]
        data = be.datasets.load(key, **options)
        res, fit_s = _timed(
            be.fit,
            data,
            draws=args.draws,
            chains=args.chains,
            seed=1,
            progress=False,
            log_likelihood=False,
        )
        sizes = data.dataset.sizes
        lines += [
            "",
            f"{name}: {sizes['system']} systems x {sizes['task']} tasks; fit "
            f"{res.model} ({res.tree.attrs.get('form')}) {fit_s:.1f} s, "
            f"{res.diagnostics['divergences']} divergences, min bulk ESS "
            f"{res.diagnostics['min_ess_bulk']:.0f}",
            f"{'readout':<36} {'first s':>8} {'again s':>8}",
        ]
        print("\n".join(lines[-3:]), flush=True)
        for estimand in args.estimands:
            for label, method in (
                ("ranks", res.ranks),
                ("rank_groups", res.rank_groups),
                ("compare_all", res.compare_all),
            ):
                _, first = _timed(method, estimand=estimand)
                _, again = _timed(method, estimand=estimand)
                lines.append(f"{label + ', ' + estimand:<36} {first:8.2f} {again:8.2f}")
                print(lines[-1], flush=True)
        _, boot = _timed(be.bootstrap.rank_sets, data, unit=unit)
        lines.append(f"{'bootstrap.rank_sets, ' + unit:<36} {boot:8.2f}")
        print(lines[-1], flush=True)
    with args.out.open("a") as out:  # the file keeps earlier runs with their readings
        out.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
