"""Browser tests of the inspector (/ui): Playwright drives the system's Chromium (Playwright's own
browser download is not used) against a real `loci serve` subprocess on SQLite with the hash embedder.

Fixtures: `loci` (one seeded server per test session: keys made with `loci keys create`), `page` (a fresh
Chromium profile per test that fails the test on any request to another origin, on a page error or on
a console error), `shot` (saves a screenshot under tests/browser/screenshots/, git-ignored).
The tests skip, saying why, only where Playwright or Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1366, "height": 900}  # a laptop screen


def chromium_path() -> str | None:
    """$LOCI_CHROMIUM, else the first Chromium on PATH."""
    wanted = os.environ.get("LOCI_CHROMIUM")
    if wanted:
        return wanted if Path(wanted).exists() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _loci() -> list[str]:
    """The installed `loci` command next to this Python, else the same CLI through -m."""
    script = Path(sys.executable).parent / "loci"
    return [str(script)] if script.exists() else [sys.executable, "-m", "server.cli"]


# --- the server ----------------------------------------------------------------------------------------
@dataclass
class Loci:
    base: str
    key: str  # read, write, admin
    read_key: str  # read only
    ids: dict[str, str] = field(default_factory=dict)

    def client(self, key: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.base, headers={"Authorization": f"Bearer {key or self.key}"}, timeout=30
        )


def create_key(env: dict[str, str], data_dir: Path, scopes: str) -> str:
    done = subprocess.run(
        [*_loci(), "keys", "create", "--org", "acme", "--scopes", scopes, "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _fact(subject: str, predicate: str, obj: str, valid_from: str, text: str, **more: Any) -> dict[str, Any]:
    entity = obj.startswith("ent:")
    return {
        "entity_id": more.pop("entity_id", subject),
        "subject": subject,
        "predicate": predicate,
        "object_text": obj,
        "object_type": "entity" if entity else "string",
        "valid_from": valid_from,
        "text": text,
        **more,
    }


def seed(loci: Loci) -> None:
    """Alice's facts with a supersession (Paris, then Berlin), a small entity graph, notes and events,
    long documents (so a small budget cuts) and 30 handbook chunks (so the table pages)."""
    with loci.client() as c:
        first = c.post(
            "/v0/memories:batch_upsert",
            json={
                "items": [
                    _fact("ent:alice", "lives_in", "Paris", "2023-01-01T00:00:00Z", "Alice lives in Paris"),
                    _fact("ent:alice", "works_at", "ent:acme", "2024-01-01T00:00:00Z", "Alice works at Acme"),
                    _fact(
                        "ent:acme",
                        "located_in",
                        "ent:berlin",
                        "2022-01-01T00:00:00Z",
                        "Acme is located in Berlin",
                    ),
                    _fact("ent:alice", "knows", "ent:bob", "2024-06-01T00:00:00Z", "Alice knows Bob"),
                    _fact("ent:alice", "likes", "jazz", "2024-02-01T00:00:00Z", "Alice likes jazz"),
                ]
            },
        )
        first.raise_for_status()
        loci.ids["paris"] = first.json()["upserts"][0]["memory_id"]
        second = c.post(
            "/v0/memories:batch_upsert",
            json={
                "items": [
                    _fact("ent:alice", "lives_in", "Berlin", "2025-01-01T00:00:00Z", "Alice lives in Berlin")
                ]
            },
        )
        second.raise_for_status()
        assert second.json()["upserts"][0]["action"] == "SUPERSEDED"
        loci.ids["berlin"] = second.json()["upserts"][0]["memory_id"]
        notes = [
            {
                "type": "event",
                "entity_id": "ent:alice",
                "text": "Alice flew to Rome for a conference",
                "timestamp": "2025-03-02T09:00:00Z",
                "tags": ["travel"],
            },
            {
                "type": "note",
                "entity_id": "ent:alice",
                "text": "Alice prefers morning meetings",
                "timestamp": "2025-02-10T09:00:00Z",
                "tags": ["work"],
            },
            {
                "type": "note",
                "entity_id": "ent:bob",
                "text": "Bob is learning the cello",
                "timestamp": "2025-02-11T09:00:00Z",
            },
        ]
        long_docs = [
            {
                "type": "document",
                "entity_id": "ent:alice",
                "timestamp": f"2025-01-{10 + i}T09:00:00Z",
                "text": f"Quarterly report {i}: the team reviewed the plan, the budget and the hiring. " * 12,
            }
            for i in range(5)
        ]
        chunks = [
            {
                "type": "chunk",
                "entity_id": "ent:handbook",
                "namespace": "docs",
                "timestamp": f"2024-05-01T10:{i:02d}:00Z",
                "text": f"Handbook chunk {i:02d}",
            }
            for i in range(30)
        ]
        c.post("/v0/memories", json={"items": notes + long_docs + chunks}).raise_for_status()


@pytest.fixture(scope="session")
def loci(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loci]:
    data_dir = tmp_path_factory.mktemp("loci-data")
    env = {**os.environ, "LOCI_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1", "LOCI_RATE_LIMIT": "100000/minute"}
    env.pop("LOCI_DATABASE_URL", None)
    key = create_key(env, data_dir, "read,write,admin")
    read_key = create_key(env, data_dir, "read")
    port = _free_port()
    log = (data_dir / "serve.log").open("w")
    proc = subprocess.Popen(
        [*_loci(), "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(data_dir)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                raise RuntimeError(f"loci serve exited: {(data_dir / 'serve.log').read_text()}")
            try:
                if httpx.get(f"{base}/v0/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise RuntimeError("loci serve did not answer /v0/health")
        server = Loci(base=base, key=key, read_key=read_key)
        seed(server)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# --- the browser -----------------------------------------------------------------------------------------
@pytest.fixture
def playwright() -> Iterator[Any]:
    """Per test: the sync API keeps an event loop running in this thread while it is open, which would
    break later tests of the same worker that call asyncio.run()."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install -e .[dev])")
    if chromium_path() is None:
        pytest.skip("Chromium not found (apt-get install chromium, or set LOCI_CHROMIUM=/path/to/chromium)")
    with sync_playwright() as p:
        yield p


