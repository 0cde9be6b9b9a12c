"""The checkpoint store under concurrent writers, a killed writer, and a growing store."""

import multiprocessing
import os
import signal
import time
import warnings

import numpy as np

import bayeval as be
from bayeval.monitor import CheckpointStore, _backends

# workers fork from a server that imported the store once: fast, and safe while this process
# runs threads (a plain fork of a threaded process may deadlock)
CTX = multiprocessing.get_context("forkserver")
CTX.set_forkserver_preload(["bayeval.monitor"])
WRITERS, APPENDS = 8, 50


def _successes(writer: int, j: int) -> list:
    """The successes writer ``writer`` appends ``j``-th: its own numbers, to tell them apart."""
    return [[writer % 4, j % 6, (writer + j) % 3]]


def _counts(writer: int, j: int):
    return be.from_counts(
        _successes(writer, j), trials=6, systems=[f"w{writer}"], tasks=[f"t{j}", "u", "v"]
    )


def _check(store, writer: int, j: int) -> None:
    """The stored checkpoint holds the writer's numbers (all of it for a few)."""
    back = store.load(_label(writer, j))
    if j % 10 == 0:
        assert back.dataset.identical(_counts(writer, j).dataset), (writer, j)
    assert back.dataset["successes"].values.tolist() == _successes(writer, j), (writer, j)
    assert back.systems == [f"w{writer}"] and back.tasks.tolist() == [f"t{j}", "u", "v"]


def _label(writer: int, j: int) -> str:
    return f"w{writer}-{j:03d}"


def _write(location, writer, n, barrier, out):
    store = location if isinstance(location, CheckpointStore) else CheckpointStore(location)
    barrier.wait()
    errors = []
    for j in range(n):
        try:
            store.append(_label(writer, j), _counts(writer, j))
        except Exception as err:  # every refusal is what the test counts
            errors.append(f"{type(err).__name__}: {err}")
    store.close()
    out.put((writer, errors))


def _run(target, args_list, timeout=300):
    procs = [CTX.Process(target=target, args=args) for args in args_list]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0, f"a writer ended with {p.exitcode}"


def test_eight_processes_append_fifty_each_and_all_survive(location):
    # bayeval 0.1.0: 80-94% of appends of 4-8 writers failed with BlockingIOError, and two
    # writers could overwrite each other's checkpoint
    barrier, out = CTX.Barrier(WRITERS), CTX.Queue()
    _run(_write, [(location, w, APPENDS, barrier, out) for w in range(WRITERS)])
    errors = dict(out.get(timeout=10) for _ in range(WRITERS))
    assert errors == {w: [] for w in range(WRITERS)}  # none refused
    store = CheckpointStore(location)
    labels = store.checkpoints()
    assert len(store) == WRITERS * APPENDS == len(set(labels))
    for w in range(WRITERS):  # each writer's checkpoints in its own order
        assert [x for x in labels if x.startswith(f"w{w}-")] == [
            _label(w, j) for j in range(APPENDS)
        ]
    for w in range(WRITERS):
        for j in range(APPENDS):
            _check(store, w, j)
    arrivals = store.arrivals()["arrival"]
    assert arrivals.is_unique and arrivals.is_monotonic_increasing


def _same_label(location, writer, barrier, out):
    store = CheckpointStore(location)
    barrier.wait()
    results = []
    for round_ in range(5):
        try:
            store.append(f"same-{round_}", _counts(writer, round_))
            results.append("ok")
        except ValueError as err:
            results.append(str(err))
    out.put((writer, results))


def test_two_writers_of_one_label_one_wins_the_other_is_told(location):
    barrier, out = CTX.Barrier(2), CTX.Queue()
    _run(_same_label, [(location, w, barrier, out) for w in range(2)])
    results = dict(out.get(timeout=10) for _ in range(2))
    store = CheckpointStore(location)
    for round_ in range(5):
        outcomes = [results[0][round_], results[1][round_]]
        assert outcomes.count("ok") == 1, outcomes
        winner = outcomes.index("ok")
        refusal = outcomes[1 - winner]
        assert f"checkpoint 'same-{round_}' is already in {store.where}" in refusal
        assert "append-only" in refusal
        back = store.load(f"same-{round_}").dataset
        assert back.identical(_counts(winner, round_).dataset)
    assert len(store) == 5


