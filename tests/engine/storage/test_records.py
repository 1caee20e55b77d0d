"""API keys, idempotency records, the event log and the embeddings cache."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from engine.errors import Conflict
from engine.models import ApiKey, Event, IdempotencyRecord
from engine.storage.base import EventQuery, Store
from tests.engine.storage.conftest import at


def _key(key_id: str, org: str = "org_a", minute: int = 0, **kw: Any) -> ApiKey:
    return ApiKey(
        key_id=key_id,
        org_id=org,
        key_hash=f"hash-{key_id}",
        scopes=["read", "write"],
        created_at=at(minute),
        **kw,
    )


def test_api_keys(store: Store) -> None:
    k1, k2, k3 = _key("key_1", minute=2, name="ci"), _key("key_2", minute=1), _key("key_3", org="org_b")
    for k in (k1, k2, k3):
        store.create_api_key(k)
    assert store.find_api_key("hash-key_1") == k1
    assert store.find_api_key("nope") is None
    assert store.list_api_keys("org_a") == [k2, k1]
    assert store.list_api_keys("org_b") == [k3]
    assert [k.key_id for k in store.list_api_keys()] == ["key_3", "key_2", "key_1"]
    with pytest.raises(Conflict):
        store.create_api_key(_key("key_1"))
    with pytest.raises(Conflict):
        store.create_api_key(
            ApiKey(key_id="key_9", org_id="org_a", key_hash="hash-key_2", scopes=[], created_at=at(0))
        )
    assert store.revoke_api_key("key_1", at(10)) is True
    assert store.revoke_api_key("key_1", at(20)) is True  # already revoked: the first time stays
    assert store.revoke_api_key("key_missing", at(10)) is False
    revoked = store.find_api_key("hash-key_1")
    assert revoked is not None and revoked.revoked_at == at(10)
    assert store.find_api_key("hash-key_2").revoked_at is None  # type: ignore[union-attr]


def _idem(key: str, org: str = "org_a", expires: int = 60, body: bytes = b'{"ok":true}') -> IdempotencyRecord:
    return IdempotencyRecord(
        org_id=org,
        key=key,
        fingerprint="fp",
        status_code=201,
        body=body,
        created_at=at(0),
        expires_at=at(expires),
    )


def test_idempotency(store: Store) -> None:
    rec = _idem("k1", body=b"\x00\xffbinary")
    store.put_idempotency(rec)
    assert store.get_idempotency("org_a", "k1", at(59)) == rec
    assert store.get_idempotency("org_a", "k1", at(60)) is None  # expired at expires_at
    assert store.get_idempotency("org_b", "k1", at(1)) is None
    assert store.get_idempotency("org_a", "k2", at(1)) is None
    newer = _idem("k1", expires=120, body=b"second")
    store.put_idempotency(newer)  # replaces (e.g. after expiry)
    assert store.get_idempotency("org_a", "k1", at(100)) == newer


def _event(i: int, org: str = "org_a", type_: str = "memory.created", entity: str | None = None) -> Event:
    return Event(
        event_id=f"evt_{i}",
        org_id=org,
        type=type_,
        at=at(i),
        entity_id=entity,
        memory_id=f"mem_{i}",
        data={"i": i, "flag": True},
    )


def test_relaxed_event_appends_are_logged_in_order(store: Store) -> None:
    """`durable=False` changes when a commit reaches the disk, never what is logged."""
    store.append_events([_event(1)], durable=False)
    with store.transaction():
        store.append_events([_event(2)], durable=False)
    store.append_events([_event(3)])
    store.append_events([_event(4)], durable=False)
    assert [e.event_id for _, e in store.list_events("org_a", EventQuery())] == [
        "evt_1",
        "evt_2",
        "evt_3",
        "evt_4",
    ]


def test_events(store: Store) -> None:
    store.append_events([_event(1), _event(2, type_="context.assembled"), _event(3, org="org_b")])
    store.append_events([_event(4, entity="ent:a"), _event(5, type_="context.assembled", entity="ent:a")])
    everything = store.list_events("org_a", EventQuery())
    assert [(s, e.event_id) for s, e in everything] == [
        (1, "evt_1"),
        (2, "evt_2"),
        (3, "evt_4"),
        (4, "evt_5"),
    ]
    assert everything[0][1] == _event(1)
    assert store.list_events("org_b", EventQuery()) == [(1, _event(3, org="org_b"))]  # its own numbering
    q = EventQuery
    assert [e.event_id for _, e in store.list_events("org_a", q(type="context.assembled"))] == [
        "evt_2",
        "evt_5",
    ]
    assert [e.event_id for _, e in store.list_events("org_a", q(entity_id="ent:a"))] == ["evt_4", "evt_5"]
    assert [e.event_id for _, e in store.list_events("org_a", q(since=at(2)))] == ["evt_2", "evt_4", "evt_5"]
    assert [e.event_id for _, e in store.list_events("org_a", q(memory_id="mem_4"))] == ["evt_4"]
    assert store.list_events("org_a", q(memory_id="mem_3")) == []  # org_b's
    assert store.list_events("org_a", q(memory_id="mem_4", type="context.assembled")) == []
    assert store.list_events("org_a", q(memory_id="mem\x00_4")) == []
    page1 = store.list_events("org_a", q(limit=2))
    page2 = store.list_events("org_a", q(limit=2, after=page1[-1][0]))
    page3 = store.list_events("org_a", q(limit=2, after=page2[-1][0]))
    assert [e.event_id for _, e in page1 + page2] == ["evt_1", "evt_2", "evt_4", "evt_5"]
    assert page3 == []
    store.append_events([_event(6)])
    later = store.list_events("org_a", q(after=page2[-1][0]))
    assert [(s, e.event_id) for s, e in later] == [(5, "evt_6")]


def test_each_org_numbers_its_events_under_concurrent_writers(store: Store) -> None:
    """Writers of two orgs append at once, one event or a batch per transaction: each org's log is
    numbered 1..n, without gaps or repeats, in the order a reader sees them."""
    per_thread = 10
    threads_n = 4

    def write(t: int) -> None:
        for i in range(per_thread):
            batch = [_event(1000 * t + 10 * i + k, org=o) for k, o in enumerate(("org_a", "org_b", "org_a"))]
            with store.transaction():
                store.append_events(batch[: 1 + i % 3])

    threads = [threading.Thread(target=write, args=(t,)) for t in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for org in ("org_a", "org_b"):
        numbers = [n for n, _ in store.list_events(org, EventQuery(limit=1000))]
        assert numbers == list(range(1, len(numbers) + 1)), org
    assert len(store.list_events("org_a", EventQuery(limit=1000))) == threads_n * sum(
        [1, 1, 2][i % 3] for i in range(per_thread)
    )


def test_embeddings_cache(store: Store) -> None:
    v1 = np.array([0.5, -0.25, 1e-8], dtype=np.float32)
    v2 = (np.arange(384) / 7).astype(np.float32)
    store.put_embeddings("m1", {"h1": v1, "h2": v2})
    store.put_embeddings("m2", {"h1": v2})
    got = store.get_embeddings("m1", ["h1", "h2", "h3"])
    assert set(got) == {"h1", "h2"}
    assert got["h1"].dtype == np.float32 and np.array_equal(got["h1"], v1)
    assert np.array_equal(got["h2"], v2)
    assert np.array_equal(store.get_embeddings("m2", ["h1"])["h1"], v2)
    assert store.get_embeddings("m3", ["h1"]) == {}
    got["h1"][0] = 99  # the caller's copy, not the store's
    assert store.get_embeddings("m1", ["h1"])["h1"][0] == np.float32(0.5)
    store.put_embeddings("m1", {"h1": v2})  # replace
    assert np.array_equal(store.get_embeddings("m1", ["h1"])["h1"], v2)
    many = {f"h{i}": np.full(4, i, dtype=np.float32) for i in range(1200)}  # more than one IN (...) chunk
    store.put_embeddings("m4", many)
    assert len(store.get_embeddings("m4", list(many))) == 1200
