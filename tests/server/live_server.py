"""A real `loci serve` in a subprocess (its own process group), for tests that need a server process:
the fuzzers, kill -9 durability, and event-loop responsiveness.

    with LiveServer(tmp_path) as server:            # SQLite in tmp_path (or database_url=...)
        key = server.key("read,write,admin")
        httpx.get(server.url("/v0/health"))
        server.kill()                               # SIGKILL to the whole process group
        server.start()                              # same database, new process
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from server.cli import main; sys.exit(main())"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    def __init__(
        self,
        data_dir: Path,
        *,
        database_url: str | None = None,
        env: dict[str, str] | None = None,
        start_timeout: float = 90.0,
        serve_args: tuple[str, ...] = (),
    ) -> None:
        self.data_dir = data_dir
        self.database_url = database_url
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.start_timeout = start_timeout
        self.serve_args = serve_args  # more `loci serve` options, e.g. ("--workers", "2")
        self.log_path = data_dir / "server.log"
        self.env = {
            **os.environ,
            "LOCI_DATA_DIR": str(data_dir),
            "LOCI_EMBEDDER": "hash",
            "LOCI_RATE_LIMIT": "1000000/minute",
            "LOCI_WARM_EMBEDDER": "0",
            "HF_HUB_OFFLINE": "1",
            **({"LOCI_DATABASE_URL": database_url} if database_url else {}),
            **(env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, path: str) -> str:
        return self.base + path

    def cli(self, *args: str) -> str:
        """Run a `loci` command against the same database; its standard output."""
        done = subprocess.run(
            [sys.executable, "-c", CLI, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            check=True,
            timeout=120,
        )
        return done.stdout.decode()

    def key(self, scopes: str, org: str = "acme") -> str:
        return self.cli("keys", "create", "--org", org, "--scopes", scopes).strip().splitlines()[-1]

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CLI, "serve", "--port", str(self.port), *self.serve_args],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"loci serve exited: {self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(self.url("/v0/health"), timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"loci serve did not answer in {self.start_timeout} s")

    def kill(self) -> None:
        """SIGKILL to the server's whole process group (no shutdown hooks run)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def __enter__(self) -> LiveServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
