"""Small builders for retrieval tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engine.models import Memory
from tests.factories import memory

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def mem(
    mid: str,
    text: str = "some text",
    *,
    type: str = "note",
    days_ago: float = 0.0,
    org: str = "o1",
    entity: str | None = "ent:alice",
    **kw: Any,
) -> Memory:
    return memory(
        memory_id=mid, org_id=org, entity_id=entity, type=type, text=text, at=NOW, days_ago=days_ago, **kw
    )
