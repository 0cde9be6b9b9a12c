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
is ``logit_normal``), graded ones less, so its intervals lean wide where many scores are
interior; ``models/fractional.md`` measures by how much.

The counts enter on a grid of 0.1 (:data:`~bayeval.models.kernels.tables.COUNT_GRID`), where
the cells of one value share their inner integrals: each cell's sum of scores moves to one of
its two neighbours on the grid at random, with the chance that keeps its expectation (so the
estimating equation stays unbiased, and the variance a score adds is at most 0.0025, a hundredth
of a coin's at 0.5); the fitted tree's ``successes`` hold those gridded sums.
Every readout reads them as the binary model reads its counts: the compiled collapsed form's
integrals (the task and task-by-system effects integrated out), and the exact draws of the
tasks estimand. The sampler takes the binary model's form where it can: from 12 systems with
at most two attempts a cell, the task-latent form (task effects sampled, each cell's
task-by-system effect integrated from a table per count on the grid), the same posterior as the
collapsed form's at a fraction of its cost; with more attempts a cell, the collapsed form.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from bayeval.data import EvalData
from bayeval.models.kernels.tables import COUNT_GRID
from bayeval.models.logit_normal import LogitNormalRates
from bayeval.models.logit_normal.layout import sampling_form

__all__ = ["FractionalScores", "gridded_scores"]


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
            "(attrs['prior_note']); the mean score's intervals over these tasks assume the "
            "largest variance a score in [0, 1] can have, so they lean wide where many scores "
            "are interior (models/fractional.md)"
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
