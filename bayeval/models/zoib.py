r"""Zero-one-inflated Beta model for partial-credit scores in [0, 1]: ``zoib``.

Model (system s, task j in cluster g = g(j); scores y of the valid attempts)::

    eta[s, j]  = alpha[s] + u[g] + w[s, g] + e[j] + v[s, j]     shared latent difficulty
    zeta[s, j] = gamma[s] + b[j]                                 tendency to grade 0/1

    P(y = 1) = zoi coi,   P(y = 0) = zoi (1 - coi),
    y | 0 < y < 1 ~ Beta(mu phi[s], (1 - mu) phi[s])   with probability 1 - zoi,
    zoi = expit(zeta), coi = expit(eta), mu = expit(eta + delta[s])

    mean score m[s, j] = zoi coi + (1 - zoi) mu

    alpha[s] ~ Normal(0, 2.5)      delta[s] ~ Normal(0, 1)     gamma[s] ~ Normal(0, 2.5)
    log phi[s] ~ Normal(2, 1.5)
    e[j] ~ Normal(0, sigma_task)           v[s, j] ~ Normal(0, sigma_task_system)
    u[g] ~ Normal(0, sigma_cluster)        w[s, g] ~ Normal(0, sigma_cluster_system)
    b[j] ~ Normal(0, sigma_zoi)
    sigma_task ~ HalfNormal(3), sigma_task_system ~ HalfNormal(1.5),
    sigma_cluster ~ HalfNormal(1.5), sigma_cluster_system ~ HalfNormal(1),
    sigma_zoi ~ HalfNormal(3)

One latent ``eta`` drives both the share of full credit among 0/1 grades and the interior
mean, so a task that is hard is hard in both parts, and binary tasks and partial-credit
tasks share one task structure. ``delta`` shifts the interior mean against the 0/1 part.
On binary data (no interior score) ``zoi`` goes to one and the model is the
``logit_normal`` model on ``coi``, with the same effects and priors (the two-system form:
there is no system level here). One system drops ``v`` and ``w``; data without clusters drop
``u`` and ``w``. Strata are not supported.

Inference: the likelihood of a cell is a function of its sufficient statistics (counts at 0,
at 1 and between; sums of ``log y`` and ``log(1 - y)`` over the interior scores); every effect
is a latent variable (non-centred), sampled by NUTS (nutpie). nutpie samples the compiled log
density of :mod:`bayeval.models.kernels.zoib` (the same density with its gradient written out,
called from nutpie's threads as a C function), so a fit builds and compiles no model; where the
installed nutpie lacks that route, the PyMC model (:func:`build_zoib_model`) is compiled for it
instead and kept per data shape, so fits of same-shaped data recompile nothing.

Estimands (the mean score, :meth:`bayeval.Results.mean_score`):

* ``tasks``: the mean over these tasks of ``m[s, j]``, from the latent draws;
* ``population``, ``clusters="new"``: a new task from a new cluster,
  ``E[zoi] E[coi] + (1 - E[zoi]) E[mu]`` with ``eta ~ Normal(alpha, s)``, ``s^2`` the sum
  of the four variances, and ``zeta ~ Normal(gamma, sigma_zoi)`` independent of it; each
  expectation is a one-dimensional normal integral on a fine grid, exact per draw (no Monte
  Carlo error);
* ``population``, ``clusters="observed"``: a new task in one of the observed clusters
  (weighted by their task counts or equally).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special

from bayeval._validate import merge_priors
from bayeval.data import EvalData
from bayeval.data.groups import dataset_of
from bayeval.models import base
from bayeval.models._beta_family import BetaRates, Populations, counts_by_bound, task_weights
from bayeval.models.kernels import zoib as zoib_kernel
from bayeval.models.kernels.abi import kernel_data
from bayeval.models.kernels.compiled_models import CompiledModels
from bayeval.models.logit_normal import cluster_codes, normal_expectation

__all__ = ["build_zoib_model", "DEFAULT_PRIORS", "ZoibScores", "zoib_loglik"]

DEFAULT_PRIORS = {
    "alpha": (0.0, 2.5),
    "delta": (0.0, 1.0),
    "gamma": (0.0, 2.5),
    "log_phi": (2.0, 1.5),
    "sigma_task": 3.0,
    "sigma_task_system": 1.5,
    "sigma_cluster": 1.5,
    "sigma_cluster_system": 1.0,
    "sigma_zoi": 3.0,
}
SIGMAS = ("sigma_task", "sigma_task_system", "sigma_cluster", "sigma_cluster_system")
POSTERIOR_VARS = ("alpha", "delta", "gamma", "phi", *SIGMAS, "sigma_zoi")
LATENT_VARS = (
    "task_effect",
    "task_system_effect",
    "cluster_effect",
    "cluster_system_effect",
    "zoi_task_effect",
)
STATS = ("n0", "n1", "nmid", "sumlog", "sumlog1m")
#: NUTS target acceptance, by the number of tasks (:func:`target_accept`). The variance
#: components are funnel-shaped: few tasks need a high target to avoid divergences, and on
#: many tasks 0.9 mixed as well in half the time (``models/zoib.md``, sampling settings).
TARGET_ACCEPT = 0.9
TARGET_ACCEPT_FEW = 0.95
FEW_TASKS = 50
#: Further options of ``nutpie.sample`` (a low-rank mass matrix was slower, with no better
#: mixing: ``models/zoib.md``, sampling settings).
NUTPIE_OPTIONS: dict = {}
_compiled = CompiledModels()  # structure -> compiled nutpie model
#: Why the model refuses data with strata.
NO_STRATA = (
    "model='zoib' does not support strata yet: fit each stratum "
    "on its own (data.sel(task=...)) or leave stratum= unset"
)


def validate_priors(priors) -> dict:
    """Fill defaults and check the priors (Normals as (mean, sd), HalfNormal scales)."""
    merged = merge_priors(priors, DEFAULT_PRIORS, "zoib")
    out: dict[str, tuple[float, float] | float] = {}
    for name in ("alpha", "delta", "gamma", "log_phi"):
        mean, sd = merged[name]
        if not (np.isfinite(mean) and np.isfinite(sd) and sd > 0):
            raise ValueError(
                f"prior {name} needs a finite mean and a positive sd; got {merged[name]!r}"
            )
        out[name] = (float(mean), float(sd))
    for name in (*SIGMAS, "sigma_zoi"):
        if not (np.isfinite(merged[name]) and merged[name] > 0):
            raise ValueError(f"prior {name} is a HalfNormal scale > 0; got {merged[name]!r}")
        out[name] = float(merged[name])
    return out


@dataclass(frozen=True)
class Layout:
    """Systems and clusters of a dataset, as integer codes."""

    n_systems: int
    n_tasks: int
    cluster_labels: list | None
    cluster: np.ndarray  # cluster code per task (zeros without clusters)

    @property
    def has_clusters(self) -> bool:
        return self.cluster_labels is not None

    @property
    def n_clusters(self) -> int:
        """The number of clusters (one without clusters)."""
        return len(self.cluster_labels) if self.cluster_labels is not None else 1

    @property
    def paired(self) -> bool:
        return self.n_systems > 1

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> Layout:
        if "stratum" in ds.coords:
            raise ValueError(NO_STRATA)
        codes, labels = cluster_codes(ds)
        return cls(ds.sizes["system"], ds.sizes["task"], labels, codes)

    def key(self) -> tuple:
        return (self.n_systems, self.n_tasks, self.has_clusters, tuple(self.cluster.tolist()))


def score_arrays(data, missing_bound=None) -> dict:
    """The sufficient statistics :data:`STATS` as (system, task) arrays for one bound."""
    stats = data.score_statistics()
    if "missing_bound" in stats.dims:
        bounds = stats["missing_bound"].values.tolist()
        if missing_bound not in bounds:
            raise ValueError(f"data use missing='bounds': choose missing_bound= in {bounds}")
        stats = stats.sel(missing_bound=missing_bound)
    return {
        name: stats[name].transpose("system", "task").values.astype(float)
        for name in (*STATS, "trials")
    }


def _functions(xp):
    """``softplus``, ``gammaln`` and ``expit`` of an array backend (NumPy/SciPy or PyTensor)."""
    if xp is np:
        return (lambda x: np.logaddexp(0.0, x)), special.gammaln, special.expit
    return xp.softplus, xp.gammaln, xp.sigmoid


def _zero_one_terms(n0, n1, nmid, eta, zeta, xp):
    """Each cell's 0/1 grades and its share of interior grades: the counts' log-likelihood."""
    softplus, _, _ = _functions(xp)
    log_zoi, log_1m_zoi = -softplus(-zeta), -softplus(zeta)
    return n0 * (log_zoi - softplus(eta)) + n1 * (log_zoi - softplus(-eta)) + nmid * log_1m_zoi


def _interior_terms(nmid, sumlog, sumlog1m, mean_logit, phi, xp):
    """The Beta log-density of each cell's interior scores from their sufficient statistics."""
    _, gammaln, expit = _functions(xp)
    mu = xp.clip(expit(mean_logit), 1e-12, 1 - 1e-12)
    a, b = mu * phi, (1 - mu) * phi
    return (a - 1) * sumlog + (b - 1) * sumlog1m - nmid * (gammaln(a) + gammaln(b) - gammaln(phi))


