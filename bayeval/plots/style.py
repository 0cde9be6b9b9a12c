"""How every plot tells systems and bounds apart.

A colour per system (:func:`palette`), a printed name per system (:func:`short_names`) and a marker
per missing-outcome bound (:data:`BOUND_MARKERS`).
"""

from __future__ import annotations

import functools
import re

import numpy as np

from bayeval.plots._base import _mpl

__all__ = ["BOUND_MARKERS", "BOUND_TEXT", "palette", "short_names"]

#: Marker of a point estimate for each missing-outcome bound (``None``: no bounds).
BOUND_MARKERS = {None: "o", "lower": "v", "upper": "^"}
#: What each missing-outcome bound counts the missing outcomes as, for legends and titles.
BOUND_TEXT = {"lower": "missing as failures", "upper": "missing as successes"}


# -- colours -----------------------------------------------------------------------------------
def _lab(rgb: np.ndarray) -> np.ndarray:
    """CIELAB (D65) coordinates of sRGB colours in [0, 1], shape (..., 3)."""
    rgb = np.asarray(rgb, dtype=float)
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = linear @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack(
        [116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])],
        axis=-1,
    )


def palette(n: int) -> list[tuple[float, float, float]]:
    """Distinct colours for ``n`` systems, the same ones in every plot.

    Up to 10: matplotlib's ``tab10`` (``C0`` ... ``C9``); beyond, ``tab10`` followed by
    colours chosen one at a time from a grid of sRGB colours (CIELAB lightness 25-85,
    visible on white) as far as possible, in CIELAB distance, from every colour already
    chosen: perceptually spaced, no two of 45 colours less than 25 CIELAB units apart
    (the closest two of ``tab10`` are 28 apart, of ``tab20`` 17).

    Examples
    --------
    >>> from bayeval.plots import palette
    >>> len(palette(45)), len(set(palette(45)))
    (45, 45)
    >>> palette(2)[0] == palette(45)[0]
    True
    """
    n = int(n)
    return list(_palette(max(n, 0)))[:n]


@functools.lru_cache(maxsize=8)
def _palette(n: int) -> tuple:
    tab10 = [tuple(float(v) for v in c[:3]) for c in _mpl().colormaps["tab10"].colors]
    if n <= 10:
        return tuple(tab10[:n])
    chosen = list(tab10)
    steps = np.linspace(0.0, 1.0, 11)
    grid = np.stack(np.meshgrid(steps, steps, steps, indexing="ij"), -1).reshape(-1, 3)
    lab = _lab(grid)
    keep = (lab[:, 0] >= 25) & (lab[:, 0] <= 85)
    grid, lab = grid[keep], lab[keep]
    nearest = np.min(
        np.linalg.norm(lab[:, None, :] - _lab(np.array(chosen))[None], axis=-1), axis=1
    )
    while len(chosen) < n:
        best = int(np.argmax(nearest))
        chosen.append(tuple(float(v) for v in grid[best]))
        nearest = np.minimum(nearest, np.linalg.norm(lab - lab[best], axis=-1))
    return tuple(chosen)


# -- names -------------------------------------------------------------------------------------
_SEPARATORS = "_-/ .:"


def short_names(labels, max_length: int = 40) -> list[str]:
    """System labels without the prefix and suffix they all share, for axes and legends.

    Only whole parts (split at ``_ - / space . :``) are stripped, and only while the names
    stay distinct and none becomes empty. First, a leading run date (``20250807_``) is
    dropped from the names that have one, and the leading parts (split at ``_`` and ``-``)
    that every name has alike: a run date or a harness version in each (``mini-v1.7.0_``),
    or, among three or more names, the same text; then, among three or more names, the
    prefix and suffix all share (what two names share is half of what tells them apart); a
    name still longer than ``max_length`` keeps its start and end around an ellipsis (again
    only while the names stay distinct).

    Examples
    --------
    >>> from bayeval.plots import short_names
    >>> short_names(["2025_mini-v1_claude-opus", "2025_mini-v1_gpt-5", "2025_mini-v1_kimi"])
    ['claude-opus', 'gpt-5', 'kimi']
    >>> short_names(["20250807_mini-v1.7.0_gpt-5", "20251124_mini-v1.16.0_gpt-5.1-codex",
    ...              "20250726_mini-v1.0.0_o3-2025-04-16"])
    ['gpt-5', 'gpt-5.1-codex', 'o3-2025-04-16']
    >>> short_names(["DSCoder-33b-Ins", "DSCoder-6.7b-Ins"])
    ['DSCoder-33b-Ins', 'DSCoder-6.7b-Ins']
    """
    names = [str(label) for label in labels]
    if len(names) < 3:
        out = _drop_versioned_fields(names, same_text=False) if len(names) == 2 else names
        return [_ellipsis(n, max_length) for n in out]
    out = _strip_shared(_drop_versioned_fields(names))
    if len(set(out)) < len(out):
        out = names
    short = [_ellipsis(n, max_length) for n in out]
    return short if len(set(short)) == len(short) else out


