"""The entity graph around one entity, for inspection: the memories the retrieval graph channel reaches
from it (`SearchBackend.graph_search`, same scope rules and depth), and the entities and edges they form.

A memory links every entity it touches (entity_id, subject, an entity-valued object). Edges shown:
- `fact`: subject -> entity-valued object, labelled with the predicate;
- `mention`: the memory's entity_id -> its subject or object when they differ and no fact edge already
  joins the two.
Node `hops` is the entity's distance from the centre over the memories returned (a memory at graph
distance `depth` can reach an entity at `depth + 1`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal

import msgspec

from engine.errors import InvalidInput
from engine.memory_service import check_ids
from engine.models import Memory
from engine.storage.base import Scope, Store
from engine.storage.scope_filter import as_seen, memory_entities

MAX_DEPTH = 2
MAX_LIMIT = 500
DEFAULT_LIMIT = 200


class GraphNode(msgspec.Struct, kw_only=True):
    entity_id: str
    hops: int
    memories: int  # how many of the returned memories touch it


class GraphEdge(msgspec.Struct, kw_only=True):
    source: str
    target: str
    kind: Literal["fact", "mention"]
    memory_id: str
    predicate: str | None = None


class GraphMemory(msgspec.Struct, kw_only=True):
    memory_id: str
    type: str
    text: str
    status: str
    hops: int  # the graph channel's distance: 0 = touches the centre
    entities: list[str]
    predicate: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None


class EntityGraph(msgspec.Struct, kw_only=True):
    entity_id: str
    namespace: str
    depth: int
    as_of: datetime | None
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    memories: list[GraphMemory]
    truncated: bool  # more memories were in reach than `limit`


def _entity_object(memory: Memory) -> str | None:
    touched = memory_entities(memory)
    obj = memory.object
    return obj if isinstance(obj, str) and obj in touched and obj not in (memory.subject, None) else None


def memory_edges(memory: Memory) -> list[GraphEdge]:
    """The edges one memory draws (see the module docstring)."""
    edges: list[GraphEdge] = []
    pairs: set[frozenset[str]] = set()
    obj = _entity_object(memory)
    if memory.subject is not None and obj is not None:
        edges.append(
            GraphEdge(
                source=memory.subject,
                target=obj,
                kind="fact",
                memory_id=memory.memory_id,
                predicate=memory.predicate,
            )
        )
        pairs.add(frozenset((memory.subject, obj)))
    anchor = memory.entity_id
    for other in (memory.subject, obj):
        if anchor is None or other is None or other == anchor or frozenset((anchor, other)) in pairs:
            continue
        edges.append(GraphEdge(source=anchor, target=other, kind="mention", memory_id=memory.memory_id))
        pairs.add(frozenset((anchor, other)))
    return edges


def entity_hops(center: str, groups: Iterable[Sequence[str]]) -> dict[str, int]:
    """Breadth-first distance from `center`, where each group (a memory's entities) links all its members."""
    by_entity: dict[str, list[int]] = {}
    group_list = [list(g) for g in groups]
    for i, group in enumerate(group_list):
        for entity in group:
            by_entity.setdefault(entity, []).append(i)
    hops = {center: 0}
    queue = deque([center])
    seen_groups: set[int] = set()
    while queue:
        entity = queue.popleft()
        for i in by_entity.get(entity, []):
            if i in seen_groups:
                continue
            seen_groups.add(i)
            for other in group_list[i]:
                if other not in hops:
                    hops[other] = hops[entity] + 1
                    queue.append(other)
    return hops


def entity_graph(
    store: Store,
    *,
    org_id: str,
    entity_id: str,
    namespace: str = "default",
    depth: int = MAX_DEPTH,
    limit: int = DEFAULT_LIMIT,
    as_of: datetime | None = None,
    agent_id: str | None = None,
    now: datetime,
) -> EntityGraph:
    """The graph around `entity_id`: active memories, or with `as_of` those valid then; with `agent_id`,
    that agent's only (what its assemble's graph channel walks)."""
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidInput(f"depth must be 0..{MAX_DEPTH}", field="depth")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be 1..{MAX_LIMIT}", field="limit")
    check_ids(entity_id=entity_id, namespace=namespace)
    scope = Scope(org_id=org_id, namespace=namespace, agent_id=agent_id, as_of=as_of, now=now)
    hits = store.search.graph_search(scope, [entity_id], depth, limit + 1)
    distance = {h.memory_id: int(h.raw) for h in hits[:limit]}
    memories = [as_seen(m, scope) for m in store.get_memories(org_id, list(distance))]
    touched = [memory_entities(m) for m in memories]
    hops = entity_hops(entity_id, touched)
    counts: dict[str, int] = {}
    for group in touched:
        for entity in group:
            counts[entity] = counts.get(entity, 0) + 1
    nodes = [
        GraphNode(entity_id=e, hops=h, memories=counts.get(e, 0))
        for e, h in sorted(hops.items(), key=lambda item: (item[1], item[0]))
    ]
    edges = [edge for m in memories for edge in memory_edges(m)]
    return EntityGraph(
        entity_id=entity_id,
        namespace=namespace,
        depth=depth,
        as_of=as_of,
        nodes=nodes,
        edges=edges,
        memories=[
            GraphMemory(
                memory_id=m.memory_id,
                type=m.type,
                text=m.text,
                status=m.status,
                hops=distance[m.memory_id],
                entities=group,
                predicate=m.predicate,
                valid_from=m.valid_from,
                valid_to=m.valid_to,
            )
            for m, group in zip(memories, touched, strict=True)
        ],
        truncated=len(hits) > limit,
    )
