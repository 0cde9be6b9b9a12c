"""Generated frames through ``from_frame``: only clean refusals escape, and what is accepted is
counted exactly as an independent reference (a plain pandas groupby written here) counts it.

The frames mix outcome rows and count rows, statuses with and without a map, the three
missing-outcome policies, clusters (consistent or not), exact numeric types (Fraction,
Decimal, NumPy scalars, nullable dtypes) and values that must be refused (complex numbers,
durations, text, containers, labels that compare equal).
"""

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayeval as be
from bayeval.data import STATUSES

N_FRAMES = 2000

_ZERO_ONE = [
    0,
    1,
    0.0,
    1.0,
    True,
    False,
    np.int64(1),
    np.float64(0.0),
    Fraction(1),
    Decimal("0"),
    Fraction(0),
    Decimal("1.0"),
]
_MISSING = [None, np.nan]
_BAD_OUTCOMES = [2, -1, 0.5, Fraction(1, 2), "1", 1 + 0j, pd.Timedelta(1), [1], {"a": 1}]
_SYSTEMS = ["A", "B", 7]
_TASKS = ["t1", "t2", "t3", 11]
_RAW_STATUSES = list(STATUSES) + ["raw_error", "agent_timeout", None]


def _outcomes(draw, n):
    pool = st.sampled_from(_ZERO_ONE + _MISSING)
    if draw(st.integers(0, 9)) == 0:  # now and then a value that must be refused
        pool = st.one_of(pool, st.sampled_from(_BAD_OUTCOMES))
    return draw(st.lists(pool, min_size=n, max_size=n))


def _labels(draw, pool, n):
    labels = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    if n and draw(st.integers(0, 14)) == 0:  # labels that compare equal, or unhashable ones
        labels[draw(st.integers(0, n - 1))] = draw(st.sampled_from([True, 7.0, 11.0, ["t1"]]))
    return labels


@st.composite
def cases(draw):
    n = draw(st.integers(1, 14))
    df = pd.DataFrame(
        {
            "system": pd.Series(_labels(draw, _SYSTEMS, n), dtype=object),
            "task": pd.Series(_labels(draw, _TASKS, n), dtype=object),
        }
    )
    kwargs = {"missing": draw(st.sampled_from([None, "fail", "exclude", "bounds"]))}
    if draw(st.booleans()):  # count rows
        if draw(st.integers(0, 7)):  # mostly one row per (system, task)
            df["task"] = pd.Series([f"t{i}" if i % 3 else i for i in range(n)], dtype=object)
        trials = [draw(st.integers(0 if draw(st.integers(0, 7)) == 0 else 1, 6)) for _ in range(n)]
        successes = [
            draw(st.integers(-1, t + 1))
            if draw(st.integers(0, 7)) == 0
            else draw(st.integers(0, max(t, 0)))
            for t in trials
        ]
        kinds = draw(st.sampled_from(["int", "float", "exact", "object"]))
        if kinds == "float":
            successes = [float(x) for x in successes]
        elif kinds == "exact":
            successes = [Fraction(x) if i % 2 else Decimal(x) for i, x in enumerate(successes)]
        elif kinds == "object" and n:
            successes[0] = draw(st.sampled_from([1 + 0j, pd.Timedelta(1), "2", None, 1.5]))
        df["k"] = pd.Series(successes, dtype=object if kinds in ("exact", "object") else None)
        df["n"] = trials
        kwargs.update(successes="k", trials="n")
    else:
        df["success"] = pd.Series(_outcomes(draw, n), dtype=object)
        if draw(st.booleans()):
            df["success"] = df["success"].infer_objects()
        if draw(st.booleans()):
            df["trial"] = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
            kwargs["trial"] = "trial"
        if draw(st.booleans()):
            df["status"] = draw(st.lists(st.sampled_from(_RAW_STATUSES), min_size=n, max_size=n))
            kwargs["status"] = "status"
            if draw(st.booleans()):
                kwargs["status_map"] = draw(
                    st.dictionaries(
                        st.sampled_from(["raw_error", "agent_timeout", "ok", "timeout"]),
                        st.sampled_from(list(STATUSES)),
                        max_size=3,
                    )
                )
    if draw(st.booleans()):
        by_task = {t: draw(st.sampled_from(["c1", "c2"])) for t in _TASKS}
        clusters = [by_task.get(t, "c1") if isinstance(t, str | int) else "c1" for t in df["task"]]
        if n and draw(st.integers(0, 5)) == 0:
            clusters[0] = "c3"  # may give a task two clusters
        df["repo"] = clusters
        kwargs["cluster"] = "repo"
    return df, kwargs


