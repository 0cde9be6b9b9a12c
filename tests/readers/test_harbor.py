"""read_harbor on synthetic Harbor job folders (provenance: tests/fixtures/readers/PROVENANCE.md).

Expected counts are written out by hand from the fixture (and checked against the raw files
with json), never taken from the reader.
"""

import json
import shutil

import pytest
from click.testing import CliRunner

import bayeval.readers as br
from bayeval import cli
from bayeval.errors import BayevalWarning
from tests import helpers

JOBS = helpers.FIXTURES / "readers" / "harbor" / "jobs"
FINISHED = JOBS / "2026-03-02__10-00-00"  # terminus-2, claude-sonnet-4-5: 8 trials
STOPPED = JOBS / "2026-03-03__10-00-00"  # codex, gpt-5: 6 results, 1 unfinished, 1 absent
TERMINUS = "terminus-2 (anthropic/claude-sonnet-4-5)"
CODEX = "codex (openai/gpt-5)"
TASKS = ["chess-best-move", "crack-7z-hash", "fix-git", "qemu-startup"]
FAST = ["--model", "hierarchical", "--sampler", "grid", "--draws", "200", "--chains", "2"]

# by hand, from the trial folders (reward 1/0; 0.5 a failure at threshold 1), in task order
SUCCESSES = {TERMINUS: [0, 1, 2, 0], CODEX: [1, 0, 1, 0]}
# attempts with a verdict (missing="exclude"): terminus-2's qemu-startup trial timed out in
# its verifier; codex's crack-7z-hash trial failed at environment start, its chess-best-move
# second trial never finished and its qemu-startup second trial has no folder
TRIALS = {TERMINUS: [2, 2, 2, 1], CODEX: [1, 1, 2, 1]}
STATUSES = {
    TERMINUS: {"ok": 7, "timeout": 1, "error": 0, "not_run": 0},
    CODEX: {"ok": 5, "timeout": 0, "error": 1, "not_run": 2},
}


def raw_trials(job):
    """``[(task, reward or None, exception type or None)]`` of a job's finished trials."""
    out = []
    for path in sorted(job.glob("*/result.json")):
        trial = json.loads(path.read_text())
        verifier = trial["verifier_result"]
        exception = trial["exception_info"]
        out.append(
            (
                trial["task_name"],
                verifier["rewards"]["reward"] if verifier else None,
                exception["exception_type"] if exception else None,
            )
        )
    return out


def table(data, name):
    frame = data.dataset[name].to_pandas()
    return {system: [int(frame.loc[system, task]) for task in TASKS] for system in frame.index}


def test_hand_counts_agree_with_the_raw_files():
    for job, system in ((FINISHED, TERMINUS), (STOPPED, CODEX)):
        trials = raw_trials(job)
        wins = [sum(1 for t, r, _ in trials if t == task and r == 1.0) for task in TASKS]
        verdicts = [sum(1 for t, r, _ in trials if t == task and r is not None) for task in TASKS]
        assert wins == SUCCESSES[system]
        assert verdicts == TRIALS[system]
    assert json.loads((STOPPED / "result.json").read_text())["n_total_trials"] == 8
    assert len(list(STOPPED.glob("*/config.json"))) == 7  # one planned trial has no folder


def test_two_jobs_are_two_systems():
    data = br.read_harbor(JOBS, threshold=1, missing="exclude")
    assert data.systems == [TERMINUS, CODEX]
    assert sorted(data.tasks) == TASKS
    assert table(data, "successes") == SUCCESSES
    assert table(data, "trials") == TRIALS
    for system, expected in STATUSES.items():
        counts = data.status_counts.loc[system]
        assert {s: int(counts[s]) for s in expected} == expected
    assert "cluster" not in data.dataset.coords  # one dataset


def test_statuses_are_mapped_and_recorded():
    data = br.read_harbor(JOBS, threshold=1, missing="exclude")
    report = br.mapping_report(data)
    for line in (
        "AgentTimeoutError (verified): 1 -> ok",
        "VerifierTimeoutError: 1 -> timeout",
        "RuntimeError: 1 -> error",
        "unfinished: 1 -> not_run",
        "not_run: 1 -> not_run",
        "1 unfinished trial folder(s), 1 planned trial(s) without a folder",
        "the job did not finish",
        "1 trial(s) with a reward strictly between 0 and 1",
    ):
        assert line in report
    # an agent timeout that was still verified can be counted as missing as well
    data = br.read_harbor(
        FINISHED, missing="exclude", status_map={"AgentTimeoutError (verified)": "timeout"}
    )
    assert int(data.status_counts.loc[TERMINUS, "timeout"]) == 2
    assert table(data, "trials")[TERMINUS] == [1, 2, 2, 1]


