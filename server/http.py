"""Request helpers shared by the routes: JSON bodies and their decoding into Structs, bounded headers,
scope checks, idempotent execution, and the documented headers and error responses.

Bodies are UTF-8 JSON nested at most `MAX_JSON_DEPTH` levels (400 otherwise); a date-time in a body or
a query has a UTC form within years 1-9999 (422 naming the field). Optional headers that carry values
(`X-Service-Agent`, `Idempotency-Key`) are read from the raw request: sent at most once, decoded as
UTF-8 like the body, 1..128 characters, not blank (422 naming the header otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi
from litestar import Request, Response
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter, KwargDefinition, QueryParameter

from engine.errors import Forbidden, InvalidInput
from engine.memory_service import NOT_BLANK_RULE
from engine.models import NOT_BLANK_PATTERN, is_blank
from engine.timeutil import OUT_OF_RANGE, RANGE_RULE, in_range
from server.auth import principal_of
from server.errors import DOCUMENTED_ERRORS, BadRequest, invalid_input
from server.gateway import template_of
from server.idempotency import HEADER as IDEMPOTENCY_HEADER
from server.idempotency import RequestPrint, StoredResponse
from server.schema_rules import DATE_TIME_PATTERN, inner_types
from server.schemas.errors import ErrorBody
from server.services import services_of
from server.threads import run_sync

T = TypeVar("T")
MAX_HEADER_LENGTH = 128
AGENT_HEADER = "X-Service-Agent"
ORG_FIELDS = ("org_id", "organization_id", "org")
#: the deepest nesting a JSON body may have (the document itself is level 1)
MAX_JSON_DEPTH = 32
#: bodies up to this many bytes are decoded on the event loop, larger ones in a worker thread
SMALL_BODY = 64 * 1024

#: what `bounded_header` enforces (UTF-8, 1..128 characters, not blank), documented here and not
#: checked by Litestar (which would count the bytes of a UTF-8 value as characters)
HEADER_SCHEMA: dict[str, Any] = {"minLength": 1, "maxLength": MAX_HEADER_LENGTH, "pattern": NOT_BLANK_PATTERN}
IDEMPOTENCY_DOC = HeaderParameter(
    name=IDEMPOTENCY_HEADER,
    required=False,
    schema_extra=HEADER_SCHEMA,
    description="Replays the first response for the same key and body",
)
AGENT_DOC = HeaderParameter(
    name=AGENT_HEADER,
    required=False,
    schema_extra=HEADER_SCHEMA,
    description="Agent id within the organization",
)
#: the documented shape of an id given as a query or path parameter (`check_ids` enforces it)
ID_SCHEMA: dict[str, Any] = {"pattern": NOT_BLANK_PATTERN}
#: a date-time query parameter as documented (the route parses it with `query_datetime`)
DATE_TIME_FORMAT = "date-time"


def date_time_query(description: str) -> KwargDefinition:
    """A date-time query parameter's declaration (read it with `query_datetime`)."""
    return QueryParameter(format=DATE_TIME_FORMAT, pattern=DATE_TIME_PATTERN, description=description)


def error_responses(*statuses: int) -> dict[int, ResponseSpec]:
    chosen = statuses or tuple(DOCUMENTED_ERRORS)
    return {
        s: ResponseSpec(data_container=ErrorBody, description=DOCUMENTED_ERRORS[s], generate_examples=False)
        for s in chosen
    }


def bounded_header(request: Request[Any, Any, Any], name: str) -> str | None:
    """An optional header's value (see the module docstring); None when absent."""
    wanted = name.lower().encode("latin-1")
    raw = [bytes(v) for k, v in request.scope.get("headers", []) if bytes(k).lower() == wanted]
    if not raw:
        return None
    if len(raw) > 1:
        raise InvalidInput(f"{name} must be sent at most once", field=name)
    try:
        value = raw[0].decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InvalidInput(f"{name} must be UTF-8 text", field=name) from None
    if is_blank(value):
        raise InvalidInput(f"{name} must not be blank", field=name, details={"rule": NOT_BLANK_RULE})
    if len(value) > MAX_HEADER_LENGTH:
        raise InvalidInput(
            f"{name} must be 1 to {MAX_HEADER_LENGTH} characters",
            field=name,
            details={"max_length": MAX_HEADER_LENGTH},
        )
    return value


