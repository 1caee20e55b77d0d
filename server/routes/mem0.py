"""mem0 platform routes (what `mem0ai`'s MemoryClient and AsyncMemoryClient call), a thin adapter over
the memory service, the write path and recall (server.mem0). Older client lines' /v1 and /v2 paths
are here too; /v1/memories (POST, GET) and GET/DELETE /v1/memories/{memory_id} are server.routes.v1.

Errors carry the usual envelope plus `detail` (mem0 clients read the message there). mem0 features
Loci does not have answer 501 `not_supported` (see UNSUPPORTED and docs/integrations.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, Response, delete, get, post, put, route
from litestar.exceptions import MethodNotAllowedException
from litestar.params import PathParameter, QueryParameter

from engine.errors import InvalidInput, NotSupported
from engine.models import NOT_BLANK_PATTERN
from engine.timeutil import shift, utcnow
from engine.write.fact_edits import EditPlan, commit_edit, plan_edit
from engine.write.turns import embed_for_write
from server.auth import principal_of, require_auth
from server.errors import failure_for, request_id_of
from server.http import (
    ID_SCHEMA,
    IDEMPOTENCY_DOC,
    error_responses,
    ok_json,
    parse_body,
    query_datetime,
    read_json,
    run_write,
)
from server.idempotency import StoredResponse
from server.mem0 import operations as ops
from server.mem0.filters import Selection, check, merge_ids, select, with_metadata_keys
from server.mem0.records import day_start, entities, record
from server.schemas.errors import Mem0ErrorBody, as_mem0
from server.schemas.mem0 import (
    DEFAULT_PAGE_SIZE,
    DEFAULT_TOP_K,
    MAX_PAGE_SIZE,
    Mem0AddResponse,
    Mem0Deleted,
    Mem0EntityList,
    Mem0HistoryItem,
    Mem0ListRequest,
    Mem0Memory,
    Mem0Page,
    Mem0Ping,
    Mem0Results,
    Mem0SearchRequest,
    Mem0UpdateRequest,
)
from server.schemas.v1 import V1CreateRequest
from server.services import services_of
from server.threads import run_sync

REQUEST_BODIES: dict[str, tuple[type[Any], ...]] = {
    "mem0AddV3": (V1CreateRequest,),
    "mem0ListV3": (Mem0ListRequest,),
    "mem0ListV2": (Mem0ListRequest,),
    "mem0SearchV3": (Mem0SearchRequest,),
    "mem0SearchV2": (Mem0SearchRequest,),
    "mem0SearchV1": (Mem0SearchRequest,),
    "mem0UpdateMemory": (Mem0UpdateRequest,),
}
NOT_SUPPORTED = 501


def mem0_exception_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[Mem0ErrorBody]:
    failure = failure_for(exc, request_id_of(request.scope))
    return Response(content=as_mem0(failure.body), status_code=failure.status, headers=failure.headers)


MEM0_COMMON: dict[str, Any] = {
    "guards": [require_auth],
    "tags": ["mem0"],
    "exception_handlers": {Exception: mem0_exception_handler},
}
MemoryIdPath = Annotated[str, PathParameter(description="mem_<ULID>", max_length=128)]
#: empty is read as absent (mem0's leniency); blank is refused (`check_ids`)
IdQuery = Annotated[
    str | None,
    QueryParameter(
        max_length=256, schema_extra={"pattern": f"^$|{NOT_BLANK_PATTERN}"}, description="an id, or * for any"
    ),
]
FiltersQuery = Annotated[
    str | None,
    QueryParameter(
        max_length=4096,
        description="mem0 filters as a JSON object, or the Python repr of a dict (what mem0ai's "
        "delete_all(filters=...) sends); ANDed with the ids",
    ),
]


def _org(request: Request[Any, Any, Any]) -> str:
    return principal_of(request).org_id


# --- key check ------------------------------------------------------------------------------------------
@get(
    "/v1/ping/",
    operation_id="mem0Ping",
    summary="Check the API key (mem0 clients call it on construction)",
    responses=error_responses(401, 403, 429, 500),
    **MEM0_COMMON,
)
async def ping(request: Request[Any, Any, Any]) -> Mem0Ping:
    return Mem0Ping(org_id=_org(request), project_id=ops.NAMESPACE)


# --- add ----------------------------------------------------------------------------------------------
async def add_response(
    request: Request[Any, Any, Any], render: Any, *, agent: str | None = None
) -> Response[Any]:
    """Shared by every add route: parse, prepare outside the transaction, commit under the key.
    `agent`: the agent_id when the body names none (/v1's X-Service-Agent)."""
    raw, data = await read_json(request)
    body = parse_body(data, V1CreateRequest)
    if body.agent_id is None and agent is not None:
        body = msgspec.structs.replace(body, agent_id=agent)
    ops.scopes_of(body)  # 422 before anything runs
    ops.check_metadata(body.metadata or {})
    svc = services_of(request)
    ready: list[ops.AddPlan] = []

    def prepare(org_id: str) -> None:
        ready.append(ops.prepare_add(svc, org_id, body, utcnow()))

    def work(org_id: str) -> StoredResponse:
        return ok_json(render(ops.commit_add(svc, org_id, ready[0])))

    return await run_write(request, raw, work, prepare=prepare, parsed=body)


@post(
    "/v3/memories/add/",
    operation_id="mem0AddV3",
    status_code=200,
    summary="Add memories from messages (mem0 v3; synchronous: results are in the answer)",
    responses=error_responses(),
    **MEM0_COMMON,
)
async def add_v3(
    request: Request[Any, Any, Any], idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None
) -> Response[Mem0AddResponse]:
    rid = request_id_of(request.scope)
    return await add_response(request, lambda items: Mem0AddResponse(results=items, event_id=rid))


# --- list and search ------------------------------------------------------------------------------------
def _scoped(filters: Mapping[str, Any] | None) -> Selection:
    """The selection of mem0 filters that name an entity (list and search refuse to read a whole org)."""
    sel = select(filters)
    if not sel.names_entity:
        raise InvalidInput(
            "filters must name a user_id, agent_id, run_id or app_id",
            field="filters",
            details={"rule": "scope_filter"},
        )
    return sel


def _page_url(request: Request[Any, Any, Any], number: int, size: int) -> str:
    return str(request.url.with_replacements(query=f"page={number}&page_size={size}"))


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
#: a date-time's zone: Z or an offset after its time
_OFFSET = re.compile(r"(?:[Zz]|[+-]\d{2}:?\d{2})$")


def date_bound(value: str | None, name: str, *, end: bool = False) -> datetime | None:
    """A get_all bound: a day (its start; an end day takes the whole day) or a date-time (an end one
    inclusive), a date-time without an offset read as UTC; else a 422 naming `name`."""
    if value is None:
        return None
    if _DAY.fullmatch(value):
        try:
            return day_start(date.fromisoformat(value), next_day=end)
        except ValueError:
            pass
    else:
        naive = value if _OFFSET.search(value) else value + "Z"
        with contextlib.suppress(InvalidInput):
            at = query_datetime(naive, name)
            if at is not None:
                return shift(at, timedelta(microseconds=1 if end else 0))
    raise InvalidInput(
        f"{name} must be a day (2024-05-01) or an RFC 3339 date-time (2024-05-01T12:00:00Z)",
        field=name,
        details={"value": value[:64]},
    )


async def _list(request: Request[Any, Any, Any], page: int | None, page_size: int | None) -> Mem0Page:
    _, data = await read_json(request)
    body = parse_body(data, Mem0ListRequest)
    check(body.filters)
    sel = _scoped(body.filters)
    number = page or body.page or 1
    size = page_size or body.page_size or DEFAULT_PAGE_SIZE
    org_id, svc = _org(request), services_of(request)
    since = date_bound(body.start_date, "start_date")
    until = date_bound(body.end_date, "end_date", end=True)
    wanted = set(body.categories or ())

    def run() -> tuple[int, list[Any]]:
        found = ops.scan(
            svc, org_id, sel, now=utcnow(), show_expired=bool(body.show_expired), since=since, until=until
        )
        if wanted:
            found = (m for m in found if wanted.intersection(m.tags))
        return ops.page(found, number=number, size=size)

    count, items = await run_sync(run)
    last = (count + size - 1) // size
    return Mem0Page(
        count=count,
        results=[record(m) for m in items],
        next=_page_url(request, number + 1, size) if number < last else None,
        previous=_page_url(request, number - 1, size) if number > 1 else None,
    )


PageQuery = Annotated[int | None, QueryParameter(ge=1, le=1_000_000, description="1-based page")]
PageSizeQuery = Annotated[int | None, QueryParameter(ge=1, le=MAX_PAGE_SIZE, description="1 to 200")]


@post(
    "/v3/memories/",
    operation_id="mem0ListV3",
    status_code=200,
    opt={"scope": "read"},
    summary="List memories by mem0 filters, newest first, in numbered pages (mem0 v3 get_all)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **MEM0_COMMON,
)
async def list_v3(
    request: Request[Any, Any, Any], page: PageQuery = None, page_size: PageSizeQuery = None
) -> Mem0Page:
    return await _list(request, page, page_size)


@post(
    "/v2/memories/",
    operation_id="mem0ListV2",
    status_code=200,
    opt={"scope": "read"},
    summary="List memories by mem0 filters (older clients; answers the page's memories as a list)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **MEM0_COMMON,
)
async def list_v2(
    request: Request[Any, Any, Any], page: PageQuery = None, page_size: PageSizeQuery = None
) -> list[Mem0Memory]:
    return (await _list(request, page, page_size)).results


async def search_results(request: Request[Any, Any, Any], *, oss: bool = False) -> list[Mem0Memory]:
    """Shared by every search route: mem0 filters (top-level ids merged in; on the open-source
    server's route, other top-level keys are metadata keys) and the recall ranking."""
    _, data = await read_json(request)
    body = parse_body(data, Mem0SearchRequest)
    given = with_metadata_keys(body.filters) if oss else body.filters
    check(given)
    filters = merge_ids(
        given, user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id, app_id=body.app_id
    )
    if body.metadata:
        filters = {"AND": [filters or {}, {"metadata": body.metadata}]}
    if body.categories:
        filters = {"AND": [filters or {}, {"categories": {"in": body.categories}}]}
    sel = _scoped(filters)
    org_id, svc, rid = _org(request), services_of(request), request_id_of(request.scope)
    found = await run_sync(
        lambda: ops.ranked(
            svc,
            org_id,
            request_id=rid,
            query=body.query,
            sel=sel,
            top_k=body.limit or body.top_k or DEFAULT_TOP_K,
            threshold=body.threshold,
            rerank=bool(body.rerank),
            now=utcnow(),
            show_expired=bool(body.show_expired),
        )
    )
    return [record(m, score) for m, score in found]


@post(
    "/v3/memories/search/",
    operation_id="mem0SearchV3",
    status_code=200,
    opt={"scope": "read"},
    summary="Search memories by a query within mem0 filters (mem0 v3)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **MEM0_COMMON,
)
async def search_v3(request: Request[Any, Any, Any]) -> Mem0Results:
    return Mem0Results(results=await search_results(request))


@post(
    "/v2/memories/search/",
    operation_id="mem0SearchV2",
    status_code=200,
    opt={"scope": "read"},
    summary="Search memories (older clients; answers a list)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **MEM0_COMMON,
)
async def search_v2(request: Request[Any, Any, Any]) -> list[Mem0Memory]:
    return await search_results(request)


@post(
    "/v1/memories/search/",
    operation_id="mem0SearchV1",
    status_code=200,
    opt={"scope": "read"},
    summary="Search memories with top-level user_id/agent_id/run_id (older clients; answers a list)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **MEM0_COMMON,
)
async def search_v1(request: Request[Any, Any, Any]) -> list[Mem0Memory]:
    return await search_results(request)


# --- one memory ------------------------------------------------------------------------------------------
async def update_record(request: Request[Any, Any, Any], memory_id: str) -> Response[Any]:
    """Shared by the platform and open-source update routes: prepare (embed the new text), then write."""
    raw, data = await read_json(request)
    body = parse_body(data, Mem0UpdateRequest)
    svc = services_of(request)
    plans: list[EditPlan] = []

    def prepare(org_id: str) -> None:
        current = svc.memories.get(org_id, memory_id)
        plan = plan_edit(svc.extractor, current, ops.edit_of(current, body))
        if isinstance(plan.edit.text, str):
            embed_for_write(svc.memories.embeddings, [plan.edit.text])
        plans.append(plan)

    return await run_write(
        request,
        raw,
        lambda org_id: ok_json(record(commit_edit(svc.memories, org_id, memory_id, plans[0]))),
        prepare=prepare,
        parsed=body,
    )


@put(
    "/v1/memories/{memory_id:str}/",
    operation_id="mem0UpdateMemory",
    status_code=200,
    summary="Update a memory's text, metadata or expiration date (mem0)",
    responses=error_responses(),
    **MEM0_COMMON,
)
async def update_memory(
    request: Request[Any, Any, Any],
    memory_id: MemoryIdPath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Memory]:
    return await update_record(request, memory_id)


@get(
    "/v1/memories/{memory_id:str}/history/",
    operation_id="mem0MemoryHistory",
    summary="A memory's changes, oldest first (mem0)",
    responses=error_responses(401, 403, 404, 429, 500),
    **MEM0_COMMON,
)
async def memory_history(request: Request[Any, Any, Any], memory_id: MemoryIdPath) -> list[Mem0HistoryItem]:
    return await history_of(request, memory_id)


async def history_of(request: Request[Any, Any, Any], memory_id: str) -> list[Mem0HistoryItem]:
    org_id, svc = _org(request), services_of(request)
    return await run_sync(ops.history, svc, org_id, memory_id)


# --- bulk delete and entities ---------------------------------------------------------------------------
async def delete_selected(request: Request[Any, Any, Any], sel: Any, message: str) -> Response[Any]:
    svc = services_of(request)
    return await run_write(
        request,
        b"",
        lambda org_id: ok_json(
            Mem0Deleted(message=message, deleted=ops.delete_matching(svc, org_id, sel, utcnow()))
        ),
    )


@delete(
    "/v1/memories/",
    operation_id="mem0DeleteAll",
    status_code=200,
    summary="Delete every memory of a user, agent, run or app (* for any) (mem0 delete_all)",
    responses=error_responses(401, 403, 409, 422, 429, 500),
    **MEM0_COMMON,
)
async def delete_all(
    request: Request[Any, Any, Any],
    user_id: IdQuery = None,
    agent_id: IdQuery = None,
    run_id: IdQuery = None,
    app_id: IdQuery = None,
    filters: FiltersQuery = None,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Deleted]:
    ids = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "app_id": app_id}
    parsed = ops.filters_param(filters)
    check(parsed)
    sel = ops.ids_selection(**ids) if parsed is None else _scoped(merge_ids(parsed, **ids))
    return await delete_selected(request, sel, "Memories deleted successfully!")


