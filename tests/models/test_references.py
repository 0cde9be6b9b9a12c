"""Models against independent references: closed forms, SciPy integration, full-latent NUTS."""

import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

import bayeval as be
from bayeval import BayevalWarning
from bayeval.models import build_beta_binomial_model, build_hierarchical_model


def test_conjugate_task_rates_match_closed_form_moments():
    c = np.array([[0, 3, 7, 10], [1, 1, 9, 5]])
    data = be.from_counts(c, 10, systems=["A", "B"])
    res = be.fit(
        data, model="beta_binomial", draws=20_000, chains=2, seed=3, priors={"p": (0.5, 2.0)}
    )
    p = res.task_rates()
    a, b = 0.5 + c, 2.0 + 10 - c
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    sd_err = np.sqrt(var / 40_000)
    np.testing.assert_array_less(np.abs(p.mean(["chain", "draw"]).values - mean), 4 * sd_err)
    np.testing.assert_allclose(p.var(["chain", "draw"]).values, var, rtol=0.03)
    # the tasks estimand is the mean of the task rates draw by draw
    tasks = res.pass_at_k(k=1, estimand="tasks")
    np.testing.assert_allclose(tasks.values, p.mean("task").values)
    assert res.tree.attrs["sampler"] == "conjugate"


def test_conjugate_tasks_estimand_for_a_large_task_set_uses_exact_moments(rng):
    # 30,000 tasks in 17 count patterns: group sums are drawn from their exact moments
    c = rng.binomial(16, rng.beta(0.4, 0.3, size=30_000))
    data = be.from_counts(c, 16)
    res = be.fit(data, model="beta_binomial", draws=2000, chains=2, seed=1)
    assert "p" not in res.tree["posterior"].data_vars
    draws = res.pass_hat_k(k=[1, 3], estimand="tasks").values[..., 0, :].reshape(-1, 2)
    a, b = 1 + c, 1 + 16 - c
    m1 = np.stack([a / (a + b), np.exp(special.betaln(a + 3, b) - special.betaln(a, b))], -1)
    m2 = np.stack(
        [
            np.exp(special.betaln(a + 2, b) - special.betaln(a, b)),
            np.exp(special.betaln(a + 6, b) - special.betaln(a, b)),
        ],
        -1,
    )
    mean, sd = m1.mean(0), np.sqrt((m2 - m1**2).sum(0)) / len(c)
    np.testing.assert_array_less(np.abs(draws.mean(0) - mean), 4 * sd / np.sqrt(4000))
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.05)


def _reference_posterior(c, n, k_values, prior=(1.0, 1.5)):
    """Independent reference: SciPy quadrature on (mu, log kappa), per-task likelihoods."""
    mus = np.linspace(1e-4, 1 - 1e-4, 400)
    lks = np.linspace(prior[0] - 8 * prior[1], prior[0] + 8 * prior[1], 400)
    M, L = np.meshgrid(mus, lks, indexing="ij")
    K = np.exp(L)
    lik = stats.betabinom.logpmf(c, n, (M * K)[..., None], ((1 - M) * K)[..., None]).sum(-1)
    grid = lik + stats.norm.logpdf(L, *prior)  # uniform prior on mu
    dens = np.exp(grid - grid.max())
    norm = integrate.trapezoid(integrate.trapezoid(dens, lks, axis=1), mus)
    out = {}
    for k in k_values:
        value = 1 - np.exp(
            special.betaln(M * K, (1 - M) * K + k) - special.betaln(M * K, (1 - M) * K)
        )
        mean = integrate.trapezoid(integrate.trapezoid(dens * value, lks, axis=1), mus) / norm
        order = np.argsort(value.ravel())
        weights = (dens * np.gradient(mus)[:, None] * np.gradient(lks)[None, :]).ravel()[order]
        cdf = np.cumsum(weights) / weights.sum()
        lo, hi = np.interp([0.025, 0.975], cdf, value.ravel()[order])
        out[k] = (mean, lo, hi)
    return out