def query_datetime(value: str | None, name: str) -> datetime | None:
    """A date-time query parameter: RFC 3339 only (no numbers), with a UTC form (422 naming it)."""
    if value is None:
        return None
    try:
        parsed = msgspec.convert(value, datetime)
    except msgspec.ValidationError:
        raise InvalidInput(
            f"{name} must be an RFC 3339 date-time such as 2024-05-01T12:00:00Z",
            field=name,
            details={"value": value[:64]},
        ) from None
    if not in_range(parsed):
        raise InvalidInput(OUT_OF_RANGE, field=name, details={"value": value[:64], "rule": RANGE_RULE})
    return parsed


def _too_deep(data: Any) -> str | None:
    """The path of the first container nested deeper than MAX_JSON_DEPTH, else None (no recursion)."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return path or "body"
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in children:
            if isinstance(child, dict | list):
                step = f"[{key}]" if isinstance(node, list) else (f".{key}" if path else str(key))
                stack.append((child, depth + 1, path + step))
    return None


#: an escaped high surrogate (uD800..uDBFF, its backslash not itself escaped) with no low one after it
_LONE_HIGH_SURROGATE = re.compile(
    rb"(?:^|[^\\])(?:\\\\)*(\\u[dD][89abAB][0-9a-fA-F]{2})(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)


def decode_json(raw: bytes) -> Any:
    """Decode a JSON body: 400 when it is not JSON, not UTF-8 or nested too deep."""
    try:
        data = msgspec.json.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        # msgspec releases raise either for a string that is not UTF-8; the position is found here
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise BadRequest("the body is not valid UTF-8", details={"position": bad.start}) from exc
        lone = _LONE_HIGH_SURROGATE.search(raw) if "truncated" in str(exc) else None
        if lone is not None:  # msgspec calls an escaped high surrogate with no low one after it truncation
            raise BadRequest(
                f"malformed JSON: invalid utf-16 surrogate pair (byte {lone.start(1)}): a high surrogate "
                "escape with no low surrogate after it (a string cut inside a character?)",
                details={"position": lone.start(1)},
            ) from exc
        raise BadRequest(f"malformed JSON: {exc}") from exc
    except RecursionError:
        raise BadRequest(
            f"JSON nested deeper than {MAX_JSON_DEPTH} levels", details={"max_depth": MAX_JSON_DEPTH}
        ) from None
    if isinstance(data, dict | list):
        path = _too_deep(data)
        if path is not None:
            raise BadRequest(
                f"JSON nested deeper than {MAX_JSON_DEPTH} levels",
                details={"max_depth": MAX_JSON_DEPTH, "field": path},
            )
    return data


async def read_json(request: Request[Any, Any, Any]) -> tuple[bytes, Any]:
    """The raw body and its decoded JSON; 400 for a wrong content type or a body `decode_json` refuses."""
    ctype = request.headers.get("content-type")
    if ctype is not None:
        media = ctype.split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise BadRequest(f"Content-Type must be application/json, got {media!r}")
    raw = await request.body()
    if not raw.strip():
        raise BadRequest("request body must be a JSON document")
    if len(raw) > SMALL_BODY:  # decoding and walking megabytes would hold the event loop
        return raw, await run_sync(decode_json, raw)
    return raw, decode_json(raw)


def to_response(result: StoredResponse) -> Response[bytes]:
    headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
    return Response(
        content=result.body, status_code=result.status_code, media_type=result.content_type, headers=headers
    )


async def run_write(
    request: Request[Any, Any, Any],
    body: bytes,
    work: Callable[[str], StoredResponse],
    *,
    prepare: Callable[[str], None] | None = None,
    writes: bool = True,
    parsed: Any = None,
) -> Response[Any]:
    """Run `work(org_id)` in a worker thread, in one transaction, under the request's Idempotency-Key
    (if any): a request that fails writes nothing, with a key or without.

    `prepare(org_id)`, when given, runs first and outside the write transaction (embedding); a request
    that will be replayed skips it. `writes=False` (an assemble that ingests nothing): without a key,
    `work` runs outside a transaction, since all it writes is a read's log entry that need not wait
    for the disk. `parsed`: the body as the route read it, which an Idempotency-Key's retry is compared
    by (defaults filled in); without it, by the JSON document."""
    principal = principal_of(request)
    svc = services_of(request)
    key = bounded_header(request, IDEMPOTENCY_HEADER)
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")

    fp = RequestPrint(request.method, path, body, bounded_header(request, AGENT_HEADER), parsed=parsed)

    def call() -> StoredResponse:
        org_id = principal.org_id
        if key is not None:
            early = svc.idempotency.lookup(org_id, key, fp)
            if early is not None:
                return early
        if prepare is not None:
            prepare(org_id)
        if key is None and not writes:
            return work(org_id)
        return svc.idempotency.run(org_id, key, fp, lambda: work(org_id))

    return to_response(await run_sync(call))


def ok_json(payload: Any) -> StoredResponse:
    return StoredResponse(status_code=200, body=msgspec.json.encode(payload))


_TYPE_INFO: dict[Any, mi.Type] = {}


def _type_info(kind: Any) -> mi.Type:
    """msgspec's description of a body type, computed once per type (it takes milliseconds)."""
    found = _TYPE_INFO.get(kind)
    if found is None:
        found = _TYPE_INFO[kind] = mi.type_info(kind)
    return found


