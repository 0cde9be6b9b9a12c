"""Item response theory: calibrated items carried to systems run on a subset of them.

Fit the calibration with ``be.fit(data, model="irt")`` (:mod:`bayeval.models.irt`: 2PL or 1PL
with trials) on many systems and all items; then

* :func:`select` — which items to run next (most informative, random or stratified);
* :func:`score` — a new system run on a subset: its ability and its predicted pass@1 over all
  calibrated items, with intervals that carry the calibration's uncertainty;
* :func:`compare` — a subset-scored system against another, paired on the calibration draws.

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

from bayeval.analyses.irt import METHODS, abilities, compare, items, score, select

__all__ = ["METHODS", "abilities", "compare", "items", "score", "select"]
