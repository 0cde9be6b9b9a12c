"""``fit_many(df, by=...)``: one analysis per group of a tidy frame, serially or on Dask.

Every group (a benchmark, a checkpoint family, a slice) is turned into counts by
:func:`bayeval.from_frame` and fitted by :func:`bayeval.fit` with the same options; the
per-system summaries, diagnostics and model choices are gathered into one
:class:`xarray.Dataset` over a ``group`` dim, and each group's full :class:`~bayeval.Results`
is kept (as netCDF bytes, the format :meth:`Results.to_netcdf` writes) for
:meth:`ManyResults.results`.

Seeds. Group ``key`` is fitted with the seed
``SeedSequence(seed, spawn_key=<SHA-256 of the key>).generate_state(1)`` (31 bits): it
depends on ``seed`` and the key alone, not on the order or number of groups, so adding a
group, reordering the frame or running on another cluster leaves every other group's answer
unchanged, and a Dask run gives bit for bit the numbers of a serial run.

Dask. ``client`` may be a ``distributed.Client``, a scheduler address, or ``"local"`` (a
``LocalCluster`` of worker processes, one thread each, closed afterwards). Each group is one
task; a worker is a long-lived process, so the numba kernels of the quadrature models
(``cache=True``: compiled once per machine, loaded once per process) and PyTensor's compiled
C code (its on-disk cache) are built once per worker, not once per task; ``benchmarks/scale.py``
measures what the first and the second group on a worker cost.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import numbers
import os
import tempfile
import traceback
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from bayeval._validate import BayevalWarning, describe_values, validate_choice, validate_prob
from bayeval.data import from_frame
from bayeval.results import Results, fit

__all__ = ["FitManyError", "ManyResults", "fit_many"]

_OWN = ("by", "client", "seed", "keep", "errors", "ci_prob")
_DIAGNOSTICS = ("divergences", "max_rhat", "min_ess_bulk", "min_ess_tail", "min_bfmi")


class FitManyError(RuntimeError):
    """Some groups of :func:`fit_many` failed.

    ``errors`` is a DataFrame (group, error, message, traceback) of the failed groups and
    ``partial`` the :class:`ManyResults` of those that succeeded.
    """

    def __init__(self, message, errors: pd.DataFrame, partial):
        super().__init__(message)
        self.errors = errors
        self.partial = partial


def _option_names() -> tuple[list[str], list[str]]:
    """The keyword names of ``from_frame`` (less the frame) and of ``fit`` (less data, seed)."""
    frame = [p for p in inspect.signature(from_frame).parameters if p != "df"]
    model = [p for p in inspect.signature(fit).parameters if p not in ("data", "seed")]
    return frame, model


def split_options(options: dict) -> tuple[dict, dict]:
    """Split keywords into ``from_frame`` options and ``fit`` options; refuse any other.

    Examples
    --------
    >>> from bayeval.many import split_options
    >>> split_options({"success": "passed", "model": "hierarchical", "draws": 100})
    ({'success': 'passed'}, {'model': 'hierarchical', 'draws': 100})
    """
    frame_names, fit_names = _option_names()
    clash = set(frame_names) & set(fit_names)
    if clash:  # a guard on the two signatures, not on user input
        raise RuntimeError(f"from_frame and fit share option names {sorted(clash)}")
    unknown = [k for k in options if k not in frame_names and k not in fit_names]
    if unknown:
        raise TypeError(
            f"fit_many got unknown keyword(s) {unknown}; allowed: from_frame options "
            f"{frame_names}, fit options {fit_names}, and {list(_OWN[1:])}"
        )
    frame = {k: v for k, v in options.items() if k in frame_names}
    model = {k: v for k, v in options.items() if k in fit_names}
    return frame, model


def group_seed(seed: int, key) -> int:
    """The seed :func:`fit_many` fits group ``key`` with: a function of ``seed`` and the key.

    The key (a value, or a tuple of values for several ``by`` columns) is written as JSON of
    ``[type name, str(value)]`` pairs and hashed with SHA-256; its first four 32-bit words are
    the ``spawn_key`` of a :class:`numpy.random.SeedSequence` with entropy ``seed``.

    Examples
    --------
    >>> from bayeval.many import group_seed
    >>> group_seed(0, "mmlu") == group_seed(0, "mmlu") != group_seed(0, "gsm8k")
    True
    """
    parts = key if isinstance(key, tuple) else (key,)
    text = json.dumps([[type(v).__name__, str(v)] for v in parts])
    digest = hashlib.sha256(text.encode()).digest()
    words = tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))
    state = np.random.SeedSequence(seed, spawn_key=words).generate_state(1, dtype=np.uint32)
    return int(state[0] >> 1)  # 31 bits: fit adds a bound's index to it for NUTS


def _fit_group(key, frame, frame_options, fit_options, seed, ci_prob, keep):
    """One group's analysis (runs on a worker): a plain record, never an exception."""
    record = {"key": key, "seed": seed}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            data = from_frame(frame, **frame_options)
            res = fit(data, seed=seed, **fit_options)
            record["summary"] = res.summary(ci_prob=ci_prob, k=1)
            record["coverage"] = data.coverage
            tree = res.tree
            record["attrs"] = {a: tree.attrs.get(a) for a in ("model", "sampler", "model_choice")}
            record["diagnostics"] = res.diagnostics
            record["n_tasks"] = len(data.tasks)
            if keep == "results":
                record["netcdf"] = _netcdf_bytes(tree)
        except Exception as exc:
            record["error"] = (type(exc).__name__, str(exc), traceback.format_exc())
    record["warnings"] = [
        (w.category.__name__, str(w.message))
        for w in caught
        if issubclass(w.category, BayevalWarning)
    ]
    return record


