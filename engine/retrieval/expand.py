"""Conversation context of strong candidates, with no model call: who spoke, what was said around it,
what else was said that day. Memories saved turn by turn ("<speaker>: <text>" events) answer a
question together: the turn that names the topic, the reply that holds the answer, the other turns of
that day.

- `speaker_hits`: an event whose text starts with "<Name>: " where a word of Name is a graph seed of
  the query (`ent:<lowercased word>`, see `engine.retrieval.channels.graph_seeds`) is a graph hit at
  hop 0: it is about that entity as much as a fact naming it. This holds for the channels'
  candidates and for the neighbours the conversation context adds.
- `spoken_by_others`: the other side of the question, whose turns the fusion lowers (the speaker
  focus): every other speaker's turns when the question names a speaker of the candidates, the
  assistant's ("assistant: ...") when it asks about the asker in the first person and not of "you".
- `context_boosts`, after a first fusion: the best `cfg.anchors` events are anchors; the events up to
  `neighbors` places before and after each (`SearchBackend.adjacent_events`, the same stretch of conversation:
  consecutive events at most `MAX_GAP` apart) join the candidates with
  `neighbor_boost = neighbor_weight x (the best adjacent anchor's match)`, an anchor's match being its
  score without the graph, recency and confidence columns (who it is about, how new, how sure: what
  every turn of one speaker shares, not what the question asked); every event candidate gets
  `day_boost = day_weight x (the best first-fusion score among the event candidates of its stretch)`
  when that stretch has at least two event candidates, so an event alone is not lifted over facts and
  notes. A stretch is one session (`metadata.session`), else one day's candidates split where two are
  hours apart; and an event that opens its stretch (no event before it within `MAX_GAP`: the first turn
  of a conversation, where people say what it is about) gets `opening_boost = opening_weight`. The
  openers are read off the anchors' walk: an anchor with no event before it, and the first event before
  an anchor when the walk stops short of `neighbors` places (so a neighbour that opens a stretch joins
  with both boosts). Facts, notes and documents take none of these boosts, and the fusion caps them so
  that an event never passes a memory of another type that beats it without them (a fact extracted
  from a turn excepted: it restates a turn).
The fusion then runs again with these boosts (`engine.retrieval.fuse`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import NamedTuple

import msgspec

from engine.extract.speaker import is_agent_turn
from engine.models import Memory, speaker_of
from engine.retrieval.channels import asks_about_self, name_seeds
from engine.retrieval.config import ResolvedRetrieval
from engine.retrieval.fuse import CONFIDENCE, GRAPH, RECENCY, Fused
from engine.storage.base import Adjacent, Hit, Scope, Store
from engine.timeutil import to_micros
from loci.wire.tuning import TUNING

MAX_GAP = timedelta(minutes=TUNING.stretch_gap_minutes)
#: candidates of one day further apart than this are two conversations (their stretch, `_stretches`)
STRETCH_SPLIT_US = TUNING.stretch_split_minutes * 60_000_000
_DAY_US = 86_400_000_000
Stretch = tuple[int, int | str]


class Sides(NamedTuple):
    """Events by who said them: `named`, a seed entity (the question names the speaker); `others`,
    anyone else with a "<Name>: " label."""

    named: list[str]
    others: list[str]

    def extended(self, more: Sides) -> Sides:
        return Sides([*self.named, *more.named], [*self.others, *more.others])


def speakers(ids: Sequence[str], memories: Mapping[str, Memory], seeds: Sequence[str]) -> Sides:
    """The events among `ids` by side: a "<Name>: " turn is a seed's when a word of Name is one
    (`name_seeds`). Events with no speaker are on neither side."""
    wanted = set(seeds)
    sides = Sides([], [])
    if not wanted:
        return sides
    seeded_name: dict[str, bool] = {}  # a few speakers say most turns
    for mid in ids:
        m = memories.get(mid)
        if m is None or m.type != "event":
            continue
        name = speaker_of(m.text)
        if not name:
            continue
        hit = seeded_name.get(name)
        if hit is None:
            hit = seeded_name[name] = any(not wanted.isdisjoint(name_seeds(w)) for w in name.split())
        (sides.named if hit else sides.others).append(mid)
    return sides


def speaker_hits(named: Sequence[str], graph: Sequence[Hit]) -> list[Hit]:
    """Graph hits at hop 0 (prior 1) for the events spoken by a seed entity (`speakers(...).named`),
    merged into `graph`."""
    if not named:
        return list(graph)
    best = {h.memory_id: h.raw for h in graph}
    for mid in named:
        best[mid] = max(best.get(mid, 0.0), 1.0)
    return [Hit(mid, raw) for mid, raw in best.items()]


def spoken_by_others(
    sides: Sides, ids: Sequence[str], memories: Mapping[str, Memory], query: str
) -> frozenset[str]:
    """The events of `ids` the other side of the question said (the speaker focus, `engine.retrieval.fuse`),
    from their `sides` (`speakers` of `ids`): when it names a speaker of some of them, every other
    speaker's; when it asks about the asker (`asks_about_self`), the assistant's (turns labelled with an
    agent's role, "assistant: ..." in chat logs, as the extractor reads them); else none."""
    if sides.named:
        return frozenset(sides.others)
    if not asks_about_self(query):
        return frozenset()
    return frozenset(
        mid
        for mid in ids
        if (m := memories.get(mid)) is not None and m.type == "event" and is_agent_turn(m.text)
    )


class Context(msgspec.Struct, kw_only=True):
    boosts: dict[str, tuple[float, float, float]]  # memory id -> (neighbor_boost, day_boost, opening_boost)
    added: list[str]  # neighbour ids that were not candidates (their memories are in `memories`)
    ops: int = 0


def _stretches(events: Sequence[str], memories: Mapping[str, Memory]) -> dict[str, tuple[int, int | str]]:
    """Each event candidate's stretch of conversation: its `metadata.session` when it has one, else its
    day split where two consecutive candidates of the day are more than `STRETCH_SPLIT` apart (two
    chats of one day hours apart are not one conversation)."""
    out: dict[str, tuple[int, int | str]] = {}
    unlabelled: list[tuple[int, str]] = []
    for mid in events:
        m = memories[mid]
        session = m.metadata.get("session") if m.metadata else None
        if isinstance(session, str | int) and not isinstance(session, bool):
            out[mid] = (-1, str(session))
        else:
            unlabelled.append((to_micros(m.holds_from), mid))
    unlabelled.sort()
    stretch, last = 0, None
    for at, mid in unlabelled:
        if last is not None and (at - last > STRETCH_SPLIT_US or at // _DAY_US != last // _DAY_US):
            stretch += 1
        out[mid] = (at // _DAY_US, stretch)
        last = at
    return out


def _stretch_best(
    events: Sequence[str], stretch_of: Mapping[str, Stretch], score: Mapping[str, float]
) -> dict[Stretch, tuple[tuple[str, float], ...]]:
    """Per stretch, its two best event candidates (id, first-fusion score), best first."""
    stretches: dict[Stretch, list[tuple[str, float]]] = {}
    for mid in events:
        stretches.setdefault(stretch_of[mid], []).append((mid, score[mid]))
    return {key: tuple(sorted(pairs, key=lambda p: -p[1])[:2]) for key, pairs in stretches.items()}


def context_boosts(
    store: Store,
    scope: Scope,
    cfg: ResolvedRetrieval,
    union: Sequence[str],
    fused: Fused,
    memories: dict[str, Memory],
) -> Context:
    """Neighbour, day and opening boosts from a first fusion (see the module docstring); fetches new
    neighbours into `memories`."""
    score = dict(zip(union, fused.score.tolist(), strict=False))
    events = [mid for mid in union if mid in memories and memories[mid].type == "event"]
    out = Context(boosts={}, added=[])
    neighbor: dict[str, float] = {}
    openers: set[str] = set()
    walks = cfg.neighbor_weight > 0 or cfg.opening_weight > 0
    if cfg.neighbors > 0 and walks and events:
        anchors = sorted(events, key=lambda mid: -score[mid])[: cfg.anchors]
        adjacent = store.search.adjacent_events(scope, anchors, cfg.neighbors, MAX_GAP)
        out.ops += 1
        if cfg.opening_weight > 0:
            openers = _openers(anchors, adjacent, cfg.neighbors)
        if cfg.neighbor_weight > 0:
            match = _match(union, fused)
            for a in adjacent:
                neighbor[a.memory_id] = max(neighbor.get(a.memory_id, 0.0), match[a.anchor_id])
        missing = [mid for mid in neighbor if mid not in memories]
        if missing:
            for m in store.get_memories(scope.org_id, missing):
                memories[m.memory_id] = m
            out.ops += 1
        out.added = [mid for mid in neighbor if mid in memories and mid not in score]
    stretch_of = _stretches([*events, *out.added], memories)
    best = _stretch_best(events, stretch_of, score) if cfg.day_weight > 0 else {}
    neighbor_weight, day_weight, opening_weight = cfg.neighbor_weight, cfg.day_weight, cfg.opening_weight
    boosts = out.boosts
    longest = cfg.context_max_chars or None
    for mid, stretch in stretch_of.items():
        if longest is not None and len(memories[mid].text) > longest:
            continue  # a long turn is not worth its tokens for standing near an answer
        nb = neighbor_weight * neighbor.get(mid, 0.0)
        top = best.get(stretch, ())
        # the stretch's best score, when it has other candidates: a lone event does not lift itself
        same_day = day_weight * top[0][1] if len(top) > 1 else 0.0
        opening = opening_weight if mid in openers else 0.0
        if nb or same_day or opening:
            boosts[mid] = (nb, same_day, opening)
    return out


def _match(union: Sequence[str], fused: Fused) -> dict[str, float]:
    """Each candidate's first-fusion score without the graph, recency and confidence columns: what the
    question's meaning, words and time found in it."""
    priors = fused.contrib[:, GRAPH] + fused.contrib[:, RECENCY] + fused.contrib[:, CONFIDENCE]
    return dict(zip(union, (fused.score - priors).tolist(), strict=False))


def _openers(anchors: Sequence[str], adjacent: Sequence[Adjacent], span: int) -> set[str]:
    """The events the anchors' walk (`span` places each side, stopped at a gap) shows to open a stretch
    of conversation: an anchor with no event before it, and the first one before an anchor when the walk
    back stops short of `span` places. One `span` places back may have more before it: not known."""
    farthest: dict[str, tuple[int, str]] = {}  # anchor -> (offset, memory id) of the walk's last step back
    for a in adjacent:
        if a.offset < 0:
            seen = farthest.get(a.anchor_id)
            if seen is None or a.offset < seen[0]:
                farthest[a.anchor_id] = (a.offset, a.memory_id)
    out: set[str] = set()
    for anchor in anchors:
        back = farthest.get(anchor)
        if back is None:
            out.add(anchor)
        elif -back[0] < span:
            out.add(back[1])
    return out
