"""engine.assemble: a turn that writes embeds its query and the texts it stores in one pass, and the
stored texts still get their vectors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from engine.assemble import Engine, assemble_turn
from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.extract import create_extractor
from engine.models import text_hash
from engine.retrieval.options import AssembleRequest, IngestOptions
from engine.storage.in_memory import InMemoryStore

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return super().embed(texts)


def _turn(engine: Engine, turn: str, ingest: IngestOptions) -> None:
    request = AssembleRequest(entity_id="ent:a", turn=turn, ingest=ingest)
    assemble_turn(engine, org_id="acme", agent_id=None, request=request, request_id="req_1", now=NOW)


def test_a_writing_turn_embeds_its_query_and_its_texts_in_one_call() -> None:
    store = InMemoryStore()
    embedder = Counting()
    cache = EmbeddingCache(embedder, store)
    engine = Engine(store=store, embeddings=cache, extractor=create_extractor("rules"))
    _turn(engine, "I live in Lisbon and I went to the dentist on Tuesday.", IngestOptions())
    assert len(embedder.calls) == 1
    texts = embedder.calls[0]
    assert "I live in Lisbon and I went to the dentist on Tuesday." in texts and len(texts) >= 2
    # every stored text has its vector in the store (not only in the cache)
    held = store.get_embeddings(cache.model, [text_hash(t) for t in texts[1:]])
    assert set(held) == {text_hash(t) for t in texts[1:]}


def test_a_read_embeds_only_its_query() -> None:
    store = InMemoryStore()
    embedder = Counting()
    engine = Engine(
        store=store, embeddings=EmbeddingCache(embedder, store), extractor=create_extractor("rules")
    )
    _turn(engine, "Where do I live?", IngestOptions(extract=False, store_turn="none"))
    assert embedder.calls == [["Where do I live?"]]
