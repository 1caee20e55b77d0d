"""A server told to stop (SIGTERM, SIGINT) ends its open event streams at their next poll, so its graceful
stop does not wait for the streams' clients and the app's shutdown runs (`server/stopping.py`): the app
chains a handler onto the process's own while it serves on the main thread, and nothing under
TestClient; a real `loci serve` with a stream open exits on SIGTERM, on SQLite and with two workers on
PostgreSQL, and the read it answered last is in the store."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, cast

import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient

from engine.storage import open_store
from engine.storage.base import EventQuery, Store
from engine.storage.in_memory import InMemoryStore
from server import event_stream
from server.stopping import Stopping
from tests.pg_fixture import pg_database, pg_server
from tests.server.asgi_scope import get_scope
from tests.server.conftest import KeyMaker
from tests.server.live_server import LiveServer

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below

URL = "/v0/observability/events"
#: seconds a stopped server may take to exit: far above a poll, far below "until the client leaves"
EXIT_SECONDS = 20.0


@pytest.fixture
def store() -> Iterator[Store]:
    """One store is enough in the process: stopping does not depend on it."""
    s = InMemoryStore()
    yield s
    s.close()


@contextlib.contextmanager
def recording(sig: signal.Signals) -> Iterator[list[int]]:
    """A Python handler for `sig` that records its calls (the server's own, in these tests)."""
    calls: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        calls.append(signum)

    previous = signal.signal(sig, handler)
    try:
        yield calls
    finally:
        signal.signal(sig, previous)


@contextlib.asynccontextmanager
async def serving(app: Litestar) -> AsyncIterator[None]:
    """The app's ASGI lifespan on the running loop (the main thread), as uvicorn drives it."""
    to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    task = asyncio.create_task(app(cast(Any, scope), cast(Any, to_app.get), cast(Any, from_app.put)))
    await to_app.put({"type": "lifespan.startup"})
    assert (await from_app.get())["type"] == "lifespan.startup.complete"
    try:
        yield
    finally:
        await to_app.put({"type": "lifespan.shutdown"})
        assert (await from_app.get())["type"] == "lifespan.shutdown.complete"
        await task


async def open_stream(app: Litestar, headers: dict[str, str]) -> tuple[asyncio.Task[None], asyncio.Event]:
    """GET the event stream through the app; the task ends when the app has sent the whole answer
    (the client never leaves), the event is set at its first bytes."""
    hello = asyncio.Event()
    done = asyncio.Event()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            hello.set()
            if not message.get("more_body", False):
                done.set()

    scope = get_scope(URL, headers)

    async def run() -> None:
        await app(cast(Any, scope), cast(Any, receive), cast(Any, send))
        await done.wait()

    return asyncio.create_task(run()), hello


# --- in the process ------------------------------------------------------------------------------------
def test_sigterm_ends_an_open_stream_and_reaches_the_servers_handler(
    app: Litestar, make_key: KeyMaker
) -> None:
    """The stream has no max_events and no timeout and its client never leaves: only the signal ends it."""
    headers = {**make_key("acme", ("read",)), "Accept": "text/event-stream"}
    with recording(signal.SIGTERM) as calls:
        server_handler = signal.getsignal(signal.SIGTERM)

        async def main() -> None:
            async with serving(app):
                assert signal.getsignal(signal.SIGTERM) != server_handler  # ours, in front of it
                stream, hello = await open_stream(app, headers)
                await asyncio.wait_for(hello.wait(), EXIT_SECONDS)
                signal.raise_signal(signal.SIGTERM)
                await asyncio.wait_for(stream, EXIT_SECONDS)
                assert calls == [signal.SIGTERM]  # the server's own handling, unchanged
            assert signal.getsignal(signal.SIGTERM) == server_handler  # put back at shutdown

        asyncio.run(main())


def test_sigint_is_chained_and_put_back_too(app: Litestar) -> None:
    with recording(signal.SIGINT):
        server_handler = signal.getsignal(signal.SIGINT)

        async def main() -> None:
            async with serving(app):
                assert signal.getsignal(signal.SIGINT) != server_handler
            assert signal.getsignal(signal.SIGINT) == server_handler

        asyncio.run(main())


def test_a_handler_that_is_not_python_is_left_alone() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:

        async def main() -> None:
            async with Stopping().lifespan():
                assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN

        asyncio.run(main())
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_under_testclient_nothing_is_chained(app: Litestar, make_key: KeyMaker) -> None:
    """TestClient runs the app on a thread of its own: no handler is touched, and the app serves."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    with TestClient(app) as client:
        assert {sig: signal.getsignal(sig) for sig in before} == before
        r = client.get(URL, params={"timeout": 0}, headers={**make_key(), "Accept": "text/event-stream"})
        assert r.status_code == 200 and r.text.startswith("retry:")
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_a_sleeping_stream_wakes_when_the_server_stops() -> None:
    """Between polls the stream waits; the mark wakes it at once (a poll of an hour would hang the test)."""
    stopping = Stopping()

    async def main() -> list[bytes]:
        chunks: list[bytes] = []
        async with stopping.lifespan():
            frames = event_stream.stream(
                lambda after, limit: [], after=None, limit=10, poll=3600.0, stopping=stopping
            )
            chunks.append(await anext(frames))
            # from another thread, as a signal handler or a server might
            threading.Timer(0.2, stopping.set).start()
            async with asyncio.timeout(EXIT_SECONDS):
                chunks.extend([chunk async for chunk in frames])
        return chunks

    assert asyncio.run(main()) == [event_stream.HELLO]


def test_an_app_started_again_serves_again() -> None:
    """The mark of the last shutdown is cleared at the next start: a new stream is not ended at once."""
    stopping = Stopping()

    async def main() -> None:
        async with stopping.lifespan():
            pass
        assert stopping.is_set()
        async with stopping.lifespan():
            assert not stopping.is_set()

    asyncio.run(main())


# --- a real `loci serve` ---------------------------------------------------------------------------------
def _logged_reads(store: Store, org: str = "acme") -> list[str]:
    events = store.list_events(org, EventQuery(type="context.assembled", limit=500))
    return [str(e.data["request_id"]) for _, e in events]


def _stop_with_a_stream_open(server: LiveServer) -> str:
    """Open a stream, answer a read, SIGTERM the server's main process; the server must exit and the
    stream end cleanly. Returns the read's request id."""
    key = server.key("read,write")
    auth = {"Authorization": f"Bearer {key}"}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=EXIT_SECONDS * 2)
    try:
        conn.request("GET", URL, headers={**auth, "Accept": "text/event-stream"})
        stream = conn.getresponse()
        assert stream.status == 200
        assert stream.readline().startswith(b"retry:")  # the stream is open
        read = httpx.post(
            server.url("/v0/context/assemble"),
            json={
                "entity_id": "ent:user",
                "turn": "what next?",
                "ingest": {"extract": False, "store_turn": "none"},
            },
            headers=auth,
            timeout=60,
        )
        assert read.status_code == 200, read.text
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGTERM)  # the main process, as a process manager would
        try:
            server.proc.wait(timeout=EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"loci serve did not exit on SIGTERM with a stream open:\n{server.log_path.read_text()[-3000:]}"
            )
        stream.read()  # the server ended the answer whole (a cut one raises IncompleteRead)
    finally:
        conn.close()
    log = server.log_path.read_text()
    assert "Application shutdown complete" in log, log[-3000:]
    return str(read.json()["request_id"])


