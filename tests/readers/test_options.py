"""Reading a table of one system, and reader options spelled on the command line."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
import bayeval.readers as br
from bayeval import cli
from tests import helpers
from tests.readers.test_genuine import derived_run

FIXTURES = helpers.FIXTURES / "readers"
TB_RUN = FIXTURES / "terminal_bench" / "openhands-sonnet"
FAST = [
    "--model",
    "hierarchical",
    "--sampler",
    "grid",
    "--draws",
    "200",
    "--chains",
    "2",
    "--n-boot",
    "200",
]


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def analyze_json(*args):
    """``bayeval analyze ... --json -``: (the JSON document, the reading lines)."""
    result = invoke("analyze", *args, *FAST, "--json", "-")
    assert result.exit_code == 0, result.output
    start = result.stdout.index("{")
    payload = json.loads(result.stdout[start:])
    return payload, payload["input"]["lines"]


def one_system_table(tmp_path, name="runs.csv"):
    """A table of one system (task, trial, success; no system column), and its frame."""
    frame = pd.DataFrame(
        {
            "task": ["t1", "t1", "t2", "t2", "t3", "t3", "t4", "t4"],
            "trial": [0, 1] * 4,
            "success": [1, 0, 1, 1, 0, 0, 1, 0],
        }
    )
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path, frame


# -- a table of one system -------------------------------------------------------------------
def test_from_frame_reads_one_system_without_a_system_column(tmp_path):
    path, _ = one_system_table(tmp_path)
    raw = pd.read_csv(path)
    before = raw.copy()
    data = be.from_frame(raw, system=None, system_name="my-model", trial="trial")
    pd.testing.assert_frame_equal(raw, before)  # never modified
    assert data.systems == ["my-model"]
    expected = raw.groupby("task")["success"].agg(["sum", "size"])
    assert list(data.tasks) == expected.index.tolist()
    assert data.dataset["successes"].values.tolist() == [expected["sum"].tolist()]
    assert data.dataset["trials"].values.tolist() == [expected["size"].tolist()]
    # uniqueness is still checked, on (task, trial) alone
    with pytest.raises(ValueError, match=r"duplicate outcome rows: columns \['task', 'trial'\]"):
        be.from_frame(pd.concat([raw, raw]), system=None, system_name="m", trial="trial")


def test_from_frame_one_system_is_refused_when_ambiguous(tmp_path):
    _, raw = one_system_table(tmp_path)
    with pytest.raises(TypeError, match=r"system=None .* system_name= .*got system_name=None"):
        be.from_frame(raw, system=None)
    with pytest.raises(TypeError, match=r"system_name= names the one system .* column 'system'"):
        be.from_frame(raw.assign(system="A"), system_name="m")
    with pytest.raises(ValueError, match=r"has a 'system' column"):
        be.from_frame(raw.assign(system=["A", "B"] * 4), system=None, system_name="m")


def test_cli_reads_a_table_without_a_system_column_as_one_system(tmp_path):
    path, _ = one_system_table(tmp_path)
    raw = pd.read_csv(path)
    payload, lines = analyze_json(path)
    assert (
        "no system column: one system, named 'runs' after the file; --system-name NAME names it"
    ) in lines
    assert payload["data"]["systems"] == ["runs"]
    assert payload["data"]["n_tasks"] == raw["task"].nunique()
    assert payload["data"]["status_counts"][0]["system"] == "runs"
    assert payload["data"]["status_counts"][0]["ok"] == len(raw)
    named, lines = analyze_json(path, "--system-name", "my-model")
    assert "no system column: one system, named 'my-model' (--system-name)" in lines
    assert named["data"]["systems"] == ["my-model"]
    # a compressed table is named after its stem too
    gz = tmp_path / "other.csv.gz"
    raw.to_csv(gz, index=False)
    assert analyze_json(gz)[0]["data"]["systems"] == ["other"]


def test_cli_refuses_a_system_like_column_it_did_not_detect(tmp_path):
    _, raw = one_system_table(tmp_path)
    alike = tmp_path / "models.csv"
    raw.assign(model=["A", "B"] * 4).to_csv(alike, index=False)
    result = invoke("analyze", alike, *FAST)
    assert result.exit_code == 2
    assert "'model' looks like one" in result.output
    assert "--system model" in result.output and "--system none" in result.output
    # naming it reads two systems; --system none reads one, on purpose
    assert analyze_json(alike, "--system", "model")[0]["data"]["systems"] == ["A", "B"]
    one = analyze_json(alike, "--system", "none", "--system-name", "all")[0]
    assert one["data"]["systems"] == ["all"]
    # --system-name with a system column, --system none with one: refused
    both = tmp_path / "both.csv"
    raw.assign(system=["A", "B"] * 4).to_csv(both, index=False)
    result = invoke("analyze", both, "--system-name", "x", *FAST)
    assert result.exit_code == 2 and "column 'system'" in result.output
    result = invoke("analyze", both, "--system", "none", *FAST)
    assert result.exit_code == 2 and "has a 'system' column" in result.output


# -- reader options on the command line ------------------------------------------------------
def test_reader_option_values_are_typed():
    parse = cli._parse_reader_options
    assert parse(["cluster=none"], "terminal_bench") == {"cluster": None}
    assert parse(["cluster=NULL"], "swebench") == {"cluster": None}
    assert parse(['cluster="none"'], "swebench") == {"cluster": "none"}
    assert parse(["planned_trials=5"], "table") == {"planned_trials": 5}
    assert parse(["threshold=0.5"], "tau_bench") == {"threshold": 0.5}
    assert parse(["instances=verified"], "swebench") == {"instances": "verified"}
    assert parse(['planned_trials={"t1": 3}'], "table") == {"planned_trials": {"t1": 3}}
    value = parse(["stratum_weights=true"], "table")["stratum_weights"]
    assert value is True


def test_reader_option_unknown_or_own_key_is_refused():
    with pytest.raises(
        Exception,
        match=r"read_terminal_bench .* no option 'clusters'; its "
        r"options: cluster, planned_trials",
    ):
        cli._parse_reader_options(["clusters=none"], "terminal_bench")
    with pytest.raises(Exception, match=r"'system' has its own option: use --system-name"):
        cli._parse_reader_options(["system=x"], "terminal_bench")
    with pytest.raises(Exception, match=r"'cluster' has its own option: use --cluster"):
        cli._parse_reader_options(["cluster=none"], "table")
    with pytest.raises(Exception, match=r"looks like JSON but does not parse"):
        cli._parse_reader_options(["instances=[a"], "swebench")
    result = invoke("analyze", TB_RUN / "results.json", "--reader-option", "clusters=none", *FAST)
    assert result.exit_code == 2 and "its options: cluster, planned_trials" in result.output


def _null_verdicts_without_failure_mode(tmp_path):
    """The genuine run with its null-verdict trials' failure modes unset: no_verdict."""
    payload = json.loads((TB_RUN / "results.json").read_text())
    for trial in payload["results"]:
        if trial["is_resolved"] is None:
            trial["failure_mode"] = "unset"
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(payload))
    (run / "run_metadata.json").write_text((TB_RUN / "run_metadata.json").read_text())
    return run / "results.json"


