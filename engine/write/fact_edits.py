"""A fact's text replaced (the mem0 adapter's update): its structured value follows the new text, and the
keys it touches keep one current value.

`plan_edit` (reads no store; the extractor may be an LLM) re-extracts the new text about the fact's
subject ("User ..." or the subject's own name at the start reads as the subject, as the texts Loci
renders say), with the fact's own time as the reference:
- a statement of the fact's predicate gives the new value (the last one, if several);
- else a statement of another predicate makes the memory that fact (its key changes);
- else (free text, a negation, only facts about someone else) the value, its metadata and the keys are
  cleared: the memory stays a fact about its subject, found by its text, outside supersession.
Only `fact` memories with a subject are re-derived. The edit corrects what the memory says: its
validity (valid_from, valid_to) does not move.

`commit_edit` writes the edit and, in the same transaction, settles the keys the value moved in or out of:
- where the fact now holds a value: a current fact of the same value and the edited one are one
  statement, and the older of them ends when the newer begins; then the edited fact meets the rest of
  its key's timeline as a fact back from the archive does (`supersession.reconcile`): values that held
  at its time end there, a later value makes it history, an equal tie disputes; a fact that had ended
  keeps an end of its own (a negation, a PATCH), and one a value gave it is where its key's next value
  now begins;
- a key it left: the facts it had ended (an event of theirs names it as `superseded_by`) hold again,
  until the next value of the key, or as its current value when nothing else holds it (reason
  "reinstated"), as when it is deleted or archived (`supersession.settle_keys_left`);
- in every key it touched, a value left disputed with nothing becomes active (reason "undisputed").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from engine.extract.base import Extractor
from engine.extract.rules.text import slug
from engine.memory_service import MemoryEdit, MemoryService
from engine.models import ConflictKeys, Event, Memory, ObjectType, ObjectValue, Sensitivity
from engine.storage.base import Store
from engine.write.ingest import draft_to_memory
from engine.write.supersession import (
    VALUE_METADATA,
    contrary_for,
    contrary_key,
    ended_by_a_value,
    existing_for,
    keys_read,
    reconcile,
    reinstate_contrary,
    same_value,
    settle_keys_left,
    settle_lone_dispute,
)

#: the subject name the texts of the request's own entity's facts start with ("User lives in Berlin")
RENDERED_USER = "User"
#: the most words of a speaker's name a fact's text starts with ("Jon Snow lives in ...")
_NAME_WORDS = 3


class FactValue(msgspec.Struct, frozen=True, kw_only=True):
    """The structured value a fact's text states; all None (and no metadata): free text."""

    predicate: str | None = None
    object: ObjectValue = None
    object_type: ObjectType | None = None
    unit: str | None = None
    keys: ConflictKeys | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    sensitivity: Sensitivity | None = None


class EditPlan(msgspec.Struct, kw_only=True):
    edit: MemoryEdit
    #: what the new text states; None: the value is not re-derived (no new text, or not a fact)
    value: FactValue | None = None


def _as_first_person(text: str, subject: str) -> str:
    """'User lives in Chicago' -> 'I lives in Chicago'; "User's name is Sam" -> 'My name is Sam'; a named
    speaker's own name reads the same ("Melanie is 40" about ent:melanie -> "I is 40"): the rule patterns
    read third-person verbs after "I"."""
    words = text.strip().split(" ")
    for n in range(1, min(_NAME_WORDS, len(words) - 1) + 1):
        head = " ".join(words[:n])
        own = head.endswith("'s")
        name = head.removesuffix("'s")
        if (name == RENDERED_USER and n == 1) or (name[:1].isupper() and f"ent:{slug(name)}" == subject):
            return " ".join(["My" if own else "I", *words[n:]])
    return text.strip()


def value_of(extractor: Extractor, memory: Memory, text: str) -> FactValue:
    """The value `text` states about `memory.subject`, read as the module docstring says."""
    subject = memory.subject or ""
    result = extractor.extract(
        _as_first_person(text, subject), subject=subject, reference_time=memory.holds_from
    )
    drafts = [d for d in result.facts if d.subject == subject and not d.negated]
    same = [d for d in drafts if memory.predicate is not None and d.predicate == memory.predicate]
    chosen = same[-1] if same else (drafts[0] if drafts else None)
    if chosen is None:
        return FactValue()
    built = draft_to_memory(
        chosen, org_id=memory.org_id, timestamp=memory.timestamp, extractor=result.extractor
    )  # fmt: skip
    return FactValue(
        predicate=built.predicate,
        object=built.object,
        object_type=built.object_type,
        unit=built.unit,
        keys=built.keys,
        metadata={k: built.metadata[k] for k in VALUE_METADATA if k in built.metadata},
        sensitivity="pii" if built.sensitivity == "pii" else None,
    )


