"""Memories stored without a vector (the embedder failed during their write) get one: `loci doctor`
runs `embed_missing`; `/metrics` shows `count_missing`. Long texts whose passages lack vectors (written
before passages existed, `engine.embed.passages`) get them in the same run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice

import msgspec

from engine.embed.cache import EmbeddingCache
from engine.embed.passages import passage_hashes, passage_model
from engine.storage.base import Store
from loci.wire.tuning import TUNING

BATCH = 256


class Backfill(msgspec.Struct, kw_only=True):
    model: str
    missing: int  # memories without a vector before the run
    embedded: int = 0  # distinct texts embedded and stored by the run
    passages: int = 0  # distinct long texts whose missing passage vectors the run stored


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
    result.passages = embed_missing_passages(store, cache)
    return result


def _lacking_passages(store: Store, model: str) -> Iterator[list[str]]:
    """Batches of the distinct long memory texts that lack a vector for one of their passages (stored
    under `model`, a passage model)."""
    texts = store.long_texts(TUNING.passage_min_chars)
    while batch := list(islice(texts, BATCH)):
        unique = [t for t in dict.fromkeys(batch) if passage_hashes(t)]
        held = store.get_embeddings(model, [h for t in unique for h in passage_hashes(t)])
        if todo := [t for t in unique if any(h not in held for h in passage_hashes(t))]:
            yield todo


def count_missing_passages(store: Store, model: str) -> int:
    """Long memory texts that lack a vector for one of their passages (`loci doctor --check`; not in
    `/metrics`: counting reads every passage vector)."""
    return sum(len(todo) for todo in _lacking_passages(store, passage_model(model)))


def embed_missing_passages(store: Store, cache: EmbeddingCache) -> int:
    """Store the passage vectors that long memory texts lack, in batches; how many texts lacked any."""
    done = 0
    for todo in _lacking_passages(store, cache.passage_model):
        cache.embed(todo, persist=True)
        done += len(todo)
    return done
