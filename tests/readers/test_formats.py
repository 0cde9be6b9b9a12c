"""Readers of harness outputs: each on a small fixture in its real format.

Expected values are derived by hand from the fixtures (see the comments), never from a reader's
own output. SWE-bench, HumanEval/EvalPlus, lm-eval and table fixtures live in
``tests/fixtures/readers``; Inspect logs are written by ``inspect_ai`` itself (mock model) into a
temporary folder.
"""

import collections
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayeval as be
import bayeval.readers as br
from tests import helpers

FIXTURES = helpers.FIXTURES / "readers"
SWE_ALPHA = FIXTURES / "swebench" / "agent-alpha.run-2025-01.json"
SWE_BETA = FIXTURES / "swebench" / "agent-beta" / "results" / "results.json"
HUMANEVAL = FIXTURES / "humaneval" / "codegen-350M-mono.jsonl_results.jsonl"
EVALPLUS = (
    FIXTURES / "humaneval" / "evalplus" / "deepseek-coder-1.3b_vllm_temp_0.8" / "eval_results.json"
)
LM_EVAL = FIXTURES / "lm_eval"
TABLE = FIXTURES / "table"


def cells(data: be.EvalData, variable: str = "successes") -> dict:
    """``{(system, task): value}`` of a count variable."""
    table = data.dataset[variable].to_pandas()
    return {(s, t): int(table.loc[s, t]) for s in table.index for t in table.columns}


def statuses(data: be.EvalData) -> dict:
    """``{system: {status: count}}`` for the non-zero status counts."""
    table = data.status_counts
    return {s: {k: int(v) for k, v in table.loc[s].items() if v} for s in table.index}


# -- SWE-bench -------------------------------------------------------------------------------
# Instances by outcome, read off the two reports:
#   alpha (official harness, schema 2): resolved 12907 11099 5221 13142; unresolved 14995 11133;
#       error 13230; empty patch 20590.
#   beta (multi-SWE-bench results.json, "resolved" without _ids): resolved 11099 11133;
#       unresolved 12907 14995 13142 20590; empty patch 5221; incomplete 13230.
ALPHA = {
    "astropy__astropy-12907": 1,
    "astropy__astropy-14995": 0,
    "django__django-11099": 1,
    "django__django-11133": 0,
    "pytest-dev__pytest-5221": 1,
    "scikit-learn__scikit-learn-13142": 1,
    "sympy__sympy-20590": 0,
}
BETA = {
    "astropy__astropy-12907": 0,
    "astropy__astropy-14995": 0,
    "django__django-11099": 1,
    "django__django-11133": 1,
    "pytest-dev__pytest-5221": 0,
    "scikit-learn__scikit-learn-13142": 0,
    "sympy__sympy-20590": 0,
}
REPOS = {
    "astropy__astropy-12907": "astropy/astropy",
    "astropy__astropy-14995": "astropy/astropy",
    "django__django-11099": "django/django",
    "django__django-11133": "django/django",
    "django__django-13230": "django/django",
    "pytest-dev__pytest-5221": "pytest-dev/pytest",
    "scikit-learn__scikit-learn-13142": "scikit-learn/scikit-learn",
    "sympy__sympy-20590": "sympy/sympy",
}


def test_swebench_reports_counts_statuses_and_repository_clusters():
    data = br.read_swebench([SWE_ALPHA, SWE_BETA], missing="fail")
    # system names: the official report's stem; results/results.json -> the folder above
    assert data.systems == ["agent-alpha.run-2025-01", "agent-beta"]
    assert sorted(data.tasks) == sorted(REPOS)
    got = cells(data)
    for system, truth in (("agent-alpha.run-2025-01", ALPHA), ("agent-beta", BETA)):
        assert {t: got[(system, t)] for t in truth} == truth
        assert got[(system, "django__django-13230")] == 0  # error / not run: no success
    assert statuses(data) == {
        "agent-alpha.run-2025-01": {"ok": 7, "error": 1},
        "agent-beta": {"ok": 7, "not_run": 1},
    }
    assert dict(zip(data.tasks, data.dataset["cluster"].values, strict=True)) == REPOS
    assert int(data.dataset["trials"].sum()) == 16  # fail: every planned attempt counts


