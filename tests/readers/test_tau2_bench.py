"""read_tau2_bench on genuine τ²-bench results (provenance: tests/fixtures/readers/PROVENANCE.md).

Expected counts are computed here from the raw files with json, never from the reader.
"""

import json

import pytest

import bayeval.readers as br
from bayeval.errors import BayevalWarning
from tests import helpers

TAU2 = helpers.FIXTURES / "readers" / "tau2_bench"
TELECOM = TAU2 / "2025-08-10T02-44-06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json"
AIRLINE = TAU2 / "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json"


def truth(path) -> tuple[str, str, dict]:
    """The agent model, the domain and ``{task: [0/1 per trial]}`` of a results file."""
    run = json.loads(path.read_text())
    out: dict = {}
    for sim in run["simulations"]:
        out.setdefault(sim["task_id"], []).append(int(sim["reward_info"]["reward"] == 1.0))
    info = run["info"]
    return info["agent_info"]["llm"], info["environment_info"]["domain_name"], out


@pytest.mark.parametrize("path", [TELECOM, AIRLINE])
def test_one_results_file(path):
    system, _, outcomes = truth(path)
    assert br.detect_format(path) == "tau2_bench"
    data = br.read(path)
    assert data.systems == [system]
    assert list(data.tasks) == list(outcomes)
    successes = data.dataset["successes"].to_pandas().loc[system].to_dict()
    trials = data.dataset["trials"].to_pandas().loc[system].to_dict()
    assert successes == {t: sum(v) for t, v in outcomes.items()}
    assert trials == {t: len(v) for t, v in outcomes.items()}


def test_two_domains_are_clusters_and_not_a_cross_product():
    runs = [truth(p) for p in (TELECOM, AIRLINE)]
    with pytest.warns(BayevalWarning, match="different task sets"):
        data = br.read_tau2_bench([TELECOM, AIRLINE])
    assert data.systems == [runs[0][0], runs[1][0]]
    expected = [f"{domain}/{t}" for _, domain, outcomes in runs for t in outcomes]
    assert list(data.tasks) == expected
    assert sorted(set(data.dataset["cluster"].values.tolist())) == ["airline", "telecom"]
    assert data.status_counts["not_run"].tolist() == [0, 0]
    for system, _, outcomes in runs:
        assert int(data.dataset["trials"].sel(system=system).sum()) == sum(
            len(v) for v in outcomes.values()
        )


def test_termination_reasons_and_planned_trials(tmp_path):
    # the genuine telecom run, edited: one simulation ended on max_steps, one never ran
    # (infrastructure error) and one is dropped although the run planned it
    run = json.loads(TELECOM.read_text())
    sims = run["simulations"]
    sims[0]["termination_reason"] = "max_steps"
    sims[1]["termination_reason"] = "infrastructure_error"
    dropped = sims.pop(2)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(run))
    with pytest.raises(ValueError, match="missing-outcome policy"):
        br.read_tau2_bench(path)
    data = br.read_tau2_bench(path, missing="exclude", status_map={"max_steps": "timeout"})
    counts = data.status_counts.loc["gpt-4o"]
    assert int(counts["timeout"]) == 1 and int(counts["error"]) == 1
    assert int(counts["not_run"]) == 1
    trials = data.dataset["trials"].to_pandas().loc["gpt-4o"]
    assert int(trials[dropped["task_id"]]) == 0
    assert "have no simulation: not_run" in br.mapping_report(data)


def test_not_a_results_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"simulations": {}}))
    with pytest.raises(ValueError, match="not a τ²-bench results file"):
        br.read_tau2_bench(path)
