from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import msgspec
import pytest

from evals.metrics import ContextFact, QuestionRecord, score
from evals.model import Conversation, Dataset, GoldFact, Question, Session, Turn
from evals.replay import (
    Answer,
    EngineBackend,
    HttpBackend,
    Loaded,
    Ranked,
    ReplayConfig,
    assemble_body,
    evidence_questions,
    ranking_body,
    replay,
    to_record,
)
from evals.synthetic import SyntheticConfig, generate

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def _turn(i: int, speaker: str, text: str, *facts: GoldFact, day: int = 0) -> Turn:
    return Turn(
        turn_id=f"t{i}",
        speaker=speaker,
        text=text,
        timestamp=T0 + timedelta(days=day, seconds=i),
        session=f"s{day}",
        index=i,
        facts=facts,
    )


def _dataset() -> Dataset:
    turns = (
        _turn(0, "Alice", "I live in Berlin.", GoldFact(predicate="lives_in", value="Berlin")),
        _turn(1, "assistant", "Nice, Berlin is a great city."),
        _turn(2, "Alice", "Can you recommend a good book for a long flight?", day=10),
        _turn(
            3,
            "Alice",
            "I moved to Lisbon last month.",
            GoldFact(predicate="lives_in", value="Lisbon"),
            day=40,
        ),
        _turn(4, "assistant", "Congratulations on the move to Lisbon!", day=40),
    )
    conv = Conversation(
        conversation_id="c-1",
        speakers=("Alice", "assistant"),
        sessions=tuple(Session(session_id=f"s{d}", date=T0 + timedelta(days=d)) for d in (0, 10, 40)),
        turns=turns,
    )
    end = T0 + timedelta(days=41)
    questions = (
        Question(
            question_id="q-now",
            conversation_id="c-1",
            text="Where does Alice live now?",
            answer="Lisbon",
            evidence=("t3",),
            asked_at=end,
            category="lives_in",
            predicate="lives_in",
            current_values=("Lisbon",),
            stale_values=("Berlin",),
        ),
        Question(
            question_id="q-then",
            conversation_id="c-1",
            text="Where does Alice live?",
            answer="Berlin",
            evidence=("t0",),
            asked_at=T0 + timedelta(days=5),
            category="lives_in",
            predicate="lives_in",
            current_values=("Berlin",),
        ),
        Question(
            question_id="q-book",
            conversation_id="c-1",
            text="What did Alice ask about a flight?",
            answer=None,
            evidence=("t2",),
            asked_at=end,
            category="single-hop",
        ),
    )
    return Dataset(name="tiny", conversations=(conv,), questions=questions)


def test_engine_replay_supersession_and_recall() -> None:
    config = ReplayConfig(budget=1200)
    records = {r.question_id: r for r in replay(_dataset(), EngineBackend(config), config)}
    assert set(records) == {"q-now", "q-then", "q-book"}
    now, then, book = (score(records[q]) for q in ("q-now", "q-then", "q-book"))
    # the whole conversation fits in the context: every evidence turn is in it
    assert now.recall_in_context == 1.0 and book.recall_in_context == 1.0
    assert now.recall_at_5 == 1.0 and book.recall_at_50 == 1.0
    # as of now Lisbon is the active fact and Berlin is not presented as active
    assert now.supersession_correct is True
    assert now.stale_active is False and now.false_supersession is False
    # the store agrees: Lisbon active now, Berlin ended when Lisbon was said
    assert now.store_correct is True and now.store_stale_active is False
    stored = {f.text: f for f in records["q-now"].stored_facts or ()}
    berlin = next(f for text, f in stored.items() if "Berlin" in text)
    assert berlin.status == "superseded" and berlin.valid_to == T0 + timedelta(days=40, seconds=3)
    # as of day 5 only Berlin had been said: Lisbon is not a candidate yet
    assert then.supersession_correct is True
    assert all("Lisbon" not in line.text for line in records["q-then"].lines)
    for m in (now, then, book):
        assert not m.overflow and 0 < m.utilization <= 1
    assert set(records["q-book"].ranked) <= {f"t{i}" for i in range(5)}


