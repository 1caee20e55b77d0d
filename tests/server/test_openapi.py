"""The OpenAPI document: operation ids, bearer scheme, request bodies, and the envelope per error status."""

from __future__ import annotations

import pytest

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
    ("/metrics", "get"): "getMetrics",
    ("/v1/memories", "post"): "createMemoriesV1",
    ("/v1/memories", "get"): "listMemoriesV1",
    ("/v1/memories/{memory_id}", "get"): "getMemoryV1",
    ("/v1/memories/{memory_id}", "delete"): "deleteMemoryV1",
}


@pytest.fixture
def doc(client) -> dict:
    r = client.get("/schema/openapi.json")
    assert r.status_code == 200
    return r.json()


def test_both_document_paths_and_docs_page(client, doc) -> None:
    assert client.get("/docs/openapi.json").json() == doc
    r = client.get("/docs")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]


def test_operation_ids(doc) -> None:
    found = {(path, method): op["operationId"] for path, item in doc["paths"].items()
             for method, op in item.items() if isinstance(op, dict) and "operationId" in op}
    assert found == EXPECTED


def test_bearer_scheme(doc) -> None:
    scheme = doc["components"]["securitySchemes"]["bearer"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer" and scheme["bearerFormat"] == "APIKey"
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/v0/health"]["get"]["security"] == []


def test_error_envelope_documented_per_status(doc) -> None:
    envelope = doc["components"]["schemas"]["ErrorBody"]
    assert set(envelope["required"]) >= {"error", "message", "request_id"}
    for (path, method), op_id in EXPECTED.items():
        responses = doc["paths"][path][method]["responses"]
        errors = [s for s in responses if s.startswith(("4", "5"))]
        assert errors, op_id
        for status in errors:
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (op_id, status)
            assert "X-Request-Id" in responses[status]["headers"]
        if op_id not in {"getHealth", "getMetrics"}:  # public operations
            assert {"401", "403", "429", "500"} <= set(errors), op_id
    assert {"400", "409", "422"} <= set(doc["paths"]["/v0/memories"]["post"]["responses"])


def test_request_bodies(doc) -> None:
    create = doc["paths"]["/v0/memories"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create == {"oneOf": [{"$ref": "#/components/schemas/MemoryCreate"},
                                {"$ref": "#/components/schemas/MemoryBatch"}]}
    schemas = doc["components"]["schemas"]
    assert schemas["MemoryCreate"]["properties"]["namespace"]["maxLength"] == 64
    assert schemas["MemoryCreate"]["properties"]["text"]["maxLength"] == 20000
    assert schemas["MemoryBatch"]["properties"]["items"]["maxItems"] == 200
    patch = doc["paths"]["/v0/memories/{memory_id}"]["patch"]["requestBody"]["content"]["application/json"]
    assert patch["schema"] == {"$ref": "#/components/schemas/MemoryPatch"}
    assert set(schemas["MemoryPatch"]["properties"]) == {"tags", "metadata", "archived", "valid_to"}


def test_list_parameters(doc) -> None:
    params = {p["name"]: p for p in doc["paths"]["/v0/memories"]["get"]["parameters"]}
    assert {"namespace", "entity_id", "agent_id", "type", "status", "tag", "archived", "since", "until",
            "sort", "page_size", "cursor", "X-Service-Agent"} <= set(params)
    assert params["page_size"]["schema"]["maximum"] == 200


def test_docs_page_works_offline(client) -> None:
    """The interactive docs load Swagger UI from Loci itself, not from a CDN."""
    page = client.get("/docs").text
    assert "/static/swagger-ui/swagger-ui-bundle.js" in page and "cdn" not in page.lower()
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "swagger-ui-standalone-preset.js"):
        r = client.get(f"/static/swagger-ui/{asset}")
        assert r.status_code == 200 and len(r.content) > 1000, asset
