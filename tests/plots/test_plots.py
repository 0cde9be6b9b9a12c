"""Plots draw exactly what their compute functions return, checked against values computed here."""

import importlib.util
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import bayeval as be
from bayeval import BayevalWarning, plots
from bayeval.testing import fake_results

SAMPLE = ["chain", "draw"]
COUNTS = np.array(
    [
        [9, 1, 10, 0, 7, 3, 5, 6],
        [10, 2, 10, 1, 8, 3, 6, 6],
        [3, 0, 9, 0, 2, 1, 4, 2],
    ]
)
TRIALS = 10
SYSTEMS = ["A", "B", "C"]
TB_SYSTEMS = [
    "20250711_openhands_claude-4-sonnet",
    "20250825_swe-agent-mini_claude-4-sonnet",
    "20250923_droid_claude-4-sonnet",
]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    return be.from_counts(
        COUNTS, trials=TRIALS, systems=SYSTEMS, tasks=[f"t{j}" for j in range(COUNTS.shape[1])]
    )


@pytest.fixture(scope="module")
def res(data):
    return fake_results(data, model="hierarchical", draws=300, chains=2, seed=3)


@pytest.fixture(scope="module")
def moves():
    """B gains clearly on t0 and t1 and loses clearly on t4 against A."""
    counts = np.array([[0, 1, 5, 5, 10, 6], [10, 9, 5, 6, 0, 6]])
    data = be.from_counts(
        counts, trials=10, systems=["A", "B"], tasks=["t0", "t1", "t2", "t3", "t4", "t5"]
    )
    return fake_results(data, model="beta_binomial", draws=400, chains=2, seed=5)


@pytest.fixture(scope="module")
def tb_data():
    return be.datasets.load("terminal_bench", missing="bounds").sel(system=TB_SYSTEMS)


@pytest.fixture(scope="module")
def tb_res(tb_data):
    return fake_results(tb_data, model="hierarchical", draws=200, chains=2, seed=11)


def by_gid(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert found, f"nothing drawn with gid {gid!r}"
    return found


def one(ax, gid):
    found = by_gid(ax, gid)
    assert len(found) == 1
    return found[0]


def eti(draws, ci_prob=0.95):
    """Equal-tailed interval over (chain, draw) with numpy, dims of the rest kept."""
    values = draws.stack(sample=SAMPLE).transpose(..., "sample").values
    a = 1 - ci_prob
    return np.quantile(values, a / 2, axis=-1), np.quantile(values, 1 - a / 2, axis=-1)


def segments(collection):
    """(x0, y0, x1, y1) of each segment of a LineCollection."""
    return np.array([np.ravel(s) for s in collection.get_segments()])


# -- import and types --------------------------------------------------------------------------
def test_module_imports_matplotlib_lazily_and_explains_a_missing_install(monkeypatch, res):
    # a fresh copy of the module loads with matplotlib unavailable ...
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    spec = importlib.util.spec_from_file_location("bayeval_plots_copy", plots.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    # ... and a plot says how to install it
    with pytest.raises(ImportError, match=r"pip install 'bayeval\[plots\]'"):
        copy.plot_forest(res, n_boot=100)
    with pytest.raises(ImportError, match=r"pip install 'bayeval\[plots\]'"):
        copy.plot_status(res.data)


def test_import_bayeval_and_its_plots_module_leaves_matplotlib_unloaded():
    code = (
        "import sys, bayeval, bayeval.plots; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "call",
    [
        lambda r: plots.plot_forest(r, n_boot=200),
        lambda r: plots.plot_pass_at_k(r, k=[1, 2, 3]),
        lambda r: plots.plot_effect(r, "B", "A"),
        lambda r: plots.plot_task_rates(r, "B", "A"),
        lambda r: plots.plot_ppc(r, system="A"),
        lambda r: plots.plot_status(r),
    ],
)
def test_returns_figure_and_the_axes_drawn_on(res, call):
    fig, ax = call(res)
    assert isinstance(fig, Figure) and isinstance(ax, Axes)
    assert ax.figure is fig
    assert ax.has_data()


@pytest.mark.parametrize(
    "call",
    [
        lambda r, ax: plots.plot_forest(r, n_boot=200, ax=ax),
        lambda r, ax: plots.plot_pass_at_k(r, k=[1, 2], ax=ax),
        lambda r, ax: plots.plot_effect(r, "B", "A", ax=ax),
        lambda r, ax: plots.plot_task_rates(r, "B", "A", ax=ax),
        lambda r, ax: plots.plot_ppc(r, system="A", ax=ax),
        lambda r, ax: plots.plot_status(r.data, ax=ax),
    ],
)
def test_draws_into_a_given_axes(res, call):
    fig, (left, right) = plt.subplots(1, 2)
    out_fig, out_ax = call(res, right)
    assert out_fig is fig and out_ax is right
    assert right.has_data() and not left.has_data()
    assert len(fig.axes) == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda r: plots.plot_forest(r, ax="left"),
        lambda r: plots.plot_pass_at_k(r, ax=[1]),
        lambda r: plots.plot_effect(r, "B", "A", ax=3),
        lambda r: plots.plot_task_rates(r, "B", "A", ax="x"),
        lambda r: plots.plot_status(r, ax=object()),
    ],
)
def test_rejects_an_ax_that_is_not_axes(res, call):
    with pytest.raises(TypeError, match="ax must be"):
        call(res)


