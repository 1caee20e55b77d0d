"""Checkpointer: copies committed WAL frames into the database file on its own connection and thread.

SQLite otherwise runs that copy, with an fsync of the database file, inside whichever commit takes
the WAL past `wal_autocheckpoint` pages, so one write in a few carries it and the cost grows with the
database. Here the writer's threshold is raised to a backstop (`BACKSTOP_PAGES`) and each commit only
wakes this thread, which waits `DELAY` seconds (a burst of commits shares one pass) and runs a PASSIVE
checkpoint: it never blocks the writer or readers, and durability is unchanged (a commit is durable
once its WAL frames are fsync'd).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading

BACKSTOP_PAGES = 8192  # the writer checkpoints itself only if this thread falls this far behind
DELAY = 0.05


class Checkpointer:
    def __init__(self, path: str, *, delay: float = DELAY) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
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
            with contextlib.suppress(sqlite3.Error):  # e.g. the file went away; the backstop still holds
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.passes += 1

    def close(self) -> None:
        """Stop the thread and close its connection; safe to call twice, and from the thread itself."""
        self._stop.set()
        self._wake.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()
        self._conn.close()
