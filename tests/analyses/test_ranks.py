"""Ranks, rank groups and all pairwise effects from the posterior draws."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import bayeval as be
from bayeval.testing import fake_results


@pytest.fixture(scope="module")
def three():
    rng = np.random.default_rng(1)
    rates = {"A": 0.2, "B": 0.8, "C": 0.81}
    c = [
        rng.binomial(10, np.clip(stats.beta(8 * r, 8 * (1 - r)).rvs(40, random_state=rng), 0, 1))
        for r in rates.values()
    ]
    data = be.from_counts(c, trials=10, systems=list(rates))
    return fake_results(data, model="hierarchical", draws=1000, chains=2, seed=0)


def test_rank_draws_match_scipy_rankdata(three):
    out = three.ranks(top=2)
    values = three.pass_at_k().transpose("chain", "draw", "system").values
    expected = stats.rankdata(-values, axis=-1, method="min")
    np.testing.assert_array_equal(out["rank"].transpose("chain", "draw", "system").values, expected)
    assert float(out["prob_best"].sum()) == pytest.approx(1.0)
    assert float(out["prob_best"].sel(system="A")) == 0.0
    assert float(out["prob_top"].sel(system="A")) < 0.01
    assert out["rank_interval"].sel(system="A").values.tolist() == [3, 3]


def test_simultaneous_rank_intervals_hold_the_whole_ranking(three):
    out = three.ranks(ci_prob=0.9)
    draws = out["rank"].stack(sample=("chain", "draw")).transpose("system", "sample").values
    joint = out["rank_interval_simultaneous"].transpose("system", "ci_bound").values
    own = out["rank_interval"].transpose("system", "ci_bound").values
    inside = (draws >= joint[:, :1]) & (draws <= joint[:, 1:])
    assert inside.all(axis=0).mean() >= 0.9
    assert np.all(joint[:, 0] <= own[:, 0]) and np.all(joint[:, 1] >= own[:, 1])
    # whole ranks that occur among the draws, not interpolated quantiles
    for s in range(len(draws)):
        assert set(joint[s]) <= set(draws[s]) and set(own[s]) <= set(draws[s])


def test_rank_groups_follow_their_rule(three):
    table = three.rank_groups(prob=0.95)
    assert table["system"].tolist()[-1] == "A"
    group = dict(zip(table["system"], table["group"], strict=True))
    assert group["B"] == group["C"] == 1 and group["A"] == 2
    # the rule against compare's own probabilities
    leader = table["system"].iloc[0]
    other = "C" if leader == "B" else "B"
    p = float(three.compare(leader, other)["prob_positive"])
    row = table.set_index("system").loc[other]
    assert row["prob_leader_better"] == pytest.approx(p) and p < 0.95


@pytest.mark.parametrize("estimand", ["population", "tasks"])
def test_compare_all_equals_each_compare(three, estimand):
    out = three.compare_all(margin=0.05, estimand=estimand)
    for cand in three.systems:
        for base in three.systems:
            if cand == base:
                assert np.isnan(float(out["effect_mean"].sel(candidate=cand, baseline=base)))
                continue
            one = three.compare(cand, base, margin=0.05, estimand=estimand)
            cell = out.sel(candidate=cand, baseline=base)
            assert float(cell["effect_mean"]) == pytest.approx(float(one["effect_mean"]))
            assert float(cell["prob_above_margin"]) == float(one["prob_above_margin"])
            np.testing.assert_allclose(cell["effect_interval"], one["effect_interval"])
    total = out["prob_positive"] + out["prob_positive"].rename(
        candidate="baseline", baseline="candidate"
    )
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(total.transpose("candidate", "baseline").values[off], 1.0)


def test_swebench_close_pair_lands_in_one_group():
    """25 systems x 500 tasks: P(best) sums to 1 and the close pair (372 vs 371 resolved)
    cannot be told apart."""
    data = be.datasets.load("swebench_verified")
    res = fake_results(data, model="hierarchical", draws=1000, chains=2, seed=0)
    resolved = data.dataset["successes"].sum("task").to_series()
    a = resolved[resolved == 372].index[0]
    b = resolved[resolved == 371].index[0]
    ranks = res.ranks()
    assert float(ranks["prob_best"].sum()) == pytest.approx(1.0)
    group = res.rank_groups(prob=0.95).set_index("system")["group"]
    assert group[a] == group[b]
    assert len(set(group)) > 1


def test_compare_all_over_these_tasks_keeps_each_pairs_shared_tasks():
    """Under missing="exclude" a system's valid tasks can differ: the pairs with C (three
    tasks fewer) are compared on the tasks valid for both, as compare does; the others read
    their effect off the fit's draws."""
    rng = np.random.default_rng(0)
    rows = [
        {
            "system": s,
            "task": f"t{t}",
            "trial": k,
            "status": "timeout" if s == "C" and t < 3 else "ok",
            "success": np.nan if s == "C" and t < 3 else float(rng.random() < p),
        }
        for s, p in (("A", 0.3), ("B", 0.6), ("C", 0.65))
        for t in range(12)
        for k in range(4)
    ]
    data = be.from_frame(pd.DataFrame(rows), trial="trial", status="status", missing="exclude")
    res = fake_results(data, model="hierarchical", draws=400, chains=2, seed=0)
    out = res.compare_all(estimand="tasks")
    for cand, base in (("C", "A"), ("B", "C"), ("B", "A")):
        one = res.compare(cand, base, estimand="tasks")
        cell = out.sel(candidate=cand, baseline=base)
        assert float(cell["effect_mean"]) == pytest.approx(float(one["effect_mean"]))
        np.testing.assert_allclose(cell["effect_interval"], one["effect_interval"])
    assert res.compare("C", "A", estimand="tasks").attrs["n_dropped_tasks"] == 3


