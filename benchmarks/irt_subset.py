"""Subset evaluation on SWE-bench Verified: how well a 5-20% subset predicts the full benchmark.

The data: the bundled SWE-bench Verified leaderboard (25 systems x 500 tasks, one attempt,
:func:`bayeval.datasets.load`). Five systems are held out, one drawn (seeded) from each fifth
of the systems sorted by their full-benchmark pass@1, so they span the ability range; a 2PL
(``be.fit(model="irt")``) calibrates the items on the other 20. Each held-out system is then
run on a 5%, 10% and 20% subset (25, 50, 100 items): several seeded random subsets per cell,
and the Fisher subset of ``be.irt.select`` (one per size: it does not depend on a seed). Its
full-benchmark pass@1, the actual mean of its outcomes over all 500 tasks, is the target of:

* ``irt score``: ``be.irt.score``'s 95% interval of ``full_pass_at_1`` (the mean over all
  items of the modelled rate);
* ``irt score + predictive``: the same draws, with the observed outcomes on the subset and a
  posterior-predictive outcome (Bernoulli of each draw's rate) on every item not run: the
  realised full mean, which is what the target is (an outcome, not a rate);
* ``task bootstrap``: ``be.bootstrap.pass_at_k`` of the subset (percentile, unit="task");
* ``MAP point``: Fluid-style, theta maximising its posterior (prior Normal(0, 1), the
  subset's binomial likelihood) at the calibrated items' posterior means, and the predicted
  full pass@1 at those means (no interval: its absolute error is reported);
* ``subset mean``: the raw mean of the subset's outcomes (absolute error).

Gate (margin 2 points): a gate "reverts" a candidate when it declares it worse than its
baseline by more than the margin. Pairs whose full-benchmark pass@1 differ by less than 2
points are variants a gate should keep, so every revert among them is false:

* ``self``: a held-out system against itself on another random subset of the same size (both
  run on subsets, true difference 0);
* ``near``: a held-out system on a subset (candidate) against every calibration system within
  2 points of it (baseline, run on all 500 items).

The IRT gate reverts when ``be.irt.compare``'s P(effect < -margin) >= 0.95 (the effect on
full pass@1, paired on the calibration's draws); the bootstrap gate when 95% of the
difference of independent bootstrap replicates lies below -margin; the MAP-point gate when
its predicted difference is below -margin (the raw difference of two point estimates; a
calibration baseline enters with its actual full pass@1); the subset-mean gate likewise.

The calibration is fitted once (``--draws``/``--chains``, default 2 chains x 500 draws, 500
tuning draws, not ``be.fit``'s default: a 4 x 1000 fit from the PyMC graph took 9-15 minutes
on this benchmark on a loaded 2-core machine, and every scoring's cost grows with the
calibration's draws) and
cached in ``--cache``; a scoring takes 1-5 seconds (25-100 items x 1,000 draws x a 1,401-point
grid), about 1,100 s for the whole run at ``--reps 8``.

Run:  python benchmarks/irt_subset.py [--reps 8] [--draws 500] [--chains 2] [--tune 500]
      [--seed 0] [--cache /tmp/irt_subset_calibration.nc] [--out benchmarks/results/irt_subset.md]
"""

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr
from scipy import optimize, special

import bayeval as be
from bayeval.models.irt import item_draws

FRACTIONS = (0.05, 0.10, 0.20)
N_HELD = 5
MARGIN = 0.02
CI = 0.95
N_BOOT = 2000


def held_out(full: pd.Series, seed: int) -> list:
    """One system from each fifth of the systems sorted by full pass@1 (seeded)."""
    order = full.sort_values(kind="stable").index.to_numpy()
    rng = np.random.default_rng([seed, 5])
    return [str(rng.choice(group)) for group in np.array_split(order, N_HELD)]


