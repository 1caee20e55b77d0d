"""Request records of POST /v0/context/assemble and POST /v0/recall, decoded by the server directly.

Limits are msgspec constraints, so a bad value is a validation error naming the field (the server
turns msgspec.ValidationError into a 422 whose `details.field` is the path, e.g. `$.retrieval.top_k`).
Retrieval knobs default to None meaning "the preset's value" (see `engine.retrieval.presets`); the documented
defaults are those of the `balanced` preset.
"""

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.options import (  # isort: skip
    ALL_INCLUDES as ALL_INCLUDES,
    AssembleRequest as AssembleRequest,
    BoostValue as BoostValue,
    Budget as Budget,
    BudgetTokens as BudgetTokens,
    Count as Count,
    DEFAULT_BUDGET as DEFAULT_BUDGET,
    Depth as Depth,
    Diversity as Diversity,
    Expand as Expand,
    GoalText as GoalText,
    HalfLife as HalfLife,
    IncludeName as IncludeName,
    IngestOptions as IngestOptions,
    Policy as Policy,
    RecallRequest as RecallRequest,
    Rerank as Rerank,
    RetrievalOptions as RetrievalOptions,
    ReturnOptions as ReturnOptions,
    SeedContext as SeedContext,
    SnippetText as SnippetText,
    TopK as TopK,
    TurnText as TurnText,
    WeightValue as WeightValue,
    WeightsIn as WeightsIn,
)
