"""A real `loci serve` per test module: a subprocess on SQLite in a temporary data dir with the hash
embedder, on a free loopback port. Its first-run key (scopes read, write, admin) is read from stdout."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from engine.keys import create_api_key
from engine.storage import open_store

KEY_LINE = re.compile(r"^\s+(loci_\S+)\s*$", re.M)
START_SECONDS = 120.0


class LiveServer(msgspec.Struct, kw_only=True):
    url: str
    key: str
    data_dir: Path

    def make_key(self, org: str = "dev", scopes: tuple[str, ...] = ("read", "write", "admin")) -> str:
        """Another key in the server's store (SQLite allows the second connection)."""
        store = open_store(str(self.data_dir))
        try:
            return create_api_key(store, org, scopes)[1]
        finally:
            store.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_env() -> dict[str, str]:
    return {**os.environ, "LOCI_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1", "LOCI_RATE_LIMIT": "100000/minute"}


def start_server(data_dir: Path) -> tuple[subprocess.Popen[str], str, str]:
    port = free_port()
    loci = str(Path(sys.executable).with_name("loci"))
    proc = subprocess.Popen(
        [loci, "serve", "--port", str(port), "--data-dir", str(data_dir)],
        env=serve_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    out = ""
    deadline = time.monotonic() + START_SECONDS
    while "Loci listening" not in out and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        out += line
    found = KEY_LINE.search(out)
    if found is None:
        proc.kill()
        raise RuntimeError(f"loci serve did not start:\n{out}")
    # keep reading the server's log, so a full pipe never blocks it
    threading.Thread(target=lambda: [None for _ in proc.stdout or ()], daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/v0/health", timeout=2).status_code == 200:
                return proc, url, found.group(1)
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("loci serve did not answer /v0/health")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data_dir = tmp_path_factory.mktemp("loci-data")
    proc, url, key = start_server(data_dir)
    try:
        yield LiveServer(url=url, key=key, data_dir=data_dir)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def mem0_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """For the `mem0ai` client: no telemetry (there is no network), its config dir in a temporary folder."""
    saved = {k: os.environ.get(k) for k in ("MEM0_TELEMETRY", "MEM0_DIR")}
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = str(tmp_path_factory.mktemp("mem0"))
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
