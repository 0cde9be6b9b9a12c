"""Planning helpers against closed forms and hand-computed adjustments."""

import math
import statistics
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import bayeval as be
from bayeval.planning import paired_spread, paired_task_sd


@pytest.mark.parametrize("sd, effect", [(0.3, 0.05), (0.5, 0.02), (0.2, 0.1)])
def test_required_units_close_to_normal_formula(sd, effect):
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    normal = (z * sd / effect) ** 2
    paired = be.required_units(sd, effect)
    assert normal <= paired <= normal + 3  # the t distribution needs a few more units
    unpaired = be.required_units(sd, effect, paired=False)
    assert 2 * normal <= unpaired <= 2 * normal + 3


def test_required_units_achieves_power_by_simulation():
    n = be.required_units(sd=1.0, effect=0.5)
    rng = np.random.default_rng(0)
    diffs = rng.normal(0.5, 1.0, size=(20_000, n))
    p = stats.ttest_1samp(diffs, 0.0, axis=1).pvalue
    assert (p < 0.05).mean() == pytest.approx(0.8, abs=0.015)


def test_adjust_pvalues_hand_computed():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # Bonferroni: p * m; Holm: step-down max((m - i + 1) p_(i)); BH: step-up min(m p_(i) / i)
    assert be.adjust_pvalues(p, "bonferroni").tolist() == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert be.adjust_pvalues(p, "holm").tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert be.adjust_pvalues(p, "bh").tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with pytest.raises(ValueError, match="method must be one of"):
        be.adjust_pvalues(p, "fdr")
    with pytest.raises(ValueError, match=r"p-values in \[0, 1\]"):
        be.adjust_pvalues([0.2, 1.2])


def _comparison(draws, margin=0.02):
    return xr.Dataset(
        {"effect": (("chain", "draw"), np.asarray(draws)[None])}, attrs={"margin": margin}
    )


def test_noninferiority_decisions():
    rng = np.random.default_rng(1)
    good = _comparison(rng.normal(0.0, 0.005, 4000))
    assert be.noninferiority(good).attrs["decision"] == "non-inferior"
    bad = _comparison(rng.normal(-0.06, 0.01, 4000))
    assert be.noninferiority(bad).attrs["decision"] == "inferior"
    unsure = _comparison(rng.normal(-0.02, 0.02, 4000))
    result = be.noninferiority(unsure)
    assert result.attrs["decision"] == "inconclusive" and not bool(result["passed"])
    assert float(result["prob_pass"]) == pytest.approx(0.5, abs=0.03)
    assert be.noninferiority(good, superior=True).attrs["decision"] == "not superior"
    better = _comparison(rng.normal(0.1, 0.01, 4000))
    assert be.noninferiority(better, superior=True).attrs["decision"] == "superior"


def test_noninferiority_returns_its_shares_and_settings():
    draws = np.linspace(-0.05, 0.05, 201)
    out = be.noninferiority(_comparison(draws, margin=0.02), prob=0.9)
    assert isinstance(out, xr.Dataset)
    assert float(out["prob_pass"]) == np.mean(draws > -0.02)
    assert float(out["prob_fail"]) == 1 - np.mean(draws > -0.02)
    assert out["passed"].dtype == bool and not bool(out["passed"])
    statement = out.attrs.pop("statement")
    assert out.attrs == {
        "decision": "inconclusive",
        "margin": 0.02,
        "prob": 0.9,
        "test": "non-inferiority",
        "threshold": -0.02,
        "sided": "one",
        "source": "posterior",
        "gates_failed": [],
        "gates_note": "",
        "refusal_note": "",
    }
    # 201 draws, alpha 0.1: m = floor(0.1 * 201) = 20, so the bounds are the 21st smallest and
    # the 21st largest draw, -0.05 + 20 * 0.0005 and its mirror
    assert statement.startswith(
        "inconclusive: one-sided 90% bounds [-0.040, +0.040] straddle -0.020 (-margin); "
    )
    sup = be.noninferiority(_comparison(draws + 0.1), margin=0.02, superior=True)
    assert float(sup["prob_pass"]) == np.mean(draws + 0.1 > 0.02)
    assert bool(sup["passed"]) and sup.attrs["test"] == "superiority"


