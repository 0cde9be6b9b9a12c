"""Wall time of the ``irt`` fit against the paired ``logit_normal`` fit of the same data.

The data: the bundled SWE-bench Verified results (25 systems x 500 items, one attempt each)
and LiveCodeBench (45 systems x 400 problems x 10 samples, its difficulty strata left out:
the IRT model takes none), :func:`bayeval.datasets.load`. Each model is fitted twice in one
process with the defaults of ``be.fit`` (4 chains; 1,000 draws for ``logit_normal``, 2,000
for ``irt``): cold (first fit: compilation included) and warm (a second fit, another seed:
compiled models reused). ``--graph`` adds the IRT model sampled from its PyMC graph (the
route before the compiled kernel, and still the route of linked fits) at the same draws.
Prints each time, the sampler's leapfrog steps per draw, the MCMC diagnostics and the ratios
irt / logit_normal (the target: within 3x).

Run:  python benchmarks/irt_speed.py [--data swebench_verified livecodebench] [--graph]
"""

import argparse
import time
import warnings
from unittest import mock

import numpy as np

import bayeval as be
from bayeval.models.kernels import nutpie_model

DATA = {
    "swebench_verified": {},
    "livecodebench": {"stratum": None},  # the IRT model takes no strata
}


def timed(data, model, seed, chains, graph=False):
    start = time.perf_counter()
    with (
        warnings.catch_warnings(record=True) as caught,
        mock.patch.object(nutpie_model, "available", lambda: not graph),
    ):
        warnings.simplefilter("always")
        res = be.fit(data, model=model, seed=seed, chains=chains, progress=False)
    seconds = time.perf_counter() - start
    gates = [str(w.message)[:120] for w in caught if "gates" in str(w.message)]
    steps = float(np.asarray(res.tree["sample_stats"]["n_steps"]).mean())
    draws = res.tree["posterior"].sizes["draw"]
    return seconds, steps, draws, res.diagnostics, gates


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--graph", action="store_true", help="also the PyMC-graph route")
    args = parser.parse_args()
    runs = [("logit_normal", False), ("irt", False)] + ([("irt", True)] if args.graph else [])
    for name in args.data:
        data = be.datasets.load(name, **DATA[name])
        sizes = data.dataset.sizes
        print(f"\n{name}: {sizes['system']} systems x {sizes['task']} items, chains={args.chains}")
        times = {}
        for model, graph in runs:
            label = model + (" (PyMC graph)" if graph else "")
            for when, seed in (("cold", 0), ("warm", 1)):
                seconds, steps, draws, diag, gates = timed(data, model, seed, args.chains, graph)
                times[label, when] = seconds
                print(
                    f"{label:20s} {when}: {seconds:7.1f} s  draws {draws}  steps/draw {steps:.1f}"
                    f"  r-hat {diag.get('max_rhat', 0):.3f} ({diag.get('max_rhat_parameter')})"
                    f"  bulk ESS {diag.get('min_ess_bulk', 0):.0f}"
                    f" ({diag.get('min_ess_bulk_parameter', '')})"
                    f"  divergences {diag.get('divergences', 0)}  gates: {gates or 'pass'}",
                    flush=True,
                )
        for label in [k for k, _ in times if k != "logit_normal"][::2]:
            for when in ("cold", "warm"):
                ratio = times[label, when] / times["logit_normal", when]
                print(f"ratio {label} / logit_normal ({when}): {ratio:.2f}")


if __name__ == "__main__":
    main()
