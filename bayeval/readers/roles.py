"""Column roles of a results table: which column holds the systems, tasks, outcomes and the rest.

Each role is read from the column named for it (the ``bayeval`` command's ``--system``,
``--task``, ... options), else from the conventional column name when the table has it
(:data:`CONVENTIONAL`). :func:`table_roles` returns the keyword arguments of
:func:`bayeval.from_frame` for a table and lines saying what was used;
:func:`attempt_columns` adds the per-attempt cost and latency columns. A role that cannot be
read raises :class:`RoleError`, whose ``option`` names the command's option that sets it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from bayeval._io import check_text_head
from bayeval.data import STATUSES
from bayeval.readers.table import COMPRESSIONS, TABLE_SUFFIXES

__all__ = [
    "CONVENTIONAL",
    "SYSTEM_ALIKE",
    "RoleError",
    "attempt_columns",
    "parse_status_map",
    "pick_column",
    "table_roles",
]

#: Conventional column names, detected when present.
CONVENTIONAL = {
    "system": "system",
    "task": "task",
    "success": "success",
    "trial": "trial",
    "cluster": "cluster",
    "stratum": "stratum",
    "status": "status",
    "successes": "successes",
    "trials": "trials",
}

#: Column names that hold system labels in the wild (compared lower-cased, separators as ``_``):
#: a table without a ``system`` column but with one of these is refused rather than read as one
#: system.
SYSTEM_ALIKE = frozenset(
    {
        "system",
        "systems",
        "system_name",
        "system_id",
        "model",
        "models",
        "model_name",
        "model_id",
        "agent",
        "agent_name",
        "submission",
        "llm",
        "run_name",
        "run_id",
    }
)


class RoleError(ValueError):
    """A column role that cannot be read from a table.

    Parameters
    ----------
    message : str
        What is wrong and what to give instead.
    option : str, optional
        The command-line option that sets the role (``"--system"``, ``"--status-map"``, ...);
        ``None`` where the error is about several options together.
    """

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


def _columns(frame: pd.DataFrame) -> str:
    return ", ".join(map(str, frame.columns[:30]))


def parse_status_map(text: str | None) -> dict[str, str] | None:
    """``raw=status,raw2=status2`` or a JSON file holding ``{"raw": "status"}``.

    Parameters
    ----------
    text : str or None
        The pairs, or the path of a ``.json`` file (any existing file is read as JSON).

    Returns
    -------
    dict or None
        Raw status -> bayeval status; ``None`` when ``text`` is ``None``.

    Raises
    ------
    RoleError
        With ``option="--status-map"``: a file that is not such JSON, a pair without ``=``, a
        raw status mapped twice, an empty map or a status that is not a bayeval status.

    Examples
    --------
    >>> from bayeval.readers.roles import parse_status_map
    >>> parse_status_map("PASS=ok, FAIL=ok, CRASH=error")
    {'PASS': 'ok', 'FAIL': 'ok', 'CRASH': 'error'}
    """
    if text is None:
        return None
    hint = "--status-map"
    path = Path(text)
    if path.suffix.lower() == ".json" or path.is_file():
        try:
            check_text_head(path, reader="status map", expected="a JSON file")
            mapping = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:  # not text, not UTF-8, not JSON
            raise RoleError(str(exc), hint) from None
        except OSError as exc:
            raise RoleError(f"cannot read {text!r} as a JSON file: {exc}", hint) from None
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise RoleError(
                f"{text!r} must hold a JSON object of raw status -> bayeval status strings", hint
            )
    else:
        mapping = {}
        for part in text.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise RoleError(
                    f"expected RAW=STATUS pairs separated by commas (or a "
                    f".json file); {part.strip()!r} has no '='",
                    hint,
                )
            raw, status = (s.strip() for s in part.split("=", 1))
            if raw in mapping:
                raise RoleError(f"raw status {raw!r} is mapped twice", hint)
            mapping[raw] = status
        if not mapping:
            raise RoleError("the map is empty", hint)
    bad = {raw: status for raw, status in mapping.items() if status not in STATUSES}
    if bad:
        raise RoleError(
            f"unknown bayeval status(es) in {bad}; allowed: {', '.join(STATUSES)}", hint
        )
    return mapping


def pick_column(
    frame: pd.DataFrame, given: str | None, role: str, required: bool = False, *, detect=True
) -> str | None:
    """The column for ``role``: the one given, else the conventional name if present.

    Parameters
    ----------
    frame : pandas.DataFrame
    given : str or None
        The column named for the role; ``"none"`` (any case) ignores a detected column.
    role : str
        A key of :data:`CONVENTIONAL`; errors name the option ``--<role>``.
    required : bool, default False
        Refuse a table without the column instead of returning ``None``.
    detect : bool, default True
        Take the conventional column when none is given.

    Returns
    -------
    str or None

    Raises
    ------
    RoleError
        A given column the table lacks, or a required column that is neither given nor
        detected.
    """
    if given is not None:
        if given.lower() == "none":
            if required:
                raise RoleError("this column is required", f"--{role}")
            return None
        if given not in frame.columns:
            raise RoleError(
                f"no column {given!r}; the file has columns {_columns(frame)}", f"--{role}"
            )
        return given
    name = CONVENTIONAL[role]
    if detect and name in frame.columns:
        return name
    if required:
        raise RoleError(
            f"no column named {name!r}; name the column with --{role} (the file has columns "
            f"{_columns(frame)})",
            f"--{role}",
        )
    return None


def _file_stem(source) -> str:
    """The file's name without its compression and table suffixes (``runs.csv.gz`` -> ``runs``)."""
    stem = Path(source).name
    for suffixes in (COMPRESSIONS, TABLE_SUFFIXES):
        stem = next(
            (stem[: -len(x)] for x in suffixes if stem.lower().endswith(x) and len(stem) > len(x)),
            stem,
        )
    return stem


