"""Readers of real harness output files: SWE-bench (classic and Multi-SWE-bench), Terminal-Bench,
τ-bench; format detection over every fixture; what each reader says it mapped; bad files.

Every expected count is computed here from the raw fixture with json/pandas (sets of ids,
value counts), never taken from a reader's output. Provenance of each fixture:
``tests/fixtures/readers/PROVENANCE.md``.
"""

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayeval as be
import bayeval.readers as br
from bayeval.readers.swebench import instance_list
from tests import helpers

FIXTURES = helpers.FIXTURES / "readers"
CLASSIC = FIXTURES / "swebench_classic"
CLASSIC_A = CLASSIC / "evaluation" / "verified" / "20240620_agent-a" / "results" / "results.json"
CLASSIC_B = CLASSIC / "evaluation" / "verified" / "20240701_agent-b" / "results" / "results.json"
MULTI = FIXTURES / "multi_swebench"
TB = FIXTURES / "terminal_bench"
TAU = FIXTURES / "tau_bench" / "gpt-4o-airline.json"
VERIFIED = [
    line.strip()
    for line in (Path(br.__file__).parent / "_instances" / "swebench_verified.txt")
    .read_text()
    .splitlines()
    if line.strip()
]


def status_row(data, system) -> dict:
    return {k: int(v) for k, v in data.status_counts.loc[system].items() if v}


def mapped(data, system) -> dict:
    table = br.mapping(data)
    table = table[table["system"] == system]
    return {
        (r, s): int(n)
        for r, s, n in zip(table["raw"], table["status"], table["count"], strict=True)
    }


# -- classic SWE-bench reports ---------------------------------------------------------------
def classic_truth(report: dict) -> dict:
    """Category of every Verified instance, straight from the lists (first that holds it)."""
    lists = {k: set(v) for k, v in report.items()}
    truth = {}
    for i in VERIFIED:
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
            if "generated" in lists and i not in lists["generated"]:
                truth[i] = "not_submitted"
            elif "with_logs" in lists and i not in lists["with_logs"]:
                truth[i] = "no_logs"
            elif "applied" in lists and i not in lists["applied"]:
                truth[i] = "no_test_output"
            else:
                truth[i] = "unresolved"
    return truth


