"""Keyset pagination: opaque cursors bound to their filters, and no repeats or skips of memories that
existed when paging began, while other threads write."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from tests.server.conftest import memory_body


def seed(client: TestClient[Litestar], auth: dict[str, str], n: int) -> list[str]:
    items = [
        memory_body(f"m{i}", timestamp=f"2024-01-{1 + i % 28:02d}T{i % 24:02d}:00:00Z") for i in range(n)
    ]
    r = client.post("/v0/memories", json={"items": items}, headers=auth)
    assert r.status_code == 200
    return [m["memory_id"] for m in r.json()["items"]]


def page_all(
    client: TestClient[Litestar], auth: dict[str, str], page_size: int, **params: Any
) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        q = {"page_size": page_size, **params, **({"cursor": cursor} if cursor else {})}
        r = client.get("/v0/memories", params=q, headers=auth)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["items"]) <= page_size
        seen.extend(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return seen


@pytest.mark.parametrize("sort", ["timestamp_desc", "timestamp_asc"])
def test_pages_cover_everything_once(client: TestClient[Litestar], auth: dict[str, str], sort: str) -> None:
    ids = seed(client, auth, 23)
    seen = page_all(client, auth, 5, sort=sort)
    assert sorted(m["memory_id"] for m in seen) == sorted(ids)
    keys = [(m["timestamp"], m["memory_id"]) for m in seen]
    assert keys == sorted(keys, reverse=(sort == "timestamp_desc"))


def test_last_page_has_null_cursor(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    seed(client, auth, 4)
    assert client.get("/v0/memories", params={"page_size": 4}, headers=auth).json()["next_cursor"] is None
    assert client.get("/v0/memories", params={"page_size": 3}, headers=auth).json()["next_cursor"] is not None


@pytest.mark.parametrize("sort", ["timestamp_desc", "timestamp_asc"])
def test_paging_under_concurrent_writes(
    client: TestClient[Litestar], auth: dict[str, str], sort: str
) -> None:
    before = set(seed(client, auth, 60))
    stop = threading.Event()
    written: list[str] = []

    def writer(seed_value: int) -> None:
        rng = random.Random(seed_value)
        while not stop.is_set():
            day = rng.randint(1, 28)  # lands anywhere in the range being paged, and "now"
            body = (
                memory_body("new", timestamp=f"2024-01-{day:02d}T12:30:00Z")
                if rng.random() < 0.5
                else memory_body("new")
            )
            r = client.post("/v0/memories", json=body, headers=auth)
            assert r.status_code == 200
            written.append(r.json()["memory_id"])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    try:
        seen = page_all(client, auth, 7, sort=sort)
    finally:
        stop.set()
        for t in threads:
            t.join()
    ids = [m["memory_id"] for m in seen]
    assert len(ids) == len(set(ids)), "a memory was repeated"
    assert before <= set(ids), "a pre-existing memory was skipped"
    assert written, "the writers did not run while paging"


def test_cursor_bound_to_filters_and_sort(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    seed(client, auth, 6)
    cursor = client.get("/v0/memories", params={"page_size": 2, "namespace": "default"}, headers=auth).json()[
        "next_cursor"
    ]
    ok = client.get(
        "/v0/memories", params={"page_size": 3, "namespace": "default", "cursor": cursor}, headers=auth
    )
    assert ok.status_code == 200  # page size may change between pages
    for params in ({"namespace": "other"}, {"sort": "timestamp_asc", "namespace": "default"}, {}):
        r = client.get("/v0/memories", params={"cursor": cursor, **params}, headers=auth)
        assert r.status_code == 422 and r.json()["details"]["field"] == "cursor", params


@pytest.mark.parametrize("cursor", ["garbage!", "AAAA", "x" * 10])
def test_malformed_cursor_is_422(client: TestClient[Litestar], auth: dict[str, str], cursor: str) -> None:
    r = client.get("/v0/memories", params={"cursor": cursor}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "cursor"
