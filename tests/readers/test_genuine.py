"""Readers on genuine files: lm-eval aggregated results with their samples, HELM per-instance
stats, Inspect AI logs, EvalPlus results, classic SWE-bench reports (Lite), Terminal-Bench
leaderboard submissions.

Every expected count is computed here from the raw fixture with json/zipfile/pandas, never
taken from a reader's output. Provenance of each fixture: ``tests/fixtures/readers/PROVENANCE.md``.
"""

import json
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

import bayeval.readers as br
from bayeval._validate import BayevalWarning
from tests import helpers

FIXTURES = helpers.FIXTURES / "readers"
QWEN = FIXTURES / "lm_eval_results" / "Qwen__Qwen3-8B"
STAMP = "2026-07-08T16-04-34.219874"
QWEN_RESULTS = QWEN / f"results_{STAMP}.json"
AGGREGATE_ONLY = (
    FIXTURES / "lm_eval_results" / "aggregate_only" / "results_2025-01-21T00-40-03.356274.json"
)
QWEN_METRIC = {
    "negotiationtom_belief": "acc",
    "negotiationtom_desire": "acc",
    "negotiationtom_intention": "exact_match",
}
HELM = FIXTURES / "helm" / "runs" / "v3"
INSPECT = FIXTURES / "inspect"
INSPECT_EVAL = INSPECT / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
INSPECT_JSON = INSPECT / "2025-05-12T20-28-13-04-00_popularity.json"
INSPECT_EMPTY = INSPECT / "2025-05-12T20-28-13-04-00_no-samples.json"


def status_row(data, system) -> dict:
    return {k: int(v) for k, v in data.status_counts.loc[system].items() if v}


# -- lm-evaluation-harness results_*.json ----------------------------------------------------
def qwen_truth() -> pd.DataFrame:
    """Every sample line of every task the results file configures, with its 0/1 metric."""
    report = json.loads(QWEN_RESULTS.read_text())
    rows = []
    for task in report["configs"]:
        path = QWEN / f"samples_{task}_{STAMP}.jsonl"
        for line in path.read_text().splitlines():
            record = json.loads(line)
            rows.append(
                {
                    "task": f"{task}/{record['doc_id']}",
                    "cluster": task,
                    "success": int(record[QWEN_METRIC[task]]),
                }
            )
    return pd.DataFrame(rows)


def test_lm_eval_results_file_reads_its_sample_files():
    report = json.loads(QWEN_RESULTS.read_text())
    system = report["model_name"]
    assert br.detect_format(QWEN_RESULTS) == "lm_eval"
    data = br.read(QWEN_RESULTS, metric=QWEN_METRIC)
    truth = qwen_truth()
    assert data.systems == [system] == [report["config"]["model_args"]["pretrained"]]
    assert list(data.tasks) == truth["task"].tolist()
    successes = data.dataset["successes"].to_pandas().loc[system]
    assert successes.to_dict() == truth.set_index("task")["success"].to_dict()
    assert data.dataset["trials"].values.tolist() == [[1] * len(truth)]
    assert status_row(data, system) == {"ok": len(truth)}
    assert data.dataset["cluster"].values.tolist() == truth["cluster"].tolist()
    # the same outcomes as the sample files read directly (which name the model's folder)
    direct = br.read_lm_eval(sorted(QWEN.glob("samples_*.jsonl")), metric=QWEN_METRIC)
    assert direct.systems == [QWEN.name] == [report["model_name_sanitized"]]
    assert (direct.dataset["successes"].values == data.dataset["successes"].values).all()
    # the intention task's primary metric is an F1 over label sets: refused, naming exact_match
    with pytest.raises(
        ValueError,
        match=r"'micro_f1'.*intention.*not pass/fail.*"
        r"0/1: \['exact_match'\]",
    ):
        br.read_lm_eval(QWEN_RESULTS)


