"""Bayesian intervals next to their bootstrap twins, for the same estimand on the same data.

Each estimand has a bootstrap twin that resamples the units that estimand treats as random:

* ``estimand="tasks"`` (only trials are random) <-> ``unit="trial"``;
* ``estimand="population"`` (a new task like these) <-> ``unit="task"``.

Where the two agree the model adds little beyond honesty about the estimand; where they
differ, the difference has a reason worth reading: shrinkage on few tasks, the prior on a
non-identified spread (one trial per task), or a bootstrap that cannot see uncertainty (zero
width with one trial per task; too narrow with very few tasks).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval._validate import validate_choice, validate_prob
from bayeval.analyses._draws import SAMPLE_DIMS, settings_of
from bayeval.analyses.metrics import pass_at_k, pass_hat_k
from bayeval.estimators import METRICS
from bayeval.posterior import Posterior, credible_interval

__all__ = ["crosscheck", "bootstrap_twin", "interval_widths", "BOOTSTRAP_TWIN"]

#: The bootstrap unit resampled for each estimand.
BOOTSTRAP_TWIN = {"tasks": "trial", "population": "task"}


def bootstrap_twin(
    posterior, estimand: str, *, clusters=None, weighting: str = "task"
) -> xr.Dataset:
    """Bootstrap settings of the twin of one Bayesian estimand (DESIGN: metrics and estimands).

    With clustered ``logit_normal`` (or ``zoib``) fits a new task from a new cluster, every
    cluster weighing the same, has as twin the bootstrap that resamples clusters, weighted
    equally; a new task from the observed clusters (``clusters="observed"``) the one that
    resamples tasks within them. ``clusters=None`` is the fit's default population
    (:func:`bayeval.data.clusters.default_clusters`).

    Parameters
    ----------
    posterior : Posterior
    estimand : {"tasks", "population"}
    clusters, weighting
        The population estimand asked for (see :meth:`bayeval.Results.pass_at_k`).

    Returns
    -------
    xarray.Dataset
        No variables; ``attrs`` hold the keywords of the bootstrap (``unit``, and where they
        matter ``clusters`` and ``weighting``), to pass on as ``**twin.attrs``.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.crosscheck import bootstrap_twin
    >>> res = be.fit(be.from_counts([[9, 1, 10, 0]], trials=10), draws=100, chains=1, seed=0)
    >>> bootstrap_twin(res, "population").attrs
    {'unit': 'task'}
    """
    if estimand == "tasks":
        return xr.Dataset(attrs={"unit": "trial"})
    clustered = (
        posterior._paired  # the paired models have cluster effects
        and "cluster" in posterior._group("constant_data").coords
    )
    if not clustered:
        settings = {"unit": "task"}
    else:
        if clusters is None:  # the population the readouts default to
            clusters = posterior._cluster_options("population", None, weighting)["clusters"]
        if clusters == "observed":
            settings = {"unit": "task", "clusters": "observed", "weighting": weighting}
        else:
            settings = {"unit": "cluster", "weighting": "cluster"}
    return xr.Dataset(attrs=settings)


def interval_widths(bayes_interval: xr.DataArray, bootstrap_interval: xr.DataArray) -> xr.Dataset:
    """The widths of a Bayesian interval and its bootstrap twin, and their ratio.

    Parameters
    ----------
    bayes_interval, bootstrap_interval : xarray.DataArray
        Intervals on ``ci_bound`` (``lower``, ``upper``), aligned on their other dims.

    Returns
    -------
    xarray.Dataset
        ``bayes_width``, ``bootstrap_width`` and ``width_ratio`` (Bayesian / bootstrap:
        infinite or NaN where the bootstrap interval has zero width, NaN where either bound
        is missing).

    Examples
    --------
    >>> import xarray as xr
    >>> from bayeval.analyses.crosscheck import interval_widths
    >>> bayes = xr.DataArray([0.2, 0.5], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]})
    >>> boot = xr.DataArray([0.3, 0.5], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]})
    >>> round(float(interval_widths(bayes, boot)["width_ratio"]), 6)
    1.5
    """
    bayes_width = bayes_interval.sel(ci_bound="upper") - bayes_interval.sel(ci_bound="lower")
    bootstrap_width = bootstrap_interval.sel(ci_bound="upper") - bootstrap_interval.sel(
        ci_bound="lower"
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = bayes_width / bootstrap_width
    return xr.Dataset(
        {"bayes_width": bayes_width, "bootstrap_width": bootstrap_width, "width_ratio": ratio}
    )


def crosscheck(
    posterior,
    *,
    metric: str = "pass@k",
    k=1,
    estimands=None,
    ci_prob: float = 0.95,
    n_boot: int = 10_000,
    seed=0,
    method: str = "percentile",
    clusters=None,
    weighting: str = "task",
    fmt: str = "dataset",
    systems=None,
):
    """Bayesian and bootstrap intervals side by side, estimand by estimand.

    Parameters
    ----------
    posterior : Posterior
    metric : {"pass@k", "pass^k"}
    k : int or list of int, default 1
    estimands : sequence, optional
        Default: every estimand the model supports.
    ci_prob : float, default 0.95
    n_boot, seed, method
        Bootstrap settings (see :func:`bayeval.bootstrap.pass_at_k`).
    clusters, weighting
        ``logit_normal`` with clusters: the population estimand asked for (see
        :meth:`bayeval.Results.pass_at_k`). A new cluster pairs with the cluster bootstrap
        (clusters weighted equally), the observed clusters with the task bootstrap within
        them.
    fmt : {"dataset", "dataframe"}
    systems : list, optional
        These systems only, in this order (default all): the bootstrap resamples their
        counts alone, as where a k is within some systems' trials and not others'.

    Returns
    -------
    xarray.Dataset or pandas.DataFrame
        Over ``(estimand, system[, missing_bound][, k])``: ``bayes_mean``, ``bayes_interval``,
        ``bootstrap_estimate``, ``bootstrap_interval`` (on ``ci_bound``), both widths, their
        ratio ``width_ratio`` (Bayesian / bootstrap) and ``centre_difference`` (Bayesian
        mean minus bootstrap estimate). ``attrs["twins"]`` records the pairing.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3, 8, 2]], trials=10)
    >>> res = be.fit(data, draws=500, chains=2, seed=0, model="hierarchical")
    >>> table = be.crosscheck(res, n_boot=2000, fmt="dataframe")
    >>> table[["estimand", "bootstrap_unit"]].drop_duplicates().values.tolist()
    [['tasks', 'trial'], ['population', 'task']]
    """
    if not isinstance(posterior, Posterior):
        raise TypeError(
            f"posterior must be a bayeval Results (from bayeval.fit or bayeval.load); "
            f"got {type(posterior).__name__}"
        )
    validate_choice("metric", metric, METRICS)
    validate_choice("fmt", fmt, ("dataset", "dataframe"))
    ci_prob = validate_prob("ci_prob", ci_prob)
    estimands = posterior.estimands if estimands is None else tuple(estimands)
    boot_func = pass_at_k if metric == "pass@k" else pass_hat_k
    data = posterior.data
    if systems is not None:
        systems = list(systems)
        data = data.sel(system=systems)
    parts = []
    twins = {}
    population: dict = {}
    for estimand in estimands:
        options = {} if estimand == "tasks" else {"clusters": clusters, "weighting": weighting}
        draws = posterior.draws(metric, k, estimand, **options, systems=systems)
        twin = twins[estimand] = bootstrap_twin(
            posterior, estimand, clusters=clusters, weighting=weighting
        ).attrs
        unit = twin["unit"]
        boot = boot_func(
            data, k=k, n_boot=n_boot, ci_prob=ci_prob, seed=seed, method=method, **twin
        )
        if estimand == "population":  # the population the readout resolved (its default)
            population = settings_of(draws)
        bayes_interval = credible_interval(draws, ci_prob, SAMPLE_DIMS)
        part = xr.Dataset(
            {
                "bayes_mean": draws.mean(SAMPLE_DIMS),
                "bayes_interval": bayes_interval,
                "bootstrap_estimate": boot["estimate"],
                "bootstrap_interval": boot["interval"],
            }
        )
        part = part.merge(interval_widths(part["bayes_interval"], part["bootstrap_interval"]))
        part["centre_difference"] = part["bayes_mean"] - part["bootstrap_estimate"]
        part = part.assign_coords(bootstrap_unit=unit)
        parts.append(part.expand_dims(estimand=[estimand]))
    out = xr.concat(parts, dim="estimand", coords="different", compat="equals")
    out.attrs = {
        "twins": repr(twins),
        "metric": metric,
        "ci_prob": ci_prob,
        "ci_kind": "eti",
        "bootstrap_method": method,
        "n_boot": n_boot,
        "seed": seed,
        "model": posterior.model,
        **population,
    }
    if fmt == "dataset":
        return out
    frame = out.drop_dims("ci_bound").to_dataframe()
    for name in ("bayes_interval", "bootstrap_interval"):
        bounds = out[name].to_dataframe()[name].unstack("ci_bound")
        frame[f"{name.split('_')[0]}_lower"] = bounds["lower"]
        frame[f"{name.split('_')[0]}_upper"] = bounds["upper"]
    frame = frame.reset_index()
    frame.attrs = out.attrs
    return frame
