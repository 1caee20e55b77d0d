"""`loci` subcommands: one module each, registered by name in `COMMANDS`.

A command module defines `register(subparsers) -> None`, which adds its parser(s) and sets
`func=<callable(args) -> int>` as the parser default. Add a command with one module and one line here.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

from engine.errors import NotFound
from server.config import Settings

#: subcommand name -> module that registers it
COMMANDS: dict[str, str] = {
    "serve": "server.commands.serve",
    "mcp": "server.commands.mcp",
    "keys": "server.commands.keys",
    "bench": "server.commands.bench",
    "export": "server.commands.transfer",
    "import": "server.commands.transfer",
    "migrate": "server.commands.migrate",
    "doctor": "server.commands.doctor",
    "eval": "server.commands.eval",
}


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """--data-dir and --database-url, shared by every command that opens the store."""
    parser.add_argument(
        "--data-dir",
        default=None,
        help="data directory (default: $LOCI_DATA_DIR or ./data); the database is <dir>/loci.db",
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="database URL (default: $LOCI_DATABASE_URL), e.g. sqlite:///path.db",
    )


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= low (argparse then names the option in its error), for the
    count options of every command."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    return parse


def port(text: str) -> int:
    """An argparse type: a TCP port, 0..65535 (a larger one would wrap around to another port)."""
    value = at_least(0)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, not {value}")
    return value


def settings_from_args(args: argparse.Namespace, *, existing: bool = False) -> Settings:
    """The settings of the store the command line (else the environment) names. `existing`: the
    command only reads or mends what a store holds (doctor, keys list and revoke, export), so a store
    that does not exist (a mistyped --data-dir) is NotFound and nothing is created; otherwise the data
    directory is made if missing (serve, keys create, import, migrate)."""
    env = dict(os.environ)
    if getattr(args, "data_dir", None):
        env["LOCI_DATA_DIR"] = args.data_dir
        env.pop("LOCI_DATABASE_URL", None)  # a store named on the command line beats the environment's
    if getattr(args, "database_url", None):
        env["LOCI_DATABASE_URL"] = args.database_url
    settings = Settings.from_env(env)
    if existing:
        require_store(settings.store_target)
    elif settings.database_url is None:
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    return settings


def require_store(target: str) -> None:
    """NotFound unless `target` holds a Loci database (its schema), read without creating anything."""
    from engine.storage.schema_info import schema_version

    try:
        version = schema_version(target)
    except sqlite3.Error as exc:  # a directory, or a file that is not a database
        raise NotFound(f"no Loci database at {display_target(target)}: {exc}") from exc
    if version == 0:
        raise NotFound(
            f"no Loci database at {display_target(target)} (a mistyped --data-dir or --database-url?); "
            "`loci serve`, `loci keys create`, `loci import` and `loci migrate` create one"
        )


def display_target(target: str) -> str:
    """The target without credentials or query parameters (never print a password)."""
    return re.sub(r"//[^@/]*@", "//", target).split("?")[0]
