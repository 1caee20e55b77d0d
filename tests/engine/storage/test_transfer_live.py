"""Export and import on every backend while the store is in use: an export is one snapshot of a store
that is written meanwhile, and an import into a store that already holds the org keeps what the
target changed since."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta

import msgspec
import pytest

from engine.errors import NotFound
from engine.memory_service import MemoryService
from engine.models import Event, IdempotencyRecord, Memory
from engine.prune import PruneRequest, prune
from engine.storage import open_store, transfer
from engine.storage.base import ListQuery, Store
from engine.timeutil import utcnow
from engine.write.supersession import apply
from loci.wire.writes import MemoryCreate, MemoryPatch
from tests.engine.storage.conftest import T0, at, mem

ORG = "org_a"


def export(store: Store, **kw: object) -> bytes:
    out = io.BytesIO()
    transfer.export_org(store, ORG, out, now=T0, page=1, **kw)  # type: ignore[arg-type]
    return out.getvalue()


def event(n: int, kind: str, memory: Memory) -> Event:
    return Event(
        event_id=f"evt_{n:03d}", org_id=ORG, type=kind, at=memory.updated_at, memory_id=memory.memory_id
    )


def lives_in(city: str, minutes: float) -> Memory:
    return mem(
        type="fact",
        text=f"I live in {city}",
        entity_id="ent:u",
        subject="ent:u",
        predicate="lives_in",
        object=city,
        keys=["ent:u|lives_in"],
        timestamp=at(minutes),
        created_at=at(minutes),
        updated_at=at(minutes),
    )


# --- export: one snapshot ------------------------------------------------------------------------------
def test_a_write_committed_during_an_export_is_wholly_in_it_or_wholly_absent(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A supersession commits (in another thread, as a server's request would) after the export read its
    first page of memories: the file is the store before the write or after it, never Paris and Berlin
    both active, nor a Berlin event without Berlin."""
    paris = lives_in("Paris", 1)
    notes = [mem(text=f"note {i}", timestamp=at(2 + i)) for i in range(3)]
    store.put_memories([paris, *notes])
    store.append_events([event(i, "memory.created", m) for i, m in enumerate([paris, *notes], start=1)])
    berlin = lives_in("Berlin", 10)
    superseded = msgspec.structs.replace(paris, status="superseded", valid_to=at(10), updated_at=at(10))

    def move() -> None:
        with store.transaction():
            store.put_memories([superseded, berlin])
            store.append_events(
                [event(10, "memory.superseded", superseded), event(11, "memory.created", berlin)]
            )

    pages = transfer.iter_org_memories

    def write_after_first_page(s: Store, org_id: str, page: int = transfer.PAGE) -> Iterator[list[Memory]]:
        for n, rows in enumerate(pages(s, org_id, page)):
            yield rows
            if n == 0:
                writer = threading.Thread(target=move)  # a context of its own: not the export's snapshot
                writer.start()
                writer.join()

    before = export(store)
    monkeypatch.setattr(transfer, "iter_org_memories", write_after_first_page)
    during = export(store)
    monkeypatch.undo()
    after = export(store)
    assert store.get_memory(ORG, berlin.memory_id) == berlin  # the write did commit
    assert during in (before, after)


# --- export: an org the store lacks -----------------------------------------------------------------------
def test_an_export_of_an_org_the_store_lacks_names_the_orgs_it_holds(store: Store) -> None:
    store.put_memories([mem(text="a note")])
    store.append_events([Event(event_id="evt_b", org_id="org_b", type="x", at=T0)])
    store.put_idempotency(
        IdempotencyRecord(
            org_id="org_c",
            key="k",
            fingerprint="f",
            status_code=200,
            body=b"{}",
            created_at=T0,
            expires_at=T0,
        )
    )
    assert store.org_ids() == ["org_a", "org_b", "org_c"]
    with pytest.raises(
        NotFound, match="org 'Dev' has no records in this store; the orgs it holds: 'org_a', 'org_b'"
    ):
        transfer.export_org(store, "Dev", io.BytesIO())
    empty = io.BytesIO()
    transfer.export_org(store, "org_b", empty, with_keys=True)  # events only: an org all the same
    assert msgspec.json.decode(empty.getvalue().splitlines()[0])["counts"]["events"] == 1


# --- import: what the target did since stays done ---------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def residence(city: str) -> MemoryCreate:
    return MemoryCreate(
        type="fact",
        text=f"I live in {city}",
        entity_id="ent:u",
        subject="ent:u",
        predicate="lives_in",
        object=city,
        keys=["ent:u|lives_in"],
    )


def held(store: Store) -> list[bytes]:
    return [msgspec.json.encode(m) for page in transfer.iter_org_memories(store, ORG) for m in page]


