"""bayeval.irt: select, score and compare against independent references."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import integrate, special, stats

import bayeval as be
from bayeval.results import Results
from bayeval.testing import fake_data, fake_results

A = np.array([1.0, 2.0, 2.0, 0.5, 1.5, 1.0])
B = np.array([0.0, 0.0, 3.0, 0.0, -1.0, 1.0])
ITEMS = [f"t{j}" for j in range(len(A))]


def fixed_items(a=A, b=B, draws=2000, theta=(-0.5, 0.8)):
    """An irt posterior whose item parameters are the same in every draw (known exactly)."""
    rng = np.random.default_rng(0)
    truth = special.expit(np.asarray(a) * (np.asarray(theta)[:, None] - np.asarray(b)))
    data = fake_data(truth, systems=["A", "B"], trials=3)
    res = fake_results(data, model="irt", draws=draws, chains=1)
    tree = res.tree
    post = tree["posterior"].to_dataset()
    lead = (1, draws)
    post = post.assign(
        a=(("chain", "draw", "task"), np.broadcast_to(a, lead + (len(a),)).copy()),
        b=(("chain", "draw", "task"), np.broadcast_to(b, lead + (len(b),)).copy()),
        theta=(("chain", "draw", "system"), np.asarray(theta) + 0.1 * rng.normal(size=lead + (2,))),
    )
    tree["posterior"] = xr.DataTree(post)
    return Results(tree)


def outcomes(c, tasks, systems=("NEW",), trials=3):
    """0/1 outcomes: ``c[j]`` successes of ``trials`` on each task, for each system."""
    rows = [
        {"system": s, "task": t, "trial": i, "success": int(i < cj)}
        for s in systems
        for t, cj in zip(tasks, c, strict=True)
        for i in range(trials)
    ]
    return be.from_frame(pd.DataFrame(rows))


def reference_posterior(a, b, c, n):
    """theta's posterior density given fixed items, by numerical integration (SciPy)."""

    def unnormalised(t):  # a scalar for quad, or an array of abilities
        p = special.expit(a * (np.asarray(t)[..., None] - b))
        return stats.norm.pdf(t) * np.prod(stats.binom.pmf(c, n, p), axis=-1)

    z = integrate.quad(unnormalised, -10, 10, points=[0.0], limit=200)[0]
    return lambda t: unnormalised(t) / z


def test_score_matches_numerical_integration():
    res = fixed_items()
    tasks = ["t0", "t1", "t4"]
    c, n = np.array([2, 3, 1]), np.array([3, 3, 3])
    idx = [ITEMS.index(t) for t in tasks]
    sub = be.irt.score(outcomes(c, tasks), items=res, seed=3)
    density = reference_posterior(A[idx], B[idx], c, n)
    mean = integrate.quad(lambda t: t * density(t), -10, 10, limit=200)[0]
    var = integrate.quad(lambda t: (t - mean) ** 2 * density(t), -10, 10, limit=200)[0]
    theta = sub["theta"].sel(system="NEW").values.ravel()
    se = np.sqrt(var / theta.size)
    assert abs(theta.mean() - mean) < 4 * se
    assert abs(theta.var() / var - 1) < 0.15  # 2000 draws: the variance's sd is about 3%
    # the draws follow the reference distribution (Kolmogorov-Smirnov on its CDF)
    grid = np.linspace(-10, 10, 20001)
    values = density(grid)
    cumulative = integrate.cumulative_trapezoid(values, grid, initial=0.0)
    assert stats.kstest(theta, lambda x: np.interp(x, grid, cumulative)).pvalue > 0.001
    # full pass@1 over all six items: its posterior mean by the same integration
    full = integrate.quad(
        lambda t: np.mean(special.expit(A * (t - B))) * density(t), -10, 10, limit=200
    )[0]
    draws = sub["full_pass_at_1"].sel(system="NEW").values.ravel()
    assert abs(draws.mean() - full) < 4 * draws.std() / np.sqrt(draws.size)
    assert int(sub["n_items"].sel(system="NEW")) == 3