def test_swebench_empty_patch_is_a_failure_unless_mapped():
    plain = br.read_swebench({"alpha": SWE_ALPHA}, missing="exclude", cluster=None)
    assert not plain.has_clusters
    assert statuses(plain) == {"alpha": {"ok": 7, "error": 1}}
    assert cells(plain, "trials")[("alpha", "sympy__sympy-20590")] == 1  # empty patch: a 0
    status_map = {"empty_patch": "invalid"}
    mapped = br.read_swebench(
        {"alpha": SWE_ALPHA, "beta": SWE_BETA}, missing="exclude", status_map=status_map
    )
    assert status_map == {"empty_patch": "invalid"}  # caller's mapping untouched
    assert statuses(mapped) == {
        "alpha": {"ok": 6, "invalid": 1, "error": 1},
        "beta": {"ok": 6, "invalid": 1, "not_run": 1},
    }
    trials = cells(mapped, "trials")
    assert trials[("alpha", "sympy__sympy-20590")] == 0
    assert trials[("beta", "pytest-dev__pytest-5221")] == 0
    assert mapped.dataset["successes"].sum("task").values.tolist() == [4, 2]


def test_swebench_needs_a_policy_and_checks_its_input(tmp_path):
    with pytest.raises(ValueError, match=r"agent-alpha.*missing="):
        br.read_swebench(SWE_ALPHA)
    only_resolved = tmp_path / "board.json"
    only_resolved.write_text(json.dumps({"resolved": ["a__b-1"], "applied": ["a__b-1"]}))
    with pytest.raises(ValueError, match=r"board\.json.*classic SWE-bench report.*instances="):
        br.read_swebench(only_resolved)
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps({"resolved_ids": ["a__b-1"], "unresolved_ids": ["a__b-1"]}))
    with pytest.raises(ValueError, match=r"twice\.json.*'a__b-1' \(resolved and unresolved\)"):
        br.read_swebench(twice)
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"resolved_ids": ["task-one"], "unresolved_ids": []}))
    with pytest.raises(ValueError, match=r"\['task-one'\].*cluster=None"):
        br.read_swebench(odd)
    assert br.read_swebench(odd, cluster=None).systems == ["odd"]
    with pytest.raises(ValueError, match=r"cluster must be 'repository'.*or None"):
        br.read_swebench(odd, cluster="repo")
    with pytest.raises(FileNotFoundError, match=r"nowhere\.json"):
        br.read_swebench(tmp_path / "nowhere.json")


def test_swebench_completed_without_verdict_and_submitted_only(tmp_path):
    report = {
        "resolved_ids": ["a__b-1"],
        "unresolved_ids": ["a__b-2"],
        "completed_ids": ["a__b-1", "a__b-2", "a__b-3"],
        "submitted_ids": ["a__b-1", "a__b-2", "a__b-3", "x__y-9"],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(report))
    data = br.read_swebench(path, missing="bounds")
    # a__b-3 completed with no verdict; x__y-9 was submitted but is outside the evaluated set
    assert list(data.tasks) == ["a__b-1", "a__b-2", "a__b-3"]
    assert statuses(data) == {"run": {"ok": 2, "no_verdict": 1}}
    upper = data.dataset["successes"].sel(missing_bound="upper").values.tolist()
    assert upper == [[1, 0, 1]]


