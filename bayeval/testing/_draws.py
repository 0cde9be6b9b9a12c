"""Plausible parameter draws of each model, for the fake posteriors of :mod:`bayeval.testing`.

Each function returns a model's ``posterior`` dataset as ``bayeval.fit`` keeps it (the
``logit_normal`` and ``zoib`` ones a missing-outcome bound at a time), with draws centred on
values computed from the data (the module docstring of :mod:`bayeval.testing` says how, model
by model); none runs a sampler.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np
import xarray as xr
from scipy import special

from bayeval.models import judge, judge_patterns, logit_normal, zoib
from bayeval.models._beta_family import Populations, counts_by_bound

__all__ = ["hierarchical_draws", "judge_draws", "logit_normal_draws", "zoib_draws"]

_FLOOR = 0.05  # smallest spread drawn around: a fit's spreads are positive
_Z, _W = np.polynomial.hermite_e.hermegauss(40)
_W = _W / _W.sum()
_CELL_Z, _CELL_W = np.polynomial.hermite_e.hermegauss(12)  # a cell's task-by-system effect
_CELL_W = _CELL_W / _CELL_W.sum()
# each logit_normal spread's part of the additive split of the logits (_split)
_LN_PARTS = {
    "sigma_task": "e",
    "sigma_task_system": "v",
    "sigma_cluster": "u",
    "sigma_cluster_system": "w",
}


# -- the hierarchical model ----------------------------------------------------------------------
def hierarchical_draws(ds, priors, draws, chains, rng) -> xr.Dataset:
    """``mu`` and ``kappa`` per (system, stratum, bound), around their moment estimates.

    A normal approximation on the logit and log scales.
    """
    c, n, bounds = counts_by_bound(ds)
    pops = Populations.from_dataset(ds)
    centre, spread = (1.0, 1.5) if isinstance(priors["log_kappa"], str) else priors["log_kappa"]
    shape = (chains, draws) + c.shape[:2] + (pops.n,)
    mu, kappa = np.empty(shape), np.empty(shape)
    for b, s, h in np.ndindex(c.shape[0], c.shape[1], pops.n):
        members = (pops.code == h) & (n[b, s] > 0)
        x, sd_x, y, sd_y = _beta_moments(c[b, s, members], n[b, s, members], centre, spread)
        mu[:, :, b, s, h] = special.expit(x + sd_x * rng.standard_normal((chains, draws)))
        kappa[:, :, b, s, h] = np.exp(y + sd_y * rng.standard_normal((chains, draws)))
    dims = ("chain", "draw", "missing_bound", "system", "stratum")
    post = xr.Dataset({"mu": (dims, mu), "kappa": (dims, kappa)})
    post = post.assign_coords(
        chain=np.arange(chains), draw=np.arange(draws), system=ds["system"].values
    )
    if pops.strata is None:
        post = post.isel(stratum=0, drop=True)
    else:
        post = post.assign_coords(stratum=np.asarray(pops.strata, dtype=object))
    post = post.isel(missing_bound=0, drop=True) if bounds is None else post
    post = post.transpose("chain", "draw", "system", ...)
    return post if bounds is None else post.assign_coords(missing_bound=bounds)


def _beta_moments(c, n, centre, spread):
    """``(logit mu, its sd, log kappa, its sd)`` of a Beta population from its tasks' counts.

    The mean rate, and the concentration whose Beta-binomial variance matches the rates' (the
    prior's ``(centre, spread)`` where one trial per task leaves it unidentified).
    """
    if len(c) == 0:
        return 0.0, 1.0, centre, spread
    rates = c / n
    tasks = len(rates)
    mean = (rates.sum() + 0.5) / (tasks + 1)
    trials = n.mean()
    if trials > 1 and tasks > 1:
        excess = rates.var() / (mean * (1 - mean)) - 1 / trials
        rho = np.clip(excess / (1 - 1 / trials), 1 / 501, 1 / 1.05)
        log_kappa, sd_log_kappa = np.log(1 / rho - 1), min(np.sqrt(2 / tasks) + 0.1, spread)
    else:
        log_kappa, sd_log_kappa = centre, spread
        rho = 1 / (1 + np.exp(centre))
    sd_logit = np.sqrt((1 / trials + (1 - 1 / trials) * rho) / (tasks * mean * (1 - mean)))
    return special.logit(mean), sd_logit, log_kappa, sd_log_kappa


# -- the logit-normal model ----------------------------------------------------------------------
def _normal_moments(a, s):
    """Mean, variance and slope in ``a`` of ``expit(a + s Z)``, Z standard normal."""
    a, s = np.broadcast_arrays(np.asarray(a, float), np.asarray(s, float))
    p = special.expit(a[..., None] + s[..., None] * _Z)
    mean = p @ _W
    return mean, np.maximum((p * p) @ _W - mean**2, 0.0), (p * (1 - p)) @ _W


def _location(mean, s):
    """The ``a`` at which ``E expit(a + s Z)`` is ``mean``.

    Newton's method from the probit approximation.
    """
    mean = np.clip(mean, 1e-3, 1 - 1e-3)
    a = special.logit(mean) * np.sqrt(1 + np.pi * np.asarray(s) ** 2 / 8)
    for _ in range(8):
        value, _, slope = _normal_moments(a, s)
        a = a - (value - mean) / np.maximum(slope, 1e-9)
    return a


def _spread(mean: float, variance: float) -> float:
    """The logit spread ``s`` whose rates ``expit(a + s Z)`` at that mean have that variance."""
    grid = np.geomspace(_FLOOR, 8.0, 48)
    _, var, _ = _normal_moments(_location(np.full(grid.shape, mean), grid), grid)
    return float(np.interp(variance, var, grid))


@contextmanager
def _quiet():
    """NumPy's warnings of empty slices and 0/0 (a cluster a system did not run), silenced."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def logit_normal_draws(c, n, ds, form, draws, chains, rng) -> xr.Dataset:
    """One bound's ``logit_normal`` posterior: the quantities ``fit`` keeps.

    Drawn around values matched to the data (module docstring).
    """
    layout = logit_normal.Layout.from_dataset(ds)
    pops, cluster = layout.pops, layout.cluster
    n_sys, n_task = c.shape
    n_cluster = len(layout.cluster_labels or [0])
    valid = n > 0
    rates = np.where(valid, c / np.maximum(n, 1), np.nan)
    # each system's mean rate per stratum, and the spread of its true rates on the logit scale
    mean = np.full((n_sys, pops.n), 0.5)
    for h in range(pops.n):
        with _quiet():
            found = np.nanmean(rates[:, pops.code == h], axis=1)
        count = valid[:, pops.code == h].sum(axis=1)
        mean[:, h] = (np.nan_to_num(found, nan=0.5) * count + 0.5) / (count + 1)
    centred = rates - mean[:, pops.code]
    with _quiet():
        observed = np.nan_to_num(np.nanvar(centred, axis=1))
        noise = np.nanmean(np.where(n > 1, rates * (1 - rates) / (n - 1), np.nan), axis=1)
    overall = mean.mean(axis=1)
    share = np.where(np.isnan(noise), 0.6, 1.0)  # one trial per task: an intraclass 0.6
    true_var = np.maximum(np.where(np.isnan(noise), observed, observed - np.nan_to_num(noise)), 0)
    true_var = np.maximum(share * true_var, 0.02 * overall * (1 - overall))
    total = np.sqrt(np.mean([_spread(m, v) ** 2 for m, v in zip(overall, true_var, strict=True)]))
    # the total variance split as the empirical logits split it
    logits = special.logit((c + 0.5) / (n + 1.0))
    logits = logits - np.array(
        [[np.mean(row[valid[s]]) if valid[s].any() else 0.0] for s, row in enumerate(logits)]
    )
    split = _split(logits, valid, cluster, n_cluster, layout.paired)
    here = (True, layout.paired, layout.has_clusters, layout.has_clusters and layout.paired)
    names = [name for name, kept in zip(_LN_PARTS, here, strict=True) if kept]
    part = {name: float(np.nanmean(split[_LN_PARTS[name]] ** 2)) for name in names}
    weight = sum(part.values()) or 1.0
    sigma = {name: max(total * np.sqrt(part[name] / weight), _FLOOR) for name in names}
    u, w = np.zeros(n_cluster), np.zeros((n_sys, n_cluster))
    if layout.has_clusters:
        within = np.hypot(sigma["sigma_task"], sigma.get("sigma_task_system", 0.0))
        u, w = _cluster_effects(rates, valid, cluster, mean @ pops.weight, within, layout.paired)
        # the spreads of the cluster effects drawn; the task-level ones take the rest
        sigma["sigma_cluster"] = max(float(np.sqrt(np.mean(u**2))), _FLOOR)
        if layout.paired:
            sigma["sigma_cluster_system"] = max(float(np.sqrt(np.mean(w**2))), _FLOOR)
        clusters = np.hypot(sigma["sigma_cluster"], sigma.get("sigma_cluster_system", 0.0))
        ratio = np.sqrt(max(total**2 - clusters**2, 2 * _FLOOR**2)) / within
        for name in ("sigma_task", "sigma_task_system"):
            if name in sigma:
                sigma[name] = max(sigma[name] * ratio, _FLOOR)
    within = np.hypot(sigma["sigma_task"], sigma.get("sigma_task_system", 0.0))
    # intercepts at which each system's tasks, given the cluster effects, average its rate
    alpha = _intercepts(mean, u[cluster] + w[:, cluster], valid, pops.code, within)
    _, _, slope = _normal_moments(alpha, total)
    with _quiet():
        counts = np.stack([valid[:, pops.code == h].sum(axis=1) for h in range(pops.n)], 1)
    se = np.sqrt(np.maximum(observed, 0.01)[:, None] / np.maximum(counts, 1)) / slope
    shared = (sigma["sigma_task"] ** 2 + sigma.get("sigma_cluster", 0) ** 2) / total**2
    common = np.clip(se, 0.02, 2.5) * np.sqrt(min(shared, 1.0))  # the task effects' mean's
    alone = np.clip(se, 0.02, 2.5) * np.sqrt(max(1 - shared, 0.0))
    if form != "collapsed":
        # the drawn task effects carry the shared part (their mean moves against the
        # intercepts), each system's intercept only its own cells' spread over its tasks
        common = np.full_like(common, common.mean())
        spread = sigma.get("sigma_task_system", _FLOOR) / np.sqrt(np.maximum(counts, 1))
        alone = np.clip(np.minimum(alone, spread), 0.02, None)
    z = rng.standard_normal((chains, draws, 1, 1))
    alpha_draws = alpha + common * z + alone * rng.standard_normal((chains, draws, n_sys, pops.n))
    lead = ("chain", "draw")
    out: dict[str, tuple] = {"alpha": ((*lead, "system", "stratum"), alpha_draws)}
    dof = {
        "sigma_task": n_task,
        "sigma_task_system": valid.sum(),
        "sigma_cluster": n_cluster,
        "sigma_cluster_system": n_sys * n_cluster,
    }
    for name, value in sigma.items():
        out[name] = (lead, _positive(value, dof[name], (chains, draws), rng))
    if layout.system_level:
        level = _level(alpha.mean(axis=1), layout.recipes)
        out[layout.level_name] = (lead, _positive(level, n_sys, (chains, draws), rng))
    if layout.has_clusters:
        tasks_in = np.bincount(cluster, minlength=n_cluster)
        se_u = sigma["sigma_task"] / np.sqrt(tasks_in)
        out["cluster_effect"] = (
            (*lead, "cluster"),
            u + se_u * rng.standard_normal((chains, draws, n_cluster)),
        )
        if layout.paired:
            se_w = sigma["sigma_task_system"] / np.sqrt(tasks_in)
            out["cluster_system_effect"] = (
                (*lead, "system", "cluster"),
                w + se_w * rng.standard_normal((chains, draws, n_sys, n_cluster)),
            )
    if form != "collapsed":
        base = alpha[:, pops.code] + u[cluster] + w[:, cluster]
        effect = (
            _task_effects(
                c,
                n,
                base,
                sigma["sigma_task"],
                sigma.get("sigma_task_system"),
                (chains, draws),
                rng,
            )
            - common.flat[0] * z[..., 0]
        )
        out["task_effect"] = ((*lead, "task"), effect)
    post = xr.Dataset(out)
    if layout.has_clusters:
        post = post.assign_coords(cluster=np.asarray(layout.cluster_labels, dtype=object))
    if pops.strata is None:
        return post.assign(alpha=post["alpha"].isel(stratum=0, drop=True))
    return post.assign_coords(stratum=np.asarray(pops.strata, dtype=object))


