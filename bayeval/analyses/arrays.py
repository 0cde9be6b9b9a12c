"""The decision statistics of the analyses, on plain NumPy arrays of draws.

Each function takes an array of draws and ``axis``, the sample axes (an int or a tuple of
ints, default the last), and reduces over them, the array layer ``arviz_stats.base`` has
below its named-dims functions. The analyses of :mod:`bayeval.analyses` call these functions
over the sample dims ``("chain", "draw")`` with :func:`xarray.apply_ufunc`, so that they hold
only the selection, the labels and the attrs. A second axis with a meaning of its own is
named for it: ``system_axis`` (the systems ranked or paired) and ``grid_axis`` (the ks of a
curve). The axes left over are batch axes: every result is computed for each of them.

Draws are used as given: a NaN draw makes a mean or an interval NaN and is never above a
threshold.
"""

from __future__ import annotations

import numbers

import numpy as np

from bayeval._validate import validate_margin, validate_prob

__all__ = [
    "eti",
    "prob_above",
    "summarize_effect",
    "summarize_pairwise_effects",
    "rank_draws",
    "prob_top",
    "prob_best",
    "summarize_ranks",
    "rank_intervals",
    "group_systems",
    "sup_t_band",
    "quantile_band",
    "crossing_points",
    "summarize_crossings",
]

_MAX_CELLS = 4_000_000  # numbers in one block of pairwise effect draws (about 32 MB)


