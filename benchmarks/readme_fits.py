"""The README's MCMC fits, over seeds: time, divergences, r-hat, ESS, gates.

Run:  python benchmarks/readme_fits.py [--seeds 0 1 2 3 4] [--out PATH]

Each fit the README's examples make with a sampler that has gates (NUTS), built from the
bundled data exactly as the README builds it and fitted with the README's arguments except the
seed: the SWE-bench pair (`model="logit_normal"`, 4 x 1000 draws), the same pair with its cost
covariate, Terminal-Bench's two recipes with 5 runs each (`runs`), and the LangChain pair's
scores. The grid fits of the README (`sampler="grid"`) have no MCMC gates. The README's
examples themselves run in the test suite (``tests/test_readme.py``) at the seeds they show;
this table says whether those seeds were lucky.

Writes ``benchmarks/results/readme_fits.md`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from default_fits import GATES_NOTE, seed_rows

import bayeval as be

OUT = Path(__file__).resolve().parent / "results" / "readme_fits.md"
PAIR = [
    "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    "20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
]
RECIPES = ["20250924_droid_gpt-5", "20250923_droid_claude-4-sonnet"]


def readme_data() -> list[tuple[str, str | None, object, dict]]:
    """(label, missing policy, data, fit options) of each gated README fit."""
    pair = be.datasets.load("swebench_verified").sel(system=PAIR)
    df = be.datasets.frame("terminal_bench")
    two = df[df["system"].isin(RECIPES)]
    runs = be.from_frame(two, system="system", run="run", missing="fail")
    frame = be.datasets.frame("langchain_tool_use")
    scores = be.from_frame(frame, score="score")
    costly = be.from_frame(be.datasets.frame("swebench_verified"), covariates=["cost_usd"])
    return [
        ("SWE-bench pair", None, pair, {"model": "logit_normal", "draws": 1000, "chains": 4}),
        ("SWE-bench pair, cost", None, costly.sel(system=PAIR), {}),
        ("Terminal-Bench recipes x 5 runs", "fail", runs, {}),
        ("LangChain pair, scores", None, scores.sel(system=scores.systems[:2]), {}),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    lines = [
        f"# python benchmarks/readme_fits.py --seeds {' '.join(map(str, args.seeds))}   "
        f"({time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f} at start)",
        "",
        "| fit | missing | shape | model (form) | seed | s | divergences | max r-hat | "
        "min bulk ESS | min tail ESS | gates failed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    summary = []
    for label, missing, data, options in readme_data():
        passed = seed_rows(label, missing, data, args.seeds, lines, **options)
        summary.append(f"- {label}: {passed} of {len(args.seeds)} seeds pass every gate")
    lines += [
        "",
        *summary,
        "",
        f"{GATES_NOTE}.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
