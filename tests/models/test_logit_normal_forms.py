"""Which form of the paired model NUTS samples: collapsed (quadrature), full-latent or
task-latent."""

import importlib
import warnings

import numpy as np
import pytest

import bayeval as be
from bayeval.models import base, logit_normal
from bayeval.models.logit_normal import (
    LATENT_CELLS,
    TASK_LATENT_CLUSTER_TASKS,
    TASK_LATENT_SYSTEMS,
    sampling_form,
)

_LOGIT_NORMAL_MODULES = [logit_normal] + [
    importlib.import_module(f"bayeval.models.logit_normal.{name}")
    for name in ("layout", "kernel", "pymc_model", "estimands", "model")
]


def _set_setting(monkeypatch, name, value):
    """Set ``name`` to ``value`` in every ``logit_normal`` module that holds it: the module that
    defines it and each that imports it by name (whose code reads its own binding)."""
    for module in _LOGIT_NORMAL_MODULES:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, value)


def _forced_fit(monkeypatch, data, setting, value, **kwargs):
    """A logit_normal fit with ``logit_normal.<setting>`` set to ``value`` (a form forced)."""
    _set_setting(monkeypatch, setting, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        return be.fit(data, model="logit_normal", **kwargs)


def _counts(systems, tasks, trials, seed=0):
    rng = np.random.default_rng(seed)
    logit = rng.normal(0, 1.5, tasks)[None, :] + rng.normal(0, 0.5, (systems, 1))
    c = rng.binomial(trials, 1 / (1 + np.exp(-logit)))
    return be.from_counts(c, np.full((systems, tasks), trials))


@pytest.mark.parametrize(
    "systems, tasks, trials, form",
    [
        (25, 500, 1, "task-latent"),  # single attempts of many systems: a table read per cell
        (2, 500, 1, "collapsed"),  # single attempts of two: patterns repeat, quadrature cheap
        (13, 80, 5, "full-latent"),  # 1040 cells of five trials each
        (2, 10, 32, "full-latent"),  # 20 cells: 1 s against 7-8 s collapsed
        (2, 4, 8, "collapsed"),  # 8 cells: below the measured sizes
        (3, 48, 4, "full-latent"),  # 144 cells: the three-system toy, 2-6x faster latent
        (1, 2000, 8, "collapsed"),  # one system: no inner integrals, tasks share patterns
        (45, 400, 10, "full-latent"),
    ],
)
def test_form_follows_trials_and_size(systems, tasks, trials, form):
    chosen, why = sampling_form(_counts(systems, tasks, trials).dataset)
    assert chosen == form
    assert form in why


def test_the_threshold_counts_cells_of_tasks_with_several_trials():
    """Exactly LATENT_CELLS cells with more than two trials tip the choice; a task set where
    fewer than half of the tasks have several trials stays collapsed however large."""
    tasks = LATENT_CELLS // 2
    assert sampling_form(_counts(2, tasks, 3).dataset)[0] == "full-latent"
    assert sampling_form(_counts(2, tasks - 1, 3).dataset)[0] == "collapsed"
    rng = np.random.default_rng(1)
    n = np.where(np.arange(400) < 190, 5, 1)[None, :].repeat(20, axis=0)  # 190 of 400 tasks
    c = rng.binomial(n, 0.5)
    assert sampling_form(be.from_counts(c, n).dataset)[0] == "collapsed"


def test_the_bundled_files_get_the_form_the_benchmarks_measured():
    swe = be.datasets.load("swebench_verified")
    tb = be.datasets.load("terminal_bench", missing="fail")
    lcb = be.datasets.load("livecodebench")
    assert [sampling_form(d.dataset)[0] for d in (swe, tb, lcb)] == [
        "task-latent",
        "full-latent",
        "full-latent",
    ]


def test_many_systems_with_few_trials_take_the_task_latent_form():
    """From TASK_LATENT_SYSTEMS systems on, data with at most two trials a task take the
    task-latent form; a task with more trials keeps them collapsed (the form's inner rule
    is the grid's, for low-trial cells), one trial fewer in systems too."""
    assert sampling_form(_counts(TASK_LATENT_SYSTEMS, 60, 2).dataset)[0] == "task-latent"
    assert sampling_form(_counts(TASK_LATENT_SYSTEMS - 1, 60, 1).dataset)[0] == "collapsed"
    rng = np.random.default_rng(2)
    n = np.where(np.arange(60) < 5, 4, 1)[None, :].repeat(TASK_LATENT_SYSTEMS, axis=0)
    assert sampling_form(be.from_counts(rng.binomial(n, 0.5), n).dataset)[0] == "collapsed"


@pytest.mark.parametrize(
    "tasks, clusters, form",
    [
        (100, 20, "collapsed"),  # 5 tasks a cluster: fewer than were simulated
        (3 * TASK_LATENT_CLUSTER_TASKS, 3, "task-latent"),  # exactly the threshold
        (3 * TASK_LATENT_CLUSTER_TASKS - 3, 3, "collapsed"),  # one task a cluster fewer
        (100, None, "task-latent"),
    ],
)
def test_the_task_latent_form_needs_clusters_of_many_tasks(tasks, clusters, form):
    """The task-latent form samples the cluster effects centred, guided where the data pin
    them loosely; it was simulated down to 10 tasks a cluster (no divergences in 40 fits),
    so data with fewer keep the collapsed form, which says why."""
    data = _counts(TASK_LATENT_SYSTEMS, tasks, 1)
    if clusters is not None:
        labels = [f"c{j * clusters // tasks}" for j in range(tasks)]
        data = be.from_counts(
            data.dataset["successes"].values, data.dataset["trials"].values, clusters=labels
        )
    chosen, why = sampling_form(data.dataset)
    assert chosen == form
    if form == "collapsed":
        assert f"tasks a cluster, under {TASK_LATENT_CLUSTER_TASKS}" in why


@pytest.mark.parametrize("centred", [True, False])
def test_rotated_cluster_pairs_keep_the_posterior(centred, monkeypatch):
    """Many small clusters (most of one task) with several trials a task, the task effects
    centred or not: the full-latent fit holds each cluster's pairs rotated and their spreads
    polar (``ROTATED_CLUSTER_PAIRS``), and gives the posterior of the fit without (every
    spread, intercept and cluster effect within four Monte Carlo standard errors)."""
    import arviz_stats as azs

    rng = np.random.default_rng(21)
    labels = [f"c{g}" for g in range(18)] + [f"m{g}" for g in range(4) for _ in range(3)]
    cluster = np.unique(labels, return_inverse=True)[1]
    logit = (
        rng.normal(0, 1.5, cluster.max() + 1)[cluster]
        + rng.normal(0, 0.8, len(labels))
        + np.array([[-0.3], [0.0], [0.4]])
        + rng.normal(0, 0.4, (3, len(labels)))
    )
    data = be.from_counts(
        rng.binomial(14, 1 / (1 + np.exp(-logit))).tolist(),
        trials=14,
        systems=["A", "B", "C"],
        clusters=labels,
    )
    _set_setting(monkeypatch, "task_parametrisation", lambda ds: centred)
    layout = logit_normal.Layout.from_dataset(data.dataset)
    assert sampling_form(data.dataset)[0] == "full-latent" and layout.task_centred == centred
    assert logit_normal.coordinates(layout, latent_tasks=30).cluster_pairs
    fits = {
        on: _forced_fit(
            monkeypatch, data, "ROTATED_CLUSTER_PAIRS", on, draws=300, tune=300, chains=4, seed=5
        )
        for on in (True, False)
    }
    names = ["alpha", "cluster_effect", *logit_normal.SIGMAS]
    means = {
        on: fit.tree["posterior"].to_dataset()[names].mean(("chain", "draw"))
        for on, fit in fits.items()
    }
    errors = {
        on: azs.mcse(fit.tree, group="posterior", var_names=names) for on, fit in fits.items()
    }
    for name in names:
        gap = np.abs(means[True][name] - means[False][name]).values
        allowed = 4 * np.hypot(errors[True][name], errors[False][name]).values
        assert np.all(gap < allowed), name
    assert fits[True].tree.attrs["cluster_effects"].startswith("rotated")
    assert fits[False].tree.attrs["cluster_effects"] == "non-centred"
    # the rotation changes the sampler's path, not the model: the draws differ
    assert not np.allclose(
        fits[True].tree["posterior"]["sigma_task"], fits[False].tree["posterior"]["sigma_task"]
    )


def test_integrated_cells_keep_the_posterior(monkeypatch):
    """Three systems on 40 tasks of 8 trials, half the cells with no success or all: the
    full-latent fit that integrates the cells over their task-by-system effects (a table per
    pair of counts, ``TABLED_CELLS`` forced down to one; one pair of counts left sampled by
    ``CELL_TABLES``) gives the posterior of the fit that samples every cell's effect (every
    spread, intercept and task effect within four Monte Carlo standard errors), and records
    which it did."""
    import arviz_stats as azs

    rng = np.random.default_rng(3)
    logit = (
        rng.normal(-1.0, 3.0, 40)[None, :]
        + np.array([[-0.5], [0.0], [0.6]])
        + rng.normal(0, 1.0, (3, 40))
    )
    data = be.from_counts(
        rng.binomial(8, 1 / (1 + np.exp(-logit))), np.full((3, 40), 8), systems=["A", "B", "C"]
    )
    c = data.dataset["successes"].values
    assert ((c == 0) | (c == 8)).mean() > 0.4
    assert sampling_form(data.dataset)[0] == "full-latent"
    _set_setting(monkeypatch, "CELL_TABLES", 4)  # of the 5 pairs of counts
    fits = {
        on: _forced_fit(
            monkeypatch,
            data,
            "TABLED_CELLS",
            1 if on else 10**9,
            draws=500,
            tune=500,
            chains=4,
            seed=2,
        )
        for on in (True, False)
    }
    names = ["alpha", *[n for n in logit_normal.SIGMAS if n in fits[True].tree["posterior"]]]
    for group, name in [*[("posterior", n) for n in names], ("task_effects", "task_effect")]:
        a, b = (fit.tree[group].to_dataset()[name] for fit in (fits[True], fits[False]))
        gap = np.abs(a.mean(("chain", "draw")) - b.mean(("chain", "draw"))).values
        allowed = 4 * np.hypot(azs.mcse(a), azs.mcse(b)).values
        assert np.all(gap < allowed), name
    assert fits[True].tree.attrs["task_system_effects"].startswith("integrated (tables")
    assert fits[False].tree.attrs["task_system_effects"] == "sampled"


def test_full_latent_fit_keeps_the_collapsed_fits_quantities(monkeypatch):
    """Forced onto small data, the full-latent route records its form and gives the same
    posterior groups and readouts as the collapsed one; both estimate the same variance
    components (within the Monte Carlo error of these short runs)."""
    import nutpie

    data = _counts(3, 40, 6, seed=4)
    fits = {}
    asked = []  # the target acceptance each fit hands nutpie
    sample = nutpie.sample
    monkeypatch.setattr(
        nutpie, "sample", lambda *a, **k: asked.append(k["target_accept"]) or sample(*a, **k)
    )
    for form, cells in (("collapsed", 10**9), ("full-latent", 1)):
        fits[form] = _forced_fit(
            monkeypatch, data, "LATENT_CELLS", cells, draws=300, tune=300, chains=2, seed=3
        )
        assert fits[form].tree.attrs["form"] == form
        # 40 tasks: the collapsed form too samples at the higher target (below FEW_TASKS)
        assert asked[-1] == fits[form].tree.attrs["target_accept"] == logit_normal.TARGET_ACCEPT
    latent, collapsed = fits["full-latent"], fits["collapsed"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        again = be.fit(data, model="logit_normal", draws=300, tune=300, chains=2, seed=3)
    np.testing.assert_array_equal(
        again.tree["posterior"]["alpha"].values, latent.tree["posterior"]["alpha"].values
    )  # seeded
    assert "theta" not in latent.tree["posterior"]
    assert set(latent.tree["posterior"].data_vars) == set(collapsed.tree["posterior"].data_vars)
    assert "log_likelihood" in latent.tree.children
    for name in ("sigma_task", "sigma_task_system"):
        a, b = (f.tree["posterior"][name].values.ravel() for f in (latent, collapsed))
        assert abs(a.mean() - b.mean()) < 4 * np.hypot(a.std(), b.std()) / np.sqrt(100)
    effect = latent.compare("system_1", "system_0", estimand="tasks")["effect"].values
    observed = (
        data.dataset["successes"].sel(system="system_1").sum()
        - data.dataset["successes"].sel(system="system_0").sum()
    ) / (40 * 6)
    assert abs(effect.mean() - float(observed)) < 0.03
    # the full-latent fit keeps its task effects (one per task and draw, not per system) in a
    # group of their own, and reads the tasks estimand from them: the same posterior as the
    # collapsed fit's, whose task effects are drawn from their marginal instead
    effects = latent.tree["task_effects"]["task_effect"]
    assert effects.dims == ("chain", "draw", "task") and "task_effects" not in collapsed.tree
    for system in ("system_0", "system_2"):
        a, b = (
            f.pass_at_k(k=[1, 3], estimand="tasks").sel(system=system).values.reshape(-1, 2)
            for f in (latent, collapsed)
        )
        assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * np.hypot(a.std(0), b.std(0)) / 10)
        assert np.all(np.abs(a.std(0) / b.std(0) - 1) < 0.25)


def test_task_latent_fit_gives_the_collapsed_fits_posterior(monkeypatch):
    """Many systems with single trials in clusters of unequal size: the task-latent fit (its
    task effects sampled, each cell's task-by-system effect integrated out) records its form
    and parametrisation, keeps its task effects, and gives the collapsed fit's posterior
    within the Monte Carlo error of these short runs: spreads, intercepts, population pass@1
    and the tasks estimand's pairwise effect."""
    rng = np.random.default_rng(21)
    systems, tasks = TASK_LATENT_SYSTEMS, 60
    clusters = np.repeat(["a", "b", "c"], [30, 20, 10])
    logit = (rng.normal(0, 2.0, tasks) + np.repeat(rng.normal(0, 0.7, 3), [30, 20, 10]))[None]
    logit = logit + rng.normal(0, 0.8, (systems, 1)) + rng.normal(0, 0.4, (systems, tasks))
    c = rng.binomial(1, 1 / (1 + np.exp(-logit)))
    data = be.from_counts(c, np.ones_like(c), clusters=clusters)
    fits = {}
    # 20 tasks a cluster on average: fit's own choice (TASK_LATENT_CLUSTER_TASKS); the
    # task-latent fit itself is compared, not a collapsed refit had it diverged
    assert 60 / 3 >= logit_normal.TASK_LATENT_CLUSTER_TASKS
    _set_setting(monkeypatch, "REFIT_DIVERGENT_TASK_LATENT", False)
    for form, threshold in (("task-latent", TASK_LATENT_SYSTEMS), ("collapsed", 10**9)):
        fits[form] = _forced_fit(
            monkeypatch,
            data,
            "TASK_LATENT_SYSTEMS",
            threshold,
            draws=400,
            tune=400,
            chains=2,
            seed=4,
        )
        assert fits[form].tree.attrs["form"] == form
    latent, collapsed = fits["task-latent"], fits["collapsed"]
    attrs = latent.tree.attrs
    assert attrs["task_effects"] == "centred" and attrs["intercepts"] == "attenuated"
    assert attrs["intercept_level"] == "task-weighted"
    assert latent.tree["task_effects"]["task_effect"].dims == ("chain", "draw", "task")
    assert set(latent.tree["posterior"].data_vars) == set(collapsed.tree["posterior"].data_vars)

    def close(a, b, draws=80):  # ~80 effective draws of 800 in these short runs
        a, b = a.reshape(800, -1), b.reshape(800, -1)
        return np.all(
            np.abs(a.mean(0) - b.mean(0)) < 4 * np.hypot(a.std(0), b.std(0)) / np.sqrt(draws)
        )

    for name in ("sigma_task", "sigma_task_system", "sigma_cluster", "alpha", "cluster_effect"):
        assert close(*(f.tree["posterior"][name].values for f in (latent, collapsed))), name
    assert close(*(f.pass_at_k(estimand="population").values for f in (latent, collapsed)))
    a, b = (
        f.compare("system_1", "system_0", estimand="tasks")["effect"].values
        for f in (latent, collapsed)
    )
    assert close(a, b) and abs(a.std() / b.std() - 1) < 0.25


#: rows of cells ``(task effect y, successes, trials)`` and the spreads each is drawn at
_CONDITIONAL_ROWS = [
    # several trials: the squeeze leaves most proposals to the full test over the row; cells
    # whose proposal is mostly refused (a wide spread, counts far from the predictor), that
    # fall to the hull, and that are drawn from their likelihood (successes and failures, a
    # narrow likelihood against the spread: both routes are taken at each spread)
    (
        [
            (0.8, 3, 10),
            (0.8, 0, 10),
            (0.8, 1, 1),
            (-2.5, 0, 1),
            (3.0, 40, 40),
            (-6.0, 40, 40),
            (1.5, 7, 200),
            (-4.0, 1, 1),
            (0.0, 5, 10),
            (-3.0, 5, 10),
        ],
        (1.2, 6.0),
    ),
    # single trials: the squeeze keeps most proposals, the rest are tested cell by cell
    (
        [
            (0.8, 1, 1),
            (-2.5, 0, 1),
            (-4.0, 1, 1),
            (2.0, 0, 1),
            (0.0, 1, 1),
            (1.0, 1, 1),
            (-1.0, 0, 1),
            (3.0, 1, 1),
            (-0.5, 1, 1),
            (0.3, 0, 1),
        ],
        (0.4, 1.0),
    ),
]


@pytest.mark.parametrize("row", range(len(_CONDITIONAL_ROWS)))
def test_latent_task_draws_follow_the_conditional_given_the_task_effect(row):
    """Given a sampled task effect, a system's rate is drawn from the one-dimensional
    conditional of its task-by-system effect: moments and quantiles against dense
    integration of ``N(v; 0, sigma_v) Bin(c | n, expit(y + v))``. The cells of a row are
    drawn together (first proposals judged over the row, refusals drawn again), each row
    taking its own routes (``_CONDITIONAL_ROWS``)."""
    from scipy import special, stats

    from bayeval.models.kernels.draws import _likelihood_route
    from bayeval.models.kernels.exact import latent_task_draws

    D = 20_000
    cells, spreads = _CONDITIONAL_ROWS[row]
    y = np.array([cell[0] for cell in cells])
    c = np.array([[cell[1] for cell in cells]], float)
    n = np.array([[cell[2] for cell in cells]], float)
    J = len(cells)
    for sigma_v in spreads:
        routes = [_likelihood_route(*cell, 1 / sigma_v**2) for cell in cells]
        assert (any(routes) and not all(routes)) if row == 0 else not any(routes)
        rates = latent_task_draws(
            np.full((D, 1, 1), 0.3),
            np.zeros((D, 1)),
            np.zeros((D, 1, 1)),
            np.tile(y - 0.3, (D, 1)),
            np.full(D, sigma_v),
            np.zeros(J, int),
            np.zeros(J, int),
            c,
            n,
            True,
            np.random.default_rng(0),
        )[:, 0]
        v = np.linspace(-60, 60, 240_001)
        for j, (y_j, c_j, n_j) in enumerate(cells):
            log_density = stats.norm.logpdf(v, 0, sigma_v) + stats.binom.logpmf(
                c_j, n_j, special.expit(y_j + v)
            )
            density = np.exp(log_density - log_density.max())
            density /= density.sum()
            p = special.expit(y_j + v)
            mean = (density * p).sum()
            sd = np.sqrt((density * (p - mean) ** 2).sum())
            kurtosis = (density * (p - mean) ** 4).sum() / sd**4
            draws = rates[:, j]
            assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(D), (sigma_v, cells[j])
            # the standard error of a sample sd over the true sd: sqrt((kurtosis - 1) / 4 D)
            assert abs(draws.std() / sd - 1) < 4 * np.sqrt((kurtosis - 1) / (4 * D)), (
                sigma_v,
                cells[j],
            )
            cdf = np.cumsum(density)
            for q in (0.1, 0.5, 0.9):
                assert abs(np.mean(draws <= p[np.searchsorted(cdf, q)]) - q) < 0.012, (
                    sigma_v,
                    cells[j],
                    q,
                )


def _fits_by_form(data, rule, attr, monkeypatch):
    """Two fits of ``data``, the parametrisation ``rule`` forced centred and non-centred (the
    choice recorded in ``attrs[attr]``; non-centred cluster effects of the full-latent form
    are rotated with their tasks' mean effects: ``ROTATED_CLUSTER_PAIRS``)."""
    fits = {}
    for centred in (True, False):
        _set_setting(monkeypatch, rule, lambda ds, v=centred: v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)
            fits[centred] = be.fit(data, model="logit_normal", draws=1000, chains=2, seed=5)
        recorded = fits[centred].tree.attrs[attr]
        assert recorded == "centred" if centred else recorded.startswith(("non-centred", "rotated"))
    return fits


def _assert_one_posterior(fits, names):
    """Posterior means of each ``(group, name)`` agree within Monte Carlo error."""
    for group, name in names:
        a, b = (f.tree[group][name].values for f in (fits[True], fits[False]))
        a, b = a.reshape(-1, *a.shape[2:]), b.reshape(-1, *b.shape[2:])
        # Monte Carlo error from a conservative 200 effective draws of each
        assert np.all(
            np.abs(a.mean(0) - b.mean(0)) < 4 * np.hypot(a.std(0), b.std(0)) / np.sqrt(200)
        ), name


def test_centred_and_non_centred_cluster_effects_give_one_posterior(monkeypatch):
    """Clusters each pinned by many trials (here 3 x 20 tasks x 10 trials: 200 a system)
    are sampled centred (``cluster_parametrisation``; recorded in ``attrs``): the same
    posterior as the non-centred coordinates, within Monte Carlo error."""
    rng = np.random.default_rng(8)
    clusters = np.repeat(["a", "b", "c"], 20)
    logit = (rng.normal(0, 1.0, 60) + np.repeat(rng.normal(0, 1.0, 3), 20))[None, :] + np.array(
        [[0.0], [0.4]]
    )
    c = rng.binomial(10, 1 / (1 + np.exp(-logit)))
    data = be.from_counts(c, np.full(c.shape, 10), clusters=clusters, systems=["A", "B"])
    assert logit_normal.cluster_parametrisation(data.dataset)
    fits = _fits_by_form(data, "cluster_parametrisation", "cluster_effects", monkeypatch)
    _assert_one_posterior(
        fits,
        [
            ("posterior", name)
            for name in ("alpha", "cluster_system_effect", "sigma_cluster", "sigma_task")
        ],
    )


def test_centred_and_non_centred_task_effects_give_one_posterior(monkeypatch):
    """Tasks each pinned by many trials (here 2 systems x 24 trials: 48 a task) have their
    full-latent effects sampled centred (``task_parametrisation``; recorded in ``attrs``),
    their cluster and stratum means non-centred: the same posterior as the non-centred
    coordinates, within Monte Carlo error, the task effects included."""
    rng = np.random.default_rng(4)
    clusters = np.repeat(["a", "b", "c"], 10)
    strata = np.tile(["easy", "hard"], 15)
    logit = (
        rng.normal(0, 1.0, 30) + np.repeat(rng.normal(0, 0.8, 3), 10) - 0.8 * (strata == "hard")
    )[None, :] + np.array([[0.0], [0.3]])
    c = rng.binomial(24, 1 / (1 + np.exp(-logit)))
    data = be.from_counts(
        c, np.full(c.shape, 24), clusters=clusters, strata=strata, systems=["A", "B"]
    )
    assert logit_normal.task_parametrisation(data.dataset)
    assert sampling_form(data.dataset)[0] == "full-latent"
    fits = _fits_by_form(data, "task_parametrisation", "task_effects", monkeypatch)
    _assert_one_posterior(
        fits,
        [
            ("posterior", "alpha"),
            ("posterior", "cluster_effect"),
            ("posterior", "sigma_task"),
            ("posterior", "sigma_task_system"),
            ("task_effects", "task_effect"),
        ],
    )


def test_attenuated_and_plain_intercepts_give_one_posterior(monkeypatch):
    """The collapsed form holds its intercepts divided by the attenuation of the task-level
    effects it integrates out (``ATTENUATED_INTERCEPTS``; recorded in ``attrs``): the same
    posterior as the plain intercepts, within Monte Carlo error, for four systems on shared
    tasks in clusters with a system level. The systems' contrasts are pinned (sd about 0.2
    logits) and the attenuation is about 1.6, so intercepts left divided by it would fail."""
    rng = np.random.default_rng(11)
    clusters = np.repeat(["a", "b", "c"], 50)
    logit = (rng.normal(0, 1.5, 150) + np.repeat(rng.normal(0, 0.5, 3), 50))[None, :] + np.array(
        [[-1.5], [-0.5], [0.5], [1.5]]
    )
    c = rng.binomial(1, 1 / (1 + np.exp(-logit)))
    data = be.from_counts(c, np.ones_like(c), clusters=clusters, systems=["A", "B", "C", "D"])
    fits = {}
    for attenuated in (True, False):
        _set_setting(monkeypatch, "ATTENUATED_INTERCEPTS", attenuated)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)
            fits[attenuated] = be.fit(data, model="logit_normal", draws=1000, chains=2, seed=5)
        assert fits[attenuated].tree.attrs["form"] == "collapsed"
        assert fits[attenuated].tree.attrs["intercepts"] == (
            "attenuated" if attenuated else "plain"
        )
        # three clusters of 50 tasks: equal shares, no weighting to record
        assert "intercept_level" not in fits[attenuated].tree.attrs
    _assert_one_posterior(
        fits,
        [
            ("posterior", name)
            for name in (
                "alpha",
                "sigma_task",
                "sigma_task_system",
                "cluster_effect",
                "sigma_system",
            )
        ],
    )
    contrasts = {}
    for key, f in fits.items():
        alpha = f.tree["posterior"]["alpha"].values.reshape(-1, 4)
        contrasts[key] = alpha - alpha.mean(axis=1, keepdims=True)
    a, b = contrasts[True], contrasts[False]
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * np.hypot(a.std(0), b.std(0)) / np.sqrt(200))
    a, b = (f.pass_at_k(estimand="population").values.reshape(-1, 4) for f in fits.values())
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * np.hypot(a.std(0), b.std(0)) / np.sqrt(200))


