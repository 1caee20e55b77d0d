"""`LociClient`: the synchronous client (httpx). See `loci.client` for what every client does."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from loci.client import calls
from loci.client.calls import Call
from loci.client.errors import ConnectionFailed, InvalidRequest
from loci.client.retry import RETRY_STATUSES, RetryPolicy
from loci.client.sse import Parser, StreamedEvent
from loci.wire.health import Health
from loci.wire.memories import Deleted, MemoryList
from loci.wire.models import Memory
from loci.wire.ops import EventItem, EventList, SummarizeRequest, SummarizeResponse
from loci.wire.options import AssembleRequest, RecallRequest
from loci.wire.prune import PruneRequest, PruneResult
from loci.wire.responses import AssembleResponse, RecallResponse
from loci.wire.writes import MemoryCreate, MemoryPatch

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8080"


def base_url_for(base_url: str | None) -> str:
    """The server's URL (`base_url`, else $LOCI_URL, else the default); InvalidRequest unless it is
    http(s)://host[...]: anything else failed only at the first call, as a retried ConnectionFailed."""
    url = base_url or os.environ.get("LOCI_URL") or DEFAULT_URL
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidRequest(
            f"the server URL must be http(s)://host[:port][/path] ($LOCI_URL), got {url[:64]!r}"
        )
    return url


def headers_for(api_key: str | None) -> dict[bytes, bytes]:
    """The Authorization header; a key that cannot be sent raises InvalidRequest (calls.header_value)."""
    key = api_key or os.environ.get("LOCI_API_KEY")
    return {b"Authorization": b"Bearer " + calls.header_value("the API key", key)} if key else {}


