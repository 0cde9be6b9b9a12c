"""An EvalData as database rows and back, exactly: one row per ``(system, task)`` cell.

A checkpoint is stored as a *layout* (one JSON text: dims, coordinates, attributes, and each
variable's dims and dtype) and one row per ``(system, task)`` cell holding the cell's
``successes``, ``trials`` and ``attempts`` as integer columns and every other per-cell value
(status counts, scores, latencies, ...) as a JSON list. Values are written as JSON, so what
comes back is what went in: dtypes, NaN, -0.0, strings with any character (NUL included).

Labels (system, task, every coordinate) and attribute values must be str, int, float, bool or
None (numpy scalars count as the Python scalar of the same value, and come back as it);
anything else (a tuple, bytes, a timestamp) is refused before anything is written.
"""

from __future__ import annotations

import json
import numbers

import numpy as np
import xarray as xr

from bayeval.data import EvalData

#: The integer columns of a count row; other per-cell values go into its ``cell`` JSON.
COLUMNS = ("successes", "trials", "attempts")
LABEL_TYPES = "str, int, float, bool or None"
_FIXED_KINDS = "iufbU"  # numpy kinds whose .tolist() gives JSON scalars that come back exactly
_CELL = ("system", "task")


# ensure_ascii: NUL and every other character become escapes, so TEXT columns hold them
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode


def label_key(label) -> str:
    """The canonical text of a checkpoint label (a str or a non-bool integer)."""
    return _dumps(label if isinstance(label, str) else int(label))


def label_from_key(key: str):
    """The checkpoint label a :func:`label_key` text stands for."""
    return json.loads(key)


