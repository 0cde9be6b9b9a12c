"""The logit-normal model written as a PyMC model (:func:`build_logit_normal_model`)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayeval.models._beta_family import counts_by_bound
from bayeval.models.kernels.collapsed import block_rotation
from bayeval.models.kernels.quadrature import N_NODES
from bayeval.models.logit_normal.kernel import _collapsed_model, _latent_kernel_model
from bayeval.models.logit_normal.layout import Layout, validate_priors


def build_logit_normal_model(
    data,
    priors=None,
    marginal: bool = True,
    missing_bound=None,
    n_nodes: int = N_NODES,
    kernel: bool = False,
) -> pm.Model:
    """Build the logit-normal random-effects model as a PyMC model.

    Parameters
    ----------
    data : EvalData
    priors : dict, optional
        ``{"alpha": (mean, sd), "sigma_task": scale, ...}``; see :data:`DEFAULT_PRIORS`.
    marginal : bool, default True
        Integrate the task-level effects out by adaptive quadrature (the form the fit
        samples): the model is then one flat vector ``theta`` and one potential, and
        :func:`collapsed_posterior` turns draws of ``theta`` into the named quantities.
        ``False`` keeps the task effects as latent variables (``task_effect_z``,
        ``task_system_effect_z``) and writes the model with PyMC distributions.
    kernel : bool, default False
        With ``marginal=False``: write the full-latent form as one compiled log density
        instead, the density ``fit`` samples (:func:`sample_kernel`): ``theta`` holds the
        collapsed model's coordinates followed by the standardised task and task-by-system
        effects.
    missing_bound : {"lower", "upper"}, optional
        Which extreme to model when the data use ``missing="bounds"``.
    n_nodes : int, default 9
        Gauss-Hermite nodes per dimension.

    Returns
    -------
    pymc.Model

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.models import build_logit_normal_model
    >>> data = be.from_counts([[1, 0, 1, 1], [1, 1, 0, 1]], trials=1, systems=["A", "B"],
    ...                       clusters=["x", "x", "y", "y"])
    >>> model = build_logit_normal_model(data)
    >>> model.initial_point()["theta"].size  # 4 spreads, 6 cluster effects, 2 intercepts
    12
    >>> latent = build_logit_normal_model(data, marginal=False)
    >>> sorted(latent.named_vars_to_dims["cluster_system_effect"])
    ['cluster', 'system']
    """
    priors = validate_priors(priors)
    ds = data.dataset
    c, n, bounds = counts_by_bound(ds)
    index = 0
    if bounds is not None:
        if missing_bound not in bounds:
            raise ValueError(f"data use missing='bounds': choose missing_bound= in {bounds}")
        index = bounds.index(missing_bound)
    c, n = c[index], n[index]
    layout = Layout.from_dataset(ds)
    coords = {"system": ds["system"].values.tolist(), "task": ds["task"].values.tolist()}
    alpha_dims: tuple[str, ...] = ("system",)
    if layout.pops.strata is not None:
        coords["stratum"] = layout.pops.strata
        alpha_dims = ("system", "stratum")
    if layout.has_clusters:
        coords["cluster"] = layout.cluster_labels
    if marginal:
        return _collapsed_model(c, n, layout, priors, coords, n_nodes)
    if kernel:
        return _latent_kernel_model(c, n, layout, priors, coords, n_nodes)
    S = layout.n_systems
    with pm.Model(coords=coords) as model:
        sigma_task = pm.HalfNormal("sigma_task", priors["sigma_task"])
        sigma_v = (
            pm.HalfNormal("sigma_task_system", priors["sigma_task_system"])
            if layout.paired
            else None
        )
        identified, zero_sum = _intercepts_and_cluster_effects(priors, layout, alpha_dims, S)
        logit_p = identified[:, layout.pops.code] + zero_sum[:, layout.cluster]  # (S, J)
        z_e = pm.Normal("task_effect_z", 0.0, 1.0, dims="task")
        logit_p = logit_p + (sigma_task * z_e)[None, :]
        if layout.paired:
            z_v = pm.Normal("task_system_effect_z", 0.0, 1.0, dims=("system", "task"))
            logit_p = logit_p + sigma_v * z_v
        pm.Binomial("y", n=n, logit_p=logit_p, observed=c, dims=("system", "task"))
    return model


def _intercepts_and_cluster_effects(priors, layout: Layout, alpha_dims, S):
    """Intercepts and cluster effects, parametrised for the sampler with the prior unchanged.

    The model's prior is ``alpha ~ N(m, sd)`` per system (and stratum), ``u = sigma_u z_u`` and
    ``w = sigma_w z_w`` with standard normal ``z``. Sampled as is, the mean of the cluster
    effects is confounded with the intercepts, and the systems' intercepts are strongly
    correlated (they share every task effect), which forces NUTS into small steps. So the
    sampler sees the same distribution in other coordinates: each ``z`` splits into its mean
    over clusters and a zero-sum part (a standard normal vector is the sum of these two
    independent pieces); the intercepts are shifted by the cluster-effect means, which the data
    identify directly; and the shifted intercepts are rotated onto the mean-over-systems and
    contrast directions (an orthonormal rotation of an isotropic normal is the same normal).
    ``alpha``, ``cluster_effect`` and ``cluster_system_effect`` are recorded in the original
    coordinates. Returns the identified intercepts ``(S, H)`` and the zero-sum cluster effects
    ``(S, G)`` whose sum with them is every task's linear predictor.
    """
    mean, sd = priors["alpha"]
    H = layout.pops.n
    shift = pt.zeros((S, 1))
    zero_sum = pt.zeros((S, layout.cluster.max() + 1))
    if layout.has_clusters:
        G = layout.n_clusters
        sigma_u = pm.HalfNormal("sigma_cluster", priors["sigma_cluster"])
        m_u = pm.Normal("cluster_effect_mean_z", 0.0, 1.0 / np.sqrt(G))
        d_u = (
            pm.ZeroSumNormal("cluster_effect_zerosum_z", sigma=1.0, dims="cluster")
            if G > 1
            else pt.zeros(1)
        )
        pm.Deterministic("cluster_effect", sigma_u * (m_u + d_u), dims="cluster")
        shift = shift + sigma_u * m_u
        zero_sum = zero_sum + sigma_u * d_u[None, :]
        if layout.paired:
            sigma_w = pm.HalfNormal("sigma_cluster_system", priors["sigma_cluster_system"])
            m_w = pm.Normal("cluster_system_effect_mean_z", 0.0, 1.0 / np.sqrt(G), dims="system")
            d_w = (
                pm.ZeroSumNormal(
                    "cluster_system_effect_zerosum_z", sigma=1.0, dims=("system", "cluster")
                )
                if G > 1
                else pt.zeros((S, 1))
            )
            pm.Deterministic(
                "cluster_system_effect", sigma_w * (m_w[:, None] + d_w), dims=("system", "cluster")
            )
            shift = shift + (sigma_w * m_w)[:, None]
            zero_sum = zero_sum + sigma_w * d_w
    # alpha + cluster-effect means, the intercept the data identify, in rotated coordinates:
    # z ~ N(R' shift, sd) makes alpha = mean + R z - shift ~ N(mean, sd) whatever the shift
    rotation, size = block_rotation(
        np.zeros(S, np.int64) if layout.recipes is None else layout.recipes
    )
    shift = pt.broadcast_to(shift, (S, H))
    sd_rotated = sd
    if layout.system_level:
        # alpha[s] = mu + sigma_system eps[s], mu ~ N(mean, sd) integrated out: the rotated
        # coordinates are independent, the mean direction with variance sigma_system^2 + S sd^2
        # (per recipe, with runs: m_b runs and sigma_run)
        name = layout.level_name
        level = pm.HalfNormal(name, priors[name])
        sd_rotated = pt.where(size > 0, pt.sqrt(level**2 + size * sd**2), level)[:, None]
    z_alpha = pm.Normal("alpha_rotated_z", pt.dot(rotation.T, shift), sd_rotated, shape=(S, H))
    identified = mean + pt.dot(rotation, z_alpha)  # (S, H)
    alpha = identified - shift
    pm.Deterministic("alpha", alpha if "stratum" in alpha_dims else alpha[:, 0], dims=alpha_dims)
    return identified, zero_sum
