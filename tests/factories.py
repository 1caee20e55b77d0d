"""The one builder of `Memory` records for tests: every required field has a default, any field can be set."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from engine.ids import memory_id
from engine.models import Memory

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def memory(*, at: datetime = T0, days_ago: float = 0.0, **fields: Any) -> Memory:
    """A Memory of org "org_a", type "note" and text "hello world" with a fresh ULID id, unless given.

    `at` less `days_ago` days is its timestamp, created_at and updated_at (each overridable by name).
    """
    ts = at - timedelta(days=days_ago)
    defaults: dict[str, Any] = {
        "memory_id": fields.get("memory_id") or memory_id(),
        "org_id": "org_a",
        "type": "note",
        "text": "hello world",
        "timestamp": ts,
        "created_at": ts,
        "updated_at": ts,
    }
    return Memory(**(defaults | fields))
