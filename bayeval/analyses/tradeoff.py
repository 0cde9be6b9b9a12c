"""The cost-success trade-off.

The Pareto frontier, the probability that one system dominates another, and the report card's
evidence table of cost and success.

System A dominates B when it succeeds at least as often and costs at most as much.
:func:`frontier` reads the output of either cost analysis (:func:`bayeval.bootstrap.cost` or
``Results.cost``, :mod:`bayeval.analyses.cost`): the frontier on the point estimates, and
the dominance probabilities over their joint draws or replicates, joint because every system
shares each draw's task weights. :func:`evidence` sets the two cost analyses side by side for
the report card and the command line.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import describe_values, validate_choice
from bayeval.analyses._tables import json_number, percentiles, triple
from bayeval.analyses.cost import (
    K_STATISTICS,
    RATE_STATUSES,
    _check_column,
    _check_ks,
    _task_totals,
    cost,
    posterior_cost,
)
from bayeval.models import cost as cost_models
from bayeval.posterior import Posterior

__all__ = ["COST_AXES", "SUCCESS_AXES", "evidence", "frontier"]

#: The cost axes :func:`frontier` takes (the last three need the result's ``k``).
COST_AXES = (
    "cost_per_attempt",
    "cost_per_success",
    "cost_of_k",
    "expected_spend",
    "cost_per_success_at_k",
)
#: The success axes :func:`frontier` takes.
SUCCESS_AXES = ("pass_at_1", "pass_at_k")


def _dominates(success: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """``out[..., a, b]``: a succeeds at least as often as b and costs at most as much.

    Systems are on the last axis of both inputs.
    """
    return (success[..., :, None] >= success[..., None, :]) & (
        cost[..., :, None] <= cost[..., None, :]
    )


def _undominated(success: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Systems no other system dominates strictly, on the last axis.

    Strictly: at least as good on both axes, better on one.
    """
    weak = _dominates(success, cost)
    strict = weak & (
        (success[..., :, None] > success[..., None, :]) | (cost[..., :, None] < cost[..., None, :])
    )
    return ~strict.any(axis=-2)


