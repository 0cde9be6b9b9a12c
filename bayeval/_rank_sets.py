"""Rank confidence sets from the paired bootstrap: the frequentist twin of ``Results.ranks``.

The construction is the max-|t| one of Mogstad, Romano, Shaikh and Wilhelm (2024, "Inference
for Ranks with Applications to Mobility across Neighbourhoods and Academic Achievement across
Countries", Review of Economic Studies). With estimated scores ``theta_j`` of ``p`` systems
(each a weighted mean of per-task unbiased pass@k or pass^k, as in :mod:`bayeval.bootstrap`)
and bootstrap replicates ``theta*_j`` from resampling the *same* tasks (or clusters) for all
systems, so that every difference is paired:

* ``se_jk`` is the bootstrap standard deviation of ``theta*_j - theta*_k``;
* ``t*_jk = ((theta*_j - theta*_k) - (theta_j - theta_k)) / se_jk`` per replicate;
* the critical value ``c`` is the ``ci_prob`` quantile of ``max |t*_jk|``: over all pairs
  (``kind="simultaneous"``), or over the pairs that involve system j (``kind="marginal"``,
  one ``c_j`` per system);
* ``theta_k - theta_j`` lies in ``diff_kj -/+ c_j se_kj`` for all k at once, so system j's
  rank (1 = best) lies in ``[1 + #{k: lower bound of theta_k - theta_j > 0},
  p - #{k: upper bound of theta_k - theta_j < 0}]``.

The simultaneous sets hold all true ranks at once with probability ``ci_prob`` (in large
samples); a marginal set holds its own system's rank with that probability. The same
all-pairs critical value gives pairwise decisions that control the family-wise error over the
``p (p - 1) / 2`` pairs; Holm-adjusted Wald p-values (bootstrap standard errors) are given
next to them, and ``p_value`` can take any other correction of ``bayeval.adjust_pvalues``. A
pair whose difference is the same in every replicate (identical systems, or a difference that
no resampling changes) has ``se = 0``: it is left out of the maximum and its difference is
taken as known.

Nothing loops over replicates or pairs in Python: the replicates come from the pattern-histogram
resampling of :mod:`bayeval.bootstrap`, and the maxima are taken over ``(replicate, system,
system)`` blocks of bounded size.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import stats

from bayeval._validate import BayevalWarning, validate_choice

__all__ = ["rank_sets"]

KINDS = ("simultaneous", "marginal")
_MAX_CELLS = 4_000_000  # elements of one replicate-chunk x system x system block


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (as ``bayeval.adjust_pvalues(p, "holm")``, without
    the garbage collection statsmodels runs on every call, 0.1 s here)."""
    order = np.argsort(p, kind="stable")
    m = len(p)
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(steps)
    return adjusted


