"""Shared fixtures: small hand-made frames and the bundled datasets; the benchmark loader."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayeval as be

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark(name: str):
    """Import ``benchmarks/<name>.py`` (not a package) as a module, for tests of its parts."""
    spec = importlib.util.spec_from_file_location(
        f"_benchmark_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def outcome_rows() -> pd.DataFrame:
    """Two systems, three tasks, up to three trials, with statuses."""
    return pd.DataFrame(
        {
            "system": ["A"] * 6 + ["B"] * 5,
            "task": ["t1", "t1", "t1", "t2", "t2", "t3", "t1", "t1", "t1", "t2", "t2"],
            "trial": [0, 1, 2, 0, 1, 0, 0, 1, 2, 0, 1],
            "success": [1, 0, 1, 0, np.nan, 1, 1, 1, 1, np.nan, 0],
            "status": ["ok", "ok", "ok", "ok", "timeout", "ok", "ok", "ok", "ok", "error", "ok"],
        }
    )


@pytest.fixture(scope="session")
def swebench() -> be.EvalData:
    return be.datasets.load("swebench_verified")


@pytest.fixture(scope="session")
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)
