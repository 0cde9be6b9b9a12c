"""EvalData from a tidy table (``from_frame``, ``read_csv``): rows checked, then counted per cell.

:func:`from_frame` runs in named steps: the roles' arguments checked against each other, their
columns checked in the frame, each row coded to its ``(system, task)`` cell, the rows tallied
(count rows as valid trials; outcome rows by status, with their scores, covariates and
durations), planned trials without a row added as ``not_run``, and the missing-outcome policy
applied.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from collections.abc import Callable, Mapping
from typing import IO, Any, NamedTuple

import numpy as np
import pandas as pd

from bayeval._io import check_text_head
from bayeval._validate import describe_rows, describe_values
from bayeval.data.columns import _check_columns, _check_not_missing, _check_unique, _labels
from bayeval.data.covariates import _covariate_names, _covariate_stats
from bayeval.data.digests import _canonical, digest
from bayeval.data.evaldata import EvalData
from bayeval.data.judge import _check_judge_roles, _judge_tally, _judge_vars
from bayeval.data.labels import _check_hashable, _check_labels
from bayeval.data.latency import _latency_arrays, _latency_names, _latency_seconds
from bayeval.data.runs import _CHECKPOINT, _checkpoint_labels, _with_run_coords
from bayeval.data.scores import _score_column, _score_stats
from bayeval.data.statuses import (
    _NOT_RUN,
    _OK,
    STATUSES,
    _assemble,
    _check_policy,
    _not_run,
    _status_codes,
)
from bayeval.data.strata import _stratum_weights, _task_attribute
from bayeval.data.values import _count_columns, _outcome_column

__all__ = ["from_frame", "read_csv"]

#: The options of :func:`from_frame` that a table with a run column passes on, as given.
_RUN_OPTIONS = (
    "system_name",
    "successes",
    "trials",
    "trial",
    "cluster",
    "stratum",
    "status",
    "status_map",
    "missing",
    "planned_trials",
    "stratum_weights",
    "harness",
    "covariates",
    "score",
    "latency",
)


def from_frame(
    df: pd.DataFrame,
    system: str | None = "system",
    task: str = "task",
    success: str | None = "success",
    *,
    system_name: str | None = None,
    successes: str | None = None,
    trials: str | None = None,
    trial: str | None = None,
    cluster: str | None = None,
    stratum: str | None = None,
    status: str | None = None,
    status_map: Mapping | None = None,
    missing: str | None = None,
    planned_trials: int | Mapping | None = None,
    stratum_weights: Mapping | None = None,
    harness: str | None = None,
    covariates=None,
    score: str | None = None,
    run: str | None = None,
    latency=None,
    judge: str | list | None = None,
    label_design: str | None = None,
    label_strata: str | None = None,
) -> EvalData:
    """Validate a tidy table and summarise it into ``(system, task)`` counts.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per ``(system, task, trial)`` outcome, or one row per ``(system, task)`` with
        counts (give ``successes=`` and ``trials=``). Never modified.
    system, task : str
        Column names of the system and task labels. ``system=None`` reads a table of one
        system that has no system column; ``system_name=`` then names it. Labels (of these,
        ``cluster``, ``stratum`` and ``run``) are saved with every fit, so each column holds
        labels of one type that a results file reads back exactly: ``str`` (valid Unicode,
        without NUL characters), ``int`` (64-bit) or ``float`` (not NaN); NumPy, pandas and
        categorical columns of these are read as their values. Others (bools, dates, tuples,
        decimals, bytes, ...) and labels that differ but compare equal (``1`` and ``1.0``,
        ``0.0`` and ``-0.0``) are refused, naming the column and rows. Trial ids are not
        saved: any hashable ids that stay distinct will do.
    system_name : str, optional
        The name of the one system when ``system=None`` (required then, and only then). A
        frame that has a ``"system"`` column is refused with ``system=None``: its rows may
        belong to several systems.
    success : str
        Column of 0/1 (or boolean) outcomes; an empty cell means no outcome was recorded.
        A ``Decimal`` or ``Fraction`` counts only if it is exactly 0 or 1.
    successes, trials : str, optional
        Columns of count rows: successes out of trials (all valid outcomes).
    trial : str, optional
        Column of trial ids; ``(system, task, trial)`` must then be unique.
    cluster, stratum : str, optional
        Task-level columns (repository/family; pre-declared stratum). A task must have one value.
    status : str, optional
        Column of statuses: bayeval statuses, or raw ones mapped with ``status_map``.
    status_map : mapping, optional
        Raw status -> bayeval status. A raw status left out means ``ok`` for a row with an
        outcome and ``no_verdict`` for a row without one (or itself, if it is a bayeval status).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy; required when any attempt is not ``ok``.
    planned_trials : int or mapping, optional
        Trials planned per task (an int, or task -> int). A cell with no rows is ``not_run`` for
        the planned number (default: the most common attempt count of that task across systems,
        the larger on ties). When given, cells with fewer attempts than planned also get the
        shortfall as ``not_run``.
    stratum_weights : mapping, optional
        Stratum -> declared weight (normalised to sum to one). Default: the observed share of
        tasks in each stratum.
    harness : str, optional
        Column identifying each row's harness: a digest (any non-empty string, normally
        :func:`bayeval.harness.digest` of the configuration) or the configuration itself as a
        mapping (digested here, and kept so that :func:`bayeval.harness.diff` can name the
        fields that differ). A system must be evaluated under one harness: a system whose rows
        carry several is refused (label each ``(system, harness)`` pair as its own system).
        Stored per system (:attr:`EvalData.harness`).
    covariates : list of str, optional
        Numeric per-attempt columns (cost, tokens, latency), outcome rows only. Each is stored
        per ``(system, task, status)``, so that the cost of a timed-out or failed attempt is
        counted under its status: ``covariate_count`` (attempts), ``covariate_sum``,
        ``covariate_sumsq`` (sum of squares), and over the positive values only
        ``covariate_positive`` (how many), ``covariate_logsum`` and ``covariate_logsumsq``
        (sums of logs and squared logs, the sufficient statistics of a log-normal), each over
        ``(covariate, system, task, status)``. Values must be finite, non-negative numbers
        (int, float, Fraction, Decimal; not booleans, complex numbers, dates or durations)
        and every row needs one: an empty cell is refused, naming the rows, because an
        unrecorded cost is not a zero cost (fill it explicitly, or drop the rows). Names are
        listed by :attr:`EvalData.covariates`.
    score : str, optional
        Column of partial-credit scores in [0, 1], one per attempt (row), instead of 0/1
        outcomes (``success=``; the two exclude each other, as do count rows). An empty cell
        means no score was recorded, as for ``success=``: it needs a non-ok status and a
        missing-outcome policy (under ``"fail"`` it scores 0). Scores must be real numbers
        (not booleans, text or dates), none outside [0, 1]; nothing is coerced. Stored per
        ``(system, task)`` over the ``ok`` attempts as :data:`SCORE_VARS` (see
        :meth:`EvalData.score_statistics`); ``successes`` counts the attempts with full credit
        (score 1). Fit with ``model="fractional"`` (the default where some score lies
        strictly between 0 and 1; or ``"zoib"``; scores all 0 or 1 are 0/1 outcomes and get
        the binomial models) or
        bootstrap with :func:`bayeval.bootstrap.mean_score`; the binary models refuse scores
        strictly between 0 and 1.
    run : str, optional
        Column of the training run (seed) each row's checkpoint came from; ``system`` then
        names the recipe (the checkpoint family). Each ``(system, run)`` pair is one system of
        the data, labelled ``"{system}/{run}"``, with coordinates ``recipe`` and ``run`` on
        ``system``; ``logit_normal`` gains a run spread within each recipe (``sigma_run``) and
        comparisons of recipes take ``runs="new"`` (new training seeds) or
        ``runs="observed"`` (these checkpoints): see :meth:`bayeval.Results.compare`. A
        recipe must have at least one run; run labels may repeat across recipes.
    latency : str or (str, str), optional
        Each attempt's duration, outcome rows only: a column of seconds (finite, non-negative
        numbers, or ``timedelta`` values), or a pair ``(start, end)`` of timestamp columns
        (datetimes, or ISO 8601 strings; the duration is ``end - start``). Both timestamps
        of a row must carry a UTC offset or neither (naive ones are read on one clock).
        An empty cell (both timestamps empty) means no duration was recorded for that
        attempt: it is kept as missing, never as zero, and left out of the latency
        quantiles. Refused, naming the column and rows: unparseable or wrongly typed values,
        one timestamp of a pair without the other, an end before its start, negative or
        non-finite seconds. Stored per attempt as ``latency`` (seconds) and
        ``latency_status`` (status code) over ``(system, task, attempt)``, padded with NaN
        and -1 to the longest cell; read with :meth:`EvalData.latency_frame` and
        :func:`bayeval.bootstrap.latency`.
    judge : str or list of str, optional
        Column(s) of an automatic judge's 0/1 verdicts, one per attempt (row); several columns
        add a ``judge`` dim (named by the columns). ``success`` then holds the trusted label
        (a human's, a verifier's), empty where the attempt was not labelled: an unlabelled
        attempt is not a missing outcome. ``successes`` and ``trials`` keep their meaning,
        the trusted outcomes: they count the labelled attempts only. Per ``(judge, system,
        task, label_stratum)`` the dataset holds :data:`~bayeval.data.judge.JUDGE_VARS`:
        labelled attempts by verdict and label (``judge_n11``, ``judge_n10``, ``judge_n01``,
        ``judge_n00``: verdict first) and unlabelled ones by verdict (``judge_u1``,
        ``judge_u0``). Every attempt with a label or a verdict needs every judge's verdict;
        a row with neither is an attempt without an outcome (``no_verdict``, or its status).
        Attempts that are not ``ok`` keep their status and the missing-outcome policy as
        elsewhere. Does not combine with count rows, ``score``, ``covariates``, ``latency``
        or ``run`` yet.
    label_design : {"random", "stratified"}
        How the labelled attempts were chosen; required with ``judge``. ``"random"``: within
        each system, every attempt equally likely to be labelled. ``"stratified"``: at random
        within each value of ``label_strata``. Anything else is refused: the true rate would
        not be identified. Labels whose presence depends on a judge's verdict (beyond chance)
        are refused unless the design declares strata by that verdict.
    label_strata : str, optional
        With ``label_design="stratified"``: the per-attempt column whose values are the
        strata (a judge column itself when the labelled share was set per verdict). The
        ``label_stratum`` dim holds its values (``["all"]`` under a random design).

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError, TypeError
        Naming the column, the first offending rows and what is allowed.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": ["A"] * 4, "task": ["t1", "t1", "t2", "t2"],
    ...                    "success": [1, 0, 1, 1]})
    >>> data = be.from_frame(df)
    >>> data.dataset["successes"].values
    array([[1, 2]])

    A table of one system, without a system column:

    >>> one = pd.DataFrame({"task": ["t1", "t2", "t3"], "success": [1, 0, 1]})
    >>> data = be.from_frame(one, system=None, system_name="my-model")
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['my-model'], [[1, 0, 1]])

    Per-attempt costs, summed per ``(system, task, status)``:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"], "success": [1, 0, None],
    ...                    "status": ["ok", "ok", "timeout"], "cost": [0.5, 0.25, 2.0]})
    >>> data = be.from_frame(df, status="status", missing="fail", covariates=["cost"])
    >>> data.covariates
    ['cost']
    >>> sums = data.dataset["covariate_sum"].sel(covariate="cost", system="A")
    >>> sums.sel(status=["ok", "timeout"]).values.tolist()
    [[0.75, 0.0], [0.0, 2.0]]

    Per-attempt durations from start and end timestamps:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t2"], "success": [1, 0],
    ...                    "start": ["2025-07-11T20:35:00+00:00", "2025-07-11T20:40:00Z"],
    ...                    "end": ["2025-07-11T20:36:30+00:00", "2025-07-11T21:40:00Z"]})
    >>> be.from_frame(df, latency=("start", "end")).latency_frame()["seconds"].tolist()
    [90.0, 3600.0]

    Partial-credit scores:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"], "score": [0.5, 1, 0]})
    >>> data = be.from_frame(df, score="score")
    >>> data.dataset["score_sum"].values.tolist(), data.dataset["successes"].values.tolist()
    ([[1.5, 0.0]], [[1, 0]])

    An automatic judge on every attempt, a human label on a random sample:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t2", "t3", "t4"],
    ...                    "judge": [1, 1, 0, 1], "human": [1, None, 0, None]})
    >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
    >>> ds = data.dataset.sel(judge="judge", label_stratum="all")
    >>> int(ds["judge_n11"].sum()), int(ds["judge_n00"].sum()), int(ds["judge_u1"].sum())
    (1, 1, 2)
    >>> data.dataset["trials"].values.tolist()  # the labelled attempts
    [[1, 0, 1, 0]]
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__}")
    if run is not None:
        if judge is not None:
            raise TypeError("judge= does not combine with run= yet")
        return _from_runs(df, system, task, success, run, locals())
    _check_system_name(df, system, system_name)
    count_rows = successes is not None or trials is not None
    judges = _check_judge_roles(
        judge,
        label_design,
        label_strata,
        success if score is None else None,
        successes=successes,
        trials=trials,
        score=score,
        covariates=covariates,
        latency=latency,
    )
    success = _outcome_role(success, score, count_rows)
    _check_count_roles(successes, trials, trial, status, status_map, count_rows)
    covariates = _covariate_names(df, covariates, count_rows)
    latency_columns = _latency_names(df, latency, count_rows)
    optional = {
        "trial": trial,
        "cluster": cluster,
        "stratum": stratum,
        "status": status,
        "harness": harness,
    }
    names = _role_columns(system, task, success, score, successes, trials, optional)
    if judges is not None:
        names.update(
            {f"judge[{i}]" if len(judges) > 1 else "judge": j for i, j in enumerate(judges)}
        )
        if label_strata is not None and label_strata not in judges:
            names["label_strata"] = label_strata
    _check_roles(df, names, status)

    rows = _code_rows(df, system, system_name, task)
    if harness is not None:
        digests, configs = _harness_column(df, harness, rows.sys_codes, rows.systems)
    keys = [system, task] if system is not None else [task]
    judged = None
    if count_rows:
        tally = _tally_count_rows(df, successes, trials, keys, rows)
    elif judges is not None:
        judged = _judge_tally(
            df,
            rows.cell,
            rows.size,
            rows.systems,
            success=success,
            judges=judges,
            status=status,
            status_map=status_map,
            trial=trial,
            keys=keys,
            label_strata=label_strata,
        )
        tally = _Tally(judged["status_counts"], judged["ok_successes"])
    else:
        tally = _tally_outcome_rows(
            df,
            rows,
            success=success,
            score=score,
            trial=trial,
            status=status,
            status_map=status_map,
            keys=keys,
            covariates=covariates,
            latency_columns=latency_columns,
        )
    unlabelled = None if judged is None else judged["unlabelled"]
    ok_successes, status_counts = _cell_counts(tally, rows, planned_trials, unlabelled)

    task_coords = _task_coords(df, task, rows, cluster, stratum)
    _check_policy(status_counts, missing)
    attrs = {"stratum_weights": _stratum_weights(task_coords.get("stratum"), stratum_weights)}
    if harness is not None and configs:
        attrs["harness_configs"] = json.dumps(configs, sort_keys=True)
    ds = _assemble(
        ok_successes, status_counts, missing, rows.systems, rows.tasks, task_coords, attrs
    )
    if harness is not None:
        ds = ds.assign_coords(harness=("system", digests))
    if judged is not None:
        variables, coords = _judge_vars(
            judged["counts"], rows.shape, judges, judged["strata"], judged["patterns"]
        )
        ds = ds.assign(variables).assign_coords(coords)
        ds.attrs["label_design"] = label_design
    return EvalData(_with_attempt_vars(ds, tally, covariates, latency_columns))


