"""Cross-org isolation on every route: another org's memory is 404 and never listed or changed."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage.base import Store
from tests.server.conftest import KeyMaker, memory_body

#: org a's headers, org b's headers, and a memory org a wrote
TwoOrgs = tuple[dict[str, str], dict[str, str], dict[str, Any]]


@pytest.fixture
def two_orgs(client: TestClient[Litestar], make_key: KeyMaker) -> TwoOrgs:
    a, b = make_key("org-a"), make_key("org-b")
    mem = client.post("/v0/memories", json=memory_body("secret of a", tags=["t"]), headers=a).json()
    return a, b, mem


def test_get_is_404_for_other_org(client: TestClient[Litestar], two_orgs: TwoOrgs) -> None:
    a, b, mem = two_orgs
    r = client.get(f"/v0/memories/{mem['memory_id']}", headers=b)
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    assert client.get(f"/v0/memories/{mem['memory_id']}", headers=a).status_code == 200


def test_patch_is_404_for_other_org(client: TestClient[Litestar], two_orgs: TwoOrgs, store: Store) -> None:
    a, b, mem = two_orgs
    r = client.patch(f"/v0/memories/{mem['memory_id']}", json={"tags": ["hacked"]}, headers=b)
    assert r.status_code == 404
    assert store.get_memory("org-a", mem["memory_id"]).tags == ["t"]  # type: ignore[union-attr]


def test_delete_is_404_for_other_org(client: TestClient[Litestar], two_orgs: TwoOrgs, store: Store) -> None:
    a, b, mem = two_orgs
    assert client.delete(f"/v0/memories/{mem['memory_id']}", headers=b).status_code == 404
    assert store.get_memory("org-a", mem["memory_id"]) is not None


def test_list_shows_only_own_org(client: TestClient[Litestar], two_orgs: TwoOrgs) -> None:
    a, b, mem = two_orgs
    client.post("/v0/memories", json=memory_body("of b"), headers=b)
    assert [m["text"] for m in client.get("/v0/memories", headers=b).json()["items"]] == ["of b"]
    assert [m["memory_id"] for m in client.get("/v0/memories", headers=a).json()["items"]] == [
        mem["memory_id"]
    ]


def test_create_ignores_org_in_body(client: TestClient[Litestar], two_orgs: TwoOrgs, store: Store) -> None:
    a, b, mem = two_orgs
    r = client.post("/v0/memories", json=memory_body("x", org_id="org-a"), headers=b)
    assert r.json()["org_id"] == "org-b"
    assert store.count_memories("org-a") == 1


def test_idempotency_keys_are_per_org(client: TestClient[Litestar], two_orgs: TwoOrgs) -> None:
    a, b, _ = two_orgs
    ra = client.post("/v0/memories", json=memory_body("same"), headers={**a, "Idempotency-Key": "k1"})
    rb = client.post("/v0/memories", json=memory_body("same"), headers={**b, "Idempotency-Key": "k1"})
    assert ra.status_code == rb.status_code == 200
    assert ra.json()["memory_id"] != rb.json()["memory_id"] and rb.json()["org_id"] == "org-b"


def test_cursor_of_other_org_is_rejected(client: TestClient[Litestar], two_orgs: TwoOrgs) -> None:
    a, b, _ = two_orgs
    client.post("/v0/memories", json=memory_body("a2"), headers=a)
    cursor = client.get("/v0/memories", params={"page_size": 1}, headers=a).json()["next_cursor"]
    r = client.get("/v0/memories", params={"page_size": 1, "cursor": cursor}, headers=b)
    assert r.status_code == 422 and r.json()["details"]["field"] == "cursor"
