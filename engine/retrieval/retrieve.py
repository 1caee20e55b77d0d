"""Shared front half of assemble and recall: embed -> channels -> union -> fuse -> diversify -> rerank.

Candidates are the union of the channels' hits (top_k each), the newest events (when recency has
weight), seed_context.memory_ids, seed snippets (pseudo ids `snippet:<n>`) and must_include ids.
Seeds and pinned ids are kept only when they pass the scope's org, namespace, archived and validity
rules (their entity and agent are not checked: the caller named them explicitly).
If the embedder fails (or none is configured) the semantic channel is dropped, the other weights are
renormalized and the result is marked degraded.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

from engine.bounded import BoundedMap
from engine.embed.cache import Begun, EmbeddingCache, EmbedStats
from engine.embed.passages import passages
from engine.errors import Unavailable
from engine.models import Memory, text_hash
from engine.retrieval import rerank, timeframe
from engine.retrieval.channels import (
    NAME_SHARE,
    ChannelHits,
    add_semantic,
    graph_and_recent,
    keyword_channel,
    passage_lift,
    passage_rows,
    query_names,
    semantic_query,
)
from engine.retrieval.config import ResolvedRetrieval, without_semantic
from engine.retrieval.diversity import diversify
from engine.retrieval.expand import Context, Sides, context_boosts, speaker_hits, speakers, spoken_by_others
from engine.retrieval.fuse import SCORE_DECIMALS, Fused, fuse, ranking
from engine.retrieval.responses import CandidateCounts, Cost, DiversityActions, StageTimings
from engine.storage.base import Scope, Store, Vector
from engine.storage.scope_filter import in_scope

QUERY_MAX_CHARS = 4000


class _NameHints:
    """Whether each name was left out of the semantic query the last time its scope (else its
    namespace) was asked about it: the guess of the text to embed before the keyword statement has
    counted the speakers. A wrong guess costs one more embedding, never another answer."""

    def __init__(self, size: int = 8192) -> None:
        self._seen: BoundedMap[tuple[Any, ...], bool] = BoundedMap(size)

    @staticmethod
    def _keys(scope: Scope, name: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        space = (scope.org_id, scope.namespace, name)
        return (*space, scope.entity_id, scope.agent_id), space

    def record(self, scope: Scope, names: Sequence[str], left_out: Collection[str]) -> None:
        for name in names:
            for key in self._keys(scope, name):
                self._seen.put(key, name in left_out)

    def guess(self, scope: Scope, names: Sequence[str]) -> set[str] | None:
        """The names to leave out, or None when a name has no hint."""
        left_out: set[str] = set()
        for name in names:
            own, space = self._keys(scope, name)
            hint = self._seen.get(own)
            if hint is None:
                hint = self._seen.get(space)
            if hint is None:
                return None
            if hint:
                left_out.add(name)
        return left_out


_HINTS: weakref.WeakKeyDictionary[object, _NameHints] = weakref.WeakKeyDictionary()
_HINTS_LOCK = threading.Lock()


def _hints(store: Store) -> _NameHints:
    """The hints of `store`'s search backend (its own speakers)."""
    with _HINTS_LOCK:
        found = _HINTS.get(store.search)
        if found is None:
            found = _HINTS[store.search] = _NameHints()
        return found


def _semantic_text(store: Store, scope: Scope, query: str, names: Sequence[str]) -> str:
    """The query without the names (`query_names`) of the scope's speakers (`channels.semantic_query`).
    Asked after the keyword channel, whose statement a database store counts the names in."""
    if not names:
        return query
    try:
        shares = store.search.speaker_shares(scope, names)
    except Unavailable:
        return query
    left_out = {n for n, s in zip(names, shares, strict=True) if s >= NAME_SHARE}
    if store.search.capabilities.server_side:  # only a database server's requests read the hints
        _hints(store).record(scope, names, left_out)
    return semantic_query(query, left_out)


