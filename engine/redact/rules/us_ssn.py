"""`us_ssn`: US Social Security numbers.

Found as `AAA-GG-SSSS` or `AAA GG SSSS` (one separator kind), or as nine bare digits right after the
words "SSN" / "social security (number|no.)". Numbers the SSA never issues are not reported: area 000,
666 or 900-999, group 00, serial 0000. Key: the nine digits.
"""

from __future__ import annotations

import re

from engine.redact.base import Detection

_GROUPED = re.compile(r"(?<![\w-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-])")
_AFTER_KEYWORD = re.compile(
    r"(?i)\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\W{0,3}(?:is\W{1,3})?(\d{3})(\d{2})(\d{4})\b"
)


def ssn_ok(area: str, group: str, serial: str) -> bool:
    a = int(area)
    return a != 0 and a != 666 and a < 900 and group != "00" and serial != "0000"


class UsSsnRule:
    name = "us_ssn"
    label = "SSN"

    def detect(self, text: str) -> list[Detection]:
        found: list[Detection] = []
        for m in _GROUPED.finditer(text):
            area, group, serial = m.group(1), m.group(3), m.group(4)
            if ssn_ok(area, group, serial):
                found.append(self._detection(text, m.start(), m.end(), area + group + serial))
        for m in _AFTER_KEYWORD.finditer(text):
            area, group, serial = m.group(1), m.group(2), m.group(3)
            if ssn_ok(area, group, serial):
                found.append(self._detection(text, m.start(1), m.end(3), area + group + serial))
        return found

    def _detection(self, text: str, start: int, end: int, digits: str) -> Detection:
        return Detection(rule=self.name, start=start, end=end, value=text[start:end], key=digits)
