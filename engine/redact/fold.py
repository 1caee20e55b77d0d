"""The text the redaction rules read: look-alike characters folded to the ASCII the rules are written for.

    folded = fold(text)          # None when nothing folds (every ASCII text)
    start, end = folded.span(d.start, d.end)   # a rule's span in `folded.text` -> span in `text`

- Every Unicode space separator (no-break space U+00A0, narrow no-break U+202F, thin and other
  U+2000-U+200A spaces, ideographic U+3000, ...) becomes " ";
- every format character (Unicode category Cf: zero-width space/joiners U+200B-U+200D, word joiner
  U+2060, BOM U+FEFF, soft hyphen U+00AD, left-to-right/right-to-left marks and embeddings) is dropped;
- every decimal digit of any script (full-width `４`, Arabic-Indic `٤`, Devanagari `४`, ...) becomes
  its ASCII digit;
- the full-width forms of ASCII (U+FF01-U+FF5E: `＠`, `．`, `＋`, `Ａ`) become ASCII;
- hyphens and dashes written inside numbers (U+2010-U+2013, minus U+2212, small/full-width
  hyphen-minus) become "-".
Everything else is kept, one character for one, so offsets move only where a format character was
dropped. Detection reads the folded text; replacement cuts the original text at the mapped offsets.
"""

from __future__ import annotations

import unicodedata

_DASHES = frozenset("\u2010\u2011\u2012\u2013\u2212\ufe63")


def _fold_char(cp: int) -> int | None:
    ch = chr(cp)
    category = unicodedata.category(ch)
    if category == "Zs":
        return 0x20
    if category == "Cf":
        return None
    if category == "Nd":
        return 0x30 + unicodedata.decimal(ch)
    if 0xFF01 <= cp <= 0xFF5E:
        return cp - 0xFEE0
    if ch in _DASHES:
        return 0x2D
    return cp


class _Table(dict[int, int | None]):
    """`str.translate`'s table, filled on first sight of each non-ASCII character."""

    def __missing__(self, cp: int) -> int | None:
        folded = self[cp] = _fold_char(cp)
        return folded


_TABLE = _Table()


class Folded:
    """`text` as the rules read it, and the way back to offsets in the original."""

    __slots__ = ("_kept", "text")

    def __init__(self, text: str, kept: list[int] | None) -> None:
        self.text = text
        #: original index of each folded character; None when no character was dropped
        self._kept = kept

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of `folded.text[start:end]` (dropped characters at its edges left outside)."""
        if self._kept is None:
            return start, end
        return self._kept[start], self._kept[end - 1] + 1


def fold(text: str) -> Folded | None:
    """The folded text, or None when it would equal `text`."""
    if text.isascii():
        return None  # ASCII folds to itself: the common case costs one C-level scan
    folded = text.translate(_TABLE)
    if folded == text:
        return None
    if len(folded) == len(text):
        return Folded(folded, None)
    kept = [i for i, ch in enumerate(text) if _TABLE[ord(ch)] is not None]
    return Folded(folded, kept)
