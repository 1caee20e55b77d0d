"""Time helpers. The engine holds only timezone-aware UTC datetimes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_utc(value: datetime) -> datetime:
    """Normalize to aware UTC; a naive datetime is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def to_micros(value: datetime) -> int:
    """Microseconds since the epoch, exact (no float rounding)."""
    value = to_utc(value)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    from datetime import timedelta

    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)
