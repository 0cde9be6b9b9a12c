"""The report's judge section: its numbers against direct computations, the same in every format."""

import json
from importlib import resources

import jsonschema
import numpy as np
import pandas as pd
import pytest
from scipy import special

import bayeval as be
from bayeval.cli._output import echo_judge
from bayeval.report import build_report, report_data
from bayeval.report._format import _fmt, _interval, _signed
from bayeval.report.judge import QUANTITIES
from bayeval.testing import fake_results

N_BOOT = 200


def _frame(seed=0, n_task=40, trials=3):
    """Judged attempts of three systems, about a third labelled; the judge lenient on B."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.0, n_task)
    rows = []
    for system, (level, false_pass) in {"A": (0.0, 0.1), "B": (0.2, 0.4), "C": (-0.3, 0.1)}.items():
        p = special.expit(level + difficulty)
        y = rng.random((n_task, trials)) < p[:, None]
        verdict = np.where(y, rng.random(y.shape) < 0.9, rng.random(y.shape) < false_pass)
        labelled = rng.random(y.shape) < 0.35
        rows.append(
            pd.DataFrame(
                {
                    "system": system,
                    "task": np.repeat([f"t{j}" for j in range(n_task)], trials),
                    "verdict": verdict.ravel().astype(int),
                    "human": np.where(labelled, y, np.nan).ravel(),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def judged():
    df = _frame()
    data = be.from_frame(df, judge="verdict", success="human", label_design="random")
    res = fake_results(data, model="judge", seed=2)
    card = report_data(res, comparisons=[("B", "A"), ("C", "A")], n_boot=N_BOOT)
    return df, data, res, card


def _pair(card, candidate, baseline):
    pair = next(
        p
        for p in card["judge"]["pairs"]
        if (p["candidate"], p["baseline"]) == (candidate, baseline)
    )
    return {row["quantity"]: row for row in pair["rows"]}, pair


def test_agreement_per_system_counts_the_frame(judged):
    df, _, res, card = judged
    section = card["judge"]
    assert section["judge"] == "verdict" and section["label_design"] == "random"
    assert [row["system"] for row in section["rows"]] == card["order"]["systems"]
    readout = res.judge().sel(judge="verdict")
    for row in section["rows"]:
        part = df[df["system"] == row["system"]]
        labelled = part[part["human"].notna()]
        assert row["n_labelled"] == len(labelled) and row["n_judged"] == len(part)
        assert row["agreement"] == pytest.approx((labelled["verdict"] == labelled["human"]).mean())
        assert row["judge_rate"] == pytest.approx(part["verdict"].mean())
        assert row["labelled_rate"] == pytest.approx(labelled["human"].mean())
        cell = readout.sel(system=row["system"])
        for name in ("sensitivity", "specificity"):
            assert row[f"{name}_mean"] == pytest.approx(float(cell[f"{name}_mean"]))
            lower, upper = cell[f"{name}_interval"].values
            assert (row[f"{name}_lower"], row[f"{name}_upper"]) == pytest.approx((lower, upper))


@pytest.mark.parametrize("pair", [("B", "A"), ("C", "A")])
def test_effects_equal_direct_computations(judged, pair):
    df, data, res, card = judged
    candidate, baseline = pair
    rows, entry = _pair(card, candidate, baseline)
    assert list(rows) == ["true", "ppi", "judge_only", "labelled_only"]
    for quantity, row in rows.items():
        assert row["label"] == QUANTITIES[quantity]
        assert row["estimand_words"] == "a new task like these 40"
    one, two = (df[df["system"] == s] for s in pair)
    # verdicts as outcomes, and the labelled attempts alone: plain mean differences
    assert rows["judge_only"]["estimate"] == pytest.approx(
        one["verdict"].mean() - two["verdict"].mean()
    )
    assert rows["labelled_only"]["estimate"] == pytest.approx(
        one["human"].mean() - two["human"].mean()  # NaN (unlabelled) left out
    )
    twin = be.bootstrap.ppi(data, candidate, baseline)
    assert rows["ppi"]["estimate"] == pytest.approx(float(twin["effect_mean"]))
    assert [rows["ppi"]["lower"], rows["ppi"]["upper"]] == pytest.approx(
        twin["effect_interval"].values.tolist()
    )
    assert rows["ppi"]["prob_positive"] == pytest.approx(float(twin["prob_positive"]))
    assert entry["lam"] == pytest.approx(
        dict(zip(twin["system"].values.tolist(), twin["lam"].values.tolist(), strict=True))
    )
    # the labelled-only interval is PPI++'s with the judge's weight at 0
    zero = be.bootstrap.ppi(data, candidate, baseline, lam=0)
    assert [rows["labelled_only"]["lower"], rows["labelled_only"]["upper"]] == pytest.approx(
        zero["effect_interval"].values.tolist()
    )
    effect = res.compare(candidate, baseline, k=1, estimand="population")
    assert rows["true"]["estimate"] == pytest.approx(float(effect["effect_mean"]))
    assert [rows["true"]["lower"], rows["true"]["upper"]] == pytest.approx(
        effect["effect_interval"].values.tolist()
    )


def test_every_format_carries_the_same_numbers_in_the_same_words(judged, capsys):
    _, _, res, card = judged
    _check_formats(res, card, capsys)


def _check_formats(res, card, capsys):
    """The section's numbers in its words on one line of the terminal, Markdown and HTML."""
    schema = json.loads(
        resources.files("bayeval.report").joinpath("schemas/report.schema.json").read_text()
    )
    round_trip = json.loads(json.dumps(card))
    jsonschema.validate(round_trip, schema)
    assert round_trip["judge"] == card["judge"]
    md = build_report(res, fmt="markdown", plots=False, data=card)
    html = build_report(res, fmt="html", plots=False, data=card)
    echo_judge(card["judge"])
    terminal = capsys.readouterr().out
    section = card["judge"]
    texts = {"markdown": md, "html": html, "terminal": terminal}
    for pair in section["pairs"]:
        for row in pair["rows"]:
            number = f"{_signed(row['estimate'])} {_interval(row['lower'], row['upper'])}"
            for fmt, text in texts.items():
                line = next(
                    (x for x in text.splitlines() if row["label"] in x and number in x), None
                )
                assert line is not None, (fmt, row["label"], number)
                assert row["estimand_words"] in line, (fmt, line)
    for row in section["rows"]:
        for name in ("sensitivity", "specificity"):
            bounds = _interval(row[f"{name}_lower"], row[f"{name}_upper"])
            cell = f"{_fmt(row[f'{name}_mean'])} {bounds}"
            for fmt, text in texts.items():
                assert cell in text, (fmt, name, row["system"])
        for fmt, text in texts.items():
            assert _fmt(row["agreement"]) in text, fmt
    for column in section["columns"].values():
        for fmt, text in texts.items():
            assert column["header"] in text and column["words"].split(" | ")[0] in text, fmt


