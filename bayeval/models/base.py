"""The model protocol: what every model is to :func:`bayeval.inference.infer`.

Here too are the defaults the models share.

A model is one object (:class:`Model`), registered by name in :data:`bayeval.models.MODELS`. Fitting
asks it, in order:

* :meth:`Model.supports` whether it can fit the data (the reason it cannot, or None);
* :meth:`Model.engine` which engine a requested sampler runs (:attr:`Model.engines`);
* :meth:`Model.single_trial_warning` and :meth:`Model.warn` what the data should be warned of;
* :meth:`Model.validate_priors` for its priors, with defaults filled in;
* :meth:`Model.sample` for the posterior draws: a DataTree whose children are the groups the
  model fills (``posterior``, ``sample_stats``, ``task_effects``) and whose attributes are the
  sampling facts to record (``tune``, a sampled form, a target acceptance, ...);
* :meth:`Model.task_rate_draws` for per-task rate draws, where they are stored.

A fitted tree is read back through :meth:`Model.readout` (the ``population`` and ``tasks``
estimands), :meth:`Model.task_rates`, :meth:`Model.predictive`, :meth:`Model.replicator` and
:meth:`Model.pattern_log_likelihood` (with its cost, :meth:`Model.log_likelihood_cost`, and
:meth:`Model.log_coefficients`). The facts about a model that fitting needs are class
attributes: :attr:`Model.paired`, :attr:`Model.posterior_vars`, :attr:`Model.task_draws_auto`,
:attr:`Model.task_rates_group`.

:func:`nuts` is the NUTS loop the sampled models share (one run per missing-outcome bound, the
draws joined over the bounds), :func:`pymc_nuts` NUTS on a PyMC model.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, NamedTuple

import numpy as np
import pymc as pm
import xarray as xr
from scipy import special

from bayeval.data.groups import dataset_of

__all__ = [
    "DEFAULT_DRAWS",
    "DEFAULT_TUNE",
    "NUTS_ENGINES",
    "Model",
    "Patterns",
    "Rates",
    "Replicator",
    "each_task",
    "finish_bounds",
    "kept_stats",
    "nuts",
    "pymc_nuts",
]

#: NUTS warm-up draws per chain when ``tune`` is not given (:meth:`Model.default_tune`).
DEFAULT_TUNE = 1000
#: Posterior draws per chain where ``draws`` is not given (:meth:`Model.default_draws`).
DEFAULT_DRAWS = 1000

#: The engines that run NUTS (a Markov chain: minutes where the others take seconds).
NUTS_ENGINES = ("nutpie", "pymc", "numpyro")

#: Sampler statistics a fit keeps (the rest of what the samplers record is dropped).
KEPT_STATS = ("diverging", "energy", "tree_depth", "depth", "n_steps", "step_size")


class Patterns(NamedTuple):
    """Log-likelihood per count pattern (:meth:`Model.pattern_log_likelihood`)."""

    values: np.ndarray  # (draw, pattern), draws flattened over (chain, draw)
    first: np.ndarray  # (pattern,) the lowest task index of each pattern
    inverse: np.ndarray  # (task,) each task's pattern


#: Draws a block of tasks' replicated observations (:meth:`Model.replicator`).
Replicator = Callable[[Sequence[np.random.Generator], np.ndarray], dict[str, np.ndarray]]
#: Draws a block of tasks' replicated rates (:meth:`Model.replicate_rates`).
Rates = Callable[[Sequence[np.random.Generator], np.ndarray], np.ndarray]


def each_task(rngs: Sequence[np.random.Generator], draw: Callable, *arrays) -> np.ndarray:
    """``draw(rng, *columns)`` for each task of a block, stacked on the last axis.

    ``arrays`` (broadcast together) have the block's tasks on their last axis, one per
    generator of ``rngs``; each task's draws come from its own generator, so that they do not
    depend on how the tasks are blocked.
    """
    # task-major copies: each task's cells contiguous, not strided across the block
    major = [np.ascontiguousarray(np.moveaxis(a, -1, 0)) for a in np.broadcast_arrays(*arrays)]
    columns = [draw(rng, *(a[i] for a in major)) for i, rng in enumerate(rngs)]
    return np.moveaxis(np.stack(columns), 0, -1)


#: Attributes of :meth:`Model.sampled_data`'s dataset the fitted tree keeps (``fractional``'s
#: estimated dispersion and weights).
MODEL_DATA_ATTRS = ("dispersion",)


class Model(ABC):
    """One statistical model: how it fits data and how its fitted tree is read.

    Subclasses set the class attributes and implement the abstract methods; the other methods
    are defaults they may override.

    Examples
    --------
    >>> from bayeval.models import get_model
    >>> model = get_model("hierarchical")
    >>> model.name, model.engine("auto"), model.paired
    ('hierarchical', 'grid', False)
    """

    #: The name the registry knows the model by (``fit(..., model=name)``).
    name: ClassVar[str] = ""
    #: The estimands its fits answer (``"tasks"``, ``"population"``).
    estimands: ClassVar[tuple[str, ...]] = ()
    #: Requested sampler -> the engine that runs it (``"auto"`` included).
    engines: ClassVar[dict[str, str]] = {}
    #: Whether comparisons of systems on shared tasks are paired (shared task effects).
    paired: ClassVar[bool] = False
    #: Whether the model fits partial-credit scores in [0, 1] (their mean score), not only 0/1
    #: outcomes.
    scores: ClassVar[bool] = False
    #: Whether a comparison's crossed missing-outcome bounds need one joint fit per bound (the
    #: systems share task effects, so the bounds' draws cannot be crossed after the fact).
    crossed_bounds_refit: ClassVar[bool] = False
    #: Whether :meth:`population` and :meth:`tasks` take ``systems`` (a system's draws do not
    #: depend on the systems read beside it).
    subsets: ClassVar[bool] = False
    #: The sampled parameters whose convergence diagnostics are checked against the gates.
    posterior_vars: ClassVar[tuple[str, ...]] = ()
    #: Whether ``task_draws="auto"`` stores per-task rate draws when they are few.
    task_draws_auto: ClassVar[bool] = True
    #: The group stored task-rate draws go to: their own, or the posterior (whose parameters
    #: they are in a model of independent tasks).
    task_rates_group: ClassVar[str] = "task_rates"

    # -- fitting -------------------------------------------------------------------------------
    def supports(self, data) -> str | None:
        """Why the model cannot fit ``data``, or None where it can.

        The default is a model of 0/1 outcomes: it refuses scores strictly between 0 and 1.
        """
        if not data.has_partial_credit:
            return None
        n_mid = int(data.dataset["score_nmid"].sum())
        return (
            f"model {self.name!r} is a model of 0/1 outcomes, but {n_mid} valid "
            "score(s) lie strictly between 0 and 1: fit model='fractional' (the mean "
            "score; or 'zoib'), or threshold the scores into a success= column first if "
            "full credit is what counts"
        )

    def model_data(self, data, *, seed: int = 0):
        """The data the model fits: ``data`` itself, or the model's view of it.

        A model whose likelihood reads other counts than the successes returns the data with
        them in place (``fractional``: each cell's sum of scores, on its grid from ``seed``);
        the fitted tree holds them.
        """
        return data

    def sampled_data(self, data, *, seed: int = 0):
        """The data the sampler and the readouts read: :meth:`model_data`'s, or a view of it.

        Called after the priors and warnings are chosen from :meth:`model_data`'s data, so a
        view that reweights the cells (``fractional``: each graded cell's likelihood counted
        ``1 / dispersion`` times, as extra attempts) leaves those choices to the attempts
        run. The fitted tree holds what :meth:`stored_data` makes of them.
        """
        return data

    def stored_data(self, data, sampled) -> xr.Dataset:
        """The dataset the fitted tree holds, of :meth:`model_data`'s and :meth:`sampled_data`'s.

        ``sampled``'s, unless the model's sampled view differs from the attempts run
        (``fractional``: ``data``'s, with the sampled counts beside them), where
        :meth:`fitted_data` reads them back.
        """
        return sampled.dataset

    def fitted_data(self, tree) -> xr.Dataset:
        """The data a fitted tree's model read, as the readouts read them (its EvalData dataset)."""
        return dataset_of(tree)

    def runs_nuts(self, sampler: str) -> bool:
        """Whether a fit with ``sampler`` runs NUTS (:data:`NUTS_ENGINES`: minutes, not seconds).

        False for a sampler the model does not run.
        """
        return self.engines.get(sampler) in NUTS_ENGINES

    def engine(self, sampler: str) -> str:
        """The engine a requested ``sampler`` runs; a ValueError if the model has none."""
        if sampler not in self.engines:
            raise ValueError(
                f"model {self.name!r} runs with sampler in {sorted(self.engines)}; got {sampler!r}"
            )
        return self.engines[sampler]

    def default_tune(self, form: str | None = None) -> int:
        """NUTS warm-up draws per chain when ``tune`` is not given, for a sampled ``form``."""
        return DEFAULT_TUNE

    def default_draws(self, form: str | None = None) -> int:
        """Posterior draws per chain when ``draws`` is not given, for a sampled ``form``."""
        return DEFAULT_DRAWS

    def sampling_form(self, data, sampler: str = "auto") -> tuple[str, str] | None:
        """The form of the model a fit of ``data`` with ``sampler`` samples, and why.

        None (the default) where the model has one form.
        """
        return None

    def single_trial_warning(self, data) -> str:
        """What one trial per task means for this model's answers (the warning's text)."""
        return (
            "with one trial per task the spread of rates between tasks is not "
            "identified: pass@1 of the population is, but pass@k and pass^k for k > 1 "
            "and the 'tasks' estimand lean on the concentration prior"
        )

    def warn(self, data, priors) -> None:  # noqa: B027 - a default that does nothing
        """Warn of what else in ``data`` (under the ``priors`` asked for) limits the answers."""

    def data_priors(self, data, priors) -> tuple[dict | None, str]:
        """Defaults that depend on what ``data`` can identify, and a note saying which.

        Returns the priors to use (those asked for, with any data-dependent default added
        where the user gave none) and a note for the fit's attrs (empty when nothing was
        chosen from the data). The base model's defaults do not depend on the data.
        """
        return priors, ""

    @abstractmethod
    def validate_priors(self, priors) -> dict:
        """The priors with defaults filled in, checked."""

    @abstractmethod
    def build(self, data, priors=None):
        """The model as the sampler sees it (a ``pm.Model`` or a compiled kernel)."""

    @abstractmethod
    def sample(
        self,
        data,
        *,
        sampler: str = "auto",
        draws: int = 1000,
        chains: int = 4,
        tune: int | None = None,
        seed: int = 0,
        priors=None,
        progress: bool = False,
    ) -> xr.DataTree:
        """Posterior draws of the model on ``data``.

        Returns
        -------
        xarray.DataTree
            Children ``posterior`` (over ``chain``, ``draw``), and where the engine has them
            ``sample_stats`` and ``task_effects``; attributes ``tune`` (the warm-up run, None
            where no sampler warms up) and the model's facts to record with the fit.
        """

    def sample_bound(
        self,
        data,
        priors: dict,
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        engine: str,
        progress: bool,
        cores: int,
        missing_bound=None,
        form: str | None = None,
    ) -> tuple[xr.Dataset, xr.DataTree]:
        """One NUTS run of :func:`nuts` (one missing-outcome bound).

        The named posterior and the sampler's trace.
        """
        raise NotImplementedError(f"model {self.name!r} is not sampled with NUTS")

    def label_draws(self, posterior: xr.Dataset, data) -> xr.Dataset:
        """NUTS draws (:func:`nuts`) with any labels the model's dims need.

        Those are labels beyond the systems and tasks.
        """
        return posterior

    def task_rate_draws(
        self, data, *, priors, seed: int, posterior: xr.Dataset, task_effects=None
    ) -> xr.DataArray:
        """Per-task rate draws ``(chain, draw, system, task[, missing_bound])`` of a fit."""
        ds = data.dataset
        groups = {"/posterior": posterior, "/observed_data": ds}
        if task_effects is not None:
            groups["/task_effects"] = task_effects
        tree = xr.DataTree.from_dict(groups)
        tree.attrs = {"seed": seed}
        return self.task_rates(tree)

    # -- reading a fitted tree -----------------------------------------------------------------
    def readout(self, tree, metric, ks, estimand, *, shared=None, tau=None, **options):
        """Draws of ``metric`` at each of ``ks`` for ``estimand`` from a fitted tree.

        By :meth:`population` or :meth:`tasks` (over the ``shared`` tasks only, if given).

        Examples
        --------
        >>> import numpy as np, bayeval as be
        >>> from bayeval.models import get_model
        >>> res = be.fit(be.from_counts([[9, 1, 10, 0]], trials=10), draws=50, chains=1,
        ...              seed=0)
        >>> get_model(res.model).readout(res.tree, "pass@k", np.array([1]), "tasks").dims
        ('chain', 'draw', 'system', 'k')
        """
        if estimand == "population":
            return self.population(tree, metric, ks, tau=tau, **options)
        if shared is not None:
            options["shared"] = shared
        return self.tasks(tree, metric, ks, tau=tau, **options)

    @abstractmethod
    def population(self, tree, metric, ks, *, tau=None) -> xr.DataArray:
        """Draws of ``metric`` for a new task, ``(chain, draw, system[, missing_bound], k)``."""

    @abstractmethod
    def tasks(self, tree, metric, ks, *, shared=None, tau=None) -> xr.DataArray:
        """Draws of the mean of ``metric`` over these tasks."""

    @abstractmethod
    def task_rates(self, tree, systems=None) -> xr.DataArray:
        """Per-task rate draws ``(chain, draw, system, task[, missing_bound])``."""

    @abstractmethod
    def predictive(self, tree) -> xr.Dataset:
        """Statistics of replicated new tasks, ``posterior_predictive_stats`` (or empty)."""

    def observations(self, ds: xr.Dataset) -> tuple[str, ...]:
        """The per-cell observations the model replicates in data ``ds``.

        The first is the one each task's total (``task_total``) sums; the default
        ``("successes",)``.
        """
        return ("successes",)

    def replicator(self, tree) -> Replicator:
        """A function drawing the replicated data a block of tasks at a time.

        ``draw(rngs, tasks)``: ``tasks`` an index array of tasks and ``rngs`` one generator per
        task (the task's own stream, so that its replicate is the same whichever tasks are
        drawn with it: :func:`each_task`); returns each of :meth:`observations` as an array
        ``(draw, system, len(tasks))``, the draws flattened over ``(chain, draw)``. One
        replicated data set per posterior draw, from the parameters the log-likelihood is
        conditioned on (:meth:`pattern_log_likelihood`), the rest drawn afresh, so that
        LOO-PIT weighs each replicate by its draw's likelihood. The work that does not depend
        on the tasks (the parameters per draw) is done once, here. The default:
        ``successes``, binomial counts with the data's trials at the rates of
        :meth:`replicate_rates` (zero where a cell has no trial); a fit without missing-outcome
        bounds.
        """
        n = dataset_of(tree)["trials"].transpose("system", "task").values.astype(np.int64)
        rates = self.replicate_rates(tree)
        one_trial = n.max(initial=0) <= 1  # a uniform under p (a tenth the time)

        def draw(rngs: Sequence[np.random.Generator], tasks: np.ndarray) -> dict[str, np.ndarray]:
            p = np.nan_to_num(np.clip(rates(rngs, tasks), 0.0, 1.0))
            trials = n[None, :, tasks]
            if one_trial:
                hits = each_task(rngs, lambda rng, q: rng.random(q.shape) < q, p)
                return {"successes": hits * trials}
            return {"successes": each_task(rngs, lambda rng, t, q: rng.binomial(t, q), trials, p)}

        return draw

    def replicate_rates(self, tree) -> Rates:
        """Each cell's rate in a replicated data set: ``rates(rngs, tasks)``.

        As :meth:`replicator`'s function: an array ``(draw, system, len(tasks))``.
        """
        raise NotImplementedError(f"model {self.name!r} draws no replicated rates")

    def log_coefficients(self, ds: xr.Dataset) -> np.ndarray:
        """The log combinatorial coefficient of each cell's counts, ``(system, task)``.

        The log-likelihood of a task adds them (:meth:`pattern_log_likelihood` leaves them
        out), so that every model's is the probability of the same counts. The default:
        ``log C(n, c)`` of the successes among the trials (zero where a cell has none).
        """
        c = ds["successes"].transpose("system", "task").values
        n = ds["trials"].transpose("system", "task").values
        value = special.gammaln(n + 1) - special.gammaln(c + 1) - special.gammaln(n - c + 1)
        return np.where(n > 0, value, 0.0)

    def pattern_log_likelihood(self, tree, c, n) -> Patterns | None:
        """Each count pattern's log-likelihood, joint over the systems that ran its tasks.

        ``c`` and ``n`` are the successes and trials ``(system, task)`` of a fit without
        missing-outcome bounds. Tasks with the same counts in every system (and the same
        population, as the model defines it) share their log-likelihood in every draw, so it is
        computed once per pattern. Returns ``(values, first, inverse)``: ``values (draw,
        pattern)`` with the draws flattened over ``(chain, draw)`` and without the
        combinatorial coefficients (the ``log_likelihood`` group adds
        :meth:`log_coefficients`), each pattern's first task and each task's pattern; None
        where the model has none (the default). A model whose tasks have parameters of their
        own (drawn or sampled per task) makes each task its own pattern.
        """
        return None

    def log_likelihood_cost(self, tree) -> float:
        """Rough seconds :meth:`pattern_log_likelihood` takes on a fitted tree (default: none)."""
        return 0.0


# -- the samplers the models share -------------------------------------------------------------
def kept_stats(trace) -> xr.Dataset:
    """The sampler statistics of ``trace`` a fit keeps (:data:`KEPT_STATS`)."""
    sample_stats = trace["sample_stats"].to_dataset()
    return sample_stats[[v for v in KEPT_STATS if v in sample_stats]]


def pymc_nuts(model, *, engine, draws, tune, chains, seed, progress, cores, **options):
    """NUTS on a PyMC model with PyMC's ``engine`` (``nuts_sampler``); returns its trace."""
    with model:
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            random_seed=seed,
            nuts_sampler=engine,
            progressbar=progress,
            quiet=not progress,
            compute_convergence_checks=False,
            cores=cores,
            **({"mp_ctx": "forkserver"} if engine == "pymc" else {}),
            **options,
        )


def nuts(data, model, priors, draws, chains, tune, seed, engine, progress, bounds, form=None):
    """NUTS with ``model`` once per missing-outcome bound (seeds ``seed``, ``seed + 1``).

    Each run is ``model.sample_bound(...)``, which returns the run's named posterior and its
    trace; the draws are joined over a ``missing_bound`` dim (when ``bounds`` is given) and
    labelled with the systems (and tasks, where task effects are kept). ``form`` is the form
    of the model sampled, where it has several.

    Returns
    -------
    (posterior, sample_stats) : tuple of xarray.Dataset
    """
    posteriors, stats = [], []
    for i, bound in enumerate(bounds or [None]):
        cores = min(chains, os.cpu_count() or 1)
        post, trace = model.sample_bound(
            data,
            priors,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seed + i,
            engine=engine,
            progress=progress,
            cores=cores,
            missing_bound=bound,
            form=form,
        )
        posteriors.append(post)
        stats.append(kept_stats(trace))
    if bounds:
        posterior = xr.concat(posteriors, dim="missing_bound")
        sample_stats = xr.concat(stats, dim="missing_bound").assign_coords(missing_bound=bounds)
    else:
        posterior, sample_stats = posteriors[0], stats[0]
    posterior = posterior.assign_coords(
        system=data.dataset["system"].values, chain=np.arange(chains), draw=np.arange(draws)
    )
    if "task_effect" in posterior:  # latent task effects: the labels
        posterior = posterior.assign_coords(task=data.dataset["task"].values)
    posterior = model.label_draws(posterior, data)
    sample_stats = sample_stats.assign(diverging=sample_stats["diverging"].astype(np.int8))
    sample_stats = sample_stats.assign_coords(chain=np.arange(chains), draw=np.arange(draws))
    return posterior, sample_stats


def finish_bounds(posterior: xr.Dataset, bounds) -> xr.Dataset:
    """``posterior`` without a ``missing_bound`` dim where the data have no bounds.

    Where they do, with the bound labels.
    """
    if bounds is None and "missing_bound" in posterior.dims:
        return posterior.isel(missing_bound=0, drop=True)
    if bounds is not None and "missing_bound" in posterior.dims:
        return posterior.assign_coords(missing_bound=bounds)
    return posterior


def sampled(groups: dict, attrs: dict) -> xr.DataTree:
    """What :meth:`Model.sample` returns: the ``groups`` (None left out) and the ``attrs``."""
    tree = xr.DataTree.from_dict({f"/{k}": v for k, v in groups.items() if v is not None})
    tree.attrs = attrs
    return tree
