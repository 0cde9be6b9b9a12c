"""``fit(data, model=...)``: run a model with an engine and wrap the result in :class:`Results`.

Engines:

* ``"conjugate"`` — exact posterior draws of the ``beta_binomial`` model, no sampler;
* ``"grid"`` — deterministic quadrature over each population's two hyperparameters (tasks
  grouped by their distinct counts); draws are sampled from the grid posterior;
* ``"nutpie"`` / ``"pymc"`` — NUTS on the marginal model (task rates or task effects
  integrated out, one likelihood term per distinct count pattern), through PyMC with nutpie's
  or PyMC's sampler; the only engines of the ``logit_normal`` model, which samples its
  full-latent form instead for several systems where most tasks have several trials, and its
  task-latent form for many systems with one or two trials a task, where quadrature would
  cost more (:func:`bayeval.models.logit_normal.sampling_form`; recorded in
  ``attrs["form"]``). nutpie samples every form of ``logit_normal`` as one compiled log
  density, without building a PyMC model (:func:`bayeval.models.logit_normal.sample_kernel`:
  compiled once per machine); a fit that samples the task effects keeps their draws in a
  ``task_effects`` group, from which the tasks estimand is read.
* ``"numpyro"`` — NUTS through PyMC's JAX backend (``bayeval[jax]``), for a machine with an
  accelerator: the ``logit_normal`` model in its full-latent form (a latent effect per task and
  per task and system, written with PyMC distributions, which JAX compiles), the same model as
  the collapsed one nutpie samples on a CPU and the same answers within Monte Carlo error.

``sampler="auto"`` picks ``conjugate`` or ``grid`` where the model allows it and NUTS otherwise,
and records its choice. Every MCMC fit stores divergences, r-hat, ESS (bulk and tail) and BFMI
and checks them against gates; a fit that fails warns with what to do, or raises under
``strict=True``. Population models get a posterior predictive check of the per-task
success-count histogram, which warns when the data look U-shaped and the fit does not.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from importlib.metadata import version

import numpy as np
import xarray as xr

from bayeval._arviz import convergence
from bayeval._validate import (
    BayevalWarning,
    validate_choice,
    validate_positive_int,
    validate_seed,
)
from bayeval.data import require_valid_outcomes
from bayeval.models import _groups, beta_binomial, get_model, hierarchical, logit_normal, zoib
from bayeval.models._beta_family import Populations, counts_by_bound, stratum_dims
from bayeval.results import Results

__all__ = ["choose_model", "fit"]

SAMPLERS = ("auto", "conjugate", "grid", "nutpie", "pymc", "numpyro")
ENGINES = {
    "beta_binomial": {"auto": "conjugate", "conjugate": "conjugate"},
    "hierarchical": {"auto": "grid", "grid": "grid", "nutpie": "nutpie", "pymc": "pymc"},
    "logit_normal": {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc", "numpyro": "numpyro"},
    "zoib": {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc"},
}
POSTERIOR_VARS = {
    "hierarchical": ("mu", "kappa"),
    "logit_normal": logit_normal.POSTERIOR_VARS,
    "zoib": zoib.POSTERIOR_VARS,
}
GATES = {"max_rhat": 1.01, "min_ess_per_chain": 100, "min_bfmi": 0.3}
TASK_DRAWS_LIMIT = 4_000_000  # stored per-task draws (chain x draw x system x task x bound)


def choose_model(data, sampler: str = "auto") -> tuple[str, str]:
    """The model ``fit(data, model="auto")`` runs, and why.

    Several systems run on shared tasks get the paired ``logit_normal`` model (shared task and
    cluster effects: comparisons are paired); one system, or systems without two shared tasks,
    get ``hierarchical``. A sampler that only one model has decides it: ``"grid"`` is the
    hierarchical model's, ``"conjugate"`` the beta-binomial's. Partial-credit scores
    (``from_frame(..., score=)`` with some score strictly between 0 and 1) get the
    zero-one-inflated Beta model ``zoib``. Scores that are all 0 or 1 are 0/1 outcomes and get
    the binomial models as above (their mean score is pass@1): ``zoib`` gives the same answer
    on them but mixes far worse with many systems of one attempt each (``models/zoib.md``).

    Parameters
    ----------
    data : EvalData
    sampler : str, default "auto"

    Returns
    -------
    (model, reason) : tuple of str

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.fit import choose_model
    >>> choose_model(be.from_counts([[3, 5, 1], [4, 6, 2]], trials=10, systems=["A", "B"]))[0]
    'logit_normal'
    >>> choose_model(be.from_counts([3, 5, 1], trials=10))[0]
    'hierarchical'
    """
    if getattr(data, "has_partial_credit", False) and sampler not in ("grid", "conjugate"):
        return "zoib", (
            "scores in [0, 1] (score=): the zero-one-inflated Beta model, with "
            "shared task and cluster effects"
        )
    model, why = _choose_binary_model(data, sampler)
    if getattr(data, "has_scores", False):
        why = f"scores all 0 or 1 (0/1 outcomes; the mean score is pass@1); {why}"
    return model, why


def _choose_binary_model(data, sampler: str) -> tuple[str, str]:
    """:func:`choose_model` for 0/1 outcomes."""
    if sampler == "grid":
        return "hierarchical", "sampler='grid' runs the hierarchical model"
    if sampler == "conjugate":
        return "beta_binomial", "sampler='conjugate' runs the beta_binomial model"
    _, n, _ = counts_by_bound(data.dataset)
    n_systems = n.shape[1]
    shared = int(((n[0] > 0).sum(axis=0) >= 2).sum())
    if n_systems >= 2 and shared >= 2:
        return "logit_normal", (
            f"{n_systems} systems share {shared} tasks: the paired "
            "logit_normal model (shared task and cluster effects)"
        )
    why = "one system" if n_systems < 2 else f"the systems share {shared} task(s)"
    return "hierarchical", f"{why}: the hierarchical model"


#: Whether a task-latent fit of ``logit_normal`` that diverged is replaced by the collapsed
#: form's fit of the same data (the same posterior, its cluster effects held as the data
#: suggest rather than centred).
REFIT_DIVERGENT_TASK_LATENT = True

#: NUTS warm-up draws per chain when ``tune`` is not given: nutpie's own default (300) where
#: ``logit_normal`` samples a form with its latent effects integrated out (``collapsed``,
#: ``task-latent``: a few hundred well-scaled coordinates, whose step size and mass matrix
#: nutpie settles within it), 1000 elsewhere. On the bundled data, 4 chains x 1000 draws,
#: two seeds each, the integrated forms' smallest bulk ESS at 300 was 0.77-2.6x that at 1000
#: (the SWE-bench pair 1.1-1.6, all 25 systems 0.82-0.95, the first 8 0.77-0.80, LangChain
#: 1.1-1.5, Multi-SWE-bench Java 1.0-2.6; the same divergences) in about 0.65 of the time;
#: Terminal-Bench's full-latent form needs the longer warm-up (bulk ESS 51-56 against
#: 105-109, r-hat 1.07 against 1.03-1.04): ``benchmarks/results/fit_speed_logit_normal.txt``.
DEFAULT_TUNE = 1000
INTEGRATED_TUNE = 300


def default_tune(model: str, form: str | None = None) -> int:
    """The warm-up :func:`fit` runs when ``tune`` is not given: :data:`INTEGRATED_TUNE` for
    ``logit_normal``'s integrated forms (``form`` "collapsed" or "task-latent"),
    :data:`DEFAULT_TUNE` otherwise.

    Examples
    --------
    >>> from bayeval.fit import default_tune
    >>> default_tune("logit_normal", "task-latent"), default_tune("logit_normal", "full-latent")
    (300, 1000)
    >>> default_tune("hierarchical")
    1000
    """
    integrated = model == "logit_normal" and form in ("collapsed", "task-latent")
    return INTEGRATED_TUNE if integrated else DEFAULT_TUNE


def fit(
    data,
    model: str = "auto",
    draws: int = 1000,
    chains: int = 4,
    seed=None,
    sampler: str = "auto",
    *,
    tune: int | None = None,
    priors: dict | None = None,
    progress: bool | None = None,
    strict: bool = False,
    task_draws="auto",
    log_likelihood="auto",
) -> Results:
    """Fit a Bayesian model to evaluation counts.

    Parameters
    ----------
    data : EvalData
    model : {"auto", "hierarchical", "beta_binomial", "logit_normal", "zoib"}, default "auto"
        ``logit_normal`` adds clusters and pairs the systems through shared task effects;
        ``"auto"`` picks it for several systems on shared tasks and ``hierarchical`` otherwise
        (:func:`choose_model`), and records the choice in ``attrs["model_choice"]``.
        ``zoib`` models partial-credit scores in [0, 1] (the ``"auto"`` choice for data
        built with ``score=`` where some score lies strictly between 0 and 1; scores that
        are all 0 or 1 get the binomial models, and binary data fit ``zoib`` too when asked);
        the binary models refuse scores strictly between 0 and 1.
    draws, chains : int, default 1000 and 4
        Posterior draws per chain, and chains (the grid and conjugate engines fill the same
        ``(chain, draw)`` layout).
    seed : int, optional
        Seed for every random step; ``None`` draws one and records it in ``attrs["seed"]``.
    sampler : {"auto", "conjugate", "grid", "nutpie", "pymc", "numpyro"}, default "auto"
        Engine (see the module docstring); "numpyro" needs ``bayeval[jax]``.
    tune : int, optional
        NUTS warm-up draws per chain; default: 300 where ``logit_normal`` samples a form with
        its latent effects integrated out (``attrs["form"]`` "collapsed" or "task-latent"),
        1000 otherwise (:func:`default_tune`). The warm-up run is recorded in
        ``attrs["tune"]``.
    priors : dict, optional
        Model priors (see each model's ``DEFAULT_PRIORS``); recorded in attrs.
    progress : bool, optional
        Show the sampler's progress bar; default: on an interactive terminal or in a
        Jupyter kernel (:func:`interactive`).
    strict : bool, default False
        Raise instead of warning when the MCMC diagnostics fail their gates.
    task_draws : {"auto", True, False}
        Store per-task rate draws (``"auto"``: when they hold at most 4 million numbers) in a
        ``task_rates`` group of their own (the conjugate model's are its posterior); they are
        otherwise drawn on demand by ``Results.task_rates``.
    log_likelihood : {"auto", True, False}
        Store the ``log_likelihood`` group (per task, joint over the systems; for
        ``arviz_stats.loo``); ``"auto"``: unless its quadrature is estimated to take more than
        30 s (then ``Results.with_log_likelihood()`` adds it on demand). Not defined under
        ``missing="bounds"`` or for ``beta_binomial``.

    Returns
    -------
    Results

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3, 10, 0]], trials=10)
    >>> res = be.fit(data, draws=500, chains=2, seed=1)   # one system: "auto" is hierarchical
    >>> res.tree.attrs["model"], res.tree.attrs["sampler"]
    ('hierarchical', 'grid')
    >>> res.pass_at_k(k=1, estimand="population").dims
    ('chain', 'draw', 'system')
    """
    from bayeval.data import EvalData

    if not isinstance(data, EvalData):
        raise TypeError(
            f"data must be an EvalData (from be.from_frame / be.from_counts); "
            f"got {type(data).__name__}"
        )
    require_valid_outcomes(data)
    validate_choice("model", model, ("auto", *ENGINES))
    validate_choice("sampler", sampler, SAMPLERS)
    requested_model, choice = model, None
    if model == "auto":
        model, choice = choose_model(data, sampler)
    if sampler not in ENGINES[model]:
        raise ValueError(
            f"model {model!r} runs with sampler in {sorted(ENGINES[model])}; got {sampler!r}"
        )
    if model != "zoib" and data.has_partial_credit:
        n_mid = int(data.dataset["score_nmid"].sum())
        raise ValueError(
            f"model {model!r} is a model of 0/1 outcomes, but {n_mid} valid "
            "score(s) lie strictly between 0 and 1: fit model='zoib' (the mean "
            "score), or threshold the scores into a success= column first if "
            "full credit is what counts"
        )
    draws = validate_positive_int("draws", draws)
    chains = validate_positive_int("chains", chains)
    if tune is not None:
        tune = validate_positive_int("tune", tune, minimum=0)
    seed = validate_seed(seed)
    if log_likelihood not in ("auto", True, False):
        raise ValueError(f"log_likelihood must be 'auto', True or False; got {log_likelihood!r}")
    if task_draws not in ("auto", True, False):
        raise ValueError(f"task_draws must be 'auto', True or False; got {task_draws!r}")
    engine = ENGINES[model][sampler]
    if progress is None:
        progress = interactive()
    _warn_single_trial(data, model)
    if model == "hierarchical" and (priors or {}).get("log_kappa") is None:
        # the default concentration prior undercovers few, mostly all-or-nothing tasks
        from bayeval.models.hierarchical import warn_few_tasks

        warn_few_tasks(data)

    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    pops = Populations.from_dataset(ds)
    extra_dims, extra_coords = stratum_dims(pops)
    chain_draw = {"chain": np.arange(chains), "draw": np.arange(draws)}
    sample_stats = None
    form = form_choice = None
    if model == "beta_binomial":
        priors = beta_binomial.validate_priors(priors)
        posterior = xr.Dataset(coords=chain_draw)
    elif engine == "grid":
        priors = hierarchical.validate_priors(priors)
        mu, kappa, _ = hierarchical.fit_grid(data, priors, draws, chains, seed)
        dims = ("chain", "draw", "missing_bound", "system", "stratum")
        coords = {**chain_draw, "system": ds["system"].values, **extra_coords}
        posterior = xr.Dataset({"mu": (dims, mu), "kappa": (dims, kappa)}, coords=coords)
        if not extra_dims:
            posterior = posterior.isel(stratum=0, drop=True)
        posterior = posterior.transpose("chain", "draw", "system", ...)
    else:
        priors = {"hierarchical": hierarchical, "logit_normal": logit_normal, "zoib": zoib}[
            model
        ].validate_priors(priors)
        if model == "logit_normal":  # the collapsed kernel is numba code: JAX takes the latent
            form, form_choice = (
                ("full-latent", "sampler='numpyro': the full-latent form, which JAX compiles")
                if engine == "numpyro"
                else logit_normal.sampling_form(ds)
            )
        if tune is None:
            tune = default_tune(model, form)
        posterior, sample_stats = _nuts(
            data, model, priors, draws, chains, tune, seed, engine, progress, bounds, form
        )
        diverged = 0 if sample_stats is None else int(sample_stats["diverging"].sum())
        if form == "task-latent" and diverged and REFIT_DIVERGENT_TASK_LATENT:
            # its cluster effects are centred: where the clusters' spread is small against
            # what their tasks say of it, a funnel (simulated: a chain stuck at sigma_cluster
            # 0.03); the collapsed form, the same posterior, holds them as the data suggest
            form, form_choice = (
                "collapsed",
                (
                    f"{form_choice}; its fit diverged {diverged} times, so the collapsed form "
                    "(task effects integrated out) was sampled instead"
                ),
            )
            if progress:
                print(
                    f"the task-latent fit diverged {diverged} times: sampling the collapsed "
                    "form instead",
                    file=sys.stderr,
                )
            posterior, sample_stats = _nuts(
                data, model, priors, draws, chains, tune, seed, engine, progress, bounds, form
            )
    if bounds is None and "missing_bound" in posterior.dims:
        posterior = posterior.isel(missing_bound=0, drop=True)
    elif bounds is not None and "missing_bound" in posterior.dims:
        posterior = posterior.assign_coords(missing_bound=bounds)
    effects = None
    if model == "logit_normal" and "task_effect" in posterior:
        # a full-latent fit's task effects, per task: a group of their own keeps summaries small
        effects = posterior[["task_effect"]]
        posterior = posterior.drop_vars(["task_effect", "task"])

    size = chains * draws * c.size
    small = task_draws == "auto" and size <= TASK_DRAWS_LIMIT and model != "logit_normal"
    rates_group = None
    if task_draws is True or small:
        p = _task_rate_draws(
            model, data, priors, draws, chains, seed, posterior, ds, bounds, effects
        )
        if model == "beta_binomial":  # the conjugate model's parameters are the task rates
            posterior = posterior.assign(p=p)
        else:  # a group of their own keeps summaries of the posterior small
            rates_group = xr.Dataset({"p": p})
    attrs = _attrs(data, model, engine, sampler, seed, draws, chains, tune, priors)
    attrs["model_requested"] = requested_model
    attrs["model_choice"] = choice or f"model={model!r} as requested"
    if model == "zoib":
        attrs["target_accept"] = zoib.target_accept(ds.sizes["task"])
    if model == "logit_normal":
        attrs["form"], attrs["form_choice"] = form, form_choice
        attrs["target_accept"] = logit_normal.target_accept(form, ds.sizes["task"])
        if "cluster" in ds.coords:
            attrs["cluster_effects"] = (
                "centred" if logit_normal.cluster_parametrisation(ds) else "non-centred"
            )
        if form == "full-latent" and engine == "nutpie":
            attrs["task_effects"] = (
                "centred" if logit_normal.task_parametrisation(ds) else "non-centred"
            )
            layout = logit_normal.Layout.from_dataset(ds)
            if layout.paired:
                attrs["task_system_effects"] = (
                    "integrated (tables of the most common counts), sampled elsewhere"
                    if logit_normal.integrates_cells(ds)
                    else "sampled"
                )
            if logit_normal.coordinates(layout, latent_tasks=ds.sizes["task"]).cluster_pairs:
                sums = "centred" if layout.task_centred else "standardised"
                attrs["cluster_effects"] = (
                    f"rotated with their tasks' mean effects: the sums {sums}, the spreads polar"
                )
        if form == "task-latent":
            attrs["task_effects"] = "centred"
            if "cluster" in ds.coords:
                attrs["cluster_effects"] = "centred (cluster-by-system non-centred)"
        if form in ("collapsed", "task-latent"):
            attrs["intercepts"] = "attenuated" if logit_normal.ATTENUATED_INTERCEPTS else "plain"
            if logit_normal.coordinates(logit_normal.Layout.from_dataset(ds)).level_weights:
                attrs["intercept_level"] = "task-weighted"
    groups = {
        "posterior": posterior,
        "observed_data": ds.copy(),
        "constant_data": ds[["trials", "attempts"]].copy(),
    }
    if rates_group is not None:
        groups["task_rates"] = rates_group
    if effects is not None:
        groups["task_effects"] = effects
    if sample_stats is not None:
        groups["sample_stats"] = sample_stats
    tree = xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items()})
    tree.attrs = attrs
    counts = model not in ("beta_binomial", "zoib")  # count-based groups: not for scores
    wanted = counts and (
        log_likelihood is True
        or (
            log_likelihood == "auto"
            and _groups.log_likelihood_cost(tree) <= _groups.LOG_LIKELIHOOD_SECONDS
        )
    )
    with ThreadPoolExecutor(max_workers=1) as background:
        # the log_likelihood group's kernel releases the GIL: it runs beside the diagnostics
        # and the predictive checks, which hold it (arviz_stats loops over the quantities)
        loglik = background.submit(_groups.log_likelihood, tree) if wanted else None
        if sample_stats is not None:
            names = [v for v in POSTERIOR_VARS[model] if v in posterior.data_vars]
            diag = convergence(posterior[names], sample_stats)
            tree.attrs["diagnostics"] = json.dumps(diag)
            _check_gates(diag, chains, strict)
        rates = get_model(model)
        predictive = xr.Dataset()
        if "population" in rates.estimands:
            predictive = rates.predictive(tree)
        if counts:
            replicated = _groups.replicated_successes(tree, seed)
            if replicated is not None:
                predictive = predictive.assign(successes=replicated)
        loglik = loglik.result() if loglik is not None else None
    if loglik is not None:
        tree["log_likelihood"] = xr.DataTree(loglik)
    if predictive.data_vars:
        tree["posterior_predictive"] = xr.DataTree(predictive)
    results = Results(tree)
    if "posterior_predictive" in tree.children:
        _warn_ppc(results)
    return results


def _task_rate_draws(model, data, priors, draws, chains, seed, posterior, ds, bounds, effects=None):
    if model == "beta_binomial":
        p = beta_binomial.conjugate_task_rates(data, priors, draws, chains, seed)
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
    groups = {"/posterior": posterior, "/observed_data": ds}
    if effects is not None:
        groups["/task_effects"] = effects
    tree = xr.DataTree.from_dict(groups)
    tree.attrs = {"seed": seed}
    return get_model(model).task_rates(tree)


def _nuts(data, model_name, priors, draws, chains, tune, seed, engine, progress, bounds, form=None):
    """NUTS on the marginal model, once per missing-outcome bound; ``form`` is the
    ``logit_normal`` form sampled (:func:`bayeval.models.logit_normal.sampling_form`)."""
    import pymc as pm

    posteriors, stats = [], []
    for i, bound in enumerate(bounds or [None]):
        cores = min(chains, os.cpu_count() or 1)
        if model_name == "zoib":
            trace = zoib.sample(
                data,
                priors,
                draws,
                tune,
                chains,
                seed + i,
                progress,
                cores,
                engine,
                missing_bound=bound,
            )
            post = trace["posterior"].to_dataset()
            names = [v for v in (*zoib.POSTERIOR_VARS, *zoib.LATENT_VARS) if v in post]
            posteriors.append(
                post[names].drop_vars([c for c in ("task", "cluster") if c in post.coords])
            )
            stats.append(_kept_stats(trace))
            continue
        collapsed = model_name == "logit_normal" and form == "collapsed"
        # nutpie samples either form of logit_normal as one compiled log density
        compiled = model_name == "logit_normal" and engine == "nutpie"
        if engine == "numpyro":
            _check_jax()
        if compiled:
            trace = logit_normal.sample_kernel(
                data,
                priors,
                draws,
                tune,
                chains,
                seed + i,
                progress,
                cores,
                form=form,
                missing_bound=bound,
            )
        else:
            if model_name == "hierarchical":
                model = hierarchical.build_hierarchical_model(
                    data, priors, marginal=True, missing_bound=bound, compress=True
                )
            else:
                model = logit_normal.build_logit_normal_model(
                    data, priors, missing_bound=bound, marginal=collapsed
                )
            with model:
                trace = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    random_seed=seed + i,
                    nuts_sampler=engine,
                    progressbar=progress,
                    quiet=not progress,
                    compute_convergence_checks=False,
                    cores=cores,
                    **({"mp_ctx": "forkserver"} if engine == "pymc" else {}),
                    **(
                        {
                            "target_accept": logit_normal.target_accept(
                                form, data.dataset.sizes["task"]
                            )
                        }
                        if model_name == "logit_normal"
                        else {}
                    ),
                )
        post = trace["posterior"].to_dataset()
        if compiled:
            sampled = post
            effect = None
            if not collapsed:
                effect = sampled["task_effect"]
                effect = effect.rename({effect.dims[-1]: "task"})
            post = logit_normal.collapsed_posterior(
                post["theta" if collapsed else "hyper"], data, priors, task_effect=effect, form=form
            )
            if not collapsed:  # the full-latent form's task effects: the tasks estimand's
                post["task_effect"] = effect.drop_vars(
                    [name for name in effect.coords if name not in ("chain", "draw")]
                )
        names = [v for v in (*POSTERIOR_VARS[model_name], "task_effect") if v in post.data_vars]
        posteriors.append(post[names])
        stats.append(_kept_stats(trace))
    if bounds:
        posterior = xr.concat(posteriors, dim="missing_bound")
        sample_stats = xr.concat(stats, dim="missing_bound").assign_coords(missing_bound=bounds)
    else:
        posterior, sample_stats = posteriors[0], stats[0]
    posterior = posterior.assign_coords(
        system=data.dataset["system"].values, chain=np.arange(chains), draw=np.arange(draws)
    )
    if model_name == "zoib" or "task_effect" in posterior:  # latent task effects: the labels
        posterior = posterior.assign_coords(task=data.dataset["task"].values)
    if model_name == "zoib" and "cluster" in posterior.dims:
        posterior = posterior.assign_coords(
            cluster=np.asarray(zoib.Layout.from_dataset(data.dataset).cluster_labels, dtype=object)
        )
    sample_stats = sample_stats.assign(diverging=sample_stats["diverging"].astype(np.int8))
    sample_stats = sample_stats.assign_coords(chain=np.arange(chains), draw=np.arange(draws))
    return posterior, sample_stats


def _kept_stats(trace) -> xr.Dataset:
    sample_stats = trace["sample_stats"].to_dataset()
    kept = ("diverging", "energy", "tree_depth", "depth", "n_steps", "step_size")
    return sample_stats[[v for v in kept if v in sample_stats]]


def _check_jax():
    try:
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "sampler='numpyro' needs JAX and NumPyro: pip install 'bayeval[jax]'"
        ) from err


def interactive() -> bool:
    """Whether someone is watching: stderr is a terminal, or the code runs in a Jupyter
    kernel (whose stderr is not a terminal but whose cells show a progress bar)."""
    if sys.stderr.isatty():
        return True
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    kernel = get() if get is not None else None
    return kernel is not None and getattr(kernel, "kernel", None) is not None


def _attrs(data, model, engine, requested, seed, draws, chains, tune, priors) -> dict:
    versions = {pkg: version(pkg) for pkg in ("pymc", "arviz", "numpy", "xarray", "nutpie")}
    try:
        versions["bayeval"] = version("bayeval")
    except Exception:  # a source tree without install
        versions["bayeval"] = "unknown"
    attrs = {
        "model": model,
        "sampler": engine,
        "sampler_requested": requested,
        "seed": seed,
        "draws": draws,
        "chains": chains,
        "tune": tune if engine in ("nutpie", "pymc") else 0,
        "priors": json.dumps(priors),
        "estimands": list(get_model(model).estimands),
        "missing_policy": data.missing or "none",
        "input_hash": data.fingerprint(),
        "created_at": datetime.now(timezone.utc).isoformat(),
        "library_versions": json.dumps(versions),
        "inference_library": engine if engine in ("nutpie", "pymc") else "bayeval",
        "inference_library_version": versions.get(engine, versions["bayeval"]),
    }
    if model == "beta_binomial":
        attrs["prior_p"] = list(priors["p"])
    return attrs


def _warn_single_trial(data, model):
    trials = data.dataset["trials"].values
    single = [s for s, row in zip(data.systems, trials) if row[row > 0].max(initial=0) <= 1]
    if not single:
        return
    if model == "beta_binomial":
        message = (
            "with one trial per task the beta_binomial task rates lean on the prior "
            "(Beta(1, 1) pulls a system solving 74% of tasks to about 58%); fit "
            "model='hierarchical', which learns the task population from the data"
        )
    elif model == "zoib" and len(data.systems) > 1:
        message = (
            "with one attempt per task the task-by-system spread and the Beta precision "
            "phi are told apart only by the shape of the interior scores: they mix slowly "
            "and, on LiveBench-like data, fail the MCMC gates; read the mean score's own "
            "ESS in summary() before relying on it (models/zoib.md)"
        )
    elif model == "logit_normal" and len(data.systems) > 1:
        message = (
            "with one trial per task a system's own task-to-task spread is identified "
            "only through the other systems: the task-by-system spread and pass@k, pass^k "
            "for k > 1 lean on their priors, and intervals over these tasks "
            "(estimand='tasks') covered 0.90-0.92 at 95% in simulations of 12 systems "
            "(models/logit_normal.md)"
        )
    else:
        message = (
            "with one trial per task the spread of rates between tasks is not "
            "identified: pass@1 of the population is, but pass@k and pass^k for k > 1 "
            "and the 'tasks' estimand lean on the concentration prior"
        )
    warnings.warn(
        f"{message} (systems: {single[:3]}{' ...' if len(single) > 3 else ''})",
        BayevalWarning,
        stacklevel=3,
    )


def _check_gates(diag: dict, chains: int, strict: bool):
    problems = []
    if diag.get("divergences", 0) > 0:
        problems.append(f"{diag['divergences']} divergent transitions")

    def at(key):  # the parameter that has the worst value
        return f" in {diag[key + '_parameter']}" if key + "_parameter" in diag else ""

    if diag["max_rhat"] > GATES["max_rhat"]:
        problems.append(
            f"r-hat up to {diag['max_rhat']:.3f}{at('max_rhat')} (gate {GATES['max_rhat']})"
        )
    min_ess = GATES["min_ess_per_chain"] * chains
    for kind in ("bulk", "tail"):
        if diag[f"min_ess_{kind}"] < min_ess:
            problems.append(
                f"{kind} ESS down to {diag[f'min_ess_{kind}']:.0f}"
                f"{at('min_ess_' + kind)} (gate {min_ess})"
            )
    if diag.get("min_bfmi", 1.0) < GATES["min_bfmi"]:
        problems.append(f"BFMI down to {diag['min_bfmi']:.2f} (gate {GATES['min_bfmi']})")
    if not problems:
        return
    message = (
        "the MCMC diagnostics fail their gates: " + "; ".join(problems) + ". Increase "
        "draws and tune, check the priors, or use sampler='grid' where the model allows"
    )
    if strict:
        raise RuntimeError(message)
    warnings.warn(message, BayevalWarning, stacklevel=3)


def _warn_ppc(results: Results):
    check = results.ppc()
    flagged = check["flagged"]
    if not bool(flagged.any()):
        return
    systems = (
        flagged["system"]
        .values[flagged.any([d for d in flagged.dims if d != "system"]).values]
        .tolist()
    )
    warnings.warn(
        "posterior predictive check: the share of tasks that are always or never solved "
        f"falls outside what the fitted population predicts for {systems[:3]} (see "
        "Results.ppc()). The population cannot take the shape of the data: check the "
        "concentration prior",
        BayevalWarning,
        stacklevel=3,
    )
