"""Saving and loading results: exact round trip, checksums, value ranges, named files; label
types refused at the data boundary."""

import h5py
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import bayeval as be
from bayeval._validate import BayevalWarning
from bayeval.testing import fake_results


@pytest.fixture(scope="module")
def small_fit():
    df = pd.DataFrame(
        {
            "system": ["A"] * 6 + ["B"] * 6,
            "task": ["t1", "t1", "t2", "t2", "t3", "t3"] * 2,
            "success": [1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0],
            "cluster": ["c1", "c1", "c1", "c1", "c2", "c2"] * 2,
        }
    )
    data = be.from_frame(df, cluster="cluster")
    return fake_results(data, model="hierarchical", draws=50, chains=1, seed=0)


def _assert_same_tree(back, tree):
    xr.testing.assert_identical(back, tree)
    for node in tree.subtree:
        other = back[node.path] if node.path != "/" else back
        for name, var in node.to_dataset(inherit=False).variables.items():
            assert other.to_dataset(inherit=False).variables[name].dtype == var.dtype, (
                node.path,
                name,
            )
        assert {k: type(v) for k, v in other.attrs.items()} == {
            k: type(v) for k, v in node.attrs.items()
        }, node.path


def test_roundtrip_is_exact(tmp_path, small_fit):
    tree = small_fit.tree
    tree.attrs["one_element"] = ["tasks"]  # a one-element list attribute came back as a str
    tree.attrs["flag"] = True
    res = be.Results(tree)
    path = tmp_path / "fit.nc"
    res.to_netcdf(path)
    back = be.load(path).tree
    _assert_same_tree(back, res.tree)
    labels = back["observed_data"]["task"].values
    assert labels.dtype == object and [type(v) for v in labels] == [str] * 3
    assert back.attrs["one_element"] == ["tasks"] and back.attrs["estimands"] == [
        "tasks",
        "population",
    ]
    assert "bayeval_checksum" not in back.attrs


def test_int_labels_roundtrip(tmp_path):
    df = pd.DataFrame({"system": ["A", "A"], "task": [10, 20], "success": [1, 0]})
    df["task"] = df["task"].astype(object)
    res = fake_results(be.from_frame(df), model="hierarchical", draws=20, chains=1, seed=0)
    res.to_netcdf(tmp_path / "fit.nc")
    _assert_same_tree(be.load(tmp_path / "fit.nc").tree, res.tree)


@pytest.mark.parametrize("task", [[1, "x", 1, "x"], [("a", 1), "b", ("a", 1), "b"]])
def test_mixed_label_types_refused(task):
    df = pd.DataFrame({"system": "A", "task": task, "success": [1, 0, 1, 1]})
    before = df.copy()
    with pytest.raises(TypeError, match=r"column 'task' mixes label types \(.*rows \[0, 2\]"):
        be.from_frame(df)
    pd.testing.assert_frame_equal(df, before)
    with pytest.raises(TypeError, match=r"tasks= mixes label types \(int: \[1\].*str: \['b'\]"):
        be.from_counts([[1, 2]], trials=3, tasks=[1, "b"])


def test_load_names_the_file_for_non_hdf5(tmp_path):
    path = tmp_path / "notes.nc"
    path.write_text("not a netCDF file\n")
    with pytest.raises(ValueError, match=f"{path}: not a readable netCDF4/HDF5 file"):
        be.load(path)
    with pytest.raises(FileNotFoundError, match="missing.nc: no such results file"):
        be.load(tmp_path / "missing.nc")
    with pytest.raises(ValueError, match="not a file"):
        be.load(tmp_path)


def _rewrite(path, group, name, change):
    with h5py.File(path, "r+") as f:
        values = f[group][name][...]
        f[group][name][...] = change(values)


def test_flipped_bytes_are_detected(tmp_path, small_fit):
    path = tmp_path / "fit.nc"
    small_fit.to_netcdf(path)
    raw = bytearray(path.read_bytes())
    with h5py.File(path, "r") as f:
        offset = f["posterior"]["mu"].id.get_offset()
    for i in range(offset, offset + 64):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=f"{path}: the checksum does not match"):
        be.load(path)


def test_value_ranges_checked_without_checksum(tmp_path, small_fit):
    path = tmp_path / "fit.nc"
    small_fit.to_netcdf(path)
    _rewrite(path, "posterior", "mu", lambda v: v - 8.0)
    with h5py.File(path, "r+") as f:
        del f.attrs["bayeval_checksum"]  # as a file written before checksums
    with (
        pytest.warns(BayevalWarning, match="holds no checksum"),
        pytest.raises(
            ValueError,
            match=f"{path}: variable 'mu' of group '/posterior' must be a "
            r"probability in \[0, 1\]",
        ),
    ):
        be.load(path)


@pytest.mark.parametrize(
    "group, name, change, message",
    [
        ("constant_data", "successes", lambda v: v + 5, "'successes' .* must be at most trials"),
        ("constant_data", "status_counts", lambda v: v - 3, "must be non-negative whole numbers"),
        ("posterior", "kappa", lambda v: -v, "'kappa' .* must be positive"),
    ],
)
def test_value_ranges_name_the_variable(tmp_path, small_fit, group, name, change, message):
    path = tmp_path / "fit.nc"
    small_fit.to_netcdf(path)
    _rewrite(path, group, name, change)
    with h5py.File(path, "r+") as f:
        del f.attrs["bayeval_checksum"]
    with (
        pytest.warns(BayevalWarning, match="holds no checksum"),
        pytest.raises(ValueError, match=message),
    ):
        be.load(path)


def test_file_without_checksum_loads_with_a_note(tmp_path, small_fit):
    path = tmp_path / "old.nc"
    small_fit.tree.to_netcdf(path, engine="h5netcdf")  # the format before checksums
    with pytest.warns(BayevalWarning, match="old.nc holds no checksum"):
        back = be.load(path)
    xr.testing.assert_identical(back.pass_at_k(k=1), small_fit.pass_at_k(k=1))


def test_a_failed_write_keeps_the_file_already_there(tmp_path, small_fit):
    path = tmp_path / "fit.nc"
    small_fit.to_netcdf(path)
    good = path.read_bytes()
    # a group holding a value h5netcdf cannot encode, written after the good groups
    tree = small_fit.tree.copy()
    tree["zz_unencodable"] = xr.DataTree(
        xr.Dataset({"bad": ("x", np.array([{"a": 1}, 1.5], dtype=object))})
    )
    with pytest.raises(ValueError, match="bad"):
        be.Results(tree).to_netcdf(path)
    assert path.read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]  # no temporary left
    _assert_same_tree(be.load(path).tree, small_fit.tree)


def test_group_is_a_read_only_view_and_tree_a_copy(small_fit):
    """The analyses read groups through _group (no copy of the tree); users get a copy."""
    before = small_fit.tree.copy(deep=True)
    obs = small_fit._group("observed_data")
    assert obs.identical(before["observed_data"].to_dataset())
    assert small_fit._group("/").attrs == before.attrs
    with pytest.raises(AttributeError, match="Mutation of the DatasetView"):
        obs["extra"] = obs["task_total"] * 2
    with pytest.raises(ValueError, match="read-only"):
        obs["task_total"].values[:] = 0
    tree = small_fit.tree
    tree["observed_data"]["extra"] = tree["observed_data"]["task_total"] * 2  # the copy only
    assert "extra" not in small_fit._group("observed_data")
    assert small_fit.tree.identical(before)
