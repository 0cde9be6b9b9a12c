"""Judged data (``from_frame(..., judge=)``): verdicts and labels counted, the design checked.

Counts are compared with a direct pandas count of the frame; refusals name the column, rows or
design and say why the true rate would not be identified.
"""

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval.data import JUDGE_VARS
from bayeval.data.judge import MAX_JUDGES, PATTERN_VAR
from bayeval.monitor._codec import decode, encode
from bayeval.testing import fake_results


def _judged_frame(seed=0, n_task=12, trials=4, label_share=0.5, systems=("A", "B")):
    """Attempts with two judges' verdicts and a random half labelled (every cell some)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in systems:
        for t in range(n_task):
            for k in range(trials):
                y = int(rng.random() < 0.6)
                rows.append(
                    {
                        "system": s,
                        "task": f"t{t}",
                        "trial": k,
                        "j1": int(rng.random() < (0.9 if y else 0.2)),
                        "j2": bool(rng.random() < (0.8 if y else 0.1)),
                        # the first attempt of each cell labelled: no cell without a label
                        "human": y if k == 0 or rng.random() < label_share else np.nan,
                    }
                )
    return pd.DataFrame(rows)


def _direct_counts(df, judge):
    """The judge cells per (system, task) counted with pandas, independently of bayeval."""
    lab = df["human"].notna()
    v = df[judge].astype(int)
    out = {}
    for name, mask in {
        "judge_n11": lab & (v == 1) & (df["human"] == 1),
        "judge_n10": lab & (v == 1) & (df["human"] == 0),
        "judge_n01": lab & (v == 0) & (df["human"] == 1),
        "judge_n00": lab & (v == 0) & (df["human"] == 0),
        "judge_u1": ~lab & (v == 1),
        "judge_u0": ~lab & (v == 0),
    }.items():
        out[name] = df[mask].groupby(["system", "task"]).size()
    return out


def test_counts_match_a_direct_count():
    df = _judged_frame()
    before = df.copy(deep=True)
    data = be.from_frame(
        df, trial="trial", judge=["j1", "j2"], success="human", label_design="random"
    )
    pd.testing.assert_frame_equal(df, before)  # the user's frame is never changed
    ds = data.dataset
    assert data.judges == ["j1", "j2"] and data.label_design == "random"
    for judge in ("j1", "j2"):
        direct = _direct_counts(df, judge)
        for name in JUDGE_VARS:
            got = ds[name].sel(judge=judge, label_stratum="all").to_pandas().stack()
            want = direct[name].reindex(got.index, fill_value=0)
            np.testing.assert_array_equal(got.to_numpy(), want.to_numpy(), err_msg=name)
    # successes/trials: the labelled attempts' trusted outcomes
    lab = df[df["human"].notna()]
    trials = lab.groupby(["system", "task"]).size()
    wins = lab.groupby(["system", "task"])["human"].sum()
    got_n = ds["trials"].to_pandas().stack()
    got_c = ds["successes"].to_pandas().stack()
    np.testing.assert_array_equal(got_n.to_numpy(), trials.reindex(got_n.index).to_numpy())
    np.testing.assert_array_equal(got_c.to_numpy(), wins.reindex(got_c.index).to_numpy())
    # every attempt is counted once per judge
    total = sum(ds[v] for v in JUDGE_VARS).sum(("system", "task", "label_stratum"))
    assert total.values.tolist() == [len(df), len(df)]


def test_several_judges_verdict_patterns_match_a_direct_count():
    df = _judged_frame(seed=3)
    data = be.from_frame(
        df, trial="trial", judge=["j1", "j2"], success="human", label_design="random"
    )
    ds = data.dataset
    patterns = ds[PATTERN_VAR].sel(label_stratum="all")
    assert patterns.dims == ("system", "task", "verdicts", "label")
    assert ds["verdicts"].values.tolist() == ["00", "01", "10", "11"]
    assert ds["label"].values.tolist() == ["1", "0", "none"]
    label = df["human"].map({1: "1", 0: "0"}).fillna("none")
    pattern = df["j1"].astype(int).astype(str) + df["j2"].astype(int).astype(str)
    direct = (
        df.assign(verdicts=pattern, label=label)
        .groupby(["system", "task", "verdicts", "label"])
        .size()
    )
    got = patterns.to_series()
    want = direct.reindex(got.index, fill_value=0)
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    assert int(got.sum()) == len(df)
    # each judge's margin of the patterns is its own count
    j1 = patterns.sel(verdicts=["10", "11"]).sum("verdicts")
    np.testing.assert_array_equal(
        j1.sel(label="1").values, ds["judge_n11"].sel(judge="j1", label_stratum="all").values
    )
    np.testing.assert_array_equal(
        j1.sel(label="none").values, ds["judge_u1"].sel(judge="j1", label_stratum="all").values
    )
    one = be.from_frame(df, trial="trial", judge="j1", success="human", label_design="random")
    assert PATTERN_VAR not in one.dataset  # one judge: its counts are the pattern counts


def test_too_many_judges_refused():
    df = _judged_frame()
    names = [f"j{k}" for k in range(MAX_JUDGES + 1)]
    wide = df.assign(**{name: df["j1"] for name in names})
    with pytest.raises(ValueError, match=f"at most {MAX_JUDGES} judges"):
        be.from_frame(wide, judge=names, success="human", label_design="random")


def test_stratified_by_the_judge_verdict():
    rng = np.random.default_rng(3)
    n = 400
    y = (rng.random(n) < 0.5).astype(int)
    j = np.where(y == 1, rng.random(n) < 0.9, rng.random(n) < 0.3).astype(int)
    # judge-negatives labelled at 80%, positives at 10%: depends on the verdict, by design
    labelled = rng.random(n) < np.where(j == 1, 0.1, 0.8)
    df = pd.DataFrame(
        {"system": "A", "task": np.arange(n) % 40, "j": j, "y": np.where(labelled, y, np.nan)}
    )
    with pytest.raises(ValueError, match="not a random sample.*label_strata='j'"):
        be.from_frame(df, judge="j", success="y", label_design="random")
    data = be.from_frame(df, judge="j", success="y", label_design="stratified", label_strata="j")
    ds = data.dataset.sel(judge="j")
    assert ds["label_stratum"].values.tolist() == [0, 1]
    by = ds[list(JUDGE_VARS)].sum(("system", "task"))
    # in the verdict-1 stratum there is no verdict-0 attempt, and the reverse
    assert int(by["judge_u0"].sel(label_stratum=1)) == 0
    assert int(by["judge_n11"].sel(label_stratum=0)) == 0
    assert int(by["judge_u1"].sel(label_stratum=1)) == int(((j == 1) & ~labelled).sum())


def test_stratified_by_another_column():
    df = _judged_frame(seed=1)
    df["bucket"] = np.where(df["task"].isin(["t0", "t1", "t2"]), "hard", "easy")
    data = be.from_frame(
        df, judge="j1", success="human", label_design="stratified", label_strata="bucket"
    )
    ds = data.dataset
    assert ds["label_stratum"].values.tolist() == ["hard", "easy"]
    hard = ds["judge_u1"].sel(label_stratum="hard", judge="j1").sum()
    want = ((df["bucket"] == "hard") & df["human"].isna() & (df["j1"] == 1)).sum()
    assert int(hard) == int(want)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, TypeError, "needs label_design="),
        ({"label_design": "convenience"}, ValueError, "would not be identified"),
        ({"label_design": "stratified"}, TypeError, "needs label_strata="),
        ({"label_design": "random", "label_strata": "task"}, TypeError, "stratified"),
        ({"label_design": "random", "score": "human", "success": None}, TypeError, "score="),
        ({"label_design": "random", "covariates": ["j2"]}, TypeError, "covariates="),
        ({"label_design": "random", "run": "trial"}, TypeError, "run="),
        ({"label_design": "random", "judge": ["j1", "j1"]}, ValueError, "twice"),
        ({"label_design": "random", "judge": "nope"}, ValueError, "nope"),
        ({"label_design": "random", "success": "j1"}, ValueError, "both a judge"),
    ],
)
def test_argument_refusals(kwargs, error, match):
    df = _judged_frame()
    args = {"judge": "j1", "success": "human", **kwargs}
    with pytest.raises(error, match=match):
        be.from_frame(df, **args)


def test_design_without_judge_refused():
    df = pd.DataFrame({"system": "A", "task": ["t"], "success": [1]})
    with pytest.raises(TypeError, match="applies to judged data"):
        be.from_frame(df, label_design="random")


def test_bad_verdicts_name_the_column_and_rows():
    df = _judged_frame()
    df.loc[5, "j1"] = 2
    with pytest.raises(ValueError, match=r"column 'j1' must hold 0 or 1.*\[2.0\].*row \[5\]"):
        be.from_frame(df, judge="j1", success="human", label_design="random")
    df = _judged_frame()
    df["j1"] = df["j1"].astype(object)
    df.loc[7, "j1"] = "yes"
    with pytest.raises(TypeError, match=r"column 'j1'.*'yes'.*row \[7\]"):
        be.from_frame(df, judge="j1", success="human", label_design="random")


def test_missing_verdict_refused_on_an_attempt_with_an_outcome():
    df = _judged_frame()
    df["j2"] = df["j2"].astype(object)
    df.loc[[3, 9], "j2"] = None
    with pytest.raises(ValueError, match=r"judge column 'j2' has no verdict in rows \[3, 9\]"):
        be.from_frame(df, judge=["j1", "j2"], success="human", label_design="random")


def test_attempt_without_any_outcome_is_no_verdict():
    df = _judged_frame()
    df.loc[4, ["j1", "human"]] = np.nan
    with pytest.raises(ValueError, match="choose a missing-outcome policy"):
        be.from_frame(df, judge="j1", success="human", label_design="random")
    data = be.from_frame(df, judge="j1", success="human", label_design="random", missing="fail")
    cell = data.dataset.sel(system=df.loc[4, "system"], task=df.loc[4, "task"])
    assert int(cell["status_counts"].sel(status="no_verdict")) == 1
    # the attempt without an outcome is in no judge cell
    assert int(sum(data.dataset[v] for v in JUDGE_VARS).sum()) == len(df) - 1


def test_no_label_at_all_is_not_identified():
    df = _judged_frame()
    df["human"] = np.nan
    with pytest.raises(ValueError, match="no labelled one"):
        be.from_frame(df, judge="j1", success="human", label_design="random")


def test_unlabelled_cells_are_not_planned_as_not_run():
    df = _judged_frame(trials=2)
    only_judged = (df["task"] == "t3") & (df["system"] == "B")
    df.loc[only_judged, "human"] = np.nan
    data = be.from_frame(df, judge="j1", success="human", label_design="random")
    cell = data.dataset.sel(system="B", task="t3")
    assert int(cell["trials"]) == 0
    assert int(cell["status_counts"].sum()) == 0  # no not_run: the attempts ran, unlabelled
    assert int((cell["judge_u1"] + cell["judge_u0"]).sum()) == 2


def test_views_keep_the_judge_counts():
    df = _judged_frame()
    data = be.from_frame(df, judge=["j1", "j2"], success="human", label_design="random")
    sub = data.sel(system="B")
    assert sub.judges == ["j1", "j2"]
    np.testing.assert_array_equal(
        sub.dataset["judge_n11"].values, data.dataset["judge_n11"].sel(system=["B"]).values
    )
    again = data.with_missing("exclude")
    for name in JUDGE_VARS:
        assert again.dataset[name].identical(data.dataset[name])
    assert again.label_design == "random"
    plain = be.from_frame(df.dropna(subset=["human"]), success="human")
    assert data.fingerprint() != plain.fingerprint()
    assert "judges:   ['j1', 'j2']" in repr(data)


def test_round_trip_through_results_and_the_store(tmp_path):
    df = _judged_frame()
    data = be.from_frame(df, judge=["j1", "j2"], success="human", label_design="random")
    layout, rows = encode(data, "checkpoint 0")
    back = decode(
        layout, [(r["successes"], r["trials"], r["attempts"], r["cell"]) for r in rows], "c"
    )
    assert back.dataset.identical(data.dataset)
    path = tmp_path / "fit.nc"
    fake_results(data, model="hierarchical", draws=20, chains=1).to_netcdf(path)
    loaded = be.load(path).data
    assert loaded.judges == ["j1", "j2"] and loaded.label_design == "random"
    for name in JUDGE_VARS:
        assert loaded.dataset[name].identical(data.dataset[name])
    assert loaded.fingerprint() == data.fingerprint()
