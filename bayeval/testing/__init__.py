"""Fake posteriors for fast tests: trees shaped as :func:`bayeval.fit` shapes them, no sampler.

:func:`fake_results` returns a :class:`~bayeval.Results` whose tree has the groups, variables,
dims, coordinates and root attributes that ``fit`` gives the same data and model (``task_rates``,
``task_effects``, ``sample_stats``, ``log_likelihood``, ``posterior_predictive`` and
``posterior_predictive_stats`` where a fit has them; clusters, strata, runs,
``missing="bounds"`` and partial-credit scores included), with parameter draws that are
plausible for the data, made in a fraction of a second:

* ``beta_binomial``: the exact conjugate posterior, as a fit draws it;
* ``hierarchical``: each population's mean and concentration drawn from a normal approximation
  (on the logit and log scales) around their moment estimates; the task rates, where stored,
  from their exact conditional ``Beta(alpha + c, beta + n - c)`` given each draw;
* ``logit_normal``: spreads drawn around values matched to the data's rates (each system's mean
  rate and the spread of its task rates, split between the components as the empirical logits
  split it), cluster effects around the clusters' shrunk rates, and intercepts at which each
  system's tasks average its rate; the latent forms' task effects from each task's conditional
  given those values (on a grid, each cell's task-by-system effect integrated out);
* ``zoib``: every effect drawn around an additive split of the logits of the cells' mean
  scores, the interior and 0/1 parts sharing their mean (``delta`` near 0);
* ``judge``: each system's sensitivity and specificity from the Beta posteriors of its
  labelled attempts' counts, and the true outcome as ``logit_normal``'s full-latent draws
  of every judged attempt, an unlabelled verdict counted as the share of the system's
  labelled attempts with that verdict that were successes.

So ``draws(metric, k, estimand)``, which every analysis reads, is centred near the observed rates,
but the draws are not the model's posterior: use a fake to exercise code that reads a fit, never
to check a number a fit computes. ``attrs["sampler"]`` is ``"fake"``; analyses that refit
(``compare`` of a ``logit_normal`` fit under ``missing="bounds"``) refuse it. :func:`fake_data`
makes small evaluation data of every kind, optionally simulated from known rates.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pandas as pd
import xarray as xr
from scipy import special

from bayeval._validate import validate_choice, validate_positive_int, validate_seed
from bayeval.data import EvalData, from_counts, from_frame, require_valid_outcomes
from bayeval.models import (
    _groups,
    beta_binomial,
    get_model,
    hierarchical,
    irt,
    judge,
    logit_normal,
    zoib,
)
from bayeval.models._beta_family import counts_by_bound
from bayeval.models.base import MODEL_DATA_ATTRS
from bayeval.posterior import Posterior
from bayeval.results import Results
from bayeval.testing._draws import (
    hierarchical_draws,
    judge_draws,
    logit_normal_draws,
    zoib_draws,
)

__all__ = ["FAKE_SAMPLER", "MODELS", "fake_data", "fake_posterior", "fake_results"]

#: ``attrs["sampler"]`` of every fake tree.
FAKE_SAMPLER = "fake"
# as bayeval.fit: stored per-task draws up to these many numbers
_TASK_DRAWS_LIMIT = 4_000_000
# "auto" stores the log_likelihood group where it costs no time to speak of (not a quadrature),
# as fit stores it up to bayeval.models._groups.LOG_LIKELIHOOD_SECONDS: fakes are for fast tests
_LOG_LIKELIHOOD_SECONDS = 0.0


# -- data ----------------------------------------------------------------------------------------
def fake_data(
    truth=None,
    *,
    systems=None,
    trials: int = 4,
    clusters=None,
    strata=None,
    runs: int | None = None,
    missing: str | None = None,
    scores: bool = False,
    seed: int = 0,
) -> EvalData:
    """Small evaluation data of every kind, simulated from known task rates.

    Parameters
    ----------
    truth : array_like, optional
        True rates ``(system, task)`` (or ``(task,)`` for one system): the success probability
        of each attempt, or the mean score with ``scores``. Default: two systems on 12 tasks,
        ``logit p = a[s] + e[j]`` with ``a = (-0.25, 0.25)`` and ``e ~ Normal(0, 1.5)``.
    systems : list, optional
        System labels (default ``"A"``, ``"B"``, ...); with ``runs``, the recipes.
    trials : int, default 4
        Attempts per system and task.
    clusters, strata : int or list, optional
        A number of clusters (strata), assigned to the tasks in turn, or one label per task.
    runs : int, optional
        Each system becomes a recipe with this many training runs (``from_frame(run=)``),
        each run's logits shifted by a ``Normal(0, 0.3)`` draw.
    missing : {"fail", "exclude", "bounds"}, optional
        About one attempt in ten times out (status ``"timeout"``, no outcome), read under this
        policy.
    scores : bool, default False
        Partial-credit scores: half the attempts graded 0/1, the others ``Beta(4 p, 4 (1 - p))``
        (the ``zoib`` model's data).
    seed : int, default 0

    Returns
    -------
    EvalData

    Examples
    --------
    >>> from bayeval.testing import fake_data
    >>> data = fake_data(clusters=3, missing="bounds")
    >>> data.systems, data.dataset.sizes["task"], data.missing, data.has_clusters
    (['A', 'B'], 12, 'bounds', True)
    >>> fake_data([[0.2, 0.9, 0.5]], trials=10, scores=True).has_partial_credit
    True
    """
    trials = validate_positive_int("trials", trials)
    rng = np.random.default_rng([validate_seed(seed), 100])
    if truth is None:
        n_sys = 2 if systems is None else len(systems)
        logits = np.linspace(-0.25, 0.25, n_sys)[:, None] + rng.normal(0.0, 1.5, 12)
        truth = special.expit(logits)
    truth = np.atleast_2d(np.asarray(truth, dtype=float))
    if truth.ndim != 2 or not np.all((truth >= 0) & (truth <= 1)):
        raise ValueError("truth must hold rates in [0, 1], shaped (system, task) or (task,)")
    n_sys, n_task = truth.shape
    if systems is None:
        systems = [chr(ord("A") + i) for i in range(n_sys)] if n_sys <= 26 else None
        systems = systems or [f"system_{i}" for i in range(n_sys)]
    systems = list(systems)
    if len(systems) != n_sys:
        raise ValueError(f"systems must hold {n_sys} labels (truth's first axis)")
    tasks = [f"t{j}" for j in range(n_task)]
    cluster_labels = _task_labels("clusters", clusters, n_task, "c")
    stratum_labels = _task_labels("strata", strata, n_task, "s")
    if runs is None and missing is None and not scores:
        labels = {"clusters": cluster_labels, "strata": stratum_labels}
        return from_counts(rng.binomial(trials, truth), trials, tasks, systems, **labels)
    if missing is not None:
        validate_choice("missing", missing, ("fail", "exclude", "bounds"))
    n_runs = 1 if runs is None else validate_positive_int("runs", runs)
    index = np.indices((n_sys, n_runs, n_task, trials)).reshape(4, -1)  # one row an attempt
    system, run, task, trial = index
    shift = rng.normal(0.0, 0.3 if runs else 0.0, (n_sys, n_runs))[system, run]
    p = special.expit(special.logit(np.clip(truth, 1e-9, 1 - 1e-9))[system, task] + shift)
    outcome = (rng.random(p.size) < p).astype(float)
    if scores:  # half the attempts earn partial credit
        partial = rng.beta(4 * p + 1e-3, 4 * (1 - p) + 1e-3)
        outcome = np.where(rng.random(p.size) < 0.5, partial, outcome)
    df = pd.DataFrame({"system": np.asarray(systems, dtype=object)[system], "trial": trial})
    df["task"] = np.asarray(tasks, dtype=object)[task]
    for name, labels in (("cluster", cluster_labels), ("stratum", stratum_labels)):
        if labels is not None:
            df[name] = np.asarray(labels, dtype=object)[task]
    df["outcome"], df["status"] = outcome, "ok"
    if runs is not None:
        df["run"] = run
    if missing is not None:
        lost = rng.random(len(df)) < 0.1
        lost[rng.integers(len(df))] = True
        df.loc[lost, "outcome"] = np.nan
        df.loc[lost, "status"] = "timeout"
    outcome = {"score": "outcome", "success": None} if scores else {"success": "outcome"}
    return from_frame(
        df,
        trial="trial",
        cluster="cluster" if cluster_labels is not None else None,
        stratum="stratum" if stratum_labels is not None else None,
        status="status" if missing is not None else None,
        missing=missing,
        run="run" if runs is not None else None,
        **outcome,
    )


def _task_labels(name, value, n_task, prefix):
    """One label per task: ``value`` labels given, or that many assigned in turn."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        count = validate_positive_int(name, value)
        return [f"{prefix}{j % count}" for j in range(n_task)]
    labels = list(value)
    if len(labels) != n_task:
        raise ValueError(f"{name} must be a number or hold one label per task ({n_task})")
    return labels


# -- posteriors ----------------------------------------------------------------------------------
def fake_results(
    data: EvalData | None = None,
    *,
    model: str = "hierarchical",
    draws: int = 200,
    chains: int = 2,
    seed: int = 0,
    truth=None,
    priors: dict | None = None,
    form: str | None = None,
    task_draws="auto",
    log_likelihood="auto",
) -> Results:
    """A :class:`~bayeval.Results` shaped as ``bayeval.fit`` shapes it, drawn without a sampler.

    The parameter draws are plausible for the data (see the module docstring) and the tree has
    the groups, variables, dims and attributes of ``bayeval.fit(data, model=model)``.

    Parameters
    ----------
    data : EvalData, optional
        Default: :func:`fake_data` (with ``scores=True`` for the models of scores), simulated from
        ``truth`` where given.
    model : str, optional
        A name in :data:`MODELS` (``"beta_binomial"``, ``"hierarchical"``, ``"logit_normal"``,
        ``"zoib"``, ``"fractional"``, ``"irt"``, ``"judge"``). Default ``"hierarchical"``;
        ``"judge"`` takes judged data (``from_frame(..., judge=, success=, label_design=)``).
    draws, chains : int, default 200 and 2
    seed : int, default 0
        Seeds every draw: the same arguments give the same tree (but ``attrs["created_at"]``).
    truth : array_like, optional
        True rates to simulate the default data from (:func:`fake_data`); not with ``data``.
    priors : dict, optional
        The model's priors, validated and recorded as ``fit`` records them. The draws do not
        depend on them (but the ``beta_binomial`` rates and the fallback of the hierarchical
        concentration where one trial per task leaves it unidentified).
    form : {"collapsed", "full-latent", "task-latent"}, optional
        The ``logit_normal`` form the tree stands for (default: the one ``fit`` would sample,
        :func:`bayeval.models.logit_normal.sampling_form`); the latent forms keep task-effect
        draws in a ``task_effects`` group, from which the tasks estimand is read.
    task_draws, log_likelihood : {"auto", True, False}
        As ``fit``'s: store per-task rate draws (``"auto"``: up to 4 million numbers, not for
        ``logit_normal``) and the ``log_likelihood`` group (``"auto"``: without bounds, up to
        4 million numbers; ``logit_normal``'s, a quadrature per task and draw that takes
        seconds, only when asked for, where a fit stores it unless it would
        take over 30 s); ``attrs["log_likelihood_note"]`` says why where it is not stored.

    Returns
    -------
    Results

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.testing import fake_results
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3], [10, 2, 10, 1, 8, 3]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = fake_results(data, model="hierarchical", seed=1)
    >>> res.tree.attrs["sampler"], sorted(res.tree.children)[:3]
    ('fake', ['constant_data', 'log_likelihood', 'observed_data'])
    >>> res.draws("pass@k", [1, 4], "population").dims
    ('chain', 'draw', 'system', 'k')
    >>> round(float(res.draws("pass@k", 1, "tasks").sel(system="A").mean()), 1)
    0.5
    """
    return Results(
        _tree(data, model, draws, chains, seed, truth, priors, form, task_draws, log_likelihood)
    )


def fake_posterior(data: EvalData | None = None, **options) -> Posterior:
    """:func:`fake_results` (with the same arguments) as a bare Posterior.

    A :class:`~bayeval.posterior.Posterior`: the tree and its metric draws, without the
    analyses' methods.

    Examples
    --------
    >>> from bayeval.testing import fake_data, fake_posterior
    >>> post = fake_posterior(fake_data(scores=True), model="zoib", draws=50)
    >>> post.draws("mean", 1, "population").sizes["draw"]
    50
    """
    return Posterior(fake_results(data, **options).tree)


def _tree(data, model, draws, chains, seed, truth, priors, form, task_draws, log_likelihood):
    validate_choice("model", model, MODELS)
    spec = get_model(model)
    draws = validate_positive_int("draws", draws)
    chains = validate_positive_int("chains", chains)
    seed = validate_seed(seed)
    for name, value in (("task_draws", task_draws), ("log_likelihood", log_likelihood)):
        if value not in ("auto", True, False):
            raise ValueError(f"{name} must be 'auto', True or False; got {value!r}")
    if data is None:
        data = fake_data(truth, scores=spec.scores, seed=seed)
    elif truth is not None:
        raise ValueError("truth= simulates the default data: give data= or truth=, not both")
    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData; got {type(data).__name__}")
    require_valid_outcomes(data)
    if not spec.scores and data.has_partial_credit:
        raise ValueError(
            f"model {model!r} is a model of 0/1 outcomes; these data hold partial-credit "
            "scores: use model='fractional' or 'zoib'"
        )
    if form is not None and spec.sampling_form(data) is None:
        raise ValueError(
            f"form= applies to a model with several forms (logit_normal); {model!r} has one"
        )
    attrs = _attrs(data, model, seed, draws, chains)  # input_hash names the data given
    given = spec.model_data(data, seed=seed)  # as fit takes it (fractional: gridded sums)
    data = spec.sampled_data(given, seed=seed)  # and samples it (fractional: weighted cells)
    attrs.update({k: data.dataset.attrs[k] for k in MODEL_DATA_ATTRS if k in data.dataset.attrs})
    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    rng = np.random.default_rng([seed, 0xFA4E])
    priors, posterior, sample_stats, effects = _FAKES[model](
        data, priors, form, draws, chains, rng, attrs
    )
    attrs["priors"] = json.dumps(priors)
    if sample_stats is not None:
        attrs["diagnostics"] = json.dumps(_diagnostics(posterior, sample_stats))
    groups = {"posterior": posterior, **_groups.data(spec.stored_data(given, data), model)}
    small = task_draws == "auto" and chains * draws * c.size <= _TASK_DRAWS_LIMIT
    if task_draws is True or (small and spec.task_draws_auto):
        scratch = {"/posterior": posterior, "/observed_data": ds}
        if effects is not None:
            scratch["/task_effects"] = effects
        scratch = xr.DataTree.from_dict(scratch)
        scratch.attrs = {"seed": seed, "prior_p": attrs.get("prior_p")}
        p = spec.task_rates(scratch)  # exact given each draw's parameters
        if spec.task_rates_group == "posterior":  # the task rates are the model's parameters
            groups["posterior"] = posterior.assign(p=p)
        else:
            groups["task_rates"] = xr.Dataset({"p": p})
    if effects is not None:
        groups["task_effects"] = effects
    if sample_stats is not None:
        groups["sample_stats"] = sample_stats
    tree = xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items()})
    tree.attrs = attrs
    if bounds is None:  # stored, or a note says why not, as fit does
        if log_likelihood == "auto" and spec.log_likelihood_cost(tree) > _LOG_LIKELIHOOD_SECONDS:
            skipped = "a fake computes a quadrature's only with log_likelihood=True"
        else:
            skipped = _groups.log_likelihood_skipped(tree, log_likelihood)
        if skipped is None:
            loglik = _groups.log_likelihood(tree)  # None where undefined (the judge's), as fit
            if loglik is not None:
                tree["log_likelihood"] = xr.DataTree(loglik)
        else:
            tree.attrs["log_likelihood_note"] = _groups.log_likelihood_note(skipped)
    for group, values in _groups.predictive(tree, seed).items():
        tree[group] = xr.DataTree(values)
    note = _groups.replicate_note(tree)
    if note is not None:
        tree.attrs["posterior_predictive_note"] = note
    return tree


