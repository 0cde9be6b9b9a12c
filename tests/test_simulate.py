"""Synthetic benchmarks: draws against known distributions, truths against independent checks."""

import numpy as np
import pytest
from scipy import special, stats

from bayeval.data import STATUSES
from bayeval.simulate import simulate_benchmark, simulate_many


def _pass_at_k(p, k):
    return 1.0 - (1.0 - p) ** k


@pytest.mark.parametrize(
    "rates, a, b",
    [
        ("u_shaped", 0.4, 0.3),
        ("beta_2_5", 2.0, 5.0),
        ("uniform", 1.0, 1.0),
        (("beta", 3.0, 0.5), 3.0, 0.5),
    ],
)
def test_single_system_rates_follow_the_beta(rates, a, b):
    n = 100_000
    p = simulate_benchmark(n_tasks=n, n_trials=1, rates=rates, seed=1).rates[0]
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    se_mean = np.sqrt(var / n)
    se_var = np.sqrt((stats.beta.moment(4, a, b, loc=-mean) - var**2) / n)
    assert p.mean() == pytest.approx(mean, abs=5 * se_mean)
    assert p.var() == pytest.approx(var, abs=5 * se_var)
    assert stats.kstest(p, "beta", args=(a, b)).pvalue > 1e-3


def test_successes_are_binomial_given_the_rates():
    sim = simulate_benchmark(n_tasks=4000, n_trials=40, rates="beta_2_5", seed=2)
    c = sim.data.dataset["successes"].values[0]
    p = sim.rates[0]
    z = (c - 40 * p) / np.sqrt(40 * p * (1 - p))
    assert abs(z.mean()) < 5 / np.sqrt(len(z))
    assert z.var() == pytest.approx(1.0, abs=0.1)


def test_population_truth_closed_forms():
    a, b = 0.4, 0.3
    sim = simulate_benchmark(rates="u_shaped", seed=0)
    assert sim.truth(estimand="population")[0] == pytest.approx(a / (a + b), abs=1e-12)
    hat2 = a * (a + 1) / ((a + b) * (a + b + 1))  # E p^2
    assert sim.truth("pass^k", 2, "population")[0] == pytest.approx(hat2, abs=1e-12)
    assert sim.truth("pass@k", 2, "population")[0] == pytest.approx(
        2 * a / (a + b) - hat2, abs=1e-12
    )


def _check_monte_carlo(truth, samples):
    se = samples.std() / np.sqrt(samples.size)
    assert truth == pytest.approx(samples.mean(), abs=5 * se + 1e-6)


@pytest.mark.parametrize("rates", ["u_shaped", ("beta", 2.0, 5.0)])
def test_beta_population_truth_matches_monte_carlo(rates):
    a, b = (0.4, 0.3) if rates == "u_shaped" else rates[1:]
    rng = np.random.default_rng(123)
    p = rng.beta(a, b, size=2_000_000)
    sim = simulate_benchmark(n_tasks=5, rates=rates, seed=0)
    for k in (1, 4):
        _check_monte_carlo(sim.truth("pass@k", k, "population")[0], _pass_at_k(p, k))
        _check_monte_carlo(sim.truth("pass^k", k, "population")[0], p**k)


def test_shifted_and_noisy_beta_population_truth_matches_monte_carlo():
    rng = np.random.default_rng(7)
    n = 2_000_000
    logit = special.logit(rng.beta(0.4, 0.3, size=n))
    sim = simulate_benchmark(n_tasks=5, n_systems=3, effect=[0.8, -1.5], task_system_sd=0.7, seed=0)
    for system, shift in enumerate([0.0, 0.8, -1.5]):
        p = special.expit(logit + shift + 0.7 * rng.standard_normal(n))
        for metric, f in (("pass@k", _pass_at_k(p, 3)), ("pass^k", p**3)):
            _check_monte_carlo(sim.truth(metric, 3, "population")[system], f)


