"""Synthetic partial-credit data of LiveBench's shape, with known truth, for the zoib benchmarks.

LiveBench (held out): 1,136 questions in 18 task categories, eight of them graded on [0, 1],
one attempt per (system, question), up to 41 systems. The generator: categories of 63-64
questions; eta = alpha[s] + u[g] + e[j] + v[s, j] with u ~ N(0, 0.8), e ~ N(0, 1.2),
v ~ N(0, 0.4); in the eight partial-credit categories a score is, with probability 0.7, a
Beta(6 mu, 6 (1 - mu)) draw with mu = expit(eta + 0.3), else a 0/1 grade
Bernoulli(expit(eta)); in the others it is that 0/1 grade. The systems' intercepts are evenly
spaced over [-1.5, 1.5] (a leaderboard's spread), so about 30% of scores are interior.

    from livebench_shape import livebench_shaped
    df, truth = livebench_shaped(41, seed=0)   # columns system, task, category, score

``truth``: per system, the mean over these questions of each cell's expected score.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

N_TASKS = 1136
N_CLUSTERS = 18
N_PARTIAL = 8
SIGMA_CLUSTER, SIGMA_TASK, SIGMA_TS = 0.8, 1.2, 0.4
DELTA, PHI, ZOI_PARTIAL = 0.3, 6.0, 0.3
ALPHA_RANGE = (-1.5, 1.5)


def intercepts(n_systems: int) -> np.ndarray:
    """The systems' intercepts: evenly spaced over :data:`ALPHA_RANGE`."""
    return np.linspace(*ALPHA_RANGE, n_systems) if n_systems > 1 else np.zeros(1)


def livebench_shaped(n_systems: int, seed: int, n_tasks: int = N_TASKS):
    """Scores of ``n_systems`` systems on ``n_tasks`` questions, and the tasks truth per system."""
    rng = np.random.default_rng([seed, 1136])
    cluster = np.sort(np.arange(n_tasks) % N_CLUSTERS)
    partial = (cluster < N_PARTIAL)[None, :]
    u = rng.normal(0, SIGMA_CLUSTER, N_CLUSTERS)
    e = rng.normal(0, SIGMA_TASK, n_tasks)
    alpha = intercepts(n_systems)
    v = rng.normal(0, SIGMA_TS, (n_systems, n_tasks))
    eta = alpha[:, None] + u[cluster][None, :] + e[None, :] + v
    q = special.expit(eta)
    mu = special.expit(eta + DELTA)
    binary = (rng.random(eta.shape) < q).astype(float)
    interior = partial & (rng.random(eta.shape) >= ZOI_PARTIAL)
    y = np.where(interior, rng.beta(PHI * mu, PHI * (1 - mu)), binary)
    m = np.where(partial, ZOI_PARTIAL * q + (1 - ZOI_PARTIAL) * mu, q)
    systems = [f"s{s:02d}" for s in range(n_systems)]
    df = pd.DataFrame(
        {
            "system": np.repeat(systems, n_tasks),
            "task": np.tile([f"q{j:04d}" for j in range(n_tasks)], n_systems),
            "category": np.tile([f"c{g:02d}" for g in cluster], n_systems),
            "score": y.ravel(),
        }
    )
    return df, pd.Series(m.mean(axis=1), index=systems, name="tasks_truth")
