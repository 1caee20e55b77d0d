"""The parametrized `store` fixture: every test in this folder runs against each backend.

Adding a backend is one line in STORE_FACTORIES (e.g. a "postgres" factory marked `integration`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.models import Memory
from engine.storage import open_store
from engine.storage.base import Store
from tests.factories import memory
from tests.pg_fixture import postgres_url_for

StoreFactory = Callable[[Path], Store]


def _postgres_inline(tmp: Path) -> Store:
    from engine.storage.postgres import PostgresStore

    return PostgresStore(postgres_url_for(tmp), inline_model="m1")


STORE_FACTORIES: dict[str, StoreFactory] = {
    "memory": lambda tmp: open_store("memory"),
    "sqlite": lambda tmp: open_store(f"sqlite://{tmp / 'loci.db'}"),
    "postgres": lambda tmp: open_store(postgres_url_for(tmp)),
    # rows carry inline copies of model "m1"'s vectors (the model the vector tests use)
    "postgres-inline": lambda tmp: _postgres_inline(tmp),
}
# pytest marks per backend
STORE_MARKS: dict[str, list[pytest.MarkDecorator]] = {
    "postgres": [pytest.mark.integration],
    "postgres-inline": [pytest.mark.integration],
}
STORE_PARAMS: list[Any] = [pytest.param(name, marks=STORE_MARKS.get(name, [])) for name in STORE_FACTORIES]


@pytest.fixture(params=STORE_PARAMS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """A function that opens (or reopens) the backend's store at this test's location."""
    factory = STORE_FACTORIES[request.param]
    opened: list[Store] = []

    def make() -> Store:
        s = factory(tmp_path)
        opened.append(s)
        return s

    yield make
    for s in opened:
        s.close()


@pytest.fixture
def store(store_factory: Callable[[], Store]) -> Store:
    return store_factory()


T0 = datetime(2024, 1, 1, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


_counter = itertools.count(1)  # next() is atomic under the GIL, so threads get distinct ids


def mem(**overrides: Any) -> Memory:
    """The shared factory's Memory, with an id and a timestamp (T0 + n minutes) that follow creation order."""
    n = next(_counter)
    return memory(at=T0, **{"memory_id": f"mem_{n:08d}", "timestamp": at(n), **overrides})
