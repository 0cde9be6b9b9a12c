"""Small helpers shared by the report's modules: JSON-ready values, bounds and collected notes."""

from __future__ import annotations

import math
import warnings
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from bayeval._validate import BayevalWarning


def _num(value):
    """A JSON-ready number: Python int/float, ``None`` for NaN, infinities and missing values."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None


def _label(value):
    return value.item() if isinstance(value, np.generic) else value


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _bounds(obj) -> list:
    """The ``missing_bound`` labels of a DataArray/Dataset, or ``[None]`` without bounds."""
    if "missing_bound" in obj.dims:
        return obj["missing_bound"].values.tolist()
    return [None]


def _at(obj, bound, **indexers):
    if bound is not None:
        indexers["missing_bound"] = bound
    return obj.sel(indexers)


def _collect(caught) -> list[str]:
    """Messages of caught bayeval warnings; other warnings are issued again."""
    notes = []
    for item in caught:
        if issubclass(item.category, BayevalWarning):
            notes.append(str(item.message))
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    return notes
