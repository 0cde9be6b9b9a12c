"""bayeval.testing: fake posteriors shaped as real fits (groups, variables, dims, coordinates,
root attributes) for every model and data kind, read by every estimand and analysis, seeded,
and centred on the observed rates."""

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import special

import bayeval as be
from bayeval.results import Results
from bayeval.testing import FAKE_SAMPLER, fake_data, fake_posterior, fake_results

# one real fit per variant (tiny: only its shape is compared): data, model, options of both
VARIANTS = {
    "beta_binomial": (lambda: fake_data(), "beta_binomial", {}),
    "beta_binomial-bounds": (lambda: fake_data(missing="bounds"), "beta_binomial", {}),
    "hierarchical": (lambda: fake_data(), "hierarchical", {}),
    "hierarchical-strata": (lambda: fake_data(strata=2), "hierarchical", {}),
    "hierarchical-bounds": (lambda: fake_data(missing="bounds"), "hierarchical", {}),
    "hierarchical-no-extras": (
        lambda: fake_data(),
        "hierarchical",
        {"task_draws": False, "log_likelihood": False},
    ),
    "hierarchical-binary-scores": (lambda: _binary_scores(), "hierarchical", {}),
    "logit_normal-full-latent": (lambda: fake_data(), "logit_normal", {}),
    "logit_normal-collapsed": (lambda: fake_data(trials=1), "logit_normal", {}),
    "logit_normal-clusters": (lambda: fake_data(clusters=3), "logit_normal", {}),
    "logit_normal-collapsed-clusters": (
        lambda: fake_data(trials=2, clusters=3),
        "logit_normal",
        {"task_draws": True, "log_likelihood": True},
    ),
    "logit_normal-task-latent": (
        lambda: fake_data(np.full((12, 20), 0.5), trials=1, clusters=2),
        "logit_normal",
        {},
    ),
    "logit_normal-bounds": (lambda: fake_data(missing="bounds"), "logit_normal", {}),
    "logit_normal-runs": (lambda: fake_data(runs=2), "logit_normal", {}),
    "logit_normal-strata-three": (
        lambda: fake_data(systems=["A", "B", "C"], trials=2, strata=2),
        "logit_normal",
        {},
    ),
    "logit_normal-one-system": (lambda: fake_data(systems=["A"]), "logit_normal", {}),
    "zoib": (lambda: fake_data(scores=True), "zoib", {}),
    "zoib-clusters": (lambda: fake_data(scores=True, clusters=3), "zoib", {}),
    "zoib-bounds": (lambda: fake_data(scores=True, missing="bounds"), "zoib", {}),
    "zoib-one-system": (lambda: fake_data(systems=["A"], scores=True), "zoib", {}),
    "fractional": (lambda: fake_data(scores=True, trials=1), "fractional", {}),
    "fractional-clusters": (lambda: fake_data(scores=True, clusters=3), "fractional", {}),
    "fractional-bounds": (lambda: fake_data(scores=True, missing="bounds"), "fractional", {}),
    "judge": (lambda: _judged(), "judge", {}),
}
SCORE_MODELS = ("zoib", "fractional")


def _judged(seed=0, n_task=12, trials=3):
    """Judged attempts of two systems, a third labelled: a judge lenient on B."""
    rng = np.random.default_rng(seed)
    truth = special.expit(rng.normal(0.0, 1.0, (2, n_task)))
    df = fake_data(truth, trials=trials, seed=seed).to_frame()
    df = df.loc[df.index.repeat(df["trials"])].reset_index(drop=True)
    df["human"] = (df.groupby(["system", "task"]).cumcount() < df["successes"]).astype(float)
    lenient = np.where(df["system"] == "B", 0.4, 0.1)
    df["judge"] = np.where(
        df["human"] == 1, rng.random(len(df)) < 0.9, rng.random(len(df)) < lenient
    )
    df["judge"] = df["judge"].astype(int)
    df["human"] = df["human"].where(rng.random(len(df)) < 1 / 3)
    return be.from_frame(
        df[["system", "task", "judge", "human"]], judge="judge", success="human",
        label_design="random",
    )  # fmt: skip


def _binary_scores():
    """Scores that are all 0 or 1 (the binary models read them as successes)."""
    df = fake_data(trials=1).to_frame()
    return be.from_frame(df.assign(score=df["successes"].astype(float)), score="score")


BINARY_METRICS = (("pass@k", [1, 2], None), ("pass^k", 2, None), ("g-pass@k", 2, 0.5))


