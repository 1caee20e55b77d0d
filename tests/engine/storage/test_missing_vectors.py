"""`Store.missing_vectors` on every backend: the text of each memory without a vector for a model,
across orgs and pages, and nothing once the vectors are stored (`loci doctor`); long texts given the
passage vectors they lack."""

from __future__ import annotations

import numpy as np

from engine.embed.backfill import count_missing, count_missing_passages, embed_missing
from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.embed.passages import passages
from engine.models import text_hash
from engine.storage.base import Store
from loci.wire.tuning import TUNING
from tests.engine.storage.conftest import mem


def test_missing_vectors_lists_each_memory_without_one(store: Store) -> None:
    texts = [f"memory number {i}" for i in range(1203)]  # more than one page of 1000
    store.put_memories([mem(org_id="org_a" if i % 2 else "org_b", text=t) for i, t in enumerate(texts)])
    store.put_memories([mem(org_id="org_a", text=texts[0])])  # the same text twice: listed twice
    vec = np.full(4, 0.5, dtype=np.float32)
    store.put_embeddings("m1", {text_hash(t): vec for t in texts[:3]})
    store.put_embeddings("m2", {text_hash(t): vec for t in texts[3:]})
    assert sorted(store.missing_vectors("m1")) == sorted(texts[3:])
    assert sorted(store.missing_vectors("m2")) == sorted([texts[0], *texts[:3]])
    assert count_missing(store, "m3") == 1204


def test_embed_missing_gives_every_memory_its_vector(store: Store) -> None:
    store.put_memories([mem(text=f"a note about topic {i}") for i in range(300)])
    cache = EmbeddingCache(HashEmbedder(), store)
    done = embed_missing(store, cache)
    assert (done.missing, done.embedded) == (300, 300)
    assert list(store.missing_vectors(cache.model)) == []
    assert embed_missing(store, cache).missing == 0


def test_embed_missing_gives_long_texts_written_before_passages_their_passages(store: Store) -> None:
    garden = " ".join(f"Sentence {i} of a long note says something about the garden." for i in range(12))
    kitchen = " ".join(f"Sentence {i} of another long note is about the kitchen." for i in range(12))
    store.put_memories([mem(text=garden), mem(text="a short note"), mem(org_id="org_b", text=kitchen)])
    cache = EmbeddingCache(HashEmbedder(), store)
    store.put_embeddings(cache.model, {text_hash(garden): cache.embedder.embed([garden])[0]})  # no passages
    assert sorted(store.long_texts(TUNING.passage_min_chars)) == sorted([garden, kitchen])
    assert count_missing_passages(store, cache.model) == 2
    done = embed_missing(store, cache)
    # the short note and the kitchen note had no vector (embedded with their passages), the garden note
    # only its passages
    assert (done.missing, done.embedded, done.passages) == (2, 2, 1)
    parts = [text_hash(p) for t in (garden, kitchen) for p in passages(t)]
    assert set(store.get_embeddings(cache.passage_model, parts)) == set(parts)
    assert embed_missing(store, cache).passages == 0
    assert count_missing_passages(store, cache.model) == 0
