"""`card`: payment card numbers (PANs).

A candidate is 13 to 19 digits, optionally grouped by single spaces or single dashes (one kind of
separator per number) the way cards are printed: fours (the last group may be 3 long), or Amex/Diners
4-6-5 and 4-6-4. It is reported only when it passes the Luhn checksum and starts with a digit that
a card network uses as its major industry identifier (2 to 6: Mastercard 2-series, Amex/Diners/
JCB, Visa, Mastercard/Maestro, Discover/UnionPay). This leaves out ISBNs (978...), tracking and
order numbers, and the nine in ten random digit strings that fail Luhn. Key: the digits.
"""

from __future__ import annotations

import re

from engine.redact.base import Detection

_CANDIDATE = re.compile(
    r"(?<![\w.-])(?<!\d[.,])"
    r"(?:\d{13,19}|\d{4}(?: \d{3,6}){2,4}|\d{4}(?:-\d{3,6}){2,4})"
    r"(?![\w-])(?![.,]\d)"
)


_OTHER_GROUPINGS = ((4, 6, 5), (4, 6, 4))


def grouping_ok(groups: list[int]) -> bool:
    """Group lengths of a separated number: fours with a last group of 3 or 4, or 4-6-5 / 4-6-4."""
    if len(groups) == 1 or tuple(groups) in _OTHER_GROUPINGS:
        return True
    return all(g == 4 for g in groups[:-1]) and groups[-1] in (3, 4)


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) checksum over a string of digits."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


class CardRule:
    name = "card"
    label = "CARD"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        pos = 0
        while (m := _CANDIDATE.search(text, pos)) is not None:
            raw = m.group(0)
            if _is_card(raw):
                digits = "".join(ch for ch in raw if ch.isdigit())
                found.append(Detection(rule=self.name, start=m.start(), end=m.end(), value=raw, key=digits))
                pos = m.end()
            else:
                pos = m.start() + 1  # a rejected run may hide a card starting at its next group
        return found


def _is_card(raw: str) -> bool:
    separators = {ch for ch in raw if not ch.isdigit()}
    if separators and not grouping_ok([len(g) for g in raw.split(separators.pop())]):
        return False
    digits = "".join(ch for ch in raw if ch.isdigit())
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn_ok(digits)
