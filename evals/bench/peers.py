"""`loci bench peers`: Loci next to mem0 (the `mem0ai` package, `pip install 'loci[peers]'`) on the same
data, the same MiniLM weights and the same machine load.

Data: LoCoMo turns (`<speaker>: <text>`, in time order) written for one user, and distinct LoCoMo
questions as reads. Both sides run in this process:
- Loci: a fresh SQLite store, `MemoryService` with the configured MiniLM embedder; bulk writes in
  batches of 200, single writes one memory per call, reads are `run_assemble` (the default preset or
  `preset`, 1,200 tokens, ingest off: a pure read);
- mem0: `Memory.from_config` with its huggingface embedder on the packaged MiniLM directory, the faiss
  vector store, `infer=False` (no LLM is called; its client gets a placeholder key and is never used)
  and telemetry off; bulk writes are `add` of 200 messages, single writes `add` of one, reads are
  `search` with top_k 24.
Calls alternate (a Loci batch, then a mem0 batch; a Loci read, then a mem0 read), so both see the same
load. Ratios are Loci / mem0 for latencies and Loci's rate / mem0's for throughput.
`rounds` > 1 repeats the reads on the same stores, each round with questions of its own (a question
asked twice would find Loci's query vector cached), and lists every round's read ratios and their
median: one p95 over a few hundred reads moves with the machine's noise, so one round is not the spread.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import msgspec

from engine.embed.base import Embedder
from engine.embed.cache import EmbeddingCache
from engine.memory_service import MAX_BATCH, MemoryCreate, MemoryService
from engine.retrieval.options import AssembleRequest, Budget, IngestOptions, RetrievalOptions
from engine.retrieval.pipeline import run_assemble
from engine.retrieval.responses import StageTimings
from engine.timeutil import utcnow
from evals.bench.harness import Pct, bench_dir, open_bench_store, pct
from evals.bench.vectors import DEFAULT_CACHE_DIR
from loci.wire.tuning import PresetName

ORG = "org_peers"
USER = "ent:user"
MEM0_USER = "user"
TOP_K = 24


class Turn(msgspec.Struct, frozen=True):
    text: str
    timestamp: Any  # datetime


class SideRow(msgspec.Struct, kw_only=True):
    name: str
    read: Pct
    single_write: Pct
    bulk_rate: float  # memories per second


class ReadRound(msgspec.Struct, kw_only=True):
    loci: Pct
    mem0: Pct

    def ratios(self) -> tuple[float, float]:
        """Loci / mem0 at p50 and at p95."""
        return self.loci.p50 / self.mem0.p50, self.loci.p95 / self.mem0.p95


class PeersTable(msgspec.Struct, kw_only=True):
    turns: int
    reads: int  # per round
    singles: int
    loci: SideRow  # reads: the first round
    mem0: SideRow
    embedder: str
    mem0_version: str
    rounds: list[ReadRound] = msgspec.field(default_factory=list)
    preset: PresetName | None = None  # Loci's reads: None is the default preset

    def format_rounds(self) -> list[str]:
        """Every read round's latencies and ratios, and the median ratios (empty for one round)."""
        if len(self.rounds) < 2:
            return []
        lines = [
            f"read rounds: {len(self.rounds)} x {self.reads} distinct questions on the same stores",
            "| round | Loci p50 / p95 ms | mem0 p50 / p95 ms | Loci / mem0 p50 | Loci / mem0 p95 |",
            "|---|---|---|---|---|",
        ]
        for i, r in enumerate(self.rounds, 1):
            p50, p95 = r.ratios()
            lines.append(f"| {i} | {r.loci.cell()} | {r.mem0.cell()} | {p50:.2f} | {p95:.2f} |")
        p50s, p95s = zip(*(r.ratios() for r in self.rounds), strict=True)
        lines.append(
            f"median ratio over {len(self.rounds)} rounds: p50 {statistics.median(p50s):.2f}, "
            f"p95 {statistics.median(p95s):.2f} (highest: p50 {max(p50s):.2f}, p95 {max(p95s):.2f})"
        )
        return lines

    def format(self) -> str:
        lo, m0 = self.loci, self.mem0
        lines = [
            f"peers benchmark: {self.turns} LoCoMo turns for one user, {self.reads} distinct questions, "
            f"{self.singles} single writes; Loci embedder {self.embedder}, mem0 {self.mem0_version} "
            f"(huggingface embedder on the same MiniLM weights, faiss, infer=False), calls alternated",
            "| | Loci | mem0 | Loci / mem0 |",
            "|---|---|---|---|",
            f"| read p50 ms | {lo.read.p50:.1f} | {m0.read.p50:.1f} | {lo.read.p50 / m0.read.p50:.2f} |",
            f"| read p95 ms | {lo.read.p95:.1f} | {m0.read.p95:.1f} | {lo.read.p95 / m0.read.p95:.2f} |",
            f"| single write p50 ms | {lo.single_write.p50:.1f} | {m0.single_write.p50:.1f} | "
            f"{lo.single_write.p50 / m0.single_write.p50:.2f} |",
            f"| bulk writes / s (batches of {MAX_BATCH}) | {lo.bulk_rate:.1f} | {m0.bulk_rate:.1f} | "
            f"{lo.bulk_rate / m0.bulk_rate:.2f}x |",
            f"(Loci read: assemble, {preset_label(self.preset)}, 1,200 tokens, ingest off; mem0 read: search, "
            f"top_k {TOP_K})",
            *self.format_rounds(),
        ]
        return "\n".join(lines)


