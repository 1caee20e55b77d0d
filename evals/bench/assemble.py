"""`loci bench assemble`: assemble latency at several corpus sizes, in process and over HTTP.

For each size: a fresh SQLite data directory under the cache dir gets `size` memories of one entity
(evals.bench.corpus: distinct short texts, a tenth facts) and their vectors (from the persistent
VectorCache, so only the first run embeds); one warm call builds the in-process index, then `calls`
assemble calls with varied turns, presets and budgets (evals.bench.turns) run through
`pipeline.run_assemble` (per-stage timings from the pipeline). With `http`, a real `loci serve`
subprocess opens the same SQLite file and the same calls (ingest off, so nothing is written) are sent
over loopback with a bearer key; the HTTP figures are client wall times.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import msgspec

from engine.embed.base import Embedder
from engine.embed.cache import EmbeddingCache
from engine.retrieval.options import AssembleRequest, IngestOptions
from engine.retrieval.pipeline import run_assemble
from engine.retrieval.responses import StageTimings
from evals.bench import corpus
from evals.bench.harness import LociServer, Pct, bench_dir, bench_key, open_bench_store, pct, timed_post
from evals.bench.turns import assemble_requests
from evals.bench.vectors import DEFAULT_CACHE_DIR, VectorCache

#: the pipeline's stages; "other" = total minus their sum (work between the timed stages)
STAGES: tuple[str, ...] = ("embed", "channels", "fuse", "expand", "budget", "render", "other", "total")
#: (size, stage "total" p50 target ms or None, p95 target ms or None): the latency targets
TARGETS: dict[int, tuple[float | None, float | None]] = {10_000: (25.0, 50.0), 100_000: (None, 100.0)}


class AssembleRow(msgspec.Struct, kw_only=True):
    size: int
    calls: int
    load_s: float  # memories + vectors into the bench store
    warm_ms: float  # first in-process call (builds the index)
    stages: dict[str, Pct]  # in process, from the pipeline's timings
    http: Pct | None = None  # client wall time per POST /v0/context/assemble
    http_warm_ms: float | None = None


class AssembleTable(msgspec.Struct, kw_only=True):
    embedder: str
    rows: list[AssembleRow]
    embedded_texts: int = 0  # vector-cache misses embedded by this run
    embed_rate: float | None = None  # texts per second for those
    standins: int = 0  # corpus texts given stand-in vectors (max_embed reached; see evals.bench.vectors)

    def format(self) -> str:
        cols = [
            "size",
            "calls",
            "p50 ms",
            "p95 ms",
            *[f"{s} p50/p95" for s in STAGES[:-1]],
            "http p50 ms",
            "http p95 ms",
            "target (p50/p95)",
        ]
        lines = [
            f"assemble benchmark, embedder={self.embedder} (in process: pipeline timings; http: client "
            "wall time against loci serve)",
            " | ".join(cols),
            " | ".join("---" for _ in cols),
        ]
        for r in self.rows:
            t = r.stages["total"]
            http = [f"{r.http.p50:.1f}", f"{r.http.p95:.1f}"] if r.http is not None else ["-", "-"]
            lines.append(
                " | ".join(
                    [
                        str(r.size),
                        str(r.calls),
                        f"{t.p50:.1f}",
                        f"{t.p95:.1f}",
                        *[r.stages[s].cell() for s in STAGES[:-1]],
                        *http,
                        verdict(r),
                    ]
                )
            )
        lines.append("")
        for r in self.rows:
            extra = f", http first call {r.http_warm_ms:.0f} ms" if r.http_warm_ms is not None else ""
            lines.append(f"size {r.size}: load {r.load_s:.1f} s, first call {r.warm_ms:.0f} ms{extra}")
        if self.embedded_texts:
            lines.append(
                f"embedded {self.embedded_texts} corpus texts not yet cached ({self.embed_rate or 0:.0f}/s)"
            )
        if self.standins:
            lines.append(
                f"WARNING: {self.standins} corpus texts got stand-in (random unit) vectors, not "
                f"{self.embedder} ones (--max-embed reached): latency only, not retrieval quality"
            )
        return "\n".join(lines)


def verdict(row: AssembleRow) -> str:
    target = TARGETS.get(row.size)
    if target is None:
        return "-"
    p50, p95 = target
    t = row.stages["total"]
    ok = (p50 is None or t.p50 <= p50) and (p95 is None or t.p95 <= p95)
    want = f"{'-' if p50 is None else f'<={p50:.0f}'}/{'-' if p95 is None else f'<={p95:.0f}'}"
    return f"{want} {'MET' if ok else 'MISSED'}"


def stage_ms(timings: StageTimings, stage: str) -> float:
    if stage == "other":
        return max(0.0, timings.total - sum(float(getattr(timings, s)) for s in STAGES[:-2]))
    return float(getattr(timings, stage))


def http_body(request: AssembleRequest) -> bytes:
    """The same request as JSON with ingest off (a pure read, like the in-process call)."""
    return msgspec.json.encode(
        msgspec.structs.replace(request, ingest=IngestOptions(extract=False, store_turn="none"))
    )


def bench_size(
    size: int,
    calls: int,
    embedder: Embedder,
    embedder_name: str,
    vectors: VectorCache,
    *,
    http: bool,
    cache_dir: str,
    progress: TextIO | None,
) -> AssembleRow:
    with bench_dir(cache_dir, f"assemble-{size}") as data_dir:
        store = open_bench_store(data_dir)
        try:
            t = time.perf_counter()
            memories = corpus.memories(size)
            vectors.fill_store(store, [m.text for m in memories], progress=progress)
            for start in range(0, size, 5000):
                with store.transaction():
                    store.put_memories(memories[start : start + 5000])
            secret = bench_key(store, corpus.ORG)
            load_s = time.perf_counter() - t
            reqs = assemble_requests(calls + 1)
            cache = EmbeddingCache(embedder, store)
            t = time.perf_counter()
            run_assemble(
                store,
                cache,
                org_id=corpus.ORG,
                agent_id=None,
                request=reqs[0],
                request_id="req_warm",
                now=corpus.NOW,
            )
            warm_ms = (time.perf_counter() - t) * 1000.0
            timings: list[StageTimings] = []
            for i, req in enumerate(reqs[1:]):
                timings.append(
                    run_assemble(
                        store,
                        cache,
                        org_id=corpus.ORG,
                        agent_id=None,
                        request=req,
                        request_id=f"req_{i}",
                        now=corpus.NOW,
                    ).timings
                )
            row = AssembleRow(
                size=size,
                calls=calls,
                load_s=load_s,
                warm_ms=warm_ms,
                stages={s: pct([stage_ms(tm, s) for tm in timings]) for s in STAGES},
            )
            if progress is not None:
                print(
                    f"  size {size}: in process p50 {row.stages['total'].p50:.1f} ms",
                    file=progress,
                    flush=True,
                )
            if http:
                with LociServer(data_dir, embedder_name) as server, server.client(secret) as client:
                    bodies = [http_body(r) for r in reqs]
                    row.http_warm_ms = timed_post(client, "/v0/context/assemble", bodies[0])
                    row.http = pct([timed_post(client, "/v0/context/assemble", b) for b in bodies[1:]])
        finally:
            store.close()
    return row


def run(
    sizes: Sequence[int],
    calls: int,
    embedder: Embedder,
    *,
    embedder_name: str,
    http: bool = True,
    cache_dir: str = DEFAULT_CACHE_DIR,
    max_embed: int | None = None,
    progress: TextIO | None = sys.stderr,
) -> AssembleTable:
    vectors = VectorCache(embedder, cache_dir, max_embed=max_embed)
    try:
        rows = []
        for size in sizes:
            if progress is not None:
                print(f"assemble bench: size {size}", file=progress, flush=True)
            rows.append(
                bench_size(
                    size,
                    calls,
                    embedder,
                    embedder_name,
                    vectors,
                    http=http,
                    cache_dir=cache_dir,
                    progress=progress,
                )
            )
        rate = vectors.embedded / vectors.embed_s if vectors.embed_s > 0 else None
        return AssembleTable(
            embedder=vectors.model,
            rows=rows,
            embedded_texts=vectors.embedded,
            embed_rate=None if rate is None or math.isnan(rate) else rate,
            standins=vectors.standins,
        )
    finally:
        vectors.close()
