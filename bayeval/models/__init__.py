"""Statistical models: one module per model, each a pure builder returning a ``pm.Model``.

* :mod:`~bayeval.models.beta_binomial` — independent tasks, conjugate Beta prior;
* :mod:`~bayeval.models.hierarchical` — Beta-binomial with a population per system;
* :mod:`~bayeval.models.logit_normal` — random effects for clusters, tasks and paired systems;
* :mod:`~bayeval.models.zoib` — zero-one-inflated Beta for partial-credit scores in [0, 1].

The model cards in the repository's ``models/`` folder give the mathematics, priors, estimands,
assumptions and measured calibration of each.
"""

from bayeval.models.beta_binomial import BetaBinomialRates, build_beta_binomial_model
from bayeval.models.hierarchical import HierarchicalRates, build_hierarchical_model
from bayeval.models.logit_normal import LogitNormalRates, build_logit_normal_model
from bayeval.models.zoib import ZoibScores, build_zoib_model

__all__ = [
    "build_beta_binomial_model",
    "build_hierarchical_model",
    "build_logit_normal_model",
    "build_zoib_model",
    "MODELS",
    "get_model",
]

#: Name -> object computing the model's estimands from a fitted DataTree.
MODELS = {
    "beta_binomial": BetaBinomialRates(),
    "hierarchical": HierarchicalRates(),
    "logit_normal": LogitNormalRates(),
    "zoib": ZoibScores(),
}


def get_model(name: str):
    """The estimand calculator of a model, by name."""
    if name not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}; got {name!r}")
    return MODELS[name]