def _guessed_text(store: Store, scope: Scope, query: str, names: Sequence[str]) -> str:
    """The text the semantic query is guessed to be before the scope's speakers are known: the one the
    last requests of the scope (else its namespace) point to (`_NameHints`), else the query as it is,
    what a scope whose speakers these names are not needs; a wrong guess embeds once more (`_picked`)."""
    return semantic_query(query, _hints(store).guess(scope, names) or set())


def _start_embedding(
    encoder: EmbeddingCache,
    store: Store,
    scope: Scope,
    query: str,
    names: Sequence[str],
    stats: EmbedStats,
    prefetch: Sequence[str],
) -> tuple[Begun, str | None]:
    """The query's pass (with `prefetch`) begun, and the text guessed for it (None: the text is known)."""
    server_side = store.search.capabilities.server_side
    guess = _guessed_text(store, scope, query, names) if server_side else None
    text = guess if guess is not None else _semantic_text(store, scope, query, names)
    return encoder.begin([text, *prefetch], stats=stats, threaded=server_side), guess


def _picked(
    vectors: list[Vector],
    guess: str | None,
    embeddings: EmbeddingCache,
    store: Store,
    scope: Scope,
    query: str,
    names: Sequence[str],
    stats: EmbedStats,
) -> Vector:
    """The query's vector: `vectors[0]`, of `guess` (or of the query itself when nothing was guessed),
    unless the guess was not the text the counts want, which then embeds."""
    if guess is None:
        return vectors[0]
    wanted = _semantic_text(store, scope, query, names)
    if wanted == guess:
        return vectors[0]
    return embeddings.embed([wanted], persist=False, stats=stats)[0]


def build_query(turn: str, goal: str | None) -> str:
    """The query text of the channels: the goal (if any) joined with the turn, capped."""
    text = f"{goal}\n{turn}" if goal else turn
    return text.strip()[:QUERY_MAX_CHARS]


class Retrieved(msgspec.Struct, kw_only=True):
    cfg: ResolvedRetrieval
    fused: Fused
    ranked: list[str]  # after diversity and rerank, best first
    position: dict[str, int]  # memory id -> row of `fused`
    memories: dict[str, Memory]
    snippets: dict[str, str]
    pinned: frozenset[str]
    seeded: frozenset[str]
    counts: CandidateCounts
    diversity: DiversityActions
    cost: Cost
    degraded: bool
    channels_skipped: list[str]
    errors: list[str]
    passages: dict[str, str] = msgspec.field(default_factory=dict)  # see `ChannelHits.passage`


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _meanwhile(
    store: Store,
    scope: Scope,
    hits: ChannelHits,
    cost: Cost,
    embeddings: EmbeddingCache,
    passage_weight: float,
) -> dict[str, Memory]:
    """While the query's pass computes: the memories of the keyword and graph hits, and the stored
    vectors of their passages (`passage_lift` then finds them held)."""
    early = list(dict.fromkeys(h.memory_id for h in (*hits.bm25, *hits.graph)))
    if not early:
        return {}
    cost.retrieval_ops += 1
    known = {m.memory_id: m for m in store.get_memories(scope.org_id, early)}
    if passage_weight > 0:
        _, calls = passage_rows(embeddings, [m.text for m in known.values() if passages(m.text)])
        cost.retrieval_ops += calls
    return known