def frontier(
    result: xr.Dataset, *, cost: str = "cost_per_attempt", success: str = "pass_at_1", k=None
) -> xr.Dataset:
    """Cost-success Pareto frontier and the probability that one system dominates another.

    System A dominates B when it succeeds at least as often and costs at most as much. The
    frontier is the systems no other system dominates with at least one strict inequality,
    on the point estimates; ``prob_dominates`` is the share of joint draws (posterior, from
    :meth:`bayeval.Results.cost`) or joint replicates (bootstrap, from
    :func:`bayeval.bootstrap.cost`) in which the candidate's success is at least the
    baseline's and its cost at most the baseline's. The draws are joint because every
    system shares each draw's task weights (resampled tasks), so the probability carries the
    pairing of systems on shared tasks.

    Parameters
    ----------
    result : xarray.Dataset
        The output of :func:`bayeval.bootstrap.cost` or :meth:`bayeval.Results.cost`.
    cost : str, default "cost_per_attempt"
        The cost axis: ``cost_per_attempt`` or ``cost_per_success``, or with ``k`` one of
        ``cost_of_k``, ``expected_spend`` and ``cost_per_success_at_k``. Cost per attempt
        keeps the two axes apart (cost per success already divides by the success rate).
    success : {"pass_at_1", "pass_at_k"}, default "pass_at_1"
    k : int, optional
        The k of a budget-curve axis (the result must have been computed with it).

    Returns
    -------
    xarray.Dataset
        ``on_frontier`` (``system``, bool), ``prob_on_frontier`` (``system``: the share of
        draws in which no system strictly dominates it), ``prob_dominates``
        (``candidate, baseline``; the diagonal is NaN), the two axes' point estimates
        ``success`` and ``cost`` (``system``), and ``frontier`` (the frontier systems by
        increasing cost) in the attributes.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval import frontier
    >>> df = pd.DataFrame({"system": ["A"] * 4 + ["B"] * 4 + ["C"] * 4,
    ...                    "task": ["t1", "t2", "t3", "t4"] * 3,
    ...                    "success": [1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1],
    ...                    "cost": [1.0] * 4 + [2.0] * 4 + [3.0] * 4})
    >>> out = frontier(be.bootstrap.cost(be.from_frame(df, covariates=["cost"]), "cost",
    ...                                  n_boot=500))
    >>> out.attrs["frontier"]
    ['A', 'C']
    >>> float(out["prob_dominates"].sel(candidate="A", baseline="B"))
    1.0
    """
    if not isinstance(result, xr.Dataset) or "cost_per_attempt_draws" not in result:
        raise TypeError("result must be the Dataset of bayeval.bootstrap.cost or Results.cost")
    validate_choice("cost", cost, COST_AXES)
    validate_choice("success", success, SUCCESS_AXES)
    needs_k = cost in K_STATISTICS or success in K_STATISTICS
    if needs_k and k is None:
        raise ValueError(
            f"cost={cost!r} with success={success!r} is on the budget curve: "
            "give k (one of the result's k)"
        )
    if needs_k:
        if "k" not in result.coords:
            raise ValueError("this result has no budget curve: compute it with k=[...]")
        have = [int(v) for v in result["k"].values]
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) not in have:
            raise ValueError(f"k must be one of the result's k {have}; got {k!r}")
    elif k is not None:
        raise ValueError(
            f"k applies to the budget-curve axes (pass_at_k, "
            f"{', '.join(K_STATISTICS[1:])}); got k={k!r} with cost={cost!r} "
            f"and success={success!r}"
        )

    def pick(name):
        est, draws = result[name], result[f"{name}_draws"]
        if "k" in est.dims:
            est, draws = est.sel(k=int(k)), draws.sel(k=int(k))
        return est.values.astype(float), draws.transpose(..., "system").values.astype(float)

    s_est, s_draws = pick(success)
    c_est, c_draws = pick(cost)
    systems = [str(s) for s in result["system"].values]
    prob = _dominates(s_draws, c_draws).mean(axis=0).astype(float)
    np.fill_diagonal(prob, np.nan)
    on = _undominated(s_est, c_est)
    prob_on = _undominated(s_draws, c_draws).mean(axis=0)
    order = sorted((i for i in range(len(systems)) if on[i]), key=lambda i: (c_est[i], -s_est[i]))
    label = np.asarray(result["system"].values, dtype=object)
    out = xr.Dataset(
        {
            "on_frontier": ("system", on),
            "prob_on_frontier": ("system", prob_on),
            "prob_dominates": (("candidate", "baseline"), prob),
            "success": ("system", s_est),
            "cost": ("system", c_est),
        },
        coords={"system": label, "candidate": label, "baseline": label},
    )
    out.attrs = {
        "cost": cost,
        "success": success,
        "k": None if k is None else int(k),
        "frontier": [systems[i] for i in order],
        "method": result.attrs.get("method"),
        "column": result.attrs.get("column"),
    }
    return out


def _paired_effect(ds, name, system, reference, prefix, ci_prob, point, **sel) -> dict:
    """``name`` of ``system`` minus the reference's over the joint draws.

    Paired through the shared task weights; the point is the difference of the two estimates.
    """
    draws = ds[f"{name}_draws"].sel(sel) if sel else ds[f"{name}_draws"]
    diff = (draws.sel(system=system) - draws.sel(system=reference)).values
    low, high = percentiles(diff[:, None], ci_prob)[0]
    key = "mean" if prefix == "bayes" else "estimate"
    return {
        f"{prefix}_{key}": json_number(point),
        f"{prefix}_lower": json_number(low),
        f"{prefix}_upper": json_number(high),
        f"{prefix}_prob_positive": json_number(np.mean(diff > 0)),
    }


