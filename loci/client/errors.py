"""Exceptions of the client, one per error status, each carrying the server's error envelope.

LociClientError                  base of everything the client raises
├── InvalidRequest               a value the client cannot send (a header with a control character)
├── ConnectionFailed             no answer after the retries (connection refused, dropped, timed out)
├── UnexpectedAnswer             a success answer whose body is not the call's answer type: .status
└── APIError                     the server answered an error: .status, .envelope (ErrorBody)
    ├── BadRequestError          400 bad_request
    ├── AuthenticationError      401 unauthorized
    ├── PermissionDeniedError    403 forbidden (the key lacks a scope)
    ├── NotFoundError            404 not_found
    ├── ConflictError            409 conflict (an Idempotency-Key reused with another body)
    ├── ValidationError          422 validation_error (envelope.details["field"] names the field)
    ├── RateLimitError           429 rate_limited (after the retries)
    ├── InternalServerError      500 internal_error
    ├── NotSupportedError        501 not_supported
    └── ServiceUnavailableError  503 unavailable (after the retries)
"""

from __future__ import annotations

import msgspec

from loci.wire.errors import ErrorBody


class LociClientError(Exception):
    """Base of the client's exceptions."""


class InvalidRequest(LociClientError):
    """A value the client refuses to send, before any request: a header value (agent, Idempotency-Key,
    `after`, API key) with a control character or a lone surrogate."""


class ConnectionFailed(LociClientError):
    """The server could not be reached (or dropped the connection) on every attempt."""


class UnexpectedAnswer(LociClientError):
    """The server answered success with a body that does not decode as the call's answer."""

    def __init__(self, message: str, *, status: int, request_id: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.request_id = request_id


class APIError(LociClientError):
    def __init__(self, status: int, envelope: ErrorBody) -> None:
        super().__init__(f"{status} {envelope.error}: {envelope.message}")
        self.status = status
        self.envelope = envelope

    @property
    def message(self) -> str:
        return self.envelope.message


class BadRequestError(APIError): ...


class AuthenticationError(APIError): ...


class PermissionDeniedError(APIError): ...


class NotFoundError(APIError): ...


class ConflictError(APIError): ...


class ValidationError(APIError): ...


class RateLimitError(APIError): ...


class InternalServerError(APIError): ...


class NotSupportedError(APIError): ...


class ServiceUnavailableError(APIError): ...


BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationError,
    429: RateLimitError,
    500: InternalServerError,
    501: NotSupportedError,
    503: ServiceUnavailableError,
}


def error_for(status: int, body: bytes, request_id: str | None) -> APIError:
    """The typed exception for an error answer; a body that is not the envelope is kept as its message."""
    try:
        envelope = msgspec.json.decode(body, type=ErrorBody)
    except (msgspec.DecodeError, msgspec.ValidationError):
        envelope = ErrorBody(
            error=f"http_{status}",
            message=body.decode("utf-8", "replace")[:1000],
            request_id=request_id or "",
        )
    return BY_STATUS.get(status, APIError)(status, envelope)
