"""The mem0-compatible /v1/memories surface, and that /v0 and /v1 see the same memories."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage.base import Store
from tests.server.conftest import KeyMaker


def add(
    client: TestClient[Litestar],
    auth: dict[str, str],
    *contents: str,
    path: str = "/v1/memories/",
    **fields: Any,
) -> list[dict[str, Any]]:
    body = {"messages": [{"role": "user", "content": c} for c in contents], "user_id": "alice", **fields}
    r = client.post(path, json=body, headers=auth)
    assert r.status_code == 200, r.text
    return r.json()["results"]  # type: ignore[no-any-return]


def test_infer_events_add_update_none_delete(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    (paris,) = add(client, auth, "I live in Paris")
    assert paris["event"] == "ADD" and paris["memory"] == "User lives in Paris"
    (berlin,) = add(client, auth, "I moved to Berlin")
    assert berlin["event"] == "UPDATE" and berlin["id"] != paris["id"]
    (again,) = add(client, auth, "I live in Berlin")
    assert again == {"id": berlin["id"], "memory": "User lives in Berlin", "event": "NONE"}
    (job,) = add(client, auth, "I work at Acme")
    (gone,) = add(client, auth, "I no longer work at Acme")
    assert gone["event"] == "DELETE" and gone["id"] == job["id"]
    old = store.get_memory("acme", paris["id"])
    assert (
        old is not None
        and old.status == "superseded"
        and old.entity_id == "alice"
        and old.subject == "ent:alice"
    )


def test_a_backfilled_add_lists_the_value_that_holds_again_as_added(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """Paris added in January and again in June, then Berlin added dated March: Berlin ends Paris in
    March, and Paris holds again from June as a new memory, which the add lists as ADD."""
    jan, mar, jun = 1704844800, 1709251200, 1717977600  # 2024-01-10, 2024-03-01, 2024-06-10
    (paris,) = add(client, auth, "I live in Paris", timestamp=jan)
    (again,) = add(client, auth, "I live in Paris", timestamp=jun)
    assert again["event"] == "NONE" and again["id"] == paris["id"]
    berlin, resumed = add(client, auth, "I moved to Berlin", timestamp=mar)
    assert berlin["event"] == "UPDATE" and berlin["memory"] == "User lives in Berlin"
    assert resumed["event"] == "ADD" and resumed["memory"] == "User lives in Paris"
    fact = store.get_memory("acme", resumed["id"])
    assert fact is not None and fact.status == "active" and fact.provenance["resumes"] == paris["id"]
    assert fact.valid_from is not None and fact.valid_from.date().isoformat() == "2024-06-10"


def test_infer_false_stores_messages_as_events(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    body = {
        "messages": [
            {"role": "user", "content": "I live in Paris"},
            {"role": "assistant", "content": "Noted, Paris it is."},
        ],
        "agent_id": "travel-bot",
        "run_id": "run-7",
        "metadata": {"channel": "web"},
        "infer": False,
    }
    r = client.post("/v1/memories", json=body, headers=auth)  # no trailing slash works too
    results = r.json()["results"]
    assert [x["event"] for x in results] == ["ADD", "ADD"]
    assert [x["memory"] for x in results] == ["I live in Paris", "Noted, Paris it is."]
    m = store.get_memory("acme", results[1]["id"])
    assert m is not None and m.type == "event" and m.agent_id == "travel-bot" and m.entity_id is None
    assert (
        m.metadata["role"] == "assistant"
        and m.metadata["run_id"] == "run-7"
        and m.metadata["channel"] == "web"
    )
    assert store.count_memories("acme") == 2


@pytest.mark.parametrize("infer", [True, False])
def test_a_system_message_is_neither_read_nor_stored(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, infer: bool
) -> None:
    """A system prompt is an instruction to the model: "I live in Oslo." in it is nobody's home."""
    body = {
        "messages": [
            {"role": "system", "content": "You are a travel agent. I live in Oslo."},
            {"role": "assistant", "content": "Where would you like to go?"},
        ],
        "user_id": "alice",
        "infer": infer,
    }
    r = client.post("/v1/memories/", json=body, headers=auth)
    assert r.status_code == 200, r.text
    assert [x["memory"] for x in r.json()["results"]] == ["Where would you like to go?"]
    assert store.count_memories("acme") == 1


