"""``Results``: a fitted model's :class:`~bayeval.posterior.Posterior` with its analyses.

Every method here is a thin delegation to a function of :mod:`bayeval.analyses` (or a readout of
:meth:`Posterior.draws`); nothing mutates the tree.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._arviz import mcse_and_ess
from bayeval._validate import (
    describe_values,
    validate_k,
    validate_margin,
    validate_prob,
)
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
        self, k=1, estimand: str = "population", clusters=None, weighting: str = "task"
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
        self, k=1, estimand: str = "population", clusters=None, weighting: str = "task"
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
        self, k, tau, estimand: str = "population", clusters=None, weighting: str = "task"
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
        self, estimand: str = "population", clusters=None, weighting: str = "task"
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
        self, estimand: str = "population", clusters=None, weighting: str = "task"
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

    def task_rates(self, system=None) -> xr.DataArray:
        """Posterior draws of every task's rate, from its exact conditional distribution.

        Stored draws are returned when the fit kept them; otherwise they are drawn on demand
        (reproducibly, from the fit's seed). Memory grows with draws x systems x tasks.

        Examples
        --------
        >>> import bayeval as be
        >>> res = be.fit(be.from_counts([[9, 1, 10]], trials=10), draws=100, chains=2, seed=0)
        >>> res.task_rates().dims
        ('chain', 'draw', 'system', 'task')
        """
        systems = None if system is None else ([system] if np.ndim(system) == 0 else system)
        if systems is not None:
            unknown = [s for s in systems if s not in self.systems]
            if unknown:
                raise KeyError(f"unknown system(s) {describe_values(unknown)}")
        return self._model.task_rates(self._tree, systems)

    def compare(
        self,
        candidate,
        baseline,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        margin: float = 0.0,
        ci_prob: float = 0.95,
        clusters=None,
        weighting: str = "task",
        tau=None,
        allow_harness_change: bool = False,
        runs=None,
    ) -> xr.Dataset:
        """Posterior of the effect ``metric(candidate) - metric(baseline)``.

        Under ``missing="bounds"`` the bounds cross: the lower bound takes the candidate's
        missing outcomes as failures and the baseline's as successes, the upper the reverse.
        The paired ``logit_normal`` model fits each crossed bound once, both systems'
        crossed counts jointly (:meth:`bayeval.EvalData.crossed`; two more fits with this
        fit's settings, cached): subtracting draws of the two bounds' separate fits would
        lose the pairing. (``zoib`` still subtracts its bounds' draws.)

        Parameters
        ----------
        candidate, baseline : system labels
        metric : {"pass@k", "pass^k", "g-pass@k", "consistency"}
            Consistency has no k (leave ``k`` at its default).
        k : int or list of int
        estimand : {"population", "tasks"}
        margin : float, default 0.0
            Practical margin (absolute).
        ci_prob : float, default 0.95
        clusters, weighting
            As in :meth:`pass_at_k` (``logit_normal`` only).
        tau : float, optional
            With ``metric="g-pass@k"``: the share of the k attempts that must succeed, in
            (0, 1].
        allow_harness_change : bool, default False
            Systems whose data record different harness digests (``from_frame(harness=)``)
            are not compared unless this is True; the output's ``harness_note`` then says
            what changed (:func:`bayeval.harness.check_comparable`).
        runs : {"new", "observed"}, optional
            For data with training runs (``from_frame(..., run=...)``): compare recipes
            (``candidate``, ``baseline`` are recipe labels). ``"observed"``: the mean over each
            recipe's runs of its checkpoints' metric (these checkpoints); ``"new"``: the metric
            of a new run of each recipe (new training seeds; ``logit_normal`` with a run
            level, population estimand), wider by the seed spread ``sigma_run``.

        Returns
        -------
        xarray.Dataset
            ``effect`` (draws), ``effect_interval`` (``ci_bound``), ``prob_positive``,
            ``prob_above_margin`` (P(effect > margin)), ``prob_noninferior``
            (P(effect > -margin)), ``effect_mean`` and its Monte Carlo standard error
            ``effect_mcse`` and bulk ``effect_ess`` (``arviz_stats``); settings in attrs.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[3, 5, 1, 8], [6, 9, 2, 9]], trials=10, systems=["A", "B"])
        >>> res = be.fit(data, draws=300, chains=2, seed=0, model="hierarchical")
        >>> out = res.compare("B", "A", k=1, estimand="tasks", margin=0.02)
        >>> out["effect_interval"].dims
        ('ci_bound',)
        """
        asked = metric
        metric, tau = self._validate_metric(metric, tau, k)
        ci_prob = validate_prob("ci_prob", ci_prob)
        margin = validate_margin(margin)
        if runs is not None:
            from bayeval._runs import check_recipes

            members = check_recipes(self, candidate, baseline)
        else:
            for role, label in (("candidate", candidate), ("baseline", baseline)):
                if label not in self.systems:
                    raise ValueError(
                        f"{role} {label!r} is not a system of these results; "
                        f"systems: {describe_values(self.systems)}"
                    )
            if candidate == baseline:
                raise ValueError("candidate and baseline must be different systems")
            members = [candidate, baseline]
        from bayeval.harness import check_comparable

        harness = check_comparable(self, members, allow_harness_change)
        shared, dropped = None, 0
        if estimand == "tasks":
            # paired: the mean over the tasks valid for both systems (under missing="exclude"
            # a system's valid tasks can differ)
            trials = self._tree["observed_data"]["trials"]
            if "missing_bound" in trials.dims:
                trials = trials.min("missing_bound")
            valid = trials.sel(system=members).values > 0
            both = valid.all(axis=0)
            dropped = int((valid.any(axis=0) & ~both).sum())
            if not both.any():
                raise ValueError(
                    f"{candidate!r} and {baseline!r} have no task with a valid "
                    "outcome for both: a paired comparison of these tasks is "
                    "undefined"
                )
            if dropped:
                shared = both
        if runs is not None:
            from bayeval._runs import recipe_values

            values = recipe_values(
                self, metric, k, estimand, clusters, weighting, runs, shared=shared, tau=tau
            )
        else:
            values = self.draws(
                metric, k, estimand, clusters, weighting, shared=shared, tau=tau, systems=members
            )
        crossed_fit = (
            "missing_bound" in values.dims and self.model == "logit_normal" and runs is None
        )
        if crossed_fit:
            # a paired model shares task effects between the systems: each crossed bound is
            # one joint fit of both systems' crossed counts, not two bounds' draws subtracted
            effect = self._crossed_effect(
                candidate, baseline, metric, k, estimand, clusters, weighting, shared, tau
            )
        else:
            cand = values.sel(system=candidate, drop=True)
            base = values.sel(system=baseline, drop=True)
            if "missing_bound" in values.dims:  # systems independent: the bounds' draws cross
                base = base.sel(missing_bound=["upper", "lower"]).assign_coords(
                    missing_bound=["lower", "upper"]
                )
            effect = cand - base
        sample_dims = ["chain", "draw"]
        out = xr.Dataset(
            {
                "effect": effect,
                "effect_mean": effect.mean(sample_dims),
                "effect_interval": credible_interval(effect, ci_prob, sample_dims),
                "prob_positive": (effect > 0).mean(sample_dims),
                "prob_above_margin": (effect > margin).mean(sample_dims),
                "prob_noninferior": (effect > -margin).mean(sample_dims),
            }
        )
        out["effect_mcse"], out["effect_ess"] = mcse_and_ess(effect)
        out.attrs = {
            "candidate": candidate,
            "baseline": baseline,
            "metric": asked,
            "estimand": estimand,
            "margin": float(margin),
            "ci_prob": ci_prob,
            "ci_kind": "eti",
            "model": self.model,
            "paired": self._paired,
            **{
                key: values.attrs[key]
                for key in ("clusters", "weighting", "tau")
                if key in values.attrs
            },
            **harness.attrs,
            **({} if runs is None else {"runs": runs, "checkpoints": members}),
        }
        if crossed_fit:
            out.attrs["crossed_bounds"] = "one joint fit per crossed bound"
        if estimand == "tasks":
            out.attrs["n_shared_tasks"] = int(both.sum())
            out.attrs["n_dropped_tasks"] = dropped
        return out

    def _crossed_effect(
        self, candidate, baseline, metric, k, estimand, clusters, weighting, shared, tau
    ) -> xr.DataArray:
        """Effect draws under crossed missing-outcome bounds from one joint fit per bound
        (:meth:`bayeval.EvalData.crossed`), with this fit's settings; cached."""
        from bayeval.fit import fit

        key = ("crossed", candidate, baseline)
        fits = self._cache.get(key)
        if fits is None:
            attrs = self._tree.attrs
            priors = json.loads(attrs.get("priors", "null")) or None
            if priors is not None and "alpha" in priors:
                priors["alpha"] = tuple(priors["alpha"])
            fits = {}
            for bound in ("lower", "upper"):
                data = self.data.crossed(candidate, baseline, bound)
                fits[bound] = fit(
                    data,
                    model=self.model,
                    draws=int(attrs["draws"]),
                    chains=int(attrs["chains"]),
                    seed=int(attrs["seed"]),
                    sampler=attrs["sampler"],
                    tune=int(attrs["tune"]),
                    priors=priors,
                    progress=False,
                    task_draws=False,
                    log_likelihood=False,
                )
            self._cache[key] = fits
        parts = []
        for bound in ("lower", "upper"):
            values = fits[bound].draws(
                metric, k, estimand, clusters, weighting, shared=shared, tau=tau
            )
            parts.append(
                values.sel(system=candidate, drop=True) - values.sel(system=baseline, drop=True)
            )
        return xr.concat(parts, dim=xr.DataArray(["lower", "upper"], dims="missing_bound"))

    # -- many systems --------------------------------------------------------------------------
    def ranks(
        self,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        top: int = 3,
        ci_prob: float = 0.95,
        clusters=None,
        weighting: str = "task",
        tau=None,
    ) -> xr.Dataset:
        """Posterior of each system's rank (1 = best) by a metric.

        Ties within a draw share the best of their ranks (they are rare with continuous
        draws).

        Parameters
        ----------
        metric, k, estimand, clusters, weighting, tau
            As in :meth:`compare` (one k).
        top : int, default 3
            ``prob_top`` is P(rank <= top).
        ci_prob : float, default 0.95

        Returns
        -------
        xarray.Dataset
            ``rank`` (draws over ``chain``, ``draw``, ``system``), ``rank_interval``
            (equal-tailed, on ``ci_bound``), ``rank_mean``, ``prob_best`` (sums to 1 over the
            systems) and ``prob_top``.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
        ...                       systems=["A", "B", "C"])
        >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
        >>> out = res.ranks()
        >>> float(out["prob_best"].sum())
        1.0
        >>> out["rank_mean"].sel(system="B").item() < out["rank_mean"].sel(system="A").item()
        True
        """
        ci_prob = validate_prob("ci_prob", ci_prob)
        if isinstance(top, bool) or not isinstance(top, int) or top < 1:
            raise ValueError(f"top must be a positive int; got {top!r}")
        values = self.draws(metric, k, estimand, clusters, weighting, tau=tau)
        if "k" in values.dims:
            raise ValueError("ranks take one k; got a list")
        axis = values.get_axis_num("system")
        data = np.moveaxis(values.values, axis, -1)
        # rank 1 = best: one plus the number of systems strictly better in the same draw
        better = (data[..., None, :] > data[..., :, None]).sum(axis=-1)
        rank = xr.DataArray(
            np.moveaxis(better + 1, -1, axis), dims=values.dims, coords=values.coords, name="rank"
        )
        sample_dims = ["chain", "draw"]
        out = xr.Dataset(
            {
                "rank": rank,
                "rank_mean": rank.mean(sample_dims),
                "rank_interval": credible_interval(rank, ci_prob, sample_dims),
                "prob_best": (rank == 1).mean(sample_dims),
                "prob_top": (rank <= top).mean(sample_dims),
            }
        )
        out.attrs = {
            "metric": metric,
            "estimand": estimand,
            "top": top,
            "ci_prob": ci_prob,
            "model": self.model,
            "paired": self._paired,
            **{
                key: values.attrs[key]
                for key in ("clusters", "weighting", "tau")
                if key in values.attrs
            },
        }
        return out

    def rank_groups(
        self,
        prob: float = 0.95,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        clusters=None,
        weighting: str = "task",
        tau=None,
    ) -> pd.DataFrame:
        """Groups of systems that cannot be told apart at probability ``prob``.

        The rule, applied from the top: the best remaining system by posterior mean leads a new
        group, and every remaining system ``S`` for which ``P(metric(leader) > metric(S)) <
        prob`` joins it. So a system is placed below a group only when the group's leader is
        better than it with at least that probability; groups are numbered from 1 (best).

        Returns
        -------
        pandas.DataFrame
            One row per system, best first: ``system``, ``group``, ``mean``, the group's
            ``leader`` and ``prob_leader_better`` (P(leader > system); NaN for the leader).

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [8, 9, 8, 9]], trials=10,
        ...                       systems=["A", "B", "C"])
        >>> res = be.fit(data, model="hierarchical", draws=500, chains=2, seed=0)
        >>> res.rank_groups(prob=0.95)["group"].tolist()
        [1, 1, 2]
        """
        prob = validate_prob("prob", prob)
        values = self._single_metric("rank_groups", metric, k, estimand, clusters, weighting, tau)
        draws = values.transpose("chain", "draw", "system").values.reshape(-1, len(self.systems))
        means = draws.mean(axis=0)
        order = list(np.argsort(-means, kind="stable"))
        rows, group = [], 0
        while order:
            group += 1
            leader = order.pop(0)
            rows.append((leader, group, leader, np.nan))
            rest = []
            for s in order:
                p_better = float((draws[:, leader] > draws[:, s]).mean())
                if p_better < prob:
                    rows.append((s, group, leader, p_better))
                else:
                    rest.append(s)
            order = rest
        table = pd.DataFrame(
            [
                {
                    "system": self.systems[s],
                    "group": g,
                    "mean": float(means[s]),
                    "leader": self.systems[lead],
                    "prob_leader_better": p,
                }
                for s, g, lead, p in rows
            ]
        )
        table.attrs = {
            "prob": prob,
            "metric": metric,
            "estimand": estimand,
            "model": self.model,
            **({} if tau is None else {"tau": tau}),
            "rule": "best remaining system leads a group; a system joins it unless "
            "P(leader > system) >= prob",
        }
        return table

    def compare_all(
        self,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        margin: float = 0.0,
        ci_prob: float = 0.95,
        clusters=None,
        weighting: str = "task",
        tau=None,
        allow_harness_change: bool = False,
    ) -> xr.Dataset:
        """Every pairwise effect ``metric(candidate) - metric(baseline)``, paired as
        :meth:`compare` is for the fitted model. Systems evaluated under different harness
        digests are refused unless ``allow_harness_change`` (see :meth:`compare`).

        Returns
        -------
        xarray.Dataset
            Over ``(candidate, baseline)``: ``effect_mean``, ``effect_interval`` (on
            ``ci_bound``), ``prob_positive`` and ``prob_above_margin``; the diagonal is NaN.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[2, 3, 1, 2], [8, 9, 7, 9], [5, 6, 4, 5]], trials=10,
        ...                       systems=["A", "B", "C"])
        >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
        >>> out = res.compare_all(estimand="tasks")
        >>> out["prob_positive"].sel(candidate="B", baseline="A").item()
        1.0
        """
        ci_prob = validate_prob("ci_prob", ci_prob)
        margin = validate_margin(margin)
        values = self._single_metric("compare_all", metric, k, estimand, clusters, weighting, tau)
        tau = values.attrs.get("tau")
        systems = self.systems
        from bayeval.harness import check_comparable

        harness = check_comparable(self, systems, allow_harness_change)
        S = len(systems)
        mean = np.full((S, S), np.nan)
        lower, upper = np.full((S, S), np.nan), np.full((S, S), np.nan)
        positive, above = np.full((S, S), np.nan), np.full((S, S), np.nan)
        alpha = 1 - ci_prob
        # a pair valid on the same tasks reads its effect off these draws; only a pair whose
        # valid tasks differ (missing="exclude") needs compare's mean over the shared tasks
        trials = self._tree["observed_data"]["trials"]
        if "missing_bound" in trials.dims:
            trials = trials.min("missing_bound")
        valid = trials.transpose("system", "task").values > 0
        for i, cand in enumerate(systems):
            for j, base in enumerate(systems):
                if i == j:
                    continue
                same_tasks = "missing_bound" not in values.dims and np.array_equal(
                    valid[i], valid[j]
                )
                if estimand == "tasks" and not same_tasks:  # the tasks valid for both
                    effect = self.compare(
                        cand,
                        base,
                        metric=metric,
                        k=k,
                        estimand=estimand,
                        margin=margin,
                        ci_prob=ci_prob,
                        tau=tau,
                        allow_harness_change=True,
                    )["effect"].values
                else:
                    effect = (values.sel(system=cand) - values.sel(system=base)).values
                effect = effect.ravel()
                mean[i, j] = effect.mean()
                lower[i, j], upper[i, j] = np.quantile(effect, [alpha / 2, 1 - alpha / 2])
                positive[i, j] = (effect > 0).mean()
                above[i, j] = (effect > margin).mean()
        dims = ("candidate", "baseline")
        coords = {
            "candidate": np.asarray(systems, dtype=object),
            "baseline": np.asarray(systems, dtype=object),
        }
        out = xr.Dataset(
            {
                "effect_mean": (dims, mean),
                "effect_interval": (dims + ("ci_bound",), np.stack([lower, upper], axis=-1)),
                "prob_positive": (dims, positive),
                "prob_above_margin": (dims, above),
            },
            coords={**coords, "ci_bound": ["lower", "upper"]},
        )
        out.attrs = {
            "metric": metric,
            "estimand": estimand,
            "margin": float(margin),
            "ci_prob": ci_prob,
            "model": self.model,
            "paired": self._paired,
            **({} if tau is None else {"tau": tau}),
            **harness.attrs,
        }
        return out

    def winner(
        self,
        metric: str = "pass@k",
        k=1,
        estimand: str = "population",
        ci_prob: float = 0.95,
        n_replicates: int = 200,
        seed=None,
        clusters=None,
        weighting: str = "task",
    ) -> xr.Dataset:
        """The system the observed score picks, and what that pick is worth (the winner's curse).

        The pick is the system with the best observed score (the mean over its valid tasks of
        the unbiased estimator). Its naive score overstates it when the systems are close: the
        best of many noisy scores is selected for luck. The posterior of its value, from a
        model that treats the systems as draws from a population of systems (``logit_normal``
        with three or more systems has that level, ``sigma_system``), is shrunk back by what
        the data say about how far apart the systems are.

        Parameters
        ----------
        metric, k, estimand, clusters, weighting
            As in :meth:`compare` (one k).
        ci_prob : float, default 0.95
        n_replicates : int, default 200
            Posterior draws (taken evenly) used to replicate the benchmark on these tasks and
            pick by its observed score again (``expected_optimism``), and for the posterior
            mean over these tasks that ``optimism`` subtracts. Per-task readouts cost in
            proportion: about 0.3 s per draw at 25 systems x 500 tasks (``logit_normal``).
        seed : int, optional
            Seed of the replicates (default: the fit's).

        Returns
        -------
        xarray.Dataset
            ``naive_score``, ``value`` (posterior draws of the pick's metric), ``value_mean``,
            ``value_interval``, ``optimism`` (the naive score minus the posterior mean of the
            pick's mean over these tasks, the naive score's own target; per system
            ``tasks_mean``),
            ``prob_pick_is_best`` (posterior probability that the pick is the best system),
            ``expected_optimism`` and ``replicate_prob_best_picked`` (picking by observed
            score on replicate benchmarks), and per system ``observed_score`` and
            ``posterior_mean``. ``attrs["pick"]`` names the pick.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[6, 7, 5, 8], [7, 6, 7, 8], [6, 6, 6, 7]], trials=10,
        ...                       systems=["A", "B", "C"])
        >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
        >>> out = res.winner(n_replicates=100)
        >>> out.attrs["pick"], round(float(out["naive_score"]), 3)
        ('B', 0.7)
        """
        from bayeval._decisions import winner

        return winner(self, metric, k, estimand, ci_prob, n_replicates, seed, clusters, weighting)

    def compare_curve(
        self,
        candidate,
        baseline,
        k,
        metric: str = "pass@k",
        estimand: str = "tasks",
        ci_prob: float = 0.95,
    ) -> xr.Dataset:
        """The effect ``metric(candidate) - metric(baseline)`` as a curve over k.

        Parameters
        ----------
        candidate, baseline : system labels
        k : list of int
            At least two increasing ks.
        metric : {"pass@k", "pass^k"}
        estimand : {"tasks", "population"}, default "tasks"
        ci_prob : float, default 0.95

        Returns
        -------
        xarray.Dataset
            Over ``k``: ``effect_mean``, ``effect_interval`` (pointwise), ``effect_band``
            (simultaneous over the ks: a sup-t band, mean +- q sd with q the ``ci_prob``
            quantile of the largest standardised deviation over k), ``prob_positive``;
            ``prob_cross`` (posterior probability that the effect changes sign within the
            ks), ``crossing_k`` (per draw, the interpolated k of the first sign change; NaN
            without one) and ``crossing_interval``; per ``(task, k)``,
            ``task_contribution`` (the posterior mean of the task's share of the
            tasks-estimand effect) and ``task_contribution_observed`` (the same share from the
            unbiased estimator of its counts), so a reversal is traced to the tasks behind
            it (see :func:`bayeval._decisions.reversal_tasks`).

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[9, 1, 5, 0], [5, 5, 5, 5]], trials=10, systems=["A", "B"])
        >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
        >>> curve = res.compare_curve("A", "B", k=[1, 2, 4, 8])
        >>> curve["effect_band"].dims
        ('k', 'ci_bound')
        """
        from bayeval._decisions import compare_curve

        return compare_curve(self, candidate, baseline, k, metric, estimand, ci_prob)

    def compare_subsets(
        self,
        mask,
        metric: str = "pass@k",
        k: int = 1,
        estimand: str = "tasks",
        ci_prob: float = 0.95,
        refit: bool = True,
        **fit_options,
    ) -> xr.Dataset:
        """Score on clean versus flagged tasks (contamination, a leakage channel), their
        difference and the clean-only estimate; see
        :func:`bayeval.contamination.compare_subsets`.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[9, 8, 9, 2, 3, 1]], trials=10)
        >>> res = be.fit(data, model="hierarchical", draws=200, chains=2, seed=0)
        >>> out = res.compare_subsets([0, 1, 2], refit=False)
        >>> bool(out["difference_mean"].item() > 0.4)
        True
        """
        from bayeval.contamination import compare_subsets

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
