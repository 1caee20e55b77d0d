"""Fusion: per candidate `score = sum_i(weight_i * norm_i) + boosts`.

Channels (in this order): semantic, bm25, graph_prior, recency_decay, confidence.
- semantic, bm25, graph_prior: raw scores of the channel's hits are normalized with the chosen
  normalizer over those hits only; a candidate the channel did not return has raw 0 and norm 0
  (zscore: min(0, lowest z) so a miss never beats a hit).
- recency_decay: raw = 0.5 ** (age_days / half_life_days), age measured from `as_of` (or now) back to
  the memory's `valid_from` (or `timestamp`), never negative. Already in (0, 1]: norm = raw.
- confidence: raw = memory.confidence, or `DEFAULT_CONFIDENCE` (0.5) when null. norm = raw.
Boosts (added after the weighted sum, each its own score component, only when non-zero):
`predicate_boost` (retrieval.predicate_boosts[predicate]), `entity_boost` (+`ENTITY_BOOST` when the
memory touches one of retrieval.entity_boosts), `type_boost` (the preset's type boosts), `seed_boost`
(+`SEED_BOOST` for seed_context.memory_ids), `time_boost` (+`time_weight` for a memory held from within
the time the question points to, `engine.retrieval.timeframe`), and the conversation-context boosts
`neighbor_boost`, `day_boost` and `opening_boost` computed by `engine.retrieval.expand` from a first
fusion (never lifting an event above a memory of another type, not extracted from a turn, that beats it
without them),
and the `length_prior` of events: `length_weight x (ln(characters, at most LENGTH_CAP_CHARS) - the mean
of that over the event candidates)`, so among turns that match alike the one that says more leads (a
short turn is mostly acknowledgement; zero mean, so events as a whole are not lifted above other types).
Last, `speaker_focus` (negative): an event the other side of the question said
(`engine.retrieval.expand.spoken_by_others`) loses `speaker_focus` x its score so far.
A seed snippet has only `seed_snippet` = `SNIPPET_SCORE`.

The score is accumulated left to right in float64 in the same order as the components are listed,
so `sum(c.contrib for c in components.values()) == score` exactly. Vectorized over candidates.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from datetime import datetime

import msgspec
import numpy as np
import numpy.typing as npt

from engine.models import Memory
from engine.retrieval.channels import ChannelHits
from engine.retrieval.config import ResolvedRetrieval
from engine.retrieval.normalize import get_normalizer
from engine.retrieval.presets import CHANNELS
from engine.retrieval.responses import ScoreComponent
from engine.storage.base import Hit
from engine.storage.scope_filter import memory_entities
from engine.timeutil import to_micros
from loci.wire.tuning import TUNING

DEFAULT_CONFIDENCE = TUNING.default_confidence
ENTITY_BOOST = TUNING.entity_boost
SEED_BOOST = TUNING.seed_boost
SNIPPET_SCORE = TUNING.snippet_score
#: uncapped, the length prior would lift long assistant replies over the short user turn that states a value
LENGTH_CAP_CHARS = TUNING.length_cap_chars
BOOSTS: tuple[str, ...] = (
    "predicate_boost",
    "entity_boost",
    "type_boost",
    "seed_boost",
    "seed_snippet",
    "time_boost",
    "neighbor_boost",
    "day_boost",
    "opening_boost",
    "length_prior",
    "speaker_focus",
)
# the columns of `Fused.raw`/`norm`/`contrib` (CHANNELS order; the first three are also `Fused.hit`'s)
SEMANTIC, BM25, GRAPH, RECENCY, CONFIDENCE = range(len(CHANNELS))
SEARCHED = (SEMANTIC, BM25, GRAPH)  # the channels that return hits; the others are priors
# the columns of `Fused.boosts` (BOOSTS order)
PREDICATE, ENTITY, TYPE, SEED, SNIPPET, TIME, NEIGHBOR, DAY, OPENING, LENGTH, FOCUS = range(len(BOOSTS))
#: the conversation-context boosts (`engine.retrieval.expand`), capped together (`_cap_context_boosts`)
CONTEXT = slice(NEIGHBOR, OPENING + 1)
#: the boosts a request or preset gives a memory itself (what reusing a first fusion keeps)
OWN_BOOSTS = slice(PREDICATE, NEIGHBOR)
_DAY_US = 86_400_000_000

F64 = npt.NDArray[np.float64]


class Fused(msgspec.Struct, kw_only=True):
    ids: list[str]
    raw: F64  # (n, 5) in CHANNELS order
    norm: F64  # (n, 5)
    weights: F64  # (5,)
    contrib: F64  # (n, 5)
    boosts: F64  # (n, len(BOOSTS))
    score: F64  # (n,)
    hit: npt.NDArray[np.bool_]  # (n, 3): returned by semantic / bm25 / graph
    log_chars: F64  # (n,): events' ln(characters, capped), NaN for the others

    def components(self, i: int) -> dict[str, ScoreComponent]:
        out: dict[str, ScoreComponent] = {}
        for j, name in enumerate(CHANNELS):
            out[name] = ScoreComponent(
                raw=float(self.raw[i, j]),
                norm=float(self.norm[i, j]),
                weight=float(self.weights[j]),
                contrib=float(self.contrib[i, j]),
            )
        for j, name in enumerate(BOOSTS):
            b = float(self.boosts[i, j])
            if b != 0.0:
                out[name] = ScoreComponent(raw=b, norm=1.0, weight=b, contrib=b)
        return out


def _channel(
    ids_index: Mapping[str, int], hits: Sequence[Hit], n: int, normalization: str
) -> tuple[F64, F64, npt.NDArray[np.bool_]]:
    raw = np.zeros(n, dtype=np.float64)
    norm = np.zeros(n, dtype=np.float64)
    mask = np.zeros(n, dtype=bool)
    rows: list[int] = []
    vals: list[float] = []
    seen: set[int] = set()  # a candidate's first hit counts
    for h in hits:
        i = ids_index.get(h.memory_id)
        if i is not None and i not in seen:
            seen.add(i)
            rows.append(i)
            vals.append(float(h.raw))
    if rows:
        idx = np.asarray(rows, dtype=np.intp)
        mask[idx] = True
        r = np.asarray(vals, dtype=np.float64)
        z = get_normalizer(normalization)(r)
        raw[idx] = r
        norm[idx] = z
        floor = min(0.0, float(z.min()))
        if floor < 0.0:
            norm[~mask] = floor
    return raw, norm, mask


def _channels(
    ids: Sequence[str], hits: ChannelHits, normalization: str
) -> tuple[F64, F64, npt.NDArray[np.bool_]]:
    """(raw, norm, hit) of the semantic, bm25 and graph columns: each channel normalized over its hits."""
    n = len(ids)
    index = {mid: i for i, mid in enumerate(ids)}
    raw = np.zeros((n, 5), dtype=np.float64)
    norm = np.zeros((n, 5), dtype=np.float64)
    hit = np.zeros((n, 3), dtype=bool)
    for j, channel_hits in zip(SEARCHED, (hits.semantic, hits.bm25, hits.graph), strict=True):
        raw[:, j], norm[:, j], hit[:, j] = _channel(index, channel_hits, n, normalization)
    return raw, norm, hit


def _priors_and_boosts(
    ids: Sequence[str],
    memories: Mapping[str, Memory],
    cfg: ResolvedRetrieval,
    *,
    reference: datetime,
    seeded: frozenset[str],
    snippets: frozenset[str],
    window: tuple[int, int] | None,
) -> tuple[F64, F64, npt.NDArray[np.bool_], F64, F64]:
    """Per candidate: age in days, confidence, whether it is a memory (snippets have no priors), its own
    boosts (`OWN_BOOSTS`), and ln(characters) for the length prior (see `_log_chars`)."""
    n = len(ids)
    ref_us = to_micros(reference)
    # per-candidate values gathered in Python lists, one array each at the end (numpy item writes are slow)
    ages = [0.0] * n
    conf = [0.0] * n
    real = [False] * n
    chars = [0] * n
    pred_boost = dict(cfg.predicate_boosts)
    type_boost = dict(cfg.type_boosts)
    ent_boost = frozenset(cfg.entity_boosts)
    boosts = np.zeros((n, len(BOOSTS)), dtype=np.float64)
    for i, mid in enumerate(ids):
        if mid in snippets:
            boosts[i, SNIPPET] = SNIPPET_SCORE
            continue
        m = memories[mid]
        real[i] = True
        held_us = to_micros(m.holds_from)
        ages[i] = max(0, ref_us - held_us) / _DAY_US
        if window is not None and window[0] <= held_us < window[1]:
            boosts[i, TIME] = cfg.time_weight
        conf[i] = DEFAULT_CONFIDENCE if m.confidence is None else m.confidence
        if m.type == "event":
            chars[i] = min(LENGTH_CAP_CHARS, max(1, len(m.text)))
        if m.predicate is not None and m.predicate in pred_boost:
            boosts[i, PREDICATE] = pred_boost[m.predicate]
        if ent_boost and any(e in ent_boost for e in memory_entities(m)):
            boosts[i, ENTITY] = ENTITY_BOOST
        if m.type in type_boost:
            boosts[i, TYPE] = type_boost[m.type]
        if mid in seeded:
            boosts[i, SEED] = SEED_BOOST
    return (
        np.asarray(ages, dtype=np.float64),
        np.asarray(conf, dtype=np.float64),
        np.asarray(real, dtype=bool),
        boosts,
        _log_chars(chars),
    )


def _log_chars(chars: Sequence[int]) -> F64:
    """ln(characters, capped at LENGTH_CAP_CHARS) of the event candidates (0 for the others: NaN)."""
    with np.errstate(divide="ignore"):
        logs = np.log(np.asarray(chars, dtype=np.float64))
    logs[np.isneginf(logs)] = np.nan
    return logs


def _length_prior(log_chars: F64, weight: float) -> F64 | None:
    """The length prior of every candidate (0 for all but events), or None when it is off."""
    if weight <= 0.0:
        return None
    events = ~np.isnan(log_chars)
    if int(events.sum()) < 2:
        return None
    logs = log_chars[events]
    out = np.zeros(log_chars.shape[0], dtype=np.float64)
    out[events] = weight * (logs - logs.mean())
    return out


def _score(contrib: F64, boosts: F64) -> F64:
    """Channel contributions, then boosts, added left to right (the order `Fused.components` lists)."""
    score = np.zeros(contrib.shape[0], dtype=np.float64)
    for j in range(contrib.shape[1]):
        score = score + contrib[:, j]
    for j in range(boosts.shape[1]):
        col = boosts[:, j]
        if col.any():
            # add only where non-zero: a zero component is not listed, and x + 0.0 == x anyway
            score = score + col
    return score


def _recency(ages: F64, cfg: ResolvedRetrieval) -> F64:
    """The recency prior of candidates `ages` days old: half per half-life."""
    return np.power(0.5, ages / float(cfg.recency_half_life_days))


def _fused(
    ids: Sequence[str],
    raw: F64,
    norm: F64,
    weights: F64,
    boosts: F64,
    hit: npt.NDArray[np.bool_],
    log_chars: F64,
) -> Fused:
    """The fusion of these normalized values: contributions and scores derived from them."""
    contrib = norm * weights
    return Fused(
        ids=list(ids),
        raw=raw,
        norm=norm,
        weights=weights,
        contrib=contrib,
        boosts=boosts,
        score=_score(contrib, boosts),
        hit=hit,
        log_chars=log_chars,
    )


def fuse(
    ids: Sequence[str],
    memories: Mapping[str, Memory],
    hits: ChannelHits,
    cfg: ResolvedRetrieval,
    *,
    reference: datetime,
    seeded: frozenset[str] = frozenset(),
    snippets: frozenset[str] = frozenset(),
    context: Mapping[str, tuple[float, float, float]] | None = None,
    reuse: Fused | None = None,
    window: tuple[int, int] | None = None,
    others: frozenset[str] = frozenset(),
) -> Fused:
    """The fusion of `ids`. `others`: the events the other side of the question said
    (`engine.retrieval.expand.spoken_by_others`); each loses `cfg.speaker_focus` of its score, last, as
    `speaker_focus`. `window`: [start, end) in microseconds of the time the question points to
    (`engine.retrieval.timeframe`); a memory held from within it takes `time_boost`. `context`: memory
    id -> (neighbor_boost, day_boost, opening_boost) from `engine.retrieval.expand`. `reuse`: an earlier fusion of a
    prefix of `ids` under the same settings, whose rows are taken instead of computed again (the result
    is the same to the last bit); `hits` may have gained hits of the new candidates since (a neighbour
    spoken by a seed entity is a graph hit)."""
    kept = len(reuse.ids) if reuse is not None and _extends(reuse, ids, snippets) else 0
    fresh = ids[kept:]
    ages, conf, real_fresh, own, fresh_log_chars = _priors_and_boosts(
        fresh,
        memories,
        cfg,
        reference=reference,
        seeded=seeded,
        snippets=snippets,
        window=window if cfg.time_weight > 0 else None,
    )
    raw, norm, hit = _searched(ids, hits, cfg.normalization, reuse if kept else None)
    real = np.asarray([mid not in snippets for mid in ids], dtype=bool)
    if kept and reuse is not None:
        raw[:kept, RECENCY:], norm[:kept, RECENCY:] = reuse.raw[:, RECENCY:], reuse.norm[:, RECENCY:]
    raw[kept:, RECENCY] = norm[kept:, RECENCY] = np.where(real_fresh, _recency(ages, cfg), 0.0)
    raw[kept:, CONFIDENCE] = norm[kept:, CONFIDENCE] = conf
    if not real.all():  # snippets are not in the channels: no norm floor for them
        norm[~real, SEMANTIC : GRAPH + 1] = 0.0
    boosts = np.zeros((len(ids), len(BOOSTS)), dtype=np.float64)
    if kept and reuse is not None:
        boosts[:kept, OWN_BOOSTS] = reuse.boosts[:, OWN_BOOSTS]
    boosts[kept:, OWN_BOOSTS] = own[:, OWN_BOOSTS]
    for i, mid in enumerate(ids):
        if context and mid in context:
            boosts[i, CONTEXT] = context[mid]
    log_chars = (
        np.concatenate((reuse.log_chars, fresh_log_chars)) if kept and reuse is not None else fresh_log_chars
    )
    length = _length_prior(log_chars, cfg.length_weight)  # its mean moves with every event candidate
    if length is not None:
        boosts[:, LENGTH] = length
    weights = np.asarray(cfg.weights.as_tuple(), dtype=np.float64)
    if context:
        _cap_context_boosts(ids, memories, _score(norm * weights, boosts), boosts)
    if others and cfg.speaker_focus > 0:
        rows = np.asarray([i for i, mid in enumerate(ids) if mid in others], dtype=np.intp)
        if rows.size:
            boosts[rows, FOCUS] = -cfg.speaker_focus * _score(norm * weights, boosts)[rows]
    return _fused(ids, raw, norm, weights, boosts, hit, log_chars)


def _extends(first: Fused, ids: Sequence[str], snippets: frozenset[str]) -> bool:
    """Whether `ids` extend `first.ids` by candidates that are not snippets (snippets come from the
    request, never as neighbours: a list that adds one is fused afresh)."""
    n = len(first.ids)
    return list(ids[:n]) == first.ids and not any(mid in snippets for mid in ids[n:])


def _searched(
    ids: Sequence[str], hits: ChannelHits, normalization: str, reuse: Fused | None
) -> tuple[F64, F64, npt.NDArray[np.bool_]]:
    """(raw, norm, hit) with the searched channels filled: normalized over their hits afresh, or, when
    `reuse` covers a prefix and no new candidate is a hit, its rows and a channel's miss (norm 0, or the
    floor of its hits under zscore) for the new ones."""
    hit_ids = {h.memory_id for h in (*hits.semantic, *hits.bm25, *hits.graph)}
    kept = len(reuse.ids) if reuse is not None else 0
    if reuse is None or any(mid in hit_ids for mid in ids[kept:]):
        return _channels(ids, hits, normalization)
    n = len(ids)
    raw = np.zeros((n, len(CHANNELS)), dtype=np.float64)
    norm = np.zeros((n, len(CHANNELS)), dtype=np.float64)
    hit = np.zeros((n, len(SEARCHED)), dtype=bool)
    raw[:kept], norm[:kept], hit[:kept] = reuse.raw, reuse.norm, reuse.hit
    for j in SEARCHED:
        hit_norms = reuse.norm[reuse.hit[:, j], j]
        if hit_norms.size:
            norm[kept:, j] = min(0.0, float(hit_norms.min()))
    return raw, norm, hit


#: a boosted event stays this far below the direct match of another type it would have passed
CAP_MARGIN = 1e-6
#: fused scores equal to this many decimals tie: events capped under one memory land on its score
#: minus the margin up to float noise, which must not decide their order (it moves with the clock)
SCORE_DECIMALS = 9


def _restates_a_turn(memory: Memory) -> bool:
    """A memory extracted from a stored turn (`provenance.source_turn`): the turn says it already."""
    return bool(memory.provenance and memory.provenance.get("source_turn"))


def _context(boosts: F64) -> F64:
    """Each candidate's conversation-context boosts (neighbour, day, opening) together."""
    return boosts[:, NEIGHBOR] + boosts[:, DAY] + boosts[:, OPENING]


