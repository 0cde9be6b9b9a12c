"""The fractional model: the logit-normal kernels at fractional counts, the data, the fits."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

import bayeval as be
from bayeval.data.groups import dataset_of
from bayeval.models.fractional import gridded_scores
from bayeval.models.kernels.likelihood import log_marginal, loglik_and_grad
from bayeval.models.kernels.quadrature import Rules
from bayeval.models.kernels.tables import COUNT_GRID


def _reference_log_marginal(eta, c, n, sigma_e, sigma_v, nodes=120):
    """log of the double integral over e and v by a dense Gauss-Hermite product rule (numpy)."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    e = sigma_e * x  # (K,)
    v = sigma_v * x  # (L,)
    total = np.zeros(nodes)
    for s in range(len(eta)):
        y = eta[s] + e[:, None] + v[None, :]  # (K, L)
        cell = np.exp(c[s] * y - n[s] * np.logaddexp(0.0, y)) @ w  # (K,)
        total += np.log(cell)
    return float(np.log(np.exp(total) @ w))


@pytest.mark.parametrize(
    ("c", "n"),
    [
        ([0.3, 1.0, 0.0], [1, 1, 1]),  # one attempt: the fixed grid, fractional and whole
        ([0.5, 0.2, 0.8], [1, 1, 1]),
        ([1.3, 0.5, 2.0], [2, 1, 2]),  # two attempts: still the fixed grid
        ([3.3, 0.5, 4.0], [5, 1, 5]),  # five: the adaptive rule's tables
    ],
)
def test_fractional_counts_integrate_as_a_dense_product_rule_does(c, n):
    eta, c, n = np.array([0.3, -0.5, 1.0]), np.array(c, float), np.array(n, float)
    got = log_marginal(eta[None], c[None], n[None], 1.1, 0.6)[0]
    assert got == pytest.approx(_reference_log_marginal(eta, c, n, 1.1, 0.6), abs=2e-6)


def test_fractional_counts_far_out_take_each_nodes_logarithms():
    # 1 - p underflows to 0 at every node of the first cell: only logarithms keep its terms
    eta, c, n = np.array([800.0, 0.5]), np.array([1.5, 0.3]), np.array([2.0, 1.0])
    got = log_marginal(eta[None], c[None], n[None], 1.1, 0.6)[0]
    assert np.isfinite(got)
    assert got == pytest.approx(_reference_log_marginal(eta, c, n, 1.1, 0.6), rel=1e-6)


def test_fractional_gradient_is_the_derivative_of_the_value():
    eta = np.array([[0.3, -0.5, 1.0], [0.1, 0.2, -0.3]])
    c = np.array([[0.3, 0.5, 1.0], [0.2, 1.0, 0.7]])
    n = np.ones_like(c)
    arrays = Rules().arrays()

    def value(eta, sigma_e, sigma_v):
        return loglik_and_grad(eta, c, n, np.ones(2), sigma_e, sigma_v, True, *arrays)[0]

    _, g_eta, g_se, g_sv = loglik_and_grad(eta, c, n, np.ones(2), 1.1, 0.6, True, *arrays)
    h = 1e-5
    for p, s in [(0, 0), (1, 2), (0, 2)]:
        up, down = eta.copy(), eta.copy()
        up[p, s] += h
        down[p, s] -= h
        assert g_eta[p, s] == pytest.approx((value(up, 1.1, 0.6) - value(down, 1.1, 0.6)) / (2 * h))
    assert g_se == pytest.approx((value(eta, 1.1 + h, 0.6) - value(eta, 1.1 - h, 0.6)) / (2 * h))
    assert g_sv == pytest.approx((value(eta, 1.1, 0.6 + h) - value(eta, 1.1, 0.6 - h)) / (2 * h))


def test_counts_off_the_grid_are_refused():
    with pytest.raises(ValueError, match="grid of 1 / COUNT_GRID"):
        log_marginal(np.zeros((1, 2)), np.array([[0.37, 1.0]]), np.ones((1, 2)), 1.0, 0.5)


def _scores(seed=0, n_tasks=30, systems=("A", "B")):
    rng = np.random.default_rng(seed)
    ability = {"A": -0.3, "B": 0.4}
    rows = []
    for j in range(n_tasks):
        e = rng.normal(0, 1.2)
        for s in systems:
            m = special.expit(ability[s] + e + rng.normal(0, 0.4))
            score = rng.beta(6 * m, 6 * (1 - m)) if j % 2 else float(rng.random() < m)
            rows.append({"system": s, "task": f"t{j}", "score": score})
    return pd.DataFrame(rows)


def test_gridded_scores_are_on_the_grid_unbiased_and_leave_the_data_alone():
    df = _scores()
    data = be.from_frame(df, score="score")
    before = data.dataset["successes"].values.copy()
    total = data.score_statistics()["sum"].values
    draws = np.stack(
        [gridded_scores(data, seed).dataset["successes"].values for seed in range(400)]
    )
    assert np.allclose(draws * COUNT_GRID, np.round(draws * COUNT_GRID))
    assert np.all(np.abs(draws - total) < 1 / COUNT_GRID)  # a neighbour on the grid
    # unbiased: the mean over seeds is the sum, within 4 standard errors of the rounding
    se = np.sqrt(0.25 / COUNT_GRID**2 / len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - total) < 4 * se + 1e-12)
    whole = np.isclose(total, np.round(total))
    assert np.all(draws[:, whole] == total[whole])  # 0/1 outcomes keep their counts
    assert np.array_equal(data.dataset["successes"].values, before)


