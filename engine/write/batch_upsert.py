"""Structured batch upsert (POST /v0/memories:batch_upsert): wire records and item -> Memory.

An item is memory-like. Facts carry their object as `object_text` (string) or `object_num` (number,
with `unit`), as in the API's structured payloads; the stored Memory keeps it in `object`.

Rules (each broken rule is InvalidInput naming `items[<i>].<field>`, with `details.index`):
- a `fact` needs `subject` and `predicate`, and one of `object_text` / `object_num` unless `negated`
  (a negation without a value ends every current fact of its key); not both;
- any other type needs `text`; a fact without `text` gets a rendered one ("User lives in Berlin");
- `valid_to` must not be before `valid_from`.
Defaults: `object_type` number / entity (an `ent:` object) / string; a fact's `entity_id` is its
subject and its `valid_from` its timestamp; the predicate is canonicalized (`lives in` -> `lives_in`);
facts without `keys` get `<subject>|<predicate>` (see engine.write.ingest.with_conflict_key).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from engine.errors import InvalidInput
from engine.ids import memory_id as new_memory_id
from engine.memory_service import MAX_BATCH, NOT_BLANK_RULE, check_ids, check_labels, check_space
from engine.models import (
    AgentId,
    Confidence,
    ConflictKeys,
    EntityId,
    Memory,
    MemoryText,
    MemoryType,
    Namespace,
    ObjectString,
    ObjectType,
    ObjectValue,
    Predicate,
    Sensitivity,
    SubjectId,
    TagList,
    Unit,
    is_blank,
)
from engine.timeutil import shift, to_utc
from engine.write.ingest import with_conflict_key
from engine.write.predicates import canonical, render
from engine.write.supersession import Action, Outcome


class UpsertItem(msgspec.Struct, kw_only=True):
    namespace: Namespace = "default"
    agent_id: AgentId | None = None
    entity_id: EntityId | None = None
    type: MemoryType = "fact"
    text: MemoryText | None = None
    subject: SubjectId | None = None
    predicate: Predicate | None = None
    object_text: ObjectString | None = None
    object_num: int | float | None = None
    object_type: ObjectType | None = None
    unit: Unit | None = None
    keys: ConflictKeys | None = None
    negated: bool = False
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    tags: TagList = msgspec.field(default_factory=list)
    timestamp: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: Confidence | None = None
    sensitivity: Sensitivity = "auto"
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)


class UpsertRequest(msgspec.Struct, kw_only=True):
    items: Annotated[list[UpsertItem], Meta(min_length=1, max_length=MAX_BATCH, description="1 to 200")]
    upsert_conflicts: Literal["off", "smart"] = "smart"


class UpsertResult(msgspec.Struct, kw_only=True):
    """The outcome of one item (same order as the request's items)."""

    index: int
    memory_id: str | None  # None only for a negation that ended nothing
    action: Action
    supersedes: list[str] = msgspec.field(default_factory=list)
    disputed: list[str] = msgspec.field(default_factory=list)
    negation: bool = False
    history: bool = False
    #: facts written anew: values this item ended before they were said again (each holds from then)
    resumed: list[str] = msgspec.field(default_factory=list)


class UpsertResponse(msgspec.Struct, kw_only=True):
    upserts: list[UpsertResult]


def _bad(index: int, field: str, message: str) -> InvalidInput:
    return InvalidInput(
        f"items[{index}]: {message}", field=f"items[{index}].{field}", details={"index": index}
    )


def entity_name(entity: str) -> str:
    """`ent:new-york` -> "New York"; `ent:user` -> "User"; `ent:r2d2` -> "R2d2" (only a word's first
    letter is raised: str.title would also raise the letter after each digit and lower the rest)."""
    words = entity.removeprefix("ent:").replace("-", " ").replace("_", " ").split()
    return " ".join(w[:1].upper() + w[1:] for w in words) or entity


def _object_of(item: UpsertItem) -> tuple[ObjectValue, ObjectType | None, str]:
    """(stored object, object_type, readable form)."""
    if item.object_num is not None:
        num = item.object_num
        shown = f"{num:g}" + (f" {item.unit}" if item.unit else "")
        return num, item.object_type or "number", shown
    if item.object_text is not None:
        text = item.object_text
        is_ent = text.startswith("ent:")
        return (
            text,
            item.object_type or ("entity" if is_ent else "string"),
            entity_name(text) if is_ent else text,
        )
    return None, item.object_type, ""


def check_item(index: int, item: UpsertItem) -> None:
    if item.type == "fact":
        if item.subject is None:
            raise _bad(index, "subject", "a fact needs a subject (ent:<id>)")
        if item.predicate is None:
            raise _bad(index, "predicate", "a fact needs a predicate")
        if item.object_text is not None and item.object_num is not None:
            raise _bad(index, "object_num", "give object_text or object_num, not both")
        if item.object_text is None and item.object_num is None and not item.negated and item.text is None:
            raise _bad(index, "object_text", "a fact needs object_text or object_num")
    elif item.text is None:
        raise _bad(index, "text", f"a {item.type} needs a text")
    if item.text is not None and is_blank(item.text):
        error = _bad(index, "text", "text must not be blank")
        error.details["rule"] = NOT_BLANK_RULE
        raise error
    try:
        check_ids(
            f"items[{index}].", namespace=item.namespace, agent_id=item.agent_id, entity_id=item.entity_id
        )
        check_labels(item.tags, item.keys, item.predicate, prefix=f"items[{index}].")
        check_space(item.metadata, prefix=f"items[{index}].")
    except InvalidInput as exc:
        exc.details["index"] = index
        raise
    vf = item.valid_from or item.timestamp
    if vf is not None and item.valid_to is not None and to_utc(item.valid_to) < to_utc(vf):
        error = _bad(index, "valid_to", "valid_to is before valid_from")
        error.details["rule"] = "valid_to_after_valid_from"
        raise error


def item_to_memory(item: UpsertItem, *, org_id: str, agent_id: str | None, now: datetime) -> Memory:
    """The Memory for a checked item (see `check_item`)."""
    ts = to_utc(item.timestamp) if item.timestamp is not None else to_utc(now)
    obj, obj_type, shown = _object_of(item)
    predicate = canonical(item.predicate) if item.predicate is not None else None
    text = item.text
    if text is None:  # only facts get here (check_item)
        text = render(entity_name(item.subject or "ent:user"), predicate or "", shown, negated=item.negated)
    is_fact = item.type == "fact"
    valid_from = to_utc(item.valid_from) if item.valid_from is not None else (ts if is_fact else None)
    return Memory(
        memory_id=new_memory_id(),
        org_id=org_id,
        namespace=item.namespace,
        agent_id=item.agent_id if item.agent_id is not None else agent_id,
        entity_id=item.entity_id if item.entity_id is not None else (item.subject if is_fact else None),
        type=item.type,
        text=text,
        metadata=dict(item.metadata),
        tags=list(item.tags),
        timestamp=ts,
        sensitivity=item.sensitivity,
        subject=item.subject,
        predicate=predicate,
        object=obj,
        object_type=obj_type,
        unit=item.unit,
        keys=list(item.keys) if item.keys is not None else None,
        valid_from=valid_from,
        valid_to=to_utc(item.valid_to) if item.valid_to is not None else None,
        confidence=item.confidence,
        provenance=dict(item.provenance),
        created_at=to_utc(now),
        updated_at=to_utc(now),
    )


def build_memories(
    items: Sequence[UpsertItem], *, org_id: str, agent_id: str | None, now: datetime
) -> list[Memory]:
    """Check every item first (all-or-nothing), then build the memories in order. Facts that state no
    time of their own and share a key with an earlier item of the batch are placed 1 microsecond per
    earlier occurrence later, so the later item wins instead of both becoming disputed."""
    for index, item in enumerate(items):
        check_item(index, item)
    seen: dict[str, int] = {}
    out: list[Memory] = []
    for item in items:
        m = with_conflict_key(item_to_memory(item, org_id=org_id, agent_id=agent_id, now=now))
        key = (m.keys or [""])[0]
        if m.type == "fact" and m.keys and m.valid_from is not None:
            n = seen.get(key, 0)
            seen[key] = n + 1
            if n and item.valid_from is None and item.timestamp is None:
                m = msgspec.structs.replace(m, valid_from=shift(m.valid_from, timedelta(microseconds=n)))
        out.append(m)
    return out


def results(outcomes: Sequence[Outcome]) -> UpsertResponse:
    return UpsertResponse(
        upserts=[
            UpsertResult(
                index=i,
                memory_id=o.memory_id,
                action=o.action,
                supersedes=list(o.supersedes),
                disputed=list(o.disputed),
                negation=o.negation,
                history=o.history,
                resumed=list(o.resumed),
            )
            for i, o in enumerate(outcomes)
        ]
    )