def zoib_loglik(stats: dict, eta, zeta, delta, phi, xp=np):
    """Log-likelihood of each cell from its sufficient statistics (any array backend).

    ``eta``, ``zeta`` are (system, task); ``delta``, ``phi`` per system, shape (system, 1).
    ``xp`` is NumPy (with SciPy's ``gammaln``) or PyTensor's tensor module.
    """
    return _zero_one_terms(
        stats["n0"], stats["n1"], stats["nmid"], eta, zeta, xp
    ) + _interior_terms(stats["nmid"], stats["sumlog"], stats["sumlog1m"], eta + delta, phi, xp)


def _model_data(stats: dict) -> dict:
    """The arrays the PyMC model reads (:func:`build_zoib_model`'s ``pm.Data``), by name.

    The 0/1 counts stay (system, task) arrays; the Beta part's statistics are kept only for the
    cells with an interior score (``interior``: their flat index), so each gradient evaluates
    the log-gamma functions there alone (a third of LiveBench-like cells; none on binary data).
    """
    interior = np.flatnonzero(stats["nmid"].ravel() > 0)
    n_tasks = stats["nmid"].shape[1]
    out = {name: stats[name] for name in ("n0", "n1", "nmid")}
    out["interior"] = interior.astype(np.int64)
    out["interior_system"] = (interior // n_tasks).astype(np.int64)
    for name in ("nmid", "sumlog", "sumlog1m"):
        out[f"interior_{name}"] = stats[name].ravel()[interior]
    return out


def _gathered_loglik(data_vars, eta, zeta, delta, phi):
    """The sum over cells of :func:`zoib_loglik` in PyTensor, the Beta part on interior cells."""
    system, cells = data_vars["interior_system"], data_vars["interior"]
    return (
        _zero_one_terms(data_vars["n0"], data_vars["n1"], data_vars["nmid"], eta, zeta, pt).sum()
        + _interior_terms(
            data_vars["interior_nmid"],
            data_vars["interior_sumlog"],
            data_vars["interior_sumlog1m"],
            eta.ravel()[cells] + delta[system],
            phi[system],
            pt,
        ).sum()
    )


def build_zoib_model(data, priors=None, missing_bound=None):
    """Build the zero-one-inflated Beta model as a PyMC model (every effect latent).

    The sufficient statistics enter as ``pm.Data`` (named as in :func:`_model_data`), so a
    compiled model serves any data of the same shape, whatever its cells with interior scores.

    Parameters
    ----------
    data : EvalData
        Scores (``from_frame(..., score=)``) or binary outcomes.
    priors : dict, optional
        See :data:`DEFAULT_PRIORS`.
    missing_bound : {"lower", "upper"}, optional
        Which extreme to model when the data use ``missing="bounds"``.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval.models import build_zoib_model
    >>> df = pd.DataFrame({"system": ["A", "A", "B", "B"], "task": ["t1", "t2"] * 2,
    ...                    "score": [0.5, 1.0, 0.0, 0.25]})
    >>> model = build_zoib_model(be.from_frame(df, score="score"))
    >>> sorted(model.named_vars_to_dims["task_system_effect"])
    ['system', 'task']
    """
    priors = validate_priors(priors)
    ds = data.dataset
    layout = Layout.from_dataset(ds)
    stats = score_arrays(data, missing_bound)
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    if layout.has_clusters:
        coords["cluster"] = layout.cluster_labels
    with pm.Model(coords=coords) as model:
        data_vars = {name: pm.Data(name, value) for name, value in _model_data(stats).items()}
        alpha = pm.Normal("alpha", *priors["alpha"], dims="system")
        delta = pm.Normal("delta", *priors["delta"], dims="system")
        gamma = pm.Normal("gamma", *priors["gamma"], dims="system")
        log_phi = pm.Normal("log_phi", *priors["log_phi"], dims="system")
        phi = pm.Deterministic("phi", pt.exp(log_phi), dims="system")
        sigma_task = pm.HalfNormal("sigma_task", priors["sigma_task"])
        e = pm.Deterministic(
            "task_effect",
            sigma_task * pm.Normal("task_effect_z", 0.0, 1.0, dims="task"),
            dims="task",
        )
        eta = alpha[:, None] + e[None, :]
        if layout.paired:
            sigma_v = pm.HalfNormal("sigma_task_system", priors["sigma_task_system"])
            v = pm.Deterministic(
                "task_system_effect",
                sigma_v * pm.Normal("task_system_effect_z", 0.0, 1.0, dims=("system", "task")),
                dims=("system", "task"),
            )
            eta = eta + v
        if layout.has_clusters:
            sigma_u = pm.HalfNormal("sigma_cluster", priors["sigma_cluster"])
            u = pm.Deterministic(
                "cluster_effect",
                sigma_u * pm.Normal("cluster_effect_z", 0.0, 1.0, dims="cluster"),
                dims="cluster",
            )
            eta = eta + u[layout.cluster][None, :]
            if layout.paired:
                sigma_w = pm.HalfNormal("sigma_cluster_system", priors["sigma_cluster_system"])
                w = pm.Deterministic(
                    "cluster_system_effect",
                    sigma_w
                    * pm.Normal("cluster_system_effect_z", 0.0, 1.0, dims=("system", "cluster")),
                    dims=("system", "cluster"),
                )
                eta = eta + w[:, layout.cluster]
        sigma_zoi = pm.HalfNormal("sigma_zoi", priors["sigma_zoi"])
        b = pm.Deterministic(
            "zoi_task_effect",
            sigma_zoi * pm.Normal("zoi_task_effect_z", 0.0, 1.0, dims="task"),
            dims="task",
        )
        zeta = gamma[:, None] + b[None, :]
        pm.Potential("loglik", _gathered_loglik(data_vars, eta, zeta, delta, phi))
    return model


def target_accept(n_tasks: int) -> float:
    """NUTS target acceptance for ``n_tasks`` tasks (:data:`TARGET_ACCEPT`).

    Examples
    --------
    >>> from bayeval.models.zoib import target_accept
    >>> target_accept(10), target_accept(360)
    (0.95, 0.9)
    """
    return TARGET_ACCEPT_FEW if n_tasks < FEW_TASKS else TARGET_ACCEPT


def kernel_inputs(data, priors=None, missing_bound=None) -> dict:
    """The compiled kernel's data (:mod:`bayeval.models.kernels.zoib`), by its ``FIELDS`` names.

    ``spec``, the prior constants and the cells' statistics, C-contiguous, int64 or float64 and
    read-only (nutpie is handed their addresses).
    """
    priors = validate_priors(priors)
    layout = Layout.from_dataset(data.dataset)
    stats = _model_data(score_arrays(data, missing_bound))
    G = layout.n_clusters
    const = [v for name in zoib_kernel.PRIOR_CONSTANTS for v in np.atleast_1d(priors[name])]
    values = {
        "spec": [
            layout.n_systems,
            layout.n_tasks,
            G,
            layout.paired,
            layout.has_clusters,
            stats["interior"].size,
            layout.n_tasks >= zoib_kernel.LEVEL_TASKS,
        ],
        "const": const,
        "cluster": layout.cluster,
        "n0": stats["n0"].ravel(),
        "n1": stats["n1"].ravel(),
        "nmid": stats["nmid"].ravel(),
        "interior": stats["interior"],
        "sumlog": stats["interior_sumlog"],
        "sumlog1m": stats["interior_sumlog1m"],
    }
    return kernel_data(values, integers=("spec", "cluster", "interior"))


def kernel_model(inputs: dict):
    """:func:`kernel_inputs` as a model ``nutpie.sample`` takes.

    The compiled kernel is called as C functions from nutpie's threads; each draw keeps ``values``
    (:func:`split_values`).
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

    spec = inputs["spec"]
    shape = (*spec[:3], bool(spec[3]), bool(spec[4]))
    dim = int(zoib_kernel.offsets(*shape)[10])
    kept = int(zoib_kernel.kept_size(*shape))
    sizes = {"dim": dim, "n_kept": kept, **dict(zip(zoib_kernel.SPEC, spec.tolist(), strict=True))}
    return nutpie_model.values_model(
        inputs, zoib_kernel.FIELDS, dim, kept, sizes, zoib_kernel.nutpie_functions
    )


def split_values(values: np.ndarray, layout: Layout) -> xr.Dataset:
    """The named posterior from the kernel's kept values ``(chain, draw, kept)``.

    Its variables are :data:`POSTERIOR_VARS` and :data:`LATENT_VARS`.
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

    S, J = layout.n_systems, layout.n_tasks
    G = layout.n_clusters
    present = {
        "sigma_task": True,
        "sigma_task_system": layout.paired,
        "sigma_cluster": layout.has_clusters,
        "sigma_cluster_system": layout.paired and layout.has_clusters,
        "sigma_zoi": True,
    }
    # every spread has its slot in the draw; those the data lack are dropped after the split
    blocks: list[nutpie_model.Block] = [
        (name, ("system",), (S,)) for name in ("alpha", "delta", "gamma", "phi")
    ]
    blocks += [(name, (), ()) for name in present]
    blocks.append(("task_effect", ("task",), (J,)))
    if layout.paired:
        blocks.append(("task_system_effect", ("system", "task"), (S, J)))
    if layout.has_clusters:
        blocks.append(("cluster_effect", ("cluster",), (G,)))
        if layout.paired:
            blocks.append(("cluster_system_effect", ("system", "cluster"), (S, G)))
    blocks.append(("zoi_task_effect", ("task",), (J,)))
    post = nutpie_model.split_kept(values, blocks)
    return post.drop_vars([name for name, here in present.items() if not here])


def sample(
    data, priors, draws, tune, chains, seed, progress, cores, engine="nutpie", missing_bound=None
) -> xr.DataTree:
    """NUTS on the zoib model.

    Returns a DataTree whose posterior holds :data:`POSTERIOR_VARS` and the latent effects, and its
    sampler statistics.

    With nutpie the compiled kernel (:mod:`bayeval.models.kernels.zoib`) is sampled: nothing
    is built or compiled per fit. Where the installed nutpie lacks the route the kernel needs,
    the PyMC model is compiled for nutpie instead (kept per data shape and priors, with only
    its data replaced by later fits).
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

    priors = validate_priors(priors)
    layout = Layout.from_dataset(data.dataset)
    accept = target_accept(layout.n_tasks)
    if engine == "nutpie" and nutpie_model.available():
        values, stats = nutpie_model.sample_values(
            kernel_model(kernel_inputs(data, priors, missing_bound)),
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            seed=seed,
            progress=progress,
            target_accept=accept,
            **NUTPIE_OPTIONS,
        )
        post = split_values(values, layout)
        return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})
    if engine == "nutpie":
        key = (layout.key(), tuple(sorted((k, str(v)) for k, v in priors.items())))
        compiled = _compiled.get(
            key,
            lambda: build_zoib_model(data, priors, missing_bound),
            lambda: _model_data(score_arrays(data, missing_bound)),
        )
        trace = nutpie_model.sample_trace(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            seed=seed,
            progress=progress,
            target_accept=accept,
            **NUTPIE_OPTIONS,
        )
    else:
        with build_zoib_model(data, priors, missing_bound):
            trace = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                random_seed=seed,
                progressbar=progress,
                quiet=not progress,
                compute_convergence_checks=False,
                cores=cores,
                target_accept=accept,
                mp_ctx="forkserver",
            )
    return trace


# -- estimands ---------------------------------------------------------------------------------
def _normal_mean_expit(location, scale):
    """``E expit(location + scale Z)`` for Z standard normal (a fine grid, as logit_normal)."""
    return normal_expectation(location, scale, "pass@k", [1])[..., 0]


class ZoibScores(base.Model):
    """The zoib model: sampled by NUTS, its estimands (the mean score) read from the fitted tree."""

    name = "zoib"
    estimands = ("tasks", "population")
    #: Metrics this model estimates: the mean score (``"pass@k"`` at k = 1 reads the same:
    #: the expected score of one attempt, pass@1 on binary data).
    metrics = ("mean", "pass@k")
    engines = {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc"}
    paired = True
    scores = True  # the mean of scores in [0, 1]
    posterior_vars = POSTERIOR_VARS

    # -- fitting -------------------------------------------------------------------------------
    def supports(self, data) -> str | None:
        """Scores in [0, 1] and 0/1 outcomes alike; not strata."""
        return NO_STRATA if "stratum" in data.dataset.coords else None

    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def build(self, data, priors=None, *, missing_bound=None, kernel: bool = False):
        """:func:`build_zoib_model`, or with ``kernel`` the compiled log density nutpie samples.

        See :func:`kernel_model`.
        """
        if kernel:
            return kernel_model(kernel_inputs(data, priors, missing_bound))
        return build_zoib_model(data, priors, missing_bound)

    def single_trial_warning(self, data) -> str:
        """Several systems: what is identified only through the other systems."""
        if len(data.systems) < 2:
            return super().single_trial_warning(data)
        return (
            "with one attempt per task the task-by-system spread and the Beta precision "
            "phi are told apart only by the shape of the interior scores: they mix slowly "
            "and, on LiveBench-like data, fail the MCMC gates; read the mean score's own "
            "ESS in summary() before relying on it, or fit model='fractional', the default "
            "for scores (models/zoib.md, models/fractional.md)"
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
        """NUTS on every effect (:func:`sample`, once per missing-outcome bound)."""
        engine = self.engine(sampler)
        priors = validate_priors(priors)
        ds = data.dataset
        _, _, bounds = counts_by_bound(ds)
        if tune is None:
            tune = self.default_tune()
        posterior, sample_stats = base.nuts(
            data, self, priors, draws, chains, tune, seed, engine, progress, bounds
        )
        posterior = base.finish_bounds(posterior, bounds)
        return base.sampled(
            {"posterior": posterior, "sample_stats": sample_stats},
            {"tune": tune, "target_accept": target_accept(ds.sizes["task"])},
        )

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
        trace = sample(
            data,
            priors,
            draws,
            tune,
            chains,
            seed,
            progress,
            cores,
            engine,
            missing_bound=missing_bound,
        )
        post = trace["posterior"].to_dataset()
        names = [v for v in (*POSTERIOR_VARS, *LATENT_VARS) if v in post]
        kept = post[names].drop_vars([c for c in ("task", "cluster") if c in post.coords])
        return kept, trace

    def label_draws(self, posterior, data):
        """The cluster labels of the cluster effects."""
        if "cluster" not in posterior.dims:
            return posterior
        return posterior.assign_coords(
            cluster=np.asarray(Layout.from_dataset(data.dataset).cluster_labels, dtype=object)
        )

    # -- estimands -----------------------------------------------------------------------------

    @staticmethod
    def _posterior(tree, bound):
        post = tree["posterior"].to_dataset()
        if "missing_bound" in post.dims:
            post = post.isel(missing_bound=bound)
        return post

    @staticmethod
    def _bounds(tree):
        obs = dataset_of(tree)
        return (
            obs["successes"]["missing_bound"].values.tolist()
            if ("missing_bound" in obs["successes"].dims)
            else None
        )

    @staticmethod
    def _flat(post, name, dims, shape):
        """(draws,) + shape array of a posterior variable (zeros when the model lacks it)."""
        draws = post.sizes["chain"] * post.sizes["draw"]
        if name not in post:
            return np.zeros((draws,) + shape)
        return post[name].transpose("chain", "draw", *dims).values.reshape((draws,) + shape)

    def _params(self, tree, bound):
        post = self._posterior(tree, bound)
        layout = Layout.from_dataset(dataset_of(tree))
        S, J = layout.n_systems, layout.n_tasks
        G = layout.n_clusters
        get = self._flat
        prm = {
            name: get(post, name, ("system",), (S,)) for name in ("alpha", "delta", "gamma", "phi")
        }
        prm.update({name: get(post, name, (), ()) for name in (*SIGMAS, "sigma_zoi")})
        prm["e"] = get(post, "task_effect", ("task",), (J,))
        prm["v"] = get(post, "task_system_effect", ("system", "task"), (S, J))
        prm["u"] = get(post, "cluster_effect", ("cluster",), (G,))
        prm["w"] = get(post, "cluster_system_effect", ("system", "cluster"), (S, G))
        prm["b"] = get(post, "zoi_task_effect", ("task",), (J,))
        return prm, layout, post.sizes["chain"], post.sizes["draw"]

    @staticmethod
    def _logits(prm, layout, draws=slice(None)):
        """``eta`` and ``zeta`` of every cell per draw, each (draw, system, task)."""
        eta = (
            prm["alpha"][draws][:, :, None]
            + prm["e"][draws][:, None, :]
            + prm["v"][draws]
            + prm["u"][draws][:, layout.cluster][:, None, :]
            + prm["w"][draws][:, :, layout.cluster]
        )
        return eta, prm["gamma"][draws][:, :, None] + prm["b"][draws][:, None, :]

    @classmethod
    def cell_means(cls, prm, layout, draws=slice(None)):
        """Mean score ``m[s, j]`` per draw, (draw, system, task)."""
        eta, zeta = cls._logits(prm, layout, draws)
        zoi = special.expit(zeta)
        coi = special.expit(eta)
        mu = special.expit(eta + prm["delta"][draws][:, :, None])
        return zoi * coi + (1 - zoi) * mu

    # -- the log-likelihood and replicated scores ----------------------------------------------
    def observations(self, ds) -> tuple[str, ...]:
        """Each cell's sum of scores and its full-credit count (0/1 outcomes: its successes)."""
        return ("score_sum", "successes") if "score_sum" in ds.data_vars else ("successes",)

    def pattern_log_likelihood(self, tree, c, n) -> base.Patterns:
        """Each task's log-likelihood of its scores given its sampled effects, over its systems.

        :func:`zoib_loglik` of the cells' statistics under the missing-outcome policy, at
        each draw's effects: the effects are the task's own parameters, so each task is its
        own pattern.
        """
        stats = score_arrays(EvalData(dataset_of(tree)))
        prm, layout, n_chain, n_draw = self._params(tree, 0)
        D, S, J = n_chain * n_draw, layout.n_systems, layout.n_tasks
        total = np.empty((D, J))
        block = max(1, 2_000_000 // max(S * J, 1))  # memory stays bounded
        for start in range(0, D, block):
            part = slice(start, min(start + block, D))
            eta, zeta = self._logits(prm, layout, part)
            cells = zoib_loglik(
                stats, eta, zeta, prm["delta"][part][:, :, None], prm["phi"][part][:, :, None]
            )
            total[part] = cells.sum(axis=1)
        every = np.arange(J)
        return base.Patterns(total, every, every)

    def log_coefficients(self, ds) -> np.ndarray:
        """The log multinomial coefficient of each cell's counts at 0, at 1 and between.

        On 0/1 outcomes the binomial coefficient: the binary models' scale.
        """
        stats = score_arrays(EvalData(ds))
        n0, n1, nmid = stats["n0"], stats["n1"], stats["nmid"]
        return (
            special.gammaln(n0 + n1 + nmid + 1)
            - special.gammaln(n0 + 1)
            - special.gammaln(n1 + 1)
            - special.gammaln(nmid + 1)
        )

    def replicator(self, tree) -> base.Replicator:
        """Each cell's replicated sum of scores and full-credit count, at each draw's effects.

        Per attempt (the policy's attempts of the cell): graded 0/1 with probability ``zoi``,
        then 1 with probability ``coi``; otherwise a ``Beta(mu phi, (1 - mu) phi)`` score. On
        0/1 outcomes only the full-credit count, ``successes``. A block of tasks at a time,
        each task from its own generator.
        """
        ds = dataset_of(tree)
        n = score_arrays(EvalData(ds))["trials"].astype(np.int64)
        prm, layout, _, _ = self._params(tree, 0)
        delta, phi = prm["delta"][:, :, None], prm["phi"][:, :, None]
        scores = "score_sum" in ds.data_vars

        def one_task(rng, n_j, eta, zeta, mu):  # one task's cells, each (draw, system)
            graded = rng.binomial(n_j, special.expit(zeta))
            ones = rng.binomial(graded, special.expit(eta))
            total = ones.astype(float)
            a, b = mu * phi[:, :, 0], (1 - mu) * phi[:, :, 0]
            for k in range(int(n_j.max(initial=0))):  # the k-th interior score, where there is one
                total += np.where(n_j - graded > k, rng.beta(a, b), 0.0)
            return np.stack([ones, total])

        def draw(rngs, tasks):
            cluster = layout.cluster[tasks]
            eta = (
                prm["alpha"][:, :, None]
                + prm["e"][:, None, tasks]
                + prm["v"][:, :, tasks]
                + prm["u"][:, cluster][:, None, :]
                + prm["w"][:, :, cluster]
            )  # (draw, S, tasks)
            zeta = prm["gamma"][:, :, None] + prm["b"][:, None, tasks]
            mu = np.clip(special.expit(eta + delta), 1e-12, 1 - 1e-12)
            ones, total = base.each_task(rngs, one_task, n[None, :, tasks], eta, zeta, mu)
            out = {"successes": ones.astype(np.int64)}
            if scores:
                out["score_sum"] = total
            return out

        return draw

    def _wrap(self, values, tree, bounds, n_chain, n_draw):
        values = np.stack(values, axis=0)  # (bound, draws, system)
        values = values.reshape((len(values), n_chain, n_draw, values.shape[-1], 1))
        return BetaRates._wrap(np.moveaxis(values, 0, 2), tree, bounds, np.array([1]), "")

    def _trials(self, tree):
        stats = EvalData(dataset_of(tree)).score_statistics()
        trials = stats["trials"]
        if "missing_bound" not in trials.dims:
            trials = trials.expand_dims(missing_bound=1)
        return trials.transpose("missing_bound", "system", "task").values

    def tasks(self, tree, metric, ks, shared=None, tau=None):
        """Draws of the mean over these tasks of each system's mean score."""
        bounds = self._bounds(tree)
        trials = self._trials(tree)
        if shared is not None:
            trials = trials * np.asarray(shared, dtype=trials.dtype)
        out = []
        for b in range(trials.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            weights = task_weights(trials[b], Populations.from_dataset(dataset_of(tree)))  # (S, J)
            total = np.empty((n_chain * n_draw, layout.n_systems))
            step = max(1, 2_000_000 // max(layout.n_systems * layout.n_tasks, 1))
            for start in range(0, len(total), step):
                chunk = slice(start, start + step)
                total[chunk] = np.einsum("dsj,sj->ds", self.cell_means(prm, layout, chunk), weights)
            out.append(np.clip(total, 0.0, 1.0))
        return self._wrap(out, tree, bounds, n_chain, n_draw)

    def population(self, tree, metric, ks, clusters="new", weighting="task", tau=None):
        """Draws of each system's mean score on a new task (exact normal integrals per draw)."""
        bounds = self._bounds(tree)
        out = []
        for b in range(len(bounds or [None])):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            zoi = _normal_mean_expit(prm["gamma"], prm["sigma_zoi"][:, None])  # (D, S)
            if clusters == "observed" and layout.has_clusters:
                labels, sizes = np.unique(layout.cluster, return_counts=True)
                shares = (
                    sizes / sizes.sum()
                    if weighting == "task"
                    else np.full(len(labels), 1 / len(labels))
                )
                location = (
                    prm["alpha"][:, :, None] + prm["u"][:, None, labels] + prm["w"][:, :, labels]
                )  # (D, S, G)
                spread = np.sqrt(prm["sigma_task"] ** 2 + prm["sigma_task_system"] ** 2)
            else:
                location = prm["alpha"][:, :, None]
                shares = np.ones(1)
                names = SIGMAS if clusters != "observed" else SIGMAS[:2]
                spread = np.sqrt(sum(prm[name] ** 2 for name in names))
            scale = np.broadcast_to(spread[:, None, None], location.shape)
            coi = _normal_mean_expit(location, scale)
            mu = _normal_mean_expit(location + prm["delta"][:, :, None], scale)
            value = zoi[:, :, None] * coi + (1 - zoi[:, :, None]) * mu
            out.append(np.clip(value @ shares, 0.0, 1.0))
        return self._wrap(out, tree, bounds, n_chain, n_draw)

    def task_rates(self, tree, systems=None):
        """Per-task mean-score draws ``m[s, j]`` (NaN where a cell has no valid attempt)."""
        obs = dataset_of(tree)
        all_systems = obs["system"].values.tolist()
        chosen = all_systems if systems is None else list(systems)
        index = [all_systems.index(s) for s in chosen]
        bounds = self._bounds(tree)
        trials = self._trials(tree)
        out = []
        for b in range(trials.shape[0]):
            prm, layout, n_chain, n_draw = self._params(tree, b)
            m = self.cell_means(prm, layout)[:, index]
            m = np.where((trials[b][index] > 0)[None], m, np.nan)
            out.append(m.reshape(n_chain, n_draw, len(index), -1))
        post = tree["posterior"]
        da = xr.DataArray(
            np.stack(out, axis=-1),
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

    def predictive(self, tree) -> xr.Dataset:
        """No posterior predictive check yet for scores (an empty dataset)."""
        return xr.Dataset()
