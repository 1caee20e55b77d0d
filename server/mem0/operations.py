"""The mem0 operations over Loci's services: add, list, search, update, history, bulk delete, entities.

Each runs in a worker thread (the store is synchronous). Writes split into a `prepare_*` step that
runs outside the store transaction (extraction, embedding) and a commit step that the route runs
under its Idempotency-Key (`server.http.run_write`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from engine.errors import InvalidInput, NotFound
from engine.memory_service import MemoryEdit, check_ids
from engine.models import Event, Memory
from engine.retrieval import pipeline
from engine.retrieval.options import Diversity, RecallRequest, Rerank, RetrievalOptions
from engine.storage.base import EventQuery, ListQuery, page_through
from engine.write.ingest import v1_event
from engine.write.supersession import ended_by, lock_for_write
from engine.write.turns import TurnPlan, commit_turn, embed_for_write, plan_turn, turn_memory
from server.mem0.filters import ENTITY_KEYS, Selection, select
from server.mem0.records import RESERVED_KEYS, valid_to_for
from server.mem0.records import history as history_records
from server.schemas.mem0 import MAX_TOP_K, Mem0HistoryItem, Mem0UpdateRequest
from server.schemas.v1 import V1CreateItem, V1CreateRequest
from server.services import Services

NAMESPACE = "default"
LIVE = ("active", "disputed")
SCAN_PAGE = 500
MAX_HISTORY = 1000


# --- add -------------------------------------------------------------------------------------------
class Scopes(msgspec.Struct, frozen=True, kw_only=True):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    app_id: str | None = None


def scopes_of(body: V1CreateRequest) -> Scopes:
    """The ids at the top level, else string equalities in `filters` (mem0 v3 clients)."""
    given = {k: getattr(body, k) for k in ENTITY_KEYS}
    check_ids(**given)
    for key, value in (body.filters or {}).items():
        if key in ENTITY_KEYS and given[key] is None:
            if not isinstance(value, str) or not value or len(value) > 128 or value == "*":
                raise InvalidInput(
                    f"filters.{key} must be an id (1 to 128 characters)", field=f"filters.{key}"
                )
            check_ids("filters.", **{key: value})
            given[key] = value
    if not any(given.values()):
        raise InvalidInput(
            "one of user_id, agent_id, run_id or app_id is required",
            field="user_id",
            details={"rule": "scope_filter"},
        )
    return Scopes(**given)


class AddPlan(msgspec.Struct, kw_only=True):
    scopes: Scopes
    now: datetime
    valid_to: datetime | None
    plan: TurnPlan | None = None
    memories: list[Memory] = msgspec.field(default_factory=list)


def check_metadata(metadata: Mapping[str, Any], keep: Mapping[str, Any] | None = None) -> None:
    """422 for a caller's metadata key that Loci writes itself (`RESERVED_KEYS`), so what the caller
    gives is stored as given or refused; `keep`: the memory's own values, which an update may repeat."""
    for key in RESERVED_KEYS:
        if key in metadata and (keep is None or key not in keep or keep[key] != metadata[key]):
            raise InvalidInput(
                f"metadata.{key} is reserved: Loci writes run_id and app_id from the add's fields, role "
                "and origin on stored messages, object_name, event_date and negated on extracted facts",
                field=f"metadata.{key}",
                details={"rule": "reserved_metadata", "reserved": list(RESERVED_KEYS)},
            )


def _metadata(body: V1CreateRequest, scopes: Scopes) -> dict[str, Any]:
    scoped = {k: v for k, v in (("run_id", scopes.run_id), ("app_id", scopes.app_id)) if v}
    return {**(body.metadata or {}), **scoped}


def _extraction_text(body: V1CreateRequest) -> str:
    users = [m.content for m in body.messages if m.role == "user"]
    # labelled as the assistant's: its "I" is not the user (the rules give no first-person facts for it)
    return "\n".join(users or [f"assistant: {m.content}" for m in body.messages if m.role == "assistant"])