def test_an_assistants_first_person_is_not_the_users_fact(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """An add of assistant messages alone is read as the agent loop reads an `assistant: ` turn: the
    assistant's "I live in Rome" is not the user's home, so it neither becomes "User lives in Rome" nor
    ends the user's Oslo; the message is kept as it came."""
    (oslo,) = add(client, auth, "I live in Oslo")
    body = {
        "messages": [{"role": "assistant", "content": "I live in Rome."}],
        "user_id": "alice",
    }
    r = client.post("/v1/memories/", json=body, headers=auth)
    assert r.status_code == 200, r.text
    assert [(x["event"], x["memory"]) for x in r.json()["results"]] == [("ADD", "I live in Rome.")]
    kept = store.get_memory("acme", oslo["id"])
    assert kept is not None and kept.status == "active"


def test_infer_with_nothing_to_extract_keeps_the_messages(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    results = add(client, auth, "Hello there, how are you?")
    assert [(x["event"], x["memory"]) for x in results] == [("ADD", "Hello there, how are you?")]
    assert store.count_memories("acme") == 1


def test_metadata_and_run_id_on_inferred_facts(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    (x,) = add(client, auth, "I live in Paris", run_id="r1", metadata={"k": "v"})
    m = store.get_memory("acme", x["id"])
    assert m is not None and m.metadata["run_id"] == "r1" and m.metadata["k"] == "v"
    got = client.get(f"/v1/memories/{x['id']}", headers=auth).json()
    assert got["run_id"] == "r1" and got["user_id"] == "alice" and got["memory"] == "User lives in Paris"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, "user_id"),
        ({"messages": [], "user_id": "a"}, "messages"),
        ({"user_id": "a"}, "messages"),
        ({"messages": [{"role": "robot", "content": "hi"}], "user_id": "a"}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": "x" * 20001}], "user_id": "a"}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": "hi"}], "agent_id": "a" * 129}, "agent_id"),
        ({"messages": [{"role": "user", "content": "  "}], "user_id": "a", "infer": False}, "messages"),
        (
            {"messages": [{"role": "system", "content": "Be brief."}], "user_id": "a", "infer": False},
            "messages",
        ),
        ({"messages": [{"role": "system", "content": "I live in Oslo."}], "user_id": "a"}, "messages"),
    ],
)
def test_create_validation(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, body: dict[str, Any], field: str
) -> None:
    r = client.post("/v1/memories/", json=body, headers=auth)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "validation_error" and r.json()["details"]["field"] == field
    # /v1 is mem0's surface: the envelope also carries mem0's `detail` (the message)
    assert set(r.json()) == {"error", "message", "request_id", "details", "detail"}
    assert r.json()["detail"] == r.json()["message"]
    assert store.count_memories() == 0


