"""Bootstrap baseline: against closed-form variances, naive loops, SciPy, and known truth."""

import warnings

import numpy as np
import pytest
from scipy import stats

import bayeval as be
from bayeval import BayevalWarning


def _values(data, k=1):
    ds = data.dataset
    return be.pass_at_k(ds["trials"].values, ds["successes"].values, k)


def test_point_estimate_is_the_mean_of_unbiased_task_estimates(swebench):
    res = be.bootstrap.pass_at_k(swebench, k=1, n_boot=10, seed=0)
    np.testing.assert_allclose(res["estimate"].values, _values(swebench).mean(axis=1))
    assert res["estimate"].dims == ("system",)
    assert res["replicates"].dims == ("replicate", "system")
    assert res["interval"].dims == ("system", "ci_bound")
    assert res.attrs["estimand"] == "population" and res.attrs["unit"] == "task"
    assert int(res["status_counts"].sel(status="ok").sum()) == 25 * 500


def test_task_bootstrap_variance_matches_plug_in_formula(rng):
    c = rng.binomial(8, rng.beta(0.5, 0.5, size=60))
    data = be.from_counts(c, 8)
    res = be.bootstrap.pass_at_k(data, k=[1, 3], n_boot=40_000, seed=1)
    values = be.pass_at_k(8, c, np.array([[1], [3]]))
    expected = values.var(axis=1) / 60  # variance of the mean under iid resampling
    observed = res["replicates"].var("replicate").values[0]
    np.testing.assert_allclose(observed, expected, rtol=0.03)
    assert res["replicates"].dims == ("replicate", "system", "k")


def test_trial_bootstrap_variance_matches_binomial_formula(rng):
    n = rng.integers(2, 20, size=40)
    c = rng.binomial(n, rng.uniform(size=40))
    data = be.from_counts(c, n)
    res = be.bootstrap.pass_at_k(data, unit="trial", n_boot=40_000, seed=2)
    p = c / n
    # the replicates carry the unbiased estimate of Var(c / n), p (1 - p) / (n - 1), rather
    # than the plug-in p (1 - p) / n of a bare resample of the trials
    expected = (p * (1 - p) / (n - 1)).sum() / 40**2
    assert float(res["replicates"].var()) == pytest.approx(expected, rel=0.03)
    assert float(res["replicates"].mean()) == pytest.approx(res["estimate"].item(), abs=1e-3)
    assert res.attrs["estimand"] == "tasks"


def test_stratified_bootstrap_combines_declared_weights(rng):
    c = rng.binomial(4, rng.uniform(size=30))
    strata = np.repeat(["a", "b", "c"], [5, 10, 15])
    weights = {"a": 0.5, "b": 0.3, "c": 0.2}
    data = be.from_counts(c, 4, strata=strata, stratum_weights=weights)
    res = be.bootstrap.pass_at_k(data, n_boot=40_000, seed=3)
    p = c / 4
    means = {s: p[strata == s].mean() for s in weights}
    assert res["estimate"].item() == pytest.approx(sum(weights[s] * means[s] for s in weights))
    expected = sum(weights[s] ** 2 * p[strata == s].var() / (strata == s).sum() for s in weights)
    assert float(res["replicates"].var()) == pytest.approx(expected, rel=0.03)


def _naive_cluster_bootstrap(c, n, cluster, n_boot, seed, weighting):
    """Straightforward loop: resample cluster labels, concatenate their tasks."""
    rng = np.random.default_rng(seed)
    labels = np.unique(cluster)
    members = [np.flatnonzero(cluster == g) for g in labels]
    out = np.empty(n_boot)
    for b in range(n_boot):
        draw = rng.integers(0, len(labels), len(labels))
        if weighting == "task":
            idx = np.concatenate([members[g] for g in draw])
            out[b] = (c[idx] / n[idx]).mean()
        else:
            out[b] = np.mean([(c[members[g]] / n[members[g]]).mean() for g in draw])
    return out


