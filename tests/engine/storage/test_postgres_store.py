"""PostgreSQL-specific behaviour of PostgresStore (the shared suite covers the protocol itself)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
import numpy as np
import psycopg
import pytest
from psycopg import sql

from engine.errors import Unavailable
from engine.models import Event, Memory, text_hash
from engine.storage import open_store
from engine.storage.base import EventQuery, Hit, Scope, Vector
from engine.storage.postgres import PostgresStore, bookkeeping, search, semantic
from engine.storage.postgres import rows as pg_rows
from engine.storage.postgres.schema import LATEST_VERSION, migrate
from engine.storage.postgres.vectors import hnsw_index_name, register_vector
from tests.factories import memory
from tests.pg_fixture import PgServer, create_database, drop_database, pg_database, pg_server, postgres_store

pytestmark = pytest.mark.integration
__all__ = ["pg_database", "pg_server", "postgres_store"]  # fixtures used by name below

T0 = datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _mem(memory_id: str, text: str, **kw: Any) -> Memory:
    return memory(memory_id=memory_id, text=text, at=T0, **kw)


def _count_rewrites(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The `non_ascii_only` of every row rewrite the migrations make from here on."""
    from engine.storage.postgres import schema

    calls: list[bool] = []
    real = schema.tokenize_rows

    def counted(conn: Any, *, non_ascii_only: bool = False) -> None:
        calls.append(non_ascii_only)
        real(conn, non_ascii_only=non_ascii_only)

    monkeypatch.setattr(schema, "tokenize_rows", counted)
    return calls


def _turns(prefix: str, entity_id: str, speakers: list[str]) -> list[Memory]:
    """One event per speaker, "<speaker>: words <i>", a minute apart."""
    return [
        _mem(
            f"{prefix}{i}",
            f"{who}: words {i}",
            type="event",
            entity_id=entity_id,
            timestamp=T0 + timedelta(minutes=i),
        )
        for i, who in enumerate(speakers)
    ]


def test_every_field_round_trips(postgres_store: PostgresStore) -> None:
    plus2 = timezone(timedelta(hours=2))
    full = Memory(
        memory_id="mem_full",
        org_id="org_a",
        namespace="ns1",
        agent_id="agent-7",
        entity_id="ent:alice",
        type="fact",
        text="Alice lives in Paris",
        metadata={"n": 1, "f": 1.0, "nested": {"x": [1, 2.5, None]}},
        tags=["home", "geo"],
        timestamp=datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=plus2),
        archived=False,
        sensitivity="pii",
        subject="ent:alice",
        predicate="lives_in",
        object="ent:paris",
        object_type="entity",
        unit="city",
        keys=["ent:alice|lives_in"],
        valid_from=datetime(2024, 1, 1, tzinfo=UTC),
        valid_to=datetime(2025, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        confidence=0.875,
        status="disputed",
        provenance={"source": "turn", "turn": 3},
        created_at=T0,
        updated_at=T0 + timedelta(microseconds=1),
    )
    objects: list[object] = ["text", 5, 5.0, True, False, {"a": 1.0, "b": 1}, None, 0, -2.5e-7]
    rows = [full] + [_mem(f"mem_obj_{i}", f"object {i}", object=o) for i, o in enumerate(objects)]
    postgres_store.put_memories(rows)
    got = postgres_store.get_memory("org_a", "mem_full")
    assert got is not None
    # Stored as UTC: 03:04:05.678901 at +02:00 is 01:04:05.678901 UTC.
    assert got.timestamp == datetime(2024, 1, 2, 1, 4, 5, 678901, tzinfo=UTC)
    assert got.timestamp.utcoffset() == timedelta(0)
    assert got == msgspec.structs.replace(full, timestamp=got.timestamp)
    for i, o in enumerate(objects):
        back = postgres_store.get_memory("org_a", f"mem_obj_{i}")
        assert back is not None
        assert back.object == o and type(back.object) is type(o), (o, back.object)


def test_documents_decode_straight_or_through_the_unconstrained_twin() -> None:
    valid = memory(text="Alice lives in Paris", tags=["a"], confidence=0.5)
    doc = pg_rows._encoder.encode(valid).decode()
    assert pg_rows.decode(doc) == valid
    with pytest.raises(msgspec.ValidationError):
        pg_rows._valid_decoder.decode(pg_rows._encoder.encode(msgspec.structs.replace(valid, confidence=7.0)))
    # built in code without the wire constraints: read back exactly as stored
    odd = msgspec.structs.replace(valid, confidence=7.0, type="custom", status="odd")
    assert pg_rows.decode(pg_rows._encoder.encode(odd).decode()) == odd


def test_registry_opens_both_schemes(pg_database: str) -> None:
    for url in (pg_database, pg_database.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        try:
            assert isinstance(store, PostgresStore)
            assert store.count_memories() == 0
        finally:
            store.close()


def test_concurrent_migrations_apply_once(pg_server: PgServer) -> None:
    name = f"{pg_server.prefix}_migrate_race"
    url = create_database(pg_server, name)  # empty: no extension, no tables
    try:
        barrier = threading.Barrier(4)
        results: list[list[int]] = []
        errors: list[BaseException] = []

        def run() -> None:
            try:
                barrier.wait()
                results.append(migrate(url))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert sorted(results) == [[], [], [], list(range(1, LATEST_VERSION + 1))]
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        assert [r[0] for r in rows] == list(range(1, LATEST_VERSION + 1))
        assert migrate(url) == []
    finally:
        drop_database(pg_server, name)


def test_a_database_of_a_newer_schema_is_refused(pg_server: PgServer) -> None:
    """As on SQLite: code that does not know the schema must not write to it."""
    name = f"{pg_server.prefix}_newer_schema"
    url = create_database(pg_server, name)
    try:
        migrate(url)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (LATEST_VERSION + 1,))
        with pytest.raises(Unavailable, match="newer than this Loci's"):
            migrate(url)
        with pytest.raises(Unavailable, match="newer than this Loci's"):
            PostgresStore(url)
    finally:
        drop_database(pg_server, name)


