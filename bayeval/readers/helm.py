"""HELM per-instance statistics (``per_instance_stats.json`` of a run folder).

``helm-run`` writes one folder per run (a scenario x a model) under
``benchmark_output/runs/<suite>/``, holding ``run_spec.json`` (the scenario, the adapter and
the model, ``adapter_spec.model``) and ``per_instance_stats.json``: a list of records
``{"instance_id", "train_trial_index", "perturbation"?, "stats": [...]}``, each stat a
``{"name": {"name", "split", "perturbation"?}, "count", "sum", "min", "max", "mean", ...}``.

One metric is read (``metric=``; by default the first of :data:`CORRECTNESS_METRICS` the file
has). Each instance is a bayeval task (``instance_id``), each ``train_trial_index`` (a draw of
the in-context examples) a trial; the run's system is its model. A stat must hold one 0/1 value
(``count`` 1, ``sum`` 0 or 1): continuous metrics (``f1_score``, ``rouge_l``, ...) are refused
with the metrics of the file that are 0/1. A stat with ``count`` 0 (no value was computed) has
the raw status ``no_value``, mapped to ``no_verdict`` (so ``missing=`` is needed), overridable
with ``status_map=``.

Perturbed stats (robustness and fairness perturbations: typos, dialect, ...) are another
condition, not more trials of the same one: they are skipped (and counted in the mapping notes)
unless ``perturbation=`` names the one to read instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from bayeval.data import EvalData
from bayeval.readers._common import (
    build,
    check_systems,
    expand,
    merge_status_map,
    read_json,
    show_values,
)

__all__ = ["CORRECTNESS_METRICS", "is_per_instance_stats", "read_helm"]

_READER = "read_helm"
_FILE = "per_instance_stats.json"
#: 0/1 correctness metrics of HELM, in the order a default is chosen from them.
CORRECTNESS_METRICS = (
    "exact_match",
    "quasi_exact_match",
    "prefix_exact_match",
    "quasi_prefix_exact_match",
    "exact_match_indicator",
    "math_equiv",
    "math_equiv_chain_of_thought",
    "code_eval_acc",
    "exact_set_match",
    "equivalent",
    "pass",
)
_MODEL = re.compile(r"(?:^|[:,_])model=(?P<model>[^,]+)")


def read_helm(
    path_or_paths,
    system=None,
    metric=None,
    *,
    split=None,
    perturbation=None,
    cluster="scenario",
    missing=None,
    status_map=None,
    planned_trials=None,
) -> EvalData:
    """Read HELM ``per_instance_stats.json`` files (one run each) into counts.

    The format marks no stat as a trusted (human) label beside an automatic one for the same
    instances, so a judge beside labels (``judge=`` of :func:`bayeval.from_frame`) is not read
    from these files.

    Parameters
    ----------
    path_or_paths : path, folder, glob, list of them, or dict
        A ``per_instance_stats.json``, a run folder holding one, or a suite folder (searched
        recursively: each run is one system on one scenario); or ``{system: path(s)}``.
    system : str, optional
        System name for every file. Default: the model of the run, ``adapter_spec.model`` of
        the ``run_spec.json`` beside the file (``openai/gpt-4o-2024-05-13``), else the
        ``model=`` of the run folder's name; with neither, give ``system=``.
    metric : str, optional
        The stat to read (``"exact_match"``, ``"quasi_exact_match"``, ...). Default: the first
        of :data:`CORRECTNESS_METRICS` each file has. A name the file lacks is refused with the
        metric names it has.
    split : str or list of str, optional
        The split whose stats to read (``"test"``, ``"valid"``), or several (``["test",
        "valid"]``: their instances are all tasks). Default: the only split of the file; a file
        with several asks to choose. On the command line ``--reader-option split=test``,
        repeated for several.
    perturbation : str, optional
        Read the stats of this perturbation (by its ``name``, e.g. ``"typos"``) instead of the
        unperturbed ones. Default: unperturbed stats only; perturbed ones are skipped and
        counted in the mapping notes.
    cluster : {"scenario"} or None
        ``"scenario"``: each run's scenario (its run name without ``model=``) is the cluster of
        its instances; when several scenarios are read, tasks are named
        ``<scenario>/<instance_id>``. ``None``: no clusters.
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, needed when a stat has no value (``count`` 0).
    status_map : mapping, optional
        Raw status -> bayeval status on top of the default ``{"no_value": "no_verdict"}``.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file and records: not a list of per-instance records, an unknown metric,
        split or perturbation (with those the file has), a value that is not one 0/1, an
        instance and trial listed twice, or no system name.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "mmlu:subject=anatomy,model=org_model-a"
    >>> run.mkdir()
    >>> def stat(name, value):
    ...     return {"name": {"name": name, "split": "test"}, "count": 1, "sum": value}
    >>> records = [{"instance_id": f"id{i}", "train_trial_index": t,
    ...             "stats": [stat("num_references", 4), stat("exact_match", (i + t) % 2)]}
    ...            for i in range(3) for t in range(2)]
    >>> _ = (run / "per_instance_stats.json").write_text(json.dumps(records))
    >>> _ = (run / "run_spec.json").write_text(json.dumps(
    ...     {"name": run.name, "adapter_spec": {"model": "org/model-a"}}))
    >>> data = br.read_helm(run)
    >>> data.systems, list(data.tasks)
    (['org/model-a'], ['id0', 'id1', 'id2'])
    >>> data.dataset["successes"].values.tolist(), data.dataset["trials"].values.tolist()
    ([[1, 1, 1]], [[2, 2, 2]])
    """
    if not (cluster is None or cluster == "scenario"):
        raise ValueError(
            f"{_READER}: cluster must be 'scenario' (the scenario of each run) or "
            f"None (no clusters); got {cluster!r}"
        )
    for arg, value in (("metric", metric), ("perturbation", perturbation)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{_READER}: {arg}= must be a str; got {type(value).__name__}")
    if isinstance(split, (list, tuple)):
        if not split or not all(isinstance(s, str) for s in split):
            raise TypeError(f"{_READER}: split= must be a str or a non-empty list of str")
        split = list(dict.fromkeys(split))
    elif split is not None and not isinstance(split, str):
        raise TypeError(
            f"{_READER}: split= must be a str or a list of str; got {type(split).__name__}"
        )
    elif split is not None:
        split = [split]
    pairs = _sources(path_or_paths, system)
    runs, notes = [], []
    for name, path in pairs:
        records = read_json(path, _READER)
        _check_records(records, path)
        spec = _run_spec(path)
        scenario = _scenario(spec, path)
        if name is None:
            name = _model(spec, path)
        key = metric if metric is not None else _default_metric(records, path)
        outcomes, skipped = _outcomes(records, path, key, split, perturbation)
        runs.append((name, scenario, outcomes))
        notes.append(
            f"'{path}': metric {key!r}"
            + (f", perturbation {perturbation!r}" if perturbation is not None else "")
            + (
                f"; {skipped} perturbed stat(s) of {key!r} skipped (perturbation= reads them)"
                if skipped
                else ""
            )
        )
    several = len({scenario for _, scenario, _ in runs}) > 1
    seen: dict[tuple, Path] = {}
    rows = []
    for (name, scenario, outcomes), (_, path) in zip(runs, pairs, strict=True):
        for instance, trial, success, raw in outcomes:
            task = f"{scenario}/{instance}" if several else str(instance)
            first = seen.setdefault((name, task, trial), path)
            if first != path:
                raise ValueError(
                    f"{_READER}: system {name!r} has instance {instance!r} trial "
                    f"{trial} in both '{first}' and '{path}'; read repeated runs as "
                    "distinct systems (a {system: path} dict) or give one of them"
                )
            rows.append(
                {
                    "system": name,
                    "task": task,
                    "trial": trial,
                    "success": success,
                    "status": raw,
                    "cluster": scenario,
                }
            )
    rows.sort(key=lambda r: r["trial"])  # trials of a cell in train_trial_index order
    return build(
        rows,
        _READER,
        [p for _, p in pairs],
        status_map=merge_status_map({"no_value": "no_verdict"}, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=cluster is not None,
        notes=notes,
        planned_by_source=True,
    )


def is_per_instance_stats(payload) -> bool:
    """Whether a parsed JSON file is a HELM ``per_instance_stats.json`` (records with stats).

    Examples
    --------
    >>> from bayeval.readers.helm import is_per_instance_stats
    >>> is_per_instance_stats([{"instance_id": "id1", "train_trial_index": 0, "stats": []}])
    True
    >>> is_per_instance_stats([{"task_id": 1, "trial": 0, "reward": 1.0}])
    False
    """
    return (
        isinstance(payload, list)
        and bool(payload)
        and all(
            isinstance(r, Mapping) and "instance_id" in r and isinstance(r.get("stats"), list)
            for r in payload[:50]
        )
    )


def _sources(path_or_paths, system) -> list[tuple[str | None, Path]]:
    """``[(system or None, per_instance_stats.json), ...]``."""

    def accept(p: Path) -> bool:
        return p.name == _FILE

    what = f"HELM {_FILE} files"
    if check_systems(path_or_paths, system, _READER):
        return [
            (name, p)
            for name, spec in path_or_paths.items()
            for p in expand(_run_files(spec), _READER, accept, what)
        ]
    return [(system, p) for p in expand(_run_files(path_or_paths), _READER, accept, what)]


def _run_files(spec):
    """A run folder stands for its ``per_instance_stats.json``."""
    items = spec if isinstance(spec, (list, tuple)) else [spec]
    out = []
    for item in items:
        if isinstance(item, (str, Path)) and Path(item).is_dir() and (Path(item) / _FILE).is_file():
            out.append(Path(item) / _FILE)
        else:
            out.append(item)
    return out


def _check_records(records, path: Path) -> None:
    if not isinstance(records, list):
        found = (
            sorted(map(str, records))[:12]
            if isinstance(records, Mapping)
            else type(records).__name__
        )
        raise ValueError(
            f"{_READER}: '{path}' is not a HELM {_FILE}: it needs a JSON list of "
            f"records with 'instance_id', 'train_trial_index' and 'stats'; found "
            f"{found}"
        )
    bad = [
        i
        for i, r in enumerate(records)
        if not isinstance(r, Mapping)
        or "instance_id" not in r
        or not isinstance(r.get("stats"), list)
    ]
    if bad or not records:
        raise ValueError(
            f"{_READER}: '{path}' records {show_values(bad) if bad else '(none)'}"
            " lack 'instance_id' or a 'stats' list; a HELM per-instance record is "
            "{'instance_id', 'train_trial_index', 'stats': [...]}"
        )


def _run_spec(path: Path) -> Mapping:
    spec_path = path.parent / "run_spec.json"
    if not spec_path.is_file():
        return {}
    spec = read_json(spec_path, _READER)
    return spec if isinstance(spec, Mapping) else {}


def _scenario(spec: Mapping, path: Path) -> str:
    """The run's name without its ``model=`` argument (the scenario and method)."""
    given = spec.get("name")
    name = given if isinstance(given, str) else path.parent.name
    stripped = re.sub(r"([:,_])model=[^,]+", r"\1", name)
    return stripped.rstrip(",:_") or name


