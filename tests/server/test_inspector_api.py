"""What the inspector needs from the API: the list's text filter (`q`), a memory's event history
(`memory_id` on the event log), the entity graph route, GET /v0/keys/self, and /ui itself (no key,
a same-origin Content-Security-Policy, every asset the page names, nothing from another origin)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from httpx import Response
from litestar import Litestar
from litestar.testing import TestClient

from server.routes.ui import UI_DIR
from tests.server.conftest import KeyMaker, memory_body


def _texts(r: Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["items"]]


# --- q: text search in the list --------------------------------------------------------------------------
def test_list_text_filter_pages_and_combines(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker
) -> None:
    items = [memory_body(f"Berlin note {i}", timestamp=f"2024-01-0{1 + i}T00:00:00Z") for i in range(5)]
    items += [memory_body("Paris note", type="fact"), memory_body("BERLIN fact", type="fact")]
    assert client.post("/v0/memories", json={"items": items}, headers=auth).status_code == 200
    other = make_key("globex")
    client.post("/v0/memories", json=memory_body("Berlin elsewhere"), headers=other)

    assert _texts(client.get("/v0/memories", params={"q": "berlin", "type": "fact"}, headers=auth)) == [
        "BERLIN fact"
    ]
    first = client.get(
        "/v0/memories", params={"q": "Berlin note", "page_size": 3, "sort": "timestamp_asc"}, headers=auth
    )
    assert _texts(first) == ["Berlin note 0", "Berlin note 1", "Berlin note 2"]
    rest = client.get(
        "/v0/memories",
        params={
            "q": "Berlin note",
            "page_size": 3,
            "sort": "timestamp_asc",
            "cursor": first.json()["next_cursor"],
        },
        headers=auth,
    )
    assert _texts(rest) == ["Berlin note 3", "Berlin note 4"] and rest.json()["next_cursor"] is None
    other_q = client.get(
        "/v0/memories",
        params={"q": "Paris", "page_size": 3, "sort": "timestamp_asc", "cursor": first.json()["next_cursor"]},
        headers=auth,
    )
    assert other_q.status_code == 422 and other_q.json()["details"]["field"] == "cursor"
    assert len(_texts(client.get("/v0/memories", params={"q": ""}, headers=auth))) == 7  # empty: no filter


@pytest.mark.parametrize("q", ["a\tb", "x" * 257, "nul\x00"])
def test_list_text_filter_rejects_bad_queries(
    client: TestClient[Litestar], auth: dict[str, str], q: str
) -> None:
    r = client.get("/v0/memories", params={"q": q}, headers=auth)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "validation_error"


# --- a memory's history --------------------------------------------------------------------------------
def test_events_filtered_by_memory(
    client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker
) -> None:
    created = client.post(
        "/v0/memories", json=memory_body("Alice likes tea", entity_id="ent:alice"), headers=auth
    ).json()
    mid = created["memory_id"]
    client.post("/v0/memories", json=memory_body("Bob likes coffee", entity_id="ent:alice"), headers=auth)
    assert client.patch(f"/v0/memories/{mid}", json={"tags": ["drinks"]}, headers=auth).status_code == 200
    assert client.patch(f"/v0/memories/{mid}", json={"archived": True}, headers=auth).status_code == 200
    r = client.get("/v0/observability/events", params={"memory_id": mid}, headers=auth)
    assert r.status_code == 200
    events = r.json()["items"]
    assert [e["type"] for e in events] == ["memory.created", "memory.updated", "memory.archived"]
    assert {e["memory_id"] for e in events} == {mid}
    assert (
        client.get("/v0/observability/events", params={"memory_id": mid}, headers=make_key("globex")).json()[
            "items"
        ]
        == []
    )
    too_long = client.get("/v0/observability/events", params={"memory_id": "m" * 129}, headers=auth)
    assert too_long.status_code == 422


# --- the entity graph ------------------------------------------------------------------------------------
def _fact(subject: str, predicate: str, obj: str) -> dict[str, object]:
    return {
        "entity_id": subject,
        "subject": subject,
        "predicate": predicate,
        "object_text": obj,
        "object_type": "entity" if obj.startswith("ent:") else "string",
    }


def test_entity_graph_route(client: TestClient[Litestar], auth: dict[str, str], make_key: KeyMaker) -> None:
    items = [
        _fact("ent:alice", "works_at", "ent:acme"),
        _fact("ent:acme", "located_in", "ent:berlin"),
        _fact("ent:alice", "lives_in", "Paris"),
    ]
    assert client.post("/v0/memories:batch_upsert", json={"items": items}, headers=auth).status_code == 200
    reader = make_key("acme", ("read",))
    r = client.get("/v0/entities/ent:alice/graph", headers=reader)
    assert r.status_code == 200, r.text
    g = r.json()
    assert g["depth"] == 2 and g["namespace"] == "default" and g["truncated"] is False
    assert {(n["entity_id"], n["hops"]) for n in g["nodes"]} == {
        ("ent:alice", 0),
        ("ent:acme", 1),
        ("ent:berlin", 2),
    }
    assert {(e["source"], e["predicate"], e["target"], e["kind"]) for e in g["edges"]} == {
        ("ent:alice", "works_at", "ent:acme", "fact"),
        ("ent:acme", "located_in", "ent:berlin", "fact"),
    }
    assert len(g["memories"]) == 3
    shallow = client.get(
        "/v0/entities/ent:alice/graph", params={"depth": 0, "limit": 1}, headers=reader
    ).json()
    assert len(shallow["memories"]) == 1 and shallow["truncated"] is True
    assert client.get("/v0/entities/ent:alice/graph", headers=make_key("globex")).json()["memories"] == []
    assert client.get("/v0/entities/ent:alice/graph", params={"depth": 3}, headers=auth).status_code == 422
    assert client.get("/v0/entities/ent:alice/graph").status_code == 401
    assert client.get("/v0/entities/ent:alice/graph", headers=make_key("acme", ("write",))).status_code == 403


# --- who am I ---------------------------------------------------------------------------------------------
def test_own_key(client: TestClient[Litestar], make_key: KeyMaker) -> None:
    for scopes in (("read",), ("write",), ("read", "write", "admin")):
        r = client.get("/v0/keys/self", headers=make_key("acme", scopes))
        assert r.status_code == 200
        body = r.json()
        assert (
            body["org_id"] == "acme" and body["scopes"] == list(scopes) and body["key_id"].startswith("key_")
        )
        assert set(body) == {"key_id", "org_id", "scopes"}  # never the secret
    assert client.get("/v0/keys/self").status_code == 401
    bad = client.get("/v0/keys/self", headers={"Authorization": "Bearer loci_nope"})
    assert bad.status_code == 401 and bad.json()["error"] == "unauthorized"


# --- /ui ----------------------------------------------------------------------------------------------------
ASSET_REF = re.compile(r"""(?:href|src)="(/ui/[^"]+)"|from "(\.{1,2}/[^"]+)"|import\("(/ui/[^"]+)"\)""")


