r"""Hierarchical Beta-binomial: tasks drawn from a Beta population, one population per system.

Model (system s, task j, stratum h(j); c successes of n valid trials)::

    mu[s, h]        ~ Beta(a_mu, b_mu)                 population mean rate     (default 1, 1)
    log kappa[s, h] ~ Normal(m_kappa, s_kappa)         population concentration (default 1, 1.5)
    p[s, j]         ~ Beta(mu kappa, (1 - mu) kappa)   task rates, with h = h(j)
    c[s, j]         ~ Binomial(n[s, j], p[s, j])

Without declared strata there is one population per system. The task rates are integrated out:
``c ~ BetaBinomial(n, mu kappa, (1 - mu) kappa)``, so the sampler sees only ``(mu, kappa)`` per
population, and tasks with the same ``(n, c)`` contribute one term times their multiplicity.
Task rates are recovered per draw from their exact conditional ``Beta(alpha + c, beta + n - c)``.

Priors. ``mu`` is uniform. ``log kappa ~ Normal(1, 1.5)`` puts its median at kappa = 2.7 and its
central 95% on (0.14, 51): it gives real mass to kappa < 1, the U-shaped task populations of
real evaluations (most tasks almost always or almost never solved; Beta(0.4, 0.3) has
kappa = 0.7), and to the concentrated populations of easy, homogeneous task sets (Beta(20, 5),
kappa = 25). A prior that forces kappa above 1, as some textbook examples do, makes population
intervals undercover on U-shaped data. The calibration study in ``benchmarks/calibration.py`` and
the model card ``models/hierarchical.md`` measure coverage under this and other priors.

Estimands. ``population``: E[f(p)] for a new task, ``1 - B(a, b + k) / B(a, b)`` (pass@k) or
``B(a + k, b) / B(a, b)`` (pass^k) per draw, weighted over strata. ``tasks``: the mean of f(p_j)
over these tasks, with every p_j drawn from its conditional posterior per draw.

With one trial per task the concentration is not identified: pass@1 of the population is, but
pass@k and pass^k for k > 1, and the tasks estimand, then lean on the prior.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

from bayeval._validate import merge_priors
from bayeval.grid import adaptive_grid
from bayeval.models._beta_family import BetaRates, Populations, counts_by_bound, patterns

__all__ = ["build_hierarchical_model", "DEFAULT_PRIORS"]

DEFAULT_PRIORS = {"mu": (1.0, 1.0), "log_kappa": (1.0, 1.5)}


def validate_priors(priors) -> dict:
    """Fill defaults and check ``{"mu": (a, b), "log_kappa": (mean, sd)}``."""
    merged = merge_priors(priors, DEFAULT_PRIORS, "hierarchical")
    for name, (first, second) in merged.items():
        if not (np.isfinite(first) and np.isfinite(second) and second > 0):
            raise ValueError(f"prior {name} needs finite parameters with a positive second one; "
                             f"got {merged[name]}")
        if name == "mu" and first <= 0:
            raise ValueError(f"prior mu needs Beta parameters > 0; got {merged[name]}")
    return {k: (float(a), float(b)) for k, (a, b) in merged.items()}


def _dims(pops: Populations):
    return ("system", "stratum") if pops.strata is not None else ("system",)


def build_hierarchical_model(data, priors=None, marginal: bool = True, missing_bound=None,
                             compress: bool = False) -> pm.Model:
    """Build the hierarchical Beta-binomial model as a PyMC model.

    Parameters
    ----------
    data : EvalData
    priors : dict, optional
        ``{"mu": (a, b), "log_kappa": (mean, sd)}``; defaults in :data:`DEFAULT_PRIORS`.
    marginal : bool, default True
        Integrate the task rates out (Beta-binomial likelihood). ``False`` builds the
        full-latent form with a ``p`` per (system, task), used to verify the marginal one.
    missing_bound : {"lower", "upper"}, optional
        Which extreme to model when the data use ``missing="bounds"``.
    compress : bool, default False
        With ``marginal``, one likelihood term per distinct ``(n, c)`` pattern times its
        multiplicity (a ``pm.Potential``): the form the samplers use.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models import build_hierarchical_model
    >>> model = build_hierarchical_model(be.from_counts([[3, 10, 0]], trials=10))
    >>> sorted(v.name for v in model.free_RVs)
    ['log_kappa', 'mu']
    """
    priors = validate_priors(priors)
    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    if bounds is not None:
        if missing_bound not in bounds:
            raise ValueError(f"data use missing='bounds': choose missing_bound= in {bounds}")
        c, n = c[bounds.index(missing_bound)], n[bounds.index(missing_bound)]
    else:
        c, n = c[0], n[0]
    pops = Populations.from_dataset(ds)
    dims = _dims(pops)
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    if pops.strata is not None:
        coords["stratum"] = pops.strata
    with pm.Model(coords=coords) as model:
        mu = pm.Beta("mu", *priors["mu"], dims=dims)
        log_kappa = pm.Normal("log_kappa", *priors["log_kappa"], dims=dims)
        kappa = pm.Deterministic("kappa", pt.exp(log_kappa), dims=dims)
        alpha = (mu * kappa).reshape((len(coords["system"]), pops.n))
        beta = ((1 - mu) * kappa).reshape((len(coords["system"]), pops.n))
        if marginal and compress:
            pop_index, pat_n, pat_c, pat_m = _pattern_arrays(c, n, pops)
            dist = pm.BetaBinomial.dist(n=pat_n, alpha=alpha.ravel()[pop_index],
                                        beta=beta.ravel()[pop_index])
            pm.Potential("loglik", (pat_m * pm.logp(dist, pat_c)).sum())
        elif marginal:
            pm.BetaBinomial("y", n=n, alpha=alpha[:, pops.code], beta=beta[:, pops.code],
                            observed=c, dims=("system", "task"))
        else:
            p = pm.Beta("p", alpha=alpha[:, pops.code], beta=beta[:, pops.code],
                        dims=("system", "task"))
            pm.Binomial("y", n=n, p=p, observed=c, dims=("system", "task"))
    return model


def _pattern_arrays(c, n, pops: Populations):
    """Distinct (population, n, c) patterns and multiplicities over all systems."""
    rows = []
    for s in range(c.shape[0]):
        for h in range(pops.n):
            members = pops.code == h
            pn, pc, pm_ = patterns(c[s, members], n[s, members])
            rows.append(np.stack([np.full(len(pn), s * pops.n + h), pn, pc, pm_], 1))
    table = np.concatenate(rows).astype(np.int64)
    return table[:, 0], table[:, 1], table[:, 2], table[:, 3].astype(float)


def _log_density(priors, pn, pc, pm_):
    """Log posterior of (logit mu, log kappa) for one population, vectorised over a grid."""
    a_mu, b_mu = priors["mu"]
    m_k, s_k = priors["log_kappa"]

    def logdensity(x, y):
        log_mu, log_1m = special.log_expit(x), special.log_expit(-x)
        kappa = np.exp(y)
        a = np.exp(log_mu) * kappa
        b = np.exp(log_1m) * kappa
        lp = a_mu * log_mu + b_mu * log_1m + stats.norm.logpdf(y, m_k, s_k)  # incl. Jacobian
        lik = (special.betaln(pc[None] + a[:, None], (pn - pc)[None] + b[:, None])
               - special.betaln(a, b)[:, None])
        return lp + lik @ pm_

    return logdensity


def fit_grid(data, priors, draws, chains, seed, n_grid=200):
    """Grid posterior per population; returns ``mu``, ``kappa`` of shape
    ``(chain, draw, bound, system, population)`` and the grid posteriors."""
    priors = validate_priors(priors)
    ds = data.dataset
    c, n, _ = counts_by_bound(ds)
    pops = Populations.from_dataset(ds)
    m_k, s_k = priors["log_kappa"]
    box = ((-20.0, 20.0), (m_k - 8 * s_k, m_k + 8 * s_k))
    shape = (chains, draws) + c.shape[:2] + (pops.n,)
    mu, kappa = np.empty(shape), np.empty(shape)
    grids = {}
    for b in range(c.shape[0]):
        for s in range(c.shape[1]):
            for h in range(pops.n):
                members = pops.code == h
                pn, pc, pm_ = patterns(c[b, s, members], n[b, s, members])
                grid = adaptive_grid(_log_density(priors, pn, pc, pm_.astype(float)), box,
                                     n_grid=n_grid)
                rng = np.random.default_rng([seed, 0, b, s, h])
                x, y = grid.sample(chains * draws, rng)
                mu[:, :, b, s, h] = special.expit(x).reshape(chains, draws)
                kappa[:, :, b, s, h] = np.exp(y).reshape(chains, draws)
                grids[(b, s, h)] = grid
    return mu, kappa, grids


class HierarchicalRates(BetaRates):
    """Estimands of a fitted hierarchical model (parameters from the posterior)."""

    name = "hierarchical"
    estimands = ("tasks", "population")

    def params(self, tree):
        post = tree["posterior"]
        mu, kappa = post["mu"], post["kappa"]
        order = ["chain", "draw", "missing_bound", "system", "stratum"]
        arrays = []
        for da in (mu, kappa):
            for dim in ("missing_bound", "stratum"):
                if dim not in da.dims:
                    da = da.expand_dims(dim)
            arrays.append(da.transpose(*order).values)
        mu, kappa = arrays
        return mu * kappa, (1 - mu) * kappa
