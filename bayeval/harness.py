"""Is the number comparable at all? Harness digests, comparability checks, canaries, reward gaps.

An interval covers sampling noise, not a changed harness. This module gives the checks that say
whether two numbers may be compared:

- :func:`digest` — a SHA-256 of the harness configuration (dataset hashes, prompt template,
  budgets, temperature, scorer and its version, environment image, ...) over RFC 8785 canonical
  JSON, so key order and formatting do not matter and every value does; :func:`digest_file`
  hashes dataset bytes for the configuration to include; :func:`diff` names the fields that
  differ.
- :func:`check_comparable` — refuses to compare systems evaluated under different digests
  unless ``allow_harness_change=True``, and then returns a record whose note every output
  carrying the comparison prints.
- :func:`canary` — a fixed reference policy run under two harnesses: the posterior of its score
  change and a verdict a release gate can require.
- :func:`reward_gap` — two outcome sets for the same episodes (the training reward and a
  held-out verifier): the paired posterior of the gap per system, flagged beyond a margin.

How harnesses appear in the data: ``from_frame(..., harness=column)`` records one digest per
system (:attr:`bayeval.EvalData.harness`). A system is one policy under one harness; the same
policy under two harnesses is two systems (or two evaluations, see :func:`canary`).

The digests and the comparability check live in :mod:`bayeval.data.digests`, below every layer
that compares numbers; this module is their public face and adds the checks that fit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import xarray as xr

from bayeval._validate import describe_values, validate_choice, validate_margin, validate_prob
from bayeval.data import EvalData
from bayeval.data.digests import (
    MISSING,
    HarnessCheck,
    _eval_data,
    check_comparable,
    diff,
    digest,
    digest_file,
)
from bayeval.results import fit

__all__ = [
    "MISSING",
    "HarnessCheck",
    "digest",
    "digest_file",
    "diff",
    "check_comparable",
    "canary",
    "reward_gap",
]


# -- canaries and reward gaps ------------------------------------------------------------------
def _stack(parts, what: str):
    """One EvalData of the given ``(label, EvalData, system)`` parts, paired on their tasks."""
    first = parts[0][1]
    tasks = list(first.tasks)
    pieces = []
    for label, data, system in parts:
        if data.missing != first.missing:
            raise ValueError(
                f"{what}: the missing-outcome policies differ ({first.missing!r} "
                f"and {data.missing!r}); build both with the same missing="
            )
        only_here = [t for t in data.tasks if t not in set(tasks)]
        only_first = [t for t in tasks if t not in set(data.tasks)]
        if only_here or only_first:
            raise ValueError(
                f"{what}: the paired comparison needs the same tasks; {parts[0][0]!r} lacks "
                f"{describe_values(only_here)} and {label!r} lacks {describe_values(only_first)}"
                " (select the shared tasks with EvalData.sel(task=...))"
            )
        ds = data.sel(system=system, task=tasks).dataset
        ds = ds.drop_vars([c for c in ("harness",) if c in ds.coords])
        pieces.append(ds.assign_coords(system=[label]))
    for name in ("cluster", "stratum"):
        values = [p[name].values.tolist() if name in p.coords else None for p in pieces]
        if any(v != values[0] for v in values):
            raise ValueError(f"{what}: the tasks' {name} labels differ between the parts")
    ds = xr.concat(
        pieces, dim="system", coords="minimal", compat="override", combine_attrs="override"
    )
    ds.attrs = {k: v for k, v in first.dataset.attrs.items() if k != "harness_configs"}
    return EvalData(ds)


def _verdict(lower: float, upper: float, margin: float) -> str:
    if -margin <= lower and upper <= margin:
        return "stable"
    if lower > margin or upper < -margin:
        return "moved"
    return "inconclusive"


def _fit_paired(data, fit_options):
    options = {"model": "logit_normal", **fit_options}
    return fit(data, **options)


def canary(
    data,
    canary,
    baseline,
    candidate,
    margin: float,
    *,
    metric: str = "pass@k",
    k: int = 1,
    estimand: str = "tasks",
    ci_prob: float = 0.95,
    **fit_options,
) -> xr.Dataset:
    """Score change of a fixed reference policy between two harnesses, and a verdict.

    A canary is a policy that does not change (scripted, or a frozen checkpoint): when its score
    moves between two harnesses, the harness moved the number. Its runs under the two harnesses
    are fitted with the paired model (``logit_normal``: shared task effects) on the same tasks.

    Parameters
    ----------
    data : mapping of harness -> EvalData, or EvalData
        Either one evaluation per harness, keyed by a harness name or digest (``baseline`` and
        ``candidate`` are keys and ``canary`` is the canary's system label in both); or one
        EvalData holding the canary's two runs as two systems (``baseline`` and ``candidate``
        are those system labels and ``canary`` names the policy in the output).
    canary : system label
    baseline, candidate : harness keys, or system labels (see ``data``)
    margin : float
        The largest change (absolute, in the metric) that still counts as "not moved"; > 0.
    metric, k, estimand, ci_prob
        As in :meth:`bayeval.Results.compare`. Default ``estimand="tasks"``: the change on
        these tasks, the question a harness change asks of a fixed benchmark.
    **fit_options
        Passed to :func:`bayeval.fit` (``draws``, ``chains``, ``seed``, ``tune``, ...; the model
        is ``logit_normal`` unless given).

    Returns
    -------
    xarray.Dataset
        What :meth:`~bayeval.Results.compare` returns for ``candidate - baseline`` (``effect``
        draws, ``effect_interval``, ``prob_positive``, ...), plus ``prob_within_margin``
        (``P(|change| <= margin)``) and attrs ``verdict``, ``verdict_rule``, ``canary``,
        ``baseline_harness``, ``candidate_harness`` and their digests when recorded.

        Verdict, from the ``ci_prob`` equal-tailed interval ``[lower, upper]`` of the change:
        ``"stable"`` when it lies inside ``[-margin, margin]`` (the change is shown to be
        within the margin: an equivalence test at level ``(1 - ci_prob) / 2`` per side);
        ``"moved"`` when it lies wholly outside (``lower > margin`` or ``upper < -margin``);
        ``"inconclusive"`` otherwise (too few tasks or trials to tell); ``"undecided"`` when
        the canary's own fit failed its MCMC gates (``gates_failed``, ``gates_note``), whatever
        its interval says. A gate requiring the canary passes only on ``"stable"``.

    Examples
    --------
    >>> from bayeval import from_counts, harness
    >>> old = from_counts([[8, 2, 9, 5, 7, 1, 10, 4]], trials=10, systems=["scripted"])
    >>> new = from_counts([[8, 3, 9, 5, 6, 1, 10, 4]], trials=10, systems=["scripted"])

    The default fit is the paired model; for a quick, unpaired first look use the grid engine:

    >>> quick = harness.canary({"v1": old, "v2": new}, "scripted", "v1", "v2", margin=0.15,
    ...                        model="hierarchical", draws=500, chains=2, seed=0)
    >>> quick.attrs["verdict"], round(float(quick["prob_within_margin"]), 2)
    ('stable', 0.98)
    """
    margin = validate_margin(margin, positive=True)
    ci_prob = validate_prob("ci_prob", ci_prob)
    digests = {}
    if isinstance(data, Mapping):
        for role, key in (("baseline", baseline), ("candidate", candidate)):
            if key not in data:
                raise ValueError(
                    f"{role} {key!r} is not a key of data; keys: {describe_values(list(data))}"
                )
            part = _eval_data(data[key], f"data[{key!r}]")
            if canary not in part.systems:
                raise ValueError(
                    f"canary {canary!r} is not a system of data[{key!r}]; its "
                    f"systems: {describe_values(part.systems)}"
                )
            digests[role] = (part.harness or {}).get(canary)
        base_label, cand_label = str(baseline), str(candidate)
        if base_label == cand_label:
            raise ValueError("baseline and candidate must be different harnesses")
        combined = _stack(
            [
                (base_label, _eval_data(data[baseline]), canary),
                (cand_label, _eval_data(data[candidate]), canary),
            ],
            "canary",
        )
    elif isinstance(data, EvalData):
        for role, label in (("baseline", baseline), ("candidate", candidate)):
            if label not in data.systems:
                raise ValueError(
                    f"{role} {label!r} is not a system of data (with one EvalData, "
                    "baseline and candidate are the canary's two runs); systems: "
                    f"{describe_values(data.systems)}"
                )
            digests[role] = (data.harness or {}).get(label)
        if baseline == candidate:
            raise ValueError("baseline and candidate must be different systems")
        combined = data.sel(system=[baseline, candidate])
        base_label, cand_label = baseline, candidate
    else:
        raise TypeError(
            f"data must be a mapping of harness -> EvalData or an EvalData; "
            f"got {type(data).__name__}"
        )
    res = _fit_paired(combined, fit_options)
    # the canary's two runs differ in harness by design: record the change, do not refuse it
    out = res.compare(
        cand_label,
        base_label,
        metric=metric,
        k=k,
        estimand=estimand,
        margin=margin,
        ci_prob=ci_prob,
        allow_harness_change=True,
    )
    effect = out["effect"]
    out["prob_within_margin"] = (abs(effect) <= margin).mean(["chain", "draw"])
    lower = float(out["effect_interval"].sel(ci_bound="lower").min())
    upper = float(out["effect_interval"].sel(ci_bound="upper").max())
    out.attrs.update(
        {
            "canary": str(canary),
            "baseline_harness": str(baseline),
            "candidate_harness": str(candidate),
            "baseline_digest": digests["baseline"] or "",
            "candidate_digest": digests["candidate"] or "",
            # a fit that failed its MCMC gates decides nothing, whatever its interval says
            "verdict": "undecided" if out.attrs["gates_failed"] else _verdict(lower, upper, margin),
            "verdict_rule": (
                f"stable: the {ci_prob:g} interval of the change lies inside "
                f"[-{margin:g}, {margin:g}]; moved: it lies wholly outside; "
                "inconclusive: otherwise (under missing='bounds': the outer bounds); "
                "undecided: the canary's fit failed its MCMC gates (gates_note says which)"
            ),
            "fit_model": res.model,
            "fit_seed": int(res.tree.attrs["seed"]),
        }
    )
    return out


def _same_episodes(train, heldout) -> None:
    """Refuse two outcome sets that are not for the same episodes, saying exactly what differs."""
    problems = []
    for name, a, b in (
        ("systems", train.systems, heldout.systems),
        ("tasks", list(train.tasks), list(heldout.tasks)),
    ):
        only_a = [x for x in a if x not in set(b)]
        only_b = [x for x in b if x not in set(a)]
        if only_a or only_b:
            problems.append(
                f"{name} only in data_train: {describe_values(only_a)}, only in "
                f"data_heldout: {describe_values(only_b)}"
            )
    if not problems:
        planned_a = train.dataset["status_counts"].sum("status")
        planned_b = (
            heldout.dataset["status_counts"]
            .sum("status")
            .sel(system=train.systems, task=list(train.tasks))
        )
        differ = planned_a.values != planned_b.values
        if differ.any():
            cells = [
                (
                    train.systems[i],
                    train.tasks[j],
                    int(planned_a.values[i, j]),
                    int(planned_b.values[i, j]),
                )
                for i, j in np.argwhere(differ)[:5]
            ]
            shown = ", ".join(f"({s!r}, {t!r}): {x} vs {y}" for s, t, x, y in cells)
            more = f" and {int(differ.sum()) - 5} more" if differ.sum() > 5 else ""
            problems.append(
                f"planned trials differ in {int(differ.sum())} (system, task) "
                f"cell(s): {shown}{more}"
            )
    if problems:
        raise ValueError(
            "data_train and data_heldout must hold outcomes of the same episodes; "
            + "; ".join(problems)
        )


def reward_gap(
    data_train,
    data_heldout,
    margin: float,
    *,
    metric: str = "pass@k",
    k: int = 1,
    estimand: str = "tasks",
    ci_prob: float = 0.95,
    **fit_options,
) -> xr.Dataset:
    """Gap between the reward a policy was trained on and a held-out verifier, per system.

    The two data sets score the same episodes (same systems, tasks and planned trials per
    cell) with two outcomes. For each system the two are fitted as two systems of the paired
    model (``logit_normal``: shared task effects), and the gap is ``metric(train) -
    metric(heldout)``. The pairing is by task; the pairing of the two outcomes of one episode
    is not used (with positively correlated outcomes this makes the interval wider, not
    narrower, than one that used it).

    Parameters
    ----------
    data_train, data_heldout : EvalData
    margin : float
        A gap larger than this (absolute) counts as a reward gap; > 0.
    metric, k, estimand, ci_prob
        As in :meth:`bayeval.Results.compare` (default ``estimand="tasks"``: these episodes'
        tasks).
    **fit_options
        Passed to :func:`bayeval.fit` for each system.

    Returns
    -------
    xarray.Dataset
        Over ``system``: ``gap`` draws (``chain``, ``draw``, ``system``), ``gap_mean``,
        ``gap_interval`` (``ci_bound``), ``prob_above_margin`` (P(gap > margin)), and
        ``flag``: ``"exceeds"`` when the interval lies above ``margin``, ``"within"`` when it
        lies below, ``"inconclusive"`` otherwise. Settings in attrs.

    Examples
    --------
    >>> from bayeval import from_counts, harness
    >>> train = from_counts([[10, 9, 10, 8, 10, 9]], trials=10, systems=["policy"])
    >>> held = from_counts([[2, 1, 3, 0, 2, 1]], trials=10, systems=["policy"])
    >>> gap = harness.reward_gap(train, held, margin=0.2, model="hierarchical", draws=500,
    ...                          chains=2, seed=0)    # the grid engine: a quick, unpaired look
    >>> gap["flag"].values.tolist()
    ['exceeds']
    """
    train = _eval_data(data_train, "data_train")
    heldout = _eval_data(data_heldout, "data_heldout")
    margin = validate_margin(margin, positive=True)
    ci_prob = validate_prob("ci_prob", ci_prob)
    validate_choice("estimand", estimand, ("tasks", "population"))
    _same_episodes(train, heldout)
    gaps, seeds = [], []
    for system in train.systems:
        pair = _stack(
            [("train", train, system), ("heldout", heldout, system)],
            f"reward_gap for system {system!r}",
        )
        res = _fit_paired(pair, fit_options)
        seeds.append(int(res.tree.attrs["seed"]))
        out = res.compare(
            "train",
            "heldout",
            metric=metric,
            k=k,
            estimand=estimand,
            margin=margin,
            ci_prob=ci_prob,
        )
        gaps.append(
            out["effect"].drop_vars(
                [c for c in out["effect"].coords if c not in out["effect"].dims]
            )
        )
    gap = xr.concat(
        gaps,
        dim=xr.DataArray(np.asarray(train.systems, dtype=object), dims="system", name="system"),
    )
    gap = gap.transpose("chain", "draw", "system", ...)
    alpha = 1 - ci_prob
    interval = (
        gap.quantile([alpha / 2, 1 - alpha / 2], dim=["chain", "draw"])
        .rename(quantile="ci_bound")
        .assign_coords(ci_bound=["lower", "upper"])
        .transpose(..., "ci_bound")
    )
    lower = interval.sel(ci_bound="lower")
    upper = interval.sel(ci_bound="upper")
    if "missing_bound" in gap.dims:
        lower, upper = lower.min("missing_bound"), upper.max("missing_bound")
    flag = np.where(
        lower.values > margin, "exceeds", np.where(upper.values < margin, "within", "inconclusive")
    ).astype(object)
    return xr.Dataset(
        {
            "gap": gap,
            "gap_mean": gap.mean(["chain", "draw"]),
            "gap_interval": interval,
            "prob_above_margin": (gap > margin).mean(["chain", "draw"]),
            "flag": (("system",), flag),
        },
        attrs={
            "metric": metric,
            "k": int(k),
            "estimand": estimand,
            "margin": margin,
            "ci_prob": ci_prob,
            "ci_kind": "eti",
            "gap": "train - heldout",
            "flag_rule": (
                f"exceeds: the {ci_prob:g} interval of the gap lies above "
                f"{margin:g}; within: it lies below; inconclusive: otherwise"
            ),
            "fit_seeds": json.dumps(seeds),
        },
    )
