"""`loci` subcommands: one module each, registered by name in `COMMANDS`.

A command module defines `register(subparsers) -> None`, which adds its parser(s) and sets
`func=<callable(args) -> int>` as the parser default. Add a command with one module and one line here.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

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


def settings_from_args(args: argparse.Namespace) -> Settings:
    env = dict(os.environ)
    if getattr(args, "data_dir", None):
        env["LOCI_DATA_DIR"] = args.data_dir
        env.pop("LOCI_DATABASE_URL", None)  # a store named on the command line beats the environment's
    if getattr(args, "database_url", None):
        env["LOCI_DATABASE_URL"] = args.database_url
    settings = Settings.from_env(env)
    if settings.database_url is None:
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    return settings
