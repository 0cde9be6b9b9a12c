"""The array layer of the analyses (bayeval.analyses.arrays), against independent references."""

import ast
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bayeval.analyses import arrays


def _normal_draws(mu, sd, n=200_000, seed=0):
    """Draws of effects of known normal law, one column per (mu, sd): shape (draw, effect)."""
    rng = np.random.default_rng(seed)
    return rng.normal(np.asarray(mu), np.asarray(sd), size=(n, np.size(mu)))


def _mc_tol(p, n):
    """Four Monte Carlo standard errors of a share p estimated from n independent draws."""
    return 4 * np.sqrt(np.asarray(p) * (1 - np.asarray(p)) / n) + 1e-12


# -- intervals and tail probabilities ----------------------------------------------------------
def test_eti_is_the_linear_quantile_pair():
    draws = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    # sorted 1 1 2 3 4 5 6 9; the 0.1 quantile sits at position 0.7 (linear: 1), the 0.9 at 6.3
    np.testing.assert_allclose(arrays.eti(draws, ci_prob=0.8), [1.0, 6.0 + 0.3 * 3.0])
    np.testing.assert_allclose(
        arrays.eti(draws, ci_prob=0.5), np.quantile(draws, [0.25, 0.75]), rtol=0, atol=0
    )


def test_eti_of_normal_draws_is_the_normal_interval():
    mu, sd = np.array([0.1, -0.2]), np.array([0.05, 0.3])
    draws = _normal_draws(mu, sd)
    out = arrays.eti(draws, ci_prob=0.9, axis=0)
    exact = np.stack([stats.norm.ppf(0.05, mu, sd), stats.norm.ppf(0.95, mu, sd)], axis=-1)
    np.testing.assert_allclose(out, exact, atol=0.01 * sd.max())


def test_prob_above_is_the_normal_tail_within_monte_carlo_error():
    mu, sd = np.array([0.02, -0.01, 0.0]), np.array([0.03, 0.02, 0.05])
    draws = _normal_draws(mu, sd, seed=1)
    for threshold in (0.0, 0.01, -0.01):
        exact = stats.norm.sf(threshold, mu, sd)
        got = arrays.prob_above(draws, threshold=threshold, axis=0)
        assert (np.abs(got - exact) <= _mc_tol(exact, len(draws))).all()


def test_prob_above_counts_strictly_above_and_nan_as_not_above():
    draws = np.array([-1.0, 0.0, 0.0, 2.0, np.nan])
    assert arrays.prob_above(draws) == pytest.approx(1 / 5)
    assert arrays.prob_above(draws, threshold=-0.5) == pytest.approx(3 / 5)


def test_summarize_effect_matches_the_normal_closed_forms():
    mu, sd, margin = np.array([0.03, 0.0, -0.02]), np.array([0.02, 0.04, 0.01]), 0.01
    draws = _normal_draws(mu, sd, seed=2)
    out = arrays.summarize_effect(draws, ci_prob=0.95, margin=margin, axis=0)
    n = len(draws)
    assert set(out) == {
        "effect_mean",
        "effect_interval",
        "prob_positive",
        "prob_above_margin",
        "prob_noninferior",
    }
    np.testing.assert_allclose(out["effect_mean"], mu, atol=4 * sd.max() / np.sqrt(n))
    exact = np.stack([stats.norm.ppf(0.025, mu, sd), stats.norm.ppf(0.975, mu, sd)], axis=-1)
    np.testing.assert_allclose(out["effect_interval"], exact, atol=0.01 * sd.max())
    for key, threshold in (
        ("prob_positive", 0.0),
        ("prob_above_margin", margin),
        ("prob_noninferior", -margin),
    ):
        p = stats.norm.sf(threshold, mu, sd)
        assert (np.abs(out[key] - p) <= _mc_tol(p, n)).all(), key


