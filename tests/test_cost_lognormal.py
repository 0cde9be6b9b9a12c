"""The hurdle log-normal cost model of Results.cost(model="lognormal")."""

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from bayeval import _cost
from bayeval._cost import _lognormal_cost_draws, frontier


def _frame(seed=0, n_task=40, n_trial=3, mu=-1.0, tau=0.5, sigma=0.6, zero=0.0,
           systems=("A",)):
    rng = np.random.default_rng(seed)
    rows = []
    for s in systems:
        u = rng.normal(0.0, tau, n_task)
        for t in range(n_task):
            for j in range(n_trial):
                c = 0.0 if rng.random() < zero else float(np.exp(mu + u[t] + rng.normal(0, sigma)))
                rows.append({"system": s, "task": f"t{t}", "trial": j,
                             "success": int(rng.random() < 0.5), "cost": c})
    return pd.DataFrame(rows)


def _fit(df, **kw):
    data = be.from_frame(df, trial="trial", covariates=["cost"], **kw)
    return be.fit(data, model="beta_binomial", draws=200, chains=2, seed=0)


def test_mu_given_tau_sigma_is_the_gls_normal(monkeypatch):
    """With (sigma, tau) pinned by a spike in the grid's log density and a flat prior on mu,
    the draws of mu follow N(1' S^-1 y / 1' S^-1 1, 1 / 1' S^-1 1) with S the dense covariance
    sigma^2 I + tau^2 (same task) of the raw log costs: generalised least squares."""
    sigma0, tau0 = 0.6, 0.4
    df = _frame(seed=1, n_task=15, n_trial=4)
    df = df[~((df.task == "t3") & (df.trial > 0)) & ~((df.task == "t7") & (df.trial > 1))]
    data = be.from_frame(df, trial="trial", covariates=["cost"])

    def spike(log_s, log_t, *args):
        ls, lt = np.repeat(log_s, len(log_t)), np.tile(log_t, len(log_s))
        return -1e6 * ((ls - np.log(sigma0)) ** 2 + (lt - np.log(tau0)) ** 2)

    monkeypatch.setattr(_cost, "_lognormal_log_posterior", spike)
    _, params = _lognormal_cost_draws(data, "cost", 40_000, np.random.default_rng(3), parts=True)
    y = np.log(df["cost"].to_numpy())
    same = df["task"].to_numpy()[:, None] == df["task"].to_numpy()[None, :]

    def gls(sigma, tau):
        inv_one = np.linalg.solve(sigma**2 * np.eye(len(y)) + tau**2 * same, np.ones(len(y)))
        return inv_one @ y / inv_one.sum(), 1 / np.sqrt(inv_one.sum())

    mu, tau, sigma = (params[name][:, 0] for name in ("mu", "tau", "sigma"))
    # the grid draws (sigma, tau) uniformly within the spike's cell: the reference at the
    # cell's corners brackets the draws of mu
    assert sigma == pytest.approx(sigma0, rel=0.01)
    assert tau == pytest.approx(tau0, rel=0.1)
    corners = [gls(s, t) for s in (sigma.min(), sigma.max()) for t in (tau.min(), tau.max())]
    means, sds = np.array(corners).T
    mc = 4 * sds.max() / np.sqrt(mu.size)
    assert means.min() - mc < mu.mean() < means.max() + mc
    assert sds.min() * 0.99 < mu.std() < sds.max() * 1.01
    # and at the cell's centre the closed form holds to the cell's width
    ref_mean, ref_sd = gls(np.exp(np.log(sigma).mean()), np.exp(np.log(tau).mean()))
    assert mu.mean() == pytest.approx(ref_mean, abs=0.05 * ref_sd + mc)
    assert mu.std() == pytest.approx(ref_sd, rel=0.01)


def test_cost_per_attempt_recovers_the_lognormal_mean():
    mu, tau, sigma = -1.0, 0.5, 0.6
    res = _fit(_frame(seed=2, n_task=400, n_trial=4, mu=mu, tau=tau, sigma=sigma))
    out = res.cost("cost", n_draws=2000, model="lognormal")
    truth = np.exp(mu + (tau**2 + sigma**2) / 2)
    draws = out["cost_per_attempt_draws"].sel(system="A").values
    assert abs(draws.mean() - truth) < 3 * draws.std()
    assert float(out["cost_per_attempt"].sel(system="A")) == pytest.approx(draws.mean())
    # the interval is narrower than the Bayesian bootstrap's, which ignores the shape, but of
    # the same order
    boot = res.cost("cost", n_draws=2000)
    width = np.diff(out["cost_per_attempt_interval"].values[0])[0]
    boot_width = np.diff(boot["cost_per_attempt_interval"].values[0])[0]
    assert 0.5 * boot_width < width < 1.5 * boot_width
    # cost per success is the cost per attempt over pass@1, draw by draw
    np.testing.assert_allclose(out["cost_per_success_draws"].values,
                               out["cost_per_attempt_draws"].values
                               / out["pass_at_1_draws"].values)


