r"""Independent tasks with a conjugate Beta prior: the ``beta_binomial`` model.

Model (system s, task j)::

    p[s, j] ~ Beta(a, b)                 independent task rates (default a = b = 1, uniform)
    c[s, j] ~ Binomial(n[s, j], p[s, j])

The posterior is conjugate, ``p[s, j] | data ~ Beta(a + c, b + n - c)``, so draws are exact and
no sampler runs. The tasks share nothing, so the model answers only ``estimand="tasks"`` (the
mean over these tasks): a new task's rate would be the prior.

With one trial per task the task rates lean on the prior: a task solved once has posterior
mean 2/3 under Beta(1, 1), one failed 1/3, so a system solving 74% of single-attempt tasks is
reported near 58%. Use the hierarchical model there, which learns the population from the data.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from bayeval._validate import merge_priors
from bayeval.models._beta_family import BetaRates, Populations, counts_by_bound

__all__ = ["build_beta_binomial_model", "DEFAULT_PRIORS"]

DEFAULT_PRIORS = {"p": (1.0, 1.0)}


def validate_priors(priors) -> dict:
    """Fill defaults and check ``{"p": (a, b)}`` with a, b > 0."""
    merged = merge_priors(priors, DEFAULT_PRIORS, "beta_binomial")
    a, b = merged["p"]
    if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):
        raise ValueError(f"prior p needs Beta parameters > 0; got {merged['p']}")
    return {"p": (float(a), float(b))}


def build_beta_binomial_model(data, priors=None, missing_bound=None) -> pm.Model:
    """Build the independent-tasks Beta-binomial model as a PyMC model.

    The fit never samples it (the posterior is conjugate); it documents the model and serves
    prior/posterior predictive checks with PyMC's tools.

    Parameters
    ----------
    data : EvalData
    priors : dict, optional
        ``{"p": (a, b)}``, default ``(1, 1)``.
    missing_bound : {"lower", "upper"}, optional
        Which extreme to model when the data use ``missing="bounds"``.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models import build_beta_binomial_model
    >>> model = build_beta_binomial_model(be.from_counts([[3, 10, 0]], trials=10))
    >>> [v.name for v in model.free_RVs]
    ['p']
    """
    a, b = validate_priors(priors)["p"]
    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    index = 0
    if bounds is not None:
        if missing_bound not in bounds:
            raise ValueError(f"data use missing='bounds': choose missing_bound= in {bounds}")
        index = bounds.index(missing_bound)
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    with pm.Model(coords=coords) as model:
        p = pm.Beta("p", a, b, dims=("system", "task"))
        pm.Binomial("y", n=n[index], p=p, observed=c[index], dims=("system", "task"))
    return model


def conjugate_task_rates(data, priors, draws, chains, seed) -> np.ndarray:
    """Exact posterior draws of every task rate: ``(chain, draw, bound, system, task)``."""
    a, b = validate_priors(priors)["p"]
    c, n, _ = counts_by_bound(data.dataset)
    rng = np.random.default_rng([seed, 2])
    p = rng.beta(a + c, b + n - c, size=(chains, draws) + c.shape)
    return np.where(n > 0, p, np.nan)


class BetaBinomialRates(BetaRates):
    """Estimands of the conjugate model: the population parameters are the prior's."""

    name = "beta_binomial"
    estimands = ("tasks",)

    def params(self, tree):
        a, b = (float(x) for x in tree.attrs["prior_p"])
        post = tree["posterior"]
        obs = tree["observed_data"]
        n_bound = obs.sizes.get("missing_bound", 1)
        n_pop = Populations.from_dataset(obs.to_dataset()).n
        shape = (post.sizes["chain"], post.sizes["draw"], n_bound, obs.sizes["system"], n_pop)
        return np.full(shape, a), np.full(shape, b)
