"""The served API in process, for notebooks and docs: the real Litestar app (`server.app.create_app`)
behind Litestar's TestClient (an httpx client over ASGI, no socket), a fresh store (in memory unless
`store` names another `open_store` target, e.g. "postgres-embedded"), and an API key created for one
org.

    with start_local_api(org="demo") as api:
        api.post("/v0/memories", {"items": [...]})
        api.post("/v0/context/assemble", {...})
        backend = HttpBackend("http://testserver", api.secret, client=api.client)  # replay over HTTP
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from engine.embed.base import Embedder


class LocalApi:
    def __init__(
        self,
        org: str = "demo",
        embedder: str | Embedder = "hash",
        scopes: Sequence[str] = ("read", "write", "admin"),
        store: str = "memory",
    ):
        from litestar.testing import TestClient

        from engine.embed.registry import create_embedder
        from engine.keys import create_api_key
        from engine.storage import open_store
        from server.app import create_app
        from server.config import Settings

        self.store = open_store(store)
        model = create_embedder(embedder) if isinstance(embedder, str) else embedder
        settings = Settings(
            embedder=embedder if isinstance(embedder, str) else model.model.partition(":")[0],
            rate_limit="100000/minute",
        )
        self.app = create_app(settings, store=self.store, embedder=model, embedded=True)
        self.key, self.secret = create_api_key(self.store, org, list(scopes))
        self.org = org
        self.client: Any = TestClient(self.app)
        self.headers = {"Authorization": f"Bearer {self.secret}"}

    def __enter__(self) -> LocalApi:
        self.client.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.client.__exit__(kind, exc, tb)
        self.store.close()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body with the key; raises on an error status; returns the JSON answer."""
        response = self.client.post(path, json=body, headers=self.headers)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def get(self, path: str) -> dict[str, Any]:
        response = self.client.get(path, headers=self.headers)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data


def start_local_api(org: str = "demo", embedder: str | Embedder = "hash", store: str = "memory") -> LocalApi:
    return LocalApi(org=org, embedder=embedder, store=store)


__all__: Sequence[str] = ("LocalApi", "start_local_api")