# -- axes --------------------------------------------------------------------------------------
def _real_array(values, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype != bool and not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise TypeError(f"{name} must be an array of real numbers; got dtype {array.dtype}")
    return array


def _axes(axis, ndim: int, name: str, single: bool = False) -> tuple[int, ...]:
    """``axis`` as non-negative axis numbers of an array of ``ndim`` dimensions."""
    what = "an int" if single else "an int or a tuple of ints"
    if isinstance(axis, (tuple, list, np.ndarray)) and not single:
        values = list(np.ravel(axis)) if isinstance(axis, np.ndarray) else list(axis)
        if not values:
            raise ValueError(f"{name} must name at least one axis; got {axis!r}")
    else:
        values = [axis]
    out = []
    for value in values:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be {what}; got {axis!r}")
        index = int(value)
        if not -ndim <= index < ndim:
            raise ValueError(f"{name}={axis!r} is out of range for an array of {ndim} dimension(s)")
        out.append(index % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name} names an axis twice; got {axis!r}")
    return tuple(out)


def _arrange(values, name: str, axis, min_draws: int = 1, **named) -> np.ndarray:
    """``values`` with the sample axes flattened into the last axis.

    The ``named`` axes (keyword -> axis) go just before it in their order, the batch axes
    first.
    """
    array = _real_array(values, name)
    samples = _axes(axis, array.ndim, "axis")
    placed: list[int] = []
    for keyword, value in named.items():
        (position,) = _axes(value, array.ndim, keyword, single=True)
        if position in samples:
            raise ValueError(f"{keyword}={value!r} is one of the sample axes (axis={axis!r})")
        if position in placed:
            raise ValueError(f"{keyword}={value!r} is an axis already named")
        placed.append(position)
    n_draws = int(np.prod([array.shape[a] for a in samples]))
    if n_draws < min_draws:
        raise ValueError(
            f"{name} needs at least {min_draws} draw(s) along axis={axis!r}; got {n_draws}"
        )
    batch = [a for a in range(array.ndim) if a not in samples and a not in placed]
    moved = np.transpose(array, batch + placed + list(samples))
    return moved.reshape(moved.shape[: len(batch) + len(placed)] + (n_draws,))


def _threshold(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {value!r}")
    number = float(value)
    if np.isnan(number):
        raise ValueError(f"{name} must not be NaN")
    return number


def _top(top) -> int:
    if isinstance(top, (bool, np.bool_)) or not isinstance(top, numbers.Integral) or top < 1:
        raise ValueError(f"top must be a positive int; got {top!r}")
    return int(top)


# -- effects -----------------------------------------------------------------------------------
def eti(draws, *, ci_prob: float = 0.95, axis=-1) -> np.ndarray:
    """Equal-tailed interval of the draws, at probability ``ci_prob``.

    The ``(1 - ci_prob) / 2`` and ``(1 + ci_prob) / 2`` quantiles (NumPy's default, linear,
    method).

    Parameters
    ----------
    draws : array_like
    ci_prob : float, default 0.95
        Strictly between 0 and 1.
    axis : int or tuple of int, default -1
        The sample axes.

    Returns
    -------
    numpy.ndarray
        The batch shape plus a last axis of 2: lower, upper.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import eti
    >>> eti(np.arange(5.0), ci_prob=0.5).tolist()
    [1.0, 3.0]
    >>> eti(np.arange(10.0).reshape(2, 5), ci_prob=0.5, axis=1).tolist()
    [[1.0, 3.0], [6.0, 8.0]]
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    values = _arrange(draws, "draws", axis)
    alpha = 1 - ci_prob
    return np.moveaxis(np.quantile(values, [alpha / 2, 1 - alpha / 2], axis=-1), 0, -1)


def prob_above(draws, *, threshold: float = 0.0, axis=-1) -> np.ndarray:
    """Share of the draws strictly above ``threshold``: the posterior P(value > threshold).

    Parameters
    ----------
    draws : array_like
    threshold : float, default 0.0
    axis : int or tuple of int, default -1
        The sample axes.

    Returns
    -------
    numpy.ndarray
        The batch shape.

    Examples
    --------
    >>> from bayeval.analyses.arrays import prob_above
    >>> float(prob_above([-0.1, 0.0, 0.2, 0.3]))
    0.5
    >>> float(prob_above([-0.1, 0.0, 0.2, 0.3], threshold=-0.05))
    0.75
    """
    threshold = _threshold(threshold, "threshold")
    values = _arrange(draws, "draws", axis)
    return (values > threshold).mean(axis=-1)


def summarize_effect(
    effect, *, ci_prob: float = 0.95, margin: float = 0.0, axis=-1
) -> dict[str, np.ndarray]:
    """Mean, equal-tailed interval and tail probabilities of the draws of an effect.

    The effect is a difference ``metric(candidate) - metric(baseline)``; the probabilities are
    of a gain (above 0), of a gain beyond the practical ``margin`` and of no loss beyond it
    (above ``-margin``: non-inferiority).

    Parameters
    ----------
    effect : array_like
        Draws of the effect.
    ci_prob : float, default 0.95
    margin : float, default 0.0
        Non-negative and below 1 (:func:`bayeval._validate.validate_margin`).
    axis : int or tuple of int, default -1
        The sample axes.

    Returns
    -------
    dict of numpy.ndarray
        ``effect_mean``, ``effect_interval`` (a last axis of 2: lower, upper),
        ``prob_positive``, ``prob_above_margin`` (P(effect > margin)) and
        ``prob_noninferior`` (P(effect > -margin)), each of the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import summarize_effect
    >>> out = summarize_effect(np.array([-0.01, 0.01, 0.03, 0.05]), margin=0.02)
    >>> round(float(out["effect_mean"]), 3), float(out["prob_positive"])
    (0.02, 0.75)
    >>> float(out["prob_above_margin"]), float(out["prob_noninferior"])
    (0.5, 1.0)
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    margin = validate_margin(margin)
    values = _arrange(effect, "effect", axis)
    return {
        "effect_mean": values.mean(axis=-1),
        "effect_interval": eti(values, ci_prob=ci_prob),
        "prob_positive": prob_above(values, threshold=0.0),
        "prob_above_margin": prob_above(values, threshold=margin),
        "prob_noninferior": prob_above(values, threshold=-margin),
    }


def summarize_pairwise_effects(
    draws, *, ci_prob: float = 0.95, margin: float = 0.0, axis=-1, system_axis=-2
) -> dict[str, np.ndarray]:
    """:func:`summarize_effect` of every pair ``draws[candidate] - draws[baseline]``.

    The effect draws of the pairs are formed a block of pairs at a time, so that memory stays
    bounded for many systems and draws.

    Parameters
    ----------
    draws : array_like
        Draws of each system's metric.
    ci_prob, margin
        As in :func:`summarize_effect`.
    axis : int or tuple of int, default -1
        The sample axes.
    system_axis : int, default -2
        The axis of the systems.

    Returns
    -------
    dict of numpy.ndarray
        The keys of :func:`summarize_effect`, each of the batch shape plus
        ``(candidate, baseline)`` (``effect_interval`` a last axis of 2 more); NaN on the
        diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import summarize_pairwise_effects
    >>> draws = np.array([[0.5, 0.6, 0.7], [0.55, 0.58, 0.8]])  # (system, draw)
    >>> out = summarize_pairwise_effects(draws)
    >>> out["prob_positive"].round(3).tolist()
    [[nan, 0.333], [0.667, nan]]
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    margin = validate_margin(margin)
    values = _arrange(draws, "draws", axis, system_axis=system_axis)
    n_sys, n_draws = values.shape[-2:]
    batch = values.shape[:-2]
    out = {
        name: np.full(batch + (n_sys, n_sys) + ((2,) if name == "effect_interval" else ()), np.nan)
        for name in (
            "effect_mean",
            "effect_interval",
            "prob_positive",
            "prob_above_margin",
            "prob_noninferior",
        )
    }
    # every ordered pair but the diagonal, a block of pairs at a time
    candidates, baselines = np.nonzero(~np.eye(n_sys, dtype=bool))
    step = max(1, _MAX_CELLS // max(int(np.prod(batch)) * n_draws, 1))
    for start in range(0, len(candidates), step):
        i, j = candidates[start : start + step], baselines[start : start + step]
        effects = values[..., i, :] - values[..., j, :]
        for name, value in summarize_effect(effects, ci_prob=ci_prob, margin=margin).items():
            if name == "effect_interval":
                out[name][..., i, j, :] = value
            else:
                out[name][..., i, j] = value
    return out


# -- ranks -------------------------------------------------------------------------------------
def rank_draws(values, *, system_axis=-1) -> np.ndarray:
    """Rank (1 = best) of each system in each draw: one plus the number strictly better.

    Ties share the best of their ranks (scipy's ``rankdata(-values, method="min")``); a NaN
    value is neither better nor worse than any other, so it ranks 1.

    Parameters
    ----------
    values : array_like
        Draws of each system's metric (higher is better).
    system_axis : int, default -1
        The axis of the systems, along which ranks are taken; the other axes are kept.

    Returns
    -------
    numpy.ndarray
        Integer ranks, of the shape of ``values``.

    Examples
    --------
    >>> from bayeval.analyses.arrays import rank_draws
    >>> rank_draws([[0.2, 0.9, 0.5], [0.7, 0.7, 0.1]]).tolist()
    [[3, 1, 2], [1, 1, 3]]
    """
    array = _real_array(values, "values")
    (position,) = _axes(system_axis, array.ndim, "system_axis", single=True)
    data = np.moveaxis(array, position, -1)
    better = (data[..., None, :] > data[..., :, None]).sum(axis=-1)
    return np.moveaxis(better + 1, -1, position)


def prob_top(ranks, *, top: int = 1, axis=-1) -> np.ndarray:
    """Share of the draws with a rank of at most ``top``: the posterior P(rank <= top).

    Parameters
    ----------
    ranks : array_like
        Rank draws (:func:`rank_draws`).
    top : int, default 1
        1 gives the probability of being best.
    axis : int or tuple of int, default -1
        The sample axes.

    Returns
    -------
    numpy.ndarray
        The batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import prob_top
    >>> ranks = np.array([[1, 2, 1, 3], [2, 1, 3, 1]])  # (system, draw)
    >>> prob_top(ranks, top=2).tolist()
    [0.75, 0.75]
    """
    top = _top(top)
    return (_arrange(ranks, "ranks", axis) <= top).mean(axis=-1)


def prob_best(values, *, axis=-1, system_axis=-2) -> np.ndarray:
    """Posterior probability that each system is best: the share of draws where it ranks 1.

    A system tied for best in a draw counts as best there (:func:`rank_draws`), so the
    probabilities sum to more than 1 where ties occur.

    Parameters
    ----------
    values : array_like
        Draws of each system's metric (higher is better).
    axis : int or tuple of int, default -1
        The sample axes.
    system_axis : int, default -2
        The axis of the systems.

    Returns
    -------
    numpy.ndarray
        The batch shape plus the systems.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import prob_best
    >>> prob_best(np.array([[0.5, 0.6, 0.9, 0.2], [0.4, 0.7, 0.8, 0.3]])).tolist()
    [0.5, 0.5]
    """
    arranged = _arrange(values, "values", axis, system_axis=system_axis)
    return prob_top(rank_draws(arranged, system_axis=-2), top=1)


def _trimmed_bounds(ordered: np.ndarray, t) -> np.ndarray:
    """Lower and upper bounds of sorted draws with ``t`` draws cut from each tail."""
    n = ordered.shape[-1]
    t = np.asarray(t)[..., None, None]
    lower = np.take_along_axis(ordered, np.broadcast_to(t, ordered.shape[:-1] + (1,)), axis=-1)
    upper = np.take_along_axis(
        ordered, np.broadcast_to(n - 1 - t, ordered.shape[:-1] + (1,)), axis=-1
    )
    return np.concatenate([lower, upper], axis=-1)


def rank_intervals(
    ranks, *, ci_prob: float = 0.95, simultaneous: bool = True, axis=-1, system_axis=-2
) -> np.ndarray:
    """Rank intervals of whole ranks from rank draws: all systems at once, or each on its own.

    Each system's interval runs from its ``t``-th smallest to its ``t``-th largest rank draw
    (order statistics, so the bounds are ranks that occur). On its own (``simultaneous=False``)
    ``t = floor(n (1 - ci_prob) / 2)`` of the ``n`` draws, so at most a share ``(1 - ci_prob) /
    2`` of the draws lie beyond each bound. At once (the default) ``t`` is the largest cut, the
    same for every system, for which at least ``ci_prob`` of the draws have *every* system's
    rank inside its interval together: a credible set for the whole ranking, as the bootstrap's
    simultaneous rank sets are a confidence set for it (marginal intervals held all eight true
    ranks in only 0.86 of simulated benchmarks with tied systems; ``models/logit_normal.md``).

    Parameters
    ----------
    ranks : array_like
        Rank draws (:func:`rank_draws`).
    ci_prob : float, default 0.95
    simultaneous : bool, default True
    axis : int or tuple of int, default -1
        The sample axes.
    system_axis : int, default -2
        The axis of the systems.

    Returns
    -------
    numpy.ndarray
        The batch shape, then the systems, then a last axis of 2: lower, upper.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import rank_intervals
    >>> draws = np.array([[2, 2, 3, 3, 1, 1, 2, 2],    # 3 systems x 8 draws
    ...                   [3, 3, 2, 2, 3, 2, 3, 1],
    ...                   [1, 1, 1, 1, 2, 3, 1, 3]])
    >>> rank_intervals(draws, ci_prob=0.5, simultaneous=False).tolist()
    [[2, 2], [2, 3], [1, 2]]
    >>> rank_intervals(draws, ci_prob=0.5).tolist()  # those hold all three in 3 draws of 8
    [[1, 3], [2, 3], [1, 3]]
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    values = _arrange(ranks, "ranks", axis, system_axis=system_axis)  # (..., system, draw)
    n = values.shape[-1]
    ordered = np.sort(values, axis=-1)
    most = int(np.floor(n * (1 - ci_prob) / 2 + 1e-9))
    if not simultaneous:
        return _trimmed_bounds(ordered, np.full(values.shape[:-2], most, dtype=int))

    def held(t: np.ndarray) -> np.ndarray:
        bounds = _trimmed_bounds(ordered, t)
        inside = (values >= bounds[..., :1]) & (values <= bounds[..., 1:])
        return inside.all(axis=-2).mean(axis=-1) >= ci_prob - 1e-12

    # the share held at once falls as t grows: bisect for the largest t that still holds
    low = np.zeros(values.shape[:-2], dtype=int)  # t = 0 keeps every draw: always held
    high = np.full(values.shape[:-2], most, dtype=int)
    while np.any(low < high):
        middle = (low + high + 1) // 2
        ok = held(middle)
        low = np.where(ok, middle, low)
        high = np.where(ok, high, middle - 1)
    return _trimmed_bounds(ordered, low)


def summarize_ranks(
    ranks, *, ci_prob: float = 0.95, top: int = 3, axis=-1
) -> dict[str, np.ndarray]:
    """Expected rank, rank interval, P(best) and P(rank <= top) of rank draws.

    Parameters
    ----------
    ranks : array_like
        Rank draws (:func:`rank_draws`).
    ci_prob : float, default 0.95
    top : int, default 3
    axis : int or tuple of int, default -1
        The sample axes.

    Returns
    -------
    dict of numpy.ndarray
        ``rank_mean``, ``rank_interval`` (each system's own, in whole ranks:
        :func:`rank_intervals` with ``simultaneous=False``; a last axis of 2: lower, upper),
        ``prob_best`` (P(rank = 1)) and ``prob_top`` (P(rank <= top)), of the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import rank_draws, summarize_ranks
    >>> ranks = rank_draws(np.array([[0.5, 0.6, 0.9, 0.2], [0.4, 0.7, 0.8, 0.3]]), system_axis=0)
    >>> out = summarize_ranks(ranks, top=1)
    >>> out["rank_mean"].tolist(), out["prob_best"].tolist()
    ([1.5, 1.5], [0.5, 0.5])
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    top = _top(top)
    values = _arrange(ranks, "ranks", axis)
    return {
        "rank_mean": values.mean(axis=-1),
        "rank_interval": rank_intervals(values[..., None, :], ci_prob=ci_prob, simultaneous=False)[
            ..., 0, :
        ],
        "prob_best": prob_top(values, top=1),
        "prob_top": prob_top(values, top=top),
    }


def group_systems(values, *, prob: float = 0.95, axis=-1, system_axis=-2) -> dict:
    """Groups of systems that the draws cannot tell apart at probability ``prob``.

    From the top: the best remaining system by mean leads a new group, and every remaining
    system ``s`` with ``P(leader > s) < prob`` joins it (ties in the mean go to the lower
    index). Groups are numbered from 1 (best).

    Parameters
    ----------
    values : array_like
        Draws of each system's metric (higher is better); no batch axes.
    prob : float, default 0.95
    axis : int or tuple of int, default -1
        The sample axes.
    system_axis : int, default -2
        The axis of the systems.

    Returns
    -------
    dict of numpy.ndarray
        Over the systems, best first: ``system`` (the index), ``mean`` (of its draws),
        ``group``, ``leader`` (the index of the group's leader) and ``prob_leader_better``
        (NaN for a leader).

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import group_systems
    >>> draws = np.array([[0.1, 0.2, 0.15, 0.12], [0.8, 0.9, 0.7, 0.85], [0.82, 0.7, 0.9, 0.8]])
    >>> out = group_systems(draws, prob=0.9)
    >>> out["system"].tolist(), out["group"].tolist()
    ([1, 2, 0], [1, 1, 2])
    """
    prob = validate_prob("prob", prob)
    arranged = _arrange(values, "values", axis, system_axis=system_axis)
    if arranged.ndim != 2:
        raise ValueError(
            f"values must have no axes but the systems and the sample axes; got shape "
            f"{np.shape(values)} with axis={axis!r}, system_axis={system_axis!r}"
        )
    draws = arranged.T  # (draw, system)
    means = draws.mean(axis=0)
    order = list(np.argsort(-means, kind="stable"))
    rows: list[tuple[int, int, int, float]] = []
    group = 0
    while order:
        group += 1
        leader = order.pop(0)
        rows.append((leader, group, leader, np.nan))
        rest = []
        for s in order:
            p_better = float((draws[:, leader] > draws[:, s]).mean())
            if p_better < prob:
                rows.append((s, group, leader, p_better))
            else:
                rest.append(s)
        order = rest
    system, groups, leaders, p = zip(*rows, strict=True)
    return {
        "system": np.array(system, dtype=int),
        "mean": means[list(system)],
        "group": np.array(groups, dtype=int),
        "leader": np.array(leaders, dtype=int),
        "prob_leader_better": np.array(p, dtype=float),
    }


# -- curves over k -----------------------------------------------------------------------------
def sup_t_band(draws, *, ci_prob: float = 0.95, axis=-1, grid_axis=-2):
    """Simultaneous (sup-t) band of a curve's draws over its grid.

    The band is ``mean +/- q sd`` at each grid point, ``q`` the ``ci_prob`` quantile over the
    draws of the largest ``|draw - mean| / sd`` over the grid (a point whose draws do not
    vary counts 0).

    Parameters
    ----------
    draws : array_like
        Draws of the curve (at least two).
    ci_prob : float, default 0.95
    axis : int or tuple of int, default -1
        The sample axes.
    grid_axis : int, default -2
        The axis of the grid (the ks).

    Returns
    -------
    band : numpy.ndarray
        The batch shape plus the grid plus a last axis of 2: lower, upper.
    q : numpy.ndarray
        The critical value, of the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import sup_t_band
    >>> draws = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])  # (k, draw)
    >>> band, q = sup_t_band(draws, ci_prob=0.5)
    >>> float(q), band.tolist()
    (1.0, [[0.0, 2.0], [1.0, 1.0]])
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    values = _arrange(draws, "draws", axis, min_draws=2, grid_axis=grid_axis)
    mean = values.mean(axis=-1)
    sd = values.std(axis=-1, ddof=1)
    spread = (sd > 0)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(
            spread,
            np.abs(values - mean[..., None]) / np.where(spread, sd[..., None], 1.0),
            0.0,
        )
    q = np.quantile(z.max(axis=-2), ci_prob, axis=-1)
    half = q[..., None] * sd
    return np.stack([mean - half, mean + half], axis=-1), q


def quantile_band(draws, *, ci_prob: float = 0.95, axis=-1, grid_axis=-2):
    """Simultaneous band of a curve's draws over its grid, built from pointwise quantiles.

    The equal-tailed pointwise intervals at the smallest level ``gamma >= ci_prob`` whose
    intervals hold a share ``ci_prob`` of the draws at every grid point at once (found by
    bisection; a draw with a NaN anywhere on the grid is left out). Since ``gamma`` is at
    least ``ci_prob``, the band contains each pointwise ``ci_prob`` interval, whatever the
    draws' shape; a band of ``mean +- q sd`` (:func:`sup_t_band`) need not, where the draws
    are skewed.

    Parameters
    ----------
    draws : array_like
        Draws of the curve (at least two).
    ci_prob : float, default 0.95
    axis : int or tuple of int, default -1
        The sample axes.
    grid_axis : int, default -2
        The axis of the grid (the ks).

    Returns
    -------
    band : numpy.ndarray
        The batch shape plus the grid plus a last axis of 2: lower, upper.
    level : numpy.ndarray
        The pointwise level ``gamma`` of the band, of the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import quantile_band
    >>> rng = np.random.default_rng(0)
    >>> draws = rng.normal(size=(3, 4000))  # three independent points, (k, draw)
    >>> band, level = quantile_band(draws, ci_prob=0.9)
    >>> round(float(level), 2)  # 0.9 ** (1 / 3): each point's share for all three at once
    0.97
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    values = _arrange(draws, "draws", axis, min_draws=2, grid_axis=grid_axis)
    batch = values.shape[:-2]
    flat = values.reshape((-1,) + values.shape[-2:])
    bands = np.full(flat.shape[:-1] + (2,), np.nan)
    levels = np.full(flat.shape[0], np.nan)
    for i, curve in enumerate(flat):  # (grid, draw)
        whole = curve[:, ~np.isnan(curve).any(axis=0)]
        if whole.shape[1] < 2:
            continue

        def interval(level, values=whole):
            return np.quantile(values, [(1 - level) / 2, (1 + level) / 2], axis=-1)

        def covers(level, values=whole):
            low, high = interval(level)
            inside = (values >= low[:, None]) & (values <= high[:, None])
            return inside.all(axis=0).mean() >= ci_prob

        low, high = ci_prob, 1.0
        if not covers(low):
            for _ in range(40):  # the share inside grows with the level: bisect
                middle = (low + high) / 2
                low, high = (low, middle) if covers(middle) else (middle, high)
            low = high
        levels[i] = low
        bands[i] = interval(low).T
    return bands.reshape(batch + bands.shape[1:]), levels.reshape(batch)


def crossing_points(effect, grid, *, grid_axis=-1) -> np.ndarray:
    """The grid value at which each curve first changes sign, by linear interpolation.

    A sign change is a strict one between neighbouring grid points (a zero changes
    nothing); NaN where the curve keeps one sign over the grid.

    Parameters
    ----------
    effect : array_like
        Curves (draws of an effect over k), one per index of the other axes.
    grid : array_like
        The grid (the ks): at least two strictly increasing values, one per point of
        ``grid_axis``.
    grid_axis : int, default -1

    Returns
    -------
    numpy.ndarray
        The shape of ``effect`` without ``grid_axis``.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import crossing_points
    >>> crossing_points(np.array([[0.2, 0.1, -0.1, -0.3], [0.3, 0.2, 0.1, 0.1]]), [1, 2, 4, 8])
    array([ 3., nan])
    """
    array = _real_array(effect, "effect")
    (position,) = _axes(grid_axis, array.ndim, "grid_axis", single=True)
    points = np.asarray(grid)
    if points.dtype == bool or not np.issubdtype(points.dtype, np.number) or points.ndim != 1:
        raise ValueError(f"grid must be a 1-d array of numbers; got {grid!r}")
    if len(points) != array.shape[position] or len(points) < 2:
        raise ValueError(
            f"grid must have one value per point of grid_axis ({array.shape[position]}), "
            f"at least two; got {len(points)}"
        )
    if np.any(np.diff(points) <= 0):
        raise ValueError(f"grid must be strictly increasing; got {points.tolist()}")
    moved = np.moveaxis(array.astype(float), position, -1)
    curves = moved.reshape(-1, len(points))
    sign = np.sign(curves)
    change = (sign[:, 1:] * sign[:, :-1]) < 0
    out = np.full(len(curves), np.nan)
    rows = np.flatnonzero(change.any(axis=1))
    first = change[rows].argmax(axis=1)
    y0, y1 = curves[rows, first], curves[rows, first + 1]
    x0, x1 = points[first].astype(float), points[first + 1].astype(float)
    out[rows] = x0 + (x1 - x0) * y0 / (y0 - y1)
    return out.reshape(moved.shape[:-1])


def summarize_crossings(crossings, *, ci_prob: float = 0.95, axis=-1) -> dict[str, np.ndarray]:
    """The probability that a curve crosses zero, and where, from :func:`crossing_points`.

    Parameters
    ----------
    crossings : array_like
        Draws of the crossing point, NaN where a draw's curve does not cross.
    ci_prob : float, default 0.95
    axis : int or tuple of int, default -1
        The sample axes.

    Returns
    -------
    dict of numpy.ndarray
        ``prob_cross`` (the share of draws that cross) and ``crossing_interval`` (the
        equal-tailed interval of the draws that cross, a last axis of 2: lower, upper; NaN
        where none does), of the batch shape.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.analyses.arrays import summarize_crossings
    >>> out = summarize_crossings(np.array([2.0, np.nan, 3.0, 4.0]), ci_prob=0.5)
    >>> float(out["prob_cross"]), out["crossing_interval"].tolist()
    (0.75, [2.5, 3.5])
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    values = _arrange(crossings, "crossings", axis)
    crossed = np.isfinite(values)
    rows = values.reshape(-1, values.shape[-1])
    interval = np.full((len(rows), 2), np.nan)
    for i, row in enumerate(rows):
        finite = row[np.isfinite(row)]
        if finite.size:
            interval[i] = eti(finite, ci_prob=ci_prob)
    return {
        "prob_cross": crossed.mean(axis=-1),
        "crossing_interval": interval.reshape(values.shape[:-1] + (2,)),
    }