@pytest.mark.parametrize("weighting", ["task", "cluster"])
def test_cluster_bootstrap_matches_naive_loop(rng, weighting):
    sizes = rng.integers(1, 15, size=9)
    cluster = np.repeat(np.arange(9), sizes)
    rates = rng.beta(1, 1, size=9)[cluster]
    n = np.full(len(cluster), 3)
    c = rng.binomial(n, rates)
    data = be.from_counts(c, n, clusters=cluster)
    ours = be.bootstrap.pass_at_k(data, unit="cluster", weighting=weighting, n_boot=20_000, seed=4)[
        "replicates"
    ].values.ravel()
    naive = _naive_cluster_bootstrap(c, n, cluster, 20_000, 5, weighting)
    assert ours.mean() == pytest.approx(naive.mean(), abs=4 * naive.std() / np.sqrt(10_000))
    assert ours.std() == pytest.approx(naive.std(), rel=0.04)
    np.testing.assert_allclose(
        np.quantile(ours, [0.025, 0.975]),
        np.quantile(naive, [0.025, 0.975]),
        atol=0.4 * naive.std(),
    )


def test_cluster_bootstrap_on_swebench_repositories(swebench):
    systems = swebench.systems[:3]
    data = swebench.sel(system=systems)
    task = be.bootstrap.pass_at_k(data, unit="task", n_boot=4000, seed=0)
    cluster = be.bootstrap.pass_at_k(data, unit="cluster", n_boot=4000, seed=0)
    within = be.bootstrap.pass_at_k(data, unit="task", clusters="observed", n_boot=4000, seed=0)
    width = {
        name: (r["interval"].sel(ci_bound="upper") - r["interval"].sel(ci_bound="lower"))
        for name, r in (("task", task), ("cluster", cluster), ("within", within))
    }
    # repositories differ in difficulty: new clusters add uncertainty, fixed clusters remove some
    assert (width["cluster"] > width["task"]).all()
    assert (width["within"] <= width["task"] + 0.004).all()
    assert cluster.attrs["clusters"] == "new" and within.attrs["clusters"] == "observed"
    np.testing.assert_allclose(cluster["estimate"], task["estimate"])


def test_paired_compare_variance_is_that_of_task_differences(swebench):
    a, b = swebench.systems[5], swebench.systems[0]
    out = be.bootstrap.compare(swebench, b, a, n_boot=40_000, seed=6)
    ds = swebench.dataset
    diff = (ds["successes"].sel(system=b) - ds["successes"].sel(system=a)).values
    assert float(out["effect_mean"]) == pytest.approx(diff.mean())
    assert float(out["effect"].var()) == pytest.approx(diff.var() / len(diff), rel=0.03)
    p_a, p_b = (
        ds["successes"].sel(system=a).mean().item(),
        ds["successes"].sel(system=b).mean().item(),
    )
    independent_var = (p_a * (1 - p_a) + p_b * (1 - p_b)) / len(diff)
    assert float(out["effect"].var()) < independent_var  # pairing removes shared difficulty
    for name in ("prob_positive", "prob_above_margin", "prob_noninferior", "p_value"):
        assert out[name].dims == ()
    assert out["effect_interval"].dims == ("ci_bound",)
    assert out.attrs["candidate"] == b and out.attrs["paired"] is True


def test_bounds_cross_in_paired_compare():
    import pandas as pd

    df = pd.DataFrame(
        {
            "system": ["A"] * 4 + ["B"] * 4,
            "task": ["t1", "t2", "t3", "t4"] * 2,
            "success": [1, 0, np.nan, 1, 1, np.nan, 1, 1],
        }
    )
    data = be.from_frame(df, missing="bounds")
    out = be.bootstrap.compare(data, "B", "A", n_boot=50, seed=0)
    est = out["effect_mean"]
    # A: lower 2/4, upper 3/4;  B: lower 3/4, upper 4/4
    assert float(est.sel(missing_bound="lower")) == pytest.approx(3 / 4 - 3 / 4)
    assert float(est.sel(missing_bound="upper")) == pytest.approx(4 / 4 - 2 / 4)
    excluded = be.bootstrap.compare(data.with_missing("exclude"), "B", "A", n_boot=50, seed=0)
    assert excluded.attrs["n_shared_tasks"] == 2  # t1 and t4 are valid for both


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_intervals_agree_with_scipy_bootstrap(rng, method):
    x = rng.beta(0.5, 0.7, size=80).round(1)  # per-task values: c / 10
    c = (x * 10).astype(int)
    data = be.from_counts(c, 10)
    ours = be.bootstrap.pass_at_k(data, n_boot=40_000, seed=7, method=method)
    ref = stats.bootstrap(
        (c / 10,),
        np.mean,
        n_resamples=40_000,
        method=method.replace("bca", "BCa"),
        random_state=8,
        confidence_level=0.95,
    ).confidence_interval
    np.testing.assert_allclose(ours["interval"].values.ravel(), [ref.low, ref.high], atol=0.004)


