"""`llm`: fact extraction by any OpenAI-compatible chat-completions endpoint, JSON-schema output.

Settings (read at construction unless passed):
- `LOCI_LLM_URL`: base URL with or without `/v1` (POSTs to `<base>/v1/chat/completions`, or to the
  URL itself when it already ends in `/chat/completions`).
- `LOCI_LLM_MODEL` (default `gpt-4o-mini`), `LOCI_LLM_API_KEY` (Bearer), `LOCI_LLM_TIMEOUT` seconds
  (default 20).

Any failure (connection, timeout, non-2xx, a body that is not the schema) falls back to the rule
extractor and sets `degraded`; tokens the endpoint reported in `usage` are counted in `llm_tokens`
even when its content was unusable.
"""

from __future__ import annotations

import json
import os
import unicodedata
from datetime import datetime
from typing import Any, Literal

import httpx
import msgspec

from engine.envnum import env_number
from engine.extract.base import DraftObjectType, Extractor, ExtractResult, FactDraft
from engine.extract.rules import RuleExtractor
from engine.extract.rules.dates import human_date
from engine.extract.rules.entities import make_entity
from engine.extract.rules.quantities import format_quantity
from engine.extract.rules.text import entity_id
from engine.models import Entity
from engine.timeutil import to_utc, utcnow
from engine.write.predicates import PREDICATES, canonical, render, spec_for


class LLMEntity(msgspec.Struct):
    name: str
    type: str


class LLMFact(msgspec.Struct):
    subject: str
    predicate: str
    object: str | int | float
    object_type: Literal["string", "number", "date", "entity"] = "string"
    unit: str | None = None
    negated: bool = False
    confidence: float = 0.7


class LLMReply(msgspec.Struct):
    entities: list[LLMEntity] = []
    facts: list[LLMFact] = []


RESPONSE_SCHEMA: dict[str, Any] = {
    "name": "loci_extraction",
    "strict": True,
    "schema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["entities", "facts"],
        "properties": {
            "entities": {
                "type": "array",
                "items": {
                    "type": "object", "additionalProperties": False, "required": ["name", "type"],
                    "properties": {"name": {"type": "string"}, "type": {"type": "string"}},
                },
            },
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["subject", "predicate", "object", "object_type", "unit", "negated", "confidence"],
                    "properties": {
                        "subject": {"type": "string"},
                        "predicate": {"type": "string"},
                        "object": {"type": ["string", "number"]},
                        "object_type": {"type": "string", "enum": ["string", "number", "date", "entity"]},
                        "unit": {"type": ["string", "null"]},
                        "negated": {"type": "boolean"},
                        "confidence": {"type": "number"},
                    },
                },
            },
        },
    },
}  # fmt: skip

#: seconds one chat call may take
TIMEOUT_ENV = "LOCI_LLM_TIMEOUT"
_SELF = {"user", "i", "me", "myself", "ent:user", ""}


def chat_url(base: str) -> str:
    base = base.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if base.endswith("/v1"):
        return f"{base}/chat/completions"
    return f"{base}/v1/chat/completions"


def system_prompt(reference: datetime) -> str:
    preds = ", ".join(sorted(PREDICATES))
    return (
        "Extract durable facts the speaker states about themselves or named people. Subject is 'user' for "
        "the speaker, else the person's name. Use these predicates when they fit: "
        f"{preds}, favorite_<thing>. Numbers go in object with object_type 'number' and a unit (ISO "
        "currency code for money). Dates as ISO (YYYY-MM-DD), resolved against "
        f"{reference.date().isoformat()}. People, places and organizations have object_type 'entity'. "
        "Set negated=true when the speaker says a fact no longer holds. Ignore questions, hypotheticals "
        "and other people's opinions. Answer JSON only."
    )


