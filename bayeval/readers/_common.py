"""Shared plumbing of the readers: sources, system names, JSON(L) loading, and the hand-off.

Every reader turns its files into one tidy frame with the columns ``system``, ``task``,
``trial``, ``success`` (1/0, NaN when no outcome was recorded), ``status`` (the source's raw
status, or ``None``) and optionally ``cluster``, then calls :func:`bayeval.from_frame`. A reader
never picks a missing-outcome policy: ``missing=`` passes through, and ``from_frame`` asks for
one when a non-ok status is present.
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from bayeval._io import check_text_head
from bayeval.data import STATUSES, EvalData, from_frame
from bayeval.errors import BayevalWarning

__all__: list[str] = []

#: File stems that say nothing about the system (the directory above names it instead).
GENERIC_STEMS = frozenset(
    {
        "",
        "results",
        "result",
        "report",
        "eval_results",
        "samples",
        "results_report",
        "output",
        "outputs",
        "predictions",
        "preds",
        "all_preds",
    }
)
#: Directories skipped when a system is named after the folder holding its file.
GENERIC_DIRS = frozenset(
    {"results", "result", "logs", "eval", "evaluation", "outputs", "output", "reports", "report"}
)
COLUMNS = ["system", "task", "trial", "success", "status", "cluster"]


def check_path(path, reader: str) -> Path:
    """A path that exists (``str`` or ``os.PathLike``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(
            f"{reader}: expected a file path (str or os.PathLike); got {type(path).__name__}"
        )
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{reader}: no such file or directory: '{path}'") from None
    except PermissionError:
        raise PermissionError(f"{reader}: '{path}' cannot be read (permission denied)") from None
    if stat.S_ISDIR(mode):
        if not os.access(path, os.R_OK | os.X_OK):
            raise PermissionError(
                f"{reader}: the folder '{path}' cannot be read (permission "
                "denied), so its files cannot be listed"
            )
    elif not stat.S_ISREG(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
        raise ValueError(
            f"{reader}: '{path}' is {kind}; give a results file or folder (a pipe "
            "or device would block or change while it is read)"
        )
    elif not os.access(path, os.R_OK):
        raise PermissionError(f"{reader}: '{path}' cannot be read (permission denied)")
    return path


def default_system(path: Path, suffixes: tuple[str, ...] = ()) -> str:
    """The system a file belongs to: its stem without ``suffixes``, or its folder's name.

    A generic stem (``results.json``, ``eval_results.json``, ...) defers to the nearest
    directory above it that is not itself generic (``<system>/results/results.json``).
    """
    name = path.name
    for suffix in sorted((*suffixes, ".jsonl", ".json"), key=len, reverse=True):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.lower() not in GENERIC_STEMS:
        return name
    for parent in path.resolve().parents:
        if parent.name and parent.name.lower() not in GENERIC_DIRS:
            return parent.name
    return name or path.name


def check_systems(path_or_paths, system, reader: str) -> bool:
    """Check how systems are named; True for a dict.

    As the keys of a non-empty ``{system: path(s)}`` dict, or by one ``system=`` name for every file
    (or from each file).
    """
    if isinstance(path_or_paths, Mapping):
        if system is not None:
            raise TypeError(
                f"{reader}: give system names either as the keys of a dict or with "
                "system=, not both"
            )
        if not path_or_paths:
            raise ValueError(f"{reader}: the dict of systems is empty")
        return True
    if system is not None and not isinstance(system, str):
        raise TypeError(
            f"{reader}: system= must be a str (one name for every file); "
            f"got {type(system).__name__}; use a dict {{system: path}} for several"
        )
    return False


def sources(path_or_paths, system, reader: str, name_of: Callable[[Path], str]):
    """``[(system, path), ...]`` from a path, a list of paths or a ``{system: path(s)}`` dict."""
    if check_systems(path_or_paths, system, reader):
        pairs = []
        for name, paths in path_or_paths.items():
            paths = paths if isinstance(paths, (list, tuple)) else [paths]
            if not paths:
                raise ValueError(f"{reader}: system {name!r} has no files")
            pairs += [(name, check_path(p, reader)) for p in paths]
        return pairs
    paths = path_or_paths if isinstance(path_or_paths, (list, tuple)) else [path_or_paths]
    if not paths:
        raise ValueError(f"{reader}: no files given")
    paths = [check_path(p, reader) for p in paths]
    return [(system if system is not None else name_of(p), p) for p in paths]


def expand(path_or_paths, reader: str, accept: Callable[[Path], bool], what: str) -> list[Path]:
    """Files from paths, folders (searched recursively, keeping ``accept``-ed files) and globs."""
    import glob as _glob

    items = path_or_paths if isinstance(path_or_paths, (list, tuple)) else [path_or_paths]
    files: list[Path] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(
                f"{reader}: expected file paths, folders or glob patterns (str or "
                f"os.PathLike); got {type(item).__name__}"
            )
        if not Path(item).exists() and _glob.has_magic(str(item)):
            found = sorted(Path(p) for p in _glob.glob(str(item), recursive=True))
            if not found:
                raise FileNotFoundError(f"{reader}: the glob {str(item)!r} matches no file")
            files += [check_path(p, reader) for p in found if not p.is_dir()]
            continue
        path = check_path(item, reader)
        if path.is_dir():
            try:
                found = sorted(p for p in path.rglob("*") if p.is_file() and accept(p))
            except PermissionError as exc:
                raise PermissionError(
                    f"{reader}: a folder under '{path}' cannot be read ({exc})"
                ) from None
            if not found:
                raise ValueError(f"{reader}: the folder '{path}' holds no {what}")
            files += found
        else:
            files.append(path)
    return files


def read_json(path: Path, reader: str):
    """Parse a JSON file; errors name the file and say what is wrong with it."""
    path = check_path(path, reader)
    check_text_head(path, reader=reader, expected="a JSON file")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{reader}: '{path}' is not valid JSON ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{reader}: '{path}' is not UTF-8 text (byte {exc.start}: {exc.reason}); "
            "JSON files must be UTF-8 (is it binary, or another encoding?)"
        ) from None
    except RecursionError:
        raise ValueError(f"{reader}: '{path}' is nested too deeply to parse as JSON") from None


def read_jsonl(path: Path, reader: str) -> list[tuple[int, dict]]:
    """``[(line number, record), ...]`` of a JSON-lines file (blank lines skipped)."""
    records = []
    path = check_path(path, reader)
    check_text_head(path, reader=reader, expected="a JSON-lines file")
    with open(path, encoding="utf-8", errors="strict") as handle:
        lines = _lines(handle, path, reader)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{reader}: '{path}' line {number} is not valid JSON ({exc})"
                ) from None
            except RecursionError:
                raise ValueError(
                    f"{reader}: '{path}' line {number} is nested too deeply to parse as JSON"
                ) from None
            if not isinstance(record, dict):
                raise ValueError(
                    f"{reader}: '{path}' line {number} is a "
                    f"{type(record).__name__}, not a JSON object"
                )
            records.append((number, record))
    if not records:
        raise ValueError(f"{reader}: '{path}' holds no records")
    return records