def calibrate(data, args):
    if args.cache and os.path.exists(args.cache):
        res = be.load(args.cache)
        if sorted(res.systems) == sorted(data.systems):
            return res, "cached"
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = be.fit(
            data,
            model="irt",
            draws=args.draws,
            chains=args.chains,
            tune=args.tune,
            seed=args.seed,
            progress=False,
        )
    seconds = time.perf_counter() - start
    gates = [str(w.message)[:120] for w in caught if "gates" in str(w.message)]
    d = res.diagnostics
    note = (
        f"{seconds:.0f} s, r-hat {d.get('max_rhat', 0):.3f}, bulk ESS "
        f"{d.get('min_ess_bulk', 0):.0f} ({d.get('min_ess_bulk_parameter', '')}), "
        f"divergences {d.get('divergences', 0)}, gates: {gates or 'pass'}"
    )
    if args.cache:
        res.to_netcdf(args.cache)
    return res, note


def subset_data(c_row: np.ndarray, tasks: np.ndarray, cols: np.ndarray, name: str):
    return be.from_counts(c_row[None, cols], trials=1, systems=[name], tasks=list(tasks[cols]))


def map_point(a_bar, b_bar, c, n) -> float:
    """The theta maximising Normal(0, 1) x the subset's binomial likelihood at fixed items."""

    def negative(t):
        eta = a_bar * (t - b_bar)
        return 0.5 * t**2 + np.sum(c * np.logaddexp(0, -eta) + (n - c) * np.logaddexp(0, eta))

    return float(optimize.minimize_scalar(negative, bounds=(-7, 7), method="bounded").x)


def bootstrap_reps(data, seed) -> tuple[np.ndarray, np.ndarray]:
    out = be.bootstrap.pass_at_k(data, k=1, unit="task", n_boot=N_BOOT, seed=seed)
    return out["interval"].values.ravel(), out["replicates"].values.ravel()


def predictive_full(theta, prm, c_sub, cols, rng) -> np.ndarray:
    """Observed outcomes on the subset plus Bernoulli draws of each draw's rates elsewhere."""
    J = prm["a"].shape[1]
    rest = np.setdiff1d(np.arange(J), cols)
    p = special.expit(prm["a"][:, rest] * (theta[:, None] - prm["b"][:, rest]))
    return (c_sub.sum() + (rng.random(p.shape) < p).sum(axis=1)) / J