@pytest.mark.parametrize("rates", ["u_shaped", "moderate"])
def test_hierarchical_grid_matches_scipy_integration(rates):
    rng = np.random.default_rng(11)
    a, b = (0.4, 0.3) if rates == "u_shaped" else (2.0, 5.0)
    n = np.full(12, 8)
    c = rng.binomial(n, rng.beta(a, b, size=12))
    ref = _reference_posterior(c, n, [1, 5])
    res = be.fit(be.from_counts(c, n), draws=5000, chains=4, seed=2, model="hierarchical")
    draws = res.pass_at_k(k=[1, 5], estimand="population")
    for k in (1, 5):
        values = draws.sel(k=k).values.ravel()
        mean, lo, hi = ref[k]
        mc_error = values.std() / np.sqrt(len(values))
        assert values.mean() == pytest.approx(mean, abs=4 * mc_error + 1e-3)
        assert np.quantile(values, 0.025) == pytest.approx(lo, abs=0.012)
        assert np.quantile(values, 0.975) == pytest.approx(hi, abs=0.012)


def test_builders_have_named_dims_and_forms():
    data = be.from_counts([[3, 10, 0], [1, 2, 3]], 10, systems=["A", "B"], strata=["x", "x", "y"])
    marginal = build_hierarchical_model(data)
    assert marginal.named_vars_to_dims["mu"] == ("system", "stratum")
    assert marginal.named_vars_to_dims["y"] == ("system", "task")
    latent = build_hierarchical_model(data, marginal=False)
    assert latent.named_vars_to_dims["p"] == ("system", "task")
    compressed = build_hierarchical_model(data, compress=True)
    assert "loglik" in compressed.named_vars
    # the compressed and per-task marginal forms give the same log density
    point = {
        "mu_logodds__": np.array([[0.2, -0.4], [1.0, 0.3]]),
        "log_kappa": np.array([[0.5, 1.5], [-1.0, 2.0]]),
    }
    fast = {"mode": "FAST_COMPILE"}
    assert compressed.compile_logp(**fast)(point) == pytest.approx(
        marginal.compile_logp(**fast)(point)
    )
    conj = build_beta_binomial_model(data)
    assert conj.named_vars_to_dims["p"] == ("system", "task")
    with pytest.raises(ValueError, match="choose missing_bound"):
        import pandas as pd

        df = pd.DataFrame({"system": "A", "task": ["a", "b"], "success": [1, None]})
        build_hierarchical_model(be.from_frame(df, missing="bounds"))


def _nuts_data():
    rng = np.random.default_rng(5)
    return be.from_counts(rng.binomial(16, rng.beta(0.5, 0.4, size=15)), 16)


def test_grid_and_nuts_agree_within_monte_carlo_error():
    data = _nuts_data()
    grid = be.fit(data, draws=2000, chains=4, seed=1, model="hierarchical")
    nuts = be.fit(
        data, draws=1000, chains=4, seed=1, sampler="nutpie", tune=1000, model="hierarchical"
    )
    assert nuts.diagnostics["divergences"] == 0
    for k in (1, 5):
        g = grid.pass_at_k(k=k).values.ravel()
        u = nuts.pass_at_k(k=k).values.ravel()
        error = np.sqrt(g.var() / len(g) + u.var() / nuts.diagnostics["min_ess_bulk"])
        assert u.mean() == pytest.approx(g.mean(), abs=4 * error)
        np.testing.assert_allclose(
            np.quantile(u, [0.025, 0.975]), np.quantile(g, [0.025, 0.975]), atol=0.02
        )


def test_full_latent_model_agrees_with_the_marginal_one():
    import pymc as pm

    data = _nuts_data()
    grid = be.fit(data, draws=2000, chains=2, seed=4, model="hierarchical")
    with build_hierarchical_model(data, marginal=False):
        trace = pm.sample(
            draws=1000,
            tune=1000,
            chains=2,
            random_seed=3,
            progressbar=False,
            quiet=True,
            nuts_sampler="nutpie",
            compute_convergence_checks=False,
        )
    mu_latent = trace["posterior"]["mu"].values.ravel()
    mu_grid = grid.tree["posterior"]["mu"].values.ravel()
    assert mu_latent.mean() == pytest.approx(mu_grid.mean(), abs=0.02)
    assert mu_latent.std() == pytest.approx(mu_grid.std(), rel=0.15)


def test_bad_fits_warn_and_strict_raises():
    data = _nuts_data()
    with pytest.warns(BayevalWarning, match="diagnostics fail their gates.*ESS"):
        be.fit(data, draws=15, chains=2, tune=15, seed=0, sampler="pymc", model="hierarchical")
    with pytest.raises(RuntimeError, match="gates"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BayevalWarning)
            be.fit(
                data,
                draws=15,
                chains=2,
                tune=15,
                seed=0,
                sampler="pymc",
                strict=True,
                model="hierarchical",
            )


