r"""The three retrieval channels and the scope filter, as SQL. Every query filters by the whole `Scope`
inside the database (see `scope_filter`), so no eligible memory is lost to a fetch-then-filter.

Semantic (`vector_search`): memories join `embeddings` on (model, text_hash); cosine distance `<=>`.
Two plans, chosen per query by the size of the scope:
- Exact (`exact_vector_statement`), when the scope has at most `EXACT_SCAN_MAX` (10,000) candidates.
  With an entity in the scope (assemble always has one) a single statement scores at most 10,001
  rows and also counts them; 10,001 means "too big", and the HNSW plan runs instead.
  Without an entity, a bounded count comes first (`SELECT count(*) FROM (SELECT 1 ... WHERE <scope>
  LIMIT 10,001)`, through the (org, namespace, status, ts) index). Each scope row's vector is its
  inline copy when it carries one for the model (schema migration 3, `PostgresStore.inline_model`:
  then an entity scope is scored from the entity index's pages alone), else its text's row in
  `embeddings` by the (model, text_hash) primary key; the distances are materialized (a CTE without
  ORDER BY, so the planner cannot walk the HNSW index, which stops after ef_search neighbours), then
  sorted: exact, and its cost grows with the scope (more through the join than inline), not with the
  table. Why: the HNSW index is shared by every org and entity; an entity-scoped query (assemble
  always has one) keeps maybe 1 in 1,000 of the index's neighbours, so an iterative scan walks tens of
  thousands of index entries (up to `hnsw.max_scan_tuples`) and can still come back short: on a large
  table with many entities that is the slow path.
- HNSW (`vector_statement`), for larger scopes: the per-model HNSW expression index (see vectors.py),
  ordered by (distance, newer timestamp, memory_id): the planner walks the index and adds an
  incremental sort for the tie-breakers. With filters, a plain HNSW scan stops after
  `hnsw.ef_search` candidates and can return fewer than k rows; so each search sets, for its
  transaction only, `hnsw.iterative_scan = relaxed_order` (pgvector 0.8: keep scanning the index
  until k rows pass the filter, bounded by `hnsw.max_scan_tuples`, 20,000 by default) and
  `hnsw.ef_search = max(40, k)` (capped at 1,000). `relaxed_order` may emit rows slightly out of
  order, so the k rows are re-sorted. HNSW is approximate: on a large scope a true neighbour can be
  missed (recall ~0.95+ at default settings).
raw = 1 - cosine distance (0 for a zero vector).

Plans are made per call: every query here runs with `prepare=False` (an unnamed statement, planned
with its actual parameters). psycopg otherwise prepares a statement after 5 runs on a connection, and
after 5 more PostgreSQL may switch to a generic plan made without the parameters, which cannot see
how selective the entity is and is far slower on a large table; planning each call costs much less.

Keyword: Okapi BM25 with the local index's tokenizer, idf and parameters, in one statement over the
scope's rows (`keywords`).

Graph (`graph_search`): breadth-first over the entity graph, one SQL query per hop (indexed lookups
by entity_id, subject, object_entity). Every in-scope memory links all the entities it names
(entity_id, subject, and `object_entity`: the object when object_type is 'entity' or it is an `ent:`
string) to each other. A memory is at the smallest hop distance of any entity it names; raw = that
distance. Ties everywhere: newer timestamp first, then memory_id (as in the other stores).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql

from engine.storage.base import Adjacent, Hit, Scope, Vector
from engine.storage.postgres.pgtext import dec, enc
from engine.storage.postgres.vectors import vector_type
from engine.storage.postgres.where import Where
from engine.timeutil import to_micros, to_utc

Params = dict[str, Any]


def scope_filter(scope: Scope, alias: str = "m") -> tuple[str, Params]:
    """A WHERE fragment (placeholders named s_*) selecting the retrieval candidates of `scope`."""
    a = alias
    w = Where().add(f"{a}.org_id = %(s_org)s", s_org=enc(scope.org_id))
    w.add(f"{a}.namespace = %(s_ns)s", s_ns=enc(scope.namespace)).add(f"NOT {a}.archived")
    if scope.entity_id is not None:
        w.add(f"{a}.entity_id = %(s_entity)s", s_entity=enc(scope.entity_id))
    if scope.agent_id is not None:
        w.add(f"{a}.agent_id = %(s_agent)s", s_agent=enc(scope.agent_id))
    if scope.as_of is None:
        w.add(f"{a}.status = 'active'")
        if not scope.expired:
            w.add(f"({a}.valid_to IS NULL OR {a}.valid_to > %(s_now)s)", s_now=to_utc(scope.now))
    else:
        w.add(f"coalesce({a}.valid_from, {a}.ts) <= %(s_asof)s", s_asof=to_utc(scope.as_of))
        w.add(f"({a}.valid_to IS NULL OR {a}.valid_to > %(s_asof)s)")
    return w.sql, w.params


def sorted_hits(rows: Sequence[tuple[str, float, datetime]], k: int, *, descending: bool) -> list[Hit]:
    """Best first, ties broken by newer timestamp, then memory_id (the order every store uses)."""
    sign = -1.0 if descending else 1.0
    ordered = sorted(rows, key=lambda r: (sign * float(r[1]), -to_micros(r[2]), r[0]))
    return [Hit(dec(memory_id), float(raw)) for memory_id, raw, _ in ordered[:k]]


def vector_statement(scope: Scope, model: str, query: Vector, k: int) -> tuple[sql.Composed, Params]:
    """The semantic channel's SQL and parameters (separate so tests can EXPLAIN it)."""
    dims = int(query.shape[-1])
    where, params = scope_filter(scope)
    params["q"] = query
    params["k"] = k
    vt = vector_type(dims)
    # Ordered by the indexed expression first: the planner walks the HNSW index and adds an
    # incremental sort for the tie-breakers, or (small scope) sorts the scope's rows exactly.
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


