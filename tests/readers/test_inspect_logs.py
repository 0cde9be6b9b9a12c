"""read_inspect on genuine Inspect logs kept under other names, and on folders that hold them.

Expected counts are computed from the raw logs with json/zipfile, never from the reader.
Provenance of the logs: ``tests/fixtures/readers/PROVENANCE.md``.
"""

import json
import shutil
import warnings
import zipfile

import pandas as pd
import pytest

import bayeval as be
import bayeval.readers as br
from bayeval._validate import BayevalWarning
from tests import helpers

INSPECT = helpers.FIXTURES / "readers" / "inspect"
INSPECT_EVAL = INSPECT / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
INSPECT_JSON = INSPECT / "2025-05-12T20-28-13-04-00_popularity.json"

pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)


def eval_truth() -> tuple[str, dict]:
    """The model and ``{sample id: 0/1}`` of the genuine ``.eval`` log, read from the zip."""
    archive = zipfile.ZipFile(INSPECT_EVAL)
    header = json.loads(archive.read("header.json"))
    samples = [json.loads(archive.read(n)) for n in archive.namelist() if n.startswith("samples/")]
    truth = {str(s["id"]): int(s["scores"]["match"]["value"] == "C") for s in samples}
    return header["eval"]["model"], truth


def successes_of(data, system) -> dict:
    return {str(k): int(v) for k, v in data.dataset["successes"].to_pandas().loc[system].items()}


def test_folder_of_renamed_json_logs_is_read_by_content(tmp_path):
    log_module = pytest.importorskip("inspect_ai.log")
    log = log_module.read_eval_log(str(INSPECT_EVAL))
    # the genuine log written as JSON by inspect itself, under a name of the user's choosing
    log_module.write_eval_log(log, str(tmp_path / "gpt-4o-mini popularity.json"), format="json")
    (tmp_path / "notes.json").write_text(json.dumps({"comment": "not a log"}))
    system, truth = eval_truth()
    assert br.detect_format(tmp_path) == "inspect"
    data = br.read(tmp_path)
    assert data.systems == [system]
    assert successes_of(data, system) == truth
    assert "notes.json" in br.mapping_report(data)  # what was left out is named


def test_renamed_cancelled_log_in_a_folder_reads_as_it_does_alone(tmp_path):
    pytest.importorskip("inspect_ai")
    shutil.copy(INSPECT_JSON, tmp_path / "run-1.json")
    raw = json.loads(INSPECT_JSON.read_text())
    truth = {str(s["id"]): int(s["scores"]["match"]["value"] == "C") for s in raw["samples"]}
    with pytest.warns(BayevalWarning, match="cancelled"):
        data = br.read_inspect(tmp_path)
    assert successes_of(data, raw["eval"]["model"]) == truth


def unscored_log(folder):
    """A log of a run with scoring turned off (``inspect eval --no-score``), by inspect_ai."""
    ia = pytest.importorskip("inspect_ai")
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes

    def reply(messages, tools, tool_choice, config):
        out = ModelOutput.from_content(model="mockllm", content="yes")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    task = ia.Task(
        dataset=[Sample(input=f"q{i}", target="yes", id=f"q{i}") for i in range(6)],
        scorer=includes(),
        name="toy",
    )
    model = get_model("mockllm/model", custom_outputs=reply)
    (log,) = ia.eval(task, model=model, log_dir=str(folder), display="none", score=False)
    return log


def test_an_unscored_log_is_refused_as_unscored(tmp_path):
    log = unscored_log(tmp_path)
    assert all(not s.scores for s in log.samples)  # the run really holds no score
    with pytest.raises(ValueError, match=r"(?i)unscored.*inspect score"):
        br.read_inspect(tmp_path, missing="fail")
    with pytest.raises(ValueError, match=r"(?i)unscored"):
        br.read_inspect(tmp_path)


def test_the_dataframe_api_and_the_parser_agree(tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai.analysis")
    import bayeval.readers.inspect_logs as inspect_logs

    unscored_log(tmp_path / "unscored")  # a log the two must both refuse
    cases = [([INSPECT_EVAL], {}), ([INSPECT_JSON], {}), ([INSPECT_EVAL, INSPECT_JSON], {})]

    def read_all():
        out = []
        for files, kwargs in cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BayevalWarning)
                try:
                    data = br.read_inspect(files, **kwargs)
                except ValueError as exc:  # the same refusal from both
                    out.append(str(exc).split(":")[1])
                    continue
            out.append(
                (
                    data.systems,
                    [str(t) for t in data.tasks],
                    data.dataset["successes"].values.tolist(),
                    data.dataset["status_counts"].values.tolist(),
                )
            )
        with pytest.raises(ValueError, match="unscored"):
            br.read_inspect(tmp_path / "unscored")
        return out

    through_frames = read_all()
    monkeypatch.setattr(inspect_logs, "frames_available", lambda: False)
    assert read_all() == through_frames