@dataclass
class Traffic:
    origin: str
    external: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@pytest.fixture
def traffic(loci: Loci) -> Traffic:
    return Traffic(origin=loci.base)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[FAILED] = report.failed
    return report


FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(
    playwright: Any, loci: Loci, traffic: Traffic, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """A page in a fresh Chromium profile; any request to another origin is aborted and fails the test."""
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "profile"),
        executable_path=chromium_path(),
        headless=True,
        args=CHROMIUM_ARGS,
        viewport=VIEWPORT,
        service_workers="block",
    )

    def guard(route: Any) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" == traffic.origin:
            traffic.paths.append(parts.path)
            route.continue_()
        else:
            traffic.external.append(url)
            route.abort()

    context.route("**/*", guard)
    context.set_default_timeout(15_000)
    pg = context.pages[0] if context.pages else context.new_page()
    pg.on("pageerror", lambda exc: traffic.errors.append(f"page error: {exc}"))
    pg.on(
        "console", lambda msg: traffic.errors.append(f"console: {msg.text}") if msg.type == "error" else None
    )
    try:
        yield pg
        if request.node.stash.get(FAILED, False):  # what the page showed when the test failed
            SCREENSHOTS.mkdir(exist_ok=True)
            pg.screenshot(path=str(SCREENSHOTS / f"failed-{request.node.name}.png"), full_page=True)
    finally:
        context.close()
    assert traffic.external == [], f"the inspector requested other origins: {traffic.external}"
    unexpected = [e for e in traffic.errors if "status of 40" not in e]  # expected 401/403s are logged
    assert unexpected == [], unexpected


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Any, str], Path]:
    """shot(page, name): a full-page screenshot at tests/browser/screenshots/<name>.png."""

    def take(pg: Any, name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        pg.screenshot(path=str(path), full_page=True)
        return path

    return take


def sign_in(pg: Any, loci: Loci, key: str | None = None, view: str = "") -> None:
    pg.goto(f"{loci.base}/ui/{view}")
    pg.get_by_label("API key", exact=True).fill(key or loci.key)
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_role("navigation", name="Views").wait_for()
