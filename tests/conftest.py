"""Shared fixtures: small hand-made frames and the bundled datasets; the benchmark loader."""

import numpy as np
import pandas as pd
import pytest

import bayeval as be
from tests.helpers import ROOT, load_benchmark  # noqa: F401  (re-exported for old imports)


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