def test_reimporting_keeps_what_the_target_changed_deleted_or_pruned(store: Store) -> None:
    """Export, import, then on the target: Berlin supersedes Paris, a note is patched, one deleted, one
    pruned; the same import again undid all four (two current residences, the deleted note back)."""
    src, clock = open_store("memory"), Clock()
    source = MemoryService(src, clock=clock)
    [paris] = source.create(ORG, [residence("Paris")])
    patched, deleted, pruned, legacy, edited = source.create(
        ORG, [MemoryCreate(type="note", text=f"Note {c}", tags=[c]) for c in "ABCDE"]
    )
    first = export(src)
    transfer.import_org(store, io.BytesIO(first))
    clock.now += timedelta(hours=1)
    target = MemoryService(store, clock=clock)
    [berlin] = target.prepare(ORG, [residence("Berlin")])
    apply(store, berlin, now=clock.now)  # supersedes Paris, as an assemble of "I moved to Berlin" does
    target.update(ORG, patched.memory_id, MemoryPatch(tags=["keep"]))
    target.delete(ORG, deleted.memory_id)
    prune(store, org_id=ORG, request=PruneRequest(tags=["C"], dry_run=False), now=clock.now)
    # a prune logged before each memory had its own event: the ids in its summary only
    store.delete_memory(ORG, legacy.memory_id)
    store.append_events(
        [
            Event(
                event_id="evt_legacy_prune",
                org_id=ORG,
                type="memories.pruned",
                at=clock.now,
                data={"action": "delete", "count": 1, "memory_ids": [legacy.memory_id]},
            )
        ]
    )
    before = held(store)

    again = transfer.import_org(store, io.BytesIO(first))
    assert held(store) == before
    assert (again.memories, again.memories_kept, again.memories_left_deleted) == (0, 3, 3)
    current = store.list_memories(ORG, ListQuery(types=("fact",), statuses=("active",)))
    assert [m.memory_id for m in current] == [berlin.memory_id]
    assert store.get_memory(ORG, paris.memory_id).status == "superseded"  # type: ignore[union-attr]

    # a later export of the source brings the source's changes, newer than the target's copy
    clock.now += timedelta(hours=1)
    source.update(ORG, edited.memory_id, MemoryPatch(metadata={"edited": True}))
    later = transfer.import_org(store, io.BytesIO(export(src)))
    assert store.get_memory(ORG, edited.memory_id).metadata == {"edited": True}  # type: ignore[union-attr]
    assert (later.memories, later.memories_kept, later.memories_left_deleted) == (1, 2, 3)


# --- idempotency records move with the org ----------------------------------------------------------------
def idempotency(key: str, expires_at: datetime, org_id: str = ORG) -> IdempotencyRecord:
    return IdempotencyRecord(
        org_id=org_id,
        key=key,
        fingerprint=f"fp-{key}",
        status_code=201,
        body=b'{"memory_id":"mem_1"}\x00\xff',
        created_at=T0,
        expires_at=expires_at,
    )


def test_unexpired_idempotency_records_move_with_their_expiry(store: Store) -> None:
    """A client retrying an acknowledged write after the move got a second write: the records stayed."""
    now = utcnow()
    live = [idempotency(f"k-{i}", now + timedelta(days=1, minutes=i)) for i in range(3)]
    store.put_memories([mem(text="a note")])
    for record in [
        *live,
        idempotency("k-stale", now - timedelta(days=1)),
        idempotency("k-9", now + timedelta(days=1), "org_b"),
    ]:
        store.put_idempotency(record)
    out = io.BytesIO()
    header = transfer.export_org(store, ORG, out, page=2)
    assert header.counts.idempotency == 3
    data = out.getvalue()

    target = open_store("memory")
    result = transfer.import_org(target, io.BytesIO(data))
    assert result.idempotency == 3
    assert [target.get_idempotency(ORG, r.key, now) for r in live] == live  # expiry and body exact
    again = transfer.import_org(target, io.BytesIO(data))
    assert (again.idempotency, again.idempotency_skipped) == (0, 3)
    transfer.import_org(store, io.BytesIO(data), org_id="copy")  # and into this backend
    assert store.get_idempotency("copy", "k-1", now) == msgspec.structs.replace(live[1], org_id="copy")

    # a file from before (no idempotency lines, no such count) imports as it did
    lines = data.splitlines(keepends=True)
    head = msgspec.json.decode(lines[0])
    del head["counts"]["idempotency"]
    older = (
        msgspec.json.encode(head)
        + b"\n"
        + b"".join(line for line in lines[1:] if b'"kind":"idempotency"' not in line)
    )
    assert transfer.import_org(open_store("memory"), io.BytesIO(older)).memories == 1
