"""The context's summary line (`trace.summary.origin = "extractive"`): what the rendered lines do not
already say. No model is involved.

`beyond(items, kept, max_tokens)`: the first sentence of each ranked item that did NOT make it into
the context (dropped by the budget), best ranked first, without duplicates, cut to the allowance. It
never repeats a rendered line; when everything ranked fits, it is empty and the room stays with the
lines. `extractive(kept, max_tokens)` (first sentences of the kept items) is the older digest, kept
for comparison in the eval harness: it only repeats the lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from engine.retrieval.render import RenderItem
from engine.retrieval.tokens import ELLIPSIS, ESTIMATE, LINE_OVERHEAD, Tokenizer

ORIGIN = "extractive"
MAX_SENTENCE_CHARS = 240
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


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


def beyond(
    items: Sequence[RenderItem],
    kept: Sequence[RenderItem],
    max_tokens: int,
    tokenizer: Tokenizer = ESTIMATE,
) -> str:
    """A summary of the ranked items left out of the context, whose line cost is <= max_tokens."""
    shown = {it.id for it in kept}
    return _digest((it for it in items if it.id not in shown), max_tokens, tokenizer)


def extractive(kept: Sequence[RenderItem], max_tokens: int, tokenizer: Tokenizer = ESTIMATE) -> str:
    """First sentences of the kept items (repeats the lines), whose line cost is <= max_tokens."""
    return _digest(kept, max_tokens, tokenizer)
