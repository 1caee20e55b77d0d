"""POST /v0/context/assemble (context for one agent turn, with ingest) and POST /v0/recall.

Assemble is `engine.assemble`: `prepare_assemble` (retrieval, extraction, embedding; outside any
transaction) then `commit_assemble` (the turn, its facts and vectors, then the `context.assembled`
event) in one transaction with the Idempotency-Key record. A retry with the same key and body replays
the stored response and writes nothing; another body is 409. This route parses, authorizes and renders.

Scopes: the guard admits `read`; an assemble that may write (`ingest.store_turn` != `none` or
`ingest.extract` true, the defaults) also needs `write` (403 otherwise). Recall needs `read`.
`?trace=true` is the same as `return.trace = true`. `X-Service-Agent` scopes retrieval to the agent
and is the `agent_id` of what the call stores. `flags.degraded` is true when the embedder (retrieval or
the write's embeddings) or the LLM extractor degraded; `cost.llm_tokens` counts the extractor's tokens.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, post
from litestar.params import QueryParameter

from engine.assemble import Engine, PreparedAssemble, commit_assemble, prepare_assemble, writes_of
from engine.redact.pipeline_adapter import redactor_factory
from engine.retrieval import pipeline
from engine.retrieval.options import AssembleRequest, RecallRequest
from engine.retrieval.responses import AssembleResponse, RecallResponse
from engine.timeutil import utcnow
from server.auth import principal_of, require_auth
from server.errors import request_id_of
from server.http import (
    AGENT_DOC,
    AGENT_HEADER,
    IDEMPOTENCY_DOC,
    bounded_header,
    error_responses,
    ok_json,
    parse_body,
    read_json,
    require_scope,
    run_write,
)
from server.idempotency import StoredResponse
from server.observability import observe_stages
from server.services import Services, services_of
from server.threads import run_sync

#: operationId -> request-body Structs, for the OpenAPI document (routes read their bodies raw)
REQUEST_BODIES: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "assembleContext": (AssembleRequest,),
    "recall": (RecallRequest,),
}


def engine_of(svc: Services) -> Engine:
    return Engine(
        store=svc.store,
        embeddings=svc.memories.embeddings,
        extractor=svc.extractor,
        read_events=svc.read_events,
    )


@post(
    "/v0/context/assemble",
    operation_id="assembleContext",
    status_code=200,
    tags=["context"],
    summary="Assemble the context for one agent turn; optionally extract and ingest the turn",
    guards=[require_auth],
    opt={"scope": "read"},
    responses=error_responses(400, 401, 403, 409, 422, 429, 500),
)
async def assemble_context(
    request: Request[Any, Any, Any],
    trace: Annotated[bool, QueryParameter(description="include verbose trace/debug fields")] = False,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> Response[AssembleResponse]:
    raw, data = await read_json(request)
    agent = bounded_header(request, AGENT_HEADER)
    body = parse_body(data, AssembleRequest)
    if trace:
        body.return_ = msgspec.structs.replace(body.return_, trace=True)
    if writes_of(body):
        require_scope(request, "write")
    engine = engine_of(services_of(request))
    rid = request_id_of(request.scope)
    prepared: list[PreparedAssemble] = []

    def prepare(org_id: str) -> None:  # outside the write transaction; skipped on a replay
        prepared.append(
            prepare_assemble(
                engine,
                org_id=org_id,
                agent_id=agent,
                request=body,
                request_id=rid,
                now=utcnow(),
                redactor_factory=redactor_factory,
            )
        )
        observe_stages(prepared[0].timings)

    def work(org_id: str) -> StoredResponse:
        return ok_json(commit_assemble(engine, prepared[0]))

    return await run_write(request, raw, work, prepare=prepare, writes=writes_of(body), parsed=body)


@post(
    "/v0/recall",
    operation_id="recall",
    status_code=200,
    tags=["context"],
    summary="Explicit recall: ranked matches for a query",
    description="`limit` matches, best first, each with its score and score components. `return` has "
    "assemble's shape; recall reads its `include_raw_memories` and `trace`. The others shape assemble's "
    "context sections, which recall does not build, and are accepted and not read.",
    guards=[require_auth],
    opt={"scope": "read"},
    responses=error_responses(400, 401, 403, 422, 429, 500),
)
async def recall(
    request: Request[Any, Any, Any],
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> RecallResponse:
    _, data = await read_json(request)
    agent = bounded_header(request, AGENT_HEADER)
    body = parse_body(data, RecallRequest)
    org_id = principal_of(request).org_id
    svc = services_of(request)
    rid = request_id_of(request.scope)
    return await run_sync(
        lambda: pipeline.recall(
            svc.store,
            svc.memories.embeddings,
            org_id=org_id,
            agent_id=agent,
            request=body,
            request_id=rid,
            now=utcnow(),
            redactor_factory=redactor_factory,
        )
    )


ROUTES = [assemble_context, recall]
