"""``infer(data, model=...)``: run a model with an engine and check the fit.

The result is a :class:`~bayeval.posterior.Posterior`; the public face is :func:`bayeval.fit`.

The model is chosen by :func:`choose_model` (``model="auto"``) and looked up in the registry
(:data:`bayeval.models.MODELS`); everything particular to a model is asked of it
(:class:`bayeval.models.base.Model`), so nothing here depends on which model runs.

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
and checks them against :data:`GATES`; a fit that fails warns with what to do, or raises under
``strict=True``. Population models get a posterior predictive check of the per-task
success-count histogram (:func:`bayeval.checks.ppc`), which warns when the data look U-shaped
and the fit does not.

Memory stays bounded by the distinct count patterns, not the tasks: the ``log_likelihood``
group (draws x tasks) is stored only where it is small and quick
(:func:`bayeval.models._groups.log_likelihood_skipped`), task-rate draws and replicated counts
only up to a few million numbers; the rest is computed on demand
(``Posterior.log_likelihood``, ``Posterior.task_rates``).
"""

from __future__ import annotations

import json
import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from importlib.metadata import version

import xarray as xr

from bayeval import checks
from bayeval._arviz import convergence
from bayeval._validate import (
    BayevalWarning,
    validate_choice,
    validate_positive_int,
    validate_seed,
)
from bayeval.data import EvalData, require_valid_outcomes
from bayeval.models import MODELS, _groups, get_model
from bayeval.models._beta_family import counts_by_bound
from bayeval.models.base import MODEL_DATA_ATTRS
from bayeval.models.progress import watched
from bayeval.posterior import Posterior

__all__ = [
    "GATES",
    "GATES_ADVICE",
    "SAMPLERS",
    "choose_model",
    "default_tune",
    "gate_attrs",
    "gate_failures",
    "infer",
    "interactive",
]

SAMPLERS = ("auto", "conjugate", "grid", "nutpie", "pymc", "numpyro")
GATES = {"max_rhat": 1.01, "min_ess_per_chain": 100, "min_bfmi": 0.3}
TASK_DRAWS_LIMIT = 4_000_000  # stored per-task draws (chain x draw x system x task x bound)


