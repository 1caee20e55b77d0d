"""The memory service: create (one or many), get, patch, delete and list memories of one org.

Every write and its events (`memory.created`, `memory.updated`, `memory.archived`, `memory.deleted`)
go through one `store.transaction()`, so both commit or neither does. Callers may open an outer
transaction (the server's idempotency helper does) and the service's block joins it.

Memory texts are embedded on write through the `EmbeddingCache` when one is configured (in `prepare`,
outside the transaction) and their vectors stored in the write's own transaction (one commit); an
embedder failure never fails the write: the memory is stored without a vector and the failure is logged.

List cursors are opaque: base64url of a msgpack array (version, sort, filters hash, last timestamp in
microseconds, last memory id). A cursor presented with other filters or another sort is rejected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from engine import ids
from engine.embed.cache import EmbeddingCache
from engine.errors import InvalidInput, NotFound
from engine.models import (
    MEMORY_TYPES,
    STATUSES,
    ConflictKeys,
    Event,
    Memory,
    MemoryText,
    ObjectType,
    ObjectValue,
    Predicate,
    Sensitivity,
    Unit,
    is_blank,
    key_problem,
)
from engine.storage.base import ListQuery, SortOrder, Store
from engine.timeutil import Clock, from_micros, to_micros, to_utc, utcnow
from engine.write.supersession import (
    SPACE_METADATA,
    VALUE_METADATA,
    contrary_for,
    ended_by_a_value,
    existing_for,
    lock_for_write,
    next_value_start,
    of_its_value,
    reconcile,
    same_space,
    settle_keys_left,
    settle_lone_dispute,
)

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.writes import (  # isort: skip
    MAX_BATCH as MAX_BATCH,
    MemoryCreate as MemoryCreate,
    MemoryPatch as MemoryPatch,
)

log = logging.getLogger(__name__)

MAX_PAGE_SIZE = 200
MAX_QUERY_LENGTH = 256
DEFAULT_PAGE_SIZE = 50
_CURSOR_VERSION = 1
#: the rule a refused cursor breaks (a cursor is one this server returned, for the same filters)
CURSOR_RULE = "cursor"


class MemoryEdit(MemoryPatch, kw_only=True, forbid_unknown_fields=True):
    """A patch that may also replace the text (the mem0 adapter's update). The `memory.updated` event
    then carries `old_text` and `text`, so the memory's history can be told; embed the new text before
    the write (`engine.write.turns.embed_for_write`); the update stores the vector with it. The
    structured value that the new text states comes with it (`engine.write.fact_edits` fills these
    fields and settles the keys)."""

    text: MemoryText | UnsetType = UNSET
    predicate: Predicate | None | UnsetType = UNSET
    object: ObjectValue | UnsetType = UNSET
    object_type: ObjectType | None | UnsetType = UNSET
    unit: Unit | None | UnsetType = UNSET
    keys: ConflictKeys | None | UnsetType = UNSET
    sensitivity: Sensitivity | UnsetType = UNSET


#: the fields a MemoryEdit may set besides those of a MemoryPatch
EDIT_FIELDS = ("text", "predicate", "object", "object_type", "unit", "keys", "sensitivity")


class ListFilters(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str | None = None
    entity_id: str | None = None
    agent_id: str | None = None
    types: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    tag: str | None = None
    archived: bool | None = None
    since: datetime | None = None
    until: datetime | None = None
    q: str | None = None  # text search: the text contains it (ASCII letters case-insensitive)
    sort: SortOrder = "timestamp_desc"


class MemoryPage(msgspec.Struct, kw_only=True):
    items: list[Memory]
    next_cursor: str | None = None


class _Cursor(msgspec.Struct, array_like=True):
    version: int
    sort: str
    filters: str
    ts: int
    memory_id: str


def _check_validity(valid_from: datetime | None, valid_to: datetime | None, field: str) -> None:
    """`valid_from`: where the memory's validity starts (its valid_from, else its timestamp)."""
    if valid_from is not None and valid_to is not None and to_utc(valid_to) < to_utc(valid_from):
        raise InvalidInput(
            "valid_to is before valid_from (or the timestamp, when valid_from is not given)",
            field=field,
            details={"rule": "valid_to_after_valid_from"},
        )


#: the rule a blank text, tag, predicate or id breaks (blank: `engine.models.is_blank`)
NOT_BLANK_RULE = "not_blank"
#: the rule a conflict key not of the shape <subject>|<predicate> breaks
KEY_SHAPE_RULE = "conflict_key_shape"


def check_text(text: str, field: str) -> None:
    if is_blank(text):
        raise InvalidInput(f"{field} must not be blank", field=field, details={"rule": NOT_BLANK_RULE})


def check_ids(prefix: str = "", **ids: str | None) -> None:
    """The ids a request names (entity, agent, namespace) are not blank, so a write never files a memory
    under nobody and a read never filters on nothing; `prefix` goes before the field a refusal names."""
    for name, value in ids.items():
        if value is not None:
            check_text(value, f"{prefix}{name}")


#: the longest run or app id (as long as an agent id: mem0's adds take them as such)
MAX_SPACE_ID = 128
#: the rule a run or app in a /v0 memory's metadata breaks when it is no id (the blank one: not_blank)
SPACE_RULE = "space_metadata"


def check_space(metadata: Mapping[str, Any], prefix: str = "") -> None:
    """A memory's `metadata.run_id` and `metadata.app_id` file it under a run or app (its space, which
    supersession and mem0's filters read): each is an id, a visible string, or null for none."""
    for key in SPACE_METADATA:
        value = metadata.get(key)
        if value is None:
            continue
        field = f"{prefix}metadata.{key}"
        if not isinstance(value, str) or not 1 <= len(value) <= MAX_SPACE_ID:
            raise InvalidInput(
                f"metadata.{key} names a run or app: a string of 1 to {MAX_SPACE_ID} characters, or null",
                field=field,
                details={"rule": SPACE_RULE, "max_length": MAX_SPACE_ID},
            )
        check_text(value, field)


def check_labels(
    tags: Sequence[str], keys: Sequence[str] | None = None, predicate: str | None = None, *, prefix: str = ""
) -> None:
    """A written memory's tags and predicate are not blank and its keys have the shape
    `<subject>|<predicate>`; `prefix` goes before the field a refusal names (`items[2].`)."""
    for i, tag in enumerate(tags):
        check_text(tag, f"{prefix}tags[{i}]")
    if predicate is not None:
        check_text(predicate, f"{prefix}predicate")
    for i, key in enumerate(keys or ()):
        problem = key_problem(key)
        if problem is not None:
            raise InvalidInput(problem, field=f"{prefix}keys[{i}]", details={"rule": KEY_SHAPE_RULE})


def _check_superseded_end(old: Memory, valid_to: datetime | None) -> None:
    """A superseded memory ends where its successor begins: cleared or moved later, two values of one
    key would both hold."""
    if old.status != "superseded" or old.valid_to is None:
        return
    if valid_to is None or to_utc(valid_to) > to_utc(old.valid_to):
        raise InvalidInput(
            "a superseded memory's valid_to can only move earlier (its successor holds from then on)",
            field="valid_to",
            details={"rule": "superseded_valid_to", "valid_to": old.valid_to.isoformat()},
        )


def _check_next_value(store: Store, old: Memory, valid_to: datetime | None) -> None:
    """An end moved later (or cleared) stops where the key's next value begins: past it, two values of
    one key would both hold."""
    if old.archived or (
        valid_to is not None and old.valid_to is not None and valid_to <= to_utc(old.valid_to)
    ):
        return
    found = next_value_start(store, old)
    if found is not None and (valid_to is None or to_utc(valid_to) > found[0]):
        begins, next_id = found
        raise InvalidInput(
            f"valid_to can be at most {begins.isoformat()}, when the next value of this key ({next_id}) begins",
            field="valid_to",
            details={"rule": "next_value", "next": next_id, "begins": begins.isoformat()},
        )


def _opt_utc(value: datetime | None) -> datetime | None:
    return None if value is None else to_utc(value)


def deleted_data(m: Memory) -> dict[str, Any]:
    """A `memory.deleted` event's data: its text and agent, so its history still says what and whose
    it was."""
    data: dict[str, Any] = {"namespace": m.namespace, "type": m.type, "text": m.text}
    if m.agent_id is not None:
        data["agent_id"] = m.agent_id
    return data


class MemoryService:
    def __init__(
        self, store: Store, *, embeddings: EmbeddingCache | None = None, clock: Clock = utcnow
    ) -> None:
        self.store = store
        self.embeddings = embeddings
        self.clock = clock

    # --- create ----------------------------------------------------------------------------------
    def create(
        self, org_id: str, drafts: Sequence[MemoryCreate], *, agent_id: str | None = None
    ) -> list[Memory]:
        """Store 1..200 new memories, all or nothing. `agent_id` (e.g. the X-Service-Agent header)
        fills drafts that name no agent."""
        return self.insert(org_id, self.prepare(org_id, drafts, agent_id=agent_id))

    def prepare(
        self, org_id: str, drafts: Sequence[MemoryCreate], *, agent_id: str | None = None
    ) -> list[Memory]:
        """Validate and build the memories and embed their texts, without storing them. Split from
        `insert` so that slow embedding happens outside any open store transaction."""
        if not drafts:
            raise InvalidInput("at least one memory is required", field="items")
        if len(drafts) > MAX_BATCH:
            raise InvalidInput(
                f"at most {MAX_BATCH} memories per request",
                field="items",
                details={"max": MAX_BATCH, "got": len(drafts)},
            )
        for index, draft in enumerate(drafts):
            try:
                check_text(draft.text, "text")
                check_ids(namespace=draft.namespace, agent_id=draft.agent_id, entity_id=draft.entity_id)
                check_labels(draft.tags, draft.keys, draft.predicate)
                check_space(draft.metadata)
                _check_validity(draft.valid_from or draft.timestamp, draft.valid_to, "valid_to")
            except InvalidInput as exc:
                if len(drafts) > 1:
                    exc.details.update(index=index, field=f"items[{index}].{exc.field}")
                raise
        now = self.clock()
        memories = [self._build(org_id, draft, now, agent_id) for draft in drafts]
        self._embed([m.text for m in memories])
        return memories

    def insert(self, org_id: str, memories: Sequence[Memory]) -> list[Memory]:
        """Store prepared memories and their `memory.created` events in one transaction."""
        if any(m.org_id != org_id for m in memories):
            raise InvalidInput("memory of another org", field="org_id")
        events = [
            Event(
                event_id=ids.event_id(),
                org_id=org_id,
                type="memory.created",
                at=m.created_at,
                memory_id=m.memory_id,
                entity_id=m.entity_id,
                data={"namespace": m.namespace, "type": m.type},
            )
            for m in memories
        ]
        with self.store.transaction():
            if self.embeddings is not None:
                self.embeddings.save([m.text for m in memories])
            self.store.put_memories(memories)
            self.store.append_events(events)
        return list(memories)

    def _build(self, org_id: str, draft: MemoryCreate, now: datetime, agent_id: str | None) -> Memory:
        return Memory(
            memory_id=ids.memory_id(),
            org_id=org_id,
            namespace=draft.namespace,
            agent_id=draft.agent_id if draft.agent_id is not None else agent_id,
            entity_id=draft.entity_id,
            type=draft.type,
            text=draft.text,
            metadata=dict(draft.metadata),
            tags=list(draft.tags),
            timestamp=to_utc(draft.timestamp) if draft.timestamp is not None else now,
            archived=draft.archived,
            sensitivity=draft.sensitivity,
            subject=draft.subject,
            predicate=draft.predicate,
            object=draft.object,
            object_type=draft.object_type,
            unit=draft.unit,
            keys=list(draft.keys) if draft.keys is not None else None,
            valid_from=_opt_utc(draft.valid_from),
            valid_to=_opt_utc(draft.valid_to),
            confidence=draft.confidence,
            status=draft.status,
            provenance=dict(draft.provenance),
            created_at=now,
            updated_at=now,
        )

    def _embed(self, texts: list[str]) -> None:
        if self.embeddings is None or not texts:
            return
        try:
            self.embeddings.embed(texts, persist=True, defer=True)
        except Exception:  # an embedder failure must not fail the write
            log.warning("embedding %d memory texts failed; stored without vectors", len(texts), exc_info=True)

    # --- read ------------------------------------------------------------------------------------
    def get(self, org_id: str, memory_id: str) -> Memory:
        memory = self.store.get_memory(org_id, memory_id)
        if memory is None:
            raise NotFound(f"memory {memory_id!r} not found", details={"memory_id": memory_id})
        return memory

    def _locked(self, org_id: str, memory_id: str) -> Memory:
        """The memory as it stands, locked until the transaction ends (`lock_for_write`); 404 when it
        does not exist (or a concurrent delete removed it)."""
        found = lock_for_write(self.store, org_id, [memory_id])
        if not found:
            raise NotFound(f"memory {memory_id!r} not found", details={"memory_id": memory_id})
        return found[0]

    # --- update ----------------------------------------------------------------------------------
    def update(self, org_id: str, memory_id: str, patch: MemoryPatch) -> Memory:
        with self.store.transaction():
            old = self._locked(org_id, memory_id)
            changes = self._changes(old, patch)
            changed = sorted(k for k, v in changes.items() if getattr(old, k) != v)
            if not changed:
                return old
            now = self.clock()
            new = of_its_value(msgspec.structs.replace(old, **changes, updated_at=now), old)
            others: list[Memory] = []
            events: list[Event] = []
            ended_by: str | None = None
            # back from the archive, or moved to another space (its metadata's run or app): one current
            # value again where it now is
            if not new.archived and ("archived" in changed or not same_space(old, new)):
                placed = reconcile(
                    new,
                    existing_for(self.store, new),
                    now=now,
                    contrary=contrary_for(self.store, new),
                    end_given=ended_by_a_value(self.store, new),
                )
                if placed.writes:
                    new, others, events = placed.writes[0], placed.writes[1:], placed.events[1:]
                    ended_by = placed.events[0].data.get("superseded_by")
                    changed = sorted(
                        {*changed, *(k for k in ("status", "valid_to") if getattr(old, k) != getattr(new, k))}
                    )
            kind = "memory.archived" if "archived" in changed and new.archived else "memory.updated"
            data: dict[str, Any] = {"namespace": new.namespace, "fields": changed}
            if "valid_to" in changed and ended_by is not None:  # the value that ends it, should it leave
                data["superseded_by"] = ended_by
            if "text" in changed:
                data.update(old_text=old.text, text=new.text)
            event = Event(
                event_id=ids.event_id(),
                org_id=org_id,
                type=kind,
                at=now,
                memory_id=memory_id,
                entity_id=new.entity_id,
                data=data,
            )
            if "text" in changed and self.embeddings is not None:
                self.embeddings.save([new.text])  # embedded by the caller beforehand (`embed_for_write`)
            self.store.put_memories([new, *others])
            self.store.append_events([event, *events])
            if not same_space(old, new):  # the space it left keeps the values still there
                settle_keys_left(self.store, old, now)
            if "archived" in changed and new.archived:  # out of its keys' timeline, as if deleted
                settle_keys_left(self.store, new, now)
            elif {"valid_to", "archived"} & set(changed):  # a dispute this fact was half of may be over
                for key in new.keys or []:
                    settle_lone_dispute(self.store, new, key, now)
        return self.get(org_id, memory_id) if new.status == "disputed" else new

    def _changes(self, old: Memory, patch: MemoryPatch) -> dict[str, Any]:
        """The fields `patch` sets on `old`, checked (422 for a change the timeline cannot take)."""
        changes: dict[str, Any] = _edited(patch)
        if "text" in changes:
            check_text(changes["text"], "text")
        check_labels(
            [] if isinstance(patch.tags, UnsetType) else patch.tags,
            changes.get("keys"),
            changes.get("predicate"),
        )
        if not isinstance(patch.tags, UnsetType):
            changes["tags"] = list(patch.tags)
        if not isinstance(patch.metadata, UnsetType):
            check_space(patch.metadata)
            changes["metadata"] = (
                dict(patch.metadata) if isinstance(patch, MemoryEdit) else _metadata_kept(old, patch.metadata)
            )
        if not isinstance(patch.archived, UnsetType):
            changes["archived"] = patch.archived
        if not isinstance(patch.valid_to, UnsetType):
            changes["valid_to"] = _opt_utc(patch.valid_to)
            _check_validity(old.valid_from or old.timestamp, changes["valid_to"], "valid_to")
            if changes["valid_to"] != old.valid_to:
                _check_superseded_end(old, changes["valid_to"])
                _check_next_value(self.store, old, changes["valid_to"])
        return changes

    # --- delete ----------------------------------------------------------------------------------
    def delete(self, org_id: str, memory_id: str) -> None:
        with self.store.transaction():
            old = self._locked(org_id, memory_id)
            if not self.store.delete_memory(org_id, memory_id):  # a concurrent delete got there first
                raise NotFound(f"memory {memory_id!r} not found", details={"memory_id": memory_id})
            now = self.clock()
            self.store.append_events(
                [
                    Event(
                        event_id=ids.event_id(),
                        org_id=org_id,
                        type="memory.deleted",
                        at=now,
                        memory_id=memory_id,
                        entity_id=old.entity_id,
                        data=deleted_data(old),
                    )
                ]
            )
            settle_keys_left(self.store, old, now)

    # --- list ------------------------------------------------------------------------------------
    def list_page(
        self,
        org_id: str,
        filters: ListFilters,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> MemoryPage:
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidInput(f"page_size must be 1..{MAX_PAGE_SIZE}", field="page_size")
        for name, values, valid in (
            ("type", filters.types, MEMORY_TYPES),
            ("status", filters.statuses, STATUSES),
        ):
            bad = [v for v in values or () if v not in valid]
            if bad:
                raise InvalidInput(
                    f"unknown {name} {bad[0]!r}; valid: {', '.join(valid)}",
                    field=name,
                    details={"valid": list(valid)},
                )
        _check_query(filters.q)
        check_ids(namespace=filters.namespace, entity_id=filters.entity_id, agent_id=filters.agent_id)
        fhash = filters_hash(org_id, filters)
        after = decode_cursor(cursor, filters.sort, fhash) if cursor else None
        query = ListQuery(
            namespace=filters.namespace,
            entity_id=filters.entity_id,
            agent_id=filters.agent_id,
            types=filters.types,
            statuses=filters.statuses,
            tag=filters.tag,
            archived=filters.archived,
            since=_opt_utc(filters.since),
            until=_opt_utc(filters.until),
            text=filters.q or None,
            sort=filters.sort,
            limit=page_size + 1,
            after=after,
        )
        rows = self.store.list_memories(org_id, query)
        items = rows[:page_size]
        next_cursor = None
        if len(rows) > page_size:
            last = items[-1]
            next_cursor = encode_cursor(filters.sort, fhash, last.timestamp, last.memory_id)
        return MemoryPage(items=items, next_cursor=next_cursor)


def _metadata_kept(old: Memory, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with the keys the memory is read by kept where it leaves them out: its run and app (a value
    moves it to that space, null takes it out of it) and, on a fact with a subject, the keys that
    describe its value, which a patch may repeat but not change (the value is not the patch's)."""
    if old.type == "fact" and old.subject:
        for key in VALUE_METADATA:
            if key in new and new[key] != old.metadata.get(key):
                raise InvalidInput(
                    f"metadata.{key} describes the fact's value: an update may repeat it, not change it",
                    field=f"metadata.{key}",
                    details={"rule": "reserved_metadata", "kept": list(VALUE_METADATA)},
                )
        kept: tuple[str, ...] = SPACE_METADATA + VALUE_METADATA
    else:
        kept = SPACE_METADATA
    merged = {**new, **{k: old.metadata[k] for k in kept if k in old.metadata and k not in new}}
    return {k: v for k, v in merged.items() if not (k in SPACE_METADATA and v is None)}


def _edited(patch: MemoryPatch) -> dict[str, Any]:
    """The fields of a MemoryEdit that are set (none for a plain patch)."""
    if not isinstance(patch, MemoryEdit):
        return {}
    return {k: getattr(patch, k) for k in EDIT_FIELDS if not isinstance(getattr(patch, k), UnsetType)}


def _check_query(q: str | None) -> None:
    if q is None:
        return
    if len(q) > MAX_QUERY_LENGTH:
        raise InvalidInput(f"q must be at most {MAX_QUERY_LENGTH} characters", field="q")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in q):
        raise InvalidInput("q must not contain control characters", field="q")


def filters_hash(org_id: str, filters: ListFilters) -> str:
    raw = msgspec.msgpack.encode([org_id, filters])
    return hashlib.sha256(raw).hexdigest()[:16]


def encode_cursor(sort: str, fhash: str, timestamp: datetime, memory_id: str) -> str:
    raw = msgspec.msgpack.encode(_Cursor(_CURSOR_VERSION, sort, fhash, to_micros(timestamp), memory_id))
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str, sort: str, fhash: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = msgspec.msgpack.decode(raw, type=_Cursor)
    except (binascii.Error, ValueError, msgspec.DecodeError) as exc:
        raise InvalidInput("malformed cursor", field="cursor", details={"rule": CURSOR_RULE}) from exc
    if decoded.version != _CURSOR_VERSION:
        raise InvalidInput(
            "cursor from an incompatible version", field="cursor", details={"rule": CURSOR_RULE}
        )
    if decoded.sort != sort or decoded.filters != fhash:
        raise InvalidInput(
            "cursor was issued for other filters or another sort",
            field="cursor",
            details={"rule": CURSOR_RULE},
        )
    return from_micros(decoded.ts), decoded.memory_id