def test_fractional_on_binary_outcomes_is_the_logit_normal_fit():
    counts = [[1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1], [0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 0]]
    data = be.from_counts(counts, trials=1, systems=["A", "B"])
    kwargs = {"draws": 100, "chains": 2, "tune": 100, "seed": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frac = be.fit(data, model="fractional", **kwargs)
        binary = be.fit(data, model="logit_normal", **kwargs)
    a = frac.mean_score(estimand="tasks")
    b = binary.pass_at_k(estimand="tasks")
    np.testing.assert_allclose(a.values, b.values)
    np.testing.assert_allclose(
        frac.tree["posterior"]["sigma_task"].values, binary.tree["posterior"]["sigma_task"].values
    )


def test_fractional_fit_reads_the_mean_score_and_refuses_binary_metrics():
    df = _scores(n_tasks=40)
    data = be.from_frame(df, score="score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = be.fit(data, model="fractional", draws=200, chains=2, seed=1)
    assert res.tree.attrs["model"] == "fractional"
    tasks = res.mean_score(estimand="tasks")
    observed = df.groupby("system")["score"].mean().loc[data.systems].values
    lo, hi = tasks.quantile([0.005, 0.995], dim=("chain", "draw")).values
    assert np.all((lo < observed) & (observed < hi))
    np.testing.assert_allclose(res.pass_at_k(estimand="tasks").values, tasks.values)
    effect = res.compare("B", "A", metric="mean", estimand="tasks")
    assert float(effect["effect_mean"]) == pytest.approx(
        float((tasks.sel(system="B") - tasks.sel(system="A")).mean())
    )
    with pytest.raises(ValueError, match="mean score"):
        res.pass_at_k(k=2)
    fitted = dataset_of(res.tree)["successes"].values  # the gridded sums the fit read
    np.testing.assert_allclose(fitted, gridded_scores(data, 1).dataset["successes"].values)


def test_many_systems_take_the_task_latent_form_and_its_posterior_is_the_collapsed_one(
    monkeypatch,
):
    """12 systems x 40 tasks with one graded attempt each: ``fit`` samples the task-latent
    form (its tables at fractional counts), whose posterior is the collapsed form's (each
    system's mean score over these tasks and the spreads within four Monte Carlo standard
    errors); three attempts a cell keep the collapsed form."""
    import arviz_stats as azs

    from bayeval.models.fractional import FractionalScores

    rng = np.random.default_rng(4)
    systems = [f"s{i:02d}" for i in range(12)]
    m = special.expit(
        np.linspace(-1, 1, 12)[:, None] + rng.normal(0, 1.2, 40) + rng.normal(0, 0.3, (12, 40))
    )
    graded = np.arange(40) % 2 == 1
    score = np.where(graded, rng.beta(6 * m, 6 * (1 - m)), (rng.random(m.shape) < m) * 1.0)
    frame = pd.DataFrame(
        {
            "system": np.repeat(systems, 40),
            "task": np.tile([f"t{j}" for j in range(40)], 12),
            "score": score.ravel(),
        }
    )
    data = be.from_frame(frame, score="score")
    model = FractionalScores()
    assert model.sampling_form(data)[0] == "task-latent"
    thrice = be.from_frame(pd.concat([frame] * 3), score="score")
    assert model.sampling_form(thrice)[0] == "collapsed"  # where 0/1 outcomes take full-latent
    kwargs = {"draws": 300, "tune": 300, "chains": 4, "seed": 2, "progress": False}
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # one attempt a task: said, tested
        fits["task-latent"] = be.fit(data, **kwargs)
        monkeypatch.setattr(
            FractionalScores, "sampling_form", lambda self, data, sampler="auto": ("collapsed", "")
        )
        fits["collapsed"] = be.fit(data, **kwargs)
    assert [f.tree.attrs["form"] for f in fits.values()] == ["task-latent", "collapsed"]
    assert all(f.model == "fractional" for f in fits.values())
    pairs = [
        tuple(f.mean_score(estimand="tasks") for f in fits.values()),
        *[
            tuple(f.tree["posterior"][name] for f in fits.values())
            for name in ("sigma_task", "sigma_task_system")
        ],
    ]
    for a, b in pairs:
        gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))).values
        assert np.all(gap < 4 * np.hypot(azs.mcse(a), azs.mcse(b)).values), a.name


