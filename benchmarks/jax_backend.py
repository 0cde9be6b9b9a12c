"""sampler="numpyro" against nutpie on the bundled SWE-bench pair: answers and time.

``sampler="numpyro"`` runs the full-latent logit_normal model on JAX, nutpie the collapsed
model (numba). They give the same answers within Monte Carlo error; the time each takes on
this machine's CPU is measured. Each engine runs twice in one process: the first run includes
compilation.

Usage: ``python benchmarks/jax_backend.py`` (writes ``benchmarks/results/jax_backend.txt``).
"""

import time
import warnings
from pathlib import Path

import numpy as np

import bayeval as be

PAIR = [
    "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    "20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
]


def main():
    warnings.simplefilter("ignore", be.BayevalWarning)  # one trial per task: known, said elsewhere
    data = be.datasets.load("swebench_verified").sel(system=PAIR)
    lines, effects = [], {}
    for engine in ("nutpie", "numpyro"):
        times = []
        for run in range(2):
            start = time.perf_counter()
            res = be.fit(data, model="logit_normal", sampler=engine, draws=1000, chains=2, seed=run)
            times.append(time.perf_counter() - start)
        out = res.compare(PAIR[0], PAIR[1])
        effects[engine] = out
        lines.append(
            f"{engine:8s} first {times[0]:6.1f} s, second {times[1]:6.1f} s; effect "
            f"{float(out['effect_mean']):+.4f} (mcse {float(out['effect_mcse']):.4f}), "
            f"interval {np.round(out['effect_interval'].values, 4).tolist()}, "
            f"divergences {res.diagnostics['divergences']}, "
            f"min bulk ESS {res.diagnostics['min_ess_bulk']:.0f}"
        )
    gap = abs(float(effects["nutpie"]["effect_mean"]) - float(effects["numpyro"]["effect_mean"]))
    mcse = np.hypot(*(float(e["effect_mcse"]) for e in effects.values()))
    lines.append(f"difference of the effect means {gap:.4f} = {gap / mcse:.1f} combined MCSE")
    text = "SWE-bench pair, 2 chains x 1000 draws, CPU\n" + "\n".join(lines) + "\n"
    print(text)
    (Path(__file__).parent / "results" / "jax_backend.txt").write_text(text)


if __name__ == "__main__":
    main()