def test_noninferiority_needs_both_bounds():
    draws = np.stack([np.full(100, -0.05), np.full(100, 0.05)], axis=-1)
    cmp = xr.Dataset(
        {"effect": (("replicate", "missing_bound"), draws)},
        coords={"missing_bound": ["lower", "upper"]},
        attrs={"margin": 0.01},
    )
    assert be.noninferiority(cmp).attrs["decision"] == "inconclusive"


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("alternative", ["two-sided", "larger", "smaller"])
@pytest.mark.parametrize("sd, effect", [(0.3, 0.05), (0.5, 0.02), (1.0, 0.8), (0.2, 1e-4)])
def test_required_units_is_the_smallest_n_reaching_power(paired, alternative, sd, effect):
    from statsmodels.stats.power import TTestIndPower, TTestPower

    solver = TTestPower() if paired else TTestIndPower()
    size = effect / sd * (-1 if alternative == "smaller" else 1)
    n = be.required_units(sd, effect, paired=paired, alternative=alternative)
    assert solver.power(size, n, 0.05, alternative=alternative) >= 0.8
    assert solver.power(size, n - 1, 0.05, alternative=alternative) < 0.8


def test_required_units_huge_and_tiny_effects():
    # regression: statsmodels' solver returns NaN at both ends ("cannot convert float NaN")
    assert be.required_units(0.01, 1.0) == 2
    assert be.required_units(1e-300, 1.0, paired=False) == 2
    assert be.required_units(0.3, 1e-5) == pytest.approx(7_063_974_461, abs=3)
    with pytest.raises(ValueError, match=r"effect=1e-09 is too small against sd=0.3.*7.06e\+17"):
        be.required_units(0.3, 1e-9)
    with pytest.raises(ValueError, match="too small"):
        be.required_units(1.0, 1e-300)


# -- the spread of paired per-task differences ----------------------------------------------------
def _hand_table():
    """Two systems on five tasks, 3 to 5 trials each: the per-task counts by hand."""
    c_a, c_b = [0, 4, 1, 5, 1], [3, 4, 4, 1, 5]
    n = [3, 4, 4, 5, 5]
    frame = pd.DataFrame(
        [
            {"system": s, "task": f"t{j}", "trial": t, "success": int(t < c[j])}
            for s, c in (("A", c_a), ("B", c_b))
            for j in range(5)
            for t in range(n[j])
        ]
    )
    return be.from_frame(frame, trial="trial"), c_a, c_b, n


def test_paired_spread_is_the_method_of_moments_on_a_hand_table():
    """Exact fractions: d_j, its sample sd (statistics.stdev), the unbiased Bernoulli variance
    c (n - c) / (n (n - 1)) per task, and the split of sd**2 into task spread and noise."""
    data, c_a, c_b, n = _hand_table()
    out = paired_spread(data, "B", "A")
    d = [Fraction(cb, m) - Fraction(ca, m) for ca, cb, m in zip(c_a, c_b, n, strict=True)]
    sd = statistics.stdev(float(x) for x in d)
    s2 = [
        (Fraction(ca * (m - ca), m * (m - 1)), Fraction(cb * (m - cb), m * (m - 1)))
        for ca, cb, m in zip(c_a, c_b, n, strict=True)
    ]
    noise = float(sum((a + b) / m for (a, b), m in zip(s2, n, strict=True)) / 5)
    trial_variance = float(sum(a + b for a, b in s2) / 5)
    between = max(0.0, sd**2 - noise)
    assert int(out["n_tasks"]) == 5 and float(out["median_trials"]) == 4.0
    assert float(out["mean_difference"]) == pytest.approx(float(sum(d) / 5), rel=1e-12)
    assert float(out["sd"]) == pytest.approx(sd, rel=1e-12)
    assert float(out["trial_variance"]) == pytest.approx(trial_variance, rel=1e-12)
    assert float(out["sd_between"]) == pytest.approx(np.sqrt(between), rel=1e-10)
    assert float(out["icc"]) == pytest.approx(between / (between + trial_variance), rel=1e-10)
    assert "missing_bound" not in out.attrs


