"""The Extractor protocol and the records it returns.

An extractor turns one turn of text into entities and fact drafts. A `FactDraft` is what was said
(subject, predicate, object, unit, negation, confidence); `engine.write.ingest` turns drafts into stored
`Memory` records and applies supersession. Extractors never touch a store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

import msgspec

from engine.models import Entity

DraftObjectType = Literal["string", "number", "date", "entity"]
DraftSensitivity = Literal["none", "pii"]


class FactDraft(msgspec.Struct, frozen=True, kw_only=True):
    """One extracted fact, before it becomes a Memory.

    - `object` is the value: an `ent:<slug>` id when `object_type` is "entity", an ISO date string
      for "date", an int/float for "number" (with `unit`), else a string.
    - `object_name` is the readable form of the object ("Berlin" for ent:berlin, "$800" for 800 USD).
    - `negated` marks a statement that a fact no longer holds ("I no longer work at Acme"):
      supersession ends the matching active fact and stores nothing new. A negation whose `object` is
      None names no value ("I don't work there anymore", "I quit my job"): it ends the key's values.
    - `event_date` is a date the sentence itself states ("last month", "in 2019"), ISO; the stored
      fact's valid_from stays the turn's timestamp (see engine.write.ingest).
    """

    subject: str
    predicate: str
    object: str | int | float | None
    object_type: DraftObjectType
    object_name: str
    unit: str | None = None
    negated: bool = False
    confidence: float = 0.8
    text: str
    sensitivity: DraftSensitivity = "none"
    subject_name: str = "User"
    event_date: str | None = None
    source_text: str | None = None


class ExtractResult(msgspec.Struct, kw_only=True):
    entities: list[Entity] = msgspec.field(default_factory=list)
    facts: list[FactDraft] = msgspec.field(default_factory=list)
    #: the configured extractor failed and a fallback ran (the LLM reply was unusable)
    degraded: bool = False
    #: tokens the LLM reported in `usage` (0 for the rule extractor)
    llm_tokens: int = 0
    extractor: str = "rules"
    #: extraction stopped at its time budget: facts of the text's later sentences are missing
    truncated: bool = False


@runtime_checkable
class Extractor(Protocol):
    name: str

    def extract(
        self,
        text: str,
        *,
        subject: str = "ent:user",
        reference_time: datetime | None = None,
        subject_name: str = "User",
    ) -> ExtractResult:
        """Entities and facts stated in `text`. First-person statements are about `subject`, and their
        texts name it `subject_name` ("User", or a named speaker: "Melanie is 40 years old");
        relative dates ("last month") resolve against `reference_time` (default: now, UTC)."""
        ...
