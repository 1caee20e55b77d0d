from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.errors import Unavailable
from engine.models import Memory
from engine.storage.base import Store
from tests.engine.storage.conftest import STORE_FACTORIES, STORE_MARKS

from .helpers import NOW, mem


class FailingEmbedder:
    model = "hash:256"
    dim = 256

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise Unavailable("embedder down")


def corpus() -> list[Memory]:
    return [
        mem(
            "m_paris",
            "Alice lives in Paris",
            type="fact",
            subject="ent:alice",
            predicate="lives_in",
            object="Paris",
            valid_from=NOW - timedelta(days=30),
            days_ago=30,
            confidence=0.9,
        ),
        mem(
            "m_london",
            "Alice lives in London",
            type="fact",
            subject="ent:alice",
            predicate="lives_in",
            object="London",
            status="superseded",
            valid_from=NOW - timedelta(days=400),
            valid_to=NOW - timedelta(days=30),
            days_ago=400,
        ),
        mem(
            "m_acme",
            "Alice works at Acme as an engineer",
            type="fact",
            subject="ent:alice",
            predicate="works_at",
            object="ent:acme",
            object_type="entity",
            days_ago=100,
        ),
        mem(
            "m_acme_hq",
            "Acme is headquartered in Lyon",
            type="fact",
            subject="ent:acme",
            predicate="located_in",
            object="Lyon",
            days_ago=100,
        ),
        mem(
            "m_tea",
            "Alice likes green tea",
            type="fact",
            subject="ent:alice",
            predicate="likes",
            object="green tea",
            days_ago=5,
        ),
        mem(
            "m_jazz",
            "Alice likes jazz music",
            type="fact",
            subject="ent:alice",
            predicate="likes",
            object="jazz",
            days_ago=6,
        ),
        mem(
            "m_dogs",
            "Alice likes dogs",
            type="fact",
            subject="ent:alice",
            predicate="likes",
            object="dogs",
            days_ago=7,
        ),
        mem(
            "m_hiking",
            "Alice likes hiking in the Alps",
            type="fact",
            subject="ent:alice",
            predicate="likes",
            object="hiking",
            days_ago=8,
        ),
        mem("e_berlin", "Alice flew to Berlin for a conference", type="event", days_ago=3),
        mem("e_dentist", "Alice went to the dentist", type="event", days_ago=1),
        mem("e_old", "Alice adopted a cat named Tom", type="event", days_ago=200),
        mem(
            "n_recipe",
            "Note: Alice's favourite recipe is a green tea cake with matcha",
            type="note",
            days_ago=20,
            metadata={"source": "chat-1"},
        ),
        mem(
            "d_doc",
            "Document: Alice's travel plans include Japan and Korea next spring.",
            type="document",
            days_ago=10,
        ),
        mem("x_archived", "Alice likes green tea a lot (archived)", type="fact", archived=True),
        mem(
            "x_bob",
            "Bob likes green tea too",
            type="fact",
            entity="ent:bob",
            subject="ent:bob",
            predicate="likes",
        ),
        mem("x_other_org", "Alice likes green tea in another org", type="fact", org="o2"),
    ]


@pytest.fixture(
    params=[pytest.param(n, marks=STORE_MARKS.get(n, [])) for n in ("memory", "sqlite", "postgres")]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The corpus on every backend: the pipeline's tests hold on each (they rank alike)."""
    s = STORE_FACTORIES[request.param](tmp_path)
    memories = corpus()
    s.put_memories(memories)
    EmbeddingCache(HashEmbedder(), s).embed([m.text for m in memories])
    yield s
    s.close()


@pytest.fixture
def cache(store: Store) -> EmbeddingCache:
    return EmbeddingCache(HashEmbedder(), store)
