"""The agent loop over HTTP: what a turn that writes costs against a read and a batched write, in one run.

A `loci serve` is loaded with the first `store` LoCoMo turns (`POST /v0/memories`, items of 200, each
with its turn's time) for one entity, as an agent's history. Then, step by step, three calls in turn on
one keep-alive connection, each with a text of its own (no query-vector cache hits):
- ingest: `POST /v0/context/assemble` with the next LoCoMo turn and the API's default ingest (the turn
  stored, facts extracted and superseded), `as_of` the turn's time: the agent loop;
- read: the same with `ingest` off, another LoCoMo turn (of the same kind and length, stored nowhere)
  and the same `as_of`: what the ingest turn costs without its writes;
- write: `POST /v0/memories {"items": [one turn]}`, a batched write of one memory.
The rule it checks: an ingest turn costs no more than a read plus one batched write, at p50 and p95.
"""

from __future__ import annotations

import http.client
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import msgspec

from evals.bench import corpus
from evals.bench.harness import LociServer, Pct, pct
from evals.bench.peers import Turn, locomo_data

PRELOAD_BATCH = 200
#: what each call sends, by step
CALLS: tuple[str, ...] = ("ingest", "read", "write")


class LoopTable(msgspec.Struct, kw_only=True):
    store: int  # memories before the first step
    steps: int
    calls: dict[str, Pct]  # CALLS, client wall ms

    def within(self) -> tuple[bool, bool]:
        """Whether an ingest turn costs no more than a read plus a batched write, at p50 and at p95."""
        c = self.calls
        return (
            c["ingest"].p50 <= c["read"].p50 + c["write"].p50,
            c["ingest"].p95 <= c["read"].p95 + c["write"].p95,
        )

    def format(self) -> str:
        c = self.calls
        ok50, ok95 = self.within()
        both = Pct(p50=c["read"].p50 + c["write"].p50, p95=c["read"].p95 + c["write"].p95)
        return "\n".join(
            [
                f"the agent loop over HTTP: {self.steps} steps on a store of {self.store} LoCoMo turns (one "
                "entity), each step an ingest assemble, a read-only assemble and a batched write of one "
                "memory, in turn",
                "call | p50 / p95 ms",
                "--- | ---",
                f"assemble with the default ingest (LoCoMo turn, as_of its time) | {c['ingest'].cell()}",
                f"assemble, ingest off (another LoCoMo turn, the same as_of) | {c['read'].cell()}",
                f"POST /v0/memories, items of 1 (LoCoMo turn) | {c['write'].cell()}",
                f"read + write | {both.cell()}",
                f"ingest <= read + write: p50 {'yes' if ok50 else 'NO'}, p95 {'yes' if ok95 else 'NO'}",
            ]
        )


def _memory(turn: Turn) -> dict[str, Any]:
    return {"type": "event", "entity_id": corpus.ENTITY, "text": turn.text, "timestamp": turn.timestamp}


class LoopClient:
    """The three calls on one keep-alive connection; each returns the client's wall time in ms."""

    def __init__(self, server: LociServer, secret: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}

    def post(self, path: str, body: Any) -> float:
        data = msgspec.json.encode(body)
        t = time.perf_counter()
        self.conn.request("POST", path, body=data, headers=self.headers)
        resp = self.conn.getresponse()
        answer = resp.read()
        ms = (time.perf_counter() - t) * 1000.0
        if resp.status not in (200, 201):
            raise RuntimeError(f"POST {path} -> {resp.status}: {answer[:500]!r}")
        return ms

    def ingest(self, turn: Turn) -> float:
        return self.post(
            "/v0/context/assemble",
            {"entity_id": corpus.ENTITY, "turn": turn.text, "as_of": turn.timestamp},
        )

    def read(self, question: str, as_of: Any = None) -> float:
        body: dict[str, Any] = {
            "entity_id": corpus.ENTITY,
            "turn": question,
            "ingest": {"extract": False, "store_turn": "none"},
        }
        if as_of is not None:
            body["as_of"] = as_of
        return self.post("/v0/context/assemble", body)

    def write(self, turn: Turn) -> float:
        return self.post("/v0/memories", {"items": [_memory(turn)]})

    def close(self) -> None:
        self.conn.close()


def preload(client: LoopClient, turns: Sequence[Turn]) -> None:
    for i in range(0, len(turns), PRELOAD_BATCH):
        client.post("/v0/memories", {"items": [_memory(t) for t in turns[i : i + PRELOAD_BATCH]]})


def run(
    server: LociServer,
    secret: str,
    *,
    store: int = 2000,
    steps: int = 100,
    progress: TextIO | None = sys.stderr,
) -> LoopTable:
    """Preload `store` LoCoMo turns, then `steps` of the three calls; see the module doc."""
    say: Callable[[str], None] = (
        (lambda m: print(m, file=progress, flush=True)) if progress else (lambda m: None)
    )
    data, questions = locomo_data(store + 3 * steps, 1)
    if len(data) < store + 3 * steps:
        raise ValueError(f"LoCoMo has too few turns for a store of {store} and {steps} steps")
    history, ingested = data[:store], data[store : store + steps]
    asked, written = data[store + steps : store + 2 * steps], data[store + 2 * steps :]
    client = LoopClient(server, secret)
    try:
        say(f"agent loop bench: preloading {store} LoCoMo turns over HTTP")
        preload(client, history)
        client.read(questions[0])  # the index built and the model warm before timing
        times: dict[str, list[float]] = {c: [] for c in CALLS}
        say(f"agent loop bench: {steps} steps of ingest, read and write")
        for turn, other, stored in zip(ingested, asked, written, strict=True):
            times["ingest"].append(client.ingest(turn))
            times["read"].append(client.read(other.text, turn.timestamp))
            times["write"].append(client.write(stored))
    finally:
        client.close()
    return LoopTable(store=store, steps=len(times["ingest"]), calls={c: pct(v) for c, v in times.items()})
