"""POST /v0/prune: the rules that select memories, the action, and what was (or would be) pruned."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from loci.wire.models import MAX_TAGS, Confidence, EntityId, MemoryType, Namespace, Tag

PrunableStatus = Literal["superseded", "disputed"]
PruneAction = Literal["delete", "archive"]


class PruneRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    entity_id: EntityId | None = None
    namespace: Namespace = "default"
    statuses: Annotated[list[PrunableStatus], Meta(min_length=1, max_length=2)] | None = None
    archived: bool | None = None
    expired: bool | None = None
    older_than: datetime | None = None
    max_confidence: Confidence | None = None
    types: Annotated[list[MemoryType], Meta(min_length=1, max_length=6)] | None = None
    tags: Annotated[list[Tag], Meta(min_length=1, max_length=MAX_TAGS)] | None = None
    action: PruneAction = "delete"
    dry_run: bool = True


class PruneResult(msgspec.Struct, frozen=True, kw_only=True):
    dry_run: bool
    count: int
    memory_ids: list[str]
