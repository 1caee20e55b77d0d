"""`phone`: telephone numbers, found by Google's libphonenumber (the `phonenumbers` package).

Region strategy: a number written in international form (`+44 20 7946 0958`, `+1-212-...`) is found
whatever its country. A number written in national form (`(212) 736-5000`, `212.736.5000`) is found
only for the configured default regions, `("US",)` unless the rule is built with others (e.g.
`PhoneRule(("US", "GB", "DE"))`). Matching uses leniency VALID: the number must be a valid number of
its region per libphonenumber's metadata, which keeps dates, short order numbers and the like out; a
digit run right after "order", "invoice", "tracking", "account", "id", "#", ... or glued to an
identifier (`INV-2024-000123`) is not reported.
National numbers of other countries are found only where they cannot be much else: written with the
trunk prefix `0` and at least 9 digits (`06 12 34 56 78`, `020 7946 0958`, `090-1234-5678`), within 32
characters after a telephone word (`KEYWORD_BEFORE`: tel, phone, mobile, call, fax, Telefon, Handy, téléphone, portable,
電話, 携帯, тел, ...) and valid in one of `KEYED_REGIONS`; without such a word they stay unreported
(a year, an amount, an order number does not start with `0` after "phone").
The placeholder key is the E.164 form, so `+1 212 736 5000` and `(212) 736-5000` share one placeholder;
for a keyed national number it is the E.164 form in the first of `KEYED_REGIONS` where it is valid.
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


#: national numbers with a trunk prefix "0" are tried in these regions after a telephone word
KEYED_REGIONS: tuple[str, ...] = ("GB", "FR", "DE", "JP", "IT", "NL", "BE", "CH", "AT", "AU", "IN", "KR")
KEYWORD_BEFORE = re.compile(
    r"(?i)(?:\b(?:tel|tél|phone|telephone|téléphone|mobile|cell|fax|call|whatsapp|portable|"
    r"telefon|telefono|teléfono|telefone|handy|mobil|móvil|cellulare|тел|телефон)\b\.?"
    r"|電話|携帯|手机|电话|전화|휴대폰)"
)
_KEYWORD_REACH = 32
#: the shortest national number with its trunk prefix in those regions that is not also a short code
_KEYED_MIN_DIGITS = 9
# Letters of scripts written without spaces between words (CJK, kana, Hangul, Thai, Lao).
_SPACELESS = re.compile(r"[\u0e00-\u0eff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def _inside_identifier(text: str, start: int, *, keyed: bool = False) -> bool:
    """The digits continue an identifier (`INV-2024-000123`, `A12/...`) or follow an id-like word.
    After a telephone word, digits glued to a spaceless script (`電話番号は090-...`) are a number."""
    before = text[max(0, start - 2) : start]
    if before[-1:].isalnum() and not (keyed and _SPACELESS.match(before[-1:])):
        return True
    if len(before) == 2 and before[1] in "-/_" and before[0].isalnum():
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


def _keyed_windows(text: str) -> list[tuple[int, int]]:
    """Windows around digit runs that start with a trunk prefix "0" and follow a telephone word."""
    spans: list[tuple[int, int]] = []
    for m in _DIGIT_RUN.finditer(text):
        if m.group(0)[0] != "0" or sum(ch.isdigit() for ch in m.group(0)) < _KEYED_MIN_DIGITS:
            continue
        if KEYWORD_BEFORE.search(text, max(0, m.start() - _KEYWORD_REACH), m.start()) is None:
            continue
        spans.append((max(0, m.start() - _BEFORE), min(len(text), m.end() + _AFTER)))
    return spans


class PhoneRule:
    name = "phone"
    label = "PHONE"

    def __init__(self, regions: Sequence[str] = DEFAULT_REGIONS) -> None:
        self.regions = tuple(regions)

    def detect(self, text: str) -> list[Detection]:
        by_span: dict[tuple[int, int], Detection] = {}
        windows = _windows(text)
        for region in self.regions:
            for offset, window_end in windows:
                self._scan(text, offset, window_end, region, by_span)
        if windows:
            for offset, window_end in _keyed_windows(text):
                for region in KEYED_REGIONS:
                    self._scan(text, offset, window_end, region, by_span, trunk_only=True)
        return sorted(by_span.values(), key=lambda d: d.start)

    def _scan(
        self,
        text: str,
        offset: int,
        window_end: int,
        region: str,
        by_span: dict[tuple[int, int], Detection],
        *,
        trunk_only: bool = False,
    ) -> None:
        matcher = PhoneNumberMatcher(
            text[offset:window_end], region, leniency=Leniency.VALID, max_tries=MAX_TRIES
        )
        for m in matcher:
            start, end = m.start + offset, m.end + offset
            span = (start, end)
            if span in by_span or _inside_identifier(text, start, keyed=trunk_only):
                continue
            if trunk_only and not m.raw_string.lstrip("(").startswith("0"):
                continue
            key = phonenumbers.format_number(m.number, PhoneNumberFormat.E164)
            by_span[span] = Detection(rule=self.name, start=start, end=end, value=m.raw_string, key=key)