def test_clusters_of_unequal_size_shift_the_intercepts_by_the_task_weighted_level():
    """The collapsed form's intercepts are shifted by the cluster effects' task-weighted
    zero-sum means where the clusters' sizes differ (recorded in ``attrs``); the kernel's
    density with the shift is checked against SciPy in ``test_logit_normal``."""
    c = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 1, 1, 1, 0]])
    data = be.from_counts(
        c, np.ones_like(c), clusters=["a", "a", "a", "a", "b", "b"], systems=["A", "B"]
    )
    coord = logit_normal.coordinates(logit_normal.Layout.from_dataset(data.dataset))
    assert coord.level_weights == pytest.approx((4 / 6, 2 / 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        res = be.fit(data, model="logit_normal", draws=100, chains=1, tune=100, seed=1)
    assert res.tree.attrs["form"] == "collapsed"
    assert res.tree.attrs["intercept_level"] == "task-weighted"


def test_a_task_latent_fit_that_diverges_is_sampled_again_collapsed(monkeypatch):
    """A task-latent fit with a divergence (its centred cluster effects can be a funnel) is
    replaced by the collapsed form's fit of the same data, and the choice says so; one
    without keeps its form."""
    real = base.nuts
    forms = []

    def diverging(*args):
        forms.append(args[-1])
        posterior, stats = real(*args)
        if args[-1] == "task-latent":
            diverging = stats["diverging"].values.copy()
            diverging[0, 0] = 1
            stats = stats.assign(diverging=(stats["diverging"].dims, diverging))
        return posterior, stats

    data = _counts(TASK_LATENT_SYSTEMS, 40, 1)
    settings = {"model": "logit_normal", "draws": 60, "tune": 60, "chains": 2, "seed": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)  # short fits
        kept = be.fit(data, **settings)
        monkeypatch.setattr(base, "nuts", diverging)
        res = be.fit(data, **settings)
    assert kept.tree.attrs["form"] == "task-latent"
    assert forms == ["task-latent", "collapsed"]
    assert res.tree.attrs["form"] == "collapsed"
    assert "diverged 1 times, so the collapsed form" in res.tree.attrs["form_choice"]
    assert res.diagnostics["divergences"] == int(res.tree["sample_stats"]["diverging"].sum())
    assert "task_effects" not in res.tree.children


def test_the_default_warm_up_follows_the_sampled_form(monkeypatch):
    """Without ``tune``, fit warms up 300 draws where logit_normal integrates its latent
    effects out (collapsed, task-latent) and 1000 for the full-latent form and the other
    models; a ``tune`` given is used as given."""
    seen = []

    class Stop(Exception):
        pass

    def record(data, model, priors, draws, chains, tune, seed, engine, progress, bounds, form=None):
        seen.append((model.name, form, tune))
        raise Stop

    monkeypatch.setattr(base, "nuts", record)
    cases = [
        (_counts(2, 40, 1), {}, ("logit_normal", "collapsed", 300)),
        (_counts(TASK_LATENT_SYSTEMS, 40, 1), {}, ("logit_normal", "task-latent", 300)),
        (_counts(13, 80, 5), {}, ("logit_normal", "full-latent", 1000)),
        (
            _counts(2, 40, 1),
            {"model": "hierarchical", "sampler": "nutpie"},
            ("hierarchical", None, 1000),
        ),
        (_counts(2, 40, 1), {"tune": 75}, ("logit_normal", "collapsed", 75)),
    ]
    for data, options, expected in cases:
        with pytest.raises(Stop), warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)  # one trial a task
            be.fit(data, draws=10, chains=1, seed=0, **options)
        assert seen[-1] == expected


def test_few_systems_sample_their_contrasts_non_centred():
    """The system level's parametrisation on the bundled data: centred where the systems'
    spread is many times their standard errors (SWE-bench's 25 systems, Terminal-Bench,
    LangChain), non-centred for Multi-SWE-bench Java (ratio 2.5), whose centred fits
    diverged at small sigma_system, and none for two systems."""
    from bayeval.models.logit_normal import system_parametrisation

    swe = be.datasets.load("swebench_verified")
    assert system_parametrisation(swe.dataset) == 1
    assert system_parametrisation(be.datasets.load("terminal_bench", missing="fail").dataset) == 1
    assert system_parametrisation(be.datasets.load("langchain_tool_use").dataset) == 1
    assert system_parametrisation(be.datasets.load("swebench_java", missing="fail").dataset) == 2
    # under bounds its upper bound (missing as solved) spreads the systems 21 times their
    # squared standard error, the lower one 2.5 times: the lower bound decides
    assert system_parametrisation(be.datasets.load("swebench_java", missing="bounds").dataset) == 2
    assert system_parametrisation(swe.sel(system=swe.systems[:5]).dataset) == 2
    assert system_parametrisation(swe.sel(system=swe.systems[:2]).dataset) == 0
