"""LangGraph's filters, applied to the items the API returns: a search's `filter` on values (JSON-like
equality, nested dicts, `$eq $ne $gt $gte $lt $lte`) and list_namespaces' prefix/suffix conditions ("*"
matches any label). The same semantics as LangGraph's reference stores; tests run both side by side."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

_COMPARE = {
    "$gt": lambda a, b: float(a) > float(b),
    "$gte": lambda a, b: float(a) >= float(b),
    "$lt": lambda a, b: float(a) < float(b),
    "$lte": lambda a, b: float(a) <= float(b),
}


def value_matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    return not filter or all(_matches(value.get(key), wanted) for key, wanted in filter.items())


def _matches(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, dict) and all(_matches(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_matches(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op not in _COMPARE:
        raise ValueError(f"Unsupported operator: {op} (valid: $eq, $ne, {', '.join(_COMPARE)})")
    if actual is None:
        return False
    return bool(_COMPARE[op](actual, operand))


def namespace_matches(namespace: Sequence[str], condition: MatchCondition) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type} (valid: prefix, suffix)")
    return all(wanted == "*" or label == wanted for label, wanted in pairs)


def literal_prefix(conditions: Sequence[MatchCondition] | None) -> tuple[str, ...]:
    """The labels every matching namespace starts with: the first prefix condition up to its first "*"."""
    for condition in conditions or ():
        if condition.match_type == "prefix":
            labels: list[str] = []
            for label in condition.path:
                if label == "*":
                    break
                labels.append(label)
            return tuple(labels)
    return ()
