"""prune(): rule semantics (AND), protection of current facts, dry run, delete/archive, the event,
atomicity, org and scope isolation, paging."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

import engine.prune as prune_module
from engine.errors import InvalidInput
from engine.models import Event, Memory
from engine.prune import PruneRequest, PruneResult, prune
from engine.storage import EventQuery, Store, open_store
from tests.factories import memory
from tests.pg_fixture import postgres_url_for

NOW = datetime(2024, 6, 1, tzinfo=UTC)
ORG = "org_a"


def _m(memory_id: str, *, days_ago: float = 1, type: str = "fact", **fields: Any) -> Memory:
    fields = {"org_id": ORG, "entity_id": "ent:alice", "text": memory_id, **fields}
    return memory(memory_id=memory_id, at=NOW, days_ago=days_ago, type=type, **fields)


@pytest.fixture(
    params=["memory", "sqlite://:memory:", pytest.param("postgres", marks=pytest.mark.integration)]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s = open_store(postgres_url_for(tmp_path) if request.param == "postgres" else request.param)
    s.put_memories(
        [
            _m("f_current", days_ago=100, confidence=0.2, tags=["scratch"]),
            _m(
                "f_superseded",
                days_ago=90,
                status="superseded",
                valid_to=NOW - timedelta(days=10),
                confidence=0.9,
            ),
            _m("f_disputed", days_ago=5, status="disputed", confidence=0.5),
            _m("f_archived", days_ago=3, archived=True),
            _m("f_expired", days_ago=40, valid_to=NOW - timedelta(days=1)),
            _m("p_current", days_ago=200, type="profile"),
            _m("e_old", days_ago=100, type="event", confidence=0.3, tags=["scratch", "chat"]),
            _m("e_new", days_ago=1, type="event", tags=["scratch"]),
            _m("n_archived", days_ago=50, type="note", archived=True),
            _m("bob_superseded", days_ago=90, status="superseded", entity_id="ent:bob"),
            _m("ns_superseded", days_ago=90, status="superseded", namespace="other"),
        ]
    )
    s.put_memories([_m("org_b_superseded", days_ago=90, status="superseded", org_id="org_b")])
    yield s
    s.close()


def _ids(store: Store, **fields: Any) -> list[str]:
    fields.setdefault("entity_id", "ent:alice")
    return prune(store, org_id=ORG, request=PruneRequest(**fields), now=NOW).memory_ids


def test_at_least_one_rule_is_required(store: Store) -> None:
    for request in [PruneRequest(), PruneRequest(entity_id="ent:alice", archived=False, expired=False)]:
        with pytest.raises(InvalidInput) as err:
            prune(store, org_id=ORG, request=request, now=NOW)
        assert err.value.field == "body"
    with pytest.raises(InvalidInput) as err:
        prune(store, org_id=ORG, request=PruneRequest(types=[]), now=NOW)
    assert err.value.field == "types"


def test_wire_validation_of_the_request() -> None:
    ok = msgspec.json.decode(
        b'{"statuses": ["superseded"], "older_than": "2024-01-01T00:00:00Z"}', type=PruneRequest
    )
    assert ok.dry_run is True and ok.action == "delete" and ok.namespace == "default"
    for bad in [
        b'{"statuses": ["active"]}',
        b'{"statuses": []}',
        b'{"max_confidence": 2}',
        b'{"action": "burn"}',
        b'{"types": ["fact"], "colour": 1}',
    ]:
        with pytest.raises(msgspec.ValidationError):
            msgspec.json.decode(bad, type=PruneRequest)


def test_single_rules(store: Store) -> None:
    assert _ids(store, statuses=["superseded"]) == ["f_superseded"]
    assert _ids(store, statuses=["superseded", "disputed"]) == ["f_superseded", "f_disputed"]
    assert _ids(store, archived=True) == ["n_archived", "f_archived"]  # oldest first
    assert _ids(store, expired=True) == ["f_superseded", "f_expired"]
    assert _ids(store, types=["event"]) == ["e_old", "e_new"]
    # older_than / max_confidence / tags alone never take a current fact
    assert _ids(store, older_than=NOW - timedelta(days=60)) == ["e_old", "f_superseded"]
    assert _ids(store, max_confidence=0.5) == ["e_old", "f_disputed"]
    assert _ids(store, tags=["scratch"]) == ["e_old", "e_new"]


def test_rules_combine_with_and(store: Store) -> None:
    assert _ids(store, tags=["scratch", "chat"]) == ["e_old"]  # every listed tag
    assert _ids(store, types=["event"], older_than=NOW - timedelta(days=10)) == ["e_old"]
    assert _ids(store, statuses=["superseded"], max_confidence=0.5) == []
    assert _ids(store, archived=True, types=["note"]) == ["n_archived"]


def test_current_facts_need_an_explicit_rule(store: Store) -> None:
    # types alone takes only the facts that are no longer current
    assert _ids(store, types=["fact"]) == ["f_superseded", "f_expired", "f_disputed", "f_archived"]
    # types naming fact + a narrowing rule reaches current facts
    assert _ids(store, types=["fact"], max_confidence=0.3) == ["f_current"]
    # (e_old and f_current share a timestamp: memory_id breaks the tie)
    assert _ids(store, types=["fact", "event"], tags=["scratch"]) == ["e_old", "f_current", "e_new"]
    assert _ids(store, types=["profile"], older_than=NOW - timedelta(days=150)) == ["p_current"]
    # naming only the other type does not reach profiles
    assert _ids(store, types=["fact"], older_than=NOW - timedelta(days=150)) == []


def test_dry_run_changes_nothing(store: Store) -> None:
    before = store.count_memories(ORG)
    out = prune(
        store, org_id=ORG, request=PruneRequest(entity_id="ent:alice", statuses=["superseded"]), now=NOW
    )
    assert out == PruneResult(dry_run=True, count=1, memory_ids=["f_superseded"])
    assert store.count_memories(ORG) == before
    assert store.list_events(ORG, EventQuery()) == []


def test_delete_and_its_event(store: Store) -> None:
    request = PruneRequest(entity_id="ent:alice", statuses=["superseded", "disputed"], dry_run=False)
    out = prune(store, org_id=ORG, request=request, now=NOW)
    assert out == PruneResult(dry_run=False, count=2, memory_ids=["f_superseded", "f_disputed"])
    assert store.get_memory(ORG, "f_superseded") is None and store.get_memory(ORG, "f_disputed") is None
    assert store.get_memory(ORG, "bob_superseded") is not None
    assert store.get_memory(ORG, "ns_superseded") is not None
    assert store.get_memory("org_b", "org_b_superseded") is not None
    [*each, (_, event)] = store.list_events(ORG, EventQuery())
    assert [(e.type, e.memory_id, e.data["pruned_by"]) for _, e in each] == [
        ("memory.deleted", "f_superseded", event.event_id),
        ("memory.deleted", "f_disputed", event.event_id),
    ]
    assert (event.type, event.entity_id, event.at, event.memory_id) == (
        "memories.pruned",
        "ent:alice",
        NOW,
        None,
    )
    assert event.data == {
        "action": "delete",
        "namespace": "default",
        "count": 2,
        "memory_ids": ["f_superseded", "f_disputed"],
        "rules": {"statuses": ["superseded", "disputed"]},
    }
    assert store.list_events("org_b", EventQuery()) == []
    # a second run finds nothing and writes no event
    assert prune(store, org_id=ORG, request=request, now=NOW).count == 0
    assert len(store.list_events(ORG, EventQuery())) == 3


@pytest.mark.parametrize(("action", "last"), [("delete", "memory.deleted"), ("archive", "memory.archived")])
def test_a_pruned_memorys_history_ends_with_its_removal(store: Store, action: str, last: str) -> None:
    """A memory's events (`memory_id`) said nothing of its prune: the one `memories.pruned` event has
    no memory_id, the ids are inside its data."""
    store.append_events(
        [Event(event_id="evt_made", org_id=ORG, type="memory.created", at=NOW, memory_id="f_superseded")]
    )
    request = PruneRequest(statuses=["superseded"], action=action, dry_run=False)  # type: ignore[arg-type]
    prune(store, org_id=ORG, request=request, now=NOW)
    history = [e for _, e in store.list_events(ORG, EventQuery(memory_id="f_superseded"))]
    assert [(e.type, e.at, e.entity_id) for e in history] == [
        ("memory.created", NOW, None),
        (last, NOW, "ent:alice"),
    ]
    if action == "delete":  # what a DELETE records: the text, so the history says what it was
        assert history[-1].data["text"] == "f_superseded" and history[-1].data["type"] == "fact"


def test_archive_action(store: Store) -> None:
    request = PruneRequest(entity_id="ent:alice", types=["event"], action="archive", dry_run=False)
    out = prune(store, org_id=ORG, request=request, now=NOW)
    assert out.memory_ids == ["e_old", "e_new"]
    archived = store.get_memory(ORG, "e_old")
    assert archived is not None and archived.archived and archived.updated_at == NOW
    assert archived.text == "e_old" and archived.tags == ["scratch", "chat"]
    # already archived memories are not archived again
    assert prune(store, org_id=ORG, request=request, now=NOW).count == 0
    assert _ids(store, archived=True, action="archive") == []


def test_whole_namespace_when_no_entity(store: Store) -> None:
    out = prune(store, org_id=ORG, request=PruneRequest(statuses=["superseded"]), now=NOW)
    assert sorted(out.memory_ids) == ["bob_superseded", "f_superseded"]
    other = prune(
        store, org_id=ORG, request=PruneRequest(statuses=["superseded"], namespace="other"), now=NOW
    )
    assert other.memory_ids == ["ns_superseded"]


def test_failure_rolls_back_deletes_and_event(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_event(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("event store down")

    monkeypatch.setattr(prune_module, "_event", broken_event)
    request = PruneRequest(entity_id="ent:alice", statuses=["superseded"], dry_run=False)
    with pytest.raises(RuntimeError):
        prune(store, org_id=ORG, request=request, now=NOW)
    assert store.get_memory(ORG, "f_superseded") is not None
    assert store.list_events(ORG, EventQuery()) == []


def test_pages_through_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    s = open_store("memory")
    s.put_memories([_m(f"e_{i:03d}", days_ago=i / 10, type="event") for i in range(25)])
    monkeypatch.setattr(prune_module, "PAGE_SIZE", 4)
    calls: list[int] = []
    original = s.list_memories

    def spy(org_id: str, query: Any) -> list[Memory]:
        calls.append(query.limit)
        return original(org_id, query)

    monkeypatch.setattr(s, "list_memories", spy)
    out = prune(s, org_id=ORG, request=PruneRequest(types=["event"], dry_run=False), now=NOW)
    assert out.count == 25 and len(set(out.memory_ids)) == 25
    assert out.memory_ids == [f"e_{i:03d}" for i in reversed(range(25))]  # oldest first
    assert calls == [4] * 7  # 6 full pages + 1 partial
    assert s.count_memories(ORG) == 0
