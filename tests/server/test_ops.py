"""POST /v0/summarize, POST /v0/prune and GET /v0/observability/events (JSON and server-sent events):
shapes, bad input (422 naming the field), scopes and org isolation."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from typing import Any, cast

import anyio
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.errors import InvalidInput
from engine.keys import create_api_key
from engine.models import Event
from engine.retrieval.tokens import get_tokenizer
from engine.storage.base import EventQuery, Store
from engine.timeutil import utcnow
from server import event_stream
from server.config import Settings
from server.routes.ops import REQUEST_BODIES
from tests.server.asgi_scope import get_scope
from tests.server.conftest import KeyMaker, memory_body
from tests.server.ops_app import at, build_app, put

SSE = {"Accept": "text/event-stream"}


@pytest.fixture
def app(settings: Settings, store: Store) -> Litestar:
    return build_app(settings, store)


@pytest.fixture
def client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    with TestClient(app) as c:
        yield c


def field_of(r: Any) -> str:
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "validation_error"
    return str(body["details"]["field"])


def est(text: str) -> int:  # the read path's estimate for ASCII: ceil(chars / 3)
    return -(-len(text) // 3)


def o200k(text: str) -> int:  # the summary's default count: o200k_base BPE tokens
    return get_tokenizer("o200k_base").count(text)


# --- summarize ------------------------------------------------------------------------------------
def seed_alice(store: Store, org: str = "acme") -> dict[str, str]:
    paris = put(
        store,
        org,
        "Alice lives in Paris",
        when="2024-03-01",
        entity_id="ent:alice",
        valid_from=at("2024-03-01"),
    )
    rome = put(
        store,
        org,
        "Alice lives in Rome",
        when="2023-01-01",
        entity_id="ent:alice",
        status="superseded",
        valid_to=at("2024-03-01"),
    )
    run = put(
        store, org, "Alice ran the Berlin marathon", type="event", when="2024-05-01", entity_id="ent:alice"
    )
    return {"paris": paris.memory_id, "rome": rome.memory_id, "run": run.memory_id}


def test_summarize_extractive(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    ids = seed_alice(store)
    r = client.post("/v0/summarize", json={"entity_id": "ent:alice"}, headers=auth)
    assert r.status_code == 200, r.text
    body = r.json()
    expected = (
        "Facts:\n- Alice lives in Paris (since 2024-03-01)\n"
        "Recent events:\n- 2024-05-01: Alice ran the Berlin marathon"
    )
    assert body == {
        "summary": expected,
        "sources": [ids["paris"], ids["run"]],
        "origin": "extractive",
        "token_count": o200k(expected),
        "redaction": {"applied": False, "rules": []},
    }


def test_summarize_respects_max_tokens_and_namespace(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    seed_alice(store)
    put(store, "acme", "Alice likes tea", namespace="work", entity_id="ent:alice")
    r = client.post("/v0/summarize", json={"entity_id": "ent:alice", "max_tokens": 32}, headers=auth)
    body = r.json()
    assert r.status_code == 200 and 0 < body["token_count"] <= 32
    r = client.post("/v0/summarize", json={"entity_id": "ent:alice", "namespace": "work"}, headers=auth)
    assert r.json()["summary"] == "Facts:\n- Alice likes tea"


def test_summarize_redaction_policies(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    email = put(store, "acme", "Alice's email is alice@example.com", when="2024-02-01", entity_id="ent:alice")
    plain = put(
        store,
        "acme",
        "Support desk is desk@example.org",
        when="2024-01-01",
        entity_id="ent:alice",
        sensitivity="none",
    )
    url, base = "/v0/summarize", {"entity_id": "ent:alice"}

    auto = client.post(url, json=base, headers=auth).json()
    assert auto["summary"] == "Facts:\n- Alice's email is [EMAIL_1]\n- Support desk is desk@example.org"
    assert auto["sources"] == [email.memory_id, plain.memory_id]
    assert auto["redaction"] == {"applied": True, "rules": ["email"]}  # no map under egress none

    allowed = client.post(
        url, json={**base, "policy": {"egress_rehydration": "allowed"}}, headers=auth
    ).json()
    assert allowed["summary"] == auto["summary"]
    assert allowed["redaction"] == {
        "applied": True,
        "rules": ["email"],
        "placeholders": {"[EMAIL_1]": "alice@example.com"},
    }

    off = client.post(url, json={**base, "policy": {"pii_redaction": "off"}}, headers=auth).json()
    assert "alice@example.com" in off["summary"]
    assert off["redaction"] == {"applied": False, "rules": []}
    assert store.get_memory("acme", email.memory_id).text == "Alice's email is alice@example.com"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "entity_id"),
        ({"entity_id": "ent:a", "max_tokens": 31}, "max_tokens"),
        ({"entity_id": "ent:a", "max_tokens": 4097}, "max_tokens"),
        ({"entity_id": "ent:a", "max_tokens": "many"}, "max_tokens"),
        ({"entity_id": "ent:a", "namespace": "n" * 65}, "namespace"),
        ({"entity_id": "ent:a", "policy": {"pii_redaction": "sometimes"}}, "policy.pii_redaction"),
        ({"entity_id": "ent:a", "policy": {"egress_rehydration": "always"}}, "policy.egress_rehydration"),
        ({"entity_id": "ent:a", "colour": "blue"}, "colour"),
        ({"entity_id": ""}, "entity_id"),
    ],
)
def test_summarize_bad_input(
    client: TestClient[Litestar], auth: dict[str, str], body: dict[str, Any], field: str
) -> None:
    assert field_of(client.post("/v0/summarize", json=body, headers=auth)) == field


def test_summarize_bounds_are_inclusive(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    for n in (32, 4096):
        assert (
            client.post(
                "/v0/summarize", json={"entity_id": "ent:a", "max_tokens": n}, headers=auth
            ).status_code
            == 200
        )


def test_summarize_malformed_json_is_400(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.post("/v0/summarize", content=b"{", headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"


def test_summarize_scope_and_auth(client: TestClient[Litestar], make_key: KeyMaker) -> None:
    body = {"entity_id": "ent:a"}
    assert client.post("/v0/summarize", json=body).status_code == 401
    assert client.post("/v0/summarize", json=body, headers=make_key("acme", ("read",))).status_code == 200
    r = client.post("/v0/summarize", json=body, headers=make_key("acme", ("write",)))
    assert r.status_code == 403 and r.json()["details"]["required_scope"] == "read"


def test_summarize_org_isolation(client: TestClient[Litestar], make_key: KeyMaker, store: Store) -> None:
    seed_alice(store, "acme")
    r = client.post(
        "/v0/summarize", json={"entity_id": "ent:alice", "org_id": "acme"}, headers=make_key("other")
    )
    assert r.status_code == 200
    assert r.json() == {
        "summary": "",
        "sources": [],
        "origin": "extractive",
        "token_count": 0,
        "redaction": {"applied": False, "rules": []},
    }


RUSSIAN = (
    "Сегодня я обсуждал с коллегами план развития продукта на следующий квартал, и мы решили сначала "
    "сделать мобильную версию, а потом переписать отчёты для отдела продаж и бухгалтерии. "
)


@pytest.mark.parametrize("tokenizer", ["estimate", "o200k_base", "cl100k_base"])
def test_a_line_longer_than_the_budget_is_cut_to_it_not_left_out(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, tokenizer: str
) -> None:
    # each turn alone is past 64 tokens in every tokenizer: left out whole, the summary was empty
    for i in range(3):
        put(store, "acme", RUSSIAN * 2, type="event", when=f"2024-05-0{i + 1}", entity_id="ent:ru")
    count = get_tokenizer(tokenizer).count
    assert count("Recent events:\n- 2024-05-03: " + RUSSIAN * 2) > 64
    body = {"entity_id": "ent:ru", "max_tokens": 64, "tokenizer": tokenizer}
    r = client.post("/v0/summarize", json=body, headers=auth).json()
    assert r["summary"].startswith("Recent events:\n- 2024-05-03: Сегодня я обсуждал")
    assert r["summary"].endswith("…") and r["summary"].count("\n- ") == 1  # the newest turn, cut
    assert r["token_count"] == count(r["summary"]) and 64 - 16 < r["token_count"] <= 64
    assert len(r["sources"]) == 1


def test_whole_lines_still_come_first_and_the_cut_line_keeps_its_place(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    short = put(store, "acme", "Dana lives in Oslo", when="2024-01-01", entity_id="ent:dana")
    put(
        store,
        "acme",
        "Dana said " + "a great deal about boats " * 20,
        type="event",
        when="2024-05-02",
        entity_id="ent:dana",
    )
    put(store, "acme", "Dana went sailing", type="event", when="2024-05-01", entity_id="ent:dana")
    r = client.post("/v0/summarize", json={"entity_id": "ent:dana", "max_tokens": 60}, headers=auth).json()
    lines = r["summary"].split("\n")
    assert lines[:2] == ["Facts:", "- Dana lives in Oslo"]
    assert lines[2] == "Recent events:"
    assert lines[3].startswith("- 2024-05-02: Dana said a great deal") and lines[3].endswith("…")
    assert lines[4] == "- 2024-05-01: Dana went sailing"  # whole, after the cut newer line
    assert r["sources"][0] == short.memory_id and r["token_count"] == o200k(r["summary"]) <= 60


def test_summarize_reads_as_the_calling_agent(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    for agent, turn in (("a1", "I live in Paris."), ("a2", "I live in Rome.")):
        r = client.post(
            "/v0/context/assemble",
            json={"entity_id": "ent:sumag", "turn": turn},
            headers={**auth, "X-Service-Agent": agent},
        )
        assert r.status_code == 200, r.text

    def summary(agent: str | None) -> str:
        headers = {**auth, "X-Service-Agent": agent} if agent else auth
        r = client.post("/v0/summarize", json={"entity_id": "ent:sumag"}, headers=headers)
        assert r.status_code == 200, r.text
        return str(r.json()["summary"])

    assert "Paris" in summary("a1") and "Rome" not in summary("a1")
    assert "Rome" in summary("a2") and "Paris" not in summary("a2")
    assert "Paris" in summary(None) and "Rome" in summary(None)  # no agent: every agent's


def test_the_entity_graph_reads_as_the_calling_agent(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    for agent, turn in (("a1", "I live in Paris."), ("a2", "I live in Rome.")):
        client.post(
            "/v0/context/assemble",
            json={"entity_id": "ent:grag", "turn": turn},
            headers={**auth, "X-Service-Agent": agent},
        )

    def texts(agent: str | None) -> str:
        headers = {**auth, "X-Service-Agent": agent} if agent else auth
        r = client.get("/v0/entities/ent:grag/graph", headers=headers)
        assert r.status_code == 200, r.text
        return " ".join(m["text"] for m in r.json()["memories"])

    assert "Paris" in texts("a1") and "Rome" not in texts("a1")
    assert "Rome" in texts("a2") and "Paris" not in texts("a2")
    assert "Paris" in texts(None) and "Rome" in texts(None)


# --- prune --------------------------------------------------------------------------------------------
def seed_prunable(store: Store, org: str = "acme") -> dict[str, str]:
    old = put(
        store,
        org,
        "Bob works at Initech",
        when="2023-01-01",
        entity_id="ent:bob",
        status="superseded",
        valid_to=at("2024-01-01"),
    )
    fuzzy = put(store, org, "Bob might like jazz", when="2023-06-01", entity_id="ent:bob", status="disputed")
    current = put(store, org, "Bob works at Globex", when="2024-01-01", entity_id="ent:bob")
    note = put(store, org, "Call Bob back", type="note", when="2022-01-01", entity_id="ent:bob")
    return {
        "old": old.memory_id,
        "fuzzy": fuzzy.memory_id,
        "current": current.memory_id,
        "note": note.memory_id,
    }


def test_prune_dry_run_then_delete(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    ids = seed_prunable(store)
    body = {"entity_id": "ent:bob", "statuses": ["superseded", "disputed"]}
    dry = client.post("/v0/prune", json=body, headers=auth)
    assert dry.status_code == 200, dry.text
    assert dry.json() == {"dry_run": True, "count": 2, "memory_ids": [ids["old"], ids["fuzzy"]]}
    assert store.count_memories("acme") == 4  # a dry run changes nothing

    real = client.post("/v0/prune", json={**body, "dry_run": False}, headers=auth).json()
    assert real == {"dry_run": False, "count": 2, "memory_ids": [ids["old"], ids["fuzzy"]]}
    assert store.get_memories("acme", list(ids.values())) == store.get_memories(
        "acme", [ids["current"], ids["note"]]
    )
    events = [e for _, e in store.list_events("acme", EventQuery(type="memories.pruned"))]
    assert len(events) == 1 and events[0].data["memory_ids"] == [ids["old"], ids["fuzzy"]]


def test_prune_archive_and_current_facts_protected(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    ids = seed_prunable(store)
    # older_than alone never removes a fact that is still true: only the note (and non-current facts)
    r = client.post(
        "/v0/prune",
        json={"older_than": "2025-01-01T00:00:00Z", "types": ["note"], "action": "archive", "dry_run": False},
        headers=auth,
    ).json()
    assert r == {"dry_run": False, "count": 1, "memory_ids": [ids["note"]]}
    assert store.get_memory("acme", ids["note"]).archived is True  # type: ignore[union-attr]
    r = client.post("/v0/prune", json={"older_than": "2025-01-01T00:00:00Z"}, headers=auth).json()
    assert ids["current"] not in r["memory_ids"] and r["count"] == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"dry_run": False}, "body"),
        ({"statuses": ["active"]}, "statuses[0]"),
        ({"statuses": []}, "statuses"),
        ({"types": ["memo"]}, "types[0]"),
        ({"max_confidence": 1.5}, "max_confidence"),
        ({"older_than": "last week"}, "older_than"),
        ({"archived": True, "action": "shred"}, "action"),
        ({"archived": True, "dry_run": "no"}, "dry_run"),
        ({"archived": True, "everything": True}, "everything"),
        ({"archived": True, "namespace": ""}, "namespace"),
    ],
)
def test_prune_bad_input(
    client: TestClient[Litestar], auth: dict[str, str], body: dict[str, Any], field: str
) -> None:
    assert field_of(client.post("/v0/prune", json=body, headers=auth)) == field


def test_prune_idempotency(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    ids = seed_prunable(store)
    headers = {**auth, "Idempotency-Key": "prune-1"}
    body = {"statuses": ["superseded"], "dry_run": False}
    first = client.post("/v0/prune", json=body, headers=headers)
    again = client.post("/v0/prune", json=body, headers=headers)
    assert first.json() == {"dry_run": False, "count": 1, "memory_ids": [ids["old"]]}
    assert again.content == first.content and again.headers["idempotent-replayed"] == "true"
    assert len(store.list_events("acme", EventQuery(type="memories.pruned"))) == 1  # no second run
    other = client.post("/v0/prune", json={"statuses": ["disputed"], "dry_run": False}, headers=headers)
    assert other.status_code == 409 and other.json()["error"] == "conflict"


def test_prune_scope(client: TestClient[Litestar], make_key: KeyMaker) -> None:
    body = {"archived": True}
    r = client.post("/v0/prune", json=body, headers=make_key("acme", ("read",)))
    assert r.status_code == 403 and r.json()["details"]["required_scope"] == "write"
    assert client.post("/v0/prune", json=body, headers=make_key("acme", ("write",))).status_code == 200


def test_an_agent_prunes_its_own_memories_only(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    mine = put(store, "acme", "Old note of p1", type="note", entity_id="ent:pr", agent_id="p1", tags=["old"])
    theirs = put(
        store, "acme", "Old note of p2", type="note", entity_id="ent:pr", agent_id="p2", tags=["old"]
    )
    body: dict[str, Any] = {"entity_id": "ent:pr", "tags": ["old"]}
    as_p1 = {**auth, "X-Service-Agent": "p1"}
    dry = client.post("/v0/prune", json=body, headers=as_p1).json()
    assert dry == {"dry_run": True, "count": 1, "memory_ids": [mine.memory_id]}
    real = client.post("/v0/prune", json={**body, "dry_run": False}, headers=as_p1).json()
    assert real == {"dry_run": False, "count": 1, "memory_ids": [mine.memory_id]}
    assert store.get_memory("acme", theirs.memory_id) is not None
    assert store.get_memory("acme", mine.memory_id) is None
    pruned = [e for _, e in store.list_events("acme", EventQuery(type="memories.pruned"))]
    assert pruned[-1].data["agent_id"] == "p1"
    everyone = client.post("/v0/prune", json=body, headers=auth).json()  # no agent: the org's
    assert everyone["memory_ids"] == [theirs.memory_id]


def test_prune_org_isolation(client: TestClient[Litestar], make_key: KeyMaker, store: Store) -> None:
    seed_prunable(store, "acme")
    body = {"statuses": ["superseded", "disputed"], "dry_run": False, "org_id": "acme"}
    r = client.post("/v0/prune", json=body, headers=make_key("other"))
    assert r.json() == {"dry_run": False, "count": 0, "memory_ids": []}
    assert store.count_memories("acme") == 4


# --- events: JSON pages -----------------------------------------------------------------------------
def make_events(client: TestClient[Litestar], auth: dict[str, str], n: int, **fields: Any) -> list[str]:
    return [
        client.post("/v0/memories", json=memory_body(f"note {i}", **fields), headers=auth).json()["memory_id"]
        for i in range(n)
    ]


def test_events_page_shape_and_cursor(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    ids = make_events(client, auth, 3, entity_id="ent:carol")
    first = client.get("/v0/observability/events", params={"limit": 2}, headers=auth)
    assert first.status_code == 200, first.text
    page = first.json()
    assert set(page) == {"items", "next_cursor"}
    item = page["items"][0]
    assert set(item) == {"event_id", "type", "at", "memory_id", "entity_id", "data"}
    assert (item["type"], item["memory_id"], item["entity_id"]) == ("memory.created", ids[0], "ent:carol")
    assert item["event_id"].startswith("evt_") and item["data"] == {"namespace": "default", "type": "note"}
    second = client.get(
        "/v0/observability/events", params={"limit": 2, "cursor": page["next_cursor"]}, headers=auth
    ).json()
    assert [i["memory_id"] for i in second["items"]] == [ids[2]] and second["next_cursor"]
    end = client.get(
        "/v0/observability/events", params={"cursor": second["next_cursor"]}, headers=auth
    ).json()
    assert end == {"items": [], "next_cursor": None}
    ids.append(make_events(client, auth, 1)[0])  # a later write shows up after the kept cursor
    later = client.get(
        "/v0/observability/events", params={"cursor": second["next_cursor"]}, headers=auth
    ).json()
    assert [i["memory_id"] for i in later["items"]] == [ids[3]]


def test_events_filters(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    ids = make_events(client, auth, 2, entity_id="ent:dan")
    make_events(client, auth, 1, entity_id="ent:erin")
    client.patch(f"/v0/memories/{ids[0]}", json={"archived": True}, headers=auth)
    store.append_events(
        [Event(event_id="evt_old", org_id="acme", type="memory.created", at=at("2020-01-01"))]
    )
    url = "/v0/observability/events"
    by_entity = client.get(url, params={"entity_id": "ent:dan"}, headers=auth).json()["items"]
    assert [(i["type"], i["memory_id"]) for i in by_entity] == [
        ("memory.created", ids[0]),
        ("memory.created", ids[1]),
        ("memory.archived", ids[0]),
    ]
    by_type = client.get(url, params={"type": "memory.archived"}, headers=auth).json()["items"]
    assert [i["memory_id"] for i in by_type] == [ids[0]]
    recent = client.get(url, params={"since": "2021-01-01T00:00:00Z"}, headers=auth).json()["items"]
    assert "evt_old" not in {i["event_id"] for i in recent} and len(recent) == 4
    everything = client.get(url, headers=auth).json()["items"]
    assert len(everything) == 5


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": event_stream.encode_cursor(1)[:-2]}, "cursor"),
        ({"since": "yesterday"}, "since"),
        ({"type": "t" * 65}, "type"),
        ({"entity_id": "e" * 257}, "entity_id"),
    ],
)
def test_events_bad_input(
    client: TestClient[Litestar], auth: dict[str, str], params: dict[str, Any], field: str
) -> None:
    assert field_of(client.get("/v0/observability/events", params=params, headers=auth)) == field


def test_events_limit_bounds(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    for n in (1, 500):
        assert client.get("/v0/observability/events", params={"limit": n}, headers=auth).status_code == 200


def test_events_scope_and_isolation(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker
) -> None:
    make_events(client, auth, 2)
    assert client.get("/v0/observability/events").status_code == 401
    r = client.get("/v0/observability/events", headers=make_key("acme", ("write",)))
    assert r.status_code == 403
    other = make_key("other", ("read",))
    assert client.get("/v0/observability/events", headers=other).json() == {"items": [], "next_cursor": None}
    # a cursor is a position, not a capability: with another org's key it still shows only that org
    cursor = client.get("/v0/observability/events", headers=auth).json()["next_cursor"]
    assert (
        client.get("/v0/observability/events", params={"cursor": cursor}, headers=other).json()["items"] == []
    )
    r = client.get(
        "/v0/observability/events", params={"max_events": 1, "timeout": 0}, headers={**other, **SSE}
    )
    assert "event:" not in r.text


def decoded(cursor: str) -> Any:
    return msgspec.msgpack.decode(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))


def test_cursors_carry_nothing_about_other_orgs(client: TestClient[Litestar], make_key: KeyMaker) -> None:
    """A cursor numbers the org's own events: another org's writes never move it."""
    url = "/v0/observability/events"
    a, b = make_key("org_a"), make_key("org_b")
    make_events(client, a, 6)
    make_events(client, b, 1)
    first = client.get(url, headers=b).json()
    assert decoded(first["next_cursor"]) == ["ev", 2, 1]
    make_events(client, a, 5)
    make_events(client, b, 1)
    later = client.get(url, params={"cursor": first["next_cursor"]}, headers=b).json()
    assert len(later["items"]) == 1 and decoded(later["next_cursor"]) == ["ev", 2, 2]
    assert decoded(client.get(url, headers=a).json()["next_cursor"]) == ["ev", 2, 11]
    stream = client.get(url, params={"timeout": 0}, headers={**b, **SSE})
    assert [decoded(f["id"]) for f in parse_sse(stream.text)] == [["ev", 2, 1], ["ev", 2, 2]]
    resumed = client.get(
        url, params={"timeout": 0}, headers={**b, **SSE, "Last-Event-ID": first["next_cursor"]}
    )
    assert [decoded(f["id"]) for f in parse_sse(resumed.text)] == [["ev", 2, 2]]


def test_a_cursor_of_the_shared_log_is_a_clear_422(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Version-1 cursors counted every org's events; they cannot be placed in the org's own log."""
    make_events(client, auth, 2)
    old = base64.urlsafe_b64encode(msgspec.msgpack.encode(["ev", 1, 7])).decode().rstrip("=")
    for params, headers, field in (
        ({"cursor": old}, auth, "cursor"),
        ({"timeout": 0}, {**auth, **SSE, "Last-Event-ID": old}, "Last-Event-ID"),
    ):
        r = client.get("/v0/observability/events", params=params, headers=headers)
        assert field_of(r) == field
        body = r.json()
        assert body["details"]["rule"] == "cursor" and body["details"]["cursor_version"] == 1
        assert "since=" in body["message"]


