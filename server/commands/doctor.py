"""`loci doctor`: find memories stored without a vector for the configured embedder (its write ran
while the embedder was down), and long memories without their passages' vectors (written before
passages existed), and embed them. `--check` only counts, and exits 1 when any is missing. A store
that does not exist is an error (exit 2), not an empty one made and found whole.

    loci doctor [--check] [--data-dir DIR | --database-url URL]
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from server.commands import add_store_arguments, settings_from_args


def _run(args: argparse.Namespace) -> int:
    from engine.embed.backfill import count_missing, count_missing_passages, embed_missing
    from engine.embed.cache import EmbeddingCache
    from engine.embed.registry import create_embedder
    from server.app import open_default_store

    settings = settings_from_args(args, existing=True)
    store = open_default_store(settings)
    try:
        embedder = create_embedder(settings.embedder)
        if args.check:
            missing = count_missing(store, embedder.model)
            long_missing = count_missing_passages(store, embedder.model)
            print(f"memories without a vector for {embedder.model}: {missing}")
            print(f"long memory texts without their passages' vectors: {long_missing}")
            return 1 if missing or long_missing else 0
        done = embed_missing(store, EmbeddingCache(embedder, store))
        left = count_missing(store, embedder.model)
        long_left = count_missing_passages(store, embedder.model)
    finally:
        store.close()
    print(f"memories without a vector for {done.model}: {done.missing}; embedded {done.embedded} texts")
    if done.passages:
        print(f"long texts given their passages' vectors: {done.passages}")
    if left or long_left:
        print(
            f"error: {left} memories still without a vector, {long_left} long texts without their passages'",
            file=sys.stderr,
        )
        return 1
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "doctor", help="embed memories stored without a vector (--check: count only)"
    )
    add_store_arguments(parser)
    parser.add_argument("--check", action="store_true", help="only count; exit 1 when any is missing")
    parser.set_defaults(func=_run)
