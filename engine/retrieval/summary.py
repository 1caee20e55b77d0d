"""The context's summary (`trace.summary.origin = "extractive"`): what the rendered lines do not
already say. No model is involved.

`beyond(candidates, max_tokens)`: the next-best memories that have no line of their own (past
`return.max_events`/`max_facts`, of a section `return.include` leaves out, or dropped by the budget),
compacted and dated: chosen best first while they fit the room the lines left, then shown one day per
line, newest day first, each memory's whole text (capped like a line) after its day. So the budget, not the line count, limits a context:
six event lines leave most of 1,200 tokens, and the summary carries the next turns in it. It never
repeats a rendered line, and is empty when every ranked memory has its line.
`extractive(kept, max_tokens)` (first sentences of the kept items) is an older digest, kept for
comparison in the eval harness: it only repeats the lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from engine.retrieval.render import RenderItem
from engine.retrieval.tokens import ELLIPSIS, ESTIMATE, LINE_OVERHEAD, Tokenizer

ORIGIN = "extractive"
MAX_SENTENCE_CHARS = 240
#: one memory's text in the summary is capped like a rendered line
MAX_ENTRY_TOKENS = 160
ENTRY_OVERHEAD = 2  # the " | " between two entries
DAY_OVERHEAD = 6  # "YYYY-MM-DD: " and the newline
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
#: summary entries remembered: a summary weighs about a hundred candidates, most of them seen by the
#: scope's earlier requests; texts longer than a rendered line are cut again each time
ENTRY_CACHE_SIZE = 8192
ENTRY_CACHE_MAX_CHARS = 2000


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(sentence) > MAX_SENTENCE_CHARS:
        cut = sentence[:MAX_SENTENCE_CHARS]
        space = cut.rfind(" ")
        sentence = (cut[:space] if space > MAX_SENTENCE_CHARS // 2 else cut).rstrip() + ELLIPSIS
    if sentence[-1] not in ".!?" + ELLIPSIS:
        sentence += "."
    return sentence


def _digest(items: Iterable[RenderItem], max_tokens: int, tok: Tokenizer) -> str:
    if max_tokens <= LINE_OVERHEAD:
        return ""
    seen: set[str] = set()
    parts: list[str] = []
    total = 0  # sentences' own counts plus one per joining space: at least the joined count
    for item in sorted(items, key=lambda it: it.rank):
        s = first_sentence(item.plain)
        key = s.lower()
        if s and key not in seen:
            seen.add(key)
            parts.append(s)
            total += tok.count(s) + 1
        if total >= max_tokens:
            break
    text = " ".join(parts)
    return tok.truncate(text, max_tokens - LINE_OVERHEAD)


def _entry_of(tokenizer: Tokenizer, plain: str) -> tuple[str, str, int]:
    """(the text, its whitespace runs made single spaces; its summary entry, capped at
    `MAX_ENTRY_TOKENS`; the entry's count)."""
    text = " ".join(plain.split())
    if text == plain:
        text = plain  # one string held, not two
    entry = tokenizer.truncate(text, MAX_ENTRY_TOKENS)
    return text, entry, tokenizer.count(entry)


_cached_entry = lru_cache(maxsize=ENTRY_CACHE_SIZE)(_entry_of)


def _entry(tokenizer: Tokenizer, plain: str) -> tuple[str, str, int]:
    if len(plain) > ENTRY_CACHE_MAX_CHARS:
        return _entry_of(tokenizer, plain)
    return _cached_entry(tokenizer, plain)


def beyond(
    candidates: Sequence[RenderItem],
    max_tokens: int,
    tokenizer: Tokenizer = ESTIMATE,
    shown: Iterable[RenderItem] = (),
) -> str:
    """The summary of `candidates` (items without a line), whose line cost is <= max_tokens; a text
    one of the `shown` lines or an earlier entry already says (another memory saying the same, or a long
    text cut to what another's cut reads) is left out."""
    room = max_tokens - LINE_OVERHEAD
    if room <= 0 or not candidates:
        return ""
    chosen: list[tuple[RenderItem, str]] = []
    seen: set[str] = set()
    for it in shown:  # a text and what the reader sees of it: a long event's line is cut as its entry is
        seen.update((" ".join(it.plain.split()).lower(), it.line.lower()))
    days: set[str] = set()
    used = 0
    for item in sorted(candidates, key=lambda it: it.rank):
        text, entry, count = _entry(tokenizer, item.plain)
        said = text.lower()
        shows = said if entry == text else entry.lower()
        if not text or said in seen or shows in seen:
            continue
        cost = count + ENTRY_OVERHEAD + (DAY_OVERHEAD if item.group not in days else 0)
        if used + cost > room:
            continue  # a shorter one may still fit
        used += cost
        seen.update((said, shows))
        days.add(item.group)
        chosen.append((item, entry))
    by_day: dict[str, list[tuple[RenderItem, str]]] = {}
    for item, text in chosen:
        by_day.setdefault(item.group, []).append((item, text))
    lines = [
        # facts and documents have no day (`RenderItem.group` is ""): their entries stand alone
        (f"{day}: " if day else "")
        + " | ".join(t for _, t in sorted(entries, key=lambda e: (e[0].when, e[0].rank)))
        for day, entries in sorted(by_day.items(), key=lambda d: -max(it.when for it, _ in d[1]))
    ]
    text = "\n".join(lines)
    # the counts above are close; the exact count, entry by entry (cut before each " |" and the entry
    # after it), decides, and a text over the room is cut to it
    first, *rest = text.split(" | ")
    if tokenizer.count_pieces([first, *(piece for part in rest for piece in (" |", f" {part}"))]) <= room:
        return text
    return tokenizer.truncate(text, room)


def extractive(kept: Sequence[RenderItem], max_tokens: int, tokenizer: Tokenizer = ESTIMATE) -> str:
    """First sentences of the kept items (repeats the lines), whose line cost is <= max_tokens."""
    return _digest(kept, max_tokens, tokenizer)
