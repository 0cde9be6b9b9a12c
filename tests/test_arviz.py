"""A fit's tree as ArviZ reads it, whole: every ArviZ call the README names, on every model.

Fake posteriors (bayeval.testing) stand for each model kind's fit; the groups line up (the
replicates on the posterior's draws, the observed totals on the log-likelihood's tasks); LOO-PIT
is uniform on data simulated from the model; files of the first layout read into today's.
"""

import pathlib
import warnings

import arviz_plots as azp
import arviz_stats
import h5py
import matplotlib
import numpy as np
import pytest
import xarray as xr
from scipy import special, stats

import bayeval as be
from bayeval.models import _groups
from bayeval.testing import MODELS, fake_data, fake_results
from tests.helpers import judged_data

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "results"


@pytest.fixture(scope="module", params=MODELS)
def tree(request):
    if request.param == "judge":  # the judge-aware model reads judged data
        data = judged_data(seed=2)
    else:
        data = fake_data(clusters=3, scores=request.param == "zoib", seed=2)
    return fake_results(data, model=request.param, draws=100, log_likelihood=True).tree


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_the_groups_line_up(tree):
    """Replicates on the posterior's own chains and draws; observed_data, posterior_predictive
    and log_likelihood hold one variable, task_total, over the same tasks (ArviZ pairs them by
    name and takes every observed variable); the cells in constant_data, which it sums."""
    post, pred = tree["posterior"], tree["posterior_predictive"]
    if tree.attrs["model"] == "judge":  # its likelihood sums out unlabelled true outcomes per
        # cell: no pointwise log-likelihood of task totals, so no log_likelihood group
        assert "log_likelihood" not in tree.children
        loglik = pred
    else:
        loglik = tree["log_likelihood"]
    obs = tree["observed_data"]
    for name in ("chain", "draw"):
        assert pred[name].equals(post[name]) and loglik[name].equals(post[name])
    for group in (obs, pred, loglik):
        assert list(group.data_vars) == ["task_total"]
    assert obs["task_total"].dims == ("task",)
    assert pred["task_total"].dims == loglik["task_total"].dims == ("chain", "draw", "task")
    for group in (pred, loglik):
        assert obs["task"].values.tolist() == group["task"].values.tolist()
    constant = tree["constant_data"]
    first = obs["task_total"].attrs["total_of"]
    assert first == ("score_sum" if "score_sum" in constant else "successes")
    np.testing.assert_allclose(obs["task_total"], constant[first].sum("system"))
    assert {"successes", "trials", "attempts", "status_counts"} <= set(constant.data_vars)
    if "posterior_predictive_stats" in tree.children:  # new tasks' statistics: a population
        assert "population" in tree.attrs["estimands"]
    assert not {"count_histogram", "extreme_share"} & set(pred.data_vars)


def test_every_arviz_call_the_readme_names(tree):
    """loo, compare, loo_pit, plot_ppc_dist, plot_loo_pit, plot_trace_dist, and plot_trace
    on the hyperparameters, each as the README writes it (no var_names but plot_trace's)."""
    judged = tree.attrs["model"] == "judge"  # no log_likelihood group (above): no loo
    azp.plot_ppc_dist(tree)
    azp.plot_trace_dist(tree)
    if tree.attrs["model"] != "beta_binomial":  # its posterior is the task rates alone
        azp.plot_trace(tree, var_names=["~_effect"], filter_vars="like")
    if judged:
        return
    loo = arviz_stats.loo(tree)
    assert loo.n_data_points == tree["observed_data"].sizes["task"] and np.isfinite(loo.elpd)
    table = arviz_stats.compare({"one": tree, "same": tree})
    assert table["elpd_diff"].tolist() == [0.0, 0.0]
    azp.plot_loo_pit(tree)
    pit = arviz_stats.loo_pit(tree)
    assert list(pit.data_vars) == ["task_total"]
    assert pit["task_total"].dims == ("task",)
    assert ((pit["task_total"] >= 0) & (pit["task_total"] <= 1)).all()


