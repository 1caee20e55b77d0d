"""The local index's per-scope caches (the scope mask, the keyword statistics) and what invalidates them."""

from __future__ import annotations

import numpy as np
import pytest

from engine.storage.base import Scope, Store
from engine.storage.local_index.bm25 import KeywordIndex
from engine.storage.local_index.columns import Columns
from tests.engine.storage.conftest import at, mem

NOW = at(10_000)


def test_one_scope_object_gets_one_mask_until_a_row_changes() -> None:
    cols = Columns()
    cols.append_bulk([mem(memory_id="m1", entity_id="ent:a"), mem(memory_id="m2", entity_id="ent:b")])
    scope = Scope(org_id="org_a", now=NOW, entity_id="ent:a")
    first = cols.mask(scope)
    assert cols.mask(scope) is first and first.tolist() == [True, False]
    with pytest.raises(ValueError):
        first[1] = True  # shared by every channel of the request: read-only
    assert cols.mask(Scope(org_id="org_a", now=NOW, entity_id="ent:a")) is not first  # another object
    cols.append(mem(memory_id="m3", entity_id="ent:a"))
    assert cols.mask(scope).tolist() == [True, False, True]
    cols.kill("m1")
    assert cols.mask(scope).tolist() == [False, False, True]
    cols.append_bulk([mem(memory_id="m4", entity_id="ent:a", archived=True)])
    assert np.array_equal(cols.mask(scope), [False, False, True, False])


def test_a_search_with_the_same_scope_object_sees_the_writes_between(store: Store) -> None:
    scope = Scope(org_id="org_a", now=NOW)
    store.put_memories([mem(text=f"filler {i}") for i in range(6)])  # BM25 needs "alpha" to be rare
    store.put_memories([mem(memory_id="m1", text="alpha one")])
    assert [h.memory_id for h in store.keyword_search(scope, "alpha", 5)] == ["m1"]
    store.put_memories([mem(memory_id="m2", text="alpha two")])
    assert {h.memory_id for h in store.keyword_search(scope, "alpha", 5)} == {"m1", "m2"}
    assert store.delete_memory("org_a", "m1")
    assert [h.memory_id for h in store.keyword_search(scope, "alpha", 5)] == ["m2"]
    store.put_memories([mem(memory_id="m2", text="alpha two", archived=True)])
    assert store.keyword_search(scope, "alpha", 5) == []


def test_the_keyword_statistics_of_a_scope_follow_every_add_remove_and_mask() -> None:
    ki = KeywordIndex()
    ki.add_bulk(0, [["alpha", "beta"], ["beta"], ["gamma", "gamma", "beta"]])
    live = np.ones(3, dtype=np.bool_)
    mask = np.ones(3, dtype=np.bool_)
    first = ki.scope_stats(mask, live)
    assert (first.n, first.avgdl) == (3, 2.0) and first.df[ki.vocab["beta"]] == 3
    assert ki.scope_stats(mask.copy(), live) is first  # an equal mask: kept
    mask[0] = False  # the same array, changed in place: not the kept one
    assert ki.scope_stats(mask, live).n == 2
    mask[0] = True
    assert ki.scope_stats(mask, live).df[ki.vocab["gamma"]] == 1
    ki.remove(2)  # the mask is unchanged, but df counts live rows only
    live[2] = False
    assert ki.scope_stats(mask, live).df[ki.vocab["gamma"]] == 0
    ki.add(3, ["gamma"])
    grown = ki.scope_stats(np.array([True, True, False, True]), np.array([True, True, False, True]))
    assert (grown.n, grown.df[ki.vocab["gamma"]], grown.avgdl) == (3, 1, 4 / 3)
