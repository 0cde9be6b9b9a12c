"""The checkpoint store: exact round trips, arrival order, refusals that leave it usable."""

import sqlite3

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.monitor import CheckpointStore, _backends


def same(back, data) -> bool:
    """Identical datasets, down to dtypes, dims and the Python type of every label."""
    a, b = back.dataset, data.dataset
    if not a.identical(b) or set(a.variables) != set(b.variables):
        return False
    for name, var in b.variables.items():
        got = a[name].variable
        if got.dtype != var.dtype or got.dims != var.dims:
            return False
        if var.dtype == object:
            types = [type(v) for v in var.values.ravel()]
            if types != [type(v) for v in got.values.ravel()]:
                return False
    return True


def _rows() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 24
    return pd.DataFrame(
        {
            "system": np.repeat(["A", "B"], 12),
            "task": np.tile(np.repeat(["t1", "t2", "t3", "t4"], 3), 2),
            "trial": np.tile([0, 1, 2], 8),
            "success": np.where(np.arange(n) == 3, np.nan, rng.integers(0, 2, n)),
            "score": rng.random(n),
            "cl": np.tile(np.repeat(["c1", "c1", "c2", "c2"], 3), 2),
            "st": np.tile(np.repeat(["s1", "s2", "s1", "s2"], 3), 2),
            "h": np.repeat(["h1", "h2"], 12),
            "x": np.abs(rng.normal(size=n)),
            "sec": np.where(np.arange(n) == 5, np.nan, rng.random(n) * 10),
            "status": ["ok"] * 3 + ["no_verdict"] + ["ok"] * 16 + ["error"] * 4,
        }
    )


SHAPES = {
    "clusters": {"cluster": "cl", "missing": "fail"},
    "strata": {"stratum": "st", "missing": "fail", "stratum_weights": {"s1": 0.3, "s2": 0.7}},
    "harness": {"harness": "h", "missing": "fail"},
    "covariates": {"covariates": ["x"], "missing": "fail"},
    "scores": {"score": "score", "success": None},
    "latency": {"latency": "sec", "missing": "fail"},
    "bounds": {"status": "status", "missing": "bounds"},
    "exclude": {"status": "status", "missing": "exclude"},
}


# -- round trips -------------------------------------------------------------------------------
def test_round_trip_in_arrival_order(location):
    store = CheckpointStore(location)
    first = be.from_counts(
        [[3, 5, 0], [1, 2, 4]],
        trials=[[5, 5, 5], [4, 4, 4]],
        systems=["a", "b"],
        tasks=["x", "y", "z"],
        clusters=["r", "r", "s"],
    )
    second = be.from_counts([[1, 2]], trials=2, systems=["a"], tasks=[7, 8])
    store.append("step-20", first)
    store.append(10, second)
    assert store.checkpoints() == ["step-20", 10]  # arrival order, not sorted
    assert len(store) == 2 and 10 in store and "10" not in store and 1.5 not in store
    assert same(store.load("step-20"), first) and same(store.load(10), second)
    assert [label for label, _ in store] == ["step-20", 10]
    assert CheckpointStore(location).checkpoints() == ["step-20", 10]  # another handle
    store.close()


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_shape_of_counts_comes_back_exactly(location, shape):
    data = be.from_frame(_rows(), trial="trial", **SHAPES[shape])
    with CheckpointStore(location) as store:
        store.append(shape, data)
        assert same(store.load(shape), data)


def test_labels_of_every_accepted_type_and_any_character_come_back_exactly(location):
    # bayeval 0.1.0 listed a checkpoint with a NUL in its label that it could not load; data
    # labels take what a results file keeps (no NUL, valid Unicode, one type per column), the
    # store's own checkpoint labels any character
    names = ["tab\tinside", "ünï cødé", "new\nline", "-0"]
    data = be.from_counts([[0, 1, 2, 3], [3, 2, 1, 0]], trials=3, systems=["s", "t"], tasks=names)
    wide = be.from_counts([list(range(4))], trials=8, tasks=[7, -3, 2**62, 0])
    floats = be.from_counts([[1, 2]], trials=2, systems=[0.5], tasks=[-1.5, 2.0])
    with CheckpointStore(location) as store:
        store.append("with\0nul", data)
        store.append(-3, wide)
        store.append("floats", floats)
        back = store.load("with\0nul")
        assert same(back, data) and back.tasks.tolist() == names
        assert same(store.load(-3), wide) and store.load(-3).tasks.tolist() == [7, -3, 2**62, 0]
        assert same(store.load("floats"), floats)
        assert store.checkpoints() == ["with\0nul", -3, "floats"]
        store.append("after", data)  # still usable
        assert store.checkpoints() == ["with\0nul", -3, "floats", "after"]


