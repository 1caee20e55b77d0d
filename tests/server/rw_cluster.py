"""The servers of one read-after-write example (tests/server/test_read_after_write.py): a fresh store
and one app over it, or two apps (two workers) over one fresh PostgreSQL database; an API key per org;
and `Api`, which sends a request to one worker and notes the writes for the failure report."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import note
from litestar import Litestar
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.embed.passages import all_passages, passage_model, passages
from engine.keys import create_api_key
from engine.models import text_hash
from engine.storage import open_store
from engine.storage.base import Store
from engine.storage.in_memory import InMemoryStore
from engine.storage.postgres import PostgresStore
from server.app import create_app
from server.config import Settings
from tests.pg_fixture import drop_database, new_database
from tests.server.rw_model import ORGS

MODEL = HashEmbedder().model


class Cluster:
    """`workers` apps over one database (`store` is the first worker's, for the checks)."""

    def __init__(self, stores: list[Store], cleanup: Callable[[], None] = lambda: None) -> None:
        self.stores = stores
        self.store = stores[0]
        self._cleanup = cleanup
        settings = Settings(embedder="hash", rate_limit="100000/minute")
        self.clients: list[TestClient[Litestar]] = []
        for store in stores:
            client = TestClient(create_app(settings, store=store, embedder=HashEmbedder()))
            client.__enter__()
            self.clients.append(client)
        self.headers = {org: _key(self.store, org) for org in ORGS}

    @property
    def workers(self) -> int:
        return len(self.clients)

    def missing_vectors(self, texts: list[str]) -> list[str]:
        """The texts without their vector or one of their passages' (`engine.embed.passages`)."""
        held = self.store.get_embeddings(MODEL, [text_hash(t) for t in texts])
        parts = self.store.get_embeddings(passage_model(MODEL), [text_hash(p) for p in all_passages(texts)])
        return [
            t
            for t in texts
            if text_hash(t) not in held or any(text_hash(p) not in parts for p in passages(t))
        ]

    def close(self) -> None:
        try:
            for client in self.clients:
                client.__exit__(None, None, None)
            for store in self.stores:
                store.close()
        finally:
            self._cleanup()


def _key(store: Store, org: str) -> dict[str, str]:
    _, secret = create_api_key(store, org, ("read", "write", "admin"))
    return {"Authorization": f"Bearer {secret}"}


def memory_cluster() -> Cluster:
    return Cluster([InMemoryStore()])


def sqlite_cluster() -> Cluster:
    folder = tempfile.TemporaryDirectory(prefix="loci-rw-")
    return Cluster([open_store(f"sqlite:///{Path(folder.name) / 'loci.db'}")], folder.cleanup)


def postgres_cluster() -> Cluster:
    """Two workers: two apps, each over its own PostgresStore on one fresh database."""
    server, name, url = new_database()
    return Cluster(
        [PostgresStore(url, max_size=4), PostgresStore(url, max_size=4)], lambda: drop_database(server, name)
    )


CLUSTERS: dict[str, Callable[[], Cluster]] = {
    "memory": memory_cluster,
    "sqlite": sqlite_cluster,
    "postgres": postgres_cluster,
}


class Failed(AssertionError):
    pass


class Api:
    """Requests to one worker of a cluster as one org's key (and an X-Service-Agent)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def call(
        self,
        worker: int,
        method: str,
        path: str,
        org: str,
        *,
        agent: str | None = None,
        body: Any = None,
        params: dict[str, Any] | None = None,
        expect: int | None = 200,
        log: bool = False,
    ) -> Any:
        headers = dict(self.cluster.headers[org])
        if agent is not None:
            headers["X-Service-Agent"] = agent
        if path.startswith("/mcp"):
            headers["Accept"] = "application/json, text/event-stream"
        r = self.cluster.clients[worker].request(method, path, json=body, params=params, headers=headers)
        said = f"{method} {path}{'?' + json.dumps(params) if params else ''} as {org}"
        said += f" agent {agent}" if agent else ""
        said += f" {json.dumps(body)}" if body is not None else ""
        if log:
            note(f"worker {worker}: {said} -> {r.status_code} {r.text[:600]}")
        if expect is not None and r.status_code != expect:
            raise Failed(f"{said} answered {r.status_code}, expected {expect}: {r.text[:2000]}")
        return r.json() if r.content else None
