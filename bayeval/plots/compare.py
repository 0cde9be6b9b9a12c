"""Plots of one system against another.

The posterior effect (:func:`plot_effect`), the tasks that move (:func:`plot_task_rates`) and the
effect over k (:func:`plot_compare_curve`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from bayeval._validate import validate_choice, validate_prob
from bayeval.analyses.curves import _bootstrap_words, curve_bootstrap
from bayeval.plots._base import (
    _SAMPLE_DIMS,
    _bounds,
    _check_results,
    _check_system,
    _legend,
    _metric_name,
    _mpl,
    _offsets,
    _pyplot,
    _set_gid,
    _single_ax,
    _single_k,
    _sort_key,
    _text_inches,
    _title,
)
from bayeval.plots.style import BOUND_MARKERS, _bound_handles, _ellipsis, _names

__all__ = ["plot_compare_curve", "plot_effect", "plot_task_rates"]

#: Colours of the tasks gained and lost in :func:`plot_task_rates`.
GAIN_COLOR, LOSS_COLOR = "#2ca02c", "#d62728"


# -- paired effect -----------------------------------------------------------------------------
def _probability_text(values: xr.DataArray, bounds: list) -> str:
    if bounds == [None]:
        return f"{float(values):.2f}"
    return " / ".join(f"{float(values.sel(missing_bound=b)):.2f} ({b})" for b in bounds)


def plot_effect(
    results,
    candidate,
    baseline,
    metric: str = "pass@k",
    k=1,
    estimand: str = "population",
    margin: float = 0.0,
    ci_prob: float = 0.95,
    ax=None,
    shorten: bool = True,
):
    """Posterior density of the effect ``metric(candidate) - metric(baseline)``.

    Draws the output of :meth:`Results.compare`: the density of the ``effect`` draws (a
    kernel density estimate drawn by :func:`arviz_plots.plot_dist`), its posterior mean and
    equal-tailed interval (``effect_mean``, ``effect_interval``), a line at 0 labelled with
    ``prob_positive`` and, when ``margin > 0``, a line at ``-margin`` labelled with
    ``prob_noninferior``; ``prob_above_margin`` is in the title. Under ``missing="bounds"``
    both crossed bounds of the effect are drawn, in two colours.

    Parameters
    ----------
    results : Results
    candidate, baseline : system labels
    metric : {"pass@k", "pass^k"}, default "pass@k"
    k : int, default 1
    estimand : {"population", "tasks"}, default "population"
    margin : float, default 0.0
        Practical margin (absolute); non-inferiority means ``effect > -margin``.
    ci_prob : float, default 0.95
    ax : matplotlib Axes, optional
    shorten : bool, default True
        Print the two names shortened by :func:`short_names` of all the systems.

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
    >>> data = be.from_counts([[3, 5, 1, 8], [6, 9, 2, 9]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, sampler="grid")
    >>> fig, ax = plots.plot_effect(res, "B", "A", margin=0.05)
    >>> ax.get_legend().get_texts()[0].get_text().startswith("P(effect > 0) = ")
    True
    >>> plt.close(fig)
    """
    _pyplot()
    _check_results(results)
    k = _single_k(k)
    out = results.compare(
        candidate, baseline, metric=metric, k=k, estimand=estimand, margin=margin, ci_prob=ci_prob
    )
    out = out.drop_vars([c for c in ("k",) if c in out.coords])
    fig, ax = _single_ax(ax, figsize=(10, 4.5))
    # deferred: arviz_plots imports matplotlib, which `import bayeval.plots` must not load
    import arviz_plots
    from arviz_plots import PlotCollection

    Line2D = _mpl().lines.Line2D

    bounds = _bounds(out["effect"])
    posterior = xr.Dataset({"effect": out["effect"]})
    viz = xr.DataTree(
        xr.Dataset(
            {
                "figure": np.array(fig, dtype=object),
                "plot": np.array(ax, dtype=object),
                "row_index": 0,
                "col_index": 0,
            }
        )
    )
    options: dict[str, Any] = {}
    if bounds == [None]:
        collection = PlotCollection(posterior, viz, backend="matplotlib")
    else:
        # intervals of the two bounds one under the other, a tenth of the density's height
        sd = float(out["effect"].std(_SAMPLE_DIMS).min())
        step = 0.1 / (max(sd, 1e-6) * np.sqrt(2 * np.pi))
        collection = PlotCollection(
            posterior,
            viz,
            backend="matplotlib",
            aes={"color": ["missing_bound"], "y": ["missing_bound"]},
            y=[-step * i for i in range(len(bounds))],
        )
        options["aes_by_visuals"] = {
            visual: ["color", "y"]
            for visual in ("credible_interval", "point_estimate", "point_estimate_text")
        }
    collection = arviz_plots.plot_dist(
        xr.DataTree.from_dict({"/posterior": posterior}),
        backend="matplotlib",
        plot_collection=collection,
        kind="kde",
        point_estimate="mean",
        ci_kind="eti",
        ci_prob=ci_prob,
        sample_dims=_SAMPLE_DIMS,
        stats={
            "credible_interval": xr.Dataset({"effect": out["effect_interval"]}),
            "point_estimate": xr.Dataset({"effect": out["effect_mean"]}),
        },
        **options,
    )
    for visual in ("dist", "credible_interval", "point_estimate"):
        artists = collection.viz[visual]["effect"]
        for bound in bounds:
            artist = (artists if bound is None else artists.sel(missing_bound=bound)).item()
            artist.set_gid(f"{visual}" + ("" if bound is None else f"-{bound}"))

    handles = []
    zero = ax.axvline(
        0.0,
        color="black",
        linewidth=1,
        label=f"P(effect > 0) = {_probability_text(out['prob_positive'], bounds)}",
    )
    zero.set_gid("zero")
    handles.append(zero)
    if margin > 0:
        line = ax.axvline(
            -margin,
            color="grey",
            linestyle="--",
            linewidth=1,
            label=f"P(effect > -{margin:g}) = "
            f"{_probability_text(out['prob_noninferior'], bounds)} "
            "(non-inferior)",
        )
        line.set_gid("margin")
        handles.append(line)
    if bounds != [None]:
        crossed = {
            "lower": "candidate's missing as failures,\nbaseline's as successes",
            "upper": "candidate's missing as successes,\nbaseline's as failures",
        }
        for bound in bounds:
            color = collection.viz["dist"]["effect"].sel(missing_bound=bound).item().get_color()
            handles.append(Line2D([], [], color=color, label=f"{bound} bound: {crossed[bound]}"))
    handles.append(
        Line2D([], [], color="black", marker="o", label=f"posterior mean, {ci_prob:.0%} interval")
    )
    reserve = _legend(ax, handles)
    name = _metric_name(metric, k)
    names = _names(results, shorten)
    title = f"{names[candidate]} - {names[baseline]}\n{name}, estimand={estimand!r}"
    if margin > 0:
        title += f"\nP(effect > {margin:g}) = {_probability_text(out['prob_above_margin'], bounds)}"
    _title(ax, title, reserve)
    ax.set_xlabel(f"effect on {name}")
    return fig, ax


# -- per-task rates ----------------------------------------------------------------------------
#: Above this many tasks, :func:`plot_task_rates` draws the sorted per-task differences.
TASK_RATES_MAX_TASKS = 60
TASK_RATES_KINDS = ("auto", "tasks", "differences")
#: Posterior probability above which a task counts as gained (or lost) in plot_task_rates.
MOVE_PROB = 0.9


def _task_moves(results, rates_values, bounds, baseline, candidate) -> dict:
    """What :func:`plot_task_rates` counts and draws.

    Gains and losses by the posterior rule and by the raw success rates, and the per-task
    differences it draws (see its docstring).
    """
    base, cand = rates_values[0], rates_values[1]  # (task, bound, sample)
    if bounds == [None]:
        d_low = d_high = cand[:, 0] - base[:, 0]
    else:  # the crossed bounds least favourable to each claim
        lo, up = bounds.index("lower"), bounds.index("upper")
        d_low, d_high = cand[:, lo] - base[:, up], cand[:, up] - base[:, lo]
    defined = ~np.isnan(rates_values).any(axis=(0, 2, 3))
    with np.errstate(invalid="ignore"):
        gains = defined & ((d_low > 0).mean(axis=-1) > MOVE_PROB)
        losses = defined & ((d_high < 0).mean(axis=-1) > MOVE_PROB)
    pair = results.data.sel(system=[baseline, candidate])
    if pair.has_scores:  # partial credit: each task's mean score, not its full-credit count
        stats = pair.score_statistics()
        totals, trials = stats["sum"], stats["trials"]
    else:
        totals, trials = pair.dataset["successes"], pair.dataset["trials"]

    def at(values, bound):
        values = values.sel(missing_bound=bound) if "missing_bound" in values.dims else values
        return values.transpose("system", "task").values.astype(float)

    counted = (at(trials, "lower") > 0).all(axis=0) & (at(trials, "upper") > 0).all(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_low = at(totals, "lower") / at(trials, "lower")
        r_high = at(totals, "upper") / at(trials, "upper")
    raw_gains = counted & (r_low[1] > r_high[0])
    raw_losses = counted & (r_high[1] < r_low[0])
    return {
        "defined": defined,
        "gains": gains,
        "losses": losses,
        "raw_gains": raw_gains,
        "raw_losses": raw_losses,
        "d_low": d_low,
        "d_high": d_high,
    }


def plot_task_rates(
    results,
    candidate,
    baseline,
    ci_prob: float = 0.95,
    ax=None,
    kind: str = "auto",
    shorten: bool = True,
):
    """Posterior task rates of two systems, task by task, with the tasks that move.

    Draws the output of :meth:`Results.task_rates` for ``baseline`` and ``candidate``.

    ``kind="tasks"``: each task's posterior mean rate and equal-tailed interval, tasks sorted
    by the baseline's mean rate (up to 40 tasks named below the axis, a long id shortened
    around an ellipsis); gained tasks shaded green, lost tasks red. Tasks without a
    valid trial have no rate and are drawn empty. ``kind="differences"``: each task's
    posterior difference of rates (candidate minus baseline), its mean and interval, tasks
    sorted by that mean, gained tasks green, lost tasks red, the rest grey; tasks without a
    rate for both systems are left out. ``kind="auto"`` (default) draws the tasks up to
    :data:`TASK_RATES_MAX_TASKS` (60) tasks and the differences beyond, where one bar per
    task would be a wall.

    The title counts the tasks that move, by this rule: a task is **gained** when the
    posterior probability that the candidate's rate is above the baseline's exceeds 0.9,
    and **lost** when the probability that it is below exceeds 0.9. Beside them it gives the
    raw count: tasks whose observed success rate (successes / trials; for partial-credit
    scores the task's mean score) is higher for the candidate, and lower, among tasks with a
    valid trial for both. The two differ: a task
    the raw rates put on one side by a trial or two rarely reaches 0.9 (and a partly pooled
    model pulls every task's rate towards the system's population). Under
    ``missing="bounds"`` both bounds are drawn and a task counts as a gain (loss) only if it
    does at the crossed bound least favourable to that claim: the candidate's missing as
    failures and the baseline's as successes for a gain, the reverse for a loss (the raw
    count likewise).

    Parameters
    ----------
    results : Results
    candidate, baseline : system labels
    ci_prob : float, default 0.95
    ax : matplotlib Axes, optional
    kind : {"auto", "tasks", "differences"}, default "auto"
    shorten : bool, default True
        Print the two names shortened by :func:`short_names` of all the systems.

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
    >>> data = be.from_counts([[3, 5, 1, 8], [9, 5, 0, 9]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, sampler="grid")
    >>> fig, ax = plots.plot_task_rates(res, "B", "A")
    >>> [label.get_text() for label in ax.get_xticklabels()]
    ['2', '0', '1', '3']
    >>> " ".join(ax.get_title().split()).endswith("raw success rates: 2 task(s) higher, 1 lower")
    True
    >>> plt.close(fig)
    """
    _pyplot()
    _check_results(results)
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        _check_system(role, label, results.systems)
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different systems")
    ci_prob = validate_prob("ci_prob", ci_prob)
    validate_choice("kind", kind, TASK_RATES_KINDS)
    rates = results.task_rates(system=[baseline, candidate])
    bounds = _bounds(rates)
    order_dims = ["system", "task"] + ([] if bounds == [None] else ["missing_bound"])
    values = rates.stack(sample=_SAMPLE_DIMS).transpose(*order_dims, "sample").values
    if bounds == [None]:
        values = values[:, :, None, :]  # (system, task, bound, sample)
    moves = _task_moves(results, values, bounds, baseline, candidate)
    gains, losses = moves["gains"], moves["losses"]
    tasks = rates["task"].values
    if kind == "auto":
        kind = "tasks" if len(tasks) <= TASK_RATES_MAX_TASKS else "differences"
    names = _names(results, shorten)
    cand_name, base_name = names[candidate], names[baseline]
    draw = _task_rate_bars if kind == "tasks" else _task_differences
    fig, ax, handles, xlabel, ylabel = draw(
        ax, values, moves, bounds, tasks, ci_prob, (base_name, cand_name), (baseline, candidate)
    )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    reserve = _legend(ax, handles)
    n_raw = (int(moves["raw_gains"].sum()), int(moves["raw_losses"].sum()))
    raw = "raw mean scores" if results.data.has_scores else "raw success rates"
    _title(
        ax,
        f"{cand_name} vs {base_name}: {int(gains.sum())} task(s) gained, "
        f"{int(losses.sum())} lost\n(posterior P(rate higher) > {MOVE_PROB:g}, "
        f"P(rate lower) > {MOVE_PROB:g})\n{raw}: {n_raw[0]} task(s) higher, "
        f"{n_raw[1]} lower",
        reserve,
        fontsize="medium",
    )
    return fig, ax


def _move_handles(moves) -> list:
    Patch = _mpl().patches.Patch

    return [
        Patch(
            color=GAIN_COLOR,
            alpha=0.3,
            label="gained: P(candidate's rate higher) > "
            f"{MOVE_PROB:g} ({int(moves['gains'].sum())})",
        ),
        Patch(
            color=LOSS_COLOR,
            alpha=0.3,
            label=f"lost: P(candidate's rate lower) > {MOVE_PROB:g} ({int(moves['losses'].sum())})",
        ),
    ]


def _task_rate_bars(ax, values, moves, bounds, tasks, ci_prob, printed, labels):
    """Each task's two posterior rates side by side (plot_task_rates, kind="tasks")."""
    alpha = 1 - ci_prob
    mean = values.mean(axis=-1)
    lower, upper = np.quantile(values, [alpha / 2, 1 - alpha / 2], axis=-1)
    order = _sort_key(mean[0].mean(axis=-1))
    x = np.arange(len(tasks))
    labelled = len(tasks) <= 40
    ticks = [_ellipsis(str(t), 28) for t in tasks[order]] if labelled else []
    tick_size = "small" if len(tasks) > 20 else "medium"
    below = _text_inches(max(ticks, key=len, default=""), tick_size)  # rotated tick labels
    fig, ax = _single_ax(ax, figsize=(min(max(9, 6 + 0.25 * len(tasks)), 20), 4.0 + below))
    Line2D = _mpl().lines.Line2D

    for gid, mask, color in (
        ("gain", moves["gains"], GAIN_COLOR),
        ("loss", moves["losses"], LOSS_COLOR),
    ):
        where = mask[order]
        bars = ax.bar(
            x[where],
            np.ones(where.sum()),
            bottom=0.0,
            width=0.9,
            color=color,
            alpha=0.12,
            linewidth=0,
        )
        _set_gid(bars, gid)
    handles = _move_handles(moves)
    offsets = _offsets(2 * len(bounds), 0.3 if len(bounds) > 1 else 0.15)
    i = 0
    for s, (system, name, color) in enumerate(zip(labels, printed, ("C0", "C1"), strict=True)):
        for b, bound in enumerate(bounds):
            xs = x + offsets[i]
            i += 1
            tag = f"{system}" + ("" if bound is None else f":{bound}")
            lines = ax.vlines(
                xs, lower[s, order, b], upper[s, order, b], color=color, linewidth=1.5
            )
            lines.set_gid(f"interval:{tag}")
            (points,) = ax.plot(
                xs,
                mean[s, order, b],
                linestyle="none",
                marker=BOUND_MARKERS[bound],
                color=color,
                markersize=5,
            )
            points.set_gid(f"mean:{tag}")
        role = "baseline" if s == 0 else "candidate"
        handles.append(
            Line2D(
                [],
                [],
                color=color,
                marker="o" if bounds == [None] else None,
                label=f"{name} ({role})",
            )
        )
    handles += _bound_handles(bounds)
    if labelled:  # long task ids keep their start and end
        ax.set_xticks(x, ticks, rotation=90, fontsize=tick_size)
    else:
        ax.set_xticks([])
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_ylim(-0.02, 1.02)
    return (
        fig,
        ax,
        handles,
        f"task (sorted by {printed[0]}'s posterior mean rate)",
        f"task rate: posterior mean, {ci_prob:.0%} interval",
    )


def _task_differences(ax, values, moves, bounds, tasks, ci_prob, printed, labels):
    """Each task's posterior difference of rates, sorted (plot_task_rates, kind="differences")."""
    Line2D, Patch = _mpl().lines.Line2D, _mpl().patches.Patch

    alpha = 1 - ci_prob
    defined = moves["defined"]
    d_low, d_high = moves["d_low"][defined], moves["d_high"][defined]
    m_low, m_high = d_low.mean(axis=-1), d_high.mean(axis=-1)
    lower = np.quantile(d_low, alpha / 2, axis=-1)
    upper = np.quantile(d_high, 1 - alpha / 2, axis=-1)
    order = np.argsort((m_low + m_high) / 2, kind="stable")
    gains, losses = moves["gains"][defined][order], moves["losses"][defined][order]
    colors = np.where(gains, GAIN_COLOR, np.where(losses, LOSS_COLOR, "0.6"))
    x = np.arange(len(order))
    fig, ax = _single_ax(ax, figsize=(10, 4.5))
    lines = ax.vlines(
        x,
        lower[order],
        upper[order],
        colors=colors.tolist(),
        linewidth=0.6 if len(x) > 200 else 1.2,
        alpha=0.3 if len(x) > 200 else 0.6,
    )
    lines.set_gid("difference-interval")
    marks = [(None, m_low)] if bounds == [None] else [("lower", m_low), ("upper", m_high)]
    for bound, m in marks:
        points = ax.scatter(
            x,
            m[order],
            c=colors.tolist(),
            marker=BOUND_MARKERS[bound],
            s=6 if len(x) > 200 else 12,
            zorder=3,
            linewidths=0,
        )
        points.set_gid("difference-mean" + ("" if bound is None else f"-{bound}"))
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xlim(-0.01 * len(x) - 0.6, 1.01 * len(x) - 0.4)
    ax.set_ylim(-1.02, 1.02)
    handles = _move_handles(moves)
    handles.append(Patch(color="0.6", alpha=0.6, label="other tasks"))
    handles.append(
        Line2D(
            [],
            [],
            color="0.3",
            marker="o" if bounds == [None] else None,
            label=f"posterior mean, {ci_prob:.0%} interval",
        )
    )
    if bounds != [None]:
        handles += [
            Line2D(
                [],
                [],
                color="black",
                linestyle="none",
                marker=BOUND_MARKERS[b],
                label=f"{b}: candidate's missing as "
                f"{'failures' if b == 'lower' else 'successes'},\nbaseline's as "
                f"{'successes' if b == 'lower' else 'failures'}",
            )
            for b in bounds
        ]
    n_left = int((~defined).sum())
    left = f"; {n_left} without a rate for both left out" if n_left else ""
    return (
        fig,
        ax,
        handles,
        f"task ({len(x)}), sorted by the posterior mean difference{left}",
        f"rate difference, candidate - baseline\nposterior mean, {ci_prob:.0%} interval",
    )


# -- effect over k -----------------------------------------------------------------------------
def plot_compare_curve(
    results,
    candidate,
    baseline,
    k,
    metric: str = "pass@k",
    estimand: str = "population",
    ci_prob: float = 0.95,
    data=None,
    n_boot=2000,
    seed=0,
    ax=None,
    shorten: bool = True,
    unit: str = "task",
    weighting: str = "task",
    clusters=None,
):
    """The effect over k with its pointwise intervals and simultaneous band.

    Draws :meth:`Results.compare_curve` (the two names in the title shortened by
    :func:`short_names` of all the systems unless ``shorten=False``); with ``data`` the
    paired bootstrap of the curve (``bayeval.bootstrap.compare_curve``, resampling ``unit``,
    within the observed clusters with ``clusters="observed"``, weighted by ``weighting``) is
    drawn beside it, its legend naming the unit; ``clusters`` also picks the posterior's
    population, as in :meth:`Results.compare` (tasks within the observed clusters, or a new
    cluster with ``unit="cluster"``; default: what the clusters support). Resampling
    tasks or clusters, the bootstrap is the twin of the population estimand; beside the
    tasks estimand (these tasks), which has no task-sampling spread, it is wider by design.
    Under ``missing="bounds"`` each crossed bound has its own colour (``lower``: the
    candidate's missing outcomes as failures, the baseline's as successes).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> from bayeval import plots
    >>> fig, ax = plots.plot_compare_curve(res, "A", "B", k=[1, 2, 4, 8], data=data)
    >>> ax.get_xlabel()
    'k'
    """
    _check_results(results)
    validate_choice("unit", unit, ("task", "cluster"))
    validate_choice("weighting", weighting, ("task", "cluster"))
    if clusters not in (None, "observed"):
        raise ValueError(f"clusters must be None or 'observed'; got {clusters!r}")
    # the population whose twin the bootstrap is (a new cluster: the cluster bootstrap's);
    # the hierarchical model has no cluster effects to choose between
    population = {}
    if estimand == "population" and results._paired and (clusters or unit == "cluster"):
        population = {"clusters": clusters or "new", "weighting": weighting}
    curve = results.compare_curve(
        candidate,
        baseline,
        k=k,
        metric=metric,
        estimand=estimand,
        ci_prob=ci_prob,
        **population,
    )
    ks = curve["k"].values
    fig, ax = _single_ax(ax, (8.5, 4.0))
    boot = None
    if data is not None:
        boot = curve_bootstrap(
            data,
            candidate,
            baseline,
            k=ks.tolist(),
            metric=metric,
            unit=unit,
            weighting=weighting,
            clusters=clusters,
            n_boot=n_boot,
            ci_prob=ci_prob,
            seed=seed,
        )
    bounds = _bounds(curve["effect_mean"])
    colors = {None: ("C0", "C1"), "lower": ("C0", "C1"), "upper": ("C2", "C3")}
    what = _bootstrap_words(unit, weighting, clusters, short=True)
    for bound in bounds:
        one = curve if bound is None else curve.sel(missing_bound=bound)
        tag = "" if bound is None else f" ({bound} bound)"
        gid = "" if bound is None else f"-{bound}"
        color, boot_color = colors[bound]
        band, point = one["effect_band"].values, one["effect_interval"].values
        mean = one["effect_mean"].values
        fill = ax.fill_between(
            ks,
            band[:, 0],
            band[:, 1],
            color=color,
            alpha=0.2 if bound is None else 0.12,
            label=f"{ci_prob:.0%} simultaneous band{tag}",
        )
        fill.set_gid("band" + gid)
        bars = ax.errorbar(
            ks,
            mean,
            yerr=[mean - point[:, 0], point[:, 1] - mean],
            fmt="o-",
            color=color,
            capsize=3,
            label=f"posterior mean, {ci_prob:.0%} pointwise{tag}",
        )
        bars.lines[0].set_gid("mean" + gid)
        if boot is not None:
            twin = boot if bound is None else boot.sel(missing_bound=bound)
            bb = twin["effect_band"].values
            (line,) = ax.plot(
                ks, twin["effect"].values, "s--", color=boot_color, label=f"{what} estimate{tag}"
            )
            line.set_gid("bootstrap" + gid)
            ax.plot(ks, bb[:, 0], ":", color=boot_color, label=f"{what} simultaneous band{tag}")
            ax.plot(ks, bb[:, 1], ":", color=boot_color)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(v) for v in ks])
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric} effect")
    names = _names(results, shorten)
    cross = curve["prob_cross"]
    ax.grid(alpha=0.3)
    reserve = _legend(ax)
    _title(
        ax,
        f"{names[candidate]} - {names[baseline]}\n{estimand} estimand: P(the curves "
        f"cross) = {_probability_text(cross, bounds)}",
        reserve,
        fontsize="medium",
    )
    return fig, ax
