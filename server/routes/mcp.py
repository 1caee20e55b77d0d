"""/mcp: the MCP server (server.mcp) over streamable HTTP, mounted on the API. Any valid key may open
it, whatever its scopes; each tool then needs the scope of the REST call it makes (a read-only key
cannot call write tools, a write-only key cannot recall)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from litestar import Litestar, asgi

from server.auth import require_key
from server.gateway import MCP_PATH
from server.mcp import session_manager


@asgi(
    MCP_PATH,
    is_mount=True,
    copy_scope=True,
    guards=[require_key],  # the scopes are checked where the tools call the API
    include_in_schema=False,
)
async def mcp_endpoint(scope: Any, receive: Any, send: Any) -> None:
    await scope["app"].state.mcp.handle_request(scope, receive, send)


@contextlib.asynccontextmanager
async def lifespan(app: Litestar) -> AsyncIterator[None]:
    """Runs the MCP session manager while the app serves (its tools call `app` in-process)."""
    app.state.mcp = session_manager(app)
    async with app.state.mcp.run():
        yield


ROUTES: list[Any] = [mcp_endpoint]