def _lines(handle, path, reader) -> list[str]:
    try:
        return handle.readlines()
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{reader}: '{path}' is not UTF-8 text (byte {exc.start}: "
            f"{exc.reason}); JSON lines must be UTF-8"
        ) from None


def short(value, width: int = 100) -> str:
    """``repr(value)`` cut to about ``width`` characters (a refusal never dumps a traceback)."""
    text = repr(value)
    if len(text) <= width:
        return text
    return f"{text[: width - 1]}… ({len(text)} characters)"


def show_values(values, limit: int = 5, width: int = 100) -> str:
    """Distinct values for a refusal: at most ``limit``, each cut to ``width`` characters."""
    distinct, seen = [], set()
    for value in values:  # by type and repr: True and 1 stay apart, unhashable values too
        key = f"{type(value).__name__}:{value!r}"
        if key not in seen:
            seen.add(key)
            distinct.append(value)
    shown = ", ".join(short(v, width) for v in distinct[:limit])
    more = f", ... ({len(distinct) - limit} more)" if len(distinct) > limit else ""
    return f"[{shown}{more}]"


def describe_lines(numbers, limit: int = 5) -> str:
    """``line 3`` or ``lines [3, 7, 9] and 4 more`` for error messages."""
    numbers = list(numbers)
    if len(numbers) == 1:
        return f"line {numbers[0]}"
    more = f" and {len(numbers) - limit} more" if len(numbers) > limit else ""
    return f"lines {numbers[:limit]}{more}"


def merge_status_map(default: Mapping, user: Mapping | None, reader: str) -> dict:
    """The reader's default raw-status map, overridden entry by entry by the user's."""
    if user is None:
        return dict(default)
    if not isinstance(user, Mapping):
        raise TypeError(
            f"{reader}: status_map must be a mapping of raw status -> bayeval status; "
            f"got {type(user).__name__}"
        )
    return {**default, **user}