def test_rejects_what_is_not_results(data):
    for func in (plots.plot_forest, plots.plot_pass_at_k, plots.plot_ppc):
        with pytest.raises(TypeError, match="results must be a bayeval Results"):
            func(data)
    with pytest.raises(TypeError, match="data must be an EvalData or a Results"):
        plots.plot_status(COUNTS)


def test_unknown_systems_are_named(res):
    with pytest.raises(ValueError, match=r"systems: unknown system\(s\) \['Z'\].*'A', 'B', 'C'"):
        plots.plot_pass_at_k(res, systems=["A", "Z"])
    with pytest.raises(ValueError, match=r"candidate 'Z' is not a system.*'A', 'B', 'C'"):
        plots.plot_effect(res, "Z", "A")
    with pytest.raises(ValueError, match=r"baseline 'Z' is not a system.*'A', 'B', 'C'"):
        plots.plot_task_rates(res, "A", "Z")
    with pytest.raises(ValueError, match=r"system: unknown system\(s\) \['Z'\]"):
        plots.plot_ppc(res, system="Z")
    with pytest.raises(ValueError, match="different systems"):
        plots.plot_task_rates(res, "A", "A")


def test_bad_settings_name_the_argument(res):
    with pytest.raises(ValueError, match="metric must be one of"):
        plots.plot_forest(res, metric="pass@1")
    with pytest.raises(ValueError, match="k must be a single positive integer"):
        plots.plot_forest(res, k=[1, 2])
    with pytest.raises(ValueError, match="k must be a single positive integer"):
        plots.plot_effect(res, "B", "A", k=[1, 3])
    with pytest.raises(ValueError, match="k must be positive integers"):
        plots.plot_pass_at_k(res, k=[0, 1])
    with pytest.raises(ValueError, match="ci_prob must be strictly between 0 and 1"):
        plots.plot_pass_at_k(res, ci_prob=95)
    with pytest.raises(ValueError, match="estimand must be one of"):
        plots.plot_forest(res, estimand="task")
    with pytest.raises(TypeError, match="bootstrap must be True or False"):
        plots.plot_forest(res, bootstrap="yes")
    with pytest.raises(ValueError, match="margin must be a non-negative number"):
        plots.plot_effect(res, "B", "A", margin=-0.1)


# -- forest ------------------------------------------------------------------------------------
def test_forest_draws_posterior_and_bootstrap_twin(res, data):
    _fig, ax = plots.plot_forest(res, k=2, n_boot=400, seed=4, ci_prob=0.9)
    draws = res.pass_at_k(k=2)
    mean = draws.mean(SAMPLE).values
    lo, hi = eti(draws, 0.9)
    order = np.argsort(mean)  # row 0 (bottom) has the lowest posterior mean
    assert [t.get_text() for t in ax.get_yticklabels()] == [SYSTEMS[i] for i in order]
    assert np.allclose(ax.get_yticks(), np.arange(3))

    points = one(ax, "posterior-mean")
    np.testing.assert_allclose(points.get_xdata(), mean[order], rtol=1e-12)
    seg = segments(one(ax, "posterior-interval"))
    np.testing.assert_allclose(seg[:, 0], lo[order], rtol=1e-12)
    np.testing.assert_allclose(seg[:, 2], hi[order], rtol=1e-12)
    np.testing.assert_allclose(seg[:, 1], points.get_ydata())

    # the bootstrap twin of the population estimand resamples tasks; its estimate is the mean
    # of the per-task unbiased pass@2 = 1 - C(n-c, 2)/C(n, 2)
    c, n = COUNTS, TRIALS
    unbiased = 1 - (n - c) * (n - c - 1) / (n * (n - 1))
    boot = be.bootstrap.pass_at_k(data, k=2, unit="task", n_boot=400, seed=4, ci_prob=0.9)
    estimate = one(ax, "bootstrap-estimate")
    np.testing.assert_allclose(estimate.get_xdata(), unbiased.mean(axis=1)[order], rtol=1e-12)
    seg = segments(one(ax, "bootstrap-interval"))
    interval = boot["interval"].transpose("system", "ci_bound").values
    np.testing.assert_allclose(seg[:, [0, 2]], interval[order], rtol=1e-12)
    # the twin sits beside the posterior, below it within each row
    assert np.all(estimate.get_ydata() < points.get_ydata())
    assert np.all(np.abs(estimate.get_ydata() - np.arange(3)) < 0.5)
    assert "pass@2" in ax.get_title() and "task bootstrap" in ax.get_title()
    assert ax.get_xlabel() == "pass@2"


