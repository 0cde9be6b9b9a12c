"""Plots of the systems' order.

Each system's posterior rank (:func:`plot_ranks`) and the matrix of pairwise probabilities
(:func:`plot_compare_all`).
"""

from __future__ import annotations

import numpy as np

from bayeval.plots._base import (
    _bounds,
    _check_results,
    _legend,
    _metric_name,
    _mpl,
    _offsets,
    _order_rows,
    _single_ax,
    _single_k,
    _title,
)
from bayeval.plots.style import BOUND_MARKERS, _bound_handles, _names, short_names

__all__ = ["plot_compare_all", "plot_ranks"]


def _height(n_rows: float) -> float:
    """Height in inches of a figure of ``n_rows`` rows of systems."""
    return max(2.5, 0.8 + 0.26 * n_rows)


def plot_ranks(
    results,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    ci_prob: float = 0.95,
    top: int = 3,
    ax=None,
    shorten: bool = True,
    order=None,
):
    """Each system's posterior rank: its interval, its mean, and P(best) beside the name.

    The intervals hold every system's rank at once with probability ``ci_prob``
    (``rank_interval_simultaneous`` of :meth:`Results.ranks`), as a ranking is read whole.

    Draws :meth:`Results.ranks`, best system at the top; names are shortened by
    :func:`short_names` (``shorten=False``: printed whole) and the figure grows with the
    number of systems. Under ``missing="bounds"`` each system has the rank of both bounds
    (``v``: missing outcomes as failures, ``^``: as successes), and P(best) of each.

    ``order`` (every system once, the top row first) draws the systems in a given order, a
    report's one order of systems; by default the best mean rank is at the top.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> from bayeval import plots
    >>> fig, ax = plots.plot_ranks(res)
    >>> [label.get_text() for label in ax.get_yticklabels()][-1]
    'B  P(best) 0.98'
    """
    _check_results(results)
    out = results.ranks(metric=metric, k=k, estimand=estimand, top=top, ci_prob=ci_prob)
    bounds = _bounds(out["rank_mean"])
    systems = results.systems
    rank_mean = out["rank_mean"].transpose("system", ...).values.reshape(len(systems), -1)
    interval = (
        out["rank_interval_simultaneous"]
        .transpose("system", ..., "ci_bound")
        .values.reshape(len(systems), -1, 2)
    )
    best = out["prob_best"].transpose("system", ...).values.reshape(len(systems), -1)
    if order is None:  # best drawn at the top
        order = np.argsort(rank_mean.mean(axis=1), kind="stable")[::-1]
    else:
        order = _order_rows(order, list(systems))
    fig, ax = _single_ax(
        ax,
        (
            7.5 if bounds == [None] else 9.5,
            _height(len(systems) * (1 if bounds == [None] else 1.4)),
        ),
    )
    names = _names(results, shorten)
    rows = np.arange(len(systems))
    offsets = _offsets(len(bounds), 0.18)
    for b, bound in enumerate(bounds):
        y = rows + offsets[::-1][b]
        suffix = "" if bound is None else f" ({bound} bound)"
        lines = ax.hlines(
            y,
            interval[order, b, 0],
            interval[order, b, 1],
            color="C0",
            linewidth=2,
            label=f"{ci_prob:.0%} rank interval, all systems at once" + suffix,
        )
        lines.set_gid("rank-interval" + ("" if bound is None else f"-{bound}"))
        (points,) = ax.plot(
            rank_mean[order, b],
            y,
            linestyle="none",
            marker=BOUND_MARKERS[bound],
            color="C0",
            label="posterior mean rank" + suffix,
        )
        points.set_gid("rank-mean" + ("" if bound is None else f"-{bound}"))
    labels = [
        f"{names[systems[j]]}  P(best) " + "/".join(f"{v:.2f}" for v in best[j]) for j in order
    ]
    ax.set_yticks(rows, labels, fontsize="small" if len(systems) <= 25 else "x-small")
    ax.set_ylim(-0.6, len(systems) - 0.4)
    ax.set_xlim(len(systems) + 0.5, 0.5)  # rank 1 on the right
    ax.xaxis.set_major_locator(_mpl().ticker.MaxNLocator(integer=True, nbins="auto"))
    ax.set_xlabel("rank (1 = best)")
    ax.grid(axis="x", alpha=0.3)
    name = _metric_name(metric, _single_k(k))
    if bounds == [None]:
        reserve = _legend(ax)
    else:
        Line2D = _mpl().lines.Line2D
        reserve = _legend(
            ax,
            [
                Line2D(
                    [], [], color="C0", label=f"{ci_prob:.0%} rank interval, posterior mean rank"
                ),
                *_bound_handles(bounds),
            ],
        )
    what = "" if bounds == [None] else "; P(best) at the lower/upper bound"
    _title(ax, f"ranks by {name}, {estimand}{what}", reserve, fontsize="medium")
    return fig, ax


def plot_compare_all(
    results,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    ax=None,
    shorten: bool = True,
):
    """The pairwise matrix of P(row system > column system), systems ordered best first.

    Draws :meth:`Results.compare_all`; each cell is written out for up to 15 systems, and
    the names are shortened by :func:`short_names` (``shorten=False``: printed whole).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> from bayeval import plots
    >>> fig, ax = plots.plot_compare_all(res, estimand="tasks")
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['B', 'C', 'A']
    """
    _check_results(results)
    out = results.compare_all(metric=metric, k=k, estimand=estimand)
    prob = out["prob_positive"].values
    with np.errstate(invalid="ignore"):
        order = np.argsort(-np.nanmean(prob, axis=1), kind="stable")
    prob = prob[np.ix_(order, order)]
    S = len(order)
    printed = (
        short_names(results.systems, max_length=32)
        if shorten
        else [str(v) for v in results.systems]
    )
    names = [printed[j] for j in order]
    cell = 0.4 if S <= 15 else (0.22 if S <= 30 else 0.16)
    label = 0.075 * max(len(n) for n in names)  # inches the longest tick label takes
    side = max(2.5, cell * S)
    fig, ax = _single_ax(ax, (side + label + 1.6, side + label + 0.6))
    image = ax.imshow(prob, cmap="RdBu", vmin=0, vmax=1)
    size = "small" if S <= 15 else ("x-small" if S <= 30 else 5)
    ax.set_xticks(range(S), names, rotation=90, fontsize=size)
    ax.set_yticks(range(S), names, fontsize=size)
    if S <= 15:
        for i in range(S):
            for j in range(S):
                if i != j:
                    ax.text(
                        j,
                        i,
                        f"{prob[i, j]:.2f}",
                        ha="center",
                        va="center",
                        fontsize="x-small",
                        color="white" if abs(prob[i, j] - 0.5) > 0.3 else "black",
                    )
    fig.colorbar(image, ax=ax, shrink=0.8, label="P(row > column)")
    name = _metric_name(metric, _single_k(k))
    ax.set_title(f"P(row > column), {name}, {estimand}", fontsize="medium")
    return fig, ax
