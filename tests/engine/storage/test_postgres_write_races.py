"""Concurrent writes of one memory on PostgreSQL, as two server workers make them: two PostgresStores on
one database, each write in its own thread and transaction.

Each test holds the first write's transaction open at a chosen point (a threading.Event), starts the
second write, waits until PostgreSQL reports it waiting for a lock (`pg_stat_activity`), and only then
lets the first one commit: the interleaving that lost changes, brought deleted memories back and
deadlocked before writes locked keys, rows and the event log in one order.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from engine.errors import NotFound
from engine.extract.rules import RuleExtractor
from engine.memory_service import MemoryPatch, MemoryService
from engine.models import Event, Memory
from engine.storage.base import EventQuery
from engine.storage.postgres import PostgresStore
from engine.write.ingest import upsert_memories
from engine.write.turns import commit_turn, plan_turn
from tests.factories import memory
from tests.pg_fixture import pg_database, pg_server

pytestmark = pytest.mark.integration
__all__ = ["pg_database", "pg_server"]  # fixtures used by name below

T0 = datetime(2024, 5, 1, tzinfo=UTC)
ORG = "org_a"
LIVES = "ent:alice|lives_in"
WORKS = "ent:alice|works_at"
WAIT_S = 20.0


@pytest.fixture
def workers(pg_database: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one database: two server workers."""
    stores = (PostgresStore(pg_database, max_size=3), PostgresStore(pg_database, max_size=3))
    yield stores
    for s in stores:
        s.close()


def _fact(city: str, at: datetime, *, predicate: str = "lives_in", key: str = LIVES) -> Memory:
    return memory(
        type="fact",
        text=f"Alice {predicate.replace('_', ' ')} {city}",
        entity_id="ent:alice",
        subject="ent:alice",
        predicate=predicate,
        object=city,
        keys=[key],
        at=at,
        valid_from=at,
    )


def _note(text: str) -> Memory:
    return memory(text=text, entity_id="ent:alice", at=T0)


def _wait_for_lock_waiter(url: str) -> None:
    """Until a session of this database waits for a lock (the second write reached the first's)."""
    deadline = time.monotonic() + WAIT_S
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock'"
            ).fetchone()
            if row and row[0] > 0:
                return
            time.sleep(0.02)
    raise AssertionError("the second write never waited for a lock")


