"""`loci migrate`: bring the database to the current schema and print the version before and after.

Opening a store runs its pending migrations (SQLite: PRAGMA user_version, one transaction per step;
PostgreSQL: under an advisory lock, so several workers or a deploy job may run it at once). Running
it again is a no-op.

On PostgreSQL it then gives rows written before schema migration 3 their inline vector copy for the
configured embedder's model (`SearchBackend.fill_vector_copies`; `--no-inline-vectors` skips it):
5,000 rows per transaction, safe while servers run, and a scan that finds nothing to do afterwards.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from typing import Any

from engine.errors import Unavailable
from engine.storage.base import Store
from engine.storage.schema_info import latest_version, schema_version
from server.commands import add_store_arguments, display_target, settings_from_args


def _backfill_inline(store: Store, embedder: str) -> tuple[str, int] | None:
    """(model, copies made) on a store whose search keeps vector copies (PostgreSQL), else None."""
    if not store.search.capabilities.vector_copies:
        return None
    from engine.embed.registry import create_embedder

    try:
        model = create_embedder(embedder).model
    except Exception as exc:  # e.g. an API embedder without its key: the schema part still counts
        print(
            f"warning: no inline vector backfill, embedder {embedder!r} unavailable: {exc}", file=sys.stderr
        )
        return None
    store.search.keep_vector_copies(model)
    return model, store.search.fill_vector_copies()


def _run(args: argparse.Namespace) -> int:
    from server.app import open_default_store

    settings = settings_from_args(args)
    target = settings.store_target
    try:
        before = schema_version(target)
    except sqlite3.Error as exc:  # a directory, or a file that is not a database
        raise Unavailable(f"cannot open the SQLite database at {display_target(target)}: {exc}") from exc
    store = open_default_store(settings)
    try:
        backfill = _backfill_inline(store, settings.embedder) if args.inline_vectors else None
    finally:
        store.close()
    after = schema_version(target)
    shown = display_target(target)
    if before is None:
        print(f"{shown}: no schema (in-memory store)")
        return 0
    latest = latest_version(target)
    change = "up to date" if before == after else f"migrated {before} -> {after}"
    print(f"{shown}: schema version {after} (before {before}, latest {latest}); {change}")
    if backfill is not None:
        print(f"inline vectors ({backfill[0]}): {backfill[1]} rows given a copy")
    if after != latest:
        print(f"error: schema version {after} after migrating, expected {latest}", file=sys.stderr)
        return 1
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("migrate", help="apply pending database migrations (safe to repeat)")
    add_store_arguments(parser)
    parser.add_argument(
        "--inline-vectors",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="PostgreSQL: give rows without one their inline vector copy (default on)",
    )
    parser.set_defaults(func=_run)