def _union(
    store: Store,
    scope: Scope,
    hits: ChannelHits,
    *,
    seed_ids: Sequence[str],
    snippets: Sequence[str],
    must_include: Sequence[str],
    cost: Cost,
    known: Mapping[str, Memory],
) -> tuple[list[str], dict[str, Memory], dict[str, str], frozenset[str], frozenset[str]]:
    """(candidate ids, their memories, snippet pseudo id -> text, pinned ids, seeded ids): the channels'
    hits and the newest events first, then the explicit ids that pass the loose scope, then snippets.
    `known`: memories already fetched (while the query embedded), not fetched again."""
    memories: dict[str, Memory] = {m.memory_id: m for m in hits.recent}
    ids: list[str] = []
    for h in (*hits.semantic, *hits.bm25, *hits.graph):
        ids.append(h.memory_id)
    ids.extend(memories)
    explicit = list(dict.fromkeys((*seed_ids, *must_include)))
    channel_ids = list(dict.fromkeys(ids))
    to_fetch = [mid for mid in dict.fromkeys((*channel_ids, *explicit)) if mid not in memories]
    rest = [mid for mid in to_fetch if mid not in known]
    fetched = {m.memory_id: m for m in store.get_memories(scope.org_id, rest)} if rest else {}
    cost.retrieval_ops += 1 if rest else 0
    for mid in to_fetch:
        if (got := known.get(mid) or fetched.get(mid)) is not None:
            memories[mid] = got
    loose = msgspec.structs.replace(scope, entity_id=None, agent_id=None, memory_ids=None)
    allowed_explicit = {mid for mid in explicit if mid in memories and in_scope(memories[mid], loose)}
    # a write that committed between a channel's query and this fetch (a value superseded, a memory
    # archived) is seen here: the record as fetched decides; an open, live record needs no second look
    union = [
        mid
        for mid in channel_ids
        if (got := memories.get(mid)) is not None
        and (
            (got.valid_to is None and not got.archived and got.status != "superseded") or in_scope(got, scope)
        )
    ]
    kept = set(union)
    ended = [
        got for mid in channel_ids if mid not in kept and (got := memories.get(mid)) is not None and got.keys
    ]
    if ended:
        union.extend(_successors(store, scope, ended, memories, kept, cost))
    in_channels = set(channel_ids)
    union.extend(mid for mid in explicit if mid in allowed_explicit and mid not in in_channels)
    snippet_map = {f"snippet:{i + 1}": s for i, s in enumerate(snippets) if s.strip()}
    union.extend(snippet_map)
    pinned = frozenset(mid for mid in must_include if mid in allowed_explicit)
    seeded = frozenset(mid for mid in seed_ids if mid in allowed_explicit)
    return union, memories, snippet_map, pinned, seeded


def _successors(
    store: Store,
    scope: Scope,
    ended: Sequence[Memory],
    memories: dict[str, Memory],
    kept: set[str],
    cost: Cost,
) -> list[str]:
    """The values that hold now in the keys of `ended` (facts a channel found that a write ended before
    their fetch), added to `memories`: the read sees the value that replaced one, never no value."""
    found: list[str] = []
    for key in dict.fromkeys(k for m in ended for k in m.keys or ()):
        cost.retrieval_ops += 1
        for m in store.find_by_key(scope.org_id, scope.namespace, key):
            if m.memory_id not in kept and in_scope(m, scope):
                memories.setdefault(m.memory_id, m)
                kept.add(m.memory_id)
                found.append(m.memory_id)
    return found


def _diversify(
    ranked: list[str], memories: dict[str, Memory], cfg: ResolvedRetrieval, pinned: frozenset[str]
) -> tuple[list[str], DiversityActions]:
    result = diversify(
        ranked,
        memories,
        max_per_predicate=cfg.max_per_predicate,
        max_per_source=cfg.max_per_source,
        pinned=pinned,
    )
    actions = DiversityActions(
        clamped_by_predicate=result.clamped_by_predicate, clamped_by_source=result.clamped_by_source
    )
    return result.kept, actions


