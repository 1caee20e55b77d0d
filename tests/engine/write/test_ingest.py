"""The write side of a turn: drafts -> Memory records -> supersession, in one transaction (through
`plan_turn` and `commit_turn`, the functions assemble runs)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.extract.rules import RuleExtractor
from engine.models import Event, Memory
from engine.storage import open_store
from engine.storage.base import EventQuery, ListQuery, Store
from engine.write.ingest import draft_to_memory, preview_memories, upsert_memories, v1_event
from engine.write.supersession import Outcome
from engine.write.turns import TurnCommit, commit_turn, plan_turn
from tests.factories import memory

ORG = "org_a"
T1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
T2 = T1 + timedelta(days=40)
NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store("memory") if request.param == "memory" else open_store(f"sqlite://{tmp_path / 'loci.db'}")
    yield s
    s.close()


def commit(store: Any, text: str, at: datetime, entity_id: str = "ent:user", **kwargs: Any) -> TurnCommit:
    """A turn's facts (the turn itself not stored unless `store_turn` says so) at time `at`."""
    kwargs.setdefault("store_turn", "none")
    plan = plan_turn(RuleExtractor(), text, org_id=ORG, entity_id=entity_id, timestamp=at, now=NOW, **kwargs)
    return commit_turn(store, plan, now=NOW)


def turn(store: Any, text: str, at: datetime, **kwargs: Any) -> tuple[list[Memory], list[Outcome]]:
    done = commit(store, text, at, **kwargs)
    return done.built, done.outcomes


def test_draft_to_memory_fields() -> None:
    (draft,) = RuleExtractor().extract("I moved to Lisbon last month.", reference_time=T1).facts
    m = draft_to_memory(draft, org_id=ORG, timestamp=T1, namespace="ns", agent_id="agent-1",
                        source_turn="mem_turn1", now=NOW)  # fmt: skip
    assert m.memory_id.startswith("mem_") and m.type == "fact"
    assert (m.subject, m.predicate, m.object, m.object_type) == (
        "ent:user",
        "lives_in",
        "ent:lisbon",
        "entity",
    )
    assert m.keys == ["ent:user|lives_in"]
    assert m.valid_from == T1 and m.timestamp == T1 and m.valid_to is None
    assert m.text == "User lives in Lisbon"
    assert m.provenance["source_turn"] == "mem_turn1" and m.provenance["extractor"] == "rules"
    assert m.metadata == {"object_name": "Lisbon", "event_date": "2026-02"}
    assert (m.namespace, m.agent_id, m.entity_id, m.status) == ("ns", "agent-1", "ent:user", "active")
    assert m.created_at == NOW and m.sensitivity == "auto"


def test_contact_details_are_stored_as_pii() -> None:
    (draft,) = RuleExtractor().extract("My email is a@example.com.", reference_time=T1).facts
    assert draft_to_memory(draft, org_id=ORG, timestamp=T1).sensitivity == "pii"


def test_paris_then_berlin(store: Store) -> None:
    (paris,), out1 = turn(store, "I live in Paris.", T1)
    assert [(o.action, o.memory_id) for o in out1] == [("UPSERTED", paris.memory_id)]
    (berlin,), out2 = turn(store, "I moved to Berlin.", T2)
    assert [(o.action, o.supersedes) for o in out2] == [("SUPERSEDED", [paris.memory_id])]
    rows = {m.memory_id: m for m in store.list_memories(ORG, ListQuery())}
    assert rows[berlin.memory_id].status == "active"
    assert rows[paris.memory_id].status == "superseded" and rows[paris.memory_id].valid_to == T2
    types = [e.type for _, e in store.list_events(ORG, EventQuery())]
    assert types == ["memory.created", "memory.created", "memory.superseded"]


def test_a_fact_names_the_stored_turn_it_came_from(store: Store) -> None:
    done = commit(store, "I live in Paris.", T1, store_turn="event")
    turn_id = done.extracted.upserts[0].memory_id
    (fact,) = done.extracted.facts
    assert fact.provenance["source_turn"] == turn_id and store.get_memory(ORG, turn_id or "") is not None


def test_same_fact_again_is_skipped(store: Store) -> None:
    turn(store, "I live in Paris.", T1)
    _, outcomes = turn(store, "I still live in Paris.", T2)
    assert [o.action for o in outcomes] == ["SKIPPED"] and v1_event(outcomes[0]) == "NONE"
    assert store.count_memories(ORG) == 1


