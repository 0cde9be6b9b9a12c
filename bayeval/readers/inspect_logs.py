"""Inspect AI evaluation logs (``.eval`` or ``.json``), read through ``inspect_ai`` itself.

``inspect_ai`` is an optional dependency (``pip install 'bayeval[inspect]'``), imported only
when a log is read. Logs are read through inspect_ai's own dataframe API
(``inspect_ai.analysis.samples_df`` and ``evals_df``: headers and sample summaries, no
transcripts) where the installed version has it, else each log is parsed with
``inspect_ai.log.read_eval_log``; both give the same counts. Each log holds one task run by
one model: the model is the system, each sample id a task, each epoch a trial; when the logs
hold several tasks the task id becomes ``<task>/<sample id>`` and the task name its cluster. A
sample epoch found in two logs (a retried run next to its original) is refused rather than
counted twice. On the command line a log directory is one command:
``bayeval analyze logs/ --missing bounds`` (``--reader-option scorer=NAME`` picks a scorer).

Judge and label
---------------
A log can carry several scorers per sample: an automatic judge (``model_graded_qa``) beside a
trusted label (a reviewer's score added by hand, a verifier's). ``judge=`` names the judge
scorer(s) and ``scorer=`` the label's, and the data hold both, as
:func:`bayeval.from_frame` does with ``judge=`` and ``success=``: a sample epoch without the
label's scorer is unlabelled (not a missing outcome), and how the labelled epochs were chosen
must be declared with ``label_design=``. On the command line:
``bayeval analyze logs/ --judge model_graded_qa --success human --label-design random``.

Scores and statuses
-------------------
A score value ``"C"``/``"CORRECT"``, ``True`` or ``1`` is a success; ``"I"``/``"INCORRECT"``,
``False`` or ``0`` a failure; ``"N"`` (Inspect's no-answer) a recorded failure with raw status
``noanswer`` (map it, e.g. ``status_map={"noanswer": "invalid"}``). Partial credit (``"P"``,
0.5) and other values are not pass/fail and raise. A sample that ended with an error is status
``error`` (no outcome); one with no score is ``no_verdict``, but a log none of whose samples
has a score (``inspect eval --no-score``) is refused as unscored; a sample listed in the
log's dataset with an epoch missing from the log (an interrupted run) is ``not_run``. The
epochs are the log's configured count, or else those its samples have (never assumed). A log
whose run did not finish (``status: cancelled`` or ``error``) is read with a warning and a note in
:func:`bayeval.readers.mapping_report`. A log saved without per-sample records is refused. Ids
are read as text when a log mixes integer and string ids (``0`` and ``'0'`` are one sample). A
sample that hit a limit (time, tokens, messages) is still scored, and keeps the raw status
``limit_<type>`` (map ``{"limit_time": "timeout"}`` to treat it as a timeout).
"""

from __future__ import annotations

import inspect as _pyinspect
import os
import warnings
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bayeval._io import check_text_head
from bayeval._validate import BayevalWarning
from bayeval.data import EvalData
from bayeval.readers._common import (
    COLUMNS,
    binary,
    build,
    check_path,
    merge_status_map,
    read_json,
    show_values,
)
from bayeval.readers._inspect_frames import frames_available, read_logs

__all__ = ["INSTALL_HINT", "is_log", "read_inspect"]

_READER = "read_inspect"
INSTALL_HINT = "pip install 'bayeval[inspect]'"
_VALUES = {"C": 1.0, "CORRECT": 1.0, "I": 0.0, "INCORRECT": 0.0}
_SKIP_FIELDS = {"messages", "events", "store", "attachments"}
_SUFFIXES = (".eval", ".json")


