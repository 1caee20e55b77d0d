"""The mem0-compatible, message-based surface: /v1/memories. It reads and writes the same memories as
/v0 (same store, same org scoping, same error envelope, plus `detail` for mem0 clients).

Mapping (server.mem0): `user_id` -> the memories' `entity_id` (first-person statements are about
`engine.write.turns.subject_for(user_id)`, i.e. `ent:<user_id>`); `agent_id` (else `X-Service-Agent`, as on /v0) -> `agent_id`; `run_id` and
`app_id` -> `metadata.run_id` / `metadata.app_id` (namespace stays `default`); `metadata` is merged into
every memory written; `expiration_date` -> `valid_to` (the start of the next day). POST needs one of
`user_id`, `agent_id`, `run_id`, `app_id` (at the top level or in `filters`); GET needs `user_id` or
`agent_id` (422 otherwise).

- `infer=true` (default): the configured extractor reads the user messages (if there are none, the
  assistant's, labelled `assistant: `, so their "I" is not the user) and the facts are ingested with supersession: `ADD` a new fact, `UPDATE` a new value that
  superseded the old one, `DELETE` a negation that ended a fact (id and text of the ended fact),
  `NONE` already known (id of the existing fact). When nothing is extracted, the messages are stored
  as with `infer=false`, so nothing said is lost and `results` is never empty.
- `infer=false`: one memory of type `event` per non-blank message, text as given, `metadata.role` =
  the message's role; every result is `ADD`.
- A `system` message (mem0 clients send one; the spec lists `user` and `assistant`) is accepted and
  neither read for facts nor stored, as mem0 does: an instruction to the model is nothing the user
  said. An add with nothing else to remember is a 422.
- GET without `query`: current memories of the user/agent (not expired, as get_all), newest first
  (`score` null); with `query`:
  the recall ranking of /v0/recall (`score` = its fused score), up to `limit` (200, where /v0/recall
  stops at 100).
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any

from litestar import Request, Response, delete, get, post
from litestar.params import QueryParameter

from engine.errors import InvalidInput
from engine.models import Memory, is_blank
from engine.timeutil import utcnow
from loci.wire.models import MAX_TEXT_LENGTH
from server.auth import principal_of
from server.errors import request_id_of
from server.http import (
    AGENT_DOC,
    AGENT_HEADER,
    ID_SCHEMA,
    IDEMPOTENCY_DOC,
    bounded_header,
    error_responses,
    ok_json,
    run_write,
)
from server.idempotency import StoredResponse
from server.mem0.filters import select
from server.mem0.operations import delete_with_superseded, ranked, scan
from server.mem0.records import meta_str, record
from server.routes.mem0 import MEM0_COMMON, MemoryIdPath, add_response
from server.schemas.mem0 import Mem0Memory
from server.schemas.v1 import (
    V1_DEFAULT_LIMIT,
    V1_MAX_LIMIT,
    V1CreateRequest,
    V1CreateResponse,
    V1Deleted,
    V1SearchItem,
    V1SearchResponse,
)
from server.services import services_of
from server.threads import run_sync

REQUEST_BODIES: dict[str, tuple[type[Any], ...]] = {"createMemoriesV1": (V1CreateRequest,)}
_COMMON: dict[str, Any] = {**MEM0_COMMON, "tags": ["v1"]}


@post(
    "/v1/memories/",
    operation_id="createMemoriesV1",
    status_code=200,
    summary="Create memories from chat messages (mem0-compatible; also without the trailing slash)",
    responses=error_responses(),
    **_COMMON,
)
async def create_memories_v1(
    request: Request[Any, Any, Any],
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> Response[V1CreateResponse]:
    agent = bounded_header(request, AGENT_HEADER)
    return await add_response(request, lambda items: V1CreateResponse(results=items), agent=agent)


def _search_item(m: Memory, score: float | None) -> V1SearchItem:
    return V1SearchItem(
        id=m.memory_id,
        memory=m.text,
        user_id=m.entity_id,
        agent_id=m.agent_id,
        run_id=meta_str(m, "run_id"),
        app_id=meta_str(m, "app_id"),
        score=score,
        created_at=m.timestamp,
        metadata=dict(m.metadata),
    )


@get(
    "/v1/memories",
    operation_id="listMemoriesV1",
    summary="Search (with query) or list newest first (mem0-compatible)",
    responses=error_responses(401, 403, 422, 429, 500),
    **_COMMON,
)
async def list_memories_v1(
    request: Request[Any, Any, Any],
    user_id: Annotated[
        str | None,
        QueryParameter(
            min_length=1, max_length=256, schema_extra=ID_SCHEMA, description="the memories' entity_id"
        ),
    ] = None,
    agent_id: Annotated[
        str | None, QueryParameter(min_length=1, max_length=128, schema_extra=ID_SCHEMA)
    ] = None,
    run_id: Annotated[
        str | None, QueryParameter(min_length=1, max_length=256, schema_extra=ID_SCHEMA)
    ] = None,
    app_id: Annotated[
        str | None, QueryParameter(min_length=1, max_length=256, schema_extra=ID_SCHEMA)
    ] = None,
    search: Annotated[
        str | None, QueryParameter(name="query", description=f"search text (max {MAX_TEXT_LENGTH})")
    ] = None,
    limit: Annotated[
        int | None,
        QueryParameter(ge=1, le=V1_MAX_LIMIT, description=f"1 to {V1_MAX_LIMIT} ({V1_DEFAULT_LIMIT})"),
    ] = None,
    top_k: Annotated[
        int | None, QueryParameter(ge=1, le=V1_MAX_LIMIT, description="older clients' name for limit")
    ] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> V1SearchResponse:
    header_agent = bounded_header(request, AGENT_HEADER)  # checked even when the query's agent_id wins
    agent_id = agent_id or header_agent
    ids = {
        k: v
        for k, v in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id), ("app_id", app_id))
        if v
    }
    if not ids:
        raise InvalidInput(
            "one of user_id, agent_id, run_id or app_id is required",
            field="user_id",
            details={"rule": "user_or_agent"},
        )
    if search is not None and len(search) > MAX_TEXT_LENGTH:
        raise InvalidInput(f"query must be at most {MAX_TEXT_LENGTH} characters", field="query")
    query = search
    size = limit or top_k or V1_DEFAULT_LIMIT
    org_id = principal_of(request).org_id
    svc = services_of(request)
    rid = request_id_of(request.scope)

    def run() -> V1SearchResponse:
        sel, now = select(ids), utcnow()
        if query is None or is_blank(query):
            rows = itertools.islice(scan(svc, org_id, sel, now=now), size)
            return V1SearchResponse(results=[_search_item(m, None) for m in rows])
        # the ranking of mem0's search routes: within the ids, the `size` most relevant
        found = ranked(svc, org_id, request_id=rid, query=query, sel=sel, top_k=size, now=now)
        return V1SearchResponse(results=[_search_item(m, score) for m, score in found])

    return await run_sync(run)


@get(
    "/v1/memories/{memory_id:str}",
    operation_id="getMemoryV1",
    summary="Get one memory (mem0-compatible; also with a trailing slash)",
    responses=error_responses(401, 403, 404, 429, 500),
    **_COMMON,
)
async def get_memory_v1(request: Request[Any, Any, Any], memory_id: MemoryIdPath) -> Mem0Memory:
    org_id = principal_of(request).org_id
    svc = services_of(request)
    return record(await run_sync(svc.memories.get, org_id, memory_id))


@delete(
    "/v1/memories/{memory_id:str}",
    operation_id="deleteMemoryV1",
    status_code=200,
    summary="Delete one memory, irreversibly (mem0-compatible; delete_linked: with what it superseded)",
    responses=error_responses(401, 403, 404, 409, 422, 429, 500),
    **_COMMON,
)
async def delete_memory_v1(
    request: Request[Any, Any, Any],
    memory_id: MemoryIdPath,
    delete_linked: Annotated[
        bool,
        QueryParameter(
            description="also delete the older memories this one superseded, transitively, so that "
            "none holds again (mem0's delete_linked)"
        ),
    ] = False,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
) -> Response[V1Deleted]:
    svc = services_of(request)

    def work(org_id: str) -> StoredResponse:
        if delete_linked:
            delete_with_superseded(svc, org_id, memory_id)
        else:
            svc.memories.delete(org_id, memory_id)
        return ok_json(V1Deleted())

    return await run_write(request, b"", work)


ROUTES = [create_memories_v1, list_memories_v1, get_memory_v1, delete_memory_v1]
