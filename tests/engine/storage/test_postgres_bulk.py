"""PostgresStore's exact small-scope vector plan and `bulk_load` (COPY, HNSW rebuild)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg import sql

from engine.embed.passages import passage_model
from engine.models import Memory, text_hash
from engine.storage.base import Scope, Vector
from engine.storage.postgres import PostgresStore, semantic
from engine.storage.postgres.vectors import hnsw_index_name, register_vector
from tests.factories import memory
from tests.pg_fixture import pg_database, pg_server, postgres_store

pytestmark = pytest.mark.integration
__all__ = ["pg_database", "pg_server", "postgres_store"]

T0 = datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)
MODEL = "hash:8"


def _mem(i: int, entity: str, **kw: Any) -> Memory:
    fields = {"text": f"text number {i}", "timestamp": T0 + timedelta(seconds=i), **kw}
    return memory(memory_id=f"mem_{i:05d}", entity_id=entity, at=T0, **fields)


def _unit(rng: np.random.Generator, n: int, dims: int) -> Vector:
    x = rng.normal(size=(n, dims)).astype(np.float32)
    unit: Vector = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit


def _index_exists(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT 1 FROM pg_class WHERE relname = %s", (name,)).fetchone() is not None


def test_bulk_load_round_trips_and_rebuilds_the_index(postgres_store: PostgresStore) -> None:
    rng = np.random.default_rng(3)
    vecs = _unit(rng, 400, 8)
    mems = [_mem(i, "ent:a" if i % 4 == 0 else "ent:b") for i in range(400)]
    mems[0] = _mem(
        0,
        "ent:a",
        type="fact",
        subject="ent:a",
        predicate="lives_in",
        object="ent:paris",
        object_type="entity",
        keys=["ent:a|lives_in"],
        tags=["geo"],
        valid_from=T0,
    )
    vectors = {text_hash(m.text): vecs[i] for i, m in enumerate(mems)}
    assert postgres_store.bulk_load(mems, model=MODEL, vectors=vectors, rebuild_index=True) == 400
    assert postgres_store.count_memories("org_a") == 400
    assert postgres_store.get_memory("org_a", "mem_00000") == mems[0]
    assert [m.memory_id for m in postgres_store.find_by_key("org_a", "default", "ent:a|lives_in")] == [
        "mem_00000"
    ]
    got = postgres_store.get_embeddings(MODEL, [text_hash(mems[7].text)])
    assert np.array_equal(got[text_hash(mems[7].text)], vecs[7])  # binary COPY is exact for float32
    assert _index_exists(postgres_store.url, hnsw_index_name(MODEL, 8))
    # The graph and keyword channels see the generated columns of COPY-ed rows.
    scope = Scope(org_id="org_a", entity_id="ent:a", now=T0 + timedelta(days=1))
    assert [h.memory_id for h in postgres_store.search.graph_search(scope, ["ent:paris"], 1, 5)][
        0
    ] == "mem_00000"
    assert postgres_store.search.keyword_search(scope, "number 8", 3)[0].memory_id == "mem_00008"


def test_bulk_load_refuses_existing_ids_and_writes_nothing(postgres_store: PostgresStore) -> None:
    postgres_store.put_memories([_mem(1, "ent:a")])
    with pytest.raises(psycopg.errors.UniqueViolation):
        postgres_store.bulk_load([_mem(2, "ent:a"), _mem(1, "ent:a")])
    assert postgres_store.count_memories("org_a") == 1


def test_small_scope_vector_search_is_exact_and_skips_hnsw(postgres_store: PostgresStore) -> None:
    """100 of 2,000 rows in entity a: the exact plan (no HNSW in the plan) returns the true top k in
    order; forcing the HNSW plan (exact_max=0) returns k rows of the same scope."""
    rng = np.random.default_rng(11)
    n, dims, k = 2000, 8, 10
    vecs = _unit(rng, n, dims)
    mems = [_mem(i, "ent:a" if i % 20 == 0 else "ent:b") for i in range(n)]
    postgres_store.bulk_load(
        mems,
        model=MODEL,
        vectors={text_hash(m.text): vecs[i] for i, m in enumerate(mems)},
        rebuild_index=True,
    )
    query = _unit(rng, 1, dims)[0]
    scope = Scope(org_id="org_a", entity_id="ent:a", now=T0 + timedelta(days=1))
    expected = sorted(range(0, n, 20), key=lambda i: -float(vecs[i] @ query))[:k]
    with psycopg.connect(postgres_store.url) as conn:
        register_vector(conn, postgres_store._vector_oid)
        conn.execute("ANALYZE")
        assert semantic.bounded_scope_size(conn, scope, 50) == 51
        assert semantic.bounded_scope_size(conn, scope, 1000) == 100
        stmt, params = semantic.exact_vector_statement(scope, MODEL, query, k)
        plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + stmt, params).fetchall())
        exact = semantic.vector_search(conn, scope, MODEL, query, k)
        by_vectors = semantic.vector_search(conn, scope, MODEL, query, k, exact_max=0)  # over the vectors
        capped = semantic.vector_search(conn, scope, MODEL, query, k, exact_max=50)  # 100 > 50: the same
        hnsw = semantic.vector_search(conn, scope, MODEL, query, k, exact_max=0, vectors_max=0)
        assert semantic.model_vectors(conn, MODEL, dims, 10) == 11
    assert hnsw_index_name(MODEL, dims) not in plan
    assert [h.memory_id for h in exact] == [f"mem_{i:05d}" for i in expected]
    assert [h.raw for h in exact] == pytest.approx([float(vecs[i] @ query) for i in expected], abs=1e-5)
    assert by_vectors == capped == exact  # both exact plans: the same hits, the same scores
    assert len(hnsw) == k and all(int(h.memory_id[4:]) % 20 == 0 for h in hnsw)
    # Through the store: the same exact answer.
    assert [h.memory_id for h in postgres_store.search.vector_search(scope, MODEL, query, k)] == [
        h.memory_id for h in exact
    ]


def test_passage_vectors_are_stored_outside_the_vector_index(postgres_store: PostgresStore) -> None:
    """Passages (`engine.embed.passages`) are looked up by hash only: their vectors get no HNSW index of
    their own and never join the model's (whose exact-or-index plan counts its vectors)."""
    vecs = _unit(np.random.default_rng(5), 3, 8)
    postgres_store.put_embeddings(MODEL, {"whole": vecs[0]})
    postgres_store.put_embeddings(passage_model(MODEL), {"p1": vecs[1], "p2": vecs[2]})
    assert _index_exists(postgres_store.url, hnsw_index_name(MODEL, 8))
    assert not _index_exists(postgres_store.url, hnsw_index_name(passage_model(MODEL), 8))
    got = postgres_store.get_embeddings(passage_model(MODEL), ["p1", "p2"])
    assert set(got) == {"p1", "p2"} and postgres_store.get_embeddings(MODEL, ["p1"]) == {}
