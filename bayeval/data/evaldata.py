"""The EvalData class: validated ``(system, task)`` counts, their views and their subsets.

Trials within a task are exchangeable, so a ``(system, task)`` cell is summarised by its counts:
successes among valid trials, and how many attempts ended with each status. Everything downstream
(estimators, bootstraps, models) works on these count arrays, never on per-episode rows.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import describe_values
from bayeval.data.covariates import _COVARIATE_VARS
from bayeval.data.digests import _EvalRecord
from bayeval.data.judge import JUDGE_VARS
from bayeval.data.labels import _check_labels, _native_labels
from bayeval.data.latency import LATENCY_VARS
from bayeval.data.scores import SCORE_VARS
from bayeval.data.statuses import STATUSES, _assemble, _check_policy

__all__ = ["EvalData", "require_valid_outcomes"]

#: Coordinates that hold labels, saved with every fit: checked by the label rules.
_LABEL_COORDS = (
    "system",
    "task",
    "cluster",
    "stratum",
    "recipe",
    "run",
    "harness",
    "judge",
    "label_stratum",
)


class EvalData:
    """Validated evaluation counts over ``(system, task)``.

    Build one with :func:`from_frame`, :func:`from_counts`, :func:`read_csv` or
    :func:`bayeval.datasets.load`. The underlying :class:`xarray.Dataset` (``.dataset``) holds
    ``successes`` and ``trials`` (the trials the policy uses), ``attempts`` (trials attempted:
    every status but ``not_run``) and ``status_counts`` (over ``status``), with task
    coordinates ``cluster`` and ``stratum`` when given. Under ``missing="bounds"``,
    ``successes`` has a ``missing_bound`` dim. Its arrays are read-only: methods return new
    objects.

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
        dataset = _checked_labels(dataset.copy(deep=True))
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
        return dict(zip(self.systems, self._ds["harness"].values.tolist(), strict=True))

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
    def judges(self) -> list:
        """The judge columns given to ``from_frame(judge=...)``; empty without a judge."""
        if "judge_n11" not in self._ds:
            return []
        return self._ds["judge"].values.tolist()

    @property
    def label_design(self) -> str | None:
        """How the labelled attempts were chosen (``"random"``, ``"stratified"``), or ``None``.

        Set with ``from_frame(..., judge=, label_design=)``: judged data whose ``successes``
        and ``trials`` count the labelled attempts only (see :mod:`bayeval.data.judge`).
        """
        return self._ds.attrs.get("label_design") if self.judges else None

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
        """Whether some valid score lies strictly between 0 and 1.

        Binary models refuse such data: a score of 0.4 is neither a success nor a failure.
        """
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
        if self.judges:  # the verdicts and the design change what the labels stand for
            for name in ("judge", "label_stratum"):
                digest.update(json.dumps([str(v) for v in self._ds[name].values]).encode())
            digest.update(str(self.label_design).encode())
            for name in JUDGE_VARS:
                digest.update(np.ascontiguousarray(self._ds[name].values, dtype=np.int64).tobytes())
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
        names = [
            v for v in (*_COVARIATE_VARS, *SCORE_VARS, *LATENCY_VARS, *JUDGE_VARS) if v in self._ds
        ]
        if names:  # per attempt and status, or of ok attempts: the policy does not change them
            ds = ds.assign({v: self._ds[v] for v in names})
        return EvalData(ds)

    def crossed(self, candidate, baseline, bound: str) -> EvalData:
        """Two systems' counts, missing outcomes crossed, for one bound of a paired comparison.

        Under ``missing="bounds"``, ``"lower"`` takes the candidate's missing outcomes as failures
        and the baseline's as successes, ``"upper"`` the reverse. One data set, so that a paired
        model fits both systems' crossed values jointly.

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
        stratum_weights = self.stratum_weights
        if stratum_weights is not None:  # the data have strata, and so has the selection
            present = set(ds["stratum"].values.tolist())
            weights = {k: w for k, w in stratum_weights.items() if k in present}
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
        """The sizes, the planned attempts and what else the data hold, a line each."""
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
        if self.judges:
            labelled = int(sum(ds[v].values.sum() for v in JUDGE_VARS[:4])) // len(self.judges)
            unlabelled = int(ds["judge_u1"].values.sum() + ds["judge_u0"].values.sum())
            lines.append(
                f"  judges:   {self.judges}, {labelled} labelled attempts "
                f"({self.label_design} design), {unlabelled // len(self.judges)} judged only"
            )
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


def _checked_labels(ds: xr.Dataset) -> xr.Dataset:
    """The dataset with its label coordinates checked and held as Python scalars.

    Every constructor ends here, so a label a results file cannot hold is refused even where
    it did not come through ``from_frame`` or ``from_counts``; NumPy scalars in object arrays
    become Python ones, since a results file reads them back so (and its checksum compares
    their text).
    """
    native = {}
    for name in _LABEL_COORDS:
        if name in ds.coords:
            values = ds[name].values
            _check_labels(
                values, f"EvalData coordinate {name!r}", pd.RangeIndex(values.size), noun=name
            )
            converted = _native_labels(values)
            if converted is not values:
                native[name] = (ds[name].dims, converted)
    return ds.assign_coords(native) if native else ds


_EvalRecord.register(EvalData)  # check_comparable (a leaf below this module) reads EvalData


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
    """  # noqa: E501 (a doctest's expected exception is one line)
    ds = data.dataset
    trials = ds["trials"]
    if systems is not None:
        trials = trials.sel(system=list(systems))
    per_system = trials.sum("task").values
    labels = trials["system"].values.tolist()
    empty = [s for s, total in zip(labels, per_system, strict=True) if total == 0]
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
