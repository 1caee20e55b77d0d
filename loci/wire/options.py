"""Request records of POST /v0/context/assemble and POST /v0/recall, decoded by the server directly.

Limits are msgspec constraints, so a bad value is a validation error naming the field (the server
turns msgspec.ValidationError into a 422 whose `details.field` is the path, e.g. `$.retrieval.top_k`).
A field none of these records knows is refused the same way (`Object contains unknown field`), so a
misspelt option (`budget.max_tokens`) is a 422, never its default used in silence; the server drops
organization fields from the body before (they are ignored, as everywhere).
Retrieval knobs default to None meaning "the preset's value"; the documented defaults are those of the
`balanced` preset, read from `loci.wire.tuning` (`DEFAULTS`), the one home of every retrieval default.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from loci.wire.models import MAX_TEXT_LENGTH, EntityId, Namespace, SubjectId, TagList
from loci.wire.normalize import NormalizationName
from loci.wire.presets import PresetName
from loci.wire.tokens import DEFAULT_TOKENIZER, TokenizerName
from loci.wire.tuning import DEFAULTS, TUNING

TurnText = Annotated[str, Meta(max_length=MAX_TEXT_LENGTH, description=f"max {MAX_TEXT_LENGTH} characters")]
GoalText = Annotated[str, Meta(max_length=2000, description="max 2000 characters")]
SnippetText = Annotated[str, Meta(max_length=4000, description="max 4000 characters")]
BudgetTokens = Annotated[int, Meta(ge=256, le=8192, description="256 to 8192")]
TopK = Annotated[
    int,
    Meta(
        ge=1,
        le=100,
        description=f"1 to 100, candidates per channel; default {DEFAULTS.top_k} (preset), fitted to the "
        "lines the context may show when unset",
    ),
]
Depth = Annotated[int, Meta(ge=0, le=2, description=f"0 to 2; default {DEFAULTS.depth} (preset)")]
WeightValue = Annotated[float, Meta(ge=0.0, le=1000.0)]
#: the bounds of a 0..1 weight (each option adds its own description)
UNIT_INTERVAL = Meta(ge=0.0, le=1.0)
Count = Annotated[int, Meta(ge=0, le=1000)]
HalfLife = Annotated[
    int, Meta(ge=1, le=36500, description=f"days; default {DEFAULTS.recency_half_life_days} (preset)")
]
BoostValue = Annotated[float, Meta(ge=-10.0, le=10.0)]
IncludeName = Literal["facts", "recent_events", "summary", "sources"]
ALL_INCLUDES: tuple[IncludeName, ...] = ("facts", "recent_events", "summary", "sources")
DEFAULT_BUDGET = 1200
#: entries of retrieval.predicate_boosts and of retrieval.entity_boosts
MAX_BOOSTS = 64


class Budget(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    #: unset: the request's top-level `max_context_tokens`, else `DEFAULT_BUDGET`
    max_context_tokens: (
        Annotated[
            int,
            Meta(
                ge=256,
                le=8192,
                description=f"256 to 8192; default: the top-level max_context_tokens, else {DEFAULT_BUDGET}",
            ),
        ]
        | UnsetType
    ) = UNSET
    tokenizer: Annotated[
        TokenizerName,
        Meta(
            description=(
                "how the budget is counted: o200k_base (default; GPT-4o, GPT-4.1, o-series) or cl100k_base "
                "(GPT-4, GPT-3.5) count exact BPE tokens of each rendered line plus one per line for its newline; "
                "estimate counts ceil(ascii_chars/3) + non-ASCII characters per line, plus one"
            )
        ),
    ] = DEFAULT_TOKENIZER


class Policy(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pii_redaction: Literal["auto", "off"] = "auto"
    egress_rehydration: Literal["none", "allowed"] = "none"


class WeightsIn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Requested weights; a key left out takes the preset's weight. Renormalized when the sum is not 1."""

    semantic: Annotated[WeightValue, Meta(description=f"default {DEFAULTS.weights.semantic}")] | None = None
    bm25: Annotated[WeightValue, Meta(description=f"default {DEFAULTS.weights.bm25}")] | None = None
    graph_prior: (
        Annotated[WeightValue, Meta(description=f"default {DEFAULTS.weights.graph_prior}")] | None
    ) = None
    recency_decay: (
        Annotated[WeightValue, Meta(description=f"default {DEFAULTS.weights.recency_decay}")] | None
    ) = None
    confidence: Annotated[WeightValue, Meta(description=f"default {DEFAULTS.weights.confidence}")] | None = (
        None
    )


