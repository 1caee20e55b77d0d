"""Shared rate limits: two limiters (two workers) on one PostgreSQL database share one quota."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psycopg
import pytest
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.errors import Unavailable
from engine.keys import create_api_key
from engine.storage.postgres import PostgresStore
from server.app import create_app
from server.config import Settings
from server.ratelimit import FixedWindowLimiter, Rate
from server.ratelimit_shared import PostgresWindowLimiter, is_postgres_url, limiter_for
from tests.pg_fixture import pg_database, pg_server

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_limiter_for_sqlite_is_in_process() -> None:
    limiter = limiter_for(Settings(database_url="sqlite:///tmp/x.db", rate_limit="5/second"), env={})
    assert isinstance(limiter, FixedWindowLimiter) and limiter.rate == Rate(5, 1)
    assert isinstance(limiter_for(Settings(), env={}), FixedWindowLimiter)


def test_redis_url_is_refused_clearly() -> None:
    with pytest.raises(Unavailable, match="LOCI_REDIS_URL"):
        limiter_for(Settings(), env={"LOCI_REDIS_URL": "redis://localhost:6379/0"})


def test_is_postgres_url() -> None:
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("POSTGRES://h/db")
    assert not is_postgres_url("sqlite:///x.db") and not is_postgres_url(None)
    assert not is_postgres_url("postgresql")


#: two workers' limiters on one database, and their shared clock
LimiterPair = tuple[PostgresWindowLimiter, PostgresWindowLimiter, FakeClock]


@pytest.fixture
def pair(pg_database: str) -> Iterator[LimiterPair]:
    clock = FakeClock(1_000_020.0 + 12.25)  # 12.25 s into the 60 s window starting at 1_000_020
    a = PostgresWindowLimiter(pg_database, Rate(3, 60), clock=clock)
    b = PostgresWindowLimiter(pg_database, Rate(3, 60), clock=clock)  # table exists: no error
    yield a, b, clock
    a.close()
    b.close()


@pytest.mark.integration
def test_two_limiters_share_the_quota(pair: LimiterPair) -> None:
    a, b, clock = pair
    first = a.hit("key:k1")
    assert (first.allowed, first.limit, first.remaining, first.reset_after) == (True, 3, 2, 48)  # ceil(47.75)
    assert b.hit("key:k1").remaining == 1
    assert a.hit("key:k1").remaining == 0
    denied = b.hit("key:k1")
    assert (denied.allowed, denied.remaining, denied.reset_after) == (False, 0, 48)
    assert not a.hit("key:k1").allowed
    assert a.peek("key:k1") == b.peek("key:k1") and not b.peek("key:k1").allowed
    assert b.hit("key:k2").remaining == 2  # per bucket
    assert a.peek("key:new").remaining == 3 and a.peek("key:new").allowed  # peek counts nothing
    assert a.peek("key:new").remaining == 3
    clock.now = 1_000_080.0  # next window
    assert b.hit("key:k1").remaining == 2 and a.peek("key:k1").remaining == 2


@pytest.mark.integration
def test_old_windows_are_pruned(pair: LimiterPair, pg_database: str) -> None:
    a, b, clock = pair
    a.hit("key:k1")
    b.hit("key:k2")
    clock.now += 60
    a.hit("key:k1")
    with psycopg.connect(pg_database) as conn:
        rows = conn.execute("SELECT bucket, window_start, count FROM rate_limits ORDER BY bucket").fetchall()
    assert rows == [("key:k1", 1_000_080, 1)]


@pytest.mark.integration
def test_concurrent_hits_count_exactly(pair: LimiterPair) -> None:
    a, b, _ = pair
    a.rate = b.rate = Rate(100, 60)
    allowed: list[bool] = []
    lock = threading.Lock()

    def worker(limiter: PostgresWindowLimiter) -> None:
        for _ in range(40):
            ok = limiter.hit("key:hot").allowed
            with lock:
                allowed.append(ok)

    threads = [threading.Thread(target=worker, args=(lim,)) for lim in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(allowed) == 160 and allowed.count(True) == 100
    assert a.peek("key:hot").remaining == 0


@pytest.mark.integration
def test_fails_open_when_the_database_is_gone(pair: LimiterPair) -> None:
    a, _, _ = pair
    a.close()  # a closed pool raises like a lost server
    assert a.hit("key:k1").allowed
    a.fail_open = False
    with pytest.raises(Unavailable):
        a.hit("key:k1")


@pytest.mark.integration
def test_a_connection_dropped_by_the_server_fails_open_once_then_counts_again(
    pair: LimiterPair, pg_database: str
) -> None:
    a, b, _ = pair
    assert a.hit("key:k2").remaining == 2
    with a._pool.connection() as conn:  # hits do not wait for the WAL flush
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
    for limiter in (a, b):  # a pool opens its connections in the background: have them open first
        limiter._pool.wait()
    with psycopg.connect(pg_database, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    # Each broken pooled connection (a pool may hold several): that hit is let through, not an error and
    # not counted, and the connection is replaced; then counting goes on where it was (1 of 3 used).
    for limiter, counted_before in ((a, 1), (b, 3)):
        got = [(d.allowed, d.remaining) for d in (limiter.hit("key:k2") for _ in range(8))]
        failed_open = got.count((True, 3))
        counted = [g for g in got if g != (True, 3)]
        assert 1 <= failed_open <= 4, got
        expected = [(True, 3 - n) for n in range(counted_before + 1, 4)]
        assert counted == expected + [(False, 0)] * (len(counted) - len(expected)), got


@pytest.mark.integration
def test_limiter_for_postgres_is_shared(pg_database: str) -> None:
    limiter = limiter_for(Settings(database_url=pg_database, rate_limit="7/hour"), env={})
    try:
        assert isinstance(limiter, PostgresWindowLimiter) and limiter.rate == Rate(7, 3600)
    finally:
        assert isinstance(limiter, PostgresWindowLimiter)
        limiter.close()


@pytest.mark.integration
def test_two_apps_share_the_quota_over_http(pg_database: str) -> None:
    settings = Settings(database_url=pg_database, rate_limit="3/minute", embedder="hash")
    store = PostgresStore(pg_database, max_size=4)
    clock = FakeClock(1_000_020.0 + 30.0)
    limiters = [PostgresWindowLimiter(pg_database, Rate(3, 60), clock=clock) for _ in range(2)]
    try:
        _, secret = create_api_key(store, "acme")
        auth = {"Authorization": f"Bearer {secret}"}
        apps = [create_app(settings, store=store, embedder=HashEmbedder(), limiter=lim) for lim in limiters]
        with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
            got = [c.get("/v0/memories", headers=auth) for c in (one, two, one, two)]
            assert [r.status_code for r in got] == [200, 200, 200, 429]
            assert [r.headers["x-ratelimit-remaining"] for r in got] == ["2", "1", "0", "0"]
            assert got[3].headers["retry-after"] == "30"
    finally:
        for lim in limiters:
            lim.close()
        store.close()
