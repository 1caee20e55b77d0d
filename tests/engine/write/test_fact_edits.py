"""A fact's text replaced: the value follows the text (`plan_edit`), the keys keep one current value
(`commit_edit`). The routes are tested in tests/server/test_mem0_update.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.extract.rules import RuleExtractor
from engine.memory_service import MemoryEdit, MemoryService
from engine.models import Memory
from engine.storage import open_store
from engine.storage.base import EventQuery, ListQuery, Store
from engine.write.fact_edits import FactValue, commit_edit, plan_edit, value_of
from engine.write.ingest import draft_to_memory
from engine.write.predicates import is_single_valued
from engine.write.supersession import same_value
from engine.write.turns import commit_turn, plan_turn
from tests.pg_fixture import pg_database, pg_server, postgres_store

ORG = "org_a"
T1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
T2 = T1 + timedelta(days=40)
T3 = T2 + timedelta(days=40)
RULES = RuleExtractor()
__all__ = ["pg_database", "pg_server", "postgres_store"]  # fixtures

#: what a fact's rendered text ("User lives in Berlin") says, for each kind of fact: it must read back
ROUND_TRIP = [
    "My name is Sam.", "Everyone calls me Jonny.", "I'm 34 years old.", "My birthday is March 3rd.",
    "I was born in 1985.", "I was born in Lyon.", "I'm originally from Porto.", "I'm Canadian.",
    "I live in Berlin.", "I speak French.", "I'm learning Japanese.", "I work at Google.",
    "I'm a software engineer.", "I study biology.", "I'm a student at McGill.", "I'm married to Sarah.",
    "My boyfriend is Tom.", "I'm single.", "I have a son named Leo.", "I have two kids.",
    "I have a sister named Anna.", "My mom is Maria.", "I have a dog named Max.", "I love jazz.",
    "I hate olives.", "I'm allergic to peanuts.", "I'm vegan.", "I eat fish.", "I play tennis.",
    "My hobby is knitting.", "I drive a Tesla Model 3.", "I want to run a marathon.",
    "I'm planning to visit Japan.", "My budget is $800.", "My rent is $1,200 a month.",
    "I earn $90,000 a year.", "I weigh 70 kg.", "My email is sam@example.com.", "My favorite color is green.",
]  # fmt: skip


def _fact(text: str, subject: str = "ent:sam", name: str = "User") -> Memory:
    draft = RULES.extract(text, subject=subject, reference_time=T1, subject_name=name).facts[0]
    return draft_to_memory(draft, org_id=ORG, timestamp=T1, entity_id="sam")


@pytest.mark.parametrize("said", ROUND_TRIP)
def test_a_rendered_fact_reads_back_as_itself(said: str) -> None:
    fact = _fact(said)
    value = value_of(RULES, fact, fact.text)  # "User's name is Sam", "User lives in Berlin", ...
    assert (value.predicate, value.object, value.unit, value.keys) == (
        fact.predicate,
        fact.object,
        fact.unit,
        fact.keys,
    )
    assert value.metadata["object_name"] == fact.metadata["object_name"]


@pytest.mark.parametrize("said", ROUND_TRIP)
def test_a_named_speakers_rendered_fact_reads_back_as_itself(said: str) -> None:
    """A named speaker's fact ("Jon Snow lives in Berlin", about ent:jon-snow) reads as "User ..." does."""
    fact = _fact(said, subject="ent:jon-snow", name="Jon Snow")
    assert fact.text.startswith("Jon Snow")
    value = value_of(RULES, fact, fact.text)
    assert (value.predicate, value.object, value.unit, value.keys) == (
        fact.predicate,
        fact.object,
        fact.unit,
        fact.keys,
    )


