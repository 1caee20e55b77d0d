"""IndexRegistry: one NamespaceIndex per (org_id, namespace), built lazily, patched as the store writes.

Transactions. The store applies patches (`apply_*`) as it writes, inside its transaction and holding
its lock, so a search made inside the transaction (by the thread that holds it) sees the
transaction's own writes, as a database's would. A search by another thread first takes the store
lock, which an open transaction holds: it waits for the commit (or rollback), then hands over to the
index's lock, so it never sees uncommitted rows. On rollback the store calls `forget_since(mark)`:
the indexes the transaction patched or loaded are dropped and rebuilt from the store on next use.
Lock order is always store lock, then index lock.

When dead rows (replaced or deleted memories) outnumber live ones (and exceed `REBUILD_MIN_DEAD`),
the index is dropped and rebuilt from the store on the next search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from engine.models import Memory
from engine.storage.base import Adjacent, Hit, Scope, Vector
from engine.storage.local_index.namespace import NamespaceIndex, VectorLoader

NamespaceLoader = Callable[[str, str], list[Memory]]
REBUILD_MIN_DEAD = 1024


class IndexRegistry:
    def __init__(
        self, load_namespace: NamespaceLoader, load_vectors: VectorLoader, store_lock: threading.RLock
    ) -> None:
        self._load_namespace = load_namespace
        self._load_vectors = load_vectors
        self._store_lock = store_lock
        self._built: dict[tuple[str, str], NamespaceIndex] = {}
        self._loads = 0
        #: vectors of the commit being patched in, per model: memories of the same commit take theirs
        #: from here instead of reading them back from the store
        self._recent: dict[str, dict[str, Vector]] = {}

    def mark(self) -> int:
        """Called by the store when a transaction begins; pass the value to `forget_since` on rollback."""
        return self._loads

    def forget_since(self, mark: int) -> None:
        """Drop indexes that read the store or were patched after `mark`: inside a transaction that
        then rolled back they hold uncommitted rows. Called by the store on rollback, with its lock held."""
        for key, idx in list(self._built.items()):
            if idx.loaded_at > mark:
                del self._built[key]
        self._recent.clear()

    def _loaded(self, idx: NamespaceIndex) -> None:
        self._loads += 1
        idx.loaded_at = self._loads

    @contextmanager
    def _reading(self, org_id: str, namespace: str, model: str | None = None) -> Iterator[NamespaceIndex]:
        """The index of (org, namespace) (with `model`'s vectors loaded), its lock held: taken through
        the store lock, so a search waits for another thread's open transaction (module docstring)."""
        with self._store_lock:
            idx = self.get(org_id, namespace)
            if model is not None and model not in idx.vectors:
                with idx.lock:
                    idx.load_model(model, self._load_vectors)
                self._loaded(idx)
            idx.lock.acquire()
        try:
            yield idx
        finally:
            idx.lock.release()

    def get(self, org_id: str, namespace: str) -> NamespaceIndex:
        key = (org_id, namespace)
        found = self._built.get(key)
        if found is not None:
            return found
        with self._store_lock:
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

    def clear(self) -> None:
        with self._store_lock:
            self._built.clear()

    # --- patches: called by the store as it writes, with the store lock held --------------------
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
                    target.add(batch, self._vectors_of_commit)
                self._loaded(target)
        self._drop_stale()

    def _vectors_of_commit(self, model: str, hashes: Sequence[str]) -> dict[str, Vector]:
        recent = self._recent.get(model, {})
        found = {h: recent[h] for h in hashes if h in recent}
        missing = [h for h in hashes if h not in found]
        if missing:
            found.update(self._load_vectors(model, missing))
        return found

    def end_commit(self) -> None:
        """Called by the store when a transaction commits."""
        self._recent.clear()

    def apply_delete(self, org_id: str, memory_ids: Sequence[str]) -> None:
        for key, idx in list(self._built.items()):
            if key[0] == org_id:
                with idx.lock:
                    removed = [memory_id for memory_id in memory_ids if idx.remove(memory_id)]
                if removed:
                    self._loaded(idx)
        self._drop_stale()

    def apply_vectors(self, model: str, vectors: Mapping[str, Vector]) -> None:
        self._recent.setdefault(model, {}).update(vectors)
        for idx in list(self._built.values()):
            if model in idx.vectors:
                with idx.lock:
                    idx.add_vectors(model, dict(vectors))
                self._loaded(idx)

    def _drop_stale(self) -> None:
        for key, idx in list(self._built.items()):
            if idx.cols.dead > max(REBUILD_MIN_DEAD, idx.cols.n_live):
                del self._built[key]

    # --- search ---------------------------------------------------------------------------------
    def vector_search(self, scope: Scope, model: str, query: Vector, k: int) -> list[Hit]:
        with self._reading(scope.org_id, scope.namespace, model) as idx:
            return idx.vector_search(scope, model, query, k)

    def keyword_search(self, scope: Scope, text: str, k: int) -> list[Hit]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.keyword_search(scope, text, k)

    def graph_search(self, scope: Scope, seeds: Sequence[str], depth: int, k: int) -> list[Hit]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.graph_search(scope, seeds, depth, k)

    def adjacent_events(
        self, scope: Scope, memory_ids: Sequence[str], span: int, max_gap_us: int
    ) -> list[Adjacent]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.adjacent_events(scope, memory_ids, span, max_gap_us)

    def scope_size(self, scope: Scope) -> int:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.scope_size(scope)

    def speaker_shares(self, scope: Scope, words: Sequence[str]) -> list[float]:
        with self._reading(scope.org_id, scope.namespace) as idx:
            return idx.speaker_shares(scope, words)
