"""Wire records of the operations endpoints: POST /v0/summarize, POST /v0/prune (its body is the
engine's `PruneRequest`) and GET /v0/observability/events.

Constraints are `msgspec.Meta` on the fields, so validation (422 naming the field) and the OpenAPI
document come from one source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from loci.wire.models import EntityId, Namespace
from loci.wire.prune import PruneRequest, PruneResult
from loci.wire.redact import RedactionPolicy, RedactionReport
from loci.wire.summarize import Origin
from loci.wire.tokens import DEFAULT_TOKENIZER, TokenizerName

__all__ = [
    "EVENTS_MAX_LIMIT",
    "EventItem",
    "EventList",
    "MAX_SUMMARY_TOKENS",
    "MIN_SUMMARY_TOKENS",
    "PruneRequest",
    "PruneResult",
    "SummarizeRequest",
    "SummarizeResponse",
]

MIN_SUMMARY_TOKENS = 32  # below this not even one fact line fits
MAX_SUMMARY_TOKENS = 4096  # a summary is a digest, not a dump: assemble covers larger contexts
DEFAULT_SUMMARY_TOKENS = 256
EVENTS_DEFAULT_LIMIT = 100
EVENTS_MAX_LIMIT = 500

SummaryTokens = Annotated[
    int,
    Meta(
        ge=MIN_SUMMARY_TOKENS,
        le=MAX_SUMMARY_TOKENS,
        description=f"token budget of the summary, {MIN_SUMMARY_TOKENS} to {MAX_SUMMARY_TOKENS}",
    ),
]


class SummarizeRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """POST /v0/summarize: what Loci knows about one entity, within `max_tokens`."""

    entity_id: EntityId
    namespace: Namespace = "default"
    max_tokens: SummaryTokens = DEFAULT_SUMMARY_TOKENS
    tokenizer: Annotated[
        TokenizerName,
        Meta(description="how max_tokens and token_count are counted, as assemble's budget.tokenizer"),
    ] = DEFAULT_TOKENIZER
    policy: RedactionPolicy = msgspec.field(default_factory=RedactionPolicy)


class SummarizeResponse(msgspec.Struct, kw_only=True):
    summary: str  # "" when nothing is known about the entity
    sources: list[str]  # memory ids whose lines made it into the summary, in order
    origin: Origin  # "extractive" or "llm"
    token_count: int  # tokens of `summary` in the request's tokenizer, <= max_tokens
    redaction: RedactionReport  # applied, rules[, placeholders with egress_rehydration=allowed]


class EventItem(msgspec.Struct, kw_only=True):
    """One entry of the org's event log."""

    event_id: str
    type: str  # memory.created, memory.updated, memory.superseded, memory.archived, ...
    at: datetime
    memory_id: str | None
    entity_id: str | None
    data: dict[str, Any]


class EventList(msgspec.Struct, kw_only=True):
    items: list[EventItem]
    # Where to resume: the position after the last item. null when `items` is empty (you are at the
    # end: keep the cursor you sent and poll again later, or use the text/event-stream form).
    next_cursor: str | None = None