def covers(interval, truth) -> tuple[bool, float]:
    lo, hi = float(interval[0]), float(interval[1])
    return bool(lo <= truth <= hi), hi - lo


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default="/tmp/irt_subset_calibration.nc")
    parser.add_argument("--out", default="benchmarks/results/irt_subset.md")
    args = parser.parse_args()
    start_all = time.perf_counter()

    data = be.datasets.load("swebench_verified")
    ds = data.dataset
    tasks = ds["task"].values
    systems = list(data.systems)
    c = ds["successes"].transpose("system", "task").values.astype(float)
    full = pd.Series(c.mean(axis=1), index=systems)
    held = held_out(full, args.seed)
    calib = [s for s in systems if s not in held]
    res, fit_note = calibrate(data.sel(system=calib), args)
    prm = item_draws(res.tree)
    a_bar, b_bar = prm["a"].mean(axis=0), prm["b"].mean(axis=0)
    task_index = {t: j for j, t in enumerate(res.tree["posterior"]["task"].values.tolist())}
    assert [task_index[t] for t in tasks] == list(range(len(tasks)))
    print(f"calibration on {len(calib)} systems: {fit_note}", flush=True)
    print("held out:", ", ".join(f"{s} ({full[s]:.3f})" for s in held), flush=True)

    rows, gates = [], []
    base_reps: dict = {}

    def full_reps(base):
        if base not in base_reps:
            row = c[systems.index(base)]
            whole = be.from_counts(row[None], trials=1, systems=["BASE"], tasks=list(tasks))
            base_reps[base] = bootstrap_reps(whole, seed=7)[1]
        return base_reps[base]

    fisher = {}
    for frac in FRACTIONS:
        m = int(round(frac * len(tasks)))
        fisher[frac] = np.sort(
            [task_index[t] for t in be.irt.select(res, m, method="fisher")["item"].values]
        )
    for h_i, h in enumerate(held):
        row_c = c[systems.index(h)]
        truth = float(full[h])
        near = [s for s in calib if abs(full[s] - truth) < MARGIN]
        for frac in FRACTIONS:
            m = int(round(frac * len(tasks)))
            subsets = []
            for r in range(args.reps):
                rng = np.random.default_rng([args.seed, h_i, m, r])
                subsets.append(("random", r, np.sort(rng.choice(len(tasks), m, replace=False))))
            subsets.append(("fisher", 0, fisher[frac]))
            scored = {}
            for method, r, cols in subsets:
                seed = 1000 * h_i + 10 * r + (method == "fisher")
                sub = subset_data(row_c, tasks, cols, "NEW")
                sc = be.irt.score(sub, items=res, ci_prob=CI, seed=seed)
                theta = sc["theta"].sel(system="NEW").values.ravel()
                ok, width = covers(sc["full_pass_at_1_interval"].sel(system="NEW").values, truth)
                pred = predictive_full(
                    theta, prm, row_c[cols], cols, np.random.default_rng([seed, 3])
                )
                pok, pwidth = covers(np.quantile(pred, [0.025, 0.975]), truth)
                interval, reps = bootstrap_reps(sub, seed)
                bok, bwidth = covers(interval, truth)
                t_hat = map_point(a_bar[cols], b_bar[cols], row_c[cols], np.ones(len(cols)))
                map_full = float(special.expit(a_bar * (t_hat - b_bar)).mean())
                rows.append(
                    {
                        "system": h,
                        "fraction": frac,
                        "method": method,
                        "draw": r,
                        "truth": truth,
                        "irt_cover": ok,
                        "irt_width": width,
                        "irt_err": abs(float(sc["full_pass_at_1_mean"].item()) - truth),
                        "pred_cover": pok,
                        "pred_width": pwidth,
                        "boot_cover": bok,
                        "boot_width": bwidth,
                        "map_err": abs(map_full - truth),
                        "mean_err": abs(row_c[cols].mean() - truth),
                    }
                )
                scored[method, r] = (cols, sc, reps, map_full, row_c[cols].mean())
            # self pairs: draw r (candidate) against draw r + 1 (baseline), both random subsets;
            # each was scored alone, and both sets of draws sit on the calibration's draws
            for r in range(args.reps - 1):
                (_, sc1, reps1, map1, mean1) = scored["random", r]
                (_, sc0, reps0, map0, mean0) = scored["random", r + 1]
                both = xr.concat(
                    [
                        sc1.assign_coords(system=["CAND"]),
                        sc0.assign_coords(system=["BASE"]),
                    ],
                    dim="system",
                    combine_attrs="override",
                )
                cmp = be.irt.compare(both, res, "CAND", "BASE", margin=MARGIN)
                gates.append(
                    _gate_row(
                        "self", h, frac, "random", cmp, reps1 - reps0, map1 - map0, mean1 - mean0
                    )
                )
            # near pairs: each subset of this system against calibration systems within 2 points
            for (method, _r), (_sub, sc, reps1, map1, mean1) in scored.items():
                for base in near:
                    reps0 = full_reps(base)
                    cmp = be.irt.compare(sc, res, "NEW", base, margin=MARGIN)
                    base_full = float(full[base])
                    gates.append(
                        _gate_row(
                            "near",
                            h,
                            frac,
                            method,
                            cmp,
                            reps1 - reps0,
                            map1 - base_full,
                            mean1 - base_full,
                        )
                    )
            print(
                f"{h[:45]:45s} {frac:.2f}: {len(subsets)} subsets, {len(near)} near "
                f"baselines, {time.perf_counter() - start_all:.0f} s",
                flush=True,
            )
    table = pd.DataFrame(rows)
    gate = pd.DataFrame(gates)
    report(table, gate, held, full, fit_note, args, time.perf_counter() - start_all)