# compressions pandas infers from a suffix: those whose head can be read as a stream, and
# archives (several members) left to pandas
_DECOMPRESS: dict[str, Callable[..., IO[Any]]] = {
    ".gz": gzip.open,
    ".bz2": bz2.open,
    ".xz": lzma.open,
}
_ARCHIVES = (".zip", ".zst", ".tar", ".tgz")


def read_csv(path, **columns) -> EvalData:
    r"""Read a tidy CSV file and pass it to :func:`from_frame` with ``columns``.

    Examples
    --------
    >>> import io, bayeval as be
    >>> csv = io.StringIO("system,task,success\nA,t1,1\nA,t2,0\n")
    >>> be.read_csv(csv).dataset["successes"].values
    array([[1, 0]])
    """
    if isinstance(path, (str, os.PathLike)) and os.path.isfile(path):
        # a binary or garbage file is refused from its head, not parsed in full; pandas reads
        # a compressed file by its suffix, so the head is checked decompressed
        suffix = os.path.splitext(path)[1].lower()
        if suffix not in _ARCHIVES:
            opener = _DECOMPRESS.get(suffix)
            check_text_head(path, reader="read_csv", expected="a CSV table", opener=opener)
    return from_frame(pd.read_csv(path), **columns)


# -- the steps of from_frame -------------------------------------------------------------------
class _Rows(NamedTuple):
    """Each row's system and task codes, and the labels they index (order of appearance)."""

    sys_codes: np.ndarray
    systems: np.ndarray
    task_codes: np.ndarray
    tasks: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.systems), len(self.tasks)

    @property
    def size(self) -> int:
        return len(self.systems) * len(self.tasks)

    @property
    def cell(self) -> np.ndarray:
        """Each row's flat ``(system, task)`` index."""
        return self.sys_codes * len(self.tasks) + self.task_codes


