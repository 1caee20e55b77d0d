"""SQLiteStore: the embedded default backend (stdlib sqlite3).

- One connection (check_same_thread=False) guarded by an RLock, so many server threads may share one
  store; `transaction()` holds the lock and runs BEGIN IMMEDIATE ... COMMIT; a call outside a
  transaction block is its own committed transaction. WAL with synchronous=FULL: a commit is on disk
  before the call returns (except a log entry appended with `durable=False`, see `Store.append_events`).
  A background `Checkpointer` copies the WAL into the database file, off the commit path; commits and
  its passes take turns through the file's `WalGate` (see `checkpoint`).
- Schema versioned with PRAGMA user_version and migrated on open (`schema.MIGRATIONS`).
- `store.search` is the local search (`engine.storage.local_index.LocalSearch`), built from the rows
  on the first search of a namespace and patched as each write runs (dropped on rollback); it also
  keeps the memories `get_memories` reads, by index row. Searches inside a
  transaction see its own writes; other threads' searches wait for it to end, as their reads do.
  Commits made by other connections to the same file (other processes) are detected with PRAGMA
  data_version and make the index rebuild on the next search; run one writer process per database
  for a warm index.
- `snapshot()` is one deferred read transaction: under WAL on a connection of its own, so writers go
  on and the block reads what was committed when it began; without WAL (":memory:") on the store's
  connection with the lock held through the block (writers wait for it).
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import Conflict, Unavailable
from engine.models import ApiKey, Event, IdempotencyRecord, Memory, text_hash
from engine.storage.base import EventQuery, ListQuery, Vector
from engine.storage.listing import ascii_lower
from engine.storage.local_index import LocalSearch
from engine.storage.sqlite import codec
from engine.storage.sqlite.checkpoint import BACKSTOP_PAGES, GATE_TIMEOUT, Checkpointer, WalGate
from engine.storage.sqlite.schema import migrate
from engine.timeutil import to_micros

_CHUNK = 500  # host parameters per IN (...) list
_PAGE_CACHE_KIB = 65_536  # SQLite's page cache: a 100k-memory scope's index pages stay in memory


def _release(checkpointer: Checkpointer | None, gate: WalGate) -> None:
    if checkpointer is not None:
        checkpointer.close()
    gate.close()


class SQLiteStore:
    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:" and not path.startswith("file:"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._gate = WalGate(path)
        try:
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except sqlite3.Error as exc:  # a directory, or a file this process cannot open
            self._gate.close()
            raise Unavailable(f"cannot open the SQLite database {path}: {exc}") from exc
        try:
            with self._gate.held():
                wal = (
                    path != ":memory:"
                    and self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
                )
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.execute("PRAGMA foreign_keys=ON")
                self._conn.execute(f"PRAGMA busy_timeout={int(GATE_TIMEOUT * 1000)}")
                self._conn.execute(f"PRAGMA cache_size=-{_PAGE_CACHE_KIB}")
                migrate(self._conn)
        except sqlite3.Error as exc:  # a file that is not a database, or one held locked too long
            self._conn.close()
            self._gate.close()
            raise Unavailable(f"cannot open the SQLite database {path}: {exc}") from exc
        self._checkpointer: Checkpointer | None = None
        if wal:
            self._conn.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
            self._checkpointer = Checkpointer(path, self._gate)
        weakref.finalize(self, _release, self._checkpointer, self._gate)  # a store never closed
        self.search = LocalSearch(
            self._load_namespace, self.get_embeddings, self._lock, before_search=self._sync_index
        )
        self._data_version = self._read_data_version()
        # the connection `snapshot()` reads on, for the block's thread or task
        self._snap: ContextVar[sqlite3.Connection | None] = ContextVar(
            f"loci_sqlite_snap_{id(self)}", default=None
        )

    # --- lifecycle and transactions -------------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if self._snap.get() is not None:
            yield
            return
        with self._lock:  # a depth now is this thread's own transaction (it holds the lock)
            inside = self._depth > 0
        if inside:
            yield
            return
        if self._checkpointer is None:  # no WAL: a reader would block commits; hold writers instead
            with self._lock, self._read_transaction(self._conn):
                yield
            return
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(GATE_TIMEOUT * 1000)}")
            conn.execute("PRAGMA query_only=1")
            with self._read_transaction(conn):
                yield
        finally:
            conn.close()

    @contextmanager
    def _read_transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        conn.execute("BEGIN DEFERRED")
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchall()  # the read snapshot starts here
            token = self._snap.set(conn)
            try:
                yield
            finally:
                self._snap.reset(token)
        finally:
            conn.execute("ROLLBACK")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._snap.get() is not None:
            raise RuntimeError("a write inside store.snapshot(): a snapshot is read-only")
        with self._lock, ExitStack() as gate:
            outer = self._depth == 0
            if outer:
                gate.enter_context(self._gate.held())  # held through COMMIT and the checkpoint it may run
                self._conn.execute("BEGIN IMMEDIATE")
                mark = self.search.mark()
            self._depth += 1
            try:
                yield
            except BaseException:
                if outer:
                    self._conn.execute("ROLLBACK")
                    self.search.forget_since(mark)
                raise
            else:
                if outer:
                    try:
                        self._conn.execute("COMMIT")
                    except BaseException:
                        if self._conn.in_transaction:
                            self._conn.execute("ROLLBACK")
                        self.search.forget_since(mark)
                        raise
                    self.search.committed()
                    if self._checkpointer is not None:
                        self._checkpointer.poke()
            finally:
                self._depth -= 1

    def _read_data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _sync_index(self) -> None:
        """Another connection (another process, or another store on this file) committed: the
        in-process index may be stale, so drop it (rebuilt on demand). PRAGMA data_version changes
        only for other connections' commits. Skipped when the lock is busy, to keep searches off the
        write path; the next search checks again."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._check_version()
        finally:
            self._lock.release()

    def _check_version(self) -> None:
        """With the lock held, outside a transaction: drop the local search's indexes (and the
        memories they keep) if another connection committed."""
        if self._depth != 0:
            return
        version = self._read_data_version()
        if version != self._data_version:
            self._data_version = version
            self.search.clear()

    def ping(self, timeout: float) -> None:
        """The file is this process's: a query answers unless it is gone or broken (then Unavailable)."""
        try:
            self._q("SELECT 1")
        except sqlite3.Error as exc:
            raise Unavailable(f"the SQLite database does not answer: {exc}") from exc

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
        with self._lock, self._gate.held():  # the last connection to close checkpoints
            self._conn.close()
        self._gate.close()

    def _q(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        snap = self._snap.get()
        if snap is not None:  # its own connection (or the store's, with the lock held already)
            return snap.execute(sql, params).fetchall()
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # --- memories -------------------------------------------------------------------------------
    def _load_namespace(self, org_id: str, namespace: str) -> list[Memory]:
        rows = self._q(
            f"SELECT {codec.MEMORY_SELECT} FROM memories WHERE org_id = ? AND namespace = ?",
            (org_id, namespace),
        )
        return [codec.row_memory(r) for r in rows]

    def put_memories(self, memories: Sequence[Memory]) -> None:
        if not memories:
            return
        with self.transaction():
            c = self._conn
            ids = [(m.org_id, m.memory_id) for m in memories]
            c.executemany(codec.MEMORY_INSERT, [codec.memory_row(m) for m in memories])
            c.executemany("DELETE FROM memory_keys WHERE org_id = ? AND memory_id = ?", ids)
            c.executemany("DELETE FROM memory_tags WHERE org_id = ? AND memory_id = ?", ids)
            latest = {(m.org_id, m.memory_id): m for m in memories}.values()  # a repeated id: the last wins
            keys = [(m.org_id, m.namespace, k, m.memory_id) for m in latest for k in m.keys or ()]
            if keys:
                c.executemany(
                    "INSERT OR IGNORE INTO memory_keys (org_id, namespace, key, memory_id) VALUES (?, ?, ?, ?)",
                    keys,
                )
            tags = [(m.org_id, t, m.memory_id) for m in latest for t in m.tags]
            if tags:
                c.executemany(
                    "INSERT OR IGNORE INTO memory_tags (org_id, tag, memory_id) VALUES (?, ?, ?)", tags
                )
            batch = list(memories)
            self.search.apply_put(batch)

    def get_memory(self, org_id: str, memory_id: str) -> Memory | None:
        rows = self._q(
            f"SELECT {codec.MEMORY_SELECT} FROM memories WHERE org_id = ? AND memory_id = ?",
            (org_id, memory_id),
        )
        return codec.row_memory(rows[0]) if rows else None

    def get_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """Memories the local search keeps (by index row: retrieval reads the same ones each turn)
        come from there; the others are read and given to it to keep. Inside `snapshot()` all are read
        from the snapshot."""
        unique = list(dict.fromkeys(memory_ids))
        if self._snap.get() is not None:
            found = {m.memory_id: m for m in self._select_memories(org_id, unique)}
            return [found[i] for i in memory_ids if i in found]
        with self._lock:
            self._check_version()
            found = self.search.cached(org_id, unique)
            read = self._select_memories(org_id, [mid for mid in unique if mid not in found])
            self.search.remember(read)
            found.update((m.memory_id, m) for m in read)
        return [found[i] for i in memory_ids if i in found]

    def _select_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        read: list[Memory] = []
        for start in range(0, len(memory_ids), _CHUNK):
            chunk = memory_ids[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for r in self._q(
                f"SELECT {codec.MEMORY_SELECT} FROM memories WHERE org_id = ? AND memory_id IN ({marks})",
                (org_id, *chunk),
            ):
                read.append(codec.row_memory(r))
        return read

    def delete_memory(self, org_id: str, memory_id: str) -> bool:
        with self.transaction():
            cur = self._conn.execute(
                "DELETE FROM memories WHERE org_id = ? AND memory_id = ?", (org_id, memory_id)
            )
            if cur.rowcount == 0:
                return False
            self.search.apply_delete(org_id, [memory_id])
            return True

    def list_memories(self, org_id: str, query: ListQuery) -> list[Memory]:
        where = ["org_id = ?"]
        params: list[Any] = [org_id]
        for column, value in (
            ("namespace", query.namespace),
            ("entity_id", query.entity_id),
            ("agent_id", query.agent_id),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        for column, values in (("type", query.types), ("status", query.statuses)):
            if values is not None:
                where.append(f"{column} IN ({', '.join('?' * len(values))})" if values else "0")
                params.extend(values)
        if query.tag is not None:
            where.append("memory_id IN (SELECT memory_id FROM memory_tags WHERE org_id = ? AND tag = ?)")
            params += [org_id, query.tag]
        if query.archived is not None:
            where.append("archived = ?")
            params.append(int(query.archived))
        if query.text is not None:
            where.append("instr(lower(text), ?) > 0")  # SQLite's lower() folds ASCII letters only
            params.append(ascii_lower(query.text))
        if query.since is not None:
            where.append("ts >= ?")
            params.append(to_micros(query.since))
        if query.until is not None:
            where.append("ts < ?")
            params.append(to_micros(query.until))
        desc = query.sort == "timestamp_desc"
        if query.after is not None:
            where.append(f"(ts, memory_id) {'<' if desc else '>'} (?, ?)")
            params += [to_micros(query.after[0]), query.after[1]]
        order = "DESC" if desc else "ASC"
        sql = (
            f"SELECT {codec.MEMORY_SELECT} FROM memories WHERE {' AND '.join(where)} "
            f"ORDER BY ts {order}, memory_id {order} LIMIT ?"
        )
        params.append(max(query.limit, 0))
        return [codec.row_memory(r) for r in self._q(sql, params)]

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        cols = ", ".join(f"m.{c}" for c in codec.MEMORY_COLUMNS)
        rows = self._q(
            f"SELECT {cols} FROM memory_keys k JOIN memories m ON m.org_id = k.org_id AND m.memory_id = k.memory_id "
            "WHERE k.org_id = ? AND k.namespace = ? AND k.key = ? AND m.archived = 0 ORDER BY m.ts, m.memory_id",
            (org_id, namespace, key),
        )
        return [codec.row_memory(r) for r in rows]

    def lock_keys(self, org_id: str, keys: Sequence[tuple[str, str]]) -> None:
        """Nothing to lock: one write transaction runs at a time."""

    def lock_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        return self.get_memories(org_id, memory_ids)  # one write transaction runs at a time

    def count_memories(self, org_id: str | None = None) -> int:
        if org_id is None:
            return int(self._q("SELECT count(*) FROM memories")[0][0])
        return int(self._q("SELECT count(*) FROM memories WHERE org_id = ?", (org_id,))[0][0])

    def org_ids(self) -> list[str]:
        rows = self._q(
            "SELECT org_id FROM memories UNION SELECT org_id FROM events UNION SELECT org_id FROM api_keys "
            "UNION SELECT org_id FROM idempotency ORDER BY 1"
        )
        return [str(r[0]) for r in rows]

    def iter_memories(self, org_id: str) -> Iterator[Memory]:
        """Pages through the org by keyset (1000 rows a query), so the lock is not held between pages."""
        after: tuple[int, str] | None = None
        while True:
            if after is None:
                rows = self._q(
                    f"SELECT {codec.MEMORY_SELECT} FROM memories WHERE org_id = ? "
                    "ORDER BY ts, memory_id LIMIT 1000",
                    (org_id,),
                )
            else:
                rows = self._q(
                    f"SELECT {codec.MEMORY_SELECT} FROM memories WHERE org_id = ? "
                    "AND (ts, memory_id) > (?, ?) ORDER BY ts, memory_id LIMIT 1000",
                    (org_id, *after),
                )
            if not rows:
                return
            for r in rows:
                yield codec.row_memory(r)
            after = (rows[-1][9], rows[-1][1])

    # --- embeddings ------------------------------------------------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        out: dict[str, Vector] = {}
        unique = list(dict.fromkeys(text_hashes))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for h, blob in self._q(
                f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks})",
                (model, *chunk),
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def put_embeddings(self, model: str, vectors: Mapping[str, Vector]) -> None:
        if not vectors:
            return
        clean = {h: np.ascontiguousarray(v, dtype=np.float32).reshape(-1) for h, v in vectors.items()}
        with self.transaction():
            self._conn.executemany(
                "INSERT INTO embeddings (model, text_hash, dim, vector) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (model, text_hash) DO UPDATE SET dim = excluded.dim, vector = excluded.vector",
                [(model, h, int(v.shape[0]), v.tobytes()) for h, v in clean.items()],
            )
            self.search.apply_vectors(model, clean)

    def embedding_models(self) -> list[str]:
        return [str(r[0]) for r in self._q("SELECT DISTINCT model FROM embeddings ORDER BY model")]

    def missing_vectors(self, model: str) -> Iterator[str]:
        """Each page's text hashes looked up at once."""
        for page in self._text_pages("1", ()):
            held = self.get_embeddings(model, [text_hash(t) for t in page])
            yield from (t for t in page if text_hash(t) not in held)

    def long_texts(self, min_chars: int) -> Iterator[str]:
        for page in self._text_pages("length(text) > ?", (min_chars,)):
            yield from page

    def _text_pages(self, condition: str, params: tuple[Any, ...]) -> Iterator[list[str]]:
        """The texts of the memories meeting `condition`, in pages of 1000 by key (the lock is not held
        between pages)."""
        after: tuple[str, str] = ("", "")
        while True:
            rows = self._q(
                "SELECT org_id, memory_id, text FROM memories WHERE (org_id, memory_id) > (?, ?) "
                f"AND {condition} ORDER BY org_id, memory_id LIMIT 1000",
                (*after, *params),
            )
            if not rows:
                return
            yield [str(r[2]) for r in rows]
            after = (rows[-1][0], rows[-1][1])

    # --- API keys --------------------------------------------------------------------------------
    def create_api_key(self, key: ApiKey) -> None:
        try:
            with self.transaction():
                self._conn.execute(
                    f"INSERT INTO api_keys ({codec.API_KEY_SELECT}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    codec.api_key_row(key),
                )
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"api key {key.key_id!r} or its hash already exists") from exc

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        rows = self._q(f"SELECT {codec.API_KEY_SELECT} FROM api_keys WHERE key_hash = ?", (key_hash,))
        return codec.row_api_key(rows[0]) if rows else None

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKey]:
        if org_id is None:
            rows = self._q(f"SELECT {codec.API_KEY_SELECT} FROM api_keys ORDER BY created_at, key_id")
        else:
            rows = self._q(
                f"SELECT {codec.API_KEY_SELECT} FROM api_keys WHERE org_id = ? ORDER BY created_at, key_id",
                (org_id,),
            )
        return [codec.row_api_key(r) for r in rows]

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        with self.transaction():
            cur = self._conn.execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?",
                (to_micros(at), key_id),
            )
            return cur.rowcount > 0

    # --- idempotency -----------------------------------------------------------------------------
    def get_idempotency(self, org_id: str, key: str, now: datetime) -> IdempotencyRecord | None:
        rows = self._q(
            f"SELECT {codec.IDEMPOTENCY_SELECT} FROM idempotency WHERE org_id = ? AND key = ? "
            "AND expires_at > ?",
            (org_id, key, to_micros(now)),
        )
        return codec.row_idempotency(rows[0]) if rows else None

    def list_idempotency(
        self, org_id: str, now: datetime, *, after: str | None = None, limit: int = 1000
    ) -> list[IdempotencyRecord]:
        rows = self._q(
            f"SELECT {codec.IDEMPOTENCY_SELECT} FROM idempotency WHERE org_id = ? AND key > ? "
            "AND expires_at > ? ORDER BY key LIMIT ?",
            (org_id, after if after is not None else "", to_micros(now), max(limit, 0)),
        )
        return [codec.row_idempotency(r) for r in rows]

    def put_idempotency(self, record: IdempotencyRecord) -> None:
        with self.transaction():
            self._conn.execute(
                f"INSERT OR REPLACE INTO idempotency ({codec.IDEMPOTENCY_SELECT}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                codec.idempotency_row(record),
            )

    # --- events ----------------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], *, durable: bool = True) -> None:
        if not events:
            return
        with self._lock:
            relaxed = not durable and self._depth == 0
            if relaxed:  # WAL: the commit reaches the OS, and the disk with the next synced commit
                self._conn.execute("PRAGMA synchronous=NORMAL")
            try:
                with self.transaction():
                    # the org's next number, read under the write lock (the log is append-only)
                    self._conn.executemany(
                        "INSERT INTO events (event_id, org_id, type, at, memory_id, entity_id, data, org_seq) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                        "(SELECT COALESCE(MAX(org_seq), 0) + 1 FROM events WHERE org_id = ?2))",
                        [codec.event_row(e) for e in events],
                    )
            finally:
                if relaxed:
                    self._conn.execute("PRAGMA synchronous=FULL")

    def list_events(self, org_id: str, query: EventQuery) -> list[tuple[int, Event]]:
        where = ["org_id = ?"]
        params: list[Any] = [org_id]
        if query.after is not None:
            where.append("org_seq > ?")
            params.append(query.after)
        if query.type is not None:
            where.append("type = ?")
            params.append(query.type)
        if query.entity_id is not None:
            where.append("entity_id = ?")
            params.append(query.entity_id)
        if query.memory_id is not None:
            where.append("memory_id = ?")
            params.append(query.memory_id)
        if query.since is not None:
            where.append("at >= ?")
            params.append(to_micros(query.since))
        params.append(max(query.limit, 0))
        rows = self._q(
            f"SELECT {codec.EVENT_SELECT} FROM events WHERE {' AND '.join(where)} ORDER BY org_seq LIMIT ?",
            params,
        )
        return [codec.row_event(r) for r in rows]
