"""Decisions over many systems read from one posterior: the winner's curse and effect curves.

:meth:`bayeval.Results.winner` and :meth:`bayeval.Results.compare_curve` are thin wrappers
around the functions here; :func:`curve_bootstrap` is the curve's frequentist twin
(``bayeval.bootstrap.compare_curve``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import validate_k, validate_prob
from bayeval.estimators import _unbiased
from bayeval.models._beta_family import metric_of_rate

SAMPLE_DIMS = ("chain", "draw")
CONTRIBUTION_DRAWS = 400  # draws behind each task's posterior contribution to a curve


def observed_scores(successes: np.ndarray, trials: np.ndarray, k: int, metric: str, systems=None):
    """Per system, the mean over its valid tasks (``trials >= k``) of the unbiased estimator.

    ``successes`` and ``trials`` are ``(system, task)``; returns ``(scores (S,), per_task
    (S, J))`` with NaN where a task has fewer than k trials.
    """
    trials = np.asarray(trials)
    valid = trials >= k
    per_task = np.full(trials.shape, np.nan)
    if valid.any():
        per_task[valid] = _unbiased(
            trials[valid], np.asarray(successes)[valid], np.full(valid.sum(), k), metric
        )
    empty = ~valid.any(axis=1)
    if empty.any():
        names = (
            np.flatnonzero(empty).tolist()
            if systems is None
            else [systems[s] for s in np.flatnonzero(empty)]
        )
        raise ValueError(
            f"system(s) {names} have no task with at least k={k} valid trials: "
            "their observed score is undefined"
        )
    return np.nanmean(per_task, axis=1), per_task


def _counts(results):
    obs = results.tree["observed_data"]
    if "missing_bound" in obs["successes"].dims:
        raise ValueError(
            "winner and compare_curve take data without missing bounds (fit with "
            "missing='fail' or 'exclude', or compare the bounds of one pair)"
        )
    c = obs["successes"].transpose("system", "task").values
    n = obs["trials"].transpose("system", "task").values
    return c, n


def winner(
    results,
    metric="pass@k",
    k=1,
    estimand="population",
    ci_prob=0.95,
    n_replicates=200,
    seed=None,
    clusters=None,
    weighting="task",
) -> xr.Dataset:
    """The system picked by the observed score and what the pick is worth.

    See :meth:`bayeval.Results.winner`.
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, int) or n_replicates < 1:
        raise ValueError(f"n_replicates must be a positive int; got {n_replicates!r}")
    ks, scalar = validate_k(k)
    if not scalar:
        raise ValueError(f"winner takes one k; got {k!r}")
    k = int(ks[0])
    c, n = _counts(results)
    systems = results.systems
    scores, _ = observed_scores(c, n, k, metric, systems)
    pick = int(np.argmax(scores))
    # equal scores summed in a different order can differ in the last bits
    tied = [
        systems[s]
        for s in np.flatnonzero(np.isclose(scores, scores[pick], rtol=0, atol=1e-12))
        if s != pick
    ]
    values = results._single_metric("winner", metric, k, estimand, clusters, weighting)
    draws = values.transpose("chain", "draw", "system").values.reshape(-1, len(systems))
    value = draws[:, pick]
    alpha = 1 - ci_prob
    best = draws.argmax(axis=1)
    out = xr.Dataset(
        {
            "naive_score": scores[pick],
            "value": (("sample",), value),
            "value_mean": value.mean(),
            "value_interval": (("ci_bound",), np.quantile(value, [alpha / 2, 1 - alpha / 2])),
            "prob_pick_is_best": float((best == pick).mean()),
            "observed_score": (("system",), scores),
            "posterior_mean": (("system",), draws.mean(axis=0)),
        },
        coords={"system": np.asarray(systems, dtype=object), "ci_bound": ["lower", "upper"]},
    )
    rep = replicate_selection(results, metric, k, n_replicates, seed)
    out["tasks_mean"] = (("system",), rep["tasks_mean"])
    out["optimism"] = scores[pick] - rep["tasks_mean"][pick]
    out["expected_optimism"] = rep["optimism"].mean()
    out["expected_optimism_sd"] = rep["optimism"].std(ddof=1)
    out["replicate_prob_best_picked"] = rep["best_picked"].mean()
    out.attrs = {
        "pick": systems[pick],
        "tied_with": tied,
        "metric": metric,
        "k": k,
        "estimand": estimand,
        "ci_prob": ci_prob,
        "model": results.model,
        "n_replicates": n_replicates,
        "optimism": (
            "naive score of the pick minus the posterior mean of its mean "
            "over these tasks (the naive score's own target)"
        ),
        "expected_optimism": (
            "replicate benchmarks on these tasks drawn from the posterior (task rates "
            "per draw, binomial trials as observed): the mean of the picked system's "
            "naive score minus its true mean over these tasks"
        ),
    }
    return out