def _one_system(frame, given, system_name) -> bool:
    """Whether the table is read as one system.

    Refuses a table whose system column is only named otherwise, and ``--system-name`` or
    ``--system none`` beside a system column.
    """
    one_system = (given is not None and given.lower() == "none") or (
        given is None and CONVENTIONAL["system"] not in frame.columns
    )
    if not one_system and system_name is not None:
        raise RoleError(
            f"--system-name names the one system of a table without a system column; this "
            f"table's systems come from column {given or CONVENTIONAL['system']!r} (give "
            "--system none to read it as one system)"
        )
    if one_system and given is not None and CONVENTIONAL["system"] in frame.columns:
        raise RoleError(
            "--system none reads the table as one system, but it has a "
            "'system' column, whose rows may belong to several systems; "
            "drop the column from the file, or leave out --system none"
        )
    if one_system and given is None:
        alike = [
            c
            for c in frame.columns
            if isinstance(c, str) and re.sub(r"[\s\-.]+", "_", c.strip().lower()) in SYSTEM_ALIKE
        ]
        if alike:
            raise RoleError(
                f"no column named 'system', but {', '.join(map(repr, alike))} looks like "
                f"one; name it with --system {alike[0]}, or read the table as one system "
                "with --system none [--system-name NAME]",
                "--system",
            )
    return one_system