def test_swebench_per_instance_reports(tmp_path):
    report = {
        "a__b-1": {"patch_is_None": False, "patch_exists": True, "resolved": True},
        "a__b-2": {"patch_is_None": False, "patch_exists": True, "resolved": False},
        "a__c-3": {"patch_is_None": True, "patch_exists": False, "resolved": False},
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    data = br.read_swebench(path, system="s", status_map={"empty_patch": "invalid"}, missing="fail")
    assert cells(data) == {("s", "a__b-1"): 1, ("s", "a__b-2"): 0, ("s", "a__c-3"): 0}
    assert statuses(data) == {"s": {"ok": 2, "invalid": 1}}


# -- HumanEval / EvalPlus --------------------------------------------------------------------
def test_humaneval_results_jsonl_samples_are_trials():
    # HumanEval/0: passed, passed, failed; /1: timed out, failed, failed; /2: passed x3
    data = br.read_humaneval(HUMANEVAL, missing="exclude")
    assert data.systems == ["codegen-350M-mono"]
    assert list(data.tasks) == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert data.dataset["successes"].values.tolist() == [[2, 0, 3]]
    assert data.dataset["trials"].values.tolist() == [[3, 2, 3]]  # the timeout left out
    assert statuses(data) == {"codegen-350M-mono": {"ok": 8, "timeout": 1}}
    as_failure = br.read_humaneval(HUMANEVAL, status_map={"timed out": "ok"})
    assert as_failure.missing is None
    assert as_failure.dataset["trials"].values.tolist() == [[3, 3, 3]]
    with pytest.raises(ValueError, match="missing="):
        br.read_humaneval(HUMANEVAL)


def test_evalplus_base_and_plus_suites():
    # (base, plus) per sample: /0 (pass, pass) (pass, fail) (fail, fail);
    # /1 (pass, timeout) (fail, pass); /2 (timeout, timeout) (pass, pass)
    base = br.read_humaneval(EVALPLUS, suite="base", missing="fail")
    assert base.systems == ["deepseek-coder-1.3b_vllm_temp_0.8"]
    assert base.dataset["successes"].values.tolist() == [[2, 1, 1]]
    assert base.dataset["trials"].values.tolist() == [[3, 2, 2]]
    assert statuses(base) == {"deepseek-coder-1.3b_vllm_temp_0.8": {"ok": 6, "timeout": 1}}
    plus = br.read_humaneval(EVALPLUS, system="ds", suite="plus", missing="exclude")
    # plus = base and extra tests both pass; a fail beats a timeout
    assert plus.dataset["successes"].values.tolist() == [[1, 0, 1]]
    assert plus.dataset["trials"].values.tolist() == [[3, 1, 1]]
    assert statuses(plus) == {"ds": {"ok": 5, "timeout": 2}}
    with pytest.raises(ValueError, match="suite must be one of"):
        br.read_humaneval(EVALPLUS, suite="extra")
    # three samples planned per problem: /1 and /2 are each one short
    planned = br.read_humaneval(EVALPLUS, system="ds", planned_trials=3, missing="fail")
    assert statuses(planned) == {"ds": {"ok": 6, "timeout": 1, "not_run": 2}}
    assert planned.dataset["trials"].values.tolist() == [[3, 3, 3]]


def test_humaneval_bad_input(tmp_path):
    unevaluated = tmp_path / "samples.jsonl"
    unevaluated.write_text('{"task_id": "HumanEval/0", "completion": "pass"}\n')
    with pytest.raises(
        ValueError,
        match=r"samples\.jsonl.*neither 'passed' nor 'result'.*"
        r"line 1",
    ):
        br.read_humaneval(unevaluated)
    no_task = tmp_path / "x.jsonl"
    no_task.write_text('{"task_id": "HumanEval/0", "passed": true}\n{"passed": false}\n')
    with pytest.raises(ValueError, match=r"x\.jsonl.*no 'task_id' on line 2"):
        br.read_humaneval(no_task)
    base_only = tmp_path / "eval_results.json"
    base_only.write_text(
        json.dumps(
            {
                "eval": {
                    "HumanEval/0": [
                        {"task_id": "HumanEval/0", "base_status": "pass", "plus_status": None}
                    ]
                }
            }
        )
    )
    assert br.read_humaneval(base_only).dataset["successes"].values.tolist() == [[1]]
    with pytest.raises(ValueError, match=r"no plus_status.*suite='base'"):
        br.read_humaneval(base_only, suite="plus")


# -- lm-evaluation-harness -------------------------------------------------------------------
# acc on arc_easy docs 0-3: pythia-160m 1 0 0 1, pythia-410m 1 1 0 1 (acc_norm: 1 1 0 0, 1 1 1 1)
# exact_match on gsm8k docs 0-2, strict-match: 160m 0 1 0, 410m 1 1 0;
#                               flexible-extract: 160m 1 1 0, 410m 1 1 1
ARC = [f"arc_easy/{i}" for i in range(4)]
GSM = [f"gsm8k/{i}" for i in range(3)]


def test_lm_eval_samples_metric_filter_and_task_clusters():
    data = br.read_lm_eval(
        LM_EVAL,
        metric={"arc_easy": "acc", "gsm8k": "exact_match"},
        filter={"gsm8k": "strict-match"},
    )
    assert data.systems == ["EleutherAI__pythia-160m", "EleutherAI__pythia-410m"]
    assert list(data.tasks) == ARC + GSM
    assert data.dataset["successes"].values.tolist() == [
        [1, 0, 0, 1, 0, 1, 0],
        [1, 1, 0, 1, 1, 1, 0],
    ]
    assert data.dataset["cluster"].values.tolist() == ["arc_easy"] * 4 + ["gsm8k"] * 3
    assert data.missing is None and int(data.dataset["trials"].max()) == 1
    flexible = br.read_lm_eval(
        sorted(LM_EVAL.glob("*/samples_gsm8k_*.jsonl")),
        metric="exact_match",
        filter="flexible-extract",
        cluster=None,
    )
    assert not flexible.has_clusters
    assert flexible.dataset["successes"].values.tolist() == [[1, 1, 0], [1, 1, 1]]
    norm = br.read_lm_eval(str(LM_EVAL / "*" / "samples_arc_easy_*.jsonl"), metric="acc_norm")
    assert norm.dataset["successes"].values.tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]