STATUS_OF = {
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


def test_bundled_verified_list():
    assert len(VERIFIED) == len(set(VERIFIED)) == 500
    assert instance_list("verified") == VERIFIED
    assert all(be.readers.swebench.repository(i) for i in VERIFIED)


def test_bundled_lite_list_and_split_inference(tmp_path):
    lite = instance_list("lite")
    assert len(lite) == len(set(lite)) == 300 and lite == sorted(lite)
    assert all(be.readers.swebench.repository(i) for i in lite)
    both = sorted(set(lite) & set(VERIFIED))
    only_lite = sorted(set(lite) - set(VERIFIED))
    # a report under evaluation/lite/ counts against the Lite list
    folder = tmp_path / "evaluation" / "lite" / "20240101_x" / "results"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(
        json.dumps({"no_generation": only_lite[:2], "no_logs": [], "resolved": only_lite[2:5]})
    )
    data = br.read_swebench(folder / "results.json", missing="fail")
    assert sorted(data.tasks) == lite
    assert int(data.dataset["successes"].sum()) == 3
    assert status_row(data, "20240101_x") == {"ok": 298, "invalid": 2}
    # away from a split folder: ids of Lite only -> Lite; ids in both lists -> refused
    alone = tmp_path / "x.json"
    alone.write_text((folder / "results.json").read_text())
    assert sorted(br.read_swebench(alone, missing="fail").tasks) == lite
    alone.write_text(json.dumps({"no_generation": both[:1], "resolved": both[1:3]}))
    with pytest.raises(
        ValueError,
        match=r"x\.json.*fit the bundled lists \['verified', "
        r"'lite'\] alike.*instances=",
    ):
        br.read_swebench(alone)
    alone.write_text(json.dumps({"no_generation": ["a__b-1"], "resolved": ["a__b-2"]}))
    with pytest.raises(ValueError, match=r"not all in any bundled list.*full test split"):
        br.read_swebench(alone)
    test_split = tmp_path / "evaluation" / "test" / "run" / "results"
    test_split.mkdir(parents=True)
    (test_split / "results.json").write_text(alone.read_text())
    with pytest.raises(ValueError, match=r"'full' split.*does not bundle.*instances="):
        br.read_swebench(test_split / "results.json")


def test_classic_reports_against_the_verified_list():
    data = br.read(CLASSIC, missing="fail")
    assert data.systems == ["20240620_agent-a", "20240701_agent-b"]
    assert sorted(data.tasks) == sorted(VERIFIED)
    successes = data.dataset["successes"].to_pandas()
    for path in (CLASSIC_A, CLASSIC_B):
        report = json.loads(path.read_text())
        system = path.parent.parent.name
        truth = classic_truth(report)
        # every instance counts; successes are exactly the resolved list
        assert int(successes.loc[system].sum()) == len(set(report["resolved"]))
        assert {t for t in VERIFIED if successes.loc[system, t]} == set(report["resolved"])
        raw = pd.Series(truth).value_counts().to_dict()
        expected = pd.Series(truth).map(STATUS_OF).value_counts().to_dict()
        assert status_row(data, system) == expected
        read_back = {}
        for (r, s), n in mapped(data, system).items():
            assert STATUS_OF[r] == s
            read_back[r] = n
        assert read_back == raw
    # agent-a: the install failures are statuses, not failures, and the report says so
    assert "install_fail: 12 -> error" in br.mapping_report(data)
    assert "denominator 500 instances" in br.mapping_report(data)
    assert status_row(data, "20240620_agent-a")["not_run"] == 10


def test_classic_reports_need_a_policy_and_pair_on_the_same_tasks():
    with pytest.raises(ValueError, match="missing"):
        br.read(CLASSIC)
    data = br.read(CLASSIC, missing="exclude")
    trials = data.dataset["trials"].to_pandas()
    both = ((trials > 0).sum(axis=0) == 2).sum()
    truth_a = classic_truth(json.loads(CLASSIC_A.read_text()))
    truth_b = classic_truth(json.loads(CLASSIC_B.read_text()))
    assert both == sum(
        STATUS_OF[truth_a[i]] == "ok" and STATUS_OF[truth_b[i]] == "ok" for i in VERIFIED
    )


def test_classic_status_map_overrides_and_instances(tmp_path):
    plain = br.read_swebench(
        CLASSIC_A, missing="fail", status_map={"install_fail": "ok", "no_generation": "ok"}
    )
    report = json.loads(CLASSIC_A.read_text())
    counts = status_row(plain, "20240620_agent-a")
    truth = pd.Series(classic_truth(report)).value_counts()
    assert counts["error"] == truth["reset_failed"] + truth["test_errored"]
    assert counts["ok"] == (
        truth["resolved"] + truth["unresolved"] + truth["install_fail"] + truth["no_generation"]
    )
    assert truth["install_fail"] == len(set(report["install_fail"]) - set(report["resolved"]))
    # instances= as a list and as a file, away from the split folder
    copy = tmp_path / "agent.json"
    copy.write_text(CLASSIC_B.read_text())
    ids = tmp_path / "ids.txt"
    ids.write_text("\n".join(VERIFIED) + "\n")
    by_file = br.read_swebench(copy, instances=ids, missing="fail")
    by_name = br.read_swebench(copy, instances="verified", missing="fail")
    assert by_file.fingerprint() == by_name.fingerprint()
    # away from a split folder, the one bundled list holding all its ids is the denominator
    listed = {i for v in json.loads(CLASSIC_B.read_text()).values() for i in v}
    assert listed <= set(VERIFIED) and not listed <= set(instance_list("lite"))
    inferred = br.read_swebench(copy, missing="fail")
    assert inferred.fingerprint() == by_name.fingerprint()
    assert "the bundled verified list, the only one holding all" in br.mapping_report(inferred)
    with pytest.raises(ValueError, match=r"not in the benchmark.*251 more|not in the benchmark"):
        br.read_swebench(copy, instances=VERIFIED[:100])
    with pytest.raises(ValueError, match=r"not in the benchmark's instance list \(300 ids\)"):
        br.read_swebench(copy, instances="lite")
    with pytest.raises(ValueError, match="neither a bundled list"):
        br.read_swebench(copy, instances="full")


def test_classic_folder_refuses_two_reports_of_one_system(tmp_path):
    for run in ("x", "y"):
        folder = tmp_path / "evaluation" / "verified" / run / "results"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(CLASSIC_B.read_text())
    with pytest.raises(ValueError, match=r"two reports claim system 'x'|claim system"):
        br.read_swebench(tmp_path, system="x", missing="fail")
    data = br.read_swebench(tmp_path, missing="fail")  # named by their folders: fine
    assert data.systems == ["x", "y"]


# -- Multi-SWE-bench (SWE-bench-java) reports ------------------------------------------------
def test_multi_swebench_genuine_reports():
    data = br.read(MULTI, missing="fail")
    for path in sorted(MULTI.rglob("results.json")):
        report = json.loads(path.read_text())
        system = path.parent.parent.name
        resolved = set(report.get("resolved_ids", report.get("resolved")))
        assert len(resolved) == report["resolved_instances"]
        n_incomplete = len(report["incomplete_ids"])
        listed = (
            resolved
            | set(report["unresolved_ids"])
            | set(report["empty_patch_ids"])
            | set(report["error_ids"])
            | set(report["incomplete_ids"])
        )
        counts = status_row(data, system)
        assert counts.get("not_run", 0) == n_incomplete + (91 - len(listed))
        assert counts.get("ok", 0) == len(resolved) + len(report["unresolved_ids"]) + len(
            report["empty_patch_ids"]
        )
        assert int(data.dataset["successes"].to_pandas().loc[system].sum()) == len(resolved)
    assert len(data.tasks) == 91


# -- Terminal-Bench --------------------------------------------------------------------------
def test_terminal_bench_genuine_run():
    run = TB / "openhands-sonnet"
    raw = pd.DataFrame(json.loads((run / "results.json").read_text())["results"])
    meta = json.loads((run / "run_metadata.json").read_text())
    system = f"{meta['agent_name']} ({meta['model_name']})"
    data = br.read(run / "results.json", missing="fail")
    assert data.systems == [system]
    assert sorted(data.tasks) == sorted(raw["task_id"].unique())
    assert int(data.dataset["successes"].sum()) == int((raw["is_resolved"] == True).sum())  # noqa: E712
    null = raw[raw["is_resolved"].isna()]
    assert len(null) == 3
    status = {"parse_error": "invalid", "test_timeout": "timeout"}
    expected = null["failure_mode"].map(status).value_counts().to_dict()
    expected["ok"] = int(raw["is_resolved"].notna().sum())
    assert status_row(data, system) == expected
    families = {t: t.split(".")[0] for t in raw["task_id"]}
    assert dict(zip(data.tasks, data.dataset["cluster"].values, strict=True)) == families
    # an agent timeout whose tests ran keeps its verdict
    timeouts = raw[(raw["failure_mode"] == "agent_timeout") & raw["is_resolved"].notna()]
    assert mapped(data, system)[("agent_timeout", "ok")] == len(timeouts)


def test_terminal_bench_runs_of_one_system(tmp_path):
    with pytest.raises(ValueError, match="two runs claim system 'openhands"):
        br.read(TB, missing="fail")
    runs = {"openhands": [TB / "openhands-sonnet", TB / "openhands-sonnet2"]}
    data = br.read_terminal_bench(runs, missing="fail")
    first = pd.DataFrame(json.loads((TB / "openhands-sonnet/results.json").read_text())["results"])
    second = pd.DataFrame(
        json.loads((TB / "openhands-sonnet2/results.json").read_text())["results"]
    )
    both = pd.concat([first, second])
    attempts = data.dataset["attempts"].to_pandas().loc["openhands"]
    assert attempts.to_dict() == both.groupby("task_id").size().to_dict()
    assert int(data.dataset["successes"].sum()) == int((both["is_resolved"] == True).sum())  # noqa: E712
    # null verdicts are never failures, whatever the clusters
    flat = br.read_terminal_bench(TB / "openhands-sonnet", cluster=None, missing="exclude")
    assert int(flat.dataset["trials"].sum()) == int(first["is_resolved"].notna().sum())
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"results": [{"task_id": "a", "is_resolved": "yes"}]}))
    with pytest.raises(ValueError, match=r"results\.json.*'yes'.*true, false or null"):
        br.read_terminal_bench(bad)


