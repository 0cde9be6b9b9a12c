"""The sampler's progress on the command line's stderr when it is not a terminal (a log)."""

import re

import pandas as pd
import pytest
from click.testing import CliRunner

from bayeval import cli
from bayeval.models import progress

SMALL_FIT = ["--model", "logit_normal", "--draws", "40", "--chains", "2", "--tune", "30"]


@pytest.fixture
def counts_csv(tmp_path):
    """Two systems on eight tasks of four trials: a paired fit of a second or so."""
    a = [4, 3, 1, 0, 2, 4, 3, 1]
    b = [3, 3, 0, 1, 2, 2, 4, 0]
    frame = pd.DataFrame(
        {
            "system": ["new"] * 8 + ["old"] * 8,
            "task": [f"t{j}" for j in range(8)] * 2,
            "successes": a + b,
            "trials": 4,
        }
    )
    path = tmp_path / "counts.csv"
    frame.to_csv(path, index=False)
    return path


def _analyze(*options, path):
    args = [*options, "analyze", str(path), "--compare", "new", "old", "--n-boot", "200"]
    return CliRunner().invoke(cli.main, [*args, *SMALL_FIT])


def test_a_piped_fit_writes_progress_lines_and_its_totals(counts_csv, monkeypatch):
    # a line at every callback: the fit takes less than the interval a log waits
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    result = _analyze(path=counts_csv)
    assert result.exit_code == 0, result.output
    err = result.stderr
    lines = [line for line in err.splitlines() if re.match(r"(warming up|sampling): ", line)]
    assert lines, err
    assert all(" draws (warm-up " in line and " divergence" in line for line in lines)
    final = [line for line in err.splitlines() if line.startswith("sampled: ")]
    assert len(final) == 1, err
    drawn = int(re.match(r"sampled: (\d+) draws", final[0]).group(1))
    assert drawn == 2 * (30 + 40)
    assert "\r" not in err and "\x1b" not in err


def test_quiet_prints_no_progress(counts_csv, monkeypatch):
    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    result = _analyze("--quiet", path=counts_csv)
    assert result.exit_code == 0, result.output
    said = result.stderr.splitlines()
    assert not [line for line in said if re.match(r"(warming up|sampling|sampled): ", line)]
    assert not [line for line in said if re.search(r"\d+/\d+ draws|divergences?,", line)]