# --- events: server-sent events ----------------------------------------------------------------------
def parse_sse(text: str) -> list[dict[str, str]]:
    frames = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line and not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
        if "data" in fields:
            frames.append(fields)
    return frames


def test_stream_replays_then_ends_at_max_events(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    ids = make_events(client, auth, 3)
    r = client.get("/v0/observability/events", params={"max_events": 2}, headers={**auth, **SSE})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["cache-control"] == "no-cache"
    assert r.text.startswith("retry: 1000\n: connected\n\n")
    frames = parse_sse(r.text)
    assert [msgspec.json.decode(f["data"])["memory_id"] for f in frames] == ids[:2]
    assert [f["event"] for f in frames] == ["memory.created"] * 2
    page = client.get("/v0/observability/events", params={"limit": 1}, headers=auth).json()
    assert frames[0]["id"] == page["next_cursor"]  # the id is the event's cursor
    # Last-Event-ID resumes after that event (and wins over ?cursor)
    r = client.get(
        "/v0/observability/events",
        params={"timeout": 0},
        headers={**auth, **SSE, "Last-Event-ID": frames[1]["id"]},
    )
    assert [msgspec.json.decode(f["data"])["memory_id"] for f in parse_sse(r.text)] == ids[2:]


def test_stream_bad_input(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    headers = {**auth, **SSE}
    assert (
        field_of(client.get("/v0/observability/events", headers={**headers, "Last-Event-ID": "x"}))
        == "Last-Event-ID"
    )
    assert (
        field_of(client.get("/v0/observability/events", params={"max_events": 0}, headers=headers))
        == "max_events"
    )
    assert (
        field_of(client.get("/v0/observability/events", params={"timeout": -1}, headers=headers)) == "timeout"
    )


async def drive(
    app: Litestar,
    headers: dict[str, str],
    *,
    on_hello: Any,
    disconnect_after_hello: bool = False,
    query: str = "",
) -> tuple[int, bytes]:
    """Call the ASGI app directly, reading the body as it streams; `on_hello` runs (in a thread) once the
    stream has started. Returns the status and everything received."""
    received: list[bytes] = []
    status = 0
    hello = anyio.Event()
    complete = anyio.Event()
    request_sent = False

    async def receive() -> dict[str, Any]:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        # like an ASGI server: the client goes away once the response is complete (or earlier)
        await (hello if disconnect_after_hello else complete).wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            received.append(message.get("body", b""))
            if not hello.is_set():
                hello.set()
            if not message.get("more_body", False):
                complete.set()

    scope = get_scope("/v0/observability/events", headers, query)

    async def writer() -> None:
        await hello.wait()
        await anyio.to_thread.run_sync(on_hello)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await app(cast(Any, scope), cast(Any, receive), cast(Any, send))
    return status, b"".join(received)


def test_stream_sends_events_written_after_connect(app: Litestar, auth: dict[str, str], store: Store) -> None:
    written: list[str] = []

    def write_two() -> None:
        for i in range(2):
            written.append(put(store, "acme", f"live {i}", type="note").memory_id)
            store.append_events(
                [
                    Event(
                        event_id=f"evt_live{i}",
                        org_id="acme",
                        type="memory.created",
                        at=at("2024-01-01"),
                        memory_id=written[-1],
                    )
                ]
            )
        store.append_events(
            [Event(event_id="evt_elsewhere", org_id="other", type="memory.created", at=at("2024-01-01"))]
        )

    status, body = anyio.run(lambda: drive(app, {**auth, **SSE}, on_hello=write_two, query="max_events=2"))
    assert status == 200
    frames = parse_sse(body.decode())
    assert [msgspec.json.decode(f["data"])["event_id"] for f in frames] == ["evt_live0", "evt_live1"]
    assert [msgspec.json.decode(f["data"])["memory_id"] for f in frames] == written


def test_stream_stops_when_the_client_disconnects(app: Litestar, auth: dict[str, str]) -> None:
    # no max_events and no timeout: only the disconnect can end it (fail_after guards the test)
    status, body = anyio.run(
        lambda: drive(app, {**auth, **SSE}, on_hello=lambda: None, disconnect_after_hello=True)
    )
    assert status == 200 and body.startswith(b"retry: 1000\n")


def test_a_revoked_keys_stream_ends_and_sends_nothing_more(app: Litestar, store: Store) -> None:
    key, secret = create_api_key(store, "acme", ("read",))

    def revoke_then_write() -> None:
        store.revoke_api_key(key.key_id, utcnow())
        store.append_events(
            [Event(event_id="evt_after_revoke", org_id="acme", type="memory.created", at=at("2024-01-01"))]
        )

    # no max_events, no timeout, no disconnect: only the revocation can end it (fail_after guards the test)
    status, body = anyio.run(
        lambda: drive(app, {"Authorization": f"Bearer {secret}", **SSE}, on_hello=revoke_then_write)
    )
    assert status == 200
    assert b"evt_after_revoke" not in body


def test_a_key_revoked_while_the_stream_checks_it_sends_nothing_written_after(
    app: Litestar, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the revocation and the write land between the stream's look at the key and its next read
    key, secret = create_api_key(store, "acme", ("read",))
    list_keys = store.list_api_keys
    started = threading.Event()

    def keys_then_revoke(org_id: str) -> Any:
        keys = list_keys(org_id)
        if started.is_set() and any(k.revoked_at is None for k in keys if k.key_id == key.key_id):
            store.revoke_api_key(key.key_id, utcnow())
            store.append_events(
                [
                    Event(
                        event_id="evt_after_revoke", org_id="acme", type="memory.created", at=at("2024-01-01")
                    )
                ]
            )
        return keys

    monkeypatch.setattr(store, "list_api_keys", keys_then_revoke)
    status, body = anyio.run(
        lambda: drive(app, {"Authorization": f"Bearer {secret}", **SSE}, on_hello=started.set)
    )
    assert status == 200
    assert b"evt_after_revoke" not in body


# --- the stream generator without HTTP -------------------------------------------------------------
def test_cursor_round_trip_and_rejects_others() -> None:
    for seq in (0, 1, 2**40):
        assert event_stream.decode_cursor(event_stream.encode_cursor(seq)) == seq
    for bad in ("", "abc", "k6JldgH_", "bm90IG1zZ3BhY2s"):
        with pytest.raises(InvalidInput) as err:
            event_stream.decode_cursor(bad, field="Last-Event-ID")
        assert err.value.field == "Last-Event-ID"


def test_stream_heartbeat_and_timeout_with_a_fake_clock() -> None:
    ticks = iter([0.0, 0.0, 10.0, 20.0, 31.0])  # start, then one reading per poll: 20 - 0 >= 15 beats once

    async def collect() -> list[bytes]:
        out = []
        async for chunk in event_stream.stream(
            lambda after, limit: [],
            after=None,
            limit=10,
            timeout=30.0,
            poll=0.0,
            heartbeat=15.0,
            clock=lambda: next(ticks),
        ):
            out.append(chunk)
        return out

    chunks = anyio.run(collect)
    assert chunks == [event_stream.HELLO, event_stream.KEEP_ALIVE]


# --- the OpenAPI document -----------------------------------------------------------------------------
def test_operations_are_documented(client: TestClient[Litestar]) -> None:
    doc = client.get("/schema/openapi.json").json()
    ops_found = {
        (path, method): op["operationId"]
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    assert ops_found[("/v0/summarize", "post")] == "summarize"
    assert ops_found[("/v0/prune", "post")] == "pruneMemories"
    assert ops_found[("/v0/observability/events", "get")] == "listEvents"
    events = doc["paths"]["/v0/observability/events"]["get"]
    params = {p["name"]: p for p in events["parameters"]}
    assert {"type", "entity_id", "since", "limit", "cursor", "max_events", "timeout", "Last-Event-ID"} <= set(
        params
    )
    assert (params["limit"]["schema"]["minimum"], params["limit"]["schema"]["maximum"]) == (1, 500)
    assert "text/event-stream" in events["description"]
    assert {"401", "403", "422"} <= set(events["responses"])
    assert "Idempotency-Key" in {p["name"] for p in doc["paths"]["/v0/prune"]["post"]["parameters"]}
    assert set(REQUEST_BODIES) == {"summarize", "pruneMemories"}  # for server.openapi.REQUEST_BODIES
