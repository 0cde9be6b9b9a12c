"""Plots, each the twin of a compute function: it calls that function and draws its output.

============================  ==========================================================
plot                          draws the output of
============================  ==========================================================
:func:`plot_forest`           :func:`bayeval.crosscheck` (or :meth:`Results.summary`)
:func:`plot_pass_at_k`        :meth:`Results.pass_at_k` / :meth:`Results.pass_hat_k`
:func:`plot_effect`           :meth:`Results.compare`
:func:`plot_task_rates`       :meth:`Results.task_rates`
:func:`plot_ppc`              :meth:`Results.ppc`
:func:`plot_status`           :attr:`EvalData.status_counts` and :attr:`EvalData.coverage`
:func:`plot_ranks`            :meth:`Results.ranks`
:func:`plot_compare_all`      :meth:`Results.compare_all`
:func:`plot_compare_curve`    :meth:`Results.compare_curve` (and its bootstrap twin)
============================  ==========================================================

Every function takes ``ax=None`` (draw into a new figure) or existing matplotlib Axes, and
returns ``(fig, axes)``: the figure and the Axes drawn on (a 1-d array of Axes for
:func:`plot_ppc` over several systems). Under ``missing="bounds"`` both bounds are drawn:
``lower`` (missing outcomes as failures, marker ``v``) and ``upper`` (as successes, ``^``).

Drawn at real sizes (tens of systems, hundreds of tasks), every plot shares one set of
rules: systems take their colours from :func:`palette` (distinct for any number); system
names are printed shortened by :func:`short_names` (``shorten=False`` prints them whole);
the legend stands to the right of the Axes, in smaller type and more columns as entries
grow, with each bound's marker or line style given once rather than once per system; and
titles are wrapped to the width the legend leaves.

matplotlib is needed here only, and is imported when a plot is drawn (``pip install
'bayeval[plots]'``); ``import bayeval`` never imports it.
"""

from __future__ import annotations

import functools
import re
import textwrap

import numpy as np
import xarray as xr

from bayeval._validate import describe_values, validate_choice, validate_k, validate_prob
from bayeval.estimators import METRICS

__all__ = [
    "plot_compare_all",
    "plot_compare_curve",
    "plot_cost_success",
    "plot_effect",
    "plot_forest",
    "plot_pass_at_k",
    "plot_ppc",
    "plot_status",
    "plot_ranks",
    "plot_task_rates",
    "palette",
    "short_names",
]

_SAMPLE_DIMS = ["chain", "draw"]
#: Marker of a point estimate for each missing-outcome bound (``None``: no bounds).
BOUND_MARKERS = {None: "o", "lower": "v", "upper": "^"}
BOUND_TEXT = {"lower": "missing as failures", "upper": "missing as successes"}
#: Colour of each status in :func:`plot_status`.
STATUS_COLORS = {
    "ok": "#4c9a5f",
    "invalid": "#e6a532",
    "timeout": "#d1603d",
    "error": "#a23b72",
    "no_verdict": "#6c8ebf",
    "not_run": "#b0b0b0",
}
GAIN_COLOR, LOSS_COLOR = "#2ca02c", "#d62728"


# -- shared helpers ----------------------------------------------------------------------------
def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError(
            "bayeval's plots need matplotlib, which is not installed: pip install 'bayeval[plots]'"
        ) from err
    return plt


def _axes_class():
    _pyplot()
    from matplotlib.axes import Axes

    return Axes


def _check_results(results):
    from bayeval.results import Results

    if not isinstance(results, Results):
        raise TypeError(
            f"results must be a bayeval Results (from be.fit or be.load); "
            f"got {type(results).__name__}"
        )


def _single_ax(ax, figsize):
    """A new figure and Axes, or the given Axes and its figure."""
    if ax is None:
        fig, ax = _pyplot().subplots(figsize=figsize, layout="constrained")
        return fig, ax
    if not isinstance(ax, _axes_class()):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    return ax.figure, ax


def _single_k(k) -> int:
    ks, scalar = validate_k(k)
    if not scalar and len(ks) != 1:
        raise ValueError(
            f"k must be a single positive integer for this plot; got {k!r} "
            "(plot_pass_at_k draws a metric over several k)"
        )
    return int(ks[0])


