"""The judge readout (``Results.judge``): sensitivity and specificity over the tasks."""

import numpy as np
import pandas as pd
from scipy.special import expit, logit

import bayeval as be
from bayeval.testing import fake_results


def _judged(seed=0, n_task=40):
    """Judged attempts of three systems, 3 each, a third labelled."""
    rng = np.random.default_rng(seed)
    rows = [(s, j, t) for s in "ABC" for j in range(n_task) for t in range(3)]
    df = pd.DataFrame(rows, columns=["system", "task", "trial"])
    truth = rng.random(len(df)) < expit(rng.normal(0.0, 1.0, len(df)))
    df["judge"] = np.where(truth, rng.random(len(df)) < 0.85, rng.random(len(df)) < 0.2)
    df["judge"] = df["judge"].astype(int)
    df["human"] = np.where(rng.random(len(df)) < 1 / 3, truth.astype(float), np.nan)
    return be.from_frame(df, judge="judge", success="human", label_design="random")


def test_sensitivity_averages_the_task_level_error_over_tasks():
    """``sensitivity`` is ``E expit(logit se + tau Z)`` over the judge's task-level error
    (checked by Monte Carlo over Z at a few draws); ``*_typical_task`` is the model's own
    draw at Z = 0."""
    res = fake_results(_judged(), model="judge", seed=3)
    out = res.judge().isel(judge=0)
    post = res.tree["posterior"].to_dataset()
    z = np.random.default_rng(0).standard_normal(1_000_000)
    for name in ("sensitivity", "specificity"):
        assert np.array_equal(
            out[f"{name}_typical_task"].transpose("chain", "draw", "system").values,
            post[name].transpose("chain", "draw", "system").values,
        )
        for chain, draw, system in [(0, 0, 0), (1, 7, 2), (0, 42, 1)]:
            se = float(post[name].isel(chain=chain, draw=draw, system=system))
            tau = float(post[f"judge_task_sigma_{name}"].isel(chain=chain, draw=draw))
            values = expit(logit(se) + tau * z)
            got = float(out[name].isel(chain=chain, draw=draw, system=system))
            assert abs(got - values.mean()) < 4 * values.std() / np.sqrt(z.size) + 1e-12
            if se > 0.5 and tau > 0:  # a better-than-chance judge errs more on average
                assert got < se
