"""An embedder that remembers its vectors on disk, so repeated eval runs embed each text once.

    embedder = cached_embedder("minilm")          # the MiniLM embedder behind ./data/eval-cache/vectors-2.db
    embedder.embed(["Caroline: I went to ..."])    # read from the cache, or embedded and stored

The cache is `evals.bench.vectors.VectorCache` (a SQLite file keyed by (model, text hash), the
service's own cache key), so a run replaying LoCoMo with MiniLM pays the embedding of its ~5,900
turns and ~1,500 questions once per machine. The `hash` embedder is never wrapped (it is faster
than a cache lookup).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine.embed.base import Embedder
from engine.embed.registry import create_embedder
from engine.models import text_hash

DEFAULT_DIR = os.environ.get("LOCI_EVAL_CACHE", "./data/eval-cache")


class CachedEmbedder:
    """The `Embedder` protocol over another embedder and a persistent vector cache."""

    def __init__(self, inner: Embedder, cache_dir: str = DEFAULT_DIR) -> None:
        from evals.bench.vectors import VectorCache

        self.inner = inner
        self.model = inner.model
        self.dim = inner.dim
        self._cache = VectorCache(inner, cache_dir)
        self._lock = threading.Lock()  # one SQLite connection: one caller at a time

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            found = self._cache.vectors(list(texts), progress=None)
        return np.stack([np.asarray(found[text_hash(t)], dtype=np.float32) for t in texts])

    def close(self) -> None:
        self._cache.close()


def cached_embedder(name: str, cache_dir: str | None = DEFAULT_DIR) -> Embedder:
    """The named embedder, behind the vector cache unless it is `hash` or `cache_dir` is None."""
    inner = create_embedder(name)
    if name == "hash" or cache_dir is None:
        return inner
    return CachedEmbedder(inner, cache_dir)


__all__: Sequence[str] = ("DEFAULT_DIR", "CachedEmbedder", "cached_embedder")