def _check_system(role: str, label, systems: list) -> None:
    if np.ndim(label) != 0 or label not in systems:
        raise ValueError(
            f"{role} {label!r} is not a system of these results; systems: "
            f"{describe_values(systems)}"
        )


def _system_list(name: str, value, systems: list) -> list:
    """``None`` -> every system; a label or a sequence of labels, each checked."""
    if value is None:
        return list(systems)
    chosen = [value] if np.ndim(value) == 0 else list(value)
    if not chosen:
        raise ValueError(f"{name} must name at least one system; got an empty sequence")
    unknown = [s for s in chosen if s not in systems]
    if unknown:
        raise ValueError(
            f"{name}: unknown system(s) {describe_values(unknown)}; systems of "
            f"these results: {describe_values(systems)}"
        )
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"{name} must not repeat a system; got {describe_values(chosen)}")
    return chosen


def _bounds(obj) -> list:
    """Missing-outcome bounds of an array or dataset, ``[None]`` when it has none."""
    if "missing_bound" in obj.dims:
        return obj["missing_bound"].values.tolist()
    return [None]


def _at(da: xr.DataArray, bound) -> xr.DataArray:
    return da if bound is None else da.sel(missing_bound=bound)


def _bound_suffix(bound) -> str:
    return "" if bound is None else f" ({bound} bound: {BOUND_TEXT[bound]})"


def _offsets(n: int, half_width: float) -> np.ndarray:
    return np.linspace(-half_width, half_width, n) if n > 1 else np.zeros(1)


def _metric_name(metric: str, k: int) -> str:
    return f"{metric[:-1]}{k}"


#: Points of each font size name at matplotlib's default 10 pt (what the layout estimates use).
_FONT_POINTS = {
    "xx-small": 5.79,
    "x-small": 6.94,
    "small": 8.33,
    "medium": 10.0,
    "large": 12.0,
    "x-large": 14.4,
}
#: Width of an average character of DejaVu Sans, in ems (for layout estimates).
_CHAR_EM = 0.53


def _text_inches(text: str, fontsize) -> float:
    """Estimated width in inches of the longest line of ``text`` at ``fontsize``."""
    points = _FONT_POINTS.get(fontsize, fontsize)
    longest = max((len(line) for line in str(text).splitlines()), default=0)
    return longest * points * _CHAR_EM / 72


def _legend_layout(n_entries: int, height: float) -> tuple[str, int]:
    """Font size and number of columns for a legend of ``n_entries`` beside an Axes
    ``height`` inches tall: ``small`` in one column while the entries fit, then
    ``x-small``, then as many columns as needed."""
    for fontsize in ("small", "x-small"):
        rows = max(1, int(height * 72 / (_FONT_POINTS[fontsize] * 1.75)))
        if n_entries <= rows:
            return fontsize, 1
    return "x-small", int(np.ceil(n_entries / rows))


def _legend(ax, handles=None) -> float:
    """The legend policy of every plot: to the right of the Axes, clear of what is drawn;
    ``small`` in one column while the entries fit beside the Axes, ``x-small`` and more
    columns beyond. Returns the legend's estimated width in inches."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    else:
        labels = [h.get_label() for h in handles]
    height = ax.figure.get_figheight() * ax.get_position().height
    fontsize, ncol = _legend_layout(len(labels), height)
    ax.legend(
        handles=handles,
        labels=labels,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=fontsize,
        frameon=False,
        ncol=ncol,
        columnspacing=1.0,
        handlelength=1.8,
    )
    rows = int(np.ceil(len(labels) / ncol)) if labels else 0
    widths = [_text_inches(label, fontsize) for label in labels]
    columns = [max(widths[c * rows : (c + 1) * rows], default=0.0) for c in range(ncol)]
    return sum(columns) + ncol * 0.45


def _title(ax, text: str, reserve: float = 0.0, fontsize="large", **kwargs) -> None:
    """Set a title that fits: each line wrapped to the width the Axes will have once
    ``reserve`` inches (a legend beside it) are taken, and shrunk to ``medium`` when it
    would wrap to more than three lines."""
    fig = ax.figure
    if len(fig.axes) == 1:  # the figure's own Axes: all its width but the tick labels
        width = fig.get_figwidth() - 1.0 - reserve
    else:
        width = fig.get_figwidth() * ax.get_position().width - reserve
    width = max(1.5, width)

    def wrapped(size):
        chars = max(20, int(width * 72 / (_FONT_POINTS[size] * _CHAR_EM)))
        return [
            part
            for line in str(text).splitlines()
            for part in (textwrap.wrap(line, chars, break_on_hyphens=False) or [""])
        ]

    lines = wrapped(fontsize)
    if len(lines) > len(str(text).splitlines()) + 1 and fontsize == "large":
        fontsize = "medium"
        lines = wrapped(fontsize)
    ax.set_title("\n".join(lines), fontsize=fontsize, **kwargs)


def _lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) coordinates of sRGB colours in [0, 1], shape (..., 3)."""
    rgb = np.asarray(rgb, dtype=float)
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = linear @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack(
        [116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])],
        axis=-1,
    )


