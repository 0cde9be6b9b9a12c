"""Wall time of the ``irt`` fit against the paired ``logit_normal`` fit of the same data.

The data: the bundled SWE-bench Verified results (25 systems x 500 items, one attempt each,
:func:`bayeval.datasets.load`). Each model is fitted twice in one process with the defaults of
``be.fit`` (4 chains x 1000 draws): cold (first fit: compilation included) and warm (a second
fit, another seed: compiled models reused). Prints each time, the MCMC diagnostics and the
ratio irt / logit_normal (the target: within 3x).

Run:  python benchmarks/irt_speed.py [--draws 1000] [--chains 4]
"""

import argparse
import time
import warnings

import bayeval as be


def timed(data, model, seed, draws, chains):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = be.fit(data, model=model, seed=seed, draws=draws, chains=chains, progress=False)
    seconds = time.perf_counter() - start
    gates = [str(w.message)[:160] for w in caught if "gates" in str(w.message)]
    return seconds, res.diagnostics, gates


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    args = parser.parse_args()
    data = be.datasets.load("swebench_verified")
    print(f"data: {len(data.systems)} systems x {data.dataset.sizes['task']} items")
    print(f"draws={args.draws} chains={args.chains}")
    times = {}
    for model in ("logit_normal", "irt"):
        for label, seed in (("cold", 0), ("warm", 1)):
            seconds, diag, gates = timed(data, model, seed, args.draws, args.chains)
            times[model, label] = seconds
            print(
                f"{model:13s} {label}: {seconds:7.1f} s  r-hat {diag.get('max_rhat', 0):.3f}"
                f"  bulk ESS {diag.get('min_ess_bulk', 0):.0f}"
                f" ({diag.get('min_ess_bulk_parameter', '')})"
                f"  divergences {diag.get('divergences', 0)}  gates: {gates or 'pass'}",
                flush=True,
            )
    for label in ("cold", "warm"):
        ratio = times["irt", label] / times["logit_normal", label]
        print(f"ratio irt / logit_normal ({label}): {ratio:.2f}")


if __name__ == "__main__":
    main()