def choose_model(data, sampler: str = "auto") -> tuple[str, str]:
    """The model ``fit(data, model="auto")`` runs, and why.

    Several systems run on shared tasks get the paired ``logit_normal`` model (shared task and
    cluster effects: comparisons are paired); one system, or systems without two shared tasks,
    get ``hierarchical``. A sampler that only one model has decides it: ``"grid"`` is the
    hierarchical model's, ``"conjugate"`` the beta-binomial's. Partial-credit scores
    (``from_frame(..., score=)`` with some score strictly between 0 and 1) get ``fractional``,
    the paired logit-normal model with the fractional-binomial likelihood
    (``models/fractional.md``; the zero-one-inflated Beta model ``zoib`` mixes too slowly with
    many systems of one attempt each). Scores that are all 0 or 1 are 0/1 outcomes and get the
    binomial models as above (their mean score is pass@1).
    Judged data (``from_frame(..., judge=, success=, label_design=)``) get the judge-aware
    model ``judge`` (:mod:`bayeval.models.judge`), whose every readout is of the true outcome.

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
    >>> from bayeval.inference import choose_model
    >>> choose_model(be.from_counts([[3, 5, 1], [4, 6, 2]], trials=10, systems=["A", "B"]))[0]
    'logit_normal'
    >>> choose_model(be.from_counts([3, 5, 1], trials=10))[0]
    'hierarchical'
    """
    judges = getattr(data, "judges", [])
    if judges and sampler not in ("grid", "conjugate"):
        return "judge", (
            f"a judge's verdicts ({judges[0]!r}) beside trusted labels: the judge-aware model "
            "(the true outcome of the paired logit-normal model, the judge's sensitivity and "
            "specificity per system)"
        )
    if getattr(data, "has_partial_credit", False) and sampler not in ("grid", "conjugate"):
        return "fractional", (
            "scores in [0, 1] (score=): the paired logit-normal model of the mean score, "
            "with the fractional-binomial likelihood (shared task and cluster effects)"
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


def default_tune(model: str, form: str | None = None) -> int:
    """The warm-up :func:`bayeval.fit` runs when ``tune`` is not given.

    The model's own (:meth:`bayeval.models.base.Model.default_tune`), 300 for the integrated
    forms of ``logit_normal`` (``form`` "collapsed" or "task-latent") and of ``judge``
    ("collapsed"), 1000 otherwise.

    Examples
    --------
    >>> from bayeval.inference import default_tune
    >>> default_tune("logit_normal", "task-latent"), default_tune("logit_normal", "full-latent")
    (300, 1000)
    >>> default_tune("judge", "collapsed"), default_tune("hierarchical")
    (300, 1000)
    """
    return get_model(model).default_tune(form)


def infer(
    data,
    *,
    model: str = "auto",
    draws: int | None = None,
    chains: int = 4,
    seed=None,
    sampler: str = "auto",
    tune: int | None = None,
    priors: dict | None = None,
    progress: bool | None = None,
    strict: bool = False,
    task_draws="auto",
    log_likelihood="auto",
) -> Posterior:
    """Fit a model to evaluation counts and check the fit.

    The work of :func:`bayeval.fit`, whose parameters these are; the fit comes back as a
    :class:`~bayeval.posterior.Posterior`.

    Returns
    -------
    Posterior

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.inference import infer
    >>> post = infer(be.from_counts([[9, 1, 10, 0, 7, 3]], trials=10), draws=100, chains=2,
    ...              seed=1)
    >>> post.model, post.tree.attrs["sampler"]
    ('hierarchical', 'grid')
    """
    if not isinstance(data, EvalData):
        raise TypeError(
            f"data must be an EvalData (from be.from_frame / be.from_counts); "
            f"got {type(data).__name__}"
        )
    require_valid_outcomes(data)
    validate_choice("model", model, ("auto", *MODELS))
    validate_choice("sampler", sampler, SAMPLERS)
    name, choice = (model, None) if model in MODELS else choose_model(data, sampler)
    spec = get_model(name)
    engine = spec.engine(sampler)
    reason = spec.supports(data)
    if reason is not None:
        raise ValueError(reason)
    if draws is None:  # the model's default for the form it will sample
        sampled = spec.sampling_form(data, sampler)
        draws = spec.default_draws(None if sampled is None else sampled[0])
    draws = validate_positive_int("draws", draws)
    chains = validate_positive_int("chains", chains)
    if tune is not None:
        tune = validate_positive_int("tune", tune, minimum=0)
    seed = validate_seed(seed)
    given, data = data, spec.model_data(data, seed=seed)  # input_hash names the data given
    if log_likelihood not in ("auto", True, False):
        raise ValueError(f"log_likelihood must be 'auto', True or False; got {log_likelihood!r}")
    if task_draws not in ("auto", True, False):
        raise ValueError(f"task_draws must be 'auto', True or False; got {task_draws!r}")
    if progress is None:
        progress = interactive()
    _warn_single_trial(data, name)
    priors, prior_note = spec.data_priors(data, priors)
    spec.warn(data, priors)
    priors = spec.validate_priors(priors)
    given_model, data = data, spec.sampled_data(data, seed=seed)  # after the priors, which
    # read the attempts run

    drawn = spec.sample(
        data,
        sampler=engine,
        draws=draws,
        chains=chains,
        tune=tune,
        seed=seed,
        priors=priors,
        progress=progress,
    )
    posterior = drawn["posterior"].to_dataset()
    sample_stats = _group(drawn, "sample_stats")
    effects = _group(drawn, "task_effects")
    model_attrs = dict(drawn.attrs)
    tune = model_attrs.pop("tune")

    ds = data.dataset
    c, _, bounds = counts_by_bound(ds)
    size = chains * draws * c.size
    small = task_draws == "auto" and size <= TASK_DRAWS_LIMIT and spec.task_draws_auto
    rates_group = None
    if task_draws is True or small:
        p = spec.task_rate_draws(
            data, priors=priors, seed=seed, posterior=posterior, task_effects=effects
        )
        if spec.task_rates_group == "posterior":
            posterior = posterior.assign(p=p)
        else:  # a group of their own keeps summaries of the posterior small
            rates_group = xr.Dataset({"p": p})
    attrs = _attrs(given, spec, engine, sampler, seed, draws, chains, tune, priors)
    attrs["model_requested"] = model
    attrs["model_choice"] = choice or f"model={name!r} as requested"
    attrs["prior_note"] = prior_note
    attrs.update(model_attrs)
    for key in MODEL_DATA_ATTRS:  # what the sampled view of the data did to it
        if key in ds.attrs:
            attrs[key] = ds.attrs[key]
    groups = {"posterior": posterior, **_groups.data(spec.stored_data(given_model, data), name)}
    if rates_group is not None:
        groups["task_rates"] = rates_group
    if effects is not None:
        groups["task_effects"] = effects
    if sample_stats is not None:
        groups["sample_stats"] = sample_stats
    tree = xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items()})
    tree.attrs = attrs
    # a draws x tasks array is stored only when small (or asked for): otherwise on demand
    skipped = _groups.log_likelihood_skipped(tree, log_likelihood)
    wanted = skipped is None
    if skipped is not None and bounds is None:  # where the group is defined
        tree.attrs["log_likelihood_note"] = _groups.log_likelihood_note(skipped)
    with ThreadPoolExecutor(max_workers=1) as background:
        # the log_likelihood group's kernel releases the GIL: it runs beside the diagnostics
        # and the predictive checks, which hold it (arviz_stats loops over the quantities)
        pending = background.submit(_groups.log_likelihood, tree) if wanted else None
        if sample_stats is not None:
            names = [v for v in spec.posterior_vars if v in posterior.data_vars]
            diag = convergence(posterior[names], sample_stats)
            tree.attrs["diagnostics"] = json.dumps(diag)
            _check_gates(diag, chains, strict)
        predictive = _groups.predictive(tree, seed)
        loglik = pending.result() if pending is not None else None
    if loglik is not None:
        tree["log_likelihood"] = xr.DataTree(loglik)
    for group, values in predictive.items():
        tree[group] = xr.DataTree(values)
    note = _groups.replicate_note(tree)
    if note is not None:
        tree.attrs["posterior_predictive_note"] = note
    fitted = Posterior(tree)
    if _groups.PREDICTIVE_STATS in tree.children:
        _warn_ppc(fitted)
    return fitted