def _netcdf_bytes(tree) -> bytes:
    """The tree as netCDF bytes, through a temporary file.

    On a Dask worker xarray takes a distributed write lock that an in-memory target cannot name.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "results.nc")
        tree.to_netcdf(path, engine="h5netcdf")
        with open(path, "rb") as f:
            return f.read()


def _client(client):
    """``(client, owned)``: a distributed Client, and whether fit_many must close it."""
    try:
        import distributed
    except ImportError:
        raise ImportError(
            f"fit_many(client={client!r}) runs on Dask and needs dask.distributed: install "
            "the 'bayeval[dask]' extra (pip install 'bayeval[dask]'), or pass client=None to "
            "run the groups one after another"
        ) from None
    if isinstance(client, distributed.Client):
        return client, False
    if client == "local":
        cluster = distributed.LocalCluster(
            processes=True, threads_per_worker=1, dashboard_address=None
        )
        return distributed.Client(cluster), True
    if isinstance(client, str):
        return distributed.Client(client), True
    raise TypeError(
        f"client must be None, a distributed.Client, a scheduler address or "
        f"'local'; got {type(client).__name__}"
    )


def _group_frames(df: pd.DataFrame, by: list) -> list:
    """``[(key, frame)]`` in sorted key order; missing keys refused with their rows."""
    missing = df[by].isna().any(axis=1)
    if missing.any():
        raise ValueError(
            f"by columns {by} are missing (NaN) in rows "
            f"{df.index[missing].tolist()[:5]}; every row needs a group"
        )
    groups = []
    for key, frame in df.groupby(by, sort=True, dropna=False):
        key = tuple(v.item() if isinstance(v, np.generic) else v for v in key)
        groups.append((key[0] if len(by) == 1 else key, frame.drop(columns=by)))
    return groups


def fit_many(
    df: pd.DataFrame,
    by,
    client=None,
    *,
    seed: int = 0,
    keep: str = "results",
    errors: str = "raise",
    ci_prob: float = 0.95,
    **options,
) -> ManyResults:
    """Fit one analysis per group of a tidy frame, serially or as Dask tasks.

    Parameters
    ----------
    df : pandas.DataFrame
        Tidy rows as :func:`bayeval.from_frame` takes them, with the ``by`` column(s).
    by : str or list of str
        Column(s) whose distinct values are the groups (sorted; a row with a missing value is
        refused).
    client : None, distributed.Client, str, optional
        ``None``: one group after another in this process. A ``distributed.Client``, a
        scheduler address (``"tcp://host:8786"``) or ``"local"`` (a ``LocalCluster`` of
        processes with one thread each): one Dask task per group. Needs the ``bayeval[dask]``
        extra.
    seed : int, default 0
        Each group is fitted with :func:`group_seed` ``(seed, key)``, so a group's answer does
        not depend on the other groups or on where it ran.
    keep : {"results", "summary"}, default "results"
        Keep each group's full results (:meth:`ManyResults.results`), or only the summary (for
        thousands of groups whose trees would not fit in memory).
    errors : {"raise", "collect"}, default "raise"
        A group that fails is never dropped silently: ``"raise"`` raises
        :class:`FitManyError` naming every failed group and why, after all groups ran (its
        ``partial`` holds the others); ``"collect"`` returns them in ``ManyResults.errors``.
    ci_prob : float, default 0.95
        Probability of the summary intervals.
    **options
        :func:`bayeval.from_frame` options (``system``, ``task``, ``success``, ``successes``,
        ``trials``, ``cluster``, ``status``, ``missing``, ...) and :func:`bayeval.fit` options
        (``model``, ``sampler``, ``draws``, ``chains``, ...); any other keyword is refused.

    Returns
    -------
    ManyResults

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeval.many import fit_many
    >>> df = pd.DataFrame({"benchmark": ["a"] * 4 + ["b"] * 4, "system": "m",
    ...                    "task": [0, 1, 2, 3] * 2, "successes": [3, 5, 1, 4, 1, 2, 4, 3],
    ...                    "trials": 5})
    >>> many = fit_many(df, by="benchmark", success=None, successes="successes",
    ...                 trials="trials", model="hierarchical", sampler="grid", draws=100,
    ...                 chains=2)
    >>> many.dataset["pass_at_1_mean"].dims
    ('group', 'estimand', 'system')
    >>> many.results("b").model
    'hierarchical'
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame; got {type(df).__name__}")
    by_list = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else None
    if not by_list:
        raise TypeError(f"by must be a column name or a non-empty list of them; got {by!r}")
    absent = [c for c in by_list if c not in df.columns]
    if absent:
        raise ValueError(
            f"by names columns {absent} that df does not have; columns: "
            f"{describe_values(df.columns)}"
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TypeError(f"seed must be a non-negative integer; got {seed!r}")
    validate_choice("keep", keep, ("results", "summary"))
    validate_choice("errors", errors, ("raise", "collect"))
    ci_prob = validate_prob("ci_prob", ci_prob)
    frame_options, fit_options = split_options(options)
    fit_options.setdefault("progress", False)
    groups = _group_frames(df, by_list)
    seeds = [group_seed(int(seed), key) for key, _ in groups]
    if client is None:
        records = [
            _fit_group(key, frame, frame_options, fit_options, s, ci_prob, keep)
            for (key, frame), s in zip(groups, seeds, strict=True)
        ]
    else:
        records = _run_dask(client, groups, seeds, frame_options, fit_options, ci_prob, keep)
    for record in records:
        for _category, message in record["warnings"]:
            warnings.warn(f"group {record['key']!r}: {message}", BayevalWarning, stacklevel=2)
    settings = {
        "by": by_list,
        "seed": int(seed),
        "ci_prob": ci_prob,
        "keep": keep,
        "frame_options": repr(frame_options),
        "fit_options": repr(fit_options),
        "seeds": "SeedSequence(seed, spawn_key=SHA-256 of the group key)",
    }
    result = ManyResults(records, by_list, settings)
    if errors == "raise" and len(result.errors):
        lines = [
            f"  {row.group!r}: {row.error}: {row.message}" for row in result.errors.itertuples()
        ]
        raise FitManyError(
            f"{len(result.errors)} of {len(records)} group(s) failed "
            "(the others are in .partial):\n" + "\n".join(lines),
            result.errors,
            result,
        )
    return result


def _run_dask(client, groups, seeds, frame_options, fit_options, ci_prob, keep):
    client, owned = _client(client)
    try:
        frames = client.scatter([frame for _, frame in groups])
        futures = [
            client.submit(
                _fit_group,
                key,
                frame,
                frame_options,
                fit_options,
                s,
                ci_prob,
                keep,
                key=f"bayeval-fit_many-{i}-{s}",
                pure=False,
            )
            for i, ((key, _), frame, s) in enumerate(zip(groups, frames, seeds, strict=True))
        ]
        records = []
        for (key, _), s, future in zip(groups, seeds, futures, strict=True):
            try:
                records.append(future.result())
            except Exception as exc:  # the worker died or the task could not run
                records.append(
                    {
                        "key": key,
                        "seed": s,
                        "warnings": [],
                        "error": (type(exc).__name__, str(exc), traceback.format_exc()),
                    }
                )
        return records
    finally:
        if owned:
            cluster = getattr(client, "cluster", None)
            client.close()
            if cluster is not None:
                cluster.close()


class ManyResults:
    """The analyses of :func:`fit_many`: one summary Dataset over ``group``.

    Each group's :class:`~bayeval.Results` comes on demand.

    ``dataset`` holds, per group: ``pass_at_1_mean``, ``pass_at_1_sd``, ``pass_at_1_interval``
    (on ``ci_bound``), ``pass_at_1_mcse`` and ``pass_at_1_ess`` over ``(estimand, system)``
    (and ``missing_bound`` under ``missing="bounds"``; NaN where a group lacks a system or an
    estimand), ``coverage`` per system, the model, sampler, the reason for the model choice,
    the seed, the number of tasks and the MCMC diagnostics (NaN for the grid and conjugate
    engines). Several ``by`` columns make ``group`` a MultiIndex of them.
    """

    def __init__(self, records: list, by: list, settings: dict):
        self._by = by
        ok = [r for r in records if "error" not in r]
        self._netcdf = {r["key"]: r.get("netcdf") for r in ok}
        self._cache: dict[object, Results] = {}  # each group's results, once loaded
        self.errors = pd.DataFrame(
            [
                {
                    "group": r["key"],
                    "error": r["error"][0],
                    "message": r["error"][1],
                    "traceback": r["error"][2],
                }
                for r in records
                if "error" in r
            ],
            columns=["group", "error", "message", "traceback"],
        )
        self.dataset = _gather(ok, by, settings)

    @property
    def groups(self) -> list:
        """The keys of the groups that were fitted, in sorted order."""
        return list(self._netcdf)

    def results(self, group):
        """The full :class:`~bayeval.Results` of one group (``keep="results"``).

        Examples
        --------
        >>> import pandas as pd
        >>> from bayeval.many import fit_many
        >>> df = pd.DataFrame({"split": ["x"] * 3 + ["y"] * 3, "task": [0, 1, 2] * 2,
        ...                    "system": "m", "successes": [4, 0, 3, 5, 1, 2], "trials": 5})
        >>> many = fit_many(df, by="split", success=None, successes="successes",
        ...                 trials="trials", model="beta_binomial", draws=50, chains=1)
        >>> int(many.results("x").tree.attrs["seed"]) == many.dataset["seed"].sel(group="x").item()
        True
        """
        if group not in self._netcdf:
            raise KeyError(
                f"group {group!r} is not among the fitted groups {describe_values(self.groups)}"
            )
        if self._netcdf[group] is None:
            raise ValueError(
                "fit_many(keep='summary') kept only the summaries; refit with "
                "keep='results' for a group's full results"
            )
        if group not in self._cache:
            with xr.open_datatree(io.BytesIO(self._netcdf[group]), engine="h5netcdf") as tree:
                self._cache[group] = Results(tree.load())
        return self._cache[group]

    def to_frame(self) -> pd.DataFrame:
        """One row per group and system (and missing bound), with pass@1 per estimand.

        The columns: the ``by`` columns, the model, the seed, and pass@1's mean and interval per
        estimand.

        Examples
        --------
        >>> import pandas as pd
        >>> from bayeval.many import fit_many
        >>> df = pd.DataFrame({"split": ["x"] * 3 + ["y"] * 3, "task": [0, 1, 2] * 2,
        ...                    "system": "m", "successes": [4, 0, 3, 5, 1, 2], "trials": 5})
        >>> many = fit_many(df, by="split", success=None, successes="successes",
        ...                 trials="trials", model="beta_binomial", draws=50, chains=1)
        >>> many.to_frame().columns.tolist()[:5]
        ['split', 'system', 'model', 'seed', 'pass@1_tasks_mean']
        """
        ds = self.dataset
        wide = []
        for estimand in ds["estimand"].values:
            part = ds.sel(estimand=estimand)
            table = (
                xr.Dataset(
                    {
                        f"pass@1_{estimand}_mean": part["pass_at_1_mean"],
                        f"pass@1_{estimand}_lower": part["pass_at_1_interval"].sel(
                            ci_bound="lower", drop=True
                        ),
                        f"pass@1_{estimand}_upper": part["pass_at_1_interval"].sel(
                            ci_bound="upper", drop=True
                        ),
                    }
                )
                .drop_vars("estimand")
                .to_dataframe()
            )
            wide.append(table)
        out = pd.concat(wide, axis=1)
        mean_cols = [c for c in out.columns if c.endswith("_mean")]
        out = out[out[mean_cols].notna().any(axis=1)].reset_index()
        meta = ds[["model", "seed"]].to_dataframe().reset_index()
        keys = ["group"] if len(self._by) == 1 else self._by
        out = meta.merge(out, on=keys)
        if len(self._by) == 1:
            out = out.rename(columns={"group": self._by[0]})
        first = [*self._by, "system", "model", "seed"]
        return out[first + [c for c in out.columns if c not in first]]

    def __len__(self) -> int:
        """The number of groups fitted."""
        return len(self._netcdf)

    def __repr__(self) -> str:
        """The groups, the failures and the models chosen, in one line."""
        failed = f", {len(self.errors)} failed" if len(self.errors) else ""
        models = pd.Series(self.dataset["model"].values).value_counts().to_dict()
        return f"bayeval ManyResults: {len(self)} group(s) by {self._by}{failed}; models {models}"


def _gather(records: list, by: list, settings: dict) -> xr.Dataset:
    keys = [r["key"] for r in records]
    if len(by) == 1:
        index = pd.Index(keys, name="group", tupleize_cols=False)
    else:
        index = (
            pd.MultiIndex.from_tuples(keys, names=by)
            if keys
            else pd.MultiIndex(levels=[[]] * len(by), codes=[[]] * len(by), names=by)
        )
    frames = [r["summary"].assign(group=i) for i, r in enumerate(records)]
    names = {
        "mean": "pass_at_1_mean",
        "sd": "pass_at_1_sd",
        "mcse_mean": "pass_at_1_mcse",
        "ess_bulk": "pass_at_1_ess",
        "lower": "lower",
        "upper": "upper",
    }
    if frames:
        table = pd.concat(frames, ignore_index=True)
        dims = ["group", "estimand", "system"] + (
            ["missing_bound"] if "missing_bound" in table.columns else []
        )
        table = table.drop(columns=["metric", "k"]).set_index(dims)
        summary = xr.Dataset.from_dataframe(table[list(names)]).rename(names)
        summary["pass_at_1_interval"] = (
            xr.concat([summary["lower"], summary["upper"]], dim="ci_bound")
            .assign_coords(ci_bound=["lower", "upper"])
            .transpose(*dims, "ci_bound")
        )
        summary = summary.drop_vars(["lower", "upper"])
        coverage = pd.concat(
            [
                r["coverage"].rename("coverage").to_frame().assign(group=i)
                for i, r in enumerate(records)
            ]
        )
        coverage = coverage.rename_axis("system").reset_index().set_index(["group", "system"])
        summary["coverage"] = xr.Dataset.from_dataframe(coverage)["coverage"]
        summary = summary.reindex(group=np.arange(len(records)))
    else:
        summary = xr.Dataset(coords={"group": np.arange(0)})
    per_group = {
        "model": [r["attrs"]["model"] for r in records],
        "sampler": [r["attrs"]["sampler"] for r in records],
        "model_choice": [r["attrs"]["model_choice"] for r in records],
        "seed": np.array([r["seed"] for r in records], dtype=np.int64),
        "n_tasks": np.array([r["n_tasks"] for r in records], dtype=np.int64),
    }
    for name in _DIAGNOSTICS:
        per_group[name] = np.array([float(r["diagnostics"].get(name, np.nan)) for r in records])
    for name, values in per_group.items():
        summary[name] = (
            "group",
            np.asarray(values, dtype=object)
            if name in ("model", "sampler", "model_choice")
            else values,
        )
    summary = summary.drop_vars("group")
    summary = summary.assign_coords(
        xr.Coordinates.from_pandas_multiindex(index, "group") if len(by) > 1 else {"group": index}
    )
    summary.attrs = {**settings, "by": json.dumps(by)}
    return summary