# a log with two scorers per sample (model_graded_qa, match) and a reviewer's label ("human")
# on five of its twelve sample epochs: tests/fixtures/make_inspect_judged_log.py
JUDGED = next(INSPECT.glob("*_short-answers_*.json"))
JUDGE_VARS = ["judge_n11", "judge_n10", "judge_n01", "judge_n00", "judge_u1", "judge_u0"]


def judged_truth(raw=None) -> list[dict]:
    """One row per sample epoch of the judged log, read with json: verdicts and label."""
    raw = raw if raw is not None else json.loads(JUDGED.read_text())
    value = {"C": 1.0, "I": 0.0}
    return [
        {
            "task": s["id"],
            "model_graded_qa": value[s["scores"]["model_graded_qa"]["value"]],
            "match": value[s["scores"]["match"]["value"]],
            "human": value[s["scores"]["human"]["value"]] if "human" in s["scores"] else None,
        }
        for s in raw["samples"]
    ]


def judge_counts(data, judge) -> dict:
    """``{variable: {task: count}}`` of one judge, summed over label strata."""
    cells = data.dataset.sel(judge=judge).sum("label_stratum")
    return {
        v: {str(k): int(n) for k, n in cells[v].isel(system=0).to_series().items()}
        for v in JUDGE_VARS
    }


def expected_counts(rows, judge) -> dict:
    """The same counts by plain arithmetic on the rows."""
    out: dict = {v: {} for v in JUDGE_VARS}
    for row in rows:
        verdict, label = int(row[judge]), row["human"]
        name = f"judge_u{verdict}" if label is None else f"judge_n{verdict}{int(label)}"
        for v in JUDGE_VARS:
            out[v].setdefault(row["task"], 0)
        out[name][row["task"]] += 1
    return out


def test_judge_and_label_scorers_are_read_as_the_log_holds_them():
    pytest.importorskip("inspect_ai")
    rows = judged_truth()
    assert sum(r["human"] is not None for r in rows) == 5  # the fixture: 5 of 12 labelled
    data = br.read_inspect(JUDGED, judge="model_graded_qa", scorer="human", label_design="random")
    assert data.judges == ["model_graded_qa"] and data.label_design == "random"
    assert judge_counts(data, "model_graded_qa") == expected_counts(rows, "model_graded_qa")
    # trusted outcomes count the labelled epochs only; the unlabelled ones are not missing
    labelled = {r["task"]: 0 for r in rows}
    passed = dict(labelled)
    for r in rows:
        if r["human"] is not None:
            labelled[r["task"]] += 1
            passed[r["task"]] += int(r["human"])
    assert successes_of(data, data.systems[0]) == passed
    trials = data.dataset["trials"].isel(system=0).to_series()
    assert {str(k): int(v) for k, v in trials.items()} == labelled
    assert "no_verdict" not in br.mapping_report(data)
    # the same as from_frame on the rows with NaN where a sample epoch was not labelled
    frame = pd.DataFrame(rows).assign(system=data.systems[0])
    frame["human"] = frame["human"].astype(float)
    direct = be.from_frame(frame, judge="model_graded_qa", success="human", label_design="random")
    for v in JUDGE_VARS:
        assert data.dataset[v].values.tolist() == direct.dataset[v].values.tolist(), v


def test_two_judges_stratified_by_one_of_them():
    pytest.importorskip("inspect_ai")
    rows = judged_truth()
    data = br.read_inspect(
        JUDGED,
        judge=["model_graded_qa", "match"],
        scorer="human",
        label_design="stratified",
        label_strata="match",
    )
    assert data.judges == ["model_graded_qa", "match"]
    assert data.dataset["label_stratum"].values.tolist() == sorted({int(r["match"]) for r in rows})
    for judge in ("model_graded_qa", "match"):
        assert judge_counts(data, judge) == expected_counts(rows, judge)


