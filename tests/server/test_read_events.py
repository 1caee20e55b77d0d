"""Every read's `context.assembled` is recorded, though written off the request path: visible to the
event log at once, written at shutdown, also by a real `loci serve` stopped with SIGTERM; and no route
guard makes a worker-thread hop."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.storage import open_store
from engine.storage.base import EventQuery, Store
from server.app import create_app
from server.config import Settings
from server.services import Services
from tests.server.conftest import KeyMaker
from tests.server.live_server import LiveServer

ASSEMBLE = "/v0/context/assemble"
READ = {"entity_id": "ent:user", "ingest": {"extract": False, "store_turn": "none"}}


def _read(client: Any, headers: dict[str, str], i: int) -> str:
    r = client.post(ASSEMBLE, json={**READ, "turn": f"question {i}?"}, headers=headers)
    assert r.status_code == 200, r.text
    return str(r.json()["request_id"])


def _logged(store: Store, org: str = "acme") -> list[str]:
    events = store.list_events(org, EventQuery(type="context.assembled", limit=500))
    return [str(e.data["request_id"]) for _, e in events]


def _services(app: Litestar) -> Services:
    found = app.state.loci
    assert isinstance(found, Services)
    return found


def test_every_read_is_in_the_store_after_shutdown(
    settings: Settings, store: Store, make_key: KeyMaker
) -> None:
    app = create_app(settings, store=store, embedder=HashEmbedder())
    log = _services(app).read_events
    assert log is not None
    log.delay = 3600  # nothing written by the timer: only the shutdown writes them
    auth = make_key("acme")
    with TestClient(app) as client:
        ids = [_read(client, auth, i) for i in range(12)]
        assert log.held() == 12
    assert _logged(store) == ids


def test_the_event_log_shows_every_read_answered_so_far(
    settings: Settings, store: Store, make_key: KeyMaker
) -> None:
    app = create_app(settings, store=store, embedder=HashEmbedder())
    log = _services(app).read_events
    assert log is not None
    log.delay = 3600
    auth = make_key("acme")
    with TestClient(app) as client:
        ids = [_read(client, auth, i) for i in range(3)]
        page = client.get("/v0/observability/events", params={"type": "context.assembled"}, headers=auth)
        assert page.status_code == 200
        assert [item["data"]["request_id"] for item in page.json()["items"]] == ids
        more = _read(client, auth, 3)
        cursor = page.json()["next_cursor"]
        after = client.get(
            "/v0/observability/events",
            params={"type": "context.assembled", "cursor": cursor},
            headers=auth,
        ).json()
        assert [item["data"]["request_id"] for item in after["items"]] == [more]


def test_no_route_guard_runs_in_a_worker_thread(app: Litestar) -> None:
    """Litestar runs a plain-function guard through a thread; ours are coroutines."""
    guards = [
        guard
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
        for guard in handler.resolve_guards()
    ]
    assert guards and all(inspect.iscoroutinefunction(g) for g in guards)


def test_no_before_request_hook_runs_in_a_worker_thread(app: Litestar) -> None:
    """The same for the hooks that run before every route handler."""
    hooks = [
        handler.resolve_before_request()
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
    ]
    found = [hook for hook in hooks if hook is not None]
    assert found and all(inspect.iscoroutinefunction(hook) for hook in found)


@pytest.mark.slow
def test_a_served_read_is_recorded_when_loci_serve_stops(tmp_path: Path) -> None:
    server = LiveServer(tmp_path)
    with server:
        key = server.key("read,write")
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.base, timeout=60) as client:
            ids = [_read(client, headers, i) for i in range(5)]
    store = open_store(f"sqlite:///{tmp_path}/loci.db")
    try:
        assert _logged(store) == ids
    finally:
        store.close()
