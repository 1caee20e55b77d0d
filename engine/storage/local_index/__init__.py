"""The local search: one SearchBackend shared by the in-process stores (InMemoryStore, SQLiteStore).

    LocalSearch(load_namespace, load_vectors, store_lock)   one NamespaceIndex per (org, namespace)
        .vector_search / .keyword_search / .graph_search / .adjacent_events / .scope_size /
        .speaker_shares                                                      (SearchBackend)
        .apply_put(memories) / .apply_delete(org_id, ids) / .apply_vectors(model, vectors)   as written
        .mark() / .forget_since(mark)                                                          on rollback

Modules: `search` (LocalSearch), `namespace` (one (org, namespace) index and its generation), `view`
(ScopeView: what a scope derives from the rows, kept per generation), `columns` (per-row filter
columns, the vectorized Scope mask), `bm25` (inverted index, BM25 with Lucene's idf over the eligible
scope), `vector` (faiss IndexFlatIP with an IDSelectorBitmap of eligible rows), `graph` (entity graph
BFS), `reference` (plain-Python versions used as test oracles).

Scope filtering happens before ranking: each search computes the boolean mask of eligible rows
first and ranks only those, so no eligible memory is lost to a fetch-then-filter.
"""

from __future__ import annotations

from engine.storage.local_index.search import LocalSearch

__all__ = ["LocalSearch"]
