"""`Store.speaker_shares`: how much of a scope's conversation a name speaks."""

from __future__ import annotations

from engine.storage.base import Scope, Store
from tests.engine.storage.conftest import at, mem

NOW = at(100_000)


def _conversation(store: Store) -> None:
    texts = [
        "Caroline: I went to a support group yesterday.",
        "Melanie: That's brave, Caroline!",
        "Caroline: It really helped.",
        "Mary Ann: Hi both.",
        "no speaker here",
    ]
    turns = [
        mem(memory_id=f"mem_{i}", type="event", entity_id="ent:a", text=t, timestamp=at(i))
        for i, t in enumerate(texts)
    ]
    # out of the scope's events: a fact, another entity's event, an archived event
    others = [
        ("mem_fact", "fact", "ent:a", False),
        ("mem_b", "event", "ent:b", False),
        ("mem_arch", "event", "ent:a", True),
    ]
    turns += [
        mem(memory_id=mid, type=kind, entity_id=ent, text="Caroline: x", timestamp=at(9), archived=arch)
        for mid, kind, ent, arch in others
    ]
    store.put_memories(turns)


def test_the_share_of_the_scopes_events_a_name_speaks(store: Store) -> None:
    _conversation(store)
    scope = Scope(org_id="org_a", entity_id="ent:a", now=NOW)
    got = store.search.speaker_shares(scope, ["Caroline", "Melanie", "Ann", "Mary", "Bob", "support"])
    # five events in scope: the fact, the other entity's event and the archived one do not count;
    # a name mentioned inside a turn is not its speaker; each word of a name speaks for it
    assert got == [2 / 5, 1 / 5, 1 / 5, 1 / 5, 0.0, 0.0]
    assert store.search.speaker_shares(scope, []) == []
    empty = Scope(org_id="org_a", entity_id="ent:none", now=NOW)
    assert store.search.speaker_shares(empty, ["Caroline"]) == [0.0]


def test_the_shares_follow_every_write_and_removal(store: Store) -> None:
    _conversation(store)

    def shares() -> list[float]:  # a new Scope per read, as every request makes one
        return store.search.speaker_shares(
            Scope(org_id="org_a", entity_id="ent:a", now=NOW), ["Caroline", "Melanie"]
        )

    assert shares() == [2 / 5, 1 / 5]
    assert shares() == [2 / 5, 1 / 5]  # asked again, nothing written
    store.put_memories(
        [mem(memory_id="mem_new", type="event", entity_id="ent:a", text="Melanie: Me too.", timestamp=at(6))]
    )
    assert shares() == [2 / 6, 2 / 6]
    assert store.delete_memory("org_a", "mem_0")
    assert shares() == [1 / 5, 2 / 5]