def test_forest_without_bootstrap_draws_the_summary(res):
    _fig, ax = plots.plot_forest(res, metric="pass^k", k=3, estimand="tasks", bootstrap=False)
    draws = res.pass_hat_k(k=3, estimand="tasks")
    mean = draws.mean(SAMPLE).values
    lo, hi = eti(draws)
    order = np.argsort(mean)
    np.testing.assert_allclose(one(ax, "posterior-mean").get_xdata(), mean[order])
    seg = segments(one(ax, "posterior-interval"))
    np.testing.assert_allclose(seg[:, [0, 2]], np.stack([lo, hi], 1)[order])
    assert not [a for a in ax.get_children() if str(a.get_gid()).startswith("bootstrap")]
    assert "bootstrap" not in ax.get_title()


def test_forest_draws_both_missing_bounds(tb_res, tb_data):
    _fig, ax = plots.plot_forest(tb_res, n_boot=300, seed=1)
    draws = tb_res.pass_at_k(k=1)
    means = draws.mean(SAMPLE)
    order = np.argsort(means.mean("missing_bound").values)
    short = plots.short_names(TB_SYSTEMS)  # what the three share is left out
    assert [t.get_text() for t in ax.get_yticklabels()] == [short[i] for i in order]
    assert short == ["openhands", "swe-agent-mini", "droid"]
    ok = tb_data.ok_successes().values
    planned = tb_data.dataset["trials"].values
    for bound in ("lower", "upper"):
        sel = draws.sel(missing_bound=bound)
        lo, hi = eti(sel)
        np.testing.assert_allclose(
            one(ax, f"posterior-mean-{bound}").get_xdata(), sel.mean(SAMPLE).values[order]
        )
        seg = segments(one(ax, f"posterior-interval-{bound}"))
        np.testing.assert_allclose(seg[:, [0, 2]], np.stack([lo, hi], 1)[order])
        # lower bound: missing outcomes as failures; upper: as successes
        c = (
            ok
            if bound == "lower"
            else planned - (tb_data.dataset["status_counts"].sel(status="ok").values - ok)
        )
        np.testing.assert_allclose(
            one(ax, f"bootstrap-estimate-{bound}").get_xdata(), (c / planned).mean(axis=1)[order]
        )
        assert one(ax, f"bootstrap-estimate-{bound}").get_marker() == (
            "v" if bound == "lower" else "^"
        )
    assert (
        one(ax, "posterior-mean-lower").get_xdata() <= one(ax, "posterior-mean-upper").get_xdata()
    ).all()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("missing as failures" in t for t in legend)
    assert any("missing as successes" in t for t in legend)


def test_forest_without_bootstrap_draws_both_missing_bounds(tb_res):
    _fig, ax = plots.plot_forest(tb_res, estimand="tasks", bootstrap=False)
    draws = tb_res.pass_at_k(k=1, estimand="tasks")
    order = np.argsort(draws.mean(SAMPLE).mean("missing_bound").values)
    for bound in ("lower", "upper"):
        sel = draws.sel(missing_bound=bound)
        np.testing.assert_allclose(
            one(ax, f"posterior-mean-{bound}").get_xdata(), sel.mean(SAMPLE).values[order]
        )
        lo, hi = eti(sel)
        seg = segments(one(ax, f"posterior-interval-{bound}"))
        np.testing.assert_allclose(seg[:, [0, 2]], np.stack([lo, hi], 1)[order])


