"""`loci bench hnsw`: recall@k of PostgreSQL's HNSW plan against the exact plan, per ef_search.

    loci bench hnsw [--memories 10000,100000,1000000] [--queries 200] [--k 50]
                    [--ef-search 40,100,200,400,800] [--distinct-texts 50000] [--embedder minilm]

For each corpus size: a fresh embedded PostgreSQL (or `--database-url`, an empty database), loaded as
`loci bench scale` loads it (`scale.load`: the bench corpus, its texts' MiniLM vectors from the vector
cache, memory i of entity i mod E, entity j of org j mod O). Queries: the bench's assemble turns,
embedded by the same embedder. Each query runs in the scope of a random org (no entity: the scopes
large enough for the HNSW plan), once by the exact plan over the scope
(`semantic.exact_vector_statement`, every row of the scope scored), once per ef_search by the HNSW
plan (`semantic.vector_statement`, with `hnsw.iterative_scan = relaxed_order`), and once as shipped
(`semantic.vector_search`, whichever plan the scope's and the model's sizes choose).

recall@k = the hits whose distance is within the exact k-th distance (ties at the cut count: memories
that share a text share a vector), over min(k, scope rows with a vector). Reported per plan: mean and
minimum recall over the queries, the share of queries at 1.0, and the median milliseconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import msgspec
import numpy as np
import psycopg

from engine.storage.base import Scope, Vector
from evals.bench import scale
from evals.bench.cli import at_least, out_file

EPS = 1e-6
SHIPPED = 0  # the row of the plan `semantic.vector_search` chooses, as shipped


class EfRow(msgspec.Struct, kw_only=True):
    ef_search: int  # SHIPPED: the plan the store chooses
    recall_mean: float
    recall_min: float
    perfect: float  # share of queries at recall 1.0
    ms_p50: float


class SizeResult(msgspec.Struct, kw_only=True):
    memories: int
    distinct_texts: int
    scope_rows: float  # mean rows of a query's scope
    exact_ms_p50: float
    uses_index: bool  # the planner walks the HNSW index for the HNSW statement
    rows: list[EfRow]


def _scope(org: str) -> Scope:
    from datetime import UTC, datetime

    return Scope(org_id=org, now=datetime(2030, 1, 1, tzinfo=UTC))


def _distances(conn: psycopg.Connection[Any], stmt: Any, params: dict[str, Any]) -> list[float]:
    rows = conn.execute(stmt, params, prepare=False).fetchall()
    return sorted(1.0 - float(r[1]) for r in rows if r[1] is not None)


def _exact(conn: psycopg.Connection[Any], scope: Scope, model: str, q: Vector, k: int) -> list[float]:
    from engine.storage.postgres.semantic import exact_vector_statement

    stmt, params = exact_vector_statement(scope, model, q, k)
    return _distances(conn, stmt, params)


def _hnsw(conn: psycopg.Connection[Any], scope: Scope, model: str, q: Vector, k: int, ef: int) -> list[float]:
    from engine.storage.postgres.semantic import vector_statement

    stmt, params = vector_statement(scope, model, q, k)
    with conn.transaction():
        conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
        conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
        return _distances(conn, stmt, params)


def recall(exact: Sequence[float], approx: Sequence[float], k: int) -> float:
    """The share of the exact top k the approximate hits reach (see the module docstring)."""
    want = min(k, len(exact))
    if want == 0:
        return 1.0
    cut = exact[want - 1] + EPS
    return min(want, sum(1 for d in approx if d <= cut)) / want


def _queries(n: int, embedder: str, seed: int) -> list[Vector]:
    from engine.embed.registry import create_embedder
    from evals.bench.turns import assemble_requests

    turns = [r.turn for r in assemble_requests(n, seed=seed)]
    vecs = create_embedder(embedder).embed(turns)
    return [np.asarray(v, dtype=np.float32) for v in vecs]


def uses_index(url: str, model: str, q: Vector, k: int, orgs: int) -> bool:
    """Whether the planner walks the HNSW index for an org scope's HNSW statement."""
    from psycopg import sql

    from engine.storage.postgres.semantic import vector_statement
    from engine.storage.postgres.vectors import fetch_vector_oid, register_vector

    stmt, params = vector_statement(_scope(scale.org_of(0, orgs)), model, q, k)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn, fetch_vector_oid(conn))
        plan = conn.execute(sql.SQL("EXPLAIN ") + stmt, params, prepare=False).fetchall()
    return "embeddings_hnsw_" in "\n".join(str(r[0]) for r in plan)


