"""Every bundled data set's default fit, over seeds: time, divergences, r-hat, ESS, gates.

Run:  python benchmarks/default_fits.py [--seeds 0 1 2 3 4] [--only NAME ...] [--out PATH]

``bayeval.fit(data, seed=seed)`` with every other argument at its default (the model and
sampling form the data choose, 4 chains x 1000 draws), on each data set of
``bayeval.datasets`` under each missing-outcome policy its outcomes need (none where every
attempt has a verdict; ``exclude`` and ``bounds`` otherwise, as the README's examples use).
A default that fails its own gates on the project's own data is one users learn to ignore:
this is the table that says whether it does.

Writes ``benchmarks/results/default_fits.md`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import bayeval as be
from bayeval.inference import gate_failures

OUT = Path(__file__).resolve().parent / "results" / "default_fits.md"
GATES_NOTE = (
    "Gates: bayeval.inference.GATES (no divergences, r-hat <= 1.01, bulk and tail "
    "ESS >= 100 per chain, BFMI >= 0.3)"
)


def policies(name: str) -> list[str | None]:
    """``[None]`` where the data load without a policy, else ``["exclude", "bounds"]``."""
    try:
        be.datasets.load(name)
    except ValueError:
        return ["exclude", "bounds"]
    return [None]


def fit_row(name: str, missing: str | None, data, seed: int, **options) -> tuple[str, list]:
    """Fit ``data`` at ``seed`` (defaults unless ``options``); the table's row and failed gates."""
    ds = data.dataset
    shape = f"{len(data.systems)} x {ds.sizes['task']} x {int(ds['trials'].max())}"
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # gates: tabulated
        res = be.fit(data, seed=seed, progress=False, **options)
    elapsed = time.perf_counter() - start
    diag = res.diagnostics
    failed = gate_failures(diag, int(res.tree.attrs["chains"]))
    form = res.tree.attrs.get("form", "")
    line = (
        f"| {name} | {missing or '-'} | {shape} | {res.model}"
        f"{f' ({form})' if form else ''} | {seed} | {elapsed:.0f} | "
        f"{diag.get('divergences', '-')} | {diag.get('max_rhat', float('nan')):.3f} | "
        f"{diag.get('min_ess_bulk', float('nan')):.0f} | "
        f"{diag.get('min_ess_tail', float('nan')):.0f} | "
        f"{', '.join(failed) or 'none'} |"
    )
    return line, failed


def seed_rows(name: str, missing: str | None, data, seeds, lines: list, **options) -> int:
    """Fit ``data`` at each seed, printing and appending each row; how many passed every gate."""
    passed = 0
    for seed in seeds:
        line, failed = fit_row(name, missing, data, seed, **options)
        passed += not failed
        print(line, flush=True)
        lines.append(line)
    return passed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--only", nargs="+", help="data sets to run (default: all)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    names = args.only or list(be.datasets.available())
    lines = [
        f"# python benchmarks/default_fits.py --seeds {' '.join(map(str, args.seeds))}"
        f"{' --only ' + ' '.join(names) if args.only else ''}   "
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f} at start)",
        "",
        "| data | missing | shape | model (form) | seed | s | divergences | max r-hat | "
        "min bulk ESS | min tail ESS | gates failed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    summary = []
    for name in names:
        for missing in policies(name):
            data = be.datasets.load(name, **({"missing": missing} if missing else {}))
            passed = seed_rows(name, missing, data, args.seeds, lines)
            summary.append(
                f"- {name} ({missing or 'no policy needed'}): {passed} of "
                f"{len(args.seeds)} seeds pass every gate"
            )
    lines += [
        "",
        *summary,
        "",
        f"{GATES_NOTE}; grid and conjugate fits have none.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
