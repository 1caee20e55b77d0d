"""Route handlers, one module per resource. `ROUTES` is what `server.app` registers."""

from __future__ import annotations

from typing import Any

from server.routes import health, memories

ROUTES: list[Any] = [*health.ROUTES, *memories.ROUTES]
