"""POST /v0/context/assemble (with ingest) and POST /v0/recall over HTTP, on every store."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.errors import Unavailable
from engine.extract import ExtractResult, FactDraft
from engine.storage.base import EventQuery, ListQuery, Store
from loci.wire.tuning import TUNING
from server.app import create_app
from server.config import Settings
from tests.server.conftest import KeyMaker

ASSEMBLE = "/v0/context/assemble"
READ_ONLY = {"extract": False, "store_turn": "none"}


def assemble(
    client: TestClient[Litestar], headers: dict[str, str], turn: str, **fields: Any
) -> dict[str, Any]:
    r = client.post(ASSEMBLE, json={"entity_id": "ent:user", "turn": turn, **fields}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def facts(store: Store, org: str = "acme") -> list[Any]:
    return store.list_memories(org, ListQuery(types=("fact",), limit=200))


# --- a fact that changes: Paris, then Berlin -----------------------------------------------------------
def test_paris_then_berlin(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    first = assemble(client, auth, "I live in Paris")
    paris_id = first["extracted"]["upserts"][1]["memory_id"]
    assert first["extracted"]["upserts"][1]["action"] == "UPSERTED"
    second = assemble(client, auth, "I moved to Berlin")
    berlin = second["extracted"]["upserts"][1]
    assert berlin["action"] == "SUPERSEDED" and berlin["supersedes"] == [paris_id]

    body = assemble(
        client,
        auth,
        "Where do I live these days?",
        ingest=READ_ONLY,
        **{"return": {"include_structured_facts": True}},
    )
    assert any("Berlin" in line for line in body["context"]["facts"])
    assert not any("Paris" in line for line in body["context"]["facts"])
    assert [f["object_text"] for f in body["context"]["facts_struct"]] == ["ent:berlin"]

    listed = client.get("/v0/memories", params={"entity_id": "ent:user", "type": "fact"}, headers=auth).json()
    by_text = {m["text"]: m for m in listed["items"]}
    assert by_text["User lives in Paris"]["status"] == "superseded"
    assert by_text["User lives in Paris"]["valid_to"] == by_text["User lives in Berlin"]["valid_from"]
    assert (
        by_text["User lives in Berlin"]["status"] == "active"
        and by_text["User lives in Berlin"]["valid_to"] is None
    )


def test_retrieval_sees_the_state_before_the_turn(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    body = assemble(client, auth, "I live in Paris")
    assert body["context"]["facts"] == [] and body["context"]["recent_events"] == []
    assert [f["text"] for f in body["extracted"]["facts"]] == ["User lives in Paris"]
    again = assemble(client, auth, "Where do I live?", ingest=READ_ONLY)
    assert again["context"]["facts"] and "Paris" in again["context"]["facts"][0]


def test_extracted_shape_and_provenance(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    body = assemble(client, auth, "I live in Paris")
    turn_up, fact_up = body["extracted"]["upserts"]
    turn = store.get_memory("acme", turn_up["memory_id"])
    assert turn is not None and turn.type == "event" and turn.text == "I live in Paris"
    assert turn.provenance["request_id"] == body["request_id"]
    fact = body["extracted"]["facts"][0]
    assert fact["memory_id"] == fact_up["memory_id"]
    assert fact["provenance"]["source_turn"] == turn_up["memory_id"]
    assert fact["subject"] == "ent:user" and fact["predicate"] == "lives_in" and fact["object"] == "ent:paris"
    assert [e["entity_id"] for e in body["extracted"]["entities"]] == ["ent:paris"]
    kinds = [e.type for _, e in store.list_events("acme", EventQuery(type="context.assembled"))]
    assert kinds == ["context.assembled"]


def test_the_assembled_event_does_not_wait_for_the_disk(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read's `context.assembled` entry is appended with `durable=False`; the turn it stores is not."""
    calls: list[tuple[list[str], bool]] = []
    real = store.append_events

    def spy(events: Sequence[Any], *, durable: bool = True) -> None:
        calls.append(([e.type for e in events], durable))
        real(events, durable=durable)

    monkeypatch.setattr(store, "append_events", spy)
    body = {
        "entity_id": "ent:user",
        "turn": "I moved to Paris",
        "ingest": {"extract": False, "store_turn": "note"},
    }
    assert client.post(ASSEMBLE, json=body, headers=auth).status_code == 200
    assert (["context.assembled"], False) in calls
    assert all(durable for kinds, durable in calls if kinds != ["context.assembled"])
    assert any(kinds != ["context.assembled"] for kinds, _ in calls)  # the stored turn's own events
    logged = [e.type for _, e in store.list_events("acme", EventQuery(type="context.assembled"))]
    assert logged == ["context.assembled"]