def _raw_memories(
    body: V1CreateRequest, scopes: Scopes, org_id: str, ts: datetime, now: datetime, valid_to: datetime | None
) -> list[Memory]:
    out: list[Memory] = []
    for message in body.messages:
        if message.role == "system":  # an instruction to the model, not something said (as mem0 skips it)
            continue
        m = turn_memory(
            message.content,
            kind="event",
            org_id=org_id,
            entity_id=scopes.user_id,
            namespace=NAMESPACE,
            agent_id=scopes.agent_id,
            timestamp=ts,
            now=now,
            metadata={**_metadata(body, scopes), "role": message.role, "origin": "v1"},
        )
        if m is not None:
            out.append(m if valid_to is None else msgspec.structs.replace(m, valid_to=valid_to))
    return out


def _valid_to(body: V1CreateRequest, ts: datetime) -> datetime | None:
    """The end of the added memories' validity; 422 when they would end before they begin (infer true
    or false alike: the memories begin at the add's timestamp)."""
    valid_to = valid_to_for(body.expiration_date)
    if valid_to is not None and valid_to < ts:
        raise InvalidInput(
            "expiration_date is before the memories' timestamp: they would never be valid",
            field="expiration_date",
            details={"rule": "valid_to_after_valid_from", "timestamp": ts.isoformat()},
        )
    return valid_to


def prepare_add(svc: Services, org_id: str, body: V1CreateRequest, now: datetime) -> AddPlan:
    """Check the input, extract (infer=true) or build the raw message memories, and embed; writes
    nothing."""
    scopes = scopes_of(body)
    check_metadata(body.metadata or {})
    ts = datetime.fromtimestamp(body.timestamp, UTC) if body.timestamp is not None else now
    ready = AddPlan(scopes=scopes, now=now, valid_to=_valid_to(body, ts))
    if body.infer is not False:  # null is the default, true
        plan = plan_turn(
            svc.extractor,
            _extraction_text(body),
            org_id=org_id,
            entity_id=scopes.user_id,
            namespace=NAMESPACE,
            agent_id=scopes.agent_id,
            timestamp=ts,
            now=now,
            store_turn="none",
            extract=True,
            metadata=_metadata(body, scopes),
            valid_to=ready.valid_to,
        )
        if plan.extraction.facts:
            embed_for_write(svc.memories.embeddings, plan.texts())
            ready.plan = plan
            if any(not f.negated for f in plan.extraction.facts):
                return ready
            # only negations: when they end nothing, the messages are stored as they came (below)
    ready.memories = _raw_memories(body, scopes, org_id, ts, now, ready.valid_to)
    if not ready.memories:
        raise InvalidInput(
            "no message to remember: every user or assistant message is blank, and system messages are never stored",
            field="messages",
        )
    embed_for_write(svc.memories.embeddings, [m.text for m in ready.memories])
    return ready


def commit_add(svc: Services, org_id: str, ready: AddPlan) -> list[V1CreateItem]:
    """Store what `prepare_add` built (inside the caller's transaction): ADD/UPDATE/DELETE/NONE per fact.
    The facts it writes (ADD, UPDATE) carry the add's expiration; NONE leaves the known fact as it is."""
    if ready.plan is None:
        return _insert_raw(svc, org_id, ready)
    commit = commit_turn(svc.store, ready.plan, now=ready.now, embeddings=svc.memories.embeddings)
    results: list[V1CreateItem] = []
    for built, outcome in zip(commit.built, commit.outcomes, strict=True):
        target = outcome.supersedes[0] if outcome.negation and outcome.supersedes else outcome.memory_id
        if target is None:  # a negation that ended nothing names no memory: nothing to report
            continue
        text = built.text
        if target != built.memory_id:  # DELETE / NONE name an existing fact: show its text
            existing = svc.store.get_memory(org_id, target)
            text = existing.text if existing is not None else text
        results.append(V1CreateItem(id=target, memory=text, event=v1_event(outcome)))
        if outcome.resumed:  # values said again after what this fact ended: each holds again, anew
            for again in svc.store.get_memories(org_id, outcome.resumed):
                results.append(V1CreateItem(id=again.memory_id, memory=again.text, event="ADD"))
    if not results and ready.memories:  # negations that ended nothing: keep what was said
        return _insert_raw(svc, org_id, ready)
    return results