def test_engine_replay_synthetic_smoke() -> None:
    dataset = generate(SyntheticConfig(seed=4, entities=2, probes_per_entity=4))
    config = ReplayConfig(budget=512)
    records = replay(dataset, EngineBackend(config), config, questions=evidence_questions)
    assert len(records) == len([q for q in dataset.questions if evidence_questions(q)])
    turn_ids = {t.turn_id for c in dataset.conversations for t in c.turns}
    for record in records:
        assert set(record.ranked) <= turn_ids
        assert 0 < record.context_tokens <= 512
        assert {"total", "assemble"} <= set(record.stage_ms)


def test_to_record_maps_memories_back_to_turns() -> None:
    dataset = _dataset()
    conv = dataset.conversations[0]
    loaded = Loaded(
        conversation_id="c-1",
        entity_id="ent:c-1",
        namespace="eval",
        memory_to_turn={"mem_A": "t0", "mem_B": "t3", "mem_F": "t3", "mem_C": "t2"},
    )
    answer = Answer(
        ranked=[
            Ranked(memory_id="mem_F", score=0.9, type="fact"),
            Ranked(memory_id="mem_X", score=0.8, turn_id="t4"),
            Ranked(memory_id="mem_B", score=0.7),
            Ranked(memory_id="mem_unknown", score=0.1),
        ],
        lines=[
            ("facts", "User lives in Lisbon (since 2024-04-10)"),
            ("recent_events", "2024-03-11: Alice: Can you recommend a good book for a long flight?"),
            ("sources", "[mem_A] Alice: I live in Berlin."),
        ],
        facts=[ContextFact(text="User lives in Lisbon", predicate="lives_in", memory_id="mem_F")],
        tokens_used=40,
        budget=1200,
        stage_ms={"total": 1.0},
    )
    q_now, _, q_book = dataset.questions
    record = to_record(q_now, conv, loaded, answer)
    assert record.ranked == ("t3", "t4", "t3")  # a fact counts as its source turn; unknown ids dropped
    assert [line.turn_ids for line in record.lines] == [("t3",), (), ()]
    book = to_record(q_book, conv, loaded, answer)
    # "I live in Berlin." is too short to match by text, but mem_A is not evidence here anyway
    assert [line.turn_ids for line in book.lines] == [(), ("t2",), ()]
    assert score(record).recall_in_context == 1.0 and score(record).mrr == 1.0


def test_assemble_body_is_a_valid_request() -> None:
    import msgspec

    from engine.retrieval.options import AssembleRequest

    dataset = _dataset()
    loaded = Loaded(conversation_id="c-1", entity_id="ent:c-1", namespace="eval", memory_to_turn={})
    config = ReplayConfig(
        preset="factual", weights={"bm25": 0.5, "semantic": 0.5}, budget=800, recency_half_life_days=30
    )
    body = assemble_body(loaded, dataset.questions[0], config)
    request = msgspec.convert(body, AssembleRequest, strict=False)
    assert request.as_of == dataset.questions[0].asked_at
    assert request.budget_tokens() == (800, "budget.max_context_tokens")
    assert request.retrieval.preset == "factual" and request.return_.include_raw_matches
    assert request.ingest.store_turn == "none" and not request.ingest.extract
    assert (request.return_.max_events, request.return_.max_facts) == (6, 12)  # the API defaults
    more = assemble_body(loaded, dataset.questions[0], ReplayConfig(max_events=30, max_facts=20))
    wide = msgspec.convert(more, AssembleRequest, strict=False)
    assert (wide.return_.max_events, wide.return_.max_facts) == (30, 20)


def _is_ingest(body: dict[str, Any]) -> bool:
    """An assemble that ingests a turn's facts (replay), not one that asks a question."""
    return bool(body.get("ingest", {}).get("extract"))


