"""Where the judge-aware fit's leapfrog steps come from: the collapsed fit beside variants.

Code: bayeval.models.judge (the collapsed fit), bayeval.models.logit_normal (the paired fit).

Run:  python benchmarks/judge_steps.py [--seeds 0 1]

The speed job of ``benchmarks/judge_speed.py`` (6 systems x 300 tasks x 1 attempt, 10%
labelled, one judge). The judge-aware fit costs several times the paired fit of the same
attempts' true outcomes; its cost is the number of leapfrog steps a draw times the cost of a
step. This study asks whether the steps come from the coordinates the sampler sees (each
task's effect and the judge's two task-level error terms, 927 coordinates, where the paired
fit integrates its task effects out and sees its intercepts and spreads alone), by sampling
variants of the same model with nutpie at the judge-aware fit's settings (4 chains x 1,000
draws after 300, target acceptance 0.85) and printing the mean leapfrog steps a kept draw
(``coordinates``: what the sampler sees; for ``paired``, the values a draw keeps outside the
task dimensions):

- ``collapsed``: ``be.fit`` on the judged data (task effects and task terms sampled, each
  cell's task-by-system effect integrated by the compiled kernel), at 0.85 like the variants
  (its default with one judge is 0.9, which takes 31 steps: ``models/judge.md``, speed);
- ``paired``: ``be.fit`` on the true outcomes (the baseline, at its own settings: a target
  acceptance of 0.9);
- ``tasks integrated``: each task's effect integrated out too (a 24-node Gauss-Hermite rule per
  task in the PyTensor graph), the judge's task terms still sampled;
- ``no task terms``: as ``tasks integrated`` without the judge's task terms: 24 coordinates,
  the judge's and the true rates' per-system parameters and their spreads;
- ``no task terms, attenuated``: as ``no task terms`` with the intercepts and the task spread
  sampled on the scale the one-attempt data pin, divided by ``kappa = sqrt(1 + (pi / 8)
  sigma_task_system^2)`` (the prior kept, with its Jacobian);
- ``no task terms, low rank``: as ``no task terms`` with nutpie's low-rank mass matrix;
- ``no task terms, judge spreads fixed``: as ``no task terms`` with the spreads of the judge's
  logits across systems held at 0.5 (a diagnostic, not a model: which parameters cost the
  steps), and with ``sigma_task_system`` held at 0.3 too.

The variants approximate each cell's integral over its task-by-system effect by
``expit(y / kappa)`` (the probit approximation of the logistic-normal mean): they are studies
of the posterior's shape, not fits to read intervals from, and their times (which include no
compiled kernel) are not compared.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import nutpie
import pymc as pm
import pytensor.tensor as pt

import bayeval as be
from bayeval.errors import BayevalWarning
from bayeval.models import judge
from bayeval.models.judge import build_judge_model, judge_cells

sys.path.insert(0, str(Path(__file__).parent))
from judge_speed import simulate  # noqa: E402

#: Gauss-Hermite nodes of the task-effect integral in the variants.
NODES = 24
TUNE, DRAWS, CHAINS, TARGET_ACCEPT = 300, 1000, 4, 0.85
#: The values at which the diagnostic variants hold a spread fixed (near its posterior median).
FIXED = {"sigma_judge": 0.5, "sigma_task_system": 0.3}


def variant(data, *, task_terms: bool, attenuated: bool, fixed: tuple[str, ...] = ()) -> pm.Model:
    """The one-judge model with each task's effect integrated out (see the module docstring)."""
    cells = judge_cells(data.dataset)
    n11, n10, n01, n00, u1, u0 = (
        cells[f"judge_{k}"] for k in ("n11", "n10", "n01", "n00", "u1", "u0")
    )
    S, J = n11.shape
    z, w = np.polynomial.hermite_e.hermegauss(NODES)
    log_w = np.log(w / w.sum())
    empty = (n11 + n10 + n01 + n00 + u1 + u0) == 0
    with pm.Model() as model:
        sigma_v = (  # the one-trial prior
            FIXED["sigma_task_system"]
            if "sigma_task_system" in fixed
            else pm.HalfNormal("sigma_task_system", 0.5)
        )
        kappa = pt.sqrt(1.0 + np.pi / 8.0 * sigma_v**2)
        if attenuated:
            a = pm.Flat("alpha_attenuated", shape=S)
            s = pm.HalfFlat("sigma_task_attenuated")
            alpha, sigma_task = a * kappa, s * kappa
            prior = pm.logp(pm.Normal.dist(0.0, 2.5), alpha).sum()
            prior += pm.logp(pm.HalfNormal.dist(3.0), sigma_task)
            pm.Potential("prior", prior + (S + 1) * pt.log(kappa))  # the Jacobian
        else:
            alpha = pm.Normal("alpha", 0.0, 2.5, shape=S)
            sigma_task = pm.HalfNormal("sigma_task", 3.0)
        logits = {}
        for name in ("sensitivity", "specificity"):
            mu = pm.Normal(f"mu_{name}", 1.5, 1.0)
            sigma = (
                FIXED["sigma_judge"]
                if "sigma_judge" in fixed
                else pm.HalfNormal(f"sigma_{name}", 1.0)
            )
            logit = (mu + sigma * pm.Normal(f"z_{name}", 0.0, 1.0, shape=S))[:, None]
            if task_terms:
                tau = pm.HalfNormal(f"tau_{name}", 1.0)
                logit = logit + tau * pm.Normal(f"x_{name}", 0.0, 1.0, shape=J)[None, :]
            logits[name] = pt.broadcast_to(logit, (S, J))
        se, sp = pm.math.sigmoid(logits["sensitivity"]), pm.math.sigmoid(logits["specificity"])
        # P(the cell's data | true 1) and (| true 0), for one attempt a cell
        c1 = pt.where(empty, 1.0, (n11 + u1) * se + (n01 + u0) * (1.0 - se))
        c0 = pt.where(empty, 1.0, (n10 + u1) * (1.0 - sp) + (n00 + u0) * sp)
        rate = pm.math.sigmoid((alpha[None, :, None] + sigma_task * z[:, None, None]) / kappa)
        cell = pt.log(c0[None] + (c1 - c0)[None] * rate)  # (node, S, J)
        pm.Potential("judged", pt.logsumexp(log_w[:, None] + cell.sum(axis=1), axis=0).sum())
    return model


