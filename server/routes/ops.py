"""Operations on the key's org: POST /v0/summarize, POST /v0/prune and GET /v0/observability/events
(a JSON page, or a live server-sent-event stream with `Accept: text/event-stream`).

Scopes: summarize and events need `read`, prune needs `write`. Every call is scoped to the org of the
API key; organization fields in a body are ignored.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, get, post
from litestar.background_tasks import BackgroundTask
from litestar.params import HeaderParameter, QueryParameter
from litestar.response import Stream

from engine.errors import InvalidInput
from engine.memory_service import check_ids
from engine.prune import PruneRequest, prune
from engine.redact import Redactor
from engine.retrieval.tokens import get_tokenizer
from engine.storage.base import EventQuery, Store
from engine.summarize import OpenAIChat, summarize
from engine.timeutil import utcnow
from server import event_stream
from server.auth import Principal, principal_of, require_auth
from server.http import (
    AGENT_DOC,
    AGENT_HEADER,
    ID_SCHEMA,
    IDEMPOTENCY_DOC,
    bounded_header,
    date_time_query,
    error_responses,
    ok_json,
    parse_body,
    query_datetime,
    read_json,
    run_write,
)
from server.schema_rules import CURSOR_PATTERN
from server.schemas.ops import (
    EVENTS_DEFAULT_LIMIT,
    EVENTS_MAX_LIMIT,
    EventList,
    PruneResult,
    SummarizeRequest,
    SummarizeResponse,
)
from server.services import services_of
from server.threads import run_sync

SSE_MEDIA_TYPE = "text/event-stream"
MAX_TYPE_LENGTH = 64
MAX_STREAM_EVENTS = 100_000
MAX_STREAM_SECONDS = 86_400.0

#: operationId -> request-body Structs, for the OpenAPI document (routes read their bodies raw)
REQUEST_BODIES: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "summarize": (SummarizeRequest,),
    "pruneMemories": (PruneRequest,),
}


# --- POST /v0/summarize ----------------------------------------------------------------------------
@post(
    "/v0/summarize",
    operation_id="summarize",
    status_code=200,
    tags=["operations"],
    summary="Summarize what is known about one entity (extractive, or by the configured LLM)",
    guards=[require_auth],
    opt={"scope": "read"},
    responses=error_responses(400, 401, 403, 422, 429, 500),
)
async def summarize_entity(
    request: Request[Any, Any, Any],
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> SummarizeResponse:
    _, data = await read_json(request)
    agent = bounded_header(request, AGENT_HEADER)
    body = parse_body(data, SummarizeRequest)
    org_id = principal_of(request).org_id
    store = services_of(request).store

    def work() -> SummarizeResponse:
        redactor = Redactor(body.policy)
        result = summarize(
            store,
            org_id=org_id,
            entity_id=body.entity_id,
            namespace=body.namespace,
            agent_id=agent,
            max_tokens=body.max_tokens,
            tokenizer=get_tokenizer(body.tokenizer),
            now=utcnow(),
            llm=OpenAIChat.from_env(),
            redactor=redactor,
        )
        return SummarizeResponse(
            summary=result.summary,
            sources=result.sources,
            origin=result.origin,
            token_count=result.token_count,
            redaction=redactor.report(),
        )

    return await run_sync(work)


# --- POST /v0/prune --------------------------------------------------------------------------------
@post(
    "/v0/prune",
    operation_id="pruneMemories",
    status_code=200,
    tags=["operations"],
    summary="Delete or archive the memories that rules select (dry run by default)",
    guards=[require_auth],
    opt={"scope": "write"},
    responses=error_responses(),
)
async def prune_memories(
    request: Request[Any, Any, Any],
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> Response[PruneResult]:
    raw, data = await read_json(request)
    agent = bounded_header(request, AGENT_HEADER)
    body = parse_body(data, PruneRequest)
    store = services_of(request).store
    return await run_write(
        request,
        raw,
        lambda org_id: ok_json(prune(store, org_id=org_id, request=body, now=utcnow(), agent_id=agent)),
        parsed=body,
    )


# --- GET /v0/observability/events ------------------------------------------------------------------
def wants_stream(request: Request[Any, Any, Any]) -> bool:
    accept = request.headers.get("accept", "")
    return any(part.split(";", 1)[0].strip().lower() == SSE_MEDIA_TYPE for part in accept.split(","))


@get(
    "/v0/observability/events",
    operation_id="listEvents",
    tags=["operations"],
    summary="The org's event log: a page (JSON) or a live stream (Accept: text/event-stream)",
    description=(
        "Events in append order. `next_cursor` resumes after the last item; it is null when the page "
        "is empty (the end of the log: keep your cursor and poll later). With `Accept: "
        "text/event-stream` the same events are sent as server-sent events (`id:` is the event's "
        "cursor, `event:` its type, `data:` the item as JSON), then new ones as they are written "
        "(polled every 0.5 s; `: keep-alive` comments every 15 s); `Last-Event-ID` resumes after that "
        "event. `max_events` and `timeout` end the stream early (for tests and tools). Open streams are "
        "capped per API key (`LOCI_MAX_STREAMS_PER_KEY`, default 10) and per server process "
        "(`LOCI_MAX_STREAMS`, default 100): one more is 429 `rate_limited` with `Retry-After` and "
        "`details.limit` (`streams_per_key` or `streams`); a stream's slot is freed when it ends. A stream "
        "ends at its next poll once its key is revoked, or once the server is told to stop (SIGTERM): "
        "resume a stream that ends before its `max_events` or `timeout` with `Last-Event-ID` (a "
        "revoked key's resume is answered 401)."
    ),
    guards=[require_auth],
    opt={"scope": "read"},
    responses=error_responses(401, 403, 422, 429, 500),
)
async def list_events(
    request: Request[Any, Any, Any],
    event_type: Annotated[
        str | None,
        QueryParameter(
            name="type",
            min_length=1,
            max_length=MAX_TYPE_LENGTH,
            description="only events of this type, e.g. memory.created",
        ),
    ] = None,
    entity_id: Annotated[str | None, QueryParameter(max_length=256, schema_extra=ID_SCHEMA)] = None,
    memory_id: Annotated[
        str | None,
        QueryParameter(
            max_length=128, schema_extra=ID_SCHEMA, description="only events about this memory (its history)"
        ),
    ] = None,
    since: Annotated[
        str | None,
        date_time_query("only events at or after this time (RFC 3339)"),
    ] = None,
    limit: Annotated[
        int, QueryParameter(ge=1, le=EVENTS_MAX_LIMIT, description="page size, 1 to 500")
    ] = EVENTS_DEFAULT_LIMIT,
    cursor: Annotated[
        str | None, QueryParameter(pattern=CURSOR_PATTERN, description="next_cursor of the previous page")
    ] = None,
    max_events: Annotated[
        int | None,
        QueryParameter(ge=1, le=MAX_STREAM_EVENTS, description="stream only: end after this many events"),
    ] = None,
    timeout: Annotated[
        float | None,
        QueryParameter(
            ge=0,
            le=MAX_STREAM_SECONDS,
            schema_extra={"minimum": 0},
            description="stream only: end after this many seconds",
        ),
    ] = None,
    last_event_id: Annotated[
        str | None,
        HeaderParameter(
            name="Last-Event-ID",
            required=False,
            pattern=CURSOR_PATTERN,
            description="stream only: resume after this event",
        ),
    ] = None,
) -> Response[EventList]:
    if event_type is not None and not 1 <= len(event_type) <= MAX_TYPE_LENGTH:
        raise InvalidInput(f"type must be 1..{MAX_TYPE_LENGTH} characters", field="type")
    check_ids(entity_id=entity_id, memory_id=memory_id)
    after = event_stream.decode_cursor(cursor) if cursor else None
    principal = principal_of(request)
    org_id = principal.org_id
    query = EventQuery(
        type=event_type,
        entity_id=entity_id,
        memory_id=memory_id,
        since=query_datetime(since, "since"),
        limit=limit,
    )
    svc = services_of(request)
    base = event_stream.reader(svc.store, org_id, query)

    def read(after: int | None, limit: int) -> event_stream.Page:  # reads' events held back included
        svc.flush_read_events()
        return base(after, limit)

    if wants_stream(request):
        if last_event_id:
            after = event_stream.decode_cursor(last_event_id, field="Last-Event-ID")
        slot = services_of(request).streams.acquire(principal.key_id)  # 429 over a cap

        def read_while_allowed(after: int | None, limit: int) -> event_stream.Page:
            page = read(after, limit)
            # asked after the read: an event read before a revocation was written before it too
            if not key_is_live(svc.store, principal):
                raise event_stream.StreamEnded
            return page

        try:
            frames = event_stream.stream(
                read_while_allowed,
                after=after,
                limit=limit,
                max_events=max_events,
                timeout=timeout,
                on_close=slot.release,
                stopping=svc.stopping,
            )
            # the generator frees the slot when it ends; a client gone while a frame was being sent
            # leaves it suspended, so the response frees it too once it is over
            return Stream(
                frames,
                media_type=SSE_MEDIA_TYPE,  # type: ignore[return-value]
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                background=BackgroundTask(slot.release),
            )
        except BaseException:
            slot.release()
            raise
    page = await run_sync(lambda: event_stream.list_page(read, after=after, limit=limit))
    return Response(page)


def key_is_live(store: Store, principal: Principal) -> bool:
    """Whether the caller's key still exists unrevoked (a stream asks after each read)."""
    return any(
        k.key_id == principal.key_id and k.revoked_at is None for k in store.list_api_keys(principal.org_id)
    )


ROUTES = [summarize_entity, prune_memories, list_events]
