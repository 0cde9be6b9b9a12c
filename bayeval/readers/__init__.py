"""Readers: evaluation results from harness outputs and tidy tables -> :class:`bayeval.EvalData`.

===========================  ==================================================================
:func:`read_table`           tidy long tables: ``.csv``, ``.parquet``, ``.jsonl``/``.ndjson``,
                             ``.json``
:func:`read_swebench`        SWE-bench / multi-SWE-bench reports (instance ids by outcome),
                             classic experiments-repository reports against the benchmark's
                             instance list
:func:`read_helm`            HELM ``per_instance_stats.json`` (one metric, trials from
                             ``train_trial_index``, unperturbed unless asked)
:func:`read_terminal_bench`  Terminal-Bench run ``results.json`` (trials, failure modes)
:func:`read_harbor`          Harbor job folders (Terminal-Bench 2): trial ``result.json`` files
                             (rewards, exceptions), trials planned and not finished
:func:`read_tau_bench`       τ-bench trajectory files (tasks x trials, rewards)
:func:`read_tau2_bench`      τ²-bench results (``simulations``: rewards, termination reasons)
:func:`read_humaneval`       human-eval ``*_results.jsonl``, EvalPlus and BigCodeBench
                             ``eval_results.json``
:func:`read_lm_eval`         lm-evaluation-harness ``samples_<task>_<time>.jsonl``
                             (``--log_samples``), or the ``results_<time>.json`` beside them
:func:`read_inspect`         Inspect AI ``.eval``/``.json`` logs (needs ``bayeval[inspect]``)
:func:`read`                 any of these, the format detected from the file
===========================  ==================================================================

Every reader maps the source's outcomes to bayeval statuses (each module documents how), exposes
raw statuses that are a modelling choice (``empty_patch``, ``noanswer``, ...) for ``status_map=``
and passes ``missing=`` through: none picks a missing-outcome policy for you. Every reader
records what it mapped (rows per raw category and the bayeval status each became): see
:func:`mapping` and :func:`mapping_report`.

Sources that cover different task sets are not a cross product. Where a system's sources list
every task it was given (Inspect logs: their dataset; lm-eval: the documents of its sample
files, ``--limit`` included; HELM: its runs' instances), a task it was not given is *not
planned* for it: its cell stays empty (no attempt), is not counted as ``not_run`` and never
asks for a missing-outcome policy, which would turn it into failures; a task it was given and
did not finish (an interrupted log) stays ``not_run``. A warning and a mapping note name the
systems and how many tasks each was not given.

On the command line a reader's other arguments are spelled ``--reader-option KEY=VALUE``
(repeatable): ``none`` or ``null`` is ``None``, ``true``/``false`` a boolean, ``5`` or ``0.5`` a
number, ``[...]``/``{...}`` JSON, a JSON string (``'"none"'``) the text itself, anything else
text. ``--reader-option cluster=none`` is ``cluster=None``; ``--reader-option
instances=verified`` is ``instances="verified"``; a KEY given again takes the list of its
values (``--reader-option split=test --reader-option split=valid`` is ``split=["test",
"valid"]``). KEY must be one of the reader's arguments (an unknown one is refused with the
list); ``missing=``, ``status_map=`` and ``system=`` are ``--missing``, ``--status-map`` and
``--system-name``. A reader's refusal read on the command line names its arguments in these
words (``--reader-option split=...``, not ``split=``).
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from bayeval._io import check_text_head
from bayeval._validate import validate_choice
from bayeval.data import EvalData
from bayeval.readers._common import check_path, read_json
from bayeval.readers._mapping import mapping, mapping_report
from bayeval.readers.harbor import is_config as is_harbor_config
from bayeval.readers.harbor import is_result as is_harbor_result
from bayeval.readers.harbor import read_harbor
from bayeval.readers.helm import is_per_instance_stats, read_helm
from bayeval.readers.humaneval import read_humaneval
from bayeval.readers.inspect_logs import is_log, read_inspect
from bayeval.readers.lm_eval import is_results_file, read_lm_eval
from bayeval.readers.swebench import is_report, read_swebench
from bayeval.readers.table import TABLE_SUFFIXES, read_table, table_kind
from bayeval.readers.tau2_bench import is_results as is_tau2_results
from bayeval.readers.tau2_bench import read_tau2_bench
from bayeval.readers.tau_bench import is_trajectories, read_tau_bench
from bayeval.readers.terminal_bench import is_run_results, read_terminal_bench

__all__ = [
    "FORMATS",
    "detect_format",
    "mapping",
    "mapping_report",
    "read",
    "read_harbor",
    "read_helm",
    "read_humaneval",
    "read_inspect",
    "read_lm_eval",
    "read_swebench",
    "read_table",
    "read_tau2_bench",
    "read_tau_bench",
    "read_terminal_bench",
]

#: Format names accepted by :func:`read` and the reader each one calls.
FORMATS: dict[str, Callable[..., EvalData]] = {
    "table": read_table,
    "swebench": read_swebench,
    "humaneval": read_humaneval,
    "lm_eval": read_lm_eval,
    "inspect": read_inspect,
    "terminal_bench": read_terminal_bench,
    "tau_bench": read_tau_bench,
    "tau2_bench": read_tau2_bench,
    "helm": read_helm,
    "harbor": read_harbor,
}
#: JSON files of a run folder that are not results (metadata beside them).
_NOT_RESULTS = ("run_metadata.json", "metadata.json", "tb.lock", "run_spec.json")
_FOLDER_SCAN = 200
_FOLDER_SUFFIXES = (".json", ".jsonl", ".eval")


def read(path, format="auto", **kwargs) -> EvalData:
    """Read evaluation results, detecting the format from the file.

    Parameters
    ----------
    path : path, glob, list of paths or ``{system: path}`` dict
        What the chosen reader accepts; ``"auto"`` looks at the first file.
    format : {"auto", "table", "swebench", "humaneval", "lm_eval", "inspect", \
"terminal_bench", "tau_bench", "tau2_bench", "helm", "harbor"}
        ``"auto"`` decides from the suffix and, for JSON, the content (see
        :func:`detect_format`).
    **kwargs
        Passed to the reader (``missing=``, ``status_map=``, ``system=``, ...).

    Returns
    -------
    EvalData

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "agent.json"
    >>> _ = path.write_text(json.dumps({"resolved_ids": ["a__b-1"], "unresolved_ids": ["a__b-2"]}))
    >>> br.detect_format(path)
    'swebench'
    >>> br.read(path).dataset["successes"].values.tolist()
    [[1, 0]]
    """
    validate_choice("format", format, ("auto", *FORMATS))
    if format == "auto":
        format = detect_format(_first(path))
    return FORMATS[format](path, **kwargs)


def detect_format(path) -> str:
    r"""The reader a file (or folder) needs: one of :data:`FORMATS`.

    ``.eval`` is Inspect; ``.csv``/``.tsv``/``.parquet`` (and compressed tables such as
    ``.csv.gz``) a table; JSON lines with ``doc_id`` and ``metrics`` lm-eval; JSON lines with
    ``task_id`` and ``passed``/``result`` human-eval (unscored HumanEval samples are refused
    with the command that scores them); a JSON object with ``results``, a list of trials with
    ``is_resolved``, Terminal-Bench; one with ``trial_name``, ``task_name`` and
    ``verifier_result`` (a trial) or ``n_total_trials`` and ``stats`` (a job) Harbor; one with
    ``resolved(_ids)`` lists (or the classic lists
    ``no_generation``, ``applied``, ...) SWE-bench; with ``eval`` holding a task and a model
    Inspect, with ``eval`` holding per-task sample lists EvalPlus; with a ``results`` object and
    ``configs``/``versions`` the lm-eval aggregated ``results_<time>.json``; with ``info``,
    ``tasks`` and a ``simulations`` list τ²-bench (read through its
    sample files); a JSON list of records with ``instance_id`` and a ``stats`` list HELM
    (``per_instance_stats.json``), with ``task_id``, ``trial`` and ``reward`` τ-bench, any other
    list of records a table. A folder is the format of the result files it holds (searched
    recursively: ``samples_*.jsonl`` lm-eval, ``.eval`` and JSON logs Inspect,
    ``per_instance_stats.json`` HELM, Harbor ``result.json`` files (the other files of a
    Harbor job or trial folder are not results), other JSON and JSON-lines files by content);
    a folder
    holding results of several formats is refused, naming each format's files, since reading
    it as one format would leave the others out.

    Examples
    --------
    >>> import tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
    >>> _ = path.write_text('{"task_id": "HumanEval/0", "passed": true}\n')
    >>> br.detect_format(path)
    'humaneval'
    """
    if (
        isinstance(path, (str, os.PathLike))
        and not Path(path).exists()
        and glob.has_magic(str(path))
    ):
        matches = sorted(glob.glob(str(path), recursive=True))
        if not matches:
            raise FileNotFoundError(f"read: the glob {str(path)!r} matches no file")
        path = matches[0]
    path = check_path(path, "read")
    if path.is_dir():
        return _folder_format(path)
    if path.suffix.lower() == ".json" and path.name.startswith("resolved_by_"):
        raise ValueError(
            _unknown(
                path,
                "it is a per-repository or per-year summary of a "
                "SWE-bench run (counts, no instances); read the run's "
                "results.json",
            )
        )
    if path.suffix.lower() == ".eval":
        return "inspect"
    kind, compression = table_kind(path)
    if kind in ("csv", "tsv", "parquet") or (kind is not None and compression):
        return "table"
    if kind == "jsonl":
        return _jsonl_format(path)
    if kind == "json":
        return _json_format(path)
    raise ValueError(_unknown(path, f"its suffix {path.suffix!r} is not one bayeval reads"))


def _first(path):
    if isinstance(path, Mapping):
        path = next(iter(path.values()), None)
    if isinstance(path, (list, tuple)):
        path = path[0] if path else None
    if path is None:
        raise ValueError("read: no files given")
    return path


def _folder_format(folder: Path) -> str:
    """The one format of a folder's result files; a folder of several formats is refused."""
    found = _folder_files(folder)
    known = {k: v for k, v in found.items() if k not in ("unrecognised", "table")}
    if len(known) == 1:
        return next(iter(known))
    if len(known) > 1:
        shown = "; ".join(
            f"{kind}: {len(files)} file(s), '{files[0].relative_to(folder)}'"
            + (f" and {len(files) - 1} more" if len(files) > 1 else "")
            for kind, files in known.items()
        )
        raise ValueError(
            f"read: the folder '{folder}' holds results of several formats ({shown}); read as "
            "one format it would leave the others out. Read each format's files (a list of "
            "paths, or a folder per format), or give format= to read only that format's files "
            "(the others are then left out)"
        )
    looked = len(found.get("unrecognised", [])) + len(found.get("table", []))
    raise ValueError(
        f"read: cannot tell the format of folder '{folder}': it holds no lm-eval "
        "samples_*.jsonl, no Inspect logs, no HELM per_instance_stats.json and no JSON results "
        f"file bayeval knows ({looked} .json/.jsonl file(s) looked at); known formats: "
        f"{', '.join(FORMATS)}; give a file, or format="
    )


