"""Plots of an item response theory fit (``model="irt"``): items and abilities.

Each item's characteristic curve with its posterior band (:func:`plot_item_curves`), the
information items give over the ability scale (:func:`plot_item_information`) and the
systems' abilities (:func:`plot_abilities`). They draw :meth:`Results.items` and
:meth:`Results.abilities` (and :func:`bayeval.irt.score` for systems scored on a subset).

A benchmark has hundreds of items: curves are drawn for at most ``max_items`` items (by
default that many spread over the difficulty range, said in the title), while the test
information adds up every item.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special

from bayeval._validate import describe_values, validate_choice, validate_positive_int
from bayeval.plots._base import (
    _check_results,
    _legend,
    _mpl,
    _single_ax,
    _text_inches,
    _title,
)
from bayeval.plots.style import _names, palette, short_names

__all__ = [
    "INFORMATION_KINDS",
    "ITEM_CURVES_MAX",
    "plot_abilities",
    "plot_item_curves",
    "plot_item_information",
]

#: The most item curves one plot draws by default (more are asked for with ``max_items``).
ITEM_CURVES_MAX = 8
#: What :func:`plot_item_information` draws: the test's total or each chosen item's.
INFORMATION_KINDS = ("test", "items")
#: Posterior draws the curves' bands are read from (evenly spaced over the chains' draws).
_BAND_DRAWS = 400
#: Points of the ability grid.
_GRID_POINTS = 121


def _check_irt(results) -> None:
    _check_results(results)
    if results.model != "irt":
        raise ValueError(
            f"this plot reads an item response theory fit (be.fit(data, model='irt')); "
            f"these results are of model {results.model!r}"
        )


def _grid(results, theta) -> np.ndarray:
    """The abilities drawn over: ``theta`` as given, or -3..3 widened to every system's mean."""
    if theta is not None:
        grid = np.asarray(theta, dtype=float)
        if grid.ndim != 1 or grid.size < 2 or not np.isfinite(grid).all():
            raise ValueError(
                f"theta must be a 1-D array of at least two finite abilities; got {theta!r}"
            )
        return np.sort(grid)
    means = results.tree["posterior"]["theta"].mean(("chain", "draw")).values
    low = min(-3.0, float(means.min()) - 0.5)
    high = max(3.0, float(means.max()) + 0.5)
    return np.linspace(low, high, _GRID_POINTS)


def _chosen_items(labels: list, items, max_items, b_mean: np.ndarray) -> tuple[list[int], str]:
    """Indices of the items to draw (easiest first) and how they were chosen, in words.

    ``items``: None (all, or ``max_items`` spread over the difficulty ranks when there are
    more), a label, a sequence of labels or :func:`bayeval.irt.select`'s Dataset.
    """
    max_items = validate_positive_int("max_items", max_items)
    by_difficulty = list(np.argsort(b_mean, kind="stable"))
    if items is None:
        if len(labels) <= max_items:
            return by_difficulty, f"all {len(labels)} items"
        ranks = np.unique(np.linspace(0, len(labels) - 1, max_items).round().astype(int))
        return (
            [by_difficulty[r] for r in ranks],
            f"{len(ranks)} of {len(labels)} items, spread over the difficulty range",
        )
    if isinstance(items, xr.Dataset):  # be.irt.select's output
        if "item" not in items.coords:
            raise ValueError("items: a Dataset must have an 'item' coordinate (be.irt.select)")
        items = items["item"].values.tolist()
    chosen = [items] if np.ndim(items) == 0 else list(items)
    if not chosen:
        raise ValueError("items must name at least one item; got an empty sequence")
    position = {label: j for j, label in enumerate(labels)}
    unknown = [label for label in chosen if label not in position]
    if unknown:
        raise ValueError(
            f"items: {describe_values(unknown)} are not items of these results; items: "
            f"{describe_values(labels)}"
        )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"items must not repeat an item; got {describe_values(chosen)}")
    if len(chosen) > max_items:
        raise ValueError(
            f"items: {len(chosen)} items asked for, and one plot draws at most "
            f"max_items={max_items} curves readably; pass fewer items, raise max_items, or "
            "draw every item's information at once with plot_item_information(kind='test')"
        )
    index = sorted((position[label] for label in chosen), key=lambda j: b_mean[j])
    return index, f"{len(index)} chosen item{'s' if len(index) != 1 else ''}"