#: A run date or number (six digits or more) or a harness release (``v1.16.0``): a leading
#: part of a system label that :func:`short_names` may drop (a model's own version, such as
#: ``v2`` or ``1.5``, is kept).
_RUN_FIELD = re.compile(r"[0-9]{6,}|v[0-9]+(\.[0-9]+)+")


def _drop_versioned_fields(names: list[str], same_text: bool = True) -> list[str]:
    """Drop a leading run date, then the leading parts that every name has alike.

    Drop a leading run date (eight digits and ``_``) from the names that have one, then leading
    parts (split at ``_`` and ``-``) that every name has alike: each a date / run number (six digits
    or more) or each a release (``v1.16.0``, ``v0.0.0``), or the same text (with ``same_text=False``
    only where a version follows it, as in ``mini-v1.7.0``); each step only while the names stay
    distinct and none becomes empty.
    """
    undated = [re.sub(r"^(19|20)[0-9]{6}_(?=.)", "", n) for n in names]
    if len(set(undated)) == len(undated):
        names = undated

    def heads_and_rests(values):
        split = [re.split(r"[_-]", n, maxsplit=1) for n in values]
        if not all(len(parts) == 2 and parts[1] for parts in split):
            return None, None
        return [p[0] for p in split], [p[1] for p in split]

    def versioned(heads):
        return all(_RUN_FIELD.fullmatch(h) for h in heads)

    while True:
        heads, rests = heads_and_rests(names)
        if heads is None:
            return names
        alike = versioned(heads)
        if not alike and len(set(heads)) == 1:
            if same_text:
                alike = True
            else:  # the same text only with a version after it
                after, later = heads_and_rests(rests)
                if after is not None and versioned(after) and len(set(later)) == len(later):
                    rests = later
                    alike = True
        if not alike or len(set(rests)) < len(rests):
            return names
        names = rests


def _strip_shared(names: list[str]) -> list[str]:
    def cuts(name):  # positions just after a separator
        return [i + 1 for i, ch in enumerate(name) if ch in _SEPARATORS]

    prefix = 0
    for cut in cuts(names[0]):
        head = names[0][:cut]
        if all(n.startswith(head) and len(n) > cut for n in names):
            prefix = cut
    stripped = [n[prefix:] for n in names]
    suffix = 0
    for cut in cuts(stripped[0][::-1]):
        tail = stripped[0][len(stripped[0]) - cut :]
        if all(n.endswith(tail) and len(n) > cut for n in stripped):
            suffix = cut
    return [n[: len(n) - suffix] if suffix else n for n in stripped]


def _ellipsis(name: str, max_length: int) -> str:
    if len(name) <= max_length:
        return name
    keep = max_length - 1
    return name[: keep - keep // 2] + "…" + name[len(name) - keep // 2 :]


def _names(results, shorten: bool) -> dict:
    """Label -> the name printed for it.

    :func:`short_names` of all the systems of ``results`` (so a pair is shortened by what every
    system shares), or the label.
    """
    systems = list(results.systems)
    printed = short_names(systems) if shorten else [str(s) for s in systems]
    return dict(zip(systems, printed, strict=True))


# -- bounds ------------------------------------------------------------------------------------
def _bound_suffix(bound) -> str:
    return "" if bound is None else f" ({bound} bound: {BOUND_TEXT[bound]})"


def _bound_handles(bounds: list, linestyles: bool = False) -> list:
    """One legend entry per missing-outcome bound, in black: its marker (or line style)."""
    Line2D = _mpl().lines.Line2D
    styles = {"lower": "--", "upper": ":"}
    return [
        Line2D(
            [],
            [],
            color="black",
            linestyle=styles[b] if linestyles else "none",
            marker=None if linestyles else BOUND_MARKERS[b],
            label=f"{b} bound: {BOUND_TEXT[b]}",
        )
        for b in bounds
        if b is not None
    ]
