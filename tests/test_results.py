"""Results: dims, estimands, comparisons, persistence, immutability, crosscheck."""

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import bayeval as be
from bayeval import BayevalWarning
from bayeval.testing import fake_results


@pytest.fixture(scope="module")
def tau_fit():
    return fake_results(
        be.datasets.load("tau_bench_airline"), draws=500, chains=2, seed=7, model="hierarchical"
    )


@pytest.fixture(scope="module")
def bounds_fit():
    df = pd.DataFrame(
        {
            "system": ["A"] * 8 + ["B"] * 8,
            "task": [f"t{i}" for i in range(4)] * 4,
            "trial": [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4,
            "success": [1, 0, np.nan, 1, 1, 1, 0, 1, 1, np.nan, 1, 1, 0, 1, 1, np.nan],
        }
    )
    return fake_results(
        be.from_frame(df, trial="trial", missing="bounds"),
        draws=400,
        chains=2,
        seed=1,
        model="hierarchical",
    )


def test_metric_dims(tau_fit):
    assert tau_fit.pass_at_k().dims == ("chain", "draw", "system")
    both = tau_fit.pass_hat_k(k=[1, 2, 4], estimand="tasks")
    assert both.dims == ("chain", "draw", "system", "k")
    assert both["k"].values.tolist() == [1, 2, 4]
    assert both.attrs["estimand"] == "tasks"
    # pass^k decreases and pass@k increases with k, draw by draw
    assert (both.diff("k") <= 1e-12).all()
    at = tau_fit.pass_at_k(k=[1, 2, 4], estimand="population")
    assert (at.diff("k") >= -1e-12).all()


def test_population_closed_form_per_draw(tau_fit):
    from scipy import special

    post = tau_fit.tree["posterior"]
    a = (post["mu"] * post["kappa"]).values
    b = ((1 - post["mu"]) * post["kappa"]).values
    expected = np.exp(special.betaln(a + 3, b) - special.betaln(a, b))
    np.testing.assert_allclose(tau_fit.pass_hat_k(k=3).values, expected)


def test_tasks_estimand_is_the_mean_of_stored_task_rates(tau_fit):
    p = tau_fit.task_rates()
    assert p.dims == ("chain", "draw", "system", "task")
    np.testing.assert_allclose(
        tau_fit.pass_hat_k(k=2, estimand="tasks").values, (p**2).mean("task").values
    )


def test_bounds_are_carried_and_cross_in_compare(bounds_fit):
    draws = bounds_fit.pass_at_k(estimand="tasks")
    assert draws.dims == ("chain", "draw", "system", "missing_bound")
    lower, upper = draws.sel(missing_bound="lower"), draws.sel(missing_bound="upper")
    assert (upper.mean(["chain", "draw"]) > lower.mean(["chain", "draw"])).all()
    out = bounds_fit.compare("B", "A", estimand="tasks")
    expected_lower = draws.sel(system="B", missing_bound="lower") - draws.sel(
        system="A", missing_bound="upper"
    )
    np.testing.assert_allclose(out["effect"].sel(missing_bound="lower"), expected_lower)
    expected_upper = draws.sel(system="B", missing_bound="upper") - draws.sel(
        system="A", missing_bound="lower"
    )
    np.testing.assert_allclose(out["effect"].sel(missing_bound="upper"), expected_upper)
    assert out["effect_interval"].dims == ("missing_bound", "ci_bound")


def test_compare_dataset(tau_fit):
    data = be.from_counts([[3, 5, 1, 8, 2], [6, 9, 2, 9, 4]], 10, systems=["A", "B"])
    res = fake_results(data, draws=500, chains=2, seed=3, model="hierarchical")
    out = res.compare("B", "A", k=[1, 3], margin=0.05, estimand="population")
    assert set(out.data_vars) == {
        "effect",
        "effect_mean",
        "effect_interval",
        "prob_positive",
        "prob_above_margin",
        "prob_noninferior",
        "effect_mcse",
        "effect_ess",
    }
    assert out["effect"].dims == ("chain", "draw", "k")
    effect = out["effect"].sel(k=1)
    assert float(out["prob_above_margin"].sel(k=1)) == pytest.approx(float((effect > 0.05).mean()))
    assert (out["prob_noninferior"] >= out["prob_positive"]).all()
    assert (out["prob_positive"] >= out["prob_above_margin"]).all()
    assert out.attrs["margin"] == 0.05 and out.attrs["candidate"] == "B"
    decision = be.noninferiority(out.sel(k=1), margin=0.05)
    assert decision.attrs["decision"] in ("non-inferior", "inconclusive", "inferior")
    with pytest.raises(ValueError, match="is not a system"):
        res.compare("C", "A")


def test_summary_table(tau_fit):
    table = tau_fit.summary(ci_prob=0.9, k=[1, 2], metrics=("pass@k", "pass^k"))
    assert list(table.columns) == [
        "system",
        "estimand",
        "metric",
        "k",
        "mean",
        "sd",
        "lower",
        "upper",
        "mcse_mean",
        "ess_bulk",
    ]
    assert len(table) == 2 * 2 * 2
    assert table.attrs["ci_prob"] == 0.9
    row = table.query("estimand == 'tasks' and metric == 'pass^k' and k == 2").iloc[0]
    draws = tau_fit.pass_hat_k(k=2, estimand="tasks").values.ravel()
    assert row["mean"] == pytest.approx(draws.mean())
    assert row["lower"] == pytest.approx(np.quantile(draws, 0.05))


def test_estimand_errors():
    res = fake_results(be.from_counts([[3, 4]], 5), model="beta_binomial", draws=50, chains=1)
    with pytest.raises(ValueError, match="supports estimand in \\['tasks'\\]"):
        res.pass_at_k(estimand="population")
    with pytest.raises(ValueError, match="estimand must be one of"):
        res.pass_at_k(estimand="new tasks")
    with pytest.raises(ValueError, match="runs with sampler in"):
        be.fit(be.from_counts([[3, 4]], 5), model="beta_binomial", sampler="nutpie")
    with pytest.raises(ValueError, match="model must be one of"):
        be.fit(be.from_counts([[3, 4]], 5), model="no_such_model")


def test_extrapolation_beyond_observed_trials_warns(tau_fit):
    with pytest.warns(BayevalWarning, match="beyond the 4 trial"):
        tau_fit.pass_at_k(k=8)


def test_roundtrip_netcdf(tmp_path, bounds_fit):
    path = tmp_path / "fit.nc"
    bounds_fit.to_netcdf(path)
    back = be.load(path)
    assert back.tree.identical(bounds_fit.tree)
    xr.testing.assert_identical(
        back.pass_at_k(k=[1, 2], estimand="tasks"), bounds_fit.pass_at_k(k=[1, 2], estimand="tasks")
    )
    assert back.data.fingerprint() == bounds_fit.data.fingerprint()


def test_methods_do_not_mutate(tau_fit):
    before = tau_fit.tree.copy(deep=True)
    tree = tau_fit.tree
    with pytest.raises(ValueError, match="read-only"):
        tree["posterior"]["mu"].values[:] = 0.0
    tree["posterior"]["extra"] = tree["posterior"]["mu"] * 2  # changes the copy only
    tau_fit.summary()
    tau_fit.pass_hat_k(k=[1, 2], estimand="tasks")
    assert "extra" not in tau_fit.tree["posterior"].data_vars
    assert tau_fit.tree.identical(before)


def test_seed_reproducibility_and_recording():
    data = be.from_counts([[3, 4, 9, 0]], 10)
    one, two = (be.fit(data, draws=100, chains=2, seed=42, model="hierarchical") for _ in range(2))
    assert one.tree["posterior"].identical(two.tree["posterior"])
    xr.testing.assert_identical(one.pass_at_k(estimand="tasks"), two.pass_at_k(estimand="tasks"))
    drawn = be.fit(data, draws=100, chains=2, seed=None, model="hierarchical")
    assert isinstance(drawn.tree.attrs["seed"], int)
    again = be.fit(data, draws=100, chains=2, seed=drawn.tree.attrs["seed"], model="hierarchical")
    assert again.tree["posterior"].identical(drawn.tree["posterior"])


def test_attrs_record_settings():
    # a real fit: the settings checked here are the ones fit records
    fitted = be.fit(
        be.datasets.load("tau_bench_airline"), draws=100, chains=2, seed=7, model="hierarchical"
    )
    attrs = fitted.tree.attrs
    for key in (
        "model",
        "sampler",
        "sampler_requested",
        "seed",
        "draws",
        "chains",
        "priors",
        "missing_policy",
        "input_hash",
        "library_versions",
        "created_at",
    ):
        assert key in attrs
    assert attrs["input_hash"] == be.datasets.load("tau_bench_airline").fingerprint()
    assert "pymc" in attrs["library_versions"]


def test_arviz_works_on_the_tree(tau_fit):
    import arviz_stats

    ess = arviz_stats.ess(tau_fit.tree, var_names=["mu", "kappa"], method="bulk")
    assert set(ess.data_vars) >= {"mu", "kappa"}
    assert not tau_fit.tree.to_dataset().coords  # the root holds no coordinates


def test_repr_is_readable(tau_fit):
    text = repr(tau_fit)
    assert "model='hierarchical'" in text and "gpt-4o" in text and "pass@1 (population)" in text


def test_strata_populations_combine_with_declared_weights():
    rng = np.random.default_rng(3)
    easy, hard = rng.binomial(10, rng.beta(5, 1, 12)), rng.binomial(10, rng.beta(1, 5, 8))
    data = be.from_counts(
        np.r_[easy, hard],
        10,
        strata=["easy"] * 12 + ["hard"] * 8,
        stratum_weights={"easy": 0.3, "hard": 0.7},
    )
    res = be.fit(data, draws=4000, chains=2, seed=0, model="hierarchical")
    assert res.tree["posterior"]["mu"].dims == ("chain", "draw", "system", "stratum")
    # the joint fit's prior (12 tasks in a stratum: the fixed default), alone as well, where the
    # 8 hard tasks would otherwise get the few-tasks prior
    priors = {"log_kappa": tuple(json.loads(res.tree.attrs["priors"])["log_kappa"])}
    alone = [
        be.fit(
            be.from_counts(x, 10), draws=4000, chains=2, seed=1, model="hierarchical", priors=priors
        )
        .pass_at_k()
        .values
        for x in (easy, hard)
    ]
    expected = 0.3 * alone[0].mean() + 0.7 * alone[1].mean()
    assert float(res.pass_at_k().mean()) == pytest.approx(expected, abs=0.005)
    tasks = res.pass_at_k(estimand="tasks")
    p = res.task_rates()
    weights = np.r_[np.full(12, 0.3 / 12), np.full(8, 0.7 / 8)]
    np.testing.assert_allclose(tasks.values, (p * weights).sum("task").values)


def test_crosscheck_pairs_estimands_with_bootstrap_units(tau_fit):
    out = be.crosscheck(tau_fit, k=[1, 2], metric="pass^k", n_boot=2000)
    assert out["bayes_interval"].dims == ("estimand", "system", "k", "ci_bound")
    assert out["bootstrap_unit"].values.tolist() == ["trial", "task"]
    boot = be.bootstrap.pass_hat_k(
        be.datasets.load("tau_bench_airline"), k=[1, 2], unit="trial", n_boot=2000, seed=0
    )
    xr.testing.assert_allclose(
        out["bootstrap_interval"].sel(estimand="tasks", drop=True),
        boot["interval"].reset_coords(drop=True),
    )
    width = out["bayes_width"]
    assert float(width.sel(estimand="population", k=1).item()) > float(
        width.sel(estimand="tasks", k=1).item()
    )
    np.testing.assert_allclose(
        out["centre_difference"], out["bayes_mean"] - out["bootstrap_estimate"]
    )
    frame = be.crosscheck(tau_fit, n_boot=500, fmt="dataframe")
    assert {"bayes_lower", "bootstrap_upper", "width_ratio"} <= set(frame.columns)
    assert len(frame) == 2


def test_crosscheck_says_when_the_trial_bootstrap_is_blind():
    data = be.from_counts([[1, 0, 1, 1, 0, 1, 1, 0]], 1)
    res = fake_results(data, draws=200, chains=2, seed=0, model="hierarchical")
    with pytest.warns(BayevalWarning, match="zero width"):
        out = be.crosscheck(res, n_boot=200)
    assert float(out["bootstrap_width"].sel(estimand="tasks").item()) == pytest.approx(0.0)


# -- one margin rule ---------------------------------------------------------------------------
def test_validate_margin_takes_a_score_difference():
    from bayeval._validate import validate_margin

    for value, expected in ((0, 0.0), (0.02, 0.02), (np.float32(0.5), 0.5), (np.int64(0), 0.0)):
        got = validate_margin(value)
        assert got == pytest.approx(expected) and type(got) is float
    assert validate_margin(0.999) == 0.999
    for bad in (-0.01, 1, 1.5, float("nan"), float("inf"), True, np.bool_(False), "0.1", None):
        with pytest.raises(ValueError, match="margin must be a non-negative number below 1"):
            validate_margin(bad)
    assert validate_margin(0.3, positive=True) == 0.3
    with pytest.raises(ValueError, match="margin must be a number strictly between 0 and 1"):
        validate_margin(0, positive=True)
    assert validate_margin(-0.5, signed=True) == -0.5
    for bad in (-1, 1, float("nan")):
        with pytest.raises(ValueError, match=r"margin must be a number strictly inside \(-1, 1\)"):
            validate_margin(bad, signed=True)


def test_every_margin_goes_through_the_one_rule():
    from bayeval import harness, monitor, planning

    data = be.from_counts([[3, 5, 1, 8, 2], [6, 9, 2, 9, 4]], 10, systems=["A", "B"])
    res = fake_results(data, draws=200, chains=2, seed=3, model="hierarchical")
    a, b = "A", "B"
    message = "margin must be a non-negative number below 1"
    with pytest.raises(ValueError, match=message):
        res.compare(b, a, margin=2)
    with pytest.raises(ValueError, match=message):
        res.compare_all(margin=-0.1)
    with pytest.raises(ValueError, match=message):
        be.bootstrap.compare(data, b, a, margin=True, n_boot=10)
    comparison = res.compare(b, a, margin=0.05)
    with pytest.raises(ValueError, match=message):
        planning.noninferiority(comparison, margin=1.5)
    with pytest.raises(ValueError, match=message):
        planning.noninferiority(comparison.assign_attrs(margin=float("nan")))
    with pytest.raises(ValueError, match="margin must be a number strictly between 0 and 1"):
        harness.canary({"v1": data, "v2": data}, a, "v1", "v2", margin=0)
    with pytest.raises(ValueError, match=r"strictly inside \(-1, 1\)"):
        monitor.monitor_paired([(1, data)], b, a, margin=-1)
