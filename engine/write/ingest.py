"""The write side of a turn: extracted fact drafts -> Memory records -> supersession -> store.

Entry points:
- `draft_to_memory` builds one fact Memory (ids from `engine.ids.memory_id()`); `preview_memories`
  maps a whole ExtractResult, for `/v0/extract`, which answers facts as Memory records unstored.
- `upsert_memories` stores ready-made memories with supersession inside ONE `store.transaction()` and
  returns one `Outcome` per memory (a turn's facts through `engine.write.turns.commit_turn`, and
  `/v0/memories:batch_upsert`).
- `v1_event` maps an outcome to the /v1 event name (ADD, UPDATE, DELETE, NONE).

Every stored fact has `keys = ["<subject>|<predicate>"]`, `valid_from` = the turn's timestamp (a date
the sentence states, e.g. "last month", goes to `metadata.event_date`, because an older valid_from
would make a fact said today lose against one said yesterday), `provenance.source_turn` when the
stored turn's id is given, and `sensitivity="pii"` for contact details.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec

from engine.embed.cache import EmbeddingCache
from engine.extract.base import ExtractResult, FactDraft
from engine.ids import memory_id as new_memory_id
from engine.models import Memory, Sensitivity
from engine.storage.base import Store
from engine.timeutil import shift, to_utc, utcnow
from engine.write.predicates import canonical, conflict_key
from engine.write.supersession import KeyFacts, Mode, Outcome, apply, check_mode, lock_keys_of

V1Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]


def draft_to_memory(
    draft: FactDraft,
    *,
    org_id: str,
    timestamp: datetime,
    namespace: str = "default",
    agent_id: str | None = None,
    entity_id: str | None = None,
    source_turn: str | None = None,
    extractor: str = "rules",
    now: datetime | None = None,
    memory_id: str | None = None,
) -> Memory:
    """A fact Memory for `draft`. `entity_id` (whose memory it is) defaults to the draft's subject;
    pass the turn's entity so third-person facts ("Anna lives in Rome") stay in the user's scope."""
    ts = to_utc(timestamp)
    created = to_utc(now) if now is not None else utcnow()
    provenance: dict[str, Any] = {"extractor": extractor}
    if source_turn is not None:
        provenance["source_turn"] = source_turn
    if draft.source_text:
        provenance["source_text"] = draft.source_text[:500]
    metadata: dict[str, Any] = {"object_name": draft.object_name}
    if draft.event_date:
        metadata["event_date"] = draft.event_date
    if draft.negated:
        metadata["negated"] = True
    sensitivity: Sensitivity = "pii" if draft.sensitivity == "pii" else "auto"
    predicate = canonical(draft.predicate)
    return Memory(
        memory_id=memory_id or new_memory_id(),
        org_id=org_id,
        namespace=namespace,
        agent_id=agent_id,
        entity_id=entity_id or draft.subject,
        type="fact",
        text=draft.text,
        metadata=metadata,
        timestamp=ts,
        sensitivity=sensitivity,
        subject=draft.subject,
        predicate=predicate,
        object=draft.object,
        object_type=draft.object_type,
        unit=draft.unit,
        keys=[conflict_key(draft.subject, predicate)],
        valid_from=ts,
        confidence=draft.confidence,
        provenance=provenance,
        created_at=created,
        updated_at=created,
    )


def preview_memories(
    result: ExtractResult,
    *,
    org_id: str,
    timestamp: datetime,
    namespace: str = "default",
    agent_id: str | None = None,
    entity_id: str | None = None,
    now: datetime | None = None,
) -> list[Memory]:
    """The facts of an extraction as Memory records that are not stored (`/v0/extract`). A negation
    appears with `metadata.negated` true and a "No longer true: ..." text."""
    return [
        draft_to_memory(
            d,
            org_id=org_id,
            timestamp=timestamp,
            namespace=namespace,
            agent_id=agent_id,
            entity_id=entity_id,
            extractor=result.extractor,
            now=now,
        )  # fmt: skip
        for d in result.facts
    ]


def order_within_turn(memories: list[Memory]) -> list[Memory]:
    """A later statement of the same turn wins over an earlier one on the same key ("I live in Paris.
    Actually, I moved to Berlin."): its valid_from is moved 1 microsecond per earlier occurrence, so
    supersession sees an order instead of a tie (which would mark both disputed)."""
    seen: dict[str, int] = {}
    ordered: list[Memory] = []
    for m in memories:
        key = (m.keys or [""])[0]
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n and m.valid_from is not None:
            m = msgspec.structs.replace(m, valid_from=shift(m.valid_from, timedelta(microseconds=n)))
        ordered.append(m)
    return ordered


def upsert_memories(
    store: Store,
    memories: Sequence[Memory],
    *,
    mode: Mode = "smart",
    negated: Sequence[bool] | None = None,
    now: datetime | None = None,
    embeddings: EmbeddingCache | None = None,
) -> list[Outcome]:
    """Batch upsert of ready-made memories (all-or-nothing: one transaction, which also stores the
    vectors `embed_for_write` made for their texts). Facts without `keys` but with subject and
    predicate get the conflict key `<subject>|<predicate>`."""
    check_mode(mode)
    at = to_utc(now) if now is not None else utcnow()
    flags = list(negated) if negated is not None else [False] * len(memories)
    if len(flags) != len(memories):
        raise ValueError("negated must have one flag per memory")
    outcomes: list[Outcome] = []
    with store.transaction():
        if embeddings is not None:
            embeddings.save([m.text for m, neg in zip(memories, flags, strict=True) if not neg])
        keyed = [with_conflict_key(m) for m in memories]
        if mode == "smart":
            lock_keys_of(store, keyed)
        known = KeyFacts(store)  # each key read once for the whole batch
        for m, neg in zip(keyed, flags, strict=True):
            outcomes.append(apply(store, m, negated=neg, mode=mode, now=at, known=known))
    return outcomes


def with_conflict_key(memory: Memory) -> Memory:
    """`memory` with keys ["<subject>|<predicate>"] when it is a fact that has none."""
    if memory.keys or memory.subject is None or memory.predicate is None:
        return memory
    return msgspec.structs.replace(memory, keys=[conflict_key(memory.subject, memory.predicate)])


def v1_event(outcome: Outcome) -> V1Event:
    """UPSERTED -> ADD, SUPERSEDED -> UPDATE (DELETE for a negation), SKIPPED -> NONE."""
    if outcome.negation:
        return "DELETE" if outcome.action == "SUPERSEDED" else "NONE"
    return {"UPSERTED": "ADD", "SUPERSEDED": "UPDATE", "SKIPPED": "NONE"}[outcome.action]  # type: ignore[return-value]
