"""`iban`: International Bank Account Numbers, validated by length per country and ISO 7064 mod-97.

Written compact (`DE89370400440532013000`) or in groups separated by single spaces
(`DE89 3704 0044 0532 0130 00`), in either case. The country code fixes the
length (the SWIFT IBAN registry's table below); the check digits must satisfy mod-97 == 1, so a
mistyped or made-up IBAN is not reported. Key: the compact upper-case form.
"""

from __future__ import annotations

import re

from engine.redact.base import Detection

# Country -> IBAN length (SWIFT IBAN registry).
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "RU": 33,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip

_CANDIDATE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){10,32}")


def iban_ok(compact: str) -> bool:
    """Length for the country and the ISO 7064 mod-97-10 check."""
    if IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact.isalnum():
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


class IbanRule:
    name = "iban"
    label = "IBAN"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        pos = 0
        while True:
            m = _CANDIDATE.search(text, pos)
            if m is None:
                return found
            length = IBAN_LENGTHS.get(m.group(0)[:2].upper())
            detection = self._cut(text, m.start(), m.group(0), length) if length else None
            if detection is None:
                pos = m.start() + 1
                continue
            found.append(detection)
            pos = detection.end

    def _cut(self, text: str, start: int, candidate: str, length: int) -> Detection | None:
        """Take exactly `length` alphanumerics from the candidate; the next character must not continue it."""
        taken = 0
        end = start
        for i, ch in enumerate(candidate):
            if ch != " ":
                taken += 1
            if taken == length:
                end = start + i + 1
                break
        else:
            return None
        if end < len(text) and text[end].isalnum():
            return None
        value = text[start:end]
        compact = value.replace(" ", "").upper()
        if not iban_ok(compact):
            return None
        return Detection(rule=self.name, start=start, end=end, value=value, key=compact)
