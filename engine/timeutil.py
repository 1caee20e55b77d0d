"""Time helpers. The engine holds only timezone-aware UTC datetimes, within years 1-9999 in UTC."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from engine.errors import InvalidInput

Clock = Callable[[], datetime]

#: what a date-time outside the representable range is told (its UTC value must exist)
OUT_OF_RANGE = "date-time out of range: its UTC value must fall within years 1 to 9999"
#: the name of that rule in an error's details (the OpenAPI document lists it: server.schema_rules)
RANGE_RULE = "date_time_range"


def utcnow() -> datetime:
    return datetime.now(UTC)


def in_range(value: datetime) -> bool:
    """Whether `value` has a UTC form (`0001-01-01T00:00:00+01:00` does not: it is in year 0)."""
    if value.tzinfo is None:
        return True
    try:
        value.astimezone(UTC)
    except OverflowError:
        return False
    return True


def to_utc(value: datetime, *, field: str | None = None) -> datetime:
    """Normalize to aware UTC; a naive datetime is taken to be UTC already. A value with no UTC form
    is InvalidInput (naming `field` when given)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInput(
            OUT_OF_RANGE, field=field, details={"value": value.isoformat(), "rule": RANGE_RULE}
        ) from None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(value: datetime) -> int:
    """Microseconds since the epoch, exact (no float rounding)."""
    if value.tzinfo is not UTC:  # the engine holds UTC values: skip the conversion for them
        value = to_utc(value)
    delta = value - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


_MIN = datetime.min.replace(tzinfo=UTC)
_MAX = datetime.max.replace(tzinfo=UTC)


def shift(value: datetime, delta: timedelta) -> datetime:
    """`value + delta`, held at the first or last representable instant instead of overflowing."""
    try:
        return value + delta
    except OverflowError:
        return _MAX if delta > timedelta(0) else _MIN


def rfc3339(value: datetime) -> str:
    """`value` in UTC as the API writes every date-time: `2024-06-10T00:00:00Z` (not `+00:00`)."""
    return to_utc(value).isoformat().replace("+00:00", "Z")
