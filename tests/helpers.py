"""Paths and loaders the tests share (``tests.helpers``; the fixtures live in conftest)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` (not a package) as a module, for tests of its parts."""
    spec = importlib.util.spec_from_file_location(
        f"_benchmark_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
