"""lm-evaluation-harness per-sample logs (``--log_samples``).

The harness writes ``<output_path>/<model_name_sanitized>/samples_<task>_<timestamp>.jsonl``:
one line per document and filter, with ``doc_id``, ``doc``, ``target``, ``arguments``,
``resps``, ``filtered_resps``, ``filter`` (e.g. ``"none"``, ``"strict-match"``), ``metrics``
(the metric names) and each metric's value as a top-level key (``"acc": 1.0``). Each document is
one bayeval task ``<harness task>/<doc_id>``, clustered by the harness task.

Only pass/fail metrics fit bayeval's binary outcomes: every value of the chosen metric must be
0/1 (or true/false). Repeated samples become trials: a list-valued metric gives one trial per
element, and several sample files of one harness task for one system (repeated runs) give one
trial per file, in the order the files are given (sorted by name within a folder or glob).

The aggregated ``results_<timestamp>.json`` the harness writes beside the samples (``results``,
``configs``, ``config``, ...) is read through its sample files: the ``samples_<task>_<timestamp>
.jsonl`` of each task in its ``configs``, in the same folder and with the same timestamp. The
system is the model the file names (``model_name``, else ``pretrained`` of
``config.model_args``, else ``config.model``). A results file without its sample files is
refused: aggregate scores alone give no per-document outcomes, so re-run with
``--log_samples``.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bayeval.data import EvalData
from bayeval.readers._common import (
    binary,
    build,
    describe_lines,
    read_json,
    read_jsonl,
    show_values,
)

__all__ = ["harness_task", "is_results_file", "read_lm_eval"]

_READER = "read_lm_eval"
_FILE = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+))?\.jsonl$")
_RESULTS = re.compile(r"^results_(?P<date>.+)\.json$")
_NOT_METRICS = {
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
}


def read_lm_eval(
    path_or_glob,
    system=None,
    metric=None,
    *,
    filter=None,
    cluster="task",
    missing=None,
    status_map=None,
    planned_trials=None,
) -> EvalData:
    r"""Read lm-evaluation-harness ``samples_*.jsonl`` logs into counts.

    A samples line records the harness's automatic metrics only, with no field for a human's
    (trusted) label, so a judge beside labels (``judge=`` of :func:`bayeval.from_frame`) is
    not read from these logs.

    Parameters
    ----------
    path_or_glob : path, glob pattern, folder, list of them, or dict
        Sample files; a folder is searched recursively for ``samples_*.jsonl``; an aggregated
        ``results_<timestamp>.json`` stands for its tasks' sample files beside it. A dict maps
        system names to any of these.
    system : str, optional
        System name for every file. Default: the folder holding each sample file (the harness
        names it after the model, e.g. ``EleutherAI__pythia-160m``); for a ``results_*.json``
        the model it names (``model_name`` or ``config.model_args``).
    metric : str or mapping, optional
        The 0/1 metric to read (``"acc"``, ``"acc_norm"``, ``"exact_match"``, ``"pass@1"``,
        ...), or ``{harness task: metric}``. Default: each task's primary metric, the first of
        the ``metrics`` its sample lines list (the order of the task's ``metric_list``); a
        wrong choice is refused with the metrics the file has.
    filter : str or mapping, optional
        The filter whose rows to read (``"strict-match"``, ...), or ``{harness task: filter}``.
        Default: the only filter of each file; a file with several asks to choose.
    cluster : {"task"} or None
        ``"task"``: the harness task is the cluster of its documents; ``None``: no clusters
        (on the command line ``--reader-option cluster=none``).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, needed when a metric value is ``null``.
    status_map, planned_trials
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file and lines: no sample files (for a ``results_*.json``: none of its tasks'
        sample files beside it, or only some), an unknown metric or filter, a value that is not
        0/1 (continuous metrics are not pass/fail), or a missing ``doc_id``.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "EleutherAI__pythia-160m"
    >>> folder.mkdir()
    >>> lines = [{"doc_id": i, "filter": "none", "metrics": ["acc", "acc_norm"],
    ...           "acc": a, "acc_norm": 1.0} for i, a in enumerate([1.0, 0.0, 1.0])]
    >>> _ = (folder / "samples_arc_easy_2024-05-13T14-07-22.123456.jsonl").write_text(
    ...     "".join(json.dumps(line) + "\n" for line in lines))
    >>> data = br.read_lm_eval(folder, metric="acc")
    >>> data.systems, list(data.tasks)
    (['EleutherAI__pythia-160m'], ['arc_easy/0', 'arc_easy/1', 'arc_easy/2'])
    >>> data.dataset["successes"].values.tolist()
    [[1, 0, 1]]

    An aggregated ``results_<time>.json`` reads the sample files beside it, and names the
    system after the model it ran:

    >>> stamp = "2024-05-13T14-07-22.123456"
    >>> _ = (folder / f"results_{stamp}.json").write_text(json.dumps({
    ...     "results": {"arc_easy": {"acc,none": 0.667}}, "configs": {"arc_easy": {}},
    ...     "config": {"model": "hf", "model_args": "pretrained=EleutherAI/pythia-160m"}}))
    >>> br.read_lm_eval(folder / f"results_{stamp}.json", metric="acc").systems
    ['EleutherAI/pythia-160m']
    """
    if not (cluster is None or cluster == "task"):
        raise ValueError(
            f"{_READER}: cluster must be 'task' (the harness task of each document) "
            f"or None (no clusters); got {cluster!r}"
        )
    pairs = _files(path_or_glob, system)
    rows = []
    for name, path in pairs:
        task = harness_task(path)
        records = read_jsonl(path, _READER)
        chosen = _pick(records, path, task, filter)
        key = metric.get(task) if isinstance(metric, Mapping) else metric
        if metric is None:
            key = _primary(chosen, path)
        if not isinstance(key, str):
            raise ValueError(
                f"{_READER}: no metric for harness task {task!r} ('{path}'); "
                "metric= must be a name or a {task: name} dict covering it"
            )
        for doc_id, success in _outcomes(chosen, path, key):
            rows.append(
                {
                    "system": name,
                    "task": f"{task}/{doc_id}",
                    "success": success,
                    "status": None,
                    "cluster": task,
                }
            )
    return build(
        rows,
        _READER,
        [p for _, p in pairs],
        status_map=dict(status_map or {}),
        missing=missing,
        planned_trials=planned_trials,
        cluster=cluster is not None,
        planned_by_source=True,
    )


def harness_task(path) -> str:
    """The harness task of a ``samples_<task>_<timestamp>.jsonl`` file.

    Examples
    --------
    >>> from bayeval.readers.lm_eval import harness_task
    >>> harness_task("out/model/samples_mmlu_abstract_algebra_2024-05-13T14-07-22.123456.jsonl")
    'mmlu_abstract_algebra'
    """
    name = Path(path).name
    match = _FILE.match(name)
    return match["task"] if match else Path(name).stem


def is_results_file(payload) -> bool:
    """Whether a parsed JSON file is the harness's aggregated ``results_<timestamp>.json``.

    Examples
    --------
    >>> from bayeval.readers.lm_eval import is_results_file
    >>> is_results_file({"results": {"arc_easy": {"acc,none": 0.7}}, "versions": {}})
    True
    >>> is_results_file({"results": [{"task_id": "a", "is_resolved": True}]})
    False
    """
    return (
        isinstance(payload, Mapping)
        and isinstance(payload.get("results"), Mapping)
        and any(
            isinstance(payload.get(key), Mapping)
            for key in ("configs", "versions", "n-shot", "config", "higher_is_better")
        )
    )


def _files(path_or_glob, system) -> list[tuple[str, Path]]:
    if isinstance(path_or_glob, Mapping):
        if system is not None:
            raise TypeError(
                f"{_READER}: give system names either as dict keys or with system=, not both"
            )
        pairs = [(name, p) for name, spec in path_or_glob.items() for p, _ in _expand(spec)]
    else:
        if system is not None and not isinstance(system, str):
            raise TypeError(f"{_READER}: system= must be a str; got {type(system).__name__}")
        pairs = [
            (system or named or p.resolve().parent.name, p) for p, named in _expand(path_or_glob)
        ]
    return pairs


def _expand(spec) -> list[tuple[Path, str | None]]:
    """Sample files, each with the system its ``results_*.json`` names (or ``None``)."""
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    files: list[tuple[Path, str | None]] = []
    for item in specs:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(
                f"{_READER}: expected paths or glob patterns; got {type(item).__name__}"
            )
        path = Path(item)
        if path.is_file() and path.suffix.lower() == ".json":
            files += _from_results(path)
            continue
        if path.is_dir():
            found = sorted(path.rglob("samples_*.jsonl"))
            where = f"folder '{path}' (searched recursively for samples_*.jsonl)"
            aggregated = sorted(path.rglob("results_*.json"))
            if not found and aggregated:
                files += _from_results(aggregated[0])  # refuses: no samples beside it
                continue
        elif path.is_file():
            found, where = [path], ""
        elif glob.has_magic(str(item)):
            found = sorted(
                Path(p) for p in glob.glob(str(item), recursive=True) if Path(p).is_file()
            )
            where = f"glob {str(item)!r}"
        else:
            raise FileNotFoundError(f"{_READER}: no such file, folder or glob match: '{item}'")
        if not found:
            raise ValueError(
                f"{_READER}: no sample files in {where}; run the harness with "
                "--log_samples --output_path <dir> to write samples_<task>_*.jsonl"
            )
        files += [(p, None) for p in found]
    return files


def _from_results(path: Path) -> list[tuple[Path, str | None]]:
    """The sample files an aggregated ``results_<timestamp>.json`` names, and its model."""
    report = read_json(path, _READER)
    if not is_results_file(report):
        held = (
            sorted(map(str, report))[:12]
            if isinstance(report, Mapping)
            else f"a JSON {type(report).__name__}"
        )
        raise ValueError(
            f"{_READER}: '{path}' is neither a samples_<task>_<time>.jsonl file nor "
            "the harness's aggregated results_<time>.json (an object with "
            f"'results' and 'configs'/'versions'); found {held}"
        )
    tasks = _leaf_tasks(report)
    match = _RESULTS.match(path.name)
    date = match["date"] if match else None
    found: list[Path] = []
    lacking: list[str] = []
    for task in tasks:
        if date is not None:
            exact = path.parent / f"samples_{task}_{date}.jsonl"
            candidates = [exact] if exact.is_file() else []
        else:
            candidates = sorted(
                p for p in path.parent.glob(f"samples_{task}_*.jsonl") if harness_task(p) == task
            )
        if candidates:
            found += candidates
        else:
            lacking.append(task)
    shown = show_values(tasks, limit=6)
    if not found:
        raise ValueError(
            f"{_READER}: '{path}' is an aggregated lm-eval results file (tasks {shown}) with "
            "no per-sample files beside it (samples_<task>_"
            f"{date or '<time>'}.jsonl): its aggregate scores cannot be analysed per document "
            "(no outcomes, no pairing of systems on the same documents); re-run with "
            "--log_samples (and --output_path) and read the results file or its samples"
        )
    if lacking:
        raise ValueError(
            f"{_READER}: '{path}' lists tasks {shown}, but the sample files of "
            f"{show_values(lacking)} are not beside it (samples_<task>_{date or '<time>'}"
            ".jsonl); re-run them with --log_samples, or read the sample files there are "
            "directly"
        )
    return [(p, _model_name(report)) for p in found]


def _leaf_tasks(report: Mapping) -> list[str]:
    """The tasks that write sample files: those with a config (groups have none)."""
    configs = report.get("configs")
    if isinstance(configs, Mapping) and configs:
        return list(configs)
    groups = set(report.get("groups") or {}) | {
        g for g, members in (report.get("group_subtasks") or {}).items() if members
    }
    return [t for t in report["results"] if t not in groups]


def _model_name(report: Mapping) -> str | None:
    """The model a results file names: ``model_name``, ``pretrained=`` or ``config.model``."""
    if isinstance(report.get("model_name"), str) and report["model_name"]:
        return report["model_name"]
    given = report.get("config")
    config = given if isinstance(given, Mapping) else {}
    args = config.get("model_args")
    if isinstance(args, Mapping) and isinstance(args.get("pretrained"), str):
        return args["pretrained"]
    if isinstance(args, str):
        pairs = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
        if pairs.get("pretrained"):
            return pairs["pretrained"]
    model = config.get("model")
    return model if isinstance(model, str) and model else None


def _pick(records, path, task, filter) -> list[tuple[int, dict]]:
    """The lines of one filter."""
    present = list(dict.fromkeys(r.get("filter", "none") for _, r in records))
    wanted = filter.get(task) if isinstance(filter, Mapping) else filter
    if wanted is None:
        if len(present) > 1:
            raise ValueError(
                f"{_READER}: '{path}' has several filters {present}; choose one "
                f"with filter= (a name, or a dict {{{task!r}: name}})"
            )
        wanted = present[0]
    if wanted not in present:
        raise ValueError(
            f"{_READER}: filter {wanted!r} not found in '{path}'; its filters are {present}"
        )
    return [(n, r) for n, r in records if r.get("filter", "none") == wanted]


def _outcomes(records, path, metric: str) -> list[tuple]:
    """``[(doc_id, success), ...]``: one per trial, NaN for a ``null`` value."""
    out, no_doc, no_metric, bad = [], [], [], []
    for number, record in records:
        if "doc_id" not in record:
            no_doc.append(number)
            continue
        if metric not in record:
            no_metric.append(number)
            continue
        values = record[metric]
        for value in values if isinstance(values, list) else [values]:
            success = np.nan if value is None else binary(value)
            if success is None:
                bad.append((number, value))
            else:
                out.append((record["doc_id"], success))
    if no_doc:
        raise ValueError(f"{_READER}: '{path}' has no 'doc_id' on {describe_lines(no_doc)}")
    if no_metric:
        names = _metric_names(records)
        raise ValueError(
            f"{_READER}: metric {metric!r} not found in '{path}' "
            f"({describe_lines(no_metric)}); its metrics are {names}"
        )
    if bad:
        binary_ones = [m for m in _metric_names(records) if _is_binary(records, m)]
        raise ValueError(
            f"{_READER}: metric {metric!r} in '{path}' is not pass/fail: found "
            f"{show_values([v for _, v in bad])} on "
            f"{describe_lines(list(dict.fromkeys(n for n, _ in bad)))}, "
            "but bayeval needs 0/1 outcomes (a continuous score is not a success); metrics of "
            f"this file that are 0/1: {binary_ones or 'none'}"
        )
    return out


def _primary(records, path) -> str:
    """The first metric the sample lines list (the task's primary metric)."""
    listed = next(
        (r["metrics"] for _, r in records if isinstance(r.get("metrics"), list) and r["metrics"]),
        None,
    )
    if listed is None:
        raise ValueError(
            f"{_READER}: '{path}' lists no 'metrics' on its lines, so it has no "
            f"primary metric; choose one with metric= (its keys: "
            f"{_metric_names(records)})"
        )
    return listed[0]


def _metric_names(records) -> list[str]:
    names = {}
    for _, record in records:
        listed = record.get("metrics")
        keys = listed if isinstance(listed, list) else [k for k in record if k not in _NOT_METRICS]
        names.update(dict.fromkeys(keys))
    return list(names)


def _is_binary(records, metric: str) -> bool:
    for _, record in records:
        values = record.get(metric)
        for value in values if isinstance(values, list) else [values]:
            if value is not None and binary(value) is None:
                return False
    return True
