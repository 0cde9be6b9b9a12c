r"""Readouts of an item response theory fit (``model="irt"``) and subset evaluation.

* :func:`abilities` — each system's ability ``theta``;
* :func:`items` — each item's difficulty ``b``, discrimination ``a`` and Fisher information;
* :func:`select` — the items to run next: the most informative, a random or a stratified set;
* :func:`score` — systems run on a subset of the calibrated items: their ability and their
  predicted pass@1 over all calibrated items and over the item population;
* :func:`compare` — a subset-scored system against another, paired on the calibration draws;
* :func:`anchors` — a calibration's items as the anchors of a linked fit (a new benchmark
  version on the calibration's scale: ``bayeval.irt.link``).

The Fisher information of an item for one attempt at ability ``theta`` is ``a^2 p (1 - p)``
with ``p = expit(a (theta - b))``: the inverse of the variance an unbiased estimate of theta
attains from that attempt, so the items that maximise it narrow theta's posterior fastest.

:func:`score` carries the calibration's uncertainty: for each calibration draw of the item
parameters, the new system's theta has a one-dimensional posterior (its prior ``Normal(0, 1)``
times the binomial likelihood of its subset), computed exactly on a fine grid (the grid's
error is far below the Monte Carlo error; nothing is sampled by MCMC, so there is no
convergence to check and no refit of the calibration), and one theta is drawn from it. The
draws over ``(chain, draw)`` are then draws of the joint posterior of the item parameters
(from the calibration) and the new system's theta given them; the calibration is not updated by
the new system's outcomes (a cut: the items are calibrated once, and a new checkpoint's few
outcomes would move them little). Under the model a cell's rate is ``expit(a (theta - b))``:
the outcomes of the items the new system ran enter its pass@1 over these items through
theta's posterior, which conditions on them.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special

from bayeval._validate import (
    describe_values,
    validate_choice,
    validate_positive_int,
    validate_prob,
    validate_seed,
)
from bayeval.analyses._draws import SAMPLE_DIMS
from bayeval.analyses.compare import _effect_summary
from bayeval.data import EvalData
from bayeval.models.irt import item_draws, population_expectation
from bayeval.posterior import credible_interval

__all__ = ["METHODS", "abilities", "anchors", "compare", "items", "score", "select"]

#: Ways :func:`select` chooses items.
METHODS = ("fisher", "random", "stratified")
#: The grid :func:`score` computes theta's posterior on: the prior Normal(0, 1) has mass 3e-12
#: beyond 7, and a step of 0.01 moves a draw by less than half a step, far below theta's
#: posterior sd on any subset of a benchmark.
THETA_GRID = np.linspace(-7.0, 7.0, 1401)
#: Gauss-Hermite nodes over the abilities' population Normal(0, 1) in :func:`select`.
THETA_NODES = 40


def ability_population(posterior) -> tuple[np.ndarray, np.ndarray]:
    """The abilities' population per draw, ``(mu, sigma)`` flattened over ``(chain, draw)``.

    ``Normal(0, 1)`` for a calibration (it fixes the scale), the fitted ``Normal(mu_theta,
    sigma_theta)`` for a linked one, whose scale its anchors fix.
    """
    post = posterior._group("posterior")
    D = post.sizes["chain"] * post.sizes["draw"]
    if "mu_theta" not in post:
        return np.zeros(D), np.ones(D)
    mu = post["mu_theta"].transpose("chain", "draw").values.reshape(D)
    sigma = post["sigma_theta"].transpose("chain", "draw").values.reshape(D)
    return mu, sigma


def require_irt(posterior, caller: str) -> None:
    """A ValueError unless ``posterior`` is a fit of ``model="irt"``."""
    model = getattr(posterior, "model", None)
    if model != "irt":
        raise ValueError(
            f"{caller} reads an item response theory fit (be.fit(data, model='irt')); "
            f"this fit is {model!r}"
        )


def _labelled(values: np.ndarray, posterior, dims: tuple, coords: dict) -> xr.DataArray:
    post = posterior._group("posterior")
    C, D = post.sizes["chain"], post.sizes["draw"]
    return xr.DataArray(
        values.reshape((C, D) + values.shape[1:]),
        dims=(*SAMPLE_DIMS, *dims),
        coords={"chain": post["chain"].values, "draw": post["draw"].values, **coords},
    )


def _summarised(ds: xr.Dataset, names, ci_prob: float) -> xr.Dataset:
    for name in names:
        ds[f"{name}_mean"] = ds[name].mean(SAMPLE_DIMS)
        ds[f"{name}_interval"] = credible_interval(ds[name], ci_prob, list(SAMPLE_DIMS))
    return ds


def information(a, b, theta) -> np.ndarray:
    """Fisher information ``a^2 p (1 - p)`` of one attempt, broadcast over the arguments.

    Examples
    --------
    >>> from bayeval.analyses.irt import information
    >>> float(information(2.0, 0.0, 0.0))  # at theta = b: a^2 / 4
    1.0
    """
    p = special.expit(np.asarray(a) * (np.asarray(theta) - np.asarray(b)))
    return np.asarray(a) ** 2 * p * (1 - p)


def abilities(posterior, *, ci_prob: float = 0.95) -> xr.Dataset:
    """Each system's ability ``theta``: draws, mean and equal-tailed interval.

    Parameters
    ----------
    posterior : Posterior
        A fit of ``model="irt"``.
    ci_prob : float, default 0.95

    Returns
    -------
    xarray.Dataset
        ``theta`` over ``(chain, draw, system)``; ``theta_mean`` and ``theta_interval``
        (``ci_bound``) per system. The scale: the systems' abilities ``Normal(0, 1)``, or a
        linked fit's anchors (``bayeval.irt.link``).

    Examples
    --------
    >>> from bayeval.analyses.irt import abilities
    >>> from bayeval.testing import fake_results
    >>> abilities(fake_results(model="irt"))["theta_mean"].dims
    ('system',)
    """
    require_irt(posterior, "abilities()")
    ci_prob = validate_prob("ci_prob", ci_prob)
    prm = item_draws(posterior._tree)
    ds = xr.Dataset(
        {"theta": _labelled(prm["theta"], posterior, ("system",), {"system": posterior.systems})}
    )
    ds = _summarised(ds, ["theta"], ci_prob)
    linked = "mu_theta" in posterior._group("posterior")
    scale = (
        "the anchors' calibration (abilities ~ Normal(mu_theta, sigma_theta) on its scale)"
        if linked
        else "abilities ~ Normal(0, 1)"
    )
    ds.attrs = {"ci_prob": ci_prob, "model": "irt", "scale_note": scale}
    return ds


def items(posterior, *, theta=None, ci_prob: float = 0.95) -> xr.Dataset:
    """Each item's difficulty, discrimination and Fisher information.

    Parameters
    ----------
    posterior : Posterior
        A fit of ``model="irt"``.
    theta : array_like, optional
        A grid of abilities: the information is given on it (dim ``theta``) as well as at
        each system's ability.
    ci_prob : float, default 0.95

    Returns
    -------
    xarray.Dataset
        ``b`` and ``a`` over ``(chain, draw, task)`` with ``b_mean``, ``b_interval``,
        ``a_mean``, ``a_interval``; ``information`` ``(task, system)``, the posterior mean of
        one attempt's Fisher information ``a^2 p (1 - p)`` at the system's ability; with
        ``theta``, ``information_grid`` ``(task, theta)``.

    Examples
    --------
    >>> from bayeval.analyses.irt import items
    >>> from bayeval.testing import fake_results
    >>> items(fake_results(model="irt"), theta=[-1, 0, 1])["information_grid"].dims
    ('task', 'theta')
    """
    require_irt(posterior, "items()")
    ci_prob = validate_prob("ci_prob", ci_prob)
    prm = item_draws(posterior._tree)
    tasks = posterior._group("posterior")["task"].values
    coords = {"task": tasks}
    ds = xr.Dataset(
        {
            "b": _labelled(prm["b"], posterior, ("task",), coords),
            "a": _labelled(prm["a"], posterior, ("task",), coords),
        }
    )
    ds = _summarised(ds, ["b", "a"], ci_prob)
    info = np.stack(  # a system at a time: memory stays at draws x items
        [
            information(prm["a"], prm["b"], prm["theta"][:, [s]]).mean(axis=0)
            for s in range(prm["theta"].shape[1])
        ],
        axis=1,
    )
    ds["information"] = xr.DataArray(
        info, dims=("task", "system"), coords={"task": tasks, "system": posterior.systems}
    )
    if theta is not None:
        grid = np.atleast_1d(np.asarray(theta, dtype=float))
        if grid.ndim != 1 or not np.isfinite(grid).all():
            raise ValueError(f"theta must be a 1-D array of finite abilities; got {theta!r}")
        on_grid = np.stack([information(prm["a"], prm["b"], t).mean(axis=0) for t in grid], axis=1)
        ds["information_grid"] = xr.DataArray(
            on_grid, dims=("task", "theta"), coords={"task": tasks, "theta": grid}
        )
    ds.attrs = {"ci_prob": ci_prob, "model": "irt", "information_note": "per attempt"}
    return ds


def select(posterior, n: int, *, method: str = "fisher", system=None, seed: int = 0) -> xr.Dataset:
    """The ``n`` calibrated items to run next.

    Parameters
    ----------
    posterior : Posterior
        A fit of ``model="irt"`` (the calibration).
    n : int
        How many items.
    method : {"fisher", "random", "stratified"}, default "fisher"
        ``"fisher"``: the items of highest posterior-expected Fisher information, at the
        population of abilities (``theta ~ Normal(0, 1)``, by quadrature) or, with ``system``,
        at that system's ability draws; ``"random"``: a simple random sample;
        ``"stratified"``: the items sorted by posterior mean difficulty, cut into ``n``
        contiguous strata of (nearly) equal size, one drawn at random from each.
    system : optional
        A system of the calibration: the items are chosen for it, among the items it has not
        run (adaptive testing, one step).
    seed : int, default 0
        For ``"random"`` and ``"stratified"``.

    Returns
    -------
    xarray.Dataset
        Over ``item`` (the chosen items' labels, highest information first for
        ``"fisher"``): ``information`` (the expected information per attempt), ``b_mean``
        and ``a_mean``; the settings in attrs.

    Examples
    --------
    >>> from bayeval.analyses.irt import select
    >>> from bayeval.testing import fake_results
    >>> chosen = select(fake_results(model="irt"), 3)
    >>> chosen["item"].size, chosen.attrs["method"]
    (3, 'fisher')
    """
    require_irt(posterior, "select()")
    n = validate_positive_int("n", n)
    validate_choice("method", method, METHODS)
    seed = validate_seed(seed)
    prm = item_draws(posterior._tree)
    tasks = np.asarray(posterior._group("posterior")["task"].values)
    candidates = np.arange(len(tasks))
    if system is None:
        nodes, weights = np.polynomial.hermite_e.hermegauss(THETA_NODES)
        weights = weights / weights.sum()
        mu, sigma = ability_population(posterior)  # a linked fit's own population
        at = mu[:, None, None] + sigma[:, None, None] * nodes  # (draw, 1, node)
        info = information(prm["a"][:, :, None], prm["b"][:, :, None], at) @ weights
    else:
        if system not in posterior.systems:
            raise ValueError(
                f"system {system!r} is not a system of the calibration; systems: "
                f"{describe_values(posterior.systems)}"
            )
        s = posterior.systems.index(system)
        info = information(prm["a"], prm["b"], prm["theta"][:, s, None])
        trials = posterior._group("constant_data")["trials"].transpose("system", "task").values
        candidates = np.flatnonzero(trials[s] == 0)
    info = info.mean(axis=0)
    if n > len(candidates):
        where = "calibrated items" if system is None else f"items {system!r} has not run"
        raise ValueError(f"n={n} is more than the {len(candidates)} {where}")
    rng = np.random.default_rng([seed, 7])
    if method == "fisher":
        chosen = candidates[np.argsort(-info[candidates], kind="stable")[:n]]
    elif method == "random":
        chosen = np.sort(rng.choice(candidates, size=n, replace=False))
    else:
        order = candidates[np.argsort(prm["b"].mean(axis=0)[candidates], kind="stable")]
        chosen = np.array([rng.choice(stratum) for stratum in np.array_split(order, n)])
    out = xr.Dataset(
        {
            "information": ("item", info[chosen]),
            "b_mean": ("item", prm["b"].mean(axis=0)[chosen]),
            "a_mean": ("item", prm["a"].mean(axis=0)[chosen]),
        },
        coords={"item": tasks[chosen]},
    )
    out.attrs = {
        "method": method,
        "n": n,
        "seed": seed,
        "system": "" if system is None else str(system),
    }
    return out


def _subset_counts(new_data, tasks: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The new data's successes and trials (system, item run) and each item's calibration index."""
    if not isinstance(new_data, EvalData):
        raise TypeError(
            f"new_data must be an EvalData (be.from_frame / be.from_counts); got "
            f"{type(new_data).__name__}"
        )
    ds = new_data.dataset
    if new_data.has_partial_credit:
        raise ValueError("score() reads 0/1 outcomes; new_data hold partial-credit scores")
    if "missing_bound" in ds["successes"].dims:
        raise ValueError("score() takes no missing='bounds'; choose 'exclude' or 'fail'")
    labels = ds["task"].values.tolist()
    position = {t: i for i, t in enumerate(tasks)}
    unknown = [t for t in labels if t not in position]
    if unknown:
        raise ValueError(
            f"new_data hold {len(unknown)} task(s) that are not calibrated items: "
            f"{describe_values(unknown)}; score only on the calibration's items"
        )
    c = ds["successes"].transpose("system", "task").values.astype(float)
    n = ds["trials"].transpose("system", "task").values.astype(float)
    empty = [s for s, row in zip(new_data.systems, n, strict=True) if not (row > 0).any()]
    if empty:
        raise ValueError(f"system(s) {describe_values(empty)} ran no item with a valid outcome")
    return c, n, np.array([position[t] for t in labels], dtype=np.int64)


