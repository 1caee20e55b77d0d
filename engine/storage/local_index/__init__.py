"""In-process retrieval index shared by the in-process stores (InMemoryStore, SQLiteStore).

    IndexRegistry(load_namespace, load_vectors, store_lock)   one NamespaceIndex per (org, namespace)
        .vector_search(scope, model, query, k) / .keyword_search(scope, text, k)
        .graph_search(scope, seeds, depth, k) / .scope_size(scope)
        .apply_put(memories) / .apply_delete(org_id, ids) / .apply_vectors(model, vectors)   after commit
        .mark() / .forget_since(mark)                                                           on rollback

Modules: `columns` (per-row filter columns, the vectorized Scope mask), `bm25` (inverted index,
BM25 with Lucene's idf over the eligible scope), `vector` (faiss IndexFlatIP with an
IDSelectorBitmap of eligible rows), `graph` (entity graph BFS),
`reference` (plain-Python versions used as test oracles), `bench` (a micro-benchmark, not a test).

Scope filtering happens before ranking: each search computes the boolean mask of eligible rows
first and ranks only those, so no eligible memory is lost to a fetch-then-filter.
"""

from __future__ import annotations

from engine.storage.local_index.registry import IndexRegistry

__all__ = ["IndexRegistry"]