def test_logit_normal_population_truth_with_clusters_matches_monte_carlo():
    rng = np.random.default_rng(8)
    sim = simulate_benchmark(
        n_tasks=40,
        n_systems=2,
        rates=("logit_normal", -0.5, 1.2),
        clusters=8,
        cluster_sd=0.9,
        effect=0.6,
        task_system_sd=0.4,
        seed=0,
    )
    total_sd = np.sqrt(1.2**2 + 0.9**2 + 0.4**2)
    for system, shift in enumerate([0.0, 0.6]):
        p = special.expit(-0.5 + shift + total_sd * rng.standard_normal(2_000_000))
        _check_monte_carlo(sim.truth("pass@k", 5, "population")[system], _pass_at_k(p, 5))
        _check_monte_carlo(sim.truth("pass^k", 2, "population")[system], p**2)


def test_tasks_truth_is_the_mean_over_drawn_rates():
    sim = simulate_benchmark(n_tasks=37, n_systems=2, effect=0.5, seed=4)
    p = np.array(sim.rates)
    for k in (1, 3):
        np.testing.assert_allclose(sim.truth("pass@k", k), _pass_at_k(p, k).mean(axis=1))
        np.testing.assert_allclose(sim.truth("pass^k", k), (p**k).mean(axis=1))
    diff = _pass_at_k(p[1], 3).mean() - _pass_at_k(p[0], 3).mean()
    assert sim.effect_truth("pass@k", 3) == pytest.approx(diff)


def test_tasks_truth_weights_strata_by_their_shares():
    shares = {"a": 0.5, "b": 0.3, "c": 0.2}
    sim = simulate_benchmark(n_tasks=7, strata=shares, seed=5)  # 4, 2 and 1 tasks
    labels = np.asarray(sim.data.dataset["stratum"].values)
    p = sim.rates[0]
    expected = sum(w * p[labels == s].mean() for s, w in shares.items())
    assert sim.truth()[0] == pytest.approx(expected)
    assert sim.truth()[0] != pytest.approx(p.mean())  # the one "c" task holds 20% of the weight


def test_pass_hat_k_below_pass_at_1_below_pass_at_k():
    sim = simulate_benchmark(n_tasks=200, n_systems=2, effect=0.3, seed=6)
    for estimand in ("tasks", "population"):
        at1 = sim.truth("pass@k", 1, estimand)
        assert np.all(sim.truth("pass^k", 4, estimand) <= sim.truth("pass^k", 2, estimand))
        assert np.all(sim.truth("pass^k", 2, estimand) <= at1)
        assert np.all(at1 <= sim.truth("pass@k", 2, estimand))
        np.testing.assert_allclose(sim.truth("pass^k", 1, estimand), at1)


@pytest.mark.parametrize("rates", ["u_shaped", ("logit_normal", 0.0, 1.0)])
def test_effect_makes_the_candidate_better(rates):
    up = simulate_benchmark(n_tasks=20, n_systems=3, rates=rates, effect=[0.7, -0.7], seed=0)
    for metric, k in (("pass@k", 1), ("pass@k", 5), ("pass^k", 3)):
        truth = up.truth(metric, k, "population")
        assert truth[1] > truth[0] > truth[2]
        assert up.effect_truth(metric, k, "population") == pytest.approx(truth[1] - truth[0])
        assert up.effect_truth(metric, k, "population", candidate=2) < 0
    same = simulate_benchmark(n_tasks=20, n_systems=2, rates=rates, effect=0.0, seed=0)
    assert same.effect_truth(estimand="population") == 0.0


