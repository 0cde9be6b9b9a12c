"""Stores written by bayeval 0.1.0 (HDF5): read-only reading and migration."""

import importlib.util
import shutil

import h5py
import pytest

import bayeval as be
from bayeval.monitor import CheckpointStore, migrate
from tests.helpers import FIXTURES
from tests.monitor.test_store import same

LEGACY = FIXTURES / "monitor" / "legacy_store.h5"


def _written() -> list:
    """The (label, EvalData) pairs the fixture's generator stored, rebuilt from its code."""
    spec = importlib.util.spec_from_file_location(
        "make_legacy_store", FIXTURES / "monitor" / "make_legacy_store.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.checkpoints()


def test_a_legacy_store_reads_past_the_group_a_failed_append_left(tmp_path):
    # bayeval 0.1.0 raised KeyError on every call once an append had failed halfway
    path = shutil.copy(LEGACY, tmp_path / "old.nc")
    store = CheckpointStore(path)
    written = _written()
    assert store.checkpoints() == ["step-20", 10, "step-30"] and len(store) == 3
    for label, data in written:  # values as written; HDF5 kept no dtype of a label (object)
        assert label in store and store.load(label).dataset.identical(data.dataset)
    assert [label for label, _ in store] == ["step-20", 10, "step-30"]
    assert store.arrivals()["arrival"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match=r"old.nc is a checkpoint store in the HDF5 format"):
        store.append("step-40", written[0][1])
    with pytest.raises(KeyError, match=r"checkpoint 'step-40' is not in .*old.nc"):
        store.load("step-40")


def test_legacy_groups_are_ordered_by_their_number_not_as_text(tmp_path):
    path = shutil.copy(LEGACY, tmp_path / "old.nc")
    with h5py.File(path, "a") as f:
        f.move("checkpoint_000000", "checkpoint_999999")
        f.move("checkpoint_000001", "checkpoint_1000000")
        f.move("checkpoint_000002", "checkpoint_1000001")
    store = CheckpointStore(path)
    assert store.checkpoints() == ["step-20", 10, "step-30"]
    assert store.arrivals()["arrival"].tolist() == [999_999, 1_000_000, 1_000_001]


def test_migrate_copies_every_checkpoint_and_reports_the_broken_group(tmp_path, location):
    old = CheckpointStore(LEGACY)
    table = migrate(LEGACY, location)
    assert table["group"].tolist() == [f"checkpoint_00000{i}" for i in range(4)]
    assert table["checkpoint"].tolist() == ["step-20", 10, "step-30", None]
    assert table["copied"].tolist() == [True, True, True, False]
    assert table["reason"].iloc[3] == "no label: an append that failed halfway"
    new = CheckpointStore(location)
    assert new.checkpoints() == ["step-20", 10, "step-30"]
    for label, data in _written():  # exactly what the old store gave, the written values
        assert same(new.load(label), old.load(label))
        assert new.load(label).dataset.identical(data.dataset)
    assert new.arrivals()["arrived_at"].tolist() == old.arrivals()["arrived_at"].tolist()
    new.append("step-40", be.from_counts([[1, 1]], trials=1))  # appendable now
    with pytest.raises(ValueError, match=r"already holds 4 checkpoint\(s\); migrate into a new"):
        migrate(LEGACY, location)
    with pytest.raises(ValueError, match=r"source must be an HDF5 checkpoint store"):
        migrate(tmp_path / "nothing.nc", tmp_path / "x.db")
