"""A memory as a client writes it (POST /v0/memories) and the fields a PATCH may change."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from loci.wire.models import (
    AgentId,
    Confidence,
    ConflictKeys,
    EntityId,
    MemoryText,
    MemoryType,
    Namespace,
    ObjectType,
    ObjectValue,
    Predicate,
    Sensitivity,
    Status,
    SubjectId,
    TagList,
    Unit,
)

MAX_BATCH = 200
#: the largest request body the server reads, in bytes (a larger one is 413)
MAX_BODY_BYTES = 10_000_000


class MemoryCreate(msgspec.Struct, kw_only=True):
    """A memory as a client writes it. Server-set fields (memory_id, org_id, created_at, updated_at)
    are not part of it; unknown fields, organization fields included, are ignored."""

    namespace: Namespace = "default"
    agent_id: AgentId | None = None
    entity_id: EntityId | None = None
    type: MemoryType
    text: MemoryText
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    tags: TagList = msgspec.field(default_factory=list)
    timestamp: datetime | None = None  # default: the time of the write (UTC)
    archived: bool = False
    sensitivity: Sensitivity = "auto"
    subject: SubjectId | None = None
    predicate: Predicate | None = None
    object: ObjectValue = None
    object_type: ObjectType | None = None
    unit: Unit | None = None
    keys: ConflictKeys | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: Confidence | None = None
    status: Status = "active"
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)


class MemoryPatch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The fields a partial update may change; each optional. Any other field is an error."""

    tags: TagList | UnsetType = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET
    archived: bool | UnsetType = UNSET
    valid_to: datetime | None | UnsetType = UNSET
