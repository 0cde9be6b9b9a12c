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
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import rfc8785
import xarray as xr

from bayeval._validate import describe_values, validate_choice, validate_margin, validate_prob

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

_SAFE_INTEGER = 2**53 - 1
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ALLOWED = (
    "mappings with str keys, lists, tuples (written as JSON arrays), str, int (at most "
    "2**53 - 1 in magnitude), finite float, bool and None (NumPy scalars included)"
)


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()
"""Stands for a field absent from one side of :func:`diff`."""


# -- digests -----------------------------------------------------------------------------------
def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _NAME.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _where(path: str) -> str:
    return f"field {path!r}" if path else "the configuration itself"


def _canonical(value, path: str = "", _stack=None):
    """The configuration as plain JSON values, refusing (with the field's path) what JSON cannot
    hold exactly."""
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, numbers.Integral):
        if abs(int(value)) > _SAFE_INTEGER:
            raise ValueError(
                f"{_where(path)} is the integer {int(value)}, beyond 2**53 - 1: RFC 8785 "
                "canonical JSON holds numbers as IEEE doubles and would not keep it exactly; "
                "write it as a string"
            )
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(
                f"{_where(path)} is {value!r}: RFC 8785 canonical JSON has no NaN "
                "or infinity; write it as a string or leave the field out"
            )
        return value
    _stack = set() if _stack is None else _stack
    if isinstance(value, (Mapping, list, tuple)):
        if id(value) in _stack:
            raise ValueError(f"{_where(path)} contains itself (a circular reference)")
        _stack.add(id(value))
        try:
            if isinstance(value, Mapping):
                bad = [k for k in value if not isinstance(k, str)]
                if bad:
                    raise TypeError(
                        f"{_where(path)} has keys that are not strings: {describe_values(bad)}; "
                        "JSON object keys are strings (write them as strings: 1 and '1' would "
                        "otherwise be one key)"
                    )
                return {k: _canonical(v, _join(path, k), _stack) for k, v in value.items()}
            return [_canonical(v, _join(path, i), _stack) for i, v in enumerate(value)]
        finally:
            _stack.discard(id(value))
    hint = ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        hint = "; hash the bytes (hashlib.sha256(b).hexdigest()) and include the hex string"
    elif isinstance(value, os.PathLike):
        hint = "; include digest_file(path) for the file's content, or str(path) for its name"
    elif isinstance(value, (set, frozenset)):
        hint = "; sets have no order: write a sorted list"
    elif isinstance(value, np.ndarray):
        hint = "; write array.tolist()"
    raise TypeError(
        f"{_where(path)} has type {type(value).__name__}, which JSON cannot hold; "
        f"allowed: {_ALLOWED}{hint}"
    )


def _dumps(value) -> bytes:
    return rfc8785.dumps(value)


def digest(config) -> str:
    """SHA-256 (hex) of the RFC 8785 canonical JSON of a harness configuration.

    Canonical JSON sorts keys and writes numbers by value, so the digest ignores key order,
    whitespace and number formatting (``1``, ``1.0`` and ``1e0`` are one number; ``-0.0`` is
    ``0``) and changes with every value, key and list order. ``True`` and ``1`` differ.

    Parameters
    ----------
    config : mapping or JSON value
        JSON types only: mappings with ``str`` keys, lists, str, int, float, bool and ``None``
        (NumPy scalars are read as their Python values). Tuples are JSON arrays (a tuple and
        the list of the same items have one digest). Refused, with the field's path: NaN and
        infinity and integers beyond ``2**53 - 1`` (RFC 8785 cannot hold them exactly),
        non-string keys, bytes, paths, sets, arrays and other objects. Include dataset
        content as its hash (:func:`digest_file`).

    Returns
    -------
    str
        64 hexadecimal characters.

    Examples
    --------
    >>> from bayeval import harness
    >>> a = harness.digest({"temperature": 0.7, "budget": {"steps": 50, "tokens": 1e5}})
    >>> b = harness.digest({"budget": {"tokens": 100000, "steps": 50}, "temperature": 0.70})
    >>> a == b, len(a)
    (True, 64)
    >>> harness.digest({"temperature": 0.8, "budget": {"steps": 50, "tokens": 1e5}}) == a
    False
    """
    return hashlib.sha256(_dumps(_canonical(config))).hexdigest()