@pytest.fixture(scope="module")
def two_judges():
    """The lenient judge beside a second, strict one (it misses a third of the passes)."""
    df = _frame(seed=4)
    rng = np.random.default_rng(5)
    # the truth where labelled, else the lenient verdict's best guess: a second judge's
    # verdict that depends on the attempt, not only on the first judge
    truth = df["human"].fillna(df["verdict"]).to_numpy()
    df["strict"] = np.where(truth == 1, rng.random(len(df)) < 0.67, rng.random(len(df)) < 0.05)
    df["strict"] = df["strict"].astype(int)
    data = be.from_frame(df, judge=["verdict", "strict"], success="human", label_design="random")
    res = fake_results(data, model="judge", seed=3)
    card = report_data(res, comparisons=[("B", "A")], n_boot=N_BOOT)
    return df, data, res, card


def test_several_judges_each_have_rows_and_twins(two_judges, capsys):
    df, data, res, card = two_judges
    section = card["judge"]
    assert section["judges"] == ["verdict", "strict"]
    # one row per judge and system (in the report's order of systems)
    assert sorted((r["judge"], r["system"]) for r in section["rows"]) == sorted(
        (j, s) for j in ("verdict", "strict") for s in data.systems
    )
    labelled = df[df["human"].notna()]
    for row in section["rows"]:
        mine = labelled[labelled["system"] == row["system"]]
        assert row["agreement"] == pytest.approx((mine[row["judge"]] == mine["human"]).mean())
    rows = card["judge"]["pairs"][0]["rows"]
    assert [(r["quantity"], r["judge"]) for r in rows] == [
        ("true", None),
        ("ppi", "verdict"),
        ("judge_only", "verdict"),
        ("ppi", "strict"),
        ("judge_only", "strict"),
        ("labelled_only", None),
    ]
    for row in rows:
        if row["judge"] is None:
            assert row["label"] == QUANTITIES[row["quantity"]]
            continue
        assert row["label"] == f"{QUANTITIES[row['quantity']]}, judge {row['judge']}"
        twin = be.bootstrap.ppi(data, "B", "A", judge=row["judge"])
        key = "effect" if row["quantity"] == "ppi" else "judge_only_effect"
        assert [row["lower"], row["upper"]] == pytest.approx(
            twin[f"{key}_interval"].values.tolist()
        )
    lam = card["judge"]["pairs"][0]["lam"]
    assert set(lam) == {f"{s} ({j})" for s in ("A", "B") for j in ("verdict", "strict")}
    _check_formats(res, card, capsys)


def test_judge_bias_is_said_to_be_inside_the_intervals(judged):
    card = judged[3]
    text = next(x["text"] for x in card["systematic"] if x["name"] == "Judge and grader bias")
    assert "'verdict'" in text and "label design 'random'" in text


def test_unjudged_fits_have_no_judge_section():
    data = be.from_counts([[3, 5, 1, 8, 6], [6, 9, 2, 9, 7]], trials=10, systems=["A", "B"])
    card = report_data(fake_results(data), comparisons=[("B", "A")], n_boot=N_BOOT)
    assert "judge" not in card
    text = next(x["text"] for x in card["systematic"] if x["name"] == "Judge and grader bias")
    assert "treat every verdict as correct" in text
