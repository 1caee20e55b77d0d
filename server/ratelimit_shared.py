"""Rate limits shared by several server workers, and `limiter_for(settings)` which picks one.

    limiter_for(settings) ->
        PostgresWindowLimiter(url, rate)   when settings.database_url is postgresql:// (or postgres://)
        FixedWindowLimiter(rate)           otherwise (SQLite serves one worker: an in-process count)

`PostgresWindowLimiter` keeps fixed-window counters in a small table it creates itself

    rate_limits(bucket text, window_start bigint, count int, PRIMARY KEY (bucket, window_start))

and counts a request with one statement (an UPSERT that increments only while under the limit):

    INSERT INTO rate_limits VALUES (bucket, window_start, 1)
    ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limits.count + 1
        WHERE rate_limits.count < limit
    RETURNING count

A row back means allowed (its count is this request's number); no row means the window is full.
The row lock the UPSERT takes makes concurrent hits from any number of workers count exactly.
Windows are epoch multiples of the window length (as `FixedWindowLimiter`), from this process's
clock: keep the servers' clocks in sync (NTP); skew only shifts where a window starts. Rows of
past windows are deleted by the first hit of each new window a process sees.

The limiter has its own small psycopg pool on the same URL (autocommit: each hit is one round
trip; no ping before each checkout), so a busy store pool never delays admission. Its connections
commit with `synchronous_commit = off`: a hit does not wait for the WAL to reach the disk (a crash
can forget the last few counts of a window, which only lets a few more requests through). If
PostgreSQL cannot be reached, or a pooled connection turns out broken, the request is let through
(fail open, logged; the pool replaces the broken connection): a rate limiter must not take the API
down with it.

Redis (`LOCI_REDIS_URL`): not available in this build (the `redis` package is not installed);
`limiter_for` refuses the setting with a clear error rather than silently ignoring it.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.errors import Unavailable
from server.config import Settings
from server.ratelimit import FixedWindowLimiter, Rate, RateDecision, RateLimiter, parse_rate

if TYPE_CHECKING:  # psycopg is the optional `postgres` extra: imported only when this limiter is built
    import psycopg
    from psycopg_pool import ConnectionPool

log = logging.getLogger("loci.ratelimit")

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS rate_limits (
    bucket       text   NOT NULL,
    window_start bigint NOT NULL,
    count        int    NOT NULL,
    PRIMARY KEY (bucket, window_start)
)"""
CREATE_INDEX = "CREATE INDEX IF NOT EXISTS rate_limits_by_window ON rate_limits (window_start)"
HIT = (
    "INSERT INTO rate_limits AS r (bucket, window_start, count) VALUES (%s, %s, 1)"
    " ON CONFLICT (bucket, window_start) DO UPDATE SET count = r.count + 1 WHERE r.count < %s"
    " RETURNING r.count"
)
PEEK = "SELECT count FROM rate_limits WHERE bucket = %s AND window_start = %s"
PRUNE = "DELETE FROM rate_limits WHERE window_start < %s"
# Any 64-bit constant unique to this table's creation ("loci" in ASCII, then 0x52 'R').
_DDL_LOCK = 0x6C6F6369_00000052


def _no_commit_wait(conn: Any) -> None:
    conn.execute("SET synchronous_commit = off")  # for this session (the pool's connections are autocommit)


def is_postgres_url(url: str | None) -> bool:
    return url is not None and url.partition("://")[0].lower() in ("postgresql", "postgres") and "://" in url


