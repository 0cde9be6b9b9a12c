"""The frequentist baseline: bootstrap intervals and their twins, re-exported in one place.

Intervals for pass@k, pass^k, G-pass@k, consistency, mean scores, paired effects, effect curves,
rank sets, cost, latency and noise components, and a judge's verdicts corrected by labelled
attempts (PPI++, :func:`ppi`). Each twin is defined beside the posterior analysis
it mirrors in :mod:`bayeval.analyses` and built on the resampling engine of
:mod:`bayeval.resampling` (which says how trials, tasks and clusters are resampled as
count-pattern histograms). ``unit="trial"`` is the twin of ``estimand="tasks"``; ``unit="task"``
and ``unit="cluster"`` are twins of ``estimand="population"`` (a new task; from a new cluster
with ``"cluster"``).
"""

from __future__ import annotations

from bayeval.analyses.compare import bootstrap_compare as compare
from bayeval.analyses.cost import cost
from bayeval.analyses.curves import curve_bootstrap as compare_curve
from bayeval.analyses.latency import latency
from bayeval.analyses.metrics import consistency, g_pass_at_k, mean_score, pass_at_k, pass_hat_k
from bayeval.analyses.noise import noise
from bayeval.analyses.ppi import ppi
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
    "cost",
    "latency",
    "noise",
    "ppi",
]