def test_summarize_effect_is_the_same_whatever_the_axes():
    rng = np.random.default_rng(3)
    draws = rng.normal(size=(4, 250, 3))  # (chain, draw, k)
    first = arrays.summarize_effect(draws, axis=(0, 1), margin=0.1)
    moved = arrays.summarize_effect(np.moveaxis(draws, -1, 0), margin=0.1, axis=(-2, -1))
    transposed = arrays.summarize_effect(draws.T, margin=0.1, axis=(1, 2))
    flat = draws.reshape(-1, 3)
    for key, value in first.items():
        np.testing.assert_array_equal(value, moved[key])
        np.testing.assert_allclose(value, transposed[key], rtol=1e-14, atol=0)
    np.testing.assert_allclose(first["effect_mean"], flat.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(
        first["effect_interval"], np.quantile(flat, [0.025, 0.975], axis=0).T, rtol=1e-14
    )
    np.testing.assert_array_equal(first["prob_above_margin"], (flat > 0.1).mean(axis=0))


def test_summarize_pairwise_effects_is_each_pairs_summary_with_a_nan_diagonal():
    rng = np.random.default_rng(4)
    draws = rng.normal([0.2, 0.25, 0.3, 0.3], 0.05, size=(500, 4))  # (draw, system)
    out = arrays.summarize_pairwise_effects(draws, margin=0.02, axis=0, system_axis=1)
    for i in range(4):
        for j in range(4):
            if i == j:
                assert np.isnan(out["effect_mean"][i, j])
                assert np.isnan(out["effect_interval"][i, j]).all()
                continue
            d = draws[:, i] - draws[:, j]
            assert out["effect_mean"][i, j] == pytest.approx(d.mean(), rel=1e-12)
            np.testing.assert_allclose(
                out["effect_interval"][i, j], np.quantile(d, [0.025, 0.975]), rtol=1e-12
            )
            assert out["prob_positive"][i, j] == np.count_nonzero(d > 0) / len(d)
            assert out["prob_above_margin"][i, j] == np.count_nonzero(d > 0.02) / len(d)
            assert out["prob_noninferior"][i, j] == np.count_nonzero(d > -0.02) / len(d)


def test_summarize_pairwise_effects_in_blocks_gives_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(5)
    draws = rng.normal(size=(2, 5, 2, 60))  # (batch, system, chain, draw)
    whole = arrays.summarize_pairwise_effects(draws, axis=(2, 3), system_axis=1)
    monkeypatch.setattr(arrays, "_MAX_CELLS", 2 * 120 * 7)  # 7 of the 20 pairs a block
    blocks = arrays.summarize_pairwise_effects(draws, axis=(2, 3), system_axis=1)
    for key, value in whole.items():
        assert value.shape[:3] == (2, 5, 5)
        np.testing.assert_array_equal(value, blocks[key])
    # the batch axis is kept: each batch index is its own set of systems
    alone = arrays.summarize_pairwise_effects(draws[1].reshape(5, -1))
    np.testing.assert_allclose(whole["effect_mean"][1], alone["effect_mean"], rtol=1e-12)


# -- ranks -------------------------------------------------------------------------------------
def test_rank_draws_are_scipys_min_ranks_of_the_negated_values():
    values = np.array(
        [
            [0.2, 0.9, 0.5, 0.9],
            [0.7, 0.7, 0.7, 0.1],
            [0.1, 0.2, 0.3, 0.4],
        ]
    )
    expected = stats.rankdata(-values, method="min", axis=1)
    np.testing.assert_array_equal(arrays.rank_draws(values), expected)
    np.testing.assert_array_equal(arrays.rank_draws(values.T, system_axis=0), expected.T)
    cube = np.stack([values, values[::-1]], axis=1)  # (draw, chain, system)
    np.testing.assert_array_equal(
        arrays.rank_draws(cube, system_axis=2), stats.rankdata(-cube, method="min", axis=2)
    )


def test_prob_top_and_rank_summary_count_the_rank_draws():
    ranks = np.array([[1, 2, 1, 3, 1], [2, 1, 3, 1, 2], [3, 3, 2, 2, 3]])  # (system, draw)
    np.testing.assert_array_equal(arrays.prob_top(ranks, top=1), [3 / 5, 2 / 5, 0.0])
    np.testing.assert_array_equal(arrays.prob_top(ranks, top=2), [4 / 5, 4 / 5, 2 / 5])
    out = arrays.summarize_ranks(ranks, ci_prob=0.5, top=2)
    np.testing.assert_allclose(out["rank_mean"], [8 / 5, 9 / 5, 13 / 5])
    # whole ranks: floor(5 x 0.25) = 1 draw cut from each tail of each system's sorted draws
    np.testing.assert_array_equal(out["rank_interval"], [[1, 2], [1, 2], [2, 3]])
    np.testing.assert_array_equal(out["prob_best"], [3 / 5, 2 / 5, 0.0])
    np.testing.assert_array_equal(out["prob_top"], [4 / 5, 4 / 5, 2 / 5])
    np.testing.assert_array_equal(
        arrays.summarize_ranks(ranks.T, axis=0)["rank_mean"], out["rank_mean"]
    )


def _joint_share(ranks, bounds):
    """Share of the draws (columns) with every system's rank inside its bounds at once."""
    inside = (ranks >= bounds[:, :1]) & (ranks <= bounds[:, 1:])
    return inside.all(axis=0).mean()


@pytest.mark.parametrize("seed", range(6))
def test_simultaneous_rank_intervals_are_the_tightest_common_cut_that_holds(seed):
    rng = np.random.default_rng(seed)
    n_sys, n_draws, ci = 6, 400, 0.9
    means = np.array([0, 0, 0.3, 0.6, 0.6, 1.0])[:, None]
    ranks = arrays.rank_draws(0.25 * rng.normal(size=(n_sys, n_draws)) + means, system_axis=0)
    most = 20  # floor(400 x 0.1 / 2)
    joint = arrays.rank_intervals(ranks, ci_prob=ci, system_axis=0, axis=1)
    own = arrays.rank_intervals(ranks, ci_prob=ci, simultaneous=False, system_axis=0, axis=1)
    ordered = np.sort(ranks, axis=1)

    # brute force over every common cut t: the largest whose bounds hold ci of the draws at once
    def cut(t):
        return np.stack([ordered[:, t], ordered[:, n_draws - 1 - t]], axis=1)

    best = max(t for t in range(most + 1) if _joint_share(ranks, cut(t)) >= ci)
    np.testing.assert_array_equal(joint, cut(best))
    np.testing.assert_array_equal(own, cut(most))
    assert _joint_share(ranks, joint) >= ci
    assert np.all(joint[:, 0] <= own[:, 0]) and np.all(joint[:, 1] >= own[:, 1])
    # each system's own interval leaves at most (1 - ci) / 2 of its draws beyond each bound
    assert np.all((ranks < own[:, :1]).mean(axis=1) <= most / n_draws)
    assert np.all((ranks > own[:, 1:]).mean(axis=1) <= most / n_draws)


def test_rank_intervals_keep_batch_axes_apart():
    rng = np.random.default_rng(3)
    values = rng.normal(size=(2, 4, 300)) + np.arange(4)[None, :, None] * [[[0.2]], [[9.0]]]
    ranks = arrays.rank_draws(values, system_axis=1)
    both = arrays.rank_intervals(ranks, system_axis=1, axis=2)
    for b in range(2):
        np.testing.assert_array_equal(
            both[b], arrays.rank_intervals(ranks[b], system_axis=0, axis=1)
        )
    assert both[1].tolist() == [[4, 4], [3, 3], [2, 2], [1, 1]]  # nine sds apart: known


def test_prob_best_of_two_independent_normals_is_the_normal_probability():
    # B - A ~ Normal(d, sqrt(2)): P(B best) = Phi(d / sqrt(2))
    d = 0.5
    draws = _normal_draws([0.0, d], [1.0, 1.0], seed=6)  # (draw, system)
    got = arrays.prob_best(draws, axis=0, system_axis=1)
    exact = stats.norm.cdf(d / np.sqrt(2))
    assert abs(got[1] - exact) <= _mc_tol(exact, len(draws))
    assert got.sum() == pytest.approx(1.0)


def test_prob_best_counts_a_tie_for_best_as_best():
    values = np.array([[1.0, 1.0, 0.0], [0.5, 0.2, 0.9]])  # (draw, system)
    np.testing.assert_array_equal(arrays.prob_best(values, axis=0, system_axis=1), [0.5, 0.5, 0.5])


def test_group_systems_applies_the_leader_rule():
    # A is better than B in 3 of 4 draws, than C in every draw; B better than C in every draw
    draws = np.array(
        [
            [0.9, 0.8, 0.95, 0.7],  # A
            [0.8, 0.85, 0.6, 0.65],  # B
            [0.1, 0.2, 0.3, 0.2],  # C
        ]
    )
    loose = arrays.group_systems(draws, prob=0.9)
    assert loose["system"].tolist() == [0, 1, 2]
    assert loose["group"].tolist() == [1, 1, 2]
    assert loose["leader"].tolist() == [0, 0, 2]
    np.testing.assert_allclose(loose["prob_leader_better"], [np.nan, 0.75, np.nan])
    np.testing.assert_allclose(loose["mean"], draws.mean(axis=1))
    strict = arrays.group_systems(draws.T, prob=0.7, axis=0, system_axis=1)
    assert strict["group"].tolist() == [1, 2, 3]


# -- curves over k -----------------------------------------------------------------------------
def test_sup_t_band_covers_all_ks_at_once_for_independent_normals():
    rng = np.random.default_rng(7)
    K, ci = 3, 0.9
    draws = rng.normal(size=(K, 100_000)) * np.array([[1.0], [2.0], [0.5]])  # (k, draw)
    band, q = arrays.sup_t_band(draws, ci_prob=ci)
    # P(max_k |Z_k| <= q) = (2 Phi(q) - 1)^K for independent standard normals
    assert float(q) == pytest.approx(stats.norm.ppf((1 + ci ** (1 / K)) / 2), abs=0.02)
    inside = ((draws >= band[:, :1]) & (draws <= band[:, 1:])).all(axis=0).mean()
    assert inside == pytest.approx(ci, abs=0.005)


def test_sup_t_band_is_computed_per_batch_index_and_for_any_axes():
    rng = np.random.default_rng(8)
    draws = rng.normal(size=(2, 4, 3, 50))  # (pair, k, chain, draw)
    band, q = arrays.sup_t_band(draws, axis=(2, 3), grid_axis=1)
    assert band.shape == (2, 4, 2) and q.shape == (2,)
    for b in range(2):
        one_band, one_q = arrays.sup_t_band(draws[b].reshape(4, -1))
        np.testing.assert_allclose(band[b], one_band, rtol=1e-12)
        assert q[b] == pytest.approx(float(one_q), rel=1e-12)
    flipped_band, flipped_q = arrays.sup_t_band(draws.transpose(3, 2, 1, 0), axis=(0, 1))
    np.testing.assert_allclose(flipped_band, band, rtol=1e-12)
    np.testing.assert_allclose(flipped_q, q, rtol=1e-12)


def test_sup_t_band_gives_a_constant_point_zero_width():
    draws = np.array([[0.0, 1.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5]])
    band, _ = arrays.sup_t_band(draws)
    assert band[1].tolist() == [0.5, 0.5]


def test_quantile_band_covers_all_ks_at_once_for_independent_normals():
    rng = np.random.default_rng(7)
    K, ci = 3, 0.9
    draws = rng.normal(size=(K, 100_000)) * np.array([[1.0], [2.0], [0.5]])  # (k, draw)
    band, level = arrays.quantile_band(draws, ci_prob=ci)
    # independent points: each holds its draw with probability ci ** (1 / K)
    assert float(level) == pytest.approx(ci ** (1 / K), abs=0.003)
    inside = ((draws >= band[:, :1]) & (draws <= band[:, 1:])).all(axis=0).mean()
    assert inside == pytest.approx(ci, abs=0.002)


def test_quantile_band_contains_the_pointwise_interval_of_skewed_draws():
    # log-normal draws, the same at three ks: the equal-tailed 95% interval reaches
    # exp(1.96) = 7.1, which mean +- q sd (q about 1.6 for one skewed point) stops short of
    rng = np.random.default_rng(3)
    one = np.exp(rng.normal(size=50_000))
    draws = np.stack([one, 2 * one, 3 * one])  # (k, draw)
    point = np.quantile(draws, [0.025, 0.975], axis=1).T
    sup_t, _ = arrays.sup_t_band(draws, ci_prob=0.95)
    assert (sup_t[:, 1] < point[:, 1]).all()  # what the curve's band used to be
    band, level = arrays.quantile_band(draws, ci_prob=0.95)
    assert (band[:, 0] <= point[:, 0]).all() and (band[:, 1] >= point[:, 1]).all()
    # the three points move together: holding one holds all, so the band is pointwise
    assert float(level) == pytest.approx(0.95, abs=1e-6)
    np.testing.assert_allclose(band, point, rtol=1e-6)


def test_quantile_band_is_computed_per_batch_index():
    rng = np.random.default_rng(8)
    draws = rng.normal(size=(2, 4, 3, 50))  # (pair, k, chain, draw)
    band, level = arrays.quantile_band(draws, axis=(2, 3), grid_axis=1)
    assert band.shape == (2, 4, 2) and level.shape == (2,)
    for b in range(2):
        one_band, one_level = arrays.quantile_band(draws[b].reshape(4, -1))
        np.testing.assert_allclose(band[b], one_band, rtol=1e-12)
        assert level[b] == pytest.approx(float(one_level), rel=1e-12)


def test_crossing_points_interpolate_along_any_grid_axis():
    grid = np.array([1, 2, 4, 8])
    curves = np.array(
        [
            [0.2, 0.1, -0.1, -0.3],  # crosses between 2 and 4, at 3
            [0.3, 0.2, 0.1, 0.05],  # never
            [-0.1, 0.3, -0.2, 0.1],  # first between 1 and 2, at 1.25
            [0.0, 0.0, -0.1, 0.2],  # a zero is no change; first between 4 and 8, at 4 + 4/3
        ]
    )
    expected = np.array([3.0, np.nan, 1.25, 4 + 4 * 0.1 / 0.3])
    np.testing.assert_allclose(arrays.crossing_points(curves, grid), expected)
    np.testing.assert_allclose(arrays.crossing_points(curves.T, grid, grid_axis=0), expected)
    cube = np.stack([curves, -curves], axis=1)  # (curve, sign, k)
    np.testing.assert_allclose(
        arrays.crossing_points(cube, grid), np.stack([expected, expected], axis=1)
    )


def test_summarize_crossings_uses_only_the_draws_that_cross():
    crossings = np.array([[2.0, np.nan, 3.0, 4.0, 6.0], [np.nan] * 5])
    out = arrays.summarize_crossings(crossings, ci_prob=0.5)
    np.testing.assert_array_equal(out["prob_cross"], [0.8, 0.0])
    np.testing.assert_array_equal(
        out["crossing_interval"][0], np.quantile([2.0, 3.0, 4.0, 6.0], [0.25, 0.75])
    )
    assert np.isnan(out["crossing_interval"][1]).all()


# -- refusals ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: arrays.eti(np.ones(5), ci_prob=1.0), ValueError, "ci_prob"),
        (lambda: arrays.eti(np.ones(5), ci_prob="0.9"), TypeError, "ci_prob"),
        (lambda: arrays.eti(np.ones((2, 5)), axis=2), ValueError, r"axis=2 is out of range"),
        (lambda: arrays.eti(np.ones((2, 5)), axis=(1, -1)), ValueError, "axis names an axis"),
        (lambda: arrays.eti(np.ones((2, 5)), axis=1.0), TypeError, "axis must be an int"),
        (lambda: arrays.eti(np.ones((2, 5)), axis=True), TypeError, "axis must be an int"),
        (lambda: arrays.eti(np.ones((2, 5)), axis=()), ValueError, "at least one axis"),
        (lambda: arrays.eti(np.ones((2, 0))), ValueError, "at least 1 draw"),
        (lambda: arrays.eti(np.array(["a", "b"])), TypeError, "real numbers; got dtype"),
        (lambda: arrays.prob_above(np.ones(3), threshold=None), TypeError, "threshold"),
        (lambda: arrays.prob_above(np.ones(3), threshold=np.nan), ValueError, "threshold"),
        (lambda: arrays.summarize_effect(np.ones(3), margin=-0.1), ValueError, "margin"),
        (lambda: arrays.summarize_effect(np.ones(3), margin=2), ValueError, "margin"),
        (
            lambda: arrays.summarize_pairwise_effects(np.ones((3, 4)), system_axis=1),
            ValueError,
            "system_axis=1 is one of the sample axes",
        ),
        (
            lambda: arrays.summarize_pairwise_effects(np.ones((3, 4)), system_axis=(0,)),
            TypeError,
            "system_axis must be an int",
        ),
        (lambda: arrays.rank_draws(np.ones((3, 4)), system_axis=2), ValueError, "system_axis"),
        (lambda: arrays.prob_top(np.ones((3, 4)), top=0), ValueError, "top must be"),
        (lambda: arrays.summarize_ranks(np.ones((3, 4)), top=True), ValueError, "top must"),
        (lambda: arrays.group_systems(np.ones((2, 3, 4))), ValueError, "no axes but"),
        (lambda: arrays.group_systems(np.ones((3, 4)), prob=0), ValueError, "prob"),
        (lambda: arrays.sup_t_band(np.ones((3, 1))), ValueError, "at least 2 draw"),
        (
            lambda: arrays.sup_t_band(np.ones((3, 4)), grid_axis=-1),
            ValueError,
            "grid_axis=-1 is one of the sample axes",
        ),
        (lambda: arrays.crossing_points(np.ones((2, 3)), [1, 2]), ValueError, "one value per"),
        (lambda: arrays.crossing_points(np.ones((2, 3)), [1, 3, 2]), ValueError, "increasing"),
        (lambda: arrays.crossing_points(np.ones((2, 3)), [[1, 2, 3]]), ValueError, "1-d"),
        (lambda: arrays.summarize_crossings(np.ones(3), ci_prob=0), ValueError, "ci_prob"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_inputs_are_not_changed():
    draws = np.array([[0.3, 0.1, 0.2], [0.1, 0.4, 0.0]])
    before = draws.copy()
    arrays.summarize_pairwise_effects(draws, axis=0, system_axis=1)
    arrays.rank_draws(draws)
    arrays.sup_t_band(draws.T)
    arrays.crossing_points(draws - 0.2, [1, 2, 3])
    np.testing.assert_array_equal(draws, before)


def test_the_array_layer_imports_only_numpy_and_the_validators():
    tree = ast.parse(Path(arrays.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    allowed = {"__future__", "numbers", "numpy", "scipy", "bayeval._validate", "bayeval.errors"}
    assert imported <= allowed, imported - allowed
