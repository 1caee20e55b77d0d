"""A small org with every kind of record and every awkward value, for the export/import tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import numpy as np

from engine.embed.hash import HashEmbedder
from engine.models import ApiKey, Event, Memory, text_hash
from engine.storage.base import Store
from engine.storage.transfer import iter_org_events, iter_org_memories
from tests.factories import memory

ORG = "acme"
OTHER = "other"
MODEL = "hash:16"
T0 = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def _m(n: int, text: str, org: str = ORG, **kw: Any) -> Memory:
    fields = {"timestamp": T0 + timedelta(microseconds=n), "updated_at": T0 + timedelta(seconds=n), **kw}
    return memory(memory_id=f"mem_{n:04d}", org_id=org, text=text, at=T0, **fields)


def org_memories() -> list[Memory]:
    return [
        _m(
            1,
            "Alice lives in Paris",
            type="fact",
            namespace="ns1",
            agent_id="agent-7",
            entity_id="ent:alice",
            subject="ent:alice",
            predicate="lives_in",
            object="Paris",
            object_type="string",
            keys=["ent:alice|lives_in"],
            valid_from=T0 - timedelta(days=3),
            valid_to=T0,
            confidence=0.75,
            status="superseded",
            tags=["home", "geo"],
            metadata={"score": 1.0, "n": 1, "flag": True, "nested": {"x": [1, 2.5, None]}},
            provenance={"source": "chat", "turn": 3},
            sensitivity="pii",
        ),
        _m(
            2,
            "Alice is 5 feet tall",
            type="fact",
            subject="ent:alice",
            predicate="height",
            object=5.0,
            object_type="number",
            unit="ft",
        ),
        _m(
            3,
            "Alice has 5 cats",
            type="fact",
            subject="ent:alice",
            predicate="cats",
            object=5,
            object_type="number",
        ),
        _m(
            4,
            "Alice is vegan",
            type="fact",
            subject="ent:alice",
            predicate="vegan",
            object=True,
            object_type="literal",
            sensitivity="none",
        ),
        _m(5, "A json object", type="fact", object={"a": 1, "b": 1.0, "c": [True, "x"]}, object_type="json"),
        _m(6, "Archived note with unicode é ✓ and a \u0000 NUL", archived=True, status="disputed"),
        _m(7, "Same timestamp as eight", timestamp=T0 + timedelta(days=1)),
        _m(8, "Same timestamp as seven", timestamp=T0 + timedelta(days=1)),
        _m(9, "Alice lives in Paris"),  # same text as mem_0001: its vector is exported once
        _m(
            10,
            "Bob met ent:alice",
            type="event",
            object="ent:alice",
            object_type="entity",
            entity_id="ent:bob",
        ),
    ]


def other_memories() -> list[Memory]:
    return [_m(100, "Not acme's", org=OTHER)]


def org_events() -> list[Event]:
    return [
        Event(
            event_id=f"evt_{i:03d}",
            org_id=ORG,
            type=t,
            at=T0 + timedelta(microseconds=i),
            memory_id=f"mem_{i:04d}",
            entity_id="ent:alice" if i % 2 else None,
            data={"i": i, "f": 0.5},
        )
        for i, t in enumerate(["memory.created", "memory.superseded", "context.assembled"], start=1)
    ]


def org_keys() -> list[ApiKey]:
    return [
        ApiKey(key_id="key_a", org_id=ORG, key_hash="h" * 64, scopes=["read"], name="ci", created_at=T0),
        ApiKey(
            key_id="key_b",
            org_id=ORG,
            key_hash="g" * 64,
            scopes=["read", "write", "admin"],
            created_at=T0,
            revoked_at=T0 + timedelta(hours=1),
        ),
    ]


def fill(store: Store) -> None:
    """The org (plus another org's records that must never leave with it)."""
    mems = org_memories()
    store.put_memories(mems + other_memories())
    embedder = HashEmbedder(16)
    texts = sorted({m.text for m in mems if m.memory_id != "mem_0010"})  # mem_0010 has no vector
    vecs = embedder.embed(texts)
    store.put_embeddings(MODEL, {text_hash(t): vecs[i] for i, t in enumerate(texts)})
    store.append_events(org_events())
    store.append_events([Event(event_id="evt_x", org_id=OTHER, type="memory.created", at=T0)])
    for key in org_keys():
        store.create_api_key(key)
    store.create_api_key(
        ApiKey(key_id="key_o", org_id=OTHER, key_hash="o" * 64, scopes=["read"], created_at=T0)
    )


def exact(memory: Memory) -> bytes:
    """Every field, with int/float/bool kept apart (== would take 5 == 5.0 == True)."""
    return msgspec.json.encode(memory)


def snapshot(store: Store, org: str = ORG) -> tuple[list[bytes], list[bytes], list[bytes], dict[str, bytes]]:
    """(memories, events, keys, vectors) of an org, each exactly encoded."""
    mems = [m for page in iter_org_memories(store, org) for m in page]
    hashes = sorted({text_hash(m.text) for m in mems})
    vectors = {
        h: np.asarray(v, dtype="<f4").tobytes() for h, v in store.get_embeddings(MODEL, hashes).items()
    }
    return (
        [exact(m) for m in mems],
        [msgspec.json.encode(e) for _, e in iter_org_events(store, org)],
        [msgspec.json.encode(k) for k in store.list_api_keys(org)],
        vectors,
    )
