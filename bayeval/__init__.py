"""bayeval: Bayesian hierarchical analysis of AI evaluation results.

The public names load their modules on first use (PEP 562), so ``import bayeval`` and the
``bayeval`` command start without importing PyMC, PyTensor, numba, SciPy's statistics,
statsmodels or ArviZ until a fit, an interval or a bootstrap needs them.
"""

import warnings
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from bayeval.errors import BayevalWarning as BayevalWarning

try:
    __version__ = version("bayeval")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

#: Public name -> the module that defines it (``None``: the name is that submodule).
_LAZY = {
    "bootstrap": None,
    "datasets": None,
    "readers": None,
    "report": None,
    "simulate": None,
    "monitor": None,
    "harness": None,
    "irt": None,
    "contamination": None,
    "analyses": None,
    "testing": None,
    "fit_many": "bayeval.many",
    "STATUSES": "bayeval.data",
    "EvalData": "bayeval.data",
    "from_counts": "bayeval.data",
    "from_frame": "bayeval.data",
    "read_csv": "bayeval.data",
    "design_effect": "bayeval.estimators",
    "pass_at_k": "bayeval.estimators",
    "g_pass_at_k": "bayeval.estimators",
    "consistency": "bayeval.estimators",
    "pass_hat_k": "bayeval.estimators",
    "wilson_interval": "bayeval.estimators",
    "adjust_pvalues": "bayeval.planning",
    "noninferiority": "bayeval.planning",
    "paired_spread": "bayeval.planning",
    "required_units": "bayeval.planning",
    "required_labels": "bayeval.label_planning",
    "selection_bias": "bayeval.planning",
    "split_tasks": "bayeval.splits",
    "frontier": "bayeval.analyses.tradeoff",
    "Results": "bayeval.results",
    "load": "bayeval.results",
    "fit": "bayeval.results",
    "crosscheck": "bayeval.analyses.crosscheck",
}

__all__ = [
    "adjust_pvalues",
    "analyses",
    "BayevalWarning",
    "bootstrap",
    "consistency",
    "contamination",
    "crosscheck",
    "datasets",
    "design_effect",
    "EvalData",
    "fit",
    "fit_many",
    "from_counts",
    "from_frame",
    "frontier",
    "g_pass_at_k",
    "harness",
    "irt",
    "load",
    "monitor",
    "noninferiority",
    "paired_spread",
    "pass_at_k",
    "pass_hat_k",
    "read_csv",
    "readers",
    "report",
    "required_labels",
    "required_units",
    "Results",
    "selection_bias",
    "simulate",
    "split_tasks",
    "STATUSES",
    "testing",
    "wilson_interval",
]

#: Submodules that moved: the old name -> its module now (given with a DeprecationWarning).
_MOVED = {"noise": "bayeval.analyses.noise"}


def __getattr__(name):
    if name in _MOVED:
        warnings.warn(
            f"bayeval.{name} moved to {_MOVED[name]}: import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return import_module(_MOVED[name])
    if name not in _LAZY:
        raise AttributeError(f"module 'bayeval' has no attribute {name!r}")
    module = _LAZY[name]
    value = (
        import_module(f"bayeval.{name}") if module is None else getattr(import_module(module), name)
    )
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_LAZY})
