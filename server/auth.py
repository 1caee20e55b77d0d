"""API keys: `Authorization: Bearer loci_<random>`. Only the sha256 of a key is stored. `Token <key>` (the
mem0 client's scheme) is accepted as well as `Bearer <key>`, and so is an `X-API-Key: <key>` header when
there is no Authorization header (mem0's open-source server).

A key belongs to one org and carries scopes: `read` (GET routes), `write` (POST/PATCH/DELETE) and
`admin` (private endpoints and key management). Scopes do not imply each other. A revoked or
unknown key is 401; a key without the needed scope is 403.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from engine.errors import Forbidden, Unauthorized
from engine.keys import KEY_PREFIX, hash_key
from engine.storage.base import Store


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """Who is calling: resolved from a valid API key."""

    key_id: str
    org_id: str
    scopes: tuple[str, ...]


class AuthProblem(msgspec.Struct, frozen=True, kw_only=True):
    """Why the credential of a request is not valid (reported as 401 by routes that need auth)."""

    message: str


SCHEMES = ("bearer", "token")


def resolve(store: Store, authorization: str | None) -> Principal | AuthProblem:
    """Resolve an Authorization header to a Principal, or say why it cannot be."""
    if not authorization:
        return AuthProblem(message="missing Authorization header (expected: Bearer <API key>)")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() not in SCHEMES or not token or " " in token:
        return AuthProblem(message="malformed Authorization header (expected: Bearer <API key>)")
    if not token.startswith(KEY_PREFIX) or len(token) > 256:
        return AuthProblem(message="invalid API key")
    key = store.find_api_key(hash_key(token))
    if key is None:
        return AuthProblem(message="invalid API key")
    if key.revoked_at is not None:
        return AuthProblem(message="API key revoked")
    return Principal(key_id=key.key_id, org_id=key.org_id, scopes=tuple(key.scopes))


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    """The caller of an authenticated route (the gateway resolved it before routing)."""
    state = connection.scope.get("state", {})
    found = state.get("principal")
    if isinstance(found, Principal):
        return found
    problem = state.get("auth_problem")
    raise Unauthorized(problem.message if isinstance(problem, AuthProblem) else "missing API key")


def required_scope(method: str) -> str:
    return "read" if method.upper() in ("GET", "HEAD") else "write"


async def require_key(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
    """Litestar guard: any valid key, whatever its scopes. The guards are coroutines: Litestar runs a
    plain function guard in a worker thread, a hop per request for a few dictionary reads."""
    principal_of(connection)


async def require_auth(connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
    """Litestar guard: a valid key with the scope the route needs (`opt['scope']`, else by method)."""
    principal = principal_of(connection)
    scope = handler.opt.get("scope") or required_scope(str(connection.scope.get("method", "GET")))
    if scope not in principal.scopes:
        raise Forbidden(f"API key lacks the {scope!r} scope", details={"required_scope": scope})