def test_bca_falls_back_with_a_warning_on_all_zero_data():
    data = be.from_counts([[0, 0, 0, 0], [1, 0, 2, 1]], 2)
    with pytest.warns(BayevalWarning, match="BCa is undefined"):
        res = be.bootstrap.pass_at_k(data, n_boot=500, method="bca")
    assert res["bca_fallback"].values.tolist() == [True, False]
    assert res["interval"].values[0].tolist() == [0.0, 0.0]


def test_trial_bootstrap_with_one_trial_says_it_has_zero_width():
    data = be.from_counts([1, 0, 1, 1, 0], 1)
    with pytest.warns(BayevalWarning, match="zero width"):
        res = be.bootstrap.pass_at_k(data, unit="trial", n_boot=200)
    lower, upper = res["interval"].values.ravel()
    assert lower == pytest.approx(0.6) and upper == pytest.approx(lower)


def test_k_larger_than_trials_names_the_tasks():
    data = be.from_counts([[2, 3, 1]], [[5, 3, 2]], tasks=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"k=4.*tasks \['b', 'c'\].*use k <= 2"):
        be.bootstrap.pass_at_k(data, k=[1, 4])


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"unit": "cluster"}, "needs task clusters"),
        ({"unit": "episode"}, "unit must be one of"),
        ({"method": "studentized"}, "method must be one of"),
        ({"ci_prob": 1.5}, "ci_prob must be strictly between"),
        ({"n_boot": 1}, "n_boot must be an integer >= 2"),
    ],
)
def test_bootstrap_argument_errors(kwargs, pattern):
    data = be.from_counts([1, 2, 3], 4)
    with pytest.raises((ValueError, TypeError), match=pattern):
        be.bootstrap.pass_at_k(data, **kwargs)


def test_compare_argument_errors(swebench):
    with pytest.raises(ValueError, match="is not a system"):
        be.bootstrap.compare(swebench, "nobody", swebench.systems[0])


def test_bootstrap_is_reproducible_from_seed(swebench):
    data = swebench.sel(system=swebench.systems[:2])
    one = be.bootstrap.pass_at_k(data, n_boot=300, seed=11, unit="cluster")
    two = be.bootstrap.pass_at_k(data, n_boot=300, seed=11, unit="cluster")
    np.testing.assert_array_equal(one["replicates"], two["replicates"])


def test_hundred_thousand_tasks_use_the_pattern_histogram(rng):
    c = rng.binomial(16, rng.beta(0.4, 0.3, size=100_000))
    data = be.from_counts(c, 16)
    res = be.bootstrap.pass_at_k(data, k=[1, 4], n_boot=10_000, seed=0)
    assert res["replicates"].shape == (10_000, 1, 2)
    expected_sd = be.pass_at_k(16, c, 1).std() / np.sqrt(100_000)
    assert float(res["replicates"].isel(k=0).std()) == pytest.approx(expected_sd, rel=0.05)


def test_u_shaped_population_trial_bootstrap_undercovers_task_bootstrap_does_not():
    """10 tasks x 32 trials from Beta(0.4, 0.3): known population mean 0.4 / 0.7."""
    truth = 0.4 / 0.7
    rng = np.random.default_rng(123)
    n_sim = 300
    hits = {"trial": 0, "task": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)
        for _ in range(n_sim):
            c = rng.binomial(32, rng.beta(0.4, 0.3, size=10))
            data = be.from_counts(c, 32)
            for unit in hits:
                lo, hi = be.bootstrap.pass_at_k(
                    data, unit=unit, n_boot=1000, seed=int(rng.integers(1 << 31))
                )["interval"].values.ravel()
                hits[unit] += lo <= truth <= hi
    coverage = {unit: h / n_sim for unit, h in hits.items()}
    assert coverage["trial"] < 0.5  # episodes treated as the random units: far too narrow
    assert 0.82 <= coverage["task"] <= 0.97  # percentile bootstrap with N=10: near nominal


