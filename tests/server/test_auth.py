"""Authentication and scopes: missing, malformed, unknown, revoked keys; missing scopes."""

from __future__ import annotations

import pytest
from httpx import Response
from litestar import Litestar
from litestar.testing import TestClient

from engine.keys import create_api_key, hash_key
from engine.storage.base import Store
from engine.timeutil import utcnow
from tests.server.conftest import KeyMaker, memory_body

ROUTES = [
    ("GET", "/v0/memories"),
    ("POST", "/v0/memories"),
    ("GET", "/v0/memories/mem_x"),
    ("PATCH", "/v0/memories/mem_x"),
    ("DELETE", "/v0/memories/mem_x"),
]


def call(client: TestClient[Litestar], method: str, path: str, headers: dict[str, str]) -> Response:
    body = memory_body() if method == "POST" else ({"tags": []} if method == "PATCH" else None)
    return client.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer loci_unknown",
        "Bearer not-a-loci-key",
        "loci_x",
    ],
)
def test_bad_credentials_are_401(
    client: TestClient[Litestar], store: Store, method: str, path: str, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    r = call(client, method, path, headers)
    assert r.status_code == 401
    body = r.json()
    assert body["error"] == "unauthorized" and body["request_id"] == r.headers["x-request-id"]
    assert store.count_memories() == 0


def test_revoked_key_is_401(client: TestClient[Litestar], store: Store) -> None:
    key, secret = create_api_key(store, "acme")
    headers = {"Authorization": f"Bearer {secret}"}
    assert client.get("/v0/memories", headers=headers).status_code == 200
    assert store.revoke_api_key(key.key_id, utcnow())
    r = client.get("/v0/memories", headers=headers)
    assert r.status_code == 401 and "revoked" in r.json()["message"]


def test_key_is_stored_hashed(store: Store) -> None:
    key, secret = create_api_key(store, "acme", ["read"])
    assert secret.startswith("loci_") and key.key_hash == hash_key(secret) and secret not in key.key_hash
    assert store.find_api_key(hash_key(secret)) is not None


def test_read_only_key_cannot_write(client: TestClient[Litestar], make_key: KeyMaker, store: Store) -> None:
    reader = make_key("acme", ("read",))
    assert client.get("/v0/memories", headers=reader).status_code == 200
    for method, path in ROUTES:
        if method == "GET":
            continue
        r = call(client, method, path, reader)
        assert r.status_code == 403, (method, path)
        assert r.json()["error"] == "forbidden" and r.json()["details"]["required_scope"] == "write"
    assert store.count_memories() == 0


def test_write_only_key_cannot_read(client: TestClient[Litestar], make_key: KeyMaker) -> None:
    writer = make_key("acme", ("write",))
    assert client.post("/v0/memories", json=memory_body(), headers=writer).status_code == 200
    for method, path in ROUTES:
        if method == "GET":
            r = call(client, method, path, writer)
            assert r.status_code == 403 and r.json()["details"]["required_scope"] == "read"


def test_health_needs_no_auth(client: TestClient[Litestar]) -> None:
    r = client.get("/v0/health")
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["now"].endswith("Z")


def test_auth_is_checked_before_validation(client: TestClient[Litestar], store: Store) -> None:
    r = client.post("/v0/memories", json={"type": "nope"}, headers={"Idempotency-Key": "k" * 300})
    assert r.status_code == 401