def evidence(
    posterior: Posterior,
    column: str,
    *,
    k=1,
    reference=None,
    model: str = "bayesian_bootstrap",
    unit: str = "task",
    ci_prob: float = 0.95,
    n_draws: int = 1000,
    n_boot: int = 2000,
    seed=0,
) -> dict:
    """The cost-success evidence table of the report card, as a JSON-ready ``dict``.

    Per system, posterior (:func:`bayeval.analyses.cost.posterior_cost`) next to bootstrap
    (:func:`bayeval.bootstrap.cost`): pass@1 and pass@k per attempt (every attempt counts; a
    timed-out or errored attempt is a failed try), the paired pass@1 effect against the
    reference system (candidate minus reference over the joint draws, which share their task
    weights), cost per attempt and per success, the timeout, error and invalid rates, whether
    the system is on the cost-per-attempt / pass@1 frontier and the system most likely to
    dominate it. Then every ordered pair's P(candidate dominates baseline), the budget
    curve for each k (the bootstrap only where k is at most every task's attempts), and
    the systems the cost model's misfit check flags (``cost_misfit``: under
    ``model="lognormal"``, those whose log-normal and bootstrap costs per attempt disagree,
    either's point outside the other's interval; empty under the Bayesian bootstrap).

    Parameters
    ----------
    posterior : Posterior
        A fit whose data has covariate ``column``.
    column : str
    k : int or list of int, default 1
        The budget curve's k (1 is always included); the table's pass@k is the largest.
    reference : str, optional
        The system the paired effects are taken against; default the one with the highest
        posterior pass@1.
    model, unit, ci_prob, n_draws, n_boot, seed
        As in :func:`bayeval.analyses.cost.cost` and
        :func:`bayeval.analyses.cost.posterior_cost` (``model``: the posterior's cost side,
        ``"bayesian_bootstrap"`` or ``"lognormal"``).

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval.analyses.tradeoff import evidence
    >>> df = pd.DataFrame({"system": ["A"] * 6 + ["B"] * 6, "task": [0, 0, 1, 1, 2, 2] * 2,
    ...                    "success": [1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 0],
    ...                    "cost": [1.0] * 6 + [0.5] * 6})
    >>> res = be.fit(be.from_frame(df, covariates=["cost"]), model="beta_binomial",
    ...              draws=200, chains=2, seed=0)
    >>> out = evidence(res, "cost", n_boot=500, n_draws=400)
    >>> out["reference"], [row["system"] for row in out["rows"]]
    ('A', ['A', 'B'])
    >>> out["rows"][1]["cost_per_success_bootstrap_estimate"]  # 3.0 / 2 successes
    1.5
    """
    data = posterior.data
    _check_column(data, column)
    ks = sorted({1, *_check_ks(k).tolist()})
    per_task, systems = _task_totals(data, column)
    attempts = per_task[..., 1]
    fewest = int(attempts[attempts > 0].min()) if (attempts > 0).any() else 0
    boot_ks = [v for v in ks if v <= fewest]
    post = posterior_cost(
        posterior, column, k=ks, model=model, ci_prob=ci_prob, n_draws=n_draws, seed=seed
    )
    boot = cost(data, column, k=boot_ks, unit=unit, ci_prob=ci_prob, n_boot=n_boot, seed=seed)
    labels = [str(s) for s in systems]
    if reference is None:
        reference = systems[int(np.nanargmax(post["pass_at_1"].values))]
    elif reference not in list(systems):
        raise ValueError(
            f"reference must be one of the systems {describe_values(labels)}; got {reference!r}"
        )
    fronts = {"bayes": frontier(post), "bootstrap": frontier(boot)}
    misfit = cost_models.MODELS[model].misfit(post, boot)
    k_top = ks[-1]
    rows = []
    for system in systems:
        row: dict[str, object] = {"system": str(system)}
        for prefix, ds in (("bayes", post), ("bootstrap", boot)):
            for name, out_name in (
                ("pass_at_1", "pass_at_1"),
                ("cost_per_attempt", "cost_per_attempt"),
                ("cost_per_success", "cost_per_success"),
            ):
                part = triple(ds.sel(system=system), name, prefix)
                row.update({f"{out_name}_{key}": v for key, v in part.items()})
            if k_top > 1 and k_top in ds.coords.get("k", xr.DataArray([])).values:
                part = triple(ds.sel(system=system), "pass_at_k", prefix, k=k_top)
            else:
                part = dict.fromkeys(triple(ds.sel(system=system), "pass_at_1", prefix), None)
            row.update({f"pass_at_k_{key}": v for key, v in part.items()})
            point = float(
                ds["pass_at_1"].sel(system=system) - ds["pass_at_1"].sel(system=reference)
            )
            part = _paired_effect(ds, "pass_at_1", system, reference, prefix, ci_prob, point)
            if system == reference:
                part = dict.fromkeys(part, None)
            row.update({f"effect_{key}": v for key, v in part.items()})
            front = fronts[prefix]
            row[f"on_frontier_{prefix}"] = bool(front["on_frontier"].sel(system=system))
            row[f"prob_on_frontier_{prefix}"] = json_number(
                front["prob_on_frontier"].sel(system=system)
            )
        for status in RATE_STATUSES:
            row[f"{status}_rate"] = json_number(boot[f"{status}_rate"].sel(system=system))
        against = fronts["bayes"]["prob_dominates"].sel(baseline=system)
        if len(systems) > 1:
            best = int(np.nanargmax(against.values))
            other = systems[best]
            row["dominated_by"] = str(other)
            row["prob_dominated_bayes"] = json_number(against.values[best])
            row["prob_dominated_bootstrap"] = json_number(
                fronts["bootstrap"]["prob_dominates"].sel(candidate=other, baseline=system)
            )
        else:
            row["dominated_by"] = row["prob_dominated_bayes"] = None
            row["prob_dominated_bootstrap"] = None
        rows.append(row)
    dominance = [
        {
            "candidate": str(a),
            "baseline": str(b),
            "bayes": json_number(fronts["bayes"]["prob_dominates"].sel(candidate=a, baseline=b)),
            "bootstrap": json_number(
                fronts["bootstrap"]["prob_dominates"].sel(candidate=a, baseline=b)
            ),
        }
        for a in systems
        for b in systems
        if a != b
    ]
    budget = []
    for system in systems:
        for kk in ks:
            entry = {"system": str(system), "k": int(kk)}
            for name in K_STATISTICS:
                entry.update(
                    {
                        f"{name}_{key}": v
                        for key, v in triple(post.sel(system=system), name, "bayes", k=kk).items()
                    }
                )
                if kk in boot_ks:
                    part = triple(boot.sel(system=system), name, "bootstrap", k=kk)
                else:
                    part = dict.fromkeys(
                        ("bootstrap_estimate", "bootstrap_lower", "bootstrap_upper"), None
                    )
                entry.update({f"{name}_{key}": v for key, v in part.items()})
            budget.append(entry)
    return {
        "column": column,
        "cost_model": post.attrs["cost_model"],
        "reference": str(reference),
        "k": [int(v) for v in ks],
        "pass_k": int(k_top),
        "bootstrap_k": [int(v) for v in boot_ks],
        "unit": unit,
        "n_draws": int(post.attrs["n_draws"]),
        "cost_misfit": [str(s) for s, bad in zip(systems, misfit, strict=True) if bad],
        "frontier": {
            "cost": "cost_per_attempt",
            "success": "pass_at_1",
            "bayes": fronts["bayes"].attrs["frontier"],
            "bootstrap": fronts["bootstrap"].attrs["frontier"],
        },
        "rows": rows,
        "dominance": dominance,
        "budget": budget,
    }
