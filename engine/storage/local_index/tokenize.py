"""The keyword channel's tokenizer.

Lowercase the text (str.lower), take the `\\w+` runs (Unicode word characters: letters, digits, underscore),
and drop the small English stopword list `STOPWORDS` below. No stemming. Query and documents use the
same function, so a query that is only stopwords matches nothing.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")

_STOPWORD_TEXT = (
    "a an and are as at be but by for from has have i in is it its of on or that the this to was "
    "were will with"
)
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split(" "))


def tokenize(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in STOPWORDS]
