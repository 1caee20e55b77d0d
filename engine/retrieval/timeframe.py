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

When no such phrase matches, a calendar date the question names (`rules.dates.find_absolute`) is the
time it points to: "on 13 March, 2023" that day, give or take a day; "on March 3rd" (no year) its
latest such day up to the reference, likewise; "in August 2023" that month. A memory is held from the
day it was said, so the turns of that day lead among those that match alike. A date after "since",
"before", "after", "until" or "from" bounds a span, not a time, and points to nothing.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

from engine.extract.rules.dates import AGO, NUMBER, find_absolute
from engine.extract.rules.quantities import word_number
from engine.timeutil import to_micros

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_PAST = re.compile(rf"\b(?:past|last|previous)\s+{NUMBER}\s+(?P<unit>day|week|month)s?\b", re.IGNORECASE)
_LAST_DAY = re.compile(r"\blast\s+(?P<day>" + "|".join(WEEKDAYS) + r")\b", re.IGNORECASE)
_LAST = re.compile(r"\blast\s+(?P<unit>week|weekend|month)\b", re.IGNORECASE)
_YESTERDAY = re.compile(r"\byesterday\b", re.IGNORECASE)
#: a date after these words is one end of a span ("since March 3rd"), which the boost does not model
_BOUND = re.compile(r"\b(?:since|before|after|until|till|from)\s+(?:the\s+)?$", re.IGNORECASE)
#: days either side of a calendar day the question names
DATE_SLACK_DAYS = 1
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


def _latest(month: int, day: int, today: date) -> date | None:
    """The latest `month`-`day` up to `today` (a Feb 29 within the last eight years)."""
    for year in range(today.year, today.year - 8, -1):
        try:
            named = date(year, month, day)
        except ValueError:  # Feb 29 of a common year
            continue
        if named <= today:
            return named
    return None


def named_days(question: str, reference: datetime) -> tuple[date, date] | None:
    """[first, last] day of the calendar date the question names, or None (see the module docstring)."""
    found = find_absolute(question)
    if found is None or _BOUND.search(question, 0, found.start):
        return None
    iso = found.iso  # "2023-03-13", "--03-13" (no year) or "2023-08" (a month)
    try:
        if iso.startswith("--"):
            named = _latest(int(iso[2:4]), int(iso[5:7]), reference.astimezone(UTC).date())
            if named is None:
                return None
        elif iso.count("-") == 1:
            first = date.fromisoformat(f"{iso}-01")
            following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
            return first, following - timedelta(days=1)
        else:
            named = date.fromisoformat(iso)
        return named - timedelta(days=DATE_SLACK_DAYS), named + timedelta(days=DATE_SLACK_DAYS)
    except (OverflowError, ValueError):
        return None


def window(question: str, reference: datetime) -> tuple[int, int] | None:
    """[start, end) in microseconds since the epoch (UTC days) of the time the question points to."""
    back = days_back(question, reference)
    if back is not None:
        today = datetime.combine(reference.astimezone(UTC).date(), time(), tzinfo=UTC)
        try:
            start = today - timedelta(days=back[1])
            end = today - timedelta(days=back[0] - 1)
        except OverflowError:
            return None
        return to_micros(start), to_micros(end)
    days = named_days(question, reference)
    if days is None:
        return None
    try:
        start = datetime.combine(days[0], time(), tzinfo=UTC)
        end = datetime.combine(days[1], time(), tzinfo=UTC) + timedelta(days=1)
    except OverflowError:
        return None
    return to_micros(start), to_micros(end)