#: Scopes with at most this many candidates get the exact plan (see the module docstring).
EXACT_SCAN_MAX = 10_000


def exact_vector_statement(
    scope: Scope, model: str, query: Vector, k: int, *, cap: int | None = None
) -> tuple[sql.Composed, Params]:
    """The exact semantic plan: every scope row with its distance (a materialized CTE without ORDER BY,
    so the planner cannot walk the HNSW index: ordering happens outside it), then the top k. Columns
    as `vector_statement`; with `cap`, at most `cap` rows are scored and a 4th column counts them
    (cap reached = the scope is too big for this plan)."""
    dims = int(query.shape[-1])
    where, params = scope_filter(scope)
    params["q"] = query
    params["k"] = k
    params["cap"] = cap
    vt = vector_type(dims)
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


def _scored(rows: Sequence[tuple[Any, ...]]) -> list[tuple[str, float, datetime]]:
    """The exact plan's rows that have a vector (see `exact_vector_statement`)."""
    return [(r[0], r[1], r[2]) for r in rows if r[1] is not None]


def bounded_scope_size(conn: psycopg.Connection[Any], scope: Scope, limit: int) -> int:
    """The scope's candidate count, reading at most `limit` + 1 rows (returns `limit` + 1 if larger)."""
    where, params = scope_filter(scope)
    params["lim"] = limit + 1
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT %(lim)s) AS c",
        params,
        prepare=False,
    ).fetchone()
    return int(row[0]) if row else 0


def vector_search(
    conn: psycopg.Connection[Any],
    scope: Scope,
    model: str,
    query: Vector,
    k: int,
    *,
    exact_max: int = EXACT_SCAN_MAX,
) -> list[Hit]:
    """Exact for scopes of at most `exact_max` candidates, HNSW otherwise (module docstring)."""
    if k <= 0:
        return []
    if exact_max > 0 and scope.entity_id is not None:
        # Entity scopes are nearly always small: score up to exact_max + 1 rows in one statement.
        stmt, params = exact_vector_statement(scope, model, query, k, cap=exact_max + 1)
        rows = conn.execute(stmt, params, prepare=False).fetchall()
        if not rows or int(rows[0][3]) <= exact_max:
            return sorted_hits(_scored(rows), k, descending=True)
    elif exact_max > 0 and bounded_scope_size(conn, scope, exact_max) <= exact_max:
        stmt, params = exact_vector_statement(scope, model, query, k)
        rows = conn.execute(stmt, params, prepare=False).fetchall()
        return sorted_hits(_scored(rows), k, descending=True)
    stmt, params = vector_statement(scope, model, query, k)
    with conn.transaction():  # the settings are transaction-local (the store may read in autocommit)
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(max(40, k), 1000)),))
        rows = conn.execute(stmt, params, prepare=False).fetchall()
    return sorted_hits(rows, k, descending=True)


