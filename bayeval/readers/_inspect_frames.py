"""Inspect logs read through inspect_ai's own dataframe API (``inspect_ai.analysis``).

``samples_df`` and ``evals_df`` read every log's header and sample summaries (no transcripts),
which is what :func:`bayeval.readers.read_inspect` needs; this module turns their rows into
light views with the fields the reader uses (``log.eval.task``, ``log.samples[i].scores``,
...), so the reader's rules apply unchanged. Versions of inspect_ai without the API fall back
to the reader's own parser of each log.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

__all__: list[str] = []


def frames_available() -> bool:
    """Whether the installed inspect_ai has the dataframe API."""
    try:
        # deferred: inspect_ai is an optional dependency (bayeval[inspect])
        import inspect_ai.analysis  # noqa: F401
    except ImportError:
        return False
    return True


def read_logs(files: list[Path]) -> list[tuple[Path, SimpleNamespace]]:
    """``[(file, log view), ...]`` of the logs, in the order given.

    Raises whatever inspect_ai raises for a file it cannot read; the caller then reads the
    logs one by one with its own parser, which names the file at fault.
    """
    # deferred: inspect_ai is an optional dependency (bayeval[inspect])
    from inspect_ai.analysis import evals_df, samples_df

    paths = [os.fspath(f) for f in files]
    evals = evals_df(paths, quiet=True)
    samples = samples_df(paths, quiet=True)
    by_log = {_key(log): group for log, group in samples.groupby("log", sort=False)}
    heads = {_key(row["log"]): row for _, row in evals.iterrows()}
    score_columns = [c for c in samples.columns if c.startswith("score_")]
    out = []
    for file in files:
        head = heads[_key(file)]
        ids = _sample_ids(head.get("dataset_sample_ids"))
        typed = {str(i): i for i in ids or []}  # the frames hold ids as text
        group = by_log.get(_key(file))
        rows = [] if group is None else group.to_dict("records")
        # the log's own order (its dataset's, then epochs), as inspect_ai's reader gives it
        order = {str(i): n for n, i in enumerate(ids or [])}
        rows.sort(key=lambda r: (order.get(str(r["id"]), len(order)), int(r["epoch"])))
        out.append((file, _view(head, rows, ids, typed, score_columns)))
    return out


def _key(path) -> str:
    return os.path.realpath(os.fspath(path).removeprefix("file://"))


def _view(head, rows, ids, typed, score_columns) -> SimpleNamespace:
    epochs = _value(head.get("epochs"))
    samples = [
        SimpleNamespace(
            id=typed.get(str(row["id"]), row["id"]),
            epoch=int(row["epoch"]),
            scores={
                column.removeprefix("score_"): SimpleNamespace(value=_score(row[column]))
                for column in score_columns
                if _value(row[column]) is not None
            },
            error=_value(row.get("error")) or None,  # the frames hold "" for no error
            limit=SimpleNamespace(type=row["limit"]) if _value(row.get("limit")) else None,
        )
        for row in rows
    ]
    return SimpleNamespace(
        status=_value(head.get("status")) or "success",
        eval=SimpleNamespace(
            task=head["task_name"],
            model=head["model"],
            config=SimpleNamespace(epochs=None if epochs is None else int(epochs)),
            dataset=SimpleNamespace(sample_ids=ids),
        ),
        results=SimpleNamespace(completed_samples=_value(head.get("completed_samples")) or 0),
        samples=samples,
    )


def _sample_ids(value) -> list | None:
    value = _value(value)
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, (list, tuple)) else None


def _score(value):
    """A score as the log holds it: text stays text, a whole number becomes an int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _value(value):
    """``None`` for pandas' and NumPy's missing values, the value otherwise."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
