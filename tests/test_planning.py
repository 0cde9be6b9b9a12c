"""Planning helpers against closed forms and hand-computed adjustments."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import bayeval as be


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
    assert be.noninferiority(good).decision == "non-inferior"
    bad = _comparison(rng.normal(-0.06, 0.01, 4000))
    assert be.noninferiority(bad).decision == "inferior"
    unsure = _comparison(rng.normal(-0.02, 0.02, 4000))
    result = be.noninferiority(unsure)
    assert result.decision == "inconclusive" and not result.passed
    assert result.prob_pass == pytest.approx(0.5, abs=0.03)
    assert be.noninferiority(good, superior=True).decision == "not superior"
    better = _comparison(rng.normal(0.1, 0.01, 4000))
    assert be.noninferiority(better, superior=True).decision == "superior"


def test_noninferiority_needs_both_bounds():
    draws = np.stack([np.full(100, -0.05), np.full(100, 0.05)], axis=-1)
    cmp = xr.Dataset(
        {"effect": (("replicate", "missing_bound"), draws)},
        coords={"missing_bound": ["lower", "upper"]},
        attrs={"margin": 0.01},
    )
    assert be.noninferiority(cmp).decision == "inconclusive"


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
