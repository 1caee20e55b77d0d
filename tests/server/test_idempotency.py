"""Idempotency-Key: replay of the first response, 409 on another body, no double write, concurrency."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.errors import Conflict
from engine.storage.base import EventQuery, Store
from server.idempotency import Idempotency, RequestPrint, StoredResponse, fingerprint
from tests.server.conftest import memory_body


def test_same_key_same_body_replays(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    headers = {**auth, "Idempotency-Key": "create-1"}
    first = client.post("/v0/memories", json=memory_body(), headers=headers)
    second = client.post("/v0/memories", json=memory_body(), headers=headers)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert second.headers["idempotent-replayed"] == "true"
    assert store.count_memories("acme") == 1
    assert len(store.list_events("acme", EventQuery())) == 1


def test_same_key_other_body_is_409(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    headers = {**auth, "Idempotency-Key": "create-2"}
    assert client.post("/v0/memories", json=memory_body("one"), headers=headers).status_code == 200
    r = client.post("/v0/memories", json=memory_body("two"), headers=headers)
    assert r.status_code == 409 and r.json()["error"] == "conflict"
    assert store.count_memories("acme") == 1


def test_same_key_other_path_is_409(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    mem = client.post("/v0/memories", json=memory_body(), headers=auth).json()
    headers = {**auth, "Idempotency-Key": "k"}
    assert (
        client.patch(f"/v0/memories/{mem['memory_id']}", json={"tags": ["a"]}, headers=headers).status_code
        == 200
    )
    assert client.delete(f"/v0/memories/{mem['memory_id']}", headers=headers).status_code == 409


def test_patch_and_delete_replay(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    mem = client.post("/v0/memories", json=memory_body(), headers=auth).json()
    path = f"/v0/memories/{mem['memory_id']}"
    p1 = client.patch(path, json={"tags": ["x"]}, headers={**auth, "Idempotency-Key": "p"})
    client.patch(path, json={"tags": ["y"]}, headers=auth)
    p2 = client.patch(path, json={"tags": ["x"]}, headers={**auth, "Idempotency-Key": "p"})
    assert p1.content == p2.content and p2.json()["tags"] == ["x"]
    assert store.get_memory("acme", mem["memory_id"]).tags == ["y"]  # type: ignore[union-attr]  # no second write
    d1 = client.delete(path, headers={**auth, "Idempotency-Key": "d"})
    d2 = client.delete(path, headers={**auth, "Idempotency-Key": "d"})
    assert d1.status_code == d2.status_code == 200 and d1.content == d2.content
    assert client.delete(path, headers=auth).status_code == 404


def test_failed_request_is_not_recorded(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    headers = {**auth, "Idempotency-Key": "retry-me"}
    assert client.delete("/v0/memories/mem_missing", headers=headers).status_code == 404
    mem = client.post("/v0/memories", json=memory_body(), headers=auth).json()
    r = client.post("/v0/memories", json=memory_body(), headers=headers)
    assert r.status_code == 200 and r.json()["memory_id"] != mem["memory_id"]


def test_concurrent_duplicates_write_once(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    headers = {**auth, "Idempotency-Key": "race"}
    results: list[bytes] = []
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        r = client.post("/v0/memories", json=memory_body("raced"), headers=headers)
        assert r.status_code == 200
        results.append(r.content)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and len(set(results)) == 1
    assert store.count_memories("acme") == 1


def test_record_and_write_commit_together(store: Store) -> None:
    """If storing the record fails, the write rolls back (same transaction)."""
    idem = Idempotency(store)
    original = store.put_idempotency

    def boom(record: object) -> None:
        raise RuntimeError("disk full")

    store.put_idempotency = boom  # type: ignore[method-assign]
    from engine.memory_service import MemoryCreate, MemoryService

    svc = MemoryService(store)

    def work() -> StoredResponse:
        svc.create("acme", [MemoryCreate(type="note", text="x")])
        return StoredResponse(status_code=200, body=b"{}")

    with pytest.raises(RuntimeError):
        idem.run("acme", "k", RequestPrint("POST", "/v0/memories", b"{}"), work)
    store.put_idempotency = original  # type: ignore[method-assign]
    assert store.count_memories("acme") == 0
    assert store.list_events("acme", EventQuery()) == []


def test_without_a_key_the_work_is_one_transaction_too(store: Store) -> None:
    """A request without an Idempotency-Key that fails after a first write leaves nothing behind."""
    from engine.memory_service import MemoryCreate, MemoryService

    svc = MemoryService(store)

    def work() -> StoredResponse:
        svc.create("acme", [MemoryCreate(type="note", text="written first")])
        raise RuntimeError("the second step fails")

    with pytest.raises(RuntimeError):
        Idempotency(store).run("acme", None, RequestPrint("POST", "/v0/memories", b"{}"), work)
    assert store.count_memories("acme") == 0
    assert store.list_events("acme", EventQuery()) == []


def test_lost_race_replays_winner(store: Store) -> None:
    """Another process stored the key between our read and our write: our write rolls back and the
    winner's response is replayed."""
    now = datetime(2025, 1, 1, tzinfo=UTC)
    idem = Idempotency(store, clock=lambda: now)
    from engine.memory_service import MemoryCreate, MemoryService
    from engine.models import IdempotencyRecord

    winner = IdempotencyRecord(
        org_id="acme",
        key="k",
        fingerprint=fingerprint("POST", "/p", b"{}"),
        status_code=200,
        body=b'{"winner":true}',
        created_at=now,
        expires_at=now + timedelta(hours=24),
    )
    store.put_idempotency(winner)  # committed by the other process
    real_get = store.get_idempotency
    misses = [1]

    def stale_get(
        org_id: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:  # our read happened before their commit
        return None if misses and misses.pop() else real_get(org_id, key, now)

    def unique_violation(record: object) -> None:
        raise Conflict("duplicate idempotency key")

    store.get_idempotency = stale_get  # type: ignore[method-assign]
    store.put_idempotency = unique_violation  # type: ignore[method-assign]
    svc = MemoryService(store)

    def work() -> StoredResponse:
        svc.create("acme", [MemoryCreate(type="note", text="loser")])
        return StoredResponse(status_code=200, body=b'{"winner":false}')

    out = idem.run("acme", "k", RequestPrint("POST", "/p", b"{}"), work)
    assert out.body == b'{"winner":true}' and out.replayed
    assert store.count_memories("acme") == 0


def test_records_expire_after_ttl(store: Store) -> None:
    clock = [datetime(2025, 1, 1, tzinfo=UTC)]
    idem = Idempotency(store, ttl=timedelta(hours=24), clock=lambda: clock[0])
    runs: list[int] = []

    def work() -> StoredResponse:
        runs.append(1)
        return StoredResponse(status_code=200, body=str(len(runs)).encode())

    idem.run("acme", "k", RequestPrint("POST", "/p", b""), work)
    clock[0] += timedelta(hours=23)
    assert idem.run("acme", "k", RequestPrint("POST", "/p", b""), work).body == b"1"
    clock[0] += timedelta(hours=2)
    assert idem.run("acme", "k", RequestPrint("POST", "/p", b""), work).body == b"2"


# --- the fingerprint is over the parsed body ------------------------------------------------------------
SENT = b'{"type":"note","text":"caf\\u00e9 at 9","tags":["a","b"],"metadata":{"x":1,"y":{"z":0.50}}}'
REORDERED = (
    b'{ "metadata" : {"y":{"z":0.5},\n "x":1},\t"tags":["a","b"], "text":"caf\xc3\xa9 at 9", "type":"note" }'
)


def test_same_document_in_another_key_order_replays(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    headers = {**auth, "Idempotency-Key": "reordered", "Content-Type": "application/json"}
    first = client.post("/v0/memories", content=SENT, headers=headers)
    second = client.post("/v0/memories", content=REORDERED, headers=headers)
    assert first.status_code == second.status_code == 200
    assert second.content == first.content and second.headers["idempotent-replayed"] == "true"
    assert store.count_memories("acme") == 1
    other = REORDERED.replace(b'["a","b"]', b'["b","a"]')  # a list's order is part of the document
    r = client.post("/v0/memories", content=other, headers=headers)
    assert r.status_code == 409 and r.json()["error"] == "conflict"
    assert (
        client.post("/v0/memories", content=SENT.replace(b"0.50", b"1"), headers=headers).status_code == 409
    )
    assert store.count_memories("acme") == 1


def test_the_same_key_and_body_as_another_agent_is_a_conflict(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """The agent scopes what a request writes: a1's response is never replayed to a2."""
    body = {"type": "note", "text": "Alice likes tea", "entity_id": "ent:alice"}
    first = client.post(
        "/v0/memories", json=body, headers={**auth, "Idempotency-Key": "k1", "X-Service-Agent": "a1"}
    )
    assert first.status_code == 200 and first.json()["agent_id"] == "a1"
    again = client.post(
        "/v0/memories", json=body, headers={**auth, "Idempotency-Key": "k1", "X-Service-Agent": "a1"}
    )
    assert again.headers["idempotent-replayed"] == "true"
    other = client.post(
        "/v0/memories", json=body, headers={**auth, "Idempotency-Key": "k1", "X-Service-Agent": "a2"}
    )
    assert other.status_code == 409 and store.count_memories("acme") == 1


def test_a_retry_that_spells_out_defaults_replays(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """A retry is compared as the server reads it: defaults written out, or 1 for a float's 1.0, are the
    same request; a field that changes what is written is not."""
    headers = {**auth, "Idempotency-Key": "defaults"}
    first = client.post(
        "/v0/memories", json={"type": "fact", "text": "Tea", "confidence": 1}, headers=headers
    )
    spelt = {
        "type": "fact",
        "text": "Tea",
        "confidence": 1.0,
        "namespace": "default",
        "archived": False,
        "tags": [],
        "metadata": {},
        "timestamp": None,
    }
    second = client.post("/v0/memories", json=spelt, headers=headers)
    assert first.status_code == second.status_code == 200, second.text
    assert second.content == first.content and second.headers["idempotent-replayed"] == "true"
    assert client.post("/v0/memories", json={**spelt, "archived": True}, headers=headers).status_code == 409
    assert store.count_memories("acme") == 1

    turn = {"entity_id": "ent:sam", "turn": "I live in Oslo."}
    a1 = client.post("/v0/context/assemble", json=turn, headers={**auth, "Idempotency-Key": "turn"})
    a2 = client.post(
        "/v0/context/assemble",
        json={**turn, "namespace": "default", "return": {"max_facts": 12, "max_events": 6}},
        headers={**auth, "Idempotency-Key": "turn"},
    )
    assert a1.status_code == a2.status_code == 200, a2.text
    assert a2.content == a1.content and a2.headers["idempotent-replayed"] == "true"
    assert store.count_memories("acme") == 3  # the note, the turn and its fact: written once


def test_a_patch_retry_that_adds_an_explicit_null_is_another_request(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A PATCH's absent field keeps the value and null clears it: not a default spelt out."""
    mem = client.post("/v0/memories", json=memory_body(), headers=auth).json()
    path = f"/v0/memories/{mem['memory_id']}"
    headers = {**auth, "Idempotency-Key": "patch-null"}
    assert client.patch(path, json={"tags": ["x"]}, headers=headers).status_code == 200
    assert client.patch(path, json={"tags": ["x"], "valid_to": None}, headers=headers).status_code == 409
    assert client.patch(path, json={"tags": ["x"]}, headers=headers).headers["idempotent-replayed"] == "true"


def _stored_earlier(store: Store, key: str, fingerprint: str, body: bytes) -> None:
    """A record of acme's `key` as an earlier version stored it, expiring in an hour."""
    from engine.models import IdempotencyRecord

    now = datetime.now(UTC)
    store.put_idempotency(
        IdempotencyRecord(
            org_id="acme",
            key=key,
            fingerprint=fingerprint,
            status_code=200,
            body=body,
            created_at=now,
            expires_at=now + timedelta(hours=1),
        )
    )


def test_a_record_stored_over_the_document_still_replays_its_retry(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """A record stored before fingerprints read the typed body (`v2:`, over the JSON document) replays
    the same document in any key order within its TTL."""
    _stored_earlier(store, "v2", fingerprint("POST", "/v0/memories", SENT), b'{"stored":"by v2"}')
    headers = {**auth, "Idempotency-Key": "v2", "Content-Type": "application/json"}
    replay = client.post("/v0/memories", content=REORDERED, headers=headers)
    assert replay.status_code == 200 and replay.content == b'{"stored":"by v2"}'
    assert (
        client.post("/v0/memories", content=SENT.replace(b"0.50", b"1"), headers=headers).status_code == 409
    )
    assert store.count_memories("acme") == 0


def test_a_record_stored_with_the_raw_fingerprint_still_replays_its_bytes(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    """A record written before fingerprints were versioned (a hash of the raw bytes) replays a retry of
    the same bytes within its TTL; the same document in another key order is 409, as it was then."""
    from server.idempotency import raw_fingerprint

    raw = raw_fingerprint("POST", "/v0/memories", SENT)
    _stored_earlier(store, "before", raw, b'{"stored":"before the upgrade"}')
    headers = {**auth, "Idempotency-Key": "before", "Content-Type": "application/json"}
    replay = client.post("/v0/memories", content=SENT, headers=headers)
    assert replay.status_code == 200 and replay.content == b'{"stored":"before the upgrade"}'
    assert replay.headers["idempotent-replayed"] == "true"
    assert client.post("/v0/memories", content=REORDERED, headers=headers).status_code == 409
    assert store.count_memories("acme") == 0


def test_canonical_body() -> None:
    from server.idempotency import canonical_body

    assert canonical_body(SENT) == canonical_body(REORDERED)
    assert canonical_body(b'{"a":1,"a":2}') == canonical_body(b'{"a":2}')  # the value the server reads
    assert canonical_body(b'{"a":1}') != canonical_body(b'{"a":1.0}')  # numbers as parsed
    assert canonical_body(b"  ") == canonical_body(b"") != canonical_body(b'""')
    assert canonical_body(b"{not json") == b"R{not json"
    assert fingerprint("POST", "/p", b'{"b":1, "a":2}') == fingerprint("post", "/p", b'{"a":2,"b":1}')
    assert fingerprint("POST", "/p", b"{}") != fingerprint("POST", "/p?x=1", b"{}")
