r"""Where the noise in a benchmark score comes from, and what more data would buy.

A system's score is the mean over its J valid tasks of each task's observed rate. Run again on a
new benchmark of the same design (new tasks like these, in new clusters of the same sizes, the
same trials per task), it varies by

.. math::

    V = V_\text{cluster} + V_\text{task} + V_\text{trial},\qquad
    V_\text{trial} = \frac{1}{J^2}\sum_j \frac{p_j (1 - p_j)}{n_j},

the trial (evaluation) noise of the attempts around each task's rate ``p_j``, the sampling of
tasks within clusters, and the sampling of clusters. A paired difference of two systems on the
tasks valid for both has the same decomposition with ``d_j = p_{Bj} - p_{Aj}`` in place of
``p_j`` and the two systems' trial terms added: the covariance the two scores share through
their tasks (and clusters) is what pairing removes (``shared_cov``).

Two estimates, one of each kind:

* :func:`posterior_noise` (``Results.noise``): per posterior draw, the components computed
  from that draw's task rates (the rates themselves, so the trial term is known exactly given
  the draw); posterior means and intervals over draws. With one trial per task the split
  between trial and task noise leans on the model.
* :func:`noise` (``bayeval.bootstrap.noise``): the method of moments on the observed rates.
  Each task's trial variance is estimated without bias from its repeated attempts,
  ``v_j = r_j (1 - r_j) n_j / (n_j - 1)`` (two independent evaluations per task suffice), and
  subtracted from the spread of the observed rates; intervals from resampling tasks (or
  clusters). A task with one valid trial takes its system's mean ``v`` over the tasks with
  more (``trial_imputed``: the share of tasks that did; it assumes their rates are like the
  others'). A system with no repeated attempts leaves the split unidentified: its trial and
  task components are NaN, its total is not.

The components use the cluster-robust variance of a mean,
``V = G/(G-1) * sum_g (T_g - m_g xbar)^2 / J^2`` (``T_g`` the sum over cluster g's ``m_g``
tasks; each task its own cluster when there are none), which without clusters is the familiar
``s^2 / J``; the within-cluster part is the pooled within-cluster variance over J, and the
cluster part the rest, truncated at zero (as are all components).

Plans rescale the components: ``2x tasks`` doubles tasks and clusters (the same cluster
sizes); ``+1 trial`` gives every task one more attempt. The minimum detectable difference of a
pair is ``(z_{1 - alpha/2} + z_{power}) * sd`` of its difference (a two-sided normal test).
With training runs (``from_frame(..., run=...)``) each recipe also gets a run (seed)
component, ``run_var``: the variance of a checkpoint's score across training runs of the
recipe. The posterior takes it from the run level of ``logit_normal`` (the variance over new
runs of a checkpoint's population pass@1); the method of moments from the spread of the
recipe's checkpoint scores on the same tasks less their trial terms (which leaves in the
run-by-task interaction's share, of order 1/J).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from bayeval._validate import (
    validate_choice,
    validate_positive_int,
    validate_prob,
    validate_seed,
)
from bayeval.analyses._draws import thinned
from bayeval.data import EvalData, require_valid_outcomes
from bayeval.posterior import Posterior
from bayeval.resampling import _refuse_scores

__all__ = ["noise", "posterior_noise", "PLANS"]

PLANS = ("as run", "+1 task", "2x tasks", "+1 trial", "2x trials")
COMPONENTS = ("cluster", "task", "trial")
_CHUNK_CELLS = 4_000_000  # replicates x columns x tasks held at once


def _arrays(data):
    ds = data.dataset
    if "missing_bound" in ds["successes"].dims:
        raise ValueError(
            "noise takes data without missing bounds: use missing='fail' or "
            "'exclude' (under 'bounds' each bound is its own data set)"
        )
    c = ds["successes"].transpose("system", "task").values.astype(float)
    n = ds["trials"].transpose("system", "task").values.astype(float)
    if "cluster" in ds.coords:
        cluster = pd.factorize(np.asarray(ds["cluster"].values, dtype=object))[0]
    else:
        cluster = np.arange(ds.sizes["task"])
    return c, n, cluster, "cluster" in ds.coords


def _columns(S: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns: each system alone, then every ordered pair (candidate, baseline)."""
    cand, base = np.meshgrid(np.arange(S), np.arange(S), indexing="ij")
    off = cand != base
    return cand[off], base[off]


