"""POST /v0/context/assemble (context for one agent turn, with ingest) and POST /v0/recall.

Assemble, in order (see engine.write.turns):
1. outside any transaction: retrieval (so it sees the state BEFORE this turn's writes), extraction
   (rules, or the LLM with LOCI_LLM_URL) and embedding of the texts about to be stored;
2. in one transaction with the Idempotency-Key record: the turn, its facts with supersession, and a
   `context.assembled` event. A retry with the same key and body replays the stored response and
   writes nothing; another body is 409.

Scopes: the guard admits `read`; an assemble that may write (`ingest.store_turn` != `none` or
`ingest.extract` true, the defaults) also needs `write` (403 otherwise). Recall needs `read`.
`?trace=true` is the same as `return.trace = true`. `X-Service-Agent` scopes retrieval to the agent
and is the `agent_id` of what the call stores. `flags.degraded` is true when the embedder (retrieval or
the write's embeddings) or the LLM extractor degraded; `cost.llm_tokens` counts the extractor's tokens.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
import msgspec
from litestar import Request, Response, post
from litestar.params import QueryParameter

from engine.ids import event_id
from engine.models import Event
from engine.redact.pipeline_adapter import redactor_factory
from engine.retrieval import pipeline
from engine.retrieval.options import AssembleRequest, RecallRequest
from engine.retrieval.responses import AssembleResponse, RecallResponse
from engine.timeutil import to_utc, utcnow
from engine.write.turns import TurnPlan, commit_turn, embed_texts, plan_turn
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
from server.services import services_of

#: operationId -> request-body Structs, for the OpenAPI document (routes read their bodies raw)
REQUEST_BODIES: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "assembleContext": (AssembleRequest,),
    "recall": (RecallRequest,),
}


def writes_of(body: AssembleRequest) -> bool:
    """Whether the assemble may write (decides the `write` scope)."""
    return body.ingest.store_turn != "none" or body.ingest.extract


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
    svc = services_of(request)
    rid = request_id_of(request.scope)
    ready: dict[str, Any] = {}

    def prepare(org_id: str) -> None:  # outside the write transaction; skipped on a replay
        now = utcnow()
        outcome = pipeline.run_assemble(
            svc.store,
            svc.memories.embeddings,
            org_id=org_id,
            agent_id=agent,
            request=body,
            request_id=rid,
            now=now,
            redactor_factory=redactor_factory,
        )
        observe_stages(outcome.timings)
        plan = plan_turn(
            svc.extractor,
            body.turn,
            org_id=org_id,
            entity_id=body.entity_id,
            namespace=body.namespace,
            agent_id=agent,
            timestamp=to_utc(body.as_of) if body.as_of is not None else now,
            now=now,
            store_turn=body.ingest.store_turn,
            extract=body.ingest.extract,
            mode=body.ingest.upsert_conflicts,
            provenance={"request_id": rid},
            subject=body.ingest.subject,
        )
        ready.update(
            now=now,
            response=outcome.response,
            plan=plan,
            embedded=embed_texts(svc.memories.embeddings, plan.texts()),
        )

    def work(org_id: str) -> StoredResponse:
        response: AssembleResponse = ready["response"]
        plan: TurnPlan = ready["plan"]
        if plan.writes_anything:
            response.extracted = commit_turn(svc.store, plan, now=ready["now"]).extracted
        else:
            response.extracted.entities = list(plan.extraction.entities)
            response.extracted.truncated = plan.extraction.truncated
        response.cost.llm_tokens += plan.extraction.llm_tokens
        response.flags.degraded = response.flags.degraded or plan.extraction.degraded or not ready["embedded"]
        svc.store.append_events(
            [
                Event(
                    event_id=event_id(),
                    org_id=org_id,
                    type="context.assembled",
                    at=ready["now"],
                    entity_id=body.entity_id,
                    data={
                        "namespace": body.namespace,
                        "request_id": rid,
                        "agent_id": agent,
                        "facts": len(response.context.facts),
                        "upserts": len(response.extracted.upserts),
                        "degraded": response.flags.degraded,
                    },
                )
            ],
            durable=False,  # a read's log entry: it need not wait for the disk
        )
        return ok_json(response)

    return await run_write(request, raw, work, prepare=prepare)


@post(
    "/v0/recall",
    operation_id="recall",
    status_code=200,
    tags=["context"],
    summary="Explicit recall: ranked matches for a query",
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
    return await anyio.to_thread.run_sync(
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