# -- each model's parameter draws: (priors, posterior, sample_stats, task effects) ---------------
def _fake_beta_binomial(data, priors, form, draws, chains, rng, attrs):
    """No draws to make: the conjugate model's task rates are drawn by its own task_rates."""
    priors = beta_binomial.validate_priors(priors)
    attrs["prior_p"] = list(priors["p"])
    return priors, xr.Dataset(coords=_lead(draws, chains)), None, None


def _fake_hierarchical(data, priors, form, draws, chains, rng, attrs):
    priors = hierarchical.validate_priors(priors)
    return priors, hierarchical_draws(data.dataset, priors, draws, chains, rng), None, None


def _fake_logit_normal(data, priors, form, draws, chains, rng, attrs):
    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    priors = logit_normal.validate_priors(priors)
    if form is None:
        form, choice = logit_normal.sampling_form(ds)
    else:
        validate_choice("form", form, ("collapsed", "full-latent", "task-latent"))
        choice = f"form={form!r} as requested of the fake"
    attrs.update(_logit_normal_attrs(ds, form, choice))
    parts = [logit_normal_draws(c[b], n[b], ds, form, draws, chains, rng) for b in range(len(c))]
    posterior = _by_bound(parts, bounds, _lead(draws, chains), ds)
    effects = None
    if "task_effect" in posterior:  # a latent form's task effects: a group of their own
        effects = posterior[["task_effect"]]
        posterior = posterior.drop_vars(["task_effect", "task"])
    return priors, posterior, _sample_stats(draws, chains, bounds, rng), effects