def test_a_name_typed_decomposed_is_the_same_name(store: Store) -> None:
    """ "Jose" + U+0301 (NFD) is "José": the repeat is SKIPPED, the value keeps its accent."""
    (jose,), _ = turn(store, "My name is Jos\u00e9.", T1)
    assert jose.object == "Jos\u00e9"
    _, outcomes = turn(store, "My name is Jose\u0301.", T2)
    assert [o.action for o in outcomes] == ["SKIPPED"]
    rows = store.list_memories(ORG, ListQuery())
    assert [(m.object, m.status) for m in rows] == [("Jos\u00e9", "active")]


@pytest.mark.parametrize(
    ("first", "then", "action", "current"),
    [
        ("I live in Berlin.", "I live in Berlin #moving", "SKIPPED", "User lives in Berlin"),
        ("I work at Google.", "I work at Google</p>", "SKIPPED", "User works at Google"),
        ("I live in Berlin.", "I live in Berlin\u3002", "SKIPPED", "User lives in Berlin"),
        ("I am 30 years old.", "I am 31 years old \U0001f382", "SUPERSEDED", "User is 31 years old"),
        ("I live in Paris.", "I live in \u00abBerlin\u00bb", "SUPERSEDED", "User lives in Berlin"),
        ("I work at Acme.", "I work at **Google**", "SUPERSEDED", "User works at Google"),
    ],
)
def test_markup_and_punctuation_around_a_value_are_not_the_value(
    store: Store, first: str, then: str, action: str, current: str
) -> None:
    """A repeat with a hashtag, an HTML tag or CJK punctuation after it is the same value; a new value in
    guillemets, markdown or before an emoji is read and ends the old one."""
    turn(store, first, T1)
    built, outcomes = turn(store, then, T2)
    assert [o.action for o in outcomes] == [action] and [m.text for m in built] == [current]
    active = [m.text for m in store.list_memories(ORG, ListQuery()) if m.status == "active"]
    assert active == [current]


def test_negation_ends_the_fact_and_stores_nothing(store: Store) -> None:
    (acme,), _ = turn(store, "I work at Acme.", T1)
    _, outcomes = turn(store, "I no longer work at Acme.", T2)
    (outcome,) = outcomes
    assert outcome.action == "SUPERSEDED" and outcome.negation and outcome.memory_id is None
    assert outcome.supersedes == [acme.memory_id]
    assert v1_event(outcome) == "DELETE"
    assert store.count_memories(ORG) == 1
    ended = store.get_memory(ORG, acme.memory_id)
    assert ended is not None and ended.status == "superseded" and ended.valid_to == T2


def test_a_turn_with_several_facts_and_multi_valued_predicates(store: Store) -> None:
    _, out1 = turn(store, "I love jazz and hiking. My budget is $800.", T1)
    assert [o.action for o in out1] == ["UPSERTED", "UPSERTED", "UPSERTED"]
    _, out2 = turn(store, "I love cooking. My budget is now $1,200.", T2)
    assert [o.action for o in out2] == ["UPSERTED", "SUPERSEDED"]
    assert [v1_event(o) for o in out2] == ["ADD", "UPDATE"]
    active = store.list_memories(ORG, ListQuery(statuses=("active",)))
    assert sorted(str(m.object) for m in active) == ["1200", "cooking", "hiking", "jazz"]


def test_third_person_facts_stay_in_the_turns_entity(store: Store) -> None:
    done = commit(store, "My sister Anna lives in Rome.", T1, entity_id="ent:dana")
    assert [(m.subject, m.predicate, m.entity_id) for m in done.built] == [
        ("ent:dana", "has_sibling", "ent:dana"),
        ("ent:anna", "lives_in", "ent:dana"),
    ]
    assert [o.action for o in done.outcomes] == ["UPSERTED", "UPSERTED"]
    assert {e.entity_id for e in done.extracted.entities} >= {"ent:anna", "ent:rome"}


def test_mode_off_keeps_both(store: Store) -> None:
    turn(store, "I live in Paris.", T1)
    _, outcomes = turn(store, "I live in Berlin.", T2, mode="off")
    assert [o.action for o in outcomes] == ["UPSERTED"]
    assert len(store.list_memories(ORG, ListQuery(statuses=("active",)))) == 2