def test_the_gate_warning_names_the_parameter_that_fails():
    """A fake posterior whose chains disagree on one parameter (phi of system B) only: the
    diagnostics and the warning name it, at the values ArviZ gives for it alone."""
    import arviz_stats
    import xarray as xr

    from bayeval._arviz import convergence
    from bayeval.inference import _check_gates

    rng = np.random.default_rng(0)
    phi = rng.normal(size=(4, 400, 2))
    phi[:, :, 1] += np.array([0.0, 0.0, 3.0, 3.0])[:, None]  # two chains apart
    post = xr.Dataset(
        {
            "sigma_task": (("chain", "draw"), rng.normal(size=(4, 400))),
            "phi": (("chain", "draw", "system"), phi),
        },
        coords={"system": ["A", "B"]},
    )
    diag = convergence(post, None)
    alone = post["phi"].sel(system="B").rename("x").to_dataset()
    rhat = float(arviz_stats.rhat(alone, sample_dims=["chain", "draw"], method="rank")["x"])
    ess = float(arviz_stats.ess(alone, sample_dims=["chain", "draw"], method="bulk")["x"])
    assert diag["max_rhat"] == pytest.approx(rhat) and rhat > 1.5
    assert diag["min_ess_bulk"] == pytest.approx(ess) and ess < 400
    assert diag["max_rhat_parameter"] == diag["min_ess_bulk_parameter"] == "phi[B]"
    with pytest.warns(
        BayevalWarning,
        match=r"r-hat up to .* in phi\[B\] \(gate 1.01\); "
        r"bulk ESS down to \d+ in phi\[B\]",
    ):
        _check_gates(diag, chains=4, strict=False)
    # a scalar is named without brackets
    post["phi"] = post["phi"].sel(system="A")
    post["sigma_task"][2:] += 3.0
    assert convergence(post, None)["max_rhat_parameter"] == "sigma_task"


def test_ppc_flags_a_prior_that_cannot_be_u_shaped():
    rng = np.random.default_rng(8)
    data = be.from_counts(rng.binomial(16, rng.beta(0.3, 0.3, size=40)), 16)
    good = be.fit(data, draws=500, chains=2, seed=0, model="hierarchical")
    assert not bool(good.ppc()["flagged"].item())
    with pytest.warns(BayevalWarning, match="posterior predictive check"):
        bad = be.fit(
            data,
            draws=500,
            chains=2,
            seed=0,
            priors={"log_kappa": (5.0, 0.1)},
            model="hierarchical",
        )
    check = bad.ppc()
    assert bool(check["flagged"].item())
    assert (
        float(check["observed_extreme_share"].item())
        > float(check["predicted_extreme_share"].item()) + 0.3
    )


def test_single_trial_warnings():
    data = be.from_counts([[1, 0, 1, 1, 0, 1]], 1)
    with pytest.warns(BayevalWarning, match="74%"):
        be.fit(data, model="beta_binomial", draws=100, chains=1, seed=0)
    with pytest.warns(BayevalWarning, match="not identified"):
        be.fit(data, draws=100, chains=1, seed=0, model="hierarchical")


def test_tasks_intervals_cover_the_drawn_tasks_and_population_ones_are_wider():
    """10 tasks x 32 trials, U-shaped Beta(0.4, 0.3): the estimands differ several-fold."""
    rng = np.random.default_rng(2026)
    n_sim, hits = 150, 0
    ratios, deffs = [], []
    for i in range(n_sim):
        p = rng.beta(0.4, 0.3, size=10)
        data = be.from_counts(rng.binomial(32, p), 32)
        with warnings.catch_warnings():  # some draws are mostly all-or-nothing: fit warns
            warnings.simplefilter("ignore", be.BayevalWarning)
            res = be.fit(data, draws=500, chains=2, seed=i, model="hierarchical")
        tasks = res.pass_at_k(estimand="tasks").values.ravel()
        pop = res.pass_at_k(estimand="population").values.ravel()
        lo, hi = np.quantile(tasks, [0.025, 0.975])
        hits += lo <= p.mean() <= hi
        ratios.append(
            np.subtract(*np.quantile(pop, [0.975, 0.025]))
            / np.subtract(*np.quantile(tasks, [0.975, 0.025]))
        )
        deffs.append(float(be.design_effect(data)["design_effect"].item()))
    assert hits / n_sim >= 0.90
    ratio, predicted = np.median(ratios), np.sqrt(np.median(deffs))
    assert ratio > 2.5
    assert 0.5 < ratio / predicted < 1.6
