"""The error envelope every error response carries (and the mem0 adapter's variant of it)."""

from __future__ import annotations

from typing import Any

import msgspec


class ErrorBody(msgspec.Struct, kw_only=True):
    """The error envelope of every error response."""

    error: str
    message: str
    request_id: str
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class Mem0ErrorBody(ErrorBody, kw_only=True):
    """The envelope on mem0-compatible routes: the same fields plus `detail` (= message), where mem0
    clients read the error text."""

    detail: str


def as_mem0(body: ErrorBody) -> Mem0ErrorBody:
    """The same error in the mem0 envelope."""
    return Mem0ErrorBody(
        error=body.error,
        message=body.message,
        request_id=body.request_id,
        details=body.details,
        detail=body.message,
    )
