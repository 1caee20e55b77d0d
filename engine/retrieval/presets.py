"""Retrieval presets: named, documented data. A preset sets the channel weights and the retrieval knobs
a request leaves unset; anything the request sets explicitly (weights, top_k, depth, half-life, rerank)
wins over the preset. `balanced` holds the defaults.

| preset   | semantic | bm25 | graph_prior | recency_decay | confidence | top_k | depth | half-life | extra |
|----------|---------:|-----:|------------:|--------------:|-----------:|------:|------:|----------:|-------|
| balanced |     0.32 | 0.47 |        0.16 |          0.00 |       0.05 |   100 |     2 |   45 days | chosen on held-out LoCoMo conversations |
| fast     |     0.55 | 0.30 |        0.00 |          0.10 |       0.05 |    12 |     0 |   45 days | no graph channel, no rerank |
| factual  |     0.25 | 0.50 |        0.10 |          0.00 |       0.15 |   100 |     1 |   90 days | fact/profile +0.05 boost (facts first) |
| recent   |     0.25 | 0.30 |        0.10 |          0.30 |       0.05 |   100 |     1 |    7 days | event +0.05 boost |
| graphy   |     0.25 | 0.30 |        0.35 |          0.05 |       0.05 |   100 |     2 |   45 days | more graph prior, full depth |

Every preset's weights sum to 1. Every preset expands candidates with their conversation context:
2 neighbouring events each side (weight 0.35) and a same-day boost (0.2); `fast` keeps 1 neighbour.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from engine.errors import UnknownName
from engine.retrieval.rerank import LAMBDA

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.presets import (  # isort: skip
    PresetName as PresetName,
    Weights as Weights,
)

CHANNELS: tuple[str, ...] = ("semantic", "bm25", "graph_prior", "recency_decay", "confidence")


class Preset(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str
    weights: Weights = Weights()
    top_k: int = 100
    depth: int = 2
    recency_half_life_days: int = 45
    rerank: bool = False
    rerank_lambda: float = LAMBDA  # MMR's relevance weight, when rerank is on
    #: additive score boosts by memory type, e.g. (("fact", 0.05),)
    type_boosts: tuple[tuple[str, float], ...] = ()
    #: conversation context (`engine.retrieval.expand`): events up to `neighbors` places before and
    #: after each strong candidate join the candidates with `neighbor_weight` x that candidate's score;
    #: events get `day_weight` x the best candidate score of their day
    neighbors: int = 2
    neighbor_weight: float = 0.35
    day_weight: float = 0.2
    #: the length prior (`engine.retrieval.fuse`): an event gains `length_weight` x (ln of its length,
    #: capped, - the mean of that over the event candidates): of two equal matches the turn that says more leads
    length_weight: float = 0.06


PRESETS: Mapping[str, Preset] = {
    "balanced": Preset(name="balanced", description="the defaults: every channel, depth 2"),
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

DEFAULT_PRESET = "balanced"


def get_preset(name: str) -> Preset:
    preset = PRESETS.get(name)
    if preset is None:
        raise UnknownName("preset", name, PRESETS, field="retrieval.preset")
    return preset
