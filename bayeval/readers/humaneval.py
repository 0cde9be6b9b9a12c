"""HumanEval / EvalPlus sample results: many samples per problem -> trials.

Two formats are read:

* human-eval's ``evaluate_functional_correctness`` output (``<samples>.jsonl_results.jsonl``):
  one JSON line per sample with ``task_id``, ``passed`` (bool) and ``result`` (``"passed"``,
  ``"failed: <reason>"`` or ``"timed out"``); either field alone is enough.
* EvalPlus ``eval_results.json``: ``{"eval": {task_id: [{"base_status": ..., "plus_status":
  ..., ...}, ...]}}`` with statuses ``"pass"``, ``"fail"`` and ``"timeout"``. As in EvalPlus, a
  sample passes the ``plus`` suite only when it passes both the base and the extra tests.
* BigCodeBench ``<samples>_eval_results.json`` (EvalPlus's layout, one test suite): each sample
  has one ``status``, ``"pass"``, ``"fail"``, ``"timeout"`` or ``null`` (BigCodeBench's
  unknown outcome: raw status ``unknown``, no verdict, so ``missing=`` is needed).

Samples keep their order in the file (the trial index). A timed-out sample keeps its recorded
failure but gets the raw status ``timed out``/``timeout``, mapped to bayeval's ``timeout`` (so a
``missing=`` policy is needed); ``status_map={"timed out": "ok"}`` (human-eval) or
``{"timeout": "ok"}`` (EvalPlus) counts timeouts as plain failures instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from bayeval._validate import validate_choice
from bayeval.data import EvalData
from bayeval.readers._common import (
    build,
    default_system,
    describe_lines,
    expand,
    merge_status_map,
    read_json,
    read_jsonl,
    short,
    show_values,
    sources,
)

__all__ = ["read_humaneval"]

_READER = "read_humaneval"
_SUFFIXES = (".jsonl_results.jsonl", "_results.jsonl", ".eval_results.json", "_eval_results.json")
_HUMANEVAL_STATUS = {"passed": 1.0, "failed": 0.0, "timed out": 0.0}
_EVALPLUS_STATUS = {"pass": 1.0, "fail": 0.0, "timeout": 0.0}


def read_humaneval(
    path, system=None, *, suite="base", missing=None, status_map=None, planned_trials=None
) -> EvalData:
    r"""Read HumanEval-style (human-eval or EvalPlus) sample results into counts.

    Parameters
    ----------
    path : path, folder, list of them, or dict
        A human-eval results ``.jsonl``, an EvalPlus or BigCodeBench ``eval_results.json``;
        several files, a
        folder (searched recursively for ``*_results.jsonl`` and ``*eval_results.json``: each
        file one system), or ``{system: path}``. Files of one system are concatenated (their
        samples are trials).
    system : str, optional
        System name. Default: the file name without ``.jsonl_results.jsonl``,
        ``_eval_results.json``, ...; for a generic name (``samples``, ``eval_results``) the
        folder holding the file.
    suite : {"base", "plus"}
        EvalPlus only: the base tests, or base plus the extra tests (``HumanEval+``);
        BigCodeBench results have one suite (``"base"``).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, required when a sample timed out (unless mapped to ``ok``).
    status_map : mapping, optional
        Raw status -> bayeval status on top of the default ``{"timed out": "timeout"}``
        (EvalPlus's ``timeout`` already is a bayeval status).
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ValueError
        Naming the file and lines with a missing ``task_id`` or outcome, an unknown result or
        status, or asking for ``suite="plus"`` from a base-only EvalPlus run.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "codegen-2b.jsonl_results.jsonl"
    >>> results = [("HumanEval/0", "passed"), ("HumanEval/0", "failed: "),
    ...            ("HumanEval/1", "passed"), ("HumanEval/1", "timed out")]
    >>> _ = path.write_text("".join(
    ...     json.dumps({"task_id": t, "completion": "...", "result": r, "passed": r == "passed"})
    ...     + "\n" for t, r in results))
    >>> data = br.read_humaneval(path, missing="fail")
    >>> data.systems, data.dataset["successes"].values, data.dataset["trials"].values
    (['codegen-2b'], array([[1, 1]]), array([[2, 2]]))
    >>> int(data.status_counts.loc["codegen-2b", "timeout"])
    1
    """
    validate_choice("suite", suite, ("base", "plus"))
    pairs = sources(_folders(path), system, _READER, lambda p: default_system(p, _SUFFIXES))
    rows, notes = [], []
    for name, file in pairs:
        if file.suffix.lower() == ".json":
            samples = _evalplus(read_json(file, _READER), file, suite)
        else:
            samples, more = _humaneval(read_jsonl(file, _READER), file)
            notes += more
        rows += [
            {"system": name, "task": task, "success": success, "status": raw, "cluster": None}
            for task, success, raw in samples
        ]
    return build(
        rows,
        _READER,
        [p for _, p in pairs],
        status_map=merge_status_map({"timed out": "timeout"}, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=False,
        notes=notes,
    )


def _folders(path):
    """Folders (searched recursively) stand for the result files in them, in name order."""

    def one(item):
        if isinstance(item, (str, os.PathLike)) and Path(item).is_dir():
            return expand(
                item,
                _READER,
                _is_result_file,
                "human-eval *_results.jsonl or EvalPlus *eval_results.json files",
            )
        return [item]

    if isinstance(path, Mapping):
        return {
            name: [f for item in (v if isinstance(v, (list, tuple)) else [v]) for f in one(item)]
            for name, v in path.items()
        }
    if isinstance(path, (list, tuple)):
        return [f for item in path for f in one(item)]
    found = one(path)
    return found if len(found) > 1 or found[0] is not path else path


def _is_result_file(path: Path) -> bool:
    return path.name.endswith(_SUFFIXES) or path.name == "eval_results.json"


def _humaneval(records, path) -> tuple[list[tuple], list[str]]:
    """``([(task_id, success, raw status), ...], notes)`` from human-eval result lines.

    A boolean ``passed`` decides; ``result`` gives the raw status (``timed out``) when it is
    one of human-eval's, and the outcome only when ``passed`` is absent. Forks that write a
    traceback (or anything else) in ``result`` are read from ``passed``, and a note says so.
    """
    out, no_task, no_outcome, unknown, clash, foreign = [], [], [], [], [], []
    for number, record in records:
        task = record.get("task_id")
        if task is None:
            no_task.append(number)
            continue
        passed, result = record.get("passed"), record.get("result")
        raw = None
        if isinstance(result, str) and result.startswith("failed"):
            raw = "failed"
        elif isinstance(result, str) and result in _HUMANEVAL_STATUS:
            raw = result
        elif result is not None:
            foreign.append((number, result))
        if passed is not None and not isinstance(passed, bool):
            unknown.append((number, passed))
            continue
        if passed is not None:
            success = float(passed)
        elif raw is not None:
            success = _HUMANEVAL_STATUS[raw]
        elif result is not None:
            unknown.append((number, result))
            continue
        else:
            no_outcome.append(number)
            continue
        if raw is not None and success != _HUMANEVAL_STATUS[raw]:
            clash.append(number)
            continue
        out.append((task, success, raw))
    if no_task:
        raise ValueError(
            f"{_READER}: '{path}' has no 'task_id' on {describe_lines(no_task)}; "
            "each sample result needs task_id and passed/result"
        )
    if no_outcome:
        raise ValueError(
            f"{_READER}: '{path}' has neither 'passed' nor 'result' on "
            f"{describe_lines(no_outcome)}; is this a samples file that was not "
            "evaluated yet (run evaluate_functional_correctness first)?"
        )
    if unknown:
        lines = describe_lines([n for n, _ in unknown])
        raise ValueError(
            f"{_READER}: '{path}' has unknown outcomes "
            f"{show_values([v for _, v in unknown], width=80)} on {lines}; 'passed' must "
            "be true/false, or (without 'passed') 'result' one of 'passed', 'failed: ...', "
            "'timed out'"
        )
    if clash:
        raise ValueError(
            f"{_READER}: '{path}' has 'passed' disagreeing with 'result' on {describe_lines(clash)}"
        )
    notes = []
    if foreign:
        notes.append(
            f"'{path}': 'result' on {len(foreign)} line(s) is not one of human-eval's "
            "('passed', 'failed: ...', 'timed out'), e.g. "
            f"{short(foreign[0][1], 60)} ({describe_lines([n for n, _ in foreign])}); "
            "their outcome is their boolean 'passed'"
        )
    return out, notes


def _evalplus(report, path, suite: str) -> list[tuple]:
    """``[(task_id, success, raw status), ...]`` from an EvalPlus ``eval_results.json``."""
    if not isinstance(report, dict) or not isinstance(report.get("eval"), dict):
        found = sorted(report)[:8] if isinstance(report, dict) else type(report).__name__
        raise ValueError(
            f"{_READER}: '{path}' is not an EvalPlus eval_results.json: it needs "
            "an 'eval' object {task_id: [sample results]}; found " + str(found)
        )
    out = []
    for task, entries in report["eval"].items():
        if isinstance(entries, dict) and "base" in entries:  # EvalPlus < 0.2: [status, details]
            plus = entries.get("plus") or [[None]] * len(entries["base"])
            entries = [
                {"base_status": b[0], "plus_status": p[0]}
                for b, p in zip(entries["base"], plus, strict=True)
            ]
        if not isinstance(entries, list):
            raise ValueError(
                f"{_READER}: '{path}' eval[{task!r}] must be a list of sample "
                f"results; got {type(entries).__name__}"
            )
        for index, entry in enumerate(entries):
            if isinstance(entry, dict) and "status" in entry and "base_status" not in entry:
                out.append((task, *_bigcodebench(entry, path, task, index, suite)))
                continue
            statuses = [entry.get("base_status")]
            if suite == "plus":
                statuses.append(entry.get("plus_status"))
                if statuses[1] is None:
                    raise ValueError(
                        f"{_READER}: '{path}' eval[{task!r}][{index}] has no plus_status (an "
                        "EvalPlus run with --base-only); read it with suite='base'"
                    )
            bad = [s for s in statuses if s not in _EVALPLUS_STATUS]
            if bad:
                raise ValueError(
                    f"{_READER}: '{path}' eval[{short(task)}][{index}] has status "
                    f"{short(bad[0])}; expected one of {list(_EVALPLUS_STATUS)} (EvalPlus's "
                    "base_status/plus_status, or BigCodeBench's status)"
                )
            out.append((task, *_combine(statuses)))
    return out


def _bigcodebench(entry, path, task, index, suite: str) -> tuple[float, str | None]:
    """``(success, raw status)`` of a BigCodeBench sample: one ``status`` (no base/plus)."""
    if suite == "plus":
        raise ValueError(
            f"{_READER}: '{path}' is a BigCodeBench result (one 'status' per sample): its "
            "tasks have one test suite; suite='plus' reads EvalPlus's extra tests"
        )
    status = entry["status"]
    if status is None:  # BigCodeBench's own 'unknown' outcome: the run gave no verdict
        return float("nan"), "unknown"
    if status not in _EVALPLUS_STATUS:
        raise ValueError(
            f"{_READER}: '{path}' eval[{short(task)}][{index}] has status {short(status)}; "
            f"expected one of {list(_EVALPLUS_STATUS)} (or null: no verdict)"
        )
    return _EVALPLUS_STATUS[status], status


def _combine(statuses: list[str]) -> tuple[float, str]:
    """A sample passes only if every suite passes; a failure is a failure even next to a timeout."""
    if "fail" in statuses:
        return 0.0, "fail"
    if "timeout" in statuses:
        return 0.0, "timeout"
    return 1.0, "pass"