@get(
    "/v1/entities/",
    operation_id="mem0ListEntities",
    summary="Users, agents, apps and runs that have memories (mem0 users)",
    responses=error_responses(401, 403, 429, 500),
    **MEM0_COMMON,
)
async def list_entities(request: Request[Any, Any, Any]) -> Mem0EntityList:
    org_id, svc = _org(request), services_of(request)
    return await run_sync(lambda: entities(ops.scan(svc, org_id, select(None), now=utcnow()), owner=org_id))


EntityTypePath = Annotated[
    Literal["user", "agent", "app", "run"], PathParameter(description="user, agent, app or run")
]
#: the rest of the path (its leading / counted): mem0 clients percent-encode a / in the id, which the
#: decoded ASGI path splits into segments
EntityNamePath = Annotated[
    str,
    PathParameter(
        description="the entity's id (a / in it percent-encoded)", max_length=257, schema_extra=ID_SCHEMA
    ),
]


def _entity_name(raw: str) -> str:
    """The entity id of a `{entity_id:path}` parameter (which begins with /); `<id>/profile` is mem0's
    profile of that entity, which Loci does not have (501)."""
    name = raw.removeprefix("/")
    if name.endswith("/profile"):
        raise NotSupported("mem0 profiles is not supported by Loci (see docs/integrations.md)")
    return name


