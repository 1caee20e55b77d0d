"""Wire records of the HTTP surface. Constraints come from `engine.models` aliases, so validation and
the OpenAPI document share one source."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from engine.memories import MAX_BATCH, MemoryCreate, MemoryPatch
from engine.models import Memory
from server.errors import ErrorBody

__all__ = [
    "Deleted", "ErrorBody", "Health", "Memory", "MemoryBatch", "MemoryCreate", "MemoryItems",
    "MemoryList", "MemoryPatch",
]


class MemoryBatch(msgspec.Struct, kw_only=True):
    """POST /v0/memories with several memories: all are stored or none."""

    items: Annotated[list[MemoryCreate], Meta(min_length=1, max_length=MAX_BATCH)]


class MemoryItems(msgspec.Struct, kw_only=True):
    items: list[Memory]


class MemoryList(msgspec.Struct, kw_only=True):
    items: list[Memory]
    next_cursor: str | None = None  # null on the last page


class Deleted(msgspec.Struct, kw_only=True):
    deleted: bool
    memory_id: str


class Health(msgspec.Struct, kw_only=True):
    status: Literal["ok"]
    now: datetime
