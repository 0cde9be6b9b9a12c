"""bayeval: Bayesian hierarchical analysis of AI evaluation results."""

from importlib.metadata import PackageNotFoundError, version

from bayeval import bootstrap, datasets, readers, report, simulate
from bayeval._validate import BayevalWarning
from bayeval.data import STATUSES, EvalData, from_counts, from_frame, read_csv
from bayeval.estimators import design_effect, pass_at_k, pass_hat_k, wilson_interval
from bayeval.planning import adjust_pvalues, noninferiority, required_units
from bayeval.results import Results, load
from bayeval.fit import fit
from bayeval.crosscheck import crosscheck

try:
    __version__ = version("bayeval")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = [
    "adjust_pvalues",
    "BayevalWarning",
    "bootstrap",
    "crosscheck",
    "datasets",
    "design_effect",
    "EvalData",
    "fit",
    "from_counts",
    "from_frame",
    "load",
    "noninferiority",
    "pass_at_k",
    "pass_hat_k",
    "read_csv",
    "readers",
    "report",
    "required_units",
    "Results",
    "simulate",
    "STATUSES",
    "wilson_interval",
]
