"""engine.deferred_events: reads' log entries held and appended in batches, in order, none lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from engine.assemble import Engine, assemble_turn
from engine.deferred_events import DeferredEvents
from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.extract import create_extractor
from engine.models import Event
from engine.retrieval.options import AssembleRequest, IngestOptions
from engine.storage.base import EventQuery
from engine.storage.in_memory import InMemoryStore

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _event(i: int) -> Event:
    return Event(event_id=f"ev_{i:03d}", org_id="acme", type="context.assembled", at=NOW, entity_id="ent:a")


def _logged(store: InMemoryStore) -> list[str]:
    return [e.event_id for _, e in store.list_events("acme", EventQuery(limit=500))]


def _until(done: Callable[[], bool]) -> None:
    """Wait for a background thread's effect (a generous bound, not a speed check)."""
    deadline = time.monotonic() + 30
    while not done():
        assert time.monotonic() < deadline, "the writer thread did not write"
        time.sleep(0.01)


class Spy(InMemoryStore):
    """Records each append_events call; refuses them while `refuse` is set (with `refuse_only`, only
    calls holding an event of that type)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[int, bool]] = []
        self.refuse = False
        self.refuse_only: str | None = None

    def append_events(self, events: Sequence[Event], *, durable: bool = True) -> None:
        if self.refuse and (self.refuse_only is None or any(e.type == self.refuse_only for e in events)):
            raise OSError("database is down")
        self.calls.append((len(events), durable))
        super().append_events(events, durable=durable)


def test_held_events_are_appended_in_one_call_in_order_and_not_durably() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=3600)
    for i in range(5):
        log.add(_event(i))
    assert _logged(store) == [] and log.held() == 5
    log.flush()
    assert _logged(store) == [f"ev_{i:03d}" for i in range(5)]
    assert store.calls == [(5, False)]
    log.close()


def test_the_writer_thread_appends_without_a_flush() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=0.01)
    log.add(_event(1))
    log.add(_event(2))
    _until(lambda: len(_logged(store)) == 2)
    assert _logged(store) == ["ev_001", "ev_002"]
    log.close()


def test_a_full_batch_is_written_without_waiting_for_the_delay() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=3600, max_held=4)
    for i in range(4):
        log.add(_event(i))
    _until(lambda: len(_logged(store)) == 4)
    log.close()


def test_close_appends_what_is_held_and_later_events_go_straight_to_the_store() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=3600)
    for i in range(3):
        log.add(_event(i))
    log.close()
    assert _logged(store) == ["ev_000", "ev_001", "ev_002"]
    log.add(_event(3))
    assert _logged(store)[-1] == "ev_003" and log.held() == 0


def test_events_the_store_refuses_stay_held_and_keep_their_order() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=3600)
    log.add(_event(1))
    log.add(_event(2))
    store.refuse = True
    with pytest.raises(OSError):
        log.flush()
    log.add(_event(3))
    assert log.held() == 3
    store.refuse = False
    log.flush()
    assert _logged(store) == ["ev_001", "ev_002", "ev_003"]
    log.close()


def test_events_added_from_many_threads_are_all_appended() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=0.005, max_held=7)

    def add(base: int) -> None:
        for i in range(50):
            log.add(_event(base + i))

    threads = [threading.Thread(target=add, args=(b,)) for b in (0, 100, 200, 300)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    logged = _logged(store)
    assert sorted(logged) == sorted(f"ev_{b + i:03d}" for b in (0, 100, 200, 300) for i in range(50))


def _engine(store: InMemoryStore, log: DeferredEvents | None) -> Engine:
    return Engine(
        store=store,
        embeddings=EmbeddingCache(HashEmbedder(), store),
        extractor=create_extractor("rules"),
        read_events=log,
    )


def _turn(engine: Engine, turn: str, ingest: IngestOptions) -> None:
    request = AssembleRequest(entity_id="ent:a", turn=turn, ingest=ingest)
    assemble_turn(engine, org_id="acme", agent_id=None, request=request, request_id="req_1", now=NOW)


def test_a_read_logs_to_the_deferred_events_and_a_write_in_its_own_transaction() -> None:
    store = Spy()
    log = DeferredEvents(store, delay=3600)
    engine = _engine(store, log)
    _turn(engine, "Where do I live?", IngestOptions(extract=False, store_turn="none"))
    assert log.held() == 1 and store.calls == []
    _turn(engine, "I live in Paris.", IngestOptions())
    assert log.held() == 1  # the writing turn's event went with its write
    kinds = [e.type for _, e in store.list_events("acme", EventQuery(limit=50))]
    assert kinds.count("context.assembled") == 1 and "memory.created" in kinds
    log.close()
    kinds = [e.type for _, e in store.list_events("acme", EventQuery(limit=50))]
    assert kinds.count("context.assembled") == 2


def test_a_writing_turn_whose_event_fails_stores_nothing() -> None:
    store = Spy()
    engine = _engine(store, None)
    store.refuse, store.refuse_only = True, "context.assembled"
    with pytest.raises(OSError):
        _turn(engine, "I live in Paris.", IngestOptions())
    store.refuse = False
    assert store.count_memories("acme") == 0