def locomo_data(turns: int, reads: int) -> tuple[list[Turn], list[str]]:
    """The first `turns` LoCoMo turns in conversation and time order, and `reads` distinct questions."""
    from evals.loaders import load_dataset

    dataset = load_dataset("locomo")
    all_turns = [Turn(t.memory_text(), t.timestamp) for c in dataset.conversations for t in c.turns]
    questions = list(dict.fromkeys(q.text for q in dataset.questions))
    return all_turns[:turns], questions[:reads]


def read_request(question: str, preset: PresetName | None = None) -> AssembleRequest:
    """Loci's read: assemble with the default preset (or `preset`), 1,200 tokens, ingest off."""
    return AssembleRequest(
        entity_id=USER,
        turn=question,
        budget=Budget(max_context_tokens=1200),
        ingest=IngestOptions(extract=False, store_turn="none"),
        retrieval=RetrievalOptions(preset=preset),
    )


def preset_label(preset: PresetName | None) -> str:
    return "default preset" if preset is None else f"preset {preset}"


class LociSide:
    def __init__(self, data_dir: str, embedder: Embedder, preset: PresetName | None = None) -> None:
        self.data_dir = data_dir
        self.preset = preset
        self.store = open_bench_store(data_dir)
        self.cache = EmbeddingCache(embedder, self.store)
        self.service = MemoryService(self.store, embeddings=self.cache)
        #: the engine's stage timings of every read, in order
        self.stages: list[StageTimings] = []

    def write(self, turns: Sequence[Turn]) -> None:
        self.service.create(
            ORG,
            [MemoryCreate(entity_id=USER, type="event", text=t.text, timestamp=t.timestamp) for t in turns],
        )

    def read(self, question: str) -> None:
        outcome = run_assemble(
            self.store,
            self.cache,
            org_id=ORG,
            agent_id=None,
            request=read_request(question, self.preset),
            request_id="req_peer",
            now=utcnow(),
        )
        self.stages.append(outcome.timings)

    def close(self) -> None:
        self.store.close()


def mem0_config(data_dir: str, model_path: str) -> dict[str, Any]:
    """mem0 built offline: the local MiniLM directory, faiss under `data_dir`, an LLM client never called."""
    return {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": model_path, "embedding_dims": 384, "model_kwargs": {"device": "cpu"}},
        },
        "vector_store": {
            "provider": "faiss",
            "config": {
                "collection_name": "peers",
                "path": str(Path(data_dir) / "faiss"),
                "embedding_model_dims": 384,
                "distance_strategy": "cosine",
            },
        },
        "llm": {
            "provider": "openai",
            "config": {"api_key": "unused: infer=False calls no LLM", "model": "none"},
        },
        "history_db_path": str(Path(data_dir) / "history.db"),
    }


