"""API keys: creating them, and the hashing that finds them again. Only the sha256 of a key is stored.

A key (`loci_<random>`) belongs to one org and carries scopes: `read`, `write` and `admin`; the server
checks them (`server.auth`). Key creation lives here so that the CLI, the benchmarks and the eval
harness share it without importing the server.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Sequence

from engine.errors import InvalidInput
from engine.ids import new_id
from engine.models import ApiKey
from engine.storage.base import Store
from engine.timeutil import utcnow

SCOPES: tuple[str, ...] = ("read", "write", "admin")
KEY_PREFIX = "loci_"


def generate_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_scopes(text: str | Sequence[str]) -> list[str]:
    items = text.split(",") if isinstance(text, str) else list(text)
    scopes = [s.strip() for s in items if s.strip()]
    bad = [s for s in scopes if s not in SCOPES]
    if bad or not scopes:
        raise InvalidInput(f"scopes must be a non-empty subset of {', '.join(SCOPES)}", field="scopes")
    return list(dict.fromkeys(scopes))


def create_api_key(
    store: Store, org_id: str, scopes: Sequence[str] = SCOPES, name: str | None = None
) -> tuple[ApiKey, str]:
    """Create and store a key; returns the stored record and the secret (shown once, never stored)."""
    if not org_id.strip():
        raise InvalidInput("org must not be empty", field="org")
    # " acme" would be another org than "acme": its key would see none of acme's data
    if org_id != org_id.strip() or any(unicodedata.category(c) == "Cc" for c in org_id):
        raise InvalidInput(
            f"org must not begin or end with a space nor hold a control character, got {org_id[:64]!r}",
            field="org",
        )
    secret = generate_secret()
    key = ApiKey(
        key_id=new_id("key"),
        org_id=org_id,
        key_hash=hash_key(secret),
        scopes=parse_scopes(scopes),
        name=name,
        created_at=utcnow(),
    )
    store.create_api_key(key)
    return key, secret
