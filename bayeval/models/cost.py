"""Models of an attempt's cost behind ``posterior_cost`` (``Results.cost``).

Each model is one object with the behaviour that differs between them, so the analysis
(:mod:`bayeval.analyses.cost`) asks the object rather than branching on its name:

* ``name`` and ``method`` (the result's ``attrs["cost_model"]`` and ``attrs["method"]``);
* ``refuse(data, column)``: raise ``ValueError`` where the model cannot be fitted (before the
  per-task readouts of the success side);
* ``task_costs(data, column, n_draws, rng, seed)``: draws ``(draw, system, task)`` of each
  task's expected attempt cost (``None``: the observed costs stand) and the result's extra
  attributes;
* ``misfit(post, boot)``: per system, whether its cost per attempt is suspect next to the
  bootstrap's.

``bayesian_bootstrap`` is not a parametric model: the task costs stay the observed ones, under
the Dirichlet task weights the analysis draws. ``lognormal`` is the crossed hurdle log-normal:
an attempt of system s on task t (cluster c) costs 0 with probability ``pi_s`` and otherwise

    log cost = mu_s + lambda_s (g_c + u_t) + w_st + e,
    g_c ~ N(0, sigma_cluster^2), u_t ~ N(0, 1), w_st ~ N(0, omega_s^2), e ~ N(0, sigma_s^2),

with the cluster and task effects ``g`` and ``u`` shared by every system that ran the task (the
systems' costs are paired, as their successes are in the paired model), each system scaling
them by its own loading ``lambda_s >= 0`` (its task spread: a system whose cost grows more
with a task's size than another's has the larger loading), ``w`` a task-by-system effect and
``e`` attempt noise, both with a spread per system. Priors: flat on ``mu``, half-Cauchy(0, 1)
on the loadings and every spread (log units), except Gamma(2, 2) on ``sigma_s`` of a system
without within-cell replication (see :func:`build_model`); ``pi_s | data ~ Beta(1 + zeros, 1 +
positives)``. Loadings per system, not one common loading: a common one misstates the mean of
a system whose costs follow the task more or less closely than the others' (``models/cost.md``
has the case).

The model is fitted from what ``from_frame(covariates=[...])`` stores: per (system, task) the
count ``n`` of positive costs, the mean of their logs and the within-cell sum of squares. The
effects ``g``, ``u``, ``w`` are integrated out in closed form: per task the cell means are
normal with covariance ``lambda lambda' + diag(omega_s^2 + sigma_s^2 / n)``, inverted by
Sherman-Morrison, and per cluster the tasks' blocks gain the rank-one ``sigma_cluster^2``
term the same way; ``mu`` is integrated out too (flat prior: generalised least squares on
the systems; sampled, it mixes badly, its common shift tied to the few clusters' spread).
NUTS (nutpie) samples the loadings and spreads; each draw's ``mu`` and effects are then drawn
from their exact normal conditionals (``mu``, then cluster, task and cell effects), so every
observed task has draws of its expected attempt cost
``(1 - pi_s) exp(mu_s + lambda_s (g_c + u_t) + w_st + sigma_s^2 / 2)``.

A system without two positive costs on any one task has no within-cell spread to tell
``omega_s`` from ``sigma_s``: its ``omega_s`` is left out (``has_within``), so its attempt
noise carries the task-by-system spread too (the expected costs are the same; only the split
between ``w`` and ``e`` is not identified).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.linalg import solve_triangular

from bayeval.models._misfit import apart
from bayeval.models.kernels.compiled_models import CompiledModels

__all__ = [
    "MODELS",
    "BayesianBootstrapCost",
    "HurdleLognormalCost",
    "build_model",
    "cell_arrays",
    "effect_draws",
    "loglik",
    "mu_draws",
    "sample",
]

#: Draws per chain are ``ceil(n_draws / CHAINS)``; the model is small and Gaussian given its
#: spreads, so a short tuning suffices (``models/cost.md`` has the divergences seen).
CHAINS = 4
TUNE = 500
PRIOR_SCALE = 1.0  # of the half-Cauchy priors on the spreads (log units)

_compiled = CompiledModels()


def cell_arrays(stats: dict, cluster=None) -> dict:
    """The model's arrays from :func:`_positive_cost_stats` (system, task).

    Returns (task, system) arrays ``n``, ``ybar``, ``mask`` (a positive cost there), per system
    ``df`` (within-cell degrees of freedom), ``within`` (within-cell sum of squares),
    ``has_within`` (1.0 where ``df > 0``) and ``centre`` (mean log cost, the origin of ``mu``'s
    least squares),
    and ``cluster`` (task,) integer codes (all 0 without clusters) with ``n_clusters`` and
    their one-hot ``cluster_onehot`` (task, cluster).
    """
    n = stats["n"].T.astype(float)
    mask = (n > 0).astype(float)
    df = np.clip(stats["n"] - 1, 0, None).sum(axis=1).astype(float)
    centre = stats["logsum"].sum(axis=1) / np.maximum(stats["n"].sum(axis=1), 1)
    if cluster is None:
        codes = np.zeros(n.shape[0], dtype=np.int64)
    else:
        _, codes = np.unique(np.asarray(cluster), return_inverse=True)
    return {
        "n": np.where(mask > 0, n, 1.0),
        "ybar": stats["ybar"].T.astype(float),
        "mask": mask,
        "df": df,
        "within": stats["within"].sum(axis=1).astype(float),
        "has_within": (df > 0).astype(float),
        "centre": centre.astype(float),
        "cluster": codes.astype(np.int64),
        "n_clusters": int(codes.max()) + 1,
        "cluster_onehot": np.eye(int(codes.max()) + 1)[codes],
    }


def _linalg(xp):
    """``cholesky`` and ``solve_triangular`` of an array backend (NumPy/SciPy or PyTensor)."""
    if xp is np:
        return np.linalg.cholesky, solve_triangular
    return pt.linalg.cholesky, pt.linalg.solve_triangular


def _cell_sums(arr, lam, omega, sigma, level):
    """Each cell's precision and residual, and per task the Sherman-Morrison sums.

    Each cell's ``1 / d`` (0 where no positive cost; ``d = omega_s^2 + sigma_s^2 / n`` the variance
    of its mean given the shared effects) and residual ``r`` (cell mean less ``level``),
    ``q = lambda / d``, and per task the sums ``A = sum_s lambda_s^2 / d`` and
    ``B = sum_s lambda_s r / d``. Systems on the last axis; ``lam``, ``omega``, ``sigma`` and
    ``level`` broadcast against the (task, system) arrays (a leading draw axis too); any array
    backend.
    """
    mask = arr["mask"]
    d = (omega * arr["has_within"]) ** 2 + sigma**2 / arr["n"]
    inv_d = mask / d
    r = (arr["ybar"] - level) * mask
    q = lam * inv_d  # D^-1 lambda per task
    return d, inv_d, r, q, (q * lam).sum(axis=-1), (q * r).sum(axis=-1)


def _gls_terms(arr, lam, omega, sigma, sigma_cluster, xp):
    """The generalised least squares of the cell means on the systems, the effects integrated out.

    ``F = X' V^-1 X`` (system, system), ``h = X' V^-1 r``, ``r' V^-1 r`` and ``log det V``, with V
    the cell means' covariance and ``r`` the cell means less ``centre``.

    Per task ``V_t = D_t + lambda lambda'`` (D: ``omega_s^2 + sigma_s^2 / n`` on the cells with a
    positive cost) is inverted by Sherman-Morrison; per cluster the tasks' blocks gain
    ``sigma_cluster^2`` times the rank one of their stacked loadings, inverted the same way.
    """
    mask = arr["mask"]
    d, inv_d, r, q, big_a, big_b = _cell_sums(arr, lam, omega, sigma, arr["centre"])
    one_plus = 1.0 + big_a
    scaled = q / one_plus[:, None]  # X_t' V_t^-1 lambda_t
    gram = xp.eye(mask.shape[1]) * inv_d.sum(axis=0)[None, :] - xp.dot(scaled.T, q)
    cross = (inv_d * r).sum(axis=0) - (scaled * big_b[:, None]).sum(axis=0)
    quad = (inv_d * r * r).sum() - (big_b**2 / one_plus).sum()
    logdet = (mask * xp.log(d)).sum() + xp.log(one_plus).sum()
    if sigma_cluster is not None:
        onehot = arr["cluster_onehot"]  # (task, cluster)
        s2 = sigma_cluster**2
        a_c = xp.dot(big_a / one_plus, onehot)  # lambda' V_b^-1 lambda per cluster
        b_c = xp.dot(big_b / one_plus, onehot)
        h_c = xp.dot(onehot.T, scaled)  # (cluster, system)
        k_c = s2 / (1.0 + s2 * a_c)
        gram = gram - xp.dot(h_c.T * k_c[None, :], h_c)
        cross = cross - (h_c * (k_c * b_c)[:, None]).sum(axis=0)
        quad = quad - (k_c * b_c**2).sum()
        logdet = logdet + xp.log(1.0 + s2 * a_c).sum()
    return gram, cross, quad, logdet


def loglik(arr, lam, omega, sigma, sigma_cluster=None, xp=np):
    """Log marginal likelihood of the positive log costs, the effects and ``mu`` integrated out.

    ``mu`` has a flat prior; any array backend; constants included: ``log int p(y | mu) dmu`` for
    the multivariate normal of every positive attempt's log cost under the crossed model. ``lam``
    (the loadings), ``omega`` and ``sigma`` per system, ``sigma_cluster`` a scalar (``None``: no
    cluster effect).
    """
    cholesky, solve_triangular = _linalg(xp)
    gram, cross, quad, logdet = _gls_terms(arr, lam, omega, sigma, sigma_cluster, xp)
    chol = cholesky(gram)
    z = solve_triangular(chol, cross, lower=True)
    n_systems = arr["mask"].shape[1]
    total = -0.5 * (logdet + quad - (z * z).sum()) - xp.log(xp.diagonal(chol)).sum()
    total += 0.5 * n_systems * np.log(2.0 * np.pi)  # the integral over mu
    # within cells: each cell's deviations from its own mean, and the 1/sqrt(n) of its mean
    sigma2 = sigma**2
    n_obs = (arr["mask"] * arr["n"]).sum()
    total += (
        -0.5 * (arr["df"] * xp.log(sigma2)).sum()
        - 0.5 * (arr["within"] / sigma2).sum()
        - 0.5 * (arr["mask"] * xp.log(arr["n"])).sum()
        - 0.5 * n_obs * np.log(2.0 * np.pi)
    )
    return total


def mu_draws(arr, params: dict, clusters: bool, rng) -> np.ndarray:
    """``mu`` from its exact normal conditional given each draw's spreads, ``(draw, system)``.

    The conditional is that of generalised least squares: mean ``centre + F^-1 h``, covariance
    ``F^-1``.
    """
    n_draws = params["loading"].shape[0]
    out = np.empty_like(params["loading"])
    for i in range(n_draws):
        gram, cross, _, _ = _gls_terms(
            arr,
            params["loading"][i],
            params["omega"][i],
            params["sigma"][i],
            params["sigma_cluster"][i] if clusters else None,
            np,
        )
        chol = np.linalg.cholesky(gram)
        mean = solve_triangular(chol.T, solve_triangular(chol, cross, lower=True), lower=False)
        noise = solve_triangular(chol.T, rng.standard_normal(len(cross)), lower=False)
        out[i] = arr["centre"] + mean + noise
    return out


DATA_NAMES = ("n", "ybar", "mask", "df", "within", "has_within", "centre", "cluster_onehot")


def _data_names(clusters: bool) -> tuple:
    return DATA_NAMES if clusters else DATA_NAMES[:-1]


def build_model(arr, clusters: bool):
    """The PyMC model of the crossed log-normal on ``cell_arrays``' output (``pm.Data``).

    Its parameters are the loadings and spreads; ``mu`` and the effects are integrated out.
    """
    with pm.Model(coords={"system": range(arr["n"].shape[1])}) as model:
        data = {name: pm.Data(name, arr[name]) for name in _data_names(clusters)}
        lam = pm.HalfCauchy("loading", PRIOR_SCALE, dims="system")
        omega = pm.HalfCauchy("omega", PRIOR_SCALE, dims="system")
        sigma = pm.HalfCauchy("sigma", PRIOR_SCALE, dims="system")
        # a system without within-cell replication tells its attempt noise from its loading
        # only through the other systems' covariance, and its sigma can run to 0 (a Heywood
        # case: divergences and a singular least squares, models/cost.md); its prior is the
        # boundary-avoiding Gamma(2, 2) instead (zero density at 0, mode 0.5 log units):
        # log Gamma(2, 2) - log half-Cauchy(0, 1)
        pm.Potential(
            "sigma_boundary",
            (
                (1.0 - data["has_within"])
                * (pt.log(sigma) - 2.0 * sigma + pt.log1p((sigma / PRIOR_SCALE) ** 2))
            ).sum(),
        )
        sigma_cluster = pm.HalfCauchy("sigma_cluster", PRIOR_SCALE) if clusters else None
        pm.Potential("loglik", loglik(data, lam, omega, sigma, sigma_cluster, xp=pt))
    return model


def sample(arr, clusters: bool, n_draws: int, seed: int) -> dict:
    """Posterior draws of the crossed log-normal's parameters: by NUTS, and ``mu`` exactly.

    Draws ``(n_draws,)`` or ``(n_draws, system)`` of ``loading``, ``omega`` (0 where ``has_within``
    is 0), ``sigma`` and ``sigma_cluster`` (zeros without clusters) by NUTS, ``mu`` from its exact
    conditional (drawn with ``seed``), and the number of divergent transitions (``divergences``).
    """
    import nutpie  # deferred: its compiled extension takes seconds to load, only sampling needs it

    draws = -(-n_draws // CHAINS)
    # a compiled model takes data of any number of tasks and clusters (with_data), not of
    # another number of systems (the parameters' shape)
    key = (arr["n"].shape[1], clusters)
    compiled = _compiled.get(
        key,
        lambda: build_model(arr, clusters),
        lambda: {name: arr[name] for name in _data_names(clusters)},
    )
    trace = nutpie.sample(
        compiled, draws=draws, tune=TUNE, chains=CHAINS, seed=seed, progress_bar=False
    )
    post = trace.posterior

    def flat(name):
        values = post[name].values
        return values.reshape((-1,) + values.shape[2:])[:n_draws]

    out = {name: flat(name) for name in ("loading", "omega", "sigma")}
    out["omega"] = out["omega"] * arr["has_within"][None, :]
    out["sigma_cluster"] = flat("sigma_cluster") if clusters else np.zeros(n_draws)
    out["mu"] = mu_draws(arr, out, clusters, np.random.default_rng([seed, 1]))
    out["divergences"] = int(trace.sample_stats["diverging"].values.sum())
    return out


EFFECT_CHUNK = 64  # draws whose (task, system) arrays are held at once


def effect_draws(arr, params: dict, rng) -> np.ndarray:
    """Each draw's ``lambda_s (g_c + u_t) + w_st``, ``(draw, system, task)``, drawn exactly.

    From the exact normal conditionals given the draw's ``mu`` and spreads: the cluster effect first
    (its precision ``1 / sigma_cluster^2 + sum_t a_t``), then each task's (given its cluster's),
    then each cell's (given both; drawn from its prior where the cell has no positive cost).
    """
    n_draws = params["mu"].shape[0]
    n_tasks, n_systems = arr["n"].shape
    out = np.empty((n_draws, n_systems, n_tasks))
    for start in range(0, n_draws, EFFECT_CHUNK):
        part = slice(start, min(start + EFFECT_CHUNK, n_draws))
        out[part] = _effect_chunk(
            arr, {k: v[part] for k, v in params.items() if k != "divergences"}, rng
        )
    return out


def _effect_chunk(arr, params, rng):
    mu, lam, omega, sigma = (params[k][:, None, :] for k in ("mu", "loading", "omega", "sigma"))
    s_c = params["sigma_cluster"]
    n_draws = mu.shape[0]
    mask, n = arr["mask"][None], arr["n"][None]  # (1, task, system)
    omega2, sigma2 = (omega * arr["has_within"]) ** 2, sigma**2
    # (draw, task, system) cells and (draw, task) sums
    _, _, r, _, big_a, big_b = _cell_sums(arr, lam, omega, sigma, mu)
    codes, n_clusters = arr["cluster"], arr["n_clusters"]
    g = np.zeros((n_draws, n_clusters))
    if np.any(s_c > 0):
        a_t, b_t = big_a / (1 + big_a), big_b / (1 + big_a)
        a_c, b_c = a_t @ arr["cluster_onehot"], b_t @ arr["cluster_onehot"]
        prec = 1.0 / s_c[:, None] ** 2 + a_c
        g = b_c / prec + rng.standard_normal(g.shape) / np.sqrt(prec)
    gt = g[:, codes]  # (draw, task)
    prec_u = 1.0 + big_a
    u = (big_b - gt * big_a) / prec_u + rng.standard_normal(big_a.shape) / np.sqrt(prec_u)
    shared = (gt + u)[:, :, None] * lam  # (draw, task, system)
    resid = r - shared * mask
    with np.errstate(divide="ignore", invalid="ignore"):
        prec_w = np.where(omega2 > 0, 1.0 / omega2, np.inf) + mask * n / sigma2
        w = np.where(
            np.isfinite(prec_w),
            mask * (n / sigma2) * resid / prec_w
            + rng.standard_normal(prec_w.shape) / np.sqrt(prec_w),
            0.0,
        )
    return (shared + w).transpose(0, 2, 1)


# -- the cost side of Results.cost ---------------------------------------------------------------
def _positive_cost_stats(data, column) -> dict:
    """Per ``(system, task)``, the sufficient statistics of the positive log costs.

    Over the attempted statuses (``not_run`` left out): the count of positive costs, the mean and
    within-task sum of squares of their logs (from the stored sums of logs and squared logs), and
    per system the attempts with a zero cost.
    """
    ds = data.dataset.sel(covariate=column).drop_sel(status="not_run")

    def summed(name):
        return ds[name].sum("status").transpose("system", "task").values.astype(float)

    n_pos, logsum, logsumsq = (
        summed(v) for v in ("covariate_positive", "covariate_logsum", "covariate_logsumsq")
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        ybar = np.where(n_pos > 0, logsum / np.where(n_pos > 0, n_pos, 1), 0.0)
    within = np.clip(logsumsq - n_pos * ybar**2, 0.0, None)
    zeros = (summed("covariate_count") - n_pos).sum(axis=1)
    return {
        "n": n_pos,
        "ybar": ybar,
        "within": within,
        "logsum": logsum,
        "logsumsq": logsumsq,
        "zeros": zeros,
    }


def _check_lognormal_cost(data, column, stats) -> None:
    """Refuse a system with under 2 positive costs, or positive costs on under 2 tasks.

    The log-normal's spreads would rest on the prior alone.
    """
    few = [
        (str(system), int(stats["n"][s].sum()), int((stats["n"][s] > 0).sum()))
        for s, system in enumerate(data.systems)
        if stats["n"][s].sum() < 2 or (stats["n"][s] > 0).sum() < 2
    ]
    if few:
        listed = "; ".join(f"{name}: {n} positive cost(s) on {t} task(s)" for name, n, t in few)
        raise ValueError(
            f"the log-normal cost model of covariate {column!r} needs at least 2 positive "
            f"costs on at least 2 tasks per system (its log-scale spread and task spread are "
            f"estimated from them); system(s) {listed}: use model='bayesian_bootstrap' (no "
            "shape assumed) or drop those systems"
        )


def _lognormal_cost_draws(data, column, n_draws, rng, seed=0):
    """Posterior draws of each task's expected attempt cost under the crossed hurdle log-normal.

    The draws are ``(n_draws, system, task)`` of
    ``(1 - pi_s) exp(mu_s + lambda_s (g_c + u_t) + w_st + sigma_s^2 / 2)``; with them a dict of the
    draws of its parameters (``mu``, ``loading``, ``omega``, ``sigma`` and ``zero_share`` per
    system, ``sigma_cluster``), the expected cost of an attempt on a new task of a new cluster
    (``new_task``, ``(n_draws, system)``) and the sampler's ``divergences``.
    """
    stats = _positive_cost_stats(data, column)
    _check_lognormal_cost(data, column, stats)
    arr = cell_arrays(stats, data.dataset["cluster"].values if data.has_clusters else None)
    params = sample(arr, data.has_clusters, n_draws, seed)
    effects = effect_draws(arr, params, rng)
    positives = stats["n"].sum(axis=1)
    params["zero_share"] = rng.beta(
        1.0 + stats["zeros"], 1.0 + positives, size=(n_draws, len(positives))
    )
    keep = 1.0 - params["zero_share"]
    half_var = 0.5 * params["sigma"] ** 2
    spread = (
        params["loading"] ** 2 * (1.0 + params["sigma_cluster"] ** 2)[:, None]
        + params["omega"] ** 2
    )
    with np.errstate(over="ignore"):
        params["new_task"] = keep * np.exp(params["mu"] + half_var + 0.5 * spread)
        per_task = keep[..., None] * np.exp((params["mu"] + half_var)[..., None] + effects)
    return per_task, params


class BayesianBootstrapCost:
    """The observed task costs under Dirichlet(1, ..., 1) task weights (Rubin 1981).

    No shape assumed, nothing refused, no misfit.
    """

    name = "bayesian_bootstrap"
    method = "posterior (Bayesian bootstrap over tasks, model task rates)"

    def refuse(self, data, column) -> None:
        """Nothing to refuse: skew and zero costs are taken as they are."""

    def task_costs(self, data, column, n_draws, rng, seed) -> tuple[None, dict]:
        """``None``: the observed task costs stand; no extra attributes."""
        return None, {}

    def misfit(self, post, boot) -> np.ndarray:
        """No system is suspect: ``(system,)`` of False."""
        return np.zeros(post.sizes["system"], dtype=bool)


class HurdleLognormalCost:
    """The crossed hurdle log-normal (see the module)."""

    name = "lognormal"
    method = (
        "posterior (crossed hurdle log-normal cost with task effects shared by the "
        "systems, model task rates, both under Bayesian bootstrap task weights)"
    )

    def refuse(self, data, column) -> None:
        """Refuse a system with under 2 positive costs, or positive costs on under 2 tasks."""
        _check_lognormal_cost(data, column, _positive_cost_stats(data, column))

    def task_costs(self, data, column, n_draws, rng, seed) -> tuple[np.ndarray, dict]:
        """Draws of each task's expected attempt cost (:func:`_lognormal_cost_draws`).

        With them the sampler's divergent transitions as ``cost_divergences``.
        """
        task_cost, params = _lognormal_cost_draws(data, column, n_draws, rng, seed)
        return task_cost, {"cost_divergences": params["divergences"]}

    def misfit(self, post, boot) -> np.ndarray:
        """Per system: whether the log-normal's and the bootstrap's cost per attempt disagree.

        A ``(system,)`` bool: either's point outside the other's interval. The log-normal's mean's
        ``exp(sigma^2 / 2)`` factor rests on the log costs being normal: a skewed shape moves it by
        tens of percent while the task-resampled mean stays where the data put it
        (``models/cost.md`` has the systems flagged on SWE-bench).
        """
        return apart(post, boot, "cost_per_attempt")


#: Name -> cost model, in the order the choices are listed.
MODELS: dict[str, BayesianBootstrapCost | HurdleLognormalCost] = {
    "bayesian_bootstrap": BayesianBootstrapCost(),
    "lognormal": HurdleLognormalCost(),
}
