"""The item response theory model: a real fit recovers known parameters; its readouts."""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import linalg, special, stats

import bayeval as be
from bayeval.errors import BayevalWarning
from bayeval.inference import choose_model
from bayeval.models import get_model
from bayeval.models.irt import (
    Layout,
    anchor_arrays,
    build_irt_model,
    build_linked_model,
    item_draws,
    population_expectation,
    validate_priors,
)
from bayeval.models.kernels import irt as irt_kernel
from bayeval.results import Results
from bayeval.testing import fake_data, fake_results


def simulate(seed, n_system=12, n_item=40, trials=4):
    """Counts of a 2PL with known abilities, difficulties and discriminations."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_system)
    b = rng.normal(0.0, 1.2, n_item)
    a = np.exp(rng.normal(0.0, 0.3, n_item))
    p = special.expit(a * (theta[:, None] - b))
    c = rng.binomial(trials, p)
    data = be.from_counts(c, trials=trials, systems=[f"s{i}" for i in range(n_system)])
    return data, theta, a, b, p


@pytest.fixture(scope="module")
def fitted():
    data, theta, a, b, p = simulate(3)
    with warnings.catch_warnings():  # a short chain may miss the ESS gates: read, not gated
        warnings.simplefilter("ignore", BayevalWarning)
        res = be.fit(data, model="irt", draws=300, tune=300, chains=2, seed=1)
    return res, theta, a, b, p


def covered(draws: xr.DataArray, truth, dim) -> float:
    lo, hi = draws.quantile([0.025, 0.975], dim=("chain", "draw")).transpose("quantile", dim).values
    return float(np.mean((lo <= truth) & (truth <= hi)))


def test_fit_recovers_known_parameters(fitted):
    res, theta, a, b, _ = fitted
    post = res.tree["posterior"]
    # 95% intervals: with 12 abilities and 40 items, at most a few misses by chance
    assert covered(post["theta"], theta, "system") >= 10 / 12
    assert covered(post["b"], b, "task") >= 0.85
    # the discriminations share one scale with the abilities, so their misses come together:
    # one fit's coverage is noisy (the calibration is measured in benchmarks/irt_recovery.py)
    assert covered(post["a"], a, "task") >= 0.7
    assert np.corrcoef(post["b"].mean(("chain", "draw")), b)[0, 1] > 0.9
    assert np.corrcoef(post["a"].mean(("chain", "draw")), a)[0, 1] > 0.4
    assert res.diagnostics["divergences"] == 0


def test_tasks_estimand_brackets_the_true_rates(fitted):
    res, _, _, _, p = fitted
    draws = res.pass_at_k(estimand="tasks")
    assert covered(draws, p.mean(axis=1), "system") >= 10 / 12
    assert res.compare("s1", "s0", estimand="tasks").attrs["paired"]


def test_readouts_of_every_kind(fitted):
    res = fitted[0]
    assert res.pass_at_k(k=[1, 4], estimand="population").dims == ("chain", "draw", "system", "k")
    ranks = res.ranks(estimand="tasks")
    assert set(ranks["system"].values.tolist()) == set(res.systems)
    assert res.abilities()["theta"].sizes["system"] == 12
    assert res.items()["information"].dims == ("task", "system")


def test_population_quadrature_against_monte_carlo():
    # a new item: log a ~ Normal(mu, s_a), b ~ Normal(mu_b, s_b), by plain simulation
    prm = {
        "mu_b": np.array([0.3, -0.5]),
        "sigma_b": np.array([1.2, 0.7]),
        "sigma_cluster": np.zeros(2),
        "mu_log_a": np.array([0.1, -0.2]),
        "sigma_log_a": np.array([0.5, 0.3]),
        "cluster_effect": np.zeros((2, 1)),
    }
    theta = np.array([[0.0, 1.5], [-1.0, 0.4]])
    got = population_expectation(theta, prm, "pass@k", np.array([1, 3]))
    rng = np.random.default_rng(0)
    m = 2_000_000
    for d in range(2):
        a = np.exp(prm["mu_log_a"][d] + prm["sigma_log_a"][d] * rng.standard_normal(m))
        b = prm["mu_b"][d] + prm["sigma_b"][d] * rng.standard_normal(m)
        for s in range(2):
            q = special.expit(a * (theta[d, s] - b))
            for i, k in enumerate((1, 3)):
                values = 1 - (1 - q) ** k
                se = values.std() / np.sqrt(m)
                assert abs(got[d, s, i] - values.mean()) < 5 * se


def test_one_pl_form_with_clusters_shares_one_discrimination():
    data = simulate(5, n_system=6, n_item=15)[0]
    counts = data.dataset["successes"].transpose("system", "task").values
    clusters = [f"g{j % 3}" for j in range(15)]
    data = be.from_counts(counts, trials=4, systems=data.systems, clusters=clusters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)
        res = be.fit(
            data, model="irt", priors={"form": "1pl"}, draws=100, tune=100, chains=1, seed=0
        )
    a = res.tree["posterior"]["a"]
    assert float((a - a.isel(task=0)).__abs__().max()) == 0.0
    assert "sigma_log_a" not in res.tree["posterior"]
    assert res.tree.attrs["form"] == "1pl"
    assert res.tree["posterior"]["cluster_effect"].sizes["cluster"] == 3
    observed = res.pass_at_k(estimand="population", clusters="observed")
    assert ((observed > 0) & (observed < 1)).all()


def test_auto_never_picks_irt():
    assert choose_model(fake_data())[0] != "irt"
    assert choose_model(fake_data(clusters=3))[0] != "irt"


def test_refusals():
    model = get_model("irt")
    assert "one system" in model.supports(fake_data([[0.2, 0.5, 0.7]]))
    assert "strata" in model.supports(fake_data(strata=2))
    assert "bounds" in model.supports(fake_data(missing="bounds"))
    assert "0/1 outcomes" in model.supports(fake_data(scores=True))
    with pytest.raises(ValueError, match="form must be one of"):
        validate_priors({"form": "3pl"})
    with pytest.raises(ValueError, match="unknown prior"):
        validate_priors({"sigma_theta": 1.0})


def test_log_likelihood_is_the_binomial_at_each_draw():
    res = fake_results(model="irt", draws=20, chains=1)
    ll = res.log_likelihood()["task_total"]
    prm = item_draws(res.tree)
    c = res.data.dataset["successes"].transpose("system", "task").values
    n = res.data.dataset["trials"].transpose("system", "task").values
    p = special.expit(prm["a"][:, None, :] * (prm["theta"][:, :, None] - prm["b"][:, None, :]))
    expected = stats.binom.logpmf(c, n, p).sum(axis=1)  # (draw, task)
    got = ll.transpose("chain", "draw", "task").values.reshape(expected.shape)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_fake_irt_results_read_like_a_fit():
    res = fake_results(model="irt", data=fake_data(clusters=3))
    assert isinstance(res, Results)
    out = res.pass_at_k(estimand="population", clusters="observed")
    assert out.dims == ("chain", "draw", "system")
    assert ((out >= 0) & (out <= 1)).all()


ANCHORS = {"task": ["t0", "t1"], "b": [[0.5, 0.2], [-1.0, 0.3]], "log_a": [[0.0, 0.1], [0.2, 0.1]]}


def test_linked_priors_are_checked():
    out = validate_priors({"anchors": ANCHORS, "sigma_theta": 1.5})
    assert out["sigma_theta"] == 1.5 and out["mu_theta"] == (0.0, 2.0)
    assert "mu_theta" not in validate_priors(None)
    with pytest.raises(ValueError, match="ability population of a linked fit"):
        validate_priors({"mu_theta": (0.0, 1.0)})
    with pytest.raises(ValueError, match="keys 'task', 'b' and 'log_a'"):
        validate_priors({"anchors": {"task": ["t0"]}})
    with pytest.raises(ValueError, match="one \\(mean, sd\\) pair per task"):
        validate_priors({"anchors": {**ANCHORS, "b": [[0.5, 0.2]]}})
    with pytest.raises(ValueError, match="positive sds; bad for task\\(s\\) \\['t1'\\]"):
        validate_priors({"anchors": {**ANCHORS, "log_a": [[0.0, 0.1], [0.2, 0.0]]}})
    with pytest.raises(ValueError, match="more than once"):
        validate_priors({"anchors": {**ANCHORS, "task": ["t0", "t0"]}})


def test_anchor_arrays_place_each_anchor_on_its_item():
    out = anchor_arrays(["x", "t1", "y", "t0"], ANCHORS)
    np.testing.assert_array_equal(out["anchor"], [0, 1, 0, 1])
    np.testing.assert_array_equal(out["anchor_b"][[1, 3]], [[-1.0, 0.3], [0.5, 0.2]])
    np.testing.assert_array_equal(out["anchor_log_a"][3], [0.0, 0.1])
    with pytest.raises(ValueError, match="share none"):
        anchor_arrays(["x", "y"], ANCHORS)


def test_linked_model_pins_anchors_at_their_priors():
    data = be.from_counts([[3, 1, 0], [4, 2, 1]], trials=4, tasks=["t0", "x", "t1"])
    model = build_linked_model(data, validate_priors({"anchors": ANCHORS}))
    # with the standard-normal innovations at z, an anchor's b is its mean + sd z
    point = model.initial_point()
    point["b_z"] = np.array([1.0, 0.0, -2.0])
    point["a_z"] = np.array([0.5, 0.0, 1.0])
    graphs = model.replace_rvs_by_values([model["b"], model["a"]])
    b, a = (
        model.compile_fn(g, inputs=model.value_vars, on_unused_input="ignore")(point)
        for g in graphs
    )
    np.testing.assert_allclose(b[[0, 2]], [0.5 + 0.2, -1.0 - 0.6])
    np.testing.assert_allclose(np.log(a[[0, 2]]), [0.05, 0.3])


def _kernel_case(form, clusters):
    """Data of 5 systems x 12 items (three cells without trials) and the PyMC model."""
    rng = np.random.default_rng(7)
    rows = [
        {"system": f"s{i}", "task": f"t{j:02d}", "cluster": f"g{j % 4}", "success": int(y)}
        for i in range(5)
        for j in range(12)
        if (i, j) not in {(0, 3), (2, 7), (4, 0)}  # cells without trials
        for y in rng.random(rng.integers(1, 5)) < 0.55
    ]
    frame = pd.DataFrame(rows)
    data = be.from_frame(frame, cluster="cluster" if clusters else None, missing="exclude")
    priors = validate_priors({"form": form, "mu_b": (0.3, 1.5), "sigma_b": 1.7})
    inputs = irt_kernel.kernel_inputs(Layout.from_dataset(data.dataset), priors)
    return data, build_irt_model(data, priors), inputs


def _as_model_point(model, inputs, x):
    """The kernel's vector as the PyMC model's value variables (the kernel's docstring)."""
    S, J, G, clusters, two_pl = (int(v) for v in inputs["spec"][:5])
    off = irt_kernel.offsets(S, J, G, clusters, two_pl)
    # z_b = H' y (H: scipy's orthonormal Helmert matrix), psi = x[1:S+1] + beta mean(z_b)
    z_b = linalg.helmert(J, full=True).T @ x[off[1] : off[1] + J]
    point = {
        "mu_log_a": x[0],
        "phi": x[1 : S + 1] + np.exp(x[S + 2]) * z_b.mean(),
        "theta_bar": x[S + 1],
        "log_beta": x[S + 2],
        "b_z": z_b,
    }
    if clusters:
        point["log_gamma"] = x[off[2]]
        point["cluster_mean"] = x[off[2] + 1]
        point["cluster_deviation_zerosum__"] = x[off[3] : off[3] + G - 1]
    if two_pl:
        point["sigma_log_a_log__"] = x[off[4]]
        point["a_z"] = x[off[5] : off[5] + J]
    assert sorted(point) == sorted(v.name for v in model.value_vars)
    return point


@pytest.mark.parametrize("form", ["2pl", "1pl"])
@pytest.mark.parametrize("clusters", [False, True])
def test_compiled_kernel_is_the_pymc_models_density(form, clusters):
    data, model, inputs = _kernel_case(form, clusters)
    names = [v.name for v in model.value_vars]
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    args = [
        inputs[k]
        for k in ("spec", "const", "zero_sum", "cluster", "system_index", "task_index", "c", "n")
    ]
    dim = int(irt_kernel.offsets(*(int(v) for v in inputs["spec"][:5]))[6])
    assert dim == sum(np.size(v) for v in model.initial_point().values())
    rng = np.random.default_rng(3)
    points = [rng.normal(0.0, 0.8, dim) for _ in range(5)]
    got = [irt_kernel.logp_and_grad(x, *args) for x in points]
    ref = [_as_model_point(model, inputs, x) for x in points]
    # the same density up to its normalising constants
    for (value, _), point in zip(got[1:], ref[1:], strict=True):
        assert value - got[0][0] == pytest.approx(logp(point) - logp(ref[0]), rel=1e-10)

    # and the same gradient: PyMC's, carried back through the map's Jacobian (complex step)
    def flat_point(x):  # the model's point as one vector, in its value variables' order
        point = _as_model_point(model, inputs, x)
        return np.concatenate([np.ravel(point[name]) for name in names])

    step = 1e-20
    for x, (_, grad), point in zip(points, got, ref, strict=True):
        jacobian = np.stack(
            [flat_point(x + 1j * step * np.eye(dim)[k]).imag / step for k in range(dim)], axis=1
        )
        np.testing.assert_allclose(grad, jacobian.T @ dlogp(point), rtol=1e-9, atol=1e-9)
    # each draw's kept values are the model's deterministics
    kept = int(irt_kernel.kept_size(*(int(v) for v in inputs["spec"][:5])))
    wanted = [
        v
        for v in ("theta", "a", "b", "mu_b", "sigma_b", "mu_log_a", "sigma_cluster")
        + ("cluster_effect", "sigma_log_a")
        if v in model.named_vars
    ]
    evaluate = model.compile_fn(
        model.replace_rvs_by_values([model[v] for v in wanted]),
        inputs=model.value_vars,
        on_unused_input="ignore",
    )
    layout = Layout.from_dataset(data.dataset)
    for x, point in zip(points, ref, strict=True):
        out = np.empty(kept)
        irt_kernel.expand(x, inputs["spec"], inputs["zero_sum"], inputs["cluster"], out)
        values = irt_kernel.split_values(out[None, None, :], layout, form)
        for name, expected in zip(wanted, evaluate(point), strict=True):
            np.testing.assert_allclose(
                values[name].values[0, 0], expected, rtol=1e-10, atol=1e-12, err_msg=name
            )
