"""LangGraph's store operations as plans (loci.integrations.plans) over the mapping of `scope`.

A batch answers its reads (get, search, list_namespaces) in order, then applies its writes, the last write
of a (namespace, key) winning: the order LangGraph's in-memory and PostgreSQL stores keep, so reads in a
batch see the store as it was before the batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from loci.client import Memory, MemoryCreate, RecallRequest, RecallResponse
from loci.integrations.langgraph import scope
from loci.integrations.langgraph.filters import literal_prefix, namespace_matches, value_matches
from loci.integrations.plans import PAGE_SIZE, Delete, Plan, Recall, create_all, first, scan
from loci.integrations.texts import fit
from loci.wire.models import MAX_TEXT_LENGTH
from loci.wire.options import Policy

MAX_RECALL = 100  # the API's largest recall


class Config(msgspec.Struct, frozen=True, kw_only=True):
    namespace: str  # the Loci namespace of every item
    fields: tuple[str, ...]  # the value's paths Loci ranks, unless a put names its own


def batch(ops: Iterable[Op], cfg: Config) -> Plan[list[Result]]:
    results: list[Result] = []
    writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in ops:
        validate_op_namespace(op)
        result: Result = None
        if isinstance(op, GetOp):
            result = yield from get(op.namespace, op.key, cfg)
        elif isinstance(op, SearchOp):
            result = yield from search(op, cfg)
        elif isinstance(op, ListNamespacesOp):
            result = yield from list_namespaces(op, cfg)
        elif isinstance(op, PutOp):
            if op.ttl is not None:
                raise NotImplementedError("LociStore does not support TTL; put with ttl=None")
            if op.value is not None:
                scope.check_namespace(op.namespace)
            writes[(op.namespace, op.key)] = op
        else:
            raise ValueError(f"Unknown operation type: {type(op).__name__}")
        results.append(result)
    yield from put_all(list(writes.values()), cfg)
    return results


def versions(namespace: Sequence[str], key: str, cfg: Config) -> Plan[list[Memory]]:
    """The memories of (namespace, key), newest first: one, unless two writers raced."""
    found: list[Memory] = []
    filters = {"namespace": cfg.namespace, "entity_id": scope.entity_of(namespace), "tag": scope.key_tag(key)}

    def keep(memory: Memory) -> bool:
        stored = scope.stored_of(memory.metadata)
        if stored is not None and stored.key == key and tuple(stored.namespace) == tuple(namespace):
            found.append(memory)
        return False

    if scope.addressable(namespace):
        yield from scan(filters, keep)
    return found


def get(namespace: tuple[str, ...], key: str, cfg: Config) -> Plan[Item | None]:
    found = yield from versions(namespace, key, cfg)
    return scope.item_of(found[0]) if found else None


def put_all(puts: list[PutOp], cfg: Config) -> Plan[None]:
    """New versions first (in batches), then the old ones deleted: a failure never loses the last value."""
    now = datetime.now(UTC)
    drafts: list[MemoryCreate] = []
    stale: list[str] = []
    for op in puts:
        old = yield from versions(op.namespace, op.key, cfg)
        stale += [memory.memory_id for memory in old]
        if op.value is None:
            continue
        first = scope.item_of(old[-1]) if old else None
        fields = None if op.index is False else (op.index or cfg.fields)
        drafts.append(
            scope.draft_of(
                op.namespace,
                op.key,
                op.value,
                loci_namespace=cfg.namespace,
                fields=fields,
                created_at=first.created_at if first is not None else now,
                now=now,
            )
        )
    yield from create_all(drafts)
    for memory_id in stale:
        yield Delete(memory_id)


def search(op: SearchOp, cfg: Config) -> Plan[list[SearchItem]]:
    if op.query:
        return (yield from _ranked(op, cfg))
    found: list[SearchItem] = []
    skip = op.offset
    prefix = tuple(op.namespace_prefix)

    def take(memory: Memory) -> bool:
        nonlocal skip
        item = scope.item_of(memory)
        if (
            item is None
            or item.namespace[: len(prefix)] != prefix
            or not value_matches(item.value, op.filter)
        ):
            return False
        if skip > 0:
            skip -= 1
            return False
        found.append(scope.search_item_of(item))
        return len(found) >= op.limit

    if op.limit > 0:
        page_size = PAGE_SIZE if op.filter else max(1, min(PAGE_SIZE, op.offset + op.limit))
        filters = {"namespace": cfg.namespace, "tag": scope.within_tag(prefix), "sort": "timestamp_desc"}
        yield from scan(filters, take, page_size)
    return found


def _ranked(op: SearchOp, cfg: Config) -> Plan[list[SearchItem]]:
    """A query: Loci's recall ranks the items. When nothing lies below the prefix, the recall is scoped to
    the prefix's entity and asks for the page's items; else it covers the whole Loci namespace, keeping the
    matches under the prefix. Matches that are no item of the page (the entity's other memories, unindexed
    items, or a filter's misses) can leave it short while recall has more: then it asks once more, for the
    API's largest recall."""
    prefix = tuple(op.namespace_prefix)
    exact = False
    if prefix and scope.addressable(prefix):
        below = yield from first({"namespace": cfg.namespace, "tag": scope.below_tag(prefix)})
        exact = below is None
    wanted = op.offset + op.limit
    limit = min(MAX_RECALL, wanted if exact and not op.filter else MAX_RECALL)
    if op.limit <= 0 or limit <= 0:
        return []
    while True:
        request = RecallRequest(
            query=fit(op.query or "", MAX_TEXT_LENGTH),  # a longer query is refused: rank by its start
            namespace=cfg.namespace,
            entity_id=scope.entity_of(prefix) if exact else None,
            limit=limit,
            policy=Policy(pii_redaction="off"),  # the items as stored, as a search without a query reads them
        )
        answer: RecallResponse = yield Recall(request)
        found = _items_of(answer, prefix, op.filter)
        if len(found) >= wanted or len(answer.matches) < limit or limit >= MAX_RECALL:
            return found[op.offset : wanted]
        limit = MAX_RECALL


def _items_of(
    answer: RecallResponse, prefix: tuple[str, ...], filter: dict[str, Any] | None
) -> list[SearchItem]:
    """The recall's indexed matches that are items under `prefix` passing `filter`, in rank order."""
    found: list[SearchItem] = []
    for match in answer.matches:
        stored = scope.stored_of(match.metadata)
        if stored is None or not stored.indexed or tuple(stored.namespace[: len(prefix)]) != prefix:
            continue
        if not value_matches(stored.value, filter):
            continue
        updated = match.timestamp or stored.created_at
        item = Item(
            value=stored.value,
            key=stored.key,
            namespace=tuple(stored.namespace),
            created_at=stored.created_at,
            updated_at=updated,
        )
        found.append(scope.search_item_of(item, match.score))
    return found


def list_namespaces(op: ListNamespacesOp, cfg: Config) -> Plan[list[tuple[str, ...]]]:
    """Read from the items' entities (one page per 200 items under the conditions' literal prefix)."""
    seen: set[tuple[str, ...]] = set()

    def add(memory: Memory) -> bool:
        if scope.ITEM_TAG in memory.tags and memory.entity_id is not None:
            seen.add(scope.namespace_of(memory.entity_id))
        return False

    prefix = literal_prefix(op.match_conditions)
    if len(scope.entity_of(prefix)) <= scope.MAX_ENTITY_LENGTH:
        yield from scan({"namespace": cfg.namespace, "tag": scope.within_tag(prefix)}, add)
    names = [ns for ns in seen if all(namespace_matches(ns, c) for c in op.match_conditions or ())]
    if op.max_depth is not None:
        names = list({ns[: op.max_depth] for ns in names})
    return sorted(names)[op.offset : op.offset + op.limit]
