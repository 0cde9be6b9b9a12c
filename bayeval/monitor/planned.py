r"""A group sequential gate for a planned number of tasks: Lan-DeMets alpha spending.

The gates in :mod:`bayeval.monitor.sequential` are anytime-valid: they may be read after any
number of checkpoints, and continued for ever, and keep their error rate. That freedom costs
power. With one trial per task, no test supermartingale can reach much more than 0.4 of the
power of one fixed test at the end (``models/monitor.md`` derives the bound). A team that fixes
in advance how many tasks it will run at most (its *horizon*) can buy that power back with a
group sequential test, the design clinical trials use for interim looks.

The statistic at a look with :math:`n` tasks so far is
:math:`Z = (\bar x - m) / (s / \sqrt{n})`, where :math:`\bar x` and :math:`s` are the mean and
standard deviation of the per-task rate differences and :math:`m` is the margin. The look's
information fraction is :math:`t = n / N` for the horizon :math:`N`. The error rate is spent
by a function :math:`\alpha(t)` with :math:`\alpha(1) = \alpha` (Lan & DeMets 1983, Biometrika
70(3)):

* O'Brien-Fleming type, :math:`\alpha(t) = 2 - 2\Phi(z_{1-\alpha/2} / \sqrt{t})`: spends
  almost nothing early and keeps nearly all the fixed test's power at the end (the default);
* Pocock type, :math:`\alpha(t) = \alpha \log(1 + (e - 1) t)`: spends evenly, so it stops
  sooner on large effects and loses more at the end.

The boundary :math:`c_k` at look :math:`k` solves
:math:`P_0(Z_1 < c_1, \dots, Z_{k-1} < c_{k-1}, Z_k \ge c_k) = \alpha(t_k) - \alpha(t_{k-1})`
under the Brownian approximation :math:`Z_k \sqrt{t_k} = W(t_k)`; it depends only on the looks
so far, so the looks need not be planned, only the horizon (Lan & DeMets). The probabilities are
computed by the recursive numerical integration of Armitage, McPherson & Rowe (1969) on a fine
grid of :math:`W` (Jennison & Turnbull 2000, chapter 19). Since :math:`s` is estimated, the
boundary is read on Student's t scale with :math:`n - 1` degrees of freedom (the same tail
probability), which matters only for the first few looks.

What it guarantees and what it does not: the type-I error is at most ``alpha`` for any number and
timing of looks up to the horizon, provided the timing does not depend on the differences seen.
It is not anytime-valid: the test ends at the horizon. The look that reaches it spends what is
left, and later checkpoints decide nothing new.

Written here because no maintained Python library computes Lan-DeMets boundaries (the standard
implementations, ``gsDesign`` and ``ldbounds``, are R packages); the code is short and tested
against published boundaries and SciPy's multivariate normal.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import optimize, signal, stats

from bayeval._validate import (
    validate_choice,
    validate_margin,
    validate_positive_int,
    validate_prob,
)
from bayeval.monitor.sequential import _paired_differences

__all__ = ["monitor_planned", "spending_bounds"]

SPENDING = ("obrien-fleming", "pocock")

# The grid of W(t): |W| <= 10 holds all but 1e-23 of the mass for t <= 1, and a spacing of a
# tenth of the smallest increment's sd (at most 0.0025) keeps the boundaries within 1e-3.
_W_EDGE = 10.0
_W_STEP = 0.0025
_MAX_POINTS = 2**19


def _spent(t, alpha: float, spending: str) -> np.ndarray:
    t = np.minimum(np.asarray(t, dtype=float), 1.0)
    if spending == "obrien-fleming":
        return 2.0 * stats.norm.sf(stats.norm.isf(alpha / 2.0) / np.sqrt(t))
    return alpha * np.log1p((math.e - 1.0) * t)


def _check_fractions(fractions) -> np.ndarray:
    t = np.asarray(fractions, dtype=float)
    if (
        t.ndim != 1
        or t.size == 0
        or not np.isfinite(t).all()
        or (t <= 0).any()
        or (t > 1).any()
        or (np.diff(t) <= 0).any()
    ):
        raise ValueError(
            "fractions must be a non-empty, strictly increasing sequence of information "
            f"fractions in (0, 1]; got {np.ravel(t).tolist()[:8]}"
        )
    return t


def spending_bounds(fractions, alpha: float = 0.05, spending: str = "obrien-fleming"):
    r"""One-sided group sequential boundaries on the z scale, by Lan-DeMets alpha spending.

    Parameters
    ----------
    fractions : sequence of float
        Information fractions of the looks so far, strictly increasing in (0, 1] (tasks so far
        over tasks planned).
    alpha : float, default 0.05
        One-sided type-I error spent by fraction 1.
    spending : {"obrien-fleming", "pocock"}, default "obrien-fleming"
        The spending function (see the module's notes).

    Returns
    -------
    numpy.ndarray
        The boundary :math:`c_k` for each look: the test rejects at the first look whose
        :math:`Z_k \ge c_k`. ``inf`` where a look spends less than 1e-300.

    Examples
    --------
    >>> from bayeval.monitor import spending_bounds
    >>> spending_bounds([1.0]).round(3)          # one look: the fixed one-sided test
    array([1.645])
    >>> spending_bounds([0.1, 0.33, 1.0], alpha=0.025).round(2)
    array([6.99, 3.73, 1.96])
    """
    t = _check_fractions(fractions)
    alpha = validate_prob("alpha", alpha)
    validate_choice("spending", spending, SPENDING)
    spent = _spent(t, alpha, spending)
    increments = np.diff(spent, prepend=0.0)
    dt = np.diff(t, prepend=0.0)
    step = max(min(_W_STEP, float(np.sqrt(dt.min())) / 10.0), 2 * _W_EDGE / _MAX_POINTS)
    w = np.arange(-_W_EDGE, _W_EDGE + step / 2, step)
    bounds = np.empty(t.size)
    bounds[0] = stats.norm.isf(increments[0]) if increments[0] >= 1e-300 else np.inf
    # the density of W(t_k) on the paths that have not crossed by look k
    density = stats.norm.pdf(w, scale=np.sqrt(t[0]))
    density[w >= bounds[0] * np.sqrt(t[0])] = 0.0
    for k in range(1, t.size):
        sd = np.sqrt(dt[k])
        if increments[k] < 1e-300:
            bounds[k] = np.inf
        else:

            def excess(c, k=k, sd=sd, density=density):
                crossing = step * np.dot(density, stats.norm.sf((c * np.sqrt(t[k]) - w) / sd))
                return crossing - increments[k]

            bounds[k] = optimize.brentq(excess, -_W_EDGE, 4 * _W_EDGE, xtol=1e-10)
        if k + 1 < t.size:
            half = int(np.ceil(8 * sd / step))
            kernel = stats.norm.pdf(np.arange(-half, half + 1) * step, scale=sd) * step
            density = signal.fftconvolve(density, kernel, mode="same")
            density[w >= bounds[k] * np.sqrt(t[k])] = 0.0
    return bounds


def monitor_planned(
    store,
    candidate,
    baseline,
    horizon: int,
    margin: float = 0.0,
    alternative: str = "greater",
    ci_prob: float = 0.95,
    *,
    spending: str = "obrien-fleming",
) -> pd.DataFrame:
    """Group sequential gate on candidate minus baseline, for a planned number of tasks.

    The same observations as :func:`~bayeval.monitor.monitor_paired` (each task both systems
    ran gives its rate difference in [-1, 1], in checkpoint order; repeated tasks are
    refused), tested at each checkpoint against a Lan-DeMets boundary
    (:func:`~bayeval.monitor.spending_bounds`) instead of a betting capital. Fires the first
    time the one-sided repeated confidence bound excludes ``margin``, which is the first time
    the look's t statistic reaches its boundary. The type-I error is at most
    ``1 - ci_prob`` for any looks up to ``horizon`` tasks. The checkpoint that reaches the
    horizon is the last look: it spends what is left, and later checkpoints decide nothing new.
    Use it where the most tasks you will run is fixed in advance; it keeps nearly all the power
    of one test at the end (``models/monitor.md``). Where it is not, use ``monitor_paired``.

    Parameters
    ----------
    store : CheckpointStore or sequence of (label, EvalData)
    candidate, baseline : label
    horizon : int
        The most tasks the run will have (both systems on each), fixed before the first look.
    margin : float, default 0.0
        Strictly inside (-1, 1).
    alternative : {"greater", "less"}
    ci_prob : float, default 0.95
        One-sided: the gate's type-I error is at most ``1 - ci_prob``.
    spending : {"obrien-fleming", "pocock"}, default "obrien-fleming"

    Returns
    -------
    pandas.DataFrame
        One row per checkpoint: tasks so far, the information fraction, the mean difference,
        the repeated one-sided confidence bound, the t statistic against ``margin``, the
        boundary, the error spent so far and ``fired``; attrs hold the settings and
        ``last_look`` (the checkpoint that reached the horizon, or None).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.monitor import monitor_planned
    >>> stream = [(i, be.from_counts([[1] * 8 + [0] * 2, [0] * 4 + [1] * 6], trials=1,
    ...                              systems=["new", "old"], tasks=range(10 * i, 10 * i + 10)))
    ...           for i in range(20)]
    >>> table = monitor_planned(stream, "new", "old", horizon=200)
    >>> int(table["fired"].idxmax())   # the first checkpoint past its boundary
    10
    """
    validate_choice("alternative", alternative, ("greater", "less"))
    validate_choice("spending", spending, SPENDING)
    alpha = 1.0 - validate_prob("ci_prob", ci_prob)
    margin = validate_margin(margin, signed=True)
    horizon = validate_positive_int("horizon", horizon, minimum=2)
    table, x, ends = _paired_differences(store, candidate, baseline)
    n = ends + 1
    sign = 1.0 if alternative == "greater" else -1.0
    # one look per checkpoint that brought new tasks, up to the first that reaches the horizon
    looks = np.flatnonzero(table["new_tasks"].to_numpy() > 0)
    reached = np.flatnonzero(n[looks] >= horizon)
    if reached.size:
        looks = looks[: reached[0] + 1]
    fraction = np.minimum(n / horizon, 1.0)
    columns = {
        name: np.full(len(table), np.nan)
        for name in ("mean_difference", "bound", "t", "boundary", "spent")
    }
    fired = np.zeros(len(table), dtype=bool)
    if looks.size:
        z = spending_bounds(fraction[looks], alpha, spending)
        sums, squares = np.cumsum(x), np.cumsum(x * x)
        for look, c in zip(looks, z, strict=True):
            size = n[look]
            mean = sums[size - 1] / size
            var = (squares[size - 1] - size * mean * mean) / (size - 1) if size > 1 else np.nan
            se = np.sqrt(max(var, 0.0) / size)
            # the same tail probability on Student's t scale: s is estimated from these tasks
            crit = stats.t.isf(stats.norm.sf(c), size - 1) if size > 1 else np.inf
            with np.errstate(divide="ignore", invalid="ignore"):
                stat = sign * (mean - margin) / se
            columns["bound"][look] = np.clip(mean - sign * crit * se, -1.0, 1.0)
            columns["t"][look] = stat
            columns["boundary"][look] = crit
            fired[look] = bool(stat >= crit)
        columns["spent"][looks] = _spent(fraction[looks], alpha, spending)
    # a checkpoint without new tasks repeats the look before it; after the last look there is
    # nothing left to test, so only the running mean and the error spent are shown
    last = looks[-1] if looks.size else -1
    for row in range(1, last + 1):
        if table["new_tasks"].iat[row] == 0:
            for name in ("bound", "t", "boundary", "spent"):
                columns[name][row] = columns[name][row - 1]
            fired[row] = fired[row - 1]
    columns["spent"] = pd.Series(columns["spent"]).ffill().fillna(0.0).to_numpy()
    with np.errstate(invalid="ignore"):
        columns["mean_difference"] = (
            np.where(n > 0, np.cumsum(x)[np.clip(ends, 0, None)] / n, np.nan)
            if x.size
            else np.full(len(table), np.nan)
        )
    table["fraction"] = fraction
    table["mean_difference"] = columns["mean_difference"]
    table["lower" if alternative == "greater" else "upper"] = columns["bound"]
    table["t"] = columns["t"]
    table["boundary"] = columns["boundary"]
    table["spent"] = columns["spent"]
    table["fired"] = np.maximum.accumulate(fired) if len(fired) else fired
    table.attrs = {
        "unit": "task (rate difference in [-1, 1])",
        "test": f"group sequential, Lan-DeMets alpha spending ({spending} type)",
        "horizon": horizon,
        "last_look": table["checkpoint"].tolist()[last] if reached.size else None,
        "candidate": candidate,
        "baseline": baseline,
        "margin": float(margin),
        "alternative": alternative,
        "ci_prob": ci_prob,
    }
    return table
