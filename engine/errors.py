"""Errors raised by the engine. Only `server/` maps them to HTTP statuses and envelope codes.

    LociError                      base of everything the engine raises on purpose
    ├── InvalidInput               well-formed input that breaks a rule (HTTP 422 validation_error)
    │   └── UnknownName            a registry lookup (normalizer, preset, embedder, store...) failed
    ├── NotFound                   the thing does not exist in this org (HTTP 404 not_found)
    ├── Conflict                   a write lost a race or an idempotency key was reused (HTTP 409)
    ├── Forbidden                  the caller lacks a scope (HTTP 403 forbidden)
    ├── Unauthorized               missing or bad credential (HTTP 401 unauthorized)
    ├── NotSupported               a compatibility surface names a feature Loci lacks (HTTP 501)
    ├── RateLimited                over quota (HTTP 429 rate_limited)
    └── Unavailable                a dependency (embedder, LLM, database) failed (HTTP 503)

`field` names the offending request field (dotted path, e.g. ``retrieval.top_k``) where one exists;
`details` is free-form context that ends up in the error envelope.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class LociError(Exception):
    code = "internal_error"

    def __init__(self, message: str, *, field: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.details: dict[str, Any] = dict(details or {})
        if field is not None:
            self.details.setdefault("field", field)


class InvalidInput(LociError):
    code = "validation_error"


class UnknownName(InvalidInput):
    """A name that no registry knows. The message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: Iterable[str], *, field: str | None = None):
        names = sorted(valid)
        super().__init__(
            f"unknown {kind} {name!r}; valid: {', '.join(names)}",
            field=field,
            details={"valid": names},
        )


class NotFound(LociError):
    code = "not_found"


class Conflict(LociError):
    code = "conflict"


class Forbidden(LociError):
    code = "forbidden"


class Unauthorized(LociError):
    code = "unauthorized"


class NotSupported(LociError):
    """A feature a compatibility surface names but Loci does not have (HTTP 501)."""

    code = "not_supported"


class RateLimited(LociError):
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message, details={"retry_after": retry_after})
        self.retry_after = retry_after


class Unavailable(LociError):
    code = "unavailable"
