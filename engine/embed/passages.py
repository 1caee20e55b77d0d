"""The passages of a long memory text: its sentences. A long turn's vector averages everything it says, so
a question about one of its sentences matches it weakly; each passage of a text longer than
`TUNING.passage_min_chars` is embedded and stored beside the whole text when the memory is written
(`engine.embed.cache.EmbeddingCache`), and the semantic channel scores the memory by its closest passage
too (`engine.retrieval.channels.passage_lift`). Passage vectors are stored under their own model name
(`passage_model`): looked up by text hash only, they stay out of the vector indexes and plans of the
model's memory vectors.

A passage is a sentence (split after `.`, `!` or `?` and at line breaks) of at least `MIN_CHARS`
characters; the first `TUNING.max_passages` are kept, and a text with fewer than two has none (its
whole vector is its only sentence's).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from engine.models import text_hash
from loci.wire.tuning import TUNING

SUFFIX = "#passages"
MIN_CHARS = 20  # shorter sentences ("Thanks!", "Sure.") match everything a little and say nothing
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def passage_model(model: str) -> str:
    """The name the passage vectors of `model` are stored under."""
    return model + SUFFIX


def is_passage_model(model: str) -> bool:
    return model.endswith(SUFFIX)


@lru_cache(maxsize=16384)  # retrieval sees the same long candidates request after request
def passages(text: str) -> tuple[str, ...]:
    """The passages of `text`, or () when it is not longer than `TUNING.passage_min_chars`."""
    if len(text) <= TUNING.passage_min_chars:
        return ()
    found: dict[str, None] = {}
    for part in _SPLIT.split(text):
        part = part.strip()
        if len(part) >= MIN_CHARS:
            found.setdefault(part)
            if len(found) == TUNING.max_passages:
                break
    return tuple(found) if len(found) > 1 else ()


@lru_cache(maxsize=16384)
def passage_hashes(text: str) -> tuple[str, ...]:
    """The text hashes (embedding-cache keys) of `passages(text)`, in order."""
    return tuple(text_hash(p) for p in passages(text))


def all_passages(texts: Sequence[str]) -> list[str]:
    """The passages of the long texts among `texts`, each once."""
    return list(dict.fromkeys(p for t in texts for p in passages(t)))
