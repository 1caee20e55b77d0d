"""One agent turn, read top to bottom: retrieve -> plan the writes -> commit -> record the event.

    prepared = prepare_assemble(engine, org_id=..., agent_id=..., request=..., request_id=..., now=...)
    response = commit_assemble(engine, prepared)        # inside the caller's transaction, if any
    response = assemble_turn(engine, ...)               # both, for callers without an idempotency unit

`prepare_assemble` runs everything slow or that may call out, outside any transaction: retrieval
(which so sees the state BEFORE this turn's writes), extraction (rules, or the LLM) and the embedding
of every text about to be stored. `commit_assemble` writes the turn, its facts with supersession, their
vectors and the `context.assembled` event in one transaction (joining the caller's, e.g. the server's
Idempotency-Key record); a turn that writes nothing only logs its event (on a server, in a batch written
off the request path: `engine.deferred_events`). POST /v0/context/assemble, the MCP tools (through it) and the
eval harness's agent-loop replay all run these two functions; nothing else writes a turn.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from engine.deferred_events import DeferredEvents
from engine.embed.cache import EmbeddingCache
from engine.extract.base import Extractor
from engine.ids import event_id
from engine.memory_service import check_ids, check_labels
from engine.models import Event
from engine.retrieval import pipeline
from engine.retrieval.options import AssembleRequest
from engine.retrieval.redaction_hook import NoRedaction, Redactor, RedactorFactory, no_redaction
from engine.retrieval.responses import AssembleResponse, StageTimings
from engine.storage.base import Store
from engine.write.turns import TurnPlan, commit_turn, embed_for_write, plan_turn


class Engine(msgspec.Struct, kw_only=True):
    """What a turn needs: the store, the embedding cache (None: no semantic channel, no vectors), the
    fact extractor (None: no extraction) and where a read's `context.assembled` goes (None: appended
    to the store at once; a server batches them off the request path)."""

    store: Store
    embeddings: EmbeddingCache | None
    extractor: Extractor | None
    read_events: DeferredEvents | None = None


class PreparedAssemble(msgspec.Struct, kw_only=True):
    """Everything `commit_assemble` needs, built without writing."""

    org_id: str
    agent_id: str | None
    entity_id: str
    namespace: str
    request_id: str
    now: datetime
    response: AssembleResponse
    timings: StageTimings
    plan: TurnPlan
    #: the texts to store have vectors (False: the embedder failed; stored without, flags.degraded)
    embedded: bool
    #: the response's redactor (the request's policy), for `extracted`
    redactor: Redactor = msgspec.field(default_factory=NoRedaction)


def writes_of(request: AssembleRequest) -> bool:
    """Whether an assemble may write (it then needs the `write` scope as well as `read`)."""
    return request.ingest.store_turn != "none" or request.ingest.extract


def prepare_assemble(
    engine: Engine,
    *,
    org_id: str,
    agent_id: str | None,
    request: AssembleRequest,
    request_id: str,
    now: datetime,
    redactor_factory: RedactorFactory = no_redaction,
) -> PreparedAssemble:
    """Extract and build the turn's writes, retrieve the context (the query embedded in one pass with
    the texts to store), embed those texts (cached by then); write nothing."""
    ingest = request.ingest
    check_ids(entity_id=request.entity_id, namespace=request.namespace)
    check_labels(ingest.tags, prefix="ingest.")
    plan = plan_turn(
        engine.extractor,
        request.turn,
        org_id=org_id,
        entity_id=request.entity_id,
        namespace=request.namespace,
        agent_id=agent_id,
        timestamp=request.as_of if request.as_of is not None else now,  # stored in UTC; read in its own day
        now=now,
        store_turn=ingest.store_turn,
        extract=ingest.extract,
        mode=ingest.upsert_conflicts,
        provenance={"request_id": request_id},
        subject=ingest.subject,
        tags=ingest.tags,
    )
    outcome = pipeline.run_assemble(
        engine.store,
        engine.embeddings,
        org_id=org_id,
        agent_id=agent_id,
        request=request,
        request_id=request_id,
        now=now,
        redactor_factory=redactor_factory,
        prefetch=plan.texts(),
    )
    return PreparedAssemble(
        org_id=org_id,
        agent_id=agent_id,
        entity_id=request.entity_id,
        namespace=request.namespace,
        request_id=request_id,
        now=now,
        response=outcome.response,
        timings=outcome.timings,
        plan=plan,
        embedded=embed_for_write(engine.embeddings, plan.texts()),
        redactor=outcome.redactor,
    )


def commit_assemble(engine: Engine, prepared: PreparedAssemble) -> AssembleResponse:
    """Store the turn and its facts (with their vectors) and the `context.assembled` event in one
    transaction that joins the caller's, and fill `extracted`. A turn that writes nothing only logs
    its event: to `engine.read_events` when set (a batch written later), else to the store at once."""
    response = prepared.response
    plan = prepared.plan
    if not plan.writes_anything:
        response.extracted.entities = list(plan.extraction.entities)
        response.extracted.truncated = plan.truncated
        response.extracted.facts_left_out = plan.facts_left_out
        _settle(response, prepared)
        if engine.read_events is not None:
            engine.read_events.add(_assembled(prepared))
        else:  # a read's log entry: it need not wait for the disk
            engine.store.append_events([_assembled(prepared)], durable=False)
        return response
    with engine.store.transaction():
        response.extracted = commit_turn(
            engine.store, plan, now=prepared.now, embeddings=engine.embeddings
        ).extracted
        _settle(response, prepared)
        engine.store.append_events([_assembled(prepared)], durable=False)
    return response


def _settle(response: AssembleResponse, prepared: PreparedAssemble) -> None:
    """`extracted` redacted under the request's policy like the rest of the response (and counted in
    `redaction`), the extraction's cost and whether anything degraded, into the response."""
    redactor = prepared.redactor
    extracted = response.extracted
    extracted.facts = [redactor.redact_memory(m) for m in extracted.facts]
    extracted.entities = [
        e if e.name is None else msgspec.structs.replace(e, name=redactor.redact(e.name, None))
        for e in extracted.entities
    ]
    response.redaction = redactor.result()
    extraction = prepared.plan.extraction
    response.cost.llm_tokens += extraction.llm_tokens
    response.flags.degraded = response.flags.degraded or extraction.degraded or not prepared.embedded


def _assembled(prepared: PreparedAssemble) -> Event:
    """The turn's `context.assembled` log entry."""
    response = prepared.response
    return Event(
        event_id=event_id(),
        org_id=prepared.org_id,
        type="context.assembled",
        at=prepared.now,
        entity_id=prepared.entity_id,
        data={
            "namespace": prepared.namespace,
            "request_id": prepared.request_id,
            "agent_id": prepared.agent_id,
            "facts": len(response.context.facts),
            "upserts": len(response.extracted.upserts),
            "degraded": response.flags.degraded,
        },
    )


def assemble_turn(
    engine: Engine,
    *,
    org_id: str,
    agent_id: str | None,
    request: AssembleRequest,
    request_id: str,
    now: datetime,
    redactor_factory: RedactorFactory = no_redaction,
) -> PreparedAssemble:
    """`prepare_assemble` then `commit_assemble`: one agent turn for a caller without its own
    transaction (the eval harness, notebooks). The committed response is `.response`."""
    prepared = prepare_assemble(
        engine,
        org_id=org_id,
        agent_id=agent_id,
        request=request,
        request_id=request_id,
        now=now,
        redactor_factory=redactor_factory,
    )
    commit_assemble(engine, prepared)
    return prepared
