"""`loci bench ingest`: write throughput (memories per second) and assemble-with-ingest per turn.

Throughput, each mode on its own distinct texts (so no embedding-cache hits) and a fresh store:
- in process: `MemoryService.create` with one draft per call (single) or 200 per call (batch);
- over HTTP: one `POST /v0/memories` per memory (single) or `{"items": [200]}` (batch), against a real
  `loci serve` subprocess. Embedding the texts is part of every write (it is in production too).
Assemble with ingest (extract + supersede + store the turn), per turn, with first-person turns:
- in process: the route's two engine calls (`engine.assemble.prepare_assemble`: retrieval, then
  extraction and embedding; `commit_assemble`) on the in-process batch store, timed per step;
- over HTTP: `POST /v0/context/assemble` with the default `ingest` on the server's store.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

import msgspec

from engine.assemble import Engine, commit_assemble, prepare_assemble
from engine.embed.base import Embedder
from engine.embed.cache import EmbeddingCache
from engine.extract import create_extractor
from engine.memory_service import MAX_BATCH, MemoryCreate, MemoryService
from engine.retrieval.options import AssembleRequest, Budget
from engine.storage.base import Store
from engine.timeutil import utcnow
from evals.bench import corpus
from evals.bench.harness import LociServer, Pct, bench_dir, bench_key, open_bench_store, pct, timed_post
from evals.bench.vectors import DEFAULT_CACHE_DIR

TURN_STEPS: tuple[str, ...] = ("retrieve", "extract+embed", "commit", "total")


class RateRow(msgspec.Struct, kw_only=True):
    mode: str  # "single" | "batch"
    path: str  # "in process" | "http"
    memories: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.memories / self.seconds if self.seconds > 0 else float("nan")


class TurnRow(msgspec.Struct, kw_only=True):
    path: str
    calls: int
    store_size: int
    steps: dict[str, Pct]  # in process: TURN_STEPS; http: {"total": ...}
    facts_per_turn: float | None = None


class IngestTable(msgspec.Struct, kw_only=True):
    embedder: str
    n: int
    rates: list[RateRow]
    turns: list[TurnRow]

    def format(self) -> str:
        lines = [
            f"ingest benchmark, embedder={self.embedder}, {self.n} memories per mode (embedding included)",
            "mode | path | memories | seconds | memories/s",
            "--- | --- | --- | --- | ---",
        ]
        lines += [f"{r.mode} | {r.path} | {r.memories} | {r.seconds:.3f} | {r.rate:.1f}" for r in self.rates]
        lines += [
            "",
            "assemble with ingest (extract + supersede + store turn), per turn",
            "path | calls | store size | "
            + " | ".join(f"{s} p50/p95 ms" for s in TURN_STEPS)
            + " | facts/turn",
            " | ".join("---" for _ in range(4 + len(TURN_STEPS))),
        ]
        for t in self.turns:
            cells = [t.steps[s].cell() if s in t.steps else "-" for s in TURN_STEPS]
            facts = f"{t.facts_per_turn:.2f}" if t.facts_per_turn is not None else "-"
            lines.append(" | ".join([t.path, str(t.calls), str(t.store_size), *cells, facts]))
        return "\n".join(lines)


def _json(draft: MemoryCreate) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(draft)
    return {k: v for k, v in data.items() if v is not None}


def _chunks(items: Sequence[MemoryCreate], size: int) -> list[Sequence[MemoryCreate]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def write_in_process(store: Store, embedder: Embedder, drafts: Sequence[MemoryCreate], batch: int) -> float:
    service = MemoryService(store, embeddings=EmbeddingCache(embedder, store))
    t = time.perf_counter()
    for chunk in _chunks(drafts, batch):
        service.create(corpus.ORG, chunk)
    return time.perf_counter() - t


def write_http(server: LociServer, secret: str, drafts: Sequence[MemoryCreate], batch: int) -> float:
    with server.client(secret) as client:
        if batch == 1:
            bodies = [msgspec.json.encode(_json(d)) for d in drafts]
        else:
            bodies = [
                msgspec.json.encode({"items": [_json(d) for d in chunk]}) for chunk in _chunks(drafts, batch)
            ]
        t = time.perf_counter()
        for body in bodies:
            timed_post(client, "/v0/memories", body)
        return time.perf_counter() - t


def turn_request(turn: str) -> AssembleRequest:
    return AssembleRequest(entity_id=corpus.ENTITY, turn=turn, budget=Budget(max_context_tokens=1200))


def turns_in_process(store: Store, embedder: Embedder, turns: Sequence[str]) -> TurnRow:
    engine = Engine(
        store=store, embeddings=EmbeddingCache(embedder, store), extractor=create_extractor("rules")
    )
    steps: dict[str, list[float]] = {s: [] for s in TURN_STEPS}
    facts = 0
    size = store.count_memories(corpus.ORG)
    for i, turn in enumerate(turns):
        t0 = time.perf_counter()
        prepared = prepare_assemble(
            engine,
            org_id=corpus.ORG,
            agent_id=None,
            request=turn_request(turn),
            request_id=f"req_t{i}",
            now=utcnow(),
        )
        t1 = time.perf_counter()
        commit_assemble(engine, prepared)
        t2 = time.perf_counter()
        facts += len(prepared.plan.extraction.facts)
        retrieve = prepared.timings.total / 1000.0
        for name, ms in zip(TURN_STEPS, (retrieve, t1 - t0 - retrieve, t2 - t1, t2 - t0), strict=True):
            steps[name].append(ms * 1000.0)
    return TurnRow(
        path="in process",
        calls=len(turns),
        store_size=size,
        steps={s: pct(v) for s, v in steps.items()},
        facts_per_turn=facts / max(1, len(turns)),
    )


def turns_http(server: LociServer, secret: str, turns: Sequence[str], store_size: int) -> TurnRow:
    with server.client(secret) as client:
        bodies = [msgspec.json.encode(turn_request(t)) for t in turns]
        times = [timed_post(client, "/v0/context/assemble", b) for b in bodies]
    return TurnRow(path="http", calls=len(turns), store_size=store_size, steps={"total": pct(times)})


def run(
    n: int,
    embedder: Embedder,
    *,
    embedder_name: str,
    turns: int = 100,
    http: bool = True,
    cache_dir: str = DEFAULT_CACHE_DIR,
    progress: TextIO | None = sys.stderr,
) -> IngestTable:
    def say(msg: str) -> None:
        if progress is not None:
            print(msg, file=progress, flush=True)

    embedder.embed(["warm up the embedder"])
    rates: list[RateRow] = []
    turn_rows: list[TurnRow] = []
    turn_texts = corpus.ingest_turns(turns)
    for mode, batch, seed in (("single", 1, 101), ("batch", MAX_BATCH, 202)):
        with bench_dir(cache_dir, f"ingest-{mode}") as data_dir:
            store = open_bench_store(data_dir)
            try:
                say(f"ingest bench: {mode}, in process")
                drafts = corpus.ingest_drafts(n, seed)
                rates.append(
                    RateRow(
                        mode=mode,
                        path="in process",
                        memories=n,
                        seconds=write_in_process(store, embedder, drafts, batch),
                    )
                )
                if mode == "batch":
                    say("ingest bench: assemble with ingest, in process")
                    turn_rows.append(turns_in_process(store, embedder, turn_texts))
            finally:
                store.close()
    if http:
        with bench_dir(cache_dir, "ingest-http") as data_dir:
            store = open_bench_store(data_dir)
            secret = bench_key(store, corpus.ORG)
            try:
                with LociServer(data_dir, embedder_name) as server:
                    write_http(server, secret, corpus.ingest_drafts(1, 999), 1)  # model loaded before timing
                    for mode, batch, seed in (("single", 1, 303), ("batch", MAX_BATCH, 404)):
                        say(f"ingest bench: {mode}, http")
                        drafts = corpus.ingest_drafts(n, seed)
                        rates.append(
                            RateRow(
                                mode=mode,
                                path="http",
                                memories=n,
                                seconds=write_http(server, secret, drafts, batch),
                            )
                        )
                    say("ingest bench: assemble with ingest, http")
                    turn_rows.append(turns_http(server, secret, turn_texts, store.count_memories(corpus.ORG)))
            finally:
                store.close()
    model = getattr(embedder, "model", embedder_name)
    return IngestTable(embedder=str(model), n=n, rates=rates, turns=turn_rows)
