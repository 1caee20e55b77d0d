"""mem0's update of a memory's text (PUT /v1/memories/{id}/): a fact's structured value follows the new
text, and its key keeps one current value (issue 28, item 5). Over the routes, a fresh app per test, on
every store."""

from __future__ import annotations

from typing import Any

from litestar import Litestar
from litestar.testing import TestClient

USER = "sam"
T0 = "2025-03-01T09:00:00Z"


def add(client: TestClient[Litestar], auth: dict[str, str], text: str) -> list[dict[str, Any]]:
    body = {"messages": [{"role": "user", "content": text}], "user_id": USER}
    r = client.post("/v1/memories/", json=body, headers=auth)
    assert r.status_code == 200, r.text
    return r.json()["results"]  # type: ignore[no-any-return]


def put(client: TestClient[Litestar], auth: dict[str, str], memory_id: str, **body: Any) -> dict[str, Any]:
    r = client.put(f"/v1/memories/{memory_id}/", json=body, headers=auth)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def stored(client: TestClient[Litestar], auth: dict[str, str], memory_id: str) -> dict[str, Any]:
    r = client.get(f"/v0/memories/{memory_id}", headers=auth)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def current(client: TestClient[Litestar], auth: dict[str, str]) -> list[str]:
    """The texts mem0's list shows (current memories only), sorted."""
    r = client.post("/v2/memories/", json={"filters": {"user_id": USER}}, headers=auth)
    assert r.status_code == 200, r.text
    return sorted(m["memory"] for m in r.json())


