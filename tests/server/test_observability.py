"""GET /metrics (Prometheus text, a registry per app, route templates as labels) and the JSON access
log (never the Authorization header, query strings or memory text)."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families

from engine.storage.base import Store
from server import observability
from server.config import VECTORS_TTL_ENV, Settings
from server.observability import AccessMiddleware, Observability
from server.threads import run_sync
from tests.pg_fixture import pg_database, pg_server
from tests.server.asgi_scope import get_scope
from tests.server.conftest import memory_body
from tests.server.live_server import LiveServer
from tests.server.ops_app import build_app

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below

SECRET_TEXT = "Zanzibar-7 launch code is hunter2"


@pytest.fixture
def app(settings: Settings, store: Store) -> Litestar:
    return build_app(settings, store)


@pytest.fixture
def client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    with TestClient(app) as c:
        yield c


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} of a Prometheus text exposition."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, tuple(sorted(labels.items()))))


# --- /metrics ---------------------------------------------------------------------------------------
def test_metrics_families_and_route_templates(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    mem = client.post("/v0/memories", json=memory_body("Alice lives in Paris"), headers=auth).json()
    for _ in range(2):
        assert client.get(f"/v0/memories/{mem['memory_id']}", headers=auth).status_code == 200
    assert client.get("/v0/memories/mem_missing", headers=auth).status_code == 404
    assert client.get("/no/such/path", headers=auth).status_code == 404
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=")
    text = r.text
    template = "/v0/memories/{memory_id}"
    assert value(text, "loci_http_requests_total", route=template, method="GET", status="200") == 2
    assert value(text, "loci_http_requests_total", route=template, method="GET", status="404") == 1
    assert value(text, "loci_http_requests_total", route="/v0/memories", method="POST", status="200") == 1
    assert value(text, "loci_http_requests_total", route="unmatched", method="GET", status="404") == 1
    assert value(text, "loci_http_request_duration_seconds_count", route=template, method="GET") == 3
    assert value(text, "loci_memories_stored") == store.count_memories() == 1
    for family in (
        "loci_assemble_stage_seconds",
        "loci_embed_cache_hits_total",
        "loci_embed_cache_misses_total",
    ):
        assert f"# TYPE {family.removesuffix('_total')} " in text or f"# TYPE {family} " in text
    assert mem["memory_id"] not in text and "/no/such/path" not in text  # raw paths never become labels


def test_metrics_need_no_key_but_honour_a_token(settings: Settings, store: Store) -> None:
    app = build_app(settings, store, metrics_token="s3cret-scrape")
    with TestClient(app) as c:
        r = c.get("/metrics")
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        assert c.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"}).status_code == 200


def test_a_token_with_letters_beyond_ascii_is_compared_not_a_500(settings: Settings, store: Store) -> None:
    # secrets.compare_digest raised TypeError on either side's non-ASCII text: an anonymous 500
    app = build_app(settings, store, metrics_token="s3cret-scrape")
    with TestClient(app) as c:
        sent = {"Authorization": "Bearer s\u00e9cret".encode("latin-1")}
        assert c.get("/metrics", headers=cast(Any, sent)).status_code == 401
    app = build_app(settings, store, metrics_token="mot-de-passe-\u00e9t\u00e9")
    with TestClient(app) as c:
        assert c.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
        sent = {"Authorization": "Bearer mot-de-passe-\u00e9t\u00e9".encode()}
        assert c.get("/metrics", headers=cast(Any, sent)).status_code == 200


def test_each_app_has_its_own_registry(settings: Settings, store: Store, auth: dict[str, str]) -> None:
    one, two = build_app(settings, store), build_app(settings, store)
    with TestClient(one) as a, TestClient(two) as b:
        for _ in range(3):
            a.get("/v0/health")
        b.get("/v0/health")
        assert (
            value(
                a.get("/metrics").text,
                "loci_http_requests_total",
                route="/v0/health",
                method="GET",
                status="200",
            )
            == 3
        )
        assert (
            value(
                b.get("/metrics").text,
                "loci_http_requests_total",
                route="/v0/health",
                method="GET",
                status="200",
            )
            == 1
        )


def test_rate_limited_requests_keep_their_route(store: Store, auth: dict[str, str]) -> None:
    # an hour's fixed window: three requests straddle a minute's boundary often enough to flake
    app = build_app(Settings(embedder="hash", rate_limit="2/hour"), store)
    with TestClient(app) as c:
        codes = [c.get("/v0/memories", headers=auth).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    obs = app.state.observability
    text = obs.render().decode()
    assert value(text, "loci_http_requests_total", route="/v0/memories", method="GET", status="429") == 1


def test_observe_stages_and_embed_cache_counters() -> None:
    obs = Observability()
    obs.observe_stages({"embed": 2.0, "fuse": 0.5, "note": "n/a", "flag": True})
    obs.observe_stages({"embed": 4.0})
    obs.count_embed_cache(hits=3, misses=1)
    obs.count_embed_cache(hits=2)
    text = obs.render().decode()
    assert value(text, "loci_assemble_stage_seconds_count", stage="embed") == 2
    assert value(text, "loci_assemble_stage_seconds_sum", stage="embed") == pytest.approx((2.0 + 4.0) / 1000)
    assert value(text, "loci_assemble_stage_seconds_sum", stage="fuse") == pytest.approx(0.5 / 1000)
    assert value(text, "loci_assemble_stage_seconds_count", stage="note") is None
    assert value(text, "loci_assemble_stage_seconds_count", stage="flag") is None
    assert value(text, "loci_embed_cache_hits_total") == 3 + 2
    assert value(text, "loci_embed_cache_misses_total") == 1


def test_module_functions_reach_the_current_requests_app() -> None:
    obs = Observability()

    async def inner(scope: dict[str, Any], receive: Any, send: Any) -> None:
        # a route calls these from a worker thread: the context variable is inherited
        await run_sync(lambda: observability.observe_stages({"render": 1.0}))
        observability.count_embed_cache(hits=1, misses=2)
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def noop(message: dict[str, Any]) -> None:
        return None

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "method": "GET", "path": "/x", "state": {}}
    anyio.run(AccessMiddleware(inner, obs), scope, receive, noop)
    observability.observe_stages({"render": 9.0})  # outside a request: no app, nothing recorded
    text = obs.render().decode()
    assert value(text, "loci_assemble_stage_seconds_count", stage="render") == 1
    assert value(text, "loci_embed_cache_misses_total") == 2
    assert value(text, "loci_http_requests_total", route="unmatched", method="GET", status="204") == 1


# --- access log ---------------------------------------------------------------------------------------
def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "loci.access"]


def test_access_log_lines(
    client: TestClient[Litestar], auth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    mem = client.post("/v0/memories", json=memory_body("hello"), headers=auth)
    client.get("/nowhere")
    lines = access_lines(caplog)
    assert len(lines) == 2
    first, second = lines
    assert set(first) == {"request_id", "method", "route", "status", "duration_ms", "org_id"}
    assert (first["method"], first["route"], first["status"], first["org_id"]) == (
        "POST",
        "/v0/memories",
        200,
        "acme",
    )
    assert first["request_id"] == mem.headers["x-request-id"] and first["duration_ms"] >= 0
    assert (second["route"], second["status"]) == ("unmatched", 404) and "org_id" not in second


def test_logs_never_hold_keys_query_strings_or_memory_text(
    client: TestClient[Litestar], auth: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = auth["Authorization"].removeprefix("Bearer ")
    mem = client.post("/v0/memories", json=memory_body(SECRET_TEXT, entity_id="ent:z"), headers=auth).json()
    client.patch(f"/v0/memories/{mem['memory_id']}", json={"tags": ["x"]}, headers=auth)
    client.get("/v0/memories", params={"tag": "x"}, headers=auth)
    client.post("/v0/summarize", json={"entity_id": "ent:z"}, headers=auth)
    cursor = client.get("/v0/observability/events", headers=auth).json()["next_cursor"]
    client.get("/v0/observability/events", params={"cursor": cursor}, headers=auth)
    client.get("/v0/memories", headers={"Authorization": "Bearer loci_not-a-real-key-but-secret"})
    client.post("/v0/memories", json={"type": "note", "text": SECRET_TEXT, "tags": ["t" * 65]}, headers=auth)
    records = [r for r in caplog.records if r.name.startswith("loci")]
    assert len([r for r in records if r.name == "loci.access"]) == 8
    for r in records:
        text = r.getMessage() + str(getattr(r, "access", ""))
        for forbidden in (
            secret,
            "loci_not-a-real-key-but-secret",
            "Bearer",
            "hunter2",
            "Zanzibar",
            cursor,
            "tag=x",
        ):
            assert forbidden not in text, (forbidden, text)


class FlakyEmbedder:
    """The hash embedder, failing while `down`."""

    def __init__(self) -> None:
        from engine.embed.hash import HashEmbedder

        self.inner = HashEmbedder()
        self.model, self.dim = self.inner.model, self.inner.dim
        self.down = False

    def embed(self, texts: Any) -> Any:
        if self.down:
            from engine.errors import Unavailable

            raise Unavailable("embedder down")
        return self.inner.embed(texts)


def test_memories_without_a_vector_are_counted_and_embedded_by_doctor(
    settings: Settings, store: Store, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write while the embedder is down is stored without a vector (never lost); /metrics counts it
    and `embed_missing` (what `loci doctor` runs) gives it one."""
    from engine.embed.backfill import embed_missing
    from engine.embed.cache import EmbeddingCache
    from server.app import create_app

    monkeypatch.setenv(VECTORS_TTL_ENV, "0")
    embedder = FlakyEmbedder()
    with TestClient(create_app(settings, store=store, embedder=embedder)) as client:
        assert (
            client.post("/v0/memories", json=memory_body("Alice likes tea"), headers=auth).status_code == 200
        )
        embedder.down = True
        assert (
            client.post("/v0/memories", json=memory_body("Bob likes coffee"), headers=auth).status_code == 200
        )
        body = {"entity_id": "ent:bob", "turn": "I live in Lisbon."}
        r = client.post("/v0/context/assemble", json=body, headers=auth)
        assert r.status_code == 200 and r.json()["flags"]["degraded"] is True
        embedder.down = False
        missing = value(client.get("/metrics").text, "loci_memories_without_vector", model=embedder.model)
        assert missing == 3  # the note, the turn and its fact
        embed_missing(store, EmbeddingCache(embedder, store))
        assert value(client.get("/metrics").text, "loci_memories_without_vector", model=embedder.model) == 0


