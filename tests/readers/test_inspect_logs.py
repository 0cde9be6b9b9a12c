"""read_inspect on genuine Inspect logs kept under other names, and on folders that hold them.

Expected counts are computed from the raw logs with json/zipfile, never from the reader.
Provenance of the logs: ``tests/fixtures/readers/PROVENANCE.md``.
"""

import json
import shutil
import warnings
import zipfile

import pytest

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
