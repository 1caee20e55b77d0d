"""Loci as an MCP server (the official `mcp` SDK's MCPServer): tools an agent runtime can call.

Tools: `remember` (a turn, with extraction and supersession, or one memory of a given type),
`recall` (ranked matches), `assemble_context` (the context for a turn within a token budget),
`forget` (delete or archive), `list_memories` (a page, newest first) and `get_memory`; resource
`loci://memories/{memory_id}`. Every tool is one call of the REST API through `loci.client`, so
auth, org scoping, scopes (a read-only key gets a tool error on a write), validation, idempotency and
rate limits are the API's own; an API error comes back as an MCP tool error (from the resource: a resource
error) carrying its status, code and message.

Two transports: `loci mcp` (stdio, server.commands.mcp) talks to a running server by URL and key;
streamable HTTP is mounted on the server at /mcp (stateless JSON answers, so any worker can serve any
request) and calls the app in-process with the caller's key.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

import httpx
import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic import Field

from engine.memory_service import MemoryCreate, MemoryPatch
from engine.models import MemoryType
from engine.retrieval.options import AssembleRequest, Budget, IngestOptions, RecallRequest
from loci.client import (
    APIError,
    AsyncLociClient,
    ConnectionFailed,
    LociClientError,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
)
from loci.wire.models import MAX_TEXT_LENGTH, NOT_BLANK_PATTERN, is_blank

INSTRUCTIONS = (
    "Loci is long-term memory. Call `assemble_context` with the user's turn before answering to get what "
    "is known (facts, recent events, sources) within a token budget; call `remember` with what the user "
    "said to store it (facts are extracted and outdated ones superseded); `recall` searches; `forget` "
    "removes a memory. `entity_id` names whom a memory is about (e.g. ent:alice)."
)
ClientFor = Callable[[Context], contextlib.AbstractAsyncContextManager[AsyncLociClient]]
#: the API's rule for a blank id, text or tag, shown in the schema (the API checks it: a 422 tool error)
NOT_BLANK = {"pattern": NOT_BLANK_PATTERN}
Entity = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        description="whom it is about, e.g. ent:alice",
        json_schema_extra=NOT_BLANK,
    ),
]
Namespace = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="the memory space (default: default)",
        json_schema_extra=NOT_BLANK,
    ),
]
Kind = Literal["turn", "fact", "event", "note", "document", "profile", "chunk"]
Tag = Annotated[str, Field(min_length=1, max_length=64, json_schema_extra=NOT_BLANK)]
Tags = Annotated[
    list[Tag],
    Field(max_length=50, description="on every memory stored (for a turn: its event and its facts)"),
]


def _out(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(value)
    return out


def _memory_line(m: Any) -> dict[str, Any]:
    return {
        "memory_id": m.memory_id,
        "type": m.type,
        "text": m.text,
        "entity_id": m.entity_id,
        "status": m.status,
        "archived": m.archived,
        "tags": list(m.tags),
        "timestamp": m.timestamp.isoformat(),
    }


def api_error_text(exc: APIError) -> str:
    """`<status> <code>: <message>`, and the wait a 429 asks for (`(retry after N s)`) when it gives one."""
    text = f"{exc.status} {exc.envelope.error}: {exc.envelope.message}"
    retry_after = exc.envelope.details.get("retry_after")
    if isinstance(exc, RateLimitError) and isinstance(retry_after, int | float):
        text += f" (retry after {retry_after:g} s)"
    return text


#: what a failed API call raises in a tool or a resource: the SDK sends its message to the client
Failure = Callable[[str, LociClientError], Exception]


def tool_failure(text: str, exc: LociClientError) -> Exception:
    """A tool error (`isError: true`) carrying the text."""
    return ToolError(text)


def resource_failure(text: str, exc: LociClientError) -> Exception:
    """A resource error carrying the text: MCP's "resource not found" (-32602) for a 404, else -32603."""
    return ResourceNotFoundError(text) if isinstance(exc, NotFoundError) else ResourceError(text)