def _rerank(
    embeddings: EmbeddingCache,
    ranked: list[str],
    memories: dict[str, Memory],
    fused: Fused,
    position: dict[str, int],
    cost: Cost,
    lam: float,
) -> list[str]:
    """MMR with relevance weight `lam` over the ranking, with the stored embeddings of the candidates'
    texts (`rerank.PICKS` places chosen, the rest by score)."""
    wanted = {mid: text_hash(memories[mid].text) for mid in ranked if mid in memories}
    found = embeddings.stored(list(set(wanted.values())))
    cost.retrieval_ops += 1
    vectors = [found.get(wanted[mid]) if mid in wanted else None for mid in ranked]
    scores = np.asarray([fused.score[position[mid]] for mid in ranked], dtype=np.float64)
    # scores equal to the ranking's precision tie: MMR's first pick among them is the ranking's
    scores = np.round(scores, SCORE_DECIMALS)
    return [ranked[i] for i in rerank.mmr(scores, vectors, lam=lam, picks=rerank.PICKS)]


def _fused_again(
    store: Store,
    scope: Scope,
    cfg: ResolvedRetrieval,
    fused: Fused,
    fused_of: Callable[..., Fused],
    memories: dict[str, Memory],
    hits: ChannelHits,
    seeds: Sequence[str],
    sides: Sides,
    query: str,
    cost: Cost,
    timings: StageTimings,
) -> Fused:
    """The first fusion with the conversation context's neighbours and boosts (`expand.context_boosts`)
    and the speaker focus; itself when neither applies. `sides`: the first fusion's events by speaker."""
    ids = fused.ids
    context: Context | None = None
    if cfg.neighbors > 0 or cfg.day_weight > 0:
        t = time.perf_counter()
        context = context_boosts(store, scope, cfg, ids, fused, memories)
        cost.retrieval_ops += context.ops
        if context.added and (cfg.weights.graph_prior > 0 or cfg.speaker_focus > 0):
            added = speakers(context.added, memories, seeds)
            sides = sides.extended(added)
            if cfg.weights.graph_prior > 0:
                # a neighbour spoken by a seed entity gets the speaker's prior like any other candidate
                hits.graph = speaker_hits(added.named, hits.graph)
        ids = [*ids, *context.added]
        timings.expand = _ms(t)
    t = time.perf_counter()
    others = spoken_by_others(sides, ids, memories, query) if cfg.speaker_focus > 0 else frozenset()
    if context is not None or others:
        fused = fused_of(
            ids, context=context.boosts if context is not None else None, reuse=fused, others=others
        )
    timings.fuse += _ms(t)
    return fused