# -- τ-bench ---------------------------------------------------------------------------------
def test_tau_bench_genuine_trajectories(tmp_path):
    raw = pd.DataFrame(json.loads(TAU.read_text()))
    data = br.read(TAU)
    assert data.systems == ["gpt-4o-airline"]
    successes = data.dataset["successes"].to_pandas().loc["gpt-4o-airline"]
    truth = raw.assign(ok=raw["reward"] >= 1.0).groupby("task_id")["ok"].sum()
    assert successes.to_dict() == truth.astype(int).to_dict()
    assert data.dataset["trials"].values.tolist() == [[4] * raw["task_id"].nunique()]
    no_info = int(raw["info"].map(lambda i: i.get("reward_info") is None).sum())
    assert mapped(data, "gpt-4o-airline").get(("no_reward_info", "ok"), 0) == no_info == 1
    assert "success = reward >= 1" in br.mapping_report(data)
    # an episode that raised has no outcome
    episodes = json.loads(TAU.read_text())
    episodes[0]["info"] = {"error": "RateLimitError", "traceback": "..."}
    broken = tmp_path / "gpt-4o-airline.json"
    broken.write_text(json.dumps(episodes))
    with pytest.raises(ValueError, match="missing"):
        br.read_tau_bench(broken)
    assert status_row(br.read_tau_bench(broken, missing="fail"), "gpt-4o-airline")["error"] == 1
    with pytest.raises(TypeError, match="threshold"):
        br.read_tau_bench(TAU, threshold="high")


