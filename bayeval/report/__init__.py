"""Report card: one auditable page (HTML or Markdown) from a fitted :class:`~bayeval.Results`.

:func:`report_data` computes every number of the report into a JSON-ready ``dict``: the
estimand in words, the units and their counts, status counts and coverage, each system's
pass@1 / pass@k / pass^k with its Bayesian interval next to its bootstrap twin
(:func:`bayeval.crosscheck`), each comparison with its effect, interval, P(effect > 0), margin and
non-inferiority decision (:func:`bayeval.noninferiority`) next to the paired bootstrap
(:func:`bayeval.bootstrap.compare`), the power for the smallest practical effect
(:func:`bayeval.required_units`), the multiplicity family with Holm-adjusted p-values
(:func:`bayeval.adjust_pvalues`), fit diagnostics, the systematic uncertainties no interval
covers, and the settings that reproduce it. :func:`build_report` renders that ``dict`` with
the Jinja2 templates of ``bayeval/report/templates``, plots inline; :func:`write_report` writes
it to a file. The ``bayeval`` command's ``--json`` writes the same ``dict``, so the JSON and the
report show the same numbers; its layout is ``schemas/report.schema.json`` in this package.

Statistical caveats raised while the numbers are computed (:class:`bayeval.BayevalWarning`) are
collected into the report's *Notes* (``notes`` in the ``dict``) instead of being emitted as
warnings.

=========================  ======================================================================
:mod:`.assemble`           :func:`report_data` and :class:`ReportOptions`
:mod:`.comparisons`        the comparisons, their power and multiplicity
:mod:`.sections`           optional sections: cost, latency, recipes, curves over k, contamination,
                           canary; :func:`evidence_record` and :func:`latency_record` (the cost and
                           latency tables as plain data)
:mod:`.judge`              :func:`judge_section`: a judge's error per system and each pair's
                           effect on the true outcome beside the judge-only, labelled-only and
                           PPI++ effects (judged data)
:mod:`.ranking`            :func:`rank_data`, the record of ``bayeval rank``
:mod:`.figures`            which plots a report draws, rendered to PNG
:mod:`.render`             :func:`build_report`, :func:`write_report` (HTML, Markdown), its check
=========================  ======================================================================
"""

# private helpers of the former single-module report that tests read, re-exported as they were
from bayeval.report._systems import _diagnostics_section as _diagnostics_section
from bayeval.report._systems import _measured_order as _measured_order
from bayeval.report.assemble import ADJUST_METHODS, SCHEMA_VERSION, ReportOptions, report_data
from bayeval.report.comparisons import DEFAULT_POWER_EFFECTS
from bayeval.report.figures import PLOTS_HINT
from bayeval.report.judge import judge_section
from bayeval.report.ranking import rank_data
from bayeval.report.render import (
    FORMATS,
    TEMPLATES,
    build_report,
    check_report_path,
    write_report,
)
from bayeval.report.sections import (
    canary_section,
    contamination_section,
    curves_section,
    evidence_record,
    latency_record,
    recipes_section,
)

__all__ = [
    "ADJUST_METHODS",
    "DEFAULT_POWER_EFFECTS",
    "FORMATS",
    "PLOTS_HINT",
    "SCHEMA_VERSION",
    "TEMPLATES",
    "ReportOptions",
    "build_report",
    "canary_section",
    "check_report_path",
    "contamination_section",
    "curves_section",
    "evidence_record",
    "judge_section",
    "latency_record",
    "rank_data",
    "recipes_section",
    "report_data",
    "write_report",
]
