"""Training runs as a level: from_frame(run=), recipe comparisons over observed or new runs, the
run component of the noise."""

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import bayeval as be
from bayeval.analyses.noise import noise
from bayeval.analyses.runs import run_spread
from bayeval.results import Results
from bayeval.testing import fake_results


def _frame(seed=0, run_sd=0.3, n_tasks=30, n_runs=3, trials=4):
    rng = np.random.default_rng(seed)
    e = rng.normal(0, 1.0, n_tasks)
    rows = []
    for recipe, a in (("A", 0.0), ("B", 0.5)):
        for run in range(n_runs):
            a_run = a + rng.normal(0, run_sd)
            for j in range(n_tasks):
                p = special.expit(a_run + e[j] + rng.normal(0, 0.3))
                rows += [
                    {
                        "recipe": recipe,
                        "seed": run,
                        "task": f"t{j}",
                        "success": int(rng.random() < p),
                    }
                    for _ in range(trials)
                ]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def paired_runs():
    data = be.from_frame(_frame(), system="recipe", run="seed")
    res = fake_results(data, model="logit_normal", draws=300, chains=2, seed=2)
    return data, res


def test_runs_become_checkpoints_with_recipe_and_run_coordinates():
    df = _frame(n_tasks=3, n_runs=2, trials=1)
    before = df.copy()
    data = be.from_frame(df, system="recipe", run="seed")
    pd.testing.assert_frame_equal(df, before)
    assert data.systems == ["A/0", "A/1", "B/0", "B/1"]
    assert data.dataset["recipe"].values.tolist() == ["A", "A", "B", "B"]
    assert data.dataset["run"].values.tolist() == [0, 1, 0, 1]
    one = df[(df.recipe == "A") & (df.seed == 1)]
    assert (
        data.dataset["successes"].sel(system="A/1").values.tolist()
        == one.groupby("task")["success"].sum().loc[list(data.tasks)].tolist()
    )


def test_run_column_refusals():
    df = _frame(n_tasks=2, n_runs=2, trials=1)
    with pytest.raises(TypeError, match="run= needs system="):
        be.from_frame(df.drop(columns="recipe"), system=None, system_name="x", run="seed")
    with pytest.raises(ValueError, match="'seeds'"):
        be.from_frame(df, system="recipe", run="seeds")
    gap = df.astype({"seed": object})
    gap.loc[3, "seed"] = None
    with pytest.raises(ValueError, match="seed"):
        be.from_frame(gap, system="recipe", run="seed")
    clash = pd.DataFrame(
        {"recipe": ["a/b", "a"], "seed": ["c", "b/c"], "task": ["t", "t"], "success": [1, 0]}
    )
    with pytest.raises(ValueError, match="same checkpoint label 'a/b/c'"):
        be.from_frame(clash, system="recipe", run="seed")


def test_observed_runs_average_the_checkpoints_and_round_trip(tmp_path):
    data = be.from_frame(_frame(n_tasks=12), system="recipe", run="seed")
    res = fake_results(data, model="hierarchical", draws=200, chains=2, seed=0)
    out = res.compare("B", "A", runs="observed")
    draws = res.pass_at_k()
    by_hand = draws.sel(system=["B/0", "B/1", "B/2"]).mean("system") - draws.sel(
        system=["A/0", "A/1", "A/2"]
    ).mean("system")
    np.testing.assert_allclose(out["effect"].values, by_hand.values, rtol=1e-12)
    assert out.attrs["runs"] == "observed" and len(out.attrs["checkpoints"]) == 6
    tasks = res.compare("B", "A", runs="observed", estimand="tasks")
    assert tasks.attrs["n_shared_tasks"] == 12
    path = tmp_path / "runs.nc"
    res.to_netcdf(path)
    again = be.load(path)
    assert again.tree["constant_data"]["recipe"].values.tolist() == ["A"] * 3 + ["B"] * 3
    np.testing.assert_array_equal(
        again.compare("B", "A", runs="observed")["effect"].values, out["effect"].values
    )
    with pytest.raises(ValueError, match="runs='new' needs the logit_normal model"):
        res.compare("B", "A", runs="new")
    with pytest.raises(ValueError, match="'C' is not a recipe"):
        res.compare("C", "A", runs="observed")
    plain = fake_results(
        be.from_counts([[1, 2], [2, 1]], trials=3, systems=["A", "B"]),
        model="hierarchical",
        draws=50,
        chains=2,
        seed=0,
    )
    with pytest.raises(ValueError, match="read the data with from_frame"):
        plain.compare("B", "A", runs="observed")


