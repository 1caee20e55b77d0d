"""One fresh app and store per test. The store is parametrized by name; adding a backend (PostgreSQL)
is one line in STORE_FACTORIES."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.keys import create_api_key
from engine.storage import open_store
from engine.storage.base import Store
from engine.storage.in_memory import InMemoryStore
from server.app import create_app
from server.config import Settings
from tests.pg_fixture import postgres_url_for

STORE_FACTORIES: dict[str, Callable[[Path], Store]] = {
    "memory": lambda tmp: InMemoryStore(),
    "sqlite": lambda tmp: open_store(f"sqlite:///{tmp}/loci.db"),
    "postgres": lambda tmp: open_store(postgres_url_for(tmp)),
}
STORE_MARKS: dict[str, list[pytest.MarkDecorator]] = {"postgres": [pytest.mark.integration]}


@pytest.fixture(params=[pytest.param(n, marks=STORE_MARKS.get(n, [])) for n in sorted(STORE_FACTORIES)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = STORE_FACTORIES[request.param](tmp_path)
    yield s
    s.close()


@pytest.fixture
def settings() -> Settings:
    return Settings(embedder="hash", rate_limit="100000/minute")


@pytest.fixture
def app(settings: Settings, store: Store) -> Litestar:
    return create_app(settings, store=store, embedder=HashEmbedder())


@pytest.fixture
def client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    with TestClient(app) as c:
        yield c


KeyMaker = Callable[..., dict[str, str]]


@pytest.fixture
def make_key(store: Store) -> KeyMaker:
    """make_key(org, scopes=("read","write","admin")) -> Authorization headers for a new key."""

    def make(org: str = "acme", scopes: tuple[str, ...] = ("read", "write", "admin")) -> dict[str, str]:
        _, secret = create_api_key(store, org, scopes)
        return {"Authorization": f"Bearer {secret}"}

    return make


@pytest.fixture
def auth(make_key: KeyMaker) -> dict[str, str]:
    return make_key("acme")


def memory_body(text: str = "Alice lives in Paris", **fields: object) -> dict[str, object]:
    return {"type": "note", "text": text, **fields}