def read_inspect(
    path_or_dir,
    system=None,
    *,
    scorer=None,
    judge=None,
    label_design=None,
    label_strata=None,
    missing=None,
    status_map=None,
    planned_trials=None,
) -> EvalData:
    """Read Inspect AI logs into counts (epochs are trials).

    Parameters
    ----------
    path_or_dir : path or list of paths
        ``.eval``/``.json`` log files, or folders searched (recursively) for logs: every
        ``.eval`` file, and every ``.json`` file that holds a log whatever its name (JSON files
        that are not logs are left out, and named in :func:`bayeval.readers.mapping_report`).
    system : str, optional
        System name for every log. Default: each log's model (``openai/gpt-4o``).
    scorer : str or mapping, optional
        The scorer whose value to read, or ``{task name: scorer}``. Default: the only scorer of
        each log (a log with several asks to choose). With ``judge=``, the scorer of the
        trusted labels (required then): a sample epoch that lacks it is unlabelled.
    judge : str or list of str, optional
        The scorer(s) whose values are an automatic judge's 0/1 verdicts (``"model_graded_qa"``),
        one per sample epoch, as ``judge=`` of :func:`bayeval.from_frame` (named by the
        scorers). Every scored sample epoch needs every judge's value.
    label_design : {"random", "stratified"}, optional
        How the labelled sample epochs were chosen; required with ``judge=`` (see
        :func:`bayeval.from_frame`).
    label_strata : str, optional
        With ``label_design="stratified"``: the judge scorer whose verdicts were the strata
        (the labelled share was set per verdict).
    missing : {"fail", "exclude", "bounds"}, optional
        Missing-outcome policy, needed when a sample errored, was not scored or not run.
    status_map : mapping, optional
        Raw status -> bayeval status (``noanswer``, ``limit_<type>``, ``error``, ...).
    planned_trials : int or mapping, optional
        As in :func:`bayeval.from_frame`.

    Returns
    -------
    EvalData

    Raises
    ------
    ImportError
        When ``inspect_ai`` is not installed (with the install command).
    ValueError
        Naming the log: no logs found, an ambiguous or unknown scorer (listing the log's
        scorers), a score that is not pass/fail, a scored sample without a judge's value, or
        the same sample and epoch in two logs (e.g. a retried run beside its original).
    TypeError
        ``judge=`` without ``scorer=`` or ``label_design=``, or those without ``judge=``.

    Examples
    --------
    >>> import tempfile, pytest, bayeval.readers as br
    >>> ia = pytest.importorskip("inspect_ai")
    >>> from inspect_ai.dataset import Sample
    >>> from inspect_ai.model import ModelOutput, ModelUsage, get_model
    >>> from inspect_ai.scorer import includes
    >>> def reply(messages, tools, tool_choice, config):
    ...     out = ModelOutput.from_content(model="mockllm/model", content="yes")
    ...     out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    ...     return out
    >>> task = ia.Task(dataset=[Sample(input="Say yes", target="yes", id="a"),
    ...                         Sample(input="Say no", target="no", id="b")],
    ...                scorer=includes(), epochs=2, name="yes_no")
    >>> log_dir = tempfile.mkdtemp()
    >>> _ = ia.eval(task, model=get_model("mockllm/model", custom_outputs=reply),
    ...             log_dir=log_dir, display="none")
    >>> data = br.read_inspect(log_dir)
    >>> data.systems, list(data.tasks), data.dataset["successes"].values.tolist()
    (['mockllm/model'], ['a', 'b'], [[2, 0]])

    A judge scorer beside a reviewer's labels on some sample epochs (``human``, added as
    Inspect records a score edited by hand):

    >>> from inspect_ai.log import edit_score, write_eval_log
    >>> from inspect_ai.scorer import ScoreEdit, exact
    >>> task = ia.Task(dataset=task.dataset, scorer=[includes(), exact()], epochs=2)
    >>> judge_dir = tempfile.mkdtemp()
    >>> (log,) = ia.eval(task, model=get_model("mockllm/model", custom_outputs=reply),
    ...                  log_dir=judge_dir, display="none")
    >>> for sample_id, epoch, value in [("a", 1, "C"), ("b", 2, "I")]:
    ...     edit_score(log, sample_id, "human", ScoreEdit(value=value), epoch=epoch)
    >>> _ = write_eval_log(log, log.location)
    >>> data = br.read_inspect(judge_dir, judge="includes", scorer="human",
    ...                        label_design="random")
    >>> cells = data.dataset.sel(judge="includes", label_stratum="all")
    >>> int(cells["judge_n11"].sum()), int(cells["judge_n00"].sum()), int(cells["judge_u1"].sum())
    (1, 1, 1)
    """
    log_module = _inspect_log()
    files, notes = _log_files(path_or_dir)
    if system is not None and not isinstance(system, str):
        raise TypeError(f"{_READER}: system= must be a str; got {type(system).__name__}")
    judges = _judge_scorers(judge, scorer, label_design, label_strata)
    logs = _read_logs(log_module, files)
    for file, log in logs:
        _check_samples(log, file)
        _check_scored(log, file)
        status = getattr(log, "status", "success")
        if status != "success":
            message = (
                f"'{file}' has status {status!r} (the run did not finish): samples it "
                "lacks are counted as not_run"
            )
            notes.append(message)
            warnings.warn(f"{_READER}: {message}", BayevalWarning, stacklevel=2)
    as_text = _ids_as_text(logs)
    tasks = list(dict.fromkeys(log.eval.task for _, log in logs))
    several = len(tasks) > 1
    rows, origin = [], defaultdict(list)
    labelled: set = set()  # label scorers that some log holds
    for file, log in logs:
        model = system if system is not None else log.eval.model
        task_name = log.eval.task
        name = _scorer(scorer, log, file)
        if judges:
            _check_named(log, file, judges)
            labelled |= {name} & set(_scorers_of(log))
        seen = set()
        for sample in log.samples or []:
            sample_id = str(sample.id) if as_text else sample.id
            key = (model, task_name, sample_id, sample.epoch)
            origin[key].append(file)
            seen.add((sample_id, sample.epoch))
            if judges:
                success, raw, verdicts = _judged(sample, name, judges, file)
            else:
                (success, raw), verdicts = _outcome(sample, name, file), {}
            rows.append(
                {
                    "system": model,
                    "task": f"{task_name}/{sample_id}" if several else sample_id,
                    "success": success,
                    "status": raw,
                    "cluster": task_name,
                    "epoch": sample.epoch,
                    **verdicts,
                }
            )
        configured = getattr(log.eval.config, "epochs", None)
        # epochs: as configured, else those the samples present have (never assumed)
        epochs = range(1, configured + 1) if configured else sorted({e for _, e in seen})
        for sample_id in getattr(log.eval.dataset, "sample_ids", None) or []:
            sample_id = str(sample_id) if as_text else sample_id
            for epoch in epochs:
                if (sample_id, epoch) not in seen:
                    origin[(model, task_name, sample_id, epoch)].append(file)
                    rows.append(
                        {
                            "system": model,
                            "task": f"{task_name}/{sample_id}" if several else sample_id,
                            "success": np.nan,
                            "status": "not_run",
                            "cluster": task_name,
                            "epoch": epoch,
                            **dict.fromkeys(judges, np.nan),
                        }
                    )
    if judges and not labelled:  # a log without labels is fine, but not all of them
        found = list(dict.fromkeys(k for _, log in logs for k in _scorers_of(log)))
        raise ValueError(
            f"{_READER}: scorer= names scorer(s) {show_values(_label_names(scorer))}, which no "
            f"sample of {show_values([str(f) for f, _ in logs], limit=3)} has; their scorers "
            f"are {found}"
        )
    twice = {k: v for k, v in origin.items() if len(v) > 1}
    if twice:
        (model, task_name, sample_id, epoch), where = next(iter(twice.items()))
        raise ValueError(
            f"{_READER}: {len(twice)} sample epoch(s) appear in several logs, e.g. sample "
            f"{sample_id!r} epoch {epoch} of task {task_name!r} for {model!r} in "
            f"{show_values([str(w) for w in where])}; a retried run leaves its original log "
            "beside the retry: pass only the logs to combine"
        )
    rows.sort(key=lambda row: row["epoch"])  # stable: trials follow epochs, tasks their order
    for row in rows:
        del row["epoch"]
    return build(
        rows,
        _READER,
        files,
        status_map=merge_status_map({}, status_map, _READER),
        missing=missing,
        planned_trials=planned_trials,
        cluster=several,
        notes=notes,
        planned_by_source=True,
        judges=judges,
        label_design=label_design,
        label_strata=label_strata,
    )


