"""The unmodified `mem0ai` client's `update(text)` against a real `loci serve` on SQLite and on PostgreSQL:
the fact's structured value follows its new text, so a later add of the old value supersedes it (issue
28, item 5). The rules themselves: tests/server/test_mem0_update.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.pg_fixture import pg_database, pg_server
from tests.server.live_server import LiveServer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("mem0_env")]
__all__ = ["pg_database", "pg_server"]  # fixtures


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LiveServer]:
    url = request.getfixturevalue("pg_database") if request.param == "postgres" else None
    with LiveServer(tmp_path, database_url=url) as live:
        yield live


def test_update_text_moves_the_value_and_a_later_add_supersedes_it(server: LiveServer) -> None:
    from mem0 import MemoryClient

    key = server.key("read,write,admin")
    client = MemoryClient(api_key=key, host=server.base)
    (added,) = client.add("I live in Boston.", user_id="sam")["results"]
    assert added["event"] == "ADD"
    updated = client.update(added["id"], text="User lives in Chicago")
    assert updated["memory"] == "User lives in Chicago"
    assert updated["metadata"]["object_name"] == "Chicago"
    fact = httpx.get(server.url(f"/v0/memories/{added['id']}"), headers={"Authorization": f"Bearer {key}"})
    assert fact.json()["object"] == "ent:chicago"
    again = client.add("I live in Boston.", user_id="sam")["results"]
    assert [(r["memory"], r["event"]) for r in again] == [("User lives in Boston", "UPDATE")]
    assert client.get(added["id"])["status"] == "superseded"
    shown = client.get_all(filters={"user_id": "sam"})["results"]
    assert [m["memory"] for m in shown] == ["User lives in Boston"]
