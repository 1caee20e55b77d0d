"""Supersession: the pure decision (`resolve`) on hand-made facts, then `apply` against both stores,
and concurrent writers on one key."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import UnknownName
from engine.models import Memory
from engine.storage import open_store
from engine.storage.base import EventQuery, ListQuery, Store
from engine.write.supersession import RESTATED_MAX, apply, reconcile, resolve, restated_times, same_value
from tests.factories import memory

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
ORG = "org_a"


def fact(
    predicate: str,
    obj: Any,
    *,
    at: datetime = T0,
    unit: str | None = None,
    confidence: float | None = 0.8,
    status: str = "active",
    valid_to: datetime | None = None,
    subject: str = "ent:user",
    keys: list[str] | None = None,
) -> Memory:
    return memory(
        org_id=ORG, type="fact", text=f"{subject} {predicate} {obj}", at=at,
        subject=subject, predicate=predicate, object=obj, unit=unit,
        keys=keys if keys is not None else [f"{subject}|{predicate}"], valid_from=at, valid_to=valid_to,
        confidence=confidence, status=status,
    )  # fmt: skip


def by_id(writes: list[Memory]) -> dict[str, Memory]:
    return {m.memory_id: m for m in writes}


# --- value equality --------------------------------------------------------------------------------
def test_same_value_normalizes() -> None:
    assert same_value(fact("likes", "Jazz "), fact("likes", " jazz"))
    assert same_value(fact("likes", "rock  music"), fact("likes", "Rock Music"))
    assert same_value(fact("lives_in", "ent:new-york"), fact("lives_in", "New York"))
    assert same_value(fact("budget", 800, unit="USD"), fact("budget", 800.0, unit="usd"))
    assert not same_value(fact("budget", 800, unit="USD"), fact("budget", 800, unit="EUR"))
    assert not same_value(fact("budget", 800, unit="USD"), fact("budget", 900, unit="USD"))
    assert not same_value(fact("likes", "jazz"), fact("likes", "jazz fusion"))


# --- single-valued ---------------------------------------------------------------------------------
def test_new_value_supersedes_the_active_one() -> None:
    paris = fact("lives_in", "ent:paris", at=T0)
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=30))
    res = resolve(berlin, [paris], now=NOW)
    assert res.outcome.action == "SUPERSEDED"
    assert res.outcome.memory_id == berlin.memory_id
    assert res.outcome.supersedes == [paris.memory_id]
    writes = by_id(res.writes)
    assert writes[berlin.memory_id].status == "active"
    assert writes[paris.memory_id].status == "superseded"
    assert writes[paris.memory_id].valid_to == T0 + timedelta(days=30)
    assert writes[paris.memory_id].updated_at == NOW
    assert [e.type for e in res.events] == ["memory.created", "memory.superseded"]
    assert res.events[1].data["superseded_by"] == berlin.memory_id


def test_a_value_in_the_first_person_equals_its_third_person_form() -> None:
    """The rule extractor writes a fact about the speaker in the third person; a value stored before it
    did is the same value, so saying it again adds no second like or goal."""
    assert same_value(
        fact("likes", "camping trips with my fam"), fact("likes", "camping trips with their fam")
    )
    assert same_value(fact("goal", "make sure I am ready"), fact("goal", "make sure they are ready"))
    assert same_value(fact("goal", "push myself"), fact("goal", "push themselves"))
    assert not same_value(fact("goal", "make sure I am ready"), fact("goal", "make sure we are ready"))
    assert same_value(fact("favorite_movie", "Matrix"), fact("favorite_movie", "The Matrix"))
    assert not same_value(fact("likes", "the"), fact("likes", "a"))
    old = fact("likes", "camping trips with my fam")
    res = resolve(fact("likes", "camping trips with their fam", at=T0 + timedelta(days=1)), [old], now=NOW)
    assert res.outcome.action == "SKIPPED" and res.outcome.memory_id == old.memory_id


def test_same_value_is_skipped_and_confidence_rises() -> None:
    old = fact("lives_in", "ent:berlin", confidence=0.6)
    again = fact("lives_in", "ent:Berlin", at=T0 + timedelta(days=1), confidence=0.9)
    res = resolve(again, [old], now=NOW)
    assert res.outcome.action == "SKIPPED" and res.outcome.memory_id == old.memory_id
    assert [m.memory_id for m in res.writes] == [old.memory_id]  # no new row, the old one re-put
    assert res.writes[0].confidence == 0.9 and res.writes[0].status == "active"
    assert [e.type for e in res.events] == ["memory.updated"]


def test_same_value_with_lower_confidence_writes_nothing() -> None:
    old = fact("age", 34, unit="years", confidence=0.9)
    res = resolve(fact("age", 34, unit="years", confidence=0.5), [old], now=NOW)
    assert res.outcome.action == "SKIPPED" and res.writes == [] and res.events == []


def test_an_older_fact_is_stored_as_history() -> None:
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=30))
    paris = fact("lives_in", "ent:paris", at=T0)  # arrives late, dated earlier
    res = resolve(paris, [berlin], now=NOW)
    assert res.outcome.action == "UPSERTED" and res.outcome.history and res.outcome.supersedes == []
    (stored,) = res.writes
    assert stored.memory_id == paris.memory_id
    assert stored.status == "superseded" and stored.valid_to == berlin.valid_from
    # the value that ends it is named, so that value leaving gives it back (`reinstate`)
    assert res.events[0].data["superseded_by"] == berlin.memory_id


def test_an_older_fact_that_expires_before_the_next_value_keeps_its_own_end() -> None:
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=30))
    paris = fact("lives_in", "ent:paris", at=T0, valid_to=T0 + timedelta(days=10))
    res = resolve(paris, [berlin], now=NOW)
    (stored,) = res.writes
    assert stored.valid_to == T0 + timedelta(days=10) and "superseded_by" not in res.events[0].data
    # back from the archive, it keeps its own end (ending a value held when it began), and names no
    # value as what ended it
    lisbon = fact("lives_in", "ent:lisbon", at=T0 - timedelta(days=300))
    back = reconcile(stored, [stored, berlin, lisbon], now=NOW)
    assert [(m.memory_id, m.valid_to) for m in back.writes] == [
        (paris.memory_id, stored.valid_to),
        (lisbon.memory_id, T0),
    ]
    assert "superseded_by" not in back.events[0].data


def test_a_late_fact_ends_when_the_next_value_began_even_if_that_one_ended_since() -> None:
    """Paris (Jan) was superseded by Berlin (Jun); Madrid, dated the year before, holds until Paris."""
    jan, jun = T0 + timedelta(days=10), T0 + timedelta(days=160)
    paris = fact("lives_in", "ent:paris", at=jan, status="superseded", valid_to=jun)
    berlin = fact("lives_in", "ent:berlin", at=jun)
    madrid = fact("lives_in", "ent:madrid", at=T0 - timedelta(days=200))
    res = resolve(madrid, [paris, berlin], now=NOW)
    assert res.outcome.history and res.outcome.action == "UPSERTED"
    assert [(m.memory_id, m.valid_to) for m in res.writes] == [(madrid.memory_id, jan)]


def test_a_late_fact_inside_an_interval_splits_it() -> None:
    """Madrid dated between Paris (Jan) and Berlin (Jun): Paris ends at Madrid, Madrid at Berlin."""
    jan, mar, jun = T0 + timedelta(days=10), T0 + timedelta(days=70), T0 + timedelta(days=160)
    paris = fact("lives_in", "ent:paris", at=jan, status="superseded", valid_to=jun)
    berlin = fact("lives_in", "ent:berlin", at=jun)
    res = resolve(fact("lives_in", "ent:madrid", at=mar), [paris, berlin], now=NOW)
    assert (
        res.outcome.history
        and res.outcome.action == "SUPERSEDED"
        and res.outcome.supersedes == [paris.memory_id]
    )
    writes = by_id(res.writes)
    assert writes[paris.memory_id].valid_to == mar
    assert [m.valid_to for m in res.writes if m.memory_id not in (paris.memory_id,)] == [jun]


def test_a_new_value_after_a_negation_gap_ends_the_value_it_overlaps() -> None:
    """Paris was ended by a negation in May; Rome said in March ends Paris in March."""
    mar, may = T0 + timedelta(days=70), T0 + timedelta(days=130)
    paris = fact("lives_in", "ent:paris", at=T0, status="superseded", valid_to=may)
    res = resolve(fact("lives_in", "ent:rome", at=mar), [paris], now=NOW)
    assert res.outcome.action == "SUPERSEDED" and by_id(res.writes)[paris.memory_id].valid_to == mar


def test_a_value_said_again_keeps_the_time_and_a_backdated_value_ends_there() -> None:
    """Paris (Jan), Paris again (Jun), then Berlin dated March: Berlin holds from March until June, when
    Paris was said again; Paris holds again from June."""
    jan, mar, jun = T0 + timedelta(days=10), T0 + timedelta(days=70), T0 + timedelta(days=160)
    paris = fact("lives_in", "ent:paris", at=jan)
    again = resolve(fact("lives_in", "ent:paris", at=jun, confidence=0.5), [paris], now=NOW)
    assert again.outcome.action == "SKIPPED" and again.outcome.memory_id == paris.memory_id
    (kept,) = again.writes
    assert (
        kept.provenance["restated_at"] == [jun.isoformat().replace("+00:00", "Z")] and kept.confidence == 0.8
    )
    assert [(e.type, e.data["reason"]) for e in again.events] == [("memory.updated", "restated")]
    assert resolve(fact("lives_in", "ent:paris", at=jun), [kept], now=NOW).writes == []  # known already

    berlin = fact("lives_in", "ent:berlin", at=mar)
    res = resolve(berlin, [kept], now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.supersedes == [paris.memory_id]
    assert res.outcome.history
    writes = by_id(res.writes)
    assert writes[berlin.memory_id].valid_to == jun and writes[berlin.memory_id].status == "superseded"
    ended = writes[paris.memory_id]
    assert ended.valid_to == mar and "restated_at" not in ended.provenance
    (resumed,) = [m for m in res.writes if m.memory_id not in (paris.memory_id, berlin.memory_id)]
    assert (resumed.object, resumed.valid_from, resumed.valid_to, resumed.status) == (
        "ent:paris",
        jun,
        None,
        "active",
    )
    assert resumed.provenance["resumes"] == paris.memory_id
    assert [e.type for e in res.events] == ["memory.created", "memory.superseded", "memory.created"]


def test_a_value_said_before_it_began_begins_then() -> None:
    """Paris (Jun) then Paris dated January: one fact, from January; what held in January ends then."""
    jan, jun = T0 + timedelta(days=10), T0 + timedelta(days=160)
    rome = fact("lives_in", "ent:rome", at=T0, status="superseded", valid_to=jun)
    paris = fact("lives_in", "ent:paris", at=jun)
    res = resolve(fact("lives_in", "ent:paris", at=jan), [rome, paris], now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.memory_id == paris.memory_id
    assert res.outcome.supersedes == [rome.memory_id]
    writes = by_id(res.writes)
    assert set(writes) == {rome.memory_id, paris.memory_id}  # no new row
    assert writes[paris.memory_id].valid_from == jan and writes[paris.memory_id].status == "active"
    assert writes[paris.memory_id].provenance["restated_at"] == [jun.isoformat().replace("+00:00", "Z")]
    assert writes[rome.memory_id].valid_to == jan
    alone = resolve(fact("lives_in", "ent:paris", at=jan), [paris], now=NOW)
    assert alone.outcome.action == "SKIPPED" and alone.writes[0].valid_from == jan


def test_a_value_said_before_another_value_is_history_until_it() -> None:
    """Paris (Jun), Berlin (Mar), then Paris dated January: Paris from January to March, not one fact."""
    jan, mar, jun = T0 + timedelta(days=10), T0 + timedelta(days=70), T0 + timedelta(days=160)
    berlin = fact("lives_in", "ent:berlin", at=mar, status="superseded", valid_to=jun)
    paris = fact("lives_in", "ent:paris", at=jun)
    early = fact("lives_in", "ent:paris", at=jan)
    res = resolve(early, [berlin, paris], now=NOW)
    assert res.outcome.action == "UPSERTED" and res.outcome.memory_id == early.memory_id
    assert [(m.memory_id, m.valid_to) for m in res.writes] == [(early.memory_id, mar)]


def test_a_negation_between_a_value_and_its_restatement_ends_it_until_then() -> None:
    jan, mar, jun = T0 + timedelta(days=10), T0 + timedelta(days=70), T0 + timedelta(days=160)
    paris = fact("lives_in", "ent:paris", at=jan)
    (kept,) = resolve(fact("lives_in", "ent:paris", at=jun), [paris], now=NOW).writes
    res = resolve(fact("lives_in", "ent:paris", at=mar), [kept], negated=True, now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.supersedes == [paris.memory_id]
    ended, resumed = res.writes
    assert ended.valid_to == mar and (resumed.valid_from, resumed.valid_to) == (jun, None)
    assert resumed.status == "active" and resumed.provenance["resumes"] == paris.memory_id


def test_the_sides_of_a_tie_said_again_hold_one_after_the_other_when_a_value_comes_between() -> None:
    """A tie whose sides were each said again (times kept before the tie was known), and a value dated
    between: each side holds again from its own time, the earlier until the later begins."""
    mar, jun, sep = T0 + timedelta(days=60), T0 + timedelta(days=150), T0 + timedelta(days=240)
    sides = [
        msgspec.structs.replace(
            fact("lives_in", city, at=T0, status="disputed"), provenance={"restated_at": [said.isoformat()]}
        )
        for city, said in (("ent:paris", jun), ("ent:rome", sep))
    ]
    res = resolve(fact("lives_in", "ent:lisbon", at=mar), sides, now=NOW)
    again = {m.object: m for m in res.writes if m.provenance.get("resumes")}
    paris, rome = again["ent:paris"], again["ent:rome"]
    assert (paris.valid_from, paris.valid_to, paris.status) == (jun, sep, "superseded")
    assert (rome.valid_from, rome.valid_to, rome.status) == (sep, None, "active")
    lisbon = next(m for m in res.writes if m.object == "ent:lisbon")
    assert (lisbon.status, lisbon.valid_to) == ("superseded", jun)
    created = {e.memory_id: e.data for e in res.events if e.type == "memory.created"}
    assert created[paris.memory_id]["superseded_by"] == rome.memory_id  # so Rome leaving gives it back


def test_restatements_kept_are_the_newest() -> None:
    paris = fact("lives_in", "ent:paris", at=T0)
    for day in range(1, RESTATED_MAX + 10):
        (paris,) = resolve(
            fact("lives_in", "ent:paris", at=T0 + timedelta(days=day)), [paris], now=NOW
        ).writes
    kept = restated_times(paris)
    assert len(kept) == RESTATED_MAX and kept[-1] == T0 + timedelta(days=RESTATED_MAX + 9)
    odd = msgspec.structs.replace(paris, provenance={"restated_at": ["not a time", 3, "2026-02-01T00:00:00"]})
    assert restated_times(odd) == [datetime(2026, 2, 1, tzinfo=UTC)]


CITIES = ("ent:paris", "ent:berlin", "ent:rome")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(CITIES), st.integers(0, 40)),
        min_size=1,
        max_size=7,
        unique_by=lambda s: s[1],
    ),
    st.randoms(use_true_random=False),
)
def test_values_arriving_in_any_order_give_the_timeline_of_their_times(
    said: list[tuple[str, int]], rng: Any
) -> None:
    """Whatever order a single-valued key's values arrive in, each holds from the time it was said
    until the next different value's, and a value said again is no second fact in a row."""
    arrival = list(said)
    rng.shuffle(arrival)
    rows: dict[str, Memory] = {}
    for city, day in arrival:
        res = resolve(fact("lives_in", city, at=T0 + timedelta(days=day)), list(rows.values()), now=NOW)
        rows.update(by_id(res.writes))
    in_time = sorted(said, key=lambda s: s[1])
    for day in range(-1, 42):
        at = T0 + timedelta(days=day, hours=12)
        expected = [city for city, d in in_time if d <= day][-1:]
        held = [
            m.object for m in rows.values() if m.holds_from <= at and (m.valid_to is None or m.valid_to > at)
        ]
        assert held == expected, (arrival, day)
    runs = sorted(
        (m for m in rows.values() if m.valid_to is None or m.valid_to > m.holds_from),
        key=lambda m: m.holds_from,
    )
    assert all(a.object != b.object for a, b in zip(runs, runs[1:], strict=False))


