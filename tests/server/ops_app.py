"""Build the app with the operations routes and the observability middleware, whether or not
`server.app.create_app` wires them yet (it is the lead's to wire; see server/observability.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from litestar import Litestar

import server.app as app_module
from engine.embed.hash import HashEmbedder
from engine.models import Memory
from engine.storage.base import Store
from server import observability
from server.config import Settings
from server.routes import ROUTES, ops
from tests.factories import memory


def _paths(app: Litestar) -> set[str]:
    return {route.path for route in app.routes}


def build_app(settings: Settings, store: Store, *, metrics_token: str | None = None) -> Litestar:
    app = app_module.create_app(settings, store=store, embedder=HashEmbedder())
    missing = [
        h
        for paths, handlers in ((("/v0/summarize",), ops.ROUTES), (("/metrics",), observability.ROUTES))
        if not set(paths) <= _paths(app)
        for h in handlers
    ]
    if missing:  # not wired into create_app yet: add them for the test
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(app_module, "ROUTES", [*ROUTES, *missing])
            app = app_module.create_app(settings, store=store, embedder=HashEmbedder())
    found = getattr(app.state, "observability", None)
    if not isinstance(found, observability.Observability):
        observability.install(app, store, metrics_token=metrics_token)
    elif metrics_token is not None:
        found.metrics_token = metrics_token
    return app


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


def put(
    store: Store, org: str, text: str, *, type: str = "fact", when: str = "2024-01-01", **fields: Any
) -> Memory:
    """Store a memory directly (exact control over status, validity, sensitivity...)."""
    m = memory(org_id=org, type=type, text=text, at=at(when), **fields)
    store.put_memories([m])
    return m
