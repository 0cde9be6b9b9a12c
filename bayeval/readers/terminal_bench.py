"""Terminal-Bench run results: ``<run>/results.json`` with one record per trial.

The harness (``tb run``) writes ``runs/<run id>/results.json``: ``{"id", "results": [trial,
...], "resolved_ids", "unresolved_ids", "accuracy", ...}``, each trial with ``task_id``,
``trial_name`` (``<task>.<k>-of-<n>.<run id>``), ``is_resolved`` (``true``, ``false`` or ``null``
when the tests gave no verdict) and ``failure_mode``; beside it ``run_metadata.json`` names the
agent (``agent_name``) and model (``model_name``). A single trial's own ``results.json`` (one
record) is read as well. Each task is a bayeval task, each attempt a trial (in ``k`` order),
and the task family (the id before its first ``.``: ``crack-7z-hash.hard`` ->
``crack-7z-hash``) its cluster.

Outcomes and statuses
---------------------
``is_resolved`` gives the outcome; ``null`` is no outcome. The raw status is the trial's
``failure_mode`` (``unset`` when none was recorded: no raw status). Mapped by default
(:data:`FAILURE_STATUS`, overridable with ``status_map=``): ``parse_error`` -> ``invalid``,
``test_timeout`` -> ``timeout``, ``unknown_agent_error``, ``agent_installation_failed`` and
``unknown_error`` -> ``error``. Any other failure mode keeps a recorded verdict (an
``agent_timeout`` trial whose tests ran is a valid failure or success); with no verdict it is
``no_verdict``. ``status_map={"agent_timeout": "timeout"}`` treats agent timeouts as missing.

Leaderboard submissions
-----------------------
The public leaderboard repository (``laude-institute/terminal-bench-leaderboard``) keeps each
submission as the harness wrote it: ``results/<dataset>/<YYYYMMDD_agent_model>/`` holding the
run folders above (five runs per submission), so it needs no reader of its own; read a
submission as one system with ``{name: submission_folder}`` (its runs' trials combined). There
is no public per-task leaderboard file beyond these run folders.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bayeval.data import EvalData
from bayeval.readers._common import (
    build,
    check_path,
    check_systems,
    expand,
    merge_status_map,
    read_json,
    show_values,
)

__all__ = ["FAILURE_STATUS", "is_run_results", "read_terminal_bench"]

_READER = "read_terminal_bench"
#: Default bayeval status of each Terminal-Bench ``failure_mode``.
FAILURE_STATUS = {
    "parse_error": "invalid",
    "test_timeout": "timeout",
    "unknown_agent_error": "error",
    "agent_installation_failed": "error",
    "unknown_error": "error",
}
_ATTEMPT = re.compile(r"\.(?P<k>\d+)-of-(?P<n>\d+)(?:\.|$)")


def read_terminal_bench(
    path_or_paths,
    system=None,
    missing=None,
    cluster="family",
    *,
    status_map=None,
    planned_trials=None,
) -> EvalData:
    """Read Terminal-Bench run results (trials of tasks) into counts.

    Parameters
    ----------
    path_or_paths : path, folder, glob, list of them, or dict
        Run ``results.json`` files, or folders searched recursively for them (a run's
        per-trial ``results.json`` files inside its folder are skipped when the run file is
        present). ``{system: path(s)}`` names systems; several runs given for one system are
        combined, their trials numbered in order.
    system : str, optional
        System name for every file. Default: from the run's ``run_metadata.json``,
        ``<agent_name> (<model_name>)``; without metadata the run's folder name. Two runs
        claiming one system are refused (combine them with ``{system: [paths]}``).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when a trial has no verdict or a mapped failure.
    cluster : {"family"} or None
        ``"family"``: the task id before its first ``.``; ``None``: no clusters (on the
        command line ``--reader-option cluster=none``). Either way a trial without a verdict
        keeps its status, never a failure.
    status_map : mapping, optional
        ``failure_mode`` -> bayeval status, on top of :data:`FAILURE_STATUS`.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file: not a Terminal-Bench results file, an ``is_resolved`` that is not
        true/false/null, an attempt listed twice, or two runs claiming one system.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "my-run"
    >>> run.mkdir()
    >>> trials = [("hello-world", 1, True, "unset"), ("hello-world", 2, None, "parse_error"),
    ...           ("fix-git", 1, False, "agent_timeout"), ("fix-git", 2, True, "unset")]
    >>> _ = (run / "results.json").write_text(json.dumps({"results": [
    ...     {"task_id": t, "trial_name": f"{t}.{k}-of-2.my-run", "is_resolved": r,
    ...      "failure_mode": f} for t, k, r, f in trials]}))
    >>> _ = (run / "run_metadata.json").write_text(json.dumps(
    ...     {"agent_name": "terminus", "model_name": "openai/gpt-4o"}))
    >>> data = br.read_terminal_bench(run, missing="exclude")
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['terminus (openai/gpt-4o)'], [[1, 1]])
    >>> data.status_counts.loc["terminus (openai/gpt-4o)", "invalid"]
    np.int64(1)
    """
    if not (cluster is None or cluster == "family"):
        raise ValueError(
            f"{_READER}: cluster must be 'family' (the task id before its first "
            f"'.') or None (no clusters); got {cluster!r}"
        )
    pairs, named = _sources(path_or_paths, system)
    rows: list[dict] = []
    owner: dict[str, Path] = {}
    notes: list[str] = []
    for name, path in pairs:
        trials = _trials(read_json(path, _READER), path)
        if not named:
            first = owner.setdefault(name, path)
            if first != path:
                raise ValueError(
                    f"{_READER}: two runs claim system {name!r}: '{first}' and '{path}'; "
                    "read repeated runs of one system as {system: [paths]} (their trials are "
                    "combined), or name each run with a dict"
                )
        for task, attempt, resolved, mode in trials:
            rows.append(
                {
                    "system": name,
                    "task": task,
                    "success": resolved,
                    "status": None if mode in (None, "unset") else mode,
                    "cluster": task.split(".", 1)[0],
                    "attempt": attempt,
                    "file": path,
                }
            )
        notes.append(f"'{path}': {len(trials)} trials")
    seen: dict[tuple, dict] = {}
    for row in rows:
        key = (row["system"], row["task"], row["attempt"], row["file"])
        if row["attempt"] is not None and key in seen and seen[key] is not row:
            raise ValueError(
                f"{_READER}: attempt {row['attempt']} of task {row['task']!r} "
                f"appears twice in '{row['file']}'; a resumed run can leave a "
                "trial next to its retry"
            )
        seen[key] = row
    for row in rows:
        del row["attempt"], row["file"]
    return build(
        rows,
        _READER,
        [p for _, p in pairs],
        status_map=merge_status_map(FAILURE_STATUS, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=cluster is not None,
        notes=notes,
    )


def is_run_results(payload) -> bool:
    """Whether parsed JSON is a Terminal-Bench run's or trial's ``results.json``.

    Examples
    --------
    >>> from bayeval.readers.terminal_bench import is_run_results
    >>> is_run_results({"results": [{"task_id": "a", "is_resolved": None}]})
    True
    >>> is_run_results({"resolved_ids": ["a__b-1"], "unresolved_ids": []})
    False
    """
    if not isinstance(payload, Mapping):
        return False
    if _is_trial(payload):
        return True
    results = payload.get("results")
    return isinstance(results, list) and bool(results) and all(_is_trial(r) for r in results)


def _is_trial(record) -> bool:
    return isinstance(record, Mapping) and "task_id" in record and "is_resolved" in record


def _sources(path_or_paths, system) -> tuple[list[tuple[str, Path]], bool]:
    if check_systems(path_or_paths, system, _READER):
        return [(name, p) for name, spec in path_or_paths.items() for p in _files(spec)], True
    files = _files(path_or_paths)
    return [(system if system is not None else _system_of(p), p) for p in files], system is not None


def _files(spec) -> list[Path]:
    files = expand(
        spec, _READER, lambda p: p.name == "results.json", "Terminal-Bench results.json files"
    )
    runs = {p.parent for p in files}
    # a trial's own results.json sits in <run>/<task>/<trial>/: the run file covers it
    return [p for p in files if not any(r in p.parents for r in runs if r != p.parent)]


def _system_of(path: Path) -> str:
    meta = path.parent / "run_metadata.json"
    if meta.is_file():
        payload = read_json(check_path(meta, _READER), _READER)
        agent = payload.get("agent_name") if isinstance(payload, Mapping) else None
        model = payload.get("model_name") if isinstance(payload, Mapping) else None
        if agent and model:
            return f"{agent} ({model})"
        if agent or model:
            return str(agent or model)
    return path.resolve().parent.name


def _trials(payload, path) -> list[tuple]:
    if not is_run_results(payload):
        keys = sorted(payload)[:12] if isinstance(payload, Mapping) else type(payload).__name__
        raise ValueError(
            f"{_READER}: '{path}' is not a Terminal-Bench results.json: it needs "
            "'results', a list of trials with 'task_id' and 'is_resolved' (or one "
            f"trial record); found {keys}"
        )
    records = [payload] if _is_trial(payload) else payload["results"]
    out, bad = [], []
    for index, record in enumerate(records):
        resolved = record["is_resolved"]
        if resolved is not None and not isinstance(resolved, bool):
            bad.append((index, resolved))
            continue
        match = _ATTEMPT.search(str(record.get("trial_name", "")))
        attempt = int(match["k"]) if match else None
        out.append(
            (
                str(record["task_id"]),
                attempt,
                np.nan if resolved is None else float(resolved),
                record.get("failure_mode"),
            )
        )
    if bad:
        raise ValueError(
            f"{_READER}: '{path}' has 'is_resolved' values "
            f"{show_values([v for _, v in bad])} on results "
            f"{[i for i, _ in bad][:5]}; expected true, false or null"
        )
    # trials in attempt order within each task (stable for records without an attempt number)
    order = sorted(range(len(out)), key=lambda i: (out[i][1] is None, out[i][1] or 0))
    return [out[i] for i in order]
