"""engine.memory_service.MemoryService: ids, defaults, events in the same transaction, embedding on write,
patch semantics and cursors. Runs on both stores."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.errors import InvalidInput, NotFound, Unavailable
from engine.memory_service import (
    ListFilters,
    MemoryCreate,
    MemoryPatch,
    MemoryService,
    decode_cursor,
    encode_cursor,
    filters_hash,
)
from engine.models import text_hash
from engine.storage import open_store
from engine.storage.base import EventQuery, Store
from engine.storage.in_memory import InMemoryStore

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = InMemoryStore() if request.param == "memory" else open_store(f"sqlite:///{tmp_path}/t.db")
    yield s
    s.close()


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def service(store: Store, embeddings: EmbeddingCache | None = None) -> tuple[MemoryService, Clock]:
    clock = Clock()
    return MemoryService(store, embeddings=embeddings, clock=clock), clock


def events(store: Store, org: str = "acme") -> list[tuple[str, str | None]]:
    return [(e.type, e.memory_id) for _, e in store.list_events(org, EventQuery())]


def test_create_sets_server_fields(store: Store) -> None:
    svc, _ = service(store)
    given = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    a, b = svc.create(
        "acme",
        [
            MemoryCreate(type="note", text="a"),
            MemoryCreate(type="fact", text="b", timestamp=given, agent_id="own"),
        ],
        agent_id="header-agent",
    )
    assert a.memory_id.startswith("mem_") and a.memory_id != b.memory_id
    assert a.org_id == "acme" and a.timestamp == T0 and a.created_at == a.updated_at == T0
    assert b.timestamp == given and b.created_at == T0
    assert (a.agent_id, b.agent_id) == ("header-agent", "own")
    assert store.get_memory("acme", a.memory_id) == a
    assert events(store) == [("memory.created", a.memory_id), ("memory.created", b.memory_id)]


def test_naive_timestamps_are_utc(store: Store) -> None:
    svc, _ = service(store)
    (m,) = svc.create("acme", [MemoryCreate(type="note", text="x", timestamp=datetime(2024, 1, 1, 8, 0))])
    assert m.timestamp == datetime(2024, 1, 1, 8, 0, tzinfo=UTC)


def test_batch_bounds(store: Store) -> None:
    svc, _ = service(store)
    with pytest.raises(InvalidInput) as err:
        svc.create("acme", [MemoryCreate(type="note", text=str(i)) for i in range(201)])
    assert err.value.field == "items"
    with pytest.raises(InvalidInput):
        svc.create("acme", [])
    assert store.count_memories("acme") == 0


def test_invalid_validity_names_index(store: Store) -> None:
    svc, _ = service(store)
    bad = MemoryCreate(type="note", text="x", valid_from=T0, valid_to=T0 - timedelta(days=1))
    with pytest.raises(InvalidInput) as err:
        svc.create("acme", [MemoryCreate(type="note", text="ok"), bad])
    assert err.value.details["field"] == "items[1].valid_to" and err.value.details["index"] == 1
    assert store.count_memories("acme") == 0


def test_event_failure_rolls_back_the_write(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    svc, _ = service(store)

    def fail(evts: Sequence[object]) -> None:
        raise RuntimeError("event log down")

    monkeypatch.setattr(store, "append_events", fail)
    with pytest.raises(RuntimeError):
        svc.create("acme", [MemoryCreate(type="note", text="x")])
    assert store.count_memories("acme") == 0


def test_event_failure_rolls_back_update_and_delete(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    svc, _ = service(store)
    (m,) = svc.create("acme", [MemoryCreate(type="note", text="x", tags=["a"])])

    def fail(evts: Sequence[object]) -> None:
        raise RuntimeError("event log down")

    monkeypatch.setattr(store, "append_events", fail)
    with pytest.raises(RuntimeError):
        svc.update("acme", m.memory_id, MemoryPatch(tags=["b"]))
    with pytest.raises(RuntimeError):
        svc.delete("acme", m.memory_id)
    assert store.get_memory("acme", m.memory_id) == m


def test_embeds_memory_texts_on_write(store: Store) -> None:
    embedder = HashEmbedder(dim=32)
    svc, _ = service(store, EmbeddingCache(embedder, store))
    svc.create("acme", [MemoryCreate(type="note", text="alice likes tea")])
    found = store.get_embeddings(embedder.model, [text_hash("alice likes tea")])
    assert np.allclose(found[text_hash("alice likes tea")], embedder.embed(["alice likes tea"])[0])


class BrokenEmbedder:
    model = "broken:1"
    dim = 4

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise Unavailable("model server down")


def test_embedder_failure_does_not_fail_the_write(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    svc, _ = service(store, EmbeddingCache(BrokenEmbedder(), store))
    (m,) = svc.create("acme", [MemoryCreate(type="note", text="still stored")])
    assert store.get_memory("acme", m.memory_id) == m
    assert store.get_embeddings("broken:1", [text_hash("still stored")]) == {}
    assert "stored without vectors" in caplog.text


def test_update_semantics_and_events(store: Store) -> None:
    svc, clock = service(store)
    (m,) = svc.create("acme", [MemoryCreate(type="note", text="x", tags=["a"], valid_from=T0)])
    clock.now = T0 + timedelta(minutes=1)
    same = svc.update("acme", m.memory_id, MemoryPatch(tags=["a"]))  # no change: no write, no event
    assert same == m
    u = svc.update("acme", m.memory_id, MemoryPatch(tags=["b"], metadata={"k": 1}))
    assert (u.tags, u.metadata, u.updated_at, u.created_at, u.text) == (["b"], {"k": 1}, clock.now, T0, "x")
    arch = svc.update("acme", m.memory_id, MemoryPatch(archived=True, valid_to=T0 + timedelta(days=1)))
    assert arch.archived and arch.valid_to == T0 + timedelta(days=1)
    cleared = svc.update("acme", m.memory_id, MemoryPatch(valid_to=None))
    assert cleared.valid_to is None
    with pytest.raises(InvalidInput):
        svc.update("acme", m.memory_id, MemoryPatch(valid_to=T0 - timedelta(days=1)))
    kinds = [k for k, _ in events(store)]
    assert kinds == ["memory.created", "memory.updated", "memory.archived", "memory.updated"]
    data = [e.data for _, e in store.list_events("acme", EventQuery())]
    assert data[1] == {"namespace": "default", "fields": ["metadata", "tags"]}
    assert data[2] == {"namespace": "default", "fields": ["archived", "valid_to"]}


def test_other_org_is_not_found(store: Store) -> None:
    svc, _ = service(store)
    (m,) = svc.create("acme", [MemoryCreate(type="note", text="x")])
    for call in (
        lambda: svc.get("other", m.memory_id),
        lambda: svc.update("other", m.memory_id, MemoryPatch(tags=["t"])),
        lambda: svc.delete("other", m.memory_id),
    ):
        with pytest.raises(NotFound):
            call()
    assert store.get_memory("acme", m.memory_id) == m and events(store, "other") == []


def test_delete(store: Store) -> None:
    svc, _ = service(store)
    (m,) = svc.create("acme", [MemoryCreate(type="note", text="x")])
    svc.delete("acme", m.memory_id)
    assert store.get_memory("acme", m.memory_id) is None
    assert events(store)[-1] == ("memory.deleted", m.memory_id)


def test_list_pages_with_cursor(store: Store) -> None:
    svc, _ = service(store)
    made = svc.create(
        "acme", [MemoryCreate(type="note", text=str(i), timestamp=T0 + timedelta(hours=i)) for i in range(5)]
    )
    first = svc.list_page("acme", ListFilters(sort="timestamp_asc"), page_size=2)
    assert [m.text for m in first.items] == ["0", "1"] and first.next_cursor
    second = svc.list_page("acme", ListFilters(sort="timestamp_asc"), page_size=2, cursor=first.next_cursor)
    third = svc.list_page("acme", ListFilters(sort="timestamp_asc"), page_size=2, cursor=second.next_cursor)
    assert [m.text for m in second.items + third.items] == ["2", "3", "4"] and third.next_cursor is None
    with pytest.raises(InvalidInput):
        svc.list_page("acme", ListFilters(sort="timestamp_desc"), page_size=2, cursor=first.next_cursor)
    with pytest.raises(InvalidInput):
        svc.list_page("acme", ListFilters(), page_size=201)
    with pytest.raises(InvalidInput):
        svc.list_page("acme", ListFilters(types=("nope",)))
    assert len(made) == 5


def test_cursor_round_trip_and_binding() -> None:
    f = ListFilters(namespace="n", tag="t")
    h = filters_hash("acme", f)
    c = encode_cursor("timestamp_desc", h, T0, "mem_1")
    assert decode_cursor(c, "timestamp_desc", h) == (T0, "mem_1")
    assert filters_hash("acme", ListFilters(namespace="n", tag="t")) == h
    assert filters_hash("acme", ListFilters(namespace="m", tag="t")) != h
    assert filters_hash("other", f) != h
    for bad in ("", "!!", "AAAA"):
        with pytest.raises(InvalidInput):
            decode_cursor(bad, "timestamp_desc", h)


def test_prepare_embeds_outside_any_transaction() -> None:
    store = InMemoryStore()
    depths: list[int] = []

    class Probe(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            depths.append(store._depth)  # the open-transaction depth of the in-memory store
            return super().embed(texts)

    svc, _ = service(store, EmbeddingCache(Probe(dim=16), store))
    prepared = svc.prepare("acme", [MemoryCreate(type="note", text="x")])
    assert store.count_memories("acme") == 0 and depths == [0]
    with store.transaction():
        svc.insert("acme", prepared)
    assert store.get_memory("acme", prepared[0].memory_id) == prepared[0]
    with pytest.raises(InvalidInput):
        svc.insert("other", prepared)


def test_a_fact_moved_into_another_run_meets_that_runs_value(store: Store) -> None:
    """metadata.run_id is part of a fact's space: a patch that moves a fact there settles the key again."""
    svc, clock = service(store)

    def fact(city: str, run: str) -> MemoryCreate:
        return MemoryCreate(
            type="fact", text=city, subject="ent:u", predicate="lives_in", object=city,
            keys=["ent:u|lives_in"], metadata={"run_id": run},
        )  # fmt: skip

    (denver,) = svc.create("acme", [fact("Denver", "A")])
    clock.now = T0 + timedelta(hours=1)
    (austin,) = svc.create("acme", [fact("Austin", "B")])
    clock.now = T0 + timedelta(hours=2)
    svc.update("acme", denver.memory_id, MemoryPatch(metadata={"run_id": "B"}))
    moved, other = svc.get("acme", denver.memory_id), svc.get("acme", austin.memory_id)
    assert (moved.status, moved.valid_to) == ("superseded", austin.timestamp)
    assert other.status == "active"
