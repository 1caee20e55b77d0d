"""The assemble benchmark (in process): `run_assemble_bench(sizes, calls, embedder) -> BenchTable`.

For each size it loads that many memories for one entity into a fresh SQLiteStore in a temp dir
(realistic short texts from templates, a tenth of them facts, timestamps spread over two years),
embeds the distinct texts once through the EmbeddingCache (batch writes; at most `max_unique` distinct
texts, reused round-robin above that so 100k does not take an hour with minilm), warms the index with
one call, then times `calls` assemble calls with varied turns, presets and budgets.
It reports p50/p95 of the whole call and of each stage (embed, channels, fuse, budget, render).
Vectors of the corpus texts are kept in `vector_cache` (a SQLite file, default
`./data/bench-embeddings.db`, git-ignored), so a second run does not embed the corpus again;
`vector_cache=None` disables it.

    from engine.retrieval.bench import run_assemble_bench
    print(run_assemble_bench(sizes=(1000, 10000), calls=200).format())
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import msgspec
import numpy as np

from engine.embed.base import Embedder
from engine.embed.cache import EmbeddingCache
from engine.embed.registry import create_embedder
from engine.models import Memory, text_hash
from engine.retrieval.options import AssembleRequest
from engine.retrieval.pipeline import run_assemble
from engine.retrieval.responses import StageTimings
from engine.storage.base import Store

STAGES: tuple[str, ...] = ("embed", "channels", "fuse", "budget", "render", "total")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
ORG = "org_bench"
ENTITY = "ent:user"

PEOPLE = ["Alice", "Bob", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi",
          "Luca", "Maya", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara"]
PLACES = ["Paris", "Berlin", "Lisbon", "Tokyo", "Nairobi", "Toronto", "Lyon", "Oslo", "Austin", "Seoul",
          "the office", "the gym", "the park", "the library", "the airport", "home"]
THINGS = ["green tea", "jazz", "hiking", "sourdough bread", "chess", "sci-fi novels", "cycling",
          "Italian food", "yoga", "board games", "photography", "gardening", "running", "sushi",
          "podcasts", "woodworking", "salsa dancing", "climbing", "pottery", "birdwatching"]
TOPICS = ["the quarterly budget", "a new apartment", "the product launch", "a job interview",
          "the wedding plans", "a doctor's appointment", "the car repair", "a birthday party",
          "the tax return", "a marathon", "the team offsite", "a visa application", "the garden",
          "a flight delay", "the kids' school", "a conference talk", "the hiring plan", "a vacation"]
VERBS = ["met", "called", "had lunch with", "argued with", "went hiking with", "emailed",
         "visited", "texted", "worked late with", "celebrated with"]
PREDICATES = [("likes", THINGS), ("lives_in", PLACES[:10]), ("works_at", ["Acme", "Globex", "Initech",
              "Umbrella", "Stark Industries", "Wayne Enterprises"]), ("allergic_to", ["peanuts",
              "cats", "pollen", "shellfish"]), ("speaks", ["French", "Spanish", "Japanese", "German"])]
TURNS = [
    "What does the user think about {thing}?", "Remind me what happened with {person} in {place}.",
    "Any plans about {topic}?", "Did I ever talk to {person} about {topic}?",
    "Where does {person} live these days?", "What should I bring to {place} tomorrow?",
    "Summarize what we know about {topic} and {thing}.", "When did I last see {person}?",
    "I'm heading to {place} with {person}; anything I should remember?", "What do I like besides {thing}?",
]


class StageStats(msgspec.Struct, kw_only=True):
    p50: float
    p95: float


class BenchRow(msgspec.Struct, kw_only=True):
    size: int
    calls: int
    distinct_texts: int
    load_s: float  # put_memories (batched)
    embed_s: float  # embedding the distinct texts (cache misses only)
    warm_ms: float  # the first call (builds the in-process index)
    stages: dict[str, StageStats]


class BenchTable(msgspec.Struct, kw_only=True):
    embedder: str
    rows: list[BenchRow]

    def format(self) -> str:
        head = f"assemble benchmark, in process, embedder={self.embedder}\n"
        cols = ["size", "calls", "p50 ms", "p95 ms"] + [f"{s} p50/p95" for s in STAGES[:-1]]
        lines = [" | ".join(cols), " | ".join("---" for _ in cols)]
        for r in self.rows:
            t = r.stages["total"]
            cells = [str(r.size), str(r.calls), f"{t.p50:.1f}", f"{t.p95:.1f}"]
            cells += [f"{r.stages[s].p50:.1f}/{r.stages[s].p95:.1f}" for s in STAGES[:-1]]
            lines.append(" | ".join(cells))
        lines.append("")
        lines += [f"size {r.size}: load {r.load_s:.1f} s, embed {r.distinct_texts} distinct texts "
                  f"{r.embed_s:.1f} s, first call {r.warm_ms:.0f} ms" for r in self.rows]
        return head + "\n".join(lines)


def _text(rng: random.Random, kind: str) -> tuple[str, dict[str, object]]:
    p, q = rng.sample(PEOPLE, 2)
    if kind == "fact":
        pred, values = rng.choice(PREDICATES)
        value = rng.choice(values)
        subject = rng.choice([None, p])
        who = "The user" if subject is None else p
        phrase = {"likes": "likes", "lives_in": "lives in", "works_at": "works at",
                  "allergic_to": "is allergic to", "speaks": "speaks"}[pred]
        slug = f"ent:{(subject or 'user').lower()}"
        return f"{who} {phrase} {value}", {"predicate": pred, "object": value, "subject": slug}
    if kind == "event":
        return (f"{rng.choice(['Yesterday', 'Last week', 'On Monday', 'This morning', 'In March'])} the user "
                f"{rng.choice(VERBS)} {p} in {rng.choice(PLACES)} about {rng.choice(TOPICS)}"), {}
    return (f"{p} mentioned {rng.choice(TOPICS)} while talking about {rng.choice(THINGS)} with {q}; "
            f"follow up at {rng.choice(PLACES)}"), {}


def corpus(n: int, *, max_unique: int = 20_000, seed: int = 0) -> list[Memory]:
    rng = random.Random(seed)
    distinct: list[tuple[str, str, dict[str, object]]] = []
    seen: set[str] = set()
    attempts = 0
    while len(distinct) < min(n, max_unique) and attempts < max_unique * 20:
        attempts += 1
        kind = "fact" if len(distinct) % 10 == 0 else rng.choice(["event", "event", "note"])
        text, extra = _text(rng, kind)
        if kind == "note" and text in seen:
            text = f"{text} (#{len(distinct)})"
        if text not in seen:
            seen.add(text)
            distinct.append((kind, text, extra))
    out: list[Memory] = []
    for i in range(n):
        kind, text, extra = distinct[i % len(distinct)]
        ts = NOW - timedelta(minutes=rng.randrange(0, 2 * 365 * 24 * 60))
        out.append(Memory(
            memory_id=f"mem_{i:07d}", org_id=ORG, entity_id=ENTITY, type=kind,  # type: ignore[arg-type]
            text=text, timestamp=ts, created_at=ts, updated_at=ts,
            confidence=round(rng.uniform(0.5, 1.0), 2) if kind == "fact" else None,
            subject=extra.get("subject"), predicate=extra.get("predicate"),  # type: ignore[arg-type]
            object=extra.get("object"),  # type: ignore[arg-type]
        ))
    return out


def requests(calls: int, seed: int = 1) -> list[AssembleRequest]:
    rng = random.Random(seed)
    out: list[AssembleRequest] = []
    for i in range(calls):
        turn = rng.choice(TURNS).format(thing=rng.choice(THINGS), person=rng.choice(PEOPLE),
                                        place=rng.choice(PLACES), topic=rng.choice(TOPICS))
        preset = rng.choice(["balanced", "balanced", "balanced", "fast", "factual", "recent", "graphy"])
        body = {"entity_id": ENTITY, "turn": f"{turn} ({i})",
                "budget": {"max_context_tokens": rng.choice([512, 1200, 1200, 2000])},
                "retrieval": {"preset": preset}}
        out.append(msgspec.convert(body, AssembleRequest))
    return out


def _stats(values: Sequence[float]) -> StageStats:
    arr = np.asarray(values, dtype=np.float64)
    return StageStats(p50=float(np.percentile(arr, 50)), p95=float(np.percentile(arr, 95)))


DEFAULT_VECTOR_CACHE = os.path.join("data", "bench-embeddings.db")


def _embed_corpus(store: Store, embedder: Embedder, texts: list[str], vector_cache: str | None) -> None:
    """Put a vector for every text into `store`, embedding only what `vector_cache` lacks."""
    from engine.storage.sqlite import SQLiteStore

    if vector_cache is None:
        EmbeddingCache(embedder, store, batch_size=128).embed(texts)
        return
    persistent = SQLiteStore(vector_cache)
    try:
        vectors = EmbeddingCache(embedder, persistent, batch_size=128, lru_size=1).embed(texts)
        batch = {text_hash(t): v for t, v in zip(texts, vectors, strict=True)}
        store.put_embeddings(embedder.model, batch)
    finally:
        persistent.close()


def bench_size(n: int, calls: int, embedder: Embedder, *, max_unique: int = 20_000,
               directory: str | None = None, vector_cache: str | None = DEFAULT_VECTOR_CACHE) -> BenchRow:
    from engine.storage.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        store = SQLiteStore(os.path.join(tmp, "bench.db"))
        try:
            memories = corpus(n, max_unique=max_unique)
            t = time.perf_counter()
            distinct = list(dict.fromkeys(m.text for m in memories))
            _embed_corpus(store, embedder, distinct, vector_cache)
            cache = EmbeddingCache(embedder, store)
            embed_s = time.perf_counter() - t
            t = time.perf_counter()
            for start in range(0, n, 2000):
                with store.transaction():
                    store.put_memories(memories[start : start + 2000])
            load_s = time.perf_counter() - t
            reqs = requests(calls + 1)
            t = time.perf_counter()
            run_assemble(store, cache, org_id=ORG, agent_id=None, request=reqs[0], request_id="req_warm",
                         now=NOW)
            warm_ms = (time.perf_counter() - t) * 1000.0
            timings: list[StageTimings] = []
            for i, req in enumerate(reqs[1:]):
                out = run_assemble(store, cache, org_id=ORG, agent_id=None, request=req,
                                   request_id=f"req_{i}", now=NOW)
                timings.append(out.timings)
        finally:
            store.close()
    stages = {s: _stats([getattr(tm, s) for tm in timings]) for s in STAGES}
    return BenchRow(size=n, calls=calls, distinct_texts=len(distinct), load_s=load_s, embed_s=embed_s,
                    warm_ms=warm_ms, stages=stages)


def run_assemble_bench(sizes: Sequence[int] = (1000, 10000, 100000), calls: int = 200,
                       embedder: Embedder | str | None = None, *, max_unique: int = 20_000,
                       vector_cache: str | None = DEFAULT_VECTOR_CACHE) -> BenchTable:
    if embedder is None:
        embedder = os.environ.get("LOCI_EMBEDDER", "minilm")
    emb = create_embedder(embedder) if isinstance(embedder, str) else embedder
    rows = [bench_size(n, calls, emb, max_unique=max_unique, vector_cache=vector_cache) for n in sizes]
    return BenchTable(embedder=emb.model, rows=rows)


if __name__ == "__main__":  # python -m engine.retrieval.bench [sizes...]
    import sys

    chosen = tuple(int(a) for a in sys.argv[1:]) or (1000, 10000)
    print(run_assemble_bench(sizes=chosen).format())
