"""The ArviZ groups of a fit beyond the posterior: data, log-likelihood and replicated data.

The groups, as ArviZ reads them:

* ``observed_data``: each task's total over its systems, ``task_total``, the observation of
  the unit the log-likelihood leaves out; ``constant_data``: the data per cell
  (:mod:`bayeval.data.groups`);
* ``log_likelihood``: one variable, ``task_total``, over ``(chain, draw, task)``;
* ``posterior_predictive``: the replicated ``task_total`` (the total of replicated
  ``successes``, or ``score_sum`` for scores), one replicate per posterior draw, on the
  posterior's own ``chain`` and ``draw``;
* ``posterior_predictive_stats``: statistics of replicated new tasks with no observed
  counterpart (the per-task success-count histogram and the share of tasks always or never
  solved; :func:`bayeval.checks.ppc` reads them), apart so that ArviZ's predictive checks
  see only what was observed.

The task is the unit: each task's log-likelihood is joint over the systems that ran it (they
share its effects), with the combinatorial coefficients of its counts, so ``arviz_stats.loo``
leaves a task out and the models compare on the same scale. The model gives it
(:meth:`~bayeval.models.base.Model.pattern_log_likelihood`): the hierarchical model's
beta-binomial log-pmf per system, the integrated (quadrature) likelihood of the task's counts
for ``logit_normal``, and given each task's sampled or drawn rates for the models whose task
parameters are their own (``beta_binomial``'s free rate per task; ``zoib``'s sampled effects).
It is not defined under ``missing="bounds"`` (two data sets). Tasks with the same counts (and
population) share their log-likelihood in every draw, so it is computed once per distinct count
pattern (:func:`log_likelihood_by_pattern`) and expanded to the tasks only when the group is
asked for: ``fit`` stores it only when small and quick (:func:`log_likelihood_skipped`), and
otherwise records why in ``log_likelihood_note``.

Each replicate comes from the same parameters as the log-likelihood
(:meth:`~bayeval.models.base.Model.replicator`): where the log-likelihood integrates a task's
effects out, the replicate draws them afresh (a new task with these trials, in this cluster
and stratum), so that LOO-PIT (``arviz_stats.loo_pit``, weighting each draw by the inverse of
the task's likelihood) compares each task with its leave-one-out predictive distribution.
The cells are drawn a block of tasks at a time (:data:`REPLICATE_BLOCK` cells) and summed over
the systems block by block, each task from its own generator, so that memory is bounded by a
block and the stored totals (:data:`REPLICATE_LIMIT` of them by default) and the replicates do
not depend on the block. ``posterior_predictive_stats`` is drawn apart, by the model
(:meth:`~bayeval.models.base.Model.predictive`), from the population parameters per draw:
histograms whose size does not grow with the tasks.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval.data.groups import TASK_TOTAL, cell_data, dataset_of, split
from bayeval.models import get_model
from bayeval.models._beta_family import counts_by_bound

LOG_LIKELIHOOD_SECONDS = 30.0  # estimated cost above which fit leaves the group to on demand
LOG_LIKELIHOOD_LIMIT = 4_000_000  # numbers (chain x draw x task) fit stores by default
REPLICATE_LIMIT = 16_000_000  # replicated task totals (chain x draw x task) stored by default
REPLICATE_BLOCK = 500_000  # replicated cells (chain x draw x system x task) drawn at once
#: The group of statistics of replicated new tasks (no observed counterpart).
PREDICTIVE_STATS = "posterior_predictive_stats"
#: The layout of the groups a tree written to a file has (``Posterior.to_netcdf``): 1, the
#: first, kept every data variable in ``observed_data`` and the predictive statistics in
#: ``posterior_predictive``; 2 has the groups above.
FORMAT = 2
_LOG_LIKELIHOOD_ATTRS = {
    "unit": "task (joint over the systems that ran it)",
    "binomial_coefficients": "included",
}


def data(ds: xr.Dataset, model: str) -> dict[str, xr.Dataset]:
    """The ``observed_data`` and ``constant_data`` groups of a fit of ``model`` to ``ds``."""
    observed, constant = split(ds, total_of=get_model(model).observations(ds)[0])
    return {"observed_data": observed, "constant_data": constant}


def log_likelihood_cost(tree) -> float:
    """Rough seconds to compute the ``log_likelihood`` group (the model's estimate)."""
    return get_model(tree.attrs["model"]).log_likelihood_cost(tree)


def log_likelihood_skipped(tree, asked) -> str | None:
    """Why ``fit`` leaves the ``log_likelihood`` group to on demand, or None to store it.

    ``asked`` is ``fit``'s ``log_likelihood=``: ``True`` stores the group, ``False`` does not,
    ``"auto"`` stores it when it holds at most :data:`LOG_LIKELIHOOD_LIMIT` numbers and its
    estimated cost (:func:`log_likelihood_cost`) is at most :data:`LOG_LIKELIHOOD_SECONDS`.
    """
    if asked is True:
        return None
    if asked is False:
        return "log_likelihood=False"
    post = tree["posterior"]
    numbers = post.sizes["chain"] * post.sizes["draw"] * tree["observed_data"].sizes["task"]
    if numbers > LOG_LIKELIHOOD_LIMIT:
        return (
            f"chain x draw x task is {numbers:,} numbers ({numbers * 8 / 2**30:.2g} GiB), "
            f"more than the {LOG_LIKELIHOOD_LIMIT:,} stored by default"
        )
    cost = log_likelihood_cost(tree)
    if cost > LOG_LIKELIHOOD_SECONDS:
        return f"its quadrature would take about {cost:.0f} s"
    return None


def log_likelihood_note(reason: str) -> str:
    """The tree's ``log_likelihood_note`` where the group was not stored, for ``reason``."""
    return (
        f"the log_likelihood group is not stored ({reason}): log_likelihood() computes it "
        "on demand, by='pattern' in memory that grows with the distinct count patterns "
        "rather than the tasks; with_log_likelihood() adds the group"
    )


def log_likelihood_by_pattern(tree) -> xr.Dataset | None:
    """Each distinct count pattern's log-likelihood, or None where it is not defined.

    Tasks with the same counts in every system (and the same population: stratum, and cluster
    for ``logit_normal``) have the same log-likelihood in every draw, so it is computed once per
    pattern: ``task_total (chain, draw, pattern)``, each pattern's ``multiplicity`` and each
    task's pattern, ``task_pattern (task)``. :func:`log_likelihood` expands it to the tasks.
    """
    model = get_model(tree.attrs["model"])
    obs = model.fitted_data(tree)  # the counts the model read (fractional: its weighted cells)
    c, n, bounds = counts_by_bound(obs)
    if bounds is not None:  # two data sets: no one likelihood
        return None
    c, n = c[0], n[0]
    patterns = model.pattern_log_likelihood(tree, c, n)
    if patterns is None:
        return None
    total, first, inverse = patterns
    post = tree["posterior"]
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    # a pattern's first task stands for it: the coefficients summed over systems as per task
    total = total + model.log_coefficients(obs)[:, first].sum(axis=0)
    P = len(first)
    return xr.Dataset(
        {
            TASK_TOTAL: (("chain", "draw", "pattern"), total.reshape(n_chain, n_draw, P)),
            "multiplicity": ("pattern", np.bincount(inverse, minlength=P)),
            "task_pattern": ("task", inverse),
        },
        coords={
            "chain": post["chain"].values,
            "draw": post["draw"].values,
            "pattern": np.arange(P),
            "task": obs["task"].values,
        },
        attrs=dict(_LOG_LIKELIHOOD_ATTRS),
    )


def log_likelihood(tree) -> xr.Dataset | None:
    """The ``log_likelihood`` group of a fitted tree, or None where it is not defined.

    Computed per count pattern (:func:`log_likelihood_by_pattern`), then expanded to the tasks.
    """
    patterns = log_likelihood_by_pattern(tree)
    if patterns is None:
        return None
    inverse = patterns["task_pattern"].values
    values = patterns[TASK_TOTAL].values
    return xr.Dataset(
        {TASK_TOTAL: (("chain", "draw", "task"), values[:, :, inverse])},
        coords={
            "chain": patterns["chain"].values,
            "draw": patterns["draw"].values,
            "task": patterns["task"].values,
        },
        attrs=dict(_LOG_LIKELIHOOD_ATTRS),
    )


def replicate_skipped(tree) -> str | None:
    """Why a fit holds no replicated observations (``posterior_predictive``), or None.

    The replicates are drawn a block of tasks at a time (:func:`replicated`), so the limit,
    :data:`REPLICATE_LIMIT`, is on what is stored: ``chain x draw x task`` numbers.
    """
    if "missing_bound" in cell_data(tree)["successes"].dims:
        return "missing='bounds' holds two data sets"
    post, obs = tree["posterior"], cell_data(tree)
    size = post.sizes["chain"] * post.sizes["draw"] * obs.sizes["task"]
    if size > REPLICATE_LIMIT:
        return (
            f"chain x draw x task is {size:,} numbers ({size * 8 / 2**30:.2g} GiB), more than "
            f"the {REPLICATE_LIMIT:,} stored by default"
        )
    return None


def replicate_note(tree) -> str | None:
    """The tree's ``posterior_predictive_note``: why its replicates are not stored, or None.

    None also under ``missing="bounds"``, where they are not defined.
    """
    if "missing_bound" in cell_data(tree)["successes"].dims:
        return None
    reason = replicate_skipped(tree)
    return None if reason is None else f"the posterior_predictive group is not stored ({reason})"


def replicated(tree, seed, *, block_cells: int | None = None) -> xr.Dataset | None:
    """The ``posterior_predictive`` group: one replicated data set per posterior draw.

    ``task_total`` over ``(chain, draw, task)``: the sum over the systems of the first of the
    model's replicated per-cell observations (:meth:`~bayeval.models.base.Model.replicator`),
    as ``observed_data`` sums the data's; None where :func:`replicate_skipped` says why not.
    The cells are drawn a block of tasks at a time, at most ``block_cells`` (default
    :data:`REPLICATE_BLOCK`) chain x draw x system x task numbers a block (at least one task),
    and summed over the systems block by block, so that memory is bounded by the block and the
    stored totals. Each task's replicate comes from its own generator, seeded by ``seed`` and
    the task's position: the same whatever the block.
    """
    if replicate_skipped(tree) is not None:
        return None
    model = get_model(tree.attrs["model"])
    names = model.observations(dataset_of(tree))
    post, obs = tree["posterior"], cell_data(tree)
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    S, J = obs.sizes["system"], obs.sizes["task"]
    limit = REPLICATE_BLOCK if block_cells is None else int(block_cells)
    block = max(1, limit // max(n_chain * n_draw * S, 1))
    draw = model.replicator(tree)
    total = None
    for start in range(0, J, block):
        tasks = np.arange(start, min(start + block, J))
        part = draw(_task_rngs(seed, tasks), tasks)[names[0]].sum(axis=1)  # (draw, tasks)
        if total is None:
            total = np.empty((n_chain * n_draw, J), dtype=part.dtype)
        total[:, tasks] = part
    assert total is not None  # a fit has at least one task
    out = xr.DataArray(
        total.reshape(n_chain, n_draw, J),
        dims=("chain", "draw", "task"),
        coords={
            "chain": post["chain"].values,
            "draw": post["draw"].values,
            "task": obs["task"].values,
        },
        attrs={"total_of": names[0], "over": "system"},
    )
    return xr.Dataset({TASK_TOTAL: out})


def replicated_cells(tree, seed, tasks=None) -> dict[str, np.ndarray]:
    """The replicated per-cell observations :func:`replicated` sums, of ``tasks`` (default all).

    Each of the model's observations as an array ``(draw, system, task)``, the draws flattened
    over ``(chain, draw)``, from the same generators; all at once, in memory that grows with the
    cells (for checks of a few tasks).
    """
    model = get_model(tree.attrs["model"])
    every = np.arange(cell_data(tree).sizes["task"])
    tasks = every if tasks is None else every[np.asarray(tasks)]
    return model.replicator(tree)(_task_rngs(seed, tasks), tasks)


def _task_rngs(seed, tasks) -> list[np.random.Generator]:
    """Each task's own generator for its replicate, from the fit's seed and its position."""
    return [np.random.default_rng([int(seed), 5, int(j)]) for j in tasks]


def predictive(tree, seed) -> dict[str, xr.Dataset]:
    """The predictive groups of a fitted tree, by name (empty ones left out).

    ``posterior_predictive`` (:func:`replicated`) and, for a model with a population,
    ``posterior_predictive_stats`` (the model's :meth:`~bayeval.models.base.Model.predictive`).
    """
    model = get_model(tree.attrs["model"])
    out = {}
    replicates = replicated(tree, seed)
    if replicates is not None:
        out["posterior_predictive"] = replicates
    if "population" in model.estimands:
        stats = model.predictive(tree)
        if stats.data_vars:
            out[PREDICTIVE_STATS] = stats
    return out


def upgrade(tree: xr.DataTree) -> xr.DataTree:
    """A tree read from a file in today's layout (:data:`FORMAT`).

    A tree of format 1 (its ``observed_data`` holds the ``trials``) has its data split into
    ``observed_data`` and ``constant_data``, its predictive statistics moved to their own
    group, its replicates drawn again as a fit draws them now (a new task's effects for each
    replicate; format 1's drew the rates given the task's own counts, which LOO-PIT cannot
    weigh, and ``logit_normal``'s were thinned with its statistics) and its log-likelihood named
    ``task_total``. Any other tree is returned as it is.
    """
    if "trials" not in tree["observed_data"].data_vars:
        return tree
    groups = {
        name: node.to_dataset(inherit=False)
        for name, node in tree.children.items()
        if name not in ("observed_data", "constant_data", "posterior_predictive")
    }
    ds = tree.children["observed_data"].to_dataset(inherit=False)
    groups.update(data(ds, tree.attrs["model"]))
    if "posterior_predictive" in tree.children:
        old = tree.children["posterior_predictive"].to_dataset(inherit=False)
        stats = old.drop_vars(["successes", "task"], errors="ignore")
        if stats.data_vars:
            groups[PREDICTIVE_STATS] = stats
    if "log_likelihood" in groups:
        groups["log_likelihood"] = groups["log_likelihood"].rename({"successes": TASK_TOTAL})
    out = xr.DataTree.from_dict({"/": tree.to_dataset(inherit=False), **groups})
    replicates = replicated(out, out.attrs["seed"])
    if replicates is not None:
        out["posterior_predictive"] = xr.DataTree(replicates)
    return out
