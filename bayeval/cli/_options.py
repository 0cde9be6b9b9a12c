"""The options the commands share, and the groups they reach a command in.

Each decorator adds its options to a command exactly as the command line spells them, then
hands the command one frozen dataclass per group (:class:`ReadOptions`, :class:`FitOptions`,
:class:`SummaryOptions`, :class:`Outputs`) instead of one argument per option.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import click
import numpy as np

import bayeval as be
from bayeval.cli._group import models
from bayeval.data import MISSING_POLICIES
from bayeval.readers import FORMATS as READER_FORMATS

SAMPLERS = ("auto", "conjugate", "grid", "nutpie", "pymc", "numpyro")
# the models the --model help listed first, in its order; the registry's others follow
_SHOWN_FIRST = ("hierarchical", "beta_binomial", "logit_normal")


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


class ModelChoice(click.Choice):
    """``auto`` and the names of the model registry (:data:`bayeval.models.MODELS`).

    The registry is read on first use (a value to check, a help page to show): it imports
    PyMC, which the command's start does not need.
    """

    def __init__(self):
        self.case_sensitive = True

    @functools.cached_property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        names = list(models.MODELS)
        first = [name for name in _SHOWN_FIRST if name in names]
        return ("auto", *first, *(name for name in names if name not in first))


K_LIST = _NumberList(int, 1, strict=False)
TRIALS_LIST = _NumberList(int, 1, strict=False)
EFFECT_LIST = _NumberList(float, 0.0, strict=True)
PROBABILITY = click.FloatRange(0.0, 1.0, min_open=True, max_open=True)
MODELS = ModelChoice()


@dataclass(frozen=True)
class ReadOptions:
    """How to read results files: their format, the column of each role, reader arguments.

    ``cost``, ``latency``, ``score`` and ``scores`` are ``bayeval analyze``'s own columns
    (``scores``: whether the command analyses partial-credit scores).
    """

    fmt: str = "auto"
    system: str | None = None
    system_name: str | None = None
    task: str | None = None
    success: str | None = None
    successes: str | None = None
    trials_column: str | None = None
    trial: str | None = None
    cluster: str | None = None
    stratum: str | None = None
    status: str | None = None
    status_map: str | None = None
    reader_options: tuple[str, ...] = ()
    missing: str | None = None
    cost: str | None = None
    latency: str | None = None
    score: str | None = None
    scores: bool = False
    systems: tuple[str, ...] = ()
    judge: tuple[str, ...] = ()
    label_design: str | None = None
    label_strata: str | None = None


@dataclass(frozen=True)
class FitOptions:
    """The model, its engine and the sampler's settings."""

    model: str = "auto"
    sampler: str = "auto"
    draws: int | None = None
    chains: int = 4
    tune: int | None = None
    seed: int = 0

    def refit_options(self) -> dict:
        """Keyword arguments of a fit of part of the data (a subset, a canary).

        No progress bar, and the model and engine only where chosen.
        """
        return {
            "draws": self.draws,
            "chains": self.chains,
            "seed": self.seed,
            "tune": self.tune,
            "progress": False,
            **({} if self.model == "auto" else {"model": self.model}),
            **({} if self.sampler == "auto" else {"sampler": self.sampler}),
        }


@dataclass(frozen=True)
class SummaryOptions:
    """What is read from the fit: replicates of each bootstrap, interval, estimand, metric."""

    n_boot: int = 10_000
    ci_prob: float = 0.95
    estimand: str | None = None
    metric: str = "pass@k"
    clusters: str | None = None
    weighting: str = "task"


@dataclass(frozen=True)
class Outputs:
    """Where to write the JSON (``-``: stdout) and the report card."""

    json_path: str | None = None
    report_path: str | None = None


def gather(name: str, cls, fields):
    """Hand a command the options ``fields`` as one ``cls`` argument called ``name``.

    Parameters
    ----------
    name : str
        The command's argument that receives the dataclass.
    cls : type
        A dataclass.
    fields : dict or sequence of str
        Field of ``cls`` -> the option's parameter name; a sequence where they are the same.

    Returns
    -------
    callable
        A decorator; it leaves the command's options (and so its command line) as they are.
    """
    fields = dict(fields) if isinstance(fields, dict) else {f: f for f in fields}

    def decorate(func):
        @functools.wraps(func)
        def command(**kwargs):
            kwargs[name] = cls(**{field: kwargs.pop(param) for field, param in fields.items()})
            return func(**kwargs)

        return command

    return decorate