def _fake_fractional(data, priors, form, draws, chains, rng, attrs):
    """The logit-normal fake of the gridded sums of scores (the collapsed form fit samples)."""
    form = "collapsed" if form is None else form
    return _fake_logit_normal(data, priors, form, draws, chains, rng, attrs)


def _fake_zoib(data, priors, form, draws, chains, rng, attrs):
    ds = data.dataset
    c, _, bounds = counts_by_bound(ds)
    priors = zoib.validate_priors(priors)
    attrs["target_accept"] = zoib.target_accept(ds.sizes["task"])
    stats = data.score_statistics()
    parts = [
        zoib_draws(stats.isel(missing_bound=b) if bounds else stats, ds, draws, chains, rng)
        for b in range(len(c))
    ]
    posterior = _by_bound(parts, bounds, _lead(draws, chains), ds)
    return priors, posterior, _sample_stats(draws, chains, bounds, rng), None


def _fake_irt(data, priors, form, draws, chains, rng, attrs):
    """Abilities and difficulties near the systems' and items' standardised logit rates."""
    ds = data.dataset
    reason = get_model("irt").supports(data)
    if reason is not None:
        raise ValueError(reason)
    priors = irt.validate_priors(priors)
    c = ds["successes"].transpose("system", "task").values
    n = ds["trials"].transpose("system", "task").values
    with np.errstate(invalid="ignore", divide="ignore"):
        system_rate = (c.sum(1) + 0.5) / (n.sum(1) + 1.0)
        item_rate = (c.sum(0) + 0.5) / (n.sum(0) + 1.0)
    theta = special.logit(system_rate)
    theta = (theta - theta.mean()) / max(float(theta.std()), 0.5)
    b = -special.logit(item_rate)
    lead = (chains, draws)
    S, J = len(theta), len(b)
    a = np.ones(J) if priors["form"] == "1pl" else np.exp(rng.normal(0.0, 0.2, J))
    out = {
        "theta": (("chain", "draw", "system"), theta + rng.normal(0.0, 0.2, lead + (S,))),
        "b": (("chain", "draw", "task"), b + rng.normal(0.0, 0.2, lead + (J,))),
        "a": (("chain", "draw", "task"), a * np.exp(rng.normal(0.0, 0.1, lead + (J,)))),
        "mu_b": (("chain", "draw"), b.mean() + rng.normal(0.0, 0.1, lead)),
        "sigma_b": (("chain", "draw"), max(float(b.std()), 0.1) * np.exp(rng.normal(0, 0.1, lead))),
        "mu_log_a": (("chain", "draw"), rng.normal(0.0, 0.05, lead)),
    }
    if priors["form"] == "2pl":
        out["sigma_log_a"] = (("chain", "draw"), 0.2 * np.exp(rng.normal(0.0, 0.1, lead)))
    posterior = xr.Dataset(
        out,
        coords={**_lead(draws, chains), "system": ds["system"].values, "task": ds["task"].values},
    )
    attrs.update({"target_accept": irt.TARGET_ACCEPT, "form": priors["form"]})
    return priors, posterior, _sample_stats(draws, chains, None, rng), None


