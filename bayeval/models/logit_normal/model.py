"""The logit-normal model object (:class:`LogitNormalRates`): fitting and estimands."""

from __future__ import annotations

import json
import sys

import numpy as np
import pymc as pm
import xarray as xr
from scipy import special

from bayeval.data.groups import cell_data
from bayeval.estimators import clip_probability
from bayeval.models import base
from bayeval.models._beta_family import BetaRates, counts_by_bound, task_weights
from bayeval.models.kernels.exact import (
    EXACT_TASKS,
    exact_draws_cached,
    exact_task_rates,
    exact_task_sums,
    latent_task_draws,
)
from bayeval.models.kernels.moments import task_sums
from bayeval.models.logit_normal import likelihood
from bayeval.models.logit_normal.estimands import normal_expectation
from bayeval.models.logit_normal.kernel import (
    ATTENUATED_INTERCEPTS,
    POSTERIOR_VARS,
    collapsed_posterior,
    coordinates,
    integrates_cells,
    sample_kernel,
    target_accept,
)
from bayeval.models.logit_normal.layout import (
    DEFAULT_PRIORS,
    ONE_TRIAL_SIGMA_TASK_SYSTEM,
    SIGMAS,
    Layout,
    cluster_parametrisation,
    one_trial,
    recipe_codes,
    sampling_form,
    task_parametrisation,
    task_patterns,
    validate_priors,
)
from bayeval.models.logit_normal.pymc_model import build_logit_normal_model
from bayeval.models.progress import watched

#: Whether a task-latent fit that diverged is replaced by the collapsed form's fit of the same
#: data (the same posterior, its cluster effects held as the data suggest rather than centred).
REFIT_DIVERGENT_TASK_LATENT = True

#: NUTS warm-up draws per chain when ``tune`` is not given and the form sampled integrates the
#: latent effects out (``collapsed``, ``task-latent``): nutpie's own default, which settles the
#: step size and mass matrix of a few hundred well-scaled coordinates (measured in the model
#: card); the full-latent form takes :data:`bayeval.models.base.DEFAULT_TUNE`.
INTEGRATED_TUNE = 300

#: Posterior draws per chain when ``draws`` is not given and the full-latent form is sampled:
#: its slowest spreads (the system level, a small cluster's effect) mix at a bulk ESS of a
#: third to a half of the draws, and at 1000 LiveCodeBench's default fit missed the r-hat or
#: ESS gate in 3 of 5 seeds (``benchmarks/results/default_fits.md``).
FULL_LATENT_DRAWS = 1500


#: What this process has said it compiles (each once).
_ANNOUNCED: set[str] = set()


def announce_exact_compile() -> None:
    """Say once, where someone watches, that the exact task draws are being compiled.

    Their kernels compile on the first readout over these tasks on a machine (half a minute
    or more on a fresh install), silently otherwise.
    """
    if "exact" in _ANNOUNCED or not watched() or exact_draws_cached():
        return
    _ANNOUNCED.add("exact")
    print(
        "compiling the exact task-rate draws of the logit-normal model (the first readout over "
        "these tasks on this machine; later ones load them from the disk cache)",
        file=sys.stderr,
        flush=True,
    )


def fit_attrs(ds: xr.Dataset, engine: str, form: str, form_choice: str) -> dict:
    """What a fit of ``form`` with ``engine`` records of how it was sampled.

    The form and why, the target acceptance and each effect's parametrisation.
    """
    attrs = {
        "form": form,
        "form_choice": form_choice,
        "target_accept": target_accept(form, ds.sizes["task"], one_trial=one_trial(ds)),
    }
    if "cluster" in ds.coords:
        attrs["cluster_effects"] = "centred" if cluster_parametrisation(ds) else "non-centred"
    if form == "full-latent" and engine == "nutpie":
        attrs["task_effects"] = "centred" if task_parametrisation(ds) else "non-centred"
        layout = Layout.from_dataset(ds)
        if layout.paired:
            attrs["task_system_effects"] = (
                "integrated (tables of the most common counts), sampled elsewhere"
                if integrates_cells(ds)
                else "sampled"
            )
        if coordinates(layout, latent_tasks=ds.sizes["task"]).cluster_pairs:
            sums = "centred" if layout.task_centred else "standardised"
            attrs["cluster_effects"] = (
                f"rotated with their tasks' mean effects: the sums {sums}, the spreads polar"
            )
    if form == "task-latent":
        attrs["task_effects"] = "centred"
        if "cluster" in ds.coords:
            attrs["cluster_effects"] = "centred (cluster-by-system non-centred)"
    if form in ("collapsed", "task-latent"):
        attrs["intercepts"] = "attenuated" if ATTENUATED_INTERCEPTS else "plain"
        if coordinates(Layout.from_dataset(ds)).level_weights:
            attrs["intercept_level"] = "task-weighted"
    return attrs


