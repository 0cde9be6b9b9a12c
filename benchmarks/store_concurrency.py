"""The checkpoint store under concurrent writers, killed writers and growth: new against old.

``new``: :class:`bayeval.monitor.CheckpointStore` (SQLite; and PostgreSQL when
``--postgres URL`` or ``BAYEVAL_TEST_POSTGRES_URL`` names a database). ``old``: the HDF5 store
of bayeval 0.1.0, its code copied below verbatim (``LegacyStore``), run in the same process
on the same machine.

1. Concurrency: 8 processes append 50 checkpoints each at once. *Survived*: appends whose
   checkpoint is in the store afterwards and loads back with the writer's numbers;
   *refused*: appends that raised (by exception type); *lost*: appends that returned but
   whose checkpoint is missing or holds another writer's numbers.
2. SIGKILL: one process appends checkpoints of 10 x 300 cells in a loop and is killed at a
   random time (5 times per store, from a seeded generator). After each kill: can the store
   still be read and appended to, and is every checkpoint whose append had returned still
   there (the one in flight may or may not be)?
3. Growth: the median time of 5 appends of a 2 x 50-cell checkpoint to a store already
   holding 10, 100, 1,000 (and 10,000) checkpoints. Stores are filled quickly beforehand:
   the new one in one transaction with the store's own encoding and statements, the old one
   in one opening of the file by the same xarray writer, without the old append's scan of
   every group; only the timed appends go through each store's ``append``.

Run: ``python benchmarks/store_concurrency.py [--full] [--postgres URL]``; ``--full`` adds
the old store (and PostgreSQL) at 10,000 checkpoints (filling them takes minutes). Writes
``benchmarks/results/store_concurrency.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import signal
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Literal

import numpy as np

import bayeval as be
from bayeval.monitor import CheckpointStore, _backends, _codec

CTX = multiprocessing.get_context("forkserver")
WRITERS, APPENDS, KILLS = 8, 50, 5
RESULTS = os.path.join(os.path.dirname(__file__), "results", "store_concurrency.md")


# -- bayeval 0.1.0's store, verbatim (bayeval/monitor.py at commit fa1df40) -------------------
_GROUP = "checkpoint_{:06d}"


class LegacyStore:
    def __init__(self, path):
        self.path = os.fspath(path)

    def _index(self) -> list[tuple[str, object]]:
        if not os.path.exists(self.path):
            return []
        import h5netcdf

        with h5netcdf.File(self.path, "r") as f:
            names = sorted(n for n in f.groups if n.startswith("checkpoint_"))
            return [(n, json.loads(f.groups[n].attrs["checkpoint"])) for n in names]

    def checkpoints(self) -> list:
        return [label for _, label in self._index()]

    def append(self, checkpoint, data) -> None:
        checkpoint = checkpoint if isinstance(checkpoint, str) else int(checkpoint)
        index = self._index()
        if checkpoint in [label for _, label in index]:
            raise ValueError(
                f"checkpoint {checkpoint!r} is already in {self.path}; the store "
                "is append-only: give the new counts a new label"
            )
        ds = data.dataset.copy()
        ds.attrs = {
            **ds.attrs,
            "checkpoint": json.dumps(checkpoint),
            "arrived_at": datetime.now(UTC).isoformat(),
        }
        mode: Literal["a", "w"] = "a" if os.path.exists(self.path) else "w"
        ds.to_netcdf(self.path, mode=mode, group=_GROUP.format(len(index)), engine="h5netcdf")

    def load(self, checkpoint):
        import xarray as xr

        for name, label in self._index():
            if label == checkpoint:
                with xr.open_dataset(self.path, group=name, engine="h5netcdf") as ds:
                    ds = ds.load()
                ds.attrs = {
                    k: v for k, v in ds.attrs.items() if k not in ("checkpoint", "arrived_at")
                }
                return be.EvalData(ds)
        raise KeyError(f"checkpoint {checkpoint!r} is not in {self.path}")


def open_store(kind: str, where: str):
    return LegacyStore(where) if kind == "old" else CheckpointStore(where)


# -- 1. concurrency ----------------------------------------------------------------------------
def counts(writer: int, j: int):
    return be.from_counts(
        [[writer % 4, j % 6, (writer + j) % 3]],
        trials=6,
        systems=[f"w{writer}"],
        tasks=[f"t{j}", "u", "v"],
    )


def writer(kind, where, w, n, barrier, out):
    store = open_store(kind, where)
    data = [counts(w, j) for j in range(n)]
    barrier.wait()
    returned, refused = [], Counter()
    for j in range(n):
        try:
            store.append(f"w{w}-{j:03d}", data[j])
            returned.append(j)
        except Exception as err:  # the refusals are what is counted
            refused[type(err).__name__] += 1
    out.put((w, returned, dict(refused)))


def stored_successes(kind: str, where: str) -> dict:
    """The successes of each checkpoint the store gives back, by label."""
    if kind == "new":
        return {
            label: data.dataset["successes"].values.tolist()
            for label, data in CheckpointStore(where)
        }
    import xarray as xr

    try:
        index = LegacyStore(where)._index()  # one scan, not one per checkpoint
    except Exception:  # the old store raised on every call after a bad group: unreachable
        return {}
    out = {}
    for name, label in index:
        try:
            with xr.open_dataset(where, group=name, engine="h5netcdf") as ds:
                out[label] = ds["successes"].values.tolist()
        except Exception:  # an unreadable group
            pass
    return out


def concurrency(kind: str, where: str) -> dict:
    barrier, out = CTX.Barrier(WRITERS), CTX.Queue()
    procs = [
        CTX.Process(target=writer, args=(kind, where, w, APPENDS, barrier, out))
        for w in range(WRITERS)
    ]
    start = time.perf_counter()
    for p in procs:
        p.start()
    results = [out.get(timeout=1800) for _ in procs]
    for p in procs:
        p.join()
    seconds = time.perf_counter() - start
    refused: Counter = Counter()
    survived = lost = 0
    stored = stored_successes(kind, where)
    for w, returned, errors in results:
        refused.update(errors)
        for j in returned:
            ok = stored.get(f"w{w}-{j:03d}") == [[w % 4, j % 6, (w + j) % 3]]
            survived += ok
            lost += not ok
    return {"survived": survived, "refused": refused, "lost": lost, "seconds": seconds}


# -- 2. SIGKILL --------------------------------------------------------------------------------
def big(j: int):
    rng = np.random.default_rng(j)
    return be.from_counts(rng.integers(0, 6, (10, 300)), trials=5)


def looping_writer(kind, where, log):
    store = open_store(kind, where)
    j = 0
    while True:
        store.append(f"k{j}", big(j))
        with open(log, "a") as f:  # after the append returned
            f.write(f"k{j}\n")
            f.flush()
            os.fsync(f.fileno())
        j += 1


def kill_trial(kind: str, where: str, delay: float, folder: str) -> dict:
    log = os.path.join(folder, f"log-{uuid.uuid4().hex}")
    open(log, "w").close()
    p = CTX.Process(target=looping_writer, args=(kind, where, log))
    p.start()
    time.sleep(delay)
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    with open(log) as f:
        returned = f.read().split()
    store = open_store(kind, where)
    try:
        stored = store.checkpoints()
        readable = True
    except Exception:
        stored, readable = [], False
    kept = sum(label in stored for label in returned)
    loadable = True
    for label in returned[-2:]:
        try:
            store.load(label)
        except Exception:
            loadable = False
    try:
        store.append(f"after-{uuid.uuid4().hex[:6]}", counts(0, 0))
        appendable = True
    except Exception:
        appendable = False
    return {
        "returned": len(returned),
        "kept": kept,
        "readable": readable and loadable,
        "appendable": appendable,
    }


def kills(kind: str, make_where, folder: str) -> dict:
    rng = np.random.default_rng(7)
    trials = []
    for _ in range(KILLS):
        where = make_where()
        # after the first appends (the first creates the store), at a random moment
        trials.append(kill_trial(kind, where, float(rng.uniform(2, 6)), folder))
    return {
        "trials": len(trials),
        "usable": sum(t["readable"] and t["appendable"] for t in trials),
        "returned": sum(t["returned"] for t in trials),
        "kept": sum(t["kept"] for t in trials),
    }


# -- 3. growth ---------------------------------------------------------------------------------
def filler():
    return be.from_counts(
        np.arange(100).reshape(2, 50) % 4, trials=4, systems=["a", "b"], tasks=range(50)
    )


def fill_new(where: str, n: int) -> None:
    """Fill a store with n checkpoints in one transaction, with its own encoding and SQL."""
    store = CheckpointStore(where)
    store.append("seed", filler())
    backend = store._store()
    assert isinstance(backend, _backends.SQLiteBackend | _backends.SQLAlchemyBackend)
    layout, rows = _codec.encode(filler(), "filler")
    with backend.writing() as conn:
        for i in range(n - 1):
            (seq,) = conn.rows(
                "INSERT INTO bayeval_checkpoints (label, arrived_at, layout) "
                "VALUES (:label, :at, :layout) RETURNING seq",
                {"label": _codec.label_key(f"f{i}"), "at": "-", "layout": layout},
            )[0]
            conn.many(
                "INSERT INTO bayeval_counts (seq, system_pos, task_pos, system, task, "
                "successes, trials, attempts, cell) VALUES (:seq, :system_pos, :task_pos, "
                ":system, :task, :successes, :trials, :attempts, :cell)",
                [{**row, "seq": seq} for row in rows],
            )


def fill_old(path: str, n: int) -> None:
    """Fill an old store with n groups as its append wrote them, in one opening of the file.

    The old append opened the file and scanned every group each time; the groups are written
    here by the same xarray writer, without that scan.
    """
    import h5netcdf
    from xarray.backends import H5NetCDFStore

    ds = filler().dataset.copy()
    with h5netcdf.File(path, "w") as f:
        for i in range(n):
            ds.attrs = {**ds.attrs, "checkpoint": json.dumps(f"f{i}"), "arrived_at": "-"}
            ds.dump_to_store(H5NetCDFStore(f.create_group(_GROUP.format(i)), mode="a"))


def append_times(kind: str, where: str, repeat: int = 5) -> float:
    store = open_store(kind, where)
    data = filler()
    times = []
    for i in range(repeat):
        start = time.perf_counter()
        store.append(f"timed-{i}", data)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- the run -----------------------------------------------------------------------------------
def fmt_refused(refused: Counter) -> str:
    return ", ".join(f"{n} {name}" for name, n in refused.most_common()) or "0"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="old and PostgreSQL at 10,000 too")
    parser.add_argument("--postgres", default=os.environ.get("BAYEVAL_TEST_POSTGRES_URL"))
    args = parser.parse_args()
    CTX.set_forkserver_preload(["bayeval.monitor", "h5netcdf", "xarray"])
    folder = tempfile.mkdtemp(prefix="store-bench-")
    schemas: list[str] = []

    def where_for(kind: str) -> str:
        if kind == "old":
            return os.path.join(folder, f"{uuid.uuid4().hex}.nc")
        if kind == "new (SQLite)":
            return os.path.join(folder, f"{uuid.uuid4().hex}.db")
        import sqlalchemy as sa  # deferred: only with --postgres

        schema = f"bench_{uuid.uuid4().hex[:10]}"
        engine = sa.create_engine(args.postgres)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
        engine.dispose()
        schemas.append(schema)
        url = sa.engine.make_url(args.postgres).update_query_dict(
            {"options": f"-csearch_path={schema}"}
        )
        return url.render_as_string(hide_password=False)

    kinds = ["new (SQLite)"] + (["new (PostgreSQL)"] if args.postgres else []) + ["old"]
    code = {"new (SQLite)": "new", "new (PostgreSQL)": "new", "old": "old"}
    out = [
        "# Checkpoint store: concurrency, killed writers, growth",
        "",
        f"`python benchmarks/store_concurrency.py{' --full' if args.full else ''}` on "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, load average {os.getloadavg()[0]:.1f} at the start "
        "(times are wall clock on a shared machine); new = `bayeval.monitor.CheckpointStore`, "
        "old = the HDF5 store of bayeval 0.1.0 (`LegacyStore`), same run, same machine.",
        "",
        f"## {WRITERS} processes x {APPENDS} appends at once",
        "",
        "| store | survived | refused | lost or unreachable | seconds |",
        "|---|---:|---|---:|---:|",
    ]
    for kind in kinds:
        r = concurrency(code[kind], where_for(kind))
        line = (
            f"| {kind} | {r['survived']} / {WRITERS * APPENDS} | {fmt_refused(r['refused'])} | "
            f"{r['lost']} | {r['seconds']:.1f} |"
        )
        print(line, flush=True)
        out.append(line)
    out += [
        "",
        f"## A writer killed with SIGKILL at a random time ({KILLS} kills per store)",
        "",
        "| store | store still readable and appendable | appends that had returned | "
        "of them still stored |",
        "|---|---:|---:|---:|",
    ]
    for kind in kinds:
        r = kills(code[kind], lambda kind=kind: where_for(kind), folder)
        line = (
            f"| {kind} | {r['usable']} / {r['trials']} | {r['returned']} | "
            f"{r['kept']} / {r['returned']} |"
        )
        print(line, flush=True)
        out.append(line)
    sizes = [10, 100, 1000, 10_000]
    out += [
        "",
        "## Median time of one append (2 x 50 cells) by checkpoints already stored",
        "",
        "| checkpoints stored | " + " | ".join(kinds) + " | old / new (SQLite) |",
        "|---:|" + "---:|" * (len(kinds) + 1),
    ]
    for n in sizes:
        cells, seconds = [], {}
        for kind in kinds:
            if kind != "new (SQLite)" and n > 1000 and not args.full:
                cells.append("not run (--full)")
                continue
            where = where_for(kind)
            if kind == "old":
                fill_old(where, n)
            else:
                fill_new(where, n)
            seconds[kind] = append_times(code[kind], where)
            cells.append(f"{seconds[kind] * 1e3:.1f} ms")
        ratio = f"{seconds['old'] / seconds['new (SQLite)']:.1f}x" if "old" in seconds else "-"
        line = f"| {n:,} | " + " | ".join(cells) + f" | {ratio} |"
        print(line, flush=True)
        out.append(line)
    out += [
        "",
        "Survived: in the store afterwards with the writer's own numbers; refused: the append "
        "raised; lost or unreachable: the append returned but its checkpoint is missing, "
        "holds other numbers, or cannot be read back (the old store raised on every call once "
        "a group had no label). SQLite appends commit with `synchronous=FULL` (an fsync per "
        "append); the old store never synced.",
    ]
    with open(RESULTS, "w") as f:
        f.write("\n".join(out) + "\n")
    if schemas:
        import sqlalchemy as sa  # deferred: only with --postgres

        engine = sa.create_engine(args.postgres)
        with engine.begin() as conn:
            for schema in schemas:
                conn.exec_driver_sql(f"DROP SCHEMA {schema} CASCADE")
        engine.dispose()
    shutil.rmtree(folder, ignore_errors=True)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