def test_the_logit_normal_pair_of_the_readme_fits_in_a_trace():
    """The 500-task SWE-bench pair's 42 posterior elements exceed plot_trace's 40 panels; the
    hyperparameters (the README's var_names) do not."""
    swebench = be.datasets.load("swebench_verified")
    pair = swebench.sel(
        system=[
            "20251124_mini-v1.16.0_claude-opus-4-5-20251101",
            "20251120_mini-v1.15.0_gpt-5.1-2025-11-13",
        ]
    )
    tree = fake_results(pair, model="logit_normal", draws=50).tree
    with pytest.raises(ValueError, match="subplots"):
        azp.plot_trace(tree)
    azp.plot_trace(tree, var_names=["~_effect"], filter_vars="like")


def test_a_fit_of_swebench_size_has_replicates_arviz_reads():
    """25 systems x 500 tasks (SWE-bench Verified) x 400 draws: 5,000,000 replicated cells,
    drawn a block at a time and stored as 200,000 task totals; loo_pit and plot_ppc_dist run."""
    swebench = be.datasets.load("swebench_verified")
    tree = fake_results(swebench, model="logit_normal", log_likelihood=True).tree
    assert "posterior_predictive_note" not in tree.attrs
    assert tree["posterior_predictive"]["task_total"].shape == (2, 200, 500)
    pit = arviz_stats.loo_pit(tree)
    assert ((pit["task_total"] >= 0) & (pit["task_total"] <= 1)).all()
    azp.plot_ppc_dist(tree)


def test_replicates_keep_every_draw_where_the_statistics_are_thinned():
    """logit_normal's predictive statistics take a thousand draws at most; the replicates take
    every posterior draw, so LOO-PIT weighs each by its own likelihood."""
    tree = fake_results(model="logit_normal", draws=1000, chains=4, log_likelihood=True).tree
    assert tree["posterior_predictive_stats"].sizes["draw"] == 250
    assert tree["posterior_predictive"]["draw"].equals(tree["posterior"]["draw"])
    azp.plot_loo_pit(tree)


def test_beta_binomial_log_likelihood_is_the_binomial_given_the_rates():
    """Each task's rates are its own parameters: the group is SciPy's binomial log-pmf at the
    rates' draws, summed over the systems, and the replicates are binomial at those rates
    (each cell's mean n E[p], each task's total the sum over its systems; 5 sd of Monte Carlo
    error)."""
    data = fake_data(trials=6, seed=4)
    tree = fake_results(data, model="beta_binomial", draws=400, seed=1).tree
    c, n = data.dataset["successes"].values, data.dataset["trials"].values
    p = tree["posterior"]["p"].transpose("chain", "draw", "system", "task").values
    expected = stats.binom.logpmf(c, n, p).sum(axis=2)
    np.testing.assert_allclose(tree["log_likelihood"]["task_total"].values, expected, rtol=1e-10)
    cells = _groups.replicated_cells(tree, 0)["successes"]
    mean = n * p.mean(axis=(0, 1))
    np.testing.assert_allclose(cells.mean(axis=0), mean, atol=5 * np.sqrt(6 / 4 / 800))
    rep = tree["posterior_predictive"]["task_total"].mean(["chain", "draw"]).values
    S = n.shape[0]
    np.testing.assert_allclose(rep, mean.sum(axis=0), atol=5 * np.sqrt(S * 6 / 4 / 800))


def _zoib_data():
    """Two systems, five tasks, four graded attempts each: zeros, ones and interior scores."""
    rng = np.random.default_rng(7)
    rows = []
    for system in ("A", "B"):
        for task in range(5):
            for attempt in range(4):
                kind = rng.integers(3)
                score = [0.0, 1.0, float(rng.uniform(0.05, 0.95))][kind]
                rows.append((system, f"t{task}", attempt, score))
    import pandas as pd

    df = pd.DataFrame(rows, columns=["system", "task", "trial", "score"])
    return be.from_frame(df, trial="trial", score="score"), df


