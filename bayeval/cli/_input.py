"""Reading results files for a command: the reader's options, the column roles, the data."""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import warnings

import click

import bayeval as be
from bayeval.cli._group import InputError
from bayeval.cli._options import ReadOptions
from bayeval.readers import FORMATS as READER_FORMATS
from bayeval.readers import detect_format, mapping_report
from bayeval.readers import read as read_results
from bayeval.readers.roles import RoleError, attempt_columns, parse_status_map, table_roles
from bayeval.readers.table import load_table


@contextlib.contextmanager
def _as_usage_errors():
    """A column role that cannot be read, as click's error naming its option (exit code 2)."""
    try:
        yield
    except RoleError as exc:
        if exc.option is None:
            raise click.UsageError(str(exc)) from None
        raise click.BadParameter(str(exc), param_hint=exc.option) from None


def _reader_params(fmt: str, trials_flag: str) -> tuple[str, dict, list[str]]:
    """The reader's name, its arguments that have options of their own, and its other ones."""
    if fmt == "table":
        func, name = be.from_frame, "bayeval.from_frame (tables)"
        own = {
            "system": "--system",
            "system_name": "--system-name",
            "task": "--task",
            "success": "--success",
            "successes": "--successes",
            "trials": trials_flag,
            "trial": "--trial",
            "cluster": "--cluster",
            "stratum": "--stratum",
            "status": "--status",
            "score": "--score (bayeval analyze)",
            "judge": "--judge",
            "label_design": "--label-design",
            "label_strata": "--label-strata",
        }
    else:
        func = READER_FORMATS[fmt]
        name = f"{func.__name__} ({fmt})"
        own = {"system": "--system-name"}
        if _reads_judges(fmt):  # scorers named as judges: the table's options name them
            own.update(
                judge="--judge", label_design="--label-design", label_strata="--label-strata"
            )
    own.update(missing="--missing", status_map="--status-map", format="--format")
    params = list(inspect.signature(func).parameters.values())[1:]  # the path or frame
    allowed = [
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in own
    ]
    return name, own, allowed


def parse_reader_options(items, fmt: str = "table", trials_flag: str = "--trials-column") -> dict:
    """``--reader-option KEY=VALUE`` items -> keyword arguments of the ``fmt`` reader.

    VALUE: ``none``/``null`` (any case) is None, ``true``/``false`` a boolean, a JSON number
    a number, ``[...]``/``{...}``/``"..."`` JSON, anything else text. KEY must be an argument
    of the reader (of ``bayeval.from_frame`` for tables) that has no option of its own. A KEY
    given several times takes the list of its values (``split=test split=valid``).
    """
    hint = "--reader-option"
    name, own, allowed = _reader_params(fmt, trials_flag)
    options: dict = {}
    repeated: set[str] = set()
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise click.BadParameter(
                f"expected KEY=VALUE with KEY a name; got {item!r}", param_hint=hint
            )
        if key in own:
            raise click.BadParameter(f"{key!r} has its own option: use {own[key]}", param_hint=hint)
        if key not in allowed:
            raise click.BadParameter(
                f"{name} has no option {key!r}; its options: "
                f"{', '.join(allowed) or '(none)'} (and {', '.join(sorted(set(own.values())))} "
                "as options of their own)",
                param_hint=hint,
            )
        parsed = _option_value(key, value)
        if key in options:  # given again: the list of its values
            if key not in repeated:
                options[key] = [options[key]]
                repeated.add(key)
            options[key].append(parsed)
        else:
            options[key] = parsed
    return options


def _option_value(key: str, value: str):
    text = value.strip()
    if text.lower() in ("none", "null"):
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text[:1] in ("[", "{", '"') or re.fullmatch(
        r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?", text
    ):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(
                f"{key}={value!r} looks like JSON but does not parse ({exc}); quote text "
                "as a JSON string (KEY='\"...\"')",
                param_hint="--reader-option",
            ) from None
    return value


#: A keyword argument named in a reader's message: ``split=``, ``cluster=None``, ``format=``.
_KEYWORD = re.compile(r"(?<![\w\-])([a-z_]+)=(None|'[^']*'|[\w.\-]+)?(?=[\s;,.:)\]]|$)")