def test_lm_eval_repeats_become_trials(tmp_path):
    folder = tmp_path / "org__model"
    folder.mkdir()
    line = {"doc_id": 0, "filter": "none", "metrics": ["exact_match"]}
    (folder / "samples_toy_2024-01-01T00-00-00.000001.jsonl").write_text(
        json.dumps({**line, "exact_match": [1.0, 0.0, 1.0]})
        + "\n"
        + json.dumps({**line, "doc_id": 1, "exact_match": [0.0, 0.0, 0.0]})
        + "\n"
    )
    (folder / "samples_toy_2024-01-02T00-00-00.000001.jsonl").write_text(
        json.dumps({**line, "exact_match": True})
        + "\n"
        + json.dumps({**line, "doc_id": 1, "exact_match": None})
        + "\n"
    )
    data = br.read_lm_eval(folder, metric="exact_match", missing="exclude")
    assert data.systems == ["org__model"] and list(data.tasks) == ["toy/0", "toy/1"]
    assert data.dataset["successes"].values.tolist() == [[3, 0]]
    assert data.dataset["trials"].values.tolist() == [[4, 3]]
    assert statuses(data) == {"org__model": {"ok": 7, "no_verdict": 1}}


def test_lm_eval_default_metric_is_the_primary_one():
    gsm = next((LM_EVAL / "EleutherAI__pythia-160m").glob("samples_gsm8k_*.jsonl"))
    lines = [json.loads(line) for line in gsm.read_text().splitlines() if line.strip()]
    primary = lines[0]["metrics"][0]
    strict = [line for line in lines if line["filter"] == "strict-match"]
    data = br.read_lm_eval(gsm, filter="strict-match")
    assert int(data.dataset["successes"].sum()) == sum(int(line[primary]) for line in strict)
    assert (
        br.read_lm_eval(gsm, filter="strict-match", metric=primary).fingerprint()
        == data.fingerprint()
    )


