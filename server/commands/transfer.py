"""`loci export` and `loci import`: move one org between stores as JSONL (see engine.storage.transfer).

    loci export --org acme --out acme.jsonl --data-dir ./data
    loci import --in acme.jsonl --database-url postgresql://loci@db/loci
    loci export --org acme | loci import --database-url postgresql://... --org acme-copy

Export reads a store that exists (a mistyped --data-dir is an error, exit 2, and creates nothing);
import creates its target when missing. Both names are registered by this one module (`register`
adds whichever is missing), so COMMANDS maps "export" and "import" here.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

import msgspec

from engine.errors import InvalidInput, UnknownName
from engine.storage.base import Store
from engine.storage.transfer import PAGE, export_org, import_org
from server.commands import add_store_arguments, at_least, settings_from_args
from server.config import Settings

log = logging.getLogger("loci.transfer")


def _open(settings: Settings) -> Store:
    from server.app import open_default_store

    return open_default_store(settings)


def default_models(store: Store, settings: Settings) -> list[str]:
    """The models whose vectors to export when none are named: those the store holds vectors of, else
    (none stored) the configured embedder's model name."""
    from engine.embed.passages import is_passage_model

    listed = [m for m in store.embedding_models() if not is_passage_model(m)]  # passages go with their model
    if listed:
        return listed
    try:
        from engine.embed.registry import create_embedder

        return [create_embedder(settings.embedder).model]  # constructing loads no weights
    except Exception as exc:
        log.warning(
            "no vectors exported: embedder %r unavailable (%s); name models with --model",
            settings.embedder,
            exc,
        )
        return []


def check_models(store: Store, settings: Settings, named: list[str]) -> None:
    """UnknownName for a named model that is neither one the store holds vectors of nor the configured
    embedder's (a misspelt --model exported no vectors and exited 0)."""
    from engine.embed.passages import is_passage_model
    from engine.embed.registry import create_embedder

    known = [m for m in store.embedding_models() if not is_passage_model(m)]
    with suppress(Exception):  # an embedder that cannot be made adds no name; the stored ones still count
        known.append(create_embedder(settings.embedder).model)  # constructing loads no weights
    for name in named:
        if name not in known:
            raise UnknownName("embedding model", name, set(known), field="model")


@contextmanager
def _output(path: str) -> Iterator[IO[bytes]]:
    """stdout for '-', else a temporary file renamed over `path` only when the export succeeded."""
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            yield f
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextmanager
def _input(path: str) -> Iterator[IO[bytes]]:
    """stdin for '-', else the file, opened before the store so that a bad --in creates nothing."""
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 - the try covers the open alone; the with below closes it
    except OSError as exc:  # missing, a directory, unreadable
        raise InvalidInput(f"cannot read --in {path}: {exc.strerror or exc}", field="in") from exc
    with f:
        yield f


def _export(args: argparse.Namespace) -> int:
    settings = settings_from_args(args, existing=True)
    store = _open(settings)
    try:
        if args.model:
            check_models(store, settings, args.model)
        models = args.model or (default_models(store, settings) if args.with_vectors else [])
        with _output(args.out) as out:
            header = export_org(
                store, args.org, out, models=models, with_vectors=args.with_vectors, with_keys=args.with_keys
            )
    finally:
        store.close()
    c = header.counts
    print(
        f"exported org {header.org_id!r}: {c.memories} memories, {c.embeddings} vectors "
        f"({','.join(header.models) or 'none'}), {c.events} events, {c.api_keys} api keys, "
        f"{c.idempotency} idempotency records",
        file=sys.stderr,
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    with _input(args.in_) as source:
        store = _open(settings_from_args(args))
        try:
            result = import_org(store, source, org_id=args.org, batch_size=args.batch_size)
        finally:
            store.close()
    print(
        f"imported into org {result.org_id!r}: {result.memories} memories ({result.memories_kept} kept as "
        f"the target has them, {result.memories_left_deleted} it deleted left deleted), "
        f"{result.embeddings} vectors ({result.embeddings_unchanged} more the store held already: vectors "
        "are kept once per text), "
        f"{result.events} events ({result.events_skipped} already present), {result.api_keys} api keys "
        f"({result.api_keys_skipped} already present, {result.api_keys_revoked} revoked), "
        f"{result.idempotency} idempotency records ({result.idempotency_skipped} expired or already present) "
        f"in {result.batches} batches"
    )
    log.debug("import result %s", msgspec.json.encode(result).decode())
    return 0


def register(subparsers: Any) -> None:
    present = set(getattr(subparsers, "choices", {}) or {})
    if "export" not in present:
        p = subparsers.add_parser("export", help="write one org (memories, vectors, events, keys) as JSONL")
        p.add_argument("--org", required=True)
        p.add_argument("--out", default="-", help="output file, or - for stdout (default)")
        p.add_argument(
            "--with-vectors",
            dest="with_vectors",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="include cached embedding vectors (base64 float32; default on)",
        )
        p.add_argument(
            "--with-keys",
            dest="with_keys",
            action="store_true",
            help="include the org's API keys (hashes only, never secrets)",
        )
        p.add_argument(
            "--model",
            action="append",
            default=None,
            help="embedding model whose vectors to export (repeatable; default: the configured one)",
        )
        add_store_arguments(p)
        p.set_defaults(func=_export)
    if "import" not in present:
        p = subparsers.add_parser(
            "import", help="load a JSONL export (idempotent; ids kept; the target's newer changes kept)"
        )
        p.add_argument("--in", dest="in_", default="-", help="input file, or - for stdin (default)")
        p.add_argument("--org", default=None, help="import into this org (default: the org in the file)")
        p.add_argument(
            "--batch-size",
            type=at_least(0),
            default=PAGE,
            help="records per transaction; 0 = the whole file in one transaction",
        )
        add_store_arguments(p)
        p.set_defaults(func=_import)