def test_zoib_log_likelihood_is_each_attempts_density_given_the_effects():
    """Per attempt: P(0) = zoi (1 - coi), P(1) = zoi coi, an interior score (1 - zoi) times
    SciPy's Beta density at mu phi, (1 - mu) phi; the cell's multinomial coefficient of its
    counts at 0, 1 and between; summed over the task's attempts in every system."""
    data, df = _zoib_data()
    tree = fake_results(data, model="zoib", draws=20, seed=3).tree
    post = tree["posterior"]
    loglik = tree["log_likelihood"]["task_total"]
    systems = ["A", "B"]
    for chain, draw in ((0, 0), (1, 19)):
        pt = post.isel(chain=chain, draw=draw)
        for j in (0, 3):
            expected = 0.0
            for s, system in enumerate(systems):
                eta = float(pt["alpha"][s] + pt["task_effect"][j] + pt["task_system_effect"][s, j])
                zoi = special.expit(float(pt["gamma"][s] + pt["zoi_task_effect"][j]))
                coi = special.expit(eta)
                mu = special.expit(eta + float(pt["delta"][s]))
                phi = float(pt["phi"][s])
                scores = df[(df["system"] == system) & (df["task"] == f"t{j}")]["score"].values
                for y in scores:
                    if y == 0:
                        expected += np.log(zoi * (1 - coi))
                    elif y == 1:
                        expected += np.log(zoi * coi)
                    else:
                        expected += np.log(1 - zoi) + stats.beta.logpdf(y, mu * phi, (1 - mu) * phi)
                counts = [
                    np.sum(scores == 0),
                    np.sum(scores == 1),
                    np.sum((scores > 0) & (scores < 1)),
                ]
                expected += special.gammaln(len(scores) + 1) - sum(
                    special.gammaln(k + 1) for k in counts
                )
            got = float(loglik.isel(chain=chain, draw=draw, task=j))
            assert got == pytest.approx(expected, rel=1e-9)


def test_zoib_replicates_average_to_the_cells_mean_score():
    """A replicated cell's score sum averages n E[m] over the draws, with m = zoi coi +
    (1 - zoi) mu from the draw's effects; its full-credit count n E[zoi coi]; each task's
    replicated total the sum of its cells' means (5 sd)."""
    data, _ = _zoib_data()
    tree = fake_results(data, model="zoib", draws=2000, chains=2, seed=5).tree
    pt = tree["posterior"]
    eta = pt["alpha"] + pt["task_effect"] + pt["task_system_effect"]
    zoi = special.expit(pt["gamma"] + pt["zoi_task_effect"])
    coi, mu = special.expit(eta), special.expit(eta + pt["delta"])
    cells = _groups.replicated_cells(tree, 0)
    mean = (4 * (zoi * coi + (1 - zoi) * mu)).mean(["chain", "draw"])
    mean = mean.transpose("system", "task").values
    rep = cells["score_sum"].mean(axis=0)
    assert float(abs(rep - mean).max()) < 5 * 2 / np.sqrt(4000)
    ones = (4 * zoi * coi).mean(["chain", "draw"]).transpose("system", "task").values
    assert float(abs(cells["successes"].mean(axis=0) - ones).max()) < 5 * 2 / 63
    total = tree["posterior_predictive"]["task_total"].mean(["chain", "draw"]).values
    assert float(abs(total - mean.sum(axis=0)).max()) < 5 * 2 * np.sqrt(2) / np.sqrt(4000)


@pytest.mark.parametrize("model", ["hierarchical", "beta_binomial"])
def test_loo_pit_is_uniform_on_data_from_the_model(model):
    """Data simulated from the model (a Beta(2, 3) population of task rates, three systems of
    six trials on 300 tasks; for beta_binomial, rates from its Beta(1, 1) prior): the LOO-PIT
    values of task_total pass a Kolmogorov-Smirnov test of uniformity at 0.001. Replicates of
    the tasks' own rates, weighed by the integrated likelihood, are too central and fail it."""
    rng = np.random.default_rng(21)
    a, b = (2.0, 3.0) if model == "hierarchical" else (1.0, 1.0)
    p = rng.beta(a, b, size=(3, 300))
    data = be.from_counts(rng.binomial(6, p), trials=6, systems=["A", "B", "C"])
    res = be.fit(data, model=model, draws=500, chains=2, seed=4)
    pit = arviz_stats.loo_pit(res.tree, random_state=0)["task_total"]
    assert stats.kstest(pit.values, "uniform").pvalue > 0.001
    if model != "hierarchical":
        return
    tree = res.tree  # the format-1 replicates: each task's rates given its own counts
    own = res.task_rates().transpose("chain", "draw", "system", "task")
    counts = rng.binomial(6, own.values).sum(axis=2)
    pred = tree["posterior_predictive"].to_dataset()
    tree["posterior_predictive"] = xr.DataTree(
        pred.assign(task_total=(("chain", "draw", "task"), counts))
    )
    central = arviz_stats.loo_pit(tree, random_state=0)["task_total"]
    assert stats.kstest(central.values, "uniform").pvalue < 1e-6


