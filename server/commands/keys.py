"""`loci keys create|list|revoke`: API keys in the same database `loci serve` uses. `create` makes the
database if missing; `list` and `revoke` need one that exists (else exit 2, nothing created)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from engine.keys import SCOPES, create_api_key
from engine.storage.base import Store
from engine.timeutil import utcnow
from server.commands import add_store_arguments, settings_from_args


def _open(args: argparse.Namespace) -> Store:
    from server.app import open_default_store

    return open_default_store(settings_from_args(args, existing=args.keys_command != "create"))


def create(store: Store, org: str, scopes: str, name: str | None, out: TextIO) -> str:
    key, secret = create_api_key(store, org, scopes.split(","), name)
    print(f"created key {key.key_id} for org {key.org_id!r} with scopes {','.join(key.scopes)}", file=out)
    print("the key is shown once; store it now:", file=out)
    print(secret, file=out)  # alone on the last line
    return secret


def list_keys(store: Store, org: str | None, out: TextIO) -> int:
    keys = store.list_api_keys(org)
    print(f"{'KEY_ID':<32} {'ORG':<20} {'SCOPES':<18} {'STATUS':<8} {'CREATED':<20} NAME", file=out)
    for k in keys:
        status = "revoked" if k.revoked_at is not None else "active"
        created = k.created_at.strftime("%Y-%m-%dT%H:%M:%SZ")
        print(
            f"{k.key_id:<32} {k.org_id:<20} {','.join(k.scopes):<18} {status:<8} {created:<20} {k.name or ''}",
            file=out,
        )
    return len(keys)


def revoke(store: Store, key_id: str, out: TextIO) -> bool:
    """Revoke `key_id`; a key revoked before stays revoked from then, and says so (a repeat is done)."""
    known = next((k for k in store.list_api_keys() if k.key_id == key_id), None)
    if known is not None and known.revoked_at is not None:
        print(f"{key_id} was already revoked at {known.revoked_at:%Y-%m-%dT%H:%M:%SZ}", file=out)
        return True
    done = store.revoke_api_key(key_id, utcnow())
    print(f"revoked {key_id}" if done else f"no such key {key_id}", file=out if done else sys.stderr)
    return done


def _run(args: argparse.Namespace) -> int:
    store = _open(args)
    try:
        if args.keys_command == "create":
            create(store, args.org, args.scopes, args.name, sys.stdout)
            return 0
        if args.keys_command == "list":
            list_keys(store, args.org, sys.stdout)
            return 0
        return 0 if revoke(store, args.key_id, sys.stdout) else 1
    finally:
        store.close()


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("keys", help="create, list and revoke API keys")
    sub = parser.add_subparsers(dest="keys_command", metavar="ACTION")
    sub.required = True
    p_create = sub.add_parser("create", help="create a key; prints it alone on the last line")
    p_create.add_argument("--org", required=True)
    p_create.add_argument("--scopes", default=",".join(SCOPES), help="comma list of read,write,admin")
    p_create.add_argument("--name", default=None)
    p_list = sub.add_parser("list", help="list keys (never shows secrets)")
    p_list.add_argument("--org", default=None)
    p_revoke = sub.add_parser("revoke", help="revoke a key by its id")
    p_revoke.add_argument("key_id")
    for p in (p_create, p_list, p_revoke):
        add_store_arguments(p)
        p.set_defaults(func=_run)
