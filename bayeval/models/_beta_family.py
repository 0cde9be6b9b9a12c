"""Shared machinery of the Beta-rate models (``beta_binomial`` and ``hierarchical``).

Both models say that, given its population parameters, a task's rate has a Beta distribution
and, given the data, its conditional posterior is ``Beta(alpha + c, beta + n - c)``. Everything
the two estimands need follows:

* population quantities are Beta moments of the population, in closed form per draw:
  ``E[(1 - p)^k] = B(a, b + k) / B(a, b)`` and ``E[p^k] = B(a + k, b) / B(a, b)``; a metric
  written in the Bernstein basis, ``f(p) = sum_j b_j C(d, j) p^j (1 - p)^(d - j)`` (G-pass@k,
  consistency), has ``E f(p) = sum_j b_j BetaBinomial(j; d, a, b)``, and ``f^2`` is again such
  a polynomial, of degree 2d;
* the tasks estimand is the mean over the fixed tasks of f(p_j), with every task's rate drawn
  from its conditional posterior at each draw. Tasks with the same ``(n, c)`` share that
  conditional; for a group of ``m <= EXACT_LIMIT`` tasks the rates are drawn one by one, for a
  larger group the group's sum is drawn from a normal with its exact conditional mean and
  variance (the sum of many independent bounded terms: central limit theorem), which keeps the
  task-level uncertainty in full while costing O(draws) instead of O(draws x tasks);
* the posterior predictive histogram of per-task success counts is a multinomial over the
  Beta-binomial probabilities, one draw per group of tasks with the same n.

Populations are indexed by ``(system, stratum)``: with declared strata each system has one
population per stratum and the benchmark value weights them by the declared stratum weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special

from bayeval.data.groups import cell_data, dataset_of
from bayeval.estimators import (
    bernstein_coefficients,
    clip_probability,
    square_coefficients,
    success_threshold,
)
from bayeval.models.base import Model, Rates, each_task

EXACT_LIMIT = 100  # tasks per (n, c) group drawn one by one; larger groups use their moments


@dataclass(frozen=True)
class Populations:
    """Where each task belongs: its stratum, and each stratum's declared weight."""

    strata: list | None  # stratum labels (None: one population per system)
    code: np.ndarray  # stratum code of each task
    weight: np.ndarray  # declared weight of each stratum

    @property
    def n(self) -> int:
        return len(self.weight)

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> Populations:
        n_task = ds.sizes["task"]
        if "stratum" not in ds.coords:
            return cls(None, np.zeros(n_task, dtype=np.int64), np.ones(1))
        weights = dict(json.loads(ds.attrs["stratum_weights"]))
        labels = list(weights)
        position = {s: i for i, s in enumerate(labels)}
        code = np.array([position[s] for s in ds["stratum"].values.tolist()], dtype=np.int64)
        return cls(labels, code, np.array([weights[s] for s in labels]))


def _rates_group(tree):
    """Where stored task-rate draws live.

    Their own group, or the posterior of the conjugate model (whose parameters they are).
    """
    if "task_rates" in tree.children:
        return tree["task_rates"].to_dataset()
    return tree["posterior"].to_dataset()


def counts_by_bound(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray, list | None]:
    """``(successes, trials)`` as ``(bound, system, task)`` arrays and the bound labels."""
    successes = ds["successes"]
    bounds = (
        successes["missing_bound"].values.tolist() if "missing_bound" in successes.dims else None
    )
    c = successes.transpose(*(("missing_bound",) if bounds else ()), "system", "task").values
    if bounds is None:
        c = c[None]
    n = np.broadcast_to(ds["trials"].transpose("system", "task").values, c.shape)
    return c, n, bounds