def theta_posterior_draws(a, b, c, n, rng, grid=THETA_GRID, mu=None, sigma=None) -> np.ndarray:
    """One draw of each system's theta per draw of the item parameters.

    ``a``, ``b`` (draw, item) of the items run; ``c``, ``n`` (system, item). theta's posterior
    given a draw's items is its prior, Normal(0, 1) or ``Normal(mu, sigma)`` of that draw
    (``mu``, ``sigma``: (draw,), a linked calibration's population), times the binomial
    likelihood, on ``grid`` (a density constant on each grid cell); the draw is by its
    inverse CDF. Returns (draw, system).
    """
    D, S = a.shape[0], c.shape[0]
    h = grid[1] - grid[0]
    out = np.empty((D, S))
    step = max(1, 4_000_000 // max(len(grid) * a.shape[1], 1))
    for start in range(0, D, step):
        part = slice(start, min(start + step, D))
        eta = a[part, None, :] * (grid[None, :, None] - b[part, None, :])  # (d, G, J)
        # c log p + (n - c) log(1 - p) = n log p - (n - c) eta: one softplus, not two
        log_p = -np.logaddexp(0.0, -eta)
        ll = np.einsum("dgj,sj->dsg", log_p, n) - np.einsum("dgj,sj->dsg", eta, n - c)
        if mu is None:
            ll += -0.5 * grid**2
        else:
            ll += (-0.5 * ((grid[None, :] - mu[part, None]) / sigma[part, None]) ** 2)[:, None, :]
        ll -= ll.max(axis=-1, keepdims=True)
        w = np.exp(ll)
        cdf = np.cumsum(w, axis=-1)
        cdf /= cdf[..., -1:]
        u = rng.random(cdf.shape[:2])
        cell = (cdf < u[..., None]).sum(axis=-1)  # the first cell whose CDF reaches u
        out[part] = grid[np.minimum(cell, len(grid) - 1)] + h * (rng.random(u.shape) - 0.5)
    return out


def score(new_data, *, items, ci_prob: float = 0.95, seed: int = 0) -> xr.Dataset:
    """Systems run on a subset of the calibrated items: theta and the full-benchmark pass@1.

    Parameters
    ----------
    new_data : EvalData
        0/1 outcomes (any trials) of the new systems; every task must be a calibrated item.
    items : Posterior
        The calibration, a fit of ``model="irt"`` on many systems and all items.
    ci_prob : float, default 0.95
    seed : int, default 0

    Returns
    -------
    xarray.Dataset
        Draws over ``(chain, draw, system)`` (the calibration's draws) of ``theta``,
        ``full_pass_at_1`` (the pass@1 over all calibrated items, "tasks") and
        ``full_pass_at_1_population`` (a new item from the fitted item distribution), each
        with ``_mean`` and ``_interval``; ``n_items`` per system (items run). Their intervals
        carry the calibration's posterior uncertainty and the subset's sampling.

    Examples
    --------
    >>> from bayeval.analyses.irt import score
    >>> from bayeval.testing import fake_data, fake_results
    >>> res = fake_results(model="irt")
    >>> new = fake_data(systems=["NEW"]).sel(task=res.data.dataset["task"].values[:6])
    >>> score(new, items=res)["full_pass_at_1"].dims
    ('chain', 'draw', 'system')
    """
    require_irt(items, "score(items=)")
    ci_prob = validate_prob("ci_prob", ci_prob)
    seed = validate_seed(seed)
    tasks = items._group("posterior")["task"].values.tolist()
    c, n, index = _subset_counts(new_data, tasks)
    prm = item_draws(items._tree)
    rng = np.random.default_rng([seed, 11])
    mu, sigma = ability_population(items)  # a linked calibration's population, not N(0, 1)
    theta = theta_posterior_draws(
        prm["a"][:, index], prm["b"][:, index], c, n, rng, mu=mu, sigma=sigma
    )
    full = full_pass_at_1(prm, theta)
    population = population_expectation(theta, prm, "pass@k", np.array([1]))[..., 0]
    systems = {"system": np.asarray(new_data.systems, dtype=object)}
    ds = xr.Dataset(
        {
            "theta": _labelled(theta, items, ("system",), systems),
            "full_pass_at_1": _labelled(full, items, ("system",), systems),
            "full_pass_at_1_population": _labelled(population, items, ("system",), systems),
        }
    )
    ds = _summarised(ds, ["theta", "full_pass_at_1", "full_pass_at_1_population"], ci_prob)
    ds["n_items"] = ("system", (n > 0).sum(axis=1))
    ds.attrs = {
        "ci_prob": ci_prob,
        "seed": seed,
        "model": "irt",
        "n_calibrated_items": len(tasks),
        "calibration_hash": str(items._tree.attrs.get("input_hash", "")),
    }
    return ds


def full_pass_at_1(prm: dict, theta: np.ndarray) -> np.ndarray:
    """The mean over all calibrated items of ``expit(a (theta - b))``: (draw, system)."""
    out = np.empty(theta.shape)
    step = max(1, 2_000_000 // max(theta.shape[1] * prm["a"].shape[1], 1))
    for start in range(0, theta.shape[0], step):
        part = slice(start, start + step)
        eta = prm["a"][part, None, :] * (theta[part, :, None] - prm["b"][part, None, :])
        out[part] = special.expit(eta).mean(axis=-1)
    return out


def compare(
    scored: xr.Dataset,
    calibration,
    candidate,
    baseline,
    *,
    estimand: str = "tasks",
    ci_prob: float = 0.95,
    margin: float = 0.0,
) -> xr.Dataset:
    """The effect on full-benchmark pass@1 of a subset-scored system against another.

    Paired on the calibration's draws: both systems' pass@1 at each draw use that draw's item
    parameters, so the items' uncertainty, shared by both, cancels from the effect.

    Parameters
    ----------
    scored : xarray.Dataset
        :func:`score`'s output, which holds ``candidate``.
    calibration : Posterior
        The fit ``scored`` was scored on (``items=``).
    candidate
        A system of ``scored``.
    baseline
        A system of ``scored`` or of the calibration (a fully scored system: its pass@1 over
        all calibrated items at its ability draws).
    estimand : {"tasks", "population"}, default "tasks"
        Over all calibrated items, or a new item from the fitted item distribution.
    ci_prob : float, default 0.95
    margin : float, default 0.0

    Returns
    -------
    xarray.Dataset
        ``effect`` (draws), ``effect_mean``, ``effect_interval``, ``prob_positive``,
        ``prob_above_margin``, ``prob_noninferior``, ``effect_mcse``, ``effect_ess``.

    Examples
    --------
    >>> from bayeval.analyses.irt import compare, score
    >>> from bayeval.testing import fake_data, fake_results
    >>> res = fake_results(model="irt")
    >>> new = fake_data(systems=["NEW"]).sel(task=res.data.dataset["task"].values[:6])
    >>> out = compare(score(new, items=res), res, "NEW", "A")
    >>> out["effect_interval"].dims, out.attrs["paired"]
    (('ci_bound',), True)
    """
    require_irt(calibration, "compare(calibration=)")
    validate_choice("estimand", estimand, ("tasks", "population"))
    ci_prob = validate_prob("ci_prob", ci_prob)
    if scored.attrs.get("calibration_hash") != str(calibration._tree.attrs.get("input_hash", "")):
        raise ValueError(
            "scored was not scored on this calibration (score(..., items=calibration))"
        )
    name = "full_pass_at_1" if estimand == "tasks" else "full_pass_at_1_population"
    new = scored["system"].values.tolist()
    if candidate not in new:
        raise ValueError(
            f"candidate {candidate!r} is not a system of scored: {describe_values(new)}"
        )
    if baseline == candidate:
        raise ValueError("candidate and baseline must be different systems")
    if baseline in new:
        base = scored[name].sel(system=baseline, drop=True)
    elif baseline in calibration.systems:
        prm = item_draws(calibration._tree)
        theta = prm["theta"][:, [calibration.systems.index(baseline)]]
        values = (
            full_pass_at_1(prm, theta)
            if estimand == "tasks"
            else population_expectation(theta, prm, "pass@k", np.array([1]))[..., 0]
        )
        base = _labelled(values[:, 0], calibration, (), {})
    else:
        raise ValueError(f"baseline {baseline!r} is a system of neither scored nor the calibration")
    effect = scored[name].sel(system=candidate, drop=True) - base
    out = _effect_summary(effect.rename("effect"), ci_prob, margin)
    out.attrs = {
        "candidate": str(candidate),
        "baseline": str(baseline),
        "estimand": estimand,
        "ci_prob": ci_prob,
        "margin": margin,
        "paired": True,
        "paired_note": "paired on the calibration's draws of the item parameters",
    }
    return out


def anchors(calibration, tasks=None) -> dict:
    """A calibration's items as anchors: each one's posterior mean and sd of ``b`` and ``log a``.

    Parameters
    ----------
    calibration : Posterior
        A fit of ``model="irt"``.
    tasks : list, optional
        The new version's items: the anchors are those of its items the calibration holds
        (a ValueError when none); all calibrated items without it.

    Returns
    -------
    dict
        ``task`` (labels), ``b`` and ``log_a`` (a (mean, sd) pair per task): the
        ``priors={"anchors": ...}`` of ``be.fit(new_data, model="irt")``.

    Examples
    --------
    >>> from bayeval.analyses.irt import anchors
    >>> from bayeval.testing import fake_results
    >>> res = fake_results(model="irt")
    >>> found = anchors(res, tasks=res.data.dataset["task"].values[:2].tolist() + ["new"])
    >>> len(found["task"]), len(found["b"][0])
    (2, 2)
    """
    require_irt(calibration, "anchors()")
    prm = item_draws(calibration._tree)
    labels = calibration._group("posterior")["task"].values.tolist()
    if tasks is None:
        chosen = list(range(len(labels)))
    else:
        position = {t: j for j, t in enumerate(labels)}
        chosen = [position[t] for t in tasks if t in position]
        if not chosen:
            raise ValueError(
                f"no task of the new data is a calibrated item: new tasks "
                f"{describe_values(list(tasks))}, calibrated items {describe_values(labels)}; "
                "a link needs anchor items shared with the calibration, labelled alike"
            )
    # a draw-constant parameter (a 1PL's discrimination read off fixed draws) keeps a tiny sd
    floor = 1e-6

    def pairs(values):
        return np.stack([values.mean(axis=0), np.maximum(values.std(axis=0), floor)], axis=1)

    return {
        "task": [labels[j] for j in chosen],
        "b": pairs(prm["b"][:, chosen]).tolist(),
        "log_a": pairs(np.log(prm["a"][:, chosen])).tolist(),
    }
