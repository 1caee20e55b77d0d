"""Read a store's schema version without opening (and so without migrating) it: for `loci migrate`.

    schema_version("sqlite:///data/loci.db") -> 3     (PRAGMA user_version; 0 if the file is new)
    schema_version("./data")                  -> 3     (<dir>/loci.db, as open_store resolves it)
    schema_version("postgresql://...")        -> 3     (max version in schema_migrations; 0 if none)
    schema_version("memory")                  -> None  (no schema)

`latest_version(target)` is the version this code migrates that backend to.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from engine.errors import Unavailable


def _sqlite_path(target: str) -> str | None:
    """The file open_store would use for `target`, or None when it is not a SQLite target."""
    if "://" in target:
        scheme, _, rest = target.partition("://")
        return rest if scheme.lower() == "sqlite" else None
    if target == "memory":
        return None
    return str(Path(target).expanduser() / "loci.db")


def _read_only_uri(path: str) -> str:
    """A read-only `file:` URI of a path; "sqlite:////abs/x.db" gives "//abs/x.db", which a URI would
    read as a host."""
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return f"file:{quote(path)}?mode=ro"


def _is_postgres(target: str) -> bool:
    return target.partition("://")[0].lower() in ("postgresql", "postgres") and "://" in target


def schema_version(target: str) -> int | None:
    if _is_postgres(target):
        return _postgres_version(target)
    path = _sqlite_path(target)
    if path is None:
        return None
    if path == ":memory:" or (not path.startswith("file:") and not Path(path).exists()):
        return 0
    conn = sqlite3.connect(_read_only_uri(path) if not path.startswith("file:") else path, uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def _postgres_version(url: str) -> int:
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
            if row is None or not row[0]:
                return 0
            found = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
            return int(found[0]) if found is not None else 0
    except psycopg.OperationalError as exc:
        raise Unavailable(f"cannot reach PostgreSQL: {exc}") from exc


def latest_version(target: str) -> int | None:
    if _is_postgres(target):
        from engine.storage.postgres.schema import LATEST_VERSION

        return LATEST_VERSION
    if _sqlite_path(target) is None:
        return None
    from engine.storage.sqlite.schema import LATEST

    return LATEST