def _thinned(draws: xr.DataArray) -> np.ndarray:
    """(draw, task) values of at most ``_BAND_DRAWS`` draws, evenly spaced."""
    flat = draws.stack(sample=("chain", "draw")).transpose("sample", "task").values
    keep = np.unique(np.linspace(0, flat.shape[0] - 1, _BAND_DRAWS).round().astype(int))
    return flat[keep]


def _ability_rug(ax, results, label: str = "systems' abilities (posterior means)") -> None:
    """Ticks at the bottom of the Axes at each calibrated system's mean ability."""
    means = results.tree["posterior"]["theta"].mean(("chain", "draw")).values
    (rug,) = ax.plot(
        means,
        np.zeros_like(means),
        linestyle="none",
        marker="|",
        markersize=10,
        color="0.3",
        transform=ax.get_xaxis_transform(),
        clip_on=False,
        label=label,
    )
    rug.set_gid("ability-rug")


def _item_names(labels: list, index: list[int], shorten: bool) -> list[str]:
    printed = [str(labels[j]) for j in index]
    return short_names(printed, max_length=28) if shorten else printed


def plot_item_curves(
    results,
    items=None,
    *,
    max_items: int = ITEM_CURVES_MAX,
    ci_prob: float = 0.95,
    theta=None,
    ax=None,
    shorten: bool = True,
):
    """Item characteristic curves: P(success of one attempt) over ability, with bands.

    Each chosen item's curve ``expit(a (theta - b))`` at the posterior draws of its
    difficulty ``b`` and discrimination ``a`` (:meth:`Results.items`; at most 400 draws,
    evenly spaced over the chains): the posterior mean curve and its pointwise ``ci_prob``
    band. Ticks at the bottom mark the calibrated
    systems' mean abilities.

    Parameters
    ----------
    results : Results
        A fit of ``model="irt"``.
    items : label, sequence of labels or xarray.Dataset, optional
        The items to draw (at most ``max_items``; :func:`bayeval.irt.select`'s output is
        read too). Default: every item when there are at most ``max_items``, otherwise
        ``max_items`` items spread evenly over the difficulty ranks.
    max_items : int, default :data:`ITEM_CURVES_MAX`
        The most curves drawn; more items asked for is a ValueError that says so.
    ci_prob : float, default 0.95
    theta : array_like, optional
        The abilities drawn over (default -3 to 3, widened to every system's mean).
    ax : matplotlib Axes, optional
    shorten : bool, default True
        Print item labels shortened by :func:`short_names`.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> from bayeval import plots
    >>> from bayeval.testing import fake_results
    >>> res = fake_results(model="irt")
    >>> fig, ax = plots.plot_item_curves(res, items=["t0", "t5"])
    >>> sorted(ax.get_legend_handles_labels()[1][:2])
    ['t0', 't5']
    """
    _check_irt(results)
    grid = _grid(results, theta)
    out = results.items(ci_prob=ci_prob)
    labels = out["task"].values.tolist()
    index, chosen = _chosen_items(labels, items, max_items, out["b_mean"].values)
    a = _thinned(out["a"])[:, index]
    b = _thinned(out["b"])[:, index]
    # the curves at the draws: the model's rate, (draw, theta, item)
    curves = special.expit(a[:, None, :] * (grid[None, :, None] - b[:, None, :]))
    mean = curves.mean(axis=0)
    alpha = 1 - ci_prob
    low, high = np.quantile(curves, [alpha / 2, 1 - alpha / 2], axis=0)
    fig, ax = _single_ax(ax, (8.0, 4.8))
    colours = palette(len(index))
    for i, name in enumerate(_item_names(labels, index, shorten)):
        band = ax.fill_between(grid, low[:, i], high[:, i], color=colours[i], alpha=0.15, lw=0)
        band.set_gid(f"item-band-{i}")
        (line,) = ax.plot(grid, mean[:, i], color=colours[i], linewidth=1.6, label=name)
        line.set_gid(f"item-curve-{i}")
    _ability_rug(ax, results)
    ax.set_xlim(grid[0], grid[-1])
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("ability θ (systems ~ Normal(0, 1))")
    ax.set_ylabel("P(success), one attempt")
    ax.grid(alpha=0.3)
    reserve = _legend(ax)
    _title(
        ax,
        f"item characteristic curves, {chosen} (easiest first); posterior mean and "
        f"{ci_prob:.0%} band",
        reserve,
        fontsize="medium",
    )
    return fig, ax


