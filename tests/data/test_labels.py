"""Labels (system, task, cluster, stratum, run): refused at the boundary unless they round-trip.

Every label ``from_frame`` or ``from_counts`` accepts must come back from a results file exactly
(same type, same value, same order); every label that cannot is refused with an error naming
the column or argument, the rows and what is allowed.
"""

import copy
import datetime
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayeval as be
from bayeval.data import EvalData
from bayeval.testing import fake_results

_LABEL_COORDS = ("system", "task", "cluster", "stratum", "recipe", "run")
_ALLOWED = r"allowed: str \(valid Unicode, without NUL characters\), int \(64-bit\) or float"


def _outcome_frame(column, labels):
    """A frame of one row per label, the labels in ``column``, every other column plain."""
    n = len(labels)
    df = pd.DataFrame(
        {
            "system": ["A"] * n,
            "task": [f"t{i}" for i in range(n)],
            "repo": ["r"] * n,
            "success": [i % 2 for i in range(n)],
        }
    )
    # as given: pandas would infer text columns (and refuse lone surrogates itself)
    df[column] = (
        labels if isinstance(labels, np.ndarray | pd.Index) else pd.Series(labels, dtype=object)
    )
    return df


def _round_trip(data, path, **kwargs):
    """The data's results saved and loaded: every label coordinate, as (type, repr) per node."""
    res = fake_results(data, draws=4, chains=1, **kwargs)
    res.to_netcdf(path)
    back = be.load(path)
    assert back.tree.identical(res.tree)
    for node in res.tree.subtree:
        other = back.tree[node.path]
        for name in node.to_dataset(inherit=False).coords:
            before = [(type(v), repr(v)) for v in node[name].values.tolist()]
            after = [(type(v), repr(v)) for v in other[name].values.tolist()]
            assert after == before, (node.path, name)
    return back


# -- from_frame: labels that were accepted and then merged, or failed at save -----------------
def test_frame_refuses_zero_and_negative_zero_float_labels():
    # regression: a float column's 0.0 and -0.0 became one task (from_counts refused them)
    df = _outcome_frame("task", np.array([0.0, -0.0, 1.0]))
    with pytest.raises(
        ValueError,
        match=r"column 'task' holds labels that differ but compare equal.*"
        r"0\.0 == -0\.0 \(rows \[0, 1\]\)",
    ):
        be.from_frame(df)
    clusters = _outcome_frame("repo", np.array([0.0, -0.0]))
    with pytest.raises(ValueError, match=r"column 'repo' holds labels.*0\.0 == -0\.0"):
        be.from_frame(clusters, cluster="repo")


@pytest.mark.parametrize(
    "column, kwargs", [("system", {}), ("task", {}), ("repo", {"cluster": "repo"})]
)
def test_frame_refuses_mixed_categorical_labels(column, kwargs):
    # regression: a categorical column skipped the label-type check, so system 1 and "1" were
    # two systems that read alike (and [1, "x"] failed at save)
    df = _outcome_frame(column, pd.Categorical([1, "1", "x"]))
    with pytest.raises(
        TypeError,
        match=rf"column '{column}' mixes label types \(int: \[1\] \(row \[0\]\); "
        r"str: \['1', 'x'\] \(rows \[1, 2\]\)\)",
    ):
        be.from_frame(df, **kwargs)


def test_frame_checks_categorical_labels_as_their_values():
    df = _outcome_frame("task", pd.Categorical(["a", "b"], categories=["b", "a", "unused"]))
    assert be.from_frame(df).tasks.tolist() == ["a", "b"]
    nul = _outcome_frame("task", pd.Categorical(["a\x00", "b"]))
    with pytest.raises(ValueError, match=r"column 'task' holds text with NUL characters"):
        be.from_frame(nul)


_REFUSED_TYPES = [
    ("tuple", [(1, 2), (3, 4)], r"tuple"),
    ("Decimal", [Decimal("1"), Decimal("2")], r"Decimal"),
    ("Fraction", [Fraction(1, 2), Fraction(1, 3)], r"Fraction"),
    ("frozenset", [frozenset([1]), frozenset([2])], r"frozenset"),
    ("date", [datetime.date(2024, 1, 1), datetime.date(2024, 1, 2)], r"date"),
    ("datetime64", pd.to_datetime(["2024-01-01", "2024-01-02"]), r"datetime64|Timestamp"),
    ("timedelta", pd.to_timedelta([1, 2], unit="s"), r"timedelta64|Timedelta"),
    ("bool", [True, False], r"bool"),
    ("bytes", [b"a", b"b"], r"bytes"),
    ("complex", [1j, 2j], r"complex"),
]


