"""When and how long to wait before another attempt: connection errors, 429 (honouring Retry-After)
and 503 are retried with exponential backoff and jitter; every other answer is final."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import msgspec

RETRY_STATUSES = frozenset({429, 503})
MAX_RETRY_AFTER = 60.0


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    max_retries: int = 3
    #: the first wait; each next one doubles, up to max_backoff
    backoff: float = 0.25
    max_backoff: float = 8.0

    def __post_init__(self) -> None:
        """A count or wait that is no number >= 0 would retry never, or sleep(NaN): a ValueError here."""
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be a whole number >= 0, not {self.max_retries!r}")
        for name, value in (("backoff", self.backoff), ("max_backoff", self.max_backoff)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a number of seconds >= 0, not {value!r}")

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based)."""
        if retry_after is not None:
            try:
                seconds = float(retry_after)
            except ValueError:
                seconds = math.nan
            if math.isfinite(seconds):  # "NaN" or "inf" is no wait: the backoff, as the TypeScript client
                return min(max(seconds, 0.0), MAX_RETRY_AFTER)
            try:  # the HTTP-date form (RFC 9110), which a proxy may send
                when = parsedate_to_datetime(retry_after)
            except (TypeError, ValueError):
                when = None
            if when is not None and when.tzinfo is not None:
                wait = (when - datetime.now(UTC)).total_seconds()
                return min(max(wait, 0.0), MAX_RETRY_AFTER)
        base = min(self.backoff * (2**attempt), self.max_backoff)
        return float(base * (0.5 + random.random() / 2))  # jitter: no synchronized retry storms
