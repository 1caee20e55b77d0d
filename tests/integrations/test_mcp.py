"""The MCP server with the official SDK's own client, over both transports, against a real `loci serve`:
streamable HTTP at /mcp and stdio (`loci mcp` as a subprocess pointed at the server)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import INVALID_PARAMS, TextResourceContents

from tests.integrations.conftest import LiveServer, serve_env

pytestmark = pytest.mark.slow
TOOLS = {"remember", "recall", "assemble_context", "forget", "list_memories", "get_memory"}


def _entity() -> str:
    return f"ent:{uuid.uuid4().hex[:10]}"


def _http(live: LiveServer, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return Client(streamable_http_client(f"{live.url}/mcp", http_client=http))


def _stdio(live: LiveServer, key: str) -> Client:
    loci = str(Path(sys.executable).with_name("loci"))
    return Client(
        StdioServerParameters(command=loci, args=["mcp", "--url", live.url, "--key", key], env=serve_env())
    )


def _run(client: Client, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with client:
            await body(client)

    asyncio.run(main())


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    out: dict[str, Any] = json.loads(result.content[0].text)
    return out


def _error(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


async def _walkthrough(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= TOOLS
    assert tools["recall"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["remember"].description and "supersede" in tools["remember"].description
    entity = _entity()
    first = _data(await client.call_tool("remember", {"text": "I live in Paris", "entity_id": entity}))
    assert [u["action"] for u in first["upserts"]] == ["UPSERTED", "UPSERTED"]
    moved = _data(await client.call_tool("remember", {"text": "I moved to Berlin", "entity_id": entity}))
    assert [u["action"] for u in moved["upserts"]] == ["UPSERTED", "SUPERSEDED"]
    context = _data(
        await client.call_tool(
            "assemble_context", {"turn": "Where do I live?", "entity_id": entity, "max_context_tokens": 300}
        )
    )["context"]
    assert any("Berlin" in line for line in context["facts"]) and context["token_counts"]["budget"] == 300
    matches = _data(await client.call_tool("recall", {"query": "Berlin", "entity_id": entity}))["matches"]
    assert "Berlin" in matches[0]["text"]
    note = _data(
        await client.call_tool("remember", {"text": "call mum", "entity_id": entity, "kind": "note"})
    )
    note_id = note["stored"][0]["memory_id"]
    listed = _data(await client.call_tool("list_memories", {"entity_id": entity, "type": "note"}))
    assert [m["memory_id"] for m in listed["items"]] == [note_id]
    assert _data(await client.call_tool("get_memory", {"memory_id": note_id}))["text"] == "call mum"
    resource = await client.read_resource(f"loci://memories/{note_id}")
    content = resource.contents[0]
    assert isinstance(content, TextResourceContents)
    assert json.loads(content.text)["memory_id"] == note_id
    assert _data(await client.call_tool("forget", {"memory_id": note_id, "mode": "archive"}))["archived"][
        "archived"
    ]
    assert _data(await client.call_tool("forget", {"memory_id": note_id})) == {"deleted": note_id}
    missing = _error(await client.call_tool("get_memory", {"memory_id": note_id}))
    assert f"404 not_found: memory '{note_id}' not found" in missing
    with pytest.raises(MCPError) as gone:  # the resource's error carries the API's, as the tool's does
        await client.read_resource(f"loci://memories/{note_id}")
    assert gone.value.message == f"404 not_found: memory '{note_id}' not found"
    assert gone.value.code == INVALID_PARAMS  # MCP's "resource not found"
    assert "limit" in _error(await client.call_tool("recall", {"query": "x", "limit": 0}))


def test_streamable_http_tools(live: LiveServer) -> None:
    _run(_http(live, live.key), _walkthrough)


def test_stdio_tools(live: LiveServer) -> None:
    _run(_stdio(live, live.key), _walkthrough)


def test_http_scopes_are_the_apis(live: LiveServer) -> None:
    async def body(client: Client) -> None:
        refused = _error(
            await client.call_tool("remember", {"text": "I live in Rome", "entity_id": _entity()})
        )
        assert refused.endswith("403 forbidden: API key lacks the 'write' scope")
        assert _data(await client.call_tool("recall", {"query": "Rome"}))["matches"] is not None

    _run(_http(live, live.make_key(scopes=("read",))), body)
    other_org = live.make_key(org="other")

    async def isolated(client: Client) -> None:
        assert _data(await client.call_tool("list_memories", {}))["items"] == []

    _run(_http(live, other_org), isolated)


def test_remember_tags_the_turn_and_its_facts(live: LiveServer) -> None:
    async def body(client: Client) -> None:
        entity = _entity()
        turn = {"text": "I live in Paris", "entity_id": entity, "tags": ["home"]}
        _data(await client.call_tool("remember", turn))
        tagged = _data(await client.call_tool("list_memories", {"entity_id": entity, "tag": "home"}))
        assert sorted((m["type"], m["tags"]) for m in tagged["items"]) == [
            ("event", ["home"]),
            ("fact", ["home"]),
        ]

    _run(_http(live, live.key), body)


def test_list_memories_takes_only_stored_types(live: LiveServer) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        types = json.dumps(tools["list_memories"].input_schema["properties"]["type"])
        assert '"event"' in types and '"turn"' not in types
        entity = _entity()
        await client.call_tool("remember", {"text": "a note", "entity_id": entity, "kind": "note"})
        refused = _error(await client.call_tool("list_memories", {"entity_id": entity, "type": "turn"}))
        assert "type" in refused

    _run(_http(live, live.key), body)


def test_an_odd_memory_id_names_no_other_memory(live: LiveServer) -> None:
    async def body(client: Client) -> None:
        note = {"text": "keep me", "entity_id": _entity(), "kind": "note"}
        kept = _data(await client.call_tool("remember", note))["stored"][0]["memory_id"]
        for memory_id in ("nope/../" + kept, "../keys/self", f"{kept}?x=1"):
            assert "404 not_found" in _error(await client.call_tool("forget", {"memory_id": memory_id}))
            assert "404 not_found" in _error(await client.call_tool("get_memory", {"memory_id": memory_id}))
        assert _data(await client.call_tool("get_memory", {"memory_id": kept}))["text"] == "keep me"

    _run(_http(live, live.key), body)


def test_a_write_only_key_opens_http_and_writes(live: LiveServer) -> None:
    async def body(client: Client) -> None:
        note = {"text": "call mum", "entity_id": _entity(), "kind": "note"}
        stored = _data(await client.call_tool("remember", note))["stored"][0]["memory_id"]
        assert _data(await client.call_tool("forget", {"memory_id": stored})) == {"deleted": stored}
        turn = {"text": "I live in Rome", "entity_id": _entity()}
        for name, args in (("recall", {"query": "Rome"}), ("remember", turn)):
            refused = _error(await client.call_tool(name, args))
            assert refused.endswith("403 forbidden: API key lacks the 'read' scope"), (name, refused)
        with pytest.raises(MCPError) as refused_read:
            await client.read_resource(f"loci://memories/{stored}")
        assert refused_read.value.message == "403 forbidden: API key lacks the 'read' scope"

    _run(_http(live, live.make_key(scopes=("write",))), body)


def test_http_without_a_key_is_401(live: LiveServer) -> None:
    r = httpx.post(f"{live.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def test_stdio_needs_a_key(live: LiveServer) -> None:
    import subprocess

    loci = str(Path(sys.executable).with_name("loci"))
    env = {k: v for k, v in serve_env().items() if k != "LOCI_API_KEY"}
    done = subprocess.run(
        [loci, "mcp", "--url", live.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "API key" in done.stderr and done.stdout == ""


def test_remember_refuses_a_blank_text(live: LiveServer) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "pattern" in tools["remember"].input_schema["properties"]["text"]
        entity = _entity()
        for kind in ("turn", "note"):
            for text in ("   ", "\u200b\n"):
                refused = _error(
                    await client.call_tool("remember", {"text": text, "entity_id": entity, "kind": kind})
                )
                assert refused.endswith("422 validation_error: text must not be blank"), (kind, refused)
        assert _data(await client.call_tool("list_memories", {"entity_id": entity}))["items"] == []

    _run(_http(live, live.key), body)


def test_the_schemas_show_what_the_api_calls_blank(live: LiveServer) -> None:
    """entity_id, namespace and tags took "  " by their schema, and the API refused it (a 422 tool error)."""

    async def body(client: Client) -> None:
        tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
        shown = {
            (name, prop): json.dumps(tools[name][prop])
            for name, prop in (
                ("remember", "entity_id"),
                ("remember", "namespace"),
                ("remember", "tags"),
                ("recall", "entity_id"),
                ("recall", "namespace"),
                ("assemble_context", "entity_id"),
                ("assemble_context", "namespace"),
                ("list_memories", "entity_id"),
                ("list_memories", "namespace"),
                ("list_memories", "tag"),
            )
        }
        assert {k for k, v in shown.items() if '"pattern"' not in v} == set()
        refused = _error(
            await client.call_tool("remember", {"text": "hi", "entity_id": _entity(), "tags": [" "]})
        )
        assert refused.endswith("must not be blank")

    _run(_http(live, live.key), body)