@pytest.mark.slow
def test_loci_serve_stops_on_sigterm_with_a_stream_open(tmp_path: Path) -> None:
    with LiveServer(tmp_path) as server:
        request_id = _stop_with_a_stream_open(server)
    store = open_store(f"sqlite:///{tmp_path}/loci.db")
    try:
        assert request_id in _logged_reads(store)
    finally:
        store.close()


@pytest.mark.integration
@pytest.mark.slow
def test_two_workers_stop_on_sigterm_with_a_stream_open(tmp_path: Path, pg_database: str) -> None:
    with LiveServer(tmp_path, database_url=pg_database, serve_args=("--workers", "2")) as server:
        request_id = _stop_with_a_stream_open(server)
        log = server.log_path.read_text()
        assert log.count("Application shutdown complete") == 2, log[-3000:]  # each worker's
    store = open_store(pg_database)
    try:
        assert request_id in _logged_reads(store)
    finally:
        store.close()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.integration
@pytest.mark.slow
def test_workers_stop_when_the_supervisor_is_killed_outright(tmp_path: Path, pg_database: str) -> None:
    # SIGKILL to the supervisor alone (the OOM killer, a manager that kills the main pid) left both
    # workers serving the port unsupervised; a restart could not bind it
    server = LiveServer(tmp_path, database_url=pg_database, serve_args=("--workers", "2"))
    server.start()
    assert server.proc is not None
    pgid = server.proc.pid
    try:
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=30)
        for _ in range(int(EXIT_SECONDS * 10)):
            if not _group_alive(pgid):
                break
            threading.Event().wait(0.1)
        assert not _group_alive(pgid), server.log_path.read_text()[-3000:]
        assert "Application shutdown complete" in server.log_path.read_text()  # a graceful stop
        server.start()  # the port is free again
        assert httpx.get(server.url("/v0/health"), timeout=10).status_code == 200
    finally:
        if _group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        server.stop()


def test_the_metrics_directory_of_a_killed_supervisor_is_removed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGKILL skips the supervisor's cleanup; the next `loci serve --workers N` removes what it left,
    and only that."""
    from server.asgi import counts_dir

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = tmp_path / f"loci-metrics-{gone.pid}-abc"
    stale.mkdir()
    (stale / "counter_1.db").write_bytes(b"x")
    running = tmp_path / f"loci-metrics-{os.getppid()}-def"  # a supervisor still running
    running.mkdir()
    older = tmp_path / "loci-metrics-q1w2e3"  # named without a pid: not known to be stale
    older.mkdir()
    made = Path(counts_dir())
    assert not stale.exists() and running.exists() and older.exists()
    assert made.parent == tmp_path and made.name.startswith(f"loci-metrics-{os.getpid()}-")
