"""Correctness across processes: supersession on one conflict key, Idempotency-Key replay, event cursor.

Each worker is a separate OS process (multiprocessing, spawn) with its own PostgresStore, like two
server workers behind one database.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from engine.models import Event, IdempotencyRecord, Memory
from engine.storage.base import EventQuery
from engine.storage.postgres import PostgresStore
from tests.factories import memory
from tests.pg_fixture import pg_database, pg_server, postgres_store

pytestmark = pytest.mark.integration
__all__ = ["pg_database", "pg_server", "postgres_store"]  # fixtures used by name below

T0 = datetime(2024, 5, 1, tzinfo=UTC)
KEY = "ent:alice|lives_in"


def _fact(memory_id: str, city: str, at: datetime) -> Memory:
    return memory(
        memory_id=memory_id,
        type="fact",
        text=f"Alice lives in {city}",
        subject="ent:alice",
        predicate="lives_in",
        object=city,
        keys=[KEY],
        at=at,
        valid_from=at,
    )


def supersede_write(store: PostgresStore, new: Memory, pause: float, read_barrier: Any = None) -> None:
    """The read-decide-write of supersession: end every active fact on the key, add the new one."""
    with store.transaction():
        existing = store.find_by_key(new.org_id, new.namespace, KEY)
        if read_barrier is not None:
            read_barrier.wait(10)  # both writers have read before either writes (control run only)
        time.sleep(pause)  # widen the race window
        ended = [
            msgspec.structs.replace(m, status="superseded", valid_to=new.valid_from)
            for m in existing
            if m.status == "active"
        ]
        store.put_memories([*ended, new])


def _worker(url: str, memory_id: str, city: str, start: Any, lock_keys: bool, read_barrier: Any) -> None:
    store = PostgresStore(url, lock_conflict_keys=lock_keys, max_size=2)
    try:
        start.wait(30)
        supersede_write(store, _fact(memory_id, city, T0), 0.3, read_barrier)
    finally:
        store.close()


def _run_two_processes(url: str, *, lock_keys: bool) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(2)
    read_barrier = None if lock_keys else ctx.Barrier(2)
    procs = [
        ctx.Process(target=_worker, args=(url, f"mem_{city}", city, start, lock_keys, read_barrier))
        for city in ("paris", "rome")
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]


def _statuses(store: PostgresStore) -> list[str]:
    return sorted(m.status for m in store.find_by_key("org_a", "default", KEY))


def test_two_processes_same_conflict_key_end_with_one_active_fact(postgres_store: PostgresStore) -> None:
    _run_two_processes(postgres_store.url, lock_keys=True)
    assert _statuses(postgres_store) == ["active", "superseded"]
    superseded = next(m for m in postgres_store.find_by_key("org_a", "default", KEY) if m.status != "active")
    assert superseded.valid_to == T0


def test_without_the_key_lock_the_race_is_real(postgres_store: PostgresStore) -> None:
    """Control: the same two processes with locking off both see no active fact, so both stay active.
    Shows the test above can fail."""
    _run_two_processes(postgres_store.url, lock_keys=False)
    assert _statuses(postgres_store) == ["active", "active"]


def test_idempotency_key_runs_once_across_workers(pg_database: str) -> None:
    """Two workers (own stores, own pools) handle the same Idempotency-Key at once: the second waits on
    the (org, key) lock taken by get_idempotency inside the transaction, then replays."""
    stores = [PostgresStore(pg_database, max_size=2) for _ in range(2)]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def handle(store: PostgresStore) -> None:
        barrier.wait(10)
        with store.transaction():
            record = store.get_idempotency("org_a", "idem-1", T0)
            if record is not None:
                outcomes.append("replayed:" + record.body.decode())
                return
            time.sleep(0.3)
            store.put_memories([_fact("mem_idem", "oslo", T0)])
            store.put_idempotency(
                IdempotencyRecord(
                    org_id="org_a",
                    key="idem-1",
                    fingerprint="fp",
                    status_code=201,
                    body=b'{"ok":1}',
                    created_at=T0,
                    expires_at=T0 + timedelta(days=1),
                )
            )
            outcomes.append("processed")

    try:
        threads = [threading.Thread(target=handle, args=(s,)) for s in stores]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(outcomes) == ["processed", 'replayed:{"ok":1}']
        assert stores[0].get_idempotency("org_a", "idem-1", T0 + timedelta(days=1)) is None  # expired
    finally:
        for s in stores:
            s.close()


def test_event_cursor_never_skips_a_late_commit(pg_database: str) -> None:
    """Writer A appends first (smaller seq) but commits last; writer B appends meanwhile. A reader
    polling in between must not receive B's event before A's, or its cursor would skip A's forever.
    The per-org lock in append_events makes B wait for A's commit. (A transaction's events are
    written when it ends, or when it reads the log, as A does here to number its event first.)"""
    a_store, b_store, reader = (PostgresStore(pg_database, max_size=2) for _ in range(3))
    a_appended = threading.Event()

    def writer_a() -> None:
        with a_store.transaction():
            a_store.append_events([Event(event_id="evt_a", org_id="org_a", type="x", at=T0)])
            assert [e.event_id for _, e in a_store.list_events("org_a", EventQuery())] == ["evt_a"]
            a_appended.set()
            time.sleep(0.6)

    def writer_b() -> None:
        a_appended.wait(10)
        b_store.append_events([Event(event_id="evt_b", org_id="org_a", type="x", at=T0)])

    try:
        threads = [threading.Thread(target=writer_a), threading.Thread(target=writer_b)]
        for t in threads:
            t.start()
        a_appended.wait(10)
        time.sleep(0.3)  # B has had time to commit if nothing stops it
        first = reader.list_events("org_a", EventQuery())
        for t in threads:
            t.join(10)
        cursor = first[-1][0] if first else None
        rest = reader.list_events("org_a", EventQuery(after=cursor))
        assert [e.event_id for _, e in first + rest] == ["evt_a", "evt_b"]
        seqs = [seq for seq, _ in first + rest]
        assert seqs == sorted(seqs) and len(set(seqs)) == 2
        assert reader.list_events("org_b", EventQuery()) == []
    finally:
        for s in (a_store, b_store, reader):
            s.close()


def test_deadlock_between_key_locks_is_a_conflict(pg_database: str) -> None:
    """Two transactions lock two conflict keys in opposite orders (by hand: the engine's writes lock
    them sorted): PostgreSQL aborts one (deadlock), which the store reports as engine.errors.Conflict;
    the other commits."""
    from engine.errors import Conflict

    stores = [PostgresStore(pg_database, max_size=2) for _ in range(2)]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []
    messages: list[str] = []

    def run(store: PostgresStore, first: str, second: str) -> None:
        try:
            with store.transaction():
                store.find_by_key("org_a", "default", first)
                barrier.wait(10)
                store.find_by_key("org_a", "default", second)
            outcomes.append("committed")
        except Conflict as exc:
            outcomes.append("conflict")
            messages.append(exc.message)

    try:
        threads = [
            threading.Thread(target=run, args=(stores[0], "k1", "k2")),
            threading.Thread(target=run, args=(stores[1], "k2", "k1")),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(outcomes) == ["committed", "conflict"]
        # the client is told to retry; PostgreSQL's process and lock ids stay in the server's log
        assert messages == ["a concurrent write won; nothing was written: retry the request"]
    finally:
        for s in stores:
            s.close()
