"""ArviZ groups of a fit: log_likelihood (per task, joint over systems), observed_data (each
task's total) and constant_data (the cells), the replicated totals of posterior_predictive (a new
task's per draw), and task rates out of the posterior."""

import tracemalloc
import warnings

import arviz_stats
import numpy as np
import pytest
from scipy import stats

import bayeval as be
from bayeval import BayevalWarning
from bayeval.models import _groups, get_model
from bayeval.testing import MODELS, fake_data, fake_results
from tests.helpers import judged_data
from tests.models.test_logit_normal import _reference_log_marginal


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(4)
    p = stats.beta(0.6, 0.5).rvs(30, random_state=rng)
    c = np.stack([rng.binomial(4, p), rng.binomial(4, np.clip(p + 0.1, 0, 1))])
    return be.from_counts(
        c, trials=4, systems=["A", "B"], clusters=[f"g{j % 5}" for j in range(30)]
    )


def test_hierarchical_log_likelihood_is_the_beta_binomial_pmf(pair):
    res = be.fit(pair, model="hierarchical", draws=50, chains=2, seed=0)
    tree = res.tree
    ll = tree["log_likelihood"]["task_total"]
    assert ll.dims == ("chain", "draw", "task")
    mu, kappa = tree["posterior"]["mu"], tree["posterior"]["kappa"]
    c, n = pair.dataset["successes"].values, pair.dataset["trials"].values
    for chain, draw in ((0, 0), (1, 49)):
        a = (mu * kappa).isel(chain=chain, draw=draw).values
        b = ((1 - mu) * kappa).isel(chain=chain, draw=draw).values
        expected = stats.betabinom.logpmf(c, n, a[:, None], b[:, None]).sum(axis=0)
        np.testing.assert_allclose(ll.isel(chain=chain, draw=draw).values, expected, rtol=1e-10)


def test_logit_normal_log_likelihood_is_the_integrated_likelihood(pair):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # tiny fit: gates may fail
        res = be.fit(pair, model="logit_normal", draws=20, chains=1, tune=50, seed=0)
    post = res.tree["posterior"]
    ll = res.tree["log_likelihood"]["task_total"]
    c, n = pair.dataset["successes"].values, pair.dataset["trials"].values
    cluster = [int(g[1]) for g in pair.dataset["cluster"].values]
    labels = post["cluster"].values.tolist()
    for draw in (0, 19):
        pt = post.isel(chain=0, draw=draw)
        for j in (0, 7, 13):
            g = labels.index(f"g{cluster[j]}")
            eta = (
                pt["alpha"].values
                + pt["cluster_effect"].values[g]
                + pt["cluster_system_effect"].values[:, g]
            )
            ref = _reference_log_marginal(
                eta, c[:, j], n[:, j], float(pt["sigma_task"]), float(pt["sigma_task_system"])
            )
            ref += stats.binom.logpmf(c[:, j], n[:, j], 0.5).sum() - n[:, j].sum() * np.log(0.5)
            # the adaptive rule for tasks with more than two trials is good to ~5e-4 here
            assert float(ll.isel(chain=0, draw=draw, task=j)) == pytest.approx(ref, abs=1e-3)


def test_groups_arviz_uses(pair):
    """observed_data holds each task's total, constant_data the cells; each replicate a new
    task's counts (with these trials) from the draw's population: its mean n E[mu], within
    Monte Carlo error (400 draws of counts with sd at most 2: 5 sd is 0.5; of a task's total
    over two systems, sd at most 2.9: 5 sd is 0.72)."""
    res = be.fit(pair, model="hierarchical", draws=200, chains=2, seed=1)
    tree = res.tree
    assert set(tree["constant_data"].data_vars) == {
        "successes",
        "trials",
        "attempts",
        "status_counts",
    }
    assert set(tree["observed_data"].data_vars) == {"task_total"}
    totals = pair.dataset["successes"].sum("system").values
    np.testing.assert_array_equal(tree["observed_data"]["task_total"].values, totals)
    assert "p" not in tree["posterior"].data_vars and "p" in tree["task_rates"].data_vars
    cells = _groups.replicated_cells(tree, 0)["successes"]
    trials = pair.dataset["trials"].transpose("system", "task").values
    assert cells.shape == (400, 2, 30)
    assert (cells <= trials).all() and (cells >= 0).all()
    mu = tree["posterior"]["mu"].mean(["chain", "draw"]).transpose("system").values
    expected = mu[:, None] * trials
    assert float(abs(cells.mean(axis=0) - expected).max()) < 0.5
    rep = tree["posterior_predictive"]["task_total"]
    assert rep.dims == ("chain", "draw", "task")
    assert rep["draw"].equals(tree["posterior"]["draw"])
    assert (rep <= trials.sum(axis=0)).all() and (rep >= 0).all()
    gap = rep.mean(["chain", "draw"]).values - expected.sum(axis=0)
    assert float(abs(gap).max()) < 0.72
    loo = arviz_stats.loo(tree)
    assert np.isfinite(loo.elpd) and loo.n_data_points == 30
    assert tree.attrs["inference_library"] == "bayeval" and "created_at" in tree.attrs


