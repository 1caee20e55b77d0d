"""The /v0/memories CRUD surface: shapes, defaults, org fields ignored, events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage.base import EventQuery, Store
from tests.server.conftest import memory_body


def test_create_returns_the_memory_with_server_fields(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    before = datetime.now(UTC)
    r = client.post(
        "/v0/memories", json=memory_body(tags=["home"], org_id="evil", memory_id="mem_x"), headers=auth
    )
    assert r.status_code == 200
    body = r.json()
    assert body["memory_id"].startswith("mem_") and body["memory_id"] != "mem_x"
    assert body["org_id"] == "acme"  # the org of the key, not of the body
    assert body["namespace"] == "default" and body["status"] == "active" and body["archived"] is False
    assert body["tags"] == ["home"]
    stamp = datetime.fromisoformat(body["timestamp"].replace("Z", "+00:00"))
    assert stamp >= before.replace(microsecond=0) and body["created_at"] == body["updated_at"]
    stored = store.get_memory("acme", body["memory_id"])
    assert stored is not None and stored.text == "Alice lives in Paris"
    assert store.get_memory("evil", body["memory_id"]) is None


def test_every_field_round_trips_through_http(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    full = {
        "namespace": "ns1",
        "agent_id": "agent-7",
        "entity_id": "ent:alice",
        "type": "fact",
        "text": "Alice lives in Paris",
        "metadata": {"k": [1, 2]},
        "tags": ["a", "b"],
        "timestamp": "2024-03-01T10:00:00Z",
        "archived": False,
        "sensitivity": "pii",
        "subject": "ent:alice",
        "predicate": "lives_in",
        "object": {"city": "Paris"},
        "object_type": "json",
        "unit": "m",
        "keys": ["ent:alice|lives_in"],
        "valid_from": "2024-03-01T10:00:00Z",
        "valid_to": None,
        "confidence": 0.75,
        "status": "active",
        "provenance": {"source_turn": "mem_1"},
    }
    created = client.post("/v0/memories", json=full, headers=auth).json()
    got = client.get(f"/v0/memories/{created['memory_id']}", headers=auth).json()
    assert got == created
    for field, value in full.items():
        assert got[field] == value, field


def test_object_forms_round_trip(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    for value in ["Paris", 42, 2.5, True, {"a": 1}, None]:
        created = client.post("/v0/memories", json=memory_body(object=value), headers=auth).json()
        assert client.get(f"/v0/memories/{created['memory_id']}", headers=auth).json()["object"] == value


def test_batch_create_is_all_or_nothing(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    r = client.post("/v0/memories", json={"items": [memory_body("one"), memory_body("two")]}, headers=auth)
    assert r.status_code == 200
    items = r.json()["items"]
    assert [m["text"] for m in items] == ["one", "two"]
    bad = {"items": [memory_body("three"), {"type": "note"}]}
    r = client.post("/v0/memories", json=bad, headers=auth)
    assert r.status_code == 422
    assert r.json()["details"]["index"] == 1 and r.json()["details"]["field"] == "items[1].text"
    assert store.count_memories("acme") == 2


def test_batch_limits(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    assert client.post("/v0/memories", json={"items": []}, headers=auth).status_code == 422
    r = client.post("/v0/memories", json={"items": [memory_body(str(i)) for i in range(201)]}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "items"
    assert store.count_memories("acme") == 0
    r = client.post("/v0/memories", json={"items": [memory_body(str(i)) for i in range(200)]}, headers=auth)
    assert r.status_code == 200 and len(r.json()["items"]) == 200


def test_agent_header_fills_agent_id(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.post("/v0/memories", json=memory_body(), headers={**auth, "X-Service-Agent": "bot-1"})
    assert r.json()["agent_id"] == "bot-1"
    r = client.post(
        "/v0/memories", json=memory_body(agent_id="own"), headers={**auth, "X-Service-Agent": "bot-1"}
    )
    assert r.json()["agent_id"] == "own"


def test_patch_changes_only_allowed_fields(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    m = client.post("/v0/memories", json=memory_body(tags=["a"]), headers=auth).json()
    r = client.patch(
        f"/v0/memories/{m['memory_id']}",
        headers={**auth, "X-Service-Agent": "ignored"},
        json={"tags": ["b"], "metadata": {"x": 1}, "valid_to": "2030-01-01T00:00:00Z", "org_id": "other"},
    )
    assert r.status_code == 200
    body = r.json()
    assert body["tags"] == ["b"] and body["metadata"] == {"x": 1}
    assert body["valid_to"] == "2030-01-01T00:00:00Z" and body["org_id"] == "acme"
    assert body["text"] == m["text"] and body["created_at"] == m["created_at"]
    assert body["updated_at"] >= m["updated_at"]
    r = client.patch(f"/v0/memories/{m['memory_id']}", json={"text": "changed"}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "text"
    assert store.get_memory("acme", m["memory_id"]).text == m["text"]  # type: ignore[union-attr]


def test_a_metadata_patch_keeps_the_run_and_the_value_loci_wrote(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A PATCH of metadata without run_id moved a fact out of its run, beside the value active there."""

    def said(text: str, **fields: Any) -> dict[str, Any]:
        r = client.post(
            "/v1/memories/", json={"messages": [{"role": "user", "content": text}], **fields}, headers=auth
        )
        assert r.status_code == 200, r.text
        (fact,) = [x for x in r.json()["results"] if x["event"] == "ADD"]
        return client.get(f"/v0/memories/{fact['id']}", headers=auth).json()  # type: ignore[no-any-return]

    in_run = said("I live in Paris.", user_id="sam", run_id="trip")
    said("I live in Rome.", user_id="sam")
    assert in_run["metadata"]["run_id"] == "trip" and in_run["metadata"]["object_name"] == "Paris"
    r = client.patch(f"/v0/memories/{in_run['memory_id']}", json={"metadata": {"note": "x"}}, headers=auth)
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == {**in_run["metadata"], "note": "x"}
    live = client.get("/v0/memories?entity_id=sam&type=fact", headers=auth).json()["items"]
    spaces = sorted((m["metadata"].get("run_id", ""), m["object"], m["status"]) for m in live)
    assert spaces == [("", "ent:rome", "active"), ("trip", "ent:paris", "active")]
    renamed = client.patch(
        f"/v0/memories/{in_run['memory_id']}", json={"metadata": {"object_name": "Lyon"}}, headers=auth
    )
    assert renamed.status_code == 422 and renamed.json()["details"]["field"] == "metadata.object_name"
    r = client.patch(f"/v0/memories/{in_run['memory_id']}", json={"metadata": {"run_id": None}}, headers=auth)
    assert r.status_code == 200 and r.json()["metadata"] == {"object_name": "Paris"}  # out of the run
    assert r.json()["status"] == "superseded"  # it met Rome there, the later value