def test_score_refuses_unknown_items_and_other_fits():
    res = fixed_items()
    with pytest.raises(ValueError, match="not calibrated items.*'zz'"):
        be.irt.score(outcomes(np.array([1, 2]), ["t0", "zz"]), items=res)
    with pytest.raises(ValueError, match="model='irt'"):
        be.irt.score(outcomes(np.array([1]), ["t0"]), items=fake_results())
    with pytest.raises(TypeError, match="EvalData"):
        be.irt.score("runs.csv", items=res)


def expected_information(a, b):
    """E[a^2 p (1 - p)] over theta ~ Normal(0, 1), by SciPy's quadrature."""
    return integrate.quad(
        lambda t: (
            a**2 * special.expit(a * (t - b)) * (1 - special.expit(a * (t - b))) * stats.norm.pdf(t)
        ),
        -12,
        12,
    )[0]


def test_select_fisher_picks_the_most_informative_items():
    res = fixed_items()
    reference = np.array([expected_information(a, b) for a, b in zip(A, B, strict=True)])
    chosen = be.irt.select(res, 3)
    best = [ITEMS[j] for j in np.argsort(-reference)[:3]]
    assert chosen["item"].values.tolist() == best
    np.testing.assert_allclose(
        chosen["information"].values, np.sort(reference)[::-1][:3], rtol=1e-6
    )


def test_select_for_one_system_skips_what_it_ran():
    res = fixed_items()
    # every item was run by A in the calibration: nothing is left to choose for it
    with pytest.raises(ValueError, match="more than the 0 items 'A' has not run"):
        be.irt.select(res, 1, system="A")
    with pytest.raises(ValueError, match="not a system of the calibration"):
        be.irt.select(res, 1, system="Z")


def test_select_stratified_takes_one_item_per_difficulty_stratum():
    res = fixed_items()
    chosen = be.irt.select(res, 3, method="stratified", seed=4)["item"].values.tolist()
    order = [ITEMS[j] for j in np.argsort(B, kind="stable")]
    strata = [set(part) for part in np.array_split(order, 3)]
    assert all(len(set(chosen) & s) == 1 for s in strata)
    random = be.irt.select(res, 4, method="random", seed=1)["item"].values.tolist()
    assert len(set(random)) == 4 and set(random) <= set(ITEMS)


def test_readouts_refuse_a_fit_of_another_model():
    res = fake_results(model="logit_normal")
    for call in (res.abilities, res.items, lambda: be.irt.select(res, 2)):
        with pytest.raises(ValueError, match="model='irt'.*'logit_normal'"):
            call()


def test_compare_same_outcomes_is_centred_on_zero():
    res = fixed_items()
    data = outcomes(np.array([2, 2, 2]), ["t0", "t1", "t4"], systems=("NEW", "TWIN"))
    sub = be.irt.score(data, items=res)
    out = be.irt.compare(sub, res, "NEW", "TWIN")
    low, high = out["effect_interval"].values
    assert low < 0 < high
    assert abs(float(out["effect_mean"])) < 4 * float(out["effect"].std()) / np.sqrt(2000)
    against_fit = be.irt.compare(sub, res, "NEW", "A")
    assert against_fit.attrs["paired"] and against_fit["effect"].dims == ("chain", "draw")
    with pytest.raises(ValueError, match="neither scored nor the calibration"):
        be.irt.compare(sub, res, "NEW", "nobody")
    with pytest.raises(ValueError, match="not scored on this calibration"):
        be.irt.compare(sub, fake_results(model="irt", seed=9, data=fake_data(seed=5)), "NEW", "A")


def test_items_information_is_a_squared_p_q_at_each_ability():
    res = fixed_items()
    theta = res.abilities()["theta"].sel(system="A").values.ravel()
    p = special.expit(A[None, :] * (theta[:, None] - B[None, :]))
    expected = (A**2 * p * (1 - p)).mean(axis=0)
    out = res.items(theta=[0.0])
    np.testing.assert_allclose(out["information"].sel(system="A").values, expected, rtol=1e-10)
    at_zero = A**2 * special.expit(-A * B) * (1 - special.expit(-A * B))
    np.testing.assert_allclose(out["information_grid"].sel(theta=0.0).values, at_zero)
    np.testing.assert_allclose(out["b_mean"].values, B)
