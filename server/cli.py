"""The `loci` console command (argparse). Subcommands live in `server.commands` (see COMMANDS there)."""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import signal
import sys
import threading
from collections.abc import Sequence

from engine.errors import LociError
from server.commands import COMMANDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loci", description="Loci: memory and context assembly for LLM agents"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module_name in COMMANDS.values():
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("loci").setLevel(logging.INFO)
    args = build_parser().parse_args(argv)
    # `loci serve` leaves SIGTERM to uvicorn, which ends the process by the signal a supervisor expects
    if not getattr(args, "own_signals", False) and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        code: int = args.func(args)
    except LociError as exc:
        print(f"error: {one_line(exc.message)}", file=sys.stderr)
        return 2
    except OSError as exc:  # a directory or file the settings name that cannot be made or opened
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    return code


def _exit_on_term(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so `finally` blocks and atexit handlers run: an eval's embedded
    PostgreSQL is stopped and its directory deleted instead of left running."""
    raise SystemExit(128 + signum)


def one_line(message: str) -> str:
    """`message` on one line: a driver's text (psycopg's "connection failed ... \n\tIs the server
    running ...") can hold line breaks, and a log or a supervisor keeps the first line only."""
    return re.sub(r"\s*\n\s*", " ", message.strip())


if __name__ == "__main__":
    sys.exit(main())
