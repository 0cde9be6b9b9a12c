"""The winner's curse and effect curves over k (bayeval.analyses, Results.winner,
Results.compare_curve, bayeval.bootstrap.compare_curve)."""

from math import comb

import numpy as np
import pytest
from scipy import stats

import bayeval as be
from bayeval.analyses import _draws, curves, ranks
from bayeval.testing import fake_results


def _pass_at_k(n, c, k):
    return 1 - comb(n - c, k) / comb(n, k)


def test_observed_scores_are_the_mean_unbiased_estimator_over_valid_tasks():
    c = np.array([[3, 0, 5], [1, 2, 0]])
    n = np.array([[5, 2, 5], [5, 5, 0]])
    scores, per_task = _draws.observed_scores(c, n, 3, "pass@k")
    # k = 3 > 2 trials: task 1 of system 0 is not valid; system 1's task 2 has no trials
    assert scores[0] == pytest.approx((_pass_at_k(5, 3, 3) + _pass_at_k(5, 5, 3)) / 2)
    assert scores[1] == pytest.approx((_pass_at_k(5, 1, 3) + _pass_at_k(5, 2, 3)) / 2)
    assert np.isnan(per_task[0, 1]) and np.isnan(per_task[1, 2])
    with pytest.raises(ValueError, match=r"\['A', 'B'\] have no task with at least k=6"):
        _draws.observed_scores(c, n, 6, "pass@k", systems=["A", "B"])


def test_crossing_points_interpolate_the_first_sign_change():
    ks = np.array([1, 2, 4, 8])
    effect = np.array(
        [
            [0.2, 0.1, -0.1, -0.3],  # crosses between 2 and 4, at 3
            [0.3, 0.2, 0.1, 0.05],  # never
            [-0.1, 0.3, -0.2, 0.1],
        ]
    )  # first change between 1 and 2, at 1.25
    out = curves.crossing_points(effect, ks)
    assert out[0] == pytest.approx(3.0)
    assert np.isnan(out[1])
    assert out[2] == pytest.approx(1.25)


def test_sup_t_band_has_the_max_of_independent_normals_critical_value():
    rng = np.random.default_rng(0)
    K, ci = 4, 0.95
    draws = rng.normal(size=(200_000, K)) * [1, 2, 3, 4] + [0, 1, 2, 3]
    band, q = curves.sup_t_band(draws, ci)
    # P(max_k |Z_k| <= q) = (2 Phi(q) - 1)^K for independent standard normals
    exact = stats.norm.ppf((1 + ci ** (1 / K)) / 2)
    assert q == pytest.approx(exact, abs=0.02)
    inside = ((draws >= band[:, 0]) & (draws <= band[:, 1])).all(axis=1).mean()
    assert inside == pytest.approx(ci, abs=0.003)


@pytest.fixture(scope="module")
def reversal_fit():
    # A solves few tasks often, B many tasks rarely: A leads at k = 1, B at large k
    c = [[9, 9, 9, 9, 0, 0, 0, 0, 0, 0], [3, 3, 3, 3, 2, 2, 2, 2, 2, 2]]
    data = be.from_counts(c, trials=10, systems=["A", "B"])
    # a real fit: the band's containing each pointwise interval holds for the near-normal
    # effect draws of the posterior, not for a fake's skewed ones
    # ten tasks of ten trials: the wide concentration prior, which the fit names
    res = be.fit(data, model="hierarchical", draws=400, chains=2, seed=0)
    assert res.tree.attrs["prior_note"].startswith("at most 10 tasks per population")
    return data, res


def test_compare_curve_agrees_with_compare_and_traces_the_reversal(reversal_fit):
    data, res = reversal_fit
    ks = [1, 2, 4, 8]
    curve = res.compare_curve("A", "B", k=ks, estimand="tasks")
    cmp = res.compare("A", "B", k=ks, estimand="tasks")
    np.testing.assert_allclose(curve["effect_mean"].values, cmp["effect_mean"].values)
    band, point = curve["effect_band"].values, curve["effect_interval"].values
    assert (band[:, 0] <= point[:, 0] + 1e-12).all() and (band[:, 1] >= point[:, 1] - 1e-12).all()
    # observed: A 4 x 0.9 / 10 = 0.36 vs B 0.24 at k = 1; at k = 8 B solves nearly every task
    assert curve["effect_mean"].sel(k=1) > 0 > curve["effect_mean"].sel(k=8)
    assert curve["prob_cross"] > 0.9
    lo, hi = curve["crossing_interval"].values
    assert 1 <= lo <= hi <= 8
    # the observed contributions sum to the unbiased-estimator effect at each k
    c = data.dataset["successes"].values
    for k in ks:
        effect = np.mean(
            [_pass_at_k(10, a, k) - _pass_at_k(10, b, k) for a, b in zip(*c, strict=True)]
        )
        total = curve["task_contribution_observed"].sel(k=k).sum().item()
        assert total == pytest.approx(effect)
    # the reversal comes from tasks 4-9 (B's rare successes grow with k)
    table = curves.reversal_tasks(curve, top=6)
    assert sorted(table["task"].tolist()) == list(range(4, 10))
    assert (table["change"] < 0).all() and (table["change_observed"] < 0).all()
    by_counts = curves.reversal_tasks(curve, top=6, by="observed")
    assert sorted(by_counts["task"].tolist()) == list(range(4, 10))
    with pytest.raises(ValueError, match="by must be"):
        curves.reversal_tasks(curve, by="x")


