r"""Anytime-valid confidence sequences, and the gates that read them checkpoint by checkpoint.

A gate may be evaluated after every checkpoint of a :class:`~bayeval.monitor.CheckpointStore`
(or any sequence of ``(label, EvalData)``) and keep its error rate.

A confidence sequence (CS) :math:`(C_t)` covers its target at *every* time at once,
:math:`P(\theta \in C_t \text{ for all } t) \ge 1 - \alpha`, so a decision taken the first
time :math:`C_t` excludes a margin keeps its error rate however often one looks. Both CSs
here come from a nonnegative (super)martingale :math:`K_t(\theta)` at the true value and
Ville's inequality :math:`P(\sup_t K_t \ge 1/\alpha) \le \alpha`; :math:`C_t = \{\theta :
K_t(\theta) < 1/\alpha\}`.

Success rate: the Beta-binomial mixture martingale (Robbins 1970; Howard, Ramdas, McAuliffe
& Sekhon 2021, Ann. Statist. 49(2), section 3), closed form. With :math:`S` successes in
:math:`n` Bernoulli outcomes and a Beta(a, b) mixing distribution,

.. math:: K_n(p) = \frac{B(a + S, b + n - S) / B(a, b)}{p^S (1 - p)^{n - S}},

the Bayes factor of the Beta mixture against the point ``p``. Unit: an **episode**, in
arrival order; assumption: given everything before it, each episode succeeds with the same
probability ``p`` (i.i.d. Bernoulli: a fixed system, each episode on a task drawn at random).
Episodes of one task are correlated, so :func:`monitor_rate` refuses several trials per task
on this path.

Mean of a bounded variable, and a paired difference in [-1, 1] (candidate minus baseline):
the betting CS of Waudby-Smith & Ramdas (2024, "Estimating means of bounded random variables
by betting", JRSS-B 86(1)): the hedged capital process
:math:`\max(\tfrac12 K^+_t(m), \tfrac12 K^-_t(m))` with
:math:`K^\pm_t(m) = \prod_{i \le t} (1 \pm \lambda^\pm_i(m) (x_i - m))` with predictable
bets truncated so that every factor is at least 1/2 (``bayeval.monitor._bets``: by default
the average capital of bets tuned to reach :math:`1/\alpha` after 16, 32, ..., 4096
observations; ``bets=`` picks another strategy). A one-sided gate bets on one side only
(:math:`K^+` with :math:`\log(1/\alpha)`). Unit: a
**task** (its rate difference over the trials it ran, in [-1, 1]) in arrival order;
assumption: given everything before it, each new unit's expected value is the target (i.i.d.
units, e.g. tasks drawn at random), or for the gate at most the margin (a martingale
difference condition under the null). A task that comes back in a later checkpoint breaks
it (what it did before predicts what it does again), so :func:`monitor_paired` refuses
repeated tasks.

These CSs are written here because no maintained, installable library provides them: the
authors' ``confseq`` package needs Boost to build and has no wheels, and ``expectation``
offers neither the Beta-binomial mixture CS nor the hedged betting CS (and carries a
licence restriction). The closed forms and the martingale property are tested against
SciPy, exact enumeration and simulation in ``tests/monitor/test_sequential.py``.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd
from scipy import special

from bayeval._validate import (
    describe_values,
    validate_choice,
    validate_margin,
    validate_positive_int,
    validate_prob,
)
from bayeval.monitor._bets import BETS, log_capital
from bayeval.monitor.store import CheckpointStore

__all__ = [
    "betting_capital",
    "betting_cs",
    "log_mixture_martingale",
    "monitor_paired",
    "monitor_rate",
    "rate_cs",
]


# -- the success rate: Beta-binomial mixture ------------------------------------------------
def _check_prior(prior) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in prior)
    except (TypeError, ValueError):
        raise TypeError(f"prior must be a pair (a, b) of positive numbers; got {prior!r}") from None
    if not (a > 0 and b > 0 and np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"prior must be a pair (a, b) of positive numbers; got {prior!r}")
    return a, b


def _increments(successes, trials) -> tuple[np.ndarray, np.ndarray]:
    c = np.asarray(successes)
    n = np.asarray(trials)
    for name, v in (("successes", c), ("trials", n)):
        if (
            v.ndim < 1
            or not np.issubdtype(v.dtype, np.number)
            or not np.isfinite(v).all()
            or (v < 0).any()
            or (v != np.round(v)).any()
        ):
            raise ValueError(
                f"{name} must be an array of non-negative whole numbers (one "
                f"per step, along the last axis); got {np.ravel(v).tolist()[:8]}"
            )
    if c.shape != n.shape:
        raise ValueError(
            f"successes (shape {c.shape}) and trials (shape {n.shape}) must have "
            "one value per step each"
        )
    bad = np.argwhere(c > n)
    if bad.size:
        where = bad[:5, 0].tolist() if c.ndim == 1 else bad[:5].tolist()
        raise ValueError(f"successes must not exceed trials; steps {where} do")
    return c.astype(float), n.astype(float)


def log_mixture_martingale(successes, trials, p, prior=(1.0, 1.0)):
    r"""Log of the Beta-binomial mixture martingale at rate ``p`` (closed form).

    :math:`\log K_n(p) = \log B(a+S, b+F) - \log B(a, b) - S \log p - F \log(1-p)` for
    ``S`` successes and ``F`` failures; broadcasts over its arguments.

    Examples
    --------
    >>> from bayeval.monitor import log_mixture_martingale
    >>> round(float(log_mixture_martingale(0, 0, 0.3)), 12)   # no data: K = 1
    0.0
    """
    a, b = _check_prior(prior)
    s = np.asarray(successes, dtype=float)
    f = np.asarray(trials, dtype=float) - s
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (
            special.betaln(a + s, b + f)
            - special.betaln(a, b)
            - special.xlogy(s, p)
            - special.xlog1py(f, -p)
        )


def rate_cs(successes, trials, ci_prob: float = 0.95, prior=(1.0, 1.0)):
    """Anytime-valid confidence sequence for a success rate (Beta-binomial mixture).

    Parameters
    ----------
    successes, trials : array_like of int, shape (..., step)
        Successes and trials that arrived at each step (a checkpoint, a batch), along the last
        axis (leading axes are independent sequences); the CS after step ``t`` uses everything
        up to it.
    ci_prob : float, default 0.95
        ``1 - alpha``: the probability that the CS covers the rate at every step at once.
    prior : (a, b), default (1, 1)
        The Beta mixing distribution (Robbins' uniform mixture by default); it sets where the
        sequence is tightest, never its validity.

    Returns
    -------
    (lower, upper) : ndarray, shape (..., step)
        ``{p : K_t(p) < 1 / alpha}``, by bisection to 1e-12.

    Examples
    --------
    >>> from bayeval.monitor import rate_cs
    >>> lower, upper = rate_cs([7, 6, 8], [10, 10, 10])
    >>> bool(lower[-1] < 0.7 < upper[-1]) and bool((upper - lower)[-1] < (upper - lower)[0])
    True
    """
    c, n = _increments(successes, trials)
    alpha = 1.0 - validate_prob("ci_prob", ci_prob)
    a, b = _check_prior(prior)
    s, t = np.cumsum(c, axis=-1), np.cumsum(n, axis=-1)
    threshold = np.log(1.0 / alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = np.where(t > 0, s / np.where(t > 0, t, 1), 0.5)

    const = special.betaln(a + s, b + t - s) - special.betaln(a, b)  # free of p

    def inside(p):
        with np.errstate(divide="ignore", invalid="ignore"):
            return const - special.xlogy(s, p) - special.xlog1py(t - s, -p) < threshold

    def bisect(lo, hi, lo_in):  # lo_in: which end of [lo, hi] is inside the CS
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            ok = inside(mid)
            lo, hi = np.where(ok == lo_in, mid, lo), np.where(ok == lo_in, hi, mid)
        return lo, hi

    _, lower = bisect(np.zeros_like(s), centre, lo_in=False)
    lower = np.where(inside(np.zeros_like(s)), 0.0, lower)
    upper, _ = bisect(centre, np.ones_like(s), lo_in=True)
    upper = np.where(inside(np.ones_like(s)), 1.0, upper)
    return lower, upper


# -- bounded means and paired differences: betting -----------------------------------------
def _bounds(bounds) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair (low, high); got {bounds!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be finite with low < high; got {bounds!r}")
    return lo, hi


def _scaled(x, bounds, axis) -> np.ndarray:
    lo, hi = _bounds(bounds)
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    bad = ~np.isfinite(x) | (x < lo) | (x > hi)
    if bad.any():
        where = np.argwhere(bad)[:5].tolist()
        raise ValueError(
            f"x must lie in bounds [{lo}, {hi}] and be finite; positions "
            f"{where} do not (values {x[bad][:5].tolist()})"
        )
    return (x - lo) / (hi - lo)


def _alpha_and_sides(ci_prob, alternative):
    alpha = 1.0 - validate_prob("ci_prob", ci_prob)
    validate_choice("alternative", alternative, ("two-sided", "greater", "less"))
    return alpha, alternative


def _check_bets(bets, horizon) -> int | None:
    validate_choice("bets", bets, BETS)
    if bets == "horizon":
        if horizon is None:
            raise ValueError("bets='horizon' needs horizon= (the number of observations planned)")
        return validate_positive_int("horizon", horizon)
    if horizon is not None:
        raise ValueError(f"horizon is read only with bets='horizon'; got bets={bets!r}")
    return None


def _log_capital_for(y, m, alpha: float, alternative: str, bets: str, horizon: int | None):
    """Log capital against the null mean(s) ``m`` for an alternative.

    One side's capital, or for ``"two-sided"`` max(K+, K-) / 2 with bets at alpha / 2, which
    is at most (K+ + K-) / 2, a test supermartingale.
    """
    if alternative == "two-sided":
        up = log_capital(y, m, alpha / 2, +1, bets, horizon)
        down = log_capital(y, m, alpha / 2, -1, bets, horizon)
        return np.maximum(up, down) - np.log(2)
    return log_capital(y, m, alpha, +1 if alternative == "greater" else -1, bets, horizon)


def betting_capital(
    x,
    m,
    ci_prob: float = 0.95,
    bounds=(0.0, 1.0),
    alternative: str = "two-sided",
    axis: int = -1,
    *,
    bets: str = "mixture",
    horizon: int | None = None,
):
    r"""The betting capital process at null mean ``m`` (Waudby-Smith & Ramdas 2024).

    ``"greater"`` bets that the mean exceeds ``m`` (:math:`K^+`, a nonnegative
    supermartingale whenever every conditional mean is at most ``m``), ``"less"`` the reverse
    (:math:`K^-`), ``"two-sided"`` the hedged :math:`\max(K^+, K^-)/2` with bets sized for
    ``alpha/2``. The null is rejected, at any time, once the capital reaches ``1/alpha``.
    Every choice of ``bets`` keeps this; they differ in power.

    Parameters
    ----------
    x : array_like
        Observations in ``bounds``, in arrival order along ``axis``.
    m : float
        Null mean, strictly inside ``bounds``.
    ci_prob : float, default 0.95
    bounds : (low, high), default (0, 1)
        The range of one observation (``(-1, 1)`` for a paired difference of rates).
    alternative : {"two-sided", "greater", "less"}
    axis : int, default -1
    bets : {"mixture", "horizon", "agrapa", "prpl-eb"}, default "mixture"
        How much to bet at each step, from the steps before it only. ``"mixture"``: the
        average capital of bets tuned to reach ``1/alpha`` after 16, 32, ..., 4096
        observations (no horizon to choose; the most power measured among horizon-free
        bets); ``"horizon"``: one such bet, tuned to ``horizon`` observations (more power
        near it, still valid before and after); ``"agrapa"``: the plug-in Kelly bet on the
        running mean; ``"prpl-eb"``: the variance-only bet of earlier versions.
    horizon : int, optional
        The number of observations planned, read with ``bets="horizon"`` only.

    Returns
    -------
    ndarray
        The capital after each observation, same shape as ``x``.

    Examples
    --------
    >>> from bayeval.monitor import betting_capital
    >>> capital = betting_capital([1, 1, 0, 1, 1, 1, 1, 1], 0.5, alternative="greater")
    >>> bool(capital[-1] > capital[0] > 1)
    True
    """
    alpha, alternative = _alpha_and_sides(ci_prob, alternative)
    lo, hi = _bounds(bounds)
    if not lo < float(m) < hi:
        raise ValueError(f"m must lie strictly inside bounds ({lo}, {hi}); got {m!r}")
    horizon = _check_bets(bets, horizon)
    y = _scaled(x, bounds, axis)
    ms = (float(m) - lo) / (hi - lo)
    log_k = _log_capital_for(y, ms, alpha, alternative, bets, horizon)
    return np.moveaxis(np.exp(log_k), -1, axis)


def betting_cs(
    x,
    ci_prob: float = 0.95,
    bounds=(0.0, 1.0),
    alternative: str = "two-sided",
    grid: int = 2000,
    *,
    bets: str = "mixture",
    horizon: int | None = None,
):
    """Anytime-valid confidence sequence for the mean of bounded observations, by betting.

    ``{m : capital_t(m) < 1/alpha}`` over ``grid + 1`` equally spaced null means, each end
    moved out by one grid step (so the grid never makes the sequence narrower). One-sided
    sequences leave the other end at its bound.

    Parameters
    ----------
    x : array_like, shape (obs,)
        Observations in ``bounds``, in arrival order.
    ci_prob : float, default 0.95
    bounds : (low, high), default (0, 1)
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: a lower sequence (what a gate for an improvement reads).
    grid : int, default 2000
    bets : {"mixture", "horizon", "agrapa", "prpl-eb"}, default "mixture"
        As in :func:`betting_capital`.
    horizon : int, optional
        The number of observations planned, read with ``bets="horizon"`` only.

    Returns
    -------
    (lower, upper) : ndarray, shape (obs,)
        NaN where no grid point is inside (the sequence has then missed, which happens with
        probability at most ``alpha`` over all times).

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.monitor import betting_cs
    >>> x = np.random.default_rng(0).choice([-1.0, 0.0, 1.0], size=400, p=[0.2, 0.5, 0.3])
    >>> lower, upper = betting_cs(x, bounds=(-1, 1))
    >>> bool(lower[-1] < 0.1 < upper[-1])
    True
    """
    alpha, alternative = _alpha_and_sides(ci_prob, alternative)
    if isinstance(grid, bool) or not isinstance(grid, numbers.Integral) or grid < 10:
        raise ValueError(f"grid must be an integer >= 10; got {grid!r}")
    horizon = _check_bets(bets, horizon)
    lo, hi = _bounds(bounds)
    y = _scaled(x, bounds, -1)
    if y.ndim != 1:
        raise ValueError(f"x must be 1-d (one observation per step); got shape {y.shape}")
    step = 1.0 / grid
    m = np.linspace(0.0, 1.0, grid + 1)[1:-1, None]
    log_k = _log_capital_for(y, m, alpha, alternative, bets, horizon)
    inside = log_k < np.log(1 / alpha)
    any_in = inside.any(axis=0)
    first = np.argmax(inside, axis=0)
    last = inside.shape[0] - 1 - np.argmax(inside[::-1], axis=0)
    mid = m[:, 0]
    lower = np.where(any_in, np.maximum(mid[first] - step, 0.0), np.nan)
    upper = np.where(any_in, np.minimum(mid[last] + step, 1.0), np.nan)
    if alternative == "greater":
        upper = np.where(any_in, 1.0, np.nan)
    elif alternative == "less":
        lower = np.where(any_in, 0.0, np.nan)
    return lo + (hi - lo) * lower, lo + (hi - lo) * upper


# -- monitors over a store ------------------------------------------------------------------
def _checkpoints(store):
    if isinstance(store, CheckpointStore):
        return list(store)
    try:
        items = [(label, data) for label, data in store]
    except (TypeError, ValueError):
        raise TypeError(
            "store must be a CheckpointStore or a sequence of (label, EvalData) pairs"
        ) from None
    return items


def _counts(data, label, systems):
    ds = data.dataset
    if ds.attrs.get("missing_policy") == "bounds":
        raise ValueError(
            f"checkpoint {label!r} was built with missing='bounds'; a monitor "
            "needs one set of counts: use missing='fail' or 'exclude'"
        )
    absent = [s for s in systems if s not in data.systems]
    if absent:
        raise KeyError(
            f"checkpoint {label!r} has no system(s) {absent}; it has "
            f"{describe_values(data.systems)}"
        )
    return ds["successes"].sel(system=systems).values, ds["trials"].sel(system=systems).values


def monitor_rate(
    store,
    system,
    threshold=None,
    alternative: str = "greater",
    ci_prob: float = 0.95,
    prior=(1.0, 1.0),
) -> pd.DataFrame:
    """Watch one system's success rate checkpoint by checkpoint (Beta-binomial mixture CS).

    Unit: an episode; every checkpoint must hold one trial per task (episodes of one task are
    correlated, and the mixture assumes independent Bernoulli episodes; for several trials per
    task, treat each task's rate as one bounded observation with :func:`betting_cs`).

    Parameters
    ----------
    store : CheckpointStore or sequence of (label, EvalData)
    system : label
    threshold : float, optional
        With it, ``fired`` says whether the CS has excluded it on the ``alternative`` side at
        this checkpoint or any earlier one (the gate stops there).
    alternative : {"greater", "less"}
    ci_prob : float, default 0.95
    prior : (a, b), default (1, 1)

    Returns
    -------
    pandas.DataFrame
        One row per checkpoint: successes and trials so far, rate, lower, upper, fired.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.monitor import monitor_rate
    >>> stream = [(i, be.from_counts([[1, 1, 0, 1, 1, 1, 1, 1, 1, 1]], trials=1,
    ...                              systems=["m"])) for i in range(6)]
    >>> table = monitor_rate(stream, "m", threshold=0.5)
    >>> table["fired"].tolist()
    [False, True, True, True, True, True]
    """
    validate_choice("alternative", alternative, ("greater", "less"))
    rows = []
    for label, data in _checkpoints(store):
        c, n = _counts(data, label, [system])
        several = np.flatnonzero(n[0] > 1)
        if several.size:
            raise ValueError(
                f"checkpoint {label!r}: tasks {data.tasks[several].tolist()[:5]} ran more than "
                "one trial; the rate CS takes independent episodes (one per task). Use "
                "betting_cs on per-task rates for several trials per task"
            )
        rows.append({"checkpoint": label, "successes": int(c.sum()), "trials": int(n.sum())})
    table = pd.DataFrame(rows, columns=["checkpoint", "successes", "trials"])
    lower, upper = rate_cs(
        table["successes"].to_numpy(), table["trials"].to_numpy(), ci_prob, prior
    )
    table["successes"], table["trials"] = table["successes"].cumsum(), table["trials"].cumsum()
    with np.errstate(invalid="ignore"):
        table["rate"] = table["successes"] / table["trials"]
    table["lower"], table["upper"] = lower, upper
    if threshold is not None:
        hit = lower > threshold if alternative == "greater" else upper < threshold
        table["fired"] = np.maximum.accumulate(hit) if len(hit) else hit
    table.attrs = {
        "unit": "episode",
        "cs": "beta-binomial mixture",
        "ci_prob": ci_prob,
        "prior": list(_check_prior(prior)),
        "threshold": threshold,
        "alternative": alternative,
    }
    return table


def _paired_differences(store, candidate, baseline):
    """Per-task rate differences, candidate minus baseline, in checkpoint then task order.

    Returns the table of checkpoints (``checkpoint``, ``new_tasks``, ``tasks``), the
    differences and the index of each checkpoint's last difference. A task seen in an earlier
    checkpoint is refused: what it did before predicts what it does again, which breaks both
    the martingale and the independent increments of a group sequential test.
    """
    seen: dict[object, object] = {}
    chunks: list = []
    rows: list = []
    for label, data in _checkpoints(store):
        c, n = _counts(data, label, [candidate, baseline])
        both = (n > 0).all(axis=0)
        tasks = data.tasks[both].tolist()
        again = [t for t in tasks if t in seen]
        if again:
            raise ValueError(
                f"checkpoint {label!r} repeats tasks {again[:5]} first seen in checkpoint "
                f"{seen[again[0]]!r}; the paired gate takes new tasks at every checkpoint "
                "(a task seen before predicts itself, which breaks the martingale)"
            )
        seen.update(dict.fromkeys(tasks, label))
        chunks.append(c[0, both] / n[0, both] - c[1, both] / n[1, both])
        rows.append({"checkpoint": label, "new_tasks": int(both.sum())})
    table = pd.DataFrame(rows, columns=["checkpoint", "new_tasks"])
    x = np.concatenate(chunks) if chunks else np.zeros(0)
    ends = np.cumsum(table["new_tasks"].to_numpy()) - 1
    table["tasks"] = ends + 1
    return table, x, ends


def monitor_paired(
    store,
    candidate,
    baseline,
    margin: float = 0.0,
    alternative: str = "greater",
    ci_prob: float = 0.95,
    *,
    bets: str = "mixture",
    horizon: int | None = None,
) -> pd.DataFrame:
    """Anytime-valid gate on candidate minus baseline, evaluated after every checkpoint.

    Each task that both systems ran (at least one valid trial each) is one observation, its
    rate difference ``c_B/n_B - c_A/n_A`` in [-1, 1], in checkpoint order and task order
    within a checkpoint. ``"greater"`` fires when the one-sided betting CS excludes
    ``margin`` from below (the candidate is better by more than ``margin``); ``"less"`` when it
    excludes it from above (worse by more than ``-margin`` for a negative margin). It fires at
    most once (the first checkpoint where the capital at ``margin`` reaches ``1/alpha``) and,
    over any number of checkpoints, with probability at most ``alpha`` under the null. Tasks
    must be new at every checkpoint: a task seen before is refused. The capital updates task
    by task; the decision is read after each checkpoint.

    Parameters
    ----------
    store : CheckpointStore or sequence of (label, EvalData)
    candidate, baseline : label
    margin : float, default 0.0
        Strictly inside (-1, 1).
    alternative : {"greater", "less"}
    ci_prob : float, default 0.95
    bets : {"mixture", "horizon", "agrapa", "prpl-eb"}, default "mixture"
        The betting strategy (see :func:`betting_capital`). ``"horizon"`` with
        ``horizon=`` the number of tasks you plan to run has the most power at that number
        (measured in ``models/monitor.md``) and stays valid however many you run.
    horizon : int, optional
        Tasks planned, read with ``bets="horizon"`` only.

    Returns
    -------
    pandas.DataFrame
        One row per checkpoint: tasks so far, mean difference, the one-sided bound, the
        capital at ``margin`` and ``fired``; attrs hold the settings (``bets``, ``horizon``).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.monitor import monitor_paired
    >>> stream = [(i, be.from_counts([[1] * 8 + [0] * 2, [0] * 4 + [1] * 6], trials=1,
    ...                              systems=["new", "old"], tasks=range(10 * i, 10 * i + 10)))
    ...           for i in range(20)]
    >>> table = monitor_paired(stream, "new", "old")
    >>> int(table["fired"].idxmax())   # the first checkpoint whose capital reaches 1/alpha
    12
    """
    validate_choice("alternative", alternative, ("greater", "less"))
    alpha = 1.0 - validate_prob("ci_prob", ci_prob)
    margin = validate_margin(margin, signed=True)
    horizon = _check_bets(bets, horizon)
    table, x, ends = _paired_differences(store, candidate, baseline)
    if x.size:
        capital = betting_capital(
            x, float(margin), ci_prob, (-1.0, 1.0), alternative, bets=bets, horizon=horizon
        )
        lower, upper = betting_cs(x, ci_prob, (-1.0, 1.0), alternative, bets=bets, horizon=horizon)
    at = np.clip(ends, 0, None)
    has = ends >= 0
    table["mean_difference"] = (
        np.where(has, np.cumsum(x)[at] / (ends + 1), np.nan) if x.size else np.nan
    )
    bound = lower if alternative == "greater" else upper
    table["lower" if alternative == "greater" else "upper"] = (
        np.where(has, bound[at], np.nan) if x.size else np.nan
    )
    table["capital"] = np.where(has, capital[at], 1.0) if x.size else 1.0
    reached = table["capital"].to_numpy() >= 1 / alpha
    table["fired"] = np.maximum.accumulate(reached) if len(reached) else reached
    table.attrs = {
        "unit": "task (rate difference in [-1, 1])",
        "cs": "betting",
        "bets": bets,
        "horizon": horizon,
        "candidate": candidate,
        "baseline": baseline,
        "margin": float(margin),
        "alternative": alternative,
        "ci_prob": ci_prob,
    }
    return table
