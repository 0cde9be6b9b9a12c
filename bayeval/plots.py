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

matplotlib is needed here only, and is imported when a plot is drawn (``pip install
'bayeval[plots]'``); ``import bayeval`` never imports it.
"""

from __future__ import annotations

import textwrap

import numpy as np
import xarray as xr

from bayeval._validate import describe_values, validate_choice, validate_k, validate_prob
from bayeval.estimators import METRICS

__all__ = [
    "plot_compare_all",
    "plot_compare_curve",
    "plot_effect",
    "plot_forest",
    "plot_pass_at_k",
    "plot_ppc",
    "plot_status",
    "plot_ranks",
    "plot_task_rates",
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
            "bayeval's plots need matplotlib, which is not installed: "
            "pip install 'bayeval[plots]'"
        ) from err
    return plt


def _axes_class():
    _pyplot()
    from matplotlib.axes import Axes

    return Axes


def _check_results(results):
    from bayeval.results import Results

    if not isinstance(results, Results):
        raise TypeError(f"results must be a bayeval Results (from be.fit or be.load); "
                        f"got {type(results).__name__}")


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
        raise ValueError(f"k must be a single positive integer for this plot; got {k!r} "
                         "(plot_pass_at_k draws a metric over several k)")
    return int(ks[0])


def _check_system(role: str, label, systems: list) -> None:
    if np.ndim(label) != 0 or label not in systems:
        raise ValueError(f"{role} {label!r} is not a system of these results; systems: "
                         f"{describe_values(systems)}")


def _system_list(name: str, value, systems: list) -> list:
    """``None`` -> every system; a label or a sequence of labels, each checked."""
    if value is None:
        return list(systems)
    chosen = [value] if np.ndim(value) == 0 else list(value)
    if not chosen:
        raise ValueError(f"{name} must name at least one system; got an empty sequence")
    unknown = [s for s in chosen if s not in systems]
    if unknown:
        raise ValueError(f"{name}: unknown system(s) {describe_values(unknown)}; systems of "
                         f"these results: {describe_values(systems)}")
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


def _legend(ax, handles=None) -> None:
    """A legend to the right of the Axes, clear of what is drawn."""
    kwargs = {} if handles is None else {"handles": handles}
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False,
              **kwargs)


def _set_gid(bars, gid: str) -> None:
    """Tag every bar of a BarContainer (containers have no gid of their own)."""
    for patch in bars.patches:
        patch.set_gid(gid)


def _sort_key(values: np.ndarray) -> np.ndarray:
    """Ascending order with NaN first (drawn at the bottom / left)."""
    return np.argsort(np.where(np.isnan(values), -np.inf, values), kind="stable")


# -- forest ------------------------------------------------------------------------------------
def plot_forest(results, k=1, metric: str = "pass@k", estimand: str = "population",
                bootstrap: bool = True, n_boot: int = 2000, seed=0, ci_prob: float = 0.95,
                ax=None):
    """Forest of each system's posterior mean and interval beside its bootstrap twin.

    Draws the output of :func:`bayeval.crosscheck` for one estimand (with ``bootstrap=False``,
    of :meth:`Results.summary`): one row per system, sorted by posterior mean (the highest at
    the top), the posterior mean and equal-tailed interval above the bootstrap estimate and
    percentile interval of the twin unit (``unit="task"`` for the population estimand,
    ``"trial"`` for the tasks estimand). Under ``missing="bounds"`` each interval is drawn
    for both bounds (``v``: missing outcomes as failures, ``^``: as successes).

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
    from bayeval.crosscheck import crosscheck

    _pyplot()
    _check_results(results)
    k = _single_k(k)
    validate_choice("metric", metric, METRICS)
    ci_prob = validate_prob("ci_prob", ci_prob)
    if not isinstance(bootstrap, (bool, np.bool_)):
        raise TypeError(f"bootstrap must be True or False; got {bootstrap!r}")
    if bootstrap:
        table = crosscheck(results, k=k, metric=metric, estimands=[estimand], n_boot=n_boot,
                           seed=seed, ci_prob=ci_prob).sel(estimand=estimand, drop=True)
        unit = str(table["bootstrap_unit"].values)
        series = [("posterior", "C0", table["bayes_mean"], table["bayes_interval"]),
                  ("bootstrap", "C1", table["bootstrap_estimate"], table["bootstrap_interval"])]
    else:
        frame = results.summary(ci_prob=ci_prob, k=[k], metrics=[metric], estimands=[estimand])
        index = ["system"] + (["missing_bound"] if "missing_bound" in frame.columns else [])
        table = frame.set_index(index)[["mean", "lower", "upper"]].to_xarray()
        table = table.reindex(system=results.systems)
        interval = xr.concat([table["lower"], table["upper"]], dim="ci_bound").assign_coords(
            ci_bound=["lower", "upper"])
        series = [("posterior", "C0", table["mean"], interval)]
    bounds = _bounds(series[0][2])
    systems = series[0][2]["system"].values.tolist()
    centre = np.mean([_at(series[0][2], b).values for b in bounds], axis=0)
    order = _sort_key(centre)  # row i (from the bottom) holds system order[i]

    fig, ax = _single_ax(ax, figsize=(10, 1.5 + 0.45 * len(systems)))
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
            points, = ax.plot(est, y, linestyle="none", marker=BOUND_MARKERS[bound],
                              color=color, markersize=6)
            points.set_gid(f"{name}-{what}" + ("" if bound is None else f"-{bound}"))
            label = (f"posterior mean, {ci_prob:.0%} interval" if name == "posterior" else
                     f"{unit} bootstrap estimate, {ci_prob:.0%} interval")
            handles.append(Line2D([], [], color=color, marker=BOUND_MARKERS[bound],
                                  label=label + _bound_suffix(bound)))
    ax.set_yticks(rows, [str(systems[j]) for j in order])
    ax.set_ylim(-0.6, len(systems) - 0.4)
    label = _metric_name(metric, k)
    ax.set_xlabel(label)
    twin = f" vs {unit} bootstrap" if bootstrap else ""
    ax.set_title(f"{label}, estimand={estimand!r}: posterior{twin}")
    ax.grid(axis="x", alpha=0.3)
    _legend(ax, handles)
    return fig, ax