class Diversity(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    enable: bool = True
    max_per_predicate: Annotated[int, Meta(ge=1, le=1000)] = 3
    max_per_source: Annotated[int, Meta(ge=1, le=1000)] = 5


class Rerank(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    enable: bool | None = None  # None: the preset's (false for every shipped preset)
    lambda_: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "MMR's weight on relevance against redundancy (1: relevance only); "
                    f"default {DEFAULTS.rerank_lambda} (preset)"
                ),
            ),
        ]
        | None
    ) = msgspec.field(default=None, name="lambda")


class Expand(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Conversation context of strong candidates; None: the preset's value."""

    neighbors: (
        Annotated[
            int,
            Meta(
                ge=0,
                le=5,
                description=(
                    "events before and after each strong candidate (within one stretch of conversation) that join "
                    f"the candidates; 0 turns it off; default {DEFAULTS.neighbors} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    neighbor_weight: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "a neighbour's boost as a share of what the question matched in its strong candidate "
                    "(its score without the graph, recency and confidence columns); "
                    f"default {DEFAULTS.neighbor_weight} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    max_chars: (
        Annotated[
            int,
            Meta(
                ge=0,
                le=20000,
                description=(
                    "an event longer than this many characters takes no context boost; 0: no limit; "
                    f"default {DEFAULTS.context_max_chars} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    day_weight: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "an event's boost as a share of the best candidate score of its stretch of conversation; "
                    f"default {DEFAULTS.day_weight} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    opening_weight: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "the boost of an event that opens its stretch of conversation (no event within an hour before "
                    f"it; read off the neighbours' walk, so 0 neighbors turns it off); default {DEFAULTS.opening_weight} "
                    "(preset)"
                ),
            ),
        ]
        | None
    ) = None


#: every preset's channel weights, listed in the OpenAPI document on `preset` (the inspector reads them)
PRESET_WEIGHTS = {name: msgspec.to_builtins(p.weights) for name, p in TUNING.presets.items()}


class RetrievalOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    preset: (
        Annotated[
            PresetName,
            Meta(extra_json_schema={"x-preset-weights": PRESET_WEIGHTS}),
        ]
        | None
    ) = None  # None: balanced
    weights: WeightsIn | None = None
    normalization: NormalizationName = "minmax"
    recency_half_life_days: HalfLife | None = None
    top_k: TopK | None = None
    diversity: Diversity = msgspec.field(default_factory=Diversity)
    predicate_boosts: Annotated[
        dict[Annotated[str, Meta(max_length=128)], BoostValue], Meta(max_length=MAX_BOOSTS)
    ] = msgspec.field(default_factory=dict)
    entity_boosts: Annotated[list[Annotated[str, Meta(max_length=256)]], Meta(max_length=MAX_BOOSTS)] = (
        msgspec.field(default_factory=list)
    )
    depth: Depth | None = None
    rerank: Rerank = msgspec.field(default_factory=Rerank)
    expand: Expand = msgspec.field(default_factory=Expand)
    length_weight: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "the length prior: an event's score gains this x (ln of its length in characters, at most "
                    "200, - the mean of that over the event candidates), so of two equal matches the turn that "
                    f"says more ranks first; 0 turns it off; default {DEFAULTS.length_weight} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    time_weight: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "the time boost: when the turn (or goal) points to a time relative to `as_of` (else now), "
                    "such as '10 days ago', 'last Saturday', 'yesterday', 'last week' or 'in the past two "
                    "weeks', a memory whose time (valid_from, else timestamp) falls in that window gains "
                    f"this; 0 turns it off; default {DEFAULTS.time_weight} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    speaker_focus: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    "speaker focus: the events the other side of the question said lose this share of their "
                    "score: when the turn (or goal) names someone who speaks in the candidate events (a turn "
                    "saved as '<Name>: text'), the other speakers' events; when it asks in the first person "
                    "('I', 'my') and not of 'you', the assistant's ('assistant: text'); facts, notes and "
                    "documents are not touched; 0 turns it off; "
                    f"default {DEFAULTS.speaker_focus} (preset)"
                ),
            ),
        ]
        | None
    ) = None
    passage_weight: (
        Annotated[
            float,
            UNIT_INTERVAL,
            Meta(
                description=(
                    f"passages: a memory longer than {TUNING.passage_min_chars} characters is also matched "
                    "sentence by sentence, and its semantic similarity moves this share of the way to its "
                    "closest sentence's when that is closer and within "
                    f"{TUNING.passage_margin} of the query's best whole-text match (1: the closest "
                    "sentence's; 0 turns it off); "
                    f"default {DEFAULTS.passage_weight} (preset)"
                ),
            ),
        ]
        | None
    ) = None


class ReturnOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    include: Annotated[list[IncludeName], Meta(max_length=4)] = msgspec.field(
        default_factory=lambda: list(ALL_INCLUDES)
    )
    max_facts: Count = 12
    max_events: Count = 6
    include_scores: bool = False
    include_raw_memories: bool = False
    trace: bool = False
    include_structured_facts: bool = False
    include_raw_matches: bool = False


class SeedContext(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    memory_ids: Annotated[list[str], Meta(max_length=100)] = msgspec.field(default_factory=list)
    snippets: Annotated[list[SnippetText], Meta(max_length=50)] = msgspec.field(default_factory=list)


class IngestOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Parsed here; executed by the ingest path (extract -> supersede -> store) before retrieval."""

    extract: bool = True
    store_turn: Literal["none", "event", "note", "fact"] = "event"
    upsert_conflicts: Literal["off", "smart"] = "smart"
    #: who first-person statements ("I live in ...") are about; default: the request's entity_id as an
    #: `ent:` id. Facts stay in the request's entity scope either way.
    subject: SubjectId | None = None
    #: the tags of the memories the turn writes: the stored turn and the facts extracted from it
    tags: TagList = msgspec.field(default_factory=list)


class AssembleRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    entity_id: EntityId
    turn: TurnText
    namespace: Namespace = "default"
    goal: GoalText | None = None
    budget: Budget | None = None
    #: the budget when `budget.max_context_tokens` is not given (`budget.max_context_tokens` wins)
    max_context_tokens: BudgetTokens | None = None
    policy: Policy = msgspec.field(default_factory=Policy)
    retrieval: RetrievalOptions = msgspec.field(default_factory=RetrievalOptions)
    return_: ReturnOptions = msgspec.field(default_factory=ReturnOptions, name="return")
    seed_context: SeedContext = msgspec.field(default_factory=SeedContext)
    must_include: Annotated[list[str], Meta(max_length=100)] = msgspec.field(default_factory=list)
    ingest: IngestOptions = msgspec.field(default_factory=IngestOptions)
    #: reference time: recency is measured from it and only memories valid then are candidates
    as_of: datetime | None = None

    def tokenizer_name(self) -> TokenizerName:
        return self.budget.tokenizer if self.budget is not None else DEFAULT_TOKENIZER

    def budget_tokens(self) -> tuple[int, str]:
        """(budget, the field it came from: `budget.max_context_tokens`, else the top-level
        `max_context_tokens`, else `default`). A `budget` object that gives only a tokenizer keeps the
        top-level budget."""
        if self.budget is not None and not isinstance(self.budget.max_context_tokens, UnsetType):
            return self.budget.max_context_tokens, "budget.max_context_tokens"
        if self.max_context_tokens is not None:
            return self.max_context_tokens, "max_context_tokens"
        return DEFAULT_BUDGET, "default"


class RecallRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: TurnText
    entity_id: EntityId | None = None  # None: the whole namespace
    namespace: Namespace = "default"
    return_: ReturnOptions = msgspec.field(default_factory=ReturnOptions, name="return")
    limit: Annotated[int, Meta(ge=1, le=100, description="1 to 100, default 10")] = 10
    retrieval: RetrievalOptions = msgspec.field(default_factory=RetrievalOptions)
    policy: Policy = msgspec.field(default_factory=Policy)
    as_of: datetime | None = None