def _with_params_of(res, source, target):
    """``res`` with ``target``'s parameter draws replaced by ``source``'s: tied in every draw."""
    tree = res.tree
    post = tree["posterior"].to_dataset().copy(deep=True)
    for name in post.data_vars:
        post[name].loc[{"system": target}] = post[name].sel(system=source).values
    tree["posterior"] = xr.DataTree(post)
    return type(res)(tree)


def test_winner_counts_ties_as_best_as_ranks_do():
    # A has the best observed score; B comes first in the data's order
    data = be.from_counts(
        [[6, 6, 7, 7], [7, 6, 7, 8], [3, 2, 4, 3]], trials=10, systems=["B", "A", "C"]
    )
    res = fake_results(data, model="hierarchical", draws=300, chains=2, seed=0)
    tied = _with_params_of(res, "A", "B")
    for fit in (res, tied):
        out = fit.winner(n_replicates=20)
        assert out.attrs["pick"] == "A" and out.attrs["tied_with"] == []
        values = fit.pass_at_k(estimand="population").transpose(..., "system").values
        values = values.reshape(-1, 3)
        # the independent count: draws in which no system is above A
        share = (values[:, 1] >= values.max(axis=1)).mean()
        assert float(out["prob_pick_is_best"]) == share
        assert share == float(fit.ranks()["prob_best"].sel(system="A"))
    # with B's draws equal to A's, A is best in every draw that C does not top: the first
    # system in the data's order does not take the tie
    assert float(tied.winner(n_replicates=20)["prob_pick_is_best"]) > 0.99


def test_winner_says_how_it_picks_among_observed_ties():
    data = be.from_counts([[7, 6, 7, 8], [7, 6, 7, 8], [3, 2, 4, 3]], trials=10)
    res = fake_results(data, model="hierarchical", draws=200, chains=2, seed=0)
    out = res.winner(n_replicates=20)
    assert out.attrs["pick"] == res.systems[0] and out.attrs["tied_with"] == [res.systems[1]]
    assert out.attrs["tie_rule"] == (
        "among systems tied on the observed score, the first in the data's order"
    )


def test_winner_optimism_is_against_the_naive_scores_own_estimand():
    """The SWE-bench leaders: the naive score, the optimism and the posterior it is taken
    against are of one estimand (these tasks); the population posterior is beside them."""
    data = be.datasets.load("swebench_verified")
    scores = data.dataset["successes"].mean("task").to_series().sort_values()
    data = data.sel(system=scores.index[-4:].tolist())
    res = fake_results(data, model="hierarchical", draws=500, chains=2, seed=0)
    out = res.winner(n_replicates=50)
    pick = out.attrs["pick"]
    assert pick == scores.index[-1]
    assert float(out["naive_score"]) == scores.iloc[-1]
    tasks = res.pass_at_k(estimand="tasks").sel(system=pick).values.ravel()
    assert float(out["tasks_value_mean"]) == pytest.approx(tasks.mean(), rel=1e-12)
    assert out["tasks_value_interval"].values == pytest.approx(np.quantile(tasks, [0.025, 0.975]))
    assert float(out["optimism"]) == float(out["naive_score"] - out["tasks_value_mean"])
    population = res.pass_at_k(estimand="population").sel(system=pick).values.ravel()
    assert float(out["value_mean"]) == pytest.approx(population.mean(), rel=1e-12)
    assert out.attrs["estimand"] == "population" and out.attrs["gates_failed"] == []
    assert float(out["expected_optimism_se"]) == pytest.approx(
        float(out["expected_optimism_sd"]) / np.sqrt(50)
    )


def test_winner_weights_strata_as_the_tasks_estimand_does():
    """With strata, the naive score is the stratum-weighted mean its posterior target is.

    Unweighted, A leads (0.75 against 0.6); weighted half and half by stratum, B does
    (0.5 * 1.0 + 0.5 * 0.0 = 0.5 against 0.6).
    """
    frame = pd.DataFrame(
        {
            "system": ["A"] * 4 + ["B"] * 4,
            "task": ["e1", "e2", "e3", "h1"] * 2,
            "level": ["easy", "easy", "easy", "hard"] * 2,
            "successes": [10, 10, 10, 0, 6, 6, 6, 6],
            "trials": 10,
        }
    )
    data = be.from_frame(
        frame,
        successes="successes",
        trials="trials",
        stratum="level",
        stratum_weights={"easy": 0.5, "hard": 0.5},
    )
    res = fake_results(data, model="hierarchical", draws=400, chains=2, seed=0)
    out = res.winner(n_replicates=100, seed=1)
    assert out.attrs["pick"] == "B"
    expected = {"A": 0.5 * 1.0 + 0.5 * 0.0, "B": 0.5 * 0.6 + 0.5 * 0.6}
    assert out["observed_score"].to_series().to_dict() == pytest.approx(expected)
    assert float(out["naive_score"]) == pytest.approx(0.6)
    tasks = res.pass_at_k(estimand="tasks").mean(("chain", "draw")).to_series()
    assert float(out["tasks_value_mean"]) == pytest.approx(tasks["B"], rel=1e-12)
    # the replicates' truths average the tasks the same way (thinned draws: close, not equal)
    np.testing.assert_allclose(out["tasks_mean"].values, tasks.to_numpy(), atol=0.03)
