"""``bayeval gate --items``: a gate on a subset of an item response theory calibration."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import special

import bayeval as be
from bayeval import cli
from bayeval.errors import BayevalWarning
from bayeval.testing import fake_results

N_SYSTEM, N_ITEM, TRIALS = 10, 30, 4
TASKS = [f"item{j:02d}" for j in range(N_ITEM)]


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def truth():
    """A 2PL with known abilities, difficulties and discriminations."""
    rng = np.random.default_rng(0)
    theta = np.linspace(-1.5, 1.5, N_SYSTEM)
    b = rng.normal(0.0, 1.0, N_ITEM)
    a = np.exp(rng.normal(0.0, 0.3, N_ITEM))
    return theta, a, b


def full_pass_at_1(theta, a, b) -> float:
    """The true pass@1 over every item: the mean of the 2PL's rates (the scale-free estimand)."""
    return float(special.expit(a * (theta - b)).mean())


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    """A real 2PL calibration of 10 systems on 30 items (passes its MCMC gates), and a short
    one of the same data (the compiled model is reused) that fails them."""
    folder = tmp_path_factory.mktemp("items")
    theta, a, b = truth()
    rng = np.random.default_rng(1)
    counts = rng.binomial(TRIALS, special.expit(a * (theta[:, None] - b)))
    systems = [f"s{i}" for i in range(N_SYSTEM)]
    data = be.from_counts(counts, trials=TRIALS, tasks=TASKS, systems=systems)
    res = be.fit(data, model="irt", draws=1000, tune=1000, chains=2, seed=0, progress=False)
    res.to_netcdf(folder / "calibration.nc")
    with warnings.catch_warnings():  # too short on purpose: it must fail its gates
        warnings.simplefilter("ignore", BayevalWarning)
        short = be.fit(data, model="irt", draws=40, tune=40, chains=2, seed=0, progress=False)
    short.to_netcdf(folder / "short.nc")
    return folder


def write_subset(path, systems: dict, items, trials=TRIALS, seed=2):
    """Attempt rows (system, task, success) of systems of known ability on ``items``."""
    _, a, b = truth()
    rng = np.random.default_rng(seed)
    rows = []
    for name, ability in systems.items():
        for j in items:
            p = special.expit(a[j] * (ability - b[j]))
            for t, success in enumerate(rng.random(trials) < p):
                rows.append({"system": name, "task": TASKS[j], "trial": t, "success": int(success)})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_gate_on_a_subset_decides_as_its_interval_says(calibration, tmp_path):
    theta, a, b = truth()
    items = range(0, N_ITEM, 2)  # 15 of the 30 items
    runs = write_subset(tmp_path / "new.csv", {"strong": 1.5, "weak": -1.5}, items, trials=8)
    cases = [  # candidate, baseline (calibrated, read from the calibration), exit code
        ("strong", "s0", 0, 1.5, theta[0]),
        ("weak", "s9", 1, -1.5, theta[-1]),
    ]
    for candidate, baseline, code, new_theta, old_theta in cases:
        path = tmp_path / f"{candidate}.json"
        result = invoke(
            *["gate", runs, "--items", calibration / "calibration.nc"],
            *["--compare", candidate, baseline, "--margin", 0.02, "--json", path],
        )
        assert result.exit_code == code, result.output
        out = json.loads(path.read_text())
        cmp, decision = out["comparison"], out["comparison"]["decision"]
        # the decision is the one the printed numbers give
        assert decision["passed"] == (code == 0) and decision["decided"]
        assert decision["passed"] == (decision["lower"] > -0.02)
        assert (code == 1) == (decision["upper"] <= -0.02)
        assert cmp["lower"] <= cmp["effect"] <= cmp["upper"]
        assert (cmp["lower"] > -0.02) if code == 0 else (cmp["upper"] < -0.02)
        # the interval covers the true difference of full-benchmark pass@1 (known truth)
        true_effect = full_pass_at_1(new_theta, a, b) - full_pass_at_1(old_theta, a, b)
        assert cmp["lower"] <= true_effect <= cmp["upper"]
        assert out["gate"]["exit_code"] == code
        assert out["gate"]["verdict"] == ("PASS" if code == 0 else "FAIL")
        assert out["estimand"]["name"] == "tasks"
        assert "averaged over all 30 calibrated items" in out["estimand"]["words"]
        assert [s["source"] for s in out["systems"]] == ["scored", "calibration"]
        assert out["systems"][0]["items_run"] == 15
        printed = result.stdout
        assert "tasks estimand (pass@1 averaged over all 30 calibrated items" in printed
        assert f"interval [{cmp['lower']:.3f}, {cmp['upper']:.3f}]" in printed
        assert f"P(effect > -0.02) = {decision['prob_pass']:.4f}" in printed
        assert f"exit {code}" in printed.splitlines()[-1]


