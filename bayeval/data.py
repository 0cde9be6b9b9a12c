"""Evaluation data: tidy rows -> validated ``(system, task)`` counts with statuses and a policy.

Trials within a task are exchangeable, so a ``(system, task)`` cell is summarised by its counts:
successes among valid trials, and how many attempts ended with each status. Everything downstream
(estimators, bootstraps, models) works on these count arrays, never on per-episode rows.

Statuses
--------
``ok``          a recorded, valid outcome;
``invalid``     the output could not be scored;
``timeout``     the episode ran out of time;
``error``       environment or infrastructure failure;
``no_verdict``  no judge/verifier outcome was recorded;
``not_run``     a planned trial that has no row at all.

A row whose outcome is recorded is ``ok`` whatever the source's raw status says, unless the user
maps that raw status to a non-ok status; a row with no recorded outcome takes its mapped status,
or ``no_verdict``. A raw status column is used only through ``status_map`` or when its values
already are bayeval statuses.

Missing-outcome policies (``missing=``), required whenever a non-ok status is present:
``"fail"`` counts every non-ok attempt as a failure (end to end); ``"exclude"`` drops non-ok
attempts (conditional on a verdict; a cell left with no valid trial leaves the analysis and is
listed in :attr:`EvalData.excluded`); ``"bounds"`` keeps both extremes on a ``missing_bound`` dim
(``lower``: missing outcomes as failures, ``upper``: as successes).
"""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import describe_rows, describe_values, validate_choice

__all__ = ["STATUSES", "MISSING_POLICIES", "EvalData", "from_frame", "from_counts", "read_csv"]

STATUSES = ("ok", "invalid", "timeout", "error", "no_verdict", "not_run")
MISSING_POLICIES = ("fail", "exclude", "bounds")
_MAX_COUNT = 1e12
_COVARIATE_VARS = (
    "covariate_count",
    "covariate_sum",
    "covariate_sumsq",
    "covariate_positive",
    "covariate_logsum",
    "covariate_logsumsq",
)
#: Per ``(system, task)`` sufficient statistics of the ``ok`` attempts' scores (``score=``).
SCORE_VARS = (
    "score_n0",
    "score_n1",
    "score_nmid",
    "score_sum",
    "score_sumsq",
    "score_sumlog",
    "score_sumlog1m",
)
#: Per-attempt durations (``latency=``): seconds and status code over ``(system, task, attempt)``,
#: NaN and -1 where a cell has fewer attempts than the longest cell (or no duration recorded).
LATENCY_VARS = ("latency", "latency_status")
_OK, _NO_VERDICT, _NOT_RUN = 0, STATUSES.index("no_verdict"), STATUSES.index("not_run")
_POLICY_HELP = (
    "'fail' (every non-ok attempt counts as a failure: the end-to-end rate), "
    "'exclude' (drop non-ok attempts: the rate given a verdict), "
    "'bounds' (report both extremes: missing as failures and as successes)"
)