def _judge_scorers(judge, scorer, label_design, label_strata) -> list[str]:
    """The judge scorers (``[]`` without ``judge=``); refuses options that do not combine."""
    if judge is None:
        for option, value in (("label_design", label_design), ("label_strata", label_strata)):
            if value is not None:
                raise TypeError(
                    f"{_READER}: {option}= applies to a judge's verdicts beside trusted "
                    "labels: name the judge scorer with judge= (and the label's with scorer=)"
                )
        return []
    names = [judge] if isinstance(judge, str) else judge
    if (
        not isinstance(names, list | tuple)
        or not names
        or not all(isinstance(n, str) for n in names)
    ):
        raise TypeError(f"{_READER}: judge= must be a scorer name or a list of them; got {judge!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{_READER}: judge= names a scorer twice: {list(names)}")
    clash = [n for n in names if n in (*COLUMNS, "trial")]
    if clash:
        raise ValueError(
            f"{_READER}: judge scorer(s) {clash} share a name with a column of the counts "
            f"({[*COLUMNS, 'trial']}); rename the scorer in the log"
        )
    if scorer is None:
        raise TypeError(
            f"{_READER}: judge= needs scorer=, the scorer of the trusted labels (a reviewer's "
            "score, a verifier's), empty where a sample epoch was not labelled"
        )
    both = [n for n in names if n in _label_names(scorer)]
    if both:
        raise ValueError(
            f"{_READER}: scorer {both[0]!r} is both a judge (judge=) and the trusted label "
            "(scorer=)"
        )
    if label_design is None:
        raise TypeError(
            f"{_READER}: judge= needs label_design=: say how the labelled sample epochs were "
            "chosen, 'random' (each equally likely to be labelled) or 'stratified' (with "
            "label_strata= naming the judge scorer whose verdicts were the strata); it cannot "
            "be read from the log"
        )
    if label_strata is not None and label_strata not in names:
        raise ValueError(
            f"{_READER}: label_strata= must name a judge scorer (the strata are its verdicts); "
            f"got {label_strata!r}, judges {list(names)}"
        )
    return list(names)


