"""`loci bench assemble|ingest|encoder|peers|scale|hnsw|redos`: the latency and throughput benchmarks' command line.

    loci bench assemble [--sizes 1000,10000,100000] [--calls 200] [--embedder minilm|hash] [--no-http]
                        [--cache-dir ./data/bench-cache] [--max-embed N] [--out FILE]
    loci bench ingest   [--n 2000] [--turns 100] [--loop-store 2000] [--embedder minilm|hash] [--no-http]
                        [--out FILE]
    loci bench writes   [--sizes 0,10000,50000,100000] [--batches 5] [--singles 50] [--out FILE]
    loci bench encoder  [--sample 1000] [--queries 200] [--batches 3] [--out FILE]
    loci bench peers    [--turns 5882] [--reads 300] [--singles 50] [--rounds 1] [--http [--gap-ms MS]] [--preset NAME]
                        [--out FILE]
                        (loci[peers])
    loci bench redos    [--calls 10] [--embedder minilm|hash] [--out FILE]
    loci bench scale    (evals/bench/scale.py)      loci bench hnsw (evals/bench/hnsw.py)

Tables go to stdout (and to --out, appended); progress to stderr. Corpus vectors are cached under
--cache-dir (keyed by model and text hash), so only the first run embeds the corpus. The work lives in
`evals.bench` (assemble, ingest, scale); this module parses arguments. `loci bench` (server.commands)
hands its arguments here, so serving never imports the harness.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from loci.wire.tuning import TUNING


def _size_list(text: str, minimum: int, rule: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated integers, got {text!r}") from exc
    if not sizes or any(s < minimum for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be {rule}")
    return sizes


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= low, for the benches' counts (a count of 0 printed a table of
    nan). server.commands has its twin: evals may not import the server (tests/test_imports.py)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    return parse


def out_file(text: str) -> str:
    """An argparse type: a file the tables can be appended to, tried before the bench runs (a missing
    directory or a directory failed with a traceback after the whole run, its tables not written)."""
    try:
        with open(text, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot append to {text!r}: {exc.strerror or exc}") from None
    return text


def _sizes(text: str) -> list[int]:
    return _size_list(text, 1, "positive")


def _sizes_or_zero(text: str) -> list[int]:
    return _size_list(text, 0, ">= 0")


def _emit(text: str, out: str | None) -> None:
    print(text, flush=True)
    if out:
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(text + "\n\n")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _header(command: str) -> str:
    """The command line and the machine's load as the bench starts."""
    return f"$ loci bench {command}\n(load average at start: {_load()}; {os.cpu_count()} CPUs)"


def _report(header: str, table: str, out: str | None) -> int:
    """The header, the table and the machine's load as the bench ends, to stdout and --out."""
    _emit(f"{header}\n{table}\n(load average at end: {_load()})", out)
    return 0


def _in_process_command(args: argparse.Namespace) -> str:
    if args.bench == "assemble":
        opts = f"--sizes {','.join(map(str, args.sizes))} --calls {args.calls}"
        opts += f" --max-embed {args.max_embed}" if args.max_embed is not None else ""
    else:
        opts = f"--n {args.n} --turns {args.turns} --loop-store {args.loop_store}"
    opts += f" --embedder {args.embedder}" + ("" if args.http else " --no-http")
    return f"{args.bench} {opts}"


def _assemble(args: argparse.Namespace) -> int:
    from engine.embed.registry import create_embedder
    from evals.bench import assemble
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    header = _header(_in_process_command(args))
    table = assemble.run(
        args.sizes,
        args.calls,
        create_embedder(args.embedder),
        embedder_name=args.embedder,
        http=args.http,
        cache_dir=args.cache_dir or DEFAULT_CACHE_DIR,
        max_embed=args.max_embed,
    )
    return _report(header, table.format(), args.out)


def _ingest(args: argparse.Namespace) -> int:
    from engine.embed.registry import create_embedder
    from evals.bench import ingest
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    header = _header(_in_process_command(args))
    table = ingest.run(
        args.n,
        create_embedder(args.embedder),
        embedder_name=args.embedder,
        turns=args.turns,
        loop_store=args.loop_store,
        http=args.http,
        cache_dir=args.cache_dir or DEFAULT_CACHE_DIR,
    )
    return _report(header, table.format(), args.out)