class EvalData:
    """Validated evaluation counts over ``(system, task)``.

    Build one with :func:`from_frame`, :func:`from_counts`, :func:`read_csv` or
    :func:`bayeval.datasets.load`. The underlying :class:`xarray.Dataset` (``.dataset``) holds
    ``successes`` and ``trials`` (the trials the policy uses), ``attempts`` (trials attempted:
    every status but ``not_run``) and ``status_counts`` (over ``status``), with task coordinates ``cluster`` and ``stratum``
    when given. Under ``missing="bounds"``, ``successes`` has a ``missing_bound`` dim.
    Its arrays are read-only: methods return new objects.

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([[3, 5, 0], [4, 5, 1]], trials=5, systems=["A", "B"])
    >>> data.systems
    ['A', 'B']
    >>> data.dataset["successes"].sum("task").values.tolist()
    [8, 10]
    """

    def __init__(self, dataset: xr.Dataset):
        for name in ("successes", "trials", "attempts", "status_counts"):
            if name not in dataset:
                raise ValueError(f"an EvalData dataset needs the variable {name!r}")
        # A deep copy first: the arrays may be the caller's (clusters=, strata=, labels), and
        # freezing them in place would make the caller's own arrays read-only.
        dataset = dataset.copy(deep=True)
        for var in dataset.variables.values():
            var.values.flags.writeable = False
        self._ds = dataset

    # -- basic facts ---------------------------------------------------------------------------
    @property
    def dataset(self) -> xr.Dataset:
        """The counts as a read-only :class:`xarray.Dataset`."""
        return self._ds

    @property
    def systems(self) -> list:
        """System labels, in order of first appearance."""
        return self._ds["system"].values.tolist()

    @property
    def tasks(self) -> pd.Index:
        """Task labels, in order of first appearance."""
        return self._ds.indexes["task"]

    @property
    def missing(self) -> str | None:
        """The missing-outcome policy, or ``None`` when every outcome is ``ok``."""
        policy = self._ds.attrs["missing_policy"]
        return None if policy == "none" else policy

    @property
    def has_clusters(self) -> bool:
        """Whether tasks carry a ``cluster`` coordinate."""
        return "cluster" in self._ds.coords

    @property
    def has_strata(self) -> bool:
        """Whether tasks carry a ``stratum`` coordinate."""
        return "stratum" in self._ds.coords

    @property
    def stratum_weights(self) -> dict | None:
        """Declared weight of each stratum (summing to one), or ``None`` without strata."""
        if not self.has_strata:
            return None
        return dict(json.loads(self._ds.attrs["stratum_weights"]))

    @property
    def harness(self) -> dict | None:
        """Harness digest of each system (``system -> digest``), or ``None`` when not recorded.

        Set by ``from_frame(..., harness=column)``; see :mod:`bayeval.harness`.
        """
        if "harness" not in self._ds.coords:
            return None
        return dict(zip(self.systems, self._ds["harness"].values.tolist()))

    @property
    def harness_configs(self) -> dict | None:
        """Harness configurations given to ``from_frame`` (``digest -> config``), or ``None``."""
        configs = json.loads(self._ds.attrs.get("harness_configs", "null"))
        if not configs:
            return None
        present = set(self._ds["harness"].values.tolist())
        return {d: c for d, c in configs.items() if d in present} or None

    @property
    def covariates(self) -> list:
        """Names of the per-attempt covariates given to ``from_frame(covariates=...)``."""
        if "covariate" not in self._ds.coords:
            return []
        return self._ds["covariate"].values.tolist()

    @property
    def has_latency(self) -> bool:
        """Whether per-attempt durations were given (``from_frame(..., latency=...)``)."""
        return "latency" in self._ds

    def latency_frame(self) -> pd.DataFrame:
        """One row per attempt with a recorded duration: system, task, attempt, status, seconds.

        ``attempt`` numbers the rows of a ``(system, task)`` cell in the order they came
        (from 0); attempts without a recorded duration are left out.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"], "success": [1, 0, 1],
        ...                    "seconds": [12.0, 30.5, 8.25]})
        >>> be.from_frame(df, latency="seconds").latency_frame()["seconds"].tolist()
        [12.0, 30.5, 8.25]
        """
        if not self.has_latency:
            raise ValueError("this data has no latency: pass latency= to be.from_frame")
        ds = self._ds
        seconds = ds["latency"].transpose("system", "task", "attempt").values
        codes = ds["latency_status"].transpose("system", "task", "attempt").values
        s_idx, t_idx, a_idx = np.nonzero(~np.isnan(seconds))
        return pd.DataFrame(
            {
                "system": ds["system"].values[s_idx],
                "task": ds["task"].values[t_idx],
                "attempt": a_idx.astype(np.int64),
                "status": np.asarray(STATUSES, dtype=object)[codes[s_idx, t_idx, a_idx]],
                "seconds": seconds[s_idx, t_idx, a_idx],
            }
        )

    @property
    def has_scores(self) -> bool:
        """Whether the outcomes are partial-credit scores (``from_frame(..., score=)``)."""
        return "score_n0" in self._ds

    @property
    def has_partial_credit(self) -> bool:
        """Whether some valid score lies strictly between 0 and 1 (binary models refuse such
        data: a score of 0.4 is neither a success nor a failure)."""
        return self.has_scores and bool(self._ds["score_nmid"].sum() > 0)

    def score_statistics(self) -> xr.Dataset:
        """Sufficient statistics of the scores under the missing-outcome policy.

        Per ``(system, task)``: ``n0``, ``n1`` and ``nmid`` (attempts scoring 0, 1 and strictly
        between), ``sum`` and ``sumsq`` (of the scores), ``sumlog`` and ``sumlog1m`` (of
        ``log y`` and ``log(1 - y)`` over the scores strictly between 0 and 1) and ``trials``.
        Under ``missing="fail"`` a non-ok attempt scores 0; under ``"bounds"`` the
        ``missing_bound`` dim holds both extremes (``lower``: 0, ``upper``: 1); under
        ``"exclude"`` non-ok attempts are left out. Binary data (``success=`` or counts) give
        ``n1`` = successes and ``n0`` = failures, with no interior scores.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"],
        ...                    "score": [0.5, 1.0, 0.0]})
        >>> stats = be.from_frame(df, score="score").score_statistics()
        >>> stats["sum"].values.tolist(), stats["nmid"].values.tolist()
        ([[1.5, 0.0]], [[1, 0]])
        """
        ds = self._ds
        ok = ds["status_counts"].sel(status="ok", drop=True)
        if self.has_scores:
            base = {name[len("score_") :]: ds[name] for name in SCORE_VARS}
        else:
            c = self.ok_successes()
            base = {
                "n0": ok - c,
                "n1": c,
                "nmid": xr.zeros_like(c),
                "sum": c.astype(float),
                "sumsq": c.astype(float),
                "sumlog": xr.zeros_like(c, dtype=float),
                "sumlog1m": xr.zeros_like(c, dtype=float),
            }
        missing = ds["status_counts"].sum("status") - ok
        policy = self.missing
        if policy == "fail":
            base["n0"] = base["n0"] + missing
        elif policy == "bounds":
            bound = xr.DataArray(["lower", "upper"], dims="missing_bound")
            upper = bound == "upper"
            base["n0"] = base["n0"] + missing * ~upper
            for name in ("n1", "sum", "sumsq"):
                base[name] = base[name] + missing * upper
        out = xr.Dataset(base)
        out["trials"] = out["n0"] + out["n1"] + out["nmid"]
        if policy == "bounds":
            out = out.assign_coords(missing_bound=["lower", "upper"]).transpose(
                "missing_bound", ...
            )
        return out

    @property
    def status_counts(self) -> pd.DataFrame:
        """Attempts per status for each system (``not_run``: planned trials with no row)."""
        table = self._ds["status_counts"].sum("task").to_pandas()
        table.columns.name = "status"
        return table

    @property
    def coverage(self) -> pd.Series:
        """Share of planned attempts with a valid (``ok``) outcome, per system."""
        counts = self._ds["status_counts"].sum("task")
        share = counts.sel(status="ok") / counts.sum("status")
        return share.to_pandas().rename("coverage")

    @property
    def excluded(self) -> pd.DataFrame:
        """Cells with no valid trial: under ``missing="exclude"`` they leave the analysis."""
        trials = self._ds["trials"].to_pandas()
        cells = trials.stack()
        cells = cells[cells == 0]
        return cells.index.to_frame(index=False)

    def fingerprint(self) -> str:
        """A SHA-256 hash of the labels, status counts and valid successes."""
        digest = hashlib.sha256()
        for name in ("system", "task", "status"):
            digest.update(json.dumps([str(v) for v in self._ds[name].values]).encode())
        for name in ("status_counts", "successes"):
            digest.update(np.ascontiguousarray(self._ds[name].values, dtype=np.int64).tobytes())
        if "harness" in self._ds.coords:
            digest.update(json.dumps(self._ds["harness"].values.tolist()).encode())
        for name in SCORE_VARS if self.has_scores else ():
            digest.update(np.ascontiguousarray(self._ds[name].values, dtype=float).tobytes())
        return digest.hexdigest()

    # -- derived data --------------------------------------------------------------------------
    def ok_successes(self) -> xr.DataArray:
        """Successes among ``ok`` attempts, whatever the policy."""
        successes = self._ds["successes"]
        if "missing_bound" in successes.dims:
            successes = successes.sel(missing_bound="lower", drop=True)
        return successes

    def with_missing(self, missing: str | None) -> EvalData:
        """The same outcomes under another missing-outcome policy.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"], "success": [1, None, 0]})
        >>> be.from_frame(df, missing="fail").with_missing("exclude").dataset["trials"].values
        array([[1, 1]])
        """
        counts = self._ds["status_counts"].values
        _check_policy(counts, missing)
        ds = _assemble(
            self.ok_successes().values,
            counts,
            missing,
            systems=self._ds["system"].values,
            tasks=self._ds["task"].values,
            task_coords={c: self._ds[c].values for c in ("cluster", "stratum") if c in self._ds},
            attrs=self._ds.attrs,
        )
        for name in ("harness", "recipe", "run"):  # per-system labels the policy keeps
            if name in self._ds.coords:
                ds = ds.assign_coords({name: ("system", self._ds[name].values)})
        names = [v for v in (*_COVARIATE_VARS, *SCORE_VARS, *LATENCY_VARS) if v in self._ds]
        if names:  # per attempt and status, or of ok attempts: the policy does not change them
            ds = ds.assign({v: self._ds[v] for v in names})
        return EvalData(ds)

    def crossed(self, candidate, baseline, bound: str) -> EvalData:
        """The two systems' counts with their missing outcomes crossed, for one bound of a
        paired comparison under ``missing="bounds"``: ``"lower"`` takes the candidate's missing
        outcomes as failures and the baseline's as successes, ``"upper"`` the reverse. One
        data set, so that a paired model fits both systems' crossed values jointly.

        Examples
        --------
        >>> import pandas as pd, bayeval as be
        >>> df = pd.DataFrame({"system": ["A", "A", "B", "B"], "task": ["t1", "t2"] * 2,
        ...                    "success": [1, None, None, 0]})
        >>> data = be.from_frame(df, missing="bounds")
        >>> data.crossed("B", "A", "lower").dataset["successes"].values.tolist()
        [[0, 0], [1, 1]]
        """
        if self.missing != "bounds":
            raise ValueError("crossed() is for data under missing='bounds'")
        if bound not in ("lower", "upper"):
            raise ValueError(f"bound must be 'lower' or 'upper'; got {bound!r}")
        other = "upper" if bound == "lower" else "lower"
        ds = self.sel(system=[candidate, baseline]).dataset
        c = ds["successes"].transpose("missing_bound", "system", "task")
        values = np.stack(
            [c.sel(missing_bound=bound).values[0], c.sel(missing_bound=other).values[1]]
        )
        out = ds.drop_vars("missing_bound").assign(successes=(("system", "task"), values))
        out.attrs = {
            **ds.attrs,
            "missing_policy": "fail",
            "crossed_bound": bound,
            "crossed_candidate": str(candidate),
        }
        return EvalData(out)

    def sel(self, system=None, task=None) -> EvalData:
        """A subset of systems and/or tasks (labels or lists of labels).

        Examples
        --------
        >>> import bayeval as be
        >>> data = be.from_counts([[3, 5], [4, 5]], trials=5, systems=["A", "B"])
        >>> data.sel(system="B").systems
        ['B']
        """
        indexers = {}
        for dim, labels in (("system", system), ("task", task)):
            if labels is None:
                continue
            labels = [labels] if np.ndim(labels) == 0 else list(labels)
            known = set(self._ds[dim].values.tolist())
            unknown = [x for x in labels if x not in known]
            if unknown:
                raise KeyError(f"unknown {dim} label(s) {describe_values(unknown)}")
            indexers[dim] = labels
        ds = self._ds.sel(indexers).copy(deep=True)
        if "stratum" in ds.coords:
            present = set(ds["stratum"].values.tolist())
            weights = {k: w for k, w in self.stratum_weights.items() if k in present}
            total = sum(weights.values())
            ds.attrs["stratum_weights"] = json.dumps([[k, w / total] for k, w in weights.items()])
        return EvalData(ds)

    def to_frame(self) -> pd.DataFrame:
        """One row per ``(system, task)`` with counts, attempts and status counts."""
        frame = self._ds[["successes", "trials", "attempts"]].to_dataframe()
        if "missing_bound" in self._ds["successes"].dims:
            frame = frame.unstack("missing_bound")
            frame.columns = [f"successes_{b}" if c == "successes" else c for c, b in frame.columns]
            frame = frame.loc[:, ~frame.columns.duplicated()]
        status = self._ds["status_counts"].to_dataframe()["status_counts"].unstack("status")
        status.columns = [f"n_{s}" for s in status.columns]
        frame = frame.join(status)
        if self.has_latency:  # recorded durations per cell (per attempt: latency_frame)
            frame = frame.join(
                self._ds["latency"]
                .notnull()
                .sum("attempt")
                .rename("n_latency")
                .to_dataframe()["n_latency"]
            )
        return frame.reset_index()

    def __repr__(self) -> str:
        ds = self._ds
        n_sys, n_task = ds.sizes["system"], ds.sizes["task"]
        trials = ds["attempts"].values
        lines = [
            f"EvalData: {n_sys} system(s) x {n_task} task(s), "
            f"{int(ds['status_counts'].sum())} planned attempts "
            f"(trials per cell {int(trials.min())}..{int(trials.max())})",
        ]
        if self.has_clusters:
            lines.append(f"  clusters: {len(np.unique(ds['cluster'].values))}")
        if self.has_strata:
            lines.append(f"  strata:   {self.stratum_weights}")
        if self.harness is not None:
            lines.append(f"  harness:  {len(set(self.harness.values()))} digest(s)")
        if self.has_scores:
            counts = [int(ds[f"score_{k}"].sum()) for k in ("n0", "nmid", "n1")]
            lines.append(f"  scores:   {counts[0]} at 0, {counts[1]} between, {counts[2]} at 1")
        if self.has_latency:
            seconds = ds["latency"].values
            seconds = seconds[~np.isnan(seconds)]
            median = f", median {np.median(seconds):.4g} s" if seconds.size else ""
            lines.append(f"  latency:  {seconds.size} recorded durations{median}")
        totals = ds["status_counts"].sum(("system", "task")).to_series()
        totals = {k: int(v) for k, v in totals.items() if v}
        lines.append(f"  statuses: {totals}")
        lines.append(f"  missing:  {self.missing}")
        return "\n".join(lines)