def _victim(location, started):
    # SQLite: 40,000 count rows, more than its page cache, so pages reach the log uncommitted
    tasks = 2000 if "://" not in location else 200
    big = be.from_counts(np.arange(20 * tasks).reshape(20, tasks) % 5, trials=5)
    original = _backends.Connection.many

    def many_then_hang(self, sql, rows):
        original(self, sql, rows)
        started.set()  # the checkpoint's rows are written, not committed
        time.sleep(600)

    _backends.Connection.many = many_then_hang
    CheckpointStore(location).append("victim", big)


def test_a_writer_killed_mid_append_loses_only_its_own_checkpoint(location, raw_sql):
    store = CheckpointStore(location)
    for j in range(5):
        store.append(_label(9, j), _counts(9, j))
    started = CTX.Event()
    victim = CTX.Process(target=_victim, args=(location, started))
    victim.start()
    try:
        assert started.wait(120), "the victim never reached its commit"
        barrier, out = CTX.Barrier(2), CTX.Queue()
        others = [CTX.Process(target=_write, args=(location, w, 10, barrier, out)) for w in (0, 1)]
        for p in others:
            p.start()
        time.sleep(0.5)  # the others are waiting for (SQLite) or writing beside (PostgreSQL) it
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(30)
        assert victim.exitcode == -signal.SIGKILL
        for p in others:
            p.join(120)
            assert p.exitcode == 0
        assert dict(out.get(timeout=10) for _ in range(2)) == {0: [], 1: []}
    finally:
        if victim.is_alive():
            victim.kill()
    store = CheckpointStore(location)
    assert "victim" not in store and len(store) == 25
    for w, n in ((9, 5), (0, 10), (1, 10)):
        for j in range(n):
            _check(store, w, j)
    if "://" not in location:
        assert raw_sql(location, "PRAGMA integrity_check") == [("ok",)]
    store.append("victim", _counts(2, 2))  # its label was never taken
    assert store.checkpoints()[-1] == "victim"


def test_an_append_does_the_same_work_however_many_checkpoints_are_stored(tmp_path, monkeypatch):
    # bayeval 0.1.0 re-read every group on each append (8.5x slower after 150 checkpoints);
    # SQLite's virtual-machine steps count the work exactly, with no timing noise
    steps = [0]
    connect = _backends.SQLiteBackend._connect

    def counting(self):
        conn = connect(self)

        def step():
            steps[0] += 1
            return 0

        conn.set_progress_handler(step, 1)
        return conn

    store = CheckpointStore(tmp_path / "run.db")
    data = _counts(1, 1)

    def work(label):
        monkeypatch.setattr(_backends.SQLiteBackend, "_connect", counting)
        steps[0] = 0
        store.append(label, data)
        monkeypatch.undo()
        return steps[0]

    for j in range(5):
        store.append(f"a{j}", data)
    small = [work(f"small{j}") for j in range(3)]
    for j in range(300):
        store.append(f"b{j}", data)
    large = [work(f"large{j}") for j in range(3)]
    assert min(small) > 0
    assert max(large) <= 1.02 * min(small), (small, large)


def test_a_store_object_crosses_a_fork(location):
    # a forked child inherits the parent's open connections: it must open its own, and leave
    # the parent's alone
    store = CheckpointStore(location)
    store.append("parent", _counts(0, 0))
    fork = multiprocessing.get_context("fork")
    barrier, out = fork.Barrier(2), fork.Queue()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded process
        procs = [fork.Process(target=_write, args=(store, w, 3, barrier, out)) for w in (0, 1)]
        for p in procs:
            p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert dict(out.get(timeout=10) for _ in range(2)) == {0: [], 1: []}
    store.append("parent-again", _counts(0, 1))  # the parent's connections still work
    assert len(store) == 2 + 3 * 2
