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
    # two kinds of task: a replicate is one number (how many of A's tasks it drew), so the
    # curve's replicates move together over k and the band is the pointwise intervals
    np.testing.assert_allclose(band, point)
    assert float(out["band_level"]) == pytest.approx(0.95)
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


@pytest.fixture(scope="module")
def terminal_bench():
    """Terminal-Bench under missing="exclude": tasks keep 0 to 5 valid trials."""
    return be.datasets.load("terminal_bench", missing="exclude")


def _direct_curve(data, cand, base, k, by_cluster, bound=None):
    """The curve's point at k from the long table: tasks with >= k trials for both, each
    task's unbiased difference, averaged over tasks or over cluster means."""
    ds = data.dataset
    succ = ds["successes"]
    lo = {"lower": "upper", "upper": "lower"}

    def sel(system, b):
        values = succ.sel(system=system)
        return values if b is None else values.sel(missing_bound=b)

    c1, c0 = sel(cand, bound).values, sel(base, None if bound is None else lo[bound]).values
    n1, n0 = ds["trials"].sel(system=cand).values, ds["trials"].sel(system=base).values
    rows = [
        (cl, _pass_at_k(int(a), int(x), k) - _pass_at_k(int(b), int(y), k))
        for cl, x, a, y, b in zip(ds["cluster"].values, c1, n1, c0, n0, strict=True)
        if a >= k and b >= k
    ]
    if not by_cluster:
        return np.mean([d for _, d in rows])
    clusters = {}
    for cl, d in rows:
        clusters.setdefault(cl, []).append(d)
    return np.mean([np.mean(v) for v in clusters.values()])


def test_curve_points_are_the_comparison_bootstraps_at_each_k(terminal_bench):
    data = terminal_bench
    a, b = data.systems[0], data.systems[1]
    for unit, weighting in (("task", "task"), ("cluster", "cluster"), ("cluster", "task")):
        out = be.bootstrap.compare_curve(
            data, a, b, k=[1, 3, 5], unit=unit, weighting=weighting, n_boot=300, seed=2
        )
        single = be.bootstrap.compare(
            data, a, b, k=1, unit=unit, weighting=weighting, n_boot=300, seed=2
        )
        # the k = 1 point over every shared task, weighted as the comparison weighs it
        assert out["effect"].sel(k=1).item() == pytest.approx(float(single["effect_mean"]))
        for k in (1, 3, 5):
            direct = _direct_curve(data, a, b, k, by_cluster=weighting == "cluster")
            assert out["effect"].sel(k=k).item() == pytest.approx(direct)
        n = data.dataset["trials"].sel(system=[a, b]).values
        assert out["n_tasks"].values.tolist() == [int((n >= k).all(0).sum()) for k in (1, 3, 5)]
        band, point = out["effect_band"].values, out["effect_interval"].values
        assert (band[:, 0] <= point[:, 0]).all() and (band[:, 1] >= point[:, 1]).all()
    with pytest.raises(ValueError, match="weighting='cluster' resamples whole clusters"):
        be.bootstrap.compare_curve(data, a, b, k=[1, 2], weighting="cluster")


def test_curves_under_missing_bounds_cross_the_bounds():
    data = be.datasets.load("terminal_bench", missing="bounds")
    a, b = data.systems[0], data.systems[1]
    out = be.bootstrap.compare_curve(data, a, b, k=[1, 5], n_boot=200, seed=0)
    for bound in ("lower", "upper"):
        for k in (1, 5):
            direct = _direct_curve(data, a, b, k, by_cluster=False, bound=bound)
            got = out["effect"].sel(missing_bound=bound, k=k).item()
            assert got == pytest.approx(direct)
    res = fake_results(data, model="hierarchical", draws=100, chains=2, seed=0)
    curve = res.compare_curve(a, b, k=[1, 5])
    cmp = res.compare(a, b, k=[1, 5])
    np.testing.assert_allclose(
        curve["effect_mean"].transpose("missing_bound", "k").values,
        cmp["effect_mean"].transpose("missing_bound", "k").values,
    )
    band = curve["effect_band"].transpose("missing_bound", "k", "ci_bound").values
    point = curve["effect_interval"].transpose("missing_bound", "k", "ci_bound").values
    assert (band[..., 0] <= point[..., 0]).all() and (band[..., 1] >= point[..., 1]).all()
    # each bound's contributions sum to that bound's unbiased-estimator effect
    for bound in ("lower", "upper"):
        total = curve["task_contribution_observed"].sel(missing_bound=bound, k=1).sum().item()
        assert total == pytest.approx(_direct_curve(data, a, b, 1, False, bound))
    with pytest.raises(ValueError, match="select one"):
        curves.reversal_tasks(curve)
    assert len(curves.reversal_tasks(curve.sel(missing_bound="lower"), top=3)) == 3


