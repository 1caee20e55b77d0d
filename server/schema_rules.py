"""What the OpenAPI document says beyond what the Structs generate, so that it tells the truth about
what the server accepts (`server.openapi.complete` applies it):

- cross-field rules JSON Schema can express, as `anyOf` on the request components (each enforced by the
  code named beside it);
- rules it cannot express (one date before another, one of two query parameters), described on the
  operation and listed in its `x-rules`; the 422 of such a rule names it in `details.rule`;
- a pattern on every request date-time (RFC 3339 as the server parses it);
- `oneOf` unions whose integer branch would also match a `number` branch get `number` told apart
  (`not: integer`), so every value matches exactly one branch;
- 413 on the operations that read a body and 503 (with Retry-After) on every authenticated operation.
"""

from __future__ import annotations

from typing import Any

import msgspec.inspect as mi

from engine.models import MEMORY_TYPES, NOT_BLANK_PATTERN
from server.mem0.filters import ENTITY_KEYS
from server.mem0.records import RESERVED_KEYS

#: RFC 3339 date-times as msgspec parses them (a calendar date, a time, an optional offset)
DATE_TIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?$"
)

#: what an opaque cursor looks like (base64url, no padding)
CURSOR_PATTERN = r"^[A-Za-z0-9_-]*$"

#: rule name -> what it says (the 422 of a rule names it in details.rule)
RULES: dict[str, str] = {
    "date_time_range": "a date-time's UTC value must fall within years 1 to 9999",
    "not_blank": "a text, tag, predicate or id (entity, agent, namespace; mem0's user, agent, run and app "
    "ids; X-Service-Agent) is not blank: something in it is visible, not only whitespace, control, format "
    "or combining characters (a zero-width space alone is blank); an id of symbols alone (`!!!`) is not blank",
    "conflict_key_shape": "a conflict key is <subject>|<predicate>: some '|', something visible before "
    "the first and after the last",
    "valid_to_after_valid_from": "valid_to must not be before valid_from (or the timestamp)",
    "user_or_agent": "user_id or agent_id is required",
    "cursor": "a cursor is one the server returned (for the same filters and sort)",
    "scope_filter": "the filters (or top-level ids) name a user_id, agent_id, run_id or app_id",
    "timestamp_unchanged": "a memory's timestamp cannot be changed",
    "something_to_update": "an update gives text, metadata or expiration_date",
    "filter_language": "filters use mem0's keys and operators (the refusal lists them in details)",
    "space_metadata": "on /v0, metadata.run_id and metadata.app_id name the run and app a memory is "
    "filed under: each a string of 1 to 128 characters, or null",
    "reserved_metadata": "an update's metadata keeps the keys Loci wrote itself where it leaves them out; "
    "it may repeat them, not change them: object_name, event_date and negated on a fact (its value), on "
    "mem0's update also run_id, app_id, role and origin (on /v0 a run_id or app_id moves the memory to "
    "that space, null out of it)",
}

#: operationId -> the rules of RULES it enforces
OPERATION_RULES: dict[str, tuple[str, ...]] = {
    "createMemory": (
        "date_time_range",
        "valid_to_after_valid_from",
        "not_blank",
        "conflict_key_shape",
        "space_metadata",
    ),
    "updateMemory": (
        "date_time_range",
        "valid_to_after_valid_from",
        "not_blank",
        "reserved_metadata",
        "space_metadata",
    ),
    "batchUpsertMemories": (
        "date_time_range",
        "valid_to_after_valid_from",
        "not_blank",
        "conflict_key_shape",
        "space_metadata",
    ),
    "listMemories": ("date_time_range", "cursor", "not_blank"),
    "listEvents": ("date_time_range", "cursor", "not_blank"),
    "assembleContext": ("date_time_range", "not_blank"),
    "recall": ("date_time_range", "not_blank"),
    "pruneMemories": ("date_time_range", "not_blank"),
    "listMemoriesV1": ("user_or_agent", "not_blank"),
    "getEntityGraph": ("date_time_range", "not_blank"),
    # engine.memory_service.check_ids: an entity, agent or namespace the body or a parameter names
    **{
        op: ("not_blank",)
        for op in ("summarize", "extract", "mem0OssList", "mem0DeleteEntity", "mem0DeleteEntityV1")
    },
    **{
        op: ("scope_filter", "filter_language", "not_blank")
        for op in (
            "mem0ListV3",
            "mem0ListV2",
            "mem0SearchV3",
            "mem0SearchV2",
            "mem0SearchV1",
            "mem0OssSearch",
        )
    },
    "mem0DeleteAll": ("scope_filter", "filter_language", "not_blank"),
    "mem0OssDeleteAll": ("scope_filter", "not_blank"),
    # server.mem0.operations: an expiration_date before the add's timestamp; a blank id (scopes_of)
    **{
        op: ("valid_to_after_valid_from", "not_blank")
        for op in ("createMemoriesV1", "mem0AddV3", "mem0OssAdd")
    },
    **{
        op: ("timestamp_unchanged", "something_to_update", "reserved_metadata", "valid_to_after_valid_from")
        for op in ("mem0UpdateMemory", "mem0OssUpdate")
    },
}