def _status_of(row, status_map):
    """The bayeval status of one outcome row, as DESIGN.md section 4 states the rule."""
    recorded = row["value"] is not None and not (
        isinstance(row["value"], float) and np.isnan(row["value"])
    )
    raw = row.get("status")
    mapped = None
    if raw is not None and not (isinstance(raw, float) and np.isnan(raw)):
        mapped = (status_map or {}).get(raw, raw if raw in STATUSES else None)
    if mapped is None:
        return "ok" if recorded else "no_verdict"
    return mapped


def _reference(df, kwargs):
    """Status counts and ok successes per (system, task) from a plain pandas groupby."""
    if "successes" in kwargs:
        rows = pd.DataFrame(
            {
                "system": df["system"],
                "task": df["task"],
                "status": "ok",
                "ok_successes": [float(x) for x in df["k"]],
                "weight": df["n"],
            }
        )
    else:
        values = [
            None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)
            for v in df["success"]
        ]
        frame = pd.DataFrame({"value": values})
        if "status" in kwargs:
            frame["status"] = df["status"].to_numpy()
        status = [_status_of(r, kwargs.get("status_map")) for _, r in frame.iterrows()]
        rows = pd.DataFrame(
            {
                "system": df["system"],
                "task": df["task"],
                "status": status,
                "ok_successes": [
                    v if s == "ok" else 0.0 for v, s in zip(values, status, strict=True)
                ],
                "weight": 1,
            }
        )
    counts = rows.groupby(["system", "task", "status"])["weight"].sum()
    successes = rows.groupby(["system", "task"])["ok_successes"].sum()
    return counts, successes


@settings(max_examples=N_FRAMES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_generated_frames_are_refused_cleanly_or_counted_exactly(case):
    df, kwargs = case
    before = df.copy(deep=True)
    try:
        data = be.from_frame(df, **kwargs)
    except (ValueError, TypeError) as exc:
        assert str(exc)  # a message, never a bare exception
        pd.testing.assert_frame_equal(df, before)
        return
    pd.testing.assert_frame_equal(df, before)
    counts, successes = _reference(df, kwargs)
    ds = data.dataset
    status_counts = ds["status_counts"]
    rows_per_cell = counts.groupby(level=["system", "task"]).sum()
    for s_label in ds["system"].values:
        for t_label in ds["task"].values:
            cell = status_counts.sel(system=s_label, task=t_label)
            if (s_label, t_label) in rows_per_cell.index:
                for status in STATUSES[:-1]:
                    expected = int(counts.get((s_label, t_label, status), 0))
                    assert int(cell.sel(status=status)) == expected
                assert int(cell.sel(status="not_run")) == int(
                    counts.get((s_label, t_label, "not_run"), 0)
                )
                ok_successes = int(round(successes[(s_label, t_label)]))
            else:  # a cell with no row is not_run for the task's modal row count
                per_task = rows_per_cell.xs(t_label, level="task")
                modes = per_task.value_counts()
                planned = max(v for v, f in modes.items() if f == modes.max())
                assert int(cell.sum()) == int(cell.sel(status="not_run")) == planned
                ok_successes = 0
            assert int(data.ok_successes().sel(system=s_label, task=t_label)) == ok_successes
            ok, planned_total = int(cell.sel(status="ok")), int(cell.sum())
            trials = int(ds["trials"].sel(system=s_label, task=t_label))
            assert trials == (ok if data.missing in (None, "exclude") else planned_total)
            if data.missing == "bounds":
                upper = int(
                    ds["successes"].sel(system=s_label, task=t_label, missing_bound="upper")
                )
                assert upper == ok_successes + planned_total - ok
    if "cluster" in kwargs:
        expected = df.groupby("task", sort=False)["repo"].first()
        for t_label, repo in zip(ds["task"].values, ds["cluster"].values, strict=True):
            assert expected[t_label] == repo
