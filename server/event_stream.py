"""The org's event log over HTTP: opaque cursors, list pages and the server-sent-event stream.

Cursor: base64url (no padding) of the msgpack array `["ev", 2, seq]`, where `seq` is the place of the
event in its org's own log (1, 2, ...; see `Store.list_events`): it says nothing about other orgs. It is
a position in the org's log, valid with any filters. A version-1 cursor (`["ev", 1, seq]`, a place in a
log shared by every org) is refused with a 422 that says how to resume (`since`).

Stream (`Accept: text/event-stream`), one frame per event:

    id: <cursor of this event>        (send it back as Last-Event-ID to resume after it)
    event: <event type>
    data: <the event item as one line of JSON>

It starts with `retry: 1000` and a `: connected` comment, then polls the store every `poll` seconds
for events after the cursor, writes a `: keep-alive` comment after `heartbeat` seconds without
output, and ends when the client disconnects, after `max_events` events or after `timeout` seconds
(both optional; meant for tests and tools).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.to_thread
import msgspec

from engine.errors import InvalidInput
from engine.models import Event
from engine.storage.base import EventQuery, Store
from server.schemas.ops import EventItem, EventList

CURSOR_TAG = "ev"
CURSOR_VERSION = 2
#: cursors numbered in the log every org shared, before `CURSOR_VERSION` 2
SHARED_LOG_VERSION = 1
POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 15.0
RETRY_MS = 1000

Page = list[tuple[int, Event]]
ReadPage = Callable[[int | None, int], Page]  # (after seq, limit) -> events


# --- cursors -----------------------------------------------------------------------------------------
def encode_cursor(seq: int) -> str:
    raw = msgspec.msgpack.encode([CURSOR_TAG, CURSOR_VERSION, seq])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, *, field: str = "cursor") -> int:
    """The seq inside a cursor; InvalidInput naming `field` for anything that is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        tag, version, seq = msgspec.msgpack.decode(raw, type=tuple[str, int, int])
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise InvalidInput(
            f"{field} is not a valid event cursor", field=field, details={"rule": "cursor"}
        ) from None
    if tag == CURSOR_TAG and version == SHARED_LOG_VERSION and seq >= 0:
        raise InvalidInput(
            f"{field} comes from an earlier version of the event log and can no longer be resumed: list "
            "again with since=<the `at` of the last event you have> (events at that instant repeat; "
            "skip the event_ids you have) and go on with the new next_cursor",
            field=field,
            details={"rule": "cursor", "cursor_version": version, "current_version": CURSOR_VERSION},
        )
    if tag != CURSOR_TAG or version != CURSOR_VERSION or seq < 0:
        raise InvalidInput(f"{field} is not a valid event cursor", field=field, details={"rule": "cursor"})
    return seq


# --- pages -------------------------------------------------------------------------------------------
def to_item(event: Event) -> EventItem:
    return EventItem(
        event_id=event.event_id,
        type=event.type,
        at=event.at,
        memory_id=event.memory_id,
        entity_id=event.entity_id,
        data=event.data,
    )


def reader(store: Store, org_id: str, query: EventQuery) -> ReadPage:
    """A page reader over the org's log with the filters of `query` (its `after`/`limit` are set per call)."""

    def read(after: int | None, limit: int) -> Page:
        return store.list_events(org_id, msgspec.structs.replace(query, after=after, limit=limit))

    return read


def list_page(read: ReadPage, *, after: int | None, limit: int) -> EventList:
    page = read(after, limit)
    items = [to_item(event) for _, event in page]
    return EventList(items=items, next_cursor=encode_cursor(page[-1][0]) if page else None)


# --- the stream ----------------------------------------------------------------------------------------
def frame(seq: int, event: Event) -> bytes:
    data = msgspec.json.encode(to_item(event))  # JSON escapes newlines: always one line
    return f"id: {encode_cursor(seq)}\nevent: {event.type}\n".encode() + b"data: " + data + b"\n\n"


HELLO = f"retry: {RETRY_MS}\n: connected\n\n".encode()
KEEP_ALIVE = b": keep-alive\n\n"


async def stream(
    read: ReadPage,
    *,
    after: int | None,
    limit: int,
    max_events: int | None = None,
    timeout: float | None = None,
    poll: float = POLL_SECONDS,
    heartbeat: float = HEARTBEAT_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[bytes]:
    """Server-sent-event frames of the events after `after`, live (see the module docstring)."""
    yield HELLO
    sent = 0
    start = last_output = clock()
    deadline = start + timeout if timeout is not None else None
    while True:
        page = await anyio.to_thread.run_sync(read, after, limit)
        for seq, event in page:
            after = seq
            yield frame(seq, event)
            sent += 1
            if max_events is not None and sent >= max_events:
                return
        now = clock()
        if page:
            last_output = now
        if deadline is not None and now >= deadline:
            return
        if len(page) == limit:
            continue  # a backlog: read on without waiting
        if now - last_output >= heartbeat:
            yield KEEP_ALIVE
            last_output = now
        wait = poll if deadline is None else max(0.0, min(poll, deadline - now))
        await anyio.sleep(wait)