def _fake_judge(data, priors, form, draws, chains, rng, attrs):
    """The true outcome near every judged attempt's, the judge's error near its labels'."""
    reason = get_model("judge").supports(data)
    if reason is not None:
        raise ValueError(reason)
    priors = judge.validate_priors(priors)
    form_name, choice = get_model("judge").sampling_form(data)
    attrs.update(
        {
            "form": form_name,
            "form_choice": choice,
            "target_accept": get_model("judge").target_accept(
                form_name, data.dataset.sizes["judge"]
            ),
            "task_effects": (
                "drawn from their conditionals" if form_name == judge.COLLAPSED else "non-centred"
            ),
            "judge": ", ".join(str(j) for j in data.judges),
        }
    )
    posterior, effects = judge_draws(data.dataset, draws, chains, rng)
    posterior = _by_bound([posterior], None, _lead(draws, chains), data.dataset)
    effects = effects.assign_coords(_lead(draws, chains))
    return priors, posterior, _sample_stats(draws, chains, None, rng), effects


#: Model name -> its fake's parameter draws.
_FAKES = {
    "beta_binomial": _fake_beta_binomial,
    "hierarchical": _fake_hierarchical,
    "logit_normal": _fake_logit_normal,
    "zoib": _fake_zoib,
    "fractional": _fake_fractional,
    "irt": _fake_irt,
    "judge": _fake_judge,
}
#: The models a fake stands for.
MODELS = tuple(_FAKES)