# -- construction ------------------------------------------------------------------------------
def require_valid_outcomes(data: EvalData, systems=None) -> None:
    """Refuse systems with no valid outcome at all (every attempt excluded by the policy).

    Under ``missing="exclude"`` a system whose every attempt is not ``ok`` keeps no outcome:
    a model would report its prior and a bootstrap nothing. Named here, before any fit.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> from bayeval.data import require_valid_outcomes
    >>> df = pd.DataFrame({"system": ["A", "B"], "task": ["t", "t"], "success": [None, 1],
    ...                    "status": ["timeout", "ok"]})
    >>> data = be.from_frame(df, status="status", missing="exclude")
    >>> require_valid_outcomes(data)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: under missing='exclude' system(s) ['A'] have no valid outcome: ...(A: {'timeout': 1}); ...
    """
    ds = data.dataset
    trials = ds["trials"]
    if systems is not None:
        trials = trials.sel(system=list(systems))
    per_system = trials.sum("task").values
    labels = trials["system"].values.tolist()
    empty = [s for s, total in zip(labels, per_system) if total == 0]
    if not empty:
        return
    counts = data.status_counts
    detail = "; ".join(
        f"{s}: { ({k: int(v) for k, v in counts.loc[s].items() if v}) }" for s in empty[:5]
    )
    who = (
        "no system has a valid outcome"
        if len(empty) == len(labels)
        else f"system(s) {empty} have no valid outcome"
    )
    raise ValueError(
        f"under missing={data.missing!r} {who}: every attempt is not ok ({detail}"
        f"{'; ...' if len(empty) > 5 else ''}); leave them out with "
        "data.sel(system=[...]) or choose missing='fail' or 'bounds'"
    )


