"""pgvector glue: numpy <-> `vector` in pgvector's binary wire format, and the per-model HNSW indexes.

Binary format (pgvector's vector_send/vector_recv): int16 dims, int16 unused, then dims float32, all
big-endian. It is exact for float32, unlike a decimal text round trip.

The `embeddings.embedding` column has no fixed dimension because models differ, and HNSW needs one.
So each (model, dims) gets a partial expression index

    CREATE INDEX ... ON embeddings USING hnsw ((embedding::vector(D)) vector_cosine_ops)
        WHERE model = '<model>' AND dims = D

and `vector_search` orders by exactly that expression with the model as a literal, so the planner
can match the index. Dimensions above pgvector's HNSW limit (2,000) get no index (exact scans).
"""

from __future__ import annotations

import hashlib
import logging
import struct
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format

from engine.storage.base import Vector
from engine.storage.postgres.pgtext import enc

_log = logging.getLogger(__name__)

HNSW_MAX_DIMS = 2000
_HEADER = struct.Struct(">HH")


def fetch_vector_oid(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT oid FROM pg_type WHERE typname = 'vector'").fetchone()
    if row is None:
        raise RuntimeError("the pgvector extension is not installed in this database")
    return int(row[0])


def encode_vector(vec: Vector) -> bytes:
    arr = np.asarray(vec, dtype=">f4").reshape(-1)
    return _HEADER.pack(arr.shape[0], 0) + arr.tobytes()


def decode_vector(data: Buffer) -> Vector:
    buf = bytes(data)
    dims, _ = _HEADER.unpack_from(buf)
    return np.frombuffer(buf, dtype=">f4", count=dims, offset=_HEADER.size).astype(np.float32)


class _VectorTextLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> Vector:
        text = bytes(data).decode("ascii").strip("[]")
        return np.array([float(x) for x in text.split(",")] if text else [], dtype=np.float32)


class _VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> Vector:
        return decode_vector(data)


def register_vector(conn: psycopg.Connection[Any], oid: int) -> None:
    """Make numpy arrays dump as `vector` (binary) and `vector` results load as float32 arrays."""

    class _VectorBinaryDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> Buffer:
            return encode_vector(obj)

    _VectorBinaryDumper.oid = oid
    conn.adapters.register_dumper(np.ndarray, _VectorBinaryDumper)
    conn.adapters.register_loader(oid, _VectorTextLoader)
    conn.adapters.register_loader(oid, _VectorBinaryLoader)


def hnsw_index_name(model: str, dims: int) -> str:
    digest = hashlib.sha1(model.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"embeddings_hnsw_{digest}_{dims}"


def vector_type(dims: int) -> sql.Composable:
    return sql.SQL("vector({})").format(sql.Literal(int(dims)))


def _create_hnsw_statement(name: str, model: str, dims: int) -> sql.Composed:
    """CREATE INDEX IF NOT EXISTS: the partial HNSW (cosine) index over one (model, dims) space."""
    return sql.SQL(
        "CREATE INDEX IF NOT EXISTS {name} ON embeddings USING hnsw ((embedding::{vt}) vector_cosine_ops)"
        " WHERE model = {model} AND dims = {dims}"
    ).format(
        name=sql.Identifier(name),
        vt=vector_type(dims),
        model=sql.Literal(enc(model)),
        dims=sql.Literal(int(dims)),
    )


def ensure_hnsw_index(url: str, model: str, dims: int, *, lock_timeout_ms: int = 2000) -> bool:
    """Create the HNSW index for (model, dims) if missing, on a connection of its own (autocommit) so
    it never joins a caller's transaction. Returns False when it could not get the table lock in time
    (another transaction writes embeddings); searches stay exact without it and a later call retries."""
    if dims > HNSW_MAX_DIMS:
        return True
    name = hnsw_index_name(model, dims)
    stmt = _create_hnsw_statement(name, model, dims)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_class WHERE relname = %s", (name,)).fetchone()
            if exists:
                return True
            conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(f"{lock_timeout_ms}ms")))
            # Two creators at once: serialize them so IF NOT EXISTS sees the other's index.
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
            try:
                conn.execute(stmt)
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))
        return True
    except psycopg.errors.LockNotAvailable:
        _log.warning("could not lock embeddings to create %s; will retry on a later write", name)
        return False


def build_hnsw_index(
    url: str, model: str, dims: int, *, maintenance_work_mem: str = "512MB", parallel_workers: int = 2
) -> None:
    """(Re-)create the HNSW index for (model, dims) after a bulk load, on its own autocommit connection,
    with more build memory (a graph that fits in `maintenance_work_mem` builds several times faster)
    and up to `parallel_workers` parallel maintenance workers. No lock timeout: it waits for writers."""
    if dims > HNSW_MAX_DIMS:
        return
    name = hnsw_index_name(model, dims)
    stmt = _create_hnsw_statement(name, model, dims)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (maintenance_work_mem,))
        conn.execute(
            "SELECT set_config('max_parallel_maintenance_workers', %s, false)", (str(parallel_workers),)
        )
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
        try:
            conn.execute(stmt)
        finally:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (name,))
