"""engine.write.batch_upsert: item checks (naming items[i].field), item -> Memory, ordering within a batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.errors import InvalidInput
from engine.models import Memory
from engine.write.batch_upsert import UpsertItem, build_memories, entity_name

NOW = datetime(2025, 5, 1, tzinfo=UTC)


def build(*items: UpsertItem) -> list[Memory]:
    return build_memories(items, org_id="o", agent_id="agent", now=NOW)


def test_fact_from_object_num_renders_text_and_key() -> None:
    (m,) = build(UpsertItem(subject="ent:user", predicate="Budget", object_num=800, unit="USD"))
    assert (m.predicate, m.object, m.object_type, m.unit) == ("budget", 800, "number", "USD")
    assert m.keys == ["ent:user|budget"] and m.entity_id == "ent:user" and m.agent_id == "agent"
    assert "800 USD" in m.text and m.valid_from == NOW and m.timestamp == NOW


def test_entity_object_and_given_text() -> None:
    (a, b) = build(
        UpsertItem(subject="ent:anna", predicate="lives in", object_text="ent:new-york"),
        UpsertItem(type="note", text="hello", entity_id="ent:anna"),
    )
    assert a.text == "Anna lives in New York" and a.object_type == "entity" and a.predicate == "lives_in"
    assert b.type == "note" and b.text == "hello" and b.keys is None and b.valid_from is None
    assert entity_name("ent:user") == "User"


def test_repeated_key_is_ordered_unless_dated() -> None:
    a, b, c = build(
        UpsertItem(subject="ent:user", predicate="lives_in", object_text="ent:paris"),
        UpsertItem(subject="ent:user", predicate="lives_in", object_text="ent:berlin"),
        UpsertItem(subject="ent:user", predicate="lives_in", object_text="ent:rome", valid_from=NOW),
    )
    assert a.valid_from == NOW and b.valid_from == NOW + timedelta(microseconds=1) and c.valid_from == NOW


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (UpsertItem(predicate="likes", object_text="x"), "items[1].subject"),
        (UpsertItem(subject="ent:u", object_text="x"), "items[1].predicate"),
        (UpsertItem(subject="ent:u", predicate="likes"), "items[1].object_text"),
        (
            UpsertItem(subject="ent:u", predicate="likes", object_text="x", object_num=2),
            "items[1].object_num",
        ),
        (UpsertItem(type="event"), "items[1].text"),
        (
            UpsertItem(type="note", text="x", valid_from=NOW, valid_to=NOW - timedelta(days=1)),
            "items[1].valid_to",
        ),
    ],
)
def test_first_invalid_item_is_named(item: UpsertItem, field: str) -> None:
    ok = UpsertItem(subject="ent:u", predicate="likes", object_text="tea")
    with pytest.raises(InvalidInput) as err:
        build(ok, item)
    assert err.value.details["field"] == field and err.value.details["index"] == 1


def test_negation_needs_no_object() -> None:
    (m,) = build(UpsertItem(subject="ent:u", predicate="works_at", negated=True))
    assert m.object is None and m.keys == ["ent:u|works_at"]
