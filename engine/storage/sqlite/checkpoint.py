"""Checkpointer: copies committed WAL frames into the database file on its own connection and thread.
WalGate: commits and checkpoints on one database file take turns, across threads and processes.

SQLite otherwise runs that copy, with an fsync of the database file, inside whichever commit takes
the WAL past `wal_autocheckpoint` pages, so one write in a few carries it and the cost grows with the
database. Here the writer's threshold is raised to a backstop (`BACKSTOP_PAGES`) and each commit only
wakes this thread, which waits `DELAY` seconds (a burst of commits shares one pass) and runs a PASSIVE
checkpoint. Durability is unchanged (a commit is durable once its WAL frames are fsync'd).

SQLite before 3.51.3 (Python's sqlite3 links the system library, often older) can corrupt a WAL
database when one connection checkpoints while another commits the write that restarts the WAL
(https://www.sqlite.org/wal.html#walresetbug). So every write transaction (with the checkpoint
SQLite may run inside its commit) and every pass here hold the `WalGate` of the file: a lock in the
process and an exclusive `flock` on `<database>-lock`, which other processes opening the same file
with Loci (a CLI command beside the server, two eval runs sharing a cache) take as well. Readers never
take it; a write waits for a pass at most as long as the pass's copy and fsync.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Iterator

BACKSTOP_PAGES = 8192  # the writer checkpoints itself only if this thread falls this far behind
DELAY = 0.05
GATE_TIMEOUT = 10.0  # the store's busy_timeout too: a holder stuck longer is reported, not waited on


class WalGate:
    """One writer or checkpointer at a time on the file at `path`; in process only for ':memory:' and
    'file:' URIs (no other process can name the same database through a plain path then)."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        if path != ":memory:" and not path.startswith("file:"):
            self._fd = os.open(f"{path}-lock", os.O_RDWR | os.O_CREAT, 0o600)

    @contextlib.contextmanager
    def held(self, timeout: float = GATE_TIMEOUT) -> Iterator[None]:
        """Raises sqlite3.OperationalError('database is locked') after `timeout` seconds, as SQLite's
        own busy timeout would."""
        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=timeout):
            raise sqlite3.OperationalError("database is locked")
        try:
            self._flock(deadline)
            try:
                yield
            finally:
                if self._fd is not None:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()

    def _flock(self, deadline: float) -> None:
        if self._fd is None:
            return
        pause = 0.0005
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise sqlite3.OperationalError("database is locked") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class Checkpointer:
    def __init__(self, path: str, gate: WalGate, *, delay: float = DELAY) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._gate = gate
        self._delay = delay
        self._wake = threading.Event()
        self._stop = threading.Event()
        self.passes = 0
        self._thread = threading.Thread(target=self._run, name="loci-sqlite-checkpoint", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """A commit happened: checkpoint within `delay` seconds."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.wait(self._delay):  # a burst of commits shares one pass; a stop ends the wait
                return
            self._wake.clear()  # a commit after this line wakes another pass
            # e.g. the file went away, or the gate stayed busy: the next pass or the backstop catches up
            with contextlib.suppress(sqlite3.Error), self._gate.held():
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.passes += 1

    def close(self) -> None:
        """Stop the thread and close its connection; safe to call twice, and from the thread itself."""
        self._stop.set()
        self._wake.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._conn.close()
