"""The OpenAPI document: operation ids, bearer scheme, request bodies, and the envelope per error status."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest
from litestar import Litestar
from litestar.testing import TestClient

EXPECTED = {
    ("/v0/health", "get"): "getHealth",
    ("/v0/memories", "post"): "createMemory",
    ("/v0/memories", "get"): "listMemories",
    ("/v0/memories/{memory_id}", "get"): "getMemory",
    ("/v0/memories/{memory_id}", "patch"): "updateMemory",
    ("/v0/memories/{memory_id}", "delete"): "deleteMemory",
    ("/v0/context/assemble", "post"): "assembleContext",
    ("/v0/recall", "post"): "recall",
    ("/v0/memories:batch_upsert", "post"): "batchUpsertMemories",
    ("/v0/extract", "post"): "extract",
    ("/v0/summarize", "post"): "summarize",
    ("/v0/prune", "post"): "pruneMemories",
    ("/v0/observability/events", "get"): "listEvents",
    ("/v0/entities/{entity_id}/graph", "get"): "getEntityGraph",
    ("/v0/keys/self", "get"): "getOwnKey",
    ("/metrics", "get"): "getMetrics",
    ("/v1/memories", "post"): "createMemoriesV1",
    ("/v1/memories", "get"): "listMemoriesV1",
    ("/v1/memories/{memory_id}", "get"): "getMemoryV1",
    ("/v1/memories/{memory_id}", "delete"): "deleteMemoryV1",
    # mem0 platform (server.routes.mem0)
    ("/v1/ping", "get"): "mem0Ping",
    ("/v3/memories/add", "post"): "mem0AddV3",
    ("/v3/memories", "post"): "mem0ListV3",
    ("/v2/memories", "post"): "mem0ListV2",
    ("/v3/memories/search", "post"): "mem0SearchV3",
    ("/v2/memories/search", "post"): "mem0SearchV2",
    ("/v1/memories/search", "post"): "mem0SearchV1",
    ("/v1/memories/{memory_id}", "put"): "mem0UpdateMemory",
    ("/v1/memories/{memory_id}/history", "get"): "mem0MemoryHistory",
    ("/v1/memories", "delete"): "mem0DeleteAll",
    ("/v1/entities", "get"): "mem0ListEntities",
    ("/v2/entities/{entity_type}/{entity_id}", "delete"): "mem0DeleteEntity",
    ("/v1/entities/{entity_type}/{entity_id}", "delete"): "mem0DeleteEntityV1",
    # mem0's open-source server (server.routes.mem0_oss)
    ("/memories", "post"): "mem0OssAdd",
    ("/memories", "get"): "mem0OssList",
    ("/memories", "delete"): "mem0OssDeleteAll",
    ("/memories/{memory_id}", "get"): "mem0OssGet",
    ("/memories/{memory_id}", "put"): "mem0OssUpdate",
    ("/memories/{memory_id}", "delete"): "mem0OssDelete",
    ("/memories/{memory_id}/history", "get"): "mem0OssHistory",
    ("/search", "post"): "mem0OssSearch",
}
#: operations whose errors also carry mem0's `detail` (Mem0ErrorBody)
MEM0_ERRORS = {op for (path, _), op in EXPECTED.items() if op.startswith("mem0") or op.endswith("V1")}


@pytest.fixture
def doc(client: TestClient[Litestar]) -> dict[str, Any]:
    r = client.get("/schema/openapi.json")
    assert r.status_code == 200
    body: dict[str, Any] = r.json()
    return body


def test_both_document_paths_and_docs_page(client: TestClient[Litestar], doc: dict[str, Any]) -> None:
    assert client.get("/docs/openapi.json").json() == doc
    r = client.get("/docs")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]


def test_operation_ids(doc: dict[str, Any]) -> None:
    found = {
        (path, method): op["operationId"]
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    assert found == EXPECTED


def test_bearer_scheme(doc: dict[str, Any]) -> None:
    scheme = doc["components"]["securitySchemes"]["bearer"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer" and scheme["bearerFormat"] == "APIKey"
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/v0/health"]["get"]["security"] == []


def test_the_document_is_the_versioned_mvp(doc: dict[str, Any]) -> None:
    """The spec: the /v0 description carries version 0.9.2 and is labelled an MVP."""
    assert doc["info"]["version"] == "0.9.2" and "MVP" in doc["info"]["title"]


def test_error_envelope_documented_per_status(doc: dict[str, Any]) -> None:
    envelope = doc["components"]["schemas"]["ErrorBody"]
    assert set(envelope["required"]) >= {"error", "message", "request_id"}
    for (path, method), op_id in EXPECTED.items():
        responses = doc["paths"][path][method]["responses"]
        errors = [s for s in responses if s.startswith(("4", "5"))]
        assert errors, op_id
        body = "Mem0ErrorBody" if op_id in MEM0_ERRORS else "ErrorBody"
        for status in errors:
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": f"#/components/schemas/{body}"}, (op_id, status)
            assert "X-Request-Id" in responses[status]["headers"]
        if op_id not in {"getHealth", "getMetrics"}:  # public operations
            assert {"401", "429", "500"} <= set(errors), op_id
            assert "403" in errors or op_id == "getOwnKey", op_id  # any valid key may ask who it is
    assert {"400", "409", "422"} <= set(doc["paths"]["/v0/memories"]["post"]["responses"])


def test_no_two_path_items_differ_only_in_parameter_names(doc: dict[str, Any]) -> None:
    """OpenAPI 3.1 forbids templated paths that are the same but for their parameters' names."""
    seen: dict[str, str] = {}
    for path in doc["paths"]:
        shape = re.sub(r"\{[^}]*\}", "{}", path)
        assert shape not in seen, f"{path} and {seen[shape]} differ only in parameter names"
        seen[shape] = path
    assert "mem0ErrorBody" not in doc["components"]["schemas"]
    assert doc["components"]["schemas"]["Mem0ErrorBody"]["required"] == [
        "error",
        "message",
        "request_id",
        "detail",
    ]


