"""A micro-benchmark of the retrieval channels on a synthetic corpus (not a test).

from evals.bench.channels import run_benchmark
print(run_benchmark(n=100_000))            # InMemoryStore
print(run_benchmark(n=20_000, target="sqlite:///tmp/bench.db"))
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import msgspec
import numpy as np

from engine.models import Memory, text_hash
from engine.storage.base import Scope, Store


class ChannelTiming(msgspec.Struct, kw_only=True):
    channel: str
    median_ms: float
    p90_ms: float


class BenchResult(msgspec.Struct, kw_only=True):
    n: int
    dim: int
    target: str
    load_s: float  # put_memories + put_embeddings
    first_search_s: float  # builds the index (rows + vectors)
    channels: list[ChannelTiming]


def synthetic_corpus(n: int, dim: int, seed: int = 0) -> tuple[list[Memory], dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    weights = 1.0 / np.arange(1, vocab.size + 1)
    weights /= weights.sum()
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    memories: list[Memory] = []
    vectors: dict[str, np.ndarray] = {}
    words = rng.choice(vocab, size=(n, 16), p=weights)
    entities = rng.integers(0, 2000, size=(n, 2))
    for i in range(n):
        text = " ".join(words[i]) + f" doc{i}"
        memories.append(
            Memory(
                memory_id=f"mem_{i:08d}",
                org_id="org_bench",
                type="fact" if i % 3 else "note",
                text=text,
                entity_id=f"ent:e{entities[i, 0]}",
                subject=f"ent:e{entities[i, 0]}",
                object=f"ent:e{entities[i, 1]}",
                agent_id=f"agent{i % 4}",
                status="superseded" if i % 17 == 0 else "active",
                timestamp=t0 + timedelta(seconds=i),
                created_at=t0,
                updated_at=t0,
            )
        )
    block = rng.standard_normal((n, dim)).astype(np.float32)
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    for i, m in enumerate(memories):
        vectors[text_hash(m.text)] = block[i]
    return memories, vectors


def run_benchmark(
    n: int = 100_000, dim: int = 384, target: str = "memory", repeats: int = 20, k: int = 50, seed: int = 0
) -> BenchResult:
    from engine.storage import open_store

    store: Store = open_store(target)
    memories, vectors = synthetic_corpus(n, dim, seed)
    start = time.perf_counter()
    for i in range(0, n, 5000):
        store.put_memories(memories[i : i + 5000])
    store.put_embeddings("bench", vectors)
    load_s = time.perf_counter() - start
    now = datetime(2030, 1, 1, tzinfo=UTC)
    scope = Scope(org_id="org_bench", now=now)
    rng = np.random.default_rng(seed + 1)
    query = rng.standard_normal(dim).astype(np.float32)
    start = time.perf_counter()
    store.search.keyword_search(scope, "w1 w50", k)
    store.search.vector_search(scope, "bench", query, k)
    first_search_s = time.perf_counter() - start
    calls: dict[str, Callable[[], object]] = {
        "vector": lambda: store.search.vector_search(scope, "bench", query, k),
        "vector_agent": lambda: store.search.vector_search(
            Scope(org_id="org_bench", now=now, agent_id="agent1"), "bench", query, k
        ),
        "keyword": lambda: store.search.keyword_search(scope, "w3 w120 w4000 doc77", k),
        "keyword_entity": lambda: store.search.keyword_search(
            Scope(org_id="org_bench", now=now, entity_id="ent:e7"), "w3 w120", k
        ),
        "graph_depth2": lambda: store.search.graph_search(scope, ["ent:e7"], 2, k),
        "scope_size": lambda: store.search.scope_size(scope),
    }
    timings: list[ChannelTiming] = []
    for name, call in calls.items():
        samples = []
        for _ in range(repeats):
            t = time.perf_counter()
            call()
            samples.append((time.perf_counter() - t) * 1000)
        samples.sort()
        timings.append(
            ChannelTiming(
                channel=name,
                median_ms=statistics.median(samples),
                p90_ms=samples[int(0.9 * (len(samples) - 1))],
            )
        )
    store.close()
    return BenchResult(
        n=n, dim=dim, target=target, load_s=load_s, first_search_s=first_search_s, channels=timings
    )


if __name__ == "__main__":  # pragma: no cover
    import sys

    result = run_benchmark(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
    print(msgspec.json.format(msgspec.json.encode(result)).decode())
