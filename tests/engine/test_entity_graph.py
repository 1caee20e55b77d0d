"""entity_graph(): the memories the graph channel reaches, their entities with hop counts, fact and
mention edges, as_of, depth and limit, on the in-process and SQLite stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine.entity_graph import GraphEdge, entity_graph, entity_hops, memory_edges
from engine.errors import InvalidInput
from engine.storage import Store, open_store
from tests.engine.storage.conftest import at, mem

NOW = at(1000)


def fact(subject: str, predicate: str, obj: Any, **fields: Any) -> Any:
    is_entity = isinstance(obj, str) and obj.startswith("ent:")
    fields.setdefault("valid_from", at(1))  # mem()'s default timestamps grow with every call
    return mem(
        type="fact",
        entity_id=fields.pop("entity_id", subject),
        subject=subject,
        predicate=predicate,
        object=obj,
        object_type="entity" if is_entity else "string",
        text=f"{subject} {predicate} {obj}",
        **fields,
    )


@pytest.fixture(params=["memory", "sqlite://:memory:"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    s = open_store(request.param)
    yield s
    s.close()


def test_edges_of_one_memory() -> None:
    knows = fact("ent:alice", "knows", "ent:bob", memory_id="mem_1")
    assert memory_edges(knows) == [
        GraphEdge(source="ent:alice", target="ent:bob", kind="fact", memory_id="mem_1", predicate="knows")
    ]
    lives = fact("ent:alice", "lives_in", "Berlin", memory_id="mem_2")
    assert memory_edges(lives) == []  # a literal object is no entity
    about_bob = fact("ent:bob", "works_at", "ent:acme", entity_id="ent:alice", memory_id="mem_3")
    assert memory_edges(about_bob) == [
        GraphEdge(source="ent:bob", target="ent:acme", kind="fact", memory_id="mem_3", predicate="works_at"),
        GraphEdge(source="ent:alice", target="ent:bob", kind="mention", memory_id="mem_3"),
        GraphEdge(source="ent:alice", target="ent:acme", kind="mention", memory_id="mem_3"),
    ]
    note = mem(entity_id="ent:alice", memory_id="mem_4")
    assert memory_edges(note) == []


def test_entity_hops_links_every_member_of_a_group() -> None:
    hops = entity_hops("a", [["a", "b"], ["b", "c", "d"], ["d", "e"], ["x", "y"]])
    assert hops == {"a": 0, "b": 1, "c": 2, "d": 2, "e": 3}


def test_graph_around_an_entity(store: Store) -> None:
    knows = fact("ent:alice", "knows", "ent:bob")
    works = fact("ent:bob", "works_at", "ent:acme")
    located = fact("ent:acme", "located_in", "ent:berlin")
    lives = fact("ent:alice", "lives_in", "Berlin")
    old = fact("ent:alice", "knows", "ent:carol", status="superseded", valid_to=at(500))
    other_ns = fact("ent:alice", "knows", "ent:dave", namespace="n2")
    other_org = fact("ent:alice", "knows", "ent:eve", org_id="org_b")
    store.put_memories([knows, works, located, lives, old, other_ns, other_org])

    g = entity_graph(store, org_id="org_a", entity_id="ent:alice", now=NOW)
    assert {(n.entity_id, n.hops) for n in g.nodes} == {
        ("ent:alice", 0),
        ("ent:bob", 1),
        ("ent:acme", 2),
        ("ent:berlin", 3),
    }
    assert g.nodes[0].entity_id == "ent:alice" and g.nodes[0].memories == 2  # knows, lives_in
    assert {(e.source, e.predicate, e.target) for e in g.edges} == {
        ("ent:alice", "knows", "ent:bob"),
        ("ent:bob", "works_at", "ent:acme"),
        ("ent:acme", "located_in", "ent:berlin"),
    }
    by_id = {m.memory_id: m for m in g.memories}
    assert set(by_id) == {knows.memory_id, works.memory_id, located.memory_id, lives.memory_id}
    assert by_id[knows.memory_id].hops == 0 and by_id[works.memory_id].hops == 1
    assert by_id[located.memory_id].hops == 2 and not g.truncated

    shallow = entity_graph(store, org_id="org_a", entity_id="ent:alice", depth=0, now=NOW)
    assert {m.memory_id for m in shallow.memories} == {knows.memory_id, lives.memory_id}
    assert {n.entity_id for n in shallow.nodes} == {"ent:alice", "ent:bob"}

    then = entity_graph(store, org_id="org_a", entity_id="ent:alice", as_of=at(400), now=NOW)
    assert ("ent:carol", 1) in {(n.entity_id, n.hops) for n in then.nodes}  # superseded later: true then

    capped = entity_graph(store, org_id="org_a", entity_id="ent:alice", limit=2, now=NOW)
    assert len(capped.memories) == 2 and capped.truncated
    assert {m.hops for m in capped.memories} == {0}  # nearest first

    nobody = entity_graph(store, org_id="org_a", entity_id="ent:nobody", now=NOW)
    assert nobody.memories == [] and [n.entity_id for n in nobody.nodes] == ["ent:nobody"]


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [("depth", {"depth": 3}), ("depth", {"depth": -1}), ("limit", {"limit": 0}), ("limit", {"limit": 501})],
)
def test_bad_bounds(store: Store, field: str, kwargs: dict[str, int]) -> None:
    with pytest.raises(InvalidInput) as err:
        entity_graph(store, org_id="org_a", entity_id="ent:a", now=NOW, **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field
