"""Response records of POST /v0/context/assemble and POST /v0/recall, encoded by the server directly.

Optional parts (`facts_struct`, `matches`, `raw_memories`, `trace.timings`) are `UNSET` unless asked
for, so msgspec leaves them out of the JSON. `retrieval_summary`, `flags` and `request_id` sit at the
top level of the response.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from loci.wire.models import Memory
from loci.wire.presets import Weights
from loci.wire.results import Extracted


class TokenCounts(msgspec.Struct, kw_only=True):
    planned: int = 0  # tokens of everything selected before trimming (lines + summary)
    budget: int = 0
    dropped: int = 0  # tokens cut by the budget (dropped lines and truncated parts)
    used: int = 0  # tokens of the rendered context; always <= budget


class BudgetAction(msgspec.Struct, kw_only=True):
    action: str  # "drop" | "truncate" | "limit"
    memory_id: str | None = None
    notes: str | None = None


class FactStruct(msgspec.Struct, kw_only=True):
    memory_id: str
    type: str
    text: str
    subject: str
    predicate: str
    object_text: str | None = None
    object_num: float | None = None
    object_type: str | None = None
    unit: str | None = None
    keys: list[str] | None = None
    status: str | None = None
    confidence: float | None = None
    timestamp: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    score: float | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    provenance: dict[str, Any] | None = None


class ContextBlock(msgspec.Struct, kw_only=True):
    facts: list[str] = msgspec.field(default_factory=list)
    facts_struct: list[FactStruct] | UnsetType = UNSET
    recent_events: list[str] = msgspec.field(default_factory=list)
    summary: str = ""
    sources: list[str] = msgspec.field(default_factory=list)
    token_counts: TokenCounts = msgspec.field(default_factory=TokenCounts)
    budget_actions: list[BudgetAction] = msgspec.field(default_factory=list)


class ScoreComponent(msgspec.Struct, kw_only=True):
    raw: float
    norm: float
    weight: float
    contrib: float


class Match(msgspec.Struct, kw_only=True):
    memory_id: str
    type: str
    text: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    score: float
    #: per channel and boost; the contribs sum to `score` exactly (same order of addition)
    score_components: dict[str, ScoreComponent] = msgspec.field(default_factory=dict)
    reason: list[str] = msgspec.field(default_factory=list)
    timestamp: datetime | None = None


class CandidateCounts(msgspec.Struct, kw_only=True):
    semantic: int = 0
    bm25: int = 0
    graph: int = 0
    union: int = 0
    after_filters: int = 0


class DiversityActions(msgspec.Struct, kw_only=True):
    clamped_by_predicate: int = 0
    clamped_by_source: int = 0


class RetrievalSummary(msgspec.Struct, kw_only=True):
    weights_used: Weights
    normalization: str
    depth: int
    candidate_counts: CandidateCounts = msgspec.field(default_factory=CandidateCounts)
    diversity_actions: DiversityActions = msgspec.field(default_factory=DiversityActions)
    degraded: bool = False
    budget_cut_count: int | None = None
    preset: str = "balanced"
    top_k: int = 24
    recency_half_life_days: int = 45
    rerank: bool = False


class Flags(msgspec.Struct, kw_only=True):
    degraded: bool = False
    weights_renormalized: bool = False


class Cost(msgspec.Struct, kw_only=True):
    input_tokens: int = 0
    embedding: int = 0
    llm_tokens: int = 0
    retrieval_ops: int = 0


class Redaction(msgspec.Struct, kw_only=True):
    applied: bool = False
    rules: list[str] = msgspec.field(default_factory=list)
    #: placeholder -> original value; only with policy.egress_rehydration = allowed
    placeholders: dict[str, str] | UnsetType = UNSET


class StageTimings(msgspec.Struct, kw_only=True):
    """Milliseconds per stage of one call."""

    embed: float = 0.0
    channels: float = 0.0
    fuse: float = 0.0
    expand: float = 0.0  # conversation context: neighbours fetched, boosts, the second fusion
    budget: float = 0.0
    render: float = 0.0
    total: float = 0.0


class TraceSummary(msgspec.Struct, kw_only=True):
    origin: str = "extractive"
    tokens_out: int | None = None


class TraceBudget(msgspec.Struct, kw_only=True):
    origin: str = (
        "default"  # where the budget came from: budget.max_context_tokens | max_context_tokens | default
    )
    #: the estimate's fixed rate, or for a BPE tokenizer the rendered context's characters per token
    chars_per_token: float = 3.0
    method: str = ""  # how the budget is counted, in words
    tokenizer: str = "o200k_base"  # budget.tokenizer: o200k_base | cl100k_base | estimate


class TraceDebug(msgspec.Struct, kw_only=True):
    """Verbose fields, only with trace=true."""

    query: str = ""
    graph_seeds: list[str] = msgspec.field(default_factory=list)
    channels_skipped: list[str] = msgspec.field(default_factory=list)
    scope_size: int | None = None
    errors: list[str] = msgspec.field(default_factory=list)


class Trace(msgspec.Struct, kw_only=True):
    summary: TraceSummary = msgspec.field(default_factory=TraceSummary)
    budget: TraceBudget = msgspec.field(default_factory=TraceBudget)
    timings: StageTimings | UnsetType = UNSET
    debug: TraceDebug | UnsetType = UNSET


class AssembleResponse(msgspec.Struct, kw_only=True):
    context: ContextBlock
    trace: Trace
    extracted: Extracted = msgspec.field(default_factory=Extracted)
    matches: list[Match] | UnsetType = UNSET
    retrieval_summary: RetrievalSummary
    flags: Flags = msgspec.field(default_factory=Flags)
    cost: Cost = msgspec.field(default_factory=Cost)
    redaction: Redaction = msgspec.field(default_factory=Redaction)
    raw_memories: list[Memory] | UnsetType = UNSET
    request_id: str


class RecallResponse(msgspec.Struct, kw_only=True):
    matches: list[Match]
    retrieval_summary: RetrievalSummary
    flags: Flags = msgspec.field(default_factory=Flags)
    cost: Cost = msgspec.field(default_factory=Cost)
    redaction: Redaction = msgspec.field(default_factory=Redaction)
    trace: Trace | UnsetType = UNSET
    raw_memories: list[Memory] | UnsetType = UNSET
    request_id: str