class Mem0Side:
    def __init__(self, data_dir: str, model_path: str) -> None:
        os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is imported: no network calls
        os.environ.setdefault("MEM0_DIR", str(Path(data_dir) / "home"))
        from mem0 import Memory

        self.memory = Memory.from_config(mem0_config(data_dir, model_path))

    def write(self, turns: Sequence[Turn]) -> None:
        self.memory.add([{"role": "user", "content": t.text} for t in turns], user_id=MEM0_USER, infer=False)

    def read(self, question: str) -> None:
        self.memory.search(question, filters={"user_id": MEM0_USER}, top_k=TOP_K)

    def load(self, turns: Sequence[Turn]) -> None:
        """A store for a read benchmark, built by mem0's own `add` (infer=False) in batches, with each
        message's vector taken from one batched encode by mem0's embedder and its faiss file written
        once at the end: `add` embeds message by message and rewrites the whole index file per memory,
        hours for a few thousand turns on a busy machine. The index in memory is what `add` builds."""
        model, vectors = self.memory.embedding_model, self.memory.vector_store
        texts = [t.text for t in turns]
        encoded = dict(zip(texts, model.embed_batch(texts, "add"), strict=True))
        embed, save = model.embed, vectors._save
        model.embed = lambda text, action=None: encoded[text] if text in encoded else embed(text, action)
        vectors._save = lambda: None
        try:
            for i in range(0, len(turns), MAX_BATCH):
                self.write(turns[i : i + MAX_BATCH])
        finally:
            model.embed, vectors._save = embed, save
        save()

    def close(self) -> None:
        pass


def alternate(
    sides: Sequence[Any], items: Sequence[Any], call: Callable[[Any, Any], None], gap: float = 0.0
) -> list[list[float]]:
    """Seconds per item for each side, the sides taking turns item by item; `gap` seconds of rest
    (untimed) before each call."""
    out: list[list[float]] = [[] for _ in sides]
    for item in items:
        for i, side in enumerate(sides):
            if gap > 0:
                time.sleep(gap)
            t = time.perf_counter()
            call(side, item)
            out[i].append(time.perf_counter() - t)
    return out


def mem0_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("mem0ai")
    except Exception:
        return None


def split_turns(data: list[Turn], turns: int, singles: int) -> tuple[list[Turn], list[Turn]]:
    """The bulk-loaded turns and the single writes; the singles keep theirs even when the bulk load
    asks for the whole corpus."""
    if len(data) <= singles:
        raise ValueError(f"{len(data)} turns cannot give {singles} single writes and a bulk load")
    split = min(turns, len(data) - singles)
    return data[:split], data[split : split + singles]


class Writes(msgspec.Struct, kw_only=True):
    """What loading the two sides took: each side's bulk-load seconds and single-write seconds."""

    bulk: list[Turn]
    singles: list[Turn]
    bulk_s: list[float]  # per side
    single_s: list[list[float]]  # per side, per write

    def rows(self, reads: Sequence[Pct]) -> list[SideRow]:
        """Loci's and mem0's rows, with the given read latencies."""
        return [
            SideRow(
                name=name,
                read=reads[i],
                single_write=pct([x * 1000 for x in self.single_s[i]]),
                bulk_rate=len(self.bulk) / self.bulk_s[i] if self.bulk_s[i] > 0 else float("nan"),
            )
            for i, name in enumerate(("Loci", "mem0"))
        ]


def inputs(
    turns: int, reads: int, singles: int, rounds: int, per_read: int = 1
) -> tuple[list[Turn], list[Turn], list[str]]:
    """The bulk turns, the single writes and `reads * rounds * per_read` distinct questions (ValueError
    when LoCoMo has too few)."""
    if reads < 1 or rounds < 1:
        raise ValueError("reads and rounds must be at least 1")
    wanted = reads * rounds * per_read
    data, questions = locomo_data(turns + singles, wanted)
    if len(questions) < wanted:
        raise ValueError(
            f"{rounds} rounds of {reads} reads need {wanted} distinct questions; LoCoMo has {len(questions)}"
        )
    bulk, single = split_turns(data, turns, singles)
    return bulk, single, questions