def test_http_backend_against_a_mock_server() -> None:
    seen: list[tuple[str, dict[str, Any], str | None]] = []
    created: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append((request.url.path, body, request.headers.get("authorization")))
        if request.url.path == "/v0/memories":
            items = []
            for item in body["items"]:
                mid = f"mem_{len(created)}"
                created.append(mid)
                items.append({"memory_id": mid, **item})
            return httpx.Response(200, json={"items": items})
        assert request.url.path == "/v0/context/assemble"
        return httpx.Response(
            200,
            json={
                "context": {
                    "facts": [],
                    "recent_events": ["2024-04-10: Alice: I moved to Lisbon last month."],
                    "summary": "",
                    "sources": [],
                    "token_counts": {"used": 12, "budget": 1200},
                },
                "matches": [
                    {"memory_id": "mem_3", "score": 1.0, "type": "event", "metadata": {"turn_id": "t3"}}
                ],
                "retrieval_summary": {"top_k": 100},
                "trace": {"timings": {"total": 2.5}},
            },
        )

    client = httpx.Client(transport=httpx.MockTransport(handler), base_url="http://loci.test")
    backend = HttpBackend("http://loci.test", "sk_test", client=client)
    config = ReplayConfig()
    records = replay(_dataset(), backend, config)
    writes = [b for path, b, _ in seen if path == "/v0/memories"]
    assert len(writes) == 1 and len(writes[0]["items"]) == 5
    first = writes[0]["items"][0]
    assert first["type"] == "event" and first["text"] == "Alice: I live in Berlin."
    assert first["metadata"]["turn_id"] == "t0" and first["timestamp"] == T0.isoformat()
    assembles = [b for path, b, _ in seen if path == "/v0/context/assemble"]
    ingests = [b for b in assembles if _is_ingest(b)]
    asks = [b for b in assembles if not _is_ingest(b)]
    # facts of user turns go through assemble's ingest, dated by the turn and about the speaker
    assert ingests and all(b["ingest"]["store_turn"] == "none" for b in ingests)
    assert ingests[0]["as_of"] == T0.isoformat() and ingests[0]["ingest"]["subject"] == "ent:alice"
    assert len(asks) == 3  # top_k 100 >= rank_depth: no second call
    assert all(auth == "Bearer sk_test" for _, _, auth in seen)
    assert asks[0]["as_of"] == (T0 + timedelta(days=41)).isoformat()
    now = next(r for r in records if r.question_id == "q-now")
    assert now.ranked == ("t3",) and now.context_tokens == 12
    assert now.stage_ms["total"] == 2.5 and "http" in now.stage_ms
    assert score(now).recall_in_context == 1.0


@pytest.mark.parametrize("depth,calls", [(50, 2), (24, 1)])
def test_http_backend_asks_for_a_deeper_ranking(depth: int, calls: int) -> None:
    paths: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path == "/v0/memories":
            return httpx.Response(
                200, json={"items": [{"memory_id": f"m{i}"} for i, _ in enumerate(body["items"])]}
            )
        if not _is_ingest(body):
            paths.append(body)
        return httpx.Response(200, json={"context": {}, "matches": [], "retrieval_summary": {"top_k": 24}})

    client = httpx.Client(transport=httpx.MockTransport(handler), base_url="http://loci.test")
    dataset = _dataset()
    config = ReplayConfig(rank_depth=depth)
    replay(
        Dataset(name="one", conversations=dataset.conversations, questions=dataset.questions[:1]),
        HttpBackend("http://loci.test", "k", client=client),
        config,
    )
    assert len(paths) == calls
    if calls == 2:
        assert paths[1]["retrieval"]["top_k"] == depth


def test_the_deeper_ranking_call_is_made_only_below_the_depth_that_ran() -> None:
    loaded = Loaded(conversation_id="c", entity_id="ent:u", namespace="n", memory_to_turn={})
    question = _dataset().questions[0]
    config = ReplayConfig(rank_depth=50)
    # the engine fits its depth to the return limits and reports it: 72 >= 50 needs no second call
    assert ranking_body(loaded, question, config, 72) is None
    deep = ranking_body(loaded, question, config, 24)
    assert deep is not None and deep["retrieval"]["top_k"] == 50 and deep["return"]["include"] == ["facts"]
    # a server that reports no depth is taken to run the spec's default 24
    assert ranking_body(loaded, question, config, None) == deep
    assert ranking_body(loaded, question, ReplayConfig(rank_depth=24), None) is None


class _Refusing:
    """A client to the served app that answers `status` before sending on: to every other request
    (`always` False), or to every request."""

    def __init__(self, client: Any, status: int, retry_after: str | None, *, always: bool = False) -> None:
        self.client, self.status, self.retry_after, self.always = client, status, retry_after, always
        self.calls = 0

    def post(self, path: str, **kw: Any) -> httpx.Response:
        self.calls += 1
        if self.always or self.calls % 2:
            headers = {} if self.retry_after is None else {"Retry-After": self.retry_after}
            return httpx.Response(self.status, headers=headers, request=httpx.Request("POST", path))
        response: httpx.Response = self.client.post(path, **kw)
        return response


