"""Plots of an item response theory fit at 2, 13 and 45 systems (and 1,000 items): the
drawn numbers against the posterior draws, the layout inside the figure, the item limits."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from scipy import special  # noqa: E402

import bayeval as be  # noqa: E402
from bayeval import plots  # noqa: E402
from bayeval.testing import fake_data, fake_results  # noqa: E402

SIZES = [(2, 12), (13, 60), (45, 1000)]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module", params=SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
def calibration(request):
    """A fake IRT fit (no sampler) of ``S`` systems with long names on ``J`` items."""
    S, J = request.param
    rng = np.random.default_rng(S)
    rates = np.clip(np.linspace(0.15, 0.85, S)[:, None] + rng.normal(0, 0.2, (S, J)), 0.01, 0.99)
    names = [f"2025{s:04d}_harness-v1.2_model-family-{s}-instruct-long-name" for s in range(S)]
    data = fake_data(rates, systems=names, seed=S)
    return fake_results(data, model="irt", draws=100, chains=2, seed=0)


def outside(fig) -> list[str]:
    """The drawn texts that stick out of the figure.

    A tick beyond the view limits keeps a positioned label that is never drawn: only the
    labels of the ticks in view count.
    """
    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            span = (high - low) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low - span <= tick.get_loc() <= high + span:
                    hidden.update((id(tick.label1), id(tick.label2)))
    found = []
    for text in fig.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or id(text) in hidden:
            continue
        ext = text.get_window_extent(renderer)
        if ext.x0 < box.x0 - 1 or ext.x1 > box.x1 + 1 or ext.y0 < box.y0 - 1 or ext.y1 > box.y1 + 1:
            found.append(text.get_text())
    return found


def draws(res, name) -> np.ndarray:
    """(sample, ...) posterior draws of a parameter, straight from the tree."""
    return res.tree["posterior"][name].stack(s=("chain", "draw")).transpose("s", ...).values


def test_item_curves_are_the_posterior_mean_of_the_2pl_rate(calibration, tmp_path):
    res = calibration
    fig, ax = plots.plot_item_curves(res)
    fig.savefig(tmp_path / "curves.png")
    assert outside(fig) == []
    curves = [line for line in ax.get_lines() if str(line.get_gid()).startswith("item-curve")]
    J = res.tree["posterior"].sizes["task"]
    assert len(curves) == min(J, plots.ITEM_CURVES_MAX)
    tasks = res.tree["posterior"]["task"].values.tolist()
    a, b = draws(res, "a"), draws(res, "b")
    for line in curves:
        j = tasks.index(line.get_label())
        x, y = line.get_data()
        expected = special.expit(a[:, j, None] * (x - b[:, j, None])).mean(axis=0)
        np.testing.assert_allclose(y, expected, rtol=1e-10)
    if J > plots.ITEM_CURVES_MAX:  # the easiest and the hardest item are among those spread
        order = np.argsort(b.mean(axis=0), kind="stable")
        drawn = [line.get_label() for line in curves]
        assert drawn[0] == tasks[order[0]] and drawn[-1] == tasks[order[-1]]
        assert f"{plots.ITEM_CURVES_MAX} of {J} items" in ax.get_title()


def test_test_information_adds_every_item_up(calibration, tmp_path):
    res = calibration
    chosen = be.irt.select(res, 10)
    fig, ax = plots.plot_item_information(res, items=chosen)
    fig.savefig(tmp_path / "information.png")
    assert outside(fig) == []
    lines = {line.get_gid(): line for line in ax.get_lines()}
    a, b, tasks = draws(res, "a"), draws(res, "b"), res.tree["posterior"]["task"].values.tolist()
    x, y = lines["test-information"].get_data()
    theta = x[::20]  # a few abilities: 1,000 items x 200 draws each
    p = special.expit(a[:, :, None] * (theta - b[:, :, None]))
    per_item = (a[:, :, None] ** 2 * p * (1 - p)).mean(axis=0)
    np.testing.assert_allclose(y[::20], per_item.sum(axis=0), rtol=1e-9)
    index = [tasks.index(t) for t in chosen["item"].values.tolist()]
    np.testing.assert_allclose(
        lines["subset-information"].get_data()[1][::20], per_item[index].sum(axis=0), rtol=1e-9
    )
    fig, ax = plots.plot_item_information(res, kind="items")
    assert outside(fig) == []
    assert sum(str(g.get_gid()).startswith("item-information") for g in ax.get_lines()) == min(
        len(tasks), plots.ITEM_CURVES_MAX
    )


def test_abilities_are_sorted_with_their_intervals(calibration, tmp_path):
    res = calibration
    fig, ax = plots.plot_abilities(res)
    fig.savefig(tmp_path / "abilities.png")
    assert outside(fig) == []
    theta = draws(res, "theta")
    order = np.argsort(theta.mean(axis=0), kind="stable")  # drawn bottom up
    names = dict(zip(res.systems, plots.short_names(res.systems), strict=True))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [names[res.systems[j]] for j in order]
    (lines,) = [c for c in ax.collections if c.get_gid() == "ability-interval-calibrated"]
    segments = np.array([seg[:, 0] for seg in lines.get_segments()])
    expected = np.quantile(theta[:, order], [0.025, 0.975], axis=0).T
    np.testing.assert_allclose(segments, expected, rtol=1e-9)


def test_systems_scored_on_a_subset_join_the_forest(calibration):
    res = calibration
    tasks = res.tree["posterior"]["task"].values[:8].tolist()
    new = be.from_counts([[3, 4, 1, 4, 2, 4, 4, 0]], trials=4, tasks=tasks, systems=["NEW"])
    scored = be.irt.score(new, items=res)
    fig, ax = plots.plot_abilities(res, scored=scored)
    assert outside(fig) == []
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "NEW (8 items)" in labels and len(labels) == len(res.systems) + 1
    (point,) = [line for line in ax.get_lines() if line.get_gid() == "ability-mean-scored"]
    assert point.get_xdata()[0] == pytest.approx(float(scored["theta_mean"].item()))
    with pytest.raises(ValueError, match="score with the same ci_prob"):
        plots.plot_abilities(res, scored=scored, ci_prob=0.9)


def test_too_many_or_unknown_items_are_refused_with_what_to_do():
    res = fake_results(model="irt", draws=50)
    tasks = res.tree["posterior"]["task"].values.tolist()
    with pytest.raises(ValueError, match=r"10 items asked for.*max_items=8.*kind='test'"):
        plots.plot_item_curves(res, items=tasks[:10])
    fig, ax = plots.plot_item_curves(res, items=tasks[:10], max_items=10)
    assert len(ax.get_legend_handles_labels()[1]) == 11  # ten items and the abilities' ticks
    with pytest.raises(ValueError, match=r"items: \['nope'\] are not items"):
        plots.plot_item_information(res, items=["nope"], kind="items")
    with pytest.raises(ValueError, match="kind must be one of"):
        plots.plot_item_information(res, kind="every")
    with pytest.raises(ValueError, match="must not repeat"):
        plots.plot_item_curves(res, items=[tasks[0], tasks[0]])
    with pytest.raises(ValueError, match="model='irt'.*'hierarchical'"):
        plots.plot_abilities(fake_results(draws=50))
