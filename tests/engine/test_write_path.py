"""The write path: one commit per write (memory, vector and event together), vectors of a commit
reach the index without being read back, and ids without the ULID object."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from ulid import ULID

from engine import ids
from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.memory_service import MemoryCreate, MemoryService
from engine.models import Memory, text_hash
from engine.storage.base import Scope, Vector
from engine.storage.local_index import LocalSearch
from engine.storage.sqlite import SQLiteStore
from engine.timeutil import utcnow
from tests.factories import memory


def _sqlite(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(str(tmp_path / "t.db"))


def test_a_write_is_one_commit_with_its_vector(tmp_path: Path) -> None:
    store = _sqlite(tmp_path)
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    service = MemoryService(store, embeddings=EmbeddingCache(HashEmbedder(), store))
    [m] = service.create("org", [MemoryCreate(entity_id="ent:u", type="event", text="Alice moved to Lisbon")])
    assert statements.count("COMMIT") == 1
    assert text_hash(m.text) in store.get_embeddings(HashEmbedder().model, [text_hash(m.text)])
    scope = Scope(org_id="org", entity_id="ent:u", now=utcnow())
    query = HashEmbedder().embed(["Alice moved to Lisbon"])[0]
    assert [h.memory_id for h in store.search.vector_search(scope, HashEmbedder().model, query, 3)] == [
        m.memory_id
    ]
    store.close()


def test_a_rolled_back_write_stores_its_vector_when_retried(tmp_path: Path) -> None:
    store = _sqlite(tmp_path)
    cache = EmbeddingCache(HashEmbedder(), store)
    service = MemoryService(store, embeddings=cache)
    prepared = service.prepare("org", [MemoryCreate(type="note", text="a note about jazz")])
    h = text_hash("a note about jazz")
    with pytest.raises(RuntimeError), store.transaction():
        cache.save([m.text for m in prepared])
        raise RuntimeError("the write failed after its vector was saved")
    assert store.get_embeddings(cache.model, [h]) == {}
    service.insert("org", service.prepare("org", [MemoryCreate(type="note", text="a note about jazz")]))
    assert h in store.get_embeddings(cache.model, [h])
    store.close()


def test_vectors_of_the_same_commit_are_not_read_back() -> None:
    reads: list[Sequence[str]] = []
    vec: Vector = np.full(4, 0.5, dtype=np.float32)

    def load_vectors(model: str, hashes: Sequence[str]) -> dict[str, Vector]:
        reads.append(list(hashes))
        return {}

    rows: list[Memory] = []
    now = utcnow()
    first = memory(memory_id="m1", org_id="o", text="first", at=now)
    rows.append(first)
    import threading

    registry = LocalSearch(lambda org, ns: list(rows), load_vectors, threading.RLock())
    scope = Scope(org_id="o", now=now)
    registry.vector_search(scope, "m", vec, 1)  # builds the index and loads model "m"
    reads.clear()
    second = memory(memory_id="m2", org_id="o", text="second", at=now)
    registry.apply_vectors("m", {text_hash("second"): vec})
    registry.apply_put([second])
    registry.committed()
    assert reads == []  # taken from the transaction's own vectors
    assert [h.memory_id for h in registry.vector_search(scope, "m", vec, 2)] == ["m2"]
    third = memory(memory_id="m3", org_id="o", text="second", at=now)
    registry.apply_put([third])  # a later commit: the store is asked again
    assert reads == [[text_hash("second")]]


def test_ids_are_ulids_in_order() -> None:
    rng = random.Random(3)
    for _ in range(500):
        value = rng.getrandbits(128)
        assert ids._crockford(value) == str(ULID.from_int(value))
    made = [ids.memory_id() for _ in range(2000)]
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(
        m.startswith("mem_") and len(m) == 30 and str(ULID.from_str(m[4:])) == m[4:] for m in made[:20]
    )


def test_put_memories_replaces_keys_and_tags_in_one_batch(tmp_path: Path) -> None:

    store = _sqlite(tmp_path)
    now = utcnow()

    def mem(mid: str, keys: list[str], tags: list[str]) -> Memory:
        return memory(memory_id=mid, org_id="o", type="fact", text=mid, at=now, keys=keys, tags=tags)

    store.put_memories([mem("a", ["k1"], ["t1"]), mem("b", ["k2"], [])])
    store.put_memories([mem("a", ["k3"], ["t2"]), mem("b", ["k2"], ["t3"]), mem("b", ["k4"], [])])
    assert [m.memory_id for m in store.find_by_key("o", "default", "k3")] == ["a"]
    assert store.find_by_key("o", "default", "k1") == [] and store.find_by_key("o", "default", "k2") == []
    assert [m.memory_id for m in store.find_by_key("o", "default", "k4")] == ["b"]
    tags = store._q("SELECT memory_id, tag FROM memory_tags ORDER BY memory_id, tag")
    assert [tuple(r) for r in tags] == [("a", "t2")]
    store.close()
