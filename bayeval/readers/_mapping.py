"""What a reader mapped: rows per raw category and the bayeval status each became."""

from __future__ import annotations

import json

import pandas as pd

from bayeval.data import EvalData
from bayeval.readers._common import MAPPING_ATTR

__all__ = ["mapping", "mapping_report"]


def mapping(data: EvalData) -> pd.DataFrame:
    """Rows read per system and raw category, and the bayeval status each became.

    Parameters
    ----------
    data : EvalData
        Data returned by a reader of :mod:`bayeval.readers` (tables built by
        :func:`bayeval.from_frame` directly carry no mapping).

    Returns
    -------
    pandas.DataFrame
        Columns ``system``, ``raw`` (the source's category; ``(outcome)`` for a row with a plain
        pass/fail outcome and no category), ``status`` (the bayeval status) and ``count``. Cells
        of the ``(system, task)`` grid that a source never mentions appear in
        ``data.status_counts`` as ``not_run`` but not here: this table counts what was read.
        (Cells of tasks a system was not planned for are empty, neither here nor ``not_run``;
        :func:`mapping_report` notes them.)

    Raises
    ------
    ValueError
        When ``data`` was not made by a reader.

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "agent.json"
    >>> _ = path.write_text(json.dumps({"resolved_ids": ["a__b-1"], "unresolved_ids": [],
    ...                                 "error_ids": ["a__b-2"]}))
    >>> br.mapping(br.read(path, missing="fail"))[["raw", "status", "count"]].values.tolist()
    [['resolved', 'ok', 1], ['error', 'error', 1]]
    """
    payload = _payload(data)
    return pd.DataFrame(payload["rows"], columns=["system", "raw", "status", "count"])


def mapping_report(data: EvalData) -> str:
    """What a reader mapped, as text: ``raw: n -> status`` per system, then the reader's notes.

    Parameters
    ----------
    data : EvalData
        Data returned by a reader of :mod:`bayeval.readers`.

    Returns
    -------
    str

    Examples
    --------
    >>> import json, tempfile, pathlib, bayeval.readers as br
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "agent.json"
    >>> _ = path.write_text(json.dumps({"resolved_ids": ["a__b-1"], "unresolved_ids": [],
    ...                                 "error_ids": ["a__b-2"]}))
    >>> print(br.mapping_report(br.read(path, missing="fail")))
    read_swebench mapped (rows read per raw category -> bayeval status):
      agent: resolved: 1 -> ok, error: 1 -> error
    """
    payload = _payload(data)
    lines = [f"{payload['reader']} mapped (rows read per raw category -> bayeval status):"]
    by_system: dict[str, list[str]] = {}
    for system, raw, status, count in payload["rows"]:
        by_system.setdefault(system, []).append(f"{raw}: {count} -> {status}")
    lines += [f"  {system}: {', '.join(items)}" for system, items in by_system.items()]
    lines += [f"  note: {note}" for note in payload.get("notes", [])]
    return "\n".join(lines)


def _payload(data: EvalData) -> dict:
    if not isinstance(data, EvalData):
        raise TypeError(f"mapping: expected an EvalData; got {type(data).__name__}")
    text = data.dataset.attrs.get(MAPPING_ATTR)
    if text is None:
        raise ValueError(
            "mapping: this EvalData was not made by a bayeval reader (it records no "
            "mapping of raw categories to statuses)"
        )
    return json.loads(text)