def test_hurdle_share_is_the_beta_posterior_mean():
    df = _frame(seed=4, n_task=30, n_trial=3, zero=0.2)
    before = df.copy(deep=True)
    data = be.from_frame(df, trial="trial", covariates=["cost"])
    assert df.equals(before)
    zeros, positives = int((df["cost"] == 0).sum()), int((df["cost"] > 0).sum())
    _, params = _lognormal_cost_draws(data, "cost", 40_000, np.random.default_rng(0), parts=True)
    share = params["zero_share"][:, 0]
    a, b = 1 + zeros, 1 + positives
    assert share.mean() == pytest.approx(a / (a + b), abs=4 * np.sqrt(a * b / (a + b) ** 2
                                                                     / (a + b + 1) / 4e4))
    assert share.var() == pytest.approx(a * b / (a + b) ** 2 / (a + b + 1), rel=0.05)
    # an attempt of any status counts; the zero share scales the positive part's mean
    cost = params["mu"] + (params["tau"] ** 2 + params["sigma"] ** 2) / 2
    np.testing.assert_allclose(_lognormal_cost_draws(data, "cost", 40_000,
                                                     np.random.default_rng(0)),
                               (1 - share[:, None]) * np.exp(cost))


def test_same_variables_as_the_bayesian_bootstrap_and_frontier_works():
    res = _fit(_frame(seed=5, n_task=30, n_trial=3, zero=0.1, systems=("A", "B", "C")))
    post = res.cost("cost", n_draws=300, k=[1, 3], model="lognormal")
    bb = res.cost("cost", n_draws=300, k=[1, 3])
    assert set(post.data_vars) == set(bb.data_vars)
    for name in post.data_vars:
        assert post[name].dims == bb[name].dims, name
    assert post.attrs["cost_model"] == "lognormal"
    assert bb.attrs["cost_model"] == "bayesian_bootstrap"
    # the success side is the same under either model
    np.testing.assert_allclose(post["pass_at_1_draws"].values, bb["pass_at_1_draws"].values)
    np.testing.assert_allclose(post["pass_at_k_draws"].values, bb["pass_at_k_draws"].values)
    # the budget curve: k attempts cost k times the expected attempt cost
    np.testing.assert_allclose(post["cost_of_k_draws"].sel(k=3).values,
                               3 * post["cost_per_attempt_draws"].values)
    spend = post["expected_spend_draws"].sel(k=3).values
    assert (spend >= post["cost_per_attempt_draws"].values - 1e-12).all()
    assert (spend <= 3 * post["cost_per_attempt_draws"].values + 1e-12).all()
    front = frontier(post)
    assert front["prob_dominates"].dims == ("candidate", "baseline")
    assert np.isfinite(front["prob_dominates"].values[~np.eye(3, dtype=bool)]).all()
    from bayeval._cost import evidence  # the evidence table reads the default model
    assert evidence(res, "cost", n_boot=200, n_draws=200)["rows"][0]["system"] == "A"


def test_refusals():
    df = _frame(seed=6, n_task=10, n_trial=2, systems=("A", "B"))
    df.loc[df.system == "B", "cost"] = 0.0
    df.loc[(df.system == "B") & (df.task == "t0") & (df.trial == 0), "cost"] = 1.5
    res = _fit(df)
    with pytest.raises(ValueError, match=r"'cost'.*at least 2 positive.*B: 1 positive cost"
                                         r".*model='bayesian_bootstrap'"):
        res.cost("cost", n_draws=100, model="lognormal")
    # two positive costs on one task: no task spread to estimate
    df.loc[(df.system == "B") & (df.task == "t0"), "cost"] = 1.5
    with pytest.raises(ValueError, match=r"B: 2 positive cost\(s\) on 1 task"):
        _fit(df).cost("cost", n_draws=100, model="lognormal")
    res.cost("cost", n_draws=100)  # the Bayesian bootstrap takes zeros as they are
    with pytest.raises(ValueError, match="model"):
        res.cost("cost", n_draws=100, model="gamma")
    with pytest.raises(ValueError, match="no covariate 'price'"):
        res.cost("price", n_draws=100, model="lognormal")
    bad = df.copy()
    bad.loc[3, "cost"] = -1.0
    with pytest.raises(ValueError, match=r"covariate column 'cost' must hold finite, "
                                         r"non-negative"):
        be.from_frame(bad, trial="trial", covariates=["cost"])
