"""GET /v0/health: liveness and readiness, no auth."""

from __future__ import annotations

from litestar import get

from engine.timeutil import utcnow
from server.http import error_responses
from server.schemas.health import Health


@get(
    "/v0/health",
    operation_id="getHealth",
    summary="Liveness and readiness",
    tags=["health"],
    security=[],
    sync_to_thread=False,
    responses=error_responses(429, 500),
)
def health() -> Health:
    return Health(status="ok", now=utcnow())


ROUTES = [health]
