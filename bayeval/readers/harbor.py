"""Harbor job and trial folders: the results of Terminal-Bench 2 (and any Harbor dataset).

``harbor run`` writes one folder per job, ``jobs/<job name>/``, holding the job's
``config.json`` (its agents, datasets or tasks and ``n_attempts``) and ``result.json`` (``id``,
``started_at``, ``finished_at``, ``n_total_trials``, ``stats``), and one folder per trial,
``<task>__<7 characters>/``, with the trial's ``config.json`` and ``result.json`` (Harbor's
``TrialResult``: ``task_name``, ``trial_name``, ``source`` (the dataset), ``config.agent``
with ``name`` and ``model_name``, ``agent_info``, ``verifier_result`` with ``rewards``
(``{"reward": 1.0}``) or ``null``, ``exception_info`` with ``exception_type`` or ``null``,
``started_at``, ...). Each agent and model is a system (``<agent> (<model>)``, as Harbor's
``--agent`` and ``--model`` name them), each task a task and each trial an attempt, in the
order the trials started. Trials of several datasets are named ``<dataset>/<task>`` and
clustered by dataset. Several job folders (in one parent folder or listed) are read together;
a trial folder, or a trial's ``result.json``, can be read on its own.

Outcomes and statuses
---------------------
The verifier's reward (``rewards["reward"]``, or the only reward; ``reward_key=`` picks
another) gives the outcome: 1 is a success and 0 a failure. A partial reward (Harbor allows
any number) is refused unless ``threshold=`` says which reward a success needs. A trial whose
verifier gave no reward takes its exception as raw status (``exception_type``), mapped by
default (:data:`EXCEPTION_STATUS`): ``AgentTimeoutError`` and ``VerifierTimeoutError`` ->
``timeout``; ``RewardFileNotFoundError``, ``RewardFileEmptyError`` and
``VerifierOutputParseError`` (the tests wrote no reward that could be read) -> ``invalid``;
``CancelledError`` (the job was stopped) -> ``not_run``; any other exception (the environment
did not start, the agent could not be installed, ...) -> ``error``. An agent that timed out or
exited non-zero is still verified by Harbor: such a trial keeps its reward, with the raw
status ``<exception type> (verified)`` (``status_map={"AgentTimeoutError (verified)":
"timeout"}`` treats those as missing too). A trial with no verifier result and no exception
(the job ran with the verifier disabled) has the raw status ``verifier_disabled``, mapped to
``no_verdict``; a job none of whose trials was verified is refused.

Trials planned but not finished
-------------------------------
Harbor plans every agent x task x ``n_attempts`` (its job ``config.json``). When a job folder
is read (not single trials), a trial folder without ``result.json`` (the job was interrupted)
has the raw status ``unfinished`` and a planned trial with no folder ``not_run``, both
``not_run`` by default: each agent of the job gets ``n_attempts`` trials of every task any of
its trials ran (without ``config.json``, as many as the most any of them has). Planned trials
of tasks none of whose trials has a folder cannot be named (Harbor lists them only in its
dataset): when the job's ``n_total_trials`` says there are such trials, a warning and a
mapping note give their number. Tasks a job was not given are not planned for its systems
(see :mod:`bayeval.readers`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from numbers import Real
from pathlib import Path

import numpy as np

from bayeval.data import EvalData
from bayeval.errors import BayevalWarning
from bayeval.readers._common import (
    build,
    check_systems,
    expand,
    merge_status_map,
    read_json,
    short,
    show_values,
)

__all__ = ["EXCEPTION_STATUS", "is_config", "is_result", "read_harbor"]

_READER = "read_harbor"
#: Default bayeval status of a trial that has no reward, by its Harbor ``exception_type``;
#: any other exception type is ``error``.
EXCEPTION_STATUS = {
    "AgentTimeoutError": "timeout",
    "VerifierTimeoutError": "timeout",
    "RewardFileNotFoundError": "invalid",
    "RewardFileEmptyError": "invalid",
    "VerifierOutputParseError": "invalid",
    "CancelledError": "not_run",
}
_OTHER_EXCEPTION = "error"
_VERIFIED = " (verified)"
_UNFINISHED, _NOT_RUN, _DISABLED = "unfinished", "not_run", "verifier_disabled"
_LAST = "\uffff"  # sorts planned trials without a start time after every trial that started
#: ``(path, payload, finished)``: a trial's result.json, or the config.json of one unfinished.
_Trial = tuple[Path, Mapping, bool]


def read_harbor(
    path_or_paths,
    system=None,
    *,
    missing=None,
    status_map=None,
    threshold=None,
    reward_key=None,
    planned_trials=None,
) -> EvalData:
    """Read Harbor job folders (Terminal-Bench 2 runs: trials of tasks) into counts.

    Parameters
    ----------
    path_or_paths : path, folder, glob, list of them, or dict
        Job folders (``jobs/<job name>/``), a folder of them (searched recursively), a job's
        or a trial's ``result.json``, or a trial folder; ``{system: path(s)}`` names systems
        (the trials of an entry's paths are combined).
    system : str, optional
        System name for every trial. Default: ``<agent> (<model>)`` of each trial
        (``config.agent.name`` and ``model_name``). Two job folders of one agent and model
        are refused (combine them with ``{system: [job folders]}``); a name given for trials
        of several agents or models is refused.
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when a trial has no reward or a planned trial did
        not finish.
    status_map : mapping, optional
        Raw status (an exception type, ``<exception type> (verified)``, ``unfinished``,
        ``not_run``, ``verifier_disabled``) -> bayeval status, on top of the defaults
        (:data:`EXCEPTION_STATUS`, other exceptions ``error``, ``unfinished`` ``not_run``).
    threshold : float, optional
        The reward a success needs. Default: none, and a reward other than 0 or 1 is refused.
    reward_key : str, optional
        Which of the verifier's rewards to read. Default: ``"reward"``, or the only one.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file: not a Harbor result, a reward that is not a number, a partial reward
        without ``threshold=``, several rewards without ``reward_key=``, a trial twice, two
        jobs claiming one system, or a job run with the verifier disabled.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> job = pathlib.Path(tempfile.mkdtemp()) / "my-job"
    >>> agent = {"name": "terminus-2", "model_name": "openai/gpt-5"}
    >>> trials = [("fix-git", "a", 1.0), ("fix-git", "b", 0.0), ("hello", "c", 1.0),
    ...           ("hello", "d", None)]
    >>> for task, suffix, reward in trials:
    ...     trial = job / f"{task}__{suffix}"
    ...     trial.mkdir(parents=True)
    ...     _ = (trial / "result.json").write_text(json.dumps({
    ...         "task_name": task, "trial_name": trial.name, "source": "terminal-bench",
    ...         "config": {"agent": agent}, "started_at": f"2026-03-01T10:00:0{suffix}Z",
    ...         "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
    ...         "exception_info": None if reward is not None else
    ...             {"exception_type": "AgentTimeoutError", "exception_message": "900 s"}}))
    >>> _ = (job / "result.json").write_text(json.dumps({"n_total_trials": 4, "stats": {}}))
    >>> data = br.read_harbor(job, missing="exclude")
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['terminus-2 (openai/gpt-5)'], [[1, 1]])
    >>> int(data.status_counts.loc["terminus-2 (openai/gpt-5)", "timeout"])
    1
    """
    _check_options(threshold, reward_key)
    sources, named = _sources(path_or_paths, system)
    rows: list[dict] = []
    notes: list[str] = []
    fractional: list[tuple[Path, float]] = []
    owners: dict[str, Path] = {}
    seen: dict[tuple[str, str], Path] = {}
    files: list[Path] = []
    for name, group in sources:
        agents: dict[str, Path] = {}  # the agents and models a given name covers
        for unit, trials, job in group:
            files.append(unit / "result.json" if job is not None else trials[0][0])
            records = [_record(t, name, threshold, reward_key, fractional) for t in trials]
            if named:
                _check_name(records, name, unit, agents)
            for record in records:
                system = record["system"]
                owner = owners.setdefault(system, unit)
                if owner != unit and not named:
                    raise ValueError(
                        f"{_READER}: two jobs claim system {system!r}: '{owner}' and '{unit}'; "
                        "read repeated jobs of one agent and model as {system: [job "
                        "folders]} (their trials are combined), or name each job with a dict"
                    )
                key = (system, record["trial_name"])
                if key in seen:
                    raise ValueError(
                        f"{_READER}: trial {short(record['trial_name'])} of system "
                        f"{short(system)} appears twice ('{seen[key]}' and "
                        f"'{record['path']}'); a copied trial folder? pass only one of them"
                    )
                seen[key] = record["path"]
            rows += records
            if job is not None:
                rows += _planned(unit, job, records, name, notes)
            else:
                notes.append(f"'{unit}': {len(records)} trial(s), read without their job")
    _refuse_fractional(fractional)
    _refuse_unverified(rows)
    several = len({row["source"] for row in rows}) > 1
    rows.sort(key=lambda row: row["order"])
    tidy = [
        {
            "system": row["system"],
            "task": f"{row['source']}/{row['task']}" if several else row["task"],
            "success": row["success"],
            "status": row["status"],
            "cluster": row["source"],
        }
        for row in rows
    ]
    if threshold is not None:
        notes.append(f"success = reward >= {threshold:g}")
        partial = sum(1 for row in rows if row.get("partial"))
        if partial:
            notes.append(
                f"{partial} trial(s) with a reward strictly between 0 and 1, judged by the "
                f"threshold {threshold:g}"
            )
    return build(
        tidy,
        _READER,
        files,
        status_map=merge_status_map(_default_map(rows), status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=several,
        notes=notes,
        planned_by_source=True,
    )


def is_result(payload) -> bool:
    """Whether parsed JSON is a Harbor trial's or job's ``result.json``.

    Examples
    --------
    >>> from bayeval.readers.harbor import is_result
    >>> is_result({"task_name": "fix-git", "trial_name": "fix-git__x7Yz2Ab",
    ...            "verifier_result": None})
    True
    >>> is_result({"n_total_trials": 8, "stats": {"n_trials": 8}})
    True
    >>> is_result({"results": [{"task_id": "a", "is_resolved": True}]})
    False
    """
    return _is_trial(payload) or _is_job(payload)


def is_config(payload) -> bool:
    """Whether parsed JSON is a Harbor job's or trial's ``config.json`` (settings, no results).

    Examples
    --------
    >>> from bayeval.readers.harbor import is_config
    >>> is_config({"job_name": "2026-03-02__10-00-00", "n_attempts": 5, "agents": []})
    True
    >>> is_config({"task": {"path": "fix-git"}, "trial_name": "fix-git__x7Yz2Ab", "agent": {}})
    True
    >>> is_config({"task_name": "fix-git", "trial_name": "fix-git__x7Yz2Ab",
    ...            "verifier_result": None})
    False
    """
    if not isinstance(payload, Mapping) or is_result(payload):
        return False
    job = "n_attempts" in payload and "agents" in payload
    trial = isinstance(payload.get("task"), Mapping) and "trial_name" in payload
    return job or (trial and "agent" in payload)


def _is_trial(payload) -> bool:
    return (
        isinstance(payload, Mapping)
        and "trial_name" in payload
        and "task_name" in payload
        and "verifier_result" in payload
    )


def _is_job(payload) -> bool:
    return isinstance(payload, Mapping) and "n_total_trials" in payload and "stats" in payload


def _check_options(threshold, reward_key) -> None:
    if threshold is not None and (
        not isinstance(threshold, Real)
        or isinstance(threshold, bool)
        or not math.isfinite(threshold)
    ):
        raise TypeError(
            f"{_READER}: threshold must be a finite number (the reward a success needs) or "
            f"None; got {threshold!r}"
        )
    if reward_key is not None and not isinstance(reward_key, str):
        raise TypeError(
            f"{_READER}: reward_key must be the name of a reward (a str); "
            f"got {type(reward_key).__name__}"
        )


# -- finding jobs and trials -----------------------------------------------------------------
def _sources(path_or_paths, system):
    """``([(name or None, [(unit folder, [(path, payload)], job payload or None)])], named)``."""
    if check_systems(path_or_paths, system, _READER):
        return [(name, _units(spec)) for name, spec in path_or_paths.items()], True
    return [(system, _units(path_or_paths))], system is not None


def _units(spec) -> list[tuple[Path, list[_Trial], dict | None]]:
    """Jobs (with their trials) and trials read without their job, in path order."""
    if isinstance(spec, (list, tuple)) and not spec:
        raise ValueError(f"{_READER}: no files given")
    files = expand(
        spec,
        _READER,
        lambda p: p.name == "result.json",
        "Harbor result.json files (job or trial folders)",
    )
    payloads = {path: read_json(path, _READER) for path in files}
    trial_dirs = {p.parent for p, d in payloads.items() if _is_trial(d)}
    jobs = {p.parent: d for p, d in payloads.items() if _is_job(d)}
    loose: dict[Path, list[_Trial]] = {}
    for path, payload in payloads.items():
        if _is_job(payload) or any(parent in jobs for parent in path.parents):
            continue  # a job's trials are read from its folder below
        if not _is_trial(payload):
            if any(parent in trial_dirs for parent in path.parents):
                continue  # a file a trial's agent or tests wrote, inside the trial's folder
            found = sorted(map(str, payload))[:12] if isinstance(payload, Mapping) else None
            raise ValueError(
                f"{_READER}: '{path}' is not a Harbor result.json: a trial's holds "
                "'trial_name', 'task_name' and 'verifier_result', a job's 'n_total_trials' "
                f"and 'stats'; found {found or 'a JSON ' + type(payload).__name__}"
            )
        loose.setdefault(path.parent.parent, []).append((path, payload, True))
    units = [(folder, _job_trials(folder), job) for folder, job in jobs.items()]
    units += [(folder, trials, None) for folder, trials in loose.items()]
    units.sort(key=lambda unit: str(unit[0]))
    return [unit for unit in units if unit[1] or unit[2] is not None]


def _job_trials(job: Path) -> list[_Trial]:
    """The trials of a job folder, finished (``result.json``) or not (``config.json`` only)."""
    out: list[_Trial] = []
    try:
        folders = sorted(p for p in job.iterdir() if p.is_dir())
    except PermissionError as exc:
        raise PermissionError(f"{_READER}: the job folder '{job}' cannot be read ({exc})") from None
    for folder in folders:
        result, config = folder / "result.json", folder / "config.json"
        if result.is_file():
            payload = read_json(result, _READER)
            if not _is_trial(payload):
                raise ValueError(
                    f"{_READER}: '{result}' (a trial folder of the job '{job}') is not a "
                    "Harbor trial result: it needs 'trial_name', 'task_name' and "
                    "'verifier_result'"
                )
            out.append((result, payload, True))
        elif config.is_file():
            payload = read_json(config, _READER)
            if isinstance(payload, Mapping) and isinstance(payload.get("task"), Mapping):
                out.append((config, payload, False))
    return out


# -- one trial -------------------------------------------------------------------------------
def _record(trial: _Trial, name, threshold, reward_key, fractional) -> dict:
    """A trial's row: system, task, dataset, outcome, raw status, start order."""
    path, payload, finished = trial
    if not finished:  # a trial folder holding only its config.json
        config, task = payload, payload["task"]
        return {
            "system": name or _system_of(config, None, path),
            "natural": _system_of(config, None, path),
            "task": _task_of(task),
            "source": _text(task.get("source")),
            "success": np.nan,
            "status": _UNFINISHED,
            "trial_name": str(config.get("trial_name") or path.parent.name),
            "path": path,
            "order": (_LAST, str(path)),
        }
    config = _fields(payload.get("config"))
    success, status, partial = _outcome(payload, config, path, threshold, reward_key, fractional)
    natural = _system_of(config, payload.get("agent_info"), path)
    return {
        "system": name or natural,
        "natural": natural,
        "task": str(payload["task_name"]),
        "source": _text(payload.get("source")),
        "success": success,
        "status": status,
        "partial": partial,
        "trial_name": str(payload["trial_name"]),
        "path": path,
        "order": (str(payload.get("started_at") or _LAST), str(payload["trial_name"])),
    }


