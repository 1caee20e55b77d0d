"""POST /v0/memories:batch_upsert and POST /v0/extract (private, admin scope), on every store."""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage.base import ListQuery, Store
from tests.server.conftest import KeyMaker

BATCH = "/v0/memories:batch_upsert"


def fact(predicate: str = "lives_in", **fields: Any) -> dict[str, Any]:
    return {"type": "fact", "subject": "ent:user", "predicate": predicate, **fields}


def upsert(
    client: TestClient[Litestar], auth: dict[str, str], items: list[dict[str, Any]], **fields: Any
) -> dict[str, Any]:
    r = client.post(BATCH, json={"items": items, **fields}, headers=auth)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_colon_path_routes_and_outcomes(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    body = upsert(
        client,
        auth,
        [
            fact(object_text="ent:paris"),
            fact("budget", object_num=800, unit="USD"),
            {"type": "note", "text": "likes window seats"},
        ],
    )
    assert [u["index"] for u in body["upserts"]] == [0, 1, 2]
    assert [u["action"] for u in body["upserts"]] == ["UPSERTED"] * 3
    paris = store.get_memory("acme", body["upserts"][0]["memory_id"])
    assert paris is not None
    assert (paris.text, paris.object, paris.object_type, paris.keys, paris.entity_id) == (
        "User lives in Paris",
        "ent:paris",
        "entity",
        ["ent:user|lives_in"],
        "ent:user",
    )
    budget = store.get_memory("acme", body["upserts"][1]["memory_id"])
    assert budget is not None and (budget.object, budget.unit, budget.object_type) == (800, "USD", "number")
    assert "800 USD" in budget.text


def test_a_unit_renders_once_and_ids_keep_their_case(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """The age template leaves the unit to the value: a stated unit is not followed by "years" again."""
    items = [
        fact("age", subject="ent:age2c06", object_num=30, unit="years"),
        fact("age", subject="ent:r2-d2", object_num=18, unit="months"),
        fact("age", subject="ent:mcKay", object_num=41),
    ]
    ids = [u["memory_id"] for u in upsert(client, auth, items)["upserts"]]
    texts = [client.get(f"/v0/memories/{i}", headers=auth).json()["text"] for i in ids]
    assert texts == ["Age2c06 is 30 years old", "R2 D2 is 18 months old", "McKay is 41 years old"]


def test_supersession_skip_and_order_within_batch(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    first = upsert(client, auth, [fact(object_text="ent:paris")])["upserts"][0]
    body = upsert(
        client,
        auth,
        [fact(object_text="ent:paris"), fact(object_text="ent:berlin"), fact(object_text="ent:lisbon")],
    )
    skipped, berlin, lisbon = body["upserts"]
    assert skipped == {**skipped, "action": "SKIPPED", "memory_id": first["memory_id"]}
    assert berlin["action"] == "SUPERSEDED" and berlin["supersedes"] == [first["memory_id"]]
    assert lisbon["action"] == "SUPERSEDED" and lisbon["supersedes"] == [berlin["memory_id"]]
    active = store.list_memories("acme", ListQuery(types=("fact",), statuses=("active",)))
    assert [m.object for m in active] == ["ent:lisbon"]


def test_negation_and_off_mode(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    works = upsert(client, auth, [fact("works_at", object_text="ent:acme")])["upserts"][0]
    ended = upsert(client, auth, [fact("works_at", object_text="ent:acme", negated=True)])["upserts"][0]
    assert (
        ended["action"] == "SUPERSEDED"
        and ended["negation"] is True
        and ended["supersedes"] == [works["memory_id"]]
    )
    upsert(client, auth, [fact(object_text="ent:rome")])
    off = upsert(client, auth, [fact(object_text="ent:oslo")], upsert_conflicts="off")["upserts"][0]
    assert off["action"] == "UPSERTED"
    active = store.list_memories("acme", ListQuery(types=("fact",), statuses=("active",)))
    assert sorted(str(m.object) for m in active) == ["ent:oslo", "ent:rome"]


INVALID = [
    ("missing_predicate", {"type": "fact", "subject": "ent:user", "object_text": "x"}, "items[3].predicate"),
    ("missing_subject", {"type": "fact", "predicate": "likes", "object_text": "x"}, "items[3].subject"),
    ("no_object", {"type": "fact", "subject": "ent:user", "predicate": "likes"}, "items[3].object_text"),
    ("both_objects", fact(object_text="x", object_num=1), "items[3].object_num"),
    ("note_without_text", {"type": "note"}, "items[3].text"),
    ("bad_subject", fact(subject="user", object_text="x"), "items[3].subject"),
    ("confidence", fact(object_text="x", confidence=2), "items[3].confidence"),
    ("unit", fact(object_num=1, unit="u" * 33), "items[3].unit"),
    ("object_text", fact(object_text="o" * 4001), "items[3].object_text"),
    ("key", fact(object_text="x", keys=["k" * 129]), "items[3].keys[0]"),
    ("type", {"type": "diary", "text": "x"}, "items[3].type"),
    (
        "valid_to",
        fact(object_text="x", valid_from="2024-02-01T00:00:00Z", valid_to="2024-01-01T00:00:00Z"),
        "items[3].valid_to",
    ),
]


@pytest.mark.parametrize(("case", "item", "field"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_item_rejects_the_batch(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    case: str,
    item: dict[str, Any],
    field: str,
) -> None:
    items = [
        fact(object_text="ent:paris"),
        fact("likes", object_text="tea"),
        {"type": "note", "text": "n"},
        item,
    ]
    r = client.post(BATCH, json={"items": items}, headers=auth)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["error"] == "validation_error" and body["details"]["field"] == field
    assert body["details"]["index"] == 3
    assert store.count_memories("acme") == 0


def test_batch_limits(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    assert client.post(BATCH, json={"items": []}, headers=auth).json()["details"]["field"] == "items"
    many = [{"type": "note", "text": f"n{i}"} for i in range(201)]
    assert client.post(BATCH, json={"items": many}, headers=auth).json()["details"]["field"] == "items"
    r = client.post(BATCH, json={"items": [fact(object_text="x")], "upsert_conflicts": "maybe"}, headers=auth)
    assert r.json()["details"]["field"] == "upsert_conflicts"
    assert store.count_memories("acme") == 0


def test_admin_scope(client: TestClient[Litestar], make_key: KeyMaker, store: Store) -> None:
    rw = make_key("acme", scopes=("read", "write"))
    r = client.post(BATCH, json={"items": [fact(object_text="x")]}, headers=rw)
    assert r.status_code == 403 and r.json()["details"]["required_scope"] == "admin"
    assert client.post("/v0/extract", json={"text": "I live in Paris"}, headers=rw).status_code == 403
    assert store.count_memories() == 0


def test_batch_idempotency(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    headers = {**auth, "Idempotency-Key": "b1"}
    body = {"items": [fact(object_text="ent:paris"), fact(object_text="ent:berlin")]}
    a = client.post(BATCH, json=body, headers=headers)
    b = client.post(BATCH, json=body, headers=headers)
    assert a.content == b.content and b.headers["idempotent-replayed"] == "true"
    assert store.count_memories("acme") == 2


def test_agent_header_fills_agent(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    out = upsert(client, {**auth, "X-Service-Agent": "planner"}, [fact(object_text="x")])
    m = store.get_memory("acme", out["upserts"][0]["memory_id"])
    assert m is not None and m.agent_id == "planner"


# --- /v0/extract -----------------------------------------------------------------------------------
def test_extract_stores_nothing(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    r = client.post("/v0/extract", json={"text": "I live in Paris. My budget is $800."}, headers=auth)
    assert r.status_code == 200, r.text
    body = r.json()
    assert {e["entity_id"] for e in body["entities"]} >= {"ent:paris"}
    by_pred = {f["predicate"]: f for f in body["facts"]}
    assert by_pred["lives_in"]["object"] == "ent:paris" and by_pred["lives_in"]["type"] == "fact"
    assert by_pred["budget"]["object"] == 800 and by_pred["budget"]["unit"] == "USD"
    assert all(f["subject"] == "ent:user" and f["org_id"] == "acme" for f in body["facts"])
    assert store.count_memories() == 0


def test_extract_entity_and_namespace(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    body = client.post(
        "/v0/extract",
        json={"text": "I work at Acme", "entity_id": "ent:anna", "namespace": "crm"},
        headers=auth,
    ).json()
    (f,) = body["facts"]
    assert (f["subject"], f["entity_id"], f["namespace"], f["keys"]) == (
        "ent:anna",
        "ent:anna",
        "crm",
        ["ent:anna|works_at"],
    )


def test_extract_bounds(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    assert client.post("/v0/extract", json={"text": "t" * 20000}, headers=auth).status_code == 200
    for body, field in [
        ({"text": "t" * 20001}, "text"),
        ({}, "text"),
        ({"text": "x", "namespace": "n" * 65}, "namespace"),
    ]:
        r = client.post("/v0/extract", json=body, headers=auth)
        assert r.status_code == 422 and r.json()["details"]["field"] == field


@pytest.mark.parametrize(
    "path", ["/v0/context/assemble", "/v0/recall", BATCH, "/v0/extract", "/v1/memories/"]
)
def test_malformed_bodies_are_400(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, path: str
) -> None:
    r = client.post(path, content=b"{not json", headers={**auth, "Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    r = client.post(path, content=b"text=1", headers={**auth, "Content-Type": "text/plain"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    r = client.post(path, json=[1, 2], headers=auth)
    assert r.status_code == 422 and r.json()["error"] == "validation_error"
    assert store.count_memories() == 0