class PostgresWindowLimiter:
    """Fixed-window counts in PostgreSQL, shared by every process that uses the same database."""

    def __init__(
        self,
        url: str,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.time,
        max_size: int = 4,
        timeout: float = 2.0,
        fail_open: bool = True,
    ) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool, PoolTimeout

        self._errors: tuple[type[Exception], ...] = (psycopg.Error, PoolTimeout)
        self.rate = rate
        self.clock = clock
        self.fail_open = fail_open
        self._pruned_window = -1
        self._prune_lock = threading.Lock()
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                # CREATE ... IF NOT EXISTS can still race on the catalog when workers start together
                conn.execute("SELECT pg_advisory_lock(%s)", (_DDL_LOCK,))
                try:
                    conn.execute(CREATE_TABLE)
                    conn.execute(CREATE_INDEX)
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (_DDL_LOCK,))
        except psycopg.OperationalError as exc:
            raise Unavailable(f"rate limiter cannot reach PostgreSQL: {exc}") from exc
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            configure=_no_commit_wait,
            open=True,
            name="loci-ratelimit",
        )

    def close(self) -> None:
        self._pool.close()

    def _window(self, now: float) -> int:
        """The window's start in epoch seconds."""
        return int(now // self.rate.window_seconds) * self.rate.window_seconds

    def _decision(self, count: int, window_start: int, now: float, allowed: bool) -> RateDecision:
        reset_at = window_start + self.rate.window_seconds
        return RateDecision(
            allowed=allowed,
            limit=self.rate.limit,
            remaining=max(0, self.rate.limit - count),
            reset_after=max(1, math.ceil(reset_at - now)),
        )

    def _unavailable(self, exc: Exception, window_start: int, now: float) -> RateDecision:
        if not self.fail_open:
            raise Unavailable(f"rate limiter unavailable: {exc}") from exc
        log.warning("rate limiter unavailable, letting the request through: %s", exc)
        return self._decision(0, window_start, now, allowed=True)

    def hit(self, key: str) -> RateDecision:
        now = self.clock()
        start = self._window(now)
        try:
            with self._pool.connection() as conn:
                row = conn.execute(HIT, (key, start, self.rate.limit)).fetchone()
                self._maybe_prune(conn, start)
        except self._errors as exc:
            return self._unavailable(exc, start, now)
        if row is None:  # the window is full: the conditional update touched nothing
            return self._decision(self.rate.limit, start, now, allowed=False)
        return self._decision(int(row[0]), start, now, allowed=True)

    def peek(self, key: str) -> RateDecision:
        now = self.clock()
        start = self._window(now)
        try:
            with self._pool.connection() as conn:
                row = conn.execute(PEEK, (key, start)).fetchone()
        except self._errors as exc:
            return self._unavailable(exc, start, now)
        count = int(row[0]) if row is not None else 0
        return self._decision(count, start, now, allowed=count < self.rate.limit)

    def _maybe_prune(self, conn: psycopg.Connection[Any], start: int) -> None:
        """Once per new window per process: delete the counters of windows that have ended."""
        if start <= self._pruned_window or not self._prune_lock.acquire(blocking=False):
            return
        try:
            if start > self._pruned_window:
                conn.execute(PRUNE, (start,))
                self._pruned_window = start
        finally:
            self._prune_lock.release()


def close_limiter(limiter: RateLimiter) -> None:
    """Release what a limiter holds (the PostgreSQL one has a connection pool); others: nothing."""
    close = getattr(limiter, "close", None)
    if callable(close):
        close()


def limiter_for(settings: Settings, env: Mapping[str, str] | None = None) -> RateLimiter:
    """The limiter a server process should use: shared through PostgreSQL when the store is there,
    in process otherwise. `LOCI_REDIS_URL` is refused (no Redis client in this build)."""
    env = os.environ if env is None else env
    rate = parse_rate(settings.rate_limit)
    if env.get("LOCI_REDIS_URL"):
        raise Unavailable(
            "LOCI_REDIS_URL is set, but this build has no Redis rate limiter (the `redis` "
            "package is not installed); unset it to share limits through PostgreSQL"
        )
    if is_postgres_url(settings.database_url):
        assert settings.database_url is not None
        return PostgresWindowLimiter(settings.database_url, rate)
    return FixedWindowLimiter(rate)
