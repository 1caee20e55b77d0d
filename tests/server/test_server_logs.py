"""What the served process writes to its log: never a query string (an API key sent as `?api_key=`, a
search word, a cursor). `loci serve` writes one access line per request, Loci's own; the ASGI server's
request lines (uvicorn's, where a deployment turns them on) keep the line and drop the query."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest

from server.observability import REDACTED_QUERY, QueryRedactor, redact_target
from tests.pg_fixture import pg_database, pg_server
from tests.server.live_server import LiveServer

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below

SECRET_WORD = "Zanzibar7"


def _log_after(server: LiveServer, marker: str) -> str:
    """The server's log once it holds `marker` (lines are written as responses complete)."""
    deadline = time.monotonic() + 30
    text = ""
    while time.monotonic() < deadline:
        text = server.log_path.read_text(errors="replace")
        if marker in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{marker!r} never reached the log:\n{text[-3000:]}")


def _check_queries_stay_out_of_the_log(server: LiveServer) -> None:
    key = server.key("read,write")
    r = httpx.get(server.url("/v0/keys/self"), params={"api_key": key})
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    auth = {"Authorization": f"Bearer {key}"}
    assert httpx.get(server.url("/v0/memories"), params={"q": SECRET_WORD}, headers=auth).status_code == 200
    r = httpx.get(server.url(f"/v0/nowhere?token={SECRET_WORD}"))
    assert r.status_code == 404
    text = _log_after(server, '"route":"unmatched","status":404')
    assert '"route":"/v0/keys/self","status":401' in text and '"route":"/v0/memories","status":200' in text
    assert "HTTP/1.1" not in text  # one line per request, Loci's own: uvicorn's request lines are off
    assert key not in text and key.removeprefix("loci_") not in text
    assert SECRET_WORD not in text


def test_a_key_in_the_query_string_is_not_logged(tmp_path: Path) -> None:
    with LiveServer(tmp_path) as server:  # SQLite (the in-memory store cannot share keys with `loci keys`)
        _check_queries_stay_out_of_the_log(server)


@pytest.mark.integration
def test_a_key_in_the_query_string_is_not_logged_by_postgres_workers(
    tmp_path: Path, pg_database: str
) -> None:
    """Two workers: each process builds its app through `server.asgi:create`, the uvicorn factory."""
    with LiveServer(tmp_path, database_url=pg_database, serve_args=("--workers", "2")) as server:
        _check_queries_stay_out_of_the_log(server)


def test_the_redactor_keeps_the_line_and_drops_the_query() -> None:
    def record(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, msg, args, None)

    redactor = QueryRedactor()
    line = record(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/v0/keys/self?api_key=loci_x", "1.1", 401
    )
    assert redactor.filter(line)
    assert line.getMessage() == f'127.0.0.1:5000 - "GET /v0/keys/self{REDACTED_QUERY} HTTP/1.1" 401'
    ws = record('%s - "WebSocket %s" 403', "127.0.0.1:5000", "/mcp?loci_secret")
    assert redactor.filter(ws) and ws.getMessage() == f'127.0.0.1:5000 - "WebSocket /mcp{REDACTED_QUERY}" 403'
    plain = record('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/v0/health", "1.1", 200)
    assert redactor.filter(plain) and plain.getMessage() == '127.0.0.1:5000 - "GET /v0/health HTTP/1.1" 200'
    assert redact_target("/a?b=c?d") == f"/a{REDACTED_QUERY}" and redact_target("/a") == "/a"