def _beta_cells(kappa, rng, n_systems=4, n_tasks=600, spread=0.0):
    """Scores Beta(kappa m, kappa (1 - m)) of one attempt a cell, and the true dispersion.

    ``m`` per system, varied within a system by ``spread`` on the logit scale; a second cluster
    holds 0/1 outcomes of the same means.
    """
    logit = np.linspace(-1, 1, n_systems)[:, None] + spread * rng.normal(size=(n_systems, n_tasks))
    m = special.expit(logit)
    graded = rng.beta(kappa * m, kappa * (1 - m))
    binary = (rng.random(m.shape) < m) * 1.0
    score = np.concatenate([graded, binary], axis=1)
    frame = pd.DataFrame(
        {
            "system": np.repeat([f"s{i}" for i in range(n_systems)], 2 * n_tasks),
            "task": np.tile([f"t{j}" for j in range(2 * n_tasks)], n_systems),
            "cluster": np.tile(["graded"] * n_tasks + ["binary"] * n_tasks, n_systems),
            "score": score.ravel(),
        }
    )
    variance = m * (1 - m) / (kappa + 1)  # a Beta's, in closed form
    return frame, float(variance.sum() / (m * (1 - m)).sum())


def test_score_dispersion_estimates_the_variance_over_its_bound():
    """Equal means within a system and cluster: the estimate is the Beta's 1 / (kappa + 1)
    (within 4 simulation standard errors, over 40 data sets); means that vary within them: it
    lies above the truth (an upper bound); 0/1 outcomes: exactly 1."""
    from bayeval.models.fractional import score_dispersion

    rng = np.random.default_rng(11)
    for spread, check in ((0.0, "equal"), (1.0, "above")):
        found, truth = [], []
        for _ in range(40):
            frame, phi = _beta_cells(0.5, rng, spread=spread)
            out = score_dispersion(be.from_frame(frame, score="score", cluster="cluster"))
            assert float(out["dispersion"].sel(group="binary")) == 1.0
            found.append(float(out["dispersion"].sel(group="graded")))
            truth.append(phi)
        found, truth = np.array(found), np.array(truth)
        se = found.std(ddof=1) / np.sqrt(len(found))
        gap = found.mean() - truth.mean()
        if check == "equal":
            assert truth.mean() == pytest.approx(1 / 1.5) and abs(gap) < 4 * se
        else:
            assert gap > 4 * se, (found.mean(), truth.mean())
    np.testing.assert_allclose(out["weight"].values, 1 / out["dispersion"].values)


def test_weighted_scores_count_each_cell_its_weight_in_expectation_and_keep_0_1_data():
    from bayeval.models.fractional import score_dispersion, weighted_scores

    frame, _ = _beta_cells(2.0, np.random.default_rng(5), n_systems=2, n_tasks=30, spread=0.5)
    data = gridded_scores(be.from_frame(frame, score="score", cluster="cluster"), 0)
    before = data.dataset.copy(deep=True)
    weight = score_dispersion(data)["weight"].to_series()
    expected = np.where(data.dataset["cluster"].values == "graded", weight["graded"], 1.0)
    total = data.score_statistics()["sum"].values
    draws = [weighted_scores(data, seed).dataset for seed in range(300)]
    trials = np.stack([d["trials"].values for d in draws])
    sums = np.stack([d["successes"].values for d in draws])
    assert set(np.unique(trials)) <= {1, 2}
    # unbiased: each cell's attempts average to its weight, its sum to its sum of scores times
    # it (within 4 standard errors of the two roundings, 0.5 and 0.5 + 0.05 at most)
    assert np.all(np.abs(trials.mean(axis=0) - expected) < 4 * 0.5 / np.sqrt(300))
    assert np.all(np.abs(sums.mean(axis=0) - total * expected) < 4 * 0.55 / np.sqrt(300))
    assert np.allclose(sums * COUNT_GRID, np.round(sums * COUNT_GRID)) and np.all(sums <= trials)
    binary = data.dataset["cluster"].values == "binary"
    assert np.all(trials[:, :, binary] == 1)
    assert np.all(sums[:, :, binary] == data.dataset["successes"].values[:, binary])
    assert data.dataset.identical(before)


def test_fractional_fit_stores_the_attempts_run_and_saves_and_loads(tmp_path):
    """The tree keeps the attempts run (``successes`` the gridded sums, ``trials`` the
    attempts) and the weighted cells the sampler read beside them; it writes and reads back
    with the same readouts."""
    frame, _ = _beta_cells(2.0, np.random.default_rng(6), n_systems=2, n_tasks=20, spread=0.5)
    data = be.from_frame(frame, score="score", cluster="cluster")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # one attempt a task: said, tested
        res = be.fit(data, model="fractional", draws=100, chains=2, tune=100, seed=2)
    stored = dataset_of(res.tree)
    assert np.array_equal(stored["trials"].values, data.dataset["trials"].values)
    assert stored["sampled_trials"].values.max() == 2  # the graded cluster's weight is above 1
    found = json.loads(res.tree.attrs["dispersion"])
    assert found["binary"]["weight"] == 1.0 and found["graded"]["weight"] > 1.0
    path = tmp_path / "fit.nc"
    res.to_netcdf(path)
    back = be.load(path)
    np.testing.assert_allclose(
        back.mean_score(estimand="tasks").values, res.mean_score(estimand="tasks").values
    )