@route(
    "/v2/entities/{entity_type:str}/{entity_id:path}",
    http_method=["GET", "POST", "PUT", "PATCH"],
    include_in_schema=False,
    **MEM0_COMMON,
)
async def entity_profile(
    request: Request[Any, Any, Any], entity_type: Annotated[str, PathParameter()], entity_id: EntityNamePath
) -> None:
    """mem0's profile routes (`<id>/profile`): 501; any other path here is an entity, which is only deleted."""
    _entity_name(entity_id)
    raise MethodNotAllowedException(headers={"allow": "DELETE"})


@delete(
    "/v2/entities/{entity_type:str}/{entity_id:path}",
    operation_id="mem0DeleteEntity",
    status_code=200,
    summary="Delete every memory of one user, agent, app or run (mem0 delete_users)",
    responses=error_responses(401, 403, 409, 422, 429, 500),
    **MEM0_COMMON,
)
async def delete_entity(
    request: Request[Any, Any, Any],
    entity_type: EntityTypePath,
    entity_id: EntityNamePath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Deleted]:
    sel = ops.entity_selection(entity_type, _entity_name(entity_id))
    return await delete_selected(request, sel, "Entity deleted successfully!")


@delete(
    "/v1/entities/{entity_type:str}/{entity_id:path}",
    operation_id="mem0DeleteEntityV1",
    status_code=200,
    summary="Delete every memory of one user, agent, app or run (older clients)",
    responses=error_responses(401, 403, 409, 422, 429, 500),
    **MEM0_COMMON,
)
async def delete_entity_v1(
    request: Request[Any, Any, Any],
    entity_type: EntityTypePath,
    entity_id: EntityNamePath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Deleted]:
    sel = ops.entity_selection(entity_type, _entity_name(entity_id))
    return await delete_selected(request, sel, "Entity deleted successfully!")