def test_reconcile_places_a_fact_back_from_the_archive() -> None:
    lisbon = fact("lives_in", "ent:lisbon", at=T0)
    porto = fact("lives_in", "ent:porto", at=T0 + timedelta(days=5))
    back = reconcile(lisbon, [lisbon, porto], now=NOW)
    assert [(m.memory_id, m.status, m.valid_to) for m in back.writes] == [
        (lisbon.memory_id, "superseded", porto.valid_from)
    ]
    assert back.events[0].type == "memory.updated" and back.events[0].data["reason"] == "unarchived"
    newer = reconcile(porto, [lisbon, porto], now=NOW)  # the later one comes back: it supersedes
    assert newer.outcome.supersedes == [lisbon.memory_id]
    assert reconcile(porto, [porto], now=NOW).writes == []  # no rival: nothing to do
    assert reconcile(fact("likes", "jazz"), [fact("likes", "tea")], now=NOW).writes == []  # multi-valued


def test_reconcile_ends_the_earlier_of_two_statements_of_one_value() -> None:
    """The same value held twice is one statement made twice: the earlier ends when the later began,
    whichever of the two comes back."""
    early = fact("lives_in", "ent:lisbon", at=T0)
    late = fact("lives_in", "ent:lisbon", at=T0 + timedelta(days=9))
    back = reconcile(early, [early, late], now=NOW)
    assert [(m.memory_id, m.status, m.valid_to) for m in back.writes] == [
        (early.memory_id, "superseded", late.valid_from)
    ]
    back = reconcile(late, [early, late], now=NOW)
    assert by_id(back.writes)[early.memory_id].valid_to == late.valid_from
    assert back.outcome.supersedes == [early.memory_id]
    likes = reconcile(fact("likes", "tea", at=T0 + timedelta(days=1)), [fact("likes", "tea")], now=NOW)
    assert len(likes.writes) == 2  # a multi-valued key keeps one statement of each value too


