"""The local index's per-scope views (the scope mask, the keyword statistics, the speakers) and the
one generation counter that invalidates them."""

from __future__ import annotations

import numpy as np
import pytest

from engine.models import Memory
from engine.storage.base import Scope, Store
from engine.storage.local_index.bm25 import COMPACT_MIN, KeywordIndex
from engine.storage.local_index.namespace import VIEWS, NamespaceIndex
from tests.engine.storage.conftest import at, mem

NOW = at(10_000)


def _index(*memories: Memory) -> NamespaceIndex:
    idx = NamespaceIndex("org_a", "default")
    idx.add(list(memories), lambda model, hashes: {})
    return idx


def test_a_scope_keeps_one_view_until_the_generation_moves() -> None:
    idx = _index(mem(memory_id="m1", entity_id="ent:a"), mem(memory_id="m2", entity_id="ent:b"))
    scope = Scope(org_id="org_a", now=NOW, entity_id="ent:a")
    first = idx.view(scope)
    assert idx.view(scope) is first and first.mask.tolist() == [True, False]
    with pytest.raises(ValueError):
        first.mask[1] = True  # shared by every search of the scope: read-only
    stats = first.keyword_stats()
    assert first.keyword_stats() is stats and first.speakers() is first.speakers()
    later = Scope(org_id="org_a", now=at(10_001), entity_id="ent:a")  # another request, same rows
    assert idx.view(later) is first
    generation = idx.generation
    idx.add([mem(memory_id="m3", entity_id="ent:a")], lambda model, hashes: {})
    assert idx.generation > generation  # one counter for every change
    assert idx.view(scope) is not first and idx.view(scope).mask.tolist() == [True, False, True]
    idx.remove("m1")
    assert idx.view(scope).mask.tolist() == [False, False, True]
    idx.add([mem(memory_id="m4", entity_id="ent:a", archived=True)], lambda model, hashes: {})
    assert np.array_equal(idx.view(scope).mask, [False, False, True, False])
    assert idx.view(scope).keyword_stats().n == 1


def test_a_view_per_scope_with_at_most_a_few_kept() -> None:
    idx = _index(*[mem(memory_id=f"m{i}", entity_id=f"ent:{i}") for i in range(VIEWS + 2)])
    views = [idx.view(Scope(org_id="org_a", now=NOW, entity_id=f"ent:{i}")) for i in range(VIEWS + 2)]
    assert len({id(v) for v in views}) == VIEWS + 2
    assert len(idx._views) == VIEWS


def test_a_search_with_the_same_scope_object_sees_the_writes_between(store: Store) -> None:
    scope = Scope(org_id="org_a", now=NOW)
    store.put_memories([mem(text=f"filler {i}") for i in range(6)])  # BM25 needs "alpha" to be rare
    store.put_memories([mem(memory_id="m1", text="alpha one")])
    assert [h.memory_id for h in store.search.keyword_search(scope, "alpha", 5)] == ["m1"]
    store.put_memories([mem(memory_id="m2", text="alpha two")])
    assert {h.memory_id for h in store.search.keyword_search(scope, "alpha", 5)} == {"m1", "m2"}
    assert store.delete_memory("org_a", "m1")
    assert [h.memory_id for h in store.search.keyword_search(scope, "alpha", 5)] == ["m2"]
    store.put_memories([mem(memory_id="m2", text="alpha two", archived=True)])
    assert store.search.keyword_search(scope, "alpha", 5) == []


def test_the_keyword_statistics_of_a_scope_follow_every_add_remove_and_mask() -> None:
    ki = KeywordIndex()
    ki.add_bulk(0, [["alpha", "beta"], ["beta"], ["gamma", "gamma", "beta"]])
    live = np.ones(3, dtype=np.bool_)
    mask = np.ones(3, dtype=np.bool_)
    first = ki.scope_stats(mask, live)
    assert (first.n, first.avgdl) == (3, 2.0) and first.df[ki.vocab["beta"]] == 3
    mask[0] = False
    assert ki.scope_stats(mask, live).n == 2
    mask[0] = True
    assert ki.scope_stats(mask, live).df[ki.vocab["gamma"]] == 1
    ki.remove(2)  # the mask is unchanged, but df counts live rows only
    live[2] = False
    assert ki.scope_stats(mask, live).df[ki.vocab["gamma"]] == 0
    ki.add(3, ["gamma"])
    grown = ki.scope_stats(np.array([True, True, False, True]), np.array([True, True, False, True]))
    assert (grown.n, grown.df[ki.vocab["gamma"]], grown.avgdl) == (3, 1, 4 / 3)


def test_postings_added_one_by_one_score_as_built_in_bulk() -> None:
    """Rows added one at a time are merged into the CSR block as they pile up (COMPACT_MIN): the
    scores never depend on which part holds a posting."""
    docs = [[f"t{(i * 7 + j) % 50}" for j in range(i % 5 + 1)] for i in range(3 * COMPACT_MIN // 2)]
    bulk, single = KeywordIndex(), KeywordIndex()
    bulk.add_bulk(0, docs)
    for i, doc in enumerate(docs):
        single.add(i, doc)
    mask = np.ones(len(docs), dtype=np.bool_)
    for query in (["t1"], ["t3", "t3", "t49"], ["nothing", "t7"]):
        a = bulk.scores(bulk.scope_stats(mask, mask), mask, query)
        b = single.scores(single.scope_stats(mask, mask), mask, query)
        assert np.array_equal(np.sort(a[0]), np.sort(b[0]))
        assert np.allclose(a[1][np.argsort(a[0])], b[1][np.argsort(b[0])], rtol=0, atol=1e-12)