def _outcome(payload, config, path, threshold, reward_key, fractional):
    """``(success, raw status, partial reward?)`` of a trial result."""
    exception = payload.get("exception_info")
    kind = None
    if isinstance(exception, Mapping):
        kind = str(exception.get("exception_type") or "UnknownError")
    verifier = payload.get("verifier_result")
    rewards = verifier.get("rewards") if isinstance(verifier, Mapping) else None
    value = None
    if isinstance(rewards, Mapping) and rewards:
        value = rewards[_reward_key(rewards, reward_key, path)]
    if value is None:
        if kind is not None:
            return np.nan, kind, False
        if verifier is None:
            disabled = _fields(config.get("verifier")).get("disable") is True
            return np.nan, _DISABLED if disabled else "no_verifier_result", False
        return np.nan, "no_reward", False
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(
            f"{_READER}: '{path}' has the reward {short(value)}; Harbor's rewards are numbers"
        )
    status = None if kind is None else kind + _VERIFIED
    partial = value not in (0, 1)
    if threshold is not None:
        return float(value >= threshold), status, partial
    if partial:
        fractional.append((path, float(value)))
        return np.nan, status, partial
    return float(value), status, False


def _reward_key(rewards: Mapping, reward_key, path: Path) -> str:
    if reward_key is not None:
        if reward_key not in rewards:
            raise ValueError(
                f"{_READER}: '{path}' has no reward {reward_key!r} (reward_key=); its rewards "
                f"are {sorted(map(str, rewards))}"
            )
        return reward_key
    if "reward" in rewards:
        return "reward"
    if len(rewards) == 1:
        return next(iter(rewards))
    raise ValueError(
        f"{_READER}: '{path}' has several rewards {sorted(map(str, rewards))} and none named "
        "'reward'; choose one with reward_key="
    )


