"""LocalSearch: the SearchBackend of the in-process stores (InMemoryStore, SQLiteStore).

One NamespaceIndex per (org_id, namespace), built from the store's rows on the first search of the
namespace, patched as the store writes (`apply_put`, `apply_delete`, `apply_vectors`).

Transactions. The store applies patches inside its transaction, holding its lock, so a search made
inside the transaction (by the thread that holds it) sees the transaction's own writes, as a
database's would. A search by another thread first takes the store lock, which an open transaction
holds: it waits for the commit (or rollback), then hands over to the index's lock, so it never sees
uncommitted rows. On rollback the store calls `forget_since(mark)`: the indexes the transaction
patched or loaded are dropped and rebuilt from the store on next use. Lock order is always store
lock, then index lock.

Decoded memories: `cached` / `remember` keep the memories a store reads by their index row (a row
never changes), for the SQLite store's `get_memories`; at most `MEMORIES_MAX`, least recent dropped.

When dead rows (replaced or deleted memories) outnumber live ones (and exceed `REBUILD_MIN_DEAD`),
the index is dropped and rebuilt from the store on the next search.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta

from engine.models import Memory
from engine.storage.base import Adjacent, Capabilities, Hit, Scope, Vector
from engine.storage.local_index.namespace import NamespaceIndex, VectorLoader

NamespaceLoader = Callable[[str, str], list[Memory]]
REBUILD_MIN_DEAD = 1024
MEMORIES_MAX = 50_000  # decoded memories kept (retrieval reads the same ones turn after turn)

LOCAL = Capabilities(server_side=False, vector_copies=False, exact_vectors_max=None)


class LocalSearch:
    capabilities = LOCAL

    def __init__(
        self,
        load_namespace: NamespaceLoader,
        load_vectors: VectorLoader,
        store_lock: threading.RLock,
        *,
        before_search: Callable[[], None] | None = None,
    ) -> None:
        self._load_namespace = load_namespace
        self._load_vectors = load_vectors
        self._store_lock = store_lock
        self._before_search = before_search
        self._built: dict[tuple[str, str], NamespaceIndex] = {}
        self._loads = 0
        #: (index serial, row) of the decoded memories the indexes keep, least recently used first
        self._kept: OrderedDict[tuple[int, int], NamespaceIndex] = OrderedDict()
        #: vectors the open transaction wrote, per model: its memories take theirs from here instead of
        #: reading them back from the store
        self._written: dict[str, dict[str, Vector]] = {}

    # --- transactions (called by the store, with its lock held) ---------------------------------
    def mark(self) -> int:
        """Called by the store when a transaction begins; pass the value to `forget_since` on rollback."""
        return self._loads

    def forget_since(self, mark: int) -> None:
        """Drop indexes that read the store or were patched after `mark`: inside a transaction that
        then rolled back they hold uncommitted rows."""
        for key, idx in list(self._built.items()):
            if idx.loaded_at > mark:
                self._drop(key)
        self._written.clear()

    def committed(self) -> None:
        """Called by the store when a transaction commits."""
        self._written.clear()

    def _drop(self, key: tuple[str, str]) -> None:
        idx = self._built.pop(key)
        if idx.memories:
            self._kept = OrderedDict((k, v) for k, v in self._kept.items() if v is not idx)

    def clear(self) -> None:
        """Forget every index (another process wrote the store)."""
        with self._store_lock:
            self._built.clear()
            self._kept.clear()

    def _loaded(self, idx: NamespaceIndex) -> None:
        self._loads += 1
        idx.loaded_at = self._loads

    def _get(self, org_id: str, namespace: str) -> NamespaceIndex:
        """The index of (org, namespace), built from the store if needed (with the store lock held)."""
        key = (org_id, namespace)
        found = self._built.get(key)
        if found is not None:
            return found
        idx = NamespaceIndex(org_id, namespace)
        rows = self._load_namespace(org_id, namespace)
        with idx.lock:
            idx.add(rows, self._load_vectors)
        if rows:  # an empty namespace is not kept: unknown namespaces must not pile up
            self._loaded(idx)
            self._built[key] = idx
        return idx

    @contextmanager
    def _reading(self, org_id: str, namespace: str, model: str | None = None) -> Iterator[NamespaceIndex]:
        """The index of (org, namespace) (with `model`'s vectors loaded), its lock held: taken through
        the store lock, so a search waits for another thread's open transaction (module docstring)."""
        if self._before_search is not None:
            self._before_search()
        with self._store_lock:
            idx = self._get(org_id, namespace)
            if model is not None and model not in idx.vectors:
                with idx.lock:
                    idx.load_model(model, self._load_vectors)
                self._loaded(idx)
            idx.lock.acquire()
        try:
            yield idx
        finally:
            idx.lock.release()

    # --- patches: called by the store as it writes, with its lock held --------------------------
    def apply_put(self, memories: Sequence[Memory]) -> None:
        by_target: dict[tuple[str, str], list[Memory]] = {}
        for m in memories:
            for key, idx in list(self._built.items()):
                if key[0] == m.org_id and m.memory_id in idx.cols.row_of:
                    with idx.lock:
                        idx.remove(m.memory_id)
                    self._loaded(idx)
            by_target.setdefault((m.org_id, m.namespace), []).append(m)
        for key, batch in by_target.items():
            target = self._built.get(key)
            if target is not None:
                with target.lock:
                    target.add(batch, self._vectors_of_transaction)
                self._loaded(target)
        self._drop_stale()

    def apply_delete(self, org_id: str, memory_ids: Sequence[str]) -> None:
        for key, idx in list(self._built.items()):
            if key[0] == org_id:
                with idx.lock:
                    removed = [memory_id for memory_id in memory_ids if idx.remove(memory_id)]
                if removed:
                    self._loaded(idx)
        self._drop_stale()

    def _vectors_of_transaction(self, model: str, hashes: Sequence[str]) -> dict[str, Vector]:
        written = self._written.get(model, {})
        found = {h: written[h] for h in hashes if h in written}
        missing = [h for h in hashes if h not in found]
        if missing:
            found.update(self._load_vectors(model, missing))
        return found

    def apply_vectors(self, model: str, vectors: Mapping[str, Vector]) -> None:
        self._written.setdefault(model, {}).update(vectors)
        for idx in list(self._built.values()):
            if model in idx.vectors:
                with idx.lock:
                    idx.add_vectors(model, dict(vectors))
                self._loaded(idx)

    def _drop_stale(self) -> None:
        for key, idx in list(self._built.items()):
            if idx.cols.dead > max(REBUILD_MIN_DEAD, idx.cols.n_live):
                self._drop(key)

    # --- decoded memories (called by the store with its lock held) ------------------------------
    def _row(self, org_id: str, memory_id: str) -> tuple[NamespaceIndex, int] | None:
        for (org, _), idx in self._built.items():
            if org == org_id:
                row = idx.cols.row_of.get(memory_id)
                if row is not None:
                    return idx, row
        return None

    def cached(self, org_id: str, memory_ids: Sequence[str]) -> dict[str, Memory]:
        """The memories among `memory_ids` kept by a built index."""
        out: dict[str, Memory] = {}
        for memory_id in memory_ids:
            found = self._row(org_id, memory_id)
            if found is not None and found[1] in found[0].memories:
                idx, row = found
                out[memory_id] = idx.memories[row]
                self._kept.move_to_end((idx.serial, row), last=True)
        return out

    def remember(self, memories: Sequence[Memory]) -> None:
        """Keep memories just read from the store (those of a built index's live rows)."""
        for m in memories:
            found = self._row(m.org_id, m.memory_id)
            if found is not None:
                idx, row = found
                idx.memories[row] = m
                self._kept[(idx.serial, row)] = idx
        while len(self._kept) > MEMORIES_MAX:
            (_, row), idx = self._kept.popitem(last=False)
            idx.memories.pop(row, None)

    # --- SearchBackend --------------------------------------------------------------------------
    def vector_search(self, scope: Scope, model: str, query: Vector, k: int) -> list[Hit]:
        with self._reading(scope.org_id, scope.namespace, model) as idx:
            return idx.vector_search(scope, model, query, k)

    def keyword_search(self, scope: Scope, text: str, k: int, speakers: Sequence[str] = ()) -> list[Hit]:
        """`speakers` is not needed: the index answers `speaker_shares` from its columns."""
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.keyword_search(scope, text, k)

    def graph_search(self, scope: Scope, seeds: Sequence[str], depth: int, k: int) -> list[Hit]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.graph_search(scope, seeds, depth, k)

    def adjacent_events(
        self, scope: Scope, memory_ids: Sequence[str], span: int, max_gap: timedelta
    ) -> list[Adjacent]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.adjacent_events(scope, memory_ids, span, max_gap // timedelta(microseconds=1))

    def scope_size(self, scope: Scope) -> int:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.scope_size(scope)

    def speaker_shares(self, scope: Scope, words: Sequence[str]) -> list[float]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.speaker_shares(scope, words)

    def keep_vector_copies(self, model: str) -> None:
        """No copies in process: the vectors are in the index already."""

    def fill_vector_copies(self) -> int:
        return 0