def _scalar(value, what: str):
    if value is None or isinstance(value, (bool, str)):
        return value if not isinstance(value, np.str_) else str(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(
        f"{what} holds {value!r}, a {type(value).__name__}; the store keeps labels that are "
        f"{LABEL_TYPES}, so that they come back exactly: make it one of those (e.g. join a "
        "tuple's parts into one str)"
    )


def _flat(values: np.ndarray, what: str) -> list:
    """The values of an array as a flat list of JSON scalars."""
    kind = values.dtype.kind
    if kind in _FIXED_KINDS:
        return values.ravel().tolist()
    if kind == "O":
        return [_scalar(v, what) for v in values.ravel()]
    raise TypeError(
        f"{what} has dtype {values.dtype}; the store keeps integer, float, bool and string "
        f"arrays, and object arrays of {LABEL_TYPES}"
    )


def _array(values: np.ndarray, what: str) -> dict:
    return {"dtype": values.dtype.str, "shape": list(values.shape), "values": _flat(values, what)}


def _from_flat(dtype: str, shape, flat: list) -> np.ndarray:
    if dtype == "|O":
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(shape)
    return np.array(flat, dtype=np.dtype(dtype)).reshape(shape)


def _attr(value, what: str):
    if isinstance(value, np.ndarray):
        return {"ndarray": _array(value, what)}
    if isinstance(value, list):
        return [_attr(v, what) for v in value]
    return _scalar(value, what)


def _attr_back(value):
    if isinstance(value, dict):
        array = value["ndarray"]
        return _from_flat(array["dtype"], array["shape"], array["values"])
    if isinstance(value, list):
        return [_attr_back(v) for v in value]
    return value


def _attrs(attrs, what: str) -> dict:
    bad = [k for k in attrs if not isinstance(k, str)]
    if bad:
        raise TypeError(f"{what} has attribute names {bad} that are not str")
    return {k: _attr(v, f"{what}, attribute {k!r},") for k, v in attrs.items()}


def _attrs_back(attrs: dict) -> dict:
    return {k: _attr_back(v) for k, v in attrs.items()}


def encode(data: EvalData, what: str) -> tuple[str, list[dict]]:
    """``(layout, rows)`` for one EvalData; ``what`` names the checkpoint in errors.

    Each row is a dict with ``system_pos``, ``task_pos``, ``system``, ``task`` (the labels'
    JSON), the three :data:`COLUMNS` (None when that variable is not one integer per cell) and
    ``cell`` (the JSON list of the other per-cell values, in the layout's ``cells`` order).
    """
    ds = data.dataset
    n_system, n_task = ds.sizes["system"], ds.sizes["task"]
    coords = [
        [
            name,
            {
                "dims": list(var.dims),
                "array": _array(var.values, f"{what}: coordinate {name!r}"),
                "attrs": _attrs(var.attrs, f"{what}: coordinate {name!r}"),
            },
        ]
        for name, var in ds.coords.items()
    ]
    variables, cells, columns = [], [], {}
    for name, var in ds.data_vars.items():
        entry = {
            "dims": list(var.dims),
            "dtype": var.dtype.str,
            "attrs": _attrs(var.attrs, f"{what}: variable {name!r}"),
        }
        if not set(_CELL) <= set(var.dims):
            entry["store"] = "layout"
            entry["array"] = _array(var.values, f"{what}: variable {name!r}")
        else:
            rest = [d for d in var.dims if d not in _CELL]
            values = var.transpose(*_CELL, *rest).values.reshape(n_system * n_task, -1)
            if name in COLUMNS and not rest and var.dtype.kind == "i":
                entry["store"] = "column"
                columns[name] = values[:, 0].tolist()
            else:
                entry["store"] = "cell"
                flat = _flat(values, f"{what}: variable {name!r}")
                width = values.shape[1]
                cells.append([flat[i * width : (i + 1) * width] for i in range(len(values))])
        variables.append([name, entry])
    layout = {
        "dims": dict(ds.sizes),
        "coords": coords,
        "data_vars": variables,
        "attrs": _attrs(ds.attrs, f"{what}: the dataset"),
    }
    systems = [_dumps(v) for v in _flat(ds["system"].values, f"{what}: coordinate 'system'")]
    tasks = [_dumps(v) for v in _flat(ds["task"].values, f"{what}: coordinate 'task'")]
    rows = []
    for i in range(n_system * n_task):
        s, t = divmod(i, n_task)
        row = {"system_pos": s, "task_pos": t, "system": systems[s], "task": tasks[t]}
        for name in COLUMNS:
            row[name] = columns[name][i] if name in columns else None
        row["cell"] = _dumps([c[i] for c in cells])
        rows.append(row)
    return _dumps(layout), rows


def decode(layout_text: str, rows: list, what: str) -> EvalData:
    """The EvalData of a layout and its count rows.

    ``rows`` are ``(successes, trials, attempts, cell)`` in ``(system_pos, task_pos)`` order;
    ``what`` names the checkpoint in errors.
    """
    layout = json.loads(layout_text)
    sizes = layout["dims"]
    n_system, n_task = sizes["system"], sizes["task"]
    if len(rows) != n_system * n_task:
        raise ValueError(
            f"{what} has {len(rows)} count rows where its layout needs "
            f"{n_system} x {n_task}; the store is damaged"
        )
    cells = [json.loads(row[3]) for row in rows]
    coords = {}
    for name, entry in layout["coords"]:
        array = entry["array"]
        values = _from_flat(array["dtype"], array["shape"], array["values"])
        coords[name] = (entry["dims"], values, _attrs_back(entry["attrs"]))
    data_vars = {}
    at = 0
    for name, entry in layout["data_vars"]:
        dims = entry["dims"]
        if entry["store"] == "layout":
            array = entry["array"]
            values = _from_flat(array["dtype"], array["shape"], array["values"])
            data_vars[name] = (dims, values, _attrs_back(entry["attrs"]))
            continue
        rest = [d for d in dims if d not in _CELL]
        shape = [n_system, n_task, *(sizes[d] for d in rest)]
        if entry["store"] == "column":
            flat = [row[COLUMNS.index(name)] for row in rows]
        else:
            flat = [v for cell in cells for v in cell[at]]
            at += 1
        values = _from_flat(entry["dtype"], shape, flat)
        var = xr.Variable([*_CELL, *rest], values).transpose(*dims)
        data_vars[name] = (dims, var.values, _attrs_back(entry["attrs"]))
    dataset = xr.Dataset(data_vars, coords=coords, attrs=_attrs_back(layout["attrs"]))
    return EvalData(dataset)
