"""mem0's filter language, read into a store pre-filter and a predicate over memories.

Keys: `user_id`, `agent_id`, `run_id`, `app_id`, `memory_id` (or `id`), `categories`, `metadata` (a
mapping of metadata keys to values, each read as a key's value), `created_at`, `updated_at`,
`timestamp`. A value is a scalar (equality), `"*"` (the field is set) or an operator object: `in`,
`ne`, `gt`, `gte`, `lt`, `lte`, `contains`, `icontains`. `AND`, `OR` (lists) and `NOT` (a list or an
object) combine conditions. Anything else is an `InvalidInput` naming the filter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any

import msgspec

from engine.errors import InvalidInput
from engine.memory_service import check_ids
from engine.models import Memory
from engine.timeutil import to_utc
from server.mem0.records import meta_str

Predicate = Callable[[Memory], bool]
ENTITY_KEYS = ("user_id", "agent_id", "run_id", "app_id")
TIME_KEYS = ("created_at", "updated_at", "timestamp")
#: every key a filter object may name (`_node` reads each; any other is refused)
FILTER_KEYS = frozenset(
    {*ENTITY_KEYS, *TIME_KEYS, "memory_id", "id", "categories", "metadata", "AND", "OR", "NOT"}
)
OPERATORS = ("in", "ne", "gt", "gte", "lt", "lte", "contains", "icontains")
MAX_DEPTH = 8
MAX_LIST = 100
FIELD = "filters"


class Selection(msgspec.Struct, frozen=True, kw_only=True):
    """What a filter selects: equality pre-filters the store applies, and the full predicate."""

    entity_id: str | None = None
    agent_id: str | None = None
    names_entity: bool = False
    predicate: Predicate = lambda m: True
    #: the pre-filters are the whole filter (the predicate adds nothing to them)
    exact: bool = True


def field_value(m: Memory, key: str) -> Any:
    if key == "user_id":
        return m.entity_id
    if key == "agent_id":
        return m.agent_id
    if key in ("run_id", "app_id"):
        return meta_str(m, key)
    if key in ("memory_id", "id"):
        return m.memory_id
    if key in TIME_KEYS:  # a record's created_at is the memory's timestamp (server.mem0.records)
        return m.updated_at if key == "updated_at" else m.timestamp
    raise InvalidInput(f"unsupported filter {key!r}", field=FIELD, details={"rule": "filter_language"})


def _bad(message: str) -> InvalidInput:
    return InvalidInput(
        message,
        field=FIELD,
        details={
            "rule": "filter_language",
            "supported_keys": [*ENTITY_KEYS, "memory_id", "categories", "metadata", *TIME_KEYS],
            "supported_operators": [*OPERATORS, "AND", "OR", "NOT", "*"],
        },
    )


def _as_time(value: Any) -> datetime:
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):  # outside years 1-9999 (or not a number: nan)
            raise _bad(f"not a date or time: {value!r}") from None
    if isinstance(value, str):
        try:
            return to_utc(datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00")))
        except ValueError:
            try:
                return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
            except ValueError:
                pass
    raise _bad(f"not a date or time: {value!r}")


def _compare(op: str, actual: Any, expected: Any, timed: bool) -> bool:
    if op == "in":
        if not isinstance(expected, list) or len(expected) > MAX_LIST:
            raise _bad(f"`in` takes a list of at most {MAX_LIST} values")
        return actual in ([_as_time(v) for v in expected] if timed else expected)
    if op == "ne":
        return bool(actual != (_as_time(expected) if timed else expected))
    if op in ("contains", "icontains"):
        if not isinstance(expected, str):
            raise _bad(f"`{op}` takes a string")
        text = actual if isinstance(actual, str) else ""
        return expected.casefold() in text.casefold() if op == "icontains" else expected in text
    if actual is None:
        return False
    bound = _as_time(expected) if timed else expected
    try:
        return bool(
            {"gt": actual > bound, "gte": actual >= bound, "lt": actual < bound, "lte": actual <= bound}[op]
        )
    except TypeError as exc:
        raise _bad(f"`{op}` cannot compare {expected!r}") from exc


def _check_ids(key: str, value: Any, path: str) -> None:
    """An id a condition admits or refuses (an equality, one `in` a list, `ne`) is not blank, given at the
    top level or in `filters`: a blank id is a mistake, not a selection; the refusal names its place."""
    if isinstance(value, Mapping):
        listed = [*(value["in"] if isinstance(value.get("in"), list) else ()), value.get("ne")]
    else:
        listed = [value]
    for one in listed:
        if isinstance(one, str):
            check_ids(path, **{key: one})


def _condition(key: str, value: Any, path: str) -> Predicate:
    timed = key in TIME_KEYS
    if key in ENTITY_KEYS:
        _check_ids(key, value, path)
    if value == "*":
        return lambda m: field_value(m, key) is not None
    if isinstance(value, Mapping):
        ops = dict(value)
        unknown = [op for op in ops if op not in OPERATORS]
        if unknown:
            raise _bad(f"unsupported operator {unknown[0]!r} on {key!r}")
        for op, expected in ops.items():  # check the operands once, before any memory is read
            if timed and op in ("gt", "gte", "lt", "lte"):
                _as_time(expected)
        return lambda m: all(
            _compare(op, field_value(m, key), expected, timed) for op, expected in ops.items()
        )
    if isinstance(value, list | dict):
        raise _bad(f"filter {key!r} takes a value or an operator object")
    expected = _as_time(value) if timed else value
    return lambda m: field_value(m, key) == expected


def _categories(value: Any) -> Predicate:
    if isinstance(value, str):
        return lambda m: value in m.tags
    if isinstance(value, Mapping) and set(value) <= {"in", "contains"}:
        wanted = value.get("in", [])
        part = value.get("contains")
        if not isinstance(wanted, list) or len(wanted) > MAX_LIST:
            raise _bad(f"categories `in` takes a list of at most {MAX_LIST} values")
        return lambda m: (
            (not wanted or any(t in wanted for t in m.tags))
            and (part is None or any(str(part).casefold() in t.casefold() for t in m.tags))
        )
    raise _bad('categories takes a category, {"in": [...]} or {"contains": ...}')


def _metadata_value(key: str, value: Any) -> Predicate:
    """One metadata key's condition, in the language of the other keys: a value (equality), `"*"` (set)
    or an operator object. Metadata is free-form: a value an operator cannot compare matches none."""
    if value == "*":
        return lambda m: m.metadata.get(key) is not None
    if not isinstance(value, Mapping):
        return lambda m: m.metadata.get(key) == value
    ops = dict(value)
    unknown = [op for op in ops if op not in OPERATORS]
    if unknown:
        raise _bad(f"unsupported operator {unknown[0]!r} on metadata {key!r}")
    for op, expected in ops.items():  # a malformed operand (`in` no list) is refused before any read
        _compare(op, None, expected, False)

    def matches(m: Memory) -> bool:
        try:
            return all(_compare(op, m.metadata.get(key), v, False) for op, v in ops.items())
        except InvalidInput:  # `gt` 3 of "high": not a match
            return False

    return matches


def _metadata(value: Any) -> Predicate:
    if not isinstance(value, Mapping):
        raise _bad("metadata takes an object of key/value pairs")
    preds = [_metadata_value(str(k), v) for k, v in value.items()]
    return lambda m: all(p(m) for p in preds)


def _combine(key: str, value: Any, depth: int, path: str) -> Predicate:
    parts = (
        value if isinstance(value, list) else [value] if key == "NOT" and isinstance(value, Mapping) else None
    )
    if parts is None or len(parts) > MAX_LIST:
        raise _bad(f"{key} takes a list of at most {MAX_LIST} conditions")
    preds = [_node(p, depth + 1, f"{path}{key}[{i}].") for i, p in enumerate(parts)]
    if key == "AND":
        return lambda m: all(p(m) for p in preds)
    if key == "OR":
        return lambda m: any(p(m) for p in preds)
    return lambda m: not any(p(m) for p in preds)


def _node(node: Any, depth: int, path: str) -> Predicate:
    if depth > MAX_DEPTH:
        raise _bad(f"filters nest at most {MAX_DEPTH} levels")
    if not isinstance(node, Mapping):
        raise _bad("a filter is an object")
    preds: list[Predicate] = []
    for key, value in node.items():
        if key in ("AND", "OR", "NOT"):
            preds.append(_combine(key, value, depth, path))
        elif key == "categories":
            preds.append(_categories(value))
        elif key == "metadata":
            preds.append(_metadata(value))
        elif key in (*ENTITY_KEYS, *TIME_KEYS, "memory_id", "id"):
            preds.append(_condition(key, value, path))
        else:
            raise _bad(f"unsupported filter {key!r}")
    return lambda m: all(p(m) for p in preds)


def _names_entity(node: Any) -> bool:
    if isinstance(node, Mapping):
        return any(
            k in ENTITY_KEYS or (k in ("AND", "OR", "NOT") and _names_entity(v)) for k, v in node.items()
        )
    if isinstance(node, list):
        return any(_names_entity(n) for n in node)
    return False


def _one_id(value: Any) -> str | None:
    """The one id a condition admits: an equality, or `in` a list of one (the same selection)."""
    if isinstance(value, str) and value != "*":
        return value
    if isinstance(value, Mapping) and set(value) == {"in"}:
        (listed,) = value.values()
        if isinstance(listed, list) and len(listed) == 1 and isinstance(listed[0], str):
            return listed[0]
    return None


def _equalities(node: Mapping[str, Any]) -> tuple[dict[str, str], bool]:
    """Top-level (and top-level AND) user_id/agent_id conditions that admit one id: safe to push into
    the store's query; and whether they are the whole filter."""
    found: dict[str, str] = {}
    whole = True
    for key, value in node.items():
        one = _one_id(value) if key in ("user_id", "agent_id") else None
        if one is not None:
            whole = whole and found.get(key, one) == one
            found[key] = one
        elif key == "AND" and isinstance(value, list):
            for part in value:
                inner, inner_whole = _equalities(part) if isinstance(part, Mapping) else ({}, False)
                whole = whole and inner_whole and all(found.get(k, v) == v for k, v in inner.items())
                found.update(inner)
        else:
            whole = False
    return found, whole