def coordinates(model: pm.Model) -> int:
    """How many coordinates the sampler sees in ``model``."""
    return sum(int(np.prod(v.shape.eval())) for v in model.free_RVs)


def steps_of_variant(model, seed: int, **options) -> tuple[float, int]:
    """Mean leapfrog steps a kept draw and the divergences of a nutpie fit of ``model``."""
    compiled = nutpie.compile_pymc_model(model, backend="numba")
    trace = nutpie.sample(
        compiled,
        chains=CHAINS,
        tune=TUNE,
        draws=DRAWS,
        seed=seed,
        cores=2,
        target_accept=TARGET_ACCEPT,
        progress_bar=False,
        **options,
    )
    stats = trace.sample_stats
    return float(stats["n_steps"].mean()), int(stats["diverging"].sum())


def steps_of_fit(data, seed: int) -> tuple[float, int]:
    """Mean leapfrog steps a kept draw and the divergences of ``be.fit``.

    The judge-aware model at :data:`TARGET_ACCEPT`, the paired one at its own.
    """
    default = judge.COLLAPSED_TARGET_ACCEPT
    judge.COLLAPSED_TARGET_ACCEPT = TARGET_ACCEPT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BayevalWarning)  # gates: not read here
            res = be.fit(data, seed=seed, progress=False)
    finally:
        judge.COLLAPSED_TARGET_ACCEPT = default
    stats = res.tree["sample_stats"]
    return float(stats["n_steps"].mean()), int(stats["diverging"].sum())


def kept_size(data) -> int:
    """Values a draw of a short ``be.fit`` of ``data`` keeps outside the task dimensions."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)
        post = be.fit(data, seed=0, progress=False, draws=10, tune=10).tree["posterior"]
    return sum(
        int(np.prod([post.sizes[d] for d in post[v].dims if d not in ("chain", "draw")]))
        for v in post.data_vars
        if "task" not in post[v].dims
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    print(f"# python benchmarks/judge_steps.py --seeds {' '.join(map(str, args.seeds))}")
    print("| seed | fit | coordinates | leapfrog steps a draw | divergences |")
    print("|---|---|---|---|---|")
    for seed in args.seeds:
        df = simulate(6, 300, 0.1, seed)
        judged = be.from_frame(df, judge="verdict", success="human", label_design="random")

        def row(name, size, steps_and_divergences, seed=seed):
            steps, divergences = steps_and_divergences
            print(f"| {seed} | {name} | {size} | {steps:.1f} | {divergences} |", flush=True)

        paired = be.from_frame(df, success="truth")
        row("paired", kept_size(paired), steps_of_fit(paired, seed))
        collapsed = build_judge_model(judged, collapsed=True)
        row("collapsed", coordinates(collapsed), steps_of_fit(judged, seed))
        for name, terms, attenuated, fixed, options in (
            ("tasks integrated", True, False, (), {}),
            ("no task terms", False, False, (), {}),
            ("no task terms, attenuated", False, True, (), {}),
            ("no task terms, low rank", False, False, (), {"adaptation": "low_rank"}),
            ("no task terms, judge spreads fixed", False, False, ("sigma_judge",), {}),
            (
                "no task terms, judge spreads and sigma_task_system fixed",
                False,
                False,
                ("sigma_judge", "sigma_task_system"),
                {},
            ),
        ):
            model = variant(judged, task_terms=terms, attenuated=attenuated, fixed=fixed)
            row(name, coordinates(model), steps_of_variant(model, seed, **options))


if __name__ == "__main__":
    main()
