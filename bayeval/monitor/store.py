"""The checkpoint store: an append-only database of evaluation counts, one entry per checkpoint.

Training jobs append each checkpoint's counts while the monitors read them. The store is an
SQLite file (standard library; WAL journal, one transaction per append, a busy timeout) or,
where many machines write, a PostgreSQL database through SQLAlchemy (``bayeval[postgres]``).
Stores written by bayeval 0.1.0 (one HDF5 group per checkpoint) are read, read-only, and
copied into a database store by :func:`migrate`.
"""

from __future__ import annotations

import numbers
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pandas as pd

from bayeval._validate import describe_values
from bayeval.data import EvalData
from bayeval.monitor import _codec
from bayeval.monitor._backends import (
    HDF5_MAGIC,
    NotADatabase,
    SQLAlchemyBackend,
    SQLiteBackend,
    StoreBusy,
)
from bayeval.monitor._hdf5 import HDF5Store

__all__ = ["CheckpointStore", "migrate"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def _is_hdf5(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(HDF5_MAGIC)) == HDF5_MAGIC
    except OSError:
        return False


class CheckpointStore:
    """An append-only database of evaluation counts, one entry per checkpoint.

    Each :meth:`append` stores one checkpoint's :class:`~bayeval.EvalData` in one transaction:
    a row for the checkpoint (its label under a unique key, its arrival number, its time) and
    one row per ``(system, task)`` cell with the cell's successes, trials and attempts and its
    other counts (status counts, scores, latencies, covariate sums), so a checkpoint is
    stored whole or not at all and comes back exactly as it went in. Nothing already stored
    is rewritten, and a label already stored is refused. Appends from many processes at once
    are safe: SQLite takes them one at a time (each waits up to ``timeout`` seconds for the
    write lock, then fails with :class:`TimeoutError`), PostgreSQL in parallel; readers never
    wait. Arrival order is an integer sequence.

    Labels: a checkpoint's label is a str or an int. System and task labels, every other
    coordinate (cluster, stratum, harness, ...) and every attribute value must be a str,
    int, float, bool or None (numpy scalars are stored as the Python scalar of the same
    value) or an array of them; anything else (a tuple task id, bytes, a timestamp) is
    refused by :meth:`append` with a :class:`TypeError` before anything is written.

    Parameters
    ----------
    path : str or os.PathLike
        Where the store lives: a file path or ``sqlite:///path`` (an SQLite file, created by
        the first :meth:`append`), or a PostgreSQL URL ``postgresql+psycopg://user@host/db``
        (needs ``bayeval[postgres]``; the tables ``bayeval_store``, ``bayeval_checkpoints``
        and ``bayeval_counts`` are created there by the first append, so one database, or
        one schema through ``?options=-csearch_path%3Dname``, holds one store). An existing
        HDF5 file written by bayeval 0.1.0 opens read-only; copy it with :func:`migrate`.
    timeout : float, default 60
        Seconds a write waits for the SQLite write lock (or a PostgreSQL connection).

    Examples
    --------
    >>> import os, tempfile, bayeval as be
    >>> from bayeval.monitor import CheckpointStore
    >>> store = CheckpointStore(os.path.join(tempfile.mkdtemp(), "run.db"))
    >>> store.append("step-1000", be.from_counts([[3, 5]], trials=5, systems=["ckpt"]))
    >>> store.append("step-2000", be.from_counts([[4, 5]], trials=5, systems=["ckpt"]))
    >>> store.checkpoints()
    ['step-1000', 'step-2000']
    >>> int(store.load("step-2000").dataset["successes"].sum())
    9
    >>> store.arrivals()["arrival"].tolist()   # the integer arrival order
    [1, 2]
    """

    def __init__(self, path, *, timeout: float = 60.0):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                f"path must be a file path or a database URL; got {type(path).__name__}"
            )
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}")
        self._open(os.fspath(path), float(timeout))

    def _open(self, path: str, timeout: float) -> None:
        self.path: str = path
        self.timeout: float = timeout
        self._backend: SQLiteBackend | SQLAlchemyBackend | None = None
        self._file: str | None = path
        if _URL.match(path):
            if path.startswith("sqlite:///"):
                self._file = path[len("sqlite:///") :]
            elif path.startswith("sqlite:"):
                raise ValueError(
                    "an SQLite store URL is sqlite:///relative/path or sqlite:////absolute/path; "
                    f"got {path!r}"
                )
            else:
                self._file = None
                self._backend = SQLAlchemyBackend(path, timeout)

    # -- which database ----------------------------------------------------------------------
    def _store(self) -> SQLiteBackend | SQLAlchemyBackend | HDF5Store:
        if self._backend is not None:
            return self._backend
        assert self._file is not None
        if _is_hdf5(self._file):
            return HDF5Store(self._file)
        backend = SQLiteBackend(self._file, self.timeout)
        if os.path.exists(self._file):  # a file not yet written may still turn out HDF5
            self._backend = backend
        return backend

    def _errors(self, backend, action: str):
        return _Errors(backend.where, action, self.timeout)

    @property
    def where(self) -> str:
        """The store's file, or its URL without the password."""
        return self._store().where

    # -- reading -----------------------------------------------------------------------------
    def checkpoints(self) -> list:
        """The stored checkpoint labels, in arrival order."""
        store = self._store()
        if isinstance(store, HDF5Store):
            return [label for _, label in store.labels()]
        with self._errors(store, "reading"), store.reading() as conn:
            if conn is None:
                return []
            rows = conn.rows("SELECT label FROM bayeval_checkpoints ORDER BY seq")
        return [_codec.label_from_key(key) for (key,) in rows]

    def __len__(self) -> int:
        """The number of stored checkpoints."""
        store = self._store()
        if isinstance(store, HDF5Store):
            return len(store.labels())
        with self._errors(store, "reading"), store.reading() as conn:
            if conn is None:
                return 0
            return int(conn.rows("SELECT COUNT(*) FROM bayeval_checkpoints")[0][0])

    def __contains__(self, checkpoint) -> bool:
        """Whether a checkpoint labelled ``checkpoint`` is stored."""
        if not _is_label(checkpoint):
            return False
        store = self._store()
        if isinstance(store, HDF5Store):
            return checkpoint in [label for _, label in store.labels()]
        with self._errors(store, "reading"), store.reading() as conn:
            if conn is None:
                return False
            found = conn.rows(
                "SELECT 1 FROM bayeval_checkpoints WHERE label = :label",
                {"label": _codec.label_key(checkpoint)},
            )
        return bool(found)

    def load(self, checkpoint) -> EvalData:
        """One checkpoint's counts as :class:`~bayeval.EvalData`, exactly as appended."""
        store = self._store()

        def missing() -> KeyError:
            return KeyError(
                f"checkpoint {checkpoint!r} is not in {store.where}; stored: "
                f"{describe_values(self.checkpoints())}"
            )

        if not _is_label(checkpoint):
            raise missing()
        if isinstance(store, HDF5Store):
            for group, label in store.labels():
                if label == checkpoint:
                    return store.load(group)
            raise missing()
        with self._errors(store, "reading"), store.reading() as conn:
            if conn is None:
                raise missing()
            found = conn.rows(
                "SELECT seq, layout FROM bayeval_checkpoints WHERE label = :label",
                {"label": _codec.label_key(checkpoint)},
            )
            if not found:
                raise missing()
            seq, layout = found[0]
            rows = conn.rows(
                "SELECT successes, trials, attempts, cell FROM bayeval_counts "
                "WHERE seq = :seq ORDER BY system_pos, task_pos",
                {"seq": seq},
            )
        return _codec.decode(layout, rows, f"checkpoint {checkpoint!r} of {store.where}")

    def __iter__(self) -> Iterator[tuple[object, EvalData]]:
        """``(label, EvalData)`` in arrival order."""
        for label in self.checkpoints():
            yield label, self.load(label)

    def arrivals(self) -> pd.DataFrame:
        """One row per checkpoint in arrival order: ``checkpoint``, ``arrival``, ``arrived_at``.

        ``arrival`` is the store's integer arrival number (increasing, not necessarily
        consecutive); ``arrived_at`` the UTC time of the append (ISO 8601 text).
        """
        store = self._store()
        columns = ["checkpoint", "arrival", "arrived_at"]
        if isinstance(store, HDF5Store):
            rows = [
                (label, int(group.split("_")[1]), arrived)
                for group, label, arrived in store.groups()
                if label is not None
            ]
            return pd.DataFrame(rows, columns=columns)
        with self._errors(store, "reading"), store.reading() as conn:
            found = (
                conn.rows("SELECT label, seq, arrived_at FROM bayeval_checkpoints ORDER BY seq")
                if conn is not None
                else []
            )
        rows = [(_codec.label_from_key(key), int(seq), at) for key, seq, at in found]
        return pd.DataFrame(rows, columns=columns)

    # -- writing -----------------------------------------------------------------------------
    def append(self, checkpoint, data) -> None:
        """Store one checkpoint's counts in one transaction; refuse a label already stored.

        Parameters
        ----------
        checkpoint : str or int
            The checkpoint's label (a training step, a run name).
        data : EvalData
            Its counts; labels and coordinates must be of the types the class lists.
        """
        self._append(checkpoint, data, arrived_at=None)

    def _append(self, checkpoint, data, *, arrived_at: str | None) -> None:
        store = self._store()
        if not _is_label(checkpoint):
            raise TypeError(
                f"checkpoint must be a str or int label; got {checkpoint!r} (for {store.where})"
            )
        if not isinstance(data, EvalData):
            raise TypeError(
                f"data must be an EvalData (from be.from_frame / be.from_counts); "
                f"got {type(data).__name__} (for checkpoint {checkpoint!r} of {store.where})"
            )
        if isinstance(store, HDF5Store):
            raise ValueError(
                f"{store.where} is a checkpoint store in the HDF5 format of bayeval 0.1.0, "
                "read-only now: copy it into a database store with "
                f"bayeval.monitor.migrate({store.where!r}, 'new.db') and append there"
            )
        checkpoint = checkpoint if isinstance(checkpoint, str) else int(checkpoint)
        what = f"checkpoint {checkpoint!r} for {store.where}"
        layout, rows = _codec.encode(data, what)  # refuses what cannot come back, writes nothing
        key = _codec.label_key(checkpoint)
        with self._errors(store, f"appending checkpoint {checkpoint!r} to"):
            with store.writing() as conn:
                seq = conn.rows(
                    "INSERT INTO bayeval_checkpoints (label, arrived_at, layout) "
                    "VALUES (:label, :arrived_at, :layout) "
                    "ON CONFLICT (label) DO NOTHING RETURNING seq",
                    {
                        "label": key,
                        "arrived_at": arrived_at or datetime.now(UTC).isoformat(),
                        "layout": layout,
                    },
                )
                if not seq:
                    (when,) = conn.rows(
                        "SELECT arrived_at FROM bayeval_checkpoints WHERE label = :label",
                        {"label": key},
                    )[0]
                    raise ValueError(
                        f"checkpoint {checkpoint!r} is already in {store.where} (appended at "
                        f"{when}); the store is append-only: give the new counts a new label"
                    )
                for row in rows:
                    row["seq"] = seq[0][0]
                conn.many(
                    "INSERT INTO bayeval_counts (seq, system_pos, task_pos, system, task, "
                    "successes, trials, attempts, cell) VALUES (:seq, :system_pos, :task_pos, "
                    ":system, :task, :successes, :trials, :attempts, :cell)",
                    rows,
                )

    def close(self) -> None:
        """Close the connections this process keeps (PostgreSQL's pool; SQLite keeps none)."""
        store = self._store()
        if not isinstance(store, HDF5Store):
            with self._errors(store, "closing"):
                store.close()

    def __enter__(self) -> CheckpointStore:
        """The store itself; :meth:`close` on leaving."""
        return self

    def __exit__(self, *exc) -> None:
        """Close the connections this process keeps."""
        self.close()

    def __getstate__(self) -> dict:
        """Path and timeout only: a copy in another process opens its own connections."""
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: dict) -> None:
        """Reopen from path and timeout."""
        self._open(state["path"], state["timeout"])

    def __repr__(self) -> str:
        """The store's location and the number of checkpoints it holds."""
        return f"CheckpointStore({self.where!r}, {len(self)} checkpoint(s))"