def _present(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": [name], "properties": {name: schema}}


# engine.prune.prune: at least one rule (archived/expired count only when true)
PRUNE_NEEDS_A_RULE: dict[str, Any] = {
    "anyOf": [
        _present("statuses", {"type": "array"}),
        _present("archived", {"const": True}),
        _present("expired", {"const": True}),
        _present("older_than", {"type": "string"}),
        _present("max_confidence", {"type": "number"}),
        _present("types", {"type": "array"}),
        _present("tags", {"type": "array"}),
    ]
}

#: an id given in mem0 `filters` instead of at the top level (server.mem0.operations.scopes_of)
_FILTER_ID: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 128,
    "pattern": NOT_BLANK_PATTERN,
    "not": {"const": "*"},
}

# server.mem0.operations.scopes_of: an id (user_id, agent_id, run_id, app_id) at the top level or in
# `filters`; an id in `filters` that the top level does not give must be a plain id; some user or
# assistant message not blank; no metadata key Loci writes itself (server.mem0.operations.check_metadata)
V1_CREATE_NEEDS_A_SCOPE: dict[str, Any] = {
    "anyOf": [
        *(_present(name, {"type": "string"}) for name in ENTITY_KEYS),
        *(
            {"required": ["filters"], "properties": {"filters": _present(name, _FILTER_ID)}}
            for name in ENTITY_KEYS
        ),
    ],
    "allOf": [
        {
            "anyOf": [
                _present(name, {"type": "string"}),
                {"properties": {"filters": {"properties": {name: _FILTER_ID}}}},
            ]
        }
        for name in ENTITY_KEYS
    ],
    "properties": {
        # server.mem0.operations.prepare_add: a system message is never stored, so something else is said
        "messages": {
            "contains": {
                "properties": {
                    "content": {"pattern": NOT_BLANK_PATTERN},
                    "role": {"enum": ["user", "assistant"]},
                }
            }
        },
        "metadata": {"propertyNames": {"not": {"enum": list(RESERVED_KEYS)}}},
    },
}

# engine.write.batch_upsert.check_item: a fact (the default type) has a subject, a predicate and a value
# (object_text, object_num, a text, or negated), never both object_text and object_num; any other type
# has a text that is not blank
_FACT_VALUE: list[dict[str, Any]] = [
    _present("object_text", {"type": "string"}),
    _present("object_num", {"type": "number"}),
    _present("text", {"type": "string"}),
    _present("negated", {"const": True}),
]
UPSERT_ITEM_KINDS: dict[str, Any] = {
    "anyOf": [
        {
            "properties": {
                "type": {"const": "fact"},
                "subject": {"type": "string"},
                "predicate": {"type": "string"},
            },
            "required": ["subject", "predicate"],
            "anyOf": _FACT_VALUE,
            "not": {
                "required": ["object_text", "object_num"],
                "properties": {"object_text": {"type": "string"}, "object_num": {"type": "number"}},
            },
        },
        {
            "properties": {
                "type": {"enum": [t for t in MEMORY_TYPES if t != "fact"]},
                "text": {"type": "string", "pattern": NOT_BLANK_PATTERN},
            },
            "required": ["type", "text"],
        },
    ]
}

