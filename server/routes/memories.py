"""/v0/memories: create (one or a batch), get, patch, delete and list the memories of the key's org."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from litestar import Request, Response, delete, get, patch, post
from litestar.params import PathParameter, QueryParameter

from engine.errors import InvalidInput
from engine.memory_service import (
    MAX_PAGE_SIZE,
    MAX_QUERY_LENGTH,
    ListFilters,
    MemoryCreate,
    MemoryPatch,
    check_ids,
    check_text,
)
from engine.models import MEMORY_TYPES, STATUSES
from server.auth import principal_of, require_auth
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
from server.schemas.memories import Deleted, Memory, MemoryBatch, MemoryItems, MemoryList
from server.services import services_of
from server.threads import run_sync

_COMMON: dict[str, Any] = {"guards": [require_auth], "tags": ["memories"]}
MemoryIdPath = Annotated[str, PathParameter(description="mem_<ULID>")]


def parse_create(data: Any) -> tuple[list[MemoryCreate], bool]:
    """One memory object, or {"items": [...]} (1..200). Returns the drafts and whether it was a batch."""
    if isinstance(data, dict) and "items" in data:
        return parse_body(data, MemoryBatch).items, True
    return [parse_body(data, MemoryCreate)], False


@post(
    "/v0/memories",
    operation_id="createMemory",
    summary="Create one memory or a batch (up to 200)",
    status_code=200,
    responses=error_responses(),
    **_COMMON,
)
async def create_memory(
    request: Request[Any, Any, Any],
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> Response[Memory | MemoryItems]:
    raw, data = await read_json(request)
    agent = bounded_header(request, AGENT_HEADER)
    drafts, batch = parse_create(data)
    svc = services_of(request)
    prepared: list[Memory] = []

    def prepare(org_id: str) -> None:  # embeds outside the write transaction
        prepared.extend(svc.memories.prepare(org_id, drafts, agent_id=agent))

    def work(org_id: str) -> Any:
        created = svc.memories.insert(org_id, prepared)
        return ok_json(MemoryItems(items=created) if batch else created[0])

    return await run_write(request, raw, work, prepare=prepare, parsed=(drafts, batch))


@get(
    "/v0/memories/{memory_id:str}",
    operation_id="getMemory",
    summary="Get one memory",
    responses=error_responses(401, 403, 404, 429, 500),
    **_COMMON,
)
async def get_memory(request: Request[Any, Any, Any], memory_id: MemoryIdPath) -> Memory:
    org_id = principal_of(request).org_id
    svc = services_of(request)
    return await run_sync(svc.memories.get, org_id, memory_id)


@patch(
    "/v0/memories/{memory_id:str}",
    operation_id="updateMemory",
    summary="Update tags, metadata, archived or valid_to of one memory",
    responses=error_responses(),
    **_COMMON,
)
async def update_memory(
    request: Request[Any, Any, Any],
    memory_id: MemoryIdPath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Memory]:
    raw, data = await read_json(request)
    changes = parse_body(data, MemoryPatch)
    svc = services_of(request)
    return await run_write(
        request, raw, lambda org_id: ok_json(svc.memories.update(org_id, memory_id, changes)), parsed=changes
    )


@delete(
    "/v0/memories/{memory_id:str}",
    operation_id="deleteMemory",
    summary="Delete one memory",
    status_code=200,
    responses=error_responses(401, 403, 404, 409, 422, 429, 500),
    **_COMMON,
)
async def delete_memory(
    request: Request[Any, Any, Any],
    memory_id: MemoryIdPath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Deleted]:
    svc = services_of(request)

    def work(org_id: str) -> Any:
        svc.memories.delete(org_id, memory_id)
        return ok_json(Deleted(deleted=True, memory_id=memory_id))

    return await run_write(request, b"", work)


def _csv(value: str | None) -> tuple[str, ...] | None:
    """'fact, event' -> ('fact', 'event'); blank items are skipped (spaces and tabs around items only)."""
    if value is None:
        return None
    return tuple(v.strip(" \t") for v in value.split(",") if v.strip(" \t")) or None


def _given_once(request: Request[Any, Any, Any]) -> None:
    """A repeated query parameter would be read as its last value alone: several types or statuses are
    one comma list."""
    params = request.query_params
    for name in params:
        if len(params.getall(name)) > 1:
            raise InvalidInput(
                f"query parameter {name!r} is given more than once (several values: one comma list)",
                field=name,
                details={"rule": "given_once"},
            )


def csv_pattern(names: tuple[str, ...]) -> str:
    """The regular expression of a comma list of `names` as `_csv` reads it (for the OpenAPI document)."""
    item = "[ \t]*(?:" + "|".join(names) + ")?[ \t]*"
    return f"^{item}(?:,{item})*$"


@get(
    "/v0/memories",
    operation_id="listMemories",
    summary="List memories with filters, paginated",
    responses=error_responses(401, 403, 422, 429, 500),
    **_COMMON,
)
async def list_memories(
    request: Request[Any, Any, Any],
    namespace: Annotated[str | None, QueryParameter(max_length=64, schema_extra=ID_SCHEMA)] = None,
    entity_id: Annotated[str | None, QueryParameter(max_length=256, schema_extra=ID_SCHEMA)] = None,
    agent_id: Annotated[
        str | None, QueryParameter(max_length=128, schema_extra=ID_SCHEMA, description="else X-Service-Agent")
    ] = None,
    memory_type: Annotated[
        str | None,
        QueryParameter(name="type", pattern=csv_pattern(MEMORY_TYPES), description="a type or a comma list"),
    ] = None,
    status: Annotated[
        str | None, QueryParameter(pattern=csv_pattern(STATUSES), description="a status or a comma list")
    ] = None,
    tag: Annotated[str | None, QueryParameter(max_length=64, schema_extra=ID_SCHEMA)] = None,
    archived: Annotated[bool | None, QueryParameter()] = None,
    since: Annotated[
        str | None,
        date_time_query("timestamp >= since (RFC 3339, years 1-9999 in UTC)"),
    ] = None,
    until: Annotated[
        str | None,
        date_time_query("timestamp < until (RFC 3339, years 1-9999 in UTC)"),
    ] = None,
    q: Annotated[
        str | None,
        QueryParameter(
            max_length=MAX_QUERY_LENGTH,
            pattern=r"^[^\u0000-\u001f\u007f]*$",
            description="text search: the text contains q (ASCII case-insensitive; no control characters)",
        ),
    ] = None,
    sort: Annotated[Literal["timestamp_desc", "timestamp_asc"], QueryParameter()] = "timestamp_desc",
    page_size: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE_SIZE, description="max 200")] = 50,
    cursor: Annotated[
        str | None, QueryParameter(pattern=CURSOR_PATTERN, description="next_cursor of the previous page")
    ] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> MemoryList:
    header_agent = bounded_header(request, AGENT_HEADER)
    _given_once(request)
    check_ids(agent_id=agent_id)  # a blank agent_id is refused, not read as absent (the header's)
    if tag is not None:
        check_text(tag, "tag")  # no memory holds a blank tag: the filter would be a mistake
    filters = ListFilters(
        namespace=namespace,
        entity_id=entity_id,
        agent_id=agent_id or header_agent,
        types=_csv(memory_type),
        statuses=_csv(status),
        tag=tag,
        archived=archived,
        since=query_datetime(since, "since"),
        until=query_datetime(until, "until"),
        q=q or None,
        sort=sort,
    )
    org_id = principal_of(request).org_id
    svc = services_of(request)
    page = await run_sync(lambda: svc.memories.list_page(org_id, filters, page_size=page_size, cursor=cursor))
    return MemoryList(items=page.items, next_cursor=page.next_cursor)


ROUTES = [create_memory, get_memory, update_memory, delete_memory, list_memories]
