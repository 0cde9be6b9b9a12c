"""EvalData's dataset as a fit's ``observed_data`` and ``constant_data`` groups, and back.

A fitted tree keeps the data as ArviZ reads them. ``observed_data`` holds the observations a
fit replicates in ``posterior_predictive`` (ArviZ's predictive checks compare each of its
variables with its replicate): ``successes``, and ``score_sum`` for a model of partial-credit
scores, with each task's total over the systems that ran it, ``task_total`` (of ``successes``,
or of ``score_sum``). That total is the observation of the task, the unit the
``log_likelihood`` group leaves out, so ``arviz_stats.loo_pit`` pairs it with the task's
log-likelihood under the same name. ``constant_data`` holds the rest: what the models
condition on (``trials``, ``attempts``, ``status_counts``), per-attempt covariates and
latency, and the scores' other sufficient statistics (``score_n0``, ``score_sumlog``, ...;
the likelihood reads them, a replicate of them is not kept). :func:`dataset_of` joins the
groups back into the dataset :class:`EvalData` holds.
"""

from __future__ import annotations

import xarray as xr

__all__ = ["TASK_TOTAL", "dataset_of", "split"]

#: Each task's total over its systems: the observation LOO-PIT pairs with the task's
#: log-likelihood (the same name in ``observed_data``, ``posterior_predictive`` and
#: ``log_likelihood``).
TASK_TOTAL = "task_total"
# EvalData's own variables first, in its order, when the groups are joined back
_LEADING = ("successes", "trials", "attempts", "status_counts")


def split(ds: xr.Dataset, observed=("successes",)) -> tuple[xr.Dataset, xr.Dataset]:
    """``(observed_data, constant_data)`` of an EvalData dataset.

    ``observed`` names the per-cell observations a fit replicates, the first the one whose sum
    over the systems is ``task_total`` (``"successes"``, or ``"score_sum"`` for a model of
    scores). Both groups keep the data's attributes; each keeps the coordinates of its
    variables' dims.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.data.groups import split
    >>> data = be.from_counts([[3, 5, 0], [4, 5, 1]], trials=5, systems=["A", "B"])
    >>> observed, constant = split(data.dataset)
    >>> list(observed.data_vars), list(constant.data_vars)
    (['successes', 'task_total'], ['trials', 'attempts', 'status_counts'])
    >>> observed["task_total"].values.tolist()
    [7, 10, 1]
    """
    observed = list(observed)
    unknown = [v for v in observed if v not in ds.data_vars]
    if unknown or not observed:
        raise ValueError(
            f"observed must name variables of the data, in {list(ds.data_vars)}; got {observed}"
        )
    per_task = ds[observed[0]].sum("system")
    per_task.attrs = {"total_of": observed[0], "over": "system"}
    constant = ds[[v for v in ds.data_vars if v not in observed]]
    return ds[observed].assign({TASK_TOTAL: per_task}), constant


def dataset_of(tree: xr.DataTree) -> xr.Dataset:
    """The EvalData dataset of a fitted tree: its ``observed_data`` and ``constant_data``.

    A tree whose ``observed_data`` holds every variable (the layout before ``constant_data``
    took the variables the models condition on) reads the same.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.data.groups import dataset_of
    >>> data = be.from_counts([[3, 5, 0]], trials=5)
    >>> res = be.fit(data, model="beta_binomial", draws=50, chains=1, seed=0)
    >>> dataset_of(res.tree).identical(data.dataset)
    True
    """
    ds = tree["observed_data"].to_dataset()
    if "constant_data" in tree.children:
        constant = tree["constant_data"].to_dataset()
        ds = ds.assign({v: constant[v] for v in constant.data_vars if v not in ds.data_vars})
    ds = ds.drop_vars([TASK_TOTAL], errors="ignore")
    leading = [v for v in _LEADING if v in ds.data_vars]
    return ds[leading + [v for v in ds.data_vars if v not in leading]]
