"""Memories stored without a vector (the embedder failed during their write) get one: `loci doctor`
runs `embed_missing`; `/metrics` shows `count_missing`."""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice

import msgspec

from engine.embed.cache import EmbeddingCache
from engine.storage.base import Store

BATCH = 256


class Backfill(msgspec.Struct, kw_only=True):
    model: str
    missing: int  # memories without a vector before the run
    embedded: int = 0  # distinct texts embedded and stored by the run


def count_missing(store: Store, model: str) -> int:
    return sum(1 for _ in store.missing_vectors(model))


def embed_missing(
    store: Store, cache: EmbeddingCache, *, progress: Callable[[int], None] | None = None
) -> Backfill:
    """Embed and store the vector of every memory text that lacks one for the cache's model, in
    batches (each batch its own write), and count what was missing."""
    result = Backfill(model=cache.model, missing=0)
    texts = store.missing_vectors(cache.model)
    while batch := list(islice(texts, BATCH)):
        result.missing += len(batch)
        unique = list(dict.fromkeys(batch))
        cache.embed(unique, persist=True)
        result.embedded += len(unique)
        if progress is not None:
            progress(result.missing)
    return result