def _is_label(checkpoint) -> bool:
    return isinstance(checkpoint, (str, numbers.Integral)) and not isinstance(checkpoint, bool)


class _Errors:
    """Database errors re-raised with the store's location in their message."""

    def __init__(self, where: str, action: str, timeout: float):
        self.where, self.action, self.timeout = where, action, timeout

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, err, tb) -> None:
        if err is None:
            return
        if isinstance(err, StoreBusy):
            raise TimeoutError(
                f"{self.action} {self.where}: other writers held the store for more than "
                f"{self.timeout:g} s ({err}); retry, or give CheckpointStore a longer timeout="
            ) from err
        if isinstance(err, NotADatabase):
            raise ValueError(
                f"{self.where} is neither a checkpoint store (an SQLite database) nor an HDF5 "
                f"store of bayeval 0.1.0 ({err})"
            ) from err
        if isinstance(err, Exception) and self.where not in str(err):
            err.add_note(f"while {self.action} the checkpoint store {self.where}")


def migrate(source, destination, *, timeout: float = 60.0) -> pd.DataFrame:
    """Copy a checkpoint store of bayeval 0.1.0 (HDF5) into a new database store.

    Every labelled checkpoint is appended to ``destination`` in the source's arrival order,
    with its original arrival time; a group that a failed append of that version left
    without a label, or that cannot be read back, is left out and reported.

    Parameters
    ----------
    source : str or os.PathLike
        The HDF5 store (read, never written).
    destination : str or os.PathLike
        A new store's path or URL (see :class:`CheckpointStore`); it must hold no checkpoint.
    timeout : float, default 60

    Returns
    -------
    pandas.DataFrame
        One row per group of the source: ``group``, ``checkpoint`` (None when unlabelled),
        ``copied`` (bool) and ``reason`` (why not, else empty).

    Examples
    --------
    >>> import os, tempfile, bayeval as be
    >>> from bayeval.monitor import CheckpointStore, migrate
    >>> folder = tempfile.mkdtemp()
    >>> old = be.from_counts([[3, 5]], trials=5).dataset.assign_attrs(checkpoint='"step-1"')
    >>> old.to_netcdf(os.path.join(folder, "old.nc"), group="checkpoint_000000",
    ...               engine="h5netcdf")   # one checkpoint as bayeval 0.1.0 stored it
    >>> table = migrate(os.path.join(folder, "old.nc"), os.path.join(folder, "new.db"))
    >>> table["copied"].tolist(), CheckpointStore(os.path.join(folder, "new.db")).checkpoints()
    ([True], ['step-1'])
    """
    source = os.fspath(source)
    if not _is_hdf5(source):
        raise ValueError(
            f"source must be an HDF5 checkpoint store of bayeval 0.1.0; {source} is not"
        )
    old = HDF5Store(source)
    new = CheckpointStore(destination, timeout=timeout)
    if len(new):
        raise ValueError(
            f"destination {new.where} already holds {len(new)} checkpoint(s); migrate into a "
            "new store"
        )
    rows: list[tuple] = []
    for group, label, arrived in old.groups():
        if label is None:
            rows.append((group, None, False, "no label: an append that failed halfway"))
            continue
        try:
            data = old.load(group)
        except ValueError as err:
            rows.append((group, label, False, str(err)))
            continue
        new._append(label, data, arrived_at=arrived)
        rows.append((group, label, True, ""))
    return pd.DataFrame(rows, columns=["group", "checkpoint", "copied", "reason"])
