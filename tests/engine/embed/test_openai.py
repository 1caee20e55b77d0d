"""OpenAIEmbedder against a tiny fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from engine.embed.openai import OpenAIEmbedder, embeddings_url
from engine.errors import Unavailable


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if fake.mode == "500":
                    self.send_response(500)
                    self.end_headers()
                    return
                if fake.mode == "garbage":
                    payload = b"not json"
                else:
                    # vector = [len(text), 1, 0]; returned in reverse order to test index sorting
                    data = [
                        {"index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                        for i, t in enumerate(body["input"])
                    ]
                    payload = json.dumps({"data": data[::-1], "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.close()


def test_url_forms() -> None:
    assert embeddings_url("http://h:1") == "http://h:1/v1/embeddings"
    assert embeddings_url("http://h:1/v1/") == "http://h:1/v1/embeddings"
    assert embeddings_url("http://h:1/v1/embeddings") == "http://h:1/v1/embeddings"


@pytest.mark.parametrize("suffix", ["", "/v1"])
def test_embeds_normalized_in_order(fake: FakeServer, suffix: str) -> None:
    emb = OpenAIEmbedder(url=fake.url + suffix, model_name="m1", api_key="sk-test", batch_size=2)
    rows = emb.embed(["abc", "a", "abcd"])
    assert rows.dtype == np.float32 and rows.shape == (3, 3) and emb.dim == 3
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert rows[0] == pytest.approx(np.array([3, 1, 0]) / np.sqrt(10))
    assert rows[1] == pytest.approx(np.array([1, 1, 0]) / np.sqrt(2))
    assert [r["path"] for r in fake.requests] == ["/v1/embeddings", "/v1/embeddings"]  # 2 batches
    assert fake.requests[0]["body"] == {"model": "m1", "input": ["abc", "a"]}
    assert fake.requests[0]["auth"] == "Bearer sk-test"
    assert emb.model == "openai:m1"
    emb.close()


def test_env_settings(fake: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCI_EMBED_URL", fake.url + "/v1")
    monkeypatch.setenv("LOCI_EMBED_MODEL", "nomic")
    monkeypatch.delenv("LOCI_EMBED_API_KEY", raising=False)
    emb = OpenAIEmbedder()
    emb.embed(["x"])
    assert fake.requests[0]["body"]["model"] == "nomic" and fake.requests[0]["auth"] is None


@pytest.mark.parametrize("mode", ["500", "garbage"])
def test_server_failures_raise_unavailable(fake: FakeServer, mode: str) -> None:
    fake.mode = mode
    with pytest.raises(Unavailable):
        OpenAIEmbedder(url=fake.url).embed(["x"])


def test_connection_refused_raises_unavailable() -> None:
    server = FakeServer()
    url = server.url
    server.close()
    with pytest.raises(Unavailable):
        OpenAIEmbedder(url=url, timeout=2).embed(["x"])


def test_empty_input_makes_no_call(fake: FakeServer) -> None:
    assert OpenAIEmbedder(url=fake.url, dim=3).embed([]).shape == (0, 3)
    assert fake.requests == []
