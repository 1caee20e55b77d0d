"""Response records of POST /v0/context/assemble and POST /v0/recall, encoded by the server directly.

Optional parts (`facts_struct`, `matches`, `raw_memories`, `trace.timings`) are `UNSET` unless asked
for, so msgspec leaves them out of the JSON. `retrieval_summary`, `flags` and `request_id` sit at the
top level of the response.
"""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.responses import (  # isort: skip
    AssembleResponse as AssembleResponse,
    BudgetAction as BudgetAction,
    CandidateCounts as CandidateCounts,
    ContextBlock as ContextBlock,
    Cost as Cost,
    DiversityActions as DiversityActions,
    FactStruct as FactStruct,
    Flags as Flags,
    Match as Match,
    RecallResponse as RecallResponse,
    Redaction as Redaction,
    RetrievalSummary as RetrievalSummary,
    ScoreComponent as ScoreComponent,
    StageTimings as StageTimings,
    TokenCounts as TokenCounts,
    Trace as Trace,
    TraceBudget as TraceBudget,
    TraceDebug as TraceDebug,
    TraceSummary as TraceSummary,
)
