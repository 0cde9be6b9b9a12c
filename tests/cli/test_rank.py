"""``bayeval rank`` and ``bayeval analyze --by``."""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import bayeval as be
from bayeval import cli

GRID = ["--model", "hierarchical", "--sampler", "grid", "--draws", "300", "--chains", "2"]


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _counts_csv(path, counts, trials=10, **extra):
    rows = [
        {"system": s, "task": f"t{j}", "successes": c, "trials": trials, **extra}
        for s, row in counts.items()
        for j, c in enumerate(row)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_rank_prints_groups_sets_and_the_winner_and_writes_json(tmp_path):
    path = _counts_csv(
        tmp_path / "runs.csv",
        {"weak": [2, 3, 1, 2, 3, 2], "strong": [8, 9, 7, 9, 8, 9], "twin": [9, 8, 8, 9, 8, 8]},
    )
    out = invoke("rank", path, *GRID, "--n-boot", 500, "--json", tmp_path / "r.json")
    assert out.exit_code == 0, out.output
    assert "winner by observed score: strong" in out.output
    assert "bootstrap rank set (task)" in out.output
    assert "pass@1, population estimand (a new task like these 6), hierarchical" in out.output
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["estimand_words"] == "a new task like these 6"
    refused = invoke("rank", path, *GRID, "--clusters", "new")
    assert refused.exit_code == 2 and "--clusters and --weighting choose" in refused.output
    rows = {row["system"]: row for row in record["systems"]}
    assert sum(row["prob_best"] for row in rows.values()) == np.float64(1.0)
    assert rows["strong"]["group"] == rows["twin"]["group"] < rows["weak"]["group"]
    assert rows["weak"]["bootstrap_rank_lower"] == 3 == rows["weak"]["bootstrap_rank_upper"]
    # strong: 50 of 60 vs twin 50 of 60 -- a tie on the observed score is said
    assert record["winner"]["pick"] == "strong" and record["winner"]["tied_with"] == ["twin"]
    assert record["winner"]["naive_score"] == pytest.approx(50 / 60, abs=1e-12)


def test_rank_refuses_one_system(tmp_path):
    path = _counts_csv(tmp_path / "one.csv", {"only": [2, 3, 1]})
    out = invoke("rank", path, *GRID)
    assert out.exit_code == 2 and "two or more systems" in out.output


def test_analyze_by_gives_one_row_per_group_and_system_as_fit_many(tmp_path):
    rows = []
    for bench, shift in (("easy", 3), ("hard", -3)):
        for s, base in (("A", 5), ("B", 6)):
            rows += [
                {
                    "benchmark": bench,
                    "system": s,
                    "task": f"t{j}",
                    "successes": int(np.clip(base + shift + j % 3 - 1, 0, 10)),
                    "trials": 10,
                }
                for j in range(8)
            ]
    frame = pd.DataFrame(rows)
    path = tmp_path / "many.csv"
    frame.to_csv(path, index=False)
    out = invoke("analyze", path, "--by", "benchmark", *GRID, "--json", tmp_path / "m.json")
    assert out.exit_code == 0, out.output
    record = json.loads((tmp_path / "m.json").read_text())
    got = pd.DataFrame(record["rows"])
    assert sorted(zip(got["benchmark"], got["system"], strict=True)) == [
        ("easy", "A"),
        ("easy", "B"),
        ("hard", "A"),
        ("hard", "B"),
    ]
    many = be.fit_many(
        frame,
        by="benchmark",
        success=None,
        successes="successes",
        trials="trials",
        model="hierarchical",
        sampler="grid",
        draws=300,
        chains=2,
        keep="summary",
    )
    expected = many.to_frame()
    np.testing.assert_allclose(got["pass@1_population_mean"], expected["pass@1_population_mean"])
    assert invoke("analyze", path, "--scheduler", "local", *GRID).exit_code == 2
    bad = invoke("analyze", path, "--by", "nope", *GRID)
    assert bad.exit_code == 2 and "no column ['nope']" in bad.output


def test_overlap_labels_a_planted_copy_and_streams_a_jsonl_corpus(tmp_path):
    items = pd.DataFrame(
        {
            "id": ["q1", "q2"],
            "text": [
                "what is the capital of france and why is it paris",
                "an original question about zebras and their stripes",
            ],
        }
    )
    items.to_csv(tmp_path / "items.csv", index=False)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"text": "Trivia: What is the capital of France, and why is it Paris?"})
        + "\n"
        + json.dumps({"text": "a document about cooking pasta"})
        + "\n"
    )
    out = invoke(
        "overlap",
        tmp_path / "items.csv",
        corpus,
        "--methods",
        "exact,normalized,shingle",
        "--json",
        tmp_path / "o.json",
    )
    assert out.exit_code == 0, out.output
    record = json.loads((tmp_path / "o.json").read_text())
    labels = {row["item"]: row["label"] for row in record["items"]}
    assert labels == {"q1": "confirmed", "q2": "none"}
    assert record["counts"] == {"confirmed": 1, "suspected": 0, "none": 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"body": "x"}\n')
    out = invoke("overlap", tmp_path / "items.csv", bad)
    assert out.exit_code == 2 and "no text field 'text'" in out.output


