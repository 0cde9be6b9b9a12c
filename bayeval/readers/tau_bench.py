"""τ-bench trajectories: ``[{"task_id", "trial", "reward", "info", "traj"}, ...]``.

``tau_bench.run`` saves one JSON list per run (the repository's
``historical_trajectories/<model>-<domain>.json``): one record per task and trial, with the
episode's ``reward`` and ``info`` (``info["error"]`` when the episode raised). The model is the
system, each ``task_id`` a task and each ``trial`` a trial (kept as numbered).

Outcomes and statuses
---------------------
An episode succeeds when its reward is at least ``threshold`` (default 1.0: τ-bench counts a
task solved only at full reward, as in its pass^k). A reward below it is a failure; a reward
strictly between 0 and 1 is still judged by the threshold, and the reader says how many there
were. An episode that raised (``info["error"]``) has raw status ``error`` (no outcome); one
whose ``info`` holds no ``reward_info`` (the episode stopped without being graded, reward 0)
keeps its failure with the raw status ``no_reward_info`` (map it, e.g. to ``no_verdict``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from pathlib import Path

import numpy as np

from bayeval.data import EvalData
from bayeval.readers._common import (
    build,
    default_system,
    expand,
    merge_status_map,
    read_json,
    show_values,
)

__all__ = ["is_trajectories", "read_tau_bench"]

_READER = "read_tau_bench"


def read_tau_bench(
    path_or_paths, system=None, missing=None, *, threshold=1.0, status_map=None, planned_trials=None
) -> EvalData:
    """Read τ-bench trajectory files (tasks x trials, rewards) into counts.

    Parameters
    ----------
    path_or_paths : path, folder, glob, list of them, or dict
        Trajectory ``.json`` files (one system each), or ``{system: path}``.
    system : str, optional
        System name for every file. Default: the file's stem (``gpt-4o-airline``).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when an episode errored.
    threshold : float
        The reward an episode needs to count as a success (default 1.0, τ-bench's own rule).
    status_map : mapping, optional
        Raw status (``error``, ``no_reward_info``) -> bayeval status.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file and records: not a trajectory list, a missing or non-numeric reward,
        a (task, trial) pair listed twice, or two files claiming one system.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gpt-4o-airline.json"
    >>> episodes = [{"task_id": t, "trial": k, "reward": r, "info": {"reward_info": {}}}
    ...             for t, k, r in [(0, 0, 1.0), (0, 1, 0.0), (1, 0, 1.0), (1, 1, 1.0)]]
    >>> _ = path.write_text(json.dumps(episodes))
    >>> data = br.read_tau_bench(path)
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['gpt-4o-airline'], [[1, 2]])
    """
    if (
        not isinstance(threshold, Real)
        or isinstance(threshold, bool)
        or not math.isfinite(threshold)
    ):
        raise TypeError(
            f"{_READER}: threshold must be a finite number (the reward a success "
            f"needs); got {threshold!r}"
        )
    if isinstance(path_or_paths, Mapping):
        if system is not None:
            raise TypeError(
                f"{_READER}: give system names either as dict keys or with system=, not both"
            )
        pairs = [(n, p) for n, spec in path_or_paths.items() for p in _files(spec)]
    else:
        if system is not None and not isinstance(system, str):
            raise TypeError(f"{_READER}: system= must be a str; got {type(system).__name__}")
        pairs = [(system or default_system(p), p) for p in _files(path_or_paths)]
    rows: list[dict] = []
    notes = [f"success = reward >= {threshold:g}"]
    owner: dict[str, Path] = {}
    for name, path in pairs:
        if name in owner and not isinstance(path_or_paths, Mapping) and system is None:
            raise ValueError(
                f"{_READER}: two files claim system {name!r}: '{owner[name]}' and "
                f"'{path}'; name them with a dict {{system: path}}"
            )
        owner.setdefault(name, path)
        episodes, partial = _episodes(read_json(path, _READER), path, threshold)
        if partial:
            notes.append(
                f"'{path}': {partial} episode(s) with a reward strictly between 0 "
                f"and 1, judged by the threshold {threshold:g}"
            )
        rows += [
            {
                "system": name,
                "task": task,
                "success": success,
                "status": raw,
                "cluster": None,
                "trial_no": trial,
            }
            for task, trial, success, raw in episodes
        ]
    seen = set()
    for row in rows:
        key = (row["system"], row["task"], row["trial_no"])
        if key in seen:
            raise ValueError(
                f"{_READER}: task {row['task']!r} trial {row['trial_no']} appears "
                f"twice for system {row['system']!r}"
            )
        seen.add(key)
    rows.sort(key=lambda row: row["trial_no"])  # stable: trials in trial order
    for row in rows:
        del row["trial_no"]
    return build(
        rows,
        _READER,
        [p for _, p in pairs],
        status_map=merge_status_map({}, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=False,
        notes=notes,
    )


def is_trajectories(payload) -> bool:
    """Whether parsed JSON is a τ-bench trajectory list.

    Examples
    --------
    >>> from bayeval.readers.tau_bench import is_trajectories
    >>> is_trajectories([{"task_id": 0, "trial": 0, "reward": 1.0, "info": {}}])
    True
    """
    return (
        isinstance(payload, list)
        and bool(payload)
        and all(
            isinstance(r, Mapping) and {"task_id", "reward", "trial"} <= set(r) for r in payload
        )
    )


def _files(spec) -> list[Path]:
    return expand(
        spec, _READER, lambda p: p.suffix.lower() == ".json", "τ-bench trajectory files (.json)"
    )


def _episodes(payload, path, threshold) -> tuple[list[tuple], int]:
    if not is_trajectories(payload):
        found = (
            f"a list whose first record has keys {sorted(payload[0])[:10]}"
            if isinstance(payload, list) and payload and isinstance(payload[0], Mapping)
            else f"a JSON {type(payload).__name__}"
        )
        raise ValueError(
            f"{_READER}: '{path}' is not a τ-bench trajectory file: it needs a "
            "list of records with 'task_id', 'trial' and 'reward'; found " + found
        )
    out: list[tuple[object, object, float, str | None]] = []
    bad: list[tuple[int, object]] = []
    partial = 0
    for index, record in enumerate(payload):
        reward, info = record["reward"], record.get("info") or {}
        if not isinstance(info, Mapping):
            info = {}
        if info.get("error") is not None:
            out.append((record["task_id"], record["trial"], np.nan, "error"))
            continue
        if not isinstance(reward, Real) or isinstance(reward, bool) or not math.isfinite(reward):
            bad.append((index, reward))
            continue
        partial += 0 < float(reward) < 1
        raw = "no_reward_info" if "reward_info" in info and info["reward_info"] is None else None
        out.append((record["task_id"], record["trial"], float(reward >= threshold), raw))
    if bad:
        raise ValueError(
            f"{_READER}: '{path}' has rewards {show_values([v for _, v in bad])}"
            f" on records {[i for i, _ in bad][:5]}; a reward must be a number"
        )
    return out, partial
