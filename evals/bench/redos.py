"""`loci bench redos`: adversarial turns (runs of digits, of unusual spaces, of trailing phrases, of list
items, of name-like words) through POST /v0/context/assemble of a `loci serve` subprocess, alternated
with a short ordinary turn, while a second client polls GET /v0/health. Reports the assemble latency per
turn kind, the slowest health answer seen while those assembles ran, and how many extractions stopped
at their time budget (`extracted.truncated`).
"""

from __future__ import annotations

import threading
import time

import httpx
import msgspec

from evals.bench.harness import LociServer, bench_dir, bench_key, open_bench_store, pct

#: kind -> turn; the long ones are at the 20,000-character limit unless named otherwise
TURNS: dict[str, str] = {
    "short turn": "I live in Berlin and work at Acme.",
    "10,000 digits": "1" * 10_000,
    "20,000 digits": "1" * 20_000,
    "em spaces": "I love" + "\u2003" * 19_993 + "x",
    "trailing 'now'": ("I live in Berlin" + " now" * 5_000)[:20_000],
    "list items": ("I like " + "tea, " * 4_000)[:20_000],
    "name-like words": ("A-" * 10_000)[:19_989] + "'s birthday",
    "digits and dashes": ("call me at " + "1 2-3 " * 3_400)[:20_000],
    "coordinated clauses": ("My name is Sam" + " and I am 29 and my dog is Max" * 700)[:20_000],
}


class RedosRow(msgspec.Struct, kw_only=True):
    kind: str
    chars: int
    assemble_p50_ms: float
    assemble_p95_ms: float
    health_max_ms: float
    truncated: int
    calls: int


class RedosTable(msgspec.Struct, kw_only=True):
    rows: list[RedosRow]

    def format(self) -> str:
        lines = [
            "| turn | chars | assemble p50 / p95 (ms) | slowest /v0/health meanwhile (ms) | truncated |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {r.kind} | {r.chars:,} | {r.assemble_p50_ms:.1f} / {r.assemble_p95_ms:.1f} | "
            f"{r.health_max_ms:.1f} | {r.truncated} of {r.calls} |"
            for r in self.rows
        ]
        return "\n".join(lines)


class _HealthPoller:
    """Polls /v0/health from its own client and keeps the slowest answer while `active`."""

    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(base_url=base_url, timeout=600.0)
        self.slowest = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            t = time.perf_counter()
            self.client.get("/v0/health")
            self.slowest = max(self.slowest, (time.perf_counter() - t) * 1000.0)
            time.sleep(0.005)

    def __enter__(self) -> _HealthPoller:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.client.close()


def _assemble(client: httpx.Client, turn: str, entity: str) -> tuple[float, bool]:
    body = msgspec.json.encode({"entity_id": entity, "turn": turn})
    t = time.perf_counter()
    resp = client.post("/v0/context/assemble", content=body)
    ms = (time.perf_counter() - t) * 1000.0
    if resp.status_code != 200:
        raise RuntimeError(f"assemble -> {resp.status_code}: {resp.text[:300]}")
    return ms, bool(resp.json()["extracted"].get("truncated"))


def run(calls: int, embedder: str, cache_dir: str) -> RedosTable:
    """`calls` assembles per turn kind, the kinds interleaved round by round."""
    times: dict[str, list[float]] = {k: [] for k in TURNS}
    slowest: dict[str, float] = dict.fromkeys(TURNS, 0.0)
    truncated: dict[str, int] = dict.fromkeys(TURNS, 0)
    with bench_dir(cache_dir, "redos") as data_dir:
        store = open_bench_store(data_dir)
        secret = bench_key(store, "bench")
        store.close()
        with LociServer(data_dir, embedder) as server, server.client(secret) as client:
            _assemble(client, TURNS["short turn"], "ent:warmup")
            for i in range(calls):
                for kind, turn in TURNS.items():
                    with _HealthPoller(server.base_url) as poller:
                        ms, cut = _assemble(client, turn, f"ent:u{i}")
                    times[kind].append(ms)
                    slowest[kind] = max(slowest[kind], poller.slowest)
                    truncated[kind] += cut
    rows = []
    for kind, turn in TURNS.items():
        p = pct(times[kind])
        rows.append(
            RedosRow(
                kind=kind,
                chars=len(turn),
                assemble_p50_ms=p.p50,
                assemble_p95_ms=p.p95,
                health_max_ms=slowest[kind],
                truncated=truncated[kind],
                calls=calls,
            )
        )
    return RedosTable(rows=rows)
