"""Rank confidence sets (the max-|t| construction) against a slow, loop-based reference."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import bayeval as be
from bayeval.analyses.ranks import rank_sets


# -- an independent, loop-based reference of the same construction ------------------------------
def reference_rank_sets(V, S, n_boot, seed, ci_prob, kind):
    """Replicates, critical values and rank sets by explicit loops.

    ``V[u, s]`` is the sum of system s's per-task values in resampling unit u and ``S[u, s]``
    its number of tasks; a replicate is one multinomial draw of how often each distinct unit
    pattern is taken (the resampling convention of bayeval.bootstrap), and a system's replicate
    is the ratio of its resampled sums.
    """
    n_unit, p = V.shape
    rows = np.concatenate([V, S], axis=1)
    patterns, mult = np.unique(rows, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n_unit, mult / n_unit, size=n_boot)
    est = [
        sum(V[u, s] for u in range(n_unit)) / sum(S[u, s] for u in range(n_unit)) for s in range(p)
    ]
    reps = np.zeros((n_boot, p))
    for b in range(n_boot):
        for s in range(p):
            num = sum(counts[b, i] * patterns[i, s] for i in range(len(mult)))
            den = sum(counts[b, i] * patterns[i, p + s] for i in range(len(mult)))
            reps[b, s] = num / den
    se = np.zeros((p, p))
    for j in range(p):
        for k in range(p):
            if j != k:
                d = [reps[b, j] - reps[b, k] for b in range(n_boot)]
                mean = sum(d) / n_boot
                se[j, k] = math.sqrt(sum((x - mean) ** 2 for x in d) / (n_boot - 1))
    maxima_all, maxima_sys = [], [[] for _ in range(p)]
    for b in range(n_boot):
        best_all = 0.0
        for j in range(p):
            best_j = 0.0
            for k in range(p):
                if j == k or se[j, k] == 0:
                    continue
                t = abs((reps[b, j] - reps[b, k]) - (est[j] - est[k])) / se[j, k]
                best_j = max(best_j, t)
            maxima_sys[j].append(best_j)
            best_all = max(best_all, best_j)
        maxima_all.append(best_all)

    def quantile(values):  # the smallest value whose empirical CDF reaches ci_prob
        values = sorted(values)
        return values[math.ceil(ci_prob * len(values) - 1e-9) - 1]

    c_all = quantile(maxima_all)
    lower, upper = [], []
    for j in range(p):
        c = c_all if kind == "simultaneous" else quantile(maxima_sys[j])
        surely_better = sum(1 for k in range(p) if k != j and est[k] - est[j] - c * se[k, j] > 0)
        surely_worse = sum(1 for k in range(p) if k != j and est[k] - est[j] + c * se[k, j] < 0)
        lower.append(1 + surely_better)
        upper.append(p - surely_worse)
    return {"estimate": est, "se": se, "c_all": c_all, "lower": lower, "upper": upper}


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(7)
    difficulty = rng.normal(0, 1.2, size=14)
    skill = np.array([-1.0, -0.4, -0.2, 0.6, 1.8])
    rates = 1 / (1 + np.exp(-(skill[:, None] + difficulty[None])))
    successes = rng.binomial(3, rates)
    clusters = np.repeat(["c0", "c1", "c2", "c3", "c4", "c5", "c6"], 2)
    return be.from_counts(successes, trials=3, systems=list("ABCDE"), clusters=clusters)


@pytest.mark.parametrize("kind", ["simultaneous", "marginal"])
def test_matches_loop_reference_task_unit(tiny, kind):
    out = rank_sets(tiny, n_boot=400, seed=11, kind=kind)
    values = tiny.dataset["successes"].values.T / 3.0  # (task, system): pass@1 per task
    ref = reference_rank_sets(values, np.ones_like(values), 400, 11, 0.95, kind)
    np.testing.assert_allclose(out["estimate"].values, ref["estimate"], rtol=1e-12)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose(out["se"].values[off], ref["se"][off], rtol=1e-9)
    assert out.attrs["critical_value"] == pytest.approx(ref["c_all"], rel=1e-9)
    assert out["rank_lower"].values.tolist() == ref["lower"]
    assert out["rank_upper"].values.tolist() == ref["upper"]


def test_matches_loop_reference_cluster_unit(tiny):
    out = rank_sets(tiny, unit="cluster", n_boot=300, seed=5)
    values = tiny.dataset["successes"].values.T / 3.0
    V = values.reshape(7, 2, 5).sum(axis=1)  # clusters are consecutive pairs of tasks
    S = np.full((7, 5), 2.0)
    ref = reference_rank_sets(V, S, 300, 5, 0.95, "simultaneous")
    assert out.attrs["critical_value"] == pytest.approx(ref["c_all"], rel=1e-9)
    assert out["rank_lower"].values.tolist() == ref["lower"]
    assert out["rank_upper"].values.tolist() == ref["upper"]


def test_pairwise_tests_and_intervals(tiny):
    out = rank_sets(tiny, n_boot=500, seed=2)
    c = out.attrs["critical_value"]
    diff, se, t = out["diff"].values, out["se"].values, out["t"].values
    est = out["estimate"].values
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose(diff[off], (est[:, None] - est[None, :])[off])
    np.testing.assert_allclose(t[off], diff[off] / se[off])
    np.testing.assert_array_equal(out["reject"].values, off & (np.abs(np.nan_to_num(t)) > c))
    lo, hi = (
        out["diff_interval"].sel(ci_bound="lower").values,
        out["diff_interval"].sel(ci_bound="upper").values,
    )
    np.testing.assert_allclose(lo[off], diff[off] - c * se[off])
    np.testing.assert_allclose(hi[off], diff[off] + c * se[off])
    # Wald p-values from scipy, Holm over the unordered pairs from statsmodels
    p = 2 * stats.norm.sf(np.abs(t))
    np.testing.assert_allclose(out["p_value"].values[off], p[off])
    iu = np.triu_indices(5, 1)
    holm = multipletests(p[iu], method="holm")[1]
    np.testing.assert_allclose(out["p_value_holm"].values[iu], holm)
    np.testing.assert_allclose(out["p_value_holm"].values.T[iu], holm)
    # rejecting at the max-|t| critical value means the max-t adjusted p is below 1 - ci_prob
    assert (out["p_value_maxt"].values[out["reject"].values] <= 0.05).all()
    assert out["reject"].values.T.tolist() == out["reject"].values.tolist()
    assert np.isnan(diff[~off]).all() and not out["reject"].values[~off].any()


def test_dims_and_attrs(tiny):
    out = rank_sets(tiny, n_boot=200, seed=0)
    assert out["rank_lower"].dims == ("system",)
    assert out["diff"].dims == ("candidate", "baseline")
    assert out["diff_interval"].dims == ("candidate", "baseline", "ci_bound")
    for key, value in {
        "ci_prob": 0.95,
        "unit": "task",
        "n_boot": 200,
        "kind": "simultaneous",
        "estimand": "population",
        "seed": 0,
        "n_tasks": 14,
    }.items():
        assert out.attrs[key] == value
    totals = pd.Series(tiny.dataset["successes"].sum("task").values)
    expected = totals.rank(method="min", ascending=False).astype(int).tolist()  # ties: best
    assert out["rank_observed"].values.tolist() == expected
    assert (
        (out["rank_lower"] <= out["rank_observed"]) & (out["rank_observed"] <= out["rank_upper"])
    ).all()


def test_marginal_sets_within_simultaneous(swebench):
    sim = rank_sets(swebench, n_boot=2000, seed=1)
    marg = rank_sets(swebench, n_boot=2000, seed=1, kind="marginal")
    assert (marg["critical_value"] <= sim.attrs["critical_value"] + 1e-12).all()
    assert (marg["rank_lower"] >= sim["rank_lower"]).all()
    assert (marg["rank_upper"] <= sim["rank_upper"]).all()
    assert (sim["critical_value"] == sim.attrs["critical_value"]).all()


def test_far_apart_systems_get_disjoint_singletons():
    low = [0, 1, 0, 0, 1, 0, 0, 0] * 5
    high = [10, 9, 10, 10, 9, 10, 10, 10] * 5
    data = be.from_counts([low, high], trials=10, systems=["weak", "strong"])
    out = rank_sets(data, n_boot=1000, seed=0)
    assert out["rank_lower"].values.tolist() == [2, 1]
    assert out["rank_upper"].values.tolist() == [2, 1]
    assert bool(out["reject"].sel(candidate="strong", baseline="weak"))


def test_identical_systems_overlap():
    base = [3, 7, 10, 0, 5, 8, 2, 9, 6, 4]
    data = be.from_counts([base, base, [0] * 10], trials=10, systems=["A", "A2", "zero"])
    out = rank_sets(data, n_boot=500, seed=0)
    a, a2 = out.sel(system="A"), out.sel(system="A2")
    assert int(a["rank_lower"]) == int(a2["rank_lower"]) == 1
    assert int(a["rank_upper"]) == int(a2["rank_upper"]) == 2
    assert out["se"].sel(candidate="A", baseline="A2").item() == 0.0
    assert not bool(out["reject"].sel(candidate="A", baseline="A2"))
    assert out["p_value_maxt"].sel(candidate="A", baseline="A2").item() == 1.0
    assert int(out["rank_lower"].sel(system="zero")) == 3


def test_swebench_close_pair_shares_a_rank(swebench):
    totals = swebench.dataset["successes"].sum("task").to_series()
    top = totals[totals.isin([372, 371])].index.tolist()
    assert len(top) == 2
    out = rank_sets(swebench, n_boot=4000, seed=0)
    a, b = (out.sel(system=s) for s in top)
    assert max(int(a["rank_lower"]), int(b["rank_lower"])) <= min(
        int(a["rank_upper"]), int(b["rank_upper"])
    )
    assert not bool(out["reject"].sel(candidate=top[0], baseline=top[1]))
    np.testing.assert_allclose(sorted(out["estimate"].sel(system=top).values), [0.742, 0.744])


def test_exclude_uses_shared_tasks_only():
    df = pd.DataFrame(
        {
            "system": ["A"] * 6 + ["B"] * 6 + ["C"] * 6,
            "task": list(range(6)) * 3,
            "success": [1, 0, 1, 1, 0, 1, 1, 1, 1, 1, np.nan, 1, 0, 0, 1, 0, 0, 0],
        }
    )
    data = be.from_frame(df, missing="exclude")
    out = rank_sets(data, n_boot=300, seed=4)
    assert out.attrs["n_unshared_tasks"] == 1 and out.attrs["n_tasks"] == 5
    subset = rank_sets(data.sel(task=[0, 1, 2, 3, 5]), n_boot=300, seed=4)
    np.testing.assert_allclose(out["estimate"].values, subset["estimate"].values)
    assert out.attrs["critical_value"] == subset.attrs["critical_value"]


def test_does_not_mutate(tiny):
    before = tiny.dataset.copy(deep=True)
    rank_sets(tiny, n_boot=100, seed=0)
    assert tiny.dataset.identical(before)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kind": "joint"}, "kind must be one of"),
        ({"k": [1, 2]}, "k must be one positive integer"),
        ({"k": 0}, "k must be one positive integer"),
        ({"unit": "system"}, "unit must be one of"),
        ({"ci_prob": 1.5}, "ci_prob must be strictly between"),
        ({"n_boot": 1}, "n_boot must be an integer >= 2"),
        ({"metric": "acc"}, "metric must be one of"),
    ],
)
def test_bad_arguments(tiny, kwargs, match):
    with pytest.raises(ValueError, match=match):
        rank_sets(tiny, **kwargs)


def test_bad_data():
    with pytest.raises(ValueError, match="at least two systems"):
        rank_sets(be.from_counts([1, 0, 1], trials=1), n_boot=10)
    df = pd.DataFrame(
        {"system": ["A", "A", "B", "B"], "task": [0, 1, 0, 1], "success": [1, np.nan, 0, 1]}
    )
    with pytest.raises(ValueError, match="missing='bounds'"):
        rank_sets(be.from_frame(df, missing="bounds"), n_boot=10)
    with pytest.raises(TypeError, match="data must be an EvalData"):
        rank_sets({"A": [1, 0]}, n_boot=10)
    with pytest.raises(ValueError, match="k=3 needs at least 3"):
        rank_sets(be.from_counts([[1, 0], [0, 1]], trials=2), k=3, n_boot=10)


def test_trial_unit_is_the_tasks_estimand(tiny):
    out = rank_sets(tiny, unit="trial", n_boot=300, seed=0)
    assert out.attrs["estimand"] == "tasks"
    task = rank_sets(tiny, unit="task", n_boot=300, seed=0)
    np.testing.assert_allclose(out["estimate"].values, task["estimate"].values)
    one_trial = be.from_counts([[1, 0, 1, 1], [0, 0, 1, 0]], trials=1)
    with pytest.warns(be.BayevalWarning, match="zero width"):
        rank_sets(one_trial, unit="trial", n_boot=50)
    few_trials = be.from_counts([[1, 0, 2, 1], [0, 0, 1, 0]], trials=2)
    with pytest.warns(be.BayevalWarning, match="does not hold"):
        rank_sets(few_trials, unit="trial", k=2, n_boot=50)


def test_a_difference_no_resampling_changes_is_known():
    # B solves every task, A none: the difference is 1 in every replicate
    data = be.from_counts([[0] * 8, [1] * 8], trials=1, systems=["A", "B"])
    out = rank_sets(data, n_boot=200, seed=0)
    assert out.attrs["critical_value"] == 0.0
    assert out["se"].sel(candidate="B", baseline="A").item() == 0.0
    assert out["t"].sel(candidate="B", baseline="A").item() == np.inf
    assert bool(out["reject"].sel(candidate="B", baseline="A"))
    assert out["rank_lower"].values.tolist() == [2, 1] == out["rank_upper"].values.tolist()
