"""Statistical models: one module per model, registered here by name.

Each model is an object of one protocol (:class:`~bayeval.models.base.Model`).

* :mod:`~bayeval.models.beta_binomial` — independent tasks, conjugate Beta prior;
* :mod:`~bayeval.models.hierarchical` — Beta-binomial with a population per system;
* :mod:`~bayeval.models.logit_normal` — random effects for clusters, tasks and paired systems;
* :mod:`~bayeval.models.fractional` — ``logit_normal`` with the fractional-binomial likelihood
  of partial-credit scores in [0, 1];
* :mod:`~bayeval.models.zoib` — zero-one-inflated Beta for partial-credit scores in [0, 1];
* :mod:`~bayeval.models.irt` — item response theory (2PL/1PL): abilities and item parameters.
* :mod:`~bayeval.models.judge` — the logit-normal model's true outcomes seen through a judge.

The model cards in the repository's ``models/`` folder give the mathematics, priors, estimands,
assumptions and measured calibration of each.
"""

from bayeval.models.base import Model
from bayeval.models.beta_binomial import BetaBinomialRates, build_beta_binomial_model
from bayeval.models.fractional import FractionalScores
from bayeval.models.hierarchical import HierarchicalRates, build_hierarchical_model
from bayeval.models.irt import IrtRates, build_irt_model
from bayeval.models.judge import JudgeRates, build_judge_model
from bayeval.models.logit_normal import LogitNormalRates, build_logit_normal_model
from bayeval.models.zoib import ZoibScores, build_zoib_model

__all__ = [
    "build_beta_binomial_model",
    "build_hierarchical_model",
    "build_irt_model",
    "build_judge_model",
    "build_logit_normal_model",
    "build_zoib_model",
    "MODELS",
    "Model",
    "get_model",
]

#: Name -> the model (:class:`~bayeval.models.base.Model`): how it fits data and how its
#: fitted tree is read.
MODELS: dict[str, Model] = {
    model.name: model
    for model in (
        BetaBinomialRates(),
        HierarchicalRates(),
        LogitNormalRates(),
        ZoibScores(),
        FractionalScores(),
        IrtRates(),
        JudgeRates(),
    )
}


def get_model(name: str) -> Model:
    """The model registered as ``name``.

    Examples
    --------
    >>> from bayeval.models import get_model
    >>> get_model("logit_normal").paired, get_model("zoib").engines["auto"]
    (True, 'nutpie')
    """
    if name not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}; got {name!r}")
    return MODELS[name]
