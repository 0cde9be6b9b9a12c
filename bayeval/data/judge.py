"""A judge's verdicts beside trusted labels (``from_frame(..., judge=)``), counted per cell.

Every attempt has the judge's 0/1 verdict (one per judge column); some attempts also have a
trusted label (the ``success`` column; empty where not labelled). Per ``(judge, system, task,
label_stratum)`` the rows are counted into :data:`JUDGE_VARS`: the four labelled cells
``judge_n{j}{y}`` (judge verdict ``j``, label ``y``) and the unlabelled verdicts ``judge_u1``
and ``judge_u0``. With several judges the joint pattern of their verdicts on each attempt is
counted too (:data:`PATTERN_VAR`): a model of several judges needs which of them agreed on the
same attempt, which the per-judge counts do not keep. ``successes`` and ``trials`` keep their
meaning: the trusted outcomes, so they count the labelled attempts only.

Labels must be a random sample of the attempts (``label_design="random"``: within each system,
every attempt equally likely to be labelled) or a stratified one (``"stratified"``: random
within each stratum of ``label_strata``, a per-attempt column, possibly a judge column itself).
Any other way of choosing them leaves the true success rate unidentified and is refused, and so
are labels whose presence visibly depends on a judge's verdict when no stratification by it
was declared.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bayeval._validate import describe_rows, describe_values
from bayeval.data.columns import _check_unique
from bayeval.data.labels import _check_labels
from bayeval.data.statuses import _OK, STATUSES, _status_codes
from bayeval.data.values import _outcome_column

__all__ = ["JUDGE_VARS", "LABEL_DESIGNS", "MAX_JUDGES", "PATTERN_VAR"]

#: Per ``(judge, system, task, label_stratum)`` counts: labelled attempts by (verdict, label)
#: (``judge_n{verdict}{label}``), then unlabelled attempts by verdict (``judge_u{verdict}``).
JUDGE_VARS = ("judge_n11", "judge_n10", "judge_n01", "judge_n00", "judge_u1", "judge_u0")

#: How labelled attempts may have been chosen for the true rate to be identified.
LABEL_DESIGNS = ("random", "stratified")

#: The dims of every judge count, in order.
JUDGE_DIMS = ("judge", "system", "task", "label_stratum")

#: With several judges, attempts per ``(system, task, label_stratum, verdicts, label)``:
#: ``verdicts`` is the pattern of the judges' verdicts on one attempt, a string of 0/1 in the
#: order of the ``judge`` coordinate (``"10"``: the first judge said 1, the second 0), and
#: ``label`` is ``"1"`` or ``"0"`` (the trusted label) or ``"none"`` (not labelled).
PATTERN_VAR = "judge_patterns"
PATTERN_DIMS = ("system", "task", "label_stratum", "verdicts", "label")
PATTERN_LABELS = ("1", "0", "none")

#: The most judges counted jointly: their verdict patterns number 2**judges per cell.
MAX_JUDGES = 6

#: A label-presence test this extreme means the labels were chosen by the judge's verdict; a
#: random design crosses it by chance about once in a million (system, stratum) cells.
_DEPENDENCE_P = 1e-6

_WHY = (
    "the true success rate is identified from judged and labelled attempts only when which "
    "attempts were labelled does not depend on their outcome beyond what is declared: a "
    "random sample (label_design='random') or a random sample within declared strata "
    "(label_design='stratified', label_strata=column)"
)


def _judge_names(judge) -> list[str]:
    """The judge column names: one name or a list of distinct names."""
    names = [judge] if isinstance(judge, str) else judge
    if not isinstance(names, list | tuple) or not names:
        raise TypeError(
            f"judge= must be a column name (str) or a non-empty list of them; got {judge!r}"
        )
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"judge= must name columns (str); got {describe_values(bad)}")
    if len(set(names)) != len(names):
        raise ValueError(f"judge= names a column twice: {names}")
    if len(names) > MAX_JUDGES:
        raise ValueError(
            f"judge= names {len(names)} columns; at most {MAX_JUDGES} judges are counted "
            f"jointly (their verdict patterns number 2**judges per cell): choose among {names}"
        )
    return list(names)


def _check_judge_roles(judge, label_design, label_strata, success, **others) -> list[str] | None:
    """The judge columns, or ``None`` without ``judge=``; refuses what does not combine."""
    if judge is None:
        for name, value in (("label_design", label_design), ("label_strata", label_strata)):
            if value is not None:
                raise TypeError(f"{name}= applies to judged data: give judge= too")
        return None
    names = _judge_names(judge)
    given = [name for name, value in others.items() if value not in (None, [], ())]
    if given:
        raise TypeError(
            f"judge= does not combine with {', '.join(f'{n}=' for n in given)} yet: give "
            "one row per attempt with its 0/1 verdicts and label (success=)"
        )
    if success is None:
        raise TypeError("judge= needs success=, the column of trusted labels (empty if unlabelled)")
    if success in names:
        raise ValueError(
            f"column {success!r} is both a judge (judge=) and the trusted label (success=)"
        )
    if label_design is None:
        raise TypeError(
            "judge= needs label_design=: say how the labelled attempts were chosen, "
            f"'random' or 'stratified' (with label_strata=); {_WHY}"
        )
    if not isinstance(label_design, str) or label_design not in LABEL_DESIGNS:
        raise ValueError(
            f"label_design must be one of {list(LABEL_DESIGNS)}; got {label_design!r}. "
            f"Labels chosen another way (by convenience, by looking at the outputs or the "
            f"verdicts, by active learning) are refused: the true rate would not be "
            f"identified, because {_WHY}"
        )
    if label_design == "stratified":
        if not isinstance(label_strata, str):
            raise TypeError(
                "label_design='stratified' needs label_strata=, the column (one value per "
                f"attempt) within whose values the labelled attempts were drawn at random; got "
                f"{label_strata!r}"
            )
    elif label_strata is not None:
        raise TypeError(
            "label_strata= declares a stratified design: give label_design='stratified' "
            f"(got label_design={label_design!r})"
        )
    return names


def _label_strata(df, column, judges, verdicts, ok) -> tuple[np.ndarray, np.ndarray]:
    """Each row's label-stratum code (-1 where not ok) and the strata labels."""
    codes = np.full(len(df), -1, dtype=np.int64)
    if column is None:
        codes[ok] = 0
        return codes, np.array(["all"], dtype=object)
    if column in judges:  # stratified by a judge's own verdict: strata 0 and 1 (ints)
        values = verdicts[judges.index(column)][ok].astype(np.int64)
        labels = np.unique(values)
        codes[ok] = np.searchsorted(labels, values)
        return codes, labels.astype(object)
    series = df[column][ok]
    _check_labels(series, f"column {column!r}", df.index[ok], noun="label stratum")
    found, labels = pd.factorize(series, sort=False)
    codes[ok] = found
    return codes, np.asarray(labels, dtype=object)