def patterns(c: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``(n, c)`` pairs among valid tasks and their multiplicities."""
    valid = n > 0
    pairs, mult = np.unique(np.stack([n[valid], c[valid]], 1), axis=0, return_counts=True)
    return pairs[:, 0], pairs[:, 1], mult


def beta_bernstein(a, b, coefficients) -> np.ndarray:
    """``E f(p)`` for ``p ~ Beta(a, b)``, f given by its Bernstein coefficients (degree d).

    That is ``sum_j b_j BetaBinomial(j; d, a, b)``, elementwise over ``a`` and ``b``.
    """
    coefficients = np.asarray(coefficients, dtype=float)
    d = len(coefficients) - 1
    j = np.arange(d + 1)
    a = np.asarray(a, dtype=float)[..., None]
    b = np.asarray(b, dtype=float)[..., None]
    log_pmf = (
        special.gammaln(d + 1)
        - special.gammaln(j + 1)
        - special.gammaln(d - j + 1)
        + special.betaln(a + j, b + d - j)
        - special.betaln(a, b)
    )
    return np.exp(log_pmf) @ coefficients


def beta_moments(a, b, metric: str, ks: np.ndarray, tau=None):
    """First and second moments of f(p) for ``p ~ Beta(a, b)``; k appended as the last axis."""
    if metric not in ("pass@k", "pass^k"):
        coefs = [bernstein_coefficients(metric, int(k), tau) for k in ks]
        m1 = np.stack([beta_bernstein(a, b, co) for co in coefs], axis=-1)
        m2 = np.stack([beta_bernstein(a, b, square_coefficients(co)) for co in coefs], axis=-1)
        return clip_probability(m1), clip_probability(m2)
    a = np.asarray(a, dtype=float)[..., None]
    b = np.asarray(b, dtype=float)[..., None]
    log_norm = special.betaln(a, b)
    # betaln differences lose digits for large a, b: E[(1-p)^k] and E[p^k] can come out a few
    # 1e-9 above 1, so the moments are clipped to [0, 1]
    if metric == "pass@k":
        q1 = clip_probability(np.exp(special.betaln(a, b + ks) - log_norm))
        q2 = clip_probability(np.exp(special.betaln(a, b + 2 * ks) - log_norm))
        return 1 - q1, clip_probability(1 - 2 * q1 + q2)
    m1 = clip_probability(np.exp(special.betaln(a + ks, b) - log_norm))
    m2 = clip_probability(np.exp(special.betaln(a + 2 * ks, b) - log_norm))
    return m1, m2


def metric_of_rate(p: np.ndarray, metric: str, ks: np.ndarray, tau=None) -> np.ndarray:
    """The metric of a task with rate p; k appended as the last axis.

    G-pass@k is the binomial tail ``P(Bin(k, p) >= m) = I_p(m, k - m + 1)`` (the regularised
    incomplete Beta function) at ``m = ceil(tau k)``; consistency is ``(2p - 1)^2``.
    """
    p = p[..., None]
    if metric == "pass@k":
        return 1 - (1 - p) ** ks
    if metric == "pass^k":
        return p**ks
    if metric == "consistency":
        return (2 * p - 1) ** 2 * np.ones(len(ks))
    m = success_threshold(ks, tau)
    return special.betainc(m, ks - m + 1, p)


def task_weights(n: np.ndarray, pops: Populations) -> np.ndarray:
    """Weight of each task in each system's benchmark value (system, task)."""
    valid = n > 0
    weights = np.zeros(n.shape)
    for h, w in enumerate(pops.weight):
        members = (pops.code == h)[None, :] & valid
        count = members.sum(axis=1, keepdims=True)
        if (count == 0).any():
            if pops.strata is None:
                raise ValueError("a system has no valid task; its benchmark value is undefined")
            raise ValueError(
                f"a system has no valid task in stratum {pops.strata[h]!r}; the stratified "
                "benchmark value is undefined for it (drop the stratum or change the policy)"
            )
        weights = np.where(members, w / count, weights)
    return weights


def tasks_draws(
    alpha, beta, c, n, pops: Populations, metric, ks, seed, system_index, tau=None
) -> np.ndarray:
    """Draws of the tasks estimand for one system (and one bound).

    ``alpha``/``beta`` hold the population parameters per draw and population, shape
    ``(draw, population)``; ``c``/``n`` the system's counts per task. Returns ``(draw, k)``.
    """
    weights = task_weights(n[None], pops)[0]
    rng = np.random.default_rng([seed, 1, *np.atleast_1d(system_index)])
    out = np.zeros((alpha.shape[0], len(ks)))
    for h in range(pops.n):
        members = pops.code == h
        keys = np.stack([n[members], c[members], weights[members]], 1)[n[members] > 0]
        groups, mult = np.unique(keys, axis=0, return_counts=True)
        for (nn, cc, w), m in zip(groups, mult, strict=True):
            a = alpha[:, h] + cc
            b = beta[:, h] + nn - cc
            if m <= EXACT_LIMIT:
                p = rng.beta(a[:, None], b[:, None], size=(len(a), m))
                out += w * metric_of_rate(p, metric, ks, tau).sum(axis=1)
            else:
                m1, m2 = beta_moments(a, b, metric, ks, tau)
                z = rng.standard_normal(len(a))[:, None]
                sd = np.sqrt(np.maximum(m * (m2 - m1**2), 0.0))
                out += w * (m * m1 + sd * z)
    return np.clip(out, 0.0, 1.0)


def population_value(alpha, beta, pops: Populations, metric, ks, tau=None) -> np.ndarray:
    """Population estimand per draw from population parameters ``(..., population)``."""
    m1, _ = beta_moments(alpha, beta, metric, ks, tau)
    return clip_probability(np.tensordot(np.moveaxis(m1, -2, -1), pops.weight, axes=([-1], [0])))


def task_rate_draws(alpha, beta, c, n, pops: Populations, seed, system_index) -> np.ndarray:
    """Exact conditional draws of every task's rate for one system: ``(draw, task)``."""
    rng = np.random.default_rng([seed, 2, *np.atleast_1d(system_index)])
    a = alpha[:, pops.code] + c[None, :]
    b = beta[:, pops.code] + (n - c)[None, :]
    p = rng.beta(a, b)
    return np.where(n[None, :] > 0, p, np.nan)


def predictive_counts(alpha, beta, n, pops: Populations, seed, system_index, max_n):
    """Posterior predictive histogram of per-task success counts for new tasks.

    Each valid task is replaced by a new task from its population with the same number of
    trials. Returns ``(hist, extreme_share)``: ``hist`` ``(draw, count)`` and the share of tasks
    with two or more trials whose count is 0 or n (the U-shape statistic), per draw.
    """
    rng = np.random.default_rng([seed, 3, *np.atleast_1d(system_index)])
    n_draw = alpha.shape[0]
    hist = np.zeros((n_draw, max_n + 1))
    extreme = np.zeros(n_draw)
    n_multi = 0
    for h in range(pops.n):
        trials = n[(pops.code == h) & (n > 0)]
        sizes, mult = np.unique(trials, return_counts=True)
        for nn, m in zip(sizes, mult, strict=True):
            outcomes = np.arange(nn + 1)
            logp = (
                special.gammaln(nn + 1)
                - special.gammaln(outcomes + 1)
                - special.gammaln(nn - outcomes + 1)
                + special.betaln(
                    outcomes[None] + alpha[:, h, None], nn - outcomes[None] + beta[:, h, None]
                )
                - special.betaln(alpha[:, h, None], beta[:, h, None])
            )
            prob = np.exp(logp)
            prob /= prob.sum(axis=1, keepdims=True)
            counts = rng.multinomial(m, prob)
            hist[:, : nn + 1] += counts
            if nn >= 2:
                extreme += counts[:, 0] + counts[:, nn]
                n_multi += m
    share = extreme / n_multi if n_multi else np.full(n_draw, np.nan)
    return hist, share


def observed_histogram(c, n, max_n):
    """Histogram of observed per-task success counts and the observed extreme share."""
    valid = n > 0
    hist = np.bincount(c[valid], minlength=max_n + 1).astype(float)
    multi = valid & (n >= 2)
    share = ((c == 0) | (c == n))[multi].mean() if multi.any() else np.nan
    return hist, share


def stratum_dims(pops: Populations) -> tuple[tuple, dict]:
    """Extra posterior dims/coords for per-stratum populations."""
    if pops.strata is None:
        return (), {}
    return ("stratum",), {"stratum": np.asarray(pops.strata, dtype=object)}


# -- estimands from a fitted tree --------------------------------------------------------------
class BetaRates(Model):
    """Estimands of a fitted Beta-rate model, read from its DataTree.

    Subclasses say how to get the Beta parameters of each population per draw
    (:meth:`params`), as arrays of shape ``(chain, draw, bound, system, population)``.
    """

    def params(self, tree) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    @staticmethod
    def _setup(tree):
        ds = dataset_of(tree)
        c, n, bounds = counts_by_bound(ds)
        return ds, c, n, bounds, Populations.from_dataset(ds)

    def replicate_rates(self, tree) -> Rates:
        """A new task's rate for each cell: a draw from its population's Beta, per draw.

        The task rates are what the log-likelihood (beta-binomial) integrates out.
        """
        pops = self._setup(tree)[4]
        alpha, beta = self.params(tree)  # (chain, draw, bound, system, population)
        D = alpha.shape[0] * alpha.shape[1]
        a_pop = alpha[:, :, 0].reshape(D, alpha.shape[3], -1)
        b_pop = beta[:, :, 0].reshape(D, beta.shape[3], -1)

        def rates(rngs, tasks):
            code = pops.code[tasks]
            return each_task(
                rngs, lambda rng, a, b: rng.beta(a, b), a_pop[:, :, code], b_pop[:, :, code]
            )

        return rates

    @staticmethod
    def _wrap(values, tree, bounds, ks, name, systems=None):
        """(chain, draw, bound, system, k) -> DataArray over (chain, draw, system[, bound], k).

        ``systems`` labels the system axis (default: every system of the fit).
        """
        post = tree["posterior"]
        systems = cell_data(tree)["system"].values if systems is None else systems
        da = xr.DataArray(
            values,
            dims=("chain", "draw", "missing_bound", "system", "k"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": systems,
                "k": ks,
            },
            name=name,
        ).transpose("chain", "draw", "system", "missing_bound", "k")
        if bounds is None:
            return da.isel(missing_bound=0, drop=True)
        return da.assign_coords(missing_bound=bounds)

    def population(self, tree, metric, ks, tau=None) -> xr.DataArray:
        _, _, _, bounds, pops = self._setup(tree)
        alpha, beta = self.params(tree)
        values = population_value(alpha, beta, pops, metric, ks, tau)
        return self._wrap(values, tree, bounds, ks, metric)

    def tasks(self, tree, metric, ks, shared=None, tau=None) -> xr.DataArray:
        _, c, n, bounds, pops = self._setup(tree)
        if shared is not None:  # the mean over these tasks only (a paired comparison's)
            n = n * np.asarray(shared, dtype=n.dtype)
        post = _rates_group(tree)
        if "p" in post.data_vars:
            p = post["p"]
            if bounds is None:
                p = p.expand_dims("missing_bound", axis=2)
            p = p.transpose("chain", "draw", "missing_bound", "system", "task").values
            weights = np.stack([task_weights(n[b], pops) for b in range(len(n))])
            f = metric_of_rate(np.nan_to_num(p), metric, ks, tau)
            values = clip_probability(np.einsum("cdbstk,bst->cdbsk", f, weights))
            return self._wrap(values, tree, bounds, ks, metric)
        alpha, beta = self.params(tree)
        n_chain, n_draw = alpha.shape[:2]
        seed = int(tree.attrs["seed"])
        values = np.zeros((n_chain, n_draw, c.shape[0], c.shape[1], len(ks)))
        for b in range(c.shape[0]):
            for s in range(c.shape[1]):
                draws = tasks_draws(
                    alpha[:, :, b, s].reshape(n_chain * n_draw, -1),
                    beta[:, :, b, s].reshape(n_chain * n_draw, -1),
                    c[b, s],
                    n[b, s],
                    pops,
                    metric,
                    ks,
                    seed,
                    [b, s],
                    tau,
                )
                values[:, :, b, s] = draws.reshape(n_chain, n_draw, len(ks))
        return self._wrap(values, tree, bounds, ks, metric)

    def task_rates(self, tree, systems=None) -> xr.DataArray:
        """Exact conditional draws of task rates: (chain, draw, system, task[, bound])."""
        ds, c, n, bounds, pops = self._setup(tree)
        all_systems = ds["system"].values.tolist()
        chosen = all_systems if systems is None else list(systems)
        if "p" in _rates_group(tree).data_vars:
            return _rates_group(tree)["p"].sel(system=chosen)
        alpha, beta = self.params(tree)
        n_chain, n_draw = alpha.shape[:2]
        seed = int(tree.attrs["seed"])
        out = np.empty((n_chain, n_draw, c.shape[0], len(chosen), c.shape[2]))
        for b in range(c.shape[0]):
            for i, label in enumerate(chosen):
                s = all_systems.index(label)
                p = task_rate_draws(
                    alpha[:, :, b, s].reshape(n_chain * n_draw, -1),
                    beta[:, :, b, s].reshape(n_chain * n_draw, -1),
                    c[b, s],
                    n[b, s],
                    pops,
                    seed,
                    [b, s],
                )
                out[:, :, b, i] = p.reshape(n_chain, n_draw, -1)
        post = tree["posterior"]
        da = xr.DataArray(
            out,
            dims=("chain", "draw", "missing_bound", "system", "task"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "system": np.asarray(chosen, dtype=object),
                "task": ds["task"].values,
            },
            name="p",
        ).transpose("chain", "draw", "system", "task", "missing_bound")
        return (
            da.isel(missing_bound=0, drop=True)
            if bounds is None
            else da.assign_coords(missing_bound=bounds)
        )

    def predictive(self, tree) -> xr.Dataset:
        """Posterior predictive success-count histogram for new tasks, and its U-shape check."""
        ds, c, n, bounds, pops = self._setup(tree)
        alpha, beta = self.params(tree)
        n_chain, n_draw = alpha.shape[:2]
        max_n = int(n.max())
        seed = int(tree.attrs["seed"])
        hist = np.zeros((n_chain, n_draw, c.shape[0], c.shape[1], max_n + 1))
        share = np.zeros((n_chain, n_draw, c.shape[0], c.shape[1]))
        for b in range(c.shape[0]):
            for s in range(c.shape[1]):
                h, sh = predictive_counts(
                    alpha[:, :, b, s].reshape(n_chain * n_draw, -1),
                    beta[:, :, b, s].reshape(n_chain * n_draw, -1),
                    n[b, s],
                    pops,
                    seed,
                    [b, s],
                    max_n,
                )
                hist[:, :, b, s] = h.reshape(n_chain, n_draw, -1)
                share[:, :, b, s] = sh.reshape(n_chain, n_draw)
        post = tree["posterior"]
        coords = {
            "chain": post["chain"].values,
            "draw": post["draw"].values,
            "system": ds["system"].values,
            "count": np.arange(max_n + 1),
        }
        out = xr.Dataset(
            {
                "count_histogram": (("chain", "draw", "missing_bound", "system", "count"), hist),
                "extreme_share": (("chain", "draw", "missing_bound", "system"), share),
            },
            coords=coords,
        ).transpose("chain", "draw", "system", "missing_bound", ...)
        return (
            out.isel(missing_bound=0, drop=True)
            if bounds is None
            else out.assign_coords(missing_bound=bounds)
        )