def _positive(value, dof, shape, rng):
    """Draws of a spread around ``value``.

    Log-normal, with the sd of a variance estimated from ``dof`` units.
    """
    sd = min(1 / np.sqrt(2 * max(int(dof), 1)), 0.7)
    return max(float(value), _FLOOR) * np.exp(sd * rng.standard_normal(shape))


def _level(intercepts, recipes):
    """The systems' (or, with runs, the runs' within their recipes') spread of intercepts."""
    if recipes is None:
        return max(float(np.std(intercepts, ddof=1)), _FLOOR)
    means = np.bincount(recipes, intercepts) / np.bincount(recipes)
    dof = max(len(intercepts) - len(means), 1)
    return max(float(np.sqrt(((intercepts - means[recipes]) ** 2).sum() / dof)), _FLOOR)


def _cluster_effects(rates, valid, cluster, system_mean, within, paired):
    """Cluster and cluster-by-system effects matched to the clusters' mean rates.

    Shrunk towards the system's over two tasks' worth, task-weighted to mean zero.
    """
    n_cluster = cluster.max() + 1
    total = np.zeros((rates.shape[0], n_cluster))
    for g in range(n_cluster):
        members = valid[:, cluster == g]
        found = np.where(members, rates[:, cluster == g], 0.0).sum(axis=1)
        shrunk = (found + 2 * system_mean) / (members.sum(axis=1) + 2)
        total[:, g] = _location(shrunk, within)
    share = np.bincount(cluster, minlength=n_cluster) / len(cluster)
    u = total.mean(axis=0)
    w = total - u
    w = w - (w @ share)[:, None]
    return u - u @ share, w if paired else np.zeros_like(w)


