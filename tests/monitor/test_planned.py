"""The group sequential gate: Lan-DeMets boundaries and the planned monitor."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayeval as be
from bayeval.monitor import monitor_planned, spending_bounds


def _obf_spent(t, alpha):
    return 2 * stats.norm.sf(stats.norm.isf(alpha / 2) / np.sqrt(t))


# -- boundaries -------------------------------------------------------------------------------
def test_boundaries_match_published_ones():
    # ldbounds (Reboussin et al. 2000) bounds(c(0.10, 0.33, 1), iuse = 1, alpha = 0.025) upper
    # boundaries, as printed on r-help (2020-03, "output of bounds function ldbounds package")
    got = spending_bounds([0.10, 0.33, 1.0], alpha=0.025)
    np.testing.assert_allclose(got, [6.9913, 3.7308, 1.9605], atol=5e-4)


def test_one_look_is_the_fixed_test():
    assert spending_bounds([1.0], alpha=0.05)[0] == pytest.approx(stats.norm.isf(0.05), abs=1e-9)
    assert spending_bounds([1.0], 0.01, "pocock")[0] == pytest.approx(stats.norm.isf(0.01))


@pytest.mark.parametrize("t", [[0.5, 1.0], [0.3, 0.8], [0.2, 0.55, 1.0]])
def test_boundaries_spend_what_the_function_says(t):
    # the probability of never crossing, from SciPy's multivariate normal with the Brownian
    # correlations sqrt(t_i / t_j), is 1 - alpha(t_K)
    t = np.asarray(t)
    c = spending_bounds(t, alpha=0.05)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    stay = stats.multivariate_normal(mean=np.zeros(t.size), cov=cov).cdf(c)
    assert 1 - stay == pytest.approx(_obf_spent(t[-1], 0.05), abs=5e-5)


def test_crossing_rates_by_simulation():
    # Brownian paths at 20 unequal looks: the share crossing at each look is its increment
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.5, 1.5, 20))
    t /= t[-1]
    c = spending_bounds(t, alpha=0.05, spending="pocock")
    runs = 400_000
    w = np.cumsum(rng.normal(size=(runs, t.size)) * np.sqrt(np.diff(t, prepend=0)), axis=1)
    crossed = w / np.sqrt(t) >= c
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    share = np.array([(first == k).mean() for k in range(t.size)])
    want = np.diff(0.05 * np.log1p((np.e - 1) * t), prepend=0)
    assert np.abs(share - want).max() < 4 * np.sqrt(want.max() / runs)
    assert share.sum() == pytest.approx(0.05, abs=4 * np.sqrt(0.05 / runs))


@pytest.mark.parametrize(
    "bad", [[], [0.5, 0.5], [0.6, 0.4], [0.0, 1.0], [0.5, 1.2], [np.nan], [[0.5, 1.0]]]
)
def test_fractions_are_checked(bad):
    with pytest.raises(ValueError, match="strictly increasing"):
        spending_bounds(bad)


def test_spending_is_checked():
    with pytest.raises(ValueError, match="spending"):
        spending_bounds([1.0], spending="haybittle")


# -- the monitor ------------------------------------------------------------------------------
def _stream(new, old, size=20, start=0):
    looks = len(new) // size
    return [
        (
            k + start,
            be.from_counts(
                [new[k * size : (k + 1) * size], old[k * size : (k + 1) * size]],
                trials=1,
                systems=["new", "old"],
                tasks=range((k + start) * size, (k + start + 1) * size),
            ),
        )
        for k in range(looks)
    ]


def test_one_look_at_the_horizon_is_the_t_test():
    rng = np.random.default_rng(0)
    for seed in range(30):
        new, old = rng.binomial(1, 0.55, 200), rng.binomial(1, 0.45 + seed / 300, 200)
        table = monitor_planned(_stream(new, old, size=200), "new", "old", horizon=200)
        p = stats.ttest_1samp(new - old, 0.0, alternative="greater").pvalue
        assert bool(table["fired"].iloc[-1]) == (p < 0.05)
        assert table["t"].iloc[-1] == pytest.approx(stats.ttest_1samp(new - old, 0.0).statistic)


def test_fired_agrees_with_the_bound_and_the_boundary():
    rng = np.random.default_rng(1)
    new, old = rng.binomial(1, 0.6, 400), rng.binomial(1, 0.5, 400)
    for alternative, margin, bound in (("greater", 0.0, "lower"), ("less", 0.2, "upper")):
        table = monitor_planned(_stream(new, old), "new", "old", 400, margin, alternative)
        crossed = table["t"] >= table["boundary"]
        beyond = table[bound] > margin if alternative == "greater" else table[bound] < margin
        assert (crossed == beyond).all()
        assert (table["fired"] == np.maximum.accumulate(crossed.to_numpy())).all()
    assert table.attrs["test"].startswith("group sequential")


def test_type_one_error_and_power_against_one_test_at_the_end():
    # 4 looks of 100 tasks, one trial, U-shaped task rates (the full study, 20 looks, 2,000
    # runs a row and the betting gate beside it, is benchmarks/monitor_power.py)
    rng = np.random.default_rng(7)
    runs = 120
    fired = {"null": [], "planned": [], "fixed": []}
    for _ in range(runs):
        u = rng.beta(0.5, 0.5, 400)
        same = _stream(rng.binomial(1, u), rng.binomial(1, u), size=100)
        fired["null"].append(monitor_planned(same, "new", "old", 400)["fired"].iloc[-1])
        p_old = 0.92 * u
        new, old = rng.binomial(1, p_old + 0.08), rng.binomial(1, p_old)
        better = _stream(new, old, size=100)
        fired["planned"].append(monitor_planned(better, "new", "old", 400)["fired"].iloc[-1])
        test = stats.ttest_1samp(new - old, 0.0, alternative="greater")
        fired["fixed"].append(test.pvalue < 0.05)
    assert np.mean(fired["null"]) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)
    # O'Brien-Fleming spending keeps nearly all the power of the single test at the end
    assert np.mean(fired["planned"]) >= 0.9 * np.mean(fired["fixed"])
    assert 0.3 < np.mean(fired["fixed"]) < 0.95  # an effect where power can be lost


def test_last_look_and_idle_checkpoints():
    rng = np.random.default_rng(2)
    stream = _stream(rng.binomial(1, 0.5, 100), rng.binomial(1, 0.5, 100))
    # a checkpoint whose only task the baseline did not run brings no paired task
    frame = pd.DataFrame({"system": ["new", "old"], "task": ["u1", "u2"], "success": [1, 0]})
    idle = ("idle", be.from_frame(frame, missing="exclude"))
    table = monitor_planned([*stream[:2], idle, *stream[2:]], "new", "old", horizon=60)
    assert table.attrs["last_look"] == 2  # the third look reaches 60 tasks
    row = table.index[table["checkpoint"] == "idle"][0]
    assert table.loc[row, "new_tasks"] == 0
    assert table.loc[row, "boundary"] == table.loc[row - 1, "boundary"]
    after = table.iloc[4:]
    assert after["boundary"].isna().all() and np.allclose(after["spent"], 0.05)
    assert after["mean_difference"].notna().all()


def test_bad_settings_are_refused():
    rng = np.random.default_rng(4)
    stream = _stream(rng.binomial(1, 0.5, 40), rng.binomial(1, 0.5, 40))
    with pytest.raises(TypeError, match="horizon"):
        monitor_planned(stream, "new", "old", horizon=None)
    with pytest.raises(ValueError, match="spending"):
        monitor_planned(stream, "new", "old", horizon=40, spending="peto")
    with pytest.raises(ValueError, match="repeats tasks"):
        monitor_planned([stream[0], stream[0]], "new", "old", horizon=40)
    with pytest.raises(KeyError, match="nope"):
        monitor_planned(stream, "new", "nope", horizon=40)