def test_new_text_gives_the_fact_its_value_and_a_later_add_supersedes_it(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    ((boston, event),) = [(r["id"], r["event"]) for r in add(client, auth, "I live in Boston.")]
    assert event == "ADD"
    shown = put(client, auth, boston, text="User lives in Chicago")
    assert shown["memory"] == "User lives in Chicago"
    assert shown["metadata"]["object_name"] == "Chicago"
    fact = stored(client, auth, boston)
    assert (fact["predicate"], fact["object"], fact["object_type"], fact["keys"]) == (
        "lives_in",
        "ent:chicago",
        "entity",
        ["ent:sam|lives_in"],
    )
    assert fact["status"] == "active"
    (again,) = add(client, auth, "I live in Boston.")
    assert again["event"] == "UPDATE" and again["id"] != boston
    assert stored(client, auth, boston)["status"] == "superseded"
    assert current(client, auth) == ["User lives in Boston"]


def test_the_same_value_again_after_an_edit_is_none(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (boston,) = add(client, auth, "I live in Boston.")
    put(client, auth, boston["id"], text="I live in Chicago now")
    (again,) = add(client, auth, "I live in Chicago.")
    assert (again["id"], again["event"]) == (boston["id"], "NONE")


def test_free_text_leaves_the_key_and_supersedes_nothing(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (boston,) = add(client, auth, "I live in Boston.")
    put(client, auth, boston["id"], text="Prefers window seats on long flights")
    fact = stored(client, auth, boston["id"])
    assert (fact["type"], fact["subject"], fact["status"]) == ("fact", "ent:sam", "active")
    assert (fact["predicate"], fact["object"], fact["keys"]) == (None, None, None)
    assert "object_name" not in fact["metadata"]
    (denver,) = add(client, auth, "I live in Denver.")
    assert denver["event"] == "ADD"
    assert current(client, auth) == ["Prefers window seats on long flights", "User lives in Denver"]


def test_metadata_given_with_the_text_keeps_the_new_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (boston,) = add(client, auth, "I live in Boston.")
    shown = put(client, auth, boston["id"], text="User lives in Chicago", metadata={"checked": True})
    assert shown["metadata"] == {"checked": True, "object_name": "Chicago"}


def test_a_new_predicate_joins_its_key_behind_a_newer_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (home,) = add(client, auth, "I live in Boston.")
    (job,) = add(client, auth, "I work at Acme.")
    put(client, auth, home["id"], text="User works at Globex")
    moved = stored(client, auth, home["id"])
    assert (moved["predicate"], moved["object"]) == ("works_at", "ent:globex")
    # stated before Acme was: it is history, and Acme stays the one current employer
    assert moved["status"] == "superseded"
    assert moved["valid_to"] == stored(client, auth, job["id"])["valid_from"]
    assert stored(client, auth, job["id"])["status"] == "active"
    assert current(client, auth) == ["User works at Acme"]


def test_a_new_predicate_supersedes_an_older_value_of_its_key(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (job,) = add(client, auth, "I work at Acme.")
    (home,) = add(client, auth, "I live in Boston.")
    put(client, auth, home["id"], text="User works at Globex")
    assert stored(client, auth, job["id"])["status"] == "superseded"
    assert stored(client, auth, job["id"])["valid_to"] == stored(client, auth, home["id"])["valid_from"]
    assert current(client, auth) == ["User works at Globex"]


def test_editing_a_value_away_brings_back_the_one_it_replaced(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (paris,) = add(client, auth, "I live in Paris.")
    (berlin,) = add(client, auth, "I moved to Berlin.")
    assert berlin["event"] == "UPDATE" and stored(client, auth, paris["id"])["status"] == "superseded"
    put(client, auth, berlin["id"], text="User works at Globex")
    back = stored(client, auth, paris["id"])
    assert (back["status"], back["valid_to"]) == ("active", None)
    assert current(client, auth) == ["User lives in Paris", "User works at Globex"]
    (again,) = add(client, auth, "I live in Paris.")
    assert (again["id"], again["event"]) == (paris["id"], "NONE")


def test_deleting_a_value_brings_back_the_one_it_replaced(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """As an edit that takes the value away does: mem0's delete of the newer value leaves the older one."""
    (paris,) = add(client, auth, "I live in Paris.")
    (berlin,) = add(client, auth, "I moved to Berlin.")
    assert current(client, auth) == ["User lives in Berlin"]
    assert client.delete(f"/v1/memories/{berlin['id']}/", headers=auth).status_code == 200
    assert current(client, auth) == ["User lives in Paris"]
    (again,) = add(client, auth, "I live in Paris.")
    assert (again["id"], again["event"]) == (paris["id"], "NONE")


def test_editing_a_stance_away_brings_back_its_contrary(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A dislike of jazz edited to a dislike of opera: the like of jazz it ended holds again; edited back,
    it ends the like again."""
    (like,) = add(client, auth, "I love jazz.")
    (dislike,) = add(client, auth, "I hate jazz now.")
    assert current(client, auth) == ["User dislikes jazz"]
    put(client, auth, dislike["id"], text="User dislikes opera")
    assert current(client, auth) == ["User dislikes opera", "User likes jazz"]
    assert stored(client, auth, like["id"])["status"] == "active"
    put(client, auth, dislike["id"], text="User dislikes jazz")
    assert current(client, auth) == ["User dislikes jazz"]


def test_an_edit_to_the_value_of_another_current_fact_keeps_one(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    tea, coffee = add(client, auth, "I like tea and I like coffee")
    put(client, auth, coffee["id"], text="User likes tea")
    # coffee was stated after tea (same turn, later clause): the older "tea" ends, one remains
    assert stored(client, auth, tea["id"])["status"] == "superseded"
    assert current(client, auth) == ["User likes tea"]
    # the edited one deleted, tea holds again: another value of the list, said later, never ends it
    add(client, auth, "I like jazz")
    assert client.delete(f"/v1/memories/{coffee['id']}/", headers=auth).status_code == 200
    assert (stored(client, auth, tea["id"])["status"], stored(client, auth, tea["id"])["valid_to"]) == (
        "active",
        None,
    )
    assert current(client, auth) == ["User likes jazz", "User likes tea"]


def test_an_ended_value_edited_into_another_key_takes_its_place_there(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Age 29 from June, ended by 31 in March; Rome from June. The 29 edited to "User lives in Chicago"
    holds Chicago beside Rome from June: it keeps its time and ties with Rome. Its end was where age 31
    began, no value of where it lives, so nothing ends it there: both stay current, disputed."""
    facts: list[tuple[str, dict[str, Any], str]] = [
        ("age", {"object_num": 29}, "2024-06-10"),
        ("age", {"object_num": 31}, "2025-03-01"),
        ("lives_in", {"object_text": "Rome"}, "2024-06-10"),
    ]
    ids = []
    for predicate, value, day in facts:
        item = {"subject": "ent:sam", "entity_id": "ent:sam", "predicate": predicate, **value,
                "timestamp": f"{day}T00:00:00Z"}  # fmt: skip
        r = client.post("/v0/memories:batch_upsert", json={"items": [item]}, headers=auth)
        assert r.status_code == 200, r.text
        ids.append(r.json()["upserts"][0]["memory_id"])
    put(client, auth, ids[0], text="User lives in Chicago")
    chicago, rome = stored(client, auth, ids[0]), stored(client, auth, ids[2])
    assert (chicago["predicate"], chicago["status"], chicago["valid_to"]) == (
        "lives_in",
        "disputed",
        None,
    )
    assert (rome["status"], rome["valid_to"]) == ("disputed", None)


def _disputed_pair(client: TestClient[Litestar], auth: dict[str, str]) -> tuple[str, str]:
    items = [
        {"subject": "ent:sam", "entity_id": USER, "predicate": "lives_in", "object_text": city,
         "valid_from": T0, "timestamp": T0, "confidence": 0.8}
        for city in ("Lisbon", "Porto")
    ]  # fmt: skip
    r = client.post("/v0/memories:batch_upsert", json={"items": items}, headers=auth)
    assert r.status_code == 200, r.text
    first, second = (o["memory_id"] for o in r.json()["upserts"])
    assert stored(client, auth, first)["status"] == stored(client, auth, second)["status"] == "disputed"
    return first, second


def test_an_edit_that_settles_a_dispute_leaves_one_active_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    lisbon, porto = _disputed_pair(client, auth)
    put(client, auth, porto, text="User lives in Lisbon")
    statuses = {stored(client, auth, m)["status"] for m in (lisbon, porto)}
    assert statuses == {"active", "superseded"}
    assert current(client, auth) == ["User lives in Lisbon"]


def test_an_edit_that_leaves_a_dispute_leaves_the_other_value_active(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    lisbon, porto = _disputed_pair(client, auth)
    put(client, auth, porto, text="User is vegetarian")
    assert stored(client, auth, lisbon)["status"] == "active"
    assert stored(client, auth, porto)["predicate"] == "diet"
    assert current(client, auth) == ["Sam lives in Lisbon", "User is vegetarian"]


def test_the_history_tells_the_edit(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    (boston,) = add(client, auth, "I live in Boston.")
    put(client, auth, boston["id"], text="User lives in Chicago")
    r = client.get(f"/v1/memories/{boston['id']}/history/", headers=auth)
    assert r.status_code == 200, r.text
    update = r.json()[-1]
    assert (update["event"], update["old_memory"], update["new_memory"]) == (
        "UPDATE",
        "User lives in Boston",
        "User lives in Chicago",
    )
    assert {"text", "object"} <= set(update["metadata"]["fields"])


def test_an_event_memory_keeps_no_value(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    body = {"messages": [{"role": "user", "content": "hello"}], "user_id": USER, "infer": False}
    (raw,) = client.post("/v1/memories/", json=body, headers=auth).json()["results"]
    put(client, auth, raw["id"], text="I live in Oslo")
    event = stored(client, auth, raw["id"])
    assert (event["type"], event["predicate"], event["keys"]) == ("event", None, None)


def test_the_open_source_route_and_the_older_data_field_do_the_same(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    (boston,) = add(client, auth, "I live in Boston.")
    r = client.put(f"/memories/{boston['id']}", json={"data": "User lives in Chicago"}, headers=auth)
    assert r.status_code == 200, r.text
    assert stored(client, auth, boston["id"])["object"] == "ent:chicago"


def test_a_blank_text_is_refused_and_changes_nothing(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """mem0's update with `text` "" (or `data` of spaces) blanked the memory; the add refuses blank messages."""
    mid = add(client, auth, "I live in Boston.")[0]["id"]
    before = stored(client, auth, mid)
    for body in ({"text": ""}, {"data": "  \n"}):
        r = client.put(f"/v1/memories/{mid}/", json=body, headers=auth)
        assert r.status_code == 422 and r.json()["details"]["field"] == "text", r.text
    assert stored(client, auth, mid) == before


def test_a_null_text_or_metadata_is_left_as_it_was(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """mem0's open-source server declares the update's fields nullable and clients generated from it send null
    for the ones they leave alone: `"metadata": null` with a new text was a 422. An expiration_date of null
    still clears it."""
    ((boston, _),) = [(r["id"], r["event"]) for r in add(client, auth, "I live in Boston.")]
    r = client.put(
        f"/memories/{boston}", json={"text": "User lives in Chicago", "metadata": None}, headers=auth
    )
    assert r.status_code == 200, r.text
    assert r.json()["memory"] == "User lives in Chicago" and r.json()["metadata"]["object_name"] == "Chicago"
    shown = put(client, auth, boston, text=None, data=None, metadata={"k": "v"}, expiration_date=None)
    assert shown["memory"] == "User lives in Chicago" and shown["metadata"]["k"] == "v"
    r = client.put(f"/memories/{boston}", json={"text": None, "metadata": None}, headers=auth)
    assert r.status_code == 422 and r.json()["details"]["rule"] == "something_to_update", r.text
