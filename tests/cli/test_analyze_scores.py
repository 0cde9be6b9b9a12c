"""``bayeval analyze`` on partial-credit scores: the mean score from the fractional model beside the
task bootstrap, paired comparisons, the JSON and the report, and the refusals."""

import json
import re
from importlib import resources

import jsonschema
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from bayeval import cli

SYSTEMS = ("A", "B", "C")
TINY = ["--draws", "150", "--tune", "150", "--chains", "2", "--n-boot", "400", "--seed", "3"]


def invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _scores_frame(seed=0, n_task=12, n_trial=2):
    """Scores with mass at 0 and at 1 and partial credit between; systems rise A < B < C."""
    rng = np.random.default_rng(seed)
    rows = []
    for s, system in enumerate(SYSTEMS):
        for j in range(n_task):
            for t in range(n_trial):
                u = rng.random()
                if u < 0.25:
                    y = 0.0
                elif u < 0.25 + 0.15 * (s + 1):
                    y = 1.0
                else:
                    y = round(float(rng.beta(2 + s, 2)), 4)
                rows.append({"system": system, "task": f"t{j}", "trial": t, "score": y})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("scores") / "graded.csv"
    _scores_frame().to_csv(path, index=False)
    return path


def _task_means(path) -> pd.Series:
    """Each system's mean over tasks of its task mean score, from the CSV with pandas."""
    frame = pd.read_csv(path)
    return frame.groupby(["system", "task"])["score"].mean().groupby("system").mean()


def _printed_table(stdout: str) -> dict:
    """system -> (posterior mean, bootstrap estimate) from the printed per-system table."""
    start = stdout.index("mean score: posterior mean")
    rows = {}
    for line in stdout[start:].splitlines()[3:]:
        match = re.match(r"^(\S+)\s+([0-9.]+) \[[^]]+\]\s+([0-9.]+) \[[^]]+\]\s*$", line)
        if not match:
            break
        rows[match[1]] = (float(match[2]), float(match[3]))
    return rows


@pytest.fixture(scope="module")
def analysis(table, tmp_path_factory):
    folder = tmp_path_factory.mktemp("out")
    json_path, report_path = folder / "out.json", folder / "card.md"
    result = invoke(
        "analyze", table, "--score", "score", *TINY, "--json", json_path, "--report", report_path
    )
    assert result.exit_code == 0, result.output
    return result, json.loads(json_path.read_text()), report_path


def test_the_table_gives_posterior_means_beside_the_exact_bootstrap_point(table, analysis):
    result, report, _ = analysis
    assert "scores: column 'score' holds partial-credit scores in [0, 1]" in result.stdout
    assert "fit: model fractional" in result.stdout
    expected = _task_means(table)
    printed = _printed_table(result.stdout)
    assert set(printed) == set(SYSTEMS)
    for system in SYSTEMS:
        posterior, boot = printed[system]
        assert abs(posterior - expected[system]) < 0.08
        assert boot == float(f"{expected[system]:.3f}")
    # best first: the order of the observed mean scores
    assert list(printed) == expected.sort_values(ascending=False).index.tolist()
    rows = [r for r in report["metrics"] if r["estimand"] == "population"]
    assert {r["metric"] for r in report["metrics"]} == {"mean"}
    for row in rows:
        assert row["bootstrap_unit"] == "task"
        assert row["bootstrap_estimate"] == pytest.approx(expected[row["system"]], abs=1e-12)
        assert row["bayes_lower"] < row["bayes_mean"] < row["bayes_upper"]
        assert row["bootstrap_lower"] < row["bootstrap_estimate"] < row["bootstrap_upper"]
    # the tasks estimand: the posterior only (no trial bootstrap of scores kept as sums)
    tasks = [r for r in report["metrics"] if r["estimand"] == "tasks"]
    assert len(tasks) == 3 and all(r["bootstrap_unit"] is None for r in tasks)
    for row in tasks:
        assert abs(row["bayes_mean"] - expected[row["system"]]) < 0.08


def test_the_json_carries_the_scores_and_validates(analysis):
    _, report, _ = analysis
    frame = _scores_frame()
    assert report["data"]["scores"] == {
        "at_0": int((frame["score"] == 0).sum()),
        "between": int(frame["score"].between(0, 1, "neither").sum()),
        "at_1": int((frame["score"] == 1).sum()),
    }
    assert report["estimand"]["model"] == "fractional"
    assert report["settings"]["report"]["metric"] == "mean"
    assert report["data"]["design_effect"] == []
    schema = json.loads(
        resources.files("bayeval.report").joinpath("schemas/report.schema.json").read_text()
    )
    jsonschema.validate(report, schema)


def test_the_report_shows_the_mean_score(analysis):
    _, report, path = analysis
    text = path.read_text()
    assert "partial-credit scores in [0, 1]" in text
    row = next(r for r in report["metrics"] if r["system"] == "C" and r["estimand"] == "population")
    # the table of that estimand, named in the card's words for it
    words = report["estimand"]["words"]["population"]
    assert f"### Population estimand, {words}: mean score" in text
    assert (
        f"| `C` | mean score | {row['bayes_mean']:.3f} "
        f"[{row['bayes_lower']:.3f}, {row['bayes_upper']:.3f}] | "
        f"{row['bootstrap_estimate']:.3f}"
    ) in text


