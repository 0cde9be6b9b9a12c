"""Small validators used once, at the public boundary.

Each normalises a value or raises with the argument's name, what is allowed and what was
received. Internal functions trust their inputs.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import numpy as np

from bayeval.errors import BayevalWarning  # noqa: F401  (re-exported: the helpers warn with it)

__all__ = ["BayevalWarning"]


def validate_choice(name: str, value, allowed: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise ``ValueError``."""
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}; got {value!r}")
    return value


def validate_prob(name: str, value) -> float:
    """A probability strictly between 0 and 1 (an interval's probability, a power)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number strictly between 0 and 1; got {value!r}")
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be strictly between 0 and 1; got {value}")
    return value


def validate_margin(margin, *, positive: bool = False, signed: bool = False) -> float:
    """A practical margin: an absolute difference of two scores in [0, 1], as a float.

    A real number (not a bool), finite and below 1 in size, since no difference of two
    scores in [0, 1] exceeds 1 (a margin of 2 meant 2 points, 0.02). It is non-negative by
    default (the margin of ``P(effect > margin)`` and ``P(effect > -margin)``); ``positive``
    asks for more than 0 (a band ``|effect| <= margin`` that 0 would make empty) and
    ``signed`` allows a negative shift, strictly inside (-1, 1).

    Examples
    --------
    >>> from bayeval._validate import validate_margin
    >>> validate_margin(0.02), validate_margin(0), validate_margin(-0.1, signed=True)
    (0.02, 0.0, -0.1)
    """
    if signed:
        rule = "a number strictly inside (-1, 1)"
    elif positive:
        rule = "a number strictly between 0 and 1"
    else:
        rule = "a non-negative number below 1"
    message = (
        f"margin must be {rule} (an absolute difference of scores in [0, 1], e.g. 0.02 for "
        f"2 points); got {margin!r}"
    )
    if isinstance(margin, (bool, np.bool_)) or not isinstance(margin, numbers.Real):
        raise ValueError(message)
    value = float(margin)
    low_ok = value > -1 if signed else (value > 0 if positive else value >= 0)
    if not (np.isfinite(value) and low_ok and value < 1):
        raise ValueError(message)
    return value


def validate_positive_int(name: str, value, minimum: int = 1) -> int:
    """An integer no smaller than ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    return int(value)


def validate_k(value) -> tuple[np.ndarray, bool]:
    """Normalise ``k`` to a 1-d integer array; the flag says whether a scalar was given."""
    scalar = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    values = [value] if scalar else value
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"k must be a positive integer or a list of them; got {value!r}")
    values = list(values)
    if not values:
        raise ValueError("k must hold at least one value; got an empty list")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"k must be positive integers; got {value!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"k must not repeat a value; got {value!r}")
    return np.asarray(values, dtype=np.int64), scalar


def validate_seed(seed) -> int:
    """A seed for ``numpy.random.default_rng``: ``None`` draws one (so it can be recorded)."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TypeError(f"seed must be a non-negative integer or None; got {seed!r}")
    return int(seed)


def describe_rows(labels, limit: int = 5) -> str:
    """``rows [3, 17, 20]`` or ``rows [3, 17, 20, 21, 30] and 12 more`` for error messages."""
    labels = [v.item() if isinstance(v, np.generic) else v for v in labels]
    shown = ", ".join(repr(x) if isinstance(x, str) else str(x) for x in labels[:limit])
    more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
    noun = "row" if len(labels) == 1 else "rows"
    return f"{noun} [{shown}]{more}"


def describe_values(values, limit: int = 8) -> str:
    """A short, readable list of distinct values for error messages."""
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    distinct, seen = [], set()
    for v in values:  # by repr: unhashable values (lists, dicts) and True vs 1 stay apart
        key = f"{type(v).__name__}:{v!r}"
        if key not in seen:
            seen.add(key)
            distinct.append(v)
    values = distinct
    shown = ", ".join(repr(v) for v in values[:limit])
    more = f", ... ({len(values) - limit} more)" if len(values) > limit else ""
    return f"[{shown}{more}]"


def merge_priors(priors, defaults: dict, model: str) -> dict:
    """A model's default priors updated with the user's, refusing names the model lacks."""
    merged = dict(defaults)
    if priors is not None:
        unknown = set(priors) - set(defaults)
        if unknown:
            raise ValueError(
                f"unknown prior(s) {sorted(unknown)} for the {model} model; "
                f"allowed: {sorted(defaults)}"
            )
        merged.update(priors)
    return merged
