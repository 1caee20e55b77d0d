"""The semantic channel's hits are the same on every backend: similarities rounded, near-equal ones in
one order (and one cut); long candidates lifted toward their closest passage."""

from __future__ import annotations

import numpy as np
import pytest

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.embed.passages import passages
from engine.models import text_hash
from engine.retrieval.channels import SEMANTIC_DECIMALS, ChannelHits, passage_lift, same_on_every_backend
from engine.storage.base import Hit
from engine.storage.in_memory import InMemoryStore
from loci.wire.tuning import TUNING

from .helpers import mem


def test_near_equal_similarities_keep_one_order_whatever_computed_them() -> None:
    tiny = 10.0 ** -(SEMANTIC_DECIMALS + 3)  # below the rounding: float32 sums of two implementations
    faiss_like = [Hit("mem_b", 0.5 + tiny), Hit("mem_a", 0.5), Hit("mem_c", 0.25)]
    pgvector_like = [Hit("mem_a", 0.5 + tiny), Hit("mem_b", 0.5), Hit("mem_c", 0.25)]
    expected = [Hit("mem_b", 0.5), Hit("mem_a", 0.5), Hit("mem_c", 0.25)]  # ties: the newer id first
    assert same_on_every_backend(faiss_like) == same_on_every_backend(pgvector_like) == expected
    assert same_on_every_backend([Hit("mem_x", 0.123456789)]) == [
        Hit("mem_x", round(0.123456789, SEMANTIC_DECIMALS))
    ]


def test_a_long_candidate_is_lifted_toward_its_closest_passage() -> None:
    """`passage_lift`: a semantic hit moves `weight` of the way to its closest passage; a long candidate
    of another channel joins the hits the same way; short texts, weight 0 and texts whose passages were
    never stored keep what they had."""
    store = InMemoryStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    filler = " ".join(f"On day {n} we talked about the traffic and the weather at length." for n in range(10))
    texts = {
        "hit": f"{filler} I bought an espresso machine for the kitchen.",
        "other": f"{filler} My sister has an espresso grinder in her kitchen.",
        "unstored": f"{filler} The espresso bar in the kitchen is new.",
        "short": "An espresso machine for the kitchen.",
    }
    memories = {mid: mem(mid, text, type="event") for mid, text in texts.items()}
    cache.embed([texts["hit"], texts["other"], texts["short"]], persist=True)
    cache.embed([texts["unstored"]], persist=False)
    query = cache.embed(["espresso kitchen"], persist=False)[0]

    def sim(text: str) -> float:
        return float(np.dot(cache.embed([text], persist=False)[0], query))

    whole, sentence = sim(texts["hit"]), sim("I bought an espresso machine for the kitchen.")
    union = list(texts)
    for weight in (0.0, 0.3, 1.0):
        hits = ChannelHits(semantic=[Hit("hit", whole), Hit("short", sim(texts["short"]))])
        calls = passage_lift(hits, union, memories, cache, query, weight)
        raw = {h.memory_id: h.raw for h in hits.semantic}
        assert (calls > 0) == (weight > 0)  # the passages' vectors, the other channels' whole vectors
        assert raw["hit"] == pytest.approx(whole + weight * (sentence - whole), abs=1e-4)
        assert raw["short"] == pytest.approx(sim(texts["short"]), abs=1e-4)
        assert "unstored" not in raw
        assert ("other" in raw) == (weight > 0)
        assert set(hits.passage) == ({"hit", "other"} if weight else set())


def test_a_passage_lifts_its_memory_only_near_the_best_whole_match() -> None:
    """A long memory's closest passage lifts it only when that passage is within `TUNING.passage_margin`
    of the query's best whole-text match: a loosely related sentence of a long turn stays where it was."""
    store = InMemoryStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    filler = " ".join(f"On day {n} we talked about the traffic and the weather at length." for n in range(10))
    text = f"{filler} I bought an espresso machine for the kitchen."
    cache.embed([text], persist=True)
    query = cache.embed(["espresso kitchen"], persist=False)[0]
    whole = float(np.dot(cache.embed([text], persist=False)[0], query))
    sentence = float(
        np.dot(cache.embed(["I bought an espresso machine for the kitchen."], persist=False)[0], query)
    )
    assert sentence > whole
    memories = {"long": mem("long", text, type="event"), "best": mem("best", "espresso", type="event")}
    for best, lifted in (
        (sentence + TUNING.passage_margin + 0.01, False),
        (sentence + TUNING.passage_margin - 0.01, True),
    ):
        hits = ChannelHits(semantic=[Hit("best", best), Hit("long", whole)])
        passage_lift(hits, ["best", "long"], memories, cache, query, 0.7)
        raw = {h.memory_id: h.raw for h in hits.semantic}
        assert (raw["long"] > whole + 1e-4) == lifted
        assert ("long" in hits.passage) == lifted


def test_a_partly_stored_passage_set_shows_the_passage_that_matched() -> None:
    """Passages whose vectors are not stored yet (a write in flight) are skipped, and the passage a line
    shows is the one whose vector matched, not the one at its place among all the text's passages."""
    store = InMemoryStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    filler = " ".join(
        f"Day {n} of talk about the traffic and the weather, at length and in turn." for n in range(9)
    )
    text = f"{filler} I bought an espresso machine for the kitchen."
    parts = passages(text)
    assert parts[-1] == "I bought an espresso machine for the kitchen."
    vectors = cache.embedder.embed(list(parts[1:]))  # the first passage's vector not stored
    store.put_embeddings(
        cache.passage_model, {text_hash(p): v for p, v in zip(parts[1:], vectors, strict=True)}
    )
    query = cache.embed(["espresso kitchen"], persist=False)[0]
    whole = float(np.dot(cache.embed([text], persist=False)[0], query))
    hits = ChannelHits(semantic=[Hit("m", whole)])
    passage_lift(hits, ["m"], {"m": mem("m", text, type="event")}, cache, query, 0.3)
    assert hits.passage == {"m": "I bought an espresso machine for the kitchen."}