@pytest.mark.parametrize(
    "values, kind", [c[1:] for c in _REFUSED_TYPES], ids=[c[0] for c in _REFUSED_TYPES]
)
@pytest.mark.parametrize(
    "column, kwargs", [("system", {}), ("task", {}), ("repo", {"cluster": "repo"})]
)
def test_frame_refuses_labels_a_results_file_cannot_hold(values, kind, column, kwargs):
    # regression: accepted, then to_netcdf failed with raw xarray/h5py errors (or be.load called
    # the file damaged, for dates)
    df = _outcome_frame(column, values)
    before = df.copy(deep=True)
    with pytest.raises(
        TypeError,
        match=rf"column '{column}' must hold labels of one allowed type; "
        rf"found .*\((?:{kind})[^)]*\) in rows \[0, 1\].*{_ALLOWED}",
    ):
        be.from_frame(df, **kwargs)
    pd.testing.assert_frame_equal(df, before)


@pytest.mark.parametrize(
    "values, pattern",
    [
        (["a\x00b", "c"], r"text with NUL characters.*'a\\x00b'\] in row \[0\]"),
        (["a", "a\x00"], r"text with NUL characters.*'a\\x00'\] in row \[1\]"),
        (["\ud800x", "c"], r"text that is not valid Unicode.*'\\ud800x'\] in row \[0\]"),
        ([2**70, 1], r"integers outside 64 bits.*1180591620717411303424\] in row \[0\]"),
        (np.array([2**63 + 1, 1], dtype=np.uint64), r"integers outside 64 bits.*row \[0\]"),
    ],
    ids=["embedded-nul", "trailing-nul", "surrogate", "big-int", "uint64"],
)
@pytest.mark.parametrize(
    "column, kwargs", [("system", {}), ("task", {}), ("repo", {"cluster": "repo"})]
)
def test_frame_refuses_label_values_a_results_file_cannot_hold(values, pattern, column, kwargs):
    df = _outcome_frame(column, values)
    with pytest.raises(ValueError, match=rf"column '{column}' holds {pattern}.*{_ALLOWED}"):
        be.from_frame(df, **kwargs)


def test_refused_rows_are_listed_with_a_count():
    df = _outcome_frame("task", [(i,) for i in range(9)])
    with pytest.raises(TypeError, match=r"rows \[0, 1, 2, 3, 4\] and 4 more"):
        be.from_frame(df)


def test_run_labels_follow_the_label_rules():
    df = pd.DataFrame(
        {"system": "A", "seed": [(1,), (2,)], "task": ["t1", "t2"], "success": [1, 0]}
    )
    with pytest.raises(TypeError, match=r"column 'seed' must hold labels of one allowed type"):
        be.from_frame(df, run="seed")


def test_trial_ids_are_grouped_not_stored():
    # trial ids never reach a results file: any hashable id that groups as written will do
    df = pd.DataFrame(
        {
            "system": "A",
            "task": ["t1", "t1"],
            "trial": pd.to_datetime(["2024-01-01", "2024-01-02"]),
            "success": [1, 0],
        }
    )
    assert be.from_frame(df, trial="trial").dataset["trials"].values.tolist() == [[2]]
    with pytest.raises(ValueError, match=r"column 'trial' holds labels.*0\.0 == -0\.0"):
        be.from_frame(df.assign(trial=[0.0, -0.0]), trial="trial")


# -- from_counts: the same rules, and arguments that are not label lists ----------------------
@pytest.mark.parametrize(
    "values, kind", [c[1:] for c in _REFUSED_TYPES], ids=[c[0] for c in _REFUSED_TYPES]
)
@pytest.mark.parametrize("argument", ["systems", "tasks", "clusters", "strata"])
def test_counts_refuse_labels_a_results_file_cannot_hold(values, kind, argument):
    successes = [[1, 2], [0, 1]] if argument == "systems" else [1, 2]
    with pytest.raises(
        TypeError,
        match=rf"{argument}= must hold labels of one allowed type; "
        rf"found .*\((?:{kind})[^)]*\) in rows \[0, 1\].*{_ALLOWED}",
    ):
        be.from_counts(successes, 3, **{argument: list(values)})


@pytest.mark.parametrize("argument", ["systems", "tasks", "clusters", "strata"])
def test_counts_refuse_trailing_and_embedded_nul(argument):
    # regression: NumPy dropped the trailing NUL, so "a" and "a\x00" became one label
    successes = [[1, 2], [0, 1]] if argument == "systems" else [1, 2]
    for labels, row in ((["a", "a\x00"], 1), (["a\x00b", "c"], 0)):
        given = copy.copy(labels)
        with pytest.raises(
            ValueError, match=rf"{argument}= holds text with NUL characters.*in row \[{row}\]"
        ):
            be.from_counts(successes, 3, **{argument: labels})
        assert labels == given