def _cap_context_boosts(
    ids: Sequence[str], memories: Mapping[str, Memory], weighted: F64, boosts: F64
) -> None:
    """The conversation-context boosts (neighbour, day, opening) of an event never lift it above a memory of
    another type that beats the event without them (those memories take no such boost): the boosts
    model turns answering together, not a better match. A fact extracted from a turn caps nothing: it
    restates a turn, and capping the conversation under every such restatement flattens it wherever
    turns went through extraction. Scales them down in place; `weighted` is every candidate's score."""
    context = _context(boosts)
    if not context.any():
        return
    # compared to SCORE_DECIMALS: an event matching alike a memory of another type ties with it whatever
    # the float noise of the sums (it moves with the clock through the recency prior)
    others = sorted(
        round(float(weighted[i]), SCORE_DECIMALS)
        for i, mid in enumerate(ids)
        if mid in memories and memories[mid].type != "event" and not _restates_a_turn(memories[mid])
    )
    if not others:
        return
    for i in np.flatnonzero(context > 0):
        direct = round(float(weighted[i] - context[i]), SCORE_DECIMALS)
        at = bisect.bisect_right(others, direct)  # the weakest other memory the event does not beat alone
        if at == len(others):
            continue
        cap = others[at] - CAP_MARGIN
        if weighted[i] > cap:
            keep = max(0.0, (cap - direct) / float(context[i]))
            boosts[i, CONTEXT] *= keep