def _refuse_unjudged(df, judges, verdicts, ok) -> None:
    for name, v in zip(judges, verdicts, strict=True):
        gap = ok & np.isnan(v)
        if gap.any():
            raise ValueError(
                f"judge column {name!r} has no verdict in {describe_rows(df.index[gap])}, "
                "attempts that have a label or another judge's verdict: every attempt with an "
                "outcome needs every judge's 0/1 verdict (drop those rows, or mark attempts "
                "without any outcome with an empty label and empty verdicts)"
            )


def _check_label_presence(systems, stratum_labels, judges, counts) -> None:
    """Refuse labels that depend on a verdict within a declared stratum, or strata without any.

    ``counts``: ``(judge, system, stratum, 6)`` in :data:`JUDGE_VARS` order.
    """
    labelled = counts[..., :4].sum(-1)
    total = counts.sum(-1)
    bare = (labelled[0].sum(0) == 0) & (total[0].sum(0) > 0)
    if bare.any():
        where = (
            f"label stratum {describe_values(stratum_labels[bare])} has"
            if len(stratum_labels) > 1
            else "the data have"
        )
        raise ValueError(
            f"{where} judged attempts but no labelled one: the judge's error there is not "
            "identified, nor the true success rate; label a random sample of them"
        )
    for j, name in enumerate(judges):
        for s, system in enumerate(systems):
            for h, stratum in enumerate(stratum_labels):
                n11, n10, n01, n00, u1, u0 = counts[j, s, h].tolist()
                a, b = n11 + n10, n11 + n10 + u1  # labelled / all, judge says 1
                c, d = n01 + n00, n01 + n00 + u0  # labelled / all, judge says 0
                p = _two_proportion_p(a, b, c, d)
                if p < _DEPENDENCE_P:
                    where = f"system {system!r}" + (
                        f", label stratum {stratum!r}" if len(stratum_labels) > 1 else ""
                    )
                    raise ValueError(
                        f"labels are not a random sample of the judged attempts: in {where}, "
                        f"{a} of {b} attempts judged 1 by {name!r} are labelled but {c} of {d} "
                        f"judged 0 (a difference with p = {p:.1g} by chance). Labels chosen by "
                        f"the judge's verdict leave the true rate unidentified unless the "
                        f"choice is declared: if the labelled share was set per verdict, give "
                        f"label_design='stratified', label_strata={name!r}"
                    )


