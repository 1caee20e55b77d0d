"""Redactor behaviour: placeholders, sensitivity, policy, report, no mutation."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from engine.models import Memory
from engine.redact import (
    RedactionPolicy,
    RedactionReport,
    Redactor,
    redact_memories,
    redact_texts,
)
from tests.factories import memory

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def _memory(**fields: Any) -> Memory:
    return memory(at=T0, **{"memory_id": "mem_1", "text": "", **fields})


def test_same_value_same_placeholder_and_counting_per_stem() -> None:
    r = Redactor()
    a = r.redact_text("a@x.com, b@x.com, A@X.com, 10.0.0.1, 2001:db8::1")
    b = r.redact_text("again a@x.com and 10.0.0.1")
    assert a == "[EMAIL_1], [EMAIL_2], [EMAIL_1], [IP_1], [IP_2]"  # emails compare case-insensitively
    assert b == "again [EMAIL_1] and [IP_1]"


def test_same_number_written_two_ways_shares_a_placeholder() -> None:
    r = Redactor()
    out = r.redact_text("(212) 736-5000 or +1 212 736 5000; card 4111 1111 1111 1111 = 4111-1111-1111-1111")
    assert out == "[PHONE_1] or [PHONE_1]; card [CARD_1] = [CARD_1]"
    assert r.placeholders == {"[PHONE_1]": "(212) 736-5000", "[CARD_1]": "4111 1111 1111 1111"}


def test_longest_detection_wins_an_overlap() -> None:
    r = Redactor()
    # The IBAN's digits contain an 18-digit run; the whole IBAN is the longer span.
    assert r.redact_text("DE89 3704 0044 0532 0130 00") == "[IBAN_1]"
    assert r.rules_fired == ["iban"]


def test_report_and_rehydration_map() -> None:
    allowed = Redactor(RedactionPolicy(egress_rehydration="allowed"))
    allowed.redact_text("mail a@x.com from 8.8.8.8")
    report = allowed.report()
    assert report == RedactionReport(
        applied=True, rules=["email", "ipv4"], placeholders={"[EMAIL_1]": "a@x.com", "[IP_1]": "8.8.8.8"}
    )
    none = Redactor(RedactionPolicy(egress_rehydration="none"))
    none.redact_text("mail a@x.com")
    assert none.report().placeholders is None
    assert msgspec.json.decode(msgspec.json.encode(none.report())) == {"applied": True, "rules": ["email"]}
    assert none.report(include_map=True).placeholders == {"[EMAIL_1]": "a@x.com"}


def test_nothing_found_reports_not_applied() -> None:
    r = Redactor()
    assert r.redact_text("release v2.10.3 on 2024-05-01") == "release v2.10.3 on 2024-05-01"
    assert r.report() == RedactionReport(applied=False, rules=[])


def test_policy_off_returns_everything_as_is() -> None:
    r = Redactor(RedactionPolicy(pii_redaction="off"))
    memory = _memory(text="a@x.com", sensitivity="pii", object="secret diagnosis")
    assert r.redact_text("a@x.com", "pii") == "a@x.com"
    assert r.redact_memory(memory) == memory
    assert r.report() == RedactionReport(applied=False, rules=[])


def test_sensitivity_none_is_left_alone() -> None:
    r = Redactor()
    assert r.redact_text("a@x.com", "none") == "a@x.com"
    m = _memory(text="call (212) 736-5000", sensitivity="none")
    assert r.redact_memory(m).text == "call (212) 736-5000"
    assert r.report().applied is False


def test_pii_memory_object_is_redacted_as_a_whole_when_nothing_is_detected() -> None:
    r = Redactor(RedactionPolicy(egress_rehydration="allowed"))
    m = _memory(
        type="fact",
        text="Alice has diabetes, mail alice@x.com",
        sensitivity="pii",
        subject="ent:alice",
        predicate="has_condition",
        object="diabetes",
        object_type="string",
    )
    out = r.redact_memory(m)
    assert out.text == "Alice has [PII_1], mail [EMAIL_1]"
    assert out.object == "[PII_1]"
    assert r.redact_memory_text(m, "- Alice has_condition diabetes") == "- Alice has_condition [PII_1]"
    assert r.report().rules == ["email", "pii"]
    assert r.report().placeholders == {"[PII_1]": "diabetes", "[EMAIL_1]": "alice@x.com"}


def test_pii_object_with_a_detection_keeps_the_rest() -> None:
    r = Redactor()
    m = _memory(type="fact", text="Bob's email is bob@x.com", sensitivity="pii", object="bob@x.com")
    out = r.redact_memory(m)
    assert (out.text, out.object) == ("Bob's email is [EMAIL_1]", "[EMAIL_1]")
    assert r.rules_fired == ["email"]


def test_pii_numbers_and_dicts() -> None:
    r = Redactor()
    m = _memory(type="fact", text="Carol is 42 years old", sensitivity="pii", object=42, object_type="number")
    out = r.redact_memory(m)
    assert (out.text, out.object) == ("Carol is [PII_1] years old", "[PII_1]")
    d = _memory(text="blood work", sensitivity="pii", object={"hb": 13.5, "ok": True, "lab": "lab@x.com"})
    out_d = r.redact_memory(d)
    assert out_d.text == "[PII_2]"  # nothing detected and no object value in it: hidden whole
    assert out_d.object == {"hb": "[PII_3]", "ok": "[PII_4]", "lab": "[EMAIL_1]"}


def test_pii_text_with_nothing_detected_is_hidden_whole() -> None:
    r = Redactor()
    assert r.redact_text("she is seeing a therapist", "pii") == "[PII_1]"
    # an `auto` text is scanned by the rules only...
    assert Redactor().redact_text("she is seeing a therapist", "auto") == "she is seeing a therapist"
    # ...but a value already hidden in this response stays hidden wherever it appears again
    assert r.redact_text("she is seeing a therapist", "auto") == "[PII_1]"
    assert r.redact_text("   ", "pii") == "   "


def test_auto_memory_is_scanned_and_metadata_too_but_not_ids() -> None:
    r = Redactor()
    m = _memory(
        text="ping 10.0.0.1",
        metadata={"from": "ops@x.com", "n": [1, "8.8.8.8"]},
        tags=["infra"],
        provenance={"source_turn": "mem_0", "source_text": "ask ops@x.com"},
        object=4155550132,
    )
    out = r.redact_memory(m)
    assert out.text == "ping [IP_1]"
    assert out.metadata == {"from": "[EMAIL_1]", "n": [1, "[IP_2]"]}
    assert out.object == 4155550132  # numbers are not scanned under auto
    assert (out.memory_id, out.tags) == ("mem_1", ["infra"])
    assert out.provenance == {"source_turn": "mem_0", "source_text": "ask [EMAIL_1]"}  # the sentence said it


def test_input_memories_are_never_modified() -> None:
    m = _memory(
        type="fact",
        text="Dana: dana@x.com, (212) 736-5000",
        sensitivity="pii",
        object={"email": "dana@x.com", "note": "private"},
        metadata={"ip": "10.0.0.1"},
    )
    before = copy.deepcopy(msgspec.to_builtins(m))
    result = redact_memories([m], RedactionPolicy())
    assert msgspec.to_builtins(m) == before
    assert result.memories[0] is not m
    assert result.memories[0].text == "Dana: [EMAIL_1], [PHONE_1]"
    assert result.report.applied


def test_redact_texts_with_sensitivities() -> None:
    out = redact_texts(
        [("a@x.com", "auto"), ("a@x.com", "none"), ("nothing here", "pii")],
        RedactionPolicy(egress_rehydration="allowed"),
    )
    assert out.texts == ["[EMAIL_1]", "a@x.com", "[PII_1]"]
    assert out.report.placeholders == {"[EMAIL_1]": "a@x.com", "[PII_1]": "nothing here"}


def test_a_shared_redactor_keeps_numbering_across_calls() -> None:
    r = Redactor()
    redact_texts([("a@x.com", "auto")], RedactionPolicy(), redactor=r)
    out = redact_texts([("b@x.com a@x.com", "auto")], RedactionPolicy(), redactor=r)
    assert out.texts == ["[EMAIL_2] [EMAIL_1]"]


@pytest.mark.parametrize("rule", ["email", "phone", "card", "iban", "us_ssn", "ipv4", "ipv6", "secret"])
def test_each_rule_alone_only_fires_itself(rule: str) -> None:
    text = (
        "a@x.com; (212) 736-5000; 4111 1111 1111 1111; GB82WEST12345698765432; 123-45-6789; "
        "8.8.8.8; 2001:db8::1; AKIAIOSFODNN7EXAMPLE"
    )
    r = Redactor(rules=[rule])
    out = r.redact_text(text)
    assert r.rules_fired == [rule]
    assert out.count("[") == 1


def test_detections_are_shared_across_redactors_and_equal_to_a_fresh_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every Redactor of one rule configuration shares one detection cache: a text's rules run once,
    and what comes back is what scanning it again gives (a copy: callers may change their list)."""
    from engine.redact import redactor as mod
    from engine.redact.base import Detection
    from engine.redact.rules.email import EmailRule
    from engine.redact.rules.phone import DEFAULT_REGIONS

    text = "write to ana.cached@example.com or call +1 212 736 5000, card 4111 1111 1111 1111"
    calls: list[str] = []
    original = EmailRule.detect

    def counted(self: EmailRule, t: str) -> list[Detection]:
        calls.append(t)
        return original(self, t)

    monkeypatch.setattr(EmailRule, "detect", counted)
    first = Redactor().detect(text)
    first.clear()
    second = Redactor().detect(text)
    assert calls == [text]
    assert second == list(mod._detector(None, DEFAULT_REGIONS).compute(text))
    assert {d.rule for d in second} == {"email", "phone", "card"}
    assert [r.name for r in mod._detector(["email"], DEFAULT_REGIONS).rules] == ["email"]
    long = "x" * (mod.DETECT_CACHE_MAX_CHARS + 1) + " ana.cached@example.com"
    Redactor().detect(long)
    Redactor().detect(long)
    assert calls.count(long) == 2  # long texts are scanned every time, not kept
