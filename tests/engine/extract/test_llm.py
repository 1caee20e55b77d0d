"""The LLM extractor against a local fake OpenAI-compatible server (threaded http.server on
127.0.0.1): good JSON, bad JSON, HTTP 500, a timeout, and the request it sends."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from engine.extract import create_extractor
from engine.extract.llm import LLMExtractor, chat_url

REF = datetime(2026, 11, 22, tzinfo=UTC)

GOOD = {
    "entities": [{"name": "Berlin", "type": "place"}, {"name": "Acme", "type": "organization"}],
    "facts": [
        {"subject": "user", "predicate": "moved_to", "object": "Berlin", "object_type": "entity",
         "unit": None, "negated": False, "confidence": 0.9},
        {"subject": "user", "predicate": "budget", "object": 800, "object_type": "number",
         "unit": "USD", "negated": False, "confidence": 0.8},
        {"subject": "I", "predicate": "works_at", "object": "Acme", "object_type": "entity",
         "unit": None, "negated": True, "confidence": 0.85},
        {"subject": "Anna", "predicate": "email", "object": "anna@example.com", "object_type": "string",
         "unit": None, "negated": False, "confidence": 0.9},
    ],
}  # fmt: skip


class FakeLLM:
    """Answers according to `mode`: good | bad_json | http500 | slow | no_choices."""

    def __init__(self) -> None:
        self.mode = "good"
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                fake.requests.append(json.loads(self.rfile.read(length)))
                fake.headers.append(dict(self.headers))
                usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
                if fake.mode == "http500":
                    self._send(500, {"error": {"message": "boom"}, "usage": usage})
                    return
                if fake.mode == "slow":
                    time.sleep(1.0)
                content = json.dumps(GOOD) if fake.mode in ("good", "slow") else '{"facts": [ {"subject": '
                body: dict[str, Any] = {
                    "choices": [{"message": {"role": "assistant", "content": content}}],
                    "usage": usage,
                }
                if fake.mode == "no_choices":
                    body = {"usage": usage}
                if fake.mode == "wrong_shape":
                    body["choices"][0]["message"]["content"] = json.dumps({"facts": [{"subject": "user"}]})
                self._send(200, body)

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    server = FakeLLM()
    yield server
    server.close()


def make(fake: FakeLLM, timeout: float = 5.0) -> LLMExtractor:
    return LLMExtractor(url=fake.url, model="fake-model", api_key="sk-test", timeout=timeout)


def test_good_reply_becomes_drafts(fake: FakeLLM) -> None:
    result = make(fake).extract("I moved to Berlin, my budget is $800, I left Acme.", reference_time=REF)
    assert not result.degraded
    assert result.llm_tokens == 150
    assert result.extractor == "llm"
    got = [(f.subject, f.predicate, f.object, f.object_type, f.unit, f.negated) for f in result.facts]
    assert got == [
        ("ent:user", "lives_in", "ent:berlin", "entity", None, False),  # alias moved_to -> lives_in
        ("ent:user", "budget", 800, "number", "USD", False),
        ("ent:user", "works_at", "ent:acme", "entity", None, True),
        ("ent:anna", "email", "anna@example.com", "string", None, False),
    ]
    assert result.facts[0].text == "User lives in Berlin"
    assert result.facts[3].sensitivity == "pii"
    assert {e.entity_id for e in result.entities} == {"ent:berlin", "ent:acme"}


def test_a_named_speakers_facts_read_with_their_name(fake: FakeLLM) -> None:
    result = make(fake).extract("...", subject="ent:melanie", subject_name="Melanie", reference_time=REF)
    assert [f.text for f in result.facts][::3] == [
        "Melanie lives in Berlin",
        "Anna's email is anna@example.com",
    ]
    fake.mode = "bad_json"  # the rule fallback names the speaker too
    fallback = make(fake).extract("I live in Oslo.", subject="ent:melanie", subject_name="Melanie")
    assert [f.text for f in fallback.facts] == ["Melanie lives in Oslo"]


def test_request_speaks_the_protocol(fake: FakeLLM) -> None:
    make(fake).extract("I live in Berlin.", reference_time=REF)
    (body,) = fake.requests
    assert body["model"] == "fake-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["entities", "facts"]
    assert body["messages"][-1] == {"role": "user", "content": "I live in Berlin."}
    assert "2026-11-22" in body["messages"][0]["content"]
    assert fake.headers[0].get("Authorization") == "Bearer sk-test"


def test_the_model_reads_decomposed_text_composed(fake: FakeLLM) -> None:
    """ "Jose" + U+0301 (NFD) reaches the model as "José", the form the rules read too."""
    make(fake).extract("My name is Jose\u0301.", reference_time=REF)
    assert fake.requests[0]["messages"][-1]["content"] == "My name is Jos\u00e9."


@pytest.mark.parametrize("mode", ["bad_json", "http500", "no_choices", "wrong_shape"])
def test_unusable_replies_fall_back_to_rules(fake: FakeLLM, mode: str) -> None:
    fake.mode = mode
    result = make(fake).extract("I live in Lisbon.", reference_time=REF)
    assert result.degraded
    assert result.llm_tokens == 150  # the endpoint reported usage, so the tokens were spent
    assert [(f.predicate, f.object) for f in result.facts] == [
        ("lives_in", "ent:lisbon")
    ]  # the rules' answer
    assert result.extractor == "llm->rules"


def test_timeout_falls_back_to_rules(fake: FakeLLM) -> None:
    fake.mode = "slow"
    result = make(fake, timeout=0.2).extract("I live in Lisbon.", reference_time=REF)
    assert result.degraded and result.llm_tokens == 0
    assert [(f.predicate, f.object) for f in result.facts] == [("lives_in", "ent:lisbon")]


def test_unreachable_endpoint_falls_back() -> None:
    extractor = LLMExtractor(url="http://127.0.0.1:9/v1", timeout=0.5)
    result = extractor.extract("I work at Google.", reference_time=REF)
    assert result.degraded
    assert [(f.predicate, f.object) for f in result.facts] == [("works_at", "ent:google")]


def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch, fake: FakeLLM) -> None:
    monkeypatch.setenv("LOCI_LLM_URL", fake.url)
    monkeypatch.setenv("LOCI_LLM_MODEL", "env-model")
    monkeypatch.setenv("LOCI_LLM_API_KEY", "sk-env")
    extractor = create_extractor("llm")
    assert isinstance(extractor, LLMExtractor)
    extractor.extract("I live in Berlin.", reference_time=REF)
    assert fake.requests[0]["model"] == "env-model"
    assert fake.headers[0].get("Authorization") == "Bearer sk-env"


def test_chat_url() -> None:
    assert chat_url("http://h:1/v1") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h:1") == "http://h:1/v1/chat/completions"
    assert chat_url("http://h:1/v1/chat/completions/") == "http://h:1/v1/chat/completions"
