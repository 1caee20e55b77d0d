"""GET /v0/health: liveness and readiness, no auth: 200 `ok` when the store answers a query within
`READY_SECONDS`, else 503 `unavailable` (with Retry-After), so a load balancer stops sending requests
the server could only answer with 503s after a wait."""

from __future__ import annotations

from typing import Any

from litestar import Request, get

from engine.timeutil import utcnow
from server.http import error_responses
from server.schemas.health import Health
from server.services import services_of
from server.threads import run_sync

#: how long a health check waits for the database
READY_SECONDS = 2.0


@get(
    "/v0/health",
    operation_id="getHealth",
    summary="Liveness and readiness",
    tags=["health"],
    security=[],
    responses=error_responses(429, 500, 503),
)
async def health(request: Request[Any, Any, Any]) -> Health:
    await run_sync(services_of(request).store.ping, READY_SECONDS)
    return Health(status="ok", now=utcnow())


ROUTES = [health]
