"""No 500 from input: each kind of bad input is a 4xx with the error envelope and a field path, and
nothing is stored (memories and events counted before and after)."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from litestar import Litestar, Request
from litestar.testing import TestClient
from litestar.types import HTTPScope

from engine.errors import InvalidInput, Unavailable
from engine.storage import open_store
from engine.storage.base import EventQuery, Store
from loci.wire.writes import MAX_BODY_BYTES
from server.gateway import Gateway
from server.http import MAX_JSON_DEPTH, bounded_header
from tests.server.conftest import memory_body
from tests.server.live_server import LiveServer

LOW = "0001-01-01T00:00:01+03:05"  # UTC value in year 0
HIGH = "9999-12-31T23:59:59-01:00"  # UTC value in year 10000


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path}/loci.db")
    yield s
    s.close()


def _stored(store: Store) -> tuple[int, int]:
    return store.count_memories(), len(store.list_events("acme", EventQuery(limit=10_000)))


def _refused(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= {"error", "message", "request_id", "details"}
    if field is not None:
        assert body["details"].get("field") == field, body
    return dict(body)


ASSEMBLE = {"entity_id": "ent:u", "turn": "I live in Berlin."}
BODY_CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/v0/memories", memory_body(timestamp=LOW), "timestamp"),
    ("POST", "/v0/memories", memory_body(valid_from=HIGH), "valid_from"),
    ("POST", "/v0/memories", {"items": [memory_body(), memory_body(valid_to=LOW)]}, "items[1].valid_to"),
    (
        "POST",
        "/v0/memories:batch_upsert",
        {"items": [{"subject": "ent:u", "predicate": "lives_in", "object_text": "Rome", "timestamp": HIGH}]},
        "items[0].timestamp",
    ),
    ("POST", "/v0/context/assemble", {**ASSEMBLE, "as_of": LOW}, "as_of"),
    ("POST", "/v0/recall", {"query": "where", "as_of": HIGH}, "as_of"),
    ("POST", "/v0/prune", {"older_than": LOW, "dry_run": False}, "older_than"),
]


@pytest.mark.parametrize(("method", "path", "body", "field"), BODY_CASES)
def test_a_date_time_without_a_utc_form_is_422_naming_it(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    method: str,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    before = _stored(store)
    body = _refused(client.request(method, path, json=body, headers=auth), 422, field)
    assert body["details"]["rule"] == "date_time_range"
    assert _stored(store) == before


UNKNOWN_FIELD_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/v0/context/assemble", {**ASSEMBLE, "budget": {"max_tokens": 256}}, "budget.max_tokens"),
    ("/v0/context/assemble", {**ASSEMBLE, "retrieval": {"topk": 5}}, "retrieval.topk"),
    ("/v0/context/assemble", {**ASSEMBLE, "ingest": {"store": "none"}}, "ingest.store"),
    ("/v0/context/assemble", {**ASSEMBLE, "return": {"max_event": 3}}, "return.max_event"),
    ("/v0/context/assemble", {**ASSEMBLE, "policy": {"pii": "off"}}, "policy.pii"),
    ("/v0/context/assemble", {**ASSEMBLE, "seed_context": {"ids": []}}, "seed_context.ids"),
    ("/v0/context/assemble", {**ASSEMBLE, "namepsace": "work"}, "namepsace"),
    ("/v0/recall", {"query": "where", "threshold": 0.9}, "threshold"),
    ("/v0/recall", {"query": "where", "return": {"include_score": True}}, "return.include_score"),
]


@pytest.mark.parametrize(("path", "body", "field"), UNKNOWN_FIELD_CASES)
def test_an_option_the_api_does_not_know_is_422_naming_it(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    path: str,
    body: dict[str, Any],
    field: str,
) -> None:
    """A misspelt option is refused, never its default used in silence (nor the turn stored)."""
    before = _stored(store)
    _refused(client.post(path, json=body, headers=auth), 422, field)
    assert _stored(store) == before


def test_organization_fields_in_an_assemble_body_are_still_ignored(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    body = {**ASSEMBLE, "org_id": "someone-else", "ingest": {"store_turn": "none", "extract": False}}
    assert client.post("/v0/context/assemble", json=body, headers=auth).status_code == 200


def test_the_date_time_check_reads_each_body_type_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Describing a Struct class evaluates its annotations, too slow for every request body: the check
    reads each Struct class's fields from the cached description once, and still names the field."""
    import msgspec.inspect as mi

    from engine.retrieval.options import AssembleRequest
    from server import http

    read: list[Any] = []
    real = mi.type_info

    def counted(kind: Any) -> Any:
        read.append(kind)
        return real(kind)

    monkeypatch.setattr(mi, "type_info", counted)
    monkeypatch.setattr(http, "_TYPE_INFO", {})
    monkeypatch.setattr(http, "_HOLDS", {})  # keyed by the descriptions' ids: fresh with them
    monkeypatch.setattr(http, "_DATED_FIELDS", {})
    body = {**ASSEMBLE, "seed_context": {"memory_ids": ["m1"]}}
    http.parse_body(body, AssembleRequest)
    first = len(read)
    assert first >= 1  # the request (nested Structs only where a date-time may be)
    http.parse_body(body, AssembleRequest)
    assert len(read) == first
    with pytest.raises(InvalidInput) as caught:
        http.parse_body({**body, "as_of": LOW}, AssembleRequest)
    assert caught.value.field == "as_of" and len(read) == first


