"""``Posterior``: a fitted model as one ``xarray.DataTree``, validated, with its metric draws.

The tree has ArviZ's groups, so ArviZ functions work on ``tree`` directly:

* ``posterior`` (the model's parameters; the conjugate model's per-task rates ``p``) and, for
  MCMC fits, ``sample_stats``;
* ``observed_data``: ``task_total (task)``, each task's total over its systems of
  ``successes`` (or of ``score_sum``, for partial-credit scores), the one observation ArviZ
  pairs with the log-likelihood and the replicates; ``constant_data``: the data per cell
  (``successes``, ``trials``, ``attempts``, ``status_counts``, scores' statistics,
  covariates), :class:`~bayeval.EvalData`'s dataset;
* ``log_likelihood``: ``task_total (chain, draw, task)``, each task's log-likelihood joint
  over its systems (``arviz_stats.loo`` leaves a task out);
* ``posterior_predictive``: ``task_total (chain, draw, task)``, one replicate per posterior
  draw, on the posterior's ``chain`` and ``draw``, a new task's under each draw;
* ``posterior_predictive_stats``: the per-task success-count histogram of new tasks and its
  U-shape statistic (:func:`bayeval.checks.ppc`);
* bayeval's own ``task_rates`` and ``task_effects`` (per-task draws, where kept).

The root holds only attributes: model, priors, sampler, seed, draws, library versions, a hash of
the input and the missing policy. :mod:`bayeval.models._groups` builds the groups beyond the
posterior.

Every method returns a new object; nothing mutates the tree. ``to_netcdf`` and
:func:`read_tree` round-trip the tree exactly, without rebuilding the PyMC model; a file written
in an earlier layout (format 1, before ``constant_data`` held the data) is read into today's.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings

import numpy as np
import xarray as xr

from bayeval._io import atomic_path
from bayeval._validate import BayevalWarning, describe_values, validate_choice
from bayeval.data import EvalData
from bayeval.data.clusters import default_clusters
from bayeval.data.groups import dataset_of
from bayeval.estimators import metric_ks, validate_metric
from bayeval.models import _groups, get_model
from bayeval.models.kernels.tables import COUNT_GRID

__all__ = ["ESTIMANDS", "Posterior", "credible_interval", "read_tree"]

ESTIMANDS = ("tasks", "population")
_REQUIRED_GROUPS = ("posterior", "observed_data")
_REQUIRED_ATTRS = (
    "model",
    "sampler",
    "seed",
    "draws",
    "chains",
    "priors",
    "missing_policy",
    "input_hash",
)


def credible_interval(draws: xr.DataArray, ci_prob: float, sample_dims) -> xr.DataArray:
    """Equal-tailed interval of ``draws`` over ``sample_dims``, on a ``ci_bound`` dim.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from bayeval.posterior import credible_interval
    >>> draws = xr.DataArray(np.arange(101.0).reshape(1, 101), dims=("chain", "draw"))
    >>> credible_interval(draws, 0.9, ["chain", "draw"]).round(9).values.tolist()
    [5.0, 95.0]
    """
    alpha = 1 - ci_prob
    q = draws.quantile([alpha / 2, 1 - alpha / 2], dim=sample_dims)
    return (
        q.rename(quantile="ci_bound")
        .assign_coords(ci_bound=["lower", "upper"])
        .transpose(..., "ci_bound")
    )


class Posterior:
    """A fitted model's posterior: the DataTree, its validation and the metric draws.

    :class:`~bayeval.results.Results` adds the analyses as methods; the functions in
    :mod:`bayeval.analyses` take a ``Posterior``. Build with :func:`bayeval.fit` or
    :func:`bayeval.load`.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[9, 1, 10, 0, 7, 3]], trials=10, systems=["A"])
    >>> res = be.fit(data, draws=100, chains=2, seed=0, model="hierarchical")
    >>> res.draws("pass@k", 1, "population").dims
    ('chain', 'draw', 'system')
    """

    def __init__(self, tree: xr.DataTree):
        problems = [f"missing group {g!r}" for g in _REQUIRED_GROUPS if g not in tree.children]
        problems += [f"missing attribute {a!r}" for a in _REQUIRED_ATTRS if a not in tree.attrs]
        if tree.to_dataset().coords:
            problems.append("the root holds coordinates (children would inherit them)")
        if problems:
            raise ValueError("not a bayeval results tree: " + "; ".join(problems))
        tree = _groups.upgrade(tree)  # a tree of the first layout (no constant_data) to today's
        for node in tree.subtree:
            for var in node.variables.values():
                var.values.flags.writeable = False
        self._tree = tree
        self._cache: dict[tuple, xr.DataArray] = {}
        self._model = get_model(tree.attrs["model"])

    # -- plain facts ---------------------------------------------------------------------------
    @property
    def tree(self) -> xr.DataTree:
        """The underlying DataTree.

        A copy whose arrays are read-only, so these results never change.
        """
        return self._tree.copy()

    def _group(self, name: str) -> xr.Dataset:
        """One group of the tree (``"/"``: the root, for its attrs), as a read-only view.

        For the analyses, which read groups on every call: :attr:`tree` copies the whole tree
        (about a quarter of ``compare_all``'s time when they read through it), this does not.
        The view refuses assignment and its arrays are read-only; its attrs are the tree's
        own, to read only.
        """
        return self._tree[name].dataset

    @property
    def data(self):
        """The input counts as :class:`~bayeval.EvalData`."""
        return EvalData(dataset_of(self._tree))

    @property
    def model(self) -> str:
        """The name of the fitted model (``fit(..., model=name)``)."""
        return self._tree.attrs["model"]

    @property
    def estimands(self) -> tuple[str, ...]:
        """The estimands the fitted model answers (``"tasks"``, ``"population"``)."""
        return self._model.estimands

    @property
    def systems(self) -> list:
        """The system labels of the data, in the order of its ``system`` dim."""
        return self._tree["constant_data"].coords["system"].values.tolist()

    @property
    def diagnostics(self) -> dict:
        """Convergence summary of MCMC fits (empty for the grid and conjugate engines).

        The worst r-hat, bulk and tail ESS over the sampled parameters, each with the parameter that
        has it (``max_rhat_parameter``, ``min_ess_bulk_parameter``, ``min_ess_tail_parameter``: a
        name, with its labels in brackets where it has dimensions), the divergences and the lowest
        BFMI.
        """
        return json.loads(self._tree.attrs.get("diagnostics", "{}"))

    # -- estimands -----------------------------------------------------------------------------
    def _check_estimand(self, estimand):
        validate_choice("estimand", estimand, ESTIMANDS)
        if estimand not in self.estimands:
            raise ValueError(
                f"model {self.model!r} supports estimand in {list(self.estimands)}; "
                f"got {estimand!r}. Its tasks share nothing, so a new task's rate is only the "
                "prior: fit model='hierarchical' for the population estimand"
            )

    def _cluster_options(self, estimand, clusters, weighting) -> dict:
        """Validate ``clusters``/``weighting`` and return the model's keyword arguments."""
        validate_choice("weighting", weighting, ("task", "cluster"))
        # the paired models are the ones with cluster and cluster-by-system effects
        if not self._model.paired:
            if clusters is not None or weighting != "task":
                raise ValueError(
                    f"clusters= and weighting= need a paired model (logit_normal, "
                    f"fractional, zoib); this fit is {self.model!r}"
                )
            return {}
        has_clusters = "cluster" in self._tree["constant_data"].coords
        if estimand == "tasks":
            if clusters is not None:
                raise ValueError("clusters= applies to estimand='population'")
            return {}
        if clusters is None:  # what the clusters support: a new one only with enough of them
            clusters = default_clusters(self._tree["constant_data"].to_dataset()).clusters
        validate_choice("clusters", clusters, ("new", "observed"))
        if clusters == "observed" and not has_clusters and weighting == "cluster":
            raise ValueError("weighting='cluster' needs task clusters")
        if clusters == "new":  # a new cluster is one draw of the clusters' distribution
            weighting = "cluster"
        return {"clusters": clusters, "weighting": weighting}

    def _validate_metric(self, metric, tau, k=1):
        """``(metric, tau)`` checked against what this model estimates.

        A model of scores (``metrics`` attribute) estimates the mean score only; the others binary
        metrics, and the mean score of data whose scores are all 0 or 1 (pass@1, which it is).
        """
        own = getattr(self._model, "metrics", None)
        if own is None:
            if metric == "mean" and self.data.has_scores:
                if tau is not None or not np.array_equal(np.ravel(k), [1]):
                    raise ValueError(
                        f"metric='mean' has no k or tau (leave them at their "
                        f"defaults); got k={k!r}, tau={tau!r}"
                    )
                return "pass@k", None
            if metric == "mean":
                raise ValueError(
                    f"metric 'mean' is the mean of partial-credit scores, "
                    f"estimated by model='fractional' or 'zoib' (data built with score=); this "
                    f"fit is {self.model!r}: use metric='pass@k' with k=1"
                )
            return validate_metric(metric, tau)
        binary = metric != "mean"
        if (
            metric not in own
            or tau is not None
            or (binary and not np.array_equal(np.ravel(k), [1]))
        ):
            raise ValueError(
                f"model {self.model!r} estimates the mean score (metric='mean'; 'pass@k' at "
                f"k=1 reads the same); got metric={metric!r}, k={k!r}"
                f"{'' if tau is None else f', tau={tau!r}'}. pass@k for k > 1, pass^k, "
                "G-pass@k and consistency are metrics of 0/1 outcomes: threshold the scores "
                "into a success= column and fit a binary model for them"
            )
        if not np.array_equal(np.ravel(k), [1]):
            raise ValueError(f"metric='mean' has no k (leave k at its default); got k={k!r}")
        return metric, None

    def draws(
        self,
        metric: str,
        k,
        estimand: str,
        clusters=None,
        weighting: str = "task",
        shared=None,
        tau=None,
        systems=None,
    ) -> xr.DataArray:
        """Draws of ``metric`` over ``(chain, draw, system[, k])``.

        Every readout (compare, summary, crosscheck, plots) is a function of these draws: they
        are computed once per fit, estimand and system, then read from a cache.

        Parameters
        ----------
        metric : {"pass@k", "pass^k", "g-pass@k", "consistency", "mean"}
        k : int or list of int
            A list adds a ``k`` dim.
        estimand : {"population", "tasks"}
        clusters : {"new", "observed"}, optional
            Population estimand of a model with clusters: a new cluster, or these clusters.
            Default: what the clusters support (:func:`bayeval.data.clusters.default_clusters`:
            a new cluster with ten or more clusters and none very small, else these clusters).
        weighting : {"task", "cluster"}, default "task"
        shared : array of bool, optional
            Tasks estimand over these tasks only (a mask over the task dim).
        tau : float, optional
            G-pass@k's threshold.
        systems : list, optional
            The systems asked for, in that order (default all).

        Returns
        -------
        xarray.DataArray
        """
        asked = metric
        metric, tau = self._validate_metric(metric, tau, k)
        self._check_estimand(estimand)
        options = self._cluster_options(estimand, clusters, weighting)
        ks, scalar = metric_ks(metric, k)
        self._warn_extrapolation(ks, metric)
        mask = None if shared is None else tuple(np.asarray(shared, bool).tolist())
        key = (metric, tau, estimand, tuple(ks.tolist()), tuple(sorted(options.items())), mask)
        wanted = self.systems if systems is None else list(systems)
        cached = self._cache.get(key)
        have = set() if cached is None else set(cached["system"].values.tolist())
        missing = [label for label in wanted if label not in have]
        if missing:
            # every readout (compare, summary, crosscheck, plots) is a function of these draws:
            # computed once per fit, estimand and system, then read from here; a model whose
            # systems' draws do not depend on each other computes only the systems asked for
            chosen = {"systems": missing} if getattr(self._model, "subsets", False) else {}
            if estimand == "population":
                fresh = self._model.population(self._tree, metric, ks, tau=tau, **options, **chosen)
            elif shared is not None:
                fresh = self._model.tasks(
                    self._tree, metric, ks, shared=np.asarray(shared), tau=tau, **chosen
                )
            else:
                fresh = self._model.tasks(self._tree, metric, ks, tau=tau, **chosen)
            if cached is not None:
                fresh = fresh.sel(
                    system=[label for label in fresh["system"].values.tolist() if label not in have]
                )
                fresh = xr.concat([cached, fresh], dim="system")
            present = set(fresh["system"].values.tolist())
            cached = fresh.sel(system=[label for label in self.systems if label in present])
            cached.values.flags.writeable = False
            self._cache[key] = cached
        assert cached is not None  # every system asked for was cached or computed above
        values = cached.copy(deep=False)
        if systems is not None or len(wanted) != cached.sizes["system"]:
            values = values.sel(system=wanted)
        values.attrs = {
            "metric": asked,
            "estimand": estimand,
            "model": self.model,
            **options,
            **({} if tau is None else {"tau": tau}),
        }
        values.name = asked
        return values.isel(k=0) if scalar else values

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

    @property
    def _paired(self) -> bool:
        """Whether this model's comparisons pair systems that share tasks (for attrs)."""
        return self._model.paired

    @property
    def _paired_note(self) -> str:
        """How this model's comparisons treat systems that share tasks, in words."""
        if self._paired:
            return f"the {self.model} model pairs systems on their shared tasks"
        return (
            f"the {self.model} model treats systems independently (unpaired); "
            "model='logit_normal', the default for systems on shared tasks, pairs them"
        )

    def _single_metric(self, caller, metric, k, estimand, clusters, weighting, tau=None):
        """The metric's draws at one k and without missing bounds, or a clear refusal."""
        values = self.draws(metric, k, estimand, clusters, weighting, tau=tau)
        if "k" in values.dims or "missing_bound" in values.dims:
            raise ValueError(
                f"{caller} takes one k and no missing bounds (use compare for the "
                "crossing bounds of one pair)"
            )
        return values

    def _warn_extrapolation(self, ks, metric):
        ds = dataset_of(self._tree)
        trials = ds["trials"].values
        if "judge_u1" in ds.data_vars:  # judged data: every judged attempt has a true outcome
            unlabelled = (ds["judge_u1"] + ds["judge_u0"]).isel(judge=0).sum("label_stratum")
            trials = trials + unlabelled.transpose(*ds["trials"].dims).values
        smallest = int(trials[trials > 0].min())
        if ks.max() > smallest and smallest > 1:
            warnings.warn(
                f"{metric} at k={int(ks.max())} goes beyond the {smallest} trial(s) observed "
                "for some tasks: the model extrapolates there",
                BayevalWarning,
                stacklevel=4,
            )

    # -- persistence and display ---------------------------------------------------------------
    def log_likelihood(self, *, by: str = "task") -> xr.Dataset:
        """Each task's log-likelihood per draw, joint over the systems that ran it.

        Read from the ``log_likelihood`` group where the fit stored it, computed otherwise
        (``fit`` stores it only when it is small and quick: ``attrs["log_likelihood_note"]``
        says why it did not). Tasks with the same counts in every system (and the same
        stratum and cluster) have the same log-likelihood in every draw: ``by="pattern"``
        returns it once per distinct count pattern, in memory that grows with the patterns
        rather than the tasks (with 10 trials, at most 66 per population for one system).

        Parameters
        ----------
        by : {"task", "pattern"}, default "task"
            ``"task"``: ``task_total (chain, draw, task)``, as in the ``log_likelihood``
            group. ``"pattern"``: ``task_total (chain, draw, pattern)``, each pattern's
            ``multiplicity`` (its tasks) and each task's pattern, ``task_pattern (task)``.

        Returns
        -------
        xarray.Dataset

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([3, 5, 3, 10, 5, 3], trials=10)
        >>> res = be.fit(data, draws=100, chains=2, seed=0)
        >>> by_pattern = res.log_likelihood(by="pattern")
        >>> by_pattern["multiplicity"].values.tolist()
        [3, 2, 1]
        >>> per_task = by_pattern["task_total"].isel(pattern=by_pattern["task_pattern"])
        >>> per_task.drop_vars("pattern").identical(res.log_likelihood()["task_total"])
        True
        """
        validate_choice("by", by, ("task", "pattern"))
        if by == "task" and "log_likelihood" in self._tree.children:
            return self._tree["log_likelihood"].to_dataset()
        found = (_groups.log_likelihood if by == "task" else _groups.log_likelihood_by_pattern)(
            self._tree
        )
        if found is None:
            raise ValueError(
                "a log-likelihood is not defined under missing='bounds' (two data sets, one "
                "per bound)"
            )
        return found

    def with_log_likelihood(self) -> Posterior:
        """These results with the ``log_likelihood`` group.

        The group holds each task's log-likelihood, joint over the systems that ran it, for
        ``arviz_stats.loo`` and ``arviz_stats.compare``.

        ``fit`` stores it unless it is large or its quadrature would take long
        (``attrs["log_likelihood_note"]`` says which); this adds it on demand.
        :meth:`log_likelihood` returns it without the tree, or by count pattern.

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[3, 5, 1, 8], [6, 9, 2, 9]], trials=10, systems=["A", "B"])
        >>> res = be.fit(data, model="hierarchical", draws=100, chains=2, seed=0,
        ...              log_likelihood=False)
        >>> res.with_log_likelihood().tree["log_likelihood"]["task_total"].dims
        ('chain', 'draw', 'task')
        """
        if "log_likelihood" in self._tree.children:
            return self
        loglik = self.log_likelihood()
        tree = self._tree.copy()
        tree["log_likelihood"] = xr.DataTree(loglik)
        tree.attrs = {k: v for k, v in tree.attrs.items() if k != "log_likelihood_note"}
        return type(self)(tree)

    def to_netcdf(self, path) -> None:
        """Write the tree to a netCDF file (h5netcdf engine); read back with :func:`load`.

        The file round-trips exactly: object (``str``) label coordinates come back as object
        arrays, and attributes that netCDF cannot hold as they are (``int``, ``float``, ``bool``,
        lists, dicts, ``None``) are written as JSON and decoded by :func:`load`. The root
        attribute ``bayeval_checksum`` holds a SHA-256 of every variable's values and every
        string attribute, in a fixed order, which :func:`load` verifies.

        The file is written beside ``path`` under a temporary name and renamed onto it once
        complete: a write that fails leaves a file already at ``path`` as it was.

        Examples
        --------
        >>> import tempfile, os, bayeval as be
        >>> res = be.fit(be.from_counts([[9, 1, 10]], trials=10), draws=50, chains=1, seed=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "fit.nc")
        >>> res.to_netcdf(path)
        >>> be.load(path).tree.identical(res.tree)
        True
        """
        tree = _encode_tree(self._tree)
        with atomic_path(path) as temporary:
            tree.to_netcdf(temporary, engine="h5netcdf")

    def __repr__(self) -> str:
        """The model, sampler, data sizes, diagnostics and the first systems' pass@1."""
        attrs = self._tree.attrs
        obs = self._tree["constant_data"]
        lines = [
            f"bayeval {type(self).__name__}: model={attrs['model']!r}, "
            f"sampler={attrs['sampler']!r}, "
            f"{attrs['chains']} chain(s) x {attrs['draws']} draws, seed={attrs['seed']}",
            f"  {obs.sizes['system']} system(s) x {obs.sizes['task']} task(s); "
            f"missing policy: {attrs['missing_policy']}; estimands: {list(self.estimands)}",
        ]
        if self.diagnostics:
            diag = self.diagnostics
            lines.append(
                "  diagnostics: "
                + ", ".join(
                    f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in diag.items()
                )
            )
        estimand = "population" if "population" in self.estimands else "tasks"
        draws = self.draws("pass@k", 1, estimand)
        interval = credible_interval(draws, 0.95, ["chain", "draw"])
        lines.append(f"  pass@1 ({estimand}), posterior mean [95% interval]:")
        for system in self.systems[:10]:
            mean = draws.sel(system=system).mean(["chain", "draw"]).values
            lo = interval.sel(system=system, ci_bound="lower").values
            hi = interval.sel(system=system, ci_bound="upper").values
            body = "; ".join(
                f"{m:.3f} [{a:.3f}, {b:.3f}]"
                for m, a, b in zip(
                    np.atleast_1d(mean), np.atleast_1d(lo), np.atleast_1d(hi), strict=True
                )
            )
            lines.append(f"    {system}: {body}")
        if len(self.systems) > 10:
            lines.append(f"    ... {len(self.systems) - 10} more")
        return "\n".join(lines)


# -- netCDF files ------------------------------------------------------------------------------
_CHECKSUM_ATTR = "bayeval_checksum"
_ENCODING_ATTR = "bayeval_encoding"
_FORMAT_ATTR = "bayeval_format"  # the layout of the groups (_groups.FORMAT); absent: 1
_JSON_ATTR_TYPES = (bool, int, float, list, tuple, dict, type(None))
# Variables whose values have a known range (checked by ``load``), by name.
_PROBABILITIES = ("mu", "p", "extreme_share")
#: Counts a fit of scores holds as sums of scores on the count grid.
_SCORE_SUMS = ("successes", "sampled_successes")
_COUNTS = (
    "successes",
    "sampled_successes",
    "trials",
    "sampled_trials",
    "attempts",
    "status_counts",
    "count_histogram",
    "score_n0",
    "score_n1",
    "score_nmid",
)
_COUNT_GROUPS = (
    "/observed_data",
    "/constant_data",
    "/posterior_predictive",
    "/posterior_predictive_stats",
)


def _node_datasets(tree: xr.DataTree) -> dict:
    return {node.path: node.to_dataset(inherit=False) for node in tree.subtree}


def _checksum(datasets: dict) -> str:
    """SHA-256 over every node's variables and string attributes.

    The variables by name, dtype, shape and values; in sorted order of node path and name.
    """
    digest = hashlib.sha256()

    def update(*parts):
        for part in parts:
            digest.update(part if isinstance(part, bytes) else str(part).encode())
            digest.update(b"\x00")

    for path in sorted(datasets):
        ds = datasets[path]
        for name in sorted(str(k) for k in ds.attrs):
            if name != _CHECKSUM_ATTR and isinstance(ds.attrs[name], str):
                update("attr", path, name, ds.attrs[name])
        for name in sorted(str(k) for k in ds.variables):
            values = ds.variables[name].values
            if values.dtype.kind in "OUS":
                body = json.dumps(
                    [v if isinstance(v, str) else repr(v) for v in values.ravel().tolist()]
                ).encode()
                kind = "labels"
            else:
                body, kind = np.ascontiguousarray(values).tobytes(), values.dtype.str
            update("var", path, name, kind, values.shape, body)
    return digest.hexdigest()


def _encode_tree(tree: xr.DataTree, version: str | None = str(_groups.FORMAT)) -> xr.DataTree:
    """A copy of the tree that netCDF writes and :func:`_decode_tree` reads back unchanged.

    ``version`` is the layout recorded (None: none, as format 1 files have it).
    """
    datasets: dict[str, xr.Dataset] = {}
    encoding: dict[str, dict[str, list[str]]] = {"object_variables": {}, "json_attrs": {}}
    for path, ds in _node_datasets(tree).items():
        ds = ds.copy()
        objects = sorted(str(k) for k, v in ds.variables.items() if v.dtype == object)
        if objects:
            encoding["object_variables"][path] = objects
        as_json = sorted(str(k) for k, v in ds.attrs.items() if isinstance(v, _JSON_ATTR_TYPES))
        if as_json:
            encoding["json_attrs"][path] = as_json
            ds.attrs = {k: json.dumps(v) if k in as_json else v for k, v in ds.attrs.items()}
        datasets[path] = ds
    datasets["/"].attrs[_ENCODING_ATTR] = json.dumps(encoding)
    if version is not None:
        datasets["/"].attrs[_FORMAT_ATTR] = version
    datasets["/"].attrs[_CHECKSUM_ATTR] = _checksum(datasets)
    return xr.DataTree.from_dict(datasets)


def _decode_tree(tree: xr.DataTree, path) -> xr.DataTree:
    """Undo :func:`_encode_tree`, verifying the checksum, in today's layout.

    Files written before bayeval wrote one load with a note instead; files of an earlier
    layout are upgraded (:func:`bayeval.models._groups.upgrade`).
    """
    datasets = _node_datasets(tree)
    root = datasets["/"].attrs
    checksum = root.pop(_CHECKSUM_ATTR, None)
    encoding = root.pop(_ENCODING_ATTR, None)
    version = root.pop(_FORMAT_ATTR, None)
    if version is not None and (not str(version).isdigit() or int(version) > _groups.FORMAT):
        raise ValueError(
            f"{path}: written in results format {version!r}, which this bayeval (format "
            f"{_groups.FORMAT}) cannot read: upgrade bayeval"
        )
    try:
        encoding = json.loads(encoding) if encoding is not None else None
        if encoding is not None and not isinstance(encoding, dict):
            raise ValueError("not a JSON object")
    except ValueError as err:
        raise ValueError(
            f"{path}: attribute {_ENCODING_ATTR!r} is damaged ({err}); the file "
            "is not a readable bayeval results file"
        ) from None
    dated = [  # before decoding, which reads an object array's dates as integers
        (node, name)
        for node, ds in datasets.items()
        for name, coord in ds.coords.items()
        if coord.dtype.kind in "Mm"
    ]
    if encoding is not None:
        for node, names in encoding.get("object_variables", {}).items():
            ds = datasets.get(node)
            if ds is None:
                continue
            coords = {n: ds.variables[n].astype(object) for n in names if n in ds.coords}
            data_vars = {n: ds[n].astype(object) for n in names if n in ds.data_vars}
            datasets[node] = ds.assign_coords(coords).assign(data_vars)
        for node, names in encoding.get("json_attrs", {}).items():
            attrs = datasets[node].attrs if node in datasets else {}
            for name in names:
                try:
                    attrs[name] = json.loads(attrs[name])
                except (KeyError, TypeError, ValueError):
                    raise ValueError(
                        f"{path}: attribute {name!r} of group {node!r} is missing "
                        "or damaged (it should hold JSON)"
                    ) from None
    if checksum is None:
        warnings.warn(
            f"{path} holds no checksum (written by a bayeval that did not store "
            "one), so damage to its arrays cannot be detected: only the value ranges "
            "were checked. Save it again with to_netcdf to add one.",
            BayevalWarning,
            stacklevel=3,
        )
    else:
        encoded = _encode_tree(xr.DataTree.from_dict(datasets), version)
        if encoded.attrs[_CHECKSUM_ATTR] != checksum:
            _refuse_date_labels(dated, path)
            raise ValueError(
                f"{path}: the checksum does not match the file's contents (stored "
                f"{checksum[:12]}..., computed "
                f"{encoded.attrs[_CHECKSUM_ATTR][:12]}...): the file is damaged "
                "or was changed after to_netcdf wrote it; refit or restore a copy"
            )
    for node, ds in datasets.items():
        _check_ranges(ds, node, path)
    return _groups.upgrade(xr.DataTree.from_dict(datasets))


def _refuse_date_labels(dated: list, path) -> None:
    """Name date labels as the reason a checksum does not match, rather than damage.

    Older versions accepted date labels; netCDF reads dates back at another resolution, or
    as other objects than those written, so the checksum cannot match (nor the labels).
    """
    if dated:
        node, name = dated[0]
        raise ValueError(
            f"{path}: coordinate {name!r} of group {node!r} holds dates or durations as "
            "labels, written before such labels were refused; the file is not damaged, "
            "but these labels cannot be read back exactly (labels are str, int or float): "
            "rebuild the data with them as text (for example df[column].astype(str)) "
            "and fit again"
        )


def _check_ranges(ds: xr.Dataset, node: str, path) -> None:
    """Refuse values no bayeval fit can hold, naming the variable, group and file."""

    def fail(name, rule, bad):
        var = ds[name]
        where = np.argwhere(np.asarray(bad))[:3].tolist()
        examples = np.asarray(var.values)[np.asarray(bad)][:3].tolist()
        raise ValueError(
            f"{path}: variable {name!r} of group {node!r} must be {rule}; "
            f"{int(np.sum(bad))} value(s) are not (for example {examples} at "
            f"indices {where} of dims {list(var.dims)}): the file is damaged"
        )

    for name in ds.data_vars:
        values = ds[name].values
        if values.dtype.kind not in "biuf":
            continue
        if name in _COUNTS and node in _COUNT_GROUPS:
            # a fit of scores holds each cell's sum of scores on the count grid (fractional)
            grid = COUNT_GRID if name in _SCORE_SUMS and "score_sum" in ds.data_vars else 1
            if values.dtype.kind == "f":
                scaled = values * grid
                bad = (
                    ~np.isfinite(values) | (values < 0) | (np.abs(scaled - np.round(scaled)) > 1e-6)
                )
            else:
                bad = values < 0
            if bad.any():
                rule = (
                    "non-negative whole numbers"
                    if grid == 1
                    else f"non-negative multiples of 1/{grid}"
                )
                fail(name, rule, bad)
        elif name in _PROBABILITIES:
            bad = (values < 0) | (values > 1)
            if name != "extreme_share":  # NaN where a system has one trial per task
                bad |= np.isnan(values)
            if bad.any():
                fail(name, "a probability in [0, 1]", bad)
        elif name in ("kappa", "phi") or str(name).startswith("sigma"):
            bad = ~(values > 0)
            if bad.any():
                fail(name, "positive (a concentration or standard deviation)", bad)
    if "successes" in ds.data_vars and "trials" in ds.data_vars and node != "/posterior_predictive":
        successes, trials = xr.broadcast(ds["successes"], ds["trials"])
        bad = (successes > trials).values
        if bad.any():
            fail("successes", "at most trials", bad)
    if "trials" in ds.data_vars and "attempts" in ds.data_vars:
        bad = (ds["trials"] > ds["attempts"]).values
        if bad.any():
            fail("trials", "at most attempts", bad)


def read_tree(path) -> xr.DataTree:
    """Read and verify a tree written by :meth:`Posterior.to_netcdf` (see :func:`bayeval.load`).

    The file's checksum is verified and the value ranges checked (counts non-negative whole
    numbers with successes at most trials, probabilities in [0, 1], concentrations and standard
    deviations positive); every error names the file. A file written before bayeval stored a
    checksum loads with a :class:`~bayeval.BayevalWarning` saying its arrays cannot be verified.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such results file")
        raise ValueError(f"{path}: not a file (a bayeval results file is one netCDF file)")
    try:
        with xr.open_datatree(path, engine="h5netcdf") as tree:
            tree = tree.load()
    except OSError as err:
        raise ValueError(
            f"{path}: not a readable netCDF4/HDF5 file, as Results.to_netcdf "
            f"writes ({type(err).__name__}: {err})"
        ) from None
    except Exception as err:  # h5py/h5netcdf raise several types for damaged files
        raise ValueError(
            f"{path}: the file could not be read as bayeval results ({type(err).__name__}: {err})"
        ) from None
    return _decode_tree(tree, path)