class LLMExtractor:
    name = "llm"

    def __init__(
        self,
        *,
        url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        fallback: Extractor | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = chat_url(url or os.environ.get("LOCI_LLM_URL") or "http://127.0.0.1:11434/v1")
        self.model = model or os.environ.get("LOCI_LLM_MODEL") or "gpt-4o-mini"
        key = api_key if api_key is not None else os.environ.get("LOCI_LLM_API_KEY")
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        t = timeout if timeout is not None else env_number(os.environ, TIMEOUT_ENV, 20.0, positive=True)
        self._client = httpx.Client(timeout=t, headers=headers, transport=transport)
        self.fallback: Extractor = fallback or RuleExtractor()

    def close(self) -> None:
        self._client.close()

    def _call(self, text: str, reference: datetime) -> tuple[str, int]:
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": system_prompt(reference)},
                {"role": "user", "content": text},
            ],
            "response_format": {"type": "json_schema", "json_schema": RESPONSE_SCHEMA},
        }
        resp = self._client.post(self.url, json=body)
        tokens = 0
        try:
            payload: Any = resp.json()
            usage = payload.get("usage") or {}
            tokens = int(
                usage.get("total_tokens")
                or (usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
            )
        except (ValueError, AttributeError, TypeError):
            payload = None
        if resp.status_code // 100 != 2 or not isinstance(payload, dict):
            raise _Failed(f"status {resp.status_code}", tokens)
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise _Failed(f"no message content: {exc}", tokens) from exc
        if not isinstance(content, str):
            raise _Failed("message content is not a string", tokens)
        return content, tokens

    def extract(
        self,
        text: str,
        *,
        subject: str = "ent:user",
        reference_time: datetime | None = None,
        subject_name: str = "User",
    ) -> ExtractResult:
        if reference_time is None:
            reference = utcnow()
        else:  # "today" in the prompt is the speaker's day; a naive time is UTC
            reference = reference_time if reference_time.tzinfo is not None else to_utc(reference_time)
        tokens = 0
        text = unicodedata.normalize("NFC", text)  # values as composed text, as the rules read them
        try:
            content, tokens = self._call(text, reference)
            reply = msgspec.json.decode(_strip_fences(content), type=LLMReply)
            return self._convert(reply, subject, subject_name, tokens, text)
        except (_Failed, httpx.HTTPError, msgspec.ValidationError, msgspec.DecodeError, ValueError) as exc:
            if isinstance(exc, _Failed):
                tokens = exc.tokens
            result = self.fallback.extract(
                text, subject=subject, reference_time=reference, subject_name=subject_name
            )
            return msgspec.structs.replace(
                result, degraded=True, llm_tokens=tokens, extractor=f"{self.name}->rules"
            )

    def _convert(self, reply: LLMReply, user: str, user_name: str, tokens: int, text: str) -> ExtractResult:
        entities: dict[str, Entity] = {}
        for e in reply.entities:
            if e.name.strip():
                ent = make_entity(e.name.strip(), e.type.strip().lower() or "other", 0.7)
                entities.setdefault(ent.entity_id, ent)
        facts: list[FactDraft] = []
        for f in reply.facts:
            predicate = canonical(f.predicate)
            if not predicate or (isinstance(f.object, str) and not f.object.strip()):
                raise ValueError(f"empty predicate or object in {f!r}")
            is_self = f.subject.strip().lower() in _SELF
            subject = user if is_self else entity_id(f.subject)
            subject_name = user_name if is_self else f.subject.strip()
            value, otype, name = _value(f)
            spec = spec_for(predicate)
            facts.append(
                FactDraft(
                    subject=subject,
                    predicate=predicate,
                    object=value,
                    object_type=otype,
                    object_name=name,
                    unit=f.unit or None,
                    negated=f.negated,
                    confidence=min(max(f.confidence, 0.0), 1.0),
                    text=render(subject_name, predicate, name, negated=f.negated),
                    sensitivity="pii" if spec.pii else "none",
                    subject_name=subject_name,
                    source_text=text[:500],
                )  # fmt: skip
            )
        return ExtractResult(
            entities=list(entities.values()), facts=facts, llm_tokens=tokens, extractor=self.name
        )


def _value(f: LLMFact) -> tuple[str | int | float, DraftObjectType, str]:
    if f.object_type == "number":
        num = f.object if isinstance(f.object, int | float) else float(str(f.object).replace(",", ""))
        if isinstance(num, float) and num.is_integer():
            num = int(num)
        return num, "number", format_quantity(num, f.unit)
    obj = str(f.object).strip()
    if f.object_type == "entity":
        return entity_id(obj.removeprefix("ent:")), "entity", obj.removeprefix("ent:")
    if f.object_type == "date":
        return obj, "date", human_date(obj)
    return obj, "string", obj


def _strip_fences(content: str) -> str:
    s = content.strip()
    if s.startswith("```"):
        s = s.strip("`")
        s = s[4:] if s.lower().startswith("json") else s
    json.loads(s)  # raises ValueError early with a clear message
    return s


class _Failed(Exception):
    def __init__(self, message: str, tokens: int) -> None:
        super().__init__(message)
        self.tokens = tokens
