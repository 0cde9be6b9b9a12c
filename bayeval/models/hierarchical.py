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

With few tasks kappa is barely identified and this prior's pull towards kappa = 2.7 makes the
population interval of U-shaped task sets too narrow: ``benchmarks/small_n.py`` measures the
shortfall with 3 to 10 U-shaped tasks (``models/hierarchical.md``, "Small task counts"). A wider
prior covers those but costs coverage of the ``tasks`` estimand where trials are few, so the
default depends on the data (:meth:`HierarchicalRates.data_priors`): at most :data:`FEW_TASKS`
tasks per population with a median of at least :data:`FEW_TASKS_PRIOR_TRIALS` trials get
:data:`FEW_TASKS_LOG_KAPPA`, and the fit's ``attrs["prior_note"]`` says so. Under the fixed
prior the fit warns (:func:`warn_few_tasks`) for the pattern where the shortfall concentrates
(at most :data:`FEW_TASKS` tasks in a population, more than half of them solved on all or none
of at least :data:`FEW_TASKS_MIN_TRIALS` trials).

``priors={"log_kappa": "bda3"}`` instead uses the noninformative prior of Gelman et al.,
*Bayesian Data Analysis* (3rd ed., section 5.3), ``p(alpha, beta) ∝ (alpha + beta)^(-5/2)``.
With ``alpha = mu kappa``, ``beta = (1 - mu) kappa`` the Jacobian ``|d(alpha, beta) / d(mu,
kappa)|`` is ``kappa``, so ``p(mu, kappa) ∝ kappa^(-3/2)``: uniform ``mu`` (the default
``Beta(1, 1)``) times ``p(kappa) ∝ kappa^(-3/2)``; on the sampled scale ``(logit mu, log kappa)``
the density is ``mu (1 - mu) kappa^(-1/2)`` (BDA3's ``alpha beta (alpha + beta)^(-5/2)``). It is
improper as ``kappa -> 0``, and so is the posterior when every task is solved on all or none of
its trials (always with one trial per task); ``log kappa`` is therefore confined to
:data:`BDA3_LOG_KAPPA_RANGE`, where such a posterior piles up at the lower end (task rates of
exactly 0 or 1).

Estimands. ``population``: E[f(p)] for a new task, ``1 - B(a, b + k) / B(a, b)`` (pass@k) or
``B(a + k, b) / B(a, b)`` (pass^k) per draw, weighted over strata. ``tasks``: the mean of f(p_j)
over these tasks, with every p_j drawn from its conditional posterior per draw.

With one trial per task the concentration is not identified: pass@1 of the population is, but
pass@k and pass^k for k > 1, and the tasks estimand, then lean on the prior.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special, stats

from bayeval._validate import BayevalWarning, merge_priors
from bayeval.grid import adaptive_grid
from bayeval.models import base
from bayeval.models._beta_family import (
    BetaRates,
    Populations,
    counts_by_bound,
    patterns,
    stratum_dims,
)

__all__ = [
    "build_hierarchical_model",
    "DEFAULT_PRIORS",
    "BDA3_LOG_KAPPA_RANGE",
    "log_prior",
    "warn_few_tasks",
]

DEFAULT_PRIORS = {"mu": (1.0, 1.0), "log_kappa": (1.0, 1.5)}

#: The concentration prior with few tasks and several trials each (:meth:`data_priors`):
#: with at most :data:`FEW_TASKS` tasks in a population and a median of at least
#: :data:`FEW_TASKS_PRIOR_TRIALS` trials per task, the default pull towards kappa = 2.7 made
#: U-shaped population intervals cover 0.915 (5 tasks x 32 trials, 800 simulations), this one
#: 0.950; with one trial per task it costs coverage of the tasks estimand, so it is not used
#: there (``benchmarks/results/small_n.md``).
FEW_TASKS_LOG_KAPPA = (0.0, 3.0)

#: Median trials per task from which few tasks get :data:`FEW_TASKS_LOG_KAPPA`.
FEW_TASKS_PRIOR_TRIALS = 2

#: A population with at most this many tasks, most of them solved always or never, makes
#: :func:`warn_few_tasks` warn: its population interval undercovers (``benchmarks/small_n.py``).
FEW_TASKS = 10

#: Trials a task needs to count towards that warning's "solved always or never" share.
FEW_TASKS_MIN_TRIALS = 5

#: Named concentration priors accepted as ``priors={"log_kappa": name}``.
NAMED_KAPPA_PRIORS = ("bda3",)

#: Support of ``log kappa`` under the improper ``"bda3"`` prior: kappa from 4.5e-5 to 3.3e6.
BDA3_LOG_KAPPA_RANGE = (-10.0, 15.0)


def validate_priors(priors) -> dict:
    """Fill defaults and check ``{"mu": (a, b), "log_kappa": (mean, sd) or "bda3"}``."""
    merged = merge_priors(priors, DEFAULT_PRIORS, "hierarchical")
    out: dict[str, tuple[float, float] | str] = {}
    for name, value in merged.items():
        if name == "log_kappa" and isinstance(value, str):
            if value not in NAMED_KAPPA_PRIORS:
                raise ValueError(
                    f"prior log_kappa must be (mean, sd) or one of "
                    f"{list(NAMED_KAPPA_PRIORS)}; got {value!r}"
                )
            out[name] = value
            continue
        first, second = value
        if not (np.isfinite(first) and np.isfinite(second) and second > 0):
            raise ValueError(
                f"prior {name} needs finite parameters with a positive second one; "
                f"got {merged[name]}"
            )
        if name == "mu" and first <= 0:
            raise ValueError(f"prior mu needs Beta parameters > 0; got {merged[name]}")
        out[name] = (float(first), float(second))
    return out


def log_prior(priors):
    """Log prior density of ``(logit mu, log kappa)``, Jacobians included, up to a constant.

    Parameters
    ----------
    priors : dict
        Validated priors (:func:`validate_priors`).

    Returns
    -------
    callable
        ``log_prior(x, y)`` for arrays of ``x = logit mu`` and ``y = log kappa``; ``-inf``
        outside :data:`BDA3_LOG_KAPPA_RANGE` under the ``"bda3"`` prior.

    Examples
    --------
    >>> import numpy as np
    >>> from bayeval.models.hierarchical import log_prior, validate_priors
    >>> lp = log_prior(validate_priors({"log_kappa": "bda3"}))
    >>> float(np.round(lp(np.array([0.0]), np.array([2.0]))[0] - lp(np.array([0.0]),
    ...                                                               np.array([0.0]))[0], 6))
    -1.0
    """
    a_mu, b_mu = priors["mu"]
    kappa_prior = priors["log_kappa"]

    def logdensity(x, y):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        lp = a_mu * special.log_expit(x) + b_mu * special.log_expit(-x)  # Beta on mu, Jacobian
        if kappa_prior == "bda3":  # kappa^(-3/2) dkappa = kappa^(-1/2) dlog kappa
            lo, hi = BDA3_LOG_KAPPA_RANGE
            return lp + np.where((y >= lo) & (y <= hi), -0.5 * y, -np.inf)
        return lp + stats.norm.logpdf(y, *kappa_prior)

    return logdensity


def log_kappa_box(priors) -> tuple[float, float]:
    """The range of ``log kappa`` the grid engine searches."""
    if priors["log_kappa"] == "bda3":
        return BDA3_LOG_KAPPA_RANGE
    m_k, s_k = priors["log_kappa"]
    return (m_k - 8 * s_k, m_k + 8 * s_k)


def _dims(pops: Populations):
    return ("system", "stratum") if pops.strata is not None else ("system",)


def build_hierarchical_model(
    data, priors=None, marginal: bool = True, missing_bound=None, compress: bool = False
) -> pm.Model:
    """Build the hierarchical Beta-binomial model as a PyMC model.

    Parameters
    ----------
    data : EvalData
    priors : dict, optional
        ``{"mu": (a, b), "log_kappa": (mean, sd)}``; defaults in :data:`DEFAULT_PRIORS`.
        ``"log_kappa": "bda3"`` is ``p(kappa) ∝ kappa^(-3/2)`` on
        :data:`BDA3_LOG_KAPPA_RANGE` (module docstring).
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
        if priors["log_kappa"] == "bda3":
            log_kappa = pm.Uniform("log_kappa", *BDA3_LOG_KAPPA_RANGE, dims=dims)
            pm.Potential("log_kappa_bda3", -0.5 * log_kappa.sum())
        else:
            log_kappa = pm.Normal("log_kappa", *priors["log_kappa"], dims=dims)
        kappa = pm.Deterministic("kappa", pt.exp(log_kappa), dims=dims)
        alpha = (mu * kappa).reshape((len(coords["system"]), pops.n))
        beta = ((1 - mu) * kappa).reshape((len(coords["system"]), pops.n))
        if marginal and compress:
            pop_index, pat_n, pat_c, pat_m = _pattern_arrays(c, n, pops)
            dist = pm.BetaBinomial.dist(
                n=pat_n, alpha=alpha.ravel()[pop_index], beta=beta.ravel()[pop_index]
            )
            pm.Potential("loglik", (pat_m * pm.logp(dist, pat_c)).sum())
        elif marginal:
            pm.BetaBinomial(
                "y",
                n=n,
                alpha=alpha[:, pops.code],
                beta=beta[:, pops.code],
                observed=c,
                dims=("system", "task"),
            )
        else:
            p = pm.Beta(
                "p", alpha=alpha[:, pops.code], beta=beta[:, pops.code], dims=("system", "task")
            )
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
    prior = log_prior(priors)

    def logdensity(x, y):
        kappa = np.exp(y)
        a = special.expit(x) * kappa
        b = special.expit(-x) * kappa
        lp = prior(x, y)  # incl. Jacobian
        lik = (
            special.betaln(pc[None] + a[:, None], (pn - pc)[None] + b[:, None])
            - special.betaln(a, b)[:, None]
        )
        return lp + lik @ pm_

    return logdensity


def warn_few_tasks(data) -> None:
    """Warn when a population has few tasks and most of them look U-shaped.

    With few tasks the concentration kappa is barely identified and rests on its prior; the
    default prior, centred on kappa = 2.7, then makes the population interval too narrow for
    U-shaped task sets (kappa < 1). ``benchmarks/small_n.py`` measures it: with 3 to 10 tasks
    of 32 trials the shortfall concentrates in benchmarks where more than half of the tasks are
    solved on all or none of their trials (``models/hierarchical.md``, few-tasks warning), and with
    that many trials the pattern is rare unless the task set is U-shaped. So this warns for a
    population with at most :data:`FEW_TASKS` tasks of which more than half of those with at least
    :data:`FEW_TASKS_MIN_TRIALS` trials are at 0 or at all successes. With fewer trials (4 in the
    study) the pattern is common in every scenario (a third of the Beta(2, 5) benchmarks, which
    cover 0.98 or more), so it does not single out the undercovering ones and there is no warning;
    the card lists those cells. The tasks estimand is not affected, and with one trial per task the
    population pass@1 does not depend on kappa (``fit`` warns about that case). The numbers are for
    the default concentration prior.

    Parameters
    ----------
    data : EvalData

    Examples
    --------
    >>> import warnings
    >>> import bayeval as be
    >>> from bayeval.models.hierarchical import warn_few_tasks
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_few_tasks(be.from_counts([[32, 0, 30, 1, 32]], trials=32))
    >>> [type(w.message).__name__ for w in caught]
    ['BayevalWarning']
    """
    ds = data.dataset
    c, n, _ = counts_by_bound(ds)
    c, n = c[0], n[0]  # (system, task); the first bound under missing="bounds"
    pops = Populations.from_dataset(ds)
    few = []
    for s, system in enumerate(data.systems):
        for h in range(pops.n):
            members = (pops.code == h) & (n[s] > 0)
            several = members & (n[s] >= FEW_TASKS_MIN_TRIALS)
            if not (0 < members.sum() <= FEW_TASKS and several.any()):
                continue
            extreme = (c[s, several] == 0) | (c[s, several] == n[s, several])
            if extreme.mean() > 0.5:
                few.append(system)
                break
    if few:
        warnings.warn(
            f"systems {few[:3]}{' ...' if len(few) > 3 else ''} have at most {FEW_TASKS} "
            "tasks (in a stratum, if declared), most of them solved on all or none of their "
            "trials: the population concentration then rests on its prior, and the 95% "
            "population interval of such benchmarks covers about 0.87 (models/hierarchical.md, "
            "'Small task counts'). estimand='tasks' is not affected; for a new task read the "
            "interval as optimistic, or widen the prior, e.g. priors={'log_kappa': (0.0, 3.0)}",
            BayevalWarning,
            stacklevel=2,
        )


def fit_grid(data, priors, draws, chains, seed, n_grid=200):
    """Grid posterior per population.

    Returns ``mu``, ``kappa`` of shape ``(chain, draw, bound, system, population)`` and the grid
    posteriors.
    """
    priors = validate_priors(priors)
    ds = data.dataset
    c, n, _ = counts_by_bound(ds)
    pops = Populations.from_dataset(ds)
    box = ((-20.0, 20.0), log_kappa_box(priors))
    shape = (chains, draws) + c.shape[:2] + (pops.n,)
    mu, kappa = np.empty(shape), np.empty(shape)
    grids = {}
    for b in range(c.shape[0]):
        for s in range(c.shape[1]):
            for h in range(pops.n):
                members = pops.code == h
                pn, pc, pm_ = patterns(c[b, s, members], n[b, s, members])
                grid = adaptive_grid(
                    _log_density(priors, pn, pc, pm_.astype(float)), box, n_grid=n_grid
                )
                rng = np.random.default_rng([seed, 0, b, s, h])
                x, y = grid.sample(chains * draws, rng)
                mu[:, :, b, s, h] = special.expit(x).reshape(chains, draws)
                kappa[:, :, b, s, h] = np.exp(y).reshape(chains, draws)
                grids[(b, s, h)] = grid
    return mu, kappa, grids


POSTERIOR_VARS = ("mu", "kappa")


class HierarchicalRates(BetaRates):
    """The hierarchical model: a Beta population per system, fitted on a grid or by NUTS.

    Its parameters are read from the posterior.
    """

    name = "hierarchical"
    estimands = ("tasks", "population")
    engines = {"auto": "grid", "grid": "grid", "nutpie": "nutpie", "pymc": "pymc"}
    posterior_vars = POSTERIOR_VARS

    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def build(self, data, priors=None, **options) -> pm.Model:
        """The form NUTS samples: :func:`build_hierarchical_model`, task rates integrated out.

        The counts are compressed into patterns; ``options`` override.
        """
        return build_hierarchical_model(
            data, priors, **{"marginal": True, "compress": True, **options}
        )

    def data_priors(self, data, priors) -> tuple[dict | None, str]:
        """The concentration prior the data can support, where the user chose none.

        With at most :data:`FEW_TASKS` tasks in every population (system and stratum) and a
        median of at least :data:`FEW_TASKS_PRIOR_TRIALS` valid trials per task, ``log_kappa``
        defaults to :data:`FEW_TASKS_LOG_KAPPA` (wide); otherwise to :data:`DEFAULT_PRIORS`'s.

        Examples
        --------
        >>> import bayeval as be
        >>> from bayeval.models.hierarchical import HierarchicalRates
        >>> few = be.from_counts([[32, 0, 30, 1, 32]], trials=32)
        >>> HierarchicalRates().data_priors(few, None)[0]
        {'log_kappa': (0.0, 3.0)}
        """
        if (priors or {}).get("log_kappa") is not None:
            return priors, ""
        ds = data.dataset
        _, n, _ = counts_by_bound(ds)
        n = n[0]  # (system, task)
        pops = Populations.from_dataset(ds)
        valid = n > 0
        largest = max(
            int((valid[:, pops.code == h]).sum(axis=1).max(initial=0)) for h in range(pops.n)
        )
        if largest > FEW_TASKS or not valid.any():
            return priors, ""
        median = float(np.median(n[valid]))
        if median < FEW_TASKS_PRIOR_TRIALS:
            return priors, ""
        note = (
            f"at most {FEW_TASKS} tasks per population with a median of {median:g} trials: "
            f"log_kappa ~ Normal{FEW_TASKS_LOG_KAPPA} (the default Normal"
            f"{DEFAULT_PRIORS['log_kappa']} pulls U-shaped task sets together; "
            "models/hierarchical.md, 'Small task counts')"
        )
        return {**(priors or {}), "log_kappa": FEW_TASKS_LOG_KAPPA}, note

    def warn(self, data, priors) -> None:
        """:func:`warn_few_tasks` under the default concentration prior.

        That prior undercovers few, mostly all-or-nothing tasks.
        """
        if (priors or {}).get("log_kappa") is None:
            warn_few_tasks(data)

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
        """The grid posterior (:func:`fit_grid`) or NUTS on :meth:`build`'s model."""
        engine = self.engine(sampler)
        priors = validate_priors(priors)
        ds = data.dataset
        _, _, bounds = counts_by_bound(ds)
        sample_stats = None
        if engine == "grid":
            mu, kappa, _ = fit_grid(data, priors, draws, chains, seed)
            extra_dims, extra_coords = stratum_dims(Populations.from_dataset(ds))
            dims = ("chain", "draw", "missing_bound", "system", "stratum")
            coords = {
                "chain": np.arange(chains),
                "draw": np.arange(draws),
                "system": ds["system"].values,
                **extra_coords,
            }
            posterior = xr.Dataset({"mu": (dims, mu), "kappa": (dims, kappa)}, coords=coords)
            if not extra_dims:
                posterior = posterior.isel(stratum=0, drop=True)
            posterior = posterior.transpose("chain", "draw", "system", ...)
        else:
            if tune is None:
                tune = self.default_tune()
            posterior, sample_stats = base.nuts(
                data, self, priors, draws, chains, tune, seed, engine, progress, bounds
            )
        posterior = base.finish_bounds(posterior, bounds)
        return base.sampled({"posterior": posterior, "sample_stats": sample_stats}, {"tune": tune})

    def sample_bound(
        self,
        data,
        priors,
        *,
        draws,
        tune,
        chains,
        seed,
        engine,
        progress,
        cores,
        missing_bound=None,
        form=None,
    ):
        """One NUTS run (:func:`bayeval.models.base.nuts`): the named posterior and the trace."""
        model = self.build(data, priors, missing_bound=missing_bound)
        trace = base.pymc_nuts(
            model,
            engine=engine,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seed,
            progress=progress,
            cores=cores,
        )
        post = trace["posterior"].to_dataset()
        return post[[v for v in POSTERIOR_VARS if v in post.data_vars]], trace

    def pattern_log_likelihood(self, tree, c, n) -> base.Patterns:
        """Each count pattern's Beta-binomial log-pmf summed over its systems.

        A pattern is a stratum and the counts of every system; values ``(draw, pattern)``
        without the binomial coefficients, the draws flattened over ``(chain, draw)``.
        """
        alpha, beta = self.params(tree)  # (chain, draw, bound, system, stratum)
        S = c.shape[0]
        D = alpha.shape[0] * alpha.shape[1]
        alpha = alpha[:, :, 0].reshape(D, S, -1)
        beta = beta[:, :, 0].reshape(D, S, -1)
        code = self._setup(tree)[4].code
        first, inverse = _joint_patterns(code, c, n)
        total = np.zeros((D, len(first)))
        for s in range(S):  # the systems' terms in turn, each once per distinct (h, c, n)
            keys = np.stack([code[first], c[s, first], n[s, first]], axis=1)
            uniq, inv = np.unique(keys, axis=0, return_inverse=True)
            h, cu, nu = uniq[:, 0].astype(int), uniq[:, 1], uniq[:, 2]
            a, b = alpha[:, s, h], beta[:, s, h]  # (D, U)
            value = special.betaln(cu + a, nu - cu + b) - special.betaln(a, b)  # (D, U)
            value = np.where(nu > 0, value, 0.0)
            total += value[:, inv.ravel()]
        return base.Patterns(total, first, inverse)

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


def _joint_patterns(code, c, n) -> tuple[np.ndarray, np.ndarray]:
    """A first task of each distinct ``(population, counts of every system)`` and each task's.

    Built a system at a time: the pattern so far and the system's counts make one integer key
    (a three-column sort where they would not fit in one), so the keys stay one task wide.
    """
    ids = np.asarray(code, dtype=np.int64)
    for s in range(c.shape[0]):
        cs, ns = c[s].astype(np.int64), n[s].astype(np.int64)
        width = int(ns.max(initial=0)) + 1  # successes and trials each below it
        if (int(ids.max(initial=0)) + 1) * width * width < 2**62:
            _, ids = np.unique((ids * width + ns) * width + cs, return_inverse=True)
        else:
            _, ids = np.unique(np.stack([ids, cs, ns], axis=1), axis=0, return_inverse=True)
        ids = ids.ravel()
    _, first = np.unique(ids, return_index=True)  # the lowest task index of each pattern
    return first, ids
