"""Dates: absolute forms to ISO strings and relative phrases resolved against a reference time.

- "July 4, 1990", "4 July 1990", "1990-07-04", "07/04/1990" (US order) -> "1990-07-04"
- "March 3rd", "3rd of March" (no year) -> "--03-03" (ISO 8601 month-day)
- "in 2019" -> "2019"; "yesterday", "last week", "two months ago", "next month", "the 15th of last
  month" -> resolved dates
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

from engine.extract.rules.quantities import word_number

MONTHS: dict[str, int] = {}
for _i, _name in enumerate(calendar.month_name):
    if _name:
        MONTHS[_name.lower()] = _i
        MONTHS[_name[:3].lower()] = _i
MONTHS["sept"] = 9

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"

_ABSOLUTE = (
    re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<mnum>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(r"\b(?P<mnum>\d{1,2})/(?P<day>\d{1,2})/(?P<year>(?:19|20)\d{2})\b"),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b", re.IGNORECASE),
    re.compile(rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.IGNORECASE),
)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+{_YEAR}\b", re.IGNORECASE)
_YEAR_ONLY = re.compile(r"\b(?:in|since|of|from)\s+(?P<year>(?:19|20)\d{2})\b", re.IGNORECASE)

NUMBER = r"(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
#: "N days / weeks / months / years ago" (also read by `engine.retrieval.timeframe`)
AGO = re.compile(rf"\b{NUMBER}\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_LAST_NEXT = re.compile(r"\b(?P<dir>last|next|this)\s+(?P<unit>week|month|year|weekend)\b", re.IGNORECASE)
_ORDINAL = r"(?:the\s+)?\d{1,2}(?:st|nd|rd|th)"
#: "the 15th of last month", "from the 10th to the 14th of next month": a day (the first) of a month
#: named relative to today
_DAY_OF = re.compile(
    rf"\b(?:(?:from\s+)?(?P<first>{_ORDINAL})\s+(?:to|through|until|-)\s+)?(?P<day>{_ORDINAL})\s+of\s+"
    r"(?P<dir>last|next|this)\s+month\b",
    re.IGNORECASE,
)
_SIMPLE = re.compile(r"\b(?P<word>yesterday|today|tomorrow|tonight)\b", re.IGNORECASE)


class DateMatch:
    __slots__ = ("iso", "start", "end", "relative")

    def __init__(self, iso: str, start: int, end: int, relative: bool) -> None:
        self.iso = iso
        self.start = start
        self.end = end
        self.relative = relative


def _iso(year: int | None, month: int, day: int) -> str | None:
    try:
        if year is None:
            date(2000, month, day)  # leap year: accepts Feb 29
            return f"--{month:02d}-{day:02d}"
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _shift_months(d: date, months: int) -> date:
    total = d.year * 12 + (d.month - 1) + months
    year, month = divmod(total, 12)
    day = min(d.day, calendar.monthrange(year, month + 1)[1])
    return date(year, month + 1, day)


def find_absolute(text: str) -> DateMatch | None:
    """The first absolute calendar date in `text`."""
    for pattern in _ABSOLUTE:
        m = pattern.search(text)
        if not m:
            continue
        groups = m.groupdict()
        month = int(groups["mnum"]) if groups.get("mnum") else MONTHS[groups["month"].lower().rstrip(".")]
        year = int(groups["year"]) if groups.get("year") else None
        iso = _iso(year, month, int(groups["day"]))
        if iso:
            return DateMatch(iso, m.start(), m.end(), False)
    m = _MONTH_YEAR.search(text)
    if m:
        month = MONTHS[m.group("month").lower().rstrip(".")]
        return DateMatch(f"{int(m.group('year')):04d}-{month:02d}", m.start(), m.end(), False)
    return None


def _days_from(today: date, days: int) -> str | None:
    try:
        return (today + timedelta(days=days)).isoformat()
    except (OverflowError, ValueError):  # before year 1 or after 9999: no date
        return None


def _months_from(today: date, months: int) -> date | None:
    try:
        return _shift_months(today, months)
    except (OverflowError, ValueError):
        return None


def _ago(m: re.Match[str], today: date) -> str | None:
    n = word_number(m.group("n")) or 1
    unit = m.group("unit").lower()
    if n > 100_000:  # "99999999999 days ago" names no date
        return None
    if unit in ("day", "week"):
        return _days_from(today, -n * (7 if unit == "week" else 1))
    shifted = _months_from(today, -n * (1 if unit == "month" else 12))
    return shifted.isoformat() if shifted is not None else None


def _last_next(m: re.Match[str], today: date) -> str | None:
    sign = {"last": -1, "next": 1, "this": 0}[m.group("dir").lower()]
    unit = m.group("unit").lower()
    if unit in ("week", "weekend"):
        return _days_from(today, 7 * sign)
    if unit == "month":
        shifted = _months_from(today, sign)
        return shifted.isoformat()[:7] if shifted is not None else None
    year = today.year + sign
    return str(year) if 1 <= year <= 9999 else None


def _day_of(text: str, month: re.Match[str], today: date) -> DateMatch | None:
    """The day of "the 15th of last month" ending at `month` ("last month"; a range's first), or None."""
    if month.group("unit").lower() != "month":
        return None
    m = _DAY_OF.search(text, max(0, month.start() - 48), month.end())
    if m is None or m.end() != month.end():
        return None
    shifted = _months_from(today, {"last": -1, "next": 1, "this": 0}[month.group("dir").lower()])
    day = int(re.sub(r"\D", "", m.group("first") or m.group("day")))
    iso = _iso(shifted.year, shifted.month, day) if shifted is not None else None
    return DateMatch(iso, m.start(), m.end(), True) if iso else None


def find_relative(text: str, reference: datetime) -> DateMatch | None:
    """The first relative date phrase, resolved against `reference` (a date, ISO). A phrase whose
    date would fall outside years 1-9999 resolves to nothing."""
    today = reference.date()
    m = _SIMPLE.search(text)
    if m:
        word = m.group("word").lower()
        offset = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[word]
        iso = _days_from(today, offset)
        return DateMatch(iso, m.start(), m.end(), True) if iso else None
    for pattern, resolve in ((AGO, _ago), (_LAST_NEXT, _last_next)):
        m = pattern.search(text)
        if m and pattern is _LAST_NEXT and (day := _day_of(text, m, today)) is not None:
            return day
        if m:
            iso = resolve(m, today)
            return DateMatch(iso, m.start(), m.end(), True) if iso else None
    m = _YEAR_ONLY.search(text)
    if m:
        return DateMatch(m.group("year"), m.start("year"), m.end(), False)
    return None


def find_date(text: str, reference: datetime) -> DateMatch | None:
    return find_absolute(text) or find_relative(text, reference)


def before_date(text: str, reference: datetime) -> tuple[str, DateMatch | None]:
    """`text` up to the date it states (all of it when it starts with the date), and that date: "Acme
    since last May" -> "Acme ", "cleats on the 15th of last month" -> "cleats on "."""
    dm = find_date(text, reference)
    return (text[: dm.start] if dm is not None and dm.start > 0 else text), dm


def human_date(iso: str) -> str:
    """'1990-07-04' -> 'July 4, 1990'; '--03-03' -> 'March 3'; '2019-05' -> 'May 2019'; else as is."""
    m = re.fullmatch(r"(?:(\d{4})|-)-(\d{2})(?:-(\d{2}))?", iso)
    if not m:
        return iso
    year, month, day = m.group(1), int(m.group(2)), m.group(3)
    name = calendar.month_name[month]
    if day is None:
        return f"{name} {year}" if year else name
    return f"{name} {int(day)}, {year}" if year else f"{name} {int(day)}"