def plot_item_information(
    results,
    items=None,
    *,
    kind: str = "test",
    max_items: int = ITEM_CURVES_MAX,
    theta=None,
    ax=None,
    shorten: bool = True,
):
    """Fisher information over ability: the whole test's, or each chosen item's.

    The posterior mean of one attempt's information ``a^2 p (1 - p)``
    (:meth:`Results.items` with ``theta``). ``kind="test"`` adds it up over every item (the
    test information of one attempt at each item, ``1 / information`` the variance an
    ability estimate can reach) and, with ``items``, over the chosen items alone: how much of
    the benchmark's precision a subset keeps at each ability. ``kind="items"`` draws each
    chosen item's curve (at most ``max_items``, chosen as in :func:`plot_item_curves`).

    Parameters
    ----------
    results : Results
        A fit of ``model="irt"``.
    items : label, sequence of labels or xarray.Dataset, optional
        ``kind="test"``: a subset whose information is drawn beside the test's (any number
        of items; :func:`bayeval.irt.select`'s output is read too). ``kind="items"``: the
        items whose curves are drawn.
    kind : {"test", "items"}, default "test"
    max_items : int, default :data:`ITEM_CURVES_MAX`
        With ``kind="items"``: the most curves drawn.
    theta : array_like, optional
        The abilities drawn over (default -3 to 3, widened to every system's mean).
    ax : matplotlib Axes, optional
    shorten : bool, default True

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval import plots
    >>> from bayeval.testing import fake_results
    >>> res = fake_results(model="irt")
    >>> chosen = be.irt.select(res, 4)
    >>> fig, ax = plots.plot_item_information(res, items=chosen)
    >>> ax.get_legend_handles_labels()[1][:2]
    ['all 12 items', '4 chosen items']
    """
    _check_irt(results)
    validate_choice("kind", kind, INFORMATION_KINDS)
    grid = _grid(results, theta)
    out = results.items(theta=grid)
    labels = out["task"].values.tolist()
    info = out["information_grid"].transpose("task", "theta").values
    fig, ax = _single_ax(ax, (8.0, 4.8))
    if kind == "test":
        (total,) = ax.plot(
            grid, info.sum(axis=0), color="C0", linewidth=2, label=f"all {len(labels)} items"
        )
        total.set_gid("test-information")
        what = "test information (one attempt at each item)"
        if items is not None:
            index, chosen = _chosen_items(labels, items, len(labels), out["b_mean"].values)
            (part,) = ax.plot(grid, info[index].sum(axis=0), color="C1", linewidth=2, label=chosen)
            part.set_gid("subset-information")
            what += (
                f"; the {chosen} keep {info[index].sum() / info.sum():.0%} of it over this range"
            )
    else:
        index, chosen = _chosen_items(labels, items, max_items, out["b_mean"].values)
        colours = palette(len(index))
        for i, name in enumerate(_item_names(labels, index, shorten)):
            (line,) = ax.plot(grid, info[index[i]], color=colours[i], linewidth=1.6, label=name)
            line.set_gid(f"item-information-{i}")
        what = f"item information (one attempt), {chosen} (easiest first)"
    _ability_rug(ax, results)
    ax.set_xlim(grid[0], grid[-1])
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("ability θ (systems ~ Normal(0, 1))")
    ax.set_ylabel("Fisher information (posterior mean)")
    ax.grid(alpha=0.3)
    reserve = _legend(ax)
    _title(ax, what, reserve, fontsize="medium")
    return fig, ax