def _check_named(log, file, judges: list[str]) -> None:
    """Refuse a judge scorer that no sample of the log has, listing its scorers."""
    found = _scorers_of(log)
    for name in judges:
        if name not in found:
            raise ValueError(
                f"{_READER}: judge= names scorer {name!r}, which no sample of '{file}' has; "
                f"its scorers are {found}"
            )


def _scorers_of(log) -> list[str]:
    return list(dict.fromkeys(k for sample in log.samples or [] for k in (sample.scores or {})))


def _label_names(scorer) -> list:
    return list(scorer.values()) if isinstance(scorer, Mapping) else [scorer]


def _check_samples(log, file) -> None:
    """Refuse a log saved without its per-sample records (only the header's totals)."""
    if log.samples:
        return
    results = getattr(log, "results", None)
    completed = getattr(results, "completed_samples", 0) or 0
    listed = len(getattr(log.eval.dataset, "sample_ids", None) or [])
    if completed or listed:
        raise ValueError(
            f"{_READER}: '{file}' holds no per-sample records (its header reports "
            f"{completed} completed sample(s) of {listed or 'an unknown number'}), so no "
            "outcome can be counted per task; re-run with sample logging (Inspect's "
            "log_samples=True / --log-samples, the default) and read that log"
        )


def _check_scored(log, file) -> None:
    """Refuse a log none of whose samples was scored (``inspect eval --no-score``)."""
    samples = log.samples or []
    if any(sample.scores for sample in samples):
        return
    unscored = [s for s in samples if s.error is None]
    if unscored:
        raise ValueError(
            f"{_READER}: '{file}' is unscored: none of its {len(samples)} sample(s) has a "
            f"score ({len(unscored)} ran without error), so there is no outcome to count and "
            "a missing-outcome policy would only invent them; score the log with "
            f"`inspect score '{file}'` and read the scored log it writes"
        )


