"""Passages of long memory texts: which texts have them, and that a write stores their vectors."""

from __future__ import annotations

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.embed.passages import MIN_CHARS, all_passages, is_passage_model, passage_model, passages
from engine.models import text_hash
from engine.storage.in_memory import InMemoryStore
from loci.wire.tuning import TUNING

FILLER = "We talked about the weather and the traffic on the way to the office this morning. " * 8
LONG = f"{FILLER}\nI bought a new espresso machine last week! Ok. Is it any good?"


def test_a_long_text_has_its_sentences_as_passages() -> None:
    assert len(LONG) > TUNING.passage_min_chars
    found = passages(LONG)
    assert found[0] == "We talked about the weather and the traffic on the way to the office this morning."
    assert "I bought a new espresso machine last week!" in found
    assert "Is it any good?" not in found and "Ok." not in found  # shorter than MIN_CHARS
    assert all(len(p) >= MIN_CHARS for p in found)
    assert len(found) == len(set(found))  # the repeated filler sentence once


def test_short_texts_and_single_sentences_have_none() -> None:
    assert passages("I bought a new espresso machine last week.") == ()
    assert passages("x" * (TUNING.passage_min_chars + 1)) == ()  # one sentence: the whole text's vector
    at_limit = ("A sentence of some length. " * 40)[: TUNING.passage_min_chars]
    assert passages(at_limit) == ()


def test_at_most_max_passages_are_kept() -> None:
    text = " ".join(f"This is sentence number {i} of a very long turn." for i in range(60))
    assert len(passages(text)) == TUNING.max_passages
    assert passages(text)[0].startswith("This is sentence number 0 ")


def test_all_passages_lists_those_of_the_long_texts_once() -> None:
    assert all_passages(["short", LONG, LONG]) == list(passages(LONG))
    assert passage_model("hash:256") == "hash:256#passages" and is_passage_model(passage_model("m"))
    assert not is_passage_model("hash:256")


def test_a_written_text_stores_its_passages_vectors_and_a_query_does_not() -> None:
    store = InMemoryStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    parts = [text_hash(p) for p in passages(LONG)]
    cache.embed([LONG], persist=False)
    assert store.get_embeddings(cache.passage_model, parts) == {}
    rows = cache.embed([LONG], persist=True, defer=True)
    assert len(rows) == 1  # one vector per text asked, the passages stored beside
    assert store.get_embeddings(cache.passage_model, parts) == {}  # deferred: stored by the write
    cache.save([LONG])
    assert set(store.get_embeddings(cache.model, [text_hash(LONG)])) == {text_hash(LONG)}
    assert set(store.get_embeddings(cache.passage_model, parts)) == set(parts)
    assert store.get_embeddings(cache.model, parts) == {}  # under their own name, not the model's
    assert set(cache.stored(parts, passages=True)) == set(parts)