def cli_spelling(text: str, fmt: str | None, trials_flag: str = "--trials-column") -> str:
    """A reader's message in the command line's words: ``split=`` -> ``--reader-option split=``.

    Only the reader's own arguments are rewritten (and ``missing=``, ``status_map=``,
    ``system=``, ``format=`` to their options); other ``key=value`` text (a HELM run's name,
    ``model=...``) is left as it is.
    """
    own = {"missing": "--missing", "status_map": "--status-map", "format": "--format"}
    allowed: list[str] = []
    if fmt is not None and fmt != "table":
        _, readers_own, allowed = _reader_params(fmt, trials_flag)
        own.update(readers_own)

    def swap(match: re.Match) -> str:
        key, value = match.group(1), match.group(2)
        shown = "none" if value == "None" else (value or "").strip("'")
        if key in own:
            return own[key] + (f" {shown}" if shown else "")
        if key in allowed:
            return f"--reader-option {key}={shown or '...'}"
        return match.group(0)

    return _KEYWORD.sub(swap, text)


def read_roles(
    frame, read: ReadOptions, trials_flag: str = "--trials-column", source=None
) -> tuple[dict, list[str]]:
    """:func:`bayeval.readers.roles.table_roles` of the command's options."""
    with _as_usage_errors():
        return table_roles(
            frame,
            system=read.system,
            system_name=read.system_name,
            task=read.task,
            success=read.success,
            successes=read.successes,
            trials=read.trials_column,
            trial=read.trial,
            cluster=read.cluster,
            stratum=read.stratum,
            status=read.status,
            status_map=read.status_map,
            score=read.score,
            scores=read.scores,
            source=source,
            trials_option=trials_flag,
        )


def _warn_mapped_outcomes(frame, roles: dict) -> None:
    """Say so where ``--status-map`` turns recorded outcomes into missing ones.

    A recorded outcome is valid whatever the raw status says unless the map says otherwise
    (a timed-out agent whose tests ran has a verdict): mapping such a raw status onto a
    non-ok status sets those verdicts aside, to be handled by ``--missing``. That is the
    user's call, but not one to make unseen.
    """
    mapping, status = roles.get("status_map"), roles.get("status")
    outcome = roles.get("success", roles.get("score"))
    if not mapping or status is None or outcome is None:
        return
    raw = frame[status]
    hit = raw.isin([r for r, mapped in mapping.items() if mapped != "ok"]) & frame[outcome].notna()
    if not hit.any():
        return
    values = frame.loc[hit, outcome].astype(float)
    parts = []
    groups = list(values.groupby(raw[hit], sort=False))
    for name, group in groups:
        ones = int((group == 1).sum())
        counts = f": {len(group)} ({ones} successes, {len(group) - ones} failures)"
        parts.append(f"{name} -> {mapping[name]}{counts if len(groups) > 1 else ''}")
    ones = int((values == 1).sum())
    warnings.warn(
        f"--status-map sets aside {len(values)} recorded outcomes ({ones} successes, "
        f"{len(values) - ones} failures) as missing: {'; '.join(parts)}. A recorded outcome "
        "counts as valid unless its raw status is mapped to a non-ok status, as here; these "
        "attempts now follow --missing",
        be.BayevalWarning,
        stacklevel=2,
    )


def _reads_judges(fmt: str) -> bool:
    """Whether the ``fmt`` reader reads a judge's verdicts beside labels (``judge=``)."""
    return fmt != "table" and "judge" in inspect.signature(READER_FORMATS[fmt]).parameters


def _judge_flags(read: ReadOptions) -> list[tuple[str, object]]:
    return [
        ("--judge", read.judge),
        ("--label-design", read.label_design),
        ("--label-strata", read.label_strata),
    ]


def _judge_roles(read: ReadOptions) -> dict:
    """``from_frame``'s judge arguments of ``--judge``, ``--label-design``, ``--label-strata``."""
    if not read.judge:
        return {
            name: value
            for name, value in (
                ("label_design", read.label_design),
                ("label_strata", read.label_strata),
            )
            if value is not None
        }  # from_frame refuses them without a judge, with its own message
    judge = read.judge[0] if len(read.judge) == 1 else list(read.judge)
    return {"judge": judge, "label_design": read.label_design, "label_strata": read.label_strata}


