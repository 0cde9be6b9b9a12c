"""The ``bayeval`` command: analyse evaluation results, gate a release, plan a benchmark.

Commands
--------
``bayeval analyze FILE...``   fit, crosscheck with the bootstrap, compare, write JSON / a report
``bayeval gate FILE...``      exit 0 / 1 / 3 on a non-inferiority (or superiority) decision
``bayeval rank FILE...``      rank intervals, groups, P(best) and the winner's optimism
``bayeval power``             tasks and trials needed to detect an effect
``bayeval overlap ITEMS CORPUS``  evidence that evaluation items overlap a training corpus
``bayeval demo``              the whole analysis on the bundled SWE-bench Verified results

Exit codes: 0 success (``gate``: the candidate passed); 1 ``gate`` only: the candidate is
confidently worse; 2 bad usage or input (the message names the option, column or value); 3
``gate`` only: the data cannot decide; 4 an unexpected error (one line; ``bayeval --traceback``
shows it in full); 130 interrupted.

Each command is a module of this package; the options they share, reading the input, the fit
and the printing are private modules beside them.
"""

from __future__ import annotations

import warnings

import click

import bayeval as be
from bayeval.cli import analyze, demo, gate, overlap, power, rank
from bayeval.cli._group import Group, show_warning

# ``--reader-option`` parsing, read by tests as it was when the command was one module
from bayeval.cli._input import parse_reader_options as _parse_reader_options  # noqa: F401

__all__ = ["main"]


@click.group(
    cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(be.__version__, prog_name="bayeval")
@click.option("--traceback", is_flag=True, help="Show the full traceback of an error.")
@click.option(
    "--progress/--quiet",
    "progress",
    default=None,
    help="Show the sampler's progress (draws, divergences, time left: a line rewritten "
    "in place on a terminal, a plain line every few seconds and the totals otherwise) "
    "and one status line per slow phase (fit, bootstraps, report), or neither; "
    "default: both.",
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
    """  # noqa: D301 - click's no-rewrap mark "\b" is a backspace; r""" would break it
    ctx.meta["bayeval.traceback"] = traceback
    ctx.meta["bayeval.progress"] = progress
    warnings.showwarning = show_warning


# each command module holds the command of its name; the package keeps the modules as its
# attributes (bayeval.cli.analyze is the module, bayeval.cli.analyze.analyze the command)
for _module in (analyze, overlap, rank, gate, power, demo):
    main.add_command(getattr(_module, _module.__name__.rpartition(".")[2]))
