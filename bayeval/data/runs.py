"""Training runs (``from_frame(..., run=)``): one system per ``(recipe, run)`` checkpoint.

Each ``(system, run)`` pair of a table becomes one system labelled ``"{recipe}/{run}"``, with
coordinates ``recipe`` and ``run`` on ``system`` that the run-level models read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayeval.data.columns import _check_columns, _check_not_missing
from bayeval.data.evaldata import EvalData
from bayeval.data.labels import _check_labels, _label_key

#: The column that carries the checkpoint labels into :func:`bayeval.from_frame`.
_CHECKPOINT = "__bayeval_checkpoint__"


def _checkpoint_labels(df: pd.DataFrame, system, run) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's checkpoint label ``"{recipe}/{run}"`` (one per pair), recipe and run."""
    if system is None:
        raise TypeError("run= needs system=, the column of the recipe each run belongs to")
    _check_columns(df, {"system": system, "run": run})
    if _CHECKPOINT in df.columns:
        raise ValueError(f"column name {_CHECKPOINT!r} is reserved")
    for column in (system, run):
        _check_not_missing(df, column)
        _check_labels(df[column], f"column {column!r}", df.index, noun=column)
    recipes, runs = df[system].to_numpy(dtype=object), df[run].to_numpy(dtype=object)
    labels = np.array([f"{a}/{b}" for a, b in zip(recipes, runs, strict=True)], dtype=object)
    pairs = pd.DataFrame(
        {
            "label": labels,
            "recipe": [_label_key(v) for v in recipes],
            "run": [_label_key(v) for v in runs],
        }
    ).drop_duplicates()
    clash = pairs["label"].duplicated(keep=False)
    if clash.any():
        raise ValueError(
            f"columns {system!r} and {run!r} give the same checkpoint label "
            f"{pairs['label'][clash].iloc[0]!r} to different (recipe, run) pairs; "
            "rename recipes or runs so that '{recipe}/{run}' is unique"
        )
    return labels, recipes, runs


def _with_run_coords(data: EvalData, labels, recipes, runs, run) -> EvalData:
    """The checkpoints' data with each system's ``recipe`` and ``run`` as coordinates."""
    first: dict = {}
    for label, recipe, seed in zip(labels, recipes, runs, strict=True):
        first.setdefault(label, (recipe, seed))
    order = data.dataset["system"].values
    ds = data.dataset.assign_coords(
        recipe=("system", np.array([first[v][0] for v in order], dtype=object)),
        run=("system", np.array([first[v][1] for v in order], dtype=object)),
    )
    ds.attrs["run_column"] = str(run)
    return EvalData(ds)
