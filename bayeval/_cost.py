"""What an attempt and a success cost, and how often attempts time out or fail.

Both versions work on the per-``(system, task, status)`` sums of a covariate kept by
``from_frame(..., covariates=[...])``: every attempt's cost counts, whatever its status (a
timed-out attempt costs what it cost and succeeds never). Per system:

* ``cost_per_attempt``: total cost over attempts of every status (``not_run`` excluded);
* ``cost_per_success``: total cost over successes, a ratio of two task totals;
* ``timeout_rate``, ``error_rate``, ``invalid_rate``: the share of attempts with that status.

:func:`cost` (re-exported as ``bayeval.bootstrap.cost``) resamples tasks (or clusters) within
strata, the same units for every system, and recomputes each ratio from the resampled totals:
a ratio estimator resampled as a ratio. :func:`posterior_cost` (``Results.cost``) is its
posterior twin: the Bayesian bootstrap over tasks (Rubin 1981) for the cost, with the fitted
model's task rates for the successes, coupled through the same task weights.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from bayeval._validate import (
    describe_values,
    validate_choice,
    validate_positive_int,
    validate_prob,
    validate_seed,
)

__all__ = ["cost", "posterior_cost"]

RATE_STATUSES = ("timeout", "error", "invalid")
STATISTICS = ("cost_per_attempt", "cost_per_success") + tuple(f"{s}_rate" for s in RATE_STATUSES)


def _check_column(data, column) -> None:
    from bayeval.data import EvalData

    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData (from be.from_frame); got {type(data).__name__}")
    if column not in data.covariates:
        have = (f"this data has {describe_values(data.covariates)}" if data.covariates else
                "this data has none")
        raise ValueError(f"no covariate {column!r}: pass covariates=[{column!r}] to "
                         f"be.from_frame ({have})")


def _task_totals(data, column) -> tuple[np.ndarray, list]:
    """Per task and system: cost, attempts, successes and the rate statuses, shape
    ``(task, system, 3 + len(RATE_STATUSES))``."""
    ds = data.dataset
    counts = ds["status_counts"].transpose("system", "task", "status")
    attempts = counts.drop_sel(status="not_run").sum("status").values
    total = ds["covariate_sum"].sel(covariate=column).sum("status").transpose("system", "task")
    successes = data.ok_successes().transpose("system", "task").values
    parts = [total.values, attempts, successes]
    parts += [counts.sel(status=s).values for s in RATE_STATUSES]
    return np.stack(parts, axis=-1).transpose(1, 0, 2).astype(float), data.systems


def _ratios(totals: np.ndarray) -> np.ndarray:
    """Statistics from summed totals ``(..., system, quantity)`` -> ``(..., system, stat)``."""
    cost, attempts, successes = totals[..., 0], totals[..., 1], totals[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        per_success = np.where(successes > 0, cost / np.where(successes > 0, successes, 1),
                               np.inf)
        out = [cost / attempts, per_success]
        out += [totals[..., 3 + i] / attempts for i in range(len(RATE_STATUSES))]
    return np.stack(out, axis=-1)


def _percentiles(replicates: np.ndarray, ci_prob: float) -> np.ndarray:
    """Percentile interval over axis 0, on ``ci_bound`` last; an infinite bound stays infinite."""
    alpha = 1 - ci_prob
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.quantile(replicates, [alpha / 2, 1 - alpha / 2], axis=0)
    q = np.where(np.isnan(q) & np.isinf(replicates).any(axis=0), np.inf, q)
    return np.moveaxis(q, 0, -1)


def _dataset(estimate, draws, interval, systems, sample_dims, attrs) -> xr.Dataset:
    out = {}
    for i, name in enumerate(STATISTICS):
        out[name] = xr.DataArray(estimate[:, i], dims=("system",))
        out[f"{name}_interval"] = xr.DataArray(interval[:, i], dims=("system", "ci_bound"))
        out[f"{name}_draws"] = xr.DataArray(draws[..., i], dims=sample_dims + ("system",))
    ds = xr.Dataset(out, coords={"system": np.asarray(systems, dtype=object),
                                 "ci_bound": ["lower", "upper"]})
    ds.attrs = attrs
    return ds


def cost(data, column, unit="task", n_boot=10_000, ci_prob=0.95, seed=0) -> xr.Dataset:
    """Bootstrap cost per attempt, cost per success and the timeout/error/invalid rates.

    Per system, from the per-``(system, task, status)`` sums of covariate ``column``:
    ``cost_per_attempt`` is the total cost of the attempts of every status over their number,
    ``cost_per_success`` the total cost over the total successes (``ok`` successes: the
    missing-outcome policy does not change it), and ``<status>_rate`` the share of attempts
    with status ``timeout``, ``error`` or ``invalid``. Planned attempts that never ran
    (``not_run``) carry no cost and are not attempts.

    Tasks (or whole clusters) are resampled with replacement within strata, the same units for
    every system (so differences between systems are paired), and each ratio is recomputed
    from the resampled totals: the ratio estimator, resampled as a ratio. A replicate with no
    success has an infinite cost per success (an infinite upper bound when that is common).

    Parameters
    ----------
    data : EvalData
        Built with ``from_frame(..., covariates=[column])``.
    column : str
        The covariate holding each attempt's cost.
    unit : {"task", "cluster"}, default "task"
        The resampling unit (``"cluster"`` needs task clusters).
    n_boot : int, default 10000
    ci_prob : float, default 0.95
        Coverage of the percentile intervals (on ``ci_bound``).
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        For each statistic: the estimate (``system``), ``<stat>_interval``
        (``system, ci_bound``) and ``<stat>_draws`` (the replicates, ``replicate, system``).

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t2", "t3", "t4"],
    ...                    "success": [1, 0, 1, 1], "cost": [1.0, 2.0, 1.0, 4.0]})
    >>> data = be.from_frame(df, covariates=["cost"])
    >>> out = be.bootstrap.cost(data, "cost", n_boot=200)
    >>> float(out["cost_per_attempt"].item()), float(out["cost_per_success"].item())
    (2.0, 2.6666666666666665)
    >>> out["cost_per_success_interval"].dims
    ('system', 'ci_bound')
    """
    from bayeval.bootstrap import _layout

    _check_column(data, column)
    validate_choice("unit", unit, ("task", "cluster"))
    if unit == "cluster" and not data.has_clusters:
        raise ValueError("unit='cluster' needs task clusters; this data has none (pass "
                         "cluster= when building it)")
    ci_prob = validate_prob("ci_prob", ci_prob)
    n_boot = validate_positive_int("n_boot", n_boot, 2)
    seed = validate_seed(seed)
    per_task, systems = _task_totals(data, column)
    layout = _layout(data, unit, "task", None)
    n_unit = int(layout.unit.max()) + 1
    per_unit = np.zeros((n_unit,) + per_task.shape[1:])
    np.add.at(per_unit, layout.unit, per_task)
    unit_group = np.empty(n_unit, dtype=np.int64)
    unit_group[layout.unit] = layout.group
    rng = np.random.default_rng(seed)
    totals = np.zeros((n_boot,) + per_task.shape[1:])
    flat = per_unit.reshape(n_unit, -1)
    for g in range(len(layout.weight)):
        members = np.flatnonzero(unit_group == g)
        m = len(members)
        counts = rng.multinomial(m, np.full(m, 1.0 / m), size=n_boot).astype(float)
        totals += (counts @ flat[members]).reshape(totals.shape)
    estimate = _ratios(per_task.sum(0))
    replicates = _ratios(totals)
    attrs = {"method": "bootstrap", "unit": unit, "column": column, "n_boot": n_boot,
             "ci_prob": ci_prob, "seed": seed, "missing_policy": data.missing or "none"}
    return _dataset(estimate, replicates, _percentiles(replicates, ci_prob), systems,
                    ("replicate",), attrs)


def posterior_cost(results, column, ci_prob=0.95, n_draws=1000, seed=0) -> xr.Dataset:
    """Posterior cost per attempt, cost per success and status rates; see
    :meth:`bayeval.Results.cost`.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": "A", "task": [f"t{i // 2}" for i in range(8)],
    ...                    "success": [1, 0, 1, 1, 0, 1, 1, 0], "cost": [1.0, 2.0] * 4})
    >>> data = be.from_frame(df, covariates=["cost"])
    >>> res = be.fit(data, model="beta_binomial", draws=200, chains=2, seed=0)
    >>> out = posterior_cost(res, "cost", n_draws=200)
    >>> float(out["cost_per_attempt"].item()) > 1.2
    True
    """
    data = results.data
    _check_column(data, column)
    ci_prob = validate_prob("ci_prob", ci_prob)
    n_draws = validate_positive_int("n_draws", n_draws, 2)
    seed = validate_seed(seed)
    if data.missing == "bounds":
        raise ValueError("Results.cost needs one success count per attempt; under "
                         "missing='bounds' the successes have two extremes: refit with "
                         "missing='fail' or 'exclude'")
    per_task, systems = _task_totals(data, column)  # (task, system, quantity)
    rates = results.task_rates().stack(sample=("chain", "draw"))
    rates = rates.transpose("sample", "system", "task").values
    rng = np.random.default_rng(seed)
    n_total = rates.shape[0]
    pick = (rng.choice(n_total, size=n_draws, replace=False) if n_draws < n_total
            else np.arange(n_total))
    rates = rates[pick]
    n_draws = len(pick)
    trials = data.dataset["trials"].transpose("system", "task").values.astype(float)
    weights = rng.dirichlet(np.ones(per_task.shape[0]), size=n_draws)  # (draw, task)
    totals = np.einsum("dt,tsq->dsq", weights, per_task)
    # expected successes of task j under the fit: its policy trials times its rate
    totals[..., 2] = np.einsum("dt,dst->ds", weights, trials[None] * rates)
    draws = _ratios(totals)
    interval = _percentiles(draws, ci_prob)
    estimate = draws.mean(axis=0)
    attrs = {"method": "posterior (Bayesian bootstrap over tasks, model task rates)",
             "model": results.model, "column": column, "n_draws": n_draws, "ci_prob": ci_prob,
             "seed": seed, "missing_policy": data.missing or "none"}
    return _dataset(estimate, draws, interval, systems, ("draw",), attrs)
