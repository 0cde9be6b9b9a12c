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
