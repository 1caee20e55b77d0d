"""`summarize`: a short summary of what Loci knows about one entity (POST /v0/summarize).

Extractive (default, no model):

    Facts:
    - <fact or profile text> (since 2024-03-01)
    Recent events:
    - 2024-05-01: <event text>

- Facts are the entity's current facts and profiles: status `active`, not archived, valid at `now`
  (`(valid_from or timestamp) <= now` and `valid_to` null or `> now`), newest first.
- Events are its non-archived events with `timestamp <= now`, newest first (at most `MAX_EVENTS`).
- Each line is its memory's text on one line, cut to `MAX_LINE_CHARS`.
- Budget: `token_count`, the summary's count in the request's tokenizer (assemble's
  `budget.tokenizer`: o200k_base by default), is `<= max_tokens`. Facts may take up to `FACT_SHARE` of
  the budget first, then events, then any budget left goes to further facts; a line that does not fit
  is left out whole. Then, when at least `MIN_CUT_TOKENS` are left, the first line left out is cut to
  them (an ellipsis marks the cut), so one long line (a turn in a script the tokenizer spends a
  token per character on) does not leave the summary empty. `sources` lists the memories whose lines
  made it, in order.
- The entity is matched by the memories' `entity_id`; with an agent (`X-Service-Agent`), only that
  agent's memories, as its assemble reads them.

Abstractive (optional): a `ChatModel` (e.g. `OpenAIChat.from_env()`, any OpenAI-compatible
`/chat/completions` endpoint at LOCI_LLM_URL with LOCI_LLM_MODEL and LOCI_LLM_API_KEY) rewrites the
extractive lines as a paragraph; its answer is cut to the budget, `origin` is "llm" and `sources` are
the memories it was shown. On any model failure (or an empty answer) the extractive summary is
returned. The model only ever sees the (already redacted) extractive lines.

Redaction: pass the response's `Redactor`; each line is redacted under its memory's sensitivity
before the budget is applied, so placeholders are counted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import httpx
import msgspec

from engine.errors import Unavailable
from engine.memory_service import check_ids
from engine.models import Memory
from engine.redact import Redactor
from engine.retrieval import tokens
from engine.retrieval.render import disputed_mark
from engine.retrieval.tokens import Tokenizer
from engine.storage.base import ListQuery, Store, page_through
from engine.timeutil import to_utc

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.summarize import (  # isort: skip
    Origin as Origin,
)

log = logging.getLogger(__name__)

FACT_TYPES: tuple[str, ...] = ("fact", "profile")
MAX_FACTS = 40  # current facts considered (newest first)
MAX_EVENTS = 10
MAX_LINE_CHARS = 300
FACT_SHARE = 0.65
PAGE_SIZE = 200
MIN_CUT_TOKENS = 16  # fewer left: no line is cut to fit
FACTS_HEADER = "Facts:"
EVENTS_HEADER = "Recent events:"


class SummaryResult(msgspec.Struct, frozen=True, kw_only=True):
    summary: str
    sources: list[str]  # memory ids
    origin: Origin
    token_count: int


class ChatModel(Protocol):
    """A chat model that answers one system + user prompt with plain text."""

    def complete(self, system: str, user: str, *, max_tokens: int) -> str: ...


class SummaryLine(msgspec.Struct, frozen=True):
    memory_id: str
    text: str


# --- reading ---------------------------------------------------------------------------------------


def current_facts(
    store: Store,
    *,
    org_id: str,
    entity_id: str,
    namespace: str,
    now: datetime,
    agent_id: str | None = None,
    limit: int = MAX_FACTS,
) -> list[Memory]:
    """The entity's facts and profiles true at `now`, newest first."""
    query = ListQuery(
        namespace=namespace,
        entity_id=entity_id,
        agent_id=agent_id,
        types=FACT_TYPES,
        statuses=("active", "disputed"),
        archived=False,
        limit=PAGE_SIZE,
    )
    found: list[Memory] = []
    for m in page_through(store, org_id, query):
        if _valid_at(m, now):
            found.append(m)
            if len(found) >= limit:
                break
    return found


