"""Resolve a request's retrieval options against its preset into the settings that run.

Order of precedence: an explicit request value, then the preset's value (`engine.retrieval.presets`), then the
default (the `balanced` preset). Weights: a key the request leaves out takes the preset's weight;
when the weights do not sum to 1 they are divided by their sum and `weights_renormalized` is set.

Channel depth: a preset's `top_k` is sized to fill large contexts. When the request leaves `top_k`
unset and says how many lines its context may show (assemble: `max_events + max_facts`), each channel
fetches `CANDIDATES_PER_LINE` per line instead, at least `MIN_TOP_K` and at most the preset's
`top_k`, and the conversation context expands from proportionally fewer anchors (`ANCHORS` at the
preset's depth). An explicit `top_k` always runs as given.
"""

from __future__ import annotations

import math

import msgspec

from engine.errors import InvalidInput
from engine.retrieval.normalize import get_normalizer
from engine.retrieval.options import RetrievalOptions
from engine.retrieval.presets import DEFAULT_PRESET, Weights, get_preset
from loci.wire.tuning import TUNING

SUM_TOLERANCE = 1e-9
CANDIDATES_PER_LINE = TUNING.candidates_per_line
SPEC_TOP_K = TUNING.spec_top_k
MIN_TOP_K = SPEC_TOP_K  # the floor of a fitted depth
ANCHORS = TUNING.anchors


class ResolvedRetrieval(msgspec.Struct, frozen=True, kw_only=True):
    preset: str
    weights: Weights
    weights_renormalized: bool
    normalization: str
    recency_half_life_days: int
    top_k: int
    depth: int
    rerank: bool
    rerank_lambda: float
    diversity: bool
    max_per_predicate: int
    max_per_source: int
    predicate_boosts: tuple[tuple[str, float], ...] = ()
    entity_boosts: tuple[str, ...] = ()
    type_boosts: tuple[tuple[str, float], ...] = ()
    neighbors: int = 0
    neighbor_weight: float = 0.0
    day_weight: float = 0.0
    opening_weight: float = 0.0
    context_max_chars: int = 0
    length_weight: float = 0.0
    time_weight: float = 0.0
    passage_weight: float = 0.0
    speaker_focus: float = 0.0
    anchors: int = ANCHORS


def renormalize(weights: Weights) -> tuple[Weights, bool]:
    """Weights scaled to sum to 1, and whether scaling was needed. All-zero weights are an error."""
    total = weights.total()
    if not math.isfinite(total) or total <= 0.0:
        raise InvalidInput("retrieval weights must have a positive sum", field="retrieval.weights")
    if abs(total - 1.0) <= SUM_TOLERANCE:
        return weights, False
    values = [w / total for w in weights.as_tuple()]
    return Weights(
        semantic=values[0],
        bm25=values[1],
        graph_prior=values[2],
        recency_decay=values[3],
        confidence=values[4],
    ), True


def fitted_depth(preset_top_k: int, lines: int) -> tuple[int, int]:
    """(top_k, anchors) for a context of at most `lines` lines, under a preset's `top_k`."""
    top_k = min(preset_top_k, max(MIN_TOP_K, CANDIDATES_PER_LINE * lines))
    return top_k, max(1, round(ANCHORS * top_k / preset_top_k))


def resolve(options: RetrievalOptions, *, lines: int | None = None) -> ResolvedRetrieval:
    """`lines`: the most lines the response may show (None: the preset's depth, see the module docstring)."""
    preset = get_preset(options.preset or DEFAULT_PRESET)
    get_normalizer(options.normalization)  # unknown names fail here too (defence in depth)
    base = preset.weights
    w = options.weights
    weights = base
    if w is not None:
        weights = Weights(
            semantic=base.semantic if w.semantic is None else w.semantic,
            bm25=base.bm25 if w.bm25 is None else w.bm25,
            graph_prior=base.graph_prior if w.graph_prior is None else w.graph_prior,
            recency_decay=base.recency_decay if w.recency_decay is None else w.recency_decay,
            confidence=base.confidence if w.confidence is None else w.confidence,
        )
    weights, renormalized = renormalize(weights)
    top_k, anchors = preset.top_k if options.top_k is None else options.top_k, ANCHORS
    if options.top_k is None and lines is not None:
        top_k, anchors = fitted_depth(preset.top_k, lines)
    return ResolvedRetrieval(
        preset=preset.name,
        weights=weights,
        weights_renormalized=renormalized,
        normalization=options.normalization,
        recency_half_life_days=(
            preset.recency_half_life_days
            if options.recency_half_life_days is None
            else options.recency_half_life_days
        ),
        top_k=top_k,
        depth=preset.depth if options.depth is None else options.depth,
        rerank=preset.rerank if options.rerank.enable is None else options.rerank.enable,
        rerank_lambda=preset.rerank_lambda if options.rerank.lambda_ is None else options.rerank.lambda_,
        diversity=options.diversity.enable,
        max_per_predicate=options.diversity.max_per_predicate,
        max_per_source=options.diversity.max_per_source,
        predicate_boosts=tuple(sorted(options.predicate_boosts.items())),
        entity_boosts=tuple(dict.fromkeys(options.entity_boosts)),
        type_boosts=preset.type_boosts,
        neighbors=preset.neighbors if options.expand.neighbors is None else options.expand.neighbors,
        neighbor_weight=(
            preset.neighbor_weight
            if options.expand.neighbor_weight is None
            else options.expand.neighbor_weight
        ),
        day_weight=preset.day_weight if options.expand.day_weight is None else options.expand.day_weight,
        opening_weight=(
            preset.opening_weight if options.expand.opening_weight is None else options.expand.opening_weight
        ),
        context_max_chars=(
            preset.context_max_chars if options.expand.max_chars is None else options.expand.max_chars
        ),
        length_weight=preset.length_weight if options.length_weight is None else options.length_weight,
        time_weight=preset.time_weight if options.time_weight is None else options.time_weight,
        passage_weight=preset.passage_weight if options.passage_weight is None else options.passage_weight,
        speaker_focus=preset.speaker_focus if options.speaker_focus is None else options.speaker_focus,
        anchors=anchors,
    )


def without_semantic(cfg: ResolvedRetrieval) -> ResolvedRetrieval:
    """The settings with the semantic channel dropped and the other weights renormalized (degraded)."""
    w = cfg.weights
    rest = Weights(
        semantic=0.0,
        bm25=w.bm25,
        graph_prior=w.graph_prior,
        recency_decay=w.recency_decay,
        confidence=w.confidence,
    )
    if rest.total() <= 0.0:
        rest = Weights(semantic=0.0, bm25=1.0, graph_prior=0.0, recency_decay=0.0, confidence=0.0)
    rest, changed = renormalize(rest)
    return msgspec.structs.replace(
        cfg, weights=rest, weights_renormalized=cfg.weights_renormalized or changed
    )
