"""Small helpers shared by the routes: body decoding (with its field paths) and scope checks."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

import msgspec
from litestar import Request
from litestar.params import HeaderParameter

from engine.errors import Forbidden, InvalidInput
from engine.timeutil import OUT_OF_RANGE, in_range
from server.auth import principal_of
from server.errors import invalid_input
from server.http import AGENT_HEADER, MAX_HEADER_LENGTH
from server.idempotency import HEADER as IDEMPOTENCY_HEADER

T = TypeVar("T")
ORG_FIELDS = ("org_id", "organization_id", "org")

#: what `server.http.bounded_header` enforces (UTF-8, 1..128 characters, not blank), documented here
#: and not checked by Litestar (which would count the bytes of a UTF-8 value as characters)
HEADER_SCHEMA: dict[str, Any] = {"minLength": 1, "maxLength": MAX_HEADER_LENGTH, "pattern": r"\S"}
IDEMPOTENCY_DOC = HeaderParameter(name=IDEMPOTENCY_HEADER, required=False, schema_extra=HEADER_SCHEMA,
                                  description="Replays the first response for the same key and body")
AGENT_DOC = HeaderParameter(name=AGENT_HEADER, required=False, schema_extra=HEADER_SCHEMA,
                            description="Agent id within the organization")


def parse_body(data: Any, kind: type[T], *, prefix: str = "") -> T:
    """Decode a JSON document into `kind`, ignoring organization fields; 422 naming the field, also for a
    date-time with no UTC form (see `engine.timeutil.in_range`)."""
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in ORG_FIELDS}
    try:
        body = msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:
        raise invalid_input(exc, prefix=prefix) from exc
    check_datetimes(body, prefix)
    return body


def _children(value: Any, path: str) -> list[tuple[Any, str]]:
    if isinstance(value, msgspec.Struct):
        return [(getattr(value, f.name), f"{path}.{f.encode_name}" if path else f.encode_name)
                for f in msgspec.structs.fields(value)]
    if isinstance(value, list | tuple):
        return [(item, f"{path}[{i}]") for i, item in enumerate(value)
                if isinstance(item, msgspec.Struct | datetime)]
    return []


def check_datetimes(value: Any, path: str = "") -> None:
    """422 naming the first date-time of a decoded body (Structs and their lists) outside years 1-9999 in UTC."""
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, datetime):
            if not in_range(node):
                raise InvalidInput(OUT_OF_RANGE, field=where or None, details={"value": node.isoformat()})
            continue
        stack.extend(_children(node, where))


def require_scope(request: Request[Any, Any, Any], scope: str) -> None:
    """For routes whose scope depends on the body (the guard checked the weaker one)."""
    if scope not in principal_of(request).scopes:
        raise Forbidden(f"API key lacks the {scope!r} scope", details={"required_scope": scope})