# -- detection ----------------------------------------------------------------------------
EXPECTED_FORMAT = {
    "swebench": "swebench",
    "swebench_classic": "swebench",
    "multi_swebench": "swebench",
    "terminal_bench": "terminal_bench",
    "tau_bench": "tau_bench",
    "humaneval": "humaneval",
    "lm_eval": "lm_eval",
    "lm_eval_continuous": "lm_eval",
    "lm_eval_results": "lm_eval",
    "swebench_docker": "swebench",
    "table": "table",
    "helm": "helm",
    "inspect": "inspect",
    "bigcodebench": "humaneval",
    "tau2_bench": "tau2_bench",
    "harbor": "harbor",
}
#: Metadata beside results, not results themselves.
METADATA = ("run_metadata.json", "run_spec.json")


def test_every_fixture_is_detected_as_its_own_format():
    seen = set()
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix in (".md",) or path.name in METADATA:
            continue
        folder = path.relative_to(FIXTURES).parts[0]
        if path.name.startswith("resolved_by_"):
            with pytest.raises(ValueError, match="summary"):
                br.detect_format(path)
            continue
        if path.name.endswith("_pass_at_k.json"):  # BigCodeBench's aggregate: not results
            with pytest.raises(ValueError, match="match no known format"):
                br.detect_format(path)
            continue
        if folder == "harbor" and path.name == "config.json":  # a job's or trial's settings
            with pytest.raises(ValueError, match="config.json of a Harbor job or trial"):
                br.detect_format(path)
            continue
        if folder == "bigcodebench" and path.suffix == ".jsonl":  # samples not scored yet
            with pytest.raises(ValueError, match="not scored yet"):
                br.detect_format(path)
            continue
        assert br.detect_format(path) == EXPECTED_FORMAT[folder], path
        seen.add(folder)
    assert seen == set(EXPECTED_FORMAT)
    for folder in (
        "swebench_classic",
        "swebench_docker",
        "multi_swebench",
        "terminal_bench",
        "lm_eval",
        "lm_eval_results",
        "helm",
        "inspect",
        "bigcodebench",
        "tau2_bench",
        "harbor",
    ):
        assert br.detect_format(FIXTURES / folder) == EXPECTED_FORMAT[folder]