def palette(n: int) -> list[tuple[float, float, float]]:
    """Distinct colours for ``n`` systems, the same ones in every plot.

    Up to 10: matplotlib's ``tab10`` (``C0`` ... ``C9``); beyond, ``tab10`` followed by
    colours chosen one at a time from a grid of sRGB colours (CIELAB lightness 25-85,
    visible on white) as far as possible, in CIELAB distance, from every colour already
    chosen: perceptually spaced, no two of 45 colours less than 25 CIELAB units apart
    (the closest two of ``tab10`` are 28 apart, of ``tab20`` 17).

    Examples
    --------
    >>> from bayeval.plots import palette
    >>> len(palette(45)), len(set(palette(45)))
    (45, 45)
    >>> palette(2)[0] == palette(45)[0]
    True
    """
    n = int(n)
    return list(_palette(max(n, 0)))[:n]


@functools.lru_cache(maxsize=8)
def _palette(n: int) -> tuple:
    from matplotlib import colormaps

    tab10 = [tuple(float(v) for v in c[:3]) for c in colormaps["tab10"].colors]
    if n <= 10:
        return tuple(tab10[:n])
    chosen = list(tab10)
    steps = np.linspace(0.0, 1.0, 11)
    grid = np.stack(np.meshgrid(steps, steps, steps, indexing="ij"), -1).reshape(-1, 3)
    lab = _lab(grid)
    keep = (lab[:, 0] >= 25) & (lab[:, 0] <= 85)
    grid, lab = grid[keep], lab[keep]
    nearest = np.min(
        np.linalg.norm(lab[:, None, :] - _lab(np.array(chosen))[None], axis=-1), axis=1
    )
    while len(chosen) < n:
        best = int(np.argmax(nearest))
        chosen.append(tuple(float(v) for v in grid[best]))
        nearest = np.minimum(nearest, np.linalg.norm(lab - lab[best], axis=-1))
    return tuple(chosen)


def _names(results, shorten: bool) -> dict:
    """Label -> the name printed for it: :func:`short_names` of all the systems of
    ``results`` (so a pair is shortened by what every system shares), or the label."""
    systems = list(results.systems)
    printed = short_names(systems) if shorten else [str(s) for s in systems]
    return dict(zip(systems, printed, strict=True))


def _bound_handles(bounds: list, linestyles: bool = False) -> list:
    """One legend entry per missing-outcome bound, in black: its marker (or line style)."""
    from matplotlib.lines import Line2D

    styles = {"lower": "--", "upper": ":"}
    return [
        Line2D(
            [],
            [],
            color="black",
            linestyle=styles[b] if linestyles else "none",
            marker=None if linestyles else BOUND_MARKERS[b],
            label=f"{b} bound: {BOUND_TEXT[b]}",
        )
        for b in bounds
        if b is not None
    ]


def _set_gid(bars, gid: str) -> None:
    """Tag every bar of a BarContainer (containers have no gid of their own)."""
    for patch in bars.patches:
        patch.set_gid(gid)


