"""Extractive summary of what made it into the context (`trace.summary.origin = "extractive"`).

The first sentence of each kept item, best ranked first, without duplicates, joined into one
paragraph and cut to the token allowance. No model is involved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engine.retrieval import tokens
from engine.retrieval.render import RenderItem

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
        sentence = (cut[:space] if space > MAX_SENTENCE_CHARS // 2 else cut).rstrip() + tokens.ELLIPSIS
    if sentence[-1] not in ".!?" + tokens.ELLIPSIS:
        sentence += "."
    return sentence


def extractive(kept: Sequence[RenderItem], max_tokens: int) -> str:
    """A summary whose line cost (`tokens.line_tokens`) is <= max_tokens ("" when nothing fits)."""
    if max_tokens <= tokens.LINE_OVERHEAD or not kept:
        return ""
    seen: set[str] = set()
    parts: list[str] = []
    for item in sorted(kept, key=lambda it: it.rank):
        s = first_sentence(item.plain)
        key = s.lower()
        if s and key not in seen:
            seen.add(key)
            parts.append(s)
        if tokens.estimate(" ".join(parts)) >= max_tokens:
            break
    text = " ".join(parts)
    return tokens.truncate(text, max_tokens - tokens.LINE_OVERHEAD)