def test_patching_valid_to_out_of_range_is_422(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    memory_id = client.post("/v0/memories", json=memory_body(), headers=auth).json()["memory_id"]
    before = _stored(store)
    _refused(
        client.patch(f"/v0/memories/{memory_id}", json={"valid_to": HIGH}, headers=auth), 422, "valid_to"
    )
    assert _stored(store) == before


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        ("/v0/memories", {"since": LOW}, "since"),
        ("/v0/memories", {"until": HIGH}, "until"),
        ("/v0/observability/events", {"since": LOW}, "since"),
        ("/v0/memories", {"until": "0.5"}, "until"),
        ("/v0/memories", {"since": "1700000000"}, "since"),
    ],
)
def test_query_date_times_are_rfc_3339_within_range(
    client: TestClient[Litestar], auth: dict[str, str], path: str, query: dict[str, str], field: str
) -> None:
    _refused(client.get(path, params=query, headers=auth), 422, field)


@pytest.mark.parametrize("path", ["/v0/memories", "/v0/context/assemble", "/v1/memories"])
def test_invalid_utf8_in_a_json_string_is_400(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, path: str
) -> None:
    before = _stored(store)
    raw = b'{"type":"note","text":"ab\xff","entity_id":"ent:u","turn":"x\xff","user_id":"u","messages":[]}'
    body = _refused(client.post(path, content=raw, headers={**auth, "Content-Type": "application/json"}), 400)
    assert body["error"] == "bad_request" and "position" in body["details"]
    assert _stored(store) == before


@pytest.mark.parametrize(("text", "position"), [(rb"a\ud83d", 44), (rb"a\ud83dxy", 44), (rb"\\\ud83d", 45)])
def test_a_lone_high_surrogate_escape_is_named_not_called_truncation(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, text: bytes, position: int
) -> None:
    # a client cutting a string inside an emoji sends this; the body is whole
    before = _stored(store)
    raw = (
        b'{"type":"note","entity_id":"ent:u","text":"' + text + b'"}'
    )  # the last string: msgspec says truncated
    body = _refused(
        client.post("/v0/memories", content=raw, headers={**auth, "Content-Type": "application/json"}), 400
    )
    assert "surrogate" in body["message"] and "truncated" not in body["message"]
    assert body["details"].get("position") == position, body
    assert _stored(store) == before


