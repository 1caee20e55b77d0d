"""`loci bench peers --http`: Loci's assemble over HTTP, against a real `loci serve`, next to mem0's
in-process search on the same turns, weights and questions.

Both sides hold the same turns, loaded untimed (`peers.loaded_sides(timed=False)`: Loci's batches,
mem0's `add` with its faiss file written once; `loci bench peers` without `--http` times the writes).
The Loci store is then copied
(SQLite's backup) into the directory a `loci serve` subprocess serves: the in-process Loci side keeps a
file no other process writes (every served read appends its `context.assembled` event, and another
connection's commit makes an in-process store drop its index). Each question is asked three ways, one
right after the other, so all three see the same load:
- Loci in process: `run_assemble`, as `loci bench peers` reads;
- Loci over HTTP: `POST /v0/context/assemble?trace=true` on one keep-alive connection (http.client),
  the same body an agent sends (the default preset or `preset`, 1,200 tokens, ingest off), its answer
  decoded;
- mem0: `search`, top_k 24.
Between the last two, over HTTP, another question for an entity with no memories (`EMPTY`):
what every read costs before there is anything to rank (the serving, the query's embedding, the render
of nothing), the floor under the first three.
Per round: each side's p50 / p95, HTTP / mem0, the engine's own time inside the server (the trace's
`timings.total`, `embed` and `channels`) against the in-process engine's on the same questions, and the
empty scope's wall time and engine time.
"""

from __future__ import annotations

import http.client
import sqlite3
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import msgspec

from engine.embed.base import Embedder
from engine.retrieval.responses import StageTimings
from evals.bench import peers
from evals.bench.harness import LociServer, Pct, bench_dir, bench_key, open_bench_store, pct
from evals.bench.vectors import DEFAULT_CACHE_DIR
from loci.wire.tuning import PresetName

PATH = "/v0/context/assemble?trace=true"
#: the engine stages compared between the server and the in-process side
STAGES = ("total", "embed", "channels")
#: an entity no bench writes to: its reads rank nothing
EMPTY = "ent:peers-empty"


class HttpRound(msgspec.Struct, kw_only=True):
    """One round's wall times (ms) per side, and the engine's stage times (ms) in each Loci."""

    http: Pct
    in_process: Pct
    mem0: Pct
    served: dict[str, Pct]  # STAGES, from the server's trace
    engine: dict[str, Pct]  # STAGES, from the in-process side's timings
    empty: Pct  # over HTTP, a read of the EMPTY entity
    empty_served: dict[str, Pct]  # STAGES of those reads, from the server's trace

    def ratios(self) -> tuple[float, float]:
        """Loci over HTTP / mem0 at p50 and at p95."""
        return self.http.p50 / self.mem0.p50, self.http.p95 / self.mem0.p95

    def engine_ratio(self) -> float:
        """The engine's time inside the server / in process, at p50."""
        return self.served["total"].p50 / self.engine["total"].p50


class HttpPeersTable(msgspec.Struct, kw_only=True):
    turns: int
    reads: int  # per round
    embedder: str
    mem0_version: str
    rounds: list[HttpRound]
    preset: PresetName | None = None  # Loci's reads: None is the default preset
    gap_ms: float = 0.0  # rest before each call

    def format(self) -> str:
        rest = f", {self.gap_ms:g} ms of rest before each call" if self.gap_ms > 0 else ""
        lines = [
            f"peers benchmark over HTTP: {self.turns} LoCoMo turns for one user, {len(self.rounds)} rounds x "
            f"{self.reads} distinct questions; Loci embedder {self.embedder}, mem0 {self.mem0_version}; "
            "each question asked of Loci in process, Loci over HTTP and mem0 in turn, another of an empty scope "
            f"over HTTP before mem0's{rest}",
            "| round | HTTP p50 / p95 ms | mem0 p50 / p95 ms | HTTP / mem0 p50 | HTTP / mem0 p95 | "
            "in process p50 / p95 ms | engine in server / in process p50 (total, embed, channels ms) | "
            "empty scope over HTTP p50 / p95 ms (engine, embed ms) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for i, r in enumerate(self.rounds, 1):
            p50, p95 = r.ratios()
            stages = ", ".join(f"{r.served[s].p50:.1f} / {r.engine[s].p50:.1f}" for s in STAGES)
            floor = f"{r.empty_served['total'].p50:.1f}, {r.empty_served['embed'].p50:.1f}"
            lines.append(
                f"| {i} | {r.http.cell()} | {r.mem0.cell()} | {p50:.2f} | {p95:.2f} | {r.in_process.cell()} | "
                f"{r.engine_ratio():.2f} ({stages}) | {r.empty.cell()} ({floor}) |"
            )
        p50s, p95s = zip(*(r.ratios() for r in self.rounds), strict=True)
        engine = [r.engine_ratio() for r in self.rounds]
        lines.append(
            f"median over {len(self.rounds)} rounds: HTTP / mem0 p50 {statistics.median(p50s):.2f}, p95 "
            f"{statistics.median(p95s):.2f} (highest: p50 {max(p50s):.2f}, p95 {max(p95s):.2f}); engine in "
            f"server / in process {statistics.median(engine):.2f}; an empty scope over HTTP p50 "
            f"{statistics.median(r.empty.p50 for r in self.rounds):.1f} ms, "
            f"{statistics.median(r.empty.p50 / r.mem0.p50 for r in self.rounds):.2f} of mem0's"
        )
        lines.append(
            f"(Loci: assemble, {peers.preset_label(self.preset)}, 1,200 tokens, ingest off, `?trace=true`; mem0: "
            f"search, top_k {peers.TOP_K}; HTTP times include the client's request and the decoding of the answer)"
        )
        return "\n".join(lines)


class HttpSide:
    """Loci's read over HTTP on one keep-alive connection; keeps each answer's trace timings."""

    def __init__(
        self, server: LociServer, secret: str, preset: PresetName | None = None, entity: str = peers.USER
    ) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self.preset = preset
        self.entity = entity
        self.stages: list[StageTimings] = []
        #: each answer's candidates (`retrieval_summary.candidate_counts.union`)
        self.candidates: list[int] = []

    def read(self, question: str) -> None:
        body = msgspec.json.encode(read_body(question, self.preset, self.entity))
        self.conn.request("POST", PATH, body=body, headers=self.headers)
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"POST {PATH} -> {resp.status}: {data[:500]!r}")
        answer: dict[str, Any] = msgspec.json.decode(data)
        self.stages.append(msgspec.convert(answer["trace"]["timings"], StageTimings))
        self.candidates.append(int(answer["retrieval_summary"]["candidate_counts"]["union"]))

    def close(self) -> None:
        self.conn.close()


