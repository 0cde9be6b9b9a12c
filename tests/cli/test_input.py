"""Reading results files for a command: what a status map does to recorded outcomes."""

import json
import warnings

import pandas as pd
import pytest

import bayeval as be
from bayeval.cli._input import load
from bayeval.cli._options import ReadOptions
from tests.helpers import ROOT

TERMINAL_BENCH = ROOT / "data" / "terminal_bench_core_0.1.1.csv"


def test_a_status_map_that_sets_recorded_outcomes_aside_says_so():
    frame = pd.read_csv(TERMINAL_BENCH)
    timed_out = frame[frame["status"] == "agent_timeout"]
    n, ones = int(timed_out["success"].notna().sum()), int(timed_out["success"].sum())
    assert (n, ones) == (1504, 378)  # agents that timed out, and whose tests ran anyway
    with pytest.warns(be.BayevalWarning) as caught:
        data, _ = load(
            [TERMINAL_BENCH], ReadOptions(status_map="agent_timeout=timeout", missing="bounds")
        )
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(
        f"--status-map sets aside {n} recorded outcomes ({ones} successes, {n - ones} "
        "failures) as missing: agent_timeout -> timeout."
    )
    # and so they are: the worst system keeps under half its attempts
    ok = frame["success"].notna() & (frame["status"] != "agent_timeout")
    coverage = ok.groupby(frame["system"]).mean()
    assert data.coverage.to_dict() == pytest.approx(coverage.to_dict())
    assert round(float(coverage.min()), 4) == 0.4525


def test_a_status_map_of_missing_outcomes_only_says_nothing():
    # parse errors and test timeouts recorded no outcome: mapping them sets nothing aside
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(
            [TERMINAL_BENCH],
            ReadOptions(status_map="parse_error=invalid,test_timeout=timeout", missing="fail"),
        )


def test_several_raw_statuses_are_counted_apart():
    mapping = "unknown_agent_error=error,agent_installation_failed=error,agent_timeout=timeout"
    with pytest.warns(be.BayevalWarning, match="sets aside 1514 recorded outcomes") as caught:
        load([TERMINAL_BENCH], ReadOptions(status_map=mapping, missing="exclude"))
    message = str(caught[0].message)
    assert "unknown_agent_error -> error: 6 (0 successes, 6 failures)" in message
    assert "agent_installation_failed -> error: 4 (0 successes, 4 failures)" in message


def test_judge_options_read_a_judge_beside_the_labels(tmp_path):
    frame = pd.read_csv(be.datasets.path("judging_the_judges"))
    frame["human"] = frame["human"].where(frame.index % 5 == 0)  # a fifth labelled
    path = tmp_path / "judged.csv"
    frame.to_csv(path, index=False)
    read = ReadOptions(success="human", judge=("judge_gpt4",), label_design="random")
    data, _ = load([path], read)
    assert data.judges == ["judge_gpt4"] and data.label_design == "random"
    labelled = frame["human"].notna().groupby(frame["system"]).sum()
    assert data.dataset["trials"].sum("task").to_series().to_dict() == labelled.to_dict()
    verdicts = frame.groupby("system")["judge_gpt4"].sum()
    ones = data.dataset["judge_n11"] + data.dataset["judge_n10"] + data.dataset["judge_u1"]
    assert ones.sum(("task", "label_stratum")).isel(judge=0).to_series().to_dict() == (
        verdicts.to_dict()
    )
    with pytest.raises(Exception, match="label_design"):
        load([path], ReadOptions(success="human", judge=("judge_gpt4",)))


def test_judge_options_name_the_scorers_of_an_inspect_log():
    pytest.importorskip("inspect_ai")
    import click

    log = next((ROOT / "tests/fixtures/readers/inspect").glob("*_short-answers_*.json"))
    raw = json.loads(log.read_text())
    epochs = [s["scores"] for s in raw["samples"]]
    read = ReadOptions(success="human", judge=("model_graded_qa",), label_design="random")
    data, lines = load([log], read)
    assert data.judges == ["model_graded_qa"] and data.label_design == "random"
    assert int(data.dataset["trials"].sum()) == sum("human" in s for s in epochs)
    judged_pass = data.dataset["judge_n11"] + data.dataset["judge_n10"] + data.dataset["judge_u1"]
    assert int(judged_pass.sum()) == sum(s["model_graded_qa"]["value"] == "C" for s in epochs)
    assert any("--success" in line for line in lines)
    with pytest.raises(Exception, match="--label-design"):
        load([log], ReadOptions(success="human", judge=("model_graded_qa",)))
    both = ReadOptions(
        success="human",
        judge=("model_graded_qa",),
        label_design="random",
        reader_options=("scorer=human",),
    )
    with pytest.raises(click.UsageError, match="--success and --reader-option scorer="):
        load([log], both)
