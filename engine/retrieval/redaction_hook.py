"""The seam for PII redaction (implemented in `engine.redact` by another module).

The pipeline asks a `RedactorFactory` for one `Redactor` per request (so placeholders like `[EMAIL_1]`
are numbered consistently across the whole context) and passes every text through it *before* the
budget is applied, so a placeholder longer than the value it replaces can never overflow the budget.
`memory` is None for seed snippets; a redactor leaves memories with `sensitivity == "none"` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from engine.models import Memory
from engine.retrieval.options import Policy
from engine.retrieval.responses import Redaction


class Redactor(Protocol):
    def redact(self, text: str, memory: Memory | None) -> str: ...

    def redact_memory(self, memory: Memory) -> Memory:
        """A redacted copy of a whole record (for `raw_memories`); the stored one is never changed."""
        ...

    def result(self) -> Redaction: ...


RedactorFactory = Callable[[Policy], Redactor]


class NoRedaction:
    """Returns texts unchanged and reports `{applied: false, rules: []}`."""

    def redact(self, text: str, memory: Memory | None) -> str:
        return text

    def redact_memory(self, memory: Memory) -> Memory:
        return memory

    def result(self) -> Redaction:
        return Redaction(applied=False, rules=[])


def no_redaction(policy: Policy) -> Redactor:
    return NoRedaction()