def _folder_files(folder: Path) -> dict[str, list[Path]]:
    """The result files of a folder (searched recursively) by format, in name order."""
    try:
        files = sorted(
            p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in _FOLDER_SUFFIXES
        )
    except PermissionError as exc:
        raise PermissionError(f"read: a folder under '{folder}' cannot be read ({exc})") from None
    helm_runs = {p.parent for p in files if p.name == "per_instance_stats.json"}
    harbor = _harbor_folders(files)
    found: dict[str, list[Path]] = {}
    scanned = 0
    for path in files:
        if path.parent in harbor and path.name == "result.json":
            kind = "harbor"
        elif any(parent in harbor for parent in path.parents):
            continue  # a Harbor job's or trial's other files: configs, agent logs, test output
        elif path.suffix.lower() == ".eval":
            kind = "inspect"
        elif path.name == "per_instance_stats.json":
            kind = "helm"
        elif path.parent in helm_runs or path.name in _NOT_RESULTS:
            continue  # a HELM run's other files, run metadata
        elif path.name.startswith("resolved_by_"):
            continue  # per-repository summaries of a SWE-bench run
        elif path.name.startswith("samples_") and path.suffix.lower() == ".jsonl":
            kind = "lm_eval"
        elif scanned >= _FOLDER_SCAN:
            kind = "unscanned"
        else:
            scanned += 1
            try:
                suffix = path.suffix.lower()
                kind = _jsonl_format(path) if suffix == ".jsonl" else _json_format(path)
            except ValueError:
                kind = "unrecognised"
        found.setdefault(kind, []).append(path)
    found.pop("unscanned", None)
    return found


