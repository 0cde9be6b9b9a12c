"""Bundled datasets: they load with the documented roles and ship inside the wheel."""

import importlib.metadata
import re
from pathlib import Path

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
        ("judging_the_judges", {}, (9, 395)),
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
    np.testing.assert_array_equal(
        per_system.loc[raw["system"].unique()].values,
        raw.groupby("system", sort=False)["success"].sum().values,
    )
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


def _described(text: str, pattern: str) -> int | None:
    found = re.search(pattern, text)
    return int(found.group(1)) if found else None


@pytest.mark.parametrize("name", list(be.datasets.DATASETS))
def test_descriptions_state_the_loaded_numbers(name):
    description = be.datasets.available()[name]
    data = be.datasets.load(name, missing="fail")
    ds = data.dataset
    assert _described(description, r"(\d+) systems?") == ds.sizes["system"]
    assert _described(description, r"x (\d+) (?:tasks|problems)") == ds.sizes["task"]
    trials = _described(description, r"x (\d+) trials?\b")
    if trials is not None:
        assert set(np.unique(ds["status_counts"].sum("status").values)) == {trials}
    clusters = _described(description, r"(\d+) (?:repository clusters|task families)")
    if clusters is not None:
        assert len(np.unique(ds["cluster"].values)) == clusters


def test_terminal_bench_description_agrees_with_its_status_map():
    # regression: the description said 418 missing outcomes while the map made 428 non-ok
    raw = be.datasets.frame("terminal_bench")
    totals = be.datasets.load("terminal_bench", missing="fail").status_counts.sum()
    not_ok = int(totals.drop("ok").sum())
    no_verdict = int(raw["success"].isna().sum())
    recorded_not_ok = not_ok - no_verdict
    mapped = be.datasets.DATASETS["terminal_bench"]["columns"]["status_map"]
    marked = raw["status"].map(mapped).isin(["error", "invalid", "timeout"])
    assert recorded_not_ok == int((marked & raw["success"].notna()).sum())
    assert (raw.loc[marked & raw["success"].notna(), "success"] == 0).all()
    description = be.datasets.available()["terminal_bench"]
    assert _described(description, r"(\d+) attempts not ok") == not_ok == 428
    assert _described(description, r"(\d+) outcomes without a verdict") == no_verdict
    assert _described(description, r"(\d+) recorded failures") == recorded_not_ok
    readme = (Path(__file__).resolve().parent.parent / "data" / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith("| `terminal_bench_core"))
    assert _described(line, r"(\d+) attempts not ok") == not_ok
    assert _described(line, r"(\d+) outcomes with no verdict") == no_verdict
    assert _described(line, r"(\d+) recorded failures") == recorded_not_ok


def test_package_is_marked_typed():
    # PEP 561: the marker sits in the package, and hatch's wheel target ships every
    # non-ignored file under bayeval/
    assert (Path(be.__file__).parent / "py.typed").is_file()
    try:
        files = importlib.metadata.files("bayeval")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("bayeval is not installed (running from a bare source tree)")
    if any(f.name.endswith(".pth") for f in files):
        pytest.skip("editable install: the marker is read from the source tree")
    assert any(str(f).replace("\\", "/") == "bayeval/py.typed" for f in files)


def test_judging_the_judges_counts_match_the_raw_file():
    raw = be.datasets.frame("judging_the_judges")
    data = be.datasets.load("judging_the_judges")
    ds = data.dataset
    assert data.judges == ["judge_gpt4", "judge_llama3_70b", "judge_contains"]
    assert data.label_design == "random"
    for judge in data.judges:
        per = raw.assign(j=raw[judge], y=raw["human"]).groupby("system", sort=False)
        cells = ds.sel(judge=judge, label_stratum="all").sum("task")
        for name, (j, y) in {"n11": (1, 1), "n10": (1, 0), "n01": (0, 1), "n00": (0, 0)}.items():
            direct = per.apply(lambda g, j=j, y=y: int(((g["j"] == j) & (g["y"] == y)).sum()))
            got = cells[f"judge_{name}"].to_series().loc[direct.index]
            np.testing.assert_array_equal(got.to_numpy(), direct.to_numpy(), err_msg=name)
        assert int(cells["judge_u1"].sum() + cells["judge_u0"].sum()) == 0  # all labelled
    human = raw.groupby("system", sort=False)["human"].agg(["sum", "size"])
    np.testing.assert_array_equal(
        ds["successes"].sum("task").to_series().loc[human.index].to_numpy(), human["sum"]
    )
    np.testing.assert_array_equal(
        ds["trials"].sum("task").to_series().loc[human.index].to_numpy(), human["size"]
    )