def test_lm_eval_results_without_samples_is_refused(tmp_path):
    report = json.loads(AGGREGATE_ONLY.read_text())
    assert br.detect_format(AGGREGATE_ONLY) == "lm_eval"
    for given in (AGGREGATE_ONLY, AGGREGATE_ONLY.parent):
        with pytest.raises(
            ValueError,
            match=r"results_2025-01-21T00-40-03\.356274\.json.*"
            r"aggregated.*mmlu_abstract_algebra.*"
            r"re-run with --log_samples",
        ):
            br.read(given)
    assert list(report["configs"]) == ["mmlu_abstract_algebra"]
    # some tasks' sample files missing: refused, naming them
    partial = tmp_path / "Qwen__Qwen3-8B"
    shutil.copytree(QWEN, partial)
    (partial / f"samples_negotiationtom_desire_{STAMP}.jsonl").unlink()
    with pytest.raises(
        ValueError,
        match=r"sample files of \['negotiationtom_desire'\] are not "
        r"beside it",
    ):
        br.read_lm_eval(partial / QWEN_RESULTS.name, metric=QWEN_METRIC)
    # a JSON that is neither
    odd = tmp_path / "results_x.json"
    odd.write_text(json.dumps({"score": 1}))
    with pytest.raises(ValueError, match=r"results_x\.json.*neither.*found \['score'\]"):
        br.read_lm_eval(odd)


# -- HELM ------------------------------------------------------------------------------------
def helm_truth(run: Path, metric="exact_match") -> tuple[str, dict]:
    spec = json.loads((run / "run_spec.json").read_text())
    records = json.loads((run / "per_instance_stats.json").read_text())
    values = {}
    for record in records:
        for stat in record["stats"]:
            if stat["name"]["name"] == metric and "perturbation" not in stat["name"]:
                values[record["instance_id"]] = int(stat["sum"])
    return spec["adapter_spec"]["model"], values


def test_helm_genuine_runs():
    runs = sorted(p for p in HELM.iterdir() if p.is_dir())
    assert br.detect_format(HELM) == "helm"
    data = br.read(HELM)
    truth = dict(helm_truth(run) for run in runs)
    assert sorted(data.systems) == sorted(truth)
    successes = data.dataset["successes"].to_pandas()
    for system, values in truth.items():
        assert successes.loc[system].to_dict() == values
        assert status_row(data, system) == {"ok": len(values)}
    assert int(data.dataset["trials"].max()) == 1
    scenario = json.loads((runs[0] / "run_spec.json").read_text())["name"].split(",model=")[0]
    assert set(data.dataset["cluster"].values.tolist()) == {scenario}
    report = br.mapping_report(data)
    assert "read_helm mapped" in report and "metric 'exact_match'" in report
    # one run folder, one file, another 0/1 metric
    one = br.read_helm(runs[0] / "per_instance_stats.json", metric="quasi_exact_match")
    system, values = helm_truth(runs[0], "quasi_exact_match")
    assert one.systems == [system]
    assert one.dataset["successes"].to_pandas().loc[system].to_dict() == values


def test_helm_metric_choice_is_checked():
    run = min(HELM.iterdir())
    with pytest.raises(
        ValueError,
        match=r"metric 'accuracy' not found.*its metrics:.*"
        r"'exact_match'",
    ):
        br.read_helm(run, metric="accuracy")
    with pytest.raises(
        ValueError,
        match=r"'num_references'.*not one 0/1 value.*count 1, sum 3"
        r".*0/1: \[.*'exact_match'",
    ):
        br.read_helm(run, metric="num_references")
    with pytest.raises(ValueError, match="'inference_runtime'.*not one 0/1"):
        br.read_helm(run, metric="inference_runtime")


def derived_run(tmp_path, edit) -> Path:
    """A copy of a genuine run whose per-instance records ``edit`` changes (for cases the
    genuine runs lack: perturbations, several trials, splits, missing values)."""
    source = min(HELM.iterdir())
    run = tmp_path / source.name
    shutil.copytree(source, run)
    records = json.loads((run / "per_instance_stats.json").read_text())
    (run / "per_instance_stats.json").write_text(json.dumps(edit(records)))
    return run


def exact_match(record):
    return next(s for s in record["stats"] if s["name"]["name"] == "exact_match")