# -- pass@k over k -----------------------------------------------------------------------------
def plot_pass_at_k(results, k=range(1, 11), metric: str = "pass@k",
                   estimand: str = "population", systems=None, ci_prob: float = 0.95, ax=None):
    """Posterior mean of pass@k (or pass^k) against k, with an interval band per system.

    Draws the output of :meth:`Results.pass_at_k` (or :meth:`Results.pass_hat_k` for
    ``metric="pass^k"``): per system the posterior mean at each k and its equal-tailed
    interval as a band. Beyond the smallest number of trials a task has, the model
    extrapolates (and :meth:`Results.pass_at_k` warns): that range of k is shaded. Under
    ``missing="bounds"`` each system has a dashed (``lower``) and a dotted (``upper``) curve.

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

    fig, ax = _single_ax(ax, figsize=(10, 4.5))
    styles = {None: "-", "lower": "--", "upper": ":"}
    for i, system in enumerate(chosen):
        color = f"C{i % 10}"
        for bound in bounds:
            m = _at(mean.sel(system=system), bound).sel(k=ks).values
            lo = _at(interval.sel(system=system, ci_bound="lower"), bound).sel(k=ks).values
            hi = _at(interval.sel(system=system, ci_bound="upper"), bound).sel(k=ks).values
            tag = f"{system}" + ("" if bound is None else f":{bound}")
            line, = ax.plot(ks, m, color=color, linestyle=styles[bound], marker="o",
                            markersize=3, label=f"{system}" + _bound_suffix(bound))
            line.set_gid(f"mean:{tag}")
            band = ax.fill_between(ks, lo, hi, color=color, alpha=0.15, linewidth=0)
            band.set_gid(f"band:{tag}")
    trials = results.data.dataset["trials"].sel(system=chosen).values
    smallest = int(trials[trials > 0].min()) if (trials > 0).any() else 0
    if smallest and ks.max() > smallest:
        span = ax.axvspan(smallest + 0.5, ks.max() + 0.5, color="grey", alpha=0.12,
                          label=f"k > {smallest} trials: extrapolated by the model")
        span.set_gid("extrapolated")
    ax.set_xlabel("k")
    ax.set_ylabel(metric)
    if len(ks) <= 20:
        ax.set_xticks(ks)
    ax.set_title(f"{metric} against k, estimand={estimand!r}: posterior mean and "
                 f"{ci_prob:.0%} interval")
    ax.grid(alpha=0.3)
    _legend(ax)
    return fig, ax


# -- paired effect -----------------------------------------------------------------------------
def _probability_text(values: xr.DataArray, bounds: list) -> str:
    if bounds == [None]:
        return f"{float(values):.2f}"
    return " / ".join(f"{float(values.sel(missing_bound=b)):.2f} ({b})" for b in bounds)


def plot_effect(results, candidate, baseline, metric: str = "pass@k", k=1,
                estimand: str = "population", margin: float = 0.0, ci_prob: float = 0.95,
                ax=None):
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
    out = results.compare(candidate, baseline, metric=metric, k=k, estimand=estimand,
                          margin=margin, ci_prob=ci_prob)
    out = out.drop_vars([c for c in ("k",) if c in out.coords])
    fig, ax = _single_ax(ax, figsize=(10, 4.5))
    import arviz_plots
    from arviz_plots import PlotCollection
    from matplotlib.lines import Line2D

    bounds = _bounds(out["effect"])
    posterior = xr.Dataset({"effect": out["effect"]})
    viz = xr.DataTree(xr.Dataset({
        "figure": np.array(fig, dtype=object), "plot": np.array(ax, dtype=object),
        "row_index": 0, "col_index": 0,
    }))
    options = {}
    if bounds == [None]:
        collection = PlotCollection(posterior, viz, backend="matplotlib")
    else:
        # intervals of the two bounds one under the other, a tenth of the density's height
        sd = float(out["effect"].std(_SAMPLE_DIMS).min())
        step = 0.1 / (max(sd, 1e-6) * np.sqrt(2 * np.pi))
        collection = PlotCollection(posterior, viz, backend="matplotlib",
                                    aes={"color": ["missing_bound"], "y": ["missing_bound"]},
                                    y=[-step * i for i in range(len(bounds))])
        options["aes_by_visuals"] = {visual: ["color", "y"] for visual in
                                     ("credible_interval", "point_estimate",
                                      "point_estimate_text")}
    collection = arviz_plots.plot_dist(
        xr.DataTree.from_dict({"/posterior": posterior}), backend="matplotlib",
        plot_collection=collection, kind="kde", point_estimate="mean", ci_kind="eti",
        ci_prob=ci_prob, sample_dims=_SAMPLE_DIMS,
        stats={"credible_interval": xr.Dataset({"effect": out["effect_interval"]}),
               "point_estimate": xr.Dataset({"effect": out["effect_mean"]})},
        **options,
    )
    for visual in ("dist", "credible_interval", "point_estimate"):
        artists = collection.viz[visual]["effect"]
        for bound in bounds:
            artist = (artists if bound is None else artists.sel(missing_bound=bound)).item()
            artist.set_gid(f"{visual}" + ("" if bound is None else f"-{bound}"))

    handles = []
    zero = ax.axvline(0.0, color="black", linewidth=1,
                      label=f"P(effect > 0) = {_probability_text(out['prob_positive'], bounds)}")
    zero.set_gid("zero")
    handles.append(zero)
    if margin > 0:
        line = ax.axvline(-margin, color="grey", linestyle="--", linewidth=1,
                          label=f"P(effect > -{margin:g}) = "
                          f"{_probability_text(out['prob_noninferior'], bounds)} "
                          "(non-inferior)")
        line.set_gid("margin")
        handles.append(line)
    if bounds != [None]:
        crossed = {"lower": "candidate's missing as failures,\nbaseline's as successes",
                   "upper": "candidate's missing as successes,\nbaseline's as failures"}
        for bound in bounds:
            color = collection.viz["dist"]["effect"].sel(missing_bound=bound).item().get_color()
            handles.append(Line2D([], [], color=color, label=f"{bound} bound: {crossed[bound]}"))
    handles.append(Line2D([], [], color="black", marker="o",
                          label=f"posterior mean, {ci_prob:.0%} interval"))
    _legend(ax, handles)
    name = _metric_name(metric, k)
    title = textwrap.fill(f"{candidate} - {baseline}", 70) + f"\n{name}, estimand={estimand!r}"
    if margin > 0:
        title += (f"\nP(effect > {margin:g}) = "
                  f"{_probability_text(out['prob_above_margin'], bounds)}")
    ax.set_title(title)
    ax.set_xlabel(f"effect on {name}")
    return fig, ax


# -- per-task rates ----------------------------------------------------------------------------
def plot_task_rates(results, candidate, baseline, ci_prob: float = 0.95, ax=None):
    """Posterior task rates of two systems, task by task, with the tasks that move.

    Draws the output of :meth:`Results.task_rates` for ``baseline`` and ``candidate``: each
    task's posterior mean rate and equal-tailed interval, tasks sorted by the baseline's mean
    rate. Tasks where the candidate gains (posterior probability that its rate exceeds the
    baseline's above 0.9) are shaded green, tasks where it loses (that probability below 0.1)
    red. Under ``missing="bounds"`` both bounds are drawn and a task counts as a gain (loss)
    only if it does at the crossed bound least favourable to that claim (candidate's missing
    as failures and baseline's as successes for a gain; the reverse for a loss). Tasks
    without a valid trial have no rate and are drawn empty.

    Parameters
    ----------
    results : Results
    candidate, baseline : system labels
    ci_prob : float, default 0.95
    ax : matplotlib Axes, optional

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
    >>> plt.close(fig)
    """
    _pyplot()
    _check_results(results)
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        _check_system(role, label, results.systems)
    if candidate == baseline:
        raise ValueError("candidate and baseline must be different systems")
    ci_prob = validate_prob("ci_prob", ci_prob)
    rates = results.task_rates(system=[baseline, candidate])
    bounds = _bounds(rates)
    order_dims = ["system", "task"] + ([] if bounds == [None] else ["missing_bound"])
    values = rates.stack(sample=_SAMPLE_DIMS).transpose(*order_dims, "sample").values
    if bounds == [None]:
        values = values[:, :, None, :]  # (system, task, bound, sample)
    alpha = 1 - ci_prob
    mean = values.mean(axis=-1)
    lower, upper = np.quantile(values, [alpha / 2, 1 - alpha / 2], axis=-1)
    base, cand = values[0], values[1]
    with np.errstate(invalid="ignore"):
        if bounds == [None]:
            gain_p = loss_p = (cand[:, 0] > base[:, 0]).mean(axis=-1)
        else:
            lo, up = bounds.index("lower"), bounds.index("upper")
            gain_p = (cand[:, lo] > base[:, up]).mean(axis=-1)
            loss_p = (cand[:, up] > base[:, lo]).mean(axis=-1)
    defined = ~np.isnan(mean[0]).any(axis=-1) & ~np.isnan(mean[1]).any(axis=-1)
    gains = defined & (gain_p > 0.9)
    losses = defined & (loss_p < 0.1)

    tasks = rates["task"].values
    order = _sort_key(mean[0].mean(axis=-1))
    x = np.arange(len(tasks))
    fig, ax = _single_ax(ax, figsize=(min(6 + 0.25 * len(tasks), 20), 4.5))
    from matplotlib.patches import Patch

    shade = {"gain": (gains, GAIN_COLOR, f"{candidate} gains: P(rate higher) > 0.9"),
             "loss": (losses, LOSS_COLOR, f"{candidate} loses: P(rate higher) < 0.1")}
    handles = []
    for gid, (mask, color, label) in shade.items():
        where = mask[order]
        bars = ax.bar(x[where], np.ones(where.sum()), bottom=0.0, width=0.9, color=color,
                      alpha=0.12, linewidth=0)
        _set_gid(bars, gid)
        handles.append(Patch(color=color, alpha=0.3, label=f"{label} ({int(mask.sum())})"))
    entries = [(0, baseline, "C0"), (1, candidate, "C1")]
    offsets = _offsets(2 * len(bounds), 0.3 if len(bounds) > 1 else 0.15)
    from matplotlib.lines import Line2D

    i = 0
    for s, system, color in entries:
        for b, bound in enumerate(bounds):
            xs = x + offsets[i]
            i += 1
            tag = f"{system}" + ("" if bound is None else f":{bound}")
            lines = ax.vlines(xs, lower[s, order, b], upper[s, order, b], color=color,
                              linewidth=1.5)
            lines.set_gid(f"interval:{tag}")
            points, = ax.plot(xs, mean[s, order, b], linestyle="none",
                              marker=BOUND_MARKERS[bound], color=color, markersize=5)
            points.set_gid(f"mean:{tag}")
            role = "baseline" if s == 0 else "candidate"
            handles.append(Line2D([], [], color=color, marker=BOUND_MARKERS[bound],
                                  label=f"{system} ({role})" + _bound_suffix(bound)))
    if len(tasks) <= 40:
        ax.set_xticks(x, [str(t) for t in tasks[order]], rotation=90)
    else:
        ax.set_xticks([])
    ax.set_xlim(-0.6, len(tasks) - 0.4)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"task (sorted by {baseline}'s posterior mean rate)")
    ax.set_ylabel(f"task rate: posterior mean, {ci_prob:.0%} interval")
    ax.set_title(f"{candidate} vs {baseline}: {int(gains.sum())} task(s) gained, "
                 f"{int(losses.sum())} lost")
    _legend(ax, handles)
    return fig, ax


# -- posterior predictive check ----------------------------------------------------------------
def _panels(ax, n: int):
    """Axes for ``n`` panels: new ones, or the given Axes (one, or a sequence of ``n``)."""
    Axes = _axes_class()
    if ax is None:
        ncols = min(n, 3)
        nrows = int(np.ceil(n / ncols))
        fig, grid = _pyplot().subplots(nrows, ncols, figsize=(4.5 * ncols, 3.6 * nrows),
                                       squeeze=False, layout="constrained")
        flat = grid.ravel()
        for extra in flat[n:]:
            fig.delaxes(extra)
        return fig, flat[:n]
    given = [ax] if isinstance(ax, Axes) else list(np.ravel(np.asarray(ax, dtype=object)))
    if not all(isinstance(a, Axes) for a in given):
        raise TypeError(f"ax must be a matplotlib Axes, a sequence of Axes or None; got "
                        f"{type(ax).__name__} holding {sorted({type(a).__name__ for a in given})}")
    if len(given) != n:
        raise ValueError(f"ax must hold one matplotlib Axes per system drawn ({n}); got "
                         f"{len(given)}")
    flat = np.empty(n, dtype=object)
    flat[:] = given
    return flat[0].figure, flat


def plot_ppc(results, system=None, ax=None):
    """Posterior predictive check of the per-task success-count histogram.

    Draws the output of :meth:`Results.ppc` (95% intervals): per system, the observed number
    of tasks with each success count as bars and the predictive mean and interval for new
    tasks from the fitted population as points with vertical bars. The title gives the share
    of tasks always or never solved, observed and predicted, with its predictive p-value
    (red when flagged, ``p < 0.01``). Under ``missing="bounds"`` each count has two bars, the
    ``lower`` bound (left) and the hatched ``upper`` bound (right).

    Parameters
    ----------
    results : Results
        A fit of a population model (``hierarchical`` or ``logit_normal``).
    system : label or sequence of labels, optional
        Default: every system, one panel each.
    ax : matplotlib Axes or sequence of Axes, optional
        One Axes per system drawn.

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
    ci_prob = check.attrs["ci_prob"]
    width = 0.8 / len(bounds)
    offsets = _offsets(len(bounds), 0.2) if len(bounds) > 1 else np.zeros(1)
    for panel, label in zip(axes, chosen, strict=True):
        one = check.sel(system=label)
        for b, bound in enumerate(bounds):
            tag = f"{label}" + ("" if bound is None else f":{bound}")
            xs = counts + offsets[b]
            observed = _at(one["observed_histogram"], bound).sel(count=counts).values
            bars = panel.bar(xs, observed, width=width, color="0.75", edgecolor="0.45",
                             hatch=None if bound != "upper" else "//",
                             label="observed" + ("" if bound is None else f" ({bound})"))
            _set_gid(bars, f"observed:{tag}")
            interval = _at(one["predicted_histogram_interval"], bound).sel(count=counts)
            lines = panel.vlines(xs, interval.sel(ci_bound="lower").values,
                                 interval.sel(ci_bound="upper").values, color="C0",
                                 linewidth=1.5)
            lines.set_gid(f"interval:{tag}")
            points, = panel.plot(xs, _at(one["predicted_histogram"], bound).sel(
                count=counts).values, linestyle="none", marker=BOUND_MARKERS[bound],
                color="C0", markersize=5,
                label=f"predicted, {ci_prob:.0%}" + ("" if bound is None else f" ({bound})"))
            points.set_gid(f"predicted:{tag}")
        parts = []
        for bound in bounds:
            obs = float(_at(one["observed_extreme_share"], bound))
            pred = float(_at(one["predicted_extreme_share"], bound))
            p = float(_at(one["p_value"], bound))
            parts.append(("" if bound is None else f"{bound}: ")
                         + f"always/never solved {obs:.2f}, predicted {pred:.2f}, p = {p:.2f}")
        flagged = bool(one["flagged"].any())
        panel.set_title("\n".join([str(label), *parts]), fontsize="small",
                        color="#d62728" if flagged else "black")
        panel.set_xticks(counts)
        panel.set_xlabel("successes per task")
        panel.set_ylabel("tasks")
    axes[0].legend(loc="best", fontsize="x-small")
    return (fig, axes[0]) if squeeze else (fig, axes)


# -- statuses ----------------------------------------------------------------------------------
def plot_status(data, ax=None):
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
    fig, ax = _single_ax(ax, figsize=(10, 1.5 + 0.4 * len(systems)))
    rows = np.arange(len(systems))
    left = np.zeros(len(systems))
    for status in STATUSES:
        widths = counts[status].reindex(systems).to_numpy(dtype=float)
        if status != "ok" and not widths.any():
            continue
        bars = ax.barh(rows, widths, left=left, color=STATUS_COLORS[status], label=status,
                       height=0.7)
        _set_gid(bars, f"status:{status}")
        left = left + widths
    for row, system in zip(rows, systems, strict=True):
        ax.annotate(f"coverage {coverage[system]:.1%}", (left[row], row), xytext=(4, 0),
                    textcoords="offset points", va="center", ha="left", fontsize="small")
    ax.set_yticks(rows, [str(s) for s in systems])
    ax.invert_yaxis()
    ax.set_xlim(0, left.max() * 1.25 if left.max() > 0 else 1)
    ax.set_xlabel("planned attempts")
    ax.set_title(f"Attempt statuses per system (missing policy: {data.missing})")
    _legend(ax)
    return fig, ax


# -- many systems ------------------------------------------------------------------------------
_SEPARATORS = "_-/ .:"


def short_names(labels, max_length: int = 40) -> list[str]:
    """System labels without the prefix and suffix they all share, for axes and legends.

    Only whole parts (split at ``_ - / space . :``) are stripped, only among three or more
    names (what two names share is half of what tells them apart), and only while the names
    stay distinct and none becomes empty; a name still longer than ``max_length`` keeps its
    start and end around an ellipsis (again only while the names stay distinct).

    Examples
    --------
    >>> from bayeval.plots import short_names
    >>> short_names(["2025_mini-v1_claude-opus", "2025_mini-v1_gpt-5", "2025_mini-v1_kimi"])
    ['claude-opus', 'gpt-5', 'kimi']
    >>> short_names(["DSCoder-33b-Ins", "DSCoder-6.7b-Ins"])
    ['DSCoder-33b-Ins', 'DSCoder-6.7b-Ins']
    """
    names = [str(label) for label in labels]
    if len(names) < 3:
        return [_ellipsis(n, max_length) for n in names]

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
        tail = stripped[0][len(stripped[0]) - cut:]
        if all(n.endswith(tail) and len(n) > cut for n in stripped):
            suffix = cut
    out = [n[:len(n) - suffix] if suffix else n for n in stripped]
    if len(set(out)) < len(out):
        out = names
    short = [_ellipsis(n, max_length) for n in out]
    return short if len(set(short)) == len(short) else out


def _ellipsis(name: str, max_length: int) -> str:
    if len(name) <= max_length:
        return name
    keep = max_length - 1
    return name[: keep - keep // 2] + "…" + name[len(name) - keep // 2:]


def _height(n_rows: int) -> float:
    return max(2.5, 0.8 + 0.26 * n_rows)


def plot_ranks(results, metric: str = "pass@k", k=1, estimand: str = "population",
               ci_prob: float = 0.95, top: int = 3, ax=None):
    """Each system's posterior rank: its interval, its mean, and P(best) beside the name.

    Draws :meth:`Results.ranks`, best system at the top; names are shortened by
    :func:`short_names` and the figure grows with the number of systems.

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
    systems = results.systems
    order = np.argsort(out["rank_mean"].values, kind="stable")[::-1]  # best drawn at the top
    fig, ax = _single_ax(ax, (7.5, _height(len(systems))))
    names = short_names(systems)
    interval = out["rank_interval"].values
    rows = np.arange(len(systems))
    ax.hlines(rows, interval[order, 0], interval[order, 1], color="C0", linewidth=2,
              label=f"{ci_prob:.0%} rank interval")
    ax.plot(out["rank_mean"].values[order], rows, "o", color="C0", label="posterior mean rank")
    labels = [f"{names[j]}  P(best) {out['prob_best'].values[j]:.2f}" for j in order]
    ax.set_yticks(rows, labels, fontsize="small" if len(systems) <= 25 else "x-small")
    ax.set_ylim(-0.6, len(systems) - 0.4)
    ax.set_xlim(len(systems) + 0.5, 0.5)  # rank 1 on the right
    ax.set_xlabel("rank (1 = best)")
    ax.grid(axis="x", alpha=0.3)
    name = _metric_name(metric, _single_k(k))
    ax.set_title(f"ranks by {name}, {estimand}", fontsize="medium")
    _legend(ax)
    return fig, ax


def plot_compare_all(results, metric: str = "pass@k", k=1, estimand: str = "population",
                     ax=None):
    """The pairwise matrix of P(row system > column system), systems ordered best first.

    Draws :meth:`Results.compare_all`; each cell is written out for up to 15 systems.

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
    names = [short_names(results.systems, max_length=32)[j] for j in order]
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
                    ax.text(j, i, f"{prob[i, j]:.2f}", ha="center", va="center",
                            fontsize="x-small",
                            color="white" if abs(prob[i, j] - 0.5) > 0.3 else "black")
    fig.colorbar(image, ax=ax, shrink=0.8, label="P(row > column)")
    name = _metric_name(metric, _single_k(k))
    ax.set_title(f"P(row > column), {name}, {estimand}", fontsize="medium")
    return fig, ax


def plot_compare_curve(results, candidate, baseline, k, metric: str = "pass@k",
                       estimand: str = "population", ci_prob: float = 0.95, data=None,
                       n_boot=2000, seed=0, ax=None):
    """The effect over k with its pointwise intervals and simultaneous band.

    Draws :meth:`Results.compare_curve`; with ``data`` the paired task bootstrap band
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
    curve = results.compare_curve(candidate, baseline, k=k, metric=metric, estimand=estimand,
                                  ci_prob=ci_prob)
    ks = curve["k"].values
    fig, ax = _single_ax(ax, (7.0, 4.0))
    band, point = curve["effect_band"].values, curve["effect_interval"].values
    mean = curve["effect_mean"].values
    ax.fill_between(ks, band[:, 0], band[:, 1], color="C0", alpha=0.2,
                    label=f"{ci_prob:.0%} simultaneous band")
    ax.errorbar(ks, mean, yerr=[mean - point[:, 0], point[:, 1] - mean], fmt="o-", color="C0",
                capsize=3, label=f"posterior mean, {ci_prob:.0%} pointwise")
    if data is not None:
        from bayeval._decisions import curve_bootstrap

        boot = curve_bootstrap(data, candidate, baseline, ks.tolist(), metric=metric,
                               n_boot=n_boot, ci_prob=ci_prob, seed=seed)
        bb = boot["effect_band"].values
        ax.plot(ks, boot["effect"].values, "s--", color="C1", label="task bootstrap estimate")
        ax.plot(ks, bb[:, 0], ":", color="C1", label="task bootstrap simultaneous band")
        ax.plot(ks, bb[:, 1], ":", color="C1")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(v) for v in ks])
    ax.set_xlabel("k")
    ax.set_ylabel(f"{metric} effect")
    cand, base = short_names([candidate, baseline], max_length=28)
    cross = float(curve["prob_cross"])
    ax.set_title(f"{cand} - {base}\n{estimand} estimand: P(the curves cross) = {cross:.2f}",
                 fontsize="medium")
    ax.grid(alpha=0.3)
    _legend(ax)
    return fig, ax