def test_reconcile_of_a_past_value_keeps_its_end_and_ends_what_held_when_it_began() -> None:
    jun = T0 + timedelta(days=150)
    paris = fact(
        "lives_in", "ent:paris", status="superseded", valid_to=jun
    )  # Paris T0..June (Rome from June)
    rome = fact("lives_in", "ent:rome", at=jun)
    lisbon = fact("lives_in", "ent:lisbon", at=T0 - timedelta(days=200), status="superseded", valid_to=jun)
    back = reconcile(paris, [paris, rome, lisbon], now=NOW)
    assert back.outcome.supersedes == [lisbon.memory_id]
    writes = by_id(back.writes)
    assert (writes[paris.memory_id].status, writes[paris.memory_id].valid_to) == ("superseded", jun)
    assert writes[lisbon.memory_id].valid_to == T0
    assert reconcile(paris, [paris, rome], now=NOW).writes == []  # nothing began meanwhile: unchanged
    ended = fact("lives_in", "ent:paris", valid_to=jun)  # given an end by PATCH, never superseded
    oslo = fact("lives_in", "ent:oslo", at=T0 + timedelta(days=30))  # began while it was archived
    sooner = by_id(reconcile(ended, [ended, oslo], now=NOW).writes)[ended.memory_id]
    assert (sooner.status, sooner.valid_to) == ("superseded", oslo.valid_from)