def test_the_value_of_a_new_text() -> None:
    home = _fact("I live in Boston.")
    assert value_of(RULES, home, "User lives in Chicago").object == "ent:chicago"
    assert value_of(RULES, home, "I moved to Denver last month").object == "ent:denver"
    # the fact's own predicate wins over others in the text; its last statement wins over earlier ones
    both = value_of(RULES, home, "User works at Acme and lives in Rome, actually in Milan")
    assert (both.predicate, both.object) == ("lives_in", "ent:rome")
    assert value_of(RULES, home, "I live in Rome. Actually I live in Milan.").object == "ent:milan"
    # another predicate: the fact becomes that one
    job = value_of(RULES, home, "User works at Acme")
    assert (job.predicate, job.object, job.keys) == ("works_at", "ent:acme", ["ent:sam|works_at"])
    # free text, a negation, someone else's fact: no value
    for text in ("Prefers window seats", "User no longer lives in Boston", "Anna lives in Rome"):
        assert value_of(RULES, home, text) == FactValue(), text


def test_a_third_person_fact_keeps_its_subject() -> None:
    anna = _fact("Anna lives in Rome.")
    assert anna.subject == "ent:anna"
    assert value_of(RULES, anna, "Anna lives in Milan").object == "ent:milan"


def test_only_facts_with_a_subject_are_re_derived() -> None:
    note = _fact("I live in Boston.")
    plan = plan_edit(RULES, note, MemoryEdit(metadata={"k": 1}))
    assert plan.value is None  # no new text
    event = Memory(**{**{f: getattr(note, f) for f in note.__struct_fields__}, "type": "event"})
    assert plan_edit(RULES, event, MemoryEdit(text="I live in Oslo")).value is None


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: object) -> Store:
    return open_store("memory") if request.param == "memory" else open_store(f"sqlite://{tmp_path}/loci.db")


def _said(store: Store, text: str, at: datetime, subject: str = "ent:sam") -> list[str]:
    plan = plan_turn(RULES, text, org_id=ORG, entity_id=subject.removeprefix("ent:"), timestamp=at, now=at,
                     store_turn="none", subject=subject)  # fmt: skip
    return [o.memory_id or "" for o in commit_turn(store, plan, now=at).outcomes]


def _edit(store: Store, memory_id: str, text: str) -> Memory:
    memories = MemoryService(store, clock=lambda: T3 + timedelta(days=1))
    plan = plan_edit(RULES, memories.get(ORG, memory_id), MemoryEdit(text=text))
    return commit_edit(memories, ORG, memory_id, plan)


def _get(store: Store, memory_id: str) -> Memory:
    m = store.get_memory(ORG, memory_id)
    assert m is not None
    return m


def test_an_edit_keeps_the_facts_validity_and_moves_its_value(store: Store) -> None:
    (boston,) = _said(store, "I live in Boston.", T1)
    edited = _edit(store, boston, "User lives in Chicago")
    assert (edited.object, edited.valid_from, edited.valid_to, edited.status) == (
        "ent:chicago",
        T1,
        None,
        "active",
    )
    assert edited.metadata["object_name"] == "Chicago"
    (again,) = _said(store, "I live in Boston.", T2)
    assert again != boston and _get(store, boston).valid_to == T2


def test_an_edit_to_another_value_drops_the_times_the_old_one_was_said(store: Store) -> None:
    """Boston said in March and again in April, then edited to Chicago: Chicago was never said in April,
    so a value dated between ends Chicago for good, not until April."""
    (boston,) = _said(store, "I live in Boston.", T1)
    _said(store, "I live in Boston.", T2)
    assert _get(store, boston).provenance["restated_at"] == [T2.isoformat().replace("+00:00", "Z")]
    edited = _edit(store, boston, "User lives in Chicago")
    assert "restated_at" not in edited.provenance
    (denver,) = _said(store, "I live in Denver.", T1 + timedelta(days=10))
    rows = store.find_by_key(ORG, "default", edited.keys[0] if edited.keys else "")
    current = [m for m in rows if m.status == "active" and m.valid_to is None]
    assert [m.memory_id for m in current] == [denver]


