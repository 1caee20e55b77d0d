from __future__ import annotations

import threading

import pytest

from engine.models import Event
from engine.storage.base import EventQuery, Scope, Store
from tests.engine.storage.conftest import at, mem, skip_on_postgres


class Boom(Exception):
    pass


def test_commit(store: Store) -> None:
    a, b = mem(), mem()
    with store.transaction():
        store.put_memories([a])
        store.put_memories([b])
    assert store.count_memories("org_a") == 2


def test_rollback_everything(store: Store) -> None:
    keep = mem(text="kept")
    store.put_memories([keep])
    a = mem(text="new words")
    with pytest.raises(Boom), store.transaction():
        store.put_memories([a])
        store.delete_memory("org_a", keep.memory_id)
        store.append_events([Event(event_id="evt_1", org_id="org_a", type="x", at=at(1))])
        store.put_embeddings("m", {"h": __import__("numpy").ones(3, dtype="float32")})
        assert store.get_memory("org_a", a.memory_id) == a  # visible inside the block
        raise Boom
    assert store.get_memory("org_a", a.memory_id) is None
    assert store.get_memory("org_a", keep.memory_id) == keep
    assert store.list_events("org_a", EventQuery()) == []
    assert store.get_embeddings("m", ["h"]) == {}
    scope = Scope(org_id="org_a", now=at(10**6))
    assert store.scope_size(scope) == 1
    assert store.keyword_search(scope, "new words", 5) == []


def test_nested_joins_outer(store: Store) -> None:
    a, b = mem(), mem()
    with pytest.raises(Boom), store.transaction():
        store.put_memories([a])
        with store.transaction():
            store.put_memories([b])
        raise Boom
    assert store.count_memories() == 0


def test_inner_exception_rolls_back_outer(store: Store) -> None:
    a, b = mem(), mem()
    with pytest.raises(Boom), store.transaction():
        store.put_memories([a])
        with store.transaction():
            store.put_memories([b])
            raise Boom
    assert store.count_memories() == 0


def test_store_usable_after_rollback(store: Store) -> None:
    with pytest.raises(Boom), store.transaction():
        store.put_memories([mem()])
        raise Boom
    c = mem()
    store.put_memories([c])
    assert store.get_memories("org_a", [c.memory_id]) == [c]


def test_transaction_blocks_other_threads_writes_until_commit(store: Store) -> None:
    skip_on_postgres(store, "PostgreSQL locks rows, not the whole store: unrelated writers do not wait")
    a = mem()
    b = mem()
    started = threading.Event()
    done = threading.Event()

    def writer() -> None:
        started.set()
        store.put_memories([b])
        done.set()

    with store.transaction():
        store.put_memories([a])
        t = threading.Thread(target=writer)
        t.start()
        started.wait()
        assert not done.wait(0.2)  # serialized behind the open transaction
    t.join(10)
    assert done.is_set()
    assert store.count_memories("org_a") == 2


def test_concurrent_writes_and_searches(store: Store) -> None:
    """Writers and searchers in parallel: no errors, and the index ends equal to a fresh rebuild."""
    import numpy as np

    from engine.embed.hash import HashEmbedder
    from engine.models import text_hash
    from engine.storage.local_index import reference
    from engine.storage.scope_filter import in_scope

    emb = HashEmbedder(32)
    scope = Scope(org_id="org_a", now=at(10**6))
    store.put_memories([mem(text=f"seed word{i % 7}") for i in range(30)])
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                m = mem(
                    text=f"writer{n} word{i % 5} apple",
                    entity_id=f"ent:w{n}",
                    status="superseded" if i % 6 == 0 else "active",
                )
                with store.transaction():
                    store.put_memories([m])
                    store.put_embeddings(emb.model, {text_hash(m.text): emb.embed([m.text])[0]})
                if i % 4 == 0:
                    store.delete_memory("org_a", m.memory_id)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    def searcher() -> None:
        try:
            q = emb.embed(["apple word1"])[0]
            for _ in range(25):
                store.keyword_search(scope, "apple word1", 10)
                store.vector_search(scope, emb.model, q, 10)
                store.graph_search(scope, ["ent:w1"], 1, 10)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    threads += [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    docs = [m for m in store.iter_memories("org_a") if in_scope(m, scope)]
    assert store.scope_size(scope) == len(docs)
    got = store.keyword_search(scope, "apple word1", 50)
    want = reference.keyword_hits(docs, "apple word1", 50)
    assert [h.memory_id for h in got] == [h.memory_id for h in want]
    assert np.allclose([h.raw for h in got], [h.raw for h in want])
