"""Plots, each the twin of a compute function: it calls that function and draws its output.

=============================  ==========================================================
plot                           draws the output of
=============================  ==========================================================
:func:`plot_forest`            :func:`bayeval.crosscheck` (or :meth:`Results.summary`)
:func:`plot_pass_at_k`         :meth:`Results.pass_at_k` / :meth:`Results.pass_hat_k`
:func:`plot_effect`            :meth:`Results.compare`
:func:`plot_task_rates`        :meth:`Results.task_rates`
:func:`plot_ppc`               :meth:`Results.ppc`
:func:`plot_status`            :attr:`EvalData.status_counts` and :attr:`EvalData.coverage`
:func:`plot_ranks`             :meth:`Results.ranks`
:func:`plot_compare_all`       :meth:`Results.compare_all`
:func:`plot_compare_curve`     :meth:`Results.compare_curve` (and its bootstrap twin)
:func:`plot_cost_success`      :func:`bayeval.bootstrap.cost` / :meth:`Results.cost`
:func:`plot_item_curves`       :meth:`Results.items` (``model="irt"``)
:func:`plot_item_information`  :meth:`Results.items` with ``theta``
:func:`plot_abilities`         :meth:`Results.abilities` (:func:`bayeval.irt.score`)
=============================  ==========================================================

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

The plots live by family: :mod:`~bayeval.plots.metrics` (forest, pass@k over k),
:mod:`~bayeval.plots.compare` (effect, task rates, effect over k),
:mod:`~bayeval.plots.ranks` (ranks, pairwise matrix), :mod:`~bayeval.plots.checks`
(posterior predictive check), :mod:`~bayeval.plots.data` (attempt statuses),
:mod:`~bayeval.plots.cost` (success against cost) and :mod:`~bayeval.plots.irt` (item
curves, information and abilities of an item response theory fit); the colours, names and
bound markers they share are in :mod:`~bayeval.plots.style`. Every name is importable from
``bayeval.plots``.

matplotlib is needed here only, and is imported when a plot is drawn (``pip install
'bayeval[plots]'``); ``import bayeval`` never imports it.
"""

from __future__ import annotations

from bayeval.plots.checks import plot_ppc
from bayeval.plots.compare import (
    GAIN_COLOR,
    LOSS_COLOR,
    MOVE_PROB,
    TASK_RATES_KINDS,
    TASK_RATES_MAX_TASKS,
    plot_compare_curve,
    plot_effect,
    plot_task_rates,
)
from bayeval.plots.cost import compact_names, plot_cost_success
from bayeval.plots.data import STATUS_COLORS, plot_status
from bayeval.plots.irt import (
    INFORMATION_KINDS,
    ITEM_CURVES_MAX,
    plot_abilities,
    plot_item_curves,
    plot_item_information,
)
from bayeval.plots.metrics import PANEL_SYSTEMS, plot_forest, plot_pass_at_k
from bayeval.plots.ranks import plot_compare_all, plot_ranks
from bayeval.plots.style import BOUND_MARKERS, BOUND_TEXT, palette, short_names

__all__ = [
    "plot_abilities",
    "plot_compare_all",
    "plot_compare_curve",
    "plot_cost_success",
    "plot_effect",
    "plot_forest",
    "plot_item_curves",
    "plot_item_information",
    "plot_pass_at_k",
    "plot_ppc",
    "plot_status",
    "plot_ranks",
    "plot_task_rates",
    "palette",
    "short_names",
    "compact_names",
    # the colours, markers and thresholds the plots draw with
    "BOUND_MARKERS",
    "BOUND_TEXT",
    "GAIN_COLOR",
    "INFORMATION_KINDS",
    "ITEM_CURVES_MAX",
    "LOSS_COLOR",
    "MOVE_PROB",
    "PANEL_SYSTEMS",
    "STATUS_COLORS",
    "TASK_RATES_KINDS",
    "TASK_RATES_MAX_TASKS",
]
