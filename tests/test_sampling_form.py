"""Which form of the paired model NUTS samples: collapsed (quadrature) or full-latent."""

import warnings

import numpy as np
import pytest

import bayeval as be
from bayeval.models import logit_normal
from bayeval.models.logit_normal import LATENT_CELLS, sampling_form


def _counts(systems, tasks, trials, seed=0):
    rng = np.random.default_rng(seed)
    logit = rng.normal(0, 1.5, tasks)[None, :] + rng.normal(0, 0.5, (systems, 1))
    c = rng.binomial(trials, 1 / (1 + np.exp(-logit)))
    return be.from_counts(c, np.full((systems, tasks), trials))


@pytest.mark.parametrize("systems, tasks, trials, form", [
    (25, 500, 1, "collapsed"),        # single attempts: patterns repeat, quadrature is cheap
    (13, 80, 5, "full-latent"),       # 1040 cells of five trials each
    (2, 50, 32, "collapsed"),         # 100 cells: small data keep the collapsed form
    (3, 48, 4, "collapsed"),
    (45, 400, 10, "full-latent"),
])
def test_form_follows_trials_and_size(systems, tasks, trials, form):
    chosen, why = sampling_form(_counts(systems, tasks, trials).dataset)
    assert chosen == form
    assert ("full-latent" if form == "full-latent" else "collapsed") in why


def test_the_threshold_counts_cells_of_tasks_with_several_trials():
    """Exactly LATENT_CELLS cells with more than two trials tip the choice; a task set where
    fewer than half of the tasks have several trials stays collapsed however large."""
    tasks = LATENT_CELLS // 10
    assert sampling_form(_counts(10, tasks, 3).dataset)[0] == "full-latent"
    assert sampling_form(_counts(10, tasks - 1, 3).dataset)[0] == "collapsed"
    rng = np.random.default_rng(1)
    n = np.where(np.arange(400) < 190, 5, 1)[None, :].repeat(20, axis=0)  # 190 of 400 tasks
    c = rng.binomial(n, 0.5)
    assert sampling_form(be.from_counts(c, n).dataset)[0] == "collapsed"


def test_the_bundled_files_get_the_form_the_benchmarks_measured():
    swe = be.datasets.load("swebench_verified")
    tb = be.datasets.load("terminal_bench", missing="fail")
    lcb = be.datasets.load("livecodebench")
    assert [sampling_form(d.dataset)[0] for d in (swe, tb, lcb)] == [
        "collapsed", "full-latent", "full-latent"]


def test_full_latent_fit_keeps_the_collapsed_fits_quantities(monkeypatch):
    """Forced onto small data, the full-latent route records its form and gives the same
    posterior groups and readouts as the collapsed one; both estimate the same variance
    components (within the Monte Carlo error of these short runs)."""
    data = _counts(3, 40, 6, seed=4)
    fits = {}
    for form, cells in (("collapsed", 10**9), ("full-latent", 1)):
        monkeypatch.setattr(logit_normal, "LATENT_CELLS", cells)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", be.BayevalWarning)
            fits[form] = be.fit(data, model="logit_normal", draws=300, tune=300, chains=2,
                                seed=3)
        assert fits[form].tree.attrs["form"] == form
    latent, collapsed = fits["full-latent"], fits["collapsed"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", be.BayevalWarning)
        again = be.fit(data, model="logit_normal", draws=300, tune=300, chains=2, seed=3)
    np.testing.assert_array_equal(again.tree["posterior"]["alpha"].values,
                                  latent.tree["posterior"]["alpha"].values)  # seeded
    assert "theta" not in latent.tree["posterior"]
    assert set(latent.tree["posterior"].data_vars) == set(collapsed.tree["posterior"].data_vars)
    assert "log_likelihood" in latent.tree.children
    for name in ("sigma_task", "sigma_task_system"):
        a, b = (f.tree["posterior"][name].values.ravel() for f in (latent, collapsed))
        assert abs(a.mean() - b.mean()) < 4 * np.hypot(a.std(), b.std()) / np.sqrt(100)
    effect = latent.compare("system_1", "system_0", estimand="tasks")["effect"].values
    observed = (data.dataset["successes"].sel(system="system_1").sum()
                - data.dataset["successes"].sel(system="system_0").sum()) / (40 * 6)
    assert abs(effect.mean() - float(observed)) < 0.03