def _sort_key(values: np.ndarray) -> np.ndarray:
    """Ascending order with NaN first (drawn at the bottom / left)."""
    return np.argsort(np.where(np.isnan(values), -np.inf, values), kind="stable")


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
    from bayeval.analyses.crosscheck import crosscheck

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
    from matplotlib.lines import Line2D

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
    from bayeval.results import _interval

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
    from matplotlib.lines import Line2D

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
    import arviz_plots
    from arviz_plots import PlotCollection
    from matplotlib.lines import Line2D

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
    options = {}
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
    """What :func:`plot_task_rates` counts: gains and losses by the posterior rule and by
    the raw success rates, and the per-task differences it draws (see its docstring)."""
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
    ds = results.data.dataset.sel(system=[baseline, candidate])
    trials = ds["trials"].values.astype(float)
    successes = ds["successes"]
    if "missing_bound" in successes.dims:
        low = successes.sel(missing_bound="lower").values
        high = successes.sel(missing_bound="upper").values
    else:
        low = high = successes.values
    counted = (trials > 0).all(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_low, r_high = low / trials, high / trials
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
    raw count: tasks whose observed success rate (successes / trials) is higher for the
    candidate, and lower, among tasks with a valid trial for both. The two differ: a task
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
    _title(
        ax,
        f"{cand_name} vs {base_name}: {int(gains.sum())} task(s) gained, "
        f"{int(losses.sum())} lost\n(posterior P(rate higher) > {MOVE_PROB:g}, "
        f"P(rate lower) > {MOVE_PROB:g})\nraw success rates: {n_raw[0]} task(s) higher, "
        f"{n_raw[1]} lower",
        reserve,
        fontsize="medium",
    )
    return fig, ax


def _move_handles(moves) -> list:
    from matplotlib.patches import Patch

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
    from matplotlib.lines import Line2D

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
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

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


# -- posterior predictive check ----------------------------------------------------------------
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


# -- statuses ----------------------------------------------------------------------------------
def plot_status(data, ax=None, shorten: bool = True):
    """Status of every planned attempt, per system, with coverage.

    Draws :attr:`EvalData.status_counts` as stacked horizontal bars (one segment per status
    present: ``ok``, ``invalid``, ``timeout``, ``error``, ``no_verdict``, ``not_run``) and
    writes :attr:`EvalData.coverage` (the share of planned attempts with a valid outcome)
    at the end of each bar.

    Parameters
    ----------
    data : EvalData or Results
        A :class:`~bayeval.Results` is read through its ``data``.
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
    >>> import pandas as pd, bayeval as be
    >>> from bayeval import plots
    >>> df = pd.DataFrame({"system": ["A", "A", "B", "B"], "task": ["t1", "t2"] * 2,
    ...                    "success": [1, None, 0, 1]})
    >>> fig, ax = plots.plot_status(be.from_frame(df, missing="fail"))
    >>> [t.get_text() for t in ax.texts]
    ['coverage 50.0%', 'coverage 100.0%']
    >>> plt.close(fig)
    """
    from bayeval.data import STATUSES, EvalData
    from bayeval.results import Results

    _pyplot()
    if isinstance(data, Results):
        data = data.data
    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData or a Results; got {type(data).__name__}")
    counts = data.status_counts
    coverage = data.coverage
    systems = data.systems
    fig, ax = _single_ax(
        ax, figsize=(10, 1.5 + (0.4 if len(systems) <= 25 else 0.28) * len(systems))
    )
    rows = np.arange(len(systems))
    left = np.zeros(len(systems))
    for status in STATUSES:
        widths = counts[status].reindex(systems).to_numpy(dtype=float)
        if status != "ok" and not widths.any():
            continue
        bars = ax.barh(
            rows, widths, left=left, color=STATUS_COLORS[status], label=status, height=0.7
        )
        _set_gid(bars, f"status:{status}")
        left = left + widths
    for row, system in zip(rows, systems, strict=True):
        ax.annotate(
            f"coverage {coverage[system]:.1%}",
            (left[row], row),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            ha="left",
            fontsize="small",
        )
    names = _names(data, shorten)
    ax.set_yticks(rows, [names[s] for s in systems])
    ax.set_ylim(len(systems) - 0.4, -0.6)  # the first system at the top
    ax.set_xlim(0, left.max() * 1.25 if left.max() > 0 else 1)
    ax.set_xlabel("planned attempts")
    reserve = _legend(ax)
    _title(ax, f"Attempt statuses per system (missing policy: {data.missing})", reserve)
    return fig, ax


# -- many systems ------------------------------------------------------------------------------
_SEPARATORS = "_-/ .:"


def short_names(labels, max_length: int = 40) -> list[str]:
    """System labels without the prefix and suffix they all share, for axes and legends.

    Only whole parts (split at ``_ - / space . :``) are stripped, and only while the names
    stay distinct and none becomes empty. First, a leading run date (``20250807_``) is
    dropped from the names that have one, and the leading parts (split at ``_`` and ``-``)
    that every name has alike: a run date or a harness version in each (``mini-v1.7.0_``),
    or, among three or more names, the same text; then, among three or more names, the
    prefix and suffix all share (what two names share is half of what tells them apart); a
    name still longer than ``max_length`` keeps its start and end around an ellipsis (again
    only while the names stay distinct).

    Examples
    --------
    >>> from bayeval.plots import short_names
    >>> short_names(["2025_mini-v1_claude-opus", "2025_mini-v1_gpt-5", "2025_mini-v1_kimi"])
    ['claude-opus', 'gpt-5', 'kimi']
    >>> short_names(["20250807_mini-v1.7.0_gpt-5", "20251124_mini-v1.16.0_gpt-5.1-codex",
    ...              "20250726_mini-v1.0.0_o3-2025-04-16"])
    ['gpt-5', 'gpt-5.1-codex', 'o3-2025-04-16']
    >>> short_names(["DSCoder-33b-Ins", "DSCoder-6.7b-Ins"])
    ['DSCoder-33b-Ins', 'DSCoder-6.7b-Ins']
    """
    names = [str(label) for label in labels]
    if len(names) < 3:
        out = _drop_versioned_fields(names, same_text=False) if len(names) == 2 else names
        return [_ellipsis(n, max_length) for n in out]
    out = _strip_shared(_drop_versioned_fields(names))
    if len(set(out)) < len(out):
        out = names
    short = [_ellipsis(n, max_length) for n in out]
    return short if len(set(short)) == len(short) else out


#: A run date or number (six digits or more) or a harness release (``v1.16.0``): a leading
#: part of a system label that :func:`short_names` may drop (a model's own version, such as
#: ``v2`` or ``1.5``, is kept).
_RUN_FIELD = re.compile(r"[0-9]{6,}|v[0-9]+(\.[0-9]+)+")


def _drop_versioned_fields(names: list[str], same_text: bool = True) -> list[str]:
    """Drop a leading run date (eight digits and ``_``) from the names that have one, then
    leading parts (split at ``_`` and ``-``) that every name has alike: each a date / run
    number (six digits or more) or each a release (``v1.16.0``, ``v0.0.0``), or the
    same text (with ``same_text=False`` only where a version follows it, as in
    ``mini-v1.7.0``); each step only while the names stay distinct and none becomes
    empty."""
    undated = [re.sub(r"^(19|20)[0-9]{6}_(?=.)", "", n) for n in names]
    if len(set(undated)) == len(undated):
        names = undated

    def heads_and_rests(values):
        split = [re.split(r"[_-]", n, maxsplit=1) for n in values]
        if not all(len(parts) == 2 and parts[1] for parts in split):
            return None, None
        return [p[0] for p in split], [p[1] for p in split]

    def versioned(heads):
        return all(_RUN_FIELD.fullmatch(h) for h in heads)

    while True:
        heads, rests = heads_and_rests(names)
        if heads is None:
            return names
        alike = versioned(heads)
        if not alike and len(set(heads)) == 1:
            if same_text:
                alike = True
            else:  # the same text only with a version after it
                after, later = heads_and_rests(rests)
                if after is not None and versioned(after) and len(set(later)) == len(later):
                    rests = later
                    alike = True
        if not alike or len(set(rests)) < len(rests):
            return names
        names = rests


def _strip_shared(names: list[str]) -> list[str]:
    def cuts(name):  # positions just after a separator
        return [i + 1 for i, ch in enumerate(name) if ch in _SEPARATORS]

    prefix = 0
    for cut in cuts(names[0]):
        head = names[0][:cut]
        if all(n.startswith(head) and len(n) > cut for n in names):
            prefix = cut
    stripped = [n[prefix:] for n in names]
    suffix = 0
    for cut in cuts(stripped[0][::-1]):
        tail = stripped[0][len(stripped[0]) - cut :]
        if all(n.endswith(tail) and len(n) > cut for n in stripped):
            suffix = cut
    return [n[: len(n) - suffix] if suffix else n for n in stripped]


def _ellipsis(name: str, max_length: int) -> str:
    if len(name) <= max_length:
        return name
    keep = max_length - 1
    return name[: keep - keep // 2] + "…" + name[len(name) - keep // 2 :]


def _height(n_rows: int) -> float:
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
):
    """Each system's posterior rank: its interval, its mean, and P(best) beside the name.

    Draws :meth:`Results.ranks`, best system at the top; names are shortened by
    :func:`short_names` (``shorten=False``: printed whole) and the figure grows with the
    number of systems. Under ``missing="bounds"`` each system has the rank of both bounds
    (``v``: missing outcomes as failures, ``^``: as successes), and P(best) of each.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> from bayeval import plots
    >>> fig, ax = plots.plot_ranks(res)
    >>> [label.get_text() for label in ax.get_yticklabels()][-1]
    'B  P(best) 0.97'
    """
    _check_results(results)
    out = results.ranks(metric=metric, k=k, estimand=estimand, top=top, ci_prob=ci_prob)
    bounds = _bounds(out["rank_mean"])
    systems = results.systems
    rank_mean = out["rank_mean"].transpose("system", ...).values.reshape(len(systems), -1)
    interval = (
        out["rank_interval"]
        .transpose("system", ..., "ci_bound")
        .values.reshape(len(systems), -1, 2)
    )
    best = out["prob_best"].transpose("system", ...).values.reshape(len(systems), -1)
    order = np.argsort(rank_mean.mean(axis=1), kind="stable")[::-1]  # best drawn at the top
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
            label=f"{ci_prob:.0%} rank interval" + suffix,
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
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins="auto"))
    ax.set_xlabel("rank (1 = best)")
    ax.grid(axis="x", alpha=0.3)
    name = _metric_name(metric, _single_k(k))
    if bounds == [None]:
        reserve = _legend(ax)
    else:
        from matplotlib.lines import Line2D

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
):
    """The effect over k with its pointwise intervals and simultaneous band.

    Draws :meth:`Results.compare_curve` (the two names in the title shortened by
    :func:`short_names` of all the systems unless ``shorten=False``); with ``data`` the paired
    task bootstrap band
    (``bayeval.bootstrap.compare_curve``) is drawn beside it. Resampling tasks, the
    bootstrap is the twin of the population estimand (tasks like these); beside the tasks
    estimand (these tasks), which has no task-sampling spread, it is wider by design.

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
    curve = results.compare_curve(
        candidate, baseline, k=k, metric=metric, estimand=estimand, ci_prob=ci_prob
    )
    ks = curve["k"].values
    fig, ax = _single_ax(ax, (8.5, 4.0))
    band, point = curve["effect_band"].values, curve["effect_interval"].values
    mean = curve["effect_mean"].values
    ax.fill_between(
        ks, band[:, 0], band[:, 1], color="C0", alpha=0.2, label=f"{ci_prob:.0%} simultaneous band"
    )
    ax.errorbar(
        ks,
        mean,
        yerr=[mean - point[:, 0], point[:, 1] - mean],
        fmt="o-",
        color="C0",
        capsize=3,
        label=f"posterior mean, {ci_prob:.0%} pointwise",
    )
    if data is not None:
        from bayeval.analyses.curves import curve_bootstrap

        boot = curve_bootstrap(
            data,
            candidate,
            baseline,
            k=ks.tolist(),
            metric=metric,
            n_boot=n_boot,
            ci_prob=ci_prob,
            seed=seed,
        )
        bb = boot["effect_band"].values
        ax.plot(ks, boot["effect"].values, "s--", color="C1", label="task bootstrap estimate")
        ax.plot(ks, bb[:, 0], ":", color="C1", label="task bootstrap simultaneous band")
        ax.plot(ks, bb[:, 1], ":", color="C1")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(v) for v in ks])
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric} effect")
    names = _names(results, shorten)
    cross = float(curve["prob_cross"])
    ax.grid(alpha=0.3)
    reserve = _legend(ax)
    _title(
        ax,
        f"{names[candidate]} - {names[baseline]}\n{estimand} estimand: P(the curves "
        f"cross) = {cross:.2f}",
        reserve,
        fontsize="medium",
    )
    return fig, ax


from bayeval._plot_cost import plot_cost_success  # noqa: E402  (pass@1 against cost)
