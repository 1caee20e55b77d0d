"""Request helpers shared by the routes: JSON bodies and their decoding into Structs, bounded headers,
scope checks, idempotent execution, and the documented headers and error responses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio.to_thread
import msgspec
from litestar import Request, Response
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter

from engine.errors import Forbidden, InvalidInput
from server.auth import principal_of
from server.errors import DOCUMENTED_ERRORS, BadRequest, invalid_input
from server.idempotency import HEADER as IDEMPOTENCY_HEADER
from server.idempotency import StoredResponse
from server.schemas.errors import ErrorBody
from server.services import services_of

T = TypeVar("T")
MAX_HEADER_LENGTH = 128
AGENT_HEADER = "X-Service-Agent"
ORG_FIELDS = ("org_id", "organization_id", "org")

IDEMPOTENCY_DOC = HeaderParameter(name="Idempotency-Key", required=False, max_length=MAX_HEADER_LENGTH,
                                  description="Replays the first response for the same key and body")
AGENT_DOC = HeaderParameter(name=AGENT_HEADER, required=False, max_length=MAX_HEADER_LENGTH,
                            description="Agent id within the organization")


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    chosen = statuses or tuple(DOCUMENTED_ERRORS)
    return {s: ResponseSpec(data_container=ErrorBody, description=DOCUMENTED_ERRORS[s],
                            generate_examples=False) for s in chosen}


def bounded_header(request: Request[Any, Any, Any], name: str) -> str | None:
    value = request.headers.get(name)
    if value is not None and len(value) > MAX_HEADER_LENGTH:
        raise InvalidInput(f"{name} must be at most {MAX_HEADER_LENGTH} characters", field=name,
                           details={"max_length": MAX_HEADER_LENGTH})
    return value


async def read_json(request: Request[Any, Any, Any]) -> tuple[bytes, Any]:
    """The raw body and its decoded JSON; 400 for a wrong content type or unparseable JSON."""
    ctype = request.headers.get("content-type")
    if ctype is not None:
        media = ctype.split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise BadRequest(f"Content-Type must be application/json, got {media!r}")
    raw = await request.body()
    if not raw.strip():
        raise BadRequest("request body must be a JSON document")
    try:
        return raw, msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise BadRequest(f"malformed JSON: {exc}") from exc


def to_response(result: StoredResponse) -> Response[bytes]:
    headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
    return Response(content=result.body, status_code=result.status_code, media_type=result.content_type,
                    headers=headers)


async def run_write(request: Request[Any, Any, Any], body: bytes, work: Callable[[str], StoredResponse],
                    *, prepare: Callable[[str], None] | None = None) -> Response[Any]:
    """Run `work(org_id)` in a worker thread under the request's Idempotency-Key (if any).

    `prepare(org_id)`, when given, runs first and outside the write transaction (embedding); a request
    that will be replayed skips it."""
    principal = principal_of(request)
    svc = services_of(request)
    key = request.headers.get(IDEMPOTENCY_HEADER)
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")

    def call() -> StoredResponse:
        org_id = principal.org_id
        if key is not None:
            early = svc.idempotency.lookup(org_id, key, method=request.method, path=path, body=body)
            if early is not None:
                return early
        if prepare is not None:
            prepare(org_id)
        return svc.idempotency.run(org_id, key, method=request.method, path=path, body=body,
                                   work=lambda: work(org_id))

    return to_response(await anyio.to_thread.run_sync(call))


def ok_json(payload: Any) -> StoredResponse:
    return StoredResponse(status_code=200, body=msgspec.json.encode(payload))


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
