"""Open event streams (`Accept: text/event-stream`) are capped per API key and per server process: one
more is a 429 in the error envelope with Retry-After, and a stream's slot is freed however it ends."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, cast

import anyio
import httpx
import msgspec
import pytest
from anyio.abc import TaskGroup
from litestar import Litestar
from litestar.testing import TestClient

from engine.errors import InvalidInput
from engine.storage.base import Store
from server.config import Settings
from server.event_stream import HELLO, STREAM_RETRY_AFTER, StreamSlots
from server.services import services_of
from tests.server.asgi_scope import get_scope
from tests.server.conftest import KeyMaker
from tests.server.live_server import LiveServer
from tests.server.ops_app import build_app

URL = "/v0/observability/events"
SSE = {"Accept": "text/event-stream"}


class Held:
    """One request to the app, driven like an ASGI server: `close()` disconnects the client."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.answered = anyio.Event()  # the first body bytes arrived
        self.gone = anyio.Event()  # the client disconnected
        self.finished = anyio.Event()  # the app returned

    async def close(self) -> None:
        self.gone.set()
        await self.finished.wait()

    def json(self) -> Any:
        return msgspec.json.decode(self.body)


async def request(tg: TaskGroup, app: Litestar, headers: dict[str, str], *, stall: bool = False) -> Held:
    """Start a GET of the event stream and wait for its first bytes. With `stall`, the client stops
    reading after them (the server's next send never completes until the client goes)."""
    held = Held()
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await held.gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            held.status = message["status"]
            held.headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
        elif message["type"] == "http.response.body":
            if stall and held.answered.is_set():
                await held.gone.wait()
                return
            held.body += message.get("body", b"")
            held.answered.set()

    scope = get_scope(URL, {**headers, **SSE})

    async def run() -> None:
        try:
            await app(cast(Any, scope), cast(Any, receive), cast(Any, send))
        finally:
            held.answered.set()
            held.finished.set()

    tg.start_soon(run)
    await held.answered.wait()
    return held


def run_async(test: Callable[[TaskGroup], Awaitable[None]]) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                await test(tg)
                tg.cancel_scope.cancel()

    anyio.run(main)


def assert_refused(held: Held, limit: str, cap: int) -> None:
    assert held.status == 429, held.body
    body = held.json()
    assert body["error"] == "rate_limited" and body["request_id"] == held.headers["x-request-id"]
    assert body["details"] == {"limit": limit, "max_streams": cap, "retry_after": STREAM_RETRY_AFTER}
    assert held.headers["retry-after"] == str(STREAM_RETRY_AFTER)
    assert "event streams" in body["message"]


def test_streams_are_capped_per_key_and_per_process(
    settings: Settings, store: Store, make_key: KeyMaker
) -> None:
    app = build_app(msgspec.structs.replace(settings, max_streams_per_key=2, max_streams=3), store)
    slots = services_of(cast(Any, type("R", (), {"app": app}))).streams
    a, a_too, b, c = make_key("acme"), make_key("acme"), make_key("beta"), make_key("gamma", ("read",))

    async def scenario(tg: TaskGroup) -> None:
        a1, a2 = await request(tg, app, a), await request(tg, app, a)
        assert (a1.status, a2.status) == (200, 200) and a1.body.startswith(HELLO)
        assert_refused(await request(tg, app, a), "streams_per_key", 2)
        other_key_same_org = await request(tg, app, a_too)  # the cap is per key, not per org
        assert other_key_same_org.status == 200
        assert_refused(await request(tg, app, b), "streams", 3)  # the process is full
        assert slots.open_count() == 3
        await a1.close()  # a client that goes away frees its slot
        b1 = await request(tg, app, b)
        assert b1.status == 200 and slots.open_count() == 3
        assert_refused(await request(tg, app, c), "streams", 3)
        await b1.close()
        c1 = await request(tg, app, c, stall=True)  # then stops reading: the server blocks on a send
        assert c1.status == 200
        await c1.close()
        for held in (a2, other_key_same_org):
            await held.close()
        assert slots.open_count() == 0

    run_async(scenario)


def test_by_default_a_key_holds_ten_streams(store: Store, settings: Settings, make_key: KeyMaker) -> None:
    app = build_app(settings, store)
    auth = make_key("acme")

    async def scenario(tg: TaskGroup) -> None:
        opened = [await request(tg, app, auth) for _ in range(11)]
        assert [h.status for h in opened] == [200] * 10 + [429]
        for held in opened:
            await held.close()

    run_async(scenario)


def test_a_stream_that_ends_frees_its_slot(settings: Settings, store: Store, make_key: KeyMaker) -> None:
    app = build_app(msgspec.structs.replace(settings, max_streams_per_key=1, max_streams=1), store)
    auth = make_key("acme")
    with TestClient(app) as client:
        for params in ({"timeout": 0}, {"max_events": 1, "timeout": 0}, {"timeout": 0}):
            r = client.get(URL, params=params, headers={**auth, **SSE})
            assert r.status_code == 200 and r.text.startswith(HELLO.decode())
        assert client.get(URL, headers=auth).status_code == 200  # a JSON page takes no slot


def test_no_cap_when_zero() -> None:
    slots = StreamSlots(per_key=0, total=0)
    held = [slots.acquire("k") for _ in range(300)]
    assert slots.open_count("k") == 300
    for slot in held:
        slot.release()
        slot.release()  # a second release changes nothing
    assert slots.open_count() == 0


def test_caps_from_the_environment() -> None:
    s = Settings.from_env({"LOCI_MAX_STREAMS_PER_KEY": "3", "LOCI_MAX_STREAMS": "0"})
    assert (s.max_streams_per_key, s.max_streams) == (3, 0)
    d = Settings.from_env({})
    assert (d.max_streams_per_key, d.max_streams) == (10, 100)
    for bad in ("-1", "ten", "1.5", "²"):
        with pytest.raises(InvalidInput) as err:
            Settings.from_env({"LOCI_MAX_STREAMS": bad})
        assert err.value.field == "LOCI_MAX_STREAMS"


def test_a_live_server_caps_streams_and_frees_a_closed_ones_slot(tmp_path: Path) -> None:
    """Real sockets: `loci serve` with LOCI_MAX_STREAMS_PER_KEY=2; closing a connection frees a slot."""
    with LiveServer(tmp_path, env={"LOCI_MAX_STREAMS_PER_KEY": "2"}) as server:
        headers = {"Authorization": f"Bearer {server.key('read')}", **SSE}
        url = server.url(URL)
        with ExitStack() as first_stream, ExitStack() as second_stream:
            first = first_stream.enter_context(httpx.stream("GET", url, headers=headers, timeout=30))
            second = second_stream.enter_context(httpx.stream("GET", url, headers=headers, timeout=30))
            assert first.status_code == second.status_code == 200
            chunks = [r.iter_bytes() for r in (first, second)]  # kept: a dropped iterator closes its stream
            assert all(next(c).startswith(b"retry:") for c in chunks)
            refused = httpx.get(url, headers=headers)
            assert refused.status_code == 429 and refused.headers["retry-after"] == str(STREAM_RETRY_AFTER)
            assert refused.json()["details"]["limit"] == "streams_per_key"
            first_stream.close()  # the connection closes
            status = 429
            deadline = time.monotonic() + 30  # until the server has noticed
            while status == 429 and time.monotonic() < deadline:
                status = httpx.get(url, params={"timeout": 0}, headers=headers).status_code
                time.sleep(0.05)
            assert status == 200