# -- files --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["v1_hierarchical", "v1_logit_normal"])
def test_a_first_layout_file_reads_into_todays(name):
    """Files written by bayeval before format 2 (fixtures: a grid fit and a fake of
    logit_normal): the data split, the predictive statistics in their group, the
    log-likelihood renamed, each array as the file holds it (read with h5py); the replicates
    drawn again on every draw; and every ArviZ call works."""
    path = FIXTURES / f"{name}.nc"
    with h5py.File(path, "r") as f:
        assert "bayeval_format" not in f.attrs
        raw = {
            key: f[key][()]
            for key in (
                "observed_data/successes",
                "observed_data/trials",
                "observed_data/status_counts",
                "log_likelihood/successes",
                "posterior_predictive/count_histogram",
            )
        }
    res = be.load(path)
    tree = res.tree
    np.testing.assert_array_equal(
        tree["constant_data"]["successes"], raw["observed_data/successes"]
    )
    np.testing.assert_array_equal(
        tree["observed_data"]["task_total"], raw["observed_data/successes"].sum(axis=0)
    )
    np.testing.assert_array_equal(tree["constant_data"]["trials"], raw["observed_data/trials"])
    np.testing.assert_array_equal(
        tree["constant_data"]["status_counts"], raw["observed_data/status_counts"]
    )
    np.testing.assert_array_equal(
        tree["log_likelihood"]["task_total"], raw["log_likelihood/successes"]
    )
    np.testing.assert_array_equal(
        tree["posterior_predictive_stats"]["count_histogram"],
        raw["posterior_predictive/count_histogram"],
    )
    assert set(tree["posterior_predictive"].data_vars) == {"task_total"}
    assert tree["posterior_predictive"]["draw"].equals(tree["posterior"]["draw"])
    assert res.data.dataset["trials"].identical(tree["constant_data"]["trials"])
    arviz_stats.loo(tree)
    azp.plot_ppc_dist(tree)
    azp.plot_loo_pit(tree)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res.pass_at_k(k=1)


def test_files_record_their_format_and_a_later_one_is_refused(tmp_path):
    res = fake_results(draws=20)
    path = tmp_path / "fit.nc"
    res.to_netcdf(path)
    with h5py.File(path, "r+") as f:
        assert f.attrs["bayeval_format"] == "2"
        f.attrs["bayeval_format"] = "3"
    with pytest.raises(ValueError, match="results format '3'"):
        be.load(path)


def test_todays_file_round_trips(tmp_path):
    res = fake_results(fake_data(scores=True), model="zoib", draws=20)
    path = tmp_path / "fit.nc"
    res.to_netcdf(path)
    back = be.load(path)
    assert back.tree.identical(res.tree)
    assert isinstance(back.tree["posterior_predictive"], xr.DataTree)


def test_a_first_layout_tree_in_memory_reads_into_todays():
    """A tree of the first layout (every data variable in observed_data), given to Results,
    is laid out as today's: the cells in constant_data, each task's total in observed_data."""
    res = fake_results(draws=20)
    tree = res.tree
    ds = res.data.dataset
    old = xr.DataTree.from_dict(
        {
            "/": tree.to_dataset(inherit=False),
            "/posterior": tree["posterior"].to_dataset(),
            "/observed_data": ds,
        }
    )
    back = be.Results(old)
    assert list(back.tree["observed_data"].data_vars) == ["task_total"]
    np.testing.assert_array_equal(
        back.tree["observed_data"]["task_total"], ds["successes"].values.sum(axis=0)
    )
    assert back.data.dataset.identical(ds)
    assert back.systems == ds["system"].values.tolist()
