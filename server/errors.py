"""The one place that turns exceptions into the error envelope.

Envelope: {"error": code, "message": str, "request_id": str, "details": {...}}. Status mapping:
400 bad_request, 401 unauthorized, 403 forbidden, 404 not_found, 405 method_not_allowed, 409 conflict,
422 validation_error (details.field names the field), 429 rate_limited (Retry-After), 500 internal_error
(no stack trace leaves the server), 501 not_supported (a mem0 feature Loci does not have), 503 unavailable.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec
from litestar import Request, Response
from litestar.exceptions import (
    HTTPException,
    InternalServerException,
    MethodNotAllowedException,
    NotFoundException,
    ValidationException,
)

from engine import errors as engine_errors
from engine.ids import request_id as new_request_id
from loci.wire.writes import MAX_BODY_BYTES
from server.schemas.errors import ErrorBody

log = logging.getLogger("loci.server")


class BadRequest(Exception):
    """Malformed request: unparseable JSON, invalid UTF-8, nesting too deep, a wrong content type (400)."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


ENGINE_STATUS: dict[type[engine_errors.LociError], int] = {
    engine_errors.InvalidInput: 422,
    engine_errors.NotFound: 404,
    engine_errors.Conflict: 409,
    engine_errors.Forbidden: 403,
    engine_errors.Unauthorized: 401,
    engine_errors.RateLimited: 429,
    engine_errors.Unavailable: 503,
    engine_errors.NotSupported: 501,
}

HTTP_CODES: dict[int, str] = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "bad_request",
    422: "validation_error",
    429: "rate_limited",
    500: "internal_error",
    501: "not_supported",
    503: "unavailable",
}

#: what Litestar raises when the client goes away before its body is read
_CLIENT_GONE = "client disconnected prematurely"
#: logged and counted for a request whose client left before it was read (nginx's code); nobody receives it
CLIENT_CLOSED = 499

#: the error statuses documented on every authenticated route
DOCUMENTED_ERRORS: dict[int, str] = {
    400: "Malformed request (unparseable JSON, wrong content type)",
    401: "Missing, unknown or revoked API key",
    403: "The API key lacks the scope this route needs",
    404: "Not found (also a memory of another organization)",
    409: "Idempotency-Key reused with another body, or a write race lost",
    422: "Validation error; details.field names the offending field",
    429: "Rate limited; see Retry-After",
    413: f"The body is larger than {MAX_BODY_BYTES // 1_000_000} MB",
    500: "Internal error",
    503: "A dependency (the database) is unavailable; retry after Retry-After seconds",
}

#: seconds a client is told to wait (Retry-After) when a dependency is unavailable
RETRY_AFTER_UNAVAILABLE = 5
#: driver errors that mean the database cannot be reached (a store normally wraps them as Unavailable)
_OUTAGE_CLASSES = frozenset({("psycopg", "OperationalError"), ("psycopg_pool", "PoolTimeout")})


def is_outage(exc: BaseException) -> bool:
    """A database driver's connection-level error that escaped its store (answered 503, not 500)."""
    return any((cls.__module__.split(".")[0], cls.__name__) in _OUTAGE_CLASSES for cls in type(exc).__mro__)


class Failure(msgspec.Struct, kw_only=True):
    status: int
    body: ErrorBody
    headers: dict[str, str] = msgspec.field(default_factory=dict)


def request_id_of(scope: Any) -> str:
    state = scope.get("state") if hasattr(scope, "get") else None
    rid = state.get("request_id") if isinstance(state, dict) else None
    return rid if isinstance(rid, str) else new_request_id()


#: handler parameter names whose wire name differs (query `type` is `memory_type` in Python)
PARAM_ALIASES: dict[str, str] = {"memory_type": "type", "event_type": "type"}


def _wire_name(key: str, source: str) -> str:
    if source == "header":
        return key.replace("_", "-").title()  # idempotency_key -> Idempotency-Key
    return PARAM_ALIASES.get(key, key)


def _engine_status(exc: engine_errors.LociError) -> int:
    for cls in type(exc).__mro__:
        if cls in ENGINE_STATUS:
            return ENGINE_STATUS[cls]
    return 500


def _engine_failure(exc: engine_errors.LociError, request_id: str) -> Failure:
    status = _engine_status(exc)
    if status == 500:
        log.error("unmapped engine error", exc_info=exc)
        return Failure(
            status=500,
            body=ErrorBody(error="internal_error", message="internal error", request_id=request_id),
        )
    headers: dict[str, str] = {}
    if isinstance(exc, engine_errors.RateLimited):
        headers["Retry-After"] = str(exc.retry_after)
    if status == 503:
        headers["Retry-After"] = str(RETRY_AFTER_UNAVAILABLE)
    return Failure(
        status=status,
        headers=headers,
        body=ErrorBody(error=exc.code, message=exc.message, request_id=request_id, details=dict(exc.details)),
    )