def _system_of(config: Mapping, info, path: Path) -> str:
    """``<agent> (<model>)`` as the trial's config names them (its agent info otherwise)."""
    agent, info = _fields(config.get("agent")), _fields(info)
    model_info = _fields(info.get("model_info"))
    name = agent.get("name") or info.get("name") or agent.get("import_path")
    model = agent.get("model_name")
    if not model and model_info.get("name"):
        provider = model_info.get("provider")
        model = f"{provider}/{model_info['name']}" if provider else model_info["name"]
    if name and model:
        return f"{name} ({model})"
    if name or model:
        return str(name or model)
    return path.parent.parent.name


def _task_of(task: Mapping) -> str:
    """The task name of a trial config's ``task`` (a path's last part, or a package name)."""
    if task.get("path"):
        return Path(str(task["path"])).name
    return str(task.get("name") or "?").split("/")[-1]


def _fields(value) -> Mapping:
    """A JSON object, or an empty one for anything else (a field that is null or missing)."""
    return value if isinstance(value, Mapping) else {}


def _text(value) -> str | None:
    return None if value is None else str(value)


def _check_name(records: list[dict], name, unit: Path, agents: dict[str, Path]) -> None:
    """A name given (``system=`` or a dict key) must cover one agent and model."""
    for record in records:
        agents.setdefault(record["natural"], unit)
    if len(agents) > 1:
        (first, where), (second, there) = list(agents.items())[:2]
        raise ValueError(
            f"{_READER}: system {short(name)} is given to trials of several agents or models: "
            f"{short(first)} ('{where}') and {short(second)} ('{there}'); read them without a "
            "name (each agent and model a system), or name each job with a dict"
        )