@pytest.mark.parametrize("clusters", [True, False])
def test_terminal_bench_null_verdicts_are_never_failures(tmp_path, clusters):
    raw = pd.DataFrame(json.loads((TB_RUN / "results.json").read_text())["results"])
    meta = json.loads((TB_RUN / "run_metadata.json").read_text())
    system = f"{meta['agent_name']} ({meta['model_name']})"
    null = raw["is_resolved"].isna()
    assert null.sum() == 3
    option = [] if clusters else ["--reader-option", "cluster=none"]
    payload, lines = analyze_json(TB_RUN / "results.json", *option, "--missing", "exclude")
    expected = {
        "ok": int((~null).sum()),
        "invalid": 0,
        "timeout": 0,
        "error": 0,
        "no_verdict": 0,
        "not_run": 0,
    }
    modes = raw.loc[null, "failure_mode"].map({"parse_error": "invalid", "test_timeout": "timeout"})
    for status, count in modes.value_counts().items():
        expected[status] += int(count)
    record = payload["data"]["status_counts"][0]
    assert record["system"] == system
    assert {s: record[s] for s in expected} == expected
    if clusters:
        families = raw["task_id"].str.split(".").str[0].value_counts().to_dict()
        assert payload["data"]["clusters"] == {
            "count": len(families),
            "sizes": [{"cluster": c, "tasks": n} for c, n in families.items()],
        }
    else:
        assert payload["data"]["clusters"] is None
    # without a failure mode, a null verdict is no_verdict, never a failure
    unset = _null_verdicts_without_failure_mode(tmp_path)
    payload, _ = analyze_json(unset, *option, "--missing", "exclude")
    counts = next(r for r in payload["data"]["status_counts"] if r["system"] == system)
    assert counts["no_verdict"] == int(null.sum())
    assert counts["ok"] == int((~null).sum())
    data = br.read_terminal_bench(unset, cluster="family" if clusters else None, missing="exclude")
    assert int(data.dataset["successes"].sum()) == int((raw["is_resolved"] == True).sum())  # noqa: E712
    assert int(data.dataset["trials"].sum()) == int((~null).sum())
    assert int(data.status_counts.loc[system, "no_verdict"]) == int(null.sum())
    assert ("cluster" in data.dataset.coords) is clusters


# -- reader options named as the command line spells them -------------------------------------
def two_split_run(tmp_path):
    """A genuine HELM run with one instance copied into a 'valid' split (the run has only test)."""

    def two_splits(records):
        valid = json.loads(json.dumps(records[:1]))
        valid[0]["instance_id"] = "v1"
        for stat in valid[0]["stats"]:
            stat["name"]["split"] = "valid"
        return records + valid

    run = derived_run(tmp_path, two_splits)
    records = json.loads((run / "per_instance_stats.json").read_text())
    return run, [r["instance_id"] for r in records]


def test_cli_refusals_spell_reader_options_as_options(tmp_path):
    run, _ = two_split_run(tmp_path)
    result = invoke("analyze", run, *FAST)
    assert result.exit_code == 2
    assert "--reader-option split=" in result.output
    assert "with split=" not in result.output  # not the Python keyword


def test_split_takes_several_values(tmp_path):
    run, instances = two_split_run(tmp_path)
    assert list(br.read_helm(run, split=["test", "valid"]).tasks) == instances
    assert list(br.read_helm(run, split=["valid"]).tasks) == ["v1"]
    with pytest.raises(ValueError, match=r"split 'dev' not found.*\['test', 'valid'\]"):
        br.read_helm(run, split=["test", "dev"])
    parse = cli._parse_reader_options
    assert parse(["split=test", "split=valid"], "helm") == {"split": ["test", "valid"]}
    _, lines = analyze_json(run, "--reader-option", "split=test", "--reader-option", "split=valid")
    assert any("read 1 file(s) (helm)" in line for line in lines)