def _two_proportion_p(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of the pooled z-test that ``a/b`` and ``c/d`` share one proportion."""
    if b == 0 or d == 0:
        return 1.0
    pooled = (a + c) / (b + d)
    if pooled in (0.0, 1.0):
        return 1.0
    z = (a / b - c / d) / math.sqrt(pooled * (1 - pooled) * (1 / b + 1 / d))
    return math.erfc(abs(z) / math.sqrt(2))


def _judge_tally(
    df, cell, size, systems, *, success, judges, status, status_map, trial, keys, label_strata
) -> dict:
    """Rows counted per flat ``(system, task)`` cell, and per judge and label stratum.

    Returns ``status_counts`` ``(cell, status)`` and ``ok_successes`` ``(cell,)`` of the
    labelled (and non-ok) attempts, ``unlabelled`` ``(cell,)``, ``counts``
    ``(judge, cell, stratum, 6)`` in :data:`JUDGE_VARS` order, ``strata`` (the labels) and,
    with several judges, ``patterns`` ``(cell, stratum, 2**judges, 3)`` (:data:`PATTERN_VAR`;
    ``None`` for one judge).
    """
    label = _outcome_column(df, success)
    verdicts = np.stack([_outcome_column(df, name) for name in judges])
    if trial is not None:
        _check_unique(df, [*keys, trial], "outcome rows")
    recorded = ~np.isnan(label) | (~np.isnan(verdicts)).any(0)
    codes = _status_codes(df, status, status_map, recorded=recorded)
    ok = codes == _OK
    _refuse_unjudged(df, judges, verdicts, ok)
    stratum, strata = _label_strata(df, label_strata, judges, verdicts, ok)
    has_label = ~np.isnan(label)
    unlabelled = ok & ~has_label
    n_status, n_strata = len(STATUSES), len(strata)
    counted = ~unlabelled  # labelled ok attempts and every non-ok one keep their status
    status_counts = np.bincount(
        cell[counted] * n_status + codes[counted], minlength=size * n_status
    ).reshape(size, n_status)
    labelled_ok = ok & has_label
    ok_successes = np.bincount(cell[labelled_ok], weights=label[labelled_ok], minlength=size)
    # judge cell per ok row: 0..3 labelled (verdict, label) = 11, 10, 01, 00; 4, 5 unlabelled
    counts = np.zeros((len(judges), size, n_strata, len(JUDGE_VARS)), dtype=np.int64)
    rows = np.flatnonzero(ok)
    for j, v in enumerate(verdicts):
        verdict = v[rows].astype(np.int64)
        kind = np.where(
            has_label[rows],
            2 * (1 - verdict) + (1 - np.nan_to_num(label[rows])).astype(int),
            4 + (1 - verdict),
        )
        flat = (cell[rows] * n_strata + stratum[rows]) * len(JUDGE_VARS) + kind
        counts[j] = np.bincount(flat, minlength=counts[j].size).reshape(counts[j].shape)
    n_task = size // len(systems)
    per_system = counts.reshape(len(judges), len(systems), n_task, n_strata, -1).sum(2)
    _check_label_presence(systems, strata, judges, per_system)
    patterns = None
    if len(judges) > 1:
        # the first judge is the pattern's leading digit (its most significant bit)
        weights = 2 ** np.arange(len(judges) - 1, -1, -1)
        pattern = weights @ verdicts[:, rows].astype(np.int64)
        state = np.where(has_label[rows], 1 - np.nan_to_num(label[rows]).astype(int), 2)
        n_pattern, n_state = 2 ** len(judges), len(PATTERN_LABELS)
        flat = ((cell[rows] * n_strata + stratum[rows]) * n_pattern + pattern) * n_state + state
        patterns = np.bincount(flat, minlength=size * n_strata * n_pattern * n_state).reshape(
            size, n_strata, n_pattern, n_state
        )
    return {
        "status_counts": status_counts,
        "ok_successes": ok_successes,
        "unlabelled": np.bincount(cell[unlabelled], minlength=size),
        "counts": counts,
        "strata": strata,
        "patterns": patterns,
    }


def _judge_vars(
    counts: np.ndarray, shape: tuple[int, int], judges, strata, patterns=None
) -> tuple[dict, dict]:
    """The :data:`JUDGE_VARS` over :data:`JUDGE_DIMS` (and :data:`PATTERN_VAR`), coordinates."""
    n_sys, n_task = shape
    grid = counts.reshape(len(judges), n_sys, n_task, len(strata), len(JUDGE_VARS))
    data: dict[str, tuple[tuple[str, ...], np.ndarray]] = {
        name: (JUDGE_DIMS, grid[..., k]) for k, name in enumerate(JUDGE_VARS)
    }
    coords = {
        "judge": np.array(judges, dtype=object),
        "label_stratum": _coordinate(strata),
    }
    if patterns is not None:
        data[PATTERN_VAR] = (
            PATTERN_DIMS,
            patterns.reshape(n_sys, n_task, len(strata), *patterns.shape[2:]),
        )
        coords["verdicts"] = np.array(verdict_patterns(len(judges)), dtype=object)
        coords["label"] = np.array(PATTERN_LABELS, dtype=object)
    return data, coords


def verdict_patterns(n_judges: int) -> list[str]:
    """The verdict patterns of ``n_judges`` judges in :data:`PATTERN_VAR` order.

    Examples
    --------
    >>> verdict_patterns(2)
    ['00', '01', '10', '11']
    """
    return [format(k, f"0{n_judges}b") for k in range(2**n_judges)]


def _coordinate(labels) -> np.ndarray:
    kinds = {type(v.item() if isinstance(v, np.generic) else v) for v in labels}
    if kinds <= {str}:
        return np.array(labels.tolist(), dtype=object)
    if kinds <= {int}:
        return np.array(labels.tolist(), dtype=np.int64)
    return np.asarray(labels)