def test_unknown_json_names_its_keys_and_the_known_formats(tmp_path):
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"score": 3, "model": "m"}))
    with pytest.raises(
        ValueError,
        match=r"odd\.json.*\['model', 'score'\].*terminal_bench, "
        r"tau_bench, tau2_bench, helm",
    ):
        br.detect_format(odd)
    # a results-like object that is no harness's results: its keys, not a guess
    near = tmp_path / "near.json"
    near.write_text(json.dumps({"results": {"acc": 0.5}, "model": "m"}))
    with pytest.raises(ValueError, match=r"near\.json.*\['model', 'results'\] match no known"):
        br.detect_format(near)


def test_unscored_humaneval_samples_are_not_sent_to_lm_eval(tmp_path):
    samples = tmp_path / "samples_humaneval.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "pass"}) + "\n")
    with pytest.raises(ValueError, match="not scored.*evaluate_functional_correctness"):
        br.detect_format(samples)


# -- robustness -------------------------------------------------------------------------------
def test_bad_files_are_refused_naming_the_path(tmp_path):
    table = tmp_path / "runs.csv.gz"
    rows = "".join(f"A,t{i},{i % 2}\n" for i in range(5000)).encode()
    whole = gzip.compress(b"system,task,success\n" + rows)
    table.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match=r"runs\.csv\.gz"):
        br.read_table(table)
    notgz = tmp_path / "plain.csv.gz"
    notgz.write_text("system,task,success\nA,t1,1\n")
    with pytest.raises(ValueError, match=r"plain\.csv\.gz"):
        br.read_table(notgz)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"deep\.json.*nested too deeply"):
        br.detect_format(deep)
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(ValueError, match=r"garbage\.json"):
        br.detect_format(garbage)
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"resolved": ["caf\u00e9"]}'.encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.json.*not UTF-8"):
        br.read_swebench(latin)
    with pytest.raises(ValueError, match=r"latin\.json.*not UTF-8"):
        br.detect_format(latin)


def _bytes_read() -> int | None:
    """Bytes this process has read through read() calls so far (Linux), else None."""
    try:
        with open("/proc/self/io") as handle:
            return int(next(line for line in handle if line.startswith("rchar")).split()[1])
    except (OSError, StopIteration):
        return None


_NUL_CASES = [
    ("runs.csv", "a CSV table", [br.read, br.read_table, be.read_csv]),
    ("runs.tsv", "a TSV table", [br.read, br.read_table]),
    ("runs.jsonl", "a JSON-lines file", [br.read, br.read_table, br.read_humaneval]),
    ("results.json", "a JSON file", [br.read, br.read_table, br.read_swebench, br.read_tau_bench]),
    ("runs.csv.gz", "a CSV table", [br.read, br.read_table, be.read_csv]),
]


