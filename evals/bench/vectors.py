"""A persistent vector cache for benchmark corpora, so reruns do not re-embed 100k texts.

The cache is the `embeddings` table of a SQLiteStore at `<cache_dir>/vectors-2.db`, keyed by
(model, text hash) exactly like the service's own cache; `fill_store` copies the vectors a bench store
needs into that store's embeddings table (so the bench store's semantic index finds them).

`max_embed` bounds how many uncached texts one run embeds (MiniLM on a busy CPU embeds slowly).
Texts beyond it get a STAND-IN vector: a deterministic random unit vector seeded by the text hash,
never persisted; `standins` counts them and the bench reports it, because such a run measures latency
(the index has the same size and shape) but not retrieval quality.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from engine.embed.base import Embedder
from engine.embed.cache import EmbeddingCache
from engine.models import text_hash
from engine.storage.base import Store, Vector
from engine.storage.sqlite import SQLiteStore

DEFAULT_CACHE_DIR = "./data/bench-cache"
#: the file name; `vectors.db` held vectors embedded several texts to a pass, which int8 moves slightly
CACHE_FILE = "vectors-2.db"
CHUNK = 2048  # texts embedded (and persisted) per step: an interrupted fill resumes where it stopped


def standin(h: str, dim: int) -> Vector:
    """A deterministic random unit vector for text hash `h` (see the module docstring)."""
    vec = np.random.default_rng(int(h[:16], 16)).standard_normal(dim).astype(np.float32)
    out: Vector = vec / np.linalg.norm(vec)
    return out


class VectorCache:
    def __init__(
        self, embedder: Embedder, cache_dir: str = DEFAULT_CACHE_DIR, *, max_embed: int | None = None
    ) -> None:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        self.path = str(Path(cache_dir) / CACHE_FILE)
        self.store = SQLiteStore(self.path)
        self.cache = EmbeddingCache(embedder, self.store, lru_size=1, batch_size=256)
        #: seconds spent embedding cache misses, texts embedded (for the report)
        self.embed_s = 0.0
        self.embedded = 0
        self.max_embed = max_embed
        self.standins = 0

    @property
    def model(self) -> str:
        return self.cache.model

    def vectors(self, texts: Sequence[str], *, progress: TextIO | None = sys.stderr) -> dict[str, Vector]:
        """text hash -> vector for every text; misses are embedded in batches and persisted."""
        out: dict[str, Vector] = {}
        hashes = [text_hash(t) for t in texts]
        for start in range(0, len(texts), CHUNK):
            chunk_h = hashes[start : start + CHUNK]
            found = self.store.get_embeddings(self.model, chunk_h)
            missing = [
                t for t, h in zip(texts[start : start + CHUNK], chunk_h, strict=True) if h not in found
            ]
            if self.max_embed is not None and len(missing) > self.max_embed - self.embedded:
                allowed = max(0, self.max_embed - self.embedded)
                for t in missing[allowed:]:
                    found[text_hash(t)] = standin(text_hash(t), self.cache.embedder.dim)
                self.standins += len(missing) - allowed
                missing = missing[:allowed]
            if missing:
                t0 = time.perf_counter()
                for h, vec in zip(
                    (text_hash(t) for t in missing), self.cache.embed(missing, persist=True), strict=True
                ):
                    found[h] = vec
                self.embed_s += time.perf_counter() - t0
                self.embedded += len(missing)
                if progress is not None:
                    rate = self.embedded / self.embed_s if self.embed_s else 0.0
                    print(
                        f"  embedded {self.embedded} texts ({rate:.0f}/s), {start + len(chunk_h)}/{len(texts)}",
                        file=progress,
                        flush=True,
                    )
            out.update(found)
        return out

    def fill_store(self, store: Store, texts: Sequence[str], *, progress: TextIO | None = sys.stderr) -> None:
        vecs = self.vectors(texts, progress=progress)
        items = list(vecs.items())
        for start in range(0, len(items), 5000):
            with store.transaction():
                store.put_embeddings(self.model, dict(items[start : start + 5000]))

    def close(self) -> None:
        self.store.close()
