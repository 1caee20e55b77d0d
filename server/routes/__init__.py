"""Route handlers, one module per resource. `ROUTES` is what `server.app` registers."""

from __future__ import annotations

from typing import Any

from server.routes import context, entities, health, keys, mem0, mem0_oss, memories, ops, ui, v1, write

ROUTES: list[Any] = [
    *health.ROUTES,
    *memories.ROUTES,
    *context.ROUTES,
    *write.ROUTES,
    *v1.ROUTES,
    *ops.ROUTES,
    *entities.ROUTES,
    *keys.ROUTES,
    *mem0.ROUTES,
    *mem0_oss.ROUTES,
    *ui.ROUTES,
]

#: operationId -> request-body Structs of the routes above that read their bodies raw; documented by
#: server.openapi.complete
REQUEST_BODIES: dict[str, Any] = {
    **context.REQUEST_BODIES,
    **write.REQUEST_BODIES,
    **v1.REQUEST_BODIES,
    **ops.REQUEST_BODIES,
    **mem0.REQUEST_BODIES,
    **mem0_oss.REQUEST_BODIES,
}
