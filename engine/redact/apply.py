"""Apply a request's policy to whole lists: the helpers assemble, recall and summarize call.

Both return fresh values with the report; nothing passed in is modified.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from engine.models import Memory, Sensitivity
from engine.redact.policy import RedactionPolicy, RedactionReport
from engine.redact.redactor import Redactor


class RedactedMemories(msgspec.Struct, frozen=True, kw_only=True):
    memories: list[Memory]
    report: RedactionReport


class RedactedTexts(msgspec.Struct, frozen=True, kw_only=True):
    texts: list[str]
    report: RedactionReport


def redact_memories(
    memories: Sequence[Memory], policy: RedactionPolicy, *, redactor: Redactor | None = None
) -> RedactedMemories:
    """Redacted copies of `memories` under `policy` (pass `redactor` to share placeholders with the rest
    of a response)."""
    r = redactor if redactor is not None else Redactor(policy)
    return RedactedMemories(memories=[r.redact_memory(m) for m in memories], report=r.report())


def redact_texts(
    items: Sequence[tuple[str, Sensitivity]], policy: RedactionPolicy, *, redactor: Redactor | None = None
) -> RedactedTexts:
    """Each text redacted under the sensitivity of the memory it came from."""
    r = redactor if redactor is not None else Redactor(policy)
    return RedactedTexts(
        texts=[r.redact_text(text, sensitivity) for text, sensitivity in items], report=r.report()
    )
