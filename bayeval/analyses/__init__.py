"""Analyses of a fitted posterior, each beside its bootstrap twin.

Every module holds functions of a :class:`~bayeval.posterior.Posterior` (the posterior first,
then the subjects of the question, every setting keyword-only) and the frequentist twin of each,
a function of :class:`~bayeval.EvalData`:

* :mod:`~bayeval.analyses.metrics` — the bootstrap twins of the metric readouts;
* :mod:`~bayeval.analyses.compare` — paired effects of one pair and of all pairs;
* :mod:`~bayeval.analyses.ranks` — ranks, groups, the winner's curse and rank sets;
* :mod:`~bayeval.analyses.curves` — effects as curves over k;
* :mod:`~bayeval.analyses.subsets` — clean versus flagged tasks;
* :mod:`~bayeval.analyses.runs` — recipes over their training runs;
* :mod:`~bayeval.analyses.crosscheck` — Bayesian and bootstrap intervals side by side.
* :mod:`~bayeval.analyses.irt` — abilities, items and subset scoring of ``model="irt"``
  (public face :mod:`bayeval.irt`).

Beneath them, :mod:`~bayeval.analyses.arrays` holds the decision statistics they share (an
effect's summary, ranks, rank probabilities, sup-t bands, crossings) as functions of plain
NumPy arrays of draws with an ``axis`` argument; the analyses call them over the named sample
dims ``(chain, draw)``.

:class:`~bayeval.Results` reaches each as a one-line method and :mod:`bayeval.bootstrap`
re-exports the twins. The package imports no module of its own here, so each analysis loads
only what it needs.
"""
