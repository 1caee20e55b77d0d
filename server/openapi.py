"""The OpenAPI document: served at /schema/openapi.json and /docs/openapi.json, Swagger UI at /docs.

Routes read their bodies raw (to tell one memory from a batch and to fingerprint Idempotency-Key
requests), so their request-body schemas are added here from the same msgspec Structs that validate.
"""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
from litestar import Litestar, Request, get
from litestar._openapi.plugin import OpenAPIPlugin
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.static_files import create_static_files_router

from server import schema_rules
from server.errors import DOCUMENTED_ERRORS
from server.schemas.errors import Mem0ErrorBody
from server.schemas.memories import MemoryBatch, MemoryCreate, MemoryPatch

API_VERSION = "0.9.2"
BEARER = "bearer"
ERROR_REF = "#/components/schemas/ErrorBody"
MEM0_ERROR_REF = "#/components/schemas/Mem0ErrorBody"
#: tags of the mem0-compatible routes, whose errors also carry `detail`
MEM0_TAGS = frozenset({"v1", "mem0", "mem0 open-source server"})

#: operationId -> the body Structs it accepts (oneOf when several)
REQUEST_BODIES: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "createMemory": (MemoryCreate, MemoryBatch),
    "updateMemory": (MemoryPatch,),
}


def openapi_config() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="Loci memory service (MVP)",
        version=API_VERSION,
        description="Memory and context assembly for LLM agents (/v0). Errors use one envelope: "
        "{error, message, request_id, details}.",
        path="/docs",
        render_plugins=[_swagger(), _Json()],
        security=[{BEARER: []}],
        components=Components(
            security_schemes={
                BEARER: SecurityScheme(
                    type="http",
                    scheme="bearer",
                    bearer_format="APIKey",
                    description="Authorization: Bearer loci_<key>",
                ),
            }
        ),
    )


def _document(app: Litestar) -> dict[str, Any]:
    return app.plugins.get(OpenAPIPlugin).provide_openapi_schema()


def add_request_bodies(doc: dict[str, Any], bodies: dict[str, tuple[type[msgspec.Struct], ...]]) -> None:
    types = tuple(t for ts in bodies.values() for t in ts)
    refs, components = msgspec.json.schema_components(types, ref_template="#/components/schemas/{name}")
    schema_rules.mark_date_times(components, types)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in components.items():
        schemas.setdefault(name, schema)
    by_type = dict(zip(types, refs, strict=True))
    for item in doc.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict):
                continue
            wanted = bodies.get(operation.get("operationId", ""))
            if not wanted:
                continue
            schema = by_type[wanted[0]] if len(wanted) == 1 else {"oneOf": [by_type[t] for t in wanted]}
            operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": schema}}}


#: operations that need no API key
PUBLIC_OPERATIONS = {"getHealth", "getMetrics"}

COMMON_HEADERS: dict[str, Any] = {
    "X-Request-Id": {
        "description": "req_<ULID>, or the client's own X-Request-Id",
        "schema": {"type": "string"},
    },
    "X-RateLimit-Remaining": {
        "description": "requests left in the current window",
        "schema": {"type": "integer"},
    },
    "X-RateLimit-Reset": {"description": "seconds until the window resets", "schema": {"type": "integer"}},
}


def _operations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for item in doc.get("paths", {}).values() for op in item.values() if isinstance(op, dict)]


def _error(status: int) -> dict[str, Any]:
    return {
        "description": DOCUMENTED_ERRORS[status],
        "content": {"application/json": {"schema": {"$ref": ERROR_REF}}},
    }


def document_statuses(doc: dict[str, Any]) -> None:
    """413 where a body is read (Litestar refuses bodies over loci.wire.writes.MAX_BODY_BYTES), 503 wherever
    the database is used."""
    for op in _operations(doc):
        responses = op.setdefault("responses", {})
        if "requestBody" in op:
            responses.setdefault("413", _error(413))
        if "requestBody" in op or op.get("parameters"):
            responses.setdefault("422", _error(422))
        if op.get("operationId") not in PUBLIC_OPERATIONS:
            responses.setdefault("503", _error(503))


def add_common_headers_and_security(doc: dict[str, Any]) -> None:
    _, mem0_error = msgspec.json.schema_components(
        [Mem0ErrorBody], ref_template="#/components/schemas/{name}"
    )
    doc.setdefault("components", {}).setdefault("schemas", {}).update(mem0_error)
    for op in _operations(doc):
        if op.get("operationId") in PUBLIC_OPERATIONS:
            op["security"] = []
        error_ref = MEM0_ERROR_REF if MEM0_TAGS & set(op.get("tags", ())) else ERROR_REF
        for status, response in op.get("responses", {}).items():
            if status.startswith(("4", "5")):  # Litestar's own default 400 included: one envelope
                response["content"] = {"application/json": {"schema": {"$ref": error_ref}}}
                if status == "400":
                    response["description"] = DOCUMENTED_ERRORS[400]
            response.setdefault("headers", {}).update(COMMON_HEADERS)
            if response is op["responses"].get("429") or response is op["responses"].get("503"):
                response["headers"]["Retry-After"] = {
                    "description": "seconds to wait",
                    "schema": {"type": "integer"},
                }


def tidy_descriptions(node: Any) -> None:
    """Every schema description as `inspect.cleandoc` gives its docstring (msgspec releases disagree on
    whether a docstring's continuation lines keep their indentation)."""
    if isinstance(node, dict):
        text = node.get("description")
        if isinstance(text, str):
            node["description"] = inspect.cleandoc(text)
        for value in node.values():
            tidy_descriptions(value)
    elif isinstance(node, list):
        for value in node:
            tidy_descriptions(value)


def complete(doc: dict[str, Any]) -> dict[str, Any]:
    """Complete Litestar's document in place (request bodies, headers, public operations). Idempotent,
    and run when the document is served, so building an app stays cheap."""
    from server.routes import REQUEST_BODIES as ROUTE_BODIES  # the routes import this module

    add_request_bodies(doc, {**REQUEST_BODIES, **ROUTE_BODIES})
    schema_rules.add_cross_field_rules(doc)
    schema_rules.describe_rules(_operations(doc))
    schema_rules.distinguish_numbers(doc)
    document_statuses(doc)
    add_common_headers_and_security(doc)
    tidy_descriptions(doc.get("components", {}).get("schemas", {}))
    return doc


class _Json(JsonRenderPlugin):
    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, complete(openapi_schema))


class _Swagger(SwaggerRenderPlugin):
    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        return super().render(request, complete(openapi_schema))


#: Swagger UI's JavaScript and CSS, served by Loci itself (from the swagger-ui-bundle package) so
#: /docs works with no network access
ASSETS_PATH = "/static/swagger-ui"


def _assets_dir() -> str | None:
    try:
        import swagger_ui_bundle
    except ImportError:  # fall back to Litestar's default CDN URLs
        return None
    return str(swagger_ui_bundle.swagger_ui_path)


def _swagger() -> _Swagger:
    if _assets_dir() is None:
        return _Swagger()
    return _Swagger(
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
    )


@get("/schema/openapi.json", include_in_schema=False, sync_to_thread=False, media_type="application/json")
def openapi_json(request: Request[Any, Any, Any]) -> dict[str, Any]:
    return complete(_document(request.app))


ROUTES: list[Any] = [openapi_json]
if (_dir := _assets_dir()) is not None:
    ROUTES.append(
        create_static_files_router(
            path=ASSETS_PATH, directories=[_dir], include_in_schema=False, name="swagger-ui-assets"
        )
    )