def _lead(draws, chains) -> dict:
    return {"chain": np.arange(chains), "draw": np.arange(draws)}


def _attrs(data, model, seed, draws, chains) -> dict:
    """The root attributes ``fit`` records, marked as a fake's (``sampler="fake"``)."""
    versions = _versions()
    return {
        "model": model,
        "sampler": FAKE_SAMPLER,
        "sampler_requested": FAKE_SAMPLER,
        "seed": seed,
        "draws": draws,
        "chains": chains,
        "tune": 0,
        "priors": "null",
        "estimands": list(get_model(model).estimands),
        "missing_policy": data.missing or "none",
        "input_hash": data.fingerprint(),
        "created_at": datetime.now(UTC).isoformat(),
        "library_versions": json.dumps(versions),
        "inference_library": "bayeval.testing",
        "inference_library_version": versions["bayeval"],
        "model_requested": model,
        "model_choice": (
            f"model={model!r}: a fake posterior of bayeval.testing, drawn without a "
            "sampler (not a fit: its numbers only exercise code that reads a fit)"
        ),
        "prior_note": "",
    }


@lru_cache(maxsize=1)
def _versions() -> dict:
    out = {}
    for package in ("pymc", "arviz", "numpy", "xarray", "nutpie", "bayeval"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "unknown"
    return out


def _logit_normal_attrs(ds, form, choice) -> dict:
    """The attributes with which ``fit`` describes the form it sampled, for that form."""
    layout = logit_normal.Layout.from_dataset(ds)
    out = {
        "form": form,
        "form_choice": choice,
        "target_accept": logit_normal.target_accept(form, ds.sizes["task"]),
    }
    if "cluster" in ds.coords:
        centred = logit_normal.cluster_parametrisation(ds)
        out["cluster_effects"] = "centred" if centred else "non-centred"
    if form == "full-latent":
        centred = logit_normal.task_parametrisation(ds)
        out["task_effects"] = "centred" if centred else "non-centred"
        if layout.paired:
            out["task_system_effects"] = (
                "integrated (tables of the most common counts), sampled elsewhere"
                if logit_normal.integrates_cells(ds)
                else "sampled"
            )
        if logit_normal.coordinates(layout, latent_tasks=ds.sizes["task"]).cluster_pairs:
            sums = "centred" if layout.task_centred else "standardised"
            out["cluster_effects"] = (
                f"rotated with their tasks' mean effects: the sums {sums}, the spreads polar"
            )
    if form == "task-latent":
        out["task_effects"] = "centred"
        if "cluster" in ds.coords:
            out["cluster_effects"] = "centred (cluster-by-system non-centred)"
    if form in ("collapsed", "task-latent"):
        out["intercepts"] = "attenuated" if logit_normal.ATTENUATED_INTERCEPTS else "plain"
        if logit_normal.coordinates(layout).level_weights:
            out["intercept_level"] = "task-weighted"
    return out


def _by_bound(parts, bounds, lead, ds) -> xr.Dataset:
    """One bound's posterior, or the bounds' stacked on a leading ``missing_bound`` dim."""
    posterior = parts[0] if bounds is None else xr.concat(parts, dim="missing_bound")
    posterior = posterior.assign_coords(system=ds["system"].values, **lead)
    if "task" in posterior.dims:
        posterior = posterior.assign_coords(task=ds["task"].values)
    return posterior if bounds is None else posterior.assign_coords(missing_bound=bounds)


# -- sampler statistics and the groups after the posterior ---------------------------------------
def _sample_stats(draws, chains, bounds, rng) -> xr.Dataset:
    """The statistics a NUTS fit keeps, as an ideal sampler's: no divergences, a fixed step."""
    shape = (len(bounds or [None]), chains, draws)
    stats = xr.Dataset(
        {
            "diverging": (("missing_bound", "chain", "draw"), np.zeros(shape, np.int8)),
            "energy": (("missing_bound", "chain", "draw"), rng.standard_normal(shape)),
            "depth": (("missing_bound", "chain", "draw"), np.full(shape, 3, np.uint64)),
            "n_steps": (("missing_bound", "chain", "draw"), np.full(shape, 7, np.uint64)),
            "step_size": (("missing_bound", "chain", "draw"), np.full(shape, 0.5)),
        },
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )
    if bounds is None:
        return stats.isel(missing_bound=0, drop=True)
    return stats.assign_coords(missing_bound=bounds)


def _diagnostics(posterior, sample_stats) -> dict:
    """``fit``'s convergence summary as independent draws (the fake's) have it.

    r-hat 1, as many effective draws as draws, no divergences, and the BFMI of the energies.
    """
    energy = sample_stats["energy"].transpose(..., "draw").values
    bfmi = (np.diff(energy, axis=-1) ** 2).mean(axis=-1) / energy.var(axis=-1)
    size = float(posterior.sizes["chain"] * posterior.sizes["draw"])
    return {
        "max_rhat": 1.0,
        "min_ess_bulk": size,
        "min_ess_tail": size,
        "divergences": 0,
        "min_bfmi": float(np.min(bfmi)),
    }