def read_body(question: str, preset: PresetName | None = None, entity: str = peers.USER) -> dict[str, Any]:
    """The JSON an agent sends for `peers.read_request(question, preset)` (about `entity`): only what
    differs from the defaults."""
    body: dict[str, Any] = {
        "entity_id": entity,
        "turn": question,
        "budget": {"max_context_tokens": 1200},
        "ingest": {"extract": False, "store_turn": "none"},
    }
    if preset is not None:
        body["retrieval"] = {"preset": preset}
    return body


def copy_store(source: str, data_dir: str) -> None:
    """The SQLite file of `loci serve --data-dir source`, copied (consistently) into `data_dir`."""
    src = sqlite3.connect(str(Path(source) / "loci.db"))
    dst = sqlite3.connect(str(Path(data_dir) / "loci.db"))
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _stages(timings: Sequence[StageTimings]) -> dict[str, Pct]:
    return {s: pct([getattr(t, s) for t in timings]) for s in STAGES}


def run(
    embedder: Embedder,
    *,
    embedder_name: str = "minilm",
    turns: int = 5882,
    reads: int = 300,
    singles: int = 50,
    rounds: int = 3,
    cache_dir: str = DEFAULT_CACHE_DIR,
    preset: PresetName | None = None,
    gap_ms: float = 0.0,
    progress: TextIO | None = sys.stderr,
) -> HttpPeersTable:
    """Load both sides, serve a copy of Loci's store, then ask each round's questions three ways, and
    as many others of the empty scope; `gap_ms` of rest before each call (an agent asks once a turn)."""
    say = peers.say_to(progress)
    # the empty scope's questions are others: the server would find a question it just embedded cached
    bulk, single, questions = peers.inputs(turns, reads, singles, rounds, per_read=2)
    others = questions[reads * rounds :]
    out: list[HttpRound] = []
    loaded = peers.loaded_sides(embedder, bulk, single, cache_dir, say, timed=False, preset=preset)
    with loaded as (loci, mem0, _), bench_dir(cache_dir, "peers-served") as served_dir:
        copy_store(loci.data_dir, served_dir)
        store = open_bench_store(served_dir)
        secret = bench_key(store, peers.ORG)
        store.close()
        say("peers bench: starting loci serve on a copy of the Loci store")
        with LociServer(served_dir, embedder_name) as server:
            remote = HttpSide(server, secret, preset)
            empty = HttpSide(server, secret, preset, entity=EMPTY)
            try:
                # the empty scope's read before mem0's, whose threads spin on after a search
                sides = (loci, remote, empty, mem0)
                for side in sides:  # the server's index built and its model warm before timing
                    side.read("warm up")
                for r in range(rounds):
                    say(
                        f"peers bench: {reads} reads in process, over HTTP, of the empty scope and by mem0 "
                        f"(round {r + 1} of {rounds})"
                    )
                    for side in (loci, remote, empty):
                        side.stages.clear()
                    empty.candidates.clear()
                    span = slice(r * reads, (r + 1) * reads)
                    asked = list(zip(questions[span], others[span], strict=True))
                    wall = peers.alternate(
                        sides, asked, lambda s, q: s.read(q[1] if s is empty else q[0]), gap=gap_ms / 1000
                    )
                    if any(empty.candidates):
                        raise RuntimeError(f"{EMPTY} holds memories: a read found {max(empty.candidates)}")
                    ms = [pct([x * 1000 for x in side]) for side in wall]
                    out.append(
                        HttpRound(
                            in_process=ms[0],
                            http=ms[1],
                            mem0=ms[3],
                            served=_stages(remote.stages),
                            engine=_stages(loci.stages),
                            empty=ms[2],
                            empty_served=_stages(empty.stages),
                        )
                    )
            finally:
                remote.close()
                empty.close()
    return HttpPeersTable(
        turns=len(bulk) + len(single),
        reads=reads,
        embedder=peers.embedder_label(embedder),
        mem0_version=peers.mem0_version() or "?",
        rounds=out,
        preset=preset,
        gap_ms=gap_ms,
    )
