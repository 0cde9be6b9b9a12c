"""The frequentist baseline: bootstrap intervals for pass@k, pass^k, G-pass@k, consistency,
mean scores, paired effects, effect curves and rank sets.

The public face of the bootstrap twins, each defined beside the posterior analysis it mirrors
in :mod:`bayeval.analyses` and built on the resampling engine of :mod:`bayeval.resampling`
(which says how trials, tasks and clusters are resampled as count-pattern histograms).
``unit="trial"`` is the twin of ``estimand="tasks"``; ``unit="task"`` and ``unit="cluster"``
are twins of ``estimand="population"`` (a new task; from a new cluster with ``"cluster"``).
"""

from __future__ import annotations

from bayeval.analyses.compare import bootstrap_compare as compare
from bayeval.analyses.curves import curve_bootstrap as compare_curve
from bayeval.analyses.metrics import consistency, g_pass_at_k, mean_score, pass_at_k, pass_hat_k
from bayeval.analyses.ranks import rank_sets

__all__ = [
    "pass_at_k",
    "pass_hat_k",
    "g_pass_at_k",
    "consistency",
    "mean_score",
    "compare",
    "rank_sets",
    "compare_curve",
]

from bayeval._cost import (
    cost,  # noqa: E402,F401  (twin of Results.cost)
    latency,  # noqa: E402,F401  (twin of bayeval._cost.posterior_latency)
)
from bayeval.noise import noise  # noqa: E402,F401  (twin of Results.noise)
