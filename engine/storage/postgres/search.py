r"""The retrieval channels and the scope filter, as SQL. Every query filters by the whole `Scope`
inside the database (see `scope_filter`), so no eligible memory is lost to a fetch-then-filter.

Semantic: exact wherever HNSW would lose evidence (module `semantic`).

Plans are made per call: every query here runs with `prepare=False` (an unnamed statement, planned
with its actual parameters). psycopg otherwise prepares a statement after 5 runs on a connection, and
after 5 more PostgreSQL may switch to a generic plan made without the parameters, which cannot see
how selective the entity is and is far slower on a large table; planning each call costs much less.
The keyword statement of an entity's scope is the exception (`keywords`): its index bounds it.

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

from engine.storage.base import Adjacent, Hit, Scope
from engine.storage.postgres.pgtext import dec, enc, enc_all
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
    if scope.memory_ids is not None:
        w.add(f"{a}.memory_id = ANY(%(s_ids)s)", s_ids=enc_all(sorted(scope.memory_ids)))
    if scope.as_of is None:
        w.add(f"({a}.valid_from IS NULL OR {a}.valid_from <= %(s_now)s)", s_now=to_utc(scope.now))
        active = f"{a}.status = 'active'"
        if not scope.expired:
            active += f" AND ({a}.valid_to IS NULL OR {a}.valid_to > %(s_now)s)"
        held = f"({a}.valid_to IS NULL OR {a}.valid_to > %(s_now)s)"
        w.add(
            f"(({active}) OR ({a}.status = 'disputed' AND {held})"
            f" OR ({a}.status = 'superseded' AND {a}.valid_to > %(s_now)s))"
        )
    else:
        w.add(f"coalesce({a}.valid_from, {a}.ts) <= %(s_asof)s", s_asof=to_utc(scope.as_of))
        w.add(f"({a}.valid_to IS NULL OR {a}.valid_to > %(s_asof)s)")
    return w.sql, w.params


def sorted_hits(rows: Sequence[tuple[str, float, datetime]], k: int, *, descending: bool) -> list[Hit]:
    """Best first, ties broken by newer timestamp, then memory_id (the order every store uses)."""
    sign = -1.0 if descending else 1.0
    ordered = sorted(rows, key=lambda r: (sign * float(r[1]), -to_micros(r[2]), r[0]))
    return [Hit(dec(memory_id), float(raw)) for memory_id, raw, _ in ordered[:k]]


def graph_search(
    conn: psycopg.Connection[Any], scope: Scope, seeds: Sequence[str], depth: int, k: int
) -> list[Hit]:
    # the walk never enters the request's own entity: every candidate touches it
    own = enc(scope.entity_id) if scope.entity_id is not None else None
    seeds = [s for s in seeds if s != scope.entity_id]
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
                if ent is not None and ent not in distance and ent != own:
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
    """`SearchBackend.adjacent_events`: per in-scope event anchor, `span` in-scope events on each side in
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