def _column_values(x, t, valid, cand, base):
    """Values, trial terms and masks of the columns: systems, then pair differences.

    ``x``, ``t``: (B, S, J); ``valid``: (S, J). Returns (B, C, J) arrays and a (C, J) mask.
    """
    xs = np.concatenate([x, x[:, cand] - x[:, base]], axis=1)
    ts = np.concatenate([t, t[:, cand] + t[:, base]], axis=1)
    ms = np.concatenate([valid, valid[cand] & valid[base]], axis=0)
    return xs, ts, ms


def _finish(v_tot, within, v_trial, J, clustered: bool, corrected: bool):
    """Variance components from the cluster-robust, within-cluster and trial variances.

    ``v_tot`` is the cluster-robust variance, ``within`` the pooled within-cluster variance,
    ``v_trial`` the trial term. ``corrected``: the values were observed rates that carry the trial
    noise (method of moments) rather than the rates themselves. Returns V_cluster, V_task, V_trial,
    V (the score's variance as run) and J.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        if not clustered:
            v_task = v_tot - v_trial if corrected else v_tot
            v_cluster = np.zeros_like(v_tot)
        else:
            if corrected:
                within = within - v_trial * J
            v_task = np.maximum(within, 0) / J
            v_cluster = v_tot - v_task - (v_trial if corrected else 0)
        total = v_tot if corrected else v_tot + v_trial
    return np.maximum(v_cluster, 0), np.maximum(v_task, 0), v_trial, total, J


def _design(x, t, mask, onehot, task_w, cluster_w, clustered: bool, corrected: bool):
    """Variance components of a mean over tasks, vectorised over (B, C), any masks.

    ``x``, ``t``: (B, C, J) task values and per-task trial terms (``sigma_j^2 / n_j``);
    ``mask``: (C, J); ``onehot``: (J, G); ``task_w`` (B, J) and ``cluster_w`` (B, G): how many
    times each task (within its cluster) and each cluster count (resampling weights, or ones).
    Returns what :func:`_finish` does, each (B, C).
    """
    w = task_w[:, None, :] * mask[None]  # (B, C, J)
    m_g = w @ onehot  # (B, C, G)
    T_g = (w * x) @ onehot
    Q_g = (w * x * x) @ onehot
    R_g = (w * t) @ onehot
    cw = cluster_w[:, None, :]
    J = (cw * m_g).sum(-1)
    G = (cw * (m_g > 0)).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        xbar = (cw * T_g).sum(-1) / J
        v_tot = G / (G - 1) * (cw * (T_g - m_g * xbar[..., None]) ** 2).sum(-1) / J**2
        v_trial = (cw * R_g).sum(-1) / J**2
        within = (cw * np.where(m_g > 0, Q_g - T_g**2 / np.where(m_g > 0, m_g, 1), 0)).sum(-1) / (
            J - G
        )
    return _finish(v_tot, within, v_trial, J, clustered, corrected)


def _matrix_design(x, t, t_plus, onehot, cluster, task_w, cluster_w, clustered, corrected):
    """:func:`_design` for every system and pair at once when every system has every task.

    The pairs' variances follow from the systems' covariance matrices of cluster sums, at a cost in
    systems squared per cluster rather than per task and pair.

    ``x``, ``t``, ``t_plus``: (B, S, J). Returns the five arrays of :func:`_finish` over the
    columns (systems, then pairs) and the trial term with one more trial per task.
    """
    B, S, _ = x.shape
    cand, base = _columns(S)
    m = task_w @ onehot  # (B, G)
    cw = cluster_w
    J = (cw * m).sum(-1)[:, None]
    G = (cw * (m > 0)).sum(-1)[:, None, None]
    T = np.einsum("bj,bsj,jg->bgs", task_w, x, onehot, optimize=True)
    x_mean = np.einsum("bg,bgs->bs", cw, T) / J
    mT = np.einsum("bg,bgs->bs", cw * m, T)
    m2 = (cw * m * m).sum(-1)[:, None, None]
    cross = np.einsum("bg,bgs,bgt->bst", cw, T, T, optimize=True)
    cross = (
        cross
        - x_mean[:, None, :] * mT[:, :, None]
        - x_mean[:, :, None] * mT[:, None, :]
        + x_mean[:, :, None] * x_mean[:, None, :] * m2
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        v_cov = G / (G - 1) * cross / J[..., None] ** 2
        wj = cluster_w[:, cluster] * task_w
        if clustered:
            inv_m = np.where(m > 0, cw / np.where(m > 0, m, 1), 0)
            w_cov = (
                np.einsum("bj,bsj,btj->bst", wj, x, x, optimize=True)
                - np.einsum("bg,bgs,bgt->bst", inv_m, T, T, optimize=True)
            ) / (J[..., None] - G)
        else:
            w_cov = np.zeros_like(v_cov)
        r = np.einsum("bj,bsj->bs", wj, t) / J**2
        r_plus = np.einsum("bj,bsj->bs", wj, t_plus) / J**2

    def columns(cov):
        diag = np.diagonal(cov, axis1=1, axis2=2)
        return np.concatenate([diag, diag[:, cand] + diag[:, base] - 2 * cov[:, cand, base]], 1)

    def summed(a):
        return np.concatenate([a, a[:, cand] + a[:, base]], axis=1)

    J_c = np.broadcast_to(J, (B, S + len(cand)))
    parts = _finish(columns(v_cov), columns(w_cov), summed(r), J_c, clustered, corrected)
    return parts, summed(r_plus)


def _plans(total, v_trial, v_trial_plus, J):
    """Score variance under each plan, on a trailing ``plan`` axis.

    NaN for the trial plans where the trial term is not identified.
    """
    rest = total - v_trial
    return np.maximum(
        np.stack(
            [
                total,
                total * J / (J + 1),
                total / 2,
                rest + v_trial_plus,
                rest + v_trial / 2,
            ],
            axis=-1,
        ),
        0,
    )


def _components(x, sigma2, n, valid, cluster, clustered, task_w, cluster_w, corrected):
    """All quantities per replicate / draw.

    ``x`` (B, S, J) rates, ``sigma2`` (B, S, J) the per-attempt trial variance of each task (NaN
    where it cannot be estimated).
    """
    S = x.shape[1]
    cand, base = _columns(S)
    safe_n = np.where(valid, n, 1.0)
    t = np.where(valid, sigma2 / safe_n, 0.0)
    t_plus = np.where(valid, sigma2 / (safe_n + 1), 0.0)
    onehot = np.zeros((len(cluster), cluster.max() + 1))
    onehot[np.arange(len(cluster)), cluster] = 1.0
    if valid.all():
        (v_cluster, v_task, v_trial, total, J), v_trial_plus = _matrix_design(
            np.broadcast_to(x, t.shape),
            t,
            t_plus,
            onehot,
            cluster,
            task_w,
            cluster_w,
            clustered,
            corrected,
        )
        plans = _plans(total, v_trial, v_trial_plus, J)
        alone = [np.maximum(total[:, idx], 0) for idx in (cand, base)]
    else:
        xs, ts, ms = _column_values(np.where(valid, x, 0.0), t, valid, cand, base)
        _, ts_plus, _ = _column_values(x, t_plus, valid, cand, base)
        v_cluster, v_task, v_trial, total, J = _design(
            xs, ts, ms, onehot, task_w, cluster_w, clustered, corrected
        )
        v_trial_plus = (
            cluster_w[:, None, :] * ((task_w[:, None, :] * ms[None] * ts_plus) @ onehot)
        ).sum(-1) / J**2
        plans = _plans(total, v_trial, v_trial_plus, J)
        # the two systems alone, on the tasks valid for both: their scores' covariance
        pair_mask = ms[S:]
        alone = []
        for idx in (cand, base):
            parts = _design(
                np.where(pair_mask[None], x[:, idx], 0.0),
                t[:, idx],
                pair_mask,
                onehot,
                task_w,
                cluster_w,
                clustered,
                corrected,
            )
            alone.append(np.maximum(parts[3], 0))
    shared = (alone[0] + alone[1] - plans[:, S:, 0]) / 2
    # per-attempt and per-task variances of each system
    wt = (task_w * cluster_w[:, cluster])[:, None, :] * valid[None]
    with np.errstate(invalid="ignore", divide="ignore"):
        trial_var = (wt * np.where(valid, sigma2, 0)).sum(-1) / wt.sum(-1)
    J_s = J[:, :S]
    task_var = v_task[:, :S] * J_s
    m_g = (task_w[:, None, :] * valid[None]) @ onehot
    sum_m2 = (cluster_w[:, None, :] * m_g**2).sum(-1)
    cluster_var = v_cluster[:, :S] * J_s**2 / sum_m2
    return {
        "trial_var": trial_var,
        "task_var": task_var,
        "cluster_var": cluster_var,
        "score_var": plans[:, :S],
        "diff_var": plans[:, S:],
        "shared_cov": shared,
        "parts": np.stack([v_cluster, v_task, v_trial], axis=-1),  # (B, C, component)
    }


def _assemble(values: dict, systems, ci_prob, z, interval, attrs) -> xr.Dataset:
    """Estimates (and intervals over the leading replicate axis) as a Dataset."""
    S = len(systems)
    cand, base = _columns(S)

    def square(a):  # (..., C_pairs, ...) -> (..., S, S, ...) with a NaN diagonal
        out = np.full(a.shape[:1] + (S, S) + a.shape[2:], np.nan)
        out[:, cand, base] = a
        return out

    parts = values["parts"]
    total = parts.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = parts / total
    raw = {
        "trial_var": (("system",), values["trial_var"]),
        "task_var": (("system",), values["task_var"]),
        "cluster_var": (("system",), values["cluster_var"]),
        "score_sd": (("system", "plan"), np.sqrt(values["score_var"])),
        "components": (("system", "component"), parts[:, :S]),
        "share": (("system", "component"), share[:, :S]),
        "diff_sd": (("candidate", "baseline", "plan"), square(np.sqrt(values["diff_var"]))),
        "mdd": (("candidate", "baseline", "plan"), square(z * np.sqrt(values["diff_var"]))),
        "shared_cov": (("candidate", "baseline"), square(values["shared_cov"])),
        "diff_components": (("candidate", "baseline", "component"), square(parts[:, S:])),
        "diff_share": (("candidate", "baseline", "component"), square(share[:, S:])),
    }
    out = {}
    for name, (dims, a) in raw.items():
        out[name] = (dims, interval["estimate"](a))
        out[f"{name}_interval"] = (dims + ("ci_bound",), interval["bounds"](a))
    coords = {
        "system": np.asarray(systems, dtype=object),
        "candidate": np.asarray(systems, dtype=object),
        "baseline": np.asarray(systems, dtype=object),
        "plan": list(PLANS),
        "component": list(COMPONENTS),
        "ci_bound": ["lower", "upper"],
    }
    ds = xr.Dataset(out, coords=coords)
    ds.attrs = {"ci_prob": ci_prob, "mdd_multiplier": float(z), **attrs}
    return ds


def _percentile_bounds(ci_prob):
    alpha = 1 - ci_prob

    def bounds(a):
        with np.errstate(invalid="ignore"):
            q = (
                np.nanquantile(a, [alpha / 2, 1 - alpha / 2], axis=0)
                if np.isfinite(a).any()
                else np.full((2,) + a.shape[1:], np.nan)
            )
        return np.moveaxis(q, 0, -1)

    return bounds


def _check_common(alpha, power, ci_prob):
    return (
        validate_prob("alpha", alpha),
        validate_prob("power", power),
        validate_prob("ci_prob", ci_prob),
    )


def _multiplier(alpha, power) -> float:
    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


def _design_attrs(n, valid, cluster, clustered) -> dict:
    tasks = valid.any(0)
    return {
        "n_tasks": int(tasks.sum()),
        "n_clusters": int(len(np.unique(cluster[tasks]))) if clustered else int(tasks.sum()),
        "clustered": bool(clustered),
        "trials_min": int(n[valid].min()),
        "trials_max": int(n[valid].max()),
    }


def posterior_noise(
    posterior: Posterior,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    ci_prob: float = 0.95,
    n_draws: int = 400,
) -> xr.Dataset:
    """Where the variance of each benchmark score comes from, and what more data buys.

    From the posterior, as ``Results.noise``.

    The score's variance over new benchmarks of the same design splits into trial
    (evaluation) noise, task sampling and cluster sampling (see the module); for each pair,
    the covariance the two scores share through their tasks and the minimum detectable
    difference (two-sided level ``alpha``, ``power``), as run and under plans with more
    tasks or more trials. Computed per posterior draw from that draw's task rates
    (``n_draws`` of them, taken evenly). Its twin is :func:`noise`
    (``bayeval.bootstrap.noise``, the method of moments).

    Parameters
    ----------
    posterior : Posterior
        A fit of success data (the trial variance is ``p (1 - p)``).
    alpha, power : float, default 0.05, 0.8
        The two-sided test level and the power of the minimum detectable difference.
    ci_prob : float, default 0.95
        Coverage of the equal-tailed intervals (on ``ci_bound``).
    n_draws : int, default 400
        Posterior draws used, taken evenly from each chain.

    Returns
    -------
    xarray.Dataset
        As :func:`noise`: posterior means, with intervals on ``ci_bound``; with training
        runs, ``run_var`` per ``recipe`` from the run level of ``logit_normal``.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.analyses.noise import posterior_noise
    >>> data = be.from_counts([[3, 1, 4, 0, 2, 4], [4, 2, 4, 1, 2, 3]], trials=4,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> out = posterior_noise(res, n_draws=100)
    >>> out["mdd"].sel(candidate="B", baseline="A").dims
    ('plan',)
    """
    alpha, power, ci_prob = _check_common(alpha, power, ci_prob)
    n_draws = validate_positive_int("n_draws", n_draws)
    data = posterior.data
    _refuse_scores(data, "the trial variance p(1 - p)")
    c, n, cluster, clustered = _arrays(data)
    valid = n > 0
    _require_tasks(valid, data.systems)
    thin = thinned(posterior, n_draws)
    rates = thin._model.task_rates(thin.tree).transpose("chain", "draw", "system", "task")
    p = rates.values.reshape((-1,) + rates.shape[2:])
    p = np.where(valid[None], p, 0.0)
    B = p.shape[0]
    ones_t, ones_g = np.ones((B, len(cluster))), np.ones((B, cluster.max() + 1))
    values: dict = {}  # key -> per-chunk arrays, then their concatenation
    for sl in _slices(B, p.shape[1] ** 2 * p.shape[2]):
        part = _components(
            p[sl],
            p[sl] * (1 - p[sl]),
            n,
            valid,
            cluster,
            clustered,
            ones_t[sl],
            ones_g[sl],
            corrected=False,
        )
        for key, a in part.items():
            values.setdefault(key, []).append(a)
    values = {key: np.concatenate(a) for key, a in values.items()}
    interval = {"estimate": lambda a: np.nanmean(a, axis=0), "bounds": _percentile_bounds(ci_prob)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN diagonals
        out = _assemble(
            values,
            data.systems,
            ci_prob,
            _multiplier(alpha, power),
            interval,
            {
                "method": "posterior",
                "model": posterior.model,
                "n_draws": int(B),
                "alpha": alpha,
                "power": power,
                **_design_attrs(n, valid, cluster, clustered),
            },
        )
    if "recipe" in data.dataset.coords and "sigma_run" in posterior.tree["posterior"]:
        runs = thin._model.run_variance(thin.tree)
        draws = runs.stack(sample=("chain", "draw")).transpose("sample", ...).values
        out = _with_runs(out, runs["system"].values, draws, interval)
    return out


def _with_runs(out, recipes, draws, interval) -> xr.Dataset:
    """Add the run (seed) component per recipe, ``run_var``.

    From replicate/draw values ``(B, recipe)``.
    """
    out = out.assign_coords(recipe=np.asarray(recipes, dtype=object))
    out["run_var"] = ("recipe", interval["estimate"](draws))
    out["run_var_interval"] = (("recipe", "ci_bound"), interval["bounds"](draws))
    return out


def _run_moments(r, valid, recipes, wj, v_trial) -> tuple[list, np.ndarray]:
    """Method of moments for the run component.

    Per recipe with two or more runs, the variance of its checkpoints' scores on the same tasks less
    their mean trial term, per replicate (``wj (B, J)`` task weights, ``v_trial (B, S)``).
    """
    labels = list(dict.fromkeys(recipes.tolist()))
    mask = valid[None] * wj[:, None, :]  # (B, S, J)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (mask * r[None]).sum(-1) / mask.sum(-1)  # (B, S)
    out = np.full((wj.shape[0], len(labels)), np.nan)
    for i, label in enumerate(labels):
        members = recipes == label
        if members.sum() >= 2:
            spread = score[:, members].var(axis=1, ddof=1)
            out[:, i] = np.maximum(spread - v_trial[:, members].mean(axis=1), 0.0)
    return labels, out


def _slices(B: int, width: int):
    step = max(1, _CHUNK_CELLS // max(width, 1))
    return [slice(i, min(i + step, B)) for i in range(0, B, step)]


def _require_tasks(valid, systems):
    few = valid.sum(1) < 2
    if few.any():
        names = [systems[i] for i in np.nonzero(few)[0]]
        raise ValueError(f"noise needs at least 2 valid tasks per system; {names!r} have fewer")


def noise(
    data: EvalData,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    unit: str | None = None,
    ci_prob: float = 0.95,
    n_boot: int = 1000,
    seed=0,
) -> xr.Dataset:
    """The components of a benchmark score's variance by the method of moments.

    The frequentist twin of :func:`posterior_noise` (``Results.noise``): trial noise from
    each task's repeated attempts, task and cluster sampling from the spread of the observed
    rates (see the module), with intervals from resampling tasks or clusters.

    Parameters
    ----------
    data : EvalData
    alpha, power : float, default 0.05, 0.8
        The two-sided test level and the power of the minimum detectable difference.
    unit : {"task", "cluster"}, optional
        What the intervals resample; default clusters when the data have them, else tasks.
    ci_prob : float, default 0.95
    n_boot : int, default 1000
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        Per system: ``trial_var`` (the variance of one attempt around its task's rate),
        ``task_var`` (of the task rates, within clusters), ``cluster_var`` (of the clusters'
        mean rates), ``score_sd`` over ``plan``, and the score's variance as run over
        ``component`` (cluster, task, trial): ``components`` and their ``share``. Per pair
        ``(candidate, baseline)``: ``diff_sd`` and ``mdd`` over ``plan``, ``shared_cov`` (the
        covariance of the two scores that pairing removes), ``diff_components`` and
        ``diff_share``; ``trial_imputed`` per system (see the module); with runs,
        ``run_var`` per ``recipe`` (NaN for a recipe with one run). With few
        clusters (fewer than about 10) cluster-resampled intervals are unreliable (the
        bootstrap cannot see variation it has few units of). Components are truncated at
        zero; the method of moments' total is
        the unbiased one (``s^2 / J`` without clusters), which truncated parts need not sum
        to. Each has an ``_interval`` on ``ci_bound``. NaN where a
        quantity is not identified (the trial split with one trial on a task).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[3, 1, 4, 0, 2, 4], [4, 2, 4, 1, 2, 3]], trials=4,
    ...                       systems=["A", "B"])
    >>> out = be.bootstrap.noise(data, n_boot=200)
    >>> round(float(out["score_sd"].sel(system="A", plan="as run")) ** 2, 5)  # s^2 / J
    0.02778
    >>> out["mdd"].sel(candidate="B", baseline="A", plan="as run").round(3).item()
    0.233
    """
    if not isinstance(data, EvalData):
        raise TypeError(f"data must be an EvalData (from be.from_frame); got {type(data).__name__}")
    alpha, power, ci_prob = _check_common(alpha, power, ci_prob)
    n_boot = validate_positive_int("n_boot", n_boot, minimum=2)
    rng = np.random.default_rng(validate_seed(seed))
    require_valid_outcomes(data)
    _refuse_scores(data, "the trial variance p(1 - p)")
    c, n, cluster, clustered = _arrays(data)
    unit = ("cluster" if clustered else "task") if unit is None else unit
    validate_choice("unit", unit, ("task", "cluster"))
    if unit == "cluster" and not clustered:
        raise ValueError("unit='cluster' needs data with clusters (from_frame(cluster=...))")
    valid = n > 0
    _require_tasks(valid, data.systems)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(valid, c / np.where(valid, n, 1), 0.0)
        sigma2 = np.where(n >= 2, r * (1 - r) * n / np.where(n >= 2, n - 1, 1), np.nan)
        single = valid & (n < 2)  # one trial: its task's trial variance is not estimable
        repeated = n >= 2
        mean_v = np.where(repeated, sigma2, 0).sum(1, keepdims=True) / repeated.sum(
            1, keepdims=True
        )  # NaN for a system without repeats
        sigma2 = np.where(single, mean_v, sigma2)
        imputed = single.sum(1) / valid.sum(1)
    J, G = len(cluster), cluster.max() + 1
    task_w = np.ones((n_boot + 1, J))
    cluster_w = np.ones((n_boot + 1, G))
    if unit == "cluster":
        cluster_w[1:] = rng.multinomial(G, np.full(G, 1 / G), size=n_boot)
    elif clustered:
        task_w[1:] = rng.multinomial(J, np.full(J, 1 / J), size=n_boot)
    else:  # each task is its own cluster
        cluster_w[1:] = rng.multinomial(G, np.full(G, 1 / G), size=n_boot)
    x = np.broadcast_to(r, (1,) + r.shape)
    s2 = np.broadcast_to(sigma2, (1,) + r.shape)
    values: dict = {}  # key -> per-chunk arrays, then their concatenation
    for sl in _slices(n_boot + 1, r.shape[0] ** 2 * J):
        size = sl.stop - sl.start
        part = _components(
            np.broadcast_to(x, (size,) + r.shape),
            np.broadcast_to(s2, (size,) + r.shape),
            n,
            valid,
            cluster,
            clustered,
            task_w[sl],
            cluster_w[sl],
            corrected=True,
        )
        for key, a in part.items():
            values.setdefault(key, []).append(a)
    values = {key: np.concatenate(a) for key, a in values.items()}
    bounds = _percentile_bounds(ci_prob)
    interval = {"estimate": lambda a: a[0], "bounds": lambda a: bounds(a[1:])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN diagonals
        out = _assemble(
            values,
            data.systems,
            ci_prob,
            _multiplier(alpha, power),
            interval,
            {
                "method": "method of moments",
                "unit": unit,
                "n_boot": n_boot,
                "seed": int(validate_seed(seed)),
                "alpha": alpha,
                "power": power,
                **_design_attrs(n, valid, cluster, clustered),
            },
        )
    out["trial_imputed"] = ("system", imputed)
    if "recipe" in data.dataset.coords:
        recipes = np.asarray(data.dataset["recipe"].values, dtype=object)
        wj = task_w * cluster_w[:, cluster]
        labels, draws = _run_moments(r, valid, recipes, wj, values["parts"][:, : len(recipes), 2])
        out = _with_runs(out, labels, draws, interval)
    return out