def test_lm_eval_errors_name_file_metric_and_values(tmp_path):
    gsm = sorted(LM_EVAL.glob("EleutherAI__pythia-160m/samples_gsm8k_*.jsonl"))
    with pytest.raises(
        ValueError,
        match=r"samples_gsm8k_.*several filters "
        r"\['strict-match', 'flexible-extract'\]",
    ):
        br.read_lm_eval(gsm, metric="exact_match")
    with pytest.raises(
        ValueError,
        match=r"metric 'acc' not found in .*samples_gsm8k_.*"
        r"its metrics are \['exact_match'\]",
    ):
        br.read_lm_eval(gsm, metric="acc", filter="strict-match")
    with pytest.raises(ValueError, match=r"filter 'majority' not found.*'flexible-extract'"):
        br.read_lm_eval(gsm, metric="exact_match", filter="majority")
    with pytest.raises(
        ValueError,
        match=r"metric 'acc' in .*samples_truthfulqa_mc2_.* is not "
        r"pass/fail: found \[0\.4312\] on line 1",
    ):
        br.read_lm_eval(FIXTURES / "lm_eval_continuous", metric="acc")
    with pytest.raises(ValueError, match="no sample files in folder"):
        br.read_lm_eval(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such file, folder or glob"):
        br.read_lm_eval(tmp_path / "missing.jsonl")


# -- tables ----------------------------------------------------------------------------------
# runs.csv: A t1 1 0 | t2 1 <agent_timeout> | t3 0 0 ; B t1 1 1 | t2 0 1 | t3 1 <crash>
TABLE_MAP = {"agent_timeout": "timeout", "crash": "error"}


@pytest.mark.parametrize("name", ["runs.csv", "runs.jsonl", "runs.json", "runs.parquet"])
def test_table_formats_agree(name, tmp_path):
    path = TABLE / name
    if name == "runs.parquet":
        pytest.importorskip("pyarrow")
        path = tmp_path / name
        pd.read_csv(TABLE / "runs.csv").to_parquet(path)
    data = br.read_table(
        path,
        trial="trial",
        cluster="cluster",
        status="status",
        status_map=TABLE_MAP,
        missing="exclude",
    )
    assert cells(data) == {
        ("A", "t1"): 1,
        ("A", "t2"): 1,
        ("A", "t3"): 0,
        ("B", "t1"): 2,
        ("B", "t2"): 1,
        ("B", "t3"): 1,
    }
    assert data.dataset["trials"].values.tolist() == [[2, 1, 2], [2, 2, 1]]
    assert statuses(data) == {"A": {"ok": 5, "timeout": 1}, "B": {"ok": 5, "error": 1}}
    assert data.dataset["cluster"].values.tolist() == ["g1", "g1", "g2"]


def test_table_bad_input(tmp_path):
    sheet = tmp_path / "runs.xlsx"
    sheet.touch()
    with pytest.raises(ValueError, match=r"runs\.xlsx.*suffix '\.xlsx'.*\.csv"):
        br.read_table(sheet)
    not_records = tmp_path / "summary.json"
    not_records.write_text(json.dumps({"acc": 0.5}))
    with pytest.raises(ValueError, match=r"summary\.json.*list of records.*\['acc'\]"):
        br.read_table(not_records)
    with pytest.raises(ValueError, match=r"column\(s\) not found: success='ok'"):
        br.read_table(TABLE / "runs.csv", success="ok")


# -- format detection ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, expected",
    [
        (SWE_ALPHA, "swebench"),
        (SWE_BETA, "swebench"),
        (HUMANEVAL, "humaneval"),
        (EVALPLUS, "humaneval"),
        (LM_EVAL, "lm_eval"),
        (TABLE / "runs.csv", "table"),
        (TABLE / "runs.jsonl", "table"),
        (TABLE / "runs.json", "table"),
        (next(LM_EVAL.glob("*/samples_arc_easy_*.jsonl")), "lm_eval"),
    ],
)
def test_detect_format(path, expected):
    assert br.detect_format(path) == expected


def test_read_dispatches_and_rejects_unknown_formats(tmp_path):
    direct = br.read_swebench(SWE_ALPHA, missing="fail")
    via = br.read(SWE_ALPHA, missing="fail")
    assert via.fingerprint() == direct.fingerprint()
    assert br.read(HUMANEVAL, format="humaneval", missing="fail").systems == ["codegen-350M-mono"]
    with pytest.raises(ValueError, match="format must be one of"):
        br.read(SWE_ALPHA, format="nope")
    odd = tmp_path / "results.yaml"
    odd.write_text("acc: 1\n")
    with pytest.raises(
        ValueError,
        match=r"results\.yaml.*suffix '\.yaml'.*Known formats: table, "
        r"swebench, humaneval, lm_eval, inspect",
    ):
        br.read(odd)
    unknown = tmp_path / "scores.json"
    unknown.write_text(json.dumps({"model": "x", "score": 0.7}))
    with pytest.raises(ValueError, match=r"scores\.json.*\['model', 'score'\] match no known"):
        br.read(unknown)
    with pytest.raises(ValueError, match="cannot tell the format of folder"):
        br.read(tmp_path)


# -- Inspect AI ------------------------------------------------------------------------------
inspect_warnings = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)  # inspect_ai's tenacity use


