"""Org isolation: another org's ids answer nothing on every method."""

from __future__ import annotations

import msgspec
import numpy as np

from engine.models import text_hash
from engine.storage.base import EventQuery, ListQuery, Scope, Store
from tests.engine.storage.conftest import at, mem


def test_org_isolation_every_method(store: Store) -> None:
    a = mem(org_id="org_a", text="secret apple", entity_id="ent:x", keys=["ent:x|likes"], tags=["t"])
    store.put_memories([a] + [mem(org_id="org_a", text=f"filler {i}") for i in range(4)])
    store.put_embeddings("m", {text_hash(a.text): np.ones(4, dtype=np.float32)})
    b_scope = Scope(org_id="org_b", now=at(10**6))
    assert store.get_memory("org_b", a.memory_id) is None
    assert store.get_memories("org_b", [a.memory_id]) == []
    assert store.delete_memory("org_b", a.memory_id) is False
    assert store.list_memories("org_b", ListQuery()) == []
    assert store.list_memories("org_b", ListQuery(tag="t")) == []
    assert store.find_by_key("org_b", "default", "ent:x|likes") == []
    assert store.count_memories("org_b") == 0
    assert list(store.iter_memories("org_b")) == []
    assert store.search.vector_search(b_scope, "m", np.ones(4, dtype=np.float32), 5) == []
    assert store.search.keyword_search(b_scope, "secret apple", 5) == []
    assert store.search.graph_search(b_scope, ["ent:x"], 2, 5) == []
    assert store.search.scope_size(b_scope) == 0
    # a put by org_b with the same memory_id is a different record
    b = msgspec.structs.replace(a, org_id="org_b", text="other")
    store.put_memories([b])
    assert store.get_memory("org_a", a.memory_id) == a
    assert store.get_memory("org_b", a.memory_id) == b
    store.delete_memory("org_b", a.memory_id)
    assert store.get_memory("org_a", a.memory_id) == a
    a_scope = Scope(org_id="org_a", now=at(10**6))
    assert [h.memory_id for h in store.search.keyword_search(a_scope, "secret", 5)] == [a.memory_id]
    assert store.list_events("org_b", EventQuery()) == []
