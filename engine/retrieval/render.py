"""Rendering: a ranked candidate becomes one self-contained line in one section of the context.

- facts: fact and profile memories, `"<text> (valid <from> to <to>)"` with the validity dates when
  known (dates as YYYY-MM-DD). Only what the scope let through: active facts valid now, or with `as_of`
  the facts valid then, as known then (an end after `as_of` is not shown: "since <from>"). A value
  tied with another of its key (`disputed`) says so: `"<text> (disputed) ..."`.
- recent_events: event memories grouped by day: a header line `"<YYYY-MM-DD> (<weekday>):"` and then
  that day's events, one `<text>` per line in time order; days newest first. One date per day instead
  of one per line leaves the budget to the events themselves (the speaker stays in each event's text).
- sources: notes, documents, chunks and seed snippets, `"[<memory_id>] <text>"` (snippets get the
  pseudo id `snippet:<n>`), best first.
- facts are listed best first, limited by return.max_facts; events by return.max_events (the best
  ones by score are kept, then shown newest first). Each line is capped (`MAX_LINE_TOKENS` /
  `MAX_SOURCE_TOKENS`) so one long memory cannot eat the budget; the cap is a `truncate` action. A
  memory lifted by one of its passages (`engine.retrieval.channels.passage_lift`) whose text would be
  cut there shows its start and that passage instead (`snippet`): the sentence that matched may lie
  past the cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from functools import partial

import msgspec

from engine.models import Memory
from engine.retrieval.redaction_hook import Redactor
from engine.retrieval.responses import BudgetAction, FactStruct
from engine.retrieval.tokens import ELLIPSIS, ESTIMATE, Tokenizer

MAX_LINE_TOKENS = 160
#: a memory too long for its line, shown by the passage that matched, keeps this much of its start (`snippet`)
LEAD_TOKENS = 24
MAX_SOURCE_TOKENS = 400
#: candidates without a line kept for the summary: more than any budget's room holds
MAX_OVERFLOW = 120
SECTION_OF_TYPE: Mapping[str, str] = {
    "fact": "facts",
    "profile": "facts",
    "event": "recent_events",
    "note": "sources",
    "document": "sources",
    "chunk": "sources",
}


class RenderItem(msgspec.Struct, kw_only=True):
    id: str
    section: str  # facts | recent_events | sources
    plain: str  # the (redacted) text alone, for the summary
    line: str  # the rendered line
    rank: int  # position in the final ranking (0 = best)
    score: float
    pinned: bool = False
    when: int = 0  # `Memory.holds_from`, epoch micros (events are shown newest first)
    group: str = ""  # events: their day (YYYY-MM-DD), shown once as a header line


def _day(value: datetime | None) -> str | None:
    return value.date().isoformat() if value is not None else None


def memory_day(memory: Memory) -> str:
    """The day a memory belongs to (`Memory.holds_from`), YYYY-MM-DD."""
    return memory.holds_from.date().isoformat()


def day_header(day: str) -> str:
    """The header line of one day of events, e.g. `2023-05-08 (Monday):`."""
    try:
        weekday = date.fromisoformat(day).strftime("%A")
    except ValueError:
        return f"{day}:"
    return f"{day} ({weekday}):"


def disputed_mark(text: str, memory: Memory) -> str:
    """`text`, marked when another value of its key ties with it (the reader sees both values)."""
    return f"{text} (disputed)" if memory.status == "disputed" else text


def format_line(section: str, item_id: str, text: str, memory: Memory | None) -> str:
    text = " ".join(text.split())
    if section == "facts" and memory is not None:
        text = disputed_mark(text, memory)
        start, end = _day(memory.valid_from), _day(memory.valid_to)
        if start and end:
            return f"{text} (valid {start} to {end})"
        if start:
            return f"{text} (since {start})"
        if end:
            return f"{text} (until {end})"
        return text
    if section == "recent_events" and memory is not None:
        return text  # dated by its day's header line
    return f"[{item_id}] {text}"


def summary_text(section: str, text: str, memory: Memory | None) -> str:
    """A memory as the summary shows it, after its day: a fact keeps what its line would say beside its
    start (that it is disputed, when it ends)."""
    if section != "facts" or memory is None:
        return text
    text = disputed_mark(text, memory)
    end = _day(memory.valid_to)
    return f"{text} (until {end})" if end else text


def snippet(text: str, passage: str, tok: Tokenizer) -> str:
    """A long text whose `passage` matched the question, as its line shows it: its start (`LEAD_TOKENS`:
    who speaks and about what) and that passage, the cuts marked with an ellipsis; the text as it is
    when the passage lies within the start (the line's cap still applies)."""
    at = text.find(passage)
    if at < 0 or tok.count(text[:at]) <= LEAD_TOKENS:
        return text
    tail = f" {ELLIPSIS}" if text[at + len(passage) :].strip() else ""
    return f"{tok.truncate(text[:at], LEAD_TOKENS)} {passage}{tail}"


def _snippet(memory: Memory, passage: str, redactor: Redactor, tok: Tokenizer) -> str:
    # redacted before it is cut: half a card number or address is no longer one the detectors know
    return snippet(redactor.redact(memory.text, memory), redactor.redact(passage, memory), tok)


def _item(
    mid: str,
    rank: int,
    section: str,
    memory: Memory | None,
    plain: str,
    score: float,
    pinned: bool,
    tok: Tokenizer,
    shown: Callable[[], str] | None = None,
) -> tuple[RenderItem, BudgetAction | None]:
    """One candidate as a RenderItem, its line capped (`MAX_LINE_TOKENS` / `MAX_SOURCE_TOKENS`): the
    line of `plain`, or of `shown()` (a lifted memory's snippet) when `plain`'s line is over the cap."""
    from engine.timeutil import to_micros

    line = format_line(section, mid, plain, memory)
    cap = MAX_SOURCE_TOKENS if section == "sources" else MAX_LINE_TOKENS
    action = None
    before = tok.count(line)
    if before > cap and shown is not None:
        line = format_line(section, mid, shown(), memory)
        before = tok.count(line)
    if before > cap:
        line = tok.truncate(line, cap)
        action = BudgetAction(
            action="truncate", memory_id=mid, notes=f"line capped at {cap} tokens (was {before})"
        )
    when, group = 0, ""
    if memory is not None:
        when = to_micros(memory.holds_from)
        group = memory_day(memory) if section == "recent_events" else ""
    return RenderItem(
        id=mid,
        section=section,
        plain=summary_text(section, plain, memory),
        line=line,
        rank=rank,
        score=score,
        pinned=pinned,
        when=when,
        group=group,
    ), action


def build_items(
    ranked: Sequence[str],
    scores: Mapping[str, float],
    memories: Mapping[str, Memory],
    snippets: Mapping[str, str],
    *,
    include: Sequence[str],
    max_facts: int,
    max_events: int,
    pinned: frozenset[str],
    redactor: Redactor,
    tokenizer: Tokenizer = ESTIMATE,
    passages: Mapping[str, str] | None = None,
) -> tuple[list[RenderItem], list[BudgetAction], list[RenderItem]]:
    """The items that may enter the context, in ranking order, the `truncate` actions and one `limit`
    action per section that had candidates past its line limit (how many: the ranking may hold
    hundreds), and the best `MAX_OVERFLOW` of the memories without a line (lineless, for the summary):
    those past a line limit and, when the summary is asked for, those of sections `include` leaves out."""
    wanted = set(include)
    summarized = "summary" in wanted
    limits = {"facts": max_facts, "recent_events": max_events}
    counts = {"facts": 0, "recent_events": 0}
    past = {"facts": 0, "recent_events": 0}
    items: list[RenderItem] = []
    actions: list[BudgetAction] = []
    overflow: list[RenderItem] = []
    for rank, mid in enumerate(ranked):
        memory = memories.get(mid)
        section = "sources" if memory is None else SECTION_OF_TYPE.get(memory.type, "sources")
        if section not in wanted:
            if summarized and memory is not None and len(overflow) < MAX_OVERFLOW:
                overflow.append(_overflow_item(mid, rank, section, memory, redactor, scores.get(mid, 0.0)))
            continue
        if section in limits and mid not in pinned and counts[section] >= limits[section]:
            past[section] += 1
            if memory is not None and len(overflow) < MAX_OVERFLOW:
                overflow.append(_overflow_item(mid, rank, section, memory, redactor, scores.get(mid, 0.0)))
            continue
        if section in counts:
            counts[section] += 1
        plain = redactor.redact(snippets[mid] if memory is None else memory.text, memory)
        shown = None
        if passages and memory is not None and (passage := passages.get(mid)) is not None:
            shown = partial(_snippet, memory, passage, redactor, tokenizer)
        item, action = _item(
            mid, rank, section, memory, plain, scores.get(mid, 0.0), mid in pinned, tokenizer, shown
        )
        items.append(item)
        if action is not None:
            actions.append(action)
    for section, n in past.items():
        if n:
            field = f"return.max_{section.split('_')[-1]}={limits[section]}"
            notes = f"{n} candidates past {field} (the summary takes the best that fit)"
            actions.append(BudgetAction(action="limit", notes=notes))
    return items, actions, overflow


def _overflow_item(
    mid: str, rank: int, section: str, memory: Memory, redactor: Redactor, score: float
) -> RenderItem:
    """A candidate without a line (past its section's line limit, or of a section left out), for the
    summary (`engine.retrieval.summary.beyond`): its text and day."""
    from engine.timeutil import to_micros

    return RenderItem(
        id=mid,
        section=section,
        plain=summary_text(section, redactor.redact(memory.text, memory), memory),
        line="",
        rank=rank,
        score=score,
        when=to_micros(memory.holds_from),
        group=memory_day(memory),
    )


def sections(kept: Sequence[RenderItem]) -> tuple[list[str], list[str], list[str]]:
    """(facts best first, recent_events by day, sources best first). Events: days newest first, each
    day's header line and then its events in time order."""
    by_rank = sorted(kept, key=lambda it: it.rank)
    facts = [it.line for it in by_rank if it.section == "facts"]
    days: dict[str, list[RenderItem]] = {}
    for it in kept:
        if it.section == "recent_events":
            days.setdefault(it.group, []).append(it)
    events: list[str] = []
    for group in sorted(days, key=lambda g: -max(it.when for it in days[g])):
        if group:
            events.append(day_header(group))
        # turns of one time keep the order they were stored in, as the listing does (ids rise with it)
        events.extend(it.line for it in sorted(days[group], key=lambda it: (it.when, it.id)))
    sources = [it.line for it in by_rank if it.section == "sources"]
    return facts, events, sources


def fact_struct(memory: Memory, score: float | None, redactor: Redactor | None = None) -> FactStruct:
    obj = memory.object
    object_text: str | None = None
    object_num: float | None = None
    if isinstance(obj, bool):
        object_text = "true" if obj else "false"
    elif isinstance(obj, int | float):
        object_num = float(obj)
    elif isinstance(obj, str):
        object_text = obj
    elif isinstance(obj, dict):
        object_text = msgspec.json.encode(obj).decode()
    text, shown = memory.text, memory
    if redactor is not None:
        # metadata and provenance repeat what the text hides
        shown = redactor.redact_memory(msgspec.structs.replace(memory, text=""))
        text = redactor.redact(text, memory)
        object_text = redactor.redact(object_text, memory) if object_text is not None else None
    return FactStruct(
        memory_id=memory.memory_id,
        type=memory.type,
        text=text,
        subject=memory.subject or memory.entity_id or "",
        predicate=memory.predicate or "",
        object_text=object_text,
        object_num=object_num,
        object_type=memory.object_type,
        unit=memory.unit,
        keys=memory.keys,
        status=memory.status,
        confidence=memory.confidence,
        timestamp=memory.timestamp,
        valid_from=memory.valid_from,
        valid_to=memory.valid_to,
        score=score,
        metadata=shown.metadata,
        tags=memory.tags,
        provenance=shown.provenance,
    )