def test_a_missing_outcome_needs_a_policy():
    with pytest.raises(ValueError, match="missing-outcome policy"):
        br.read_harbor(FINISHED)
    data = br.read_harbor(FINISHED, missing="fail")
    assert table(data, "trials")[TERMINUS] == [2, 2, 2, 2]
    assert table(data, "successes")[TERMINUS] == SUCCESSES[TERMINUS]


def test_partial_rewards_are_refused_without_a_threshold():
    with pytest.raises(ValueError, match=r"reward other than 0 and 1 \(\[0\.5\].*threshold="):
        br.read_harbor(JOBS, missing="exclude")
    half = br.read_harbor(STOPPED, threshold=0.5, missing="exclude")
    assert table(half, "successes")[CODEX] == [1, 0, 2, 0]  # 0.5 >= 0.5 on fix-git
    with pytest.raises(TypeError, match="threshold must be a finite number"):
        br.read_harbor(STOPPED, threshold="1")


@pytest.mark.parametrize(
    "path",
    [
        JOBS,
        FINISHED,
        FINISHED / "result.json",
        FINISHED / "fix-git__oFDTajn",
        FINISHED / "fix-git__oFDTajn" / "result.json",
    ],
)
def test_detection(path):
    assert br.detect_format(path) == "harbor"


@pytest.mark.parametrize("path", [FINISHED / "config.json", STOPPED / "chess-best-move__BBDyKTF"])
def test_a_config_is_not_results(path):
    with pytest.raises(ValueError, match="config.json of a Harbor job or trial"):
        br.detect_format(path / "config.json" if path.is_dir() else path)


def test_detection_skips_the_other_files_of_a_trial(tmp_path):
    job = shutil.copytree(FINISHED, tmp_path / "job")
    logs = job / "fix-git__oFDTajn" / "agent"
    logs.mkdir()
    # an agent's log that another format would claim (a Terminal-Bench results file)
    (logs / "results.json").write_text(
        json.dumps({"results": [{"task_id": "a", "is_resolved": 1}]})
    )
    (logs / "result.json").write_text(json.dumps({"steps": []}))
    assert br.detect_format(tmp_path) == "harbor"
    data = br.read(tmp_path, missing="exclude")
    assert table(data, "trials") == {TERMINUS: TRIALS[TERMINUS]}


def test_trials_read_without_their_job_plan_nothing():
    trials = sorted(STOPPED.glob("*/result.json"))
    data = br.read_harbor(trials, threshold=1, missing="exclude")
    assert int(data.status_counts.loc[CODEX, "not_run"]) == 0
    assert table(data, "trials")[CODEX] == [1, 1, 2, 1]
    assert "read without their job" in br.mapping_report(data)


def test_planned_trials_of_tasks_without_folders_are_counted_in_a_warning(tmp_path):
    job = shutil.copytree(FINISHED, tmp_path / "job")
    for folder in job.glob("qemu-startup__*"):
        shutil.rmtree(folder)
    with pytest.warns(BayevalWarning, match="2 of them belong to tasks none of whose trials"):
        data = br.read_harbor(job, missing="exclude")
    assert sorted(data.tasks) == TASKS[:3]
    assert "planned 8 trials (n_total_trials)" in br.mapping_report(data)


def test_without_a_job_config_the_attempts_are_inferred(tmp_path):
    job = shutil.copytree(STOPPED, tmp_path / "job")
    (job / "config.json").unlink()
    data = br.read_harbor(job, threshold=1, missing="exclude")
    assert int(data.status_counts.loc[CODEX, "not_run"]) == 2  # 2 attempts: the most any has
    assert "inferred" in br.mapping_report(data)


def test_systems_named(tmp_path):
    data = br.read_harbor({"old": FINISHED, "new": STOPPED}, threshold=1, missing="exclude")
    assert data.systems == ["old", "new"]
    assert table(data, "successes") == {"old": SUCCESSES[TERMINUS], "new": SUCCESSES[CODEX]}
    with pytest.raises(ValueError, match="several agents or models"):
        br.read_harbor(JOBS, system="mine", threshold=1, missing="exclude")
    with pytest.raises(TypeError, match="not both"):
        br.read_harbor({"a": FINISHED}, system="b")
    # a second job of the same agent and model is refused unless named
    copy = shutil.copytree(FINISHED, tmp_path / "again")
    for path in copy.glob("*/result.json"):
        trial = json.loads(path.read_text())
        trial["trial_name"] += "x"
        path.write_text(json.dumps(trial))
    with pytest.raises(ValueError, match="two jobs claim system"):
        br.read_harbor([FINISHED, copy], missing="exclude")
    both = br.read_harbor({TERMINUS: [FINISHED, copy]}, missing="exclude")
    assert table(both, "successes")[TERMINUS] == [2 * n for n in SUCCESSES[TERMINUS]]
    same = shutil.copytree(FINISHED, tmp_path / "same")  # the same trials twice
    with pytest.raises(ValueError, match="appears twice"):
        br.read_harbor({TERMINUS: [FINISHED, same]}, missing="exclude")