def build(
    rows: list[dict],
    reader: str,
    files,
    *,
    status_map: dict,
    missing,
    planned_trials,
    cluster: bool,
    notes=None,
    planned_by_source: bool = False,
    judges: list[str] | None = None,
    label_design: str | None = None,
    label_strata: str | None = None,
) -> EvalData:
    """Tidy rows -> :func:`bayeval.from_frame`, numbering trials within each cell in order.

    ``judges``: columns of the rows holding a judge's 0/1 verdicts (NaN where none); ``success``
    is then the trusted label, NaN where not labelled, and ``label_design``/``label_strata``
    pass to ``from_frame``.

    ``planned_by_source``: a system's sources list every task it was given (a log's dataset,
    a sample file's documents), so a task it has no row for was *not planned* for it: its cell
    is left empty rather than counted ``not_run`` (which a missing-outcome policy would turn
    into failures), and a note and a warning say so.
    """
    judges = list(judges or [])
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *judges])
    if frame.empty:
        raise ValueError(f"{reader}: no results found in {show_values(map(str, files))}")
    for column in ("success", *judges):
        frame[column] = frame[column].astype(float)
    frame["status"] = frame["status"].astype(object)
    frame["trial"] = frame.groupby(["system", "task"], sort=False).cumcount()
    unplanned = _unplanned(frame) if planned_by_source else {}
    n_tasks = frame["task"].nunique()
    not_planned = "; ".join(
        f"{system}: {len(tasks)} of {n_tasks} (e.g. {short(tasks[0], 60)})"
        for system, tasks in unplanned.items()
    )
    notes = list(notes or [])
    try:
        data = from_frame(
            frame,
            trial="trial",
            status="status",
            status_map=status_map,
            cluster="cluster" if cluster else None,
            # with cells not planned, the policy is asked only once they are emptied
            missing=missing if missing is not None or not unplanned else "exclude",
            planned_trials=planned_trials,
            judge=judges or None,
            label_design=label_design,
            label_strata=label_strata,
        )
        if unplanned:
            data = _empty_cells(data, unplanned).with_missing(missing)
    except (ValueError, TypeError) as exc:
        shown = show_values([str(f) for f in files], limit=3, width=300)
        raw = frame["status"].dropna().value_counts(sort=False)
        listed = ", ".join(f"{short(k, 60)}: {int(v)}" for k, v in list(raw.items())[:12])
        listed += f", ... ({len(raw) - 12} more)" if len(raw) > 12 else ""
        note = (
            f" [raw statuses in the source: {listed}; status map in use: {status_map}]"
            if listed
            else ""
        )
        if unplanned:
            note += f" [tasks not planned for a system, not counted: {not_planned}]"
        raise type(exc)(f"{reader} ({shown}): {exc}{note}") from exc
    if unplanned:
        message = (
            "the systems were given different task sets; tasks not planned for a system (no "
            "source of it covers them) are left empty, not counted as not_run, so no "
            f"missing-outcome policy turns them into failures: {not_planned}"
        )
        notes.append(message)
        warnings.warn(f"{reader}: {message}", BayevalWarning, stacklevel=3)
    record_mapping(
        data,
        reader,
        frame,
        status_map,
        notes=notes,
        not_planned={system: len(tasks) for system, tasks in unplanned.items()},
        judges=judges,
    )
    return data


def _unplanned(frame: pd.DataFrame) -> dict[str, list]:
    """``{system: [tasks it has no row for]}``, for the systems that lack some task."""
    tasks = frame["task"].drop_duplicates()
    out = {}
    for system, group in frame.groupby("system", sort=False):
        lacking = tasks[~tasks.isin(set(group["task"]))].tolist()
        if lacking:
            out[system] = lacking
    return out


def _empty_cells(data: EvalData, unplanned: Mapping[str, list]) -> EvalData:
    """The data with the cells of tasks not planned for a system emptied (no planned attempt)."""
    dataset = data.dataset
    counts = dataset["status_counts"].values.copy()
    systems = {s: i for i, s in enumerate(dataset["system"].values.tolist())}
    tasks = {t: i for i, t in enumerate(dataset["task"].values.tolist())}
    for system, lacking in unplanned.items():
        for task in lacking:
            counts[systems[system], tasks[task], :] = 0  # only not_run was there: no row
    return EvalData(dataset.assign(status_counts=(dataset["status_counts"].dims, counts)))


#: Name of the ``EvalData.dataset.attrs`` entry holding what a reader mapped (JSON).
MAPPING_ATTR = "reader_mapping"


def mapped_status(raw, recorded: bool, status_map: Mapping) -> str:
    """The bayeval status a raw status becomes (the rules of :func:`bayeval.from_frame`)."""
    if raw is not None and raw in status_map:
        return status_map[raw]
    if raw is not None and raw in STATUSES:
        return raw
    return "ok" if recorded else "no_verdict"


def record_mapping(
    data: EvalData,
    reader: str,
    frame: pd.DataFrame,
    status_map: Mapping,
    notes=None,
    not_planned: Mapping[str, int] | None = None,
    judges=(),
) -> None:
    """Store, in ``data.dataset.attrs``, the rows per (system, raw status -> bayeval status).

    A row with a judge's verdict (``judges``: its columns) has an outcome, labelled or not.
    """
    recorded = frame[["success", *judges]].notna().any(axis=1)
    raw = frame["status"].where(frame["status"].notna(), None)
    rows: dict[tuple, int] = {}
    for system, value, has in zip(frame["system"], raw, recorded, strict=True):
        label = "(outcome)" if value is None else str(value)
        status = mapped_status(value, bool(has), status_map)
        key = (str(system), label, status)
        rows[key] = rows.get(key, 0) + 1
    payload = {
        "reader": reader,
        "rows": [[s, r, b, n] for (s, r, b), n in rows.items()],
        "notes": list(notes or []),
        "not_planned": dict(not_planned or {}),
    }
    data.dataset.attrs[MAPPING_ATTR] = json.dumps(payload)


def binary(value) -> float | None:
    """1.0/0.0 for a pass/fail value (bool, 0/1); ``None`` when it is not one."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)) and value in (0, 1):
        return float(value)
    return None