def from_frame(
    df: pd.DataFrame,
    system: str | None = "system",
    task: str = "task",
    success: str | None = "success",
    *,
    system_name: str | None = None,
    successes: str | None = None,
    trials: str | None = None,
    trial: str | None = None,
    cluster: str | None = None,
    stratum: str | None = None,
    status: str | None = None,
    status_map: Mapping | None = None,
    missing: str | None = None,
    planned_trials: int | Mapping | None = None,
    stratum_weights: Mapping | None = None,
    harness: str | None = None,
    covariates=None,
    score: str | None = None,
    run: str | None = None,
    latency=None,
) -> EvalData:
    """Validate a tidy table and summarise it into ``(system, task)`` counts.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per ``(system, task, trial)`` outcome, or one row per ``(system, task)`` with
        counts (give ``successes=`` and ``trials=``). Never modified.
    system, task : str
        Column names of the system and task labels. ``system=None`` reads a table of one
        system that has no system column; ``system_name=`` then names it.
    system_name : str, optional
        The name of the one system when ``system=None`` (required then, and only then). A
        frame that has a ``"system"`` column is refused with ``system=None``: its rows may
        belong to several systems.
    success : str
        Column of 0/1 (or boolean) outcomes; an empty cell means no outcome was recorded.
    successes, trials : str, optional
        Columns of count rows: successes out of trials (all valid outcomes).
    trial : str, optional
        Column of trial ids; ``(system, task, trial)`` must then be unique.
    cluster, stratum : str, optional
        Task-level columns (repository/family; pre-declared stratum). A task must have one value.
    status : str, optional
        Column of statuses: bayeval statuses, or raw ones mapped with ``status_map``.
    status_map : mapping, optional
        Raw status -> bayeval status. A raw status left out means ``ok`` for a row with an
        outcome and ``no_verdict`` for a row without one (or itself, if it is a bayeval status).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy; required when any attempt is not ``ok``.
    planned_trials : int or mapping, optional
        Trials planned per task (an int, or task -> int). A cell with no rows is ``not_run`` for
        the planned number (default: the most common attempt count of that task across systems,
        the larger on ties). When given, cells with fewer attempts than planned also get the
        shortfall as ``not_run``.
    stratum_weights : mapping, optional
        Stratum -> declared weight (normalised to sum to one). Default: the observed share of
        tasks in each stratum.
    harness : str, optional
        Column identifying each row's harness: a digest (any non-empty string, normally
        :func:`bayeval.harness.digest` of the configuration) or the configuration itself as a
        mapping (digested here, and kept so that :func:`bayeval.harness.diff` can name the
        fields that differ). A system must be evaluated under one harness: a system whose rows
        carry several is refused (label each ``(system, harness)`` pair as its own system).
        Stored per system (:attr:`EvalData.harness`).
    covariates : list of str, optional
        Numeric per-attempt columns (cost, tokens, latency), outcome rows only. Each is stored
        per ``(system, task, status)``, so that the cost of a timed-out or failed attempt is
        counted under its status: ``covariate_count`` (attempts), ``covariate_sum``,
        ``covariate_sumsq`` (sum of squares), and over the positive values only
        ``covariate_positive`` (how many), ``covariate_logsum`` and ``covariate_logsumsq``
        (sums of logs and squared logs, the sufficient statistics of a log-normal), each over
        ``(covariate, system, task, status)``. Values must be finite, non-negative numbers
        (int, float, Fraction, Decimal; not booleans, complex numbers, dates or durations)
        and every row needs one: an empty cell is refused, naming the rows, because an
        unrecorded cost is not a zero cost (fill it explicitly, or drop the rows). Names are
        listed by :attr:`EvalData.covariates`.
    score : str, optional
        Column of partial-credit scores in [0, 1], one per attempt (row), instead of 0/1
        outcomes (``success=``; the two exclude each other, as do count rows). An empty cell
        means no score was recorded, as for ``success=``: it needs a non-ok status and a
        missing-outcome policy (under ``"fail"`` it scores 0). Scores must be real numbers
        (not booleans, text or dates), none outside [0, 1]; nothing is coerced. Stored per
        ``(system, task)`` over the ``ok`` attempts as :data:`SCORE_VARS` (see
        :meth:`EvalData.score_statistics`); ``successes`` counts the attempts with full credit
        (score 1). Fit with ``model="zoib"`` (the default where some score lies strictly
        between 0 and 1; scores all 0 or 1 are 0/1 outcomes and get the binomial models) or
        bootstrap with :func:`bayeval.bootstrap.mean_score`; the binary models refuse scores
        strictly between 0 and 1.
    run : str, optional
        Column of the training run (seed) each row's checkpoint came from; ``system`` then
        names the recipe (the checkpoint family). Each ``(system, run)`` pair is one system of
        the data, labelled ``"{system}/{run}"``, with coordinates ``recipe`` and ``run`` on
        ``system``; ``logit_normal`` gains a run spread within each recipe (``sigma_run``) and
        comparisons of recipes take ``runs="new"`` (new training seeds) or
        ``runs="observed"`` (these checkpoints): see :meth:`bayeval.Results.compare`. A
        recipe must have at least one run; run labels may repeat across recipes.
    latency : str or (str, str), optional
        Each attempt's duration, outcome rows only: a column of seconds (finite, non-negative
        numbers, or ``timedelta`` values), or a pair ``(start, end)`` of timestamp columns
        (datetimes, or ISO 8601 strings; the duration is ``end - start``). Both timestamps
        of a row must carry a UTC offset or neither (naive ones are read on one clock).
        An empty cell (both timestamps empty) means no duration was recorded for that
        attempt: it is kept as missing, never as zero, and left out of the latency
        quantiles. Refused, naming the column and rows: unparseable or wrongly typed values,
        one timestamp of a pair without the other, an end before its start, negative or
        non-finite seconds. Stored per attempt as ``latency`` (seconds) and
        ``latency_status`` (status code) over ``(system, task, attempt)``, padded with NaN
        and -1 to the longest cell; read with :meth:`EvalData.latency_frame` and
        :func:`bayeval.bootstrap.latency`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError, TypeError
        Naming the column, the first offending rows and what is allowed.

    Examples
    --------
    >>> import pandas as pd, bayeval as be
    >>> df = pd.DataFrame({"system": ["A"] * 4, "task": ["t1", "t1", "t2", "t2"],
    ...                    "success": [1, 0, 1, 1]})
    >>> data = be.from_frame(df)
    >>> data.dataset["successes"].values
    array([[1, 2]])

    A table of one system, without a system column:

    >>> one = pd.DataFrame({"task": ["t1", "t2", "t3"], "success": [1, 0, 1]})
    >>> data = be.from_frame(one, system=None, system_name="my-model")
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['my-model'], [[1, 0, 1]])

    Per-attempt costs, summed per ``(system, task, status)``:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"], "success": [1, 0, None],
    ...                    "status": ["ok", "ok", "timeout"], "cost": [0.5, 0.25, 2.0]})
    >>> data = be.from_frame(df, status="status", missing="fail", covariates=["cost"])
    >>> data.covariates
    ['cost']
    >>> sums = data.dataset["covariate_sum"].sel(covariate="cost", system="A")
    >>> sums.sel(status=["ok", "timeout"]).values.tolist()
    [[0.75, 0.0], [0.0, 2.0]]

    Per-attempt durations from start and end timestamps:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t2"], "success": [1, 0],
    ...                    "start": ["2025-07-11T20:35:00+00:00", "2025-07-11T20:40:00Z"],
    ...                    "end": ["2025-07-11T20:36:30+00:00", "2025-07-11T21:40:00Z"]})
    >>> be.from_frame(df, latency=("start", "end")).latency_frame()["seconds"].tolist()
    [90.0, 3600.0]

    Partial-credit scores:

    >>> df = pd.DataFrame({"system": "A", "task": ["t1", "t1", "t2"], "score": [0.5, 1, 0]})
    >>> data = be.from_frame(df, score="score")
    >>> data.dataset["score_sum"].values.tolist(), data.dataset["successes"].values.tolist()
    ([[1.5, 0.0]], [[1, 0]])
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__}")
    if run is not None:
        return _with_runs(df, system, task, success, run, locals())
    _check_system_name(df, system, system_name)
    count_rows = successes is not None or trials is not None
    if score is not None:
        if count_rows:
            raise TypeError(
                "score= gives one score per attempt (row); it does not combine with "
                "count rows (successes=, trials=)"
            )
        if success not in (None, "success"):
            raise TypeError(
                f"score= and success= are mutually exclusive: give 0/1 outcomes "
                f"(success={success!r}) or scores in [0, 1] (score={score!r}), "
                "not both"
            )
        success = score
    if count_rows:
        if successes is None or trials is None:
            raise TypeError("count rows need both successes= and trials= column names")
        for name, value in (("trial", trial), ("status", status), ("status_map", status_map)):
            if value is not None:
                raise TypeError(
                    f"{name}= does not apply to count rows (successes=, trials=), which hold "
                    "valid outcomes only; give outcome rows (success=) to use statuses"
                )
    elif status_map is not None and status is None:
        raise TypeError("status_map= needs status=, the column holding the raw statuses")
    covariates = _covariate_names(df, covariates, count_rows)
    latency_columns = _latency_names(df, latency, count_rows)

    names = {"system": system, "task": task} if system is not None else {"task": task}
    if count_rows:
        names.update(successes=successes, trials=trials)
    else:
        names["score" if score is not None else "success"] = success
    names.update(
        {
            k: v
            for k, v in (
                ("trial", trial),
                ("cluster", cluster),
                ("stratum", stratum),
                ("status", status),
                ("harness", harness),
            )
            if v is not None
        }
    )
    _check_columns(df, names)
    if len(df) == 0:
        raise ValueError("df has no rows; nothing to analyse")
    for role in ("system", "task", "trial", "cluster", "stratum"):
        if role in names:
            _check_labels(df[names[role]], names[role], df.index)
    if status is not None:
        _check_hashable(df[status], status, df.index)

    if system is None:
        sys_codes = np.zeros(len(df), dtype=np.int64)
        systems = np.array([system_name], dtype=object)
    else:
        sys_codes, systems = _labels(df, system)
    task_codes, tasks = _labels(df, task)
    system_key = [system] if system is not None else []
    n_sys, n_task = len(systems), len(tasks)
    if harness is not None:
        digests, configs = _harness_column(df, harness, sys_codes, systems)
    cell = sys_codes * n_task + task_codes
    n_status = len(STATUSES)

    if count_rows:
        c, n = _count_columns(df, successes, trials)
        _check_unique(df, [*system_key, task], "count rows")
        status_counts = np.zeros((n_sys * n_task, n_status), dtype=np.int64)
        status_counts[:, _OK] = np.bincount(cell, weights=n, minlength=n_sys * n_task)
        ok_successes = np.bincount(cell, weights=c, minlength=n_sys * n_task)
    else:
        outcome = _score_column(df, score) if score is not None else _outcome_column(df, success)
        if trial is not None:
            _check_not_missing(df, trial)
            _check_unique(df, [*system_key, task, trial], "outcome rows")
        codes = _status_codes(df, status, status_map, recorded=~np.isnan(outcome))
        status_counts = np.bincount(
            cell * n_status + codes, minlength=n_sys * n_task * n_status
        ).reshape(n_sys * n_task, n_status)
        ok = codes == _OK
        ok_successes = np.bincount(
            cell[ok],
            weights=outcome[ok] == 1 if score is not None else outcome[ok],
            minlength=n_sys * n_task,
        )
        if score is not None:
            score_vars = _score_stats(outcome[ok], cell[ok], (n_sys, n_task))
        covariate_vars = _covariate_stats(
            df, covariates, cell * n_status + codes, (n_sys, n_task, n_status)
        )
        if latency_columns is not None:
            latency_vars = _latency_arrays(
                _latency_seconds(df, latency_columns), codes, cell, (n_sys, n_task)
            )

    status_counts = status_counts.reshape(n_sys, n_task, n_status).astype(np.int64)
    ok_successes = np.rint(ok_successes).astype(np.int64).reshape(n_sys, n_task)
    status_counts[..., _NOT_RUN] += _not_run(status_counts.sum(-1), tasks, planned_trials)

    task_coords = {}
    for name, column in (("cluster", cluster), ("stratum", stratum)):
        if column is not None:
            task_coords[name] = _task_attribute(df, column, task, task_codes, n_task)
    _check_policy(status_counts, missing)
    attrs = {"stratum_weights": _stratum_weights(task_coords.get("stratum"), stratum_weights)}
    if harness is not None and configs:
        attrs["harness_configs"] = json.dumps(configs, sort_keys=True)
    ds = _assemble(ok_successes, status_counts, missing, systems, tasks, task_coords, attrs)
    if harness is not None:
        ds = ds.assign_coords(harness=("system", digests))
    if covariates:
        ds = ds.assign(covariate_vars).assign_coords(covariate=np.array(covariates, dtype=object))
    if score is not None:
        ds = ds.assign(score_vars)
    if latency_columns is not None:
        ds = ds.assign(latency_vars)
        ds.attrs["latency_columns"] = json.dumps(list(latency_columns))
    return EvalData(ds)


_CHECKPOINT = "__bayeval_checkpoint__"


def _with_runs(df, system, task, success, run, arguments) -> EvalData:
    """:func:`from_frame` with a run column: one system per ``(recipe, run)`` pair."""
    if system is None:
        raise TypeError("run= needs system=, the column of the recipe each run belongs to")
    _check_columns(df, {"system": system, "run": run})
    if _CHECKPOINT in df.columns:
        raise ValueError(f"column name {_CHECKPOINT!r} is reserved")
    for column in (system, run):
        _check_not_missing(df, column)
        _check_labels(df[column], column, df.index)
    recipes, runs = df[system].to_numpy(dtype=object), df[run].to_numpy(dtype=object)
    labels = np.array([f"{a}/{b}" for a, b in zip(recipes, runs)], dtype=object)
    pairs = pd.DataFrame(
        {
            "label": labels,
            "recipe": [_label_key(v) for v in recipes],
            "run": [_label_key(v) for v in runs],
        }
    ).drop_duplicates()
    clash = pairs["label"].duplicated(keep=False)
    if clash.any():
        raise ValueError(
            f"columns {system!r} and {run!r} give the same checkpoint label "
            f"{pairs['label'][clash].iloc[0]!r} to different (recipe, run) pairs; "
            "rename recipes or runs so that '{recipe}/{run}' is unique"
        )
    options = {
        k: arguments[k]
        for k in (
            "system_name",
            "successes",
            "trials",
            "trial",
            "cluster",
            "stratum",
            "status",
            "status_map",
            "missing",
            "planned_trials",
            "stratum_weights",
            "harness",
            "covariates",
            "score",
            "latency",
        )
    }
    data = from_frame(
        df.assign(**{_CHECKPOINT: labels}),
        system=_CHECKPOINT,
        task=task,
        success=success,
        **options,
    )
    first = {}
    for label, recipe, seed in zip(labels, recipes, runs):
        first.setdefault(label, (recipe, seed))
    order = data.dataset["system"].values
    ds = data.dataset.assign_coords(
        recipe=("system", np.array([first[v][0] for v in order], dtype=object)),
        run=("system", np.array([first[v][1] for v in order], dtype=object)),
    )
    ds.attrs["run_column"] = str(run)
    return EvalData(ds)


def _check_system_name(df: pd.DataFrame, system, system_name) -> None:
    """``system=None`` (one system, named ``system_name``) or a system column, not both."""
    if system is not None:
        if system_name is not None:
            raise TypeError(
                f"system_name= names the one system of a table without a system "
                f"column (system=None); here the systems come from column "
                f"{system!r} (got system_name={system_name!r})"
            )
        return
    if not isinstance(system_name, str) or not system_name.strip():
        raise TypeError(
            "system=None reads the table as one system: name it with "
            f"system_name= (a non-empty str); got system_name={system_name!r}"
        )
    if "system" in df.columns:
        raise ValueError(
            "system=None reads the table as one system, but the frame has a "
            "'system' column, whose rows may belong to several systems; give "
            "system='system', or drop the column first"
        )


def _harness_column(df, column, sys_codes, systems) -> tuple[np.ndarray, dict]:
    """One harness digest per system (refusing a system with several) and the configs given."""
    from bayeval.harness import _canonical, digest

    _check_not_missing(df, column)
    values = df[column].to_numpy(dtype=object)
    row_digest = np.empty(len(values), dtype=object)
    configs, by_id = {}, {}
    for i, v in enumerate(values):
        if isinstance(v, str):
            if not v.strip():
                raise ValueError(
                    f"column {column!r} has an empty harness digest in "
                    f"{describe_rows(df.index[[i]])}"
                )
            row_digest[i] = v
        elif isinstance(v, Mapping):
            if id(v) not in by_id:
                by_id[id(v)] = digest(v)
                configs[by_id[id(v)]] = _canonical(v)
            row_digest[i] = by_id[id(v)]
        else:
            bad = np.array([not isinstance(x, (str, Mapping)) for x in values])
            raise TypeError(
                f"column {column!r} must hold harness digests (str) or configurations "
                f"(mappings); found {describe_values(values[bad])} in "
                f"{describe_rows(df.index[bad])}"
            )
    codes = pd.factorize(row_digest, sort=False)[0]
    pairs = pd.DataFrame({"system": sys_codes, "digest": codes}).drop_duplicates()
    several = pairs["system"][pairs["system"].duplicated()].unique()
    if len(several):
        parts = []
        for s in several[:3]:
            rows = sys_codes == s
            groups = [
                f"{d!r} ({describe_rows(df.index[rows & (row_digest == d)])})"
                for d in pd.unique(row_digest[rows])
            ]
            parts.append(f"system {systems[s]!r} has {len(groups)}: {', '.join(groups)}")
        raise ValueError(
            f"column {column!r} must give each system one harness, but {len(several)} "
            f"system(s) have several: {'; '.join(parts)}. Label each (system, harness) pair "
            "as its own system to analyse them side by side, or measure the change with "
            "bayeval.harness.canary"
        )
    per_system = np.empty(len(systems), dtype=object)
    per_system[pairs["system"].to_numpy()] = row_digest[pairs.index.to_numpy()]
    return per_system, configs


def from_counts(
    successes, trials, tasks=None, systems=None, clusters=None, strata=None, stratum_weights=None
) -> EvalData:
    """Build :class:`EvalData` from count arrays (all outcomes valid).

    Parameters
    ----------
    successes : array_like of int, shape ``(task,)`` or ``(system, task)``
    trials : int or array_like of int
        Trials per cell, broadcast against ``successes``.
    tasks, systems : sequence, optional
        Labels (default ``0..J-1`` and ``system_0..``; a single system is ``"system"``).
    clusters, strata : sequence, optional
        One label per task.
    stratum_weights : mapping, optional
        Stratum -> declared weight (default: observed task shares).

    Examples
    --------
    >>> import bayeval as be
    >>> data = be.from_counts([7, 10, 0], trials=10)
    >>> data.dataset["trials"].values
    array([[10, 10, 10]])
    """
    c = _rectangular("successes", successes)
    if c.ndim not in (1, 2) or c.size == 0:
        raise ValueError(
            f"successes must be a non-empty array of shape (task,) or (system, task); "
            f"got shape {c.shape}"
        )
    if c.ndim == 1:
        c = c[None, :]
        default_systems = ["system"]
    else:
        default_systems = [f"system_{i}" for i in range(c.shape[0])]
    n = _rectangular("trials", trials)
    try:
        n = np.broadcast_to(n, c.shape)
    except ValueError:
        raise ValueError(
            f"trials (shape {n.shape}) does not broadcast to successes (shape {c.shape})"
        ) from None
    c = _whole_numbers("successes", c)
    n = _whole_numbers("trials", n)
    if (n < 1).any():
        raise ValueError(f"trials must be >= 1 in every cell; got {int(n.min())}")
    bad = (c < 0) | (c > n)
    if bad.any():
        where = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)]
        raise ValueError(
            f"successes must lie in 0..trials; cells (system, task) {where[:5]} do not"
        )
    systems = default_systems if systems is None else list(systems)
    tasks = list(range(c.shape[1])) if tasks is None else list(tasks)
    for name, labels, size in (("systems", systems, c.shape[0]), ("tasks", tasks, c.shape[1])):
        _check_labels(
            pd.Series(labels, dtype=object), name, pd.RangeIndex(len(labels)), what=f"{name}="
        )
        if len(labels) != size or len(set(labels)) != size:
            raise ValueError(
                f"{name} must hold {size} distinct labels; got {len(labels)} "
                f"({len(set(labels))} distinct)"
            )
    task_coords = {}
    for name, plural, values in (("cluster", "clusters", clusters), ("stratum", "strata", strata)):
        if values is not None:
            # check the labels as given: NumPy would turn [1, True] into [1, 1] silently
            given = values
            values = _rectangular(plural, values)
            if values.shape != (c.shape[1],) or pd.isna(values).any():
                raise ValueError(
                    f"{plural} must hold one label per task ({c.shape[1]}), "
                    f"none missing; got shape {values.shape}"
                )
            labels = pd.Series(list(given), dtype=object)
            _check_labels(labels, plural, pd.RangeIndex(len(labels)), what=f"{plural}=")
            task_coords[name] = values
    status_counts = np.zeros(c.shape + (len(STATUSES),), dtype=np.int64)
    status_counts[..., _OK] = n
    attrs = {"stratum_weights": _stratum_weights(task_coords.get("stratum"), stratum_weights)}
    ds = _assemble(
        c.astype(np.int64),
        status_counts,
        None,
        np.asarray(systems, dtype=object),
        np.asarray(tasks),
        task_coords,
        attrs,
    )
    return EvalData(ds)


def _rectangular(name: str, value) -> np.ndarray:
    """``np.asarray`` with a readable refusal of ragged nested sequences."""
    try:
        return np.asarray(value)
    except (ValueError, TypeError):
        lengths = []
        for row in value:
            try:
                lengths.append(len(row))
            except TypeError:
                lengths.append("scalar")
        raise ValueError(
            f"{name} must be a rectangular array (every row the same length); "
            f"its rows have lengths {describe_values(lengths)}"
        ) from None


def read_csv(path, **columns) -> EvalData:
    """Read a tidy CSV file and pass it to :func:`from_frame` with ``columns``.

    Examples
    --------
    >>> import io, bayeval as be
    >>> csv = io.StringIO("system,task,success\\nA,t1,1\\nA,t2,0\\n")
    >>> be.read_csv(csv).dataset["successes"].values
    array([[1, 0]])
    """
    return from_frame(pd.read_csv(path), **columns)


# -- helpers -----------------------------------------------------------------------------------
def _assemble(
    ok_successes, status_counts, policy, systems, tasks, task_coords, attrs
) -> xr.Dataset:
    """Apply a missing-outcome policy and build the dataset."""
    ok_trials = status_counts[..., _OK]
    planned = status_counts.sum(-1)
    dims = ("system", "task")
    if policy == "bounds":
        upper = ok_successes + (planned - ok_trials)
        successes = xr.DataArray(np.stack([ok_successes, upper]), dims=("missing_bound",) + dims)
        trials = planned
    elif policy == "fail":
        successes, trials = xr.DataArray(ok_successes, dims=dims), planned
    else:
        successes, trials = xr.DataArray(ok_successes, dims=dims), ok_trials
    coords = {
        "system": np.asarray(systems, dtype=object),
        "task": np.asarray(tasks),
        "status": list(STATUSES),
    }
    if policy == "bounds":
        coords["missing_bound"] = ["lower", "upper"]
    coords.update({name: ("task", values) for name, values in task_coords.items()})
    ds = xr.Dataset(
        {
            "successes": successes,
            "trials": (dims, np.asarray(trials, dtype=np.int64)),
            "attempts": (dims, status_counts[..., :_NOT_RUN].sum(-1)),
            "status_counts": (dims + ("status",), status_counts),
        },
        coords=coords,
    )
    ds.attrs = {**attrs, "missing_policy": policy or "none"}
    return ds


def _check_policy(status_counts: np.ndarray, missing) -> None:
    if missing is not None:
        validate_choice("missing", missing, MISSING_POLICIES)
        return
    totals = status_counts.sum(axis=(0, 1))
    if totals[_OK + 1 :].sum() == 0:
        return
    listed = ", ".join(f"{s}: {int(t)}" for s, t in zip(STATUSES, totals) if t)
    raise ValueError(
        f"{int(totals[_OK + 1 :].sum())} of {int(totals.sum())} planned attempts are not 'ok' "
        f"({listed}); choose a missing-outcome policy with missing=: {_POLICY_HELP}"
    )


def _check_columns(df: pd.DataFrame, names: dict) -> None:
    for role, column in names.items():
        if not isinstance(column, str):
            raise TypeError(f"{role}= must be a column name (str); got {column!r}")
    absent = {role: col for role, col in names.items() if col not in df.columns}
    if not absent:
        for role, column in names.items():
            where = df.columns.get_loc(column)
            if not isinstance(where, (int, np.integer)):
                count = int(np.sum(df.columns == column)) if df.columns.nlevels == 1 else None
                how = f"appears {count} times" if count and count > 1 else "names several columns"
                raise ValueError(
                    f"column name {column!r} ({role}=) {how} in the frame; "
                    "each column used must be unique (rename the duplicates)"
                )
    if absent:
        listed = ", ".join(f"{role}={col!r}" for role, col in absent.items())
        raise ValueError(
            f"column(s) not found: {listed}; the frame has columns "
            f"{describe_values(df.columns, limit=20)}"
        )


def _check_not_missing(df: pd.DataFrame, column: str) -> None:
    missing = df[column].isna().to_numpy()
    if missing.any():
        raise ValueError(
            f"column {column!r} has missing values in "
            f"{describe_rows(df.index[missing])}; every row needs a {column}"
        )


def _check_hashable(series: pd.Series, column: str, index, what: str | None = None) -> None:
    """Labels must be hashable to be grouped; say which rows are not (lists, dicts, arrays)."""
    if series.dtype != object:
        return
    bad = np.zeros(len(series), dtype=bool)
    for i, v in enumerate(series.to_numpy()):
        try:
            hash(v)
        except TypeError:
            bad[i] = True
    if bad.any():
        found = series.to_numpy()[bad]
        types = sorted({type(v).__name__ for v in found})
        raise TypeError(
            f"{what or f'column {column!r}'} must hold hashable labels (str, int, float, bool, tuple, ...); "
            f"found {describe_values(found)} in {describe_rows(index[bad])} "
            f"(type {', '.join(types)})"
        )


def _label_key(v) -> str:
    """What a label looks like to a reader: distinct keys for True, 1 and 1.0."""
    if isinstance(v, np.generic):
        v = v.item()
    return f"{type(v).__name__}:{v!r}"


def _check_labels(series: pd.Series, column: str, index, what: str | None = None) -> None:
    """Hashable, non-missing labels whose distinct values stay distinct when grouped.

    Grouping uses Python equality, under which ``True == 1 == 1.0`` (and ``0.0 == -0.0``,
    ``Fraction(1, 2) == 0.5``): such labels would silently merge into one system or task.
    """
    _check_hashable(series, column, index, what)
    what = what or f"column {column!r}"
    if series.isna().any():
        missing = series.isna().to_numpy()
        raise ValueError(
            f"{what} has missing values in "
            f"{describe_rows(index[missing])}; every row needs a {column}"
        )
    if series.dtype != object or pd.api.types.infer_dtype(series, skipna=True) in (
        "string",
        "bytes",
        "integer",
    ):
        return
    values = series.to_numpy()
    codes = pd.factorize(values, sort=False)[0]
    keys = pd.factorize(
        np.fromiter((_label_key(v) for v in values), dtype=object, count=len(values)), sort=False
    )[0]
    if keys.max() == codes.max():
        _check_one_label_type(values, what, index)
        return
    pairs = pd.DataFrame({"code": codes, "key": keys}).drop_duplicates()
    merged = pairs["code"][pairs["code"].duplicated()].unique()
    groups = []
    for code in merged[:3]:
        rows = np.flatnonzero(codes == code)
        firsts = pd.Series(keys[rows]).drop_duplicates().index
        groups.append(
            f"{' == '.join(repr(values[rows[i]]) for i in firsts)} ({describe_rows(index[rows])})"
        )
    raise ValueError(
        f"{what} holds labels that differ but compare equal, so they would merge "
        f"into one: {'; '.join(groups)}; make the labels distinct (for example as "
        "strings) or make them identical"
    )


def _label_type(v) -> str:
    """The kind of a label as results files store it: one kind per column can be saved."""
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (numbers.Integral, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "str"
    return type(v).__name__


def _check_one_label_type(values: np.ndarray, what: str, index) -> None:
    """Refuse a column that mixes label types (``1`` and ``"x"``): such labels cannot be
    written to a results file, and ``1`` and ``"1"`` read alike in every table."""
    kinds = np.fromiter((_label_type(v) for v in values), dtype=object, count=len(values))
    names = pd.unique(kinds)
    if len(names) < 2:
        return
    parts = []
    for name in names:
        rows = np.flatnonzero(kinds == name)
        parts.append(
            f"{name}: {describe_values(pd.unique(values[rows]))} ({describe_rows(index[rows])})"
        )
    raise TypeError(
        f"{what} mixes label types ({'; '.join(parts)}); the labels of one column must "
        "share one type, so that they stay distinct and can be saved: convert the column, "
        "for example with .astype(str)"
    )


def _labels(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    _check_not_missing(df, column)
    codes, uniques = pd.factorize(df[column], sort=False)
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _check_unique(df: pd.DataFrame, columns: list, what: str) -> None:
    dup = df.duplicated(subset=columns, keep=False).to_numpy()
    if dup.any():
        raise ValueError(
            f"duplicate {what}: columns {columns} must identify one row, but "
            f"{describe_rows(df.index[dup])} share a combination "
            f"(first: {tuple(df.loc[dup, columns].iloc[0])})"
        )


_ALLOWED_NUMBERS = (
    "int, float, bool, fractions.Fraction or decimal.Decimal (NumPy and pandas "
    "numeric types included)"
)


def _real_values(values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact numeric cells as floats: ``(value, wrong_type, is_bool)``, NaN where missing.

    Accepted: ints, floats, bools, :class:`fractions.Fraction`, :class:`decimal.Decimal` and
    their NumPy/pandas counterparts; ``None``, ``pd.NA`` and NaN are missing. Everything else
    is a wrong type, never coerced: complex numbers (whose imaginary part would be dropped),
    dates and durations (whose ticks would be read as numbers), strings, containers.
    """
    values = np.asarray(values)
    kind = values.dtype.kind
    if kind in "iuf":
        with np.errstate(over="ignore"):
            out = values.astype(float)
        return out, np.zeros(values.shape, bool), np.zeros(values.shape, bool)
    if kind == "b":
        return values.astype(float), np.zeros(values.shape, bool), np.ones(values.shape, bool)
    if kind != "O":
        return (
            np.full(values.shape, np.nan),
            np.ones(values.shape, bool),
            np.zeros(values.shape, bool),
        )
    flat = values.ravel()
    out = np.full(flat.shape, np.nan)
    wrong = np.zeros(flat.shape, bool)
    is_bool = np.zeros(flat.shape, bool)
    for i, v in enumerate(flat):
        value, kind_of = _real_cell(v)
        if kind_of == "wrong":
            wrong[i] = True
        else:
            out[i] = value
            is_bool[i] = kind_of == "bool"
    return out.reshape(values.shape), wrong.reshape(values.shape), is_bool.reshape(values.shape)


