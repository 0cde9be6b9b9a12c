"""Evaluation data: tidy rows -> validated ``(system, task)`` counts with statuses and a policy.

Trials within a task are exchangeable, so a ``(system, task)`` cell is summarised by its counts:
successes among valid trials, and how many attempts ended with each status. Everything downstream
(estimators, bootstraps, models) works on these count arrays, never on per-episode rows.

Statuses
--------
``ok``          a recorded, valid outcome;
``invalid``     the output could not be scored;
``timeout``     the episode ran out of time;
``error``       environment or infrastructure failure;
``no_verdict``  no judge/verifier outcome was recorded;
``not_run``     a planned trial that has no row at all.

A row whose outcome is recorded is ``ok`` whatever the source's raw status says, unless the user
maps that raw status to a non-ok status; a row with no recorded outcome takes its mapped status,
or ``no_verdict``. A raw status column is used only through ``status_map`` or when its values
already are bayeval statuses.

Missing-outcome policies (``missing=``), required whenever a non-ok status is present:
``"fail"`` counts every non-ok attempt as a failure (end to end); ``"exclude"`` drops non-ok
attempts (conditional on a verdict; a cell left with no valid trial leaves the analysis and is
listed in :attr:`EvalData.excluded`); ``"bounds"`` keeps both extremes on a ``missing_bound`` dim
(``lower``: missing outcomes as failures, ``upper``: as successes).

Modules
-------
``evaldata``    the :class:`EvalData` class;
``frame``       :func:`from_frame` and :func:`read_csv`: a tidy table, checked and counted;
``counts``      :func:`from_counts`: count arrays;
``statuses``    statuses, their mapping and the missing-outcome policies;
``columns``     role columns, present and unique; ``values``: numeric cells read exactly;
``labels``      labels that group as written and that a results file reads back exactly;
``scores``, ``covariates``, ``latency``: per-attempt values summarised per cell;
``judge``       an automatic judge's verdicts beside trusted labels, and the label design;
``strata``      task-level clusters and strata; ``runs``: training runs as systems;
``digests``     canonical-JSON harness digests and the comparability check (a leaf).
"""

from bayeval.data.counts import from_counts
from bayeval.data.evaldata import EvalData, require_valid_outcomes
from bayeval.data.frame import from_frame, read_csv
from bayeval.data.judge import JUDGE_VARS, LABEL_DESIGNS
from bayeval.data.latency import LATENCY_VARS
from bayeval.data.scores import SCORE_VARS
from bayeval.data.statuses import MISSING_POLICIES, STATUSES
from bayeval.data.statuses import _assemble as _assemble  # simulate builds datasets with it

__all__ = [
    "STATUSES",
    "MISSING_POLICIES",
    "EvalData",
    "from_frame",
    "from_counts",
    "read_csv",
    "require_valid_outcomes",
    "SCORE_VARS",
    "LATENCY_VARS",
    "JUDGE_VARS",
    "LABEL_DESIGNS",
]
