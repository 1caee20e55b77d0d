"""Rate limiting per API key (or per client address for requests without a valid key).

`RateLimiter` is the seam: the in-process `FixedWindowLimiter` here serves one server process; a
shared implementation (PostgreSQL, Redis) can implement the same two methods for many workers.
The gateway calls `hit` before routing, so a limited request never reaches a handler.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import msgspec

from engine.errors import InvalidInput

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d+)?\s*(second|minute|hour|day)s?\s*$")


class Rate(msgspec.Struct, frozen=True):
    limit: int
    window_seconds: int


class RateDecision(msgspec.Struct, frozen=True, kw_only=True):
    allowed: bool
    limit: int
    remaining: int
    reset_after: int  # whole seconds until the window resets (>= 1)


@runtime_checkable
class RateLimiter(Protocol):
    def hit(self, key: str) -> RateDecision:
        """Count one request for `key` and say whether it is allowed."""
        ...

    def peek(self, key: str) -> RateDecision:
        """The current state for `key` without counting a request (CORS preflight)."""
        ...


def parse_rate(text: str) -> Rate:
    """'600/minute', '10/second', '1000/hour', '5/10 seconds' -> Rate."""
    m = _RATE.match(text.lower())
    # a window of 0 units ("5/0 seconds") divided by zero at every request: each answered 500
    if not m or int(m.group(1)) < 1 or (m.group(2) is not None and int(m.group(2)) < 1):
        raise InvalidInput(f"bad rate limit {text!r}; expected like '600/minute'", field="LOCI_RATE_LIMIT")
    count = int(m.group(2) or 1)
    return Rate(int(m.group(1)), count * _UNITS[m.group(3)])


class FixedWindowLimiter:
    """Fixed windows aligned to the clock (epoch multiples of the window), per key, in process."""

    def __init__(
        self, rate: Rate, *, clock: Callable[[], float] = time.time, max_keys: int = 100_000
    ) -> None:
        self.rate = rate
        self.clock = clock
        self.max_keys = max_keys
        self._lock = threading.Lock()
        self._counts: dict[str, tuple[int, int]] = {}  # key -> (window index, count)

    def _state(self, key: str, now: float) -> tuple[int, int]:
        window = int(now // self.rate.window_seconds)
        found = self._counts.get(key)
        if found is None or found[0] != window:
            return window, 0
        return found

    def _decision(self, count: int, window: int, now: float, allowed: bool) -> RateDecision:
        reset_at = (window + 1) * self.rate.window_seconds
        return RateDecision(
            allowed=allowed,
            limit=self.rate.limit,
            remaining=max(0, self.rate.limit - count),
            reset_after=max(1, math.ceil(reset_at - now)),
        )

    def hit(self, key: str) -> RateDecision:
        now = self.clock()
        with self._lock:
            window, count = self._state(key, now)
            if count >= self.rate.limit:
                return self._decision(count, window, now, allowed=False)
            count += 1
            if len(self._counts) >= self.max_keys and key not in self._counts:
                self._evict(window)
            self._counts[key] = (window, count)
            return self._decision(count, window, now, allowed=True)

    def peek(self, key: str) -> RateDecision:
        now = self.clock()
        with self._lock:
            window, count = self._state(key, now)
            return self._decision(count, window, now, allowed=count < self.rate.limit)

    def _evict(self, window: int) -> None:
        stale = [k for k, (w, _) in self._counts.items() if w != window]
        for k in stale:
            del self._counts[k]
        if len(self._counts) >= self.max_keys:  # all current: drop the oldest entries
            for k in list(self._counts)[: len(self._counts) // 10 + 1]:
                del self._counts[k]