def trial_folder(root, name, rewards, exception=None, disable=False, source="terminal-bench"):
    """A minimal trial folder: the fields the reader reads, as Harbor names them."""
    folder = root / name
    folder.mkdir(parents=True)
    payload = {
        "task_name": name.split("__")[0],
        "trial_name": name,
        "source": source,
        "config": {
            "agent": {"name": "oracle", "model_name": None},
            "verifier": {"disable": disable},
        },
        "agent_info": {"name": "oracle", "version": "1.0.0", "model_info": None},
        "verifier_result": None if rewards is None else {"rewards": rewards},
        "exception_info": None if exception is None else {"exception_type": exception},
        "started_at": "2026-03-01T10:00:00Z",
    }
    (folder / "result.json").write_text(json.dumps(payload))
    return folder


def test_reward_keys(tmp_path):
    trial_folder(tmp_path, "a__1", {"tests": 1, "style": 0})
    trial_folder(tmp_path, "b__1", {"tests": 0, "style": 1})
    with pytest.raises(ValueError, match=r"several rewards \['style', 'tests'\].*reward_key="):
        br.read_harbor(tmp_path)
    data = br.read_harbor(tmp_path, reward_key="style")
    assert data.systems == ["oracle"]
    assert table_of(data) == {"a": 0, "b": 1}
    with pytest.raises(ValueError, match="has no reward 'speed'"):
        br.read_harbor(tmp_path, reward_key="speed")


def table_of(data):
    return data.dataset["successes"].to_pandas().iloc[0].to_dict()


def test_exceptions_without_a_reward(tmp_path):
    trial_folder(tmp_path, "a__1", {"reward": 1})
    trial_folder(tmp_path, "a__2", None, exception="RewardFileNotFoundError")
    trial_folder(tmp_path, "a__3", None, exception="CancelledError")
    trial_folder(tmp_path, "a__4", None, exception="DaytonaError")
    trial_folder(tmp_path, "a__5", {"reward": None}, exception=None)
    data = br.read_harbor(tmp_path, missing="exclude")
    counts = data.status_counts.loc["oracle"]
    assert {s: int(counts[s]) for s in ("ok", "invalid", "not_run", "error", "no_verdict")} == {
        "ok": 1,
        "invalid": 1,
        "not_run": 1,
        "error": 1,
        "no_verdict": 1,
    }
    assert "no_reward: 1 -> no_verdict" in br.mapping_report(data)


def test_a_job_without_its_verifier_is_refused(tmp_path):
    trial_folder(tmp_path, "a__1", None, disable=True)
    trial_folder(tmp_path, "b__1", None, disable=True)
    with pytest.raises(ValueError, match="verifier disabled"):
        br.read_harbor(tmp_path, missing="exclude")


def test_rewards_must_be_numbers(tmp_path):
    trial_folder(tmp_path, "a__1", {"reward": "1"})
    with pytest.raises(ValueError, match=r"has the reward '1'.*numbers"):
        br.read_harbor(tmp_path)


def test_several_datasets_are_clusters(tmp_path):
    trial_folder(tmp_path, "a__1", {"reward": 1})
    trial_folder(tmp_path, "a__2", {"reward": 0}, source="swebench-verified")
    data = br.read_harbor(tmp_path)
    assert list(data.tasks) == ["terminal-bench/a", "swebench-verified/a"]
    assert data.dataset["cluster"].values.tolist() == ["terminal-bench", "swebench-verified"]


def test_not_a_harbor_result(tmp_path):
    (tmp_path / "result.json").write_text(json.dumps({"score": 1}))
    with pytest.raises(ValueError, match=r"is not a Harbor result\.json.*\['score'\]"):
        br.read_harbor(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="holds no Harbor result.json"):
        br.read_harbor(empty)


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def test_cli_analyze_a_job_folder():
    result = invoke("analyze", FINISHED, *FAST, "--missing", "exclude", "--json", "-")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout[result.stdout.index("{") :])
    lines = payload["input"]["lines"]
    assert any("(harbor)" in line for line in lines)
    assert any("VerifierTimeoutError: 1 -> timeout" in line for line in lines)
    record = payload["data"]["status_counts"][0]
    assert record["system"] == TERMINUS
    assert {s: record[s] for s in STATUSES[TERMINUS]} == STATUSES[TERMINUS]
    # a partial reward is refused in the command line's words
    result = invoke("analyze", JOBS, *FAST, "--missing", "exclude")
    assert result.exit_code == 2
    assert "--reader-option threshold=" in result.output