def test_request_id_is_the_gateways(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    r = client.post(
        ASSEMBLE,
        json={"entity_id": "ent:user", "turn": "hi", "ingest": READ_ONLY},
        headers={**auth, "X-Request-Id": "trace-77"},
    )
    assert r.json()["request_id"] == r.headers["x-request-id"] == "trace-77"


@pytest.mark.parametrize(("store_turn", "kind"), [("event", "event"), ("note", "note"), ("fact", "fact")])
def test_store_turn_types(
    client: TestClient[Litestar], auth: dict[str, str], store: Store, store_turn: str, kind: str
) -> None:
    body = assemble(client, auth, "I live in Paris", ingest={"store_turn": store_turn})
    turn = store.get_memory("acme", body["extracted"]["upserts"][0]["memory_id"])
    assert turn is not None and turn.type == kind and turn.text == "I live in Paris"


def test_store_turn_none_and_extract_false(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    body = assemble(client, auth, "I live in Paris", ingest={"store_turn": "none"})
    assert (
        len(body["extracted"]["upserts"]) == 1
        and "source_turn" not in body["extracted"]["facts"][0]["provenance"]
    )
    assert store.count_memories("acme") == 1
    body = assemble(client, auth, "I live in Rome", ingest={"extract": False})
    assert body["extracted"]["facts"] == [] and len(body["extracted"]["upserts"]) == 1
    assert store.count_memories("acme") == 2


def test_upsert_conflicts_off_keeps_both(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    assemble(client, auth, "I live in Paris", ingest={"upsert_conflicts": "off"})
    body = assemble(client, auth, "I live in Berlin", ingest={"upsert_conflicts": "off"})
    assert body["extracted"]["upserts"][1]["action"] == "UPSERTED"
    assert sorted(m.status for m in facts(store)) == ["active", "active"]


def test_same_turn_later_statement_wins(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    assemble(client, auth, "I live in Paris. Actually, I moved to Berlin.")
    active = [m.object for m in facts(store) if m.status == "active"]
    assert active == ["ent:berlin"]


def test_idempotent_assemble_writes_once(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    headers = {**auth, "Idempotency-Key": "turn-1"}
    body = {"entity_id": "ent:user", "turn": "I live in Paris"}
    first = client.post(ASSEMBLE, json=body, headers=headers)
    count = store.count_memories("acme")
    events = len(store.list_events("acme", EventQuery(limit=1000)))
    second = client.post(ASSEMBLE, json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content and second.headers["idempotent-replayed"] == "true"
    assert count == 2 and store.count_memories("acme") == count
    assert len(store.list_events("acme", EventQuery(limit=1000))) == events
    other = client.post(ASSEMBLE, json={**body, "turn": "I live in Rome"}, headers=headers)
    assert other.status_code == 409 and other.json()["error"] == "conflict"
    assert store.count_memories("acme") == count


def test_trace_query_parameter(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    plain = assemble(client, auth, "hello", ingest=READ_ONLY)
    assert "timings" not in plain["trace"] and "debug" not in plain["trace"]
    r = client.post(
        ASSEMBLE + "?trace=true",
        json={"entity_id": "ent:user", "turn": "hello", "ingest": READ_ONLY},
        headers=auth,
    )
    traced = r.json()["trace"]
    assert {"timings", "debug", "summary", "budget"} <= set(traced)
    assert (
        client.post(ASSEMBLE + "?trace=maybe", json={"entity_id": "e", "turn": "x"}, headers=auth).json()[
            "details"
        ]["field"]
        == "trace"
    )


def test_service_agent_scopes_writes_and_retrieval(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    assemble_a = {**auth, "X-Service-Agent": "agent-a"}
    body = assemble(client, assemble_a, "I live in Paris")
    fact = store.get_memory("acme", body["extracted"]["upserts"][1]["memory_id"])
    assert fact is not None and fact.agent_id == "agent-a"
    seen_by_a = assemble(client, assemble_a, "Where do I live?", ingest=READ_ONLY)
    seen_by_b = assemble(client, {**auth, "X-Service-Agent": "agent-b"}, "Where do I live?", ingest=READ_ONLY)
    assert seen_by_a["context"]["facts"] and seen_by_b["context"]["facts"] == []
    r = client.post(
        ASSEMBLE, json={"entity_id": "ent:user", "turn": "x"}, headers={**auth, "X-Service-Agent": "a" * 129}
    )
    assert r.status_code == 422 and r.json()["details"]["field"] == "X-Service-Agent"


def test_as_of_dates_the_turn(client: TestClient[Litestar], auth: dict[str, str], store: Store) -> None:
    body = assemble(client, auth, "I live in Paris", as_of="2024-03-01T12:00:00Z")
    fact = store.get_memory("acme", body["extracted"]["upserts"][1]["memory_id"])
    assert fact is not None and fact.valid_from == datetime.fromisoformat("2024-03-01T12:00:00+00:00")


def test_scopes(client: TestClient[Litestar], make_key: KeyMaker, store: Store) -> None:
    reader = make_key("acme", scopes=("read",))
    r = client.post(ASSEMBLE, json={"entity_id": "ent:user", "turn": "I live in Paris"}, headers=reader)
    assert r.status_code == 403 and r.json()["details"]["required_scope"] == "write"
    assert store.count_memories("acme") == 0
    ok = client.post(
        ASSEMBLE, json={"entity_id": "ent:user", "turn": "hi", "ingest": READ_ONLY}, headers=reader
    )
    assert ok.status_code == 200
    writer = make_key("acme", scopes=("write",))
    assert (
        client.post(ASSEMBLE, json={"entity_id": "ent:user", "turn": "hi"}, headers=writer).status_code == 403
    )
    assert client.post("/v0/recall", json={"query": "x"}, headers=reader).status_code == 200
    assert client.post(ASSEMBLE, json={"entity_id": "e", "turn": "x"}).status_code == 401


# --- every bound of the spec: 422 naming the field -----------------------------------------------
BOUNDS = [
    ("turn", {"turn": "t" * 20001}, "turn"),
    ("goal", {"goal": "g" * 2001}, "goal"),
    ("snippet", {"seed_context": {"snippets": ["ok", "s" * 4001]}}, "seed_context.snippets[1]"),
    ("budget_low", {"budget": {"max_context_tokens": 255}}, "budget.max_context_tokens"),
    ("budget_high", {"budget": {"max_context_tokens": 8193}}, "budget.max_context_tokens"),
    ("top_level_budget", {"max_context_tokens": 100}, "max_context_tokens"),
    ("top_k_low", {"retrieval": {"top_k": 0}}, "retrieval.top_k"),
    ("top_k_high", {"retrieval": {"top_k": 101}}, "retrieval.top_k"),
    ("depth_low", {"retrieval": {"depth": -1}}, "retrieval.depth"),
    ("depth_high", {"retrieval": {"depth": 3}}, "retrieval.depth"),
    ("weights_text", {"retrieval": {"weights": {"semantic": "high"}}}, "retrieval.weights.semantic"),
    ("weights_unknown", {"retrieval": {"weights": {"magic": 1}}}, "retrieval.weights.magic"),
    ("preset", {"retrieval": {"preset": "turbo"}}, "retrieval.preset"),
    ("normalization", {"retrieval": {"normalization": "l2"}}, "retrieval.normalization"),
    ("store_turn", {"ingest": {"store_turn": "diary"}}, "ingest.store_turn"),
    ("upsert_conflicts", {"ingest": {"upsert_conflicts": "always"}}, "ingest.upsert_conflicts"),
    ("include", {"return": {"include": ["facts", "gossip"]}}, "return.include[1]"),
    ("missing_turn", {"turn": None}, "turn"),
]


@pytest.mark.parametrize(("case", "fields", "field"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_bounds_are_422_naming_the_field(
    client: TestClient[Litestar],
    auth: dict[str, str],
    store: Store,
    case: str,
    fields: dict[str, Any],
    field: str,
) -> None:
    body: dict[str, Any] = {"entity_id": "ent:user", "turn": "I live in Paris", **fields}
    body = {k: v for k, v in body.items() if v is not None}
    r = client.post(ASSEMBLE, json=body, headers=auth)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "validation_error" and r.json()["details"]["field"] == field
    assert store.count_memories("acme") == 0


@pytest.mark.parametrize(
    ("fields", "budget", "origin"),
    [
        ({}, 1200, "default"),
        ({"max_context_tokens": 300}, 300, "max_context_tokens"),
        ({"max_context_tokens": 300, "budget": {"tokenizer": "cl100k_base"}}, 300, "max_context_tokens"),
        (
            {"max_context_tokens": 300, "budget": {"max_context_tokens": 500}},
            500,
            "budget.max_context_tokens",
        ),
        ({"budget": {"tokenizer": "estimate"}}, 1200, "default"),
    ],
)
def test_the_budget_is_the_callers_and_the_trace_names_where_it_came_from(
    client: TestClient[Litestar], auth: dict[str, str], fields: dict[str, Any], budget: int, origin: str
) -> None:
    """A budget object naming only its tokenizer took the place of the top-level budget (1200 for 300),
    and the trace named budget.max_context_tokens, which was never sent."""
    body = assemble(
        client, auth, "Tell me about me", ingest=READ_ONLY, **fields, **{"return": {"trace": True}}
    )
    assert body["context"]["token_counts"]["budget"] == budget
    assert body["trace"]["budget"]["origin"] == origin
    assert body["trace"]["budget"]["tokenizer"] == fields.get("budget", {}).get("tokenizer", "o200k_base")


@pytest.mark.parametrize(
    "fields",
    [
        {"turn": "t" * 20000, "goal": "g" * 2000, "seed_context": {"snippets": ["s" * 4000]}},
        {"budget": {"max_context_tokens": 256}, "retrieval": {"top_k": 1, "depth": 0}},
        {
            "budget": {"max_context_tokens": 8192},
            "retrieval": {"top_k": 100, "depth": 2, "preset": "graphy", "normalization": "softmax"},
        },
    ],
)
def test_values_at_the_bounds_pass(
    client: TestClient[Litestar], auth: dict[str, str], fields: dict[str, Any]
) -> None:
    r = client.post(
        ASSEMBLE, json={"entity_id": "ent:user", "turn": "hello", **fields, "ingest": READ_ONLY}, headers=auth
    )
    assert r.status_code == 200, r.text


def test_weights_renormalized_flag(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    body = assemble(
        client,
        auth,
        "hi",
        ingest=READ_ONLY,
        retrieval={
            "weights": {"semantic": 2, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 1}
        },
    )
    assert body["flags"]["weights_renormalized"] is True
    assert body["retrieval_summary"]["weights_used"]["semantic"] == pytest.approx(2 / 4)


# --- degraded dependencies -------------------------------------------------------------------------
class BrokenEmbedder:
    model = "broken:1"
    dim = 8

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise Unavailable("embedder down")


class DegradedExtractor:
    """Stands in for the LLM extractor after a bad reply: the rule fallback's facts, degraded."""

    name = "llm"

    def extract(
        self,
        text: str,
        *,
        subject: str = "ent:user",
        reference_time: datetime | None = None,
        subject_name: str = "User",
    ) -> ExtractResult:
        draft = FactDraft(
            subject=subject,
            predicate="lives_in",
            object="ent:oslo",
            object_type="entity",
            object_name="Oslo",
            text="User lives in Oslo",
            confidence=0.9,
        )
        return ExtractResult(facts=[draft], degraded=True, llm_tokens=42, extractor="rules")


def test_broken_embedder_degrades_but_writes(settings: Settings, store: Store, make_key: KeyMaker) -> None:
    app = create_app(settings, store=store, embedder=BrokenEmbedder())
    with TestClient(app) as client:
        body = assemble(client, make_key("acme"), "I live in Paris")
    assert body["flags"]["degraded"] is True
    assert [m.object for m in facts(store)] == ["ent:paris"]


def test_llm_extractor_degraded_and_tokens(
    app: Litestar, client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    app.state.loci.extractor = DegradedExtractor()
    body = assemble(client, auth, "anything at all")
    assert body["flags"]["degraded"] is True and body["cost"]["llm_tokens"] == 42
    assert [m.object for m in facts(store)] == ["ent:oslo"]


# --- recall ------------------------------------------------------------------------------------------
def test_recall_matches(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    assemble(client, auth, "I live in Paris")
    assemble(client, auth, "I work at Acme")
    r = client.post(
        "/v0/recall",
        json={"query": "where does the user live Paris", "entity_id": "ent:user", "limit": 3},
        headers=auth,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    matches = body["matches"]
    assert 1 <= len(matches) <= 3
    top = matches[0]
    assert "Paris" in top["text"]
    assert set(top) >= {
        "memory_id",
        "type",
        "text",
        "metadata",
        "score",
        "score_components",
        "reason",
        "timestamp",
    }
    assert sum(c["contrib"] for c in top["score_components"].values()) == pytest.approx(top["score"])
    assert [m["score"] for m in matches] == sorted((m["score"] for m in matches), reverse=True)
    assert body["request_id"] == r.headers["x-request-id"]


def test_recall_reads_the_return_options_its_operation_names(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """recall's `return` has assemble's shape; it reads `include_raw_memories` and `trace` (as its
    OpenAPI description says), and the sections' options leave its matches as they are."""
    items = [
        {"type": "note", "text": f"Alice likes tea number {i}", "entity_id": "ent:alice"} for i in range(4)
    ]
    assert client.post("/v0/memories", json={"items": items}, headers=auth).status_code in (200, 201)
    ask = {"query": "tea", "entity_id": "ent:alice"}
    plain = client.post("/v0/recall", json=ask, headers=auth).json()
    assert len(plain["matches"]) == 4 and "raw_memories" not in plain and "trace" not in plain
    sections = {"include": ["summary"], "max_facts": 1, "max_events": 1, "include_scores": False}
    same = client.post("/v0/recall", json={**ask, "return": sections}, headers=auth).json()
    assert [(m["memory_id"], set(m["score_components"])) for m in same["matches"]] == [
        (m["memory_id"], set(m["score_components"])) for m in plain["matches"]
    ]
    read = {"include_raw_memories": True, "trace": True}
    full = client.post("/v0/recall", json={**ask, "return": read}, headers=auth).json()
    assert [m["memory_id"] for m in full["raw_memories"]] == [m["memory_id"] for m in full["matches"]]
    assert full["trace"]["timings"]["total"] > 0
    doc = client.get("/schema/openapi.json").json()["paths"]["/v0/recall"]["post"]["description"]
    assert "include_raw_memories" in doc and "trace" in doc


def test_the_same_read_ranks_the_same_every_time(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    """A note and three events saying the same at the same time tie: read again and again with no
    `as_of` (the recency prior moves with the clock, and the float noise of the sums with it), one
    ranking and one set of scores."""
    at = "2025-04-01T00:00:00Z"
    items = [{"type": "note", "text": "Alice likes green tea", "entity_id": "ent:alice", "timestamp": at}]
    items += [
        {"type": "event", "text": "Alice likes green tea", "entity_id": "ent:alice", "timestamp": at}
    ] * 3
    assert client.post("/v0/memories", json={"items": items}, headers=auth).status_code in (200, 201)
    seen = set()
    for _ in range(20):
        r = client.post("/v0/recall", json={"query": "green tea", "entity_id": "ent:alice"}, headers=auth)
        assert r.status_code == 200, r.text
        seen.add(tuple((m["memory_id"], round(m["score"], 6)) for m in r.json()["matches"]))
    assert len(seen) == 1, seen


def test_recall_scoping_and_bounds(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker
) -> None:
    assemble(client, auth, "I live in Paris")
    other = client.post("/v0/recall", json={"query": "Paris"}, headers=make_key("globex")).json()
    assert other["matches"] == []
    wrong_entity = client.post(
        "/v0/recall", json={"query": "Paris", "entity_id": "ent:bob"}, headers=auth
    ).json()
    assert wrong_entity["matches"] == []
    for body, field in [
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 101}, "limit"),
        ({}, "query"),
        ({"query": "q" * 20001}, "query"),
        ({"query": "x", "retrieval": {"preset": "nope"}}, "retrieval.preset"),
    ]:
        r = client.post("/v0/recall", json=body, headers=auth)
        assert r.status_code == 422 and r.json()["details"]["field"] == field, (body, r.text)


# --- the OpenAPI document --------------------------------------------------------------------------
NEW_OPERATIONS = {
    ("/v0/context/assemble", "post"): ("assembleContext", "AssembleRequest"),
    ("/v0/recall", "post"): ("recall", "RecallRequest"),
    ("/v0/memories:batch_upsert", "post"): ("batchUpsertMemories", "UpsertRequest"),
    ("/v0/extract", "post"): ("extract", "ExtractRequest"),
    ("/v1/memories", "post"): ("createMemoriesV1", "V1CreateRequest"),
    ("/v1/memories", "get"): ("listMemoriesV1", None),
    ("/v1/memories/{memory_id}", "get"): ("getMemoryV1", None),
    ("/v1/memories/{memory_id}", "delete"): ("deleteMemoryV1", None),
}


def test_openapi_documents_the_operations(client: TestClient[Litestar]) -> None:
    doc = client.get("/schema/openapi.json").json()
    for (path, method), (op_id, body) in NEW_OPERATIONS.items():
        op = doc["paths"][path][method]
        assert op["operationId"] == op_id
        if body is not None:
            schema = op["requestBody"]["content"]["application/json"]["schema"]
            assert schema == {"$ref": f"#/components/schemas/{body}"}, op_id
        errors = [s for s in op["responses"] if s.startswith(("4", "5"))]
        assert {"401", "403", "429", "500"} <= set(errors), op_id
        assert "422" in errors or op_id == "getMemoryV1", op_id
        envelope = "Mem0ErrorBody" if path.startswith("/v1/") else "ErrorBody"  # /v1 adds mem0's `detail`
        for status in errors:
            assert op["responses"][status]["content"]["application/json"]["schema"] == {
                "$ref": f"#/components/schemas/{envelope}"
            }
    schemas = doc["components"]["schemas"]
    assert schemas["AssembleRequest"]["properties"]["turn"]["maxLength"] == 20000
    assert schemas["Budget"]["properties"]["max_context_tokens"]["minimum"] == 256
    assert schemas["UpsertRequest"]["properties"]["items"]["maxItems"] == 200
    params = {p["name"] for p in doc["paths"]["/v0/context/assemble"]["post"]["parameters"]}
    assert {"trace", "Idempotency-Key", "X-Service-Agent"} <= params
    assert {p["name"] for p in doc["paths"]["/v1/memories"]["get"]["parameters"]} >= {
        "user_id",
        "agent_id",
        "query",
        "limit",
    }


# --- concurrency -----------------------------------------------------------------------------------
def _run_threads(n: int, fn: Any) -> None:
    import threading

    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        barrier.wait()
        try:
            fn(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_concurrent_retries_write_once(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    headers = {**auth, "Idempotency-Key": "race-turn"}
    bodies: list[bytes] = []

    def call(i: int) -> None:
        r = client.post(ASSEMBLE, json={"entity_id": "ent:user", "turn": "I live in Paris"}, headers=headers)
        assert r.status_code == 200, r.text
        bodies.append(r.content)

    _run_threads(6, call)
    assert len(set(bodies)) == 1
    assert store.count_memories("acme") == 2  # one turn, one fact


def test_concurrent_turns_leave_one_current_city(
    client: TestClient[Litestar], auth: dict[str, str], store: Store
) -> None:
    cities = ["Paris", "Berlin", "Rome", "Oslo", "Lisbon", "Vienna"]

    def call(i: int) -> None:
        r = client.post(
            ASSEMBLE, json={"entity_id": "ent:user", "turn": f"I live in {cities[i]}"}, headers=auth
        )
        assert r.status_code == 200, r.text

    _run_threads(len(cities), call)
    current = [m for m in facts(store) if m.status in ("active", "disputed") and m.valid_to is None]
    assert len(facts(store)) == len(cities)
    assert len(current) == 1 and current[0].status == "active"


def test_recall_redacts_pii_unless_off(client: TestClient[Litestar], auth: dict[str, str]) -> None:
    client.post(
        "/v0/memories",
        json={"type": "note", "text": "Reach Dana at dana@example.com", "entity_id": "ent:user"},
        headers=auth,
    )
    redacted = client.post(
        "/v0/recall", json={"query": "reach Dana", "entity_id": "ent:user"}, headers=auth
    ).json()
    assert (
        "dana@example.com" not in redacted["matches"][0]["text"] and redacted["redaction"]["applied"] is True
    )
    raw = client.post(
        "/v0/recall",
        json={"query": "reach Dana", "entity_id": "ent:user", "policy": {"pii_redaction": "off"}},
        headers=auth,
    ).json()
    assert "dana@example.com" in raw["matches"][0]["text"]


def test_no_part_of_a_read_shows_what_the_redactor_hides(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """A match's metadata (a fact's `object_name`, a caller's field) and a structured fact's metadata and
    provenance came back raw beside the redacted text, in recall and in assemble, also for a `pii` memory."""
    assemble(client, auth, "My email is bob@example.com")
    client.post(
        "/v0/memories",
        json={"type": "note", "text": "Carol's contact", "entity_id": "ent:user", "sensitivity": "pii",
              "metadata": {"contact": "carol@example.org"}},
        headers=auth,
    )  # fmt: skip
    found = client.post("/v0/recall", json={"query": "email contact", "entity_id": "ent:user"}, headers=auth)
    assert found.status_code == 200 and len(found.json()["matches"]) >= 2, found.text
    everything = {"include_scores": True, "include_raw_memories": True, "include_structured_facts": True,
                  "include_raw_matches": True}  # fmt: skip
    read = assemble(client, auth, "What is my email?", ingest={"extract": False, "store_turn": "none"},
                    **{"return": everything})  # fmt: skip
    for body in (found.text, str(read)):
        assert "bob@example.com" not in body and "carol@example.org" not in body, body


def test_assemble_redacts_the_facts_it_extracted_unless_off(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """`extracted` came back raw (text, object, object_name, source_text) under the default policy, with
    `redaction.applied` false, while the same fact in `context.facts` read [EMAIL_1]."""
    turn = "My email is carol@example.com"
    body = assemble(client, auth, turn)
    assert "carol@example.com" not in str(body)
    (fact,) = body["extracted"]["facts"]
    assert (fact["sensitivity"], fact["text"], fact["object"]) == (
        "pii",
        "User's email is [EMAIL_1]",
        "[EMAIL_1]",
    )
    assert fact["metadata"]["object_name"] == "[EMAIL_1]"
    assert fact["provenance"]["source_text"] == "My email is [EMAIL_1]"
    assert body["redaction"] == {"applied": True, "rules": ["email"]}
    moved = assemble(
        client, auth, "My email is now bob@example.com", policy={"egress_rehydration": "allowed"}
    )
    assert moved["context"]["facts"][0].startswith(
        "User's email is [EMAIL_1]"
    )  # carol, read before the write
    assert moved["extracted"]["facts"][0]["text"] == "User's email is [EMAIL_2]"  # one numbering for both
    placeholders = moved["redaction"]["placeholders"]
    assert placeholders == {"[EMAIL_1]": "carol@example.com", "[EMAIL_2]": "bob@example.com"}
    off = assemble(client, auth, "My email is dave@example.com", policy={"pii_redaction": "off"})
    assert off["extracted"]["facts"][0]["text"] == "User's email is dave@example.com"
    assert off["redaction"] == {"applied": False, "rules": []}


def test_a_summary_only_context_summarizes_what_it_shows_no_line_for(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """With the other sections left out, the summary had nothing to summarize: empty, 0 tokens."""
    for turn in [
        "I live in Paris",
        "I like jazz",
        "I booked a flight to Rome for Friday",
        "My sister Anna is a nurse",
    ]:
        assemble(client, auth, turn)
    for include in (["summary"], ["summary", "sources"]):
        context = assemble(
            client, auth, "Tell me about me", ingest=READ_ONLY, **{"return": {"include": include}}
        )["context"]
        assert (context["facts"], context["recent_events"], context["sources"]) == ([], [], [])
        summary = context["summary"]
        assert "lives in Paris" in summary and "flight to Rome" in summary, summary
        assert context["token_counts"]["used"] > 0
    events_only = assemble(
        client, auth, "Tell me about me", ingest=READ_ONLY, **{"return": {"include": ["facts", "summary"]}}
    )["context"]
    assert events_only["recent_events"] == [] and "flight to Rome" in events_only["summary"]
    assert any("lives in Paris" in x for x in events_only["facts"])
    assert "User lives in Paris" not in events_only["summary"]  # its line says it


def test_ingest_subject_names_who_first_person_statements_are_about(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    body = {
        "entity_id": "ent:household",
        "turn": "I live in Paris",
        "ingest": {"subject": "ent:alice", "store_turn": "none"},
    }
    r = client.post("/v0/context/assemble", json=body, headers=auth)
    assert r.status_code == 200, r.text
    facts = r.json()["extracted"]["facts"]
    assert facts and {f["subject"] for f in facts} == {"ent:alice"}
    assert {f["entity_id"] for f in facts} == {"ent:household"}  # still in the request's scope
    bad = client.post("/v0/context/assemble", json={**body, "ingest": {"subject": "alice"}}, headers=auth)
    assert bad.status_code == 422 and "ingest.subject" in bad.json()["details"]["field"]


@pytest.mark.parametrize(
    "question",
    ["What did I buy 10 days ago?", "What did I buy on June 10, 2024?", "What did I buy on 10 June?"],
)
def test_a_question_about_a_time_lifts_what_was_said_then(
    client: TestClient[Litestar], auth: dict[str, str], question: str
) -> None:
    """`time_boost`: the turn of the day the question points to (ten days before it, or the date it
    names), over the same words said a month before; `retrieval.time_weight` 0 turns it off."""
    asked = datetime(2024, 6, 20, 12, 0, tzinfo=UTC)
    said = {"ten": asked - timedelta(days=10, hours=3), "forty": asked - timedelta(days=40)}
    items = [
        {
            "type": "event",
            "entity_id": "ent:user",
            "text": "I bought a smoker for the barbecue.",
            "timestamp": at,
        }
        for at in (said["ten"].isoformat(), said["forty"].isoformat())
    ]
    r = client.post("/v0/memories", json={"items": items}, headers=auth)
    assert r.status_code in (200, 201), r.text
    ids = dict(zip(said, (m["memory_id"] for m in r.json()["items"]), strict=True))

    def scores(**retrieval: Any) -> dict[str, dict[str, Any]]:
        body = {
            "query": question,
            "entity_id": "ent:user",
            "as_of": asked.isoformat(),
            "retrieval": retrieval,
        }
        r = client.post("/v0/recall", json=body, headers=auth)
        assert r.status_code == 200, r.text
        return {m["memory_id"]: m for m in r.json()["matches"]}

    on, off = scores(), scores(time_weight=0)
    assert on[ids["ten"]]["score_components"]["time_boost"]["contrib"] == pytest.approx(0.2)
    assert "from the time the question points to" in on[ids["ten"]]["reason"]
    assert "time_boost" not in on[ids["forty"]]["score_components"]
    assert not any("time_boost" in m["score_components"] for m in off.values())
    gap_on = on[ids["ten"]]["score"] - on[ids["forty"]]["score"]
    gap_off = off[ids["ten"]]["score"] - off[ids["forty"]]["score"]
    assert gap_on == pytest.approx(gap_off + 0.2)


def test_the_other_side_of_the_question_loses_the_speaker_focus(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """`speaker_focus`: a question naming Caroline lowers Melanie's turns, a question about the asker the
    assistant's; 0 turns it off, and a value outside [0, 1] is refused."""
    texts = {
        "c": "Caroline: I painted a lake at sunset.",
        "m": "Melanie: Caroline, your lake painting is lovely!",
        "u": "user: I painted my kitchen blue.",
        "a": "assistant: A blue kitchen painting sounds calm.",
    }
    items = [{"type": "event", "entity_id": "ent:chat", "text": t} for t in texts.values()]
    r = client.post("/v0/memories", json={"items": items}, headers=auth)
    assert r.status_code in (200, 201), r.text
    ids = dict(zip(texts, (m["memory_id"] for m in r.json()["items"]), strict=True))

    def focus(query: str, **retrieval: Any) -> dict[str, float]:
        body = {"query": query, "entity_id": "ent:chat", "retrieval": retrieval}
        r = client.post("/v0/recall", json=body, headers=auth)
        assert r.status_code == 200, r.text
        return {
            key: m["score_components"]["speaker_focus"]["contrib"]
            for m in r.json()["matches"]
            for key, mid in ids.items()
            if m["memory_id"] == mid and "speaker_focus" in m["score_components"]
        }

    named = focus("What did Caroline paint?")
    assert set(named) == {"m"} and named["m"] < 0  # "user: " is a role, not a speaker's name
    assert set(focus("What did I paint in my kitchen?")) == {"a"}
    assert focus("What did you say about the painting?") == {}
    assert focus("What did Caroline paint?", speaker_focus=0) == {}
    r = client.post(
        "/v0/recall",
        json={
            "query": "What did Caroline paint?",
            "entity_id": "ent:chat",
            "retrieval": {"speaker_focus": 1.5},
        },
        headers=auth,
    )
    assert r.status_code == 422 and "speaker_focus" in r.text


def test_a_neighbour_is_lifted_by_what_the_question_matched_in_its_anchor(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """The neighbour boost passes on a share of what the question matched in the turn beside it, not of
    the graph prior every turn of the named speaker has: the turn after "hiking" is lifted, the turn
    after a Caroline turn that matched nothing else is not."""
    texts = [
        "Melanie: How was the weekend?",
        "Caroline: I went hiking at Mount Tam with my kids.",
        "Melanie: Lovely!",
        "Caroline: We saw a bobcat near the trail.",
        "Melanie: Wow.",
    ]
    items = [
        {"type": "event", "entity_id": "ent:talk", "text": t, "timestamp": f"2024-05-04T10:0{i}:00Z"}
        for i, t in enumerate(texts)
    ]
    r = client.post("/v0/memories", json={"items": items}, headers=auth)
    assert r.status_code in (200, 201), r.text
    ids = [m["memory_id"] for m in r.json()["items"]]
    weights = {"semantic": 0, "bm25": 0.5, "graph_prior": 0.5, "recency_decay": 0, "confidence": 0}
    body = {
        "query": "Where did Caroline go hiking?",
        "entity_id": "ent:talk",
        "retrieval": {"weights": weights, "top_k": 1, "expand": {"day_weight": 0}},
    }
    r = client.post("/v0/recall", json=body, headers=auth)
    assert r.status_code == 200, r.text
    got = {m["memory_id"]: m["score_components"] for m in r.json()["matches"]}
    hiking = got[ids[1]]
    assert hiking["graph_prior"]["contrib"] > 0 and got[ids[3]]["graph_prior"]["contrib"] > 0
    share = 0.35 * hiking["bm25"]["contrib"]
    for neighbour in (ids[0], ids[2]):
        assert got[neighbour]["neighbor_boost"]["contrib"] == pytest.approx(share)
    assert "neighbor_boost" not in got.get(ids[4], {})


def test_a_long_memory_is_found_by_its_closest_sentence_whichever_door_wrote_it(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Passages: a long turn whose one sentence answers the question has its semantic similarity moved
    `retrieval.passage_weight` of the way to that sentence's (0: the whole text's; 1: the sentence's),
    whether it was written by POST /v0/memories or stored by an assemble (the agent loop)."""
    filler = " ".join(
        f"On day {n} we talked about the traffic, the weather and the neighbours' garden party."
        for n in range(8)
    )
    texts = {
        "memories": f"{filler} By the way, I bought a new espresso machine for the kitchen.",
        "assemble": f"{filler} Also, my sister gave me a vintage espresso grinder for the kitchen.",
    }
    r = client.post(
        "/v0/memories",
        json={"type": "event", "entity_id": "ent:user", "text": texts["memories"]},
        headers=auth,
    )
    assert r.status_code in (200, 201), r.text
    r = client.post(
        "/v0/context/assemble", json={"entity_id": "ent:user", "turn": texts["assemble"]}, headers=auth
    )
    assert r.status_code == 200, r.text

    def raw(**retrieval: Any) -> dict[str, float]:
        body = {"query": "espresso kitchen", "entity_id": "ent:user", "retrieval": retrieval}
        r = client.post("/v0/recall", json=body, headers=auth)
        assert r.status_code == 200, r.text
        by_text = {m["text"]: m["score_components"]["semantic"]["raw"] for m in r.json()["matches"]}
        return {door: by_text[text] for door, text in texts.items()}

    whole, default, sentence = raw(passage_weight=0), raw(), raw(passage_weight=1)
    for door in texts:
        assert whole[door] < default[door] < sentence[door], door
        moved = whole[door] + TUNING.presets["balanced"].passage_weight * (sentence[door] - whole[door])
        assert default[door] == pytest.approx(moved, abs=2e-4)


def test_a_long_turn_is_shown_by_the_sentence_that_answers(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """The line of a long turn whose matched sentence lies past what the line's cap would show: its
    start and that sentence (before, the first 160 tokens, without the answer)."""
    filler = " ".join(
        f"On day {n} we talked about the traffic, the weather and the neighbours' garden party at length."
        for n in range(14)
    )
    text = f"Sam: {filler} By the way, I bought a new espresso machine for the kitchen. {filler}"
    r = client.post(
        "/v0/memories", json={"type": "event", "entity_id": "ent:sam", "text": text}, headers=auth
    )
    assert r.status_code in (200, 201), r.text

    def line(**retrieval: Any) -> str:
        body = {
            "entity_id": "ent:sam",
            "turn": "espresso kitchen",
            "retrieval": retrieval,
            "ingest": {"extract": False, "store_turn": "none"},
        }
        r = client.post("/v0/context/assemble", json=body, headers=auth)
        assert r.status_code == 200, r.text
        (found,) = [e for e in r.json()["context"]["recent_events"] if e.startswith("Sam: ")]
        return str(found)

    shown, capped = line(), line(passage_weight=0)
    assert "I bought a new espresso machine for the kitchen." in shown
    assert shown.startswith("Sam: On day 0 we talked") and shown.endswith("kitchen. …")
    assert "espresso" not in capped and capped.startswith("Sam: On day 0")


def test_recall_finds_a_word_whatever_unicode_form_it_was_typed_in(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Notes written with a composed "é" and with "e" plus a combining accent: a keyword-only recall in
    either form found only the note typed in its own form."""
    for text in ("Je bois un caf\u00e9 au lait", "Je bois un cafe\u0301 au lait", "Nous mangeons du pain"):
        r = client.post(
            "/v0/memories", json={"type": "note", "entity_id": "ent:uni", "text": text}, headers=auth
        )
        assert r.status_code == 200, r.text
    keyword_only = {"bm25": 1, "semantic": 0, "graph_prior": 0, "recency_decay": 0, "confidence": 0}
    for query in ("caf\u00e9", "cafe\u0301"):
        r = client.post(
            "/v0/recall",
            json={"entity_id": "ent:uni", "query": query, "retrieval": {"weights": keyword_only}},
            headers=auth,
        )
        assert r.status_code == 200, r.text
        assert r.json()["retrieval_summary"]["candidate_counts"]["bm25"] == 2
        assert (
            len(
                {m["text"] for m in r.json()["matches"]}
                & {"Je bois un caf\u00e9 au lait", "Je bois un cafe\u0301 au lait"}
            )
            == 2
        )


def _notes(
    client: TestClient[Litestar], auth: dict[str, str], entity: str, texts: list[str]
) -> dict[str, str]:
    """Write `texts` as notes of `entity`; return memory id -> text."""
    ids = {}
    for text in texts:
        r = client.post(
            "/v0/memories", json={"type": "note", "entity_id": entity, "text": text}, headers=auth
        )
        assert r.status_code == 200, r.text
        ids[r.json()["memory_id"]] = text
    return ids


def _keyword_hits(client: TestClient[Litestar], auth: dict[str, str], entity: str, query: str) -> list[str]:
    """The texts recall gives a keyword (bm25) score for `query`."""
    r = client.post("/v0/recall", json={"entity_id": entity, "query": query, "limit": 10}, headers=auth)
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["matches"] if m["score_components"]["bm25"]["raw"] > 0]


def test_recall_keyword_matches_whole_indic_words_and_cjk_words_inside_a_sentence(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Hindi and Tamil notes: a recall for "दिल्ली" (Delhi) gave keyword scores to the notes that only
    share a consonant with it ("I like dal rice", "we saw a film"). Chinese and Japanese notes: a
    recall for a word inside a sentence ("绿茶", green tea) had no keyword candidate at all."""
    delhi, dal, film = "मेरी बहन दिल्ली में रहती है।", "मुझे दाल चावल पसंद है।", "कल हमने एक फिल्म देखी।"
    chennai, movie = "என் அண்ணன் சென்னை நகரில் வசிக்கிறார்.", "நான் நேற்று சினிமா பார்த்தேன்."
    tea, coffee = "我妹妹住在上海，她每天早上喝绿茶。", "毎朝コーヒーを飲みます。"
    _notes(client, auth, "ent:lang", [delhi, dal, film, chennai, movie, tea, coffee])
    assert _keyword_hits(client, auth, "ent:lang", "दिल्ली") == [delhi]
    assert _keyword_hits(client, auth, "ent:lang", "சென்னை") == [chennai]
    assert _keyword_hits(client, auth, "ent:lang", "सेब") == []
    assert _keyword_hits(client, auth, "ent:lang", "绿茶") == [tea]
    assert _keyword_hits(client, auth, "ent:lang", "コーヒー") == [coffee]


def test_recall_finds_an_emoji_only_note_by_its_own_text(
    client: TestClient[Litestar], auth: dict[str, str]
) -> None:
    """Notes that are one emoji each: recall of a note's own text ranked other emoji notes first (no
    keyword term, and one vector for every emoji in the English model), so the newest won the tie."""
    emoji = ["🍣", "🍕", "\u2615\ufe0f", "🚗", "👨\u200d👩\u200d👧", "🇯🇵", "📚", "💊"]
    ids = _notes(client, auth, "ent:emoji", emoji)
    for memory_id, text in ids.items():
        r = client.post("/v0/recall", json={"entity_id": "ent:emoji", "query": text}, headers=auth)
        assert r.status_code == 200, r.text
        assert r.json()["matches"][0]["memory_id"] == memory_id, text
    assert _keyword_hits(client, auth, "ent:emoji", "👨") == []  # a family is its own term