def test_patch_archive_and_delete_append_events(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    m = client.post("/v0/memories", json=memory_body(), headers=auth).json()
    assert client.patch(f"/v0/memories/{m['memory_id']}", json={"archived": True}, headers=auth).json()[
        "archived"
    ]
    r = client.delete(f"/v0/memories/{m['memory_id']}", headers=auth)
    assert r.status_code == 200 and r.json() == {"deleted": True, "memory_id": m["memory_id"]}
    assert client.get(f"/v0/memories/{m['memory_id']}", headers=auth).status_code == 404
    assert client.delete(f"/v0/memories/{m['memory_id']}", headers=auth).status_code == 404
    kinds = [e.type for _, e in store.list_events("acme", EventQuery())]
    assert kinds == ["memory.created", "memory.archived", "memory.deleted"]


def test_list_filters(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    client.post(
        "/v0/memories",
        json={
            "items": [
                memory_body(
                    "a",
                    namespace="n1",
                    type="fact",
                    tags=["x"],
                    entity_id="ent:a",
                    agent_id="g1",
                    timestamp="2024-01-01T00:00:00Z",
                ),
                memory_body(
                    "b", namespace="n1", type="event", entity_id="ent:b", timestamp="2024-02-01T00:00:00Z"
                ),
                memory_body(
                    "c", namespace="n2", archived=True, status="superseded", timestamp="2024-03-01T00:00:00Z"
                ),
            ]
        },
        headers=auth,
    )

    def texts(**params: Any) -> list[str]:
        r = client.get("/v0/memories", params=params, headers=auth)
        assert r.status_code == 200, r.text
        return [m["text"] for m in r.json()["items"]]

    assert texts() == ["c", "b", "a"]
    assert texts(sort="timestamp_asc") == ["a", "b", "c"]
    assert texts(namespace="n1") == ["b", "a"]
    assert texts(type="fact") == ["a"]
    assert texts(type="fact,event") == ["b", "a"]
    assert texts(status="superseded") == ["c"]
    assert texts(tag="x") == ["a"]
    assert texts(entity_id="ent:b") == ["b"]
    assert texts(agent_id="g1") == ["a"]
    assert texts(archived="true") == ["c"]
    assert texts(since="2024-02-01T00:00:00Z") == ["c", "b"]
    assert texts(until="2024-02-01T00:00:00Z") == ["a"]
    r = client.get("/v0/memories", headers={**auth, "X-Service-Agent": "g1"})
    assert [m["text"] for m in r.json()["items"]] == ["a"]
    assert (
        client.get("/v0/memories", params={"type": "bogus"}, headers=auth).json()["details"]["field"]
        == "type"
    )
    assert client.get("/v0/memories", params={"sort": "x"}, headers=auth).json()["details"]["field"] == "sort"


@pytest.mark.parametrize("query", ["type=note&type=fact", "status=active&status=superseded", "tag=a&tag=b"])
def test_a_repeated_list_filter_is_422(
    client: TestClient[Litestar], auth: dict[str, str], query: str
) -> None:
    """Read as its last value, `?type=note&type=fact` would list the facts alone: several are a comma list."""
    r = client.get(f"/v0/memories?{query}", headers=auth)
    assert r.status_code == 422 and r.json()["details"]["rule"] == "given_once"
    assert r.json()["details"]["field"] == query.split("=")[0]