# -- the trial bootstrap at large k -------------------------------------------------------------
def _exact_unbiased_variance(c, n, k, metric):
    """Sum over tasks of g_k(c)**2 - g_2k(c) in exact rational arithmetic (h = 1 - g for pass@k)."""
    from fractions import Fraction
    from math import comb

    total = Fraction(0)
    for cj, nj in zip(c, n, strict=True):
        if metric == "pass@k":
            h, h2 = (
                Fraction(comb(nj - cj, k), comb(nj, k)),
                Fraction(comb(nj - cj, 2 * k), comb(nj, 2 * k)),
            )
        else:
            h, h2 = Fraction(comb(cj, k), comb(nj, k)), Fraction(comb(cj, 2 * k), comb(nj, 2 * k))
        total += h * h - h2
    return float(total / len(c) ** 2)


@pytest.mark.parametrize("metric", ["pass@k", "pass^k"])
def test_trial_bootstrap_is_centred_and_scaled_to_the_unbiased_estimator(metric):
    # regression: the replicates were centred on the plug-in value, so at k near n the estimate
    # fell outside its own interval (22 of 156 rows of one report)
    rng = np.random.default_rng(5)
    c = rng.integers(0, 7, 80)
    data = be.from_counts(c, 10)
    func = be.bootstrap.pass_at_k if metric == "pass@k" else be.bootstrap.pass_hat_k
    ks = [1, 2, 5, 8, 10]
    res = func(data, k=ks, unit="trial", n_boot=20_000, seed=4)
    est = res["estimate"].values[0]
    lower, upper = res["interval"].values[0].T
    assert ((lower <= est) & (est <= upper)).all()
    np.testing.assert_allclose(res["replicates"].mean("replicate").values[0], est, atol=2e-3)
    valid = res["interval_valid"].values[0]
    assert valid.tolist() == [True, True, True, False, False]
    for i, k in enumerate(ks[:3]):
        expected = _exact_unbiased_variance(c, [10] * len(c), k, metric)
        assert float(res["replicates"].values[:, 0, i].var()) == pytest.approx(expected, rel=0.04)
    reason = res["interval_reason"].values[0]
    assert (reason[:3] == "").all()
    assert "k=8 is more than half the fewest trials of a task (n=10)" in reason[3]


def test_trial_bootstrap_marks_paired_effects_at_large_k():
    data = be.from_counts([[3, 5, 0, 7, 2, 9], [4, 6, 1, 8, 5, 9]], 10, systems=["A", "B"])
    out = be.bootstrap.compare(data, "B", "A", k=[2, 9], unit="trial", n_boot=2000, seed=0)
    assert out["interval_valid"].values.tolist() == [True, False]
    assert "k=9" in str(out["interval_reason"].values[1])
    by_task = be.bootstrap.compare(data, "B", "A", k=[2, 9], unit="task", n_boot=2000, seed=0)
    assert by_task["interval_valid"].values.all()


def test_trial_bootstrap_cost_does_not_grow_with_k():
    # regression: building each pattern's table cost O(n k) (minutes at k = 10,000); it is
    # now one cumulative product per k. The values are checked, not the time.
    data = be.from_counts([3000, 150, 9990], 10_000)
    res = be.bootstrap.pass_at_k(data, k=[100, 3000, 10_000], unit="trial", n_boot=2000)
    expected = be.pass_at_k(
        10_000, np.array([[3000], [150], [9990]]), np.array([100, 3000, 10_000])
    ).mean(axis=0)
    np.testing.assert_allclose(res["estimate"].values[0], expected, rtol=1e-12)
    assert res["interval_valid"].values[0].tolist() == [True, True, False]  # 2k <= n


def test_bootstrap_probabilities_stay_in_the_unit_interval():
    # regression: weighted sums of per-task values of 1.0 reached 1.0000000000000002
    data = be.from_counts([[5000] * 7 + [6000] * 2 + [7000]], 10_000)
    for unit in ("trial", "task"):
        res = be.bootstrap.pass_at_k(data, k=10_000, unit=unit, n_boot=200)
        assert float(res["replicates"].max()) <= 1.0
        assert float(res["estimate"].max()) <= 1.0
        assert float(res["interval"].max()) <= 1.0


