"""The API reference's pages, written from the package's public names at build time.

The public names are ``bayeval.__all__`` (the lazy map ``bayeval._LAZY``) and the ``__all__`` of
every module whose dotted path has no underscore part. Each object is documented once, under the
first public path that reaches it (the top level first, then the submodules the top level names,
then the rest); the other paths are listed as aliases and resolve to it in cross-references.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path

from sphinx.pycode import ModuleAnalyzer, PycodeError

import bayeval


@dataclass
class Section:
    """One module's part of the reference: the names it documents and the ones it re-exports."""

    module: str
    documented: list[str] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # name here -> canonical path


def _is_public(dotted: str) -> bool:
    return not any(part.startswith("_") for part in dotted.split(".")[1:])


def public_modules() -> list[str]:
    """Dotted paths of the public modules (no part starting with ``_``): the top level's first."""
    first = ["bayeval"] + [f"bayeval.{n}" for n, m in bayeval._LAZY.items() if m is None]
    rest = sorted(
        info.name
        for info in pkgutil.walk_packages(bayeval.__path__, "bayeval.")
        if _is_public(info.name) and info.name not in first
    )
    return first + rest


def _names(module: str) -> list[str]:
    """A module's public names: its ``__all__`` (and, for the top level, ``_LAZY``'s names)."""
    names = list(getattr(importlib.import_module(module), "__all__", []))
    if module == "bayeval":
        names += [n for n in bayeval._LAZY if n not in names]
    return names


def public_names() -> list[str]:
    """Every public path ``module.name``, in reference order."""
    return [f"{m}.{n}" for m in public_modules() for n in _names(m)]


def _has_doc_comment(module: str, name: str) -> bool:
    """Whether ``module``'s source documents ``name`` (a ``#:`` comment or a string after it)."""
    try:
        return ("", name) in ModuleAnalyzer.for_module(module).find_attr_docs()
    except PycodeError:
        return False


def sections() -> list[Section]:
    """The reference's sections: each object documented once, the other paths aliases.

    A function, class or module is documented under its first public path; a constant under the
    first public module whose source documents it (the one that defines it), since its doc
    comment lives only there.
    """
    paths: dict[tuple[int, str], list[str]] = {}
    for module in public_modules():
        mod = importlib.import_module(module)
        for name in _names(module):
            obj = getattr(mod, name)
            if not inspect.ismodule(obj):
                paths.setdefault((id(obj), name), []).append(module)
    home = {}
    for (_, name), modules in paths.items():
        obj = getattr(importlib.import_module(modules[0]), name)
        documented = [m for m in modules if _has_doc_comment(m, name)]
        if documented and not (inspect.isclass(obj) or callable(obj)):
            home[(id(obj), name)] = documented[0]
        else:
            home[(id(obj), name)] = modules[0]
    out = []
    for module in public_modules():
        mod = importlib.import_module(module)
        section = Section(module)
        for name in _names(module):
            obj = getattr(mod, name)
            if inspect.ismodule(obj):
                continue  # a submodule has its own section
            canonical = home[(id(obj), name)]
            if canonical == module:
                section.documented.append(name)
            else:
                section.aliases[name] = f"{canonical}.{name}"
        out.append(section)
    return out


def aliases() -> dict[str, str]:
    """Each alias path -> the path its object is documented under."""
    return {f"{s.module}.{n}": target for s in sections() for n, target in s.aliases.items()}


def write(outdir: Path) -> None:
    """Write ``index.rst`` and one page per public module under ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    pages = []
    for section in sections():
        page = section.module
        pages.append(page)
        title = f"``{section.module}``"
        lines = [title, "=" * len(title), "", f".. automodule:: {section.module}", ""]
        lines += [f".. currentmodule:: {section.module}", ""]
        if section.documented:
            lines += [".. autosummary::", "   :toctree: generated", ""]
            lines += [f"   {name}" for name in section.documented]
            lines.append("")
        if section.aliases:
            lines += ["Also importable from here:", ""]
            lines += [
                f"- ``{name}``: :py:obj:`{target}`" for name, target in section.aliases.items()
            ]
            lines.append("")
        text = "\n".join(lines)
        path = outdir / f"{page}.rst"
        if not path.exists() or path.read_text() != text:  # unchanged pages stay unchanged
            path.write_text(text)
    index = [
        "API reference",
        "=============",
        "",
        "Every public name of bayeval, module by module. This list is written from the package's",
        "``__all__`` lists when the documentation is built, so no public name can be left out.",
        "",
        ".. toctree::",
        "   :maxdepth: 1",
        "",
        *[f"   {page}" for page in pages],
        "",
    ]
    text = "\n".join(index)
    path = outdir / "index.rst"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    # pages of names no longer public (or now documented elsewhere) go, so none is left stale
    stubs = {f"{s.module}.{n}" for s in sections() for n in s.documented}
    for old in (outdir / "generated").glob("*.rst"):
        if old.stem not in stubs:
            old.unlink()
    for old in outdir.glob("*.rst"):
        if old.stem not in pages and old.name != "index.rst":
            old.unlink()