def table_roles(
    frame: pd.DataFrame,
    *,
    system: str | None = None,
    system_name: str | None = None,
    task: str | None = None,
    success: str | None = None,
    successes: str | None = None,
    trials: str | None = None,
    trial: str | None = None,
    cluster: str | None = None,
    stratum: str | None = None,
    status: str | None = None,
    status_map: str | None = None,
    score: str | None = None,
    scores: bool = False,
    source=None,
    trials_option: str = "--trials",
) -> tuple[dict, list[str]]:
    """:func:`bayeval.from_frame` keyword arguments for a table, and lines saying what was used.

    A table without a system column (or with ``system="none"``) is one system, named by
    ``system_name`` or after ``source``'s stem; a column that looks like a system column
    (:data:`SYSTEM_ALIKE`) but is not named ``system`` is refused rather than ignored. Rows are
    outcome rows (one per attempt, ``success``), count rows (``successes`` and ``trials``) or
    partial-credit scores (``score``, detected when no outcome column is named or present).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table as read.
    system, task, success, successes, trials, trial, cluster, stratum, status : str, optional
        The column of each role; ``None`` detects the conventional name, ``"none"`` ignores a
        detected column.
    system_name : str, optional
        The one system's name of a table without a system column.
    status_map : str, optional
        Raw statuses onto bayeval statuses (:func:`parse_status_map`).
    score : str, optional
        The column of partial-credit scores in [0, 1].
    scores : bool, default False
        Whether the caller analyses partial-credit scores; a score column is refused when not.
    source : str or os.PathLike, optional
        The table's file, whose stem names a table's one system.
    trials_option : str, default "--trials"
        The option that names the trials column, as errors spell it.

    Returns
    -------
    roles : dict
        Keyword arguments of :func:`bayeval.from_frame` (``system`` always present).
    lines : list of str
        The columns used, first, then what was detected or left out.

    Raises
    ------
    RoleError
        A role that cannot be read, naming the option that sets it.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeval.readers.roles import table_roles
    >>> frame = pd.DataFrame({"system": ["a", "b"], "task": ["t", "t"], "success": [1, 0]})
    >>> roles, lines = table_roles(frame)
    >>> roles["success"], lines[0]
    ('success', 'columns: system=system, task=task, success=success')
    """
    lines: list[str] = []
    one_system = _one_system(frame, system, system_name)
    if one_system:
        if system_name is None:
            if source is None:
                raise RoleError(
                    "the table has no system column: name its one system with --system-name NAME"
                )
            system_name = _file_stem(source)
            lines.append(
                f"no system column: one system, named {system_name!r} after the "
                "file; --system-name NAME names it"
            )
        else:
            lines.append(f"no system column: one system, named {system_name!r} (--system-name)")
        if not system_name.strip():
            raise RoleError("the system name is empty", "--system-name")
        roles: dict = {"system": None}
    else:
        roles = {"system": pick_column(frame, system, "system", required=True)}
    roles["task"] = pick_column(frame, task, "task", required=True)
    score = _score_role(frame, score, scores, success, successes, trials, trials_option, lines)
    count_rows = score is None and (
        successes is not None
        or trials is not None
        or (
            success is None
            and "success" not in frame.columns
            and {"successes", "trials"} <= set(frame.columns)
        )
    )
    if score is not None:
        roles["score"] = score
        roles["trial"] = pick_column(frame, trial, "trial")
    elif count_rows:
        if success is not None:
            raise RoleError(
                f"--success is for outcome rows; count rows take --successes and {trials_option}"
            )
        roles["success"] = None
        roles["successes"] = pick_column(frame, successes, "successes", required=True)
        if trials is None and "trials" not in frame.columns:
            raise RoleError("no column named 'trials' for count rows; name it", trials_option)
        if trials is not None and trials not in frame.columns:
            raise RoleError(f"no column {trials!r}", trials_option)
        roles["trials"] = trials or "trials"
        for role, value in (("trial", trial), ("status", status)):
            if value not in (None, "none"):
                raise RoleError(
                    f"--{role} applies to outcome rows (one row per trial); "
                    "count rows hold valid outcomes only"
                )
        if status_map is not None:
            raise RoleError("--status-map applies to outcome rows with a status column")
    else:
        roles["success"] = pick_column(frame, success, "success", required=True)
        roles["trial"] = pick_column(frame, trial, "trial")
    roles["cluster"] = pick_column(frame, cluster, "cluster")
    roles["stratum"] = pick_column(frame, stratum, "stratum")
    mapping = parse_status_map(status_map)
    if not count_rows:
        column = pick_column(frame, status, "status", detect=False)
        if column is None and status is None and "status" in frame.columns:
            values = frame["status"].dropna().unique().tolist()
            if mapping is not None or all(v in STATUSES for v in values):
                column = "status"
            else:
                lines.append(
                    f"column 'status' not used: its values ({', '.join(map(str, values[:6]))}"
                    f"{', ...' if len(values) > 6 else ''}) are not bayeval statuses; map them "
                    f"with --status-map RAW=STATUS onto {', '.join(STATUSES)}"
                )
        if mapping is not None and column is None:
            raise RoleError("--status-map needs a status column (--status COLUMN)")
        roles["status"], roles["status_map"] = column, mapping
    used = ", ".join(
        f"{role}={col}"
        for role, col in roles.items()
        if isinstance(col, str) and role != "status_map"
    )
    lines.insert(0, f"columns: {used}" + (" (count rows)" if count_rows else ""))
    if one_system:
        roles["system_name"] = system_name
    return {k: v for k, v in roles.items() if v is not None or k == "system"}, lines