def digest_file(path, chunk_size: int = 1 << 20) -> str:
    """SHA-256 (hex) of a file's bytes, read in chunks, for a configuration to include.

    Examples
    --------
    >>> import hashlib, os, tempfile
    >>> from bayeval import harness
    >>> path = os.path.join(tempfile.mkdtemp(), "tasks.jsonl")
    >>> _ = open(path, "wb").write(b'{"id": 1}\\n')
    >>> harness.digest_file(path) == hashlib.sha256(b'{"id": 1}\\n').hexdigest()
    True
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike; got {type(path).__name__}")
    if os.path.isdir(path):
        raise ValueError(
            f"path {os.fspath(path)!r} is a directory; digest each file and "
            "include the hashes in the configuration"
        )
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk_size), b""):
            h.update(block)
    return h.hexdigest()


def diff(a, b) -> dict:
    """The fields that differ between two configurations, with both values.

    Compared as :func:`digest` sees them: ``diff(a, b)`` is empty exactly when the digests are
    equal. Lists are compared position by position (an inserted item shows as changes at every
    later position and an addition at the end).

    Returns
    -------
    dict
        ``path -> (value in a, value in b)``, paths dotted and bracketed
        (``"scorer.version"``, ``"tools[2]"``, ``'env["image tag"]'``); a field present on one
        side only has :data:`MISSING` on the other. Sorted by path.

    Examples
    --------
    >>> from bayeval import harness
    >>> harness.diff({"temperature": 0.2, "scorer": {"version": "1.0"}, "seed": 1},
    ...              {"temperature": 0.2, "scorer": {"version": "1.1"}, "tools": ["bash"]})
    {'scorer.version': ('1.0', '1.1'), 'seed': (1, <missing>), 'tools': (<missing>, ['bash'])}
    """
    out = {}
    _diff(_canonical(a), _canonical(b), "", out)
    return dict(sorted(out.items()))


def _diff(a, b, path, out) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            _diff(a.get(key, MISSING), b.get(key, MISSING), _join(path, key), out)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            _diff(
                a[i] if i < len(a) else MISSING,
                b[i] if i < len(b) else MISSING,
                _join(path, i),
                out,
            )
    elif a is MISSING or b is MISSING or _dumps(a) != _dumps(b):
        out[path or "<root>"] = (a, b)


# -- comparability -----------------------------------------------------------------------------
@dataclass(frozen=True)
class HarnessCheck:
    """Whether systems share one harness digest (:func:`check_comparable`).

    Attributes
    ----------
    systems : tuple
    digests : dict
        System -> digest (``None`` when the data records no harness).
    status : {"same", "changed", "unrecorded"}
    allowed : bool
        Whether the caller allowed a harness change.
    fields : dict or None
        For a change between two digests whose configurations are known: ``path -> (value
        under the first digest, value under the second)`` as :func:`diff` gives it.
    """

    systems: tuple
    digests: dict
    status: str
    allowed: bool
    fields: dict | None = field(default=None)

    @property
    def changed(self) -> bool:
        return self.status == "changed"

    @property
    def note(self) -> str:
        """``""`` unless the harness changed; then ``"harness changed: ..."`` for every output."""
        if not self.changed:
            return ""
        return "harness changed: " + _describe_change(self.digests, self.fields)

    @property
    def attrs(self) -> dict:
        """String attributes for an output (``harness_status``, ``harness_note``, digests)."""
        return {
            "harness_status": self.status,
            "harness_note": self.note,
            "harness_digests": json.dumps({str(s): d for s, d in self.digests.items()}),
        }


def _describe_change(digests: dict, fields: dict | None) -> str:
    groups = {}
    for system, d in digests.items():
        groups.setdefault(d, []).append(system)
    text = "; ".join(f"{describe_values(s)} under {d}" for d, s in groups.items())
    if fields:
        shown = ", ".join(
            f"{p}: {_show(x)} -> {_show(y)}" for p, (x, y) in list(fields.items())[:10]
        )
        more = f" and {len(fields) - 10} more" if len(fields) > 10 else ""
        text += f"; differing fields: {shown}{more}"
    elif fields is not None:
        text += "; the configurations given show no differing field"
    return text


def _show(value) -> str:
    text = repr(value) if value is MISSING else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _eval_data(data, name: str = "data"):
    from bayeval.data import EvalData
    from bayeval.results import Results

    if isinstance(data, Results):
        return data.data
    if isinstance(data, EvalData):
        return data
    raise TypeError(f"{name} must be an EvalData or a Results; got {type(data).__name__}")


def _known_configs(data, configs) -> dict:
    """Digest -> configuration, from the data and from ``configs`` (keyed by system or digest)."""
    known = dict(data.harness_configs or {})
    if configs is None:
        return known
    if not isinstance(configs, Mapping):
        raise TypeError(
            f"configs must be a mapping (system or digest -> configuration); "
            f"got {type(configs).__name__}"
        )
    recorded = data.harness or {}
    for key, config in configs.items():
        d = digest(config)
        if key in recorded:
            if recorded[key] != d:
                raise ValueError(
                    f"configs[{key!r}] has digest {d}, but system {key!r} was evaluated under "
                    f"{recorded[key]}: that is not its configuration"
                )
        elif key != d:
            raise ValueError(
                f"configs key {key!r} is neither a system of the data nor the "
                f"digest of its configuration ({d})"
            )
        known[d] = _canonical(config)
    return known


def check_comparable(
    data, systems, allow_harness_change: bool = False, configs: Mapping | None = None
) -> HarnessCheck:
    """Check that systems were evaluated under one harness digest before comparing them.

    One call at the top of every comparison: ``check = check_comparable(res, [cand, base],
    allow)``; then ``out.attrs.update(check.attrs)`` and print ``check.note`` when non-empty.

    Parameters
    ----------
    data : EvalData or Results
    systems : sequence of system labels
    allow_harness_change : bool, default False
        Compare across digests anyway; the record's ``status`` is then ``"changed"`` and its
        ``note`` says what changed.
    configs : mapping, optional
        Configurations keyed by system or by digest (each checked against the digest the data
        records), in addition to those given to ``from_frame``: with them the refusal names the
        fields that differ.

    Returns
    -------
    HarnessCheck
        ``status``: ``"same"``, ``"changed"`` (only when allowed) or ``"unrecorded"`` (the data
        records no harness: nothing can be checked, and nothing is refused).

    Raises
    ------
    ValueError
        When the systems' digests differ and ``allow_harness_change`` is False: the message
        names the systems, both digests and, when the configurations are known, the fields
        that differ.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeval import from_frame, harness
    >>> df = pd.DataFrame({"system": ["A", "A", "B", "B"], "task": ["t1", "t2"] * 2,
    ...                    "success": [1, 0, 1, 1],
    ...                    "config": [{"temperature": 0.2}] * 2 + [{"temperature": 0.7}] * 2})
    >>> data = from_frame(df, harness="config")
    >>> harness.check_comparable(data, ["A", "B"])    # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: systems ['A'] and ['B'] were evaluated under different harnesses: ...
    >>> check = harness.check_comparable(data, ["A", "B"], allow_harness_change=True)
    >>> check.status, check.note.endswith("differing fields: temperature: 0.2 -> 0.7")
    ('changed', True)
    """
    data = _eval_data(data)
    if not isinstance(allow_harness_change, bool):
        raise TypeError(f"allow_harness_change must be True or False; got {allow_harness_change!r}")
    systems = [systems] if isinstance(systems, str) or np.ndim(systems) == 0 else list(systems)
    unknown = [s for s in systems if s not in data.systems]
    if unknown:
        raise ValueError(
            f"unknown system(s) {describe_values(unknown)}; systems: "
            f"{describe_values(data.systems)}"
        )
    recorded = data.harness
    if recorded is None:
        if configs is not None:
            raise ValueError(
                "configs= needs data that records each system's harness "
                "(from_frame(..., harness=column))"
            )
        return HarnessCheck(
            tuple(systems), {s: None for s in systems}, "unrecorded", allow_harness_change
        )
    digests = {s: recorded[s] for s in systems}
    distinct = list(dict.fromkeys(digests.values()))
    if len(distinct) == 1:
        return HarnessCheck(tuple(systems), digests, "same", allow_harness_change)
    known = _known_configs(data, configs)
    fields = None
    if len(distinct) == 2 and all(d in known for d in distinct):
        fields = diff(known[distinct[0]], known[distinct[1]])
    check = HarnessCheck(tuple(systems), digests, "changed", allow_harness_change, fields)
    if not allow_harness_change:
        groups = {}
        for s, d in digests.items():
            groups.setdefault(d, []).append(s)
        who = " and ".join(describe_values(g) for g in groups.values())
        hint = (
            ""
            if fields is not None or len(distinct) > 2
            else (
                "; pass configs= (system or digest -> configuration) to name the differing fields"
            )
        )
        raise ValueError(
            f"systems {who} were evaluated under different harnesses: "
            f"{_describe_change(digests, fields)}{hint}. Their numbers are not comparable; pass "
            "allow_harness_change=True to compare them anyway (every output then says so)"
        )
    return check


# -- canaries and reward gaps ------------------------------------------------------------------
def _stack(parts, what: str):
    """One EvalData of the given ``(label, EvalData, system)`` parts, paired on their tasks."""
    from bayeval.data import EvalData

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
    from bayeval.fit import fit

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
        (P(|change| <= margin)) and attrs ``verdict``, ``verdict_rule``, ``canary``,
        ``baseline_harness``, ``candidate_harness`` and their digests when recorded.

        Verdict, from the ``ci_prob`` equal-tailed interval ``[lower, upper]`` of the change:
        ``"stable"`` when it lies inside ``[-margin, margin]`` (the change is shown to be
        within the margin: an equivalence test at level ``(1 - ci_prob) / 2`` per side);
        ``"moved"`` when it lies wholly outside (``lower > margin`` or ``upper < -margin``);
        ``"inconclusive"`` otherwise (too few tasks or trials to tell). A gate requiring the
        canary passes only on ``"stable"``.

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
    from bayeval.data import EvalData

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
    out = res.compare(
        cand_label,
        base_label,
        metric=metric,
        k=k,
        estimand=estimand,
        margin=margin,
        ci_prob=ci_prob,
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
            "verdict": _verdict(lower, upper, margin),
            "verdict_rule": (
                f"stable: the {ci_prob:g} interval of the change lies inside "
                f"[-{margin:g}, {margin:g}]; moved: it lies wholly outside; "
                "inconclusive: otherwise (under missing='bounds': the outer bounds)"
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
