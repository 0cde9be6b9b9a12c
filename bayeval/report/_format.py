"""Numbers and labels as text: the filters of the report's templates and the command's tables."""

from __future__ import annotations

import math


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{digits}f}"


def _amount(value) -> str:
    """A cost with three significant digits (no exponent), ``n/a`` when undefined."""
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{digits}f}"


def _amounts(lower, upper) -> str:
    if lower is None and upper is None:
        return "n/a"
    return f"[{_amount(lower)}, {'inf' if upper is None else _amount(upper)}]"


def _signed(value, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def _interval(lower, upper, digits: int = 3) -> str:
    if lower is None or upper is None:
        return "n/a"
    return f"[{lower:.{digits}f}, {upper:.{digits}f}]"


def _pvalue(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def _percent(value) -> str:
    if value is None:
        return "n/a"
    share = 100 * value
    return f"{share:.0f}%" if abs(share - round(share)) < 1e-9 else f"{share:.1f}%"


def _md(value) -> str:
    """A label as Markdown code, safe inside a table cell."""
    text = str(value).replace("`", "'").replace("|", "\\|")
    return f"`{text}`"


def _md_text(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _metric_name(metric: str, k) -> str:
    if metric == "mean":
        return "mean score"
    return metric.replace("k", str(k), 1) if metric == "pass@k" else f"pass^{k}"
