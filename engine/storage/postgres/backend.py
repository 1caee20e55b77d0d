"""`PostgresSearch`: the SearchBackend of a PostgresStore (`store.search`).

Each channel is one statement (or, for the graph, one per hop) on a pooled connection in autocommit,
or on the transaction's connection inside `store.transaction()` (it then sees the transaction's
writes): the SQL is in `search` and `keywords`. What it keeps in process is the speaker counts its last
keyword searches made (`keywords.Speakers`, by Scope, which holds the request's `now`, so an entry
serves the request that made it), so `speaker_shares` of those words right after the keyword channel
costs no statement; the store's writes clear them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from engine.bounded import BoundedMap
from engine.storage.base import Adjacent, Capabilities, Hit, Scope, Vector
from engine.storage.postgres import keywords, search, semantic
from engine.storage.postgres.keywords import Speakers

if TYPE_CHECKING:
    from engine.storage.postgres.store import PostgresStore

Reader = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]

POSTGRES = Capabilities(server_side=True, vector_copies=True, exact_vectors_max=semantic.EXACT_VECTORS_MAX)


class PostgresSearch:
    capabilities = POSTGRES

    def __init__(self, store: PostgresStore, read: Reader) -> None:
        self._store = store
        self._read = read
        self._speakers: BoundedMap[Scope, Speakers] = BoundedMap(64)

    def written(self) -> None:
        """The store wrote memories: the speakers seen before may have changed."""
        self._speakers.clear()

    def vector_search(self, scope: Scope, model: str, query: Vector, k: int) -> list[Hit]:
        vec = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._read() as conn:
            return semantic.vector_search(conn, scope, model, vec, k)

    def keyword_search(self, scope: Scope, text: str, k: int, speakers: Sequence[str] = ()) -> list[Hit]:
        where, params = search.scope_filter(scope)
        with self._read() as conn:
            rows, counted = keywords.keyword_search(conn, scope, where, params, text, k, speakers)
        if counted is not None:
            self._speakers.put(scope, counted)
        return search.sorted_hits(rows, k, descending=True)

    def graph_search(self, scope: Scope, seeds: Sequence[str], depth: int, k: int) -> list[Hit]:
        with self._read() as conn:
            return search.graph_search(conn, scope, seeds, depth, k)

    def adjacent_events(
        self, scope: Scope, memory_ids: Sequence[str], span: int, max_gap: timedelta
    ) -> list[Adjacent]:
        with self._read() as conn:
            return search.adjacent_events(conn, scope, memory_ids, span, max_gap)

    def scope_size(self, scope: Scope) -> int:
        with self._read() as conn:
            return search.scope_size(conn, scope)

    def speaker_shares(self, scope: Scope, words: Sequence[str]) -> list[float]:
        """From the last keyword search of an equal scope that counted these words, when the store wrote
        nothing since (what the pipeline asks right after the keyword channel), else by a statement of
        its own."""
        if not words:
            return []
        seen = self._speakers.get(scope)
        shares = seen.shares(words) if seen is not None else None
        if shares is not None:
            return shares
        where, params = search.scope_filter(scope)
        with self._read() as conn:
            return keywords.count_speakers(conn, scope, where, params, words)

    def keep_vector_copies(self, model: str) -> None:
        """Rows written from now on carry `model`'s vectors (`PostgresStore.inline_model`), unless the
        store keeps another model's already."""
        if self._store.inline_model is None:
            self._store.inline_model = model

    def fill_vector_copies(self) -> int:
        return self._store.backfill_inline_vectors()
