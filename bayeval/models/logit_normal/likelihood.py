"""The logit-normal model's log-likelihood of each task's counts, per posterior draw.

The task and task-by-system effects integrated out by quadrature (the likelihood the collapsed
form samples), joint over the systems that ran the task: what ``arviz_stats.loo`` leaves out.
"""

from __future__ import annotations

import numpy as np

from bayeval.data.groups import dataset_of
from bayeval.models._beta_family import counts_by_bound
from bayeval.models.kernels.likelihood import all_pattern_logliks
from bayeval.models.kernels.quadrature import Rules
from bayeval.models.logit_normal.layout import Layout, task_patterns

_CHUNK_NUMBERS = 4_000_000  # linear predictors (draws x rows x systems) held at once


def log_likelihood_cost(tree) -> float:
    """Rough seconds to compute :func:`pattern_log_likelihood` on a fitted tree."""
    obs = dataset_of(tree)
    c, n, _ = counts_by_bound(obs)
    pat = task_patterns(c[0], n[0], Layout.from_dataset(obs))
    low = (pat.n <= 2).all(axis=1)
    S = pat.n.shape[1]
    per_draw = 4e-8 * S * low.sum() + 6e-6 * S * (~low).sum()
    post = tree["posterior"]
    return per_draw * post.sizes["chain"] * post.sizes["draw"]


def pattern_log_likelihood(
    prm: dict, layout: Layout, c, n
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each count pattern's integrated log-likelihood, without binomial coefficients.

    ``prm`` holds the posterior arrays flattened over ``(chain, draw)`` (``alpha``, ``u``,
    ``w``, ``sigma_task`` and, paired, ``sigma_task_system``); ``c``, ``n`` are ``(system,
    task)``. The tasks with the same counts in the same cluster and stratum are one pattern.
    Returns ``values (draw, pattern)``, each pattern's first task and each task's pattern.
    """
    D = prm["sigma_task"].shape[0]
    S = c.shape[0]
    pat = task_patterns(c, n, layout)
    total = np.zeros((D, len(pat.first)))
    sigma_v = prm["sigma_task_system"] if layout.paired else np.ones(D)
    arrays = Rules().arrays()
    pc, pn = np.ascontiguousarray(pat.c), np.ascontiguousarray(pat.n)
    # the predictors per (cluster, stratum), not per pattern: the patterns share them
    keys, row = np.unique(np.stack([pat.cluster, pat.stratum], axis=1), axis=0, return_inverse=True)
    g, h = keys[:, 0], keys[:, 1]
    chunk = max(1, _CHUNK_NUMBERS // max(keys.shape[0] * S, 1))  # memory stays bounded
    for start in range(0, D, chunk):
        d = slice(start, min(start + chunk, D))
        rows = (
            prm["alpha"][d][:, :, h].transpose(0, 2, 1)
            + prm["u"][d][:, g][:, :, None]
            + prm["w"][d][:, :, g].transpose(0, 2, 1)
        )  # (draws, rows, S)
        total[d] = all_pattern_logliks(
            np.ascontiguousarray(rows, float),
            np.ascontiguousarray(row.ravel(), np.int64),
            pc,
            pn,
            np.ascontiguousarray(prm["sigma_task"][d], float),
            np.ascontiguousarray(sigma_v[d], float),
            layout.paired,
            *arrays,
        )
    return total, pat.first, pat.inverse