def test_replicated_single_trials_are_bernoulli_draws_of_new_tasks():
    """One trial a cell takes the uniform route: counts 0 or 1, and each cell's replicated
    mean is its population's mean rate E[mu], not the task's own rate, within Monte Carlo
    error (1,000 draws: sd at most 0.016; the bound is 5 sd)."""
    rng = np.random.default_rng(8)
    p = stats.beta(0.6, 0.5).rvs(30, random_state=rng)
    c = rng.binomial(1, np.stack([p, np.clip(p + 0.1, 0, 1)]))
    data = be.from_counts(c, trials=1, systems=["A", "B"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # one trial a task
        res = be.fit(data, model="hierarchical", draws=500, chains=2, seed=3, task_draws=True)
    rep = _groups.replicated_cells(res.tree, 0)["successes"]
    assert set(np.unique(rep)) <= {0, 1}
    mu = res.tree["posterior"]["mu"].mean(["chain", "draw"]).transpose("system").values
    gap = rep.mean(axis=0) - mu[:, None]
    assert float(abs(gap).max()) < 5 * 0.5 / np.sqrt(1000)
    # the tasks' own rates are far from their population's mean: the check can fail
    own = res.tree["task_rates"]["p"].mean(["chain", "draw"]).transpose("system", "task").values
    assert float(abs(rep.mean(axis=0) - own).max()) > 0.2


def test_log_likelihood_on_demand_and_where_undefined(pair):
    res = be.fit(pair, model="hierarchical", draws=50, chains=1, seed=0, log_likelihood=False)
    assert "log_likelihood" not in res.tree.children
    assert "log_likelihood" in res.with_log_likelihood().tree.children
    from bayeval.testing import fake_data

    bounds = fake_data(missing="bounds")
    with pytest.raises(ValueError, match="not defined under missing='bounds'"):
        be.fit(bounds, model="hierarchical", draws=50, chains=1, seed=0).log_likelihood()
    with pytest.raises(ValueError, match="log_likelihood must be"):
        be.fit(pair, model="hierarchical", log_likelihood="yes")


def test_summary_and_compare_carry_mcse_and_ess(pair):
    """The grid engine's draws are independent: ESS near the number of draws and MCSE near
    sd / sqrt(draws) (the closed form for independent draws)."""
    res = be.fit(pair, model="hierarchical", draws=1000, chains=4, seed=2)
    table = res.summary()
    assert {"mcse_mean", "ess_bulk"} <= set(table.columns)
    population = table[table["estimand"] == "population"]
    assert ((population["ess_bulk"] > 3000) & (population["ess_bulk"] < 5500)).all()
    np.testing.assert_allclose(population["mcse_mean"], population["sd"] / np.sqrt(4000), rtol=0.2)
    cmp = res.compare("B", "A")
    assert 3000 < float(cmp["effect_ess"]) < 5500
    assert float(cmp["effect_mcse"]) == pytest.approx(float(cmp["effect"].std()) / 63.2, rel=0.2)


def test_log_likelihood_beside_the_diagnostics_equals_it_on_demand(pair):
    """fit computes the group on a thread beside the diagnostics, in blocks of draws over
    numba's threads: the same numbers as computed alone afterwards, on one thread."""
    import numba

    from bayeval.models.kernels import likelihood

    assert 2 * 130 > 2 * likelihood.LOGLIK_BLOCK  # several blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # tiny fits: gates may fail
        res = be.fit(pair, model="logit_normal", draws=130, chains=2, tune=50, seed=3)
        alone = be.fit(
            pair, model="logit_normal", draws=130, chains=2, tune=50, seed=3, log_likelihood=False
        )
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        later = alone.with_log_likelihood().tree["log_likelihood"]["task_total"]
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(res.tree["log_likelihood"]["task_total"].values, later.values)


def test_the_group_is_the_models_likelihood_plus_the_binomial_coefficients(pair, monkeypatch):
    """The group asks the model for each task's likelihood and adds log C(n, c) over the
    systems; a model without one (None) has no group."""
    from scipy import special

    from bayeval.models import _groups
    from bayeval.models.base import Patterns
    from bayeval.testing import fake_results

    tree = fake_results(pair, model="hierarchical", draws=20, chains=1, log_likelihood=False).tree
    rates = type(get_model("hierarchical"))
    every = np.arange(30)  # each task its own pattern
    monkeypatch.setattr(
        rates,
        "pattern_log_likelihood",
        lambda self, t, c, n: Patterns(np.zeros((20, 30)), every, every),
    )
    c, n = pair.dataset["successes"].values, pair.dataset["trials"].values
    expected = np.log(special.comb(n, c)).sum(axis=0)
    ll = _groups.log_likelihood(tree)["task_total"]
    np.testing.assert_allclose(ll.isel(chain=0).values, np.broadcast_to(expected, (20, 30)))
    monkeypatch.setattr(rates, "pattern_log_likelihood", lambda self, t, c, n: None)
    assert _groups.log_likelihood(tree) is None


def _repeating_counts(rng, systems, tasks, most=5):
    """Counts whose (trials, successes) columns repeat, so patterns hold several tasks."""
    n = rng.integers(1, most + 1, size=(systems, tasks))
    return rng.binomial(n, rng.beta(0.6, 0.5, size=tasks)), n


def test_log_likelihood_by_pattern_is_the_per_task_computation():
    """Hierarchical, three systems, two strata: each task's value from its own counts (SciPy's
    beta-binomial, summed over systems) equals its pattern's, and the patterns are exactly the
    distinct (stratum, every system's counts) columns, counted by hand."""
    rng = np.random.default_rng(11)
    c, n = _repeating_counts(rng, 3, 240, most=2)
    strata = [j % 2 for j in range(240)]
    data = be.from_counts(c, trials=n, strata=strata)
    res = be.fit(data, model="hierarchical", draws=20, chains=2, seed=0)
    by_pattern = res.log_likelihood(by="pattern")
    stored = res.tree["log_likelihood"]["task_total"]
    expanded = by_pattern["task_total"].isel(pattern=by_pattern["task_pattern"])
    np.testing.assert_array_equal(expanded.values, stored.values)
    # the patterns: distinct columns of (stratum, counts), each task in the one it matches
    columns = [(strata[j], *c[:, j], *n[:, j]) for j in range(240)]
    mult = by_pattern["multiplicity"].values
    assert by_pattern.sizes["pattern"] == len(set(columns)) < 240
    task_pattern = by_pattern["task_pattern"].values
    for j in range(240):
        same = [k for k in range(240) if columns[k] == columns[j]]
        assert mult[task_pattern[j]] == len(same)
        assert set(task_pattern[same]) == {task_pattern[j]}
    mu, kappa = res.tree["posterior"]["mu"], res.tree["posterior"]["kappa"]
    for chain, draw in ((0, 3), (1, 19)):
        a = (mu * kappa).isel(chain=chain, draw=draw).values[:, strata]  # (system, task)
        b = ((1 - mu) * kappa).isel(chain=chain, draw=draw).values[:, strata]
        direct = stats.betabinom.logpmf(c, n, a, b).sum(axis=0)
        np.testing.assert_allclose(expanded.isel(chain=chain, draw=draw).values, direct, rtol=1e-10)


def test_logit_normal_patterns_share_cluster_and_counts():
    """logit_normal's tasks share a value where they share a cluster and every system's
    counts (a fake posterior: the numbers are checked against the integral above)."""
    from bayeval.testing import fake_results

    rng = np.random.default_rng(12)
    c, n = _repeating_counts(rng, 2, 150, most=2)
    clusters = [f"g{j % 3}" for j in range(150)]
    data = be.from_counts(c, trials=n, clusters=clusters)
    res = fake_results(data, model="logit_normal", draws=10, seed=1, log_likelihood=True)
    by_pattern = res.log_likelihood(by="pattern")
    expanded = by_pattern["task_total"].isel(pattern=by_pattern["task_pattern"])
    np.testing.assert_array_equal(expanded.values, res.tree["log_likelihood"]["task_total"].values)
    columns = {(clusters[j], *c[:, j], *n[:, j]) for j in range(150)}
    assert by_pattern.sizes["pattern"] == len(columns)
    assert int(by_pattern["multiplicity"].sum()) == 150


def test_log_likelihood_left_to_on_demand_says_why(pair, monkeypatch):
    """Above the stored size the group is left out with a note; computed on demand it is the
    group a fit stores when asked for, number for number, and adding it drops the note."""
    from bayeval.models import _groups

    asked = be.fit(pair, model="hierarchical", draws=40, chains=2, seed=5, log_likelihood=True)
    monkeypatch.setattr(_groups, "LOG_LIKELIHOOD_LIMIT", 40 * 2 * 30 - 1)
    res = be.fit(pair, model="hierarchical", draws=40, chains=2, seed=5)
    assert "log_likelihood" not in res.tree.children
    assert "2,400 numbers" in res.tree.attrs["log_likelihood_note"]
    expected = asked.tree["log_likelihood"]["task_total"]
    assert res.log_likelihood()["task_total"].identical(expected)
    added = res.with_log_likelihood().tree
    assert added["log_likelihood"]["task_total"].identical(expected)
    assert "log_likelihood_note" not in added.attrs
    off = be.fit(pair, model="hierarchical", draws=40, chains=2, seed=5, log_likelihood=False)
    assert "log_likelihood=False" in off.tree.attrs["log_likelihood_note"]
    with pytest.raises(ValueError, match="by must be one of"):
        res.log_likelihood(by="system")


def test_default_fit_of_many_tasks_holds_no_draws_by_tasks_array():
    """200,000 tasks of 1 to 10 trials: no stored array has both a draw and a task dim, and
    none is larger than a few numbers per task; by pattern the log-likelihood is 65 columns
    (one per (trials, successes)), equal to SciPy's beta-binomial for a few tasks."""
    rng = np.random.default_rng(13)
    tasks = 200_000
    n = rng.integers(1, 11, size=tasks)
    c = rng.binomial(n, rng.beta(0.5, 0.4, size=tasks))
    res = be.fit(be.from_counts(c, trials=n), seed=0, draws=100, chains=2)
    assert res.tree.attrs["model"] == "hierarchical"
    for node in res.tree.subtree:
        for name, var in node.to_dataset(inherit=False).variables.items():
            assert not {"draw", "task"} <= set(var.dims), (node.path, name)
            assert var.nbytes <= 8 * 8 * tasks, (node.path, name, var.nbytes)
    assert "not stored" in res.tree.attrs["log_likelihood_note"]
    by_pattern = res.log_likelihood(by="pattern")
    assert by_pattern.sizes["pattern"] == 65
    mu, kappa = (res.tree["posterior"][v].isel(chain=1, draw=7).item() for v in ("mu", "kappa"))
    some = rng.choice(tasks, size=50, replace=False)
    values = by_pattern["task_total"].isel(chain=1, draw=7).values
    direct = stats.betabinom.logpmf(c[some], n[some], mu * kappa, (1 - mu) * kappa)
    np.testing.assert_allclose(values[by_pattern["task_pattern"].values[some]], direct, rtol=1e-10)


def test_replicates_left_out_above_the_limit_say_why(pair, monkeypatch):
    from bayeval.models import _groups
    from bayeval.testing import fake_results

    monkeypatch.setattr(_groups, "REPLICATE_LIMIT", 20 * 30 - 1)  # chain x draw x task
    res = fake_results(pair, model="hierarchical", draws=20, chains=1)
    assert "posterior_predictive" not in res.tree.children
    assert "chain x draw x task is 600 numbers" in res.tree.attrs["posterior_predictive_note"]
    assert "posterior_predictive_stats" in res.tree.children


@pytest.mark.parametrize("model", MODELS)
def test_replicates_drawn_in_blocks_equal_those_drawn_at_once(model):
    """A task's replicate comes from its own generator: one task a block, seven, or all at once
    give the same totals, the fit's own, and the sums over the systems of the cells."""
    if model == "judge":  # the judge-aware model reads judged data
        data = judged_data(seed=6)
    else:
        data = fake_data(clusters=3, scores=model == "zoib", seed=6)
    tree = fake_results(data, model=model, draws=30, seed=2).tree
    S, J = data.dataset.sizes["system"], data.dataset.sizes["task"]
    one, seven, every = (
        _groups.replicated(tree, 11, block_cells=2 * 30 * S * tasks)["task_total"]
        for tasks in (1, 7, J)
    )
    assert one.identical(seven) and one.identical(every)
    cells = _groups.replicated_cells(tree, 11)[one.attrs["total_of"]]
    np.testing.assert_array_equal(one.values.reshape(60, J), cells.sum(axis=1))
    some = _groups.replicated_cells(tree, 11, tasks=[4, 1])[one.attrs["total_of"]]
    np.testing.assert_array_equal(some, cells[:, :, [4, 1]])
    fitted = _groups.replicated(tree, tree.attrs["seed"])["task_total"]
    assert fitted.identical(tree["posterior_predictive"]["task_total"])
    assert not fitted.identical(one)  # another seed, other replicates


def test_replicates_hold_a_block_of_cells_at_a_time():
    """25 systems x 500 tasks x 400 draws is 5,000,000 cells (40 MB as float64); drawn 100,000
    cells a block, the step's traced peak stays under a quarter of that."""
    swebench = be.datasets.load("swebench_verified")
    tree = fake_results(swebench, model="logit_normal", log_likelihood=False).tree
    tracemalloc.start()
    try:
        out = _groups.replicated(tree, 0, block_cells=100_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out["task_total"].shape == (2, 200, 500)
    assert peak < 10 * 2**20, peak
