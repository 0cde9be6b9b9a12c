"""``Results``: a fitted model's :class:`~bayeval.posterior.Posterior` with its analyses.

Every method here is a thin delegation to a function of :mod:`bayeval.analyses` (or a readout of
:meth:`Posterior.draws`); nothing mutates the tree.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._arviz import mcse_and_ess
from bayeval._validate import validate_k, validate_prob
from bayeval.analyses.compare import compare, compare_all
from bayeval.analyses.curves import compare_curve
from bayeval.analyses.ranks import rank_groups, ranks, winner
from bayeval.analyses.subsets import compare_subsets
from bayeval.posterior import Posterior, credible_interval, read_tree

__all__ = ["Results", "load"]

# names other modules read from here
_interval = credible_interval


class Results(Posterior):
    """Posterior of a fitted model with its estimands, comparisons and checks.

    Build with :func:`bayeval.fit` or :func:`bayeval.load`.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3], [10, 2, 10, 1, 8, 3]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=400, chains=2, seed=0, model="hierarchical")
    >>> sorted(res.tree.children)  # doctest: +NORMALIZE_WHITESPACE
    ['constant_data', 'log_likelihood', 'observed_data', 'posterior', 'posterior_predictive',
     'task_rates']
    >>> res.summary().columns.tolist()[:4]
    ['system', 'estimand', 'metric', 'k']
    """

    def pass_at_k(
        self, *, k=1, estimand: str = "population", clusters=None, weighting: str = "task"
    ) -> xr.DataArray:
        """Posterior draws of the benchmark pass@k.

        Parameters
        ----------
        k : int or list of int, default 1
            A list adds a ``k`` dim.
        estimand : {"population", "tasks"}, default "population"
            A new task like these, or the mean over these tasks.
        clusters : {"new", "observed"}, optional
            ``logit_normal`` only: a new task from a new cluster (default with clusters) or
            from the observed clusters.
        weighting : {"task", "cluster"}, default "task"
            With ``clusters="observed"``: average clusters by their task counts or equally.

        Returns
        -------
        xarray.DataArray
            Over ``(chain, draw, system[, missing_bound][, k])``.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[9, 1, 10, 0, 7, 3]], trials=10), draws=200,
        ...              chains=2, seed=0)
        >>> res.pass_at_k(k=[1, 5], estimand="tasks").dims
        ('chain', 'draw', 'system', 'k')
        """
        return self.draws("pass@k", k, estimand, clusters, weighting)

    def pass_hat_k(
        self, *, k=1, estimand: str = "population", clusters=None, weighting: str = "task"
    ) -> xr.DataArray:
        """Posterior draws of the benchmark pass^k (all k trials succeed).

        Parameters and return value are those of :meth:`pass_at_k`.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[4, 2, 0, 3]], trials=4), draws=200, chains=2, seed=0)
        >>> float(res.pass_hat_k(k=2, estimand="tasks").mean()) < float(res.pass_hat_k(
        ...     k=1, estimand="tasks").mean())
        True
        """
        return self.draws("pass^k", k, estimand, clusters, weighting)

    def g_pass_at_k(
        self, *, k, tau, estimand: str = "population", clusters=None, weighting: str = "task"
    ) -> xr.DataArray:
        """Posterior draws of the benchmark G-pass@k: at least ``ceil(tau k)`` of k trials succeed.

        Per task, ``P(Binomial(k, p) >= ceil(tau k))`` (Liu et al., 2024); tau = 1 is pass^k
        and any tau <= 1/k is pass@k. Under a Beta population the population estimand is the
        beta-binomial tail in closed form per draw; under ``logit_normal`` an expectation over
        the normal task effects by quadrature.

        Parameters
        ----------
        k : int or list of int
            A list adds a ``k`` dim.
        tau : float
            The share of the k attempts that must succeed, in (0, 1].
        estimand, clusters, weighting
            As in :meth:`pass_at_k`.

        Returns
        -------
        xarray.DataArray
            Over ``(chain, draw, system[, missing_bound][, k])``; ``tau`` in attrs.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[4, 2, 0, 3]], trials=4), draws=200, chains=2, seed=0)
        >>> g = res.g_pass_at_k(k=4, tau=0.5, estimand="tasks")
        >>> bool((g >= res.pass_hat_k(k=4, estimand="tasks")).all())
        True
        """
        return self.draws("g-pass@k", k, estimand, clusters, weighting, tau=tau)

    def consistency(
        self, *, estimand: str = "population", clusters=None, weighting: str = "task"
    ) -> xr.DataArray:
        """Posterior draws of the benchmark outcome consistency, the mean of ``(2p - 1)^2``.

        1 for a task that always or never succeeds, 0 at p = 1/2: the chance that two attempts
        agree minus the chance that they differ, so a two-attempt metric (read at k = 2).

        Parameters
        ----------
        estimand, clusters, weighting
            As in :meth:`pass_at_k`.

        Returns
        -------
        xarray.DataArray
            Over ``(chain, draw, system[, missing_bound])``.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[4, 2, 0, 3]], trials=4), draws=200, chains=2, seed=0)
        >>> res.consistency(estimand="tasks").dims
        ('chain', 'draw', 'system')
        """
        return self.draws("consistency", 2, estimand, clusters, weighting)

    def mean_score(
        self, *, estimand: str = "population", clusters=None, weighting: str = "task"
    ) -> xr.DataArray:
        """Posterior draws of the benchmark mean score (``model="zoib"``, scores in [0, 1]).

        Parameters and return value are those of :meth:`pass_at_k`, without ``k``; compare
        systems with ``compare(..., metric="mean")``. The twin is
        :func:`bayeval.bootstrap.mean_score`.

        Examples
        --------
        >>> import numpy as np, pandas as pd, bayeval as be
        >>> rng = np.random.default_rng(0)
        >>> y = np.where(rng.random(48) < 0.4, rng.integers(0, 2, 48), rng.beta(2, 2, 48))
        >>> df = pd.DataFrame({"task": np.repeat([f"t{j}" for j in range(12)], 4),
        ...                    "score": y.round(2)})
        >>> data = be.from_frame(df, system=None, system_name="A", score="score")
        >>> res = be.fit(data, draws=1000, chains=2, seed=0)
        >>> res.mean_score(estimand="tasks").dims
        ('chain', 'draw', 'system')
        >>> round(float(res.mean_score(estimand="population").mean()), 2)
        0.51
        """
        return self.draws("mean", 1, estimand, clusters, weighting)

    # -- comparisons and decisions (bayeval.analyses) ------------------------------------------
    def compare(
        self,
        candidate,
        baseline,
        *,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        ci_prob: float = 0.95,
        margin: float = 0.0,
        tau=None,
        clusters=None,
        weighting: str = "task",
        runs=None,
        allow_harness_change: bool = False,
    ) -> xr.Dataset:
        """Posterior of the effect ``metric(candidate) - metric(baseline)``: see
        :func:`bayeval.analyses.compare.compare`.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[3, 5, 1, 8], [6, 9, 2, 9]], trials=10, systems=["A", "B"])
        >>> res = be.fit(data, draws=300, chains=2, seed=0, model="hierarchical")
        >>> res.compare("B", "A", k=1, estimand="tasks", margin=0.02)["effect_interval"].dims
        ('ci_bound',)
        """
        return compare(
            self,
            candidate,
            baseline,
            metric=metric,
            k=k,
            estimand=estimand,
            ci_prob=ci_prob,
            margin=margin,
            tau=tau,
            clusters=clusters,
            weighting=weighting,
            runs=runs,
            allow_harness_change=allow_harness_change,
        )

    def compare_all(
        self,
        *,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        ci_prob: float = 0.95,
        margin: float = 0.0,
        tau=None,
        clusters=None,
        weighting: str = "task",
        allow_harness_change: bool = False,
    ) -> xr.Dataset:
        """Every pairwise effect: see :func:`bayeval.analyses.compare.compare_all`."""
        return compare_all(
            self,
            metric=metric,
            k=k,
            estimand=estimand,
            ci_prob=ci_prob,
            margin=margin,
            tau=tau,
            clusters=clusters,
            weighting=weighting,
            allow_harness_change=allow_harness_change,
        )

    def ranks(
        self,
        *,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        ci_prob: float = 0.95,
        top: int = 3,
        tau=None,
        clusters=None,
        weighting: str = "task",
    ) -> xr.Dataset:
        """Posterior of each system's rank: see :func:`bayeval.analyses.ranks.ranks`."""
        return ranks(
            self,
            metric=metric,
            k=k,
            estimand=estimand,
            ci_prob=ci_prob,
            top=top,
            tau=tau,
            clusters=clusters,
            weighting=weighting,
        )

    def rank_groups(
        self,
        *,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        prob: float = 0.95,
        tau=None,
        clusters=None,
        weighting: str = "task",
    ) -> pd.DataFrame:
        """Systems that cannot be told apart: see :func:`bayeval.analyses.ranks.rank_groups`."""
        return rank_groups(
            self,
            metric=metric,
            k=k,
            estimand=estimand,
            prob=prob,
            tau=tau,
            clusters=clusters,
            weighting=weighting,
        )

    def winner(
        self,
        *,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        ci_prob: float = 0.95,
        n_replicates: int = 200,
        seed=None,
        clusters=None,
        weighting: str = "task",
    ) -> xr.Dataset:
        """The observed pick and its worth: see :func:`bayeval.analyses.ranks.winner`."""
        return winner(
            self,
            metric=metric,
            k=k,
            estimand=estimand,
            ci_prob=ci_prob,
            n_replicates=n_replicates,
            seed=seed,
            clusters=clusters,
            weighting=weighting,
        )

    def compare_curve(
        self,
        candidate,
        baseline,
        *,
        metric: str = "pass@k",
        k,
        estimand: str = "population",
        ci_prob: float = 0.95,
    ) -> xr.Dataset:
        """The effect as a curve over k: see :func:`bayeval.analyses.curves.compare_curve`."""
        return compare_curve(
            self, candidate, baseline, metric=metric, k=k, estimand=estimand, ci_prob=ci_prob
        )

    def compare_subsets(
        self,
        mask,
        *,
        metric: str = "pass@k",
        k: int = 1,
        estimand: str = "population",
        ci_prob: float = 0.95,
        refit: bool = True,
        **fit_options,
    ) -> xr.Dataset:
        """Clean versus flagged tasks: see :func:`bayeval.analyses.subsets.compare_subsets`."""
        return compare_subsets(
            self,
            mask,
            metric=metric,
            k=k,
            estimand=estimand,
            ci_prob=ci_prob,
            refit=refit,
            **fit_options,
        )

    def noise(
        self, ci_prob: float = 0.95, alpha: float = 0.05, power: float = 0.8, n_draws: int = 400
    ) -> xr.Dataset:
        """Where the variance of each benchmark score comes from, and what more data buys.

        The score's variance over new benchmarks of the same design splits into trial
        (evaluation) noise, task sampling and cluster sampling (:mod:`bayeval.noise`); for
        each pair, the covariance the two scores share through their tasks and the minimum
        detectable difference (two-sided level ``alpha``, ``power``), as run and under plans
        with more tasks or more trials. Computed per posterior draw from that draw's task
        rates (``n_draws`` of them, taken evenly). Its twin is
        :func:`bayeval.bootstrap.noise` (the method of moments).

        Returns
        -------
        xarray.Dataset
            As :func:`bayeval.bootstrap.noise`: posterior means, with intervals on ``ci_bound``.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[3, 1, 4, 0, 2, 4], [4, 2, 4, 1, 2, 3]], trials=4,
        ...                       systems=["A", "B"])
        >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
        >>> out = res.noise(n_draws=100)
        >>> out["mdd"].sel(candidate="B", baseline="A").dims
        ('plan',)
        """
        from bayeval.noise import posterior_noise

        return posterior_noise(self, ci_prob=ci_prob, alpha=alpha, power=power, n_draws=n_draws)

    def latency(
        self,
        q=(0.5, 0.95),
        model: str = "lognormal",
        unit: str = "task",
        n_draws: int = 4000,
        ci_prob: float = 0.95,
        seed: int = 0,
        statuses=None,
    ) -> xr.Dataset:
        """Posterior of each system's attempt-latency quantiles (p50, p95, ...) with the
        timeout and error rates, from this fit's data (built with ``from_frame(...,
        latency=...)``).

        Latency is not part of the pass/fail model: the posterior is its own model of the
        durations, per system (:func:`bayeval._cost.posterior_latency`): by default a
        log-normal with task effects (``model="lognormal"``, checked against the data per
        system), or the Bayesian bootstrap over tasks (``"bayesian_bootstrap"``: no shape
        assumed). The twin is :func:`bayeval.bootstrap.latency`.

        Parameters
        ----------
        q : sequence of float, default (0.5, 0.95)
            Quantile levels, strictly between 0 and 1 for the log-normal.
        model : {"lognormal", "bayesian_bootstrap"}, default "lognormal"
        unit : {"task", "cluster"}, default "task"
            Resampling unit of the Bayesian bootstrap (the log-normal takes tasks).
        n_draws, ci_prob, seed, statuses
            As in :func:`bayeval._cost.posterior_latency`.

        Returns
        -------
        xarray.Dataset
            Quantile draws and summaries per system, and the timeout and error rates.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2", "t2", "t3", "t3"],
        ...                    "success": [1, 0, 1, 1, 0, 1],
        ...                    "seconds": [12.0, 30.0, 8.0, 9.5, 60.0, 41.0]})
        >>> data = be.from_frame(df, latency="seconds")
        >>> res = be.fit(data, model="beta_binomial", draws=100, chains=1, seed=0)
        >>> out = res.latency(q=[0.5], model="bayesian_bootstrap", n_draws=200)
        >>> out["latency_interval"].dims
        ('system', 'quantile', 'ci_bound')
        >>> int(out["n_latency"].sel(system="A"))
        6
        """
        from bayeval._cost import posterior_latency

        return posterior_latency(
            self,
            q=q,
            unit=unit,
            n_draws=n_draws,
            ci_prob=ci_prob,
            seed=seed,
            statuses=statuses,
            model=model,
        )

    def cost(
        self,
        column: str,
        ci_prob: float = 0.95,
        n_draws: int = 1000,
        seed: int = 0,
        k=None,
        model: str = "bayesian_bootstrap",
    ) -> xr.Dataset:
        """Posterior cost per attempt, cost per success and timeout/error/invalid rates.

        The cost side is the Bayesian bootstrap over tasks (Rubin 1981): tasks are
        exchangeable draws from a population whose distribution of per-task values (total
        cost, attempts, statuses) is given Dirichlet(1, ..., 1) weights on the observed tasks,
        the posterior of a Dirichlet-process model as its concentration goes to zero. It
        assumes nothing about the shape of the cost (skew and zeros are fine) but gives no
        mass to tasks unlike the observed ones. The success side is the fitted model: in each
        posterior draw, task j's expected successes are its trials (those the missing-outcome
        policy uses) times its posterior rate, and

            cost_per_success = sum_j w_j cost_j / sum_j w_j trials_j p_j,

        with the same weights w for cost and successes and for every system (paired), so the
        population pass@1 and the cost are coupled through the tasks. ``cost_per_attempt`` is
        ``sum_j w_j cost_j / sum_j w_j attempts_j``, the rates likewise. Every attempt's cost
        counts under its status; ``not_run`` attempts cost nothing and are not attempts. The
        twin is :func:`bayeval.bootstrap.cost`.

        ``model="lognormal"`` models the cost side instead: an attempt of system s costs 0
        with probability pi_s (a hurdle, Beta(1, 1) prior, so the posterior is
        Beta(1 + zeros, 1 + positives)), and otherwise, on task t of cluster c,

            log cost = mu_s + lambda_s (g_c + u_t) + w_st + e,

        with ``g_c ~ N(0, sigma_cluster^2)`` and ``u_t ~ N(0, 1)`` shared by the systems that
        ran the task (the costs are paired, as the successes are), a loading ``lambda_s`` per
        system, a task-by-system effect ``w_st ~ N(0, omega_s^2)`` and attempt noise
        ``e ~ N(0, sigma_s^2)``; flat prior on mu, half-Cauchy(0, 1) on the loadings and
        spreads (log units). It is fitted from the stored per-cell counts, sums of logs and
        squared logs of the positive costs, the effects and mu integrated out in closed form
        (NUTS on the loadings and spreads; ``attrs["cost_divergences"]`` counts divergent
        transitions), and each observed task's expected attempt cost ``(1 - pi_s)
        exp(mu_s + lambda_s (g_c + u_t) + w_st + sigma_s^2 / 2)`` is drawn from its
        posterior. These task costs take the place of the observed ones under the same
        Dirichlet task weights, so cost and success stay coupled task by task (the budget
        curve included: a hard task that also costs more counts as both). Each system
        needs at least 2 positive costs on at least 2 tasks. The first fit for a number of
        systems compiles its sampler (seconds), later ones in the process reuse it.
        ``models/cost.md`` has the coverage of both models.

        Parameters
        ----------
        column : str
            A covariate given to ``from_frame(..., covariates=[...])``.
        ci_prob : float, default 0.95
            Coverage of the equal-tailed intervals (on ``ci_bound``).
        n_draws : int, default 1000
            Posterior draws used (about that many, taken evenly from each chain; per-task
            readouts cost in proportion), one weight vector each.
        seed : int, default 0
        k : int or list of int, optional
            The budget curve (``pass_at_k``, ``cost_of_k``, ``expected_spend``,
            ``cost_per_success_at_k`` on a ``k`` dim); see :func:`bayeval._cost.posterior_cost`.
        model : {"bayesian_bootstrap", "lognormal"}, default "bayesian_bootstrap"
            The cost side: the Bayesian bootstrap over tasks (no shape assumed) or the
            crossed hurdle log-normal (task and cluster effects shared by the systems).

        Returns
        -------
        xarray.Dataset
            For each statistic: the posterior mean (``system``), ``<stat>_interval``
            (``system, ci_bound``) and ``<stat>_draws`` (``draw, system``); the same
            variables under either model, which ``attrs["cost_model"]`` names.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> df = pd.DataFrame({"system": "A", "task": [f"t{i // 2}" for i in range(40)],
        ...                    "success": [1, 0, 1, 1, 0, 1, 1, 0] * 5, "cost": [1.0, 2.0] * 20})
        >>> data = be.from_frame(df, covariates=["cost"])
        >>> res = be.fit(data, model="beta_binomial", draws=200, chains=2, seed=0)
        >>> res.cost("cost", n_draws=200)["cost_per_success_interval"].dims
        ('system', 'ci_bound')
        >>> out = res.cost("cost", n_draws=200, model="lognormal")
        >>> out.attrs["cost_model"], 1.0 < float(out["cost_per_attempt"].item()) < 2.5
        ('lognormal', True)
        """
        from bayeval._cost import posterior_cost

        return posterior_cost(
            self, column, ci_prob=ci_prob, n_draws=n_draws, seed=seed, k=k, model=model
        )

    # -- summaries and checks ------------------------------------------------------------------
    def summary(self, ci_prob: float = 0.95, k=1, metrics=("pass@k",), estimands=None, tau=None):
        """Posterior mean, sd and equal-tailed interval of each system's metrics.

        Parameters
        ----------
        ci_prob : float, default 0.95
        k : int or list of int, default 1
        metrics : sequence of {"pass@k", "pass^k", "g-pass@k", "consistency", "mean"}
            Consistency, a two-attempt metric, has one row per system and estimand, at k = 2.
            ``"mean"`` (the mean score) is what a ``zoib`` fit estimates, at k = 1.
        estimands : sequence, optional
            Default: every estimand the model supports.
        tau : float, optional
            Needed with ``"g-pass@k"`` among the metrics: the share of the k attempts that must
            succeed, in (0, 1]; recorded in ``attrs``.

        Returns
        -------
        pandas.DataFrame
            One row per system, estimand, metric and k (and missing bound): mean, sd, interval,
            the Monte Carlo standard error of the mean and the bulk ESS (``arviz_stats``);
            ``attrs`` hold the settings.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[9, 1, 10, 0]], trials=10), draws=200, chains=2,
        ...              seed=0)
        >>> res.summary(k=[1, 3])["estimand"].unique().tolist()
        ['tasks', 'population']
        """
        ci_prob = validate_prob("ci_prob", ci_prob)
        ks, _ = validate_k(k)
        if isinstance(metrics, str):
            raise TypeError(
                f"metrics must be a sequence of metric names; got {metrics!r} (write "
                f"metrics=[{metrics!r}])"
            )
        if tau is not None and "g-pass@k" not in metrics:
            raise ValueError(
                f"tau applies to metric 'g-pass@k', which metrics={list(metrics)} does not hold"
            )
        estimands = self.estimands if estimands is None else tuple(estimands)
        frames = []
        for estimand in estimands:
            for metric in metrics:
                values = self.draws(
                    metric,
                    [2] if metric == "consistency" else ks.tolist(),
                    estimand,
                    tau=tau if metric == "g-pass@k" else None,
                )
                interval = credible_interval(values, ci_prob, ["chain", "draw"])
                mcse, ess = mcse_and_ess(values)
                table = (
                    xr.Dataset(
                        {
                            "mean": values.mean(["chain", "draw"]),
                            "sd": values.std(["chain", "draw"]),
                            "lower": interval.sel(ci_bound="lower", drop=True),
                            "upper": interval.sel(ci_bound="upper", drop=True),
                            "mcse_mean": mcse,
                            "ess_bulk": ess,
                        }
                    )
                    .to_dataframe()
                    .reset_index()
                )
                table.insert(1, "estimand", estimand)
                table.insert(2, "metric", metric)
                frames.append(table)
        out = pd.concat(frames, ignore_index=True)
        first = ["system", "estimand", "metric", "k"]
        out = out[first + [c for c in out.columns if c not in first]]
        out.attrs = {
            "ci_prob": ci_prob,
            "ci_kind": "eti",
            "model": self.model,
            **({} if tau is None else {"tau": float(tau)}),
        }
        return out

    def ppc(self, ci_prob: float = 0.95) -> xr.Dataset:
        """Posterior predictive check of the per-task success-count histogram.

        New tasks drawn from each fitted population (with the observed trial counts) give a
        predictive histogram of success counts; the U-shape statistic is the share of tasks
        (with two or more trials) that are always or never solved. ``p_value`` is the
        two-sided posterior predictive p-value of the observed share; ``flagged`` marks
        ``p_value < 0.01``.

        Examples
        --------
        Eight tasks, seven solved on all or none of their trials: a U-shaped task set, which
        the fitted population reproduces (the fit warns that so few such tasks leave the
        population interval optimistic):

        >>> import warnings
        >>> import bayeval as be
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always", be.BayevalWarning)
        ...     res = be.fit(be.from_counts([[10, 0, 10, 0, 10, 0, 10, 1]], trials=10),
        ...                  draws=300, chains=2, seed=0)
        >>> any("at most 10 tasks" in str(w.message) for w in caught)
        True
        >>> bool(res.ppc()["flagged"].item())
        False
        """
        if "posterior_predictive" not in self._tree.children:
            raise ValueError(f"model {self.model!r} has no population to check")
        ci_prob = validate_prob("ci_prob", ci_prob)
        from bayeval.models._beta_family import counts_by_bound, observed_histogram

        pred = self._tree["posterior_predictive"].to_dataset()
        c, n, bounds = counts_by_bound(self._tree["observed_data"].to_dataset())
        max_n = pred.sizes["count"] - 1
        hist = np.zeros(c.shape[:2] + (max_n + 1,))
        share = np.zeros(c.shape[:2])
        for b in range(c.shape[0]):
            for s in range(c.shape[1]):
                hist[b, s], share[b, s] = observed_histogram(c[b, s], n[b, s], max_n)
        dims = ("missing_bound", "system")
        observed_share = xr.DataArray(share, dims=dims)
        observed_hist = xr.DataArray(hist, dims=dims + ("count",))
        if bounds is None:
            observed_share = observed_share.isel(missing_bound=0, drop=True)
            observed_hist = observed_hist.isel(missing_bound=0, drop=True)
        sample = ["chain", "draw"]
        rep = pred["extreme_share"]
        above = (rep >= observed_share).mean(sample)
        below = (rep <= observed_share).mean(sample)
        p_value = np.minimum(1.0, 2 * np.minimum(above, below)).where(observed_share.notnull())
        out = xr.Dataset(
            {
                "observed_histogram": observed_hist,
                "predicted_histogram": pred["count_histogram"].mean(sample),
                "predicted_histogram_interval": credible_interval(
                    pred["count_histogram"], ci_prob, sample
                ),
                "observed_extreme_share": observed_share,
                "predicted_extreme_share": rep.mean(sample),
                "p_value": p_value,
                "flagged": p_value < 0.01,
            }
        )
        out.attrs = {
            "statistic": "share of tasks with 0 or n successes (n >= 2)",
            "ci_prob": ci_prob,
        }
        return out


def load(path) -> Results:
    """Read results written by :meth:`Results.to_netcdf`.

    The file's checksum is verified and the value ranges checked (counts non-negative whole
    numbers with successes at most trials, probabilities in [0, 1], concentrations and standard
    deviations positive); every error names the file. A file written before bayeval stored a
    checksum loads with a :class:`~bayeval.BayevalWarning` saying its arrays cannot be verified.

    Examples
    --------
    >>> import tempfile, os, bayeval as be
    >>> res = be.fit(be.from_counts([[3, 4]], trials=5), draws=50, chains=1, seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "fit.nc")
    >>> res.to_netcdf(path)
    >>> be.load(path).model
    'hierarchical'
    """
    tree = read_tree(path)
    try:
        return Results(tree)
    except ValueError as err:
        raise ValueError(f"{os.fspath(path)}: {err}") from None
