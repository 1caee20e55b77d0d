"""The routes of mem0's open-source REST server (`POST /memories`, `GET /memories`, `POST /search`, ...),
over the same adapter as the platform routes (server.mem0). The key may also come as `X-API-Key`.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any

from litestar import Request, Response, delete, get, post, put
from litestar.params import QueryParameter

from engine.timeutil import utcnow
from server.auth import principal_of
from server.http import IDEMPOTENCY_DOC, error_responses, ok_json, run_write
from server.mem0 import operations as ops
from server.mem0.filters import select
from server.mem0.records import record
from server.routes.mem0 import (
    MEM0_COMMON,
    IdQuery,
    MemoryIdPath,
    add_response,
    delete_selected,
    history_of,
    search_results,
    update_record,
)
from server.schemas.mem0 import (
    MAX_PAGE_SIZE,
    Mem0Deleted,
    Mem0HistoryItem,
    Mem0Memory,
    Mem0Results,
    Mem0SearchRequest,
    Mem0UpdateRequest,
)
from server.schemas.v1 import V1CreateRequest, V1CreateResponse
from server.services import services_of
from server.threads import run_sync

REQUEST_BODIES: dict[str, tuple[type[Any], ...]] = {
    "mem0OssAdd": (V1CreateRequest,),
    "mem0OssSearch": (Mem0SearchRequest,),
    "mem0OssUpdate": (Mem0UpdateRequest,),
}
_COMMON: dict[str, Any] = {**MEM0_COMMON, "tags": ["mem0 open-source server"]}
DEFAULT_LIST = 100


@post(
    "/memories",
    operation_id="mem0OssAdd",
    status_code=200,
    summary="Add memories from messages (mem0 OSS)",
    responses=error_responses(),
    **_COMMON,
)
async def oss_add(
    request: Request[Any, Any, Any], idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None
) -> Response[V1CreateResponse]:
    return await add_response(request, lambda items: V1CreateResponse(results=items))


@get(
    "/memories",
    operation_id="mem0OssList",
    summary="Newest memories of a user/agent/run, or of the org (mem0 OSS)",
    responses=error_responses(401, 403, 422, 429, 500),
    **_COMMON,
)
async def oss_list(
    request: Request[Any, Any, Any],
    user_id: IdQuery = None,
    agent_id: IdQuery = None,
    run_id: IdQuery = None,
    top_k: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE_SIZE, description="1 to 200")] = DEFAULT_LIST,
    show_expired: Annotated[bool, QueryParameter(description="include expired memories")] = False,
) -> Mem0Results:
    ids = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)) if v}
    org_id, svc = principal_of(request).org_id, services_of(request)

    def run() -> Mem0Results:
        found = ops.scan(svc, org_id, select(ids), now=utcnow(), show_expired=show_expired)
        return Mem0Results(results=[record(m) for m in itertools.islice(found, top_k)])

    return await run_sync(run)


@get(
    "/memories/{memory_id:str}",
    operation_id="mem0OssGet",
    summary="One memory (mem0 OSS)",
    responses=error_responses(401, 403, 404, 429, 500),
    **_COMMON,
)
async def oss_get(request: Request[Any, Any, Any], memory_id: MemoryIdPath) -> Mem0Memory:
    org_id, svc = principal_of(request).org_id, services_of(request)
    return record(await run_sync(svc.memories.get, org_id, memory_id))


@post(
    "/search",
    operation_id="mem0OssSearch",
    status_code=200,
    opt={"scope": "read"},
    summary="Search memories (mem0 OSS; ids in filters or at the top level)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **_COMMON,
)
async def oss_search(request: Request[Any, Any, Any]) -> Mem0Results:
    return Mem0Results(results=await search_results(request, oss=True))


@put(
    "/memories/{memory_id:str}",
    operation_id="mem0OssUpdate",
    status_code=200,
    summary="Update a memory's text, metadata or expiration date (mem0 OSS)",
    responses=error_responses(),
    **_COMMON,
)
async def oss_update(
    request: Request[Any, Any, Any],
    memory_id: MemoryIdPath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Memory]:
    return await update_record(request, memory_id)


@get(
    "/memories/{memory_id:str}/history",
    operation_id="mem0OssHistory",
    summary="A memory's changes, oldest first (mem0 OSS)",
    responses=error_responses(401, 403, 404, 429, 500),
    **_COMMON,
)
async def oss_history(request: Request[Any, Any, Any], memory_id: MemoryIdPath) -> list[Mem0HistoryItem]:
    return await history_of(request, memory_id)


@delete(
    "/memories/{memory_id:str}",
    operation_id="mem0OssDelete",
    status_code=200,
    summary="Delete one memory (mem0 OSS)",
    responses=error_responses(401, 403, 404, 409, 422, 429, 500),
    **_COMMON,
)
async def oss_delete(
    request: Request[Any, Any, Any],
    memory_id: MemoryIdPath,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Deleted]:
    svc = services_of(request)

    def work(org_id: str) -> Any:
        svc.memories.delete(org_id, memory_id)
        return ok_json(Mem0Deleted(message="Memory deleted successfully"))

    return await run_write(request, b"", work)


@delete(
    "/memories",
    operation_id="mem0OssDeleteAll",
    status_code=200,
    summary="Delete every memory of a user, agent or run (mem0 OSS)",
    responses=error_responses(401, 403, 409, 422, 429, 500),
    **_COMMON,
)
async def oss_delete_all(
    request: Request[Any, Any, Any],
    user_id: IdQuery = None,
    agent_id: IdQuery = None,
    run_id: IdQuery = None,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[Mem0Deleted]:
    sel = ops.ids_selection(user_id=user_id, agent_id=agent_id, run_id=run_id)
    return await delete_selected(request, sel, "All relevant memories deleted")


ROUTES: list[Any] = [
    oss_add,
    oss_list,
    oss_get,
    oss_search,
    oss_update,
    oss_history,
    oss_delete,
    oss_delete_all,
]