@pytest.mark.parametrize("sd", [0.3, 3.0])
def test_systems_share_task_difficulty(sd):
    sim = simulate_benchmark(
        n_tasks=20_000, n_systems=2, rates=("logit_normal", 0.0, 1.0), task_system_sd=sd, seed=9
    )
    logits = special.logit(sim.rates)
    # Var(base) = 1, Var(noise) = sd^2: corr = 1 / (1 + sd^2)
    assert np.corrcoef(logits)[0, 1] == pytest.approx(1 / (1 + sd**2), abs=0.02)
    assert logits[0].std() == pytest.approx(np.sqrt(1 + sd**2), rel=0.03)


def test_clusters_share_effects():
    sim = simulate_benchmark(
        n_tasks=3000, rates=("logit_normal", 0.0, 0.5), clusters=30, cluster_sd=2.0, seed=10
    )
    cluster = sim.data.dataset["cluster"].values
    assert len(np.unique(cluster)) == 30
    logit = special.logit(sim.rates[0])
    means = {c: logit[cluster == c].mean() for c in np.unique(cluster)}
    within = logit - np.array([means[c] for c in cluster])
    assert within.var() == pytest.approx(0.25, rel=0.1)
    assert np.var(list(means.values()), ddof=1) == pytest.approx(4.0, rel=0.6)


def test_mcar_missing_share_matches_rate():
    sim = simulate_benchmark(
        n_tasks=500,
        n_trials=20,
        n_systems=2,
        missing=dict(rate=0.15, mechanism="mcar", status="error"),
        seed=11,
    )
    data = sim.data
    assert data.missing == "exclude"
    counts = data.dataset["status_counts"].sum(("system", "task"))
    total = int(counts.sum())
    assert total == 2 * 500 * 20
    share = int(counts.sel(status="error")) / total
    assert share == pytest.approx(0.15, abs=4 * np.sqrt(0.15 * 0.85 / total))
    assert int(counts.sel(status=[s for s in STATUSES if s not in ("ok", "error")]).sum()) == 0
    ok = data.dataset["trials"].values
    assert (ok == data.dataset["status_counts"].sel(status="ok").values).all()
    assert (data.with_missing("fail").dataset["trials"].values == 20).all()
    # MCAR: the valid outcomes estimate the true rates without bias
    c = data.dataset["successes"].values
    assert c.sum() / ok.sum() == pytest.approx(
        (sim.rates * ok).sum() / ok.sum(), abs=4 * np.sqrt(0.25 / ok.sum())
    )


def test_missingness_keeps_the_complete_outcomes_of_the_same_seed():
    kwargs = dict(n_tasks=300, n_trials=6, n_systems=2, effect=0.4, seed=12)
    full = simulate_benchmark(**kwargs)
    lost = simulate_benchmark(**kwargs, missing=dict(rate=0.4))
    np.testing.assert_array_equal(full.rates, lost.rates)
    c_full = full.data.dataset["successes"].values
    c_ok, n_ok = lost.data.dataset["successes"].values, lost.data.dataset["trials"].values
    assert (c_ok <= c_full).all() and (n_ok - c_ok <= 6 - c_full).all()


def test_hard_missingness_follows_its_formula_and_biases_exclude_upward():
    rate, n_trials = 0.3, 4
    gaps, observed_missing, expected_missing = [], 0, 0.0
    for sim in simulate_many(
        10,
        n_tasks=300,
        n_trials=n_trials,
        rates="beta_2_5",
        missing=dict(rate=rate, mechanism="hard"),
        seed=13,
    ):
        ds = sim.data.dataset
        p = sim.rates
        observed_missing += int(ds["status_counts"].sel(status="timeout").sum())
        expected_missing += float((n_trials * np.clip(2 * rate * (1 - p), 0, 0.95)).sum())
        observed = ds["successes"].values.sum() / ds["trials"].values.sum()
        gaps.append(observed - sim.truth()[0])
    # the missing counts follow n * clip(2 rate (1 - p), 0, 0.95)
    assert observed_missing == pytest.approx(expected_missing, abs=5 * np.sqrt(expected_missing))
    gaps = np.array(gaps)
    assert gaps.mean() > 3 * gaps.std(ddof=1) / np.sqrt(len(gaps)) > 0


