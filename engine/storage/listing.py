"""ListQuery / EventQuery semantics over in-process records (InMemoryStore; the oracle for SQL stores).

list_memories: filters are ANDed; `tag` means the tag is in `tags`; `since` <= timestamp < `until`;
`text` means the text contains it with ASCII letters compared case-insensitively (other characters
exactly: what SQLite's lower() does, and what PostgreSQL does through translate());
order by (timestamp, memory_id) descending (`timestamp_desc`) or ascending; `after` = (timestamp,
memory_id) of the last item already seen, so the next page starts strictly after it in that order.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.models import Event, Memory
from engine.storage.base import EventQuery, ListQuery
from engine.timeutil import to_micros

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only (the text filter's case rule, the same in every store)."""
    return text.translate(_ASCII_LOWER)


def _fields_match(m: Memory, q: ListQuery) -> bool:
    if q.namespace is not None and m.namespace != q.namespace:
        return False
    if q.entity_id is not None and m.entity_id != q.entity_id:
        return False
    if q.agent_id is not None and m.agent_id != q.agent_id:
        return False
    if q.types is not None and m.type not in q.types:
        return False
    if q.statuses is not None and m.status not in q.statuses:
        return False
    if q.tag is not None and q.tag not in m.tags:
        return False
    if q.archived is not None and m.archived != q.archived:
        return False
    return not (q.text is not None and ascii_lower(q.text) not in ascii_lower(m.text))


def _in_window(m: Memory, q: ListQuery) -> bool:
    """`since` <= timestamp < `until`, and strictly after the `after` cursor in the sort order."""
    ts = to_micros(m.timestamp)
    if q.since is not None and ts < to_micros(q.since):
        return False
    if q.until is not None and ts >= to_micros(q.until):
        return False
    if q.after is not None:
        pos = (ts, m.memory_id)
        after = (to_micros(q.after[0]), q.after[1])
        if q.sort == "timestamp_desc" and not pos < after:
            return False
        if q.sort == "timestamp_asc" and not pos > after:
            return False
    return True


def list_matches(m: Memory, q: ListQuery) -> bool:
    return _fields_match(m, q) and _in_window(m, q)


def paginate_sorted(rows: Sequence[Memory], q: ListQuery) -> list[Memory]:
    ordered = sorted(
        rows, key=lambda m: (to_micros(m.timestamp), m.memory_id), reverse=q.sort == "timestamp_desc"
    )
    return ordered[: max(q.limit, 0)]


def event_matches(seq: int, event: Event, q: EventQuery) -> bool:
    if q.after is not None and seq <= q.after:
        return False
    if q.type is not None and event.type != q.type:
        return False
    if q.entity_id is not None and event.entity_id != q.entity_id:
        return False
    if q.memory_id is not None and event.memory_id != q.memory_id:
        return False
    return not (q.since is not None and to_micros(event.at) < to_micros(q.since))
