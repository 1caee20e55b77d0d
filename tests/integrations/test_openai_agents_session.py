"""`loci.integrations.openai_agents.LociSession` against a real `loci serve`: the SDK's own `Runner` driving
a scripted model keeps its conversation in Loci, one event per item, read back in exact order."""

from __future__ import annotations

import asyncio
import importlib.util
import uuid
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import Agent, Model, ModelResponse, Runner, Usage, function_tool, set_tracing_disabled
from agents.memory import Session, SessionSettings, SQLiteSession
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from loci.client import APIError, AsyncLociClient, LociClient, MemoryCreate
from loci.integrations.openai_agents import LociSession
from loci.integrations.openai_agents.session import METADATA_KEY, SESSION_TAG
from loci.wire.writes import MAX_BODY_BYTES
from tests.integrations.conftest import LiveServer

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
set_tracing_disabled(True)  # no trace export (it would need the network)


class ScriptedModel(Model):
    """Answers with canned outputs, one per call, and keeps the input of each call."""

    def __init__(self, *outputs: list[Any]) -> None:
        self.outputs = list(outputs)
        self.inputs: list[Any] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(input)
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the tests run without streaming")


def say(text: str) -> list[Any]:
    return [
        ResponseOutputMessage(
            id=f"msg_{uuid.uuid4().hex[:8]}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
    ]


def call(name: str, arguments: str) -> list[Any]:
    return [
        ResponseFunctionToolCall(
            type="function_call",
            call_id="call_1",
            name=name,
            arguments=arguments,
            id="fc_1",
            status="completed",
        )
    ]


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def session_of(live: LiveServer, **kwargs: Any) -> LociSession:
    return LociSession(f"conv-{uuid.uuid4().hex[:8]}", live.url, live.key, **kwargs)


def test_it_is_a_session() -> None:
    assert isinstance(LociSession("s", "http://127.0.0.1:1", "k"), Session)


def test_the_runner_keeps_its_conversation_in_loci(live: LiveServer) -> None:
    model = ScriptedModel(call("weather", '{"city": "Paris"}'), say("It is sunny in Paris."), say("Paris."))
    agent = Agent(name="Assistant", instructions="Be brief.", model=model, tools=[weather])
    session = session_of(live, entity_id="ent:alice")

    async def run() -> tuple[Any, Any, list[Any]]:
        first = await Runner.run(agent, "What is the weather in Paris?", session=session)
        second = await Runner.run(agent, "Which city did I ask about?", session=session)
        return first, second, await session.get_items()

    first, second, items = asyncio.run(run())
    assert first.final_output == "It is sunny in Paris." and second.final_output == "Paris."
    kinds = [item.get("role") or item.get("type") for item in items]
    assert kinds == ["user", "function_call", "function_call_output", "assistant", "user", "assistant"]
    assert items[0]["content"] == "What is the weather in Paris?"
    assert items[2]["output"] == "sunny in Paris"
    # the model's second turn was given the first turn, read back from Loci
    assert model.inputs[-1] == items[:5]

    # each item is an event of the entity, in the session's tag, with its text as a line of transcript
    with LociClient(live.url, live.key) as client:
        events = list(client.iter_memories(entity_id="ent:alice", tag=session.tag, sort="timestamp_asc"))
    assert {m.type for m in events} == {"event"} and len(events) == 6
    assert sorted(m.text for m in events)[:2] == ["Assistant: It is sunny in Paris.", "Assistant: Paris."]
    assert 'Tool call weather({"city": "Paris"})' in {m.text for m in events}
    assert "User: What is the weather in Paris?" in {m.text for m in events}


class Counting(httpx.AsyncHTTPTransport):
    """A transport that keeps the method and path of every request it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return await super().handle_async_request(request)


def test_order_is_exact_when_items_share_a_timestamp(live: LiveServer) -> None:
    session = session_of(live)
    batches = [
        [{"role": "user", "content": f"b{b} m{i}"} for i in range(n)] for b, n in enumerate([450, 3, 1, 250])
    ]
    everything = [item for batch in batches for item in batch]

    async def run() -> None:
        for batch in batches:
            await session.add_items(batch)  # type: ignore[arg-type]
        assert await session.get_items() == everything
        for limit in (1, 2, 4, 5, 250, 251, 255, 704, 1000):
            assert await session.get_items(limit) == everything[-limit:]
        assert await session.get_items(0) == []

    asyncio.run(run())


def test_the_sequence_number_decides_the_order(live: LiveServer) -> None:
    """Items that share a timestamp (stored so by two writers at once, or by earlier versions, which stamped
    a batch alike) are ordered by memory id in the listing. Stored here with memory ids in the reverse of
    their sequence, they still read back in sequence order, read past in full pages."""
    counting = Counting()
    session = LociSession(
        f"conv-{uuid.uuid4().hex[:8]}", client=AsyncLociClient(live.url, live.key, transport=counting)
    )
    stamp = datetime.now(UTC)
    drafts = [
        MemoryCreate(
            type="event",
            text=f"User: m{seq}",
            metadata={
                METADATA_KEY: {
                    "session_id": session.session_id,
                    "seq": seq,
                    "item": {"role": "user", "content": f"m{seq}"},
                }
            },
            tags=[SESSION_TAG, session.tag],
            timestamp=stamp,
        )
        for seq in reversed(range(300))
    ]
    with LociClient(live.url, live.key) as client:
        client.create_memories(drafts[:200])
        client.create_memories(drafts[200:])
    expected = [{"role": "user", "content": f"m{seq}"} for seq in range(300)]

    async def run() -> None:
        assert await session.get_items() == expected
        counting.sent.clear()
        assert await session.get_items(1) == expected[-1:]
        assert len(counting.sent) == 3  # pages of 2, 200 and 200 memories
        for limit in (1, 3, 200, 201):
            assert await session.get_items(limit) == expected[-limit:]
        await session.add_items([{"role": "user", "content": "next"}])
        assert await session.get_items(2) == [expected[-1], {"role": "user", "content": "next"}]
        assert await session.pop_item() == {"role": "user", "content": "next"}
        assert await session.pop_item() == expected[-1]

    asyncio.run(run())


def test_the_tail_of_a_long_batch_is_read_in_one_list(live: LiveServer) -> None:
    """After one add_items of 400 items, each call reads the session's tail with one list, as a SQLite
    session reads its last rows."""
    counting = Counting()
    session = LociSession(
        f"conv-{uuid.uuid4().hex[:8]}", client=AsyncLociClient(live.url, live.key, transport=counting)
    )
    items = [{"role": "user", "content": f"m{i}"} for i in range(400)]
    one = {"role": "user", "content": "one more"}

    async def counted(call: Awaitable[Any]) -> tuple[Any, list[str]]:
        counting.sent.clear()
        return await call, list(counting.sent)

    async def run() -> None:
        _, sent = await counted(session.add_items(items))  # type: ignore[arg-type]
        assert sent == ["GET /v0/memories", "POST /v0/memories", "POST /v0/memories"]
        _, sent = await counted(session.add_items([one]))  # type: ignore[list-item]
        assert sent == ["GET /v0/memories", "POST /v0/memories"]
        tail, sent = await counted(session.get_items(3))
        assert tail == [*items[-2:], one] and sent == ["GET /v0/memories"]
        popped, sent = await counted(session.pop_item())
        assert popped == one and sent[0] == "GET /v0/memories" and sent[1].startswith("DELETE ")
        assert len(sent) == 2
        popped, sent = await counted(session.pop_item())
        assert popped == items[-1] and len(sent) == 2
        assert await session.get_items() == items[:-1]

    asyncio.run(run())


def test_items_larger_than_one_request_are_added_in_several(live: LiveServer) -> None:
    """The items of one add_items whose memories outgrow the server's body limit (each keeps its item whole)
    were one POST the server refused (413): they go in as many as the limit needs, in order."""
    counting = Counting()
    session = LociSession(
        f"conv-{uuid.uuid4().hex[:8]}", client=AsyncLociClient(live.url, live.key, transport=counting)
    )
    items = [{"role": "user", "content": f"m{i} " + "x" * 100_000} for i in range(110)]

    async def run() -> None:
        await session.add_items(items)  # type: ignore[arg-type]
        assert counting.sent.count("POST /v0/memories") == 2
        assert await session.get_items() == items

    asyncio.run(run())


def test_an_add_that_fails_adds_none_of_its_items(live: LiveServer) -> None:
    """An add_items sent in several requests whose later one failed (an item alone over the server's body
    limit) left the earlier ones stored: the user's turn without its tool's output. The SDK's own sessions
    add all items in one transaction."""
    session = session_of(live)
    before = {"role": "user", "content": "before"}
    turn = [{"role": "user", "content": "read the file"}]
    output = {"type": "function_call_output", "call_id": "c1", "output": "x" * MAX_BODY_BYTES}

    async def run() -> None:
        await session.add_items([before])  # type: ignore[list-item]
        with pytest.raises(APIError) as failed:
            await session.add_items([*turn, output])  # type: ignore[list-item]
        assert failed.value.status == 413
        assert await session.get_items() == [before]
        await session.add_items(turn)  # type: ignore[arg-type]
        assert await session.get_items() == [before, *turn]

    asyncio.run(run())


def test_pop_item_and_clear_session(live: LiveServer) -> None:
    session = session_of(live, session_settings=SessionSettings(limit=2))
    other = session_of(live)
    items = [{"role": "user", "content": f"m{i}"} for i in range(5)]

    async def run() -> None:
        assert await session.pop_item() is None
        await session.add_items(items)  # type: ignore[arg-type]
        await other.add_items(items[:1])  # type: ignore[arg-type]
        assert await session.get_items() == items[-2:]  # the settings' limit
        assert await session.pop_item() == items[4]
        assert await session.pop_item() == items[3]
        assert await session.get_items(10) == items[:3]
        await session.add_items([{"role": "user", "content": "again"}])
        assert await session.get_items(10) == [*items[:3], {"role": "user", "content": "again"}]
        await session.clear_session()
        assert await session.get_items(10) == [] and await session.pop_item() is None
        assert await other.get_items() == items[:1]  # another session is left alone

    asyncio.run(run())


def test_settings_are_taken_as_the_sdks_own_sessions_take_them(live: LiveServer) -> None:
    """A dict of settings is coerced as SQLiteSession coerces it: the Runner reads `session_settings.limit`,
    and a dict failed on every read."""
    session = session_of(live, session_settings={"limit": 2})
    assert session.session_settings == SQLiteSession("s", session_settings={"limit": 2}).session_settings
    assert isinstance(session.session_settings, SessionSettings)
    assert session_of(live).session_settings == SQLiteSession("s").session_settings
    for bad in ({"limit": 2, "size": 3}, [("limit", 2)]):
        with pytest.raises(TypeError):
            SQLiteSession("s", session_settings=bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            session_of(live, session_settings=bad)
    items = [{"role": "user", "content": f"m{i}"} for i in range(4)]
    model = ScriptedModel(say("Noted."))
    agent = Agent(name="Assistant", instructions="Be brief.", model=model)

    async def run() -> None:
        await session.add_items(items)  # type: ignore[arg-type]
        assert await session.get_items() == items[-2:]
        assert await session.get_items(3) == items[-3:]
        await Runner.run(agent, "next", session=session)

    asyncio.run(run())
    assert model.inputs[0] == [*items[-2:], {"role": "user", "content": "next"}]


def test_a_negative_limit_reads_every_item(live: LiveServer) -> None:
    """As SQLiteSession reads it (SQLite's negative LIMIT); one in the settings recursed without end."""
    session = session_of(live, session_settings=SessionSettings(limit=-1))
    items = [{"role": "user", "content": f"m{i}"} for i in range(3)]

    async def run() -> None:
        await session.add_items(items)  # type: ignore[arg-type]
        assert await session.get_items() == items
        assert await session.get_items(-1) == items and await session.get_items(2) == items[-2:]

    asyncio.run(run())


def test_readme_example_runs(live: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCI_URL", live.url)
    monkeypatch.setenv("LOCI_API_KEY", live.key)
    spec = importlib.util.spec_from_file_location(
        "example", ROOT / "docs" / "examples" / "openai_agents_session.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = ScriptedModel(say("Noted: sencha."), say("Your favourite tea is sencha."))
    asyncio.run(example.main(model))
    assert "sencha" in str(model.inputs[-1][0]["content"])
    with LociClient(live.url, live.key) as client:
        assert [
            m.text
            for m in client.iter_memories(
                entity_id="ent:alice", tag="oa-session:conversation-42", sort="timestamp_asc"
            )
        ] == [
            "User: My favourite tea is sencha.",
            "Assistant: Noted: sencha.",
            "User: What is my favourite tea?",
            "Assistant: Your favourite tea is sencha.",
        ]
