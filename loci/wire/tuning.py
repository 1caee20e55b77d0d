"""Every default of retrieval in one typed structure, `TUNING`: the presets (channel weights, depths,
half-life, boosts, conversation context) and the constants the ranking reads. The engine reads it, and
the request records' descriptions (`loci.wire.options`) print its values, so the documented defaults
are the ones that run.

| preset   | semantic | bm25 | graph_prior | recency_decay | confidence | top_k | depth | half-life | extra |
|----------|---------:|-----:|------------:|--------------:|-----------:|------:|------:|----------:|-------|
| balanced |     0.45 | 0.25 |        0.15 |          0.10 |       0.05 |   100 |     2 |   45 days | the API's documented weights |
| fast     |     0.55 | 0.30 |        0.00 |          0.10 |       0.05 |    12 |     0 |   45 days | no graph channel, one neighbour |
| factual  |     0.25 | 0.50 |        0.10 |          0.00 |       0.15 |   100 |     1 |   90 days | fact/profile +0.05 boost (facts first) |
| recent   |     0.25 | 0.30 |        0.10 |          0.30 |       0.05 |   100 |     1 |    7 days | event +0.05 boost |
| graphy   |     0.25 | 0.30 |        0.35 |          0.05 |       0.05 |   100 |     2 |   45 days | more graph prior, full depth |

With no `preset` and no `weights`, a request runs `balanced`: the weights the API documents. Every
preset's weights sum to 1. Every preset expands candidates with their conversation context (2
neighbouring events each side, weight 0.35, and a same-stretch boost of 0.2; `fast` keeps one
neighbour). A memory of the time a question points to ("10 days ago", "last Saturday") gains 0.2 in
every preset, and the similarity of a memory longer than 200 characters moves 0.7 of the way to its
closest sentence's when that sentence is among the question's best matches. What each preset gains or
loses per dataset: docs/retrieval.md.
"""

from __future__ import annotations

from typing import Literal

import msgspec

PresetName = Literal["balanced", "fast", "factual", "recent", "graphy"]


class Weights(msgspec.Struct, frozen=True, kw_only=True):
    """Channel weights; the defaults are the API's documented ones (the `balanced` preset)."""

    semantic: float = 0.45
    bm25: float = 0.25
    graph_prior: float = 0.15
    recency_decay: float = 0.1
    confidence: float = 0.05

    def as_tuple(self) -> tuple[float, float, float, float, float]:
        return (self.semantic, self.bm25, self.graph_prior, self.recency_decay, self.confidence)

    def total(self) -> float:
        return float(sum(self.as_tuple()))


class Preset(msgspec.Struct, frozen=True, kw_only=True):
    """The knobs a request leaves unset take their preset's value."""

    name: str
    description: str
    weights: Weights = Weights()
    top_k: int = 100
    depth: int = 2
    recency_half_life_days: int = 45
    rerank: bool = False
    rerank_lambda: float = 0.7  # MMR's relevance weight, when rerank is on
    #: additive score boosts by memory type, e.g. (("fact", 0.05),)
    type_boosts: tuple[tuple[str, float], ...] = ()
    #: conversation context (`engine.retrieval.expand`): events up to `neighbors` places before and
    #: after each strong candidate join the candidates with `neighbor_weight` x what the question matched
    #: in that candidate (its score without the graph, recency and confidence columns);
    #: events get `day_weight` x the best candidate score of their stretch of conversation
    neighbors: int = 2
    neighbor_weight: float = 0.35
    day_weight: float = 0.2
    #: an event that opens its stretch of conversation (no event before it within `stretch_gap_minutes`,
    #: as the neighbours' walk shows it) gains this: a conversation's first turn says what it is about
    opening_weight: float = 0.1
    #: an event longer than this takes no context boost (0: no limit): the context boosts bring in the turns
    #: around an answer, which are worth their tokens only when they are short
    context_max_chars: int = 500
    #: the length prior (`engine.retrieval.fuse`): an event gains `length_weight` x (ln of its length,
    #: capped, - the mean of that over the event candidates): of two equal matches the turn that says more
    #: leads; off by default: it cost evidence on LoCoMo and gained on no development set (docs/evaluation.md)
    length_weight: float = 0.0
    #: the time a question points to ("10 days ago", "last Saturday", "in the past two weeks";
    #: `engine.retrieval.timeframe`): a memory of that time gains `time_weight` (`engine.retrieval.fuse`)
    time_weight: float = 0.2
    #: a long memory's semantic similarity moves this share of the way to its best passage's, when that
    #: is closer (`engine.retrieval.channels.passage_lift`): one sentence of a long turn can answer
    passage_weight: float = 0.7
    #: the turns of the other side of the question lose this share of their score (`engine.retrieval.fuse`):
    #: of the other speakers when it names one who speaks in the candidates, of the assistant when it asks
    #: about the asker ("my", "I"; no "you"); the answer is in what that person said, and the other side's
    #: replies around it take the context's room
    speaker_focus: float = 0.2