def test_the_band_contains_the_pointwise_interval_and_covers_every_k_at_once():
    data = be.from_counts([[10, 9, 0, 0, 1, 10], [9, 10, 1, 0, 0, 8]], trials=10)
    res = fake_results(data, model="hierarchical", draws=400, chains=2, seed=5)
    curve = res.compare_curve(*data.systems, k=[1, 2, 4, 8, 10])
    band, point = curve["effect_band"].values, curve["effect_interval"].values
    assert (band[:, 0] <= point[:, 0] + 1e-12).all() and (band[:, 1] >= point[:, 1] - 1e-12).all()
    draws = res.compare(*data.systems, k=[1, 2, 4, 8, 10])["effect"]
    values = draws.stack(sample=("chain", "draw")).transpose("sample", "k").values
    inside = ((values >= band[:, 0]) & (values <= band[:, 1])).all(axis=1).mean()
    assert inside == pytest.approx(0.95, abs=0.01)


def test_curve_resamples_tasks_within_their_clusters_as_the_comparison_does():
    # within each cluster every task has the same counts, so tasks resampled within their
    # clusters (each cluster keeping its tasks' share) give every replicate the estimate
    # itself: zero width; tasks resampled freely move the clusters' shares, and with them
    # the effect
    per_cluster = {"x": (9, 2), "y": (3, 8), "z": (6, 6)}
    sizes = {"x": 2, "y": 3, "z": 5}
    clusters = [cl for cl, size in sizes.items() for _ in range(size)]
    counts = np.array([per_cluster[cl] for cl in clusters]).T
    data = be.from_counts(counts, trials=10, systems=["A", "B"], clusters=clusters)
    ks = [1, 2, 5]
    within = be.bootstrap.compare_curve(
        data, "A", "B", k=ks, clusters="observed", n_boot=400, seed=0
    )
    free = be.bootstrap.compare_curve(data, "A", "B", k=ks, n_boot=400, seed=0)
    for k in ks:
        direct = sum(
            sizes[cl] * (_pass_at_k(10, a, k) - _pass_at_k(10, b, k))
            for cl, (a, b) in per_cluster.items()
        ) / sum(sizes.values())
        assert within["effect"].sel(k=k).item() == pytest.approx(direct)
        assert free["effect"].sel(k=k).item() == pytest.approx(direct)
    np.testing.assert_allclose(
        within["effect_interval"].values, np.repeat(within["effect"].values[:, None], 2, axis=1)
    )
    width = free["effect_interval"].sel(ci_bound="upper") - free["effect_interval"].sel(
        ci_bound="lower"
    )
    assert (width > 0.05).all()
    # the k = 1 point and its width are the comparison bootstrap's at the same settings
    single = be.bootstrap.compare(data, "A", "B", k=1, clusters="observed", n_boot=400)
    assert within["effect"].sel(k=1).item() == pytest.approx(float(single["effect_mean"]))
    assert float(np.ptp(single["effect_interval"].values)) == pytest.approx(0.0, abs=1e-12)
    assert within.attrs["clusters"] == "observed"
    with pytest.raises(ValueError, match="clusters='observed' resamples tasks"):
        be.bootstrap.compare_curve(data, "A", "B", k=ks, unit="cluster", clusters="observed")