@contextlib.asynccontextmanager
async def api(
    ctx: Context, client_for: ClientFor, failure: Failure = tool_failure
) -> AsyncIterator[AsyncLociClient]:
    """The caller's client; API errors and an unreachable server become MCP tool errors (`failure`:
    resource errors) carrying the API's status, code and message."""
    try:
        async with client_for(ctx) as client:
            yield client
    except APIError as exc:
        raise failure(api_error_text(exc), exc) from exc
    except ConnectionFailed as exc:
        raise failure(f"Loci is unreachable: {exc}", exc) from exc
    except LociClientError as exc:  # an answer the client could not read (UnexpectedAnswer)
        raise failure(f"Loci's answer was not understood: {exc}", exc) from exc


def build(client_for: ClientFor) -> MCPServer:
    """The MCP server; `client_for(ctx)` gives the API client for the caller of a tool."""
    # the SDK sets up the process's root logger (basicConfig) at this level when nothing has: a host
    # process (a notebook with the app in it) is not made to print every library's INFO lines
    server = MCPServer("loci", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")

    @server.tool(
        description="Store what the user said (kind `turn`: the turn is kept as an event, facts are "
        "extracted and outdated ones superseded) or one memory of the given kind."
    )
    async def remember(
        text: Annotated[
            str,
            Field(min_length=1, max_length=MAX_TEXT_LENGTH, json_schema_extra=NOT_BLANK),
        ],
        entity_id: Entity,
        ctx: Context,
        kind: Kind = "turn",
        namespace: Namespace = "default",
        tags: Tags | None = None,
    ) -> dict[str, Any]:
        if is_blank(text):  # assemble keeps no blank turn and answers 200: the write would be lost unsaid
            raise ToolError("422 validation_error: text must not be blank")
        async with api(ctx, client_for) as client:
            if kind != "turn":
                made = await client.create_memory(
                    MemoryCreate(
                        type=kind, text=text, entity_id=entity_id, namespace=namespace, tags=tags or []
                    )
                )
                return {"stored": [_memory_line(made)]}
            out = await client.assemble(
                AssembleRequest(
                    entity_id=entity_id,
                    turn=text,
                    namespace=namespace,
                    budget=Budget(max_context_tokens=256),
                    ingest=IngestOptions(extract=True, store_turn="event", tags=tags or []),
                )
            )
        return {"upserts": _out(out.extracted.upserts), "facts": [f.text for f in out.extracted.facts]}

    @server.tool(description="Memories ranked by relevance to a query (semantic, keyword, graph, recency).")
    async def recall(
        query: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_LENGTH)],
        ctx: Context,
        entity_id: Entity | None = None,
        namespace: Namespace = "default",
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> dict[str, Any]:
        async with api(ctx, client_for) as client:
            found = await client.recall(
                RecallRequest(query=query, entity_id=entity_id, namespace=namespace, limit=limit)
            )
        return {
            "matches": [
                {"memory_id": m.memory_id, "type": m.type, "text": m.text, "score": m.score}
                for m in found.matches
            ]
        }

    @server.tool(
        description="The context for the user's turn within a token budget: facts, recent events, "
        "a summary and sources. Stores nothing unless `store` is true."
    )
    async def assemble_context(
        turn: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_LENGTH)],
        entity_id: Entity,
        ctx: Context,
        max_context_tokens: Annotated[int, Field(ge=256, le=8192)] = 1200,
        namespace: Namespace = "default",
        goal: Annotated[str, Field(max_length=2000)] | None = None,
        store: bool = False,
    ) -> dict[str, Any]:
        ingest = IngestOptions(extract=store, store_turn="event" if store else "none")
        async with api(ctx, client_for) as client:
            out = await client.assemble(
                AssembleRequest(
                    entity_id=entity_id,
                    turn=turn,
                    namespace=namespace,
                    goal=goal,
                    budget=Budget(max_context_tokens=max_context_tokens),
                    ingest=ingest,
                )
            )
        return {"context": _out(out.context), "request_id": out.request_id}

    @server.tool(
        description="Forget a memory: delete it (irreversibly) or archive it (kept, never retrieved)."
    )
    async def forget(
        memory_id: Annotated[str, Field(min_length=1, max_length=128)],
        ctx: Context,
        mode: Literal["delete", "archive"] = "delete",
    ) -> dict[str, Any]:
        async with api(ctx, client_for) as client:
            if mode == "archive":
                return {
                    "archived": _memory_line(
                        await client.update_memory(memory_id, MemoryPatch(archived=True))
                    )
                }
            gone = await client.delete_memory(memory_id)
        return {"deleted": gone.memory_id}

    @server.tool(
        description="A page of memories, newest first, with optional filters; pass `cursor` "
        "(next_cursor of the previous page) for the next page. A turn `remember` stored is an `event`."
    )
    async def list_memories(
        ctx: Context,
        entity_id: Entity | None = None,
        namespace: Namespace | None = None,
        type: MemoryType | None = None,  # noqa: A002
        tag: Tag | None = None,
        page_size: Annotated[int, Field(ge=1, le=200)] = 50,
        cursor: Annotated[str, Field(max_length=512)] | None = None,
    ) -> dict[str, Any]:
        filters = {"entity_id": entity_id, "namespace": namespace, "type": type, "tag": tag}
        async with api(ctx, client_for) as client:
            page = await client.list_memories(page_size=page_size, cursor=cursor, **filters)
        return {"items": [_memory_line(m) for m in page.items], "next_cursor": page.next_cursor}

    @server.tool(description="One memory with every field.")
    async def get_memory(
        memory_id: Annotated[str, Field(min_length=1, max_length=128)], ctx: Context
    ) -> dict[str, Any]:
        async with api(ctx, client_for) as client:
            return _out(await client.get_memory(memory_id))

    @server.resource(
        "loci://memories/{memory_id}", mime_type="application/json", description="One memory as JSON"
    )
    async def memory_resource(memory_id: str, ctx: Context) -> str:
        async with api(ctx, client_for, resource_failure) as client:
            return msgspec.json.encode(await client.get_memory(memory_id)).decode()

    return server