class _Tally(NamedTuple):
    """The rows counted per flat cell, before ``not_run`` and the policy."""

    status_counts: np.ndarray  # (cell, status)
    ok_successes: np.ndarray  # (cell,), float from np.bincount
    scores: dict | None = None
    covariates: dict | None = None
    latency: dict | None = None


def _from_runs(df, system, task, success, run, arguments) -> EvalData:
    """:func:`from_frame` with a run column: one system per ``(recipe, run)`` pair."""
    labels, recipes, runs = _checkpoint_labels(df, system, run)
    data = from_frame(
        df.assign(**{_CHECKPOINT: labels}),
        system=_CHECKPOINT,
        task=task,
        success=success,
        **{k: arguments[k] for k in _RUN_OPTIONS},
    )
    return _with_run_coords(data, labels, recipes, runs, run)


def _outcome_role(success, score, count_rows: bool):
    """The outcome column: ``score=`` stands in for ``success=`` and excludes it and count rows."""
    if score is None:
        return success
    if count_rows:
        raise TypeError(
            "score= gives one score per attempt (row); it does not combine with "
            "count rows (successes=, trials=)"
        )
    if success not in (None, "success"):
        raise TypeError(
            f"score= and success= are mutually exclusive: give 0/1 outcomes "
            f"(success={success!r}) or scores in [0, 1] (score={score!r}), "
            "not both"
        )
    return score