def _real_cell(v) -> tuple[float, str]:
    if v is None or v is pd.NA:
        return np.nan, "missing"
    if (
        isinstance(
            v, (np.datetime64, np.timedelta64, datetime.date, datetime.time, datetime.timedelta)
        )
        or v is pd.NaT
    ):
        return np.nan, "wrong"
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bool):
        return float(v), "bool"
    if isinstance(v, decimal.Decimal):
        return (np.nan, "missing") if v.is_nan() else (_to_float(v), "number")
    if isinstance(v, numbers.Real):
        value = _to_float(v)
        return (value, "missing") if isinstance(v, float) and np.isnan(value) else (value, "number")
    return np.nan, "wrong"


def _to_float(v) -> float:
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _column_values(series: pd.Series) -> np.ndarray:
    """A column's cells as a NumPy array (nullable pandas dtypes: NaN/None where missing)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.astype(object).to_numpy()
    if pd.api.types.is_extension_array_dtype(series.dtype):
        kind = getattr(series.dtype, "kind", "O")
        if kind in "iufb":
            return series.to_numpy(dtype=object, na_value=None)
        return series.to_numpy(dtype=object)
    return series.to_numpy()


def _wrong_type(column: str, series_values, wrong: np.ndarray, rows, what: str) -> TypeError:
    array = np.asarray(series_values)
    found = list(array.astype(object).ravel()[wrong.ravel()])
    types = (
        [array.dtype.name] if array.dtype != object else sorted({type(v).__name__ for v in found})
    )
    return TypeError(
        f"{column} must hold {what}; found {describe_values(found)} in {describe_rows(rows)} "
        f"(type {', '.join(types)}); allowed types: {_ALLOWED_NUMBERS}, "
        "never complex numbers, dates, durations or text"
    )


def _outcome_column(df: pd.DataFrame, column: str) -> np.ndarray:
    """0/1 outcomes as floats, NaN where no outcome was recorded."""
    series = df[column]
    raw = _column_values(series)
    if raw.dtype.kind not in "biufO":  # typed columns of the wrong kind: say so by dtype
        raw = series.to_numpy(dtype=object)
    outcome, wrong, _ = _real_values(raw)
    if wrong.any():
        raise _wrong_type(
            f"column {column!r}",
            series.to_numpy(dtype=object),
            wrong,
            df.index[wrong],
            "0/1 (or True/False) outcomes, with empty cells for missing outcomes",
        )
    bad = ~np.isnan(outcome) & (outcome != 0) & (outcome != 1)
    if bad.any():
        raise ValueError(
            f"column {column!r} must hold 0 or 1 (empty for a missing outcome); "
            f"found {describe_values(outcome[bad])} in {describe_rows(df.index[bad])}"
        )
    return outcome


def _score_column(df: pd.DataFrame, column: str) -> np.ndarray:
    """Scores in [0, 1] as floats, NaN where no score was recorded; nothing coerced."""
    series = df[column]
    raw = _column_values(series)
    if raw.dtype.kind not in "biufO":
        raw = series.to_numpy(dtype=object)
    allowed = "scores in [0, 1] (real numbers), with empty cells for missing scores"
    values, wrong, is_bool = _real_values(raw)
    if wrong.any():
        raise _wrong_type(
            f"score column {column!r}",
            series.to_numpy(dtype=object),
            wrong,
            df.index[wrong],
            allowed,
        )
    if is_bool.any():
        raise TypeError(
            f"score column {column!r} must hold {allowed}, not True/False; found "
            f"booleans in {describe_rows(df.index[is_bool])} (give pass/fail "
            "outcomes with success=, or the scores as numbers)"
        )
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ~((values >= 0) & (values <= 1))
    if bad.any():
        raise ValueError(
            f"score column {column!r} must hold {allowed}; found "
            f"{describe_values(values[bad])} in {describe_rows(df.index[bad])}"
        )
    return values


def _score_stats(y: np.ndarray, cell: np.ndarray, shape) -> dict:
    """Per-cell sufficient statistics (:data:`SCORE_VARS`) of the scores ``y`` of ok rows."""
    size = int(np.prod(shape))
    mid = (y > 0) & (y < 1)
    inner = np.where(mid, y, 0.5)
    weights = {
        "score_n0": y == 0,
        "score_n1": y == 1,
        "score_nmid": mid,
        "score_sum": y,
        "score_sumsq": y**2,
        "score_sumlog": np.where(mid, np.log(inner), 0.0),
        "score_sumlog1m": np.where(mid, np.log1p(-inner), 0.0),
    }
    out = {}
    for name, w in weights.items():
        total = np.bincount(cell, weights=w.astype(float), minlength=size).reshape(shape)
        out[name] = (
            ("system", "task"),
            np.rint(total).astype(np.int64)
            if name in ("score_n0", "score_n1", "score_nmid")
            else total,
        )
    return out


def _whole_numbers(column: str, values, index=None, original=None) -> np.ndarray:
    """Whole, finite counts as int64; ``column`` names the input in messages."""
    values = np.asarray(values)
    real, wrong, is_bool = _real_values(values)

    def rows(mask):  # frame rows, or array cells (system, task) for from_counts
        if index is not None:
            return index[mask]
        return [
            tuple(int(i) for i in ix) if len(ix) > 1 else int(ix[0]) for ix in np.argwhere(mask)
        ]

    if wrong.any():
        shown = values if original is None else original
        raise _wrong_type(column, shown, wrong, rows(wrong), "integer counts")
    if is_bool.any():
        raise TypeError(
            f"{column} must hold integer counts, not True/False; found booleans in "
            f"{describe_rows(rows(is_bool))}"
        )
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(real) | (real != np.round(real)) | (np.abs(real) > _MAX_COUNT)
    if bad.any():
        raise ValueError(
            f"{column} must hold whole, non-missing counts below {_MAX_COUNT:.0e}; "
            f"found {describe_values(real[bad])} in {describe_rows(rows(bad))}"
        )
    return real.astype(np.int64)


def _count_columns(df: pd.DataFrame, successes: str, trials: str):
    index = df.index
    c = _whole_numbers(
        f"column {successes!r}",
        _column_values(df[successes]),
        index,
        df[successes].to_numpy(dtype=object),
    )
    n = _whole_numbers(
        f"column {trials!r}", _column_values(df[trials]), index, df[trials].to_numpy(dtype=object)
    )
    if (n < 1).any():
        raise ValueError(
            f"column {trials!r} must be >= 1; found {describe_values(n[n < 1])} in "
            f"{describe_rows(index[n < 1])}"
        )
    bad = (c < 0) | (c > n)
    if bad.any():
        raise ValueError(
            f"column {successes!r} must lie in 0..{trials}; {describe_rows(index[bad])} are outside"
        )
    return c, n


def _covariate_names(df: pd.DataFrame, covariates, count_rows: bool) -> list:
    """The covariate column names, checked: a list of distinct existing columns."""
    if covariates is None:
        return []
    if isinstance(covariates, str):
        covariates = [covariates]
    if not isinstance(covariates, (list, tuple)):
        raise TypeError(
            f"covariates= must be a list of column names (str); got {type(covariates).__name__}"
        )
    covariates = list(covariates)
    if count_rows and covariates:
        raise TypeError(
            "covariates= applies to outcome rows (success=), one row per attempt; "
            "count rows (successes=, trials=) carry no per-attempt values"
        )
    duplicated = sorted({c for c in covariates if covariates.count(c) > 1}, key=str)
    if duplicated:
        raise ValueError(f"covariates= names {describe_values(duplicated)} more than once")
    _check_columns(df, {f"covariates[{i}]": c for i, c in enumerate(covariates)})
    return covariates


def _refuse_non_numbers(
    where: str, series, raw, wrong, is_bool, index, allowed: str, hint: str = ""
):
    """Refuse a per-attempt numeric column's non-numbers and booleans, naming the rows."""
    if wrong.any():
        raise _wrong_type(where, series.to_numpy(dtype=object), wrong, index[wrong], allowed)
    if is_bool.any() or raw.dtype.kind == "b":
        rows = index[is_bool] if is_bool.any() else index
        raise TypeError(
            f"{where} must hold {allowed}, not True/False; found booleans in "
            f"{describe_rows(rows)}{hint}"
        )


