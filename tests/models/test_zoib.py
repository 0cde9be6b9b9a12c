"""Partial-credit scores: validation and sufficient statistics in EvalData, the zoib model
(likelihood, estimands, agreement with logit_normal on binary data) and the mean-score
bootstrap."""

import os
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import linalg, special, stats

import bayeval as be
from bayeval._validate import BayevalWarning
from bayeval.inference import choose_model
from bayeval.models import zoib


def _frame(seed=0, n_task=8, n_trial=3, systems=("A", "B")):
    """Lumpy scores: half the tasks graded 0/1, half with partial credit, some not ok."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(n_task):
        e = rng.normal(0, 1.2)
        for s, system in enumerate(systems):
            p = special.expit(0.4 * s + e)
            for t in range(n_trial):
                if j % 2 and rng.random() < 0.7:
                    y = float(rng.beta(5 * p, 5 * (1 - p)))
                else:
                    y = float(rng.random() < p)
                rows.append(
                    {
                        "system": system,
                        "task": f"t{j}",
                        "trial": t,
                        "score": y,
                        "status": "ok",
                        "cluster": f"c{j % 3}",
                    }
                )
    return pd.DataFrame(rows)


# -- data --------------------------------------------------------------------------------------
def test_score_statistics_match_pandas_and_frame_is_untouched():
    df = _frame()
    df.loc[[4, 9], "score"] = np.nan
    df.loc[[4, 9], "status"] = ["timeout", "error"]
    before = df.copy(deep=True)
    data = be.from_frame(df, score="score", status="status", missing="exclude")
    assert df.equals(before)
    assert data.has_scores and data.has_partial_credit
    ds = data.dataset
    ok = df[df["status"] == "ok"]
    for (s, t), g in ok.groupby(["system", "task"]):
        y = g["score"].to_numpy()
        mid = y[(y > 0) & (y < 1)]
        cell = ds.sel(system=s, task=t)
        assert int(cell["score_n0"]) == (y == 0).sum()
        assert int(cell["score_n1"]) == (y == 1).sum() == int(cell["successes"])
        assert int(cell["score_nmid"]) == len(mid)
        assert float(cell["score_sum"]) == pytest.approx(y.sum())
        assert float(cell["score_sumsq"]) == pytest.approx((y**2).sum())
        assert float(cell["score_sumlog"]) == pytest.approx(np.log(mid).sum())
        assert float(cell["score_sumlog1m"]) == pytest.approx(np.log1p(-mid).sum())
    # policies: a non-ok attempt scores 0 under fail, 0 and 1 under bounds
    excl = data.score_statistics()
    fail = data.with_missing("fail").score_statistics()
    bounds = data.with_missing("bounds").score_statistics()
    assert int(fail["n0"].sum() - excl["n0"].sum()) == 2
    assert float(fail["sum"].sum()) == pytest.approx(float(excl["sum"].sum()))
    assert float(bounds["sum"].sel(missing_bound="upper").sum()) == pytest.approx(
        float(excl["sum"].sum()) + 2
    )
    assert (fail["trials"].values == data.with_missing("fail").dataset["trials"].values).all()


def test_binary_data_give_score_statistics_of_their_counts():
    data = be.from_counts([[3, 0, 5]], trials=5)
    st = data.score_statistics()
    assert not data.has_scores and not data.has_partial_credit
    assert st["n1"].values.tolist() == [[3, 0, 5]]
    assert st["n0"].values.tolist() == [[2, 5, 0]]
    assert float(st["nmid"].sum()) == 0


@pytest.mark.parametrize(
    "values, error, words",
    [
        ([0.5, "x", 1.0], TypeError, ["'score'", "row [1]", "'x'"]),
        ([0.5, True, 1.0], TypeError, ["'score'", "row [1]", "True/False"]),
        ([0.5, 1.5, -0.1], ValueError, ["'score'", "rows [1, 2]", "[0, 1]"]),
        ([0.5, np.inf, 1.0], ValueError, ["'score'", "row [1]"]),
    ],
)
def test_bad_scores_are_refused_naming_column_and_rows(values, error, words):
    df = pd.DataFrame(
        {"system": "A", "task": ["t1", "t2", "t3"], "score": pd.Series(values, dtype=object)}
    )
    with pytest.raises(error) as info:
        be.from_frame(df, score="score")
    for word in words:
        assert word in str(info.value)


def test_missing_scores_need_a_status_and_policy_and_ok_rows_need_a_score():
    df = pd.DataFrame({"system": "A", "task": ["t1", "t2"], "score": [0.5, np.nan]})
    with pytest.raises(ValueError, match="missing-outcome policy"):
        be.from_frame(df, score="score")
    with pytest.raises(ValueError, match=r"row \[1\] as 'ok'"):
        be.from_frame(df.assign(status="ok"), score="score", status="status", missing="fail")
    data = be.from_frame(df, score="score", missing="fail")
    assert data.score_statistics()["n0"].values.tolist() == [[0, 1]]


def test_score_excludes_success_and_count_rows():
    df = pd.DataFrame({"system": "A", "task": ["t1"], "score": [0.5], "ok": [1], "n": [1]})
    with pytest.raises(TypeError, match="mutually exclusive"):
        be.from_frame(df, success="ok", score="score")
    with pytest.raises(TypeError, match="count rows"):
        be.from_frame(df, successes="ok", trials="n", score="score")


# -- likelihood --------------------------------------------------------------------------------
def _reference_loglik(y, eta, zeta, delta, phi):
    """Per-attempt log-likelihood from scipy.stats: Bernoulli parts and a Beta density."""
    zoi, coi = special.expit(zeta), special.expit(eta)
    mu = special.expit(eta + delta)
    total = 0.0
    for v in y:
        if v == 0:
            total += stats.bernoulli.logpmf(1, zoi) + stats.bernoulli.logpmf(0, coi)
        elif v == 1:
            total += stats.bernoulli.logpmf(1, zoi) + stats.bernoulli.logpmf(1, coi)
        else:
            total += np.log1p(-zoi) + stats.beta.logpdf(v, mu * phi, (1 - mu) * phi)
    return total


def test_zoib_loglik_matches_scipy_and_the_pymc_model():
    df = _frame(seed=3)
    data = be.from_frame(df, score="score")
    rng = np.random.default_rng(1)
    S, J = 2, 8
    eta, zeta = rng.normal(0, 1.5, (S, J)), rng.normal(0.5, 1.0, (S, J))
    delta, phi = rng.normal(0, 0.5, (S, 1)), np.exp(rng.normal(1.5, 0.5, (S, 1)))
    got = zoib.zoib_loglik(zoib.score_arrays(data), eta, zeta, delta, phi)
    for s, system in enumerate(["A", "B"]):
        for j in range(J):
            y = df[(df["system"] == system) & (df["task"] == f"t{j}")]["score"].to_numpy()
            ref = _reference_loglik(y, eta[s, j], zeta[s, j], delta[s, 0], phi[s, 0])
            assert got[s, j] == pytest.approx(ref, rel=1e-9, abs=1e-9)
    # the PyMC model's potential is the same function of its parameters
    model = zoib.build_zoib_model(data)
    point = model.initial_point()
    potential = model.replace_rvs_by_values([model.potentials[0]])[0]
    fn = model.compile_fn(potential, inputs=model.value_vars, on_unused_input="ignore")
    names = [
        "alpha",
        "delta",
        "gamma",
        "log_phi",
        "task_effect_z",
        "task_system_effect_z",
        "zoi_task_effect_z",
        "sigma_task_log__",
        "sigma_task_system_log__",
        "sigma_zoi_log__",
    ]
    point = {k: rng.normal(0, 0.5, np.shape(point[k])) for k in names}
    sigma = {
        k: np.exp(point[f"{k}_log__"]) for k in ("sigma_task", "sigma_task_system", "sigma_zoi")
    }
    eta = (
        point["alpha"][:, None]
        + sigma["sigma_task"] * point["task_effect_z"][None]
        + sigma["sigma_task_system"] * point["task_system_effect_z"]
    )
    zeta = point["gamma"][:, None] + sigma["sigma_zoi"] * point["zoi_task_effect_z"][None]
    expected = zoib.zoib_loglik(
        zoib.score_arrays(data),
        eta,
        zeta,
        point["delta"][:, None],
        np.exp(point["log_phi"])[:, None],
    ).sum()
    assert float(fn(point)) == pytest.approx(expected, rel=1e-8)


def _kernel_point(model, x, spec, cluster):
    """The PyMC model's value variables (and their names) at the kernel's vector ``x``: with
    ``spec``'s level field set its first S coordinates are ``alpha`` plus the mean over the
    tasks of the shared effects (``sigma_task e[j] + sigma_cluster u[g(j)]``), else ``alpha``,
    and the task and cluster effects' standard normals are ``H' x`` (SciPy's Helmert matrix);
    complex ``x`` for complex-step derivatives."""
    from bayeval.models.kernels import zoib as zoib_kernel

    S, J, G, paired, clusters = (int(v) for v in spec[:5])
    off = zoib_kernel.offsets(S, J, G, bool(paired), bool(clusters))
    x = np.array(x)
    if spec[6]:  # the task and cluster coordinates are H z (H: the orthonormal Helmert matrix)
        x[off[5] : off[5] + J] = linalg.helmert(J, full=True).T @ x[off[5] : off[5] + J]
        if clusters:
            x[off[7] : off[7] + G] = linalg.helmert(G, full=True).T @ x[off[7] : off[7] + G]
    shared = np.exp(x[off[0]]) * x[off[5] : off[5] + J]
    if clusters:
        shared = shared + np.exp(x[off[2]]) * x[off[7] + np.asarray(cluster)]
    level = shared.mean() if spec[6] else 0.0
    point = {
        "alpha": x[:S] - level,
        "delta": x[S : 2 * S],
        "gamma": x[2 * S : 3 * S],
        "log_phi": x[3 * S : 4 * S],
    }
    for q, name in enumerate(
        ("sigma_task", "sigma_task_system", "sigma_cluster", "sigma_cluster_system", "sigma_zoi")
    ):
        if off[q] >= 0:
            point[f"{name}_log__"] = x[off[q]]
    for q, (name, shape) in enumerate(
        (
            ("task_effect_z", (J,)),
            ("task_system_effect_z", (S, J)),
            ("cluster_effect_z", (G,)),
            ("cluster_system_effect_z", (S, G)),
            ("zoi_task_effect_z", (J,)),
        )
    ):
        if off[5 + q] >= 0:
            point[name] = x[off[5 + q] : off[5 + q] + int(np.prod(shape))].reshape(shape)
    assert set(point) == {v.name for v in model.value_vars}
    return point


@pytest.mark.parametrize("level", [False, True])
@pytest.mark.parametrize(
    "systems, cluster",
    [
        (("A", "B"), "cluster"),
        (("A", "B"), None),
        (("A",), "cluster"),
        (("A", "B", "C"), "cluster"),
    ],
)
def test_compiled_kernel_is_the_pymc_models_density(systems, cluster, level):
    from bayeval.models.kernels import zoib as zoib_kernel

    df = _frame(seed=5, n_task=9, systems=systems)
    data = be.from_frame(df, score="score", cluster=cluster)
    model = zoib.build_zoib_model(data)
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    inputs = zoib.kernel_inputs(data)
    assert inputs["spec"][6] == 0  # nine tasks: alpha is the coordinate
    spec = inputs["spec"].copy()
    spec[6] = level  # the systems' levels instead (from 50 tasks on)
    args = [
        spec,
        *(
            inputs[name]
            for name in ("const", "cluster", "n0", "n1", "nmid", "interior", "sumlog", "sumlog1m")
        ),
    ]
    dim = zoib_kernel.offsets(*spec[:3], bool(spec[3]), bool(spec[4]))[10]
    assert dim == sum(np.size(v) for v in model.initial_point().values())
    cluster = inputs["cluster"]
    names = [v.name for v in model.value_vars]

    def to_model(x):  # the kernel's vector as PyMC's flat vector, in its value variables' order
        point = _kernel_point(model, x, spec, cluster)
        return np.concatenate([np.ravel(point[name]) for name in names])

    rng = np.random.default_rng(2)
    points = [rng.normal(0, 1.0, dim) for _ in range(4)]
    got = [zoib_kernel.logp_and_grad(x, *args) for x in points]
    ref = [logp(_kernel_point(model, x, spec, cluster)) for x in points]
    # the same density up to its normalising constants (the map has Jacobian one). Some of
    # these points put a Beta mean within 1e-8 of 1 (b = (1 - mu) phi near 4e-9), where the
    # kernel's phi - a and PyTensor's (1 - mu) phi lose different digits: 1e-7 absolute.
    for (value, _), expected in zip(got[1:], ref[1:], strict=True):
        assert value - got[0][0] == pytest.approx(expected - ref[0], rel=1e-10, abs=1e-7)
    # and the same gradient: PyMC's, carried back through the map's Jacobian (complex step)
    for x, (_, grad) in zip(points, got, strict=True):
        jac = np.stack(
            [to_model(x + 1e-30j * np.eye(dim)[i]).imag / 1e-30 for i in range(dim)], axis=1
        )
        assert abs(abs(np.linalg.det(jac)) - 1.0) < 1e-12  # (a reordering, a shear, a rotation)
        expected = jac.T @ dlogp(_kernel_point(model, x, spec, cluster))
        # (PyTensor's digamma is good to about 1e-9; near mu = 1, as above, the two lose
        # different digits of b and digamma(b) ~ -1/b: 1e-7 absolute)
        np.testing.assert_allclose(grad, expected, rtol=1e-7, atol=1e-7)
    # the kept values are the model's named quantities at that point
    x = points[0]
    out = np.empty(zoib_kernel.kept_size(*spec[:3], bool(spec[3]), bool(spec[4])))
    zoib_kernel.expand(x, spec, cluster, out)
    post = zoib.split_values(out[None, None], zoib.Layout.from_dataset(data.dataset))
    named = [name for name in (*zoib.POSTERIOR_VARS, *zoib.LATENT_VARS) if name in model.named_vars]
    assert sorted(post.data_vars) == sorted(named)
    outputs = model.replace_rvs_by_values([model[name] for name in named])
    values = model.compile_fn(outputs, inputs=model.value_vars, on_unused_input="ignore")(
        _kernel_point(model, x, spec, cluster)
    )
    for name, value in zip(named, values, strict=True):
        np.testing.assert_allclose(post[name].values[0, 0], value, rtol=1e-12, err_msg=name)


def test_the_kernel_samples_the_levels_from_fifty_tasks():
    from bayeval.models.kernels import zoib as zoib_kernel

    for n_task in (zoib_kernel.LEVEL_TASKS - 1, zoib_kernel.LEVEL_TASKS):
        data = be.from_frame(_frame(n_task=n_task, n_trial=1), score="score")
        assert zoib.kernel_inputs(data)["spec"][6] == (n_task >= 50)


def test_kernel_digamma_matches_scipy():
    from bayeval.models.kernels import zoib as zoib_kernel

    x = np.concatenate([np.geomspace(1e-8, 1e4, 400), np.linspace(0.5, 12, 101)])
    got = np.array([zoib_kernel.digamma(v) for v in x])
    np.testing.assert_allclose(got, special.digamma(x), rtol=1e-12, atol=1e-11)


# -- estimands from a fake posterior -----------------------------------------------------------
def _fake_tree(data, draws=40, seed=0):
    rng = np.random.default_rng(seed)
    ds = data.dataset
    S, J = ds.sizes["system"], ds.sizes["task"]
    G = len(np.unique(ds["cluster"].values))
    lead = ("chain", "draw")
    post = xr.Dataset(
        {
            "alpha": (lead + ("system",), rng.normal(0, 1, (1, draws, S))),
            "delta": (lead + ("system",), rng.normal(0, 0.5, (1, draws, S))),
            "gamma": (lead + ("system",), rng.normal(0, 1, (1, draws, S))),
            "phi": (lead + ("system",), np.exp(rng.normal(1.5, 0.3, (1, draws, S)))),
            **{
                name: (lead, np.abs(rng.normal(0.8, 0.2, (1, draws))))
                for name in (*zoib.SIGMAS, "sigma_zoi")
            },
            "task_effect": (lead + ("task",), rng.normal(0, 1, (1, draws, J))),
            "task_system_effect": (lead + ("system", "task"), rng.normal(0, 0.5, (1, draws, S, J))),
            "cluster_effect": (lead + ("cluster",), rng.normal(0, 0.5, (1, draws, G))),
            "cluster_system_effect": (
                lead + ("system", "cluster"),
                rng.normal(0, 0.3, (1, draws, S, G)),
            ),
            "zoi_task_effect": (lead + ("task",), rng.normal(0, 1, (1, draws, J))),
        },
        coords={"chain": [0], "draw": np.arange(draws), "system": ds["system"].values},
    )
    tree = xr.DataTree.from_dict({"/posterior": post, "/observed_data": ds})
    tree.attrs = {"seed": 0}
    return tree


def test_estimands_match_direct_computation_and_monte_carlo():
    data = be.from_frame(_frame(), score="score", cluster="cluster")
    tree = _fake_tree(data)
    post = tree["posterior"]
    rates = zoib.ZoibScores()
    codes = pd.factorize(data.dataset["cluster"].values)[0]
    # tasks: the mean over tasks of zoi coi + (1 - zoi) mu, written out draw by draw
    got = rates.tasks(tree, "mean", np.array([1])).isel(k=0)
    for d in (0, 17):
        p = post.isel(chain=0, draw=d)
        eta = (
            p["alpha"].values[:, None]
            + p["task_effect"].values[None]
            + p["task_system_effect"].values
            + p["cluster_effect"].values[codes][None]
            + p["cluster_system_effect"].values[:, codes]
        )
        zoi = special.expit(p["gamma"].values[:, None] + p["zoi_task_effect"].values[None])
        m = zoi * special.expit(eta) + (1 - zoi) * special.expit(eta + p["delta"].values[:, None])
        np.testing.assert_allclose(got.isel(chain=0, draw=d).values, m.mean(axis=1))
    # population (new cluster): Monte Carlo over fresh tasks, shared by the systems
    pop = rates.population(tree, "mean", np.array([1])).isel(k=0)
    rng = np.random.default_rng(5)
    for d in (3, 30):
        p = post.isel(chain=0, draw=d)
        n = 400_000
        shared = rng.normal(size=n) * float(p["sigma_task"]) + rng.normal(size=n) * float(
            p["sigma_cluster"]
        )
        zoi = special.expit(
            p["gamma"].values[:, None] + float(p["sigma_zoi"]) * rng.normal(size=n)[None]
        )
        own = np.hypot(float(p["sigma_task_system"]), float(p["sigma_cluster_system"]))
        eta = p["alpha"].values[:, None] + shared[None] + own * rng.normal(size=(2, n))
        m = zoi * special.expit(eta) + (1 - zoi) * special.expit(eta + p["delta"].values[:, None])
        np.testing.assert_allclose(pop.isel(chain=0, draw=d).values, m.mean(axis=1), atol=3e-3)
    # task rates are the per-task mean scores
    p_draws = rates.task_rates(tree)
    np.testing.assert_allclose(p_draws.mean("task").values, got.values)


# -- fitting -----------------------------------------------------------------------------------
# 500 tuning draws left r-hat at the gate; with 1000 draws r-hat reached 1.011 in one of four
# seeds here and 1.014 on another CPU (the floating point differs): 3000 kept it <= 1.0034 in
# eight seeds, about 1 s more per fit
FIT = {"draws": 3000, "chains": 2, "tune": 1000}


@pytest.fixture(scope="module")
def score_fit():
    data = be.from_frame(_frame(n_task=10), score="score", cluster="cluster")
    return data, be.fit(data, model="zoib", seed=11, **FIT)


def test_zoib_results_serve_the_mean_score(score_fit, tmp_path):
    data, res = score_fit
    model, reason = choose_model(data)
    assert model == "fractional" and "score" in reason  # the default for scores
    assert res.model == "zoib" and res.tree.attrs["model_choice"] == "model='zoib' as requested"
    assert res.tree.attrs["target_accept"] == zoib.TARGET_ACCEPT_FEW  # ten tasks
    for estimand in ("tasks", "population"):
        mean = res.mean_score(estimand=estimand)
        assert mean.dims == ("chain", "draw", "system")
        np.testing.assert_array_equal(mean.values, res.pass_at_k(k=1, estimand=estimand).values)
        out = res.compare("B", "A", metric="mean", estimand=estimand)
        np.testing.assert_allclose(
            out["effect"].values, (mean.sel(system="B") - mean.sel(system="A")).values
        )
    table = res.summary(metrics=("mean",))
    assert set(table["estimand"]) == {"tasks", "population"}
    assert table["mean"].between(0, 1).all()
    # the observed mean score sits inside the posterior of the tasks estimand
    observed = data.dataset["score_sum"].sum("task") / data.dataset["trials"].sum("task")
    tasks = res.mean_score(estimand="tasks")
    for s in ("A", "B"):
        lo, hi = np.quantile(tasks.sel(system=s).values, [0.005, 0.995])
        assert lo < float(observed.sel(system=s)) < hi
    # round trip
    path = os.path.join(tmp_path, "zoib.nc")
    res.to_netcdf(path)
    back = be.load(path)
    assert back.tree.identical(res.tree)
    assert back.data.has_scores
    np.testing.assert_array_equal(
        back.mean_score(estimand="population").values, res.mean_score(estimand="population").values
    )


def test_binary_metrics_are_refused_on_scores(score_fit):
    data, res = score_fit
    for kwargs in (
        {"metric": "pass^k"},
        {"metric": "pass@k", "k": 2},
        {"metric": "g-pass@k", "k": 2, "tau": 0.5},
        {"metric": "consistency"},
    ):
        with pytest.raises(ValueError, match="mean score"):
            res.compare("B", "A", **kwargs)
    with pytest.raises(ValueError, match="mean score"):
        res.pass_hat_k(k=1)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        be.fit(data, model="logit_normal")
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        be.bootstrap.pass_at_k(data)
    grid = be.fit(be.from_counts([[3, 4, 1]], trials=5), draws=50, chains=1, seed=0)
    with pytest.raises(ValueError, match="model='fractional' or 'zoib'"):
        grid.summary(metrics=("mean",))


def test_fits_are_reproducible(score_fit):
    data, res = score_fit
    again = be.fit(data, model="zoib", seed=11, **FIT)
    xr.testing.assert_equal(
        again.tree["posterior"].to_dataset(), res.tree["posterior"].to_dataset()
    )


def test_without_the_kernel_route_the_pymc_model_is_compiled_once_per_shape(monkeypatch):
    from bayeval.models.kernels import nutpie_model

    # an installed nutpie without the internals the kernel needs: the PyMC model's route
    monkeypatch.setattr(nutpie_model, "available", lambda: False)
    small = {"draws": 200, "chains": 1, "tune": 200}
    data = be.from_frame(_frame(n_task=10), score="score", cluster="cluster")
    zoib._compiled.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # 200 draws: the gates may fail
        first = be.fit(data, model="zoib", seed=11, **small)
        assert len(zoib._compiled) == 1
        # a model compiled on other data of the same shape, with interior scores in other
        # cells, its data swapped for these, gives the fit compiled on these
        other = be.from_frame(_frame(seed=7, n_task=10), score="score", cluster="cluster")
        assert not np.array_equal(
            other.dataset["score_nmid"].values > 0, data.dataset["score_nmid"].values > 0
        )
        zoib._compiled.clear()
        be.fit(other, model="zoib", seed=3, draws=50, chains=1, tune=50)
        swapped = be.fit(data, model="zoib", seed=11, **small)
    assert len(zoib._compiled) == 1
    xr.testing.assert_equal(
        swapped.tree["posterior"].to_dataset(), first.tree["posterior"].to_dataset()
    )
    assert first.mean_score(estimand="population").shape == (1, 200, 2)


def test_binary_data_agree_with_logit_normal():
    # the shape of score_fit's data (10 tasks in 3 clusters): zoib reuses its compiled model;
    # two trials a cell keep logit_normal on its collapsed form's fixed grid
    rng = np.random.default_rng(4)
    e = rng.normal(0, 1.2, 10)
    c = np.stack(
        [rng.binomial(2, special.expit(a + e + rng.normal(0, 0.3, 10))) for a in (-0.3, 0.4)]
    )
    data = be.from_counts(
        c, trials=2, systems=["A", "B"], clusters=[f"c{j % 3}" for j in range(10)]
    )
    fits = {m: be.fit(data, model=m, seed=3, **FIT) for m in ("zoib", "logit_normal")}
    for estimand in ("tasks", "population"):
        tables = {m: r.summary(estimands=(estimand,)).set_index("system") for m, r in fits.items()}
        for s in ("A", "B"):
            z, ln = tables["zoib"].loc[s], tables["logit_normal"].loc[s]
            assert abs(z["mean"] - ln["mean"]) < 4 * np.hypot(z["mcse_mean"], ln["mcse_mean"])
            assert abs(z["sd"] - ln["sd"]) < 0.2 * ln["sd"]
        effects = {m: r.compare("B", "A", estimand=estimand) for m, r in fits.items()}
        diff = float(effects["zoib"]["effect_mean"] - effects["logit_normal"]["effect_mean"])
        assert abs(diff) < 4 * float(
            np.hypot(effects["zoib"]["effect_mcse"], effects["logit_normal"]["effect_mcse"])
        )


def test_scores_all_0_or_1_get_the_binomial_model_and_its_mean_score_is_pass_at_1():
    # zoib on many one-attempt systems of 0/1 scores fails its gates (models/zoib.md): such
    # scores are 0/1 outcomes and go to the model the same outcomes given as success= get
    df = _frame(n_task=10)
    df["score"] = (df["score"] >= 0.5).astype(float)
    df["success"] = df["score"].astype(int)
    scores = be.from_frame(df, score="score", cluster="cluster")
    binary = be.from_frame(df.drop(columns="score"), success="success", cluster="cluster")
    assert scores.has_scores and not scores.has_partial_credit
    model, reason = choose_model(scores)
    assert model == choose_model(binary)[0] == "logit_normal"
    assert reason.startswith("scores all 0 or 1") and reason.endswith(choose_model(binary)[1])
    small = {"draws": 300, "chains": 2, "seed": 5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayevalWarning)  # 300 draws: the gates may fail
        res, ref = be.fit(scores, **small), be.fit(binary, **small)
    assert res.model == "logit_normal" and res.tree.attrs["model_choice"] == reason
    for estimand in ("tasks", "population"):
        mean = res.mean_score(estimand=estimand)
        assert mean.name == mean.attrs["metric"] == "mean"
        np.testing.assert_array_equal(mean.values, ref.pass_at_k(k=1, estimand=estimand).values)
        out = res.compare("B", "A", metric="mean", estimand=estimand)
        assert out.attrs["metric"] == "mean"
        np.testing.assert_array_equal(
            out["effect"].values, ref.compare("B", "A", estimand=estimand)["effect"].values
        )
    table = res.summary(metrics=("mean",))
    assert set(table["metric"]) == {"mean"}
    with pytest.raises(ValueError, match="no k or tau"):
        res.compare("B", "A", metric="mean", k=2)
    # the same outcomes as success= are not scores: the mean score is still refused there
    with pytest.raises(ValueError, match="model='fractional' or 'zoib'"):
        ref.summary(metrics=("mean",))
    # the report of scores: the mean score, the binomial model named
    from bayeval.report import build_report, report_data

    rows = report_data(res, comparisons=[("B", "A")], metric="mean")["metrics"]
    assert {r["metric"] for r in rows} == {"mean"}
    text = build_report(res, fmt="markdown", plots=False, comparisons=[("B", "A")], metric="mean")
    assert "fitted by the binomial model `logit_normal`" in text
    assert "given as success= get the trial bootstrap" in text
    html = build_report(res, fmt="html", plots=False, comparisons=[("B", "A")], metric="mean")
    assert "the binomial model\n<code>logit_normal</code>" in html
    assert "zero-one-inflated" not in text
    # fractional is the model for scores with partial credit; zoib may still be asked for
    assert choose_model(be.from_frame(_frame(n_task=10), score="score"))[0] == "fractional"


# -- bootstrap ---------------------------------------------------------------------------------
def test_mean_score_bootstrap_is_the_task_resampling_of_task_means():
    df = _frame(n_task=12)
    data = be.from_frame(df, score="score")
    out = be.bootstrap.mean_score(data, n_boot=500, seed=9)
    task_means = df.groupby(["system", "task"], sort=False)["score"].mean().unstack()
    np.testing.assert_allclose(out["estimate"].values, task_means.mean(axis=1).values)
    # the same replicates from a direct loop: multinomial counts over distinct task patterns
    rows = task_means.T.to_numpy()  # (task, system)
    patterns, mult = np.unique(
        np.concatenate([rows, np.ones_like(rows)], 1), axis=0, return_counts=True
    )
    rng = np.random.default_rng(9)
    counts = rng.multinomial(mult.sum(), mult / mult.sum(), size=500)
    expected = counts @ patterns[:, :2] / mult.sum()
    np.testing.assert_allclose(out["replicates"].values, expected)
    assert out["interval"].dims == ("system", "ci_bound")
    assert out.attrs["metric"] == "mean" and out.attrs["estimand"] == "population"
    paired = be.bootstrap.compare(data, "B", "A", metric="mean", n_boot=500, seed=9)
    assert float(paired["effect_mean"]) == pytest.approx(
        float(out["estimate"].sel(system="B") - out["estimate"].sel(system="A"))
    )
    with pytest.raises(ValueError, match="unit='task'"):
        be.bootstrap.mean_score(data, unit="trial")


def test_mean_score_bootstrap_of_binary_data_is_the_pass_at_1_bootstrap():
    data = be.from_counts(
        [[3, 0, 5, 2, 4], [4, 1, 5, 3, 2]],
        trials=5,
        systems=["A", "B"],
        clusters=["x", "x", "y", "y", "z"],
    )
    for unit in ("task", "cluster"):
        mean = be.bootstrap.mean_score(data, unit=unit, n_boot=300, seed=1)
        p1 = be.bootstrap.pass_at_k(data, unit=unit, n_boot=300, seed=1)
        np.testing.assert_allclose(mean["replicates"].values, p1["replicates"].values)
        a = be.bootstrap.compare(data, "B", "A", metric="mean", unit=unit, n_boot=300, seed=1)
        b = be.bootstrap.compare(data, "B", "A", unit=unit, n_boot=300, seed=1)
        np.testing.assert_allclose(a["effect"].values, b["effect"].values)


def test_one_attempt_scores_are_told_that_tau_and_phi_are_confounded():
    """zoib on one attempt per (system, task) gets its own note (the task-by-system spread
    against the Beta precision), not the binomial models' pass@k one; more attempts, none."""
    from bayeval.inference import _warn_single_trial

    one = be.from_frame(_frame(n_trial=1), score="score", cluster="cluster")
    with pytest.warns(BayevalWarning, match=r"phi are told apart only by the shape") as got:
        _warn_single_trial(one, "zoib")
    assert "pass@k" not in str(got[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_single_trial(
            be.from_frame(_frame(n_trial=2), score="score", cluster="cluster"), "zoib"
        )