def test_an_escaped_backslash_before_u_is_text_and_a_cut_body_is_still_truncated(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    ok = client.post(
        "/v0/memories",
        content=rb'{"type":"note","text":"a\\ud83d"}',
        headers={**auth, "Content-Type": "application/json"},
    )
    assert ok.status_code == 200 and ok.json()["text"] == "a\\ud83d"
    cut = client.post(
        "/v0/memories",
        content=b'{"type":"note","text":"a',
        headers={**auth, "Content-Type": "application/json"},
    )
    assert cut.status_code == 400 and "truncated" in cut.json()["message"]


def _with_metadata(depth: int) -> bytes:
    """A memory body whose metadata nests `depth` objects (the body itself is one more level)."""
    return (
        b'{"type":"note","text":"x","metadata":' + b'{"a":' * (depth - 1) + b"{}" + b"}" * (depth - 1) + b"}"
    )


@pytest.mark.parametrize("raw", [_with_metadata(10_000), b"[" * 10_000, _with_metadata(MAX_JSON_DEPTH)])
def test_nesting_deeper_than_the_limit_is_400(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, raw: bytes
) -> None:
    before = _stored(store)
    body = _refused(
        client.post("/v0/memories", content=raw, headers={**auth, "Content-Type": "application/json"}), 400
    )
    assert body["details"]["max_depth"] == MAX_JSON_DEPTH
    assert _stored(store) == before


def test_nesting_up_to_the_limit_is_stored(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.post(
        "/v0/memories",
        content=_with_metadata(MAX_JSON_DEPTH - 1),
        headers={**auth, "Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text


def test_a_million_tags_are_refused(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    before = _stored(store)
    _refused(client.post("/v0/memories", json=memory_body(tags=["t"] * 1_000_000), headers=auth), 422, "tags")
    _refused(
        client.post("/v0/memories", json=memory_body(tags=[f"t{i}" for i in range(65)]), headers=auth),
        422,
        "tags",
    )
    assert _stored(store) == before


@pytest.mark.parametrize("path", ["/v0/context/assemble", "/v0/recall"])
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("predicate_boosts", {f"p{i}": 0.1 for i in range(65)}),
        ("entity_boosts", [f"ent:e{i}" for i in range(65)]),
    ],
)
def test_more_than_64_boosts_are_refused(
    client: TestClient[Litestar], auth: dict[str, str], path: str, option: str, value: object
) -> None:
    body = {"entity_id": "ent:u", "retrieval": {option: value}}
    body["turn" if path.endswith("assemble") else "query"] = "tea"
    _refused(client.post(path, json=body, headers=auth), 422, f"retrieval.{option}")


def _request(*headers: tuple[bytes, bytes]) -> Request[Any, Any, Any]:
    return Request(
        cast(
            "HTTPScope",
            {"type": "http", "method": "POST", "path": "/", "headers": list(headers), "query_string": b""},
        )
    )


@pytest.mark.parametrize(
    "value", [b"", b"   ", "a\u00e9".encode("latin-1"), b"x" * 129, "\u00e9".encode() * 129]
)
def test_a_bad_x_service_agent_is_422(value: bytes) -> None:
    with pytest.raises(InvalidInput) as caught:
        bounded_header(_request((b"x-service-agent", value)), "X-Service-Agent")
    assert caught.value.field == "X-Service-Agent"


def test_x_service_agent_is_utf8_and_sent_once() -> None:
    value = "ag\u00e9nt-\u65e5\u672c"
    assert bounded_header(_request((b"x-service-agent", value.encode())), "X-Service-Agent") == value
    assert bounded_header(_request((b"x-service-agent", ("\u00e9" * 128).encode())), "X-Service-Agent")
    assert bounded_header(_request(), "X-Service-Agent") is None
    with pytest.raises(InvalidInput, match="at most once"):
        bounded_header(_request((b"x-service-agent", b"a"), (b"X-Service-Agent", b"b")), "X-Service-Agent")


def test_headers_over_real_http(tmp_path: Path) -> None:
    """Repeated and non-UTF-8 headers as a client really sends them (the test client merges and re-encodes
    them): nothing is stored, the UTF-8 agent is stored as sent."""
    with LiveServer(tmp_path) as server:
        key = server.key("read,write")
        body = json.dumps(memory_body()).encode()

        def post(*extra: bytes) -> tuple[int, dict[str, Any]]:
            head = b"".join(
                [
                    b"POST /v0/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
                    b"Content-Length: %d\r\nConnection: close\r\n" % len(body),
                    *extra,
                    b"\r\n",
                ]
            )
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.sendall(head + body)
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
            status = int(data.split(b" ", 2)[1])
            return status, json.loads(data.split(b"\r\n\r\n", 1)[1])

        auth = b"Authorization: Bearer " + key.encode() + b"\r\n"
        status, answer = post(auth, auth)
        assert status == 401 and "more than one Authorization" in answer["message"]
        status, answer = post(auth, b"X-Service-Agent: a\r\n", b"X-Service-Agent: b\r\n")
        assert status == 422 and answer["details"]["field"] == "X-Service-Agent"
        status, answer = post(auth, b"X-Service-Agent: a\xe9\r\n")
        assert status == 422 and answer["details"]["field"] == "X-Service-Agent"
        status, answer = post(auth, b"X-Service-Agent: \r\n")
        assert status == 422 and answer["details"]["field"] == "X-Service-Agent"
        status, answer = post(auth, "X-Service-Agent: ag\u00e9nt\r\n".encode())
        assert status == 200 and answer["agent_id"] == "ag\u00e9nt"
        listed = httpx.get(server.url("/v0/memories"), headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert [m["agent_id"] for m in listed.json()["items"]] == ["ag\u00e9nt"]


class _DownStore:
    """A store whose key lookup fails as a database outage does."""

    def __init__(self, inner: Store, error: Exception) -> None:
        self._inner = inner
        self._error = error

    def find_api_key(self, key_hash: str) -> Any:
        raise self._error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _operational_error() -> Exception:
    import psycopg

    return psycopg.OperationalError("server closed the connection unexpectedly")


@pytest.mark.parametrize("error", [Unavailable("PostgreSQL unavailable"), "psycopg"])
def test_the_gateways_key_lookup_during_an_outage_is_503_with_retry_after(
    app: Litestar, auth: dict[str, str], store: Store, error: Any
) -> None:
    exc = _operational_error() if error == "psycopg" else error
    gateway: Any = app.asgi_handler
    while not isinstance(gateway, Gateway):
        gateway = gateway.app
    gateway.store = _DownStore(store, exc)
    with TestClient(app) as client:
        r = client.get("/v0/memories", headers=auth)
    body = _refused(r, 503)
    assert body["error"] == "unavailable" and int(r.headers["retry-after"]) > 0
    assert r.headers["x-request-id"] == body["request_id"]
    assert "detail" not in body  # Loci's own envelope off the mem0 routes


@pytest.mark.parametrize(
    "method, path", [("GET", "/v1/memories/mem_x/"), ("POST", "/v3/memories/search/"), ("POST", "/search")]
)
def test_an_outage_on_a_mem0_path_answers_in_mem0s_envelope(
    app: Litestar, auth: dict[str, str], store: Store, method: str, path: str
) -> None:
    """mem0 clients read the error text from `detail`, also when the gateway answers before a route."""
    gateway: Any = app.asgi_handler
    while not isinstance(gateway, Gateway):
        gateway = gateway.app
    gateway.store = _DownStore(store, Unavailable("PostgreSQL unavailable"))
    with TestClient(app) as client:
        r = client.request(method, path, headers=auth, json={"query": "x", "filters": {"user_id": "u"}})
    body = _refused(r, 503)
    assert body["detail"] == body["message"] and body["error"] == "unavailable"


def test_a_route_during_an_outage_is_503_with_retry_after(
    app: Litestar, auth: dict[str, str], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def down(*args: Any, **kwargs: Any) -> Any:
        raise _operational_error()

    monkeypatch.setattr(store, "list_memories", down)
    with TestClient(app) as client:
        r = client.get("/v0/memories", headers=auth)
    assert _refused(r, 503)["error"] == "unavailable" and int(r.headers["retry-after"]) > 0


def test_health_is_503_while_the_database_does_not_answer(
    app: Litestar, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readiness: a load balancer stops sending requests every one of which would wait and answer 503."""
    with TestClient(app) as client:
        assert client.get("/v0/health").json()["status"] == "ok"

        def down(timeout: float) -> None:
            raise Unavailable(f"PostgreSQL unavailable: no connection in {timeout} s")

        monkeypatch.setattr(store, "ping", down)
        r = client.get("/v0/health")
    assert _refused(r, 503)["error"] == "unavailable" and int(r.headers["retry-after"]) > 0


def test_options_allow_lists_every_method_the_document_gives_a_path(client: TestClient[Litestar]) -> None:
    paths = client.get("/schema/openapi.json").json()["paths"]
    assert "/v0/memories" in paths and "/v0/memories/{memory_id}" in paths
    for template, item in paths.items():
        path = re.sub(r"\{[^}]+\}", "x", template)
        documented = {m.upper() for m in item if m in ("get", "post", "put", "patch", "delete")} | {"OPTIONS"}
        r = client.options(path)
        assert r.status_code == 204, (path, r.status_code)
        assert {m.strip() for m in r.headers["allow"].split(",")} == documented, path


def test_whole_numbers_written_as_floats_are_integers(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    r = client.post(
        "/v0/recall", json={"query": "Berlin", "limit": 59.0, "retrieval": {"top_k": 5.0}}, headers=auth
    )
    assert r.status_code == 200, r.text
    _refused(client.post("/v0/recall", json={"query": "Berlin", "limit": 59.5}, headers=auth), 422, "limit")
    r = client.post("/v0/summarize", json={"entity_id": "ent:u", "max_tokens": 64.0}, headers=auth)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v3/memories/", {"filters": {"created_at": {"gte": "2020-01-01"}}}),
        ("/v2/memories/", {"filters": {"categories": "work"}}),
        ("/v3/memories/search/", {"query": "x", "filters": {"created_at": {"gte": "2020-01-01"}}}),
        ("/v2/memories/search/", {"query": "x"}),
        ("/v1/memories/search/", {"query": "x", "metadata": {"k": "v"}}),
        ("/search", {"query": "x", "categories": ["work"]}),
    ],
)
def test_mem0_list_and_search_need_an_entity(
    client: TestClient[Litestar], auth: dict[str, str], path: str, body: dict[str, Any]
) -> None:
    refused = _refused(client.post(path, json=body, headers=auth), 422, "filters")
    assert refused["details"]["rule"] == "scope_filter"
    assert "must name a user_id" in refused["message"]


def test_mem0_dates_at_the_ends_of_the_calendar(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    added = client.post(
        "/v3/memories/add/",
        headers=auth,
        json={"messages": [{"role": "user", "content": "I live in Rome"}], "user_id": "u"},
    )
    memory_id = added.json()["results"][0]["id"]
    r = client.post(
        "/v3/memories/", json={"filters": {"user_id": "u"}, "end_date": "9999-12-31"}, headers=auth
    )
    assert r.status_code == 200, r.text
    r = client.put(f"/v1/memories/{memory_id}/", json={"expiration_date": "9999-12-31"}, headers=auth)
    assert r.status_code == 200, r.text
    r = client.post(
        "/v3/memories/search/",
        headers=auth,
        json={"query": "x", "filters": {"user_id": "u", "created_at": {"gte": 1e300}}},
    )
    assert _refused(r, 422, "filters")["details"]["rule"] == "filter_language"
    oldest = client.post(
        "/v0/memories",
        json=memory_body(valid_from="0001-01-01T00:00:00Z", valid_to="0001-01-01T00:00:00Z"),
        headers=auth,
    )
    r = client.get(f"/v1/memories/{oldest.json()['memory_id']}/", headers=auth)
    assert r.status_code == 200, r.text


def test_a_body_over_max_body_bytes_is_413_and_one_of_it_is_read(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """The server reads bodies up to loci.wire's MAX_BODY_BYTES: the limit the adapters split batches by."""
    raw = json.dumps(memory_body("padded")).encode()
    headers = {**auth, "Content-Type": "application/json"}
    before = _stored(store)
    too_big = raw + b" " * (MAX_BODY_BYTES + 1 - len(raw))
    assert _refused(client.post("/v0/memories", content=too_big, headers=headers), 413)["error"] == (
        "payload_too_large"
    )
    assert _stored(store) == before
    whole = client.post("/v0/memories", content=raw + b" " * (MAX_BODY_BYTES - len(raw)), headers=headers)
    assert whole.status_code == 200 and whole.json()["text"] == "padded", whole.text
