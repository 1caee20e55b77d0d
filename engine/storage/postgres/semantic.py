"""The semantic channel on PostgreSQL: exact wherever approximate search would lose evidence.

Memories join `embeddings` on (model, text_hash); cosine distance `<=>`; raw = 1 - distance (0 for a
zero vector); best first, ties by newer timestamp, then memory_id. Three plans, chosen per query:

- Exact over the scope (`exact_vector_statement`), when the scope has at most `EXACT_SCAN_MAX`
  (10,000) candidates. With an entity in the scope (assemble always has one) a single statement
  scores at most 10,001 rows and also counts them; 10,001 means "too big". Without an entity a
  bounded count comes first. Each scope row's vector is its inline copy when it carries one for the
  model (schema migration 3: an entity scope is then scored from the entity index's pages alone),
  else its text's row in `embeddings`; the distances are materialized (a CTE without ORDER BY, so the
  planner cannot walk the HNSW index), then sorted. Its cost grows with the scope, not the table.
- Exact over the model's vectors (`exact_by_vectors_statement`), for larger scopes while the model
  has at most `EXACT_VECTORS_MAX` stored vectors: every vector's distance (a sequential scan of the
  model's rows in `embeddings`, sorted in memory), then the texts walked nearest first, each joined to
  its in-scope memories, until k are found. Its cost grows with the model's vectors, not the scope.
- HNSW (`vector_statement`), beyond both: the per-model HNSW index (vectors.py) walked with
  `hnsw.iterative_scan = relaxed_order` (keep scanning until k rows pass the scope filter) and
  `hnsw.ef_search = HNSW_EF_SEARCH`, then re-sorted. Approximate.

Why exact up to there: `loci bench hnsw` (docs/benchmarks.md) measured the HNSW plan's recall@50
against exact search on org scopes (a tenth of the table) at 10k, 100k and 1M memories: with the
filter, HNSW misses true neighbours at every ef_search (mean recall under 0.99 at 100k and 1M even at
ef_search 1,000, and some queries lose every one), while the two exact plans find all of them at a
cost bounded by the smaller of the scope and the model's vectors.

Plans are made per call: every query runs with `prepare=False` (an unnamed statement planned with its
actual parameters); a generic plan cannot see how selective the entity is and is far slower.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql

from engine.storage.base import Hit, Scope, Vector
from engine.storage.postgres.pgtext import enc
from engine.storage.postgres.search import Params, scope_filter, sorted_hits
from engine.storage.postgres.vectors import vector_type

#: scopes with at most this many candidates are scored row by row (see the module docstring)
EXACT_SCAN_MAX = 10_000
#: larger scopes are scored over every vector of the model while it has at most this many
EXACT_VECTORS_MAX = 200_000
#: the HNSW plan's ef_search beyond both (pgvector's maximum)
HNSW_EF_SEARCH = 1000
#: sort memory of the exact plan over the model's vectors (their distances sort in memory)
VECTORS_WORK_MEM = "64MB"


def _statement_parts(scope: Scope, query: Vector, k: int) -> tuple[int, str, Params, sql.Composable]:
    """(dims, scope WHERE, parameters with the query vector `q` and `k`, the vector(dims) type)."""
    dims = int(query.shape[-1])
    where, params = scope_filter(scope)
    params.update(q=query, k=k)
    return dims, where, params, vector_type(dims)


def vector_statement(scope: Scope, model: str, query: Vector, k: int) -> tuple[sql.Composed, Params]:
    """The HNSW plan's SQL and parameters (separate so tests can EXPLAIN it)."""
    dims, where, params, vt = _statement_parts(scope, query, k)
    # Ordered by the indexed expression first: the planner walks the HNSW index and adds an
    # incremental sort for the tie-breakers.
    stmt = sql.SQL(
        """
        WITH nearest AS MATERIALIZED (
            SELECT m.memory_id, m.ts, (e.embedding::{vt} <=> %(q)b::{vt}) AS distance
            FROM embeddings e JOIN memories m ON m.text_hash = e.text_hash
            WHERE e.model = {model} AND e.dims = {dims} AND {where}
            ORDER BY distance, m.ts DESC, m.memory_id
            LIMIT %(k)s
        )
        SELECT memory_id, CASE WHEN distance = 'NaN' THEN 0.0 ELSE 1.0 - distance END, ts FROM nearest
        """
    ).format(vt=vt, model=sql.Literal(enc(model)), dims=sql.Literal(dims), where=sql.SQL(where))
    return stmt, params