def test_helm_perturbations_trials_splits_and_missing_values(tmp_path):
    typos = {"name": "typos", "robustness": True, "fairness": False, "computed_on": "perturbed"}

    def perturb(records):
        for record in records:
            stat = exact_match(record)
            flipped = {
                **stat,
                "name": {**stat["name"], "perturbation": typos},
                "sum": 1 - stat["sum"],
            }
            record["stats"].append(flipped)
        return records

    run = derived_run(tmp_path / "p", perturb)
    records = json.loads((run / "per_instance_stats.json").read_text())
    plain = br.read_helm(run)
    assert plain.dataset["successes"].values.tolist() == [[exact_match(r)["sum"] for r in records]]
    assert "2 perturbed stat(s) of 'exact_match' skipped" in br.mapping_report(plain)
    perturbed = br.read_helm(run, perturbation="typos")
    assert perturbed.dataset["successes"].values.tolist() == [
        [1 - exact_match(r)["sum"] for r in records]
    ]
    with pytest.raises(
        ValueError,
        match=r"no 'exact_match' stats under perturbation 'dialect'"
        r".*\['typos'\]",
    ):
        br.read_helm(run, perturbation="dialect")

    def second_trial(records):
        again = json.loads(json.dumps(records))
        for record in again:
            record["train_trial_index"] = 1
            exact_match(record)["sum"] = 1
        return records + again

    trials = br.read_helm(derived_run(tmp_path / "t", second_trial))
    assert trials.dataset["trials"].values.tolist() == [[2, 2]]
    assert trials.dataset["successes"].values.tolist() == [
        [exact_match(r)["sum"] + 1 for r in records]
    ]

    def two_splits(records):
        valid = json.loads(json.dumps(records[:1]))
        valid[0]["instance_id"] = "v1"
        for stat in valid[0]["stats"]:
            stat["name"]["split"] = "valid"
        return records + valid

    run = derived_run(tmp_path / "s", two_splits)
    with pytest.raises(ValueError, match=r"several splits \['test', 'valid'\].*split="):
        br.read_helm(run)
    assert list(br.read_helm(run, split="valid").tasks) == ["v1"]

    def no_value(records):
        exact_match(records[0]).update(count=0, sum=0)
        return records

    run = derived_run(tmp_path / "m", no_value)
    with pytest.raises(ValueError, match="missing"):
        br.read_helm(run)
    data = br.read_helm(run, missing="exclude")
    assert status_row(data, data.systems[0]) == {"ok": 1, "no_verdict": 1}


def test_helm_system_names_and_bad_files(tmp_path):
    source = min(HELM.iterdir())
    bare = tmp_path / "run"
    bare.mkdir()
    shutil.copy(source / "per_instance_stats.json", bare)
    with pytest.raises(ValueError, match=r"no system name.*run_spec\.json.*system="):
        br.read_helm(bare)
    assert br.read_helm(bare, system="m").systems == ["m"]
    named = tmp_path / "bbq:subject=all,method=multiple_choice_joint,model=org_x"
    shutil.copytree(bare, named)
    assert br.read_helm(named).systems == ["org_x"]
    both = br.read_helm({"a": source, "b": named})
    assert both.systems == ["a", "b"] and both.dataset["trials"].values.tolist() == [[1, 1]] * 2
    # runs of two scenarios: tasks are named <scenario>/<instance>, clustered by scenario
    other = tmp_path / "mmlu:subject=anatomy,model=org_x"
    shutil.copytree(bare, other)
    # each system was given one scenario: the other's instances are not planned for it (empty
    # cells, not not_run), so no missing-outcome policy is needed
    with pytest.warns(BayevalWarning, match=r"different task sets.*a: 2 of 4.*b: 2 of 4"):
        mixed = br.read_helm({"a": source, "b": other})
    records = json.loads((source / "per_instance_stats.json").read_text())
    scenarios = ["bbq:subject=all,method=multiple_choice_joint", "mmlu:subject=anatomy"]
    assert list(mixed.tasks) == [f"{c}/{r['instance_id']}" for c in scenarios for r in records]
    n = len(records)
    assert mixed.dataset["trials"].values.tolist() == [[1] * n + [0] * n, [0] * n + [1] * n]
    assert mixed.status_counts["not_run"].tolist() == [0, 0]
    assert sorted(set(mixed.dataset["cluster"].values.tolist())) == scenarios
    wrong = tmp_path / "per_instance_stats.json"
    wrong.write_text(json.dumps({"stats": []}))
    with pytest.raises(ValueError, match=r"per_instance_stats\.json.*not a HELM.*\['stats'\]"):
        br.read_helm(wrong)
    with pytest.raises(ValueError, match="cluster must be 'scenario'"):
        br.read_helm(source, cluster="repo")
    # the run's metadata is not a results file of any format
    with pytest.raises(ValueError, match=r"run_spec\.json.*\['adapter_spec', .*match no known"):
        br.detect_format(source / "run_spec.json")


# -- Inspect AI ------------------------------------------------------------------------------
inspect_warnings = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)