#: (leaf type, id of a description) -> whether that leaf can occur inside it
_HOLDS: dict[tuple[type, int], bool] = {}


def _holds(info: mi.Type, leaf: type[mi.Type], seen: frozenset[int] = frozenset()) -> bool:
    """Whether a `leaf` (e.g. `mi.IntType`) can occur anywhere in `info` (subtrees without one are not
    walked)."""
    key = (leaf, id(info))
    if key in _HOLDS:
        return _HOLDS[key]
    if id(info) in seen:
        return False
    inner = seen | {id(info)}
    found = isinstance(info, leaf) or any(_holds(t, leaf, inner) for t in inner_types(info))
    _HOLDS[key] = found
    return found


def _whole_numbers(data: Any, info: mi.Type) -> Any:
    """`data` with floats that have no fractional part (59.0) as ints where `info` wants an int: JSON
    Schema's `integer` includes them, msgspec's `int` does not. Nothing else is converted."""
    while isinstance(info, mi.Metadata):
        info = info.type
    if not _holds(info, mi.IntType):
        return data
    if isinstance(info, mi.IntType):
        return int(data) if isinstance(data, float) and data.is_integer() else data
    if isinstance(info, mi.UnionType):
        if any(isinstance(t, mi.FloatType) for t in info.types):
            return data
        for option in info.types:
            data = _whole_numbers(data, option)
        return data
    if isinstance(info, mi.StructType) and isinstance(data, dict):
        fields = {f.encode_name: f.type for f in info.fields}
        return {k: _whole_numbers(v, fields[k]) if k in fields else v for k, v in data.items()}
    if isinstance(info, mi.ListType | mi.VarTupleType) and isinstance(data, list):
        return [_whole_numbers(item, info.item_type) for item in data]
    if isinstance(info, mi.DictType) and isinstance(data, dict):
        return {k: _whole_numbers(v, info.value_type) for k, v in data.items()}
    return data


