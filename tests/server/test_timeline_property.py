"""One key's values under every way a value comes and goes, over HTTP: turns dated at any of a few
times (values, a correction in one turn, a negation of one value or of any), facts archived, taken
back and deleted. After each step, at every time a value begins and now, the key holds one value, or
a tie (values of one time, marked disputed). The read-after-write machine (`rw_machine`) covers every
door; this drives one key hard, where the timeline rules meet."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, note, settings
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