@pytest.mark.integration
def test_every_scrape_of_several_workers_counts_every_workers_requests(
    tmp_path: Path, pg_database: str
) -> None:
    before = set(Path(tempfile.gettempdir()).glob("loci-metrics-*"))
    with LiveServer(tmp_path, database_url=pg_database, serve_args=("--workers", "2")) as server:
        auth = {"Authorization": f"Bearer {server.key('read')}"}
        for _ in range(40):  # a new connection each: the workers take turns accepting them
            with httpx.Client() as fresh:
                assert fresh.get(server.url("/v0/keys/self"), headers=auth).status_code == 200
        for _ in range(6):
            with httpx.Client() as fresh:
                text = fresh.get(server.url("/metrics")).text
            # summed over both workers, whichever answers the scrape (one worker's share: about 20)
            assert (
                value(text, "loci_http_requests_total", method="GET", route="/v0/keys/self", status="200")
                == 40
            )
    assert set(Path(tempfile.gettempdir()).glob("loci-metrics-*")) <= before  # removed at stop


def test_a_client_gone_before_its_body_is_read_is_counted_499_not_a_500(
    client: TestClient[Litestar],
    app: Litestar,
    auth: dict[str, str],
    store: Store,
    caplog: pytest.LogCaptureFixture,
) -> None:
    headers = {**auth, "Content-Type": "application/json", "Content-Length": "100"}
    scope = {**get_scope("/v0/memories", headers), "method": "POST"}
    messages: list[dict[str, Any]] = [{"type": "http.request", "body": b'{"type":', "more_body": True}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        pass

    with caplog.at_level(logging.INFO, logger="loci.server"):
        anyio.run(app.__call__, cast(Any, scope), cast(Any, receive), cast(Any, send))
    text = client.get("/metrics").text
    assert value(text, "loci_http_requests_total", route="/v0/memories", method="POST", status="500") is None
    assert value(text, "loci_http_requests_total", route="/v0/memories", method="POST", status="499") == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert store.count_memories() == 0
