"""bayeval.irt: select, score and compare against independent references."""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import integrate, special, stats

import bayeval as be
from bayeval.errors import BayevalWarning
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


N_ANCHOR, N_NEW = 15, 25
NEW_ITEMS = [f"n{j}" for j in range(N_NEW)]


def two_versions(seed, n_system=12, n_old=40, trials=4, shift=1.0):
    """A benchmark and its next version: 15 anchor items kept, 25 new harder ones.

    The old systems' abilities are standardised, so the calibration's scale (abilities
    Normal(0, 1)) is the scale of the truth; the new systems are stronger by ``shift`` and the
    new items harder by ``shift``, so a calibration of the new version alone standardises
    its own systems and lands elsewhere.
    """
    rng = np.random.default_rng([seed, 31])
    z = rng.normal(size=n_system)
    theta_old = (z - z.mean()) / z.std()
    theta_new = rng.normal(shift, 1.0, n_system)
    b_old, a_old = rng.normal(0.0, 1.0, n_old), np.exp(rng.normal(0.0, 0.3, n_old))
    b_new, a_new = rng.normal(shift, 1.0, N_NEW), np.exp(rng.normal(0.0, 0.3, N_NEW))
    kept = rng.choice(n_old, N_ANCHOR, replace=False)
    old_tasks = [f"i{j}" for j in range(n_old)]
    a2, b2 = np.concatenate([a_old[kept], a_new]), np.concatenate([b_old[kept], b_new])
    c_old = rng.binomial(trials, special.expit(a_old * (theta_old[:, None] - b_old)))
    c_new = rng.binomial(trials, special.expit(a2 * (theta_new[:, None] - b2)))
    old = be.from_counts(
        c_old, trials=trials, systems=[f"s{i}" for i in range(n_system)], tasks=old_tasks
    )
    new = be.from_counts(
        c_new,
        trials=trials,
        systems=[f"v{i}" for i in range(n_system)],
        tasks=[old_tasks[j] for j in kept] + NEW_ITEMS,
    )
    return old, new, {"a": a_new, "b": b_new, "theta": theta_new}


@pytest.fixture(scope="module")
def linked_versions():
    """Three seeds: the old calibration, the linked fit and the new version fitted alone."""
    out = []
    with warnings.catch_warnings():  # short chains may miss the ESS gates: read, not gated
        warnings.simplefilter("ignore", BayevalWarning)
        for seed in range(3):
            old, new, truth = two_versions(seed)
            settings = {"draws": 300, "tune": 300, "chains": 2, "seed": seed}
            res = be.fit(old, model="irt", **settings)
            linked = be.irt.link(new, anchors=res, **settings)
            alone = be.fit(new, model="irt", **settings)
            out.append((res, linked, alone, truth))
    return out


def interval_hits(fit, name, labels, truth) -> np.ndarray:
    draws = fit.tree["posterior"][name].sel({"task" if name != "theta" else "system": labels})
    lo, hi = draws.quantile([0.025, 0.975], dim=("chain", "draw")).values
    return (lo <= truth) & (truth <= hi)


def new_item_shift(fit, truth) -> float:
    """The mean over the new items of the posterior mean of b minus the true b."""
    b = fit.tree["posterior"]["b"].sel(task=NEW_ITEMS).mean(("chain", "draw")).values
    return float(np.mean(b - truth["b"]))


def test_link_recovers_new_items_on_the_old_scale(linked_versions):
    hits_b, hits_a, hits_theta, shifts = [], [], [], []
    for _, linked, _, truth in linked_versions:
        hits_b.append(interval_hits(linked, "b", NEW_ITEMS, truth["b"]))
        hits_a.append(interval_hits(linked, "a", NEW_ITEMS, truth["a"]))
        systems = linked.systems
        hits_theta.append(interval_hits(linked, "theta", systems, truth["theta"]))
        shifts.append(new_item_shift(linked, truth))
        assert linked.diagnostics["divergences"] == 0
        assert "anchors" in linked.abilities().attrs["scale_note"]
    # 75 new items and 36 new systems over three seeds: 95% intervals miss a few at most
    assert np.mean(hits_b) >= 0.85
    assert np.mean(hits_a) >= 0.8
    assert np.mean(hits_theta) >= 0.8
    # the new items sit where the truth does; one seed's common shift (the new systems'
    # location read off 15 anchors, mostly easy for them) has an sd of about 0.2
    assert abs(np.mean(shifts)) < 0.3


