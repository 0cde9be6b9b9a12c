"""``bayeval overlap`` out of the box: the methods installed, and what the extra would add."""

import json
import sys

import pandas as pd
from click.testing import CliRunner

from bayeval import cli
from tests.helpers import FIXTURES

SAMPLES = FIXTURES / "readers" / "humaneval" / "codegen-350M-mono.jsonl_results.jsonl"


def _items(tmp_path):
    """HumanEval completions as items; the samples file itself is the corpus."""
    records = [json.loads(line) for line in SAMPLES.read_text().splitlines() if line.strip()]
    frame = pd.DataFrame(
        {
            "id": [f"{r['task_id']}#{i}" for i, r in enumerate(records)],
            "text": [r["completion"] for r in records],
        }
    )
    frame.to_csv(tmp_path / "items.csv", index=False)
    return tmp_path / "items.csv", len(frame)


def _overlap(tmp_path, *extra):
    items, n = _items(tmp_path)
    out = tmp_path / "out.json"
    args = ["overlap", str(items), str(SAMPLES), "--corpus-text-field", "completion"]
    result = CliRunner().invoke(cli.main, [*args, "--json", str(out), *map(str, extra)])
    return result, (json.loads(out.read_text()) if out.exists() else None), n


def test_overlap_runs_without_the_extra_and_says_what_it_adds(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasketch", None)  # as if not installed
    result, record, n = _overlap(tmp_path)
    assert result.exit_code == 0, result.output
    assert "minhash (a MinHash LSH estimate" in result.output
    assert "needs bayeval[contamination]" in result.output
    assert f"checking {n} item(s)" in result.output
    assert "(exact, normalized, shingle) ..." in result.output
    # every completion is in the corpus it was read from
    assert record["counts"] == {"confirmed": n, "suspected": 0, "none": 0}


def test_overlap_uses_minhash_where_installed(tmp_path):
    result, record, n = _overlap(tmp_path)
    assert result.exit_code == 0, result.output
    assert "(exact, normalized, shingle, minhash)" in result.output
    assert "needs bayeval[contamination]" not in result.output
    assert record["counts"]["confirmed"] == n