def _score_role(
    frame, given, scores, success, successes, trials, trials_option, lines
) -> str | None:
    """The column of partial-credit scores, or None for 0/1 outcomes.

    The column is ``score``, or a detected ``score`` column when no 0/1 outcome column is named or
    present; refused where the caller analyses 0/1 outcomes only (``scores`` false).
    """
    detected = (
        given is None
        and success is None
        and successes is None
        and trials is None
        and "success" not in frame.columns
        and "score" in frame.columns
        and not {"successes", "trials"} <= set(frame.columns)
    )
    if given is None and not detected:
        return None
    if not scores:
        raise RoleError(
            "this table holds scores, not 0/1 outcomes: this command analyses 0/1 outcomes "
            "(name them with --success); partial-credit scores in [0, 1] are analysed by "
            "bayeval analyze FILE --score COLUMN (the mean score, fractional model)",
            "--success",
        )
    if given is not None:
        clash = [
            flag
            for flag, value in (
                ("--success", success),
                ("--successes", successes),
                (trials_option, trials),
            )
            if value is not None
        ]
        if clash:
            verb = "names" if len(clash) == 1 else "name"
            raise RoleError(
                f"--score names a column of partial-credit scores, one per "
                f"attempt; {' and '.join(clash)} {verb} 0/1 outcomes or "
                "counts: give one or the other"
            )
        if given not in frame.columns:
            raise RoleError(
                f"no column {given!r}; the file has columns {_columns(frame)}", "--score"
            )
    column = given or "score"
    lines.append(
        f"scores: column {column!r} holds partial-credit scores in [0, 1]"
        + (" (detected; --success COLUMN names 0/1 outcomes instead)" if detected else "")
        + ": the mean score (fractional model; scores all 0 or 1 are 0/1 "
        "outcomes, fitted by the binomial models)"
    )
    return column


def attempt_columns(
    frame: pd.DataFrame, roles: dict, *, cost: str | None = None, latency: str | None = None
) -> tuple[dict, list[str]]:
    """Add each attempt's cost and duration columns to the roles of :func:`table_roles`.

    Parameters
    ----------
    frame : pandas.DataFrame
    roles : dict
        From :func:`table_roles`; not changed.
    cost : str, optional
        The column of each attempt's cost (a covariate of :func:`bayeval.from_frame`).
    latency : str, optional
        A column of seconds, or ``"START,END"`` timestamp columns.

    Returns
    -------
    roles : dict
        ``roles`` with ``covariates`` and ``latency`` where asked for.
    lines : list of str
        What each added column is read as.

    Raises
    ------
    RoleError
        A column the table lacks (``option`` ``"--cost"`` or ``"--latency"``), or count rows,
        which have no per-attempt values.
    """
    roles, lines = dict(roles), []
    if cost is not None:
        if cost not in frame.columns:
            raise RoleError(f"no column {cost!r}; the file has columns {_columns(frame)}", "--cost")
        if roles.get("successes") is not None:
            raise RoleError(
                "--cost needs outcome rows (one row per attempt, each "
                "with its cost); this table has count rows"
            )
        roles["covariates"] = [cost]
        lines.append(f"cost: column {cost} per attempt")
    if latency is not None:
        columns = _latency_columns(frame, latency, roles)
        lines.append(
            "latency: "
            + (
                f"column {columns[0]} (seconds)"
                if len(columns) == 1
                else f"{columns[1]} minus {columns[0]}"
            )
            + " per attempt"
        )
        roles["latency"] = columns[0] if len(columns) == 1 else columns
    return roles, lines


def _latency_columns(frame, text: str, roles: dict) -> tuple:
    """``COL`` (seconds) or ``START,END`` (timestamps), checked."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (1, 2) or not all(parts):
        raise RoleError(
            f"give one column of seconds or START,END timestamp columns; got {text!r}",
            "--latency",
        )
    absent = [p for p in parts if p not in frame.columns]
    if absent:
        raise RoleError(
            f"no column {absent[0]!r}; the file has columns {_columns(frame)}", "--latency"
        )
    if roles.get("successes") is not None:
        raise RoleError(
            "--latency needs outcome rows (one row per attempt, each with "
            "its duration); this table has count rows"
        )
    return tuple(parts)