def load(
    files, read: ReadOptions, trials_flag: str = "--trials-column"
) -> tuple[be.EvalData, list[str]]:
    """Read results files into EvalData; returns the data and lines describing the reading."""
    files = list(files)
    fmt = read.fmt
    if fmt == "auto":
        try:
            fmt = detect_format(files[0])
        except ValueError as exc:
            exc.args = (cli_spelling(str(exc), None),)  # format= -> --format
            raise
    missing = read.missing
    extra = parse_reader_options(read.reader_options, fmt, trials_flag)
    if fmt == "table":
        if len(files) != 1:
            raise click.UsageError(f"give one table file; got {len(files)}")
        frame = load_table(files[0], reader="bayeval")
        roles, lines = read_roles(frame, read, trials_flag, source=files[0])
        lines = [f"read {files[0]} (table, {len(frame)} rows)"] + lines
        with _as_usage_errors():
            roles, more = attempt_columns(frame, roles, cost=read.cost, latency=read.latency)
        lines += more

        _warn_mapped_outcomes(frame, roles)

        judged = _judge_roles(read)

        def build():
            return be.from_frame(frame, missing=missing, **roles, **judged, **extra)

    else:
        judging = _reads_judges(fmt)
        given = [
            f"--{name.replace('_', '-')}"
            for name in (
                "system",
                "task",
                "success",
                "successes",
                "trial",
                "cluster",
                "stratum",
                "status",
            )
            if getattr(read, name) is not None and not (judging and name == "success")
        ]
        if read.trials_column is not None:
            given.append(trials_flag)
        if not judging:
            given += [flag for flag, value in _judge_flags(read) if value]
        if given:
            raise click.UsageError(
                f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'}"
                f" to table files; {fmt} outputs have fixed fields"
            )
        if read.cost is not None:
            raise click.UsageError(
                f"--cost reads a column of a table file; {fmt} outputs carry no cost column"
            )
        if read.latency is not None:
            raise click.UsageError(
                f"--latency reads columns of a table file; {fmt} outputs "
                "are read without per-attempt durations"
            )
        lines = [f"read {len(files)} file(s) ({fmt})"]
        with _as_usage_errors():
            status_map = parse_status_map(read.status_map)
        kwargs = {"missing": missing, **extra}
        if status_map is not None:
            kwargs["status_map"] = status_map
        if judging:  # --judge, --success name the reader's judge and label scorers
            kwargs.update(_judge_roles(read))
            if read.success is not None:
                if "scorer" in extra:
                    raise click.UsageError(
                        "--success and --reader-option scorer= both name the scorer to read; "
                        "give one"
                    )
                kwargs["scorer"] = read.success
                lines.append(f"outcome: scorer {read.success!r} (--success)")
        if read.system_name is not None:
            kwargs["system"] = read.system_name
            lines.append(f"system: {read.system_name!r} for every file (--system-name)")
        source = files[0] if len(files) == 1 else files

        def build():
            return read_results(source, format=fmt, **kwargs)

    try:
        data = build()
    except (ValueError, TypeError) as exc:
        text = cli_spelling(str(exc), fmt, trials_flag)  # split= -> --reader-option split=
        if "choose a missing-outcome policy" in text:
            raise InputError(f"{text}. Example: --missing bounds") from None
        exc.args = (text,)
        raise
    if fmt != "table":
        try:  # what the reader mapped, before any number: "install_fail: 12 -> error"
            lines += mapping_report(data).splitlines()
        except ValueError:  # a reader that records no mapping
            pass
    if read.systems:
        data = _chosen_systems(data, read.systems)
        lines.append(f"systems: {len(data.systems)} of the file's, as --systems names them")
    return data, lines


def _chosen_systems(data, given) -> be.EvalData:
    """The systems ``--systems`` names (comma-separated, or the option repeated), in order."""
    wanted = [name.strip() for item in given for name in item.split(",") if name.strip()]
    by_text = {str(s): s for s in data.systems}
    unknown = [name for name in wanted if name not in by_text]
    if unknown:
        shown = ", ".join(map(str, data.systems[:30]))
        more = " ..." if len(data.systems) > 30 else ""
        raise click.BadParameter(
            f"{unknown} {'is not a system' if len(unknown) == 1 else 'are not systems'} of "
            f"the data; systems: {shown}{more}",
            param_hint="--systems",
        )
    return data.sel(system=[by_text[name] for name in dict.fromkeys(wanted)])
