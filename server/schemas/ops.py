"""Wire records of the operations endpoints: POST /v0/summarize, POST /v0/prune (its body is the
engine's `PruneRequest`) and GET /v0/observability/events.

Constraints are `msgspec.Meta` on the fields, so validation (422 naming the field) and the OpenAPI
document come from one source.
"""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.ops import (  # isort: skip
    DEFAULT_SUMMARY_TOKENS as DEFAULT_SUMMARY_TOKENS,
    EVENTS_DEFAULT_LIMIT as EVENTS_DEFAULT_LIMIT,
    EVENTS_MAX_LIMIT as EVENTS_MAX_LIMIT,
    EventItem as EventItem,
    EventList as EventList,
    MAX_SUMMARY_TOKENS as MAX_SUMMARY_TOKENS,
    MIN_SUMMARY_TOKENS as MIN_SUMMARY_TOKENS,
    PruneRequest as PruneRequest,
    PruneResult as PruneResult,
    SummarizeRequest as SummarizeRequest,
    SummarizeResponse as SummarizeResponse,
    SummaryTokens as SummaryTokens,
)