def _canary_csv(path, drift):
    rng = np.random.default_rng(5)
    rates = rng.uniform(0.2, 0.8, 60)
    rows = []
    for system, shift in (("old", 0.0), ("new", 0.0), ("canary_a", 0.0), ("canary_b", drift)):
        for j, p in enumerate(rates):
            rows.append(
                {
                    "system": system,
                    "task": f"t{j}",
                    "trials": 40,
                    "successes": int(round(40 * np.clip(p + shift, 0, 1))),
                }
            )
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_gate_requires_a_stable_canary(tmp_path):
    args = [
        "--compare",
        "new",
        "old",
        "--margin",
        "0.05",
        "--canary",
        "canary_a",
        "canary_b",
        "--canary-margin",
        "0.05",
        "--estimand",
        "tasks",
        *GRID,
    ]
    stable = invoke("gate", _canary_csv(tmp_path / "s.csv", 0.0), *args)
    assert stable.exit_code == 0, stable.output
    assert "canary canary_a -> canary_b: change" in stable.output
    assert stable.output.rstrip().splitlines()[-2].endswith("margin 0.05: stable")
    moved = invoke(
        "gate",
        _canary_csv(tmp_path / "m.csv", 0.15),
        *args,
        "--json",
        tmp_path / "m.json",
        "--report",
        tmp_path / "m.md",
    )
    assert moved.exit_code == 1, moved.output
    assert "FAIL: the canary moved" in moved.output
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["canary"]["verdict"] == "moved" and record["canary"]["lower"] > 0.05
    assert "**moved**" in (tmp_path / "m.md").read_text().split("## Canary")[1]
    alone = invoke(
        "gate",
        tmp_path / "m.csv",
        "--compare",
        "new",
        "old",
        "--margin",
        "0.05",
        "--canary",
        "canary_a",
        "canary_b",
        *GRID,
    )
    assert alone.exit_code == 2 and "go together" in alone.output


def test_rank_report_has_the_rank_section(tmp_path):
    path = _counts_csv(
        tmp_path / "runs.csv", {"weak": [2, 3, 1, 2, 3, 2], "strong": [8, 9, 7, 9, 8, 9]}
    )
    out = invoke("rank", path, *GRID, "--n-boot", 300, "--report", tmp_path / "card.md")
    assert out.exit_code == 0, out.output
    card = (tmp_path / "card.md").read_text()
    section = card[card.index("## Ranks") : card.index("## Comparisons")]
    assert "| `strong` |" in section and "Winner by observed score: **`strong`**" in section


