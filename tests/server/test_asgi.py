"""The app factory for ASGI servers, the one-worker rule for SQLite, and real multi-worker serving."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from litestar.testing import TestClient

from engine.errors import InvalidInput
from engine.keys import SCOPES, create_api_key
from engine.storage.postgres import PostgresStore
from server.asgi import check_workers, create, requested_workers, settings_env
from server.config import Settings
from server.ratelimit import FixedWindowLimiter
from tests.pg_fixture import pg_database, pg_server

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below
ROOT = Path(__file__).resolve().parents[2]


def test_sqlite_allows_one_worker_only() -> None:
    sqlite = Settings(data_dir="/tmp/x")
    check_workers(sqlite, 1)
    with pytest.raises(InvalidInput, match="2 workers need PostgreSQL.*in-process search index"):
        check_workers(sqlite, 2)
    with pytest.raises(InvalidInput, match="at least 1"):
        check_workers(sqlite, 0)
    check_workers(Settings(database_url="postgresql://u@h/db"), 8)


def test_requested_workers() -> None:
    assert requested_workers({}) == 1
    assert requested_workers({"WEB_CONCURRENCY": "3"}) == 3
    assert requested_workers({"LOCI_WORKERS": "2", "WEB_CONCURRENCY": "3"}) == 2
    with pytest.raises(InvalidInput, match="LOCI_WORKERS"):
        requested_workers({"LOCI_WORKERS": "many"})
    for name in ("LOCI_WORKERS", "WEB_CONCURRENCY"):
        with pytest.raises(InvalidInput, match=f"^{name} must be a whole number >= 1, got '0'"):
            requested_workers({name: "0"})


def test_settings_env_round_trips() -> None:
    settings = Settings(
        data_dir="/srv/loci",
        database_url="postgresql://u@h/db",
        rate_limit="7/hour",
        cors_origins=("https://a.example", "https://b.example"),
        embedder="hash",
        idempotency_ttl_hours=1.5,
        max_streams_per_key=3,
        max_streams=0,
    )
    assert Settings.from_env(settings_env(settings)) == settings
    assert Settings.from_env(settings_env(Settings())) == Settings()


def test_factory_builds_the_app_from_the_environment(tmp_path: Path) -> None:
    env = {
        "LOCI_DATA_DIR": str(tmp_path),
        "LOCI_EMBEDDER": "hash",
        "LOCI_RATE_LIMIT": "9/minute",
        "LOCI_WARM_EMBEDDER": "0",
    }
    app = create(env)
    assert isinstance(app.state.loci.limiter, FixedWindowLimiter)
    with TestClient(app) as client:
        r = client.get("/v0/health")
        assert r.status_code == 200 and r.headers["x-ratelimit-limit"] == "9"
    assert (tmp_path / "loci.db").exists()


def test_factory_refuses_several_sqlite_workers(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="need PostgreSQL"):
        create({"LOCI_DATA_DIR": str(tmp_path), "WEB_CONCURRENCY": "4", "LOCI_EMBEDDER": "hash"})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.integration
@pytest.mark.slow
def test_two_uvicorn_workers_share_one_database_and_quota(pg_database: str) -> None:
    store = PostgresStore(pg_database, max_size=2)
    try:
        _, secret = create_api_key(store, "acme", SCOPES)
    finally:
        store.close()
    port = _free_port()
    settings = Settings(database_url=pg_database, rate_limit="5/hour", embedder="hash")
    code = (
        "import sys; from server.asgi import run_workers; from server.config import Settings; "
        "run_workers(Settings.from_env(), host='127.0.0.1', port=int(sys.argv[1]), workers=2, "
        "log_level='warning')"
    )
    env = {**os.environ, **settings_env(settings), "LOCI_WARM_EMBEDDER": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(port)], cwd=ROOT, env=env, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {secret}"}
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/v0/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the workers did not start")
        created = httpx.post(
            f"{base}/v0/memories",
            json={"type": "note", "text": "Alice lives in Paris"},
            headers=auth,
            timeout=10,
        )
        assert created.status_code == 200
        got = [httpx.get(f"{base}/v0/memories", headers=auth, timeout=10) for _ in range(5)]
        # one quota across both workers: the POST took 1 of 5, then 3, 2, 1, 0 left, then refused
        assert [r.status_code for r in got] == [200, 200, 200, 200, 429]
        assert [r.headers["x-ratelimit-remaining"] for r in got] == ["3", "2", "1", "0", "0"]
        assert all(len(r.json()["items"]) == 1 for r in got[:4])  # every worker sees the same data
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
