"""Rendering: the report card as HTML or Markdown, its figures inline or beside it.

From the Jinja2 templates in ``bayeval/report/templates``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import markupsafe

from bayeval._io import check_writable, write_bytes, write_text
from bayeval._validate import validate_choice
from bayeval.models import MODELS
from bayeval.report._format import (
    _amount,
    _amounts,
    _diagnostic,
    _fmt,
    _interval,
    _md,
    _md_code,
    _md_text,
    _metric_name,
    _percent,
    _pvalue,
    _signed,
)
from bayeval.report._view import _view
from bayeval.report.assemble import report_data
from bayeval.report.figures import PLOTS_HINT, _figures
from bayeval.results import Results

__all__ = ["FORMATS", "TEMPLATES", "build_report", "check_report_path", "write_report"]

#: Report formats and the file suffixes :func:`write_report` maps onto them.
FORMATS = {"html": (".html", ".htm"), "markdown": (".md", ".markdown")}
_CLUSTERS_SHOWN = 12  # largest clusters listed by name in the rendered report

_ENV_OPTIONS: dict[str, Any] = {
    "trim_blocks": True,
    "lstrip_blocks": True,
    "keep_trailing_newline": True,
    "undefined": jinja2.StrictUndefined,
}


#: Template of each format, in the package folder ``bayeval/report/templates``.
TEMPLATES = {"html": "report.html.j2", "markdown": "report.md.j2"}


def _environment(fmt: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bayeval.report", "templates"),
        autoescape=(fmt == "html"),
        **_ENV_OPTIONS,
    )
    env.filters.update(
        num=_fmt,
        signed=_signed,
        pvalue=_pvalue,
        md=_md,
        mdcode=_md_code,
        mdtext=_md_text,
        metric_name=_metric_name,
        pct=_percent,
        diag=_diagnostic,
    )
    env.globals.update(interval=_interval, amounts=_amounts)
    env.filters.update(amount=_amount, fits_scores=_fits_scores, score_model=_score_model)
    return env


#: Said under every figure drawn from a fit that failed its MCMC gates.
GATE_FLAG = "\u26a0 Posterior numbers from a fit that failed its MCMC gates: unreliable."


def _fits_scores(model: str) -> bool:
    """Whether the model named fits partial-credit scores (the registry's model says)."""
    return model in MODELS and MODELS[model].scores


#: The words a report names each model of scores by.
SCORE_MODELS = {
    "fractional": "the paired logit-normal model with the fractional-binomial likelihood",
    "zoib": "the zero-one-inflated Beta model",
}


def _score_model(model: str) -> str:
    """The words for a model of scores (:data:`SCORE_MODELS`), the model's name otherwise."""
    return SCORE_MODELS.get(model, f"the model {model}")


def _render(report: dict, figures: list[dict], fmt: str, image_src, plot_notes) -> str:
    env = _environment(fmt)
    by_name = {f["name"]: f for f in figures}

    main_failed = bool(report.get("diagnostics", {}).get("gates_failed"))
    comparison = report.get("comparison_fit") or {}
    comparison_failed = bool((comparison.get("diagnostics") or {}).get("gates_failed"))

    def flagged(name: str) -> bool:
        """Whether a figure draws posterior numbers of a fit that failed its MCMC gates."""
        if name == "status":  # the data alone
            return False
        if name.startswith(("effect_", "task_rates_", "curve_")) and comparison:
            return comparison_failed
        return main_failed

    def fig(name):
        figure = by_name.get(name)
        if figure is None:
            return ""
        if figure["png"] is not None and flagged(name):
            figure = {**figure, "caption": f"{figure['caption']} {GATE_FLAG}"}
        if figure["png"] is None:  # left out: it would say nothing, and the card says why
            if fmt == "html":
                return markupsafe.Markup('<p class="small">{}</p>\n').format(figure["caption"])
            return f"\n{_md_text(figure['caption'])}\n"
        src = image_src(figure)
        if fmt == "html":
            return markupsafe.Markup(
                '<figure><img src="{}" alt="{}"><figcaption>{}</figcaption></figure>\n'
            ).format(src, figure["title"], figure["caption"])
        return f"\n![{_md_text(figure['title'])}]({src})\n\n*{_md_text(figure['caption'])}*\n"

    notes = list(report["notes"]) + [n for n in plot_notes if n not in report["notes"]]
    has_bounds = any(row["missing_bound"] for row in report["metrics"])
    template = env.get_template(TEMPLATES[fmt])
    return template.render(
        r=report,
        v=_view(report),
        fig=fig,
        notes=notes,
        has_bounds=has_bounds,
        clusters_shown=_CLUSTERS_SHOWN,
        plots_missing=next((n for n in plot_notes if PLOTS_HINT in n), None),
    )


def _data_uri(figure) -> str:
    return "data:image/png;base64," + base64.b64encode(figure["png"]).decode("ascii")


def _resolve(results, data, settings) -> dict:
    if not isinstance(results, Results):
        raise TypeError(f"results must be a bayeval Results; got {type(results).__name__}")
    if data is None:
        return report_data(results, **settings)
    if settings:
        raise TypeError(
            "give either data= (a report_data dict) or report settings, not both; "
            f"got settings {sorted(settings)}"
        )
    if not isinstance(data, dict) or "settings" not in data or "metrics" not in data:
        raise TypeError("data must be the dict returned by report_data")
    if data["settings"]["fit"]["input_hash"] != results.tree.attrs["input_hash"]:
        raise ValueError("data was computed from other results (their input hashes differ)")
    return data


def build_report(results, fmt: str = "html", plots: bool = True, data=None, **settings) -> str:
    """The report card as an HTML or Markdown string, plots inline.

    Parameters
    ----------
    results : Results
    fmt : {"html", "markdown"}, default "html"
        HTML is one self-contained page; both formats embed the plots as base64 PNG
        (``data:`` URIs). :func:`write_report` writes Markdown plots as files instead.
    plots : bool, default True
        Draw the plots (they need matplotlib, ``pip install 'bayeval[plots]'``; without it
        the report says so and keeps every number).
    data : dict, optional
        A :func:`report_data` result to render instead of computing one.
    **settings
        Arguments of :func:`report_data` (``comparisons=``, ``k=``, ``margin=``, ...);
        ``compare_results=`` (the fit the comparisons were read from) also draws the
        comparisons' figures from it, with ``data=`` too.

    Returns
    -------
    str

    Examples
    --------
    >>> import bayeval as be
    >>> from bayeval.report import build_report
    >>> data = be.from_counts([[3, 5, 1, 8, 6], [6, 9, 2, 9, 7]], trials=10,
    ...                       systems=["A", "B"])
    >>> res = be.fit(data, draws=200, chains=2, seed=0, model="hierarchical")
    >>> text = build_report(res, fmt="markdown", plots=False, comparisons=[("B", "A")],
    ...                     n_boot=500)
    >>> text.splitlines()[0]
    '# bayeval report: 2 system(s) x 5 task(s)'
    >>> "## Power for the smallest practical effect" in text
    True
    """
    validate_choice("fmt", fmt, tuple(FORMATS))
    compare_results = settings.pop("compare_results", None)
    if data is None and compare_results is not None:
        settings["compare_results"] = compare_results
    report = _resolve(results, data, settings)
    figures, plot_notes = _figures(results, report, compare_results) if plots else ([], [])
    return _render(report, figures, fmt, _data_uri, plot_notes)


def write_report(results, path, plots: bool = True, data=None, **settings) -> Path:
    """Write the report card to ``path``: ``.html`` (self-contained) or ``.md``.

    A Markdown report gets its plots as PNG files in a folder ``<stem>_files/`` beside it,
    linked relatively; an HTML report embeds them.

    Parameters
    ----------
    results : Results
    path : str or os.PathLike
        Ends in ``.html``/``.htm`` or ``.md``/``.markdown``.
    plots, data, **settings
        As in :func:`build_report`.

    Returns
    -------
    pathlib.Path
        The report's path.

    Examples
    --------
    >>> import os, tempfile, bayeval as be
    >>> from bayeval.report import write_report
    >>> res = be.fit(be.from_counts([[3, 5, 1, 8, 6]], trials=10), draws=200, chains=2,
    ...              seed=0)
    >>> path = write_report(res, os.path.join(tempfile.mkdtemp(), "card.md"), plots=False,
    ...                     n_boot=500)
    >>> path.read_text().startswith("# bayeval report")
    True
    """
    path = Path(path)
    suffix = path.suffix.lower()
    fmt = next((name for name, suffixes in FORMATS.items() if suffix in suffixes), None)
    if fmt is None:
        allowed = [s for suffixes in FORMATS.values() for s in suffixes]
        raise ValueError(f"the report path must end in one of {allowed}; got {str(path)!r}")
    check_report_path(path)
    compare_results = settings.pop("compare_results", None)
    if data is None and compare_results is not None:
        settings["compare_results"] = compare_results
    report = _resolve(results, data, settings)
    figures, plot_notes = _figures(results, report, compare_results) if plots else ([], [])
    if fmt == "html" or not any(f["png"] for f in figures):
        text = _render(report, figures, fmt, _data_uri, plot_notes)
    else:
        folder = _figures_folder(path)
        folder.mkdir(exist_ok=True)
        for figure in figures:
            if figure["png"] is None:
                continue
            write_bytes(folder / f"{figure['name']}.png", figure["png"])
        # a relative URL: a space or a parenthesis in the report's name must not end the link
        text = _render(
            report, figures, fmt, lambda f: quote(f"{folder.name}/{f['name']}.png"), plot_notes
        )
    write_text(path, text)
    return path


def _figures_folder(path) -> Path:
    """The folder a Markdown report at ``path`` writes its figures to: ``<stem>_files``."""
    path = Path(path)
    return path.with_name(f"{path.stem}_files")


def check_report_path(path) -> None:
    """Refuse, before any work, a report path that cannot be written.

    Its folder must exist and take a new file, the path must not be a folder, and a Markdown
    report's figures folder (``<stem>_files``) must not be a file.

    Parameters
    ----------
    path : str or os.PathLike

    Raises
    ------
    FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError
        Naming the path and what is wrong with it.

    Examples
    --------
    >>> import os, tempfile
    >>> from bayeval.report import check_report_path
    >>> folder = tempfile.mkdtemp()
    >>> check_report_path(os.path.join(folder, "card.html"))
    >>> open(os.path.join(folder, "card_files"), "w").close()
    >>> check_report_path(os.path.join(folder, "card.md"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    NotADirectoryError: the report's figures go to the folder '...card_files', but a file ...name
    """
    path = Path(path)
    check_writable(path)
    figures = _figures_folder(path)
    if path.suffix.lower() in FORMATS["markdown"] and figures.exists() and not figures.is_dir():
        raise NotADirectoryError(
            f"the report's figures go to the folder '{figures}', but a file has that name"
        )
