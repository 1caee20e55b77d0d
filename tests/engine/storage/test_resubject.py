"""The schema migrations that give the facts of an entity id beyond ASCII the subject its turns give now
(SQLite 5, PostgreSQL 8): the ASCII-only slug gave "борис" and "олег" both `ent:x` and "søren"
`ent:sren`, so after the slug kept their letters a new value of such an entity would have sat beside
the old one as a second current value."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import psycopg
import pytest

from engine.extract.rules import RuleExtractor
from engine.models import Memory
from engine.storage.base import Store
from engine.storage.postgres import PostgresStore
from engine.storage.postgres.schema import migrate as pg_migrate
from engine.storage.sqlite import SQLiteStore
from engine.storage.sqlite.codec import MEMORY_INSERT, memory_row
from engine.storage.sqlite.schema import migrate as sqlite_migrate
from engine.write.predicates import conflict_key
from engine.write.turns import commit_turn, plan_turn, resubjected, subject_for
from tests.factories import memory
from tests.pg_fixture import PgServer, create_database, drop_database, pg_server

__all__ = ["pg_server"]  # a fixture used by name below

T0 = datetime(2024, 5, 1, tzinfo=UTC)
BORIS, OLEG = "\u0431\u043e\u0440\u0438\u0441", "\u043e\u043b\u0435\u0433"


def _lives(memory_id: str, entity: str, subject: str, city: str) -> Memory:
    return memory(
        memory_id=memory_id,
        entity_id=entity,
        type="fact",
        text=f"User lives in {city}",
        subject=subject,
        predicate="lives_in",
        object=f"ent:{city.lower()}",
        object_type="entity",
        keys=[conflict_key(subject, "lives_in")],
        valid_from=T0,
        confidence=0.9,
        status="active",
        at=T0,
    )


#: facts as the code before stored them: the first three with the subject the ASCII-only slug gave
LEGACY = [
    _lives("mem_boris", BORIS, "ent:x", "Moscow"),
    _lives("mem_oleg", OLEG, "ent:x", "Paris"),
    _lives("mem_soren", "s\u00f8ren", "ent:sren", "Oslo"),
    _lives("mem_alice", "alice", "ent:alice", "Lisbon"),  # ASCII: the same subject then and now
    _lives("mem_anna", BORIS, "ent:anna", "Rome"),  # a named person's fact in the same scope
    _lives("mem_ent", f"ent:{BORIS}", f"ent:{BORIS}", "Kyiv"),  # an `ent:` id was its own subject
]


def test_resubjected_gives_the_subject_of_today_only_to_a_subject_the_old_slug_gave() -> None:
    new = {m.memory_id: resubjected(m) for m in LEGACY}
    assert {k: (m.subject, m.keys) for k, m in new.items() if m is not None} == {
        "mem_boris": (f"ent:{BORIS}", [f"ent:{BORIS}|lives_in"]),
        "mem_oleg": (f"ent:{OLEG}", [f"ent:{OLEG}|lives_in"]),
        "mem_soren": ("ent:soren", ["ent:soren|lives_in"]),
    }
    assert all(subject_for(m.entity_id) == m.subject for m in new.values() if m is not None)
    # a key the client chose stays; the key of the old subject moves
    chosen = msgspec.structs.replace(LEGACY[0], keys=["ent:x|lives_in", "home"])
    assert (resubjected(chosen) or chosen).keys == [f"ent:{BORIS}|lives_in", "home"]


def _check_migrated(store: Store) -> None:
    """The migrated facts hold today's subjects and keys; a move of one entity supersedes its own
    city only."""
    got = {m.memory_id: m for m in store.get_memories("org_a", [m.memory_id for m in LEGACY])}
    assert {k: m.subject for k, m in got.items()} == {
        "mem_boris": f"ent:{BORIS}",
        "mem_oleg": f"ent:{OLEG}",
        "mem_soren": "ent:soren",
        "mem_alice": "ent:alice",
        "mem_anna": "ent:anna",
        "mem_ent": f"ent:{BORIS}",
    }
    for m in LEGACY[3:]:
        assert got[m.memory_id] == m
    assert store.find_by_key("org_a", "default", "ent:x|lives_in") == []
    assert [m.memory_id for m in store.find_by_key("org_a", "default", f"ent:{OLEG}|lives_in")] == [
        "mem_oleg"
    ]
    now = T0 + timedelta(days=1)
    plan = plan_turn(
        RuleExtractor(), "I moved to Kazan.", org_id="org_a", entity_id=BORIS, timestamp=now, now=now
    )
    done = commit_turn(store, plan, now=now)
    assert [(u.action, u.supersedes) for u in done.extracted.upserts[1:]] == [("SUPERSEDED", ["mem_boris"])]
    after = {m.memory_id: m.status for m in store.get_memories("org_a", ["mem_boris", "mem_oleg"])}
    assert after == {"mem_boris": "superseded", "mem_oleg": "active"}


def test_sqlite_migration_5(tmp_path: Path) -> None:
    path = str(tmp_path / "v4.db")
    conn = sqlite3.connect(path, isolation_level=None)
    assert sqlite_migrate(conn, target=4) == 4
    for m in LEGACY:
        conn.execute(MEMORY_INSERT, memory_row(m))
        conn.executemany(
            "INSERT INTO memory_keys VALUES (?, ?, ?, ?)",
            [(m.org_id, m.namespace, k, m.memory_id) for k in m.keys or ()],
        )
    conn.close()
    store = SQLiteStore(path)
    try:
        _check_migrated(store)
    finally:
        store.close()


@contextmanager
def _database(server: PgServer, name: str) -> Iterator[str]:
    url = create_database(server, name)
    try:
        yield url
    finally:
        drop_database(server, name)


@pytest.mark.integration
def test_postgres_migration_8(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.storage.postgres import schema

    with _database(pg_server, f"{pg_server.prefix}_migrate_v7") as url:
        monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in schema.MIGRATIONS if m[0] <= 7))
        assert pg_migrate(url) == [1, 2, 3, 4, 5, 6, 7]
        old = PostgresStore(url, max_size=2, migrate_on_start=False)
        try:
            old.put_memories(LEGACY)
        finally:
            old.close()
        monkeypatch.undo()
        with psycopg.connect(url) as conn:  # the inline vector column is left as it was
            conn.execute("UPDATE memories SET embedding_model = 'kept' WHERE memory_id = 'mem_boris'")
        monkeypatch.setattr(schema, "TOKENIZE_BATCH", 2)  # the rows read a few at a time
        assert pg_migrate(url) == [8, 9]  # and 9, which tokenizes the rows beyond ASCII again
        store = PostgresStore(url, max_size=2)
        try:
            with store._conn() as conn:
                kept = conn.execute("SELECT embedding_model FROM memories WHERE memory_id = 'mem_boris'")
                assert kept.fetchone() == ("kept",)
            _check_migrated(store)
        finally:
            store.close()
