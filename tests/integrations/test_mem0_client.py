"""The unmodified `mem0ai` client (MemoryClient and AsyncMemoryClient) against a real `loci serve`, and the
routes of mem0's open-source REST server. One server per module; each test uses its own user ids."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from tests.integrations.conftest import LiveServer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mem0_env")]


def _client(live: LiveServer, key: str | None = None) -> Any:
    from mem0 import MemoryClient

    return MemoryClient(api_key=key or live.key, host=live.url)


def _user() -> str:
    return f"u-{uuid.uuid4().hex[:10]}"


def test_construction_pings_with_a_token_header(live: LiveServer) -> None:
    client = _client(live)
    assert client.org_id == "dev" and client.project_id == "default"
    assert client.client.headers["Authorization"].startswith("Token ")
    with pytest.raises(ValueError, match="invalid API key"):
        _client(live, key="loci_not-a-real-key")


def test_add_infer_extracts_and_supersedes(live: LiveServer) -> None:
    client, user = _client(live), _user()
    first = client.add("I live in Paris and I like tea", user_id=user)
    assert first["status"] == "SUCCEEDED"
    assert [(r["memory"], r["event"]) for r in first["results"]] == [
        ("User lives in Paris", "ADD"),
        ("User likes tea", "ADD"),
    ]
    paris = first["results"][0]["id"]
    moved = client.add([{"role": "user", "content": "I moved to Berlin"}], user_id=user)
    assert [(r["memory"], r["event"]) for r in moved["results"]] == [("User lives in Berlin", "UPDATE")]
    texts = {m["memory"] for m in client.get_all(filters={"user_id": user})["results"]}
    assert texts == {"User lives in Berlin", "User likes tea"}
    assert client.get(paris)["status"] == "superseded"
    events = [(h["event"], h["metadata"]["loci_event"]) for h in client.history(paris)]
    assert events == [("ADD", "memory.created"), ("UPDATE", "memory.superseded")]


def test_add_without_infer_stores_messages_verbatim(live: LiveServer) -> None:
    client, user = _client(live), _user()
    out = client.add(
        [{"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi!"}],
        user_id=user,
        agent_id="helper",
        run_id="run-1",
        metadata={"source": "test"},
        infer=False,
    )
    assert [(r["memory"], r["event"]) for r in out["results"]] == [("hello there", "ADD"), ("hi!", "ADD")]
    got = client.get(out["results"][0]["id"])
    assert got["memory"] == "hello there" and got["user_id"] == user and got["agent_id"] == "helper"
    assert got["run_id"] == got["session_id"] == "run-1"
    assert got["metadata"]["source"] == "test" and got["metadata"]["role"] == "user"


def test_get_all_filters_and_pages(live: LiveServer) -> None:
    client, a, b = _client(live), _user(), _user()
    for i in range(5):
        client.add(f"note {i} of a", user_id=a, run_id="r1" if i < 3 else "r2", infer=False)
    client.add("note of b", user_id=b, infer=False)
    assert client.get_all(filters={"user_id": a})["count"] == 5
    runs = client.get_all(filters={"AND": [{"user_id": a}, {"run_id": "r1"}]})
    assert runs["count"] == 3 and {m["run_id"] for m in runs["results"]} == {"r1"}
    both = client.get_all(filters={"OR": [{"user_id": a}, {"user_id": b}]})
    assert both["count"] == 6
    first = client.get_all(filters={"user_id": a}, page=1, page_size=2)
    assert first["count"] == 5 and len(first["results"]) == 2 and first["previous"] is None
    assert "page=2" in first["next"]
    last = client.get_all(filters={"user_id": a}, page=3, page_size=2)
    assert len(last["results"]) == 1 and last["next"] is None and "page=2" in last["previous"]
    seen = [
        m["id"]
        for p in (1, 2, 3)
        for m in client.get_all(filters={"user_id": a}, page=p, page_size=2)["results"]
    ]
    assert len(set(seen)) == 5
    later = client.get_all(filters={"AND": [{"user_id": a}, {"created_at": {"gte": "2999-01-01"}}]})
    assert later["count"] == 0
    from mem0.exceptions import ValidationError

    with pytest.raises(ValidationError, match="must name a user_id"):
        client.get_all(filters={"created_at": {"gte": "2020-01-01"}})
    with pytest.raises(ValidationError, match="unsupported operator"):
        client.get_all(filters={"user_id": {"regex": ".*"}})


def test_search_ranks_within_filters(live: LiveServer) -> None:
    client, a, b = _client(live), _user(), _user()
    client.add("I live in Lisbon", user_id=a)
    client.add("My favourite dish is ramen", user_id=a, infer=False)
    client.add("I live in Oslo", user_id=b)
    found = client.search("where does the user live", filters={"user_id": a}, top_k=5)["results"]
    assert found and found[0]["memory"] == "User lives in Lisbon"
    assert all(r["user_id"] == a and isinstance(r["score"], float) for r in found)
    assert len(client.search("ramen", filters={"user_id": a}, top_k=1)["results"]) == 1


def test_update_history_and_expiration(live: LiveServer) -> None:
    client, user = _client(live), _user()
    # dated 2000, so that it can expire in 2001 (a validity never ends before the memory's timestamp)
    added = client.add("buy milk", user_id=user, infer=False, run_id="r9", timestamp=946684800)
    mid = added["results"][0]["id"]
    updated = client.update(mid, text="buy oat milk", metadata={"list": "groceries"})
    assert updated["memory"] == "buy oat milk" and updated["metadata"]["list"] == "groceries"
    assert updated["run_id"] == "r9"  # the scope survives a metadata replacement
    assert client.search("oat milk", filters={"user_id": user})["results"][0]["id"] == mid
    history = client.history(mid)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "buy milk"),
        ("UPDATE", "buy milk", "buy oat milk"),
    ]
    client.update(mid, expiration_date="2001-01-01")
    assert client.get(mid)["expiration_date"] == "2001-01-01"
    assert client.get_all(filters={"user_id": user})["count"] == 0  # expired: hidden
    assert client.get_all(filters={"user_id": user}, show_expired=True)["count"] == 1
    assert client.search("oat milk", filters={"user_id": user})["results"] == []
    found = client.search("oat milk", filters={"user_id": user}, show_expired=True)["results"]
    assert [r["id"] for r in found] == [mid]
    from mem0.exceptions import ValidationError

    with pytest.raises(ValidationError, match="timestamp cannot be changed"):
        client.update(mid, timestamp=1700000000)
    with pytest.raises(ValidationError, match="valid_to is before"):
        client.update(mid, expiration_date="1999-12-30")


def test_delete_delete_all_users_and_delete_users(live: LiveServer) -> None:
    from mem0.exceptions import MemoryNotFoundError

    client, a, b = _client(live), _user(), _user()
    ids = [r["id"] for r in client.add("I like jazz and I live in Rome", user_id=a)["results"]]
    client.add("note", user_id=b, agent_id="bot-x", infer=False)
    assert client.delete(ids[0]) == {"message": "Memory deleted successfully!"}
    with pytest.raises(MemoryNotFoundError, match="not found"):
        client.get(ids[0])
    assert client.history(ids[0])[-1]["event"] == "DELETE"
    names = {(e["type"], e["name"]) for e in client.users()["results"]}
    assert {("user", a), ("user", b), ("agent", "bot-x")} <= names
    assert client.delete_all(user_id=a)["deleted"] == 1
    assert client.get_all(filters={"user_id": a})["count"] == 0
    client.add("kept", user_id=a, infer=False)
    client.add("gone", user_id=a, run_id="r", infer=False)
    assert client.delete_all(filters={"user_id": a, "run_id": "r"})["deleted"] == 1  # mem0ai 2.2's way
    assert [m["memory"] for m in client.get_all(filters={"user_id": a})["results"]] == ["kept"]
    client.delete_users(user_id=b)
    assert client.get_all(filters={"user_id": b})["count"] == 0


def test_scopes_and_unsupported_calls(live: LiveServer) -> None:
    from mem0.exceptions import AuthenticationError, MemoryError

    reader = _client(live, key=live.make_key(scopes=("read",)))
    with pytest.raises(AuthenticationError, match="lacks the 'write' scope"):
        reader.add("I live in Rome", user_id=_user())
    assert reader.get_all(filters={"user_id": _user()})["count"] == 0
    with pytest.raises(MemoryError, match="batch update and batch delete is not supported"):
        _client(live).batch_update([{"memory_id": "mem_x", "text": "t"}])


def test_async_client(live: LiveServer) -> None:
    from mem0 import AsyncMemoryClient

    async def run() -> None:
        user = _user()
        async with AsyncMemoryClient(api_key=live.key, host=live.url) as client:
            added = await client.add("I work at Acme", user_id=user)
            assert [r["event"] for r in added["results"]] == ["ADD"]
            mid = added["results"][0]["id"]
            assert (await client.get(mid))["memory"] == "User works at Acme"
            assert (await client.search("employer", filters={"user_id": user}))["results"][0]["id"] == mid
            assert (await client.get_all(filters={"user_id": user}))["count"] == 1
            await client.update(mid, metadata={"checked": True})
            assert [h["event"] for h in await client.history(mid)] == ["ADD", "UPDATE"]
            await client.delete(mid)
            await client.add("x", user_id=user, infer=False)
            assert (await client.delete_all(user_id=user))["deleted"] == 1

    asyncio.run(run())


def test_older_client_paths(live: LiveServer) -> None:
    user = _user()
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Token {live.key}"}) as http:
        added = http.post(
            "/v1/memories/",
            json={
                "messages": [{"role": "user", "content": "I like chess"}],
                "user_id": user,
                "version": "v2",
                "output_format": "v1.1",
            },
        )
        assert added.status_code == 200 and added.json()["results"][0]["event"] == "ADD"
        listed = http.post("/v2/memories/", json={"filters": {"user_id": user}})
        assert [m["memory"] for m in listed.json()] == ["User likes chess"]
        found = http.post("/v1/memories/search/", json={"query": "chess", "user_id": user})
        assert found.json()[0]["memory"] == "User likes chess"
        assert http.post("/v2/memories/search/", json={"query": "chess", "filters": {"user_id": user}}).json()
        bad = http.post("/v3/memories/search/", json={"query": "", "filters": {"user_id": user}})
        assert bad.status_code == 422 and bad.json()["detail"] == bad.json()["message"]


def test_open_source_server_routes(live: LiveServer) -> None:
    user = _user()
    with httpx.Client(base_url=live.url, headers={"X-API-Key": live.key}) as http:
        added = http.post(
            "/memories", json={"messages": [{"role": "user", "content": "I live in Kyoto"}], "user_id": user}
        )
        assert added.status_code == 200, added.text
        mid = added.json()["results"][0]["id"]
        assert http.get("/memories", params={"user_id": user}).json()["results"][0]["id"] == mid
        assert http.get(f"/memories/{mid}").json()["memory"] == "User lives in Kyoto"
        hits = http.post("/search", json={"query": "where", "filters": {"user_id": user}}).json()["results"]
        assert hits[0]["id"] == mid
        assert (
            http.put(f"/memories/{mid}", json={"text": "User lives in Osaka"}).json()["memory"]
            == "User lives in Osaka"
        )
        assert [h["event"] for h in http.get(f"/memories/{mid}/history").json()] == ["ADD", "UPDATE"]
        assert (
            http.delete("/memories", params={"user_id": user}).json()["message"]
            == "All relevant memories deleted"
        )
        missing = http.get(f"/memories/{mid}")
        assert missing.status_code == 404 and "not found" in missing.json()["detail"]
        assert http.delete("/memories").status_code == 422


def test_trailing_slashes_both_ways(live: LiveServer) -> None:
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {live.key}"}) as http:
        assert http.get("/v1/ping").json()["org_id"] == "dev"
        assert http.get("/v1/ping/").json()["org_id"] == "dev"
        assert http.get("/v1/entities").status_code == 200