def _harbor_folders(files: list[Path]) -> set[Path]:
    """The Harbor job and trial folders among the files' folders (by their ``result.json``)."""
    folders = set()
    for path in files:
        if path.name != "result.json":
            continue
        try:
            payload = read_json(path, "read")
        except (ValueError, OSError):
            continue  # not JSON (or unreadable): classified with the other files
        if is_harbor_result(payload):
            folders.add(path.parent)
    return folders


def _jsonl_format(path: Path) -> str:
    check_text_head(path, reader="read", expected="a JSON-lines file")
    try:
        with open(path, encoding="utf-8") as handle:
            line = next((raw for raw in handle if raw.strip()), "")
    except UnicodeDecodeError:
        raise ValueError(_unknown(path, "it is not UTF-8 text")) from None
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise ValueError(_unknown(path, "its first line is not JSON")) from None
    if (
        isinstance(record, dict)
        and "doc_id" in record
        and ("metrics" in record or "filter" in record or "filtered_resps" in record)
    ):
        return "lm_eval"
    if (
        isinstance(record, dict)
        and "task_id" in record
        and ("passed" in record or "result" in record)
    ):
        return "humaneval"
    if isinstance(record, dict) and "task_id" in record and "completion" in record:
        raise ValueError(
            f"read: '{path}' holds HumanEval samples (task_id, completion) that were not scored "
            "yet: run `evaluate_functional_correctness` on it (or EvalPlus's evaluate) and read "
            "the results file it writes (<samples>.jsonl_results.jsonl)"
        )
    if isinstance(record, dict) and "task_id" in record and "solution" in record:
        raise ValueError(
            f"read: '{path}' holds code samples (task_id, solution) that were not scored yet: "
            "run `bigcodebench.evaluate --samples <file>` (or EvalPlus's evaluate) and read the "
            "<samples>_eval_results.json it writes"
        )
    if path.name.startswith("samples_"):
        return "lm_eval"
    return "table"


