"""The posterior predictive check plot (:func:`plot_ppc`).

Observed per-task success counts against those the fitted population predicts.
"""

from __future__ import annotations

import numpy as np

from bayeval.plots._base import (
    _at,
    _axes_class,
    _bounds,
    _check_results,
    _offsets,
    _pyplot,
    _set_gid,
    _system_list,
)
from bayeval.plots.style import BOUND_MARKERS, _names

__all__ = ["plot_ppc"]


def _panels(ax, n: int):
    """Axes for ``n`` panels: new ones, or the given Axes (one, or a sequence of ``n``)."""
    Axes = _axes_class()
    if ax is None:
        ncols = min(n, 3)
        nrows = int(np.ceil(n / ncols))
        fig, grid = _pyplot().subplots(
            nrows, ncols, figsize=(4.5 * ncols, 3.6 * nrows), squeeze=False, layout="constrained"
        )
        flat = grid.ravel()
        for extra in flat[n:]:
            fig.delaxes(extra)
        return fig, flat[:n]
    given = [ax] if isinstance(ax, Axes) else list(np.ravel(np.asarray(ax, dtype=object)))
    if not all(isinstance(a, Axes) for a in given):
        raise TypeError(
            f"ax must be a matplotlib Axes, a sequence of Axes or None; got "
            f"{type(ax).__name__} holding {sorted({type(a).__name__ for a in given})}"
        )
    if len(given) != n:
        raise ValueError(
            f"ax must hold one matplotlib Axes per system drawn ({n}); got {len(given)}"
        )
    flat = np.empty(n, dtype=object)
    flat[:] = given
    return flat[0].figure, flat


def plot_ppc(results, system=None, ax=None, shorten: bool = True):
    """Posterior predictive check of the per-task success-count histogram.

    Draws the output of :meth:`Results.ppc` (95% intervals): per system, the observed number
    of tasks with each success count as bars and the predictive mean and interval for new
    tasks from the fitted population as points with vertical bars. The title gives the share
    of tasks always or never solved, observed and predicted, with its predictive p-value
    (red when flagged, ``p < 0.01``). With no task of two or more trials (one trial per task)
    that share is undefined (every task is always or never solved) and the title gives
    instead the mean number of successes per task, observed and predicted (with one trial,
    the share of tasks solved). Under ``missing="bounds"`` each count has two bars, the
    ``lower`` bound (left) and the hatched ``upper`` bound (right).

    Parameters
    ----------
    results : Results
        A fit of a population model (``hierarchical`` or ``logit_normal``).
    system : label or sequence of labels, optional
        Default: every system, one panel each.
    ax : matplotlib Axes or sequence of Axes, optional
        One Axes per system drawn.
    shorten : bool, default True
        Title the panels with the names shortened by :func:`short_names` of all the
        systems.

    Returns
    -------
    fig : matplotlib Figure
    axes : matplotlib Axes, or numpy.ndarray of Axes
        One Axes when ``system`` is a single label, else a 1-d array with one Axes per
        system.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import bayeval as be
    >>> from bayeval import plots
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3], [10, 2, 10, 1, 8, 3]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, sampler="grid")
    >>> fig, axes = plots.plot_ppc(res)
    >>> [a.get_title().splitlines()[0] for a in axes]
    ['A', 'B']
    >>> plt.close(fig)
    """
    _pyplot()
    _check_results(results)
    squeeze = system is not None and np.ndim(system) == 0
    chosen = _system_list("system", system, results.systems)
    check = results.ppc()
    bounds = _bounds(check["observed_histogram"])
    counts = check["count"].values
    fig, axes = _panels(ax, len(chosen))
    names = _names(results, shorten)
    ci_prob = check.attrs["ci_prob"]
    width = 0.8 / len(bounds)
    offsets = _offsets(len(bounds), 0.2) if len(bounds) > 1 else np.zeros(1)
    for panel, label in zip(axes, chosen, strict=True):
        one = check.sel(system=label)
        for b, bound in enumerate(bounds):
            tag = f"{label}" + ("" if bound is None else f":{bound}")
            xs = counts + offsets[b]
            observed = _at(one["observed_histogram"], bound).sel(count=counts).values
            bars = panel.bar(
                xs,
                observed,
                width=width,
                color="0.75",
                edgecolor="0.45",
                hatch=None if bound != "upper" else "//",
                label="observed" + ("" if bound is None else f" ({bound})"),
            )
            _set_gid(bars, f"observed:{tag}")
            interval = _at(one["predicted_histogram_interval"], bound).sel(count=counts)
            lines = panel.vlines(
                xs,
                interval.sel(ci_bound="lower").values,
                interval.sel(ci_bound="upper").values,
                color="C0",
                linewidth=1.5,
            )
            lines.set_gid(f"interval:{tag}")
            (points,) = panel.plot(
                xs,
                _at(one["predicted_histogram"], bound).sel(count=counts).values,
                linestyle="none",
                marker=BOUND_MARKERS[bound],
                color="C0",
                markersize=5,
                label=f"predicted, {ci_prob:.0%}" + ("" if bound is None else f" ({bound})"),
            )
            points.set_gid(f"predicted:{tag}")
        parts = []
        for bound in bounds:
            head = "" if bound is None else f"{bound}: "
            obs = float(_at(one["observed_extreme_share"], bound))
            pred = float(_at(one["predicted_extreme_share"], bound))
            p = float(_at(one["p_value"], bound))
            if np.isnan([obs, pred, p]).any():  # no task with two trials: no extreme share
                seen = _at(one["observed_histogram"], bound).sel(count=counts).values
                model = _at(one["predicted_histogram"], bound).sel(count=counts).values
                parts.append(
                    head + "mean successes per task "
                    f"{(counts * seen).sum() / max(seen.sum(), 1):.2f}, predicted "
                    f"{(counts * model).sum() / max(model.sum(), 1e-12):.2f}"
                )
                continue
            parts.append(head + f"always/never solved {obs:.2f}, predicted {pred:.2f}, p = {p:.2f}")
        flagged = bool(one["flagged"].any())
        panel.set_title(
            "\n".join([names[label], *parts]),
            fontsize="small",
            color="#d62728" if flagged else "black",
        )
        panel.set_xticks(counts)
        panel.set_xlabel("successes per task")
        panel.set_ylabel("tasks")
    axes[0].legend(loc="best", fontsize="x-small")
    return (fig, axes[0]) if squeeze else (fig, axes)