def _model(spec: Mapping, path: Path) -> str:
    adapter_spec = spec.get("adapter_spec")
    adapter = adapter_spec if isinstance(adapter_spec, Mapping) else {}
    for key in ("model", "model_deployment"):
        if isinstance(adapter.get(key), str) and adapter[key]:
            return adapter[key]
    match = _MODEL.search(path.parent.name)
    if match:
        return match["model"]
    raise ValueError(
        f"{_READER}: no system name for '{path}': no run_spec.json with "
        "adapter_spec.model beside it and no 'model=' in its folder's name; give "
        "system= (or a {system: path} dict)"
    )


def _metric_name(stat) -> tuple[str | None, str | None, Mapping | None]:
    name = stat.get("name") if isinstance(stat, Mapping) else None
    if not isinstance(name, Mapping):
        return None, None, None
    pert = name.get("perturbation")
    return name.get("name"), name.get("split"), pert if isinstance(pert, Mapping) else None


def _default_metric(records, path: Path) -> str:
    names = _names(records)
    for metric in CORRECTNESS_METRICS:
        if metric in names:
            return metric
    raise ValueError(
        f"{_READER}: '{path}' has none of HELM's 0/1 correctness metrics "
        f"{list(CORRECTNESS_METRICS)}; choose one with metric= (its metrics: "
        f"{show_values(names, limit=30)})"
    )


