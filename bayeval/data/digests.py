"""Harness digests over canonical JSON, and the check that systems share one harness.

An interval covers sampling noise, not a changed harness:

- :func:`digest` — a SHA-256 of the harness configuration (dataset hashes, prompt template,
  budgets, temperature, scorer and its version, environment image, ...) over RFC 8785 canonical
  JSON, so key order and formatting do not matter and every value does; :func:`digest_file`
  hashes dataset bytes for the configuration to include; :func:`diff` names the fields that
  differ.
- :func:`check_comparable` — refuses to compare systems evaluated under different digests
  unless ``allow_harness_change=True``, and then returns a :class:`HarnessCheck` whose note
  every output carrying the comparison prints.

A leaf: it reads evaluation data only through its attributes (``systems``, ``harness``,
``harness_configs``), so every layer above may use it. The public face is :mod:`bayeval.harness`.
"""

from __future__ import annotations

import abc
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

from bayeval._validate import describe_values

__all__ = ["MISSING", "HarnessCheck", "digest", "digest_file", "diff", "check_comparable"]


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


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if _NAME.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _where(path: str) -> str:
    return f"field {path!r}" if path else "the configuration itself"


def _canonical(value, path: str = "", _stack=None):
    """The configuration as plain JSON values.

    Refuses, with the field's path, what JSON cannot hold exactly.
    """
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
    r"""SHA-256 (hex) of a file's bytes, read in chunks, for a configuration to include.

    Examples
    --------
    >>> import hashlib, os, tempfile
    >>> from bayeval import harness
    >>> path = os.path.join(tempfile.mkdtemp(), "tasks.jsonl")
    >>> _ = open(path, "wb").write(b'{"id": 1}\n')
    >>> harness.digest_file(path) == hashlib.sha256(b'{"id": 1}\n').hexdigest()
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
    out: dict = {}
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
        """Whether the systems' harness digests differ (``status == "changed"``)."""
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
    groups: dict = {}
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


class _EvalRecord(abc.ABC):
    """Evaluation data as this module reads it: :class:`bayeval.EvalData` registers itself.

    EvalData is defined above this leaf, which cannot import it; registration keeps the check
    an exact ``isinstance``. The properties are those :func:`check_comparable` reads.
    """

    @property
    @abc.abstractmethod
    def systems(self) -> list: ...

    @property
    @abc.abstractmethod
    def harness(self) -> dict | None: ...

    @property
    @abc.abstractmethod
    def harness_configs(self) -> dict | None: ...


def _eval_data(data, name: str = "data"):
    """The EvalData itself, or the one a fit carries as ``.data`` (a Results)."""
    if isinstance(data, _EvalRecord):
        return data
    inner = getattr(data, "data", None)
    if isinstance(inner, _EvalRecord):
        return inner
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
        groups: dict = {}
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
