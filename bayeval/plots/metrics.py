"""Plots of a metric per system.

The forest of posterior intervals beside their bootstrap twins (:func:`plot_forest`) and pass@k or
pass^k against k (:func:`plot_pass_at_k`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import validate_choice, validate_k, validate_prob
from bayeval.analyses.crosscheck import crosscheck
from bayeval.estimators import METRICS
from bayeval.plots._base import (
    _SAMPLE_DIMS,
    _at,
    _bounds,
    _check_results,
    _legend,
    _legend_layout,
    _metric_name,
    _mpl,
    _offsets,
    _pyplot,
    _single_ax,
    _single_k,
    _sort_key,
    _system_list,
    _title,
)
from bayeval.plots.style import BOUND_MARKERS, _bound_handles, _bound_suffix, _names, palette
from bayeval.posterior import credible_interval as _interval

__all__ = ["plot_forest", "plot_pass_at_k"]


# -- forest ------------------------------------------------------------------------------------
def plot_forest(
    results,
    k=1,
    metric: str = "pass@k",
    estimand: str = "population",
    bootstrap: bool = True,
    n_boot: int = 2000,
    seed=0,
    ci_prob: float = 0.95,
    ax=None,
    shorten: bool = True,
):
    """Forest of each system's posterior mean and interval beside its bootstrap twin.

    Draws the output of :func:`bayeval.crosscheck` for one estimand (with ``bootstrap=False``,
    of :meth:`Results.summary`): one row per system, sorted by posterior mean (the highest at
    the top), the posterior mean and equal-tailed interval above the bootstrap estimate and
    percentile interval of the twin unit (``unit="task"`` for the population estimand,
    ``"trial"`` for the tasks estimand). Under ``missing="bounds"`` each interval is drawn
    for both bounds (``v``: missing outcomes as failures, ``^``: as successes); the legend
    then gives each series once and each bound's marker once.

    Parameters
    ----------
    results : Results
    k : int, default 1
    metric : {"pass@k", "pass^k"}, default "pass@k"
    estimand : {"population", "tasks"}, default "population"
    bootstrap : bool, default True
        Draw the bootstrap twin next to each posterior interval.
    n_boot, seed
        Bootstrap replicates and seed (see :func:`bayeval.crosscheck`).
    ci_prob : float, default 0.95
        Probability of both intervals.
    ax : matplotlib Axes, optional
    shorten : bool, default True
        Print the system names shortened by :func:`short_names` (what all of them share
        stripped).

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import bayeval as be
    >>> from bayeval import plots
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3], [10, 2, 10, 1, 8, 3]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, sampler="grid")
    >>> fig, ax = plots.plot_forest(res, n_boot=500)
    >>> [label.get_text() for label in ax.get_yticklabels()]
    ['A', 'B']
    >>> plt.close(fig)
    """
    _pyplot()
    _check_results(results)
    k = _single_k(k)
    validate_choice("metric", metric, METRICS)
    ci_prob = validate_prob("ci_prob", ci_prob)
    if not isinstance(bootstrap, (bool, np.bool_)):
        raise TypeError(f"bootstrap must be True or False; got {bootstrap!r}")
    if bootstrap:
        table = crosscheck(
            results,
            k=k,
            metric=metric,
            estimands=[estimand],
            n_boot=n_boot,
            seed=seed,
            ci_prob=ci_prob,
        ).sel(estimand=estimand, drop=True)
        unit = str(table["bootstrap_unit"].values)
        series = [
            ("posterior", "C0", table["bayes_mean"], table["bayes_interval"]),
            ("bootstrap", "C1", table["bootstrap_estimate"], table["bootstrap_interval"]),
        ]
    else:
        frame = results.summary(ci_prob=ci_prob, k=[k], metrics=[metric], estimands=[estimand])
        index = ["system"] + (["missing_bound"] if "missing_bound" in frame.columns else [])
        table = frame.set_index(index)[["mean", "lower", "upper"]].to_xarray()
        table = table.reindex(system=results.systems)
        interval = xr.concat([table["lower"], table["upper"]], dim="ci_bound").assign_coords(
            ci_bound=["lower", "upper"]
        )
        series = [("posterior", "C0", table["mean"], interval)]
    bounds = _bounds(series[0][2])
    systems = series[0][2]["system"].values.tolist()
    centre = np.mean([_at(series[0][2], b).values for b in bounds], axis=0)
    order = _sort_key(centre)  # row i (from the bottom) holds system order[i]

    n_marks = len(series) * len(bounds)
    row = 0.45 if len(systems) <= 15 or n_marks > 2 else 0.3
    fig, ax = _single_ax(ax, figsize=(10, 1.5 + row * len(systems)))
    Line2D = _mpl().lines.Line2D

    rows = np.arange(len(systems))
    offsets = _offsets(len(series) * len(bounds), 0.3 if len(series) * len(bounds) > 2 else 0.15)
    handles = []
    i = 0
    for name, color, estimate, interval in series:
        what = "mean" if name == "posterior" else "estimate"
        for bound in bounds:
            y = rows + offsets[::-1][i]  # the first series sits at the top of each row
            i += 1
            est = _at(estimate, bound).values[order]
            lo = _at(interval.sel(ci_bound="lower"), bound).values[order]
            hi = _at(interval.sel(ci_bound="upper"), bound).values[order]
            lines = ax.hlines(y, lo, hi, color=color, linewidth=2)
            lines.set_gid(f"{name}-interval" + ("" if bound is None else f"-{bound}"))
            (points,) = ax.plot(
                est, y, linestyle="none", marker=BOUND_MARKERS[bound], color=color, markersize=6
            )
            points.set_gid(f"{name}-{what}" + ("" if bound is None else f"-{bound}"))
        label = (
            f"posterior mean, {ci_prob:.0%} interval"
            if name == "posterior"
            else f"{unit} bootstrap estimate, {ci_prob:.0%} interval"
        )
        handles.append(
            Line2D([], [], color=color, marker="o" if bounds == [None] else None, label=label)
        )
    handles += _bound_handles(bounds)
    names = _names(results, shorten)
    ax.set_yticks(
        rows,
        [names[systems[j]] for j in order],
        **({} if len(systems) <= 25 else {"fontsize": "small"}),
    )
    ax.set_ylim(-0.6, len(systems) - 0.4)
    label = _metric_name(metric, k)
    ax.set_xlabel(label)
    twin = f" vs {unit} bootstrap" if bootstrap else ""
    ax.grid(axis="x", alpha=0.3)
    reserve = _legend(ax, handles)
    _title(ax, f"{label}, estimand={estimand!r}: posterior{twin}", reserve)
    return fig, ax


# -- pass@k over k -----------------------------------------------------------------------------
def plot_pass_at_k(
    results,
    k=range(1, 11),
    metric: str = "pass@k",
    estimand: str = "population",
    systems=None,
    ci_prob: float = 0.95,
    ax=None,
    shorten: bool = True,
):
    """Posterior mean of pass@k (or pass^k) against k, with an interval band per system.

    Draws the output of :meth:`Results.pass_at_k` (or :meth:`Results.pass_hat_k` for
    ``metric="pass^k"``): per system the posterior mean at each k and its equal-tailed
    interval as a band, each system in its own colour (:func:`palette`; the bands fainter
    when there are many). Beyond the smallest number of trials a task of a system has, the
    model extrapolates that system (and :meth:`Results.pass_at_k` warns). The rule drawn:
    each system by its own trial count, the range of k where every system drawn is
    extrapolated (beyond the largest of these counts) is shaded, and the points of a
    system with fewer trials that are extrapolated short of that range are drawn hollow.
    Under ``missing="bounds"`` each system has a dashed (``lower``) and a dotted (``upper``)
    curve; the legend gives each system once and each line style once. With more than ten
    systems the legend lists them by their mean at the largest k, highest first (the order
    of the curves at the right edge), and markers change shape every ten colours.

    Parameters
    ----------
    results : Results
    k : iterable of int, default range(1, 11)
    metric : {"pass@k", "pass^k"}, default "pass@k"
    estimand : {"population", "tasks"}, default "population"
    systems : label or sequence of labels, optional
        Default: every system.
    ci_prob : float, default 0.95
    ax : matplotlib Axes, optional
    shorten : bool, default True
        Print the system names shortened by :func:`short_names`.

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> import bayeval as be
    >>> from bayeval import plots
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3], [10, 2, 10, 1, 8, 3]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, sampler="grid")
    >>> fig, ax = plots.plot_pass_at_k(res, k=range(1, 6), estimand="tasks")
    >>> ax.get_lines()[0].get_xdata().tolist()
    [1, 2, 3, 4, 5]
    >>> plt.close(fig)
    """
    _pyplot()
    _check_results(results)
    validate_choice("metric", metric, METRICS)
    ci_prob = validate_prob("ci_prob", ci_prob)
    ks, _ = validate_k(k)
    ks = np.sort(ks)
    chosen = _system_list("systems", systems, results.systems)
    compute = results.pass_at_k if metric == "pass@k" else results.pass_hat_k
    draws = compute(k=ks.tolist(), estimand=estimand).sel(system=chosen)
    mean = draws.mean(_SAMPLE_DIMS)
    interval = _interval(draws, ci_prob, _SAMPLE_DIMS)
    bounds = _bounds(draws)
    names = _names(results, shorten)
    trials = results.data.dataset["trials"].sel(system=chosen).values
    own = [int(t[t > 0].min()) if (t > 0).any() else 0 for t in trials]  # each system's

    n_entries = len(chosen) + (len(bounds) if bounds != [None] else 0) + 2
    fontsize, ncol = _legend_layout(n_entries, 4.5 * 0.8)
    if ncol > 1:  # a taller figure before more legend columns
        fontsize, ncol = _legend_layout(n_entries, 7.0 * 0.85)
    height = 4.5 if ncol == 1 and n_entries <= 20 else 7.0
    fig, ax = _single_ax(ax, figsize=(10 + 1.6 * (ncol - 1), height))
    Line2D = _mpl().lines.Line2D

    colors = palette(len(chosen))
    reached = max(own) if own else 0  # beyond it every system drawn is extrapolated
    n_curves = len(chosen) * len(bounds)
    band_alpha = 0.15 if n_curves <= 10 else max(0.04, 1.5 / n_curves)
    markers = ["o", "s", "D", "^", "v"]
    styles = {None: "-", "lower": "--", "upper": ":"}
    handles, hollow = [], False
    for i, system in enumerate(chosen):
        color = colors[i]
        marker = markers[(i // 10) % len(markers)]
        for bound in bounds:
            m = _at(mean.sel(system=system), bound).sel(k=ks).values
            lo = _at(interval.sel(system=system, ci_bound="lower"), bound).sel(k=ks).values
            hi = _at(interval.sel(system=system, ci_bound="upper"), bound).sel(k=ks).values
            tag = f"{system}" + ("" if bound is None else f":{bound}")
            # hollow: beyond this system's trials, short of where every system is shaded
            inside = (ks <= own[i]) | (ks > reached) if own[i] else np.ones(len(ks), bool)
            (line,) = ax.plot(
                ks,
                m,
                color=color,
                linestyle=styles[bound],
                marker=marker,
                markersize=3,
                markevery=np.flatnonzero(inside).tolist(),
                label=f"{names[system]}" + _bound_suffix(bound),
            )
            line.set_gid(f"mean:{tag}")
            if not inside.all():
                (beyond,) = ax.plot(
                    ks[~inside],
                    m[~inside],
                    linestyle="none",
                    marker=marker,
                    markersize=4,
                    markerfacecolor="white",
                    color=color,
                )
                beyond.set_gid(f"extrapolated:{tag}")
                hollow = True
            band = ax.fill_between(ks, lo, hi, color=color, alpha=band_alpha, linewidth=0)
            band.set_gid(f"band:{tag}")
        handles.append(
            Line2D([], [], color=color, marker=marker, markersize=3, label=names[system])
        )
    if len(chosen) > 10:
        last = mean.sel(k=ks.max())
        last = last.mean("missing_bound") if "missing_bound" in last.dims else last
        handles = [handles[j] for j in np.argsort(-last.values, kind="stable")]
    handles += _bound_handles(bounds, linestyles=True)
    if hollow:
        handles.append(
            Line2D(
                [],
                [],
                color="grey",
                linestyle="none",
                marker="o",
                markerfacecolor="white",
                label="k beyond that system's trials: extrapolated",
            )
        )
    if reached and ks.max() > reached:
        span = ax.axvspan(
            reached + 0.5,
            ks.max() + 0.5,
            color="grey",
            alpha=0.12,
            label=f"k > {reached} trials: extrapolated by the model",
        )
        span.set_gid("extrapolated")
        handles.append(span)
    ax.set_xlabel("k")
    ax.set_ylabel(metric)
    if len(ks) <= 20:
        ax.set_xticks(ks)
    ax.grid(alpha=0.3)
    reserve = _legend(ax, handles)
    _title(
        ax,
        f"{metric} against k, estimand={estimand!r}: posterior mean and {ci_prob:.0%} interval",
        reserve,
    )
    return fig, ax
