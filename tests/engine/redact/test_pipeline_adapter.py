"""The adapter satisfies the read pipeline's redaction seam."""

from __future__ import annotations

from datetime import UTC, datetime

from msgspec import UNSET

from engine.redact.pipeline_adapter import redactor_factory
from engine.retrieval.options import Policy
from engine.retrieval.redaction_hook import RedactorFactory
from tests.factories import memory

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def test_adapter_redacts_by_memory_sensitivity_and_reports() -> None:
    factory: RedactorFactory = redactor_factory
    r = factory(Policy(egress_rehydration="allowed"))
    secret = memory(
        memory_id="m1", org_id="o", type="fact", text="x", at=T0, sensitivity="pii", object="Paris"
    )
    plain = memory(memory_id="m2", org_id="o", type="note", text="x", at=T0, sensitivity="none")
    assert r.redact("- lives in Paris", secret) == "- lives in [PII_1]"
    assert r.redact("mail a@x.com", plain) == "mail a@x.com"
    assert r.redact("seed a@x.com", None) == "seed [EMAIL_1]"
    result = r.result()
    assert (result.applied, result.rules) == (True, ["email", "pii"])
    assert result.placeholders == {"[PII_1]": "Paris", "[EMAIL_1]": "a@x.com"}
    assert factory(Policy()).result().placeholders is UNSET
