"""``Results``: a fitted model's :class:`~bayeval.posterior.Posterior` with its analyses.

Every method here is a thin delegation to a function of :mod:`bayeval.analyses` (or a readout of
:meth:`Posterior.draws`); nothing mutates the tree.
"""

from __future__ import annotations

import os

import pandas as pd
import xarray as xr

from bayeval import checks
from bayeval.analyses.compare import compare, compare_all
from bayeval.analyses.cost import posterior_cost
from bayeval.analyses.curves import compare_curve
from bayeval.analyses.irt import abilities, items
from bayeval.analyses.judge import posterior_judge
from bayeval.analyses.latency import posterior_latency
from bayeval.analyses.noise import posterior_noise
from bayeval.analyses.ranks import rank_groups, ranks, winner
from bayeval.analyses.subsets import compare_subsets
from bayeval.analyses.summary import summary
from bayeval.inference import infer
from bayeval.posterior import Posterior, read_tree

__all__ = ["Results", "fit", "load"]


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
     'posterior_predictive_stats', 'task_rates']
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
            ``logit_normal`` only: a new task from a new cluster or from the observed
            clusters. Default: what the clusters support
            (:func:`bayeval.data.clusters.default_clusters`: a new cluster with ten or more
            clusters and none very small, else the observed clusters).
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
        >>> mean = float(res.mean_score(estimand="population").mean())
        >>> abs(mean - float(df["score"].mean())) < 0.05  # near the scores' mean
        True
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
        """Posterior of the effect ``metric(candidate) - metric(baseline)``.

        See :func:`bayeval.analyses.compare.compare`.

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
        clusters=None,
        weighting: str = "task",
    ) -> xr.Dataset:
        """The effect as a curve over k: see :func:`bayeval.analyses.curves.compare_curve`."""
        return compare_curve(
            self,
            candidate,
            baseline,
            metric=metric,
            k=k,
            estimand=estimand,
            ci_prob=ci_prob,
            clusters=clusters,
            weighting=weighting,
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
        self,
        *,
        alpha: float = 0.05,
        power: float = 0.8,
        ci_prob: float = 0.95,
        n_draws: int = 400,
    ) -> xr.Dataset:
        """Where the variance of each benchmark score comes from, and what more data buys.

        This is :func:`bayeval.analyses.noise.posterior_noise` of this fit.
        """
        return posterior_noise(self, alpha=alpha, power=power, ci_prob=ci_prob, n_draws=n_draws)

    def latency(
        self,
        *,
        q=(0.5, 0.95),
        statuses=None,
        model: str = "lognormal",
        unit: str = "task",
        ci_prob: float = 0.95,
        n_draws: int = 4000,
        seed: int = 0,
    ) -> xr.Dataset:
        """Posterior of each system's attempt-latency quantiles with the timeout and error rates.

        This is :func:`bayeval.analyses.latency.posterior_latency` of this fit's data.
        """
        return posterior_latency(
            self,
            q=q,
            statuses=statuses,
            model=model,
            unit=unit,
            ci_prob=ci_prob,
            n_draws=n_draws,
            seed=seed,
        )

    def cost(
        self,
        column: str,
        *,
        k=None,
        model: str = "bayesian_bootstrap",
        ci_prob: float = 0.95,
        n_draws: int = 1000,
        seed: int = 0,
    ) -> xr.Dataset:
        """Posterior cost per attempt, cost per success, status rates and budget curve.

        This is :func:`bayeval.analyses.cost.posterior_cost` of this fit.
        """
        return posterior_cost(
            self, column, k=k, model=model, ci_prob=ci_prob, n_draws=n_draws, seed=seed
        )

    # -- item response theory (model="irt") ----------------------------------------------------
    def abilities(self, *, ci_prob: float = 0.95) -> xr.Dataset:
        """Each system's ability theta (``model="irt"``): draws, mean and interval.

        This is :func:`bayeval.analyses.irt.abilities` of this fit; a ValueError for a fit of
        another model.

        Examples
        --------
        >>> from bayeval.testing import fake_results
        >>> res = fake_results(model="irt")
        >>> res.abilities()["theta_interval"].dims
        ('system', 'ci_bound')
        """
        return abilities(self, ci_prob=ci_prob)

    def items(self, *, theta=None, ci_prob: float = 0.95) -> xr.Dataset:
        """Each item's difficulty b, discrimination a and Fisher information (``model="irt"``).

        This is :func:`bayeval.analyses.irt.items` of this fit; a ValueError for a fit of
        another model.

        Examples
        --------
        >>> from bayeval.testing import fake_results
        >>> res = fake_results(model="irt")
        >>> res.items(theta=[-1.0, 0.0, 1.0])["information_grid"].dims
        ('task', 'theta')
        """
        return items(self, theta=theta, ci_prob=ci_prob)

    def judge(self, *, ci_prob: float = 0.95) -> xr.Dataset:
        """The judge's sensitivity and specificity per system, beside the naive pass@1.

        This is :func:`bayeval.analyses.judge.posterior_judge` of this fit (of the judge-aware
        model; a clear error on any other).

        Examples
        --------
        A judge that passes four wrong answers in ten of B's, one in ten of A's; a third of
        the attempts labelled (a fake fit stands in for ``be.fit(data)`` here):

        >>> import numpy as np, pandas as pd, bayeval as be
        >>> from bayeval.testing import fake_results
        >>> rng = np.random.default_rng(0)
        >>> y = rng.random(240) < 0.6
        >>> lenient = np.repeat([0.1, 0.4], 120)
        >>> df = pd.DataFrame({"system": np.repeat(["A", "B"], 120),
        ...                    "task": np.tile(np.repeat(np.arange(40), 3), 2),
        ...                    "judge": np.where(y, rng.random(240) < 0.9,
        ...                                      rng.random(240) < lenient).astype(int),
        ...                    "human": np.where(rng.random(240) < 1 / 3, y, np.nan)})
        >>> data = be.from_frame(df, judge="judge", success="human", label_design="random")
        >>> out = fake_results(data, model="judge", seed=0).judge()
        >>> out["specificity_interval"].dims
        ('judge', 'system', 'ci_bound')
        >>> spec = out["specificity_mean"].sel(judge="judge")
        >>> bool(spec.sel(system="B") < spec.sel(system="A"))   # the judge is lenient on B
        True
        >>> out["n_labelled"].sum().item() == int(df["human"].notna().sum())
        True
        """
        return posterior_judge(self, ci_prob=ci_prob)

    # -- summaries and checks ------------------------------------------------------------------
    def summary(
        self, *, metrics=("pass@k",), k=1, estimands=None, ci_prob: float = 0.95, tau=None
    ) -> pd.DataFrame:
        """Posterior mean, sd and interval of each system's metrics.

        See :func:`bayeval.analyses.summary.summary`.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[9, 1, 10, 0]], trials=10), draws=200, chains=2,
        ...              seed=0)
        >>> res.summary(k=[1, 3])["estimand"].unique().tolist()
        ['tasks', 'population']
        """
        return summary(self, metrics=metrics, k=k, estimands=estimands, ci_prob=ci_prob, tau=tau)

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
        the fitted population reproduces (so few tasks with several trials each get the wide
        concentration prior, and the fit says so):

        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[10, 0, 10, 0, 10, 0, 10, 1]], trials=10),
        ...              draws=300, chains=2, seed=0)
        >>> res.tree.attrs["prior_note"].startswith("at most 10 tasks per population")
        True
        >>> bool(res.ppc()["flagged"].item())
        False
        """
        return checks.ppc(self, ci_prob)


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


