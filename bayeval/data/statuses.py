"""Attempt statuses and missing-outcome policies: each row's status, and the counts a policy keeps.

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
attempts (conditional on a verdict); ``"bounds"`` keeps both extremes on a ``missing_bound`` dim
(``lower``: missing outcomes as failures, ``upper``: as successes).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import xarray as xr

from bayeval._validate import describe_rows, describe_values, validate_choice

__all__ = ["STATUSES", "MISSING_POLICIES"]


STATUSES = ("ok", "invalid", "timeout", "error", "no_verdict", "not_run")


MISSING_POLICIES = ("fail", "exclude", "bounds")


_OK, _NO_VERDICT, _NOT_RUN = 0, STATUSES.index("no_verdict"), STATUSES.index("not_run")


_POLICY_HELP = (
    "'fail' (every non-ok attempt counts as a failure: the end-to-end rate), "
    "'exclude' (drop non-ok attempts: the rate given a verdict), "
    "'bounds' (report both extremes: missing as failures and as successes)"
)


def _status_codes(df, status, status_map, recorded: np.ndarray) -> np.ndarray:
    """One status code per row, following the rules in the module docstring."""
    codes = np.where(recorded, _OK, _NO_VERDICT)
    if status is None:
        return codes
    raw = df[status]
    known = set(STATUSES)
    if status_map is None:
        present = raw.dropna().unique().tolist()
        foreign = [v for v in present if v not in known]
        if foreign:
            raise ValueError(
                f"column {status!r} holds values that are not bayeval statuses: "
                f"{describe_values(foreign)}; map them with status_map= onto {list(STATUSES)} "
                "(a raw status left out of the map means 'ok' for a row with an outcome and "
                "'no_verdict' for one without), or leave status= unset"
            )
        mapping = {}
    else:
        if not isinstance(status_map, Mapping):
            raise TypeError(
                f"status_map must be a mapping of raw status -> bayeval status; "
                f"got {type(status_map).__name__}"
            )
        bad = {k: v for k, v in status_map.items() if v not in known}
        if bad:
            raise ValueError(
                f"status_map maps onto unknown statuses {bad}; allowed: {list(STATUSES)}"
            )
        mapping = dict(status_map)
    mapped = raw.map(lambda v: mapping.get(v, v if v in known else None))
    explicit = mapped.notna().to_numpy()
    lookup = {s: i for i, s in enumerate(STATUSES)}
    explicit_codes = mapped[explicit].map(lookup).to_numpy(dtype=np.int64)
    nan_ok = explicit.copy()
    nan_ok[explicit] = (explicit_codes == _OK) & ~recorded[explicit]
    if nan_ok.any():
        raise ValueError(
            f"column {status!r} marks {describe_rows(df.index[nan_ok])} as 'ok' with no "
            "recorded outcome; an ok row needs a 0/1 outcome (map such rows to 'no_verdict', "
            "'error', 'timeout', 'invalid' or 'not_run')"
        )
    codes[explicit] = explicit_codes
    return codes


def _not_run(rows: np.ndarray, tasks, planned_trials) -> np.ndarray:
    """Planned trials with no row at all, per cell (``rows``: rows per cell, any status)."""
    n_task = rows.shape[1]
    default = _modal_rows(rows)
    if planned_trials is None:
        return np.where(rows == 0, default[None, :], 0)
    if isinstance(planned_trials, Mapping):
        position = {t: i for i, t in enumerate(tasks.tolist())}
        unknown = [t for t in planned_trials if t not in position]
        if unknown:
            raise ValueError(f"planned_trials names unknown tasks {describe_values(unknown)}")
        planned = default.copy()
        for t, value in planned_trials.items():
            planned[position[t]] = _planned_value(value)
    else:
        planned = np.full(n_task, _planned_value(planned_trials), dtype=np.int64)
    return np.maximum(planned[None, :] - rows, 0)


def _planned_value(value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"planned_trials must be positive integers; got {value!r}")
    return int(value)


def _modal_rows(rows: np.ndarray) -> np.ndarray:
    """Most common positive row count per task (the larger on ties)."""
    n_task = rows.shape[1]
    task_idx = np.broadcast_to(np.arange(n_task), rows.shape)
    has = rows > 0
    pairs = np.stack([task_idx[has], rows[has]], axis=1)
    uniq, freq = np.unique(pairs, axis=0, return_counts=True)
    order = np.lexsort((uniq[:, 1], freq, uniq[:, 0]))
    uniq = uniq[order]
    last = np.r_[uniq[1:, 0] != uniq[:-1, 0], True]
    modal = np.zeros(n_task, dtype=np.int64)
    modal[uniq[last, 0]] = uniq[last, 1]
    return modal


def _check_policy(status_counts: np.ndarray, missing) -> None:
    if missing is not None:
        validate_choice("missing", missing, MISSING_POLICIES)
        return
    totals = status_counts.sum(axis=(0, 1))
    if totals[_OK + 1 :].sum() == 0:
        return
    listed = ", ".join(f"{s}: {int(t)}" for s, t in zip(STATUSES, totals, strict=True) if t)
    raise ValueError(
        f"{int(totals[_OK + 1 :].sum())} of {int(totals.sum())} planned attempts are not 'ok' "
        f"({listed}); choose a missing-outcome policy with missing=: {_POLICY_HELP}"
    )


def _assemble(
    ok_successes, status_counts, policy, systems, tasks, task_coords, attrs
) -> xr.Dataset:
    """Apply a missing-outcome policy and build the dataset."""
    ok_trials = status_counts[..., _OK]
    planned = status_counts.sum(-1)
    dims = ("system", "task")
    if policy == "bounds":
        upper = ok_successes + (planned - ok_trials)
        successes = xr.DataArray(np.stack([ok_successes, upper]), dims=("missing_bound",) + dims)
        trials = planned
    elif policy == "fail":
        successes, trials = xr.DataArray(ok_successes, dims=dims), planned
    else:
        successes, trials = xr.DataArray(ok_successes, dims=dims), ok_trials
    coords = {
        "system": np.asarray(systems, dtype=object),
        "task": np.asarray(tasks),
        "status": list(STATUSES),
    }
    if policy == "bounds":
        coords["missing_bound"] = ["lower", "upper"]
    coords.update({name: ("task", values) for name, values in task_coords.items()})
    ds = xr.Dataset(
        {
            "successes": successes,
            "trials": (dims, np.asarray(trials, dtype=np.int64)),
            "attempts": (dims, status_counts[..., :_NOT_RUN].sum(-1)),
            "status_counts": (dims + ("status",), status_counts),
        },
        coords=coords,
    )
    ds.attrs = {**attrs, "missing_policy": policy or "none"}
    return ds