class FailingEvents:
    """A store whose second append_events call fails: the whole turn must roll back."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls = 0

    def append_events(self, events: Sequence[Event], *, durable: bool = True) -> None:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("disk full")
        self.inner.append_events(events, durable=durable)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_turn_is_all_or_nothing(store: Store) -> None:
    failing = FailingEvents(store)
    with pytest.raises(RuntimeError):
        turn(failing, "I live in Paris and I work at Acme.", T1)
    assert store.count_memories(ORG) == 0
    assert store.list_events(ORG, EventQuery()) == []


def test_upsert_memories_adds_conflict_keys(store: Store) -> None:
    def item(obj: str, at: datetime) -> Memory:
        return memory(memory_id=f"mem_{obj}", org_id=ORG, type="fact", text=f"User lives in {obj}", at=at,
                      subject="ent:user", predicate="moved_to", object=obj, object_type="string",
                      valid_from=at)  # fmt: skip

    outcomes = upsert_memories(store, [item("Paris", T1), item("Berlin", T2)], now=NOW)
    assert [(o.action, o.supersedes) for o in outcomes] == [("UPSERTED", []), ("SUPERSEDED", ["mem_Paris"])]
    stored = store.get_memory(ORG, "mem_Berlin")
    assert stored is not None and stored.keys == ["ent:user|lives_in"]


class CountingKeys:
    """A store that counts `find_by_key` calls per key."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.reads: dict[str, int] = {}

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        self.reads[key] = self.reads.get(key, 0) + 1
        return self.inner.find_by_key(org_id, namespace, key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_turn_reads_each_key_once(store: Store) -> None:
    """Each fact of a turn read its key's facts again, the turn's own earlier ones included: a turn of
    n likes decoded and compared n^2/2 facts."""
    turn(store, "I like dish0. I live in Oslo.", T1)
    counting = CountingKeys(store)
    likes = " ".join(f"I like dish{i}." for i in range(40))
    _, outcomes = turn(counting, f"{likes} I moved to Bergen. I like dish41.", T2)
    assert counting.reads == {"ent:user|likes": 1, "ent:user|dislikes": 1, "ent:user|lives_in": 1}
    assert [o.action for o in outcomes] == ["SKIPPED"] + ["UPSERTED"] * 39 + ["SUPERSEDED", "UPSERTED"]

    def like(n: int, obj: str) -> Memory:
        return memory(memory_id=f"mem_like{n}", org_id=ORG, type="fact", text=f"User likes {obj}", at=T2,
                      entity_id="ent:user", subject="ent:user", predicate="likes", object=obj,
                      object_type="string", valid_from=T2)  # fmt: skip

    counting.reads.clear()
    again = upsert_memories(counting, [like(1, "the Opera"), like(2, "dish7"), like(3, "opera")], now=NOW)
    assert [(o.action, o.memory_id) for o in again] == [
        ("UPSERTED", "mem_like1"),
        ("SKIPPED", outcomes[7].memory_id),
        ("SKIPPED", "mem_like1"),  # the batch's own earlier value
    ]
    assert counting.reads == {"ent:user|likes": 1, "ent:user|dislikes": 1}


def test_upsert_memories_checks_its_arguments(store: Store) -> None:
    with pytest.raises(ValueError):
        upsert_memories(store, [], negated=[True])


def test_v1_events() -> None:
    assert v1_event(Outcome(memory_id="m", action="UPSERTED")) == "ADD"
    assert v1_event(Outcome(memory_id="m", action="SUPERSEDED", supersedes=["o"])) == "UPDATE"
    assert v1_event(Outcome(memory_id=None, action="SUPERSEDED", supersedes=["o"], negation=True)) == "DELETE"
    assert v1_event(Outcome(memory_id=None, action="SKIPPED", negation=True)) == "NONE"
    assert v1_event(Outcome(memory_id="m", action="SKIPPED")) == "NONE"


def test_preview_memories_store_nothing(store: Store) -> None:
    result = RuleExtractor().extract("I live in Paris. I no longer work at Acme.", reference_time=T1)
    memories = preview_memories(result, org_id=ORG, timestamp=T1, entity_id="ent:user")
    assert [(m.predicate, m.object, m.metadata.get("negated", False)) for m in memories] == [
        ("lives_in", "ent:paris", False),
        ("works_at", "ent:acme", True),
    ]
    assert all(m.type == "fact" for m in memories)
    assert store.count_memories(ORG) == 0


def test_the_later_statement_of_a_turn_wins(store: Store) -> None:
    (paris, berlin), outcomes = turn(store, "I live in Paris. Actually, I moved to Berlin.", T1)
    assert [o.action for o in outcomes] == ["UPSERTED", "SUPERSEDED"]
    assert outcomes[1].supersedes == [paris.memory_id]
    assert berlin.valid_from == T1 + timedelta(microseconds=1) and berlin.timestamp == T1
    active = store.list_memories(ORG, ListQuery(statuses=("active",)))
    assert [m.object for m in active] == ["ent:berlin"]