# -- pass@k over k -----------------------------------------------------------------------------
def test_pass_at_k_curves_and_bands(res):
    ks = [1, 2, 4, 8]
    _fig, ax = plots.plot_pass_at_k(res, k=ks, systems=["C", "A"], ci_prob=0.8)
    draws = res.pass_at_k(k=ks)
    for system in ("C", "A"):
        one_system = draws.sel(system=system)
        line = one(ax, f"mean:{system}")
        np.testing.assert_array_equal(line.get_xdata(), ks)
        np.testing.assert_allclose(line.get_ydata(), one_system.mean(SAMPLE).values)
        assert line.get_label() == system
        lo, hi = eti(one_system, 0.8)
        vertices = one(ax, f"band:{system}").get_paths()[0].vertices
        for i, kk in enumerate(ks):
            ys = vertices[np.isclose(vertices[:, 0], kk), 1]
            np.testing.assert_allclose([ys.min(), ys.max()], [lo[i], hi[i]])
    assert not [a for a in ax.get_children() if a.get_gid() == "mean:B"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["C", "A"]
    assert not [a for a in ax.get_children() if a.get_gid() == "extrapolated"]


def test_pass_hat_k_tasks_estimand_and_unsorted_k(res):
    _fig, ax = plots.plot_pass_at_k(
        res, k=range(3, 0, -1), metric="pass^k", estimand="tasks", systems="B"
    )
    draws = res.pass_hat_k(k=[1, 2, 3], estimand="tasks").sel(system="B")
    line = one(ax, "mean:B")
    np.testing.assert_array_equal(line.get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(line.get_ydata(), draws.mean(SAMPLE).values)
    assert ax.get_ylabel() == "pass^k"


def test_pass_at_k_beyond_the_trials_warns_and_shades(res):
    with pytest.warns(BayevalWarning, match="k=12 goes beyond the 10 trial"):
        _fig, ax = plots.plot_pass_at_k(res, k=range(1, 13), estimand="tasks")
    span = one(ax, "extrapolated")
    if hasattr(span, "get_width"):  # a Rectangle (matplotlib >= 3.9)
        xs = np.array([span.get_x(), span.get_x() + span.get_width()])
    else:
        xs = np.asarray(span.get_xy())[:, 0]
    assert xs.min() == pytest.approx(10.5) and xs.max() == pytest.approx(12.5)
    # the extrapolated values are drawn as the model gives them
    with pytest.warns(BayevalWarning):
        draws = res.pass_at_k(k=list(range(1, 13)), estimand="tasks").sel(system="A")
    np.testing.assert_allclose(one(ax, "mean:A").get_ydata(), draws.mean(SAMPLE).values)


def test_pass_at_k_with_missing_bounds(tb_res):
    _fig, ax = plots.plot_pass_at_k(tb_res, k=range(1, 6), systems=TB_SYSTEMS[1])
    draws = tb_res.pass_at_k(k=[1, 2, 3, 4, 5]).sel(system=TB_SYSTEMS[1])
    for bound, style in (("lower", "--"), ("upper", ":")):
        line = one(ax, f"mean:{TB_SYSTEMS[1]}:{bound}")
        np.testing.assert_allclose(
            line.get_ydata(), draws.sel(missing_bound=bound).mean(SAMPLE).values
        )
        assert line.get_linestyle() == style
        assert "missing as" in line.get_label()
    # one band per system: from the lower bound's lower end to the upper bound's upper end
    lo, hi = eti(draws)  # (missing_bound, k)
    bounds = draws["missing_bound"].values.tolist()
    vertices = one(ax, f"band:{TB_SYSTEMS[1]}").get_paths()[0].vertices
    for i, kk in enumerate(range(1, 6)):
        ys = vertices[np.isclose(vertices[:, 0], kk), 1]
        want = [lo[bounds.index("lower"), i], hi[bounds.index("upper"), i]]
        np.testing.assert_allclose([ys.min(), ys.max()], want)


def test_pass_at_k_panels_on_terminal_bench_with_bounds():
    data = be.datasets.load("terminal_bench", missing="bounds")
    res = fake_results(data, model="hierarchical", draws=100, chains=2, seed=2)
    order = list(reversed(data.systems))
    fig, axes = plots.plot_pass_at_k(res, k=range(1, 6), systems=order)
    assert len(axes) == 13 and len(fig.axes) == 13  # the grid's spare cells removed
    names = plots.short_names(data.systems)
    short = dict(zip(data.systems, names, strict=True))
    draws = res.pass_at_k(k=[1, 2, 3, 4, 5])
    for panel, system in zip(axes, order, strict=True):
        assert panel.get_title() == short[system]  # in the order given
        for bound in ("lower", "upper"):
            line = one(panel, f"mean:{system}:{bound}")
            want = draws.sel(system=system, missing_bound=bound).mean(SAMPLE).values
            np.testing.assert_allclose(line.get_ydata(), want)
        assert len([a for a in panel.get_children() if a.get_gid() == f"band:{system}"]) == 1
    _fig, ax = plots.plot_pass_at_k(res, k=[1, 2], panels=False)
    assert len([a for a in ax.get_children() if str(a.get_gid()).startswith("band:")]) == 13
    with pytest.raises(ValueError, match="panels must be"):
        plots.plot_pass_at_k(res, k=[1, 2], panels="yes")


# -- paired effect -----------------------------------------------------------------------------
def test_effect_density_interval_and_probabilities(res):
    margin = 0.05
    _fig, ax = plots.plot_effect(res, "B", "C", k=2, margin=margin, ci_prob=0.9)
    draws = res.pass_at_k(k=2)
    effect = draws.sel(system="B") - draws.sel(system="C")
    values = effect.values.ravel()
    lo, hi = np.quantile(values, [0.05, 0.95])
    interval = one(ax, "credible_interval")
    np.testing.assert_allclose(interval.get_xdata(), [lo, hi])
    centre = one(ax, "point_estimate").get_offsets()[0, 0]
    assert centre == pytest.approx(values.mean())
    density = one(ax, "dist")
    x, y = density.get_xdata(), density.get_ydata()
    assert x.min() <= np.quantile(values, 0.01) and x.max() >= np.quantile(values, 0.99)
    assert np.trapezoid(y, x) == pytest.approx(1.0, abs=0.05)
    assert x[np.argmax(y)] == pytest.approx(np.median(values), abs=3 * values.std())

    np.testing.assert_allclose(one(ax, "zero").get_xdata(), [0, 0])
    np.testing.assert_allclose(one(ax, "margin").get_xdata(), [-margin, -margin])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0] == f"P(effect > 0) = {(values > 0).mean():.2f}"
    assert legend[1] == f"P(effect > -0.05) = {(values > -margin).mean():.2f} (non-inferior)"
    title = ax.get_title()
    assert title.startswith("B - C\npass@2")
    assert f"P(effect > 0.05) = {(values > margin).mean():.2f}" in title
    assert ax.get_xlabel() == "effect on pass@2"


def test_effect_of_partial_credit_scores_reads_mean_score():
    data = be.testing.fake_data(scores=True, systems=["A", "B"], seed=3)
    res = fake_results(data, model="zoib", draws=200, chains=2, seed=1)
    _fig, ax = plots.plot_effect(res, "B", "A", metric="mean")
    assert ax.get_xlabel() == "effect on mean score"
    assert "mean score, estimand='population'" in " ".join(ax.get_title().split())
    assert "mea1" not in ax.get_title() + ax.get_xlabel()


def test_task_rates_of_scores_count_the_tasks_mean_scores():
    """The raw count of a partial-credit fit compares each task's mean score, not the
    attempts with full credit (the success column)."""
    data = be.testing.fake_data(scores=True, systems=["A", "B"], trials=4, seed=3)
    res = fake_results(data, model="zoib", draws=200, chains=2, seed=1)
    _fig, ax = plots.plot_task_rates(res, "B", "A")
    stats = data.score_statistics()
    mean = (stats["sum"] / stats["trials"]).transpose("system", "task").values  # A, B
    higher, lower = int((mean[1] > mean[0]).sum()), int((mean[1] < mean[0]).sum())
    title = " ".join(ax.get_title().split())
    assert title.endswith(f"raw mean scores: {higher} task(s) higher, {lower} lower")
    full = data.dataset["successes"].transpose("system", "task").values
    assert (higher, lower) != (int((full[1] > full[0]).sum()), int((full[1] < full[0]).sum()))


def test_effect_without_margin_has_no_margin_line(res):
    _fig, ax = plots.plot_effect(res, "A", "C", metric="pass^k", estimand="tasks")
    assert not [a for a in ax.get_children() if a.get_gid() == "margin"]
    draws = res.pass_hat_k(k=1, estimand="tasks")
    values = (draws.sel(system="A") - draws.sel(system="C")).values.ravel()
    np.testing.assert_allclose(
        one(ax, "credible_interval").get_xdata(), np.quantile(values, [0.025, 0.975])
    )
    assert "P(effect > 0)" in ax.get_legend().get_texts()[0].get_text()


def test_effect_with_missing_bounds_draws_the_crossed_bounds(tb_res):
    cand, base = TB_SYSTEMS[0], TB_SYSTEMS[1]
    _fig, ax = plots.plot_effect(tb_res, cand, base, margin=0.02)
    draws = tb_res.pass_at_k(k=1)
    crossed = {
        "lower": draws.sel(system=cand, missing_bound="lower")
        - draws.sel(system=base, missing_bound="upper"),
        "upper": draws.sel(system=cand, missing_bound="upper")
        - draws.sel(system=base, missing_bound="lower"),
    }
    colours = set()
    for bound, effect in crossed.items():
        values = effect.values.ravel()
        np.testing.assert_allclose(
            one(ax, f"credible_interval-{bound}").get_xdata(), np.quantile(values, [0.025, 0.975])
        )
        density = one(ax, f"dist-{bound}")
        colours.add(density.get_color())
        assert np.trapezoid(density.get_ydata(), density.get_xdata()) == pytest.approx(
            1.0, abs=0.05
        )
    assert len(colours) == 2
    legend = ax.get_legend().get_texts()[0].get_text()
    p = {b: (e.values > 0).mean() for b, e in crossed.items()}
    assert legend == f"P(effect > 0) = {p['lower']:.2f} (lower) / {p['upper']:.2f} (upper)"


# -- per-task rates ----------------------------------------------------------------------------
def test_task_rates_sorted_with_intervals_and_moves(moves):
    _fig, ax = plots.plot_task_rates(moves, "B", "A", ci_prob=0.9)
    rates = moves.task_rates()
    base, cand = rates.sel(system="A"), rates.sel(system="B")
    base_mean = base.mean(SAMPLE).values
    order = np.argsort(base_mean, kind="stable")
    tasks = rates["task"].values
    assert [t.get_text() for t in ax.get_xticklabels()] == list(tasks[order])
    for system, draws in (("A", base), ("B", cand)):
        points = one(ax, f"mean:{system}")
        np.testing.assert_allclose(points.get_ydata(), draws.mean(SAMPLE).values[order])
        lo, hi = eti(draws, 0.9)
        seg = segments(one(ax, f"interval:{system}"))
        np.testing.assert_allclose(seg[:, 1], lo[order])
        np.testing.assert_allclose(seg[:, 3], hi[order])
        np.testing.assert_allclose(seg[:, 0], points.get_xdata())
    prob = (cand > base).mean(SAMPLE).values
    gained = [p.get_x() + p.get_width() / 2 for p in ax.patches if p.get_gid() == "gain"]
    lost = [p.get_x() + p.get_width() / 2 for p in ax.patches if p.get_gid() == "loss"]
    position = {task: i for i, task in enumerate(tasks[order])}
    assert sorted(gained) == sorted(position[t] for t in tasks[prob > 0.9])
    assert sorted(lost) == sorted(position[t] for t in tasks[prob < 0.1])
    assert {"t0", "t1"} <= set(tasks[prob > 0.9]) and "t4" in tasks[prob < 0.1]
    assert (
        ax.get_title()
        .splitlines()[0]
        .startswith(f"B vs A: {(prob > 0.9).sum()} task(s) gained, {(prob < 0.1).sum()} lost")
    )


def test_task_rates_with_missing_bounds(tb_res):
    cand, base = TB_SYSTEMS[2], TB_SYSTEMS[1]
    _fig, ax = plots.plot_task_rates(tb_res, cand, base, kind="tasks")
    rates = tb_res.task_rates()
    order = np.argsort(
        rates.sel(system=base).mean(SAMPLE).mean("missing_bound").values, kind="stable"
    )
    for system in (cand, base):
        for bound in ("lower", "upper"):
            draws = rates.sel(system=system, missing_bound=bound)
            points = one(ax, f"mean:{system}:{bound}")
            np.testing.assert_allclose(points.get_ydata(), draws.mean(SAMPLE).values[order])
            assert points.get_marker() == ("v" if bound == "lower" else "^")
    # a gain must hold with the candidate's missing as failures and the baseline's as successes
    gain = (
        rates.sel(system=cand, missing_bound="lower")
        > rates.sel(system=base, missing_bound="upper")
    ).mean(SAMPLE).values > 0.9
    loss = (
        rates.sel(system=cand, missing_bound="upper")
        > rates.sel(system=base, missing_bound="lower")
    ).mean(SAMPLE).values < 0.1
    rank = np.empty(len(order), dtype=int)
    rank[order] = np.arange(len(order))
    gained = sorted(p.get_x() + p.get_width() / 2 for p in ax.patches if p.get_gid() == "gain")
    lost = sorted(p.get_x() + p.get_width() / 2 for p in ax.patches if p.get_gid() == "loss")
    assert gained == sorted(rank[gain]) and lost == sorted(rank[loss])
    assert gain.any()


def test_task_rates_leave_tasks_without_a_valid_trial_empty():
    df = pd.DataFrame(
        {
            "system": ["A"] * 6 + ["B"] * 6,
            "task": ["t1", "t1", "t2", "t2", "t3", "t3"] * 2,
            "success": [1, 0, 0, 1, 1, 1, 1, 1, np.nan, np.nan, 0, 1],
            "status": ["ok"] * 8 + ["error", "error", "ok", "ok"],
        }
    )
    data = be.from_frame(df, status="status", missing="exclude")
    res = fake_results(data, model="beta_binomial", draws=100, chains=2, seed=0)
    _fig, ax = plots.plot_task_rates(res, "B", "A")
    order = np.argsort(res.task_rates().sel(system="A").mean(SAMPLE).values, kind="stable")
    tasks = [t.get_text() for t in ax.get_xticklabels()]
    assert tasks == list(res.data.tasks[order])
    drawn = one(ax, "mean:B").get_ydata()
    assert np.isnan(drawn[tasks.index("t2")])
    assert np.isfinite(np.delete(drawn, tasks.index("t2"))).all()
    assert not [p for p in ax.patches if p.get_gid() in ("gain", "loss")]


# -- posterior predictive check ----------------------------------------------------------------
def test_ppc_one_panel_per_system(res):
    fig, axes = plots.plot_ppc(res)
    assert isinstance(axes, np.ndarray) and len(axes) == 3
    assert all(isinstance(a, Axes) and a.figure is fig for a in axes)
    assert len(fig.axes) == 3  # no empty panels left over
    pred = res.tree["posterior_predictive_stats"]["count_histogram"]
    for ax, system, counts in zip(axes, SYSTEMS, COUNTS, strict=True):
        heights = [p.get_height() for p in ax.patches if p.get_gid() == f"observed:{system}"]
        np.testing.assert_array_equal(heights, np.bincount(counts, minlength=TRIALS + 1))
        draws = pred.sel(system=system)
        points = one(ax, f"predicted:{system}")
        np.testing.assert_array_equal(points.get_xdata(), np.arange(TRIALS + 1))
        np.testing.assert_allclose(points.get_ydata(), draws.mean(SAMPLE).values)
        lo, hi = eti(draws)
        seg = segments(one(ax, f"interval:{system}"))
        np.testing.assert_allclose(seg[:, [1, 3]], np.stack([lo, hi], 1))
        extreme = ((counts == 0) | (counts == TRIALS)).mean()
        title = ax.get_title().splitlines()
        assert title[0] == system
        assert title[1].startswith(f"always/never solved {extreme:.2f}, predicted ")


def test_ppc_axes_given_and_single_system(res):
    fig, grid = plt.subplots(2, 2)
    out_fig, axes = plots.plot_ppc(res, system=["C", "A"], ax=grid[0])
    assert out_fig is fig and list(axes) == list(grid[0])
    assert axes[0].get_title().startswith("C")
    assert not grid[1, 0].has_data()
    fig, ax = plots.plot_ppc(res, system="B")
    assert isinstance(ax, Axes)
    fig, axes = plots.plot_ppc(res, system=["B"])
    assert isinstance(axes, np.ndarray) and len(axes) == 1
    with pytest.raises(ValueError, match=r"one matplotlib Axes per system drawn \(3\); got 2"):
        plots.plot_ppc(res, ax=grid[0])
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes, a sequence of Axes"):
        plots.plot_ppc(res, ax=[grid[0, 0], "panel", grid[1, 1]])


def test_ppc_with_missing_bounds(tb_res, tb_data):
    _fig, ax = plots.plot_ppc(tb_res, system=TB_SYSTEMS[1])
    ok = tb_data.ok_successes().sel(system=TB_SYSTEMS[1]).values
    missing = (
        (tb_data.dataset["trials"] - tb_data.dataset["status_counts"].sel(status="ok"))
        .sel(system=TB_SYSTEMS[1])
        .values
    )
    for bound, counts in (("lower", ok), ("upper", ok + missing)):
        bars = [p for p in ax.patches if p.get_gid() == f"observed:{TB_SYSTEMS[1]}:{bound}"]
        np.testing.assert_array_equal(
            [p.get_height() for p in bars], np.bincount(counts, minlength=6)
        )
        assert all((p.get_hatch() == "//") == (bound == "upper") for p in bars)
    assert "lower: always/never solved" in ax.get_title()
    assert "upper: always/never solved" in ax.get_title()


def test_ppc_needs_a_population_model(moves):
    with pytest.raises(ValueError, match="no population to check"):
        plots.plot_ppc(moves)


# -- statuses ----------------------------------------------------------------------------------
def test_status_bars_and_coverage():
    df = pd.DataFrame(
        {
            "system": ["A"] * 6 + ["B"] * 5,
            "task": ["t1", "t1", "t1", "t2", "t2", "t3", "t1", "t1", "t1", "t2", "t2"],
            "success": [1, 0, 1, 0, np.nan, 1, 1, 1, 1, np.nan, 0],
            "status": ["ok", "ok", "ok", "ok", "timeout", "ok", "ok", "ok", "ok", "error", "ok"],
        }
    )
    data = be.from_frame(df, status="status", missing="exclude")
    _fig, ax = plots.plot_status(data)
    # B never ran t3: one planned attempt (t3's usual count) is not_run
    expected = {"ok": [5, 4], "timeout": [1, 0], "error": [0, 1], "not_run": [0, 1]}
    drawn = {}
    for patch in ax.patches:
        drawn.setdefault(patch.get_gid().split(":")[1], []).append(patch)
    assert sorted(drawn) == sorted(expected)
    left = np.zeros(2)
    for status in be.STATUSES:  # stacked in status order
        if status not in expected:
            continue
        widths = [p.get_width() for p in drawn[status]]
        np.testing.assert_array_equal(widths, expected[status])
        np.testing.assert_array_equal([p.get_x() for p in drawn[status]], left)
        left += widths
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A", "B"]
    assert [t.get_text() for t in ax.texts] == [f"coverage {5 / 6:.1%}", f"coverage {4 / 6:.1%}"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(expected)
    assert "exclude" in ax.get_title()


def test_forest_ranks_and_status_follow_a_given_order(res, data):
    order = ["C", "A", "B"]  # not by the means: the report's one order, whatever it is
    _fig, ax = plots.plot_forest(res, bootstrap=False, order=order)
    assert [t.get_text() for t in ax.get_yticklabels()][::-1] == order  # top row first
    _fig, ax = plots.plot_ranks(res, order=order)
    assert [t.get_text().split()[0] for t in ax.get_yticklabels()][::-1] == order
    _fig, ax = plots.plot_status(data, systems=["B", "C"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["B", "C"]  # first at the top
    with pytest.raises(ValueError, match="order must name every system once; missing"):
        plots.plot_forest(res, bootstrap=False, order=["A", "B"])


def test_status_of_results_and_of_real_data(tb_res, tb_data):
    _fig, ax = plots.plot_status(tb_res)
    counts = tb_data.status_counts
    for status in counts.columns:
        widths = [p.get_width() for p in ax.patches if p.get_gid() == f"status:{status}"]
        if counts[status].sum() == 0 and status != "ok":
            assert not widths
        else:
            np.testing.assert_array_equal(widths, counts[status].reindex(TB_SYSTEMS).values)
    raw = be.datasets.frame("terminal_bench")
    assert (
        counts.sum(axis=1)
        == raw[raw["system"].isin(TB_SYSTEMS)].groupby("system").size().reindex(TB_SYSTEMS)
    ).all()


# -- nothing is mutated ------------------------------------------------------------------------
def test_plots_leave_results_unchanged(res):
    before = res.tree
    plots.plot_forest(res, n_boot=100)
    plots.plot_effect(res, "A", "B")
    plots.plot_task_rates(res, "A", "B")
    plots.plot_ppc(res)
    assert res.tree.identical(before)
