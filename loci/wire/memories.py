"""Wire records of the /v0/memories routes."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from loci.wire.errors import ErrorBody
from loci.wire.models import Memory
from loci.wire.writes import MAX_BATCH, MemoryCreate, MemoryPatch

__all__ = [
    "Deleted",
    "ErrorBody",
    "Memory",
    "MemoryBatch",
    "MemoryCreate",
    "MemoryItems",
    "MemoryList",
    "MemoryPatch",
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