def thinned(results, n_draws: int):
    """The same results with about ``n_draws`` draws in all, taken evenly from each chain
    (the per-task readouts cost in proportion to the draws)."""
    from bayeval.results import Results

    post = results.tree["posterior"]
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    per_chain = max(1, min(draws, -(-n_draws // chains)))
    if per_chain == draws:
        return results
    index = np.unique(np.linspace(0, draws - 1, per_chain).round().astype(int))
    tree = results.tree
    groups = {"/": tree.to_dataset(inherit=False)}
    for name, node in tree.children.items():  # groups thinned apart (predictive) stay as they are
        ds = node.to_dataset(inherit=False)
        groups[name] = ds.isel(draw=index) if ds.sizes.get("draw") == draws else ds
    return Results(xr.DataTree.from_dict(groups))


def replicate_selection(results, metric: str, k: int, n_replicates: int, seed=None) -> dict:
    """Pick-by-observed-score on replicate data from the posterior, with the truth known.

    For each of ``n_replicates`` posterior draws (taken evenly): the task rates of that draw
    are the truth; binomial counts with the observed trials are a replicate benchmark; the
    replicate's observed scores pick a system. Returns arrays ``optimism`` (the pick's naive
    score minus its true mean over these tasks), ``best_picked`` (whether the pick is the
    truly best system of that draw) and ``tasks_mean`` (per system, the posterior mean of its
    metric's mean over these tasks, from the same draws).
    """
    c, n = _counts(results)
    rates = (
        thinned(results, n_replicates)
        .task_rates()
        .transpose("chain", "draw", "system", "task")
        .values
    )
    rates = rates.reshape(-1, *rates.shape[2:])  # (draw, S, J)
    take = np.unique(np.linspace(0, len(rates) - 1, min(n_replicates, len(rates))).astype(int))
    seed = int(results.tree.attrs["seed"]) if seed is None else seed
    rng = np.random.default_rng([seed, 13])
    valid = n >= k
    optimism = np.empty(len(take))
    best_picked = np.empty(len(take), dtype=bool)
    truths = np.empty((len(take), len(c)))
    ks = np.array([k])
    for i, d in enumerate(take):
        p = np.nan_to_num(rates[d], nan=0.0)
        rep = rng.binomial(n, p)
        scores, _ = observed_scores(rep, n, k, metric)
        truth = np.where(valid, metric_of_rate(p, metric, ks)[..., 0], np.nan)
        truth = truths[i] = np.nanmean(truth, axis=1)
        pick = int(np.argmax(scores))
        optimism[i] = scores[pick] - truth[pick]
        best_picked[i] = truth[pick] >= truth.max()
    return {"optimism": optimism, "best_picked": best_picked, "tasks_mean": truths.mean(axis=0)}


def _sup_t_band(draws: np.ndarray, ci_prob: float):
    """Simultaneous band over the last axis: mean +- q sd, q the ci_prob quantile of the max
    over k of |standardised draw| (a sup-t band)."""
    mean = draws.mean(axis=0)
    sd = draws.std(axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(sd > 0, np.abs(draws - mean) / np.where(sd > 0, sd, 1.0), 0.0)
    q = float(np.quantile(z.max(axis=1), ci_prob))
    return np.stack([mean - q * sd, mean + q * sd], axis=-1), q


def crossing_points(effect: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Per draw (rows), the k at which the effect curve first changes sign, by linear
    interpolation between the grid's ks; NaN where it keeps one sign over the grid."""
    effect = np.asarray(effect, dtype=float)
    sign = np.sign(effect)
    change = (sign[:, 1:] * sign[:, :-1]) < 0
    out = np.full(len(effect), np.nan)
    rows = np.flatnonzero(change.any(axis=1))
    first = change[rows].argmax(axis=1)
    y0, y1 = effect[rows, first], effect[rows, first + 1]
    x0, x1 = ks[first].astype(float), ks[first + 1].astype(float)
    out[rows] = x0 + (x1 - x0) * y0 / (y0 - y1)
    return out


def compare_curve(
    results, candidate, baseline, k, metric="pass@k", estimand="tasks", ci_prob=0.95, top_tasks=10
) -> xr.Dataset:
    """See :meth:`bayeval.Results.compare_curve`."""
    ci_prob = validate_prob("ci_prob", ci_prob)
    ks, scalar = validate_k(k)
    if scalar or len(ks) < 2:
        raise ValueError(f"compare_curve needs a list of at least two ks; got {k!r}")
    if np.any(np.diff(ks) <= 0):
        raise ValueError(f"compare_curve needs increasing ks; got {ks.tolist()}")
    cmp = results.compare(
        candidate, baseline, metric=metric, k=ks.tolist(), estimand=estimand, ci_prob=ci_prob
    )
    effect = cmp["effect"]
    if "missing_bound" in effect.dims:
        raise ValueError("compare_curve takes data without missing bounds")
    draws = effect.transpose("chain", "draw", "k").values.reshape(-1, len(ks))
    band, q = _sup_t_band(draws, ci_prob)
    cross = crossing_points(draws, ks)
    alpha = 1 - ci_prob
    crossed = cross[np.isfinite(cross)]
    out = xr.Dataset(
        {
            "effect_mean": (("k",), draws.mean(axis=0)),
            "effect_interval": (
                ("k", "ci_bound"),
                np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=0).T,
            ),
            "effect_band": (("k", "ci_bound"), band),
            "prob_positive": (("k",), (draws > 0).mean(axis=0)),
            "prob_cross": float(np.isfinite(cross).mean()),
            "crossing_k": (("sample",), cross),
            "crossing_interval": (
                ("ci_bound",),
                np.quantile(crossed, [alpha / 2, 1 - alpha / 2])
                if crossed.size
                else np.full(2, np.nan),
            ),
        },
        coords={"k": ks, "ci_bound": ["lower", "upper"]},
    )
    contributions = task_contributions(results, candidate, baseline, ks, metric)
    out = out.merge(contributions)
    out.attrs = {
        **cmp.attrs,
        "k": ks.tolist(),
        "band": "sup-t (max over k of |z|)",
        "band_critical_value": q,
    }
    out.attrs.pop("margin", None)
    return out


def task_contributions(results, candidate, baseline, ks, metric) -> xr.Dataset:
    """Each task's share of the tasks-estimand effect at each k: the posterior mean of
    ``(f_k(p_candidate) - f_k(p_baseline)) / J`` over the tasks valid for both (from
    :data:`CONTRIBUTION_DRAWS` evenly thinned draws), beside the same share from the unbiased
    estimator of the observed counts (NaN where k > trials)."""
    c, n = _counts(results)
    systems = results.systems
    i, j = systems.index(candidate), systems.index(baseline)
    both = (n[i] > 0) & (n[j] > 0)
    J = int(both.sum())
    # posterior means: 400 evenly thinned draws suffice, and per-task readouts of a large
    # paired fit cost in proportion to the draws
    rates = (
        thinned(results, CONTRIBUTION_DRAWS)
        .task_rates([candidate, baseline])
        .transpose("chain", "draw", "system", "task")
        .values
    )
    rates = rates.reshape(-1, 2, rates.shape[-1])
    posterior, observed = [], []
    for k in ks:
        f = metric_of_rate(rates, metric, np.array([k]))[..., 0]
        posterior.append(np.where(both, (f[:, 0] - f[:, 1]).mean(axis=0), np.nan) / J)
        _, per = observed_scores(c[[i, j]], n[[i, j]], int(k), metric)
        observed.append(np.where(both, per[0] - per[1], np.nan) / J)
    tasks = results.tree["observed_data"]["task"].values
    return xr.Dataset(
        {
            "task_contribution": (("task", "k"), np.array(posterior).T),
            "task_contribution_observed": (("task", "k"), np.array(observed).T),
        },
        coords={"task": tasks},
    )


def reversal_tasks(curve: xr.Dataset, top: int = 10, by: str = "posterior") -> pd.DataFrame:
    """The tasks that move the effect most between the first and the last k of a curve:
    the change of each task's contribution, largest in size first.

    ``by="posterior"`` ranks by the posterior contributions (a task never solved still grows
    at large k under the model's shrinkage), ``by="observed"`` by the unbiased estimator of
    the counts (what the counts alone say; tasks with equal counts tie).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval._decisions import reversal_tasks
    >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
    >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
    >>> sorted(reversal_tasks(res.compare_curve("A", "B", k=[1, 8]), top=2)["task"])
    [0, 3]
    """
    if by not in ("posterior", "observed"):
        raise ValueError(f"by must be 'posterior' or 'observed'; got {by!r}")
    first, last = curve["task_contribution"].isel(k=0), curve["task_contribution"].isel(k=-1)
    change = (last - first).to_series().dropna()
    obs = (
        curve["task_contribution_observed"].isel(k=-1)
        - curve["task_contribution_observed"].isel(k=0)
    ).to_series()
    key = change if by == "posterior" else obs.reindex(change.index)
    order = key.abs().sort_values(ascending=False, kind="stable").index[:top]
    return pd.DataFrame(
        {
            "task": order,
            "change": change[order].to_numpy(),
            "change_observed": obs.reindex(order).to_numpy(),
        }
    )


def curve_bootstrap(
    data, candidate, baseline, k, metric="pass@k", unit="task", n_boot=2000, ci_prob=0.95, seed=0
) -> xr.Dataset:
    """Paired bootstrap of the effect curve over k: pointwise percentile intervals and a
    simultaneous sup-t band, resampling tasks (or whole clusters with ``unit="cluster"``).

    The twin of :meth:`bayeval.Results.compare_curve`, reached as
    ``bayeval.bootstrap.compare_curve``. The effect at each k is the mean over the tasks with
    at least ``max(k)`` trials for both systems of the difference of unbiased estimators.

    Parameters
    ----------
    data : EvalData
    candidate, baseline : system labels
    k : list of int
    metric : {"pass@k", "pass^k"}
    unit : {"task", "cluster"}
    n_boot : int, default 2000
    ci_prob : float, default 0.95
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        ``effect``, ``effect_interval`` (pointwise) and ``effect_band`` (simultaneous) over k.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
    >>> out = be.bootstrap.compare_curve(data, "A", "B", k=[1, 5], n_boot=500)
    >>> out["effect"].round(3).values.tolist()
    [-0.125, -0.372]
    """
    ci_prob = validate_prob("ci_prob", ci_prob)
    ks, scalar = validate_k(k)
    if scalar or len(ks) < 2:
        raise ValueError(f"the curve needs a list of at least two ks; got {k!r}")
    if unit not in ("task", "cluster"):
        raise ValueError(f"unit must be 'task' or 'cluster'; got {unit!r}")
    from bayeval.resampling import _refuse_scores

    _refuse_scores(data, metric)
    ds = data.dataset
    if "missing_bound" in ds["successes"].dims:
        raise ValueError("the curve bootstrap takes data without missing bounds")
    for role, label in (("candidate", candidate), ("baseline", baseline)):
        if label not in data.systems:
            raise ValueError(f"{role} {label!r} is not a system of the data")
    pair = ds.sel(system=[candidate, baseline])
    c = pair["successes"].transpose("system", "task").values
    n = pair["trials"].transpose("system", "task").values
    keep = (n >= ks.max()).all(axis=0)
    if not keep.any():
        raise ValueError(f"no task has at least k={int(ks.max())} trials for both systems")
    diff = np.stack(
        [np.subtract(*observed_scores(c[:, keep], n[:, keep], int(k), metric)[1]) for k in ks],
        axis=1,
    )  # (J, K)
    if unit == "cluster":
        if "cluster" not in ds.coords:
            raise ValueError("unit='cluster' needs task clusters")
        codes = pd.factorize(np.asarray(ds["cluster"].values[keep], dtype=object))[0]
    else:
        codes = np.arange(diff.shape[0])
    G = codes.max() + 1
    sums = np.zeros((G, len(ks)))
    np.add.at(sums, codes, diff)
    sizes = np.bincount(codes, minlength=G).astype(float)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot).astype(float)
    boot = (weights @ sums) / (weights @ sizes)[:, None]
    estimate = diff.mean(axis=0)
    band, q = _sup_t_band(boot, ci_prob)
    shift = estimate - boot.mean(axis=0)  # centre the band on the estimate
    alpha = 1 - ci_prob
    out = xr.Dataset(
        {
            "effect": (("k",), estimate),
            "effect_interval": (
                ("k", "ci_bound"),
                np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0).T,
            ),
            "effect_band": (("k", "ci_bound"), band + shift[:, None]),
        },
        coords={"k": ks, "ci_bound": ["lower", "upper"]},
    )
    out.attrs = {
        "candidate": candidate,
        "baseline": baseline,
        "metric": metric,
        "unit": unit,
        "n_boot": n_boot,
        "ci_prob": ci_prob,
        "seed": seed,
        "n_tasks": int(keep.sum()),
        "band": "sup-t (max over k of |z|)",
        "band_critical_value": q,
        "paired": "yes",
    }
    return out


def rank_summary(
    results,
    data,
    metric="pass@k",
    k=1,
    estimand="population",
    prob=0.95,
    top=3,
    unit="task",
    n_boot=10_000,
    ci_prob=0.95,
    seed=0,
    n_replicates=200,
) -> dict:
    """Everything ``bayeval rank`` prints, as plain data (JSON-ready).

    One record per system, best first by posterior mean: the posterior rank (mean and
    interval), P(best), P(in the top ``top``), the group of :meth:`bayeval.Results.rank_groups`
    at ``prob``, the bootstrap twin's simultaneous rank set
    (:func:`bayeval.bootstrap.rank_sets` by ``unit``), and the winner's curse
    (:meth:`bayeval.Results.winner`).

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval._decisions import rank_summary
    >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [8, 9, 8, 9]], trials=10,
    ...                       systems=["A", "B", "C"])
    >>> res = be.fit(data, model="hierarchical", draws=300, chains=2, seed=0)
    >>> out = rank_summary(res, data, n_boot=500, n_replicates=100)
    >>> [row["system"] for row in out["systems"]], out["winner"]["pick"]
    (['C', 'B', 'A'], 'C')
    """
    from bayeval import bootstrap

    ranks = results.ranks(metric=metric, k=k, estimand=estimand, top=top, ci_prob=ci_prob)
    groups = results.rank_groups(prob=prob, metric=metric, k=k, estimand=estimand)
    sets = bootstrap.rank_sets(
        data.sel(system=results.systems),
        metric=metric,
        k=k,
        unit=unit,
        ci_prob=ci_prob,
        n_boot=n_boot,
        seed=seed,
    )
    win = results.winner(
        metric=metric, k=k, estimand=estimand, ci_prob=ci_prob, n_replicates=n_replicates, seed=seed
    )
    group_of = groups.set_index("system")
    rows = []
    for system in group_of.index:
        interval = ranks["rank_interval"].sel(system=system).values
        rows.append(
            {
                "system": system,
                "mean": float(group_of.loc[system, "mean"]),
                "observed": float(win["observed_score"].sel(system=system)),
                "rank_mean": float(ranks["rank_mean"].sel(system=system)),
                "rank_lower": int(interval[0]),
                "rank_upper": int(interval[1]),
                "prob_best": float(ranks["prob_best"].sel(system=system)),
                "prob_top": float(ranks["prob_top"].sel(system=system)),
                "group": int(group_of.loc[system, "group"]),
                "bootstrap_rank_lower": int(sets["rank_lower"].sel(system=system)),
                "bootstrap_rank_upper": int(sets["rank_upper"].sel(system=system)),
            }
        )
    winner_record = {
        "pick": win.attrs["pick"],
        "tied_with": list(win.attrs["tied_with"]),
        "naive_score": float(win["naive_score"]),
        "value_mean": float(win["value_mean"]),
        "value_lower": float(win["value_interval"][0]),
        "value_upper": float(win["value_interval"][1]),
        "optimism": float(win["optimism"]),
        "prob_pick_is_best": float(win["prob_pick_is_best"]),
    }
    winner_record["expected_optimism"] = float(win["expected_optimism"])
    winner_record["replicate_prob_best_picked"] = float(win["replicate_prob_best_picked"])
    from bayeval.report import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "settings": {
            "metric": metric,
            "k": int(k),
            "estimand": estimand,
            "prob": prob,
            "top": top,
            "ci_prob": ci_prob,
            "unit": unit,
            "n_boot": n_boot,
            "seed": seed,
            "model": results.model,
            "paired": results._paired,
        },
        "group_rule": groups.attrs["rule"],
        "bootstrap": {
            "construction": sets.attrs.get("construction"),
            "critical_value": float(sets.attrs["critical_value"]),
            "unit": unit,
        },
        "systems": rows,
        "winner": winner_record,
    }