def _validation_failure(exc: ValidationException, request_id: str) -> Failure:
    """Litestar's parameter validation: details.field names the first offending field (its wire name)."""
    details: dict[str, Any] = {}
    extra = exc.extra if isinstance(exc.extra, list) else []
    if extra and isinstance(extra[0], dict):
        first = extra[0]
        if "key" in first:
            source = first.get("source", "")
            source = str(getattr(source, "value", source))
            details["field"] = _wire_name(str(first["key"]), source)
            details["source"] = source
        message = str(first.get("message") or exc.detail)
    else:
        message = exc.detail
    details["errors"] = [
        {k: str(getattr(v, "value", v)) for k, v in e.items()} for e in extra if isinstance(e, dict)
    ]
    return Failure(
        status=422,
        body=ErrorBody(error="validation_error", message=message, request_id=request_id, details=details),
    )


def _method_not_allowed(exc: MethodNotAllowedException, request_id: str) -> Failure:
    headers: dict[str, str] = {}
    allow = (exc.headers or {}).get("allow", "")
    if allow:
        headers["Allow"] = allow
    return Failure(
        status=405,
        headers=headers,
        body=ErrorBody(
            error="method_not_allowed",
            message="method not allowed",
            request_id=request_id,
            details={"allow": [m.strip() for m in allow.split(",") if m.strip()]},
        ),
    )


def failure_for(exc: BaseException, request_id: str) -> Failure:
    """The status, envelope and extra headers for any exception."""
    if isinstance(exc, engine_errors.LociError):
        return _engine_failure(exc, request_id)
    if isinstance(exc, BadRequest):
        return Failure(
            status=400,
            body=ErrorBody(
                error="bad_request", message=exc.message, request_id=request_id, details=dict(exc.details)
            ),
        )
    if is_outage(exc):
        log.warning("database unavailable (request %s): %s", request_id, exc)
        return Failure(
            status=503,
            headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)},
            body=ErrorBody(error="unavailable", message="the database is unavailable", request_id=request_id),
        )
    if isinstance(exc, ValidationException):
        return _validation_failure(exc, request_id)
    if isinstance(exc, MethodNotAllowedException):
        return _method_not_allowed(exc, request_id)
    if isinstance(exc, NotFoundException):
        return Failure(
            status=404, body=ErrorBody(error="not_found", message="not found", request_id=request_id)
        )
    if isinstance(exc, HTTPException) and exc.status_code < 500:
        status = exc.status_code
        return Failure(
            status=status,
            body=ErrorBody(
                error=HTTP_CODES.get(status, "bad_request"), message=str(exc.detail), request_id=request_id
            ),
        )
    if isinstance(exc, InternalServerException) and exc.detail == _CLIENT_GONE:
        log.info("client left before its request was read (request %s)", request_id)
        return Failure(
            status=CLIENT_CLOSED,
            body=ErrorBody(
                error="client_closed", message="the client closed the request", request_id=request_id
            ),
        )
    log.error("unhandled error (request %s)", request_id, exc_info=exc)
    return Failure(
        status=500, body=ErrorBody(error="internal_error", message="internal error", request_id=request_id)
    )


def exception_handler(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    failure = failure_for(exc, request_id_of(request.scope))
    return Response(content=failure.body, status_code=failure.status, headers=failure.headers)


# --- msgspec validation errors -> field names -------------------------------------------------------
_AT = " - at `$"
_FIELD = re.compile(r"(?:unknown|required) field `(?P<name>[^`]+)`")


def invalid_input(exc: msgspec.ValidationError, *, prefix: str = "") -> engine_errors.InvalidInput:
    """`Expected str of length <= 64 - at $.tags[0]` -> InvalidInput(field="tags[0]").
    Unknown/missing fields name the field itself (`items[2].text`). `prefix` prepends a path."""
    text = str(exc)
    path = ""
    head, at, tail = text.rpartition(_AT)
    if at and tail.endswith("`") and "`" not in tail[:-1]:
        path, text = tail[:-1], head.rstrip()
    named = _FIELD.search(text)
    if named:
        path = f"{path}.{named.group('name')}"
    path = path.lstrip(".")
    field = f"{prefix}.{path}".strip(".") if prefix else path
    field = field.replace(".[", "[")
    details: dict[str, Any] = {}
    index = re.match(r"^items\[(\d+)\]", field)
    if index:
        details["index"] = int(index.group(1))
    return engine_errors.InvalidInput(text, field=field or None, details=details)
