"""`phone`: telephone numbers, found by Google's libphonenumber (the `phonenumbers` package).

Region strategy: a number written in international form (`+44 20 7946 0958`, `+1-212-...`) is found
whatever its country. A number written in national form (`(212) 736-5000`, `212.736.5000`) is found
only for the configured default regions, `("US",)` unless the rule is built with others (e.g.
`PhoneRule(("US", "GB", "DE"))`). Matching uses leniency VALID: the number must be a valid number of
its region per libphonenumber's metadata, which keeps dates, short order numbers and the like out; a
digit run right after "order", "invoice", "tracking", "account", "id", "#", ... or glued to an
identifier (`INV-2024-000123`) is not reported.
The placeholder key is the E.164 form, so `+1 212 736 5000` and `(212) 736-5000` share one placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import phonenumbers
from phonenumbers import Leniency, PhoneNumberFormat, PhoneNumberMatcher

from engine.redact.base import Detection

DEFAULT_REGIONS: tuple[str, ...] = ("US",)

# A digit run introduced as an order/invoice/tracking/account number is that, not a phone number.
_ID_BEFORE = re.compile(
    r"(?i)(?:\b(?:order|invoice|tracking|ref|reference|account|acct|id|sku|ticket|case)\b|#)"
    r"\s*+(?:(?:no\.?|number|#|id)\s*+)?(?:[:#]\s*+)?$"
)


def _inside_identifier(text: str, start: int) -> bool:
    """The digits continue an identifier (`INV-2024-000123`, `A12/...`) or follow an id-like word."""
    before = text[max(0, start - 2) : start]
    if before[-1:].isalnum() or (len(before) == 2 and before[1] in "-/_" and before[0].isalnum()):
        return True
    return _ID_BEFORE.search(text, max(0, start - 24), start) is not None


# libphonenumber's matcher is slow on long texts, so it only sees windows around runs of digits that
# could be a phone number (7+ digits with phone punctuation), with a little context on each side
# (room for a leading "+"/"(" and a trailing "ext. 1234").
_DIGIT_RUN = re.compile(r"\d[\d \t().\-/]{5,}\d")
_BEFORE, _AFTER = 3, 14
#: candidates one window may reject before the matcher gives up on it (with libphonenumber's default,
#: 65535, one long run of digits and dashes is tried at every position)
MAX_TRIES = 64


def _windows(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for m in _DIGIT_RUN.finditer(text):
        if sum(ch.isdigit() for ch in m.group(0)) < 7:
            continue
        start, end = max(0, m.start() - _BEFORE), min(len(text), m.end() + _AFTER)
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


class PhoneRule:
    name = "phone"
    label = "PHONE"

    def __init__(self, regions: Sequence[str] = DEFAULT_REGIONS) -> None:
        self.regions = tuple(regions)

    def detect(self, text: str) -> list[Detection]:
        by_span: dict[tuple[int, int], Detection] = {}
        for region in self.regions:
            for offset, window_end in _windows(text):
                self._scan(text, offset, window_end, region, by_span)
        return sorted(by_span.values(), key=lambda d: d.start)

    def _scan(
        self, text: str, offset: int, window_end: int, region: str, by_span: dict[tuple[int, int], Detection]
    ) -> None:
        matcher = PhoneNumberMatcher(
            text[offset:window_end], region, leniency=Leniency.VALID, max_tries=MAX_TRIES
        )
        for m in matcher:
            start, end = m.start + offset, m.end + offset
            span = (start, end)
            if span in by_span or _inside_identifier(text, start):
                continue
            key = phonenumbers.format_number(m.number, PhoneNumberFormat.E164)
            by_span[span] = Detection(rule=self.name, start=start, end=end, value=m.raw_string, key=key)