def _quiet(call, *args, **kwargs):
    """A call with bayeval's warnings (tiny fits' gates, one trial per task) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


@pytest.fixture(scope="module")
def cases():
    """Per variant: the data, model, options and the fake (built once)."""
    out = {}
    for name, (make, model, options) in VARIANTS.items():
        data = make()
        out[name] = (data, model, options, fake_results(data, model=model, seed=3, **options))
    return out


def _shape(tree: xr.DataTree) -> dict:
    """Group -> variable -> (dims, kind, dtype kind) over data variables and coordinates."""
    out = {}
    for node in tree.subtree:
        if node.path == "/":
            continue
        ds = node.to_dataset(inherit=False)
        out[node.path] = {
            str(name): (var.dims, "coord" if name in ds.coords else "var", var.dtype.kind)
            for name, var in ds.variables.items()
        }
    return out


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fake_tree_has_the_shape_of_a_real_fit(cases, variant):
    data, model, options, fake = cases[variant]
    if model in ("logit_normal", "fractional"):  # its fake stores the log-likelihood when asked
        options = {"log_likelihood": False, **options}
    real = _quiet(be.fit, data, model=model, draws=8, chains=2, seed=0, tune=8, **options)
    assert set(fake.tree.children) == set(real.tree.children)
    assert _shape(fake.tree) == _shape(real.tree)
    assert set(fake.tree.attrs) == set(real.tree.attrs)
    for key in ("model", "estimands", "missing_policy", "input_hash", "form", "prior_p"):
        assert fake.tree.attrs.get(key) == real.tree.attrs.get(key), key
    assert fake.tree.attrs["sampler"] == FAKE_SAMPLER != real.tree.attrs["sampler"]
    assert "fake posterior" in fake.tree.attrs["model_choice"]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_metric_and_estimand_draws_with_the_right_dims(cases, variant):
    data, model, _, fake = cases[variant]
    assert isinstance(fake, Results)
    Results(fake.tree)  # the validation accepts a copy of the tree
    bounds = ["missing_bound"] if data.missing == "bounds" else []
    metrics = (("mean", 1, None), ("pass@k", 1, None)) if model in SCORE_MODELS else BINARY_METRICS
    n_sys = len(data.systems)
    for estimand in fake.estimands:
        for metric, k, tau in metrics:
            values = _quiet(fake.draws, metric, k, estimand, tau=tau)
            extra = ["k"] if isinstance(k, list) else []
            assert list(values.dims) == ["chain", "draw", "system", *bounds, *extra]
            assert values.shape[:3] == (2, 200, n_sys)
            assert np.isfinite(values.values).all()
            assert ((values >= 0) & (values <= 1)).all()
        if model not in SCORE_MODELS:
            consistency = _quiet(fake.draws, "consistency", 2, estimand)
            assert list(consistency.dims) == ["chain", "draw", "system", *bounds]
    if model in ("logit_normal", *SCORE_MODELS) and data.has_clusters:
        for weighting in ("task", "cluster"):
            observed = fake.draws(
                metrics[0][0], 1, "population", clusters="observed", weighting=weighting
            )
            assert observed.sizes["system"] == n_sys and np.isfinite(observed.values).all()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_analyses_read_the_fake(cases, variant):
    data, model, _, fake = cases[variant]
    systems = data.systems
    summary = _quiet(fake.summary, metrics=("mean",) if model in SCORE_MODELS else ("pass@k",))
    assert set(summary["system"]) == set(systems)
    assert set(summary["estimand"]) == set(fake.estimands)
    assert np.isfinite(summary["mean"]).all()
    rates = fake.task_rates()
    assert rates.sizes["task"] == data.dataset.sizes["task"]
    if "posterior_predictive_stats" in fake.tree.children:
        assert fake.ppc()["flagged"].sizes["system"] == len(systems)
    if len(systems) < 2:
        return
    estimand = fake.estimands[-1]
    metric = "mean" if model in SCORE_MODELS else "pass@k"
    if model in ("logit_normal", "fractional") and data.missing == "bounds":
        # crossed bounds refit the pair with this fit's sampler: a fake cannot be refitted
        with pytest.raises(ValueError, match="sampler"):
            _quiet(fake.compare, systems[1], systems[0], metric=metric, estimand=estimand)
        return
    effect = _quiet(fake.compare, systems[1], systems[0], metric=metric, estimand=estimand)
    assert np.isfinite(effect["prob_positive"].values).all()
    assert ((effect["prob_positive"] >= 0) & (effect["prob_positive"] <= 1)).all()
    if data.missing == "bounds":
        return
    ranks = _quiet(fake.ranks, metric=metric, estimand=estimand)
    assert ranks.sizes["system"] == len(systems)


@pytest.mark.parametrize("variant", ["hierarchical-bounds", "logit_normal-clusters"])
def test_netcdf_round_trip(cases, variant, tmp_path):
    fake = cases[variant][3]
    path = tmp_path / "fake.nc"
    fake.to_netcdf(path)
    loaded = be.load(path)
    assert loaded.tree.identical(fake.tree)
    assert loaded.tree.attrs["sampler"] == FAKE_SAMPLER
    assert np.allclose(
        loaded.draws("pass@k", 1, "tasks").values, fake.draws("pass@k", 1, "tasks").values
    )


def _without_time(tree):
    tree = tree.copy()
    tree.attrs = {k: v for k, v in tree.attrs.items() if k != "created_at"}
    return tree


@pytest.mark.parametrize("model", ["beta_binomial", "hierarchical", "logit_normal", "zoib"])
def test_the_seed_decides_every_draw(model):
    data = fake_data(scores=model == "zoib", clusters=2)
    first = fake_results(data, model=model, seed=11, draws=40)
    again = fake_results(data, model=model, seed=11, draws=40)
    other = fake_results(data, model=model, seed=12, draws=40)
    assert _without_time(first.tree).identical(_without_time(again.tree))
    name = "p" if model == "beta_binomial" else "alpha" if model != "hierarchical" else "mu"
    assert not np.array_equal(
        first.tree["posterior"][name].values, other.tree["posterior"][name].values
    )
    assert first.tree.attrs["seed"] == 11


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("beta_binomial", {}),
        ("hierarchical", {}),
        ("hierarchical", {"clusters": 4}),
        ("logit_normal", {}),
        ("logit_normal", {"clusters": 4}),
        ("zoib", {"scores": True}),
    ],
)
def test_tasks_estimand_is_centred_on_the_observed_rates(model, kind):
    rng = np.random.default_rng(5)
    truth = special.expit(np.array([[-0.6], [0.7]]) + rng.normal(0.0, 1.3, 80))
    data = fake_data(truth, trials=10, seed=5, **kind)
    ds = data.dataset
    score = ds["score_sum"] if data.has_scores else ds["successes"]
    observed = (score / ds["trials"]).mean("task")
    draws = fake_results(data, model=model, seed=2).draws("pass@k", 1, "tasks")
    z = (draws.mean(("chain", "draw")) - observed) / draws.std(("chain", "draw"))
    assert (np.abs(z) < 3).all(), z.values
    # the observed rates are near the simulated truth; the fake tells the two systems apart
    assert np.allclose(observed, truth.mean(axis=1), atol=0.1)
    assert float((draws.sel(system="B") > draws.sel(system="A")).mean()) > 0.95


def test_the_judge_fake_reads_its_labels():
    data = _judged(seed=4, n_task=60)
    out = fake_results(data, model="judge", seed=1).judge()
    ds = data.dataset.sum(("task", "label_stratum")).isel(judge=0)
    for name, hit, miss in (
        ("sensitivity", "judge_n11", "judge_n01"),
        ("specificity", "judge_n00", "judge_n10"),
    ):
        a, b = ds[hit] + 1.0, ds[miss] + 1.0  # the Beta posterior under a uniform prior
        mean, sd = a / (a + b), np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        z = (out[f"{name}_mean"].isel(judge=0) - mean) / sd
        assert (np.abs(z) < 0.5).all(), (name, z.values)


def test_population_estimand_follows_the_population():
    # U-shaped tasks: most solved always or never; the population's pass@1 is their mean
    rng = np.random.default_rng(8)
    truth = rng.beta(0.4, 0.3, (1, 150))
    data = fake_data(truth, trials=8, seed=8)
    observed = float((data.dataset["successes"] / 8).mean())
    for model in ("hierarchical", "logit_normal"):
        population = fake_results(data, model=model).draws("pass@k", 1, "population")
        assert abs(float(population.mean()) - observed) < 3 * float(population.std()), model


def test_defaults_and_the_default_data():
    res = fake_results()
    assert res.model == "hierarchical" and res.systems == ["A", "B"]
    assert res.tree["posterior"].sizes == {"chain": 2, "draw": 200, "system": 2}
    assert fake_results(model="zoib").data.has_partial_credit
    truth = np.array([[0.1, 0.9, 0.5]])
    assert fake_results(truth=truth, seed=1).data.dataset.sizes["task"] == 3
    post = fake_posterior(model="beta_binomial", draws=10, chains=1)
    assert type(post).__name__ == "Posterior" and post.estimands == ("tasks",)


def test_fake_data_kinds():
    data = fake_data(systems=["x", "y", "z"], trials=3, clusters=2, strata=["a", "b"] * 6)
    assert data.systems == ["x", "y", "z"] and data.has_clusters and data.has_strata
    assert int(data.dataset["trials"].max()) == 3
    runs = fake_data(runs=3)
    assert runs.dataset["recipe"].values.tolist() == ["A"] * 3 + ["B"] * 3
    bounds = fake_data(missing="bounds", scores=True)
    assert bounds.missing == "bounds" and bounds.has_scores
    assert "missing_bound" in bounds.dataset["successes"].dims
    one = fake_data([0.0, 1.0, 1.0], trials=5)
    assert one.dataset["successes"].values.tolist() == [[0, 5, 5]]


def test_refusals():
    data = fake_data()
    with pytest.raises(ValueError, match="model must be one of"):
        fake_results(data, model="auto")
    with pytest.raises(ValueError, match="not both"):
        fake_results(data, truth=[[0.5, 0.5]])
    with pytest.raises(ValueError, match="model='fractional' or 'zoib'"):
        fake_results(fake_data(scores=True), model="hierarchical")
    with pytest.raises(ValueError, match="form= applies"):
        fake_results(data, model="zoib", form="collapsed")
    with pytest.raises(ValueError, match="form must be one of"):
        fake_results(data, model="logit_normal", form="latent")
    with pytest.raises(ValueError, match="task_draws"):
        fake_results(data, task_draws="yes")
    with pytest.raises(TypeError, match="EvalData"):
        fake_results(data.dataset)
    with pytest.raises(ValueError, match="rates in"):
        fake_data([[0.5, 1.5]])
