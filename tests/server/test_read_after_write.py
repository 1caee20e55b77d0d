"""Read-after-write as a property (issue 28): random request sequences over every write door and
every read, on a fresh server, against a plain model (tests/server/rw_machine.py, rw_model.py). On
the in-memory store, SQLite, and PostgreSQL with two workers (written on one, read on the other)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from litestar import Litestar
from litestar.testing import TestClient

from tests.server.rw_machine import machine_for
from tests.server.test_agent_loop import assemble, current_facts


def run(store: str, *, examples: int, steps: int, deep: bool = False) -> None:
    """`examples` fresh servers, each driven through up to `steps` requests; the same sequences every
    run, unless `deep` (new ones each time, and a failure prints the blob that replays it)."""
    run_state_machine_as_test(
        machine_for(store),
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=not deep,
            database=None,
            print_blob=deep,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_read_after_write_in_memory() -> None:
    run("memory", examples=25, steps=40)


def test_read_after_write_sqlite() -> None:
    run("sqlite", examples=12, steps=30)


@pytest.mark.integration
def test_read_after_write_postgres_two_workers() -> None:
    run("postgres", examples=6, steps=30)


DEEP = int(os.environ.get("LOCI_RW_DEEP", "0"))


@pytest.mark.slow
@pytest.mark.skipif(not DEEP, reason="the deeper run: LOCI_RW_DEEP=<examples per store>, e.g. 200")
@pytest.mark.parametrize(
    "store", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def test_read_after_write_deep(store: str) -> None:
    run(store, examples=DEEP, steps=50, deep=True)


# --- what the property found: each a plain reproduction, on every store ---------------------------------
def facts_of(client: TestClient[Litestar], headers: dict[str, str]) -> dict[str, Any]:
    """The org's facts by text."""
    listed = client.get("/v0/memories", params={"type": "fact"}, headers=headers).json()["items"]
    return {m["text"]: m for m in listed}


