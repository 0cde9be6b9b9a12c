"""The ``bayeval`` command: analyse evaluation results, gate a release, plan a benchmark.

Commands
--------
``bayeval analyze FILE...``   fit, crosscheck with the bootstrap, compare, write JSON / a report
``bayeval gate FILE...``      exit 0 / 1 / 3 on a non-inferiority (or superiority) decision
``bayeval power``             tasks and trials needed to detect an effect
``bayeval demo``              the whole analysis on the bundled SWE-bench Verified results

Exit codes: 0 success (``gate``: the candidate passed); 1 ``gate`` only: the candidate is
confidently worse; 2 bad usage or input (the message names the option, column or value); 3
``gate`` only: the data cannot decide; 4 an unexpected error (one line; ``bayeval --traceback``
shows it in full); 130 interrupted.
"""

from __future__ import annotations

import json
import shlex
import sys
import warnings
from pathlib import Path

import click
import numpy as np
import pandas as pd

import bayeval as be
from bayeval import resampling
from bayeval.data import MISSING_POLICIES
from bayeval.readers import FORMATS as READER_FORMATS
from bayeval.readers import detect_format
from bayeval.readers import read as read_results
from bayeval.readers.table import load_table


class _LazyModule:
    """A module imported on first attribute access: the report and the models load SciPy,
    PyMC and ArviZ, which ``bayeval --help`` and ``--version`` do not need."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


_report = _LazyModule("bayeval.report")

EXIT_PASS, EXIT_WORSE, EXIT_USAGE, EXIT_UNDECIDED, EXIT_INTERNAL = 0, 1, 2, 3, 4
MODELS = ("auto", "hierarchical", "beta_binomial", "logit_normal")
SAMPLERS = ("auto", "conjugate", "grid", "nutpie", "pymc", "numpyro")
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
DEFAULT_TRIALS_GRID = (1, 2, 4, 8, 16)
GATE_EPILOG = """\b
Exit codes:
  0  the candidate passes: P(effect > -margin) >= prob
     (with --superior: P(effect > margin) >= prob)
  1  the candidate is worse: P(effect < -margin) >= prob
     (with --superior: P(effect <= margin) >= prob)
  2  bad usage or input (the message says what to change)
  3  the data cannot decide (neither probability reaches prob)
  4  an unexpected error (one line; bayeval --traceback shows it in full)
"""


class InputError(click.ClickException):
    """Bad input or options: exit code 2, like click's usage errors."""

    exit_code = EXIT_USAGE


class InternalError(click.ClickException):
    """An unexpected failure: exit code 4 with a one-line message."""

    exit_code = EXIT_INTERNAL


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class _Group(click.Group):
    """Turns library errors into clean exits: bad input 2, anything unexpected 4."""

    def parse_args(self, ctx, args):
        ctx.meta["bayeval.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            raise click.exceptions.Exit(130) from None
        except Exception as exc:
            if ctx.meta.get("bayeval.traceback"):
                # the traceback, then the same exit code as without --traceback (a raised
                # exception would exit 1, the gate's "worse", and click turns EOFError into
                # "Aborted!")
                import traceback

                traceback.print_exc(file=sys.stderr)
            if isinstance(exc, (ValueError, TypeError, OSError, ImportError)):
                raise InputError(_one_line(exc)) from exc
            raise InternalError(
                f"unexpected {type(exc).__name__}: {_one_line(exc)} "
                "(bayeval --traceback ... shows where)"
            ) from exc


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Statistical caveats read as notes on the terminal, not as Python tracebacks."""
    prefix = "note" if issubclass(category, be.BayevalWarning) else "warning"
    click.echo(f"{prefix}: {message}", err=True)


@click.group(
    cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(be.__version__, prog_name="bayeval")
@click.option("--traceback", is_flag=True, help="Show the full traceback of an error.")
@click.option(
    "--progress/--quiet",
    "progress",
    default=None,
    help="Show the sampler's progress bar and one status line per slow phase "
    "(fit, bootstraps, report), or neither; default: both on a terminal, the "
    "status lines only otherwise.",
)
@click.pass_context
def main(ctx, traceback: bool, progress):
    """Honest uncertainty for AI evaluation results: pass@k, pass^k and paired comparisons.

    \b
    Examples:
      bayeval analyze runs.csv --k 1,5 --compare new old --margin 0.02 --report card.html
      bayeval gate runs.csv --compare new old --margin 0.02
      bayeval power --effect 0.02,0.05 --sd 0.4 --icc 0.6 --trials 1,4,16
      bayeval demo

    Run `bayeval COMMAND --help` for each command's options.
    """
    ctx.meta["bayeval.traceback"] = traceback
    ctx.meta["bayeval.progress"] = progress
    warnings.showwarning = _show_warning


def _progress_setting():
    """``--progress`` (True), ``--quiet`` (False) or neither (None)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.find_root().meta.get("bayeval.progress")


def status(message: str) -> None:
    """One line on stderr saying what a slow phase is doing (silent under ``--quiet``)."""
    if _progress_setting() is not False:
        click.echo(message, err=True)


# -- option types and parsing ------------------------------------------------------------------
class _NumberList(click.ParamType):
    """Comma-separated numbers: ``1,5,10``."""

    def __init__(self, kind, minimum, strict):
        self.kind, self.minimum, self.strict = kind, minimum, strict
        self.name = "INTS" if kind is int else "NUMBERS"

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)):
            return list(value)
        parts = [p.strip() for p in str(value).split(",") if p.strip()]
        if not parts:
            self.fail(f"expected comma-separated numbers; got {value!r}", param, ctx)
        out = []
        for part in parts:
            try:
                number = self.kind(part)
            except ValueError:
                kind = "whole numbers" if self.kind is int else "numbers"
                self.fail(f"expected comma-separated {kind}; {part!r} is not one", param, ctx)
            if (
                not np.isfinite(number)
                or number < self.minimum
                or (self.strict and number == self.minimum)
            ):
                bound = ">" if self.strict else ">="
                self.fail(f"every value must be {bound} {self.minimum}; got {part}", param, ctx)
            out.append(number)
        if len(set(out)) != len(out):
            self.fail(f"values must not repeat; got {value!r}", param, ctx)
        return out


K_LIST = _NumberList(int, 1, strict=False)
TRIALS_LIST = _NumberList(int, 1, strict=False)
EFFECT_LIST = _NumberList(float, 0.0, strict=True)
PROBABILITY = click.FloatRange(0.0, 1.0, min_open=True, max_open=True)


def _parse_status_map(text):
    """``raw=status,raw2=status2`` or a JSON file holding ``{"raw": "status"}``."""
    if text is None:
        return None
    hint = "--status-map"
    path = Path(text)
    if path.suffix.lower() == ".json" or path.is_file():
        try:
            mapping = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise click.BadParameter(
                f"cannot read {text!r} as a JSON file: {exc}", param_hint=hint
            ) from None
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise click.BadParameter(
                f"{text!r} must hold a JSON object of raw status -> bayeval status strings",
                param_hint=hint,
            )
    else:
        mapping = {}
        for part in text.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise click.BadParameter(
                    f"expected RAW=STATUS pairs separated by commas (or a "
                    f".json file); {part.strip()!r} has no '='",
                    param_hint=hint,
                )
            raw, status = (s.strip() for s in part.split("=", 1))
            if raw in mapping:
                raise click.BadParameter(f"raw status {raw!r} is mapped twice", param_hint=hint)
            mapping[raw] = status
        if not mapping:
            raise click.BadParameter("the map is empty", param_hint=hint)
    bad = {raw: status for raw, status in mapping.items() if status not in be.STATUSES}
    if bad:
        raise click.BadParameter(
            f"unknown bayeval status(es) in {bad}; allowed: {', '.join(be.STATUSES)}",
            param_hint=hint,
        )
    return mapping