def _check_jax():
    try:  # JAX and NumPyro: the optional bayeval[jax] dependencies
        import jax  # noqa: F401
        import numpyro  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "sampler='numpyro' needs JAX and NumPyro: pip install 'bayeval[jax]'"
        ) from err


class LogitNormalRates(base.Model):
    """The logit-normal model: sampled by NUTS in the form :func:`sampling_form` picks.

    Its estimands are read from the fitted DataTree.
    """

    name = "logit_normal"
    estimands = ("tasks", "population")
    engines = {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc", "numpyro": "numpyro"}
    paired = True
    crossed_bounds_refit = True
    #: :meth:`population` and :meth:`tasks` take ``systems``: a system's draws are the same
    #: whichever systems are read beside it, so a reader may ask for a few and add the rest
    subsets = True
    posterior_vars = POSTERIOR_VARS
    task_draws_auto = False  # drawn exactly a task at a time: on demand

    # -- fitting -------------------------------------------------------------------------------
    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def build(self, data, priors=None, **options) -> pm.Model:
        """:func:`build_logit_normal_model` (default: the collapsed form)."""
        return build_logit_normal_model(data, priors, **options)

    def default_tune(self, form: str | None = None) -> int:
        """The default warm-up of a fit of ``form``.

        :data:`INTEGRATED_TUNE` for the forms that integrate the latent effects out
        (``"collapsed"``, ``"task-latent"``), :data:`~bayeval.models.base.DEFAULT_TUNE` for the
        full-latent form.
        """
        if form in ("collapsed", "task-latent"):
            return INTEGRATED_TUNE
        return base.DEFAULT_TUNE

    def default_draws(self, form: str | None = None) -> int:
        """The default draws per chain of a fit of ``form``.

        :data:`FULL_LATENT_DRAWS` for the full-latent form,
        :data:`~bayeval.models.base.DEFAULT_DRAWS` otherwise.
        """
        return FULL_LATENT_DRAWS if form == "full-latent" else base.DEFAULT_DRAWS

    def sampling_form(self, data, sampler: str = "auto") -> tuple[str, str]:
        """The form :func:`sampling_form` picks; the full-latent one for ``sampler="numpyro"``."""
        if self.engine(sampler) == "numpyro":
            # the collapsed kernel is numba code: JAX takes the latent form
            return "full-latent", "sampler='numpyro': the full-latent form, which JAX compiles"
        return sampling_form(data.dataset)

    def data_priors(self, data, priors) -> tuple[dict | None, str]:
        """The task-by-system prior the data can support, where the user chose none.

        With two or more systems and one trial per cell (:func:`one_trial`) the overall scale
        of the task-level spreads is not identified, and the interval over these tasks narrows
        as it grows: ``sigma_task_system`` then defaults to HalfNormal
        (:data:`~bayeval.models.logit_normal.layout.ONE_TRIAL_SIGMA_TASK_SYSTEM`); otherwise to
        :data:`~bayeval.models.logit_normal.layout.DEFAULT_PRIORS`'s.

        Examples
        --------
        >>> import bayeval as be
        >>> from bayeval.models.logit_normal import LogitNormalRates
        >>> pair = be.from_counts([[1, 0, 1, 1], [0, 0, 1, 1]], trials=1)
        >>> LogitNormalRates().data_priors(pair, None)[0]
        {'sigma_task_system': 0.5}
        >>> LogitNormalRates().data_priors(pair, {"sigma_task_system": 2.0})
        ({'sigma_task_system': 2.0}, '')
        """
        if (priors or {}).get("sigma_task_system") is not None or not self.one_trial(data):
            return priors, ""
        note = (
            "one trial per system and task: sigma_task_system ~ HalfNormal"
            f"({ONE_TRIAL_SIGMA_TASK_SYSTEM:g}) (the default HalfNormal"
            f"({DEFAULT_PRIORS['sigma_task_system']:g}) narrows intervals over these tasks "
            "where the task-level spreads' scale is not identified; models/logit_normal.md, "
            "'One trial per task')"
        )
        return {**(priors or {}), "sigma_task_system": ONE_TRIAL_SIGMA_TASK_SYSTEM}, note

    def one_trial(self, data) -> bool:
        """Whether two or more systems have a median of one trial per cell.

        :func:`~bayeval.models.logit_normal.layout.one_trial` of the data: the rule
        :meth:`data_priors` reads. A model whose cells count their trials otherwise says so
        here.
        """
        return one_trial(data.dataset)

    def single_trial_warning(self, data) -> str:
        """Several systems: what is identified only through the other systems."""
        if len(data.systems) < 2:
            return super().single_trial_warning(data)
        return (
            "with one trial per task a system's own task-to-task spread is identified "
            "only through the other systems: the task-by-system spread and pass@k, pass^k "
            "for k > 1 lean on their priors (sigma_task_system ~ HalfNormal"
            f"({ONE_TRIAL_SIGMA_TASK_SYSTEM:g}) unless you choose one; attrs['prior_note']), "
            "and intervals over these tasks (estimand='tasks') covered 0.93-0.94 at 95% in "
            "simulations of 2 and 12 systems (models/logit_normal.md, 'One trial per task')"
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
        """NUTS on the form :func:`sampling_form` picks.

        The full-latent form for ``sampler="numpyro"``; a task-latent fit that diverges is sampled
        again collapsed (:data:`REFIT_DIVERGENT_TASK_LATENT`). Latent fits keep their task effects
        in a ``task_effects`` group.
        """
        engine = self.engine(sampler)
        priors = validate_priors(priors)
        ds = data.dataset
        _, _, bounds = counts_by_bound(ds)
        form, form_choice = self.sampling_form(data, sampler)
        if tune is None:
            tune = self.default_tune(form)
        posterior, sample_stats = base.nuts(
            data, self, priors, draws, chains, tune, seed, engine, progress, bounds, form
        )
        diverged = int(sample_stats["diverging"].sum())
        if form == "task-latent" and diverged and REFIT_DIVERGENT_TASK_LATENT:
            # its cluster effects are centred: where the clusters' spread is small against
            # what their tasks say of it, a funnel; the collapsed form, the same posterior,
            # holds them as the data suggest
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
            posterior, sample_stats = base.nuts(
                data, self, priors, draws, chains, tune, seed, engine, progress, bounds, form
            )
        posterior = base.finish_bounds(posterior, bounds)
        effects = None
        if "task_effect" in posterior:
            # a latent fit's task effects, per task: a group of their own keeps summaries small
            effects = posterior[["task_effect"]]
            posterior = posterior.drop_vars(["task_effect", "task"])
        groups = {"posterior": posterior, "sample_stats": sample_stats, "task_effects": effects}
        return base.sampled(groups, {"tune": tune, **fit_attrs(ds, engine, form, form_choice)})

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
        collapsed = form == "collapsed"
        # nutpie samples every form as one compiled log density
        compiled = engine == "nutpie"
        if engine == "numpyro":
            _check_jax()
        if compiled:
            trace = sample_kernel(
                data,
                priors,
                draws,
                tune,
                chains,
                seed,
                progress,
                cores,
                form=form,
                missing_bound=missing_bound,
            )
        else:
            trace = base.pymc_nuts(
                build_logit_normal_model(
                    data, priors, missing_bound=missing_bound, marginal=collapsed
                ),
                engine=engine,
                draws=draws,
                tune=tune,
                chains=chains,
                seed=seed,
                progress=progress,
                cores=cores,
                target_accept=target_accept(
                    form, data.dataset.sizes["task"], one_trial=one_trial(data.dataset)
                ),
            )
        post = trace["posterior"].to_dataset()
        if compiled:
            effect = None
            if not collapsed:
                effect = post["task_effect"]
                effect = effect.rename({effect.dims[-1]: "task"})
            post = collapsed_posterior(
                post["theta" if collapsed else "hyper"], data, priors, task_effect=effect, form=form
            )
            if not collapsed:  # the latent forms' task effects: the tasks estimand's
                post["task_effect"] = effect.drop_vars(
                    [name for name in effect.coords if name not in ("chain", "draw")]
                )
        names = [v for v in (*POSTERIOR_VARS, "task_effect") if v in post.data_vars]
        return post[names], trace

    # -- estimands -----------------------------------------------------------------------------

    def _params(self, tree, bound):
        """Posterior arrays for one bound, flattened over (chain, draw)."""
        post = tree["posterior"].to_dataset()
        if "missing_bound" in post.dims:
            post = post.isel(missing_bound=bound)
        obs = self.fitted_data(tree)
        layout = Layout.from_dataset(obs)
        draws = post.sizes["chain"] * post.sizes["draw"]
        alpha = post["alpha"]
        if "stratum" not in alpha.dims:
            alpha = alpha.expand_dims("stratum", axis=-1)
        alpha = alpha.transpose("chain", "draw", "system", "stratum").values.reshape(
            draws, layout.n_systems, -1
        )

        def get(name, shape):
            if name in post:
                return post[name].values.reshape((draws,) + shape)
            return np.zeros((draws,) + shape)

        n_cluster = layout.n_clusters
        params = {
            "alpha": alpha,
            "u": get("cluster_effect", (n_cluster,)),
            "w": (
                post["cluster_system_effect"]
                .transpose("chain", "draw", "system", "cluster")
                .values.reshape(draws, layout.n_systems, n_cluster)
                if "cluster_system_effect" in post
                else np.zeros((draws, layout.n_systems, n_cluster))
            ),
            **{name: get(name, ()) for name in SIGMAS},
        }
        return params, layout, post.sizes["chain"], post.sizes["draw"]

    def _bounds(self, tree):
        obs = self.fitted_data(tree)
        return counts_by_bound(obs)

    def _wrap(self, values, tree, bounds, ks, n_chain, n_draw, index=None):
        """Per-bound ``(draws, system, k)`` values of every system as a DataArray.

        With ``index``, of those systems only, in that order.
        """
        values = np.stack(values, axis=0)  # (bound, draws, system, k)
        values = values.reshape((len(values), n_chain, n_draw) + values.shape[2:])
        labels = cell_data(tree)["system"].values
        if index is not None:
            values, labels = values[:, :, :, index], labels[index]
        return BetaRates._wrap(np.moveaxis(values, 0, 2), tree, bounds, ks, "", labels)

    @staticmethod
    def _system_index(tree, systems):
        """Positions of ``systems`` (labels) among the fit's systems; None for all."""
        if systems is None:
            return None
        labels = cell_data(tree)["system"].values.tolist()
        return np.asarray([labels.index(label) for label in systems], dtype=np.int64)

    def population(
        self, tree, metric, ks, clusters="new", weighting="task", tau=None, systems=None
    ):
        """Draws of ``metric`` for a new task, ``(chain, draw, system[, missing_bound], k)``.

        Of the ``systems`` (labels) asked for, default all.
        """
        c, n, bounds = self._bounds(tree)
        index = self._system_index(tree, systems)
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            chosen = slice(None) if index is None else index
            # a system's value reads only its own parameters
            prm_chosen = {**prm, "alpha": prm["alpha"][:, chosen], "w": prm["w"][:, chosen]}
            if clusters == "observed":
                value = self._observed_clusters(prm_chosen, layout, metric, ks, weighting, tau)
            else:
                spread = np.sqrt(sum(prm[name] ** 2 for name in SIGMAS))
                value = normal_expectation(
                    prm_chosen["alpha"],
                    spread[:, None, None] * np.ones_like(prm_chosen["alpha"]),
                    metric,
                    ks,
                    tau,
                )  # (draw, system, stratum, k)
                value = clip_probability(np.einsum("dshk,h->dsk", value, layout.pops.weight))
            full = np.zeros((value.shape[0], prm["alpha"].shape[1], value.shape[2]))
            full[:, chosen] = value
            out.append(full)
        return self._wrap(out, tree, bounds, ks, n_chain, n_draw, index)

    def _recipe_means(self, tree):
        """Per bound: each recipe's mean intercept ``beta (draw, recipe, H)``, and what it rests on.

        ``beta`` is drawn from its conditional given the runs' intercepts (prior ``N(mean, sd)``,
        runs ``~ N(beta, sigma_run)``: precision ``1/sd^2 + m/sigma_run^2``); with it ``sigma_run``,
        the new task's spread, the layout and the recipe labels.
        """
        obs = self.fitted_data(tree)
        recipes = recipe_codes(obs)
        labels = list(dict.fromkeys(obs["recipe"].values.tolist()))
        c, _, bounds = self._bounds(tree)
        mean, sd = validate_priors(json.loads(tree.attrs.get("priors", "null")) or None)["alpha"]
        post = tree["posterior"].to_dataset()
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            level = post["sigma_run"]
            if "missing_bound" in level.dims:
                level = level.isel(missing_bound=b)
            sigma = level.values.reshape(-1)
            rng = np.random.default_rng([int(tree.attrs["seed"]), 7, b])
            beta = []
            for r in range(len(labels)):
                runs = prm["alpha"][:, recipes == r]  # (draw, m, H)
                precision = 1 / sd**2 + runs.shape[1] / sigma**2
                centre = (mean / sd**2 + runs.sum(1) / sigma[:, None] ** 2) / precision[:, None]
                beta.append(
                    centre + rng.standard_normal(centre.shape) / np.sqrt(precision)[:, None]
                )
            spread = np.sqrt(sum(prm[name] ** 2 for name in SIGMAS))
            out.append((np.stack(beta, axis=1), sigma, spread, layout))
        return out, labels, bounds, (post["chain"].values, post["draw"].values)

    def new_run_population(self, tree, metric, ks, tau=None):
        """Per recipe: ``metric`` of a new task (new cluster) for a new training run.

        The recipe's mean intercept (:meth:`_recipe_means`) with ``sigma_run^2`` added to the new
        task's spread (a new run is a new checkpoint with a new cluster-by-run effect too). Returns
        ``(chain, draw, system=recipe, k)`` (``missing_bound`` last under bounds).
        """
        parts, labels, bounds, (chains, draws) = self._recipe_means(tree)
        out = []
        for beta, sigma, spread, layout in parts:
            scale = np.sqrt(spread**2 + sigma**2)[:, None, None] * np.ones_like(beta)
            value = normal_expectation(beta, scale, metric, ks, tau)  # (draw, recipe, H, k)
            out.append(clip_probability(np.einsum("drhk,h->drk", value, layout.pops.weight)))
        return self._recipe_array(
            out, labels, bounds, chains, draws, {"k": np.asarray(ks, dtype=np.int64)}, metric
        )

    def run_variance(self, tree):
        """Per recipe: the variance over new training runs of a checkpoint's population pass@1.

        That is its score on a new task set, ``Var_z g(beta + sigma_run z)`` with ``g`` the pass@1
        of a new task at that intercept; Gauss-Hermite over z (24 nodes).
        ``(chain, draw, system=recipe)``.
        """
        parts, labels, bounds, (chains, draws) = self._recipe_means(tree)
        x, w = np.polynomial.hermite_e.hermegauss(24)
        w = w / w.sum()
        out = []
        for beta, sigma, spread, layout in parts:
            loc = beta[..., None] + sigma[:, None, None, None] * x  # (draw, recipe, H, node)
            g = normal_expectation(
                loc,
                np.broadcast_to(spread[:, None, None, None], loc.shape),
                "pass@k",
                np.array([1]),
            )[..., 0]
            g = np.einsum("drhq,h->drq", g, layout.pops.weight)
            first = g @ w
            out.append(np.maximum((g**2) @ w - first**2, 0.0))
        return self._recipe_array(out, labels, bounds, chains, draws, {}, "run_variance")

    @staticmethod
    def _recipe_array(out, labels, bounds, chains, draws, extra: dict, name) -> xr.DataArray:
        values = np.stack(out, axis=0)  # (bound, draw, recipe, ...)
        values = values.reshape((len(out), len(chains), len(draws)) + values.shape[2:])
        dims = ("chain", "draw", "system", *extra, "missing_bound")
        da = xr.DataArray(
            np.moveaxis(values, 0, -1),
            dims=dims,
            name=name,
            coords={
                "chain": chains,
                "draw": draws,
                "system": np.asarray(labels, dtype=object),
                **extra,
            },
        )
        return (
            da.isel(missing_bound=0, drop=True)
            if bounds is None
            else da.assign_coords(missing_bound=bounds)
        )

    @staticmethod
    def _observed_clusters(prm, layout, metric, ks, weighting, tau=None):
        spread = np.sqrt(prm["sigma_task"] ** 2 + prm["sigma_task_system"] ** 2)
        total = 0.0
        for h, stratum_weight in enumerate(layout.pops.weight):
            in_h = layout.pops.code == h
            labels, sizes = np.unique(layout.cluster[in_h], return_counts=True)
            shares = (
                sizes / sizes.sum()
                if weighting == "task"
                else np.full(len(labels), 1 / len(labels))
            )
            location = (
                prm["alpha"][:, :, h, None] + prm["u"][:, None, labels] + prm["w"][:, :, labels]
            )  # (draw, system, cluster)
            scale = np.broadcast_to(spread[:, None, None], location.shape)
            value = normal_expectation(location, scale, metric, ks, tau)  # (draw, sys, cl, k)
            total = total + stratum_weight * np.einsum("dsgk,g->dsk", value, shares)
        return clip_probability(total)

    @staticmethod
    def _rows(prm, layout, c, n):
        """The linear predictors once per (cluster, stratum) ``(draw, G H, S)``, and the patterns.

        With each pattern's row of them ``(P,)``, ``sigma_v`` and the patterns: the patterns' own
        ``(draw, P, S)`` would hold draws x patterns x systems numbers (334 MB on the 25-system
        SWE-bench fit).
        """
        pat = task_patterns(c, n, layout)
        base = (
            prm["alpha"][:, None, :, :]
            + prm["u"][:, :, None, None]
            + prm["w"].transpose(0, 2, 1)[..., None]
        ).transpose(0, 1, 3, 2)  # (D, G, H, S)
        D, G, H, S = base.shape
        rows = pat.cluster * H + pat.stratum
        sigma_v = prm["sigma_task_system"] if layout.paired else np.ones(D)
        return np.ascontiguousarray(base).reshape(D, G * H, S), rows, sigma_v, pat

    @staticmethod
    def _task_effects(tree, bound):
        """A full-latent fit's task-effect draws ``(draws, J)`` for one bound, or None.

        None for a collapsed fit, or a tree without them.
        """
        if "task_effects" not in tree.children:
            return None
        effect = tree["task_effects"]["task_effect"]
        if "missing_bound" in effect.dims:
            effect = effect.isel(missing_bound=bound)
        values = effect.transpose("chain", "draw", "task").values
        return values.reshape(-1, values.shape[-1])

    @staticmethod
    def _latent(prm, layout, effects, c, n, rng, **kwargs):
        """:func:`bayeval.models.kernels.exact.latent_task_draws` for one bound."""
        sigma_v = prm["sigma_task_system"] if layout.paired else np.ones(len(effects))
        return latent_task_draws(
            prm["alpha"],
            prm["u"],
            prm["w"],
            effects,
            sigma_v,
            layout.cluster,
            layout.pops.code,
            c,
            n,
            layout.paired,
            rng,
            **kwargs,
        )

    def tasks(self, tree, metric, ks, shared=None, tau=None, systems=None):
        """Draws of ``metric`` over these tasks, ``(chain, draw, system[, missing_bound], k)``.

        Of the ``systems`` (labels) asked for where the fit sampled its task effects (each system's
        task-by-system effects are then drawn alone), else of every system (the collapsed form draws
        a task's effects in all systems jointly).
        """
        c, n, bounds = self._bounds(tree)
        weight_n = n if shared is None else n * np.asarray(shared, dtype=n.dtype)
        seed = int(tree.attrs["seed"])
        index = self._system_index(tree, systems) if "task_effects" in tree.children else None
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            weights = task_weights(weight_n[b], layout.pops)  # (S, J)
            rng = np.random.default_rng([seed, 1, b])
            effects = self._task_effects(tree, b)
            if effects is not None:  # a full-latent fit: its task effects, sampled
                draws = self._latent(
                    prm,
                    layout,
                    effects,
                    c[b],
                    n[b],
                    rng,
                    ks=ks.astype(float),
                    metric=metric,
                    weight=weights.T,
                    tau=tau,
                    systems=index,
                )
                out.append(np.clip(draws, 0.0, 1.0))
                continue
            base, rows, sigma_v, pat = self._rows(prm, layout, c[b], n[b])
            # patterns of at most EXACT_TASKS tasks: each task's rates drawn from their joint
            # conditional; the sum over a larger pattern's tasks from its normal
            one_by_one = pat.mult[pat.inverse] <= EXACT_TASKS  # (J,)
            announce_exact_compile()
            draws = exact_task_sums(
                base,
                pat.c,
                pat.n,
                prm["sigma_task"],
                sigma_v,
                layout.paired,
                ks.astype(float),
                metric,
                weights.T[one_by_one],
                pat.inverse[one_by_one],
                rng,
                tau=tau,
                rows=rows,
            )
            large = np.flatnonzero(pat.mult > EXACT_TASKS)
            if large.size:
                w_p = weights[:, pat.first[large]].T  # (large patterns, S)
                centre, cov = task_sums(
                    np.take(base, rows[large], axis=1),
                    pat.c[large],
                    pat.n[large],
                    prm["sigma_task"],
                    sigma_v,
                    layout.paired,
                    ks.astype(float),
                    metric,
                    w_p,
                    pat.mult[large],
                    tau=tau,
                )
                z = rng.standard_normal(centre.shape[:2])  # (draw, system): shared across k
                jitter = 1e-12 * np.eye(cov.shape[-1])
                chol = np.linalg.cholesky(_nearest_psd(cov) + jitter)  # (draw, k, S, S)
                draws = draws + centre + np.einsum("dkst,dt->dsk", chol, z)
            out.append(np.clip(draws, 0.0, 1.0))
        return self._wrap(out, tree, bounds, ks, n_chain, n_draw, index)

    def task_rates(self, tree, systems=None):
        """Per-task rate draws, joint over systems.

        Per posterior draw, each task's rates in the chosen systems drawn exactly from their joint
        conditional, as the tasks estimand draws them
        (:func:`bayeval.models.kernels.exact.exact_task_rates`: the shared task effect from its
        marginal, then each system's task-by-system effect given it, which keeps the rates'
        dependence across systems); NaN where a system did not run a task. A full-latent fit draws
        the task-by-system effects given its sampled task effects.
        """
        obs = self.fitted_data(tree)
        c, n, bounds = counts_by_bound(obs)
        all_systems = obs["system"].values.tolist()
        chosen = all_systems if systems is None else list(systems)
        index = [all_systems.index(s) for s in chosen]
        seed = int(tree.attrs["seed"])
        out = []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            rng = np.random.default_rng([seed, 2, b])
            effects = self._task_effects(tree, b)
            if effects is not None:  # a full-latent fit: exact, given its sampled task effects
                # (given them, the systems' rates are independent: a subset is drawn alone,
                # each system from its own streams)
                out.append(
                    self._latent(prm, layout, effects, c[b], n[b], rng, systems=index)[:, index]
                )
                continue
            base, rows, sigma_v, pat = self._rows(prm, layout, c[b], n[b])
            keep = np.zeros(n[b].shape[::-1], dtype=bool)  # (J, S)
            keep[:, index] = n[b][index].T > 0
            announce_exact_compile()
            p = exact_task_rates(
                base,
                pat.c,
                pat.n,
                prm["sigma_task"],
                sigma_v,
                layout.paired,
                keep,
                pat.inverse,
                rng,
                rows=rows,
            )
            out.append(p[:, index])  # (draw, S', J)
        values = np.stack(out).reshape((len(out), n_chain, n_draw, len(chosen), -1))
        post = tree["posterior"]
        da = xr.DataArray(
            np.moveaxis(values, 0, -1),
            dims=("chain", "draw", "system", "task", "missing_bound"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": np.asarray(chosen, dtype=object),
                "task": obs["task"].values,
            },
            name="p",
        )
        return (
            da.isel(missing_bound=0, drop=True)
            if bounds is None
            else da.assign_coords(missing_bound=bounds)
        )

    def replicate_rates(self, tree) -> base.Rates:
        """A new task's rates for each cell, per draw, a block of tasks at a time.

        The draw's intercepts and cluster effects with a new task effect (shared by the
        systems) and new task-by-system effects: the effects the log-likelihood integrates
        out, whatever form was sampled. Each task's effects come from its own generator.
        """
        prm, layout, _, _ = self._params(tree, 0)
        sigma_task = prm["sigma_task"][:, None]
        sigma_v = prm["sigma_task_system"][:, None]

        def new_effects(rng, eta):  # eta (draw, system): one task's
            e = rng.standard_normal((eta.shape[0], 1)) * sigma_task
            return eta + e + rng.standard_normal(eta.shape) * sigma_v

        def rates(rngs, tasks):
            cluster = layout.cluster[tasks]
            eta = (
                prm["alpha"][:, :, layout.pops.code[tasks]]
                + prm["u"][:, cluster][:, None, :]
                + prm["w"][:, :, cluster]
            )  # (draw, S, tasks)
            return special.expit(base.each_task(rngs, new_effects, eta))

        return rates

    def predictive(self, tree, max_draws: int = 1000) -> xr.Dataset:
        """Success-count histograms of new tasks in the observed clusters (thinned draws)."""
        obs = self.fitted_data(tree)
        c, n, bounds = counts_by_bound(obs)
        seed = int(tree.attrs["seed"])
        max_n = int(n.max())
        hists, shares = [], []
        for b in range(c.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            thin = max(1, int(np.ceil(n_draw / max(max_draws // n_chain, 1))))
            keep = (np.arange(n_chain)[:, None] * n_draw + np.arange(0, n_draw, thin)).ravel()
            rng = np.random.default_rng([seed, 3, b])
            D, (S, J) = len(keep), n[b].shape
            hist = np.zeros((D, S, max_n + 1))
            share = np.empty((D, S))
            valid = n[b][None] > 0
            multi = valid & (n[b][None] >= 2)
            # a block of draws at a time: memory stays bounded at any number of systems
            block = max(1, 2_000_000 // max(S * J, 1))
            for start in range(0, D, block):
                part = keep[start : start + block]
                d = len(part)
                eta = _new_task_logits(prm, layout, part, rng)
                counts = rng.binomial(n[b][None], special.expit(eta))
                for s in range(S):
                    cols = counts[:, s, valid[0, s]]
                    offsets = cols + (np.arange(d) * (max_n + 1))[:, None]
                    hist[start : start + d, s] = np.bincount(
                        offsets.ravel(), minlength=d * (max_n + 1)
                    ).reshape(d, max_n + 1)
                extreme = ((counts == 0) | (counts == n[b][None])) & multi
                with np.errstate(invalid="ignore", divide="ignore"):
                    share[start : start + d] = extreme.sum(-1) / multi.sum(-1)
            hists.append(hist.reshape(n_chain, -1, layout.n_systems, max_n + 1))
            shares.append(share.reshape(n_chain, -1, layout.n_systems))
        draws = tree["posterior"]["draw"].values[::thin]
        out = xr.Dataset(
            {
                "count_histogram": (
                    ("missing_bound", "chain", "draw", "system", "count"),
                    np.stack(hists),
                ),
                "extreme_share": (("missing_bound", "chain", "draw", "system"), np.stack(shares)),
            },
            coords={
                "chain": tree["posterior"]["chain"].values,
                "draw": draws,
                "system": obs["system"].values,
                "count": np.arange(max_n + 1),
            },
        ).transpose("chain", "draw", "system", "missing_bound", ...)
        return (
            out.isel(missing_bound=0, drop=True)
            if bounds is None
            else out.assign_coords(missing_bound=bounds)
        )

    def pattern_log_likelihood(self, tree, c, n) -> base.Patterns | None:
        """Each count pattern's integrated likelihood, joint over its systems.

        A pattern is a cluster, a stratum and the counts of every system
        (:func:`~bayeval.models.logit_normal.likelihood.pattern_log_likelihood`).
        """
        prm, layout, _, _ = self._params(tree, 0)
        return base.Patterns(*likelihood.pattern_log_likelihood(prm, layout, c, n))

    def log_likelihood_cost(self, tree) -> float:
        """The quadrature's rough seconds.

        :func:`~bayeval.models.logit_normal.likelihood.log_likelihood_cost`.
        """
        return likelihood.log_likelihood_cost(tree)


def _new_task_logits(prm, layout, part, rng: np.random.Generator) -> np.ndarray:
    """Logits ``(draw, system, task)`` of new tasks in the tasks' clusters and strata.

    At the draws ``part``: intercepts and cluster effects as drawn, the task effect (shared by
    the systems) and the task-by-system effects new.
    """
    eta = (
        prm["alpha"][part][:, :, layout.pops.code]
        + prm["u"][part][:, layout.cluster][:, None, :]
        + prm["w"][part][:, :, layout.cluster]
    )  # (d, S, J)
    e = rng.standard_normal((len(part), 1, eta.shape[2])) * prm["sigma_task"][part, None, None]
    v = rng.standard_normal(eta.shape) * prm["sigma_task_system"][part, None, None]
    return eta + e + v


def _nearest_psd(cov):
    """Symmetrise and clip negative eigenvalues from rounding."""
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    vals, vecs = np.linalg.eigh(cov)
    return (vecs * np.maximum(vals, 0.0)[..., None, :]) @ np.swapaxes(vecs, -1, -2)