def test_inspect_needs_its_optional_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # import now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'bayeval\[inspect\]'"):
        br.read_inspect("anything.eval")


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    """Two mock models x two tasks x 2 epochs, written by inspect_ai itself.

    model A ("mockllm/model"): toy q1 'yes' (C, C), q2 'no' (I, I), q3 'yes' then 'no' (C, I),
    q4 raises (error, error); toy2 q1 'yes' (C, C), q2 'no' (I, I).
    model B ("mockllm/other") answers 'yes' everywhere (all C). Every target is 'yes'.
    """
    ia = pytest.importorskip("inspect_ai")
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes

    def mock(answer):
        calls = collections.Counter()

        def reply(messages, tools, tool_choice, config):
            prompt = messages[-1].text
            calls[prompt] += 1
            text = answer(prompt, calls[prompt])
            if text is None:
                raise RuntimeError("sandbox died")
            out = ModelOutput.from_content(model="mockllm", content=text)
            out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
            return out

        return reply

    answers_a = {"q1": "yes", "q2": "no", "q4": None, "r1": "yes", "r2": "no"}
    model_a = get_model(
        "mockllm/model",
        custom_outputs=mock(
            lambda p, n: ("yes" if n == 1 else "no") if p == "q3" else answers_a[p]
        ),
    )
    model_b = get_model("mockllm/other", custom_outputs=mock(lambda p, n: "yes"))
    toy = ia.Task(
        dataset=[Sample(input=q, target="yes", id=q) for q in ("q1", "q2", "q3", "q4")],
        scorer=includes(),
        epochs=2,
        name="toy",
    )
    toy2 = ia.Task(
        dataset=[Sample(input=r, target="yes", id=q) for q, r in (("q1", "r1"), ("q2", "r2"))],
        scorer=includes(),
        epochs=2,
        name="toy2",
    )
    folder = tmp_path_factory.mktemp("inspect_logs")
    logs = ia.eval(
        [toy, toy2],
        model=[model_a, model_b],
        log_dir=str(folder),
        display="none",
        fail_on_error=False,
    )
    return folder, {(log.eval.model, log.eval.task): Path(log.location) for log in logs}


