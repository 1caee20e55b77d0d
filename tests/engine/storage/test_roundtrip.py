"""Every Memory field survives a round trip through each store, exactly (Hypothesis)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.models import MEMORY_TYPES, STATUSES, Memory
from engine.storage.base import Store
from tests.factories import memory

_json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_times = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC))
_opt_time = st.none() | _times
_name = st.text(min_size=1, max_size=64)


@st.composite
def memories(draw: st.DrawFn, org_id: str = "org_h") -> Memory:
    return Memory(
        memory_id="mem_" + draw(st.uuids()).hex,
        org_id=org_id,
        namespace=draw(_name),
        agent_id=draw(st.none() | _name),
        entity_id=draw(st.none() | _name),
        type=draw(st.sampled_from(MEMORY_TYPES)),
        text=draw(st.text(max_size=300)),
        metadata=draw(st.dictionaries(st.text(max_size=10), _json, max_size=4)),
        tags=draw(st.lists(_name, max_size=4)),
        timestamp=draw(_times),
        archived=draw(st.booleans()),
        sensitivity=draw(st.sampled_from(["none", "pii", "auto"])),
        subject=draw(st.none() | st.from_regex(r"ent:[a-z0-9_]{1,20}", fullmatch=True)),
        predicate=draw(st.none() | st.text(min_size=1, max_size=30)),
        object=draw(
            st.none()
            | st.booleans()
            | st.integers(min_value=-(2**63), max_value=2**63 - 1)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=100)
            | st.dictionaries(st.text(max_size=8), _json, max_size=3)
        ),
        object_type=draw(
            st.none() | st.sampled_from(["literal", "string", "number", "date", "json", "entity"])
        ),
        unit=draw(st.none() | st.text(max_size=32)),
        keys=draw(st.none() | st.lists(st.text(min_size=1, max_size=40), max_size=3)),
        valid_from=draw(_opt_time),
        valid_to=draw(_opt_time),
        confidence=draw(st.none() | st.floats(min_value=0.0, max_value=1.0)),
        status=draw(st.sampled_from(STATUSES)),
        provenance=draw(st.dictionaries(st.text(max_size=10), _json, max_size=3)),
        created_at=draw(_times),
        updated_at=draw(_times),
    )


def assert_same(got: Memory | None, want: Memory) -> None:
    assert got is not None
    assert got == want
    # == takes True for 1 and 1.0 for 1; the JSON form and the Python types keep them apart
    assert msgspec.json.encode(got) == msgspec.json.encode(want)
    assert type(got.object) is type(want.object)
    for field in ("timestamp", "created_at", "updated_at", "valid_from", "valid_to"):
        value: Any = getattr(got, field)
        if value is not None:
            assert value.utcoffset() is not None and value.utcoffset().total_seconds() == 0


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], max_examples=60)
@given(batch=st.lists(memories(), min_size=1, max_size=4))
def test_roundtrip(store: Store, batch: list[Memory]) -> None:
    store.put_memories(batch)
    for m in batch:
        assert_same(store.get_memory(m.org_id, m.memory_id), m)
    got = store.get_memories("org_h", [m.memory_id for m in batch])
    for g, m in zip(got, batch, strict=True):
        assert_same(g, m)
    listed = {m.memory_id: m for m in store.iter_memories("org_h")}
    for m in batch:
        assert_same(listed[m.memory_id], m)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], max_examples=15)
@given(batch=st.lists(memories(), min_size=1, max_size=4))
def test_roundtrip_after_reopen(store_factory: Callable[[], Store], batch: list[Memory]) -> None:
    first = store_factory()
    first.put_memories(batch)
    first.close()
    second = store_factory()
    if second.count_memories() == 0:  # the in-memory store forgets on close, by design
        return
    for m in batch:
        assert_same(second.get_memory(m.org_id, m.memory_id), m)
    second.close()


def test_bool_object_is_not_int(store: Store) -> None:
    base: dict[str, Any] = dict(org_id="org_a", type="fact", text="t", at=datetime(2024, 1, 1, tzinfo=UTC))
    values: list[Any] = [True, 1, 1.0, "1", None, {"a": True}, {"a": 1}, False, 0, 0.0]
    ms = [memory(memory_id=f"mem_{i}", object=v, **base) for i, v in enumerate(values)]
    ms.append(memory(memory_id="mem_keys_empty", keys=[], **base))
    ms.append(memory(memory_id="mem_keys_none", keys=None, **base))
    store.put_memories(ms)
    for m in ms:
        assert_same(store.get_memory("org_a", m.memory_id), m)
    assert store.get_memory("org_a", "mem_keys_empty").keys == []  # type: ignore[union-attr]
    assert store.get_memory("org_a", "mem_keys_none").keys is None  # type: ignore[union-attr]