def test_equal_time_and_confidence_disputes_both() -> None:
    a = fact("works_at", "ent:acme", confidence=0.8)
    b = fact("works_at", "ent:globex", confidence=0.8)
    res = resolve(b, [a], now=NOW)
    assert res.outcome.action == "UPSERTED" and res.outcome.disputed == [a.memory_id]
    writes = by_id(res.writes)
    assert writes[a.memory_id].status == "disputed" and writes[b.memory_id].status == "disputed"
    # a later value supersedes both disputed facts
    c = fact("works_at", "ent:initech", at=T0 + timedelta(days=1))
    res2 = resolve(c, [writes[a.memory_id], writes[b.memory_id]], now=NOW)
    assert res2.outcome.action == "SUPERSEDED"
    assert sorted(res2.outcome.supersedes) == sorted([a.memory_id, b.memory_id])


def test_a_tie_with_history_disputes_both() -> None:
    """Paris from T0 ended by Rome; Lisbon also from T0: both held from T0 to Rome, so both are disputed
    (a stronger one ends the weaker at T0 instead)."""
    rome_at = T0 + timedelta(days=30)
    paris = fact("lives_in", "ent:paris", status="superseded", valid_to=rome_at)
    rome = fact("lives_in", "ent:rome", at=rome_at)
    res = resolve(fact("lives_in", "ent:lisbon"), [paris, rome], now=NOW)
    lisbon = res.writes[0]
    assert res.outcome.disputed == [paris.memory_id] and res.outcome.history
    assert (lisbon.status, lisbon.valid_to) == ("disputed", rome_at)
    assert by_id(res.writes)[paris.memory_id].status == "disputed"
    weak = resolve(fact("lives_in", "ent:oslo", confidence=0.3), [paris, rome], now=NOW)
    assert weak.writes[0].valid_to == T0 and weak.writes[0].status == "superseded"  # never held
    strong = resolve(fact("lives_in", "ent:oslo", confidence=0.9), [paris, rome], now=NOW)
    assert (
        strong.outcome.supersedes == [paris.memory_id]
        and by_id(strong.writes)[paris.memory_id].valid_to == T0
    )


