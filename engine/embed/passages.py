"""The passages of a long memory text: its sentences. A long turn's vector averages everything it says, so
a question about one of its sentences matches it weakly; each passage of a text longer than
`TUNING.passage_min_chars` is embedded and stored beside the whole text when the memory is written
(`engine.embed.cache.EmbeddingCache`), and the semantic channel scores the memory by its closest passage
too (`engine.retrieval.channels.passage_lift`). Passage vectors are stored under their own model name
(`passage_model`): looked up by text hash only, they stay out of the vector indexes and plans of the
model's memory vectors.

A passage is a sentence (split after `.`, `!` or `?` followed by whitespace, after `。`, `！`, `？`, `｡`,
`।` or `॥` with or without it, and at line breaks) at least `MIN_CHARS` wide, each distinct sentence
once; a text with fewer than two has none (its whole vector is its only sentence's). A text with more
than `TUNING.max_passages` sentences has runs of consecutive ones as passages instead, as many to a run
as it takes to stay within that number: a sentence anywhere in a document can lift it and be shown, and
a 20,000-character document's runs stay a few hundred characters, well within the embedder's window.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from engine.models import text_hash
from loci.wire.tuning import TUNING

SUFFIX = "#passages"
MIN_CHARS = 20  # shorter sentences ("Thanks!", "Sure.") match everything a little and say nothing
#: a full stop of the scripts written without a space after it ends a sentence as it is; more stops
#: or a closing mark after it stay in that sentence
_STOPS = "。！？｡।॥"
_CLOSE = "」』”’）)"
_SPLIT = re.compile(
    rf"(?<=[.!?])\s+|(?:(?<=[{_STOPS}])|(?<=[{_STOPS}][{_CLOSE}]))(?![{_STOPS}{_CLOSE}])\s*|\n+"
)
#: a character two columns wide (Han, kana, Hangul, full-width forms): one says about as much as a word
_WIDE = re.compile(
    "[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3"
    "\uf900-\ufaff\ufe30-\ufe4f\uff01-\uff60\uffe0-\uffe6\U00020000-\U0003fffd]"
)


def passage_model(model: str) -> str:
    """The name the passage vectors of `model` are stored under."""
    return model + SUFFIX


def is_passage_model(model: str) -> bool:
    return model.endswith(SUFFIX)


def _wide_enough(part: str) -> bool:
    """At least `MIN_CHARS` columns: a wide character counts two."""
    return len(part) >= MIN_CHARS or len(part) + len(_WIDE.findall(part)) >= MIN_CHARS


def _sentences(text: str) -> list[tuple[int, int]]:
    """The spans of the distinct sentences of `text` wide enough to be passages, in order."""
    spans: list[tuple[int, int]] = []
    seen: set[str] = set()
    start = 0
    for cut in [*((m.start(), m.end()) for m in _SPLIT.finditer(text)), (len(text), len(text))]:
        part = text[start : cut[0]]
        stripped = part.strip()
        if stripped and stripped not in seen and _wide_enough(stripped):
            seen.add(stripped)
            at = start + len(part) - len(part.lstrip())
            spans.append((at, at + len(stripped)))
        start = cut[1]
    return spans


@lru_cache(maxsize=16384)  # retrieval sees the same long candidates request after request
def passages(text: str) -> tuple[str, ...]:
    """The passages of `text`, or () when it is not longer than `TUNING.passage_min_chars`. Each is a
    stretch of `text` as written (a line showing it finds it there, `engine.retrieval.render.snippet`)."""
    if len(text) <= TUNING.passage_min_chars:
        return ()
    spans = _sentences(text)
    if len(spans) < 2:
        return ()
    run = -(-len(spans) // TUNING.max_passages)  # sentences to a passage
    if run == 1:
        return tuple(text[a:b] for a, b in spans)
    return tuple(
        dict.fromkeys(
            text[spans[i][0] : spans[min(i + run, len(spans)) - 1][1]] for i in range(0, len(spans), run)
        )
    )


@lru_cache(maxsize=16384)
def passage_hashes(text: str) -> tuple[str, ...]:
    """The text hashes (embedding-cache keys) of `passages(text)`, in order."""
    return tuple(text_hash(p) for p in passages(text))


def all_passages(texts: Sequence[str]) -> list[str]:
    """The passages of the long texts among `texts`, each once."""
    return list(dict.fromkeys(p for t in texts for p in passages(t)))
