"""Bulk loading: `PostgresStore.bulk_load(memories, model=..., vectors=...)` through COPY.

For initial loads, migrations and benchmarks (hundreds of thousands of rows), where `put_memories`
(one INSERT ... ON CONFLICT per row) and `put_embeddings` (every vector inserted into the live HNSW
graph, a few hundred per second) are far too slow.

- Memories: binary `COPY memories (...) FROM STDIN`, the same column values as `put_memories`
  (`rows.row_of`, and the inline vector copy of the store's `inline_model`, from the load's
  vectors or else from `embeddings`), then their conflict keys by `COPY memory_keys`. Memories must be NEW: an
  existing (org_id, memory_id) aborts the whole load with a unique violation (nothing is written).
  The keyword columns' index copies (by the trigger of schema migration 5) and the B-tree/GIN indexes
  are maintained as rows arrive.
- Vectors: binary COPY into a temporary staging table, then one
  `INSERT INTO embeddings SELECT ... ON CONFLICT (model, text_hash) DO NOTHING` (a vector is a
  function of (model, text), so an existing row is already right).
- HNSW: inserting into a live HNSW index costs a graph search per vector; building it once after
  the load is several times faster (and parallel). So when a load adds at least
  `max(REBUILD_MIN, vectors already stored for that model)` vectors of one (model, dims), the index is
  dropped inside the load's transaction and re-created after the commit
  (`vectors.build_hnsw_index`, with `maintenance_work_mem` raised for that session). Searches in the
  meantime are exact scans (correct, slower on large scopes). `rebuild_index=True/False` forces it.

Everything but the index build runs in one transaction (the caller's, inside `store.transaction()`):
all rows or none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from engine.models import Memory, text_hash
from engine.storage.base import Vector
from engine.storage.postgres.pgtext import enc
from engine.storage.postgres.rows import COLUMNS, INLINE_COLUMNS, inline_dims_max, row_of
from engine.storage.postgres.vectors import hnsw_index_name

#: a load of at least this many vectors (and at least as many as already stored) rebuilds the HNSW index
REBUILD_MIN = 10_000

_MEMORY_TYPES = (
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text",
    "text[]",
    "timestamptz",
    "bool",
    "text",
    "text",
    "timestamptz",
    "timestamptz",
    "text",
    "text",
    "text[]",
    "text[]",
)
assert len(_MEMORY_TYPES) == len(COLUMNS)


def copy_memories(
    conn: psycopg.Connection[Any],
    memories: Sequence[Memory],
    inline: tuple[str, Mapping[str, Vector]] | None = None,
    vector_oid: int = 0,
) -> int:
    """COPY new memories and their conflict keys; returns the number of memories written.
    `inline` = (model, text hash -> vector): the inline copies (rows.py), where they fit."""
    if not memories:
        return 0
    columns: tuple[str, ...] = COLUMNS
    types: list[str | int] = list(_MEMORY_TYPES)
    if inline is not None:
        columns, types = COLUMNS + INLINE_COLUMNS, [*types, "text", vector_oid]
    with conn.cursor() as cur:
        with cur.copy(f"COPY memories ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(types)
            if inline is None:
                for m in memories:
                    copy.write_row(row_of(m))
            else:
                model, vectors = inline
                for m in memories:
                    vec = vectors.get(text_hash(m.text))
                    arr = None if vec is None else np.asarray(vec, dtype=np.float32).reshape(-1)
                    if arr is not None and arr.shape[0] > inline_dims_max(m, model):
                        arr = None
                    copy.write_row((*row_of(m), enc(model), arr))
        keys = [
            (enc(m.org_id), enc(m.namespace), enc(key), enc(m.memory_id))
            for m in memories
            for key in dict.fromkeys(m.keys or ())
        ]
        if keys:
            with cur.copy(
                "COPY memory_keys (org_id, namespace, key, memory_id) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "text", "text", "text"])
                for row in keys:
                    copy.write_row(row)
    return len(memories)


def stored_vectors(conn: psycopg.Connection[Any], model: str, dims: int) -> int:
    row = conn.execute(
        "SELECT count(*) FROM embeddings WHERE model = %s AND dims = %s", (enc(model), dims)
    ).fetchone()
    return int(row[0]) if row else 0


def drop_hnsw_index(conn: psycopg.Connection[Any], model: str, dims: int) -> None:
    conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(hnsw_index_name(model, dims))))


def copy_vectors(
    conn: psycopg.Connection[Any], model: str, vectors: Mapping[str, Vector], vector_oid: int
) -> dict[int, int]:
    """Stage and insert vectors (existing (model, text_hash) rows are kept); returns {dims: count}."""
    by_dims: dict[int, int] = {}
    if not vectors:
        return by_dims
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS loci_stage_embeddings"
        " (text_hash text, dims int, embedding vector) ON COMMIT DROP"
    )
    with conn.cursor() as cur:
        with cur.copy(
            "COPY loci_stage_embeddings (text_hash, dims, embedding) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "int4", vector_oid])
            for h, vec in vectors.items():
                arr = np.asarray(vec, dtype=np.float32).reshape(-1)
                dims = int(arr.shape[0])
                by_dims[dims] = by_dims.get(dims, 0) + 1
                copy.write_row((enc(h), dims, arr))
        cur.execute(
            "INSERT INTO embeddings (model, text_hash, dims, embedding)"
            " SELECT %s, text_hash, dims, embedding FROM loci_stage_embeddings"
            " ON CONFLICT (model, text_hash) DO NOTHING",
            (enc(model),),
        )
        cur.execute("TRUNCATE loci_stage_embeddings")
    return by_dims
