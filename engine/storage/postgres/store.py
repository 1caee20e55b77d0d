"""`PostgresStore`: the Store protocol on PostgreSQL + pgvector through a psycopg 3 connection pool.

See the package docstring (`engine.storage.postgres`) for transactions and cross-process locking.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from engine.embed.passages import is_passage_model
from engine.errors import Conflict, Unavailable
from engine.models import ApiKey, Event, IdempotencyRecord, Memory, text_hash
from engine.storage.base import EventQuery, ListQuery, Vector
from engine.storage.postgres import bookkeeping, bulk, rows
from engine.storage.postgres.backend import PostgresSearch
from engine.storage.postgres.pgtext import dec, enc, enc_all
from engine.storage.postgres.schema import migrate
from engine.storage.postgres.vectors import (
    HNSW_MAX_DIMS,
    build_hnsw_index,
    ensure_hnsw_index,
    fetch_vector_oid,
    register_vector,
)

Conn = psycopg.Connection[Any]
log = logging.getLogger(__name__)
#: a pooled connection idle longer than this is pinged before use (see PostgresStore)
CHECK_IDLE_S = 1.0
# A transaction aborted by the database because of another one (HTTP 409 "a write race lost").
_LOST_RACE = (
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
    psycopg.errors.LockNotAvailable,
)


@contextmanager
def _engine_errors() -> Iterator[None]:
    """PostgreSQL's failures as the engine's: a transaction the database aborted is Conflict (its text,
    with process and lock ids, goes to the log only), a lost connection or pool Unavailable."""
    try:
        yield
    except _LOST_RACE as exc:
        log.warning("a write transaction was aborted by PostgreSQL: %s", exc)
        raise Conflict("a concurrent write won; nothing was written: retry the request") from exc
    except (psycopg.OperationalError, PoolTimeout) as exc:
        raise Unavailable(f"PostgreSQL unavailable: {exc}") from exc


class PostgresStore:
    """PostgreSQL + pgvector store. `url` is a libpq URL (`postgresql://` or `postgres://`).

    Options: `min_size`/`max_size` of the connection pool; `migrate` runs the schema migrations on
    start (under an advisory lock, safe with many workers); `lock_conflict_keys` makes `find_by_key`
    and `get_idempotency` take a transaction-scoped advisory lock when called inside `transaction()`;
    `check_connections` tests a pooled connection on checkout (one round trip) when it has been idle
    for more than `CHECK_IDLE_S` seconds, so a database restart or a dropped idle connection costs a
    reconnect, not an error; a connection returned moments ago is handed out unchecked (a ping before
    each of an assemble's reads would cost CPU on every call). `timeout` is how long a call waits for a
    free pooled connection before raising engine.errors.Unavailable.

    `inline_model`: the embedding model whose vectors memory rows carry a copy of (schema migration 3;
    the server sets its embedder's model). An entity-scoped exact semantic search for that model then
    reads the scope's vectors from the entity index instead of joining `embeddings` row by row. A copy
    is taken when a memory is written and its text's vector for that model is already stored (the
    service embeds before it writes; `bulk_load` copies too), and only if it fits the row's btree entry
    (`rows.inline_dims_max`: 384 dims with ids of up to ~400 bytes). Rows without a copy are scored
    through the join: results are the same either way.

    Each worker process holds up to `max_size` connections: size PostgreSQL's max_connections (or a
    pgbouncer in front) for workers x max_size. psycopg prepares statements run 5+ times on a
    connection; behind pgbouncer in transaction mode use pgbouncer >= 1.21 with
    max_prepared_statements set.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        migrate_on_start: bool = True,
        lock_conflict_keys: bool = True,
        check_connections: bool = True,
        timeout: float = 30.0,
        inline_model: str | None = None,
    ) -> None:
        self.url = url
        self.inline_model = inline_model
        self.lock_conflict_keys = lock_conflict_keys
        try:
            if migrate_on_start:
                migrate(url)
            with psycopg.connect(url) as conn:
                self._vector_oid = fetch_vector_oid(conn)
        except psycopg.OperationalError as exc:
            raise Unavailable(f"cannot reach PostgreSQL: {exc}") from exc
        self._indexed: set[tuple[str, int]] = set()
        self.search = PostgresSearch(self, self._read)
        self._returned_at: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()
        self._current: ContextVar[Conn | None] = ContextVar(f"loci_pg_conn_{id(self)}", default=None)
        # the events the open transaction appends, written just before it commits
        self._pending: ContextVar[list[Event] | None] = ContextVar(f"loci_pg_events_{id(self)}", default=None)
        self._pool: ConnectionPool[Conn] = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max(max_size, min_size),
            timeout=timeout,
            configure=self._configure,
            open=True,
            name="loci",
            check=self._check_if_idle if check_connections else None,
        )

    def _configure(self, conn: Conn) -> None:
        register_vector(conn, self._vector_oid)
        self._returned_at[conn] = time.monotonic()  # a new connection needs no check right away

    @contextmanager
    def _pooled(self) -> Iterator[Conn]:
        """A pooled connection; notes when it goes back (see `_check_if_idle`)."""
        with self._pool.connection() as conn:
            try:
                yield conn
            finally:
                self._returned_at[conn] = time.monotonic()

    def _check_if_idle(self, conn: Conn) -> None:
        returned = self._returned_at.get(conn)
        if returned is None or time.monotonic() - returned > CHECK_IDLE_S:
            ConnectionPool.check_connection(conn)

    # --- lifecycle and transactions ---------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One all-or-nothing unit; nested blocks (in the same thread/task) join the outer one.
        The events it appends are written when the block ends, just before the commit, so the org's
        event-log lock is the last lock it takes (see the package docstring).
        A deadlock or serialization failure rolls it back and raises engine.errors.Conflict;
        a lost connection raises engine.errors.Unavailable."""
        if self._current.get() is not None:
            yield
            return
        with _engine_errors(), self._pooled() as conn, conn.transaction():
            token = self._current.set(conn)
            pending: list[Event] = []
            buffered = self._pending.set(pending)
            try:
                yield
                bookkeeping.append_events(conn, pending)
            finally:
                self._pending.reset(buffered)
                self._current.reset(token)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One REPEATABLE READ READ ONLY transaction on one pooled connection: every read of the block
        (searches too) sees the snapshot its first statement took, and a write fails in the database.
        Inside `transaction()` it joins it."""
        if self._current.get() is not None:
            yield
            return
        with _engine_errors(), self._pooled() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute("SELECT 1")  # the snapshot is taken here, when the block begins
            token = self._current.set(conn)
            try:
                yield
            finally:
                self._current.reset(token)

    @contextmanager
    def _conn(self) -> Iterator[Conn]:
        """The transaction's connection inside `transaction()`, else a pooled one for one transaction."""
        current = self._current.get()
        if current is not None:
            yield current
            return
        with _engine_errors(), self._pooled() as conn, conn.transaction():
            yield conn

    @contextmanager
    def _read(self) -> Iterator[Conn]:
        """For reads: the transaction's connection inside `transaction()`, else a pooled one in
        autocommit, so a read costs its statements only, not BEGIN and COMMIT round trips as well.
        Same semantics: under READ COMMITTED each statement takes its own snapshot anyway."""
        current = self._current.get()
        if current is not None:
            yield current
            return
        with _engine_errors(), self._pooled() as conn:
            conn.autocommit = True
            try:
                yield conn
            finally:
                with suppress(psycopg.Error):  # a broken connection: the pool discards it
                    conn.autocommit = False

    @property
    def in_transaction(self) -> bool:
        return self._current.get() is not None

    def ping(self, timeout: float) -> None:
        """A pooled connection within `timeout` seconds and one `SELECT 1` on it, else Unavailable."""
        with _engine_errors(), self._pool.connection(timeout=timeout) as conn:
            conn.execute("SELECT 1")

    def close(self) -> None:
        self._pool.close()

    # --- memories ---------------------------------------------------------------------------------
    def put_memories(self, memories_: Sequence[Memory]) -> None:
        self.search.written()
        with self._conn() as conn:
            rows.put(conn, memories_, self.inline_model)

    def get_memory(self, org_id: str, memory_id: str) -> Memory | None:
        found = self.get_memories(org_id, [memory_id])
        return found[0] if found else None

    def get_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        with self._read() as conn:
            return rows.get_many(conn, org_id, memory_ids)

    def delete_memory(self, org_id: str, memory_id: str) -> bool:
        self.search.written()
        with self._conn() as conn:
            return rows.delete(conn, org_id, memory_id)

    def list_memories(self, org_id: str, query: ListQuery) -> list[Memory]:
        with self._read() as conn:
            return rows.list_query(conn, org_id, query)

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        """Inside `transaction()`, first locks (org, namespace, key) until the transaction ends, so a
        read-decide-write on one conflict key serializes across workers and processes."""
        with self._conn() as conn:
            if self.lock_conflict_keys and self.in_transaction:
                bookkeeping.lock_name(conn, "loci.key", org_id, namespace, key)
            return rows.find_by_key(conn, org_id, namespace, key)

    def lock_keys(self, org_id: str, keys: Sequence[tuple[str, str]]) -> None:
        """Inside `transaction()`, the locks `find_by_key` takes, on every (namespace, key) at once in
        sorted order (held until the transaction ends)."""
        if not (self.lock_conflict_keys and self.in_transaction):
            return
        with self._conn() as conn:
            for namespace, key in sorted(set(keys)):
                bookkeeping.lock_name(conn, "loci.key", org_id, namespace, key)

    def lock_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """Inside `transaction()`, SELECT ... FOR UPDATE in memory-id order: waits for a writer of
        those rows to finish, then returns them as it left them (a deleted one is missing)."""
        if not self.in_transaction:
            return self.get_memories(org_id, memory_ids)
        with self._conn() as conn:
            return rows.get_many(conn, org_id, memory_ids, lock=True)

    def count_memories(self, org_id: str | None = None) -> int:
        with self._conn() as conn:
            return rows.count(conn, org_id)

    def org_ids(self) -> list[str]:
        with self._read() as conn:
            rows_ = conn.execute(
                "SELECT org_id FROM memories UNION SELECT org_id FROM events UNION SELECT org_id FROM api_keys"
                " UNION SELECT org_id FROM idempotency"
            ).fetchall()
        return sorted(dec(r[0]) for r in rows_)

    def iter_memories(self, org_id: str) -> Iterator[Memory]:
        def pages() -> Iterator[list[tuple[Any, str, str]]]:
            after: tuple[Any, str] | None = None
            while True:
                with self._conn() as conn:
                    page = rows.page_after(conn, org_id, after, 500)
                if not page:
                    return
                yield page
                after = (page[-1][0], page[-1][1])

        return rows.iter_docs(pages())

    # --- embeddings -------------------------------------------------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        if not text_hashes:
            return {}
        with self._read() as conn, conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT text_hash, embedding FROM embeddings WHERE model = %s AND text_hash = ANY(%s)",
                (enc(model), enc_all(text_hashes)),
            )
            return {dec(h): vec for h, vec in cur.fetchall()}

    def put_embeddings(self, model: str, vectors: Mapping[str, Vector]) -> None:
        if not vectors:
            return
        values: list[tuple[str, str, int, Vector]] = []
        for h, vec in sorted(vectors.items()):  # rows locked in one order: two writers never deadlock
            arr = np.asarray(vec, dtype=np.float32).reshape(-1)
            values.append((enc(model), enc(h), int(arr.shape[0]), arr))
        if not is_passage_model(model):  # passages are looked up by hash, never searched
            self._ensure_indexes(model, {r[2] for r in values})
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO embeddings (model, text_hash, dims, embedding) VALUES (%s, %s, %s, %b)"
                " ON CONFLICT (model, text_hash) DO UPDATE SET dims = EXCLUDED.dims,"
                " embedding = EXCLUDED.embedding",
                values,
            )
            if model == self.inline_model:
                rows.refresh_inline(conn, model, [r[1] for r in values])

    def embedding_models(self) -> list[str]:
        with self._read() as conn:
            rows_ = conn.execute("SELECT DISTINCT model FROM embeddings ORDER BY model").fetchall()
        return [dec(r[0]) for r in rows_]

    def missing_vectors(self, model: str) -> Iterator[str]:
        """Memories without a row in `embeddings` for the model (an anti-join on its primary key)."""
        anti_join = "NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.model = %s AND e.text_hash = m.text_hash)"
        return self._texts_where(anti_join, (enc(model),))

    def long_texts(self, min_chars: int) -> Iterator[str]:
        return self._texts_where("char_length(m.text) > %s", (min_chars,))

    def _texts_where(self, condition: str, params: tuple[Any, ...]) -> Iterator[str]:
        """The texts of the memories `m` meeting `condition`, in pages of 1000 by key."""
        after: tuple[str, str] = ("", "")
        while True:
            with self._conn() as conn, conn.cursor() as cur:
                cur.execute(
                    "SELECT m.org_id, m.memory_id, m.text FROM memories m WHERE (m.org_id, m.memory_id) > (%s, %s)"
                    f" AND {condition} ORDER BY m.org_id, m.memory_id LIMIT 1000",
                    (enc(after[0]), enc(after[1]), *params),
                    prepare=False,
                )
                page = cur.fetchall()
            if not page:
                return
            yield from (dec(r[2]) for r in page)
            after = (dec(page[-1][0]), dec(page[-1][1]))

    def bulk_load(
        self,
        memories_: Sequence[Memory],
        *,
        model: str | None = None,
        vectors: Mapping[str, Vector] | None = None,
        rebuild_index: bool | None = None,
        maintenance_work_mem: str = "512MB",
    ) -> int:
        """COPY new memories (and `vectors` of `model`, by text hash) in one transaction; returns the
        number of memories. Large vector loads drop the HNSW index and rebuild it after the commit
        (see `engine.storage.postgres.bulk`); inside `transaction()` no rebuild happens (the index
        is kept and maintained row by row). Existing memory ids raise (nothing is written)."""
        vectors = vectors or {}
        if vectors and model is None:
            raise ValueError("bulk_load: vectors need the model they were computed with")
        counts: dict[int, int] = {}
        for vec in vectors.values():
            dims = int(np.asarray(vec).reshape(-1).shape[0])
            counts[dims] = counts.get(dims, 0) + 1
        rebuild: list[int] = []
        if model is not None and counts and not self.in_transaction:
            rebuild = self._indexes_to_rebuild(model, counts, rebuild_index)
        if model is not None:
            self._ensure_indexes(model, [dims for dims in counts if dims not in rebuild])
        inline = self._inline_vectors(memories_, model, vectors)
        self.search.written()
        with self._conn() as conn:
            for dims in rebuild:
                bulk.drop_hnsw_index(conn, model or "", dims)
            if model is not None:
                bulk.copy_vectors(conn, model, vectors, self._vector_oid)
            written = bulk.copy_memories(conn, memories_, inline, self._vector_oid)
        for dims in rebuild:
            build_hnsw_index(self.url, model or "", dims, maintenance_work_mem=maintenance_work_mem)
            self._indexed.add((model or "", dims))
        return written

    def _ensure_indexes(self, model: str, dims_list: Iterable[int]) -> None:
        """Create the HNSW index of each (model, dims) not known to exist yet."""
        for dims in dims_list:
            if (model, dims) not in self._indexed and ensure_hnsw_index(self.url, model, dims):
                self._indexed.add((model, dims))

    def _indexes_to_rebuild(
        self, model: str, counts: Mapping[int, int], rebuild_index: bool | None
    ) -> list[int]:
        """The dims whose HNSW index a bulk load of `counts` vectors per dims drops and rebuilds:
        `rebuild_index` if given, else when the load is large next to what is stored."""
        rebuild: list[int] = []
        with self._conn() as conn:
            for dims, n in counts.items():
                if dims > HNSW_MAX_DIMS:
                    continue
                big = n >= max(bulk.REBUILD_MIN, bulk.stored_vectors(conn, model, dims))
                if rebuild_index if rebuild_index is not None else big:
                    rebuild.append(dims)
        return rebuild

    def backfill_inline_vectors(self, batch: int = 5_000) -> int:
        """Give every row without an inline copy of `inline_model`'s vector one (where its vector is
        stored and fits), `batch` rows per transaction, so rows written before schema migration 3 are
        scored from the index too; returns the copies made. Safe while the service runs (rows a
        writer holds are skipped; they stay correct through the join). A no-op without a model."""
        if self.inline_model is None:
            return 0
        made, after = 0, None
        while True:
            with self._conn() as conn:
                n, after = rows.backfill_inline_page(conn, self.inline_model, after, batch)
            made += n
            if after is None:
                return made

    def _inline_vectors(
        self, memories_: Sequence[Memory], model: str | None, vectors: Mapping[str, Vector]
    ) -> tuple[str, dict[str, Vector]] | None:
        """(inline model, text hash -> vector) for the memories of a bulk load: the load's own vectors
        when it brings them for the inline model, the rest from `embeddings`; None without a model."""
        if self.inline_model is None:
            return None
        wanted = {text_hash(m.text) for m in memories_}
        found: dict[str, Vector] = {}
        if model == self.inline_model:
            found = {h: vectors[h] for h in wanted if h in vectors}
        found.update(self.get_embeddings(self.inline_model, [h for h in wanted if h not in found]))
        return self.inline_model, found

    # --- API keys ---------------------------------------------------------------------------------
    def create_api_key(self, key: ApiKey) -> None:
        with self._conn() as conn:
            bookkeeping.create_api_key(conn, key)

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        with self._read() as conn:
            return bookkeeping.find_api_key(conn, key_hash)

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKey]:
        with self._conn() as conn:
            return bookkeeping.list_api_keys(conn, org_id)

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        with self._conn() as conn:
            return bookkeeping.revoke_api_key(conn, key_id, at)

    # --- idempotency ------------------------------------------------------------------------------
    def get_idempotency(self, org_id: str, key: str, now: datetime) -> IdempotencyRecord | None:
        """Inside `transaction()`, first locks (org, key) until the transaction ends, so two workers
        handling the same Idempotency-Key run one after the other and the second replays."""
        with self._conn() as conn:
            if self.lock_conflict_keys and self.in_transaction:
                bookkeeping.lock_name(conn, "loci.idempotency", org_id, key)
            return bookkeeping.get_idempotency(conn, org_id, key, now)

    def list_idempotency(
        self, org_id: str, now: datetime, *, after: str | None = None, limit: int = 1000
    ) -> list[IdempotencyRecord]:
        with self._read() as conn:
            return bookkeeping.list_idempotency(conn, org_id, now, after, limit)

    def put_idempotency(self, record: IdempotencyRecord) -> None:
        with self._conn() as conn:
            bookkeeping.put_idempotency(conn, record)

    # --- event log --------------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], *, durable: bool = True) -> None:
        """Inside `transaction()` the events wait in the transaction and are written when it ends."""
        pending = self._pending.get()
        if pending is not None:
            pending.extend(events)
            return
        relaxed = not durable and self._current.get() is None
        with self._conn() as conn:
            if relaxed:  # this transaction only: its commit does not wait for the WAL flush
                conn.execute("SET LOCAL synchronous_commit = off")
            bookkeeping.append_events(conn, events)

    def list_events(self, org_id: str, query: EventQuery) -> list[tuple[int, Event]]:
        with self._conn() as conn:
            pending = self._pending.get()
            if pending:  # the transaction reads its own events: they are written (and numbered) now
                bookkeeping.append_events(conn, pending)
                pending.clear()
            return bookkeeping.list_events(conn, org_id, query)