@pytest.mark.parametrize("name, expected, readers", _NUL_CASES, ids=[c[0] for c in _NUL_CASES])
def test_a_file_of_nul_bytes_is_refused_from_its_head(tmp_path, name, expected, readers):
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(bytes(2**20)))
    else:
        with open(path, "wb") as handle:
            handle.truncate(64 * 2**20)  # 64 MiB of NUL bytes, sparse: parsed in full before
    for reader in readers:
        before = _bytes_read()
        with pytest.raises(ValueError) as err:
            reader(path)
        after = _bytes_read()
        message = str(err.value)
        assert f"'{path}' is not {expected}" in message, (reader, message)
        assert "NUL byte at byte 0 (a binary file?)" in message, (reader, message)
        if before is not None and after is not None:
            assert after - before < 2**20, reader  # the head, not the file


def test_the_command_refuses_a_binary_table_naming_it(tmp_path):
    from click.testing import CliRunner

    from bayeval import cli

    path = tmp_path / "runs.csv"
    with open(path, "wb") as handle:
        handle.truncate(64 * 2**20)
    result = CliRunner().invoke(cli.main, ["analyze", str(path)])
    assert result.exit_code == 2
    assert f"'{path}' is not a CSV table: it holds a NUL byte at byte 0" in result.output
    status_map = tmp_path / "statuses.json"
    status_map.write_bytes(b"\xff\xfe{}")
    table = tmp_path / "ok.csv"
    table.write_text("system,task,success\nA,t1,1\n")
    result = CliRunner().invoke(cli.main, ["analyze", str(table), "--status-map", str(status_map)])
    assert result.exit_code == 2 and "--status-map" in result.output
    assert "statuses.json' is not a JSON file" in result.output
    result = CliRunner().invoke(cli.main, ["analyze", str(table), "--flagged", str(path)])
    assert result.exit_code == 2
    assert f"--flagged: '{path}' is not a list of task ids: it holds a NUL byte" in result.output
    items = tmp_path / "items.csv"
    items.write_text("id,text\n1,some words\n")
    result = CliRunner().invoke(cli.main, ["overlap", str(items), str(path)])
    assert result.exit_code == 2
    assert f"'{path}' is not a text or JSON-lines corpus: it holds a NUL" in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_not_read(tmp_path):
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"results\.json.*FIFO"):
        br.detect_format(fifo)
    with pytest.raises(ValueError, match="FIFO"):
        br.read_swebench(fifo)


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="permissions do not bind the superuser"
)
def test_an_unreadable_folder_is_reported(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    folder.chmod(0)
    try:
        with pytest.raises(PermissionError, match=r"runs.*cannot be read"):
            br.read_swebench(folder)
    finally:
        folder.chmod(0o755)


def test_mapping_needs_reader_data():
    with pytest.raises(ValueError, match="not made by a bayeval reader"):
        br.mapping(be.from_counts([[1, 2]], trials=2))
    assert np.isfinite(br.read(TAU).coverage.iloc[0])


def test_cli_analyze_a_folder_of_classic_reports():
    from click.testing import CliRunner

    from bayeval import cli

    args = [
        "analyze",
        str(CLASSIC),
        "--compare",
        "20240701_agent-b",
        "20240620_agent-a",
        "--sampler",
        "grid",
        "--draws",
        "200",
        "--chains",
        "2",
        "--n-boot",
        "500",
    ]
    refused = CliRunner().invoke(cli.main, args)
    assert refused.exit_code != 0
    assert "--missing" in refused.output and "'install_fail': 12" in refused.output
    done = CliRunner().invoke(cli.main, [*args, "--missing", "bounds"])
    assert done.exit_code == 0, done.output
    assert "20240701_agent-b - 20240620_agent-a" in done.output
    assert "'error': 18" in done.output and "'timeout': 4" in done.output
    # what the reader mapped is printed before any number
    assert done.output.index("install_fail: 12 -> error") < done.output.index("pass@1")
