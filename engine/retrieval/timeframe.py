"""The time a question points to, as a window of days before the request's reference time (`as_of`,
else now), for the fusion's `time_boost` (`engine.retrieval.fuse`). No model: the phrases an agent's
user says of their own past, resolved by rule, the first that matches:

- "N days / weeks / months / years ago" (N a digit or a word up to twelve): that day, give or take
  1 / 3 / 10 / 45 days;
- "the past / last N days / weeks / months" ("in the past two weeks", "over the last few days" is not
  one: no number): from N units before the reference to the reference;
- "last <weekday>": the latest such day before the reference's day, give or take a day;
- "last week" / "last weekend": 3 to 14 days back; "last month": 15 to 60 days back;
- "yesterday": the two days before the reference and the reference's day.

Absolute dates ("on March 3rd") are left to the channels: the turn that names a date usually says it
in words the question repeats.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta

from engine.extract.rules.dates import AGO, NUMBER
from engine.extract.rules.quantities import word_number
from engine.timeutil import to_micros

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PAST = re.compile(rf"\b(?:past|last|previous)\s+{NUMBER}\s+(?P<unit>day|week|month)s?\b", re.IGNORECASE)
_LAST_DAY = re.compile(r"\blast\s+(?P<day>" + "|".join(WEEKDAYS) + r")\b", re.IGNORECASE)
_LAST = re.compile(r"\blast\s+(?P<unit>week|weekend|month)\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
#: days either side of the day "N units ago" names
SLACK_DAYS = {"day": 1, "week": 3, "month": 10, "year": 45}
#: "N units ago" with N above this names no time a memory could hold
MAX_UNITS = 1000


def days_back(question: str, reference: datetime) -> tuple[int, int] | None:
    """(nearest, farthest) whole days before the reference's day that the question points to, or None."""
    today = reference.astimezone(UTC).date()
    m = AGO.search(question)
    if m:
        n = word_number(m.group("n")) or 1
        unit = m.group("unit").lower()
        if n > MAX_UNITS:
            return None
        center, slack = n * UNIT_DAYS[unit], SLACK_DAYS[unit]
        return max(0, center - slack), center + slack
    m = _PAST.search(question)
    if m:
        n = word_number(m.group("n")) or 1
        return (0, n * UNIT_DAYS[m.group("unit").lower()]) if n <= MAX_UNITS else None
    m = _LAST_DAY.search(question)
    if m:
        back = (today.weekday() - WEEKDAYS.index(m.group("day").lower())) % 7 or 7
        return back - 1, back + 1
    m = _LAST.search(question)
    if m:
        return (15, 60) if m.group("unit").lower() == "month" else (3, 14)
    if _YESTERDAY.search(question):
        return 0, 2
    return None


def window(question: str, reference: datetime) -> tuple[int, int] | None:
    """[start, end) in microseconds since the epoch (UTC days) of the time the question points to."""
    back = days_back(question, reference)
    if back is None:
        return None
    today = datetime.combine(reference.astimezone(UTC).date(), time(), tzinfo=UTC)
    try:
        start = today - timedelta(days=back[1])
        end = today - timedelta(days=back[0] - 1)
    except OverflowError:
        return None
    return to_micros(start), to_micros(end)