def graph_search(
    conn: psycopg.Connection[Any], scope: Scope, seeds: Sequence[str], depth: int, k: int
) -> list[Hit]:
    if k <= 0 or not seeds or depth < 0:
        return []
    where, params = scope_filter(scope)
    distance: dict[str, int] = {enc(s): 0 for s in seeds}  # column-encoded entity ids
    frontier = list(distance)
    # Each memory links every entity it names (entity_id, subject, object_entity) to the others.
    hop_sql = f"""
        SELECT m.entity_id, m.subject, m.object_entity FROM memories m
        WHERE (m.entity_id = ANY(%(frontier)s) OR m.subject = ANY(%(frontier)s)
               OR m.object_entity = ANY(%(frontier)s)) AND {where}
    """
    for hop in range(1, depth + 1):
        if not frontier:
            break
        rows = conn.execute(hop_sql, {**params, "frontier": frontier}, prepare=False).fetchall()
        nxt: list[str] = []
        for row in rows:
            for ent in row:
                if ent is not None and ent not in distance:
                    distance[ent] = hop
                    nxt.append(ent)
        frontier = nxt
    ents = list(distance)
    # One equality (hash) join per column, not one join ON a three-way OR (a nested loop of scope rows
    # x entities); entities are distinct, so each
    # memory appears once and LEAST (which skips NULLs) is its smallest distance.
    final_sql = f"""
        WITH d AS MATERIALIZED (SELECT * FROM unnest(%(ents)s::text[], %(dists)s::int[]) AS d(ent, dist))
        SELECT m.memory_id, LEAST(d1.dist, d2.dist, d3.dist) AS dist, m.ts
        FROM memories m
        LEFT JOIN d d1 ON d1.ent = m.entity_id
        LEFT JOIN d d2 ON d2.ent = m.subject
        LEFT JOIN d d3 ON d3.ent = m.object_entity
        WHERE (d1.ent IS NOT NULL OR d2.ent IS NOT NULL OR d3.ent IS NOT NULL)
          AND (m.entity_id = ANY(%(ents)s) OR m.subject = ANY(%(ents)s) OR m.object_entity = ANY(%(ents)s))
          AND {where}
        ORDER BY dist, m.ts DESC, m.memory_id
        LIMIT %(k)s
    """
    rows = conn.execute(
        final_sql, {**params, "ents": ents, "dists": [distance[e] for e in ents], "k": k}, prepare=False
    ).fetchall()
    return sorted_hits(rows, k, descending=False)


def scope_size(conn: psycopg.Connection[Any], scope: Scope) -> int:
    where, params = scope_filter(scope)
    row = conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params, prepare=False).fetchone()
    return int(row[0]) if row else 0


def adjacent_events(
    conn: psycopg.Connection[Any], scope: Scope, memory_ids: Sequence[str], span: int, max_gap: timedelta
) -> list[Adjacent]:
    """`Store.adjacent_events`: per in-scope event anchor, `span` in-scope events on each side in
    (ts, memory_id) order (two index-ordered LATERAL scans), then cut where a gap exceeds `max_gap`."""
    if span <= 0 or not memory_ids:
        return []
    where, params = scope_filter(scope, "m")
    anchor_where, _ = scope_filter(scope, "a")  # same placeholders, same values
    params.update(ids=[enc(i) for i in dict.fromkeys(memory_ids)], span=span)
    stmt = f"""
        SELECT a.memory_id, a.ts, n.memory_id, n.ts, n.dir
        FROM memories a
        CROSS JOIN LATERAL (
            (SELECT m.memory_id, m.ts, -1 AS dir FROM memories m
             WHERE m.type = 'event' AND {where} AND (m.ts, m.memory_id) < (a.ts, a.memory_id)
             ORDER BY m.ts DESC, m.memory_id DESC LIMIT %(span)s)
            UNION ALL
            (SELECT m.memory_id, m.ts, 1 AS dir FROM memories m
             WHERE m.type = 'event' AND {where} AND (m.ts, m.memory_id) > (a.ts, a.memory_id)
             ORDER BY m.ts, m.memory_id LIMIT %(span)s)
        ) n
        WHERE a.memory_id = ANY(%(ids)s) AND a.type = 'event' AND {anchor_where}
    """
    rows = conn.execute(stmt, params, prepare=False).fetchall()
    sides: dict[tuple[str, int], list[tuple[datetime, str]]] = {}
    anchor_ts: dict[str, datetime] = {}
    for anchor, a_ts, memory_id, ts, direction in rows:
        anchor_ts[anchor] = a_ts
        sides.setdefault((anchor, int(direction)), []).append((ts, memory_id))
    out: list[Adjacent] = []
    for anchor in params["ids"]:
        if anchor not in anchor_ts:
            continue
        for direction in (-1, 1):
            side = sorted(sides.get((anchor, direction), []), reverse=direction < 0)
            previous = anchor_ts[anchor]
            for d, (ts, memory_id) in enumerate(side, start=1):
                if abs(ts - previous) > max_gap:
                    break
                out.append(Adjacent(dec(anchor), dec(memory_id), direction * d))
                previous = ts
    return out
