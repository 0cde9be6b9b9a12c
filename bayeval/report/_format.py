"""Numbers and labels as text: the filters of the report's templates and the command's tables."""

from __future__ import annotations

import math
import re


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
    """``value`` with its sign; one that rounds to zero is ``0.000``, never ``-0.000``."""
    if value is None:
        return "n/a"
    text = f"{value:+.{digits}f}"
    return f"{0.0:.{digits}f}" if float(text) == 0 else text


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


# Markdown reads these as markup (emphasis, code, links, raw HTML, entities, table cells,
# headings' closing marks, strikethrough); a backslash makes each a literal character
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<|&#~])")
# CommonMark's line endings and the other breaks a viewer may honour; a label or note stays
# on its line (a table row, a heading, a list item)
_LINE_BREAK = re.compile("\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _md_code_span(text: str) -> str:
    """``text`` as a code span that shows it literally, whatever backticks it holds."""
    text = _LINE_BREAK.sub(" ", text)
    if not text:
        return "` `"
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    # a space each side keeps a backtick at either end apart from the fence, and is stripped
    # again, as is one of the spaces around a text that has one at both ends
    pad = text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and bool(text.strip()))
    return f"{fence} {text} {fence}" if pad else f"{fence}{text}{fence}"


def _md(value) -> str:
    """A label as Markdown code inside a table cell (pipes escaped, as GFM tables read them)."""
    return _md_code_span(str(value)).replace("|", "\\|")


def _md_code(value) -> str:
    """A label as Markdown code outside a table."""
    return _md_code_span(str(value))


def _md_text(value) -> str:
    """A label or note as Markdown text, shown literally, in a table cell or not."""
    return _MD_SPECIAL.sub(r"\\\1", _LINE_BREAK.sub(" ", str(value)))


def _metric_name(metric: str, k) -> str:
    if metric == "mean":
        return "mean score"
    return metric.replace("k", str(k), 1) if metric == "pass@k" else f"pass^{k}"
