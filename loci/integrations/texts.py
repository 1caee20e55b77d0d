"""User text cut to an API limit (a query, a memory's text) without breaking a character apart."""

from __future__ import annotations

import unicodedata

_ZWJ = "\u200d"
_REGIONAL = range(0x1F1E6, 0x1F200)  # two of them make one flag


def fit(text: str, limit: int) -> str:
    """`text` when it has at most `limit` characters, else its longest prefix that fits and ends between two
    characters as a reader sees them: never inside a surrogate pair, before a combining mark, a variation
    selector or an emoji modifier, around a zero-width joiner or inside a flag."""
    if len(text) <= limit:
        return text
    cut = limit
    while cut > 0 and (_extends(text[cut]) or _joins(text[cut - 1])):
        cut -= 1
    if cut > 0 and ord(text[cut]) in _REGIONAL:
        run = cut
        while run > 0 and ord(text[run - 1]) in _REGIONAL:
            run -= 1
        cut -= (cut - run) % 2
    return text[:cut] if cut > 0 else text[:limit]  # one unbroken cluster longer than the limit: cut it


def _extends(ch: str) -> bool:
    """A character that belongs to the one before it."""
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")  # combining marks, variation selectors
        or ch == _ZWJ
        or 0x1F3FB <= code <= 0x1F3FF  # skin-tone modifiers
        or 0xE0020 <= code <= 0xE007F  # emoji tag characters
        or 0xDC00 <= code <= 0xDFFF  # a low surrogate (a string decoded with surrogatepass)
    )


def _joins(ch: str) -> bool:
    """A character that binds the one after it to itself."""
    return ch == _ZWJ or 0xD800 <= ord(ch) <= 0xDBFF
