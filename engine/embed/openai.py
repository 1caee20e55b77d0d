"""`openai`: any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, TEI, ...).

Settings (read at construction unless passed):
- `LOCI_EMBED_URL`: base URL, with or without a trailing `/v1` (e.g. `http://127.0.0.1:11434/v1` or
  `https://api.openai.com`); the embedder POSTs to `<base>/v1/embeddings` or `<base>/embeddings` when
  the base already ends in `/v1`.
- `LOCI_EMBED_MODEL`: model name sent in the body (default `text-embedding-3-small`).
- `LOCI_EMBED_API_KEY`: sent as `Authorization: Bearer ...` when set.
- `LOCI_EMBED_TIMEOUT`: seconds (default 10).
- `LOCI_EMBED_DIM`: expected dimension; otherwise learned from the first response.

Every failure (connection, timeout, non-2xx status, malformed body) raises `engine.errors.Unavailable`,
so the retrieval pipeline drops the semantic channel and reports `flags.degraded`.
Rows are L2-normalized here whatever the server returns.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt

from engine.embed.registry import EMBED_DIM_ENV as DIM_ENV
from engine.embed.registry import EMBED_TIMEOUT_ENV as TIMEOUT_ENV
from engine.envnum import env_number, env_whole
from engine.errors import Unavailable


def embeddings_url(base: str) -> str:
    base = base.rstrip("/")
    if base.endswith("/embeddings"):
        return base
    if base.endswith("/v1"):
        return f"{base}/embeddings"
    return f"{base}/v1/embeddings"


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        url: str | None = None,
        model_name: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        dim: int | None = None,
        batch_size: int = 128,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base = url or os.environ.get("LOCI_EMBED_URL") or "http://127.0.0.1:11434/v1"
        self.url = embeddings_url(base)
        self.model_name = model_name or os.environ.get("LOCI_EMBED_MODEL") or "text-embedding-3-small"
        self.model = f"openai:{self.model_name}"
        key = api_key if api_key is not None else os.environ.get("LOCI_EMBED_API_KEY")
        self.dim = dim or env_whole(os.environ, DIM_ENV, 0)
        self.batch_size = batch_size
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        t = timeout if timeout is not None else env_number(os.environ, TIMEOUT_ENV, 10.0, positive=True)
        self._client = httpx.Client(timeout=t, headers=headers, transport=transport)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    def _post(self, texts: list[str]) -> list[list[float]]:
        try:
            resp = self._client.post(self.url, json={"model": self.model_name, "input": texts})
        except httpx.HTTPError as exc:
            raise Unavailable(f"embeddings endpoint {self.url} failed: {exc}") from exc
        if resp.status_code // 100 != 2:
            raise Unavailable(
                f"embeddings endpoint {self.url} answered {resp.status_code}",
                details={"status": resp.status_code},
            )
        try:
            body: Any = resp.json()
            items = sorted(body["data"], key=lambda d: int(d.get("index", 0)))
            rows = [list(map(float, d["embedding"])) for d in items]
        except Exception as exc:
            raise Unavailable(f"embeddings endpoint {self.url} returned a malformed body: {exc}") from exc
        if len(rows) != len(texts):
            raise Unavailable(f"embeddings endpoint returned {len(rows)} rows for {len(texts)} texts")
        return rows

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._post(list(texts[start : start + self.batch_size])))
        arr = np.asarray(out, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[1] == 0:
            raise Unavailable("embeddings endpoint returned empty vectors")
        with self._lock:
            if not self.dim:
                self.dim = int(arr.shape[1])
        if arr.shape[1] != self.dim:
            raise Unavailable(f"embeddings endpoint returned dim {arr.shape[1]}, expected {self.dim}")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return np.ascontiguousarray(arr / norms, dtype=np.float32)