def _group(tree: xr.DataTree, name: str) -> xr.Dataset | None:
    return tree[name].to_dataset() if name in tree.children else None


def interactive() -> bool:
    """Whether someone is watching: stderr is a terminal, or the code runs in a Jupyter kernel.

    A Jupyter kernel's stderr is not a terminal, but its cells show a progress bar
    (:func:`bayeval.models.progress.watched`, which the models' own notices read).
    """
    return watched()


def _attrs(data, spec, engine, requested, seed, draws, chains, tune, priors) -> dict:
    versions = {pkg: version(pkg) for pkg in ("pymc", "arviz", "numpy", "xarray", "nutpie")}
    try:
        versions["bayeval"] = version("bayeval")
    except Exception:  # a source tree without install
        versions["bayeval"] = "unknown"
    return {
        "model": spec.name,
        "sampler": engine,
        "sampler_requested": requested,
        "seed": seed,
        "draws": draws,
        "chains": chains,
        "tune": tune if engine in ("nutpie", "pymc") else 0,
        "priors": json.dumps(priors),
        "estimands": list(spec.estimands),
        "missing_policy": data.missing or "none",
        "input_hash": data.fingerprint(),
        "created_at": datetime.now(UTC).isoformat(),
        "library_versions": json.dumps(versions),
        "inference_library": engine if engine in ("nutpie", "pymc") else "bayeval",
        "inference_library_version": versions.get(engine, versions["bayeval"]),
    }


def _warn_single_trial(data, model: str):
    """Warn, in the words of ``model``, where a system has at most one trial per task."""
    trials = data.dataset["trials"].values
    single = [
        s for s, row in zip(data.systems, trials, strict=True) if row[row > 0].max(initial=0) <= 1
    ]
    if not single:
        return
    message = get_model(model).single_trial_warning(data)
    warnings.warn(
        f"{message} (systems: {single[:3]}{' ...' if len(single) > 3 else ''})",
        BayevalWarning,
        stacklevel=4,
    )


