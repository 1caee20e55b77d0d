"""`Store.missing_vectors` on every backend: the text of each memory without a vector for a model,
across orgs and pages, and nothing once the vectors are stored (`loci doctor`)."""

from __future__ import annotations

import numpy as np

from engine.embed.backfill import count_missing, embed_missing
from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.models import text_hash
from engine.storage.base import Store
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