def check(filters: Mapping[str, Any] | None) -> None:
    """Refuse a request's `filters` as given, before routes AND other conditions into it, so that a
    refusal names the key's place in them (`filters.AND[0].user_id`)."""
    if filters:
        _node(filters, 0, f"{FIELD}.")


def select(filters: Mapping[str, Any] | None) -> Selection:
    """Read a mem0 filter object (None: everything)."""
    if not filters:
        return Selection()
    predicate = _node(filters, 0, "")
    eq, whole = _equalities(filters)
    return Selection(
        entity_id=eq.get("user_id"),
        agent_id=eq.get("agent_id"),
        names_entity=_names_entity(filters),
        predicate=predicate,
        exact=whole,
    )


def with_metadata_keys(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """mem0's open-source filters, where a top-level key the filter language does not name is a
    metadata key ({"source": "email"} reads as {"metadata": {"source": "email"}})."""
    if not filters:
        return None
    own = {k: v for k, v in filters.items() if k not in FILTER_KEYS}
    rest = {k: v for k, v in filters.items() if k in FILTER_KEYS}
    if not own:
        return rest
    return {"AND": [rest, {"metadata": own}]} if rest else {"metadata": own}


def merge_ids(filters: Mapping[str, Any] | None, **ids: str | None) -> dict[str, Any] | None:
    """Filters with top-level entity ids (older clients, the open-source server) ANDed in."""
    given = {k: v for k, v in ids.items() if v}
    if not given:
        return dict(filters) if filters else None
    if not filters:
        return given
    return {"AND": [dict(filters), given]}