def plot_abilities(results, *, scored=None, ci_prob: float = 0.95, ax=None, shorten: bool = True):
    """Each system's ability theta: posterior mean and interval, the highest at the top.

    Draws :meth:`Results.abilities`; with ``scored`` (:func:`bayeval.irt.score`'s output on
    this calibration) its systems are drawn among the calibrated ones in another colour,
    their intervals those of the score (calibration and subset uncertainty together).

    Parameters
    ----------
    results : Results
        A fit of ``model="irt"``.
    scored : xarray.Dataset, optional
        Systems scored on a subset of the items; its ``ci_prob`` must be this one.
    ci_prob : float, default 0.95
    ax : matplotlib Axes, optional
    shorten : bool, default True
        Print system names shortened by :func:`short_names`.

    Returns
    -------
    (Figure, Axes)

    Examples
    --------
    >>> from bayeval import plots
    >>> from bayeval.testing import fake_results
    >>> res = fake_results(model="irt")
    >>> fig, ax = plots.plot_abilities(res)
    >>> len(ax.get_yticklabels())
    2
    """
    _check_irt(results)
    out = results.abilities(ci_prob=ci_prob)
    systems = list(results.systems)
    names = _names(results, shorten)
    printed = [names[s] for s in systems]
    mean = out["theta_mean"].values
    interval = out["theta_interval"].transpose("system", "ci_bound").values
    source = np.zeros(len(systems), dtype=bool)
    if scored is not None:
        if not isinstance(scored, xr.Dataset) or "theta_interval" not in scored:
            raise TypeError("scored must be the Dataset of be.irt.score(data, items=results)")
        if scored.attrs.get("calibration_hash") != str(results.tree.attrs.get("input_hash", "")):
            raise ValueError("scored was not scored on these results (be.irt.score(items=))")
        if not np.isclose(scored.attrs.get("ci_prob", np.nan), ci_prob):
            raise ValueError(
                f"scored holds {scored.attrs.get('ci_prob')!r} intervals and ci_prob is "
                f"{ci_prob!r}: score with the same ci_prob"
            )
        new = [str(s) for s in scored["system"].values.tolist()]
        runs = scored["n_items"].values.tolist()
        printed += [
            f"{n} ({r} items)"
            for n, r in zip(short_names(new) if shorten else new, runs, strict=True)
        ]
        mean = np.concatenate([mean, scored["theta_mean"].values])
        interval = np.concatenate(
            [interval, scored["theta_interval"].transpose("system", "ci_bound").values]
        )
        source = np.concatenate([source, np.ones(len(new), dtype=bool)])
    order = np.argsort(mean, kind="stable")  # highest drawn at the top
    rows = np.arange(len(order))
    n = len(order)
    size = "small" if n <= 25 else "x-small"
    # the Axes keeps about 4 inches beside the names on the left and the legend on the right
    width = max(7.0, 4.0 + _text_inches(max(printed, key=len), size) + 2.8)
    fig, ax = _single_ax(ax, (width, max(2.5, 0.8 + 0.26 * n)))
    for flag, colour, what in ((False, "C0", "calibrated"), (True, "C1", "scored on a subset")):
        pick = source[order] == flag
        if not pick.any():
            continue
        lines = ax.hlines(
            rows[pick],
            interval[order][pick, 0],
            interval[order][pick, 1],
            color=colour,
            linewidth=2,
            label=f"{ci_prob:.0%} interval, {what}",
        )
        lines.set_gid(f"ability-interval-{'scored' if flag else 'calibrated'}")
        (points,) = ax.plot(
            mean[order][pick],
            rows[pick],
            linestyle="none",
            marker="D" if flag else "o",
            color=colour,
            label=f"posterior mean, {what}",
        )
        points.set_gid(f"ability-mean-{'scored' if flag else 'calibrated'}")
    ax.set_yticks(rows, [printed[j] for j in order], fontsize=size)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel("ability θ (systems ~ Normal(0, 1))")
    ax.grid(axis="x", alpha=0.3)
    ax.xaxis.set_major_locator(_mpl().ticker.MaxNLocator(nbins="auto"))
    reserve = _legend(ax)
    _title(
        ax, f"abilities, {ci_prob:.0%} intervals, highest at the top", reserve, fontsize="medium"
    )
    return fig, ax
