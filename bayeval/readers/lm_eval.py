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
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bayeval._validate import describe_values
from bayeval.data import EvalData
from bayeval.readers._common import binary, build, describe_lines, read_jsonl

__all__ = ["harness_task", "read_lm_eval"]

_READER = "read_lm_eval"
_FILE = re.compile(r"^samples_(?P<task>.+?)(?:_(?P<date>\d{4}-\d{2}-\d{2}T[\d.\-]+))?\.jsonl$")
_NOT_METRICS = {"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter",
                "metrics", "doc_hash", "prompt_hash", "target_hash"}


def read_lm_eval(path_or_glob, system=None, metric=None, *, filter=None, cluster="task",
                 missing=None, status_map=None, planned_trials=None) -> EvalData:
    """Read lm-evaluation-harness ``samples_*.jsonl`` logs into counts.

    Parameters
    ----------
    path_or_glob : path, glob pattern, folder, list of them, or dict
        Sample files; a folder is searched recursively for ``samples_*.jsonl``. A dict maps
        system names to any of these.
    system : str, optional
        System name for every file. Default: the folder holding each file (the harness names it
        after the model, e.g. ``EleutherAI__pythia-160m``).
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
        Naming the file and lines: no sample files, an unknown metric or filter, a value that is
        not 0/1 (continuous metrics are not pass/fail), or a missing ``doc_id``.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> folder = pathlib.Path(tempfile.mkdtemp()) / "EleutherAI__pythia-160m"
    >>> folder.mkdir()
    >>> lines = [{"doc_id": i, "filter": "none", "metrics": ["acc", "acc_norm"],
    ...           "acc": a, "acc_norm": 1.0} for i, a in enumerate([1.0, 0.0, 1.0])]
    >>> _ = (folder / "samples_arc_easy_2024-05-13T14-07-22.123456.jsonl").write_text(
    ...     "".join(json.dumps(line) + "\\n" for line in lines))
    >>> data = br.read_lm_eval(folder, metric="acc")
    >>> data.systems, list(data.tasks)
    (['EleutherAI__pythia-160m'], ['arc_easy/0', 'arc_easy/1', 'arc_easy/2'])
    >>> data.dataset["successes"].values.tolist()
    [[1, 0, 1]]
    """
    if not (cluster is None or cluster == "task"):
        raise ValueError(f"{_READER}: cluster must be 'task' (the harness task of each document) "
                         f"or None (no clusters); got {cluster!r}")
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
            raise ValueError(f"{_READER}: no metric for harness task {task!r} ('{path}'); "
                             "metric= must be a name or a {task: name} dict covering it")
        for doc_id, success in _outcomes(chosen, path, key):
            rows.append({"system": name, "task": f"{task}/{doc_id}", "success": success,
                         "status": None, "cluster": task})
    return build(rows, _READER, [p for _, p in pairs], status_map=dict(status_map or {}),
                 missing=missing, planned_trials=planned_trials, cluster=cluster is not None)


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


def _files(path_or_glob, system) -> list[tuple[str, Path]]:
    if isinstance(path_or_glob, Mapping):
        if system is not None:
            raise TypeError(f"{_READER}: give system names either as dict keys or with "
                            "system=, not both")
        pairs = [(name, p) for name, spec in path_or_glob.items() for p in _expand(spec)]
    else:
        if system is not None and not isinstance(system, str):
            raise TypeError(f"{_READER}: system= must be a str; got {type(system).__name__}")
        pairs = [(system or p.resolve().parent.name, p) for p in _expand(path_or_glob)]
    return pairs


def _expand(spec) -> list[Path]:
    specs = spec if isinstance(spec, (list, tuple)) else [spec]
    files: list[Path] = []
    for item in specs:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"{_READER}: expected paths or glob patterns; got "
                            f"{type(item).__name__}")
        path = Path(item)
        if path.is_dir():
            found = sorted(path.rglob("samples_*.jsonl"))
            where = f"folder '{path}' (searched recursively for samples_*.jsonl)"
        elif path.is_file():
            found, where = [path], ""
        elif glob.has_magic(str(item)):
            found = sorted(Path(p) for p in glob.glob(str(item), recursive=True)
                           if Path(p).is_file())
            where = f"glob {str(item)!r}"
        else:
            raise FileNotFoundError(f"{_READER}: no such file, folder or glob match: '{item}'")
        if not found:
            raise ValueError(f"{_READER}: no sample files in {where}; run the harness with "
                             "--log_samples --output_path <dir> to write samples_<task>_*.jsonl")
        files += found
    return files


def _pick(records, path, task, filter) -> list[tuple[int, dict]]:
    """The lines of one filter."""
    present = list(dict.fromkeys(r.get("filter", "none") for _, r in records))
    wanted = filter.get(task) if isinstance(filter, Mapping) else filter
    if wanted is None:
        if len(present) > 1:
            raise ValueError(f"{_READER}: '{path}' has several filters {present}; choose one "
                             f"with filter= (a name, or a dict {{{task!r}: name}})")
        wanted = present[0]
    if wanted not in present:
        raise ValueError(f"{_READER}: filter {wanted!r} not found in '{path}'; "
                         f"its filters are {present}")
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
        raise ValueError(f"{_READER}: metric {metric!r} not found in '{path}' "
                         f"({describe_lines(no_metric)}); its metrics are {names}")
    if bad:
        binary_ones = [m for m in _metric_names(records) if _is_binary(records, m)]
        raise ValueError(
            f"{_READER}: metric {metric!r} in '{path}' is not pass/fail: found "
            f"{describe_values([v for _, v in bad])} on {describe_lines([n for n, _ in bad])}, "
            "but bayeval needs 0/1 outcomes (a continuous score is not a success); metrics of "
            f"this file that are 0/1: {binary_ones or 'none'}"
        )
    return out


def _primary(records, path) -> str:
    """The first metric the sample lines list (the task's primary metric)."""
    listed = next((r["metrics"] for _, r in records
                   if isinstance(r.get("metrics"), list) and r["metrics"]), None)
    if listed is None:
        raise ValueError(f"{_READER}: '{path}' lists no 'metrics' on its lines, so it has no "
                         f"primary metric; choose one with metric= (its keys: "
                         f"{_metric_names(records)})")
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