def _covariate_stats(df: pd.DataFrame, covariates: list, slot: np.ndarray, shape) -> dict:
    """Per ``(covariate, system, task, status)`` sufficient statistics of each covariate.

    ``slot`` is each row's flat ``(system, task, status)`` index. Values must be finite,
    non-negative, recorded numbers; nothing is coerced.
    """
    size = int(np.prod(shape))
    out = {name: np.zeros((len(covariates),) + tuple(shape)) for name in _COVARIATE_VARS}
    for i, column in enumerate(covariates):
        series = df[column]
        raw = _column_values(series)
        if raw.dtype.kind not in "biufO":
            raw = series.to_numpy(dtype=object)
        values, wrong, is_bool = _real_values(raw)
        where = f"covariate column {column!r}"
        allowed = "finite, non-negative numbers, one per attempt (row)"
        _refuse_non_numbers(
            where,
            series,
            raw,
            wrong,
            is_bool,
            df.index,
            allowed,
            " (give 0/1 as numbers if that is meant)",
        )
        missing = np.isnan(values)
        if missing.any():
            raise ValueError(
                f"{where} has empty cells in {describe_rows(df.index[missing])}; "
                f"it must hold {allowed}: an unrecorded value is not a zero, so "
                "fill it explicitly or drop those rows"
            )
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            raise ValueError(
                f"{where} must hold {allowed}; found "
                f"{describe_values(values[bad])} in {describe_rows(df.index[bad])}"
            )
        positive = values > 0
        logs = np.log(np.where(positive, values, 1.0))
        for name, weights in (
            ("covariate_count", np.ones_like(values)),
            ("covariate_sum", values),
            ("covariate_sumsq", values**2),
            ("covariate_positive", positive.astype(float)),
            ("covariate_logsum", logs),
            ("covariate_logsumsq", logs**2),
        ):
            out[name][i] = np.bincount(slot, weights=weights, minlength=size).reshape(shape)
    for name in ("covariate_count", "covariate_positive"):
        out[name] = np.rint(out[name]).astype(np.int64)
    dims = ("covariate", "system", "task", "status")
    return {name: (dims, values) for name, values in out.items()}