def test_a_tie_with_history_disputes_both_when_the_later_value_is_its_own() -> None:
    """Paris from day 2 ended Rome (from day 1); Paris said for day 1 too (two clients sending one
    as_of, whose turns arrived in this order): Paris and Rome both held on day 1, as when Paris of day 1
    came first. It was skipped as Paris said again, and Rome alone held on day 1."""
    day = timedelta(days=1)
    paris = fact("lives_in", "ent:paris", at=T0 + 2 * day)
    rome = fact("lives_in", "ent:rome", at=T0 + day, status="superseded", valid_to=T0 + 2 * day)
    res = resolve(fact("lives_in", "ent:paris", at=T0 + day), [paris, rome], now=NOW)
    said = res.writes[0]
    assert res.outcome.action == "UPSERTED" and res.outcome.disputed == [rome.memory_id]
    assert (said.status, said.valid_from, said.valid_to) == ("disputed", T0 + day, T0 + 2 * day)
    assert by_id(res.writes)[rome.memory_id].status == "disputed"
    assert paris.memory_id not in by_id(res.writes)  # Paris still holds from day 2


def test_a_value_said_before_its_side_of_a_tie_began_holds_from_then() -> None:
    """Paris and Rome tied from day 3, then Paris said for day 2 (concurrent turns with their own as_of
    land in any order): Paris holds on day 2, and the tie from day 3. It was skipped as Paris said again,
    and no value held on day 2."""
    day = timedelta(days=1)
    rows: dict[str, Memory] = {}
    for city, at in (("ent:paris", 3), ("ent:rome", 3), ("ent:paris", 2)):
        rows.update(
            by_id(resolve(fact("lives_in", city, at=T0 + at * day), list(rows.values()), now=NOW).writes)
        )

    def held(at: int) -> list[str]:
        t = T0 + at * day + timedelta(hours=12)
        return sorted(
            str(m.object)
            for m in rows.values()
            if m.holds_from <= t and (m.valid_to is None or m.valid_to > t)
        )

    assert (held(2), held(3)) == (["ent:paris"], ["ent:paris", "ent:rome"])