def _critical_values(deviation, se, ci_prob):
    """All-pairs and per-system critical values of the max-|t| statistic.

    ``deviation`` is ``(replicate, system)`` (replicate minus estimate), ``se`` the
    ``(system, system)`` standard errors, zero (left out of the maxima) on the diagonal and for
    pairs without spread. Returns ``c`` (float), ``c_j`` (system,) and the sorted all-pairs
    replicate maxima (for the max-t adjusted p-values); all zero when no pair has spread.
    """
    n_boot, n_sys = deviation.shape
    usable = se > 0
    inv = np.where(usable, 1.0 / np.where(usable, se, 1.0), 0.0)
    max_all = np.empty(n_boot)
    max_row = np.empty((n_boot, n_sys))
    step = max(1, _MAX_CELLS // max(n_sys * n_sys, 1))
    for start in range(0, n_boot, step):
        d = deviation[start : start + step]
        t = np.abs(d[:, :, None] - d[:, None, :]) * inv[None]
        max_row[start : start + step] = t.max(axis=2)
        max_all[start : start + step] = max_row[start : start + step].max(axis=1)
    # the inverted-CDF quantile: the smallest value whose bootstrap CDF reaches ci_prob
    c_all = float(np.quantile(max_all, ci_prob, method="inverted_cdf"))
    c_sys = np.quantile(max_row, ci_prob, axis=0, method="inverted_cdf")
    return c_all, c_sys, np.sort(max_all)


def _rank_set_arrays(estimate, replicates, ci_prob, kind):
    """Rank sets and pairwise decisions from estimates ``(system,)`` and replicates
    ``(replicate, system)``; arrays over ``(system,)`` and ``(candidate, baseline)``."""
    n_boot, n_sys = replicates.shape
    deviation = replicates - estimate[None]
    cov = np.cov(deviation, rowvar=False, ddof=1).reshape(n_sys, n_sys)
    diag = np.diag(cov)
    var = np.clip(diag[:, None] + diag[None, :] - 2 * cov, 0.0, None)
    scale = diag[:, None] + diag[None, :]
    se = np.sqrt(np.where(var > 64 * np.finfo(float).eps * scale, var, 0.0))
    np.fill_diagonal(se, 0.0)
    diff = estimate[:, None] - estimate[None, :]  # candidate - baseline
    tol = 1e-12
    known = (se == 0) & ~np.eye(n_sys, dtype=bool)
    c_all, c_sys, sorted_max = _critical_values(deviation, se, ci_prob)

    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, diff / se, np.where(np.abs(diff) > tol, np.sign(diff) * np.inf, 0.0))
    np.fill_diagonal(t, np.nan)
    off = ~np.eye(n_sys, dtype=bool)
    reject = off & np.where(known, np.abs(diff) > tol, np.abs(t) > c_all)
    lower_diff = np.where(off, diff - c_all * se, np.nan)
    upper_diff = np.where(off, diff + c_all * se, np.nan)

    # rank set of system j from the bounds on theta_k - theta_j with j's critical value
    c_col = (c_all * np.ones(n_sys)) if kind == "simultaneous" else c_sys
    low_kj = diff - c_col[None, :] * se  # [k, j]: lower bound of theta_k - theta_j
    up_kj = diff + c_col[None, :] * se
    better = off & np.where(known, diff > tol, low_kj > 0)
    worse = off & np.where(known, diff < -tol, up_kj < 0)
    rank_lower = 1 + better.sum(axis=0)
    rank_upper = n_sys - worse.sum(axis=0)

    abs_t = np.abs(t)
    p_wald = np.where(off, 2 * stats.norm.sf(abs_t), np.nan)
    iu = np.triu_indices(n_sys, 1)
    p_holm = np.full((n_sys, n_sys), np.nan)
    if len(iu[0]):
        upper = _holm(p_wald[iu])
        p_holm[iu] = upper
        p_holm[iu[::-1]] = upper
    # single-step max-|t| adjusted p-value: the share of replicate maxima at or above |t|
    exceed = n_boot - np.searchsorted(sorted_max, np.where(off, abs_t, 0.0), side="left")
    p_maxt = np.where(
        off, np.where(known, np.where(np.abs(diff) > tol, 0.0, 1.0), exceed / n_boot), np.nan
    )
    rank_observed = 1 + (estimate[None, :] > estimate[:, None]).sum(axis=1)
    return {
        "estimate": estimate,
        "rank_observed": rank_observed,
        "rank_lower": rank_lower,
        "rank_upper": rank_upper,
        "critical_value": c_col,
        "diff": np.where(off, diff, np.nan),
        "se": np.where(off, se, np.nan),
        "t": t,
        "diff_interval": np.stack([lower_diff, upper_diff], axis=-1),
        "reject": reject,
        "p_value": p_wald,
        "p_value_holm": p_holm,
        "p_value_maxt": p_maxt,
    }, c_all


