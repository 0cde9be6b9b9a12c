"""Success against cost, with the cost-success frontier (:func:`plot_cost_success`).

The plot of :func:`bayeval.bootstrap.cost` and :meth:`bayeval.Results.cost`.
"""

from __future__ import annotations

import re

import numpy as np
import xarray as xr

from bayeval._validate import validate_choice
from bayeval.analyses.tradeoff import frontier
from bayeval.plots._base import _mpl, _pyplot, _single_ax
from bayeval.plots.style import short_names

__all__ = ["compact_names", "plot_cost_success"]

#: Colours of the systems on the cost-success frontier and of the others.
FRONTIER_COLOR, POINT_COLOR = "#d1603d", "#4c72b0"
#: Parts of leaderboard labels that tell no two systems apart in a plot: a leading date, a
#: scaffold version tag (``mini-v1.16.0_``) and a trailing date.
_NOISE = (
    re.compile(r"^\d{8}[_-]"),
    re.compile(r"(?:^|(?<=[_-]))[A-Za-z]+-v\d+(?:\.\d+){2,}[_-]"),
    re.compile(r"[_-]\d{8}$"),
    re.compile(r"[_-]\d{4}-\d{2}-\d{2}$"),
)


def compact_names(labels, max_length: int = 28) -> list[str]:
    """Short system names for a crowded plot.

    Leading and trailing dates and scaffold version tags removed (each only while the names stay
    distinct and none becomes empty), then :func:`bayeval.plots.short_names`.

    Examples
    --------
    >>> from bayeval.plots import compact_names
    >>> compact_names(["20251124_mini-v1.16.0_claude-opus-4-5-20251101",
    ...                "20250720_mini-v0.0.0-claude-3-7-sonnet-20250219", "gpt-5"])
    ['claude-opus-4-5', 'claude-3-7-sonnet', 'gpt-5']
    """
    names = [str(x) for x in labels]
    for pattern in _NOISE:
        trial = [pattern.sub("", n) for n in names]
        if all(trial) and len(set(trial)) == len(trial):
            names = trial
    return short_names(names, max_length=max_length)


def _place_labels(ax, xs, ys, names, fontsize, priority):
    """Put each name beside its point where it overlaps no placed name and no point.

    Eight directions at two distances are tried; the least-overlapping spot otherwise.
    """
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    ok = np.isfinite(xs) & np.isfinite(ys)
    pts = np.full((len(xs), 2), np.nan)
    pts[ok] = to_px(np.column_stack([xs, ys])[ok])
    r = fontsize * 0.6 * fig.dpi / 72
    point_boxes = [(px - r, py - r, px + r, py + r) for px, py in pts[ok]]
    placed, texts = [], []
    dirs = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]
    offsets = [(dx * d, dy * d) for d in (6, 16) for dx, dy in dirs]
    frame = ax.get_window_extent(renderer)

    def overlap(a, b):
        w = min(a[2], b[2]) - max(a[0], b[0])
        h = min(a[3], b[3]) - max(a[1], b[1])
        return max(w, 0) * max(h, 0)

    for i in priority:
        text = ax.annotate(
            names[i],
            (xs[i], ys[i]),
            xytext=(0, 0),
            textcoords="offset points",
            fontsize=fontsize,
            va="center",
            ha="left",
        )
        ext = text.get_window_extent(renderer)
        w, h = ext.width, ext.height
        best, best_score = None, np.inf
        scale = fig.dpi / 72
        own = (pts[i, 0] - r, pts[i, 1] - r, pts[i, 0] + r, pts[i, 1] + r)
        for dx, dy in offsets:
            ox, oy = dx * scale, dy * scale
            px, py = pts[i]
            x0 = px + ox if dx > 0 else (px + ox - w if dx < 0 else px - w / 2)
            y0 = py + oy - h / 2 if dy == 0 else (py + oy if dy > 0 else py + oy - h)
            box = (x0, y0, x0 + w, y0 + h)
            score = sum(overlap(box, b) for b in placed)
            score += sum(overlap(box, b) for b in point_boxes) - overlap(box, own)
            outside = (
                max(frame.x0 - box[0], 0)
                + max(box[2] - frame.x1, 0)
                + max(frame.y0 - box[1], 0)
                + max(box[3] - frame.y1, 0)
            )
            score += outside * h * 4 + 1e-3 * (abs(dx) + abs(dy))
            if score < best_score:
                best, best_score = (dx, dy, box), score
        dx, dy, box = best
        text.remove()
        ha = "left" if dx > 0 else ("right" if dx < 0 else "center")
        va = "center" if dy == 0 else ("bottom" if dy > 0 else "top")
        texts.append(
            ax.annotate(
                names[i],
                (xs[i], ys[i]),
                xytext=(dx, dy),
                textcoords="offset points",
                fontsize=fontsize,
                ha=ha,
                va=va,
                color="0.15",
            )
        )
        placed.append(box)
    return texts


