"""Letter classes for the patterns that read a name by its capital: "Émile", "Zoë" and "Łukasz" are
names as "Emily" is, where `[A-Z][a-z]+` saw none. Scripts without case (Chinese, Arabic, Devanagari)
have no capital to read a name by; their names are not found this way.

- `UPPER`: a regex character class of the upper- and titlecase letters of the Basic Multilingual Plane
  (A-Z among them, so an ASCII text matches as it did with `[A-Z]`);
- `LOWER`: the lowercase letters of the BMP (a-z among them);
- `LETTER`: any letter, in any case (`[^\\W\\d_]`);
- `NAME_CHAR`: a letter, an apostrophe or a hyphen, the characters of a name after its capital.
- `MARKS`, `MARKS_BEYOND`: the combining marks (Mn, Mc, Me) as regex class BODIES (no brackets), in the
  Basic Multilingual Plane and in U+10000-U+1FFFF: `\\w` leaves them out, though a vowel sign or virama
  is part of its word (the keyword tokenizer, the e-mail rule). Two bodies: `re` tests a class wholly
  within the BMP by a table lookup, one with a range beyond it range by range.
"""

from __future__ import annotations

import re
import unicodedata


def _body(code_points: list[int]) -> str:
    """Ascending code points as the body of a regex character class of ranges."""
    spans: list[tuple[int, int]] = []
    for cp in code_points:
        if spans and spans[-1][1] == cp - 1:
            spans[-1] = (spans[-1][0], cp)
        else:
            spans.append((cp, cp))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in spans
    )


def _class(code_points: list[int]) -> str:
    """Ascending code points as a regex character class of ranges."""
    return f"[{_body(code_points)}]"


def _marks() -> tuple[str, str]:
    """(MARKS, MARKS_BEYOND); none lies past U+1FFFF but the variation selectors."""
    marks = [cp for cp in range(0x20000) if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me")]
    return _body([cp for cp in marks if cp <= 0xFFFF]), _body([cp for cp in marks if cp > 0xFFFF])


def _cased_classes() -> tuple[str, str]:
    """(UPPER, LOWER): the plane's letters read once for both (this runs when the engine is imported)."""
    letters = [c for c in map(chr, range(0x10000)) if c.isalpha()]
    upper = _class([ord(c) for c in letters if c.isupper() or c.istitle()])
    return upper, _class([ord(c) for c in letters if c.islower()])


UPPER, LOWER = _cased_classes()
LETTER = r"[^\W\d_]"
NAME_CHAR = rf"(?:{LETTER}|['\-])"
MARKS, MARKS_BEYOND = _marks()