def test_a_value_stated_for_a_time_another_already_holds_is_disputed(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris from January, Rome from June, then Lisbon also from January: Paris and Lisbon both held
    from January to June, neither marked disputed (a tie with a current value disputes both)."""
    assemble(client, auth, "ent:tom", "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    assemble(client, auth, "ent:tom", "I live in Rome.", as_of="2024-06-10T00:00:00Z")
    assemble(client, auth, "ent:tom", "I live in Lisbon.", as_of="2024-01-10T00:00:00Z")
    facts = facts_of(client, auth)
    paris, lisbon = facts["User lives in Paris"], facts["User lives in Lisbon"]
    assert (paris["status"], lisbon["status"]) == ("disputed", "disputed")
    assert paris["valid_to"] == lisbon["valid_to"] == facts["User lives in Rome"]["valid_from"]
    assert facts["User lives in Rome"]["status"] == "active"


def test_a_past_value_back_from_the_archive_ends_what_began_before_it(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris from January and Rome from June; Paris archived; Lisbon from the year before (history up
    to Rome, as Paris was not there); Paris back: Lisbon must end when Paris began, not hold with it."""
    paris = assemble(client, auth, "ent:tom", "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    paris_id = paris["extracted"]["upserts"][1]["memory_id"]
    assemble(client, auth, "ent:tom", "I live in Rome.", as_of="2024-06-10T00:00:00Z")
    assert client.patch(f"/v0/memories/{paris_id}", json={"archived": True}, headers=auth).status_code == 200
    assemble(client, auth, "ent:tom", "I live in Lisbon.", as_of="2023-06-01T00:00:00Z")
    back = client.patch(f"/v0/memories/{paris_id}", json={"archived": False}, headers=auth).json()
    assert (back["status"], back["valid_to"]) == ("superseded", "2024-06-10T00:00:00Z")
    facts = facts_of(client, auth)
    assert facts["User lives in Lisbon"]["valid_to"] == "2024-01-10T00:00:00Z"
    then = current_facts(client, auth, "ent:tom", as_of="2024-03-01T00:00:00Z")
    assert [line for line in then if "lives in" in line] == [
        "User lives in Paris (since 2024-01-10)"
    ]  # Rome: June


def test_a_value_back_from_the_archive_with_its_twin_stated_later_ends_at_the_next_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Rome from January, archived; Paris from March, Rome again from June; Rome of January back. It is
    history up to the next value, Paris in March, not up to the later Rome (it held beside Paris from
    March to June); and a value holding when it began ends then, as for any value placed there."""
    rome = assemble(client, auth, "ent:tom", "I live in Rome.", as_of="2024-01-10T00:00:00Z")
    rome_id = rome["extracted"]["upserts"][1]["memory_id"]
    assert client.patch(f"/v0/memories/{rome_id}", json={"archived": True}, headers=auth).status_code == 200
    assemble(client, auth, "ent:tom", "I live in Paris.", as_of="2024-03-10T00:00:00Z")
    assemble(client, auth, "ent:tom", "I live in Rome.", as_of="2024-06-10T00:00:00Z")
    back = client.patch(f"/v0/memories/{rome_id}", json={"archived": False}, headers=auth).json()
    assert (back["status"], back["valid_to"]) == ("superseded", "2024-03-10T00:00:00Z")
    then = current_facts(client, auth, "ent:tom", as_of="2024-04-01T00:00:00Z")
    assert [line for line in then if "lives in" in line] == ["User lives in Paris (since 2024-03-10)"]

    lisbon = assemble(client, auth, "ent:ann", "I live in Lisbon.", as_of="2024-02-10T00:00:00Z")
    lisbon_id = lisbon["extracted"]["upserts"][1]["memory_id"]
    assert client.patch(f"/v0/memories/{lisbon_id}", json={"archived": True}, headers=auth).status_code == 200
    assemble(client, auth, "ent:ann", "I live in Oslo.", as_of="2024-01-10T00:00:00Z")
    assemble(client, auth, "ent:ann", "I live in Lisbon.", as_of="2024-06-10T00:00:00Z")
    client.patch(f"/v0/memories/{lisbon_id}", json={"archived": False}, headers=auth)
    oslo = next(m for m in client.get("/v0/memories", params={"type": "fact"}, headers=auth).json()["items"]
                if m["text"] == "User lives in Oslo")  # fmt: skip
    assert oslo["valid_to"] == "2024-02-10T00:00:00Z"
    then = current_facts(client, auth, "ent:ann", as_of="2024-03-01T00:00:00Z")
    assert [line for line in then if "lives in" in line] == ["User lives in Lisbon (since 2024-02-10)"]


def test_a_tie_the_next_value_ends_stays_disputed_in_its_history(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Lisbon, then Paris at the same time (a tie: both disputed) and Rome a moment later in the same
    turn: Rome ends both, and the two stay marked disputed, so a read as of that time shows a marked
    disagreement, not two plain values of one key."""
    at = "2025-03-01T00:00:00Z"
    assemble(client, auth, "ent:tom", "I live in Lisbon.", as_of=at)
    assemble(client, auth, "ent:tom", "I live in Paris. Actually, I moved to Rome.", as_of=at)
    facts = facts_of(client, auth)
    rome = facts["User lives in Rome"]
    for city in ("Lisbon", "Paris"):
        tied = facts[f"User lives in {city}"]
        assert (tied["status"], tied["valid_to"]) == ("disputed", rome["valid_from"]), city
    then = current_facts(client, auth, "ent:tom", as_of=at)
    assert sorted(line for line in then if "lives in" in line) == [
        "User lives in Lisbon (disputed) (since 2025-03-01)",
        "User lives in Paris (disputed) (since 2025-03-01)",
    ]
    assert [line for line in current_facts(client, auth, "ent:tom") if "lives in" in line] == [
        "User lives in Rome (since 2025-03-01)"
    ]


def test_a_negation_of_one_disputed_value_leaves_the_other_the_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris and Lisbon from one time (disputed), then "I don't live in Paris anymore": Lisbon is the
    value again, as when Paris is archived or edited away, not a dispute with nothing."""
    at = "2025-03-01T00:00:00Z"
    assemble(client, auth, "ent:tom", "I live in Paris.", as_of=at)
    assemble(client, auth, "ent:tom", "I live in Lisbon.", as_of=at)
    assemble(client, auth, "ent:tom", "I don't live in Paris anymore.", as_of="2025-04-01T00:00:00Z")
    facts = facts_of(client, auth)
    assert (facts["User lives in Lisbon"]["status"], facts["User lives in Lisbon"]["valid_to"]) == (
        "active",
        None,
    )
    assert facts["User lives in Paris"]["valid_to"] == "2025-04-01T00:00:00Z"
    assert [line for line in current_facts(client, auth, "ent:tom") if "lives in" in line] == [
        "User lives in Lisbon (since 2025-03-01)"
    ]


def test_a_v1_add_of_a_negation_that_ends_nothing_loses_nothing(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    said = [{"role": "user", "content": "I no longer work at Acme."}, {"role": "user", "content": "Noted!"}]
    r = client.post("/v1/memories/", json={"messages": said, "user_id": "sam", "infer": True}, headers=auth)
    assert r.status_code == 200
    assert sorted(item["memory"] for item in r.json()["results"]) == ["I no longer work at Acme.", "Noted!"]
    assert len(client.get("/v0/memories", headers=auth).json()["items"]) == 2