def plot_cost_success(
    cost_result,
    cost: str = "cost_per_attempt",
    labels=None,
    log=None,
    frontier_line: bool = True,
    ax=None,
    figsize=None,
    fontsize=None,
):
    """Success against cost per system, with intervals and the cost-success frontier.

    Each system is a point at its cost (x) and pass@1 per attempt (y) with the intervals of
    both (on ``ci_bound``); the systems on the frontier (:func:`bayeval.analyses.tradeoff.frontier`:
    none other succeeds at least as often for at most the cost) are joined by a staircase
    and drawn in another colour. Labels are compact names (:func:`compact_names`) placed to
    avoid each other.

    Parameters
    ----------
    cost_result : xarray.Dataset
        From :func:`bayeval.bootstrap.cost` or :meth:`bayeval.Results.cost`.
    cost : {"cost_per_attempt", "cost_per_success"}, default "cost_per_attempt"
    labels : list of str, optional
        One name per system, in the result's order; default :func:`compact_names`.
    log : bool, optional
        A log cost axis; default when the costs span more than a factor of 20.
    frontier_line : bool, default True
    ax : matplotlib Axes, optional
    figsize : (float, float), optional
        Default grows with the number of systems.
    fontsize : float, optional
        Of the labels; default 9 (8 from 13 systems, 7 from 25).

    Returns
    -------
    (matplotlib.figure.Figure, matplotlib.axes.Axes)

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval.plots import plot_cost_success
    >>> df = pd.DataFrame({"system": ["A"] * 4 + ["B"] * 4, "task": [0, 1, 2, 3] * 2,
    ...                    "success": [1, 1, 0, 1, 1, 0, 0, 0], "cost": [1.0] * 4 + [2.0] * 4})
    >>> out = be.bootstrap.cost(be.from_frame(df, covariates=["cost"]), "cost", n_boot=200)
    >>> fig, ax = plot_cost_success(out)
    >>> ax.get_ylabel()
    'pass@1 per attempt'
    """
    if not isinstance(cost_result, xr.Dataset) or "cost_per_attempt_draws" not in cost_result:
        raise TypeError("cost_result must be the Dataset of bayeval.bootstrap.cost or Results.cost")
    validate_choice("cost", cost, ("cost_per_attempt", "cost_per_success"))
    systems = [str(s) for s in cost_result["system"].values]
    n = len(systems)
    if labels is None:
        labels = compact_names(systems)
    else:
        labels = [str(x) for x in labels]
        if len(labels) != n:
            raise ValueError(f"labels must give one name per system ({n}); got {len(labels)}")
    front = frontier(cost_result, cost=cost)
    x = cost_result[cost].values.astype(float)
    y = cost_result["pass_at_1"].values.astype(float)
    xi = cost_result[f"{cost}_interval"].values.astype(float)
    yi = cost_result["pass_at_1_interval"].values.astype(float)
    finite = np.isfinite(x)
    if not finite.any():
        raise ValueError(f"no system has a finite {cost} to plot")
    if log is None:
        pos = x[finite & (x > 0)]
        log = len(pos) > 1 and pos.max() / pos.min() > 20
    if figsize is None:
        figsize = (6.4, 4.6) if n <= 6 else ((8.0, 6.0) if n <= 15 else (10.0, 7.5))
    if fontsize is None:
        fontsize = 9 if n < 13 else (8 if n < 25 else 7)
    fig, ax = _single_ax(ax, figsize)
    _pyplot()
    on = front["on_frontier"].values
    colors = np.where(on, FRONTIER_COLOR, POINT_COLOR)
    for i in np.flatnonzero(finite):
        xerr = np.array([[x[i] - xi[i, 0]], [(xi[i, 1] if np.isfinite(xi[i, 1]) else x[i]) - x[i]]])
        yerr = np.array([[y[i] - yi[i, 0]], [yi[i, 1] - y[i]]])
        ax.errorbar(
            x[i],
            y[i],
            xerr=np.clip(xerr, 0, None),
            yerr=np.clip(yerr, 0, None),
            fmt="o",
            color=colors[i],
            ms=5,
            elinewidth=0.8,
            alpha=0.9,
            capsize=0,
            zorder=3 if on[i] else 2,
        )
    order = [systems.index(s) for s in front.attrs["frontier"] if finite[systems.index(s)]]
    if frontier_line and len(order) > 1:
        sx, sy = [x[order[0]]], [y[order[0]]]
        for j in order[1:]:
            sx += [x[j], x[j]]
            sy += [sy[-1], y[j]]
        ax.plot(
            sx,
            sy,
            color=FRONTIER_COLOR,
            lw=1.2,
            alpha=0.7,
            zorder=1,
            label="frontier (no system succeeds as often for less)",
        )
        ax.legend(loc="lower right", fontsize=fontsize, frameon=False)
    if log:
        ticker = _mpl().ticker
        ax.set_xscale("log")
        plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_minor_locator(ticker.LogLocator(subs=(2.0, 5.0)))
        ax.xaxis.set_minor_formatter(plain)
    word = "attempt" if cost == "cost_per_attempt" else "success"
    column = cost_result.attrs.get("column", "cost")
    ax.set_xlabel(f"{column} per {word}" + (" (log scale)" if log else ""))
    ax.set_ylabel("pass@1 per attempt")
    ci = cost_result.attrs.get("ci_prob")
    method = str(cost_result.attrs.get("method", ""))
    kind = "posterior" if method.startswith("posterior") else "bootstrap"
    ax.set_title(
        f"Success against cost ({kind}" + (f", {ci:.0%} intervals)" if ci else ")"),
        fontsize=fontsize + 2,
    )
    ax.grid(alpha=0.25, which="both" if log else "major")
    idx = np.flatnonzero(finite)
    priority = sorted(idx, key=lambda i: (not on[i], -y[i]))
    _place_labels(ax, x, y, labels, fontsize, priority)
    return fig, ax
