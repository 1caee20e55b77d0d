"""The error envelope and the common headers on every response: 404, 405, 500, 401, CORS, request ids."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from httpx import Response
from litestar import Litestar, get
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.storage.base import Store
from server.app import create_app
from server.config import Settings

REQ_ID = re.compile(r"^req_[0-9A-HJKMNP-TV-Z]{26}$")


def assert_envelope(r: Response, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error", "message", "request_id", "details"}
    assert body["error"] == code and isinstance(body["details"], dict)
    assert body["request_id"] == r.headers["x-request-id"]
    assert REQ_ID.match(r.headers["x-request-id"])
    assert r.headers["x-ratelimit-remaining"].isdigit() and r.headers["x-ratelimit-reset"].isdigit()


@pytest.mark.parametrize("path", ["/nope", "/v0/nope", "/v0/memories/a/b", "/v1/nope"])
def test_unknown_route_404(client: TestClient[Litestar], auth: dict[str, str], path: str) -> None:
    assert_envelope(client.get(path, headers=auth), 404, "not_found")
    assert_envelope(client.get(path), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/v0/memories"),
        ("DELETE", "/v0/health"),
        ("POST", "/v0/memories/mem_x"),
        ("PUT", "/v0/health"),
    ],
)
def test_wrong_method_405(client: TestClient[Litestar], auth: dict[str, str], method: str, path: str) -> None:
    r = client.request(method, path, headers=auth)
    assert_envelope(r, 405, "method_not_allowed")
    assert "allow" in r.headers


def test_internal_error_500_hides_details(store: Store, auth: dict[str, str]) -> None:
    app = create_app(Settings(embedder="hash"), store=store, embedder=HashEmbedder())

    @get("/v0/boom", sync_to_thread=False)
    def boom() -> None:
        raise RuntimeError("secret stack detail")

    app.register(boom)
    with TestClient(app) as client:
        r = client.get("/v0/boom", headers=auth)
    assert_envelope(r, 500, "internal_error")
    assert "secret" not in r.text and "Traceback" not in r.text


def test_engine_failure_in_route_is_500(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("db exploded at /var/lib/secret")

    monkeypatch.setattr(store, "list_memories", broken)
    r = client.get("/v0/memories", headers=auth)
    assert_envelope(r, 500, "internal_error")
    assert "exploded" not in r.text


def test_401_and_health_carry_headers(client: TestClient[Litestar]) -> None:
    assert_envelope(client.get("/v0/memories"), 401, "unauthorized")
    r = client.get("/v0/health")
    assert REQ_ID.match(r.headers["x-request-id"]) and "x-ratelimit-remaining" in r.headers


def test_request_ids_are_unique_and_echoed(client: TestClient[Litestar]) -> None:
    a, b = client.get("/v0/health"), client.get("/v0/health")
    assert a.headers["x-request-id"] != b.headers["x-request-id"]
    r = client.get("/nope", headers={"X-Request-Id": "client-trace-42"})
    assert r.headers["x-request-id"] == "client-trace-42" and r.json()["request_id"] == "client-trace-42"
    r = client.get("/v0/health", headers={"X-Request-Id": "bad id with spaces\t" + "x" * 200})
    assert REQ_ID.match(r.headers["x-request-id"])


@pytest.fixture
def cors_client(store: Store) -> Iterator[TestClient[Litestar]]:
    settings = Settings(embedder="hash", cors_origins=("https://app.example",))
    with TestClient(create_app(settings, store=store, embedder=HashEmbedder())) as c:
        yield c


def test_cors_header_on_success_and_errors(cors_client: TestClient[Litestar]) -> None:
    origin = {"Origin": "https://app.example"}
    for path in ("/v0/health", "/v0/memories", "/nope"):
        r = cors_client.get(path, headers=origin)
        assert r.headers["access-control-allow-origin"] == "https://app.example", path
        exposed = {h.strip().lower() for h in r.headers["access-control-expose-headers"].split(",")}
        # every header of our own a browser's code reads is exposed (X-RateLimit-Limit and
        # Idempotent-Replayed were not)
        ours = {h for h in r.headers if h.startswith("x-") or h in ("retry-after", "idempotent-replayed")}
        assert ours <= exposed and {"x-ratelimit-limit", "idempotent-replayed"} <= exposed, path
    assert (
        "access-control-allow-origin"
        not in cors_client.get("/v0/health", headers={"Origin": "https://evil.example"}).headers
    )


def test_cors_preflight(cors_client: TestClient[Litestar]) -> None:
    r = cors_client.options(
        "/v0/memories",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert r.status_code == 204
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert "POST" in r.headers["access-control-allow-methods"]
    assert "Authorization" in r.headers["access-control-allow-headers"]
    assert REQ_ID.match(r.headers["x-request-id"]) and "x-ratelimit-remaining" in r.headers


def test_no_cors_header_without_config(client: TestClient[Litestar]) -> None:
    assert (
        "access-control-allow-origin"
        not in client.get("/v0/health", headers={"Origin": "https://a.b"}).headers
    )


def test_app_type(app: Litestar) -> None:
    assert isinstance(app, Litestar)