class Run:
    """A call in its own thread; keeps its result or the error it raised."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None

        def target() -> None:
            try:
                self.result = fn()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                self.error = exc

        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def join(self) -> Run:
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "the write never finished"
        return self


def _held_open(store: PostgresStore, write: Callable[[], Any]) -> tuple[Run, threading.Event]:
    """`write` run inside a transaction of `store` that commits only once the returned event is set;
    returns after `write` is done (its locks are held)."""
    done, release = threading.Event(), threading.Event()

    def run() -> Any:
        with store.transaction():
            result = write()
            done.set()
            assert release.wait(WAIT_S)
        return result

    first = Run(run)
    assert done.wait(WAIT_S), first.error
    return first, release


def _race(
    url: str, first_store: PostgresStore, first: Callable[[], Any], second: Callable[[], Any]
) -> tuple[Run, Run]:
    """`first` done in an open transaction, `second` started and waiting for its locks, then `first`
    commits; both joined."""
    held, release = _held_open(first_store, first)
    later = Run(second)
    _wait_for_lock_waiter(url)
    release.set()
    return held.join(), later.join()


def _current(store: PostgresStore, key: str = LIVES) -> list[Memory]:
    return [
        m
        for m in store.find_by_key(ORG, "default", key)
        if m.status in ("active", "disputed") and m.valid_to is None
    ]


def _deleted_events(store: PostgresStore, memory_id: str) -> int:
    events = store.list_events(ORG, EventQuery(memory_id=memory_id, type="memory.deleted"))
    return len(events)


def test_a_patch_during_a_supersession_keeps_the_new_value_alone(
    pg_database: str, workers: tuple[PostgresStore, PostgresStore]
) -> None:
    """A PATCH of the current fact while another worker supersedes it: the patch applies to the
    superseded row, which stays superseded (it used to write back the stale active row)."""
    a, b = workers
    paris = _fact("Paris", T0)
    upsert_memories(a, [paris], now=T0)
    rome = _fact("Rome", T0 + timedelta(days=1))
    sup, patch = _race(
        pg_database,
        a,
        lambda: upsert_memories(a, [rome], now=T0 + timedelta(days=1)),
        lambda: MemoryService(b).update(ORG, paris.memory_id, MemoryPatch(tags=["t1"])),
    )
    assert sup.error is None and patch.error is None
    assert [m.memory_id for m in _current(a)] == [rome.memory_id]
    stored = a.get_memory(ORG, paris.memory_id)
    assert stored is not None and stored.status == "superseded" and stored.tags == ["t1"]


def test_concurrent_patches_of_different_fields_all_hold(
    pg_database: str, workers: tuple[PostgresStore, PostgresStore]
) -> None:
    a, b = workers
    note = _note("patch me")
    a.put_memories([note])
    first, second = _race(
        pg_database,
        a,
        lambda: MemoryService(a).update(ORG, note.memory_id, MemoryPatch(tags=["keep"])),
        lambda: MemoryService(b).update(ORG, note.memory_id, MemoryPatch(archived=True)),
    )
    assert first.error is None and second.error is None
    stored = a.get_memory(ORG, note.memory_id)
    assert stored is not None and stored.tags == ["keep"] and stored.archived


def test_a_patch_racing_a_delete_does_not_bring_the_memory_back(
    pg_database: str, workers: tuple[PostgresStore, PostgresStore]
) -> None:
    a, b = workers
    note = _note("delete or patch me")
    a.put_memories([note])
    deleted, patch = _race(
        pg_database,
        a,
        lambda: MemoryService(a).delete(ORG, note.memory_id),
        lambda: MemoryService(b).update(ORG, note.memory_id, MemoryPatch(tags=["x"])),
    )
    assert deleted.error is None
    assert isinstance(patch.error, NotFound)
    assert a.get_memory(ORG, note.memory_id) is None
    types = [e.type for _, e in a.list_events(ORG, EventQuery(memory_id=note.memory_id))]
    assert types == ["memory.deleted"]


def test_a_supersession_racing_a_delete_does_not_bring_the_fact_back(
    pg_database: str, workers: tuple[PostgresStore, PostgresStore]
) -> None:
    a, b = workers
    paris = _fact("Paris", T0)
    upsert_memories(a, [paris], now=T0)
    rome = _fact("Rome", T0 + timedelta(days=1))
    deleted, sup = _race(
        pg_database,
        a,
        lambda: MemoryService(a).delete(ORG, paris.memory_id),
        lambda: upsert_memories(b, [rome], now=T0 + timedelta(days=1)),
    )
    assert deleted.error is None and sup.error is None
    assert a.get_memory(ORG, paris.memory_id) is None
    assert [m.memory_id for m in _current(a)] == [rome.memory_id]
    assert sup.result[0].action == "UPSERTED"  # nothing left to supersede


def test_the_same_delete_twice_at_once_deletes_once(
    pg_database: str, workers: tuple[PostgresStore, PostgresStore]
) -> None:
    a, b = workers
    note = _note("delete me")
    a.put_memories([note])
    first, second = _race(
        pg_database,
        a,
        lambda: MemoryService(a).delete(ORG, note.memory_id),
        lambda: MemoryService(b).delete(ORG, note.memory_id),
    )
    assert first.error is None
    assert isinstance(second.error, NotFound)
    assert _deleted_events(a, note.memory_id) == 1


def test_a_turn_and_a_supersession_of_its_key_do_not_deadlock(
    pg_database: str, workers: tuple[PostgresStore, PostgresStore]
) -> None:
    """A turn stores itself and its event, then its fact's key; a supersession holds that key and
    then logs its events. With the event log locked at commit, the turn waits for the key instead."""
    a, b = workers
    now = T0 + timedelta(days=1)
    plan = plan_turn(
        RuleExtractor(), "I live in Rome", org_id=ORG, entity_id="ent:alice", timestamp=now, now=now
    )
    assert [f.predicate for f in plan.extraction.facts] == ["lives_in"]
    rome = _fact("Rome", now)
    holding, go = threading.Event(), threading.Event()

    def supersede() -> None:
        with b.transaction():
            b.find_by_key(ORG, "default", LIVES)
            holding.set()
            assert go.wait(WAIT_S)
            b.append_events([Event(event_id="evt_sup", org_id=ORG, type="memory.superseded", at=now)])
            b.put_memories([rome])

    sup = Run(supersede)
    assert holding.wait(WAIT_S)

    turned = Run(lambda: commit_turn(a, plan, now=now))
    _wait_for_lock_waiter(pg_database)
    go.set()
    sup.join()
    turned.join()
    assert sup.error is None and turned.error is None


class _PausingStore:
    """A store whose first `find_by_key` call pauses at `barrier` (both writers hold a key), if the
    other writer gets there too."""

    def __init__(self, store: PostgresStore, barrier: threading.Barrier) -> None:
        self._store = store
        self._barrier = barrier
        self._paused = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        found = self._store.find_by_key(org_id, namespace, key)
        if not self._paused:
            self._paused = True
            # broken: the other writer waits for a lock this one holds, so go on
            with contextlib.suppress(threading.BrokenBarrierError):
                self._barrier.wait(3)
        return found


def test_two_batches_of_the_same_keys_in_opposite_orders_do_not_deadlock(
    workers: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = workers
    barrier = threading.Barrier(2)
    now = T0 + timedelta(days=1)

    def batch(store: PostgresStore, facts: Sequence[Memory]) -> Run:
        return Run(lambda: upsert_memories(_PausingStore(store, barrier), facts, now=now))

    one = batch(a, [_fact("Rome", now), _fact("Acme", now, predicate="works_at", key=WORKS)])
    later = now + timedelta(hours=1)
    two = batch(b, [_fact("Initech", later, predicate="works_at", key=WORKS), _fact("Oslo", later)])
    one.join()
    two.join()
    assert one.error is None and two.error is None
    assert len(_current(a, LIVES)) == 1 and len(_current(a, WORKS)) == 1
