"""InMemoryStore: the whole Store protocol in Python dicts, for engine tests and notebooks.

- Thread-safe: one RLock guards every call; `transaction()` holds it for the whole block.
- Transactions keep an undo log; an exception in the outermost block undoes every change made in it
  (nested blocks join the outer one, so an exception escaping an inner block rolls back everything).
- Records are stored as given (no copy): treat them as immutable, as `engine.models` says.
- `snapshot()` copies the tables' dicts (not the records) under the lock; the block's reads use the
  copies, so writers go on at once.
- `store.search` is the local search (`engine.storage.local_index.LocalSearch`), patched as each
  write runs (dropped on rollback): searches inside a transaction see its own writes, other threads'
  searches wait for it to end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import numpy as np

from engine.errors import Conflict
from engine.models import ApiKey, Event, IdempotencyRecord, Memory, text_hash
from engine.storage.base import EventQuery, ListQuery, Vector
from engine.storage.listing import event_matches, list_matches, paginate_sorted
from engine.storage.local_index import LocalSearch
from engine.timeutil import to_micros

_MISSING: Any = object()


class _Tables:
    """The store's records: the live ones, or a snapshot's copy of the dicts (records are shared)."""

    def __init__(self) -> None:
        self.memories: dict[tuple[str, str], Memory] = {}
        self.embeddings: dict[tuple[str, str], Vector] = {}
        self.api_keys: dict[str, ApiKey] = {}
        self.idempotency: dict[tuple[str, str], IdempotencyRecord] = {}
        self.events: dict[str, list[Event]] = {}  # per org, in append order: the org's seq is place + 1

    def copy(self) -> _Tables:
        out = _Tables()
        out.memories = dict(self.memories)
        out.embeddings = dict(self.embeddings)
        out.api_keys = dict(self.api_keys)
        out.idempotency = dict(self.idempotency)
        out.events = {org: list(events) for org, events in self.events.items()}
        return out


class InMemoryStore:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._mark = 0
        self._undo: list[Callable[[], None]] = []
        self._live = _Tables()
        # writes go to the live tables (these are their dicts); reads go through `_tables()`
        self._memories = self._live.memories
        self._embeddings = self._live.embeddings
        self._api_keys = self._live.api_keys
        self._idempotency = self._live.idempotency
        self._events = self._live.events
        self._snapshot: ContextVar[_Tables | None] = ContextVar(f"loci_mem_snapshot_{id(self)}", default=None)
        self.search = LocalSearch(self._load_namespace, self.get_embeddings, self._lock)

    def _tables(self) -> _Tables:
        """What a read sees: the block's snapshot inside `snapshot()`, else the live tables."""
        return self._snapshot.get() or self._live

    # --- lifecycle and transactions -------------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[None]:
        if self._snapshot.get() is not None:
            yield
            return
        with self._lock:  # held: no write is half done; a depth then is this thread's transaction
            tables = None if self._depth else self._live.copy()
        if tables is None:
            yield
            return
        token = self._snapshot.set(tables)
        try:
            yield
        finally:
            self._snapshot.reset(token)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        if self._snapshot.get() is not None:
            raise RuntimeError("a write inside store.snapshot(): a snapshot is read-only")
        with self._lock:
            self._depth += 1
            outer = self._depth == 1
            if outer:
                self._mark = self.search.mark()
            try:
                yield
            except BaseException:
                if outer:
                    self._rollback()
                raise
            else:
                if outer:
                    self._commit()
            finally:
                self._depth -= 1

    @contextmanager
    def _auto(self) -> Iterator[None]:
        with self.transaction():
            yield

    def _commit(self) -> None:
        self._undo.clear()
        self.search.committed()

    def _rollback(self) -> None:
        while self._undo:
            self._undo.pop()()
        self.search.forget_since(self._mark)

    def _set(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        old = table.get(key, _MISSING)

        def undo() -> None:
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old

        self._undo.append(undo)
        if value is _MISSING:
            table.pop(key, None)
        else:
            table[key] = value

    def ping(self, timeout: float) -> None:
        """Nothing to reach."""

    def close(self) -> None:
        pass

    # --- index loaders --------------------------------------------------------------------------
    def _load_namespace(self, org_id: str, namespace: str) -> list[Memory]:
        with self._lock:
            return [m for (org, _), m in self._memories.items() if org == org_id and m.namespace == namespace]

    # --- memories -------------------------------------------------------------------------------
    def put_memories(self, memories: Sequence[Memory]) -> None:
        with self._auto():
            for m in memories:
                self._set(self._memories, (m.org_id, m.memory_id), m)
            self.search.apply_put(list(memories))

    def get_memory(self, org_id: str, memory_id: str) -> Memory | None:
        with self._lock:
            return self._tables().memories.get((org_id, memory_id))

    def get_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        with self._lock:
            memories = self._tables().memories
            found = (memories.get((org_id, i)) for i in memory_ids)
            return [m for m in found if m is not None]

    def delete_memory(self, org_id: str, memory_id: str) -> bool:
        with self._auto():
            old = self._memories.get((org_id, memory_id))
            if old is None:
                return False
            self._set(self._memories, (org_id, memory_id), _MISSING)
            self.search.apply_delete(org_id, [memory_id])
            return True

    def _org_memories(self, org_id: str) -> list[Memory]:
        return [m for (org, _), m in self._tables().memories.items() if org == org_id]

    def list_memories(self, org_id: str, query: ListQuery) -> list[Memory]:
        with self._lock:
            rows = [m for m in self._org_memories(org_id) if list_matches(m, query)]
        return paginate_sorted(rows, query)

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        with self._lock:
            rows = [
                m
                for m in self._org_memories(org_id)
                if m.namespace == namespace and not m.archived and m.keys is not None and key in m.keys
            ]
        rows.sort(key=lambda m: (to_micros(m.timestamp), m.memory_id))
        return rows

    def lock_keys(self, org_id: str, keys: Sequence[tuple[str, str]]) -> None:
        """Nothing to lock: one write transaction runs at a time."""

    def lock_memories(self, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        return self.get_memories(org_id, memory_ids)  # one write transaction runs at a time

    def count_memories(self, org_id: str | None = None) -> int:
        with self._lock:
            if org_id is None:
                return len(self._tables().memories)
            return sum(1 for (org, _) in self._tables().memories if org == org_id)

    def org_ids(self) -> list[str]:
        with self._lock:
            t = self._tables()
            orgs = {org for org, _ in t.memories} | {org for org, events in t.events.items() if events}
            orgs |= {k.org_id for k in t.api_keys.values()} | {org for org, _ in t.idempotency}
        return sorted(orgs)

    def iter_memories(self, org_id: str) -> Iterator[Memory]:
        with self._lock:
            rows = self._org_memories(org_id)
        rows.sort(key=lambda m: (to_micros(m.timestamp), m.memory_id))
        return iter(rows)

    # --- embeddings ------------------------------------------------------------------------------
    def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        with self._lock:
            out: dict[str, Vector] = {}
            for h in text_hashes:
                vec = self._tables().embeddings.get((model, h))
                if vec is not None:
                    out[h] = vec.copy()
            return out

    def put_embeddings(self, model: str, vectors: Mapping[str, Vector]) -> None:
        with self._auto():
            clean = {
                h: np.ascontiguousarray(v, dtype=np.float32).reshape(-1).copy() for h, v in vectors.items()
            }
            for h, arr in clean.items():
                self._set(self._embeddings, (model, h), arr)
            self.search.apply_vectors(model, clean)

    def embedding_models(self) -> list[str]:
        with self._lock:
            return sorted({model for model, _ in self._tables().embeddings})

    def missing_vectors(self, model: str) -> Iterator[str]:
        with self._lock:
            tables = self._tables()
            texts = [m.text for m in tables.memories.values()]
            missing = [t for t in texts if (model, text_hash(t)) not in tables.embeddings]
        return iter(missing)

    def long_texts(self, min_chars: int) -> Iterator[str]:
        with self._lock:
            return iter([m.text for m in self._tables().memories.values() if len(m.text) > min_chars])

    # --- API keys --------------------------------------------------------------------------------
    def create_api_key(self, key: ApiKey) -> None:
        with self._auto():
            if key.key_id in self._api_keys:
                raise Conflict(f"api key {key.key_id!r} already exists")
            if any(k.key_hash == key.key_hash for k in self._api_keys.values()):
                raise Conflict("an api key with this hash already exists")
            self._set(self._api_keys, key.key_id, key)

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        with self._lock:
            return next((k for k in self._tables().api_keys.values() if k.key_hash == key_hash), None)

    def list_api_keys(self, org_id: str | None = None) -> list[ApiKey]:
        with self._lock:
            keys = [k for k in self._tables().api_keys.values() if org_id is None or k.org_id == org_id]
        keys.sort(key=lambda k: (to_micros(k.created_at), k.key_id))
        return keys

    def revoke_api_key(self, key_id: str, at: datetime) -> bool:
        import msgspec

        with self._auto():
            key = self._api_keys.get(key_id)
            if key is None:
                return False
            if key.revoked_at is None:
                self._set(self._api_keys, key_id, msgspec.structs.replace(key, revoked_at=at))
            return True

    # --- idempotency -----------------------------------------------------------------------------
    def get_idempotency(self, org_id: str, key: str, now: datetime) -> IdempotencyRecord | None:
        with self._lock:
            rec = self._tables().idempotency.get((org_id, key))
            if rec is None or to_micros(rec.expires_at) <= to_micros(now):
                return None
            return rec

    def list_idempotency(
        self, org_id: str, now: datetime, *, after: str | None = None, limit: int = 1000
    ) -> list[IdempotencyRecord]:
        with self._lock:
            found = [
                rec
                for (org, key), rec in self._tables().idempotency.items()
                if org == org_id
                and (after is None or key > after)
                and to_micros(rec.expires_at) > to_micros(now)
            ]
        found.sort(key=lambda rec: rec.key)
        return found[: max(limit, 0)]

    def put_idempotency(self, record: IdempotencyRecord) -> None:
        with self._auto():
            self._set(self._idempotency, (record.org_id, record.key), record)

    # --- events ----------------------------------------------------------------------------------
    def append_events(self, events: Sequence[Event], *, durable: bool = True) -> None:
        with self._auto():
            added: dict[str, int] = {}
            for event in events:
                self._events.setdefault(event.org_id, []).append(event)
                added[event.org_id] = added.get(event.org_id, 0) + 1
            if added:

                def undo() -> None:
                    for org_id, count in added.items():
                        del self._events[org_id][-count:]

                self._undo.append(undo)

    def list_events(self, org_id: str, query: EventQuery) -> list[tuple[int, Event]]:
        with self._lock:
            out: list[tuple[int, Event]] = []
            start = max(query.after or 0, 0)
            for seq, event in enumerate(self._tables().events.get(org_id, [])[start:], start=start + 1):
                if event_matches(seq, event, query):
                    out.append((seq, event))
                    if len(out) >= query.limit:
                        break
            return out