def test_migration_4_numbers_each_orgs_events_and_rows_from_the_previous_version(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events logged by schema-3 code (one sequence for every org) are numbered per org in log order;
    afterwards a row inserted the way a schema-3 server inserts it (a rolling upgrade) is numbered too."""
    from engine.storage.postgres import schema

    name = f"{pg_server.prefix}_migrate_v3"
    url = create_database(pg_server, name)
    old_insert = "INSERT INTO events (org_id, type, entity_id, at, doc) VALUES (%s, 'x', NULL, %s, %s)"

    def doc(event_id: str, org: str) -> str:
        return msgspec.json.encode(Event(event_id=event_id, org_id=org, type="x", at=T0)).decode()

    try:
        monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:3])
        assert migrate(url) == [1, 2, 3]
        orgs = ["org_a", "org_b", "org_a", "org_a", "org_b"]
        with psycopg.connect(url) as conn, conn.cursor() as cur:
            cur.executemany(old_insert, [(org, T0, doc(f"evt_{i}", org)) for i, org in enumerate(orgs)])
        monkeypatch.undo()
        assert migrate(url) == list(range(4, LATEST_VERSION + 1))
        with psycopg.connect(url) as conn:
            conn.execute(old_insert, ("org_b", T0, doc("evt_old_code", "org_b")))
        store = PostgresStore(url, max_size=2)
        try:
            store.append_events([Event(event_id="evt_new", org_id="org_a", type="x", at=T0)])
            ids = {
                o: [(n, e.event_id) for n, e in store.list_events(o, EventQuery())]
                for o in ("org_a", "org_b")
            }
        finally:
            store.close()
        assert ids == {
            "org_a": [(1, "evt_0"), (2, "evt_2"), (3, "evt_3"), (4, "evt_new")],
            "org_b": [(1, "evt_1"), (2, "evt_4"), (3, "evt_old_code")],
        }
    finally:
        drop_database(pg_server, name)


def test_migrations_3_to_5_on_a_database_with_memories(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema-2 database with memories migrates in place: migration 5 tokenizes the existing rows (the
    keyword channel then ranks them as the in-memory store does), semantic search finds the old rows
    before any backfill (through the join), and the backfill gives them their copies with the same
    results."""
    from engine.storage.postgres import schema

    name = f"{pg_server.prefix}_migrate_v2"
    url = create_database(pg_server, name)
    try:
        monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
        assert migrate(url) == [1, 2]
        rows = [
            _mem(f"mem_{i}", t, entity_id="ent:x", timestamp=T0 + timedelta(seconds=i), type=kind)
            for i, (t, kind) in enumerate(
                [
                    ("old gardens grow tomatoes", "note"),
                    ("Ann Lee: a note about the sea", "event"),
                    ("tomato soup", "fact"),
                ]
            )
        ]
        v2_columns = pg_rows.COLUMNS[: pg_rows.COLUMNS.index("doc") + 1]
        with psycopg.connect(url) as conn, conn.cursor() as cur:  # rows as schema 2 stored them
            cur.executemany(
                f"INSERT INTO memories ({', '.join(v2_columns)})"  # noqa: S608
                f" VALUES ({', '.join('%s' for _ in v2_columns)})",
                [pg_rows.row_of(m)[: len(v2_columns)] for m in rows],
            )
        monkeypatch.undo()
        rewrites = _count_rewrites(monkeypatch)
        assert migrate(url) == list(range(3, LATEST_VERSION + 1))
        assert rewrites == [False]  # migration 5 rewrote every row; 6 and 7 have nothing left to do
        local = open_store("memory")
        local.put_memories(rows)
        with _store_keeping(url, "hash:4") as store:
            with store._conn() as conn:
                kw = {
                    r[0]: r[1:]
                    for r in conn.execute("SELECT memory_id, kw, speaker, kw_small = kw FROM memories")
                }
            assert kw["mem_1"] == (["ann", "lee", "note", "sea"], ["Ann", "Lee"], True)
            assert kw["mem_2"] == (["soup", "tomato"], None, True)
            vecs = {text_hash(m.text): np.eye(4, dtype=np.float32)[i] for i, m in enumerate(rows)}
            with store._conn() as conn, conn.cursor() as cur:  # vectors stored without touching the rows
                cur.executemany(
                    "INSERT INTO embeddings (model, text_hash, dims, embedding) VALUES ('hash:4', %s, 4, %b)",
                    list(vecs.items()),
                )
            scope = Scope(org_id="org_a", entity_id="ent:x", now=T0 + timedelta(days=1))
            q = np.array([0.1, 0.2, 0.9, 0.0], dtype=np.float32)

            def results() -> tuple[list[Hit], list[tuple[str, float]]]:
                return store.search.keyword_search(scope, "tomatoes garden", 5), _ranked(
                    store, scope, "hash:4", q, 3
                )

            before = results()
            assert before[0] == local.search.keyword_search(scope, "tomatoes garden", 5)
            assert [h.memory_id for h in before[0]] == ["mem_0", "mem_2"]
            assert [mid for mid, _ in before[1]] == ["mem_2", "mem_1", "mem_0"]
            assert store.search.speaker_shares(scope, ["Ann", "Lee", "Bob"]) == [1.0, 1.0, 0.0]
            assert store.backfill_inline_vectors(batch=2) == 3
            with store._conn() as conn:
                filled = conn.execute(
                    "SELECT count(*) FROM memories WHERE embedding_model = 'hash:4' AND embedding IS NOT NULL"
                ).fetchone()
            assert filled == (3,)
            assert results() == before
            changed = msgspec.structs.replace(rows[1], text="the sea has tomatoes")
            store.put_memories([changed])
            local.put_memories([changed])
            assert store.search.keyword_search(scope, "sea tomatoes", 5) == local.search.keyword_search(
                scope, "sea tomatoes", 5
            )
            with store._conn() as conn:  # the trigger copied the new terms for the index
                row = conn.execute(
                    "SELECT kw, speaker, kw_small = kw, speaker_small FROM memories WHERE memory_id = 'mem_1'"
                ).fetchone()
            assert row == (["sea", "tomato"], None, True, None)
    finally:
        drop_database(pg_server, name)


def test_migration_6_tokenizes_again_the_rows_beyond_ascii(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows a schema-5 server tokenized without Unicode normalization (an accent typed as a combining
    mark, full-width letters) get the terms the tokenizer makes now, so the keyword channel ranks them
    as the in-memory store does; the ASCII rows, whose terms cannot change, are not rewritten."""
    from engine.storage import tokenize
    from engine.storage.postgres import schema

    name = f"{pg_server.prefix}_migrate_v5"
    url = create_database(pg_server, name)
    rows = [
        _mem("mem_0", "Je bois un cafe\u0301 au lait", entity_id="ent:x"),
        _mem(
            "mem_1",
            "\uff21\uff23\uff2d\uff25 hired me",
            entity_id="ent:x",
            timestamp=T0 + timedelta(seconds=1),
        ),
        _mem("mem_2", "a plain cafe note", entity_id="ent:x", timestamp=T0 + timedelta(seconds=2)),
    ]
    try:
        monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in schema.MIGRATIONS if m[0] <= 5))
        assert migrate(url) == [1, 2, 3, 4, 5]
        monkeypatch.setattr(tokenize, "normal", str.lower)  # schema-5 code tokenized this way
        with _store_keeping(url, "hash:4") as store:
            store.put_memories(rows)
            with store._conn() as conn:  # a mark only a rewrite of the ASCII row would take away
                conn.execute("UPDATE memories SET kw = ARRAY['untouched'] WHERE memory_id = 'mem_2'")
        monkeypatch.undo()
        rewrites = _count_rewrites(monkeypatch)
        assert migrate(url) == [6, 7, 8, 9]
        assert rewrites == [
            True
        ]  # migrations 7 and 9 would rewrite the rows 6 just rewrote with the same code
        local = open_store("memory")
        local.put_memories(rows)
        with _store_keeping(url, "hash:4") as store:
            with store._conn() as conn:
                kw = dict(conn.execute("SELECT memory_id, kw FROM memories").fetchall())
            assert kw == {
                "mem_0": sorted(tokenize.tokenize(rows[0].text)),
                "mem_1": ["acm", "hire"],
                "mem_2": ["untouched"],
            }
            scope = Scope(org_id="org_a", entity_id="ent:x", now=T0 + timedelta(days=1))
            for query in ("caf\u00e9 au lait", "ACME"):
                hits = store.search.keyword_search(scope, query, 5)
                assert [h.memory_id for h in hits] == [
                    h.memory_id for h in local.search.keyword_search(scope, query, 5)
                ]
                assert hits
    finally:
        drop_database(pg_server, name)


def test_migration_7_reads_again_the_speakers_named_beyond_ascii(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events a schema-6 server stored with no speaker, since their speaker's name starts with a capital
    beyond A-Z ("Émile: ..."), get it: the semantic query then leaves out the name of the scope's
    speaker, as it does on the in-memory store."""
    import re

    from engine.storage.postgres import schema

    name = f"{pg_server.prefix}_migrate_v6"
    url = create_database(pg_server, name)
    rows = _turns("mem_", "ent:x", ["\u00c9mile", "\u00c9mile", "Ana", "\u00c9mile"])
    old = re.compile(r"^\s*([A-Z][\w'.\-]*(?: [A-Z][\w'.\-]*){0,3})\s*:\s")  # schema-6 code's pattern
    try:
        monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in schema.MIGRATIONS if m[0] <= 6))
        assert migrate(url) == [1, 2, 3, 4, 5, 6]
        monkeypatch.setattr(pg_rows, "speaker_name", lambda t: m.group(1) if (m := old.match(t)) else None)
        with _store_keeping(url, "hash:4") as store:
            store.put_memories(rows)
            with store._conn() as conn:
                assert conn.execute("SELECT count(*) FROM memories WHERE speaker IS NULL").fetchone() == (3,)
        monkeypatch.undo()
        assert migrate(url) == [7, 8, 9]
        local = open_store("memory")
        local.put_memories(rows)
        with _store_keeping(url, "hash:4") as store:
            with store._conn() as conn:
                speakers = dict(conn.execute("SELECT memory_id, speaker FROM memories").fetchall())
            assert speakers == {
                "mem_0": ["\u00c9mile"],
                "mem_1": ["\u00c9mile"],
                "mem_2": ["Ana"],
                "mem_3": ["\u00c9mile"],
            }
            scope = Scope(org_id="org_a", entity_id="ent:x", now=T0 + timedelta(days=1))
            words = ["\u00c9mile", "Ana"]
            assert (
                store.search.speaker_shares(scope, words)
                == local.search.speaker_shares(scope, words)
                == [0.75, 0.25]
            )
    finally:
        drop_database(pg_server, name)


