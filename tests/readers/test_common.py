"""What readers share: sources that cover different task sets are not a cross product.

A task a system was never given (another eval, another ``--limit``) is *not planned* for it: its
cell stays empty, is not counted as ``not_run`` and never asks for a missing-outcome policy; a
task a system was given and did not finish (an interrupted log) stays ``not_run``. Logs and
sample files are genuine (provenance: ``tests/fixtures/readers/PROVENANCE.md``) or written by
``inspect_ai`` itself with a mock model; expected counts come from the raw files.
"""

import json
import zipfile

import pytest

import bayeval.readers as br
from bayeval.errors import BayevalWarning
from tests import helpers

FIXTURES = helpers.FIXTURES / "readers"
INSPECT_EVAL = (
    FIXTURES / "inspect" / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
)
QWEN = FIXTURES / "lm_eval_results" / "Qwen__Qwen3-8B"
PYTHIA = FIXTURES / "lm_eval" / "EleutherAI__pythia-160m"
METRIC = {
    "negotiationtom_belief": "acc",
    "negotiationtom_desire": "acc",
    "negotiationtom_intention": "exact_match",
    "arc_easy": "acc",
    "gsm8k": "exact_match",
}
FILTER = {"gsm8k": "strict-match"}

pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)


def eval_truth() -> dict:
    archive = zipfile.ZipFile(INSPECT_EVAL)
    samples = [json.loads(archive.read(n)) for n in archive.namelist() if n.startswith("samples/")]
    return {s["id"]: int(s["scores"]["match"]["value"] == "C") for s in samples}


def interrupted_mock_log(folder):
    """A mock model given samples 1-3 of 'popularity', its log cut after samples 1 and 2.

    Written by inspect_ai; the third sample is then dropped from the log (as an interrupted run
    leaves it: listed in the dataset, no record). Sample 1 is answered right, 2 wrong.
    """
    ia = pytest.importorskip("inspect_ai")
    from inspect_ai.dataset import Sample
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match

    def reply(messages, tools, tool_choice, config):
        text = "yes" if "1" in messages[-1].text else "no"
        out = ModelOutput.from_content(model="mockllm", content=text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    task = ia.Task(
        dataset=[Sample(input=f"question {i}", target="yes", id=i) for i in (1, 2, 3)],
        scorer=match(),
        name="popularity",
    )
    model = get_model("mockllm/model", custom_outputs=reply)
    (log,) = ia.eval(task, model=model, log_dir=str(folder / "tmp"), display="none")
    log.samples = [s for s in log.samples if s.id != 3]
    write_eval_log(log, str(folder / "mock.json"), format="json")
    return log


def test_inspect_logs_of_different_task_sets_are_not_a_cross_product(tmp_path):
    log = interrupted_mock_log(tmp_path)
    truth = eval_truth()  # gpt-4o-mini: samples 1-10
    files = [INSPECT_EVAL, tmp_path / "mock.json"]
    with pytest.warns(BayevalWarning, match="not planned"):
        data = br.read_inspect(files, missing="fail")
    trials = data.dataset["trials"].to_pandas()
    successes = data.dataset["successes"].to_pandas()
    assert trials.loc["openai/gpt-4o-mini"].sum() == len(truth)
    assert successes.loc["openai/gpt-4o-mini"].sum() == sum(truth.values())
    # the mock model was given 3 samples, not 10: one of them was not run (a failure under
    # 'fail'), the other seven were never planned for it and count nowhere
    planned = log.eval.dataset.sample_ids
    scored = [s for s in log.samples if s.scores]
    assert trials.loc["mockllm/model"].sum() == len(planned) == 3
    right = sum(s.scores["match"].value == "C" for s in scored)
    assert successes.loc["mockllm/model"].sum() == right == 1
    counts = data.status_counts.loc["mockllm/model"]
    assert int(counts["not_run"]) == len(planned) - len(scored) == 1
    assert int(counts["ok"]) == len(scored)
    report = br.mapping_report(data)
    assert "mockllm/model" in report and "not planned" in report


def test_the_policy_prompt_counts_only_planned_attempts(tmp_path):
    interrupted_mock_log(tmp_path)
    files = [INSPECT_EVAL, tmp_path / "mock.json"]
    with pytest.raises(ValueError, match=r"1 of 13 planned attempts.*not_run: 1") as info:
        br.read_inspect(files)
    assert "not planned for a system, not counted: mockllm/model: 7 of 10" in str(info.value)


def lm_eval_truth(folder) -> tuple[int, int]:
    """``(successes, lines)`` of a model's sample files, with the metrics and filters above."""
    hits = lines = 0
    for path in folder.glob("samples_*.jsonl"):
        task = next(t for t in METRIC if path.name.startswith(f"samples_{t}_"))
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if FILTER.get(task, record.get("filter")) != record.get("filter"):
                continue
            hits += int(record[METRIC[task]])
            lines += 1
    return hits, lines


def test_lm_eval_runs_of_different_tasks_need_no_policy(tmp_path):
    with pytest.warns(BayevalWarning, match="not planned"):
        data = br.read_lm_eval([QWEN, PYTHIA], metric=METRIC, filter=FILTER)
    assert data.missing is None
    for folder in (QWEN, PYTHIA):
        hits, lines = lm_eval_truth(folder)
        assert int(data.dataset["trials"].sel(system=folder.name).sum()) == lines
        assert int(data.dataset["successes"].sel(system=folder.name).sum()) == hits
        assert int(data.status_counts.loc[folder.name, "not_run"]) == 0