def _column_options(trials_flag: str):
    """Column-role options shared by every command that reads results."""
    trials_help = "Count rows: column of trials per row (with --successes) [detected: trials]."
    options = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["auto", *READER_FORMATS]),
            default="auto",
            show_default=True,
            help="Input format; auto detects tables (.csv, .parquet, .jsonl, .json) "
            "and harness outputs (SWE-bench, Terminal-Bench, tau-bench, HumanEval "
            "and EvalPlus, lm-eval samples and results, Inspect, HELM).",
        ),
        click.option(
            "--system",
            metavar="COLUMN",
            help="Column of system labels "
            "[detected: system]; 'none' (or a table without one) reads the table as "
            "one system, named after the file or by --system-name.",
        ),
        click.option(
            "--system-name",
            "system_name",
            metavar="NAME",
            help="Name of the one system of a table without a system column "
            "[default: the file's stem]; for harness outputs, one system name "
            "for every file given [default: from each run's metadata or file].",
        ),
        click.option("--task", metavar="COLUMN", help="Column of task ids [detected: task]."),
        click.option(
            "--success",
            metavar="COLUMN",
            help="Column of 0/1 outcomes, empty for no outcome [detected: success].",
        ),
        click.option(
            "--successes",
            metavar="COLUMN",
            help="Count rows: column of successes (with the trials column) [detected: successes].",
        ),
        click.option(trials_flag, "trials_column", metavar="COLUMN", help=trials_help),
        click.option(
            "--trial",
            metavar="COLUMN",
            help="Column of trial ids [detected: trial]; "
            "'none' ignores a detected column (also for the options below).",
        ),
        click.option(
            "--cluster",
            metavar="COLUMN",
            help="Column of task clusters (repository, family) [detected: cluster].",
        ),
        click.option(
            "--stratum", metavar="COLUMN", help="Column of task strata [detected: stratum]."
        ),
        click.option(
            "--status",
            metavar="COLUMN",
            help="Column of statuses [detected: status, "
            "when its values are bayeval statuses or --status-map is given].",
        ),
        click.option(
            "--status-map",
            metavar="RAW=STATUS,...|FILE.json",
            help=f"Map raw statuses onto {', '.join(be.STATUSES)}.",
        ),
        click.option(
            "--reader-option",
            "reader_options",
            metavar="KEY=VALUE",
            multiple=True,
            help="Extra argument of the reader (e.g. cluster=none for Terminal-Bench "
            "or SWE-bench, instances=verified for classic SWE-bench reports, "
            "filter=strict-match for lm-eval, scorer=... for Inspect, "
            "threshold=0.5 for tau-bench, planned_trials=5). VALUE: none or "
            "null is None, true/false a boolean, 5 or 0.5 a number, [...] or "
            "{...} JSON, \"...\" a JSON string (quote to pass the text 'none'), "
            "anything else text. KEY must be one of the reader's arguments. "
            "Repeatable.",
        ),
        click.option(
            "--missing",
            type=click.Choice(MISSING_POLICIES),
            help="Policy for attempts without a valid outcome (required when there "
            "are any): fail = count as failures, exclude = leave out, bounds = "
            "report both extremes.",
        ),
    ]

    def decorate(func):
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def _model_options(func):
    options = [
        click.option(
            "--model",
            type=click.Choice(MODELS),
            default="auto",
            show_default=True,
            help="Statistical model; auto: the paired "
            "logit_normal model for several systems on shared tasks, hierarchical "
            "otherwise. With --compare only the compared systems are fitted.",
        ),
        click.option(
            "--sampler",
            type=click.Choice(SAMPLERS),
            default="auto",
            show_default=True,
            help="Engine; auto picks the exact grid or conjugate "
            "engine where the model allows it, NUTS otherwise.",
        ),
        click.option(
            "--draws",
            type=click.IntRange(min=1),
            default=1000,
            show_default=True,
            help="Posterior draws per chain.",
        ),
        click.option(
            "--chains",
            type=click.IntRange(min=1),
            default=4,
            show_default=True,
            help="Chains (the grid and conjugate engines fill the same layout).",
        ),
        click.option(
            "--tune",
            type=click.IntRange(min=0),
            default=None,
            help="NUTS warm-up draws per chain (NUTS engines only). [default: 300 "
            "where logit_normal integrates its latent effects out (collapsed "
            "and task-latent forms), 1000 otherwise]",
        ),
        click.option(
            "--seed",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            help="Seed of the fit and of every bootstrap.",
        ),
        click.option(
            "--n-boot",
            type=click.IntRange(min=2),
            default=10_000,
            show_default=True,
            help="Bootstrap replicates.",
        ),
        click.option(
            "--ci-prob",
            type=PROBABILITY,
            default=0.95,
            show_default=True,
            help="Probability of every interval.",
        ),
        click.option(
            "--estimand",
            type=click.Choice(["population", "tasks"]),
            help="population: a new task like these; tasks: these tasks only. "
            "[default: population where the model has it]",
        ),
        click.option(
            "--metric",
            type=click.Choice(["pass@k", "pass^k"]),
            default="pass@k",
            show_default=True,
            help="Metric of the table and the comparisons.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _output_options(func):
    options = [
        click.option(
            "--json",
            "json_path",
            metavar="PATH",
            help="Write every number (Bayesian and bootstrap twins, comparisons, "
            "statuses, settings) as JSON; '-' writes to stdout.",
        ),
        click.option(
            "--report",
            "report_path",
            metavar="PATH",
            type=click.Path(dir_okay=False, writable=True),
            help="Write the report card: .html (self-contained) or .md (plots in <stem>_files/).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


# -- reading data ------------------------------------------------------------------------------
DATA_OPTIONS = (
    "fmt",
    "system",
    "system_name",
    "task",
    "success",
    "successes",
    "trials_column",
    "trial",
    "cluster",
    "stratum",
    "status",
    "status_map",
    "reader_options",
    "missing",
)


def _collect_opts(values: dict) -> dict:
    """The data-reading options out of a command's arguments."""
    return {name: values[name] for name in DATA_OPTIONS}


def _parse_reader_options(items, fmt: str = "table", trials_flag: str = "--trials") -> dict:
    """``--reader-option KEY=VALUE`` items -> keyword arguments of the ``fmt`` reader.

    VALUE: ``none``/``null`` (any case) is None, ``true``/``false`` a boolean, a JSON number
    a number, ``[...]``/``{...}``/``"..."`` JSON, anything else text. KEY must be an argument
    of the reader (of ``bayeval.from_frame`` for tables) that has no option of its own.
    """
    import inspect
    import re

    hint = "--reader-option"
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
        }
    else:
        func = READER_FORMATS[fmt]
        name = f"{func.__name__} ({fmt})"
        own = {"system": "--system-name"}
    own.update(missing="--missing", status_map="--status-map", format="--format")
    params = list(inspect.signature(func).parameters.values())[1:]  # the path or frame
    allowed = [
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in own
    ]
    options = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise click.BadParameter(
                f"expected KEY=VALUE with KEY a name; got {item!r}", param_hint=hint
            )
        if key in options:
            raise click.BadParameter(f"{key!r} is given twice", param_hint=hint)
        if key in own:
            raise click.BadParameter(f"{key!r} has its own option: use {own[key]}", param_hint=hint)
        if key not in allowed:
            raise click.BadParameter(
                f"{name} has no option {key!r}; its options: "
                f"{', '.join(allowed) or '(none)'} (and {', '.join(sorted(set(own.values())))} "
                "as options of their own)",
                param_hint=hint,
            )
        text = value.strip()
        if text.lower() in ("none", "null"):
            options[key] = None
        elif text.lower() in ("true", "false"):
            options[key] = text.lower() == "true"
        elif text[:1] in ("[", "{", '"') or re.fullmatch(
            r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?", text
        ):
            try:
                options[key] = json.loads(text)
            except json.JSONDecodeError as exc:
                raise click.BadParameter(
                    f"{key}={value!r} looks like JSON but does not parse ({exc}); quote text "
                    "as a JSON string (KEY='\"...\"')",
                    param_hint=hint,
                ) from None
        else:
            options[key] = value
    return options


def _pick(frame, given, role, required=False, *, detect=True):
    """The column for ``role``: the option's value, else the conventional name if present."""
    if given is not None:
        if given.lower() == "none":
            if required:
                raise click.BadParameter("this column is required", param_hint=f"--{role}")
            return None
        if given not in frame.columns:
            raise click.BadParameter(
                f"no column {given!r}; the file has columns "
                f"{', '.join(map(str, frame.columns[:30]))}",
                param_hint=f"--{role}",
            )
        return given
    name = CONVENTIONAL[role]
    if detect and name in frame.columns:
        return name
    if required:
        raise click.BadParameter(
            f"no column named {name!r}; name the column with --{role} (the file has columns "
            f"{', '.join(map(str, frame.columns[:30]))})",
            param_hint=f"--{role}",
        )
    return None


def _table_roles(
    frame: pd.DataFrame, opts: dict, trials_flag: str, source=None
) -> tuple[dict, list[str]]:
    """``from_frame`` keyword arguments for a table, and lines saying what was used.

    A table without a system column (or with ``--system none``) is one system, named by
    ``--system-name`` or after ``source``'s stem; a column that looks like a system column
    but is not named ``system`` is refused rather than ignored.
    """
    import re

    from bayeval.readers.table import COMPRESSIONS, TABLE_SUFFIXES

    # column names that hold system labels in the wild (compared lower-cased, separators as _)
    system_alike = {
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
    lines = []
    given = opts["system"]
    system_name = opts.get("system_name")
    one_system = (given is not None and given.lower() == "none") or (
        given is None and CONVENTIONAL["system"] not in frame.columns
    )
    if not one_system and system_name is not None:
        raise click.UsageError(
            f"--system-name names the one system of a table without a system column; this "
            f"table's systems come from column {given or CONVENTIONAL['system']!r} (give "
            "--system none to read it as one system)"
        )
    if one_system and given is not None and CONVENTIONAL["system"] in frame.columns:
        raise click.UsageError(
            "--system none reads the table as one system, but it has a "
            "'system' column, whose rows may belong to several systems; "
            "drop the column from the file, or leave out --system none"
        )
    if one_system and given is None:
        alike = [
            c
            for c in frame.columns
            if isinstance(c, str) and re.sub(r"[\s\-.]+", "_", c.strip().lower()) in system_alike
        ]
        if alike:
            raise click.BadParameter(
                f"no column named 'system', but {', '.join(map(repr, alike))} looks like "
                f"one; name it with --system {alike[0]}, or read the table as one system "
                "with --system none [--system-name NAME]",
                param_hint="--system",
            )
    if one_system:
        if system_name is None:
            if source is None:
                raise click.UsageError(
                    "the table has no system column: name its one system with --system-name NAME"
                )
            stem = Path(source).name
            for suffixes in (COMPRESSIONS, TABLE_SUFFIXES):
                stem = next(
                    (
                        stem[: -len(x)]
                        for x in suffixes
                        if stem.lower().endswith(x) and len(stem) > len(x)
                    ),
                    stem,
                )
            system_name = stem
            lines.append(
                f"no system column: one system, named {system_name!r} after the "
                "file; --system-name NAME names it"
            )
        else:
            lines.append(f"no system column: one system, named {system_name!r} (--system-name)")
        if not system_name.strip():
            raise click.BadParameter("the system name is empty", param_hint="--system-name")
        roles = {"system": None}
    else:
        roles = {"system": _pick(frame, given, "system", required=True)}
    roles["task"] = _pick(frame, opts["task"], "task", required=True)
    score = _score_role(frame, opts, trials_flag, lines)
    count_rows = score is None and (
        opts["successes"] is not None
        or opts["trials_column"] is not None
        or (
            opts["success"] is None
            and "success" not in frame.columns
            and {"successes", "trials"} <= set(frame.columns)
        )
    )
    if score is not None:
        roles["score"] = score
        roles["trial"] = _pick(frame, opts["trial"], "trial")
    elif count_rows:
        if opts["success"] is not None:
            raise click.UsageError(
                f"--success is for outcome rows; count rows take --successes and {trials_flag}"
            )
        roles["success"] = None
        roles["successes"] = _pick(frame, opts["successes"], "successes", required=True)
        given = opts["trials_column"]
        if given is None and "trials" not in frame.columns:
            raise click.BadParameter(
                "no column named 'trials' for count rows; name it", param_hint=trials_flag
            )
        if given is not None and given not in frame.columns:
            raise click.BadParameter(f"no column {given!r}", param_hint=trials_flag)
        roles["trials"] = given or "trials"
        for role in ("trial", "status"):
            if opts[role] not in (None, "none"):
                raise click.UsageError(
                    f"--{role} applies to outcome rows (one row per trial); "
                    "count rows hold valid outcomes only"
                )
        if opts["status_map"] is not None:
            raise click.UsageError("--status-map applies to outcome rows with a status column")
    else:
        roles["success"] = _pick(frame, opts["success"], "success", required=True)
        roles["trial"] = _pick(frame, opts["trial"], "trial")
    for role in ("cluster", "stratum"):
        roles[role] = _pick(frame, opts[role], role)
    status_map = _parse_status_map(opts["status_map"])
    if not count_rows:
        status = _pick(frame, opts["status"], "status", detect=False)
        if status is None and opts["status"] is None and "status" in frame.columns:
            values = frame["status"].dropna().unique().tolist()
            if status_map is not None or all(v in be.STATUSES for v in values):
                status = "status"
            else:
                lines.append(
                    f"column 'status' not used: its values ({', '.join(map(str, values[:6]))}"
                    f"{', ...' if len(values) > 6 else ''}) are not bayeval statuses; map them "
                    f"with --status-map RAW=STATUS onto {', '.join(be.STATUSES)}"
                )
        if status_map is not None and status is None:
            raise click.UsageError("--status-map needs a status column (--status COLUMN)")
        roles["status"], roles["status_map"] = status, status_map
    used = ", ".join(
        f"{role}={col}"
        for role, col in roles.items()
        if isinstance(col, str) and role != "status_map"
    )
    lines.insert(0, f"columns: {used}" + (" (count rows)" if count_rows else ""))
    if one_system:
        roles["system_name"] = system_name
    return {k: v for k, v in roles.items() if v is not None or k == "system"}, lines


def _score_role(frame, opts: dict, trials_flag: str, lines: list) -> str | None:
    """The column of partial-credit scores (``--score``, or a detected ``score`` column when
    no 0/1 outcome column is named or present), or None for 0/1 outcomes; refused where the
    command analyses 0/1 outcomes only (``opts["scores"]`` false)."""
    given = opts.get("score")
    detected = (
        given is None
        and opts["success"] is None
        and opts["successes"] is None
        and opts["trials_column"] is None
        and "success" not in frame.columns
        and "score" in frame.columns
        and not {"successes", "trials"} <= set(frame.columns)
    )
    if given is None and not detected:
        return None
    if not opts.get("scores"):
        raise click.BadParameter(
            "this table holds scores, not 0/1 outcomes: this command analyses 0/1 outcomes "
            "(name them with --success); partial-credit scores in [0, 1] are analysed by "
            "bayeval analyze FILE --score COLUMN (the mean score, zoib model)",
            param_hint="--success",
        )
    if given is not None:
        clash = [
            flag
            for flag, value in (
                ("--success", opts["success"]),
                ("--successes", opts["successes"]),
                (trials_flag, opts["trials_column"]),
            )
            if value is not None
        ]
        if clash:
            verb = "names" if len(clash) == 1 else "name"
            raise click.UsageError(
                f"--score names a column of partial-credit scores, one per "
                f"attempt; {' and '.join(clash)} {verb} 0/1 outcomes or "
                "counts: give one or the other"
            )
        if given not in frame.columns:
            raise click.BadParameter(
                f"no column {given!r}; the file has columns "
                f"{', '.join(map(str, frame.columns[:30]))}",
                param_hint="--score",
            )
    column = given or "score"
    lines.append(
        f"scores: column {column!r} holds partial-credit scores in [0, 1]"
        + (" (detected; --success COLUMN names 0/1 outcomes instead)" if detected else "")
        + ": the mean score (zoib model; scores all 0 or 1 are 0/1 "
        "outcomes, fitted by the binomial models)"
    )
    return column


def _load(files, opts: dict, trials_flag: str = "--trials") -> tuple[be.EvalData, list[str]]:
    """Read results files into EvalData; returns the data and lines describing the reading."""
    files = list(files)
    fmt = opts["fmt"]
    if fmt == "auto":
        fmt = detect_format(files[0])
    missing = opts["missing"]
    extra = _parse_reader_options(opts.get("reader_options"), fmt, trials_flag)
    if fmt == "table":
        if len(files) != 1:
            raise click.UsageError(f"give one table file; got {len(files)}")
        frame = load_table(files[0], reader="bayeval")
        roles, lines = _table_roles(frame, opts, trials_flag, source=files[0])
        lines = [f"read {files[0]} (table, {len(frame)} rows)"] + lines
        if opts.get("cost") is not None:
            if opts["cost"] not in frame.columns:
                raise click.BadParameter(
                    f"no column {opts['cost']!r}; the file has columns "
                    f"{', '.join(map(str, frame.columns[:30]))}",
                    param_hint="--cost",
                )
            if roles.get("successes") is not None:
                raise click.UsageError(
                    "--cost needs outcome rows (one row per attempt, each "
                    "with its cost); this table has count rows"
                )
            roles["covariates"] = [opts["cost"]]
            lines.append(f"cost: column {opts['cost']} per attempt")
        if opts.get("latency") is not None:
            roles["latency"] = _latency_roles(frame, opts["latency"], roles)
            lines.append(
                "latency: "
                + (
                    f"column {roles['latency'][0]} (seconds)"
                    if len(roles["latency"]) == 1
                    else f"{roles['latency'][1]} minus {roles['latency'][0]}"
                )
                + " per attempt"
            )
            if len(roles["latency"]) == 1:
                roles["latency"] = roles["latency"][0]
        build = lambda: be.from_frame(frame, missing=missing, **roles, **extra)
    else:
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
            if opts[name] is not None
        ]
        if opts["trials_column"] is not None:
            given.append(trials_flag)
        if given:
            raise click.UsageError(
                f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'}"
                f" to table files; {fmt} outputs have fixed fields"
            )
        if opts.get("cost") is not None:
            raise click.UsageError(
                f"--cost reads a column of a table file; {fmt} outputs carry no cost column"
            )
        if opts.get("latency") is not None:
            raise click.UsageError(
                f"--latency reads columns of a table file; {fmt} outputs "
                "are read without per-attempt durations"
            )
        lines = [f"read {len(files)} file(s) ({fmt})"]
        status_map = _parse_status_map(opts["status_map"])
        kwargs = {"missing": missing, **extra}
        if status_map is not None:
            kwargs["status_map"] = status_map
        system_name = opts.get("system_name")
        if system_name is not None:
            kwargs["system"] = system_name
            lines.append(f"system: {system_name!r} for every file (--system-name)")
        source = files[0] if len(files) == 1 else files
        build = lambda: read_results(source, format=fmt, **kwargs)
    try:
        data = build()
    except ValueError as exc:
        text = str(exc)
        if "choose a missing-outcome policy" in text:
            text = text.replace("with missing=:", "with --missing:")
            raise InputError(f"{text}. Example: --missing bounds") from None
        raise
    if fmt != "table":
        try:  # what the reader mapped, before any number: "install_fail: 12 -> error"
            lines += be.readers.mapping_report(data).splitlines()
        except ValueError:  # a reader that records no mapping
            pass
    return data, lines


def _latency_roles(frame, text: str, roles: dict) -> tuple:
    """``--latency COL`` (seconds) or ``--latency START,END`` (timestamps), checked."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (1, 2) or not all(parts):
        raise click.BadParameter(
            f"give one column of seconds or START,END timestamp columns; got {text!r}",
            param_hint="--latency",
        )
    absent = [p for p in parts if p not in frame.columns]
    if absent:
        raise click.BadParameter(
            f"no column {absent[0]!r}; the file has columns "
            f"{', '.join(map(str, frame.columns[:30]))}",
            param_hint="--latency",
        )
    if roles.get("successes") is not None:
        raise click.UsageError(
            "--latency needs outcome rows (one row per attempt, each with "
            "its duration); this table has count rows"
        )
    return tuple(parts)


def _check_k_before_fit(data, pairs, ks, metric):
    """Refuse a k larger than some task's trials before any sampling starts (the bootstrap
    twins and benchmark-level metrics need n >= k in every task)."""

    systems = (
        list(dict.fromkeys(s for pair in pairs for s in pair)) if pairs else list(data.systems)
    )
    c, n, _ = resampling._arrays(data, systems)
    try:
        resampling._check_k(data, systems, c, n, np.asarray(ks), metric)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k") from None


def _check_harness(data, pairs, allow: bool):
    """Refuse, before any sampling, a comparison across harness digests unless allowed."""
    from bayeval.harness import check_comparable

    for pair in pairs:
        try:
            check_comparable(data, list(pair), allow)
        except ValueError as exc:
            raise InputError(
                f"incomparable harness: {exc} (--allow-harness-change compares "
                "them anyway, and says so)"
            ) from None


def _check_pairs(pairs, systems) -> list[tuple]:
    for candidate, baseline in pairs:
        for role, label in (("candidate", candidate), ("baseline", baseline)):
            if label not in systems:
                raise click.BadParameter(
                    f"{role} {label!r} is not a system of the data; systems: "
                    f"{', '.join(map(str, systems[:20]))}{' ...' if len(systems) > 20 else ''}",
                    param_hint="--compare",
                )
        if candidate == baseline:
            raise click.BadParameter("candidate and baseline must differ", param_hint="--compare")
    return [tuple(p) for p in pairs]


class _Notes:
    """Collects bayeval's caveats (warnings) while a block runs; other warnings pass through."""

    def __init__(self):
        self.items: list[str] = []

    def __enter__(self):
        self._catch = warnings.catch_warnings(record=True)
        self._caught = self._catch.__enter__()
        warnings.simplefilter("always", be.BayevalWarning)
        return self

    def __exit__(self, *exc):
        self._catch.__exit__(*exc)
        for item in self._caught:
            if issubclass(item.category, be.BayevalWarning):
                text = str(item.message)
                if text not in self.items:
                    self.items.append(text)
            else:
                click.echo(f"warning: {item.category.__name__}: {item.message}", err=True)
        return False


def _echo_notes(notes, start: int = 0):
    for note in notes[start:]:
        click.echo(f"note: {note}", err=True)


def _fit(
    data, model, sampler, draws, chains, seed, notes: _Notes, tune: int | None = None, pairs=None
):
    """Fit ``data`` (only the systems of ``pairs`` when given: a comparison fits what it
    needs), saying on stderr what is fitted before a sampler runs."""
    if pairs:
        wanted = list(dict.fromkeys(s for pair in pairs for s in pair))
        data = data.sel(system=[s for s in data.systems if s in wanted])
    chosen = model
    if model == "auto":
        from bayeval.fit import choose_model

        chosen = choose_model(data, sampler)[0]
    if chosen in ("logit_normal", "zoib") or sampler in ("nutpie", "pymc"):
        ds = data.dataset
        paired = chosen in ("logit_normal", "zoib")
        how = "paired" if paired else "unpaired"
        form = None
        if chosen == "logit_normal" and sampler in ("auto", "nutpie", "pymc"):
            from bayeval.models.logit_normal import sampling_form

            form = sampling_form(ds)[0]
            how += f", {form} form"
        from bayeval.fit import default_tune

        warm_up = default_tune(chosen, form) if tune is None else tune
        status(
            f"fitting {chosen} ({how}) "
            f"to {ds.sizes['system']} system(s) x {ds.sizes['task']} task(s): "
            f"{chains} chain(s) x {draws} draws after {warm_up} warm-up, seed {seed} ..."
        )
    setting = _progress_setting()
    with notes:
        return be.fit(
            data,
            model=model,
            draws=draws,
            chains=chains,
            seed=seed,
            sampler=sampler,
            tune=tune,
            progress=sys.stderr.isatty() if setting is None else setting,
        )


def _command_line() -> str | None:
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    root = ctx.find_root()
    argv = root.meta.get("bayeval.argv")
    return None if argv is None else shlex.join(["bayeval", *argv])


def _check_outputs(json_path=None, report_path=None):
    """Refuse unusable output paths before any work is done."""
    for option, path in (("--json", json_path), ("--report", report_path)):
        if path is None or (path == "-" and option == "--json"):
            continue
        folder = Path(path).parent
        if not folder.is_dir():
            raise click.BadParameter(f"the folder '{folder}' does not exist", param_hint=option)
    if report_path is not None:
        suffix = Path(report_path).suffix.lower()
        allowed = [s for suffixes in _report.FORMATS.values() for s in suffixes]
        if suffix not in allowed:
            raise click.BadParameter(
                f"the report is written as HTML or Markdown: end the path "
                f"in one of {', '.join(allowed)}; got {report_path!r}",
                param_hint="--report",
            )


def _write_json(payload: dict, path: str):
    text = json.dumps(payload, indent=2, allow_nan=False, default=str)
    if path == "-":
        click.echo(text)
    else:
        Path(path).write_text(text + "\n", encoding="utf-8")
        click.echo(f"wrote {path}", err=True)


def _report_data(res, **options):
    """:func:`bayeval.report.report_data`, after a status line (the readouts and bootstrap
    twins take a while at leaderboard size)."""
    status(
        f"summarising: posterior readouts and bootstrap twins "
        f"({options.get('n_boot', 2000)} resamples) ..."
    )
    return _report.report_data(res, **options)


def _write_report(res, path, report, compare_results=None):
    status(f"writing the report card and its figures to {path} ...")
    written = _report.write_report(res, path, data=report, compare_results=compare_results)
    click.echo(f"wrote {written}", err=True)


# -- printing ----------------------------------------------------------------------------------
def _interval_text(lower, upper) -> str:
    if lower is None or upper is None:
        return "[n/a]"
    return f"[{lower:.3f}, {upper:.3f}]"


def _value(row, prefix):
    mean = row[f"{prefix}_mean" if prefix == "bayes" else f"{prefix}_estimate"]
    text = "n/a" if mean is None else f"{mean:.3f}"
    return f"{text} {_interval_text(row[f'{prefix}_lower'], row[f'{prefix}_upper'])}"


def _metric_table(report: dict, estimands, metric: str) -> pd.DataFrame:
    """One row per system (and bound), two columns (posterior, bootstrap) per k and estimand."""
    ks = report["settings"]["report"]["k"]
    rows = {}
    for row in report["metrics"]:
        wanted = row["metric"] == metric or (
            metric == "pass^k" and row["k"] == 1 and row["metric"] == "pass@k"
        )
        if not wanted or row["estimand"] not in estimands or row["k"] not in ks:
            continue
        name = _report._metric_name(metric, row["k"])
        key = (row["system"], row["missing_bound"] or "")
        label = "" if len(estimands) == 1 else f"{row['estimand']} "
        cells = rows.setdefault(key, {})
        cells[f"{label}{name} posterior"] = _value(row, "bayes")
        unit = row["bootstrap_unit"] or "none: no trial bootstrap of scores"
        cells[f"{label}{name} bootstrap ({unit})"] = _value(row, "bootstrap")
        cells.setdefault("_order", row["bayes_mean"] if row["k"] == ks[0] else None)
    table = pd.DataFrame.from_dict(rows, orient="index")
    order = table["_order"].astype(float).groupby(level=0).mean().sort_values(ascending=False)
    table = table.drop(columns="_order").loc[order.index.tolist()]
    table.index.names = ["system", "bound"]
    if not any(table.index.get_level_values("bound")):
        table = table.droplevel("bound")
    return table


def _echo_table(report, estimands, metric, ci_prob):
    table = _metric_table(report, estimands, metric)
    with pd.option_context(
        "display.width",
        250,
        "display.max_columns",
        None,
        "display.max_colwidth",
        60,
        "display.max_rows",
        None,
    ):
        title = _report._metric_name(metric, 1) if metric == "mean" else metric
        click.echo(
            f"\n{title}: posterior mean [{ci_prob:.0%} interval] and its bootstrap twin "
            f"({', '.join(estimands)} estimand{'s' if len(estimands) > 1 else ''})"
        )
        click.echo(table.to_string())


def _decision_text(decision: dict) -> str:
    return decision["decision"]


def _echo_comparisons(report: dict):
    for entry in report["comparisons"]:
        name = _report._metric_name(entry["metric"], entry["k"])
        click.echo(
            f"\n{entry['candidate']} - {entry['baseline']}: {name}, {entry['estimand']} "
            f"estimand, margin {entry['margin']:g}, {entry['test']} at prob "
            f"{entry['prob']:g}"
        )
        paired = entry["bayes"]["paired"]
        click.echo(
            "  posterior"
            + (" (paired):" if paired.startswith("yes") else f" ({paired.removeprefix('no: ')}):")
        )
        for row in entry["bayes"]["rows"]:
            bound = f" [{row['missing_bound']}]" if row["missing_bound"] else ""
            click.echo(
                f"    effect{bound} {row['effect']:+.3f} "
                f"{_interval_text(row['lower'], row['upper'])}, P(effect > 0) = "
                f"{row['prob_positive']:.3f}, P(effect > -margin) = "
                f"{row['prob_noninferior']:.3f}"
            )
        click.echo(f"    decision: {_decision_text(entry['bayes']['decision'])}")
        for boot in entry["bootstrap"]:
            twin = ", the posterior's twin" if boot["twin"] else ""
            click.echo(f"  paired bootstrap by {boot['unit']}{twin}: {boot['meaning']}")
            for row in boot["rows"]:
                bound = f" [{row['missing_bound']}]" if row["missing_bound"] else ""
                click.echo(
                    f"    effect{bound} {row['effect']:+.3f} "
                    f"{_interval_text(row['lower'], row['upper'])}, share > 0 = "
                    f"{row['prob_positive']:.3f}, p = {_report._pvalue(row['p_value'])}"
                )
            click.echo(f"    decision: {_decision_text(boot['decision'])}")
    family = report["multiplicity"]
    if family and family["size"] > 1:
        click.echo(
            f"\nmultiplicity: {family['size']} comparisons, {family['method']}-adjusted "
            "bootstrap p-values:"
        )
        for label, p, adj in zip(family["family"], family["p_values"], family["adjusted"]):
            click.echo(f"  {label}: p = {_report._pvalue(p)}, adjusted {_report._pvalue(adj)}")


def _header(data, lines, res=None, err=False):
    for line in lines:
        click.echo(line, err=err)
    click.echo(repr(data), err=err)
    if res is not None:
        attrs = res.tree.attrs
        click.echo(
            f"fit: model {attrs['model']}, sampler {attrs['sampler']}, "
            f"{attrs['chains']} chain(s) x {attrs['draws']} draws, seed {attrs['seed']}",
            err=err,
        )


# -- analyze -----------------------------------------------------------------------------------
@main.command(context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--k",
    "k",
    type=K_LIST,
    default="1",
    show_default=True,
    help="k values of pass@k and pass^k, comma-separated.",
)
@click.option(
    "--compare",
    "pairs",
    type=(str, str),
    multiple=True,
    metavar="CANDIDATE BASELINE",
    help="A paired comparison; repeat for several (they form the multiplicity family).",
)
@click.option(
    "--compare-k", type=click.IntRange(min=1), help="k of the comparisons [default: the first --k]."
)
@click.option(
    "--margin",
    type=click.FloatRange(min=0.0),
    default=0.0,
    show_default=True,
    help="Practical margin (absolute, e.g. 0.02 for 2 points).",
)
@click.option(
    "--prob",
    type=PROBABILITY,
    default=0.95,
    show_default=True,
    help="Probability a decision needs.",
)
@click.option(
    "--superior", is_flag=True, help="Decide superiority by the margin instead of non-inferiority."
)
@click.option(
    "--by",
    "by",
    metavar="COLUMN",
    multiple=True,
    help="One analysis per value of this table column (repeat for several); prints "
    "one row per group and system.",
)
@click.option(
    "--flagged",
    "flagged_path",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Task ids flagged by a contamination check (one per line, "
    "or the JSON of bayeval overlap): the score on clean versus flagged tasks, each "
    "subset fitted alone, in the output and the report.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS|local",
    help="With --by: run the groups on a Dask cluster (a scheduler address, or "
    "'local' for local worker processes); needs bayeval[dask].",
)
@click.option(
    "--allow-harness-change",
    is_flag=True,
    help="Compare systems evaluated "
    "under different harness digests (refused otherwise); outputs say what changed.",
)
@click.option(
    "--cost",
    "cost_column",
    metavar="COLUMN",
    help="Column of each attempt's cost "
    "(outcome-row tables): cost per attempt and per success, pass@1 per attempt, "
    "the paired effect against --cost-reference, timeout and error rates, the "
    "cost-success frontier with P(A dominates B) and, for each --k, the cost of a "
    "first success retrying up to k times; posterior beside bootstrap, in the "
    "output, the JSON and the report.",
)
@click.option(
    "--cost-reference",
    metavar="SYSTEM",
    help="Reference system of the cost "
    "table's paired effects [default: the first --compare baseline, else the "
    "system with the highest posterior pass@1].",
)
@click.option(
    "--cost-model",
    type=click.Choice(["bayesian_bootstrap", "lognormal"]),
    default="bayesian_bootstrap",
    show_default=True,
    help="The posterior's cost side in the cost table: the Bayesian bootstrap over "
    "tasks (no shape assumed) or a hurdle log-normal with task and cluster "
    "effects shared by the systems (paired; models/cost.md has the coverage of "
    "both).",
)
@click.option(
    "--latency",
    "latency_columns",
    metavar="COLUMN|START,END",
    help="Each attempt's duration (outcome-row tables): a column of seconds, or "
    "start and end timestamp columns (ISO 8601). Per system the p50 and p95 "
    "latency with intervals (bootstrap over tasks beside the Bayesian bootstrap) "
    "and the timeout and error rates, in the output, the JSON and the report.",
)
@click.option(
    "--latency-model",
    type=click.Choice(["lognormal", "bayesian_bootstrap"]),
    default="lognormal",
    show_default=True,
    help="Posterior of the latency "
    "quantiles: a log-normal with task effects per system (checked against the "
    "data), or the Bayesian bootstrap over tasks (no shape assumed).",
)
@click.option(
    "--runs",
    "runs",
    type=click.Choice(["observed", "new"]),
    help="Compare recipes across training runs: each --compare names two recipes "
    "of data read with --reader-option run=COLUMN (each system a recipe/run "
    "checkpoint). observed: the mean over each recipe's checkpoints (these "
    "checkpoints); new: a new training run of each recipe (the logit_normal run "
    "level, population estimand). Posterior beside a paired task bootstrap "
    "(runs resampled too for new), in the output and the JSON.",
)
@click.option(
    "--score",
    "score_column",
    metavar="COLUMN",
    help="Column of partial-credit scores in [0, 1], one per attempt (row), instead "
    "of 0/1 outcomes [detected: score, when no success column is named or present]: "
    "each system's mean score from the zero-one-inflated Beta model (zoib; scores "
    "that are all 0 or 1 get the binomial models) beside "
    "the task bootstrap, and with --compare the paired effect on the mean score "
    "beside the paired task bootstrap. Not with --success/--successes, --k or "
    "--compare-k other than 1, --metric pass^k, --cost, --runs, --by or --flagged.",
)
@_column_options("--trials")
@_model_options
@_output_options
def analyze(
    files,
    fmt,
    system,
    system_name,
    task,
    success,
    successes,
    trials_column,
    trial,
    cluster,
    stratum,
    status,
    status_map,
    reader_options,
    missing,
    model,
    sampler,
    draws,
    chains,
    tune,
    seed,
    n_boot,
    ci_prob,
    estimand,
    metric,
    k,
    pairs,
    compare_k,
    margin,
    prob,
    superior,
    flagged_path,
    by,
    scheduler,
    allow_harness_change,
    cost_column,
    cost_reference,
    cost_model,
    latency_columns,
    latency_model,
    runs,
    score_column,
    json_path,
    report_path,
):
    """Fit a model to evaluation results and crosscheck it with the bootstrap.

    FILE is a long table (.csv, .parquet, .jsonl, .json records) with one row per trial
    (system, task, success[, trial, cluster, stratum, status]) or per (system, task) with
    successes and trials; or a harness output bayeval reads (SWE-bench report, HumanEval or
    lm-eval samples, Inspect logs). Conventional column names are detected. A table of
    partial-credit scores in [0, 1] (--score COLUMN, or a detected score column) gives the
    mean score instead of pass@k.

    Prints each system's metric with its Bayesian interval beside its bootstrap twin, and
    each comparison's effect, interval, P(effect > 0) and decision. With several --k, each
    comparison is also drawn over k: pointwise intervals and a band over all k, where the
    curves cross and the tasks behind a reversal, beside the paired bootstrap's curve.

    \b
    Examples:
      bayeval analyze runs.csv --k 1,5 --report card.html
      bayeval analyze runs.csv --missing bounds --compare new old --margin 0.02
      bayeval analyze counts.csv --successes n_correct --trials n_samples --json out.json
      bayeval analyze runs.csv --cost cost_usd --k 1,3 --report card.html
      bayeval analyze counts.csv --k 1,2,5,10 --compare new old --estimand tasks
      bayeval analyze runs.csv --latency started_at,ended_at --json out.json
      bayeval analyze ckpts.csv --reader-option run=seed --compare rl sft --runs new
      bayeval analyze graded.csv --score score --compare new old --json out.json
    """
    opts = _collect_opts(locals())
    opts["cost"] = cost_column
    opts["latency"] = latency_columns
    opts["score"], opts["scores"] = score_column, True
    if score_column is not None:  # refused before the file is read; a detected column below
        _check_score_options(k, compare_k, metric, cost_column, runs, by, flagged_path, model)
    if latency_columns is not None and by:
        raise click.UsageError("--latency applies to one analysis; --by prints one row per group")
    _check_outputs(json_path, report_path)
    if cost_reference is not None and cost_column is None:
        raise click.UsageError("--cost-reference applies to the cost table: give --cost COLUMN")
    if cost_model != "bayesian_bootstrap" and cost_column is None:
        raise click.UsageError("--cost-model applies to the cost table: give --cost COLUMN")
    if cost_column is not None and by:
        raise click.UsageError("--cost applies to one analysis; --by prints one row per group")
    if scheduler and not by:
        raise click.UsageError("--scheduler runs the groups of --by COLUMN; give --by")
    if by:
        return _analyze_by(
            files,
            opts,
            list(by),
            scheduler,
            model,
            sampler,
            draws,
            chains,
            tune,
            seed,
            ci_prob,
            json_path,
            report_path,
            pairs,
        )
    if runs is not None and (by or not pairs):
        raise click.UsageError(
            "--runs compares recipes: give --compare RECIPE_A RECIPE_B (and no --by)"
        )
    notes = _Notes()
    with notes:
        data, lines = _load(files, opts)
    scores = data.has_scores
    if scores:
        _check_score_options(k, compare_k, metric, cost_column, runs, by, flagged_path, model, data)
        metric = "mean"
    recipe_pairs = ()
    if runs is not None:
        recipe_pairs, pairs = _check_recipe_pairs(data, pairs, runs, estimand, metric), ()
    pairs = _check_pairs(pairs, data.systems)
    checkpoints = [
        (s,)
        for s in data.systems
        if recipe_pairs
        and data.dataset["recipe"].sel(system=s).item()
        in {r for pair in recipe_pairs for r in pair}
    ]
    if not scores:
        _check_k_before_fit(data, pairs or checkpoints, [*k, compare_k or k[0]], metric)
    _check_harness(data, pairs or [tuple(s for (s,) in checkpoints)], allow_harness_change)
    if cost_reference is not None and cost_reference not in data.systems:
        raise click.BadParameter(
            f"no system {cost_reference!r}; systems: {', '.join(map(str, data.systems[:30]))}",
            param_hint="--cost-reference",
        )
    if cost_column is not None and data.missing == "bounds":
        raise click.UsageError(
            "--cost needs one success count per attempt; under --missing "
            "bounds the successes have two extremes: use fail or exclude"
        )
    res = _fit(data, model, sampler, draws, chains, seed, notes, tune, pairs=pairs or checkpoints)
    to_stdout = json_path == "-"
    _header(data, lines, res, err=to_stdout)
    _echo_notes(notes.items)
    report = _report_data(
        res,
        comparisons=pairs,
        k=k,
        metric=metric,
        estimand=estimand,
        margin=margin,
        prob=prob,
        superior=superior,
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        compare_k=compare_k,
        notes=notes.items,
        command=_command_line(),
        allow_harness_change=allow_harness_change,
        cost=cost_column,
        cost_reference=cost_reference,
        cost_model=cost_model,
        latency=latency_model if latency_columns is not None else False,
    )
    _echo_notes(report["notes"], len(notes.items))
    report["input"] = {"files": [str(f) for f in files], "lines": lines}
    if recipe_pairs:
        report["recipes"] = _recipes_section(
            res,
            data,
            recipe_pairs,
            runs,
            compare_k or k[0],
            report["estimand"]["name"],
            margin,
            ci_prob,
            n_boot,
            seed,
            allow_harness_change,
        )
    curve_pairs = pairs if len(k) > 1 and metric in ("pass@k", "pass^k") else ()
    if curve_pairs and data.missing != "bounds":
        report["curves"] = _curves_section(
            res, curve_pairs, k, metric, report["estimand"]["name"], ci_prob, n_boot, seed
        )
    if flagged_path:
        report["contamination"] = _contamination(
            res,
            data,
            flagged_path,
            metric,
            k[0],
            ci_prob,
            model,
            sampler,
            draws,
            chains,
            seed,
            tune,
            notes,
        )
    if not to_stdout:
        _echo_table(report, [report["estimand"]["name"]], metric, ci_prob)
        _echo_comparisons(report)
        if cost_column is not None:
            _echo_cost(report["cost"], ci_prob)
        if latency_columns is not None:
            _echo_latency(report["latency"], ci_prob)
        if recipe_pairs:
            _echo_recipes(report["recipes"], ci_prob)
        if "curves" in report:
            _echo_curves(report["curves"], ci_prob)
        if flagged_path:
            _echo_contamination(report["contamination"])
    if json_path:
        _write_json(report, json_path)
    if report_path:
        _write_report(res, report_path, report)


def _check_score_options(
    k, compare_k, metric, cost_column, runs, by, flagged_path, model, data=None
):
    """Refuse, before any fit, the options of ``analyze`` that do not apply to scores.

    Parameters
    ----------
    k, compare_k, metric, cost_column, runs, by, flagged_path, model
        The options as given.
    data : EvalData, optional
        The data read (partial-credit scores); its interior scores decide ``--model``.

    Raises
    ------
    click.UsageError
        Naming the option, what it needs and what to do instead.
    """
    what = "partial-credit scores give the mean score, which"
    if tuple(k) != (1,) or compare_k not in (None, 1):
        flag = "--k" if tuple(k) != (1,) else "--compare-k"
        raise click.UsageError(
            f"{flag}: {what} has no k (pass@k and pass^k are metrics of 0/1 "
            "outcomes); leave --k and --compare-k at 1, or threshold the "
            "scores into a 0/1 column and give it as --success"
        )
    if metric != "pass@k":
        raise click.UsageError(
            f"--metric {metric}: {what} is the one metric reported (the "
            "table and the comparisons); leave out --metric"
        )
    for flag, value, why in (
        ("--cost", cost_column, "the cost table prices successes (cost per success)"),
        ("--runs", runs, "the recipe comparisons are of pass@k"),
        ("--by", by, "the per-group analyses are of 0/1 outcomes"),
        ("--flagged", flagged_path, "the clean-versus-flagged split is of 0/1 outcomes"),
    ):
        if value:
            raise click.UsageError(
                f"{flag} does not apply to partial-credit scores: {why}; "
                "leave it out (in Python: be.fit(be.from_frame(df, "
                "score=COLUMN)) and the Results methods)"
            )
    if model != "auto" and (data is None or data.has_partial_credit):
        raise click.UsageError(
            f"--model {model} fits 0/1 outcomes; partial-credit scores are "
            "fitted by the zero-one-inflated Beta model (leave --model at "
            "auto)"
        )


def _check_recipe_pairs(data, pairs, runs, estimand, metric) -> list[tuple]:
    """``--compare`` pairs of recipes under ``--runs``, checked before any fit."""
    ds = data.dataset
    if "recipe" not in ds.coords:
        raise click.UsageError(
            "--runs compares recipes: read the data with --reader-option "
            "run=COLUMN (the training run or seed of each checkpoint)"
        )
    if metric != "pass@k":
        raise click.UsageError("--runs compares pass@k of recipes (give --metric pass@k)")
    if runs == "new" and estimand == "tasks":
        raise click.UsageError(
            "--runs new is about new training runs on new tasks: it takes "
            "the population estimand, not --estimand tasks"
        )
    recipes = list(dict.fromkeys(ds["recipe"].values.tolist()))
    for candidate, baseline in pairs:
        for role, label in (("candidate", candidate), ("baseline", baseline)):
            if label not in recipes:
                raise click.BadParameter(
                    f"{role} {label!r} is not a recipe of the data; "
                    f"recipes: {', '.join(map(str, recipes[:20]))}",
                    param_hint="--compare",
                )
        if candidate == baseline:
            raise click.BadParameter("candidate and baseline must differ", param_hint="--compare")
    return [tuple(p) for p in pairs]


def _recipes_section(
    res, data, pairs, runs, k, estimand, margin, ci_prob, n_boot, seed, allow_harness_change
) -> dict:
    """Each recipe comparison: the posterior (``Results.compare(..., runs=)``) beside the
    paired task bootstrap of :func:`bayeval.analyses.runs.bootstrap_recipe_effect`."""
    from bayeval.analyses.runs import bootstrap_recipe_effect

    rows = []
    for candidate, baseline in pairs:
        out = res.compare(
            candidate,
            baseline,
            k=k,
            estimand=estimand,
            margin=margin,
            ci_prob=ci_prob,
            runs=runs,
            allow_harness_change=allow_harness_change,
        )
        boot = bootstrap_recipe_effect(
            res.data, candidate, baseline, runs=runs, k=k, n_boot=n_boot, seed=seed, ci_prob=ci_prob
        )
        lower, upper = out["effect_interval"].values.tolist()
        rows.append(
            {
                "candidate": str(candidate),
                "baseline": str(baseline),
                "checkpoints": [str(s) for s in out.attrs["checkpoints"]],
                "runs_per_recipe": boot["runs"],
                "bayes_mean": _report._num(out["effect_mean"]),
                "bayes_lower": _report._num(lower),
                "bayes_upper": _report._num(upper),
                "prob_positive": _report._num(out["prob_positive"]),
                "prob_above_margin": _report._num(out["prob_above_margin"]),
                "bootstrap_estimate": boot["estimate"],
                "bootstrap_lower": boot["lower"],
                "bootstrap_upper": boot["upper"],
                "bootstrap_n_tasks": boot["n_tasks"],
            }
        )
    post = res.tree["posterior"]
    sigma_run = None
    if "sigma_run" in post:
        draws = post["sigma_run"].values.ravel()
        tail = (1 - ci_prob) / 2
        sigma_run = {
            "mean": float(draws.mean()),
            "lower": float(np.quantile(draws, tail)),
            "upper": float(np.quantile(draws, 1 - tail)),
        }
    return {
        "runs": runs,
        "k": int(k),
        "estimand": estimand,
        "margin": float(margin),
        "model": res.model,
        "sigma_run": sigma_run,
        "rows": rows,
        "bootstrap": (
            "paired task bootstrap"
            if runs == "observed"
            else "paired task bootstrap with each recipe's runs resampled"
        ),
        "n_boot": int(n_boot),
    }


def _curves_section(res, pairs, k, metric, estimand, ci_prob, n_boot, seed) -> dict:
    """Each compared pair's effect over the ``--k`` values (:meth:`Results.compare_curve`):
    pointwise intervals and a simultaneous band, the posterior of the k where the curves
    cross and the tasks behind a reversal, beside the paired bootstrap of the curve
    (``bootstrap.compare_curve``) over the estimand's twin unit (tasks where the twin is the
    trial bootstrap, which has no curve)."""
    from bayeval import bootstrap
    from bayeval.analyses.crosscheck import bootstrap_twin
    from bayeval.analyses.curves import reversal_tasks

    twin = bootstrap_twin(res, estimand)["unit"]
    unit = twin if twin in ("task", "cluster") else "task"
    num = _report._num
    k = sorted(k)  # --k takes any order; a curve runs from the smallest k
    rows = []
    for candidate, baseline in pairs:
        curve = res.compare_curve(
            candidate, baseline, k=list(k), metric=metric, estimand=estimand, ci_prob=ci_prob
        )
        boot = bootstrap.compare_curve(
            res.data,
            candidate,
            baseline,
            k=list(k),
            metric=metric,
            unit=unit,
            n_boot=n_boot,
            ci_prob=ci_prob,
            seed=seed,
        )
        points = []
        for i, kk in enumerate(curve["k"].values):
            interval, band = curve["effect_interval"].values[i], curve["effect_band"].values[i]
            b_interval, b_band = boot["effect_interval"].values[i], boot["effect_band"].values[i]
            points.append(
                {
                    "k": int(kk),
                    "bayes_mean": num(curve["effect_mean"].values[i]),
                    "bayes_lower": num(interval[0]),
                    "bayes_upper": num(interval[1]),
                    "band_lower": num(band[0]),
                    "band_upper": num(band[1]),
                    "prob_positive": num(curve["prob_positive"].values[i]),
                    "bootstrap_estimate": num(boot["effect"].values[i]),
                    "bootstrap_lower": num(b_interval[0]),
                    "bootstrap_upper": num(b_interval[1]),
                    "bootstrap_band_lower": num(b_band[0]),
                    "bootstrap_band_upper": num(b_band[1]),
                }
            )
        crossing = curve["crossing_interval"].values
        tasks = reversal_tasks(curve, top=5)
        rows.append(
            {
                "candidate": str(candidate),
                "baseline": str(baseline),
                "points": points,
                "prob_cross": num(curve["prob_cross"]),
                "crossing_lower": num(crossing[0]),
                "crossing_upper": num(crossing[1]),
                "reversal_tasks": [
                    {"task": str(t), "change": num(c)}
                    for t, c in zip(tasks["task"], tasks["change"], strict=True)
                ],
            }
        )
    return {
        "metric": metric,
        "estimand": estimand,
        "k": [int(v) for v in k],
        "model": res.model,
        "band": "simultaneous over k (sup-t)",
        "bootstrap": f"paired {unit} bootstrap"
        + ("" if twin == unit else f" (the {twin} bootstrap, this estimand's twin, has no curve)"),
        "n_boot": int(n_boot),
        "rows": rows,
    }


def _echo_curves(section: dict, ci_prob: float):
    """Each pair's effect over k: posterior (pointwise interval and simultaneous band) beside
    the paired bootstrap's, then where the curves cross and the tasks behind it."""
    name = _report._metric_name(section["metric"], "k")
    click.echo(
        f"\neffect over k ({name}, {section['estimand']} estimand): posterior mean "
        f"[{ci_prob:.0%} pointwise] {{band over all k}} beside the "
        f"{section['bootstrap']}"
    )
    for row in section["rows"]:
        click.echo(f"  {row['candidate']} - {row['baseline']}")
        for pt in row["points"]:
            click.echo(
                f"    k={pt['k']:<3} {pt['bayes_mean']:+.3f} "
                f"{_interval_text(pt['bayes_lower'], pt['bayes_upper'])} "
                f"{{{pt['band_lower']:.3f}, {pt['band_upper']:.3f}}}, "
                f"P(> 0) {pt['prob_positive']:.3f}; bootstrap "
                f"{pt['bootstrap_estimate']:+.3f} "
                f"{_interval_text(pt['bootstrap_lower'], pt['bootstrap_upper'])} "
                f"{{{pt['bootstrap_band_lower']:.3f}, "
                f"{pt['bootstrap_band_upper']:.3f}}}"
            )
        where = (
            ""
            if row["crossing_lower"] is None
            else f", crossing k {_interval_text(row['crossing_lower'], row['crossing_upper'])}"
        )
        tasks = ", ".join(f"{t['task']} ({t['change']:+.4f})" for t in row["reversal_tasks"])
        click.echo(
            f"    P(the curves cross within k = {section['k'][0]}..{section['k'][-1]}) "
            f"{row['prob_cross']:.3f}{where}; tasks that move the effect most from the "
            f"first k to the last: {tasks}"
        )


def _echo_recipes(section: dict, ci_prob: float):
    """The recipe comparisons: posterior beside the bootstrap twin."""
    about = (
        "these checkpoints (the mean over each recipe's runs)"
        if section["runs"] == "observed"
        else "a new training run of each recipe"
    )
    click.echo(
        f"\nrecipes ({about}; pass@{section['k']}, {section['estimand']}): posterior "
        f"mean [{ci_prob:.0%} interval] beside the {section['bootstrap']}"
    )
    for row in section["rows"]:
        runs = ", ".join(f"{r}: {m} run(s)" for r, m in row["runs_per_recipe"].items())
        click.echo(
            f"  {row['candidate']} - {row['baseline']} ({runs}): "
            f"{row['bayes_mean']:+.3f} "
            f"{_interval_text(row['bayes_lower'], row['bayes_upper'])}, "
            f"P(> 0) {row['prob_positive']:.3f}; bootstrap "
            f"{row['bootstrap_estimate']:+.3f} "
            f"{_interval_text(row['bootstrap_lower'], row['bootstrap_upper'])}"
        )
    if section["sigma_run"] is not None:
        s = section["sigma_run"]
        click.echo(
            f"  seed spread sigma_run (logit scale): {s['mean']:.3f} "
            f"{_interval_text(s['lower'], s['upper'])}"
        )


def _money(value) -> str:
    return _report._amount(value)


def _echo_cost(section: dict, ci_prob: float):
    """The cost table: one row per system, posterior beside bootstrap."""
    ref = section["reference"]
    rows = {}
    for row in section["rows"]:
        cells = {
            "pass@1 posterior": _value(
                {
                    "bayes_mean": row["pass_at_1_bayes_mean"],
                    "bayes_lower": row["pass_at_1_bayes_lower"],
                    "bayes_upper": row["pass_at_1_bayes_upper"],
                },
                "bayes",
            )
        }
        if row["system"] == ref:
            cells["effect vs reference"] = "reference"
        else:
            cells["effect vs reference"] = (
                f"{row['effect_bayes_mean']:+.3f} "
                f"{_interval_text(row['effect_bayes_lower'], row['effect_bayes_upper'])}"
            )
        for prefix, key, label in (
            ("bayes", "mean", "posterior"),
            ("bootstrap", "estimate", "bootstrap"),
        ):
            cells[f"cost/success {label}"] = (
                f"{_money(row[f'cost_per_success_{prefix}_{key}'])} "
                f"{_report._amounts(row[f'cost_per_success_{prefix}_lower'], row[f'cost_per_success_{prefix}_upper'])}"
            )
        cells["cost/attempt"] = _money(row["cost_per_attempt_bootstrap_estimate"])
        cells["timeout"] = _report._percent(row["timeout_rate"])
        cells["error"] = _report._percent(row["error_rate"])
        cells["frontier"] = "yes" if row["on_frontier_bayes"] else ""
        rows[row["system"]] = cells
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "system"
    with pd.option_context(
        "display.width",
        250,
        "display.max_columns",
        None,
        "display.max_colwidth",
        60,
        "display.max_rows",
        None,
    ):
        model = section["cost_model"].replace("_", " ")
        click.echo(
            f"\ncost ({section['column']}): posterior mean ({model} cost model) "
            f"[{ci_prob:.0%} interval] and bootstrap twin; pass@1 per attempt, effect "
            f"against {ref}"
        )
        click.echo(table.to_string())
    if section.get("cost_misfit"):
        click.echo(
            "log-normal cost check: the log-normal and the bootstrap disagree on the cost "
            "per attempt of " + ", ".join(section["cost_misfit"]) + " (the log costs' "
            "shape is not normal there); read the bootstrap rows for them"
        )
    click.echo(
        f"frontier (cost per attempt vs pass@1): posterior "
        f"{', '.join(section['frontier']['bayes'])}; bootstrap "
        f"{', '.join(section['frontier']['bootstrap'])}"
    )
    if len(section["k"]) > 1:
        click.echo(
            "cost of a first success retrying up to k times, posterior [interval] / bootstrap:"
        )
        for b in section["budget"]:
            boot = b["cost_per_success_at_k_bootstrap_estimate"]
            click.echo(
                f"  {b['system']} k={b['k']}: "
                f"{_money(b['cost_per_success_at_k_bayes_mean'])} "
                f"{_report._amounts(b['cost_per_success_at_k_bayes_lower'], b['cost_per_success_at_k_bayes_upper'])}"
                f" / {'n/a' if boot is None else _money(boot)}"
            )


def _latency_check(row: dict) -> str:
    """The log-normal's check of one system: ``ok``, ``misfit`` or ``n/a``."""
    check = row["lognormal_check"]
    if check is None:
        return "n/a"
    return "misfit" if check["misfit"] else "ok"


def _echo_latency(section: dict, ci_prob: float):
    """The latency table: one row per system, p50 and p95 posterior beside bootstrap."""
    rows = {}
    for row in section["rows"]:
        cells = {"durations": f"{row['n_latency']}/{row['n_attempts']}"}
        for x in row["quantiles"]:
            name = f"p{round(100 * x['q']):d}"
            for label, key, prefix in (
                ("posterior", "mean", "bayes"),
                ("bootstrap", "estimate", "bootstrap"),
            ):
                point = x[f"{prefix}_{key}"]
                cells[f"{name} {label}"] = (
                    "n/a"
                    if point is None
                    else (
                        f"{_money(point)} "
                        f"{_report._amounts(x[f'{prefix}_lower'], x[f'{prefix}_upper'])}"
                    )
                )
        cells["timeout"] = _report._percent(row["timeout_rate"]["bootstrap_estimate"])
        cells["error"] = _report._percent(row["error_rate"]["bootstrap_estimate"])
        if section["bayes_model"] == "lognormal":
            cells["log-normal check"] = _latency_check(row)
        rows[row["system"]] = cells
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "system"
    with pd.option_context(
        "display.width",
        250,
        "display.max_columns",
        None,
        "display.max_colwidth",
        60,
        "display.max_rows",
        None,
    ):
        model = (
            "log-normal with task effects"
            if section["bayes_model"] == "lognormal"
            else "Bayesian bootstrap over tasks"
        )
        click.echo(
            f"\nlatency (seconds per attempt): posterior mean ({model}) "
            f"[{ci_prob:.0%} interval] and bootstrap twin"
        )
        click.echo(table.to_string())
    if any(_latency_check(r).startswith("misfit") for r in section["rows"]):
        click.echo(
            "log-normal check: misfit where the log-normal and the bootstrap disagree "
            "(a mean outside the other's interval) or the task means are not normal on "
            "the log scale; read the bootstrap for those systems"
        )
    missing = [r["system"] for r in section["rows"] if r["n_latency"] < r["n_attempts"]]
    if missing:
        click.echo(
            f"attempts without a recorded duration are left out ({len(missing)} "
            f"system(s): {', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})"
        )


def _flagged_tasks(path: str, tasks) -> list:
    """Task ids from a file: one per line, or the JSON of ``bayeval overlap`` (items labelled
    confirmed or suspected). Ids are matched to the data's tasks as text."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        record = json.loads(text)
    except json.JSONDecodeError:
        record = None
    if isinstance(record, dict) and "items" in record:
        wanted = [str(r["item"]) for r in record["items"] if r.get("label") != "none"]
    else:
        wanted = [line.strip() for line in text.splitlines() if line.strip()]
    by_text = {str(t): t for t in tasks}
    unknown = [w for w in wanted if w not in by_text]
    if unknown:
        raise InputError(
            f"{path}: task id(s) {unknown[:5]}{' ...' if len(unknown) > 5 else ''}"
            f" are not tasks of the data"
        )
    if not wanted:
        raise InputError(f"{path} flags no task")
    return [by_text[w] for w in wanted]


def _contamination(
    res, data, path, metric, k, ci_prob, model, sampler, draws, chains, seed, tune, notes
) -> dict:
    """Clean versus flagged tasks (Results.compare_subsets), as plain data."""
    flagged = _flagged_tasks(path, data.tasks)
    click.echo(
        f"contamination: fitting the {len(flagged)} flagged and the "
        f"{len(data.tasks) - len(flagged)} clean task(s) apart ...",
        err=True,
    )
    options = {
        "draws": draws,
        "chains": chains,
        "seed": seed,
        "tune": tune,
        "progress": False,
        **({} if model == "auto" else {"model": model}),
        **({} if sampler == "auto" else {"sampler": sampler}),
    }
    with notes:
        out = res.compare_subsets(
            flagged, metric=metric, k=k, estimand="tasks", ci_prob=ci_prob, **options
        )
    rows = []
    for system in out["system"].values:
        part = out.sel(system=system)
        row = {"system": str(system)}
        for subset in out["subset"].values:
            row[f"{subset}_mean"] = float(part["score_mean"].sel(subset=subset))
            low, high = part["score_interval"].sel(subset=subset).values
            row[f"{subset}_lower"], row[f"{subset}_upper"] = float(low), float(high)
        row["difference_mean"] = float(part["difference_mean"])
        row["difference_lower"], row["difference_upper"] = (
            float(v) for v in part["difference_interval"].values
        )
        row["inflation_mean"] = float(part["inflation_mean"])
        rows.append(row)
    return {
        "file": str(path),
        "n_flagged": int(out.attrs["n_flagged"]),
        "n_clean": int(out.attrs["n_clean"]),
        "estimand": out.attrs["estimand"],
        "reading": out.attrs["reading"],
        "metric": _report._metric_name(metric, k),
        "subsets": [str(s) for s in out["subset"].values],
        "rows": rows,
    }


def _echo_contamination(section: dict):
    click.echo(
        f"\ncontamination: {section['n_flagged']} flagged vs {section['n_clean']} clean "
        f"task(s), {section['metric']}, {section['estimand']} estimand "
        f"({section['reading']})"
    )
    for row in section["rows"]:
        click.echo(
            f"  {row['system']}: clean {row['clean_mean']:.3f} "
            f"{_interval_text(row['clean_lower'], row['clean_upper'])}, flagged "
            f"{row['flagged_mean']:.3f} "
            f"{_interval_text(row['flagged_lower'], row['flagged_upper'])}, flagged - "
            f"clean {row['difference_mean']:+.3f} "
            f"{_interval_text(row['difference_lower'], row['difference_upper'])}, "
            f"all - clean {row['inflation_mean']:+.3f}"
        )


def _analyze_by(
    files,
    opts,
    by,
    scheduler,
    model,
    sampler,
    draws,
    chains,
    tune,
    seed,
    ci_prob,
    json_path,
    report_path,
    pairs,
):
    """``analyze --by``: one analysis per group of a table (bayeval.fit_many)."""
    from bayeval.many import FitManyError, fit_many

    if pairs or report_path:
        raise click.UsageError(
            "--by prints one row per group and system; --compare and "
            "--report apply to one analysis (select a group's rows first)"
        )
    fmt = opts["fmt"] if opts["fmt"] != "auto" else detect_format(files[0])
    if fmt != "table" or len(files) != 1:
        raise click.UsageError("--by splits one table file by its columns")
    frame = load_table(files[0], reader="bayeval")
    unknown = [c for c in by if c not in frame.columns]
    if unknown:
        raise click.BadParameter(
            f"no column {unknown} in {files[0]}; columns: {', '.join(map(str, frame.columns))}",
            param_hint="--by",
        )
    roles, lines = _table_roles(frame.drop(columns=by), opts, "--trials", source=files[0])
    if "score" in roles:
        _check_score_options((1,), None, "pass@k", None, None, by, None, "auto")
    for line in lines:
        click.echo(line, err=True)
    click.echo(
        f"fitting one analysis per {', '.join(by)} value"
        f"{' on ' + scheduler if scheduler else ''} ...",
        err=True,
    )
    notes = _Notes()
    try:
        with notes:
            many = fit_many(
                frame,
                by=by,
                client=scheduler,
                seed=seed,
                keep="summary",
                ci_prob=ci_prob,
                missing=opts["missing"],
                model=model,
                sampler=sampler,
                draws=draws,
                chains=chains,
                tune=tune,
                **roles,
            )
    except FitManyError as err:
        _echo_notes(notes.items)
        click.echo(f"Error: {err}", err=True)
        if err.partial is not None:
            click.echo(err.partial.to_frame().to_string(index=False))
        click.get_current_context().exit(EXIT_USAGE)
    _echo_notes(notes.items)
    table = many.to_frame()
    if json_path != "-":
        with pd.option_context(
            "display.width", 250, "display.max_columns", None, "display.max_rows", None
        ):
            click.echo(table.to_string(index=False))
    if json_path:
        _write_json(
            {
                "by": by,
                "rows": json.loads(table.to_json(orient="records")),
                "command": _command_line(),
            },
            json_path,
        )


# -- overlap -----------------------------------------------------------------------------------
def _corpus_documents(path: Path, text_field: str):
    """Stream a corpus: a .jsonl of records (``text_field``, optional ``id``) or plain text,
    one document per line; gzip is read when the name ends in .gz."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    jsonl = ".jsonl" in path.suffixes
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            if not jsonl:
                yield f"{path.name}:{line_no}", line.rstrip("\n")
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {line_no} is not JSON ({exc.msg})") from None
            if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
                raise InputError(
                    f"{path}: line {line_no} has no text field {text_field!r} "
                    "(--corpus-text-field names it)"
                )
            yield record.get("id", f"{path.name}:{line_no}"), record[text_field]


@main.command(context_settings={"max_content_width": 100})
@click.argument("items", type=click.Path(exists=True, dir_okay=False))
@click.argument("corpus", type=click.Path(exists=True, dir_okay=False))
@click.option("--id-column", default="id", show_default=True, help="Item id column of ITEMS.")
@click.option("--text-column", default="text", show_default=True, help="Item text column of ITEMS.")
@click.option(
    "--corpus-text-field",
    default="text",
    show_default=True,
    help="Text field of a .jsonl corpus (plain text: one document per line).",
)
@click.option(
    "--methods",
    default="exact,normalized,shingle,minhash",
    show_default=True,
    help="Comma-separated: exact, normalized, shingle, minhash (bayeval[contamination]).",
)
@click.option(
    "--json",
    "json_path",
    metavar="PATH",
    help="Write every item's evidence as JSON ('-': standard output).",
)
def overlap(items, corpus, id_column, text_column, corpus_text_field, methods, json_path):
    """Evidence that evaluation ITEMS overlap a training CORPUS (contamination).

    ITEMS is a table (.csv, .jsonl, .parquet) with an id and a text column; CORPUS is a
    .jsonl of records or a plain-text file with one document per line (streamed, never held
    whole). Each item is labelled confirmed, suspected or none with its scores and the
    thresholds used. No overlap found is not proof of absence.

    \b
    Examples:
      bayeval overlap items.csv corpus.jsonl
      bayeval overlap items.jsonl corpus.txt --methods exact,normalized,shingle --json out.json
    """
    from bayeval.contamination import overlap as find_overlap

    _check_outputs(json_path)
    frame = load_table(items, reader="bayeval")
    for role, column in (("--id-column", id_column), ("--text-column", text_column)):
        if column not in frame.columns:
            raise click.BadParameter(
                f"{items} has no column {column!r}; columns: {', '.join(map(str, frame.columns))}",
                param_hint=role,
            )
    texts = pd.Series(frame[text_column].to_numpy(), index=frame[id_column].to_numpy())
    chosen = tuple(m.strip() for m in methods.split(",") if m.strip())
    click.echo(
        f"checking {len(texts)} item(s) against {corpus} ({', '.join(chosen)}) ...", err=True
    )
    table = find_overlap(texts, _corpus_documents(Path(corpus), corpus_text_field), methods=chosen)
    counts = table["label"].value_counts().reindex(["confirmed", "suspected", "none"], fill_value=0)
    if json_path != "-":
        click.echo(", ".join(f"{label}: {int(n)}" for label, n in counts.items()))
        flagged = table[table["label"] != "none"]
        if len(flagged):
            with pd.option_context(
                "display.width", 250, "display.max_columns", None, "display.max_rows", 200
            ):
                click.echo(flagged.to_string())
        for note in (
            table.attrs.get("limits", ())
            if isinstance(table.attrs.get("limits"), (list, tuple))
            else [table.attrs.get("limits")]
        ):
            if note:
                click.echo(f"note: {note}", err=True)
    if json_path:
        _write_json(
            {
                "counts": {k: int(v) for k, v in counts.items()},
                "items": json.loads(table.reset_index().to_json(orient="records")),
                "settings": {
                    k: v
                    for k, v in table.attrs.items()
                    if isinstance(v, (str, int, float, list, dict))
                },
                "command": _command_line(),
            },
            json_path,
        )


# -- rank --------------------------------------------------------------------------------------
@main.command(context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="k of the metric."
)
@click.option(
    "--prob",
    type=PROBABILITY,
    default=0.95,
    show_default=True,
    help="Probability that separates two groups (see the group rule printed).",
)
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="P(in the top N) is printed for this N.",
)
@click.option(
    "--unit",
    type=click.Choice(["task", "cluster"]),
    default="task",
    show_default=True,
    help="What the bootstrap rank sets resample.",
)
@click.option(
    "--allow-harness-change",
    is_flag=True,
    help="Compare systems evaluated "
    "under different harness digests (refused otherwise); outputs say what changed.",
)
@_column_options("--trials")
@_model_options
@_output_options
def rank(
    files,
    fmt,
    system,
    system_name,
    task,
    success,
    successes,
    trials_column,
    trial,
    cluster,
    stratum,
    status,
    status_map,
    reader_options,
    missing,
    model,
    sampler,
    draws,
    chains,
    tune,
    seed,
    n_boot,
    ci_prob,
    estimand,
    metric,
    k,
    prob,
    top,
    unit,
    allow_harness_change,
    json_path,
    report_path,
):
    """Rank systems: rank intervals, groups that cannot be told apart, P(best), the winner.

    Fits every system (paired, with systems as draws from a population of systems, when they
    share tasks) and prints, best first: the posterior mean, the rank interval, P(best),
    P(in the top N), the group, and beside it the bootstrap's simultaneous rank set (paired
    resampling of tasks or clusters, max-|t| construction). Then the winner's curse: the
    system the observed score picks, its naive score, its posterior and the optimism.

    \b
    Examples:
      bayeval rank runs.csv
      bayeval rank runs.csv --k 1 --prob 0.9 --json ranks.json
    """
    from bayeval.report import rank_data

    opts = _collect_opts(locals())
    estimand = estimand or "population"
    _check_outputs(json_path, report_path)
    notes = _Notes()
    with notes:
        data, lines = _load(files, opts)
    if len(data.systems) < 2:
        raise click.UsageError(
            f"ranking needs two or more systems; the data have {len(data.systems)}"
        )
    _check_k_before_fit(data, [], [k], metric)
    from bayeval.harness import check_comparable

    harness = check_comparable(data, data.systems, allow_harness_change)
    res = _fit(data, model, sampler, draws, chains, seed, notes, tune)
    to_stdout = json_path == "-"
    _header(data, lines, res, err=to_stdout)
    click.echo(
        "ranking: posterior ranks, groups and the winner's optimism; bootstrap rank "
        f"sets ({n_boot} resamples) ...",
        err=True,
    )
    with notes:
        summary = rank_data(
            res,
            data,
            metric=metric,
            k=k,
            estimand=estimand,
            prob=prob,
            top=top,
            unit=unit,
            n_boot=n_boot,
            ci_prob=ci_prob,
            seed=seed,
        )
    _echo_notes(notes.items)
    summary["notes"] = notes.items + ([harness.note] if harness.note else [])
    summary["harness"] = {"status": harness.status, "note": harness.note or None}
    if harness.note:
        click.echo(f"note: {harness.note}", err=True)
    summary["command"] = _command_line()
    if not to_stdout:
        _echo_ranks(summary, ci_prob, top)
    if json_path:
        _write_json(summary, json_path)
    if report_path:
        report = _report_data(
            res,
            k=[k],
            metric=metric,
            estimand=estimand,
            n_boot=n_boot,
            seed=seed,
            ci_prob=ci_prob,
            notes=summary["notes"],
            command=_command_line(),
        )
        report["ranks"] = summary
        _write_report(res, report_path, report)


def _echo_ranks(summary: dict, ci_prob: float, top: int):
    settings = summary["settings"]
    name = _report._metric_name(settings["metric"], settings["k"])
    table = pd.DataFrame(
        [
            {
                "system": row["system"],
                name: f"{row['mean']:.3f}",
                "observed": f"{row['observed']:.3f}",
                "rank": f"{row['rank_mean']:.1f} [{row['rank_lower']}, {row['rank_upper']}]",
                "P(best)": f"{row['prob_best']:.3f}",
                f"P(top {top})": f"{row['prob_top']:.3f}",
                "group": row["group"],
                f"bootstrap rank set ({settings['unit']})": f"[{row['bootstrap_rank_lower']}, {row['bootstrap_rank_upper']}]",
            }
            for row in summary["systems"]
        ]
    ).set_index("system")
    paired = "paired" if settings["paired"].startswith("yes") else "unpaired"
    click.echo(
        f"\n{name}, {settings['estimand']} estimand, {settings['model']} ({paired}): "
        f"posterior mean, rank mean [{ci_prob:.0%} interval]; groups at prob "
        f"{settings['prob']:g}"
    )
    with pd.option_context(
        "display.width",
        250,
        "display.max_columns",
        None,
        "display.max_colwidth",
        60,
        "display.max_rows",
        None,
    ):
        click.echo(table.to_string())
    click.echo(f"groups: {summary['group_rule']}")
    win = summary["winner"]
    tied = f" (tied with {', '.join(map(str, win['tied_with']))})" if win["tied_with"] else ""
    click.echo(
        f"\nwinner by observed score: {win['pick']}{tied}: naive {win['naive_score']:.3f},"
        f" posterior {win['value_mean']:.3f} "
        f"{_interval_text(win['value_lower'], win['value_upper'])}, optimism "
        f"{win['optimism']:+.3f}, P(it is the best) = {win['prob_pick_is_best']:.3f}"
    )
    click.echo(
        f"  picking by observed score on replicate benchmarks overstates the pick by "
        f"{win['expected_optimism']:+.3f} on average and picks the truly best in "
        f"{win['replicate_prob_best_picked']:.0%} of them"
    )


# -- gate --------------------------------------------------------------------------------------
@main.command(epilog=GATE_EPILOG, context_settings={"max_content_width": 100})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--compare",
    "pair",
    type=(str, str),
    required=True,
    metavar="CANDIDATE BASELINE",
    help="The candidate and the baseline it must not fall behind.",
)
@click.option(
    "--margin",
    type=click.FloatRange(min=0.0),
    required=True,
    help="Non-inferiority margin (absolute): how far behind the candidate may be.",
)
@click.option(
    "--prob",
    type=PROBABILITY,
    default=0.95,
    show_default=True,
    help="Posterior probability a verdict needs.",
)
@click.option("--superior", is_flag=True, help="Require superiority by the margin instead.")
@click.option(
    "--k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="k of the metric."
)
@click.option(
    "--allow-harness-change",
    is_flag=True,
    help="Compare systems evaluated "
    "under different harness digests (refused otherwise); outputs say what changed.",
)
@click.option(
    "--canary",
    "canary_pair",
    type=(str, str),
    metavar="OLD NEW",
    help="A fixed reference policy's runs under the old and the new harness (two "
    "system labels of the data): the gate also requires its score not to have moved "
    "by more than --canary-margin.",
)
@click.option(
    "--canary-margin",
    type=click.FloatRange(min=0.0, min_open=True),
    help="Largest canary change (absolute) that counts as not moved.",
)
@_column_options("--trials")
@_model_options
@_output_options
def gate(
    files,
    fmt,
    system,
    system_name,
    task,
    success,
    successes,
    trials_column,
    trial,
    cluster,
    stratum,
    status,
    status_map,
    reader_options,
    missing,
    model,
    sampler,
    draws,
    chains,
    tune,
    seed,
    n_boot,
    ci_prob,
    estimand,
    metric,
    pair,
    margin,
    prob,
    superior,
    k,
    allow_harness_change,
    canary_pair,
    canary_margin,
    json_path,
    report_path,
):
    """Decide whether CANDIDATE is non-inferior to BASELINE (for CI pipelines).

    The decision uses the posterior of the effect metric(candidate) - metric(baseline): the
    candidate passes when P(effect > -margin) >= prob, fails when P(effect < -margin) >= prob,
    and otherwise the data cannot decide. Under --missing bounds a verdict must hold at both
    bounds. The paired bootstrap is printed for reference; it does not change the exit code.

    \b
    Examples:
      bayeval gate runs.csv --compare new old --margin 0.02
      bayeval gate runs.csv --compare new old --margin 0.01 --superior --prob 0.9
    """
    opts = _collect_opts(locals())
    _check_outputs(json_path, report_path)
    notes = _Notes()
    with notes:
        data, _ = _load(files, opts)
    (pair,) = _check_pairs([pair], data.systems)
    _check_k_before_fit(data, [pair], [k], metric)
    _check_harness(data, [pair], allow_harness_change)
    if (canary_pair is None) != (canary_margin is None):
        raise click.UsageError("--canary OLD NEW and --canary-margin go together")
    if canary_pair is not None:
        _check_pairs([canary_pair], data.systems)
    res = _fit(data, model, sampler, draws, chains, seed, notes, tune, pairs=[pair])
    report = _report_data(
        res,
        comparisons=[pair],
        k=k,
        metric=metric,
        estimand=estimand,
        margin=margin,
        prob=prob,
        superior=superior,
        n_boot=n_boot,
        seed=seed,
        ci_prob=ci_prob,
        notes=notes.items,
        command=_command_line(),
        allow_harness_change=allow_harness_change,
    )
    _echo_notes(report["notes"])
    entry = report["comparisons"][0]
    decision = entry["bayes"]["decision"]
    code = (
        EXIT_PASS
        if decision["passed"]
        else EXIT_UNDECIDED
        if decision["decision"] == "inconclusive"
        else EXIT_WORSE
    )
    name = _report._metric_name(metric, k)
    threshold = margin if superior else -margin
    click.echo(
        f"gate: {pair[0]} (candidate) vs {pair[1]} (baseline), {name}, "
        f"{entry['estimand']} estimand, {entry['test']} margin {margin:g}, prob {prob:g}"
    )
    for row in entry["bayes"]["rows"]:
        bound = f" [{row['missing_bound']}]" if row["missing_bound"] else ""
        p_pass = row["prob_above_margin"] if superior else row["prob_noninferior"]
        click.echo(
            f"  posterior effect{bound} {row['effect']:+.4f}, {ci_prob:.0%} interval "
            f"{_interval_text(row['lower'], row['upper'])}, P(effect > {threshold:g}) = "
            f"{p_pass:.4f}"
        )
    if not entry["bayes"]["paired"].startswith("yes"):
        click.echo(f"  ({entry['bayes']['paired']}; --model logit_normal pairs the systems)")
    for boot in entry["bootstrap"]:
        row = boot["rows"][0] if len(boot["rows"]) == 1 else None
        summary = (
            f"{row['effect']:+.4f} {_interval_text(row['lower'], row['upper'])}"
            if row
            else "see --json"
        )
        unit = boot["unit"]
        if unit == "cluster":  # the two weightings answer different questions: say which
            unit += (
                ", clusters weighed equally"
                if boot["weighting"] == "cluster"
                else ", clusters keep their sizes"
            )
        click.echo(
            f"  for reference, paired bootstrap ({unit}): {summary}, "
            f"decision {boot['decision']['decision']}"
        )
    reason = decision["decision"]
    if canary_pair is not None:
        canary = _gate_canary(
            data,
            canary_pair,
            canary_margin,
            metric,
            k,
            ci_prob,
            model,
            sampler,
            draws,
            chains,
            seed,
            tune,
            notes,
        )
        report["canary"] = canary
        if canary["verdict"] == "moved":
            code, reason = EXIT_WORSE, f"the canary moved ({reason} otherwise)"
        elif canary["verdict"] == "inconclusive" and code == EXIT_PASS:
            code, reason = EXIT_UNDECIDED, f"{reason}, but the canary's change is inconclusive"
    verdict = {EXIT_PASS: "PASS", EXIT_WORSE: "FAIL", EXIT_UNDECIDED: "UNDECIDED"}[code]
    click.echo(
        f"{verdict}: {reason} (P(pass) = {decision['prob_pass']:.4f}, "
        f"P(fail) = {decision['prob_fail']:.4f}, needs {prob:g}); exit {code}"
    )
    report["gate"] = {"decision": decision["decision"], "exit_code": code, "verdict": verdict}
    if json_path:
        _write_json(report, json_path)
    if report_path:
        _write_report(res, report_path, report)
    if code:
        click.get_current_context().exit(code)


def _gate_canary(
    data, canary_pair, margin, metric, k, ci_prob, model, sampler, draws, chains, seed, tune, notes
) -> dict:
    """The canary's change between its two harness runs (bayeval.harness.canary), printed."""
    from bayeval.harness import canary

    old, new = canary_pair
    click.echo(f"canary: fitting {old} -> {new} ...", err=True)
    options = {
        "draws": draws,
        "chains": chains,
        "seed": seed,
        "tune": tune,
        "progress": False,
        **({} if model == "auto" else {"model": model}),
        **({} if sampler == "auto" else {"sampler": sampler}),
    }
    with notes:
        out = canary(
            data.sel(system=[old, new]),
            canary=f"{old} -> {new}",
            baseline=old,
            candidate=new,
            margin=margin,
            metric=metric,
            k=k,
            ci_prob=ci_prob,
            **options,
        )
    lower, upper = (float(v) for v in out["effect_interval"].values)
    mean = float(out["effect_mean"])
    click.echo(
        f"  canary {old} -> {new}: change {mean:+.4f}, {ci_prob:.0%} interval "
        f"{_interval_text(lower, upper)}, margin {margin:g}: {out.attrs['verdict']}"
    )
    return {
        "old": old,
        "new": new,
        "margin": margin,
        "change": mean,
        "lower": lower,
        "upper": upper,
        "verdict": out.attrs["verdict"],
        "rule": out.attrs.get("verdict_rule"),
        "prob_within_margin": float(out["prob_within_margin"]),
    }


# -- power -------------------------------------------------------------------------------------
@main.command(context_settings={"max_content_width": 100})
@click.option(
    "--effect",
    type=EFFECT_LIST,
    required=True,
    help="Smallest effects worth detecting (absolute), comma-separated.",
)
@click.option(
    "--sd",
    type=click.FloatRange(min=0.0, min_open=True),
    help="Sd of a task's paired difference (candidate - baseline). Without --icc "
    "it is taken as measured at the trials you run; with --icc it is the sd "
    "at one trial per task.",
)
@click.option(
    "--icc",
    type=click.FloatRange(0.0, 1.0),
    help="Intra-task correlation of the paired difference: the between-task share "
    "of a one-trial difference's variance. Scales the sd to each --trials: "
    "sd * sqrt(icc + (1 - icc) / trials).",
)
@click.option(
    "--trials",
    "trials_grid",
    type=TRIALS_LIST,
    help="Trials per task to plan for, comma-separated [default with an icc: "
    "1,2,4,8,16 and the pilot's].",
)
@click.option(
    "--pilot",
    "pilot",
    type=click.Path(exists=True),
    multiple=True,
    help="Pilot results (read like `bayeval analyze FILE`) to estimate the sd and "
    "the icc from; needs --compare.",
)
@click.option(
    "--compare",
    "pair",
    type=(str, str),
    metavar="CANDIDATE BASELINE",
    help="The pilot's candidate and baseline.",
)
@click.option(
    "--alpha", type=PROBABILITY, default=0.05, show_default=True, help="Type I error rate."
)
@click.option(
    "--power", "power_level", type=PROBABILITY, default=0.8, show_default=True, help="Power."
)
@click.option(
    "--alternative",
    type=click.Choice(["two-sided", "larger"]),
    default="two-sided",
    show_default=True,
    help="Two-sided test, or one-sided (candidate larger).",
)
@_column_options("--trials-column")
@click.option("--json", "json_path", metavar="PATH", help="Write the table as JSON ('-': stdout).")
def power(
    effect,
    sd,
    icc,
    trials_grid,
    pilot,
    pair,
    fmt,
    system,
    system_name,
    task,
    success,
    successes,
    trials_column,
    trial,
    cluster,
    stratum,
    status,
    status_map,
    reader_options,
    missing,
    alpha,
    power_level,
    alternative,
    json_path,
):
    """Tasks (and trials per task) needed to detect an effect in a paired comparison.

    Uses a paired t-test on per-task differences (bayeval.required_units). Give the spread
    directly (--sd, optionally --icc and --trials), or a pilot run (--pilot FILE --compare
    CANDIDATE BASELINE): the sd of its paired per-task pass@1 differences and their
    intra-task correlation are estimated from it. Tasks are taken as independent: with
    clustered tasks, plan for more.

    \b
    Examples:
      bayeval power --effect 0.02,0.05 --sd 0.25
      bayeval power --effect 0.03 --sd 0.45 --icc 0.6 --trials 1,3,10
      bayeval power --effect 0.02 --pilot pilot.csv --compare new old
    """
    _check_outputs(json_path)
    say = click.echo if json_path != "-" else (lambda text: click.echo(text, err=True))
    payload = {
        "effects": effect,
        "alpha": alpha,
        "power": power_level,
        "alternative": alternative,
        "test": "paired t-test on per-task differences",
    }
    if pilot:
        if pair is None:
            raise click.UsageError("--pilot needs --compare CANDIDATE BASELINE")
        if sd is not None:
            raise click.UsageError("give either --sd or --pilot, not both")
        opts = _collect_opts(locals())
        notes = _Notes()
        with notes:
            data, lines = _load(pilot, opts, trials_flag="--trials-column")
        (pair,) = _check_pairs([pair], data.systems)
        with notes:
            spread = _report.paired_spread(data, *pair)
            deff = be.design_effect(data.sel(system=list(pair)))
        for line in lines:
            say(line)
        _echo_notes(notes.items)
        base_trials = spread["median_trials"]
        sd_at = spread["sd"]
        if not sd_at:
            raise InputError(
                f"the pilot's paired per-task differences of {pair[0]} and "
                f"{pair[1]} have no spread (sd = {sd_at}, on {spread['n_tasks']} "
                "shared task(s)); give --sd instead"
            )
        est_icc = spread["icc"]
        say(
            f"pilot: {spread['n_tasks']} shared task(s), median {base_trials:g} "
            f"trial(s) per task; sd of the paired per-task pass@1 differences "
            f"{sd_at:.4f}"
            + (f" ({spread['bound']} bound: the larger)" if spread.get("bound") else "")
        )
        icc_values = deff["icc"].values.ravel()
        say(
            "  intra-task correlation of each system (bayeval.design_effect): "
            + ", ".join(f"{s} {v:.3f}" for s, v in zip(pair, icc_values[:2]))
        )
        if icc is None:
            icc = est_icc
            if icc is not None:
                say(
                    f"  intra-task correlation of the paired difference: {icc:.3f} "
                    "(between-task share of a one-trial difference's variance)"
                )
            else:
                say(
                    "  the pilot has one trial per task: trial noise and task spread "
                    "cannot be separated, so the sd holds at its trials only (give "
                    "--icc to plan other trial counts)"
                )
        sd_one = None if icc is None else sd_at / np.sqrt(icc + (1 - icc) / base_trials)
        payload["pilot"] = {
            "files": list(pilot),
            "candidate": pair[0],
            "baseline": pair[1],
            **spread,
            "icc_used": icc,
            "system_icc": dict(zip(pair, map(_report._num, icc_values[:2]))),
        }
        pilot_trials = round(base_trials)
        default_grid = (
            sorted({*DEFAULT_TRIALS_GRID, pilot_trials}) if icc is not None else [pilot_trials]
        )
    else:
        if sd is None:
            raise click.UsageError(
                "give --sd (the spread of per-task differences) or "
                "--pilot FILE --compare CANDIDATE BASELINE"
            )
        if pair is not None:
            raise click.UsageError("--compare applies with --pilot")
        if trials_grid is not None and icc is None:
            raise click.UsageError(
                "--trials needs --icc to scale the sd to each number of "
                "trials (without it, --sd is taken at the trials you run)"
            )
        sd_one = sd if icc is not None else None
        sd_at, pilot_trials = sd, None
        default_grid = list(DEFAULT_TRIALS_GRID) if icc is not None else [None]
    grid = trials_grid if trials_grid is not None else default_grid
    if trials_grid is not None and sd_one is None and list(trials_grid) != [pilot_trials]:
        raise click.UsageError(
            "the sd cannot be scaled to other trial counts without an "
            "intra-task correlation; give --icc"
        )
    rows = []
    for m in grid:
        task_sd = (
            sd_at if m is None or sd_one is None else float(sd_one * np.sqrt(icc + (1 - icc) / m))
        )
        for e in effect:
            n_tasks = be.required_units(
                task_sd, e, alpha=alpha, power=power_level, paired=True, alternative=alternative
            )
            rows.append(
                {
                    "effect": e,
                    "trials_per_task": m,
                    "sd": task_sd,
                    "tasks_needed": n_tasks,
                    "episodes_needed": None if m is None else int(2 * n_tasks * m),
                }
            )
    payload.update({"sd_input": sd, "icc": icc, "sd_one_trial": sd_one, "rows": rows})
    table = pd.DataFrame(rows)
    if grid == [None]:
        table = table.drop(columns=["trials_per_task", "episodes_needed"])
    table = table.rename(
        columns={
            "trials_per_task": "trials/task",
            "sd": "sd of task diff",
            "tasks_needed": "tasks needed",
            "episodes_needed": "episodes (2 systems)",
        }
    )
    if json_path != "-":
        click.echo(f"\npaired t-test, alpha {alpha:g} ({alternative}), power {power_level:g}:")
        click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if json_path:
        _write_json(payload, json_path)


# -- demo --------------------------------------------------------------------------------------
@main.command(context_settings={"max_content_width": 100})
@click.option(
    "--report",
    "report_path",
    default="bayeval-demo-report.html",
    show_default=True,
    type=click.Path(dir_okay=False, writable=True),
    help="Where to write the report card (.html or .md).",
)
@click.option("--no-report", is_flag=True, help="Print the tables only.")
@click.option("--json", "json_path", metavar="PATH", help="Also write every number as JSON.")
@click.option(
    "--n-boot",
    default=10_000,
    show_default=True,
    type=click.IntRange(min=2),
    help="Bootstrap replicates.",
)
@click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Random seed of fit and bootstrap.",
)
def demo(report_path, no_report, json_path, n_boot: int, seed: int):
    """Analyse the bundled SWE-bench Verified results (25 systems x 500 tasks, 12 repositories).

    Fits the hierarchical model to every system (exact grid engine), prints each system's
    pass@1 for both estimands next to its bootstrap twin, compares the two leading systems
    with the paired logit_normal model (repository and task effects shared) next to the
    paired bootstraps and writes a report card.
    """
    _check_outputs(json_path, None if no_report else report_path)
    notes = _Notes()
    data = be.datasets.load("swebench_verified")
    res = _fit(data, "hierarchical", "auto", 1000, 4, seed, notes)
    _header(
        data, [f"bundled dataset swebench_verified ({be.datasets.path('swebench_verified')})"], res
    )
    with notes:
        population = res.pass_at_k(k=1, estimand="population").mean(["chain", "draw"])
    order = population.to_series().sort_values(ascending=False).index.tolist()
    best, second = order[:2]
    paired = _fit(data, "logit_normal", "auto", 1000, 4, seed, notes, pairs=[(best, second)])
    report = _report_data(
        res,
        comparisons=[(best, second)],
        k=1,
        n_boot=n_boot,
        seed=seed,
        notes=notes.items,
        command=_command_line(),
        title="bayeval demo: SWE-bench Verified (mini-SWE-agent)",
        compare_results=paired,
    )
    _echo_notes(report["notes"])
    _echo_table(report, ["population", "tasks"], "pass@k", 0.95)
    click.echo(
        "(population: a new task like these, task bootstrap; tasks: these 500 tasks, "
        "trial bootstrap, which has no width with one trial per task)"
    )
    _echo_comparisons(report)
    if json_path:
        _write_json(report, json_path)
    if not no_report:
        _write_report(res, report_path, report, compare_results=paired)


if __name__ == "__main__":  # pragma: no cover - `python -m bayeval.cli`
    main(prog_name="bayeval")
