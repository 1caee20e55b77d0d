"""Every limit of the API that applies to /v0/memories: 422 naming the field, nothing
stored or changed. Each case sits just over the limit; the matching case at the limit succeeds."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage.base import Store
from tests.server.conftest import memory_body

# (case id, field named in details, body over the limit, body at the limit)
CREATE_LIMITS = [
    ("namespace", "namespace", {"namespace": "n" * 65}, {"namespace": "n" * 64}),
    ("text", "text", {"text": "t" * 20001}, {"text": "t" * 20000}),
    ("tag", "tags[1]", {"tags": ["ok", "g" * 65]}, {"tags": ["ok", "g" * 64]}),
    ("predicate", "predicate", {"predicate": "p" * 129}, {"predicate": "p" * 128}),
    ("object_string", "object", {"object": "o" * 4001}, {"object": "o" * 4000}),
    ("unit", "unit", {"unit": "u" * 33}, {"unit": "u" * 32}),
    ("key", "keys[0]", {"keys": ["k" * 129]}, {"keys": ["k" * 128]}),
    ("confidence_high", "confidence", {"confidence": 1.01}, {"confidence": 1.0}),
    ("confidence_low", "confidence", {"confidence": -0.01}, {"confidence": 0.0}),
    ("agent_id", "agent_id", {"agent_id": "a" * 129}, {"agent_id": "a" * 128}),
    ("type", "type", {"type": "diary"}, {"type": "profile"}),
    ("status", "status", {"status": "gone"}, {"status": "disputed"}),
    ("subject", "subject", {"subject": "alice"}, {"subject": "ent:alice"}),
    ("text_blank", "text", {"text": " \n\t"}, {"text": "x"}),
    (
        "valid_to_before_timestamp",
        "valid_to",
        {"timestamp": "2024-02-01T00:00:00Z", "valid_to": "2024-01-01T00:00:00Z"},
        {"timestamp": "2024-01-01T00:00:00Z", "valid_to": "2024-02-01T00:00:00Z"},
    ),
    (
        "valid_to_before_from",
        "valid_to",
        {"valid_from": "2024-02-01T00:00:00Z", "valid_to": "2024-01-01T00:00:00Z"},
        {"valid_from": "2024-01-01T00:00:00Z", "valid_to": "2024-02-01T00:00:00Z"},
    ),
]


@pytest.mark.parametrize(("case", "field", "over", "at"), CREATE_LIMITS, ids=[c[0] for c in CREATE_LIMITS])
def test_create_limit(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    case: str,
    field: str,
    over: dict[str, Any],
    at: dict[str, Any],
) -> None:
    r = client.post("/v0/memories", json=memory_body(**over), headers=auth)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "validation_error" and body["details"]["field"] == field
    assert store.count_memories() == 0
    assert client.post("/v0/memories", json=memory_body(**at), headers=auth).status_code == 200


@pytest.mark.parametrize(
    ("case", "field", "over", "at"), CREATE_LIMITS[:4], ids=[c[0] for c in CREATE_LIMITS[:4]]
)
def test_batch_limit_names_index(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    case: str,
    field: str,
    over: dict[str, Any],
    at: dict[str, Any],
) -> None:
    r = client.post("/v0/memories", json={"items": [memory_body(), memory_body(**over)]}, headers=auth)
    assert r.status_code == 422
    assert r.json()["details"]["field"] == f"items[1].{field}" and r.json()["details"]["index"] == 1
    assert store.count_memories() == 0


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"tags": ["g" * 65]}, "tags[0]"),
        ({"archived": "yes"}, "archived"),
        ({"valid_to": "not a date"}, "valid_to"),
        ({"metadata": []}, "metadata"),
        ({"namespace": "other"}, "namespace"),
    ],
)
def test_patch_limit(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, patch: dict[str, Any], field: str
) -> None:
    mem = client.post("/v0/memories", json=memory_body(tags=["t"]), headers=auth).json()
    r = client.patch(f"/v0/memories/{mem['memory_id']}", json=patch, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == field
    after = client.get(f"/v0/memories/{mem['memory_id']}", headers=auth).json()
    assert after == mem


def test_patch_valid_to_before_valid_from(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    mem = client.post(
        "/v0/memories", json=memory_body(valid_from="2024-02-01T00:00:00Z"), headers=auth
    ).json()
    r = client.patch(
        f"/v0/memories/{mem['memory_id']}", json={"valid_to": "2024-01-01T00:00:00Z"}, headers=auth
    )
    assert r.status_code == 422 and r.json()["details"]["field"] == "valid_to"


def test_patch_valid_to_before_timestamp(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """With no valid_from a memory holds from its timestamp: it cannot end before that."""
    mem = client.post("/v0/memories", json=memory_body(timestamp="2024-02-01T00:00:00Z"), headers=auth).json()
    r = client.patch(
        f"/v0/memories/{mem['memory_id']}", json={"valid_to": "2024-01-01T00:00:00Z"}, headers=auth
    )
    assert r.status_code == 422 and r.json()["details"]["field"] == "valid_to"
    assert client.get(f"/v0/memories/{mem['memory_id']}", headers=auth).json() == mem


def test_page_size_limit(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.get("/v0/memories", params={"page_size": 201}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "page_size"
    assert client.get("/v0/memories", params={"page_size": 200}, headers=auth).status_code == 200
    assert client.get("/v0/memories", params={"page_size": 0}, headers=auth).status_code == 422


@pytest.mark.parametrize("header", ["Idempotency-Key", "X-Service-Agent"])
def test_header_limit(client: TestClient[Litestar], auth: dict[str, str], store: Store, header: str) -> None:
    r = client.post("/v0/memories", json=memory_body(), headers={**auth, header: "h" * 129})
    assert r.status_code == 422 and r.json()["details"]["field"] == header
    assert store.count_memories() == 0
    assert (
        client.post("/v0/memories", json=memory_body(), headers={**auth, header: "h" * 128}).status_code
        == 200
    )


def test_list_agent_header_limit(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.get("/v0/memories", headers={**auth, "X-Service-Agent": "h" * 129})
    assert r.status_code == 422 and r.json()["details"]["field"] == "X-Service-Agent"


def test_list_namespace_limit(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.get("/v0/memories", params={"namespace": "n" * 65}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "namespace"


def test_missing_required_field(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.post("/v0/memories", json={"type": "note"}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "text"


@pytest.mark.parametrize(
    ("content", "ctype"),
    [
        (b"{not json", "application/json"),
        (b"", "application/json"),
        (b'{"type": "note", "text": "x"}', "text/plain"),
        (b"type=note", "application/x-www-form-urlencoded"),
    ],
)
def test_malformed_body_is_400(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, content: bytes, ctype: str
) -> None:
    r = client.post("/v0/memories", content=content, headers={**auth, "Content-Type": ctype})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    assert store.count_memories() == 0


def test_non_object_body_is_422(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    assert client.post("/v0/memories", json=[1, 2], headers=auth).status_code == 422
