"""Timelines of one fact's values: what was true when (gold, from a synthetic conversation's turns)
and what the engine stored after replaying it (fact memories with their validity intervals).

    gold_timeline(conversation, "lives_in") -> DataFrame[value, start, end, open]
    stored_timeline(conversation, "lives_in") -> DataFrame[value, start, end, open, status, text]

`open` marks a value still true at the end of the conversation; its `end` is the conversation's
last turn time (the horizon), so every row can be drawn as a bar (`evals.plots.timeline`).
Values of multi-valued predicates are intervals each (add -> remove).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from evals.model import Conversation
from evals.replay import ORG_ID, EngineBackend, ReplayConfig

COLUMNS: tuple[str, ...] = ("value", "start", "end", "open")


def _frame(rows: list[dict[str, Any]], extra: Sequence[str] = ()) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=[*COLUMNS, *extra])


def horizon(conversation: Conversation) -> datetime:
    return max(t.timestamp for t in conversation.turns)


def gold_timeline(conversation: Conversation, predicate: str) -> Any:
    """Intervals from `Turn.facts`: `set` closes the previous value and opens the new one (a repeat
    of the current value changes nothing); `add` opens a value, `remove` closes it."""
    end_of_time = horizon(conversation)
    open_since: dict[str, datetime] = {}
    rows: list[dict[str, Any]] = []

    def close(value: str, at: datetime) -> None:
        rows.append({"value": value, "start": open_since.pop(value), "end": at, "open": False})

    for turn in sorted(conversation.turns, key=lambda t: t.timestamp):
        for fact in turn.facts:
            if fact.predicate != predicate:
                continue
            if fact.action == "set":
                if fact.value in open_since:
                    continue
                for value in list(open_since):
                    close(value, turn.timestamp)
                open_since[fact.value] = turn.timestamp
            elif fact.action == "add":
                open_since.setdefault(fact.value, turn.timestamp)
            elif fact.value in open_since:
                close(fact.value, turn.timestamp)
    for value, start in open_since.items():
        rows.append({"value": value, "start": start, "end": end_of_time, "open": True})
    return _frame(sorted(rows, key=lambda r: (r["start"], r["value"])))


def stored_timeline(conversation: Conversation, predicate: str, config: ReplayConfig | None = None) -> Any:
    """Replay the conversation into a fresh engine store and read back its `predicate` facts:
    value (the fact's object, an entity without `ent:`, or its text), valid_from .. valid_to (open when valid_to is null)."""
    cfg = config or ReplayConfig()
    backend = EngineBackend(cfg)
    loaded = backend.load(conversation, cfg)
    try:
        facts = stored_facts(loaded.handle[0], loaded.namespace, predicate)
    finally:
        backend.release(loaded)
    end_of_time = horizon(conversation)
    rows = []
    for m in facts:
        start = m.holds_from
        rows.append(
            {
                "value": _value(m),
                "start": start,
                "end": m.valid_to or max(end_of_time, start),
                "open": m.valid_to is None,
                "status": m.status,
                "text": m.text,
            }
        )
    return _frame(rows, ("status", "text"))


def _value(memory: Any) -> str:
    """The fact's object (an entity id shown without its `ent:` prefix), or its text."""
    if memory.object is None:
        return str(memory.text)
    value = str(memory.object)
    return value[4:] if value.startswith("ent:") else value


def stored_facts(store: Any, namespace: str, predicate: str) -> list[Any]:
    """Fact memories of `predicate` in a namespace, oldest first (every page)."""
    from engine.storage.base import ListQuery

    out: list[Any] = []
    after = None
    while True:
        page = store.list_memories(
            ORG_ID,
            ListQuery(namespace=namespace, types=("fact",), sort="timestamp_asc", limit=200, after=after),
        )
        out.extend(m for m in page if m.predicate == predicate)
        if len(page) < 200:
            return out
        after = (page[-1].timestamp, page[-1].memory_id)


__all__: Sequence[str] = ("gold_timeline", "horizon", "stored_facts", "stored_timeline")
