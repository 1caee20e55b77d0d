"""Wire records of the mem0-compatible /v1/memories surface."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from engine.models import AgentId, EntityId, MemoryText

V1EventName = Literal["ADD", "UPDATE", "DELETE", "NONE"]
RunId = Annotated[str, Meta(min_length=1, max_length=128, description="max 128 characters")]
V1_MAX_LIMIT = 200
V1_DEFAULT_LIMIT = 20


class V1Message(msgspec.Struct, kw_only=True):
    role: Literal["user", "assistant", "system"]
    content: MemoryText


class V1CreateRequest(msgspec.Struct, kw_only=True):
    messages: Annotated[list[V1Message], Meta(min_length=1, max_length=200, description="1 to 200")]
    agent_id: AgentId | None = None
    #: the memories' entity_id (first-person statements are about `ent:<user_id>`)
    user_id: EntityId | None = None
    #: kept in each memory's metadata.run_id
    run_id: RunId | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    infer: bool = True


class V1CreateItem(msgspec.Struct, kw_only=True):
    id: str
    memory: str
    event: V1EventName


class V1CreateResponse(msgspec.Struct, kw_only=True):
    results: list[V1CreateItem]


class V1SearchItem(msgspec.Struct, kw_only=True):
    id: str
    memory: str
    user_id: str | None
    agent_id: str | None = None
    #: the fused retrieval score with `query`; null when listing without a query
    score: float | None
    created_at: datetime
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class V1SearchResponse(msgspec.Struct, kw_only=True):
    results: list[V1SearchItem]


class V1Memory(msgspec.Struct, kw_only=True):
    """GET /v1/memories/{memory_id}: the stored content and metadata of one memory."""

    id: str
    memory: str
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    type: str
    status: str
    metadata: dict[str, Any]
    created_at: datetime
    updated_at: datetime


class V1Deleted(msgspec.Struct, kw_only=True):
    message: str = "Memory deleted successfully!"