def _writes(args: argparse.Namespace) -> int:
    from evals.bench import writes
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    header = _header(
        f"writes --sizes {','.join(map(str, args.sizes))} --batches {args.batches} --singles {args.singles}"
    )
    table = writes.run(
        args.sizes, batches=args.batches, singles=args.singles, cache_dir=args.cache_dir or DEFAULT_CACHE_DIR
    )
    return _report(header, table.format(), args.out)


def _encoder(args: argparse.Namespace) -> int:
    from evals.bench import encoder

    header = _header(f"encoder --sample {args.sample} --queries {args.queries} --batches {args.batches}")
    table = encoder.run(
        variants=args.variants.split(","), sample=args.sample, queries=args.queries, batches=args.batches
    )
    return _report(header, table.format(), args.out)


def _peers(args: argparse.Namespace) -> int:
    from evals.bench import peers
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    if peers.mem0_version() is None:
        print("loci bench peers needs mem0: pip install 'loci[peers]'", file=sys.stderr)
        return 2
    from engine.embed.registry import create_embedder

    rounds = f" --rounds {args.rounds}" if args.rounds != 1 else ""
    http = " --http" if args.http else ""
    preset = f" --preset {args.preset}" if args.preset else ""
    gap = f" --gap-ms {args.gap_ms:g}" if args.gap_ms else ""
    header = _header(
        f"peers --turns {args.turns} --reads {args.reads} --singles {args.singles}{rounds}{http}{preset}{gap}"
    )
    options: dict[str, Any] = {
        "turns": args.turns,
        "reads": args.reads,
        "singles": args.singles,
        "rounds": args.rounds,
        "cache_dir": args.cache_dir or DEFAULT_CACHE_DIR,
        "preset": args.preset,
    }
    try:
        if args.http:
            from evals.bench import peers_http

            table: Any = peers_http.run(
                create_embedder("minilm"), embedder_name="minilm", gap_ms=args.gap_ms, **options
            )
        elif args.gap_ms:
            raise ValueError("--gap-ms is for --http")
        else:
            table = peers.run(create_embedder("minilm"), **options)
    except ValueError as exc:
        print(f"loci bench peers: {exc}", file=sys.stderr)
        return 2
    return _report(header, table.format(), args.out)


def _redos(args: argparse.Namespace) -> int:
    from evals.bench import redos
    from evals.bench.vectors import DEFAULT_CACHE_DIR

    header = _header(f"redos --calls {args.calls} --embedder {args.embedder}")
    table = redos.run(args.calls, args.embedder, args.cache_dir or DEFAULT_CACHE_DIR)
    return _report(header, table.format(), args.out)


def _embedder_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        default=os.environ.get("LOCI_EMBEDDER", "minilm"),
        help="minilm (default, $LOCI_EMBEDDER) or hash",
    )


def _common(parser: argparse.ArgumentParser) -> None:
    _embedder_option(parser)
    parser.add_argument(
        "--http",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure over HTTP against a `loci serve` subprocess (default: on)",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="corpus vector cache and scratch data dirs (default: ./data/bench-cache)",
    )
    parser.add_argument("--out", type=out_file, default=None, help="also append the table to this file")


