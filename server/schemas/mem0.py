"""Wire records of the mem0-compatible routes (server.routes.mem0 and server.routes.mem0_oss).

The add request is /v1's (`server.schemas.v1.V1CreateRequest`); mem0 fields Loci does not use
(custom_instructions, custom_categories, includes, excludes, enable_graph, output_format, version,
async_mode, ...) are accepted and ignored.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from engine.models import AgentId, EntityId, MemoryText
from loci.wire.models import MAX_TEXT_LENGTH
from server.schemas.errors import Mem0ErrorBody
from server.schemas.v1 import AppId, Filters, RunId, UnixSeconds, V1CreateItem, V1CreateRequest

__all__ = [
    "Mem0AddResponse",
    "Mem0Deleted",
    "Mem0Entity",
    "Mem0EntityList",
    "Mem0ErrorBody",
    "Mem0HistoryItem",
    "Mem0ListRequest",
    "Mem0Memory",
    "Mem0Page",
    "Mem0Ping",
    "Mem0Results",
    "Mem0SearchRequest",
    "Mem0UpdateRequest",
    "V1CreateRequest",
]

MAX_TOP_K = 100
DEFAULT_TOP_K = 10
MAX_PAGE_SIZE = 200
DEFAULT_PAGE_SIZE = 100
EntityType = Literal["user", "agent", "app", "run"]
TopK = Annotated[int, Meta(ge=1, le=MAX_TOP_K, description=f"1 to {MAX_TOP_K}")]
PageNumber = Annotated[int, Meta(ge=1, le=1_000_000, description="1-based page number")]
PageSize = Annotated[int, Meta(ge=1, le=MAX_PAGE_SIZE, description=f"1 to {MAX_PAGE_SIZE}")]
Query = Annotated[
    str, Meta(min_length=1, max_length=MAX_TEXT_LENGTH, description=f"1 to {MAX_TEXT_LENGTH} characters")
]
Categories = Annotated[list[Annotated[str, Meta(min_length=1, max_length=64)]], Meta(max_length=50)]
Threshold = Annotated[float, Meta(ge=0.0, le=100.0, description="minimum fused score")]


class Mem0Ping(msgspec.Struct, kw_only=True):
    """GET /v1/ping/: the key is valid; mem0 clients keep org_id and project_id (the namespace)."""

    status: str = "ok"
    org_id: str
    project_id: str
    user_email: str | None = None


class Mem0Memory(msgspec.Struct, kw_only=True):
    """A memory as mem0 clients read it. `user_id` is the memory's entity_id, `run_id`/`app_id` come from
    its metadata, `categories` are its tags, `created_at` is its timestamp (an add's `timestamp`, default
    now), `expiration_date` is the last day of its validity."""

    id: str
    memory: str
    user_id: str | None
    agent_id: str | None
    app_id: str | None
    run_id: str | None
    #: the same value as run_id (mem0's list and get responses name it so)
    session_id: str | None
    metadata: dict[str, Any]
    categories: list[str]
    type: str
    status: str
    created_at: datetime
    updated_at: datetime
    expiration_date: date | None
    #: search only: the fused retrieval score
    score: float | UnsetType = UNSET


class Mem0Results(msgspec.Struct, kw_only=True):
    results: list[Mem0Memory]


class Mem0Page(msgspec.Struct, kw_only=True):
    """POST /v3/memories/: one page of the matching memories, newest first."""

    count: int
    next: str | None
    previous: str | None
    results: list[Mem0Memory]


class Mem0AddResponse(msgspec.Struct, kw_only=True):
    """POST /v3/memories/add/: Loci stores synchronously, so the status is final and the results are here."""

    results: list[V1CreateItem]
    status: Literal["SUCCEEDED"] = "SUCCEEDED"
    #: the request id (Loci has no event polling: the work is done when this answer arrives)
    event_id: str
    message: str = "Memories stored"


#: get_all's created-at bounds: a day, or a date-time as mem0's client documents them (ISO 8601)
DateBound = Annotated[
    str,
    Meta(
        min_length=10,
        max_length=64,
        description="a day (YYYY-MM-DD, an end day inclusive) or an RFC 3339 date-time (UTC when it names no offset)",
    ),
]


class Mem0ListRequest(msgspec.Struct, kw_only=True):
    """POST /v3/memories/ (and /v2/memories/): get_all. `page`/`page_size` may also be query parameters."""

    filters: Filters
    page: PageNumber | None = None
    page_size: PageSize | None = None
    show_expired: bool | None = False
    start_date: DateBound | None = None
    end_date: DateBound | None = None
    categories: Categories | None = None


class Mem0SearchRequest(msgspec.Struct, kw_only=True):
    """POST /v3/memories/search/ (and /v1, /v2 and the open-source /search). Entity ids belong in `filters`;
    top-level ones (older clients) are merged into it."""

    query: Query
    filters: Filters | None = None
    user_id: EntityId | None = None
    agent_id: AgentId | None = None
    run_id: RunId | None = None
    app_id: AppId | None = None
    #: null as absent (mem0's open-source server declares its optional fields nullable), as for the rest
    top_k: TopK | None = DEFAULT_TOP_K
    #: older clients' name for top_k
    limit: TopK | None = None
    threshold: Threshold | None = None
    rerank: bool | None = False
    show_expired: bool | None = False
    categories: Categories | None = None
    #: memories whose metadata holds every one of these pairs
    metadata: Annotated[dict[str, Any], Meta(max_length=32)] | None = None


class Mem0UpdateRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """PUT /v1/memories/{memory_id}/: new text, metadata (replaces it), timestamp or expiration date."""

    #: null as absent: unchanged (mem0's open-source server declares the fields nullable); only an
    #: expiration_date of null means something, no expiration
    text: MemoryText | None | UnsetType = UNSET
    #: older clients send the new text as `data`
    data: MemoryText | None | UnsetType = UNSET
    metadata: dict[str, Any] | None | UnsetType = UNSET
    timestamp: UnixSeconds | float | str | UnsetType = UNSET
    expiration_date: date | None | UnsetType = UNSET


class Mem0Deleted(msgspec.Struct, kw_only=True):
    message: str
    #: how many memories a bulk delete removed
    deleted: int | UnsetType = UNSET


class Mem0HistoryItem(msgspec.Struct, kw_only=True):
    """One change of a memory, oldest first: ADD, UPDATE (text, metadata, status or validity changed) or
    DELETE."""

    id: str
    memory_id: str
    event: Literal["ADD", "UPDATE", "DELETE"]
    old_memory: str | None
    new_memory: str | None
    #: what changed (Loci's event type and fields), e.g. {"loci_event": "memory.superseded", ...}
    metadata: dict[str, Any]
    input: list[dict[str, str]] = msgspec.field(default_factory=list)
    user_id: str | None
    agent_id: str | None
    is_deleted: bool
    created_at: datetime
    updated_at: datetime


class Mem0Entity(msgspec.Struct, kw_only=True):
    id: str
    name: str
    type: EntityType
    total_memories: int
    created_at: datetime
    updated_at: datetime
    owner: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class Mem0EntityList(msgspec.Struct, kw_only=True):
    count: int
    next: str | None = None
    previous: str | None = None
    results: list[Mem0Entity]
    total_users: int
    total_agents: int
    total_apps: int
    total_runs: int
