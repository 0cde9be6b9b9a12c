r"""The paired logit-normal model of partial-credit scores: ``fractional``.

Model (system s, task j in cluster g; the scores y in [0, 1] of a cell's n valid attempts)::

    logit m[s, j] = alpha[s] + u[g] + w[s, g] + e[j] + v[s, j]     (as ``logit_normal``)
    log L(m[s, j]) = c log m + (n - c) log(1 - m),   c = the sum of the n scores

The logit-normal model's effects and priors, with the binomial likelihood taken at fractional
counts: the fractional-binomial (quasi-binomial) likelihood of Papke and Wooldridge (1996) for
outcomes in [0, 1]. Its estimating equation, ``c - n m = 0``, is unbiased for the mean score
``m = E[y]`` whatever the scores' distribution in [0, 1], so the estimands are those of the
mean score: over these tasks, the mean of each cell's expected score; over the population, the
expected score of a new task. The variance it assumes for one attempt, ``m (1 - m)``, is the
largest any score in [0, 1] with mean ``m`` can have: 0/1 outcomes have it (on them the model
is ``logit_normal``), graded ones less. So each cluster's likelihood is divided by its
dispersion, the scores' variance over that bound (the quasi-likelihood of Wedderburn 1974),
estimated from the scores themselves (:func:`score_dispersion`: ``E[y (1 - y)] = m (1 - m) -
var(y)``) at an upper bound, held to at least :data:`MIN_DISPERSION`; the sampler reads it as
extra attempts (:func:`weighted_scores`). ``models/fractional.md`` measures the intervals.

The counts enter on a grid of 0.1 (:data:`~bayeval.models.kernels.tables.COUNT_GRID`), where
the cells of one value share their inner integrals: each cell's sum of scores moves to one of
its two neighbours on the grid at random, with the chance that keeps its expectation (so the
estimating equation stays unbiased, and the variance a score adds is at most 0.0025, a hundredth
of a coin's at 0.5); the fitted tree's ``successes`` hold those gridded sums, and its
``sampled_successes`` and ``sampled_trials`` the weighted cells the sampler read.
Every readout reads those as the binary model reads its counts: the compiled collapsed form's
integrals (the task and task-by-system effects integrated out), and the exact draws of the
tasks estimand. The sampler takes the binary model's form where it can: from 12 systems with
at most two attempts a cell, the task-latent form (task effects sampled, each cell's
task-by-system effect integrated from a table per count on the grid), the same posterior as the
collapsed form's at a fraction of its cost; with more attempts a cell, the collapsed form.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from bayeval.data import EvalData
from bayeval.models.kernels.tables import COUNT_GRID
from bayeval.models.logit_normal import LogitNormalRates
from bayeval.models.logit_normal.layout import sampling_form

__all__ = ["FractionalScores", "gridded_scores", "score_dispersion", "weighted_scores"]

#: The least dispersion :func:`score_dispersion` takes (so a cell's likelihood counts at most
#: twice): one-attempt cells then hold one or two attempts, which the task-latent form's tables
#: take, and a small cluster's noisy estimate cannot narrow its intervals more than that.
MIN_DISPERSION = 0.5


def gridded_scores(data, seed: int = 0) -> EvalData:
    """``data`` with each cell's ``successes`` replaced by its sum of scores on the count grid.

    The sum under the data's missing-outcome policy (:meth:`EvalData.score_statistics`), moved
    to one of its two neighbours on the grid of ``1 / COUNT_GRID`` at random, with the chance
    that keeps its expectation (unbiased stochastic rounding, from ``seed``): a sum on the grid
    stays, so 0/1 outcomes come back with the same counts. The score statistics stay beside
    it.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayeval as be
    >>> from bayeval.models.fractional import gridded_scores
    >>> df = pd.DataFrame({"system": ["A", "A", "B", "B"], "task": ["t1", "t2"] * 2,
    ...                    "score": [0.25, 1.0, 0.5, 0.0]})
    >>> counts = gridded_scores(be.from_frame(df, score="score")).dataset["successes"]
    >>> [round(value, 1) for value in counts.values.ravel().tolist()][1:]
    [1.0, 0.5, 0.0]
    >>> counts.values[0, 0] in (0.2, 0.3)
    True
    """
    ds = data.dataset
    total = data.score_statistics()["sum"].transpose(*ds["successes"].dims).values
    scaled = np.asarray(total, dtype=float) * COUNT_GRID
    below = np.floor(scaled)
    rest = scaled - below
    rng = np.random.default_rng([int(seed), COUNT_GRID])
    up = rng.random(scaled.shape) < rest
    gridded = (below + up) / COUNT_GRID
    out = ds.copy()
    out["successes"] = xr.DataArray(gridded, dims=ds["successes"].dims)
    return EvalData(out)


def score_dispersion(data) -> xr.Dataset:
    """Each cluster's dispersion: the scores' variance over its largest, ``m (1 - m)``.

    For a score ``y`` in [0, 1] of mean ``m``, ``E[y (1 - y)] = m (1 - m) - var(y)``: a
    score's own ``y (1 - y)`` measures how far its variance lies below the bound the
    fractional-binomial likelihood assumes, so over a cluster's attempts

        dispersion = 1 - sum y (1 - y) / sum m (1 - m)

    is 1 for 0/1 outcomes and below 1 where scores are interior. The cells' means ``m`` are
    not known; by Jensen's inequality ``sum m (1 - m)`` over one system's ``N`` attempts in a
    cluster is at most ``N mbar (1 - mbar)``, estimated by ``N**2 / (N - 1) ybar (1 - ybar)``
    (unbiased where the scores have the bound's variance). So the estimate is an upper bound
    on the dispersion, up to its noise: wide rather than narrow. Systems with one attempt in
    a cluster do not enter it; a cluster without an estimate takes 1. It is then held to
    [:data:`MIN_DISPERSION`, 1]. The tasks form one group where they have no clusters.

    Returns a Dataset over ``group`` (the clusters, or ``"all tasks"``): ``dispersion`` and
    ``weight`` (``1 / dispersion``, what each attempt's likelihood counts).

    Examples
    --------
    >>> import pandas as pd
    >>> import bayeval as be
    >>> from bayeval.models.fractional import score_dispersion
    >>> df = pd.DataFrame({"system": "A", "task": [f"t{j}" for j in range(8)],
    ...                    "cluster": ["graded"] * 4 + ["binary"] * 4,
    ...                    "score": [0.4, 0.6, 0.5, 0.5, 1, 0, 1, 0]})
    >>> out = score_dispersion(be.from_frame(df, score="score", cluster="cluster"))
    >>> out["dispersion"].to_series().round(3).to_dict()
    {'binary': 1.0, 'graded': 0.5}
    """
    labels, _, dispersion = _dispersion(data.dataset, data.score_statistics())
    return xr.Dataset(
        {"dispersion": ("group", dispersion), "weight": ("group", 1.0 / dispersion)},
        coords={"group": labels.tolist()},
    )


def _dispersion(ds: xr.Dataset, stats: xr.Dataset):
    """:func:`score_dispersion`'s groups, each task's group and each group's dispersion."""
    if "missing_bound" in stats.dims:  # the unknown outcomes at 0: no spread of their own
        stats = stats.sel(missing_bound="lower", drop=True)
    stats = stats.transpose("system", "task")
    total = np.asarray(stats["sum"].values, dtype=float)
    spread = total - np.asarray(stats["sumsq"].values, dtype=float)  # sum of y (1 - y)
    n = np.asarray(stats["trials"].values, dtype=float)
    if "cluster" in ds.coords:
        labels, group = np.unique(ds["cluster"].values.astype(str), return_inverse=True)
    else:
        labels, group = np.array(["all tasks"]), np.zeros(ds.sizes["task"], dtype=int)
    dispersion = np.ones(len(labels))
    for g in range(len(labels)):
        cols = group == g
        count = n[:, cols].sum(axis=1)
        used = count >= 2  # a system's bound needs two attempts in the cluster
        mean = total[:, cols].sum(axis=1)[used] / count[used]
        bound = float((count[used] ** 2 / (count[used] - 1) * mean * (1 - mean)).sum())
        if bound > 0:
            dispersion[g] = 1.0 - float(spread[used][:, cols].sum()) / bound
    return labels, group, np.clip(dispersion, MIN_DISPERSION, 1.0)


def weighted_scores(data, seed: int = 0) -> EvalData:
    """:func:`gridded_scores`'s data with each cell's likelihood counted ``weight`` times.

    The quasi-likelihood of scores with dispersion ``phi`` (Wedderburn 1974; McCullagh and
    Nelder, *Generalized Linear Models*, section 9.2) is the fractional-binomial one divided
    by ``phi``: the binomial likelihood of ``w c`` successes in ``w n`` attempts, ``w = 1 /
    phi`` (:func:`score_dispersion`, per cluster). Each cell's ``n w`` moves to a whole
    number of attempts, one of its two neighbours at random with the chance that keeps its
    expectation, and its sum of scores scales with it (then to the count grid, at random
    without bias, as in :func:`gridded_scores`): the expected log-likelihood is the
    quasi-likelihood's. Cells whose attempts do not change keep their gridded sums, so 0/1
    outcomes (dispersion 1) come back unchanged. ``data`` is :func:`gridded_scores`'s.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayeval as be
    >>> from bayeval.models.fractional import gridded_scores, weighted_scores
    >>> df = pd.DataFrame({"system": "A", "task": [f"t{j}" for j in range(6)],
    ...                    "score": [0.5, 0.5, 0.5, 0.5, 0.0, 1.0]})
    >>> ds = weighted_scores(gridded_scores(be.from_frame(df, score="score"))).dataset
    >>> ds["trials"].values.tolist(), ds["successes"].values.tolist()
    ([[2, 2, 2, 2, 2, 2]], [[1.0, 1.0, 1.0, 1.0, 0.0, 2.0]])
    """
    ds = data.dataset
    stats = data.score_statistics()
    labels, group, dispersion = _dispersion(ds, stats)
    weight = 1.0 / dispersion[group]  # each task's
    n = ds["trials"].transpose("system", "task").values
    rng = np.random.default_rng([int(seed), COUNT_GRID, 2])
    target = n * weight[None, :]
    below = np.floor(target)
    moved = (below + (rng.random(n.shape) < target - below)).astype(n.dtype)
    total = stats["sum"].transpose(*ds["successes"].dims).values
    share = np.divide(moved, n, out=np.zeros(n.shape), where=n > 0)
    scaled = np.asarray(total, dtype=float) * share * COUNT_GRID  # share broadcasts by bound
    low = np.floor(scaled)
    gridded = (low + (rng.random(scaled.shape) < scaled - low)) / COUNT_GRID
    keep = np.broadcast_to(moved == n, gridded.shape)
    out = ds.copy()
    out["successes"] = xr.DataArray(
        np.where(keep, ds["successes"].values, gridded), dims=ds["successes"].dims
    )
    out["trials"] = xr.DataArray(moved, dims=("system", "task"))
    out.attrs["dispersion"] = json.dumps(
        {
            str(g): {"dispersion": round(float(d), 4), "weight": round(1.0 / float(d), 4)}
            for g, d in zip(labels, dispersion, strict=True)
        }
    )
    return EvalData(out)


class FractionalScores(LogitNormalRates):
    """The ``logit_normal`` model with the fractional-binomial likelihood of scores in [0, 1].

    Its estimands are the mean score's (``metric="mean"``; ``"pass@k"`` at k = 1 reads the
    same). The data are taken through :func:`gridded_scores` before the fit.
    """

    name = "fractional"
    metrics = ("mean", "pass@k")
    scores = True  # the mean of scores in [0, 1]

    def supports(self, data) -> str | None:
        """Scores in [0, 1] and 0/1 outcomes alike."""
        return None

    def model_data(self, data, *, seed: int = 0):
        """:func:`gridded_scores`: each cell's sum of scores, as its fractional count."""
        return gridded_scores(data, seed)

    def sampled_data(self, data, *, seed: int = 0):
        """:func:`weighted_scores`: each graded cell's likelihood over its dispersion."""
        return weighted_scores(data, seed)

    def stored_data(self, data, sampled) -> xr.Dataset:
        """``data``'s dataset (the attempts run), with the sampled counts beside it.

        ``sampled_successes`` and ``sampled_trials`` (:func:`weighted_scores`), which
        :meth:`fitted_data` reads back, and the ``dispersion`` attribute.
        """
        ds = data.dataset.copy()
        ds["sampled_successes"] = sampled.dataset["successes"]
        ds["sampled_trials"] = sampled.dataset["trials"]
        ds.attrs["dispersion"] = sampled.dataset.attrs["dispersion"]
        return ds

    def fitted_data(self, tree) -> xr.Dataset:
        """The tree's data with the sampled counts in place of the successes and trials."""
        ds = super().fitted_data(tree)
        if "sampled_trials" not in ds.data_vars:  # a tree without weighted cells
            return ds
        return ds.assign(successes=ds["sampled_successes"], trials=ds["sampled_trials"]).drop_vars(
            ["sampled_successes", "sampled_trials"]
        )

    def sampling_form(self, data, sampler: str = "auto") -> tuple[str, str]:
        """The binary model's choice, except the full-latent form.

        The collapsed form's integrals and the task-latent form's tables take fractional
        counts on the grid; the full-latent form's tables of integrated cells (several
        attempts a cell) are built for whole counts, so those data take the collapsed form.
        """
        if self.engine(sampler) == "numpyro":
            raise ValueError(
                "model='fractional' samples its compiled collapsed form (sampler='auto' or "
                "'nutpie'); sampler='numpyro' runs only models of 0/1 outcomes"
            )
        form, why = sampling_form(data.dataset)
        if form in ("collapsed", "task-latent"):
            return form, why
        return "collapsed", (
            "the collapsed form, whose integrals take the fractional counts of partial-credit "
            f"scores exactly (for 0/1 outcomes: {why.split(': ')[0]})"
        )

    def single_trial_warning(self, data) -> str:
        """Several systems: what is identified only through the other systems."""
        if len(data.systems) < 2:
            return super().single_trial_warning(data)
        return (
            "with one attempt per task a system's own task-to-task spread is identified only "
            "through the other systems: the task-by-system spread leans on its prior "
            "(attrs['prior_note']); the scores' variance is taken per cluster at an upper "
            "bound estimated from the scores (attrs['dispersion']), so the mean score's "
            "intervals over these tasks lean wide where scores are interior "
            "(models/fractional.md)"
        )

    def tasks(self, tree, metric, ks, shared=None, tau=None, systems=None):
        """The mean score over these tasks (``logit_normal``'s pass@1 of the fractional counts)."""
        return super().tasks(tree, _binary(metric), ks, shared=shared, tau=tau, systems=systems)

    def population(
        self, tree, metric, ks, clusters="new", weighting="task", tau=None, systems=None
    ):
        """The mean score of a new task (``logit_normal``'s pass@1 at the fitted spreads)."""
        return super().population(
            tree,
            _binary(metric),
            ks,
            clusters=clusters,
            weighting=weighting,
            tau=tau,
            systems=systems,
        )

    def predictive(self, tree, max_draws: int = 1000) -> xr.Dataset:
        """No posterior predictive check of scores (an empty dataset).

        The likelihood fixes each attempt's mean and an upper bound on its variance, not the
        scores' distribution, so there is no replicated score to compare.
        """
        return xr.Dataset()


def _binary(metric: str) -> str:
    """The binary metric the logit-normal readouts compute for ``metric``."""
    return "pass@k" if metric == "mean" else metric