def _check_count_roles(successes, trials, trial, status, status_map, count_rows: bool) -> None:
    """Count rows need both count columns and take no per-attempt roles; a map needs statuses."""
    if count_rows:
        if successes is None or trials is None:
            raise TypeError("count rows need both successes= and trials= column names")
        for name, value in (("trial", trial), ("status", status), ("status_map", status_map)):
            if value is not None:
                raise TypeError(
                    f"{name}= does not apply to count rows (successes=, trials=), which hold "
                    "valid outcomes only; give outcome rows (success=) to use statuses"
                )
    elif status_map is not None and status is None:
        raise TypeError("status_map= needs status=, the column holding the raw statuses")


def _role_columns(system, task, success, score, successes, trials, optional: dict) -> dict:
    """Role -> column name, for every role given (in the order the checks report them)."""
    names = {"system": system, "task": task} if system is not None else {"task": task}
    if successes is not None or trials is not None:
        names.update(successes=successes, trials=trials)
    else:
        names["score" if score is not None else "success"] = success
    names.update({k: v for k, v in optional.items() if v is not None})
    return names


def _check_roles(df: pd.DataFrame, names: dict, status) -> None:
    """The role columns exist once each, the frame has rows, and the labels group as written."""
    _check_columns(df, names)
    if len(df) == 0:
        raise ValueError("df has no rows; nothing to analyse")
    for role in ("system", "task", "trial", "cluster", "stratum"):
        if role in names:
            column = names[role]
            # trial ids are grouped, never stored: they need not survive a results file
            _check_labels(
                df[column], f"column {column!r}", df.index, noun=column, stored=role != "trial"
            )
    if status is not None:
        _check_hashable(df[status], f"column {status!r}", df.index)


