from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from engine.models import Memory
from engine.storage.base import ListQuery, Store
from tests.engine.storage.conftest import at, mem


def test_put_get_roundtrip(store: Store) -> None:
    m = mem(text="alpha", tags=["x"], metadata={"a": 1})
    store.put_memories([m])
    assert store.get_memory("org_a", m.memory_id) == m
    assert store.get_memory("org_b", m.memory_id) is None
    assert store.get_memory("org_a", "mem_missing") is None


def test_put_replaces(store: Store) -> None:
    m = mem(text="alpha")
    store.put_memories([m])
    m2 = msgspec.structs.replace(m, text="beta", status="superseded")
    store.put_memories([m2])
    assert store.get_memory("org_a", m.memory_id) == m2
    assert store.count_memories("org_a") == 1


def test_get_memories_order_and_missing(store: Store) -> None:
    a, b, c = mem(), mem(), mem()
    store.put_memories([a, b, c])
    got = store.get_memories("org_a", [c.memory_id, "nope", a.memory_id])
    assert [m.memory_id for m in got] == [c.memory_id, a.memory_id]
    assert store.get_memories("org_b", [a.memory_id]) == []


def test_delete(store: Store) -> None:
    a = mem()
    store.put_memories([a])
    assert store.delete_memory("org_b", a.memory_id) is False
    assert store.get_memory("org_a", a.memory_id) == a
    assert store.delete_memory("org_a", a.memory_id) is True
    assert store.delete_memory("org_a", a.memory_id) is False
    assert store.get_memory("org_a", a.memory_id) is None
    assert store.count_memories() == 0


def test_count_and_iter(store: Store) -> None:
    a, b = mem(timestamp=at(10)), mem(timestamp=at(5))
    c = mem(org_id="org_b")
    store.put_memories([a, b, c])
    assert store.count_memories() == 3
    assert store.count_memories("org_a") == 2
    assert store.count_memories("org_c") == 0
    assert [m.memory_id for m in store.iter_memories("org_a")] == [b.memory_id, a.memory_id]


def test_find_by_key(store: Store) -> None:
    a = mem(keys=["ent:al|lives_in"], namespace="n1", timestamp=at(2))
    b = mem(keys=["ent:al|lives_in", "x|y"], namespace="n1", status="superseded", timestamp=at(1))
    c = mem(keys=["ent:al|lives_in"], namespace="n1", archived=True)
    d = mem(keys=["ent:al|lives_in"], namespace="n2")
    e = mem(keys=["ent:al|lives_in"], namespace="n1", org_id="org_b")
    f = mem(keys=None, namespace="n1")
    store.put_memories([a, b, c, d, e, f])
    got = store.find_by_key("org_a", "n1", "ent:al|lives_in")
    assert [m.memory_id for m in got] == [b.memory_id, a.memory_id]
    assert store.find_by_key("org_a", "n1", "x|y") == [b]
    assert store.find_by_key("org_a", "n1", "ent:al") == []


def _ids(ms: Sequence[Memory]) -> list[str]:
    return [m.memory_id for m in ms]


def test_list_text_filter(store: Store) -> None:
    a = mem(text="Alice moved to Berlin", timestamp=at(1))
    b = mem(text="bob LIKES berlin_100% café", timestamp=at(2))
    c = mem(text="CAFÉ Zürich", timestamp=at(3), namespace="n2")
    d = mem(org_id="org_b", text="Berlin too", timestamp=at(4))
    e = mem(text="a\x00nul \x01x\x02y", timestamp=at(5))
    store.put_memories([a, b, c, d, e])

    def found(text: str, **more: Any) -> list[str]:
        return _ids(store.list_memories("org_a", ListQuery(text=text, sort="timestamp_asc", **more)))

    assert found("berlin") == _ids([a, b])  # substring, ASCII case-insensitive, own org only
    assert found("BERLIN_1") == _ids([b])  # no LIKE wildcards: `_` and `%` are plain characters
    assert found("_100%") == _ids([b])
    assert found("ob_l") == [] and found("o%s") == []  # what LIKE wildcards would match
    assert found("café") == _ids([b])  # non-ASCII letters compare exactly
    assert found("CAFÉ") == _ids([c])
    assert found("zürich") == _ids([c])
    assert found("Berlin", namespace="n2") == []
    assert found("Berlin", limit=1) == _ids([a])
    assert found("nul") == _ids([e])  # around stored control characters (PostgreSQL escapes NUL)
    assert found("") == _ids([a, b, c, e])