def test_the_dataframe_api_and_the_parser_agree_on_judged_logs(monkeypatch):
    pytest.importorskip("inspect_ai.analysis")
    import bayeval.readers.inspect_logs as inspect_logs

    def read():
        data = br.read_inspect(
            JUDGED, judge=["match", "model_graded_qa"], scorer="human", label_design="random"
        )
        return [data.dataset[v].values.tolist() for v in [*JUDGE_VARS, "status_counts"]]

    through_frames = read()
    monkeypatch.setattr(inspect_logs, "frames_available", lambda: False)
    assert read() == through_frames


def test_a_sample_epoch_not_run_has_no_verdict_and_no_label(tmp_path):
    pytest.importorskip("inspect_ai")
    raw = json.loads(JUDGED.read_text())
    dropped = raw["samples"].pop(0)  # an interrupted run: listed in the dataset, not in the log
    path = tmp_path / "interrupted.json"
    path.write_text(json.dumps(raw))
    rows = judged_truth(raw)
    data = br.read_inspect(
        path, judge="model_graded_qa", scorer="human", label_design="random", missing="exclude"
    )
    status = data.dataset["status_counts"].sel(system=data.systems[0], task=dropped["id"])
    assert int(status.sel(status="not_run")) == 1
    assert judge_counts(data, "model_graded_qa") == expected_counts(rows, "model_graded_qa")


def test_judged_reading_refuses_what_it_cannot_read(tmp_path):
    pytest.importorskip("inspect_ai")
    ok = {"judge": "model_graded_qa", "scorer": "human", "label_design": "random"}
    with pytest.raises(TypeError, match="needs label_design=.*'random'.*'stratified'"):
        br.read_inspect(JUDGED, judge="model_graded_qa", scorer="human")
    with pytest.raises(TypeError, match="needs scorer="):
        br.read_inspect(JUDGED, judge="model_graded_qa", label_design="random")
    with pytest.raises(TypeError, match="label_design= applies.*judge="):
        br.read_inspect(JUDGED, scorer="human", label_design="random")
    with pytest.raises(ValueError, match="both a judge"):
        br.read_inspect(JUDGED, **{**ok, "scorer": "model_graded_qa"})
    with pytest.raises(ValueError, match="label_strata= must name a judge scorer"):
        br.read_inspect(JUDGED, **{**ok, "label_design": "stratified", "label_strata": "match2"})
    for option, name in (("judge", "grader"), ("scorer", "reviewer")):
        with pytest.raises(ValueError, match=rf"{option}= names scorer.*'{name}'") as error:
            br.read_inspect(JUDGED, **{**ok, option: name})
        listed = str(error.value).split("scorers are")[1]  # the log's, in any order
        assert all(f"'{s}'" in listed for s in ("model_graded_qa", "match", "human"))
    with pytest.raises(ValueError, match="label_design must be one of"):
        br.read_inspect(JUDGED, **{**ok, "label_design": "convenience"})
    raw = json.loads(JUDGED.read_text())
    sample = raw["samples"][3]
    del sample["scores"]["model_graded_qa"]  # a scored sample the judge never saw
    path = tmp_path / "unjudged.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(
        ValueError, match=rf"'model_graded_qa' has no value for sample '{sample['id']}' \(epoch "
    ):
        br.read_inspect(path, **ok)


def test_a_log_without_labels_beside_a_labelled_one_is_all_unlabelled(tmp_path):
    pytest.importorskip("inspect_ai")
    raw = json.loads(JUDGED.read_text())
    raw["eval"]["model"] = "mockllm/other"
    raw["eval"]["eval_id"] = raw["eval"]["run_id"] = "another-run"
    for sample in raw["samples"]:
        sample["scores"].pop("human", None)  # this system's epochs were not reviewed
    other = tmp_path / "other.json"
    other.write_text(json.dumps(raw))
    data = br.read_inspect(
        [JUDGED, other], judge="model_graded_qa", scorer="human", label_design="random"
    )
    assert data.systems == [json.loads(JUDGED.read_text())["eval"]["model"], "mockllm/other"]
    rows = judged_truth(raw)
    cells = data.dataset.sel(system="mockllm/other", judge="model_graded_qa").sum("label_stratum")
    assert int(data.dataset["trials"].sel(system="mockllm/other").sum()) == 0
    assert int(cells["judge_u1"].sum()) == sum(r["model_graded_qa"] == 1.0 for r in rows)
    assert int(cells["judge_u0"].sum()) == sum(r["model_graded_qa"] == 0.0 for r in rows)
    with pytest.raises(ValueError, match=r"scorer= names scorer\(s\) \['human'\].*scorers are"):
        br.read_inspect(other, judge="model_graded_qa", scorer="human", label_design="random")