def rank_sets(
    data,
    metric="pass@k",
    k=1,
    unit="task",
    ci_prob=0.95,
    n_boot=10_000,
    seed=0,
    kind="simultaneous",
    weighting="task",
    clusters=None,
) -> xr.Dataset:
    """Rank confidence sets for every system, with multiplicity-adjusted pairwise tests.

    The max-|t| construction of Mogstad, Romano, Shaikh & Wilhelm (2024) on the paired
    bootstrap: all systems are resampled on the same tasks (or whole clusters), the
    ``ci_prob`` quantile of the largest studentised deviation of a pairwise difference gives
    simultaneous intervals for all differences, and system j's rank set is
    ``[1 + #{k surely better}, p - #{k surely worse}]`` (rank 1 = best). Only tasks valid for
    every system are used (under ``missing="exclude"`` the others are listed in attrs).

    Parameters
    ----------
    data : EvalData
        Two or more systems; not under ``missing="bounds"`` (choose a bound with
        ``data.with_missing("fail")`` or ``"exclude"``).
    metric : {"pass@k", "pass^k"}, default "pass@k"
    k : int, default 1
        One k.
    unit : {"task", "cluster", "trial"}, default "task"
        What is resampled, as in :func:`bayeval.bootstrap.pass_at_k`: ``"task"`` and
        ``"cluster"`` are the twins of ``estimand="population"``, ``"trial"`` of
        ``estimand="tasks"``.
    ci_prob : float, default 0.95
        Coverage of the sets: of all true ranks at once (``kind="simultaneous"``) or of each
        system's own rank (``kind="marginal"``).
    n_boot : int, default 10000
    seed : int or None, default 0
        ``None`` draws a seed and records it.
    kind : {"simultaneous", "marginal"}, default "simultaneous"
        Simultaneous: one critical value over all pairs. Marginal: system j's set uses the
        maximum over the pairs that involve j only (narrower; one statement per system).
    weighting, clusters
        As in :func:`bayeval.bootstrap.pass_at_k`.

    Returns
    -------
    xarray.Dataset
        Over ``system``: ``estimate``, ``rank_observed`` (1 + systems with a strictly higher
        estimate), ``rank_lower``, ``rank_upper`` and ``critical_value`` (the one used for
        that system's set). Over ``(candidate, baseline)``: ``diff`` (candidate minus
        baseline), ``se`` (bootstrap), ``t``, ``diff_interval`` (on ``ci_bound``,
        simultaneous over all pairs), ``reject`` (``|t|`` above the all-pairs critical value:
        family-wise error at most ``1 - ci_prob``), ``p_value`` (two-sided Wald),
        ``p_value_holm`` (Holm over the pairs) and ``p_value_maxt`` (share of replicate maxima
        at or above ``|t|``); the diagonal is NaN (``reject`` False). A pair with no bootstrap
        spread has ``se = 0``, ``t = +/-inf`` (or 0 for a zero difference) and its difference is
        taken as known. Status counts per system; settings and the all-pairs
        ``critical_value`` in attrs.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval._rank_sets import rank_sets
    >>> data = be.from_counts([[2, 3, 1, 2, 3, 2], [8, 9, 7, 9, 8, 9], [8, 8, 9, 9, 8, 9]],
    ...                       trials=10, systems=["A", "B", "C"])
    >>> out = rank_sets(data, n_boot=2000, seed=0)
    >>> out["rank_lower"].values.tolist(), out["rank_upper"].values.tolist()
    ([3, 1, 1], [3, 2, 2])
    >>> bool(out["reject"].sel(candidate="B", baseline="A"))
    True
    """
    # bayeval.bootstrap re-exports this function: import it here, not at module level
    from bayeval.resampling import ESTIMAND_OF_UNIT, _run, _status_vars, _validate_common

    ci_prob, n_boot, seed = _validate_common(
        data, unit, weighting, clusters, "percentile", ci_prob, n_boot, seed, metric
    )
    validate_choice("kind", kind, KINDS)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be one positive integer (rank sets take one k); got {k!r}")
    if data.missing == "bounds":
        raise ValueError(
            "rank_sets needs one count per cell; this data has missing='bounds'. "
            "Choose a policy first: data.with_missing('fail') or "
            "data.with_missing('exclude') (or compute the sets under each)"
        )
    systems = data.systems
    if len(systems) < 2:
        raise ValueError(f"rank_sets needs at least two systems; got {len(systems)}")
    shared = (data.dataset["trials"].values > 0).all(axis=0)
    if not shared.any():
        raise ValueError(
            "no task has valid trials for every system; rank sets compare all "
            "systems on shared tasks"
        )
    subset = data if shared.all() else data.sel(task=data.tasks[shared].tolist())
    ks = np.array([int(k)], dtype=np.int64)
    res, _, _ = _run(subset, systems, ks, metric, unit, weighting, clusters, n_boot, seed)
    # with one trial everywhere the trial bootstrap has already warned that it has zero width
    one_trial = (subset.dataset["trials"].values == 1).all()
    if res.valid is not None and not res.valid.all() and not one_trial:
        reason = next(r for r in res.reason.ravel() if r)
        warnings.warn(
            f"the rank sets rest on a trial bootstrap that does not hold here: {reason}",
            BayevalWarning,
            stacklevel=2,
        )
    estimate = res.estimate[:, 0]
    replicates = res.replicates[:, :, 0]
    finite = np.isfinite(replicates).all(axis=1)
    if not finite.all():
        warnings.warn(
            f"{int((~finite).sum())} of {n_boot} bootstrap replicates are undefined "
            "(a resampled group had no valid task) and were left out",
            BayevalWarning,
            stacklevel=2,
        )
        replicates = replicates[finite]
    arrays, c_all = _rank_set_arrays(estimate, replicates, ci_prob, kind)

    pair = ("candidate", "baseline")
    ds = xr.Dataset(
        {
            name: (("system",), arrays[name])
            for name in ("estimate", "rank_observed", "rank_lower", "rank_upper", "critical_value")
        }
        | {
            name: (pair, arrays[name])
            for name in ("diff", "se", "t", "reject", "p_value", "p_value_holm", "p_value_maxt")
        }
        | {"diff_interval": (pair + ("ci_bound",), arrays["diff_interval"])},
        coords={
            "system": np.asarray(systems, dtype=object),
            "candidate": np.asarray(systems, dtype=object),
            "baseline": np.asarray(systems, dtype=object),
            "ci_bound": ["lower", "upper"],
        },
    )
    ds = ds.assign(_status_vars(data, systems))
    ds.attrs = {
        "metric": metric,
        "k": int(k),
        "unit": unit,
        "estimand": ESTIMAND_OF_UNIT[unit],
        "weighting": weighting,
        "clusters": clusters or "none",
        "kind": kind,
        "ci_prob": ci_prob,
        "n_boot": n_boot,
        "n_boot_used": int(finite.sum()),
        "seed": seed,
        "critical_value": c_all,
        "n_tasks": int(shared.sum()),
        "n_unshared_tasks": int((~shared).sum()),
        "missing_policy": data.missing or "none",
        "paired": "yes",
        "construction": "max-|t| over pairwise differences (Mogstad, Romano, Shaikh & "
        "Wilhelm 2024); rank 1 = best; rank set = [1 + #surely better, "
        "p - #surely worse]",
    }
    return ds