def _needs_postgres(missing: str) -> int:
    print(
        f"loci bench scale and hnsw need the postgres extra (pip install 'loci[postgres]'): {missing}",
        file=sys.stderr,
    )
    return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loci bench", description="latency and throughput benchmarks")
    sub = parser.add_subparsers(dest="bench", metavar="BENCH")
    sub.required = True
    p = sub.add_parser("assemble", help="assemble latency per corpus size, in process and over HTTP")
    p.add_argument("--sizes", type=_sizes, default=[1000, 10000, 100000], help="comma-separated corpus sizes")
    p.add_argument("--calls", type=at_least(1), default=200, help="timed assemble calls per size")
    p.add_argument(
        "--max-embed",
        type=at_least(0),
        default=None,
        help="embed at most N uncached corpus texts; the rest get stand-in vectors (reported)",
    )
    _common(p)
    p.set_defaults(func=_assemble)
    q = sub.add_parser("ingest", help="ingest throughput (single, batch) and assemble-with-ingest per turn")
    q.add_argument("--n", type=at_least(1), default=2000, help="memories written per mode")
    q.add_argument(
        "--turns", type=at_least(1), default=100, help="assemble-with-ingest calls (and agent-loop steps)"
    )
    q.add_argument(
        "--loop-store",
        type=at_least(0),
        default=2000,
        help="LoCoMo turns a fresh server holds before the agent-loop steps over HTTP",
    )
    _common(q)
    q.set_defaults(func=_ingest)
    w = sub.add_parser("writes", help="the store's share of writes per scope size (stand-in vectors)")
    w.add_argument(
        "--sizes", type=_sizes_or_zero, default=[0, 10000, 50000, 100000], help="comma-separated scope sizes"
    )
    w.add_argument("--batches", type=at_least(1), default=5, help="batches of 200 LoCoMo turns per size")
    w.add_argument("--singles", type=at_least(1), default=50, help="single writes per size")
    w.add_argument("--cache-dir", default=None, help="scratch data dirs (default: ./data/bench-cache)")
    w.add_argument("--out", type=out_file, default=None, help="also append the table to this file")
    w.set_defaults(func=_writes)
    e = sub.add_parser(
        "encoder", help="MiniLM runtimes side by side: cosine to float32, query latency, batch rate"
    )
    e.add_argument(
        "--variants",
        default="torch,onnx-fp32,onnx,onnx-int8-all",
        help="comma-separated: torch, onnx-fp32, onnx, onnx-int8-all",
    )
    e.add_argument(
        "--sample", type=at_least(1), default=1000, help="LoCoMo texts for the cosine check (3/4 turns)"
    )
    e.add_argument("--queries", type=at_least(1), default=200, help="one-text queries per variant")
    e.add_argument("--batches", type=at_least(1), default=3, help="batches of 200 LoCoMo turns per variant")
    e.add_argument("--out", type=out_file, default=None, help="also append the table to this file")
    e.set_defaults(func=_encoder)
    r = sub.add_parser(
        "peers", help="Loci next to mem0 on the same LoCoMo data and MiniLM weights (loci[peers])"
    )
    r.add_argument("--turns", type=at_least(1), default=5882, help="LoCoMo turns bulk-written for one user")
    r.add_argument(
        "--reads", type=at_least(1), default=300, help="distinct LoCoMo questions, alternated between the two"
    )
    r.add_argument("--singles", type=at_least(1), default=50, help="single writes per side (alternated)")
    r.add_argument(
        "--rounds",
        type=at_least(1),
        default=1,
        help="read rounds on the same stores, each with its own questions; prints each round's ratios",
    )
    r.add_argument(
        "--http",
        action="store_true",
        help="Loci's reads also over HTTP against a `loci serve` of the same store (alternated: in process, "
        "HTTP, mem0), with the server's engine time from the trace",
    )
    r.add_argument(
        "--preset",
        default=None,
        choices=sorted(TUNING.presets),
        help="Loci's reads with this retrieval preset (default: the API's default, balanced)",
    )
    r.add_argument(
        "--gap-ms",
        type=float,
        default=0.0,
        help="with --http: rest before each call, untimed (an agent asks once a turn; back to back, each "
        "side meets the threads the other left spinning)",
    )
    r.add_argument("--cache-dir", default=None, help="scratch data dirs (default: ./data/bench-cache)")
    r.add_argument("--out", type=out_file, default=None, help="also append the table to this file")
    r.set_defaults(func=_peers)
    d = sub.add_parser("redos", help="adversarial turns over HTTP: assemble latency, /v0/health meanwhile")
    d.add_argument("--calls", type=at_least(1), default=10, help="assembles per turn kind")
    _embedder_option(d)
    d.add_argument("--cache-dir", default=None, help="scratch data dirs (default: ./data/bench-cache)")
    d.add_argument("--out", type=out_file, default=None, help="also append the table to this file")
    d.set_defaults(func=_redos)
    s = sub.add_parser("scale", help="PostgreSQL at scale: load rate, size, assemble with 1..N workers")
    h = sub.add_parser("hnsw", help="PostgreSQL's HNSW plan: recall@k against exact search per ef_search")
    try:
        from evals.bench import hnsw, scale
    except ImportError as exc:  # psycopg is in the `postgres` extra
        missing = str(exc)
        s.set_defaults(func=lambda args: _needs_postgres(missing))
        h.set_defaults(func=lambda args: _needs_postgres(missing))
    else:
        scale.add_arguments(s)
        hnsw.add_arguments(h)
    return parser
