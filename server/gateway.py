"""The ASGI layer around the whole Litestar router, so it runs for every request, unknown routes and
wrong methods included (Litestar's own middleware only runs for matched routes).

Per request it: assigns the request id (`req_` + ULID, or a sane client-sent `X-Request-Id`),
resolves the API key once (the routes' guard enforces it), counts the request against the rate limit
of the key (or of the client address without a valid key) BEFORE routing, so a limited request has
no effect, answers CORS preflights, and adds `X-Request-Id`, `X-RateLimit-Remaining`,
`X-RateLimit-Reset` and the CORS headers to every response, errors included. An exception that
escapes everything becomes a 500 envelope.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import msgspec

from engine.ids import request_id as new_request_id
from engine.storage.base import Store
from server.auth import AuthProblem, Principal, resolve
from server.errors import failure_for
from server.ratelimit import RateDecision, RateLimiter
from server.schemas.errors import ErrorBody, as_mem0
from server.threads import run_sync

log = logging.getLogger("loci.server")

ASGIApp = Callable[..., Any]
_SANE_ID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
EXPOSED = "X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, Idempotent-Replayed"
#: where the MCP transport is mounted (server.routes.mcp)
MCP_PATH = "/mcp"
ALLOWED_METHODS = "GET, POST, PATCH, DELETE, OPTIONS"
ALLOWED_HEADERS = "Authorization, X-API-Key, Content-Type, Idempotency-Key, X-Service-Agent, X-Request-Id"


_PARAM_TYPE = re.compile(r":[a-z]+}")


def template_of(path: str) -> str:
    """`/v0/memories/{memory_id:str}` -> `/v0/memories/{memory_id}` (both spellings Litestar uses)."""
    return _PARAM_TYPE.sub("}", path)


def _templates_pattern(templates: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern matching a request path against route templates (`{name}` one segment; a
    trailing slash allowed, as the router allows it)."""
    if not templates:
        return None
    parts = [
        "/".join("[^/]+" if seg.startswith("{") else re.escape(seg) for seg in template_of(t).split("/"))
        for t in templates
    ]
    return re.compile(f"^(?:{'|'.join(p.rstrip('/') for p in parts)})/?$")


def _headers(scope: dict[str, Any], name: bytes) -> list[str]:
    return [bytes(value).decode("latin-1") for key, value in scope.get("headers", []) if key.lower() == name]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    found = _headers(scope, name)
    return found[0] if found else None


