"""The decision rule: a verdict, the bound it used and its p-value come from one test."""

import json

import numpy as np
import pytest
import xarray as xr

import bayeval as be
from bayeval.planning import decide, decision_statement
from bayeval.resampling import bootstrap_p_value
from bayeval.testing import fake_results

# two SWE-bench systems whose paired task bootstrap has share > 0 above 0.95 while the
# two-sided 95% interval touches 0 and the two-sided p is above 0.05
SWE_PAIR = ("20250807_mini-v1.7.0_gpt-5", "20251124_mini-v1.17.0_minimax-m2")


def _draws(kind, rng):
    if kind == "continuous":
        return rng.normal(0.01, 0.02, 3000)
    if kind == "ties":  # bootstrap effects of 0/1 outcomes are multiples of 1 / n_tasks
        return np.round(rng.normal(0.01, 0.02, 2001) * 50) / 50
    return rng.normal(0.0, 0.02, 7)  # very few draws: the bounds can be infinite


@pytest.mark.parametrize("kind", ["continuous", "ties", "few"])
@pytest.mark.parametrize("resampled", [False, True])
@pytest.mark.parametrize("prob", [0.95, 0.9, 0.8])
def test_verdict_bound_and_p_value_agree_at_every_threshold(kind, resampled, prob):
    rng = np.random.default_rng(3)
    draws = _draws(kind, rng)
    alpha = 1 - prob
    # every draw value (ties at the threshold) and the points between them
    thresholds = np.unique(np.concatenate([draws, (draws[:-1] + draws[1:]) / 2]))
    thresholds = thresholds[np.abs(thresholds) < 0.99][::7]
    for threshold in thresholds:
        margin, superior = abs(threshold), threshold > 0
        out = decide(draws, margin=margin, superior=superior, prob=prob, resampled=resampled)
        # the p-values by independent counting
        if resampled:
            p_pass = bootstrap_p_value(draws, null=out.attrs["threshold"], alternative="greater")
            p_fail = (1 + (draws > out.attrs["threshold"]).sum()) / (len(draws) + 1)
        else:
            p_pass = (draws <= out.attrs["threshold"]).mean()
            p_fail = (draws > out.attrs["threshold"]).mean()
        assert float(out["p_value"]) == pytest.approx(p_pass) and float(
            out["p_value_fail"]
        ) == pytest.approx(p_fail)
        assert (
            bool(out["passed"])
            == (float(out["lower"]) > out.attrs["threshold"])
            == (p_pass <= alpha + 1e-12)
        )
        failed = bool(out["decided"]) and not bool(out["passed"])
        assert (
            failed == (float(out["upper"]) <= out.attrs["threshold"]) == (p_fail <= alpha + 1e-12)
        )
        assert float(out["prob_pass"]) == pytest.approx((draws > out.attrs["threshold"]).mean())


def test_one_sided_bound_is_the_quantile_the_decision_needs():
    draws = np.random.default_rng(0).normal(0.03, 0.02, 4000)
    out = decide(draws, prob=0.95)
    # the 5% quantile (one-sided), not the 2.5% one of the two-sided interval
    assert float(out["lower"]) == pytest.approx(np.quantile(draws, 0.05), abs=2e-4)
    assert float(out["upper"]) == pytest.approx(np.quantile(draws, 0.95), abs=2e-4)
    two = decide(draws, prob=0.95, sided="two")
    assert float(two["lower"]) == pytest.approx(np.quantile(draws, 0.025), abs=2e-4)
    assert float(two["upper"]) == pytest.approx(np.quantile(draws, 0.975), abs=2e-4)
    assert float(two["p_value"]) == pytest.approx(2 * min((draws <= 0).mean(), (draws > 0).mean()))


def test_both_missing_bounds_must_agree():
    rng = np.random.default_rng(1)
    both = np.stack([rng.normal(0.05, 0.01, 1000), rng.normal(0.08, 0.01, 1000)])
    out = decide(both)
    assert out.attrs["decision"] == "non-inferior"
    assert float(out["lower"]) == pytest.approx(
        float(decide(both[0])["lower"])
    )  # the smaller of the two
    split = np.stack([rng.normal(-0.05, 0.01, 1000), rng.normal(0.05, 0.01, 1000)])
    out = decide(split)
    assert out.attrs["decision"] == "inconclusive"
    assert float(out["lower"]) < 0 < float(out["upper"]) and float(out["p_value"]) == pytest.approx(
        1.0
    )


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="prob must be above 0.5"):
        decide([0.1, 0.2], prob=0.4)
    with pytest.raises(ValueError, match="sided must be one of"):
        decide([0.1, 0.2], sided="left")
    with pytest.raises(ValueError, match="effect must hold draws"):
        decide([])
    cmp = xr.Dataset({"effect": (("chain", "draw", "system"), np.zeros((1, 5, 2)))})
    with pytest.raises(ValueError, match="no other dim but missing_bound"):
        be.noninferiority(cmp)


