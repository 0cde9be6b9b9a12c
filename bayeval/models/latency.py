r"""Models of attempt latency behind ``posterior_latency`` (``Results.latency``).

Each model is one object with the behaviour that differs between them, so the analysis
(:mod:`bayeval.analyses.latency`) asks the object rather than branching on its name:

* ``name`` and ``method`` (the result's ``attrs["model"]`` and ``attrs["method"]``);
* ``refuse(qs, unit, per_system, systems)``: raise ``ValueError`` where the model cannot be
  fitted (before any draw is made);
* ``readout(per_system, qs, resampled, rng)``: the quantile draws ``(draw, system, quantile)``
  and a dict of per-system check variables for the result;
* ``misfit(post, boot)``: per system, whether its posterior is suspect next to the bootstrap
  (``None`` where the model has no check).

``lognormal`` fits, for each system on its own, log durations with task effects,
``log y_tj = mu + u_t + e_tj``, ``u_t ~ N(0, tau^2)``, ``e_tj ~ N(0, sigma^2)``, flat prior
on ``mu`` and half-Cauchy(0, 1) on ``tau`` and ``sigma`` (log seconds), on a grid over
``(log sigma, log tau)`` that widens until its edges hold no mass, ``mu`` exactly given them.
``bayesian_bootstrap`` is not a parametric model: its draws are the Dirichlet-weighted
quantiles the analysis resamples anyway, returned as they are. ``models/cost.md`` (*Latency*)
has the mathematics and the coverage of both.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import ndtri
from scipy.stats import shapiro

from bayeval._validate import describe_values
from bayeval.models._misfit import apart

__all__ = ["MODELS", "BayesianBootstrapLatency", "LognormalLatency"]

_LN_GRID = 120  # grid points per axis of (log sigma, log tau)
_LN_PRIOR_SCALE = 1.0  # half-Cauchy scale of tau and sigma, in log seconds
_LN_CELLS = 2_000_000  # grid points x tasks evaluated at once


def _lognormal_log_posterior(log_s, log_t, n, ybar, within, df_within):
    """Log posterior of (log sigma, log tau) on a grid, mu integrated out under a flat prior.

    Shape ``(len(log_s) * len(log_t),)``, sigma varying slowest.
    """
    sigma = np.repeat(np.exp(log_s), len(log_t))
    tau = np.tile(np.exp(log_t), len(log_s))
    out = np.empty(sigma.size)
    step = max(1, _LN_CELLS // max(len(n), 1))
    for a in range(0, sigma.size, step):
        s2, t2 = sigma[a : a + step] ** 2, tau[a : a + step] ** 2
        prec = 1.0 / (t2[:, None] + s2[:, None] / n[None, :])  # 1 / var of a task's mean
        total = prec.sum(axis=1)
        centre = (prec * ybar).sum(axis=1) / total
        out[a : a + step] = (
            -0.5 * df_within * np.log(s2)
            - within / (2 * s2)
            + 0.5 * np.log(prec).sum(axis=1)
            - 0.5 * np.log(total)
            - 0.5 * (prec * (ybar[None, :] - centre[:, None]) ** 2).sum(axis=1)
        )
    for x in (sigma, tau):  # half-Cauchy priors, and the Jacobian of the log scale
        out += -np.log1p((x / _LN_PRIOR_SCALE) ** 2) + np.log(x)
    return out


def _lognormal_draws(values, tasks, qs, n_draws, rng) -> tuple[np.ndarray, tuple]:
    """Posterior draws ``(n_draws, Q)`` of ``exp(mu + z_q sqrt(tau^2 + sigma^2))``.

    Under ``log y_tj = mu + u_t + e_tj``, ``u_t ~ N(0, tau^2)``, ``e_tj ~ N(0, sigma^2)``: a grid
    over (log sigma, log tau) that widens until the edges hold no mass, mu exactly.
    """
    y = np.log(values)
    _, task = np.unique(tasks, return_inverse=True)
    n = np.bincount(task).astype(float)
    ybar = np.bincount(task, weights=y) / n
    within = float(np.sum((y - ybar[task]) ** 2))
    spread = float(np.std(y)) if y.size > 1 and np.std(y) > 0 else 1.0
    mu, tau, sigma = _lognormal_grid(n, ybar, within, spread, n_draws, rng)
    quantiles = np.exp(mu[:, None] + ndtri(qs)[None, :] * np.hypot(tau, sigma)[:, None])
    return quantiles, (mu, tau, sigma, task, n, ybar)


def _lognormal_grid(n, ybar, within, spread, n_draws, rng):
    """Posterior draws of ``(mu, tau, sigma)``, each ``(n_draws,)``, from sufficient statistics.

    The statistics of ``log y_tj = mu + u_t + e_tj``: per task the count ``n`` and mean ``ybar`` of
    the logs, the within-task sum of squares ``within`` summed over tasks, and the sd of all logs
    ``spread`` (which places the grid). Flat prior on mu, half-Cauchy(0, 1) on tau and sigma; a grid
    over (log sigma, log tau) widened until its edges hold no mass, mu drawn exactly given them.
    """
    df_within = float((n - 1).sum())
    if df_within >= 2 and within > 0:
        centre, half = 0.5 * np.log(within / df_within), max(5 / np.sqrt(2 * df_within), 0.3)
        bounds_s = [centre - half, centre + half]
    else:
        bounds_s = [np.log(spread) - 7, np.log(spread) + 3]
    bounds_t = [np.log(spread) - 8, np.log(spread) + 3]
    for _ in range(8):
        grid_s, grid_t = np.linspace(*bounds_s, _LN_GRID), np.linspace(*bounds_t, _LN_GRID)
        logp = _lognormal_log_posterior(grid_s, grid_t, n, ybar, within, df_within)
        prob = np.exp(logp - logp.max()).reshape(_LN_GRID, _LN_GRID)
        prob /= prob.sum()
        width_s, width_t = np.diff(bounds_s)[0], np.diff(bounds_t)[0]
        grown = False
        for mass, bounds, side, width in (
            (prob[0].sum(), bounds_s, 0, width_s),
            (prob[-1].sum(), bounds_s, 1, width_s),
            (prob[:, -1].sum(), bounds_t, 1, width_t),
        ):
            if mass > 1e-4:
                bounds[side] += width / 2 if side else -width / 2
                grown = True
        # tau -> 0 is a proper limit (no task spread): widen towards it only while it holds mass
        if prob[:, 0].sum() > 1e-3 and bounds_t[0] > np.log(spread) - 30:
            bounds_t[0] -= width_t / 2
            grown = True
        if not grown:
            break
    cell = rng.choice(prob.size, size=n_draws, p=prob.ravel())
    i, k = np.divmod(cell, _LN_GRID)
    sigma = np.exp(grid_s[i] + (rng.random(n_draws) - 0.5) * (grid_s[1] - grid_s[0]))
    tau = np.exp(grid_t[k] + (rng.random(n_draws) - 0.5) * (grid_t[1] - grid_t[0]))
    prec = 1.0 / (tau[:, None] ** 2 + sigma[:, None] ** 2 / n[None, :])
    total = prec.sum(axis=1)
    mu = (prec * ybar).sum(axis=1) / total + rng.standard_normal(n_draws) / np.sqrt(total)
    return mu, tau, sigma


def _lognormal_check(params) -> float:
    """Shapiro-Wilk p-value of the standardised task means of log duration.

    The model makes them normal: the p-value is small when the tasks fall into groups (a second
    mode) or their spread is skewed. NaN with fewer than 3 tasks.
    """
    mu, tau, sigma, task, n, ybar = params
    if len(n) < 3:
        return float("nan")
    z = (ybar - mu.mean()) / np.sqrt(np.mean(tau**2) + np.mean(sigma**2) / n)
    if np.ptp(z) == 0:
        return float("nan")
    return float(shapiro(z).pvalue)


def _lognormal_misfit(post: xr.Dataset, boot: xr.Dataset) -> np.ndarray:
    """Per system: whether the log-normal posterior is suspect, ``(system,)`` bool.

    It is when, at some quantile, its mean lies outside the bootstrap's interval or the bootstrap's
    estimate outside its interval, or when its task check is below 0.01: a time limit shows as the
    first, a second mode of tasks as both (``models/cost.md``, *Latency coverage*, has the share of
    systems each design flags).
    """
    with np.errstate(invalid="ignore"):
        return apart(post, boot, "latency").any(axis=1) | (post["lognormal_check"].values < 0.01)


class LognormalLatency:
    """The log-normal with task effects, one fit per system (see the module)."""

    name = "lognormal"
    method = (
        "posterior (log-normal with task effects per system; rates by the Bayesian "
        "bootstrap over tasks)"
    )

    def refuse(self, qs, unit, per_system, systems) -> None:
        """Refuse cluster resampling, quantile levels 0 and 1, and zero durations."""
        if unit != "task":
            raise ValueError(
                "the log-normal latency model has task effects, not cluster "
                "effects: use unit='task', or model='bayesian_bootstrap' for "
                "unit='cluster'"
            )
        if ((qs <= 0) | (qs >= 1)).any():
            raise ValueError(
                f"the log-normal latency model needs quantile levels strictly "
                f"between 0 and 1 (its 0 and 1 quantiles are 0 and infinity); "
                f"got q={qs.tolist()}"
            )
        zero = [
            str(system)
            for system, (v, _) in zip(systems, per_system, strict=True)
            if v.size and v[0] <= 0
        ]
        if zero:
            raise ValueError(
                f"the log-normal latency model needs positive durations; "
                f"system(s) {describe_values(zero)} have durations of 0 s: use "
                "model='bayesian_bootstrap', or record the durations finer"
            )

    def readout(self, per_system, qs, resampled, rng) -> tuple[np.ndarray, dict]:
        """Each system's quantile draws from its own fit, and ``lognormal_check``.

        ``lognormal_check`` is the Shapiro-Wilk p-value of its standardised task means; NaN without
        durations.
        """
        n_draws = resampled.shape[0]
        draws = np.full_like(resampled, np.nan)
        check = np.full(len(per_system), np.nan)
        for s, (values, tasks) in enumerate(per_system):
            if values.size:
                draws[:, s], params = _lognormal_draws(values, tasks, qs, n_draws, rng)
                check[s] = _lognormal_check(params)
        return draws, {"lognormal_check": check}

    def misfit(self, post: xr.Dataset, boot: xr.Dataset) -> np.ndarray:
        """See :func:`_lognormal_misfit`."""
        return _lognormal_misfit(post, boot)


class BayesianBootstrapLatency:
    """Dirichlet(1, ..., 1) weights over tasks (Rubin 1981): no shape assumed, no check."""

    name = "bayesian_bootstrap"
    method = "posterior (Bayesian bootstrap over tasks; not a parametric model)"

    def refuse(self, qs, unit, per_system, systems) -> None:
        """Nothing to refuse: any level, unit and duration has a weighted quantile."""

    def readout(self, per_system, qs, resampled, rng) -> tuple[np.ndarray, dict]:
        """The weighted quantiles the analysis resampled, as they are."""
        return resampled, {}

    def misfit(self, post: xr.Dataset, boot: xr.Dataset) -> None:
        """No model, no misfit."""
        return None


#: Name -> latency model, in the order the choices are listed.
MODELS: dict[str, LognormalLatency | BayesianBootstrapLatency] = {
    "lognormal": LognormalLatency(),
    "bayesian_bootstrap": BayesianBootstrapLatency(),
}