def retrieve(
    store: Store,
    embeddings: EmbeddingCache | None,
    scope: Scope,
    cfg: ResolvedRetrieval,
    *,
    query: str,
    seeds: Sequence[str],
    seed_ids: Sequence[str] = (),
    snippets: Sequence[str] = (),
    must_include: Sequence[str] = (),
    prefetch: Sequence[str] = (),
    timings: StageTimings,
) -> Retrieved:
    """`prefetch`: texts the caller embeds next (a turn about to be stored), embedded in the query's
    forward pass, which costs little more for a few texts than for one."""
    cost = Cost()
    errors: list[str] = []
    degraded = False

    # --- embed the query and run the channels --------------------------------------------------------
    # The semantic query leaves out the scope's speakers' names, which the keyword channel's search
    # counts on a database server. In process the index counts them at once, so the pass starts on the
    # right text and the keyword and graph channels run while it computes (`EmbeddingCache.begin`). On a
    # database server the pass runs while the database runs the channels: it starts at once on the
    # text the scope's last requests point to, else on the query as it is, and the keyword channel's
    # counts say whether that was the text (`_guessed_text`); if not, the right one embeds after it.
    # `timings.embed` runs to the vector's arrival; `timings.channels` from the start of the channels
    # to the union.
    t = time.perf_counter()
    stats = EmbedStats()
    pending: Begun | None = None
    hits = ChannelHits()
    wants_semantic = cfg.weights.semantic > 0 and bool(query)
    if wants_semantic and embeddings is None:
        degraded = True
        errors.append("semantic: no embedder configured")
        cfg = without_semantic(cfg)
    encoder = embeddings if wants_semantic else None
    names = query_names(query) if encoder is not None else []
    guess: str | None = None
    if encoder is not None:
        pending, guess = _start_embedding(encoder, store, scope, query, names, stats, prefetch)
    keyword_channel(hits, store, scope, cfg, query=query, speakers=names)
    graph_and_recent(hits, store, scope, cfg, seeds=seeds)
    known: dict[str, Memory] = {}
    if pending is not None and encoder is not None and pending.beside():
        known = _meanwhile(store, scope, hits, cost, encoder, cfg.passage_weight)
    qvec: Vector | None = None
    if pending is not None and encoder is not None:
        try:
            qvec = _picked(pending.result(), guess, encoder, store, scope, query, names, stats)
        except Unavailable as exc:
            degraded = True
            errors.append(f"semantic: {exc.message}")
            cfg = without_semantic(cfg)
        cost.embedding += stats.calls
    timings.embed = _ms(t)
    model = embeddings.model if embeddings is not None else None
    add_semantic(hits, store, scope, cfg, query_vector=qvec, model=model)
    if hits.degraded and not degraded:
        degraded = True
    errors.extend(hits.errors)
    cost.retrieval_ops += hits.ops
    union, memories, snippet_map, pinned, seeded = _union(
        store,
        scope,
        hits,
        seed_ids=seed_ids,
        snippets=snippets,
        must_include=must_include,
        cost=cost,
        known=known,
    )
    cost.retrieval_ops += passage_lift(hits, union, memories, embeddings, qvec, cfg.passage_weight)
    timings.channels = _ms(t)

    # --- fuse, expand with conversation context, fuse again, diversify, rerank ----------------------
    t = time.perf_counter()
    reference = scope.as_of if scope.as_of is not None else scope.now
    window = timeframe.window(query, reference) if cfg.time_weight > 0 else None
    # who said each event: the speaker's graph hits and the speaker focus read it
    by_speaker = cfg.weights.graph_prior > 0 or cfg.speaker_focus > 0
    sides = speakers(union, memories, seeds) if by_speaker else Sides([], [])
    if cfg.weights.graph_prior > 0:
        hits.graph = speaker_hits(sides.named, hits.graph)
    # every fusion of this request: the same settings (`hits` as they are when it runs)
    fused_of = functools.partial(
        fuse,
        memories=memories,
        hits=hits,
        cfg=cfg,
        reference=reference,
        seeded=seeded,
        snippets=frozenset(snippet_map),
        window=window,
    )
    fused = fused_of(union)
    timings.fuse = _ms(t)
    fused = _fused_again(
        store, scope, cfg, fused, fused_of, memories, hits, seeds, sides, query, cost, timings
    )
    union = fused.ids
    t = time.perf_counter()
    order = ranking(fused)
    ranked = [union[int(i)] for i in order]
    div = DiversityActions()
    if cfg.diversity:
        ranked, div = _diversify(ranked, memories, cfg, pinned)
    position = {mid: i for i, mid in enumerate(union)}
    if cfg.rerank and embeddings is not None and not degraded and len(ranked) > 1:
        ranked = _rerank(embeddings, ranked, memories, fused, position, cost, cfg.rerank_lambda)
    timings.fuse += _ms(t)

    counts = CandidateCounts(
        semantic=len(hits.semantic),
        bm25=len(hits.bm25),
        graph=len(hits.graph),
        union=len(union),
        after_filters=len(ranked),
    )
    return Retrieved(
        cfg=cfg,
        fused=fused,
        ranked=ranked,
        position=position,
        memories=memories,
        snippets=snippet_map,
        pinned=pinned,
        seeded=seeded,
        counts=counts,
        diversity=div,
        cost=cost,
        degraded=degraded,
        channels_skipped=hits.skipped,
        errors=errors,
        passages=hits.passage,
    )
