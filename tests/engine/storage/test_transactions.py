from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from datetime import timedelta

import msgspec
import pytest

from engine.errors import Unavailable
from engine.models import Event
from engine.storage.base import EventQuery, Scope, Store
from engine.storage.sqlite import SQLiteStore
from tests.engine.storage.conftest import at, mem
from tests.pg_fixture import pg_database, pg_server

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below


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
    assert store.search.scope_size(scope) == 1
    assert store.search.keyword_search(scope, "new words", 5) == []


def _searches(store: Store, scope: Scope, before: str, memory_id: str) -> dict[str, bool]:
    """Whether each search finds `memory_id` (an event "Bob: zebra stripes" of ent:z with vector e0,
    after the event `before`, "Ann: hello", of the same entity)."""
    import numpy as np

    q = np.eye(4, dtype=np.float32)[0]
    whole = msgspec.structs.replace(scope, entity_id=None)
    return {
        "keyword": [h.memory_id for h in store.search.keyword_search(scope, "zebra", 5)] == [memory_id],
        "vector": memory_id in [h.memory_id for h in store.search.vector_search(scope, "m4", q, 5)],
        # ent:z is the scope's own entity, which the walk never enters: ask the whole org
        "graph": memory_id in [h.memory_id for h in store.search.graph_search(whole, ["ent:z"], 0, 5)],
        "size": store.search.scope_size(scope) == 2,
        "speakers": store.search.speaker_shares(scope, ["Bob"]) == [0.5],
        "adjacent": [a.memory_id for a in store.search.adjacent_events(scope, [before], 2, timedelta(days=1))]
        == [memory_id],
    }


def test_searches_inside_a_transaction_see_its_writes(store: Store) -> None:
    """Every backend: a search inside the block sees the block's own writes (as a database reads its
    transaction's rows); after a rollback, nothing of them; after a commit, all of them."""
    import numpy as np

    from engine.models import text_hash

    scope = Scope(org_id="org_a", now=at(10**6), entity_id="ent:z")
    before = mem(text="Ann: hello", type="event", entity_id="ent:z")
    store.put_memories([before])
    names = ["keyword", "vector", "graph", "size", "speakers", "adjacent"]
    for outcome in ("rollback", "commit"):
        m = mem(text="Bob: zebra stripes", type="event", entity_id="ent:z")
        store.search.scope_size(scope)  # the index is built before the block
        with contextlib.suppress(Boom), store.transaction():
            store.put_embeddings("m4", {text_hash(m.text): np.eye(4, dtype=np.float32)[0]})
            store.put_memories([m])
            assert _searches(store, scope, before.memory_id, m.memory_id) == dict.fromkeys(names, True)
            if outcome == "rollback":
                raise Boom
        seen = _searches(store, scope, before.memory_id, m.memory_id)
        assert seen == dict.fromkeys(names, outcome == "commit")


def test_other_threads_never_see_an_open_transactions_writes(store: Store) -> None:
    """A search by another thread while a block is open sees none of its writes (the in-process stores
    make it wait for the block's end; PostgreSQL reads what was committed), here a block that then
    rolls back, so they must never appear."""
    scope = Scope(org_id="org_a", now=at(10**6))
    store.put_memories([mem(text="plain words")])
    store.search.scope_size(scope)
    seen: list[list[str]] = []
    started = threading.Event()

    def search() -> None:
        started.set()
        seen.append([h.memory_id for h in store.search.keyword_search(scope, "zebra", 5)])

    m = mem(text="zebra")
    with contextlib.suppress(Boom), store.transaction():
        store.put_memories([m])
        t = threading.Thread(target=search)
        t.start()
        started.wait()
        t.join(0.3)  # PostgreSQL answers at once; the in-process stores wait for the rollback
        raise Boom
    t.join(10)
    assert seen == [[]]


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
                store.search.keyword_search(scope, "apple word1", 10)
                store.search.vector_search(scope, emb.model, q, 10)
                store.search.graph_search(scope, ["ent:w1"], 1, 10)
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
    assert store.search.scope_size(scope) == len(docs)
    got = store.search.keyword_search(scope, "apple word1", 50)
    want = reference.keyword_hits(docs, "apple word1", 50)
    assert [h.memory_id for h in got] == [h.memory_id for h in want]
    assert np.allclose([h.raw for h in got], [h.raw for h in want])