def test_a_baseline_in_the_file_is_scored_on_the_same_items(calibration, tmp_path):
    runs = write_subset(tmp_path / "pair.csv", {"new": 0.1, "old": 0.0}, range(0, 6))
    path = tmp_path / "pair.json"
    result = invoke(
        *["gate", runs, "--items", calibration / "calibration.nc"],
        *["--compare", "new", "old", "--margin", 0.0, "--superior", "--json", path],
    )
    # two near-equal systems on 6 items: the data cannot decide, and the interval says why
    assert result.exit_code == 3, result.output
    out = json.loads(path.read_text())
    decision = out["comparison"]["decision"]
    assert decision["lower"] <= 0.0 < decision["upper"]
    assert out["gate"]["verdict"] == "UNDECIDED" and decision["test"] == "superiority"
    assert [s["source"] for s in out["systems"]] == ["scored", "scored"]
    assert [s["items_run"] for s in out["systems"]] == [6, 6]
    result = invoke(
        *["gate", runs, "--items", calibration / "calibration.nc"],
        *["--compare", "new", "old", "--margin", 0.02, "--estimand", "population"],
    )
    assert "population estimand (pass@1 on a new item drawn" in result.stdout


def test_a_calibration_that_failed_its_gates_decides_nothing(calibration, tmp_path):
    runs = write_subset(tmp_path / "new.csv", {"strong": 1.5}, range(N_ITEM))
    path = tmp_path / "flagged.json"
    result = invoke(
        *["gate", runs, "--items", calibration / "short.nc"],
        *["--compare", "strong", "s0", "--margin", 0.02, "--json", path],
    )
    assert result.exit_code == 3, result.output
    assert "FLAGGED: the calibration failed its MCMC gates" in result.stdout
    out = json.loads(path.read_text())
    assert out["gate"]["gates_failed"] and out["gate"]["verdict"] == "UNDECIDED"
    assert out["calibration"]["gates_passed"] is False


@pytest.fixture(scope="module")
def fake_calibration(tmp_path_factory):
    """A fake IRT fit (no sampler) and a fake fit of another model, saved."""
    folder = tmp_path_factory.mktemp("fake_items")
    data = be.from_counts(
        np.random.default_rng(3).binomial(4, 0.5, (3, 8)),
        trials=4,
        tasks=[f"item{j:02d}" for j in range(8)],
        systems=["A", "B", "C"],
    )
    fake_results(data, model="irt", draws=200).to_netcdf(folder / "irt.nc")
    fake_results(data, model="hierarchical", draws=50).to_netcdf(folder / "hier.nc")
    write_subset(folder / "runs.csv", {"new": 0.0}, range(4))
    write_subset(folder / "foreign.csv", {"new": 0.0}, range(4))
    frame = pd.read_csv(folder / "foreign.csv")
    frame.loc[frame["task"] == "item03", "task"] = "unseen-task"
    frame.to_csv(folder / "foreign.csv", index=False)
    return folder


@pytest.mark.parametrize(
    "files, pair, extra, message",
    [
        ("runs.csv", ("nobody", "A"), [], "candidate 'nobody' is not a system of"),
        ("runs.csv", ("new", "ghost"), [], "baseline 'ghost' is a system of neither"),
        ("foreign.csv", ("new", "A"), [], "1 task(s) of"),
        ("runs.csv", ("new", "A"), ["--k", 2], "k must be 1"),
        ("runs.csv", ("new", "A"), ["--draws", 100], "--draws does not apply with --items"),
        ("runs.csv", ("new", "A"), ["--report", "card.md"], "--report does not apply"),
        ("runs.csv", ("new", "new"), [], "candidate and baseline must differ"),
    ],
)
def test_bad_input_exits_2_naming_what_to_change(fake_calibration, files, pair, extra, message):
    result = invoke(
        *["gate", fake_calibration / files, "--items", fake_calibration / "irt.nc"],
        *["--compare", *pair, "--margin", 0.02, *extra],
    )
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    if files == "foreign.csv":
        assert (
            "unseen-task" in result.output and "are not items of the calibration" in result.output
        )
    if pair[1] == "ghost":  # both places are listed, with their systems
        assert "new" in result.output and "A, B, C" in result.output


def test_items_that_are_no_irt_fit_are_refused(fake_calibration, tmp_path):
    runs = fake_calibration / "runs.csv"
    result = invoke(
        *["gate", runs, "--items", fake_calibration / "hier.nc", "--compare", "new", "A"],
        *["--margin", 0.02],
    )
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "is a fit of model 'hierarchical'" in text and "model='irt'" in text
    result = invoke("gate", runs, "--items", runs, "--compare", "new", "A", "--margin", 0.02)
    assert result.exit_code == 2
    assert "cannot be read as a saved bayeval fit" in " ".join(result.output.split())


def test_fake_calibration_scores_and_decides(fake_calibration, tmp_path):
    # a fake fit is read like a real one: the gate runs without a sampler
    result = invoke(
        *["gate", fake_calibration / "runs.csv", "--items", fake_calibration / "irt.nc"],
        *["--compare", "new", "A", "--margin", 0.5, "--json", "-"],
    )
    assert result.exit_code == 0, result.output  # pass@1 cannot fall by half
    out = json.loads(result.stdout[result.stdout.index("{") :])
    assert out["calibration"]["items"] == 8 and out["systems"][0]["items_run"] == 4