@pytest.mark.parametrize(
    ("status", "retry_after", "wait"), [(429, "3", 3.0), (503, "1", 1.0), (429, None, None)]
)
def test_http_replay_waits_out_a_refusal_and_records_the_same(
    status: int, retry_after: str | None, wait: float | None
) -> None:
    """The server's rate limit (600/minute by default) ended `loci eval run --http` with a traceback
    at its first 429, and no results."""
    from evals.local_api import LocalApi

    dataset = generate(SyntheticConfig(seed=3, entities=2))
    config = ReplayConfig(embedder="hash")
    with LocalApi() as api:
        plain = replay(
            dataset,
            HttpBackend("http://testserver", api.secret, client=api.client, namespace_prefix="e"),
            config,
        )
    waits: list[float] = []
    with LocalApi() as api:
        refusing = _Refusing(api.client, status, retry_after)
        backend = HttpBackend(
            "http://testserver", api.secret, client=refusing, namespace_prefix="e", sleep=waits.append
        )
        throttled = replay(dataset, backend, config)
    assert len(waits) == refusing.calls // 2 > 0  # each request refused once, then answered
    if wait is not None:
        assert set(waits) == {wait}  # the advertised delay
    else:
        assert max(waits) <= 8.0  # no Retry-After: the SDK policy's backoff
    assert [_without_ids(r) for r in throttled] == [_without_ids(r) for r in plain]


def _without_ids(record: QuestionRecord) -> QuestionRecord:
    """A record less what differs from one replay to the next: its latencies and its facts' ids."""
    facts = tuple(msgspec.structs.replace(f, memory_id=None) for f in record.facts)
    return msgspec.structs.replace(record, stage_ms={}, facts=facts)


def test_http_replay_gives_up_after_bounded_waits_and_leaves_503_without_retry_after() -> None:
    from engine.errors import Unavailable
    from evals.local_api import LocalApi
    from evals.replay import RATE_RETRIES

    dataset = _dataset()
    with LocalApi() as api:
        waits: list[float] = []
        refusing = _Refusing(api.client, 429, "3600", always=True)
        backend = HttpBackend("http://testserver", api.secret, client=refusing, sleep=waits.append)
        with pytest.raises(Unavailable, match=f"answered 429 {RATE_RETRIES + 1} times"):
            replay(dataset, backend, ReplayConfig())
        assert waits == [60.0] * RATE_RETRIES  # an hour advertised: a minute at most, each time
        unavailable = _Refusing(api.client, 503, None, always=True)
        backend = HttpBackend("http://testserver", api.secret, client=unavailable, sleep=waits.append)
        with pytest.raises(Unavailable, match="answered 503 Service Unavailable$"):
            replay(dataset, backend, ReplayConfig())
        assert unavailable.calls == 1  # not known to be refused before it ran: not sent again


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            httpx.Response(301, headers={"Location": "https://loci.test/"}),
            "the server answered 301 Moved Permanently",
        ),
        (
            httpx.Response(401, json={"error": "unauthorized", "message": "invalid API key"}),
            "the server answered 401 Unauthorized: invalid API key",
        ),
        (httpx.Response(404, text="<html>no</html>"), "the server answered 404 Not Found"),
        (httpx.ConnectError("[Errno 111] Connection refused"), "no answer ([Errno 111] Connection refused)"),
        (
            httpx.Response(200, text="<html>a proxy's page</html>"),
            "the server answered 200 OK with no JSON object (is it the Loci API?)",
        ),
        (
            httpx.Response(200, json=[1, 2]),
            "the server answered 200 OK with no JSON object (is it the Loci API?)",
        ),
    ],
)
def test_an_http_failure_is_one_line_naming_the_url(answer: httpx.Response | Exception, said: str) -> None:
    """A 401 or a refused connection ended `loci eval run --http` with httpx's traceback."""
    from engine.errors import Unavailable

    calls: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if isinstance(answer, Exception):
            raise answer
        return answer

    client = httpx.Client(transport=httpx.MockTransport(handler), base_url="http://loci.test:8080/")
    backend = HttpBackend("http://loci.test:8080/", "sk_bad", client=client, sleep=lambda _: None)
    with pytest.raises(Unavailable) as err:
        replay(_dataset(), backend, ReplayConfig())
    assert err.value.message == f"POST http://loci.test:8080/v0/memories: {said}"
    assert calls == ["/v0/memories"]  # neither is sent again