# -- the bootstrap p-value: one function, against exact arithmetic and a known null ------------
def _exact_p_values(replicates, null):
    """Reference by enumeration in rational arithmetic: (1 + #at or below) / (B + 1) and
    (1 + #at or above) / (B + 1) over the defined replicates, two-sided twice the smaller."""
    from fractions import Fraction

    defined = [Fraction(x) for x in replicates if not np.isnan(x)]
    null = Fraction(null)
    below = sum(1 for x in defined if x <= null)
    above = sum(1 for x in defined if x >= null)
    greater = Fraction(1 + below, len(defined) + 1)
    less = Fraction(1 + above, len(defined) + 1)
    return {"greater": greater, "less": less, "two-sided": min(Fraction(1), 2 * min(greater, less))}


@pytest.mark.parametrize(
    "replicates, null",
    [
        ([-0.25, 0.0, 0.0, 0.125, 0.375, 0.5], 0.0),  # ties at the null count for it
        ([0.125, 0.25, np.nan, -0.375], 0.0),  # NaN replicates are left out
        ([0.5] * 9, 0.0),  # never below: the smallest p-value B replicates can give
        ([0.125, 0.25, 0.25, 0.375, 0.5], 0.25),  # another null value
        ([-1.0, -0.5, -0.25], 0.0),
    ],
)
def test_bootstrap_p_value_is_exact_on_small_replicate_sets(replicates, null):
    from bayeval.resampling import bootstrap_p_value

    expected = _exact_p_values(replicates, null)
    for alternative, value in expected.items():
        got = bootstrap_p_value(replicates, null=null, alternative=alternative)
        assert got == pytest.approx(float(value), rel=1e-15)
    # along an axis, each row on its own
    table = np.array([replicates, replicates[::-1]], dtype=float)
    np.testing.assert_allclose(
        bootstrap_p_value(table.T, null=null, axis=0), [float(expected["two-sided"])] * 2
    )
    assert np.isnan(bootstrap_p_value([np.nan, np.nan]))
    with pytest.raises(ValueError, match="alternative must be one of"):
        bootstrap_p_value(replicates, alternative="bigger")