@inspect_warnings
def test_inspect_genuine_eval_log():
    pytest.importorskip("inspect_ai")
    archive = zipfile.ZipFile(INSPECT_EVAL)
    header = json.loads(archive.read("header.json"))
    samples = [json.loads(archive.read(n)) for n in archive.namelist() if n.startswith("samples/")]
    truth = {str(s["id"]): int(s["scores"]["match"]["value"] == "C") for s in samples}
    assert br.detect_format(INSPECT_EVAL) == "inspect"
    data = br.read(INSPECT_EVAL)
    system = header["eval"]["model"]
    assert data.systems == [system]
    assert len(truth) == header["results"]["total_samples"] == 10
    successes = data.dataset["successes"].to_pandas().loc[system]
    assert {str(k): int(v) for k, v in successes.items()} == truth
    assert status_row(data, system) == {"ok": len(truth)}


@inspect_warnings
def test_inspect_genuine_json_logs():
    pytest.importorskip("inspect_ai")
    log = json.loads(INSPECT_JSON.read_text())
    assert br.detect_format(INSPECT_JSON) == "inspect"
    with pytest.warns(BayevalWarning, match=r"status 'cancelled'.*not_run"):
        data = br.read(INSPECT_JSON)
    system = log["eval"]["model"]
    truth = {str(s["id"]): int(s["scores"]["match"]["value"] == "C") for s in log["samples"]}
    successes = data.dataset["successes"].to_pandas().loc[system]
    assert {str(k): int(v) for k, v in successes.items()} == truth
    assert log["status"] == "cancelled" and "cancelled" in br.mapping_report(data)
    assert br.detect_format(INSPECT_EMPTY) == "inspect"
    with pytest.raises(ValueError, match=r"no-samples\.json.*no per-sample records"):
        br.read(INSPECT_EMPTY)


# -- EvalPlus --------------------------------------------------------------------------------
EVALPLUS = FIXTURES / "humaneval" / "evalplus_llama3"


def test_evalplus_genuine_results_base_and_plus():
    files = sorted(EVALPLUS.glob("*_eval_results.json"))
    assert len(files) == 2
    for path in files:
        assert br.detect_format(path) == "humaneval"
        report = json.loads(path.read_text())
        system = path.name[: -len("_eval_results.json")]
        rows = pd.DataFrame(
            [
                {"task": task, "base": s["base_status"], "plus": s["plus_status"]}
                for task, samples in report["eval"].items()
                for s in samples
            ]
        )
        base = br.read(path, suite="base")
        plus = br.read_humaneval(path, suite="plus")
        assert base.systems == plus.systems == [system]
        assert sorted(base.tasks) == sorted(rows["task"])
        expected_base = rows.assign(ok=rows["base"] == "pass").groupby("task")["ok"].sum()
        expected_plus = (
            rows.assign(ok=(rows["base"] == "pass") & (rows["plus"] == "pass"))
            .groupby("task")["ok"]
            .sum()
        )
        got_base = base.dataset["successes"].to_pandas().loc[system]
        got_plus = plus.dataset["successes"].to_pandas().loc[system]
        assert got_base.to_dict() == expected_base.astype(int).to_dict()
        assert got_plus.to_dict() == expected_plus.astype(int).to_dict()
        assert status_row(base, system) == {"ok": len(rows)} == status_row(plus, system)
        plus_raw = [
            "pass" if (b, p) == ("pass", "pass") else "fail"
            for b, p in zip(rows["base"], rows["plus"], strict=True)
        ]
        raw = br.mapping(plus)
        assert dict(zip(raw["raw"], raw["count"], strict=True)) == dict(Counter(plus_raw))
        raw = br.mapping(base)
        assert dict(zip(raw["raw"], raw["count"], strict=True)) == dict(Counter(rows["base"]))
    # a base failure whose extra tests pass is a plus failure (EvalPlus: plus needs both)
    instruct = json.loads(files[0].read_text())["eval"]
    assert any(
        s["base_status"] == "fail" and s["plus_status"] == "pass"
        for samples in instruct.values()
        for s in samples
    )
    # a folder: one system per file, on the same tasks
    both = br.read(EVALPLUS)
    assert both.systems == [p.name[: -len("_eval_results.json")] for p in files]
    assert sorted(both.tasks) == sorted(json.loads(files[1].read_text())["eval"])


