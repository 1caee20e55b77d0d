"""Wire records of the HTTP surface, one module per route module of `server.routes`.

Constraints are `msgspec.Meta` on the fields (most come from `engine.models` aliases), so validation
(a 422 naming the field) and the OpenAPI document share one source.
"""