# --- streamable HTTP on the running server --------------------------------------------------------------
def caller_key(ctx: Context) -> str | None:
    """The API key of the HTTP request that carried this MCP message (Bearer, Token or X-API-Key)."""
    request = ctx.request_context.request
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    authorization = headers.get("authorization")
    if authorization:
        return str(authorization).strip().partition(" ")[2].strip() or None
    key = headers.get("x-api-key")
    return str(key) if key else None


def over_asgi(app: Any) -> ClientFor:
    """Clients that call `app` itself (no socket) with the caller's key; no client-side retries."""
    transport = httpx.ASGITransport(app=app)

    @contextlib.asynccontextmanager
    async def client_for(ctx: Context) -> AsyncIterator[AsyncLociClient]:
        async with AsyncLociClient(
            "http://loci.internal",
            caller_key(ctx) or "",
            transport=transport,
            retry=RetryPolicy(max_retries=0),
        ) as client:
            yield client

    return client_for


def shared(client: AsyncLociClient) -> ClientFor:
    """Every tool call uses `client` (stdio: one process, one key)."""

    @contextlib.asynccontextmanager
    async def client_for(ctx: Context) -> AsyncIterator[AsyncLociClient]:
        yield client

    return client_for


def session_manager(app: Any) -> StreamableHTTPSessionManager:
    """The streamable-HTTP handler for /mcp: stateless, JSON answers."""
    mcp = build(over_asgi(app))
    return StreamableHTTPSessionManager(app=mcp._lowlevel_server, stateless=True, json_response=True)
