"""`Store.adjacent_events`: the events around an event, in time order, within one stretch of conversation."""

from __future__ import annotations

from datetime import datetime, timedelta

from engine.storage.base import Adjacent, Scope, Store
from tests.engine.storage.conftest import at, mem

NOW = at(100_000)
GAP = timedelta(minutes=30)


def _conversation(store: Store) -> None:
    # two sessions a day apart; a fact and another entity's event interleaved in time
    turns = [
        mem(memory_id=f"mem_s1_{i}", type="event", entity_id="ent:a", text=f"s1 turn {i}", timestamp=at(i))
        for i in range(5)
    ]
    turns += [
        mem(
            memory_id=f"mem_s2_{i}",
            type="event",
            entity_id="ent:a",
            text=f"s2 turn {i}",
            timestamp=at(1440 + i),
        )
        for i in range(3)
    ]
    others = [
        mem(memory_id="mem_fact", type="fact", entity_id="ent:a", text="a fact", timestamp=at(2.5)),
        mem(memory_id="mem_other", type="event", entity_id="ent:b", text="b", timestamp=at(1.5)),
        mem(
            memory_id="mem_arch", type="event", entity_id="ent:a", text="x", timestamp=at(3.5), archived=True
        ),
    ]
    store.put_memories([*turns, *others])


def test_neighbours_both_sides_nearest_first(store: Store) -> None:
    _conversation(store)
    scope = Scope(org_id="org_a", entity_id="ent:a", now=NOW)
    got = store.search.adjacent_events(scope, ["mem_s1_2"], 2, GAP)
    assert got == [
        Adjacent("mem_s1_2", "mem_s1_1", -1),
        Adjacent("mem_s1_2", "mem_s1_0", -2),
        Adjacent("mem_s1_2", "mem_s1_3", 1),
        Adjacent("mem_s1_2", "mem_s1_4", 2),
    ]


def test_a_gap_ends_the_stretch_and_other_ids_get_none(store: Store) -> None:
    _conversation(store)
    scope = Scope(org_id="org_a", entity_id="ent:a", now=NOW)
    got = store.search.adjacent_events(scope, ["mem_s2_0", "mem_fact", "mem_other", "mem_missing"], 3, GAP)
    # the first turn of session 2: nothing before it within the gap (session 1 ended a day earlier)
    assert got == [Adjacent("mem_s2_0", "mem_s2_1", 1), Adjacent("mem_s2_0", "mem_s2_2", 2)]
    assert store.search.adjacent_events(scope, ["mem_s1_4"], 2, timedelta(days=2))[-1] == Adjacent(
        "mem_s1_4", "mem_s2_1", 2
    )
    assert store.search.adjacent_events(scope, ["mem_s1_2"], 0, GAP) == []
    # the first and the last event of the scope: nothing beyond either end
    assert store.search.adjacent_events(scope, ["mem_s1_0"], 3, GAP) == [
        Adjacent("mem_s1_0", "mem_s1_1", 1),
        Adjacent("mem_s1_0", "mem_s1_2", 2),
        Adjacent("mem_s1_0", "mem_s1_3", 3),
    ]
    assert store.search.adjacent_events(scope, ["mem_s2_2"], 3, timedelta(days=2)) == [
        Adjacent("mem_s2_2", "mem_s2_1", -1),
        Adjacent("mem_s2_2", "mem_s2_0", -2),
        Adjacent("mem_s2_2", "mem_s1_4", -3),
    ]


def test_scope_applies_to_anchors_and_neighbours(store: Store) -> None:
    _conversation(store)
    wide = Scope(org_id="org_a", now=NOW)  # no entity: ent:b's event sits between turns 1 and 2
    got = store.search.adjacent_events(wide, ["mem_s1_2"], 1, GAP)
    assert got == [Adjacent("mem_s1_2", "mem_other", -1), Adjacent("mem_s1_2", "mem_s1_3", 1)]
    other_org = Scope(org_id="org_b", entity_id="ent:a", now=NOW)
    assert store.search.adjacent_events(other_org, ["mem_s1_2"], 2, GAP) == []
    before = Scope(org_id="org_a", entity_id="ent:a", now=NOW, as_of=at(2))  # turns 3 and 4 not yet said
    assert store.search.adjacent_events(before, ["mem_s1_2"], 2, GAP) == [
        Adjacent("mem_s1_2", "mem_s1_1", -1),
        Adjacent("mem_s1_2", "mem_s1_0", -2),
    ]


def _expected(live: dict[str, datetime], anchors: list[str], span: int) -> list[Adjacent]:
    """adjacent_events worked out by hand: events in (timestamp, memory_id) order, walked from each anchor."""
    order = sorted(live, key=lambda mid: (live[mid], mid))
    out: list[Adjacent] = []
    for anchor in anchors:
        if anchor not in live:
            continue
        p = order.index(anchor)
        for step in (-1, 1):
            q = p
            for d in range(1, span + 1):
                nxt = q + step
                if not 0 <= nxt < len(order) or abs(live[order[nxt]] - live[order[q]]) > GAP:
                    break
                out.append(Adjacent(anchor, order[nxt], step * d))
                q = nxt
    return out


def test_events_written_between_reads_take_their_places(store: Store) -> None:
    """Batches arriving after a first read (an index merges them into its event order instead of
    sorting again): equal timestamps ordered by memory_id, a replaced event at its new time, a deleted
    one gone."""
    scope = Scope(org_id="org_a", entity_id="ent:a", now=NOW)
    # ids deliberately out of time order; several share a timestamp
    batches = [
        [("mem_m", 5), ("mem_c", 5), ("mem_x", 1), ("mem_a", 9)],
        [("mem_b", 5), ("mem_z", 5), ("mem_d", 0), ("mem_y", 9)],
        [("mem_c", 7), ("mem_e", 5), ("mem_f", 12)],  # mem_c moves to minute 7
    ]
    live: dict[str, datetime] = {}
    for batch in batches:
        store.put_memories(
            [
                mem(memory_id=mid, type="event", entity_id="ent:a", text=mid, timestamp=at(minute))
                for mid, minute in batch
            ]
        )
        live.update({mid: at(minute) for mid, minute in batch})
        ids = sorted(live)
        assert store.search.adjacent_events(scope, ids, 3, GAP) == _expected(live, ids, 3)
    store.delete_memory("org_a", "mem_z")
    del live["mem_z"]
    ids = ["mem_b", "mem_e", "mem_m", "mem_z"]
    assert store.search.adjacent_events(scope, ids, 4, GAP) == _expected(live, ids, 4)
