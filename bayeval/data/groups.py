"""EvalData's dataset as a fit's ``observed_data`` and ``constant_data`` groups, and back.

A fitted tree keeps the data as ArviZ reads them. ArviZ pairs each variable of
``observed_data`` with the variable of the same name and dims in ``log_likelihood`` and
``posterior_predictive`` (``arviz_stats.loo_pit`` and ``arviz_plots.plot_loo_pit`` take every
one of them), so ``observed_data`` holds only the observation of the unit the log-likelihood
leaves out: each task's total over the systems that ran it, ``task_total`` (of ``successes``,
or of ``score_sum`` for a model of partial-credit scores). ``constant_data`` holds the data
themselves, per cell: the counts and scores that total sums, what the models condition on
(``trials``, ``attempts``, ``status_counts``), per-attempt covariates and latency, and the
scores' other sufficient statistics. :func:`dataset_of` joins the groups back into the dataset
:class:`EvalData` holds; :func:`cell_data` is the group that holds the cells.
"""

from __future__ import annotations

import xarray as xr

__all__ = ["TASK_TOTAL", "cell_data", "dataset_of", "split"]

#: Each task's total over its systems: the observation LOO-PIT pairs with the task's
#: log-likelihood (the same name in ``observed_data``, ``posterior_predictive`` and
#: ``log_likelihood``).
TASK_TOTAL = "task_total"
# EvalData's own variables first, in its order, when the groups are joined back
_LEADING = ("successes", "trials", "attempts", "status_counts")


def split(ds: xr.Dataset, *, total_of: str = "successes") -> tuple[xr.Dataset, xr.Dataset]:
    """``(observed_data, constant_data)`` of an EvalData dataset.

    ``observed_data`` holds ``task_total``, each task's sum over the systems of ``total_of``
    (``"successes"``, or ``"score_sum"`` for a model of scores), with the task's coordinates;
    ``constant_data`` holds every variable of the data. Both keep the data's attributes.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.data.groups import split
    >>> data = be.from_counts([[3, 5, 0], [4, 5, 1]], trials=5, systems=["A", "B"])
    >>> observed, constant = split(data.dataset)
    >>> list(observed.data_vars), list(constant.data_vars)
    (['task_total'], ['successes', 'trials', 'attempts', 'status_counts'])
    >>> observed["task_total"].values.tolist()
    [7, 10, 1]
    """
    if total_of not in ds.data_vars:
        raise ValueError(
            f"total_of must name a variable of the data, in {list(ds.data_vars)}; got {total_of!r}"
        )
    per_task = ds[total_of].sum("system")
    per_task.attrs = {"total_of": total_of, "over": "system"}
    observed = xr.Dataset({TASK_TOTAL: per_task}, attrs=dict(ds.attrs))
    return observed, ds.copy()


def cell_data(tree: xr.DataTree) -> xr.Dataset:
    """The group of a tree that holds the data per cell, as a view (no copy).

    ``constant_data``; ``observed_data`` in a tree without it (the layout before
    ``constant_data`` held the data, and the scratch trees the models read).

    Examples
    --------
    >>> from bayeval.data.groups import cell_data
    >>> from bayeval.testing import fake_results
    >>> cell_data(fake_results().tree)["successes"].dims
    ('system', 'task')
    """
    group = "constant_data" if "constant_data" in tree.children else "observed_data"
    return tree[group].dataset


def dataset_of(tree: xr.DataTree) -> xr.Dataset:
    """The EvalData dataset of a fitted tree: its ``constant_data`` (less nothing).

    A tree whose ``observed_data`` holds every variable (the layout before ``constant_data``
    held the data) reads the same.

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
        extra = {v: ds[v] for v in ds.data_vars if v not in constant.data_vars}
        ds = constant.assign(extra)
    ds = ds.drop_vars([TASK_TOTAL], errors="ignore")
    leading = [v for v in _LEADING if v in ds.data_vars]
    return ds[leading + [v for v in ds.data_vars if v not in leading]]