@pytest.mark.parametrize("argument", ["systems", "tasks", "clusters", "strata"])
def test_counts_refuse_a_string_for_a_list_of_labels(argument):
    # regression: systems="AB" was split into systems "A" and "B"
    successes = [[1, 2], [0, 1]] if argument == "systems" else [1, 2]
    with pytest.raises(
        TypeError, match=rf"{argument}= must be a sequence of labels.*got the string 'AB'"
    ):
        be.from_counts(successes, 3, **{argument: "AB"})
    with pytest.raises(TypeError, match=rf"{argument}= must be a sequence of labels.*got bytes"):
        be.from_counts(successes, 3, **{argument: b"AB"})


@pytest.mark.parametrize("argument", ["systems", "tasks", "clusters"])
def test_counts_refuse_unordered_or_scalar_label_arguments(argument):
    successes = [[1, 2], [0, 1]] if argument == "systems" else [1, 2]
    with pytest.raises(TypeError, match=rf"{argument}= must be a sequence of labels.*set"):
        be.from_counts(successes, 3, **{argument: {"a", "b"}})
    with pytest.raises(TypeError, match=rf"{argument}= must be a sequence of labels.*int"):
        be.from_counts(successes, 3, **{argument: 7})
    with pytest.raises(TypeError, match=rf"{argument}= must be a sequence of labels.*dict"):
        be.from_counts(successes, 3, **{argument: {"a": 1, "b": 2}})


@pytest.mark.parametrize("argument", ["successes", "trials", "tasks", "clusters"])
def test_counts_refuse_masked_arrays_with_masked_cells(argument):
    # regression: the mask was ignored, so a masked count was read as its raw value; from_counts
    # takes complete counts (DESIGN.md section 4: missing outcomes are statuses of attempt rows)
    given = {
        "successes": np.ma.masked_array([1, 2, 0], mask=[False, True, False]),
        "trials": np.ma.masked_array([3, 3, 3], mask=[False, True, False]),
        "tasks": np.ma.masked_array(["a", "b", "c"], mask=[False, True, False]),
        "clusters": np.ma.masked_array(["r", "r", "s"], mask=[False, True, False]),
    }[argument]
    kwargs = {"successes": [1, 2, 0], "trials": 3, argument: given}
    kept = given.copy()
    with pytest.raises(
        ValueError,
        match=rf"{argument}= is a masked array with 1 masked cell \(\[1\]\).*"
        r"no missing counts",
    ):
        be.from_counts(**kwargs)
    assert given.mask.tolist() == kept.mask.tolist()
    assert given.data.tolist() == kept.data.tolist()
    unmasked = np.ma.masked_array(kept.data)  # a masked array with nothing masked is its data
    data = be.from_counts(**{**kwargs, argument: unmasked})
    assert data.dataset["trials"].values.tolist() == [[3, 3, 3]]


def test_counts_labels_keep_their_values():
    data = be.from_counts(
        [1, 2], 3, tasks=np.array([5, 7], dtype=np.uint8), clusters=[np.float32(0.5), 1.5]
    )
    assert data.tasks.tolist() == [5, 7]
    assert data.dataset["cluster"].values.tolist() == [0.5, 1.5]


def test_evaldata_refuses_label_coordinates_it_cannot_save():
    # every constructor ends here: a dataset built by hand gets the same check
    ds = be.from_counts([1, 2], 3, tasks=["a", "b"]).dataset.copy(deep=True)
    tuples = np.empty(2, dtype=object)
    tuples[:] = [(1, 2), (3, 4)]
    bad = ds.assign_coords(task=tuples)
    with pytest.raises(TypeError, match=r"EvalData coordinate 'task' must hold labels"):
        EvalData(bad)
    with pytest.raises(ValueError, match=r"EvalData coordinate 'system' holds text with NUL"):
        EvalData(ds.assign_coords(system=np.array(["a\x00"], dtype=object)))


# -- accepted labels round-trip exactly -------------------------------------------------------
_ACCEPTED = [
    ("str", ["b", "a", "", "ünï cödé", " spaced "]),
    ("numpy-str", list(np.array(["x", "y", "z"]))),
    ("int", [3, -1, 0, 2**63 - 1, -(2**63)]),
    ("numpy-int", list(np.array([4, 2, 9], dtype=np.int32))),
    ("float", [0.5, -1.25, 0.0, 1e300, float("inf"), -float("inf")]),
    ("negative-zero", [-0.0, 1.0]),
    ("numpy-float", list(np.array([0.1, 0.2], dtype=np.float32))),
]