class Tuning(msgspec.Struct, frozen=True, kw_only=True):
    presets: dict[str, Preset]
    default_preset: PresetName = "balanced"
    #: the spec's default `retrieval.top_k`, and the floor of a fitted channel depth
    spec_top_k: int = 24
    #: hits per channel for each line a context may show, when the request sets no `top_k`
    candidates_per_line: int = 4
    #: events whose neighbours join the candidates, at the preset's top_k
    anchors: int = 80
    #: consecutive events at most this far apart are one stretch of conversation (the neighbours' walk)
    stretch_gap_minutes: int = 60
    #: two event candidates of one day further apart than this are two conversations (the same-stretch boost)
    stretch_split_minutes: int = 120
    #: a memory's confidence when it states none
    default_confidence: float = 0.5
    entity_boost: float = 0.1  # a memory touching one of `retrieval.entity_boosts`
    seed_boost: float = 0.2  # a `seed_context.memory_ids` memory
    snippet_score: float = 0.5  # a `seed_context.snippets` text
    #: the length prior counts characters up to this: past a couple of sentences length says no more
    length_cap_chars: int = 200
    #: a name that speaks at least this share of a scope's events says who, not what: the semantic
    #: channel embeds the query without it
    speaker_share: float = 0.1
    #: a memory text longer than this also has a vector per passage (sentence; `engine.embed.passages`)
    passage_min_chars: int = 200
    #: a passage lifts its memory only when it is at most this much less similar to the query than the
    #: best whole-text match: a chatty turn's one loosely related sentence is not worth its tokens
    passage_margin: float = 0.15
    #: passages embedded per memory text at most: past this many sentences a passage is a run of them
    #: (`engine.embed.passages`), so a passage of a 20,000-character document stays a few hundred characters
    max_passages: int = 128
    #: the graph channel's seeds per query
    max_seeds: int = 16
    #: places MMR chooses when rerank is on; the rest follow by relevance
    rerank_picks: int = 100


TUNING = Tuning(
    presets={
        "balanced": Preset(
            name="balanced", description="the API's documented weights: every channel, depth 2"
        ),
        "fast": Preset(
            name="fast",
            description="no graph channel (depth 0, weight 0), fewer candidates per channel, no rerank",
            weights=Weights(semantic=0.55, bm25=0.30, graph_prior=0.0, recency_decay=0.10, confidence=0.05),
            top_k=12,
            depth=0,
            neighbors=1,
        ),
        "factual": Preset(
            name="factual",
            description="more keyword and confidence weight, longer half-life, facts and profiles first",
            weights=Weights(semantic=0.25, bm25=0.5, graph_prior=0.10, recency_decay=0.0, confidence=0.15),
            depth=1,
            recency_half_life_days=90,
            type_boosts=(("fact", 0.05), ("profile", 0.05)),
        ),
        "recent": Preset(
            name="recent",
            description="more recency weight with a 7-day half-life; events lifted",
            weights=Weights(semantic=0.25, bm25=0.30, graph_prior=0.10, recency_decay=0.30, confidence=0.05),
            depth=1,
            recency_half_life_days=7,
            type_boosts=(("event", 0.05),),
        ),
        "graphy": Preset(
            name="graphy",
            description="more graph prior at full depth 2",
            weights=Weights(semantic=0.25, bm25=0.30, graph_prior=0.35, recency_decay=0.05, confidence=0.05),
            depth=2,
        ),
    }
)
DEFAULTS: Preset = TUNING.presets[TUNING.default_preset]
