"""Docs that cannot drift: the README's API table lists every route of the OpenAPI document, every
`loci` subcommand is documented, and the quickstart examples run against a real server."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.keys import SCOPES, create_api_key
from engine.storage import open_store
from server.app import create_app
from server.commands import COMMANDS
from server.config import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
#: the mem0-compatible routes are listed in docs/integrations.md, linked from the README's API section
ROUTE_TABLES = (README, (ROOT / "docs" / "integrations.md").read_text())


def _readme_routes() -> set[tuple[str, str]]:
    rows = [
        r
        for text in ROUTE_TABLES
        for r in re.findall(r"^\|\s*`(GET|POST|PUT|PATCH|DELETE)\s+([^`]+)`", text, flags=re.M)
    ]
    return {(m, p.strip()) for m, p in rows}


def test_every_openapi_route_is_in_the_readme_api_table() -> None:
    app = create_app(Settings(data_dir="unused"), store=open_store("memory"), embedder=HashEmbedder())
    with TestClient(app) as client:
        doc = client.get("/schema/openapi.json").json()
    documented = _readme_routes()
    missing = []
    for path, ops in doc["paths"].items():
        for method in ops:
            if (
                method.upper() in {"GET", "POST", "PUT", "PATCH", "DELETE"}
                and (method.upper(), path) not in documented
            ):
                missing.append(f"{method.upper()} {path}")
    assert not missing, f"routes missing from the API tables (README, docs/integrations.md): {missing}"


def test_every_cli_command_is_documented() -> None:
    for name in COMMANDS:
        assert f"loci {name}" in README, f"`loci {name}` is not in the README"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    store = open_store(str(tmp_path))
    _, secret = create_api_key(store, "dev", SCOPES, name="docs")
    app = create_app(Settings(data_dir=str(tmp_path)), store=store, embedder=HashEmbedder())
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if httpx.get(f"{base}/v0/health").status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    try:
        yield base, secret
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        store.close()


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize("script", sorted((ROOT / "docs" / "examples").glob("*.sh")), ids=lambda p: p.name)
def test_readme_examples_run(script: Path, live_server: tuple[str, str]) -> None:
    base, key = live_server
    done = subprocess.run(
        ["bash", str(script)],
        env={**os.environ, "B": base, "KEY": key},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