def _ui_files() -> list[Path]:
    return sorted(p for p in UI_DIR.rglob("*") if p.is_file())


def test_ui_is_served_without_a_key_with_a_strict_csp(client: TestClient[Litestar]) -> None:
    for path in ("/ui", "/ui/", "/ui/index.html"):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), path
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "http" not in csp
        assert r.headers["x-content-type-options"] == "nosniff"
    js = client.get("/ui/js/app.js")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    assert client.get("/ui/nope.js").status_code == 404
    assert client.get("/ui/../server/app.py").status_code == 404


def test_every_asset_the_pages_name_is_served(client: TestClient[Litestar]) -> None:
    for file in _ui_files():
        if file.suffix not in {".html", ".js"}:
            continue
        for match in ASSET_REF.finditer(file.read_text()):
            absolute, relative, dynamic = match.groups()
            if relative:
                target = (file.parent / relative).resolve().relative_to(UI_DIR)
                absolute = f"/ui/{target.as_posix()}"
            path = absolute or dynamic
            assert client.get(path).status_code == 200, f"{file.name} names {path}"


def test_ui_files_name_no_other_origin() -> None:
    """No CDN, font service or analytics: the only absolute URL allowed is the SVG namespace."""
    for file in _ui_files():
        text = file.read_text()
        for url in re.findall(r"(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s\"')]*", text):
            assert url == "http://www.w3.org/2000/svg", f"{file.name}: {url}"
        if file.suffix == ".css":
            assert "@import" not in text and "url(" not in text, file.name
