"""Embedding through the (model, text hash) cache: no text is embedded twice.

Two tiers: a small in-process LRU (query texts repeat across turns) in front of the store's
persistent `embeddings` table (memory texts). Only cache misses reach the embedder, in batches. A
write (`persist`) stores every vector its texts lack in the store, also one the LRU already held
because the same text was embedded earlier as a query.

A writer can embed before its transaction and store the vectors inside it (`embed(..., defer=True)`,
then `save(texts)` in the transaction), so a memory and its vector commit together, with one fsync.
A memory text (`persist`) longer than `TUNING.passage_min_chars` brings its passages' vectors along
(`engine.embed.passages`), embedded with it and stored with it under the passage model's name.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import msgspec
import numpy as np

from engine.embed.base import Embedder, Finished, Rows, begin
from engine.embed.passages import all_passages, passage_model
from engine.models import text_hash
from engine.pools import LazyPool
from engine.storage.base import Store, Vector

#: deferred vectors held per LRU entry: a whole write batch's texts and passages fit (a batch holds far fewer
#: texts than the LRU, and most texts have no passages), while the held vectors stay bounded
_UNSAVED_PER_TEXT = 17

#: threads for query embeddings of an embedder that cannot begin its own (they wait on the embedder)
_QUERY_POOL = LazyPool(16, "loci-query-embed")


class EmbedStats(msgspec.Struct, kw_only=True):
    calls: int = 0  # embedder invocations (batches)
    texts: int = 0  # texts sent to the embedder
    cache_hits: int = 0


class EmbeddingCache:
    def __init__(
        self,
        embedder: Embedder,
        store: Store | None = None,
        *,
        lru_size: int = 4096,
        batch_size: int = 256,  # a whole write batch at once: the encoder sorts it by length to pad less
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.batch_size = batch_size
        self._lru: OrderedDict[str, Vector] = OrderedDict()
        self._lru_size = lru_size
        self._lock = threading.Lock()
        #: (store model, text hash) -> a vector embedded with defer=True, not stored yet
        self._unsaved: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._unsaved_size = lru_size * _UNSAVED_PER_TEXT
        #: called with each call's stats (e.g. the server's cache hit/miss counters)
        self.listener: Callable[[EmbedStats], None] | None = None

    @property
    def model(self) -> str:
        return self.embedder.model

    @property
    def passage_model(self) -> str:
        return passage_model(self.embedder.model)

    def _lru_put(self, key: str, vec: Vector) -> None:
        with self._lock:
            self._lru[key] = vec
            self._lru.move_to_end(key)
            while len(self._lru) > self._lru_size:
                self._lru.popitem(last=False)

    def embed(
        self,
        texts: Sequence[str],
        *,
        persist: bool = True,
        defer: bool = False,
        stats: EmbedStats | None = None,
    ) -> list[Vector]:
        """One vector per text. `persist` reads and writes the store's vectors (memory texts); query texts
        pass persist=False: looked up and kept in the LRU only (a query is rarely a stored text, and the
        store lookup would cost a database round trip on every request). With `defer`, new vectors are
        held until `save` stores them (inside the caller's write transaction). Raises
        engine.errors.Unavailable if the embedder fails."""
        call = EmbedStats()
        found: dict[str, Vector] = {}
        hashes = self._embed_into(texts, persist, defer, call, found, self.model)
        if persist and (parts := all_passages(texts)):
            self._embed_into(parts, persist, defer, call, {}, self.passage_model)
        if stats is not None:
            stats.calls += call.calls
            stats.texts += call.texts
            stats.cache_hits += call.cache_hits
        if self.listener is not None:
            self.listener(call)
        return [found[h] for h in hashes]

    def begin(
        self, texts: Sequence[str], *, stats: EmbedStats | None = None, threaded: bool = False
    ) -> Begun:
        """`embed(texts, persist=False)` begun: the texts the LRU lacks go to the embedder's `begin`
        (`engine.embed.base.begin`), whose pass runs beside the caller's other work until
        `Begun.result()`; an embedder without one runs in a pool thread when `threaded` (a caller that
        waits on a database meanwhile), else here and now."""
        hashes = [text_hash(t) for t in texts]
        found = self._from_lru(hashes)
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found:
                todo.setdefault(h, t)
        pool = _QUERY_POOL.get() if threaded else None
        pending = begin(self.embedder, list(todo.values()), pool) if todo else None
        return Begun(self, hashes, found, list(todo), pending, stats)

    def stored(self, text_hashes: Sequence[str], *, passages: bool = False) -> dict[str, Vector]:
        """The vectors already held for these text hashes (the LRU, then the store; `passages`: the
        vectors stored for passages), embedding nothing: a read never writes. Store hits join the LRU,
        so a hot candidate is read once (one embedder: a text has one vector whichever name it is
        stored under)."""
        found = self._from_lru(text_hashes)
        missing = [h for h in dict.fromkeys(text_hashes) if h not in found]
        if missing and self.store is not None:
            model = self.passage_model if passages else self.model
            for h, vec in self.store.get_embeddings(model, missing).items():
                found[h] = vec
                self._lru_put(h, vec)
        return found

    def _from_lru(self, text_hashes: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        with self._lock:
            for h in text_hashes:
                vec = self._lru.get(h)
                if vec is not None:
                    self._lru.move_to_end(h)
                    found[h] = vec
        return found

    def save(self, texts: Sequence[str]) -> None:
        """Store the deferred vectors of `texts` and of their passages (call it inside the write's
        transaction). They stay held until evicted, so a write that rolls back and is retried stores them
        again."""
        if self.store is None or not self._unsaved:  # nothing embedded (an embedder that failed to load)
            return
        for model, of in ((self.model, list(texts)), (self.passage_model, all_passages(texts))):
            with self._lock:
                ready = {
                    h: v
                    for h in dict.fromkeys(text_hash(t) for t in of)
                    if (v := self._unsaved.get((model, h))) is not None
                }
            if ready:
                self.store.put_embeddings(model, ready)

    def _defer(self, model: str, new: dict[str, Vector]) -> None:
        with self._lock:
            self._unsaved.update(((model, h), v) for h, v in new.items())
            while len(self._unsaved) > self._unsaved_size:  # a write that never committed: forget its vectors
                self._unsaved.popitem(last=False)

    def _embed_into(
        self,
        texts: Sequence[str],
        persist: bool,
        defer: bool,
        stats: EmbedStats,
        found: dict[str, Vector],
        model: str,
    ) -> list[str]:
        """Fill `found` (text hash -> vector) for every text, stored under `model` (`persist`); returns
        the texts' hashes in order."""
        hashes = [text_hash(t) for t in texts]
        found.update(self._from_lru(hashes))
        in_store: set[str] = set()
        if persist and self.store is not None:
            # the LRU also holds query vectors, which were never stored: ask the store for every text
            for h, vec in self.store.get_embeddings(model, list(dict.fromkeys(hashes))).items():
                found[h] = vec
                in_store.add(h)
                self._lru_put(h, vec)
        stats.cache_hits += sum(1 for h in hashes if h in found)
        todo: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found:
                todo.setdefault(h, t)
        items = list(todo.items())
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            rows = self.embedder.embed([t for _, t in chunk])
            stats.calls += 1
            stats.texts += len(chunk)
            for (h, _), row in zip(chunk, rows, strict=True):
                vec = np.ascontiguousarray(row, dtype=np.float32)
                found[h] = vec
                self._lru_put(h, vec)
        if persist and self.store is not None:
            unstored = {h: found[h] for h in dict.fromkeys(hashes) if h not in in_store}
            if unstored and defer:
                self._defer(model, unstored)
            elif unstored:
                self.store.put_embeddings(model, unstored)
        return hashes


class Begun:
    """A query's vectors on their way (`EmbeddingCache.begin`)."""

    def __init__(
        self,
        cache: EmbeddingCache,
        hashes: list[str],
        found: dict[str, Vector],
        todo: list[str],
        pending: Future[Rows] | None,
        stats: EmbedStats | None,
    ) -> None:
        self._cache, self._hashes, self._found, self._todo = cache, hashes, found, todo
        self._pending, self._stats = pending, stats
        self._vectors: list[Vector] | None = None

    def beside(self) -> bool:
        """A pass runs beside the caller (begun elsewhere, not run here and now, not all found): the
        same answer however fast it goes, so what a request costs does not hang on a race."""
        return self._pending is not None and not isinstance(self._pending, Finished)

    def result(self) -> list[Vector]:
        """The vectors in the texts' order; raises engine.errors.Unavailable if the embedder failed."""
        if self._vectors is not None:
            return self._vectors
        call = EmbedStats(cache_hits=sum(1 for h in self._hashes if h in self._found))
        if self._pending is not None:
            rows = self._pending.result()
            call.calls, call.texts = 1, len(self._todo)
            for h, row in zip(self._todo, rows, strict=True):
                vec = np.ascontiguousarray(row, dtype=np.float32)
                self._found[h] = vec
                self._cache._lru_put(h, vec)
        if self._stats is not None:
            self._stats.calls += call.calls
            self._stats.texts += call.texts
            self._stats.cache_hits += call.cache_hits
        if self._cache.listener is not None:
            self._cache.listener(call)
        self._vectors = [self._found[h] for h in self._hashes]
        return self._vectors