# engine.memory_service: a text a write sets is not blank (a memory created, or a text an edit replaces)
_NOT_BLANK = {"type": "string", "pattern": NOT_BLANK_PATTERN}
TEXT_NOT_BLANK: dict[str, Any] = {"properties": {"text": _NOT_BLANK}}
EDIT_TEXT_NOT_BLANK: dict[str, Any] = {"properties": {"text": _NOT_BLANK, "data": _NOT_BLANK}}

COMPONENT_RULES: dict[str, dict[str, Any]] = {
    "MemoryCreate": TEXT_NOT_BLANK,
    "Mem0UpdateRequest": EDIT_TEXT_NOT_BLANK,
    "PruneRequest": PRUNE_NEEDS_A_RULE,
    "V1CreateRequest": V1_CREATE_NEEDS_A_SCOPE,
    "UpsertItem": UPSERT_ITEM_KINDS,
}


def add_cross_field_rules(doc: dict[str, Any]) -> None:
    schemas = doc.get("components", {}).get("schemas", {})
    for name, rule in COMPONENT_RULES.items():
        if name in schemas:
            schemas[name]["allOf"] = [rule]


def describe_rules(operations: list[dict[str, Any]]) -> None:
    for op in operations:
        names = OPERATION_RULES.get(op.get("operationId", ""), ())
        if not names:
            continue
        op["x-rules"] = [{"rule": n, "description": RULES[n]} for n in names]
        listed = "; ".join(f"{RULES[n]} (`{n}`)" for n in names)
        note = f"Rules the schema cannot express (422 with details.rule): {listed}."
        if note not in op.get("description", ""):
            op["description"] = f"{op['description']}\n\n{note}" if op.get("description") else note


def _walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def distinguish_numbers(doc: dict[str, Any]) -> None:
    for schema in _walk(doc):
        branches = schema.get("oneOf")
        if not isinstance(branches, list):
            continue
        if any(isinstance(b, dict) and b.get("type") == "integer" for b in branches):
            for b in branches:
                if isinstance(b, dict) and b.get("type") == "number":
                    b["not"] = {"type": "integer"}


def inner_types(info: mi.Type) -> tuple[mi.Type, ...]:
    """The types one level inside `info` (a dict's values, not its string keys): the walk shared by the
    type traversals here and in `server.http`."""
    if isinstance(info, mi.Metadata):
        return (info.type,)
    if isinstance(info, mi.UnionType):
        return tuple(info.types)
    if isinstance(info, mi.StructType):
        return tuple(f.type for f in info.fields)
    if isinstance(info, mi.ListType | mi.VarTupleType):
        return (info.item_type,)
    if isinstance(info, mi.DictType):
        return (info.value_type,)
    return ()


def _date_time_fields(info: mi.Type, found: dict[str, set[str]], seen: set[type]) -> None:
    """Struct name -> its fields holding a datetime (msgspec documents them as plain strings)."""
    while isinstance(info, mi.Metadata):
        info = info.type
    if isinstance(info, mi.StructType):
        if info.cls in seen:
            return
        seen.add(info.cls)
        for f in info.fields:
            inner = f.type.type if isinstance(f.type, mi.Metadata) else f.type
            options = inner.types if isinstance(inner, mi.UnionType) else (inner,)
            if any(isinstance(o, mi.DateTimeType) for o in options):
                found.setdefault(info.cls.__name__, set()).add(f.encode_name)
            _date_time_fields(f.type, found, seen)
    else:
        for inner_type in inner_types(info):
            _date_time_fields(inner_type, found, seen)


def mark_date_times(components: dict[str, dict[str, Any]], types: tuple[type[Any], ...]) -> None:
    """`format: date-time` and DATE_TIME_PATTERN on the string form of every datetime field of `types`."""
    found: dict[str, set[str]] = {}
    seen: set[type] = set()
    for info in mi.multi_type_info(types):
        _date_time_fields(info, found, seen)
    for name, fields in found.items():
        properties = components.get(name, {}).get("properties", {})
        for field in fields:
            schema = properties.get(field, {})
            for option in schema.get("anyOf", [schema]):
                if option.get("type") == "string":
                    option.update(format="date-time", pattern=DATE_TIME_PATTERN)
