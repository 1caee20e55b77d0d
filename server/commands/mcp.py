"""`loci mcp`: the MCP server over stdio, for agent runtimes that start it as a subprocess.

It talks to a running Loci over its REST API (`--url`, default $LOCI_URL or http://127.0.0.1:8080) with
an API key (`--key`, default $LOCI_API_KEY), rather than opening the store itself: the server's
in-process search indexes would not see another process's writes, any deployment (PostgreSQL, several
workers, a remote host) works the same, the key's org and scopes apply, and the process starts without
loading a model. stdout carries only the protocol; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any


def _run(args: argparse.Namespace) -> int:
    import anyio

    from loci.client import AsyncLociClient
    from loci.client.errors import InvalidRequest
    from loci.client.sync import base_url_for
    from server.mcp import build, shared

    key = args.key or os.environ.get("LOCI_API_KEY")
    if not key:
        print("error: an API key is needed: --key or LOCI_API_KEY", file=sys.stderr)
        return 2
    try:
        url = base_url_for(args.url)
    except InvalidRequest as exc:
        print(f"error: {exc} (--url)", file=sys.stderr)
        return 2
    logging.getLogger().handlers[:] = [logging.StreamHandler(sys.stderr)]

    async def main() -> None:
        async with AsyncLociClient(url, key) as client:
            await build(shared(client)).run_stdio_async()

    anyio.run(main)
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("mcp", help="MCP server over stdio (talks to a running Loci)")
    parser.add_argument(
        "--url", default=None, help="Loci's URL (default: $LOCI_URL or http://127.0.0.1:8080)"
    )
    parser.add_argument("--key", default=None, help="API key (default: $LOCI_API_KEY)")
    parser.set_defaults(func=_run)