def _names(records) -> list[str]:
    names: dict[str, None] = {}
    for record in records:
        for stat in record["stats"]:
            metric = _metric_name(stat)[0]
            if metric is not None:
                names[metric] = None
    return list(names)


def _outcomes(records, path: Path, metric: str, split, perturbation):
    """``([(instance, trial, success, raw status), ...], perturbed stats skipped)``."""
    chosen: list[tuple] = []
    skipped = 0
    splits: dict[object, None] = {}  # the splits seen, in order
    perturbations: dict[str, None] = {}  # the perturbations seen, in order
    for index, record in enumerate(records):
        record_pert = record.get("perturbation")
        for stat in record["stats"]:
            name, stat_split, pert = _metric_name(stat)
            if name != metric:
                continue
            pert = pert or (record_pert if isinstance(record_pert, Mapping) else None)
            pert_name = None if pert is None else str(pert.get("name"))
            if pert_name is not None:
                perturbations[pert_name] = None
            if pert_name != perturbation:
                skipped += pert_name is not None and perturbation is None
                continue
            if pert is not None and pert.get("computed_on", "perturbed") != "perturbed":
                continue  # worst-case and original-side aggregates over perturbations
            splits[stat_split] = None
            chosen.append((index, record, stat_split, stat))
    if not chosen:
        if perturbation is not None and metric in _names(records):
            raise ValueError(
                f"{_READER}: '{path}' has no {metric!r} stats under perturbation "
                f"{perturbation!r}; its perturbations: "
                f"{list(perturbations) or 'none'}"
            )
        raise ValueError(
            f"{_READER}: metric {metric!r} not found in '{path}'; its metrics: "
            f"{show_values(_names(records), limit=30)}"
        )
    if split is None and len(splits) > 1:
        raise ValueError(
            f"{_READER}: '{path}' has {metric!r} stats of several splits "
            f"{list(splits)}; choose one with split= (or several, a list)"
        )
    if split is not None:
        absent = [s for s in split if s not in splits]
        if absent:
            raise ValueError(
                f"{_READER}: split {absent[0]!r} not found for {metric!r} in '{path}'; "
                f"its splits: {list(splits)}"
            )
        chosen = [c for c in chosen if c[2] in split]
    out: list[tuple[object, object, float, str | None]] = []
    bad: list[tuple[int, object, object]] = []
    twice: list[tuple] = []
    seen: set[tuple] = set()
    for index, record, _, stat in chosen:
        trial = record.get("train_trial_index", 0)
        key = (record["instance_id"], trial)
        if key in seen:
            twice.append(key)
            continue
        seen.add(key)
        count, total = stat.get("count"), stat.get("sum")
        if count == 0:
            out.append((record["instance_id"], trial, float("nan"), "no_value"))
        elif count == 1 and total in (0, 1) and not isinstance(total, bool):
            out.append((record["instance_id"], trial, float(total), None))
        else:
            bad.append((index, count, total))
    if twice:
        raise ValueError(
            f"{_READER}: '{path}' lists (instance, train_trial_index) "
            f"{show_values(twice)} twice for {metric!r}"
        )
    if bad:
        binary = [m for m in _names(records) if _is_binary(records, m)]
        shown = show_values([f"record {i}: count {c}, sum {s}" for i, c, s in bad])
        raise ValueError(
            f"{_READER}: metric {metric!r} in '{path}' is not one 0/1 value per "
            f"instance and trial ({shown}); bayeval needs pass/fail outcomes; "
            f"metrics of this file that are 0/1: {binary or 'none'}"
        )
    return out, skipped


def _is_binary(records, metric: str) -> bool:
    found = False
    for record in records:
        for stat in record["stats"]:
            if _metric_name(stat)[0] != metric:
                continue
            found = True
            if stat.get("count") not in (0, 1) or (
                stat.get("count") == 1 and stat.get("sum") not in (0, 1)
            ):
                return False
    return found
