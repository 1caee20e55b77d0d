"""`loci migrate`: bring the database to the current schema and print the version before and after.

Opening a store runs its pending migrations (SQLite: PRAGMA user_version, one transaction per step;
PostgreSQL: under an advisory lock, so several workers or a deploy job may run it at once). Running
it again is a no-op.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from engine.storage.schema_info import latest_version, schema_version
from server.commands import add_store_arguments, settings_from_args


def display_target(target: str) -> str:
    """The target without credentials or query parameters (never print a password)."""
    return re.sub(r"//[^@/]*@", "//", target).split("?")[0]


def _run(args: argparse.Namespace) -> int:
    from server.app import open_default_store

    settings = settings_from_args(args)
    target = settings.store_target
    before = schema_version(target)
    open_default_store(settings).close()
    after = schema_version(target)
    shown = display_target(target)
    if before is None:
        print(f"{shown}: no schema (in-memory store)")
        return 0
    latest = latest_version(target)
    change = "up to date" if before == after else f"migrated {before} -> {after}"
    print(f"{shown}: schema version {after} (before {before}, latest {latest}); {change}")
    if after != latest:
        print(f"error: schema version {after} after migrating, expected {latest}", file=sys.stderr)
        return 1
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("migrate", help="apply pending database migrations (safe to repeat)")
    add_store_arguments(parser)
    parser.set_defaults(func=_run)