def test_equal_time_higher_confidence_wins_lower_is_history() -> None:
    a = fact("works_at", "ent:acme", confidence=0.6)
    strong = fact("works_at", "ent:globex", confidence=0.9)
    res = resolve(strong, [a], now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.supersedes == [a.memory_id]
    weak = fact("works_at", "ent:initech", confidence=0.3)
    res2 = resolve(weak, [strong], now=NOW)
    assert res2.outcome.action == "UPSERTED" and res2.outcome.history
    assert res2.writes[0].status == "superseded"


def test_replay_of_a_historical_value_is_skipped() -> None:
    paris_old = fact("lives_in", "ent:paris", status="superseded", valid_to=T0 + timedelta(days=30))
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=30))
    replay = fact("lives_in", "ent:paris", at=T0)
    res = resolve(replay, [paris_old, berlin], now=NOW)
    assert (
        res.outcome.action == "SKIPPED" and res.outcome.memory_id == paris_old.memory_id and res.writes == []
    )


def test_moving_back_to_an_old_value_supersedes() -> None:
    paris_old = fact("lives_in", "ent:paris", status="superseded", valid_to=T0 + timedelta(days=30))
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=30))
    back = fact("lives_in", "ent:paris", at=T0 + timedelta(days=90))
    res = resolve(back, [paris_old, berlin], now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.supersedes == [berlin.memory_id]


# --- multi-valued and negation ---------------------------------------------------------------------
def test_multi_valued_accumulates() -> None:
    jazz = fact("likes", "jazz")
    res = resolve(fact("likes", "hiking", at=T0 + timedelta(days=1)), [jazz], now=NOW)
    assert res.outcome.action == "UPSERTED" and res.outcome.supersedes == []
    assert [m.status for m in res.writes] == ["active"]
    assert (
        resolve(fact("likes", "Jazz", at=T0 + timedelta(days=2)), [jazz], now=NOW).outcome.action == "SKIPPED"
    )


def test_negation_ends_the_matching_value_only() -> None:
    jazz, hiking = fact("likes", "jazz"), fact("likes", "hiking")
    neg = fact("likes", "hiking", at=T0 + timedelta(days=3))
    res = resolve(neg, [jazz, hiking], negated=True, now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.negation
    assert res.outcome.memory_id is None and res.outcome.supersedes == [hiking.memory_id]
    (ended,) = res.writes  # nothing new is stored
    assert ended.status == "superseded" and ended.valid_to == T0 + timedelta(days=3)
    assert res.events[0].data["reason"] == "negation"


def test_a_negation_of_a_kind_ends_the_values_of_that_kind() -> None:
    """ "I no longer have a cat" ends "cat named Tom" (has_pet and owns name a kind first); "jazz" is no
    kind of "jazz fusion" (likes does not)."""
    tom, luna, rex = (
        fact("has_pet", "cat named Tom"),
        fact("has_pet", "cat named Luna"),
        fact("has_pet", "dog named Rex"),
    )
    res = resolve(fact("has_pet", "cat", at=T0 + timedelta(days=1)), [tom, luna, rex], negated=True, now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.supersedes == [tom.memory_id, luna.memory_id]
    tesla = fact("owns", "Tesla Model 3")
    assert resolve(fact("owns", "Tesla", at=T0 + timedelta(days=1)), [tesla], negated=True,
                   now=NOW).outcome.supersedes == [tesla.memory_id]  # fmt: skip
    fusion = fact("likes", "jazz fusion")
    res = resolve(fact("likes", "jazz", at=T0 + timedelta(days=1)), [fusion], negated=True, now=NOW)
    assert res.outcome.action == "SKIPPED"
    # a thing named without its qualifier, a name by its first words
    dales, greenfield = (
        fact("likes", "hiking in the Dales"),
        fact("works_at", "ent:greenfield-animal-hospital"),
    )
    res = resolve(fact("likes", "hiking", at=T0 + timedelta(days=1)), [dales], negated=True, now=NOW)
    assert res.outcome.supersedes == [dales.memory_id]
    res = resolve(
        fact("works_at", "ent:greenfield", at=T0 + timedelta(days=1)), [greenfield], negated=True, now=NOW
    )
    assert res.outcome.supersedes == [greenfield.memory_id]


def test_a_stance_ends_its_contrary() -> None:
    """A dislike of jazz ends the like of jazz that held before it, and the other way round; a like
    dated before a dislike of the same thing is history ending there; other values are untouched."""
    like, hiking = fact("likes", "jazz"), fact("likes", "hiking")
    later = T0 + timedelta(days=3)
    res = resolve(fact("dislikes", "Jazz", at=later), [], contrary=[like, hiking], now=NOW)
    assert res.outcome.action == "SUPERSEDED" and res.outcome.supersedes == [like.memory_id]
    stored, ended = res.writes
    assert stored.status == "active" and (ended.status, ended.valid_to) == ("superseded", later)
    dislike = fact("dislikes", "olives", at=later)
    res = resolve(fact("likes", "olives"), [], contrary=[dislike], now=NOW)
    assert res.outcome.action == "UPSERTED" and res.outcome.history
    assert [(m.status, m.valid_to) for m in res.writes] == [("superseded", later)]
    assert res.events[0].data["superseded_by"] == dislike.memory_id  # so the dislike leaving gives it back
    assert resolve(fact("avoids", "meat", at=later), [], contrary=[fact("eats", "meat")],
                   now=NOW).outcome.action == "SUPERSEDED"  # fmt: skip


def test_negation_of_a_single_valued_fact() -> None:
    acme = fact("works_at", "ent:acme")
    res = resolve(fact("works_at", "Acme", at=T0 + timedelta(days=1)), [acme], negated=True, now=NOW)
    assert res.outcome.supersedes == [acme.memory_id]


def test_negation_without_a_match_is_skipped() -> None:
    res = resolve(fact("works_at", "ent:globex", at=T0 + timedelta(days=1)), [fact("works_at", "ent:acme")],
                  negated=True, now=NOW)  # fmt: skip
    assert res.outcome.action == "SKIPPED" and res.outcome.memory_id is None and res.writes == []


def test_negation_dated_before_the_fact_does_not_end_it() -> None:
    acme = fact("works_at", "ent:acme", at=T0 + timedelta(days=10))
    res = resolve(fact("works_at", "ent:acme", at=T0), [acme], negated=True, now=NOW)
    assert res.outcome.action == "SKIPPED" and res.writes == []


# --- modes and keys -------------------------------------------------------------------------------
def test_mode_off_stores_without_touching_others() -> None:
    paris = fact("lives_in", "ent:paris")
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=1))
    res = resolve(berlin, [paris], mode="off", now=NOW)
    assert res.outcome.action == "UPSERTED" and [m.memory_id for m in res.writes] == [berlin.memory_id]


def test_unknown_mode() -> None:
    with pytest.raises(UnknownName):
        resolve(fact("likes", "x"), [], mode="always", now=NOW)  # type: ignore[arg-type]


def test_a_memory_without_keys_is_simply_stored() -> None:
    note = msgspec.structs.replace(fact("lives_in", "ent:berlin"), keys=None)
    res = resolve(note, [fact("lives_in", "ent:paris")], now=NOW)
    assert res.outcome.action == "UPSERTED" and res.writes == [note]


def test_a_statement_is_ended_by_a_value_and_is_none_itself() -> None:
    """A turn stored as a fact, keyed by the single-valued facts it said: a later value ends it; it
    never ties with, outlives or makes history of a value."""
    said = msgspec.structs.replace(
        fact("lives_in", None, at=T0), predicate=None, confidence=None, text="I live in Oslo"
    )
    oslo = fact("lives_in", "ent:oslo", at=T0)
    bergen = fact("lives_in", "ent:bergen", at=T0 + timedelta(days=30))
    res = resolve(bergen, [said, oslo], now=NOW)
    assert (res.outcome.action, set(res.outcome.supersedes)) == (
        "SUPERSEDED",
        {said.memory_id, oslo.memory_id},
    )
    assert by_id(res.writes)[said.memory_id].valid_to == bergen.valid_from
    same_time = resolve(fact("lives_in", "ent:oslo", at=T0), [said], now=NOW)  # its own turn's fact
    assert (same_time.outcome.action, same_time.outcome.disputed, same_time.writes[0].status) == (
        "UPSERTED",
        [],
        "active",
    )
    earlier = resolve(fact("lives_in", "ent:rome", at=T0 - timedelta(days=30)), [said], now=NOW)
    assert earlier.outcome.history is False and earlier.writes[0].valid_to is None
    kept = resolve(fact("lives_in", "ent:oslo", at=T0 + timedelta(days=1)), [said, oslo], now=NOW)
    assert (kept.outcome.action, kept.outcome.memory_id) == ("SKIPPED", oslo.memory_id)


# --- against the stores ---------------------------------------------------------------------------
STORES: dict[str, Callable[[Path], Store]] = {
    "memory": lambda tmp: open_store("memory"),
    "sqlite": lambda tmp: open_store(f"sqlite://{tmp / 'loci.db'}"),
}


@pytest.fixture(params=list(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = STORES[request.param](tmp_path)
    yield s
    s.close()


def test_paris_then_berlin_in_a_store(store: Store) -> None:
    paris = fact("lives_in", "ent:paris", at=T0)
    berlin = fact("lives_in", "ent:berlin", at=T0 + timedelta(days=30))
    assert apply(store, paris, now=NOW).action == "UPSERTED"
    outcome = apply(store, berlin, now=NOW)
    assert outcome.action == "SUPERSEDED" and outcome.supersedes == [paris.memory_id]
    rows = {m.memory_id: m for m in store.find_by_key(ORG, "default", "ent:user|lives_in")}
    assert rows[berlin.memory_id].status == "active"
    assert (
        rows[paris.memory_id].status == "superseded" and rows[paris.memory_id].valid_to == berlin.valid_from
    )
    events = [e.type for _, e in store.list_events(ORG, EventQuery())]
    assert events == ["memory.created", "memory.created", "memory.superseded"]
    active = store.list_memories(ORG, ListQuery(statuses=("active",)))
    assert [m.memory_id for m in active] == [berlin.memory_id]


def test_a_dislike_ends_the_like_in_a_store(store: Store) -> None:
    like = fact("likes", "jazz", at=T0)
    apply(store, like, now=NOW)
    apply(store, fact("likes", "jazz", at=T0, subject="ent:anna"), now=NOW)  # another subject's like stays
    dislike = fact("dislikes", "jazz", at=T0 + timedelta(days=1))
    outcome = apply(store, dislike, now=NOW)
    assert outcome.action == "SUPERSEDED" and outcome.supersedes == [like.memory_id]
    active = store.list_memories(ORG, ListQuery(statuses=("active",)))
    assert sorted(m.text for m in active) == ["ent:anna likes jazz", "ent:user dislikes jazz"]


def test_apply_joins_the_callers_transaction(store: Store) -> None:
    paris = fact("lives_in", "ent:paris", at=T0)
    apply(store, paris, now=NOW)
    with pytest.raises(RuntimeError), store.transaction():
        apply(store, fact("lives_in", "ent:berlin", at=T0 + timedelta(days=1)), now=NOW)
        raise RuntimeError("roll back")
    rows = store.find_by_key(ORG, "default", "ent:user|lives_in")
    assert [(m.memory_id, m.status) for m in rows] == [(paris.memory_id, "active")]


class SlowReads:
    """Wraps a store and sleeps inside find_by_key, widening any read-then-write race window."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    def transaction(self) -> AbstractContextManager[None]:
        return self.inner.transaction()

    def find_by_key(self, org_id: str, namespace: str, key: str) -> list[Memory]:
        rows = self.inner.find_by_key(org_id, namespace, key)
        time.sleep(0.002)
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _race(stores: list[Any], writers: int = 8, per_writer: int = 5) -> None:
    times = list(range(writers * per_writer))
    random.Random(7).shuffle(times)
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            barrier.wait()
            for j in range(per_writer):
                t = times[w * per_writer + j]
                apply(
                    stores[w % len(stores)],
                    fact("lives_in", f"ent:city-{t}", at=T0 + timedelta(minutes=t)),
                    now=NOW,
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def _check_one_active(store: Store, total: int) -> None:
    rows = store.find_by_key(ORG, "default", "ent:user|lives_in")
    assert len(rows) == total  # every value kept: the newest active, the rest history
    active = [m for m in rows if m.status == "active"]
    assert [m.object for m in active] == [f"ent:city-{total - 1}"]
    assert all(m.status == "superseded" and m.valid_to is not None for m in rows if m not in active)


def test_concurrent_writers_leave_exactly_one_active(store: Store) -> None:
    _race([SlowReads(store)])
    _check_one_active(store, 40)


def test_concurrent_writers_on_two_sqlite_connections(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a, b = open_store(f"sqlite://{path}"), open_store(f"sqlite://{path}")
    try:
        _race([SlowReads(a), SlowReads(b)])
        _check_one_active(a, 40)
    finally:
        a.close()
        b.close()
