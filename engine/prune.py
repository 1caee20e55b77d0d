"""`prune`: delete or archive the memories a set of rules selects (POST /v0/prune).

Scope: the org, the `namespace` (default "default") and, when given, the `entity_id`, and the agent
(`agent_id`, the request's `X-Service-Agent`): an agent prunes only its own memories, as it reads only them.

Rules (combined with AND; at least one is required, else `InvalidInput` with field "body"):
- `statuses`: status is one of them (`superseded`, `disputed`).
- `archived: true`: the memory is archived. (`false` is the same as leaving the rule out.)
- `expired: true`: `valid_to` is set and `<= now`. (`false` is the same as leaving it out.)
- `older_than`: `timestamp < older_than`.
- `max_confidence`: `confidence` is set and `<= max_confidence` (a memory without a confidence is
  never selected by this rule).
- `types`: type is one of them.
- `tags`: the memory carries every listed tag.

Current facts are protected. A *current fact* is a `fact` or `profile` memory that is `active`, not
archived and not expired at `now`, or `superseded` by a value that begins after `now` (it holds until
then): what assemble would treat as true. Such a memory is selected only
when the request names it explicitly: `types` lists its type AND at least one of `older_than`,
`max_confidence` or `tags` is given (and every rule matches, as always). So `types: ["fact"]` alone
prunes only non-current facts (superseded, disputed, archived, expired), and `older_than` alone never
removes a fact that is still true. (`statuses`, `archived: true` and `expired: true` cannot match a
current fact by definition.)

`action`: `delete` (default) or `archive` (sets `archived=true`, `updated_at=now`; memories already
archived are left out of an archive action, since nothing would change). `dry_run` (default true)
only reports. A real run re-reads the selected memories inside one `store.transaction()`, re-checks
them, applies the action and, in that same transaction, appends each memory's event as a DELETE or an
archiving PATCH does (`memory.deleted` with its namespace, type and text; `memory.archived`), so a
memory's history (`EventQuery.memory_id`) ends with its removal, each with `pruned_by` in its data:
the id of the one `memories.pruned` event that follows them (data: action, count, memory_ids and the
rules). It gives back what each removed fact had superseded, as a DELETE or an archive does
(`supersession.settle_keys_left`). Reading pages through
`store.list_memories` (keyset on (timestamp, memory_id), oldest first), never loading the whole org
at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from engine.errors import InvalidInput
from engine.ids import event_id
from engine.memory_service import check_ids, check_labels, deleted_data
from engine.models import Event, Memory
from engine.storage.base import ListQuery, Store, page_through
from engine.timeutil import to_utc
from engine.write.supersession import lock_for_write, settle_keys_left

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.prune import (  # isort: skip
    PrunableStatus as PrunableStatus,
    PruneAction as PruneAction,
    PruneRequest as PruneRequest,
    PruneResult as PruneResult,
)

PAGE_SIZE = 500
FACT_TYPES = frozenset({"fact", "profile"})
EVENT_TYPE = "memories.pruned"
RULE_FIELDS: tuple[str, ...] = (
    "statuses",
    "archived",
    "expired",
    "older_than",
    "max_confidence",
    "types",
    "tags",
)


def active_rules(request: PruneRequest) -> list[str]:
    """The names of the rules the request sets (`archived`/`expired` count only when true)."""
    rules: list[str] = []
    for name in RULE_FIELDS:
        value = getattr(request, name)
        if value is None or value is False:
            continue
        if isinstance(value, list) and not value:
            raise InvalidInput(f"{name} must not be empty", field=name)
        rules.append(name)
    return rules


def is_current_fact(m: Memory, now: datetime) -> bool:
    if m.type not in FACT_TYPES or m.archived:
        return False
    if m.status == "superseded":  # by a value dated later: it holds until that one begins
        return m.valid_to is not None and to_utc(m.valid_to) > now
    return m.status == "active" and (m.valid_to is None or to_utc(m.valid_to) > now)


def selects(request: PruneRequest, m: Memory, now: datetime) -> bool:
    """Whether every rule of `request` matches `m` (scope is checked by the listing query)."""
    if request.statuses is not None and m.status not in request.statuses:
        return False
    if request.archived and not m.archived:
        return False
    if request.expired and (m.valid_to is None or to_utc(m.valid_to) > now):
        return False
    if request.older_than is not None and to_utc(m.timestamp) >= to_utc(request.older_than):
        return False
    if request.max_confidence is not None and (m.confidence is None or m.confidence > request.max_confidence):
        return False
    if request.types is not None and m.type not in request.types:
        return False
    if request.tags is not None and not set(request.tags) <= set(m.tags):
        return False
    if request.action == "archive" and m.archived:
        return False
    if is_current_fact(m, now):
        named = request.types is not None and m.type in request.types
        narrowed = (
            request.older_than is not None or request.max_confidence is not None or request.tags is not None
        )
        return named and narrowed
    return True


def _query(request: PruneRequest, agent_id: str | None) -> ListQuery:
    """The listing query that pre-filters what the store can (the rest is checked by `selects`)."""
    return ListQuery(
        namespace=request.namespace,
        entity_id=request.entity_id,
        agent_id=agent_id,
        types=tuple(request.types) if request.types is not None else None,
        statuses=tuple(request.statuses) if request.statuses is not None else None,
        tag=request.tags[0] if request.tags else None,
        archived=True if request.archived else None,
        until=request.older_than,
        sort="timestamp_asc",
        limit=PAGE_SIZE,
    )


def prune(
    store: Store, *, org_id: str, request: PruneRequest, now: datetime, agent_id: str | None = None
) -> PruneResult:
    now = to_utc(now)
    rules = active_rules(request)
    check_ids(entity_id=request.entity_id, namespace=request.namespace)
    check_labels(request.tags or [])
    if not rules:
        raise InvalidInput(
            "prune needs at least one rule: " + ", ".join(RULE_FIELDS),
            field="body",
            details={"rules": list(RULE_FIELDS)},
        )
    listed = page_through(store, org_id, _query(request, agent_id))
    selected = [m.memory_id for m in listed if selects(request, m, now)]
    if request.dry_run or not selected:
        return PruneResult(dry_run=request.dry_run, count=len(selected), memory_ids=selected)
    with store.transaction():
        # Re-read and re-check inside the transaction: a memory changed since listing is left alone.
        current = [
            m
            for m in lock_for_write(store, org_id, selected)
            if selects(request, m, now) and (agent_id is None or m.agent_id == agent_id)
        ]
        done = [m.memory_id for m in current]
        if request.action == "delete":
            for memory_id in done:
                store.delete_memory(org_id, memory_id)
        else:
            current = [msgspec.structs.replace(m, archived=True, updated_at=now) for m in current]
            store.put_memories(current)
        if done:
            summary = _event(org_id, request, rules, done, now, agent_id)
            store.append_events([*(_memory_event(m, request.action, summary, now) for m in current), summary])
        for m in current:  # after every removal: a value the run also removed stays removed
            settle_keys_left(store, m, now)
    return PruneResult(dry_run=False, count=len(done), memory_ids=done)


def _memory_event(m: Memory, action: PruneAction, summary: Event, now: datetime) -> Event:
    """The pruned memory's own event: what a DELETE (`memory.deleted`) or an archiving PATCH
    (`memory.archived`) of it records, with the prune's summary event named."""
    data: dict[str, Any]
    if action == "delete":
        kind, data = "memory.deleted", deleted_data(m)
    else:
        kind, data = "memory.archived", {"namespace": m.namespace, "fields": ["archived"]}
    return Event(
        event_id=event_id(),
        org_id=m.org_id,
        type=kind,
        at=now,
        memory_id=m.memory_id,
        entity_id=m.entity_id,
        data={**data, "pruned_by": summary.event_id},
    )


def _event(
    org_id: str,
    request: PruneRequest,
    rules: list[str],
    memory_ids: list[str],
    now: datetime,
    agent_id: str | None,
) -> Event:
    criteria: dict[str, Any] = msgspec.to_builtins({name: getattr(request, name) for name in rules})
    scope = {"agent_id": agent_id} if agent_id is not None else {}
    return Event(
        event_id=event_id(),
        org_id=org_id,
        type=EVENT_TYPE,
        at=now,
        entity_id=request.entity_id,
        data={
            "action": request.action,
            "namespace": request.namespace,
            **scope,
            "count": len(memory_ids),
            "memory_ids": memory_ids,
            "rules": criteria,
        },
    )