def _code_rows(df: pd.DataFrame, system, system_name, task) -> _Rows:
    """Each row's system and task codes (``system=None``: every row is ``system_name``)."""
    if system is None:
        sys_codes = np.zeros(len(df), dtype=np.int64)
        systems = np.array([system_name], dtype=object)
    else:
        sys_codes, systems = _labels(df, system)
    task_codes, tasks = _labels(df, task)
    return _Rows(sys_codes, systems, task_codes, tasks)


def _tally_count_rows(df: pd.DataFrame, successes, trials, keys, rows: _Rows) -> _Tally:
    """Count rows per cell: every trial is a valid (``ok``) outcome."""
    c, n = _count_columns(df, successes, trials)
    _check_unique(df, keys, "count rows")
    size = rows.size
    status_counts = np.zeros((size, len(STATUSES)), dtype=np.int64)
    status_counts[:, _OK] = np.bincount(rows.cell, weights=n, minlength=size)
    return _Tally(status_counts, np.bincount(rows.cell, weights=c, minlength=size))


def _tally_outcome_rows(
    df: pd.DataFrame,
    rows: _Rows,
    *,
    success,
    score,
    trial,
    status,
    status_map,
    keys,
    covariates,
    latency_columns,
) -> _Tally:
    """Outcome rows per cell and status, with the per-attempt scores, covariates, durations."""
    outcome = _score_column(df, score) if score is not None else _outcome_column(df, success)
    if trial is not None:
        _check_not_missing(df, trial)
        _check_unique(df, [*keys, trial], "outcome rows")
    codes = _status_codes(df, status, status_map, recorded=~np.isnan(outcome))
    cell, shape, size, n_status = rows.cell, rows.shape, rows.size, len(STATUSES)
    status_counts = np.bincount(cell * n_status + codes, minlength=size * n_status).reshape(
        size, n_status
    )
    ok = codes == _OK
    ok_successes = np.bincount(
        cell[ok],
        weights=outcome[ok] == 1 if score is not None else outcome[ok],
        minlength=size,
    )
    scores = _score_stats(outcome[ok], cell[ok], shape) if score is not None else None
    covariate_vars = _covariate_stats(df, covariates, cell * n_status + codes, (*shape, n_status))
    latency_vars = None
    if latency_columns is not None:
        latency_vars = _latency_arrays(_latency_seconds(df, latency_columns), codes, cell, shape)
    return _Tally(status_counts, ok_successes, scores, covariate_vars, latency_vars)