def ranking(fused: Fused) -> npt.NDArray[np.intp]:
    """Candidate positions, best first. Equal scores (to `SCORE_DECIMALS`) rank the better match without
    the conversation-context boosts first (among events capped to one score, the turn that matches
    best), then keep the candidates' order."""
    score = np.round(fused.score, SCORE_DECIMALS)
    direct = np.round(fused.score - _context(fused.boosts), SCORE_DECIMALS)
    return np.lexsort((-direct, -score))


def reasons(fused: Fused, i: int, *, pinned: bool, seeded: bool) -> list[str]:
    out: list[str] = []
    if fused.hit[i, SEMANTIC]:
        out.append(f"semantic match (cosine {fused.raw[i, SEMANTIC]:.3f})")
    if fused.hit[i, BM25]:
        out.append(f"keyword match (bm25 {fused.raw[i, BM25]:.3f})")
    if fused.hit[i, GRAPH]:
        hops = round(1.0 / fused.raw[i, GRAPH] - 1.0)
        out.append(f"graph: {hops} hop{'s' if hops != 1 else ''} from a seed entity")
    names = {
        "predicate_boost": "predicate boost",
        "entity_boost": "entity boost",
        "type_boost": "type boost (preset)",
        "seed_boost": "seed_context memory",
        "seed_snippet": "seed_context snippet",
        "time_boost": "from the time the question points to",
        "neighbor_boost": "next to a strong match (same conversation)",
        "day_boost": "same stretch of conversation as a strong match",
        "opening_boost": "opens a stretch of conversation",
        "speaker_focus": "said by the other side of the question",
    }
    for j, name in enumerate(BOOSTS):
        b = fused.boosts[i, j]
        if b == 0.0:
            continue
        if name == "length_prior":
            out.append("longer than most candidate turns" if b > 0 else "shorter than most candidate turns")
        else:
            out.append(names[name])
    if pinned:
        out.append("must_include (pinned)")
    if not out:
        out.append("recency/confidence prior" if not seeded else "seed_context memory")
    return out