def test_reproducible_from_seed():
    kwargs = dict(
        n_tasks=40,
        n_systems=3,
        clusters=4,
        strata={"a": 1, "b": 1},
        missing=dict(rate=0.2, mechanism="hard"),
    )
    one, two = simulate_benchmark(**kwargs, seed=3), simulate_benchmark(**kwargs, seed=3)
    assert one.data.fingerprint() == two.data.fingerprint()
    np.testing.assert_array_equal(one.rates, two.rates)
    assert simulate_benchmark(**kwargs, seed=4).data.fingerprint() != one.data.fingerprint()
    again = simulate_benchmark(**one.settings)
    assert again.data.fingerprint() == one.data.fingerprint()

    first = list(simulate_many(4, n_tasks=15, seed=21))
    second = list(simulate_many(4, n_tasks=15, seed=21))
    assert [s.data.fingerprint() for s in first] == [s.data.fingerprint() for s in second]
    assert len({s.data.fingerprint() for s in first}) == 4
    assert simulate_benchmark(**first[2].settings).data.fingerprint() == first[2].data.fingerprint()
    assert not one.rates.flags.writeable


@pytest.mark.parametrize("n_tasks, expected", [(100, [50, 30, 20]), (7, [4, 2, 1])])
def test_strata_shares_respected(n_tasks, expected):
    shares = {"a": 5, "b": 3, "c": 2}  # normalised to 0.5, 0.3, 0.2
    sim = simulate_benchmark(n_tasks=n_tasks, strata=shares, seed=0)
    labels = sim.data.dataset["stratum"].values.tolist()
    assert [labels.count(s) for s in shares] == expected
    assert sim.data.stratum_weights == pytest.approx({"a": 0.5, "b": 0.3, "c": 0.2})
    assert sim.settings["strata"] == shares


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(rates="bimodal"), "rates"),
        (dict(rates=("beta", -1.0, 2.0)), "rates"),
        (dict(rates=("gamma", 1.0, 2.0)), "rates"),
        (dict(n_tasks=0), "n_tasks"),
        (dict(n_trials=0), "n_trials"),
        (dict(missing=dict(rate=1.0)), "rate"),
        (dict(missing=dict(rate=-0.1)), "rate"),
        (dict(missing=dict(rate=0.1, mechanism="mnar")), "mechanism"),
        (dict(missing=dict(rate=0.1, status="ok")), "status"),
        (dict(missing=dict(share=0.1)), "missing"),
        (dict(n_systems=3, effect=[1.0, 2.0, 3.0]), "effect"),
        (dict(effect=0.5), "effect"),
        (dict(clusters=20, n_tasks=10), "clusters"),
        (dict(cluster_sd=-1.0, clusters=2), "cluster_sd"),
        (dict(n_systems=2, task_system_sd=np.nan), "task_system_sd"),
        (dict(n_tasks=2, strata={"a": 1, "b": 1, "c": 1}), "strata"),
        (dict(strata={"a": 0}), "strata"),
    ],
)
def test_invalid_arguments_name_the_argument(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        simulate_benchmark(**kwargs)


def test_invalid_truth_arguments_and_eager_simulate_many():
    sim = simulate_benchmark(n_tasks=5, n_systems=2, seed=0)
    for kwargs, argument in (
        (dict(metric="pass@2"), "metric"),
        (dict(estimand="all"), "estimand"),
        (dict(k=0), "k"),
    ):
        with pytest.raises(ValueError, match=argument):
            sim.truth(**kwargs)
    with pytest.raises(ValueError, match="candidate"):
        sim.effect_truth(candidate=2)
    with pytest.raises(ValueError, match="n_tasks"):
        simulate_many(3, n_tasks=0)  # raised before iterating
    with pytest.raises(TypeError):
        simulate_many(3, n_task=5)