def plan_edit(extractor: Extractor, current: Memory, edit: MemoryEdit) -> EditPlan:
    """The edit with the value its new text states (module docstring); touches no store."""
    if isinstance(edit.text, UnsetType) or current.type != "fact" or not current.subject:
        return EditPlan(edit=edit)
    return EditPlan(edit=edit, value=value_of(extractor, current, edit.text))


def _with_value(edit: MemoryEdit, memory: Memory, value: FactValue) -> MemoryEdit:
    """`edit` carrying `value`, its metadata merged into the edit's (or the memory's) other keys."""
    base = memory.metadata if isinstance(edit.metadata, UnsetType) else edit.metadata
    metadata = {k: v for k, v in base.items() if k not in VALUE_METADATA} | value.metadata
    return msgspec.structs.replace(
        edit,
        metadata=metadata,
        predicate=value.predicate,
        object=value.object,
        object_type=value.object_type,
        unit=value.unit,
        keys=list(value.keys) if value.keys is not None else None,
        sensitivity=value.sensitivity or UNSET,
    )


def commit_edit(memories: MemoryService, org_id: str, memory_id: str, plan: EditPlan) -> Memory:
    """Write the planned edit and settle its keys in one transaction (joining the caller's); the memory
    as stored afterwards."""
    store = memories.store
    with store.transaction():
        if plan.value is None:
            return memories.update(org_id, memory_id, plan.edit)
        before = memories.get(org_id, memory_id)
        # the keys' locks before the row's (the order every writer keeps): an add of the same key
        # waits instead of deadlocking; then the row as it stands
        stating = msgspec.structs.replace(before, predicate=plan.value.predicate, keys=plan.value.keys)
        store.lock_keys(org_id, sorted({*keys_read(before), *keys_read(stating)}))
        before = memories.get(org_id, memory_id)
        after = memories.update(org_id, memory_id, _with_value(plan.edit, before, plan.value))
        if (before.keys, before.object, before.unit) != (after.keys, after.object, after.unit):
            now = memories.clock()
            _settle_own_key(store, after, now)
            # a key it left, or where it no longer states the value it stated there
            left = [
                key
                for key in before.keys or []
                if key not in (after.keys or []) or not same_value(before, after)
            ]
            settle_keys_left(store, before, now, left)
            if contrary_key(before) != contrary_key(after) or not same_value(before, after):
                reinstate_contrary(store, before, now)  # the stance it stated is no longer stated
            for key in after.keys or []:
                settle_lone_dispute(store, after, key, now)
        return memories.get(org_id, memory_id)


def _is_current(m: Memory) -> bool:
    return m.status in ("active", "disputed") and m.valid_to is None


def _write(store: Store, writes: list[Memory], events: list[Event]) -> None:
    if writes:
        store.put_memories(writes)
    if events:
        store.append_events(events)


def _settle_own_key(store: Store, fact: Memory, now: datetime) -> None:
    """One value at a time in the key(s) the edited fact now holds (module docstring): the fact placed
    on its key's timeline as a fact back from the archive is (`supersession.reconcile`)."""
    if not fact.keys or fact.archived:
        return
    # an end of its own (a negation, a PATCH) is kept, one a value gave it is placed again, as for a fact
    # back from the archive
    fresh = msgspec.structs.replace(fact, status="active") if _is_current(fact) else fact
    placed = reconcile(
        fresh,
        existing_for(store, fact),
        now=now,
        reason="edited",
        contrary=contrary_for(store, fact),
        end_given=ended_by_a_value(store, fact),
    )
    if not placed.writes:
        return
    writes, events = list(placed.writes[1:]), list(placed.events[1:])
    settled, first = placed.writes[0], placed.events[0]
    if (settled.status, settled.valid_to) != (fact.status, fact.valid_to):
        writes.insert(0, settled)
        events.insert(0, first)
    _write(store, writes, events)
