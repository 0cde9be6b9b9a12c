"""The documentation builds with warnings as errors, and its API reference has every public name.

The build is the one CI runs: nitpicky, so a broken cross-reference, a public name without a
docstring or malformed reStructuredText in a docstring fails it.
"""

import importlib
import importlib.util
import inspect
import subprocess
import sys

from sphinx.util.inventory import InventoryFile

import bayeval
from tests.helpers import ROOT

DOCS = ROOT / "docs"


def _public_paths() -> dict[str, object]:
    """Every public path -> its object, read from the package's files (not the docs' list).

    ``bayeval.<name>`` for the top level's names (``__all__`` and ``_LAZY``), and
    ``<module>.<name>`` for the ``__all__`` of each module with no part of its path starting
    with an underscore.
    """
    top = set(bayeval.__all__) | set(bayeval._LAZY)
    paths = {f"bayeval.{name}": getattr(bayeval, name) for name in sorted(top)}
    package = ROOT / "bayeval"
    for file in sorted(package.rglob("*.py")):
        parts = list(file.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(part.startswith("_") for part in parts[1:]):
            continue
        module = importlib.import_module(".".join(parts))
        for name in getattr(module, "__all__", []):
            paths[f"{module.__name__}.{name}"] = getattr(module, name)
    return paths


def _reference():
    spec = importlib.util.spec_from_file_location("_docs_reference", DOCS / "_reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_reference_lists_every_public_name():
    listed = set(_reference().public_names())
    missing = sorted(set(_public_paths()) - listed)
    assert not missing, f"public names the API reference leaves out: {missing}"


def test_the_docs_build_with_warnings_as_errors_and_a_page_per_public_name(tmp_path):
    # one test, so the build (about a minute of CPU) runs once however pytest-xdist deals tests
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"]
        + ["-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    # --keep-going: the pages are written even where a warning fails the build
    with open(tmp_path / "html" / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", lambda base, uri: uri)
    documented = {
        name for kind, names in inventory.items() if kind.startswith("py:") for name in names
    }
    by_last = {}
    for name in documented:
        by_last.setdefault(name.rpartition(".")[2], []).append(name)

    def covered(path, obj):
        if path in documented:
            return True
        if inspect.ismodule(obj):
            return obj.__name__ in documented
        # a re-export: documented once, under another public path of the same object
        same = by_last.get(path.rpartition(".")[2], [])
        return any(_lookup(name) is obj for name in same)

    missing = sorted(p for p, obj in _public_paths().items() if not covered(p, obj))
    assert not missing, f"public names without a page in the API reference: {missing}"
    assert build.returncode == 0, build.stderr[-6000:]


def _lookup(dotted):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