def test_editing_a_history_value_away_closes_the_gap(store: Store) -> None:
    (paris,) = _said(store, "I live in Paris.", T1)
    (berlin,) = _said(store, "I moved to Berlin.", T2)
    (rome,) = _said(store, "I moved to Rome.", T3)
    _edit(store, berlin, "User works at Globex")
    # Paris held until Rome was said; Rome stays the current value
    assert (_get(store, paris).status, _get(store, paris).valid_to) == ("superseded", T3)
    assert _get(store, rome).status == "active"
    reasons = [e.data.get("reason") for _, e in store.list_events(ORG, EventQuery(memory_id=paris))]
    assert reasons[-1] == "reinstated"


def test_a_negation_ended_value_is_not_reinstated(store: Store) -> None:
    (paris,) = _said(store, "I live in Paris.", T1)
    _said(store, "I no longer live in Paris.", T2)
    (lisbon,) = _said(store, "I live in Lisbon.", T3)
    _edit(store, lisbon, "Prefers window seats")
    assert _get(store, paris).status == "superseded"  # the negation ended it, not the edited fact


def _concurrently(*writes: Callable[[], object]) -> list[BaseException]:
    """Run the writes in threads released together; the exceptions they raised."""
    start = threading.Barrier(len(writes))
    failures: list[BaseException] = []

    def run(write: Callable[[], object]) -> None:
        try:
            start.wait(10)
            write()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in writes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return failures


@pytest.mark.integration
def test_an_edit_racing_an_add_of_its_key_leaves_one_current_value(postgres_store: Store) -> None:
    """Two server threads on one PostgreSQL database: whichever commits first, the key ends with one
    current value and neither write fails (the edit takes the key's lock before the row's)."""
    store, memories = postgres_store, MemoryService(postgres_store)
    for n, city in enumerate(["Denver", "Chicago"] * 4):
        subject = f"ent:u{n}"
        (boston,) = _said(store, "I live in Boston.", T1, subject)
        plan = plan_edit(RULES, memories.get(ORG, boston), MemoryEdit(text="User lives in Chicago"))
        failures = _concurrently(
            partial(commit_edit, memories, ORG, boston, plan),
            partial(_said, store, f"I live in {city}.", T2, subject),
        )
        assert failures == []
        rows = store.find_by_key(ORG, "default", f"{subject}|lives_in")
        assert [m.metadata["object_name"] for m in rows if m.status == "active" and m.valid_to is None] == [
            city
        ]


SAID = ["I live in Paris.", "I moved to Rome.", "I live in Oslo.", "I work at Acme.", "I work at Globex.",
        "I love jazz.", "I'm vegan."]  # fmt: skip
EDITS = ["User lives in Paris", "User lives in Lima", "User works at Acme", "User works at Initech",
         "User likes jazz", "User is vegetarian", "Prefers window seats", "User no longer lives in Oslo"]  # fmt: skip


def _one_value_per_key(store: Store) -> None:
    """Every single-valued key holds at most one current value, or only disputed, different ones."""
    facts = [m for m in store.list_memories(ORG, ListQuery(limit=1000)) if m.keys]
    for key in {k for m in facts for k in m.keys or []}:
        if not is_single_valued(key.split("|", 1)[1]):
            continue
        current = [m for m in facts if key in (m.keys or []) and m.status in ("active", "disputed")
                   and m.valid_to is None]  # fmt: skip
        if len(current) > 1:
            assert all(m.status == "disputed" for m in current), (key, current)
            assert not any(same_value(a, b) for i, a in enumerate(current) for b in current[i + 1 :])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 100)), min_size=1, max_size=12))
def test_adds_and_edits_in_any_order_keep_one_current_value_per_key(steps: list[tuple[bool, int]]) -> None:
    store = open_store("memory")
    ids: list[str] = []
    for n, (edit, pick) in enumerate(steps):
        if edit and ids:
            _edit(store, ids[pick % len(ids)], EDITS[pick % len(EDITS)])
        else:
            ids += [i for i in _said(store, SAID[pick % len(SAID)], T1 + timedelta(days=n)) if i]
        _one_value_per_key(store)