_LATENCY_HELP = (
    "latency= takes a column of seconds (str) or a pair of timestamp columns (start, end)"
)


def _latency_names(df: pd.DataFrame, latency, count_rows: bool):
    """The latency column(s), checked: ``None``, ``(seconds,)`` or ``(start, end)``."""
    if latency is None:
        return None
    if isinstance(latency, str):
        columns = (latency,)
    elif isinstance(latency, (list, tuple)) and len(latency) == 2:
        columns = tuple(latency)
        if columns[0] == columns[1]:
            raise ValueError(f"latency= names column {columns[0]!r} as both start and end")
    else:
        raise TypeError(f"{_LATENCY_HELP}; got {latency!r}")
    if count_rows:
        raise TypeError(
            "latency= applies to outcome rows (success=), one row per attempt; "
            "count rows (successes=, trials=) carry no per-attempt durations"
        )
    roles = (
        {"latency": columns[0]}
        if len(columns) == 1
        else {"latency[0] (start)": columns[0], "latency[1] (end)": columns[1]}
    )
    _check_columns(df, roles)
    return columns


def _latency_seconds(df: pd.DataFrame, columns: tuple) -> np.ndarray:
    """Each row's duration in seconds, NaN where none was recorded; refusals name the rows."""
    if len(columns) == 1:
        return _seconds_column(df, columns[0])
    (start, start_aware), (end, end_aware) = (_timestamps(df, c) for c in columns)
    start_missing, end_missing = start == _NO_TIME, end == _NO_TIME
    half = start_missing != end_missing
    if half.any():
        raise ValueError(
            f"latency columns {columns[0]!r} and {columns[1]!r}: {describe_rows(df.index[half])} "
            "record one timestamp without the other; a duration needs both (empty both when "
            "none was recorded)"
        )
    both = ~start_missing & ~end_missing
    clash = both & (start_aware != end_aware)
    if clash.any():
        raise ValueError(
            f"latency columns {columns[0]!r} and {columns[1]!r}: in {describe_rows(df.index[clash])} "
            "one timestamp has a UTC offset and the other has none, so their difference is "
            "undefined; give both with an offset (or both without)"
        )
    seconds = np.full(len(df), np.nan)
    seconds[both] = (end[both] - start[both]) / 1e9
    early = both & (seconds < 0)
    if early.any():
        raise ValueError(
            f"latency: {describe_rows(df.index[early])} end before they start (column "
            f"{columns[1]!r} earlier than {columns[0]!r} by "
            f"{describe_values(-seconds[early])} s)"
        )
    return seconds


_NO_TIME = np.iinfo(np.int64).min  # NaT's integer value
_OFFSET = r"(?:[zZ]|[+-]\d{2}(?::?\d{2})?)\s*$"


