"""Small helpers shared by the context, write and /v1 routes."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.params import HeaderParameter

from engine.errors import Forbidden
from server.auth import principal_of
from server.errors import invalid_input

T = TypeVar("T")
ORG_FIELDS = ("org_id", "organization_id", "org")

IDEMPOTENCY_DOC = HeaderParameter(name="Idempotency-Key", required=False, max_length=128,
                                  description="Replays the first response for the same key and body")
AGENT_DOC = HeaderParameter(name="X-Service-Agent", required=False, max_length=128,
                            description="Agent id within the organization")


def parse_body(data: Any, kind: type[T], *, prefix: str = "") -> T:
    """Decode a JSON document into `kind`, ignoring organization fields; 422 naming the field."""
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in ORG_FIELDS}
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise invalid_input(exc, prefix=prefix) from exc


def require_scope(request: Request[Any, Any, Any], scope: str) -> None:
    """For routes whose scope depends on the body (the guard checked the weaker one)."""
    if scope not in principal_of(request).scopes:
        raise Forbidden(f"API key lacks the {scope!r} scope", details={"required_scope": scope})