def _p_values(rng, kind, effect, n_sets, n_boot, alternative):
    """p-values of effect 0 for ``n_sets`` data sets whose true effect is ``effect``.

    ``ties``: the nonparametric bootstrap of the mean of 40 paired differences in {-1, 0, 1}
    (binary outcomes of two systems), where replicate means of exactly 0 are common;
    ``normal``: an estimate ~ N(effect, 1) with replicates ~ N(estimate, 1), the bootstrap
    distribution a percentile p-value assumes, for which the p-value is uniform under the
    null."""
    from bayeval.resampling import bootstrap_p_value

    if kind == "normal":
        estimate = rng.normal(effect, 1.0, size=(n_sets, 1))
        replicates = estimate + rng.normal(0.0, 1.0, size=(n_sets, n_boot))
        return bootstrap_p_value(replicates, alternative=alternative, axis=1)
    probs = [0.25 - effect / 2, 0.5, 0.25 + effect / 2]
    values = rng.choice([-1.0, 0.0, 1.0], p=probs, size=(n_sets, 40))
    out = []
    for rows in np.array_split(np.arange(n_sets), n_sets // 100):  # bounded memory
        pick = rng.integers(40, size=(len(rows), n_boot, 40))
        means = np.take_along_axis(values[rows, None, :], pick, axis=2).mean(axis=2)
        out.append(bootstrap_p_value(means, alternative=alternative, axis=1))
    return np.concatenate(out)


@pytest.mark.parametrize("alternative", ["greater", "two-sided"])
@pytest.mark.parametrize("kind", ["ties", "normal"])
def test_bootstrap_p_value_holds_its_level_under_a_known_null(kind, alternative):
    """Under a true effect of 0, P(p <= alpha) <= alpha within Monte Carlo error; under a
    true effect the same test rejects most of the time (the level is not met by never
    rejecting)."""
    rng = np.random.default_rng(11)
    n_sets, n_boot = 1500, 399
    p = _p_values(rng, kind, 0.0, n_sets, n_boot, alternative)
    for alpha in (0.05, 0.10):
        mc_error = 3 * np.sqrt(alpha * (1 - alpha) / n_sets)
        assert (p <= alpha).mean() <= alpha + mc_error
    if kind == "normal":  # uniform under the null: the level is met, not undershot
        assert (p <= 0.10).mean() >= 0.10 - 3 * np.sqrt(0.09 / n_sets) - 2 / (n_boot + 1)
    assert p.min() >= (2 if alternative == "two-sided" else 1) / (n_boot + 1)
    effect = 3.5 if kind == "normal" else 0.4
    assert (_p_values(rng, kind, effect, n_sets, n_boot, alternative) <= 0.05).mean() > 0.8


def test_compare_p_value_is_resamplings_on_its_replicates():
    from bayeval.resampling import bootstrap_p_value

    data = be.from_counts([[1, 0, 1, 1, 0, 1] * 4, [1, 1, 1, 1, 0, 1] * 4], 1, systems=["A", "B"])
    out = be.bootstrap.compare(data, "B", "A", n_boot=2000, seed=3)
    replicates = out["effect"].values
    assert (replicates == 0).sum() > 0  # ties at the null occur here
    expected = _exact_p_values(replicates, 0.0)["two-sided"]
    assert float(out["p_value"]) == pytest.approx(float(expected), rel=1e-12)
    assert float(out["p_value"]) == bootstrap_p_value(replicates)


def test_a_bootstrap_over_three_platforms_does_not_decide():
    """LiveCodeBench's 3 platforms: every replicate is one of the C(5, 3) = 10 multisets of
    platforms, so the bootstrap gives coarse steps, not a tail probability, and never decides."""
    from itertools import combinations_with_replacement

    frame = be.datasets.frame("livecodebench")
    data = be.from_frame(
        frame, successes="n_correct", trials="n_samples", cluster="cluster"
    )  # without the difficulty strata, which cross the platforms
    candidate, baseline = "GPT-4-Turbo-2024-04-09", "Claude-3-Opus"
    out = be.bootstrap.compare(
        data, candidate, baseline, unit="cluster", n_boot=2000, seed=0, margin=0.5
    )
    # independent reference: the clusters-keep-their-sizes effect of each multiset
    rows = frame[frame["system"].isin([candidate, baseline])]
    rate = rows.assign(p=rows["n_correct"] / rows["n_samples"]).pivot(
        index="task", columns="system", values="p"
    )
    cluster = frame.drop_duplicates("task").set_index("task")["cluster"].loc[rate.index]
    diff = (rate[candidate] - rate[baseline]).groupby(cluster)
    sums, sizes = diff.sum(), diff.size()
    expected = {
        round(sum(sums[g] for g in pick) / sum(sizes[g] for g in pick), 10)
        for pick in combinations_with_replacement(sums.index, 3)
    }
    assert len(expected) == 10
    assert set(np.round(out["effect"].values, 10)) <= expected
    assert out.attrs["decides"] is False and "3 clusters: 10 distinct" in out.attrs["decision_note"]
    assert np.isnan(float(out["p_value"]))
    assert float(out["prob_noninferior"]) == 1.0  # every replicate clears the margin ...
    refused = be.noninferiority(out)  # ... and still no decision, saying why
    assert refused.attrs["decision"] == "inconclusive" and not bool(refused["decided"])
    assert refused.attrs["refusal_note"] == out.attrs["decision_note"]
    assert refused.attrs["statement"] == f"inconclusive ({out.attrs['decision_note']})"
    tasks = be.bootstrap.compare(data, candidate, baseline, unit="task", n_boot=2000, seed=0)
    assert tasks.attrs["decides"] is True and np.isfinite(float(tasks["p_value"]))


def test_a_bootstrap_over_ten_clusters_decides():
    rng = np.random.default_rng(1)
    clusters = [f"g{j % 10}" for j in range(60)]
    data = be.from_counts(
        [rng.binomial(1, 0.3, 60), rng.binomial(1, 0.9, 60)],
        1,
        systems=["A", "B"],
        clusters=clusters,
    )
    out = be.bootstrap.compare(data, "B", "A", unit="cluster", n_boot=2000, seed=0, margin=0.05)
    assert out.attrs["decides"] is True and "decision_note" not in out.attrs
    decided = be.noninferiority(out)
    assert decided.attrs["decision"] == "non-inferior" and decided.attrs["refusal_note"] == ""
