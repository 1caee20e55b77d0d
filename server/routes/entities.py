"""GET /v0/entities/{entity_id}/graph: the entities and fact edges around an entity (read scope), from
the same graph the retrieval channel walks (see engine.entity_graph)."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Request, get
from litestar.params import PathParameter, QueryParameter

from engine.entity_graph import DEFAULT_LIMIT, MAX_DEPTH, MAX_LIMIT, EntityGraph, entity_graph
from engine.timeutil import to_utc, utcnow
from server.auth import principal_of, require_auth
from server.http import (
    AGENT_DOC,
    AGENT_HEADER,
    ID_SCHEMA,
    bounded_header,
    date_time_query,
    error_responses,
    query_datetime,
)
from server.services import services_of
from server.threads import run_sync


@get(
    "/v0/entities/{entity_id:str}/graph",
    operation_id="getEntityGraph",
    tags=["entities"],
    summary="The entities and fact edges around an entity, to the retrieval graph's depth",
    description=(
        "The memories the graph channel reaches from the entity (active ones, or with `as_of` those "
        "valid then), the entities they touch with their hop distance, and their edges: `fact` "
        "(subject -> entity-valued object, with the predicate) and `mention` (a memory's entity_id -> "
        "its subject or object). `truncated` is true when more than `limit` memories were in reach."
    ),
    guards=[require_auth],
    responses=error_responses(401, 403, 422, 429, 500),
)
async def get_entity_graph(
    request: Request[Any, Any, Any],
    entity_id: Annotated[
        str, PathParameter(max_length=256, schema_extra=ID_SCHEMA, description="e.g. ent:alice")
    ],
    namespace: Annotated[str, QueryParameter(max_length=64, schema_extra=ID_SCHEMA)] = "default",
    depth: Annotated[int, QueryParameter(ge=0, le=MAX_DEPTH, description="hops, 0 to 2")] = MAX_DEPTH,
    limit: Annotated[
        int, QueryParameter(ge=1, le=MAX_LIMIT, description="memories, 1 to 500")
    ] = DEFAULT_LIMIT,
    as_of: Annotated[
        str | None,
        date_time_query("what was valid then (RFC 3339)"),
    ] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> EntityGraph:
    agent = bounded_header(request, AGENT_HEADER)
    org_id = principal_of(request).org_id
    store = services_of(request).store
    parsed = query_datetime(as_of, "as_of")
    when = to_utc(parsed) if parsed is not None else None
    return await run_sync(
        lambda: entity_graph(
            store,
            org_id=org_id,
            entity_id=entity_id,
            namespace=namespace,
            depth=depth,
            limit=limit,
            as_of=when,
            agent_id=agent,
            now=utcnow(),
        )
    )


ROUTES = [get_entity_graph]