def _ids_as_text(logs) -> bool:
    """Whether sample ids must all be read as text: some are strings (``0`` vs ``'0'``)."""
    ids = [sample.id for _, log in logs for sample in log.samples or []]
    ids += [i for _, log in logs for i in getattr(log.eval.dataset, "sample_ids", None) or []]
    return any(isinstance(i, str) for i in ids) and not all(isinstance(i, str) for i in ids)


def _inspect_log():
    try:
        import inspect_ai.log as log_module
    except ImportError as exc:
        raise ImportError(
            f"{_READER} needs the optional dependency inspect_ai; install it with "
            f"`{INSTALL_HINT}` (or `pip install inspect_ai`)"
        ) from exc
    return log_module


def is_log(payload) -> bool:
    """Whether parsed JSON is an Inspect log: an ``eval`` object naming a task and a model.

    Examples
    --------
    >>> from bayeval.readers.inspect_logs import is_log
    >>> is_log({"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}})
    True
    >>> is_log({"eval": {"HumanEval/0": []}})
    False
    """
    evals = payload.get("eval") if isinstance(payload, Mapping) else None
    return isinstance(evals, Mapping) and "task" in evals and "model" in evals


def _log_files(path_or_dir) -> tuple[list[Path], list[str]]:
    """The logs given or found in folders (by content, whatever their names), and notes."""
    items = path_or_dir if isinstance(path_or_dir, (list, tuple)) else [path_or_dir]
    if not items:
        raise ValueError(f"{_READER}: no logs given")
    files: list[Path] = []
    notes: list[str] = []
    for item in items:
        path = check_path(item, _READER)
        if not path.is_dir():
            files.append(path)
            continue
        try:
            candidates = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in _SUFFIXES
            )
        except PermissionError as exc:
            raise PermissionError(
                f"{_READER}: a folder under '{path}' cannot be read ({exc})"
            ) from None
        # Inspect's own listing knows logs only by its file-name pattern; renamed logs are
        # logs all the same, so the content decides
        found = [p for p in candidates if p.suffix.lower() == ".eval" or _is_json_log(p)]
        other = [p for p in candidates if p not in found]
        if not found:
            raise ValueError(
                f"{_READER}: no Inspect logs in folder '{path}': no .eval file, and none of its "
                f"{len(other)} .json file(s) holds a log (an 'eval' object with a task and a "
                "model)"
            )
        if other:
            notes.append(
                f"left out {len(other)} .json file(s) of '{path}' that are not Inspect logs: "
                f"{show_values([str(p.relative_to(path)) for p in other])}"
            )
        files += found
    return files, notes


def _is_json_log(path: Path) -> bool:
    try:
        return is_log(read_json(path, _READER))
    except ValueError:  # not JSON at all: not a log
        return False


def _read_logs(log_module, files: list[Path]) -> list[tuple[Path, Any]]:
    """The logs, through inspect_ai's dataframe API where it has one, else one by one.

    Either inspect_ai's ``EvalLog`` objects or views with the same fields (duck-typed).
    """
    if frames_available():
        try:
            return read_logs(files)
        except Exception:  # noqa: BLE001 - the parser below names the file inspect_ai failed on
            pass
    return [(file, _read(log_module, file)) for file in files]


