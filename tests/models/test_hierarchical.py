"""The hierarchical model's named BDA3 concentration prior, checked against its definition."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import bayeval as be
from bayeval.models import build_hierarchical_model
from bayeval.models import hierarchical as hier


def _points(seed=0, size=40):
    rng = np.random.default_rng(seed)
    return rng.uniform(-4, 4, size), rng.uniform(-6, 8, size)


def _log_abs_jacobian(x, y, h=1e-6):
    """log |det d(alpha, beta) / d(x, y)| by central differences of the map itself."""

    def ab(x, y):
        mu, kappa = 1 / (1 + np.exp(-x)), np.exp(y)
        return np.stack([mu * kappa, (1 - mu) * kappa])

    d_dx = (ab(x + h, y) - ab(x - h, y)) / (2 * h)
    d_dy = (ab(x, y + h) - ab(x, y - h)) / (2 * h)
    return np.log(np.abs(d_dx[0] * d_dy[1] - d_dx[1] * d_dy[0]))


def test_bda3_prior_is_the_change_of_variables_of_alpha_plus_beta_to_the_minus_five_halves():
    x, y = _points()
    mu, kappa = 1 / (1 + np.exp(-x)), np.exp(y)
    alpha, beta = mu * kappa, (1 - mu) * kappa
    direct = -2.5 * np.log(alpha + beta) + _log_abs_jacobian(x, y)
    model = hier.log_prior(hier.validate_priors({"log_kappa": "bda3"}))(x, y)
    # equal up to the normalising constant
    np.testing.assert_allclose(model - model[0], direct - direct[0], atol=1e-6)


def test_normal_prior_density_is_the_change_of_variables_of_beta_and_normal():
    x, y = _points(1)
    priors = hier.validate_priors({"mu": (2.0, 3.0), "log_kappa": (0.5, 2.0)})
    mu = 1 / (1 + np.exp(-x))
    h = 1e-6
    dmu_dx = (1 / (1 + np.exp(-(x + h))) - 1 / (1 + np.exp(-(x - h)))) / (2 * h)
    direct = stats.beta.logpdf(mu, 2.0, 3.0) + np.log(dmu_dx) + stats.norm.logpdf(y, 0.5, 2.0)
    model = hier.log_prior(priors)(x, y)
    np.testing.assert_allclose(model - model[0], direct - direct[0], atol=1e-6)


def test_bda3_prior_is_confined_to_its_range_and_validated():
    lo, hi = hier.BDA3_LOG_KAPPA_RANGE
    lp = hier.log_prior(hier.validate_priors({"log_kappa": "bda3"}))
    values = lp(np.zeros(4), np.array([lo - 0.1, lo + 0.1, hi - 0.1, hi + 0.1]))
    assert np.isneginf(values[[0, 3]]).all() and np.isfinite(values[[1, 2]]).all()
    with pytest.raises(ValueError, match="bda3"):
        hier.validate_priors({"log_kappa": "jeffreys"})


def test_pymc_form_of_the_bda3_prior_matches_the_grid_density():
    data = be.from_counts([[3, 10, 0, 7]], trials=10)
    model = build_hierarchical_model(data, priors={"log_kappa": "bda3"}, compress=True)
    logp = model.compile_logp(jacobian=False, mode="FAST_COMPILE")
    c, n = np.array([3, 10, 0, 7]), np.full(4, 10)
    grid = hier._log_density(hier.validate_priors({"log_kappa": "bda3"}), n, c, np.ones(4))
    lo, hi = hier.BDA3_LOG_KAPPA_RANGE
    x, y = _points(2, 6)
    pymc = []
    for xi, yi in zip(x, y, strict=True):
        point = {
            "mu_logodds__": np.array([xi]),
            "log_kappa_interval__": np.array([special.logit((yi - lo) / (hi - lo))]),
        }
        # without Jacobians PyMC's density is on (mu, log kappa); the grid's is on (logit mu,
        # log kappa), which adds log(mu (1 - mu))
        pymc.append(logp(point) + special.log_expit(xi) + special.log_expit(-xi))
    pymc = np.array(pymc)
    ref = grid(x, y)
    np.testing.assert_allclose(pymc - pymc[0], ref - ref[0], atol=1e-6)


def test_fit_records_and_uses_the_bda3_prior():
    data = be.from_counts([[30, 0, 32, 5, 1]], trials=32)
    res = be.fit(
        data, model="hierarchical", draws=500, chains=2, seed=0, priors={"log_kappa": "bda3"}
    )
    assert json.loads(res.tree.attrs["priors"])["log_kappa"] == "bda3"
    log_kappa = np.log(res.tree["posterior"]["kappa"].values)
    lo, hi = hier.BDA3_LOG_KAPPA_RANGE
    assert log_kappa.min() >= lo - 1e-9 and log_kappa.max() <= hi + 1e-9


def test_small_n_section_travels_from_its_results_into_the_card(tmp_path):
    from tests.helpers import load_benchmark

    cal, small_n = load_benchmark("calibration"), load_benchmark("small_n")
    start, end = cal.SMALL_N_MARKERS
    assert "no small-N results" in cal.small_n_section(tmp_path)
    (tmp_path / "small_n.md").write_text(f"# title\n\n{start}\n| a |\n|---|\n{end}\n\nrest\n")
    section = cal.small_n_section(tmp_path)
    assert section == f"{start}\n| a |\n|---|\n{end}"
    assert small_n.card_block(tmp_path / "small_n.md") == "| a |\n|---|"
    card = tmp_path / "card.md"
    card.write_text(f"before\n{section}\nafter\n")
    assert small_n.update_card(card, "new")
    assert card.read_text() == f"before\n{start}\nnew\n{end}\nafter\n"


def test_small_n_evaluates_every_prior_on_the_same_simulation():
    import warnings

    import pandas as pd

    from tests.helpers import load_benchmark

    small_n = load_benchmark("small_n")
    priors = list(small_n.PRIORS)[:2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = small_n.evaluate("u_shaped", 3, 8, 0, 5, dict(draws=200, chains=1), priors)
    summary = small_n.summarise(pd.DataFrame(rows))
    # two priors x two estimands x pass@1 and pass@5 (n >= 5)
    assert len(summary) == 8 and set(summary["prior"]) == set(priors)
    truths = pd.DataFrame(rows).groupby("prior")[["truth_tasks", "truth_population"]].first()
    assert (truths.nunique() == 1).all()


@pytest.mark.parametrize("cell", [("u_shaped", 5, 32), ("uniform", 3, 1)])
def test_small_n_grid_intervals_reproduce_the_calibration_fit(cell):
    import warnings

    from bayeval.simulate import simulate_benchmark
    from tests.helpers import load_benchmark

    cal, small_n = load_benchmark("calibration"), load_benchmark("small_n")
    seed = cal.sim_seed(cal.cell_seed(3, *cell), 0)
    sim = simulate_benchmark(**cal.scenario_kwargs(*cell), seed=seed)
    truths = {k: (0.5, 0.5) for k in (1, 5)}
    ks = [1, 5] if cell[2] >= 5 else [1]
    opts = dict(draws=300, chains=2)
    # small_n's default row is the fixed Normal(1, 1.5); fit() would choose from the data
    for priors in ({"log_kappa": hier.DEFAULT_PRIORS["log_kappa"]}, {"log_kappa": "bda3"}):
        fast, slow = cal._Recorder({}), cal._Recorder({})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            small_n.grid_intervals(fast, sim, seed, opts, ks, truths, priors=priors)
            cal._hierarchical(slow, sim, seed, opts, ks, truths, priors=priors)
        assert len(fast.rows) == len(slow.rows) == 2 * len(ks)
        for a, b in zip(fast.rows, slow.rows, strict=True):
            assert (a["method"], a["metric"]) == (b["method"], b["metric"])
            for key in ("estimate", "lower", "upper"):
                assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-12)


def test_few_mostly_extreme_tasks_warn():
    import warnings

    from bayeval import BayevalWarning

    # three of five tasks at 0 or 32 of 32
    with pytest.warns(BayevalWarning, match="at most 10 tasks"):
        hier.warn_few_tasks(be.from_counts([[32, 0, 30, 1, 32]], trials=32))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BayevalWarning)
        # few tasks that do not look U-shaped; enough tasks
        hier.warn_few_tasks(be.from_counts([[32, 0, 30, 12, 20]], trials=32))
        hier.warn_few_tasks(be.from_counts([[32, 0] * 5 + [32]], trials=32))


def test_few_tasks_warning_counts_tasks_per_stratum_and_skips_single_trials():
    import warnings

    from bayeval import BayevalWarning

    counts = np.tile([8, 0, 8, 1], 10)  # 40 tasks, three in four at 0 or 8 of 8
    strata = ["big"] * 35 + ["small"] * 5
    with pytest.warns(BayevalWarning, match="in a stratum"):
        hier.warn_few_tasks(be.from_counts([counts], trials=8, strata=strata))
    with warnings.catch_warnings():
        warnings.simplefilter("error", BayevalWarning)
        hier.warn_few_tasks(be.from_counts([counts], trials=8))
        # one trial per task: population pass@1 does not depend on kappa; with fewer trials
        # than FEW_TASKS_MIN_TRIALS all-or-nothing tasks are common in any population
        hier.warn_few_tasks(be.from_counts([[1, 0, 1]], trials=1))
        few_trials = hier.FEW_TASKS_MIN_TRIALS - 1
        hier.warn_few_tasks(be.from_counts([[few_trials, 0, few_trials, 1]], trials=few_trials))


def test_few_tasks_with_several_trials_get_the_wide_prior_and_say_so():
    import json
    import warnings

    import bayeval as be

    grid = dict(model="hierarchical", sampler="grid", draws=100, chains=1, seed=0)
    data = be.from_counts([[32, 0, 32, 1, 32, 0]], trials=32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", be.BayevalWarning)  # the wide prior: nothing to warn of
        res = be.fit(data, **grid)
    assert json.loads(res.tree.attrs["priors"])["log_kappa"] == list(hier.FEW_TASKS_LOG_KAPPA)
    assert "at most 10 tasks per population" in res.tree.attrs["prior_note"]
    # the same fit with that prior asked for: the same draws
    asked = be.fit(data, **grid, priors={"log_kappa": hier.FEW_TASKS_LOG_KAPPA})
    assert asked.tree.attrs["prior_note"] == ""
    np.testing.assert_array_equal(res.pass_at_k().values, asked.pass_at_k().values)
    # many tasks, or one trial per task: the fixed default, no note
    for other in (
        be.from_counts([[20, 5, 31, 12, 9, 17] * 2], trials=32),
        be.from_counts([[1, 0, 1, 1, 0]], trials=1),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)  # single-trial warning
            fixed = be.fit(other, **grid)
        assert json.loads(fixed.tree.attrs["priors"])["log_kappa"] == [1.0, 1.5]
        assert fixed.tree.attrs["prior_note"] == ""


def test_fit_warns_for_few_all_or_nothing_tasks_under_the_fixed_prior():
    import bayeval as be

    # three all-or-nothing tasks of 32 trials among four single-trial ones: median trials 1,
    # so the fixed prior is in force, and the pattern of the shortfall holds
    frame = pd.DataFrame(
        {
            "system": "A",
            "task": [f"t{j}" for j in range(7)],
            "successes": [32, 0, 32, 1, 0, 1, 0],
            "trials": [32, 32, 32, 1, 1, 1, 1],
        }
    )
    data = be.from_frame(frame, successes="successes", trials="trials")
    with pytest.warns(be.BayevalWarning, match="at most 10 tasks"):
        res = be.fit(data, model="hierarchical", sampler="grid", draws=100, chains=1, seed=0)
    assert res.tree.attrs["prior_note"] == ""
