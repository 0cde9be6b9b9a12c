"""τ²-bench results: the ``simulations`` JSON that ``tau2 run`` saves for each run.

A results file is ``{"timestamp", "info", "tasks", "simulations"}``: ``info`` names the agent
(``info.agent_info.llm``), the domain (``info.environment_info.domain_name``) and the trials
planned (``info.num_trials``); ``tasks`` lists the tasks the run was given; each simulation
records one task and trial (``task_id``, ``trial``), its ``reward_info.reward`` and its
``termination_reason``. The agent's model is the system, each task a task and each ``trial`` a
trial. When the files read cover several domains, tasks are named ``<domain>/<task_id>`` and the
domain is their cluster.

Outcomes and statuses
---------------------
A simulation succeeds when its reward is 1 (within 1e-6, τ²-bench's own ``is_successful``);
any other reward is a failure. Its ``termination_reason`` is its raw status when the episode
did not end normally (``user_stop``/``agent_stop``): ``max_steps``, ``too_many_errors``,
``agent_error``, ``user_error``, ``timeout``, ``context_window_exceeded``, ... keep their
recorded reward (as τ²-bench scores them) and can be mapped with ``status_map=`` (for example
``{"max_steps": "timeout"}``); ``infrastructure_error`` (a simulation that never ran, which
τ²-bench leaves out of its metrics) is status ``error``, with no outcome. A simulation with no
``reward_info`` has the raw status ``no_reward`` (no verdict). A task listed in ``tasks`` with
fewer simulations than ``info.num_trials`` is ``not_run`` for the trials it lacks; tasks a
run was not given are not planned for its system (see :mod:`bayeval.readers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bayeval.data import EvalData
from bayeval.readers._common import (
    build,
    default_system,
    expand,
    merge_status_map,
    read_json,
    short,
    show_values,
)

__all__ = ["is_results", "read_tau2_bench"]

_READER = "read_tau2_bench"
_NORMAL = ("user_stop", "agent_stop")
_NEVER_RAN = "infrastructure_error"


def read_tau2_bench(
    path_or_paths, system=None, *, missing=None, status_map=None, planned_trials=None
) -> EvalData:
    """Read τ²-bench results files (tasks x trials, rewards, termination reasons) into counts.

    Parameters
    ----------
    path_or_paths : path, folder, glob, list of them, or dict
        Results ``.json`` files (``data/simulations/<run>.json``; a folder is searched
        recursively for them), or ``{system: path(s)}``.
    system : str, optional
        System name for every file. Default: each run's agent model (``info.agent_info.llm``),
        else the file's stem.
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when a simulation hit an infrastructure error, has no
        reward, or a planned trial was not run.
    status_map : mapping, optional
        Raw status (a termination reason, ``no_reward``) -> bayeval status, on top of the
        default ``{"infrastructure_error": "error"}``.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`; by default each run's ``info.num_trials``.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file: not a τ²-bench results file, a simulation without ``task_id`` or
        with a non-numeric reward, or a (task, trial) pair twice for one system.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.json"
    >>> sims = [{"task_id": t, "trial": k, "reward_info": {"reward": r},
    ...          "termination_reason": "user_stop"}
    ...         for t, k, r in [("0", 0, 1.0), ("0", 1, 0.0), ("1", 0, 1.0), ("1", 1, 1.0)]]
    >>> _ = path.write_text(json.dumps({"timestamp": "2025-01-01", "tasks": [{"id": "0"},
    ...     {"id": "1"}], "info": {"num_trials": 2, "agent_info": {"llm": "gpt-4o"},
    ...     "environment_info": {"domain_name": "airline"}}, "simulations": sims}))
    >>> data = br.read_tau2_bench(path)
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['gpt-4o'], [[1, 2]])
    """
    if isinstance(path_or_paths, Mapping):
        if system is not None:
            raise TypeError(
                f"{_READER}: give system names either as dict keys or with system=, not both"
            )
        pairs = [(n, p) for n, spec in path_or_paths.items() for p in _files(spec)]
    else:
        if system is not None and not isinstance(system, str):
            raise TypeError(f"{_READER}: system= must be a str; got {type(system).__name__}")
        pairs = [(system, p) for p in _files(path_or_paths)]
    runs = []
    for name, path in pairs:
        payload = read_json(path, _READER)
        if not is_results(payload):
            found = sorted(map(str, payload))[:12] if isinstance(payload, dict) else "a list"
            raise ValueError(
                f"{_READER}: '{path}' is not a τ²-bench results file (an object with "
                f"'info', 'tasks' and a 'simulations' list); found {found}"
            )
        runs.append((name or _agent(payload, path), path, payload))
    domains = {_domain(payload) for _, _, payload in runs}
    several = len(domains) > 1
    rows: list[dict] = []
    notes: list[str] = []
    seen: dict[tuple, Path] = {}
    for name, path, payload in runs:
        domain = _domain(payload)
        simulations = _simulations(payload, path)
        for task, trial, success, raw in simulations:
            key = (name, domain, task, trial)
            if key in seen:
                raise ValueError(
                    f"{_READER}: task {short(task)} trial {trial} of system {short(name)} "
                    f"appears twice ('{seen[key]}' and '{path}'); a rerun beside its original? "
                    "pass only the files to combine"
                )
            seen[key] = path
            rows.append(_row(name, domain, task, trial, success, raw, several))
        planned = payload["info"].get("num_trials")
        given = [t.get("id") for t in payload.get("tasks") or [] if isinstance(t, Mapping)]
        done = {(task, trial) for task, trial, _, _ in simulations}
        lacking = 0
        for task in given:
            ran = sum(1 for u, _ in done if u == task)
            # trials planned: the run's num_trials; unknown, a listed task was given once
            wanted = planned if isinstance(planned, int) else int(ran == 0)
            for _ in range(max(wanted - ran, 0)):
                rows.append(_row(name, domain, task, None, np.nan, "not_run", several))
                lacking += 1
        if lacking:
            notes.append(
                f"'{path}': {lacking} planned trial(s) of its {len(given)} task(s) "
                f"({planned or 'at least 1'} trial(s) each) have no simulation: not_run"
            )
    rows.sort(key=lambda row: (row["trial_no"] is None, row["trial_no"] or 0))
    for row in rows:
        del row["trial_no"]
    return build(
        rows,
        _READER,
        [p for _, p, _ in runs],
        status_map=merge_status_map({_NEVER_RAN: "error"}, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=several,
        notes=notes,
        planned_by_source=True,
    )


def is_results(payload) -> bool:
    """Whether parsed JSON is a τ²-bench results file (``info``, ``tasks``, ``simulations``).

    Examples
    --------
    >>> from bayeval.readers.tau2_bench import is_results
    >>> is_results({"info": {}, "tasks": [], "simulations": []})
    True
    >>> is_results([{"task_id": 0, "trial": 0, "reward": 1.0}])
    False
    """
    return (
        isinstance(payload, Mapping)
        and isinstance(payload.get("simulations"), list)
        and isinstance(payload.get("info"), Mapping)
        and "tasks" in payload
    )


def _files(spec) -> list[Path]:
    return expand(
        spec, _READER, lambda p: p.suffix.lower() == ".json", "τ²-bench results .json files"
    )


def _agent(payload, path: Path) -> str:
    agent = payload["info"].get("agent_info")
    llm = agent.get("llm") if isinstance(agent, Mapping) else None
    return llm if isinstance(llm, str) and llm else default_system(path)


def _domain(payload) -> str | None:
    env = payload["info"].get("environment_info")
    name = env.get("domain_name") if isinstance(env, Mapping) else None
    return name if isinstance(name, str) else None


def _row(name, domain, task, trial, success, raw, several) -> dict:
    return {
        "system": name,
        "task": f"{domain}/{task}" if several else task,
        "success": success,
        "status": raw,
        "cluster": domain,
        "trial_no": trial,
    }


def _simulations(payload, path: Path) -> list[tuple]:
    """``[(task_id, trial, success, raw status), ...]`` of a results file's simulations."""
    out, no_task, bad = [], [], []
    for index, sim in enumerate(payload["simulations"]):
        if not isinstance(sim, Mapping) or sim.get("task_id") is None:
            no_task.append(index)
            continue
        reason = sim.get("termination_reason")
        raw = None if reason in _NORMAL or reason is None else str(reason)
        info = sim.get("reward_info")
        reward = info.get("reward") if isinstance(info, Mapping) else None
        if raw == _NEVER_RAN:
            success = np.nan
        elif reward is None:
            success, raw = np.nan, raw or "no_reward"
        elif isinstance(reward, bool) or not isinstance(reward, (int, float)):
            bad.append((index, reward))
            continue
        else:
            success = float(abs(reward - 1.0) <= 1e-6)
        out.append((sim["task_id"], sim.get("trial", 0), success, raw))
    if no_task:
        raise ValueError(
            f"{_READER}: '{path}' has simulations without a 'task_id' (indices "
            f"{show_values(no_task)})"
        )
    if bad:
        raise ValueError(
            f"{_READER}: '{path}' has rewards {show_values([v for _, v in bad])} that are not "
            f"numbers (simulations {show_values([i for i, _ in bad])})"
        )
    return out
