"""Adapter from `Redactor` to the read pipeline's seam (`engine.retrieval.redaction_hook`).

    from engine.redact.pipeline_adapter import redactor_factory
    pipeline.assemble(..., redactor_factory=redactor_factory)

Texts of a memory are redacted under its sensitivity (with its object values for `pii`); texts with
no memory (seed snippets) are scanned as `auto`.
"""

from __future__ import annotations

from msgspec import UNSET

from engine.models import Memory
from engine.redact.policy import RedactionPolicy
from engine.redact.redactor import Redactor
from engine.retrieval.options import Policy
from engine.retrieval.responses import Redaction


class PipelineRedactor:
    """Satisfies `engine.retrieval.redaction_hook.Redactor`."""

    def __init__(self, policy: Policy) -> None:
        self.redactor = Redactor(
            RedactionPolicy(pii_redaction=policy.pii_redaction, egress_rehydration=policy.egress_rehydration)
        )

    def redact(self, text: str, memory: Memory | None) -> str:
        if memory is None:
            return self.redactor.redact_text(text, "auto")
        return self.redactor.redact_memory_text(memory, text)

    def redact_memory(self, memory: Memory) -> Memory:
        return self.redactor.redact_memory(memory)

    def result(self) -> Redaction:
        report = self.redactor.report()
        return Redaction(
            applied=report.applied,
            rules=report.rules,
            placeholders=report.placeholders if report.placeholders is not None else UNSET,
        )


def redactor_factory(policy: Policy) -> PipelineRedactor:
    return PipelineRedactor(policy)