def fit(
    data,
    *,
    model: str = "auto",
    draws: int | None = None,
    chains: int = 4,
    seed=None,
    sampler: str = "auto",
    tune: int | None = None,
    priors: dict | None = None,
    progress: bool | None = None,
    strict: bool = False,
    task_draws="auto",
    log_likelihood="auto",
) -> Results:
    """Fit a Bayesian model to evaluation counts.

    Parameters
    ----------
    data : EvalData
    model : str, default "auto"
        ``"auto"``, ``"hierarchical"``, ``"beta_binomial"``, ``"logit_normal"``,
        ``"fractional"``, ``"zoib"``, ``"irt"`` or ``"judge"``. ``logit_normal`` adds clusters
        and pairs the systems through shared task effects; ``"auto"`` picks it for several
        systems on shared tasks and ``hierarchical`` otherwise
        (:func:`~bayeval.inference.choose_model`), and records the choice in
        ``attrs["model_choice"]``. ``fractional`` (the ``"auto"`` choice for data built with
        ``score=`` where some score lies strictly between 0 and 1) and ``zoib`` model
        partial-credit scores in [0, 1]; scores that are all 0 or 1 get the binomial models,
        and binary data fit the models of scores too when asked; the binary models refuse
        scores strictly between 0 and 1.
    draws : int, optional
        Posterior draws per chain. Default: the model's for the form it samples, 1000, and
        1500 for the logit-normal model's full-latent form (its slowest spreads mix at a bulk
        ESS of a third to a half of the draws: ``models/logit_normal.md``).
    chains : int, default 4
        Chains (the grid and conjugate engines fill the same ``(chain, draw)`` layout).
    seed : int, optional
        Seed for every random step; ``None`` draws one and records it in ``attrs["seed"]``.
    sampler : {"auto", "conjugate", "grid", "nutpie", "pymc", "numpyro"}, default "auto"
        Engine (see :mod:`bayeval.inference`); "numpyro" needs ``bayeval[jax]``.
    tune : int, optional
        NUTS warm-up draws per chain; default: 300 where ``logit_normal`` or ``judge``
        samples a form with its latent effects integrated out (``attrs["form"]``
        "collapsed" or "task-latent"), 1000 otherwise
        (:func:`~bayeval.inference.default_tune`). The warm-up run is recorded in
        ``attrs["tune"]``.
    priors : dict, optional
        Model priors (see each model's ``DEFAULT_PRIORS``); recorded in attrs.
    progress : bool, optional
        Show the sampler's progress (draws done in warm-up and after, divergences, time
        spent and left; :mod:`bayeval.models.progress`): on a terminal one line on stderr
        rewritten in place, in a Jupyter kernel nutpie's display, and elsewhere (stderr
        piped to a log) a plain line every
        :data:`~bayeval.models.progress.LOG_INTERVAL` seconds, then a line of totals;
        default: on a terminal or in a Jupyter kernel
        (:func:`~bayeval.inference.interactive`), so ``progress=True`` asks for the log
        lines. Fits through PyMC's ``pm.sample`` (``hierarchical``, ``sampler="pymc"``)
        show PyMC's bar instead.
    strict : bool, default False
        Raise instead of warning when the MCMC diagnostics fail their gates.
    task_draws : {"auto", True, False}
        Store per-task rate draws (``"auto"``: when they hold at most 4 million numbers) in a
        ``task_rates`` group of their own (the conjugate model's are its posterior); they are
        otherwise drawn on demand by ``Results.task_rates``.
    log_likelihood : {"auto", True, False}
        Store the ``log_likelihood`` group (per task, joint over the systems; for
        ``arviz_stats.loo``); ``"auto"``: where it holds at most 4 million numbers (chain x
        draw x task) and its quadrature is estimated to take at most 30 s; otherwise
        ``attrs["log_likelihood_note"]`` says why, ``Results.log_likelihood()`` computes it
        on demand (``by="pattern"``: once per distinct count pattern, in bounded memory) and
        ``Results.with_log_likelihood()`` adds the group. Not defined under
        ``missing="bounds"``.

    Returns
    -------
    Results

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3, 10, 0]], trials=10)
    >>> res = be.fit(data, draws=500, chains=2, seed=1)   # one system: "auto" is hierarchical
    >>> res.tree.attrs["model"], res.tree.attrs["sampler"]
    ('hierarchical', 'grid')
    >>> res.pass_at_k(k=1, estimand="population").dims
    ('chain', 'draw', 'system')
    """
    posterior = infer(
        data,
        model=model,
        draws=draws,
        chains=chains,
        seed=seed,
        sampler=sampler,
        tune=tune,
        priors=priors,
        progress=progress,
        strict=strict,
        task_draws=task_draws,
        log_likelihood=log_likelihood,
    )
    return Results(posterior.tree)