@pytest.mark.parametrize("labels", [c[1] for c in _ACCEPTED], ids=[c[0] for c in _ACCEPTED])
def test_accepted_labels_round_trip_through_a_results_file(labels, tmp_path):
    n = len(labels)
    tasks = be.from_counts([[1] * n, [2] * n], 3, systems=labels[:2], tasks=labels)
    back = _round_trip(tasks, tmp_path / "counts.nc")
    assert [repr(v) for v in back.data.tasks.tolist()] == [repr(v) for v in tasks.tasks.tolist()]
    df = pd.DataFrame(
        {
            "system": pd.Series([labels[0]] * n + [labels[1]] * n, dtype=object),
            "task": pd.Series(labels + labels, dtype=object),
            "repo": pd.Series([labels[i % 2] for i in range(n)] * 2, dtype=object),
            "stratum": pd.Series([labels[-1]] * 2 * n, dtype=object),
            "success": [i % 2 for i in range(2 * n)],
        }
    )
    frame = be.from_frame(df, cluster="repo", stratum="stratum")
    back = _round_trip(frame, tmp_path / "frame.nc")
    assert back.data.dataset["cluster"].values.tolist() == [labels[i % 2] for i in range(n)]
    _round_trip(frame, tmp_path / "logit.nc", model="logit_normal")


def test_date_labels_named_on_load_when_a_file_holds_them(tmp_path):
    # files written before dates were refused: load names the labels instead of calling the
    # file damaged
    import xarray as xr

    data = be.from_counts([1, 2], 3, tasks=["a", "b"])
    res = fake_results(data, draws=4, chains=1)
    tree = res.tree.copy()
    dates = np.array(list(pd.to_datetime(["2024-01-01", "2024-01-02"])), dtype=object)
    tree = xr.DataTree.from_dict(
        {
            n.path: n.to_dataset(inherit=False).assign_coords(task=dates)
            if "task" in n.to_dataset(inherit=False).coords
            else n.to_dataset(inherit=False)
            for n in tree.subtree
        }
    )
    type(res)(tree).to_netcdf(tmp_path / "dates.nc")
    with pytest.raises(ValueError, match=r"coordinate 'task'.*dates or durations.*not damaged"):
        be.load(tmp_path / "dates.nc")


# -- inputs are never changed -----------------------------------------------------------------
def test_inputs_are_unchanged_after_success_and_failure():
    good = pd.DataFrame(
        {
            "system": pd.Categorical(["A", "A"]),
            "task": np.array([0.5, -0.0]),
            "success": [Decimal(1), Fraction(0)],
        }
    )
    bad = good.assign(task=np.array([0.0, -0.0]))
    for df in (good, bad):
        before = df.copy(deep=True)
        try:
            be.from_frame(df)
        except (ValueError, TypeError):
            pass
        pd.testing.assert_frame_equal(df, before)
        assert [type(v) for v in df["success"]] == [Decimal, Fraction]
    arrays = {
        "successes": np.array([[1, 2]]),
        "trials": np.ma.masked_array([[3, 3]]),
        "tasks": np.array([0.5, -0.0]),
        "systems": ["A"],
        "clusters": np.array(["r", "s"], dtype=object),
    }
    for kwargs in (arrays, {**arrays, "clusters": np.array(["r", "s\x00"], dtype=object)}):
        before = copy.deepcopy(kwargs)
        try:
            be.from_counts(**kwargs)
        except (ValueError, TypeError):
            pass
        for name, value in kwargs.items():
            assert np.asarray(value).tolist() == np.asarray(before[name]).tolist(), name
            assert np.asarray(value).dtype == np.asarray(before[name]).dtype, name
            if isinstance(value, np.ndarray):
                assert value.flags.writeable, name


# -- any labels: refused with a clean error, or round-trip ------------------------------------
_POOL = [
    "a",
    "b",
    "a\x00",
    "",
    "\ud800",
    1,
    2,
    np.int64(2),
    2**64,
    True,
    0.0,
    -0.0,
    0.5,
    np.float32(0.5),
    float("nan"),
    None,
    b"a",
    (1,),
    Decimal(1),
    Fraction(1, 2),
    datetime.date(2024, 1, 1),
    pd.Timestamp("2024-01-01"),
]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.sampled_from(_POOL), min_size=1, max_size=4), st.booleans())
def test_any_labels_are_refused_cleanly_or_round_trip(tmp_path, labels, as_frame):
    try:
        if as_frame:
            df = pd.DataFrame(
                {"system": "A", "task": pd.Series(labels, dtype=object), "success": 1}
            )
            data = be.from_frame(df)
            expected = list(dict.fromkeys(labels))  # first appearance, as grouped
        else:
            data = be.from_counts([1] * len(labels), 3, tasks=labels)
            expected = list(labels)
    except (ValueError, TypeError) as exc:
        assert str(exc)
        return
    stored = [v.item() if isinstance(v, np.generic) else v for v in expected]
    assert [repr(v) for v in data.tasks.tolist()] == [repr(v) for v in stored]
    _round_trip(data, tmp_path / "any.nc")