def measure(
    url: str, *, model: str, orgs: int, queries: Sequence[Vector], k: int, efs: Sequence[int], seed: int
) -> tuple[float, float, list[EfRow]]:
    """(mean scope rows, exact ms p50, one row per ef_search)."""
    from engine.storage.postgres.search import scope_size
    from engine.storage.postgres.semantic import vector_search
    from engine.storage.postgres.vectors import fetch_vector_oid, register_vector

    rng = random.Random(seed)
    scopes = [_scope(scale.org_of(rng.randrange(orgs), orgs)) for _ in queries]
    recalls: dict[int, list[float]] = {ef: [] for ef in [*efs, SHIPPED]}
    times: dict[int, list[float]] = {ef: [] for ef in [*efs, SHIPPED]}
    exact_ms: list[float] = []
    sizes: list[int] = []
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn, fetch_vector_oid(conn))
        for q, scope in zip(queries, scopes, strict=True):
            sizes.append(scope_size(conn, scope))
            t = time.perf_counter()
            exact = _exact(conn, scope, model, q, k)
            exact_ms.append((time.perf_counter() - t) * 1000)
            for ef in efs:
                t = time.perf_counter()
                approx = _hnsw(conn, scope, model, q, k, ef)
                times[ef].append((time.perf_counter() - t) * 1000)
                recalls[ef].append(recall(exact, approx, k))
            t = time.perf_counter()
            shipped = [1.0 - h.raw for h in vector_search(conn, scope, model, q, k)]
            times[SHIPPED].append((time.perf_counter() - t) * 1000)
            recalls[SHIPPED].append(recall(exact, sorted(shipped), k))
    rows = [
        EfRow(
            ef_search=ef,
            recall_mean=float(np.mean(recalls[ef])),
            recall_min=float(np.min(recalls[ef])),
            perfect=float(np.mean([r == 1.0 for r in recalls[ef]])),
            ms_p50=float(np.median(times[ef])),
        )
        for ef in [*efs, SHIPPED]
    ]
    return float(np.mean(sizes)), float(np.median(exact_ms)), rows


def format_results(command: str, k: int, results: Sequence[SizeResult]) -> str:
    lines = [f"$ {command}", ""]
    lines.append(
        f"memories | distinct texts (HNSW vectors) | scope rows | exact ms p50 | plan walks HNSW | ef_search "
        f"| recall@{k} mean | recall min | queries at 1.0 | ms p50"
    )
    lines.append(" | ".join("---" for _ in range(10)))
    for res in results:
        for r in res.rows:
            lines.append(
                f"{res.memories:,} | {res.distinct_texts:,} | {res.scope_rows:,.0f} | {res.exact_ms_p50:.1f} | "
                f"{'yes' if res.uses_index else 'no'} | {r.ef_search or 'as shipped'} | {r.recall_mean:.4f} | "
                f"{r.recall_min:.3f} | {r.perfect:.1%} | {r.ms_p50:.1f}"
            )
    return "\n".join(lines)


def run_args(args: argparse.Namespace, *, progress: TextIO | None = sys.stderr) -> int:
    command = (
        f"loci bench hnsw --memories {','.join(map(str, args.memories))} --queries {args.queries} --k {args.k}"
        f" --ef-search {','.join(map(str, args.ef_search))} --distinct-texts {args.distinct_texts}"
        f" --embedder {args.embedder}"
    )
    queries = _queries(args.queries, args.embedder, seed=args.seed)
    results: list[SizeResult] = []
    for n in args.memories:
        distinct = min(args.distinct_texts, n)
        with scale.database(args.database_url, shared_buffers=args.shared_buffers or None) as url:
            scale._say(progress, f"bench hnsw: loading {n} memories ({distinct} distinct texts)")
            loaded = scale.load(
                url,
                memories=n,
                entities=args.entities,
                orgs=args.orgs,
                distinct_texts=distinct,
                embedder=args.embedder,
                cache_dir=args.cache_dir,
                max_embed=args.max_embed,
                batch=args.batch,
                progress=progress,
            )
            if args.prewarm:
                scale.prewarm(url)
            rows, exact_ms, ef_rows = measure(
                url,
                model=loaded.model,
                orgs=args.orgs,
                queries=queries,
                k=args.k,
                efs=args.ef_search,
                seed=args.seed + n,
            )
            index = uses_index(url, loaded.model, queries[0], args.k, args.orgs)
        results.append(
            SizeResult(
                memories=n,
                distinct_texts=distinct,
                scope_rows=rows,
                exact_ms_p50=exact_ms,
                uses_index=index,
                rows=ef_rows,
            )
        )
        scale._say(progress, format_results(command, args.k, results[-1:]))
    text = format_results(command, args.k, results)
    print(text, flush=True)
    if args.out:
        with Path(args.out).open("a", encoding="utf-8") as fh:
            fh.write(text + "\n\n")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    parser.add_argument("--memories", type=scale.ints, default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=at_least(1), default=200, help="query vectors (the bench's turns)")
    parser.add_argument("--k", type=at_least(1), default=50)
    parser.add_argument("--ef-search", type=scale.ints, default=[40, 100, 200, 400, 800])
    parser.add_argument("--entities", type=at_least(1), default=1000)
    parser.add_argument("--orgs", type=at_least(1), default=10)
    parser.add_argument(
        "--distinct-texts", type=at_least(1), default=50_000, help="text vocabulary (HNSW vectors)"
    )
    parser.add_argument("--batch", type=at_least(1), default=50_000, help="memories per COPY transaction")
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--max-embed", type=at_least(0), default=None, help="as in `loci bench scale`")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE_DIR)
    parser.add_argument("--database-url", default=None, help="an empty database (default: embedded)")
    parser.add_argument("--shared-buffers", default="4GB")
    parser.add_argument("--prewarm", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=out_file, default=None, help="also append the table to this file")
    parser.set_defaults(func=run_args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loci bench hnsw", description=(__doc__ or "").split("\n")[0])
    add_arguments(parser)
    return int(run_args(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