# -- a job's plan ----------------------------------------------------------------------------
def _planned(job: Path, result: dict, records: list[dict], name, notes: list[str]) -> list[dict]:
    """``not_run`` rows for the trials a job planned and has no folder for."""
    config_path = job / "config.json"
    config = _fields(read_json(config_path, _READER) if config_path.is_file() else None)
    attempts = config.get("n_attempts")
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        attempts = None
    systems = {record["system"]: None for record in records}
    for agent in config.get("agents") or []:
        if isinstance(agent, Mapping):
            systems.setdefault(name or _system_of({"agent": agent}, None, config_path), None)
    tasks: dict[tuple, None] = {(r["task"], r["source"]): None for r in records}
    for task in config.get("tasks") or []:
        if isinstance(task, Mapping) and (task.get("path") or task.get("name")):
            tasks.setdefault((_task_of(task), _text(task.get("source"))), None)
    count: dict[tuple, int] = {}
    for record in records:
        cell = (record["system"], record["task"], record["source"])
        count[cell] = count.get(cell, 0) + 1
    wanted = attempts if attempts is not None else max(count.values(), default=0)
    rows = []
    for system in systems:
        for task, source in tasks:
            for _ in range(max(wanted - count.get((system, task, source), 0), 0)):
                rows.append(
                    {
                        "system": system,
                        "task": task,
                        "source": source,
                        "success": np.nan,
                        "status": _NOT_RUN,
                        "order": (_LAST, ""),
                    }
                )
    finished = sum(1 for r in records if r["status"] != _UNFINISHED)
    note = (
        f"'{job}': {finished} trial result(s), {len(records) - finished} unfinished trial "
        f"folder(s), {len(rows)} planned trial(s) without a folder: not_run ({wanted} "
        f"attempt(s) per agent and task, {'inferred' if attempts is None else 'its config.json'})"
    )
    total = result.get("n_total_trials")
    accounted = len(records) + len(rows)
    if isinstance(total, int) and total > accounted:
        lost = (
            f"'{job}' planned {total} trials (n_total_trials) and {total - accounted} of them "
            "belong to tasks none of whose trials has a folder; Harbor names those tasks only "
            "in its dataset, so they are not counted (not even as not_run)"
        )
        note += f"; {lost}"
        warnings.warn(f"{_READER}: {lost}", BayevalWarning, stacklevel=3)
    if result.get("finished_at") is None:
        note += "; the job did not finish (finished_at is null)"
    notes.append(note)
    return rows