def test_floats_keep_nan_infinity_and_negative_zero(location):
    data = be.from_counts([[1, 2]], trials=2)
    ds = data.dataset.assign(
        extra=(("system", "task"), np.array([[np.nan, -0.0]])),
        weight=(("task",), np.array([np.inf, -np.inf], dtype=np.float32)),
    ).assign_attrs(note="x", values=np.array([1, 2], dtype=np.int16), count=3)
    data = be.EvalData(ds)
    with CheckpointStore(location) as store:
        store.append("c", data)
        back = store.load("c").dataset
    assert np.signbit(back["extra"].values[0, 1]) and np.isnan(back["extra"].values[0, 0])
    assert back["weight"].dtype == np.float32 and back.attrs["values"].dtype == np.int16
    assert same(be.EvalData(back), data)


# -- refusals leave the store whole ------------------------------------------------------------
def test_tuple_task_ids_are_refused_before_anything_is_written(location):
    # bayeval 0.1.0 failed halfway here, and every later call raised KeyError
    store = CheckpointStore(location)
    earlier = be.from_counts([[3, 5]], trials=5, systems=["m"])
    store.append("step-1", earlier)
    rows = pd.DataFrame({"system": "m", "task": [("t", 1), ("t", 2)], "success": [1, 0]})
    # such ids no longer reach the store: the data's boundary refuses them by column and rows
    with pytest.raises(TypeError) as err:
        be.from_frame(rows)
    message = str(err.value)
    assert "column 'task'" in message and "tuple" in message and "rows [0, 1]" in message
    # the store is untouched and fully usable
    assert store.checkpoints() == ["step-1"] and len(store) == 1
    assert same(store.load("step-1"), earlier)
    fixed = be.from_frame(rows.assign(task=rows["task"].map(lambda t: f"{t[0]}/{t[1]}")))
    store.append("step-2", fixed)
    store.append("step-3", earlier)
    assert store.checkpoints() == ["step-1", "step-2", "step-3"]
    assert same(store.load("step-2"), fixed)


def test_other_unstorable_values_are_refused_by_name(location):
    store = CheckpointStore(location)
    base = be.from_counts([[1, 2]], trials=2).dataset
    stamped = base.assign_coords(when=("task", pd.to_datetime(["2024-01-01", "2024-01-02"])))
    with pytest.raises(TypeError, match=r"coordinate 'when' has dtype datetime64"):
        store.append("a", be.EvalData(stamped))
    with pytest.raises(TypeError, match=r"attribute 'meta', holds \{'a': 1\}, a dict"):
        store.append("a", be.EvalData(base.assign_attrs(meta={"a": 1})))
    assert len(store) == 0
    store.append("a", be.EvalData(base))
    assert store.checkpoints() == ["a"]


def test_a_failure_inside_the_transaction_leaves_no_trace(location, monkeypatch):
    store = CheckpointStore(location)
    data = be.from_counts([[3, 5, 1]], trials=5)
    store.append("kept", data)

    def fail(self, sql, rows):
        raise OSError("disk gone")

    monkeypatch.setattr(_backends.Connection, "many", fail)
    with pytest.raises(OSError, match="disk gone") as err:
        store.append("lost", data)
    assert any(store.where in note for note in err.value.__notes__)
    monkeypatch.undo()
    assert store.checkpoints() == ["kept"] and "lost" not in store
    store.append("lost", data)  # the label was never taken
    assert store.checkpoints() == ["kept", "lost"] and same(store.load("lost"), data)


def test_refuses_a_label_already_stored_and_bad_input_naming_the_store(location):
    store = CheckpointStore(location)
    data = be.from_counts([[3, 5]], trials=5)
    store.append("c1", data)
    where = store.where
    with pytest.raises(ValueError, match=r"checkpoint 'c1' is already in .*append-only") as err:
        store.append("c1", data)
    assert where in str(err.value)
    with pytest.raises(TypeError, match=r"checkpoint must be a str or int label; got 1.5") as err:
        store.append(1.5, data)
    assert where in str(err.value)
    with pytest.raises(TypeError, match="data must be an EvalData") as err:
        store.append("c2", {"successes": [1]})
    assert where in str(err.value)
    with pytest.raises(KeyError, match=r"checkpoint 'nope' is not in") as err:
        store.load("nope")
    assert where in str(err.value)
    assert store.checkpoints() == ["c1"]