def _apply(func, options):
    for option in reversed(options):
        func = option(func)
    return func


_READ_FIELDS = (
    "systems",
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
    "judge",
    "label_design",
    "label_strata",
)


TRIALS_COLUMN = "--trials-column"


def column_options(trials_flag: str = TRIALS_COLUMN):
    """Column-role options shared by every command that reads results (argument ``read``).

    The count rows' column of trials is ``--trials-column`` in every command; ``trials_flag``,
    where it differs (``--trials`` in the commands without a grid of trial counts), is a
    second name for it.
    """
    trials_help = "Count rows: column of trials per row (with --successes) [detected: trials]."
    trials_flags = [TRIALS_COLUMN] + ([trials_flag] if trials_flag != TRIALS_COLUMN else [])
    options = [
        click.option(
            "--format",
            "fmt",
            type=click.Choice(["auto", *READER_FORMATS]),
            default="auto",
            show_default=True,
            help="Input format; auto detects tables (.csv, .parquet, .jsonl, .json) "
            "and harness outputs (SWE-bench, Terminal-Bench, Harbor jobs, tau-bench, "
            "tau2-bench, HumanEval and EvalPlus, BigCodeBench, lm-eval samples and "
            "results, Inspect, HELM).",
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
            help="Column of 0/1 outcomes, empty for no outcome [detected: success]; for "
            "Inspect logs, the scorer to read (with --judge: the trusted labels' scorer).",
        ),
        click.option(
            "--successes",
            metavar="COLUMN",
            help="Count rows: column of successes (with the trials column) [detected: successes].",
        ),
        click.option(*trials_flags, "trials_column", metavar="COLUMN", help=trials_help),
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
            "Repeatable; a KEY given again takes the list of its values "
            "(split=test split=valid for HELM).",
        ),
        click.option(
            "--systems",
            "systems",
            metavar="NAME[,NAME...]",
            multiple=True,
            help="Analyse these systems only (comma-separated, or repeat the option); "
            "the rest of the file is read and left out.",
        ),
        click.option(
            "--judge",
            "judge",
            metavar="COLUMN",
            multiple=True,
            help="Column of an automatic judge's 0/1 verdicts on every attempt, beside the "
            "trusted labels of --success (empty where not labelled): the judge-aware model "
            "reads the true outcome through the judge's error per system. One judge per fit. "
            "For Inspect logs: the judge's scorer.",
        ),
        click.option(
            "--label-design",
            "label_design",
            type=click.Choice(["random", "stratified"]),
            help="With --judge: how the labelled attempts were chosen, at random or at "
            "random within the strata of --label-strata (any other way is refused).",
        ),
        click.option(
            "--label-strata",
            "label_strata",
            metavar="COLUMN",
            help="With --label-design stratified: the column within whose values the "
            "labelled attempts were drawn at random (a judge's column is allowed).",
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
        return _apply(gather("read", ReadOptions, _READ_FIELDS)(func), options)

    return decorate


def model_options(func):
    """The model, engine and summary options (arguments ``fitting`` and ``summary``)."""
    options = [
        click.option(
            "--model",
            type=MODELS,
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
            default=None,
            help="Posterior draws per chain. [default: 1500 for logit_normal's full-latent "
            "form, 1000 otherwise]",
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
            "--clusters",
            type=click.Choice(["new", "observed"]),
            help="With task clusters and a model with cluster effects (logit_normal): "
            "the population estimand is a new task from a new cluster, or from these "
            "clusters. [default: new with 10 or more clusters, none holding under a "
            "quarter of an equal share of the tasks; observed otherwise]",
        ),
        click.option(
            "--weighting",
            type=click.Choice(["task", "cluster"]),
            default="task",
            show_default=True,
            help="With --clusters observed: average the clusters by their tasks or equally.",
        ),
        click.option(
            "--metric",
            type=click.Choice(["pass@k", "pass^k"]),
            default="pass@k",
            show_default=True,
            help="Metric of the table and the comparisons.",
        ),
    ]
    func = gather("fitting", FitOptions, ("model", "sampler", "draws", "chains", "tune", "seed"))(
        func
    )
    func = gather(
        "summary",
        SummaryOptions,
        ("n_boot", "ci_prob", "estimand", "metric", "clusters", "weighting"),
    )(func)
    return _apply(func, options)


def output_options(func):
    """``--json`` and ``--report`` (argument ``out``)."""
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
    return _apply(gather("out", Outputs, ("json_path", "report_path"))(func), options)