def test_scores_all_0_or_1_are_fitted_by_the_paired_binomial_model(tmp_path):
    frame = _scores_frame()
    frame["score"] = (frame["score"] >= 0.5).astype(float)
    path = tmp_path / "graded.csv"
    frame.to_csv(path, index=False)
    result = invoke("analyze", path, "--score", "score", *TINY, "--json", tmp_path / "o.json")
    assert result.exit_code == 0, result.output
    assert "fit: model logit_normal" in result.stdout
    report = json.loads((tmp_path / "o.json").read_text())
    assert report["estimand"]["model"] == "logit_normal"
    assert {r["metric"] for r in report["metrics"]} == {"mean"}
    expected = _task_means(path)
    printed = _printed_table(result.stdout)
    for system in SYSTEMS:
        assert printed[system][1] == float(f"{expected[system]:.3f}")


def test_compare_gives_the_paired_posterior_beside_the_paired_task_bootstrap(table):
    result = invoke("analyze", table, *TINY, "--compare", "C", "A", "--json", "-")
    assert result.exit_code == 0, result.output
    assert "(detected; --success COLUMN names 0/1 outcomes instead)" in result.stderr
    report = json.loads(result.stdout[result.stdout.index("{") :])
    (entry,) = report["comparisons"]
    assert entry["metric"] == "mean" and entry["estimand"] == "population"
    assert entry["bayes"]["paired"].startswith("yes")
    (boot,) = entry["bootstrap"]
    assert boot["unit"] == "task" and boot["twin"]
    expected = _task_means(table)
    # the paired task bootstrap's point is the difference of the task means, exactly
    assert boot["rows"][0]["effect"] == pytest.approx(expected["C"] - expected["A"], abs=1e-12)
    bayes = entry["bayes"]["rows"][0]
    assert abs(bayes["effect"] - (expected["C"] - expected["A"])) < 0.08
    assert bayes["lower"] < bayes["effect"] < bayes["upper"]
    assert report["multiplicity"]["p_values"] == [boot["p_value"]]
    assert entry["power"]["shared_tasks"] == 12
    # the per-system rows are those of the compared systems, fitted alone
    assert {r["system"] for r in report["metrics"]} == {"A", "C"}


# -- refusals (no fit) -------------------------------------------------------------------------
def _refused(*args, words):
    result = invoke("analyze", *args)
    assert result.exit_code == 2, result.output
    for word in words:
        assert word in result.output, result.output
    assert "fitting" not in result.output
    return result


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--success", "score"], ["--score", "--success", "one or the other"]),
        (["--successes", "score"], ["--score", "--successes"]),
        (["--k", "1,2"], ["--k", "mean score", "no k"]),
        (["--compare-k", "2"], ["--compare-k", "no k"]),
        (["--metric", "pass^k"], ["--metric pass^k", "mean score"]),
        (["--cost", "trial"], ["--cost does not apply to partial-credit scores"]),
        (["--compare", "C", "A", "--runs", "new"], ["--runs does not apply"]),
        (["--by", "trial"], ["--by does not apply"]),
        (["--model", "logit_normal"], ["--model logit_normal fits 0/1 outcomes", "auto"]),
    ],
)
def test_options_that_do_not_apply_to_scores_are_refused(table, extra, words):
    _refused(table, "--score", "score", *extra, words=words)


def test_a_detected_score_column_is_checked_the_same_way(table):
    _refused(table, "--k", "1,2", words=["--k", "no k"])
    _refused(table, "--by", "trial", words=["--by does not apply"])
    _refused(table, "--reader-option", "score=score", words=["--score"])


def test_an_absent_score_column_is_named(table):
    _refused(table, "--score", "grade", words=["--score", "no column 'grade'", "score"])


def test_bad_scores_are_refused_naming_the_column_and_rows(tmp_path):
    frame = _scores_frame()
    outside = frame.copy()
    outside.loc[[3, 7], "score"] = [1.5, -0.2]
    outside.to_csv(tmp_path / "outside.csv", index=False)
    _refused(
        tmp_path / "outside.csv",
        words=["score column 'score'", "[0, 1]", "[1.5, -0.2]", "rows [3, 7]"],
    )
    text = frame.astype({"score": object})
    text.loc[2, "score"] = "half"
    text.to_csv(tmp_path / "text.csv", index=False)
    _refused(
        tmp_path / "text.csv", "--score", "score", words=["score column 'score'", "row", "text"]
    )
    missing = frame.copy()
    missing.loc[5, "score"] = np.nan
    missing.to_csv(tmp_path / "missing.csv", index=False)
    _refused(tmp_path / "missing.csv", words=["missing-outcome policy", "--missing"])
    assert frame.equals(_scores_frame())  # the frames written are copies


def test_commands_of_0_1_outcomes_point_to_analyze(table):
    result = invoke("gate", table, "--compare", "C", "A", "--margin", "0.02")
    assert result.exit_code == 2, result.output
    assert "bayeval analyze FILE --score COLUMN" in result.output
