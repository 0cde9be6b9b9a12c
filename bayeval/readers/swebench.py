"""SWE-bench-style run reports: lists of instance ids by outcome, one report per system.

Three layouts are read: the official harness's run report, the per-instance ``report.json``,
and the classic report of the SWE-bench experiments repository (below).

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

Classic reports
---------------
The experiments repository's ``evaluation/<split>/<run>/results/results.json`` (written by the
original harness's ``get_model_report``) lists instance ids per stage: ``no_generation``,
``generated``, ``with_logs``, ``install_fail``, ``reset_failed``, ``no_apply``, ``applied``,
``test_errored``, ``test_timeout``, ``resolved`` (later submissions: ``no_generation``,
``no_logs``, ``resolved``). The lists are nested, not disjoint, and unresolved instances are not
listed: the denominator is the benchmark's instance list, from ``instances=`` (a bundled list by
name, a list of ids or a file of ids) or, by default, the split named in the path
(``evaluation/verified/...``, ``evaluation/lite/...``) or else the one bundled list that holds
every id the report lists (refused when none or several do). SWE-bench Verified (500 ids) and
Lite (300) are bundled; the full test split (2,294) is not: give its ids with ``instances=``.
Each instance takes the first category that holds it, in the
order of :data:`CLASSIC_ORDER`; every instance keeps success 1 (resolved) or 0, and the status
comes from :data:`CLASSIC_STATUS` (override it entry by entry with ``status_map=``):

==================  ==============  ===================================================
raw category        bayeval status  meaning
==================  ==============  ===================================================
``resolved``        ok (success 1)  the tests passed (even if a test command also timed out)
``no_generation``   invalid         no patch was produced
``no_apply``        invalid         the patch did not apply
``install_fail``    error           the environment could not be installed
``reset_failed``    error           the repository could not be checked out
``test_errored``    error           the test command errored
``test_timeout``    timeout         the test command timed out
``no_logs``         no_verdict      generated, but no evaluation log
``no_test_output``  no_verdict      a log, but no test results in it
``not_submitted``   not_run         in the benchmark but in no list (no prediction)
``unresolved``      ok (success 0)  applied, tests run, not resolved
==================  ==============  ===================================================

``status_map={"no_generation": "ok"}`` counts an empty patch as a plain failure instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

import numpy as np

from bayeval._io import check_text_head
from bayeval.data import EvalData
from bayeval.readers._common import (
    GENERIC_DIRS,
    build,
    check_path,
    check_systems,
    default_system,
    expand,
    merge_status_map,
    read_json,
    show_values,
)

__all__ = [
    "CLASSIC_KEYS",
    "CLASSIC_ORDER",
    "CLASSIC_STATUS",
    "INSTANCE_LISTS",
    "OUTCOME_KEYS",
    "instance_list",
    "is_report",
    "read_swebench",
    "repository",
]

#: Report lists that give an outcome: raw status -> (success, default bayeval status or None).
OUTCOME_KEYS = {
    "resolved": (1.0, None),
    "unresolved": (0.0, None),
    "empty_patch": (0.0, None),
    "error": (np.nan, "error"),
    "incomplete": (np.nan, "not_run"),
}
_SUPERSETS = ("completed", "submitted")
#: Lists of a classic report (the experiments repository's ``results/results.json``).
CLASSIC_KEYS = (
    "no_generation",
    "generated",
    "with_logs",
    "install_fail",
    "reset_failed",
    "no_apply",
    "applied",
    "test_errored",
    "test_timeout",
    "resolved",
    "no_logs",
)
#: Which category an instance listed under several takes: the first that holds it.
CLASSIC_ORDER = (
    "resolved",
    "no_generation",
    "no_apply",
    "install_fail",
    "reset_failed",
    "test_errored",
    "test_timeout",
    "no_logs",
)
#: Default bayeval status of each classic category (see the module docstring).
CLASSIC_STATUS = {
    "no_generation": "invalid",
    "no_apply": "invalid",
    "install_fail": "error",
    "reset_failed": "error",
    "test_errored": "error",
    "test_timeout": "timeout",
    "no_logs": "no_verdict",
    "no_test_output": "no_verdict",
    "not_submitted": "not_run",
}
#: Bundled benchmark instance lists, by name (``instances=``): file and number of ids.
INSTANCE_LISTS = {"verified": ("swebench_verified.txt", 500), "lite": ("swebench_lite.txt", 300)}
_SPLIT_DIRS = {"verified": "verified", "lite": "lite", "test": "full"}
_INSTANCE = re.compile(r"^(?P<owner>[^/]+?)__(?P<repo>.+)-(?P<number>\d+)$")
_READER = "read_swebench"


def read_swebench(
    path_or_paths,
    system=None,
    missing=None,
    cluster="repository",
    *,
    instances=None,
    status_map=None,
    planned_trials=None,
) -> EvalData:
    """Read SWE-bench-style reports (lists of instance ids by outcome) into counts.

    Parameters
    ----------
    path_or_paths : path, folder, glob, list of them, or dict
        One JSON report per system, or ``{system: path}`` (a list of paths for one system reads
        repeated runs as trials, in order). A folder is searched recursively for reports
        (``resolved_by_*.json`` summaries are skipped) and a glob is expanded: there each report
        is one system, and two reports claiming the same system are refused.
    system : str, optional
        System name for the file(s) given. Default: the file's stem (``<model>.<run_id>`` for
        the official harness), or for a generic name such as ``results.json`` the nearest
        non-generic folder above it (``<system>/results/results.json``).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when any instance errored or was not run.
    cluster : {"repository"} or None
        ``"repository"`` clusters instances by the repository in their id
        (``owner__repo-1234`` -> ``owner/repo``); ``None`` gives no clusters (on the command
        line ``--reader-option cluster=none``).
    instances : {"verified", "lite"}, list of ids, or path, optional
        The benchmark's instance ids, the denominator of a classic report (instances in no list
        are unresolved or, when the report has a ``generated`` list, not submitted): a bundled
        list by name (:data:`INSTANCE_LISTS`), the ids themselves, or a file of ids (one per
        line, or a JSON list). Default: the split named by a folder in the report's path
        (``evaluation/verified/...``, ``evaluation/lite/...``), else the one bundled list
        holding every id the report lists. With other reports, ids in no list become
        ``not_run``.
    status_map : mapping, optional
        Raw status -> bayeval status, on top of the defaults (``error`` -> ``error``,
        ``incomplete`` -> ``not_run``, and :data:`CLASSIC_STATUS`): e.g.
        ``{"empty_patch": "invalid"}`` or ``{"install_fail": "ok"}``.
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file when it is not a report (no ``resolved``/``unresolved`` lists), when an
        id sits in two outcome lists, when a classic report has no known denominator or lists
        ids outside it, when two reports of a folder claim one system, or when an id does not
        parse as ``owner__repo-number`` under ``cluster="repository"``.

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

    A classic report counts against the benchmark's instance list:

    >>> classic = {"no_generation": ["django__django-2"], "generated": ["django__django-1"],
    ...            "with_logs": ["django__django-1"], "install_fail": ["django__django-1"],
    ...            "applied": [], "resolved": []}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "agent-y.json"
    >>> _ = path.write_text(json.dumps(classic))
    >>> ids = ["django__django-1", "django__django-2", "django__django-3"]
    >>> data = br.read_swebench(path, instances=ids, missing="fail")
    >>> data.status_counts.loc["agent-y"].to_dict()
    {'ok': 0, 'invalid': 1, 'timeout': 0, 'error': 1, 'no_verdict': 0, 'not_run': 1}
    """
    if not (cluster is None or cluster == "repository"):
        raise ValueError(
            f"{_READER}: cluster must be 'repository' (the repository in each "
            f"instance id) or None (no clusters); got {cluster!r}"
        )
    pairs, one_per_system = _sources(path_or_paths, system)
    given = None if instances is None else instance_list(instances)
    rows: list[dict] = []
    notes: list[str] = []
    owner: dict[tuple[str, str], Path] = {}
    for name, path in pairs:
        report = read_json(path, _READER)
        if _is_classic(report):
            ids, where = (given, "instances=") if given is not None else _split_list(path, report)
            outcomes, quirks = _classic_outcomes(report, path, ids)
            notes.append(f"'{path}': classic report, denominator {len(ids)} instances ({where})")
            notes += [f"'{path}': {quirk}" for quirk in quirks]
        else:
            outcomes = _report_outcomes(report, path)
            if given is not None:
                outcomes = _within(outcomes, given, path)
        for instance, raw in outcomes:
            if one_per_system:
                first = owner.setdefault((name, instance), path)
                if first != path:
                    raise ValueError(
                        f"{_READER}: two reports claim system {name!r}: '{first}' and '{path}' "
                        f"(both list {instance!r}); read repeated runs of one system as "
                        "{system: [paths]}, or give the runs distinct names"
                    )
            success = _SUCCESS.get(raw, np.nan)
            rows.append(
                {
                    "system": name,
                    "task": instance,
                    "success": success,
                    "status": raw,
                    "cluster": None,
                }
            )
    if cluster == "repository":
        ids = [row["task"] for row in rows]
        repos = {i: repository(i) for i in dict.fromkeys(ids)}
        bad = [i for i, r in repos.items() if r is None]
        if bad:
            raise ValueError(
                f"{_READER}: instance ids {show_values(bad)} do not look like "
                "'owner__repo-number', so no repository can be read from them; "
                "pass cluster=None to read them without clusters"
            )
        for row in rows:
            row["cluster"] = repos[row["task"]]
    defaults = {raw: status for raw, (_, status) in OUTCOME_KEYS.items() if status is not None}
    defaults["completed"] = "no_verdict"
    defaults.update(CLASSIC_STATUS)
    return build(
        rows,
        _READER,
        [p for _, p in pairs],
        status_map=merge_status_map(defaults, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=cluster is not None,
        notes=notes,
    )


def instance_list(instances) -> list[str]:
    """Benchmark instance ids: a bundled list by name, the ids themselves, or a file of ids.

    Parameters
    ----------
    instances : str, path, or list of str
        A name of :data:`INSTANCE_LISTS` (``"verified"``, ``"lite"``), a file (one id per line,
        or a JSON list of ids), or the ids.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from bayeval.readers.swebench import instance_list
    >>> ids = instance_list("verified")
    >>> len(ids), ids[0]
    (500, 'astropy__astropy-12907')
    """
    if isinstance(instances, str) and instances.lower() in INSTANCE_LISTS:
        name, expected = INSTANCE_LISTS[instances.lower()]
        text = resources.files("bayeval.readers").joinpath("_instances", name).read_text("utf-8")
        ids = [line.strip() for line in text.splitlines() if line.strip()]
        assert len(ids) == expected, f"bundled list {name} has {len(ids)} ids, not {expected}"
        return ids
    if isinstance(instances, (str, os.PathLike)):
        if (
            isinstance(instances, str)
            and not Path(instances).exists()
            and "/" not in instances
            and not instances.endswith((".txt", ".json"))
        ):
            raise ValueError(
                f"{_READER}: instances={instances!r} is neither a bundled list "
                f"({', '.join(INSTANCE_LISTS)}) nor an existing file of ids"
            )
        path = check_path(instances, _READER)
        if path.suffix.lower() == ".json":
            ids = read_json(path, _READER)
        else:
            check_text_head(path, reader=_READER, expected="a list of instance ids, one a line")
            try:
                ids = [
                    line.strip() for line in path.read_text("utf-8").splitlines() if line.strip()
                ]
            except UnicodeDecodeError:
                raise ValueError(
                    f"{_READER}: the instance list '{path}' is not UTF-8 text "
                    "(one instance id per line)"
                ) from None
        where = f"the instance list '{path}'"
    else:
        ids, where = instances, "instances="
    if (
        not isinstance(ids, (list, tuple))
        or not ids
        or not all(isinstance(i, str) and i for i in ids)
    ):
        raise ValueError(
            f"{_READER}: {where} must be a non-empty list of instance ids "
            f"(strings); got {str(ids)[:80]}"
        )
    twice = sorted({i for i in ids if list(ids).count(i) > 1}) if len(set(ids)) < len(ids) else []
    if twice:
        raise ValueError(f"{_READER}: {where} lists ids twice: {show_values(twice)}")
    return list(ids)


def is_report(payload) -> bool:
    """Whether a parsed JSON file is a SWE-bench report of a layout this module reads.

    Examples
    --------
    >>> from bayeval.readers.swebench import is_report
    >>> is_report({"resolved": ["a__b-1"], "no_generation": []}), is_report({"results": []})
    (True, False)
    """
    if not isinstance(payload, Mapping) or not payload:
        return False
    if _is_classic(payload) or _is_per_instance(payload):
        return True
    return any(isinstance(payload.get(k), list) for k in ("resolved_ids", "unresolved_ids")) or (
        isinstance(payload.get("resolved"), list) and isinstance(payload.get("unresolved"), list)
    )


_SUCCESS = {
    "resolved": 1.0,
    "unresolved": 0.0,
    "empty_patch": 0.0,
    "no_generation": 0.0,
    "no_apply": 0.0,
    "install_fail": 0.0,
    "reset_failed": 0.0,
    "test_errored": 0.0,
    "test_timeout": 0.0,
    "no_logs": 0.0,
    "no_test_output": 0.0,
}


def _sources(path_or_paths, system) -> tuple[list[tuple[str, Path]], bool]:
    """``([(system, path), ...], one report per system?)``."""
    if check_systems(path_or_paths, system, _READER):
        pairs = []
        for name, paths in path_or_paths.items():
            files = expand(paths, _READER, _report_file, "SWE-bench reports (.json)")
            if not files:
                raise ValueError(f"{_READER}: system {name!r} has no files")
            pairs += [(name, p) for p in files]
        return pairs, False
    items = path_or_paths if isinstance(path_or_paths, (list, tuple)) else [path_or_paths]
    if not items:
        raise ValueError(f"{_READER}: no files given")
    files = expand(items, _READER, _report_file, "SWE-bench reports (.json)")
    several = len(files) > len(items) or any(
        isinstance(i, (str, os.PathLike)) and Path(i).is_dir() for i in items
    )
    pairs = [(system if system is not None else _system_of(p), p) for p in files]
    return pairs, several


def _report_file(path: Path) -> bool:
    """A file in a folder that may be a report (skips the experiments' summaries)."""
    return path.suffix.lower() == ".json" and not path.name.startswith("resolved_by_")


def _system_of(path: Path) -> str:
    """A run's system: a per-instance ``<model>/<instance>/report.json`` names the model."""
    if path.name == "report.json" and repository(path.parent.name) is not None:
        for parent in path.resolve().parents[1:]:
            if parent.name and parent.name.lower() not in GENERIC_DIRS:
                return parent.name
    return default_system(path)


def _is_classic(report) -> bool:
    if not isinstance(report, Mapping) or not isinstance(report.get("resolved"), list):
        return False
    if "unresolved" in report or "unresolved_ids" in report or "resolved_ids" in report:
        return False
    return set(report) <= set(CLASSIC_KEYS) and len(set(report) & set(CLASSIC_KEYS)) > 1


def _is_per_instance(report) -> bool:
    return (
        isinstance(report, Mapping)
        and bool(report)
        and all(
            isinstance(v, Mapping) and isinstance(v.get("resolved"), bool) for v in report.values()
        )
    )


def _split_list(path: Path, report: Mapping) -> tuple[list[str], str]:
    """The bundled list of a classic report: named by its path, or the one holding its ids."""
    parts = [p.lower() for p in path.resolve().parts]
    for folder, name in _SPLIT_DIRS.items():
        if folder in parts:
            if name in INSTANCE_LISTS:
                return instance_list(name), (
                    f"the bundled {name} list, from the folder '{folder}' in its path"
                )
            raise ValueError(
                f"{_READER}: '{path}' is a classic SWE-bench report of the {name!r} split (from "
                f"its path), whose instance list bayeval does not bundle (bundled: "
                f"{', '.join(INSTANCE_LISTS)}); give the benchmark's ids with instances= (a list "
                "or a file of ids): unresolved instances are not listed in these reports, so "
                "they cannot be counted without it"
            )
    listed = {i for key in CLASSIC_KEYS for i in (report.get(key) or []) if isinstance(i, str)}
    holding = [name for name in INSTANCE_LISTS if listed <= set(instance_list(name))]
    if listed and len(holding) == 1:
        name = holding[0]
        return instance_list(name), (
            f"the bundled {name} list, the only one holding all {len(listed)} ids it lists"
        )
    why = (
        f"its {len(listed)} ids fit the bundled lists {holding} alike"
        if len(holding) > 1
        else f"its {len(listed)} ids are not all in any bundled list "
        f"({', '.join(INSTANCE_LISTS)}; the full test split is not bundled)"
    )
    raise ValueError(
        f"{_READER}: '{path}' is a classic SWE-bench report (lists "
        f"{', '.join(k for k in CLASSIC_KEYS if k in report)}): unresolved instances are "
        "not listed, so the benchmark's instance list is the denominator, and " + why + "; "
        f"give it with instances= (a bundled name: {', '.join(INSTANCE_LISTS)}; a list of ids; "
        "or a file of ids), or keep the report under a folder naming its split "
        "(evaluation/verified/..., evaluation/lite/...)"
    )


def _classic_outcomes(
    report: Mapping, path: Path, ids: list[str]
) -> tuple[list[tuple[str, str]], list[str]]:
    """``([(instance, raw category), ...], notes on ids listed twice or contradictorily)``."""
    lists, quirks = {}, []
    for key in CLASSIC_KEYS:
        value = report.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise ValueError(
                f"{_READER}: '{path}' key {key!r} must be a list of instance ids "
                f"(strings); got {str(value)[:80]}"
            )
        lists[key] = set(value)
        if len(lists[key]) < len(value):
            twice = sorted({i for i in value if value.count(i) > 1})
            quirks.append(f"{key!r} lists {show_values(twice)} more than once (counted once)")
    both = sorted(lists.get("no_generation", set()) & lists.get("generated", set()))
    if both:
        quirks.append(
            f"{show_values(both)} listed under both 'no_generation' and "
            "'generated' (two predictions for one instance?): each takes the first "
            f"category of {list(CLASSIC_ORDER)} that holds it"
        )
    known = set(ids)
    listed = set().union(*lists.values())
    outside = sorted(listed - known)
    if outside:
        raise ValueError(
            f"{_READER}: '{path}' lists {len(outside)} instance(s) that are not in "
            f"the benchmark's instance list ({len(ids)} ids): "
            f"{show_values(outside)}; is instances= the benchmark this run "
            "was evaluated on?"
        )
    outcomes = []
    for instance in ids:
        raw = next((key for key in CLASSIC_ORDER if instance in lists.get(key, ())), None)
        if raw is None:
            if "generated" in lists and instance not in lists["generated"]:
                raw = "not_submitted"
            elif "with_logs" in lists and instance not in lists["with_logs"]:
                raw = "no_logs"
            elif "applied" in lists and instance not in lists["applied"]:
                raw = "no_test_output"
            else:
                raw = "unresolved"
        outcomes.append((instance, raw))
    return outcomes, quirks


def _within(outcomes, ids: list[str], path) -> list[tuple[str, str]]:
    """Outcomes on the benchmark's ids: an id in no list is ``not_submitted``."""
    known = set(ids)
    outside = sorted({i for i, _ in outcomes} - known)
    if outside:
        raise ValueError(
            f"{_READER}: '{path}' reports {len(outside)} instance(s) that are not "
            f"in instances= ({len(ids)} ids): {show_values(outside)}"
        )
    seen = {i for i, _ in outcomes}
    return outcomes + [(i, "not_submitted") for i in ids if i not in seen]


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
    if _is_per_instance(report):
        return _instance_reports(report, path)
    if not isinstance(report, Mapping):
        raise ValueError(
            f"{_READER}: '{path}' must hold a JSON object (a SWE-bench report); "
            f"found a {type(report).__name__}"
        )
    lists = {key: _id_list(report, key, path) for key in (*OUTCOME_KEYS, *_SUPERSETS)}
    if lists["resolved"] is None or lists["unresolved"] is None:
        raise ValueError(
            f"{_READER}: '{path}' is not a SWE-bench report: it needs 'resolved_ids' (or "
            "'resolved') and 'unresolved_ids' (or 'unresolved') lists of instance ids, "
            "optionally 'error_ids', 'empty_patch_ids', 'incomplete_ids', 'completed_ids', "
            f"'submitted_ids'; found keys {show_values(sorted(report), limit=12)}"
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
        raise ValueError(
            f"{_READER}: '{path}' lists instances under two outcomes: "
            f"{', '.join(clashes[:5])}; each instance needs exactly one of "
            f"{list(OUTCOME_KEYS)}"
        )
    outcomes += [(i, "completed") for i in lists["completed"] or [] if i not in seen]
    return outcomes


def _id_list(report: Mapping, key: str, path) -> list | None:
    """The list under ``<key>_ids`` or ``<key>`` (both must agree when both are present)."""
    found = [report[k] for k in (f"{key}_ids", key) if k in report]
    found = [v for v in found if not isinstance(v, (int, float))]  # e.g. "resolved": 3 counts
    for value in found:
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise ValueError(
                f"{_READER}: '{path}' key {key + '_ids'!r}/{key!r} must be a list "
                f"of instance ids (strings); got {str(value)[:80]}"
            )
    if len(found) == 2 and sorted(found[0]) != sorted(found[1]):
        raise ValueError(
            f"{_READER}: '{path}' has both {key + '_ids'!r} and {key!r} and they disagree; keep one"
        )
    return found[0] if found else None


def _instance_reports(report: Mapping, path) -> list[tuple[str, str]]:
    outcomes = []
    for instance, entry in report.items():
        resolved = entry["resolved"]
        if not isinstance(resolved, bool):
            raise ValueError(
                f"{_READER}: '{path}' instance {instance!r} has 'resolved': "
                f"{resolved!r}; expected true or false"
            )
        if entry.get("patch_is_None") or entry.get("patch_exists") is False:
            outcomes.append((instance, "empty_patch"))
        else:
            outcomes.append((instance, "resolved" if resolved else "unresolved"))
    return outcomes
