"""The Python client (`loci.client`) against a real `loci serve`: typed calls, errors with the envelope,
cursor pages, the event stream, and retries that never write twice (through a fault-injecting proxy)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from engine.keys import create_api_key
from engine.storage import open_store
from engine.timeutil import utcnow
from loci.client import (
    AssembleRequest,
    AsyncLociClient,
    AuthenticationError,
    ConnectionFailed,
    EventItem,
    InvalidRequest,
    LociClient,
    LociClientError,
    Memory,
    MemoryCreate,
    MemoryPatch,
    NotFoundError,
    PermissionDeniedError,
    PruneRequest,
    RecallRequest,
    RetryPolicy,
    StreamedEvent,
    SummarizeRequest,
    UnexpectedAnswer,
    ValidationError,
)
from loci.client.sse import Parser
from tests.integrations.conftest import LiveServer, free_port
from tests.integrations.faulty_proxy import FaultyProxy

pytestmark = pytest.mark.slow
FAST = RetryPolicy(max_retries=3, backoff=0.01, max_backoff=0.05)


def _entity() -> str:
    return f"ent:{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client(live: LiveServer) -> Iterator[LociClient]:
    with LociClient(live.url, live.key, retry=FAST) as c:
        yield c


def test_importing_the_client_loads_no_model_or_web_framework() -> None:
    code = (
        "import sys, loci.client\n"
        "heavy = ('torch', 'faiss', 'sentence_transformers', 'transformers', 'litestar', 'uvicorn', 'sqlite3')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_memories_round_trip_typed(client: LociClient) -> None:
    entity = _entity()
    made = client.create_memory(
        MemoryCreate(type="note", text="Alice likes tea", entity_id=entity, tags=["a"])
    )
    assert isinstance(made, Memory) and made.memory_id.startswith("mem_")
    assert client.get_memory(made.memory_id) == made
    changed = client.update_memory(made.memory_id, MemoryPatch(tags=["b"], archived=True))
    assert changed.tags == ["b"] and changed.archived
    batch = client.create_memories(
        [MemoryCreate(type="event", text=f"e{i}", entity_id=entity) for i in range(5)]
    )
    assert len(batch) == 5
    assert client.delete_memory(made.memory_id).deleted
    assert [m.text for m in client.iter_memories(entity_id=entity, page_size=2, sort="timestamp_asc")] == [
        f"e{i}" for i in range(5)
    ]
    page = client.list_memories(entity_id=entity, page_size=2)
    assert len(page.items) == 2 and page.next_cursor
    # a misspelt filter listed the whole org (the server ignores a query parameter it does not know)
    with pytest.raises(TypeError, match="'entity'"):
        client.list_memories(entity=entity)
    with pytest.raises(TypeError, match="'entityid'"):
        next(client.iter_memories(entityid=entity))


def test_assemble_and_recall(client: LociClient) -> None:
    entity = _entity()
    client.assemble(AssembleRequest(entity_id=entity, turn="I live in Paris"))
    moved = client.assemble(AssembleRequest(entity_id=entity, turn="I moved to Berlin"))
    assert [u.action for u in moved.extracted.upserts] == ["UPSERTED", "SUPERSEDED"]
    asked = client.assemble(AssembleRequest(entity_id=entity, turn="Where do I live?"))
    assert any("Berlin" in line for line in asked.context.facts)
    found = client.recall(RecallRequest(query="Berlin", entity_id=entity))
    assert found.matches and "Berlin" in found.matches[0].text


def test_summarize_and_prune_as_an_agent(client: LociClient) -> None:
    entity = _entity()
    client.assemble(AssembleRequest(entity_id=entity, turn="I live in Paris."), agent="a1")
    client.assemble(AssembleRequest(entity_id=entity, turn="I live in Rome."), agent="a2")
    mine = client.summarize(SummarizeRequest(entity_id=entity), agent="a1").summary
    assert "Paris" in mine and "Rome" not in mine
    dry = client.prune(PruneRequest(entity_id=entity, types=["event"]), agent="a2")
    assert dry.count == 1  # a2's turn, not a1's


def test_errors_are_typed_and_carry_the_envelope(client: LociClient, live: LiveServer) -> None:
    with pytest.raises(NotFoundError) as missing:
        client.get_memory("mem_nope")
    assert missing.value.status == 404 and missing.value.envelope.error == "not_found"
    assert missing.value.envelope.request_id.startswith("req_")
    with pytest.raises(ValidationError) as bad:
        client.create_memory(MemoryCreate(type="note", text="x", tags=["t" * 65]))
    assert bad.value.envelope.details["field"] == "tags[0]"
    with (
        LociClient(live.url, live.make_key(scopes=("read",)), retry=FAST) as reader,
        pytest.raises(PermissionDeniedError, match="write"),
    ):
        reader.create_memory(MemoryCreate(type="note", text="x"))


def test_a_memory_id_is_one_path_segment(client: LociClient) -> None:
    entity = _entity()
    kept = client.create_memory(MemoryCreate(type="note", text="kept", entity_id=entity))
    odd = ["x/../" + kept.memory_id, "../health", "..", ".", kept.memory_id + "?x=1", kept.memory_id + "#x"]
    for memory_id in odd:
        with pytest.raises(NotFoundError):
            client.get_memory(memory_id)
        with pytest.raises(NotFoundError):
            client.update_memory(memory_id, MemoryPatch(archived=True))
        with pytest.raises(NotFoundError):
            client.delete_memory(memory_id)
    assert client.get_memory(kept.memory_id) == kept
    with pytest.raises(NotFoundError, match=r"memory '\.\.' not found"):
        client.get_memory("..")
    with pytest.raises(ValueError, match="empty"):
        client.delete_memory("")


def test_an_answer_of_another_shape_is_a_client_error() -> None:
    health = httpx.MockTransport(lambda r: httpx.Response(200, json={"status": "ok"}))
    with (
        LociClient("http://loci.test", "loci_x", transport=health) as c,
        pytest.raises(UnexpectedAnswer) as bad,
    ):
        c.get_memory("mem_1")
    assert bad.value.status == 200 and "Memory" in str(bad.value)
    page = httpx.MockTransport(lambda r: httpx.Response(200, text="<html>a login page</html>"))

    async def run() -> None:
        async with AsyncLociClient("http://loci.test", "loci_x", transport=page) as c:
            with pytest.raises(UnexpectedAnswer):
                await c.list_memories()

    asyncio.run(run())
    parser = Parser()
    for line in ("id: 7", "data: {}"):
        parser.feed(line)
    with pytest.raises(UnexpectedAnswer, match="EventItem"):
        parser.feed("")
    # the event stream from another server ended at once, with no event and no error
    with LociClient("http://loci.test", "loci_x", transport=page) as c, pytest.raises(UnexpectedAnswer):
        next(c.stream_events(max_events=1))

    async def stream() -> None:
        async with AsyncLociClient("http://loci.test", "loci_x", transport=page) as c:
            with pytest.raises(UnexpectedAnswer, match="not an event stream"):
                await anext(c.stream_events(max_events=1))

    asyncio.run(stream())


def test_header_values_are_sent_as_utf8_and_control_characters_refused(
    client: LociClient, live: LiveServer
) -> None:
    """A non-ASCII agent or Idempotency-Key crashed inside httpx (UnicodeEncodeError): they are sent as
    UTF-8, which the server reads and round-trips. A control character (a header split by CR or LF, a NUL)
    raises InvalidRequest before any request, not a LocalProtocolError retried into ConnectionFailed."""
    entity = _entity()
    draft = MemoryCreate(type="note", text="from the café", entity_id=entity)
    made = client.create_memory(draft, agent="café", idempotency_key="clé-🎉")
    assert made.agent_id == "café"
    assert client.create_memory(draft, agent="café", idempotency_key="clé-🎉") == made  # the key's replay
    assert [m.memory_id for m in client.iter_memories(entity_id=entity, agent="café")] == [made.memory_id]
    assert client.list_memories(entity_id=entity, agent="cafe").items == []
    with LociClient(live.url, "loci_clé", retry=FAST) as stranger, pytest.raises(AuthenticationError):
        stranger.list_memories()
    with pytest.raises(ValidationError):  # a cursor is ASCII: the server refuses it, as it should
        next(client.stream_events(after="café", timeout=5))

    async def run() -> None:
        async with AsyncLociClient(live.url, live.key, retry=FAST) as c:
            mine = await c.create_memory(draft, agent="エージェント", idempotency_key="🔑")
            assert mine.agent_id == "エージェント" and mine.memory_id != made.memory_id
            with pytest.raises(InvalidRequest, match="X-Service-Agent"):
                await c.create_memory(draft, agent="a\nb")

    asyncio.run(run())

    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    transport = httpx.MockTransport(answer)
    for bad in ("a\nb", "a\r\nX-Evil: 1", "a\x00", "\t", "a\x7f", "a\x85", "\ud800"):
        with LociClient("http://loci.test", "loci_x", retry=FAST, transport=transport) as c:
            with pytest.raises(InvalidRequest, match="X-Service-Agent"):
                c.create_memory(draft, agent=bad)
            with pytest.raises(InvalidRequest, match="Idempotency-Key"):
                c.delete_memory("mem_1", idempotency_key=bad)
            with pytest.raises(InvalidRequest, match="Last-Event-ID"):
                next(c.stream_events(after=bad))
        with pytest.raises(InvalidRequest, match="API key") as refused:
            LociClient("http://loci.test", f"loci_{bad}", transport=transport)
        assert bad not in str(refused.value)  # the message names no key
    assert sent == []


def test_a_dropped_answer_is_retried_without_a_second_write(live: LiveServer) -> None:
    proxy = FaultyProxy(urlparse(live.url).port or 0, ["drop"])
    entity = _entity()
    try:
        with LociClient(proxy.url, live.key, retry=FAST) as c:
            made = c.create_memory(MemoryCreate(type="note", text="written once", entity_id=entity))
    finally:
        proxy.close()
    assert len(proxy.requests) == 2  # the first answer was lost; the retry carried the same key
    keys = {
        line
        for r in proxy.requests
        for line in r.split(b"\r\n")
        if line.lower().startswith(b"idempotency-key")
    }
    assert len(keys) == 1
    with LociClient(live.url, live.key) as c:
        stored = list(c.iter_memories(entity_id=entity))
    assert [m.memory_id for m in stored] == [made.memory_id]


def test_429_and_503_are_retried(live: LiveServer) -> None:
    proxy = FaultyProxy(urlparse(live.url).port or 0, ["429", "503"])
    try:
        with LociClient(proxy.url, live.key, retry=FAST) as c:
            assert c.health().status == "ok"
    finally:
        proxy.close()
    assert len(proxy.requests) == 3


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    """The HTTP-date form of Retry-After was ignored: the client waited its own backoff instead."""
    policy = RetryPolicy(max_retries=3, backoff=1.0, max_backoff=8.0)
    assert policy.delay(0, "2") == 2.0 and policy.delay(0, "3600") == 60.0
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=10), usegmt=True)
    assert 8.0 < policy.delay(0, soon) <= 10.0
    assert policy.delay(0, "Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert 0.5 <= policy.delay(0, "soon") <= 1.0


def test_a_retry_after_or_a_policy_that_is_no_number_raises_no_foreign_error() -> None:
    """`Retry-After: NaN` (a proxy's arithmetic on a missing value) made time.sleep raise ValueError,
    and max_retries=-1 an AssertionError: neither is a LociClientError, and neither was a request's fault."""
    policy = RetryPolicy(max_retries=3, backoff=1.0, max_backoff=8.0)
    for value in ("NaN", "nan", "inf", "-Infinity"):  # the backoff, as the TypeScript client waits
        assert 0.5 <= policy.delay(0, value) <= 1.0, value
    healthy = {"status": "ok", "now": "2026-01-01T00:00:00Z"}
    answers = iter([httpx.Response(429, headers={"Retry-After": "NaN"}), httpx.Response(200, json=healthy)])
    transport = httpx.MockTransport(lambda r: next(answers))
    with LociClient("http://loci.test", "loci_x", retry=FAST, transport=transport) as c:
        assert c.health().status == "ok"
    bad: list[Callable[[], RetryPolicy]] = [
        lambda: RetryPolicy(max_retries=-1),
        lambda: RetryPolicy(backoff=float("nan")),
        lambda: RetryPolicy(max_backoff=-1.0),
    ]
    for make in bad:
        with pytest.raises(ValueError, match="must be"):
            make()


def test_connection_refused_after_retries() -> None:
    with (
        LociClient(f"http://127.0.0.1:{free_port()}", "loci_x", retry=FAST) as c,
        pytest.raises(ConnectionFailed),
    ):
        c.health()


def test_event_pages_and_stream(client: LociClient) -> None:
    entity = _entity()
    for i in range(3):
        client.create_memory(MemoryCreate(type="note", text=f"n{i}", entity_id=entity))
    pages = list(client.iter_events(entity_id=entity, limit=2))
    assert [e.type for e in pages] == ["memory.created"] * 3 and all(isinstance(e, EventItem) for e in pages)
    streamed = list(client.stream_events(entity_id=entity, max_events=3, timeout=20))
    assert [e.item.event_id for e in streamed] == [e.event_id for e in pages]
    resumed = list(client.stream_events(entity_id=entity, after=streamed[0].cursor, max_events=2, timeout=20))
    assert [e.item.event_id for e in resumed] == [e.event_id for e in pages[1:]]


# --- the stream's ends: the caller's (max_events, timeout) or another, which is resumed ------------------
class EventServer:
    """A fake server of the event stream (an httpx transport handler): each request gets the next step of
    `script`, a list of event numbers sent as a whole answer the server then ends, or an error status.
    `delay`: seconds each answer takes."""

    def __init__(self, script: list[list[int] | int], *, delay: float = 0.0) -> None:
        self.script = list(script)
        self.delay = delay
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.script.pop(0) if self.script else []
        time.sleep(self.delay)
        if isinstance(step, int):
            envelope = {"error": "unauthorized", "message": "the API key was revoked", "request_id": "req_1"}
            return httpx.Response(step, json=envelope)
        body = "retry: 1000\n: connected\n\n" + "".join(_frame(n) for n in step)
        return httpx.Response(200, headers={"Content-Type": "text/event-stream"}, text=body)

    def last_ids(self) -> list[str | None]:
        return [r.headers.get("Last-Event-ID") for r in self.requests]


def _frame(n: int) -> str:
    item: dict[str, Any] = {"event_id": f"evt_{n}", "type": "memory.created", "at": "2026-01-01T00:00:00Z"}
    item.update(memory_id=None, entity_id=None, data={})
    return f"id: c{n}\nevent: memory.created\ndata: {json.dumps(item)}\n\n"


def _sync_stream(server: EventServer, got: list[str], **options: Any) -> None:
    with LociClient("http://loci.test", "loci_x", retry=FAST, transport=httpx.MockTransport(server)) as c:
        got.extend(e.item.event_id for e in c.stream_events(**options))


def _async_stream(server: EventServer, got: list[str], **options: Any) -> None:
    async def run() -> None:
        transport = httpx.MockTransport(server)
        async with AsyncLociClient("http://loci.test", "loci_x", retry=FAST, transport=transport) as c:
            async for e in c.stream_events(**options):
                got.append(e.item.event_id)

    asyncio.run(run())


STREAMS = pytest.mark.parametrize("stream", [_sync_stream, _async_stream], ids=["sync", "async"])


@STREAMS
def test_a_stream_the_server_ends_is_resumed_after_the_last_event_seen(stream: Any) -> None:
    """A server told to stop ends its streams; the client resumes with Last-Event-ID as after a dropped
    connection, and a revoked key's stream (which the server also ends) raises its 401 on the resume."""
    server = EventServer([[1, 2], [3], 401])
    got: list[str] = []
    with pytest.raises(AuthenticationError, match="revoked"):
        stream(server, got)
    assert got == ["evt_1", "evt_2", "evt_3"]
    assert server.last_ids() == [None, "c2", "c3"]


@STREAMS
def test_a_resumed_stream_asks_for_what_is_left_of_max_events_and_timeout(stream: Any) -> None:
    server = EventServer([[1], [2, 3]])
    got: list[str] = []
    stream(server, got, max_events=3, timeout=30)
    assert got == ["evt_1", "evt_2", "evt_3"]
    first, second = (r.url.params for r in server.requests)
    assert (first["max_events"], float(first["timeout"])) == ("3", 30.0)
    assert second["max_events"] == "2" and 0 < float(second["timeout"]) < 30
    assert server.last_ids() == [None, "c1"]


@STREAMS
def test_a_stream_at_its_max_events_or_timeout_is_over(stream: Any) -> None:
    server = EventServer([[1, 2], [3]])
    got: list[str] = []
    stream(server, got, max_events=2)
    assert got == ["evt_1", "evt_2"] and len(server.requests) == 1
    late = EventServer([[1], [2]], delay=0.2)  # the server ends it once the timeout has passed
    got = []
    stream(late, got, timeout=0.1)
    assert got == ["evt_1"] and len(late.requests) == 1


@STREAMS
def test_a_stream_that_keeps_ending_without_an_event_is_a_connection_failure(stream: Any) -> None:
    server = EventServer([])
    with pytest.raises(ConnectionFailed, match="ended it before max_events or timeout"):
        stream(server, [], after="c9")
    assert server.last_ids() == ["c9"] * (FAST.max_retries + 1)


class RawServer(socketserver.ThreadingTCPServer):
    """A TCP server whose `answer` gets each connection once its request arrived; `connections` counts them."""

    daemon_threads = True

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.answer = answer
        self.connections = 0
        super().__init__(("127.0.0.1", 0), RawHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


class RawHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        assert isinstance(self.server, RawServer)
        self.server.connections += 1
        self.request.recv(65536)
        self.server.answer(self.request)


def _silent(conn: socket.socket) -> None:
    conn.recv(1)  # no answer: wait for the client to leave


def _slow_body(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n: hi\n\n")
    time.sleep(1.0)  # five times the client's timeout: events may be far apart
    conn.sendall(_frame(1).encode())
    conn.recv(1)


def _first_event_sync(url: str) -> object:
    """The first event of the stream, or what it raised; a hang fails the test instead of blocking it."""
    out: list[object] = []

    def run() -> None:
        with LociClient(url, "loci_x", timeout=0.2, retry=FAST) as c:
            try:
                out.append(next(c.stream_events()))
            except LociClientError as exc:
                out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    assert out, "the stream still waits"
    return out[0]


def _first_event_async(url: str) -> object:
    async def run() -> object:
        async with AsyncLociClient(url, "loci_x", timeout=0.2, retry=FAST) as c:
            try:
                return await anext(c.stream_events())
            except LociClientError as exc:
                return exc

    async def bounded() -> object:
        return await asyncio.wait_for(run(), 10)

    try:
        return asyncio.run(bounded())
    except TimeoutError:
        pytest.fail("the stream still waits")


FIRST_EVENT = pytest.mark.parametrize(
    "first_event", [_first_event_sync, _first_event_async], ids=["sync", "async"]
)


@FIRST_EVENT
def test_a_stream_whose_server_never_answers_times_out_and_is_retried(first_event: Any) -> None:
    """A server that accepts the stream's connection and never answers left the client waiting for its
    headers forever: the wait is the client's timeout, then the stream is resumed as after a drop."""
    server = RawServer(_silent)
    try:
        failed = first_event(server.url)
    finally:
        server.close()
    assert isinstance(failed, ConnectionFailed) and "ReadTimeout" in str(failed), failed
    assert server.connections == FAST.max_retries + 1


@FIRST_EVENT
def test_a_streams_body_has_no_read_timeout(first_event: Any) -> None:
    """The client's timeout bounds the wait for the stream's headers, not for its events."""
    server = RawServer(_slow_body)
    try:
        event = first_event(server.url)
    finally:
        server.close()
    assert isinstance(event, StreamedEvent) and event.item.event_id == "evt_1", event
    assert server.connections == 1


def test_a_revoked_keys_stream_raises_its_401(live: LiveServer) -> None:
    """Against `loci serve`: the server ends the stream of a key revoked while it is open; the client's
    resume is refused with 401, raised as AuthenticationError, not a silent end."""
    store = open_store(str(live.data_dir))
    try:
        key, secret = create_api_key(store, "dev", ("read", "write"))
        with LociClient(live.url, secret, retry=FAST) as c:
            c.create_memory(MemoryCreate(type="note", text="before the revocation", entity_id=_entity()))
            events = c.stream_events()
            next(events)  # the stream is open
            store.revoke_api_key(key.key_id, utcnow())
            with pytest.raises(AuthenticationError):
                for _ in events:
                    pass
    finally:
        store.close()


def test_events_of_one_memory(client: LociClient, live: LiveServer) -> None:
    """`memory_id` selects one memory's events (its history), in pages and in the stream, as REST does."""
    entity = _entity()
    kept, other = (client.create_memory(MemoryCreate(type="note", text=t, entity_id=entity)) for t in "ab")
    client.update_memory(kept.memory_id, MemoryPatch(tags=["x"]))
    page = client.list_events(memory_id=kept.memory_id)
    assert [(e.type, e.memory_id) for e in page.items] == [
        ("memory.created", kept.memory_id),
        ("memory.updated", kept.memory_id),
    ]
    assert [e.event_id for e in client.iter_events(memory_id=kept.memory_id, limit=1)] == [
        e.event_id for e in page.items
    ]
    streamed = client.stream_events(memory_id=other.memory_id, max_events=1, timeout=20)
    assert [e.item.memory_id for e in streamed] == [other.memory_id]

    async def run() -> None:
        async with AsyncLociClient(live.url, live.key, retry=FAST) as c:
            listed = await c.list_events(memory_id=other.memory_id)
            assert [e.memory_id for e in listed.items] == [other.memory_id]
            walked = [e.event_id async for e in c.iter_events(memory_id=kept.memory_id)]
            assert walked == [e.event_id for e in page.items]
            events = [e async for e in c.stream_events(memory_id=kept.memory_id, max_events=2, timeout=20)]
            assert [e.item.event_id for e in events] == walked

    asyncio.run(run())


def test_async_client(live: LiveServer) -> None:
    async def run() -> None:
        entity = _entity()
        async with AsyncLociClient(live.url, live.key, retry=FAST) as c:
            made = await c.create_memory(MemoryCreate(type="note", text="async note", entity_id=entity))
            assert (await c.get_memory(made.memory_id)).text == "async note"
            assert [m.memory_id async for m in c.iter_memories(entity_id=entity)] == [made.memory_id]
            events = [e async for e in c.stream_events(entity_id=entity, max_events=1, timeout=20)]
            assert events[0].item.memory_id == made.memory_id
            with pytest.raises(NotFoundError):
                await c.get_memory("mem_nope")

    asyncio.run(run())


def test_readme_example_runs(live: LiveServer) -> None:
    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "sdk_quickstart.py"
    env = {**os.environ, "LOCI_URL": live.url, "LOCI_API_KEY": live.key}  # what the example reads
    done = subprocess.run(
        [sys.executable, "-c", example.read_text()], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "Alice prefers tea" in done.stdout and "Berlin" in done.stdout