@inspect_warnings
def test_inspect_one_log_epochs_errors_and_json_format(inspect_logs, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    _, files = inspect_logs
    toy_a = files[("mockllm/model", "toy")]
    data = br.read_inspect(toy_a, missing="fail")
    assert data.systems == ["mockllm/model"] and not data.has_clusters
    assert list(data.tasks) == ["q1", "q2", "q3", "q4"]
    assert data.dataset["successes"].values.tolist() == [[2, 0, 1, 0]]
    assert data.dataset["trials"].values.tolist() == [[2, 2, 2, 2]]
    assert statuses(data) == {"mockllm/model": {"ok": 6, "error": 2}}
    with pytest.raises(ValueError, match=r"read_inspect.*error: 2.*missing="):
        br.read_inspect(toy_a)
    # the same log rewritten in Inspect's .json format, one epoch dropped (an interrupted run)
    log = read_eval_log(str(toy_a))
    log.samples = [s for s in log.samples if not (s.id == "q1" and s.epoch == 2)]
    as_json = tmp_path / "toy.json"
    write_eval_log(log, str(as_json))
    assert br.detect_format(as_json) == "inspect"
    cut = br.read(as_json, missing="exclude", system="A")
    assert cut.dataset["successes"].values.tolist() == [[1, 0, 1, 0]]
    assert statuses(cut) == {"A": {"ok": 5, "error": 2, "not_run": 1}}


@inspect_warnings
def test_inspect_folder_models_tasks_and_bad_logs(inspect_logs, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    folder, files = inspect_logs
    data = br.read_inspect(folder, missing="exclude")
    assert sorted(data.systems) == ["mockllm/model", "mockllm/other"]
    expected = {
        ("mockllm/model", "toy/q1"): 2,
        ("mockllm/model", "toy/q2"): 0,
        ("mockllm/model", "toy/q3"): 1,
        ("mockllm/model", "toy/q4"): 0,
        ("mockllm/model", "toy2/q1"): 2,
        ("mockllm/model", "toy2/q2"): 0,
    }
    expected.update({("mockllm/other", t): 2 for _, t in expected})
    assert cells(data) == expected
    assert cells(data, "trials")[("mockllm/model", "toy/q4")] == 0
    clusters = dict(zip(data.tasks, data.dataset["cluster"].values, strict=True))
    assert clusters == {t: t.split("/")[0] for _, t in expected}
    assert br.detect_format(folder) == "inspect"
    with pytest.raises(ValueError, match=r"scorer 'match' not found.*\['includes'\]"):
        br.read_inspect(files[("mockllm/other", "toy")], scorer="match")
    per_task = br.read_inspect(
        folder, scorer={"toy": "includes", "toy2": "includes"}, missing="exclude"
    )
    assert per_task.fingerprint() == data.fingerprint()
    with pytest.raises(ValueError, match=r"no scorer for task 'toy2'.*\['toy'\]"):
        br.read_inspect(folder, scorer={"toy": "includes"}, missing="exclude")
    twice = tmp_path / "twice"
    twice.mkdir()
    for name in ("first.eval", "retry.eval"):
        shutil.copy(files[("mockllm/other", "toy2")], twice / name)
    with pytest.raises(ValueError, match=r"appear in several logs.*first\.eval.*retry\.eval"):
        br.read_inspect(twice)
    partial = read_eval_log(str(files[("mockllm/other", "toy2")]))
    partial.samples[0].scores["includes"].value = "P"
    write_eval_log(partial, str(tmp_path / "partial.json"))
    with pytest.raises(ValueError, match=r"gave 'P'.*partial\.json.*pass/fail"):
        br.read_inspect(tmp_path / "partial.json")


def test_inspect_score_values():
    from bayeval.readers.inspect_logs import _outcome

    class Score:
        def __init__(self, value):
            self.value = value

    class Sample:
        id, epoch, error, limit = "s", 1, None, None

        def __init__(self, value):
            self.scores = {"m": Score(value)}

    for value, expected in [
        ("C", (1.0, None)),
        ("I", (0.0, None)),
        ("correct", (1.0, None)),
        ("INCORRECT", (0.0, None)),
        (True, (1.0, None)),
        (0, (0.0, None)),
        (1.0, (1.0, None)),
        ("N", (0.0, "noanswer")),
    ]:
        assert _outcome(Sample(value), "m", "f.eval") == expected
    for value in (0.5, "P", {"a": 1}, [1]):
        with pytest.raises(ValueError, match="pass/fail"):
            _outcome(Sample(value), "m", "f.eval")
    errored = Sample("C")
    errored.error = "boom"
    assert np.isnan(_outcome(errored, "m", "f.eval")[0])
    assert _outcome(errored, "m", "f.eval")[1] == "error"
    limited = Sample("I")
    limited.limit = type("Limit", (), {"type": "time"})()
    assert _outcome(limited, "m", "f.eval") == (0.0, "limit_time")  # scored, raw status kept
    unscored = Sample("C")
    unscored.scores = None
    assert _outcome(unscored, "m", "f.eval")[1] == "no_verdict"


@inspect_warnings
def test_inspect_refuses_logs_without_samples_and_reads_what_is_there(inspect_logs, tmp_path):
    """Silent misreads of real logs: no samples, mixed id types, lone epochs, cancelled runs."""
    from inspect_ai.log import read_eval_log, write_eval_log

    _, files = inspect_logs
    toy_a = files[("mockllm/model", "toy")]
    # a log saved without per-sample records (header totals only) is refused, not not_run
    bare = read_eval_log(str(toy_a))
    bare.samples = None
    write_eval_log(bare, str(tmp_path / "bare.json"))
    with pytest.raises(ValueError, match=r"bare\.json.*no per-sample records.*sample logging"):
        br.read_inspect(tmp_path / "bare.json")
    # int 0 in the samples against '0' in the dataset is one sample, not two
    mixed = read_eval_log(str(toy_a))
    mixed.samples = [s for s in mixed.samples if s.id == "q1"]
    for sample in mixed.samples:
        sample.id = 0
    mixed.eval.dataset.sample_ids = ["0"]
    write_eval_log(mixed, str(tmp_path / "mixed.json"))
    data = br.read_inspect(tmp_path / "mixed.json")
    assert list(data.tasks) == ["0"] and data.dataset["trials"].values.tolist() == [[2]]
    # no epoch count in the config: the epochs are those present (a lone epoch 2 adds no epoch 1)
    lone = read_eval_log(str(toy_a))
    lone.samples = [s for s in lone.samples if s.id == "q1" and s.epoch == 2]
    lone.eval.config.epochs = None
    lone.eval.dataset.sample_ids = ["q1"]
    write_eval_log(lone, str(tmp_path / "lone.json"))
    data = br.read_inspect(tmp_path / "lone.json")
    assert statuses(data) == {"mockllm/model": {"ok": 1}}
    # a cancelled run is surfaced: a warning, a note in the mapping, its gaps not_run
    cancelled = read_eval_log(str(toy_a))
    cancelled.status = "cancelled"
    cancelled.samples = [s for s in cancelled.samples if s.id != "q3"]
    write_eval_log(cancelled, str(tmp_path / "cancelled.json"))
    with pytest.warns(be.BayevalWarning, match="cancelled"):
        data = br.read_inspect(tmp_path / "cancelled.json", missing="exclude")
    assert statuses(data)["mockllm/model"]["not_run"] == 2
    assert "status 'cancelled'" in br.mapping_report(data)