def test_analyze_flagged_reads_clean_against_flagged_tasks(tmp_path):
    path = _counts_csv(
        tmp_path / "runs.csv", {"A": [9, 9, 8, 3, 2, 3, 2, 3], "B": [8, 9, 9, 4, 3, 3, 2, 2]}
    )
    (tmp_path / "flagged.txt").write_text("t0\nt1\nt2\n")
    out = invoke(
        "analyze",
        path,
        *GRID,
        "--n-boot",
        200,
        "--flagged",
        tmp_path / "flagged.txt",
        "--json",
        tmp_path / "a.json",
        "--report",
        tmp_path / "card.md",
    )
    assert out.exit_code == 0, out.output
    section = json.loads((tmp_path / "a.json").read_text())["contamination"]
    assert section["n_flagged"] == 3 and section["n_clean"] == 5
    row = {r["system"]: r for r in section["rows"]}["A"]
    assert row["flagged_mean"] > row["clean_mean"] and row["difference_lower"] > 0
    # the clean subset fitted alone sits near its own observed rate (13 of 50)
    assert abs(row["clean_mean"] - 13 / 50) < 0.08
    assert "## Contamination" in (tmp_path / "card.md").read_text()
    (tmp_path / "bad.txt").write_text("t0\nnope\n")
    bad = invoke("analyze", path, *GRID, "--flagged", tmp_path / "bad.txt")
    assert bad.exit_code == 2 and "['nope'] are not tasks of the data" in bad.output


def _unbiased_pass_at_k(c, n, k):
    """1 - C(n - c, k) / C(n, k), from SciPy's exact binomial coefficients."""
    from scipy.special import comb

    return 1 - comb(n - c, k, exact=True) / comb(n, k, exact=True)


def test_analyze_with_several_k_draws_each_pair_as_a_curve_beside_its_bootstrap(tmp_path):
    from importlib import resources

    import jsonschema

    # A solves a few tasks always, B every task sometimes: A leads at k = 1, trails at k = 8
    a = [10, 10, 10, 10, 10, 10, 10, 0, 0, 0, 0, 0]
    b = [3] * 12
    path = _counts_csv(tmp_path / "curve.csv", {"A": a, "B": b})
    out = invoke(
        "analyze",
        path,
        *GRID,
        "--k",
        "8,1,2",
        "--compare",
        "A",
        "B",
        "--n-boot",
        500,
        "--json",
        tmp_path / "a.json",
        "--report",
        tmp_path / "card.md",
    )
    assert out.exit_code in (0, 1), out.output
    assert "effect over k (pass@k" in out.output
    record = json.loads((tmp_path / "a.json").read_text())
    schema = json.loads(
        resources.files("bayeval.report").joinpath("schemas/report.schema.json").read_text()
    )
    jsonschema.validate(record, schema)
    section = record["curves"]
    assert section["k"] == [1, 2, 8] and len(section["rows"]) == 1
    row = section["rows"][0]
    assert [p["k"] for p in row["points"]] == [1, 2, 8]
    # the bootstrap's point: the mean over tasks of the unbiased estimators' difference
    for point in row["points"]:
        k = point["k"]
        expected = np.mean(
            [
                _unbiased_pass_at_k(ca, 10, k) - _unbiased_pass_at_k(cb, 10, k)
                for ca, cb in zip(a, b, strict=True)
            ]
        )
        assert point["bootstrap_estimate"] == pytest.approx(expected, abs=1e-12)
        assert point["bootstrap_lower"] <= point["bootstrap_estimate"] <= point["bootstrap_upper"]
        assert point["bayes_lower"] <= point["bayes_mean"] <= point["bayes_upper"]
    # the reversal shows in both: A ahead at k = 1, behind at k = 8, and the curves cross
    first, last = row["points"][0], row["points"][-1]
    assert first["bootstrap_estimate"] > 0 > last["bootstrap_estimate"]
    assert first["prob_positive"] > 0.5 > last["prob_positive"]
    assert row["prob_cross"] > 0.5 and 1 <= row["crossing_lower"] <= row["crossing_upper"] <= 8
    assert 0 < len(row["reversal_tasks"]) <= 5
    card = (tmp_path / "card.md").read_text()
    assert "## Effect over k" in card and "![Effect over k: A - B](card_files/curve_0.png)" in card
    assert (tmp_path / "card_files" / "curve_0.png").stat().st_size > 0


def test_analyze_with_one_k_has_no_curve(tmp_path):
    path = _counts_csv(tmp_path / "one.csv", {"A": [3, 5, 7], "B": [4, 4, 6]})
    out = invoke(
        "analyze",
        path,
        *GRID,
        "--compare",
        "A",
        "B",
        "--n-boot",
        200,
        "--json",
        tmp_path / "a.json",
    )
    assert out.exit_code in (0, 1), out.output
    assert "curves" not in json.loads((tmp_path / "a.json").read_text())
    assert "effect over k" not in out.output