def _gate_row(kind, system, frac, method, cmp, boot_diff, map_diff, mean_diff) -> dict:
    return {
        "pair": kind,
        "system": system,
        "fraction": frac,
        "method": method,
        "irt_revert": float(cmp["prob_noninferior"].item()) <= 1 - 0.95,
        "boot_revert": float(np.quantile(boot_diff, 0.95)) < -MARGIN,
        "map_revert": map_diff < -MARGIN,
        "mean_revert": mean_diff < -MARGIN,
    }


def report(table, gate, held, full, fit_note, args, seconds):
    def se(x):
        return np.sqrt(x.mean() * (1 - x.mean()) / len(x))

    lines = [
        "# Subset evaluation on SWE-bench Verified (`benchmarks/irt_subset.py`)",
        "",
        f"Calibration: 2PL on {25 - N_HELD} systems x 500 tasks, {args.chains} chains x "
        f"{args.draws} draws (tune {args.tune}), seed {args.seed}: {fit_note}.",
        "Held out (full pass@1): " + ", ".join(f"`{s}` ({full[s]:.3f})" for s in held) + ".",
        f"{args.reps} seeded random subsets per held-out system and size, plus the Fisher "
        "subset of `be.irt.select` (one per size). Coverage of the actual full-benchmark "
        "pass@1 by 95% intervals (+- binomial se), mean interval width, mean absolute error "
        "of point estimates.",
        "",
        "| subset | n | irt score | width | irt + predictive | width | task bootstrap "
        "| width | abs err irt mean | abs err MAP point | abs err subset mean |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (method, frac), g in table.groupby(["method", "fraction"], sort=False):
        lines.append(
            f"| {method} {frac:.0%} | {len(g)} | {g.irt_cover.mean():.3f} +- "
            f"{se(g.irt_cover):.3f} | {g.irt_width.mean():.3f} | {g.pred_cover.mean():.3f} +- "
            f"{se(g.pred_cover):.3f} | {g.pred_width.mean():.3f} | {g.boot_cover.mean():.3f} +- "
            f"{se(g.boot_cover):.3f} | {g.boot_width.mean():.3f} | {g.irt_err.mean():.4f} | "
            f"{g.map_err.mean():.4f} | {g.mean_err.mean():.4f} |"
        )
    lines += [
        "",
        "Per held-out system (random subsets, all sizes): coverage irt / irt + predictive / "
        "bootstrap, mean abs err of the MAP point.",
        "",
        "| system | full pass@1 | irt | irt + predictive | bootstrap | abs err MAP |",
        "|---|---|---|---|---|---|",
    ]
    for s in held:
        g = table[(table.system == s) & (table.method == "random")]
        lines.append(
            f"| `{s}` | {full[s]:.3f} | {g.irt_cover.mean():.3f} | {g.pred_cover.mean():.3f} | "
            f"{g.boot_cover.mean():.3f} | {g.map_err.mean():.4f} |"
        )
    lines += [
        "",
        f"False reverts of a gate at margin {MARGIN:.2f} on pairs within 2 points of each "
        "other (every revert is false; +- binomial se):",
        "",
        "| pairs | subset | n | irt compare | task bootstrap | MAP point | subset mean |",
        "|---|---|---|---|---|---|---|",
    ]
    for (kind, method, frac), g in gate.groupby(["pair", "method", "fraction"], sort=False):
        cells = [
            f"{g[name].mean():.3f} +- {se(g[name]):.3f}"
            for name in ("irt_revert", "boot_revert", "map_revert", "mean_revert")
        ]
        lines.append(f"| {kind} | {method} {frac:.0%} | {len(g)} | " + " | ".join(cells) + " |")
    lines += ["", f"Whole run: {seconds:.0f} s wall.", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
