"""`loci serve`: run the API with uvicorn. On the first run (no API keys in the store) it creates
org `dev` with scopes read,write,admin and prints its key."""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any, TextIO

from engine.keys import SCOPES, create_api_key
from engine.storage.base import Store
from server.commands import add_store_arguments, port, settings_from_args

DEV_ORG = "dev"


def ensure_dev_key(store: Store, out: TextIO) -> str | None:
    """Create the development key when the store has no keys; returns the secret (else None)."""
    if store.list_api_keys():
        return None
    key, secret = create_api_key(store, DEV_ORG, SCOPES, name="first-run development key")
    bar = "=" * 72
    print(bar, file=out)
    print(
        f"First run: created org {DEV_ORG!r} and API key {key.key_id} (scopes {','.join(SCOPES)}).", file=out
    )
    print("It is shown only this once. Use it as:  Authorization: Bearer <key>", file=out)
    print(f"\n    {secret}\n", file=out)
    print(bar, file=out, flush=True)
    return secret


def check_listen(host: str, port: int) -> None:
    """OSError naming host:port when it cannot be bound (in use, no such address), before the banner
    says the server listens there: uvicorn would log its error only after that banner."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            sock.bind(address)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from server.app import create_app, open_default_store
    from server.asgi import check_workers, run_workers, warm_embedder

    settings = settings_from_args(args)
    check_workers(settings, args.workers)  # SQLite: one worker only (InvalidInput -> "error: ...", exit 2)
    check_listen(args.host, args.port)
    store = open_default_store(settings)
    try:
        ensure_dev_key(store, sys.stdout)
        if args.workers > 1:  # each worker process builds its own app (own pool) via server.asgi:create
            store.close()
            print(
                f"Loci listening on http://{args.host}:{args.port} with {args.workers} workers  (docs: /docs)",
                flush=True,
            )
            run_workers(
                settings,
                host=args.host,
                port=args.port,
                workers=args.workers,
                log_level="info",
                access_log=False,
            )
            return 0
        app = create_app(settings, store=store)
        warm_embedder(app)
        print(f"Loci listening on http://{args.host}:{args.port}  (docs: /docs)", flush=True)
        # one line per request, Loci's own (`loci.access`): uvicorn's would repeat it with the request target
        uvicorn.run(app, host=args.host, port=args.port, log_level="info", access_log=False)
    finally:
        store.close()
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve", help="run the HTTP API")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port, default=8080)
    parser.add_argument(
        "--workers", type=int, default=1, help="worker processes (default 1); more than one needs PostgreSQL"
    )
    add_store_arguments(parser)
    parser.set_defaults(func=_run, own_signals=True)
