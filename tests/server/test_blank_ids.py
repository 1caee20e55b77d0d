"""A blank id (entity, agent, namespace; mem0's user, agent, run and app ids) is refused on every door
with a 422 naming the `not_blank` rule, and nothing is stored or deleted; an id of symbols is an id."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage.base import Store
from tests.server.conftest import memory_body

#: the refusal comes before any store is read or written: SQLite, the default, stands for the three
pytestmark = pytest.mark.parametrize("store", ["sqlite"], indirect=True)

BLANKS = ("   ", "\t", "\u200b")
ROME = [{"role": "user", "content": "I live in Rome"}]

#: (method, path, body, the field the refusal names); `{b}` in a string is the blank id
BODY_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/v0/memories", memory_body("hi", entity_id="{b}"), "entity_id"),
    ("/v0/memories", memory_body("hi", agent_id="{b}"), "agent_id"),
    ("/v0/memories", memory_body("hi", namespace="{b}"), "namespace"),
    ("/v0/memories", {"items": [memory_body("a"), memory_body("b", entity_id="{b}")]}, "items[1].entity_id"),
    (
        "/v0/memories:batch_upsert",
        {"items": [{"subject": "ent:u", "predicate": "lives_in", "object_text": "Rome", "entity_id": "{b}"}]},
        "items[0].entity_id",
    ),
    (
        "/v0/memories:batch_upsert",
        {"items": [{"type": "note", "text": "hi", "namespace": "{b}"}]},
        "items[0].namespace",
    ),
    ("/v0/memories", memory_body("hi", metadata={"run_id": "{b}"}), "metadata.run_id"),
    (
        "/v0/memories:batch_upsert",
        {"items": [{"type": "note", "text": "hi", "metadata": {"app_id": "{b}"}}]},
        "items[0].metadata.app_id",
    ),
    ("/v0/context/assemble", {"entity_id": "{b}", "turn": "I live in Berlin."}, "entity_id"),
    (
        "/v0/context/assemble",
        {"entity_id": "ent:u", "turn": "I live in Berlin.", "namespace": "{b}"},
        "namespace",
    ),
    ("/v0/recall", {"query": "where", "entity_id": "{b}"}, "entity_id"),
    ("/v0/prune", {"entity_id": "{b}", "archived": True, "dry_run": False}, "entity_id"),
    ("/v0/summarize", {"entity_id": "{b}"}, "entity_id"),
    ("/v1/memories/", {"messages": ROME, "user_id": "{b}", "infer": False}, "user_id"),
    ("/v1/memories/", {"messages": ROME, "user_id": "u", "agent_id": "{b}"}, "agent_id"),
    ("/v1/memories/", {"messages": ROME, "filters": {"user_id": "{b}"}}, "filters.user_id"),
    ("/v3/memories/add/", {"messages": ROME, "user_id": "u", "run_id": "{b}"}, "run_id"),
    ("/memories", {"messages": ROME, "app_id": "{b}", "infer": False}, "app_id"),
    ("/v3/memories/search/", {"query": "Rome", "filters": {"user_id": "{b}"}}, "filters.user_id"),
    ("/v3/memories/search/", {"query": "Rome", "filters": {"user_id": {"in": ["{b}"]}}}, "filters.user_id"),
    (
        "/v3/memories/search/",
        {"query": "Rome", "filters": {"user_id": "u", "agent_id": {"ne": "{b}"}}},
        "filters.agent_id",
    ),
    (
        "/search",
        {"query": "Rome", "user_id": "u", "categories": ["c"], "filters": {"run_id": "{b}"}},
        "filters.run_id",
    ),
    ("/v1/memories/search/", {"query": "Rome", "user_id": "{b}"}, "user_id"),
    ("/v3/memories/", {"filters": {"AND": [{"agent_id": "{b}"}]}}, "filters.AND[0].agent_id"),
    (
        "/v3/memories/",
        {"filters": {"OR": [{"user_id": "u"}, {"NOT": {"user_id": "{b}"}}]}},
        "filters.OR[1].NOT[0].user_id",
    ),
    ("/search", {"query": "Rome", "run_id": "{b}"}, "run_id"),
]

#: (method, path with a query or path id, the field the refusal names)
PARAM_CASES: list[tuple[str, str, str]] = [
    ("GET", "/v0/memories?entity_id={b}", "entity_id"),
    ("GET", "/v0/memories?namespace={b}", "namespace"),
    ("GET", "/v0/memories?agent_id={b}", "agent_id"),
    ("GET", "/v0/memories?tag={b}", "tag"),
    ("GET", "/v0/observability/events?entity_id={b}", "entity_id"),
    ("GET", "/v0/observability/events?memory_id={b}", "memory_id"),
    ("GET", "/v0/entities/{b}/graph", "entity_id"),
    ("GET", "/v0/entities/ent:u/graph?namespace={b}", "namespace"),
    ("GET", "/v1/memories?user_id={b}", "user_id"),
    ("GET", "/memories?agent_id={b}", "agent_id"),
    ("DELETE", "/v1/memories/?user_id={b}", "user_id"),
    ("DELETE", "/memories?run_id={b}", "run_id"),
    ("DELETE", "/v1/memories/?filters=%7B%22user_id%22%3A%22{b}%22%7D", "filters.user_id"),
    ("DELETE", "/v2/entities/user/{b}/", "entity_id"),
]


def _fill(value: Any, blank: str) -> Any:
    if isinstance(value, str):
        return value.replace("{b}", blank)
    if isinstance(value, list):
        return [_fill(v, blank) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, blank) for k, v in value.items()}
    return value


def _seed(client: TestClient[Litestar], auth: dict[str, str]) -> list[str]:
    """One memory of user `u` that a refused delete must leave; the ids of what is stored."""
    r = client.post("/v1/memories/", json={"messages": ROME, "user_id": "u", "infer": False}, headers=auth)
    assert r.status_code == 200, r.text
    return _stored(client, auth)


def _stored(client: TestClient[Litestar], auth: dict[str, str]) -> list[str]:
    r = client.get("/v0/memories", params={"page_size": 200}, headers=auth)
    assert r.status_code == 200, r.text
    return sorted(m["memory_id"] for m in r.json()["items"])


def _refused_blank(response: Any, field: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_error", body
    assert body["details"].get("rule") == "not_blank", body
    assert body["details"].get("field") == field, body


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
@pytest.mark.parametrize(("path", "body", "field"), BODY_CASES)
def test_a_blank_id_in_a_body_is_422_and_stores_nothing(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    path: str,
    body: dict[str, Any],
    field: str,
    blank: str,
) -> None:
    before = _seed(client, auth)
    _refused_blank(client.post(path, json=_fill(body, blank), headers=auth), field)
    assert _stored(client, auth) == before
    assert store.count_memories() == len(before)


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
@pytest.mark.parametrize(("method", "path", "field"), PARAM_CASES)
def test_a_blank_id_in_a_query_or_path_is_422_and_changes_nothing(
    client: TestClient[Litestar], auth: dict[str, str], method: str, path: str, field: str, blank: str
) -> None:
    before = _seed(client, auth)
    response = client.request(method, path.replace("{b}", quote(blank, safe="")), headers=auth)
    _refused_blank(response, field)
    assert _stored(client, auth) == before


@pytest.mark.parametrize("value", ["  ", 7, ["r1"], {"id": "r1"}, True, "r" * 129], ids=repr)
def test_a_run_or_app_in_v0_metadata_is_an_id_or_null(
    client: TestClient[Litestar], auth: dict[str, str], value: Any
) -> None:
    """On /v0 `metadata.run_id` and `metadata.app_id` file a memory under a run or app (its space, as
    mem0's adds name them): a value that is no id is a 422 on create and on PATCH, and changes nothing;
    a PATCH's null takes the memory out of its run."""
    bad = {"run_id": value}
    rule = "not_blank" if isinstance(value, str) and not value.strip() else "space_metadata"
    r = client.post("/v0/memories", json=memory_body("hi", metadata=bad), headers=auth)
    assert r.status_code == 422, r.text
    assert r.json()["details"] | {"field": "metadata.run_id", "rule": rule} == r.json()["details"], r.text
    made = client.post("/v0/memories", json=memory_body("hi", metadata={"run_id": "r1"}), headers=auth).json()
    r = client.patch(f"/v0/memories/{made['memory_id']}", json={"metadata": {"app_id": value}}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "metadata.app_id", r.text
    assert client.get(f"/v0/memories/{made['memory_id']}", headers=auth).json()["metadata"] == {
        "run_id": "r1"
    }
    r = client.patch(f"/v0/memories/{made['memory_id']}", json={"metadata": {"run_id": None}}, headers=auth)
    assert r.status_code == 200 and r.json()["metadata"] == {}, r.text
    assert _stored(client, auth) == [made["memory_id"]]


def test_an_empty_agent_id_filter_is_not_read_as_absent(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """`agent_id=` used to fall back to X-Service-Agent (or to no filter): a blank filter is a mistake."""
    _refused_blank(client.get("/v0/memories?agent_id=", headers=auth), "agent_id")
    _refused_blank(client.get("/v0/memories?entity_id=", headers=auth), "entity_id")


@pytest.mark.parametrize("blank", [b"   ", "\u200b".encode()], ids=repr)
def test_a_blank_agent_header_names_the_rule(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, blank: bytes
) -> None:
    headers: dict[str, Any] = {**auth, "X-Service-Agent": blank}
    _refused_blank(client.post("/v0/memories", json=memory_body(), headers=headers), "X-Service-Agent")
    _refused_blank(client.get("/v0/memories", headers=headers), "X-Service-Agent")
    assert store.count_memories() == 0


def test_an_id_of_symbols_is_an_id(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """Ids are opaque: only blank ones are refused."""
    r = client.post(
        "/v0/memories", json=memory_body("hi", entity_id="!!!", agent_id="?", namespace="-"), headers=auth
    )
    assert r.status_code == 200, r.text
    listed = client.get("/v0/memories", params={"entity_id": "!!!", "namespace": "-"}, headers=auth)
    assert [m["text"] for m in listed.json()["items"]] == ["hi"]
    v1 = client.post("/v1/memories/", json={"messages": ROME, "user_id": "***", "infer": False}, headers=auth)
    assert v1.status_code == 200, v1.text
    assert [m["memory"] for m in client.get("/v1/memories?user_id=***", headers=auth).json()["results"]] == [
        "I live in Rome"
    ]


def _mcp_call(
    client: TestClient[Litestar], auth: dict[str, str], tool: str, arguments: dict[str, Any]
) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {**auth, "Accept": "application/json, text/event-stream"}
    r = client.post("/mcp/", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["result"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("remember", {"text": "I live in Rome", "entity_id": "  "}),
        ("remember", {"text": "call mum", "entity_id": "\t", "kind": "note"}),
        ("remember", {"text": "call mum", "entity_id": "ent:u", "kind": "note", "namespace": " "}),
        ("recall", {"query": "Rome", "entity_id": " "}),
        ("assemble_context", {"turn": "I live in Rome", "entity_id": " "}),
        ("list_memories", {"entity_id": " "}),
    ],
)
def test_an_mcp_tool_with_a_blank_id_is_a_422_tool_error(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, tool: str, arguments: dict[str, Any]
) -> None:
    result = _mcp_call(client, auth, tool, arguments)
    assert result["isError"], result
    text = result["content"][0]["text"]
    assert "422 validation_error" in text and "must not be blank" in text, text
    assert store.count_memories() == 0
