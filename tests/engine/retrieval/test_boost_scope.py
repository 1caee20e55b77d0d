"""Conversation-context boosts stay within what they model: turns of one conversation answering
together. They never lift an event above a stronger direct match of another type, and two chats of
one day hours apart do not boost each other."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt
import pytest

from engine.embed.cache import EmbeddingCache
from engine.retrieval import fuse as fuse_mod
from engine.retrieval.options import Expand, RecallRequest, RetrievalOptions
from engine.retrieval.pipeline import run_recall
from engine.retrieval.responses import Match
from engine.storage.in_memory import InMemoryStore

from .helpers import NOW, mem

QUESTION = "Which city does she call home these days?"


class Geometry:
    """Fixed vectors: the question's cosine is 0.39 with the Lisbon fact (its best match), 0.2 to 0.3
    with the chatter, 0 with the other facts."""

    model, dim = "geometry:3", 3

    def __init__(self, cosines: dict[str, float]) -> None:
        self.cosines = cosines

    def _row(self, text: str) -> npt.NDArray[np.float32]:
        if text == QUESTION:
            return np.asarray([1.0, 0.0, 0.0], dtype=np.float32)
        c = self.cosines.get(text, 0.0)
        return np.asarray([c, float(np.sqrt(1 - c * c)), 0.0], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._row(t) for t in texts]) if texts else np.zeros((0, 3), dtype=np.float32)


def _mixed_scope(extracted: bool = False) -> tuple[InMemoryStore, EmbeddingCache]:
    """Six facts about Ana (Lisbon the best match of them) and forty short events a minute apart; with
    `extracted`, each fact was extracted from a stored turn (`provenance.source_turn`)."""
    facts = [
        "Ana lives in Lisbon",
        "Ana works at Acme",
        "Ana is 31",
        "Ana likes jazz",
        "Ana has a dog",
        "Ana speaks Greek",
    ]
    chatter = [f"Ana: talked about topic number {i} and the weather in week {i}" for i in range(40)]
    cosines = {facts[0]: 0.39} | {t: 0.2 + 0.1 * (i % 11) / 10 for i, t in enumerate(chatter)}
    store = InMemoryStore()
    store.put_memories(
        [
            mem(
                f"f{i}",
                t,
                type="fact",
                entity="ent:ana",
                days_ago=1.0,
                provenance={"source_turn": f"t{i}"} if extracted else {},
            )
            for i, t in enumerate(facts)
        ]
        + [
            mem(f"e{i}", t, type="event", entity="ent:ana", days_ago=0.5 - i / 1440)
            for i, t in enumerate(chatter)
        ]
    )
    cache = EmbeddingCache(Geometry(cosines), store)
    cache.embed([*facts, *chatter], persist=True)
    return store, cache


def _matches(
    store: InMemoryStore,
    cache: EmbeddingCache,
    limit: int = 10,
    now: datetime = NOW,
    retrieval: RetrievalOptions | None = None,
) -> list[Match]:
    request = RecallRequest(
        query=QUESTION, entity_id="ent:ana", limit=limit, retrieval=retrieval or RetrievalOptions()
    )
    got = run_recall(store, cache, org_id="o1", agent_id=None, request=request, request_id="r", now=now)
    return got.response.matches


def _ranking(store: InMemoryStore, cache: EmbeddingCache, limit: int = 10, now: datetime = NOW) -> list[str]:
    return [m.memory_id for m in _matches(store, cache, limit, now)]


def test_the_best_direct_match_of_another_type_stays_first() -> None:
    """Six facts about Ana, forty short events spoken a minute apart: each event takes a neighbour and a
    same-stretch boost from the events beside it, and without the cap four of them outrank Lisbon."""
    store, cache = _mixed_scope()
    assert _ranking(store, cache)[0] == "f0"


def test_events_capped_to_one_score_rank_the_same_whatever_the_clock() -> None:
    """The chatter capped under Lisbon lands on one score up to float noise, which moves with the
    request's clock: the order among them is their match without the boosts, on every request."""
    store, cache = _mixed_scope()
    rankings = {tuple(_ranking(store, cache, 46, NOW + timedelta(seconds=37 * k))) for k in range(12)}
    assert len(rankings) == 1


def test_without_the_cap_the_chatter_would_bury_the_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuse_mod, "_cap_context_boosts", lambda *args: None)
    store, cache = _mixed_scope()
    assert _ranking(store, cache)[0] != "f0"  # the geometry reproduces the issue: the cap is what holds


def test_the_turn_that_opens_the_chatter_stays_under_the_fact() -> None:
    """The first of the forty events opens their stretch: its opening boost is capped with the others."""
    store, cache = _mixed_scope()
    ranked = _matches(store, cache, 46, retrieval=RetrievalOptions(expand=Expand(opening_weight=1.0)))
    assert ranked[0].memory_id == "f0"
    opener = next(m for m in ranked if m.memory_id == "e0")
    assert 0 < opener.score_components["opening_boost"].contrib < 1.0


def test_a_fact_extracted_from_a_turn_caps_nothing() -> None:
    """The same scope with each fact extracted from a stored turn: the facts restate turns, and the
    boosts of the turns answering together stand (capped under every restatement, the conversation
    around an answer flattens wherever turns went through extraction, as in the agent loop)."""
    store, cache = _mixed_scope(extracted=True)
    assert _ranking(store, cache)[0] != "f0"


def test_two_chats_of_one_day_hours_apart_do_not_boost_each_other() -> None:
    from engine.retrieval.expand import _stretches

    memories = {
        m.memory_id: m
        for m in (
            mem("m1", "Ann: morning chat", type="event", days_ago=0.8),
            mem("m2", "Ann: still the morning", type="event", days_ago=0.8 - 5 / 1440),
            mem("e1", "Ann: evening chat", type="event", days_ago=0.3),
            mem("s1", "Ann: a labelled session", type="event", days_ago=0.3, metadata={"session": "x"}),
        )
    }
    stretch = _stretches(list(memories), memories)
    assert stretch["m1"] == stretch["m2"] != stretch["e1"]
    assert stretch["s1"] == (-1, "x")