def test_list_newest_first_and_limit(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    add(client, auth, "first note here", infer=False)
    add(client, auth, "second note here", infer=False)
    add(client, auth, "third note here", infer=False)
    add(client, auth, "bob's note", infer=False, user_id="bob")
    r = client.get("/v1/memories", params={"user_id": "alice", "limit": 2}, headers=auth)
    results = r.json()["results"]
    assert [x["memory"] for x in results] == ["third note here", "second note here"]
    assert all(x["user_id"] == "alice" and x["score"] is None for x in results)
    assert set(results[0]) >= {"id", "memory", "user_id", "score", "created_at"}


def test_list_hides_superseded(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    add(client, auth, "I live in Paris")
    add(client, auth, "I moved to Berlin")
    results = client.get("/v1/memories", params={"user_id": "alice"}, headers=auth).json()["results"]
    assert [x["memory"] for x in results] == ["User lives in Berlin"]


def test_search_with_query(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    add(client, auth, "I live in Paris")
    add(client, auth, "I work at Acme")
    add(client, auth, "I love pizza")
    results = client.get("/v1/memories", params={"user_id": "alice", "query": "pizza"}, headers=auth).json()[
        "results"
    ]
    assert results and results[0]["memory"] == "User likes pizza"
    assert all(isinstance(x["score"], float) for x in results)
    assert [x["score"] for x in results] == sorted((x["score"] for x in results), reverse=True)


def test_filter_by_agent(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    add(client, auth, "agent one note", infer=False, agent_id="one")
    add(client, auth, "agent two note", infer=False, agent_id="two")
    results = client.get("/v1/memories", params={"agent_id": "two"}, headers=auth).json()["results"]
    assert [x["memory"] for x in results] == ["agent two note"]


def test_x_service_agent_names_the_agent_on_v1(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """The spec's X-Service-Agent names the agent on every endpoint: /v1 wrote agent_id null under it,
    so /v0 under the same agent did not see the memory and /v1 under another agent listed it."""
    one = {**auth, "X-Service-Agent": "one"}
    (mine,) = add(client, one, "agent one note", infer=False)
    (named,) = add(client, one, "agent two note", infer=False, agent_id="two")
    got = client.get(f"/v1/memories/{mine['id']}", headers=auth).json()
    assert got["agent_id"] == "one"
    assert client.get(f"/v1/memories/{named['id']}", headers=auth).json()["agent_id"] == "two"
    v0 = client.get("/v0/memories", params={"entity_id": "alice"}, headers=one).json()["items"]
    assert [m["memory_id"] for m in v0] == [mine["id"]]
    listed = client.get("/v1/memories", params={"user_id": "alice"}, headers=one).json()["results"]
    assert [m["id"] for m in listed] == [mine["id"]]
    other = {**auth, "X-Service-Agent": "three"}
    assert client.get("/v1/memories", params={"user_id": "alice"}, headers=other).json()["results"] == []
    # the query's agent_id wins over the header, as on GET /v0/memories
    by_query = client.get("/v1/memories", params={"agent_id": "two"}, headers=other).json()["results"]
    assert [m["id"] for m in by_query] == [named["id"]]
    # the header alone names a scope
    alone = client.get("/v1/memories", headers=one).json()["results"]
    assert [m["id"] for m in alone] == [mine["id"]]


@pytest.mark.parametrize("params", [{"user_id": "alice"}, {"agent_id": "two"}])
def test_a_blank_x_service_agent_on_v1_is_refused_whatever_the_query_names(
    client: TestClient[Litestar], auth: dict[str, str], params: dict[str, str]
) -> None:
    """The header is checked as on /v0 even when the query's agent_id wins over it."""
    r = client.get("/v1/memories", params=params, headers={**auth, "X-Service-Agent": " "})
    assert r.status_code == 422
    assert r.json()["details"]["field"] == "X-Service-Agent"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "user_id"),
        ({"user_id": "a", "limit": 0}, "limit"),
        ({"user_id": "a", "limit": 201}, "limit"),
        ({"user_id": "a", "query": "q" * 20001}, "query"),
    ],
)
def test_list_validation(
    client: TestClient[Litestar], auth: dict[str, str], params: dict[str, Any], field: str
) -> None:
    r = client.get("/v1/memories", params=params, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == field
    assert client.get("/v1/memories", params={"user_id": "a", "limit": 200}, headers=auth).status_code == 200


def test_get_and_delete(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker, store: Store
) -> None:
    (x,) = add(client, auth, "a note to delete", infer=False)
    got = client.get(f"/v1/memories/{x['id']}", headers=auth).json()
    assert got["id"] == x["id"] and got["memory"] == "a note to delete" and got["type"] == "event"
    other = make_key("globex")
    assert client.get(f"/v1/memories/{x['id']}", headers=other).status_code == 404
    assert client.delete(f"/v1/memories/{x['id']}", headers=other).status_code == 404
    r = client.delete(f"/v1/memories/{x['id']}", headers=auth)
    assert r.status_code == 200 and r.json() == {"message": "Memory deleted successfully!"}
    missing = client.get(f"/v1/memories/{x['id']}", headers=auth)
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    assert store.count_memories() == 0


def test_an_archived_memory_reads_as_archived_on_every_mem0_door(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (x,) = add(client, auth, "a note to archive", infer=False)
    r = client.patch(f"/v0/memories/{x['id']}", json={"archived": True}, headers=auth)
    assert r.status_code == 200 and r.json()["archived"] is True and r.json()["status"] == "active"
    assert client.get(f"/v1/memories/{x['id']}", headers=auth).json()["status"] == "archived"
    assert client.get(f"/v1/memories/{x['id']}/", headers=auth).json()["status"] == "archived"
    r = client.patch(f"/v0/memories/{x['id']}", json={"archived": False}, headers=auth)
    assert client.get(f"/v1/memories/{x['id']}", headers=auth).json()["status"] == "active"


def test_delete_linked_deletes_what_the_memory_superseded(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker, store: Store
) -> None:
    """mem0's delete(memory_id, delete_linked=True) also deletes the values the memory superseded,
    transitively; without it the value before holds again (the flag was ignored: Paris came back)."""
    (paris,) = add(client, auth, "I live in Paris")
    (berlin,) = add(client, auth, "I moved to Berlin")
    (rome,) = add(client, auth, "I moved to Rome")
    (job,) = add(client, auth, "I work at Acme")
    assert (
        client.delete(
            f"/v1/memories/{rome['id']}/?delete_linked=true", headers=make_key("globex")
        ).status_code
        == 404
    )
    r = client.delete(f"/v1/memories/{rome['id']}/", params={"delete_linked": "true"}, headers=auth)
    assert r.status_code == 200 and r.json() == {"message": "Memory deleted successfully!"}
    for gone in (paris, berlin, rome):
        assert store.get_memory("acme", gone["id"]) is None
    listed = client.get("/v1/memories/", params={"user_id": "alice"}, headers=auth).json()["results"]
    assert [m["id"] for m in listed] == [job["id"]]
    history = client.get(f"/v1/memories/{paris['id']}/history/", headers=auth).json()
    assert history[-1]["event"] == "DELETE"
    missing = client.delete(f"/v1/memories/{rome['id']}/?delete_linked=true", headers=auth)
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_delete_without_linked_reinstates_the_value_before(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (paris,) = add(client, auth, "I live in Paris")
    (berlin,) = add(client, auth, "I moved to Berlin")
    assert client.delete(f"/v1/memories/{berlin['id']}/?delete_linked=false", headers=auth).status_code == 200
    listed = client.get("/v1/memories/", params={"user_id": "alice"}, headers=auth).json()["results"]
    assert [m["id"] for m in listed] == [paris["id"]]


def test_scopes_and_auth(client: TestClient[Litestar], make_key: KeyMaker) -> None:
    reader = make_key("acme", scopes=("read",))
    body = {"messages": [{"role": "user", "content": "hi"}], "user_id": "a"}
    assert client.post("/v1/memories/", json=body, headers=reader).status_code == 403
    assert client.get("/v1/memories", params={"user_id": "a"}, headers=reader).status_code == 200
    r = client.get("/v1/memories", params={"user_id": "a"})
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def test_both_families_see_the_same_memories(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    (x,) = add(client, auth, "I live in Paris")
    v0 = client.get(f"/v0/memories/{x['id']}", headers=auth).json()
    assert v0["text"] == "User lives in Paris" and v0["entity_id"] == "alice"
    created = client.post(
        "/v0/memories",
        json={"type": "note", "text": "prefers aisle seats", "entity_id": "alice"},
        headers=auth,
    ).json()
    listed = client.get("/v1/memories", params={"user_id": "alice"}, headers=auth).json()["results"]
    assert {m["id"] for m in listed} == {x["id"], created["memory_id"]}
    ctx = client.post(
        "/v0/context/assemble",
        json={
            "entity_id": "alice",
            "turn": "where do I live?",
            "ingest": {"extract": False, "store_turn": "none"},
        },
        headers=auth,
    ).json()
    assert any("Paris" in line for line in ctx["context"]["facts"])
    client.delete(f"/v0/memories/{x['id']}", headers=auth)
    assert client.get(f"/v1/memories/{x['id']}", headers=auth).status_code == 404


def test_create_idempotency(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    headers = {**auth, "Idempotency-Key": "v1-1"}
    body = {"messages": [{"role": "user", "content": "I live in Paris"}], "user_id": "alice"}
    a = client.post("/v1/memories/", json=body, headers=headers)
    b = client.post("/v1/memories/", json=body, headers=headers)
    assert a.content == b.content and store.count_memories("acme") == 1


def test_oss_list_is_the_newest_top_k_and_reads_no_further(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.mem0.operations import SCAN_PAGE

    total = SCAN_PAGE + 100  # more than one store page
    for first in range(0, total, 200):
        items = [
            {
                "type": "note",
                "text": f"note {i}",
                "entity_id": "alice",
                "timestamp": f"2024-01-01T{i // 60:02d}:{i % 60:02d}:00Z",
            }
            for i in range(first, min(first + 200, total))
        ]
        r = client.post("/v0/memories", json={"items": items}, headers=auth)
        assert r.status_code == 200, r.text
    reads: list[object] = []
    list_memories = store.list_memories

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args)
        return list_memories(*args, **kwargs)

    monkeypatch.setattr(store, "list_memories", counted)
    r = client.get("/memories", params={"user_id": "alice", "top_k": 3}, headers=auth)
    assert r.status_code == 200, r.text
    assert [m["memory"] for m in r.json()["results"]] == [f"note {total - 1 - k}" for k in range(3)]
    assert len(reads) == 1  # the first store page holds the newest three: no need to read the rest


@pytest.mark.parametrize("infer", [True, False])
def test_an_expiration_before_the_memories_time_is_refused_before_anything_is_written(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, infer: bool
) -> None:
    """infer true and false agree, and a 422 without an Idempotency-Key has written nothing."""
    body = {"messages": [{"role": "user", "content": "I live in Rome."}], "user_id": "alice", "infer": infer}
    r = client.post("/v3/memories/add/", json={**body, "expiration_date": "2020-01-01"}, headers=auth)
    assert r.status_code == 422, r.text
    assert store.count_memories("acme") == 0
    assert r.json()["details"]["field"] == "expiration_date"
    # the memories begin at the add's timestamp: dated before the expiration, they are stored
    dated = {**body, "expiration_date": "2020-01-01", "timestamp": 1546300800}  # 2019-01-01
    (x,) = client.post("/v3/memories/add/", json=dated, headers=auth).json()["results"]
    got = client.get(f"/v1/memories/{x['id']}", headers=auth).json()
    assert got["expiration_date"] == "2020-01-01"


def test_an_expiration_date_reaches_the_facts_an_add_updates(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (boston,) = add(client, auth, "I live in Boston.", path="/v3/memories/add/")
    (chicago,) = add(
        client, auth, "I live in Chicago now.", path="/v3/memories/add/", expiration_date="2030-01-01"
    )
    assert chicago["event"] == "UPDATE"
    assert client.get(f"/v1/memories/{chicago['id']}", headers=auth).json()["expiration_date"] == "2030-01-01"
    assert client.get(f"/v1/memories/{boston['id']}", headers=auth).json()["status"] == "superseded"
    # NONE: the fact is already known; it keeps its own expiration
    (likes,) = add(client, auth, "I like tea.")
    (again,) = add(client, auth, "I like tea.", expiration_date="2031-01-01")
    assert again == {**likes, "event": "NONE"}
    assert client.get(f"/v1/memories/{likes['id']}", headers=auth).json()["expiration_date"] is None


def _add_v3(client: TestClient[Litestar], auth: dict[str, str], text: str, **scope: str) -> dict[str, Any]:
    r = client.post(
        "/v3/memories/add/", json={"messages": [{"role": "user", "content": text}], **scope}, headers=auth
    )
    assert r.status_code == 200, r.text
    (item,) = r.json()["results"]
    return item  # type: ignore[no-any-return]


def _get_all(client: TestClient[Litestar], auth: dict[str, str], **filters: str) -> list[dict[str, Any]]:
    r = client.post("/v3/memories/", json={"filters": filters}, headers=auth)
    assert r.status_code == 200, r.text
    return r.json()["results"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("scope", ["run_id", "app_id"])
def test_runs_and_apps_without_a_user_keep_their_own_facts(
    client: TestClient[Litestar], auth: dict[str, str], scope: str
) -> None:
    denver = _add_v3(client, auth, "I live in Denver.", **{scope: "A"})
    assert denver["event"] == "ADD"
    austin = _add_v3(client, auth, "I live in Austin.", **{scope: "B"})
    assert austin["event"] == "ADD"  # another run's fact is neither updated nor a duplicate
    again = _add_v3(client, auth, "I live in Denver.", **{scope: "B"})
    assert again["event"] == "UPDATE" and again["id"] != denver["id"]
    (a,) = _get_all(client, auth, **{scope: "A"})
    assert (a["id"], a["memory"], a["user_id"], a[scope]) == (denver["id"], "User lives in Denver", None, "A")
    (b,) = _get_all(client, auth, **{scope: "B"})
    assert b["id"] == again["id"]
    for name, wanted in (("A", denver["id"]), ("B", again["id"])):
        found = client.post(
            "/v3/memories/search/", json={"query": "where do I live", "filters": {scope: name}}, headers=auth
        ).json()["results"]
        assert [m["id"] for m in found] == [wanted]


def test_a_users_runs_keep_their_own_facts(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    denver = _add_v3(client, auth, "I live in Denver.", user_id="u", run_id="A")
    same = _add_v3(client, auth, "I live in Denver.", user_id="u", run_id="B")
    assert same["event"] == "ADD" and same["id"] != denver["id"]
    austin = _add_v3(client, auth, "I live in Austin.", user_id="u", run_id="B")
    assert austin["event"] == "UPDATE"
    assert [m["id"] for m in _get_all(client, auth, user_id="u", run_id="A")] == [denver["id"]]
    assert [m["id"] for m in _get_all(client, auth, user_id="u", run_id="B")] == [austin["id"]]
    # the user's own space (no run) is a third one, and the user's get_all sees all three
    home = _add_v3(client, auth, "I live in Boston.", user_id="u")
    assert home["event"] == "ADD"
    assert {m["id"] for m in _get_all(client, auth, user_id="u")} == {denver["id"], austin["id"], home["id"]}


def test_a_search_ranks_within_its_filters_whatever_others_hold(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """The filter selects, then the recall ranks within the selection: other users' memories that rank
    higher never crowd the caller's out, and filters that select the same memories answer alike."""
    old = 1_600_000_000  # 2020: recency does not help it either
    body = {"messages": [{"role": "user", "content": "Went for a coffee downtown"}], "infer": False}
    r = client.post(
        "/v3/memories/add/", json={**body, "user_id": "u", "run_id": "r", "timestamp": old}, headers=auth
    )
    (mine,) = r.json()["results"]
    crowd = [
        {"type": "event", "text": f"coffee coffee espresso coffee note {i}", "entity_id": f"other-{i}"}
        for i in range(150)
    ]
    assert client.post("/v0/memories", json={"items": crowd}, headers=auth).status_code == 200

    def search(filters: dict[str, Any]) -> list[str]:
        r = client.post("/v3/memories/search/", json={"query": "coffee", "filters": filters}, headers=auth)
        assert r.status_code == 200, r.text
        return [m["id"] for m in r.json()["results"]]

    assert search({"run_id": "r"}) == [mine["id"]]
    assert search({"user_id": "u"}) == [mine["id"]]
    assert search({"user_id": {"in": ["u", "nobody"]}}) == [mine["id"]]
    assert search({"OR": [{"user_id": "u"}, {"user_id": "nobody"}]}) == [mine["id"]]
    one = client.post(
        "/v3/memories/search/", json={"query": "coffee", "filters": {"user_id": "u"}}, headers=auth
    )
    listed = client.post(
        "/v3/memories/search/", json={"query": "coffee", "filters": {"user_id": {"in": ["u"]}}}, headers=auth
    )
    assert one.json() == listed.json()


def test_a_search_answers_up_to_its_limit_of_200(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    notes = [{"role": "user", "content": f"apple note {i}"} for i in range(150)]
    r = client.post(
        "/v1/memories/", json={"messages": notes, "user_id": "bulk", "infer": False}, headers=auth
    )
    assert r.status_code == 200, r.text
    found = client.get(
        "/v1/memories", params={"user_id": "bulk", "query": "apple note", "limit": 200}, headers=auth
    )
    assert len(found.json()["results"]) == 150
    some = client.get(
        "/v1/memories", params={"user_id": "bulk", "query": "apple note", "limit": 120}, headers=auth
    )
    assert len(some.json()["results"]) == 120


def test_a_search_answers_its_top_k_whatever_predicate_they_share(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Six likes, top_k 10: every search route answered three (the assemble's diversity cap of three
    per predicate), where mem0 answers the top_k most relevant."""
    likes = "I like jazz. I like hiking. I like chess. I like sushi. I like painting. I like tennis."
    add(client, auth, likes, user_id="lk")
    for path in ("/v3/memories/search/", "/v2/memories/search/", "/v1/memories/search/", "/search"):
        r = client.post(
            path, json={"query": "what does the user like?", "user_id": "lk", "top_k": 10}, headers=auth
        )
        assert r.status_code == 200, r.text
        found = r.json()["results"] if isinstance(r.json(), dict) else r.json()
        assert len(found) == 6, (path, found)
    listed = client.get("/v1/memories", params={"user_id": "lk", "query": "likes", "limit": 10}, headers=auth)
    assert len(listed.json()["results"]) == 6


def test_the_v1_list_takes_runs_apps_and_top_k(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """GET /v1/memories/ with run_id or app_id answered every run's memories, or 422 without a user."""
    for city, scope in (("Paris", {"run_id": "r1"}), ("Rome", {"run_id": "r2"}), ("Kyiv", {"app_id": "a1"})):
        add(client, auth, f"I live in {city}", user_id="s1", **scope)
    add(client, auth, "I work at Acme", user_id="s1")
    for params, want in (
        ({"user_id": "s1", "run_id": "r1"}, ["User lives in Paris"]),
        ({"run_id": "r2"}, ["User lives in Rome"]),
        ({"user_id": "s1", "app_id": "a1"}, ["User lives in Kyiv"]),
        ({"user_id": "s1", "app_id": "zz"}, []),
        ({"user_id": "s1", "run_id": "r1", "query": "where do I live"}, ["User lives in Paris"]),
    ):
        r = client.get("/v1/memories", params=params, headers=auth)
        assert r.status_code == 200, r.text
        assert [x["memory"] for x in r.json()["results"]] == want, params
    r = client.get("/v1/memories", params={"user_id": "s1", "top_k": 2}, headers=auth)
    assert len(r.json()["results"]) == 2


def test_the_v1_list_shows_run_and_app_as_the_v1_get_does(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """GET /v1/memories items had no run_id or app_id (a mem0 v1 client reading them got a KeyError)."""
    (x,) = add(client, auth, "a note", infer=False, run_id="r1", app_id="a1")
    got = client.get(f"/v1/memories/{x['id']}", headers=auth).json()
    for params in ({"run_id": "r1"}, {"user_id": "alice", "query": "note"}):
        (item,) = client.get("/v1/memories", params=params, headers=auth).json()["results"]
        assert (item["run_id"], item["app_id"]) == (got["run_id"], got["app_id"]) == ("r1", "a1")
    (plain,) = add(client, auth, "another note", infer=False, user_id="bob")
    (item,) = client.get("/v1/memories", params={"user_id": "bob"}, headers=auth).json()["results"]
    assert item["id"] == plain["id"] and item["run_id"] is None and item["app_id"] is None


def test_the_oss_search_reads_other_filter_keys_as_metadata(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """mem0's open-source server matches a filter key it does not know against metadata: a 422 here."""
    for text, source in (("I play tennis", "email"), ("I play chess", "chat")):
        add(client, auth, text, user_id="md", metadata={"source": source})
    body = {"query": "sports", "user_id": "md", "filters": {"source": "email"}}
    r = client.post("/search", json=body, headers=auth)
    assert r.status_code == 200, r.text
    assert [x["memory"] for x in r.json()["results"]] == ["User plays tennis"]
    r = client.post("/v3/memories/search/", json=body, headers=auth)  # the platform's language: no such key
    assert r.status_code == 422


def test_a_metadata_filter_takes_the_operators_of_the_other_keys(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """`{"metadata": {"priority": {"gte": 3}}}` was compared as equal to that object: it matched nothing,
    on get_all, search and the open-source server's bare keys alike."""
    for text, priority, source in (("call the plumber", 5, "email"), ("call the baker", 1, "chat")):
        add(client, auth, text, infer=False, user_id="md", metadata={"priority": priority, "source": source})
    add(client, auth, "call the tailor", infer=False, user_id="md", metadata={"priority": "high"})
    cases: list[tuple[dict[str, Any], set[str]]] = [
        ({"priority": {"gte": 3}}, {"call the plumber"}),
        ({"priority": {"in": [1, 5]}}, {"call the plumber", "call the baker"}),
        ({"source": {"ne": "email"}}, {"call the baker", "call the tailor"}),
        ({"source": {"icontains": "MAI"}}, {"call the plumber"}),
        ({"source": "*"}, {"call the plumber", "call the baker"}),
        ({"source": "chat"}, {"call the baker"}),
    ]
    for metadata, expected in cases:
        listed = client.post(
            "/v3/memories/", json={"filters": {"user_id": "md", "metadata": metadata}}, headers=auth
        )
        assert listed.status_code == 200, listed.text
        assert {m["memory"] for m in listed.json()["results"]} == expected, metadata
        body = {"query": "call", "user_id": "md", "filters": metadata}
        found = client.post("/search", json=body, headers=auth)
        assert {m["memory"] for m in found.json()["results"]} == expected, metadata
    for bad, named in (({"p": {"regex": "x"}}, "regex"), ({"p": {"in": "x"}}, "`in`")):
        r = client.post("/v3/memories/", json={"filters": {"user_id": "md", "metadata": bad}}, headers=auth)
        assert r.status_code == 422 and named in r.json()["message"], r.text


def test_a_null_optional_field_reads_as_its_default(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """mem0's open-source server declares every optional field nullable, and clients generated from it send
    null for those they leave unset: `"infer": null`, `"metadata": null`, `"top_k": null` were 422s."""
    body = {
        "messages": [{"role": "user", "content": "I live in Oslo"}],
        "user_id": "nulls",
        "agent_id": None,
        "run_id": None,
        "metadata": None,
        "infer": None,
        "expiration_date": None,
    }
    for path in ("/memories", "/v1/memories/", "/v3/memories/add/"):
        r = client.post(path, json=body, headers=auth)
        assert r.status_code == 200, (path, r.text)
        assert r.json()["results"][0]["memory"] == "User lives in Oslo"  # infer: null is infer: true
    search = {
        "query": "where",
        "user_id": "nulls",
        "filters": None,
        "top_k": None,
        "threshold": None,
        "rerank": None,
        "show_expired": None,
    }
    for path in ("/search", "/v3/memories/search/"):
        r = client.post(path, json=search, headers=auth)
        assert r.status_code == 200, (path, r.text)
        assert [m["memory"] for m in r.json()["results"]] == ["User lives in Oslo"]
    listed = {"filters": {"user_id": "nulls"}, "show_expired": None, "page": None, "page_size": None}
    r = client.post("/v3/memories/", json=listed, headers=auth)
    assert r.status_code == 200 and r.json()["count"] == 1, r.text


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_delete_users_names_an_id_holding_a_slash(
    client: TestClient[Litestar], auth: dict[str, str], version: str
) -> None:
    """mem0's delete_users (and reset) sends /v2/entities/user/team%2Falice/: it was a bare 404, so the
    user could not be deleted and reset stopped there."""
    add(client, auth, "a note", infer=False, user_id="team/alice")
    add(client, auth, "a note", infer=False, user_id="alice")
    add(client, auth, "a note", infer=False, agent_id="bots/one", user_id="bob")
    r = client.delete(f"/{version}/entities/user/team%2Falice/", headers=auth)
    assert r.status_code == 200 and r.json()["deleted"] == 1, r.text
    r = client.delete(f"/{version}/entities/agent/bots%2Fone", headers=auth)
    assert r.status_code == 200 and r.json()["deleted"] == 1, r.text
    names = {e["name"] for e in client.get("/v1/entities/", headers=auth).json()["results"]}
    assert names == {"alice"}  # bob's one memory was the agent's
    for method in ("GET", "POST", "DELETE"):  # mem0's profiles are still not supported
        r = client.request(method, "/v2/entities/user/alice/profile/", headers=auth)
        assert r.status_code == 501 and "profiles" in r.json()["message"], (method, r.text)


def test_the_list_without_a_query_hides_expired_memories(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    old = add(client, auth, "door code 4417", infer=False, timestamp=1609459200, expiration_date="2021-06-30")
    new = add(client, auth, "door code 9902", infer=False)
    listed = client.get("/v1/memories", params={"user_id": "alice"}, headers=auth).json()["results"]
    assert [m["id"] for m in listed] == [new[0]["id"]]
    assert client.get(f"/v1/memories/{old[0]['id']}", headers=auth).json()["expiration_date"] == "2021-06-30"


def test_the_list_is_sorted_by_the_creation_time_it_shows(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """mem0's add sets a memory's creation time with `timestamp`: created_at shows it, the list sorts by
    it, and the created_at filter compares it."""
    (first,) = add(client, auth, "first created", infer=False)
    (second,) = add(client, auth, "second created", infer=False, timestamp=1500000000)
    listed = client.get("/v1/memories", params={"user_id": "alice"}, headers=auth).json()["results"]
    assert [m["id"] for m in listed] == [first["id"], second["id"]]
    assert [m["created_at"] for m in listed] == sorted((m["created_at"] for m in listed), reverse=True)
    assert listed[1]["created_at"] == "2017-07-14T02:40:00Z"
    (got,) = client.post(
        "/v3/memories/",
        json={"filters": {"AND": [{"user_id": "alice"}, {"created_at": {"lt": "2018-01-01"}}]}},
        headers=auth,
    ).json()["results"]
    assert (got["id"], got["created_at"]) == (second["id"], "2017-07-14T02:40:00Z")


def test_history_keeps_the_text_of_a_deleted_memory(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (x,) = add(client, auth, "I live in Oslo.")
    assert client.delete(f"/v1/memories/{x['id']}/", headers=auth).status_code == 200
    history = client.get(f"/v1/memories/{x['id']}/history/", headers=auth).json()
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "User lives in Oslo"),
        ("DELETE", "User lives in Oslo", None),
    ]


def test_history_keeps_the_agent_of_a_deleted_memory(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """After a delete (one, or a prune's), every history entry had agent_id null: only the live memory
    named its agent."""
    for how in ("delete", "prune"):
        (x,) = add(client, auth, f"note to {how}", infer=False, agent_id="helper", user_id=how)
        before = client.get(f"/v1/memories/{x['id']}/history/", headers=auth).json()
        assert [h["agent_id"] for h in before] == ["helper"]
        if how == "delete":
            assert client.delete(f"/v1/memories/{x['id']}/", headers=auth).status_code == 200
        else:
            body = {"entity_id": how, "types": ["event"], "dry_run": False}
            assert client.post("/v0/prune", json=body, headers=auth).json()["count"] == 1
        after = client.get(f"/v1/memories/{x['id']}/history/", headers=auth).json()
        assert [(h["event"], h["user_id"], h["agent_id"]) for h in after] == [
            ("ADD", how, "helper"),
            ("DELETE", how, "helper"),
        ], how


@pytest.mark.parametrize(
    ("key", "infer"),
    [("role", False), ("origin", False), ("run_id", False), ("app_id", True), ("object_name", True)],
)
def test_metadata_keys_loci_writes_itself_are_refused(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, key: str, infer: bool
) -> None:
    body = {"messages": [{"role": "user", "content": "I live in Oslo"}], "user_id": "u", "infer": infer}
    r = client.post("/v3/memories/add/", json={**body, "metadata": {key: "mine", "k": "v"}}, headers=auth)
    assert r.status_code == 422, r.text
    assert r.json()["details"]["field"] == f"metadata.{key}"
    assert store.count_memories("acme") == 0


def test_the_callers_metadata_is_kept_and_loci_keeps_its_own(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (note,) = add(client, auth, "call me later", infer=False, metadata={"crm": "acme"})
    got = client.get(f"/v1/memories/{note['id']}", headers=auth).json()
    assert got["metadata"] == {"crm": "acme", "role": "user", "origin": "v1"}
    # an update replaces the caller's keys; Loci's own stay, and may be sent back as they are
    r = client.put(
        f"/v1/memories/{note['id']}/", json={"metadata": {**got["metadata"], "crm": "globex"}}, headers=auth
    )
    assert r.status_code == 200 and r.json()["metadata"] == {"crm": "globex", "role": "user", "origin": "v1"}
    r = client.put(f"/v1/memories/{note['id']}/", json={"metadata": {"x": 1}}, headers=auth)
    assert r.json()["metadata"] == {"x": 1, "role": "user", "origin": "v1"}
    r = client.put(f"/v1/memories/{note['id']}/", json={"metadata": {"role": "admin"}}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["field"] == "metadata.role"
    (fact,) = add(client, auth, "I live in Oslo")
    r = client.put(f"/v1/memories/{fact['id']}/", json={"metadata": {"x": 1}}, headers=auth)
    assert r.json()["metadata"] == {"x": 1, "object_name": "Oslo"}


def test_delete_all_takes_the_filters_mem0_clients_send(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """mem0ai's delete_all(filters={...}) sends the dict's Python repr as a query parameter."""
    add(client, auth, "a note", infer=False, user_id="a", run_id="r1")
    add(client, auth, "a note", infer=False, user_id="a", run_id="r2")
    add(client, auth, "b note", infer=False, user_id="b")

    def delete_all(filters: str) -> Any:
        return client.delete("/v1/memories/", params={"filters": filters}, headers=auth)

    r = delete_all(str({"user_id": "a", "run_id": "r1"}))
    assert r.status_code == 200 and r.json()["deleted"] == 1, r.text
    assert delete_all('{"user_id": "a"}').json()["deleted"] == 1
    for bad in ("{'created_at': {'gte': '2020-01-01'}}", "not a dict", "['user_id']", "__import__('os')"):
        assert delete_all(bad).status_code == 422, bad
    assert store.count_memories("acme") == 1


def test_time_filters_compare_times_with_every_operator(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """`ne` matched every memory and `in` none: they compared the filter's string with a date-time."""
    ids = {}
    for text, at in (("Note alpha", 1714536000), ("Note beta", 1714606200)):  # 04:00Z and 23:30Z
        body = {
            "messages": [{"role": "user", "content": text}],
            "user_id": "u_t",
            "infer": False,
            "timestamp": at,
        }
        (item,) = client.post("/v1/memories/", json=body, headers=auth).json()["results"]
        ids[text] = item["id"]

    def picked(condition: dict[str, Any]) -> set[str]:
        filters = {"AND": [{"user_id": "u_t"}, condition]}
        r = client.post("/v3/memories/", json={"filters": filters}, headers=auth)
        assert r.status_code == 200, r.text
        return {m["id"] for m in r.json()["results"]}

    alpha, beta = {ids["Note alpha"]}, {ids["Note beta"]}
    for key in ("created_at", "timestamp"):
        assert picked({key: {"ne": "2024-05-01T04:00:00Z"}}) == beta
        assert picked({key: {"in": ["2024-05-01T04:00:00Z"]}}) == alpha
        assert picked({key: {"in": [1714606200]}}) == beta
        assert picked({key: {"lt": "2024-05-01T23:30:00z"}}) == alpha  # RFC 3339 allows a lower-case z


def test_get_all_takes_days_and_date_times_as_its_bounds(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """mem0's client documents start_date and end_date as ISO 8601: a day or a date-time."""
    memory_id = _add_v3(client, auth, "I live in Rome", user_id="u")["id"]
    (got,) = _get_all(client, auth, user_id="u")
    at = datetime.fromisoformat(got["created_at"].replace("Z", "+00:00")).astimezone(UTC)
    second = timedelta(seconds=1)

    def found(**bounds: str) -> bool:
        r = client.post("/v3/memories/", json={"filters": {"user_id": "u"}, **bounds}, headers=auth)
        assert r.status_code == 200, r.text
        return [m["id"] for m in r.json()["results"]] == [memory_id]

    iso = at.isoformat()
    assert found(start_date=iso) and found(end_date=iso) and found(start_date=iso, end_date=iso)
    assert not found(start_date=(at + second).isoformat())
    assert not found(end_date=(at - second).isoformat())
    assert found(start_date=at.replace(tzinfo=None).isoformat())  # no offset: UTC
    assert found(start_date=at.date().isoformat(), end_date=at.date().isoformat())
    assert not found(end_date=(at.date() - timedelta(days=1)).isoformat())
    for bad in ("yesterday", "2020-02-30", "2020-01-01T25:00:00Z", "2020-01-01 nonsense"):
        r = client.post("/v3/memories/", json={"filters": {"user_id": "u"}, "start_date": bad}, headers=auth)
        assert r.status_code == 422, r.text
        assert r.json()["details"]["field"] == "start_date"