def say_to(progress: TextIO | None) -> Callable[[str], None]:
    def say(msg: str) -> None:
        if progress is not None:
            print(msg, file=progress, flush=True)

    return say


@contextmanager
def loaded_sides(
    embedder: Embedder,
    bulk: list[Turn],
    single: list[Turn],
    cache_dir: str,
    say: Callable[[str], None],
    *,
    timed: bool = True,
    preset: PresetName | None = None,
) -> Iterator[tuple[LociSide, Mem0Side, Writes | None]]:
    """Both sides on fresh stores, warm, loaded with the same turns (bulk, then single writes,
    alternated and timed); closed and removed afterwards. Untimed (a read benchmark): Loci's batches,
    then `Mem0Side.load` of the same turns, and no Writes. Loci reads with `preset` (None: the default)."""
    from engine.embed.minilm import _model_path

    with bench_dir(cache_dir, "peers-loci") as loci_dir, bench_dir(cache_dir, "peers-mem0") as mem0_dir:
        loci, mem0 = LociSide(loci_dir, embedder, preset), Mem0Side(mem0_dir, _model_path())
        try:
            sides = (loci, mem0)
            for side in sides:  # models loaded and warm before timing
                side.read("warm up")
            if not timed:
                say(f"peers bench: loading {len(bulk) + len(single)} turns into both (untimed)")
                turns = [*bulk, *single]
                for i in range(0, len(turns), MAX_BATCH):
                    loci.write(turns[i : i + MAX_BATCH])
                mem0.load(turns)
                yield loci, mem0, None
                return
            say(f"peers bench: bulk writes of {len(bulk)} turns, batches of {MAX_BATCH}")
            batches = [bulk[i : i + MAX_BATCH] for i in range(0, len(bulk), MAX_BATCH)]
            bulk_s = [sum(s) for s in alternate(sides, batches, lambda s, b: s.write(b))]
            say(f"peers bench: {len(single)} single writes")
            single_s = alternate(sides, single, lambda s, t: s.write([t]))
            yield loci, mem0, Writes(bulk=bulk, singles=single, bulk_s=bulk_s, single_s=single_s)
        finally:
            loci.close()
            mem0.close()


def embedder_label(embedder: Embedder) -> str:
    return f"{embedder.model} ({getattr(embedder, 'active_runtime', '?')})"


def run(
    embedder: Embedder,
    *,
    turns: int = 5882,
    reads: int = 300,
    singles: int = 50,
    rounds: int = 1,
    cache_dir: str = DEFAULT_CACHE_DIR,
    preset: PresetName | None = None,
    progress: TextIO | None = sys.stderr,
) -> PeersTable:
    """Load both sides with the same turns, then alternate single writes and reads; see the module doc."""
    say = say_to(progress)
    bulk, single, questions = inputs(turns, reads, singles, rounds)
    with loaded_sides(embedder, bulk, single, cache_dir, say, preset=preset) as (loci, mem0, writes):
        assert writes is not None
        read_rounds = []
        for r in range(rounds):
            say(f"peers bench: {reads} reads (round {r + 1} of {rounds})")
            asked = questions[r * reads : (r + 1) * reads]
            read_rounds.append(alternate((loci, mem0), asked, lambda s, q: s.read(q)))
    ms = [[pct([x * 1000 for x in side]) for side in r] for r in read_rounds]
    rows = writes.rows(ms[0])
    return PeersTable(
        turns=len(bulk),
        reads=reads,
        singles=len(single),
        loci=rows[0],
        mem0=rows[1],
        rounds=[ReadRound(loci=loci_ms, mem0=mem0_ms) for loci_ms, mem0_ms in ms],
        embedder=embedder_label(embedder),
        mem0_version=mem0_version() or "?",
        preset=preset,
    )