def _cell_counts(
    tally: _Tally, rows: _Rows, planned_trials, unlabelled=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(system, task)`` successes and status counts, planned trials without a row ``not_run``.

    ``unlabelled``: judged attempts without a label per cell, which have rows (so are planned
    trials that ran) but no status count.
    """
    n_sys, n_task = rows.shape
    status_counts = tally.status_counts.reshape(n_sys, n_task, len(STATUSES)).astype(np.int64)
    ok_successes = np.rint(tally.ok_successes).astype(np.int64).reshape(n_sys, n_task)
    ran = status_counts.sum(-1)
    if unlabelled is not None:
        ran = ran + unlabelled.reshape(n_sys, n_task)
    status_counts[..., _NOT_RUN] += _not_run(ran, rows.tasks, planned_trials)
    return ok_successes, status_counts


def _task_coords(df: pd.DataFrame, task, rows: _Rows, cluster, stratum) -> dict:
    """The task-level columns given (``cluster``, ``stratum``), one value per task."""
    task_coords = {}
    for name, column in (("cluster", cluster), ("stratum", stratum)):
        if column is not None:
            task_coords[name] = _task_attribute(df, column, task, rows.task_codes, len(rows.tasks))
    return task_coords


def _with_attempt_vars(ds, tally: _Tally, covariates: list, latency_columns):
    """The dataset with the per-attempt summaries the rows gave (covariates, scores, latency)."""
    if covariates:
        ds = ds.assign(tally.covariates).assign_coords(covariate=np.array(covariates, dtype=object))
    if tally.scores is not None:
        ds = ds.assign(tally.scores)
    if latency_columns is not None:
        ds = ds.assign(tally.latency)
        ds.attrs["latency_columns"] = json.dumps(list(latency_columns))
    return ds


def _check_system_name(df: pd.DataFrame, system, system_name) -> None:
    """``system=None`` (one system, named ``system_name``) or a system column, not both."""
    if system is not None:
        if system_name is not None:
            raise TypeError(
                f"system_name= names the one system of a table without a system "
                f"column (system=None); here the systems come from column "
                f"{system!r} (got system_name={system_name!r})"
            )
        return
    if not isinstance(system_name, str) or not system_name.strip():
        raise TypeError(
            "system=None reads the table as one system: name it with "
            f"system_name= (a non-empty str); got system_name={system_name!r}"
        )
    if "system" in df.columns:
        raise ValueError(
            "system=None reads the table as one system, but the frame has a "
            "'system' column, whose rows may belong to several systems; give "
            "system='system', or drop the column first"
        )


def _harness_column(df, column, sys_codes, systems) -> tuple[np.ndarray, dict]:
    """One harness digest per system (refusing a system with several) and the configs given."""
    _check_not_missing(df, column)
    values = df[column].to_numpy(dtype=object)
    row_digest = np.empty(len(values), dtype=object)
    configs, by_id = {}, {}
    for i, v in enumerate(values):
        if isinstance(v, str):
            if not v.strip():
                raise ValueError(
                    f"column {column!r} has an empty harness digest in "
                    f"{describe_rows(df.index[[i]])}"
                )
            row_digest[i] = v
        elif isinstance(v, Mapping):
            if id(v) not in by_id:
                by_id[id(v)] = digest(v)
                configs[by_id[id(v)]] = _canonical(v)
            row_digest[i] = by_id[id(v)]
        else:
            bad = np.array([not isinstance(x, (str, Mapping)) for x in values])
            raise TypeError(
                f"column {column!r} must hold harness digests (str) or configurations "
                f"(mappings); found {describe_values(values[bad])} in "
                f"{describe_rows(df.index[bad])}"
            )
    codes = pd.factorize(row_digest, sort=False)[0]
    pairs = pd.DataFrame({"system": sys_codes, "digest": codes}).drop_duplicates()
    several = pairs["system"][pairs["system"].duplicated()].unique()
    if len(several):
        parts = []
        for s in several[:3]:
            rows = sys_codes == s
            groups = [
                f"{d!r} ({describe_rows(df.index[rows & (row_digest == d)])})"
                for d in pd.unique(row_digest[rows])
            ]
            parts.append(f"system {systems[s]!r} has {len(groups)}: {', '.join(groups)}")
        raise ValueError(
            f"column {column!r} must give each system one harness, but {len(several)} "
            f"system(s) have several: {'; '.join(parts)}. Label each (system, harness) pair "
            "as its own system to analyse them side by side, or measure the change with "
            "bayeval.harness.canary"
        )
    per_system = np.empty(len(systems), dtype=object)
    per_system[pairs["system"].to_numpy()] = row_digest[pairs.index.to_numpy()]
    return per_system, configs