def _timestamps(df: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """A column of timestamps as UTC nanoseconds (``_NO_TIME`` where empty) and whether each
    carried a UTC offset; datetimes or ISO 8601 strings, nothing else."""
    import warnings

    series = df[column]
    where = f"latency timestamp column {column!r}"
    allowed = (
        "datetimes or ISO 8601 strings (for example 2025-07-11T20:35:11+00:00), with "
        "empty cells where no duration was recorded"
    )
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        values = series.dt.tz_convert("UTC").dt.tz_localize(None)
        return values.to_numpy(dtype="datetime64[ns]").view(np.int64), np.ones(len(df), bool)
    if series.dtype.kind == "M":
        return (series.to_numpy(dtype="datetime64[ns]").view(np.int64), np.zeros(len(df), bool))
    if series.dtype.kind != "O" and not pd.api.types.is_string_dtype(series.dtype):
        raise TypeError(
            f"{where} must hold {allowed}; it holds {series.dtype} values (for "
            "durations in seconds give one column: latency='seconds')"
        )
    raw = series.to_numpy(dtype=object)
    missing = pd.isna(series).to_numpy()
    is_text = np.array([isinstance(v, str) for v in raw])
    is_time = np.array([isinstance(v, (datetime.datetime, np.datetime64)) for v in raw])
    wrong = ~missing & ~is_text & ~is_time
    if wrong.any():
        types = sorted({type(v).__name__ for v in raw[wrong]})
        raise TypeError(
            f"{where} must hold {allowed}; found {describe_values(raw[wrong])} "
            f"in {describe_rows(df.index[wrong])} (type {', '.join(types)}; for "
            "durations in seconds give one column: latency='seconds')"
        )
    blank = is_text & np.array([isinstance(v, str) and not v.strip() for v in raw])
    if blank.any():
        raise ValueError(
            f"{where} has blank text in {describe_rows(df.index[blank])}; leave "
            "the cell empty (missing) when no timestamp was recorded"
        )
    out = np.full(len(df), _NO_TIME, dtype=np.int64)
    aware = np.zeros(len(df), bool)
    if is_text.any():
        text = pd.Series(raw[is_text], dtype=object)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        bad = parsed.isna().to_numpy()
        if bad.any():
            rows = df.index[np.flatnonzero(is_text)[bad]]
            raise ValueError(
                f"{where} holds text that is not an ISO 8601 timestamp: "
                f"{describe_values(text[bad].tolist())} in {describe_rows(rows)}; "
                f"it must hold {allowed}"
            )
        out[is_text] = parsed.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").view(np.int64)
        aware[is_text] = text.str.contains(_OFFSET, regex=True).to_numpy()
    for i in np.flatnonzero(is_time):
        stamp = pd.Timestamp(raw[i])
        aware[i] = stamp.tzinfo is not None
        out[i] = (stamp.tz_convert("UTC").tz_localize(None) if aware[i] else stamp).value
    mixed = ~missing
    if aware[mixed].any() and not aware[mixed].all():
        rows_with, rows_without = df.index[mixed & aware], df.index[mixed & ~aware]
        raise ValueError(
            f"{where} mixes timestamps with a UTC offset "
            f"({describe_rows(rows_with)}) and without one "
            f"({describe_rows(rows_without)}); give every timestamp an offset "
            "(or none)"
        )
    return out, aware


def _seconds_column(df: pd.DataFrame, column: str) -> np.ndarray:
    """A column of durations: seconds (numbers) or timedeltas, NaN where empty."""
    series = df[column]
    where = f"latency column {column!r}"
    allowed = (
        "durations: finite, non-negative seconds (numbers) or timedeltas, with empty "
        "cells where none was recorded"
    )
    if series.dtype.kind == "m":
        values = series.dt.total_seconds().to_numpy(dtype=float)
    else:
        raw = _column_values(series)
        if raw.dtype.kind not in "biufO":
            raw = series.to_numpy(dtype=object)
        if raw.dtype.kind == "O":
            deltas = np.array(
                [
                    isinstance(v, (datetime.timedelta, np.timedelta64)) and not pd.isna(v)
                    for v in raw
                ]
            )
            if deltas.any():
                raw = raw.copy()
                raw[deltas] = [pd.Timedelta(v).total_seconds() for v in raw[deltas]]
        values, wrong, is_bool = _real_values(raw)
        _refuse_non_numbers(where, series, raw, wrong, is_bool, df.index, allowed)
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ~(np.isfinite(values) & (values >= 0))
    if bad.any():
        raise ValueError(
            f"{where} must hold {allowed}; found {describe_values(values[bad])} "
            f"in {describe_rows(df.index[bad])}"
        )
    return values


def _latency_arrays(seconds: np.ndarray, codes: np.ndarray, cell: np.ndarray, shape) -> dict:
    """Per-attempt durations and statuses padded to ``(system, task, attempt)``, in row order
    within each cell."""
    position = pd.Series(cell).groupby(cell).cumcount().to_numpy()
    width = int(position.max()) + 1 if len(position) else 1
    values = np.full(tuple(shape) + (width,), np.nan)
    status = np.full(tuple(shape) + (width,), -1, dtype=np.int8)
    s_idx, t_idx = np.divmod(cell, shape[1])
    values[s_idx, t_idx, position] = seconds
    status[s_idx, t_idx, position] = codes
    dims = ("system", "task", "attempt")
    return {"latency": (dims, values), "latency_status": (dims, status)}


def _status_codes(df, status, status_map, recorded: np.ndarray) -> np.ndarray:
    """One status code per row, following the rules in the module docstring."""
    codes = np.where(recorded, _OK, _NO_VERDICT)
    if status is None:
        return codes
    raw = df[status]
    known = set(STATUSES)
    if status_map is None:
        present = raw.dropna().unique().tolist()
        foreign = [v for v in present if v not in known]
        if foreign:
            raise ValueError(
                f"column {status!r} holds values that are not bayeval statuses: "
                f"{describe_values(foreign)}; map them with status_map= onto {list(STATUSES)} "
                "(a raw status left out of the map means 'ok' for a row with an outcome and "
                "'no_verdict' for one without), or leave status= unset"
            )
        mapping = {}
    else:
        if not isinstance(status_map, Mapping):
            raise TypeError(
                f"status_map must be a mapping of raw status -> bayeval status; "
                f"got {type(status_map).__name__}"
            )
        bad = {k: v for k, v in status_map.items() if v not in known}
        if bad:
            raise ValueError(
                f"status_map maps onto unknown statuses {bad}; allowed: {list(STATUSES)}"
            )
        mapping = dict(status_map)
    mapped = raw.map(lambda v: mapping.get(v, v if v in known else None))
    explicit = mapped.notna().to_numpy()
    lookup = {s: i for i, s in enumerate(STATUSES)}
    explicit_codes = mapped[explicit].map(lookup).to_numpy(dtype=np.int64)
    nan_ok = explicit.copy()
    nan_ok[explicit] = (explicit_codes == _OK) & ~recorded[explicit]
    if nan_ok.any():
        raise ValueError(
            f"column {status!r} marks {describe_rows(df.index[nan_ok])} as 'ok' with no "
            "recorded outcome; an ok row needs a 0/1 outcome (map such rows to 'no_verdict', "
            "'error', 'timeout', 'invalid' or 'not_run')"
        )
    codes[explicit] = explicit_codes
    return codes


def _not_run(rows: np.ndarray, tasks, planned_trials) -> np.ndarray:
    """Planned trials with no row at all, per cell (``rows``: rows per cell, any status)."""
    n_task = rows.shape[1]
    default = _modal_rows(rows)
    if planned_trials is None:
        return np.where(rows == 0, default[None, :], 0)
    if isinstance(planned_trials, Mapping):
        position = {t: i for i, t in enumerate(tasks.tolist())}
        unknown = [t for t in planned_trials if t not in position]
        if unknown:
            raise ValueError(f"planned_trials names unknown tasks {describe_values(unknown)}")
        planned = default.copy()
        for t, value in planned_trials.items():
            planned[position[t]] = _planned_value(value)
    else:
        planned = np.full(n_task, _planned_value(planned_trials), dtype=np.int64)
    return np.maximum(planned[None, :] - rows, 0)


def _planned_value(value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"planned_trials must be positive integers; got {value!r}")
    return int(value)


def _modal_rows(rows: np.ndarray) -> np.ndarray:
    """Most common positive row count per task (the larger on ties)."""
    n_task = rows.shape[1]
    task_idx = np.broadcast_to(np.arange(n_task), rows.shape)
    has = rows > 0
    pairs = np.stack([task_idx[has], rows[has]], axis=1)
    uniq, freq = np.unique(pairs, axis=0, return_counts=True)
    order = np.lexsort((uniq[:, 1], freq, uniq[:, 0]))
    uniq = uniq[order]
    last = np.r_[uniq[1:, 0] != uniq[:-1, 0], True]
    modal = np.zeros(n_task, dtype=np.int64)
    modal[uniq[last, 0]] = uniq[last, 1]
    return modal


def _task_attribute(df, column, task, task_codes, n_task) -> np.ndarray:
    _check_not_missing(df, column)
    pairs = pd.DataFrame({"code": task_codes, "value": df[column].to_numpy()})
    distinct = pairs.drop_duplicates()
    if len(distinct) != n_task:
        clash = distinct["code"].duplicated(keep=False).to_numpy()
        example = distinct[clash].groupby("code")["value"].apply(list).head(3)
        labels = pd.factorize(df[task], sort=False)[1]
        listed = "; ".join(f"{labels[code]!r}: {vals}" for code, vals in example.items())
        raise ValueError(
            f"column {column!r} must give each task one value, but "
            f"{distinct.loc[clash, 'code'].nunique()} task(s) have several ({listed})"
        )
    values = np.empty(n_task, dtype=object)
    values[distinct["code"].to_numpy()] = distinct["value"].to_numpy()
    return values


def _stratum_weights(strata, declared) -> str:
    """Normalised stratum weights as JSON (netCDF attributes hold strings, not dicts)."""
    if strata is None:
        if declared is not None:
            raise TypeError("stratum_weights= needs a stratum column (stratum=/strata=)")
        return "null"
    sizes = pd.Series(strata).value_counts(sort=False)
    labels = [lab.item() if isinstance(lab, np.generic) else lab for lab in sizes.index]
    sizes = sizes.to_numpy(dtype=float)
    if declared is None:
        weights = dict(zip(labels, sizes / sizes.sum()))
    else:
        if not isinstance(declared, Mapping):
            raise TypeError("stratum_weights must be a mapping of stratum -> weight")
        missing = [s for s in labels if s not in declared]
        extra = [s for s in declared if s not in labels]
        if missing or extra:
            raise ValueError(
                f"stratum_weights must give a weight to each stratum {labels}; "
                f"missing {missing}, unknown {extra}"
            )
        values = np.array([declared[s] for s in labels], dtype=float)
        if (values <= 0).any() or not np.isfinite(values).all():
            raise ValueError(f"stratum_weights must be positive; got {dict(declared)}")
        weights = dict(zip(labels, values / values.sum()))
    return json.dumps([[k, float(w)] for k, w in weights.items()])
