"""`AsyncLociClient`: the asyncio client (httpx). The same calls, retries and errors as `LociClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from loci.client import calls
from loci.client.calls import Call
from loci.client.errors import ConnectionFailed
from loci.client.retry import RETRY_STATUSES, RetryPolicy
from loci.client.sse import Parser, StreamedEvent
from loci.client.sync import base_url_for, headers_for
from loci.wire.health import Health
from loci.wire.memories import Deleted, MemoryList
from loci.wire.models import Memory
from loci.wire.ops import EventItem, EventList, SummarizeRequest, SummarizeResponse
from loci.wire.options import AssembleRequest, RecallRequest
from loci.wire.prune import PruneRequest, PruneResult
from loci.wire.responses import AssembleResponse, RecallResponse
from loci.wire.writes import MemoryCreate, MemoryPatch

T = TypeVar("T")


class AsyncLociClient:
    """`AsyncLociClient(base_url, api_key)`; the key defaults to $LOCI_API_KEY, the URL to $LOCI_URL."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._http = httpx.AsyncClient(
            base_url=base_url_for(base_url),
            headers=headers_for(api_key),
            timeout=timeout,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncLociClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # --- sending ---------------------------------------------------------------------------------------
    async def _send(self, call: Call[Any], idempotency_key: str | None = None) -> httpx.Response:
        headers = calls.request_headers(call, idempotency_key)
        for attempt in range(self.retry.max_retries + 1):
            last = attempt == self.retry.max_retries
            try:
                r = await self._http.request(
                    call.method, call.path, content=call.body, params=call.params, headers=headers
                )
            except httpx.TransportError as exc:
                if last:
                    raise ConnectionFailed(f"{call.method} {call.path}: {exc!r}") from exc
                await asyncio.sleep(self.retry.delay(attempt))
                continue
            if r.status_code in RETRY_STATUSES and not last:
                await asyncio.sleep(self.retry.delay(attempt, r.headers.get("Retry-After")))
                continue
            return r
        raise AssertionError("unreachable")

    async def call(self, call: Call[T], idempotency_key: str | None = None) -> T:
        """Send one call (with retries) and decode its answer; an error answer raises its APIError."""
        return calls.answer(call, await self._send(call, idempotency_key))

    # --- memories --------------------------------------------------------------------------------------
    async def health(self) -> Health:
        return await self.call(calls.health())

    async def create_memory(
        self, draft: MemoryCreate, *, agent: str | None = None, idempotency_key: str | None = None
    ) -> Memory:
        return await self.call(calls.create_memory(draft, agent), idempotency_key)

    async def create_memories(
        self, drafts: Sequence[MemoryCreate], *, agent: str | None = None, idempotency_key: str | None = None
    ) -> list[Memory]:
        return (await self.call(calls.create_memories(drafts, agent), idempotency_key)).items

    async def get_memory(self, memory_id: str) -> Memory:
        return await self.call(calls.get_memory(memory_id))

    async def update_memory(
        self, memory_id: str, patch: MemoryPatch, *, idempotency_key: str | None = None
    ) -> Memory:
        return await self.call(calls.update_memory(memory_id, patch), idempotency_key)

    async def delete_memory(self, memory_id: str, *, idempotency_key: str | None = None) -> Deleted:
        return await self.call(calls.delete_memory(memory_id), idempotency_key)

    async def list_memories(
        self, *, page_size: int = 50, cursor: str | None = None, agent: str | None = None, **filters: Any
    ) -> MemoryList:
        """One page; filters are GET /v0/memories' (namespace, entity_id, type, status, tag, ...)."""
        return await self.call(calls.list_memories(filters, page_size=page_size, cursor=cursor, agent=agent))

    async def iter_memories(
        self, *, page_size: int = 200, agent: str | None = None, **filters: Any
    ) -> AsyncIterator[Memory]:
        """Every memory matching the filters, page by page (cursor paging: no repeats, no gaps)."""
        cursor: str | None = None
        while True:
            page = await self.list_memories(page_size=page_size, cursor=cursor, agent=agent, **filters)
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # --- context ---------------------------------------------------------------------------------------
    async def assemble(
        self, request: AssembleRequest, *, agent: str | None = None, idempotency_key: str | None = None
    ) -> AssembleResponse:
        return await self.call(calls.assemble(request, agent), idempotency_key)

    async def recall(self, request: RecallRequest, *, agent: str | None = None) -> RecallResponse:
        return await self.call(calls.recall(request, agent))

    async def summarize(self, request: SummarizeRequest, *, agent: str | None = None) -> SummarizeResponse:
        return await self.call(calls.summarize(request, agent))

    async def prune(
        self, request: PruneRequest, *, idempotency_key: str | None = None, agent: str | None = None
    ) -> PruneResult:
        return await self.call(calls.prune(request, agent), idempotency_key)

    # --- events ----------------------------------------------------------------------------------------
    async def list_events(
        self,
        *,
        type: str | None = None,
        entity_id: str | None = None,
        memory_id: str | None = None,
        since: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> EventList:
        return await self.call(
            calls.list_events(
                type=type, entity_id=entity_id, memory_id=memory_id, since=since, limit=limit, cursor=cursor
            )
        )

    async def iter_events(
        self,
        *,
        type: str | None = None,
        entity_id: str | None = None,
        memory_id: str | None = None,
        since: datetime | None = None,
        limit: int = 500,
        cursor: str | None = None,
    ) -> AsyncIterator[EventItem]:
        """The log from `cursor` (or the start) to its current end, page by page."""
        while True:
            page = await self.list_events(
                type=type, entity_id=entity_id, memory_id=memory_id, since=since, limit=limit, cursor=cursor
            )
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def stream_events(
        self,
        *,
        after: str | None = None,
        type: str | None = None,
        entity_id: str | None = None,
        memory_id: str | None = None,
        max_events: int | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[StreamedEvent]:
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
                async with self._http.stream(
                    "GET",
                    calls.EVENTS_PATH,
                    params=stream.params(),
                    headers=stream.headers(),
                ) as r:
                    if r.is_error:
                        await r.aread()
                        raise calls.error_of(r)
                    calls.check_stream(r)
                    calls.unbounded_body(r)
                    parser = Parser(r.status_code)
                    async for line in r.aiter_lines():
                        event = parser.feed(line)
                        if event is not None:
                            stream.saw(event)
                            yield event
            except httpx.TransportError as exc:
                dropped = exc
            if stream.over():
                return
            await asyncio.sleep(stream.resume_after(self.retry, dropped))
