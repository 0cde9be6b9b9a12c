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
import xarray as xr
from scipy import special

from bayeval._validate import merge_priors
from bayeval.data.groups import cell_data, dataset_of
from bayeval.models import base
from bayeval.models._beta_family import BetaRates, Populations, counts_by_bound
from bayeval.models.base import sampled

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
    """The conjugate model: exact draws of the task rates, no sampler.

    Its population parameters are the prior's.
    """

    name = "beta_binomial"
    estimands = ("tasks",)
    engines = {"auto": "conjugate", "conjugate": "conjugate"}
    task_rates_group = "posterior"  # the task rates are the model's parameters

    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def build(self, data, priors=None, **options) -> pm.Model:
        """:func:`build_beta_binomial_model` (never sampled: the posterior is conjugate)."""
        return build_beta_binomial_model(data, priors, **options)

    def single_trial_warning(self, data) -> str:
        """The task rates lean on the prior."""
        return (
            "with one trial per task the beta_binomial task rates lean on the prior "
            "(Beta(1, 1) pulls a system solving 74% of tasks to about 58%); fit "
            "model='hierarchical', which learns the task population from the data"
        )

    def sample(
        self,
        data,
        *,
        sampler="auto",
        draws=1000,
        chains=4,
        tune=None,
        seed=0,
        priors=None,
        progress=False,
    ) -> xr.DataTree:
        """No sampler: the posterior holds only ``(chain, draw)``.

        The task rates are drawn exactly by :meth:`task_rate_draws`.
        """
        self.engine(sampler)
        priors = validate_priors(priors)
        posterior = xr.Dataset(coords={"chain": np.arange(chains), "draw": np.arange(draws)})
        return sampled({"posterior": posterior}, {"tune": tune, "prior_p": list(priors["p"])})

    def task_rate_draws(self, data, *, priors, seed, posterior, task_effects=None):
        """Exact posterior draws of every task rate (:func:`conjugate_task_rates`)."""
        ds = data.dataset
        _, _, bounds = counts_by_bound(ds)
        p = conjugate_task_rates(
            data, priors, posterior.sizes["draw"], posterior.sizes["chain"], seed
        )
        da = xr.DataArray(
            p,
            dims=("chain", "draw", "missing_bound", "system", "task"),
            coords={
                "chain": posterior["chain"].values,
                "draw": posterior["draw"].values,
                "system": ds["system"].values,
                "task": ds["task"].values,
            },
        )
        da = da.transpose("chain", "draw", "system", "task", "missing_bound")
        return (
            da.isel(missing_bound=0, drop=True)
            if bounds is None
            else da.assign_coords(missing_bound=bounds)
        )

    def _rates(self, tree) -> np.ndarray:
        """The task rates' posterior draws, ``(draw, system, task)`` (draws flattened)."""
        p = self.task_rates(tree).transpose("chain", "draw", "system", "task").values
        return p.reshape((-1,) + p.shape[2:])

    def replicate_rates(self, tree) -> base.Rates:
        """The task rates' own draws: the parameters the log-likelihood is conditioned on.

        Read a block of tasks at a time (no draw is random here).
        """
        p = self.task_rates(tree).transpose("chain", "draw", "system", "task")

        def rates(rngs, tasks):
            block = p.isel(task=np.asarray(tasks)).values
            return block.reshape((-1,) + block.shape[2:])

        return rates

    def pattern_log_likelihood(self, tree, c, n) -> base.Patterns:
        """Each task's binomial log-pmf given its rates' draws, summed over its systems.

        The rates are the task's own parameters, so each task is its own pattern; values
        ``(draw, task)`` without the binomial coefficients.
        """
        p = self._rates(tree)
        value = special.xlogy(c, p) + special.xlog1py(n - c, -p)
        total = np.where(n > 0, value, 0.0).sum(axis=1)
        every = np.arange(c.shape[1])
        return base.Patterns(total, every, every)

    def params(self, tree):
        a, b = (float(x) for x in tree.attrs["prior_p"])
        post = tree["posterior"]
        obs = cell_data(tree)
        n_bound = obs.sizes.get("missing_bound", 1)
        n_pop = Populations.from_dataset(dataset_of(tree)).n
        shape = (post.sizes["chain"], post.sizes["draw"], n_bound, obs.sizes["system"], n_pop)
        return np.full(shape, a), np.full(shape, b)
