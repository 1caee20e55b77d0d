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
(both optional; meant for tests and tools), when `read` raises `StreamEnded` (the route's read does
once the stream's API key is revoked: a revoked key watches nothing more), or at its next poll once the
server is stopping (`server.stopping`; the wait between polls wakes at once), so a graceful stop does
not wait for the stream's client. A client resumes a stream that ends before the end it asked for
with `Last-Event-ID` (a revoked key's resume is answered 401).

Open streams are capped per API key and per process (`StreamSlots`; `LOCI_MAX_STREAMS_PER_KEY`,
`LOCI_MAX_STREAMS`): one more is refused with 429 `rate_limited` and `Retry-After`, before anything is
streamed; a stream's slot is freed however it ends.
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
from collections.abc import AsyncIterator, Callable

import anyio
import msgspec

from engine.errors import InvalidInput, RateLimited
from engine.models import Event
from engine.storage.base import EventQuery, Store
from server.schemas.ops import EventItem, EventList
from server.stopping import Stopping
from server.threads import run_sync

CURSOR_TAG = "ev"
CURSOR_VERSION = 2
#: cursors numbered in the log every org shared, before `CURSOR_VERSION` 2
SHARED_LOG_VERSION = 1
POLL_SECONDS = 0.5
HEARTBEAT_SECONDS = 15.0
RETRY_MS = 1000


class StreamEnded(Exception):
    """Raised by a stream's `read` to end the stream (no frame more)."""


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


# --- how many may be open ------------------------------------------------------------------------------
#: seconds a refused stream is told to wait (a slot frees only when another stream ends)
STREAM_RETRY_AFTER = 5


class StreamSlot:
    """One open stream's place; `release` frees it, once, whoever calls it first."""

    def __init__(self, slots: StreamSlots, key_id: str) -> None:
        self.slots = slots
        self.key_id = key_id
        self.held = True

    def release(self) -> None:
        self.slots.release(self)


class StreamSlots:
    """The open streams of this process: at most `per_key` per API key and `total` in all (0: no cap)."""

    def __init__(self, *, per_key: int, total: int) -> None:
        self.per_key = per_key
        self.total = total
        self._by_key: dict[str, int] = {}
        self._lock = threading.Lock()

    def open_count(self, key_id: str | None = None) -> int:
        """Streams open now, for one key or in all."""
        with self._lock:
            return sum(self._by_key.values()) if key_id is None else self._by_key.get(key_id, 0)

    def acquire(self, key_id: str) -> StreamSlot:
        """A slot for one more stream of `key_id`; RateLimited (429) over either cap."""
        with self._lock:
            if self.per_key and self._by_key.get(key_id, 0) >= self.per_key:
                raise _refused("streams_per_key", self.per_key, "this API key")
            if self.total and sum(self._by_key.values()) >= self.total:
                raise _refused("streams", self.total, "this server")
            self._by_key[key_id] = self._by_key.get(key_id, 0) + 1
        return StreamSlot(self, key_id)

    def release(self, slot: StreamSlot) -> None:
        with self._lock:
            if not slot.held:
                return
            slot.held = False
            left = self._by_key[slot.key_id] - 1
            if left:
                self._by_key[slot.key_id] = left
            else:
                del self._by_key[slot.key_id]


def _refused(limit: str, cap: int, whose: str) -> RateLimited:
    exc = RateLimited(
        f"too many open event streams for {whose} (at most {cap}): close one, or retry after "
        f"{STREAM_RETRY_AFTER} s",
        retry_after=STREAM_RETRY_AFTER,
    )
    exc.details.update(limit=limit, max_streams=cap)
    return exc


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
    on_close: Callable[[], None] | None = None,
    stopping: Stopping | None = None,
) -> AsyncIterator[bytes]:
    """Server-sent-event frames of the events after `after`, live (see the module docstring);
    `on_close` runs when the stream ends, whatever ends it; `stopping` ends it at its next poll."""
    try:
        yield HELLO
        sent = 0
        start = last_output = clock()
        deadline = start + timeout if timeout is not None else None
        while True:
            if stopping is not None and stopping.is_set():
                return
            try:
                page = await run_sync(read, after, limit)
            except StreamEnded:
                return
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
            await (anyio.sleep(wait) if stopping is None else stopping.sleep(wait))
    finally:
        if on_close is not None:
            on_close()
