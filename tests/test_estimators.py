"""Estimators against exact rational arithmetic, statsmodels/SciPy and exact coverage sums."""

import statistics
from fractions import Fraction
from math import comb

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.proportion import proportion_confint

import bayeval as be
from bayeval import estimators as est


def _exact_pass_at_k(n, c, k):
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def _exact_pass_hat_k(n, c, k):
    return Fraction(comb(c, k), comb(n, k))


def test_unbiased_estimators_match_exact_fractions():
    grid = [(n, c, k) for n in range(1, 25) for c in range(n + 1) for k in range(1, n + 1)]
    n, c, k = map(np.array, zip(*grid, strict=True))
    at_k, hat_k = be.pass_at_k(n, c, k), be.pass_hat_k(n, c, k)
    for i, (nn, cc, kk) in enumerate(grid):
        assert at_k[i] == pytest.approx(float(_exact_pass_at_k(nn, cc, kk)), rel=1e-12, abs=1e-15)
        assert hat_k[i] == pytest.approx(float(_exact_pass_hat_k(nn, cc, kk)), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("c", [1, 2, 7, 500, 1000, 1001, 1500, 1999, 2000])
def test_product_form_at_n_2000_k_1000(c):
    n, k = 2000, 1000
    q = Fraction(comb(n - c, k), comb(n, k))
    assert be.pass_at_k(n, c, k) == pytest.approx(float(1 - q), rel=1e-12, abs=1e-300)
    r = Fraction(comb(c, k), comb(n, k))
    assert be.pass_hat_k(n, c, k) == pytest.approx(float(r), rel=1e-9, abs=1e-300)
    assert np.isfinite(be.pass_hat_k(n, c, k))


def test_nan_where_n_below_k_and_scalar_types():
    assert np.isnan(be.pass_at_k(3, 1, 4)) and np.isnan(be.pass_hat_k(3, 1, 4))
    assert isinstance(be.pass_at_k(3, 1, 2), float)
    out = be.pass_at_k(np.array([[5, 5]]), np.array([[0, 5]]), np.array([1, 6]))
    assert out.shape == (1, 2) and out[0, 0] == 0.0 and np.isnan(out[0, 1])


def test_estimator_input_errors():
    with pytest.raises(ValueError, match="0..n"):
        be.pass_at_k(3, 4, 1)
    with pytest.raises(ValueError, match="k must be >= 1"):
        be.pass_at_k(3, 1, 0)
    with pytest.raises(ValueError, match="whole numbers"):
        be.pass_at_k(3.5, 1, 1)


def test_tau_bench_pass_hat_k_reproduces_the_paper():
    data = be.datasets.load("tau_bench_airline")
    ds = data.dataset
    values = est.task_metric(ds["successes"], ds["trials"], [1, 2, 3, 4], "pass^k")
    assert values.dims == ("system", "task", "k")
    assert values.mean("task").values.round(3).ravel().tolist() == [0.42, 0.273, 0.22, 0.2]


@pytest.mark.parametrize(
    "func, method",
    [
        (be.wilson_interval, "wilson"),
        (est.clopper_pearson_interval, "beta"),
        (est.jeffreys_interval, "jeffreys"),
        (est.wald_interval, "normal"),
    ],
)
@pytest.mark.parametrize("ci_prob", [0.9, 0.95, 0.99])
def test_intervals_match_statsmodels(func, method, ci_prob):
    n = np.array([1, 5, 10, 40, 40, 40, 200, 1000])
    c = np.array([0, 5, 3, 0, 1, 20, 199, 17])
    lower, upper = func(c, n, ci_prob=ci_prob)
    ref_lower, ref_upper = proportion_confint(c, n, alpha=1 - ci_prob, method=method)
    np.testing.assert_allclose(lower, ref_lower, atol=1e-10)
    np.testing.assert_allclose(upper, ref_upper, atol=1e-10)


def test_clopper_pearson_matches_scipy_binomtest():
    for n, c in [(10, 0), (10, 4), (37, 37), (100, 13)]:
        ref = stats.binomtest(c, n).proportion_ci(confidence_level=0.95, method="exact")
        assert est.clopper_pearson_interval(c, n) == pytest.approx((ref.low, ref.high))


def _exact_coverage(func, n, p):
    c = np.arange(n + 1)
    lower, upper = func(c, np.full(n + 1, n), ci_prob=0.95)
    covers = (lower <= p) & (p <= upper)
    return float(stats.binom.pmf(c, n, p)[covers].sum())


def test_exact_coverage_wilson_vs_wald_at_n_40():
    ps = np.linspace(0.02, 0.98, 97)
    wilson = np.array([_exact_coverage(be.wilson_interval, 40, p) for p in ps])
    wald = np.array([_exact_coverage(est.wald_interval, 40, p) for p in ps])
    assert abs(wilson.mean() - 0.95) < 0.01
    assert wilson.min() > 0.83  # Wilson's worst dips stay moderate
    assert _exact_coverage(est.wald_interval, 40, 0.03) == pytest.approx(0.70, abs=0.03)
    assert wald.mean() < wilson.mean() - 0.03
    assert (est.clopper_pearson_interval(np.arange(41), 40)[0] >= 0).all()
    assert min(_exact_coverage(est.clopper_pearson_interval, 40, p) for p in ps) >= 0.95


def test_design_effect_matches_statsmodels_anova(rng):
    n = rng.integers(3, 12, size=15)
    c = rng.binomial(n, rng.beta(0.6, 0.8, size=15))
    rows = pd.DataFrame(
        {
            "task": np.repeat(np.arange(15), n),
            "y": np.concatenate([[1] * ci + [0] * (ni - ci) for ni, ci in zip(n, c, strict=True)]),
        }
    )
    table = anova_lm(smf.ols("y ~ C(task)", data=rows).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    N = n.sum()
    n0 = (N - (n**2).sum() / N) / (len(n) - 1)
    expected = (msb - msw) / (msb + (n0 - 1) * msw)
    data = be.from_counts(c, n)
    out = be.design_effect(data)
    assert set(out.data_vars) == {"icc", "design_effect", "mean_trials", "effective_trials"}
    assert out["icc"].dims == ("system",)
    assert float(out["icc"][0]) == pytest.approx(expected, rel=1e-10)
    assert float(out["design_effect"][0]) == pytest.approx(1 + (N / 15 - 1) * expected)


def test_design_effect_recovers_beta_binomial_icc(rng):
    # Beta(a, b) task rates give an intra-task correlation of 1 / (a + b + 1)
    a, b = 0.4, 0.3
    p = rng.beta(a, b, size=(200, 400))
    c = rng.binomial(16, p)
    data = be.from_counts(c, 16)
    icc = be.design_effect(data)["icc"].values
    assert icc.mean() == pytest.approx(1 / (a + b + 1), abs=0.01)


def test_design_effect_is_nan_with_one_trial():
    out = be.design_effect(be.from_counts([1, 0, 1, 1], 1))
    assert np.isnan(out["icc"]).all()


def test_design_effect_per_missing_bound():
    frame = pd.DataFrame(
        {
            "system": "A",
            "task": np.repeat(["t1", "t2", "t3"], 4),
            "success": [1, 1, 0, np.nan, 0, 0, 0, 0, 1, 1, 1, 1],
            "status": ["ok"] * 3 + ["timeout"] + ["ok"] * 8,
        }
    )
    data = be.from_frame(frame, status="status", missing="bounds")
    out = be.design_effect(data)
    assert set(out["icc"].dims) == {"system", "missing_bound"}
    for bound, fill in (("lower", 0), ("upper", 1)):
        alone = be.from_counts([[2 + fill, 0, 4]], trials=4)
        expected = be.design_effect(alone)["icc"].item()
        assert out["icc"].sel(system="A", missing_bound=bound).item() == pytest.approx(expected)


@pytest.mark.parametrize(
    "func, method",
    [
        (be.wilson_interval, "wilson"),
        (est.clopper_pearson_interval, "beta"),
        (est.jeffreys_interval, "jeffreys"),
        (est.wald_interval, "normal"),
    ],
)
def test_intervals_are_statsmodels_to_the_last_bit(func, method):
    n = np.repeat([1, 2, 7, 40, 333], [2, 3, 8, 41, 334])
    c = np.concatenate([np.arange(m + 1) for m in (1, 2, 7, 40, 333)])
    for ci_prob, alpha in ((0.95, 0.05), (0.9, 0.1), (0.5, 0.5), (0.999, 0.001)):
        lower, upper = func(c, n, ci_prob=ci_prob)
        ref_lower, ref_upper = proportion_confint(c, n, alpha=alpha, method=method)
        assert np.max(np.abs(lower - ref_lower)) <= 1e-16
        assert np.max(np.abs(upper - ref_upper)) <= 1e-16
    # vectorised: broadcasting, scalars in and out, NaN where n == 0
    grid_lower, grid_upper = func(np.array([[0], [3]]), np.array([5, 10]))
    assert grid_lower.shape == grid_upper.shape == (2, 2)
    empty = func(np.array([0, 1]), np.array([0, 4]))
    assert np.isnan(empty[0][0]) and np.isnan(empty[1][0]) and not np.isnan(empty[0][1])
    np.testing.assert_array_equal(
        grid_upper[1, :2], proportion_confint(3, np.array([5, 10]), method=method)[1]
    )
    scalar = func(3, 10)
    assert isinstance(scalar[0], float) and isinstance(scalar[1], float)
    assert scalar == tuple(float(x) for x in proportion_confint(3, 10, method=method))


def test_unbiased_table_matches_exact_fractions():
    for n in (1, 6, 25):
        ks = np.arange(1, n + 2)
        for metric in ("pass@k", "pass^k"):
            table = est.unbiased_table(n, ks, metric)
            for c in range(n + 1):
                for j, k in enumerate(ks):
                    if k > n:
                        assert np.isnan(table[c, j])
                        continue
                    exact = (
                        1 - Fraction(comb(n - c, k), comb(n, k))
                        if metric == "pass@k"
                        else Fraction(comb(c, k), comb(n, k))
                    )
                    assert table[c, j] == pytest.approx(float(exact), abs=1e-15)


def test_estimators_stay_in_the_unit_interval_at_large_k():
    # regression: probabilities computed by rounding-prone sums reached 1.0000000000000002
    c = np.arange(0, 20_001, 97)
    for k in (1, 10, 1000, 10_000):
        for func in (be.pass_at_k, be.pass_hat_k):
            values = func(20_000, c, k)
            assert ((0.0 <= values) & (values <= 1.0)).all()
    assert float(est.clip_probability(np.nextafter(1.0, 2.0))) == 1.0


def test_measured_order_ranks_the_mean_task_rate_by_hand():
    """Mean over valid tasks of c / n (exact fractions; a task not run left out), ties in the
    data's order, a system without a valid task last; the lower bound under bounds."""
    c = {"low": [2, 3, 0], "high": [9, 8, 0], "mid": [5, 6, 0], "odd": [7, 1, 3], "none": [0, 0, 0]}
    n = {"low": [10, 10, 0], "high": [10, 10, 0], "mid": [10, 10, 0], "odd": [10, 10, 5]}
    rows = [
        {"system": s, "task": f"t{j}", "status": "ok", "success": int(t < c[s][j])}
        for s, trials in n.items()
        for j, m in enumerate(trials)
        for t in range(m)
    ]
    rows += [{"system": "none", "task": "t0", "status": "timeout", "success": None}]
    data = be.from_frame(pd.DataFrame(rows), status="status", missing="exclude")
    out = est.measured_order(data)
    labels = ["low", "high", "mid", "odd", "none"]
    expected = [
        sum(Fraction(c[s][j], m) for j, m in enumerate(n[s]) if m) / sum(map(bool, n[s]))
        for s in labels[:4]
    ]
    np.testing.assert_allclose(
        out["score"].sel(system=labels).values, [*map(float, expected), np.nan], rtol=1e-15
    )
    # high 0.85 > mid 0.55 > odd 0.4667 > low 0.25; none last
    assert out["position"].sel(system=labels).values.tolist() == [3, 0, 1, 2, 4]
    twins = est.measured_order(be.from_counts([[3, 5], [5, 3]], 10, systems=["B", "A"]))
    assert twins["position"].values.tolist() == [0, 1]  # a tie keeps the data's order
    frame = pd.DataFrame(
        {
            "system": ["A"] * 4 + ["B"] * 4,
            "task": ["t0", "t0", "t1", "t1"] * 2,
            "status": ["ok", "timeout", "ok", "ok", "ok", "ok", "ok", "ok"],
            "success": [1, None, 0, 1, 1, 0, 0, 0],
        }
    )
    bounds = be.from_frame(frame, status="status", missing="bounds")
    # the lower bound counts A's lost attempt as a failure: (1/2 + 1/2) / 2 against 1/4
    np.testing.assert_allclose(est.measured_order(bounds)["score"].values, [0.5, 0.25])


def test_trial_counts_by_hand_leaving_out_cells_not_run():
    """min, median, max of the per-cell trials by hand (statistics module), cells with no
    valid trial left out; integers but the median, NaN where no cell has a trial."""
    trials = {"A": [3, 1, 0, 4], "B": [2, 2, 5, 0]}
    rows = [
        {"system": s, "task": f"t{j}", "status": "ok", "success": t % 2}
        for s, counts in trials.items()
        for j, m in enumerate(counts)
        for t in range(m)
    ]
    rows += [{"system": "A", "task": "t2", "status": "timeout", "success": None}]
    data = be.from_frame(pd.DataFrame(rows), status="status", missing="exclude")
    out = est.trial_counts(data)
    used = [m for counts in trials.values() for m in counts if m]  # 3, 1, 4, 2, 2, 5
    assert out["min_trials"].item() == 1 and isinstance(out["min_trials"].item(), int)
    assert out["max_trials"].item() == 5 and isinstance(out["max_trials"].item(), int)
    assert out["median_trials"].item() == statistics.median(used) == 2.5
    assert all(out[name].dims == () for name in out.data_vars)
    timeouts = pd.DataFrame(
        {"system": "A", "task": ["t0", "t1"], "status": "timeout", "success": None}
    )
    empty = est.trial_counts(be.from_frame(timeouts, status="status", missing="exclude"))
    assert all(
        np.isnan(empty[name].item()) for name in ("min_trials", "median_trials", "max_trials")
    )