def test_link_keeps_the_anchors_where_the_calibration_put_them(linked_versions):
    for res, linked, _, _ in linked_versions:
        kept = [t for t in linked.tree["posterior"]["task"].values.tolist() if t[0] == "i"]
        before = res.tree["posterior"]["b"].sel(task=kept)
        after = linked.tree["posterior"]["b"].sel(task=kept).mean(("chain", "draw"))
        z = (after - before.mean(("chain", "draw"))) / before.std(("chain", "draw"))
        # the new systems' outcomes may move an anchor, within its calibrated uncertainty
        assert float(np.abs(z).max()) < 2.5


def test_an_unlinked_calibration_of_the_new_version_is_on_another_scale(linked_versions):
    hits = []
    for _, linked, alone, truth in linked_versions:
        # fitted alone, the new (stronger) systems are standardised: every difficulty moves
        # down by about their mean ability, 1
        assert new_item_shift(alone, truth) < -0.5
        assert new_item_shift(alone, truth) < new_item_shift(linked, truth) - 0.5
        hits.append(interval_hits(alone, "b", NEW_ITEMS, truth["b"]))
    assert np.mean(hits) < 0.75


def test_link_refuses_data_without_shared_items_and_its_own_anchors():
    res = fake_results(model="irt")
    unrelated = be.from_counts([[1, 2], [3, 0]], trials=4, systems=["X", "Y"], tasks=["u", "w"])
    with pytest.raises(ValueError, match=r"no task of the new data is a calibrated item.*'u'"):
        be.irt.link(unrelated, anchors=res)
    shared = res.data.dataset["task"].values[:2].tolist()
    data = be.from_counts([[1, 2], [3, 0]], trials=4, systems=["X", "Y"], tasks=shared)
    with pytest.raises(ValueError, match="leave priors\\['anchors'\\] unset"):
        be.irt.link(data, anchors=res, priors={"anchors": {}})
    with pytest.raises(ValueError, match="calibration's form '2pl'"):
        be.irt.link(data, anchors=res, priors={"form": "1pl"})
    with pytest.raises(ValueError, match="model='irt'"):
        be.irt.link(data, anchors=fake_results())
    # the same refusal where the anchors are given to be.fit directly
    table = be.irt.anchors(res)
    with pytest.raises(ValueError, match="no task of these data is an anchor"):
        be.fit(unrelated, model="irt", priors={"anchors": table}, draws=10, tune=10, chains=1)


def test_anchors_are_the_calibrations_posterior_means_and_sds():
    res = fixed_items()
    table = be.irt.anchors(res, tasks=["t2", "zz", "t0"])
    assert table["task"] == ["t2", "t0"]
    np.testing.assert_allclose(np.array(table["b"])[:, 0], B[[2, 0]])
    np.testing.assert_allclose(np.array(table["log_a"])[:, 0], np.log(A[[2, 0]]))
    # the fixed items have no spread: the sd is floored, positive
    assert min(sd for _, sd in table["b"]) > 0


def test_a_linked_calibration_scores_with_its_own_ability_population(linked_versions):
    """Scored on all its items, a system of the linked fit gets back about the fit's own theta:
    its prior is the fitted Normal(mu_theta, sigma_theta) (the new systems are stronger by 1),
    not the calibration scale's Normal(0, 1), which pulls them back towards 0."""
    for _, linked, _, _ in linked_versions[:2]:
        post = linked.tree["posterior"]
        strongest = str(post["theta"].mean(("chain", "draw")).idxmax("system").item())
        data = linked.data.sel(system=[strongest])
        scored = be.irt.score(data, items=linked)
        own = float(post["theta"].sel(system=strongest).mean())
        sd = float(post["theta"].sel(system=strongest).std())
        assert abs(float(scored["theta_mean"].item()) - own) < 0.25 * sd + 0.05
        # the linked fit's population sits above the calibration scale's origin
        assert float(post["mu_theta"].mean()) > 0.4


def test_theta_draws_follow_the_population_where_no_item_was_run():
    """With no outcome, theta's draws are its prior: Normal(mu, sigma) of each draw."""
    rng = np.random.default_rng(0)
    D = 20_000
    a, b = np.ones((D, 1)), np.zeros((D, 1))
    c, n = np.zeros((1, 1)), np.zeros((1, 1))
    mu, sigma = np.full(D, 1.3), np.full(D, 0.6)
    from bayeval.analyses.irt import theta_posterior_draws

    theta = theta_posterior_draws(a, b, c, n, rng, mu=mu, sigma=sigma)[:, 0]
    assert abs(theta.mean() - 1.3) < 4 * 0.6 / np.sqrt(D)
    assert abs(theta.std() - 0.6) < 0.02
    standard = theta_posterior_draws(a, b, c, n, rng)[:, 0]
    assert abs(standard.mean()) < 4 / np.sqrt(D) and abs(standard.std() - 1.0) < 0.02
