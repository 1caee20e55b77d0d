"""Rate limiting: headers on every response, 429 with Retry-After, and a limited request has no effect."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.errors import InvalidInput
from engine.keys import create_api_key
from engine.storage.base import Store
from server.app import create_app
from server.config import Settings
from server.ratelimit import FixedWindowLimiter, Rate, parse_rate
from tests.server.conftest import memory_body


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


#: a client of an app limited to 3 requests a minute, its key's headers, and the limiter's clock
Limited = tuple[TestClient[Litestar], dict[str, str], FakeClock]


@pytest.fixture
def limited(store: Store) -> Iterator[Limited]:
    clock = FakeClock(1_000_020.0 + 12.25)  # 12.25 s into a 60 s window (1_000_020 = 16667 * 60)
    limiter = FixedWindowLimiter(Rate(3, 60), clock=clock)
    app = create_app(Settings(embedder="hash"), store=store, embedder=HashEmbedder(), limiter=limiter)
    _, secret = create_api_key(store, "acme")
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {secret}"}, clock


def test_parse_rate() -> None:
    assert parse_rate("600/minute") == Rate(600, 60)
    assert parse_rate("10/second") == Rate(10, 1)
    assert parse_rate("5/10 seconds") == Rate(5, 10)
    assert parse_rate("1000/hour") == Rate(1000, 3600)
    with pytest.raises(InvalidInput):
        parse_rate("lots")


@pytest.mark.parametrize("text", ["5/0 seconds", "5/0 minute", "5/00 days"])
def test_a_window_of_no_time_is_refused_at_start(text: str) -> None:
    # it was taken, and every request divided by the zero window: all of them answered 500
    with pytest.raises(InvalidInput, match="LOCI_RATE_LIMIT|rate limit"):
        Settings.from_env({"LOCI_EMBEDDER": "hash", "LOCI_RATE_LIMIT": text})


def test_fixed_window_counts_and_resets() -> None:
    clock = FakeClock(120.0 + 45.5)  # window [120, 180): 14.5 s left
    lim = FixedWindowLimiter(Rate(2, 60), clock=clock)
    first = lim.hit("k")
    assert (first.allowed, first.remaining, first.reset_after) == (True, 1, 15)  # ceil(14.5)
    assert lim.hit("k").remaining == 0
    assert not lim.hit("k").allowed
    assert lim.hit("other").allowed  # per key
    assert lim.peek("k").remaining == 0
    clock.now = 180.0
    assert lim.hit("k").allowed and lim.peek("k").remaining == 1


def test_headers_and_429_without_effect(limited: Limited, store: Store) -> None:
    client, auth, clock = limited
    window_end = (clock.now // 60 + 1) * 60
    remaining = []
    for _ in range(3):
        r = client.post("/v0/memories", json=memory_body(), headers=auth)
        assert r.status_code == 200
        remaining.append(int(r.headers["x-ratelimit-remaining"]))
        assert int(r.headers["x-ratelimit-reset"]) == math.ceil(window_end - clock.now)
    assert remaining == [2, 1, 0]
    r = client.post("/v0/memories", json=memory_body("over"), headers=auth)
    assert r.status_code == 429
    body = r.json()
    assert body["error"] == "rate_limited" and body["request_id"] == r.headers["x-request-id"]
    assert (
        r.headers["retry-after"] == r.headers["x-ratelimit-reset"] == str(math.ceil(window_end - clock.now))
    )
    assert r.headers["x-ratelimit-remaining"] == "0"
    assert store.count_memories("acme") == 3  # the limited request stored nothing
    clock.now = window_end
    assert client.post("/v0/memories", json=memory_body(), headers=auth).status_code == 200


def test_a_429_on_a_mem0_path_carries_mem0s_detail(limited: Limited) -> None:
    client, auth, _ = limited
    for _ in range(3):
        assert client.get("/v1/ping/", headers=auth).status_code == 200
    for path in ("/v1/ping/", "/v3/memories/search/", "/memories/mem_1"):
        body = client.get(path, headers=auth).json()
        assert body["error"] == "rate_limited" and body["detail"] == body["message"], path
    assert "detail" not in client.get("/v0/memories", headers=auth).json()  # Loci's own envelope


def test_limited_idempotent_request_records_nothing(limited: Limited, store: Store) -> None:
    client, auth, clock = limited
    for _ in range(3):
        client.get("/v0/memories", headers=auth)
    headers = {**auth, "Idempotency-Key": "later"}
    assert client.post("/v0/memories", json=memory_body("a"), headers=headers).status_code == 429
    clock.now += 60
    r = client.post("/v0/memories", json=memory_body("b"), headers=headers)
    assert r.status_code == 200 and r.json()["text"] == "b"  # the key was not taken by the 429


def test_unauthenticated_requests_limited_per_address(limited: Limited) -> None:
    client, auth, _ = limited
    for _ in range(3):
        assert client.get("/v0/memories", headers={"Authorization": "Bearer loci_bogus"}).status_code == 401
    r = client.get("/v0/memories", headers={"Authorization": "Bearer loci_other_bogus"})
    assert r.status_code == 429  # rotating invalid keys does not escape the limit
    assert client.get("/v0/memories", headers=auth).status_code == 200  # a valid key has its own bucket


def test_errors_and_unknown_routes_carry_rate_headers(limited: Limited) -> None:
    client, auth, _ = limited
    for path in ("/v0/health", "/nope", "/v0/memories/mem_missing"):
        r = client.get(path, headers=auth)
        assert "x-ratelimit-remaining" in r.headers and "x-ratelimit-reset" in r.headers, path


def _mcp(client: TestClient[Litestar], auth: dict[str, str], method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {**auth, "Accept": "application/json, text/event-stream"}
    return client.post("/mcp/", json=body, headers=headers)


def test_mcp_with_a_valid_key_is_not_refused_by_the_limit(limited: Limited) -> None:
    """The /mcp request carries tool calls, counted as the API requests they make: with the bucket empty,
    MCP still answers, and a tool call that reaches the API gets its 429 as a tool error."""
    client, auth, clock = limited
    for _ in range(3):
        assert client.get("/v0/memories", headers=auth).status_code == 200
    listed = _mcp(client, auth, "tools/list", {})
    assert listed.status_code == 200 and {t["name"] for t in listed.json()["result"]["tools"]} >= {"recall"}
    called = _mcp(client, auth, "tools/call", {"name": "list_memories", "arguments": {}})
    assert called.status_code == 200
    result = called.json()["result"]
    retry = math.ceil((clock.now // 60 + 1) * 60 - clock.now)
    assert result["isError"] and result["content"][0]["text"].endswith(
        f"429 rate_limited: rate limit exceeded (retry after {retry} s)"
    )
    bogus = _mcp(client, {"Authorization": "Bearer loci_bogus"}, "tools/list", {})
    assert bogus.status_code == 401  # without a valid key /mcp is an ordinary request
