"""`loci bench writes`: the store's share of a write, and whether it grows with the scope.

For each scope size N: a fresh SQLite store gets N memories of one entity (evals.bench.corpus) with
stand-in vectors, its in-process index is built (a search, as a serving process would have done),
then batches of 200 LoCoMo turns and single LoCoMo turns are written through `MemoryService` into the
same entity. The embedder is a stand-in (deterministic random unit vectors, `evals.bench.vectors.standin`)
so the figures are the store's own cost: validation, ids, one fsync'd commit with the memories, their
vectors and events, and the in-process index update. Add the encoder's rate (`loci bench encoder`) for
a real write.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TextIO

import msgspec
import numpy as np
import numpy.typing as npt

from engine.embed.cache import EmbeddingCache
from engine.memory_service import MAX_BATCH, MemoryCreate, MemoryService
from engine.models import text_hash
from engine.storage.base import Scope, Store
from evals.bench import corpus
from evals.bench.harness import Pct, bench_dir, open_bench_store, pct
from evals.bench.vectors import DEFAULT_CACHE_DIR, standin


class StandinEmbedder:
    """Deterministic unit vectors by text hash: no model cost, so only the store is measured."""

    model = "standin"
    dim = 384

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([standin(text_hash(t), self.dim) for t in texts]).astype(np.float32)


class WritesRow(msgspec.Struct, kw_only=True):
    scope: int
    batch_ms: list[float]  # per batch of 200
    single: Pct  # ms per single write

    @property
    def rate(self) -> float:
        return MAX_BATCH / (float(np.median(self.batch_ms)) / 1000.0)


class WritesTable(msgspec.Struct, kw_only=True):
    batches: int
    singles: int
    rows: list[WritesRow]

    def format(self) -> str:
        lines = [
            f"writes benchmark (store only: stand-in vectors), SQLite, {self.batches} batches of "
            f"{MAX_BATCH} LoCoMo turns and {self.singles} single writes per scope size",
            "| memories in the scope | batch of 200 ms (each) | store rate / s | single write p50 / p95 ms |",
            "|---:|---|---:|---:|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.scope:,} | {' / '.join(f'{x:.0f}' for x in r.batch_ms)} | {r.rate:,.0f} | "
                f"{r.single.p50:.2f} / {r.single.p95:.2f} |"
            )
        return "\n".join(lines)


def _turns() -> list[str]:
    from evals.loaders import load_dataset

    return [t.memory_text() for c in load_dataset("locomo").conversations for t in c.turns]


def _preload(store: Store, size: int, embedder: StandinEmbedder) -> None:
    memories = corpus.memories(size)
    vectors = embedder.embed([m.text for m in memories])
    for start in range(0, size, 5000):
        chunk = memories[start : start + 5000]
        with store.transaction():
            store.put_embeddings(
                embedder.model,
                {text_hash(m.text): v for m, v in zip(chunk, vectors[start : start + 5000], strict=True)},
            )
            store.put_memories(chunk)


def bench_scope(size: int, turns: Sequence[str], *, batches: int, singles: int, cache_dir: str) -> WritesRow:
    embedder = StandinEmbedder()
    with bench_dir(cache_dir, f"writes-{size}") as data_dir:
        store = open_bench_store(data_dir)
        try:
            _preload(store, size, embedder)
            scope = Scope(org_id=corpus.ORG, entity_id=corpus.ENTITY, now=corpus.NOW)
            warm = embedder.embed(["warm"])[0]
            service = MemoryService(store, embeddings=EmbeddingCache(embedder, store))
            texts = iter(f"{turns[i % len(turns)]} ({i})" for i in range(10**9))  # distinct texts
            batch_ms: list[float] = []
            for _ in range(batches):
                store.search.vector_search(
                    scope, embedder.model, warm, 5
                )  # the index is built (at 0: once written)
                drafts = [
                    MemoryCreate(entity_id=corpus.ENTITY, type="event", text=next(texts))
                    for _ in range(MAX_BATCH)
                ]
                t = time.perf_counter()
                service.create(corpus.ORG, drafts)
                batch_ms.append((time.perf_counter() - t) * 1000.0)
            single_ms: list[float] = []
            for _ in range(singles):
                draft = MemoryCreate(entity_id=corpus.ENTITY, type="event", text=next(texts))
                t = time.perf_counter()
                service.create(corpus.ORG, [draft])
                single_ms.append((time.perf_counter() - t) * 1000.0)
        finally:
            store.close()
    return WritesRow(scope=size, batch_ms=batch_ms, single=pct(single_ms))


def run(
    sizes: Sequence[int],
    *,
    batches: int = 5,
    singles: int = 50,
    cache_dir: str = DEFAULT_CACHE_DIR,
    progress: TextIO | None = sys.stderr,
) -> WritesTable:
    turns = _turns()
    rows = []
    for size in sizes:
        if progress is not None:
            print(f"writes bench: scope of {size} memories", file=progress, flush=True)
        rows.append(bench_scope(size, turns, batches=batches, singles=singles, cache_dir=cache_dir))
    return WritesTable(batches=batches, singles=singles, rows=rows)