def _read(log_module, file: Path):
    if file.suffix.lower() == ".json":  # .eval logs are zip archives, .json ones text
        check_text_head(file, reader=_READER, expected="an Inspect log (JSON)")
    kwargs = {}
    if "exclude_fields" in _pyinspect.signature(log_module.read_eval_log).parameters:
        kwargs["exclude_fields"] = _SKIP_FIELDS
    try:
        return log_module.read_eval_log(os.fspath(file), **kwargs)
    except Exception as exc:  # inspect raises many kinds for a file that is not a log
        raise ValueError(
            f"{_READER}: could not read '{file}' as an Inspect log: {type(exc).__name__}: {exc}"
        ) from None


def _scorer(scorer, log, file) -> str | None:
    """The scorer to read in one log: given, given for its task, or its only one."""
    if isinstance(scorer, Mapping):
        if log.eval.task not in scorer:
            raise ValueError(
                f"{_READER}: scorer= names no scorer for task {log.eval.task!r} "
                f"('{file}'); it covers {list(scorer)}"
            )
        scorer = scorer[log.eval.task]
    if scorer is not None:
        if not isinstance(scorer, str):
            raise TypeError(
                f"{_READER}: scorer= must be a scorer name or a {{task: name}} "
                f"dict; got {type(scorer).__name__}"
            )
        return scorer
    names = _scorers_of(log)
    if len(names) > 1:
        raise ValueError(
            f"{_READER}: '{file}' has several scorers {names}; choose one with "
            f"scorer= (a name, or a dict {{{log.eval.task!r}: name}})"
        )
    return names[0] if names else None


def _outcome(sample, scorer, file) -> tuple[float, str | None]:
    """``(success, raw status)`` of one sample epoch."""
    if sample.error is not None:
        return np.nan, "error"
    scores = sample.scores or {}
    if scorer not in scores:
        if scores:
            raise ValueError(
                f"{_READER}: scorer {scorer!r} not found in '{file}' (sample "
                f"{sample.id!r}); its scorers are {list(scores)}"
            )
        return np.nan, "no_verdict"
    success, raw = _pass_fail(scores[scorer].value, scorer, sample, file)
    if raw is not None:
        return success, raw
    return success, _limit(sample)


def _judged(sample, label, judges, file) -> tuple[float, str | None, dict[str, float]]:
    """``(label, raw status, {judge: verdict})`` of one sample epoch (NaN label: unlabelled)."""
    if sample.error is not None:
        return np.nan, "error", dict.fromkeys(judges, np.nan)
    scores = sample.scores or {}
    if not scores:
        return np.nan, "no_verdict", dict.fromkeys(judges, np.nan)
    verdicts = {}
    for name in judges:
        if name not in scores:
            raise ValueError(
                f"{_READER}: judge scorer {name!r} has no value for sample {sample.id!r} "
                f"(epoch {sample.epoch}) in '{file}', which has {list(scores)}; every scored "
                "sample epoch needs each judge's verdict"
            )
        verdicts[name] = _pass_fail(scores[name].value, name, sample, file)[0]  # 'N': 0
    if label not in scores:  # not labelled: the judge's verdict is its outcome
        return np.nan, _limit(sample), verdicts
    success, raw = _pass_fail(scores[label].value, label, sample, file)
    return success, (raw if raw is not None else _limit(sample)), verdicts


def _pass_fail(value, scorer, sample, file) -> tuple[float, str | None]:
    """A score value as 1/0, and ``"noanswer"`` for Inspect's no-answer (a failure)."""
    if isinstance(value, str) and value.upper() in ("N", "NOANSWER"):
        return 0.0, "noanswer"
    success = _VALUES.get(value.upper()) if isinstance(value, str) else binary(value)
    if success is None:
        raise ValueError(
            f"{_READER}: scorer {scorer!r} gave {value!r} to sample {sample.id!r} (epoch "
            f"{sample.epoch}) in '{file}'; bayeval needs pass/fail scores: 'C'/'I', "
            "'CORRECT'/'INCORRECT', True/False or 1/0 (partial credit is not a success)"
        )
    return success, None


def _limit(sample) -> str | None:
    limit = getattr(sample, "limit", None)
    return f"limit_{limit.type}" if limit is not None else None
