"""Many processes starting at once on one SQLite file in WAL mode, as the docs advise
(`init_command` switching each connection to WAL, after `migrate` has made the file): none
fails with "database is locked". The e2e fixtures rely on this (they create the file in WAL
before starting workers), and docs/database.md says to run `migrate` before the workers
because SQLite does not wait out its busy timeout for the first switch of a new file."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

PROCESSES = 8
ROUNDS = 10


def _open_like_django(path: str, barrier: multiprocessing.synchronize.Barrier, errors) -> None:
    barrier.wait()
    try:
        # What Django's SQLite backend does with the settings' OPTIONS: the timeout becomes
        # the busy timeout, then the init_command runs on the new connection.
        db = sqlite3.connect(path, timeout=20)
        try:
            mode = db.execute("PRAGMA journal_mode=WAL;").fetchone()
            db.execute("INSERT INTO seen VALUES (1)")
            db.commit()
        finally:
            db.close()
        if mode != ("wal",):
            errors.put(f"journal mode {mode}")
    except sqlite3.Error as error:
        errors.put(repr(error))


def test_processes_opening_a_migrated_wal_file_at_once_never_see_a_lock(tmp_path: Path) -> None:
    path = tmp_path / "site.sqlite3"
    with sqlite3.connect(path) as db:  # what `migrate` leaves: the file, in WAL
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE seen (x INTEGER)")
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    for _ in range(ROUNDS):
        barrier = context.Barrier(PROCESSES)
        processes = [
            context.Process(target=_open_like_django, args=(str(path), barrier, errors))
            for _ in range(PROCESSES)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
            assert process.exitcode == 0
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert not found
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM seen").fetchone() == (PROCESSES * ROUNDS,)