def test_request_bodies(doc: dict[str, Any]) -> None:
    create = doc["paths"]["/v0/memories"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create == {
        "oneOf": [{"$ref": "#/components/schemas/MemoryCreate"}, {"$ref": "#/components/schemas/MemoryBatch"}]
    }
    schemas = doc["components"]["schemas"]
    assert schemas["MemoryCreate"]["properties"]["namespace"]["maxLength"] == 64
    assert schemas["MemoryCreate"]["properties"]["text"]["maxLength"] == 20000
    assert schemas["MemoryBatch"]["properties"]["items"]["maxItems"] == 200
    patch = doc["paths"]["/v0/memories/{memory_id}"]["patch"]["requestBody"]["content"]["application/json"]
    assert patch["schema"] == {"$ref": "#/components/schemas/MemoryPatch"}
    assert set(schemas["MemoryPatch"]["properties"]) == {"tags", "metadata", "archived", "valid_to"}


def test_list_parameters(doc: dict[str, Any]) -> None:
    params = {p["name"]: p for p in doc["paths"]["/v0/memories"]["get"]["parameters"]}
    assert {
        "namespace",
        "entity_id",
        "agent_id",
        "type",
        "status",
        "tag",
        "archived",
        "since",
        "until",
        "q",
        "sort",
        "page_size",
        "cursor",
        "X-Service-Agent",
    } <= set(params)
    assert params["page_size"]["schema"]["maximum"] == 200


def test_docs_page_works_offline(client: TestClient[Litestar]) -> None:
    """The interactive docs load Swagger UI from Loci itself, not from a CDN."""
    page = client.get("/docs").text
    assert "/static/swagger-ui/swagger-ui-bundle.js" in page and "cdn" not in page.lower()
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js"):
        r = client.get(f"/static/swagger-ui/{asset}")
        assert r.status_code == 200 and len(r.content) > 1000, asset


def test_budget_tokenizer_documented(doc: dict[str, Any]) -> None:
    budget = doc["components"]["schemas"]["Budget"]["properties"]
    tokenizer = budget["tokenizer"]
    assert set(tokenizer["enum"]) == {"o200k_base", "cl100k_base", "estimate"}
    assert tokenizer["default"] == "o200k_base"
    assert "newline" in tokenizer["description"]


V1_BODIES: list[dict[str, Any]] = [
    {"user_id": "u"},
    {"app_id": "shop"},
    {"filters": {"user_id": "u"}},
    {"filters": {"run_id": "r", "agent_id": "*"}, "agent_id": "a"},
    {},
    {"filters": {"user_id": "*"}},
    {"filters": {"user_id": "u", "agent_id": "*"}},
    {"filters": {"app_id": ""}},
    {"filters": {"user_id": {"in": ["u"]}}},
    {"filters": {"category": "x"}},
]


@pytest.mark.parametrize("scope", V1_BODIES, ids=[str(b) for b in V1_BODIES])
def test_v1_create_scope_rule_says_what_the_server_does(
    client: TestClient[Litestar], auth: dict[str, str], doc: dict[str, Any], scope: dict[str, Any]
) -> None:
    """A request the document calls valid is stored; one it calls invalid is refused."""
    body = {"messages": [{"role": "user", "content": "I like tea"}], **scope}
    schema = {**doc["components"]["schemas"]["V1CreateRequest"], "components": doc["components"]}
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    status = client.post("/v1/memories", json=body, headers=auth).status_code
    assert (status == 200) == valid, (status, valid)