# -- refusals and the status map -------------------------------------------------------------
def _refuse_fractional(fractional: list[tuple[Path, float]]) -> None:
    if not fractional:
        return
    raise ValueError(
        f"{_READER}: {len(fractional)} trial(s) have a reward other than 0 and 1 "
        f"({show_values([v for _, v in fractional])}; e.g. '{fractional[0][0]}'): the task's "
        "verifier gives partial credit, and bayeval counts successes and failures; give "
        "threshold= (the reward a success needs: threshold=1 counts only full reward)"
    )


def _refuse_unverified(rows: list[dict]) -> None:
    statuses = [row["status"] for row in rows if row["status"] not in (_UNFINISHED, _NOT_RUN)]
    if statuses and all(status == _DISABLED for status in statuses):
        raise ValueError(
            f"{_READER}: none of the {len(statuses)} trial(s) read was verified: the job ran "
            "with the verifier disabled, so there is no outcome to count and a missing-outcome "
            "policy would only invent them; run the job with its verifier"
        )


def _default_map(rows: list[dict]) -> dict[str, str]:
    """Exception types of trials without a reward -> their status; unfinished -> not_run."""
    out = {_UNFINISHED: "not_run"}
    for row in rows:
        status = row["status"]
        if (
            status is not None
            and np.isnan(row["success"])
            and status not in out
            and status not in (_NOT_RUN, _DISABLED, "no_reward", "no_verifier_result")
            and not status.endswith(_VERIFIED)
        ):
            out[status] = EXCEPTION_STATUS.get(status, _OTHER_EXCEPTION)
    return out
