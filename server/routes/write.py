"""Private write endpoints (scope `admin`, not for SDKs): POST /v0/memories:batch_upsert and
POST /v0/extract.

batch_upsert: structured items (facts carry `object_text` / `object_num` / `object_type` / `unit` /
`keys`), `upsert_conflicts` off|smart; one outcome per item, in order; all-or-nothing: every item is
checked before anything is written (an invalid item is 422 naming `items[<i>].<field>`), and the
writes go through one transaction with the Idempotency-Key record. Texts are embedded before the
transaction; an embedder failure never fails the write.

extract: runs the configured extractor on `text`; answers entities and fact Memory records; stores
nothing.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Request, Response, post

from engine.memory_service import check_ids
from engine.models import Memory
from engine.timeutil import utcnow
from engine.write.batch_upsert import UpsertRequest, UpsertResponse, build_memories, results
from engine.write.ingest import preview_memories, upsert_memories
from engine.write.turns import embed_for_write, subject_for
from server.auth import principal_of, require_auth
from server.http import (
    AGENT_DOC,
    AGENT_HEADER,
    IDEMPOTENCY_DOC,
    bounded_header,
    error_responses,
    ok_json,
    parse_body,
    read_json,
    run_write,
)
from server.idempotency import StoredResponse
from server.schemas.write import ExtractRequest, ExtractResult
from server.services import services_of
from server.threads import run_sync

REQUEST_BODIES: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "batchUpsertMemories": (UpsertRequest,),
    "extract": (ExtractRequest,),
}
_PRIVATE: dict[str, Any] = {"guards": [require_auth], "opt": {"scope": "admin"}, "tags": ["private"]}


@post(
    "/v0/memories:batch_upsert",
    operation_id="batchUpsertMemories",
    status_code=200,
    summary="Structured batch upsert with supersession (private; admin scope)",
    responses=error_responses(),
    **_PRIVATE,
)
async def batch_upsert(
    request: Request[Any, Any, Any],
    idempotency_key: Annotated[str | None, IDEMPOTENCY_DOC] = None,
    x_service_agent: Annotated[str | None, AGENT_DOC] = None,
) -> Response[UpsertResponse]:
    raw, data = await read_json(request)
    agent = bounded_header(request, AGENT_HEADER)
    body = parse_body(data, UpsertRequest)
    svc = services_of(request)
    prepared: list[Memory] = []

    def prepare(org_id: str) -> None:  # check and build every item, embed; no transaction yet
        prepared.extend(build_memories(body.items, org_id=org_id, agent_id=agent, now=utcnow()))
        embed_for_write(
            svc.memories.embeddings,
            list(
                dict.fromkeys(
                    m.text for m, item in zip(prepared, body.items, strict=True) if not item.negated
                )
            ),
        )

    def work(org_id: str) -> StoredResponse:
        outcomes = upsert_memories(
            svc.store,
            prepared,
            mode=body.upsert_conflicts,
            negated=[item.negated for item in body.items],
            now=utcnow(),
            embeddings=svc.memories.embeddings,
        )
        return ok_json(results(outcomes))

    return await run_write(request, raw, work, prepare=prepare, parsed=body)


@post(
    "/v0/extract",
    operation_id="extract",
    status_code=200,
    summary="Extract entities and facts from a text; stores nothing (private; admin scope)",
    responses=error_responses(400, 401, 403, 422, 429, 500),
    **_PRIVATE,
)
async def extract(request: Request[Any, Any, Any]) -> ExtractResult:
    _, data = await read_json(request)
    body = parse_body(data, ExtractRequest)
    check_ids(entity_id=body.entity_id, namespace=body.namespace)
    org_id = principal_of(request).org_id
    svc = services_of(request)

    def run() -> ExtractResult:
        now = utcnow()
        result = svc.extractor.extract(body.text, subject=subject_for(body.entity_id), reference_time=now)
        facts = preview_memories(
            result, org_id=org_id, timestamp=now, namespace=body.namespace, entity_id=body.entity_id, now=now
        )
        return ExtractResult(entities=list(result.entities), facts=facts, truncated=result.truncated)

    return await run_sync(run)


ROUTES = [batch_upsert, extract]
