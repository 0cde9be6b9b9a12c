"""Item response theory: calibrated items carried to systems run on a subset of them.

Fit the calibration with ``be.fit(data, model="irt")`` (:mod:`bayeval.models.irt`: 2PL or 1PL
with trials) on many systems and all items; then

* :func:`select` — which items to run next (most informative, random or stratified);
* :func:`score` — a new system run on a subset: its ability and its predicted pass@1 over all
  calibrated items, with intervals that carry the calibration's uncertainty;
* :func:`compare` — a subset-scored system against another, paired on the calibration draws;
* :func:`link` — a new version of the benchmark (new items beside anchor items shared with
  the calibration) calibrated on the calibration's scale, so a growing benchmark keeps one.

``Results.abilities()`` and ``Results.items()`` read the calibration itself. The functions
live in :mod:`bayeval.analyses.irt`; this module is their public face.

Examples
--------
>>> import bayeval as be
>>> from bayeval.testing import fake_data, fake_results
>>> res = fake_results(model="irt")
>>> chosen = be.irt.select(res, 6, method="stratified")
>>> new = fake_data(systems=["NEW"]).sel(task=chosen["item"].values.tolist())
>>> sub = be.irt.score(new, items=res)
>>> sorted(name for name in sub.data_vars if not name.endswith(("_mean", "_interval")))
['full_pass_at_1', 'full_pass_at_1_population', 'n_items', 'theta']
"""

from __future__ import annotations

import json

from bayeval.analyses.irt import (
    METHODS,
    abilities,
    anchors,
    compare,
    items,
    require_irt,
    score,
    select,
)
from bayeval.results import Results, fit

# link()'s keyword anchors= (the calibration) hides the function of that name inside it
_anchor_table = anchors

__all__ = ["METHODS", "abilities", "anchors", "compare", "items", "link", "score", "select"]


def link(
    new_data,
    *,
    anchors: Results,
    draws: int = 1000,
    chains: int = 4,
    tune: int | None = None,
    seed=None,
    priors: dict | None = None,
    progress: bool | None = None,
    strict: bool = False,
) -> Results:
    """Calibrate a new version of the benchmark on an earlier calibration's scale.

    The items ``new_data`` shares with the calibration are anchors: each one's difficulty
    ``b`` and ``log`` discrimination get a Normal prior at its calibrated posterior mean and
    sd (:func:`anchors`), so they carry their calibrated values, with their uncertainty, into
    the new fit; the new items get the model's hierarchical prior, and the new systems'
    abilities ``Normal(mu_theta, sigma_theta)`` with both free. The anchors then fix the
    scale's origin and unit, and the new items' ``b`` and ``a`` and the new systems' ``theta``
    come out on the calibration's scale (``models/irt.md``, linking). The same fit as
    ``be.fit(new_data, model="irt", priors={"anchors": anchors(res, tasks)})``.

    Parameters
    ----------
    new_data : EvalData
        0/1 outcomes (any trials) of systems on the new version's items: the anchors (items
        of the calibration, labelled alike) and new items.
    anchors : Results
        The calibration, a fit of ``model="irt"``.
    draws, chains, tune, seed, progress, strict
        As for :func:`bayeval.fit`.
    priors : dict, optional
        Priors of the new items and the abilities (``mu_b``, ``sigma_b``, ``sigma_cluster``,
        ``mu_log_a``, ``sigma_log_a``, ``mu_theta``, ``sigma_theta``); the ``form`` is the
        calibration's.

    Returns
    -------
    Results
        A fit of ``model="irt"`` on ``new_data``: :func:`select`, :func:`score` and
        :func:`compare` read it as a calibration on the old scale.

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.testing import fake_results
    >>> res = fake_results(model="irt")
    >>> kept = res.data.dataset["task"].values[:3].tolist()  # anchors: items of res
    >>> new = be.from_counts([[4, 3, 1, 2, 0], [3, 2, 0, 4, 1]], trials=4,
    ...                      systems=["X", "Y"], tasks=kept + ["n1", "n2"])
    >>> import warnings
    >>> with warnings.catch_warnings():  # a toy fit, too short for the diagnostics' gates
    ...     warnings.simplefilter("ignore", be.BayevalWarning)
    ...     linked = be.irt.link(new, anchors=res, draws=100, tune=100, chains=1, seed=0)
    >>> linked.model, linked.items()["b_mean"].sizes["task"]
    ('irt', 5)
    """
    require_irt(anchors, "link(anchors=)")
    form = json.loads(anchors._tree.attrs.get("priors", "{}")).get("form", "2pl")
    priors = dict(priors or {})
    if priors.get("form", form) != form:
        raise ValueError(
            f"priors form={priors['form']!r} differs from the calibration's form {form!r}: "
            "a link keeps the calibration's form"
        )
    if "anchors" in priors:
        raise ValueError("link() builds the anchors from anchors=; leave priors['anchors'] unset")
    tasks = new_data.dataset["task"].values.tolist()
    table = _anchor_table(anchors, tasks)
    return fit(
        new_data,
        model="irt",
        draws=draws,
        chains=chains,
        tune=tune,
        seed=seed,
        priors={**priors, "form": form, "anchors": table},
        progress=progress,
        strict=strict,
    )
