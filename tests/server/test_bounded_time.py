"""Bounded request time over HTTP: heavy work (extraction, embedding) runs in worker threads, so the
event loop keeps answering /v0/health while it runs; the ReDoS turn of 10,000 digits costs about what a
short one does; an extraction stopped at its budget says so and the turn is still stored.

Times are compared within one run (orderings and ratios), never against a wall-clock bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from litestar import Litestar
from litestar.testing import TestClient

from engine.embed.hash import HashEmbedder
from engine.extract.base import ExtractResult
from engine.extract.rules import RuleExtractor
from engine.keys import SCOPES, create_api_key
from engine.storage import open_store
from engine.storage.base import Store
from server.app import create_app
from server.config import Settings
from tests.server.live_server import free_port


class SlowExtractor:
    """Holds its worker thread in pure-Python work for `seconds` (as a heavy extraction would)."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def extract(
        self,
        text: str,
        *,
        subject: str = "ent:user",
        reference_time: datetime | None = None,
        subject_name: str = "User",
    ) -> ExtractResult:
        end = time.perf_counter() + self.seconds
        n = 0
        while time.perf_counter() < end:
            n += sum(i * i for i in range(200))
        return ExtractResult(extractor=self.name)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = open_store(f"sqlite:///{tmp_path}/loci.db")
    yield s
    s.close()


@pytest.fixture
def served(store: Store) -> Iterator[tuple[Litestar, str, dict[str, str]]]:
    """The app under a real uvicorn (in a thread of this process) on a free port."""
    app = create_app(
        Settings(embedder="hash", rate_limit="1000000/minute"), store=store, embedder=HashEmbedder()
    )
    _, secret = create_api_key(store, "acme", SCOPES)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield app, base, {"Authorization": f"Bearer {secret}"}
    server.should_exit = True
    thread.join(timeout=30)


def _assemble(base: str, auth: dict[str, str], turn: str, out: dict[str, Any]) -> None:
    t = time.perf_counter()
    r = httpx.post(
        f"{base}/v0/context/assemble", json={"entity_id": "ent:u", "turn": turn}, headers=auth, timeout=120
    )
    out.update(
        status=r.status_code, seconds=time.perf_counter() - t, finished=time.perf_counter(), body=r.json()
    )


def test_health_answers_while_a_heavy_request_runs(served: tuple[Litestar, str, dict[str, str]]) -> None:
    app, base, auth = served
    app.state.loci.extractor = SlowExtractor(seconds=2.0)
    slow: dict[str, Any] = {}
    worker = threading.Thread(target=_assemble, args=(base, auth, "I live in Berlin.", slow))
    started = time.perf_counter()
    worker.start()
    time.sleep(0.3)  # the assemble is in its extraction now
    latencies, answered_at = [], []
    for _ in range(5):
        t = time.perf_counter()
        assert httpx.get(f"{base}/v0/health", timeout=60).status_code == 200
        latencies.append(time.perf_counter() - t)
        answered_at.append(time.perf_counter())
        time.sleep(0.05)
    worker.join()
    assert slow["status"] == 200
    # the first: the later ones may come after the heavy request ends on a busy machine, blocked or not
    assert answered_at[0] < slow["finished"], "health waited for the heavy request"
    assert max(latencies) < (slow["finished"] - started) / 4


def test_the_redos_turn_costs_about_what_a_short_turn_does(
    served: tuple[Litestar, str, dict[str, str]],
) -> None:
    _, base, auth = served
    runs: dict[str, list[float]] = {"short": [], "digits": []}
    for _ in range(3):  # alternated, best of three each
        for kind, turn in (("short", "I live in Berlin."), ("digits", "1" * 10_000)):
            out: dict[str, Any] = {}
            _assemble(base, auth, turn, out)
            assert out["status"] == 200 and not out["body"]["extracted"]["truncated"]
            runs[kind].append(out["seconds"])
    # before the patterns were made linear this turn took tens of seconds; now a few short turns' worth
    assert min(runs["digits"]) < 10 * min(runs["short"]), runs


def test_an_extraction_cut_at_its_budget_says_so_and_the_turn_is_stored(store: Store) -> None:
    app = create_app(
        Settings(embedder="hash", rate_limit="1000000/minute"), store=store, embedder=HashEmbedder()
    )
    clock = iter(range(1_000_000))
    app.state.loci.extractor = RuleExtractor(budget_ms=1500, clock=lambda: float(next(clock)))
    _, secret = create_api_key(store, "acme", SCOPES)
    with TestClient(app) as client:
        r = client.post(
            "/v0/context/assemble",
            headers={"Authorization": f"Bearer {secret}"},
            json={"entity_id": "ent:u", "turn": "I live in Berlin. I work at Acme. I have a dog."},
        )
        assert r.status_code == 200, r.text
        extracted = r.json()["extracted"]
        assert extracted["truncated"] is True
        assert extracted["upserts"][0]["action"] == "UPSERTED"  # the turn itself
        turn = client.get(
            f"/v0/memories/{extracted['upserts'][0]['memory_id']}",
            headers={"Authorization": f"Bearer {secret}"},
        ).json()
        assert turn["text"].startswith("I live in Berlin.")
        schema = client.get("/schema/openapi.json").json()["components"]["schemas"]
        assert "truncated" in schema["Extracted"]["properties"]
        assert "truncated" in schema["ExtractResult"]["properties"]
