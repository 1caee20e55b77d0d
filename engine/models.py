"""The records the engine works on. Constrained aliases carry the API's limits, so the server's
wire Structs reuse them and validation and the OpenAPI document come from one source.

Conventions:
- Every datetime the engine holds is timezone-aware UTC (`engine.timeutil.to_utc` normalizes input;
  a naive datetime is taken as UTC).
- Records are treated as immutable: change one with `msgspec.structs.replace`, never in place.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from functools import lru_cache
from typing import Any

import msgspec

from engine.letters import UPPER

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.models import (  # isort: skip
    AgentId as AgentId,
    Confidence as Confidence,
    ConflictKey as ConflictKey,
    ConflictKeys as ConflictKeys,
    Entity as Entity,
    EntityId as EntityId,
    MAX_KEYS as MAX_KEYS,
    MAX_TAGS as MAX_TAGS,
    MEMORY_TYPES as MEMORY_TYPES,
    Memory as Memory,
    MemoryId as MemoryId,
    MemoryText as MemoryText,
    MemoryType as MemoryType,
    NOT_BLANK_PATTERN as NOT_BLANK_PATTERN,
    is_blank as is_blank,
    key_problem as key_problem,
    Namespace as Namespace,
    ObjectString as ObjectString,
    ObjectType as ObjectType,
    ObjectValue as ObjectValue,
    Predicate as Predicate,
    SPACES as SPACES,
    STATUSES as STATUSES,
    Sensitivity as Sensitivity,
    Status as Status,
    SubjectId as SubjectId,
    Tag as Tag,
    TagList as TagList,
    Unit as Unit,
)


_SPEAKER = re.compile(rf"^\s*({UPPER}[\w'.\-]*(?: {UPPER}[\w'.\-]*){{0,3}})\s*:\s")


def speaker_name(text: str) -> str | None:
    """The name a turn saved as an event starts with ("Caroline: I went ..." -> "Caroline"), if any."""
    found = _SPEAKER.match(text)
    return found.group(1) if found else None


speaker_of = lru_cache(maxsize=65536)(speaker_name)  # retrieval sees the same candidates turn after turn


@lru_cache(maxsize=65536)  # retrieval hashes the same candidate texts turn after turn
def text_hash(text: str) -> str:
    """The key of the embedding cache: a stable hash of a text (with the model name beside it)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class ApiKey(msgspec.Struct, kw_only=True):
    """An API key as stored: only the hash of the secret is kept."""

    key_id: str
    org_id: str
    key_hash: str
    scopes: list[str]
    name: str | None = None
    created_at: datetime
    revoked_at: datetime | None = None


class IdempotencyRecord(msgspec.Struct, kw_only=True):
    """The stored outcome of a request made with an Idempotency-Key, replayed on retry."""

    org_id: str
    key: str
    fingerprint: str  # hash of method, path and body
    status_code: int
    body: bytes
    content_type: str = "application/json"
    created_at: datetime
    expires_at: datetime


class Event(msgspec.Struct, kw_only=True):
    """One entry of an org's event log (memory.created, memory.superseded, context.assembled, ...)."""

    event_id: str
    org_id: str
    type: str
    at: datetime
    memory_id: str | None = None
    entity_id: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)
