r"""Item response theory for 0/1 outcomes with trials: the ``irt`` model (2PL or 1PL).

Model (system s, item j in cluster g = g(j); c successes of n trials per cell)::

    c[s, j] ~ Binomial(n[s, j], p[s, j]),     logit p[s, j] = a[j] (theta[s] - b[j])

    theta[s] ~ Normal(0, 1)                                        ability
    b[j] = mu_b + u[g] + sigma_b z_b[j],   z_b[j] ~ Normal(0, 1)   difficulty
    u[g] = sigma_cluster z_u[g],           z_u[g] ~ Normal(0, 1)   (data with clusters)
    log a[j] = mu_log_a + sigma_log_a z_a[j],  z_a[j] ~ Normal(0, 1)   discrimination (2PL)

    mu_b ~ Normal(0, 2)            sigma_b ~ HalfNormal(2)        sigma_cluster ~ HalfNormal(1)
    mu_log_a ~ Normal(0, 1)        sigma_log_a ~ HalfNormal(0.5)

The logit ``a (theta - b)`` is unchanged when theta and b are shifted together, or scaled by c
while a is divided by c: the likelihood alone fixes neither the origin nor the unit of the
ability scale. ``theta ~ Normal(0, 1)`` fixes both (the systems' abilities are standardised;
the difficulties' location ``mu_b`` and the discriminations' level ``mu_log_a`` are free), and
a positive ``a`` fixes the sign (a higher ability succeeds more often on every item).

The 1PL form (``priors={"form": "1pl"}``) gives every item the same discrimination
``a = exp(mu_log_a)``: the Rasch model with its scale free (the same as ``a_j = 1`` with
``theta ~ Normal(0, exp(mu_log_a))``), and no ``sigma_log_a``.

Inference: NUTS by nutpie on the non-centred item effects ``z_b``, ``z_a`` and
``z_u``; the likelihood is one sum over the cells that have trials, ``c log p + (n - c)
log(1 - p)`` through softplus. The sampler moves on the item-anchored scale, an exact change of
variables: ``phi[s] = exp(mu_log_a) (theta[s] - mu_b)`` (the logit at a typical item),
``beta = exp(mu_log_a) sigma_b`` and ``gamma = exp(mu_log_a) sigma_cluster``, with the priors
above and the change's Jacobian (``-S mu_log_a``, ``log sigma_b``, ``log sigma_cluster``) added
to the log density; ``mu_b`` is replaced by the abilities' mean (a shift), and the anchored
cluster effects are split into their mean and their zero-sum deviations (``ZeroSumNormal``),
independent under the prior. On the standardised scale the abilities, ``mu_b``, ``sigma_b`` and
``mu_log_a`` slide together along the ridge the likelihood leaves (one scale, set by the prior
alone), and NUTS crossed it slowly (r-hat 1.04, bulk ESS 54 in ``sigma_b`` for 1,000 draws;
centring the items was worse, r-hat 1.24); on the anchored scale the likelihood fixes
``phi``, ``beta`` and the item effects, the prior the abilities' mean, and only
``mu_log_a`` carries the scale (models/irt.md, sampling settings). An unlinked fit samples
this density written out by hand with its gradient (:mod:`bayeval.models.kernels.irt`, tested
against the PyMC model's), with the items' common shift as one coordinate: it builds and
compiles nothing per fit, at about a quarter of the PyMC graph's time a draw. Linked fits and
``sampler="pymc"`` sample the PyMC model, compiled once per data shape.

Estimands (pass@k, pass^k, G-pass@k and consistency, functions of each cell's rate):

* ``tasks``: the mean over these items (those the system ran) of ``f(p[s, j])`` at each draw;
* ``population``: a new item drawn from the fitted item distribution, ``E f(expit(a (theta -
  b)))`` with ``b ~ Normal(mu_b, (sigma_b^2 + sigma_cluster^2)^(1/2))`` (a new cluster) or a
  mixture over the observed clusters, and ``log a ~ Normal(mu_log_a, sigma_log_a)``; given
  ``a`` the logit is normal, so the integral over ``b`` is the logit-normal model's exact
  one-dimensional quadrature, and the one over ``log a`` a Gauss-Hermite rule per draw.

Linking (``priors={"anchors": ...}``, built by ``bayeval.irt.link``): a new version of a
benchmark shares anchor items with a calibration. Each anchor's ``b`` and ``log a`` get a
Normal prior at its calibrated posterior mean and sd, the other items the hierarchical prior
above, and the abilities ``theta[s] ~ Normal(mu_theta, sigma_theta)`` with ``mu_theta ~
Normal(0, 2)``, ``sigma_theta ~ HalfNormal(2)``: the anchors, not the new systems, fix the
scale, so the new items' parameters and the new systems' abilities are on the calibration's
scale (:func:`build_linked_model`).

Model card: ``models/irt.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special

from bayeval._validate import merge_priors
from bayeval.data.groups import dataset_of
from bayeval.models import base
from bayeval.models._beta_family import Populations, metric_of_rate, task_weights
from bayeval.models.kernels import irt as irt_kernel
from bayeval.models.kernels.compiled_models import CompiledModels
from bayeval.models.logit_normal import cluster_codes, normal_expectation

__all__ = [
    "DEFAULT_PRIORS",
    "FORMS",
    "LINK_PRIORS",
    "IrtRates",
    "Layout",
    "anchor_arrays",
    "build_irt_model",
    "build_linked_model",
    "item_draws",
    "validate_priors",
]

FORMS = ("2pl", "1pl")
DEFAULT_PRIORS: dict = {
    "form": "2pl",
    "mu_b": (0.0, 2.0),
    "sigma_b": 2.0,
    "sigma_cluster": 1.0,
    "mu_log_a": (0.0, 1.0),
    "sigma_log_a": 0.5,
}
#: The priors only a linked fit (``priors={"anchors": ...}``) reads: the new systems' ability
#: population, whose location and spread the anchors fix on the calibration's scale.
LINK_PRIORS: dict = {"mu_theta": (0.0, 2.0), "sigma_theta": 2.0}
HYPER_VARS = ("mu_b", "sigma_b", "sigma_cluster", "mu_log_a", "sigma_log_a")
LINK_VARS = ("mu_theta", "sigma_theta")
POSTERIOR_VARS = ("theta", "a", "b", *HYPER_VARS, *LINK_VARS)
LATENT_VARS = ("cluster_effect",)
#: Gauss-Hermite nodes over ``log a`` for the population estimand (a smooth integrand: 24
#: nodes agree with 96 to 1e-9 at sigma_log_a = 1, models/irt.md).
LOG_A_NODES = 24
TARGET_ACCEPT = 0.9
#: Posterior draws per chain when ``draws`` is not given. The cluster spread mixes slowly: at
#: 1,000 draws of 4 chains on SWE-bench Verified 3 of 4 seeds missed the gates (r-hat up to
#: 1.015, bulk ESS 359-771); 2,000 draws pass them (r-hat 1.004, ESS 696-814), at 1.9x the
#: paired logit-normal fit's time with the compiled kernel (models/irt.md).
DEFAULT_DRAWS = 2000
#: Further options of ``nutpie.sample`` (a low-rank mass matrix, for the ridge along the
#: ability scale, was several times slower: models/irt.md, sampling settings).
NUTPIE_OPTIONS: dict = {}
_compiled = CompiledModels()
REFUSED = {
    "stratum": (
        "model='irt' does not support strata yet: fit each stratum on its own "
        "(data.sel(task=...)) or leave stratum= unset"
    ),
}


def validate_priors(priors) -> dict:
    """Fill defaults and check the priors (Normals as (mean, sd), HalfNormal scales, a form).

    With ``anchors`` (a linked fit: :func:`anchor_arrays` says what they hold) the priors of
    :data:`LINK_PRIORS` are filled in and checked too; without them they are refused.

    Examples
    --------
    >>> from bayeval.models.irt import validate_priors
    >>> validate_priors({"form": "1pl"})["form"], validate_priors(None)["sigma_b"]
    ('1pl', 2.0)
    >>> anchors = {"task": ["t0"], "b": [[0.5, 0.2]], "log_a": [[0.0, 0.1]]}
    >>> validate_priors({"anchors": anchors})["mu_theta"]
    (0.0, 2.0)
    """
    priors = dict(priors or {})
    anchors = priors.pop("anchors", None)
    link = {name: priors.pop(name) for name in LINK_PRIORS if name in priors}
    if anchors is None and link:
        raise ValueError(
            f"unknown prior(s) {sorted(link)} for the irt model without anchors: they set the "
            "ability population of a linked fit, priors={'anchors': ...} (bayeval.irt.link)"
        )
    merged = merge_priors(priors, DEFAULT_PRIORS, "irt")
    if merged["form"] not in FORMS:
        raise ValueError(f"prior form must be one of {list(FORMS)}; got {merged['form']!r}")
    out: dict = {"form": merged["form"]}
    normals: tuple[str, ...] = ("mu_b", "mu_log_a")
    scales: tuple[str, ...] = ("sigma_b", "sigma_cluster", "sigma_log_a")
    if anchors is not None:
        merged.update({**LINK_PRIORS, **link})
        normals, scales = (*normals, "mu_theta"), (*scales, "sigma_theta")
    for name in normals:
        mean, sd = merged[name]
        if not (np.isfinite(mean) and np.isfinite(sd) and sd > 0):
            raise ValueError(
                f"prior {name} needs a finite mean and a positive sd; got {merged[name]!r}"
            )
        out[name] = (float(mean), float(sd))
    for name in scales:
        if not (np.isfinite(merged[name]) and merged[name] > 0):
            raise ValueError(f"prior {name} is a HalfNormal scale > 0; got {merged[name]!r}")
        out[name] = float(merged[name])
    if anchors is not None:
        out["anchors"] = validate_anchors(anchors)
    return out


def validate_anchors(anchors) -> dict:
    """Anchor items as plain lists: ``task``, and ``b`` and ``log_a`` as (mean, sd) pairs."""
    if not isinstance(anchors, dict) or set(anchors) != {"task", "b", "log_a"}:
        raise ValueError(
            "prior anchors must be a dict with keys 'task', 'b' and 'log_a' (build it with "
            f"bayeval.irt.link); got {anchors!r:.120}"
        )
    tasks = [t.item() if isinstance(t, np.generic) else t for t in anchors["task"]]
    if not tasks:
        raise ValueError("prior anchors hold no task: a link needs at least one anchor item")
    if len(set(tasks)) != len(tasks):
        raise ValueError("prior anchors name a task more than once")
    out: dict = {"task": tasks}
    for name in ("b", "log_a"):
        pairs = np.asarray(anchors[name], dtype=float)
        if pairs.shape != (len(tasks), 2):
            raise ValueError(
                f"prior anchors {name!r} must hold one (mean, sd) pair per task "
                f"({len(tasks)}); got shape {pairs.shape}"
            )
        bad = ~(np.isfinite(pairs).all(axis=1) & (pairs[:, 1] > 0))
        if bad.any():
            raise ValueError(
                f"prior anchors {name!r} need finite means and positive sds; bad for "
                f"task(s) {[tasks[i] for i in np.flatnonzero(bad)][:5]}"
            )
        out[name] = pairs.tolist()
    return out


def anchor_arrays(tasks, anchors: dict) -> dict[str, np.ndarray]:
    """Per item of ``tasks``: whether it is an anchor, and its prior's means and sds.

    ``anchors`` holds ``task`` (labels), ``b`` and ``log_a`` (a (mean, sd) pair per task);
    the items of ``tasks`` that are not anchors get mean 0 and sd 1 (unread). A ValueError
    when no item of ``tasks`` is an anchor.

    Examples
    --------
    >>> from bayeval.models.irt import anchor_arrays
    >>> out = anchor_arrays(["x", "y"], {"task": ["y"], "b": [[1.0, 0.2]], "log_a": [[0.0, 0.1]]})
    >>> out["anchor"].tolist(), out["anchor_b"].tolist()
    ([0.0, 1.0], [[0.0, 1.0], [1.0, 0.2]])
    """
    position = {t: i for i, t in enumerate(anchors["task"])}
    shared = [(j, position[t]) for j, t in enumerate(tasks) if t in position]
    if not shared:
        raise ValueError(
            f"no task of these data is an anchor: the data's tasks "
            f"({len(tasks)}, e.g. {list(tasks)[:3]}) and the calibration's "
            f"({len(position)}, e.g. {list(position)[:3]}) share none, so nothing ties the "
            "new items to the calibration's scale; label the shared items alike"
        )
    mask = np.zeros(len(tasks))
    b = np.tile([0.0, 1.0], (len(tasks), 1))
    log_a = b.copy()
    rows, source = np.array(shared).T
    mask[rows] = 1.0
    b[rows] = np.asarray(anchors["b"], dtype=float)[source]
    log_a[rows] = np.asarray(anchors["log_a"], dtype=float)[source]
    return {"anchor": mask, "anchor_b": b, "anchor_log_a": log_a}


@dataclass(frozen=True)
class Layout:
    """Systems, items, clusters and the cells with trials of a dataset."""

    n_systems: int
    n_tasks: int
    cluster_labels: list | None
    cluster: np.ndarray  # cluster code per item (zeros without clusters)
    system_index: np.ndarray  # system of each cell with trials
    task_index: np.ndarray  # item of each cell with trials
    successes: np.ndarray  # per cell with trials
    trials: np.ndarray

    @property
    def n_clusters(self) -> int:
        """The number of clusters (one without clusters)."""
        return len(self.cluster_labels) if self.cluster_labels is not None else 1

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> Layout:
        """The layout of ``ds``; a ValueError for what the model does not support."""
        for coord, reason in REFUSED.items():
            if coord in ds.coords:
                raise ValueError(reason)
        codes, labels = cluster_codes(ds)
        c = ds["successes"].transpose("system", "task").values
        n = ds["trials"].transpose("system", "task").values
        s, j = np.nonzero(n > 0)
        return cls(
            ds.sizes["system"],
            ds.sizes["task"],
            labels,
            codes,
            s.astype(np.int64),
            j.astype(np.int64),
            c[s, j].astype(float),
            n[s, j].astype(float),
        )

    def key(self) -> tuple:
        """What a compiled model depends on besides its ``pm.Data``."""
        return (self.n_systems, self.n_tasks, self.n_clusters)

    def data(self) -> dict:
        """The arrays the PyMC model reads as ``pm.Data``, by name.

        Successes and trials as dense (system, task) arrays, zero where a cell has no trial
        (it adds nothing to the log-likelihood): a broadcast logit has a cheaper gradient than
        one gathered per cell.
        """
        shape = (self.n_systems, self.n_tasks)
        c, n = np.zeros(shape), np.zeros(shape)
        c[self.system_index, self.task_index] = self.successes
        n[self.system_index, self.task_index] = self.trials
        out = {"successes": c, "trials": n}
        if self.cluster_labels is not None:  # read only by a model with clusters
            out["cluster_index"] = self.cluster
        return out


def build_irt_model(data, priors=None):
    """Build the IRT model as a PyMC model (non-centred item effects).

    Parameters
    ----------
    data : EvalData
        0/1 outcomes (any trials per cell) of several systems on shared items.
    priors : dict, optional
        See :data:`DEFAULT_PRIORS`; ``form`` is ``"2pl"`` or ``"1pl"``.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.irt import build_irt_model
    >>> model = build_irt_model(be.from_counts([[3, 1, 0], [4, 2, 1]], trials=4))
    >>> sorted(model.named_vars_to_dims["b"]), "sigma_log_a" in model.named_vars
    (['task'], True)
    """
    priors = validate_priors(priors)
    if "anchors" in priors:
        return build_linked_model(data, priors)
    ds = data.dataset
    layout = Layout.from_dataset(ds)
    coords = _coords(ds, layout)
    with pm.Model(coords=coords) as model:
        arrays = {name: pm.Data(name, value) for name, value in layout.data().items()}
        # sampled on the item-anchored scale (module docstring): the likelihood reads
        # psi = exp(m) (theta - mu_b) - mean(U) (the logit at a typical item of a typical
        # cluster), beta = exp(m) sigma_b and the anchored cluster deviations; the abilities'
        # mean theta_bar stands in for mu_b (a shift)
        m = pm.Normal("mu_log_a", *priors["mu_log_a"])
        psi = pm.Flat("phi", dims="system")
        theta_bar = pm.Flat("theta_bar")
        log_beta = pm.Flat("log_beta")
        scale = pt.exp(-m)
        theta = pm.Deterministic("theta", (psi - psi.mean()) * scale + theta_bar, dims="system")
        sigma_b = pm.Deterministic("sigma_b", pt.exp(log_beta) * scale)
        z_b = pm.Normal("b_z", 0.0, 1.0, dims="task")
        anchored = pt.exp(log_beta) * z_b  # exp(m) (b - mu_b - mean(u))
        location = theta_bar - psi.mean() * scale  # mu_b + mean(u)
        prior = (
            pm.logp(pm.Normal.dist(0.0, 1.0), theta).sum()
            - layout.n_systems * m
            + pm.logp(pm.HalfNormal.dist(priors["sigma_b"]), sigma_b)
            + pt.log(sigma_b)
        )
        if layout.cluster_labels is None:
            mu_b = location
            b = mu_b + sigma_b * z_b
        else:
            # anchored cluster effects U = exp(m) u, iid Normal(0, gamma): their mean (set by
            # the prior alone) and their zero-sum deviations, independent
            log_gamma = pm.Flat("log_gamma")
            gamma = pt.exp(log_gamma)
            sigma_u = pm.Deterministic("sigma_cluster", gamma * scale)
            prior += pm.logp(pm.HalfNormal.dist(priors["sigma_cluster"]), sigma_u)
            prior += pt.log(sigma_u)
            mean_u = pm.Normal("cluster_mean", 0.0, 1.0) * gamma / np.sqrt(layout.n_clusters)
            deviation = pm.ZeroSumNormal("cluster_deviation", sigma=gamma, dims="cluster")
            u = pm.Deterministic("cluster_effect", (mean_u + deviation) * scale, dims="cluster")
            anchored = anchored + deviation[arrays["cluster_index"]]
            mu_b = location - mean_u * scale
            b = mu_b + u[arrays["cluster_index"]] + sigma_b * z_b
        mu_b = pm.Deterministic("mu_b", mu_b)
        prior += pm.logp(pm.Normal.dist(*priors["mu_b"]), mu_b)
        pm.Deterministic("b", b, dims="task")
        pm.Potential("prior", prior)
        if priors["form"] == "2pl":
            sigma_a = pm.HalfNormal("sigma_log_a", priors["sigma_log_a"])
            z_a = pm.Normal("a_z", 0.0, 1.0, dims="task")
            relative = pt.exp(sigma_a * z_a)  # a / exp(m)
        else:
            relative = pt.ones(layout.n_tasks)
        pm.Deterministic("a", pt.exp(m) * relative, dims="task")
        eta = relative[None, :] * (psi[:, None] - anchored[None, :])
        c, n = arrays["successes"], arrays["trials"]
        pm.Potential("loglik", -(c * pt.softplus(-eta) + (n - c) * pt.softplus(eta)).sum())
    return model


def _coords(ds: xr.Dataset, layout: Layout) -> dict:
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    if layout.cluster_labels is not None:
        coords["cluster"] = layout.cluster_labels
    return coords


def model_data(data, priors: dict) -> dict:
    """The arrays a compiled model reads, by name: the layout's and a link's anchors."""
    layout = Layout.from_dataset(data.dataset)
    out = layout.data()
    if "anchors" in priors:
        out.update(anchor_arrays(data.dataset["task"].values.tolist(), priors["anchors"]))
    return out


def build_linked_model(data, priors):
    """The IRT model with anchor items: their parameters' priors from a calibration.

    Anchor ``j``: ``b[j] = m_b[j] + s_b[j] z_b[j]`` and ``log a[j] = m_a[j] + s_a[j] z_a[j]``
    (the calibration's posterior means and sds); the other items the hierarchical prior of
    :func:`build_irt_model`; ``theta ~ Normal(mu_theta, sigma_theta)``. With the anchors'
    parameters pinned the likelihood fixes the scale, so the model is sampled as written
    (items non-centred, abilities centred), without the item-anchored change of variables.
    The 1PL form's common discrimination gets the anchors' mean prior of ``log a``.

    Parameters
    ----------
    data : EvalData
        0/1 outcomes of the new systems on the new version's items (anchors among them).
    priors : dict
        Validated priors (:func:`validate_priors`) with ``anchors``.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models.irt import build_linked_model, validate_priors
    >>> data = be.from_counts([[3, 1, 0], [4, 2, 1]], trials=4, tasks=["x", "y", "z"])
    >>> anchors = {"task": ["x"], "b": [[-1.0, 0.1]], "log_a": [[0.0, 0.1]]}
    >>> model = build_linked_model(data, validate_priors({"anchors": anchors}))
    >>> "mu_theta" in model.named_vars, "phi" in model.named_vars
    (True, False)
    """
    priors = validate_priors(priors)
    ds = data.dataset
    layout = Layout.from_dataset(ds)
    with pm.Model(coords=_coords(ds, layout)) as model:
        arrays = {name: pm.Data(name, value) for name, value in model_data(data, priors).items()}
        anchor = arrays["anchor"]
        mu_theta = pm.Normal("mu_theta", *priors["mu_theta"])
        sigma_theta = pm.HalfNormal("sigma_theta", priors["sigma_theta"])
        # centred: each system's many outcomes pin its ability, so non-centred abilities
        # would trade against mu_theta and sigma_theta
        theta = pm.Normal("theta", mu_theta, sigma_theta, dims="system")
        mu_b = pm.Normal("mu_b", *priors["mu_b"])
        sigma_b = pm.HalfNormal("sigma_b", priors["sigma_b"])
        z_b = pm.Normal("b_z", 0.0, 1.0, dims="task")
        free_b = mu_b + sigma_b * z_b
        if layout.cluster_labels is not None:
            sigma_u = pm.HalfNormal("sigma_cluster", priors["sigma_cluster"])
            z_u = pm.Normal("cluster_z", 0.0, 1.0, dims="cluster")
            u = pm.Deterministic("cluster_effect", sigma_u * z_u, dims="cluster")
            free_b = free_b + u[arrays["cluster_index"]]
        anchor_b = arrays["anchor_b"][:, 0] + arrays["anchor_b"][:, 1] * z_b
        b = pm.Deterministic("b", anchor * anchor_b + (1 - anchor) * free_b, dims="task")
        m_a, s_a = arrays["anchor_log_a"][:, 0], arrays["anchor_log_a"][:, 1]
        if priors["form"] == "2pl":
            mu_log_a = pm.Normal("mu_log_a", *priors["mu_log_a"])
            sigma_a = pm.HalfNormal("sigma_log_a", priors["sigma_log_a"])
            z_a = pm.Normal("a_z", 0.0, 1.0, dims="task")
            log_a = anchor * (m_a + s_a * z_a) + (1 - anchor) * (mu_log_a + sigma_a * z_a)
        else:  # one discrimination: its prior the anchors' (all alike in a 1PL calibration)
            count = anchor.sum()
            centre, spread = (anchor * m_a).sum() / count, (anchor * s_a).sum() / count
            mu_log_a = pm.Deterministic(
                "mu_log_a", centre + spread * pm.Normal("mu_log_a_z", 0.0, 1.0)
            )
            log_a = mu_log_a * pt.ones(layout.n_tasks)
        a = pm.Deterministic("a", pt.exp(log_a), dims="task")
        eta = a[None, :] * (theta[:, None] - b[None, :])
        c, n = arrays["successes"], arrays["trials"]
        pm.Potential("loglik", -(c * pt.softplus(-eta) + (n - c) * pt.softplus(eta)).sum())
    return model


def sample(data, priors, draws, tune, chains, seed, progress, cores, engine="nutpie"):
    """NUTS on the IRT model: a trace whose posterior holds :data:`POSTERIOR_VARS`.

    With nutpie an unlinked fit samples the compiled kernel (:mod:`bayeval.models.kernels.irt`):
    nothing is built or compiled per fit. A linked fit, PyMC's sampler, or a nutpie release
    without the route the kernel needs samples the PyMC model (compiled once per data shape).
    """
    from bayeval.models.kernels import nutpie_model  # deferred: it imports nutpie

    layout = Layout.from_dataset(data.dataset)
    if engine == "nutpie" and "anchors" not in priors and nutpie_model.available():
        values, stats = nutpie_model.sample_values(
            irt_kernel.kernel_model(irt_kernel.kernel_inputs(layout, priors)),
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            seed=seed,
            progress=progress,
            target_accept=TARGET_ACCEPT,
            **NUTPIE_OPTIONS,
        )
        post = irt_kernel.split_values(values, layout, priors["form"])
        return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})
    if engine == "nutpie":
        import nutpie  # its import takes seconds: loaded when a fit samples with it

        # the anchors enter as pm.Data: a link compiles once per shape, whatever its anchors
        settings = {k: ("linked" if k == "anchors" else str(v)) for k, v in priors.items()}
        key = (layout.key(), tuple(sorted(settings.items())))
        compiled = _compiled.get(
            key, lambda: build_irt_model(data, priors), lambda: model_data(data, priors)
        )
        return nutpie.sample(
            compiled,
            draws=draws,
            tune=max(tune, 1),
            chains=chains,
            cores=cores,
            seed=seed,
            progress_bar=progress,
            target_accept=TARGET_ACCEPT,
            **NUTPIE_OPTIONS,
        )
    return base.pymc_nuts(
        build_irt_model(data, priors),
        engine=engine,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        progress=progress,
        cores=cores,
        target_accept=TARGET_ACCEPT,
    )


def item_draws(tree) -> dict[str, np.ndarray]:
    """A fitted tree's parameters per draw, flattened over ``(chain, draw)``.

    ``theta`` (draw, system), ``a`` and ``b`` (draw, task), the hyperparameters (draw,) (zeros
    where the fit has none: ``sigma_log_a`` of the 1PL form, ``sigma_cluster`` without clusters)
    and ``cluster_effect`` (draw, cluster).
    """
    post = tree["posterior"].to_dataset() if isinstance(tree, xr.DataTree) else tree
    D = post.sizes["chain"] * post.sizes["draw"]

    def flat(name, dims):
        if name not in post:
            return np.zeros((D,))
        values = post[name].transpose("chain", "draw", *dims).values
        return values.reshape((D, -1) if dims else (D,))

    out = {name: flat(name, ()) for name in HYPER_VARS}
    out["theta"] = flat("theta", ("system",))
    out["a"] = flat("a", ("task",))
    out["b"] = flat("b", ("task",))
    out["cluster_effect"] = (
        flat("cluster_effect", ("cluster",)) if "cluster_effect" in post else np.zeros((D, 1))
    )
    return out


def cell_logits(prm: dict, draws=slice(None), systems=None, tasks=None) -> np.ndarray:
    """``a (theta - b)`` per draw, system and item: (draw, system, task)."""
    theta = prm["theta"][draws] if systems is None else prm["theta"][draws][:, systems]
    a = prm["a"][draws] if tasks is None else prm["a"][draws][:, tasks]
    b = prm["b"][draws] if tasks is None else prm["b"][draws][:, tasks]
    return a[:, None, :] * (theta[:, :, None] - b[:, None, :])


def population_expectation(
    theta, prm, metric, ks, tau=None, clusters="new", weighting="task", cluster=None
):
    """``E f(expit(a (theta - b)))`` over a new item, per draw: ``theta.shape + (len(ks),)``.

    ``theta`` is (draw, system). Given ``a`` the logit is normal in ``b``: the logit-normal
    model's exact quadrature; ``log a`` by :data:`LOG_A_NODES` Gauss-Hermite nodes.
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(LOG_A_NODES)
    weights = weights / weights.sum()
    one = prm["sigma_log_a"].max(initial=0.0) == 0.0
    if one:  # the 1PL form: one discrimination per draw
        nodes, weights = np.zeros(1), np.ones(1)
    a = np.exp(prm["mu_log_a"][:, None] + prm["sigma_log_a"][:, None] * nodes[None, :])  # (D, N)
    if clusters == "observed" and cluster is not None and prm["sigma_cluster"].max(initial=0) > 0:
        labels, sizes = np.unique(cluster, return_counts=True)
        shares = (
            sizes / sizes.sum() if weighting == "task" else np.full(len(labels), 1 / len(labels))
        )
        centres = prm["mu_b"][:, None] + prm["cluster_effect"][:, labels]  # (D, G)
        spread = prm["sigma_b"]
    else:
        shares = np.ones(1)
        centres = prm["mu_b"][:, None]
        spread = np.sqrt(prm["sigma_b"] ** 2 + prm["sigma_cluster"] ** 2)
    out = np.zeros(theta.shape + (len(ks),))
    for g, share in enumerate(shares):
        location = a[:, None, :] * (theta[:, :, None] - centres[:, g, None, None])  # (D, S, N)
        scale = np.broadcast_to((a * spread[:, None])[:, None, :], location.shape)
        values = normal_expectation(location, scale, metric, ks, tau)  # (D, S, N, K)
        out += share * np.einsum("dsnk,n->dsk", values, weights)
    return np.clip(out, 0.0, 1.0)


class IrtRates(base.Model):
    """The IRT model: sampled by NUTS, its estimands read from the item and ability draws."""

    name = "irt"
    estimands = ("tasks", "population")
    engines = {"auto": "nutpie", "nutpie": "nutpie", "pymc": "pymc"}
    paired = True  # systems share the item parameters: comparisons are paired on the items
    subsets = True  # a system's draws do not depend on the systems read beside it
    posterior_vars = POSTERIOR_VARS
    task_draws_auto = True

    # -- fitting -------------------------------------------------------------------------------
    def supports(self, data) -> str | None:
        """0/1 outcomes of at least two systems, without strata or missing-outcome bounds."""
        reason = super().supports(data)
        if reason is not None:
            return reason
        ds = data.dataset
        if "stratum" in ds.coords:
            return REFUSED["stratum"]
        if "missing_bound" in ds["successes"].dims:
            return (
                "model='irt' does not support missing='bounds' yet: choose "
                "missing='exclude' or 'fail' in from_frame"
            )
        if ds.sizes["system"] < 2:
            return (
                "model='irt' calibrates items on several systems; these data hold one "
                "system: fit model='hierarchical', or score it on calibrated items with "
                "bayeval.irt.score"
            )
        return None

    def single_trial_warning(self, data) -> str:
        """One trial per cell: the items' parameters rest on one outcome per system."""
        return (
            "with one trial per item and system the item parameters rest on one outcome "
            "per system: their intervals are wide with few systems (models/irt.md)"
        )

    def validate_priors(self, priors) -> dict:
        """:func:`validate_priors`: defaults filled in, checked."""
        return validate_priors(priors)

    def default_draws(self, form: str | None = None) -> int:
        """:data:`DEFAULT_DRAWS`: the scale parameters mix slowly."""
        return DEFAULT_DRAWS

    def build(self, data, priors=None):
        """:func:`build_irt_model`."""
        return build_irt_model(data, priors)

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
        """NUTS on the model (:func:`sample`)."""
        engine = self.engine(sampler)
        priors = validate_priors(priors)
        if tune is None:
            tune = self.default_tune()
        posterior, sample_stats = base.nuts(
            data, self, priors, draws, chains, tune, seed, engine, progress, None
        )
        return base.sampled(
            {"posterior": posterior, "sample_stats": sample_stats},
            {"tune": tune, "target_accept": TARGET_ACCEPT, "form": priors["form"]},
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
        trace = sample(data, priors, draws, tune, chains, seed, progress, cores, engine)
        post = trace["posterior"].to_dataset()
        names = [v for v in (*POSTERIOR_VARS, *LATENT_VARS) if v in post]
        kept = post[names].drop_vars([c for c in ("system", "task", "cluster") if c in post.coords])
        return kept, trace

    def label_draws(self, posterior, data):
        """The item (and cluster) labels of the item parameters."""
        ds = data.dataset
        posterior = posterior.assign_coords(task=ds["task"].values)
        if "cluster" in posterior.dims:
            labels = Layout.from_dataset(ds).cluster_labels
            posterior = posterior.assign_coords(cluster=np.asarray(labels, dtype=object))
        return posterior

    # -- estimands -----------------------------------------------------------------------------
    @staticmethod
    def _chosen(tree, systems):
        everyone = dataset_of(tree)["system"].values.tolist()
        chosen = everyone if systems is None else list(systems)
        return chosen, np.array([everyone.index(s) for s in chosen], dtype=np.int64)

    @staticmethod
    def _wrap(values, tree, chosen, ks, name):
        post = tree["posterior"]
        C, Dn = post.sizes["chain"], post.sizes["draw"]
        return xr.DataArray(
            values.reshape(C, Dn, len(chosen), len(ks)),
            dims=("chain", "draw", "system", "k"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": np.asarray(chosen, dtype=object),
                "k": np.asarray(ks),
            },
            name=name,
        )

    def tasks(self, tree, metric, ks, shared=None, tau=None, systems=None):
        """Draws of the mean over these items (those each system ran) of ``f(p[s, j])``."""
        chosen, index = self._chosen(tree, systems)
        prm = item_draws(tree)
        trials = dataset_of(tree)["trials"].transpose("system", "task").values[index]
        if shared is not None:
            trials = trials * np.asarray(shared, dtype=trials.dtype)
        weights = task_weights(trials, Populations.from_dataset(dataset_of(tree)))  # (S, J)
        D = len(prm["mu_b"])
        out = np.empty((D, len(index), len(ks)))
        step = max(1, 2_000_000 // max(len(index) * weights.shape[1] * len(ks), 1))
        for start in range(0, D, step):
            part = slice(start, start + step)
            p = special.expit(cell_logits(prm, part, systems=index))
            out[part] = np.einsum("dsjk,sj->dsk", metric_of_rate(p, metric, ks, tau), weights)
        return self._wrap(np.clip(out, 0.0, 1.0), tree, chosen, ks, "tasks")

    def population(
        self, tree, metric, ks, clusters="new", weighting="task", tau=None, systems=None
    ):
        """Draws of ``f`` for a new item from the fitted item distribution (quadrature)."""
        chosen, index = self._chosen(tree, systems)
        prm = item_draws(tree)
        cluster = Layout.from_dataset(dataset_of(tree)).cluster
        value = population_expectation(
            prm["theta"][:, index], prm, metric, ks, tau, clusters, weighting, cluster
        )
        return self._wrap(value, tree, chosen, ks, "population")

    def task_rates(self, tree, systems=None):
        """Per-item rate draws ``expit(a (theta - b))`` (NaN where a cell has no trial)."""
        chosen, index = self._chosen(tree, systems)
        obs = dataset_of(tree)
        prm = item_draws(tree)
        trials = obs["trials"].transpose("system", "task").values[index]
        p = special.expit(cell_logits(prm, systems=index))
        p = np.where((trials > 0)[None], p, np.nan)
        post = tree["posterior"]
        C, Dn = post.sizes["chain"], post.sizes["draw"]
        return xr.DataArray(
            p.reshape(C, Dn, len(index), -1),
            dims=("chain", "draw", "system", "task"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": np.asarray(chosen, dtype=object),
                "task": obs["task"].values,
            },
            name="p",
        )

    def predictive(self, tree) -> xr.Dataset:
        """No population-histogram check for items (an empty dataset)."""
        return xr.Dataset()

    # -- the log-likelihood and replicated counts ----------------------------------------------
    def replicate_rates(self, tree) -> base.Rates:
        """Each cell's rate at each draw's ability and item parameters."""
        prm = item_draws(tree)

        def rates(rngs, tasks):
            return special.expit(cell_logits(prm, tasks=np.asarray(tasks)))

        return rates

    def pattern_log_likelihood(self, tree, c, n) -> base.Patterns:
        """Each item's binomial log-likelihood at each draw, over its systems.

        The items' parameters are their own, so each item is its own pattern.
        """
        prm = item_draws(tree)
        D, J = prm["a"].shape
        total = np.empty((D, J))
        step = max(1, 2_000_000 // max(c.size, 1))
        for start in range(0, D, step):
            part = slice(start, start + step)
            eta = cell_logits(prm, part)
            cells = -(c * np.logaddexp(0.0, -eta) + (n - c) * np.logaddexp(0.0, eta))
            total[part] = np.where(n > 0, cells, 0.0).sum(axis=1)
        every = np.arange(J)
        return base.Patterns(total, every, every)
