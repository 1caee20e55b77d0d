"""The API's memory records, and the limits of their fields as constrained types: the server
validates with them and the OpenAPI document shows them."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

# --- the API's enumerations --------------------------------------------------------------------
MemoryType = Literal["fact", "event", "document", "note", "profile", "chunk"]
MEMORY_TYPES: tuple[str, ...] = ("fact", "event", "document", "note", "profile", "chunk")
Status = Literal["active", "superseded", "disputed"]
STATUSES: tuple[str, ...] = ("active", "superseded", "disputed")
Sensitivity = Literal["none", "pii", "auto"]
ObjectType = Literal["literal", "string", "number", "date", "json", "entity"]

#: a JSON-schema pattern for "not blank": some character that `str.isspace` does not call space (spelled
#: out, since JSON-schema regex engines disagree on what `\s` covers)
SPACES = "\\t\\n\\u000b\\f\\r \\u001c-\\u001f\\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
NOT_BLANK_PATTERN = f"[^{SPACES}]"

#: letters and symbols that show nothing: the Hangul fillers and the braille blank
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
#: what shows nothing on its own: controls, format marks (zero-width space, BOM, LRM), surrogates,
#: combining marks with no letter to sit on, and separators
_SHOWS_NOTHING = frozenset(("Cc", "Cf", "Cs", "Mn", "Mc", "Me", "Zs", "Zl", "Zp"))


def is_blank(text: str) -> bool:
    """The one meaning of blank for texts, turns, tags, keys and queries: nothing visible, only
    whitespace, control, format or combining characters and fillers ("", "  ", "\\u200b", "\\u0301")."""
    return all(ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in _SHOWS_NOTHING for ch in text)


def key_problem(key: str) -> str | None:
    """Why `key` cannot be a conflict key `<subject>|<predicate>`, or None. A subject or predicate may
    itself hold a `|` (the server writes `ent:a|b|likes` for subject `ent:a|b`), so a key needs some
    `|` with something visible before the first and after the last."""
    subject, bar, _ = key.partition("|")
    predicate = key.rpartition("|")[2]
    if not bar:
        return "a conflict key has the shape <subject>|<predicate>: it has no '|'"
    if is_blank(subject) or is_blank(predicate):
        return "a conflict key has the shape <subject>|<predicate>: its subject or predicate is blank"
    return None


# --- the API's limits as constrained types ------------------------------------------------------
#: a memory id the API can address: one path segment of /v0/memories/{memory_id}, as long as the
#: routes and the event filter take (the server makes `mem_<ULID>`; an import brings ids from a file)
MemoryId = Annotated[str, Meta(min_length=1, max_length=128, pattern="^[^/]+$")]
_NOT_BLANK_SCHEMA = {"pattern": NOT_BLANK_PATTERN}


def _not_blank(max_length: int, description: str | None = None) -> Meta:
    """1 to `max_length` characters, not blank: the schema shows the rule, the engine checks it
    (`engine.models.is_blank`)."""
    return Meta(
        min_length=1,
        max_length=max_length,
        description=description or f"max {max_length} characters, not blank",
        extra_json_schema=_NOT_BLANK_SCHEMA,
    )


#: ids are opaque ("!!!" is one) but not blank (`engine.memory_service.check_ids` refuses one)
Namespace = Annotated[str, _not_blank(64)]
AgentId = Annotated[str, _not_blank(128)]
EntityId = Annotated[str, _not_blank(256, "not blank")]
SubjectId = Annotated[
    str,
    Meta(
        max_length=256, pattern=f"^ent:[^{SPACES}]+$(?!\\n)", description="an entity id of the form ent:<id>"
    ),
]
#: the longest text the API takes: a memory's text, a query, a turn
MAX_TEXT_LENGTH = 20000
MemoryText = Annotated[str, Meta(max_length=MAX_TEXT_LENGTH, description=f"max {MAX_TEXT_LENGTH} characters")]
#: the JSON-schema shape of a conflict key (`key_problem` is the rule; it also calls blank the invisible
#: characters `is_blank` names)
KEY_PATTERN = f"^[^|]*[^|{SPACES}][^|]*\\|(?:[\\s\\S]*\\|)?[^|]*[^|{SPACES}][^|]*$"
Tag = Annotated[str, _not_blank(64)]
Predicate = Annotated[str, _not_blank(128)]
ObjectString = Annotated[str, Meta(max_length=4000, description="max 4000 characters")]
Unit = Annotated[str, Meta(max_length=32, description="max 32 characters")]
ConflictKey = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=128,
        description="<subject>|<predicate>: some '|', with something visible before the first and after the last",
        extra_json_schema={"pattern": KEY_PATTERN},
    ),
]
Confidence = Annotated[float, Meta(ge=0.0, le=1.0)]
MAX_TAGS = 64
MAX_KEYS = 32
#: the tags and conflict keys a write may carry (stored memories are read back as they are)
TagList = Annotated[list[Tag], Meta(max_length=MAX_TAGS, description=f"at most {MAX_TAGS} tags")]
ConflictKeys = Annotated[list[ConflictKey], Meta(max_length=MAX_KEYS, description=f"at most {MAX_KEYS} keys")]
# `object` of a memory: string (max 4000), number, boolean, object or null. JSON keeps int vs float.
ObjectValue = ObjectString | bool | int | float | dict[str, Any] | None


class Memory(msgspec.Struct, kw_only=True):
    """A stored memory: every field of the API's Memory resource, plus `created_at`/`updated_at`."""

    memory_id: MemoryId
    org_id: str
    namespace: Namespace = "default"
    agent_id: AgentId | None = None
    entity_id: EntityId | None = None
    type: MemoryType
    text: MemoryText
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    tags: list[Tag] = msgspec.field(default_factory=list)
    timestamp: datetime
    archived: bool = False
    sensitivity: Sensitivity = "auto"
    subject: SubjectId | None = None
    predicate: Predicate | None = None
    object: ObjectValue = None
    object_type: ObjectType | None = None
    unit: Unit | None = None
    keys: list[ConflictKey] | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    confidence: Confidence | None = None
    status: Status = "active"
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)
    created_at: datetime
    updated_at: datetime

    @property
    def holds_from(self) -> datetime:
        """When the memory starts to hold: its valid_from, else its timestamp (the scope's `as_of` test,
        ages, the day it is shown under, supersession order)."""
        return self.valid_from if self.valid_from is not None else self.timestamp


class Entity(msgspec.Struct, kw_only=True):
    entity_id: str
    type: str
    name: str | None = None
    confidence: float | None = None
    attributes: dict[str, Any] = msgspec.field(default_factory=dict)