def test_locked_reads_are_reads(store: Store) -> None:
    """`lock_keys` and `lock_memories` (PostgreSQL's write locks; nothing more elsewhere) read and
    return what `get_memories` does, inside a transaction and outside one."""
    a, b = mem(keys=["ent:x|lives_in"]), mem()
    store.put_memories([a, b])
    with store.transaction():
        store.lock_keys("org_a", [("default", "ent:x|lives_in"), ("default", "ent:x|works_at")])
        assert store.lock_memories("org_a", [b.memory_id, "mem_missing", a.memory_id]) == [b, a]
        store.delete_memory("org_a", b.memory_id)
        assert store.lock_memories("org_a", [b.memory_id]) == []
    store.lock_keys("org_a", [("default", "k")])
    assert store.lock_memories("org_a", [a.memory_id]) == [a]


def test_a_transactions_events_are_listed_inside_it_and_numbered_at_commit(store: Store) -> None:
    store.append_events([Event(event_id="evt_0", org_id="org_a", type="x", at=at(0))])
    with store.transaction():
        store.append_events([Event(event_id="evt_1", org_id="org_a", type="x", at=at(1))])
        inside = store.list_events("org_a", EventQuery())
        store.append_events([Event(event_id="evt_2", org_id="org_a", type="x", at=at(2))])
    listed = store.list_events("org_a", EventQuery())
    assert [e.event_id for _, e in inside] == ["evt_0", "evt_1"]
    assert [(seq, e.event_id) for seq, e in listed] == [(1, "evt_0"), (2, "evt_1"), (3, "evt_2")]


# --- snapshots ----------------------------------------------------------------------------------------
def test_a_snapshot_reads_what_was_committed_when_it_began(store: Store) -> None:
    first = mem(text="first")
    store.put_memories([first])
    second = mem(text="second")
    with store.snapshot():
        writer = threading.Thread(target=lambda: store.put_memories([second]))
        writer.start()
        writer.join()
        assert store.get_memories("org_a", [first.memory_id, second.memory_id]) == [first]
        assert store.count_memories("org_a") == 1
    assert store.count_memories("org_a") == 2


def test_a_write_inside_a_snapshot_fails(store: Store) -> None:
    with store.snapshot(), pytest.raises(Exception):  # noqa: B017 (each backend has its own error)
        store.put_memories([mem(text="no")])
    assert store.count_memories("org_a") == 0


def test_a_snapshot_inside_a_transaction_reads_its_writes(store: Store) -> None:
    m = mem(text="mine")
    with store.transaction():
        store.put_memories([m])
        with store.snapshot():
            assert store.get_memory("org_a", m.memory_id) == m
    assert store.count_memories("org_a") == 1


def test_ping_answers_while_the_store_does_and_is_unavailable_once_it_does_not(
    store_factory: Callable[[], Store],
) -> None:
    """A server's readiness (GET /v0/health) asks this: no error while the database answers."""
    s = store_factory()
    s.ping(1.0)
    if isinstance(s, SQLiteStore):  # a closed connection is a database that no longer answers
        s.close()
        with pytest.raises(Unavailable):
            s.ping(1.0)


@pytest.mark.integration
def test_a_postgres_ping_waits_at_most_its_timeout_for_a_connection(pg_database: str) -> None:
    """No free connection in time (the pool's one held by an open transaction) is Unavailable after the
    ping's timeout, not the pool's."""
    from engine.storage.postgres import PostgresStore

    s = PostgresStore(pg_database, min_size=1, max_size=1, timeout=60.0)
    try:
        errors: list[BaseException] = []
        with s.transaction():
            worker = threading.Thread(target=lambda: _ping_into(s, errors))
            worker.start()
            worker.join(timeout=30)
        assert not worker.is_alive() and len(errors) == 1 and isinstance(errors[0], Unavailable)
        s.ping(1.0)  # the connection back in the pool
    finally:
        s.close()


def _ping_into(s: Store, errors: list[BaseException]) -> None:
    try:
        s.ping(0.2)
    except BaseException as exc:  # noqa: BLE001 - the test reads what was raised
        errors.append(exc)