def _intercepts(mean, offset, valid, code, spread):
    """Each system's (and stratum's) intercept, matched to its mean rate.

    The ``a`` at which ``E expit(a + offset + spread Z)``, averaged over its valid tasks, is its
    mean rate (Newton's method).
    """
    alpha = _location(mean, spread)
    target = np.clip(mean, 1e-3, 1 - 1e-3)
    for h in range(mean.shape[1]):
        members = valid & (code == h)[None]
        count = np.maximum(members.sum(axis=1), 1)
        for _ in range(8):
            value, _, slope = _normal_moments(alpha[:, h, None] + offset, spread)
            value, slope = (value * members).sum(1) / count, (slope * members).sum(1) / count
            step = (value - target[:, h]) / np.maximum(slope, 1e-9)
            alpha[:, h] -= np.clip(step, -2.0, 2.0)
    return alpha


def _task_effects(c, n, base, sigma_task, sigma_task_system, size, rng):
    """Draws of each task's effect from its conditional given the point estimates.

    On a grid around the mode of Laplace's approximation (the task-by-system effects folded in
    by the probit scaling of their spread), with each cell's task-by-system effect integrated
    out exactly (Gauss-Hermite), drawn by the inverse of the grid's distribution function.
    """
    scale = 1.0 if sigma_task_system is None else np.sqrt(1 + np.pi * sigma_task_system**2 / 8)
    mode = np.zeros(c.shape[1])
    for _ in range(40):
        p = special.expit((base + mode) / scale)
        grad = ((c - n * p) / scale).sum(axis=0) - mode / sigma_task**2
        hess = -(n * p * (1 - p) / scale**2).sum(axis=0) - 1 / sigma_task**2
        mode = mode - np.clip(grad / hess, -2.0, 2.0)  # damped: far from the mode, small steps
    # the cells' information, each cell's trials sharing its task-by-system effect: the grid
    # spans the mode +- 8 sds of this normal approximation
    binomial = n * p * (1 - p)
    info = (binomial / (1 + binomial * (sigma_task_system or 0.0) ** 2)).sum(axis=0)
    step = 8.0 / np.sqrt(info + 1 / sigma_task**2) / 30
    grid = mode[:, None] + step[:, None] * np.arange(-30, 31)  # (task, node)
    v, weights = (_CELL_Z * sigma_task_system, _CELL_W) if sigma_task_system else ([0.0], [1.0])
    log_post = np.empty(grid.shape)
    chunk = max(1, 2_000_000 // (c.shape[0] * grid.shape[1] * len(v)))
    for first in range(0, c.shape[1], chunk):
        j = slice(first, first + chunk)
        y = base[:, j, None, None] + grid[None, j, :, None] + v  # (system, task, node, v)
        cell = -c[:, j, None, None] * np.logaddexp(0, -y) - (n - c)[:, j, None, None] * (
            np.logaddexp(0, y)
        )
        top = cell.max(axis=-1)
        cell = top + np.log(np.exp(cell - top[..., None]) @ np.asarray(weights))
        log_post[j] = cell.sum(axis=0) - grid[j] ** 2 / (2 * sigma_task**2)
    cdf = np.cumsum(np.exp(log_post - log_post.max(axis=1, keepdims=True)), axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random((*size, c.shape[1]))
    at = np.stack([np.searchsorted(cdf[j], u[..., j]) for j in range(c.shape[1])], axis=-1)
    return grid[np.arange(c.shape[1]), at] + step * (rng.random(at.shape) - 0.5)


# -- the judge-aware model -----------------------------------------------------------------------
def judge_draws(ds, draws, chains, rng) -> tuple[xr.Dataset, xr.Dataset]:
    """The judge-aware model's ``posterior`` and ``task_effects``, around the labels' readings.

    Each system's sensitivity and specificity from its labelled attempts (Beta posteriors of
    their counts under a uniform prior); the true outcome as ``logit_normal``'s full-latent
    draws of every judged attempt, each unlabelled verdict counted as the share of that
    system's labelled attempts with the same verdict that were successes. The
    task-by-system effects are drawn from their spread.
    """
    cells = judge.judge_cells(ds)
    n11, n10, n01, n00, u1, u0 = (cells[name].astype(float) for name in judge.CELL_VARS)
    lead = (chains, draws)
    with np.errstate(invalid="ignore", divide="ignore"):
        true_if_1 = (n11.sum(1) + 0.5) / (n11.sum(1) + n10.sum(1) + 1.0)
        true_if_0 = (n01.sum(1) + 0.5) / (n01.sum(1) + n00.sum(1) + 1.0)
    c = n11 + n01 + u1 * true_if_1[:, None] + u0 * true_if_0[:, None]
    n = n11 + n10 + n01 + n00 + u1 + u0
    with _quiet():
        post = logit_normal_draws(c, n, ds, "full-latent", draws, chains, rng)
    effects = post[["task_effect"]]
    post = post.drop_vars(["task_effect", "task"], errors="ignore")
    S, J = c.shape
    if "sigma_task_system" in post:
        spread = post["sigma_task_system"].values[..., None, None]
        effects["task_system_effect"] = (
            ("chain", "draw", "system", "task"),
            spread * rng.standard_normal((*lead, S, J)),
        )
    n_judge = ds.sizes["judge"]
    if n_judge > 1:
        out = _several_judges(ds, lead, rng)
    else:
        own = judge.judge_cells(ds)
        sums = {name: own[name].sum(1).astype(float) for name in judge.CELL_VARS}
        out = {}
        for name, hit, miss in (
            ("sensitivity", sums["judge_n11"], sums["judge_n01"]),
            ("specificity", sums["judge_n00"], sums["judge_n10"]),
        ):
            rate = rng.beta(hit + 1.0, miss + 1.0, (*lead, S))
            out[name] = (("chain", "draw", "system"), rate)
            logit = special.logit(rate)
            out[f"judge_mu_{name}"] = (("chain", "draw"), logit.mean(-1))
            sd = max(float(np.std(special.logit((hit + 1.0) / (hit + miss + 2.0)))), _FLOOR)
            out[f"judge_sigma_{name}"] = (("chain", "draw"), _positive(sd, S, lead, rng))
            out[f"judge_task_sigma_{name}"] = (("chain", "draw"), _positive(0.3, J, lead, rng))
    post = post.assign(out)
    if n_judge > 1:
        post = post.assign_coords(
            judge=ds["judge"].values,
            verdicts=ds["verdicts"].values,
            judge_pair=judge_patterns.judge_pairs(ds["judge"].values.tolist()),
        )
    effects = effects.assign_coords(task=ds["task"].values, system=ds["system"].values)
    return post, effects


def _several_judges(ds, lead, rng) -> dict:
    """Several judges' verdict patterns given the truth, Dirichlet draws of the labelled ones.

    Per system and true outcome, the labelled attempts' pattern counts plus one half; each
    judge's sensitivity and specificity are the margins, as in the joint model.
    """
    counts = judge_patterns.pattern_cells(ds).sum(-1).astype(float)  # (verdicts, label, system)
    verdicts = judge_patterns.verdict_matrix(ds)
    S, n_pattern = counts.shape[2], counts.shape[0]
    out: dict[str, tuple] = {}
    for truth, label, name in ((1, 0, "sensitivity"), (0, 1, "specificity")):
        alpha = counts[:, label, :].T + 0.5  # (system, verdicts)
        gamma = rng.standard_gamma(alpha, (*lead, S, n_pattern))
        pi = gamma / gamma.sum(-1, keepdims=True)
        out[f"judge_patterns_given_{truth}"] = (("chain", "draw", "system", "verdicts"), pi)
        right = verdicts if truth == 1 else 1.0 - verdicts
        margin = np.einsum("cdsv,vk->cdks", pi, right)
        out[name] = (("chain", "draw", "judge", "system"), margin)
        out[f"judge_pattern_sigma_{name}"] = (
            ("chain", "draw", "judge"),
            np.stack([_positive(0.5, S, lead, rng) for _ in range(verdicts.shape[1])], -1),
        )
        n_pairs = verdicts.shape[1] * (verdicts.shape[1] - 1) // 2
        out[f"judge_dependence_{name}"] = (
            ("chain", "draw", "judge_pair"),
            0.3 * rng.standard_normal((*lead, n_pairs)),
        )
    return out


# -- the zoib model ------------------------------------------------------------------------------
def zoib_draws(stats, ds, draws, chains, rng) -> xr.Dataset:
    """One bound's ``zoib`` posterior.

    Drawn around an additive split of the cells' mean-score logits (module docstring).
    """
    layout = zoib.Layout.from_dataset(ds)
    cluster = layout.cluster
    n_sys = layout.n_systems
    n_cluster = len(layout.cluster_labels or [0])
    get = {k: stats[k].transpose("system", "task").values.astype(float) for k in stats.data_vars}
    trials = get["trials"]
    valid = trials > 0
    with _quiet():
        system_mean = np.nanmean(np.where(valid, get["sum"] / np.maximum(trials, 1), np.nan), 1)
    system_mean = np.clip(np.nan_to_num(system_mean, nan=0.5), 0.02, 0.98)
    cell = (get["sum"] + system_mean[:, None]) / (trials + 1)  # shrunk towards the system's
    cell = np.clip(cell, 0.005, 0.995)
    noise = 1 / np.sqrt((trials + 1) * cell * (1 - cell))
    eta = _location(cell, noise)  # the cells' mean scores averaged over that noise
    shape = (chains, draws)

    def normal(centre, sd, size=None):
        size = np.broadcast_shapes(np.shape(centre), np.shape(sd)) if size is None else size
        return centre + sd * rng.standard_normal(shape + size)

    alpha = np.array([eta[s, valid[s]].mean() if valid[s].any() else 0.0 for s in range(n_sys)])
    split = _split(eta - alpha[:, None], valid, cluster, n_cluster, layout.paired)
    zoi = special.logit((get["n0"] + get["n1"] + 0.5) / (trials + 1))
    gamma = np.array([zoi[s, valid[s]].mean() if valid[s].any() else 0.0 for s in range(n_sys)])
    zoi_effect = np.nanmean(np.where(valid, zoi - gamma[:, None], np.nan), axis=0)
    zoi_effect = np.nan_to_num(zoi_effect)
    lead = ("chain", "draw")
    out: dict[str, tuple] = {
        "alpha": ((*lead, "system"), normal(alpha, 0.02, (n_sys,))),
        "delta": ((*lead, "system"), normal(0.0, 0.05, (n_sys,))),
        "gamma": ((*lead, "system"), normal(gamma, 0.05, (n_sys,))),
        "phi": ((*lead, "system"), np.exp(normal(np.log(_precision(get)), 0.1, (n_sys,)))),
    }
    spreads = {
        "sigma_task": split["e"],
        "sigma_task_system": split["v"] if layout.paired else None,
        "sigma_cluster": split["u"] if layout.has_clusters else None,
        "sigma_cluster_system": split["w"] if layout.has_clusters and layout.paired else None,
        "sigma_zoi": zoi_effect,
    }
    for name, values in spreads.items():
        if values is not None:
            size = np.sum(np.isfinite(values))
            value = np.sqrt(np.nanmean(np.asarray(values) ** 2))
            out[name] = (lead, _positive(value, size, shape, rng))
    # the cells' uncertainty sits in the task-level effects: shared and own parts
    with _quiet():
        task_noise = np.sqrt(np.nanmean(np.where(valid, noise**2, np.nan), axis=0) / n_sys)
    out["task_effect"] = ((*lead, "task"), normal(split["e"], np.nan_to_num(task_noise, nan=1.0)))
    if layout.paired:
        own = np.where(valid, noise * np.sqrt(1 - 1 / n_sys), 1.0)
        v = np.nan_to_num(split["v"])
        out["task_system_effect"] = ((*lead, "system", "task"), normal(v, own))
    if layout.has_clusters:
        out["cluster_effect"] = ((*lead, "cluster"), normal(split["u"], 0.02))
        if layout.paired:
            out["cluster_system_effect"] = ((*lead, "system", "cluster"), normal(split["w"], 0.02))
    out["zoi_task_effect"] = ((*lead, "task"), normal(zoi_effect, 0.1))
    post = xr.Dataset(out)
    if layout.has_clusters:
        post = post.assign_coords(cluster=np.asarray(layout.cluster_labels, dtype=object))
    return post


def _split(y, valid, cluster, n_cluster, paired) -> dict:
    """``y (system, task)`` split into cluster, cluster-by-system, task and cell parts.

    The parts ``u``, ``w``, ``e`` and ``v``: means of the valid cells, each after the ones
    before.
    """
    y = np.where(valid, y, np.nan)
    with _quiet():
        u = np.nan_to_num(np.array([np.nanmean(y[:, cluster == g]) for g in range(n_cluster)]))
        w = np.stack([np.nanmean(y[:, cluster == g], axis=1) for g in range(n_cluster)], 1)
        w = np.nan_to_num(w - u) if paired else np.zeros_like(w)
        rest = y - u[cluster] - w[:, cluster]
        e = np.nan_to_num(np.nanmean(rest, axis=0))
    return {"u": u, "w": w, "e": e, "v": rest - e}


def _precision(get) -> float:
    """The Beta precision whose variance matches the interior scores'.

    Pooled; the prior's median where there are too few.
    """
    count = get["nmid"].sum()
    if count < 2:
        return float(np.exp(2.0))
    first = (get["sum"].sum() - get["n1"].sum()) / count
    second = (get["sumsq"].sum() - get["n1"].sum()) / count
    variance = max(second - first**2, 1e-4)
    return float(np.clip(first * (1 - first) / variance - 1, 1.0, 200.0))
