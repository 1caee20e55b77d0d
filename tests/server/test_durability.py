"""No acknowledged write is ever lost: concurrent single and batch writes over HTTP to a real `loci
serve`, the server's whole process group killed with SIGKILL in the middle of them (twice), restarted
on the same database; every memory id a 200 answered is readable and no text is stored twice.
SQLite always; PostgreSQL (embedded) as an integration test.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.pg_fixture import pg_database, pg_server
from tests.server.live_server import LiveServer

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below

WRITERS = 4
BATCH = 5
KILLS = 2
WRITE_SECONDS = 1.5


class Writers:
    """`WRITERS` threads writing until stopped: even writers one memory per request, odd ones batches."""

    def __init__(self, base: str, auth: dict[str, str], round_: int) -> None:
        self.base = base
        self.auth = auth
        self.round = round_
        self.acked: dict[str, str] = {}  # memory id -> text, for every 200
        self.sent = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(w,), daemon=True) for w in range(WRITERS)]

    def _body(self, writer: int, n: int) -> dict[str, Any]:
        texts = [
            f"round {self.round} writer {writer} write {n} item {k}"
            for k in range(BATCH if writer % 2 else 1)
        ]
        if writer % 2:
            return {"items": [{"type": "note", "text": t} for t in texts]}
        return {"type": "note", "text": texts[0]}

    def _run(self, writer: int) -> None:
        with httpx.Client(base_url=self.base, headers=self.auth, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                with self.lock:
                    self.sent += 1
                try:
                    r = client.post("/v0/memories", json=self._body(writer, n))
                except httpx.HTTPError:
                    time.sleep(0.01)  # the server is gone: nothing was acknowledged
                    continue
                if r.status_code == 200:
                    data = r.json()
                    with self.lock:
                        for m in data.get("items", [data]):
                            self.acked[m["memory_id"]] = m["text"]

    def __enter__(self) -> Writers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)


def _all_memories(base: str, auth: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    with httpx.Client(base_url=base, headers=auth, timeout=60) as client:
        while True:
            params: dict[str, Any] = {"page_size": 200, "sort": "timestamp_asc"}
            if cursor:
                params["cursor"] = cursor
            page = client.get("/v0/memories", params=params).json()
            out.extend(page["items"])
            cursor = page["next_cursor"]
            if not cursor:
                return out


def kill_during_writes(server: LiveServer) -> tuple[dict[str, str], int]:
    key = server.key("read,write")
    auth = {"Authorization": f"Bearer {key}"}
    acked: dict[str, str] = {}
    sent = 0
    for round_ in range(KILLS):
        with Writers(server.base, auth, round_) as writers:
            time.sleep(WRITE_SECONDS)
            server.kill()  # SIGKILL to the process group, writes in flight
        acked.update(writers.acked)
        sent += writers.sent
        server.start()
    stored = _all_memories(server.base, auth)
    by_id = {m["memory_id"]: m["text"] for m in stored}
    missing = {i: t for i, t in acked.items() if by_id.get(i) != t}
    texts = [m["text"] for m in stored]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {list(missing.items())[:3]}"
    assert len(texts) == len(set(texts)), "a write was stored twice"
    with httpx.Client(base_url=server.base, headers=auth, timeout=60) as client:
        sample = list(acked)[:: max(1, len(acked) // 50)]
        assert all(client.get(f"/v0/memories/{i}").status_code == 200 for i in sample)
    return acked, sent


@pytest.mark.slow
def test_sqlite_keeps_every_acknowledged_write_through_kill_9(tmp_path: Path) -> None:
    with LiveServer(tmp_path) as server:
        acked, sent = kill_during_writes(server)
    assert len(acked) > 50 and sent > len(acked) / BATCH  # the writers really wrote, and some were cut


@pytest.mark.integration
@pytest.mark.slow
def test_postgres_keeps_every_acknowledged_write_through_kill_9(tmp_path: Path, pg_database: str) -> None:
    with LiveServer(tmp_path, database_url=pg_database) as server:
        acked, sent = kill_during_writes(server)
    assert len(acked) > 50 and sent > len(acked) / BATCH


def _allow_connections(admin_url: str, database: str, allow: bool) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
                sql.Identifier(database), sql.Literal(allow)
            )
        )
        if not allow:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,)
            )


@pytest.mark.integration
@pytest.mark.slow
def test_a_database_outage_is_503_with_retry_after_then_recovers(
    tmp_path: Path, pg_server: Any, pg_database: str
) -> None:
    database = urlsplit(pg_database).path.lstrip("/")
    with LiveServer(tmp_path, database_url=pg_database) as server:
        auth = {"Authorization": f"Bearer {server.key('read,write')}"}
        assert httpx.get(server.url("/v0/memories"), headers=auth, timeout=30).status_code == 200
        _allow_connections(pg_server.admin_url, database, False)
        try:
            for method, path, body in (
                ("GET", "/v0/memories", None),
                ("POST", "/v0/memories", {"type": "note", "text": "x"}),
            ):
                r = httpx.request(method, server.url(path), json=body, headers=auth, timeout=60)
                assert r.status_code == 503, r.text
                assert r.json()["error"] == "unavailable" and int(r.headers["retry-after"]) > 0
        finally:
            _allow_connections(pg_server.admin_url, database, True)
        r = httpx.post(
            server.url("/v0/memories"), json={"type": "note", "text": "back"}, headers=auth, timeout=60
        )
        assert r.status_code == 200, r.text