class Gateway:
    def __init__(
        self,
        app: ASGIApp,
        *,
        store: Store,
        limiter: RateLimiter,
        cors_origins: tuple[str, ...] = (),
        allow: dict[str, str] | None = None,
        mem0_paths: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.store = store
        self.limiter = limiter
        self.cors_origins = cors_origins
        #: route template -> every method of the path (Litestar's own OPTIONS answer may list only the
        #: methods of the first handler registered for a path)
        self.allow = allow or {}
        #: the mem0-compatible routes' templates: errors answered here carry mem0's `detail` there too
        self._mem0 = _templates_pattern(mem0_paths)

    def _error_body(self, path: str, body: ErrorBody) -> bytes:
        """The error envelope, with mem0's `detail` on mem0-compatible paths (as their routes answer)."""
        if self._mem0 is not None and self._mem0.match(path):
            return msgspec.json.encode(as_mem0(body))
        return msgspec.json.encode(body)

    # --- pieces ------------------------------------------------------------------------------------
    def _cors_headers(self, origin: str | None) -> list[tuple[bytes, bytes]]:
        if not self.cors_origins:
            return []
        if "*" in self.cors_origins:
            allow = "*"
        elif origin is None:
            allow = self.cors_origins[0]
        elif origin in self.cors_origins:
            allow = origin
        else:
            return []
        out = [
            (b"access-control-allow-origin", allow.encode()),
            (b"access-control-expose-headers", EXPOSED.encode()),
        ]
        if allow != "*":
            out.append((b"vary", b"Origin"))
        return out

    def _admit(
        self, authorization: list[str], client: str, count: bool, carrier: bool = False
    ) -> tuple[Principal | AuthProblem, RateDecision]:
        """Resolve the key and count the request (runs in a worker thread: the store is sync). A
        `carrier` request (/mcp: its tool calls are API requests, counted when they run) is counted,
        and refused when the bucket is empty, only without a valid key: with one, a tool call that
        meets the limit gets the API's 429 as a tool error. Two credentials are none: which one would
        be meant is ambiguous."""
        if len(authorization) > 1:
            who: Principal | AuthProblem = AuthProblem(message="more than one Authorization header")
        else:
            who = resolve(self.store, authorization[0] if authorization else None)
        bucket = f"key:{who.key_id}" if isinstance(who, Principal) else f"ip:{client}"
        if carrier and isinstance(who, Principal):  # its tool calls are counted, and refused, as they run
            return who, msgspec.structs.replace(self.limiter.peek(bucket), allowed=True)
        decision = self.limiter.hit(bucket) if count else self.limiter.peek(bucket)
        return who, decision

    def _full_allow(
        self, scope: dict[str, Any], headers: list[tuple[bytes, bytes]]
    ) -> list[tuple[bytes, bytes]]:
        """`Allow` with every method of the matched path (on OPTIONS and 405 answers)."""
        methods = self.allow.get(template_of(str(scope.get("path_template", ""))))
        if methods is None or not any(k.lower() == b"allow" for k, _ in headers):
            return headers
        return [(k, v) for k, v in headers if k.lower() != b"allow"] + [(b"allow", methods.encode())]

    @staticmethod
    def _rate_headers(decision: RateDecision) -> list[tuple[bytes, bytes]]:
        return [
            (b"x-ratelimit-limit", str(decision.limit).encode()),
            (b"x-ratelimit-remaining", str(decision.remaining).encode()),
            (b"x-ratelimit-reset", str(decision.reset_after).encode()),
        ]

    @staticmethod
    async def _send_json(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    *headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    # --- the ASGI entry ------------------------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent_id = _header(scope, b"x-request-id")
        rid = sent_id if sent_id and _SANE_ID.match(sent_id) else new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = rid
        origin = _header(scope, b"origin")
        client = (scope.get("client") or ("unknown", 0))[0]
        preflight = (
            scope["method"] == "OPTIONS"
            and origin is not None
            and _header(scope, b"access-control-request-method") is not None
        )
        authorization = _headers(scope, b"authorization") or [
            f"Bearer {api_key}" for api_key in _headers(scope, b"x-api-key")
        ]
        path = scope.get("path", "")
        carrier = path == MCP_PATH or path.startswith(MCP_PATH + "/")
        try:
            who, decision = await run_sync(self._admit, authorization, client, not preflight, carrier)
        except Exception as exc:  # the key store or the shared limiter is down: 503, not a bare 500
            failure = failure_for(exc, rid)
            more = [(k.lower().encode(), v.encode()) for k, v in failure.headers.items()]
            await self._send_json(
                send,
                failure.status,
                self._error_body(path, failure.body),
                [(b"x-request-id", rid.encode()), *self._cors_headers(origin), *more],
            )
            return
        state["principal" if isinstance(who, Principal) else "auth_problem"] = who
        extra = [(b"x-request-id", rid.encode()), *self._rate_headers(decision), *self._cors_headers(origin)]

        if preflight:
            cors = self._cors_headers(origin)
            if cors:
                cors += [
                    (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
                    (b"access-control-allow-headers", ALLOWED_HEADERS.encode()),
                    (b"access-control-max-age", b"600"),
                ]
            await send(
                {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [(b"x-request-id", rid.encode()), *self._rate_headers(decision), *cors],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return

        if not decision.allowed:
            body = self._error_body(
                path,
                ErrorBody(
                    error="rate_limited",
                    message="rate limit exceeded",
                    request_id=rid,
                    details={"limit": decision.limit, "retry_after": decision.reset_after},
                ),
            )
            await self._send_json(
                send, 429, body, [*extra, (b"retry-after", str(decision.reset_after).encode())]
            )
            return

        started = False
        replace = {name for name, _ in extra}

        async def send_with_headers(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in replace]
                message = {**message, "headers": self._full_allow(scope, headers) + extra}
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # the last resort: Litestar's handlers normally answer first
            if started:
                raise
            failure = failure_for(exc, rid)
            body = self._error_body(path, failure.body)
            more = [(k.lower().encode(), v.encode()) for k, v in failure.headers.items()]
            await self._send_json(send, failure.status, body, [*extra, *more])
