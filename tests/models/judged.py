"""Judged attempts simulated with a known truth, for the judge-aware model's tests."""

import numpy as np
import pandas as pd
from scipy import special


def simulate_judged(rng, *, systems, n_task=100, trials=3, share=0.2):
    """Judged attempts of systems ``name -> (mean logit, sensitivity, specificity)``.

    The task difficulty is shared by the systems. Returns the frame and each system's true
    rates ``p (task,)``.
    """
    z = rng.normal(0, 1, n_task)
    frames, rates = [], {}
    for name, (a, se, sp) in systems.items():
        p = special.expit(a + z)
        rates[name] = p
        y = rng.random((n_task, trials)) < p[:, None]
        j = np.where(y, rng.random(y.shape) < se, rng.random(y.shape) < 1 - sp)
        lab = rng.random(y.shape) < share
        frames.append(
            pd.DataFrame(
                {
                    "system": name,
                    "task": np.repeat(np.arange(n_task), trials),
                    "judge": j.ravel().astype(int),
                    "human": np.where(lab, y, np.nan).ravel(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True), rates