def _insert_raw(svc: Services, org_id: str, ready: AddPlan) -> list[V1CreateItem]:
    created = svc.memories.insert(org_id, ready.memories)
    return [V1CreateItem(id=m.memory_id, memory=m.text, event="ADD") for m in created]


# --- read --------------------------------------------------------------------------------------------
def scan(
    svc: Services,
    org_id: str,
    sel: Selection,
    *,
    now: datetime,
    live: bool = True,
    show_expired: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[Memory]:
    """The memories a selection picks, newest first, read page by page. `live`: current ones only
    (active or disputed, not archived, not expired unless `show_expired`)."""
    query = ListQuery(
        namespace=NAMESPACE,
        entity_id=sel.entity_id,
        agent_id=sel.agent_id,
        statuses=LIVE if live else None,
        archived=False if live else None,
        since=since,
        until=until,
        sort="timestamp_desc",
        limit=SCAN_PAGE,
    )
    for m in page_through(svc.store, org_id, query):
        if live and not show_expired and m.valid_to is not None and m.valid_to <= now:
            continue
        if sel.predicate(m):
            yield m


def page(memories: Iterator[Memory], *, number: int, size: int) -> tuple[int, list[Memory]]:
    """The total and the memories of page `number` (1-based) of `size`."""
    first = (number - 1) * size
    count = 0
    items: list[Memory] = []
    for m in memories:
        if first <= count < first + size:
            items.append(m)
        count += 1
    return count, items


def ranked(
    svc: Services,
    org_id: str,
    *,
    request_id: str,
    query: str,
    sel: Selection,
    top_k: int,
    threshold: float | None = None,
    rerank: bool = False,
    now: datetime,
    show_expired: bool = False,
) -> list[tuple[Memory, float]]:
    """The recall ranking (POST /v0/recall) within the selection, best first, at most `top_k`, with
    their scores; memories past their expiration date too with `show_expired`. A filter the store
    cannot apply itself (run or app, lists, OR, NOT, dates, metadata, categories) is read first as
    get_all reads it, and the recall ranks within those memories, so others' memories never crowd the
    selection out."""
    within: list[str] | None = None
    if not sel.exact:
        within = [m.memory_id for m in scan(svc, org_id, sel, now=now, show_expired=show_expired)]
        if not within:
            return []
    found = pipeline.recall(
        svc.store,
        svc.memories.embeddings,
        org_id=org_id,
        agent_id=sel.agent_id,
        request_id=request_id,
        now=now,
        expired=show_expired,
        within=within,
        limit=max(top_k, MAX_TOP_K),  # GET /v1/memories answers up to 200
        request=RecallRequest(
            query=query,
            entity_id=sel.entity_id,
            namespace=NAMESPACE,
            limit=MAX_TOP_K,
            # mem0's search answers the `top_k` most relevant: no cap per predicate or source
            retrieval=RetrievalOptions(
                rerank=Rerank(enable=rerank or None), diversity=Diversity(enable=False)
            ),
        ),
    )
    by_id = {m.memory_id: m for m in svc.store.get_memories(org_id, [x.memory_id for x in found.matches])}
    out: list[tuple[Memory, float]] = []
    for match in found.matches:
        m = by_id.get(match.memory_id)
        if m is None or not sel.predicate(m) or (threshold is not None and match.score < threshold):
            continue
        out.append((m, match.score))
        if len(out) == top_k:
            break
    return out


def history(svc: Services, org_id: str, memory_id: str) -> list[Mem0HistoryItem]:
    """The memory's changes, oldest first (also after it was deleted, while its events are kept)."""
    current = svc.store.get_memory(org_id, memory_id)
    events: list[Event] = [
        e for _, e in svc.store.list_events(org_id, EventQuery(memory_id=memory_id, limit=MAX_HISTORY))
    ]
    if current is None and not events:
        raise NotFound(f"memory {memory_id!r} not found", details={"memory_id": memory_id})
    return history_records(current, events)


# --- update and delete -------------------------------------------------------------------------------
def edit_of(current: Memory, body: Mem0UpdateRequest) -> MemoryEdit:
    """The mem0 update as a MemoryEdit; the metadata Loci wrote (run_id, app_id, role, ...) survives a
    metadata replacement, which may repeat it but not change it."""
    if not isinstance(body.timestamp, UnsetType):
        raise InvalidInput(
            "a memory's timestamp cannot be changed (it orders listings)",
            field="timestamp",
            details={"rule": "timestamp_unchanged"},
        )
    given = body.text if isinstance(body.text, str) else body.data
    text: str | UnsetType = given if isinstance(given, str) else UNSET  # null: unchanged
    metadata: dict[str, Any] | UnsetType = UNSET
    if isinstance(body.metadata, dict):
        check_metadata(body.metadata, keep=current.metadata)
        metadata = {
            **body.metadata,
            **{k: current.metadata[k] for k in RESERVED_KEYS if k in current.metadata},
        }
    valid_to = UNSET if isinstance(body.expiration_date, UnsetType) else valid_to_for(body.expiration_date)
    if isinstance(text, UnsetType) and isinstance(metadata, UnsetType) and isinstance(valid_to, UnsetType):
        raise InvalidInput(
            "nothing to update: give text, metadata or expiration_date",
            field="text",
            details={"rule": "something_to_update"},
        )
    return MemoryEdit(text=text, metadata=metadata, valid_to=valid_to)


def delete_matching(svc: Services, org_id: str, sel: Selection, now: datetime) -> int:
    """Delete every memory the selection picks (any status, archived too) in one transaction."""
    with svc.store.transaction():
        picked = [m.memory_id for m in scan(svc, org_id, sel, now=now, live=False)]
        # all locked first, in the one order every writer keeps; one a concurrent delete took is gone
        ids = [m.memory_id for m in lock_for_write(svc.store, org_id, picked)]
        for memory_id in ids:
            svc.memories.delete(org_id, memory_id)
    return len(ids)


def delete_with_superseded(svc: Services, org_id: str, memory_id: str) -> None:
    """Delete the memory and the older memories it superseded, transitively (mem0's `delete_linked`),
    so that none of them holds again when it is gone."""
    with svc.store.transaction():
        current = svc.memories.get(org_id, memory_id)
        chain: list[str] = []
        todo = [current]
        while todo:
            for older in ended_by(svc.store, todo.pop()):
                if older.memory_id not in chain:
                    chain.append(older.memory_id)
                    todo.append(older)
        # all locked at once, in the one order every writer keeps; one a concurrent delete took is gone
        present = {m.memory_id for m in lock_for_write(svc.store, org_id, [memory_id, *chain])}
        # oldest links first, so that none is reinstated by the deletion of what ended it
        for older_id in reversed(chain):
            if older_id in present:
                svc.memories.delete(org_id, older_id)
        svc.memories.delete(org_id, memory_id)


def entity_selection(kind: str, name: str) -> Selection:
    key = {"user": "user_id", "agent": "agent_id", "run": "run_id", "app": "app_id"}.get(kind)
    if key is None:
        raise InvalidInput(f"unknown entity type {kind!r}; valid: user, agent, app, run", field="entity_type")
    check_ids(entity_id=name)
    return select({key: name})


def filters_param(raw: str | None) -> dict[str, Any] | None:
    """`filters` as a query parameter: a JSON object, or the Python repr of a dict that mem0ai's client
    sends for `delete_all(filters=...)` (read as literals only, never evaluated); 422 otherwise."""
    if raw is None:
        return None
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            value = None
    try:  # JSON's types only (a repr may hold tuples, sets, bytes)
        value = msgspec.json.decode(msgspec.json.encode(value))
    except (TypeError, msgspec.EncodeError):
        value = None
    if not isinstance(value, dict):
        raise InvalidInput(
            "filters must be a JSON object (or a dict's Python repr, as mem0 clients send it)",
            field="filters",
            details={"rule": "filter_language"},
        )
    return value


def ids_selection(**ids: str | None) -> Selection:
    """DELETE /v1/memories/?user_id=...: at least one id; `*` means any value of that id."""
    given = {k: v for k, v in ids.items() if v}
    if not given:
        raise InvalidInput(
            "one of user_id, agent_id, run_id or app_id is required",
            field="user_id",
            details={"rule": "scope_filter"},
        )
    return select(given)
