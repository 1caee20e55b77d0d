"""One key's values under every way a value comes and goes, over HTTP: turns dated at any of a few
times (values, a correction in one turn, a negation of one value or of any), facts archived, taken
back and deleted. After each step, at every time a value begins and now, the key holds one value, or
a tie (values of one time, marked disputed). The read-after-write machine (`rw_machine`) covers every
door; this drives one key hard, where the timeline rules meet.

Without negations (whose end is kept as given, so their order counts), the key's timeline is a function
of the values in it: after values stated, archived, taken back, deleted and edited in any order, the
live facts (neither archived nor deleted) hold exactly as a timeline recomputed from scratch from their
values and times says (`_from_scratch`): each begins at its time and holds until the next time a value
begins, the last one current, and values of one time tie (disputed)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient

from tests.server.rw_model import Row, value_of

TIMES = [None, "2023-06-01T00:00:00Z", "2024-01-10T00:00:00Z", "2024-06-10T00:00:00Z", "2025-03-01T00:00:00Z"]
TURNS = [
    "I live in Paris.",
    "I live in Rome.",
    "I live in Lisbon.",
    "I live in Paris. Actually, I moved to Rome.",
    "I don't live in Paris anymore.",
    "I don't live there anymore.",
]
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.sampled_from(TURNS), st.sampled_from(TIMES)),
        # archived, a turn told meanwhile, taken back (issue 28's bug 4, at any time)
        st.tuples(st.just("told"), st.integers(0, 5), st.sampled_from(TURNS), st.sampled_from(TIMES)),
        st.tuples(st.sampled_from(["archive", "unarchive", "delete"]), st.integers(0, 5)),
    ),
    min_size=1,
    max_size=12,
)


def _rows(client: TestClient[Litestar], auth: dict[str, str], entity: str) -> list[Row]:
    params: dict[str, str | int] = {"entity_id": entity, "type": "fact", "page_size": 200}
    items = client.get("/v0/memories", params=params, headers=auth).json()["items"]
    return [r for r in msgspec.convert(items, list[Row]) if r.single_key]


def _one_value(rows: list[Row]) -> None:
    live = [r for r in rows if not r.archived]
    now = datetime.now(UTC)
    for t in [*sorted({r.holds_from for r in live}), now]:
        held = [r for r in live if r.valid_at(t) and (t != now or r.current(now))]
        tie = len({r.holds_from for r in held}) == 1 and any(r.status == "disputed" for r in held)
        assert len({value_of(r) for r in held}) <= 1 or tie, (
            t,
            [(r.text, r.status, r.holds_from.isoformat(), r.valid_to) for r in held],
        )


def _from_scratch(rows: list[Row]) -> list[str]:
    """Where the live facts differ from the timeline of their values and times (none: they agree). The
    model knows nothing of the order the values came and went in."""
    live = [r for r in rows if not r.archived]
    starts = sorted({r.holds_from for r in live})
    problems = []
    for n, t in enumerate(starts):
        said = {value_of(r) for r in live if r.holds_from == t}
        end = starts[n + 1] if n + 1 < len(starts) else None
        status = "disputed" if len(said) > 1 else ("active" if end is None else "superseded")
        held = [r for r in live if r.valid_at(t)]
        if {value_of(r) for r in held} != said:
            problems.append(
                f"at {t.isoformat()} holds {sorted(value_of(r) for r in held)}, said {sorted(said)}"
            )
        problems += [
            f"{r.text!r} from {t.isoformat()}: {r.status} to {r.valid_to}, expected {status} to {end}"
            for r in held
            if (r.status, r.valid_to) != (status, end)
        ]
    return problems


CITIES = ["Paris", "Rome", "Berlin"]
DATED = [t for t in TIMES if t is not None]
#: Paris, Rome, Berlin: one after the other
MOVES = [("state", city, t) for city, t in zip(CITIES, DATED[:3], strict=True)]
#: a few values first (the key's history), then anything
VALUE_STEPS = st.tuples(
    st.lists(
        st.tuples(st.just("state"), st.sampled_from(CITIES), st.sampled_from(DATED)), min_size=1, max_size=4
    ),
    st.lists(
        st.one_of(
            st.tuples(st.just("state"), st.sampled_from(CITIES), st.sampled_from(DATED)),
            st.tuples(st.sampled_from(["archive", "unarchive", "delete"]), st.integers(0, 5)),
        ),
        max_size=6,
    ),
).map(lambda both: [*both[0], *both[1]])


def _take(client: TestClient[Litestar], auth: dict[str, str], entity: str, step: tuple[Any, ...]) -> None:
    """One step of `VALUE_STEPS` on `entity`'s facts: a value stated, or a fact (of those the step can
    take: live ones to archive, archived ones to take back, any to delete or edit) archived, taken back,
    deleted or edited to another value."""
    if step[0] == "state":
        note(f"state {step[1]} as of {step[2]}")
        body = {"entity_id": entity, "turn": f"I live in {step[1]}.", "as_of": step[2]}
        r = client.post("/v0/context/assemble", json=body, headers=auth)
        assert r.status_code == 200, r.text
        return
    rows = _rows(client, auth, entity)
    pool = [r for r in rows if step[0] in ("delete", "edit") or r.archived == (step[0] == "unarchive")]
    if not pool:
        return
    picked = pool[step[1] % len(pool)]
    what = f"{picked.text!r} from {picked.holds_from.isoformat()}"
    if step[0] == "delete":
        note(f"delete {what}")
        r = client.delete(f"/v0/memories/{picked.memory_id}", headers=auth)
    elif step[0] == "edit":
        note(f"edit {what} to {step[2]}")
        r = client.put(
            f"/v1/memories/{picked.memory_id}/", json={"text": f"User lives in {step[2]}"}, headers=auth
        )
    else:
        note(f"{step[0]} {what}")
        body = {"archived": step[0] == "archive"}
        r = client.patch(f"/v0/memories/{picked.memory_id}", json=body, headers=auth)
    assert r.status_code == 200, r.text


@pytest.mark.slow
def test_the_timeline_is_the_one_of_the_values_in_it_whatever_the_order(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(steps=VALUE_STEPS)
    # a value taken back after the value that ended it left (the listing shows the latest first)
    @example(steps=[*MOVES, ("archive", 1), ("delete", 0), ("unarchive", 0)])
    @example(steps=[*MOVES, ("archive", 2), ("archive", 1), ("unarchive", 0)])
    @example(steps=[*MOVES, ("archive", 0), ("delete", 1), ("unarchive", 0)])
    # a tie ended by a later value, whose end it keeps when that value leaves
    @example(
        steps=[
            ("state", "Paris", DATED[0]),
            ("state", "Rome", DATED[0]),
            ("state", "Berlin", DATED[1]),
            ("archive", 0),
        ]
    )
    def run(steps: list[Any]) -> None:
        entity = f"ent:{uuid.uuid4().hex[:12]}"
        for step in steps:
            _take(client, auth, entity, step)
        rows = _rows(client, auth, entity)
        note(
            "\n".join(
                f"{r.text!r} {r.status} from {r.holds_from.isoformat()} to {r.valid_to}"
                + (" (archived)" if r.archived else "")
                for r in rows
            )
        )
        assert _from_scratch(rows) == []

    run()


@pytest.mark.slow
def test_one_value_at_a_time_however_values_come_and_go(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(steps=STEPS)
    def run(steps: list[Any]) -> None:
        entity = f"ent:{uuid.uuid4().hex[:12]}"

        def turn(text: str, as_of: str | None) -> None:
            note(f"turn {text!r} as of {as_of}")
            body = {"entity_id": entity, "turn": text, **({"as_of": as_of} if as_of else {})}
            r = client.post("/v0/context/assemble", json=body, headers=auth)
            assert r.status_code == 200, r.text

        def patch(memory_id: str, archived: bool) -> None:
            note(f"{'archive' if archived else 'unarchive'} {memory_id}")
            r = client.patch(f"/v0/memories/{memory_id}", json={"archived": archived}, headers=auth)
            assert r.status_code == 200, r.text

        for step in steps:
            facts = [r.memory_id for r in _rows(client, auth, entity)]
            if step[0] == "turn":
                turn(step[1], step[2])
            elif not facts:
                continue
            elif step[0] == "told":
                picked = facts[step[1] % len(facts)]
                patch(picked, True)
                turn(step[2], step[3])
                patch(picked, False)
            elif step[0] == "delete":
                picked = facts[step[1] % len(facts)]
                note(f"delete {picked}")
                assert client.delete(f"/v0/memories/{picked}", headers=auth).status_code == 200
            else:
                patch(facts[step[1] % len(facts)], step[0] == "archive")
            _one_value(_rows(client, auth, entity))

    run()


# --- the sequences the property found, plainly, on every store ---------------------------------------
JAN, FEB, MAR = "2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"


def _three_moves(client: TestClient[Litestar], auth: dict[str, str], entity: str) -> dict[str, str]:
    """Paris (January), Rome (February), Berlin (March) told through assemble; their fact ids by city."""
    for city, as_of in (("Paris", JAN), ("Rome", FEB), ("Berlin", MAR)):
        body = {"entity_id": entity, "turn": f"I live in {city}.", "as_of": as_of}
        assert client.post("/v0/context/assemble", json=body, headers=auth).status_code == 200
    return {r.text.split()[-1]: r.memory_id for r in _rows(client, auth, entity)}


def _remove(client: TestClient[Litestar], auth: dict[str, str], memory_id: str, how: str) -> None:
    if how == "delete":
        assert client.delete(f"/v0/memories/{memory_id}", headers=auth).status_code == 200
    else:
        r = client.patch(f"/v0/memories/{memory_id}", json={"archived": True}, headers=auth)
        assert r.status_code == 200, r.text


def _archived(client: TestClient[Litestar], auth: dict[str, str], memory_id: str, archived: bool) -> None:
    r = client.patch(f"/v0/memories/{memory_id}", json={"archived": archived}, headers=auth)
    assert r.status_code == 200, r.text


def _live(
    client: TestClient[Litestar], auth: dict[str, str], entity: str
) -> list[tuple[str, str, str | None]]:
    """(city, status, end) of the live facts, by start."""
    rows = sorted((r for r in _rows(client, auth, entity) if not r.archived), key=lambda r: r.holds_from)
    return [(r.text.split()[-1], r.status, r.valid_to.isoformat() if r.valid_to else None) for r in rows]


def _facts_at(
    client: TestClient[Litestar], auth: dict[str, str], entity: str, as_of: str | None
) -> list[str]:
    body: dict[str, Any] = {"entity_id": entity, "turn": "Where do I live?"}
    body["ingest"] = {"extract": False, "store_turn": "none"}
    if as_of is not None:
        body["as_of"] = as_of
    r = client.post("/v0/context/assemble", json=body, headers=auth)
    assert r.status_code == 200, r.text
    return [f for f in r.json()["context"]["facts"] if "lives in" in f]


@pytest.mark.parametrize("how", ["delete", "archive"])
def test_a_value_taken_back_after_the_value_that_ended_it_left_is_current(
    client: TestClient[Litestar], auth: dict[str, str], how: str
) -> None:
    """Archive Rome, remove Berlin, take Rome back: as if Berlin had been removed first, Rome is current
    (it had kept Berlin's start as its end, so no value was current)."""
    entity = f"ent:{uuid.uuid4().hex[:12]}"
    ids = _three_moves(client, auth, entity)
    _archived(client, auth, ids["Rome"], True)
    _remove(client, auth, ids["Berlin"], how)
    _archived(client, auth, ids["Rome"], False)
    assert _live(client, auth, entity) == [
        ("Paris", "superseded", "2025-02-01T00:00:00+00:00"),
        ("Rome", "active", None),
    ]
    assert (
        len(_facts_at(client, auth, entity, None)) == 1 and "Rome" in _facts_at(client, auth, entity, None)[0]
    )
    assert "Rome" in _facts_at(client, auth, entity, "2025-04-15T00:00:00Z")[0]


@pytest.mark.parametrize("how", ["delete", "archive"])
def test_a_value_taken_back_after_the_value_that_ended_it_left_holds_until_the_next(
    client: TestClient[Litestar], auth: dict[str, str], how: str
) -> None:
    """Archive Paris, remove Rome, take Paris back: Paris holds until Berlin (it had kept Rome's start as
    its end, so a read as of mid-February found nothing)."""
    entity = f"ent:{uuid.uuid4().hex[:12]}"
    ids = _three_moves(client, auth, entity)
    _archived(client, auth, ids["Paris"], True)
    _remove(client, auth, ids["Rome"], how)
    _archived(client, auth, ids["Paris"], False)
    assert _live(client, auth, entity) == [
        ("Paris", "superseded", "2025-03-01T00:00:00+00:00"),
        ("Berlin", "active", None),
    ]
    (february,) = _facts_at(client, auth, entity, "2025-02-15T00:00:00Z")
    assert "Paris" in february


def test_a_tie_a_later_value_ended_is_current_again_when_that_value_leaves(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris and Rome both in January (a tie), Berlin in March, Berlin archived: the tie holds again."""
    entity = f"ent:{uuid.uuid4().hex[:12]}"
    for city, as_of in (("Paris", JAN), ("Rome", JAN), ("Berlin", MAR)):
        body = {"entity_id": entity, "turn": f"I live in {city}.", "as_of": as_of}
        assert client.post("/v0/context/assemble", json=body, headers=auth).status_code == 200
    berlin = next(r.memory_id for r in _rows(client, auth, entity) if "Berlin" in r.text)
    _archived(client, auth, berlin, True)
    assert sorted(_live(client, auth, entity)) == [("Paris", "disputed", None), ("Rome", "disputed", None)]
