"""Memory's fields are declared once, in `engine.models.Memory`; the shapes that restate them for a
reason (a request without server-set fields, SQLite's explicit row codec on the read hot path) are
held to it here, and PostgreSQL's decode-only copy is derived from it."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from engine.memory_service import MemoryCreate
from engine.models import Memory
from engine.storage.postgres.rows import _StoredMemory
from engine.storage.sqlite.codec import MEMORY_COLUMNS, memory_row, row_memory

SERVER_SET = {"memory_id", "org_id", "created_at", "updated_at"}


def _defaults(struct: type[msgspec.Struct]) -> dict[str, object]:
    out: dict[str, object] = {}
    for f in msgspec.structs.fields(struct):
        factory = f.default_factory
        out[f.name] = factory() if factory is not msgspec.NODEFAULT else f.default
    return out


def test_memory_create_is_memory_without_server_set_fields() -> None:
    memory = [f for f in Memory.__struct_fields__ if f not in SERVER_SET]
    assert list(MemoryCreate.__struct_fields__) == memory
    expected = {k: v for k, v in _defaults(Memory).items() if k not in SERVER_SET}
    expected["timestamp"] = None  # a request may leave it out: the time of the write
    assert _defaults(MemoryCreate) == expected


def test_sqlite_columns_and_codec_cover_every_field() -> None:
    assert sorted(MEMORY_COLUMNS) == sorted("ts" if f == "timestamp" else f for f in Memory.__struct_fields__)
    at = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    full = Memory(
        memory_id="mem_1",
        org_id="org_a",
        namespace="ns",
        agent_id="agent",
        entity_id="ent:u",
        type="fact",
        text="Ana lives in Lisbon",
        metadata={"k": [1, 2.5]},
        tags=["a", "b"],
        timestamp=at,
        archived=True,
        sensitivity="pii",
        subject="ent:ana",
        predicate="lives_in",
        object={"nested": True},
        object_type="json",
        unit="km",
        keys=["ent:ana|lives_in"],
        valid_from=at,
        valid_to=at,
        confidence=0.5,
        status="superseded",
        provenance={"source": "test"},
        created_at=at,
        updated_at=at,
    )
    # every field differs from its default, so a field the codec dropped would show
    assert all(getattr(full, k) != v for k, v in _defaults(Memory).items())
    assert row_memory(memory_row(full)) == full


def test_postgres_stored_form_has_memorys_fields() -> None:
    assert _StoredMemory.__struct_fields__ == Memory.__struct_fields__
    assert {f.name: f.required for f in msgspec.structs.fields(_StoredMemory)} == {
        f.name: f.required for f in msgspec.structs.fields(Memory)
    }
