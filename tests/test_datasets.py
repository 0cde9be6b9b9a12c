"""Bundled datasets: they load with the documented roles and ship inside the wheel."""

import importlib.metadata

import numpy as np
import pytest

import bayeval as be


@pytest.mark.parametrize(
    "name, kwargs, shape",
    [
        ("swebench_verified", {}, (25, 500)),
        ("terminal_bench", {"missing": "fail"}, (13, 80)),
        ("livecodebench", {}, (45, 400)),
        ("tau_bench_airline", {}, (1, 50)),
        ("swebench_java", {"missing": "exclude"}, (5, 91)),
        ("langchain_tool_use", {}, (9, 20)),
    ],
)
def test_each_dataset_loads(name, kwargs, shape):
    data = be.datasets.load(name, **kwargs)
    assert (data.dataset.sizes["system"], data.dataset.sizes["task"]) == shape
    assert name in be.datasets.available()


def test_swebench_counts_match_the_raw_file():
    raw = be.datasets.frame("swebench_verified")
    data = be.datasets.load("swebench_verified")
    per_system = data.dataset["successes"].sum("task").to_series()
    np.testing.assert_array_equal(per_system.loc[raw["system"].unique()].values,
                                  raw.groupby("system", sort=False)["success"].sum().values)
    assert len(np.unique(data.dataset["cluster"].values)) == 12
    solved_by_none = (data.dataset["successes"].sum("system") == 0).sum().item()
    assert solved_by_none == 64


def test_livecodebench_strata_and_sample_counts():
    data = be.datasets.load("livecodebench")
    trials = data.dataset["trials"].max("task").to_series()
    assert sorted(trials.value_counts().to_dict().items()) == [(1, 2), (10, 43)]
    assert set(data.stratum_weights) == {"easy", "medium", "hard"}


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown dataset 'mmlu'"):
        be.datasets.load("mmlu")


def test_wheel_ships_the_data_files():
    try:
        files = importlib.metadata.files("bayeval")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("bayeval is not installed (running from a bare source tree)")
    shipped = {f.name for f in files if "_data" in str(f)}
    if not shipped and any(f.name.endswith(".pth") for f in files):
        pytest.skip("editable install: data is read from the source tree")
    expected = {spec["file"] for spec in be.datasets.DATASETS.values()} | {"README.md"}
    assert expected <= shipped
