"""Entry points of the read path: `assemble` (POST /v0/context/assemble) and `recall` (POST /v0/recall).

Both are pure functions of (store, embedding cache, request, ids, clock); the server decodes the
request Structs, calls one of these, and encodes the returned Struct. `run_assemble` / `run_recall`
also return the per-stage timings (embed, channels, fuse, budget, render, total; milliseconds) for
metrics and the benchmark; with `return.trace = true` they are in the response's `trace.timings` too.

Ingest (extract -> supersede -> store) is not run here: the caller runs it first when asked and puts
its outcome in `response.extracted` (empty otherwise).
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime

import msgspec

from engine.embed.cache import EmbeddingCache
from engine.extract.speaker import speaker_of as turn_speaker
from engine.memory_service import check_ids
from engine.retrieval import budget as budget_mod
from engine.retrieval import summary as summary_mod
from engine.retrieval import tokens
from engine.retrieval.channels import graph_seeds
from engine.retrieval.config import resolve
from engine.retrieval.fuse import reasons
from engine.retrieval.options import AssembleRequest, RecallRequest, ReturnOptions
from engine.retrieval.redaction_hook import NoRedaction, Redactor, RedactorFactory, no_redaction
from engine.retrieval.render import RenderItem, build_items, fact_struct, sections
from engine.retrieval.responses import (
    AssembleResponse,
    BudgetAction,
    ContextBlock,
    Flags,
    Match,
    RecallResponse,
    RetrievalSummary,
    StageTimings,
    TokenCounts,
    Trace,
    TraceBudget,
    TraceDebug,
    TraceSummary,
)
from engine.retrieval.retrieve import Retrieved, build_query, retrieve
from engine.storage.base import Scope, Store
from engine.storage.scope_filter import as_seen
from engine.timeutil import to_utc

QUERY_SEED_CHARS = 4000  # graph seeds are read from at most this many characters of the turn


class AssembleOutcome(msgspec.Struct, kw_only=True):
    response: AssembleResponse
    timings: StageTimings
    #: the response's redactor: what the caller adds to the response (the turn's `extracted`) goes
    #: through it too, so a value keeps one placeholder and `redaction` counts it
    redactor: Redactor = msgspec.field(default_factory=NoRedaction)


class RecallOutcome(msgspec.Struct, kw_only=True):
    response: RecallResponse
    timings: StageTimings


def _summary(r: Retrieved, budget_cuts: int | None) -> RetrievalSummary:
    return RetrievalSummary(
        weights_used=r.cfg.weights,
        normalization=r.cfg.normalization,
        depth=r.cfg.depth,
        candidate_counts=r.counts,
        diversity_actions=r.diversity,
        degraded=r.degraded,
        budget_cut_count=budget_cuts,
        preset=r.cfg.preset,
        top_k=r.cfg.top_k,
        recency_half_life_days=r.cfg.recency_half_life_days,
        rerank=r.cfg.rerank,
    )


def _match(r: Retrieved, mid: str, redactor: Redactor | None = None) -> Match:
    i = r.position[mid]
    memory = r.memories.get(mid)
    components = r.fused.components(i)
    text = memory.text if memory is not None else r.snippets[mid]
    metadata = dict(memory.metadata) if memory is not None else {}
    if redactor is not None:
        text = redactor.redact(text, memory)
        if memory is not None and metadata:  # it repeats what the text hides ("object_name")
            metadata = dict(
                redactor.redact_memory(msgspec.structs.replace(memory, text="", provenance={})).metadata
            )
    return Match(
        memory_id=mid,
        type=memory.type if memory is not None else "snippet",
        text=text,
        metadata=metadata,
        score=float(r.fused.score[i]),
        score_components=components,
        reason=reasons(r.fused, i, pinned=mid in r.pinned, seeded=mid in r.seeded),
        timestamp=memory.timestamp if memory is not None else None,
    )


def _shortlist(r: Retrieved, limit: int, shown: Collection[str] = ()) -> list[str]:
    """`matches`: the best `limit` of the ranking, plus every pinned, seeded, snippet and shown candidate."""
    out: list[str] = []
    for mid in r.ranked:
        if len(out) < limit or mid in r.pinned or mid in r.seeded or mid in r.snippets or mid in shown:
            out.append(mid)
    return out


def _chars_per_token(tok: tokens.Tokenizer, block: ContextBlock) -> float:
    """The estimate's fixed rate, or the rendered context's characters per token."""
    if tok.name == "estimate" or not block.token_counts.used:
        return tokens.CHARS_PER_TOKEN
    lines = [block.summary, *block.facts, *block.recent_events, *block.sources]
    chars = sum(len(line) + 1 for line in lines if line)
    return round(chars / block.token_counts.used, 2)


def _context_block(
    items: list[RenderItem],
    plan: budget_mod.BudgetPlan,
    pre_actions: list[BudgetAction],
    budget: int,
    tok: tokens.Tokenizer,
    *,
    with_summary: bool,
    overflow: list[RenderItem],
) -> ContextBlock:
    """The sections of the kept items, the summary of the rest (the items the budget dropped and those
    past the line limits), and their token counts."""
    facts, events, sources = sections(plan.kept)
    summary = ""
    if with_summary:
        shown = {it.id for it in plan.kept}
        rest = [it for it in items if it.id not in shown] + overflow
        summary = summary_mod.beyond(rest, budget_mod.summary_allowance(budget, plan.used), tok, plan.kept)
    used = budget_mod.context_tokens(facts, events, summary, sources, tok)
    if used > budget:  # cannot happen (fit + allowance); keep the invariant even if it did
        raise AssertionError(f"context of {used} tokens exceeds the budget of {budget}")
    return ContextBlock(
        facts=facts,
        recent_events=events,
        summary=summary,
        sources=sources,
        token_counts=TokenCounts(
            planned=plan.planned + tok.line_tokens(summary), budget=budget, dropped=plan.dropped, used=used
        ),
        budget_actions=[*pre_actions, *plan.actions],
    )


def _assemble_response(
    r: Retrieved,
    ret: ReturnOptions,
    block: ContextBlock,
    plan: budget_mod.BudgetPlan,
    *,
    scores: dict[str, float],
    redactor: Redactor,
    tok: tokens.Tokenizer,
    budget_origin: str,
    request_id: str,
) -> AssembleResponse:
    """The response around `block`, with the structured facts, matches and raw memories asked for."""
    kept_ids = [it.id for it in sorted(plan.kept, key=lambda it: it.rank)]
    if ret.include_structured_facts:
        block.facts_struct = [
            fact_struct(r.memories[mid], scores[mid] if ret.include_scores else None, redactor)
            for mid in kept_ids
            if mid in r.memories and r.memories[mid].type in ("fact", "profile")
        ]
    shortlist = _shortlist(r, r.cfg.top_k, {it.id for it in plan.kept})
    matches = [_match(r, mid, redactor) for mid in shortlist] if ret.include_raw_matches else None
    raw = (
        [redactor.redact_memory(r.memories[mid]) for mid in kept_ids if mid in r.memories]
        if ret.include_raw_memories
        else None
    )
    redaction = redactor.result()  # after every text of the response went through the redactor
    trace = Trace(
        summary=TraceSummary(origin=summary_mod.ORIGIN, tokens_out=tok.count(block.summary)),
        budget=TraceBudget(
            origin=budget_origin,
            chars_per_token=_chars_per_token(tok, block),
            method=tok.method,
            tokenizer=tok.name,
        ),
    )
    response = AssembleResponse(
        context=block,
        trace=trace,
        retrieval_summary=_summary(r, len(plan.actions)),
        flags=Flags(degraded=r.degraded, weights_renormalized=r.cfg.weights_renormalized),
        cost=r.cost,
        redaction=redaction,
        request_id=request_id,
    )
    if matches is not None:
        response.matches = matches
    if raw is not None:  # whole records, redacted under the policy like every other text
        response.raw_memories = raw
    return response


def _seen_at(r: Retrieved, scope: Scope) -> None:
    """The candidates as the reader knows them at `as_of` (`as_seen`): lines, structured facts and raw
    memories never show an end that came later."""
    if scope.as_of is not None:
        r.memories = {mid: as_seen(m, scope) for mid, m in r.memories.items()}


def _scope(
    org_id: str,
    agent_id: str | None,
    request: AssembleRequest | RecallRequest,
    now: datetime,
    *,
    expired: bool = False,
    within: Collection[str] | None = None,
) -> Scope:
    """The retrieval scope of a request: its namespace, entity and as_of, in UTC."""
    return Scope(
        org_id=org_id,
        namespace=request.namespace,
        entity_id=request.entity_id,
        agent_id=agent_id,
        as_of=to_utc(request.as_of) if request.as_of is not None else None,
        now=to_utc(now),
        expired=expired,
        memory_ids=frozenset(within) if within is not None else None,
    )


def run_assemble(
    store: Store,
    embeddings: EmbeddingCache | None,
    *,
    org_id: str,
    agent_id: str | None,
    request: AssembleRequest,
    request_id: str,
    now: datetime,
    redactor_factory: RedactorFactory = no_redaction,
    prefetch: Sequence[str] = (),
) -> AssembleOutcome:
    """The context for `request`; `prefetch` as in `retrieve` (the texts the turn will store)."""
    start = time.perf_counter()
    timings = StageTimings()
    cfg = resolve(request.retrieval, lines=request.return_.max_events + request.return_.max_facts)
    scope = _scope(org_id, agent_id, request, now)
    # a turn's label says who asks, not what about: "Alex: What's our dog called?" seeks no turn of Alex's
    asked = turn_speaker(request.turn).body
    query = build_query(asked, request.goal)
    seeds = graph_seeds(request.entity_id, cfg.entity_boosts, [asked[:QUERY_SEED_CHARS], request.goal or ""])
    r = retrieve(
        store,
        embeddings,
        scope,
        cfg,
        query=query,
        seeds=seeds,
        seed_ids=request.seed_context.memory_ids,
        snippets=request.seed_context.snippets,
        must_include=request.must_include,
        prefetch=prefetch,
        timings=timings,
    )
    _seen_at(r, scope)
    tok = tokens.get_tokenizer(request.tokenizer_name())
    r.cost.input_tokens = tok.count(request.turn) + tok.count(request.goal or "")

    # --- budget -----------------------------------------------------------------------------------
    t = time.perf_counter()
    ret = request.return_
    budget, budget_origin = request.budget_tokens()
    fused_scores = r.fused.score.tolist()
    scores = {mid: fused_scores[r.position[mid]] for mid in r.ranked}
    redactor = redactor_factory(request.policy)
    # the whole ranking may fill the context (top_k bounds each channel, max_facts/max_events the sections)
    items, pre_actions, overflow = build_items(
        r.ranked,
        scores,
        r.memories,
        r.snippets,
        include=ret.include,
        max_facts=ret.max_facts,
        max_events=ret.max_events,
        pinned=r.pinned,
        redactor=redactor,
        tokenizer=tok,
        passages=r.passages,
    )
    plan = budget_mod.fit(items, budget, tok)
    timings.budget = (time.perf_counter() - t) * 1000.0

    # --- render -----------------------------------------------------------------------------------
    t = time.perf_counter()
    block = _context_block(
        items, plan, pre_actions, budget, tok, with_summary="summary" in ret.include, overflow=overflow
    )
    response = _assemble_response(
        r,
        ret,
        block,
        plan,
        scores=scores,
        redactor=redactor,
        tok=tok,
        budget_origin=budget_origin,
        request_id=request_id,
    )
    timings.render = (time.perf_counter() - t) * 1000.0
    timings.total = (time.perf_counter() - start) * 1000.0
    if ret.trace:
        response.trace.timings = timings
        response.trace.debug = TraceDebug(
            query=query,
            graph_seeds=seeds,
            channels_skipped=r.channels_skipped,
            errors=r.errors,
            scope_size=store.search.scope_size(scope),
        )
    return AssembleOutcome(response=response, timings=timings, redactor=redactor)


def assemble(
    store: Store,
    embeddings: EmbeddingCache | None,
    *,
    org_id: str,
    agent_id: str | None,
    request: AssembleRequest,
    request_id: str,
    now: datetime,
    redactor_factory: RedactorFactory = no_redaction,
) -> AssembleResponse:
    return run_assemble(
        store,
        embeddings,
        org_id=org_id,
        agent_id=agent_id,
        request=request,
        request_id=request_id,
        now=now,
        redactor_factory=redactor_factory,
    ).response


def run_recall(
    store: Store,
    embeddings: EmbeddingCache | None,
    *,
    org_id: str,
    agent_id: str | None,
    request: RecallRequest,
    request_id: str,
    now: datetime,
    redactor_factory: RedactorFactory = no_redaction,
    expired: bool = False,
    within: Collection[str] | None = None,
    limit: int | None = None,
) -> RecallOutcome:
    """`expired`: memories past their valid_to are candidates too (mem0's search `show_expired`).
    `within`: only these memories are candidates (a selection made by rules the scope cannot state).
    `limit`: the matches wanted, in place of `request.limit`, for a caller the API's 100 does not bound
    (GET /v1/memories answers up to 200)."""
    check_ids(entity_id=request.entity_id, namespace=request.namespace)
    start = time.perf_counter()
    timings = StageTimings()
    wanted = request.limit if limit is None else limit
    cfg = resolve(request.retrieval)
    cfg = msgspec.structs.replace(cfg, top_k=max(cfg.top_k, wanted))
    scope = _scope(org_id, agent_id, request, now, expired=expired, within=within)
    query = build_query(request.query, None)
    seeds = graph_seeds(request.entity_id, cfg.entity_boosts, [request.query[:QUERY_SEED_CHARS]])
    r = retrieve(store, embeddings, scope, cfg, query=query, seeds=seeds, timings=timings)
    _seen_at(r, scope)
    r.cost.input_tokens = tokens.estimate(request.query)
    t = time.perf_counter()
    top = r.ranked[:wanted]
    redactor = redactor_factory(request.policy)
    matches = [_match(r, mid, redactor) for mid in top]
    raw = (
        [redactor.redact_memory(r.memories[mid]) for mid in top if mid in r.memories]
        if request.return_.include_raw_memories
        else None
    )
    response = RecallResponse(
        matches=matches,
        retrieval_summary=_summary(r, None),
        flags=Flags(degraded=r.degraded, weights_renormalized=r.cfg.weights_renormalized),
        cost=r.cost,
        redaction=redactor.result(),
        request_id=request_id,
    )
    if raw is not None:
        response.raw_memories = raw
    timings.render = (time.perf_counter() - t) * 1000.0
    timings.total = (time.perf_counter() - start) * 1000.0
    if request.return_.trace:
        response.trace = Trace(
            timings=timings,
            debug=TraceDebug(
                query=query, graph_seeds=seeds, channels_skipped=r.channels_skipped, errors=r.errors
            ),
        )
    return RecallOutcome(response=response, timings=timings)


def recall(
    store: Store,
    embeddings: EmbeddingCache | None,
    *,
    org_id: str,
    agent_id: str | None,
    request: RecallRequest,
    request_id: str,
    now: datetime,
    redactor_factory: RedactorFactory = no_redaction,
    expired: bool = False,
    within: Collection[str] | None = None,
    limit: int | None = None,
) -> RecallResponse:
    return run_recall(
        store,
        embeddings,
        org_id=org_id,
        agent_id=agent_id,
        request=request,
        request_id=request_id,
        now=now,
        redactor_factory=redactor_factory,
        expired=expired,
        within=within,
        limit=limit,
    ).response
