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


def judged_data(seed: int = 0, n_task: int = 12, trials: int = 3):
    """Judged attempts of two systems, a third labelled at random: a judge lenient on B."""
    import numpy as np
    import pandas as pd
    from scipy import special

    import bayeval as be

    rng = np.random.default_rng(seed)
    rows = [(s, f"t{j}", t) for s in "AB" for j in range(n_task) for t in range(trials)]
    df = pd.DataFrame(rows, columns=["system", "task", "trial"])
    truth = rng.random(len(df)) < special.expit(rng.normal(0.0, 1.0, len(df)))
    lenient = np.where(df["system"] == "B", 0.4, 0.1)
    df["judge"] = np.where(truth, rng.random(len(df)) < 0.9, rng.random(len(df)) < lenient)
    df["judge"] = df["judge"].astype(int)
    df["human"] = np.where(rng.random(len(df)) < 1 / 3, truth.astype(float), np.nan)
    return be.from_frame(df, judge="judge", success="human", label_design="random")