def test_an_empty_or_missing_store_reads_as_empty(tmp_path):
    store = CheckpointStore(tmp_path / "none.db")
    assert store.checkpoints() == [] and len(store) == 0 and "a" not in store
    with pytest.raises(KeyError, match=r"not in .*none.db; stored: \[\]"):
        store.load("a")
    assert not (tmp_path / "none.db").exists()  # reading creates nothing
    assert list(store.arrivals().columns) == ["checkpoint", "arrival", "arrived_at"]


# -- arrival order -----------------------------------------------------------------------------
def test_arrival_order_is_an_integer_sequence_past_999999(location, raw_sql):
    # bayeval 0.1.0 sorted group names as text: checkpoint_1000000 came before _999999
    store = CheckpointStore(location)
    data = be.from_counts([[1, 2]], trials=2)
    store.append("a", data)
    if "://" in location:
        raw_sql(location, "ALTER TABLE bayeval_checkpoints ALTER COLUMN seq RESTART WITH 999999")
    else:
        raw_sql(location, "UPDATE bayeval_checkpoints SET seq = 999998")
        raw_sql(location, "UPDATE bayeval_counts SET seq = 999998")
    for label in ["b", "c", "d"]:
        store.append(label, data)
    arrivals = store.arrivals()
    assert store.checkpoints() == ["a", "b", "c", "d"]
    assert arrivals["arrival"].tolist()[1:] == [999_999, 1_000_000, 1_000_001]
    assert arrivals["arrived_at"].is_monotonic_increasing
    assert same(store.load("c"), data)


# -- the file ----------------------------------------------------------------------------------
def test_store_file_settings_and_schema_version(tmp_path, raw_sql):
    path = str(tmp_path / "run.db")
    store = CheckpointStore(path)
    store.append("a", be.from_counts([[1, 2]], trials=2))
    assert raw_sql(path, "PRAGMA journal_mode") == [("wal",)]
    meta = dict(raw_sql(path, "SELECT key, value FROM bayeval_store"))
    assert meta == {"kind": "bayeval checkpoint store", "schema_version": "1"}
    store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.db"]  # the log copied in
    raw_sql(path, "UPDATE bayeval_store SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match=r"run.db was written by a newer bayeval .*schema 99"):
        CheckpointStore(path).checkpoints()


def test_a_file_that_is_not_a_store_is_named(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("x" * 200)
    with pytest.raises(ValueError, match=r"notes.txt is neither a checkpoint store"):
        CheckpointStore(path).checkpoints()
    with pytest.raises(ValueError, match=r"notes.txt is neither a checkpoint store"):
        CheckpointStore(path).append("a", be.from_counts([[1]], trials=1))
    with pytest.raises(OSError, match=r"cannot open the checkpoint store .*missing"):
        CheckpointStore(tmp_path / "missing" / "run.db").append("a", be.from_counts([[1]], 1))


def test_a_held_write_lock_times_out_naming_the_store(tmp_path):
    path = str(tmp_path / "run.db")
    data = be.from_counts([[1, 2]], trials=2)
    CheckpointStore(path).append("a", data)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        store = CheckpointStore(path, timeout=0.2)
        assert store.checkpoints() == ["a"]  # readers do not wait for the writer
        with pytest.raises(TimeoutError, match=r"appending checkpoint 'b' to .*run.db.*0.2 s"):
            store.append("b", data)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    store.append("b", data)
    assert store.checkpoints() == ["a", "b"]


def test_urls_select_the_database(tmp_path):
    path = tmp_path / "run.db"
    CheckpointStore(f"sqlite:///{path}").append("a", be.from_counts([[1]], trials=1))
    assert CheckpointStore(path).checkpoints() == ["a"]
    with pytest.raises(ValueError, match=r"sqlite:///relative/path"):
        CheckpointStore("sqlite://run.db")
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        CheckpointStore(path, timeout=0)
    with pytest.raises(TypeError, match="path must be a file path or a database URL"):
        CheckpointStore(3)
