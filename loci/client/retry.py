"""When and how long to wait before another attempt: connection errors, 429 (honouring Retry-After)
and 503 are retried with exponential backoff and jitter; every other answer is final."""

from __future__ import annotations

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

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based)."""
        if retry_after is not None:
            try:
                return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER)
            except ValueError:
                pass
            try:  # the HTTP-date form (RFC 9110), which a proxy may send
                when = parsedate_to_datetime(retry_after)
            except (TypeError, ValueError):
                when = None
            if when is not None and when.tzinfo is not None:
                wait = (when - datetime.now(UTC)).total_seconds()
                return min(max(wait, 0.0), MAX_RETRY_AFTER)
        base = min(self.backoff * (2**attempt), self.max_backoff)
        return float(base * (0.5 + random.random() / 2))  # jitter: no synchronized retry storms
