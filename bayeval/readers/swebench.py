"""SWE-bench-style run reports: lists of instance ids by outcome, one report per system.

The official harness (``swebench.harness.run_evaluation``) writes ``<model>.<run_id>.json``
with ``resolved_ids``, ``unresolved_ids``, ``error_ids``, ``empty_patch_ids`` and
``incomplete_ids`` (disjoint), plus ``submitted_ids`` and ``completed_ids`` (supersets); the
multi-SWE-bench ``results/results.json`` uses the same keys, some without ``_ids``
(``"resolved": [...]``). A per-instance map ``{instance_id: {"resolved": bool, ...}}`` (the
harness's ``report.json``) is read as well.

Outcomes and statuses
---------------------
``resolved`` -> success 1; ``unresolved`` -> 0; ``error`` (the harness failed) -> status
``error``, no outcome; ``empty_patch`` -> a recorded failure (0) whose raw status
``empty_patch`` can be mapped (``status_map={"empty_patch": "invalid"}``); ``incomplete`` (no
prediction submitted) -> ``not_run``. A ``completed`` id with no verdict is ``no_verdict``;
``submitted`` ids outside every list were not part of the evaluated dataset and are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from bayeval._validate import describe_values
from bayeval.data import EvalData
from bayeval.readers._common import build, default_system, merge_status_map, read_json, sources

__all__ = ["OUTCOME_KEYS", "read_swebench", "repository"]

#: Report lists that give an outcome: raw status -> (success, default bayeval status or None).
OUTCOME_KEYS = {
    "resolved": (1.0, None),
    "unresolved": (0.0, None),
    "empty_patch": (0.0, None),
    "error": (np.nan, "error"),
    "incomplete": (np.nan, "not_run"),
}
_SUPERSETS = ("completed", "submitted")
_INSTANCE = re.compile(r"^(?P<owner>[^/]+?)__(?P<repo>.+)-(?P<number>\d+)$")
_READER = "read_swebench"


def read_swebench(path_or_paths, system=None, missing=None, cluster="repository", *,
                  status_map=None, planned_trials=None) -> EvalData:
    """Read SWE-bench-style reports (lists of instance ids by outcome) into counts.

    Parameters
    ----------
    path_or_paths : path, list of paths, or dict
        One JSON report per system, or ``{system: path}`` (a list of paths for one system reads
        repeated runs as trials, in order).
    system : str, optional
        System name for the file(s) given. Default: the file's stem (``<model>.<run_id>`` for
        the official harness), or for a generic name such as ``results.json`` the nearest
        non-generic folder above it (``<system>/results/results.json``).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when any instance errored or was not run.
    cluster : {"repository"} or None
        ``"repository"`` clusters instances by the repository in their id
        (``owner__repo-1234`` -> ``owner/repo``); ``None`` gives no clusters.
    status_map : mapping, optional
        Raw status -> bayeval status, on top of the defaults (``error`` -> ``error``,
        ``incomplete`` -> ``not_run``): e.g. ``{"empty_patch": "invalid"}``.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file when it is not a report (no ``resolved``/``unresolved`` lists), when an
        id sits in two outcome lists, or when an id does not parse as ``owner__repo-number``
        under ``cluster="repository"``.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> report = {"resolved_ids": ["django__django-1", "astropy__astropy-7"],
    ...           "unresolved_ids": ["django__django-2"], "error_ids": ["django__django-3"],
    ...           "empty_patch_ids": [], "incomplete_ids": []}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "agent-x.run1.json"
    >>> _ = path.write_text(json.dumps(report))
    >>> data = br.read_swebench(path, missing="fail")
    >>> data.systems, data.dataset["successes"].values.tolist()
    (['agent-x.run1'], [[1, 1, 0, 0]])
    >>> data.dataset["cluster"].values.tolist()
    ['django/django', 'astropy/astropy', 'django/django', 'django/django']
    >>> int(data.status_counts.loc["agent-x.run1", "error"])
    1
    """
    if not (cluster is None or cluster == "repository"):
        raise ValueError(f"{_READER}: cluster must be 'repository' (the repository in each "
                         f"instance id) or None (no clusters); got {cluster!r}")
    pairs = sources(path_or_paths, system, _READER, default_system)
    rows = []
    for name, path in pairs:
        for instance, raw in _report_outcomes(read_json(path, _READER), path):
            success = OUTCOME_KEYS[raw][0] if raw in OUTCOME_KEYS else np.nan
            rows.append({"system": name, "task": instance, "success": success, "status": raw,
                         "cluster": None})
    if cluster == "repository":
        ids = [row["task"] for row in rows]
        repos = {i: repository(i) for i in dict.fromkeys(ids)}
        bad = [i for i, r in repos.items() if r is None]
        if bad:
            raise ValueError(f"{_READER}: instance ids {describe_values(bad)} do not look like "
                             "'owner__repo-number', so no repository can be read from them; "
                             "pass cluster=None to read them without clusters")
        for row in rows:
            row["cluster"] = repos[row["task"]]
    defaults = {raw: status for raw, (_, status) in OUTCOME_KEYS.items() if status is not None}
    defaults["completed"] = "no_verdict"
    return build(rows, _READER, [p for _, p in pairs],
                 status_map=merge_status_map(defaults, status_map, _READER),
                 missing=missing, planned_trials=planned_trials, cluster=cluster is not None)


def repository(instance_id: str) -> str | None:
    """``owner/repo`` from an instance id ``owner__repo-1234``; ``None`` if it does not parse.

    Examples
    --------
    >>> from bayeval.readers.swebench import repository
    >>> repository("fasterxml__jackson-dataformat-xml-544"), repository("no-repo-here")
    ('fasterxml/jackson-dataformat-xml', None)
    """
    match = _INSTANCE.match(str(instance_id))
    return None if match is None else f"{match['owner']}/{match['repo']}"


def _report_outcomes(report, path) -> list[tuple[str, str]]:
    """``[(instance id, raw status), ...]`` of one report, in report order."""
    if isinstance(report, Mapping) and report and all(
        isinstance(v, Mapping) and "resolved" in v for v in report.values()
    ):
        return _instance_reports(report, path)
    if not isinstance(report, Mapping):
        raise ValueError(f"{_READER}: '{path}' must hold a JSON object (a SWE-bench report); "
                         f"found a {type(report).__name__}")
    lists = {key: _id_list(report, key, path) for key in (*OUTCOME_KEYS, *_SUPERSETS)}
    if lists["resolved"] is None or lists["unresolved"] is None:
        raise ValueError(
            f"{_READER}: '{path}' is not a SWE-bench report: it needs 'resolved_ids' (or "
            "'resolved') and 'unresolved_ids' (or 'unresolved') lists of instance ids, "
            "optionally 'error_ids', 'empty_patch_ids', 'incomplete_ids', 'completed_ids', "
            f"'submitted_ids'; found keys {describe_values(sorted(report), limit=12)}"
        )
    seen: dict[str, str] = {}
    clashes = []
    outcomes = []
    for key in OUTCOME_KEYS:
        for instance in lists[key] or []:
            if instance in seen:
                clashes.append(f"{instance!r} ({seen[instance]} and {key})")
                continue
            seen[instance] = key
            outcomes.append((instance, key))
    if clashes:
        raise ValueError(f"{_READER}: '{path}' lists instances under two outcomes: "
                         f"{', '.join(clashes[:5])}; each instance needs exactly one of "
                         f"{list(OUTCOME_KEYS)}")
    outcomes += [(i, "completed") for i in lists["completed"] or [] if i not in seen]
    return outcomes


def _id_list(report: Mapping, key: str, path) -> list | None:
    """The list under ``<key>_ids`` or ``<key>`` (both must agree when both are present)."""
    found = [report[k] for k in (f"{key}_ids", key) if k in report]
    found = [v for v in found if not isinstance(v, (int, float))]  # e.g. "resolved": 3 counts
    for value in found:
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise ValueError(f"{_READER}: '{path}' key {key + '_ids'!r}/{key!r} must be a list "
                             f"of instance ids (strings); got {str(value)[:80]}")
    if len(found) == 2 and sorted(found[0]) != sorted(found[1]):
        raise ValueError(f"{_READER}: '{path}' has both {key + '_ids'!r} and {key!r} and they "
                         "disagree; keep one")
    return found[0] if found else None


def _instance_reports(report: Mapping, path) -> list[tuple[str, str]]:
    outcomes = []
    for instance, entry in report.items():
        resolved = entry["resolved"]
        if not isinstance(resolved, bool):
            raise ValueError(f"{_READER}: '{path}' instance {instance!r} has 'resolved': "
                             f"{resolved!r}; expected true or false")
        if entry.get("patch_is_None") or entry.get("patch_exists") is False:
            outcomes.append((instance, "empty_patch"))
        else:
            outcomes.append((instance, "resolved" if resolved else "unresolved"))
    return outcomes
