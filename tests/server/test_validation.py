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
    ("key", "keys[0]", {"keys": ["k" * 129]}, {"keys": ["ent:k|" + "k" * 122]}),
    ("confidence_high", "confidence", {"confidence": 1.01}, {"confidence": 1.0}),
    ("confidence_low", "confidence", {"confidence": -0.01}, {"confidence": 0.0}),
    ("agent_id", "agent_id", {"agent_id": "a" * 129}, {"agent_id": "a" * 128}),
    ("type", "type", {"type": "diary"}, {"type": "profile"}),
    ("status", "status", {"status": "gone"}, {"status": "disputed"}),
    ("subject", "subject", {"subject": "alice"}, {"subject": "ent:alice"}),
    ("text_blank", "text", {"text": " \n\t"}, {"text": "x"}),
    # blank is one rule (engine.models.is_blank): nothing visible, whatever invisible characters make it
    ("text_zero_width", "text", {"text": "\u200b\ufeff\x00"}, {"text": "\u200bx"}),
    ("text_fillers", "text", {"text": "\u3164\u2800\u00ad"}, {"text": "\u3164\u2800\u00adx"}),
    ("text_combining", "text", {"text": "\u0301\u0308"}, {"text": "e\u0301"}),
    ("tag_blank", "tags[1]", {"tags": ["ok", "  "]}, {"tags": ["ok", " g "]}),
    ("tag_invisible", "tags[0]", {"tags": ["\u200b"]}, {"tags": ["\u200bg"]}),
    ("predicate_blank", "predicate", {"predicate": "\u3000"}, {"predicate": "likes"}),
    # a key is <subject>|<predicate>; either may hold a "|" (the server writes ent:a|b|likes itself)
    (
        "key_no_bar",
        "keys[1]",
        {"keys": ["ent:a|likes", "no-bar"]},
        {"keys": ["ent:a|likes", "ent:a|b|likes"]},
    ),
    ("key_blank", "keys[0]", {"keys": [" "]}, {"keys": ["a|b"]}),
    ("key_bar_only", "keys[0]", {"keys": ["|"]}, {"keys": ["x|y"]}),
    ("key_blank_predicate", "keys[0]", {"keys": ["ent:a| \u200b"]}, {"keys": ["ent:a|\u200bb"]}),
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
        ({"tags": ["ok", "\t\u2060"]}, "tags[1]"),
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


# --- the same blank and key rules on the other doors that write texts, tags and keys -------------------
BLANK_DOORS = [
    (
        "batch_key",
        "/v0/memories:batch_upsert",
        {"items": [{"subject": "ent:a", "predicate": "likes", "object_text": "x", "keys": ["nopipe"]}]},
        "items[0].keys[0]",
        "conflict_key_shape",
    ),
    (
        "batch_tag",
        "/v0/memories:batch_upsert",
        {"items": [{"type": "note", "text": "x", "tags": ["  "]}]},
        "items[0].tags[0]",
        "not_blank",
    ),
    (
        "batch_text",
        "/v0/memories:batch_upsert",
        {"items": [{"type": "note", "text": "x"}, {"type": "note", "text": "\u200b"}]},
        "items[1].text",
        "not_blank",
    ),
    (
        "batch_fact_predicate",
        "/v0/memories:batch_upsert",
        {"items": [{"subject": "ent:a", "predicate": " ", "object_text": "x"}]},
        "items[0].predicate",
        "not_blank",
    ),
    (
        "assemble_tag",
        "/v0/context/assemble",
        {"entity_id": "ent:u", "turn": "I live in Rome", "ingest": {"tags": ["\u3000"]}},
        "ingest.tags[0]",
        "not_blank",
    ),
    ("prune_tag", "/v0/prune", {"tags": [" "], "dry_run": True}, "tags[0]", "not_blank"),
]


@pytest.mark.parametrize(
    ("case", "path", "body", "field", "rule"), BLANK_DOORS, ids=[c[0] for c in BLANK_DOORS]
)
def test_blank_and_key_shape_on_every_write_door(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    case: str,
    path: str,
    body: dict[str, Any],
    field: str,
    rule: str,
) -> None:
    r = client.post(path, json=body, headers=auth)
    assert r.status_code == 422, r.text
    assert (r.json()["details"]["field"], r.json()["details"]["rule"]) == (field, rule)
    assert store.count_memories() == 0


@pytest.mark.parametrize("turn", ["\u200b", "\u3164", "\u2800\u0301"])
def test_a_blank_turn_or_message_is_never_stored(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, turn: str
) -> None:
    r = client.post("/v0/context/assemble", json={"entity_id": "ent:u", "turn": turn}, headers=auth)
    assert r.status_code == 200, r.text
    assert store.count_memories() == 0
    v1 = client.post(
        "/v1/memories/",
        json={"messages": [{"role": "user", "content": turn}], "user_id": "u", "infer": False},
        headers=auth,
    )
    assert v1.status_code == 422 and v1.json()["details"]["field"] == "messages"
    assert store.count_memories() == 0


@pytest.mark.parametrize(
    ("known", "unknown"),
    [
        ("/v0/memories?page_size=2", "limit"),  # the events route's and /v1's name for page_size
        ("/v0/memories?archived=true", "include_archived"),
        ("/v0/entities/ent:a/graph?depth=1", "max_depth"),
        ("/v0/observability/events?limit=5", "page_size"),
    ],
)
def test_a_query_parameter_a_v0_route_does_not_know_is_422_naming_it(
    client: TestClient[Litestar], auth: dict[str, str], known: str, unknown: str
) -> None:
    r = client.get(f"{known}&{unknown}=2", headers=auth)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["field"] == unknown
    assert client.get(known, headers=auth).status_code == 200


def test_routes_without_query_parameters_and_mem0s_stay_lenient(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    assert client.get("/v0/health?probe=1").status_code == 200
    assert client.get("/v1/memories?user_id=u&page=3", headers=auth).status_code == 200
