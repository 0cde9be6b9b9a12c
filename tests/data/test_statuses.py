"""A policy that leaves a system without any valid outcome is named before any fit."""

import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
from bayeval import cli


def _frame(all_timeout: bool):
    rows = []
    for system in ("A", "B"):
        for j in range(3):
            bad = all_timeout or system == "A"
            rows.append(
                {
                    "system": system,
                    "task": f"t{j}",
                    "success": None if bad else 1,
                    "status": "timeout" if bad else "ok",
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("all_timeout", [False, True])
def test_fit_and_bootstrap_name_the_systems_without_outcomes(all_timeout):
    data = be.from_frame(_frame(all_timeout), status="status", missing="exclude")
    who = "no system has a valid outcome" if all_timeout else r"system\(s\) \['A'\]"
    with pytest.raises(ValueError, match=who + r".*\{'timeout': 3\}"):
        be.fit(data, model="hierarchical")
    with pytest.raises(ValueError, match=who):
        be.bootstrap.pass_at_k(data, n_boot=100)
    assert be.from_frame(_frame(all_timeout), status="status", missing="fail").systems


def test_the_command_line_exits_2_with_the_message(tmp_path):
    _frame(True).to_csv(tmp_path / "runs.csv", index=False)
    out = CliRunner().invoke(
        cli.main,
        ["analyze", str(tmp_path / "runs.csv"), "--missing", "exclude", "--sampler", "grid"],
    )
    assert out.exit_code == 2, out.output
    assert "no system has a valid outcome" in out.output
    assert "zero-size array" not in out.output