def recent_events(
    store: Store,
    *,
    org_id: str,
    entity_id: str,
    namespace: str,
    now: datetime,
    agent_id: str | None = None,
    limit: int = MAX_EVENTS,
) -> list[Memory]:
    """The entity's events up to `now`, newest first."""
    query = ListQuery(
        namespace=namespace,
        entity_id=entity_id,
        agent_id=agent_id,
        types=("event",),
        archived=False,
        limit=PAGE_SIZE,
    )
    found: list[Memory] = []
    for m in page_through(store, org_id, query):
        if to_utc(m.timestamp) <= now:
            found.append(m)
            if len(found) >= limit:
                break
    return found


def _valid_at(m: Memory, now: datetime) -> bool:
    start = to_utc(m.holds_from)
    return start <= now and (m.valid_to is None or to_utc(m.valid_to) > now)


# --- rendering -------------------------------------------------------------------------------------
def _one_line(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_LINE_CHARS:
        return text
    cut = text[:MAX_LINE_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > MAX_LINE_CHARS // 2 else cut).rstrip() + tokens.ELLIPSIS


def _fact_line(m: Memory, redactor: Redactor | None) -> SummaryLine:
    text = disputed_mark(_one_line(m.text), m)  # the other value of its key is listed too
    if m.valid_from is not None:
        text += f" (since {to_utc(m.valid_from).date().isoformat()})"
    if redactor is not None:
        text = redactor.redact_memory_text(m, text)
    return SummaryLine(m.memory_id, f"- {text}")


def _event_line(m: Memory, redactor: Redactor | None) -> SummaryLine:
    text = _one_line(m.text)
    if redactor is not None:
        text = redactor.redact_memory_text(m, text)
    return SummaryLine(m.memory_id, f"- {to_utc(m.timestamp).date().isoformat()}: {text}")


def _compose(facts: Sequence[SummaryLine], events: Sequence[SummaryLine]) -> str:
    parts: list[str] = []
    if facts:
        parts.append(FACTS_HEADER)
        parts.extend(line.text for line in facts)
    if events:
        parts.append(EVENTS_HEADER)
        parts.extend(line.text for line in events)
    return "\n".join(parts)


def fit_lines(
    facts: Sequence[SummaryLine],
    events: Sequence[SummaryLine],
    max_tokens: int,
    tokenizer: Tokenizer = tokens.ESTIMATE,
) -> tuple[str, list[str]]:
    """Choose lines so that `tokenizer.count(summary) <= max_tokens` (see the module docstring)."""
    kept_facts: list[SummaryLine] = []
    kept_events: list[SummaryLine] = []

    def fits(f: list[SummaryLine], e: list[SummaryLine], limit: float) -> bool:
        return tokenizer.count(_compose(f, e)) <= limit

    rest = list(facts)
    while rest and fits(
        kept_facts + rest[:1], kept_events, max_tokens * FACT_SHARE if events else max_tokens
    ):
        kept_facts.append(rest.pop(0))
    for line in events:
        if fits(kept_facts, kept_events + [line], max_tokens):
            kept_events.append(line)
    for line in rest:
        if fits(kept_facts + [line], kept_events, max_tokens):
            kept_facts.append(line)
    kept_facts, kept_events = _cut_one_in(facts, events, kept_facts, kept_events, max_tokens, tokenizer)
    summary = _compose(kept_facts, kept_events)
    return summary, [line.memory_id for line in kept_facts + kept_events]


def _cut_one_in(
    facts: Sequence[SummaryLine],
    events: Sequence[SummaryLine],
    kept_facts: list[SummaryLine],
    kept_events: list[SummaryLine],
    max_tokens: int,
    tokenizer: Tokenizer,
) -> tuple[list[SummaryLine], list[SummaryLine]]:
    """The kept lines with the first line left out (facts before events) cut to the tokens left, in its
    place, when at least `MIN_CUT_TOKENS` of its text fit; else the kept lines as they are."""
    kept = {line.memory_id for line in [*kept_facts, *kept_events]}
    for section, lines in ((0, facts), (1, events)):
        dropped = next((line for line in lines if line.memory_id not in kept), None)
        if dropped is None:
            continue
        order = {line.memory_id: i for i, line in enumerate(lines)}
        chosen = kept_facts if section == 0 else kept_events
        left = max_tokens - tokenizer.count(_compose(kept_facts, kept_events))
        while left >= MIN_CUT_TOKENS:
            cut = SummaryLine(dropped.memory_id, tokenizer.truncate(dropped.text, left))
            placed = sorted([*chosen, cut], key=lambda line: order[line.memory_id])
            tried = (placed, kept_events) if section == 0 else (kept_facts, placed)
            over = tokenizer.count(_compose(*tried)) - max_tokens
            if over <= 0:
                return tried
            left -= over  # the line's newline (or its section's header) took what the cut counted on
        return kept_facts, kept_events
    return kept_facts, kept_events


# --- the entry point -------------------------------------------------------------------------------
SYSTEM_PROMPT = (
    "You summarize what a memory service knows about one person or thing for another AI agent. "
    "Write one short factual paragraph using only the facts and events given. Keep placeholders such "
    "as [EMAIL_1] exactly as written. Do not invent anything."
)


def summarize(
    store: Store,
    *,
    org_id: str,
    entity_id: str,
    namespace: str = "default",
    agent_id: str | None = None,
    max_tokens: int = 256,
    tokenizer: Tokenizer = tokens.ESTIMATE,
    now: datetime,
    llm: ChatModel | None = None,
    redactor: Redactor | None = None,
) -> SummaryResult:
    check_ids(entity_id=entity_id, namespace=namespace)
    now = to_utc(now)
    facts = current_facts(
        store, org_id=org_id, entity_id=entity_id, namespace=namespace, agent_id=agent_id, now=now
    )
    events = recent_events(
        store, org_id=org_id, entity_id=entity_id, namespace=namespace, agent_id=agent_id, now=now
    )
    fact_lines = [_fact_line(m, redactor) for m in facts]
    event_lines = [_event_line(m, redactor) for m in events]
    summary, sources = fit_lines(fact_lines, event_lines, max_tokens, tokenizer)
    extractive = SummaryResult(
        summary=summary, sources=sources, origin="extractive", token_count=tokenizer.count(summary)
    )
    if llm is None or not summary:
        return extractive
    try:
        answer = llm.complete(SYSTEM_PROMPT, f"Entity: {entity_id}\n{summary}", max_tokens=max_tokens)
    except Exception as exc:  # any model failure falls back to the extractive summary
        log.warning("summary model failed (%s); using the extractive summary", type(exc).__name__)
        return extractive
    answer = tokenizer.truncate(" ".join(answer.split()), max_tokens)
    if not answer:
        return extractive
    if redactor is not None:  # a model may echo a value seen in the entity id or prompt: scan its words
        answer = redactor.redact_text(answer, "auto")
        answer = tokenizer.truncate(answer, max_tokens)
    return SummaryResult(summary=answer, sources=sources, origin="llm", token_count=tokenizer.count(answer))


# --- an OpenAI-compatible chat client --------------------------------------------------------------
class OpenAIChat:
    """POST `<url>/chat/completions` (url like `http://localhost:11434/v1`; a url that already ends in
    `/chat/completions` is used as is). Failures raise `engine.errors.Unavailable`."""

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 20.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = (
            url if url.rstrip("/").endswith("/chat/completions") else url.rstrip("/") + "/chat/completions"
        )
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.transport = transport

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> OpenAIChat | None:
        """From LOCI_LLM_URL, LOCI_LLM_MODEL, LOCI_LLM_API_KEY; None unless URL and model are set."""
        env = dict(os.environ) if environ is None else environ
        url, model = env.get("LOCI_LLM_URL"), env.get("LOCI_LLM_MODEL")
        if not url or not model:
            return None
        return cls(url, model, env.get("LOCI_LLM_API_KEY") or None)

    def complete(self, system: str, user: str, *, max_tokens: int) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            with httpx.Client(timeout=self.timeout, transport=self.transport) as client:
                response = client.post(self.url, json=body, headers=headers)
                response.raise_for_status()
                content = response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise Unavailable(f"chat model at {self.url} failed: {type(exc).__name__}") from exc
        if not isinstance(content, str):
            raise Unavailable(f"chat model at {self.url} returned no text")
        return content
