"""summarize(): extractive content, order, validity, budget, sources, redaction and the LLM path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from engine.errors import Unavailable
from engine.models import Memory
from engine.redact import RedactionPolicy, Redactor
from engine.retrieval import tokens
from engine.storage import Store, open_store
from engine.summarize import OpenAIChat, summarize
from tests.factories import memory

NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
ORG = "org_a"


def _m(memory_id: str, *, days_ago: float, text: str, type: str = "fact", **fields: Any) -> Memory:
    fields = {"org_id": ORG, "entity_id": "ent:alice", **fields}
    return memory(memory_id=memory_id, at=NOW, days_ago=days_ago, text=text, type=type, **fields)


@pytest.fixture(params=["memory", "sqlite://:memory:"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    s = open_store(request.param)
    s.put_memories(
        [
            _m("mem_f1", days_ago=30, text="Alice lives in Paris", valid_from=NOW - timedelta(days=30)),
            _m("mem_f2", days_ago=10, text="Alice works at Acme"),
            _m("mem_old", days_ago=60, text="Alice lives in Lyon", status="superseded"),
            _m("mem_arch", days_ago=5, text="Alice likes jazz", archived=True),
            _m("mem_exp", days_ago=50, text="Alice is on leave", valid_to=NOW - timedelta(days=1)),
            _m("mem_future", days_ago=-3, text="Alice will move", valid_from=NOW + timedelta(days=3)),
            _m("mem_bob", days_ago=1, text="Bob lives in Rome", entity_id="ent:bob"),
            _m("mem_ns", days_ago=1, text="Alice in another namespace", namespace="other"),
            _m("mem_e1", days_ago=2, text="Alice flew to Rome", type="event"),
            _m("mem_e2", days_ago=20, text="Alice started a course", type="event"),
            _m("mem_e_future", days_ago=-1, text="Alice will fly home", type="event"),
        ]
    )
    s.put_memories([_m("mem_other_org", days_ago=1, text="Alice secret", org_id="org_b")])
    yield s
    s.close()


def test_extractive_summary_has_current_facts_and_recent_events_newest_first(store: Store) -> None:
    out = summarize(store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW)
    assert out.summary == (
        "Facts:\n"
        "- Alice works at Acme\n"
        "- Alice lives in Paris (since 2024-05-02)\n"
        "Recent events:\n"
        "- 2024-05-30: Alice flew to Rome\n"
        "- 2024-05-12: Alice started a course"
    )
    assert out.sources == ["mem_f2", "mem_f1", "mem_e1", "mem_e2"]
    assert out.origin == "extractive"
    assert out.token_count == tokens.estimate(out.summary)


def test_two_disputed_values_are_both_summarized_and_marked(store: Store) -> None:
    store.put_memories(
        [
            _m(f"mem_d{i}", days_ago=1, text=f"Alice drives a {car}", status="disputed")
            for i, car in enumerate(("Volvo", "Fiat"))
        ]
        + [
            _m(
                "mem_d_old",
                days_ago=9,
                text="Alice drives a Ford",
                status="disputed",
                valid_to=NOW - timedelta(days=1),
            )
        ]
    )
    out = summarize(store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW)
    lines = [line for line in out.summary.splitlines() if "drives" in line]
    assert sorted(lines) == ["- Alice drives a Fiat (disputed)", "- Alice drives a Volvo (disputed)"]


def test_empty_entity_gives_an_empty_summary(store: Store) -> None:
    out = summarize(store, org_id=ORG, entity_id="ent:nobody", namespace="default", now=NOW)
    assert (out.summary, out.sources, out.token_count) == ("", [], 0)


def test_org_isolation(store: Store) -> None:
    out = summarize(store, org_id="org_b", entity_id="ent:alice", namespace="default", now=NOW)
    assert out.sources == ["mem_other_org"]


@pytest.mark.parametrize("max_tokens", [5, 12, 20, 30, 45, 256])
def test_budget_is_never_exceeded(store: Store, max_tokens: int) -> None:
    out = summarize(
        store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW, max_tokens=max_tokens
    )
    assert out.token_count == tokens.estimate(out.summary) <= max_tokens
    assert len(out.sources) == out.summary.count("\n- ") + out.summary.startswith("- ")


def test_a_tight_budget_keeps_room_for_events(store: Store) -> None:
    # "Facts:\n- Alice works at Acme" is 28 chars = 10 tokens; adding the events header and one event
    # ("\nRecent events:\n- 2024-05-30: Alice flew to Rome", 48 chars) makes 76 chars = 26 tokens.
    out = summarize(store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW, max_tokens=26)
    assert out.sources == ["mem_f2", "mem_e1"]


def test_long_texts_are_cut_to_one_line(store: Store) -> None:
    store.put_memories([_m("mem_long", days_ago=0.5, text="word " * 400 + "\nsecond line", type="event")])
    out = summarize(store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW, max_tokens=1000)
    line = next(s for s in out.summary.split("\n") if s.startswith("- 2024-06-01"))
    assert len(line) <= len("- 2024-06-01: ") + 300 + 1 and line.endswith(tokens.ELLIPSIS)


def test_redaction_is_applied_per_line_and_counted(store: Store) -> None:
    store.put_memories(
        [
            _m("mem_mail", days_ago=0.5, text="Alice's email is alice@example.com"),
            _m("mem_pii", days_ago=0.6, text="Alice has asthma", sensitivity="pii", object="asthma"),
            _m("mem_plain", days_ago=0.7, text="Alice's work mail is a@acme.com", sensitivity="none"),
        ]
    )
    r = Redactor(RedactionPolicy(egress_rehydration="allowed"))
    out = summarize(store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW, redactor=r)
    assert "- Alice's email is [EMAIL_1]" in out.summary
    assert "- Alice has [PII_1]" in out.summary
    assert "a@acme.com" in out.summary
    assert r.report().placeholders == {"[EMAIL_1]": "alice@example.com", "[PII_1]": "asthma"}
    assert store.get_memory(ORG, "mem_mail").text == "Alice's email is alice@example.com"  # type: ignore[union-attr]


class FakeChat:
    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, int]] = []

    def complete(self, system: str, user: str, *, max_tokens: int) -> str:
        self.calls.append((system, user, max_tokens))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def test_llm_summary_and_its_budget(store: Store) -> None:
    chat = FakeChat("Alice lives in Paris and works at Acme; she recently flew to Rome.")
    out = summarize(store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW, llm=chat)
    assert out.origin == "llm"
    assert out.summary == "Alice lives in Paris and works at Acme; she recently flew to Rome."
    assert out.sources == ["mem_f2", "mem_f1", "mem_e1", "mem_e2"]
    assert "- Alice works at Acme" in chat.calls[0][1] and chat.calls[0][2] == 256
    long = summarize(
        store,
        org_id=ORG,
        entity_id="ent:alice",
        namespace="default",
        now=NOW,
        llm=FakeChat("blah " * 500),
        max_tokens=20,
    )
    assert long.origin == "llm" and long.token_count <= 20


@pytest.mark.parametrize("answer", [Unavailable("down"), RuntimeError("boom"), "   "])
def test_llm_failure_falls_back_to_extractive(store: Store, answer: str | Exception) -> None:
    out = summarize(
        store, org_id=ORG, entity_id="ent:alice", namespace="default", now=NOW, llm=FakeChat(answer)
    )
    assert out.origin == "extractive"
    assert out.sources == ["mem_f2", "mem_f1", "mem_e1", "mem_e2"]


def test_no_llm_call_when_there_is_nothing_to_summarize(store: Store) -> None:
    chat = FakeChat("invented")
    out = summarize(store, org_id=ORG, entity_id="ent:nobody", namespace="default", now=NOW, llm=chat)
    assert out.origin == "extractive" and chat.calls == []


def test_openai_chat_client_over_a_mock_transport() -> None:
    seen: dict[str, Any] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["url"] = str(request.url)
        seen["auth"] = request.headers.get("authorization")
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": "ok"}}]})

    chat = OpenAIChat("http://llm.local/v1/", "tiny", "k123", transport=httpx.MockTransport(handler))
    assert chat.complete("sys", "usr", max_tokens=50) == "ok"
    assert seen["url"] == "http://llm.local/v1/chat/completions"
    assert seen["auth"] == "Bearer k123"
    assert seen["body"]["model"] == "tiny" and seen["body"]["max_tokens"] == 50
    assert [m["role"] for m in seen["body"]["messages"]] == ["system", "user"]


def test_openai_chat_client_errors_are_unavailable() -> None:
    bad = OpenAIChat(
        "http://llm.local/v1", "tiny", transport=httpx.MockTransport(lambda r: httpx.Response(500))
    )
    with pytest.raises(Unavailable):
        bad.complete("s", "u", max_tokens=5)
    odd = OpenAIChat(
        "http://llm.local/v1",
        "tiny",
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json={"choices": []})),
    )
    with pytest.raises(Unavailable):
        odd.complete("s", "u", max_tokens=5)


def test_openai_chat_from_env() -> None:
    assert OpenAIChat.from_env({}) is None
    assert OpenAIChat.from_env({"LOCI_LLM_URL": "http://x/v1"}) is None
    chat = OpenAIChat.from_env({"LOCI_LLM_URL": "http://x/v1", "LOCI_LLM_MODEL": "m", "LOCI_LLM_API_KEY": ""})
    assert chat is not None and chat.api_key is None and chat.url == "http://x/v1/chat/completions"