#: What to do when a fit fails its gates.
GATES_ADVICE = (
    "Increase draws and tune, check the priors, or use sampler='grid' where the model allows"
)


def gate_failures(diagnostics: dict, chains: int) -> dict[str, str]:
    """The MCMC gates (:data:`GATES`) a fit's convergence summary fails, each with its problem.

    Parameters
    ----------
    diagnostics : dict
        The convergence summary (:attr:`bayeval.Results.diagnostics`); empty for the grid and
        conjugate engines, which have no gates.
    chains : int
        The fit's chains (the ESS gate is per chain).

    Returns
    -------
    dict
        Gate name (``"divergences"``, ``"max_rhat"``, ``"min_ess_bulk"``, ``"min_ess_tail"``,
        ``"min_bfmi"``) to the problem in words; empty when the fit passes.

    Examples
    --------
    >>> from bayeval.inference import gate_failures
    >>> diag = {"max_rhat": 1.036, "min_ess_bulk": 45.0, "min_ess_tail": 900.0, "divergences": 34}
    >>> list(gate_failures(diag, chains=4))
    ['divergences', 'max_rhat', 'min_ess_bulk']
    """
    problems: dict[str, str] = {}
    if not diagnostics:
        return problems
    if diagnostics.get("divergences", 0) > 0:
        problems["divergences"] = f"{diagnostics['divergences']} divergent transitions"

    def at(key):  # the parameter that has the worst value
        return f" in {diagnostics[key + '_parameter']}" if key + "_parameter" in diagnostics else ""

    if diagnostics.get("max_rhat", 1.0) > GATES["max_rhat"]:
        problems["max_rhat"] = (
            f"r-hat up to {diagnostics['max_rhat']:.3f}{at('max_rhat')} (gate {GATES['max_rhat']})"
        )
    min_ess = GATES["min_ess_per_chain"] * chains
    for kind in ("bulk", "tail"):
        key = f"min_ess_{kind}"
        if diagnostics.get(key, math.inf) < min_ess:
            problems[key] = f"{kind} ESS down to {diagnostics[key]:.0f}{at(key)} (gate {min_ess})"
    if diagnostics.get("min_bfmi", 1.0) < GATES["min_bfmi"]:
        problems["min_bfmi"] = (
            f"BFMI down to {diagnostics['min_bfmi']:.2f} (gate {GATES['min_bfmi']})"
        )
    return problems


def gate_attrs(*posteriors) -> dict:
    """``gates_failed`` and ``gates_note`` of the fits an analysis reads, for its attrs.

    Parameters
    ----------
    *posteriors : Posterior
        The fits (a comparison's fit and, under missing bounds, its crossed fits).

    Returns
    -------
    dict
        ``gates_failed``: the MCMC gates (:data:`GATES`, :func:`gate_failures`) that any of
        the fits failed, empty when all pass (as grid and conjugate fits always do);
        ``gates_note``: what failed and what to do (empty when nothing failed). A decision
        read off such draws is ``"undecided"`` (:func:`bayeval.planning.decide`).

    Examples
    --------
    >>> from bayeval.inference import gate_attrs
    >>> from bayeval.testing import fake_results
    >>> gate_attrs(fake_results())
    {'gates_failed': [], 'gates_note': ''}
    """
    failed: dict[str, None] = {}
    problems: dict[str, None] = {}
    for posterior in posteriors:
        attrs = posterior._tree.attrs
        found = gate_failures(posterior.diagnostics, int(attrs.get("chains", 1)))
        failed.update(dict.fromkeys(found))
        problems.update(dict.fromkeys(found.values()))
    note = "; ".join(problems) + ". " + GATES_ADVICE if problems else ""
    return {"gates_failed": list(failed), "gates_note": note}


def _check_gates(diag: dict, chains: int, strict: bool):
    problems = gate_failures(diag, chains)
    if not problems:
        return
    message = (
        "the MCMC diagnostics fail their gates: "
        + "; ".join(problems.values())
        + ". "
        + GATES_ADVICE
    )
    if strict:
        raise RuntimeError(message)
    warnings.warn(message, BayevalWarning, stacklevel=4)


def _warn_ppc(posterior: Posterior):
    check = checks.ppc(posterior)
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
        stacklevel=4,
    )
