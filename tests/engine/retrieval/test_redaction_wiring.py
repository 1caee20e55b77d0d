"""Issue 6: recall and raw_memories go through the same redactor as the rest of the context."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.memory_service import MemoryCreate, MemoryService
from engine.redact.pipeline_adapter import redactor_factory
from engine.retrieval import pipeline
from engine.retrieval.options import AssembleRequest, RecallRequest
from engine.storage import Store, open_store

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _setup() -> tuple[Store, EmbeddingCache]:
    store = open_store("memory")
    cache = EmbeddingCache(HashEmbedder(), store)
    service = MemoryService(store, embeddings=cache)
    service.create(
        "org",
        [
            msgspec.convert(
                {
                    "type": "note",
                    "text": "Reach Bob at bob@example.com",
                    "entity_id": "ent:u",
                    "timestamp": "2024-12-01T00:00:00Z",  # before the reads' NOW
                },
                MemoryCreate,
            )
        ],
        agent_id=None,
    )
    return store, cache


def test_recall_matches_and_raw_memories_are_redacted() -> None:
    store, cache = _setup()
    req = msgspec.convert(
        {
            "query": "how do I reach Bob by email",
            "entity_id": "ent:u",
            "return": {"include_raw_memories": True},
        },
        RecallRequest,
    )
    out = pipeline.recall(
        store,
        cache,
        org_id="org",
        agent_id=None,
        request=req,
        request_id="r",
        now=NOW,
        redactor_factory=redactor_factory,
    )
    assert out.matches and all("bob@example.com" not in m.text for m in out.matches)
    assert "[EMAIL_1]" in out.matches[0].text
    assert out.raw_memories and "bob@example.com" not in out.raw_memories[0].text
    assert out.redaction.applied and out.redaction.rules == ["email"]
    stored = next(iter(store.iter_memories("org")))
    assert "bob@example.com" in stored.text  # stored data is never altered


def test_recall_policy_off_returns_values_as_stored() -> None:
    store, cache = _setup()
    req = msgspec.convert(
        {"query": "reach Bob email", "entity_id": "ent:u", "policy": {"pii_redaction": "off"}}, RecallRequest
    )
    out = pipeline.recall(
        store,
        cache,
        org_id="org",
        agent_id=None,
        request=req,
        request_id="r",
        now=NOW,
        redactor_factory=redactor_factory,
    )
    assert "bob@example.com" in out.matches[0].text and not out.redaction.applied


def test_assemble_raw_memories_are_redacted() -> None:
    store, cache = _setup()
    req = msgspec.convert(
        {
            "entity_id": "ent:u",
            "turn": "how do I reach Bob by email?",
            "return": {"include_raw_memories": True},
        },
        AssembleRequest,
    )
    out = pipeline.assemble(
        store,
        cache,
        org_id="org",
        agent_id=None,
        request=req,
        request_id="r",
        now=NOW,
        redactor_factory=redactor_factory,
    )
    assert out.raw_memories and all("bob@example.com" not in m.text for m in out.raw_memories)


def test_a_line_shown_by_its_passage_is_redacted_before_it_is_cut() -> None:
    """The line's start is cut to a few tokens: cut first, half a card number was no card to redact."""
    from engine.retrieval.options import Policy
    from engine.retrieval.render import _snippet
    from engine.retrieval.tokens import get_tokenizer
    from tests.factories import memory

    passage = "By the way, I just signed a contract with my first client today."
    filler = " ".join(f"Filler sentence number {i} about the weather." for i in range(10))
    for lead, secret in (
        ("well ok so well ok so my card number is", "4111 1111 1111 1111"),
        ("well ok so well ok so my iban is", "GB82 WEST 1234 5698 7654 32"),
        ("well ok so well ok so please mail", "jonathan.alexander.richardson.longname@example.com"),
    ):
        text = f"Mona: {lead} {secret} thanks. {filler} {passage} {filler}"
        line = _snippet(memory(text=text), passage, redactor_factory(Policy()), get_tokenizer())
        assert passage in line and "…" in line, line
        assert secret[:9] not in line, line