def _json_format(path: Path) -> str:
    payload = read_json(path, "read")
    if isinstance(payload, list):
        if is_per_instance_stats(payload):
            return "helm"
        return "tau_bench" if is_trajectories(payload) else "table"
    if not isinstance(payload, dict):
        raise ValueError(_unknown(path, f"it holds a JSON {type(payload).__name__}"))
    if is_tau2_results(payload):
        return "tau2_bench"
    if is_harbor_result(payload):
        return "harbor"
    if is_harbor_config(payload):
        raise ValueError(
            _unknown(
                path,
                "it is the config.json of a Harbor job or trial (its settings, not its "
                "results); read the job's folder (or its result.json)",
            )
        )
    if is_run_results(payload):
        return "terminal_bench"
    if is_report(payload):
        return "swebench"
    if is_log(payload):
        return "inspect"
    if isinstance(payload.get("eval"), dict):
        return "humaneval"
    if is_results_file(payload):
        return "lm_eval"
    for key in ("records", "rows", "data"):
        if isinstance(payload.get(key), list):
            return "table"
    raise ValueError(
        _unknown(path, f"its keys {sorted(map(str, payload))[:12]} match no known format")
    )


def _unknown(path: Path, why: str) -> str:
    return (
        f"read: cannot tell the format of '{path}': {why}. Known formats: "
        f"{', '.join(FORMATS)} (give format= to choose one); tables are "
        f"{', '.join(TABLE_SUFFIXES)}"
    )
