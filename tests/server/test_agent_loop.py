"""The agent loop over HTTP, on every store: each turn through assemble with the default ingest, then
asked about. Each test is one reproduction of issue 28 (a request sequence on a fresh server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from litestar import Litestar
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.ids import memory_id
from engine.models import text_hash
from engine.storage.base import ListQuery, Store
from tests.server.conftest import KeyMaker

ASSEMBLE = "/v0/context/assemble"
READ_ONLY = {"extract": False, "store_turn": "none"}
MODEL = HashEmbedder().model


def assemble(
    client: TestClient[Litestar], headers: dict[str, str], entity: str, turn: str, **fields: Any
) -> Any:
    r = client.post(ASSEMBLE, json={"entity_id": entity, "turn": turn, **fields}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def recall(client: TestClient[Litestar], headers: dict[str, str], entity: str, query: str) -> list[Any]:
    r = client.post("/v0/recall", json={"query": query, "entity_id": entity}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["matches"]  # type: ignore[no-any-return]


def missing_vectors(store: Store, org: str = "acme") -> list[str]:
    live = store.list_memories(org, ListQuery(limit=500))
    held = store.get_embeddings(MODEL, [text_hash(m.text) for m in live])
    return [m.text for m in live if text_hash(m.text) not in held]


def current_facts(
    client: TestClient[Litestar], headers: dict[str, str], entity: str, **fields: Any
) -> list[str]:
    body = assemble(client, headers, entity, "What do you know about me?", ingest=READ_ONLY, **fields)
    return body["context"]["facts"]  # type: ignore[no-any-return]


# --- 1. a turn stored by assemble has its vector ------------------------------------------------------
def test_a_turn_stored_by_assemble_is_embedded(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    dentist = "I went to the dentist on Tuesday."
    assemble(client, auth, "ent:x", dentist)  # embedded first as the query, then stored
    r = client.post(
        "/v0/memories",
        json={"type": "event", "text": "I went to the optician on Wednesday.", "entity_id": "ent:x"},
        headers=auth,
    )
    assert r.status_code == 200
    assert missing_vectors(store) == []
    by_text = {m["text"]: m for m in recall(client, auth, "ent:x", "a visit to the dentist")}
    assert by_text[dentist]["score_components"]["semantic"]["raw"] > 0


def test_a_recall_query_later_stored_is_embedded(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    text = "Bob prefers green tea in the morning"
    recall(client, auth, "ent:bob", text)
    r = client.post("/v0/memories", json={"type": "note", "text": text, "entity_id": "ent:bob"}, headers=auth)
    assert r.status_code == 200
    assert missing_vectors(store) == []


# --- 2. a new scope's first memories are found ---------------------------------------------------------
def test_the_first_memory_of_a_scope_is_found(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    assemble(client, auth, "ent:alice", "Alice lives in Lisbon")
    found = [m["text"] for m in recall(client, auth, "ent:alice", "Where does Alice live?")]
    assert "Alice lives in Lisbon" in found
    context = assemble(client, auth, "ent:alice", "Where does Alice live?", ingest=READ_ONLY)["context"]
    assert any("Lisbon" in line for line in context["facts"] + context["recent_events"])


# --- 3. a backdated fact ends when the next value began -----------------------------------------------
def test_a_backdated_fact_ends_when_the_next_value_began(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    assemble(client, auth, "ent:tom", "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    assemble(client, auth, "ent:tom", "I moved to Berlin.", as_of="2024-06-10T00:00:00Z")
    madrid = assemble(client, auth, "ent:tom", "I live in Madrid.", as_of="2023-06-01T00:00:00Z")
    fact_id = madrid["extracted"]["upserts"][1]["memory_id"]
    stored = client.get(f"/v0/memories/{fact_id}", headers=auth).json()
    assert stored["status"] == "superseded" and stored["valid_to"].startswith("2024-01-10")
    then = current_facts(client, auth, "ent:tom", as_of="2024-03-01T00:00:00Z")
    assert [line for line in then if "lives in" in line] == [next(x for x in then if "Paris" in x)]
    assert "lives in Madrid" in current_facts(client, auth, "ent:tom", as_of="2023-09-01T00:00:00Z")[0]


def test_values_said_out_of_order_hold_by_their_times(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris in January and again in June, then Berlin dated March (a backfill): Berlin from March to
    June, Paris again from June. Then Rome in June and Rome dated April: one fact, from April."""
    paris = assemble(client, auth, "ent:eve", "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    paris_id = paris["extracted"]["upserts"][1]["memory_id"]
    again = assemble(client, auth, "ent:eve", "I live in Paris.", as_of="2024-06-10T00:00:00Z")
    assert again["extracted"]["upserts"][1]["action"] == "SKIPPED"
    berlin = assemble(client, auth, "ent:eve", "I moved to Berlin.", as_of="2024-03-01T00:00:00Z")
    outcome = berlin["extracted"]["upserts"][1]
    assert outcome["action"] == "SUPERSEDED" and outcome["supersedes"] == [paris_id]
    (resumed_id,) = outcome["resumed"]  # a new fact: Paris again from June
    resumed = client.get(f"/v0/memories/{resumed_id}", headers=auth).json()
    assert resumed["valid_from"].startswith("2024-06-10") and resumed["provenance"]["resumes"] == paris_id

    def lives(as_of: str) -> list[str]:
        facts = current_facts(client, auth, "ent:eve", as_of=f"{as_of}T00:00:00Z")
        return [x.split(" (")[0] for x in facts if "lives in" in x]

    assert lives("2024-02-01") == lives("2024-07-01") == lives("2026-01-01") == ["User lives in Paris"]
    assert lives("2024-04-01") == ["User lives in Berlin"]

    rome = assemble(client, auth, "ent:ida", "I live in Rome.", as_of="2024-06-10T00:00:00Z")
    rome_id = rome["extracted"]["upserts"][1]["memory_id"]
    early = assemble(client, auth, "ent:ida", "I live in Rome.", as_of="2024-04-01T00:00:00Z")
    assert early["extracted"]["upserts"][1]["memory_id"] == rome_id
    assert client.get(f"/v0/memories/{rome_id}", headers=auth).json()["valid_from"].startswith("2024-04-01")
    then = current_facts(client, auth, "ent:ida", as_of="2024-05-01T00:00:00Z")
    assert [x for x in then if "lives in" in x][0].startswith("User lives in Rome")


# --- 4. a fact back from the archive does not leave two current values ----------------------------------
def test_unarchiving_keeps_one_current_value(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    lisbon = assemble(client, auth, "ent:user", "I live in Lisbon.")["extracted"]["upserts"][1]["memory_id"]
    assert client.patch(f"/v0/memories/{lisbon}", json={"archived": True}, headers=auth).status_code == 200
    porto = assemble(client, auth, "ent:user", "I live in Porto.")["extracted"]["upserts"][1]
    assert porto["action"] == "UPSERTED" and porto["supersedes"] == []
    back = client.patch(f"/v0/memories/{lisbon}", json={"archived": False}, headers=auth).json()
    assert back["status"] == "superseded" and back["valid_to"] is not None  # Porto came later
    lives = [line for line in current_facts(client, auth, "ent:user") if "lives in" in line]
    assert len(lives) == 1 and "Porto" in lives[0]
    listed = client.get("/v0/memories", params={"type": "fact", "status": "active"}, headers=auth).json()
    assert [m["memory_id"] for m in listed["items"]] == [porto["memory_id"]]


def _facts_saying(
    client: TestClient[Litestar], headers: dict[str, str], entity: str, words: str, as_of: str | None
) -> list[str]:
    """The entity's current facts (as of a day, when given) that hold `words`, without their dates."""
    fields = {"as_of": f"{as_of}T00:00:00Z"} if as_of else {}
    facts = current_facts(client, headers, entity, **fields)
    return [x.split(" (")[0] for x in facts if words in x]


def _lives(
    client: TestClient[Litestar], headers: dict[str, str], entity: str, as_of: str | None = None
) -> list[str]:
    return _facts_saying(client, headers, entity, "lives in", as_of)


def _remove(client: TestClient[Litestar], headers: dict[str, str], memory_id: str, how: str) -> None:
    """Delete (`how` "deleted") or archive a memory."""
    r = (
        client.delete(f"/v0/memories/{memory_id}", headers=headers)
        if how == "deleted"
        else client.patch(f"/v0/memories/{memory_id}", json={"archived": True}, headers=headers)
    )
    assert r.status_code == 200, r.text


def test_a_value_deleted_or_archived_gives_back_the_one_it_replaced(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris, Berlin, Rome; Berlin removed: Paris until Rome began. Rome removed: Paris is the value, as
    when an edit takes a value out of its key. Unarchived, Rome is the value again; archived again, not."""
    for how in ("deleted", "archived"):
        entity = f"ent:gone-{how}"
        ids = [
            assemble(client, auth, entity, f"I live in {city}.", as_of=f"2024-{month}-01T00:00:00Z")[
                "extracted"
            ]["upserts"][1]["memory_id"]
            for city, month in (("Paris", "01"), ("Berlin", "03"), ("Rome", "06"))
        ]
        paris, berlin, rome = ids

        _remove(client, auth, berlin, how)
        assert _lives(client, auth, entity, "2024-04-01") == ["User lives in Paris"], how
        held = client.get(f"/v0/memories/{paris}", headers=auth).json()
        assert (held["status"], held["valid_to"][:10]) == ("superseded", "2024-06-01"), how
        assert _lives(client, auth, entity) == ["User lives in Rome"], how
        _remove(client, auth, rome, how)
        assert (
            _lives(client, auth, entity)
            == _lives(client, auth, entity, "2024-07-01")
            == ["User lives in Paris"]
        )
        held = client.get(f"/v0/memories/{paris}", headers=auth).json()
        assert (held["status"], held["valid_to"]) == ("active", None), how
        events = client.get("/v0/observability/events", params={"memory_id": paris}, headers=auth).json()
        assert [e["data"].get("reason") for e in events["items"]].count("reinstated") == 2, how
        if how == "archived":
            for archived, city in ((False, "Rome"), (True, "Paris")):
                r = client.patch(f"/v0/memories/{rome}", json={"archived": archived}, headers=auth)
                assert r.status_code == 200, r.text
                assert _lives(client, auth, entity) == [f"User lives in {city}"], archived


def test_a_value_deleted_gives_back_the_history_stored_before_it(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris in January, Berlin in June, then Madrid dated the year before (history ending when Paris
    began). Paris deleted: Madrid holds until Berlin began."""
    entity = "ent:gone-history"
    paris = assemble(client, auth, entity, "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    assemble(client, auth, entity, "I moved to Berlin.", as_of="2024-06-10T00:00:00Z")
    madrid = assemble(client, auth, entity, "I live in Madrid.", as_of="2023-06-01T00:00:00Z")
    madrid_id = madrid["extracted"]["upserts"][1]["memory_id"]
    _remove(client, auth, paris["extracted"]["upserts"][1]["memory_id"], "deleted")
    held = client.get(f"/v0/memories/{madrid_id}", headers=auth).json()
    assert (held["status"], held["valid_to"][:10]) == ("superseded", "2024-06-10")
    assert _lives(client, auth, entity, "2024-03-01") == ["User lives in Madrid"]
    assert _lives(client, auth, entity) == ["User lives in Berlin"]


def _jazz(
    client: TestClient[Litestar], headers: dict[str, str], entity: str, as_of: str | None = None
) -> list[str]:
    return _facts_saying(client, headers, entity, "jazz", as_of)


def test_a_stance_deleted_or_archived_gives_back_its_contrary(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I love jazz", then "I hate jazz now"; the dislike removed: the like holds again, as a value a
    removed value had replaced does. Unarchived, the dislike ends the like again."""
    for how in ("deleted", "archived"):
        entity = f"ent:stance-{how}"
        assemble(client, auth, entity, "I love jazz.", as_of="2024-01-01T00:00:00Z")
        hate = assemble(client, auth, entity, "I hate jazz now.", as_of="2024-03-01T00:00:00Z")
        assert _jazz(client, auth, entity) == ["User dislikes jazz"], how
        _remove(client, auth, hate["extracted"]["upserts"][1]["memory_id"], how)
        assert _jazz(client, auth, entity) == _jazz(client, auth, entity, "2024-04-01") == ["User likes jazz"]
        if how == "archived":
            dislike = hate["extracted"]["upserts"][1]["memory_id"]
            r = client.patch(f"/v0/memories/{dislike}", json={"archived": False}, headers=auth)
            assert r.status_code == 200, r.text
            assert _jazz(client, auth, entity) == ["User dislikes jazz"]
            assert _jazz(client, auth, entity, "2024-02-01") == ["User likes jazz"]


def test_a_stance_deleted_gives_back_the_contrary_stored_before_it(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """The like told after the dislike but dated before it is history ending where the dislike began;
    the dislike deleted, the like holds. With the like said again later, the first holds until then."""
    entity = "ent:stance-history"
    hate = assemble(client, auth, entity, "I hate jazz.", as_of="2024-03-01T00:00:00Z")
    assemble(client, auth, entity, "I love jazz.", as_of="2024-01-01T00:00:00Z")
    assert _jazz(client, auth, entity, "2024-02-01") == ["User likes jazz"]
    assert _jazz(client, auth, entity) == ["User dislikes jazz"]
    _remove(client, auth, hate["extracted"]["upserts"][1]["memory_id"], "deleted")
    assert _jazz(client, auth, entity) == ["User likes jazz"]

    entity = "ent:stance-again"
    assemble(client, auth, entity, "I love jazz.", as_of="2024-01-01T00:00:00Z")
    hate = assemble(client, auth, entity, "I hate jazz now.", as_of="2024-03-01T00:00:00Z")
    assemble(client, auth, entity, "I love jazz again.", as_of="2024-06-01T00:00:00Z")
    _remove(client, auth, hate["extracted"]["upserts"][1]["memory_id"], "deleted")
    for when in ("2024-04-01", "2024-07-01", None):
        assert _jazz(client, auth, entity, when) == ["User likes jazz"], when
    likes = client.get("/v0/memories", params={"entity_id": entity, "type": "fact"}, headers=auth).json()
    ends = sorted((m["valid_to"] or "")[:10] for m in likes["items"])
    assert ends == ["", "2024-06-01"], ends


def _ids(client: TestClient[Litestar], headers: dict[str, str], entity: str) -> list[str]:
    """The entity's facts, newest first."""
    items = client.get("/v0/memories", params={"entity_id": entity, "type": "fact"}, headers=headers).json()
    return [m["memory_id"] for m in items["items"]]


def test_a_tie_said_again_and_then_backfilled_leaves_one_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris and Rome tie in January; "Paris. Actually, Rome" today; Lisbon dated June: the restated
    sides of a tie came back as two current values. A side of a tie said again leaves the tie as it is."""
    entity = "ent:tie-said-again"
    for city in ("Paris", "Rome"):
        assemble(client, auth, entity, f"I live in {city}.", as_of="2024-01-10T00:00:00Z")
    assemble(client, auth, entity, "I live in Paris. Actually, I moved to Rome.")
    assemble(client, auth, entity, "I live in Lisbon.", as_of="2024-06-10T00:00:00Z")
    assert _lives(client, auth, entity) == ["User lives in Lisbon"]


def test_a_negated_side_of_a_tie_said_again_later_ends_the_other_then(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris today, Paris said in 2023 too (it began then), Rome in 2023 (a tie), and "not Paris" in
    2023: Rome from 2023, Paris again from today. Rome stayed current beside Paris."""
    entity = "ent:tie-negated"
    assemble(client, auth, entity, "I live in Paris.")
    for turn in ("I live in Paris.", "I live in Rome.", "I don't live in Paris anymore."):
        assemble(client, auth, entity, turn, as_of="2023-06-01T00:00:00Z")
    assert _lives(client, auth, entity) == ["User lives in Paris"]
    assert _lives(client, auth, entity, "2024-01-01") == ["User lives in Rome"]


def test_a_negated_side_of_a_tie_stays_a_tie_in_its_history(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris and Rome tie in 2023; "not Paris" today: Rome is the value, and a read as of 2023 shows the
    tie marked, not two plain values."""
    entity = "ent:tie-history"
    ids = [
        assemble(client, auth, entity, f"I live in {city}.", as_of="2023-06-01T00:00:00Z")["extracted"][
            "upserts"
        ][1]["memory_id"]
        for city in ("Paris", "Rome")
    ]
    assemble(client, auth, entity, "I don't live in Paris anymore.")
    paris, rome = (client.get(f"/v0/memories/{i}", headers=auth).json() for i in ids)
    assert (paris["status"], rome["status"]) == ("disputed", "active") and paris["valid_to"] is not None
    then = current_facts(client, auth, entity, as_of="2024-01-01T00:00:00Z")
    assert "User lives in Paris (disputed)" in [x.split(" (since")[0] for x in then], then
    assert _lives(client, auth, entity) == ["User lives in Rome"]


def test_a_value_back_from_the_archive_gives_back_only_what_it_ended_last(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Rome ended by Paris, given back when Paris was archived, ended by another Paris told meanwhile;
    Paris back and archived again: Rome, which that Paris no longer ended, stays history."""
    entity = "ent:ended-last"
    assemble(client, auth, entity, "I live in Paris.", as_of="2025-03-01T00:00:00Z")
    assemble(client, auth, entity, "I live in Rome.", as_of="2023-06-01T00:00:00Z")
    paris = _ids(client, auth, entity)[0]
    _remove(client, auth, paris, "archived")
    assemble(client, auth, entity, "I live in Paris.", as_of="2025-03-01T00:00:00Z")
    assert client.patch(f"/v0/memories/{paris}", json={"archived": False}, headers=auth).status_code == 200
    _remove(client, auth, paris, "archived")
    assert _lives(client, auth, entity) == ["User lives in Paris"]
    assert _lives(client, auth, entity, "2024-01-01") == ["User lives in Rome"]


def test_two_statements_of_one_value_at_one_time_are_no_tie(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris archived, Paris told again at its time, the first taken back: the two were marked as a
    dispute of one value. Then one archived: the Rome before them held again over the other."""
    entity = "ent:one-value-twice"
    assemble(client, auth, entity, "I live in Rome.", as_of="2023-06-01T00:00:00Z")
    assemble(
        client, auth, entity, "I live in Paris. Actually, I moved to Rome.", as_of="2024-01-10T00:00:00Z"
    )
    paris = next(m for m in _ids(client, auth, entity) if "Paris" in _text(client, auth, m))
    _remove(client, auth, paris, "archived")
    assemble(client, auth, entity, "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    assert client.patch(f"/v0/memories/{paris}", json={"archived": False}, headers=auth).status_code == 200
    statuses = [
        client.get(f"/v0/memories/{m}", headers=auth).json()["status"] for m in _ids(client, auth, entity)
    ]
    assert "disputed" not in statuses
    twin = next(m for m in _ids(client, auth, entity) if m != paris and "Paris" in _text(client, auth, m))
    _remove(client, auth, twin, "archived")
    then = current_facts(client, auth, entity, as_of="2024-01-10T00:00:00.000000Z")
    assert [x.split(" (")[0] for x in then if "lives in" in x] == ["User lives in Paris"]


def _text(client: TestClient[Litestar], headers: dict[str, str], memory_id: str) -> str:
    return client.get(f"/v0/memories/{memory_id}", headers=headers).json()["text"]  # type: ignore[no-any-return]


def test_a_value_moved_to_another_run_gives_back_the_one_it_replaced(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A patch moving Berlin to another run settles its key there and in the run it left."""
    paris = assemble(client, auth, "ent:run", "I live in Paris.", as_of="2024-01-01T00:00:00Z")
    paris_id = paris["extracted"]["upserts"][1]["memory_id"]
    berlin = assemble(client, auth, "ent:run", "I moved to Berlin.", as_of="2024-03-01T00:00:00Z")
    berlin_id = berlin["extracted"]["upserts"][1]["memory_id"]
    metadata = {**client.get(f"/v0/memories/{berlin_id}", headers=auth).json()["metadata"], "run_id": "r2"}
    r = client.patch(f"/v0/memories/{berlin_id}", json={"metadata": metadata}, headers=auth)
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    held = client.get(f"/v0/memories/{paris_id}", headers=auth).json()
    assert (held["status"], held["valid_to"]) == ("active", None)


def test_pruning_a_current_value_gives_back_the_one_it_replaced(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    for action in ("delete", "archive"):
        entity = f"ent:pruned-{action}"
        assemble(client, auth, entity, "I live in Paris.", as_of="2024-01-01T00:00:00Z")
        assemble(
            client,
            auth,
            entity,
            "I moved to Berlin.",
            as_of="2024-03-01T00:00:00Z",
            ingest={"tags": ["wrong"]},
        )
        rules = {
            "entity_id": entity,
            "types": ["fact"],
            "tags": ["wrong"],
            "action": action,
            "dry_run": False,
        }
        r = client.post("/v0/prune", json=rules, headers=auth)
        assert r.status_code == 200 and r.json()["count"] == 1, r.text
        assert _lives(client, auth, entity) == ["User lives in Paris"], action


def test_a_superseded_fact_cannot_be_reopened_by_its_valid_to(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Cleared or moved later, a superseded value's end would overlap its successor: two current homes."""
    paris = assemble(client, auth, "ent:ann", "I live in Paris.", as_of="2024-01-10T00:00:00Z")
    paris_id = paris["extracted"]["upserts"][1]["memory_id"]
    assemble(client, auth, "ent:ann", "I moved to Berlin.", as_of="2024-06-10T00:00:00Z")
    before = client.get(f"/v0/memories/{paris_id}", headers=auth).json()
    for valid_to in (None, "2024-08-01T00:00:00Z"):
        r = client.patch(f"/v0/memories/{paris_id}", json={"valid_to": valid_to}, headers=auth)
        assert r.status_code == 422 and r.json()["details"]["rule"] == "superseded_valid_to"
    assert client.get(f"/v0/memories/{paris_id}", headers=auth).json() == before
    lives = [
        x for x in current_facts(client, auth, "ent:ann", as_of="2024-07-01T00:00:00Z") if "lives in" in x
    ]
    assert len(lives) == 1 and "Berlin" in lives[0]
    earlier = client.patch(
        f"/v0/memories/{paris_id}", json={"valid_to": "2024-05-01T00:00:00Z"}, headers=auth
    )
    assert earlier.status_code == 200 and earlier.json()["valid_to"].startswith("2024-05-01")


def test_an_ended_fact_cannot_be_reopened_over_the_next_value(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Berlin ended by a PATCH, Rome stored after that end, then Berlin's end cleared: two current homes."""
    berlin = assemble(client, auth, "ent:f1", "I live in Berlin", as_of="2024-06-10T00:00:00Z")
    berlin_id = berlin["extracted"]["upserts"][1]["memory_id"]
    ended = client.patch(f"/v0/memories/{berlin_id}", json={"valid_to": "2025-01-01T00:00:00Z"}, headers=auth)
    assert ended.status_code == 200
    rome = assemble(client, auth, "ent:f1", "I live in Rome", as_of="2025-06-01T00:00:00Z")
    rome_id = rome["extracted"]["upserts"][1]["memory_id"]
    before = client.get(f"/v0/memories/{berlin_id}", headers=auth).json()
    for valid_to in (None, "2026-01-01T00:00:00Z"):
        r = client.patch(f"/v0/memories/{berlin_id}", json={"valid_to": valid_to}, headers=auth)
        assert r.status_code == 422, r.text
        assert r.json()["details"] == {
            "field": "valid_to", "rule": "next_value", "next": rome_id, "begins": "2025-06-01T00:00:00+00:00"
        }  # fmt: skip
    assert client.get(f"/v0/memories/{berlin_id}", headers=auth).json() == before
    for fields in ({}, {"as_of": "2025-07-01T00:00:00Z"}):
        lives = [x for x in current_facts(client, auth, "ent:f1", **fields) if "lives in" in x]
        assert len(lives) == 1 and "Rome" in lives[0], (fields, lives)
    # up to the next value's start is still an end the user may set
    later = client.patch(f"/v0/memories/{berlin_id}", json={"valid_to": "2025-06-01T00:00:00Z"}, headers=auth)
    assert later.status_code == 200, later.text


def test_a_dispute_ends_when_one_of_its_values_does(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Two tied homes; one ended (by valid_to), archived or deleted: the other is the value, no longer
    disputed."""
    changes = (
        ("ended", {"valid_to": "2024-02-01T00:00:00Z"}),
        ("archived", {"archived": True}),
        ("deleted", None),
    )
    for how, change in changes:
        entity = f"ent:f5-{how}"
        ids = [
            assemble(client, auth, entity, f"I live in {city}", as_of="2024-01-01T00:00:00Z")["extracted"][
                "upserts"
            ][1]["memory_id"]
            for city in ("Paris", "Rome")
        ]
        assert {client.get(f"/v0/memories/{i}", headers=auth).json()["status"] for i in ids} == {"disputed"}
        if change is None:
            _remove(client, auth, ids[0], how)
        else:
            assert client.patch(f"/v0/memories/{ids[0]}", json=change, headers=auth).status_code == 200
        rome = client.get(f"/v0/memories/{ids[1]}", headers=auth).json()
        assert rome["status"] == "active", (how, rome)
        lives = [
            x for x in current_facts(client, auth, entity, as_of="2024-03-01T00:00:00Z") if "lives in" in x
        ]
        assert lives == ["User lives in Rome (since 2024-01-01)"], (how, lives)


def test_prune_keeps_a_value_that_holds_until_a_later_one_begins(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Paris dated 2030, then Berlin now: Berlin is superseded but is where the user lives until then."""
    facts_only = {"store_turn": "none"}
    assemble(client, auth, "ent:f2", "I live in Paris", as_of="2030-01-01T00:00:00Z", ingest=facts_only)
    assemble(client, auth, "ent:f2", "I moved to Berlin", ingest=facts_only)
    for rules in ({"types": ["fact"]}, {"older_than": "2029-01-01T00:00:00Z"}, {"statuses": ["superseded"]}):
        r = client.post("/v0/prune", json={"entity_id": "ent:f2", "dry_run": False, **rules}, headers=auth)
        assert r.status_code == 200 and r.json()["count"] == 0, (rules, r.text)
    lives = [x for x in current_facts(client, auth, "ent:f2") if "lives in" in x]
    assert len(lives) == 1 and lives[0].startswith("User lives in Berlin"), lives


# --- 7. one agent's write never leaves another with no current value ------------------------------------
def test_agents_keep_their_own_current_values(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    a1, a2 = {**auth, "X-Service-Agent": "a1"}, {**auth, "X-Service-Agent": "a2"}
    assemble(client, a1, "ent:user", "I live in Paris.")
    rome = assemble(client, a2, "ent:user", "I live in Rome.")["extracted"]["upserts"][1]
    assert rome["action"] == "UPSERTED" and rome["supersedes"] == []
    assert [x for x in current_facts(client, a1, "ent:user") if "lives in" in x][0].startswith(
        "User lives in Paris"
    )
    assert [x for x in current_facts(client, a2, "ent:user") if "lives in" in x][0].startswith(
        "User lives in Rome"
    )
    berlin = assemble(client, a2, "ent:user", "I moved to Berlin.")["extracted"]["upserts"][1]
    assert berlin["supersedes"] == [rome["memory_id"]]  # within a2's own memories


def test_entities_keep_their_own_current_values(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    assemble(client, auth, "ent:dana", "My sister Anna lives in Rome.")
    assemble(client, auth, "ent:eve", "My friend Anna lives in Paris.")
    assert any("Anna lives in Rome" in x for x in current_facts(client, auth, "ent:dana"))


# --- 8. outcomes name memories that exist --------------------------------------------------------------
def test_negation_outcomes_name_existing_memories(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    nothing = assemble(client, auth, "ent:user", "I no longer work at Acme.")["extracted"]["upserts"]
    turn_id = nothing[0]["memory_id"]
    assert nothing[1] == {"memory_id": turn_id, "action": "SKIPPED", "supersedes": [], "resumed": []}
    assert client.get(f"/v0/memories/{turn_id}", headers=auth).status_code == 200
    job = assemble(client, auth, "ent:user", "I work at Microsoft.")["extracted"]["upserts"][1]["memory_id"]
    said = assemble(client, auth, "ent:user", "I no longer work at Microsoft.")["extracted"]
    ended = said["upserts"]
    assert ended[1]["action"] == "SUPERSEDED" and ended[1]["supersedes"] == [job]
    assert ended[1]["memory_id"] == ended[0]["memory_id"] != job  # the turn that said it
    assert [f["memory_id"] for f in said["facts"]] == [ended[1]["memory_id"]]  # no id of its own
    silent = assemble(
        client, auth, "ent:user", "I no longer work at Microsoft.", ingest={"store_turn": "none"}
    )["extracted"]["upserts"]
    assert silent == [{"memory_id": None, "action": "SKIPPED", "supersedes": [], "resumed": []}]


def test_a_negation_naming_no_value_ends_the_current_one(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I don't live there anymore", "I quit my job", "I don't have any pets anymore" ended nothing: the
    home, the employer and both pets stayed current."""
    entity = "ent:left"
    for turn in ("I live in Paris.", "I work at Acme.", "I have a dog and a cat."):
        assemble(client, auth, entity, turn, as_of="2024-01-01T00:00:00Z")
    for turn in ("I don't live there anymore.", "I quit my job last week.", "I don't have any pets anymore."):
        said = assemble(client, auth, entity, turn, as_of="2024-06-01T00:00:00Z")["extracted"]["upserts"]
        assert said[1]["action"] == "SUPERSEDED" and said[1]["supersedes"], (turn, said)
    assert current_facts(client, auth, entity) == []
    then = [x.split(" (")[0] for x in current_facts(client, auth, entity, as_of="2024-03-01T00:00:00Z")]
    assert sorted(then) == ["User has a cat", "User has a dog", "User lives in Paris", "User works at Acme"]
    # "I'm divorced now" left "married to Sarah" current beside "divorced"
    assemble(client, auth, "ent:wed", "I'm married to Sarah.", as_of="2024-01-01T00:00:00Z")
    assemble(client, auth, "ent:wed", "I'm divorced now.", as_of="2024-06-01T00:00:00Z")
    assert [x.split(" (")[0] for x in current_facts(client, auth, "ent:wed")] == ["User is divorced"]


def test_a_negation_naming_a_value_by_its_first_words_ends_it(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I'm not really into hiking anymore" after "I love hiking in the Dales" answered SKIPPED and left
    the like current; "I quit Greenfield." left Greenfield Animal Hospital the employer."""
    entity = "ent:short"
    for turn in ("I love hiking in the Dales.", "I work at Greenfield Animal Hospital.", "I love tea."):
        assemble(client, auth, entity, turn, as_of="2024-01-01T00:00:00Z")
    for turn in ("I'm not really into hiking anymore.", "I quit Greenfield."):
        said = assemble(client, auth, entity, turn, as_of="2024-06-01T00:00:00Z")["extracted"]["upserts"]
        assert said[1]["action"] == "SUPERSEDED" and len(said[1]["supersedes"]) == 1, (turn, said)
    assert [x.split(" (")[0] for x in current_facts(client, auth, entity)] == ["User likes tea"]
    # a value held in full is the one ended, not a longer one beginning with it
    assemble(client, auth, "ent:both", "I love tea. I love tea parties.", as_of="2024-01-01T00:00:00Z")
    assemble(client, auth, "ent:both", "I don't like tea anymore.", as_of="2024-06-01T00:00:00Z")
    assert [x.split(" (")[0] for x in current_facts(client, auth, "ent:both")] == ["User likes tea parties"]


def test_a_plain_negation_of_an_employer_keeps_the_employer(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Denying a guess ("I don't work at Google") neither replaces nor ends the employer one has."""
    assemble(client, auth, "ent:sam", "I work at Stripe")
    said = assemble(client, auth, "ent:sam", "I don't work at Google, I just use Gmail a lot")["extracted"]
    assert said["facts"] == []
    assemble(client, auth, "ent:sam", "I never worked at Google")
    works = [line for line in current_facts(client, auth, "ent:sam") if "works at" in line]
    assert len(works) == 1 and "Stripe" in works[0]


def test_a_named_speakers_turn_is_about_the_speaker(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker
) -> None:
    """A turn saved as `<Name>: text` (as the README advises) gives facts about Name; an assistant's
    turn gives none."""
    up = assemble(client, auth, "ent:conv-1", "Caroline: I moved to Berlin last year.")["extracted"]
    assert [(f["subject"], f["predicate"]) for f in up["facts"]] == [("ent:caroline", "lives_in")]
    bot = assemble(client, auth, "ent:conv-1", "assistant: I live in the cloud.")["extracted"]
    assert bot["facts"] == [] and bot["upserts"][0]["action"] == "UPSERTED"


def test_two_speakers_on_one_line_keep_their_own_facts(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "Jon: I live in Denver. Gina: Wow, I live in Austin!" gave Jon Austin, ending Denver in the same
    turn. Each speaker's sentences are theirs."""
    said = assemble(client, auth, "ent:conv-2", "Jon: I live in Denver. Gina: Wow, I live in Austin!")
    facts = sorted((f["subject"], f["object"]) for f in said["extracted"]["facts"])
    assert facts == [("ent:gina", "ent:austin"), ("ent:jon", "ent:denver")]
    assert [u["action"] for u in said["extracted"]["upserts"][1:]] == ["UPSERTED", "UPSERTED"]


def test_what_one_is_besides_a_job_or_a_name_ends_neither(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I'm working as a barista" stored "works as a working as a barista" over "barista"; "I'm Catholic"
    replaced the name; "I'm a terrible cook" replaced the job."""
    entity = "ent:everyday"
    said = assemble(client, auth, entity, "I'm working as a barista.")["extracted"]
    assert [u["action"] for u in said["upserts"][1:]] == ["UPSERTED"]
    for turn in ("My name is Dana.", "I'm Catholic.", "I'm a terrible cook."):
        assemble(client, auth, entity, turn)
    now = [x.split(" (")[0] for x in current_facts(client, auth, entity)]
    assert sorted(now) == ["User works as a barista", "User's name is Dana"], now


def test_the_askers_label_seeks_no_turns_of_theirs(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "Alex: What's our puppy called?" ranked every turn of Alex's above Sam's answer (a graph seed and
    the speaker focus from the label), and the answer was not in the context."""
    entity = "ent:home"
    alex = [
        "Alex: Work was long today, the client call ran over.",
        "Alex: I finally fixed the leaking tap in the kitchen.",
        "Alex: The train was late again this morning.",
        "Alex: I booked a table at the Thai place for Friday.",
        "Alex: My back hurts from the gym.",
        "Alex: I watched the new documentary about whales.",
        "Alex: The garden needs weeding this weekend.",
        "Alex: I paid the electricity bill.",
    ]
    day = datetime(2025, 3, 1, tzinfo=UTC)
    for i, turn in enumerate([*alex[:4], "Sam: We adopted a puppy! Her name is Mochi.", *alex[4:]]):
        assemble(client, auth, entity, turn, as_of=(day + timedelta(days=i)).isoformat())
    asked = assemble(
        client, auth, entity, "Alex: What's our puppy called?", ingest=READ_ONLY,
        **{"return": {"include_raw_matches": True}},
    )  # fmt: skip
    assert any("Mochi" in line for line in asked["context"]["recent_events"]), asked["context"]
    seeded = [m["text"] for m in asked["matches"] if m["score_components"]["graph_prior"]["contrib"] > 0]
    assert seeded == []


def test_a_read_meeting_a_superseding_write_shows_the_new_value(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """A read whose channels found "lives in Oslo" before a move to Berlin committed, and fetched the
    record after it, showed no residence at all: the fetched record (superseded) was dropped and its
    successor was never a hit."""
    entity = "ent:iso"
    oslo_id = assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-01T00:00:00Z")["extracted"][
        "upserts"
    ][1]["memory_id"]
    fetch, moved = store.get_memories, list[str]()

    def fetch_after_a_move(org_id: str, memory_ids: Any) -> Any:
        if oslo_id in memory_ids and not moved:  # the move commits between the search and this fetch
            (oslo,) = fetch(org_id, [oslo_id])
            june, now = datetime(2024, 6, 1, tzinfo=UTC), datetime.now(UTC)
            berlin = msgspec.structs.replace(
                oslo, memory_id=memory_id(), text="User lives in Berlin", object="ent:berlin",
                metadata={**oslo.metadata, "object_name": "Berlin"}, valid_from=june, created_at=now, updated_at=now,
            )  # fmt: skip
            with store.transaction():
                store.put_memories(
                    [msgspec.structs.replace(oslo, status="superseded", valid_to=june), berlin]
                )
            moved.append(berlin.memory_id)
        return fetch(org_id, memory_ids)

    store.get_memories = fetch_after_a_move  # type: ignore[method-assign]
    try:
        facts = assemble(client, auth, entity, "Where do I live?", ingest=READ_ONLY)["context"]["facts"]
    finally:
        del store.get_memories
    assert moved and [x.split(" (")[0] for x in facts if "lives in" in x] == ["User lives in Berlin"], facts


def test_turns_of_one_time_are_shown_in_the_order_they_were_said(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Four turns sent with one `as_of` (a session's time, as LoCoMo gives) came back in reverse order
    in `recent_events`, by their rank; the listing keeps the order they were stored in."""
    turns = [
        "Ann: I adopted a puppy named Rex.",
        "Bob: That is lovely, what breed?",
        "Ann: Rex is a beagle, very noisy.",
        "Bob: Beagles love long walks in the park.",
    ]
    for turn in turns:
        assemble(client, auth, "ent:pup", turn, as_of="2024-03-01T10:00:00Z")
    lines = assemble(
        client,
        auth,
        "ent:pup",
        "Where do beagles like to walk?",
        ingest=READ_ONLY,
        as_of="2024-03-01T10:05:00Z",
    )["context"]["recent_events"]
    assert [line for line in lines if line in turns] == turns, lines


def test_a_name_with_a_capital_beyond_ascii_is_a_name(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "\u00c9mile: ..." is \u00c9mile's turn as "Caroline: ..." is Caroline's, and a name is read whole
    ("Zo\u00eb", not "Zo"); the question names the speaker's entity as extraction does (ent:emile)."""
    up = assemble(client, auth, "ent:conv-1", "\u00c9mile: I moved to Berlin last year.")["extracted"]
    assert [(f["subject"], f["predicate"]) for f in up["facts"]] == [("ent:emile", "lives_in")]
    assert [f.split(" (")[0] for f in current_facts(client, auth, "ent:conv-1")] == [
        "\u00c9mile lives in Berlin"
    ]
    said = assemble(client, auth, "ent:zoe", "My name is Zo\u00eb and my sister Ren\u00e9e lives in Lyon.")
    facts = sorted(f["text"] for f in said["extracted"]["facts"])
    assert facts == [
        "Ren\u00e9e lives in Lyon",
        "User has a sibling named Ren\u00e9e",
        "User's name is Zo\u00eb",
    ]
    body = assemble(
        client,
        auth,
        "ent:conv-1",
        "Where does \u00c9mile live?",
        ingest=READ_ONLY,
        **{"return": {"trace": True}},
    )
    assert {"ent:\u00e9mile", "ent:emile"} <= set(body["trace"]["debug"]["graph_seeds"])
    assert [f.split(" (")[0] for f in body["context"]["facts"]] == ["\u00c9mile lives in Berlin"]


def test_names_typed_in_lower_case_are_facts_that_supersede(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A user who types without capitals still tells where they live: each move ends the last one."""
    assemble(client, auth, "ent:lc", "my name is sam and i live in lisbon", as_of="2024-01-10T00:00:00Z")
    moved = assemble(client, auth, "ent:lc", "i moved to berlin last month", as_of="2024-06-10T00:00:00Z")
    assert [f["predicate"] for f in moved["extracted"]["facts"]] == ["lives_in"]
    assert sorted(f.split(" (")[0] for f in current_facts(client, auth, "ent:lc")) == [
        "User lives in Berlin",
        "User's name is Sam",
    ]


def test_names_no_ascii_spelling_holds_keep_their_own_ids(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Two speakers whose names fold to no ASCII letters ("\u0411\u043e\u0440\u0438\u0441", "\u041e\u043b\u0435\u0433") are two entities, each
    with a residence of their own, and two cities so written are two values, where both folded to
    `ent:x`: one speaker's move retired the other's city, and a move between such cities was the same
    value."""
    boris, oleg = "\u0411\u043e\u0440\u0438\u0441", "\u041e\u043b\u0435\u0433"
    moscow, kazan = "\u041c\u043e\u0441\u043a\u0432\u0430", "\u041a\u0430\u0437\u0430\u043d\u044c"
    first = assemble(client, auth, "ent:conv-ru", f"{boris}: I moved to Berlin last year.")["extracted"]
    assert [f["subject"] for f in first["facts"]] == [f"ent:{boris.lower()}"]
    second = assemble(client, auth, "ent:conv-ru", f"{oleg}: I moved to Paris last year.")["extracted"]
    assert second["upserts"][1] == {
        "memory_id": second["facts"][0]["memory_id"],
        "action": "UPSERTED",
        "supersedes": [],
        "resumed": [],
    }
    assert sorted(lives_in(client, auth, "ent:conv-ru")) == [
        f"{boris} lives in Berlin",
        f"{oleg} lives in Paris",
    ]
    assemble(client, auth, "ent:s\u00f8ren", f"I live in {moscow}.")
    moved = assemble(client, auth, "ent:s\u00f8ren", f"I moved to {kazan}.")["extracted"]
    assert [(u["action"], len(u["supersedes"])) for u in moved["upserts"][1:]] == [("SUPERSEDED", 1)]
    assert lives_in(client, auth, "ent:s\u00f8ren") == [f"User lives in {kazan}"]
    # the question's name seeds the speaker's own id
    body = assemble(
        client,
        auth,
        "ent:conv-ru",
        f"Where does {oleg} live?",
        ingest=READ_ONLY,
        **{"return": {"trace": True}},
    )
    assert f"ent:{oleg.lower()}" in body["trace"]["debug"]["graph_seeds"]
    assert [f.split(" (")[0] for f in body["context"]["facts"]][0] == f"{oleg} lives in Paris"


# --- long ids: every fact keeps a key of its own -----------------------------------------------------
def test_long_entity_subject_and_speaker_ids_keep_one_key_per_predicate(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A key cut at 128 characters lost its predicate: with a 127-character entity id the residence,
    the age and the employer shared one key and superseded each other."""
    entity = "ent:org-acme-prod:user:" + "0123456789abcdef" * 6 + "-xxxxxxx"  # 127 characters
    subject = "ent:" + "s" * 200
    speaker = " ".join(["Bartholomew" + "x" * 29] * 3)  # a three-word name of 122 characters
    for turn, ingest in [
        ("I live in Paris", {}),
        ("I am 30 years old", {}),
        ("I work at Google", {"subject": subject}),
        ("I live in Rome", {"subject": subject}),
        (f"{speaker}: I am 40 years old.", {}),
    ]:
        assemble(client, auth, entity, turn, ingest=ingest)
    facts = client.get("/v0/memories", params={"entity_id": entity, "type": "fact"}, headers=auth).json()
    current = {(m["subject"], m["predicate"]): m["keys"] for m in facts["items"] if m["status"] == "active"}
    assert set(current) == {
        (entity, "lives_in"),
        (entity, "age"),
        (subject, "works_at"),
        (subject, "lives_in"),
        ("ent:" + "-".join([("bartholomew" + "x" * 29)] * 3), "age"),
    }
    keys = [k for ks in current.values() for k in ks]
    assert len(set(keys)) == len(keys) == 5 and all(len(k) <= 128 for k in keys)
    context = current_facts(client, auth, entity)
    assert any("lives in Paris" in x for x in context) and any("30 years old" in x for x in context)
    items = [
        {"type": "fact", "subject": subject, "predicate": p, "object_text": v}
        for p, v in [("lives_in", "Oslo"), ("works_at", "Acme")]
    ]
    r = client.post("/v0/memories:batch_upsert", json={"items": items}, headers=auth)
    assert [u["action"] for u in r.json()["upserts"]] == ["UPSERTED", "UPSERTED"]
    batch = [client.get(f"/v0/memories/{u['memory_id']}", headers=auth).json() for u in r.json()["upserts"]]
    assert batch[0]["keys"] != batch[1]["keys"] and all(b["status"] == "active" for b in batch)


# --- one turn's writes are bounded ---------------------------------------------------------------------
def test_a_turn_writes_at_most_the_fact_limit(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """A long list of likes wrote every fact it stated (1,241 from one 20,000-character turn, in
    seconds that other writers waited for); the rest of such a turn is counted, not written."""
    from engine.write.turns import MAX_FACTS_PER_TURN

    stated = MAX_FACTS_PER_TURN + 70
    turn = " ".join(f"I like dish{i}." for i in range(stated))
    extracted = assemble(client, auth, "ent:big", turn)["extracted"]
    assert len(extracted["facts"]) == MAX_FACTS_PER_TURN
    assert len(extracted["upserts"]) == MAX_FACTS_PER_TURN + 1  # and the stored turn
    assert (extracted["facts_left_out"], extracted["truncated"]) == (70, True)
    assert extracted["facts"][-1]["object"] == f"dish{MAX_FACTS_PER_TURN - 1}"  # the first ones are kept
    listed = client.get(
        "/v0/memories", params={"entity_id": "ent:big", "type": "fact", "page_size": 200}, headers=auth
    )
    assert len(listed.json()["items"]) == MAX_FACTS_PER_TURN
    small = assemble(client, auth, "ent:big", "I like jazz.")["extracted"]
    assert (small["facts_left_out"], small["truncated"]) == (0, False)


# --- what a read as of a time may know ----------------------------------------------------------------
def test_a_read_as_of_a_date_shows_no_later_end(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """At 2024-03-01 the move of June was not known yet, but the line read 'valid 2024-01-10 to
    2024-06-10' and the structured fact said superseded."""
    assemble(client, auth, "ent:tl", "I live in Paris", as_of="2024-01-10T00:00:00Z")
    assemble(client, auth, "ent:tl", "I moved to Berlin", as_of="2024-06-10T00:00:00Z")
    then = assemble(
        client,
        auth,
        "ent:tl",
        "Where do I live?",
        ingest=READ_ONLY,
        as_of="2024-03-01T00:00:00Z",
        **{"return": {"include_structured_facts": True, "include_raw_memories": True}},
    )
    assert [x for x in then["context"]["facts"] if "lives in" in x] == [
        "User lives in Paris (since 2024-01-10)"
    ]
    (paris,) = [f for f in then["context"]["facts_struct"] if f["predicate"] == "lives_in"]
    assert (paris["status"], paris["valid_to"]) == ("active", None)
    assert "2024-06-10" not in str(then["context"]) + str(then["raw_memories"])
    later = current_facts(client, auth, "ent:tl", as_of="2024-07-01T00:00:00Z")
    assert [x for x in later if "lives in" in x] == ["User lives in Berlin (since 2024-06-10)"]


def test_a_value_dated_in_the_future_is_not_current_yet(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Without as_of, Paris from 2030 was shown as current and hid Berlin, which holds until then."""
    assemble(client, auth, "ent:fut", "I live in Paris", as_of="2030-01-01T00:00:00Z")
    assemble(client, auth, "ent:fut", "I moved to Berlin")
    now = datetime.now(UTC).isoformat()
    for fields in ({}, {"as_of": now}):  # a read without as_of is a read as of now
        lives = [x for x in current_facts(client, auth, "ent:fut", **fields) if "lives in" in x]
        assert len(lives) == 1 and lives[0].startswith("User lives in Berlin"), (fields, lives)
    in_2031 = current_facts(client, auth, "ent:fut", as_of="2031-01-01T00:00:00Z")
    assert [x for x in in_2031 if "lives in" in x] == ["User lives in Paris (since 2030-01-01)"]
    ended = assemble(client, auth, "ent:fut", "I no longer live in Berlin")["extracted"]["upserts"][1]
    assert ended["action"] == "SUPERSEDED" and len(ended["supersedes"]) == 1
    assert not [x for x in current_facts(client, auth, "ent:fut") if "lives in" in x]


def test_two_values_that_tie_both_show_as_disputed_with_or_without_as_of(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Two homes said at one time with one confidence are both disputed: a read as of now showed both,
    a read without as_of showed neither; both reads show both, marked, until a later value ends them."""
    at = "2024-05-01T10:00:00+00:00"
    ids = []
    for city in ("Paris", "Rome"):
        fact = assemble(client, auth, "ent:tie", f"I live in {city}", as_of=at)["extracted"]["upserts"][1]
        ids.append(fact["memory_id"])
    statuses = {i: client.get(f"/v0/memories/{i}", headers=auth).json()["status"] for i in ids}
    assert set(statuses.values()) == {"disputed"}, statuses
    now = datetime.now(UTC).isoformat()
    for fields in ({}, {"as_of": now}):
        lives = sorted(x for x in current_facts(client, auth, "ent:tie", **fields) if "lives in" in x)
        assert lives == [
            "User lives in Paris (disputed) (since 2024-05-01)",
            "User lives in Rome (disputed) (since 2024-05-01)",
        ], (fields, lives)
    moved = assemble(client, auth, "ent:tie", "I moved to Oslo")["extracted"]["upserts"][1]
    assert moved["action"] == "SUPERSEDED" and sorted(moved["supersedes"]) == sorted(ids)
    for fields in ({}, {"as_of": datetime.now(UTC).isoformat()}):
        lives = [x for x in current_facts(client, auth, "ent:tie", **fields) if "lives in" in x]
        assert len(lives) == 1 and lives[0].startswith("User lives in Oslo"), (fields, lives)


def test_a_memory_stamped_a_little_ahead_of_the_server_clock_is_found_at_once(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A timestamp is when a thing was said, not a validity: a client clock a minute ahead still reads
    back what it wrote, events and notes among the recent lines too."""
    ahead = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
    for kind, text in (
        ("note", "Sam keeps the spare key under the blue pot"),
        ("event", "Sam: dentist moved"),
    ):
        body = {"type": kind, "text": text, "entity_id": "ent:sam", "timestamp": ahead}
        assert client.post("/v0/memories", json=body, headers=auth).status_code == 200
        assert text in [m["text"] for m in recall(client, auth, "ent:sam", text)]
    context = assemble(client, auth, "ent:sam", "where is the spare key?", ingest=READ_ONLY)["context"]
    assert any("dentist moved" in line for line in context["recent_events"])


# --- a turn stored as a fact ----------------------------------------------------------------------------
def test_a_turn_stored_as_a_fact_ends_with_what_it_said(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """With store_turn "fact", "I live in Oslo" stayed a current fact after the move to Bergen."""
    as_fact = {"store_turn": "fact"}
    oslo = assemble(client, auth, "ent:stf", "I live in Oslo", ingest=as_fact)["extracted"]["upserts"]
    assemble(client, auth, "ent:stf", "My favourite colour is green", ingest=as_fact)
    bergen = assemble(client, auth, "ent:stf", "I moved to Bergen", ingest=as_fact)["extracted"]["upserts"]
    assert set(bergen[1]["supersedes"]) == {oslo[0]["memory_id"], oslo[1]["memory_id"]}  # the turn, its fact
    now = current_facts(client, auth, "ent:stf")
    said = [x for x in now if "Oslo" in x or "Bergen" in x]
    assert sorted(x.split(" (")[0] for x in said) == ["I moved to Bergen", "User lives in Bergen"]
    assert any(x.startswith("My favourite colour is green") for x in now)  # another key: still holds
    turn = client.get(f"/v0/memories/{oslo[0]['memory_id']}", headers=auth).json()
    assert (turn["type"], turn["predicate"], turn["keys"]) == ("fact", None, ["ent:stf|lives_in"])
    assert turn["status"] == "superseded"
    then = current_facts(client, auth, "ent:stf", as_of=turn["valid_from"])
    assert any(x.startswith("I live in Oslo") for x in then)  # what was said then, as history
    assemble(client, auth, "ent:stf", "Rainy days make me sleepy", ingest=as_fact)  # no fact the rules read
    assert any(x.startswith("Rainy days") for x in current_facts(client, auth, "ent:stf"))


def test_a_backdated_turn_stored_as_a_fact_ends_where_the_next_value_begins(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I live in Rome" stored as a fact and dated before the move to Paris stayed current beside Paris."""
    assemble(client, auth, "ent:stb", "I live in Paris", as_of="2024-06-01T00:00:00Z")
    said = assemble(
        client, auth, "ent:stb", "I live in Rome", as_of="2024-01-01T00:00:00Z", ingest={"store_turn": "fact"}
    )["extracted"]["upserts"]
    turn = client.get(f"/v0/memories/{said[0]['memory_id']}", headers=auth).json()
    assert (turn["status"], turn["valid_to"]) == ("superseded", "2024-06-01T00:00:00Z")
    assert [x.split(" (")[0] for x in current_facts(client, auth, "ent:stb")] == ["User lives in Paris"]
    then = current_facts(client, auth, "ent:stb", as_of="2024-03-01T00:00:00Z")
    assert sorted(x.split(" (")[0] for x in then) == ["I live in Rome", "User lives in Rome"]


def test_a_turn_stored_as_a_fact_back_from_the_archive_ends_where_the_next_value_begins(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I live in Rome" stored as a fact, archived over the move to Paris and unarchived, stayed current."""
    said = assemble(
        client, auth, "ent:sta", "I live in Rome", as_of="2024-01-01T00:00:00Z", ingest={"store_turn": "fact"}
    )["extracted"]["upserts"]
    statement = f"/v0/memories/{said[0]['memory_id']}"
    assert client.patch(statement, json={"archived": True}, headers=auth).status_code == 200
    paris = assemble(client, auth, "ent:sta", "I moved to Paris", as_of="2024-06-01T00:00:00Z")
    back = client.patch(statement, json={"archived": False}, headers=auth).json()
    assert (back["status"], back["valid_to"]) == ("superseded", "2024-06-01T00:00:00Z")
    assert [x.split(" (")[0] for x in current_facts(client, auth, "ent:sta")] == ["User lives in Paris"]
    # the value that ended it leaving gives it back, with the fact it ended
    paris_fact = paris["extracted"]["upserts"][1]["memory_id"]
    assert client.delete(f"/v0/memories/{paris_fact}", headers=auth).status_code in (200, 204)
    now = sorted(x.split(" (")[0] for x in current_facts(client, auth, "ent:sta"))
    assert now == ["I live in Rome", "User lives in Rome"]


def test_a_turn_stored_as_a_fact_given_back_is_no_dispute(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Deleting the move to Paris gave back "I live in Rome" (stored as a fact) marked disputed."""
    said = assemble(client, auth, "ent:stg", "I live in Rome", ingest={"store_turn": "fact"})
    paris = assemble(client, auth, "ent:stg", "I moved to Paris")["extracted"]["upserts"][1]["memory_id"]
    assert client.delete(f"/v0/memories/{paris}", headers=auth).status_code in (200, 204)
    for upsert in said["extracted"]["upserts"]:
        back = client.get(f"/v0/memories/{upsert['memory_id']}", headers=auth).json()
        assert (back["status"], back["valid_to"]) == ("active", None), back["text"]
    now = current_facts(client, auth, "ent:stg")
    assert sorted(x.split(" (")[0] for x in now) == ["I live in Rome", "User lives in Rome"]
    assert not [x for x in now if "(disputed)" in x]


def test_relative_dates_in_a_turn_are_days_of_the_offset_the_caller_sent(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "yesterday" said on Friday 1 March at 23:30-08:00 (Saturday 07:30 UTC) is Thursday 29 February."""
    for turn, as_of, day in (
        ("I started working at Acme yesterday.", "2024-03-01T23:30:00-08:00", "2024-02-29"),
        ("I'm going to Lisbon next month.", "2024-01-31T23:00:00-08:00", "2024-02"),
        ("I adopted a cat two weeks ago.", "2024-03-01T01:00:00+05:30", "2024-02-16"),
    ):
        extracted = assemble(client, auth, "ent:tz", turn, as_of=as_of)["extracted"]
        dates = [e["attributes"]["iso"] for e in extracted["entities"] if e["type"] == "date"]
        assert dates == [day], (turn, dates)


# --- chat turns: a question after the statement, a label before a colon ---------------------------------
def lives_in(client: TestClient[Litestar], headers: dict[str, str], entity: str) -> list[str]:
    return [x.split(" (")[0] for x in current_facts(client, headers, entity) if " lives in " in x]


def test_a_move_told_before_a_question_supersedes_the_old_city(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    assemble(client, auth, "ent:asker", "I live in Paris")
    said = assemble(client, auth, "ent:asker", "I just moved to Lyon, what are some good neighborhoods?")
    assert [f["text"] for f in said["extracted"]["facts"]] == ["User lives in Lyon"]
    assert lives_in(client, auth, "ent:asker") == ["User lives in Lyon"]


def test_a_correction_label_is_no_speaker(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    assemble(client, auth, "ent:corrector", "I live in Paris")
    said = assemble(client, auth, "ent:corrector", "Correction: I live in Lyon")["extracted"]
    assert [(f["subject"], f["text"]) for f in said["facts"]] == [("ent:corrector", "User lives in Lyon")]
    assert lives_in(client, auth, "ent:corrector") == ["User lives in Lyon"]


# --- a value said again later in one turn is where it was last said ------------------------------------
def test_a_value_said_again_after_another_in_one_turn_is_the_current_one(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I'm 30. Sorry, I'm 31. No, I'm 30." left 31 current: the repeat of 30 was kept at its first
    place in the turn, so 31 came last and won; "... now I have a dog again" likewise left no dog."""
    said = assemble(client, auth, "ent:thirty", "I'm 30. Sorry, I'm 31. No, I'm 30.")["extracted"]
    assert [f["text"] for f in said["facts"]] == ["User is 31 years old", "User is 30 years old"]
    assert [x.split(" (")[0] for x in current_facts(client, auth, "ent:thirty")] == ["User is 30 years old"]
    assemble(client, auth, "ent:pet", "I have a dog. I no longer have a dog. Now I have a dog again.")
    assert [x.split(" (")[0] for x in current_facts(client, auth, "ent:pet")] == ["User has a dog"]


def test_a_turn_stored_as_a_fact_ends_with_the_value_a_negation_ends(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """With store_turn "fact", "I moved to Berlin" stayed a current fact after "I no longer live in
    Berlin" ended the value it said: the statement outlived its value."""
    as_fact = {"store_turn": "fact"}
    moved = assemble(
        client, auth, "ent:stn", "I moved to Berlin", as_of="2024-02-01T00:00:00Z", ingest=as_fact
    )
    said = assemble(
        client, auth, "ent:stn", "I no longer live in Berlin", as_of="2024-03-01T00:00:00Z", ingest=as_fact
    )["extracted"]["upserts"]
    statement, value = (u["memory_id"] for u in moved["extracted"]["upserts"])
    assert said[1]["action"] == "SUPERSEDED" and set(said[1]["supersedes"]) == {statement, value}
    turn = client.get(f"/v0/memories/{statement}", headers=auth).json()
    assert (turn["status"], turn["valid_to"]) == ("superseded", "2024-03-01T00:00:00Z")
    assert not [x for x in current_facts(client, auth, "ent:stn") if "moved to Berlin" in x]
    then = current_facts(client, auth, "ent:stn", as_of="2024-02-15T00:00:00Z")
    assert sorted(x.split(" (")[0] for x in then) == ["I moved to Berlin", "User lives in Berlin"]
    # a negation of a value nobody said ends no statement
    assemble(client, auth, "ent:stn", "I live in Oslo", as_of="2024-04-01T00:00:00Z", ingest=as_fact)
    assemble(client, auth, "ent:stn", "I no longer live in Rome", as_of="2024-05-01T00:00:00Z")
    assert any(x.startswith("I live in Oslo") for x in current_facts(client, auth, "ent:stn"))


def test_values_said_out_of_order_hold_by_their_times_beside_turns_stored_as_facts(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A key holding a turn stored as a fact lost the timeline of its values: Oslo said on the 2nd
    (stored as a fact) after Oslo on the 16th left no value before the 16th; Rome said on the 14th
    after Rome on the 18th, with Paris from the 16th between, left Oslo the value on the 14th."""
    as_fact = {"store_turn": "fact"}
    entity = "ent:sto"
    assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-16T00:00:00Z")
    assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-02T00:00:00Z", ingest=as_fact)
    for day in ("02", "20"):
        then = current_facts(client, auth, entity, as_of=f"2024-01-{day}T12:00:00Z")
        assert sorted(x.split(" (")[0] for x in then) == ["I live in Oslo.", "User lives in Oslo"], day
    entity = "ent:stp"
    for day, city in (("11", "Oslo"), ("16", "Paris"), ("18", "Rome")):
        assemble(client, auth, entity, f"I live in {city}.", as_of=f"2024-01-{day}T00:00:00Z")
    assemble(client, auth, entity, "I live in Rome.", as_of="2024-01-14T00:00:00Z", ingest=as_fact)
    expected = {"12": "Oslo", "15": "Rome", "17": "Paris", "19": "Rome"}
    for day, city in expected.items():
        then = current_facts(client, auth, entity, as_of=f"2024-01-{day}T12:00:00Z")
        assert [x.split(" (")[0] for x in then if x.startswith("User ")] == [f"User lives in {city}"], day
    # a statement said before the value moved sooner ends where that value now begins
    entity = "ent:stq"
    assemble(client, auth, entity, "I live in Paris.", as_of="2024-01-01T00:00:00Z", ingest=as_fact)
    assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-20T00:00:00Z")
    assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-10T00:00:00Z")
    then = current_facts(client, auth, entity, as_of="2024-01-15T00:00:00Z")
    assert [x.split(" (")[0] for x in then] == ["User lives in Oslo"]


def test_a_turn_stored_as_a_fact_ends_where_the_value_it_ended_holds_again(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "I live in Rome" stored as a fact and dated between two statements of Oslo stayed current after
    Oslo held again: its end was settled before its own fact ended Oslo and gave it back later."""
    entity = "ent:str"
    assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-04T00:00:00Z")
    assemble(client, auth, entity, "I live in Oslo.", as_of="2024-01-27T00:00:00Z")
    said = assemble(
        client, auth, entity, "I live in Rome.", as_of="2024-01-08T00:00:00Z", ingest={"store_turn": "fact"}
    )
    turn = client.get(f"/v0/memories/{said['extracted']['upserts'][0]['memory_id']}", headers=auth).json()
    assert (turn["status"], turn["valid_to"]) == ("superseded", "2024-01-27T00:00:00Z")
    assert [x.split(" (")[0] for x in current_facts(client, auth, entity)] == ["User lives in Oslo"]
    then = current_facts(client, auth, entity, as_of="2024-01-10T00:00:00Z")
    assert sorted(x.split(" (")[0] for x in then) == ["I live in Rome.", "User lives in Rome"]


# --- a thing said again while an earlier statement of it held is that statement -------------------------
def test_a_multi_valued_fact_said_again_inside_its_past_interval_is_no_new_fact(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A dog had from the 3rd to the 20th ("I no longer have a dog"), then "I have a dog" dated the 8th,
    left a new dog current from the 8th, undoing the negation; "I love jazz" on the 3rd and the 8th,
    both before "I hate jazz" on the 24th, showed two lines of one like."""
    entity = "ent:mvd"
    first = assemble(client, auth, entity, "I have a dog.", as_of="2024-01-03T00:00:00Z")
    assemble(client, auth, entity, "I no longer have a dog.", as_of="2024-01-20T00:00:00Z")
    again = assemble(client, auth, entity, "I have a dog.", as_of="2024-01-08T00:00:00Z")["extracted"][
        "upserts"
    ]
    assert again[1] == {
        **again[1],
        "action": "SKIPPED",
        "memory_id": first["extracted"]["upserts"][1]["memory_id"],
    }
    assert current_facts(client, auth, entity) == []
    then = current_facts(client, auth, entity, as_of="2024-01-10T00:00:00Z")
    assert [x.split(" (")[0] for x in then] == ["User has a dog"]
    entity = "ent:mvj"
    for day, turn in (("24", "I hate jazz."), ("03", "I love jazz."), ("08", "I love jazz.")):
        assemble(client, auth, entity, turn, as_of=f"2024-01-{day}T00:00:00Z")
    then = current_facts(client, auth, entity, as_of="2024-01-10T00:00:00Z")
    assert [x.split(" (")[0] for x in then] == ["User likes jazz"]
    assert [x.split(" (")[0] for x in current_facts(client, auth, entity)] == ["User dislikes jazz"]


def test_stances_said_out_of_order_hold_by_their_times(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A like, a dislike or a pet said before the same one already stored was dropped: "I hate jazz" on
    the 17th, after a like from the 9th and a dislike from the 20th, left the like until the 20th; "I
    have a dog" on the 8th, after one on the 20th, left no dog before the 20th."""
    entity = "ent:sto1"
    for day, turn in (
        ("08", "I hate jazz."),
        ("09", "I love jazz."),
        ("20", "I hate jazz."),
        ("17", "I hate jazz."),
    ):
        assemble(client, auth, entity, turn, as_of=f"2024-01-{day}T00:00:00Z")
    for day, stance in (("08", "dislikes"), ("12", "likes"), ("18", "dislikes"), ("25", "dislikes")):
        then = current_facts(client, auth, entity, as_of=f"2024-01-{day}T12:00:00Z")
        assert [x.split(" (")[0] for x in then] == [f"User {stance} jazz"], day
    entity = "ent:sto2"
    for day, turn in (("27", "I love jazz."), ("25", "I hate jazz."), ("22", "I love jazz.")):
        assemble(client, auth, entity, turn, as_of=f"2024-01-{day}T00:00:00Z")
    for day, stance in (("23", "likes"), ("26", "dislikes"), ("28", "likes")):
        then = current_facts(client, auth, entity, as_of=f"2024-01-{day}T12:00:00Z")
        assert [x.split(" (")[0] for x in then] == [f"User {stance} jazz"], day
    # a like said inside a dislike that was said again later ends it only until then
    entity = "ent:sto4"
    for day, turn in (
        ("01", "I hate jazz."),
        ("11", "I love jazz."),
        ("09", "I hate jazz."),
        ("05", "I love jazz."),
    ):
        assemble(client, auth, entity, turn, as_of=f"2024-01-{day}T00:00:00Z")
    for day, stance in (("03", "dislikes"), ("07", "likes"), ("10", "dislikes"), ("12", "likes")):
        then = current_facts(client, auth, entity, as_of=f"2024-01-{day}T12:00:00Z")
        assert [x.split(" (")[0] for x in then] == [f"User {stance} jazz"], day
    entity = "ent:sto3"
    later = assemble(client, auth, entity, "I have a dog.", as_of="2024-01-20T00:00:00Z")["extracted"][
        "upserts"
    ]
    said = assemble(client, auth, entity, "I have a dog.", as_of="2024-01-08T00:00:00Z")["extracted"][
        "upserts"
    ]
    assert said[1]["memory_id"] == later[1]["memory_id"]  # the same dog, had since the 8th
    then = current_facts(client, auth, entity, as_of="2024-01-10T00:00:00Z")
    assert [x.split(" (")[0] for x in then] == ["User has a dog"]


def test_a_move_told_again_after_like_i_said_supersedes_the_old_city(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """ "Like I said, I moved to Berlin" was read as another person's word (said) and gave no fact, so
    Paris stayed the city; the speaker's own "I said" reports nobody else."""
    assemble(client, auth, "ent:said", "I live in Paris")
    for turn in ("Like I said, I moved to Berlin.", "As I've said before, I'm 30."):
        said = assemble(client, auth, "ent:said", turn)["extracted"]
        assert len(said["facts"]) == 1, (turn, said["facts"])
    assert lives_in(client, auth, "ent:said") == ["User lives in Berlin"]
    said = assemble(client, auth, "ent:said2", "My mom said I live in Rome.")["extracted"]
    assert said["facts"] == []  # another person's word still gives no fact