# -- classic SWE-bench reports (SWE-bench-docker runs on SWE-bench Lite) -----------------------
DOCKER = FIXTURES / "swebench_docker" / "evaluations"
LITE = (Path(br.__file__).parent / "_instances" / "swebench_lite.txt").read_text().split()
CLASSIC_STATUS = {
    "resolved": "ok",
    "unresolved": "ok",
    "no_generation": "invalid",
    "no_apply": "invalid",
    "install_fail": "error",
    "reset_failed": "error",
    "test_errored": "error",
    "test_timeout": "timeout",
    "no_logs": "no_verdict",
    "no_test_output": "no_verdict",
    "not_submitted": "not_run",
}


def classic_truth(report: dict, ids: list[str]) -> dict:
    """Category of every benchmark instance, straight from the lists (first that holds it)."""
    lists = {k: set(v) for k, v in report.items()}
    truth = {}
    for i in ids:
        for key in (
            "resolved",
            "no_generation",
            "no_apply",
            "install_fail",
            "reset_failed",
            "test_errored",
            "test_timeout",
            "no_logs",
        ):
            if i in lists.get(key, ()):
                truth[i] = key
                break
        else:
            if i not in lists["generated"]:
                truth[i] = "not_submitted"
            elif i not in lists["with_logs"]:
                truth[i] = "no_logs"
            elif i not in lists["applied"]:
                truth[i] = "no_test_output"
            else:
                truth[i] = "unresolved"
    return truth


def test_classic_genuine_reports_against_the_lite_list():
    assert br.detect_format(DOCKER) == "swebench"
    data = br.read(DOCKER, missing="fail")
    runs = sorted(p for p in DOCKER.iterdir() if p.is_dir())
    assert data.systems == [run.name for run in runs]
    assert sorted(data.tasks) == sorted(LITE)
    successes = data.dataset["successes"].to_pandas()
    for run in runs:
        report = json.loads((run / "report.json").read_text())
        assert set().union(*map(set, report.values())) <= set(LITE)
        truth = pd.Series(classic_truth(report, LITE))
        assert {t for t in LITE if successes.loc[run.name, t]} == set(report["resolved"])
        assert status_row(data, run.name) == truth.map(CLASSIC_STATUS).value_counts().to_dict()
        table = br.mapping(data)
        table = table[table["system"] == run.name]
        assert (
            dict(zip(table["raw"], table["count"], strict=True)) == truth.value_counts().to_dict()
        )
    report = br.mapping_report(data)
    assert "the bundled lite list, the only one holding all 299 ids" in report
    # the SWE-agent report lists two instances as both not generated and generated, and one
    # twice: said, not silently resolved
    assert "['django__django-12284', 'sphinx-doc__sphinx-10451'] listed under both" in report
    assert "'no_generation' lists ['psf__requests-863'] more than once" in report


def test_classic_genuine_runs_of_one_system_are_trials():
    runs = sorted(DOCKER.glob("auto-code-rover-run-*/report.json"))
    data = br.read_swebench({"acr": runs}, missing="exclude")
    reports = [json.loads(p.read_text()) for p in runs]
    truths = [classic_truth(r, LITE) for r in reports]
    trials = data.dataset["trials"].to_pandas().loc["acr"]
    successes = data.dataset["successes"].to_pandas().loc["acr"]
    for task in LITE:
        ok = [t[task] for t in truths if CLASSIC_STATUS[t[task]] == "ok"]
        assert trials[task] == len(ok)
        assert successes[task] == ok.count("resolved")
    # attempts: every listed or unlisted-but-submitted instance of the three runs
    assert int(data.dataset["attempts"].sum()) == sum(
        CLASSIC_STATUS[c] != "not_run" for t in truths for c in t.values()
    )


# -- Terminal-Bench leaderboard submissions ----------------------------------------------------
def test_terminal_bench_submission_folder_is_one_system():
    """A leaderboard submission folder holds the harness's runs: one system, runs as trials."""
    tb = FIXTURES / "terminal_bench"
    runs = sorted(p for p in tb.iterdir() if (p / "results.json").is_file())
    whole = br.read_terminal_bench({"openhands": tb}, missing="fail")
    listed = br.read_terminal_bench({"openhands": runs}, missing="fail")
    assert whole.fingerprint() == listed.fingerprint()
    trials = pd.concat(
        pd.DataFrame(json.loads((r / "results.json").read_text())["results"]) for r in runs
    )
    attempts = whole.dataset["attempts"].to_pandas().loc["openhands"]
    assert attempts.to_dict() == trials.groupby("task_id").size().to_dict()