def test_migration_9_tokenizes_again_words_with_marks_cjk_and_emoji(
    pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows a schema-8 server tokenized into `\\w+` runs (a Hindi word split at its vowel signs, a
    Chinese clause one term, an emoji no term) get the terms the tokenizer makes now, so the keyword
    channel finds them as the in-memory store does; the ASCII rows are not rewritten."""
    import re

    from engine.storage import tokenize
    from engine.storage.postgres import schema

    name = f"{pg_server.prefix}_migrate_v8"
    url = create_database(pg_server, name)
    texts = ["मेरी बहन दिल्ली में रहती है", "我对花生过敏。", "🍣", "a plain sushi note"]
    rows = [
        _mem(f"mem_{i}", t, entity_id="ent:x", timestamp=T0 + timedelta(seconds=i))
        for i, t in enumerate(texts)
    ]

    def schema_8_terms(text: str) -> list[str]:
        words = re.findall(r"\w+", tokenize.normal(text))
        return sorted(tokenize.stem(w) for w in words if w not in tokenize.STOPWORDS)

    try:
        monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in schema.MIGRATIONS if m[0] <= 8))
        assert migrate(url) == list(range(1, 9))
        monkeypatch.setattr(pg_rows, "terms", schema_8_terms)
        with _store_keeping(url, "hash:4") as store:
            store.put_memories(rows)
            with store._conn() as conn:  # a mark only a rewrite of the ASCII row would take away
                conn.execute("UPDATE memories SET kw = ARRAY['untouched'] WHERE memory_id = 'mem_3'")
                kw = dict(conn.execute("SELECT memory_id, kw FROM memories").fetchall())
            assert kw["mem_1"] == ["我对花生过敏"] and kw["mem_2"] == []
        monkeypatch.undo()
        assert migrate(url) == [9]
        local = open_store("memory")
        local.put_memories(rows)
        with _store_keeping(url, "hash:4") as store:
            with store._conn() as conn:
                kw = dict(conn.execute("SELECT memory_id, kw FROM memories").fetchall())
            assert kw == {
                "mem_0": sorted(["मेरी", "बहन", "दिल्ली", "में", "रहती", "है"]),
                "mem_1": ["对花", "我对", "生过", "花生", "过敏"],
                "mem_2": ["🍣"],
                "mem_3": ["untouched"],
            }
            scope = Scope(org_id="org_a", entity_id="ent:x", now=T0 + timedelta(days=1))
            for query, want in (("दिल्ली", ["mem_0"]), ("花生", ["mem_1"]), ("🍣", ["mem_2"])):
                hits = store.search.keyword_search(scope, query, 5)
                assert [h.memory_id for h in hits] == want
                assert [h.memory_id for h in local.search.keyword_search(scope, query, 5)] == want
    finally:
        drop_database(pg_server, name)


def _unit(rng: np.random.Generator, n: int, dims: int) -> Vector:
    x = rng.normal(size=(n, dims)).astype(np.float32)
    unit: Vector = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit


def test_vector_search_uses_hnsw_and_iterative_scan_fills_k(postgres_store: PostgresStore) -> None:
    """A selective filter (agent b: 60 of 3,000 rows, no index on agent_id) through the HNSW index still
    yields k rows: without iterative scans the index stops after ef_search=40 neighbours, of which
    ~1 is agent b's."""
    rng = np.random.default_rng(7)
    dims, n = 16, 3000
    vecs = _unit(rng, n, dims)
    mems = [
        _mem(
            f"mem_{i:05d}",
            f"text number {i}",
            agent_id="b" if i % 50 == 0 else "a",
            timestamp=T0 + timedelta(seconds=i),
        )
        for i in range(n)
    ]
    postgres_store.put_memories(mems)
    postgres_store.put_embeddings("hash:16", {text_hash(m.text): vecs[i] for i, m in enumerate(mems)})
    query = _unit(rng, 1, dims)[0]
    scope = Scope(org_id="org_a", agent_id="b", now=T0 + timedelta(days=1))
    k = 20
    with psycopg.connect(postgres_store.url) as conn:
        register_vector(conn, postgres_store._vector_oid)
        conn.execute("ANALYZE")
        conn.execute("SET enable_seqscan = off")  # steer the planner to the HNSW path at this size
        conn.execute("SET enable_sort = off")  # the exact plan needs a full sort; HNSW does not
        stmt, params = semantic.vector_statement(scope, "hash:16", query, k)
        plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + stmt, params).fetchall())
        hits = semantic.vector_search(conn, scope, "hash:16", query, k, exact_max=0, vectors_max=0)
    assert hnsw_index_name("hash:16", dims) in plan
    assert len(hits) == k
    by_id = {m.memory_id: i for i, m in enumerate(mems)}
    assert all(by_id[h.memory_id] % 50 == 0 for h in hits)
    exact = sorted((i for i in range(n) if i % 50 == 0), key=lambda i: -float(vecs[i] @ query))[:k]
    recall = len({f"mem_{i:05d}" for i in exact} & {h.memory_id for h in hits}) / k
    assert recall >= 0.8
    for h in hits:
        assert h.raw == pytest.approx(float(vecs[by_id[h.memory_id]] @ query), abs=1e-5)
    # Through the store (the planner's own choice) the order is the exact one.
    small = Scope(org_id="org_a", agent_id="b", now=T0 + timedelta(days=1))
    store_hits = postgres_store.search.vector_search(small, "hash:16", query, k)
    assert {h.memory_id for h in store_hits} >= {f"mem_{i:05d}" for i in exact[: k // 2]}


def test_vector_search_filters_scope_and_shares_vectors_by_text(postgres_store: PostgresStore) -> None:
    same = "the same text"
    rows = [
        _mem("m_old", same, timestamp=T0),
        _mem("m_new", same, timestamp=T0 + timedelta(hours=1)),
        _mem("m_arch", same, archived=True),
        _mem("m_sup", same, status="superseded"),
        _mem("m_other_ns", same, namespace="other"),
        _mem("m_expired", same, valid_to=T0),
        _mem("m_far", "different words"),
    ]
    postgres_store.put_memories(rows)
    v_same = np.array([1, 0, 0, 0], dtype=np.float32)
    v_far = np.array([0.6, 0.8, 0, 0], dtype=np.float32)
    postgres_store.put_embeddings("hash:4", {text_hash(same): v_same, text_hash("different words"): v_far})
    scope = Scope(org_id="org_a", now=T0 + timedelta(days=1))
    hits = postgres_store.search.vector_search(scope, "hash:4", v_same, 10)
    # Equal similarity: newer first; m_far at cos = 0.6.
    assert [h.memory_id for h in hits] == ["m_new", "m_old", "m_far"]
    assert [h.raw for h in hits] == pytest.approx([1.0, 1.0, 0.6])
    # as_of before the expiry: validity decides, status is ignored.
    past = Scope(org_id="org_a", now=T0, as_of=T0 - timedelta(microseconds=1) + timedelta(microseconds=1))
    ids = {h.memory_id for h in postgres_store.search.vector_search(past, "hash:4", v_same, 10)}
    assert ids == {"m_old", "m_sup", "m_far"}  # m_expired ends at T0 (valid_to > as_of fails); m_new later


def test_keyword_search_stores_the_tokenizers_terms_and_ranks_as_the_local_index(
    postgres_store: PostgresStore,
) -> None:
    rows = [
        _mem("k1", "Alice lives in Paris"),
        _mem("k2", "Bob is living in Berlin and Bob likes living there"),
        _mem("k3", "Caroline: A note about cats", type="event"),
        _mem("k4", "Alice lives in Paris", org_id="org_b"),
    ]
    postgres_store.put_memories(rows)
    local = open_store("memory")
    local.put_memories(rows)
    with postgres_store._conn() as conn:
        stored = {
            r[0]: r[1:]
            for r in conn.execute("SELECT memory_id, kw, speaker FROM memories WHERE org_id = 'org_a'")
        }
    assert stored == {
        "k1": (["alic", "live", "pari"], None),
        "k2": (["berlin", "bob", "bob", "like", "live", "live"], None),
        "k3": (["carolin", "cat", "note"], ["Caroline"]),
    }
    scope = Scope(org_id="org_a", now=T0 + timedelta(days=1))
    for query in ("where does Alice live?", "Bob Bob living", "cats", "the and of", ""):
        assert postgres_store.search.keyword_search(scope, query, 10) == local.search.keyword_search(
            scope, query, 10
        )
    assert {
        h.memory_id for h in postgres_store.search.keyword_search(scope, "where does Alice live?", 10)
    } == {
        "k1",
        "k2",
    }


def test_graph_search_hops(postgres_store: PostgresStore) -> None:
    rows = [
        _mem(
            "g_alice",
            "Alice works at Acme",
            type="fact",
            subject="ent:alice",
            predicate="works_at",
            object="ent:acme",
            object_type="entity",
        ),
        _mem(
            "g_acme",
            "Acme is in Lyon",
            type="fact",
            subject="ent:acme",
            predicate="located_in",
            object="ent:lyon",
        ),
        _mem("g_lyon", "Lyon note", entity_id="ent:lyon"),
        _mem("g_bob", "Bob unrelated", entity_id="ent:bob"),
        _mem(
            "g_old",
            "Alice worked at Initech",
            type="fact",
            subject="ent:alice",
            predicate="works_at",
            object="ent:initech",
            status="superseded",
        ),
    ]
    postgres_store.put_memories(rows)
    scope = Scope(org_id="org_a", now=T0 + timedelta(days=1))
    hits = postgres_store.search.graph_search(scope, ["ent:alice"], 2, 10)
    # alice: 0 (g_alice); acme: 1 (g_acme names acme); lyon: 2 (g_lyon); superseded fact not an edge.
    assert [(h.memory_id, h.raw) for h in hits] == [("g_alice", 0.0), ("g_acme", 1.0), ("g_lyon", 2.0)]
    assert [h.memory_id for h in postgres_store.search.graph_search(scope, ["ent:alice"], 1, 10)] == [
        "g_alice",
        "g_acme",
    ]
    assert postgres_store.search.graph_search(scope, ["ent:alice"], 0, 10) == [
        postgres_store.search.graph_search(scope, ["ent:alice"], 2, 1)[0]
    ]


def test_calls_outside_a_transaction_do_not_see_its_uncommitted_writes(postgres_store: PostgresStore) -> None:
    a = _mem("tx_a", "inside")
    seen: list[int] = []

    def other_thread() -> None:
        seen.append(postgres_store.count_memories("org_a"))

    with postgres_store.transaction():
        postgres_store.put_memories([a])
        assert postgres_store.count_memories("org_a") == 1  # same connection inside the block
        t = threading.Thread(target=other_thread)
        t.start()
        t.join(10)
        assert seen == [0]  # another thread gets its own pooled connection and transaction
    assert postgres_store.count_memories("org_a") == 1
    assert postgres_store.in_transaction is False


def test_a_relaxed_event_append_skips_the_wal_wait_in_its_own_transaction_only(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(pg_database, autocommit=True) as admin:  # the test server runs with it off
        name = admin.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        admin.execute(sql.SQL("ALTER DATABASE {} SET synchronous_commit = on").format(sql.Identifier(name)))
    store = PostgresStore(pg_database, max_size=1)  # one connection: a leaked setting would show
    seen: list[str] = []
    real = bookkeeping.append_events

    def spy(conn: Any, events: Any) -> None:
        seen.append(conn.execute("SHOW synchronous_commit").fetchone()[0])
        real(conn, events)

    monkeypatch.setattr(bookkeeping, "append_events", spy)

    def event(i: int) -> Event:
        return Event(event_id=f"evt_{i}", org_id="org_a", type="x", at=datetime(2024, 1, i, tzinfo=UTC))

    try:
        store.append_events([event(1)], durable=False)
        store.append_events([event(2)])
        with store.transaction():  # the transaction decides
            store.append_events([event(3)], durable=False)
        assert seen == ["off", "on", "on"]
        with store._pooled() as conn:
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
    finally:
        store.close()


def test_iter_memories_pages_through_equal_timestamps(postgres_store: PostgresStore) -> None:
    rows = [_mem(f"mem_{i:05d}", f"t{i}", timestamp=T0 + timedelta(seconds=i % 3)) for i in range(1203)]
    rows.append(_mem("mem_other_org", "x", org_id="org_b"))
    postgres_store.put_memories(rows)
    got = [m.memory_id for m in postgres_store.iter_memories("org_a")]  # pages of 500
    expected = sorted((m for m in rows if m.org_id == "org_a"), key=lambda m: (m.timestamp, m.memory_id))
    assert got == [m.memory_id for m in expected]


def test_unreachable_database_is_unavailable(pg_server: PgServer) -> None:
    from engine.errors import Unavailable

    with pytest.raises(Unavailable):
        PostgresStore(pg_server.url(f"{pg_server.prefix}_does_not_exist"))


@contextmanager
def _store_keeping(url: str, model: str) -> Iterator[PostgresStore]:
    """A store that keeps inline vector copies of `model`, closed afterwards."""
    store = PostgresStore(url, max_size=2, inline_model=model)
    try:
        yield store
    finally:
        store.close()


def _plan(
    conn: psycopg.Connection[Any], stmt: sql.Composable, params: dict[str, Any], *, analyze: bool = False
) -> str:
    head = "EXPLAIN (ANALYZE, BUFFERS OFF, TIMING OFF) " if analyze else "EXPLAIN "
    return "\n".join(r[0] for r in conn.execute(sql.SQL(head) + stmt, params).fetchall())


def test_an_entity_scope_is_scored_from_the_index_alone(pg_database: str) -> None:
    """The exact semantic scan of an entity scope reads `memories_by_entity_vec` alone: it INCLUDEs every
    column the scope filter uses and the inline vector copies, so no heap page and no `embeddings` row
    is read per candidate (the join subplan never runs). A column missing from the index, or a copy
    not made, fails this."""
    with _store_keeping(pg_database, "hash:8") as store:
        rng = np.random.default_rng(3)
        mems = [
            _mem(f"mem_{i:04d}", f"text {i}", entity_id=f"ent:e{i % 5}", timestamp=T0 + timedelta(seconds=i))
            for i in range(500)
        ]
        vecs = _unit(rng, len(mems), 8)
        store.put_embeddings("hash:8", {text_hash(m.text): vecs[i] for i, m in enumerate(mems)})
        store.put_memories(mems)  # vectors first, as the service writes: each row takes its copy
        query = _unit(rng, 1, 8)[0]
        with psycopg.connect(store.url, autocommit=True) as conn:
            register_vector(conn, store._vector_oid)
            conn.execute("VACUUM (ANALYZE) memories")  # the visibility map an index-only scan relies on
            conn.execute("SET enable_seqscan = off")  # a 500-row table would be read whole otherwise
            conn.execute("SET enable_bitmapscan = off")
            for scope in (
                Scope(org_id="org_a", entity_id="ent:e1", now=T0 + timedelta(days=1)),
                Scope(org_id="org_a", entity_id="ent:e1", as_of=T0 + timedelta(seconds=250), now=T0),
            ):
                stmt, params = semantic.exact_vector_statement(scope, "hash:8", query, 10, cap=10_001)
                # Without the slim index beside it: whether the planner prefers the index-only scan
                # also depends on the visibility map, which this fixture's VACUUM leaves empty (at 1M
                # memories after VACUUM it does prefer it: see the bench); this checks it is possible.
                with conn.transaction():
                    conn.execute("DROP INDEX memories_by_entity_kw")
                    plan = _plan(conn, stmt, params, analyze=True)
                    raise psycopg.Rollback()
                assert "Index Only Scan using memories_by_entity_vec on memories" in plan, plan
                subplan = plan[plan.index("embeddings_pkey") :]
                assert "never executed" in subplan.splitlines()[0], plan
                rows = conn.execute(stmt, params).fetchall()
                assert rows[0][3] == (100 if scope.as_of is None else 50)
                # What needs no vector (scope counts, recent events, keywords) reads the slim index.
                where, wparams = search.scope_filter(scope)
                plan = _plan(conn, sql.SQL(f"SELECT count(*) FROM memories m WHERE {where}"), wparams)  # noqa: S608
                assert "Index Only Scan using memories_by_entity_kw on memories" in plan, plan
            names = {
                r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")
            }
            storage = conn.execute(
                "SELECT attstorage FROM pg_attribute WHERE attrelid = 'memories'::regclass"
                " AND attname = 'embedding'"
            ).fetchone()
        assert storage == ("p",)  # the copy stays in the heap row (no TOAST write per memory)
        assert {"memories_by_entity_vec", "memories_by_entity_kw", "memories_by_entity_long"} <= names
        assert not names & {"memories_by_entity", "memories_by_entity_ts"}


def _ranked(
    store: PostgresStore, scope: Scope, model: str, query: np.ndarray, k: int
) -> list[tuple[str, float]]:
    return [(h.memory_id, round(h.raw, 5)) for h in store.search.vector_search(scope, model, query, k)]


def test_inline_copies_score_exactly_like_the_join(pg_database: str) -> None:
    """Rows with a copy, without one (written before their vector), with a copy of another model, and
    with a replaced vector: the exact scan ranks them as the join over `embeddings` alone does."""
    rng = np.random.default_rng(11)
    with _store_keeping(pg_database, "hash:8") as store:
        texts = [f"memory text {i}" for i in range(60)]
        vecs = _unit(rng, len(texts), 8)
        first = {text_hash(t): vecs[i] for i, t in enumerate(texts[:40])}
        store.put_embeddings("hash:8", first)
        store.put_embeddings("other:8", {text_hash(t): vecs[-1 - i] for i, t in enumerate(texts)})
        mems = [
            _mem(f"mem_{i:03d}", t, entity_id="ent:x", timestamp=T0 + timedelta(seconds=i))
            for i, t in enumerate(texts)
        ]
        store.put_memories(mems)  # texts 40.. have no hash:8 vector yet
        with psycopg.connect(store.url) as conn:
            copies: dict[str, bool] = dict(
                conn.execute("SELECT memory_id, embedding IS NOT NULL FROM memories").fetchall()
            )
        assert sum(copies.values()) == 40
        store.put_embeddings("hash:8", {text_hash(t): vecs[40 + i] for i, t in enumerate(texts[40:50])})
        replaced = _unit(rng, 1, 8)[0]
        store.put_embeddings("hash:8", {text_hash(texts[0]): replaced})  # a replaced vector
        with psycopg.connect(store.url) as conn:
            copies = dict(conn.execute("SELECT memory_id, embedding IS NOT NULL FROM memories").fetchall())
        assert sum(copies.values()) == 50  # filled on arrival; texts 50.. still have none
        scope = Scope(org_id="org_a", entity_id="ent:x", now=T0 + timedelta(days=1))
        expected = {text_hash(t): v for t, v in zip(texts[:50], vecs[:50], strict=True)}
        expected[text_hash(texts[0])] = replaced
        for _ in range(5):
            q = _unit(rng, 1, 8)[0]
            got = _ranked(store, scope, "hash:8", q, 20)
            sims = sorted(
                (-float(expected[text_hash(m.text)] @ q), m.memory_id)
                for m in mems
                if text_hash(m.text) in expected
            )
            assert [mid for mid, _ in got] == [mid for _, mid in sims[:20]]
            assert [raw for _, raw in got] == pytest.approx([-s for s, _ in sims[:20]], abs=1e-5)
            other = _ranked(store, scope, "other:8", q, 60)  # never inline: through the join
            assert len(other) == 60
        with psycopg.connect(store.url, autocommit=True) as conn:
            conn.execute("UPDATE memories SET embedding = NULL")  # the join alone
        q = _unit(rng, 1, 8)[0]
        without = _ranked(store, scope, "hash:8", q, 50)
        with psycopg.connect(store.url, autocommit=True) as conn:
            conn.execute("UPDATE memories SET embedding = NULL, embedding_model = NULL")
        store.put_embeddings("hash:8", {text_hash(t): expected[text_hash(t)] for t in texts[:50]})
        assert _ranked(store, scope, "hash:8", q, 50) == without  # refilled copies: the same ranking


def test_a_new_text_takes_its_own_copy_and_wide_ids_take_none(pg_database: str) -> None:
    with _store_keeping(pg_database, "hash:384") as store:
        rng = np.random.default_rng(5)
        a, b = _unit(rng, 2, 384)
        store.put_embeddings("hash:384", {text_hash("first text"): a, text_hash("second text"): b})
        m = _mem("mem_1", "first text", entity_id="ent:x")
        store.put_memories([m])
        store.put_memories([msgspec.structs.replace(m, text="second text", status="superseded")])
        with psycopg.connect(store.url) as conn:
            register_vector(conn, store._vector_oid)
            row = conn.execute("SELECT embedding, embedding_model FROM memories").fetchone()
        assert row is not None and row[1] == "hash:384"
        assert np.allclose(row[0], b)
        # The widest ids the API accepts, in 4-byte characters: no 384-dim copy fits their btree entry, and
        # the write still succeeds (a copy that did not fit would fail the insert).
        wide = "\U0001d518"
        w = _mem(
            "mem_01JDXQ8Y0S3N9V4WTM6Z2R7KQA",
            "first text",
            org_id="org_" + "o" * 60,
            namespace=wide * 64,
            entity_id="ent:" + wide * 252,
        )
        assert pg_rows.inline_dims_max(w, "hash:384") < 384
        store.put_memories([w, msgspec.structs.replace(w, status="superseded")])
        # The longest entity id that still takes a 384-dim copy: written, then its status changed.
        for n in range(252, 0, -1):
            fit = msgspec.structs.replace(
                w, memory_id=f"mem_fit_{n}", namespace="default", entity_id="ent:" + wide * n
            )
            if pg_rows.inline_dims_max(fit, "hash:384") >= 384:
                break
        store.put_memories([fit])
        store.put_memories([msgspec.structs.replace(fit, status="superseded", type="document")])
        with psycopg.connect(store.url) as conn:
            copies: dict[str, bool] = dict(
                conn.execute("SELECT memory_id, embedding IS NOT NULL FROM memories").fetchall()
            )
        assert copies == {"mem_1": True, w.memory_id: False, fit.memory_id: True}
        scope = Scope(org_id=fit.org_id, entity_id=fit.entity_id, now=T0, as_of=T0)
        assert [h.memory_id for h in store.search.vector_search(scope, "hash:384", a, 3)] == [fit.memory_id]


def test_bulk_load_writes_inline_copies(pg_database: str) -> None:
    with _store_keeping(pg_database, "hash:8") as store:
        rng = np.random.default_rng(9)
        vecs = _unit(rng, 3, 8)
        store.bulk_load([], model="hash:8", vectors={text_hash("t0"): vecs[0]})
        mems = [_mem(f"mem_{i}", f"t{i}", entity_id="ent:x") for i in range(3)]
        store.bulk_load(mems[:2], model="hash:8", vectors={text_hash("t1"): vecs[1]})  # t0 from the table
        store.bulk_load(mems[2:])  # no vector for t2 anywhere
        with psycopg.connect(store.url) as conn:
            register_vector(conn, store._vector_oid)
            rows: dict[str, Any] = dict(conn.execute("SELECT memory_id, embedding FROM memories").fetchall())
        assert np.allclose(rows["mem_0"], vecs[0]) and np.allclose(rows["mem_1"], vecs[1])
        assert rows["mem_2"] is None


def test_a_connection_used_moments_ago_is_not_pinged(
    postgres_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg_pool import ConnectionPool

    pings: list[object] = []
    original = ConnectionPool.check_connection

    def counted(conn: Any) -> None:
        pings.append(conn)
        original(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    postgres_store.count_memories()
    before = len(pings)
    for _ in range(5):
        postgres_store.count_memories()
    assert len(pings) == before  # back-to-back reads: no round trip before each
    monkeypatch.setattr("engine.storage.postgres.store.CHECK_IDLE_S", 0.0)
    postgres_store.count_memories()
    assert len(pings) == before + 1  # idle past the threshold: checked


def test_an_idle_connection_dropped_by_the_server_is_replaced(
    postgres_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.storage.postgres.store.CHECK_IDLE_S", 0.01)
    postgres_store.put_memories([_mem("mem_1", "still here")])
    with psycopg.connect(postgres_store.url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()) t"
        ).fetchone()
    assert killed is not None and killed[0] >= 1
    time.sleep(0.05)
    assert postgres_store.get_memory("org_a", "mem_1") is not None  # a reconnect, not an error


def test_longest_valid_ids_fit_the_entity_index(postgres_store: PostgresStore) -> None:
    """btree entries are limited to 2,704 bytes: the covering index must take the longest namespace and
    entity id the API accepts, in 4-byte characters, with the agent id beside them."""
    wide = "\U0001d518"  # 4 bytes in UTF-8
    m = _mem(
        "mem_01JDXQ8Y0S3N9V4WTM6Z2R7KQA",
        "a fact with the widest ids",
        org_id="org_" + "o" * 60,
        namespace=wide * 64,
        entity_id="ent:" + wide * 252,
        agent_id=wide * 128,
        valid_from=T0,
        valid_to=T0 + timedelta(days=1),
    )
    postgres_store.put_memories([m])
    scope = Scope(org_id=m.org_id, namespace=m.namespace, entity_id=m.entity_id, agent_id=m.agent_id, now=T0)
    assert [h.memory_id for h in postgres_store.search.keyword_search(scope, "widest fact", 5)] == [
        m.memory_id
    ]


def test_keyword_ranks_inline_and_long_texts_like_the_local_index(postgres_store: PostgresStore) -> None:
    """In an entity scope, rows with the inline terms (short texts) and without them (a text too long
    for the index entry, and a row whose copy is cleared) are ranked exactly as the in-memory store
    ranks them; the copy equals `kw` and follows text updates."""
    long_text = "Ann: garden " + " ".join(f"word{i}" for i in range(400)) + " tomatoes"
    mems = [
        _mem(f"mem_{i}", t, entity_id="ent:x", timestamp=T0 + timedelta(seconds=i), type="event")
        for i, t in enumerate(
            [
                "my garden has tomatoes",
                "tomatoes again and tomatoes",
                "Ann: the garden",
                "nothing here",
                long_text,
                "garden tomatoes garden",
            ]
        )
    ]
    update = msgspec.structs.replace(mems[3], text="Ann: now the garden too")
    local = open_store("memory")
    for store in (postgres_store, local):
        store.put_memories(mems)
        store.put_memories([update])
    with psycopg.connect(postgres_store.url, autocommit=True) as conn:
        conn.execute("UPDATE memories SET kw_small = NULL, speaker_small = NULL WHERE memory_id = 'mem_5'")
        small: dict[str, bool] = dict(
            conn.execute("SELECT memory_id, kw_small IS NOT NULL AND kw_small = kw FROM memories").fetchall()
        )
    assert small == {
        "mem_0": True,
        "mem_1": True,
        "mem_2": True,
        "mem_3": True,
        "mem_4": False,
        "mem_5": False,
    }
    scope = Scope(org_id="org_a", entity_id="ent:x", now=T0 + timedelta(days=1))
    hits = postgres_store.search.keyword_search(scope, "garden tomatoes", 10)
    assert hits == local.search.keyword_search(scope, "garden tomatoes", 10)
    assert {"mem_3", "mem_4", "mem_5"} <= {h.memory_id for h in hits}
    assert (
        postgres_store.search.speaker_shares(scope, ["Ann"])
        == local.search.speaker_shares(scope, ["Ann"])
        == [3 / 6]
    )


def test_speaker_shares_after_a_keyword_search_of_the_scope_cost_no_statement(
    postgres_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keyword statement counts the speaker words it is given: asked of them right after it (as the
    pipeline asks for the semantic query), `speaker_shares` answers from those counts; a word it did not
    count, another scope, or a write in between, has it count by a statement of its own, with the same
    answers."""
    from engine.storage.postgres import keywords

    postgres_store.put_memories(_turns("e", "ent:c", ["Caroline", "Mel Lee", "Caroline", "Caroline"]))
    statements: list[list[str]] = []
    counted = keywords.count_speakers

    def counting(*args: Any) -> list[float]:
        statements.append(list(args[-1]))
        return counted(*args)

    monkeypatch.setattr(keywords, "count_speakers", counting)
    scope = Scope(org_id="org_a", entity_id="ent:c", now=T0 + timedelta(days=1))
    hits = postgres_store.search.keyword_search(scope, "words", 5, ["Caroline", "Lee", "Bob"])
    assert hits == postgres_store.search.keyword_search(scope, "words", 5)
    assert postgres_store.search.speaker_shares(scope, ["Caroline", "Lee", "Bob"]) == [0.75, 0.25, 0.0]
    assert postgres_store.search.speaker_shares(scope, ["Lee"]) == [0.25]
    assert statements == []
    assert postgres_store.search.speaker_shares(scope, ["Mel"]) == [0.25]
    assert statements == [["Mel"]]
    other = Scope(org_id="org_a", entity_id="ent:c", now=T0 + timedelta(days=2))
    assert postgres_store.search.speaker_shares(other, ["Caroline"]) == [0.75]
    assert statements[-1] == ["Caroline"]
    postgres_store.search.keyword_search(scope, "words", 5, ["Caroline", "Bob"])
    postgres_store.put_memories([_mem("e9", "Bob: hi", type="event", entity_id="ent:c")])
    assert postgres_store.search.speaker_shares(scope, ["Caroline", "Bob"]) == [0.6, 0.2]
    assert statements[-1] == ["Caroline", "Bob"]