def parse_body(data: Any, kind: type[T], *, prefix: str = "") -> T:
    """Decode a JSON document into `kind`, ignoring organization fields; 422 naming the field, also for a
    date-time with no UTC form (see `engine.timeutil.in_range`)."""
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k not in ORG_FIELDS}
    try:
        body = msgspec.convert(_whole_numbers(data, _type_info(kind)), kind)
    except msgspec.ValidationError as exc:
        raise invalid_input(exc, prefix=prefix) from exc
    check_datetimes(body, prefix)
    return body


_DATED_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}


def _dated_fields(kind: type) -> tuple[tuple[str, str], ...]:
    """(attribute, JSON name) of the fields of a Struct type that may hold a date-time (computed once
    per type: a body's other fields are not walked)."""
    found = _DATED_FIELDS.get(kind)
    if found is None:
        info = _type_info(kind)
        assert isinstance(info, mi.StructType)
        found = _DATED_FIELDS[kind] = tuple(
            (f.name, f.encode_name) for f in info.fields if _holds(f.type, mi.DateTimeType)
        )
    return found


def _children(value: Any, path: str) -> list[tuple[Any, str]]:
    if isinstance(value, msgspec.Struct):
        return [
            (getattr(value, name), f"{path}.{encoded}" if path else encoded)
            for name, encoded in _dated_fields(type(value))
        ]
    if isinstance(value, list | tuple):
        return [
            (item, f"{path}[{i}]")
            for i, item in enumerate(value)
            if isinstance(item, msgspec.Struct | datetime)
        ]
    return []


def check_datetimes(value: Any, path: str = "") -> None:
    """422 naming the first date-time of a decoded body (Structs and their lists) outside years 1-9999 in UTC."""
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, datetime):
            if not in_range(node):
                raise InvalidInput(
                    OUT_OF_RANGE, field=where or None, details={"value": node.isoformat(), "rule": RANGE_RULE}
                )
            continue
        stack.extend(_children(node, where))


def require_scope(request: Request[Any, Any, Any], scope: str) -> None:
    """For routes whose scope depends on the body (the guard checked the weaker one)."""
    if scope not in principal_of(request).scopes:
        raise Forbidden(f"API key lacks the {scope!r} scope", details={"required_scope": scope})


# --- query parameters the route does not know ------------------------------------------------------
#: GET routes of these prefixes refuse a query parameter their operation does not name (a misspelt
#: `limit` for `page_size` would otherwise be ignored); mem0's routes keep mem0's leniency
STRICT_QUERY_PREFIX = "/v0/"


def _known_query(request: Request[Any, Any, Any]) -> dict[str, frozenset[str]]:
    """Path template -> the query parameters its GET operation names in the OpenAPI document."""
    known: dict[str, frozenset[str]] | None = getattr(request.app.state, "known_query", None)
    if known is None:
        doc = request.app.openapi_schema.to_schema()
        known = {
            path: frozenset(p["name"] for p in op.get("parameters", []) if p.get("in") == "query")
            for path, ops in doc.get("paths", {}).items()
            if path.startswith(STRICT_QUERY_PREFIX) and isinstance(op := ops.get("get"), dict)
        }
        request.app.state.known_query = known
    return known


async def refuse_unknown_query(request: Request[Any, Any, Any]) -> None:
    """before_request: 422 naming the first query parameter a /v0 GET route that takes query parameters
    does not know, as an unknown body field is. A coroutine: Litestar runs a plain function hook on a
    worker thread, a hop on every request of every route."""
    if request.method != "GET" or not request.scope["query_string"]:
        return
    if not request.scope["path"].startswith(STRICT_QUERY_PREFIX):
        return
    names = _known_query(request)
    for path in request.route_handler.paths:
        known = names.get(template_of(path))
        if not known:  # a route that takes no query parameter is left lenient (health probes add some)
            continue
        for name in request.query_params:
            if name not in known:
                raise InvalidInput(
                    f"unknown query parameter `{name}`; this route takes: {', '.join(sorted(known))}",
                    field=name,
                    details={"source": "query", "valid": sorted(known)},
                )
        return