def test_paired_spread_splits_task_spread_from_trial_noise():
    # every task has the same true difference: the between-task spread is about zero
    rng = np.random.default_rng(0)
    base = rng.binomial(50, 0.4, size=400)
    cand = rng.binomial(50, 0.5, size=400)
    data = be.from_counts([base, cand], trials=50, systems=["A", "B"])
    out = paired_spread(data, "B", "A")
    assert int(out["n_tasks"]) == 400
    assert float(out["mean_difference"]) == pytest.approx(0.1, abs=0.01)
    assert float(out["sd_between"]) < 0.03
    assert float(out["trial_variance"]) == pytest.approx(0.24 + 0.25, rel=0.05)
    assert float(out["icc"]) < 0.01
    # with one trial per task nothing separates the two sources
    single = be.from_counts([[1, 0, 1, 1], [1, 1, 0, 1]], trials=1, systems=["A", "B"])
    out = paired_spread(single, "B", "A")
    assert np.isnan(out["icc"]) and np.isnan(out["sd_between"])
    assert float(out["sd"]) == pytest.approx(np.std([0, 1, -1, 0], ddof=1))
    with pytest.raises(ValueError, match="candidate 'C' is not a system"):
        paired_spread(single, "C", "A")
    with pytest.raises(TypeError, match="EvalData"):
        paired_spread(single.dataset, "B", "A")


def _bounds_data():
    """Two systems on six tasks of three attempts, one timed out in each of four cells."""
    rows = []
    lost = {("A", 0), ("A", 3), ("B", 1), ("B", 4)}
    for s, wins in (("A", [0, 1, 2, 3, 1, 2]), ("B", [1, 3, 2, 3, 2, 3])):
        for j in range(6):
            for t in range(3):
                timed_out = (s, j) in lost and t == 2
                rows.append(
                    {
                        "system": s,
                        "task": f"t{j}",
                        "trial": t,
                        "status": "timeout" if timed_out else "ok",
                        "success": np.nan if timed_out else float(t < wins[j]),
                    }
                )
    frame = pd.DataFrame(rows)
    return be.from_frame(frame, trial="trial", status="status", missing="bounds"), frame


def test_paired_spreads_cross_the_bounds_and_keep_the_larger_sd():
    """Under bounds a lost attempt counts as a failure (lower) or a success (upper); each
    crossing's sd by hand (statistics.stdev), the larger one kept."""
    data, frame = _bounds_data()

    def rates(system, lost_as):
        part = frame[frame["system"] == system].fillna({"success": lost_as})
        return part.groupby("task")["success"].mean().to_numpy()

    sds = {
        bound: statistics.stdev(rates("B", b_lost) - rates("A", a_lost))
        for bound, b_lost, a_lost in (("lower", 0.0, 1.0), ("upper", 1.0, 0.0))
    }
    larger = max(sds, key=lambda b: sds[b])
    spread = paired_spread(data, "B", "A")
    assert spread.attrs["missing_bound"] == larger
    assert float(spread["sd"]) == pytest.approx(sds[larger], rel=1e-12)
    task_sd = paired_task_sd(data, "B", "A")
    assert task_sd["sd_by_bound"].sel(missing_bound="lower") == pytest.approx(sds["lower"])
    assert task_sd["sd_by_bound"].sel(missing_bound="upper") == pytest.approx(sds["upper"])
    assert float(task_sd["sd"]) == pytest.approx(max(sds.values()), rel=1e-12)


def test_paired_task_sd_is_the_sd_of_unbiased_per_task_differences():
    """pass@2 and pass^2 per task by math.comb, their differences' sample sd by
    statistics.stdev; the mean trials on the shared tasks."""
    data, c_a, c_b, n = _hand_table()
    for metric, value in (
        ("pass@k", lambda c, m: 1 - math.comb(m - c, 2) / math.comb(m, 2)),
        ("pass^k", lambda c, m: math.comb(c, 2) / math.comb(m, 2)),
    ):
        d = [value(cb, m) - value(ca, m) for ca, cb, m in zip(c_a, c_b, n, strict=True)]
        out = paired_task_sd(data, "B", "A", metric=metric, k=2)
        assert float(out["sd"]) == pytest.approx(statistics.stdev(d), rel=1e-12)
        assert int(out["n_shared_tasks"]) == 5 and "sd_by_bound" not in out
        assert out["mean_trials"].sel(system="B") == pytest.approx(np.mean(n))
    with pytest.raises(ValueError, match="metric must be one of"):
        paired_task_sd(data, "B", "A", metric="pass@1")
