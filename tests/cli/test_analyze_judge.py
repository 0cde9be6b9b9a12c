"""``bayeval analyze`` of judged data: the judge section in the output, the JSON and the report."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import special

from bayeval import cli
from bayeval.report._format import _interval, _signed


def test_analyze_judged_data_prints_and_writes_the_judge_section(tmp_path):
    rng = np.random.default_rng(7)
    difficulty = rng.normal(0.0, 1.0, 30)
    frames = []
    for system, false_pass in (("A", 0.1), ("B", 0.4)):
        y = rng.random((30, 2)) < special.expit(difficulty)[:, None]
        verdict = np.where(y, rng.random(y.shape) < 0.9, rng.random(y.shape) < false_pass)
        frames.append(
            pd.DataFrame(
                {
                    "system": system,
                    "task": np.repeat(np.arange(30), 2),
                    "verdict": verdict.ravel().astype(int),
                    "human": np.where(rng.random(y.shape) < 0.4, y, np.nan).ravel(),
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    path, out, card = tmp_path / "judged.csv", tmp_path / "out.json", tmp_path / "card.md"
    df.to_csv(path, index=False)
    args = ["analyze", str(path), "--judge", "verdict", "--success", "human"]
    args += ["--label-design", "random", "--compare", "B", "A", "--n-boot", "200"]
    args += ["--draws", "100", "--tune", "100", "--chains", "1"]
    result = CliRunner().invoke(cli.main, [*args, "--json", str(out), "--report", str(card)])
    assert result.exit_code == 0, result.output
    section = json.loads(out.read_text())["judge"]
    assert section["judge"] == "verdict" and section["unit"] == "task"
    rows = {row["quantity"]: row for row in section["pairs"][0]["rows"]}
    verdicts = df.groupby("system")["verdict"].mean()
    assert rows["judge_only"]["estimate"] == pytest.approx(verdicts["B"] - verdicts["A"])
    report = card.read_text()
    for row in rows.values():
        number = f"{_signed(row['estimate'])} {_interval(row['lower'], row['upper'])}"
        for text in (result.output, report):
            assert any(row["label"] in x and number in x for x in text.splitlines()), number


@pytest.mark.filterwarnings("ignore:the MCMC diagnostics fail")
def test_analyze_with_two_judges_fits_them_jointly(tmp_path):
    rng = np.random.default_rng(8)
    frames = []
    for system, false_pass in (("A", 0.1), ("B", 0.4)):
        y = rng.random((25, 2)) < 0.6
        frames.append(
            pd.DataFrame(
                {
                    "system": system,
                    "task": np.repeat(np.arange(25), 2),
                    "lenient": np.where(
                        y, rng.random(y.shape) < 0.9, rng.random(y.shape) < false_pass
                    )
                    .ravel()
                    .astype(int),
                    "strict": np.where(y, rng.random(y.shape) < 0.7, rng.random(y.shape) < 0.05)
                    .ravel()
                    .astype(int),
                    "human": np.where(rng.random(y.shape) < 0.4, y, np.nan).ravel(),
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    path, out = tmp_path / "judged.csv", tmp_path / "out.json"
    df.to_csv(path, index=False)
    args = ["analyze", str(path), "--judge", "lenient", "--judge", "strict", "--success", "human"]
    args += ["--label-design", "random", "--compare", "B", "A", "--n-boot", "100"]
    args += ["--draws", "100", "--tune", "100", "--chains", "1", "--json", str(out)]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    section = json.loads(out.read_text())["judge"]
    assert section["judges"] == ["lenient", "strict"]
    assert {(r["judge"], r["system"]) for r in section["rows"]} == {
        (j, s) for j in ("lenient", "strict") for s in ("A", "B")
    }
    for row in section["rows"]:  # each judge's own share of verdicts 1, from its own column
        share = df.loc[df["system"] == row["system"], row["judge"]].mean()
        assert row["judge_rate"] == pytest.approx(share)
    assert "judges 'lenient, strict' (fitted jointly" in result.output
