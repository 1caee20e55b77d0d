"""Loci memories and events as mem0 records: memories, history entries and entities.

A record's `created_at` is the memory's `timestamp`: mem0's add sets the creation time with its
`timestamp` (default now), and listings sort by it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from msgspec import UNSET, UnsetType

from engine.models import Event, Memory
from engine.timeutil import shift
from engine.write.supersession import SPACE_METADATA, VALUE_METADATA
from server.schemas.mem0 import Mem0Entity, Mem0EntityList, Mem0HistoryItem, Mem0Memory

#: metadata keys that carry mem0 scopes (shown as fields, not as metadata); each is part of a memory's
#: space, so a run or app supersedes and deduplicates only within itself
SCOPE_KEYS = SPACE_METADATA
#: metadata keys Loci writes itself: the scopes, a stored message's `role` and `origin`, an extracted
#: fact's value (engine.write.fact_edits); a caller's metadata may not set them
RESERVED_KEYS = (*SCOPE_KEYS, "role", "origin", *VALUE_METADATA)


def meta_str(m: Memory, key: str) -> str | None:
    """A mem0 id kept in the metadata (run_id, app_id), if it is a string."""
    value = m.metadata.get(key)
    return value if isinstance(value, str) else None


def expiration_date(valid_to: datetime | None) -> date | None:
    """The last day a memory is valid (valid_to is exclusive)."""
    return None if valid_to is None else shift(valid_to, -timedelta(microseconds=1)).date()


def day_start(day: date | None, *, next_day: bool = False) -> datetime | None:
    """00:00 UTC of `day` (of the day after, for an inclusive end date)."""
    if day is None:
        return None
    return shift(datetime.combine(day, time.min, UTC), timedelta(days=1 if next_day else 0))


def valid_to_for(day: date | None) -> datetime | None:
    """A memory that expires after `day` is valid until the start of the next day (UTC)."""
    return day_start(day, next_day=True)


def record(m: Memory, score: float | UnsetType = UNSET) -> Mem0Memory:
    run_id = meta_str(m, "run_id")
    return Mem0Memory(
        id=m.memory_id,
        memory=m.text,
        user_id=m.entity_id,
        agent_id=m.agent_id,
        app_id=meta_str(m, "app_id"),
        run_id=run_id,
        session_id=run_id,
        metadata={k: v for k, v in m.metadata.items() if k not in SCOPE_KEYS},
        categories=list(m.tags),
        type=m.type,
        # mem0 has no archive flag beside the status: an archived memory is read by mem0 clients as archived
        status="archived" if m.archived else m.status,
        created_at=m.timestamp,
        updated_at=m.updated_at,
        expiration_date=expiration_date(m.valid_to),
        score=score,
    )


def _entry(
    m: Memory | None, event: Event, kind: str, old: str | None, new: str | None, agent_id: str | None
) -> Mem0HistoryItem:
    data: dict[str, Any] = {
        "loci_event": event.type,
        **{k: v for k, v in event.data.items() if k not in ("old_text", "text")},
    }
    return Mem0HistoryItem(
        id=event.event_id,
        memory_id=event.memory_id or "",
        event=kind,  # type: ignore[arg-type]
        old_memory=old,
        new_memory=new,
        metadata=data,
        user_id=m.entity_id if m else event.entity_id,
        agent_id=agent_id,
        is_deleted=kind == "DELETE",
        created_at=event.at,
        updated_at=event.at,
    )


def history(current: Memory | None, events: Sequence[Event]) -> list[Mem0HistoryItem]:
    """The memory's events, oldest first, as mem0 history entries. Texts are replayed from the events'
    `old_text`/`text` (text edits), starting from the text the memory was created with (the current
    text, or the text its `memory.deleted` event recorded, when it was never edited)."""
    edits = [e for e in events if "old_text" in e.data]
    deleted = [str(e.data["text"]) for e in events if e.type == "memory.deleted" and "text" in e.data]
    last = current.text if current else (deleted[-1] if deleted else None)
    text: str | None = edits[0].data["old_text"] if edits else last
    # an agent never changes: the live memory's, else the one its `memory.deleted` event recorded
    agents = [e.data["agent_id"] for e in events if e.type == "memory.deleted" and "agent_id" in e.data]
    agent = current.agent_id if current else (str(agents[-1]) if agents else None)
    out: list[Mem0HistoryItem] = []
    for event in events:
        if event.type == "memory.created":
            out.append(_entry(current, event, "ADD", None, text, agent))
        elif event.type == "memory.deleted":
            out.append(_entry(current, event, "DELETE", str(event.data.get("text", text)), None, agent))
        elif "old_text" in event.data:
            new = str(event.data.get("text", ""))
            out.append(_entry(current, event, "UPDATE", str(event.data["old_text"]), new, agent))
            text = new
        else:  # metadata, tags, validity, archived, superseded, confidence: same text, new state
            out.append(_entry(current, event, "UPDATE", text, text, agent))
    return out


def entities(memories: Iterable[Memory], owner: str) -> Mem0EntityList:
    """Every user, agent, app and run that has memories, with counts and first/last write times."""
    seen: dict[tuple[str, str], list[Any]] = {}
    for m in memories:
        for kind, name in (
            ("user", m.entity_id),
            ("agent", m.agent_id),
            ("app", meta_str(m, "app_id")),
            ("run", meta_str(m, "run_id")),
        ):
            if not name:
                continue
            slot = seen.setdefault((kind, name), [0, m.timestamp, m.updated_at])
            slot[0] += 1
            slot[1] = min(slot[1], m.timestamp)
            slot[2] = max(slot[2], m.updated_at)
    results = [
        Mem0Entity(
            id=name,
            name=name,
            type=kind,  # type: ignore[arg-type]  # one of the four literals above
            total_memories=n,
            created_at=first,
            updated_at=last,
            owner=owner,
        )
        for (kind, name), (n, first, last) in sorted(seen.items())
    ]
    totals = {k: sum(1 for e in results if e.type == k) for k in ("user", "agent", "app", "run")}
    return Mem0EntityList(
        count=len(results),
        results=results,
        total_users=totals["user"],
        total_agents=totals["agent"],
        total_apps=totals["app"],
        total_runs=totals["run"],
    )