def test_compare_curve_refuses_bad_ks(reversal_fit):
    _, res = reversal_fit
    with pytest.raises(ValueError, match="at least two ks"):
        res.compare_curve("A", "B", k=2)
    with pytest.raises(ValueError, match="increasing ks"):
        res.compare_curve("A", "B", k=[4, 2])


def test_curve_bootstrap_estimate_and_band(reversal_fit):
    data, _ = reversal_fit
    out = be.bootstrap.compare_curve(data, "A", "B", k=[1, 4, 8], n_boot=4000, seed=1)
    c = data.dataset["successes"].values
    for k in (1, 4, 8):
        direct = np.mean(
            [_pass_at_k(10, a, k) - _pass_at_k(10, b, k) for a, b in zip(*c, strict=True)]
        )
        assert out["effect"].sel(k=k).item() == pytest.approx(direct)
    band, point = out["effect_band"].values, out["effect_interval"].values
    assert ((band[:, 1] - band[:, 0]) > (point[:, 1] - point[:, 0])).all()
    with pytest.raises(ValueError, match="needs task clusters"):
        be.bootstrap.compare_curve(data, "A", "B", k=[1, 2], unit="cluster")


def test_winner_names_the_observed_best_and_its_optimism():
    data = be.from_counts(
        [[6, 7, 5, 8], [7, 6, 7, 8], [6, 6, 6, 7]], trials=10, systems=["A", "B", "C"]
    )
    res = fake_results(data, model="hierarchical", draws=300, chains=2, seed=0)
    out = res.winner(n_replicates=200)
    assert out.attrs["pick"] == "B"
    assert float(out["naive_score"]) == pytest.approx(28 / 40)
    value = res.pass_at_k(estimand="population").sel(system="B").values.ravel()
    assert float(out["value_mean"]) == pytest.approx(value.mean())
    # optimism is measured against the naive score's own target, the mean over these tasks
    tasks = res.pass_at_k(estimand="tasks").sel(system="B").values
    assert float(out["optimism"]) == pytest.approx(28 / 40 - tasks.mean(), rel=1e-12)
    assert 0 < float(out["prob_pick_is_best"]) < 1
    assert np.isfinite(float(out["expected_optimism"]))
    with pytest.raises(ValueError, match="one k"):
        res.winner(k=[1, 2])
    with pytest.raises(ValueError, match="n_replicates must be a positive int"):
        res.winner(n_replicates=0)


def test_replicate_selection_finds_the_selection_bias_of_equal_systems(monkeypatch):
    """With the task rates known and equal for every system, picking the best of m by its
    observed score overstates it by sigma E[max of m standard normals] (normal closed form)."""
    m, J, p = 8, 160, 0.85
    data = be.from_counts(np.zeros((m, J), int), trials=2, systems=[f"s{i}" for i in range(m)])
    res = fake_results(data, model="hierarchical", draws=300, chains=2, seed=0)
    # the replicates keep the observed trials: one per task, as in the closed form below
    res._tree["constant_data"]["trials"] = res._tree["constant_data"]["trials"] * 0 + 1
    import xarray as xr

    rates = xr.DataArray(np.full((2, 300, m, J), p), dims=("chain", "draw", "system", "task"))
    monkeypatch.setattr(type(res), "task_rates", lambda self, system=None: rates)
    out = ranks._replicate_selection(res, "pass@k", 1, 600, seed=3)
    grid = np.linspace(-8, 8, 4001)
    e_max = np.trapezoid(grid * m * stats.norm.pdf(grid) * stats.norm.cdf(grid) ** (m - 1), grid)
    expected = np.sqrt(p * (1 - p) / J) * e_max
    se = out["optimism"].std(ddof=1) / np.sqrt(len(out["optimism"]))
    assert out["optimism"].mean() == pytest.approx(expected, abs=4 * se + 0.002)
    assert out["best_picked"].all()  # every system is the best when all are equal