def test_list_filters(store: Store) -> None:
    a = mem(namespace="n1", entity_id="ent:a", agent_id="g1", type="fact", tags=["t1", "t2"], timestamp=at(1))
    b = mem(
        namespace="n1", entity_id="ent:b", agent_id="g2", type="event", status="superseded", timestamp=at(2)
    )
    c = mem(namespace="n2", archived=True, tags=["t2"], timestamp=at(3))
    d = mem(org_id="org_b", namespace="n1", timestamp=at(4))
    store.put_memories([a, b, c, d])
    q = ListQuery
    assert _ids(store.list_memories("org_a", q())) == _ids([c, b, a])
    assert _ids(store.list_memories("org_a", q(namespace="n1"))) == _ids([b, a])
    assert _ids(store.list_memories("org_a", q(entity_id="ent:a"))) == _ids([a])
    assert _ids(store.list_memories("org_a", q(agent_id="g2"))) == _ids([b])
    assert _ids(store.list_memories("org_a", q(types=("fact", "note")))) == _ids([c, a])
    assert _ids(store.list_memories("org_a", q(statuses=("superseded",)))) == _ids([b])
    assert _ids(store.list_memories("org_a", q(tag="t2"))) == _ids([c, a])
    assert _ids(store.list_memories("org_a", q(tag="t"))) == []
    assert _ids(store.list_memories("org_a", q(archived=True))) == _ids([c])
    assert _ids(store.list_memories("org_a", q(archived=False))) == _ids([b, a])
    assert _ids(store.list_memories("org_a", q(since=at(2)))) == _ids([c, b])
    assert _ids(store.list_memories("org_a", q(until=at(2)))) == _ids([a])
    assert _ids(store.list_memories("org_a", q(sort="timestamp_asc"))) == _ids([a, b, c])
    assert _ids(store.list_memories("org_a", q(limit=1))) == _ids([c])
    assert _ids(store.list_memories("org_b", q())) == _ids([d])


@pytest.mark.parametrize("sort", ["timestamp_desc", "timestamp_asc"])
def test_paging_with_ties(store: Store, sort: str) -> None:
    # equal timestamps: ordering falls back to memory_id
    ms = [mem(timestamp=at(i // 3)) for i in range(10)]
    store.put_memories(ms)
    seen: list[str] = []
    after = None
    while True:
        page = store.list_memories("org_a", ListQuery(sort=sort, limit=3, after=after))  # type: ignore[arg-type]
        if not page:
            break
        seen += _ids(page)
        after = (page[-1].timestamp, page[-1].memory_id)
    expected = sorted(ms, key=lambda m: (m.timestamp, m.memory_id), reverse=sort == "timestamp_desc")
    assert seen == _ids(expected)


@pytest.mark.parametrize("sort", ["timestamp_desc", "timestamp_asc"])
def test_paging_under_concurrent_inserts(store: Store, sort: str) -> None:
    """Pages never repeat or skip a memory that existed when paging began, whatever is written meanwhile
    (new memories with timestamps before, inside and after the range, from another thread)."""
    import threading

    existing = [mem(timestamp=at(100 + i // 2)) for i in range(60)]
    store.put_memories(existing)
    stop = threading.Event()
    written: list[str] = []

    def writer() -> None:
        i = 0
        while not stop.is_set() and i < 400:
            m = mem(timestamp=at([50, 110, 125, 200][i % 4]))
            store.put_memories([m])
            written.append(m.memory_id)
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        seen: list[str] = []
        after = None
        while True:
            page = store.list_memories("org_a", ListQuery(sort=sort, limit=7, after=after))  # type: ignore[arg-type]
            if not page:
                break
            seen += _ids(page)
            after = (page[-1].timestamp, page[-1].memory_id)
    finally:
        stop.set()
        t.join()
    assert len(seen) == len(set(seen))  # no repeats
    assert set(_ids(existing)) <= set(seen)  # no skips
    seen_existing = [i for i in seen if i in set(_ids(existing))]
    expected = sorted(existing, key=lambda m: (m.timestamp, m.memory_id), reverse=sort == "timestamp_desc")
    assert seen_existing == _ids(expected)
    assert written  # the writer really ran


def test_keys_and_tags_follow_reput_and_delete(store: Store) -> None:
    a = mem(keys=["k1", "k1"], tags=["t1", "t1"])
    store.put_memories([a])
    assert store.find_by_key("org_a", "default", "k1") == [a]
    assert store.list_memories("org_a", ListQuery(tag="t1")) == [a]
    b = msgspec.structs.replace(a, keys=["k2"], tags=["t2"], namespace="other")
    store.put_memories([b])
    assert store.find_by_key("org_a", "default", "k1") == []
    assert store.find_by_key("org_a", "other", "k2") == [b]
    assert store.list_memories("org_a", ListQuery(tag="t1")) == []
    assert store.list_memories("org_a", ListQuery(tag="t2")) == [b]
    store.delete_memory("org_a", a.memory_id)
    assert store.find_by_key("org_a", "other", "k2") == []
    assert store.list_memories("org_a", ListQuery(tag="t2")) == []


def test_empty_filters_and_limits(store: Store) -> None:
    store.put_memories([mem(), mem()])
    assert store.list_memories("org_a", ListQuery(types=())) == []
    assert store.list_memories("org_a", ListQuery(limit=0)) == []
    assert store.get_memories("org_a", []) == []
    store.put_memories([])
    assert store.count_memories() == 2
