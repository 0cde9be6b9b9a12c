"""What ``analyze`` and ``gate`` print of a decision: its bound, its test, and a fit's gates."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
from bayeval import cli
from bayeval.planning import decide
from bayeval.resampling import bootstrap_p_value
from tests.helpers import ROOT

GRID = [
    "--model",
    "hierarchical",
    "--sampler",
    "grid",
    "--draws",
    "200",
    "--chains",
    "2",
    "--n-boot",
    "2000",
]
# two SWE-bench systems whose paired task bootstrap puts share > 0 above 0.95 while its
# two-sided 95% interval holds 0 (tests/test_planning_decisions.py)
PAIR = ("20250807_mini-v1.7.0_gpt-5", "20251124_mini-v1.17.0_minimax-m2")
FAILING = {
    "max_rhat": 1.036,
    "max_rhat_parameter": "sigma_task",
    "min_ess_bulk": 45.0,
    "min_ess_tail": 310.0,
    "divergences": 34,
    "min_bfmi": 0.9,
}


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


@pytest.fixture(scope="module")
def swe_pair(tmp_path_factory):
    frame = pd.read_csv(ROOT / "data" / "swebench_verified_mini_swe_agent.csv")
    path = tmp_path_factory.mktemp("decisions") / "pair.csv"
    frame[frame["system"].isin(PAIR)][["system", "task", "cluster", "success"]].to_csv(
        path, index=False
    )
    return path


@pytest.fixture
def failing_fit(monkeypatch):
    """Every fit the command runs comes back with the convergence summary of a failed fit."""
    fit = be.fit

    def failed(*args, **kwargs):
        res = fit(*args, **kwargs)
        tree = res.tree
        tree.attrs["diagnostics"] = json.dumps(FAILING)
        return type(res)(tree)

    monkeypatch.setattr(be, "fit", failed)


def test_analyze_prints_each_decision_with_the_bound_it_used(swe_pair, tmp_path):
    json_path = tmp_path / "out.json"
    result = invoke("analyze", swe_pair, "--compare", *PAIR, *GRID, "--json", json_path)
    assert result.exit_code == 0, result.output
    out = json.loads(json_path.read_text())
    (entry,) = out["comparisons"]
    task = next(b for b in entry["bootstrap"] if b["unit"] == "task")
    (row,) = task["rows"]
    decision = task["decision"]
    # the row: a two-sided interval holding 0 and a two-sided p above 0.05; the decision:
    # the one-sided bound above 0 and the one-sided p it rests on
    assert row["lower"] <= 0 < row["upper"] and row["p_value"] > 0.05
    assert decision["decision"] == "non-inferior" and decision["lower"] > 0
    replicates = be.bootstrap.compare(
        be.read_csv(swe_pair), *PAIR, n_boot=out["settings"]["report"]["n_boot"], seed=0
    )["effect"].values
    assert decision["p_value"] == bootstrap_p_value(replicates, alternative="greater")
    assert decision["statement"] == decide(replicates, resampled=True).attrs["statement"]
    assert f"    decision: {decision['statement']}\n" in result.output
    assert "(two-sided), share > 0 = 0.968, p = 0.065 (two-sided, no effect)" in result.output
    posterior = entry["bayes"]["decision"]
    assert f"    decision: {posterior['statement']}\n" in result.output
    assert posterior["statement"].startswith("inconclusive: one-sided 95% bounds [")
    assert not entry["bayes"]["gates_failed"] and out["diagnostics"]["gates_passed"]
    assert "FLAGGED" not in result.output


def test_gate_superior_prints_the_one_sided_bound_beside_the_interval(swe_pair):
    args = ("gate", swe_pair, "--compare", *PAIR, "--margin", 0, "--superior", *GRID)
    result = invoke(*args)
    assert result.exit_code == 3, result.output
    assert (
        "paired bootstrap (task): +0.0400 [-0.002, 0.080] (two-sided), decision superior: "
        "one-sided 95% lower bound +0.004 > 0; one-sided p = 0.03" in result.output
    )
    assert "UNDECIDED: inconclusive: one-sided 95% bounds [" in result.output


def test_gate_exits_3_on_a_fit_that_failed_its_gates(swe_pair, tmp_path, failing_fit):
    json_path, report_path = tmp_path / "gate.json", tmp_path / "gate.md"
    args = ("gate", swe_pair, "--compare", *PAIR, "--margin", 0.05, *GRID)
    result = invoke(*args, "--json", json_path, "--report", report_path)
    assert result.exit_code == 3, result.output
    assert (
        "UNDECIDED: undecided (the fit failed its MCMC gates: 34 divergent transitions; "
        "r-hat up to 1.036 in sigma_task (gate 1.01); bulk ESS down to 45 (gate 200). "
        "Increase draws and tune" in result.output
    )
    assert "FLAGGED: the fit failed its MCMC gates" in result.output
    assert "posterior effect (FLAGGED) +0.04" in result.output
    out = json.loads(json_path.read_text())
    assert out["gate"]["exit_code"] == 3 and out["gate"]["verdict"] == "UNDECIDED"
    assert out["gate"]["gates_passed"] is False
    assert out["gate"]["gates_failed"] == ["divergences", "max_rhat", "min_ess_bulk"]
    assert out["diagnostics"]["gates_failed"] == out["gate"]["gates_failed"]
    # the bootstrap does not read the fit: its decisions stand
    assert all(b["decision"]["decided"] for b in out["comparisons"][0]["bootstrap"][:1])
    text = report_path.read_text()
    assert "**The fit failed its MCMC gates: 34 divergent transitions" in text
    assert "| posterior ⚠ (fit failed its gates) |" in text
    assert "**Failed gates: divergences, max\\_rhat, min\\_ess\\_bulk.**" in text


def test_the_same_data_pass_the_gate_when_the_fit_passes(swe_pair):
    result = invoke("gate", swe_pair, "--compare", *PAIR, "--margin", 0.05, *GRID)
    assert result.exit_code == 0, result.output
    assert "PASS: non-inferior: one-sided 95% lower bound" in result.output


def test_analyze_flags_the_posterior_of_a_fit_that_failed_its_gates(swe_pair, failing_fit):
    result = invoke("analyze", swe_pair, "--compare", *PAIR, "--margin", 0.05, *GRID)
    assert result.exit_code == 0, result.output  # analyze reports; gate decides the exit
    assert "FLAGGED: the fit failed its MCMC gates: 34 divergent transitions" in result.output
    assert "pass@1 posterior (FLAGGED)" in result.output
    assert "  posterior (the hierarchical model" in result.output
    assert "FLAGGED (the fit failed its MCMC gates):" in result.output
    assert "    decision: undecided (the fit failed its MCMC gates: 34" in result.output


@pytest.fixture(scope="module")
def swe_leaders(tmp_path_factory):
    frame = pd.read_csv(ROOT / "data" / "swebench_verified_mini_swe_agent.csv")
    leaders = frame.groupby("system")["success"].mean().nlargest(4).index
    path = tmp_path_factory.mktemp("leaders") / "leaders.csv"
    frame[frame["system"].isin(leaders)][["system", "task", "success"]].to_csv(path, index=False)
    return path


def test_rank_prints_the_winner_with_each_number_beside_its_estimand(swe_leaders, tmp_path):
    json_path = tmp_path / "ranks.json"
    result = invoke("rank", swe_leaders, *GRID, "--json", json_path)
    assert result.exit_code == 0, result.output
    win = json.loads(json_path.read_text())["winner"]
    # the optimism is the naive score minus the posterior over these tasks, both printed
    assert win["optimism"] == pytest.approx(win["naive_score"] - win["tasks_value_mean"])
    assert (
        f"  over these tasks: naive {win['naive_score']:.3f}, posterior "
        f"{win['tasks_value_mean']:.3f} [{win['tasks_value_lower']:.3f}, "
        f"{win['tasks_value_upper']:.3f}], optimism " in result.output
    )
    assert (
        f"  population estimand: posterior {win['value_mean']:.3f} [{win['value_lower']:.3f}, "
        f"{win['value_upper']:.3f}], P(it is the best) = {win['prob_pick_is_best']:.3f} "
        "(ties count as best)" in result.output
    )
    assert "-0.000" not in result.output and "FLAGGED" not in result.output


def test_rank_flags_a_fit_that_failed_its_gates(swe_leaders, failing_fit, tmp_path):
    json_path = tmp_path / "ranks.json"
    result = invoke("rank", swe_leaders, *GRID, "--json", json_path)
    assert result.exit_code == 0, result.output
    assert "FLAGGED: the fit failed its MCMC gates: 34 divergent transitions" in result.output
    assert "FLAGGED (the fit failed its MCMC gates)" in result.output  # the winner line
    out = json.loads(json_path.read_text())
    assert out["gates_passed"] is False
    assert out["gates_failed"] == ["divergences", "max_rhat", "min_ess_bulk"]