def test_swebench_bootstrap_row_decides_by_the_one_sided_bound_it_prints():
    data = be.datasets.load("swebench_verified").sel(system=list(SWE_PAIR))
    boot = be.bootstrap.compare(data, *SWE_PAIR, n_boot=2000, seed=0)
    lower, upper = boot["effect_interval"].values
    replicates = boot["effect"].values
    # the row as it was printed: a two-sided interval holding 0 and p > 0.05 beside a
    # share above 0 of at least 0.95
    assert lower <= 0 < upper and float(boot["p_value"]) > 0.05
    assert float(boot["prob_positive"]) >= 0.95
    out = be.noninferiority(boot, prob=0.95)
    assert out.attrs["decision"] == "non-inferior" and out.attrs["source"] == "bootstrap"
    assert float(out["p_value"]) == bootstrap_p_value(replicates, alternative="greater") <= 0.05
    assert float(out["lower"]) > 0 and float(out["lower"]) == pytest.approx(
        np.quantile(replicates, 0.05), abs=0.002
    )
    assert out.attrs["statement"].startswith("non-inferior: one-sided 95% lower bound +0.0")
    assert f"one-sided p = {float(out['p_value']):.3g} <= 0.05" in out.attrs["statement"]
    # asked for the two-sided 95% interval, the same rule cannot decide, as that interval says
    two = be.noninferiority(boot, prob=0.95, sided="two")
    assert two.attrs["decision"] == "inconclusive" and float(two["lower"]) <= 0 < float(
        two["upper"]
    )
    assert float(two["p_value"]) == pytest.approx(float(boot["p_value"]), abs=1e-3)
    assert "95% interval [" in two.attrs["statement"] and "straddles 0" in two.attrs["statement"]


def _failing(res, **diagnostics):
    tree = res.tree
    tree.attrs["diagnostics"] = json.dumps({**res.diagnostics, **diagnostics})
    return type(res)(tree)


def test_a_fit_that_failed_its_gates_is_undecided():
    res = fake_results(model="logit_normal", seed=0)
    cmp = res.compare("A", "B")
    assert cmp.attrs["gates_failed"] == [] and cmp.attrs["gates_note"] == ""
    assert bool(be.noninferiority(cmp)["decided"])
    bad = _failing(res, divergences=34, max_rhat=1.036, min_ess_bulk=45.0)
    cmp = bad.compare("A", "B")
    assert cmp.attrs["gates_failed"] == ["divergences", "max_rhat", "min_ess_bulk"]
    out = be.noninferiority(cmp)
    assert (
        out.attrs["decision"] == "undecided"
        and not bool(out["passed"])
        and not bool(out["decided"])
    )
    assert out.attrs["statement"].startswith(
        "undecided (the fit failed its MCMC gates: 34 divergent"
    )
    assert (
        "r-hat up to 1.036" in out.attrs["statement"]
        and "Increase draws and tune" in out.attrs["statement"]
    )
    # the effect's numbers are still those of the draws (and flagged by the verdict)
    good = be.noninferiority(res.compare("A", "B"))
    assert (float(out["lower"]), float(out["p_value"])) == (
        float(good["lower"]),
        float(good["p_value"]),
    )
    assert bad.compare_all().attrs["gates_failed"] == cmp.attrs["gates_failed"]
    assert bad.ranks().attrs["gates_failed"] == cmp.attrs["gates_failed"]
    assert bad.winner(n_replicates=20).attrs["gates_note"] == cmp.attrs["gates_note"]


def test_statements_say_the_bound_and_the_test():
    draws = np.linspace(-0.1, 0.1, 201)
    worse = decide(draws - 0.2, margin=0.02)
    assert worse.attrs["statement"] == (
        "inferior: one-sided 95% upper bound -0.110 <= -0.020 (-margin); "
        "P(effect > -0.020) = 0 <= 0.05"
    )
    unsure = decide(draws, margin=0.025, superior=True, resampled=True)
    # m = floor(0.05 (201 + 1) - 1) = 9: the 10th smallest and the 10th largest draw;
    # p = (1 + 126) / 202 draws at or below 0.025
    assert decision_statement(unsure) == (
        "inconclusive: one-sided 95% bounds [-0.091, +0.091] straddle +0.025 (margin); "
        "one-sided p = 0.629 > 0.05"
    )


def test_a_p_value_next_to_the_level_is_not_rounded_onto_it():
    # 5001 of 100001 draws at or below 0: P = 0.0500095, just above 0.05
    draws = (np.arange(100_001) - 5000.5) / 1e6
    out = decide(draws)
    assert out.attrs["decision"] == "inconclusive"
    assert out.attrs["statement"].endswith("P(effect <= 0) = 0.0500095 > 0.05")


def test_a_decision_is_a_dataset_of_scalars_with_its_settings_in_attrs():
    draws = np.random.default_rng(5).normal(0.03, 0.02, 2000)
    out = decide(draws, margin=0.01, prob=0.9)
    assert isinstance(out, xr.Dataset)
    variables = ["prob_pass", "prob_fail", "lower", "upper", "p_value", "p_value_fail"]
    assert set(out.data_vars) == {*variables, "passed", "decided"}
    assert all(out[name].dims == () for name in out.data_vars)
    assert out["passed"].dtype == bool and out["decided"].dtype == bool
    assert float(out["prob_pass"]) == pytest.approx((draws > -0.01).mean())
    assert float(out["prob_fail"]) == pytest.approx((draws <= -0.01).mean())
    assert out.attrs == {
        "decision": "non-inferior",
        "margin": 0.01,
        "prob": 0.9,
        "test": "non-inferiority",
        "threshold": -0.01,
        "sided": "one",
        "source": "posterior",
        "gates_failed": [],
        "gates_note": "",
        "refusal_note": "",
        "statement": decision_statement(out),
    }
    assert "Decision" not in be.planning.__all__ and not hasattr(be.planning, "Decision")
