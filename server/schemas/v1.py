"""Wire records of the mem0-compatible /v1/memories surface."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from engine.models import AgentId, EntityId, MemoryText

V1EventName = Literal["ADD", "UPDATE", "DELETE", "NONE"]
#: mem0's run and app ids: 1 to 128 characters, not blank, as an agent id
RunId = AgentId
AppId = RunId
#: a mem0 filter object (see docs/integrations.md); nesting and list lengths are checked when it is read
Filters = Annotated[dict[str, Any], Meta(max_length=32, description="mem0 filters: at most 32 keys")]
UnixSeconds = Annotated[int, Meta(ge=0, le=253402300799, description="Unix time in seconds")]
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
    #: kept in each memory's metadata.app_id
    app_id: AppId | None = None
    #: null as absent (mem0's open-source server declares its optional fields nullable)
    metadata: dict[str, Any] | None = None
    #: null as absent: true
    infer: bool | None = True
    #: the memories are valid through this date (their valid_to is the start of the next day, UTC)
    expiration_date: date | None = None
    #: the memories' timestamp (default: now)
    timestamp: UnixSeconds | None = None
    #: mem0 v3 clients may name the user/agent/run/app here instead of at the top level
    filters: Filters | None = None


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
    #: the add's run_id and app_id (also in metadata), as GET /v1/memories/{id} answers them
    run_id: str | None = None
    app_id: str | None = None
    #: the fused retrieval score with `query`; null when listing without a query
    score: float | None
    #: the memory's timestamp (the add's `timestamp`, default now): what the list sorts by
    created_at: datetime
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class V1SearchResponse(msgspec.Struct, kw_only=True):
    results: list[V1SearchItem]


class V1Deleted(msgspec.Struct, kw_only=True):
    message: str = "Memory deleted successfully!"