def exact_vector_statement(
    scope: Scope, model: str, query: Vector, k: int, *, cap: int | None = None
) -> tuple[sql.Composed, Params]:
    """The exact plan over the scope: every scope row with its distance (a materialized CTE without
    ORDER BY, so the planner cannot walk the HNSW index), then the top k. With `cap`, at most `cap`
    rows are scored and a 4th column counts them (cap reached = the scope is too big for this plan)."""
    dims, where, params, vt = _statement_parts(scope, query, k)
    params["cap"] = cap
    # A row's inline vector copy (migration 3) when it has one for this model, else its text's vector
    # through the (model, text_hash) key; NULL without a vector (such rows sort last and are dropped
    # by the caller, but still count toward `cap`).
    stmt = sql.SQL(
        """
        WITH scored AS MATERIALIZED (
            SELECT m.memory_id, m.ts,
                   CASE WHEN m.embedding_model = {model} AND vector_dims(m.embedding) = {dims}
                        THEN m.embedding::{vt} <=> %(q)b::{vt}
                        ELSE (SELECT e.embedding::{vt} <=> %(q)b::{vt} FROM embeddings e
                              WHERE e.model = {model} AND e.text_hash = m.text_hash AND e.dims = {dims})
                   END AS distance
            FROM memories m
            WHERE {where}
            LIMIT %(cap)s
        )
        SELECT memory_id, CASE WHEN distance = 'NaN' THEN 0.0 ELSE 1.0 - distance END, ts{counted} FROM scored
        ORDER BY distance, ts DESC, memory_id
        LIMIT %(k)s
        """
    ).format(
        vt=vt,
        model=sql.Literal(enc(model)),
        dims=sql.Literal(dims),
        where=sql.SQL(where),
        counted=sql.SQL(", (SELECT count(*) FROM scored)" if cap is not None else ""),
    )
    return stmt, params


def exact_by_vectors_statement(
    scope: Scope, model: str, query: Vector, k: int
) -> tuple[sql.Composed, Params]:
    """The exact plan over the model's vectors: each vector's distance (materialized, so no index is
    walked), the texts nearest first, each joined to its in-scope memories, the first k."""
    dims, where, params, vt = _statement_parts(scope, query, k)
    stmt = sql.SQL(
        """
        WITH d AS MATERIALIZED (
            SELECT e.text_hash, (e.embedding::{vt} <=> %(q)b::{vt}) AS distance
            FROM embeddings e WHERE e.model = {model} AND e.dims = {dims}
        )
        SELECT m.memory_id, CASE WHEN d.distance = 'NaN' THEN 0.0 ELSE 1.0 - d.distance END, m.ts
        FROM (SELECT text_hash, distance FROM d ORDER BY distance) d
        JOIN memories m ON m.text_hash = d.text_hash
        WHERE {where}
        ORDER BY d.distance, m.ts DESC, m.memory_id
        LIMIT %(k)s
        """
    ).format(vt=vt, model=sql.Literal(enc(model)), dims=sql.Literal(dims), where=sql.SQL(where))
    return stmt, params


def _scored(rows: Sequence[tuple[Any, ...]]) -> list[tuple[str, float, datetime]]:
    """The exact plan's rows that have a vector (see `exact_vector_statement`)."""
    return [(r[0], r[1], r[2]) for r in rows if r[1] is not None]


def bounded_count(conn: psycopg.Connection[Any], query: str, params: Params, limit: int) -> int:
    """Rows of `query` (a SELECT), reading at most `limit` + 1 of them."""
    row = conn.execute(
        f"SELECT count(*) FROM ({query} LIMIT %(lim)s) AS c", {**params, "lim": limit + 1}, prepare=False
    ).fetchone()
    return int(row[0]) if row else 0


def bounded_scope_size(conn: psycopg.Connection[Any], scope: Scope, limit: int) -> int:
    """The scope's candidate count, reading at most `limit` + 1 rows (returns `limit` + 1 if larger)."""
    where, params = scope_filter(scope)
    return bounded_count(conn, f"SELECT 1 FROM memories m WHERE {where}", params, limit)


def model_vectors(conn: psycopg.Connection[Any], model: str, dims: int, limit: int) -> int:
    """The model's stored vectors of `dims` dimensions, counting at most `limit` + 1."""
    return bounded_count(
        conn,
        "SELECT 1 FROM embeddings WHERE model = %(m)s AND dims = %(d)s",
        {"m": enc(model), "d": dims},
        limit,
    )


def _run(conn: psycopg.Connection[Any], plan: tuple[sql.Composed, Params], k: int) -> list[Hit]:
    rows = conn.execute(plan[0], plan[1], prepare=False).fetchall()
    return sorted_hits(_scored(rows), k, descending=True)


def vector_search(
    conn: psycopg.Connection[Any],
    scope: Scope,
    model: str,
    query: Vector,
    k: int,
    *,
    exact_max: int = EXACT_SCAN_MAX,
    vectors_max: int = EXACT_VECTORS_MAX,
) -> list[Hit]:
    """The plan for the scope's and the model's sizes (module docstring)."""
    if k <= 0:
        return []
    if exact_max > 0 and scope.entity_id is not None:
        # Entity scopes are nearly always small: score up to exact_max + 1 rows in one statement.
        stmt, params = exact_vector_statement(scope, model, query, k, cap=exact_max + 1)
        rows = conn.execute(stmt, params, prepare=False).fetchall()
        if not rows or int(rows[0][3]) <= exact_max:
            return sorted_hits(_scored(rows), k, descending=True)
    elif exact_max > 0 and bounded_scope_size(conn, scope, exact_max) <= exact_max:
        return _run(conn, exact_vector_statement(scope, model, query, k), k)
    dims = int(query.shape[-1])
    with conn.transaction():  # the settings are transaction-local (the store may read in autocommit)
        if model_vectors(conn, model, dims, vectors_max) <= vectors_max:
            conn.execute("SELECT set_config('work_mem', %s, true)", (VECTORS_WORK_MEM,))
            return _run(conn, exact_by_vectors_statement(scope, model, query, k), k)
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(HNSW_EF_SEARCH),))
        stmt, params = vector_statement(scope, model, query, k)
        rows = conn.execute(stmt, params, prepare=False).fetchall()
    return sorted_hits(rows, k, descending=True)