# --- what Loci does not do -------------------------------------------------------------------------------
#: mem0 platform paths with no Loci counterpart: each answers 501 `not_supported` naming the feature
UNSUPPORTED: dict[str, str] = {
    "/v1/batch/": "batch update and batch delete",
    "/v1/exports/": "memory exports",
    "/v1/exports/get/": "memory exports",
    "/v1/summary/": "summaries (use POST /v0/summarize)",
    "/v1/feedback/": "feedback",
    "/v1/event/{event_id:str}/": "event polling (Loci adds synchronously: results are in the add answer)",
    "/v1/events/": "event polling (Loci adds synchronously)",
    "/v2/profiles/jobs/": "profiles",
    "/v2/profiles/settings/": "profiles",
    "/api/v1/orgs/organizations/{rest:path}": "organizations and projects (an org is the API key's)",
    "/api/v1/webhooks/{rest:path}": "webhooks (read the event stream: GET /v0/observability/events)",
}


def _unsupported(path: str, feature: str) -> Any:
    """A route answering 501 for every method (not in the OpenAPI document)."""

    @route(
        path,
        http_method=["GET", "POST", "PUT", "PATCH", "DELETE"],
        include_in_schema=False,
        name=f"mem0-unsupported-{path}",
        **MEM0_COMMON,
    )
    async def handler(request: Request[Any, Any, Any]) -> None:
        raise NotSupported(f"mem0 {feature} is not supported by Loci (see docs/integrations.md)")

    return handler


ROUTES: list[Any] = [
    ping,
    add_v3,
    list_v3,
    list_v2,
    search_v3,
    search_v2,
    search_v1,
    update_memory,
    memory_history,
    delete_all,
    list_entities,
    delete_entity,
    delete_entity_v1,
    entity_profile,
    *(_unsupported(path, feature) for path, feature in UNSUPPORTED.items()),
]