def test_new_runs_are_wider_than_these_checkpoints(paired_runs):
    _, res = paired_runs
    assert "sigma_run" in res.tree["posterior"]
    new = res.compare("B", "A", runs="new")
    observed = res.compare("B", "A", runs="observed")
    width = {
        name: float(np.diff(o["effect_interval"].values)[0])
        for name, o in (("new", new), ("observed", observed))
    }
    assert width["new"] > 1.3 * width["observed"]
    with pytest.raises(ValueError, match="estimand='population'"):
        res.compare("B", "A", runs="new", estimand="tasks")


def test_new_run_value_against_importance_sampling(paired_runs):
    """A new run of recipe A by an independent route, per draw: the recipe mean from the prior
    N(0, 2.5) reweighted by the runs' intercepts (self-normalised importance sampling), a new
    run and a new task by Monte Carlo. Each draw of ours takes one recipe mean, so the two
    agree on average over draws."""
    _, res = paired_runs
    value = res._model.new_run_population(res.tree, "pass@k", np.array([1]))
    post = res.tree["posterior"].to_dataset().stack(sample=("chain", "draw"))
    rng = np.random.default_rng(0)
    alpha = post["alpha"].sel(system=["A/0", "A/1", "A/2"]).transpose("sample", "system").values
    sigma = post["sigma_run"].values
    spread = np.sqrt(post["sigma_task"].values ** 2 + post["sigma_task_system"].values ** 2)
    reference = []
    for d in range(len(sigma)):
        beta = rng.normal(0, 2.5, 20_000)
        log_w = stats.norm.logpdf(alpha[d][None, :], beta[:, None], sigma[d]).sum(1)
        w = np.exp(log_w - log_w.max())
        new = beta + np.hypot(sigma[d], spread[d]) * rng.standard_normal(beta.size)
        reference.append((w * special.expit(new)).sum() / w.sum())
    ours = value.sel(system="A", k=1).stack(sample=("chain", "draw")).values
    assert ours.mean() == pytest.approx(np.mean(reference), abs=0.01)
    assert ours.std() > 0.95 * np.std(reference)  # plus the spread of one beta per draw


def test_run_component_of_the_noise(paired_runs):
    data, res = paired_runs
    post = res.noise(n_draws=100)
    assert post["run_var"].dims == ("recipe",) and (post["run_var"] > 0).all()
    mom = noise(data, n_boot=100)
    r = (data.dataset["successes"] / data.dataset["trials"]).values
    s2 = r * (1 - r) * 4 / 3  # unbiased per-task trial variance, 4 trials
    for recipe in ("A", "B"):
        rows = data.dataset["recipe"].values == recipe
        scores = r[rows].mean(1)
        expected = max(scores.var(ddof=1) - (s2[rows].sum(1) / 4 / r.shape[1] ** 2).mean(), 0)
        assert mom["run_var"].sel(recipe=recipe).item() == pytest.approx(expected, rel=1e-10)
    # with no run spread, the method of moments finds next to none
    flat = be.from_frame(_frame(run_sd=0.0, n_tasks=200, seed=5), system="recipe", run="seed")
    none = noise(flat, n_boot=100)
    assert (none["run_var"] < 2e-4).all()


def test_run_spread_is_the_mean_and_quantiles_of_the_draws(paired_runs):
    """The mean and equal-tailed interval of sigma_run over chains and draws, on a hand-made
    set of draws: 0.01, 0.02, ..., 6.00 in two chains (mean 3.005; the 90% interval's
    bounds at the 5% and 95% points, by linear interpolation between order statistics)."""
    _, res = paired_runs
    tree = res.tree
    values = (np.arange(1, 601) / 100).reshape(2, 300)
    post = tree["posterior"].to_dataset(inherit=False)
    tree["posterior"] = post.assign(sigma_run=(("chain", "draw"), values))
    out = run_spread(Results(tree), ci_prob=0.9)
    flat = sorted(values.ravel().tolist())
    position = [0.05 * (len(flat) - 1), 0.95 * (len(flat) - 1)]
    expected = [flat[int(p)] + (p - int(p)) * (flat[int(p) + 1] - flat[int(p)]) for p in position]
    assert out["sigma_run_mean"].dims == ()
    assert out["sigma_run_mean"].item() == pytest.approx(sum(flat) / len(flat), rel=1e-14)
    assert out["sigma_run_interval"].values.tolist() == pytest.approx(expected, rel=1e-12)
    assert out["sigma_run_interval"]["ci_bound"].values.tolist() == ["lower", "upper"]
    assert out.attrs["ci_prob"] == 0.9 and out.attrs["scale"] == "logit"
    plain = fake_results(model="hierarchical", draws=20, chains=1)
    with pytest.raises(ValueError, match="run level"):
        run_spread(plain)
