"""Shared pieces of the benchmarks: percentiles, bench stores, and a real `loci serve` subprocess.

`ServeProcess` starts `python -m server.cli serve` on a free loopback port and waits for /v0/health.
`LociServer(data_dir, embedder)` serves the same SQLite file the in-process benchmark uses (rate limit raised so it never throttles the bench) and
`.client(secret)` returns an httpx.Client with the bearer key. Stop it with `.stop()` (or `with`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

import httpx
import msgspec
import numpy as np

from engine.keys import SCOPES, create_api_key
from engine.storage.sqlite import SQLiteStore

REPO_ROOT = Path(__file__).resolve().parents[2]


class Pct(msgspec.Struct, kw_only=True):
    """p50 and p95 of a sample, milliseconds."""

    p50: float
    p95: float

    def cell(self) -> str:
        return f"{self.p50:.1f}/{self.p95:.1f}"


def pct(values: Sequence[float]) -> Pct:
    if not values:
        return Pct(p50=float("nan"), p95=float("nan"))
    arr = np.asarray(values, dtype=np.float64)
    return Pct(p50=float(np.percentile(arr, 50)), p95=float(np.percentile(arr, 95)))


@contextmanager
def bench_dir(cache_dir: str, label: str, *, keep: bool = False) -> Iterator[str]:
    """A fresh data directory under `cache_dir` (removed afterwards unless `keep`)."""
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    path = tempfile.mkdtemp(prefix=f"{label}-", dir=cache_dir)
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


def open_bench_store(data_dir: str) -> SQLiteStore:
    """The store `loci serve --data-dir data_dir` opens (`<dir>/loci.db`)."""
    return SQLiteStore(str(Path(data_dir) / "loci.db"))


def bench_key(store: SQLiteStore, org_id: str) -> str:
    """A bearer secret for `org_id` with every scope."""
    _, secret = create_api_key(store, org_id, SCOPES, name="bench")
    return secret


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServeProcess:
    """`python -m server.cli serve` on a free loopback port, with `args` and `env`, in its own process
    group (so any uvicorn workers stop with it), its output in `log_path`; ready once /v0/health answers."""

    def __init__(self, args: Sequence[str], env: dict[str, str], log_path: Path, *, timeout: float) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._log = open(self.log_path, "wb")  # noqa: SIM115  # closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-P",  # not the working directory's code: the checkout's, from PYTHONPATH below
                "-m",
                "server.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *args,
            ],
            # the caller's directory, so relative paths in `args` name what the bench names, and this
            # checkout's code first, so the server is the code the bench runs
            env={
                **env,
                "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p),
            },
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait(timeout)

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(
                    f"loci serve exited ({self.proc.returncode}); see {self.log_path}:\n"
                    + self.log_path.read_text(errors="replace")[-2000:]
                )
            try:
                if httpx.get(f"{self.base_url}/v0/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"loci serve did not answer within {timeout:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class LociServer(ServeProcess):
    """`loci serve --data-dir data_dir`: the SQLite file the in-process benchmark uses."""

    def __init__(self, data_dir: str, embedder: str, *, startup_timeout: float = 180.0) -> None:
        self.data_dir = data_dir
        env = dict(os.environ, LOCI_EMBEDDER=embedder, LOCI_RATE_LIMIT="1000000/minute", HF_HUB_OFFLINE="1")
        env.pop("LOCI_DATABASE_URL", None)
        super().__init__(
            ["--data-dir", data_dir], env, Path(data_dir) / "server.log", timeout=startup_timeout
        )

    def client(self, secret: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            timeout=120.0,
            headers={"Authorization": f"Bearer {secret}", "Content-Type": "application/json"},
        )


def timed_post(client: httpx.Client, path: str, body: bytes) -> float:
    """POST and return the wall time in ms; raises on a non-200 answer."""
    t = time.perf_counter()
    resp = client.post(path, content=body)
    ms = (time.perf_counter() - t) * 1000.0
    if resp.status_code != 200:
        raise RuntimeError(f"POST {path} -> {resp.status_code}: {resp.text[:500]}")
    return ms
