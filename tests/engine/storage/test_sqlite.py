"""SQLite only (and what the two in-process stores share): durability across close/reopen, schema
migration, pragmas, the open_store registry, one writer at a time."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.errors import Unavailable, UnknownName
from engine.models import Event
from engine.storage import open_store
from engine.storage.base import EventQuery, ListQuery, Scope
from engine.storage.in_memory import InMemoryStore
from engine.storage.sqlite import SQLiteStore, checkpoint
from engine.storage.sqlite.codec import MEMORY_INSERT, memory_row
from engine.storage.sqlite.schema import LATEST, MIGRATIONS, migrate, schema_version
from tests.engine.storage.conftest import STORE_FACTORIES, at, mem


def test_only_a_relaxed_event_append_of_its_own_skips_the_sync(tmp_path: Path) -> None:
    """`append_events(durable=False)` alone commits with synchronous=NORMAL and puts FULL back; inside
    a transaction, and for every other write, commits stay FULL."""
    s = SQLiteStore(str(tmp_path / "loci.db"))
    statements: list[str] = []
    s._conn.set_trace_callback(statements.append)

    def syncs() -> list[str]:
        found = [x.split("=")[1] for x in statements if x.startswith("PRAGMA synchronous=")]
        statements.clear()
        return found

    s.append_events([Event(event_id="evt_1", org_id="org_a", type="x", at=at(1))], durable=False)
    assert syncs() == ["NORMAL", "FULL"]
    assert s._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    s.append_events([Event(event_id="evt_2", org_id="org_a", type="x", at=at(2))])
    with s.transaction():
        s.put_memories([mem(text="kept")])
        s.append_events([Event(event_id="evt_3", org_id="org_a", type="x", at=at(3))], durable=False)
    assert syncs() == []
    s.close()
    assert [
        e.event_id for _, e in SQLiteStore(str(tmp_path / "loci.db")).list_events("org_a", EventQuery())
    ] == [
        "evt_1",
        "evt_2",
        "evt_3",
    ]


def test_durable_after_close_and_reopen(tmp_path: Path) -> None:
    path = str(tmp_path / "d" / "loci.db")
    s = SQLiteStore(path)
    a = mem(text="kept apple", tags=["t"], keys=["k"])
    s.put_memories([a, *[mem(text=f"filler {i}") for i in range(4)]])
    s.put_embeddings("m", {"h": np.ones(3, dtype=np.float32)})
    s.append_events([Event(event_id="evt_1", org_id="org_a", type="x", at=at(1))])
    s.close()
    s2 = SQLiteStore(path)
    assert s2.get_memory("org_a", a.memory_id) == a
    assert s2.find_by_key("org_a", "default", "k") == [a]
    assert s2.list_memories("org_a", ListQuery(tag="t")) == [a]
    assert np.array_equal(s2.get_embeddings("m", ["h"])["h"], np.ones(3, dtype=np.float32))
    ((seq, event),) = s2.list_events("org_a", EventQuery())
    s2.append_events([Event(event_id="evt_2", org_id="org_a", type="x", at=at(2))])
    assert s2.list_events("org_a", EventQuery(after=seq))[0][0] > seq
    hits = s2.search.keyword_search(Scope(org_id="org_a", now=at(10**6)), "apple", 5)
    assert [h.memory_id for h in hits] == [a.memory_id]
    s2.close()


def test_committed_write_visible_to_a_second_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "loci.db")
    s = SQLiteStore(path)
    a = mem()
    s.put_memories([a])
    other = sqlite3.connect(path)
    assert other.execute("SELECT count(*) FROM memories").fetchone()[0] == 1
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert s._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert s._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    other.close()
    s.close()


def test_migrates_an_older_database(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=1) == 1
    old = mem(tags=["alpha", "beta"], keys=["ent:a|lives_in"])
    conn.execute(MEMORY_INSERT, memory_row(old))  # written by version-1 code: no memory_tags rows
    conn.execute(
        "INSERT INTO memory_keys VALUES (?, ?, ?, ?)", ("org_a", "default", "ent:a|lives_in", old.memory_id)
    )
    conn.close()
    s = SQLiteStore(path)
    assert schema_version(s._conn) == LATEST == len(MIGRATIONS)
    assert s.get_memory("org_a", old.memory_id) == old
    assert s.list_memories("org_a", ListQuery(tag="beta")) == [old]  # backfilled by migration 2
    assert s.find_by_key("org_a", "default", "ent:a|lives_in") == [old]
    s.close()
    s = SQLiteStore(path)  # reopening an up-to-date database changes nothing
    assert schema_version(s._conn) == LATEST
    s.close()


def test_migration_3_keeps_every_vector_and_its_key(tmp_path: Path) -> None:
    path = str(tmp_path / "v2.db")
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=2) == 2
    old = {f"h{i}": np.full(4, i, dtype=np.float32) for i in range(5)}
    conn.executemany(
        "INSERT INTO embeddings (model, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
        [(model, h, 4, v.tobytes()) for model in ("a", "b") for h, v in old.items()],
    )
    conn.close()
    s = SQLiteStore(path)
    for model in ("a", "b"):
        got = s.get_embeddings(model, [*old, "missing"])
        assert sorted(got) == sorted(old)
        assert all(np.array_equal(got[h], v) for h, v in old.items())
    s.put_embeddings("a", {"h1": np.zeros(4, dtype=np.float32)})  # a key written twice is replaced
    assert np.array_equal(s.get_embeddings("a", ["h1"])["h1"], np.zeros(4, dtype=np.float32))
    assert np.array_equal(s.get_embeddings("b", ["h1"])["h1"], old["h1"])
    assert s._conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 10
    s.close()


def test_migration_4_numbers_each_orgs_events_in_log_order(tmp_path: Path) -> None:
    path = str(tmp_path / "v3.db")
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=3) == 3
    orgs = ["org_a", "org_b", "org_a", "org_a", "org_b"]
    conn.executemany(  # as version-3 code logged them: one sequence shared by every org
        "INSERT INTO events (event_id, org_id, type, at, memory_id, entity_id, data) VALUES (?, ?, 'x', 0, NULL, NULL, '{}')",
        [(f"evt_{i}", org) for i, org in enumerate(orgs)],
    )
    conn.close()
    s = SQLiteStore(path)
    assert [(n, e.event_id) for n, e in s.list_events("org_a", EventQuery())] == [
        (1, "evt_0"),
        (2, "evt_2"),
        (3, "evt_3"),
    ]
    assert [(n, e.event_id) for n, e in s.list_events("org_b", EventQuery(after=1))] == [(2, "evt_4")]
    s.append_events([Event(event_id="evt_new", org_id="org_b", type="x", at=at(0))])
    assert s.list_events("org_b", EventQuery(after=2)) == [
        (3, Event(event_id="evt_new", org_id="org_b", type="x", at=at(0)))
    ]
    s.close()


def test_checkpoints_run_off_the_commit_path(tmp_path: Path) -> None:
    """The writer leaves its WAL alone below the backstop; the background thread copies each commit
    into the database file itself (a copy of that file alone, without the WAL, holds the rows)."""
    path = tmp_path / "loci.db"
    s = SQLiteStore(str(path))
    assert s._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == checkpoint.BACKSTOP_PAGES
    assert s._checkpointer is not None
    s.put_memories([mem(text=f"row {i}") for i in range(20)])
    deadline = time.monotonic() + 10
    while s._checkpointer.passes == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    copy = tmp_path / "copy.db"
    copy.write_bytes(path.read_bytes())  # the database file only: no -wal beside it
    other = sqlite3.connect(copy)
    assert other.execute("SELECT count(*) FROM memories").fetchone()[0] == 20
    other.close()
    thread = s._checkpointer._thread
    s.close()
    assert not thread.is_alive()


def _wait_for(predicate: Callable[[], bool], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


def test_a_checkpoint_waits_for_a_commit_on_another_connection(tmp_path: Path) -> None:
    """SQLite before 3.51.3 can corrupt a WAL database when a checkpoint overlaps the commit that
    restarts the WAL: a pass never runs while any Loci connection to the file (here a second store,
    as another process would open) is inside a write transaction."""
    path = str(tmp_path / "loci.db")
    a, b = SQLiteStore(path), SQLiteStore(path)
    assert b._checkpointer is not None
    b.put_memories([mem(text="first")])
    assert _wait_for(lambda: b._checkpointer is not None and b._checkpointer.passes > 0)
    with a.transaction():
        a.put_memories([mem(text="second")])
        before = b._checkpointer.passes
        b._checkpointer.poke()
        time.sleep(10 * checkpoint.DELAY)  # the pass is due; it must still be waiting for the commit
        assert b._checkpointer.passes == before
    assert _wait_for(lambda: b._checkpointer is not None and b._checkpointer.passes > before)
    a.close()
    b.close()


def test_a_write_waits_for_another_process_holding_the_gate(tmp_path: Path) -> None:
    """The gate is an flock on `<database>-lock`: a write of this process waits while another process
    holds it, and goes through when it lets go; a holder stuck past the timeout is reported as SQLite
    reports a busy database."""
    path = tmp_path / "loci.db"
    s = SQLiteStore(str(path))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys\n"
            f"f = open({str(path) + '-lock'!r}, 'a')\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(sqlite3.OperationalError, match="locked"), s._gate.held(timeout=0.05):
            pass
        writer = threading.Thread(target=s.put_memories, args=([mem(text="waits")],))
        writer.start()
        writer.join(10 * checkpoint.DELAY)
        assert writer.is_alive()  # still waiting for the other process
        assert holder.stdin is not None
        holder.stdin.close()
        writer.join(10)
        assert not writer.is_alive()
    finally:
        holder.kill()
        holder.wait()
    assert [m.text for m in s.list_memories("org_a", ListQuery())] == ["waits"]
    s.close()


def test_an_in_memory_store_has_no_checkpointer() -> None:
    s = SQLiteStore(":memory:")
    assert s._checkpointer is None
    s.put_memories([mem()])
    s.close()


def test_refuses_a_newer_database(tmp_path: Path) -> None:
    path = str(tmp_path / "new.db")
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {LATEST + 1}")
    conn.close()
    with pytest.raises(Unavailable, match="newer than this Loci's"):
        SQLiteStore(path)


def test_many_threads_share_one_store(tmp_path: Path) -> None:
    s = SQLiteStore(str(tmp_path / "loci.db"))
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                with s.transaction():
                    s.put_memories([mem(text=f"t{n} {i}")])
                    s.append_events([Event(event_id=f"evt_{n}_{i}", org_id="org_a", type="x", at=at(i))])
                s.search.keyword_search(Scope(org_id="org_a", now=at(10**6)), f"t{n}", 3)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert s.count_memories("org_a") == 120
    seqs = [seq for seq, _ in s.list_events("org_a", EventQuery(limit=1000))]
    assert len(seqs) == 120 and seqs == sorted(set(seqs))
    s.close()


def test_open_store_registry(tmp_path: Path) -> None:
    assert isinstance(open_store("memory"), InMemoryStore)
    s = open_store(f"sqlite://{tmp_path / 'a.db'}")
    assert isinstance(s, SQLiteStore) and s.path == str(tmp_path / "a.db")
    s.close()
    s = open_store(str(tmp_path / "datadir"))
    assert isinstance(s, SQLiteStore) and s.path == str(tmp_path / "datadir" / "loci.db")
    s.close()
    s = open_store("sqlite://:memory:")
    s.put_memories([mem()])
    assert s.count_memories() == 1
    s.close()
    with pytest.raises(UnknownName) as err:
        open_store("redis://localhost")
    assert "sqlite" in str(err.value) and "postgresql" in str(err.value)
    with pytest.raises(UnknownName):
        open_store("nosuchbackend")


def test_index_sees_commits_from_another_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "loci.db")
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    scope = Scope(org_id="org_a", now=at(10**6))
    fillers = [mem(text=f"filler {i}") for i in range(5)]
    writer.put_memories(fillers)
    assert reader.search.keyword_search(scope, "apple", 5) == []  # builds the reader's index
    a = mem(text="apple")
    writer.put_memories([a])
    assert [h.memory_id for h in reader.search.keyword_search(scope, "apple", 5)] == [a.memory_id]
    writer.delete_memory("org_a", a.memory_id)
    assert reader.search.keyword_search(scope, "apple", 5) == []
    assert reader.search.scope_size(scope) == 5
    reader.close()
    writer.close()


def test_get_memories_never_serves_a_stale_copy(tmp_path: Path) -> None:
    """Decoded memories are cached between reads: a commit here or in another connection, a rollback,
    and a transaction's own uncommitted write each give the current row."""
    import msgspec

    path = str(tmp_path / "loci.db")
    s, other = SQLiteStore(path), SQLiteStore(path)
    a, b = mem(text="first"), mem(text="second")
    s.put_memories([a, b])
    ids = [a.memory_id, b.memory_id]

    def texts() -> list[str]:
        return [m.text for m in s.get_memories("org_a", ids)]

    assert texts() == ["first", "second"]  # read twice: the second from the cache
    assert texts() == ["first", "second"]
    s.put_memories([msgspec.structs.replace(a, text="first, edited")])
    assert texts() == ["first, edited", "second"]
    other.put_memories([msgspec.structs.replace(b, text="second, from elsewhere")])
    assert texts() == ["first, edited", "second, from elsewhere"]
    with pytest.raises(RuntimeError), s.transaction():
        s.put_memories([msgspec.structs.replace(a, text="rolled back")])
        assert texts()[0] == "rolled back"  # the transaction sees its own write
        raise RuntimeError("abort")
    assert texts() == ["first, edited", "second, from elsewhere"]
    assert s.delete_memory("org_a", a.memory_id)
    assert texts() == ["second, from elsewhere"]
    other.close()
    s.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_an_in_process_store_serializes_writers(backend: str, tmp_path: Path) -> None:
    """The in-process stores hold one lock for a transaction, so another thread's write waits for the
    commit (PostgreSQL locks rows, not the store: unrelated writers do not wait; docs/deploying.md)."""
    store = STORE_FACTORIES[backend](tmp_path)
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
    store.close()
