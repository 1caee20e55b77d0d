"""`loci bench ...`: the benchmarks live with the harness (`evals.bench.cli`), which is imported only
when a benchmark runs, so `loci serve` never loads it."""

from __future__ import annotations

import argparse
from typing import Any


def _run(args: argparse.Namespace) -> int:
    from evals.bench.cli import build_parser

    bench_args = build_parser().parse_args(args.argv)
    code: int = bench_args.func(bench_args)
    return code


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        add_help=False,
        prefix_chars="+",  # every argument is for evals.bench.cli
        help="latency and throughput benchmarks (`loci bench -h` for the list)",
    )
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    parser.set_defaults(func=_run)