class LociClient:
    """`LociClient(base_url, api_key)`; the key defaults to $LOCI_API_KEY, the URL to $LOCI_URL."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.Client(
            base_url=base_url_for(base_url),
            headers=headers_for(api_key),
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> LociClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- sending ---------------------------------------------------------------------------------------
    def _send(self, call: Call[Any], idempotency_key: str | None = None) -> httpx.Response:
        headers = calls.request_headers(call, idempotency_key)
        for attempt in range(self.retry.max_retries + 1):
            last = attempt == self.retry.max_retries
            try:
                r = self._http.request(
                    call.method, call.path, content=call.body, params=call.params, headers=headers
                )
            except httpx.TransportError as exc:
                if last:
                    raise ConnectionFailed(f"{call.method} {call.path}: {exc!r}") from exc
                time.sleep(self.retry.delay(attempt))
                continue
            if r.status_code in RETRY_STATUSES and not last:
                time.sleep(self.retry.delay(attempt, r.headers.get("Retry-After")))
                continue
            return r
        raise AssertionError("unreachable")

    def call(self, call: Call[T], idempotency_key: str | None = None) -> T:
        """Send one call (with retries) and decode its answer; an error answer raises its APIError."""
        return calls.answer(call, self._send(call, idempotency_key))

    # --- memories --------------------------------------------------------------------------------------
    def health(self) -> Health:
        return self.call(calls.health())

    def create_memory(
        self, draft: MemoryCreate, *, agent: str | None = None, idempotency_key: str | None = None
    ) -> Memory:
        return self.call(calls.create_memory(draft, agent), idempotency_key)

    def create_memories(
        self, drafts: Sequence[MemoryCreate], *, agent: str | None = None, idempotency_key: str | None = None
    ) -> list[Memory]:
        return self.call(calls.create_memories(drafts, agent), idempotency_key).items

    def get_memory(self, memory_id: str) -> Memory:
        return self.call(calls.get_memory(memory_id))

    def update_memory(
        self, memory_id: str, patch: MemoryPatch, *, idempotency_key: str | None = None
    ) -> Memory:
        return self.call(calls.update_memory(memory_id, patch), idempotency_key)

    def delete_memory(self, memory_id: str, *, idempotency_key: str | None = None) -> Deleted:
        return self.call(calls.delete_memory(memory_id), idempotency_key)

    def list_memories(
        self, *, page_size: int = 50, cursor: str | None = None, agent: str | None = None, **filters: Any
    ) -> MemoryList:
        """One page; filters are GET /v0/memories' (namespace, entity_id, type, status, tag, ...)."""
        return self.call(calls.list_memories(filters, page_size=page_size, cursor=cursor, agent=agent))

    def iter_memories(
        self, *, page_size: int = 200, agent: str | None = None, **filters: Any
    ) -> Iterator[Memory]:
        """Every memory matching the filters, page by page (cursor paging: no repeats, no gaps)."""
        cursor: str | None = None
        while True:
            page = self.list_memories(page_size=page_size, cursor=cursor, agent=agent, **filters)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # --- context ---------------------------------------------------------------------------------------
    def assemble(
        self, request: AssembleRequest, *, agent: str | None = None, idempotency_key: str | None = None
    ) -> AssembleResponse:
        return self.call(calls.assemble(request, agent), idempotency_key)

    def recall(self, request: RecallRequest, *, agent: str | None = None) -> RecallResponse:
        return self.call(calls.recall(request, agent))

    def summarize(self, request: SummarizeRequest, *, agent: str | None = None) -> SummarizeResponse:
        return self.call(calls.summarize(request, agent))

    def prune(
        self, request: PruneRequest, *, idempotency_key: str | None = None, agent: str | None = None
    ) -> PruneResult:
        return self.call(calls.prune(request, agent), idempotency_key)

    # --- events ----------------------------------------------------------------------------------------
    def list_events(
        self,
        *,
        type: str | None = None,
        entity_id: str | None = None,
        memory_id: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> EventList:
        return self.call(
            calls.list_events(
                type=type, entity_id=entity_id, memory_id=memory_id, since=since, limit=limit, cursor=cursor
            )
        )

    def iter_events(
        self,
        *,
        type: str | None = None,
        entity_id: str | None = None,
        memory_id: str | None = None,
        since: datetime | None = None,
        limit: int = 500,
        cursor: str | None = None,
    ) -> Iterator[EventItem]:
        """The log from `cursor` (or the start) to its current end, page by page."""
        while True:
            page = self.list_events(
                type=type, entity_id=entity_id, memory_id=memory_id, since=since, limit=limit, cursor=cursor
            )
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def stream_events(
        self,
        *,
        after: str | None = None,
        type: str | None = None,
        entity_id: str | None = None,
        memory_id: str | None = None,
        max_events: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[StreamedEvent]:
        """The live event stream (server-sent events), until `max_events` events or `timeout` seconds
        (both optional; the server ends it then) or until the loop is left. A dropped connection, no
        answer's headers within the client's `timeout` (the body has no read timeout: events may be far
        apart), or the server ending the stream before then (it is stopping; a revoked key then raises its
        401 on the resume), is resumed after the last event seen (Last-Event-ID) with the retry policy: see
        `calls.EventStream`."""
        stream = calls.EventStream(
            after=after,
            max_events=max_events,
            timeout=timeout,
            filters={"type": type, "entity_id": entity_id, "memory_id": memory_id},
        )
        while True:
            dropped: httpx.TransportError | None = None
            try:
                with self._http.stream(
                    "GET",
                    calls.EVENTS_PATH,
                    params=stream.params(),
                    headers=stream.headers(),
                ) as r:
                    if r.is_error:
                        r.read()
                        raise calls.error_of(r)
                    calls.check_stream(r)
                    calls.unbounded_body(r)
                    parser = Parser(r.status_code)
                    for line in r.iter_lines():
                        event = parser.feed(line)
                        if event is not None:
                            stream.saw(event)
                            yield event
            except httpx.TransportError as exc:
                dropped = exc
            if stream.over():
                return
            time.sleep(stream.resume_after(self.retry, dropped))
